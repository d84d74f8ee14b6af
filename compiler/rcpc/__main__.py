"""``python -m rcpc`` and the ``rcpc`` console script.

Interrupts (:mod:`rcpc.interrupts`): from the first line of :func:`run`, Ctrl-C (SIGINT)
and SIGTERM raise :class:`KeyboardInterrupt` once and the command exits 130.
"""

import sys

from rcpc.interrupts import ignore_interrupts, interrupts, utf8_streams


def run(argv: list[str] | None = None) -> int:
    """Replay an unchanged ``build``/``check`` (:mod:`rcpc.replay`), else import the CLI and
    run it; Ctrl-C (or SIGTERM) at any moment exits 130 quietly."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        interrupts()
        utf8_streams()
        from rcpc import replay

        code = replay.serve(argv, replay.stderr_color())
        if code is not None:
            ignore_interrupts()
            return code
        # A compile allocates many small objects that reference counting frees (ASTs and
        # values hold no cycles): the cyclic collector's default threshold (700) made it cost
        # ~10% of a cold build; it still runs, 70x less often.
        import gc

        gc.set_threshold(50_000, 20, 20)
        from rcpc.cli import main

        return main(argv)
    except KeyboardInterrupt:  # before main() handles it itself (imports, set-up)
        ignore_interrupts()
        sys.stderr.write("rcpc: interrupted; nothing was written\n")
        return 130


if __name__ == "__main__":
    sys.exit(run())
