"""Attacks on the ``-j`` worker pool (:func:`rcpc.build.pool.run`) as a reviewer who
did not write it: a worker that ends at any byte of a result it is sending."""

from __future__ import annotations

import os
import signal
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rcpc.build import pool

ITEMS = [f"f{i}" for i in range(6)]


def _cut_worker(victim: str, size: int, cut_at: float):
    """A ``work`` whose result for ``victim`` is ``size`` bytes of text, and whose worker
    writes only part of that result's message (``cut_at``: the fraction of its bytes, the
    4-byte length header included) before it is SIGKILLed, as the out-of-memory killer or
    a ``kill -9`` ends a worker blocked writing a result larger than the pipe holds."""
    from multiprocessing import connection
    from multiprocessing.reduction import ForkingPickler

    def work(item):
        if item != victim:
            return "ok", item
        out = ("ok", "x" * size)

        def send(self, obj):
            body = bytes(ForkingPickler.dumps(obj))
            message = struct.pack("!i", len(body)) + body
            part = memoryview(message)[:int(len(message) * cut_at)]
            while part:  # blocks while the pipe is full, until the main process reads
                part = part[os.write(self._handle, part):]
            os.kill(os.getpid(), signal.SIGKILL)

        connection.Connection.send = send  # in this worker only (a forked copy)
        return out

    return work


@settings(max_examples=30, deadline=None)
@given(victim=st.sampled_from(ITEMS), size=st.sampled_from([10, 20_000, 300_000]),
       cut_at=st.floats(0, 1, exclude_max=True), jobs=st.integers(2, 3))
def test_a_worker_killed_while_sending_a_result_loses_only_that_item(victim, size, cut_at, jobs):
    """Whatever part of a result's message a worker wrote before it was killed (none, part
    of the length header, part of a result larger than a pipe holds), that item, and only
    it, is lost (E0952 in the CLI); the others are done. The main process used to raise
    ``OSError: got end of file during message`` from ``Connection.recv``, ending the whole
    build with an unlocated "rcpc: error: got end of file during message"."""
    import multiprocessing

    got = pool.run(jobs, ITEMS, _cut_worker(victim, size, cut_at), (None, {}), None,
                   lambda item, status: ("lost", item, status))
    assert got == [("lost", i, "killed by SIGKILL") if i == victim else ("ok", i) for i in ITEMS]
    assert not multiprocessing.active_children()


STOPPED_WORKER = """
import multiprocessing, os, signal, sys
from rcpc.build import pool

moment, sig = sys.argv[1], getattr(signal, sys.argv[2])
stopping_r, stopping_w = os.pipe()

def stopped(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:  # not Linux: no /proc
        return True

def work(item):
    if moment == "working" and item == "f1":  # the first worker's second item (chunks of one)
        os.write(stopping_w, b"%d," % os.getpid())
        os.kill(os.getpid(), sig)
    return item

def each(index, out):
    if moment == "idle" and index == 5:  # every result is in: the workers wait for more
        for child in multiprocessing.active_children():
            os.kill(child.pid, sig)
            while not stopped(child.pid):
                pass
    if moment == "working" and index == 0:
        pid = int(os.read(stopping_r, 32).split(b",")[0])
        while not stopped(pid):
            pass
        raise KeyboardInterrupt  # a Ctrl-C while that worker is stopped
try:
    print(pool.run(2, [f"f{i}" for i in range(6)], work, (None, {}), each))
except KeyboardInterrupt:
    print("interrupted")
print(multiprocessing.active_children())
"""


# SIGSTOP only: the kernel discards SIGTSTP sent to a process of an orphaned process group
# (POSIX; a CI job started under setsid/nohup), the worker never stopped and the test's wait
# for it spun until the 60 s guard (found in a .ci/run). A stopped worker is a stopped worker.
@pytest.mark.parametrize("sig", ["SIGSTOP"])
@pytest.mark.parametrize("moment", ["idle", "working"])
def test_a_stopped_worker_does_not_keep_the_pool_from_ending(moment, sig):
    """A worker stopped (SIGSTOP, as SIGTSTP or a debugger stop it) when the pool ends, done (``idle``:
    every result in) or interrupted (``working``: Ctrl-C while the worker is stopped in an
    item), is ended all the same: a stopped process keeps the pool's SIGTERM pending until it
    is continued, and the pool waited for it forever, Ctrl-C held."""
    import subprocess
    import sys

    try:  # a guard against the hang, not a timing: this takes well under a second
        r = subprocess.run([sys.executable, "-c", STOPPED_WORKER, moment, sig], capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the pool waited forever for a stopped worker")
    assert r.returncode == 0, r.stderr.decode()
    done = "['f0', 'f1', 'f2', 'f3', 'f4', 'f5']" if moment == "idle" else "interrupted"
    assert r.stdout.decode().split("\n")[:2] == [done, "[]"]


@pytest.mark.parametrize("fails", [1, 2, 5])
def test_a_results_pipe_that_fails_loses_that_workers_item_and_does_not_hang(fails, monkeypatch):
    """A read of a worker's results that fails (``OSError``: EIO; the ``fails``-th read of
    the pool) while the worker lives: that worker is ended and its item in progress lost,
    the others done; the pool waited forever to join the live worker."""
    import errno
    import multiprocessing
    from multiprocessing import connection

    real, reads, here = connection.Connection.recv, [], os.getpid()

    def recv(self):
        if os.getpid() != here:  # a worker (forked with this patch)
            return real(self)
        reads.append(self)
        if len(reads) == fails:
            raise OSError(errno.EIO, "I/O error")
        return real(self)

    monkeypatch.setattr(connection.Connection, "recv", recv)
    got = pool.run(2, ITEMS, lambda item: ("ok", item), (None, {}), None,
                   lambda item, status: ("lost", item, status))
    lost = [g for g in got if g[0] == "lost"]
    assert len(lost) == 1 and lost[0][2] in ("killed by SIGTERM", "killed by SIGCONT")
    assert [g for g in got if g[0] == "ok"] == [("ok", i) for i in ITEMS if i != lost[0][1]]
    assert not multiprocessing.active_children()
