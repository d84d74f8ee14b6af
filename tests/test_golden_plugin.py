"""The golden-snapshot pytest plugin and the syrupy extension (issue: golden snapshots)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from syrupy.data import Snapshot, SnapshotCollection

from conftest import output_tree
from rcpc.testing.golden import GoldenExtension

pytest_plugins = ["pytester"]

# all in one pytest-xdist worker (tests/run: --dist loadgroup): its module fixture (the goldens) runs once
pytestmark = pytest.mark.xdist_group("test_golden_plugin")

RECIPE = '''
TUNED = param(bool, default = False)
N = param(int, default = 2)
FLAGS = maxtext_flags(
    {"custom_mesh_and_rule": "cp-as-ep", "steps": 100, "packing": True},
    {"custom_mesh_and_rule": "cp-as-ep-dense-no-cp"} if TUNED else {},
)
flag_file(name = "trainer", flags = FLAGS)
jobset(name = "trainer", spec = {"args": FLAGS.argv})
[jobset(name = f"rollout-{i}", spec = {"index": i}) for i in range(N)]
variant("default")
variant("tuned", set = {"TUNED": True}, against = "default",
        changes = {"trainer": ["custom_mesh_and_rule"]})
'''


@pytest.fixture
def workspace(pytester):
    pytester.makefile(".toml", rcp="")
    (pytester.path / "recipes").mkdir()
    (pytester.path / "recipes" / "r.rcp").write_text(RECIPE)
    return pytester


@pytest.fixture(scope="module")
def goldens(tmp_path_factory) -> Path:
    """The golden directory ``pytest rcp.toml --snapshot-update`` writes for RECIPE, made once
    (test_missing_goldens_fail_then_update_writes_them checks that run)."""
    root = tmp_path_factory.mktemp("goldens")
    (root / "rcp.toml").write_text("")
    (root / "recipes").mkdir()
    (root / "recipes" / "r.rcp").write_text(RECIPE)
    r = subprocess.run([sys.executable, "-m", "pytest", *QUIET, "rcp.toml", "--snapshot-update"], cwd=root,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "10 passed" in r.stdout, r.stdout[-2000:]
    return root / "golden"


@pytest.fixture
def updated(workspace, goldens):
    """``workspace`` with its goldens written (:func:`goldens`)."""
    shutil.copytree(goldens, workspace.path / "golden")
    return workspace


# what each pytest run here leaves out: its cache, and jaxtyping's plugin (installed with
# MaxText's loader requirements: it imports numpy, half of a run's time, and in a run in this
# process numpy's second import, after pytester undid the first, fails)
QUIET = ("-p", "no:cacheprovider", "-p", "no:jaxtyping")
UPDATE = "run `rcpc test --snapshot-update` (or `pytest rcp.toml --snapshot-update`) to accept the new renders"


def run(pytester, *args):
    return pytester.runpytest_subprocess(*QUIET, "rcp.toml", *args)


def test_missing_goldens_fail_then_update_writes_them(workspace):
    result = run(workspace)
    # 2 variants x 4 renders missing; the contract and the orphan check pass
    result.assert_outcomes(failed=8, passed=2)
    result.stdout.fnmatch_lines(["*golden golden/r/default/trainer.flags is missing*"])
    run(workspace, "--snapshot-update").assert_outcomes(passed=10)
    run(workspace).assert_outcomes(passed=10)
    golden = workspace.path / "golden" / "r" / "tuned" / "trainer.flags"
    assert golden.read_bytes() == (b"custom_mesh_and_rule=cp-as-ep\nsteps=100\npacking=True\n"
                                   b"custom_mesh_and_rule=cp-as-ep-dense-no-cp\n")


def test_golden_bytes_equal_rcpc_build_output(updated):
    workspace = updated
    out = workspace.path / "out"
    subprocess.run([sys.executable, "-m", "rcpc", "build", "-o", str(out)], cwd=workspace.path, check=True)
    golden = workspace.path / "golden"
    assert output_tree(out) == {p.relative_to(golden).as_posix(): p.read_bytes()
                                for p in sorted(golden.rglob("*")) if p.is_file()}


def test_changed_flag_fails_exactly_the_affected_items(updated):
    workspace = updated
    recipe = workspace.path / "recipes" / "r.rcp"
    recipe.write_text(RECIPE.replace('"steps": 100', '"steps": 200'))
    result = run(workspace)
    result.assert_outcomes(failed=4, passed=6)
    failed = {line.split(" ")[1] for line in result.outlines if line.startswith("FAILED")}
    assert failed == {f"rcp.toml::r/{v}/trainer.{ext}" for v in ("default", "tuned") for ext in ("flags", "yaml")}
    result.stdout.fnmatch_lines(["-steps=100", "+steps=200"])
    run(workspace, "--snapshot-update")
    run(workspace).assert_outcomes(passed=10)


def test_deleted_variant_leaves_orphans_until_update(updated):
    workspace = updated
    recipe = workspace.path / "recipes" / "r.rcp"
    recipe.write_text(RECIPE.split('variant("tuned"')[0])
    result = run(workspace)
    result.assert_outcomes(failed=1, passed=4)
    result.stdout.fnmatch_lines(["*no recipe, variant or render produces*", "*golden/r/tuned/trainer.flags"])
    run(workspace, "--snapshot-update").assert_outcomes(passed=5)
    assert not (workspace.path / "golden" / "r" / "tuned").exists()
    run(workspace).assert_outcomes(passed=5)


def test_deleted_render_and_recipe_are_orphans(updated):
    workspace = updated
    recipe = workspace.path / "recipes" / "r.rcp"
    recipe.write_text(RECIPE.replace("N = param(int, default = 2)", "N = param(int, default = 1)"))
    run(workspace).assert_outcomes(failed=1, passed=7)
    recipe.unlink()
    (workspace.path / "recipes" / "s.rcp").write_text('jobset(name = "x", spec = {})\n')
    result = run(workspace)
    result.stdout.fnmatch_lines(["*golden/r/default/rollout-0.yaml"])


def test_broken_contract_is_a_failing_item(workspace):
    recipe = workspace.path / "recipes" / "r.rcp"
    recipe.write_text(RECIPE.replace('changes = {"trainer": ["custom_mesh_and_rule"]}',
                                     'changes = {"trainer": ["steps"]}'))
    run(workspace, "--snapshot-update")
    result = run(workspace)
    result.assert_outcomes(failed=1, passed=9)
    result.stdout.fnmatch_lines(["*error?E0610?*", "*custom_mesh_and_rule changed but is not declared*",
                                 "*steps declared to change but did not*"])


def test_recipe_that_does_not_compile_is_one_failing_item(workspace):
    (workspace.path / "recipes" / "r.rcp").write_text("X = [1,\n")
    result = run(workspace)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*recipes/r.rcp:*error?E0001?*"])


@pytest.mark.parametrize("text", [
    "a\rb\n",                # lone CR
    "line one\r\nline two\r\n",  # CRLF
    "no final newline",
    "trailing spaces   \n\t\n",
    "non-ASCII: Grüße, 日本語, emoji 🚀\n",
    "",
])
def test_golden_extension_is_byte_exact(tmp_path, text):
    path = tmp_path / "g" / "render.txt"
    collection = SnapshotCollection(location=str(path))
    collection.add(Snapshot(name="render.txt", data=text))
    GoldenExtension.write_snapshot_collection(snapshot_collection=collection)
    assert path.read_bytes() == text.encode("utf-8")
    read = GoldenExtension().read_snapshot_data_from_location(
        snapshot_location=str(path), snapshot_name="render.txt", session_id="s")
    assert read == text


def test_renders_do_not_depend_on_hash_seed(tmp_path):
    """Each build compiles (RCPC_NO_CACHE): the second was a replay of the first from the
    user cache, which proved nothing."""
    repo = Path(__file__).resolve().parents[1]
    trees = []
    for seed in ("0", "1"):
        out = tmp_path / f"out{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed, "RCPC_NO_CACHE": "1"}
        subprocess.run([sys.executable, "-m", "rcpc", "build", "-o", str(out)], cwd=repo, env=env, check=True,
                       capture_output=True)
        trees.append({p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()})
    assert trees[0] and trees[0] == trees[1]


def test_ordinary_tests_run_beside_goldens(workspace):
    workspace.makepyfile(test_plain="def test_plain():\n    assert 1 + 1 == 2\n")
    workspace.makeini("[pytest]\ntestpaths = test_plain.py rcp.toml\n")
    assert workspace.runpytest_subprocess(*QUIET, "--snapshot-update").ret == 0
    result = workspace.runpytest_subprocess(*QUIET)
    result.assert_outcomes(passed=11)
    assert result.ret == 0


def test_one_summary_of_what_changed_leads_the_failures(updated):
    workspace = updated
    recipe = workspace.path / "recipes" / "r.rcp"
    recipe.write_text(RECIPE.replace('"steps": 100', '"steps": 200'))
    result = run(workspace)
    result.assert_outcomes(failed=4, passed=6)
    out = result.stdout.str()
    summary = out.index("rcpc: what changed in 4 golden render(s)")
    assert summary < out.index("= FAILURES =")
    lead = [x for x in out[summary:out.index("= FAILURES =")].splitlines()[1:] if not x.startswith("=")]
    assert lead == ["flag steps: 100 → 200",
                    "    in r/default/trainer.flags, r/tuned/trainer.flags",
                    'spec.args[1]: "steps=100" → "steps=200"',
                    "    in r/default/trainer.yaml, r/tuned/trainer.yaml",
                    UPDATE]
    # --snapshot-update says which goldens it rewrote, and which orphans it deleted
    recipe.write_text(RECIPE.replace('"steps": 100', '"steps": 200').replace("default = 2", "default = 1"))
    result = run(workspace, "--snapshot-update")
    out = result.stdout.str()
    assert "rcpc: --snapshot-update changed 6 golden file(s)" in out
    for line in ["rewritten golden/r/default/trainer.flags", "rewritten golden/r/tuned/trainer.yaml",
                 "deleted   golden/r/default/rollout-1.yaml", "deleted   golden/r/tuned/rollout-1.yaml"]:
        assert line in out
    assert "rcpc: --snapshot-update" not in run(workspace, "--snapshot-update").stdout.str()  # nothing to do


def test_golden_summary_groups_a_change_across_renders():
    from rcpc.review.golden import golden_summary

    flags = [(f"r/v{i}/trainer.flags", "a=1\nb=2\n", "a=1\nb=3\nc=x\n") for i in range(6)]
    manifest = [("r/v0/m.yaml", "spec:\n  image: i:1\n", "spec:\n  image: i:2\n"),
                ("r/v0/n.yaml", None, "x: 1\n"), ("r/v0/bad.yaml", "a: [\n", "a: 1\n")]
    assert golden_summary(flags + manifest) == [
        "flag b: 2 → 3", "    in r/v0/trainer.flags, r/v1/trainer.flags, r/v2/trainer.flags, r/v3/trainer.flags, "
        "… (6 renders)",
        "flag c: (unset) → x", "    in r/v0/trainer.flags, r/v1/trainer.flags, r/v2/trainer.flags, "
        "r/v3/trainer.flags, … (6 renders)",
        'spec.image: "i:1" → "i:2"', "    in r/v0/m.yaml",
        "text changed", "    in r/v0/bad.yaml",
        "missing goldens: r/v0/n.yaml",
        UPDATE]


IMPORTS = """
import sys, pytest
code = pytest.main(sys.argv[1:])
print("hypothesis imported:", "hypothesis" in sys.modules)
sys.exit(code)
"""


@pytest.mark.parametrize("with_property", [False, True])
def test_a_golden_only_session_does_not_import_hypothesis(updated, with_property):
    """Hypothesis's pytest plugin imported all of hypothesis in its terminal summary, even in
    a session that ran no property (~0.7 s of ``pytest rcp.toml``): rcpc's plugin unregisters
    it there. A session that runs a property keeps it, and its summary."""
    workspace = updated
    args = ["-q", *QUIET, "rcp.toml"]
    if with_property:
        workspace.makepyfile(test_prop="from hypothesis import given, strategies as st\n"
                                       "@given(st.integers())\ndef test_p(x):\n    assert x == x\n")
        args.append("test_prop.py")
    r = subprocess.run([sys.executable, "-c", IMPORTS, *args], cwd=workspace.path, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout[-2000:]
    assert f"hypothesis imported: {with_property}" in r.stdout


def test_unchanged_recipes_come_from_the_build_cache(workspace, build_calls, monkeypatch, tmp_path):
    """A recipe whose inputs are unchanged since a build, check or golden run is served from
    the build cache, compiled by nothing: the same items, with the same outcomes, as a run
    without the cache. A changed recipe is compiled (and stored); one whose contract fails
    is never stored, so its contract item fails on every run."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)

    def items(*args):
        rec = workspace.inline_run(*QUIET, "rcp.toml", *args)
        return sorted((r.nodeid, r.outcome) for r in rec.getreports("pytest_runtest_logreport") if r.when == "call")

    written = items("--snapshot-update")
    assert len(build_calls) == 1 and len(written) == 10
    assert items() == written and len(build_calls) == 1  # from the cache
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    assert items() == written and len(build_calls) == 2  # the same without it
    monkeypatch.delenv("RCPC_NO_CACHE")
    recipe = workspace.path / "recipes" / "r.rcp"
    recipe.write_text(RECIPE.replace('"steps": 100', '"steps": 200'))
    changed = items()
    assert len(build_calls) == 3 and sum(o == "failed" for _, o in changed) == 4
    assert items() == changed and len(build_calls) == 3
    recipe.write_text(RECIPE.replace('["custom_mesh_and_rule"]', '["steps"]'))
    for calls in (4, 5):  # a broken contract: compiled each time, never served
        outcomes = dict(items())
        assert outcomes["rcp.toml::r/tuned:contract"] == "failed" and len(build_calls) == calls


