"""rcpc's standard library: the ``.rcp`` files shipped inside the package (``rcpc/stdlib/``),
loaded as ``load("@rcpc//maxtext_tpu.rcp", ...)`` (docs/language.md, Loads).

The label form is Bazel's external-repository label, ``@REPO//PATH`` (bazel.build, Labels):
``@rcpc`` is the only repository, and it is the installed package's own directory, so the
library is versioned with rcpc and no workspace file can shadow it. Inside a standard library
file, ``//PATH`` and relative paths name files of the standard library (in Bazel, ``//`` in
an external repository is that repository's root), never the workspace's.

A standard library file is shown as its label (``@rcpc//maxtext_tpu.rcp``) in diagnostics and
spans; :func:`attributed` moves a diagnostic found inside one to the place of the workspace
that reached it (the ``@rcpc//`` load, or the call), saying the file is rcpc's.

Errors: ``E0206`` for a label that names no file of the standard library by its form (another
repository, ``..``, an empty or ``.`` part, a backslash), ``E0201`` for one that is well formed
but missing (with a did-you-mean).
"""

from __future__ import annotations

import os
from pathlib import Path

from rcpc import __version__
from rcpc.core import record
from rcpc.core.diagnostics import MAX_SUGGEST, Diagnostic, error
from rcpc.core.source import Span

REPOSITORY = "rcpc"
PREFIX = f"@{REPOSITORY}//"
DIRECTORY = Path(__file__).resolve().parent.parent / "stdlib"
_SUFFIX = ".rcp"


# Each function taking ``directory`` reads the standard library there (default: the running
# rcpc's, DIRECTORY; ``rcpc diff --rev`` compiles a revision of rcpc's own repository with the
# revision's: rcpc.review.revision.materialise).


def files(directory: Path | None = None) -> list[str]:
    """The labels of every standard library file, sorted (``@rcpc//maxtext_tpu.rcp``, ...)."""
    d = directory or DIRECTORY
    return sorted(PREFIX + p.relative_to(d).as_posix() for p in d.rglob("*" + _SUFFIX))


def _listed(directory: Path) -> str:
    """The labels of :func:`files` for a hint ("none" when the package holds none: an
    installation without its package data)."""
    return ", ".join(files(directory)) or f"none (rcpc's installation lacks {directory})"


def contains(path: Path, directory: Path | None = None) -> bool:
    """``path`` (absolute, real) is the standard library directory or inside it."""
    d, p = str(directory or DIRECTORY), str(path)
    return p == d or p.startswith(d + os.sep)   # a prefix test: no Path made per parent


def label(path: Path, directory: Path | None = None) -> str:
    """The label of standard library file ``path`` (absolute, real; :func:`contains`)."""
    return PREFIX + path.relative_to(directory or DIRECTORY).as_posix()


def is_label(text: str) -> bool:
    """``text`` (a load path, or a span's path) is a standard library label."""
    return text.startswith(PREFIX)


def path_of(text: str, directory: Path | None = None) -> Path:
    """The file a label names (no check that it exists or is well formed)."""
    return (directory or DIRECTORY) / text[len(PREFIX):]


def resolve(target: str, span: Span | None, base: str = "", directory: Path | None = None) -> Path:
    """The file of a load path ``target``: an ``@REPO//PATH`` label, or, with ``base`` (the
    label of the standard library file that loads it), ``//PATH`` or a path relative to that
    file. ``E0206`` for a path that leaves the standard library or names another repository,
    ``E0201`` for a missing file (with a did-you-mean among :func:`files`)."""
    directory = directory or DIRECTORY
    if target.startswith("@"):
        repo, sep, rest = target[1:].partition("//")
        if not sep or repo != REPOSITORY:
            raise error("E0206", f"load path {target!r} names no repository rcpc knows", span,
                        hint=(f"rcpc's standard library is {PREFIX}FILE.rcp (files: {_listed(directory)}); "
                              "a file of this workspace is //path/to/file.rcp"))
        parts = rest.split("/")
    elif target.startswith("//"):
        parts = target[2:].split("/")
    else:
        parts = [*base[len(PREFIX):].split("/")[:-1], *target.split("/")]
        parts = _normalized(parts, target, span)
    if any(p in ("", ".", "..") or "\\" in p or "\0" in p for p in parts):
        raise error("E0206", f"load path {target!r} is not a file of rcpc's standard library: "
                    "its parts must be plain names (no '..', '.', empty part or backslash)", span,
                    hint=f"name the file as {PREFIX}FILE.rcp; the files are {_listed(directory)}")
    path = directory.joinpath(*parts)
    if not path.is_file():
        shown = PREFIX + "/".join(parts)
        raise error("E0201", f"cannot load {target!r}: rcpc's standard library has no file {shown}", span,
                    hint=_suggest(shown, directory))
    return path


def _suggest(shown: str, directory: Path) -> str:
    """A did-you-mean among the standard library's files, compared without the ``@rcpc//``
    and ``.rcp`` every label has (they would make any two names look alike), else the list."""
    import difflib

    known = {label[len(PREFIX):].removesuffix(_SUFFIX): label for label in files(directory)}
    close = difflib.get_close_matches(shown[len(PREFIX):].removesuffix(_SUFFIX)[:MAX_SUGGEST], known, n=1)
    if close:
        return f"did you mean '{known[close[0]]}'?"
    return f"the files of rcpc's standard library: {_listed(directory)}"


def _normalized(parts: list, target: str, span: Span | None) -> list:
    """A relative path's parts joined to the loading file's directory, ``..`` applied:
    ``E0206`` when it climbs out of the standard library."""
    out: list = []
    for p in parts:
        if p == "..":
            if not out:
                raise error("E0206", f"load path {target!r} leaves rcpc's standard library", span,
                            hint="a standard library file loads only other standard library files")
            out.pop()
        elif p != ".":
            out.append(p)
    return out


NOTE = ("{label} is rcpc's own file, shipped with rcpc {version} ({path}), which no workspace "
        "edits: change the load or call here{silenced}, or report a fault in it to rcpc")
SILENCED = " (or silence it here with `# rcpc: ignore[{code}]`)"  # a warning or a note: an error is not silenced


def attributed(d: Diagnostic) -> Diagnostic:
    """``d`` as a workspace's user reads it: a diagnostic whose span is in a standard library
    file is moved to the first ``related`` span outside the standard library (the ``@rcpc//``
    load that loaded it, or the call that reached it), its place in the standard library kept
    as ``in rcpc's standard library``, with a note that the file is rcpc's. A diagnostic with
    no such span (a standard library file checked on its own) is returned unchanged."""
    if d.span is None or not is_label(d.span.path):
        return d
    outside = next((i for i, (_, s) in enumerate(d.related) if s is not None and not is_label(s.path)), None)
    if outside is None:
        return d

    rest = d.related[:outside] + d.related[outside + 1:]
    silenced = "" if d.severity == "error" else SILENCED.format(code=d.code)
    note = NOTE.format(label=d.span.path, version=__version__, path=path_of(d.span.path), silenced=silenced)
    return record.evolve(d, span=d.related[outside][1], related=(("in rcpc's standard library", d.span), *rest),
                         notes=(*d.notes, note))


def suggestion(target: str) -> str | None:
    """For a workspace load path that is missing but whose file name is one the standard
    library has (``//recipes/lib/maxtext_tpu.rcp``): how to load rcpc's; else None."""
    name = target.rsplit("/", 1)[-1]
    return f"rcpc ships {name}: load it as {PREFIX}{name}" if PREFIX + name in files() else None
