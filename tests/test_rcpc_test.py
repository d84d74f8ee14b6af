"""``rcpc test``: the golden check outside pytest (issue 37), and its agreement with the pytest
plugin (``pytest rcp.toml``): the same verdicts, and ``--snapshot-update`` writing the same
bytes (:mod:`rcpc.review.golden` is the one place both use)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import rcp_string
from rcpc.api import Workspace
from rcpc.cli import main

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.xdist_group("test_golden_plugin")  # pytester runs beside test_golden_plugin's

QUIET = ("-p", "no:cacheprovider", "-p", "no:jaxtyping")


def recipe(steps=100, n=2, tuned=True, contract_ok=True, name="run", broken=False) -> str:
    """A recipe of one flag file, its JobSet and ``n`` more JobSets; variant ``tuned`` with a
    contract that holds (``contract_ok``) or not; ``broken``: a syntax error."""
    if broken:
        return "X = [1,\n"
    changes = "custom_mesh_and_rule" if contract_ok else "steps"
    text = (f'TUNED = param(bool, default = False)\n'
            f'FLAGS = maxtext_flags(\n'
            f'    {{"custom_mesh_and_rule": "cp-as-ep", "steps": {steps}, "run_name": {rcp_string(name)}}},\n'
            f'    {{"custom_mesh_and_rule": "cp-as-ep-dense-no-cp"}} if TUNED else {{}},\n)\n'
            f'flag_file(name = "trainer", flags = FLAGS)\n'
            f'jobset(name = "trainer", spec = {{"args": FLAGS.argv}})\n'
            f'[jobset(name = f"rollout-{{i}}", spec = {{"index": i}}) for i in range({n})]\n'
            f'variant("default")\n')
    if tuned:
        text += (f'variant("tuned", set = {{"TUNED": True}}, against = "default",\n'
                 f'        changes = {{"trainer": ["{changes}"]}})\n')
    return text


def make(root: Path, text: str) -> Path:
    (root / "recipes").mkdir(parents=True, exist_ok=True)
    (root / "rcp.toml").write_text("")
    (root / "recipes" / "r.rcp").write_text(text)
    return root


def rcpc(root: Path, monkeypatch, capsys, *argv) -> tuple[int, str]:
    monkeypatch.chdir(root)
    capsys.readouterr()
    code = main(["test", *argv])
    return code, capsys.readouterr().err


def tree(golden: Path) -> dict:
    """{path: bytes} of every file under ``golden``, and every directory (None)."""
    if not golden.exists():
        return {}
    return {p.relative_to(golden).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in sorted(golden.rglob("*"))}


@pytest.fixture
def ws(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return make(tmp_path / "ws", recipe())


def test_missing_goldens_then_update_then_pass(ws, monkeypatch, capsys):
    code, err = rcpc(ws, monkeypatch, capsys)
    assert code == 1
    assert "golden/r/default/trainer.flags: error[E1301]: no golden for render r/default/trainer.flags" in err
    assert "help: run `rcpc test --snapshot-update` (or `pytest rcp.toml --snapshot-update`)" in err
    assert "missing goldens: r/default/trainer.flags, r/default/trainer.yaml" in err
    code, err = rcpc(ws, monkeypatch, capsys, "--snapshot-update")
    assert code == 0 and "written   golden/r/tuned/rollout-1.yaml" in err
    assert "8 golden(s) written, 0 deleted" in err
    code, err = rcpc(ws, monkeypatch, capsys)
    assert (code, err) == (0, "rcpc: tested 8 render(s) and 1 contract(s): ok\n")


def test_changed_render_shows_a_short_diff_and_what_changed(ws, monkeypatch, capsys):
    rcpc(ws, monkeypatch, capsys, "--snapshot-update")
    (ws / "recipes" / "r.rcp").write_text(recipe(steps=200))
    code, err = rcpc(ws, monkeypatch, capsys)
    assert code == 1
    assert "golden/r/default/trainer.flags:2:7: error[E1300]: golden differs from the render " \
           "r/default/trainer.flags" in err
    assert "  note: -steps=100\n  note: +steps=200\n" in err
    lead = err[err.index("rcpc: what changed in 4 golden render(s):"):].splitlines()
    assert lead[1:3] == ["flag steps: 100 → 200", "    in r/default/trainer.flags, r/tuned/trainer.flags"]
    assert lead[-1] == "rcpc: tested 8 render(s) and 1 contract(s): 4 failure(s)"
    # a long diff is cut
    (ws / "recipes" / "r.rcp").write_text(recipe(n=2).replace('"index": i', '"index": i, "l": [k for k in range(40)]'))
    code, err = rcpc(ws, monkeypatch, capsys)
    assert code == 1 and "more diff lines" in err


def test_obsolete_goldens_are_reported_then_deleted(ws, monkeypatch, capsys):
    rcpc(ws, monkeypatch, capsys, "--snapshot-update")
    (ws / "recipes" / "r.rcp").write_text(recipe(n=1, tuned=False))
    (ws / "golden" / "gone" / "v").mkdir(parents=True)
    (ws / "golden" / "gone" / "v" / "x.flags").write_text("a=1\n")
    (ws / "golden" / ".keep").write_text("")
    code, err = rcpc(ws, monkeypatch, capsys)
    assert code == 1
    for path in ("gone/v/x.flags", "r/default/rollout-1.yaml", "r/tuned/trainer.flags"):
        assert f"golden/{path}: error[E1302]: golden file that no recipe, variant or render produces" in err
    # a recipe named on the command line: only its own golden directory is searched
    code, err = rcpc(ws, monkeypatch, capsys, "r")
    assert code == 1 and "gone/v/x.flags" not in err and "golden/r/tuned/trainer.flags" in err
    code, err = rcpc(ws, monkeypatch, capsys, "--snapshot-update")
    assert code == 0 and "deleted   golden/gone/v/x.flags" in err
    assert sorted(tree(ws / "golden")) == [".keep", "r", "r/default", "r/default/rollout-0.yaml",
                                           "r/default/trainer.flags", "r/default/trainer.yaml"]


def test_broken_contract_and_recipe_error_fail_even_under_update(ws, monkeypatch, capsys):
    (ws / "recipes" / "r.rcp").write_text(recipe(contract_ok=False))
    code, err = rcpc(ws, monkeypatch, capsys, "--snapshot-update")
    assert code == 1 and "error[E0610]" in err and "custom_mesh_and_rule changed but is not declared" in err
    assert (ws / "golden" / "r" / "tuned" / "trainer.flags").is_file()  # the renders are written all the same
    (ws / "recipes" / "r.rcp").write_text(recipe(broken=True))
    code, err = rcpc(ws, monkeypatch, capsys, "--snapshot-update")
    assert code == 1 and "recipes/r.rcp:1:7: error[E0001]" in err
    assert (ws / "golden" / "r" / "tuned" / "trainer.flags").is_file()  # a recipe that fails keeps its goldens


@pytest.mark.parametrize("kind", ["symlink out", "symlinked directory", "too large", "not UTF-8", "directory"])
def test_a_golden_is_read_with_the_input_limits(ws, monkeypatch, capsys, tmp_path, kind):
    """A golden another user could have written is read only when it is a regular UTF-8 file
    of at most 4 MiB reached through no symlink (E1303), and is never written through."""
    rcpc(ws, monkeypatch, capsys, "--snapshot-update")
    golden = ws / "golden" / "r" / "default" / "trainer.flags"
    secret = tmp_path / "secret"
    secret.write_text("outside\n")
    if kind == "symlink out":
        golden.unlink()
        golden.symlink_to(secret)
    elif kind == "symlinked directory":
        outside = tmp_path / "outside"
        shutil.move(ws / "golden" / "r" / "default", outside)
        (ws / "golden" / "r" / "default").symlink_to(outside)
        secret = outside / "trainer.flags"
    elif kind == "too large":
        golden.write_bytes(b"x" * (4 * 1024 * 1024 + 1))
    elif kind == "not UTF-8":
        golden.write_bytes(b"\xff\n")
    else:
        golden.unlink()
        golden.mkdir()
    before = secret.read_bytes()
    (ws / "recipes" / "r.rcp").write_text(recipe(steps=7))
    for update in ((), ("--snapshot-update",)):
        code, err = rcpc(ws, monkeypatch, capsys, *update)
        assert code == 1 and "error[E1303]: golden file not read" in err and "outside" not in err
        assert secret.read_bytes() == before


def test_the_command_is_listed_in_help_and_completion(capsys):
    from rcpc.cli import parser
    from rcpc.completion import script

    assert "test" in parser().format_help()
    for shell in ("bash", "zsh", "fish"):
        assert "snapshot-update" in script(parser(), shell)


# --- the plugin and the command agree --------------------------------------------------------------

STATES = st.fixed_dictionaries({
    "steps": st.integers(1, 3), "n": st.integers(0, 3), "tuned": st.booleans(),
    "contract_ok": st.booleans() | st.just(True),
    "name": st.text(alphabet="ab '\"\\\r\né🚀", max_size=6)})
EDITS = st.fixed_dictionaries({
    "steps": st.integers(1, 3), "n": st.integers(0, 3), "tuned": st.booleans(), "contract_ok": st.booleans(),
    "name": st.text(alphabet="ab '\"\\\r\né🚀", max_size=6), "broken": st.sampled_from([False] * 5 + [True])})
HAND = st.sampled_from(["none", "stray golden", "crlf golden", "deleted golden", "stray recipe dir"])


def verdicts_of_pytest(pytester, root: Path) -> set:
    rec = pytester.inline_run(*QUIET, str(root / "rcp.toml"))
    return {r.nodeid.split("::", 1)[1] for r in rec.getreports("pytest_runtest_logreport")
            if r.failed and r.when == "call"}


def verdicts_of_rcpc(root: Path) -> set:
    tested = Workspace(root).test()
    return ({name for name, *_ in tested.changed} | set(tested.broken) | ({"orphans"} if tested.obsolete else set()))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=STATES, edit=EDITS, hand=HAND)
@example(start={"steps": 1, "n": 2, "tuned": True, "contract_ok": True, "name": "run", "broken": False},
         edit={"steps": 2, "n": 1, "tuned": False, "contract_ok": True, "name": "a\r\nb 'c'", "broken": False},
         hand="stray golden")
def test_plugin_and_command_agree_and_update_the_same_bytes(pytester, monkeypatch, capsys, start, edit, hand):
    """On generated recipes and edits (and goldens edited by hand), ``pytest rcp.toml`` and
    ``rcpc test`` fail the same items, and their ``--snapshot-update`` runs leave
    byte-identical golden trees (files written, rewritten and deleted, directories pruned)."""
    with tempfile.TemporaryDirectory() as tmp:
        monkeypatch.setenv("XDG_CACHE_HOME", str(Path(tmp) / "cache"))
        a = make(Path(tmp) / "a", recipe(**start))
        Workspace(a).test(update=True)
        (a / "recipes" / "r.rcp").write_text(recipe(**edit))
        golden = a / "golden" / "r" / "default"
        if hand == "stray golden":
            (a / "golden" / "old" / "v").mkdir(parents=True)
            (a / "golden" / "old" / "v" / "x.yaml").write_text("a: 1\n")
        elif hand == "crlf golden" and (golden / "trainer.flags").exists():
            (golden / "trainer.flags").write_bytes((golden / "trainer.flags").read_bytes().replace(b"\n", b"\r\n"))
        elif hand == "deleted golden" and (golden / "trainer.yaml").exists():
            (golden / "trainer.yaml").unlink()
        elif hand == "stray recipe dir":
            (a / "golden" / "r" / "other").mkdir(parents=True, exist_ok=True)
        b = Path(tmp) / "b"
        shutil.copytree(a, b, symlinks=True)
        assert verdicts_of_pytest(pytester, a) == verdicts_of_rcpc(b)
        pytester.inline_run(*QUIET, str(a / "rcp.toml"), "--snapshot-update")
        monkeypatch.chdir(b)
        main(["test", "--snapshot-update"])
        monkeypatch.chdir(pytester.path)  # not a directory about to be removed
        capsys.readouterr()
        assert tree(a / "golden") == tree(b / "golden")


def test_the_update_hint_names_the_commands_for_where_they_run(tmp_path, monkeypatch):
    """rcpc finds the workspace at or above the current directory, pytest takes the rcp.toml
    path: the hint names ``rcpc test`` plainly inside the workspace, in a ``cd`` outside it."""
    from rcpc.review.golden import update_command

    (tmp_path / "ws" / "recipes").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "ws" / "recipes")
    assert update_command(["../rcp.toml"]) == "`rcpc test --snapshot-update` (or `pytest ../rcp.toml --snapshot-update`)"
    monkeypatch.chdir(tmp_path)
    assert update_command(["ws/rcp.toml"]) == \
        "`(cd ws && rcpc test --snapshot-update)` (or `pytest ws/rcp.toml --snapshot-update`)"
    assert update_command() == "`rcpc test --snapshot-update` (or `pytest rcp.toml --snapshot-update`)"


def test_paths_name_recipes_files_and_directories(ws, monkeypatch, capsys, tmp_path):
    (ws / "recipes" / "sub").mkdir()
    (ws / "recipes" / "sub" / "s.rcp").write_text(recipe(n=0, tuned=False))
    (ws / "recipes" / "empty").mkdir()
    rcpc(ws, monkeypatch, capsys, "--snapshot-update")
    assert rcpc(ws, monkeypatch, capsys, "recipes/sub")[1].startswith("rcpc: tested 2 render(s)")
    assert rcpc(ws, monkeypatch, capsys, "recipes/sub/s.rcp")[1].startswith("rcpc: tested 2 render(s)")
    assert rcpc(ws, monkeypatch, capsys, "r", "sub/s")[1].startswith("rcpc: tested 10 render(s)")
    for path, said in [("recipes/empty", "no recipes under recipes/empty"), (str(tmp_path), "is outside the workspace"),
                       ("nosuch", "no recipe 'nosuch' in this workspace")]:
        code, err = rcpc(ws, monkeypatch, capsys, path)
        assert code == 2 and said in err


def test_a_golden_run_releases_each_recipe_it_compiles_and_keeps_their_verdicts(ws, monkeypatch):
    """compile_goldens compiles as Compiler.compile does (session 5 review: it repeated
    check_contracts without the build's embeddings memo and released nothing, so a run over a
    large workspace kept every recipe's source, AST and trace): each recipe compiled is
    released once, in order, nothing of it is kept (as tests/test_attack_trace.py checks
    release), and every verdict is the one Compiler.compile gives on a fresh compiler, each
    diagnostic quoted with its source line."""
    import gc

    from rcpc.core.diagnostics import CompileError
    from rcpc.core.trace import Trace
    from rcpc.domain.recipe import Compiler
    from rcpc.review.golden import compile_goldens
    from rcpc.core.diagnostics import format_text
    from rcpc.cli.run import Sources

    for name, text in {"b": recipe(steps=7, name="b"), "c": recipe(contract_ok=False), "d": recipe(broken=True),
                       "e": recipe(n=0, tuned=False)}.items():
        (ws / "recipes" / f"{name}.rcp").write_text(text)
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    released: list = []
    real = Compiler.release
    monkeypatch.setattr(Compiler, "release", lambda self, path: (released.append(path), real(self, path))[1])
    workspace = Workspace(ws)
    paths = workspace.config.recipes()
    compiled = list(compile_goldens(workspace, paths))
    assert released == paths and len(paths) == 5
    gc.collect()
    assert not [t for t in gc.get_objects() if type(t) is Trace and str(t.module.path).startswith(str(ws))]
    assert not workspace.compiler._modules and not workspace.compiler._traces
    for path, got in zip(paths, compiled):
        fresh = Compiler(workspace.config)
        try:
            _, builds, _ = fresh.compile(path)
        except CompileError as exc:
            expected = exc.diagnostics
        else:
            expected = []
            assert got.builds == [(b.variant, [(r.name, r.text) for r in b.renders]) for b in builds]
        found = got.errors or [d for _, diags in got.contracts for d in diags]
        assert found == expected
        for d in found:  # quoted from the sources kept as rcpc test quotes it (the file read again)
            shown = format_text(d, got.sources)
            assert shown == format_text(d, Sources(workspace.config, {}))
            assert f"{d.span.line} | " in shown


@pytest.mark.parametrize("kind", ["directory outside", "symlink to a directory outside", "symlink to a recipe outside",
                                  "recipe outside", "directory inside", "recipe name"])
def test_test_check_and_lint_take_paths_alike(ws, monkeypatch, capsys, tmp_path, kind):
    """``rcpc test PATH`` and ``rcpc check PATH`` read their paths with one walk, and ``rcpc
    lint PATH`` refuses the same paths (session 5 review: test's walk and lint's check were
    weaker copies, resolving symlinks, with no E0906): a path outside the workspace is the
    same usage error (exit 2), a symlink out of it the same E0906 (exit 1, nothing read
    there), a path inside names the same recipes."""
    outside = tmp_path / "elsewhere"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "o.rcp").write_text(recipe())
    path = {"directory outside": str(outside / "sub"), "recipe outside": str(outside / "sub" / "o.rcp"),
            "symlink to a directory outside": "recipes/link", "symlink to a recipe outside": "recipes/link.rcp",
            "directory inside": "recipes", "recipe name": "r"}[kind]
    if kind == "symlink to a directory outside":
        (ws / "recipes" / "link").symlink_to(outside / "sub")
    if kind == "symlink to a recipe outside":
        (ws / "recipes" / "link.rcp").symlink_to(outside / "sub" / "o.rcp")
    rcpc(ws, monkeypatch, capsys, "--snapshot-update", "r")
    capsys.readouterr()
    tested, test_err = rcpc(ws, monkeypatch, capsys, path)
    checked = main(["check", path])
    check_err = capsys.readouterr().err
    first = test_err.splitlines()[0]
    if kind.endswith("inside") or kind == "recipe name":
        assert tested == checked == 0 and first.startswith("rcpc: tested 8 render(s)")
        assert Workspace(ws)._named([path], libraries=False)[0] == Workspace(ws)._named([path])[0] \
            == [(ws / "recipes" / "r.rcp").resolve()]
        return
    linted = main(["lint", path])
    lint_err = capsys.readouterr().err
    if "symlink" in kind:
        assert tested == checked == linted == 1
        assert "error[E0906]: symlink to a file outside the workspace (not read)" in first
    else:
        assert tested == checked == linted == 2 and "is outside the workspace" in first
    assert first == check_err.splitlines()[0] == lint_err.splitlines()[0]
