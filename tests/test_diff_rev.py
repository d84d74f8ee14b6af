"""``rcpc diff --rev REF``: renders at a git revision against the work tree (docs/review.md).

Each test builds a throw-away git repository holding the bundled RL recipe (its library and
an ``rcp.toml``), with commits made deterministic (fixed author, dates and config)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.review import report as review, revision
from rcpc.cli import main
from rcpc.core.diagnostics import CompileError

REPO = Path(__file__).resolve().parents[1]
RL = "recipes/rl/qwen35_397b_256_v7x.rcp"
GIT_ENV = {"GIT_AUTHOR_NAME": "rcpc test", "GIT_AUTHOR_EMAIL": "test@example.com",
           "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+00:00", "GIT_COMMITTER_NAME": "rcpc test",
           "GIT_COMMITTER_EMAIL": "test@example.com", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+00:00",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], env={**os.environ, **GIT_ENV}, check=True,
                          capture_output=True, text=True)
    return done.stdout


def make_repo(root: Path, edits: list[dict[str, str]]) -> Path:
    """A repository at ``root`` with the RL recipe: one commit, then one commit per dict of
    (path → new text) in ``edits``."""
    root.mkdir(parents=True, exist_ok=True)
    for sub in ("recipes/rl",):   # it loads @rcpc//rl_pathways.rcp, the package's
        shutil.copytree(REPO / sub, root / sub)
    (root / "rcp.toml").write_text('recipe_dirs = ["recipes"]\nlibrary_dirs = ["recipes/lib"]\n')
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "recipes")
    for n, edit in enumerate(edits):
        for path, text in edit.items():
            (root / path).write_text(text)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"edit {n}")
    return root


def edited(old: str, new: str, path: str = RL) -> dict:
    text = (REPO / path).read_text()
    assert old in text
    return {path: text.replace(old, new)}


@pytest.fixture
def run(monkeypatch, capsys):
    for k, v in GIT_ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("RCPC_NO_CACHE", "1")

    def go(root: Path, *argv: str):
        monkeypatch.chdir(root)
        capsys.readouterr()
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code
        out, err = capsys.readouterr()
        return code, out, err

    return go


def snapshot_state(root: Path) -> dict:
    """What must not change: the work tree's files (bytes and mtimes), git's index file and
    ``git status``, and everything under rcpc-out."""
    files = {}
    for p in sorted(root.rglob("*")):
        if ".git" in p.relative_to(root).parts or not p.is_file():
            continue
        st = p.stat()
        files[p.relative_to(root).as_posix()] = (p.read_bytes(), st.st_mtime_ns)
    index = root / ".git" / "index"
    status = subprocess.run(["git", "--no-optional-locks", "-C", str(root), "status", "--porcelain"],
                            capture_output=True, text=True, check=True, env={**os.environ, **GIT_ENV}).stdout
    return {"files": files, "index": (index.read_bytes(), index.stat().st_mtime_ns), "status": status}


def test_last_commit_edited_one_flag(tmp_path, run):
    root = make_repo(tmp_path / "repo", [edited('"gdn_chunk_size": 64,', '"gdn_chunk_size": 128,')])
    git(root, "status", "--porcelain")  # git itself may refresh the index now, not during rcpc
    assert run(root, "build")[0] == 0   # an output directory that must stay as it is
    before = snapshot_state(root)
    code, out, err = run(root, "diff", "--rev", "HEAD~1", "--format", "json")
    assert code == 0, err
    assert snapshot_state(root) == before
    doc = json.loads(out)
    assert doc["rev"] == "HEAD~1" and doc["commit"] == git(root, "rev-parse", "HEAD~1").strip()
    changed = {f"{d['recipe']}/{d['variant']}/{d['render']}" for d in doc["renders"] if d["status"] != "identical"}
    assert changed == {f"rl/qwen35_397b_256_v7x/{v}/trainer.{e}" for v in ("default", "tuned", "six", "six-tuned")
                       for e in ("flags", "yaml")}
    assert doc["summary"] == {"changed": 8, "added": 0, "removed": 0, "identical": 44}
    for d in doc["renders"]:  # the flag change in every shape that carries it (a .flags file, a JobSet's args)
        if d["status"] == "changed":
            assert d["flags"] == [{"key": "gdn_chunk_size", "old": "64", "new": "128"}]
            assert d["paths"] == []
    # the text report: the header says which rcpc built both sides, then the 8 renders
    code, out, _ = run(root, "diff", "--rev", "HEAD~1")
    lines = out.splitlines()
    assert lines[0].startswith("rcpc diff --rev HEAD~1: a/ is HEAD~1 (") and lines[0].endswith("b/ is the work tree")
    assert lines[1] == "both sides are built by the running rcpc 0.1.0"
    assert re.search(r"^changed  rl/qwen35_397b_256_v7x/six/trainer\.flags +gdn_chunk_size: 64 → 128$", out, re.M)
    assert "8 changed, 0 added, 0 removed, 44 identical (of 52 renders)" in out
    assert "-gdn_chunk_size=64\n+gdn_chunk_size=128\n" in out
    assert "\033[" not in out  # not a terminal: no colour
    assert snapshot_state(root) == before


def test_clean_tree_against_head_is_no_change(tmp_path, run):
    root = make_repo(tmp_path / "repo", [])
    before = snapshot_state(root)
    code, out, err = run(root, "diff", "--rev", "HEAD", "--stat")
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == " 0 changed, 0 added, 0 removed, 52 identical (of 52 renders)"
    assert snapshot_state(root) == before


def test_uncommitted_edits_are_the_work_tree_side_only(tmp_path, run):
    root = make_repo(tmp_path / "repo", [])
    (root / RL).write_text((root / RL).read_text().replace('ROLLOUT_REPLICAS = param(int, default = 16',
                                                            'ROLLOUT_REPLICAS = param(int, default = 17'))
    git(root, "add", RL)  # staged: the index differs from HEAD, and must stay as it is
    before = snapshot_state(root)
    code, out, _ = run(root, "diff", "--rev", "HEAD", "--stat")
    assert code == 0
    assert re.search(r"^ rl/qwen35_397b_256_v7x/default/rollout-16\.yaml +\| added    \| \+109 -0$", out, re.M)
    assert re.search(r"/default/orchestrator\.yaml +\| changed  \| \+1 -1$", out, re.M)  # every rollout's address
    assert snapshot_state(root) == before


def test_added_and_removed_recipes_and_variants(tmp_path, run):
    text = (REPO / RL).read_text()
    root = make_repo(tmp_path / "repo", [{RL: text.replace('variant("six", set = {"ROLLOUT_REPLICAS": 4})\n',
                                                           'variant("seven", set = {"ROLLOUT_REPLICAS": 7})\n')
                                          .replace('against = "six"', 'against = "seven"')}])
    (root / "recipes" / "tiny.rcp").write_text('jobset(name = "js", spec = {"replicas": 1})\n')
    code, out, _ = run(root, "diff", "--rev", "HEAD~1", "--format", "json")
    assert code == 0
    status = {(d["recipe"], d["variant"], d["render"]): d["status"] for d in json.loads(out)["renders"]}
    assert status[("tiny", "default", "js.yaml")] == "added"
    assert status[("rl/qwen35_397b_256_v7x", "six", "trainer.yaml")] == "removed"
    assert status[("rl/qwen35_397b_256_v7x", "seven", "rollout-6.yaml")] == "added"
    # one recipe and one variant
    code, out, _ = run(root, "diff", "--rev", "HEAD~1", "tiny", "--format", "json")
    assert [d["recipe"] for d in json.loads(out)["renders"]] == ["tiny"]
    code, out, _ = run(root, "diff", "--rev", "HEAD~1", "--variant", "default", "--format", "json")
    assert {d["variant"] for d in json.loads(out)["renders"]} == {"default"}


def test_markdown_report_is_a_row_per_flag_change_then_folded_details(tmp_path, run):
    """Issue 39: one flag edited in the RL recipe is one row (the eight renders it reaches
    listed, a flag inside a JobSet's command as the key, not a word diff of the command line),
    the contracts' verdict, and no unified diff of what the row says whole."""
    root = make_repo(tmp_path / "repo", [edited('"gdn_chunk_size": 64,', '"gdn_chunk_size": 128,')])
    code, out, _ = run(root, "diff", "--rev", "HEAD~1", "--format", "markdown")
    assert code == 0
    assert out.startswith("### rcpc diff `HEAD~1` → work tree\n")
    assert "**Contracts:** every contract holds." in out
    assert "| flag | change | renders |\n|---|---|---|\n" in out
    assert ("| `gdn_chunk_size` | `64 → 128` | `rl/qwen35_397b_256_v7x: {default, tuned, six, six-tuned} × "
            "{trainer.flags, trainer.yaml}` (8) |") in out
    assert "**8 changed, 0 added, 0 removed, 44 identical (of 52 renders).**" in out
    assert "<details>" not in out and len(out) < 1000
    # an edit beyond flags: a path row apart from the flag rows, and its renders' diffs folded
    root2 = make_repo(tmp_path / "repo2", [edited('"RAIDEN_WEIGHT_SYNC_PIPELINE_GROUP_SIZE": "16",\n    "ENABLE_MULTI',
                                                  '"RAIDEN_WEIGHT_SYNC_PIPELINE_GROUP_SIZE": "32",\n    "ENABLE_MULTI')])
    code, out, _ = run(root2, "diff", "--rev", "HEAD~1", "--format", "markdown")
    assert "| flag | change | renders |" not in out and "| other change | renders |" in out
    assert '.env[name=RAIDEN_WEIGHT_SYNC_PIPELINE_GROUP_SIZE].value: "16" → "32"` | `rl/qwen35_397b_256_v7x: ' in out
    assert out.count("<details>") == out.count("</details>") == 4  # trainer.yaml of each variant


@pytest.mark.parametrize("argv, code, message", [
    (["diff", "--rev", "no-such-branch"], 1, "error[E0615]: --rev no-such-branch: no such commit"),
    (["diff", "--rev=--all"], 1, "error[E0615]: --rev --all: not a revision"),
    (["diff", "--rev", "HEAD", "--against", "default"], 2, "--against compares variants"),
    (["diff", "--rev", "HEAD", "nope"], 2, "no recipe 'nope' in the work tree or at HEAD"),
    (["diff", "--rev", "HEAD", "--variant", "nope"], 1, "error[E0607]: no recipe compared has a variant 'nope'"),
    (["diff", "rl/qwen35_397b_256_v7x"], 2, "diff needs one RECIPE and --variant A"),
])
def test_bad_requests(tmp_path, run, argv, code, message):
    root = make_repo(tmp_path / "repo", [])
    got, _, err = run(root, *argv)
    assert got == code and message in err and "Traceback" not in err


def test_outside_a_repository(tmp_path, run):
    (tmp_path / "rcp.toml").write_text("")
    code, _, err = run(tmp_path, "diff", "--rev", "HEAD")
    assert code == 1 and "error[E0615]: --rev HEAD: the workspace is not in a git repository" in err


def test_a_revision_that_does_not_compile_is_reported_as_that_revision(tmp_path, run):
    root = make_repo(tmp_path / "repo", [{"recipes/bad.rcp": "X = Y\n"}, {"recipes/bad.rcp": "X = 1\n"}])
    code, out, err = run(root, "diff", "--rev", "HEAD~1")
    assert code == 1
    assert "HEAD~1:recipes/bad.rcp:1:5: error[E0101]: unknown name 'Y'" in err
    assert " 1 | X = Y" in err  # quoted from the revision, not from the work tree
    assert "52 identical" in out  # the recipes that compile are still compared


@pytest.mark.parametrize("files, expected", [
    ({"recipes/...rcp": 'variant("default")\n'}, "HEAD~1:recipes/...rcp: error[E0905]: recipe name '..'"),
    ({"recipes/A.rcp": 'variant("default")\n', "recipes/a.rcp": 'variant("default")\n'},
     "error[E0903]: two recipes are named 'A'"),
])
def test_a_recipe_name_refused_at_the_revision_is_reported_as_that_revision(tmp_path, run, files, expected):
    """Errors found while listing the revision's recipes (names that cannot be output
    paths) carry the revision too: ``REV:path`` for a file, a note naming it otherwise."""
    root = make_repo(tmp_path / "repo", [files, {name: "" for name in files}])
    for name in files:
        git(root, "rm", "-q", name)
    code, out, err = run(root, "diff", "--rev", "HEAD~1")
    assert code == 1
    assert expected in err
    assert "HEAD~1:recipes/" in err or "note: at revision HEAD~1" in err


def test_workspace_in_a_subdirectory_and_a_schema_outside_the_repository(tmp_path, run):
    outside = tmp_path / "shared" / "base.yml"
    outside.parent.mkdir()
    outside.write_text("steps: 1\n")
    root = tmp_path / "mono"
    (root / "ws" / "recipes").mkdir(parents=True)
    (root / "other.txt").write_text("not part of the workspace\n")
    (root / "ws" / "rcp.toml").write_text(f'maxtext_base = "{os.path.relpath(outside, root / "ws")}"\n')
    (root / "ws" / "recipes" / "r.rcp").write_text('F = maxtext_flags({"steps": 5})\nflag_file(name = "f", flags = F)\n')
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    (root / "ws" / "recipes" / "r.rcp").write_text('F = maxtext_flags({"steps": 6})\nflag_file(name = "f", flags = F)\n')
    code, out, err = run(root / "ws", "diff", "--rev", "HEAD", "--format", "json")
    assert code == 0, err
    (d,) = json.loads(out)["renders"]
    assert d["flags"] == [{"key": "steps", "old": "5", "new": "6"}]


def test_own_files_that_differ_are_named_in_the_header(tmp_path):
    root = tmp_path / "repo"
    pkg = root / "compiler" / "rcpc"
    pkg.mkdir(parents=True)
    (pkg / "a.py").write_text("A = 1\n")
    (pkg / "b.py").write_text("B = 1\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    rev = revision.find(root, "HEAD")
    assert revision.own_files_differ(rev, pkg) == []
    (pkg / "b.py").write_text("B = 2\n")
    (pkg / "c.py").write_text("C = 1\n")
    assert revision.own_files_differ(rev, pkg) == ["compiler/rcpc/b.py", "compiler/rcpc/c.py"]
    report = review.RevisionDiff(rev, ["compiler/rcpc/b.py", "compiler/rcpc/c.py"], [], [])
    assert report.header()[2] == ("rcpc's own files differ at HEAD (2: compiler/rcpc/b.py, compiler/rcpc/c.py); "
                                  "HEAD is built by the running rcpc all the same")
    assert "rcpc's own files differ at `HEAD` (2), but both sides are built by the running rcpc" in report.markdown()


# colour ---------------------------------------------------------------------------------------
def test_colour_needs_a_terminal_and_no_NO_COLOR(monkeypatch):
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert review.stdout_color()
    monkeypatch.setenv("NO_COLOR", "1")
    assert not review.stdout_color()


def test_changed_words_of_a_long_line_are_highlighted():
    line = "python3 -m MaxText.train " + " ".join(f"flag_{i}={i}" for i in range(60))
    assert len(line) > 600
    diff = f"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-{line}\n+{line.replace('flag_30=30', 'flag_30=31')}\n"
    out = review.color_diff(diff)
    removed, added = out.splitlines()[3:5]
    assert f"{review.REVERSE}30{review.RESET}{review.RED}" in removed
    assert f"{review.REVERSE}31{review.RESET}{review.GREEN}" in added
    assert removed.count(review.REVERSE) == added.count(review.REVERSE) == 1  # only the changed word


# a hostile revision ---------------------------------------------------------------------------
def commit_tree(root: Path, entries: list[tuple[str, str, bytes]]) -> str:
    """A commit whose tree holds ``entries`` (mode, path, content) as written, with
    ``git mktree``, which takes names ``git add`` would refuse (``..``, a path twice)."""
    def tree(items) -> str:
        lines, subs = [], {}
        for mode, path, data in items:
            head, _, rest = path.partition("/")
            if rest:
                subs.setdefault(head, []).append((mode, rest, data))
            else:
                oid = subprocess.run(["git", "-C", str(root), "hash-object", "-w", "--stdin"], input=data,
                                     capture_output=True, check=True).stdout.decode().strip()
                lines.append(f"{mode} blob {oid}\t{head}")
        lines += [f"040000 tree {tree(sub)}\t{name}" for name, sub in subs.items()]
        return subprocess.run(["git", "-C", str(root), "mktree"], input="".join(x + "\n" for x in lines),
                              capture_output=True, check=True, text=True).stdout.strip()

    return git(root, "commit-tree", tree(entries), "-m", "crafted").strip()


def outside_state(tmp_path: Path, dest: Path) -> dict:
    return {p: p.read_bytes() if p.is_file() and not p.is_symlink() else os.readlink(p) if p.is_symlink() else None
            for p in tmp_path.rglob("*") if dest not in p.parents and p != dest and ".git" not in p.parts}


PART = st.sampled_from(["..", ".", ".git", ".GIT", "a", "b", "rcp.toml", ""])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["100644", "100755", "120000"]), st.lists(PART, min_size=1, max_size=4),
                          st.sampled_from(["../outside", "/", "a", "..", "../../outside/x"])), max_size=6))
