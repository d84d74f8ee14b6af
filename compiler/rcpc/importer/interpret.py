"""bash's meaning of the shell an import converts, interpreted over bashlex's syntax tree:
nothing of the script runs.

``rcpc import shell`` proves a recipe equal to the shell file it came from by comparing the
command lines each gives (docs/migrate.md). This module says what command lines bash would
run for a script made of the statements the importer converts, without running bash or
anything the script names: a script is untrusted input, and a guard list of forbidden syntax
in front of a real shell is not a sandbox.

What is interpreted (bash(1): QUOTING, EXPANSION, SIMPLE COMMAND EXPANSION, CONDITIONAL
EXPRESSIONS), and nothing else:

* ``NAME=value`` assignments: the value after quote removal and parameter expansion, not
  split (bash(1): "Word splitting is not performed ... on the value of an assignment");
* commands whose program is one of the launch ``programs``: each word after quote removal,
  parameter expansion and word splitting of unquoted expansions on the default ``IFS``
  (space, tab, newline; "explicit null arguments are retained, unquoted implicit null
  arguments are removed"); the words are recorded, nothing is run;
* ``if [ A = B ]; then ...; [else ...;] fi`` (also ``==``, ``!=``, ``[[ ]]``) over such
  statements, and lists joined by ``;`` or newlines;
* ``case WORD in P1 | P2) ...;; *) ...;; esac`` (:mod:`rcpc.importer.shcase`): the first arm
  with a pattern equal to WORD, a pattern a word matched as written or ``*`` alone;
* ``eval WORDS``: the words expanded (and split), joined by spaces, and the statements that
  string spells interpreted as above (bash(1) eval), at most :data:`MAX_EVAL_DEPTH` deep;
* quoting: single quotes, double quotes (a backslash escapes ``$ ` " \\`` and newline), a
  backslash outside quotes, ``$NAME`` and ``${NAME}`` of a variable the script set.

Everything else is :class:`Unsupported`, with the offset it was found at, before anything is
evaluated: command and process substitution, arithmetic, any other ``${...}`` form, ``$'...'``
and ``$"..."``, positional and special parameters, a variable the script did not set (its
value would come from the environment) or one bash gives a meaning of its own (``IFS``,
``RANDOM``, ``PATH``, ...), unquoted glob characters, tildes and brace expansions (their
result depends on the file system and user database), redirections, pipelines, ``&&``,
``||``, ``&``, functions, subshells, loops, and every command that is not a launch program
(builtins included: ``source``, ``export``, ``cd`` all act; ``eval`` is followed as above).

:func:`units` is the one reader of a word's quoting, used both here and by the importer's
conversion (:mod:`rcpc.importer.shell`), so that what the importer accepts is what this
interpreter reads.
"""

from __future__ import annotations

from rcpc.importer import bash
from rcpc.importer.shcase import unquoted

MAX_EVAL_DEPTH = 8  # eval of a string that runs eval ...
IFS = " \t\n"  # bash's default IFS; a script that sets IFS is Unsupported
GLOB = "*?["

