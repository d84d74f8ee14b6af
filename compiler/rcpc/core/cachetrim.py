"""Keeping rcpc's user cache (``$XDG_CACHE_HOME/rcpc``) bounded, as ccache and sccache keep
theirs: when its files and the entries of its store (:mod:`rcpc.core.store`: the build,
validation and oracle caches) pass the size limit, the least recently used are removed until
the cache is at most 80% of it. Every entry of every cache there is validated when read and a
missing one is a miss (the store's entries, the grammar cache, replay records), so removing
any costs at most a recompile, never a wrong result.

The limit is ``RCPC_CACHE_MAX_MB`` (MiB, whole; ``0``: no limit), 1024 MiB by default. A trim
runs at the end of a command that may have written to the cache, at most once an hour (the
mtime of the ``.trimmed`` stamp in the cache says when the last one ran), so a command pays
one ``stat`` for it. A file is *used* when it was last read or written (the later of its atime
and mtime; a hit reads the entry, and with ``relatime``, the usual mount option, a read
is recorded at most once a day); an entry of the store when its recorded use says (written,
or hit, recorded at most once a day too). The store's own files (its SQLite database) are
trimmed by removing entries from it, never as files. Temporary files of writers (``*.tmp``) are left alone
unless older than an hour: a writer killed before its rename leaves one.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections import namedtuple

from rcpc.core import store
from rcpc.core.envvars import get
from rcpc.core.usercache import cache_dir

LIMIT_ENV = "RCPC_CACHE_MAX_MB"
DEFAULT_LIMIT_MB = 1024
KEEP = 0.8            # after a trim: at most this fraction of the limit
EVERY_S = 3600        # at most one trim an hour
STALE_TMP_S = 3600    # a writer's temporary file this old is a leftover
STAMP = ".trimmed"


def limit_bytes() -> int | None:
    """The size limit in bytes from ``RCPC_CACHE_MAX_MB`` (None: no limit). A value that is
    not a whole number of MiB is reported on stderr and the default applies."""
    raw = get(LIMIT_ENV)
    if raw is None or raw.strip() == "":
        return DEFAULT_LIMIT_MB << 20
    try:
        mb = int(raw.strip())
        if mb < 0:
            raise ValueError
    except ValueError:
        print(f"rcpc: warning: {LIMIT_ENV}={raw!r} is not a whole number of MiB (0 for no limit); "
              f"the cache is kept to {DEFAULT_LIMIT_MB} MiB", file=sys.stderr)
        return DEFAULT_LIMIT_MB << 20
    return None if mb == 0 else mb << 20


def maybe_trim(now: float | None = None) -> None:
    """Trim the cache if the last trim is an hour old or more (or never ran); errors are
    ignored (a cache that cannot be trimmed is only larger). ``now``: seconds since the epoch
    (the clock by default). A command trims after its own cache writes."""
    root = cache_dir()
    if root is None or get("RCPC_NO_CACHE"):
        return

    now = time.time() if now is None else now
    stamp = os.path.join(root, STAMP)
    try:
        if now - os.stat(stamp).st_mtime < EVERY_S:
            return
    except FileNotFoundError:
        pass
    except OSError:
        return
    _trim(root, stamp, limit_bytes(), now)


def _trim(root: str, stamp: str, limit: int | None, now: float) -> None:
    """Mark the trim done at ``now`` (the stamp's mtime), then trim ``root`` to ``limit``
    (None: no limit); errors are ignored."""
    try:  # made with mode 0600, as every file of the cache (docs/cli.md)
        os.close(os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
        os.utime(stamp, (now, now))
    except OSError:
        return
    if limit is not None:
        try:
            trim(root, limit, now)
        except OSError:
            pass


Entry = namedtuple("Entry", "used size path key", defaults=(None,))
Entry.__doc__ = (
    "One thing a trim may remove: a file at ``path`` (``key`` None), or the entry ``key`` (bytes) of "
    "the store whose database is ``path``; ``used`` when it was last used (seconds since the "
    "epoch, float), ``size`` its bytes (int). A named tuple (collections.namedtuple: "
    "typing.NamedTuple would put typing on every build's path).")


def _order(e: Entry) -> tuple:
    """Least recently used first (then by size, place and key)."""
    return e.used, e.size, e.path, e.key or b""


def entries(root: str) -> list[Entry]:
    """An :class:`Entry` of every regular file under ``root`` (symlinks are not followed and
    not listed), the stamp and the store's files left out, and of every entry of the store
    there."""
    return _files(root)[0] + _stored(root)


def _stored(root: str) -> list[Entry]:
    """An :class:`Entry` of every entry of the store under ``root`` (its database opened)."""
    database = store.files(os.path.join(root, store.DIRECTORY))[0]
    return [Entry(used, size, database, k) for used, size, k in store.usage(os.path.dirname(database))]


def _files(root: str) -> tuple[list[Entry], int]:
    """(:func:`entries`' files, the bytes of the store's files): a bound on the bytes of the
    store's entries (each entry's key and bytes are in pages of its database or of its log)."""
    own = store.files(os.path.join(root, store.DIRECTORY))
    out = []
    kept = 0
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for name in files:
            path = os.path.join(d, name)
            if path == os.path.join(root, STAMP):
                continue
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if path in own:
                kept += st.st_size
            elif stat.S_ISREG(st.st_mode):
                out.append(Entry(max(st.st_atime, st.st_mtime), st.st_size, path))
    return out, kept


def trim(root: str, limit: int, now: float) -> list[Entry]:
    """Remove the least recently used files and store entries under ``root`` until their
    total is at most ``KEEP * limit`` bytes, if it is over ``limit``; a writer's temporary
    file is removed only when older than :data:`STALE_TMP_S`. Returns what was removed
    (oldest first), as :func:`entries` gives it. The store's entries are not listed (its
    database not opened: ~0.5 ms of a first build) when the files, the store's with them,
    total at most ``limit``: its entries total no more than its files."""
    files, kept = _files(root)
    removed = sorted((e for e in files if e.path.endswith(".tmp") and now - e.used >= STALE_TMP_S), key=_order)
    for e in removed:
        _unlink(e.path)
    live = [e for e in files if not e.path.endswith(".tmp")]
    if sum(e.size for e in live) + kept <= limit:
        return removed
    live = sorted(live + _stored(root), key=_order)
    total = sum(e.size for e in live)
    if total <= limit:
        return removed
    keys = []
    try:
        for e in live:
            if total <= KEEP * limit:
                break
            if e.key is not None:
                keys.append(e.key)
            elif not _unlink(e.path):
                continue
            removed.append(e)
            total -= e.size
        if not store.remove(os.path.join(root, store.DIRECTORY), keys):
            removed = [e for e in removed if e.key is None]
    finally:
        store.flush()  # the database closed
    return removed


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False
