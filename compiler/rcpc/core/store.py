"""rcpc's content-addressed store: the one place its caches of results (the build cache,
:mod:`rcpc.build.cache`; the schema-validation cache, :mod:`rcpc.domain.kube.schemacache`; the
MaxText oracle's answers, :mod:`rcpc.oracle`; rcp.toml's tables, :mod:`rcpc.domain.workspace`)
keep their entries, with one key discipline, one entry format, one validation and the user
cache's trust rules applied once (:mod:`rcpc.core.usercache`). docs/cli.md, "The store", describes it.

*Keys* (:func:`key`): the digest (:mod:`rcpc.core.digest`: BLAKE2b, 32 bytes) of the store's format version, the *area* (one of
:data:`AREAS`: which cache) and the fields the cache names, each written as its type's name,
its length and its bytes (a ``str`` as UTF-8, ``bytes`` as they are, anything else as its
:func:`repr`), so no two lists of fields share a key whatever they hold (a NUL, a field
boundary moved).

*Entries*: ``MAGIC``, the area, a NUL, the key (32 bytes), the digest of the payload (32
bytes) and the payload. :func:`get` returns a payload only when every part checks against the
area and key asked for; anything else (a torn or corrupted entry, one of another key or area,
an unreadable or malformed database) is a miss, never a wrong result.

*Writes are batched* (issue 41: one small file written per entry was ~22% of a first build):
:func:`put` keeps an entry in this process (a later :func:`get` of the run sees it) and
:func:`flush` writes all of them in one SQLite transaction (Python's :mod:`sqlite3`;
write-ahead log, so readers never wait for a writer and a writer killed at any point leaves
the last committed state: SQLite's atomic commit, https://sqlite.org/atomiccommit.html; a new
database's first transaction goes through the rollback journal, then the log is turned on,
:func:`_setup`). A
command flushes at its end (:func:`rcpc.cli.main`; the language server after each full
check; any other process at exit); a ``-j`` worker hands the entries it made to the main
process with each result (:func:`take`, :func:`adopt`), and never uses the connection it
inherited. The main process writes its entries as soon as they pass :data:`PENDING_BYTES` (a
first build of many recipes: its memory stays that of a build without the cache). Two processes
writing at once take turns (SQLite's lock; at its end a run waits up to :data:`BUSY_S` seconds,
as it goes not at all, then its entries are dropped: a later run writes them again).

*Trust*: the database is ``$XDG_CACHE_HOME/rcpc/store/store.db`` (``~/.cache/rcpc/store``), in a
directory of the user cache trusted as every one is (:func:`rcpc.core.usercache.cache_dir`:
``W0960`` otherwise), made with mode 0700; the database file is created by rcpc with mode 0600
(SQLite gives its ``-wal``, ``-shm`` and ``-journal`` files the same mode), and it is opened only
when it and those files, where they exist, are regular files of this user that no one
else can write (:func:`rcpc.core.usercache.owned_file`): a database another user planted is
not read (none can be swapped in after the check: the directory is this user's alone). One
that SQLite finds corrupt is removed and made again at the next flush. An entry longer than
:data:`MAX_ENTRY` is not read.

*Trim* (:mod:`rcpc.core.cachetrim`): each entry records when it was last used (written, or
read by a hit more than :data:`TOUCH_S` after its last recorded use: a warm run writes at
most once a day, as ``relatime``), :func:`usage` lists entries as the trim sees files, and
:func:`remove` deletes entries and gives their pages back (incremental vacuum).
``RCPC_NO_CACHE=1`` turns the store off. Imports :mod:`rcpc.core.digest` and, at the first use of the
database, :mod:`sqlite3`'s C module ``_sqlite3`` (~1 ms; the package would add datetime; a
process that cannot load it, short of memory, has the store off: :func:`_sqlite`).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import time

from rcpc.core import digest, testhook
from rcpc.core.envvars import get as env
from rcpc.core.usercache import cache_dir, make_dirs, owned_file

FORMAT = 2  # 2: BLAKE2b digests (rcpc.core.digest), was SHA-256
MAGIC = b"rcpc-store 1\n"
AREAS = ("build", "schema", "oracle", "config")
DIRECTORY = "store"
DATABASE = "store.db"
BUSY_S = 10.0            # seconds a writer waits for another's transaction
TOUCH_S = 86400          # a hit more than this after the entry's recorded use records the use
MAX_ENTRY = 1 << 30      # bytes of one entry (a build of MAX_RENDERS renders of MAX_FILE_BYTES fits)
PENDING_BYTES = 4 << 20  # bytes of entries a process keeps before it writes them (issue 41: a first
                         # build of 1,000 recipes kept 28 MB, its peak memory 1.4x that without the cache)
_SCHEMA = ("CREATE TABLE IF NOT EXISTS entries (key BLOB PRIMARY KEY, area TEXT NOT NULL, "
           "entry BLOB NOT NULL, used INTEGER NOT NULL) WITHOUT ROWID")


class _State:
    """This process's pending writes and open database (one user cache a process)."""

    def __init__(self):
        self.home: str | None = None                        # the store directory pending and touched are of
        self.pending: dict[bytes, tuple[str, bytes]] = {}   # key -> (area, entry) not written yet
        self.size = 0                                       # bytes of the entries pending
        self.touched: dict[bytes, None] = {}                # keys hit whose use is to be recorded
        self.parent: dict[bytes, tuple[str, bytes]] = {}    # pending in the process this one was forked from
        self.connection = None
        self.path: str | None = None                        # the database the connection is to
        self.exit_hook = False
        self.pid = os.getpid()                              # the process the state is of
        self.forked = False                                 # a process forked from the one that made it
        self.where: tuple | None = None                     # (environment, store directory) found this run
        self.refused: str | None = None                     # the database found missing or untrusted this run
        self.inherited: list = []                           # connections opened before a fork: never used again
        self.new: bool | None = None                        # the connection's database has no table yet
                                                            # (_setup), None: not set up (opened to read)


