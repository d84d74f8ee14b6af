"""The proof of an import: the new recipe is built and its output compared with the input.

* a manifest: the parsed YAML of the render against the template after envsubst with the
  same values (:func:`envsubst`, gettext's envsubst(1) with a SHELL-FORMAT naming the
  params), compared strictly (:func:`differences`: ``2`` is not ``2.0``, ``true`` not ``1``);
* a shell recipe: the argv of every command the shell file and the ``launch.sh`` render
  would run, interpreted over their syntax trees (:mod:`rcpc.importer.interpret`): nothing
  of either is run.

Two sets of values are used: the recipe's defaults, and :func:`other_values` (each value
different; for a typed param, :func:`rcpc.importer.fields.other_text`), so a param the
recipe ignored cannot pass by its default matching. A manifest's renders are compared as
written (:func:`renders`), before the Kubernetes and TPU rules: a second value may be one
they refuse (``parallelism`` is the slice's host count), and equality is about data.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from rcpc.core.diagnostics import CompileError
from rcpc.core.values import to_python
from rcpc.domain.kube.manifests import parse_manifests
from rcpc.domain.recipe import Compiler
from rcpc.domain.renders import kind_of
from rcpc.domain.workspace import Workspace
from rcpc.importer.fields import other_text
from rcpc.importer.literals import Ref, placeholders


def envsubst(text: str, values: dict) -> str:
    """``text`` with ``${NAME}`` and ``$NAME`` replaced for each NAME of ``values``, as
    ``envsubst '$A $B'`` does; everything else (``$(date)``, ``$PID``) is kept."""
    return "".join(values[p.text] if isinstance(p, Ref) else p for p in placeholders(text, values))


def other_values(defaults: dict) -> dict:
    """A second value for each param, different from its default and from each other
    (lowercase letters, digits, '-', '/' and '.': valid as a name, an image and a path)."""
    return {k: f"v{i}-{(v or k.lower()).replace('_', '-')}x" for i, (k, v) in enumerate(defaults.items())}


def differences(a, b, path: str = "$"):
    """Where ``a`` (the render) and ``b`` (the input) differ, strictly: same types at every
    node (bool is not int, int is not float), same keys, same list lengths, equal scalars.
    Yields one line per difference; strings are shown around their first differing
    character."""
    if type(a) is not type(b):
        yield f"{path}: {type(a).__name__} {a!r:.80} in the render, {type(b).__name__} {b!r:.80} in the input"
    elif isinstance(a, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in b:
                yield f"{path}.{k}: only in the render"
            elif k not in a:
                yield f"{path}.{k}: only in the input"
            else:
                yield from differences(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        if len(a) != len(b):
            yield f"{path}: {len(a)} items in the render, {len(b)} in the input"
        for i, (x, y) in enumerate(zip(a, b)):
            yield from differences(x, y, f"{path}[{i}]")
    elif a != b:
        if isinstance(a, str):
            i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            lo = max(0, i - 40)
            yield f"{path}: strings differ at offset {i}: render {a[lo:i + 40]!r}, input {b[lo:i + 40]!r}"
        else:
            yield f"{path}: {a!r} in the render, {b!r} in the input"


def build(compiler, recipe: Path, values: dict) -> dict:
    """The renders (name → text) of ``recipe`` built with ``values`` as ``--set`` items.
    Raises :class:`~rcpc.core.diagnostics.CompileError`."""
    _, builds = compiler.build(recipe, sets=[f"{k}={v}" for k, v in values.items()] or None)
    (b,) = builds
    return {r.name: r.text for r in b.renders}


def with_recipe(text: str, run):
    """``run(path)`` with recipe ``text`` written to a new temporary file (removed after)."""
    with tempfile.TemporaryDirectory(prefix="rcpc-import-") as d:
        path = Path(d) / "imported.rcp"
        path.write_text(text, encoding="utf-8")
        return run(path)


def renders(compiler, recipe: Path, values: dict) -> dict:
    """The renders (name → text) of ``recipe`` evaluated with ``values`` as ``--set`` text,
    as written before any check of what they hold: the proof compares data, for values the
    Kubernetes and TPU rules may refuse (``parallelism`` = 2 on a slice of 16 hosts is not
    valid, and is still rendered as envsubst writes it). Raises
    :class:`~rcpc.core.diagnostics.CompileError` for the errors of the evaluation itself
    (a MaxText key the schema does not know, a value not of its param's type)."""
    result = compiler.evaluate(recipe, dict(values))
    if result.errors:
        raise CompileError(result.errors)
    out = {}
    for value in result.renders:
        kind = kind_of(value)
        out[kind.file_name(value)] = kind.emit(value, compiler.session)
    return out


def typed_other_values(defaults: dict, types: dict) -> dict:
    """A second value (``--set`` text) of each param: :func:`other_values` for the ``str``
    params, :func:`rcpc.importer.fields.other_text` for those ``types`` names ``int``,
    ``bool`` or ``float``."""
    strings = other_values({k: v for k, v in defaults.items() if types.get(k, "str") == "str"})
    return {k: strings[k] if k in strings else other_text(types[k], v) for k, v in defaults.items()}


def manifest_differences(compiler, recipe: Path, template_text: str, defaults: dict, types: dict | None = None) -> list:
    """The differences between the recipe's renders (:func:`renders`, in the order the recipe
    declares them) and the template's documents after envsubst, document by document, for
    the defaults (``--set`` text) and for :func:`typed_other_values` (``types``: name → param
    type, ``str`` when not named); empty when equal. Raises
    :class:`~rcpc.core.diagnostics.CompileError` when the recipe does not evaluate."""
    def read(text: str, shown: str) -> list:  # as kubectl reads it (go-yaml), not PyYAML: `n:` is the key "false"
        return [to_python(d) for d in parse_manifests(text, shown)]

    for values in (defaults, typed_other_values(defaults, types or {})):
        ours = [doc for text in renders(compiler, recipe, values).values() for doc in read(text, "the render")]
        theirs = read(envsubst(template_text, values), "the input")
        if len(ours) != len(theirs):
            return [f"the recipe renders {len(ours)} manifests, the template has {len(theirs)} documents"]
        shown = ", ".join(f"{k}={v}" for k, v in values.items())
        for i, (a, b) in enumerate(zip(ours, theirs)):
            found = list(differences(a, b, f"$[{i}]" if len(theirs) > 1 else "$"))
            if found:
                return [f"with {shown}: {d}" for d in found]
    return []


def fresh_compiler(root: Path):
    """A compiler of the workspace at ``root`` with nothing cached (each proof reads the
    files as they are now)."""
    return Compiler(Workspace.find(Path(os.fspath(root))))
