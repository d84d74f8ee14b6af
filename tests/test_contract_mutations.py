"""The RL recipe's `tuned` contract holds inside every render (issue: contracts at the level
of data). A property over the real ``recipes/rl/qwen35_397b_256_v7x.rcp``: make the tuned
variant (and only it) also change any one leaf of any manifest (an env value, an image, a
label, a count, a key added or removed, a list or map reordered) by a recipe edit that
applies only when ``TRAINER_TUNED_FLAGS`` is true; ``rcpc check``, ``rcpc build`` and the
pytest plugin's contract item must all fail, naming the data path of the change and the
recipe line that made it.

The edit binds the render's ``metadata`` or ``spec`` argument to ``RCPC_TEST_BASE``, builds
``RCPC_TEST_MUT`` from it on one line (a nested ``+`` / comprehension that rebuilds the path
down to the leaf), and passes ``RCPC_TEST_MUT if TRAINER_TUNED_FLAGS else RCPC_TEST_BASE``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from rcpc.cli import main
from rcpc.domain.delta import Index, Key, Named, deep_key, format_path, names
from rcpc.domain.recipe import Compiler
from rcpc.core.source import Source
from rcpc.core.syntax import ast
from rcpc.core.syntax.parser import parse
from rcpc.core.values import Bool, Dict, Float, Int, List, Null, Str
from rcpc.domain.workspace import Workspace

pytest_plugins = ["pytester"]
# each in-process pytest run leaves out jaxtyping's plugin (pyproject.toml's addopts do not reach
# it): its numpy import, undone after the run with the modules it added, cannot be done twice
QUIET = ("-p", "no:cacheprovider", "-p", "no:jaxtyping")

REPO = Path(__file__).resolve().parents[1]
RECIPE = "recipes/rl/qwen35_397b_256_v7x.rcp"
TEXT = (REPO / RECIPE).read_text(encoding="utf-8")
DECLARED = "custom_mesh_and_rule"


@attrs.frozen
class Target:
    """A ``jobset(...)`` argument of the recipe: its render, the argument, where its text is."""

    render: str
    kwarg: str
    start: int     # offset of the argument's expression
    end: int
    stmt_line: int  # line of the statement holding the call


def _offset(src: Source, line: int, col: int) -> int:
    return sum(len(x) + 1 for x in src.text.split("\n")[:line - 1]) + col - 1


def _targets() -> list[Target]:
    src = Source(RECIPE, TEXT)
    out = []
    for stmt in parse(src).stmts:
        if type(stmt) is not ast.ExprStmt:
            continue
        call, render = stmt.expr, None
        if type(call) is ast.Comprehension:  # the rollouts: one spec for all
            call, render = call.elt, "rollout-0"
        if type(call) is not ast.Call or type(call.func) is not ast.Name or call.func.id != "jobset":
            continue
        kwargs = {k.name: k.value for k in call.kwargs}
        render = render or kwargs["name"].value
        for name in ("metadata", "spec") if render != "rollout-0" else ("spec",):
            v = kwargs[name].span
            out.append(Target(f"{render}.yaml", name, _offset(src, v.line, v.col),
                              _offset(src, v.end_line, v.end_col), stmt.span.line))
    return out


TARGETS = _targets()


class _Data(dict):
    """The tuned variant's manifest data by render, compiled when first read."""

    def __missing__(self, render):
        ws = Workspace.find(REPO)
        _, (build,) = Compiler(ws).build(ws.root / RECIPE, "tuned")
        self.update((r.name, r.value.data) for r in build.renders if r.name.endswith(".yaml"))
        return dict.__getitem__(self, render)


DATA = _Data()


@attrs.frozen
class Mutation:
    """``op`` at the node reached by ``steps`` (dict keys and list indices) from a target's
    value; ``arg`` is the op's key or index."""

    target: int
    steps: tuple
    op: str
    arg: object = None


def _node(m: Mutation):
    t = TARGETS[m.target]
    node = DATA[t.render].items[t.kwarg]
    for s in m.steps:
        node = node.items[s]
    return node


def _ops(node) -> list[tuple[str, object]]:
    t = type(node)
    if t is Dict:
        keys = list(node.items)
        return ([("add_key", None)] + [("remove_key", k) for k in keys]
                + ([("reorder_keys", None)] if len(keys) > 1 else []))
    if t is List:
        return ([("add_item", None)] + [("remove_item", j) for j in range(len(node.items))]
                + ([("reorder_items", None)] if len(node.items) > 1 else []))
    return [("change", None)]


