"""The build server's client (:mod:`rcpc.server`): a command run through the resident server
instead of in this process, which then never imports the CLI, the compiler or their libraries.

:func:`serve` connects to the server's Unix socket, sends the request (argv, working
directory, environment, umask, CPU affinity, and this interpreter's identity) with this
process's file descriptors 0, 1 and 2 attached (``SCM_RIGHTS``), and waits: the server forks a
child of its warm process that runs the command on those very descriptors and reports the
child's pid (again, another's, when that child ended before it started the command), then its
exit status. SIGINT and SIGTERM received meanwhile are forwarded to the child, which exits
130 as rcpc does in-process (:mod:`rcpc.interrupts`).

It declines (returns None, and the caller runs the command in-process) when
``RCPC_NO_SERVER`` is set, for the commands that are not served (:data:`NOT_SERVED`), when
``sys.stdin``, ``sys.stdout`` or ``sys.stderr`` was replaced (the caller of
:func:`rcpc.__main__.run` captures what it prints), when no
server is listening, when the socket's directory is not safe (:func:`unsafe`), or when the
server refuses the request (stale, another interpreter, no child could start it, ...).
Protocol: each message is a 4-byte little-endian length and a :mod:`marshal` payload
(:func:`frame`).

Imports only built-in modules (``os``, ``sys``, ``marshal``, ``stat``) and, once a socket
exists, ``_socket`` and ``_signal``: a client must cost little more than Python's start-up.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys

PROTOCOL = 1
NOT_SERVED = ("server", "lsp", "completion")  # the server's own commands, and long-lived tools
MAX_MESSAGE = 64 << 20   # bytes of one message (an environment is at most a few MiB)
PACKAGE = os.path.dirname(os.path.abspath(__file__))


def identity() -> tuple:
    """What must be equal for two processes to run the same rcpc: the interpreter, its
    version and rcpc's package directory (part of the socket's name)."""
    return (sys.executable, sys.version, PACKAGE)


def interpreter() -> tuple:
    """How this interpreter was started, which a served command must share: its flags,
    warning and ``-X`` options, module search path, file system encoding, standard input's
    encoding and whether its standard streams are unbuffered (``-u``)."""
    return (tuple(sys.flags), list(sys.warnoptions), dict(sys._xoptions), list(sys.path),
            sys.getfilesystemencoding(), sys.getfilesystemencodeerrors(),
            getattr(sys.__stdin__, "encoding", None), getattr(sys.__stdout__, "write_through", None))


def _fnv1a(text: str) -> int:
    """64-bit FNV-1a of ``text``'s UTF-8 bytes (as :mod:`rcpc.replay` names its records)."""
    h = 0xCBF29CE484222325
    for b in text.encode("utf-8", "surrogateescape"):
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def directory() -> str | None:
    """The directory of the server's socket: ``$XDG_RUNTIME_DIR/rcpc`` when that variable is
    an absolute path, else ``rcpc/server`` in the user cache (:mod:`rcpc.core.usercache`);
    None when there is neither."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime):
        return os.path.join(runtime, "rcpc")
    from rcpc.core.usercache import cache_dir

    return cache_dir("server")


def paths() -> dict | None:
    """{"dir", "socket", "lock", "log"}: where this install's server lives (its name holds a
    hash of :func:`identity`, so two installs never share a server); None when no directory
    can be found."""
    d = directory()
    if d is None:
        return None
    name = f"server-{_fnv1a(chr(0).join(identity())):016x}"
    return {"dir": d, "socket": os.path.join(d, name + ".sock"), "lock": os.path.join(d, name + ".lock"),
            "log": os.path.join(d, name + ".log")}


def unsafe(path: str) -> str | None:
    """Why directory ``path`` must not hold the server's socket, or None when it may: it must
    be a real directory (not a symlink) owned by this user, with no access for group or
    others (so no other user can reach the socket, or replace it with one of theirs)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid != os.getuid():
        return f"is owned by another user (uid {st.st_uid})"
    if st.st_mode & 0o077:
        return f"is accessible by group or others (mode {stat.S_IMODE(st.st_mode):04o}; it must be 0700)"
    return None


def frame(message) -> bytes:
    """One message: its :mod:`marshal` bytes, preceded by their length (4 bytes, little-endian)."""
    payload = marshal.dumps(message)
    return len(payload).to_bytes(4, "little") + payload


def read_message(sock) -> object:
    """The next message on ``sock``; EOFError when the peer closed it first."""
    size = int.from_bytes(read_exactly(sock, 4), "little")
    if size > MAX_MESSAGE:
        raise EOFError("message too large")
    return marshal.loads(read_exactly(sock, size))


def read_exactly(sock, n: int) -> bytes:
    """``n`` bytes from stream socket ``sock`` (the client's and the server's reads);
    EOFError when the other end closes first."""
    parts = []
    while n:
        part = sock.recv(min(n, 1 << 20))
        if not part:
            raise EOFError("connection closed")
        parts.append(part)
        n -= len(part)
    return b"".join(parts)


