"""The build server (opt-in): a resident process that has imported everything a command
needs (the CLI, the compiler, the domain, their libraries) and serves each request with a
fresh ``os.fork()`` of itself, so a command costs a small client (:mod:`rcpc.client`) plus
its own work, not Python's imports (the shape of Bazel's server or mypy's ``dmypy``, without
their state: no result of a command survives it; a request's child inherits imported
modules, what every command finds the same way (:func:`_prepare`), and parses found by
their exact text: each child reports the AST cache entries it used, which the server reads
again under the cache's checks and keeps, :func:`learn`).

The child for the next request is forked while the server is idle (a *spare*, as a
pre-forking server keeps one): a request hands it its message and descriptors over a socket
pair, so fork's cost (a few milliseconds for the warm process) is not on its path; a request
that finds none (another still runs) forks its own. A child says when it has taken its go,
after which it may write: one that ends before (killed while it waited) ran nothing, and a
child forked afresh is given the request (:meth:`Server._again`). The child answers its
client as soon as the command has ended (:func:`rcpc.serverchild.answer`) and does the
command's deferred work after (:mod:`rcpc.core.deferred`).

``rcpc server start [--idle-timeout SECONDS]`` (:mod:`rcpc.servercmd`) detaches the server
(a new session; stdin on ``/dev/null``, stdout and stderr on a log file beside the socket),
which runs :func:`main`, and returns once it listens; ``rcpc server stop`` asks it to stop
and waits until it has (running commands finish first; a child still in a command's deferred
work is killed after :data:`DEFERRED_GRACE` seconds); ``rcpc server status`` says whether
one runs and how many requests it served.

Trust (the socket is a way into the user's account):

* the socket lives in a directory only the user can use (``$XDG_RUNTIME_DIR/rcpc``, else
  ``~/.cache/rcpc/server``, created 0700); a directory that is a symlink, is another user's
  or is open to group or others is refused, by the server and by every client;
* the server serves only its own user (``SO_PEERCRED``);
* the socket's name holds a hash of the interpreter, its version and rcpc's package
  directory, and each request carries them: two installs never share a server;
* staleness: at each request the server stats every file of rcpc's package and of every
  non-standard-library module it loaded (mtime_ns, size) against what it loaded; any
  difference, or a request from another interpreter or rcpc, is answered "stale": the
  server stops listening and exits, and the client runs the command in-process;
* a request whose interpreter flags, warning options or module search path differ from the
  server's is refused (run in-process).

A request's child: the client's environment, working directory, umask, CPU affinity and
file descriptors 0, 1, 2 (so output and ``isatty`` are the client's own), the signal
handlers and collector threshold of :func:`rcpc.__main__.run`, then the CLI; its exit status
(a signal death as 128 + the signal) goes back to the client. The client forwards SIGINT and
SIGTERM to it; a client that goes away (even killed) has its child terminated (SIGTERM);
children end (SIGTERM) if the server is killed outright. Linux only (``SO_PEERCRED``,
``pidfd_open``, ``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import ctypes
import fcntl
import marshal
import os
import select
import signal
import socket
import struct
import sys
import time

from rcpc import client

MAX_FDS = 16                   # descriptors one request may carry
MAX_LOG = 1 << 20              # bytes of log kept (it is emptied beyond)
MAX_NOTE = 1 << 18             # bytes of a child's report (the pipe's size; a longer one is not sent)
# What commands import lazily (inside functions), beyond rcpc's own modules, which are all
# imported but the language server and the pytest plugin; a name that is not installed is
# skipped.
PRELOAD = ("argparse", "ast", "atexit", "ctypes", "datetime", "decimal", "difflib", "fractions", "gc", "hashlib",
           "io", "json", "locale", "multiprocessing.connection", "multiprocessing.popen_fork", "pathlib", "pickle",
           "shlex", "shutil", "subprocess", "tempfile", "textwrap", "threading", "tomllib", "traceback",
           "unicodedata", "uuid", "zipfile", "attrs", "lark", "yaml", "jsonschema", "referencing",
           "jsonschema_specifications", "shtab")
SKIP = ("rcpc.lsp", "rcpc.testing")
MADV_POPULATE_WRITE = 23   # Linux 5.14 (<asm-generic/mman-common.h>)
POPULATE_STEP = 1 << 20    # bytes a spare child populates between two looks for its request
# Seconds a stopping server waits for a child in its deferred work (its client answered) before
# it kills it: that work is milliseconds, and all of it may be lost (rcpc.core.deferred).
DEFERRED_GRACE = 5.0


class ServerError(Exception):
    """The server cannot start; its message is passed to ``rcpc server start``."""


def main(argv: list[str]) -> None:
    """The server process (executed by ``rcpc server start``, :mod:`rcpc.servercmd`):
    ``argv`` is the starter's :func:`rcpc.client.interpreter` (marshal, hex), the pipe to
    tell "ready PID" or "error ...", and the idle timeout in seconds. Serves until stopped,
    then exits."""
    wanted, ready, idle_timeout = marshal.loads(bytes.fromhex(argv[0])), int(argv[1]), float(argv[2])
    code = 1
    try:
        try:
            where = client.paths()
            if where is None or client.unsafe(where["dir"]) is not None:
                raise ServerError(f"unsafe or no directory for the socket ({where and where['dir']})")
            if client.interpreter() != wanted:
                raise ServerError("the server's interpreter is not set up as rcpc server start's "
                                  f"({client.interpreter()} != {wanted})")
            os.umask(0o077)
            server = Server(where, idle_timeout)
        except Exception as exc:
            os.write(ready, f"error {exc}".encode())
            raise
        os.write(ready, f"ready {os.getpid()}".encode())
        os.close(ready)
        code = server.serve()
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


class _Request:
    """A running request: the client connection ``conn`` (None once the client has its
    answer or went away), the command's name ``what``, the request ``message`` and the
    client's descriptors ``fds`` (kept until a child has taken its go: they are given again
    to another child when that one ends before, :meth:`Server._again`); its child's ``pid``
    and ``pidfd``, the server's end ``chan`` of the child's socket pair (None once the child
    has taken its go, ``started``, or when it may no more), and the read end ``note`` of the
    pipe on which the child gives its exit status as soon as the command has ended
    (:func:`rcpc.serverchild.answer`), then says what it learnt
    (:func:`rcpc.serverchild.report`); ``heard``: the bytes read from ``note`` so far;
    ``again``: its request was already given to a second child; ``answered``: when
    (:func:`time.monotonic`) the child gave its exit status (it then does the command's
    deferred work, :mod:`rcpc.core.deferred`); ``killed``: it was, for being at that too long
    (:meth:`Server._kill_overdue`)."""

    def __init__(self, conn, what: str, message, fds: list[int]):
        self.conn, self.what, self.message, self.fds = conn, what, message, fds
        self.pid = self.pidfd = self.note = -1
        self.chan = None
        self.heard = b""
        self.started = self.again = self.killed = False
        self.answered: float | None = None


class _Spare:
    """A forked child waiting for a request: its ``pid`` and ``pidfd``, the server's end
    ``chan`` of the socket pair on which it receives the request and then its go, and the
    read end ``note`` of its note pipe (:class:`_Request`)."""

    def __init__(self, pid: int, pidfd: int, chan, note: int):
        self.pid, self.pidfd, self.chan, self.note = pid, pidfd, chan, note

    def give(self, message, fds: list[int]) -> None:
        """Send the request ``message`` (:mod:`marshal`, after its 4-byte length) with the
        descriptors ``fds`` (``SCM_RIGHTS``). Raises OSError (the child is gone)."""
        data = client.frame(message)
        sent = self.chan.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))])
        self.chan.sendall(data[sent:])

    def end(self) -> None:
        """Close the server's ends (a child still waiting reads end of file and exits),
        terminate the child and reap it."""
        self.chan.close()
        _close(self.note)
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        _close(self.pidfd)


class Server:
    """The listening server of ``where`` (:func:`rcpc.client.paths`): holds the lock,
    imports what commands need, records what it loaded, listens. Raises ServerError."""

    def __init__(self, where: dict, idle_timeout: float):
        self.where, self.idle_timeout, self.pid = where, idle_timeout, os.getpid()
        self.lock = os.open(where["lock"], os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ServerError("another build server holds " + where["lock"]) from None
        os.ftruncate(self.lock, 0)
        os.write(self.lock, f"{os.getpid()}\n".encode())
        self.interpreter = client.interpreter()
        _preload()
        _prepare()
        self.loaded = _loaded_files()
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        temporary = f"{where['socket']}.{os.getpid()}"
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        self.listener.bind(temporary)
        self.listener.listen(64)
        self.listener.setblocking(False)
        os.rename(temporary, where["socket"])  # over a socket left by a server killed outright
        st = os.stat(where["socket"])
        self.socket_id = (st.st_dev, st.st_ino)
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.requests: dict[int, _Request] = {}     # pidfd -> request
        self.notes: dict[int, _Request] = {}        # note pipe fd -> request, until its answer
        self.chans: dict[int, _Request] = {}        # channel fd -> request, until its child took its go
        self.spare: _Spare | None = None            # the child forked for the next request
        self.conns: dict[int, _Request] = {}        # connection fd -> request
        self.waiting: list = []                     # "stop" connections, closed when the server exits
        self.closing: str | None = None
        self.closed_at = 0.0                        # when (time.monotonic) it began stopping
        self.served = 0
        self.started = time.time()
        self.last = time.monotonic()
        import gc

        from rcpc.__main__ import GC_THRESHOLDS

        gc.collect()
        gc.freeze()  # what was imported is never collected: children do not scan (or touch) it
        gc.set_threshold(*GC_THRESHOLDS)  # as a command's (rcpc.__main__): parses kept hold no cycles
        self.log(f"listening on {where['socket']} (pid {os.getpid()}, {len(self.loaded)} files watched)")

    def log(self, line: str) -> None:
        """A line in the server's log (stderr is the log file)."""
        try:
            if os.fstat(2).st_size > MAX_LOG:
                os.ftruncate(2, 0)
            os.write(2, f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n".encode("utf-8", "backslashreplace"))
        except OSError:
            pass

    def serve(self) -> int:
        """Serve until stopped (``rcpc server stop``, SIGTERM/SIGINT, stale, idle timeout) and
        every running request has ended (a child still in its deferred work killed after
        :data:`DEFERRED_GRACE` seconds); exit code 0."""
        signal.set_wakeup_fd(self.wake_w)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda signum, frame: None)  # the wake-up pipe says which
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        self.poll = select.poll()
        self.poll.register(self.listener.fileno(), select.POLLIN)
        self.poll.register(self.wake_r, select.POLLIN)
        while not (self.closing and not self.requests):
            if self.spare is None and not self.requests and not self.closing:
                self._fork_spare()
            due = self._due()
            events = self.poll.poll(None if due is None else max(0.0, due - time.monotonic()) * 1000)
            if not events and due is not None and time.monotonic() >= due:
                self._timed_out()
            for fd, _ in events:
                if fd == self.wake_r:
                    self._signalled()
                elif fd in self.requests:
                    self._reap(self.requests[fd])
                elif fd in self.notes:
                    self._noted(self.notes[fd])
                elif fd in self.chans:
                    self._taken(self.chans[fd])
                elif self.spare is not None and fd == self.spare.pidfd:
                    self._spare_ended()
                elif fd in self.conns:
                    self._client_event(self.conns[fd])
                elif self.listener is not None and fd == self.listener.fileno():
                    self._accept()
        if self.spare is not None:
            self.spare.end()
            self.spare = None
        for conn in self.waiting:
            conn.close()
        self.log("exiting")
        return 0

    def _due(self) -> float | None:
        """When (:func:`time.monotonic`) the server has something to do that no event brings:
        exit for the idle timeout (no command running: children in their deferred work do
        not count), or, stopping, kill the first child overdue in its deferred work
        (:meth:`_kill_overdue`); None: nothing."""
        if not self.closing:
            if any(r.answered is None for r in self.requests.values()):
                return None
            return self.last + self.idle_timeout
        return min((self._deadline(r) for r in self.requests.values() if r.answered is not None and not r.killed),
                   default=None)

    def _deadline(self, request: _Request) -> float:
        """When a stopping server kills ``request``'s child, answered, if its deferred work
        has not ended: :data:`DEFERRED_GRACE` seconds after the later of its answer and the
        stop."""
        return max(request.answered, self.closed_at) + DEFERRED_GRACE

    def _timed_out(self) -> None:
        """The time :meth:`_due` gave has come."""
        if self.closing:
            self._kill_overdue()
        else:
            self.close(f"no request for {self.idle_timeout:g} s")

    def _kill_overdue(self) -> None:
        """Kill (SIGKILL) each child still in its deferred work at its deadline
        (:meth:`_deadline`), and log it: its client has its answer and what the work leaves
        undone the next command survives (:mod:`rcpc.core.deferred`); a stuck file system
        must not hold the server for ever. It is reaped as any child (:meth:`_reap`)."""
        now = time.monotonic()
        for request in self.requests.values():
            if request.answered is not None and not request.killed and now >= self._deadline(request):
                request.killed = True
                self.log(f"pid {request.pid} (rcpc {request.what}) still in its deferred work "
                         f"{DEFERRED_GRACE:g} s into the stop: killed (SIGKILL)")
                try:
                    os.kill(request.pid, signal.SIGKILL)
                except OSError:
                    pass

    def close(self, why: str) -> None:
        """Stop listening (the socket removed, if still ours); the server exits once its
        running requests have ended (children in their deferred work are given
        :data:`DEFERRED_GRACE` seconds, :meth:`_kill_overdue`)."""
        if self.closing:
            return
        self.closing = why
        self.closed_at = time.monotonic()
        self.log(f"stopping: {why}")
        self.poll.unregister(self.listener.fileno())
        self.listener.close()
        self.listener = None
        try:
            st = os.stat(self.where["socket"])
            if (st.st_dev, st.st_ino) == self.socket_id:
                os.unlink(self.where["socket"])
        except OSError:
            pass

    def _signalled(self) -> None:
        try:
            got = os.read(self.wake_r, 64)
        except BlockingIOError:
            return
        if any(b in (signal.SIGTERM, signal.SIGINT) for b in got):
            self.close("signal")

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        conn.settimeout(10)  # a peer that connects and sends nothing cannot hold the server for long
        fds: list[int] = []
        try:
            pid, uid, gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                                struct.calcsize("3i")))
            if uid != os.getuid():
                self.log(f"refused a connection from uid {uid} (pid {pid})")
                conn.close()
                return
            message, fds = _receive(conn)
            self.last = time.monotonic()
            self._request(conn, message, fds)
        except Exception as exc:  # a malformed request, a peer gone: that request only
            self.log(f"bad request: {type(exc).__name__}: {exc}")
            for fd in fds:
                _close(fd)
            try:
                conn.sendall(client.frame(("refused", str(exc))))
            except OSError:
                pass
            conn.close()

    def _stale(self, message) -> str | None:
        """Why this server must not serve any more (another rcpc, or its files changed)."""
        if message[2] != client.identity():
            return "a request from another interpreter or rcpc install"
        for path, st in self.loaded.items():
            try:
                now = os.stat(path)
                if (now.st_mtime_ns, now.st_size) != st:
                    return f"{path} changed"
            except OSError:
                return f"{path} is gone"
        return None

    def _request(self, conn, message, fds: list[int]) -> None:
        if type(message) is not tuple or len(message) < 3 or message[0] != client.PROTOCOL:
            raise ValueError("another protocol")
        op = message[1]
        stale = self._stale(message)
        if op == "stop" or stale:
            self.close(f"stale: {stale}" if stale else "asked to stop")
        if op == "stop":
            conn.sendall(client.frame(("stopping", os.getpid(), stale)))
            self.waiting.append(conn)
            return
        if stale:
            conn.sendall(client.frame(("stale", stale, os.getpid())))
            conn.close()
            return
        if op == "status":
            conn.sendall(client.frame(("status", {
                "pid": os.getpid(), "served": self.served, "active": len(self.requests),
                "idle_timeout": self.idle_timeout, "socket": self.where["socket"], "log": self.where["log"],
                "started": self.started})))
            conn.close()
            return
        if op != "run" or len(message) != 11:
            raise ValueError(f"unknown request {op!r}")
        if message[3] != self.interpreter:
            self.log("refused a request: another interpreter set-up (flags, warning options, sys.path)")
            conn.sendall(client.frame(("refused", "another interpreter set-up")))
            for fd in fds:
                _close(fd)
            conn.close()
            return
        argv0, argv, cwd, env, umask, affinity, targets = message[4:]
        if not (type(argv) is list and all(type(a) is str for a in argv) and type(cwd) is bytes
                and type(env) is dict and type(umask) is int and type(targets) is list
                and len(targets) == len(fds) and targets[:3] == [0, 1, 2] and len(fds) <= MAX_FDS):
            raise ValueError("malformed run request")
        spare = self._take_spare(conn, message, fds)
        request = _Request(conn, argv[0] if argv else "", message, fds[:])
        fds.clear()  # the request's now
        self.served += 1
        self.log(f"request {self.served}: pid {spare.pid}: rcpc {request.what}")
        self.conns[conn.fileno()] = request
        self.poll.register(conn.fileno(), select.POLLIN)
        self._hand(request, spare)

    def _hand(self, request: _Request, spare: "_Spare") -> None:
        """Make ``spare``, which holds ``request``'s message and descriptors, its child: its
        end, its note pipe and its channel (where it takes its go, :meth:`_taken`) watched,
        the client told its pid, then the child its go. A client gone meanwhile has its child
        end unseen, without the go (:meth:`_client_gone`); a child gone meanwhile is given
        no go, and its end (:meth:`_reap`) gives the request to another."""
        request.pid, request.pidfd, request.note, request.chan = spare.pid, spare.pidfd, spare.note, spare.chan
        request.heard = b""
        self.requests[request.pidfd] = request
        self.poll.register(request.pidfd, select.POLLIN)
        self.notes[request.note] = request
        self.poll.register(request.note, select.POLLIN)
        self.chans[request.chan.fileno()] = request
        self.poll.register(request.chan.fileno(), select.POLLIN)
        try:  # the client knows the child before the child may do anything it would see
            request.conn.sendall(client.frame(("pid", request.pid)))
        except OSError:
            self._client_gone(request)
            return
        try:
            request.chan.sendall(b"g")
        except OSError:
            pass

    def _taken(self, request: _Request) -> None:
        """The child's channel is readable: the child says it has taken its go (it runs the
        command from now on; the client's descriptors are let go, :meth:`_let_go`), or it
        closed its end without (it is ending: :meth:`_reap` decides)."""
        try:
            said = request.chan.recv(1, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        except OSError:
            said = b""
        if said == b"s":
            request.started = True
            self._let_go(request)
        else:
            self._unwatch_chan(request)

    def _unwatch_chan(self, request: _Request) -> None:
        if request.chan is not None and self.chans.pop(request.chan.fileno(), None) is not None:
            self.poll.unregister(request.chan.fileno())

    def _let_go_chan(self, request: _Request) -> None:
        """Close the server's end of ``request``'s channel (a child that has not had its go
        reads end of file and ends unseen)."""
        self._unwatch_chan(request)
        if request.chan is not None:
            request.chan.close()
            request.chan = None

    def _let_go(self, request: _Request) -> None:
        """Close ``request``'s channel (:meth:`_let_go_chan`) and the client's descriptors:
        no other child will take this request."""
        self._let_go_chan(request)
        for fd in request.fds:
            _close(fd)
        request.fds = []

    def _unstarted(self, request: _Request) -> bool:
        """Whether ``request``'s child (ended) never took its go, so ran nothing, and its
        client waits: an acknowledgement not read yet is read now."""
        if request.chan is not None:
            self._taken(request)
        return not request.started and request.conn is not None

    def _again(self, request: _Request) -> None:
        """``request``'s child ended before it took its go (:meth:`_unstarted`): a child
        forked now is given the request, and the client told its pid; if that cannot be done
        (no fork), or that child ends before its go too, the request is declined (the client
        runs the command in-process, :mod:`rcpc.client`)."""
        self._let_go_chan(request)
        why = "a second child ended before its go"
        if not request.again:
            request.again = True
            try:
                spare = self._fork_given(request.conn, request.message, request.fds)
            except OSError as exc:
                why = f"cannot fork another: {exc}"
            else:
                self.log(f"pid {request.pid} (rcpc {request.what}) ended before its go: "
                         f"the request is given to pid {spare.pid}")
                self._hand(request, spare)
                return
        self.log(f"pid {request.pid} (rcpc {request.what}) ended before its go; {why}: declined")
        try:
            request.conn.sendall(client.frame(("refused", why)))
        except OSError:
            pass
        self._drop_conn(request)
        self._let_go(request)

    def _take_spare(self, conn, message, fds: list[int]) -> "_Spare":
        """A child holding the request ``message`` of ``conn`` and descriptors ``fds``
        (still the caller's), waiting for its go: the spare forked beforehand (:meth:`_fork_spare`),
        else, or when it cannot take the request (it died), one forked now. Raises OSError
        (no pipe, no fork: nothing leaks)."""
        spare, self.spare = self.spare, None
        if spare is not None:
            self.poll.unregister(spare.pidfd)
            try:
                spare.give(message, fds)
                return spare
            except OSError:
                self.log(f"the spare child {spare.pid} could not take a request: forking another")
                spare.end()
        return self._fork_given(conn, message, fds)

    def _fork_given(self, conn, message, fds: list[int]) -> "_Spare":
        """A child forked now, holding the request ``message`` of ``conn`` and descriptors
        ``fds`` (still the caller's), waiting for its go. Raises OSError (nothing leaks)."""
        spare = self._fork(conn, fds)
        try:
            spare.give(message, fds)
        except BaseException:
            spare.end()
            raise
        return spare

    def _fork_spare(self) -> None:
        """Fork the child for the next request now, while nothing runs (fork's cost, a few
        milliseconds for a warm server, is then off the request's path); it inherits what
        the server has learnt so far. A failure is logged: requests then fork their own."""
        try:
            self.spare = self._fork(spare=True)
        except OSError as exc:
            self.log(f"cannot fork a spare child: {exc}")
            return
        self.poll.register(self.spare.pidfd, select.POLLIN)

    def _fork(self, conn=None, fds=(), spare: bool = False) -> "_Spare":
        """Fork a child that waits for a request (:meth:`_child`); ``conn`` and ``fds``: a
        request's connection and descriptors in hand, which the child closes; ``spare``: it
        is forked ahead of any request. Raises OSError (no socket pair, pipe or fork; nothing
        leaks)."""
        made: list = []
        try:
            chan, child_chan = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            made += (chan, child_chan)
            note_r, note_w = os.pipe()
            made += (note_r, note_w)
            try:  # room for a report of a few files' texts (Linux's default pipe holds 64 KiB)
                fcntl.fcntl(note_w, fcntl.F_SETPIPE_SZ, MAX_NOTE)
            except OSError:
                pass
            held = {signal.SIGINT, signal.SIGTERM}
            signal.pthread_sigmask(signal.SIG_BLOCK, held)  # the child starts with them held
            try:
                pid = os.fork()
                if pid == 0:
                    _close(chan.detach())
                    os.close(note_r)
                    self._child(child_chan, note_w, [conn] if conn is not None else [], fds, spare)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, held)
        except BaseException:
            for x in made:
                x.close() if isinstance(x, socket.socket) else _close(x)
            raise
        child_chan.close()
        os.close(note_w)
        os.set_blocking(note_r, False)
        return _Spare(pid, os.pidfd_open(pid), chan, note_r)  # not reaped yet: cannot fail

    def _spare_ended(self) -> None:
        """The spare child ended before any request (killed, say): reaped, to be forked again."""
        spare, self.spare = self.spare, None
        self.poll.unregister(spare.pidfd)
        self.log(f"the spare child {spare.pid} ended")
        spare.end()

    def _client_event(self, request: _Request) -> None:
        """The client's connection is readable: it went away (a client sends nothing after
        its request)."""
        try:
            if request.conn.recv(1):
                return
        except OSError:
            pass
        self._client_gone(request)

    def _client_gone(self, request: _Request) -> None:
        """The client went away (killed, say): its child is terminated (it is not reaped
        yet, so its pid is still its own), and never given the request again."""
        self.log(f"client of pid {request.pid} went away: terminating it")
        try:
            os.kill(request.pid, signal.SIGTERM)
        except OSError:
            pass
        self._drop_conn(request)
        self._let_go(request)

    def _drop_conn(self, request: _Request) -> None:
        if request.conn is None:
            return
        fd = request.conn.fileno()
        if self.conns.pop(fd, None) is not None:
            self.poll.unregister(fd)
        request.conn.close()
        request.conn = None

    def _noted(self, request: _Request) -> None:
        """The child's note pipe is readable: when its first message, the command's exit
        status, is in, the client has its answer (the child may still be finishing deferred
        work, :mod:`rcpc.core.deferred`); at end of file (the child died before it
        answered) the answer waits for :meth:`_reap`."""
        try:
            chunk = os.read(request.note, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        request.heard += chunk
        try:
            frames, _ = _frames(request.heard)
        except (ValueError, EOFError, TypeError):
            frames = None
        first = frames[0] if frames else None
        if type(first) is tuple and len(first) == 2 and first[0] == "exit" and type(first[1]) is int:
            self.log(f"pid {request.pid} (rcpc {request.what}) answered {first[1]}")
            request.answered = self.last = time.monotonic()
            self._answer(request, first[1])
        elif chunk and frames == [] and len(request.heard) <= MAX_NOTE:
            return  # the rest of the message is on its way
        self._stop_hearing(request)

    def _stop_hearing(self, request: _Request) -> None:
        if self.notes.pop(request.note, None) is not None:
            self.poll.unregister(request.note)

    def _answer(self, request: _Request, code: int) -> None:
        """Send the client its exit status ``code``, if it is still there and has none yet."""
        if request.conn is not None:
            try:
                request.conn.sendall(client.frame(("exit", code)))
            except OSError:
                pass
            self._drop_conn(request)

    def _reap(self, request: _Request) -> None:
        """The child has ended: its exit status (a signal death as 128 + signal) to its
        client, unless it answered before, or ended before it took its go (:meth:`_again`).
        An event for a descriptor closed earlier in the same wake-up whose number the
        child's pidfd took since (a dead spare's, when the request that found it forked its
        own child) is not its end: nothing is done."""
        pid, status = os.waitpid(request.pid, os.WNOHANG)
        if pid == 0:
            return
        code = os.waitstatus_to_exitcode(status)
        if code < 0:
            code = 128 - code
        self.log(f"pid {request.pid} (rcpc {request.what}) exited {code}")
        self._stop_hearing(request)
        self.poll.unregister(request.pidfd)
        os.close(request.pidfd)
        del self.requests[request.pidfd]
        self.last = time.monotonic()
        if self._unstarted(request):
            _close(request.note)  # it learnt nothing
            self._again(request)
            return
        self._answer(request, code)
        self._let_go(request)
        learnt = learn(request.note, request.heard)
        if learnt:
            self.log(f"kept {learnt} AST and validation cache entries in memory")

    def _drop_own(self, sockets: list, fds) -> None:
        """In a child: close the server's descriptors (other requests' connections, channels
        and client descriptors too), and ``sockets`` and ``fds`` it had in hand (sockets
        detached first, so that no socket object can later close a descriptor number the
        command reuses)."""
        held = [x for r in self.requests.values() for x in (r.conn, r.chan) if x is not None]
        sockets = [*sockets, *self.waiting, *held]
        fds = [*fds, *(fd for r in self.requests.values() for fd in r.fds)]
        if self.listener is not None:
            sockets.append(self.listener)
        if self.spare is not None:
            sockets.append(self.spare.chan)
            fds = [*fds, self.spare.pidfd, self.spare.note]
        for sock in sockets:
            _close(sock.detach())
        for fd in (self.lock, self.wake_r, self.wake_w, *self.requests, *(r.note for r in self.requests.values()),
                   *fds):
            _close(fd)

    def _child(self, chan, note: int, sockets: list, fds, spare: bool) -> None:
        """A child forked for a request (:meth:`_fork`): closes what the server had open
        (``sockets`` and ``fds`` it had in hand too); a ``spare`` makes its memory its own
        while it waits (:func:`populate`); then it receives the request and the client's
        descriptors on ``chan``, waits until the server has told the client its pid (its go,
        a byte on ``chan``; end of file: the client or the server went away, so it ends
        unseen), says on ``chan`` that it has taken it (until then the server may give the
        request to another child, :meth:`_again`), then becomes the client's process and
        runs the command; never returns. SIGINT and
        SIGTERM stay held (blocked) until the command's own handlers are set
        (:func:`rcpc.__main__.run`, ``local``)."""
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            self._drop_own(sockets, fds)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGHUP, signal.SIG_DFL)
            if self.libc.prctl(1, int(signal.SIGTERM), 0, 0, 0) != 0:  # 1: PR_SET_PDEATHSIG
                os._exit(1)
            if os.getppid() != self.pid:
                os._exit(1)  # the server died before that took effect
            if spare:
                populate(self.libc, lambda: bool(select.select([chan], [], [], 0)[0]))
            try:
                message, fds = _given(chan)
                if chan.recv(1) != b"g":
                    os._exit(1)
                chan.sendall(b"s")  # taken: from now on the server gives the request to no other child
            except (OSError, EOFError, ValueError):
                os._exit(1)
            _close(chan.detach())
            from rcpc import serverchild

            code = serverchild.run(fds, message, note)
        except BaseException:
            try:
                import traceback

                traceback.print_exc()
            except BaseException:
                pass
        finally:
            os._exit(code)