@st.composite
def mutations(draw) -> Mutation:
    target = draw(st.integers(0, len(TARGETS) - 1))
    t = TARGETS[target]
    node, steps = DATA[t.render].items[t.kwarg], []
    while type(node) in (Dict, List) and node.items and draw(st.integers(0, 9)) < 8:
        step = draw(st.sampled_from(list(node.items) if type(node) is Dict else range(len(node.items))))
        steps.append(step)
        node = node.items[step]
    op, arg = draw(st.sampled_from(_ops(node)))
    return Mutation(target, tuple(steps), op, arg)


def _q(key: str) -> str:
    return json.dumps(key)


def _op_text(b: str, node, m: Mutation) -> str:
    """The expression that applies ``m.op`` to the value of expression ``b``."""
    t = type(node)
    if m.op == "change":
        return {Str: f'({b} + "x")', Int: f"({b} + 1)", Bool: f"(not {b})",
                Float: f"(1.25 if {b} != 1.25 else 2.5)", Null: '"x"'}[t]
    if m.op == "add_key":
        return f'({b} + {{"rcpc-test-added": "x"}})'
    if m.op == "remove_key":
        return f"{{rcpc_k: {b}[rcpc_k] for rcpc_k in {b} if rcpc_k != {_q(m.arg)}}}"
    if m.op == "reorder_keys":
        return f"{{rcpc_k: {b}[rcpc_k] for rcpc_k in {json.dumps(list(reversed(node.items)))}}}"
    if m.op == "remove_item":
        return f"[{b}[rcpc_j] for rcpc_j in range(len({b})) if rcpc_j != {m.arg}]"
    if m.op == "reorder_items":
        return f"[{b}[rcpc_j] for rcpc_j in {list(reversed(range(len(node.items))))}]"
    return f"({b} + [{_new_item(node)}])"


def _new_item(node) -> str:
    kinds = {type(x) for x in node.items}
    return '{"name": "rcpc-test"}' if kinds == {Dict} else "7" if kinds == {Int} else '"rcpc-test"'


def _mutated(m: Mutation) -> tuple[str, int]:
    """The edited recipe text and the line of ``RCPC_TEST_MUT``."""
    t = TARGETS[m.target]

    def build(b: str, node, steps: tuple, depth: int) -> str:
        if not steps:
            return _op_text(b, node, m)
        s, rest = steps[0], steps[1:]
        if type(node) is Dict:
            return f"({b} + {{{_q(s)}: {build(f'{b}[{_q(s)}]', node.items[s], rest, depth + 1)}}})"
        i = f"rcpc_i{depth}"
        inner = build(f"{b}[{s}]", node.items[s], rest, depth + 1)
        return f"[({inner} if {i} == {s} else {b}[{i}]) for {i} in range(len({b}))]"

    base = TEXT[t.start:t.end]
    mut = build("RCPC_TEST_BASE", DATA[t.render].items[t.kwarg], m.steps, 0)
    line_start = sum(len(x) + 1 for x in TEXT.split("\n")[:t.stmt_line - 1])
    text = (TEXT[:line_start] + f"RCPC_TEST_BASE = {base}\nRCPC_TEST_MUT = {mut}\n" + TEXT[line_start:t.start]
            + "(RCPC_TEST_MUT if TRAINER_TUNED_FLAGS else RCPC_TEST_BASE)" + TEXT[t.end:])
    return text, t.stmt_line + base.count("\n") + 1


def _expected_path(m: Mutation) -> str:
    """Where the contract must report the change, as ``rcpc diff`` spells paths."""
    t = TARGETS[m.target]
    node, path = DATA[t.render].items[t.kwarg], [Key(t.kwarg)]
    parents = []
    for s in m.steps:
        parents.append((node, path[:]))
        if type(node) is Dict:
            path.append(Key(s))
        else:
            n = names(node)
            path.append(Named(n[s]) if n is not None else Index(s))
        node = node.items[s]
    if m.op == "change" and m.steps and m.steps[-1] == "name" and parents and len(parents) > 1:
        lst, lst_path = parents[-2]
        if type(lst) is List and names(lst) is not None:  # a renamed item is a new item
            return format_path(tuple(lst_path) + (Named(node.value + "x"),))
    if m.op == "add_key":
        path.append(Key("rcpc-test-added"))
    elif m.op == "remove_key":
        path.append(Key(m.arg))
    elif m.op == "remove_item":
        n = names(node)
        path.append(Named(n[m.arg]) if n is not None else Index(m.arg))
    elif m.op == "add_item":
        n = names(node)
        path.append(Named("rcpc-test") if n is not None else Index(len(node.items)))
    return format_path(tuple(path))


