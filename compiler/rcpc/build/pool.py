"""A pool of forked worker processes that does ``work(item)`` for a list of items, results
in order (:func:`run`): the mechanism of ``-j`` (:mod:`rcpc.build.parallel` decides when it pays).

Each worker is a ``multiprocessing`` process (``fork``: it inherits what the main process
loaded) that takes chunks of items from one pipe (:func:`chunk_sizes`; two chunks ahead, so
it never waits for the next) and sends one result per item on another, so the main process,
waiting on the result pipes and the processes' sentinels, always knows which item a worker
was on. ``multiprocessing.Pool``, used before, replaced a worker that died but never returned
the items it held and waited for them forever (CPython issue 22393, open since 2014).

Signals: workers ignore SIGINT (Ctrl-C is the main process's, which stops them: SIGTERM, then
SIGCONT for a stopped one, :func:`_stop`); the main process holds SIGINT and SIGTERM back
while it forks and while it stops them, so that no worker is left behind; a worker ends when
the main process does, even when that is killed outright (:func:`_die_with`).
"""

from __future__ import annotations

import os
import time
from collections import deque

from rcpc.core import testhook

# Items a worker takes at a time, at most (chunks: :func:`chunk_sizes`).
MAX_CHUNK = 16

# In a worker: ``state`` and the settings it was started with (:func:`run`).
WORKER: dict = {}
_AT_FORK: list = []      # the at-fork hooks are registered (once a process)
_FORKING = [False]      # a pool is forking a worker


def run(jobs: int, items: list, work, init: tuple, each=None, lost=None) -> list:
    """``work(item)`` for each item in ``min(jobs, len(items))`` forked workers, results in
    order. ``init`` is ``(state, settings)``: each worker starts with a copy of ``state`` (the
    :class:`~rcpc.domain.recipe.Compiler` as loaded so far, or None) and ``settings`` (a
    dict) in :data:`WORKER`. ``each(index, result)`` is called for each result as it
    arrives (in order). A bug in ``work`` (an exception) is raised here, the worker's
    traceback as its cause.

    A worker that ends while it has items (killed by the kernel's out-of-memory killer or a
    ``kill``, or crashed) does not stop the others: the item it was working on gets
    ``lost(item, status)`` as its result (``status``: how the process ended, as
    :func:`_status`; without ``lost``, :class:`ChildProcessError` is raised), its other
    items go to a worker started in its place (each loss takes one item, so this ends)."""
    return _Pool(jobs, items, work, init, each, lost).run()


