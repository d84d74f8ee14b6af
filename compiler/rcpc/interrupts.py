"""Interrupts and standard streams of a command.

From :func:`interrupts` on, Ctrl-C (SIGINT) and SIGTERM raise :class:`KeyboardInterrupt`
once; the command unwinds (temporary output removed, previous output kept) and exits 130.
Signals that follow the first one, and any that arrive once the command's outcome is decided
(:func:`ignore_interrupts`), are ignored, so a repeated Ctrl-C cannot interrupt the clean-up
or the closing message (it used to end in a traceback).
"""

import sys

_STATE = {"interrupted": False}  # True: the next signal is ignored (unwinding or finishing)


def _interrupt(signum, frame):
    if _STATE["interrupted"]:
        return
    _STATE["interrupted"] = True
    raise KeyboardInterrupt


def _signal_module():
    try:
        import _signal as signal  # the C module: `signal` imports enum, ~2 ms of start-up
    except ImportError:  # not CPython
        import signal
    return signal


def interrupts() -> dict:
    """From now on SIGINT and SIGTERM raise KeyboardInterrupt once (later ones are ignored).
    Main thread only. Returns the previous handlers, for :func:`restore_interrupts`."""
    signal = _signal_module()
    _STATE["interrupted"] = False
    return {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}


def ignore_interrupts() -> None:
    """The command's outcome is decided: signals from now on are ignored (the handlers stay,
    so that the process still exits through its own code, not through a signal)."""
    _STATE["interrupted"] = True


def restore_interrupts(previous: dict) -> None:
    """Put back the handlers :func:`interrupts` replaced."""
    signal = _signal_module()
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def utf8_streams() -> None:
    """rcpc writes UTF-8 whatever the locale says: renders, diffs and JSON are UTF-8 like the
    files it writes (a stdout encoding that cannot hold them, e.g. ``PYTHONIOENCODING=ascii``,
    made ``rcpc render`` crash). A file name that is not UTF-8 is written back as its own
    bytes on stdout and escaped on stderr."""
    for stream, errors in ((sys.stdout, "surrogateescape"), (sys.stderr, "backslashreplace")):
        try:
            stream.reconfigure(encoding="utf-8", errors=errors)
        except (AttributeError, ValueError, OSError):  # not a text stream (replaced, closed)
            pass
