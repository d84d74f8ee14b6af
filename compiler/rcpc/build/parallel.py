"""Compiling the recipes of a command: each from the build cache when its inputs are
unchanged, the others in this process or, with ``-j N`` (default ``auto``: :data:`AUTO`), in
worker processes. ``rcpc fmt`` formats files the same way (:func:`format_files`).

The ``-j`` policy (:func:`_workers`): small work stays in this process. The first recipe that
needs compiling is compiled here, which imports the compiler and parses and evaluates the
libraries it loads; workers are then forked only when at least :data:`MIN_PARALLEL` more
recipes need compiling and their sources hold at least :data:`MIN_PARALLEL_BYTES` (a recipe's
cost grows with its size; below that, forking and sending results back cost more than a
second CPU saves: measured with ``bench/jobs.py`` and ``bench/peers.py``). ``-j auto``, so
that it is never slower than ``-j 1``, decides how many at that moment: one per CPU this
process may use that no other process is waiting for (:func:`idle_cpus`), and none when fewer
than two are. A worker on a CPU busy with other work does not run beside this process but
instead of it: the build pays for the fork, the copy-on-write faults and the results sent back
and gains no CPU (``-j 2`` took 1.1-1.2x the time of ``-j 1`` at 10 recipes on 2 CPUs under a
load average of 6). An explicit ``-j N`` forks N workers whatever the load, as ``make -j N``
does. Each worker inherits the compiler (``fork``): modules imported, libraries parsed and
evaluated once, in the parent. Results come back in the order of the recipes given, whatever
order they finish in, so output and diagnostics are the same as with ``-j 1``. Ctrl-C stops
the workers and nothing is written; a worker that ends before it is done (killed) fails only
the recipe or file it was working on (``E0952``). The pool itself is :mod:`rcpc.build.pool`.
"""

from __future__ import annotations

import os
from pathlib import Path

from rcpc.build.cache import BuildCache, store_built
from rcpc.core import store
from rcpc.core.diagnostics import CompileError, Diagnostic
from rcpc.core.source import file_span

MIN_PARALLEL = 4
# Source bytes of the recipes left to compile. bench/peers.py's recipes (~8.2 KB each, the
# cheapest per byte rcpc ships an example of), first builds on 2 CPUs, -j 2 against -j 1, 15
# pairs each (December 2026): 10 recipes (80 KB) 1.01x wall and 1.29x CPU, 16 (128 KB) 0.91x, 24
# 0.81x; at 64 KiB, -j auto forked at 10 recipes for no time saved.
MIN_PARALLEL_BYTES = 96 * 1024
AUTO = 0  # ``-j auto``: as many workers as idle CPUs when the work is there (:func:`idle_cpus`)
LOADAVG = "/proc/loadavg"


def default_jobs() -> int:
    """The number of CPUs this process may run on (``sched_getaffinity``, else ``cpu_count``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def idle_cpus() -> int:
    """The CPUs this process may run on (:func:`default_jobs`) less the other processes
    runnable now, at least 0. The runnable count is the 4th field of Linux's ``/proc/loadavg``
    (``running/total``, this process included), an instant count, not the load average, which
    lags by a minute. GNU make's ``job.c`` (``load_too_high``) has the same reading for ``-l``,
    left off by default there because a user's ``-l`` may exceed the cores ("we need to clamp
    this value at the number of cores"); here it is clamped: at most the CPUs usable.
    Without that file (not Linux), every CPU counts as idle."""
    cpus = default_jobs()
    try:
        with open(LOADAVG, encoding="ascii") as f:
            runnable = int(f.read().split()[3].split("/")[0])
    except (OSError, IndexError, ValueError):
        return cpus
    return max(0, cpus - max(0, runnable - 1))


def compile_recipes(ws, get_compiler, cache: BuildCache, options: list[str], paths: list[Path],
                    variant: str | None = None, sets=None, lint: bool = False,
                    jobs: int = 1, arrived=None) -> list:
    """Compile the recipes ``paths`` of workspace ``ws``: each from ``cache`` when its inputs
    are unchanged, else by :func:`compile_fresh` with ``get_compiler()`` or in
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
        workers = _workers(jobs, [paths[j] for j in misses[1:]]) if n == 1 else 0
        if workers:
            from rcpc.build import pool

            rest = misses[1:]

            def each(k: int, outcome: tuple) -> None:
                kind, out, read, made = outcome
                cache.note(read)  # the files as the worker read them, for later lookups
                store.adopt(made)  # the cache entries it made, written with this run's as they come:
                made.clear()       # not held to the last result (1,000 recipes' entries were 28 MB)
                if arrived is not None and kind == "ok":
                    arrived(paths[rest[k]], out)

            settings = {"args": (cache, options), "kwargs": (variant, sets, lint), "read": compiler.files_read()}
            outcomes = pool.run(workers, [paths[j] for j in rest], _work, (compiler, settings), each,
                                lambda path, status: ("error", [_lost(ws, path, status, "compiling")], {}, {}))
            for j, (kind, outcome, _, _) in zip(rest, outcomes):
                results[j] = outcome if kind == "ok" else CompileError(outcome)
            return results
        compiler = get_compiler()
        try:
            results[i] = compile_fresh(compiler, cache, options, paths[i], variant, sets, lint)
        except CompileError as exc:
            results[i] = exc
        cache.note(compiler.read_digests())
    return results


