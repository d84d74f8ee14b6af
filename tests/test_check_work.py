"""``rcpc check`` does one build per recipe (every variant once) plus cheap extras: lint reads
the builds the check made, and a recipe's ``variant(...)`` declarations are evaluated once,
not once per variant (a recipe of V variants cost V² declarations)."""

from __future__ import annotations

from rcpc.core import record
import pytest

from rcpc.domain.builtins import UNIVERSE
from rcpc.cli import main
from rcpc.domain.recipe import Compiler

RECIPE = '''N = param(int, default = 0)
UNUSED = 1
F = maxtext_flags({{"steps": N}})
flag_file(name = "trainer", flags = F)
variant("default")
{variants}'''


def recipe(v: int) -> str:
    return RECIPE.format(variants="".join(
        f'variant("v{i}", set = {{"N": {i}}}, against = "default", changes = {{"trainer.flags": ["steps"]}})\n'
        for i in range(1, v)))


@pytest.fixture
def counts(tmp_path, monkeypatch):
    """{"build": Compiler.build calls, "variant": variant() calls} made in this process."""
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    seen = {"build": 0, "variant": 0}
    real_build, real_variant = Compiler.build, UNIVERSE.functions["variant"]

    def build(self, *a, **k):
        seen["build"] += 1
        return real_build(self, *a, **k)

    def variant(*a, **k):
        seen["variant"] += 1
        return real_variant.call(*a, **k)

    monkeypatch.setattr(Compiler, "build", build)
    monkeypatch.setitem(UNIVERSE.functions, "variant", record.evolve(real_variant, call=variant))
    (tmp_path / "recipes").mkdir()
    (tmp_path / "rcp.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    return tmp_path, seen


@pytest.mark.parametrize("v", [1, 3, 12])
def test_check_builds_each_recipe_once_and_declares_each_variant_once(counts, capsys, v):
    root, seen = counts
    (root / "recipes" / "r.rcp").write_text(recipe(v))
    assert main(["check", "-j", "1"]) == 0
    err = capsys.readouterr().err
    assert "L0001" in err   # lint ran, on the check's own build
    assert f"{v} variant(s)" in err
    assert seen == {"build": 1, "variant": v}
    seen.update(build=0, variant=0)
    assert main(["build", "-j", "1", "-o", "out"]) == 0
    assert seen == {"build": 1, "variant": v}
    assert sorted(p.name for p in (root / "out" / "r").iterdir()) == sorted(
        ["default", *(f"v{i}" for i in range(1, v))])