_STATE = _State()


def key(area: str, *fields) -> str:
    """The key (64 hex characters, :mod:`rcpc.core.digest`) of the entry of ``area`` (one of :data:`AREAS`) named by
    ``fields`` (module docstring: each as its type, length and bytes). Raises ValueError for
    an area not in :data:`AREAS`, RecursionError for a field too deep to :func:`repr`."""
    if area not in AREAS:
        raise ValueError(f"no store area {area!r}")
    h = digest.new(b"%s%d\0" % (MAGIC, FORMAT))
    for field in (area, *fields):
        if type(field) is bytes:
            data = field
        else:
            data = (field if type(field) is str else repr(field)).encode("utf-8", "surrogatepass")
        h.update(b"%s %d\0" % (type(field).__name__.encode(), len(data)))
        h.update(data)
    return h.hexdigest()


def enabled() -> bool:
    """Whether the store is in use: a trusted user cache (:func:`rcpc.core.usercache.cache_dir`)
    and no ``RCPC_NO_CACHE``."""
    return _directory() is not None


def _directory() -> str | None:
    """The store's directory (:func:`rcpc.core.usercache.cache_dir`), None when the store is
    off; found once a run (until :func:`flush`) for the environment it was found in."""
    where = (env("RCPC_NO_CACHE"), env("XDG_CACHE_HOME"), env("HOME"))
    if _STATE.where is None or _STATE.where[0] != where:
        _STATE.where = (where, None if where[0] else cache_dir(DIRECTORY))
    return _STATE.where[1]


def entry(area: str, k: str, payload: bytes) -> bytes:
    """The stored form of ``payload`` under key ``k`` (hex) of ``area`` (module docstring)."""
    return MAGIC + area.encode() + b"\0" + bytes.fromhex(k) + digest.digest(payload) + payload


def check(area: str, k: str, data) -> bytes | None:
    """The payload of ``data``, an entry read back for key ``k`` (hex) of ``area``, or None
    when any part of it does not check: the one validation of every cache's entries."""
    if type(data) is not bytes:
        return None
    head = MAGIC + area.encode() + b"\0" + bytes.fromhex(k)
    if len(data) < len(head) + 32 or not data.startswith(head):
        return None
    payload = data[len(head) + 32:]
    return payload if digest.digest(payload) == data[len(head):len(head) + 32] else None