@example([("120000", ["a"], "../outside"), ("100644", ["a", "x"], "")])   # a symlink, then a file through it
@example([("100644", ["..", "pwned.txt"], "")])                            # the reported '..' tree entry
def test_a_revision_writes_nothing_outside_its_directory(tmp_path_factory, monkeypatch, entries):
    """``git mktree`` takes a tree entry ``..`` (and a path twice, a symlink and a directory of
    one name): ``rcpc diff --rev`` wrote ``/tmp/pwned.txt`` through one, and a file through a
    symlink the revision held. Whatever the tree, materialising it writes inside its directory
    only, or refuses (E0615) as ``git checkout`` does; what it writes is the tree."""
    tmp = tmp_path_factory.mktemp("rev")
    (tmp / "outside").mkdir()
    (tmp / "outside" / "x").write_text("mine\n")
    dest = tmp / "a" / "dest"
    dest.mkdir(parents=True)
    before = outside_state(tmp, dest)
    files = [(mode, f"{n:040x}", len(target), "/".join(parts)) for n, (mode, parts, target) in enumerate(entries)]
    monkeypatch.setattr(revision, "_blobs", lambda rev, oids: (files[int(o, 16)][3].encode() if files[int(o, 16)][0]
                                                              != "120000" else entries[int(o, 16)][2].encode()
                                                              for o in oids))
    rev = revision.Revision("crafted", "0" * 40, tmp, "")
    try:
        revision._write(rev, dest, files)
        refused = False
    except CompileError as exc:
        (d,) = exc.diagnostics
        assert d.code == "E0615" and "git would not check out" in d.message
        refused = True
    assert outside_state(tmp, dest) == before
    safe = all(p not in ("", ".", "..") and p.lower() != ".git" for _, parts, _ in entries for p in parts)
    names = ["/".join(parts) for _, parts, _ in entries]
    prefixes = {"/".join(parts[:i]) for _, parts, _ in entries for i in range(1, len(parts))}
    if safe and len(set(names)) == len(names) and not prefixes & set(names):
        assert not refused
        for (mode, parts, target), (_, _, _, name) in zip(entries, files):
            p = dest / name
            assert os.readlink(p) == target if mode == "120000" else p.read_text() == name
    else:
        assert refused