# Variables bash sets or reads itself (bash(1) "Shell Variables", Bourne and bash): assigning
# one changes what bash does (IFS splits words, PATH finds programs, BASH_ENV is sourced),
# and reading one gives what bash computes (RANDOM, SECONDS, LINENO), not what was assigned.
SHELL_VARIABLES = frozenset("""
CDPATH HOME IFS MAIL MAILPATH OPTARG OPTIND PATH PS1 PS2 PS3 PS4 PS0
BASH BASHOPTS BASHPID BASH_ALIASES BASH_ARGC BASH_ARGV BASH_ARGV0 BASH_CMDS BASH_COMMAND BASH_COMPAT
BASH_ENV BASH_EXECUTION_STRING BASH_LINENO BASH_LOADABLES_PATH BASH_MONOSECONDS BASH_REMATCH BASH_SOURCE
BASH_SUBSHELL BASH_TRAPSIG BASH_VERSINFO BASH_VERSION BASH_XTRACEFD CHILD_MAX COLUMNS COMP_CWORD COMP_KEY
COMP_LINE COMP_POINT COMP_TYPE COMP_WORDBREAKS COMP_WORDS COMPREPLY COPROC DIRSTACK EMACS ENV EPOCHREALTIME
EPOCHSECONDS EUID EXECIGNORE FCEDIT FIGNORE FUNCNAME FUNCNEST GLOBIGNORE GLOBSORT GROUPS HISTCMD HISTCONTROL
HISTFILE HISTFILESIZE HISTIGNORE HISTSIZE HISTTIMEFORMAT HOSTFILE HOSTNAME HOSTTYPE IGNOREEOF INPUTRC
INSIDE_EMACS LANG LC_ALL LC_COLLATE LC_CTYPE LC_MESSAGES LC_NUMERIC LC_TIME LINENO LINES MACHTYPE MAILCHECK
MAPFILE OLDPWD OPTERR OSTYPE PIPESTATUS POSIXLY_CORRECT PPID PROMPT_COMMAND PROMPT_DIRTRIM PWD RANDOM
READLINE_ARGUMENT READLINE_LINE READLINE_MARK READLINE_POINT REPLY SECONDS SHELL SHELLOPTS SHLVL SRANDOM
TIMEFORMAT TMOUT TMPDIR UID histchars
""".split())


