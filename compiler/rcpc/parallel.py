"""Compiling the recipes of a command: each from the build cache when its inputs are
unchanged, the others in this process or, with ``-j N`` (default: the CPUs this process may
use), in N worker processes. ``rcpc fmt`` formats files the same way
(:func:`format_files`).

The ``-j`` policy, so that ``-j N`` is never slower than ``-j 1``: the first recipe that
needs compiling is compiled in this process, which imports the compiler and parses and
evaluates the libraries it loads; workers are then forked only when at least
:data:`MIN_PARALLEL` more recipes need compiling and their sources hold at least
:data:`MIN_PARALLEL_BYTES` (a recipe's cost grows with its size; below that, forking and
sending results back cost more than the second CPU saves: measured with
``bench/editloop.py`` and ``bench/peers.py``). Each worker inherits that compiler (``fork``):
modules imported, libraries parsed and evaluated once, in the parent. Results come back in
the order of the recipes given, whatever order they finish in, so output and diagnostics are
the same as with ``-j 1``. Workers ignore SIGINT: Ctrl-C reaches the main process, which stops
them (SIGTERM) and writes nothing. A worker ends when the main process does, even when that
is killed outright (:func:`_die_with`). A worker that ends before it is done fails only the
item it was working on (``E0952``; :func:`_in_workers`).
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from rcpc.cache import BuildCache, compile_fresh
from rcpc.core.diagnostics import CompileError

MIN_PARALLEL = 4
MIN_PARALLEL_BYTES = 64 * 1024  # source bytes of the recipes left to compile
# Items a worker takes at a time, at most (chunks: :func:`chunk_sizes`).
MAX_CHUNK = 16


def default_jobs() -> int:
    """The number of CPUs this process may run on (``sched_getaffinity``, else ``cpu_count``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def compile_recipes(ws, get_compiler, cache: BuildCache, options: list[str], paths: list[Path],
                    variant: str | None = None, sets: list[str] | None = None, lint: bool = False,
                    jobs: int = 1, arrived=None) -> list:
    """Compile the recipes ``paths`` of workspace ``ws``: each from ``cache`` when its inputs
    are unchanged, else by :func:`rcpc.cache.compile_fresh` with ``get_compiler()`` or in
    workers. ``options`` are the request's cache options. Returns, per path, in order,
    ``(builds, found, deps)`` or the :class:`~rcpc.core.diagnostics.CompileError` it raised.
    ``arrived(path, (builds, found, deps))``: called in this process for each recipe a
    worker compiled, as its result arrives, while the workers go on (work that would else
    wait for the last one)."""
    results: list = [None] * len(paths)
    misses = []
    for i, path in enumerate(paths):
        hit = cache.lookup(path, options)
        if hit is None:
            misses.append(i)
        else:
            results[i] = hit
    for n, i in enumerate(misses):
        if n == 1 and _worth_workers(jobs, [paths[j] for j in misses[1:]]):
            rest = misses[1:]

            def each(k: int, outcome: tuple) -> None:
                if arrived is not None and outcome[0] == "ok":
                    arrived(paths[rest[k]], outcome[1])

            outcomes = _in_workers(jobs, [paths[j] for j in rest], _work,
                                   (compiler, {"args": (cache, options), "kwargs": (variant, sets, lint)}), each,
                                   lambda path, status: ("error", [_lost(ws, path, status, "compiling")], {}))
            for j, (kind, outcome, read) in zip(rest, outcomes):
                results[j] = outcome if kind == "ok" else CompileError(outcome)
                cache.note(read)  # the files as the worker read them, for later lookups
            return results
        compiler = get_compiler()
        try:
            results[i] = compile_fresh(compiler, cache, options, paths[i], variant, sets, lint)
        except CompileError as exc:
            results[i] = exc
        cache.note(compiler.read_digests())
    return results


def _lost(ws, path: Path, status: str, doing: str):
    """``E0952``: the -j worker ``doing`` (compiling, formatting) the file ``path`` ended
    (``status``: :func:`_ended`) before it gave a result."""
    from rcpc.core.diagnostics import Diagnostic
    from rcpc.core.source import file_span

    return Diagnostic("E0952", f"the -j worker process {doing} this file ended before it was done ({status})",
                      file_span(ws.display(path)),
                      hint="the kernel's out-of-memory killer (see `dmesg`) or a `kill` ends a process so; the "
                           "other files were done by the other workers. With `-j 1` the file is done in rcpc's "
                           "own process")


def _worth_workers(jobs: int, paths: list[Path]) -> bool:
    """The -j policy (module docstring): enough recipes left, with enough source, for
    workers to pay for themselves."""
    if jobs < 2 or len(paths) < MIN_PARALLEL:
        return False
    size = 0
    for p in paths:
        try:
            size += os.stat(p).st_size
        except OSError:  # reported when it is compiled
            pass
    return size >= MIN_PARALLEL_BYTES


def format_files(ws, get_compiler, paths: list[Path], jobs: int = 1) -> list:
    """Format the files ``paths`` of workspace ``ws`` (:func:`rcpc.core.fmt.format_file`) with
    ``get_compiler()`` or, when the -j policy says so (:func:`_worth_workers`), in
    workers. Returns, per path, in order, the canonical text, ``None`` when the file is
    canonical already, or the :class:`~rcpc.core.diagnostics.CompileError` or
    :class:`~rcpc.core.fmt.FormatterBug` it raised."""
    if _worth_workers(jobs, paths):
        from rcpc.domain.recipe import Compiler

        outcomes = _in_workers(jobs, paths, _format_work, (Compiler(ws), {}), None,
                               lambda path, status: ("error", [_lost(ws, path, status, "formatting")]))
    else:
        outcomes = [_format_one(get_compiler(), path) for path in paths]
    from rcpc.core.fmt import FormatterBug

    made = {"ok": lambda x: x, "error": CompileError, "bug": FormatterBug}
    return [made[kind](value) for kind, value in outcomes]


def _in_workers(jobs: int, items: list, work, init: tuple, each=None, lost=None) -> list:
    """``work(item)`` for each item in ``min(jobs, len(items))`` forked workers (each with
    a copy of the :class:`~rcpc.domain.recipe.Compiler` ``init[0]``, as loaded so far, and the
    settings ``init[1]``), results in order; ``each(index, result)`` is called for each
    as it arrives (in order).

    A worker that ends while it has items (killed by the kernel's out-of-memory killer or a
    ``kill``, or crashed) does not stop the others: the item it was working on gets
    ``lost(item, status)`` as its result (``status``: how the process ended, as
    :func:`_ended`; without ``lost``, :class:`ChildProcessError` is raised), its other
    items go to a worker started in its place (each loss takes one item, so this ends). ``multiprocessing.Pool`` could not be used for this: it
    replaces a dead worker but never returns the items it held, and waits for them forever
    (CPython issue 22393, open since 2014)."""
    import multiprocessing
    from collections import deque
    from multiprocessing.connection import wait

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    if not _AT_FORK:
        os.register_at_fork(after_in_child=_worker_signals, after_in_parent=_forked)
        _AT_FORK.append(True)
    pending = deque()   # chunks not given to a worker yet: lists of item indexes
    at = 0
    for size in chunk_sizes(len(items), jobs):
        pending.append(list(range(at, at + size)))
        at += size
    workers: dict = {}  # the results pipe's connection → _Worker
    results: list = [None] * len(items)
    got = [False] * len(items)
    released = 0

    def start() -> None:  # with SIGINT and SIGTERM held (_worker_signals)
        _FORKING[0] = True
        try:
            tasks_r, tasks_w = ctx.Pipe(duplex=False)
            results_r, results_w = ctx.Pipe(duplex=False)
            process = ctx.Process(target=_serve, args=(tasks_r, results_w, work, os.getpid(), *init), daemon=True)
            process.start()
            tasks_r.close()   # the worker's ends: once it ends, reading its results gives EOF
            results_w.close()
            workers[results_r] = _Worker(process, tasks_w, deque())
        finally:
            _FORKING[0] = False

    def feed(w: _Worker) -> None:  # two chunks ahead: a worker never waits for the next one
        while pending and len(w.chunks) < 2:
            chunk = pending.popleft()
            w.chunks.append(deque(chunk))
            try:
                w.tasks.send([(i, items[i]) for i in chunk])
            except OSError:  # it has ended: its sentinel says so (ended below)
                pass

    def arrived(index: int, out) -> None:
        nonlocal released
        results[index], got[index] = out, True
        while released < len(items) and got[released]:
            if each is not None:
                each(released, results[released])
            released += 1

    def received(conn) -> None:  # one result (EOFError: the worker has ended)
        try:
            index, out, raised = conn.recv()
        except OSError as exc:  # "got end of file during message": it ended while sending it
            raise EOFError from exc
        w = workers[conn]
        w.chunks[0].popleft()
        if not w.chunks[0]:
            w.chunks.popleft()
            feed(w)
        if raised is not None:
            raise _raised(*raised)
        arrived(index, out)

    def ended(conn) -> None:  # its results pipe ended, its process ended (or is ending)
        w = workers.pop(conn)
        if w.process.exitcode is None:  # a pipe that failed (EIO) with the worker alive: the
            _stop(w.process.pid)        # join below waited forever; an ending one keeps its status
        w.process.join()
        left = [i for chunk in w.chunks for i in chunk]
        if left:
            status = _ended(w.process.exitcode)
            if lost is None:
                raise ChildProcessError(f"a -j worker ended before it was done ({status})")
            arrived(left[0], lost(items[left[0]], status))
            if left[1:]:
                pending.appendleft(left[1:])
        conn.close()
        w.tasks.close()
        if pending:
            _hold_interrupts(True)
            try:
                start()
            finally:
                _hold_interrupts(False)
            for c in workers:
                feed(workers[c])

    _hold_interrupts(True)
    try:
        for _ in range(min(jobs, len(items))):
            start()
        from rcpc import testhook

        testhook.point("pool")
        _hold_interrupts(False)  # a Ctrl-C that came while the pool started lands here
        for w in workers.values():
            feed(w)
        while released < len(items):
            by_sentinel = {w.process.sentinel: conn for conn, w in workers.items()}
            for ready in wait([*workers, *by_sentinel]):
                conn = by_sentinel.get(ready, ready)
                if conn not in workers:
                    continue  # ended already, in this round
                try:
                    if ready is conn:
                        received(conn)
                        continue
                    while conn.poll():  # its process ended: what it sent first
                        received(conn)
                except EOFError:
                    pass
                ended(conn)
        return results
    finally:
        _hold_interrupts(True)  # a Ctrl-C now must not leave a worker behind
        try:
            for w in workers.values():
                if w.process.exitcode is None:
                    _stop(w.process.pid)
            for conn, w in workers.items():
                w.process.join()
                conn.close()
                w.tasks.close()
        finally:
            _hold_interrupts(False)


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


@attrs.define
class _Worker:
    """A worker process of :func:`_in_workers`, the pipe it takes items from and the chunks
    of item indexes it holds (the first being worked on), in order."""

    process: object
    tasks: object
    chunks: object


def _ended(code: int) -> str:
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


def _serve(tasks, results, work, parent: int, compiler, settings: dict) -> None:
    """A worker's life: set up (:func:`_start_worker`), then ``work(item)`` for each item of
    each chunk it takes from ``tasks``, one result sent on ``results`` per item, so the main
    process knows which item a worker that ended was working on. An exception that is not
    a result (a bug) is sent as such and raised in the main process (:func:`_raised`)."""
    _start_worker(parent, compiler, settings)
    from rcpc import testhook

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
            except Exception:  # something that does not pickle: a traceback, as text
                import traceback

                results.send((index, None, (None, raised[1] if raised else traceback.format_exc())))


def _portable(exc: BaseException) -> BaseException | None:
    """``exc`` when the main process can rebuild it from its pickle, else None (sent as its
    traceback's text, :func:`_raised`): an exception whose ``__init__`` takes other arguments
    than its ``args`` (``class E(Exception): def __init__(self, a, b)``) pickles but fails
    to unpickle, and the main process raised that ``TypeError`` from ``Connection.recv``,
    the worker's traceback lost."""
    from multiprocessing.reduction import ForkingPickler

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


_WORKER: dict = {}
_AT_FORK: list = []      # the at-fork hook is registered (once a process)
_FORKING = [False]      # a pool is starting or replacing workers


def _worker_signals() -> None:
    """Right after fork, in a pool's worker: SIGINT ignored (Ctrl-C is the main process's)
    and SIGTERM the default (the pool stops workers with it). Set before any Python code of
    the worker runs, since the CLI's handlers inherited from the parent turned a SIGTERM
    sent by ``Pool.terminate`` before the worker's initializer into a KeyboardInterrupt
    traceback (found by the interrupt tests in CI, once in two runs). The parent holds
    SIGINT and SIGTERM back (blocked) while it creates a pool, so that an interrupt cannot
    land inside ``Pool()`` (the pool then kept replacing the workers ``multiprocessing``
    stopped at exit, and a replacement printed a traceback); a worker starts with them
    blocked too, and unblocks them here once their dispositions are set."""
    if _FORKING[0]:
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _hold_interrupts(False)


def _forked() -> None:
    """Right after fork, in the main process, while a pool starts workers: a test hook."""
    if _FORKING[0]:
        from rcpc import testhook

        testhook.point("fork")


def _hold_interrupts(hold: bool) -> None:
    """Block (``hold``) or unblock SIGINT and SIGTERM in the calling thread (POSIX
    ``pthread_sigmask``; threads and processes it starts inherit the mask); a signal that
    came while blocked is delivered on unblocking. Nothing where there is no such call."""
    import signal

    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK if hold else signal.SIG_UNBLOCK,
                               {signal.SIGINT, signal.SIGTERM})


