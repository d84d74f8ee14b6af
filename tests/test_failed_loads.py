"""A loaded file that fails is evaluated once per run (issue 41, "a diamond of failing loads
is quadratic"): `rcpc check` evaluated each failing library again for every recipe and every
library checked on its own (8,320 evaluations for a 64-level diamond of 128 files). Every
root (a recipe, a library checked on its own) still reports what it did: the same errors, and
the same warnings added to the run in the same order. The oracle is the old algorithm, which
evaluated a failing file again in each root (:class:`PerRoot`)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

from hypothesis import example, given, settings
from hypothesis import strategies as st

import rcpc.core.evaluate
from rcpc.core.diagnostics import CompileError, Diagnostic, unique
from rcpc.core.evaluate import Evaluator
from rcpc.domain import builtins as B
from rcpc.domain.recipe import Compiler, _loaded_from
from rcpc.domain.workspace import Workspace

from conftest import RCP_TOML, examples


class PerRoot(Compiler):
    """The compiler before the fix: a failure is kept only until the next root begins."""

    def library(self, real: Path, chain: tuple) -> dict:
        exports = self._exports.get(real)
        if exports is not None:
            return exports
        if not chain:
            self._failed = {}
        failed = self._failed.get(real)
        if failed is None:
            seen = len(self.context.diagnostics)
            try:
                mod = self.module(real, chain)
                result = Evaluator(self._loader(real, chain), None, is_recipe=False,
                                   ctx=self.context, universe=B.UNIVERSE).run(mod)
                if result.errors:
                    raise CompileError(result.errors)
            except CompileError as exc:
                failed = self._failed[real] = CompileError(unique(exc.diagnostics))
            else:
                exports = self._exports[real] = result.exports
                self._warnings[real] = self.context.diagnostics[seen:]
                return exports
        if not chain:
            raise failed
        raise _loaded_from(failed, chain[-1][1]) from None


KINDS = ("ok", "type", "name", "missing")  # succeeds; E0301 evaluating; E0101 resolving; E0201 loading


def lib_text(i: int, kind: str, warn: str, loads: list, cycles: list) -> str:
    """Library l{i}: loads l{j} for j in ``loads`` (later files) and ``cycles`` (earlier or
    itself: a load cycle); a W0330 warning before or after its loads (``warn``)."""
    warning = f'W = maxtext_flags({{"steps": {i}}}, {{"steps": {i}}})\n'
    lines = [warning] if warn == "before" else []
    lines += [f'load("//recipes/lib/l{j}.rcp", A{j} = "V")\n' for j in loads]
    lines += [f'load("//recipes/lib/l{j}.rcp", C{j} = "V")\n' for j in cycles]
    if kind == "missing":
        lines.append('load("//recipes/lib/none.rcp", M = "V")\n')
    lines += [warning] if warn == "after" else []
    total = " + ".join(["1", *(f"A{j}" for j in loads)])
    lines.append({"ok": f"V = {total}\n", "type": f'V = {total} + "x"\n', "name": f"V = {total} + Q\n",
                  "missing": f"V = {total}\n"}[kind])
    return "".join(lines)


@st.composite
def load_graphs(draw):
    """(libraries, recipes): each library (kind, warning, loads, cycle loads); each recipe
    the libraries it loads. Diamonds and chains come from the loads of later files."""
    n = draw(st.integers(1, 7))
    libs = []
    for i in range(n):
        later = list(range(i + 1, n))
        loads = draw(st.lists(st.sampled_from(later), unique=True, max_size=3)) if later else []
        cycles = draw(st.lists(st.integers(0, i), unique=True, max_size=1)) if draw(st.integers(0, 9)) == 0 else []
        libs.append((draw(st.sampled_from(KINDS)), draw(st.sampled_from(["none", "before", "after"])),
                     sorted(loads), cycles))
    recipes = draw(st.lists(st.lists(st.integers(0, n - 1), unique=True, min_size=1, max_size=3),
                            min_size=1, max_size=3))
    return libs, recipes


def write(root: Path, libs: list, recipes: list) -> tuple[list, list]:
    (root / "rcp.toml").write_text(RCP_TOML)
    (root / "recipes" / "lib").mkdir(parents=True)
    lib_paths = []
    for i, (kind, warn, loads, cycles) in enumerate(libs):
        p = root / "recipes" / "lib" / f"l{i}.rcp"
        p.write_text(lib_text(i, kind, warn, loads, cycles))
        lib_paths.append(p.resolve())
    recipe_paths = []
    for k, loads in enumerate(recipes):
        p = root / "recipes" / f"r{k}.rcp"
        p.write_text("".join(f'load("//recipes/lib/l{j}.rcp", R{j} = "V")\n' for j in loads)
                     + f'flag_file(name = "f", flags = maxtext_flags({{"v": {" + ".join(f"R{j}" for j in loads)}}}))\n')
        recipe_paths.append(p.resolve())
    return recipe_paths, lib_paths


def check_run(cls, root: Path, recipe_paths: list, lib_paths: list) -> tuple[list, list]:
    """What each root reports, in `rcpc check`'s order (each recipe, then each library on its
    own): its errors or warnings, and the warnings it added to the run; and the files
    evaluated (Evaluator.run), in order."""
    compiler = cls(Workspace.find(root))
    runs: list = []
    real_run = rcpc.core.evaluate.Evaluator.run

    def counting(self, module):
        runs.append(module.path)
        return real_run(self, module)

    out = []
    with mock.patch.object(rcpc.core.evaluate.Evaluator, "run", counting):
        for real in recipe_paths:
            seen = len(compiler.context.diagnostics)
            try:
                got = ("built", compiler.compile(real)[2])
            except CompileError as exc:
                got = ("failed", exc.diagnostics)
            out.append((real.name, got, compiler.context.diagnostics[seen:]))
        for real in lib_paths:
            seen = len(compiler.context.diagnostics)
            try:
                compiler.library(real, ())
                got = ("loaded", compiler.library_warnings(real))
            except CompileError as exc:
                got = ("failed", exc.diagnostics)
            out.append((real.name, got, compiler.context.diagnostics[seen:]))
    out.append(("run", compiler.diagnostics(include_notes=True)))
    return out, runs


DIAMOND = ([("ok", "none", [1, 2], []), ("ok", "after", [3], []), ("ok", "before", [3], []),
            ("type", "before", [], [])], [[0], [1, 2]])


# the minimal load cycle through files with an unknown name: resolving l0's name evaluated l1,
# whose name resolved l0 again, to Python's stack limit ("maximum recursion depth", E0801)
CYCLE_OF_UNKNOWN_NAMES = ([("name", "none", [1], []), ("name", "none", [], [0])], [[0]])


@settings(max_examples=examples(150, 60), deadline=None)
@given(load_graphs())
@example(graph=DIAMOND)
@example(graph=([("ok", "before", [1], []), ("type", "after", [2], []), ("name", "before", [], [])], [[0], [1]]))
@example(graph=([("ok", "none", [1], []), ("ok", "before", [], [0])], [[0], [1]]))  # a cycle
@example(graph=CYCLE_OF_UNKNOWN_NAMES)
def test_each_root_reports_what_it_did_when_each_root_evaluated_failures_again(graph):
    libs, recipes = graph
    with tempfile.TemporaryDirectory(prefix="rcpc-loads-") as tmp:
        root = Path(tmp)
        recipe_paths, lib_paths = write(root, libs, recipes)
        new, runs = check_run(Compiler, root, recipe_paths, lib_paths)
        old, old_runs = check_run(PerRoot, root, recipe_paths, lib_paths)
    assert new == old
    assert len(runs) <= len(old_runs)
    if not any(cycles for *_, cycles in libs):  # each library evaluated once in the run
        assert len(runs) == len(set(runs))


def diamond(root: Path, depth: int) -> None:
    """bench/limits.py's shape: two files a level, each loading both of the next; the bottom fails."""
    for i in range(depth):
        for s in "ab":
            body = ('V = 1 + "x"\n' if i == depth - 1 else
                    f'load("//recipes/lib/l{i + 1}a.rcp", A = "V")\nload("//recipes/lib/l{i + 1}b.rcp", B = "V")\n'
                    'V = A + B\n')
            (root / "recipes" / "lib" / f"l{i}{s}.rcp").write_text(body)