def get(area: str, k: str | None) -> bytes | None:
    """The payload stored under key ``k`` (:func:`key`) of ``area``, or None: a miss (no
    such entry, the store off, an entry that does not check, a database that cannot be read
    or trusted). An entry this process put and has not flushed yet is found."""
    directory = _directory()
    if k is None or directory is None:
        return None
    _home(directory)
    raw = bytes.fromhex(k)
    found = _STATE.pending.get(raw) or _STATE.parent.get(raw)
    if found is not None:
        return check(area, k, found[1]) if found[0] == area else None
    db = _open(directory, create=False)
    if db is None:
        return None
    sqlite3 = _sqlite()
    try:
        row = db.execute("SELECT CASE WHEN length(entry) <= ? THEN entry END, used FROM entries WHERE key = ?",
                         (MAX_ENTRY, raw)).fetchone()
    except (sqlite3.Error, MemoryError):
        return None
    if row is None:
        return None
    payload = check(area, k, row[0])
    if payload is not None and type(row[1]) is int and _now() - row[1] > TOUCH_S:
        _STATE.touched[raw] = None
    return payload


def put(area: str, k: str | None, payload: bytes) -> None:
    """Keep ``payload`` under key ``k`` of ``area``: written by the next :func:`flush` (at
    the latest when the process exits), seen by :func:`get` until then. Nothing when the
    store is off or ``k`` is None."""
    directory = _directory()
    if k is not None and directory is not None:
        _home(directory)
        _keep(bytes.fromhex(k), area, entry(area, k, payload))


def _own() -> None:
    """In a process forked from the one that made the state (a ``-j`` worker): the
    connection is left alone, never used or closed here (SQLite: a connection must not be
    carried across a fork), and the entries pending there are only read here (the main
    process writes them)."""
    if _STATE.pid != os.getpid():
        if _STATE.connection is not None:
            _STATE.inherited.append(_STATE.connection)  # kept from the garbage collector, whose close would act
        _STATE.connection = _STATE.path = None
        _STATE.parent = {**_STATE.parent, **_STATE.pending}
        _STATE.pending, _STATE.touched, _STATE.size = {}, {}, 0
        _STATE.pid, _STATE.forked = os.getpid(), True


def _home(directory: str) -> None:
    """Make ``directory`` the one pending entries are of: those of another (the user cache
    changed in this process: ``XDG_CACHE_HOME`` set by a test) are written there first."""
    _own()
    if _STATE.home != directory:
        _STATE.parent = {}
        flush()
        _STATE.home = directory


def _keep(raw: bytes, area: str, data: bytes) -> None:
    """Keep an entry to write; the first kept registers :func:`flush` to run at exit. Once
    the entries kept pass :data:`PENDING_BYTES`, they are written (:func:`flush`): a run's
    memory holds at most that much of them, whatever it builds; not in a forked process (a
    ``-j`` worker), whose entries go to the main process with each result (:func:`take`)."""
    old = _STATE.pending.get(raw)
    _STATE.pending[raw] = (area, data)
    _STATE.size += len(data) - (len(old[1]) if old is not None else 0)
    if not _STATE.exit_hook:
        atexit.register(flush)
        _STATE.exit_hook = True
    if _STATE.size > PENDING_BYTES and not _STATE.forked:
        flush(wait=False)


def take() -> dict:
    """The entries put and not written yet, no longer pending here: a ``-j`` worker sends
    them to the main process (:func:`adopt`), which writes them with its own."""
    _own()
    pending, _STATE.pending, _STATE.size = _STATE.pending, {}, 0
    return pending if _STATE.home == _directory() else {}


def adopt(made: dict) -> None:
    """Keep the entries ``made`` (:func:`take` in another process) to be written by the next
    :func:`flush`; each is checked as a read would (:func:`check`), so nothing else is written."""
    directory = _directory()
    if directory is None:
        return
    _home(directory)
    for raw, (area, data) in made.items():
        if type(raw) is bytes and area in AREAS and check(area, raw.hex(), data) is not None:
            _keep(raw, area, data)