def populate(libc, waiting) -> int:
    """Make this process's private writable memory its own now: each ``rw-p`` mapping of
    ``/proc/self/maps`` through madvise(2) ``MADV_POPULATE_WRITE`` (Linux 5.14), which breaks
    copy-on-write without changing a byte. A forked child otherwise takes a page fault on its
    first write to each page it shares with the server, and Python writes to every object it
    reads (reference counts): ~3,000 faults, ~3 us each here, in a build of the RL recipe.
    Done in steps of :data:`POPULATE_STEP` bytes, stopping as soon as ``waiting()`` is true
    (the request has come) or the kernel refuses; the number of bytes populated."""
    try:
        with open("/proc/self/maps") as f:
            lines = f.read().splitlines()
        madvise = libc.madvise
        madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    except (OSError, AttributeError):
        return 0
    done = 0
    for line in lines:
        fields = line.split()
        if len(fields) < 2 or fields[1] != "rw-p" or fields[-1] in ("[vvar]", "[vdso]", "[vsyscall]"):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        while start < end:
            if waiting():
                return done
            n = min(POPULATE_STEP, end - start)
            if madvise(start, n, MADV_POPULATE_WRITE) != 0:  # an old kernel (EINVAL), a mapping gone
                return done
            start, done = start + n, done + n
    return done


