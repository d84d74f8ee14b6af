"""Sweeps: ``variants(over = {...}, name = "...", set = {...}, against = ..., changes = {...})``
declares the product of ``over``'s lists as variants (docs/language.md, Sweeps): each point
named by the template, built, checked against its contract and kept as goldens like a
hand-written ``variant()``; names valid and distinct; the product's size checked before it
is expanded."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.core.diagnostics import CompileError
from rcpc.core.limits import MAX_SWEEP
from rcpc.domain.builtins import UNIVERSE
from rcpc.domain.lint import lint
from rcpc.domain.recipe import Compiler
from rcpc.domain.workspace import Workspace

PARAMS = ("BS", "SEQ", "LAYERS")
HEADER = "".join(f"{p} = param(int, default = 1)\n" for p in PARAMS) + \
    'F = maxtext_flags({"per_device_batch_size": BS, "max_target_length": SEQ, "base_num_decoder_layers": LAYERS})\n' \
    'flag_file(name = "trainer", flags = F)\nvariant("default")\n'


def _compile(root: Path, text: str, contracts: bool = False):
    (root / "recipes").mkdir(parents=True, exist_ok=True)
    (root / "rcp.toml").write_text("")
    (root / "recipes" / "r.rcp").write_text(text)
    compiler = Compiler(Workspace.find(root))
    recipe, builds = compiler.build((root / "recipes" / "r.rcp").resolve())
    if contracts:
        found = compiler.check_contracts(recipe, builds)
        if found:
            raise CompileError(found)
    return recipe, builds


def _fails(root: Path, text: str, contracts: bool = False):
    with pytest.raises(CompileError) as info:
        _compile(root, text, contracts)
    return info.value.diagnostics[0]


def _over(over: dict) -> str:
    return "{" + ", ".join(f'"{k}": {list(v)}' for k, v in over.items()) + "}"


_sweeps = st.dictionaries(st.sampled_from(PARAMS), st.lists(st.integers(2, 99), min_size=1, max_size=3, unique=True),
                          min_size=1, max_size=3)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(over=_sweeps, named=st.booleans())
@example(over={"BS": [2, 4], "SEQ": [8, 16]}, named=True)
def test_each_point_is_a_variant_named_by_the_template_with_its_values(tmp_path, over, named):
    """The product in itertools.product order, each point a variant setting its values,
    named by the template (default: the values joined by '-')."""
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    template = "_".join(f"{k.lower()}{{{k}}}" for k in over)
    call = f'variants(over = {_over(over)}' + (f', name = "{template}"' if named else "") + ")\n"
    recipe, builds = _compile(root, HEADER + call)
    points = [dict(zip(over, p)) for p in itertools.product(*over.values())]
    want = ["default"] + ["_".join(f"{k.lower()}{v}" for k, v in p.items()) if named else
                          "-".join(str(v) for v in p.values()) for p in points]
    assert [v.name for v in recipe.variants] == want
    by_name = {b.variant: b for b in builds}
    for name, point in zip(want[1:], points):
        flags = by_name[name].renders[0].text
        assert f"per_device_batch_size={point.get('BS', 1)}\n" in flags
        assert {k: by_name[name].params[k].value for k in point} == point


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(over=_sweeps, data=st.data())
def test_a_template_that_names_points_alike_is_refused(tmp_path, over, data):
    """Leaving out of the template a swept param with two or more values names two points
    alike: E0633, naming both points."""
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    shown = data.draw(st.lists(st.sampled_from(list(over)), unique=True))
    template = "x" + "-".join(f"{{{k}}}" for k in shown)
    call = f'variants(over = {_over(over)}, name = "{template}")\n'
    if all(len(over[k]) == 1 or k in shown for k in over):
        recipe, _ = _compile(root, HEADER + call)
        assert len({v.name for v in recipe.variants}) == len(recipe.variants)
    else:
        d = _fails(root, HEADER + call)
        assert d.code == "E0633" and d.span.line == HEADER.count("\n") + 1


def test_contracts_hold_per_point_and_a_point_may_leave_a_declared_flag_unchanged(tmp_path):
    """Each point is checked against its contract; a point equal to `against` in one swept
    param (BS = 1, the default) does not break it; a change not declared does, naming the point."""
    ok = HEADER + ('variants(over = {"BS": [1, 2], "SEQ": [8]}, name = "bs{BS}-seq{SEQ}", against = "default",\n'
                   '         changes = {"trainer": ["per_device_batch_size", "max_target_length"]})\n')
    recipe, builds = _compile(tmp_path / "a", ok, contracts=True)
    assert [b.variant for b in builds] == ["default", "bs1-seq8", "bs2-seq8"]
    baseline = HEADER + ('variants(over = {"BS": [1, 2]}, name = "bs{BS}", against = "default",\n'
                         '         changes = {"trainer": ["per_device_batch_size"]})\n')
    _compile(tmp_path / "c", baseline, contracts=True)
    assert lint(Compiler(Workspace.find(tmp_path / "c"))) == []  # bs1 renders what default does: no L0005
    broken = ok.replace('"per_device_batch_size", ', "")
    d = _fails(tmp_path / "b", broken, contracts=True)
    assert d.code == "E0610" and "bs2-seq8" in d.message


def test_limit_is_checked_before_the_product_is_expanded(tmp_path):
    """8e9 points would never finish expanding: E0636 comes from the sizes alone."""
    d = _fails(tmp_path, HEADER + 'variants(over = {"BS": range(2000), "SEQ": range(2000), "LAYERS": range(2000)})\n')
    assert d.code == "E0636" and f"{MAX_SWEEP:,}" in d.message
    side = int(MAX_SWEEP ** 0.5)
    recipe, _ = _compile(tmp_path / "ok", HEADER + f'variants(over = {{"BS": range(2, {side + 2})}}, name = "b{{BS}}")\n')
    assert len(recipe.variants) == side + 1


@pytest.mark.parametrize("call, code", [
    ('variants(over = {"BS": [2]}, name = "b{B}")', "E0634"),
    ('variants(over = {})', "E0635"),
    ('variants(over = {"BS": []})', "E0635"),
    ('variants(over = {"BS": [2]}, set = {"BS": 3})', "E0637"),
    ('variants(over = {"BZ": [2]})', "E0601"),
    ('variants(over = {"BS": ["2"]})', "E0602"),
    ('variants(over = {"BS": [[2]]})', "E0602"),
    ('variants(over = {"BS": [2]}, name = "custom")', "E0604"),
    ('variants(over = {"BS": [2]}, name = "a/{BS}")', "E0604"),
    ('variants(over = {"BS": [2]}, name = "default")', "E0603"),
    ('variants(over = {"BS": [2]}, changes = {"trainer": []})', "E0609"),
])
def test_errors(tmp_path, call, code):
    assert _fails(tmp_path, HEADER + call + "\n").code == code


def test_declared_once_as_a_variant_maker_and_skipped_in_variant_builds(tmp_path):
    """One Function declaration (lint, the language server and the grammars read it); in a
    library it is E0706 like variant(); assigned and never declared, W0707."""
    f = UNIVERSE.functions["variants"]
    assert f.makes == "variant" and "over" in f.keywords
    (tmp_path / "recipes/lib").mkdir(parents=True)
    (tmp_path / "recipes/lib/l.rcp").write_text('variants(over = {"BS": [2]})\n')
    d = _fails(tmp_path, 'load("//recipes/lib/l.rcp", "X")\n')
    assert d.code == "E0706"
    compiler = Compiler(Workspace.find(tmp_path))
    (tmp_path / "recipes/r.rcp").write_text(HEADER + 'S = variants(over = {"BS": [2]})\n')
    compiler.build((tmp_path / "recipes/r.rcp").resolve())
    assert [d.code for d in compiler.diagnostics()] == ["W0707"]