def _start_worker(parent: int, compiler, settings: dict) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)   # set at fork already (_worker_signals)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with(parent)
    from rcpc import testhook

    testhook.point("worker")
    _WORKER.update(compiler=compiler, read=0 if compiler is None else compiler.files_read(), **settings)


def _format_work(path: Path) -> tuple:
    return _format_one(_WORKER["compiler"], path)


def _format_one(compiler, path: Path) -> tuple:
    """("ok", canonical text or None), ("error", diagnostics) or ("bug", message): plain
    data, as exceptions need not survive pickling."""
    from rcpc.core.fmt import FormatterBug, format_file

    try:
        return "ok", format_file(compiler, path)
    except CompileError as exc:
        return "error", exc.diagnostics
    except FormatterBug as exc:
        return "bug", str(exc)


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
        import threading
        import time

        def watch():
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, daemon=True).start()
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)


def _work(path: Path) -> tuple:
    """("ok", (builds, found, deps), read) or ("error", diagnostics, read), ``read`` being the
    digests of the files the worker read first since its previous result (:func:`_read`): an
    exception is not sent, as :class:`CompileError` does not survive pickling."""
    compiler = _WORKER["compiler"]
    try:
        return "ok", compile_fresh(compiler, *_WORKER["args"], path, *_WORKER["kwargs"]), _read(compiler)
    except CompileError as exc:
        return "error", exc.diagnostics, _read(compiler)


def _read(compiler) -> dict:
    """The digests of the files this worker read since its last result (the main process
    notes the others already: each result sent all of them, a quadratic cost at 1,000
    recipes) or since it was forked (what the main process had read before it)."""
    since, _WORKER["read"] = _WORKER["read"], compiler.files_read()
    return compiler.read_digests(since)