def flush(wait: bool = True) -> None:
    """End a run's use of the store: write the entries put since the last flush, and the uses
    of entries hit, in one transaction, to the store they were made for, then close the
    database (the next run opens it again, its files checked again). Errors are ignored (the
    entries are dropped: a later run writes them). A database SQLite finds corrupt is removed
    first and made again. Without ``wait`` (the writes a run makes as it goes, :func:`_keep`),
    another process's write holding the database drops the entries at once: a build does not
    stand still for :data:`BUSY_S` seconds, Ctrl-C unanswered in SQLite's wait, before its
    output is written (each 4 MiB of a 1,000-recipe build could wait 10 s)."""
    _own()
    pending, touched = _STATE.pending, _STATE.touched
    _STATE.pending, _STATE.touched, _STATE.size = {}, {}, 0
    try:
        if (pending or touched) and _STATE.home is not None and not env("RCPC_NO_CACHE"):
            _flush(_STATE.home, pending, touched, wait)
    finally:
        if _STATE.connection is not None:
            _STATE.connection.close()
        _STATE.connection = _STATE.path = _STATE.where = _STATE.refused = None


def _flush(directory: str, pending: dict, touched: dict, wait: bool = True) -> None:
    sqlite3 = _sqlite()
    if sqlite3 is None:
        return
    for attempt in (1, 2):
        try:
            _write(directory, pending, touched, wait)
            return
        except sqlite3.Error as exc:
            if attempt == 2 or not _corrupt(exc):
                return
            _discard(directory)
        except (OSError, MemoryError):
            return


def _write(directory: str, pending: dict, touched: dict, wait: bool = True) -> None:
    db = _open(directory, create=True)
    if db is None:
        return
    db.execute(f"PRAGMA busy_timeout = {round(BUSY_S * 1000) if wait else 0}")
    now = _now()
    new = _STATE.new
    testhook.point("store-begin")
    with _transaction(db):
        if new:
            db.execute(_SCHEMA)
        db.executemany("INSERT OR REPLACE INTO entries (key, area, entry, used) VALUES (?, ?, ?, ?)",
                       [(k, area, data, now) for k, (area, data) in pending.items()])
        db.executemany("UPDATE entries SET used = ? WHERE key = ?", [(now, k) for k in touched])
        testhook.point("store-commit")
    if new:
        _STATE.new = False
        _logged(db)


