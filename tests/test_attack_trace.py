"""Attacks on variant sharing (rcpc.core.trace): what a variant's replay must not change, and
what a run must not keep. Each test here compares ``Compiler.share_variants`` on and off
(tests/test_trace.py's ``same``), or checks a documented promise of the Compiler."""

from __future__ import annotations

import gc

import pytest

from rcpc.core.trace import Trace
from rcpc.domain.recipe import Compiler
from rcpc.domain.workspace import Workspace
from test_fuzz import RECIPE_PATH
from test_trace import _ws, same

HEAD = 'P = param(int, default = 2)\nQ = param(str, default = "q")\n'
CM = 'manifest(name = "{0}", apiVersion = "v1", kind = "ConfigMap", metadata = {{"name": "{0}"}}, data = {1})'
ATTACKS = {
    # a flag set built from a clean one in a statement that reads the override
    "flag set layered on a replayed one": HEAD
    + 'F = maxtext_flags({"steps": 5, "run_name": Q}, schema = "//maxtext/base.yml")\n'
      'G = F + maxtext_flags({"steps": P}) if P > 2 else F\nflag_file(name = "t", flags = G)\n'
      'variant("default")\nvariant("v", set = {"P": 5})\n'
      'variant("w", set = {"Q": "w"}, against = "default", changes = {"t": ["run_name"]})\n',
    # a flag MaxText refuses only in the variant (ctx.report in an evaluated statement)
    "error reported only in a variant": HEAD
    + 'F = maxtext_flags({"steps": P}, schema = "//maxtext/base.yml")\nflag_file(name = "t", flags = F)\n'
      'variant("default")\nvariant("v", set = {"P": -5})\n',
    # W0707 decided by which replayed render a param-dependent statement declares
    "declaration chosen by a param": HEAD
    + "X = " + CM.format("m", '{"a": "b"}') + "\nY = " + CM.format("n", '{"a": "b"}')
    + '\n[X] if P > 3 else [Y]\nvariant("default")\nvariant("v", set = {"P": 5})\n',
    # a replayed render and an evaluated one with the same name in the variant only (E0702)
    "render name clash in a variant only": HEAD + CM.format("m", '{"a": "b"}') + "\n"
    + 'manifest(name = Q, apiVersion = "v1", kind = "ConfigMap", metadata = {"name": "x"}, data = {})\n'
      'variant("default")\nvariant("v", set = {"Q": "m"})\n',
    # a variant value bound to a name and declared by name (not skipped as a call in a variant run)
    "variant bound to a name": HEAD + 'V = variant("v", set = {"P": 5})\nV\n'
    + CM.format("m", '{"p": f"{P}"}') + '\nvariant("default")\n',
}


@pytest.mark.parametrize("name", ATTACKS)
def test_attacks_build_the_same(tmp_path, name):
    same(_ws(tmp_path, ATTACKS[name]).root, RECIPE_PATH)


def test_release_drops_the_default_trace(tmp_path):
    """Compiler.release promises to drop the recipe's "source text, AST, default evaluation ...
    so memory stays flat over a large workspace" (rcpc.domain.recipe.Compiler.compile calls it after each
    recipe). The trace of the default evaluation (Compiler._traces) holds the AST and every
    value of that evaluation: a run over N recipes kept N traces (the 14 bundled recipes: 14
    traces, ~0.9 MB, after each was released)."""
    ws = _ws(tmp_path, ATTACKS["flag set layered on a replayed one"])
    compiler = Compiler(Workspace.find(ws.root))
    real = (ws.root / RECIPE_PATH).resolve()
    compiler.build(real)
    compiler.release(real)
    gc.collect()
    kept = [o for o in gc.get_objects() if type(o) is Trace and str(o.module.path).endswith("r.rcp")]
    assert kept == []
