"""pytest plugin (entry point ``pytest11``): golden snapshots of every recipe's renders.

In any repository with an ``rcp.toml``, collecting that file (``pytest`` in the repository,
or ``testpaths = ["tests", "rcp.toml"]``) yields one test item per recipe × declared
variant × render, comparing the render with ``<golden_dir>/<recipe>/<variant>/<render>``
through :class:`~rcpc.testing.golden.GoldenExtension`; one item per diff contract; and one
``orphans`` item that fails on goldens whose recipe, variant or render no longer exists.
``pytest --snapshot-update`` (syrupy's flag) writes changed and missing goldens and deletes
orphans. A recipe that does not compile is one failing item showing its diagnostics.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from rcpc.workspace import CONFIG_NAME


def pytest_collect_file(file_path: Path, parent):
    if file_path.name == CONFIG_NAME:
        return RecipeWorkspace.from_parent(parent, path=file_path)
    return None


def _update(config) -> bool:
    return bool(getattr(config.option, "update_snapshots", False))


def _golden_obj():  # gives syrupy's PyTestLocation a module and name for our items
    """Golden snapshot of one render."""


def _visible(line: str) -> str:
    """A diff line with its end made visible: CR, a missing final newline and trailing
    whitespace would otherwise not show in the report."""
    body = line[:-1] if line.endswith("\n") else line
    out = body.replace("\r", "\\r")
    if body != body.rstrip(" \t"):
        out += "⏎"
    if not line.endswith("\n"):
        out += "  (no newline at end)"
    return out


class GoldenFailure(Exception):
    """A golden test failed; ``lines`` is the report."""

    def __init__(self, lines: list[str]):
        super().__init__("\n".join(lines))
        self.lines = lines


class _Item(pytest.Item):
    def reportinfo(self):
        return self.path, None, self.name

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, GoldenFailure):
            return "\n".join(excinfo.value.lines)
        return super().repr_failure(excinfo, style)


class GoldenItem(_Item):
    """Compares one render's text with its golden file, byte for byte."""

    def __init__(self, *, golden_path: Path, text: str, **kw):
        super().__init__(**kw)
        self.golden_path = golden_path
        self.text = text
        self.obj = _golden_obj

    def runtest(self):
        try:
            from syrupy.assertion import SnapshotAssertion
            from syrupy.location import PyTestLocation
        except ImportError:  # pragma: no cover - rcpc[test] installs syrupy
            raise GoldenFailure(["golden tests need syrupy: pip install 'rcpc[test]'"]) from None
        from rcpc.testing.golden import GoldenExtension

        options = {}
        if hasattr(self.config.option, "update_new_snapshots_only"):
            options["update_new_snapshots_only"] = self.config.option.update_new_snapshots_only
        assertion = SnapshotAssertion(update_snapshots=_update(self.config), extension_class=GoldenExtension,
                                      test_location=PyTestLocation(self), session=self.config._syrupy,
                                      **options)
        if not assertion == self.text:
            rel = os.path.relpath(self.golden_path)
            result = assertion.executions[0]
            if result.exception is not None:
                raise result.exception
            if result.recalled_data is None:
                raise GoldenFailure([f"golden {rel} is missing",
                                     "run `pytest --snapshot-update` to write it"])
            diff = difflib.unified_diff(result.recalled_data.splitlines(True), self.text.splitlines(True),
                                        f"golden/{self.name}", f"render/{self.name}")
            lines = [f"golden {rel} differs from the render:"]
            lines += [_visible(line) for line in diff]
            lines.append("run `pytest --snapshot-update` to accept the new render")
            raise GoldenFailure(lines)


class ContractItem(_Item):
    """A variant's diff contract (``against`` / ``changes``)."""

    def __init__(self, *, diagnostics: list, sources: dict, **kw):
        super().__init__(**kw)
        self.diagnostics = diagnostics
        self.sources = sources

    def runtest(self):
        from rcpc.diagnostics import format_text

        if self.diagnostics:
            raise GoldenFailure([format_text(d, self.sources) for d in self.diagnostics])


class RecipeErrorItem(ContractItem):
    """A recipe that does not compile."""


class OrphansItem(_Item):
    """Fails on golden files that no render produces; deletes them under --snapshot-update."""

    def __init__(self, *, golden_dir: Path, expected: set, unknown: list, **kw):
        super().__init__(**kw)
        self.golden_dir = golden_dir
        self.expected = expected
        self.unknown = unknown  # golden dirs of recipes that did not compile: left alone

    def runtest(self):
        if not self.golden_dir.is_dir():
            return
        orphans = sorted(
            p for p in self.golden_dir.rglob("*")
            if p.is_file() and not p.name.startswith(".") and p not in self.expected
            and not any(u in p.parents for u in self.unknown))
        if not orphans:
            return
        if _update(self.config):
            for p in orphans:
                p.unlink()
            for d in sorted({p.parent for p in orphans}, key=lambda d: len(d.parts), reverse=True):
                while d != self.golden_dir and d.is_dir() and not any(d.iterdir()):
                    d.rmdir()
                    d = d.parent
            return
        lines = ["golden files that no recipe, variant or render produces any more:"]
        lines += [f"  {os.path.relpath(p)}" for p in orphans]
        lines.append("run `pytest --snapshot-update` to delete them")
        raise GoldenFailure(lines)


class RecipeWorkspace(pytest.File):
    """The recipes of one workspace, as golden, contract and orphan test items."""

    def collect(self):
        from rcpc.contracts import check_contract
        from rcpc.diagnostics import CompileError
        from rcpc.recipe import Compiler
        from rcpc.workspace import Workspace

        try:
            ws = Workspace.find(self.path.parent)
            compiler = Compiler(ws)
        except CompileError as exc:
            yield RecipeErrorItem.from_parent(self, name=CONFIG_NAME, diagnostics=exc.diagnostics, sources={})
            return
        expected: set[Path] = set()
        unknown: list[Path] = []
        for path in ws.recipes():
            name = ws.recipe_name(path)
            try:
                recipe, builds = compiler.build(path)
            except CompileError as exc:
                unknown.append(ws.golden_dir / name)
                yield RecipeErrorItem.from_parent(self, name=name, diagnostics=exc.diagnostics,
                                                  sources=compiler.sources)
                continue
            by_variant = {b.variant: b for b in builds}
            for b in builds:
                for r in b.renders:
                    golden = ws.golden_dir / name / b.variant / r.name
                    expected.add(golden)
                    yield GoldenItem.from_parent(self, name=f"{name}/{b.variant}/{r.name}",
                                                 golden_path=golden, text=r.text)
            for v in recipe.variants:
                if v.against is not None and v.changes is not None:
                    diags = check_contract(v, by_variant[v.against], by_variant[v.name])
                    yield ContractItem.from_parent(self, name=f"{name}/{v.name}:contract",
                                                   diagnostics=diags, sources=compiler.sources)
        yield OrphansItem.from_parent(self, name="orphans", golden_dir=ws.golden_dir,
                                      expected=expected, unknown=unknown)
