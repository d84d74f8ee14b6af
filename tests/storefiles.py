"""Reading and rewriting the entries of rcpc's store (:mod:`rcpc.core.store`) in a test's user
cache, as another program (a corrupting disk, a tamperer) would: through SQLite, around rcpc."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rcpc.core import store


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private user cache (``XDG_CACHE_HOME``) with the cache on; the store's pending entries
    written there at the end (a module imports it to use it)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)
    yield tmp_path / "cache"
    store.flush()


def database(cache: Path) -> Path:
    """The store's database under the user cache ``cache`` (``XDG_CACHE_HOME``)."""
    return cache / "rcpc" / store.DIRECTORY / store.DATABASE


def rows(cache: Path, area: str | None = None) -> list[tuple[str, str, bytes]]:
    """``(key hex, area, entry bytes)`` of every entry (of ``area``), rcpc's pending ones
    written first."""
    store.flush()
    with sqlite3.connect(database(cache)) as db:
        found = db.execute("SELECT key, area, entry FROM entries ORDER BY key").fetchall()
    return [(k.hex(), a, e) for k, a, e in found if area in (None, a)]


def rewrite(cache: Path, key: str, data: bytes) -> None:
    """Replace the bytes of the entry ``key`` (hex) with ``data``."""
    with sqlite3.connect(database(cache)) as db:
        db.execute("UPDATE entries SET entry = ? WHERE key = ?", (data, bytes.fromhex(key)))


def payload(area: str, key: str, data: bytes) -> bytes:
    """The payload of a well-formed entry (an AssertionError otherwise)."""
    found = store.check(area, key, data)
    assert found is not None
    return found


def delete(cache: Path, key: str) -> None:
    """Remove the entry ``key`` (hex)."""
    with sqlite3.connect(database(cache)) as db:
        db.execute("DELETE FROM entries WHERE key = ?", (bytes.fromhex(key),))


def read(cache: Path, key: str) -> bytes:
    """The bytes of the entry ``key`` (hex), rcpc's pending ones written first."""
    (found,) = [data for k, _, data in rows(cache) if k == key]
    return found


OTHER = 4242  # a uid that is not ours
HOW = ["other uid", "group writable", "symlink"]


def plant(cache: Path, how: str, name: str = store.DATABASE) -> None:
    """Leave the store's file ``name`` (the database, ``-wal`` or ``-shm``; made empty when
    missing) as another user could have: owned by :data:`OTHER`, writable by the group, or a
    symbolic link to a copy."""
    import os
    import shutil

    path = database(cache).with_name(name)
    if not path.exists():
        path.write_bytes(b"")
    if how == "symlink":
        forged = path.with_name(name + ".forged")
        shutil.copyfile(path, forged)
        os.chmod(forged, 0o600)
        path.unlink()
        path.symlink_to(forged.name)
    elif how == "group writable":
        os.chmod(path, 0o664)
    else:
        os.chown(path, OTHER, -1)
