"""``rcpc import shell``: a shell launch recipe → recipe source, parsed with bashlex.

Top-level statements, in order:

* ``export NAME=value`` → a typed param (``int`` or ``float`` for a number as written,
  :func:`rcpc.importer.literals.number`: ``12``, ``0.5``, ``1e-4``; ``bool`` for true/false,
  else ``str``); ``NAME="${NAME:-default}"`` → a param with that default; a value the shell
  computes (``$(date ...)``) → a ``str`` param, its shell text kept as a ``TODO(import)``;
* a variable read but never set (``$PROJECT``, ``export ZONE="${ZONE}"``: the environment's)
  → a ``str`` param, its default its name in lowercase;
* ``NAME="--xla_a=1 --xla_b=2"`` → a list (with the joined string where the command uses it);
  ``NAME="k=v k2=v2"`` → ``maxtext_flags`` (each value in its spelling; ``$VAR`` parts as
  references; a value in single quotes the shell needs not, or one the shell reads as written
  such as a glob, through ``FLAGS.shell_quoted(keys, raw = [...])`` as ``NAME_SHELL``, with
  the spaces around the words); other values that use only known names → an f-string;
* ``if [ "$FLAG" = true ]; then NAME="$NAME k=v ..."; fi`` → a conditional layer of the
  flag set on the bool param ``FLAG``;
* ``case "$P" in "a" | "b") X=1 ;; ... *) echo ...; exit 1 ;; esac`` on a str param P whose
  arms assign literal values → P's ``choices``, and ``X = {"a": 1, "b": 1, ...}[P]``;
* ``eval ${cmd}`` of a string the script sets from what it knows → the command the string
  spells (:func:`_eval`), as a launch command below;
* a command that is not a shell builtin (``xpk workload create ...``) → a ``command_file``
  render, its words as the recipe's expressions; an accelerator type it names
  (``--tpu-type=v5p-16``) → ``TPU_SLICE = tpu_slice("v5p:2x2x2")``, given to the flag sets
  (``tpu_slice``, ``num_slices``) so that the mesh is checked.

Anything else (``source``, ``set -e``, ``echo``, other compound commands), and bindings the
command does not use, is kept as a comment marked ``TODO(import)`` and listed as ``W1200``.
"""

from __future__ import annotations

import re
import shlex
import textwrap

import attrs
import bashlex

from rcpc.core.diagnostics import CompileError, Diagnostic, io_hint
from rcpc.core.files import read_limited
from rcpc.core.limits import MAX_FILE_BYTES
from rcpc.core.source import Span
from rcpc.domain.tpu import accelerator_type
from rcpc.importer import bash, interpret
from rcpc.importer.command import flag_list
from rcpc.core.values import Str
from rcpc.domain.maxtext.emit import value_text
from rcpc.importer.literals import Ref, flag_value, fstring, joined, number, placeholders, quoted_flag_value, string

# Shell builtins and setup commands: never a launch command (bash(1) SHELL BUILTIN COMMANDS).
BUILTINS = frozenset({"set", "echo", "printf", "source", ".", "cd", "exit", "shopt", "trap", "export", "unset",
                      "true", "false", ":", "wait", "read", "local", "declare", "readonly", "alias", "umask",
                      "eval", "exec", "return", "shift", "test", "[", "[["})


@attrs.define
class Binding:
    """A converted assignment: ``kind`` is param, list, flags or string; ``source`` the
    recipe expression; ``uses`` the names it refers to; ``node`` the bashlex node."""

    name: str
    kind: str
    source: str
    uses: set
    node: object
    type: str = "str"
    default: object = None
    layers: list = attrs.Factory(list)   # flags: (param, {key: source}) conditional layers
    list_format: tuple = ()              # list: (prefix, sep, suffix)
    comment: str = ""
    note: object = None                  # a W1200 to list when the binding is used
    raw: str = ""                        # the assignment as written (NAME=value)
    unknown_keys: tuple = ()             # flags: keys the MaxText schema does not know
    words: object = None                 # flags: the FlagWords read (quoted, raw, pad)
    origin: str = ""                     # param: "env" when its value comes from the environment
    choices: tuple = ()                  # param: the values a case on it accepts (the others exit)
    arms: tuple = ()                     # lookup: (choice, value text) of each pattern of its case

    @property
    def shell_name(self) -> str:
        """Recipe source of a flag set's shell text as the shell file writes it:
        ``NAME.shell``, or ``NAME_SHELL`` (defined by :func:`_binding`) when some values are
        quoted or raw or the words have spaces around them."""
        w = self.words
        plain = w is None or (not w.quoted and not w.raw and w.pad == ("", ""))
        return f"{self.name}.shell" if plain else f"{self.name}_SHELL"


@attrs.define
class Script:
    """A shell file read for import: ``items`` in source order, each a :class:`Binding`, a
    ``("command", name, [word sources], uses, node, [word pieces])`` or a ``("todo", text,
    node)``."""

    shown: str
    text: str
    items: list
    bindings: dict
    notes: list
    slice: tuple | None = None  # (tpu_slice spec, number of slices) the launch command names
    globbed: bool = False  # an eval's words hold glob characters bash keeps as written (no file matches)


# The words that name a launch's TPU slice by its accelerator type (xpk workload create
# --tpu-type/--device-type; MaxText's benchmarks.benchmark_runner --device_type) and its
# number of slices; the recipe binding the slice.
SLICE_WORDS = ("--tpu-type=", "--device-type=", "--device_type=")
NUM_SLICES_WORDS = ("--num-slices=", "--num_slices=")
SLICE_NAME = "TPU_SLICE"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")  # a shell variable's name


