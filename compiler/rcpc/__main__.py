"""``python -m rcpc`` and the ``rcpc`` console script.

Interrupts (:mod:`rcpc.interrupts`): from the first line of :func:`run`, Ctrl-C (SIGINT)
and SIGTERM raise :class:`KeyboardInterrupt` once and the command exits 130.

rcpc runs as one process: a command that no-op replay (:mod:`rcpc.build.replay`) does not serve
imports the CLI here and runs in this process.
"""

import gc
import os
import sys

from rcpc import GC_THRESHOLDS
from rcpc.interrupts import closed_streams, ignore_interrupts, interrupts, utf8_streams


def run(argv: list[str] | None = None) -> int:
    """Replay an unchanged ``build``/``check`` (:mod:`rcpc.build.replay`), else import the CLI and
    run it; Ctrl-C (or SIGTERM) at any moment exits 130 quietly."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        interrupts()
        if sys.stdout is None or sys.stderr is None or sys.stdin is None:
            closed_streams()
        utf8_streams()
        from rcpc.build import replay

        code = replay.serve(argv, replay.stderr_color())
        if code is not None:
            ignore_interrupts()
            return code

        gc.set_threshold(*GC_THRESHOLDS)
        from rcpc.cli import main

        return main(argv)
    except KeyboardInterrupt:  # before main() handles it itself (imports, set-up)
        ignore_interrupts()
        sys.stderr.write("rcpc: interrupted; nothing was written\n")
        return 130


def shutdown(code: int) -> int:
    """What the interpreter does at exit, less tearing down modules and objects: join
    threads, run ``atexit`` handlers, flush the standard streams. Returns the exit status:
    ``code``, or 120 when flushing stdout fails and ``code`` is 0 (as CPython)."""
    # Not imported: no thread was started, no handler registered (importing threading alone
    # costs ~4 ms of a replayed command).
    threading, atexit = sys.modules.get("threading"), sys.modules.get("atexit")
    try:
        if threading is not None:
            threading._shutdown()
    except Exception:
        pass
    if atexit is not None:
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            if stream is sys.stdout and code == 0:
                code = 120
    return code


def exit_now(code: int):
    """End the process with status ``code`` after :func:`shutdown`, by ``os._exit``: the
    objects of a large build are not freed one by one (~30 ms of a 100-recipe build's
    exit, measured with ``bench/peers.py``). Files are closed by their ``with`` blocks
    before this; the kernel releases locks and descriptors. Under a profiler or a tracer
    (``python -m cProfile``, coverage, a debugger), which write their results after the
    program returns, ``sys.exit(code)`` instead."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)

    os._exit(shutdown(code))


if __name__ == "__main__":
    exit_now(run())
