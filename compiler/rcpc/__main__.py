"""``python -m rcpc`` and the ``rcpc`` console script.

Interrupts (:mod:`rcpc.interrupts`): from the first line of :func:`run`, Ctrl-C (SIGINT)
and SIGTERM raise :class:`KeyboardInterrupt` once and the command exits 130.

Build server (:mod:`rcpc.server`, opt-in): when one is running, a command that replay does not
serve is sent to it (:mod:`rcpc.client`) before the CLI is imported here.
"""

import sys

from rcpc.interrupts import ignore_interrupts, interrupts, utf8_streams


def run(argv: list[str] | None = None, local: bool = False) -> int:
    """Replay an unchanged ``build``/``check`` (:mod:`rcpc.replay`), else run the command
    through the build server when one is running (:mod:`rcpc.client`), else import the CLI
    and run it; Ctrl-C (or SIGTERM) at any moment exits 130 quietly. ``local``: run the CLI
    in this process at once (the build server's child for a request, :mod:`rcpc.server`)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        interrupts()
        utf8_streams()
        if local:  # SIGINT and SIGTERM, held since the server forked this child, are let through
            import signal

            from rcpc import testhook

            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
            testhook.point("served")
        else:
            from rcpc import replay

            code = replay.serve(argv, replay.stderr_color())
            if code is None:
                from rcpc import client

                code = client.serve(argv)
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