def chunk_sizes(n: int, jobs: int) -> list[int]:
    """How ``n`` items are cut into the chunks workers take one at a time, in order:
    decreasing ("guided" scheduling, as OpenMP's ``schedule(guided)``), each a quarter of
    what is left per worker, at most :data:`MAX_CHUNK` and at least 1. Few chunks (each
    one message each way) while much is left, single items at the end, so that the workers
    finish within about one item of each other (a fixed chunk left the others idle for
    half a chunk at the end). The sizes add up to ``n``."""
    sizes = []
    while n > 0:
        size = max(1, min(MAX_CHUNK, n // (4 * jobs)))
        sizes.append(size)
        n -= size
    return sizes


class _Pool:
    """The state of one :func:`run`: items not yet given out (``pending``, chunks of item
    indexes), the live workers by the connection their results come on, and the results,
    handed to ``each`` in order as soon as every one before them is in."""

    def __init__(self, jobs: int, items: list, work, init: tuple, each, lost):
        import multiprocessing

        methods = multiprocessing.get_all_start_methods()
        self.ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
        self.jobs, self.items, self.work, self.init, self.each, self.lost = jobs, items, work, init, each, lost
        self.pending = deque()
        at = 0
        for size in chunk_sizes(len(items), jobs):
            self.pending.append(list(range(at, at + size)))
            at += size
        self.workers: dict = {}
        self.results: list = [None] * len(items)
        self.got = [False] * len(items)
        self.released = 0

    def run(self) -> list:
        from multiprocessing.connection import wait


        if not _AT_FORK:
            os.register_at_fork(after_in_child=_worker_signals, after_in_parent=_forked)
            _AT_FORK.append(True)
        _hold_interrupts(True)
        try:
            for _ in range(min(self.jobs, len(self.items))):
                self._start()
            testhook.point("pool")
            _hold_interrupts(False)  # a Ctrl-C that came while the pool started lands here
            for w in self.workers.values():
                self._feed(w)
            while self.released < len(self.items):
                by_sentinel = {w.process.sentinel: conn for conn, w in self.workers.items()}
                for ready in wait([*self.workers, *by_sentinel]):
                    conn = by_sentinel.get(ready, ready)
                    if conn not in self.workers:
                        continue  # ended already, in this round
                    try:
                        if ready is conn:
                            self._received(conn)
                            continue
                        while conn.poll():  # its process ended: what it sent first
                            self._received(conn)
                    except EOFError:
                        pass
                    self._ended(conn)
            return self.results
        finally:
            self._close()

    def _start(self) -> None:
        """Fork one worker (SIGINT and SIGTERM held: :func:`_worker_signals`)."""

        _FORKING[0] = True
        try:
            tasks_r, tasks_w = self.ctx.Pipe(duplex=False)
            results_r, results_w = self.ctx.Pipe(duplex=False)
            process = self.ctx.Process(target=_serve, args=(tasks_r, results_w, self.work, os.getpid(), *self.init),
                                       daemon=True)
            process.start()
            tasks_r.close()   # the worker's ends: once it ends, reading its results gives EOF
            results_w.close()
            self.workers[results_r] = _Worker(process, tasks_w, deque())
        finally:
            _FORKING[0] = False

    def _feed(self, w: _Worker) -> None:
        """Give ``w`` chunks until it holds two: it never waits for its next one."""

        while self.pending and len(w.chunks) < 2:
            chunk = self.pending.popleft()
            w.chunks.append(deque(chunk))
            try:
                w.tasks.send([(i, self.items[i]) for i in chunk])
            except OSError:  # it has ended: its sentinel says so (_ended)
                pass

    def _arrived(self, index: int, out) -> None:
        self.results[index], self.got[index] = out, True
        while self.released < len(self.items) and self.got[self.released]:
            if self.each is not None:
                self.each(self.released, self.results[self.released])
            self.released += 1

    def _received(self, conn) -> None:
        """One result from the worker of ``conn`` (EOFError: the worker has ended)."""
        try:
            index, out, raised = conn.recv()
        except OSError as exc:  # "got end of file during message": it ended while sending it
            raise EOFError from exc
        w = self.workers[conn]
        w.chunks[0].popleft()
        if not w.chunks[0]:
            w.chunks.popleft()
            self._feed(w)
        if raised is not None:
            raise _raised(*raised)
        self._arrived(index, out)

    def _ended(self, conn) -> None:
        """The worker of ``conn`` has ended (or its results pipe has): its item in progress
        is lost, its other items go to a worker started in its place."""
        w = self.workers.pop(conn)
        if w.process.exitcode is None:  # a pipe that failed (EIO) with the worker alive: the
            _stop(w.process.pid)        # join below waited forever; an ending one keeps its status
        w.process.join()
        left = [i for chunk in w.chunks for i in chunk]
        if left:
            status = _status(w.process.exitcode)
            if self.lost is None:
                raise ChildProcessError(f"a -j worker ended before it was done ({status})")
            self._arrived(left[0], self.lost(self.items[left[0]], status))
            if left[1:]:
                self.pending.appendleft(left[1:])
        conn.close()
        w.tasks.close()
        if self.pending:
            _hold_interrupts(True)
            try:
                self._start()
            finally:
                _hold_interrupts(False)
            for c in self.workers:
                self._feed(self.workers[c])

    def _close(self) -> None:
        """Stop every worker and wait for it, Ctrl-C held: none is left behind."""
        _hold_interrupts(True)
        try:
            for w in self.workers.values():
                if w.process.exitcode is None:
                    _stop(w.process.pid)
            for conn, w in self.workers.items():
                w.process.join()
                conn.close()
                w.tasks.close()
        finally:
            _hold_interrupts(False)


class _Worker:
    """A worker process of a :class:`_Pool`, the pipe it takes items from and the chunks
    of item indexes it holds (the first being worked on), in order. (Not an attrs class:
    ``rcpc build`` imports attrs only through jsonschema, tests/test_startup_imports.py.)"""

    __slots__ = ("process", "tasks", "chunks")

    def __init__(self, process, tasks, chunks):
        self.process, self.tasks, self.chunks = process, tasks, chunks


def _stop(pid: int) -> None:
    """End the worker process ``pid``: SIGTERM, then SIGCONT, as a shell's ``kill`` does for
    a stopped job: a stopped process (SIGSTOP, SIGTSTP, a debugger) keeps a SIGTERM pending
    until it is continued, and the pool, waiting for it to end with interrupts held, waited
    forever. Nothing when it has ended already."""
    import signal

    for sig in (signal.SIGTERM, signal.SIGCONT):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:  # ended (a zombie still takes signals): nothing to do
            return


def _status(code: int) -> str:
    """How a process with exit code ``code`` (``multiprocessing.Process.exitcode``: minus the
    signal number when a signal ended it) ended, in words: ``killed by SIGKILL``,
    ``exit status 9``."""
    import signal

    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _serve(tasks, results, work, parent: int, state, settings: dict) -> None:
    """A worker's life: set up (:func:`_start_worker`), then ``work(item)`` for each item of
    each chunk it takes from ``tasks``, one result sent on ``results`` per item, so the main
    process knows which item a worker that ended was working on. An exception that is not
    a result (a bug) is sent as such and raised in the main process (:func:`_raised`)."""
    _start_worker(parent, state, settings)

    while True:
        try:
            chunk = tasks.recv()
        except EOFError:
            return
        for index, item in chunk:
            testhook.kill(getattr(item, "name", None))
            out = raised = None
            try:
                out = work(item)
            except Exception as exc:
                import traceback

                raised = (_portable(exc), traceback.format_exc())
            try:
                results.send((index, out, raised))
            except Exception as exc:  # something that does not pickle, or memory ran out pickling it
                _unsent(results, index, raised, exc)


def _unsent(results, index: int, raised, exc: Exception) -> None:
    """Send what stands for item ``index``'s result that could not be sent (``exc``): a
    MemoryError when memory ran out doing its work or sending it (the main process then says
    so, as for its own), else the traceback's text. A worker that cannot send even that ends
    at once, printing nothing: its item is lost (``lost``: ``E0952``), not a traceback."""
    import traceback

    short = isinstance(exc, MemoryError) or (raised is not None and isinstance(raised[0], MemoryError))
    try:
        results.send((index, None, (MemoryError() if short else None, raised[1] if raised else traceback.format_exc())))
    except BaseException:
        os._exit(1)


def _portable(exc: BaseException) -> BaseException | None:
    """``exc`` when the main process can rebuild it from its pickle, else None (sent as its
    traceback's text, :func:`_raised`): an exception whose ``__init__`` takes other arguments
    than its ``args`` (``class E(Exception): def __init__(self, a, b)``) pickles but fails
    to unpickle, and the main process raised that ``TypeError`` from ``Connection.recv``,
    the worker's traceback lost."""
    from multiprocessing.reduction import ForkingPickler

    if isinstance(exc, MemoryError):  # a new one: pickling this one may need the memory there is not
        return MemoryError()
    try:
        ForkingPickler.loads(ForkingPickler.dumps(exc))
    except Exception:
        return None
    return exc


def _raised(exc: BaseException | None, text: str) -> BaseException:
    """The exception ``exc`` a worker raised (None: one that could not be sent), to raise in
    the main process with the worker's traceback ``text`` as its cause (as
    ``multiprocessing.Pool`` does)."""
    exc = exc if exc is not None else RuntimeError("a -j worker failed")
    exc.__cause__ = _RemoteTraceback(text)
    return exc


class _RemoteTraceback(Exception):
    """A worker's traceback, shown as the cause of the exception it raised."""

    def __str__(self) -> str:
        return "\n\n" + self.args[0]


def _worker_signals() -> None:
    """Right after fork, in a pool's worker: SIGINT ignored (Ctrl-C is the main process's)
    and SIGTERM the default (the pool stops workers with it). Set before any Python code of
    the worker runs, since the CLI's handlers inherited from the parent turned a SIGTERM
    sent by the pool before the worker's set-up into a KeyboardInterrupt
    traceback (found by the interrupt tests in CI, once in two runs). The parent holds
    SIGINT and SIGTERM back (blocked) while it creates a pool, so that an interrupt cannot
    land while workers are forked (``multiprocessing.Pool``, used before, then kept replacing
    the workers it stopped at exit, and a replacement printed a traceback); a worker starts with them
    blocked too, and unblocks them here once their dispositions are set."""
    if _FORKING[0]:
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _hold_interrupts(False)


def _forked() -> None:
    """Right after fork, in the main process, while a pool starts workers: a test hook."""
    if _FORKING[0]:
        testhook.point("fork")


def _hold_interrupts(hold: bool) -> None:
    """Block (``hold``) or unblock SIGINT and SIGTERM in the calling thread (POSIX
    ``pthread_sigmask``; threads and processes it starts inherit the mask); a signal that
    came while blocked is delivered on unblocking. Nothing where there is no such call."""
    import signal

    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK if hold else signal.SIG_UNBLOCK,
                               {signal.SIGINT, signal.SIGTERM})


def _start_worker(parent: int, state, settings: dict) -> None:
    """A worker's set-up: signals, its end with the main process, :data:`WORKER`."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)   # set at fork already (_worker_signals)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with(parent)

    testhook.point("worker")
    WORKER.update(settings, state=state)


def _die_with(parent: int) -> None:
    """End this worker when the main process ends, even by SIGKILL: an orphaned worker used
    to finish its recipe and then print a BrokenPipeError traceback, writing to a pipe
    nobody reads. Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``; elsewhere a thread that
    watches the parent process id."""
    import signal

    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(1, int(signal.SIGKILL), 0, 0, 0) != 0:  # 1: PR_SET_PDEATHSIG
            raise OSError(ctypes.get_errno(), "prctl")
    except (ImportError, OSError, AttributeError):
        def watch():
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        import threading

        threading.Thread(target=watch, daemon=True).start()
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)