def test_a_crafted_revision_and_a_huge_blob(tmp_path, run):
    """End to end, with trees ``git mktree`` made: a ``..`` entry and a file through a symlink
    are refused (E0615), nothing written outside; a 300 MB blob is neither read into memory
    nor written (a sparse file), and a recipe over the size limit is E0803 at the revision."""
    root = make_repo(tmp_path / "repo", [])
    (tmp_path / "outside").mkdir()
    base = [(m, p, (root / p).read_bytes()) for p in ("rcp.toml", RL) for m in ("100644",)]
    for name, extra in [("dotdot", [("100644", "../pwned.txt", b"x")]),
                        ("through", [("120000", "zz", str(tmp_path / "outside").encode()),
                                     ("100644", "zz/pwned.txt", b"x")])]:
        git(root, "tag", name, commit_tree(root, base + extra))
        code, out, err = run(root, "diff", "--rev", name)
        assert code == 1 and "error[E0615]" in err and "git would not check out" in err, err
        assert list((tmp_path / "outside").iterdir()) == [] and not (tmp_path / "pwned.txt").exists()
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.truncate(300 << 20)
    oid = git(root, "hash-object", "-w", str(big)).strip()
    big.unlink()
    git(root, "tag", "huge", commit_tree(root, base + [("100644", "recipes/huge.rcp", b"#" * (5 << 20))]))
    code, out, err = run(root, "diff", "--rev", "huge")
    assert code == 1 and "huge:recipes/huge.rcp:1:1: error[E0803]" in err, err
    asked = []
    real = revision._blobs
    with pytest.MonkeyPatch.context() as m:
        m.setattr(revision, "_blobs", lambda rev, oids: asked.extend(oids) or real(rev, oids))
        dest = tmp_path / "dest"
        dest.mkdir()
        revision._write(revision.find(root, "HEAD"), dest, [("100644", oid, 300 << 20, "data/big.bin")])
    assert oid not in asked  # never read from git
    assert (dest / "data" / "big.bin").stat().st_size == 300 << 20
    assert (dest / "data" / "big.bin").stat().st_blocks == 0  # sparse: not a byte written


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(["absolute-outside", "absolute-inside", "relative-inside", "relative-outside"]),
       key=st.sampled_from(["kube_schemas", "maxtext_schema"]))
