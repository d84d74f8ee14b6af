"""The editor's view of one workspace: unsaved buffers over the files on disk.

A :class:`Session` keeps one :class:`~rcpc.domain.recipe.Compiler` warm between edits (the MaxText
schema, the JobSet schema, the libraries' evaluations and the manifests found clean stay
cached), and lays every open buffer over the file it edits: the compiler reads a file through
its ``sources`` table first, so seeding that table with the buffer's text compiles the text
the user sees, saved or not. A buffer is held to the limits the CLI holds a file to before
anything parses it (:func:`rcpc.lsp.documents.buffer_problem`); a file that is not open is
read as the compiler reads any input. An edit to a recipe drops that recipe's cached parse and
evaluation (:meth:`~rcpc.domain.recipe.Compiler.release`); an edit to a library drops the
compiler (every recipe that loads the library may change), not what the server's
:class:`rcpc.core.session.Session` holds (the parse tables, the schemas made, the manifests
found clean: keyed by their contents, they survive it).

Diagnostics are those of ``rcpc check`` for the file (:func:`rcpc.api.check_file`, the code
``check`` runs), and for a library, which ``check`` evaluates but does not lint, those of
``rcpc lint`` too.
"""

from __future__ import annotations

from pathlib import Path

from rcpc.api import check_file
from rcpc.core.diagnostics import CompileError, Diagnostic, unique
from rcpc.core.resolve import resolve
from rcpc.core.session import Session as Caches
from rcpc.core.source import Source
from rcpc.core.syntax import ast
from rcpc.core.syntax.parser import parse
from rcpc.domain import builtins as B
from rcpc.domain import stdlib
from rcpc.domain.lint import lint, unsilenced
from rcpc.domain.recipe import Compiler
from rcpc.domain.workspace import Workspace
from rcpc.lsp.documents import buffer_problem