def learn(note: int, heard: bytes = b"") -> int:
    """Keep what an ended child reported on ``note`` (closed here; ``heard``: what was read
    from it before, :meth:`Server._noted`; :func:`rcpc.serverchild.report`, after its exit
    status, :func:`rcpc.serverchild.answer`): the texts whose parses it handed over, parsed and
    stored here (:func:`rcpc.core.astcache.keep_parsed`), and the AST cache entries it used,
    read again under the cache's checks (:func:`rcpc.core.astcache.remember`), so later
    children inherit them in memory, and the validation cache entries with no findings it
    used, read back likewise (:func:`rcpc.domain.schemacache.remember`). A report that is
    missing, cut or malformed is ignored (the child then stored its parses itself). The
    number of AST entries reported and validation entries kept."""
    try:
        os.set_blocking(note, False)
        data = heard
        while len(data) <= 2 * MAX_NOTE:
            chunk = os.read(note, 65536)
            if not chunk:
                break
            data += chunk
        frames, rest = _frames(data)
        report = frames[-1] if frames and not rest else None
        if type(report) is dict and type(report.get("parsed")) is list and type(report.get("ast")) is list:
            from rcpc.core import astcache
            from rcpc.domain import schemacache

            astcache.keep_parsed(report["parsed"])
            astcache.remember(report["ast"])
            return len(report["ast"]) + schemacache.remember(report.get("clean"))
    except Exception:  # whatever a report holds, the server goes on
        pass
    finally:
        _close(note)
    return 0


