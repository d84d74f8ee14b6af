"""pytest plugin (entry point ``pytest11``): golden snapshots of every recipe's renders.

In any repository with an ``rcp.toml``, collecting that file (``pytest`` in the repository,
or ``testpaths = ["tests", "rcp.toml"]``) yields one test item per recipe × declared
variant × render, comparing the render with ``<golden_dir>/<recipe>/<variant>/<render>``
through :class:`~rcpc.testing.golden.GoldenExtension`; one item per diff contract; and one
``orphans`` item that fails on goldens whose recipe, variant or render no longer exists.
``pytest --snapshot-update`` (syrupy's flag) writes changed and missing goldens and deletes
orphans, and lists in the terminal summary every golden file it wrote or deleted. A recipe
that does not compile is one failing item showing its diagnostics.

When goldens fail, the terminal summary *leads* (before pytest's per-item failures) with one
account of what changed across all failing renders: each effective-flag change and each
manifest path-level change (:mod:`rcpc.domain.delta`) once, with the renders it appears in, so one
edit that changes the same flag in 8 renders reads as one line.

The plugin is a shell over :mod:`rcpc.review.golden`, the code ``rcpc test`` runs (the same
compilation, golden reads and writes, obsolete goldens and summary), so both give the same
verdicts and write the same bytes; ``rcpc test`` does it without a pytest session.
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import pytest

from rcpc import GC_THRESHOLDS

# rcpc.domain.workspace.CONFIG_NAME, not imported from there: pytest imports this plugin in
# every session (each xdist worker too), most of which collect no rcp.toml, and that module's
# imports (the workspace, its records, diagnostics, stdlib) cost more than the rest of the plugin
CONFIG_NAME = "rcp.toml"

_CHANGED = pytest.StashKey[list]()    # (render name, golden text or None, render text, rcp.toml path)
_WRITTEN = pytest.StashKey[list]()    # (golden path, what was done) under --snapshot-update


def pytest_configure(config):
    config.stash[_CHANGED] = []
    config.stash[_WRITTEN] = []


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    """In a session that never imported hypothesis (the goldens alone: ``pytest rcp.toml``),
    unregister hypothesis's pytest plugin before the terminal summary: it has nothing to
    report there (its statistics and failing examples come from hypothesis tests, its
    observations from hypothesis itself), yet its ``pytest_terminal_summary`` imports all of
    hypothesis to find that out (``hypothesis.internal.observability``, ~0.7 s, more than
    the golden run itself; ``bench/editloop.py`` measures it). A session that ran a property
    test, or was given a hypothesis option, has imported hypothesis and keeps the plugin."""
    if "hypothesis" not in sys.modules:
        manager = session.config.pluginmanager
        plugin = manager.get_plugin("hypothesispytest")
        if plugin is not None:
            manager.unregister(plugin)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    """In a session whose items are all golden items (the goldens alone: ``pytest rcp.toml``),
    skip the full garbage collection pytest runs at its end to report exceptions raised in
    ``__del__`` of collected garbage (``_pytest.unraisableexception.cleanup``): no code of the
    user's runs there, and that collection traverses every object of the process, compiler
    included (~20% of ``pytest rcp.toml``'s CPU after an edit, ``bench/editloop.py``). The
    setting is the one pytest's own ``pytester`` sets for in-process runs
    (``gc_collect_iterations_key``); a pytest without it keeps its collection."""
    if session.items and all(isinstance(item, _Item) for item in session.items):
        try:
            from _pytest.unraisableexception import gc_collect_iterations_key
        except ImportError:  # another pytest: its own teardown
            return
        session.config.stash[gc_collect_iterations_key] = 0


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Before pytest's FAILURES section: what changed in the failing goldens; after the
    short summary: the golden files ``--snapshot-update`` wrote or deleted (names and paths
    with what is not printable escaped, :func:`rcpc.core.diagnostics.visible`)."""
    from rcpc.core.diagnostics import visible

    changed = config.stash.get(_CHANGED, [])
    if changed:
        from rcpc.review.golden import golden_summary

        terminalreporter.write_sep("=", f"rcpc: what changed in {len(changed)} golden render(s)")
        for line in golden_summary([c[:3] for c in changed], [c[3] for c in changed]):
            terminalreporter.write_line(visible(line))
    try:
        return (yield)
    finally:
        written = config.stash.get(_WRITTEN, [])
        if written:
            terminalreporter.write_sep("=", f"rcpc: --snapshot-update changed {len(written)} golden file(s)")
            for path, what in written:
                terminalreporter.write_line(visible(f"{what:<9} {path}"))


def pytest_collect_file(file_path: Path, parent):
    if file_path.name == CONFIG_NAME:
        return RecipeWorkspace.from_parent(parent, path=file_path)
    return None


def _update(config) -> bool:
    return bool(getattr(config.option, "update_snapshots", False))


def _golden_obj():  # gives syrupy's PyTestLocation a module and name for our items
    """Golden snapshot of one render."""


class GoldenFailure(Exception):
    """A golden test failed; ``lines`` is the report."""

    def __init__(self, lines: list[str]):
        super().__init__("\n".join(lines))
        self.lines = lines


class _Item(pytest.Item):
    def reportinfo(self):
        return self.path, None, self.name

    def repr_failure(self, excinfo, style=None):
        """A golden failure's report, what is not printable in its paths and lines escaped
        (:func:`rcpc.core.diagnostics.visible`): pytest prints it to the terminal."""
        if isinstance(excinfo.value, GoldenFailure):
            from rcpc.core.diagnostics import visible

            return "\n".join(visible(line, lines=True) for line in excinfo.value.lines)
        return super().repr_failure(excinfo, style)


class GoldenItem(_Item):
    """Compares one render's text with its golden file, byte for byte; the golden is read
    as ``rcpc test`` reads it (:func:`rcpc.review.golden.read_golden`: a symlink, a file too
    large or not UTF-8 fails with ``E1303``, and is not written)."""

    def __init__(self, *, golden_path: Path, golden_dir: Path, text: str, **kw):
        super().__init__(**kw)
        self.golden_path = golden_path
        self.golden_dir = golden_dir
        self.text = text
        self.obj = _golden_obj

    def runtest(self):
        session = getattr(self.config, "_syrupy", None)  # syrupy's plugin's session: none when it is not loaded
        try:
            if session is None:
                raise ImportError("syrupy's pytest plugin is not loaded")
            from syrupy.assertion import SnapshotAssertion
            from syrupy.location import PyTestLocation
        except ImportError:  # rcpc[golden] (and rcpc[test]) install syrupy
            raise GoldenFailure([NEEDS_SYRUPY]) from None
        from rcpc.review.golden import GoldenUnreadable, read_golden, render_diff, update_command
        from rcpc.testing.golden import GoldenExtension

        try:
            before = read_golden(self.golden_path, self.golden_dir)
        except GoldenUnreadable as exc:
            raise GoldenFailure([f"golden {os.path.relpath(exc.path)} is not read (error[E1303]): {exc.reason}"])
        options = {}
        if hasattr(self.config.option, "update_new_snapshots_only"):
            options["update_new_snapshots_only"] = self.config.option.update_new_snapshots_only
        if _update(self.config) and before != self.text and (  # what the update does, for the summary
                before is None or not options.get("update_new_snapshots_only")):
            self.config.stash[_WRITTEN].append((os.path.relpath(self.golden_path),
                                                "written" if before is None else "rewritten"))
        assertion = SnapshotAssertion(update_snapshots=_update(self.config), extension_class=GoldenExtension,
                                      test_location=PyTestLocation(self), session=session,
                                      **options)
        assertion.extension.known(self.golden_path, before)  # read once: syrupy's read is this one
        if not assertion == self.text:
            rel = os.path.relpath(self.golden_path)
            result = assertion.executions[0]
            if result.exception is not None:
                raise result.exception
            self.config.stash[_CHANGED].append((self.name, result.recalled_data, self.text, self.path))
            if result.recalled_data is None:
                raise GoldenFailure([f"golden {rel} is missing", f"run {update_command([self.path])} to write it"])
            lines = [f"golden {rel} differs from the render:"]
            lines += render_diff(self.name, result.recalled_data, self.text)
            lines.append(f"run {update_command([self.path])} to accept the new render")
            raise GoldenFailure(lines)


NEEDS_SYRUPY = ("golden tests under pytest need syrupy and its pytest plugin: pip install 'rcpc[golden]' (pytest "
                "and syrupy alone), and no -p no:syrupy; or run rcpc test, which needs neither")


class ContractItem(_Item):
    """A variant's diff contract (``against`` / ``changes``)."""

    def __init__(self, *, diagnostics: list, sources: dict, **kw):
        super().__init__(**kw)
        self.diagnostics = diagnostics
        self.sources = sources

    def runtest(self):
        from rcpc.core.diagnostics import format_text

        if self.diagnostics:
            raise GoldenFailure([format_text(d, self.sources) for d in self.diagnostics])


class RecipeErrorItem(ContractItem):
    """A recipe that does not compile."""


class OrphansItem(_Item):
    """Fails on golden files that no render produces (:func:`rcpc.review.golden.obsolete`);
    deletes them under --snapshot-update."""

    def __init__(self, *, golden_dir: Path, expected: set, unknown: list, **kw):
        super().__init__(**kw)
        self.golden_dir = golden_dir
        self.expected = expected
        self.unknown = unknown  # golden dirs of recipes that did not compile: left alone

    def runtest(self):
        from rcpc.review.golden import obsolete, remove_obsolete, update_command

        orphans = obsolete([self.golden_dir], self.expected, self.unknown)
        if not orphans:
            return
        if _update(self.config):
            remove_obsolete(orphans, self.golden_dir)
            self.config.stash[_WRITTEN].extend((os.path.relpath(p), "deleted") for p in orphans)
            return
        lines = ["golden files that no recipe, variant or render produces any more:"]
        lines += [f"  {os.path.relpath(p)}" for p in orphans]
        lines.append(f"run {update_command([self.path])} to delete them")
        raise GoldenFailure(lines)


class RecipeWorkspace(pytest.File):
    """The recipes of one workspace, as golden, contract and orphan test items, compiled as
    ``rcpc test`` compiles them (:func:`rcpc.review.golden.compile_goldens`: unchanged
    recipes from the build cache)."""

    def collect(self):
        """The items; while they are made (recipes compiled), the cyclic garbage collector
        runs as rarely as in ``rcpc`` itself (:data:`rcpc.GC_THRESHOLDS`: a compile
        allocates many small objects and leaves no cycles), its thresholds restored after."""

        previous = gc.get_threshold()
        gc.set_threshold(*GC_THRESHOLDS)
        try:
            yield from self._items()
        finally:
            gc.set_threshold(*previous)

    def _items(self):
        from rcpc.api import Workspace
        from rcpc.core.diagnostics import CompileError
        from rcpc.review.golden import compile_goldens

        try:
            workspace = Workspace(self.path.parent)  # the library API (docs/api.md)
            ws = workspace.config
            paths = ws.recipes()
        except CompileError as exc:
            yield RecipeErrorItem.from_parent(self, name=CONFIG_NAME, diagnostics=exc.diagnostics, sources={})
            return
        expected: set[Path] = set()
        unknown: list[Path] = []
        for compiled in compile_goldens(workspace, paths):
            name = compiled.name
            if compiled.errors:
                unknown.append(ws.golden_dir / name)
                yield RecipeErrorItem.from_parent(self, name=name, diagnostics=compiled.errors,
                                                  sources=compiled.sources)
                continue
            for variant, renders in compiled.builds:
                for render, text in renders:
                    golden = ws.golden_dir / name / variant / render
                    expected.add(golden)
                    yield GoldenItem.from_parent(self, name=f"{name}/{variant}/{render}", golden_path=golden,
                                                 golden_dir=ws.golden_dir, text=text)
            for variant, diags in compiled.contracts:
                yield ContractItem.from_parent(self, name=f"{name}/{variant}:contract",
                                               diagnostics=diags, sources=compiled.sources)
        yield OrphansItem.from_parent(self, name="orphans", golden_dir=ws.golden_dir,
                                      expected=expected, unknown=unknown)
