"""A variant's build redoes the default evaluation's statements that none of its overrides
reaches (rcpc.core.trace) rather than evaluating them: the result must be exactly that of
evaluating every statement (``Compiler.share_variants = False``, the oracle) — the renders of
every variant, the param values, the findings, the contracts' and the run's warnings, or the
errors — on the bundled recipes, on generated and mutated ones, and on witnesses of each way
a statement can depend on an override (a chain of names, a comprehension variable spelled like
a param, a failing statement and the ones using it, the comprehension budget crossed in a
replayed or in an evaluated statement, a render never declared)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from rcpc.core.diagnostics import CompileError
from rcpc.core.evaluate import Evaluator
from rcpc.domain.recipe import Compiler
from rcpc.domain.workspace import Workspace
from test_fuzz import BUNDLED_RECIPES, RECIPE_PATH, REPO, FuzzWorkspace, generated_inputs, mutated_inputs


def outcome(root: Path, target: str, share: bool):
    """What a build of ``target`` and its contracts give, with or without shared statements."""
    compiler = Compiler(Workspace.find(root))
    compiler.share_variants = share
    try:
        recipe, builds = compiler.build((root / target).resolve())
        contracts = compiler.check_contracts(recipe, builds)
    except CompileError as exc:
        return "error", exc.diagnostics
    # values compare by identity: their repr shows every field (value, span, provenance)
    return ("ok", [(b.variant, repr(b.params), [(r.name, r.text) for r in b.renders], b.problems) for b in builds],
            contracts, compiler.diagnostics(include_notes=True))


def same(root: Path, target: str):
    shared = outcome(root, target, True)
    assert shared == outcome(root, target, False)
    return shared


@pytest.mark.parametrize("target", BUNDLED_RECIPES)
def test_bundled_recipes_build_the_same(target):
    assert same(REPO, target)[0] == "ok"


def test_variants_of_the_rl_recipe_evaluate_fewer_statements(monkeypatch):
    """The sharing happens: its three overriding variants evaluate far fewer statements."""
    counted = []
    real = Evaluator._statement
    monkeypatch.setattr(Evaluator, "_statement", lambda self, *a: counted.append(1) or real(self, *a))
    runs = {}
    for share in (True, False):
        counted.clear()
        outcome(REPO, "recipes/rl/qwen35_397b_256_v7x.rcp", share)
        runs[share] = len(counted)
    assert runs[True] < 0.7 * runs[False], runs


def _ws(tmp_path: Path, text: str) -> FuzzWorkspace:
    ws = FuzzWorkspace(tmp_path / "ws")
    ws.write({RECIPE_PATH: text.encode()})
    return ws


HEAD = 'P = param(int, default = 2)\nQ = param(str, default = "q")\n'
WITNESSES = {
    "chain": HEAD + 'A = P * 2\nB = [A, Q]\nC = {"c": 5}\n'
             'manifest(name = "m", apiVersion = "v1", kind = "ConfigMap", metadata = {"name": "m"}, '
             'data = {"b": json(B), "c": json(C)})\n'
             'manifest(name = "n", apiVersion = "v1", kind = "ConfigMap", metadata = {"name": "n"}, data = {"c": "x"})\n'
             'variant("default")\nvariant("three", set = {"P": 3})\nvariant("r", set = {"Q": "r"})\n',
    "comprehension variable spelled like a param": HEAD + 'X = [P for P in range(3)]\n'
             'manifest(name = "m", apiVersion = "v1", kind = "ConfigMap", metadata = {"name": "m"}, data = {"x": json(X)})\n'
             'variant("default")\nvariant("seven", set = {"P": 7})\n',
    "failing statement and its users": HEAD + 'A = 10 // (P - 1)\nB = A + 1\nC = 1\n'
             'manifest(name = "m", apiVersion = "v1", kind = "ConfigMap", metadata = {"name": "m"}, data = {"b": f"{B}"})\n'
             'variant("default")\nvariant("one", set = {"P": 1})\n',
    # with a budget of BUDGET comprehension steps: 60 + 30 + 2 in the default, 60 + 30 + 20 in "big"
    "budget crossed in an evaluated statement": HEAD + 'B1 = len([i for i in range(60)])\n'
             'B2 = len([i for i in range(30)])\nMORE = len([i for i in range(P)])\n'
             'variant("default")\nvariant("big", set = {"P": 20})\n',
    "budget crossed in a replayed statement": HEAD + 'MORE = len([i for i in range(P)])\n'
             'B1 = len([i for i in range(60)])\nB2 = len([i for i in range(30)])\n'
             'variant("default")\nvariant("big", set = {"P": 20})\n',
    "render never declared": HEAD + 'X = manifest(name = "m", apiVersion = "v1", kind = "ConfigMap", '
             'metadata = {"name": "m"}, data = {"p": f"{P}"})\nY = X\n'
             'variant("default")\nvariant("five", set = {"P": 5})\n',
    "require of an override": HEAD + 'require(P < 4, "P is small")\nZ = 1\n'
             'variant("default")\nvariant("nine", set = {"P": 9})\n',
    "contract against a variant": HEAD + 'F = maxtext_flags({"steps": P, "run_name": Q}, schema = "//maxtext/base.yml")\n'
             'flag_file(name = "t", flags = F)\n'
             'variant("default")\nvariant("steps", set = {"P": 3}, against = "default", changes = {"t": ["steps"]})\n'
             'variant("both", set = {"P": 3, "Q": "b"}, against = "default", changes = {"t": ["steps"]})\n',
}


BUDGET = 100


@pytest.mark.parametrize("name", WITNESSES)
def test_witnesses_build_the_same(tmp_path, monkeypatch, name):
    from rcpc.core import evaluate, trace

    for module in (evaluate, trace):
        monkeypatch.setattr(module, "MAX_STEPS", BUDGET)
    ws = _ws(tmp_path, WITNESSES[name])
    got = same(ws.root, RECIPE_PATH)
    expected = {"failing statement and its users": "error", "budget crossed in an evaluated statement": "error",
                "budget crossed in a replayed statement": "error", "require of an override": "error"}
    assert got[0] == expected.get(name, "ok"), got
    if got[0] == "error" and "budget" in name:  # where the budget is crossed: MORE, or B2 (line 5 both)
        assert [(d.code, d.span.line) for d in got[1]] == [("E0804", 5)]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(files=generated_inputs())
def test_generated_recipes_build_the_same(tmp_path_factory, files):
    ws = FuzzWorkspace(tmp_path_factory.mktemp("gen"))
    ws.write(files)
    same(ws.root, RECIPE_PATH)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(case=mutated_inputs())
def test_mutated_recipes_build_the_same(tmp_path_factory, case):
    files, target = case
    ws = FuzzWorkspace(tmp_path_factory.mktemp("mut"))
    ws.write(files)
    same(ws.root, target)


# A trace's steps are made from marks when a variant asks (rcpc.core.trace.Trace.step): each
# must be the step taken as its statement ended (the eager recording this replaced, below).
def _eager_steps(monkeypatch) -> dict:
    """Record, for every run with ``record``, the Step of each statement as it ends: {id(evaluator): [Step]}."""
    from itertools import islice

    from rcpc.core import trace as T

    def added(container, since):
        n = len(container) - since
        if not n:
            return ()
        if type(container) is dict:
            return tuple(reversed(tuple(islice(reversed(container.items()), n))))
        return tuple(container[since:])

    def lengths(ev, result):
        ctx = ev.ctx
        return (len(ev.params), tuple(map(len, T._fields(result))), len(ctx.diagnostics), len(ctx.errors),
                len(ctx.collected), ctx.steps)

    runs: dict = {}
    real = Evaluator._statement

    def statement(ev, stmt, result):
        if not ev.record:
            return real(ev, stmt, result)
        params, fields, warned, reported, collected, steps = lengths(ev, result)
        real(ev, stmt, result)
        ctx = ev.ctx
        bound = ((stmt.name, ev.env[stmt.name]),) if type(stmt) is T.ast.Assign else ()
        runs.setdefault(id(ev), (ev, []))[1].append(T.Step(
            bound, added(ev.params, params), tuple(map(added, T._fields(result), fields)),
            added(ctx.diagnostics, warned), added(ctx.errors, reported), added(ctx.collected, collected),
            ctx.steps - steps))

    monkeypatch.setattr(Evaluator, "_statement", statement)
    return runs


def steps_alike(monkeypatch, root: Path, target: str) -> int:
    """Build ``target``: the trace's steps are those recorded as each statement ended; the
    number of statements compared."""
    runs = _eager_steps(monkeypatch)
    compiler = Compiler(Workspace.find(root))
    path = (root / target).resolve()
    try:
        compiler.build(path)
    except CompileError:
        pass
    trace = compiler._traces.get(path)
    monkeypatch.undo()
    if trace is None:  # the default evaluation failed: no trace
        return 0
    (eager,) = [steps for ev, steps in runs.values()]
    assert len(trace) == len(eager)
    for i, step in enumerate(eager):
        assert repr(trace.step(i)) == repr(step), (i, trace.module.stmts[i])
        assert trace.step(i) == step
    return len(eager)


@pytest.mark.parametrize("target", BUNDLED_RECIPES)
def test_bundled_recipes_trace_steps_as_taken(monkeypatch, target):
    assert steps_alike(monkeypatch, REPO, target) > 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(files=generated_inputs())
def test_generated_recipes_trace_steps_as_taken(tmp_path_factory, files):
    ws = FuzzWorkspace(tmp_path_factory.mktemp("steps"))
    ws.write(files)
    with pytest.MonkeyPatch.context() as mp:
        steps_alike(mp, ws.root, RECIPE_PATH)
