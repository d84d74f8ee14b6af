"""Evaluation budgets are per evaluation of a file: a recipe's result (renders or E0804) is the
same built alone, in a workspace of other recipes, with ``-j 1`` and with ``-j N``. The
comprehension budget used to be one per process, so twelve recipes each well under it failed
together with ``-j 1`` and passed with ``-j 2`` or alone."""

from __future__ import annotations

import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import output_tree
from rcpc.build import parallel
from rcpc.core import evaluate
from rcpc.cli import main
from rcpc.build.parallel import MIN_PARALLEL

BUDGET = 40  # MAX_STEPS for these tests, so a recipe's steps stay small
LIB = "lib/l.rcp"


def recipe(steps: int) -> str:
    return (f'load("//{LIB}", "L")\n'
            f'F = maxtext_flags({{"steps": len([i for i in range({steps})]) + len(L)}})\n'
            'flag_file(name = "trainer", flags = F)\n')


def workspace(root, steps: list[int], lib_steps: int) -> None:
    (root / "recipes").mkdir(parents=True)
    (root / "lib").mkdir()
    (root / "rcp.toml").write_text('recipe_dirs = ["recipes"]\nlibrary_dirs = ["lib"]\n')
    (root / LIB).write_text(f"L = [i for i in range({lib_steps})]\n")
    for k, n in enumerate(steps):
        (root / "recipes" / f"r{k}.rcp").write_text(recipe(n))


def outcome(capsys, root, *argv) -> dict:
    """{recipe: renders or the error codes} of ``rcpc build argv`` in ``root``, one recipe at a
    time when a build fails (the first failing recipe stops a build)."""
    capsys.readouterr()
    code = main(["build", "-o", "out", *argv])
    _, err = capsys.readouterr()
    tree = output_tree(root / "out") if (root / "out").exists() else {}
    return {"code": code, "errors": sorted(set(w for w in err.split() if w.startswith("error["))), "tree": tree}


@pytest.fixture
def budget(monkeypatch):
    monkeypatch.setattr(evaluate, "MAX_STEPS", BUDGET)
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)  # -j 2 forks workers even for these
    monkeypatch.setenv("RCPC_NO_CACHE", "1")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.integers(0, BUDGET + 5), min_size=MIN_PARALLEL + 1, max_size=MIN_PARALLEL + 3),
       lib_steps=st.integers(0, BUDGET))
def test_a_recipe_builds_the_same_alone_in_a_workspace_and_with_workers(
        steps, lib_steps, tmp_path_factory, monkeypatch, capsys, budget):
    root = tmp_path_factory.mktemp("ws")
    workspace(root, steps, lib_steps)
    monkeypatch.chdir(root)
    every = {}
    for jobs in ("1", "2"):
        whole = outcome(capsys, root, "-j", jobs)
        if all(n <= BUDGET for n in steps):  # each recipe is within the budget on its own
            assert whole["code"] == 0, whole
            every[jobs] = whole["tree"]
        else:
            assert whole["code"] == 1 and whole["errors"] == ["error[E0804]:"], whole
        shutil.rmtree(root / "out", ignore_errors=True)
    if every:
        assert every["1"] == every["2"]
    for k, n in enumerate(steps):  # alone: the same as in the workspace
        alone = outcome(capsys, root, f"r{k}")
        if n <= BUDGET:
            assert alone["code"] == 0
            if every:
                assert {p: t for p, t in every["1"].items() if p.startswith(f"r{k}/")} == alone["tree"]
        else:
            assert alone["code"] == 1 and alone["errors"] == ["error[E0804]:"]
        shutil.rmtree(root / "out", ignore_errors=True)


def test_twelve_recipes_each_under_the_budget_build_together(tmp_path, monkeypatch, capsys, budget, build_calls):
    """The reported case: twelve recipes, each using most of the budget (and the library
    its own share), failed with -j 1 and passed with -j 2."""
    workspace(tmp_path, [BUDGET - 5] * 12, BUDGET - 1)
    monkeypatch.chdir(tmp_path)
    one = outcome(capsys, tmp_path, "-j", "1")
    assert one["code"] == 0 and len(one["tree"]) == 12
    shutil.rmtree(tmp_path / "out")
    assert outcome(capsys, tmp_path, "-j", "2")["tree"] == one["tree"]
    assert len(build_calls) == 12 + 1   # with -j 2, eleven were compiled in workers