class Unsupported(Exception):
    """The script holds something this interpreter does not give a meaning to (the module
    docstring lists what it does): ``message`` says what, ``offset`` where in the text."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.message = message
        self.offset = offset


# one word's quoting ---------------------------------------------------------------------------
def units(text: str, start: int, end: int) -> list[tuple]:
    """The units of the word ``text[start:end]`` after bash's quote removal, in order:
    ``("text", chars, quoted)`` and ``("param", NAME, quoted, offset)`` (``$NAME``,
    ``${NAME}``). ``quoted``: inside single or double quotes. Raises :class:`Unsupported` for
    every other expansion, unquoted glob characters, tildes and brace expansions, and
    unterminated quotes."""
    out: list[tuple] = []
    buf: list[str] = []
    quoted = False  # the quotedness of what is in buf
    i, mode = start, None

    def put(c: str, q: bool) -> None:
        nonlocal quoted
        if buf and q != quoted:
            out.append(("text", "".join(buf), quoted))
            buf.clear()
        quoted = q
        buf.append(c)

    def flush() -> None:
        if buf:
            out.append(("text", "".join(buf), quoted))
            buf.clear()

    _braces(text, start, end)
    while i < end:
        c = text[i]
        nxt = text[i + 1] if i + 1 < end else ""
        if mode == "'":
            if c == "'":
                mode = None
            else:
                put(c, True)
            i += 1
            continue
        if c == "$":
            name, after = parameter(text, i, end, inside_quotes=mode == '"')
            if name is not None:
                flush()
                out.append(("param", name, mode == '"', i))
                i = after
                continue
            put("$", mode == '"')  # a '$' that starts no expansion is itself
            i += 1
            continue
        if c == "`":
            raise Unsupported("a command substitution (`...`) runs a command", i)
        if mode == '"':
            if c == '"':
                mode = None
            elif c == "\\" and nxt in '$`"\\\n':
                if nxt != "\n":
                    put(nxt, True)
                i += 1
            else:
                put(c, True)
            i += 1
            continue
        if c in "'\"":
            mode = c
            put("", True)  # an explicit null ('' or ""): the word keeps a field
        elif c == "\\":
            if nxt == "":
                raise Unsupported("a backslash ends the word", i)
            if nxt != "\n":
                put(nxt, True)
            i += 1
        elif c in GLOB:
            raise Unsupported(f"an unquoted {c!r} is a glob pattern (its words depend on the files present)", i)
        elif c == "~":
            raise Unsupported("an unquoted '~' is a tilde expansion (its word depends on the user database)", i)
        elif c in "<>" and nxt == "(":
            raise Unsupported("a process substitution runs a command", i)
        elif c in "<>|&;()":
            raise Unsupported(f"an unquoted {c!r} inside a word", i)
        else:
            put(c, False)
        i += 1
    if mode is not None:
        raise Unsupported(f"the {mode} quote is not closed", start)
    flush()
    return out


def _braces(text: str, start: int, end: int) -> None:
    """Raise :class:`Unsupported` when the word has an unquoted ``{`` (not ``${``) with an
    unquoted ``,`` or ``..`` after it and an unquoted ``}`` after those: a brace expansion
    (bash(1) Brace Expansion makes several words of it). Other braces are themselves."""
    opened, sep = None, False
    for i, c in unquoted(text, start, end):
        if c == "{" and not (i > start and text[i - 1] == "$"):
            opened = i if opened is None else opened
        elif opened is not None and (c == "," or text.startswith("..", i)):
            sep = True
        elif c == "}" and opened is not None and sep:
            raise Unsupported("an unquoted {...,...} is a brace expansion (it makes several words)", opened)


def parameter(text: str, i: int, end: int, inside_quotes: bool = False) -> tuple:
    """``(NAME, offset after it)`` of the expansion ``$NAME`` or ``${NAME}`` at ``text[i]``;
    ``(None, i)`` when the ``$`` starts no expansion (it is then a literal ``$``). Raises
    :class:`Unsupported` for every other expansion: ``$(``, ``$((``, ``$[``, other ``${...}``
    forms, ``$'...'``, ``$"..."``, positional and special parameters."""
    nxt = text[i + 1] if i + 1 < end else ""
    if nxt == "{":
        close = text.find("}", i + 2, end)
        name = text[i + 2:close] if close > 0 else ""
        if not name.isidentifier() or not name.isascii():
            raise Unsupported(f"the expansion ${{{name[:20]}...}} is not a plain ${{NAME}}", i)
        return name, close + 1
    if nxt == "(":
        raise Unsupported("a command substitution or arithmetic expansion $(...) runs or computes", i)
    if nxt == "[":
        raise Unsupported("an arithmetic expansion $[...] computes", i)
    if nxt == "'" and not inside_quotes:
        raise Unsupported("an ANSI-C quoted $'...' string", i)
    if nxt == '"' and not inside_quotes:
        raise Unsupported("a locale-translated $\"...\" string", i)
    if nxt and (nxt.isdigit() or nxt in "@*#?-$!"):
        raise Unsupported(f"the special parameter ${nxt} (its value is the shell's, not the script's)", i)
    j = i + 1
    while j < end and text[j].isascii() and (text[j].isalnum() or text[j] == "_"):
        j += 1
    name = text[i + 1:j]
    return (name, j) if name.isidentifier() else (None, i)


# a word's expansion ---------------------------------------------------------------------------
def _value(env: dict, name: str, offset: int) -> str:
    if name in SHELL_VARIABLES:
        raise Unsupported(f"${name} is a variable bash gives a meaning of its own", offset)
    if name not in env:
        raise Unsupported(f"${name} is not set by the script (its value would come from the environment)", offset)
    return env[name]


def expand(text: str, start: int, end: int, env: dict) -> str:
    """The word ``text[start:end]`` as an assignment's value: quotes removed, parameters
    expanded, not split."""
    return "".join(u[1] if u[0] == "text" else _value(env, u[1], u[3]) for u in units(text, start, end))


def fields(text: str, start: int, end: int, env: dict, globbed: list | None = None) -> list[str]:
    """The words bash makes of the word ``text[start:end]`` in a command: quotes removed,
    parameters expanded, and unquoted expansions split at runs of ``IFS`` characters. An
    unquoted expansion holding a glob character is :class:`Unsupported`; with ``globbed``
    (a list), it is kept as written, as bash keeps a pattern no file matches (no
    ``nullglob``), and ``(NAME, offset)`` appended to ``globbed``."""
    out: list[str] = []
    cur: list[str] = []
    started = False  # a field is open (it may be empty: an explicit null)
    for u in units(text, start, end):
        if u[0] == "text" or u[2]:
            cur.append(u[1] if u[0] == "text" else _value(env, u[1], u[3]))
            started = True
            continue
        for c in _value(env, u[1], u[3]):
            if c in IFS:
                if started:
                    out.append("".join(cur))
                    cur, started = [], False
            elif c in GLOB and globbed is None:
                raise Unsupported(f"the unquoted ${u[1]} holds {c!r}: a glob pattern (quote it)", u[3])
            else:
                if c in GLOB and (u[1], u[3]) not in globbed:
                    globbed.append((u[1], u[3]))
                cur.append(c)
                started = True
    if started:
        out.append("".join(cur))
    return out


# statements ------------------------------------------------------------------------------------
def run(text: str, programs, globbed: list | None = None) -> list[list[str]]:
    """The command lines (lists of words) bash would run for the launch ``programs`` (a
    container of names) when it runs the script ``text``, in order; nothing is run. Raises
    :class:`Unsupported` for what the module docstring does not list, and for text bashlex
    cannot parse (:func:`rcpc.importer.bash.parse` reads the words bashlex 0.18 misreads
    inside single quotes; what it still cannot read, such as a here-document, is refused). ``globbed``: keep glob characters of unquoted expansions in a command's
    words as written, listing them there (:func:`fields`)."""
    state = _State(text, programs)
    state.globbed = globbed
    try:
        nodes = bash.parse(text) if text.strip() else []
    except Exception as exc:  # bashlex's ParsingError, and its own faults on input it misreads
        at = bash.stopped_at(exc, text)
        raise Unsupported(f"text the shell parser cannot read ({bash.problem(exc)})", at or 0) from None
    for node in nodes:
        state.statement(node)
    return state.lines


class _State:
    def __init__(self, text: str, programs, depth: int = 0):
        self.text = text
        self.programs = programs
        self.depth = depth
        self.globbed = None
        self.env: dict[str, str] = {}
        self.lines: list[list[str]] = []

    def statement(self, node) -> None:
        kind = node.kind
        if kind == "command":
            self.command(node)
        elif kind == "list":
            for part in node.parts:
                if part.kind == "operator":
                    if part.op not in (";", "\n"):
                        raise Unsupported(f"the operator {part.op!r} (only ';' and newlines are followed)",
                                          part.pos[0])
                else:
                    self.statement(part)
        elif kind == "compound" and len(node.list) == 1 and node.list[0].kind == "if":
            self.conditional(node.list[0])
        elif kind == "case":
            self.case(node)
        else:
            raise Unsupported(f"a {kind} (only assignments, launch commands, eval, if ... fi and case ... esac "
                              "are followed)", node.pos[0])

    def command(self, node) -> None:
        words = [p for p in node.parts if p.kind == "word"]
        for p in node.parts:
            if p.kind not in ("word", "assignment"):
                raise Unsupported(f"a {p.kind} (the command would read or write a file)", p.pos[0])
        if not words:
            for p in node.parts:
                self.assign(p)
            return
        if len(words) != len(node.parts):
            raise Unsupported("a command with environment assignments", node.pos[0])
        argv = [f for w in words for f in fields(self.text, w.pos[0], w.pos[1], self.env, self.globbed)]
        if argv and argv[0] == "eval" and self.text[words[0].pos[0]:words[0].pos[1]] == "eval":
            self.eval(" ".join(argv[1:]), node.pos[0])
            return
        if not argv or argv[0] not in self.programs:
            shown = argv[0] if argv else ""
            raise Unsupported(f"the command {shown[:40]!r} is not a launch program (it would run)", node.pos[0])
        self.lines.append(argv)

    def eval(self, text: str, offset: int) -> None:
        """``eval`` of ``text`` (its arguments expanded and joined by spaces, bash(1) eval):
        the statements ``text`` spells, run here in this state. An :class:`Unsupported`
        inside it is reported at the ``eval`` (``offset``), saying where in the string."""
        if self.depth >= MAX_EVAL_DEPTH:
            raise Unsupported(f"eval nested more than {MAX_EVAL_DEPTH} deep", offset)
        inner = _State(text, self.programs, self.depth + 1)
        inner.env, inner.lines, inner.globbed = self.env, self.lines, self.globbed
        try:
            nodes = bash.parse(text) if text.strip() else []
            for node in nodes:
                inner.statement(node)
        except Unsupported as exc:
            raise Unsupported(f"in the string eval runs, at offset {exc.offset}: {exc.message}", offset) from None
        except Exception as exc:  # bashlex's ParsingError, and its own faults
            raise Unsupported(f"the string eval runs is not shell the parser reads ({bash.problem(exc)})",
                              offset) from None

    def case(self, node) -> None:
        """``case WORD in P1 | P2) ...;; *) ...;; esac``: the commands of the first arm one
        of whose patterns is WORD (expanded, not split). A pattern is a word matched as
        written, or ``*`` alone (every word); any other glob pattern is Unsupported."""
        word = expand(self.text, *node.word, self.env)
        for arm in node.arms:
            for start, end in arm.patterns:
                if self.text[start:end] == "*" or expand(self.text, start, end, self.env) == word:
                    for statement in arm.body:
                        self.statement(statement)
                    return

    def assign(self, node) -> None:
        a, b = node.pos
        name, eq, _ = self.text[a:b].partition("=")
        if not eq or not name.isidentifier() or not name.isascii():
            raise Unsupported("not a NAME=value assignment", a)
        if name in SHELL_VARIABLES:
            raise Unsupported(f"{name} is a variable bash gives a meaning of its own", a)
        self.env[name] = expand(self.text, a + len(name) + 1, b, self.env)

    def conditional(self, node) -> None:
        parts = list(node.parts)
        words = [getattr(p, "word", None) for p in parts]
        shape = words[:1] + words[2:3] + words[4:]
        if shape not in (["if", "then", "fi"], ["if", "then", "else", None, "fi"]) or words[1] is not None:
            raise Unsupported("an if with elif, or of another shape (only if ...; then ...; [else ...;] fi)",
                              node.pos[0])
        if self.test(parts[1]):
            self.statement(parts[3])
        elif len(parts) == 7:
            self.statement(parts[5])

    def test(self, node) -> bool:
        commands = [p for p in (node.parts if node.kind == "list" else [node]) if p.kind != "operator"]
        ops = [p for p in (node.parts if node.kind == "list" else []) if p.kind == "operator"]
        if len(commands) != 1 or commands[0].kind != "command" or any(o.op not in (";", "\n") for o in ops):
            raise Unsupported("a condition other than one [ A = B ] test", node.pos[0])
        parts = commands[0].parts
        if any(p.kind != "word" for p in parts) or len(parts) != 5:
            raise Unsupported("a condition other than [ A = B ], [ A != B ] or [[ A == B ]]", node.pos[0])
        raw = [self.text[p.pos[0]:p.pos[1]] for p in parts]
        if (raw[0], raw[4]) not in (("[", "]"), ("[[", "]]")) or raw[2] not in ("=", "==", "!="):
            raise Unsupported("a condition other than [ A = B ], [ A != B ] or [[ A == B ]]", node.pos[0])
        if raw[0] == "[[":  # no splitting inside [[ ]]; its right side is a pattern: no glob character
            left = expand(self.text, *parts[1].pos, self.env)
            right_units = units(self.text, *parts[3].pos)
            for u in right_units:
                value = u[1] if u[0] == "text" else _value(self.env, u[1], u[3])
                if not u[2] and any(c in GLOB for c in value):
                    raise Unsupported("the right side of == in [[ ]] is a pattern", parts[3].pos[0])
            right = expand(self.text, *parts[3].pos, self.env)
        else:
            sides = [fields(self.text, *parts[k].pos, self.env) for k in (1, 3)]
            if any(len(s) != 1 for s in sides):
                raise Unsupported("a [ ] operand that is not one word after splitting", node.pos[0])
            (left,), (right,) = sides
        return (left == right) != (raw[2] == "!=")
