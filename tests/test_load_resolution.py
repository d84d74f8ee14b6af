"""A compiler resolves each load path once a run for each directory of a loading file
(``Compiler.resolve_load``, what the workspace's ``resolve_load`` depends on): recipes of many
directories built by one compiler, in any order, load exactly what each loads when it is the
only recipe its compiler builds, errors included (at each load's own place)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rcpc.core.diagnostics import CompileError
from rcpc.core.syntax import ast
from rcpc.domain.recipe import Compiler
from rcpc.domain.workspace import Workspace

from conftest import examples

TOML = 'recipe_dirs = ["recipes"]\nlibrary_dirs = ["recipes/lib"]\n'
LIBRARIES = ("recipes/lib/v.rcp", "recipes/lib/a/v.rcp", "recipes/lib/b/v.rcp", "recipes/a/k.rcp", "recipes/b/k.rcp",
             "recipes/a/x/k.rcp")
DIRECTORIES = ("recipes/a", "recipes/b", "recipes/a/x", "recipes/b/x")
# relative ones name another file (or none) from each directory
TARGETS = ("k.rcp", "x/k.rcp", "../lib/v.rcp", "../lib/a/v.rcp", "../../lib/b/v.rcp", "../lib/b/v.rcp", "//recipes/lib/a/v.rcp",
           "v.rcp", "//recipes/lib/none.rcp", "../../../../v.rcp", "@rcpc//maxtext_tpu.rcp", "x.txt")


def _recipe(targets: list[str]) -> str:
    loads = "".join(f'load("{t}", V{i} = "V")\n' for i, t in enumerate(targets))
    data = ", ".join(f'"v{i}": V{i}' for i in range(len(targets)))
    return (loads + 'manifest(name = "m", apiVersion = "v1", kind = "ConfigMap", metadata = {"name": "m"}, '
            f"data = {{{data}}})\n")


def _outcome(compiler: Compiler, path: Path):
    try:
        _, builds, _ = compiler.compile(path)
    except CompileError as exc:
        return "error", [(d.code, d.message, str(d.span)) for d in exc.diagnostics]
    return "ok", [(b.variant, [(r.name, r.text) for r in b.renders]) for b in builds]


RECIPES = st.lists(st.tuples(st.sampled_from(DIRECTORIES), st.lists(st.sampled_from(TARGETS), min_size=1, max_size=3)),
                   min_size=1, max_size=6)


@settings(max_examples=examples(60, ci=25), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(RECIPES)
def test_one_compiler_loads_what_a_compiler_of_each_recipe_loads(tmp_path_factory, recipes):
    root = tmp_path_factory.mktemp("loads")
    (root / "rcp.toml").write_text(TOML, encoding="utf-8")
    for lib in LIBRARIES:
        (root / lib).parent.mkdir(parents=True, exist_ok=True)
        (root / lib).write_text(f'V = "{lib}"\n', encoding="utf-8")
    paths = []
    for k, (directory, targets) in enumerate(recipes):
        p = root / directory / f"r{k}.rcp"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(_recipe(targets), encoding="utf-8")
        paths.append(p.resolve())
    shared = Compiler(Workspace.find(root))
    got = [_outcome(shared, p) for p in paths]
    assert got == [_outcome(Compiler(Workspace.find(root)), p) for p in paths]
    ws = Workspace.find(root)
    for p in paths:  # and each resolution is the workspace's
        for stmt in shared.module(p, ((p, None),)).stmts if p.exists() else ():
            if type(stmt) is not ast.Load:
                continue
            try:
                expected = ws.resolve_load(stmt.path, p, stmt.path_span)
            except CompileError as exc:
                expected = [d.message for d in exc.diagnostics]
            try:
                found = shared.resolve_load(stmt.path, p, stmt.path_span)
            except CompileError as exc:
                found = [d.message for d in exc.diagnostics]
            assert found == expected, (p, stmt.path)


def test_the_language_server_resolves_loads_again_after_an_edit(tmp_path):
    """The language server keeps its compiler across edits of a recipe: a library deleted
    meanwhile is reported (E0201) at the next check, as before load paths were kept."""
    from rcpc.lsp.session import Session

    (tmp_path / "rcp.toml").write_text(TOML, encoding="utf-8")
    lib = tmp_path / "recipes/lib/l.rcp"
    lib.parent.mkdir(parents=True)
    lib.write_text('V = "v"\n', encoding="utf-8")
    text = _recipe(["//recipes/lib/l.rcp"])
    recipe = tmp_path / "recipes/r.rcp"
    recipe.write_text(text, encoding="utf-8")
    session = Session(Workspace.find(tmp_path))
    real = recipe.resolve()
    session.update(real, text)
    assert session.diagnostics(real) == []
    lib.unlink()
    session.update(real, text + "\n")
    assert [d.code for d in session.diagnostics(real)] == ["E0201"]
