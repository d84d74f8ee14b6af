"""rcpc's store (:mod:`rcpc.core.store`, issues 40 and 41): one key discipline, one entry
format and one validation for every cache of results, written in one transaction a run.

Kinds tested: keys never collide across field boundaries; an entry's bytes damaged in any way
(a byte changed, cut short, parts reordered) are a miss, never another payload; the database
file's bytes damaged in any way are misses or the right payloads, and the next write works;
a kill (SIGKILL, injected with strace at each call of each syscall a flush makes) leaves
every entry whole or missing; two processes writing at once both land (driven through the
store's test points, no sleeps); a run's entries are one transaction. Planted files:
tests/test_usercache_trust.py and tests/test_oracle.py."""

from __future__ import annotations

import inspect
import itertools
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import storefiles
from storefiles import cache  # noqa: F401 (a fixture)
from rcpc.core import store

REPO = Path(__file__).resolve().parents[1]


def payload(tag: str, i: int) -> bytes:
    """Entry ``i`` of writer ``tag``: sizes from a few bytes to several pages."""
    return (f"{tag}:{i};" * (1 + (i * 397) % 1500)).encode()


FIELD = st.one_of(st.text(max_size=6), st.binary(max_size=6), st.integers(), st.booleans(), st.none())


@settings(max_examples=300, deadline=None)
@given(a=st.lists(FIELD, max_size=4), b=st.lists(FIELD, max_size=4), area=st.sampled_from(store.AREAS))
@example(a=["a\x00", "b"], b=["a", "\x00b"], area="schema")   # a field boundary moved
@example(a=["1"], b=[1], area="build")                        # a type changed
def test_keys_of_different_fields_differ(a, b, area):
    same = [(type(x), x) for x in a] == [(type(x), x) for x in b]
    assert (store.key(area, *a) == store.key(area, *b)) == same
    assert store.key(area, *a) != store.key(next(x for x in store.AREAS if x != area), *a)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200), at=st.integers(0, 10 ** 6), bits=st.integers(1, 255),
       how=st.sampled_from(["flip", "cut", "swap", "other key", "other area"]))
@example(data=b"x", at=10 ** 6, bits=1, how="flip")  # the payload's last byte
@example(data=b"", at=0, bits=1, how="cut")          # an empty payload, the entry cut at 0
def test_a_damaged_entry_is_never_another_payload(data, at, bits, how):
    k = store.key("build", "r.rcp")
    raw = bytearray(store.entry("build", k, data))
    if how == "flip":
        raw[at % len(raw)] ^= bits
    elif how == "cut":
        raw = raw[:at % len(raw)]
    elif how == "swap":   # two parts reordered
        i = at % len(raw)
        raw = raw[i:] + raw[:i]
    elif how == "other key":
        raw = bytearray(store.entry("build", store.key("build", "s.rcp"), data))
    else:
        raw = bytearray(store.entry("schema", k, data))
    found = store.check("build", k, bytes(raw))
    assert found is None or (found == data and bytes(raw) == store.entry("build", k, data))


def _clear(cache: Path, snapshot: Path | None = None) -> None:
    """Remove the store's files (the directories stay: this process made them), and put
    those of ``snapshot`` back."""
    directory = storefiles.database(cache).parent
    for p in store.files(str(directory)):
        if os.path.lexists(p):
            os.unlink(p)
    for p in (snapshot.iterdir() if snapshot else ()):
        shutil.copyfile(p, directory / p.name)


def _fill(n: int, tag: str = "w") -> dict:
    """``n`` entries put and flushed: {key: payload}."""
    made = {store.key("build", tag, i): payload(tag, i) for i in range(n)}
    for k, p in made.items():
        store.put("build", k, p)
    store.flush()
    return made


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(at=st.integers(0, 10 ** 9), bits=st.integers(1, 255), size=st.integers(1, 4096),
       how=st.sampled_from(["flip", "cut", "swap pages", "zero pages"]))
