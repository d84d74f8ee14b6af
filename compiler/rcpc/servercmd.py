"""``rcpc server start|stop|status``: the build server's commands (the server itself:
:mod:`rcpc.server`; docs/cli.md, *Build server*).

``start`` checks the socket's directory, then detaches the server: a double fork (a new
session; the server is never a session leader) whose grandchild executes a new interpreter
with this one's flags, ``-X`` and warning options (``subprocess``'s own reproduction of them)
and this one's ``sys.path``, so that the server is set up as its clients are (they must be,
:func:`rcpc.client.interpreter`) while inheriting nothing of this command; it returns once
the server listens (a pipe says "ready PID" or why not).
"""

from __future__ import annotations

import os
import select
import sys

from rcpc import client

DEFAULT_IDLE_TIMEOUT = 10800   # seconds (3 h: Bazel's --max_idle_secs default)


class ServerError(Exception):
    """The server cannot start (or be reached); its message is printed."""


def command(args) -> int:
    """``rcpc server start|stop|status`` (``args.action``); the exit code."""
    if not sys.platform.startswith("linux"):
        sys.stderr.write("rcpc: error: the build server needs Linux (SO_PEERCRED, pidfd_open)\n")
        return 1
    try:
        if args.action == "start":
            return start(args.idle_timeout)
        if args.action == "stop":
            return stop()
        return status()
    except ServerError as exc:
        sys.stderr.write(f"rcpc: error: {exc}\n")
        return 1


def _where(create: bool = False) -> dict:
    """The server's paths (:func:`rcpc.client.paths`), its directory checked (and created
    0700 when ``create``; without, a directory that does not exist is returned unchecked: no
    server listens in it). Raises ServerError."""
    where = client.paths()
    if where is None:
        raise ServerError("no directory for the build server's socket: set XDG_RUNTIME_DIR or HOME")
    d = where["dir"]
    if not os.path.lexists(d):
        if not create:  # no server ever ran here: none is running (status, stop)
            return where
        os.makedirs(os.path.dirname(d), exist_ok=True)
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass
    problem = client.unsafe(d)
    if problem is not None:
        raise ServerError(f"the build server's directory {d} {problem}: refusing to use it "
                          "(remove it, or set XDG_RUNTIME_DIR to a directory only you can use)")
    if len(os.fsencode(where["socket"])) + 16 > 107:  # sockaddr_un: 108 bytes (and a suffix while binding)
        raise ServerError(f"the build server's socket path is too long for a Unix socket: {where['socket']}")
    return where


def _ask(where: dict, op: str):
    """Send ``op`` ("status" or "stop") to the running server: (socket, reply), or None when
    no server listens."""
    sock = client.connect(where["socket"])
    if sock is None:
        return None
    try:
        sock.sendall(client.frame((client.PROTOCOL, op, client.identity())))
        return sock, client.read_message(sock)
    except (OSError, EOFError, ValueError):
        sock.close()
        return None


def wait_gone(pid: int, timeout: float | None) -> bool:
    """Whether process ``pid`` has ended within ``timeout`` seconds (None: no limit)."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def start(idle_timeout: float) -> int:
    """Start the server unless one runs; returns once it listens (exit 0), or 1 with the
    reason it could not start."""
    where = _where(create=True)
    asked = _ask(where, "status")
    if asked is not None:
        sock, reply = asked
        sock.close()
        if reply[0] == "status":
            sys.stderr.write(f"rcpc: the build server is already running (pid {reply[1]['pid']})\n")
            return 0
        if reply[0] == "stale" and not wait_gone(reply[2], 60):
            raise ServerError(f"the stale build server (pid {reply[2]}) is still finishing commands; "
                              "try again when they ended")
    import marshal
    import subprocess

    ready_r, ready_w = os.pipe()
    argv = [sys.executable, *subprocess._args_from_interpreter_flags(), "-c", _DAEMON,
            marshal.dumps(client.interpreter()).hex(), str(ready_w), repr(idle_timeout)]
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the first child: a new session, then the server is its child (never a session leader)
        try:
            os.close(ready_r)
            os.setsid()
            if os.fork() == 0:
                os.chdir("/")
                null = os.open(os.devnull, os.O_RDWR)
                log = os.open(where["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o600)
                for fd, to in ((null, 0), (log, 1), (log, 2)):
                    os.dup2(fd, to)
                os.set_inheritable(ready_w, True)
                # nothing else of the starter's (a pipe whose reader waits for its end, a job
                # server's) stays open in the server and its children for hours
                most = os.sysconf("SC_OPEN_MAX")
                os.closerange(3, ready_w)
                os.closerange(ready_w + 1, most if most > 0 else 1 << 16)
                os.execv(sys.executable, argv)
        except BaseException as exc:
            os.write(ready_w, f"error {exc}".encode())
        finally:
            os._exit(0)
    os.close(ready_w)
    os.waitpid(pid, 0)
    with os.fdopen(ready_r, "rb") as f:
        said = f.read().decode("utf-8", "replace")
    if not said.startswith("ready "):
        raise ServerError(f"the build server did not start: {said or 'it ended at once'} (log: {where['log']})")
    sys.stderr.write(f"rcpc: build server started (pid {said.split()[1]}; socket {where['socket']}; "
                     f"stops after {idle_timeout:g} s without requests)\n")
    return 0


def stop() -> int:
    """Ask the server to stop and wait until it has ended (its running commands finish
    first). Exit 0, also when none was running."""
    where = _where()
    asked = _ask(where, "stop")
    if asked is None:
        sys.stderr.write("rcpc: no build server is running\n")
        return 0
    sock, reply = asked
    try:
        while sock.recv(4096):  # end of file: the server has exited
            pass
    except OSError:
        pass
    finally:
        sock.close()
    sys.stderr.write(f"rcpc: build server stopped (pid {reply[1]})\n")
    return 0


def status() -> int:
    """Print the running server's state to stdout (exit 0), or that none runs (exit 1)."""
    where = _where()
    asked = _ask(where, "status")
    if asked is None:
        print(f"rcpc: no build server is running (socket {where['socket']})")
        return 1
    sock, reply = asked
    sock.close()
    if reply[0] != "status":
        print(f"rcpc: the build server (pid {reply[2]}) was stale ({reply[1]}) and is stopping")
        return 1
    info = reply[1]
    print(f"rcpc: build server running: pid {info['pid']}, {info['served']} request(s) served, "
          f"{info['active']} running, stops after {info['idle_timeout']:g} s without requests")
    print(f"socket: {info['socket']}")
    print(f"log: {info['log']}")
    return 0



# The server's interpreter: this one's sys.path (marshal, hex) before anything is imported.
_DAEMON = ("import sys, marshal; sys.path[:] = marshal.loads(bytes.fromhex(sys.argv[1]))[3]; "
           "from rcpc.server import main; main(sys.argv[1:])")
