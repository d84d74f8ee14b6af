"""A recipe named on the command line (``rcpc build PATH``, ``check``, ``render``, the API's
``recipe_paths``) is one the whole workspace's build builds, or a usage error: never a ``.rcp``
file elsewhere in the workspace.

The reported fault (a new user, a kind of issue 12's "names that are paths"): with a stray
``demo.rcp`` at the workspace's top next to ``recipes/demo.rcp``, ``rcpc build demo.rcp``
compiled the stray file under the name ``demo`` and replaced ``rcpc-out/demo/`` (the real
recipe's variants gone); ``other/out.rcp`` built as ``other/out``, which the next whole build
removed as stale."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from rcpc.api import UsageError, Workspace
from rcpc.cli import main
from rcpc.core.diagnostics import CompileError

PLACES = ["recipes/demo.rcp", "recipes/sub/b.rcp", "recipes/lib/l.rcp", "demo.rcp", "other/out.rcp",
          "other/recipes/demo.rcp", "recipes2/demo.rcp", "recipes/sub/lib/c.rcp"]
LINKS = {"recipes/ln.rcp": "../other/out.rcp", "recipes/up.rcp": "../demo.rcp", "other/in.rcp": "../recipes/demo.rcp"}
RECIPE = 'flag_file(name = "{name}", flags = maxtext_flags({{"steps": 1}}))\nvariant("default")\n'


@settings(max_examples=40, deadline=None)
@given(st.sets(st.sampled_from(PLACES), min_size=1), st.sets(st.sampled_from(sorted(LINKS))))
@example({"recipes/demo.rcp", "demo.rcp"}, set())
@example({"recipes/demo.rcp", "other/out.rcp"}, {"recipes/ln.rcp"})
def test_a_named_recipe_is_one_the_whole_build_builds(tmp_path_factory, places, links):
    root = tmp_path_factory.mktemp("ws")
    (root / "rcp.toml").write_text("")
    for place in places:
        (root / place).parent.mkdir(parents=True, exist_ok=True)
        (root / place).write_text(RECIPE.format(name=Path(place).stem))
    for link in links:
        (root / link).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(LINKS[link], root / link)
    ws = Workspace(root)
    try:
        every = set(ws.recipe_paths([]))
    except UsageError:  # no recipe at all
        every = set()
    except CompileError:  # two recipes of one name (a link named by its target): not this test's
        assume(False)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        for place in sorted(places | links):
            for name in (place, place.removeprefix("recipes/").removesuffix(".rcp")):
                try:
                    got = ws.recipe_paths([name])
                except UsageError:
                    continue
                assert set(got) <= every, (name, got)
    finally:
        os.chdir(cwd)


def test_building_a_stray_file_is_a_usage_error_and_writes_nothing(tmp_path, monkeypatch, capsys):
    """The reported case through the CLI: exit 2, the message names the real recipe, the
    output as before."""
    (tmp_path / "rcp.toml").write_text("")
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "demo.rcp").write_text(RECIPE.format(name="trainer") + 'variant("tuned")\n')
    (tmp_path / "demo.rcp").write_text(RECIPE.format(name="evil"))
    monkeypatch.chdir(tmp_path)
    assert main(["build"]) == 0
    before = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "rcpc-out").rglob("*"))
    capsys.readouterr()
    for command in (["build", "demo.rcp"], ["check", "demo.rcp"], ["render", "demo.rcp"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "no recipe 'demo.rcp' in this workspace (did you mean 'demo'?)" in err
    assert sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "rcpc-out").rglob("*")) == before


NAMES = st.text("abcxyz_/", min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(candidates=st.lists(NAMES, max_size=6), word=NAMES)
@example(candidates=["rl/qwen35_397b_256_v7x", "tpu_recipes/llama3_1_70b"], word="rl/qwen35")  # the report
def test_a_suggestion_is_a_close_name_or_the_one_it_begins(candidates, word):
    """``did_you_mean`` names a candidate: difflib's closest, else the one candidate ``word``
    begins (a new user's ``rcpc build rl/qwen35`` got no suggestion), else none."""
    import difflib

    from rcpc.core.diagnostics import did_you_mean

    hint = did_you_mean(word, candidates)
    close = difflib.get_close_matches(word, candidates, n=1)
    begun = set(c for c in candidates if c.startswith(word))
    want = close[0] if close else next(iter(begun)) if len(begun) == 1 else None
    assert hint == (f"did you mean '{want}'?" if want is not None else None)


@pytest.mark.parametrize("name", ["dmeo", "recipes/dmeo.rcp"])
def test_a_misspelt_recipe_gets_a_did_you_mean(tmp_path, name):
    (tmp_path / "rcp.toml").write_text("")
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "demo.rcp").write_text(RECIPE.format(name="t"))
    with pytest.raises(UsageError, match="did you mean 'demo'"):
        Workspace(tmp_path).recipe_paths([name])