@example(at=0, bits=1, size=1, how="flip")          # the header's magic
@example(at=4096, bits=0, size=4096, how="zero pages")
def test_a_damaged_database_gives_misses_or_the_right_payloads(cache, at, bits, size, how):
    """Whatever the database file's bytes became, each key reads back as a miss or its own
    payload, and the next flush writes (a database SQLite finds corrupt is made anew)."""
    _clear(cache)
    made = _fill(12)
    db = storefiles.database(cache)
    raw = bytearray(db.read_bytes())
    i = at % len(raw)
    if how == "flip":
        raw[i] ^= bits
    elif how == "cut":
        raw = raw[:i]
    elif how == "swap pages" and len(raw) >= 8192:
        page = (i // 4096) * 4096
        other = (page + 4096) % (len(raw) - len(raw) % 4096)
        raw[page:page + 4096], raw[other:other + 4096] = raw[other:other + 4096], raw[page:page + 4096]
    else:
        raw[i:i + size] = bytes(len(raw[i:i + size]))
    db.write_bytes(bytes(raw))
    for k, p in made.items():
        assert store.get("build", k) in (None, p)
    store.flush()
    more = _fill(3, "after")
    assert all(store.get("build", k) == p for k, p in more.items())
    store.flush()


def test_a_run_writes_its_entries_in_one_transaction(cache):
    """Put entries are found before the flush (the run sees its own), and one flush is one
    commit however many there are (SQLite's total_changes counts them on one connection)."""
    made = {store.key("schema", i): payload("t", i) for i in range(200)}
    for k, p in made.items():
        store.put("schema", k, p)
    assert all(store.get("schema", k) == p for k, p in made.items())
    assert not storefiles.database(cache).exists()   # nothing written yet
    commits = []
    real = store._write
    store._write = lambda *a: commits.append(1) or real(*a)
    try:
        store.flush()
    finally:
        store._write = real
    assert commits == [1] and len(storefiles.rows(cache, "schema")) == 200
    assert all(store.get("schema", k) == p for k, p in made.items())


EXAMPLE = itertools.count()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 3000)), min_size=1, max_size=60),
       budget=st.integers(0, 8000))