def test_rcpc_check_of_a_diamond_of_failing_libraries_evaluates_each_once(tmp_path):
    """The reported case: a 64-level diamond, every library checked on its own after the
    recipe (8,320 evaluations before, 129 now: 128 libraries and the recipe)."""
    (tmp_path / "rcp.toml").write_text(RCP_TOML)
    (tmp_path / "recipes" / "lib").mkdir(parents=True)
    diamond(tmp_path, 64)
    recipe = tmp_path / "recipes" / "r.rcp"
    recipe.write_text('load("//recipes/lib/l0a.rcp", "V")\nflag_file(name = "f", flags = maxtext_flags({"v": V}))\n')
    libs = sorted(p.resolve() for p in (tmp_path / "recipes" / "lib").iterdir())
    new, runs = check_run(Compiler, tmp_path, [recipe.resolve()], libs)
    assert len(runs) == len(set(runs)) == 129
    assert all(got[0] == "failed" for _, got, _ in new[:-1])


@st.composite
def cycles_through_unknown_names(draw):
    """A generated load graph with at least one load cycle and an unknown name in a file."""
    libs, recipes = draw(load_graphs())
    last = len(libs) - 1
    kind, warn, loads, _ = libs[last]
    libs[last] = (kind, warn, loads, [draw(st.integers(0, last))])  # the last file loads back: a cycle
    named = draw(st.integers(0, last))
    libs[named] = ("name", *libs[named][1:])
    return libs, recipes