@example(where="absolute-outside", key="kube_schemas")  # the reported case: rewritten to a wrong path
def test_a_configured_schema_is_read_where_rcp_toml_says_at_any_spelling(where, key, tmp_path_factory, run):
    """``kube_schemas`` / ``maxtext_schema`` spelled absolute or relative, inside or outside the
    repository: the revision reads the file its rcp.toml names (the revision's copy when it is in
    the repository), so an unchanged tree is no change."""
    from rcpc.domain.workspace import SCHEMA_DIR

    tmp = tmp_path_factory.mktemp("rev")
    root = tmp / "repo"
    shipped = SCHEMA_DIR / "jobset.json" if key == "kube_schemas" else REPO.parent / "shared" / "data" / "maxtext" / "base.yml"
    name = shipped.name
    inside, outside = root / "schemas" / name, tmp / "elsewhere" / name
    target = outside if where.endswith("outside") else inside
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(shipped, target)
    spelled = str(target) if where.startswith("absolute") else os.path.relpath(target, root)
    value = f'["{spelled}"]' if key == "kube_schemas" else f'"{spelled}"'
    make_repo(root, [{"rcp.toml": f'recipe_dirs = ["recipes"]\nlibrary_dirs = ["recipes/lib"]\n{key} = {value}\n'}])
    code, out, err = run(root, "diff", "--rev", "HEAD", "--format", "json")
    assert code == 0, err
    assert {d["status"] for d in json.loads(out)["renders"]} == {"identical"}
