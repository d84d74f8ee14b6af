"""The user cache is trusted only when no other user can write it (issue 37, kind 4: trust of
what another user can write). ``rcpc`` in the cache directory and every directory rcpc uses
under it must be a real directory (not a symbolic link) owned by the user and not writable by
group or others; otherwise rcpc runs without its caches and says so once (``W0960``). Each
record is read only when it is a regular file of the user's that no one else can write: a
record another user planted (the reported case: a broken ``rcpc check`` printed ok) is a miss.

Owners are changed with ``os.chown`` (the tests run as root) and by making ``os.getuid``
report another user."""

from __future__ import annotations

import marshal
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.build import replay
from rcpc.__main__ import run
from rcpc.core import store, usercache
from rcpc.core.source import Source
from rcpc.domain.kube import schemacache
import storefiles
from test_replay import settle

OTHER = 4242  # a uid that is not ours
BROKEN = "X = Y\n"


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """A fresh process's view: no directory judged yet, nothing warned about."""
    monkeypatch.setattr(usercache, "_TRUST", {})
    monkeypatch.setattr(usercache, "_WARNED", [])


@pytest.fixture
def base(tmp_path, monkeypatch):
    """``XDG_CACHE_HOME``, holding ``rcpc`` as rcpc makes it (mode 0700)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)
    usercache.make_dirs(str(tmp_path / "cache" / "rcpc"))
    return tmp_path / "cache"


@pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mode=st.integers(0, 0o7777), which=st.sampled_from(["rcpc", "rcpc/ast", "rcpc/replay"]),
       owner=st.sampled_from(["me", "other uid", "getuid reports another"]))
@example(mode=0o700, which="rcpc", owner="me")
@example(mode=0o775, which="rcpc", owner="me")
@example(mode=0o755, which="rcpc", owner="other uid")
def test_a_directory_is_trusted_only_when_no_one_else_can_write_it(base, capsys, mode, which, owner):
    """A property over the mode bits and the owner of each directory rcpc uses: the cache is
    used exactly when the directory is the user's and not writable by group or others; when
    it is not, the caches are off and one W0960 says why."""
    usercache._TRUST.clear()
    usercache._WARNED.clear()
    directory = base / which
    directory.mkdir(exist_ok=True, mode=0o700)
    os.chmod(directory, mode)
    os.chown(directory, OTHER if owner == "other uid" else 0, -1)
    uid = pytest.MonkeyPatch()
    if owner == "getuid reports another":
        uid.setattr(os, "getuid", lambda: OTHER)
    try:
        mine = owner == "me"
        trusted = mine and not mode & 0o022
        part = which.split("/")[1:]
        found = usercache.cache_dir(*part)
        assert (found is not None) == trusted
        assert (usercache.cache_dir(*part) is not None) == trusted  # judged once, warned once
        err = capsys.readouterr().err
        assert err.count("warning[W0960]") == (0 if trusted else 1), err
        if not trusted:
            assert ("owned by another user" in err) == (not mine)
            assert ("writable by group or others" in err) == (mine and bool(mode & 0o022))
    finally:
        uid.undo()
        os.chown(directory, 0, -1)
        os.chmod(directory, 0o700)


@pytest.mark.parametrize("which", ["rcpc", "rcpc/ast", "rcpc/store", "rcpc/replay"])
def test_a_symlinked_cache_directory_is_not_followed(base, tmp_path, capsys, which):
    """A cache directory that is a symbolic link, even to a directory of the user's own mode
    0700, is not used (another user who could make the link chose where it leads); the
    directory holding ``rcpc`` may be one (a user's ~/.cache on another disk)."""
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    link = base / which
    if link.exists():
        os.rmdir(link)
    link.symlink_to(target)
    usercache._TRUST.clear()  # as a new process finds it
    part = which.split("/")[1:]
    assert usercache.cache_dir(*part) is None
    assert "is a symbolic link" in capsys.readouterr().err
    with pytest.raises(PermissionError):
        usercache.make_dirs(str(base / "rcpc" / "ast" / "ab") if which == "rcpc/ast" else str(link / "x"))


def test_the_directory_holding_the_cache_may_be_a_symlink(tmp_path, monkeypatch):
    real = tmp_path / "disk"
    real.mkdir()
    (tmp_path / "cache").symlink_to(real)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    usercache.make_dirs(str(tmp_path / "cache" / "rcpc" / "ast"))
    assert usercache.cache_dir("ast") == str(tmp_path / "cache" / "rcpc" / "ast")
    assert stat.S_IMODE(os.stat(real / "rcpc" / "ast").st_mode) == 0o700 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_what_rcpc_writes_it_trusts(cached_ws, monkeypatch):
    """Under a umask that lets the group write (002), rcpc's own directories (0700) and files
    (0600: every one, the trim's stamp and lark's grammar tables included, which had the
    umask's mode, found by a user trial) are still trusted: the cache works and replays."""
    from rcpc.core.syntax.parser import ReferenceParser

    old = os.umask(0o002)
    try:
        monkeypatch.setattr(replay, "RACY_NS", 0)
        assert run(["build"]) == 0
        settle(cached_ws)
        assert run(["build"]) == 0
        assert replay.serve(["build"], replay.stderr_color()) == 0
        ReferenceParser()  # lark's tables saved in the cache
    finally:
        os.umask(old)
    root = cached_ws.parent / "cache" / "rcpc"
    files = [p.name for p in root.rglob("*") if p.is_file()]
    assert ".trimmed" in files and any(n.startswith("grammar-") for n in files), files
    for p in root.rglob("*"):
        if p.is_dir():
            assert stat.S_IMODE(p.stat().st_mode) == 0o700, p
        else:
            assert not stat.S_IMODE(p.stat().st_mode) & 0o077, p


def test_an_untrusted_cache_runs_uncached_with_the_same_result_and_one_warning(cached_ws, tmp_path, monkeypatch,
                                                                                capsys):
    root = tmp_path / "cache" / "rcpc"
    root.mkdir(parents=True, mode=0o700)
    os.chmod(root, 0o777)
    assert run(["check"]) == 0
    err = capsys.readouterr().err
    assert err.count("warning[W0960]") == 1 and "mode 0777" in err
    assert not any(root.iterdir())  # nothing written to it
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    assert run(["check"]) == 0
    assert capsys.readouterr().err == err.split("\n", 2)[2]  # the warning and its help line aside


WORKERS = """
from rcpc.build import parallel
parallel.MIN_PARALLEL_BYTES = 0
from rcpc.__main__ import exit_now, run
exit_now(run(["check", "-j", "2"]))
"""


def test_the_warning_is_said_once_whatever_the_workers(cached_ws, tmp_path):
    for k in range(6):
        (cached_ws / "recipes" / f"w{k}.rcp").write_text(f'X = {k}\nvariant("default")\n')
    os.chmod(tmp_path / "cache", 0o700) if (tmp_path / "cache").exists() else (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "rcpc").mkdir(mode=0o700)
    os.chown(tmp_path / "cache" / "rcpc", OTHER, -1)
    r = subprocess.run([sys.executable, "-c", WORKERS], cwd=cached_ws, env=dict(os.environ), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stderr.count("warning[W0960]") == 1, r.stderr


# records another user planted ----------------------------------------------------------------
def _plant(path: Path, data: bytes, how: str) -> None:
    """Put ``data`` at ``path`` as another user would leave it."""
    if path.exists() or path.is_symlink():
        path.unlink()
    if how == "symlink":
        forged = path.with_name(path.name + ".forged")
        forged.write_bytes(data)
        os.chmod(forged, 0o600)
        path.symlink_to(forged.name)
        return
    path.write_bytes(data)
    os.chmod(path, 0o644 if how == "other uid" else 0o664)
    if how == "other uid":
        os.chown(path, OTHER, -1)


def _forged_record(record: Path, recipe: Path) -> bytes:
    """The replay record ``record`` rewritten to match ``recipe`` as it is now: what another
    user who can read the workspace computes."""
    fmt, key, files, *rest = replay.read_record(str(record))
    files = [(p, *replay._stat(p), None) if p == str(recipe) else (p, *st) for p, *st in files]
    payload = marshal.dumps((fmt, key, files, *rest))
    return replay._checksum(payload) + payload


HOW = ["other uid", "group writable", "symlink"]


@pytest.mark.parametrize("how", HOW)
def test_a_planted_replay_record_does_not_make_a_broken_check_ok(cached_ws, monkeypatch, capsys, how):
    """The reported case: a record planted by another user replayed "ok" for a broken
    recipe."""
    monkeypatch.setattr(replay, "RACY_NS", 0)
    assert run(["check"]) == 0
    settle(cached_ws)
    assert run(["check"]) == 0
    (record,) = (cached_ws.parent / "cache" / "rcpc" / "replay").iterdir()
    recipe = cached_ws / "recipes" / "r.rcp"
    recipe.write_text(recipe.read_text() + BROKEN)
    settle(cached_ws)
    forged = _forged_record(record, recipe)
    _plant(record, forged, how)
    capsys.readouterr()
    assert replay.serve(["check"], replay.stderr_color()) is None
    assert run(["check"]) == 1 and "error[E0101]" in capsys.readouterr().err


def _forge_build_entries(cache: Path, good: str, bad: str) -> int:
    """Rewrite the build entries that record the digest ``good`` to record ``bad``, as
    well-formed entries: what another user who can read the workspace computes. Returns how
    many."""
    forged = 0
    for key, _, data in storefiles.rows(cache, "build"):
        text = storefiles.payload("build", key, data)
        if good.encode() in text:
            storefiles.rewrite(cache, key, store.entry("build", key, text.replace(good.encode(), bad.encode())))
            forged += 1
    return forged


def _break_and_forge(cached_ws: Path) -> None:
    """Check the workspace (its build entries written), break its recipe, and forge the
    entries to pass the broken recipe."""
    import hashlib

    assert run(["check"]) == 0
    recipe = cached_ws / "recipes" / "r.rcp"
    good = hashlib.blake2b(recipe.read_bytes(), digest_size=32).hexdigest()
    recipe.write_text(recipe.read_text() + BROKEN)
    bad = hashlib.blake2b(recipe.read_bytes(), digest_size=32).hexdigest()
    assert _forge_build_entries(cached_ws.parent / "cache", good, bad)


@pytest.mark.parametrize("name", [store.DATABASE, store.DATABASE + "-wal", store.DATABASE + "-shm"])
@pytest.mark.parametrize("how", HOW)
def test_a_planted_build_cache_entry_does_not_make_a_broken_check_ok(cached_ws, monkeypatch, capsys, how, name):
    """The store's database, or its -wal or -shm file (SQLite reads pages from the log), left
    by another user with entries that pass a broken recipe: not read."""
    _break_and_forge(cached_ws)
    storefiles.plant(cached_ws.parent / "cache", how, name)
    capsys.readouterr()
    assert run(["check", "-j", "1"]) == 1 and "error[E0101]" in capsys.readouterr().err


def test_a_forged_build_entry_in_a_trusted_store_is_believed(cached_ws, capsys):
    """The canary of the test above: the same forgery, left as the user's own, passes the
    broken recipe (the trust rules, not the forgery's form, make the difference)."""
    _break_and_forge(cached_ws)
    assert run(["check", "-j", "1"]) == 0


@pytest.mark.parametrize("how", HOW)
def test_planted_validation_entries_are_misses(base, how):
    key = "ab" * 32
    schemacache.store(key, schemacache.NO_FINDINGS)
    assert schemacache.lookup(key) == schemacache.NO_FINDINGS
    store.flush()
    storefiles.plant(base, how)
    assert schemacache.lookup(key) is None


def test_a_planted_grammar_cache_is_not_handed_to_lark(base):
    """lark's grammar cache is a pickle: one another user wrote is never loaded."""
    from rcpc.core.syntax import parser

    path = parser._cache_path("start: \"x\"\n", {"parser": "lalr"})
    assert path is not None
    Path(path).write_bytes(b"not ours")
    os.chown(path, OTHER, -1)
    assert parser._cache_path("start: \"x\"\n", {"parser": "lalr"}) is None
    os.chown(path, 0, -1)
    os.chmod(path, 0o600)
    assert parser._cache_path("start: \"x\"\n", {"parser": "lalr"}) == path
