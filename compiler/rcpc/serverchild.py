"""The build server's child for one request (:mod:`rcpc.server`): a fork of the warm server
becomes the client's process (environment, working directory, umask, CPU affinity, file
descriptors, standard streams as Python makes them at start-up), runs the command as
:func:`rcpc.__main__.run` does in-process, and ends as the interpreter would (threads
joined, ``atexit`` handlers run, standard streams flushed), with the same exit status. The
client has that status as soon as the streams are flushed and let go (:func:`answer`); the
work the command deferred (:mod:`rcpc.core.deferred`: cache writes, removing an old output
generation) and tearing down the process come after.
"""

from __future__ import annotations

import io
import marshal
import os
import sys

from rcpc.__main__ import shutdown


def run(fds: list[int], message: tuple, note: int) -> int:
    """Become the client of ``message`` (a ``run`` request, :mod:`rcpc.client`) with its
    descriptors ``fds`` and run its command; at the end, :func:`report` on ``note`` (the
    write end of a pipe the server reads when this process has ended); the exit status."""
    argv0, argv, cwd, env, umask, affinity, targets = message[4:]
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:  # the server's (on its log): nothing of theirs may reach the client's descriptors
            stream.flush()
        except Exception:
            pass
    import fcntl

    moved = fcntl.fcntl(note, fcntl.F_DUPFD_CLOEXEC, max(note, *fds, *targets) + 1)  # out of _install's way
    os.close(note)
    from rcpc.core import astcache, deferred

    astcache.hand_over()  # the server stores this command's new parses, after it (report)
    deferred.hold()  # run after the client has its answer
    _install(fds, targets)
    _streams()
    os.environb.clear()
    os.environb.update(env)
    os.umask(umask)
    if affinity:
        try:
            os.sched_setaffinity(0, affinity)
        except OSError:
            pass
    try:
        os.chdir(cwd)
    except OSError as exc:
        sys.stderr.write(f"rcpc: error: cannot enter the working directory: {exc}\n")
        return shutdown(1)
    try:
        import locale

        locale.setlocale(locale.LC_CTYPE, "")  # as Python does at start-up, from the client's variables
    except Exception:
        pass
    sys.argv = [argv0, *argv]
    from rcpc.__main__ import run as rcpc_run

    try:
        code = rcpc_run(argv, local=True)
    except SystemExit as exc:  # argparse's usage errors, sys.exit(...)
        code = _exit_status(exc.code)
    except KeyboardInterrupt:  # uncaught: the interpreter prints it and dies by SIGINT
        sys.excepthook(*sys.exc_info())
        code = 130
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    code = shutdown(code)
    answer(moved, code)
    from rcpc import testhook

    testhook.point("deferred")
    deferred.run()
    report(moved)
    return code


def note_frame(message) -> bytes:
    """One message on the note pipe: a 4-byte big-endian length, then its :mod:`marshal`."""
    data = marshal.dumps(message)
    return len(data).to_bytes(4, "big") + data


def answer(note: int, code: int) -> None:
    """Let go of the client's standard streams (descriptors 0, 1 and 2 then read and write
    ``/dev/null``: a reader of the client's output sees its end) and give the server exit
    status ``code`` for the client, on ``note`` (:meth:`rcpc.server.Server._noted`)."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
    except OSError:  # the client's streams stay open; it is answered all the same
        pass
    try:
        os.write(note, note_frame(("exit", code)))
    except OSError:  # the server reads the status at the end instead
        pass


def report(note: int) -> None:
    """Tell the server what this process learnt that later requests can use, on ``note``
    (closed): a message (:func:`note_frame`) ``{"parsed": texts, "ast": entries, "clean":
    keys}``: the texts whose parses it handed over instead of storing them
    (:func:`rcpc.core.astcache.handed`; the server parses and stores them), the AST cache
    entries it used (:func:`rcpc.core.astcache.used`) and the validation cache entries with
    no findings it found or stored (:func:`rcpc.domain.schemacache.used`, written by then:
    the deferred work is done). Written without blocking: a report
    that does not fit in the pipe is cut, the server ignores it, and the parses handed over
    are stored here after all."""
    from rcpc.core import astcache
    from rcpc.domain import schemacache

    sent = False
    try:
        data = note_frame({"parsed": astcache.handed(), "ast": astcache.used(), "clean": schemacache.used()})
        os.set_blocking(note, False)
        sent = os.write(note, data) == len(data)
    except Exception:
        pass
    finally:
        try:
            os.close(note)
        except OSError:
            pass
        if not sent:
            astcache.store_handed()


def _exit_status(value) -> int:
    """The status ``sys.exit(value)`` gives: None 0, an int itself, anything else printed on
    stderr and 1."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    try:
        sys.stderr.write(f"{value}\n")
    except Exception:
        pass
    return 1


def _install(fds: list[int], targets: list[int]) -> None:
    """Put each received descriptor ``fds[i]`` at number ``targets[i]`` (inheritable, as the
    client has them), first moving them all above any number in play."""
    import fcntl

    floor = max(*fds, *targets) + 1
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, floor) for fd in fds]
    for fd in fds:
        os.close(fd)
    for fd, target in zip(high, targets):
        os.dup2(fd, target, inheritable=True)
        os.close(fd)


def _streams() -> None:
    """``sys.stdin``, ``sys.stdout`` and ``sys.stderr`` made anew on descriptors 0, 1, 2, as
    CPython's start-up makes them (``create_stdio``): line-buffered on a terminal (stderr
    always), write-through with ``-u``; then UTF-8 as :func:`rcpc.interrupts.utf8_streams`."""
    buffered = not getattr(sys.__stdout__, "write_through", False)  # -u, PYTHONUNBUFFERED (not in sys.flags)
    made = []
    for fd, name, old in ((0, "<stdin>", sys.__stdin__), (1, "<stdout>", sys.__stdout__),
                          (2, "<stderr>", sys.__stderr__)):
        writing = fd != 0
        buffering = 0 if writing and not buffered else -1
        buf = io.open(fd, "wb" if writing else "rb", buffering, closefd=False)
        raw = buf.raw if buffering else buf
        raw.name = name
        line_buffering = buffered and (raw.isatty() or fd == 2)
        stream = io.TextIOWrapper(buf, getattr(old, "encoding", None) or "utf-8",
                                  "backslashreplace" if fd == 2 else getattr(old, "errors", None) or "strict",
                                  "\n", line_buffering, not buffered)
        stream.mode = "w" if writing else "r"
        made.append(stream)
    sys.stdin, sys.stdout, sys.stderr = made
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = made
    from rcpc.interrupts import utf8_streams

    utf8_streams()
