"""The hooks of ``.pre-commit-hooks.yaml`` run by the real ``pre-commit`` on a temporary git
repository, from a snapshot of this checkout (its work tree as it is, committed in a
temporary repository, as ``pre-commit try-repo`` does): pre-commit installs rcpc from it
into its own environment (from PyPI, once for all the hooks) and runs each hook."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from rcpc.core.fmt import format_source

REPO = Path(__file__).resolve().parent.parent
TOML = 'recipe_dirs = ["recipes"]\nlibrary_dirs = ["recipes/lib"]\n'
# it loads rcpc's standard library: pre-commit installs rcpc as a package (not editable), so
# rcpc-check passes only where the package ships it (pyproject.toml's package data)
UNFORMATTED = ('load("@rcpc//maxtext_tpu.rcp", "ACCELERATOR_LABEL")\nV = 1\nS = 2\n'
               'manifest(name="m", apiVersion="v1", kind="ConfigMap", data={"v": str(V), "k": ACCELERATOR_LABEL})\n')
GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def snapshot(dest: Path) -> str:
    """This checkout's work tree (tracked and untracked files, ignored ones left out)
    committed in a new repository at ``dest``; returns the commit."""
    files = git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for f in filter(None, files):
        src = REPO / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-qm", "snapshot")
    return git(dest, "rev-parse", "HEAD").strip()


def test_hooks_file_names_the_three_hooks():
    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"rcpc-fmt", "rcpc-lint", "rcpc-check"}
    assert hooks["rcpc-check"]["pass_filenames"] is False


def test_precommit_runs_the_hooks(tmp_path):
    rev = snapshot(tmp_path / "rcpc")
    repo = tmp_path / "project"
    (repo / "recipes/lib").mkdir(parents=True)
    (repo / "rcp.toml").write_text(TOML)
    (repo / "recipes/r.rcp").write_text(UNFORMATTED)
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{
        "repo": str(tmp_path / "rcpc"), "rev": rev,
        "hooks": [{"id": "rcpc-fmt"}, {"id": "rcpc-lint"}, {"id": "rcpc-check"}]}]}))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "NO_COLOR": "1"}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pre_commit", "run", *args, "--all-files", "--color", "never"],
                              cwd=repo, env=env, capture_output=True, text=True)

    first = run()
    # fmt rewrote the file and failed; lint found the unused constant; check passed
    assert first.returncode == 1, first.stdout + first.stderr
    out = first.stdout
    assert "rcpc fmt" in out and "files were modified by this hook" in out
    assert (repo / "recipes/r.rcp").read_text() == format_source(UNFORMATTED, "recipes/r.rcp")
    assert "warning[L0001]: constant 'S' is assigned but never used" in out
    lines = {line.split(".")[0]: line for line in out.splitlines() if line.startswith("rcpc ")}
    assert lines["rcpc fmt"].endswith("Failed") and lines["rcpc lint"].endswith("Failed")
    assert lines["rcpc check"].endswith("Passed")

    # fixed: every hook passes
    (repo / "recipes/r.rcp").write_text(format_source(UNFORMATTED.replace("S = 2\n", ""), "recipes/r.rcp"))
    git(repo, "add", "-A")
    clean = run()
    assert clean.returncode == 0, clean.stdout + clean.stderr

    # a recipe that does not compile fails rcpc-check, with the diagnostic
    (repo / "recipes/r.rcp").write_text('manifest(name = "m", apiVersion = "v1", kind = "ConfigMap", data = {"v": W})\n')
    git(repo, "add", "-A")
    broken = run("rcpc-check")
    assert broken.returncode == 1
    assert "error[E0101]: unknown name 'W'" in broken.stdout
