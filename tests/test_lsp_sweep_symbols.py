"""The outline (document symbols) lists a sweep's points (issue 39): `variants(over = {...})`
is a "sweep" symbol whose children are the variants it makes, by the names the recipe's
evaluation gives them, in order, each with the call's range."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

pytest.importorskip("pygls")
from lsprotocol import types as T  # noqa: E402

from rcpc.domain.workspace import Workspace  # noqa: E402
from rcpc.lsp import query  # noqa: E402
from rcpc.lsp.session import Session  # noqa: E402

from conftest import RCP_TOML, examples  # noqa: E402
from test_lsp import run  # noqa: E402

PARAMS = {"BS": ("int", st.integers(1, 512).map(str)), "REMAT": ("str", st.sampled_from(['"full"', '"minimal"', '"x"'])),
          "LR": ("float", st.sampled_from(["0.1", "0.01", "1.5"]))}


def recipe(over: dict, template: str | None, assigned: bool) -> str:
    lines = [f"{name} = param({PARAMS[name][0]}, default = {values[0]})\n" for name, values in over.items()]
    lines.append('flag_file(name = "f", flags = maxtext_flags({"steps": 1}))\n')
    call = ("variants(over = {" + ", ".join(f'"{k}": [{", ".join(v)}]' for k, v in over.items()) + "}"
            + (f', name = "{template}"' if template is not None else "") + ")")
    lines += [f"SWEEP = {call}\n", "SWEEP\n"] if assigned else [call + "\n"]
    return 'variant("default")\n' + "".join(lines)


def outline(root: Path, text: str) -> tuple[list, list]:
    """(the sweep symbols of the recipe's outline, its declared variants)."""
    real = (root / "recipes" / "r.rcp").resolve()
    real.write_text(text)
    session = Session(Workspace.find(root))
    found = query.symbols(session.module(real), session.sweep_points(real))
    sweeps = [s for s in found if s.kind == "sweep"] + [c for s in found for c in s.children if c.kind == "sweep"]
    return sweeps, list(session.compiler().recipe(real)[0].variants)


@st.composite
def sweeps(draw):
    names = draw(st.lists(st.sampled_from(sorted(PARAMS)), min_size=1, max_size=3, unique=True))
    over = {n: draw(st.lists(PARAMS[n][1], min_size=1, max_size=3, unique=True)) for n in names}
    template = draw(st.sampled_from([None, "-".join(f"{n.lower()}{{{n}}}" for n in names)]))
    return over, template, draw(st.booleans())


@settings(max_examples=examples(40, 15), deadline=None)
@given(sweeps())
@example(({"BS": ["2", "4"], "REMAT": ['"full"', '"minimal"']}, "bs{BS}-{REMAT}", False))  # issue 39's sweep
def test_each_point_of_a_sweep_is_a_child_symbol_with_the_calls_range(sweep):
    over, template, assigned = sweep
    with tempfile.TemporaryDirectory(prefix="rcpc-sweep-") as tmp:
        root = Path(tmp)
        (root / "recipes").mkdir()
        (root / "rcp.toml").write_text(RCP_TOML)
        text = recipe(over, template, assigned)
        (sweep_symbol,), declared = outline(root, text)
    points = [v for v in declared if v.sweep]
    assert [c.name for c in sweep_symbol.children] == [v.name for v in points]
    assert all(c.kind == "variant" and c.span == sweep_symbol.span == points[0].span for c in sweep_symbol.children)
    assert sweep_symbol.span.col == text.splitlines()[sweep_symbol.span.line - 1].index("variants(") + 1
    assert sweep_symbol.name == (template or "variants")


def test_a_sweep_that_does_not_evaluate_is_listed_without_points(tmp_path):
    """A recipe with an error: the sweep is in the outline (from the text), its points are not."""
    (tmp_path / "recipes").mkdir()
    (tmp_path / "rcp.toml").write_text(RCP_TOML)
    real = (tmp_path / "recipes" / "r.rcp").resolve()
    real.write_text('variant("default")\nvariants(over = {"BS": [1, 2]})\nX = 1 + "x"\n')
    session = Session(Workspace.find(tmp_path))
    assert session.sweep_points(real) == {}
    (sweep,) = [s for s in query.symbols(session.module(real), session.sweep_points(real)) if s.kind == "sweep"]
    assert sweep.name == "variants" and sweep.children == ()


def test_the_server_sends_the_points_as_children(tmp_path):
    (tmp_path / "recipes").mkdir()
    (tmp_path / "rcp.toml").write_text(RCP_TOML)
    path = tmp_path / "recipes" / "r.rcp"
    path.write_text(recipe({"BS": ["2", "4"], "REMAT": ['"full"', '"minimal"']}, "bs{BS}-{REMAT}", False))

    async def scenario(ed):
        uri = ed.open(path)
        symbols = await ed.client.text_document_document_symbol_async(T.DocumentSymbolParams(text_document=ed.doc(uri)))
        (sweep,) = [s for s in symbols if s.detail == "sweep"]
        assert [(c.name, c.detail) for c in sweep.children] == [
            ("bs2-full", "variant"), ("bs2-minimal", "variant"), ("bs4-full", "variant"), ("bs4-minimal", "variant")]
        assert all(c.range == sweep.range for c in sweep.children)

    run(tmp_path, scenario)
