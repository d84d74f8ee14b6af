"""The editor's view of one workspace: unsaved buffers over the files on disk.

A :class:`Session` keeps one :class:`~rcpc.domain.recipe.Compiler` warm between edits (the MaxText
schema, the JobSet schema, the libraries' evaluations and the manifests found clean stay
cached), and lays every open buffer over the file it edits: the compiler reads a file through
its ``sources`` table first, so seeding that table with the buffer's text compiles the text
the user sees, saved or not. An edit to a recipe drops that recipe's cached parse and
evaluation (:meth:`~rcpc.domain.recipe.Compiler.release`); an edit to a library drops the compiler
(every recipe that loads the library may change).
"""

from __future__ import annotations

from pathlib import Path

from rcpc.domain import builtins as B
from rcpc.core.diagnostics import CompileError, Diagnostic
from rcpc.domain.lint import lint
from rcpc.domain.recipe import Compiler
from rcpc.core.resolve import resolve
from rcpc.core.source import Source
from rcpc.core.syntax import ast
from rcpc.core.syntax.parser import parse
from rcpc.domain.workspace import Workspace


class Session:
    """Open buffers of one workspace (``root``: a directory at or below its ``rcp.toml``).

    ``buffers`` maps a file's real path to the buffer's text. Methods take real paths
    (:class:`~pathlib.Path`, absolute, symlinks resolved)."""

    def __init__(self, root: str | Path):
        self.workspace = Workspace.find(root)
        self.buffers: dict[Path, str] = {}
        self._compiler: Compiler | None = None
        self._last_module: dict[Path, ast.Module] = {}   # the last buffer text that parsed

    # buffers -------------------------------------------------------------------------------
    def update(self, real: Path, text: str) -> None:
        """The buffer of ``real`` now holds ``text`` (opened or edited)."""
        self.buffers[real] = text
        if self._compiler is None:
            return
        if self.workspace.is_library(real):
            self._compiler = None
        else:
            self._compiler.release(real)

    def close(self, real: Path) -> None:
        """The buffer of ``real`` was closed: the file on disk counts again."""
        if self.buffers.pop(real, None) is not None:
            self._compiler = None
        self._last_module.pop(real, None)

    def text(self, real: Path) -> str | None:
        """The buffer's text, else the file's (None when it cannot be read as UTF-8)."""
        if real in self.buffers:
            return self.buffers[real]
        try:
            return real.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def compiler(self) -> Compiler:
        """The warm compiler, every open buffer laid over its file."""
        if self._compiler is None:
            self._compiler = Compiler(self.workspace)
        c = self._compiler
        for real, text in self.buffers.items():
            shown = self.workspace.display(real)
            src = c.sources.get(shown)
            if src is None or src.text is not text:
                c.sources[shown] = Source(shown, text, str(real))
        return c

    # diagnostics ---------------------------------------------------------------------------
    def syntax_diagnostics(self, real: Path) -> list[Diagnostic]:
        """The buffer's parse and name errors (``E00xx``, ``E01xx``): the quick first answer
        after an edit, before evaluation."""
        try:
            self.module(real, strict=True)
        except CompileError as exc:
            return list(exc.diagnostics)
        return []

    def diagnostics(self, real: Path) -> list[Diagnostic]:
        """Everything ``rcpc lint`` and ``rcpc check`` report for the buffer: parse, name and
        evaluation errors of every variant, contract failures, MaxText and Kubernetes checks,
        lint findings and warnings, silenced ones left out (:func:`rcpc.domain.lint.lint`)."""
        c = self.compiler()
        c.context.diagnostics.clear()   # warnings of earlier runs; this run finds its own
        found = lint(c, [real])
        if not self.workspace.is_library(real):
            found.extend(c.loaded_warnings(real))
        return found

    # syntax trees --------------------------------------------------------------------------
    def module(self, real: Path, strict: bool = False) -> ast.Module | None:
        """The parsed and resolved module of ``real`` (``module.bindings`` set). With errors
        in the buffer: the bindings resolve found, else the last text of the buffer that
        parsed; ``strict`` raises the :class:`CompileError` instead."""
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
            mod = parse(c.source(real))
        except CompileError:
            return None
        try:
            resolve(mod, B.NAMES)
        except CompileError:
            pass    # the bindings found are kept
        return mod

    def real(self, shown: str) -> Path:
        """The real path of a display path (a span's ``path``)."""
        return (self.workspace.root / shown).resolve()
