"""Interrupts and dying processes, driven deterministically (issue 12, items 7 and 11): no
sleeps, no timing. Signals are injected by ``strace -e inject=SYSCALL:signal=SIG:when=N``
at every write-side system call of a build (once, and repeated at every later call: a
repeated Ctrl-C), and races with worker processes are set up with the ``RCPC_TEST_STOP``
hook (:mod:`rcpc.core.testhook`), which makes a process report its pid on a pipe and wait for a
go on another.

The property, wherever the signal lands: exit 0 or 130, never a traceback; after exit 130
the message says what is on disk ("nothing was written": the previous output whole; "the
new output was written in full": the new one); no temporary directory or file is left in
the output or the cache; the next build gives the new output.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import area_leftovers, output_tree

# all in one pytest-xdist worker (tests/run: --dist loadgroup): its module fixture (the template builds and syscall counts) runs once
pytestmark = pytest.mark.xdist_group("test_interrupts")

RECIPE = '''load("//recipes/lib/l.rcp", "LR")
N = param(int, default = {n})
F = maxtext_flags({{"learning_rate": LR, "steps": N}})
flag_file(name = "trainer", flags = F)
manifest(name = "m", apiVersion = "v1", kind = "ConfigMap", data = {{"n": str(N)}})
variant("default")
variant("more", set = {{"N": N + 1}})
'''
STRACE = shutil.which("strace")
SYSCALLS = ("write", "rename", "mkdir", "rmdir")  # what a build changes on disk with
TRACEBACK = re.compile(r"Traceback|Exception ignored|Fatal Python error")


def tree(out: Path) -> dict:
    """What a reader of output directory ``out`` sees (rcpc's links followed)."""
    return output_tree(out)


def env(cache: Path) -> dict:
    # no .pyc written while importing: the write-side calls traced are rcpc's own
    return {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONDONTWRITEBYTECODE": "1"}


def rcpc(cwd: Path, *args, cache: Path, prefix=(), **kw):
    return subprocess.run([*prefix, sys.executable, "-m", "rcpc", *args], cwd=cwd, capture_output=True,
                          text=True, env=env(cache), timeout=120, **kw)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A workspace whose output holds the build of N = 2 (``old``), its recipe changed to
    N = 5 (whose build is ``new``), and how many times a cold build calls each syscall."""
    root = tmp_path_factory.mktemp("interrupts")
    ws = root / "ws"
    (ws / "recipes" / "lib").mkdir(parents=True)
    (ws / "rcp.toml").write_text("")
    (ws / "recipes" / "lib" / "l.rcp").write_text("LR = 1e-6\n")
    (ws / "recipes" / "r.rcp").write_text(RECIPE.format(n=5))
    assert rcpc(ws, "build", cache=root / "c0").returncode == 0
    new = tree(ws / "rcpc-out")
    (ws / "recipes" / "r.rcp").write_text(RECIPE.format(n=2))
    shutil.rmtree(ws / "rcpc-out")
    assert rcpc(ws, "build", cache=root / "c1").returncode == 0
    old = tree(ws / "rcpc-out")
    (ws / "recipes" / "r.rcp").write_text(RECIPE.format(n=5))
    # lark's tables, if the first run wrote them (a valid build parses without lark: it does
    # not): each run starts with them, as after any first run
    grammar = next((root / "c0" / "rcpc").glob("grammar-*"), None)
    counts = {}
    for call in SYSCALLS:
        trial = _copy(ws, root / f"count-{call}")
        log = root / f"{call}.log"
        r = rcpc(trial, "build", "-j", "1", cache=_seeded(root / f"cc-{call}", grammar),
                 prefix=[STRACE, "-f", "-qq", "-o", str(log), "-e", f"trace={call}"])
        assert r.returncode == 0 and tree(trial / "rcpc-out") == new
        counts[call] = sum(1 for line in log.read_text().splitlines() if f"{call}(" in line)
    return ws, old, new, counts, grammar


def _seeded(cache: Path, grammar: Path | None) -> Path:
    (cache / "rcpc").mkdir(parents=True)
    if grammar is not None:
        shutil.copy(grammar, cache / "rcpc" / grammar.name)
    return cache


def _copy(ws: Path, to: Path) -> Path:
    shutil.rmtree(to, ignore_errors=True)
    shutil.copytree(ws, to, symlinks=True)
    return to


def injections(counts: dict, full: bool):
    """(syscall, N, repeated, signal): the signal at the N-th call of each syscall (and one
    past the last: never delivered), or at the N-th and every later one (repeated: at the
    first, middle and last call; at every one when ``full``). SIGINT and SIGTERM alternate."""
    out = []
    for call in SYSCALLS:
        last = counts[call]
        for n in range(1, last + 2):
            out.append((call, n, False, ("INT", "TERM")[n % 2]))
            if full or n in (1, (last + 1) // 2, last):
                out.append((call, n, True, ("TERM", "INT")[n % 2]))
    return out


def interrupted_build(template, tmp_path: Path, case) -> str:
    """Run one injected build in a copy of the template; assert the property. Returns how
    it ended ("completed", "old", "new")."""
    ws, old, new, _, grammar = template
    call, n, repeated, sig = case
    trial = _copy(ws, tmp_path / f"{call}-{n}-{repeated}")
    cache = _seeded(tmp_path / f"cache-{call}-{n}-{repeated}", grammar)
    when = f"{n}+" if repeated else str(n)
    r = rcpc(trial, "build", "-j", "1", cache=cache,
             prefix=[STRACE, "-f", "-qq", "-o", "/dev/null", "-e", f"trace={call}",
                     "-e", f"inject={call}:signal={sig}:when={when}"])
    where = f"SIG{sig} at {call} #{when}: exit {r.returncode}\n{r.stderr}"
    assert not TRACEBACK.search(r.stderr), where
    got = tree(trial / "rcpc-out")
    leftovers = area_leftovers(trial / "rcpc-out")  # an interrupted build cleans up what it staged
    leftovers += [p.name for p in cache.rglob("*.tmp")]
    assert not leftovers, where
    if r.returncode == 0:
        outcome = "completed"
        assert got == new, where
    else:
        assert r.returncode == 130, where
        last = r.stderr.splitlines()[-1]
        assert last in ("rcpc: interrupted; nothing was written",
                        "rcpc: interrupted; the new output was written in full"), where
        outcome = "old" if last.endswith("nothing was written") else "new"
        assert got == (old if outcome == "old" else new), where
    if r.returncode == 130:  # the caches an interrupted run left behind do not lie
        again = rcpc(trial, "build", "-j", "1", cache=cache)
        assert again.returncode == 0 and tree(trial / "rcpc-out") == new, f"{where}\nthen: {again.stderr}"
    return outcome


@pytest.mark.skipif(sys.platform != "linux", reason="strace is Linux's")
def test_a_signal_at_any_write_side_syscall_leaves_old_or_new_output(template, tmp_path):
    """Item 11 (the interrupt tests failed 1 run in 10: a signal sent after a sleep could land
    in the interpreter's start-up) and item 7 (repeated Ctrl-C must exit 130, never a
    traceback): every injection point of a build, in two threads (``RCPC_TEST_FULL=1``: a
    repeated signal from every point too)."""
    assert STRACE, "strace is needed (Debian: apt-get install strace; .ci/run installs it)"
    cases = injections(template[3], full=bool(os.environ.get("RCPC_TEST_FULL")))
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(lambda c: interrupted_build(template, tmp_path, c), cases))
    assert {"completed", "old", "new"} <= set(outcomes)  # each ending was reached


# worker processes ----------------------------------------------------------------------------
def _waiting_workers(ws: Path, tmp_path: Path, count: int, points: str = "worker", expect: int = 2):
    """Start ``rcpc build -j 2`` of ``count`` recipes whose processes wait at the test hook
    ``points`` (:mod:`rcpc.core.testhook`: ``worker``, a worker's start; ``fork``, the main
    process after forking a worker; ``pool``, the main process once its pool is made);
    returns (process, {point: [pids]}, go, every) once ``expect`` reports came: ``go()``
    lets them all go on; ``every()`` adds the points reached later, read to the end (when
    every process has ended): a handshake, not a wait."""
    from rcpc.build.parallel import MIN_PARALLEL_BYTES

    pad = "# padding: enough source for the -j policy to start workers\n" * (MIN_PARALLEL_BYTES // 50 // (count - 1))
    for i in range(count):
        (ws / "recipes" / f"r{i}.rcp").write_text(RECIPE.format(n=i) + pad)
    report_r, report_w = os.pipe()
    go_r, go_w = os.pipe()
    e = {**env(tmp_path / "cache"), "RCPC_TEST_STOP": points, "RCPC_TEST_STOP_FD": str(report_w),
         "RCPC_TEST_GO_FD": str(go_r), "RCPC_NO_CACHE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "rcpc", "build", "-j", "2"], cwd=ws, env=e,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(report_w, go_r))
    os.close(report_w)
    os.close(go_r)
    reports = os.fdopen(report_r)
    seen: dict = {}
    for _ in range(expect):
        point, pid = reports.readline().split()
        seen.setdefault(point, []).append(int(pid))

    def later() -> dict:
        with reports:
            for line in reports:
                point, pid = line.split()
                seen.setdefault(point, []).append(int(pid))
        return seen

    return proc, seen, lambda: os.close(go_w), later


def _gone(pid: int, timeout: float = 60) -> bool:
    """Whether process ``pid`` (not a child of ours) exits within ``timeout`` seconds (a pidfd:
    a limit for a hang, not a timing assumption)."""
    import select

    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


@pytest.fixture
def workspace(template, tmp_path):
    return _copy(template[0], tmp_path / "ws")


@pytest.mark.skipif(sys.platform != "linux", reason="/proc")
def test_workers_end_with_their_parent_killed_outright(workspace, tmp_path):
    """The reported fault: after kill -9 of rcpc, its workers finished their recipe and died
    on a BrokenPipeError traceback (orphans writing to a pipe nobody reads)."""
    proc, seen, go, _ = _waiting_workers(workspace, tmp_path, 6)
    pids = seen["worker"]
    proc.kill()
    try:
        _, err = proc.communicate(timeout=60)  # EOF only once every worker holding stderr has ended
        assert proc.returncode == -signal.SIGKILL
        assert all(_gone(pid) for pid in pids)
        assert not TRACEBACK.search(err.decode())
    finally:
        go()


@pytest.mark.skipif(sys.platform != "linux", reason="/proc")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_while_workers_compile_exits_130(workspace, tmp_path, sig):
    _interrupted_with_workers(workspace, tmp_path, sig, "worker", 2)


@pytest.mark.skipif(sys.platform != "linux", reason="/proc")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("points, expect", [("fork,worker", 2), ("pool,worker", 3)])
def test_an_interrupt_while_the_pool_starts_exits_130(workspace, tmp_path, sig, points, expect):
    """The signal comes while the main process makes its pool (``fork``: after a worker is
    forked) or right after (``pool``): an interrupt inside ``multiprocessing.Pool()``, used
    before, left a pool whose handler replaced the workers ``multiprocessing`` stopped at
    exit, and a replacement printed a BrokenPipeError traceback (once in ten runs under load).
    ``fork``: the first worker and the main process report (the second is not forked yet);
    ``pool``: both workers and the main process."""
    _interrupted_with_workers(workspace, tmp_path, sig, points, expect)


def _interrupted_with_workers(workspace: Path, tmp_path: Path, sig, points: str, expect: int) -> None:
    """Signal ``sig`` twice (a repeated Ctrl-C) once ``expect`` processes wait at
    ``points``: exit 130, "nothing was written", no traceback, every worker gone, no more
    workers started than the pool holds (2: none replaced), the output as before."""
    before = tree(workspace / "rcpc-out")
    proc, _, go, every = _waiting_workers(workspace, tmp_path, 6, points, expect)
    proc.send_signal(sig)
    proc.send_signal(sig)
    go()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    assert err.decode().splitlines()[-1] == "rcpc: interrupted; nothing was written", err.decode()
    assert not TRACEBACK.search(err.decode())
    workers = every().get("worker", [])
    assert len(workers) <= 2
    assert all(_gone(pid) for pid in workers)
    assert tree(workspace / "rcpc-out") == before