def _frames(data: bytes) -> tuple[list, bytes]:
    """The whole messages at the start of ``data`` (each a 4-byte big-endian length and a
    :mod:`marshal` payload, :func:`rcpc.serverchild.note_frame`) and what follows them;
    ValueError or EOFError for a payload marshal cannot read."""
    frames = []
    while len(data) >= 4:
        size = int.from_bytes(data[:4], "big")
        if size > MAX_NOTE or len(data) < 4 + size:
            break
        frames.append(marshal.loads(data[4:4 + size]))
        data = data[4 + size:]
    return frames, data


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _rights(ancillary) -> list[int]:
    """The descriptors received in ``ancillary`` data (``SCM_RIGHTS``)."""
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += [int.from_bytes(payload[i:i + 4], sys.byteorder, signed=True)
                    for i in range(0, len(payload) - len(payload) % 4, 4)]
    return fds


def _given(chan) -> tuple:
    """In a child: the request its server gave it on ``chan`` (:meth:`_Spare.give`) and the
    descriptors that came with it, reading no byte past the request (the go that follows).
    Raises OSError, EOFError or ValueError."""
    data, ancillary, flags, _ = chan.recvmsg(4, socket.CMSG_SPACE(MAX_FDS * 4))
    fds = _rights(ancillary)
    if flags & socket.MSG_CTRUNC:
        raise ValueError("too many descriptors")
    data += client.read_exactly(chan, 4 - len(data))
    return marshal.loads(client.read_exactly(chan, int.from_bytes(data, "little"))), fds


