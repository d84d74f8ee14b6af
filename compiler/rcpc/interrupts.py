"""Interrupts and standard streams of a command.

From :func:`interrupts` on, Ctrl-C (SIGINT) and SIGTERM raise :class:`KeyboardInterrupt`
once; the command unwinds (temporary output removed, previous output kept) and exits 130.
Signals that follow the first one, and any that arrive once the command's outcome is decided
(:func:`ignore_interrupts`), are ignored, so a repeated Ctrl-C cannot interrupt the clean-up
or the closing message (it used to end in a traceback).

A stream whose reader has gone (:class:`PipeEnd`: ``rcpc check 2>&1 | head``) does not end the
command: what it writes is discarded, and it exits with its own status. One that cannot take
what is written otherwise (a full disk, a closed descriptor) is an error, exit 1
(:func:`unwritable`).
"""

import errno
import io
import os
import sys

# interrupted: the next signal is ignored (unwinding or finishing); holding: a signal is kept
# for release() (hold()); pending: one was kept
_STATE = {"interrupted": False, "holding": False, "pending": False}


def _interrupt(signum, frame):
    if _STATE["interrupted"]:
        return
    if _STATE["holding"]:
        _STATE["pending"] = True
        return
    _STATE["interrupted"] = True
    raise KeyboardInterrupt


def hold() -> None:
    """From now until :func:`release`, a signal :func:`interrupts` handles is kept, not
    raised. Blocking the signals (``pthread_sigmask``) holds them back only from the calling
    thread: one sent to the process is taken by another thread that does not block it (a
    library's worker thread, such as OpenBLAS's in a test process), and Python runs the
    handler in the main thread at once."""
    _STATE["holding"] = True


def release() -> None:
    """End :func:`hold`: raises KeyboardInterrupt once if a signal was kept meanwhile."""
    _STATE["holding"] = False
    if _STATE["pending"]:
        _STATE["pending"] = False
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


def closed_streams() -> None:
    """A standard stream whose descriptor (0, 1 or 2) the caller closed (``rcpc render >&-``)
    is ``None`` in Python, and ``sys.stdout.write`` a traceback: its descriptor is taken by
    ``/dev/null`` (so no file rcpc opens lands on it and receives what a child process
    writes there), stdin reads as empty, stderr discards, and writing to stdout fails with
    ``EBADF`` as it does in C (``rcpc: error: Bad file descriptor``, exit 1)."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        try:
            os.fstat(fd)
        except OSError:  # closed: the lowest free descriptor is this one, lower ones open
            os.open(os.devnull, os.O_RDWR)
        if name == "stdout":
            setattr(sys, name, io.TextIOWrapper(_Closed(), encoding="utf-8", write_through=True))
        else:
            setattr(sys, name, open(os.devnull, "r" if fd == 0 else "w", encoding="utf-8"))


class _Closed:
    """A binary stream every write to which fails as on a closed descriptor. Nothing is kept
    to fail again (a buffer in front of it held what failed, and the interpreter's flush at
    exit failed on it: exit 120, an ``Exception ignored`` traceback)."""

    closed = False

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def isatty(self) -> bool:
        """No terminal (``rcpc diff >&-`` asked, for colour, and crashed: AttributeError)."""
        return False

    def write(self, data) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def close(self) -> None:
        pass

    def flush(self) -> None:
        pass


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


def unwritable(exc: OSError) -> int:
    """What an output rcpc cannot write (stdout on a full disk or ``/dev/full``: ENOSPC; a
    closed descriptor: EBADF) ends in: ``rcpc: error: <reason>`` on stderr (said when stderr
    can take it) and exit code 1, wherever the write was (the command, the closing SARIF or
    JSON report, a replay). A reader gone is not such a failure (:class:`PipeEnd`)."""
    try:
        sys.stderr.write(f"rcpc: error: {exc.strerror or exc}\n")
    except OSError:  # stderr cannot take it either: the exit code alone tells
        pass
    return 1


class PipeEnd:
    """A text stream (``sys.stdout``, ``sys.stderr``) that outlives its reader. When a write or
    a flush finds the reader gone (EPIPE: Python ignores SIGPIPE), the stream's descriptor is
    pointed at ``/dev/null`` (so nothing buffered fails again, at exit either) and the command
    goes on, what it writes discarded: its exit status stays its verdict (a failed ``rcpc
    check 2>&1 | head`` exits 1, a build still publishes its output), where the
    BrokenPipeError used to end it with exit 0. ``gone``: whether that happened."""

    def __init__(self, stream):
        self._stream = stream
        self.gone = False
        self.failed = False  # a write or flush failed otherwise (ENOSPC, EBADF): raised once

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._lose()
            return len(text)
        except OSError:
            self.failed = True
            raise

    def writelines(self, lines) -> None:
        """Each line through :meth:`write`: the wrapped stream's own ``writelines`` (``rcpc fmt
        --diff``) raised the BrokenPipeError past this class, and a failed diff exited 0."""
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Flush, unless a write or flush failed already (ENOSPC, EBADF): that error was raised
        (and reported, :func:`unwritable`) once, and what stays buffered is lost; flushing it
        again said ``rcpc: error: Bad file descriptor`` twice (``rcpc render r >&-``)."""
        if self.failed:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._lose()
        except OSError:
            self.failed = True
            raise

    def _lose(self) -> None:
        self.gone = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self._stream.fileno())
            finally:
                os.close(null)
            self._stream.flush()  # what was buffered goes to /dev/null
        except (OSError, ValueError, AttributeError):  # no descriptor (a stream in memory)
            self._stream = _Discard()

    def __getattr__(self, name):
        return getattr(self._stream, name)


class _Discard:
    """A text stream that keeps nothing."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def outlive_readers() -> tuple:
    """Make ``sys.stdout`` and ``sys.stderr`` :class:`PipeEnd` streams; returns the streams
    they replace (to put back with :func:`restore_streams`)."""
    previous = (sys.stdout, sys.stderr)
    sys.stdout, sys.stderr = PipeEnd(sys.stdout), PipeEnd(sys.stderr)
    return previous


def restore_streams(previous: tuple) -> None:
    """Flush the :class:`PipeEnd` streams and put ``previous`` back where they still are: a
    stream the command replaced stays as it left it (``rcpc lsp`` sets ``sys.stdout`` to
    None, the protocol's stream, which the client may have closed: put back, it failed the
    interpreter's flush at exit, and the exit status was 120)."""
    for name, was in zip(("stdout", "stderr"), previous):
        stream = getattr(sys, name)
        if not isinstance(stream, PipeEnd):
            continue
        try:
            stream.flush()
        except Exception:  # closed, or replaced by something that cannot
            pass
        setattr(sys, name, was)