def compile_fresh(compiler, cache: BuildCache, options: list[str], path: Path, variant: str | None = None,
                  sets=None, lint: bool = False) -> tuple:
    """Compile one recipe with ``compiler`` (:meth:`rcpc.domain.recipe.Compiler.compile`: its
    contracts checked, linted when ``lint``) and store the result in ``cache`` under the
    request's ``options`` (:func:`rcpc.build.cache.store_built`). Returns ``([(variant, [(render,
    text)])], [warnings and notes], {dependency: digest} or None)``. Raises
    :class:`~rcpc.core.diagnostics.CompileError`."""
    recipe, builds, found = compiler.compile(path, variant, sets, lint)
    return store_built(cache, options, compiler, path, recipe, builds, found)


def _lost(ws, path: Path, status: str, doing: str):
    """``E0952``: the -j worker ``doing`` (compiling, formatting) the file ``path`` ended
    (``status``: :func:`rcpc.build.pool.run`'s) before it gave a result."""

    return Diagnostic("E0952", f"the -j worker process {doing} this file ended before it was done ({status})",
                      file_span(ws.display(path)),
                      hint="the kernel's out-of-memory killer (see `dmesg`) or a `kill` ends a process so; the "
                           "other files were done by the other workers. With `-j 1` the file is done in rcpc's "
                           "own process")


def _workers(jobs: int, paths: list[Path]) -> int:
    """The -j policy (module docstring): the workers to fork for ``paths`` (0: none, do them
    in this process) with ``-j jobs`` (:data:`AUTO` or 1 and more): enough recipes left, with
    enough source, for workers to pay for themselves, and for ``AUTO`` two CPUs idle at least."""
    if jobs == 1 or len(paths) < MIN_PARALLEL:
        return 0
    size = 0
    for p in paths:
        try:
            size += os.stat(p).st_size
        except OSError:  # reported when it is compiled
            pass
    if size < MIN_PARALLEL_BYTES:
        return 0
    workers = idle_cpus() if jobs == AUTO else jobs
    return workers if workers >= 2 else 0


def format_files(ws, get_compiler, paths: list[Path], jobs: int = 1) -> list:
    """Format the files ``paths`` of workspace ``ws`` (:func:`rcpc.core.fmt.format_file`) with
    ``get_compiler()`` or, when the -j policy says so (:func:`_workers`), in
    workers. Returns, per path, in order, the canonical text, ``None`` when the file is
    canonical already, or the :class:`~rcpc.core.diagnostics.CompileError` or
    :class:`~rcpc.core.fmt.FormatterBug` it raised."""
    workers = _workers(jobs, paths)
    if workers:
        from rcpc.build import pool
        from rcpc.domain.recipe import Compiler

        outcomes = pool.run(workers, paths, _format_work, (Compiler(ws), {}), None,
                            lambda path, status: ("error", [_lost(ws, path, status, "formatting")]))
    else:
        outcomes = [_format_one(get_compiler(), path) for path in paths]
    from rcpc.core.fmt import FormatterBug

    made = {"ok": lambda x: x, "error": CompileError, "bug": FormatterBug}
    return [made[kind](value) for kind, value in outcomes]


def _format_work(path: Path) -> tuple:
    from rcpc.build import pool

    return _format_one(pool.WORKER["state"], path)


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


def _work(path: Path) -> tuple:
    """("ok", (builds, found, deps), read, made) or ("error", diagnostics, read, made), ``read``
    being the digests of the files the worker read first since its previous result
    (:func:`_read`) and ``made`` the cache entries it made (:func:`rcpc.core.store.take`: a
    worker is stopped, not left to write them): an exception is not sent, as
    :class:`CompileError` does not survive pickling."""
    from rcpc.build import pool

    compiler = pool.WORKER["state"]
    try:
        out = compile_fresh(compiler, *pool.WORKER["args"], path, *pool.WORKER["kwargs"])
        return "ok", out, _read(compiler), store.take()
    except CompileError as exc:
        return "error", exc.diagnostics, _read(compiler), store.take()


def _read(compiler) -> dict:
    """The digests of the files this worker read since its last result (the main process
    notes the others already: each result sent all of them, a quadratic cost at 1,000
    recipes) or since it was forked (what the main process had read before it)."""
    from rcpc.build import pool

    since, pool.WORKER["read"] = pool.WORKER["read"], compiler.files_read()
    return compiler.read_digests(since)