def test_a_golden_alias_bomb_reads_as_changed_text():
    """The summary reads goldens with libyaml, weighed before they are built: a golden
    edited into an alias bomb (a billion nodes from a few hundred bytes) is "text changed",
    at once."""
    from rcpc.review.golden import golden_summary

    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(8))
    assert golden_summary([("r/v/m.yaml", bomb, "a: 1\n")])[0] == "text changed"


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="ab=.,-_ \t\r\n\x0b\x0c\x1c\x85\xa0\u2028'\"\\", max_size=30))
@example(text="a=1\x0bb=2\n")  # a vertical tab: whitespace to str.split, part of a token to a shell
@example(text="a='x y'\nb=2\n")
def test_flag_tokens_split_as_a_shell_splits_them(text):
    """The summary reads a ``.flags`` render's tokens as ``shlex.split`` does (a shell's
    words), without shlex's pure-Python tokenizer when the text has no quotes or
    backslashes: split at the shell's whitespace only, not ``str.split``'s (a vertical tab,
    a no-break space or U+2028 is part of a token)."""
    import shlex

    from rcpc.review.golden import effective_tokens

    try:
        tokens = shlex.split(text)
    except ValueError:  # an unclosed quote: shlex's error either way
        with pytest.raises(ValueError):
            effective_tokens(text)
        return
    assert effective_tokens(text) == {k: v for k, _, v in (t.partition("=") for t in tokens)}