class Session:
    """Open buffers of one workspace (``workspace``: its settings, as
    :func:`rcpc.lsp.documents.locate` found them). ``caches``: the
    :class:`rcpc.core.session.Session` every compiler made here fills (the server's, kept for
    its life: the parse tables, the MaxText and Kubernetes schemas made, the manifests found
    clean survive the compilers an edit drops); default: one of this object's own.

    ``buffers`` maps a file's real path to the buffer's text, ``refused`` to the diagnostic
    of a buffer the CLI would not read as a file (too large, not UTF-8). Methods take real
    paths inside the workspace (:class:`~pathlib.Path`, absolute, symlinks resolved)."""

    def __init__(self, workspace: Workspace, caches: Caches | None = None):
        self.workspace = workspace
        self.caches = Caches() if caches is None else caches
        self.buffers: dict[Path, str] = {}
        self.refused: dict[Path, Diagnostic] = {}
        self._compiler: Compiler | None = None
        self._last_module: dict[Path, ast.Module] = {}   # the last buffer text that parsed
        self._variants: dict[Path, tuple] = {}  # each recipe's declared variants, until an edit

    # buffers -------------------------------------------------------------------------------
    def update(self, real: Path, text: str) -> None:
        """The buffer of ``real`` now holds ``text`` (opened or edited)."""
        problem = buffer_problem(self.workspace.display(real), text)
        self.buffers.pop(real, None)
        self.refused.pop(real, None)
        if problem is None:
            self.buffers[real] = text
        else:
            self.refused[real] = problem
            self._last_module.pop(real, None)
        self._changed(real)

    def close(self, real: Path) -> None:
        """The buffer of ``real`` was closed: the file on disk counts again."""
        self.buffers.pop(real, None)
        self.refused.pop(real, None)
        self._last_module.pop(real, None)
        self._changed(real)

    def _changed(self, real: Path) -> None:
        self._variants.clear()
        if self._compiler is None:
            return
        if self.workspace.is_library(real):
            self._compiler = None
        else:
            self._compiler.release(real)
            self._compiler.forget_resolved()  # a loaded file may have moved meanwhile

    def source(self, real: Path) -> Source:
        """The text of ``real``: its buffer, else the file as the compiler reads it. Raises
        :class:`CompileError` (``E0803``, ``E0003`` for a buffer or a file; ``E0201`` for a
        file that cannot be read: missing, a directory, device, FIFO or socket)."""
        problem = self.refused.get(real)
        if problem is not None:
            raise CompileError(problem)
        return self.compiler().source(real)

    def compiler(self) -> Compiler:
        """The warm compiler, every open buffer laid over its file."""
        if self._compiler is None:
            self._compiler = Compiler(self.workspace, self.caches)
        c = self._compiler
        for real, text in self.buffers.items():
            shown = self.workspace.display(real)
            src = c.sources.get(shown)
            if src is None or src.text is not text:
                c.sources[shown] = Source(shown, text, str(real))
        return c

    def variants(self, real: Path) -> list[str]:
        """The names of the variants recipe ``real`` declares (its default evaluation, kept
        until the next edit). Raises :class:`CompileError`."""
        return [v.name for v in self._declared(real)]

    def sweep_points(self, real: Path) -> dict:
        """{span of a ``variants(over = ...)`` call: [the names of its points, in order]} of
        recipe ``real`` as its default evaluation declares them; empty for a library or a
        recipe that does not evaluate (its diagnostics say why)."""
        if self.workspace.is_library(real) or real in self.refused:
            return {}
        try:
            declared = self._declared(real)
        except CompileError:
            return {}
        points: dict = {}
        for v in declared:
            if v.sweep:
                points.setdefault(v.span, []).append(v.name)
        return points

    def _declared(self, real: Path) -> tuple:
        got = self._variants.get(real)
        if got is None:
            got = self._variants[real] = tuple(self.compiler().recipe(real)[0].variants)
        return got

    # diagnostics ---------------------------------------------------------------------------
    def syntax_diagnostics(self, real: Path) -> list[Diagnostic]:
        """The buffer's parse and name errors (``E00xx``, ``E01xx``), or why it is not read
        (``E0803``, ``E0003``, ``E0201``): the quick first answer after an edit, before
        evaluation."""
        try:
            self.module(real, strict=True)
        except CompileError as exc:
            return list(exc.diagnostics)
        return []

    def diagnostics(self, real: Path) -> list[Diagnostic]:
        """Everything ``rcpc check`` reports for the file (:func:`rcpc.api.check_file`):
        parse, name and evaluation errors of every variant, contract failures, MaxText and
        Kubernetes checks, lint findings, warnings and notes, silenced ones left out; for a
        library that has no error, ``rcpc lint``'s findings too."""
        problem = self.refused.get(real)
        if problem is not None:
            return [problem]
        c = self.compiler()
        c.context.diagnostics.clear()   # warnings of earlier runs; this run finds its own
        result = check_file(c, real)
        found = [*result.failures, *result.findings]
        if self.workspace.is_library(real) and not result.errors:
            found.extend(unsilenced(c, [d for d in c.library_warnings(real) if d.severity != "note"]))
            if real.is_file():   # lint names files on disk (a new buffer has none yet: no findings)
                found.extend(lint(c, [real]))
        return unique(found)

    # syntax trees --------------------------------------------------------------------------
    def module(self, real: Path, strict: bool = False) -> ast.Module | None:
        """The parsed and resolved module of ``real`` (``module.bindings`` set). With errors
        in the buffer: the bindings resolve found, else the last text of the buffer that
        parsed; ``strict`` raises the :class:`CompileError` instead."""
        if real in self.refused:
            if strict:
                raise CompileError(self.refused[real])
            return None
        c = self.compiler()
        try:
            mod = c.module(real)
        except CompileError:
            if strict:
                raise
            mod = self._partial(c, real)
        if mod is not None:
            self._last_module[real] = mod
            return mod
        return self._last_module.get(real)

    def _partial(self, c: Compiler, real: Path) -> ast.Module | None:
        try:
            mod = parse(c.source(real), session=self.caches)
        except CompileError:
            return None
        try:
            resolve(mod, B.NAMES)
        except CompileError:
            pass    # the bindings found are kept
        return mod

    def real(self, shown: str) -> Path:
        """The real path of a display path (a span's ``path``)."""
        return self.workspace.path_of(shown).resolve()

    def inside(self, real: Path) -> bool:
        """Whether ``real`` lies in the workspace or is a file of rcpc's standard library
        (what the session may read)."""
        return self.workspace.root in real.parents or stdlib.contains(real)