def cycle_errors(out: list) -> list:
    """Each root's E0202 diagnostics (message, span, ``loaded from`` spans) as :func:`check_run` reports them."""
    return [(name, [d for d in got[1] if d.code == "E0202"] if got[0] == "failed" else [])
            for name, got, _ in out[:-1]]


@settings(max_examples=examples(100, 40), deadline=None)
@given(cycles_through_unknown_names())
@example(graph=CYCLE_OF_UNKNOWN_NAMES)
@example(graph=([("name", "none", [1, 2], []), ("ok", "none", [], []), ("ok", "none", [], [2])], [[0]]))  # reaches one
def test_a_load_cycle_through_an_unknown_name_reports_the_cycle_as_without_it(graph):
    """Every root reports the E0202 (same message, place and chain of loads) the same graph
    reports with each unknown name taken out, and the unknown names' E0101 with it; each file
    is evaluated a bounded number of times (it recursed to Python's stack limit)."""
    libs, recipes = graph
    known = [("ok" if kind == "name" else kind, *rest) for kind, *rest in libs]
    with tempfile.TemporaryDirectory(prefix="rcpc-loads-") as tmp, \
            tempfile.TemporaryDirectory(prefix="rcpc-loads-") as tmp2:
        out, runs = check_run(Compiler, Path(tmp), *write(Path(tmp), libs, recipes))
        without, _ = check_run(Compiler, Path(tmp2), *write(Path(tmp2), known, recipes))
    assert cycle_errors(out) == cycle_errors(without)
    for name, got, _ in out[:-1]:
        assert not any("recursion" in d.message or d.code == "E0801" for d in got[1] if type(d) is Diagnostic)
    for i, (kind, *_) in enumerate(libs):
        if kind == "name":  # checked on its own, it reports its unknown name
            got = dict((name, got) for name, got, _ in out[:-1])[f"l{i}.rcp"]
            assert ("E0101", f"recipes/lib/l{i}.rcp") in [(d.code, d.span.path) for d in got[1]]
    assert len(runs) <= len(libs) * (len(recipes) + len(libs)) * (len(libs) + 1)


def test_rcpc_check_of_a_load_cycle_through_unknown_names_is_a_diagnostic(tmp_path):
    """The reported case as a whole process: ``rcpc check`` reports the cycle (E0202, the
    chain of loads from the recipe, at l1's load) and both unknown names, exit 1, no
    traceback (before: E0101s only, after recursing to Python's stack limit)."""
    libs, recipes = CYCLE_OF_UNKNOWN_NAMES
    write(tmp_path, libs, recipes)
    env = {**os.environ, "RCPC_NO_CACHE": "1"}
    r = subprocess.run([sys.executable, "-m", "rcpc", "check"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr and "recursion" not in r.stderr, r.stderr
    heads = [line for line in r.stderr.splitlines() if ": error[" in line]
    assert "recipes/lib/l1.rcp:1:6: error[E0202]: load cycle: recipes/r0.rcp:1 -> recipes/lib/l0.rcp:1 -> " \
        "recipes/lib/l1.rcp:1 -> recipes/lib/l0.rcp" in heads
    assert "recipes/lib/l0.rcp:2:14: error[E0101]: unknown name 'Q'" in heads
    assert "recipes/lib/l1.rcp:2:9: error[E0101]: unknown name 'Q'" in heads