def _command(argv: list[str]) -> str | None:
    for word in argv:
        if not word.startswith("-"):
            return word
    return None


def connect(path: str):
    """A connected socket to the server at ``path``, or None (no server listening, or one
    run by another user: the request would carry this user's environment to it)."""
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
        creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)  # struct ucred: pid, uid, gid
        if int.from_bytes(creds[4:8], sys.byteorder) != os.getuid():
            raise PermissionError("the server runs as another user")
    except (OSError, AttributeError):  # AttributeError: no SO_PEERCRED (not Linux)
        sock.close()
        return None
    return sock


def serve(argv: list[str]) -> int | None:
    """Run ``rcpc argv`` through the build server: its exit code, or None when the server
    does not serve it (the caller runs it in-process). Never raises but KeyboardInterrupt
    (a signal before the server took the request)."""
    if os.environ.get("RCPC_NO_SERVER") or _command(argv) in NOT_SERVED:
        return None
    if sys.stdout is not sys.__stdout__ or sys.stderr is not sys.__stderr__ or sys.stdin is not sys.__stdin__:
        return None  # streams replaced (run() called by a program that captures them): not the descriptors
    where = paths()
    if where is None:
        return None
    try:
        os.lstat(where["socket"])  # the common case, no server: one system call
    except OSError:
        return None
    if unsafe(where["dir"]) is not None:
        return None
    fds = _fds()
    try:
        request = frame((PROTOCOL, "run", identity(), interpreter(), sys.argv[0] if sys.argv else "rcpc",
                         list(argv), os.getcwdb(), dict(os.environb), _umask(), _affinity(), fds))
    except (OSError, ValueError):  # no working directory (removed), an unmarshallable value
        return None
    sock = connect(where["socket"])
    if sock is None:
        return None
    try:
        return _exchange(sock, request, fds)
    finally:
        sock.close()


def _umask() -> int:
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def _affinity() -> list | None:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def _fds() -> list[int]:
    """The descriptors the command runs with: 0, 1, 2, and the test hook's pipes
    (:mod:`rcpc.testhook`) when a test set them."""
    fds = [0, 1, 2]
    if os.environ.get("RCPC_TEST_STOP"):
        for name in ("RCPC_TEST_STOP_FD", "RCPC_TEST_GO_FD"):
            try:
                fds.append(int(os.environ[name]))
            except (KeyError, ValueError):
                pass
    return fds


def _exchange(sock, request: bytes, fds: list[int]) -> int | None:
    """Send ``request`` with descriptors ``fds``, forward signals to the child the server
    starts (each signal that came to each child it names), and return its exit status
    (None: refused, before a child started the command)."""
    import _signal
    import _socket

    child: list[int] = []      # the child's pid, once the server told it
    received: list[int] = []   # signals that came

    def kill(signum: int) -> None:
        for pid in child:
            try:
                os.kill(pid, signum)
            except OSError:  # it has just ended
                pass

    def forward(signum, frame):
        received.append(signum)
        kill(signum)

    previous = {sig: _signal.signal(sig, forward) for sig in (_signal.SIGINT, _signal.SIGTERM)}
    decided = False
    try:
        try:
            rights = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)
            sent = sock.sendmsg([request], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)])
            sock.sendall(request[sent:])
            reply = read_message(sock)
        except (OSError, EOFError, ValueError, TypeError):  # a closed fd 0-2, refused, gone
            return _declined(received)
        try:
            while type(reply) is tuple and len(reply) == 2 and reply[0] == "pid":
                # the child's pid; again when it ended before it took its go (it ran nothing)
                # and another child has the request: the signals that came go to it too
                child[:] = [reply[1]]
                for signum in list(received):
                    kill(signum)
                reply = read_message(sock)
            if type(reply) is tuple and len(reply) == 2 and reply[0] == "exit" and type(reply[1]) is int:
                decided = True
                return reply[1]
            if type(reply) is tuple and reply and reply[0] in ("stale", "refused"):  # no child ran it
                return _declined(received)
            why = "an unexpected reply"
        except (OSError, EOFError, ValueError, TypeError) as exc:
            why = str(exc) or type(exc).__name__
        if not child:
            return _declined(received)
        _await_end(child[0])
        os.write(2, f"rcpc: the build server stopped ({why}) before the command ended\n".encode())
        decided = True
        return 1
    finally:
        if decided:  # no signal from now on may print another outcome
            from rcpc.interrupts import ignore_interrupts

            ignore_interrupts()
        for sig, handler in previous.items():
            _signal.signal(sig, handler)


def _declined(received: list) -> None:
    """The server did not take the request: None (run in-process), or the interrupt that
    came meanwhile, which the caller handles as in-process."""
    if received:
        raise KeyboardInterrupt
    return None


def _await_end(pid: int) -> None:
    """Wait (at most 60 s) for the child, which ends when its server did (SIGTERM), so that
    its last words come before ours."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return
    try:
        import select

        select.select([fd], [], [], 60)
    finally:
        os.close(fd)