def _receive(conn) -> tuple:
    """One request on ``conn``: (message, descriptors received)."""
    data, ancillary, flags, _ = conn.recvmsg(1 << 16, socket.CMSG_SPACE(MAX_FDS * 4))
    fds = _rights(ancillary)
    try:
        if flags & socket.MSG_CTRUNC:
            raise ValueError("too many descriptors")
        if len(data) < 4:
            data += client.read_exactly(conn, 4 - len(data))
        size = int.from_bytes(data[:4], "little")
        if size > client.MAX_MESSAGE:
            raise ValueError("request too large")
        payload = data[4:]
        if len(payload) < size:
            payload += client.read_exactly(conn, size - len(payload))
        return marshal.loads(payload[:size]), fds
    except BaseException:
        for fd in fds:
            _close(fd)
        raise


def _preload() -> None:
    """Import every module of rcpc (but :data:`SKIP`) and :data:`PRELOAD`."""
    import importlib

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    for d, dirs, names in os.walk(client.PACKAGE):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        relative = os.path.relpath(d, client.PACKAGE)
        package = "rcpc" if relative == "." else "rcpc." + relative.replace(os.sep, ".")
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            module = package if name == "__init__.py" else f"{package}.{name[:-3]}"
            if module.startswith(SKIP):
                continue
            try:
                importlib.import_module(module)
            except ImportError:  # an optional dependency not installed (pygments): imported when used
                pass


