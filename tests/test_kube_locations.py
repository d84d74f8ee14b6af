"""Where errors are reported (issue "Kubernetes fidelity", item 8): an error on a value made
in a library names the recipe and variants whose build failed, at the render's declaration in
the recipe, with the library line as ``value made here``, once per recipe; a name used but
missing from a ``load(...)`` list is reported at that load."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

LIB = 'ENV = [{"name": "X", "value": 0}]\nOTHER = 1\n'
RECIPE = '''load("//recipes/lib/l.rcp", "ENV")
N = param(int, default = 1)
[jobset(name = f"js{{i}}", metadata = {{"name": f"js{{i}}"}}, spec = {{"containers": [{{"name": "c", "image": "i", "env": ENV}}]}}) for i in range(N)]
{variants}
'''


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(recipes=st.integers(1, 3), variants=st.lists(st.integers(1, 3), min_size=1, max_size=3, unique=True))
@example(recipes=2, variants=[1, 2])
def test_library_value_errors_name_each_recipe_once(cli, ws, recipes, variants):
    for old in ws.root.glob("recipes/r*.rcp"):  # the same workspace serves every example
        old.unlink()
    ws.write("recipes/lib/l.rcp", LIB)
    decl = "\n".join(f'variant("v{n}", set = {{"N": {n}}})' for n in variants)
    for r in range(recipes):
        ws.write(f"recipes/r{r}.rcp", RECIPE.format(variants=decl))
    res = cli("check", "-j", "1")
    assert res.code == 1
    heads = [line for line in res.err.splitlines() if "error[" in line]
    assert [h.split(":")[0] for h in heads] == [f"recipes/r{r}.rcp" for r in range(recipes)]   # once per recipe
    assert all(h.startswith(f"recipes/r{r}.rcp:3:2: error[E1001]") for r, h in enumerate(heads))
    assert res.err.count("  value made here: recipes/lib/l.rcp:1:31") == recipes
    for r in range(recipes):
        for n in variants:
            renders = ", ".join(f"js{i}.yaml" for i in range(n))
            assert f"  note: in recipe r{r}, variant v{n}: {renders}" in res.err


def test_recipe_errors_name_the_variant_when_there_are_several(ws):
    f = ws.fails('N = param(str, default = "ok")\njobset(name = "js", metadata = {"name": N}, spec = {})\n'
                 'variant("default")\nvariant("bad", set = {"N": "Bad_Name"})\n')
    assert f.code == "E1002" and f.where == "recipes/r.rcp:4:28"
    assert f.diag.notes == ("in recipe r, variant bad: js.yaml",)


def test_unloaded_name_is_reported_at_the_load(cli, ws):
    ws.write("recipes/lib/l.rcp", LIB)
    ws.write("recipes/r.rcp", 'load("//recipes/lib/l.rcp", "ENV")\nX = ENV\nY = [OTHER, OTHER]\nZ = OTHRE\n'
             'variant("default")\n')
    res = cli("check", "-j", "1")
    heads = [line for line in res.err.splitlines() if "error[" in line]
    assert heads == [
        "recipes/r.rcp:4:5: error[E0101]: unknown name 'OTHRE'",
        "recipes/r.rcp:1:1: error[E0101]: 'OTHER' is used but not loaded: //recipes/lib/l.rcp exports it, "
        "and this load() does not name it"]
    assert res.err.count("used here: recipes/r.rcp:3:") == 2
    assert 'help: add "OTHER" to the names of this load()' in res.err