def test_the_plugin_imports_no_compiler_until_it_collects():
    """pytest imports the plugin in every session (each xdist worker too), most of which
    collect no rcp.toml: importing it imports nothing else of rcpc (the workspace module's
    imports cost more than the plugin), and the file it collects is the workspace's config."""
    code = ("import sys, rcpc.testing.plugin as p, json; "
            "print(json.dumps([p.CONFIG_NAME, sorted(m for m in sys.modules if m.startswith('rcpc.'))]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    from rcpc.domain.workspace import CONFIG_NAME

    assert json.loads(r.stdout) == [CONFIG_NAME, ["rcpc.testing", "rcpc.testing.plugin"]]


def test_the_documented_fast_setting_gives_the_same_report(updated, monkeypatch):
    """docs/review.md (*How long pytest rcp.toml takes*): with plugin autoloading off and
    only rcpc's plugin and syrupy's loaded, assertions plain, the goldens fail and pass as in
    a default run, with the same summary of what changed, and ``--snapshot-update`` works."""
    workspace = updated
    (workspace.path / "recipes" / "r.rcp").write_text(RECIPE.replace('"steps": 100', '"steps": 200'))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    fast = ("-p", "rcpc", "-p", "syrupy", "--assert=plain")
    result = run(workspace, *fast)
    result.assert_outcomes(failed=4, passed=6)
    assert "flag steps: 100 → 200" in result.stdout.str()
    assert "rcpc: --snapshot-update changed 4 golden file(s)" in run(workspace, *fast, "--snapshot-update").stdout.str()
    run(workspace, *fast).assert_outcomes(passed=10)


GC_PROBE = """
import gc, sys, pytest
from _pytest.unraisableexception import gc_collect_iterations_key
before = gc.get_threshold()
class Probe:
    def pytest_sessionfinish(self, session):
        print("iterations:", session.config.stash.get(gc_collect_iterations_key, None),
              "thresholds kept:", gc.get_threshold() == before)
sys.exit(pytest.main(sys.argv[1:], plugins=[Probe()]))
"""


@pytest.mark.parametrize("with_plain", [False, True])
def test_a_golden_only_session_skips_the_final_collection(updated, with_plain):
    """A session of golden items alone skips pytest's closing ``gc.collect`` (the setting
    pytester uses; no user code ran), one with any other test keeps it; the collector's
    thresholds, raised while recipes compile, are the session's own again after collection."""
    workspace = updated
    args = ["-q", *QUIET, "rcp.toml"]
    if with_plain:
        workspace.makepyfile(test_plain="def test_plain():\n    assert True\n")
        args.append("test_plain.py")
    r = subprocess.run([sys.executable, "-c", GC_PROBE, *args], cwd=workspace.path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:]
    assert f"iterations: {None if with_plain else 0} thresholds kept: True" in r.stdout


@pytest.mark.parametrize("args", [(), ("--snapshot-update",)])
def test_each_golden_is_read_once(updated, monkeypatch, args):
    """Under pytest a golden item reads its golden once (session 5 review: the item read it
    for its checks, then syrupy again): every read goes through read_golden's one read of the
    file (rcpc.review.golden.read_limited), here counted by path, over a run with a changed
    golden, a missing one and the rest unchanged; ``rcpc test`` reads each once too."""
    from collections import Counter

    from rcpc.api import Workspace
    from rcpc.review import golden

    reads: Counter = Counter()
    real = golden.read_limited
    monkeypatch.setattr(golden, "read_limited", lambda path, *a, **k: (reads.update([Path(path)]),
                                                                       real(path, *a, **k))[1])
    goldens = sorted(p for p in (updated.path / "golden").rglob("*") if p.is_file())
    goldens[0].write_text(goldens[0].read_text() + "changed\n")
    goldens[1].unlink()
    rec = updated.inline_run(*QUIET, "rcp.toml", *args)
    outcomes = [r.outcome for r in rec.getreports("pytest_runtest_logreport") if r.when == "call"]
    assert len(outcomes) == 10 and outcomes.count("failed") == (0 if args else 2)
    assert reads == Counter(goldens)
    reads.clear()
    Workspace(updated.path).test()
    assert reads == Counter(goldens)


def test_without_syrupy_each_golden_item_says_what_to_install(workspace):
    """With syrupy's plugin not loaded (``-p no:syrupy``; the same import the plugin needs when
    syrupy is not installed) each golden item fails with what to install, not a traceback
    (``AttributeError: 'Config' object has no attribute '_syrupy'``), and the hint names the
    small extra, not rcpc's test suite's (106 packages, JAX among them: found by a user trial)."""
    r = run(workspace, "-p", "no:syrupy")
    out = r.stdout.str()
    assert r.ret == 1 and "pip install 'rcpc[golden]'" in out and "AttributeError" not in out, out[-3000:]
    import tomllib

    extras = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert {r.split(">")[0].split("=")[0] for r in extras["golden"]} == {"pytest", "syrupy"}
    assert set(extras["golden"]) <= set(extras["test"])  # the same versions as the suite's