@example(sizes=[(i, 28_000) for i in range(8)], budget=100_000)  # bench/peers.py's recipe entries, scaled down
def test_a_run_keeps_at_most_the_pending_budget_and_loses_no_entry(cache, monkeypatch, sizes, budget):
    """Whatever a run puts (sizes, keys put again), the entries kept in its memory stay at most
    ``PENDING_BYTES`` plus the last one (those before are written), the count is exact, and
    every entry put is found, during the run and after it, with its last payload."""
    monkeypatch.setattr(store, "PENDING_BYTES", budget)
    store.flush()
    tag = next(EXAMPLE)  # keys of their own each example
    last: dict = {}
    for i, (name, size) in enumerate(sizes):
        k = store.key("build", tag, name)
        last[k] = (b"%d:" % i) * (size // 4 + 1)
        store.put("build", k, last[k])
        kept = store._STATE.pending
        assert store._STATE.size == sum(len(data) for _, data in kept.values())
        assert store._STATE.size <= budget or len(kept) == 0
        assert all(store.get("build", key) == payload for key, payload in last.items())
    store.flush()
    assert all(store.get("build", key) == payload for key, payload in last.items())


def test_a_forked_process_over_the_budget_writes_nothing(cache, monkeypatch):
    """A process forked from the one that made the store's state (a ``-j`` worker) keeps its
    entries however many: they go to the main process with its result (:func:`store.take`)."""
    monkeypatch.setattr(store, "PENDING_BYTES", 0)
    store.put("build", store.key("build", "before the fork"), b"x")  # written by the parent: the database made
    store.flush()
    before = len(storefiles.rows(cache))
    pid = os.fork()
    if pid == 0:  # the child: put past the budget, then hand the entries over as a worker does
        try:
            for i in range(5):
                store.put("build", store.key("build", "child", i), b"y" * 100)
            made = store.take()
            os._exit(0 if len(made) == 5 and not store._STATE.pending else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert len(storefiles.rows(cache)) == before


def test_a_new_database_is_set_up_without_waiting_for_the_disk(cache, monkeypatch):
    """The first flush into an empty user cache makes the database (incremental vacuum, its
    table in the transaction of the entries, then the write-ahead log) under ``synchronous =
    OFF`` (issue 41: the set-up's three journal transactions each waited for the disk, and a
    new database's first entries written through the log cost ~1.5 ms of CPU more), then
    turns ``synchronous = NORMAL`` back on; a database that has its table is opened with no
    such change."""
    statements: list[str] = []
    import _sqlite3  # what the store connects with (its C module)
    real = _sqlite3.connect

    def traced(*args, **kw):
        db = real(*args, **kw)
        db.set_trace_callback(statements.append)
        return db
    monkeypatch.setattr(_sqlite3, "connect", traced)
    made = _fill(3)
    said = [s.strip() for s in statements]
    off, normal = said.index("PRAGMA synchronous = OFF"), len(said) - 1 - said[::-1].index("PRAGMA synchronous = NORMAL")
    assert off < said.index("PRAGMA auto_vacuum = INCREMENTAL") < said.index("BEGIN IMMEDIATE") \
        < said.index(store._SCHEMA) < said.index("COMMIT") < said.index("PRAGMA journal_mode = WAL") < normal
    with real(storefiles.database(cache)) as db:
        assert db.execute("PRAGMA auto_vacuum").fetchone() == (2,) and db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert not os.path.lexists(store.files(str(storefiles.database(cache).parent))[3])   # no journal left
    statements.clear()
    _fill(2, "again")
    assert "PRAGMA synchronous = OFF" not in [s.strip() for s in statements]
    assert all(store.get("build", k) == p for k, p in made.items())


WRITER = """
import sys
from rcpc.core import store
{payload}
tag, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    store.put("build", store.key("build", tag, i), payload(tag, i))
store.flush()
"""


def _writer(cache: Path, tag: str, n: int, strace: list[str] = (), **env) -> subprocess.Popen:
    environ = {**os.environ, "XDG_CACHE_HOME": str(cache), **env}
    environ.pop("RCPC_NO_CACHE", None)
    fds = tuple(int(v) for k, v in env.items() if k.endswith("_FD"))
    return subprocess.Popen([*strace, sys.executable, "-c", WRITER.format(payload=inspect.getsource(payload)), tag, str(n)],
                            env=environ, pass_fds=fds, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _read_all(cache: Path, tag: str, n: int) -> list:
    """What each of writer ``tag``'s entries reads back as, through rcpc's store."""
    return [store.get("build", store.key("build", tag, i)) for i in range(n)]


# what changes the store's files (a kill at a lock, fcntl, or a close is one between two of these)
SYSCALLS = ["openat", "pwrite64", "write", "fsync", "fdatasync", "ftruncate", "unlink", "rename"]


@pytest.mark.parametrize("new", [False, True], ids=["database", "new database"])
def test_a_kill_at_any_write_syscall_leaves_each_entry_whole_or_missing(cache, tmp_path, new):
    """SIGKILL at each call of each syscall a flush makes (strace's fault injection, counted
    from a traced run): every entry of the killed run and of the run before reads back whole
    or missing, never torn; the next run writes its entries. ``new``: the killed run is the
    first one, which makes the database (its first transaction through the rollback journal,
    then the write-ahead log: :func:`rcpc.core.store._setup`)."""
    n = 3
    snapshot = tmp_path / "snapshot"
    if new:
        store.flush()
        assert _writer(cache, "before", 0).wait() == 0   # the store's directory made, no database
        assert not storefiles.database(cache).exists()
        before = [None] * n
        snapshot.mkdir()
    else:
        assert _writer(cache, "before", n).wait() == 0
        before = [payload("before", i) for i in range(n)]
        shutil.copytree(storefiles.database(cache).parent, snapshot)
    log = tmp_path / "strace.log"
    traced = _writer(cache, "run", n, ["strace", "-f", "-qq", "-o", str(log), "-e", "trace=" + ",".join(SYSCALLS)])
    assert traced.wait() == 0
    # the calls made from the flush on: the first openat of the database's directory and after
    text = log.read_text()
    start = text.index(os.path.join("rcpc", store.DIRECTORY))
    counts = {s: len(re.findall(rf"^\d+ +{s}\(", text[start:], re.M)) for s in SYSCALLS}
    skip = {s: len(re.findall(rf"^\d+ +{s}\(", text[:start], re.M)) for s in SYSCALLS}
    assert counts["pwrite64"]
    killed, runs = 0, []
    for syscall, count in counts.items():
        for n_call in range(skip[syscall] + 1, skip[syscall] + count + 1):
            _clear(cache, snapshot)
            p = _writer(cache, "run", n, ["strace", "-f", "--seccomp-bpf", "-qq", "-o", os.devnull,
                                           "-e", f"inject={syscall}:signal=KILL:when={n_call}"])
            code = p.wait()
            killed += code == -9
            runs.append(syscall)
            got = _read_all(cache, "run", n)
            assert all(g in (None, payload("run", i)) for i, g in enumerate(got)), (syscall, n_call)
            assert _read_all(cache, "before", n) == before, (syscall, n_call)
            assert got in ([None] * n, [payload("run", i) for i in range(n)]), "one transaction: all or none"
            _fill(2, "after")   # the next run writes
            assert _read_all(cache, "after", 2) == [payload("after", i) for i in range(2)], (syscall, n_call)
            store.flush()
    assert killed >= 5, runs


def _handshake(name: str) -> tuple[dict, int, int]:
    """Environment for a process to stop at test point ``name``, the fd it reports on and
    the fd that lets it go (:mod:`rcpc.core.testhook`)."""
    stop_r, stop_w = os.pipe()
    go_r, go_w = os.pipe()
    return {"RCPC_TEST_STOP": name, "RCPC_TEST_STOP_FD": str(stop_w), "RCPC_TEST_GO_FD": str(go_r)}, stop_r, go_w


def test_two_writers_at_once_both_land(cache):
    """A holds the write lock (stopped before its commit) while B reads and comes to its own
    write: B sees none of A's uncommitted entries; A goes on, then B: both runs' entries are
    there, whole."""
    assert _writer(cache, "first", 1).wait() == 0   # the database exists (B reads it)
    env_a, stop_a, go_a = _handshake("store-commit")
    a = _writer(cache, "a", 40, **env_a)
    assert os.read(stop_a, 100).startswith(b"store-commit")   # A is in its transaction
    assert _read_all(cache, "a", 40) == [None] * 40            # uncommitted: not seen
    store.flush()
    env_b, stop_b, go_b = _handshake("store-begin")
    b = _writer(cache, "b", 40, **env_b)
    assert os.read(stop_b, 100).startswith(b"store-begin")     # B is about to take the lock A holds
    os.write(go_b, b"g")                                       # B waits for A's lock (SQLite's busy wait)
    os.write(go_a, b"g")
    assert a.wait() == 0 and b.wait() == 0, (a.stderr.read(), b.stderr.read())
    assert _read_all(cache, "a", 40) == [payload("a", i) for i in range(40)]
    assert _read_all(cache, "b", 40) == [payload("b", i) for i in range(40)]
    for fd in (stop_a, go_a, stop_b, go_b):
        os.close(fd)


def test_the_database_and_its_directory_are_private(cache):
    _fill(1)
    db = storefiles.database(cache)
    with sqlite3.connect(db) as con:   # the log kept: -wal and -shm exist while a connection is open
        con.execute("SELECT 1 FROM entries").fetchall()
        for p in store.files(str(db.parent)):
            if os.path.exists(p):
                assert os.stat(p).st_mode & 0o777 == 0o600, p
    assert os.stat(db.parent).st_mode & 0o777 == 0o700


def test_no_cache_writes_nothing(cache, monkeypatch):
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    store.put("build", store.key("build", "x"), b"p")
    assert store.get("build", store.key("build", "x")) is None
    store.flush()
    assert not cache.exists()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(st.tuples(st.booleans(), st.integers(1, 3000), st.integers(0, 10 ** 6)), min_size=1,
                      max_size=12),
       limit=st.integers(1, 30000))
def test_the_trim_removes_the_least_recently_used_files_and_entries_together(cache, items, limit):
    """Store entries are trimmed as files are (:mod:`rcpc.core.cachetrim`): one order of last
    use over both, down to the mark; a trimmed entry is a miss, the others read back."""
    from rcpc.core import cachetrim

    now = 2_000_000_000
    root = cache / "rcpc"
    _clear(cache) if storefiles.database(cache).parent.exists() else None
    for p in root.glob("f*"):
        p.unlink()
    made, keys = [], {}
    for i, (is_entry, size, age) in enumerate(items):
        if is_entry:
            k = store.key("build", "trim", i)
            keys[k] = b"p" * size
            store.put("build", k, keys[k])
        else:
            path = root / f"f{i}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"x" * size)
            os.utime(path, (now - age, now - age))
            made.append((now - age, size, str(path)))
    store.flush()
    if keys:
        with sqlite3.connect(storefiles.database(cache)) as db:
            for i, (is_entry, _, age) in enumerate(items):
                if is_entry:
                    db.execute("UPDATE entries SET used = ? WHERE key = ?",
                               (now - age, bytes.fromhex(store.key("build", "trim", i))))
    found = cachetrim.entries(str(root))
    db = str(storefiles.database(cache))
    assert sorted(e.path for e in found if e.key is None) == sorted(p for _, _, p in made)
    assert sorted(e.key.hex() for e in found if e.key is not None) == sorted(keys)
    assert all(e.path == db for e in found if e.key is not None)
    assert sum(e.size for e in found if e.key is not None) <= cachetrim._files(str(root))[1]  # what trim rests on
    live = sorted(found, key=lambda e: (e.used, e.size, e.path, e.key or b""))
    total, expected = sum(e.size for e in live), []
    if total > limit:
        left = total
        for e in live:
            if left <= cachetrim.KEEP * limit:
                break
            expected.append(e)
            left -= e.size
    assert cachetrim.trim(str(root), limit, now) == expected
    gone = {e.key.hex() for e in expected if e.key is not None}
    for k, p in keys.items():
        assert store.get("build", k) == (None if k in gone else p)
    store.flush()


def test_a_trim_under_the_limit_does_not_open_the_store(cache, monkeypatch):
    """The trim lists the store's entries only when the cache's files, the store's with them,
    pass the limit (its entries total no more than its files: a first build's trim opened
    the database it had just closed, ~0.5 ms); over it, entries are removed as before."""
    from rcpc.core import cachetrim

    made = _fill(3)
    opened, real = [], store.usage
    monkeypatch.setattr(store, "usage", lambda directory: opened.append(directory) or real(directory))
    root = str(cache / "rcpc")
    assert cachetrim.trim(root, 1 << 30, 2_000_000_000) == [] and opened == []
    removed = cachetrim.trim(root, 1, 2_000_000_000)
    assert len(opened) == 1 and sorted(e.key.hex() for e in removed) == sorted(made)
    assert all(store.get("build", k) is None for k in made)


WORKERS = """
from rcpc.build import parallel
parallel.MIN_PARALLEL_BYTES = 0
from rcpc.__main__ import exit_now, run
exit_now(run(["check", "-j", "2"]))
"""


ADOPTED = """
from rcpc.build import parallel, pool
from rcpc.core import store
parallel.MIN_PARALLEL_BYTES = 0
store.PENDING_BYTES = 0  # each worker's entries written as soon as they are adopted
held, real = [], pool.run


def run(jobs, items, work, init, each=None, lost=None):
    def spy(k, outcome):
        each(k, outcome)
        held.append(outcome[3])  # the worker's entries, as the pool keeps them to its end
    return real(jobs, items, work, init, spy, lost)


pool.run = run
from rcpc.__main__ import exit_now, run as main
code = main(["check", "-j", "2"])
assert len(held) == 6 and not any(held), held
exit_now(code)
"""


@pytest.mark.parametrize("script", [WORKERS, ADOPTED], ids=["at the end", "as they come"])
def test_entries_made_in_workers_are_written_by_the_main_process(cached_ws, script):
    """``-j`` workers hand the entries they made to the main process, which writes them with
    its own (a worker is stopped, never left to write): every recipe compiled in a worker has
    its build entry, read back whole. The main process adopts a worker's entries when its
    result comes and keeps none of them to the last result (at 1,000 recipes they were 28 MB of
    its memory): with no pending budget (``ADOPTED``), every result's entries are written at
    once and the results the pool holds keep none."""
    for k in range(6):
        (cached_ws / "recipes" / f"w{k}.rcp").write_text(f'X = {k}\nvariant("default")\n')
    env = {**os.environ, "XDG_CACHE_HOME": str(cached_ws.parent / "cache")}
    r = subprocess.run([sys.executable, "-c", script], cwd=cached_ws, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    texts = [storefiles.payload("build", key, data).decode()
             for key, _, data in storefiles.rows(cached_ws.parent / "cache", "build")]
    assert all(any(str((cached_ws / "recipes" / f"w{k}.rcp").resolve()) in t for t in texts) for k in range(6))


HELD = """
import os, sys
from rcpc.core import store
store.BUSY_S = 3600.0  # a wait would outlast the test's timeout
store.PENDING_BYTES = 0
store.put("build", store.key("build", "as it goes"), b"x" * 100)  # written at once: the lock is held
sys.exit(0 if not store._STATE.pending else 3)
"""


def test_a_write_made_as_a_run_goes_does_not_wait_for_another_writer(cache):
    """Entries written as a run goes (each PENDING_BYTES) are dropped while another process holds
    the database's write lock, at once: a build stood still for BUSY_S (10 s) at each, before its
    output was written, Ctrl-C unanswered in SQLite's wait. (Its end-of-run flush still waits.)"""
    store.put("build", store.key("build", "made the database"), b"x")
    store.flush()
    holder = sqlite3.connect(storefiles.database(cache), timeout=0)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another writer, mid-transaction
        r = subprocess.run([sys.executable, "-c", HELD], env={**os.environ, "XDG_CACHE_HOME": str(cache)},
                           capture_output=True, text=True, timeout=120)
    finally:
        holder.rollback()
        holder.close()
    assert r.returncode == 0, r.stderr
    assert not [k for k, _, _ in storefiles.rows(cache, "build") if k == store.key("build", "as it goes")]
