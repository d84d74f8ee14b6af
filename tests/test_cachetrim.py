"""The user cache stays under its size limit (:mod:`rcpc.core.cachetrim`): the least recently
used files go first, down to 80% of the limit, at most once an hour; nothing outside the
cache and no symlink's target is touched; and a build after any trim renders what a build
without caches renders."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.cli import main
from rcpc.core import cachetrim

REPO = Path(__file__).resolve().parents[1]
NOW = 2_000_000_000.0


def _write(path: Path, size: int, age: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (NOW - age, NOW - age))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.tuples(st.sampled_from(["ast", "builds/ab", "schema/0f", "replay", ".", "store"]),
                                st.integers(0, 4000), st.integers(0, 10 ** 6), st.booleans()),
                      max_size=25),
       limit=st.integers(1, 40000))
# a file in the store's directory named as the trim named a store entry ('<database>#<key hex>'):
# it was taken for an entry (its "key" 0 not hex: ValueError out of the trim; 10: not removed)
@example(files=[("store", 10, 5, False), ("store", 20, 4, False), ("ast", 5, 1, False)], limit=1)
def test_trim_removes_the_least_recently_used_down_to_the_mark(tmp_path_factory, files, limit):
    """Files of any name (one the store's database could be, ``store/store.db#10``, too) go
    least recently used first, each as a file."""
    base = tmp_path_factory.mktemp("c")
    root, outside = base / "rcpc", base / "outside"
    outside.mkdir()
    (outside / "keep").write_bytes(b"user file")
    made = []
    for i, (sub, size, age, tmp) in enumerate(files):
        name = f"store.db#{i * 10}" if sub == "store" else f"e{i}"
        path = root / sub / (f"{name}.123.tmp" if tmp else name)
        _write(path, size, age)
        made.append((NOW - age, size, str(path)))
    root.mkdir(exist_ok=True)
    (root / "link").symlink_to(outside / "keep")
    removed = cachetrim.trim(str(root), limit, NOW)
    stale = [p for used, _, p in sorted(made) if p.endswith(".tmp") and NOW - used >= cachetrim.STALE_TMP_S]
    live = sorted((u, s, p) for u, s, p in made if not p.endswith(".tmp"))
    total = sum(s for _, s, _ in live)
    expected, left = list(stale), total
    if total > limit:
        for _, size, p in live:
            if left <= cachetrim.KEEP * limit:
                break
            expected.append(p)
            left -= size
    assert [e.path for e in removed] == expected and all(e.key is None for e in removed)
    assert sorted(e.path for e in cachetrim.entries(str(root))) == sorted(
        p for _, _, p in made if p not in set(expected))
    assert left <= limit
    assert (outside / "keep").read_bytes() == b"user file" and (root / "link").is_symlink()


def test_at_most_one_trim_an_hour(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)
    monkeypatch.setenv(cachetrim.LIMIT_ENV, "1")
    root = tmp_path / "rcpc"
    _write(root / "ast" / "old", 700_000, 100)
    _write(root / "ast" / "new", 700_000, 10)
    cachetrim.maybe_trim(NOW)
    assert not (root / "ast" / "old").exists() and (root / "ast" / "new").exists()
    _write(root / "ast" / "more", 700_000, 5)
    cachetrim.maybe_trim(NOW + cachetrim.EVERY_S - 1)  # within the hour: not even a walk
    assert (root / "ast" / "new").exists() and (root / "ast" / "more").exists()
    cachetrim.maybe_trim(NOW + cachetrim.EVERY_S)
    assert not (root / "ast" / "new").exists() and (root / "ast" / "more").exists()
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    _write(root / "ast" / "last", 700_000, 1)
    cachetrim.maybe_trim(NOW + 10 * cachetrim.EVERY_S)
    assert (root / "ast" / "more").exists()


@pytest.mark.parametrize("raw, expected, warned", [
    (None, 1024 << 20, False), ("", 1024 << 20, False), ("64", 64 << 20, False), (" 8 ", 8 << 20, False),
    ("0", None, False), ("-1", 1024 << 20, True), ("1.5", 1024 << 20, True), ("1G", 1024 << 20, True),
])
def test_the_limit(raw, expected, warned, capsys, monkeypatch):
    monkeypatch.delenv(cachetrim.LIMIT_ENV, raising=False)
    if raw is not None:
        monkeypatch.setenv(cachetrim.LIMIT_ENV, raw)
    assert cachetrim.limit_bytes() == expected
    err = capsys.readouterr().err
    assert ("is not a whole number of MiB" in err) == warned and "Traceback" not in err


def _build(ws: Path, out: str, capsys) -> dict:
    capsys.readouterr()
    assert main(["build", "-o", out]) == 0, capsys.readouterr().err
    return {str(p.relative_to(ws / out)): p.read_bytes() for p in sorted((ws / out).rglob("*"))
            if p.is_file() and ".rcpc" not in p.parts}


def test_builds_after_trims_render_what_an_uncached_build_renders(tmp_path, monkeypatch, capsys):
    ws = tmp_path / "ws"
    shutil.copytree(REPO / "recipes", ws / "recipes")
    shutil.copy(REPO / "rcp.toml", ws / "rcp.toml")
    monkeypatch.chdir(ws)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    uncached = _build(ws, "plain", capsys)
    monkeypatch.delenv("RCPC_NO_CACHE")
    root = tmp_path / "cache" / "rcpc"
    filler = root / "ast" / "filler"
    _write(filler, 3 << 20, 10 ** 6)
    monkeypatch.setenv(cachetrim.LIMIT_ENV, "2")
    assert _build(ws, "a", capsys) == uncached
    assert not filler.exists()                        # the oldest went first
    assert sum(e.size for e in cachetrim.entries(str(root))) <= 2 << 20
    for i in range(2):   # a trim once an hour: move the stamp back; the cache is cut hard each time
        monkeypatch.setenv(cachetrim.LIMIT_ENV, "1")
        os.utime(root / cachetrim.STAMP, (0, 0))
        assert _build(ws, f"b{i}", capsys) == uncached
