"""Render kinds: the values a recipe declares as output files, one :class:`RenderKind` each.

A render kind says, in one place, everything rcpc does with its renders:

* ``name`` (the value's type in the language) and ``suffix`` (of the file it becomes);
* ``functions``: the built-ins that make it (:class:`rcpc.core.builtins.Function`: call,
  signature, doc), plugged into the language by :data:`rcpc.domain.builtins.UNIVERSE`;
* ``weight`` (what it costs to render, against :data:`~rcpc.core.limits.MAX_NODES`) and
  ``emit`` (its exact text);
* ``check``: the errors of a rendered value (a manifest: Kubernetes rules and schemas);
* ``data``: what it writes, as language values with their provenance. The flag sets a render
  carries, and where, are read from it (:func:`carried`, :mod:`rcpc.domain.embedding`): every
  check that is about flags (MaxText's launch checks, contracts, explain, diff) asks that, for
  every kind alike, never a list of kinds;
* ``paths``: whether its data has places a contract may name by path (a manifest's fields, a
  command's words), beside flag keys.

Kinds: :data:`MANIFEST` (``jobset(...)``, ``manifest(...)`` → ``<name>.yaml``),
:data:`FLAG_FILE` (``flag_file(...)`` → ``<name>.flags``) and :data:`COMMAND_FILE`
(``command_file(...)`` → an executable ``<name>.sh``). A new kind is a new
:class:`RenderKind` in :data:`KINDS` (and the value class it renders).
"""

from __future__ import annotations

from collections.abc import Callable

from rcpc.core import patterns
from rcpc.core import record
from rcpc.core.builtins import Function, _bind, _expect
from rcpc.core.diagnostics import error
from rcpc.core.emit.yaml import EmitError, emit_document
from rcpc.core.limits import MAX_NAME
from rcpc.core import names
from rcpc.core.source import Span
from rcpc.core.values import Dict, List, Str, weight
from rcpc.domain.delta import data_delta
from rcpc.domain.embedding import delta as flag_changes, embeddings, match, with_layer, without_flags
from rcpc.domain.maxtext.emit import flag_file, shell_quote, value_text
from rcpc.domain.maxtext.flagset import argv, flags_weight
from rcpc.domain.provenance import argv_value
from rcpc.domain.values import CommandFile, FlagFile, FlagSet, Manifest

JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"
RENDER_NAME = patterns.precompiled(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@record.frozen
class RenderKind:
    """One kind of render (see the module docstring). ``check(compiler, value, text)`` gets
    the :class:`~rcpc.domain.recipe.Compiler` of the run (its workspace, schemas and caches);
    ``emit(value, session)`` the run's :class:`~rcpc.core.session.Session` (or None)."""

    name: str
    suffix: str
    value_type: type
    functions: dict
    weight: Callable
    emit: Callable
    check: Callable
    data: Callable
    # (value, fs, grown) -> the value carrying flag set ``grown`` (``fs`` and one more layer)
    # wherever it carried ``fs`` (:func:`rcpc.domain.embedding.with_layer`; ``--flag``)
    with_flags: Callable = None
    paths: bool = True        # contracts may name paths in it (its data is more than one flag set)
    executable: bool = False  # written with the execute bits (0777 less the umask)

    def file_name(self, value) -> str:
        """The file a render of this kind is written to: ``<name><suffix>``."""
        return value.name + self.suffix


# constructors -----------------------------------------------------------------------------
def _metadata(a: dict, name: Str, span: Span) -> Dict:
    md = a.get("metadata")
    if md is None:
        return Dict({"name": name}, {"name": name.span}, span)
    return _expect(md, (Dict,), "metadata")


def _render_name(v) -> str:
    _expect(v, (Str,), "name")
    if not RENDER_NAME.fullmatch(v.value) or ".." in v.value or len(v.value) > MAX_NAME:
        raise error("E0701", f"render name {v.value[:40]!r} is not a plain file name", v.span,
                    hint=f"use at most {MAX_NAME} letters, digits, '.', '-' and '_' (no '/', no '..')")
    why = names.problem(v.value)
    if why is not None:
        raise error("E0701", f"render name {v.value!r} is not a portable file name: it {why}", v.span,
                    hint="use letters, digits, '.', '-' and '_'")
    return v.value


def _jobset(ctx, fn, span, args, kwargs):
    a = _bind("jobset", span, args, kwargs, (), {"name", "spec"}, {"metadata", "apiVersion"})
    name = _render_name(a["name"])
    api = a.get("apiVersion", Str(JOBSET_API_VERSION, span))
    _expect(api, (Str,), "apiVersion")
    data = {"apiVersion": api, "kind": Str("JobSet", span), "metadata": _metadata(a, a["name"], span),
            "spec": _expect(a["spec"], (Dict,), "spec")}
    return Manifest(name, Dict(data, {k: span for k in data}, span), span)


def _manifest(ctx, fn, span, args, kwargs):
    a = _bind("manifest", span, args, kwargs, (), {"name", "apiVersion", "kind"}, {"metadata"},
              extra_kwargs=True)
    name = _render_name(a["name"])
    data = {"apiVersion": _expect(a["apiVersion"], (Str,), "apiVersion"),
            "kind": _expect(a["kind"], (Str,), "kind"),
            "metadata": _metadata(a, a["name"], span)}
    spans = {k: kwargs[k][1] if k in kwargs else span for k in data}
    for k, v in a.items():
        if k not in data and k != "name":
            data[k] = v
            spans[k] = kwargs[k][1]
    return Manifest(name, Dict(data, spans, span), span)


def _flag_file(ctx, fn, span, args, kwargs):
    a = _bind("flag_file", span, args, kwargs, (), {"name", "flags"})
    return FlagFile(_render_name(a["name"]), _expect(a["flags"], (FlagSet,), "flags"), span)


def _command_file(ctx, fn, span, args, kwargs):
    a = _bind("command_file", span, args, kwargs, (), {"name", "argv"})
    argv = _expect(a["argv"], (List,), "argv")
    if not argv.items:
        raise error("E1206", "command_file argv is empty", argv.span, hint="argv[0] is the program to run")
    for word in argv.items:
        _expect(word, (Str,), "an argv word")
        if "\0" in word.value:
            raise error("E1206", "an argv word holds a NUL character, which no command line can pass", word.span,
                        hint="remove the \\0 from the word")
    return CommandFile(_render_name(a["name"]), argv, span)


def emit_command_file(value: CommandFile, session=None) -> str:
    """The ``.sh`` render: ``#!/bin/bash``, then the command, one word a line after the
    first (each line but the last ending in a backslash), each word quoted for bash only when needed
    (:func:`~rcpc.domain.maxtext.emit.shell_quote`), so that bash runs exactly ``argv``. (``session``:
    unused, as :class:`RenderKind` ``emit`` takes it.)"""
    words = [shell_quote(w.value) for w in value.argv.items]
    return "#!/bin/bash\n" + " \\\n  ".join(words) + "\n"


def _emit_manifest(value: Manifest, session=None) -> str:
    try:
        return emit_document(value.data, session)
    except EmitError as exc:
        raise error("E0703", str(exc), exc.value.span,
                    hint="manifests hold dicts, lists, strings, numbers, bools and None") from None


MANIFEST = RenderKind(
    name="manifest", suffix=".yaml", value_type=Manifest,
    functions={"jobset": Function(_jobset, "jobset(name = ..., metadata = {...}, spec = {...}, apiVersion = ...)",
                                  "A JobSet (jobset.x-k8s.io/v1alpha2), rendered as `<name>.yaml`.",
                                  ("name", "metadata", "spec", "apiVersion"), "render",
                                  reference="`metadata` defaults to `{\"name\": name}`."),
               "manifest": Function(_manifest, "manifest(name = ..., apiVersion = ..., kind = ..., metadata = {...}, "
                                    "<field> = ...)", "Any Kubernetes object, rendered as `<name>.yaml`.",
                                    ("name", "apiVersion", "kind", "metadata"), "render",
                                    reference="Fields in the order written.")},
    weight=lambda value: weight(value.data),
    emit=_emit_manifest,
    check=lambda compiler, value, text: compiler.check_manifest(value, text),
    data=lambda value: value.data,
    with_flags=lambda value, fs, grown: record.evolve(value, data=with_layer(value.data, fs, grown)))

FLAG_FILE = RenderKind(
    name="flag_file", suffix=".flags", value_type=FlagFile,
    functions={"flag_file": Function(_flag_file, "flag_file(name = ..., flags = FLAGS)",
                                     "A flag set rendered as `<name>.flags`, one shell-quoted token a line.",
                                     ("name", "flags"), "render")},
    weight=lambda value: flags_weight(value.flags),
    emit=lambda value, session=None: flag_file(argv(value.flags)),
    check=lambda compiler, value, text: [],
    data=lambda value: argv_value(value.flags, value.span),  # token strings, with provenance
    with_flags=lambda value, fs, grown: record.evolve(value, flags=grown) if value.flags is fs else value,
    paths=False)

COMMAND_FILE = RenderKind(
    name="command_file", suffix=".sh", value_type=CommandFile,
    functions={"command_file": Function(_command_file, "command_file(name = ..., argv = [...])",
                                        "A command line rendered as `<name>.sh`, an executable bash script that "
                                        "runs `argv`.", ("name", "argv"), "render",
                                        reference="`argv` is a non-empty list of strings, the program first; each "
                                        "word is quoted for bash only where needed (E1206: empty, or a word with a "
                                        "NUL). `rcpc import shell` writes it.")},
    weight=lambda value: weight(value.argv),
    emit=emit_command_file,
    check=lambda compiler, value, text: [],
    data=lambda value: value.argv,
    with_flags=lambda value, fs, grown: record.evolve(value, argv=with_layer(value.argv, fs, grown)),
    executable=True)

KINDS = (MANIFEST, FLAG_FILE, COMMAND_FILE)
EXECUTABLE_SUFFIXES = frozenset(k.suffix for k in KINDS if k.executable)
_BY_TYPE = {k.value_type: k for k in KINDS}


def kind_of(value) -> RenderKind | None:
    """The render kind of ``value``, or None when it is not a render."""
    return _BY_TYPE.get(type(value))


def render_data(value):
    """The data a render writes, with provenance (:attr:`RenderKind.data`)."""
    return kind_of(value).data(value)


def carried(value, memo: dict | None = None) -> list:
    """The :class:`~rcpc.domain.embedding.Embedding` of every flag set ``value`` (a render)
    carries, in document order (``memo``: as :func:`~rcpc.domain.embedding.embeddings`)."""
    return embeddings(render_data(value), memo)


def render_changes(old_value, new_value) -> dict:
    """What changed between two versions of one render: ``{"flags": [FlagChange], "paths":
    [Change]}``, the effective flag changes of every flag set it carries (each change once)
    and the changes of everything else by path (:func:`~rcpc.domain.embedding.without_flags`);
    ``{}`` when the two are not of one kind."""
    kind = kind_of(old_value)
    if kind is None or kind is not kind_of(new_value):
        return {}
    a, b = kind.data(old_value), kind.data(new_value)
    flags: dict = {}
    for old, new in match(embeddings(a), embeddings(b)):
        for c in flag_changes(old, new).changes:
            flags.setdefault((c.key, _shown(c.old), _shown(c.new)), c)
    return {"flags": list(flags.values()), "paths": data_delta(without_flags(a), without_flags(b))}


def _shown(entry) -> str | None:
    return None if entry is None else value_text(entry.value)