def _span(script_shown: str, text: str, pos) -> Span:
    line = text.count("\n", 0, pos[0]) + 1
    col = pos[0] - (text.rfind("\n", 0, pos[0]) + 1) + 1
    end_line = text.count("\n", 0, pos[1]) + 1
    end_col = pos[1] - (text.rfind("\n", 0, pos[1]) + 1) + 1
    return Span(script_shown, line, col, end_line, end_col)


def read(path, shown: str) -> Script:
    """The shell file ``path`` parsed for import. Raises :class:`CompileError`: ``E1201``
    (not readable, not UTF-8, or bash cannot parse it, at the place bashlex stops)."""
    try:
        text = read_limited(path, MAX_FILE_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CompileError(Diagnostic("E1201", f"cannot read {shown}: {getattr(exc, 'strerror', None) or exc}",
                                      None, hint=io_hint(exc))) from None
    try:
        nodes = bash.parse(text) if text.strip() else []
    except Exception as exc:  # bashlex.errors.ParsingError, and others on input it does not support
        pos = bash.stopped_at(exc, text)  # bashlex's offset of an early end is not this text's
        span = _span(shown, text, (pos, pos + 1)) if pos is not None else Span(shown, 1, 1, 1, 1)
        message = bash.problem(exc) if isinstance(exc, bashlex.errors.ParsingError) else \
            f"the shell parser stopped ({type(exc).__name__})"
        hint = ("bash accepts this word, bashlex loops on it: quote it another way, or import the part "
                "that parses") if message == bash.STUCK else ("rcpc import reads the shell bash runs (bashlex); fix "
                                                              "the syntax (bash -n FILE shows it) or import the part "
                                                              "that parses")
        raise CompileError(Diagnostic("E1201", f"{shown} cannot be parsed as bash: {message}", span,
                                      hint=hint)) from None
    script = Script(shown, text, [], {}, [])
    for node in nodes:
        _statement(script, node)
    return script


def _todo(script: Script, node, why: str, hint: str = "") -> None:
    raw = script.text[node.pos[0]:node.pos[1]]
    script.items.append(("todo", raw, node, why))
    first = raw.splitlines()[0] if raw else ""
    script.notes.append(Diagnostic("W1200", f"TODO(import): {why}: {first[:70]}", _span(script.shown, script.text,
                                   node.pos), severity="warning",
                                   hint=hint or "kept as a comment in the recipe: convert it by hand, or leave it out"))


def _statement(script: Script, node) -> None:
    if node.kind == "compound" and _conditional_layer(script, node):
        return
    if node.kind == "case":
        if not _case(script, node):
            _todo(script, node, "not converted (only a case on a str param whose arms assign values, and whose "
                  "'*' arm exits, is)")
        return
    if node.kind != "command":
        _todo(script, node, "not converted (only assignments, flag layers and commands are)")
        return
    parts = node.parts
    if any(p.kind not in ("word", "assignment") for p in parts):
        _todo(script, node, "not converted (redirections are not)")
        return
    words = [p for p in parts if p.kind == "word"]
    assigns = [p for p in parts if p.kind == "assignment"]
    if not words:
        for a in assigns:
            _assignment(script, node, a, exported=False)
        return
    if assigns:
        _todo(script, node, "not converted (a command with environment assignments)")
        return
    program = words[0].word
    if program == "eval" and script.text[words[0].pos[0]:words[0].pos[1]] == "eval":
        _eval(script, node, words)
        return
    if program == "export" and len(words) > 1 and all("=" in w.word for w in words[1:]):
        for w in words[1:]:
            _assignment(script, node, w, exported=True)
        return
    if program in BUILTINS:
        _todo(script, node, "a shell builtin (setup), not part of the launch command line")
        return
    if not program.replace("-", "_").replace(".", "_").isidentifier():
        _todo(script, node, "not converted (the program is not a plain command name)")
        return
    sources, uses, all_pieces = [], set(), []
    for w in words:
        pieces = _pieces(script, w)
        if pieces is None:
            _todo(script, node, f"not converted: the word {script.text[w.pos[0]:w.pos[1]][:40]!r} uses a value "
                  "rcpc does not have")
            return
        all_pieces.append(pieces)
    _command(script, node, all_pieces)


def _command(script: Script, node, all_pieces: list, proof_uses: frozenset = frozenset()) -> None:
    """A launch command of words (each its text and :class:`Ref` pieces): the item
    ``("command", render name, [word sources], uses, node, pieces, proof_uses)``;
    ``proof_uses``: bindings the statement ``node`` reads that the words do not (an eval's
    string), which the proof's script sets (:func:`derived_script`)."""
    _tie_slice(script, all_pieces)
    sources, uses = [], set()
    for pieces in all_pieces:
        uses |= _names(script, pieces)
        sources.append(fstring(pieces))
    n = sum(1 for i in script.items if isinstance(i, tuple) and i[0] == "command")
    script.items.append(("command", "launch" if n == 0 else f"launch-{n + 1}", sources, uses, node, all_pieces,
                         proof_uses))


# A param's or case-chosen value in the eval's symbolic run: a private-use character, its
# index, another (no shell reads them as anything but text, and no script writes them).
_MARK_OPEN, _MARK_CLOSE = "\ue000", "\ue001"


EVAL_HINT = ("rcpc import reads an eval whose string the script sets from literals and params (cmd=\"xpk ...\"; "
             "eval ${cmd}): write the command that way, or convert it by hand")


class _AnyProgram:
    """Every program but a shell builtin (``in``): an eval's command, whatever it runs."""

    def __contains__(self, program) -> bool:
        return program not in BUILTINS


def _eval(script: Script, node, words) -> None:
    """``eval WORDS`` of a string the script sets from what it knows: the command it spells,
    interpreted (:func:`rcpc.importer.interpret.run`: nothing runs) with each param and
    case-chosen value a marker that becomes its reference, so the words are the recipe's
    expressions. Anything else (a string from the environment or the shell's output, more
    than one command, a builtin) is a ``TODO(import)`` saying why. When the string holds a
    glob character bash matches against the files present (``jax[tpu]``), the words keep it
    as written (bash's result when no file matches) and a ``W1200`` says so."""
    symbolic, actual, marks = [], [], {}
    for item in script.items:
        if isinstance(item, Binding):
            if item.kind in ("param", "lookup"):
                mark = f"{_MARK_OPEN}{len(marks)}{_MARK_CLOSE}"
                marks[mark] = item.name
                symbolic.append(f"{item.name}={mark}")
            else:
                symbolic.append(item.raw)
            if item.kind == "param":
                actual.append(f"{item.name}={_quote(item.default or _visible(item.name))}")
            elif item.kind != "lookup":
                actual.append(item.raw)
        elif item[0] == "case":
            actual.append(script.text[item[1].pos[0]:item[1].pos[1]])
    statement = script.text[node.pos[0]:node.pos[1]]
    globbed: list = []
    try:
        lines = interpret.run("\n".join(symbolic + [statement]) + "\n", _AnyProgram())
        interpret.run("\n".join(actual + [statement]) + "\n", _AnyProgram(), globbed)
    except interpret.Unsupported as exc:
        _todo(script, node, f"not converted: eval runs a string rcpc cannot know ({exc.message})", EVAL_HINT)
        return
    named = [marks[m] for m in re.findall(f"{_MARK_OPEN}[0-9]+{_MARK_CLOSE}", lines[0][0])] if len(lines) == 1 else []
    if named:
        _todo(script, node, f"not converted: eval runs a string rcpc cannot know (its command is ${named[0]}, a "
              "value of the environment or the shell)", EVAL_HINT)
        return
    if len(lines) != 1 or not lines[0][0].replace("-", "_").replace(".", "_").isidentifier():
        _todo(script, node, f"not converted: eval runs {len(lines)} commands, not one launch command", EVAL_HINT)
        return
    names = set()
    for w in words[1:]:
        names |= {u[1] for u in interpret.units(script.text, *w.pos) if u[0] == "param"}
    if globbed:
        script.globbed = True
        script.notes.append(Diagnostic(
            "W1200", "TODO(import): eval splits " + ", ".join(f"${n}" for n, _ in globbed) + " unquoted and its value "
            "holds a glob character: bash matches it against the files of the directory it runs in; the recipe's "
            "words keep it as written (what bash does when no file matches)", _span(script.shown, script.text,
                                                                                   node.pos), severity="warning",
            hint="quote the expansion in the shell file (eval \"$cmd\") if the word is meant as written"))
    _command(script, node, [_marked(script, w, marks) for w in lines[0]], frozenset(names))


def _marked(script: Script, word: str, marks: dict) -> list:
    """A word of the eval's symbolic run as text and :class:`Ref` pieces."""
    out: list = []
    for i, part in enumerate(re.split(f"({_MARK_OPEN}[0-9]+{_MARK_CLOSE})", word)):
        if i % 2:
            out.append(_ref(script, Ref(marks[part])))
        elif part:
            out.append(part)
    return out


def _quote(value: str) -> str:
    return shlex.quote(value)


def _case(script: Script, node) -> bool:
    """``case "$P" in "a" | "b") X=1; Y=2 ;; ... *) echo ...; exit 1 ;; esac`` on a str param
    P whose arms assign the same names literal values: P's ``choices`` are the patterns (a
    value of no arm exits), and each name a lookup binding ``{"a": 1, "b": 1, ...}[P]``. False
    (nothing changed) for any other case."""
    text = script.text
    try:
        units = [u for u in interpret.units(text, *node.word) if u[0] == "param" or u[1]]
    except interpret.Unsupported:
        return False
    param = script.bindings.get(units[0][1]) if len(units) == 1 and units[0][0] == "param" else None
    if param is None or param.kind != "param" or param.type != "str" or param.choices:
        return False
    arms, keys = [], []
    for i, arm in enumerate(node.arms):
        patterns = [text[a:b] for a, b in arm.patterns]
        if "*" in patterns:
            if patterns != ["*"] or i != len(node.arms) - 1 or not _exits(arm.body, text):
                return False
            continue
        try:
            values = [interpret.expand(text, a, b, {}) for a, b in arm.patterns]
            assigned = _literal_assignments(arm.body, text)
        except interpret.Unsupported:
            return False
        if assigned is None:
            return False
        arms.append((values, assigned))
        keys += values
    if len(arms) != len(node.arms) - 1 or not arms or len(set(keys)) != len(keys) or param.default not in keys:
        return False
    names = list(arms[0][1])
    if any(list(a) != names for _, a in arms) or any(n in script.bindings for n in names):
        return False
    param.choices = tuple(keys)
    for name in names:
        entries = ", ".join(f"{string(k)}: {_literal(a[name])}" for values, a in arms for k in values)
        b = Binding(name, "lookup", f"{{{entries}}}[{param.name}]", {param.name}, None,
                    arms=tuple((k, a[name]) for values, a in arms for k in values))
        script.bindings[name] = b
        script.items.append(b)
    script.items.append(("case", node, tuple(names)))
    return True


def _literal_assignments(body, text: str) -> dict | None:
    """``{NAME: value}`` of an arm made only of ``NAME=value`` assignments of literal values
    (raises :class:`~rcpc.importer.interpret.Unsupported` for a value with an expansion);
    None for any other command."""
    out: dict = {}
    for n in _simple_commands(body):
        if n is None or n.kind != "command" or any(p.kind != "assignment" for p in n.parts):
            return None
        for p in n.parts:
            name = text[p.pos[0]:p.pos[1]].partition("=")[0]
            if not name.isidentifier() or name in interpret.SHELL_VARIABLES:
                return None
            out[name] = interpret.expand(text, p.pos[0] + len(name) + 1, p.pos[1], {})
    return out


def _exits(body, text: str) -> bool:
    """Whether an arm reports and exits: ``echo``/``printf`` commands, then ``exit N``, N not 0."""
    commands = list(_simple_commands(body))
    words = [[text[w.pos[0]:w.pos[1]] for w in c.parts if w.kind == "word"] if c is not None and c.kind == "command"
             else [] for c in commands]
    return bool(words) and all(w and w[0] in ("echo", "printf") for w in words[:-1]) and len(words[-1]) == 2 and \
        words[-1][0] == "exit" and words[-1][1].isdigit() and int(words[-1][1]) != 0


def _simple_commands(body):
    """The commands of an arm's statements (lists joined by ';' or newlines opened); None for
    a statement of another kind."""
    for n in body:
        if n.kind == "list" and all(p.kind == "command" or getattr(p, "op", "") in (";", "\n") for p in n.parts):
            yield from (p for p in n.parts if p.kind == "command")
        else:
            yield n if n.kind == "command" else None


def _literal(value: str) -> str:
    """The recipe literal written back as ``value``: a number as spelled
    (:func:`~rcpc.importer.literals.number`), else a string."""
    return value if number(value) else string(value)


def _tie_slice(script: Script, words: list) -> None:
    """The first launch command naming its TPU slice by an accelerator type
    (:data:`SLICE_WORDS`, :func:`rcpc.domain.tpu.accelerator_type`: ``--tpu-type=v5p-16``)
    gets the slice as :data:`SLICE_NAME` (``tpu_slice("v5p:2x2x2")``): the word becomes its
    ``.accelerator_type`` (or ``.device_type``), and the flag sets get
    ``tpu_slice`` and ``num_slices`` (the command's ``--num-slices``), so that MaxText's mesh
    is checked against the slice (:func:`_binding`). ``words``: each word's pieces, changed in
    place."""
    if script.slice is not None or SLICE_NAME in script.bindings:
        return
    plain = [p[0] if len(p) == 1 and isinstance(p[0], str) else None for p in words]
    found = [(i, w.partition("=")) for i, w in enumerate(plain) if w and w.startswith(SLICE_WORDS)]
    slices = [(i, flag, accelerator_type(name)) for i, (flag, _, name) in found]
    if len(slices) != 1 or slices[0][2] is None:
        return
    i, flag, spec = slices[0]
    counts = [w.partition("=")[2] for w in plain if w and w.startswith(NUM_SLICES_WORDS)]
    if len(counts) > 1 or (counts and not (counts[0].isdigit() and counts[0][0] != "0")):
        return
    form = "device_type" if "x" in plain[i].partition("=")[2] else "accelerator_type"
    words[i][:] = [flag + "=", Ref(f"{SLICE_NAME}.{form}")]
    script.slice = (spec, int(counts[0]) if counts else 1)


def _pieces(script: Script, word, start: int | None = None):
    """The text and :class:`Ref` pieces of a word (from offset ``start``, default its start)
    after bash's quote removal, its parameter expansions each a reference to a known name;
    None when bash would read it otherwise than as that text: an unknown name, any other
    expansion or substitution, an unquoted glob, tilde or brace expansion
    (:func:`rcpc.importer.interpret.units`, the reader the proof interprets with)."""
    try:
        units = interpret.units(script.text, word.pos[0] if start is None else start, word.pos[1])
    except interpret.Unsupported:
        return None
    out: list = []
    unset = [u[1] for u in units if u[0] == "param" and u[1] not in script.bindings]
    if any(n in interpret.SHELL_VARIABLES for n in unset):
        return None
    for name in dict.fromkeys(unset):
        _env_param(script, name)
    for u in units:
        if u[0] == "param":
            out.append(_ref(script, Ref(u[1])))
        elif out and isinstance(out[-1], str):
            out[-1] += u[1]
        elif u[1]:
            out.append(u[1])
    return out


def _env_param(script: Script, name: str, node=None) -> Binding:
    """A ``str`` param for the variable ``name`` the script reads but does not set (its
    value comes from the environment it runs in): first among the bindings, so that it is
    set before any use; its default the placeholder :func:`_visible` (the script has none)."""
    b = Binding(name, "param", "", set(), node, default="", origin="env")
    script.bindings[name] = b
    at = 0
    while at < len(script.items) and getattr(script.items[at], "origin", "") == "env":
        at += 1
    script.items.insert(at, b)  # after the others, in the order they are first read
    return b


def _ref(script: Script, ref: Ref) -> Ref:
    b = script.bindings[ref.text]
    if b.kind == "flags":
        return Ref(b.shell_name)
    if b.kind == "list":
        return Ref(f"{b.name}_JOINED")
    return ref


def _assignment(script: Script, node, word, exported: bool) -> None:
    raw = script.text[word.pos[0]:word.pos[1]]
    before = len(script.items)
    _assign(script, node, word, raw, exported)
    for item in script.items[before:]:
        if isinstance(item, Binding):
            item.raw = raw


def _assign(script: Script, node, word, raw: str, exported: bool) -> None:
    name = raw.partition("=")[0]
    if not name.isidentifier():
        _todo(script, node, "not converted (not NAME=value)")
        return
    if name in interpret.SHELL_VARIABLES:
        _todo(script, node, f"not converted ({name} is a variable bash gives a meaning of its own)")
        return
    value_text = raw[len(name) + 1:]
    inner = value_text[1:-1] if len(value_text) > 1 and value_text[0] == value_text[-1] == '"' else value_text
    if inner in ("${" + name + "}", "$" + name) and name not in script.bindings:  # NAME="${NAME}": the environment's
        _env_param(script, name, node).raw = raw
        return
    fallback = "${" + name + ":-"
    if inner.startswith(fallback) and inner.endswith("}"):  # NAME="${NAME:-default}": a param
        default = inner[len(fallback):-1]
        if not any(c in default for c in "$`\\\"'{}"):
            _param(script, node, name, default)
            return
    pieces = _pieces(script, word, word.pos[0] + len(name) + 1)
    value = "".join(p for p in pieces if isinstance(p, str)) if pieces is not None else None
    if pieces is not None and not any(isinstance(p, Ref) for p in pieces):
        xla = flag_list(value)
        if exported or not value.strip() or (xla is None and " " not in value.strip() and _flags(script, pieces) is None):
            _param(script, node, name, value)
            return
        if xla is not None:
            prefix, items, sep, suffix = xla
            b = Binding(name, "list", "[" + ", ".join(string(i) for i in items) + "]", set(), node,
                        list_format=(prefix, sep, suffix))
            script.bindings[name] = b
            script.items.append(b)
            return
    flags = _flag_words(script, pieces) if pieces is not None else ""
    if isinstance(flags, FlagWords):
        b = Binding(name, "flags", "", set(flags.names), node, default=flags.entries, words=flags)
        script.bindings[name] = b
        script.items.append(b)
        return
    if pieces is not None:
        b = Binding(name, "string", fstring(pieces), _names(script, pieces), node)
        why = flags
        if why:
            b.comment = f"TODO(import): kept as a string, not maxtext_flags: {why}"
            b.note = Diagnostic("W1200", f"TODO(import): {name} is kept as a string, not maxtext_flags: {why}",
                                _span(script.shown, script.text, word.pos), severity="warning",
                                hint="convert it to maxtext_flags by hand once reviewed")
        script.bindings[name] = b
        script.items.append(b)
        return
    # computed by the shell: a str param, its shell text kept for review
    b = _param(script, node, name, _visible(name))
    b.comment = f"TODO(import): the shell computes it: {raw}"
    b.note = Diagnostic("W1200", f"TODO(import): {name} is computed by the shell; it is a str param now (default "
                        f"{b.default!r})", _span(script.shown, script.text, word.pos), severity="warning",
                        hint=f"set it with --set {name}=... when you build")


def _names(script: Script, pieces) -> set:
    """The bindings the :class:`Ref` pieces (written by :func:`_ref`) refer to."""
    out = set()
    for p in pieces:
        if isinstance(p, Ref):
            name = p.text.split(".")[0]
            base = name.removesuffix("_JOINED").removesuffix("_SHELL")
            out.add(name if name in script.bindings or base not in script.bindings else base)
    return out


def _param(script: Script, node, name: str, default: str) -> Binding:
    kind = number(default)
    if kind is not None:  # a number as spelled (rcpc.importer.literals.number)
        ptype, source = kind, default
    elif default in ("true", "false"):
        ptype, source = "bool", default
    else:
        ptype, source = "str", string(default)
    b = Binding(name, "param", source, set(), node, type=ptype, default=default)
    script.bindings[name] = b
    script.items.append(b)
    return b


@attrs.frozen
class FlagWords:
    """A value of ``key=value`` words read as a flag set: ``entries`` key → value source (in
    order), ``names`` the params used, ``quoted`` the keys whose value part is in quotes the
    shell needs not (``FLAGS.shell_quoted(keys)``), ``raw`` the keys whose value part the
    shell reads as written, unquoted (``shell_raw``: ``dir=${D}/*.arrayrecord``), ``pad`` the
    spaces before and after the words (``"k=v "``)."""

    entries: dict
    names: set
    quoted: tuple = ()
    raw: tuple = ()
    pad: tuple = ("", "")


# Characters the shell that runs the command does not read as themselves in a raw value
# (quotes, expansions, word and command separators, a tilde after '=').
_RAW_UNSAFE = set("'\"\\`$ \t\n;&|<>(){}~")


def _flag_words(script: Script, pieces, least: int = 2):
    """The value of text and :class:`Ref` pieces as :class:`FlagWords`: ``key=value`` words
    separated by single spaces (spaces before and after kept as ``pad``), each word as the
    flag set's shell form writes it: bare, its value part in single quotes
    (:func:`~rcpc.importer.literals.quoted_flag_value`), or written as it is (a value the
    shell form would quote, such as a glob, holding only characters the shell reads as
    themselves, and param references). A string saying why not otherwise ("" when the value
    is not ``key=value`` words at all)."""
    if any(isinstance(p, Ref) and getattr(script.bindings.get(p.text), "kind", "") != "param" for p in pieces):
        return "it uses a value that is not a param"
    if any(isinstance(p, str) and "${" in p for p in pieces):
        return "it holds a ${...} the shell file does not set"
    value = "".join(p if isinstance(p, str) else "${" + p.text + "}" for p in pieces)
    body = value.strip(" ")
    words = _words(body)
    if words is None:
        return "its quotes are not closed"
    if len(words) < least or not all("=" in w and w.split("=", 1)[0].isidentifier() for w in words if w):
        return ""
    if any(not w for w in words):
        return "its words are not separated by single spaces"
    names = {p.text for p in pieces if isinstance(p, Ref)}
    entries, quoted, raw = {}, [], []
    for w in words:
        key, _, text = w.partition("=")
        if key in entries:
            return f"{key} is set twice"
        source = flag_value(key, w, names)
        if source is None:
            found = quoted_flag_value(key, w, names)
            if found is not None:
                source = found[0]
                if found[1]:
                    quoted.append(key)
            elif text and not any(c in _RAW_UNSAFE for c in "".join(p for p in placeholders(text, names)
                                                                     if isinstance(p, str))) \
                    and _reads_as_written(text, names):
                source = fstring(placeholders(text, names))
                raw.append(key)
        if source is None:
            return f"{w[:60]!r} has no maxtext_flags spelling that the shell form writes the same way"
        entries[key] = source
    pad = (value[:len(value) - len(value.lstrip(" "))], value[len(value.rstrip(" ")):])
    return FlagWords(entries, names, tuple(quoted), tuple(raw), pad)


def _reads_as_written(text: str, names) -> bool:
    """Whether a raw value's ``text`` (a plain stand-in for each param of ``names``) is a
    string MaxText reads as written: the flag set writes the string in no other spelling
    (:func:`~rcpc.domain.maxtext.emit.value_text`; not ``0:``, which OmegaConf reads as a
    mapping, nor ``on``)."""
    plain = "".join(p if isinstance(p, str) else "x" for p in placeholders(text, names))
    return value_text(Str(plain, Span("<import>", 1, 1, 1, 1))) == plain


def _words(text: str) -> list | None:
    """``text`` split at each space outside quotes (single or double, a backslash escaping the
    next character outside single quotes), as the shell that runs the command reads the
    blob's words when they are separated by single spaces; None when a quote is not closed."""
    words, cur, mode, i = [], [], None, 0
    while i < len(text):
        c = text[i]
        if mode is None and c == " ":
            words.append("".join(cur))
            cur = []
        else:
            if c == "\\" and mode != "'" and i + 1 < len(text):
                cur.append(c)
                i += 1
                c = text[i]
            elif mode is None and c in "'\"":
                mode = c
            elif c == mode:
                mode = None
            cur.append(c)
        i += 1
    return None if mode is not None else words + ["".join(cur)]


def _flags(script: Script, pieces, least: int = 2) -> FlagWords | None:
    """:func:`_flag_words` when the value is a flag set, else None."""
    found = _flag_words(script, pieces, least)
    return found if isinstance(found, FlagWords) else None


def _conditional_layer(script: Script, node) -> bool:
    """``if [ "$P" = true ]; then F="$F k=v ..."; fi`` (or ``==``, ``[[ ]]``, ``${P}``) on a
    bool param P and a flag set F: a layer of F, added when P is true."""
    try:
        (if_node,) = node.list
        kw, cond, then, body, fi = if_node.parts
    except (AttributeError, ValueError):
        return False
    if kw.kind != "reservedword" or kw.word != "if" or getattr(fi, "word", "") != "fi" or cond.kind != "list":
        return False
    test = [p for p in cond.parts if p.kind == "command"]
    if len(test) != 1 or body.kind != "command":
        return False
    t = [w for w in test[0].parts if w.kind == "word"]
    words = [w.word for w in t]
    if len(words) != 5 or (words[0], words[4]) not in (("[", "]"), ("[[", "]]")) or words[2] not in ("=", "=="):
        return False
    params = [p for p in (getattr(t[1], "parts", []) or []) if p.kind == "parameter"]
    if len(params) != 1 or words[3] != "true" or words[1] != "$" + params[0].value and \
            words[1] != "${" + params[0].value + "}":
        return False
    flag = script.bindings.get(params[0].value)
    (assign,) = body.parts if len(body.parts) == 1 else (None,)
    if flag is None or flag.kind != "param" or flag.type != "bool" or assign is None or assign.kind != "assignment":
        return False
    name = script.text[assign.pos[0]:assign.pos[1]].partition("=")[0]
    target = script.bindings.get(name)
    if target is None or target.kind != "flags":
        return False
    pieces = _pieces(script, assign, assign.pos[0] + len(name) + 1)
    if not pieces or len(pieces) < 2 or pieces[0] != Ref(f"{name}.shell") or not isinstance(pieces[1], str) \
            or not pieces[1].startswith(" "):
        return False
    found = _flags(script, [pieces[1][1:], *pieces[2:]], least=1)
    if found is None or found.quoted or found.raw or found.pad != ("", ""):
        return False
    entries, uses = found.entries, found.names
    if set(entries) & set(target.default) or any(set(entries) & set(e) for _, e in target.layers):
        return False  # the shell would repeat a key (MaxText's last wins); a layer replaces it
    target.layers.append((flag.name, entries))
    target.uses |= uses | {flag.name}
    script.items.append(("layer", name, node))
    return True


# recipe text ---------------------------------------------------------------------------------
def recipe(script: Script, launch=None) -> str:
    """The recipe source of ``script`` (not yet formatted): bindings the commands use, in
    source order, then the ``command_file`` renders; everything else as ``TODO(import)``
    comments where it was. ``launch`` (a :class:`rcpc.importer.shell_library.Launch`, or
    None): the launch command as a call of a library function (its ``load`` line after the
    opening comment, its ``argv`` the render's, the list bindings in its ``dicts`` written as
    the dicts it takes, the flag sets in its ``layers`` with the library's layers named)."""
    used_names = used(script)
    evaluated = used(script, proof=True) - used_names  # an eval's string: its command is the render's
    lines = [f"# Imported from {script.shown}",
             "# by `rcpc import shell`: the command_file render runs the same command line (rcpc import",
             "# proves it: every word, and the MaxText flag tokens).", ""]
    if launch is not None:
        lines[1:3] = textwrap.wrap(f"by `rcpc import shell`, as a call of {launch.shape}: the command_file render "
                                   "runs the same command line (rcpc import proves it: every word, and the MaxText "
                                   "flag tokens).", 98, initial_indent="# ", subsequent_indent="# ",
                                   break_on_hyphens=False)
        lines += [launch.load, ""]
    for d in script.notes:
        if d.code == "W1208":
            lines += textwrap.wrap(d.message, 98, initial_indent="# ", subsequent_indent="# ",
                                   break_on_hyphens=False) + [""]
    if script.slice is not None:
        lines += [f"{SLICE_NAME} = tpu_slice({string(script.slice[0])})", ""]
    for item in script.items:
        if isinstance(item, Binding):
            if launch is not None and item.name in launch.dicts:  # a value the call takes (read off an eval's string)
                lines += [launch.dicts[item.name], ""]
                continue
            if item.name not in used_names:
                if item.node is None:  # read from the environment by a statement kept as a comment
                    continue
                raw = script.text[item.node.pos[0]:item.node.pos[1]]
                lines += ["# the launch command (the command_file render) is this string, which the shell "
                          "file evals:" if item.name in evaluated else
                          "# TODO(import): not used by the launch command:"] + _commented(raw)
                continue
            lines += _binding(item, launch.layers.get(item.name) if launch is not None else None,
                              shell_line=launch is None, tied=script.slice)
        elif item[0] == "todo":
            lines += [f"# TODO(import): {item[3]}:"] + _commented(item[1])
        elif item[0] == "case" and not set(item[2]) & used_names:
            lines += ["# TODO(import): not used by the launch command:"] + _commented(
                script.text[item[1].pos[0]:item[1].pos[1]])
        elif item[0] == "command":
            name, sources = item[1], item[2]
            argv = launch.argv if launch is not None else "[" + ", ".join(sources) + "]"
            lines += [f"command_file(name = {string(name)}, argv = {argv})", ""]
    return "\n".join(lines + ['variant("default")']) + "\n"


def _visible(name: str) -> str:
    """The default of a param the shell file leaves empty: its name in lowercase with dashes."""
    return name.lower().replace("_", "-")


def add_unknown_keys(script: Script, keys) -> bool:
    """Acknowledge MaxText keys the schema does not know on the flag sets that set them;
    False when none of ``keys`` is new."""
    changed = False
    for b in script.bindings.values():
        if b.kind == "flags":
            new = [k for k in keys if (k in b.default or any(k in e for _, e in b.layers)) and k not in b.unknown_keys]
            if new:
                b.unknown_keys += tuple(new)
                changed = True
    return changed


def notes(script: Script, launch=None) -> list:
    """The ``W1200`` warnings of the import, one for each ``TODO(import)`` comment of
    :func:`recipe` (with ``launch``, as :func:`recipe` writes it), in the order of the file."""
    used_names = used(script)
    evaluated = used(script, proof=True)  # with an eval's string: converted, the launch command's words
    reaching = unconverted_reaching(script)  # each in place of its statement's W1200
    at = {d.span for d in reaching}
    out = [d for d in script.notes if not (d.code == "W1200" and d.span in at)] + reaching
    for b in script.bindings.values():
        if launch is not None and b.name in launch.dicts:
            continue
        if b.name not in used_names:
            if b.node is None or b.name in evaluated:  # (the eval's string: the render's argv spells it)
                continue
            out.append(Diagnostic("W1200", f"TODO(import): {b.name} is not used by the launch command",
                                  _span(script.shown, script.text, b.node.pos), severity="warning",
                                  hint="kept as a comment in the recipe"))
        elif b.note is not None:
            out.append(b.note)
        if b.name in used_names and b.unknown_keys:
            out.append(Diagnostic("W1200", "TODO(import): MaxText keys the schema does not know are acknowledged "
                                  f"with unknown_keys: {', '.join(b.unknown_keys)}", _span(script.shown, script.text,
                                                                                           b.node.pos),
                                  severity="warning", hint="check them against the MaxText version you run"))
    return sorted(out, key=lambda d: (d.span.line, d.span.col) if d.span else (1 << 30, 0))


def _commented(raw: str) -> list:
    return ["#     " + ln if ln else "#" for ln in raw.splitlines()] + [""]


def used(script: Script, proof: bool = False) -> set:
    """The bindings the launch commands use, directly or through other bindings; with
    ``proof``, also those the statements the proof's script keeps read (an eval's string)
    (:func:`depends`)."""
    return depends(script, proof)[0]


def depends(script: Script, proof: bool = False) -> tuple[set, set]:
    """(the bindings the launch commands use, every name they depend on, bound here or not),
    as :func:`used` finds them. A statement kept as a comment (not converted) that may assign
    a name they depend on (:func:`touched`) makes the names it reads theirs too: ``TUNED`` of
    ``if [ "$TUNED" = 1 ]; then ARGS="$ARGS x=1"; fi`` is a name the launch depends on, not one
    it does not use."""
    names = [n for i in script.items if not isinstance(i, Binding) and i[0] == "command"
             for n in (*i[3], *(i[6] if proof else ()))]
    read = set(names)
    todos = [touched(i[2]) for i in script.items if not isinstance(i, Binding) and i[0] == "todo"]
    used: set = set()
    while names:
        while names:
            n = names.pop()
            read.add(n)
            if n in used or n not in script.bindings:
                continue
            used.add(n)
            names.extend(script.bindings[n].uses)
        for assigned, reads in todos:
            if assigned & read and not reads <= read:
                names.extend(reads - read)
    return used, read


def touched(node) -> tuple[frozenset, frozenset]:
    """(names a bash statement may assign, names it reads) anywhere in its syntax tree
    (bashlex's nodes): ``NAME=value`` and ``NAME+=value`` (also as words of ``export``,
    ``declare``, ``local``, ``readonly`` and ``typeset``), ``unset NAME`` and ``read NAME``;
    every parameter expansion."""
    assigned, reads = set(), set()
    todo = [node]
    while todo:
        n = todo.pop()
        kind = getattr(n, "kind", None)
        if kind == "assignment":
            assigned.add(n.word.split("=", 1)[0].rstrip("+"))
        elif kind == "parameter":
            reads.add(n.value)
        elif kind == "command":
            words = [p.word for p in n.parts if getattr(p, "kind", None) == "word"]
            if words and words[0] in ("export", "declare", "local", "readonly", "typeset", "unset", "read"):
                names = (w.split("=", 1)[0].rstrip("+") for w in words[1:])
                assigned.update(name for name in names if _NAME.match(name))
        for value in vars(n).values() if hasattr(n, "__dict__") else ():
            if isinstance(value, list):
                todo.extend(v for v in value if hasattr(v, "kind"))
            elif hasattr(value, "kind"):
                todo.append(value)
    return frozenset(assigned), frozenset(reads)


def unconverted_reaching(script: Script) -> list:
    """``W1209`` for each statement kept as a comment that may assign a name the launch
    commands depend on: the proof tried the recipe's params, not what such a statement does
    (its condition on values it never tried), so the recipe runs what the script runs only
    where the statement leaves those names as they are."""
    read = depends(script)[1]
    out = []
    for item in script.items:
        if not isinstance(item, Binding) and item[0] == "todo":
            changed = sorted(touched(item[2])[0] & read)
            if changed:
                out.append(Diagnostic("W1209", f"TODO(import): a statement not converted may change {', '.join(changed)}, "
                                      "which the launch command reads: the recipe runs what the script runs only where "
                                      "it leaves them as they are",
                                      _span(script.shown, script.text, item[2].pos), severity="warning",
                                      hint="convert it by hand (a param, and a layer or value chosen by it) before "
                                           "relying on the recipe"))
    return out


def _binding(b: Binding, named: list | None = None, shell_line: bool = True, tied: tuple | None = None) -> list:
    """The recipe lines of a used binding; ``named``: a flag set's entries as layers, each a
    dict of entries or the name of a library constant holding them (in order);
    ``shell_line``: a flag set's ``NAME_SHELL`` line too, where it has one (not when a library
    call takes the quoted and raw keys itself); ``tied``: the script's slice (a flag set gets
    ``tpu_slice`` and ``num_slices``)."""
    out = [f"# {b.comment}"] if b.comment else []
    if b.kind == "param" and b.default == "":
        doc = "From the environment the shell file runs in (it has no default there)" if b.origin == "env" \
            else "Empty in the shell file"
        return out + [f"{b.name} = param(str, default = {string(_visible(b.name))}, doc = "
                      f"{string(doc + ': set it with --set.')})"]
    if b.kind == "param":
        choices = f", choices = [{', '.join(string(c) for c in b.choices)}]" if b.choices else ""
        return out + [f"{b.name} = param({b.type}, default = {b.source}{choices})"]
    if b.kind == "list":
        prefix, sep, suffix = b.list_format
        return out + [f"{b.name} = {b.source}", f"{b.name}_JOINED = {joined(b.name, prefix, sep, suffix)}", ""]
    if b.kind == "flags":
        parts = named or [b.default]
        layers = [p if isinstance(p, str) else "{\n" + "".join(f"    {string(k)}: {v},\n" for k, v in p.items()) + "}"
                  for p in parts]
        for param, entries in b.layers:
            layers.append("{" + ", ".join(f"{string(k)}: {v}" for k, v in entries.items()) + f"}} if {param} else {{}}")
        if b.unknown_keys:
            layers.append("unknown_keys = [" + ", ".join(string(k) for k in b.unknown_keys) + "]")
            out.append("# TODO(import): MaxText keys the schema does not know: " + ", ".join(b.unknown_keys))
        if tied is not None:
            layers.append(f"tpu_slice = {SLICE_NAME}" + (f", num_slices = {tied[1]}" if tied[1] != 1 else ""))
        out.append(f"{b.name} = maxtext_flags(" + ", ".join(layers) + ")")
        if shell_line and b.shell_name != f"{b.name}.shell":
            w = b.words
            keys = "[" + ", ".join(string(k) for k in w.quoted) + "]"
            form = f"{b.name}.shell_quoted({keys}" + (", raw = [" + ", ".join(string(k) for k in w.raw) + "]"
                                                      if w.raw else "") + ")"
            out.append(f"{b.shell_name} = " + " + ".join(x for x in (w.pad[0] and string(w.pad[0]), form,
                                                                     w.pad[1] and string(w.pad[1])) if x))
        return out + [""]
    return out + [f"{b.name} = {b.source}"]


# the proof's side of the shell file ------------------------------------------------------------
def derived_script(script: Script, values: dict) -> str:
    """The statements of ``script`` the recipe reproduces, as written, in order, each param's
    assignment with ``values[name]`` instead (shell-quoted): the script whose command lines
    (:func:`rcpc.importer.interpret.run`, which runs nothing) the recipe must equal."""
    out = []
    kept = used(script, proof=True)
    for item in script.items:
        if isinstance(item, Binding):
            if item.name not in kept or item.kind == "lookup":  # a lookup: its case statement sets it
                continue
            if item.kind == "param":
                out.append(f"{item.name}={shlex.quote(_text(values[item.name]))}")
            else:
                out.append(item.raw)
        elif item[0] == "case":
            if set(item[2]) & kept:
                out.append(script.text[item[1].pos[0]:item[1].pos[1]])
        elif item[0] in ("layer", "command"):
            node = item[2] if item[0] == "layer" else item[4]
            out.append(script.text[node.pos[0]:node.pos[1]])
    return "\n".join(out) + "\n"


def _text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def programs(script: Script) -> list:
    """The programs the launch commands run (their first words), in order, once each."""
    return list(dict.fromkeys("".join(p for p in item[5][0] if isinstance(p, str)) for item in script.items
                              if isinstance(item, tuple) and item[0] == "command"))
