"""Crash-atomic output generations (issue "Never lose a user's file", kinds 5 and 10): a build
killed outright (SIGKILL) at any syscall that changes the file system leaves a reader seeing
exactly the old or exactly the new complete output, never a user's file lost, and the next
build cleans up and succeeds; concurrent builds through any spelling of the output
directory take one lock.

The kills are real: ``strace -e inject=SYSCALL:signal=KILL:when=N`` kills rcpc on entering
the N-th call of SYSCALL, for every N until the build completes, for every syscall that
creates, renames or removes a directory entry (``mkdir``, ``link``, ``symlink``, ``rename``,
``unlink``, ``rmdir`` and their ``*at`` forms) and ``flock``. The file writes in between only
fill the new generation, which no reader can reach before the switch."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import area_leftovers, output_tree

SYSCALLS = ("mkdir", "mkdirat", "link", "linkat", "symlink", "symlinkat", "rename", "renameat", "renameat2",
            "unlink", "unlinkat", "rmdir", "flock")
RECIPE = '''N = param(int, default = {n})
manifest(name = "m", apiVersion = "v1", kind = "K", data = {{"count": N}})
variant("x")
variant("{second}", set = {{"N": {n} + 1}})
'''
OLD = {"recipes/a.rcp": RECIPE.format(n=1, second="y"),
       "recipes/c.rcp": RECIPE.format(n=3, second="y")}
NEW = {"recipes/a.rcp": RECIPE.format(n=5, second="y"),       # variant x changed, y carried over
       "recipes/sub/d.rcp": RECIPE.format(n=4, second="z")}   # new (a new link); c deleted
USER = {"notes.txt": b"mine\n", ".keep.old-1/f": b"old-looking\n", ".keep.tmp-2/f": b"tmp-looking\n"}


def rcpc(root: Path, *argv: str, strace: list[str] | None = None) -> subprocess.CompletedProcess:
    """``rcpc ARGV -j 1`` in ``root``, with the build cache in ``root/../cache``: once warm,
    every run makes the same syscalls (no cache entry is written) and starts fast (a cache
    hit imports no compiler)."""
    env = {k: v for k, v in os.environ.items() if k != "RCPC_NO_CACHE"}
    env["XDG_CACHE_HOME"] = str(root.parent / "cache")
    cmd = [sys.executable, "-m", "rcpc", *argv, "-j", "1"]
    return subprocess.run([*strace, *cmd] if strace else cmd, cwd=root, env=env, capture_output=True, text=True)


def write(root: Path, files: dict) -> None:
    for path, text in files.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text) if isinstance(text, str) else p.write_bytes(text)


def user_files(out: Path) -> dict:
    return {path: (out / path).read_bytes() for path in USER if (out / path).is_file()}


def clean(out: Path) -> bool:
    """rcpc's area holds nothing but the current generation, the outputs it uses, the marker
    and the lock, and the output directory the links of that generation and the user's
    files."""
    links = {p.name for p in out.iterdir() if p.is_symlink()}
    return (not area_leftovers(out) and all(os.readlink(out / name) == f".rcpc/current/{name}" for name in links)
            and {p.name for p in out.iterdir()} == links | {".rcpc", "notes.txt", ".keep.old-1", ".keep.tmp-2"})


def syscall_counts(root: Path, argv: list[str], restore) -> dict:
    """How often the build calls each syscall of SYSCALLS (a traced run with a warm cache,
    nothing injected)."""
    assert rcpc(root, *argv).returncode == 0   # the cache warm
    restore()
    log = root.parent / "strace.log"
    r = rcpc(root, *argv, strace=["strace", "-qq", "-o", str(log), "-e", "trace=" + ",".join(SYSCALLS)])
    assert r.returncode == 0, r.stderr
    names = re.findall(r"^(\w+)\(", log.read_text(), re.M)
    return {name: names.count(name) for name in SYSCALLS if name in names}


@pytest.mark.parametrize("scenario", ["first build", "rebuild"])
def test_a_kill_at_any_syscall_leaves_the_old_or_the_new_output_whole(tmp_path, scenario, monkeypatch, capsys):
    """``rebuild`` builds variant x of every recipe: one changed (its variant y carried
    over), one deleted (its output and link removed), one new (a new link)."""
    from rcpc.cli import main

    root = tmp_path / "ws"
    write(root, {"rcp.toml": "", **OLD})
    out = root / "rcpc-out"
    write(out, USER)
    if scenario != "first build":
        assert rcpc(root, "build").returncode == 0
    old = output_tree(out)
    snapshot = tmp_path / "snapshot"
    shutil.copytree(out, snapshot, symlinks=True)
    (root / "recipes" / "c.rcp").unlink()
    write(root, NEW)
    argv = ["build", "--variant", "x"]

    def restore():
        shutil.rmtree(out)
        shutil.copytree(snapshot, out, symlinks=True)

    counts = syscall_counts(root, argv, restore)
    new = output_tree(out)
    assert new != old and user_files(out) == USER and clean(out)
    if scenario == "rebuild":
        assert new["a/y/m.yaml"] == old["a/y/m.yaml"] and "c/x/m.yaml" not in new and "sub/d/x/m.yaml" in new
    monkeypatch.chdir(root)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)
    seen = {"old": 0, "new": 0}
    for syscall in counts:
        n = 0
        while True:
            n += 1
            restore()
            r = rcpc(root, *argv, strace=["strace", "-f", "--seccomp-bpf", "-qq", "-o", os.devnull,
                                          "-e", f"inject={syscall}:signal=KILL:when={n}"])
            got = output_tree(out)
            assert got in (old, new), f"a mixed output after a kill at {syscall} #{n}"
            assert user_files(out) == USER
            if r.returncode == 0:   # no kill: the build ran to the end
                assert n == counts[syscall] + 1 and got == new
                break
            assert r.returncode == -9 and n <= counts[syscall], (syscall, n, r.returncode, r.stderr)
            seen["new" if got == new else "old"] += 1
            assert main(argv) == 0, capsys.readouterr().err   # the next build cleans up and succeeds
            assert output_tree(out) == new and user_files(out) == USER and clean(out), (syscall, n)
    assert seen["old"] and (seen["new"] or scenario == "first build")   # before and after the switch
    assert {"rename", "symlink", "mkdir"} <= set(counts) and (scenario == "first build" or "linkat" in counts or "link" in counts)


SPELLINGS = ["out", "./out", "out/", "out/.", "{root}/out", "link", "link/", "{root}/link", "dirlink/out",
             "sub/../out", "./link/."]


def test_concurrent_builds_through_any_spelling_take_one_lock(tmp_path, monkeypatch, capsys):
    """The reported fault: the lock was taken on the path as written, so builds through a
    symlink to the output directory ran at once and 5 of 24 failed. 24 builds, each writing
    its own ``--set`` output of recipe a through one of many spellings of the output
    directory, must all succeed and leave one complete generation: the earlier output of
    every recipe, and the ``custom`` output of one of the 24."""
    from rcpc.cli import main

    root = tmp_path / "ws"
    write(root, {"rcp.toml": "", **OLD})
    (root / "sub").mkdir()
    (root / "link").symlink_to("out")
    (root / "dirlink").symlink_to(".")
    assert rcpc(root, "build", "-o", "out").returncode == 0
    shutil.copytree(root / "out", tmp_path / "ref", symlinks=True)
    procs = [subprocess.Popen([sys.executable, "-m", "rcpc", "build", "a", "--set", f"N={i}", "-j", "1",
                               "-o", SPELLINGS[i % len(SPELLINGS)].format(root=root)],
                              cwd=root, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(24)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    got = output_tree(root / "out")
    (n,) = re.findall(r"count: (\d+)", got["a/custom/m.yaml"].decode())
    monkeypatch.chdir(root)
    assert main(["build", "a", "--set", f"N={n}", "-o", str(tmp_path / "ref")]) == 0
    assert got == output_tree(tmp_path / "ref") and len(got) == 5 and 0 <= int(n) < 24
    assert not area_leftovers(root / "out")