def _meaningful(m: Mutation) -> bool:
    """Mutations that change the tuned render and are not the declared flag's own tokens."""
    node = _node(m)
    if m.op == "remove_item":
        item = node.items[m.arg]
        if type(item) is Str and item.value.startswith(DECLARED + "="):
            return False  # removing a token of the declared key is what the contract allows
        keys = [deep_key(x) for x in node.items]
        return keys.count(keys[m.arg]) == 1  # else which of the equal items went is ambiguous
    if m.op == "remove_key" and m.arg == "name":
        return False  # an item of a named list becomes anonymous: reported at the list instead
    if m.op == "reorder_items":
        keys = [deep_key(x) for x in node.items if not (type(x) is Str and x.value.startswith(DECLARED + "="))]
        return keys != keys[::-1]
    return True


def _examples():
    """One mutation of each kind the issue names, on the renders it names."""
    def find(render, kwarg, *steps):
        t = next(i for i, x in enumerate(TARGETS) if x.render == render and x.kwarg == kwarg)
        node = DATA[render].items[kwarg]
        out = []
        for s in steps:
            if type(node) is List and type(s) is str:
                s = names(node).index(s)
            out.append(s)
            node = node.items[s]
        return t, tuple(out)

    main_env = ("replicatedJobs", "proc", "template", "spec", "template", "spec", "containers", "main", "env")
    t, env = find("trainer.yaml", "spec", *main_env, "ENABLE_MULTI_NUMA", "value")
    yield Mutation(t, env, "change")                                   # env value "0" -> "0x"
    t, image = find("orchestrator.yaml", "spec", "replicatedJobs", "proc", "template", "spec", "template", "spec",
                    "containers", "main", "image")
    yield Mutation(t, image, "change")                                 # image
    t, label = find("trainer.yaml", "metadata", "labels", "kueue.x-k8s.io/queue-name")
    yield Mutation(t, label, "change")                                 # label
    t, count = find("trainer.yaml", "spec", "replicatedJobs", "pw-node", "replicas")
    yield Mutation(t, count, "change")                                 # replica count
    t, policy = find("rollout-0.yaml", "spec", "failurePolicy")
    yield Mutation(t, policy, "add_key")                               # added key
    t, spec = find("orchestrator.yaml", "spec")
    yield Mutation(t, spec, "remove_key", "network")                   # removed key
    t, containers = find("trainer.yaml", "spec", "replicatedJobs", "proc", "template", "spec", "template", "spec",
                         "containers")
    yield Mutation(t, containers, "reorder_items")                     # reordered list


def _copy_workspace(root: Path) -> None:
    for sub in ("recipes/rl",):   # it loads @rcpc//rl_pathways.rcp, the package's
        shutil.copytree(REPO / sub, root / sub, dirs_exist_ok=True)
    (root / "rcp.toml").write_text('recipe_dirs = ["recipes"]\nlibrary_dirs = ["recipes/lib"]\n')


def _run(capsys, *argv) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(argv))
    return code, capsys.readouterr().err


def _with_examples(f):
    for m in _examples():
        f = example(m=m)(f)
    return f


@settings(max_examples=12, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much,
                                 HealthCheck.too_slow])
@given(m=mutations())
@_with_examples
def test_any_manifest_leaf_changed_by_tuned_breaks_the_contract(m, pytester, capsys, monkeypatch):
    assume(_meaningful(m))
    root = pytester.path
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    _copy_workspace(root)
    text, line = _mutated(m)
    (root / RECIPE).write_text(text, encoding="utf-8")
    path = _expected_path(m)
    where = f"{RECIPE}:{line}:"
    code, err = _run(capsys, "check")
    assume("E0610" in err or code == 0)  # a Kubernetes rule may reject the edit first (E1005, E1007)
    assert code == 1, err
    assert f"at {path}" in err and "error[E0612]" in err, (path, err)
    assert f"made here: {where}" in err, (where, err)
    code, err = _run(capsys, "build")
    assert code == 1 and f"at {path}" in err and f"made here: {where}" in err, err
    assert not (root / "rcpc-out").exists()
    result = pytester.runpytest_inprocess(*QUIET, "rcp.toml", "-k", "contract")
    out = result.stdout.str()
    assert result.ret == 1 and "qwen35_397b_256_v7x/tuned:contract" in out, out
    assert f"at {path}" in out and f"made here: {where}" in out, (path, where, out)


def test_the_unedited_recipe_keeps_its_contract(pytester, capsys, monkeypatch):
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    _copy_workspace(pytester.path)
    assert _run(capsys, "check")[0] == 0
    result = pytester.runpytest_inprocess(*QUIET, "rcp.toml", "-k", "contract")
    result.assert_outcomes(passed=2)
