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
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from pathlib import Path

import pytest

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


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Before pytest's FAILURES section: what changed in the failing goldens; after the
    short summary: the golden files ``--snapshot-update`` wrote or deleted."""
    changed = config.stash.get(_CHANGED, [])
    if changed:
        terminalreporter.write_sep("=", f"rcpc: what changed in {len(changed)} golden render(s)")
        for line in golden_summary([c[:3] for c in changed], [c[3] for c in changed]):
            terminalreporter.write_line(line)
    try:
        return (yield)
    finally:
        written = config.stash.get(_WRITTEN, [])
        if written:
            terminalreporter.write_sep("=", f"rcpc: --snapshot-update changed {len(written)} golden file(s)")
            for path, what in written:
                terminalreporter.write_line(f"{what:<9} {path}")


def _effective_tokens(text: str) -> dict:
    """key → last value text of a ``.flags`` render (one shell-quoted token a line). A text
    without quotes or backslashes splits at shell whitespace (space, tab, CR, LF: not
    ``str.split``'s wider set), as ``shlex.split`` would split it (POSIX mode, no comments),
    without its pure-Python tokenizer (a sixth of the summary of a flag edit)."""
    if any(c in text for c in "'\"\\"):
        import shlex

        tokens = shlex.split(text)
    else:
        tokens = [t for t in re.split(r"[ \t\r\n]+", text) if t]
    out: dict = {}
    for tok in tokens:
        key, _, value = tok.partition("=")
        out[key] = value
    return out


def _read_yaml(text: str):
    """One YAML document (a golden or a render) as data, read by libyaml where PyYAML has it
    (``CSafeLoader``: the pure-Python ``safe_load`` was a quarter of the golden run after an
    edit, ``bench/editloop.py``), weighed before it is built
    (:func:`rcpc.core.files.load_yaml_bounded`: a golden edited into an alias bomb is refused,
    ValueError). Raises ``yaml.YAMLError`` for text that does not read."""
    import yaml

    from rcpc.core.files import load_yaml_bounded, yaml_node_limit

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return load_yaml_bounded(text, loader, yaml_node_limit(len(text)), single=True)[0]


def _render_changes(name: str, old: str, new: str) -> list[str]:
    """What changed in one render, one line a change: a flag file's effective values, a
    manifest's paths (:func:`rcpc.domain.delta.data_delta` of both texts read as YAML)."""
    import yaml

    from rcpc.domain.delta import data_delta

    try:
        if name.endswith(".flags"):
            a, b = _effective_tokens(old), _effective_tokens(new)
            lines = [f"flag {k}: {a.get(k, '(unset)')} → {b.get(k, '(unset)')}"
                     for k in [*a, *(k for k in b if k not in a)] if a.get(k) != b.get(k)]
            return lines or ["flag tokens changed, no effective value"]
        if name.endswith(".yaml"):
            lines = [c.describe() for c in data_delta(_read_yaml(old), _read_yaml(new))]
            return lines or ["text changed, data the same"]
    except (ValueError, yaml.YAMLError):  # a golden edited by hand into something unreadable
        pass
    return ["text changed"]


def update_command(configs=()) -> str:
    """The command that rewrites the goldens of the workspaces ``configs`` (their rcp.toml
    paths) and runs nothing else: ``pytest rcp.toml --snapshot-update`` (about a second,
    where the whole suite would also run every other test)."""
    targets = " ".join(dict.fromkeys(os.path.relpath(c) for c in configs)) or "rcp.toml"
    return f"pytest {targets} --snapshot-update"


def golden_summary(changed: list, configs=()) -> list[str]:
    """The lines of the summary: each distinct change once (in order first seen), with the
    renders it is in; then the missing goldens, and the command that accepts them
    (:func:`update_command` of the workspaces' ``configs``)."""
    groups: dict[str, list[str]] = {}
    missing = []
    for name, old, new in changed:
        if old is None:
            missing.append(name)
            continue
        for line in dict.fromkeys(_render_changes(name, old, new)):
            groups.setdefault(line, []).append(name)
    out = []
    for line, names in groups.items():
        shown = ", ".join(names[:4]) + (f", … ({len(names)} renders)" if len(names) > 4 else "")
        out += [line, f"    in {shown}"]
    if missing:
        out.append(f"missing goldens: {', '.join(missing)}")
    out.append(f"run `{update_command(configs)}` to accept the new renders")
    return out


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
        if _update(self.config):  # what the update does to the golden, for the terminal summary
            before = GoldenExtension().read_snapshot_data_from_location(
                snapshot_location=str(self.golden_path), snapshot_name=self.name, session_id="")
            if before != self.text and (before is None or not options.get("update_new_snapshots_only")):
                self.config.stash[_WRITTEN].append((os.path.relpath(self.golden_path),
                                                    "written" if before is None else "rewritten"))
        assertion = SnapshotAssertion(update_snapshots=_update(self.config), extension_class=GoldenExtension,
                                      test_location=PyTestLocation(self), session=self.config._syrupy,
                                      **options)
        if not assertion == self.text:
            rel = os.path.relpath(self.golden_path)
            result = assertion.executions[0]
            if result.exception is not None:
                raise result.exception
            self.config.stash[_CHANGED].append((self.name, result.recalled_data, self.text, self.path))
            if result.recalled_data is None:
                raise GoldenFailure([f"golden {rel} is missing",
                                     f"run `{update_command([self.path])}` to write it"])
            diff = difflib.unified_diff(result.recalled_data.splitlines(True), self.text.splitlines(True),
                                        f"golden/{self.name}", f"render/{self.name}")
            lines = [f"golden {rel} differs from the render:"]
            lines += [_visible(line) for line in diff]
            lines.append(f"run `{update_command([self.path])}` to accept the new render")
            raise GoldenFailure(lines)


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
                self.config.stash[_WRITTEN].append((os.path.relpath(p), "deleted"))
            for d in sorted({p.parent for p in orphans}, key=lambda d: len(d.parts), reverse=True):
                while d != self.golden_dir and d.is_dir() and not any(d.iterdir()):
                    d.rmdir()
                    d = d.parent
            return
        lines = ["golden files that no recipe, variant or render produces any more:"]
        lines += [f"  {os.path.relpath(p)}" for p in orphans]
        lines.append(f"run `{update_command([self.path])}` to delete them")
        raise GoldenFailure(lines)


class RecipeWorkspace(pytest.File):
    """The recipes of one workspace, as golden, contract and orphan test items. A recipe
    whose inputs are unchanged since it was last built (by ``rcpc build``, ``rcpc check`` or
    this plugin) comes from the build cache (:mod:`rcpc.build.cache`: the renders of every variant
    and the contracts that held), compiled by nothing; the others are compiled, and stored
    there when every contract holds."""

    def collect(self):
        from rcpc.api import Workspace
        from rcpc.build.cache import request, store_built
        from rcpc.core.diagnostics import CompileError

        try:
            workspace = Workspace(self.path.parent)  # the library API (docs/api.md)
            ws = workspace.config
        except CompileError as exc:
            yield RecipeErrorItem.from_parent(self, name=CONFIG_NAME, diagnostics=exc.diagnostics, sources={})
            return
        cache, options = request(ws, None, None)
        expected: set[Path] = set()
        unknown: list[Path] = []
        for path in ws.recipes():
            name = ws.recipe_name(path)
            hit = cache.lookup(path, options, contracts=True)
            if hit is not None:
                built, _, _, held = hit
                contracts = [(variant, []) for variant in held]
                sources: dict = {}
            else:
                compiler = workspace.compiler
                seen = len(compiler.context.diagnostics)
                try:
                    recipe, builds = compiler.build(path)
                    contracts = self._contracts(recipe, builds)
                except CompileError as exc:
                    unknown.append(ws.golden_dir / name)
                    yield RecipeErrorItem.from_parent(self, name=name, diagnostics=exc.diagnostics,
                                                      sources=compiler.sources)
                    continue
                built = [(b.variant, [(r.name, r.text) for r in b.renders]) for b in builds]
                if not any(diags for _, diags in contracts):
                    store_built(cache, options, compiler, path, recipe, builds,
                                compiler.build_warnings(path, recipe, builds, seen))
                sources = compiler.sources
            for variant, renders in built:
                for render, text in renders:
                    golden = ws.golden_dir / name / variant / render
                    expected.add(golden)
                    yield GoldenItem.from_parent(self, name=f"{name}/{variant}/{render}",
                                                 golden_path=golden, text=text)
            for variant, diags in contracts:
                yield ContractItem.from_parent(self, name=f"{name}/{variant}:contract",
                                               diagnostics=diags, sources=sources)
        yield OrphansItem.from_parent(self, name="orphans", golden_dir=ws.golden_dir,
                                      expected=expected, unknown=unknown)

    @staticmethod
    def _contracts(recipe, builds: list) -> list:
        """[(variant, diagnostics)] of each variant of ``builds`` with a diff contract, in
        the recipe's order (:func:`rcpc.domain.contracts.check_contract`)."""
        from rcpc.domain.contracts import check_contract
        from rcpc.domain.recipe import contract_variants

        by_variant = {b.variant: b for b in builds}
        variants = {v.name: v for v in recipe.variants}
        return [(name, check_contract(variants[name], by_variant[variants[name].against], by_variant[name]))
                for name in contract_variants(recipe, builds)]