def _prepare() -> None:
    """What every command would find the same way, found once before any fork: each
    command's argument parser, the fingerprints of rcpc's code and of the libraries whose
    output the user cache keeps (:mod:`rcpc.core.usercache`; a change to any of their files
    makes the server stale), the stats of rcpc's package files that a replay record holds
    (:func:`rcpc.replay.package_tree`), the schemas rcpc ships: JobSet's validators
    (:class:`rcpc.domain.kube_schema.SchemaIndex`) and MaxText's
    (:func:`rcpc.domain.schema.load_schema`), each kept for its bytes."""
    from rcpc import cli, replay
    from rcpc.core import usercache
    from rcpc.domain.kube_schema import SchemaIndex
    from rcpc.domain.schema import BUILTIN_PATH, load_schema
    from rcpc.domain.schemagen import BUILTIN
    from rcpc.domain.workspace import SCHEMA_DIR

    cli.prepare_parsers()
    usercache.code_fingerprint()
    try:
        replay.package_tree()
    except OSError:  # read by the command that records, and not recorded if it fails there too
        pass
    for module in ("lark", "jsonschema"):
        usercache.installed(module)
    try:
        SchemaIndex([SCHEMA_DIR / "jobset.json"]).prepare()
        load_schema(BUILTIN_PATH, None, BUILTIN)
    except Exception:  # made again, and reported, by the command that uses it
        pass


def _loaded_files() -> dict:
    """{path: (mtime_ns, size)} of every file of rcpc's package and of every loaded module
    outside the standard library (a new Python is another ``sys.version``)."""
    stdlib = os.path.dirname(os.__file__) + os.sep
    paths = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and (not path.startswith(stdlib) or "-packages" + os.sep in path):
            paths.add(os.path.abspath(path))
    for d, dirs, names in os.walk(client.PACKAGE):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        paths.update(os.path.join(d, name) for name in names)
    out = {}
    for path in sorted(paths):
        try:
            st = os.stat(path)
        except OSError:  # not a file ("<stdin>", a frozen module)
            continue
        out[path] = (st.st_mtime_ns, st.st_size)
    return out
