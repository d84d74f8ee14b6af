"""``python -m rcpc`` and the ``rcpc`` console script."""

import sys


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def sigterm_interrupts() -> None:
    """From now on SIGTERM raises KeyboardInterrupt, as Ctrl-C does, so that both unwind the
    same way (temporary output removed, previous output kept, exit 130). Main thread only."""
    try:
        import _signal as signal  # the C module: `signal` imports enum, ~2 ms of start-up
    except ImportError:  # not CPython
        import signal
    signal.signal(signal.SIGTERM, _interrupt)


def run(argv: list[str] | None = None) -> int:
    """Replay an unchanged ``build``/``check`` (:mod:`rcpc.replay`), else import the CLI and
    run it; Ctrl-C (or SIGTERM) at any moment exits 130 quietly."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        sigterm_interrupts()
        from rcpc import replay

        code = replay.serve(argv, replay.stderr_color())
        if code is not None:
            return code
        # A compile allocates many small objects that reference counting frees (ASTs and
        # values hold no cycles): the cyclic collector's default threshold (700) made it cost
        # ~10% of a cold build; it still runs, 70x less often.
        import gc

        gc.set_threshold(50_000, 20, 20)
        from rcpc.cli import main

        return main(argv)
    except KeyboardInterrupt:  # before main() handles it itself (imports, set-up)
        sys.stderr.write("rcpc: interrupted; nothing was written\n")
        return 130


if __name__ == "__main__":
    sys.exit(run())