@contextlib.contextmanager
def _transaction(db):
    """A write transaction on ``db`` (SQLite's write lock taken at its start), committed when
    the block ends, rolled back when it raises (a signal too)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _now() -> int:
    return int(time.time())


def _sqlite():
    """SQLite's C module ``_sqlite3`` (:mod:`sqlite3`'s package would add datetime and its
    adapters, ~1.5 ms), or None when it cannot be loaded: a process short of memory cannot map
    its shared library (``ulimit -v``), and the store is then as if missing (misses, entries
    dropped), never an error of the command."""
    try:
        import _sqlite3
    except (ImportError, MemoryError):
        return None
    return _sqlite3


def _open(directory: str | None, create: bool, again: bool = True):
    """The open database of the store ``directory`` (made, with the directory, when
    ``create``: one SQLite finds corrupt is removed and made anew), or None when there is
    none, it cannot be trusted (module docstring) or opened."""
    _own()
    if directory is None:
        return None
    path = os.path.join(directory, DATABASE)
    if _STATE.connection is not None and _STATE.path == path:
        if create and _STATE.new is None:  # opened to read: the table may be missing (a first flush killed)
            _STATE.new = _setup(_STATE.connection)
        return _STATE.connection
    if not create and _STATE.refused == path:  # missing or untrusted when this run first looked
        return None
    try:
        if create:
            make_dirs(directory)
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
            except FileExistsError:
                pass
        if not all(owned_file(p) or (p != path and not os.path.lexists(p)) for p in files(directory)):
            _STATE.refused = path
            return None
    except OSError:
        return None
    sqlite3 = _sqlite()
    if sqlite3 is None:
        return None
    try:
        uri = "file:" + path.replace("%", "%25").replace("?", "%3f").replace("#", "%23") + "?mode=rw"
        db = sqlite3.connect(uri, uri=True, timeout=BUSY_S, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA synchronous = NORMAL")  # in WAL mode: durable but for a power loss, never torn
            db.execute("PRAGMA trusted_schema = OFF")
            db.execute("PRAGMA journal_size_limit = 4194304")
            new = _setup(db) if create else None
        except BaseException:
            db.close()
            raise
    except sqlite3.Error as exc:
        if not (create and again and _corrupt(exc)):
            _STATE.refused = None if create else path
            return None
        _discard(directory)
        return _open(directory, create, again=False)
    except OSError:
        return None
    if _STATE.connection is not None:
        _STATE.connection.close()
    _STATE.connection, _STATE.path, _STATE.new = db, path, new
    return db


def _setup(db) -> bool:
    """Ready a database to write entries in: True for a new one (no table yet), left in
    SQLite's rollback-journal mode under ``synchronous = OFF`` with incremental vacuum set
    (it persists in the file, and must be set before the first table), its table made in the
    transaction that writes the run's entries (:func:`_write`), after whose commit
    :func:`_logged` turns on the write-ahead log. A new database's first entries written
    through the log cost ~1.5 ms of a first build's CPU more (issue 41: each page written
    twice, to the log and at the close's checkpoint, and the log's index mapped), and the
    set-up's transactions waited for the disk (~50-100 ms of wall time): under the rollback
    journal a writer killed at any point leaves the empty file (the journal rolls the
    transaction back), and a power loss can only leave it damaged (removed and made again,
    :func:`_corrupt`), without its table (a miss; made at the next flush) or with entries
    that do not check (misses: each entry names its key and the hash of its payload), never
    a wrong one. An existing database gets the write-ahead log if it lacks it."""
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'entries'").fetchone() is None:
        db.execute("PRAGMA synchronous = OFF")
        db.execute("PRAGMA auto_vacuum = INCREMENTAL")
        return True
    if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        db.execute("PRAGMA journal_mode = WAL")
    return False


def _logged(db) -> None:
    """Turn a new database's write-ahead log on, its entries written (:func:`_setup`): the
    mode persists in the file, so readers never wait for a writer from then on; a reader
    holding the database now leaves it off until the next flush (:func:`_setup`)."""
    try:
        db.execute("PRAGMA journal_mode = WAL").fetchone()
    finally:
        db.execute("PRAGMA synchronous = NORMAL")


def files(directory: str) -> tuple[str, str, str, str]:
    """The files of the store in ``directory`` (the database, SQLite's ``-wal`` and ``-shm``,
    and the ``-journal`` of a new database's first transaction, :func:`_setup`), which the
    trim does not remove as files (:func:`usage`)."""
    path = os.path.join(directory, DATABASE)
    return path, path + "-wal", path + "-shm", path + "-journal"


def _corrupt(exc) -> bool:
    return getattr(exc, "sqlite_errorname", "") in ("SQLITE_CORRUPT", "SQLITE_NOTADB")


def _discard(directory: str) -> None:
    """Close and remove the corrupt database of ``directory`` (its entries are lost: misses)."""
    if _STATE.connection is not None:
        _STATE.connection.close()
        _STATE.connection = _STATE.path = None
    for p in files(directory):
        try:
            os.unlink(p)
        except OSError:
            pass


def usage(directory: str) -> list[tuple[int, int, bytes]]:
    """``(last use, size in bytes, key)`` of every entry written to the store in
    ``directory`` (:mod:`rcpc.core.cachetrim` trims them with the cache's files); empty when
    there is no database or it cannot be read or trusted."""
    db = _open(directory, create=False)
    if db is None:
        return []
    try:
        return [(used, size, k) for k, used, size in
                db.execute("SELECT key, used, length(key) + length(entry) FROM entries")]
    except (_sqlite().Error, MemoryError):
        return []


def remove(directory: str, keys: list[bytes]) -> bool:
    """Delete the entries of ``keys`` of the store in ``directory`` in one transaction
    and give their pages back to the file system. False when that failed (nothing deleted)."""
    db = _open(directory, create=False)
    if db is None or not keys:
        return not keys
    try:
        with _transaction(db):
            db.executemany("DELETE FROM entries WHERE key = ?", [(k,) for k in keys])
        db.execute("PRAGMA incremental_vacuum")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except (_sqlite().Error, MemoryError):
        return False
    return True