def test_a_misspelt_render_gets_a_did_you_mean(tmp_path, monkeypatch, capsys):
    """``rcpc render RECIPE trainr`` names the render meant (it listed every render only)."""
    (tmp_path / "rcp.toml").write_text("")
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "demo.rcp").write_text(
        'flag_file(name = "trainer", flags = maxtext_flags({"steps": 1}))\n'
        'manifest(name = "orchestrator", apiVersion = "v1", kind = "K")\n')
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["render", "demo", "trainr"]) == 2
    assert "has no render 'trainr' (did you mean 'trainer'?); renders: trainer.flags, orchestrator.yaml" in \
        capsys.readouterr().err


@pytest.mark.parametrize("given", ["recipes/sub", "recipes/sub/", "sub/a", "recipes/sub/b.rcp"])
def test_build_takes_what_check_and_test_take(tmp_path, monkeypatch, capsys, given):
    """``rcpc build DIR`` builds the recipes under DIR, as ``rcpc check`` and ``rcpc test``
    check them (it said "no recipe 'recipes/sub'"); names and .rcp paths as before."""
    (tmp_path / "rcp.toml").write_text("")
    for rel in ("recipes/top.rcp", "recipes/sub/a.rcp", "recipes/sub/b.rcp"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(RECIPE.format(name="t"))
    monkeypatch.chdir(tmp_path)
    assert main(["build", given, "-o", "out"]) == 0
    built = {r for r in ("top", "sub/a", "sub/b") if (tmp_path / "out" / r / "default" / "t.flags").is_file()}
    ws = Workspace(tmp_path)
    assert built == {ws.config.recipe_name(p) for p in ws._named([given], libraries=False)[0]}
    assert built == ({"sub/a"} if given == "sub/a" else {"sub/b"} if given.endswith(".rcp") else {"sub/a", "sub/b"})


@pytest.mark.parametrize("command", ["build", "check", "test"])
@pytest.mark.parametrize("where", ["output", "root with -o ."])
def test_a_recipe_name_names_its_recipe_whatever_paths_of_that_name_exist(tmp_path, monkeypatch, capsys,
                                                                         command, where):
    """The output directory holds a directory of each recipe's name: run there (or from the
    root after ``-o .``), ``rcpc build sub/a`` took ``sub/a`` for that directory ("no recipes
    under sub/a", exit 2) and ``rcpc check sub/a`` checked nothing and said ok."""
    (tmp_path / "rcp.toml").write_text("")
    (tmp_path / "recipes" / "sub").mkdir(parents=True)
    (tmp_path / "recipes" / "sub" / "a.rcp").write_text(RECIPE.format(name="t"))
    (tmp_path / "recipes" / "b.rcp").write_text(RECIPE.format(name="t"))
    monkeypatch.chdir(tmp_path)
    out = ["-o", "."] if where != "output" else []
    assert main(["build", *out]) == 0 and (tmp_path / ("sub" if out else "rcpc-out/sub") / "a").exists()
    if where == "output":
        monkeypatch.chdir(tmp_path / "rcpc-out")
    if command == "test":
        assert main(["test", "--snapshot-update"]) == 0
    capsys.readouterr()
    assert main([command, "sub/a", *(out if command == "build" else [])]) == 0
    err = capsys.readouterr().err
    assert {"build": "of 1 recipe(s)", "check": "checked 1 recipe(s), 1 variant(s)",
            "test": "tested 1 render(s)"}[command] in err, err
