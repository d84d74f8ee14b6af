"""The language server reads only what ``rcpc check`` would read, under its limits, and
answers every request (issue 37, kind 6). Reported: hover on ``file:///dev/zero`` grew the
server to ~10 GB, a named pipe blocked it for good, a 5 MB buffer took 7-20 s and ~1 GB (the
CLI's limits were not applied to buffers), a NUL in a URI was a traceback, and requests after
``shutdown`` got no answer.

The server runs in this process (:class:`Served`: :func:`rcpc.lsp.server.make_server` on a
thread, spoken to over pipes as an editor does), so that what it opens and reads is recorded
(an audit hook sees every ``open``; ``os.open``/``os.read`` are wrapped): properties, not
timings, prove that a FIFO, device, socket or directory is never opened, that a file over
the size limit is never read, and that a buffer over it is never parsed.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import sys
import threading
from pathlib import Path
from urllib.parse import quote

import pytest

pytest.importorskip("pygls")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rcpc.core.limits import MAX_FILE_BYTES, MAX_MESSAGE_BYTES  # noqa: E402

HANG = 120   # seconds: a guard against a server that never answers, never a speed check
INVALID_PARAMS, INVALID_REQUEST, REQUEST_FAILED, CANCELLED = -32602, -32600, -32803, -32800
TOML = 'recipe_dirs = ["recipes"]\nlibrary_dirs = ["recipes/lib"]\n'
RECIPE = '''load("//recipes/lib/common.rcp", "STEPS")

FLAGS = maxtext_flags({"steps": STEPS})
flag_file(name = "trainer", flags = FLAGS)
'''


# the server, in this process ---------------------------------------------------------------
class Served:
    """``rcpc lsp`` (:func:`~rcpc.lsp.server.make_server`) started on a thread of this process
    over two pipes; a reader thread parses what it writes into :attr:`messages`. Requests are
    answered in :meth:`request` (notifications seen meanwhile kept in :attr:`notes`)."""

    def __init__(self, root: Path, reads: list | None = None):
        from rcpc.lsp.protocol import ClientIn, ClientOut
        from rcpc.lsp.server import make_server

        server_in, client_out = os.pipe()
        client_in, server_out = os.pipe()
        raw = os.fdopen(server_in, "rb")
        self.server = make_server()
        self.thread = threading.Thread(target=self.server.start_io, daemon=True, args=(
            ClientIn(_Counted(raw, reads) if reads is not None else raw), ClientOut(os.fdopen(server_out, "wb"))))
        self.thread.start()
        self.out = os.fdopen(client_out, "wb")
        self.messages: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(os.fdopen(client_in, "rb"),), daemon=True).start()
        self.notes: list = []
        self.next_id = 0
        self.request("initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}})
        self.notify("initialized", {})

    def _read(self, stream) -> None:
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                if line == b"\r\n":
                    break
            self.messages.put(json.loads(stream.read(length)))

    def send(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.out.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.out.flush()

    def notify(self, method: str, params) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def send_request(self, method: str, params) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def answer(self, id: int) -> dict:
        """The response to request ``id`` (notifications read on the way kept in notes)."""
        while True:
            m = self.messages.get(timeout=HANG)
            if m.get("id") == id and "method" not in m:
                return m
            self.notes.append(m)

    def request(self, method: str, params) -> dict:
        return self.answer(self.send_request(method, params))

    def note(self, method: str, match=lambda params: True) -> dict:
        """The first notification ``method`` (kept or still to come) whose params match."""
        for i, m in enumerate(self.notes):
            if m.get("method") == method and match(m["params"]):
                return self.notes.pop(i)["params"]
        while True:
            m = self.messages.get(timeout=HANG)
            if m.get("method") == method and match(m["params"]):
                return m["params"]
            self.notes.append(m)

    def diagnostics(self, uri: str, version: int) -> list[dict]:
        """What the server publishes for ``uri`` at ``version`` in the end: the parse and
        name errors when there are some, else the full diagnostics that follow them."""
        def of(p):
            return p["uri"] == uri and p.get("version") == version

        first = self.note("textDocument/publishDiagnostics", of)["diagnostics"]
        if any(d["severity"] == 1 for d in first):
            return first
        return self.note("textDocument/publishDiagnostics", of)["diagnostics"]

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "rcp", "version": version,
                                                              "text": text}})

    def change(self, uri: str, text: str, version: int) -> None:
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"text": text}]})

    def close(self) -> None:
        assert self.request("shutdown", None)["result"] is None
        self.notify("exit", None)
        self.thread.join(HANG)
        assert not self.thread.is_alive()


class _Counted:
    """A binary stream whose reads' sizes are appended to ``reads``."""

    def __init__(self, raw, reads: list):
        self.raw = raw
        self.reads = reads

    def readline(self, limit: int = -1) -> bytes:
        return self.raw.readline(limit)

    def read(self, size: int = -1) -> bytes:
        self.reads.append(size)
        return self.raw.read(size)


def position_request(method: str, uri: str, line: int = 0, character: int = 0) -> dict:
    params = {"textDocument": {"uri": uri}}
    if method in ("textDocument/hover", "textDocument/definition", "textDocument/references",
                  "textDocument/completion"):
        params["position"] = {"line": line, "character": character}
    if method == "textDocument/references":
        params["context"] = {"includeDeclaration": True}
    if method == "textDocument/formatting":
        params["options"] = {"tabSize": 4, "insertSpaces": True}
    if method == "textDocument/codeAction":
        params["range"] = {"start": {"line": line, "character": 0}, "end": {"line": line, "character": character}}
        params["context"] = {"diagnostics": []}
    return params


METHODS = ["textDocument/hover", "textDocument/definition", "textDocument/references", "textDocument/completion",
           "textDocument/formatting", "textDocument/documentSymbol", "textDocument/codeAction"]


# what the server opens and reads -------------------------------------------------------------
class Files:
    """Every file this process opens (an audit hook: ``open()``, ``os.open``, ``io.open``) and
    every byte ``os.read`` reads, by path, while :meth:`recording`."""

    active: "Files | None" = None
    hooked = False

    def __init__(self, monkeypatch):
        self.opened: list[tuple[str, int]] = []
        self.read: dict[str, int] = {}
        self._fds: dict[int, str] = {}
        real_open, real_read = os.open, os.read

        def rec_open(path, flags, *args, **kwargs):
            fd = real_open(path, flags, *args, **kwargs)
            self._fds[fd] = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else str(path)
            return fd

        def rec_read(fd, size):
            data = real_read(fd, size)
            path = self._fds.get(fd)
            if path is not None:
                self.read[path] = self.read.get(path, 0) + len(data)
            return data

        monkeypatch.setattr(os, "open", rec_open)
        monkeypatch.setattr(os, "read", rec_read)
        if not Files.hooked:
            sys.addaudithook(_audit)
            Files.hooked = True
        monkeypatch.setattr(Files, "active", self)

    def touched(self, path: Path) -> bool:
        """Whether the file at ``path`` was opened, by any name."""
        return any(os.path.exists(p) and os.path.samefile(p, path) for p, _ in self.opened)


def _audit(event: str, args) -> None:
    files = Files.active
    if files is not None and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        files.opened.append((os.fsdecode(args[0]), args[2] if len(args) > 2 and args[2] is not None else 0))


# the workspace and its hostile files ---------------------------------------------------------
@pytest.fixture
def hostile(tmp_path, monkeypatch) -> dict:
    """A workspace (``ws``) holding a recipe and library, and every kind of path a URI can
    name badly: a FIFO, a socket, a directory, a symlink out of the workspace and one in a
    loop, a file over the size limit (sparse: nothing to read but its size), one far over it,
    one not UTF-8, and a file outside any workspace; devices of /dev."""
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    ws = tmp_path / "ws"
    (ws / "recipes/lib").mkdir(parents=True)
    (ws / "rcp.toml").write_text(TOML)
    (ws / "recipes/lib/common.rcp").write_text("STEPS = 10\n")
    (ws / "recipes/r.rcp").write_text(RECIPE)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.rcp").write_text('SECRET = "s3cr3t"\n')
    os.mkfifo(ws / "recipes/fifo.rcp")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(ws / "recipes/socket.rcp"))
    (ws / "recipes/dir.rcp").mkdir()
    (ws / "recipes/out.rcp").symlink_to(outside / "secret.rcp")
    (ws / "recipes/loop.rcp").symlink_to(ws / "recipes/loop.rcp")
    (ws / "recipes/lib/out.rcp").symlink_to(outside / "secret.rcp")
    with open(ws / "recipes/big.rcp", "wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)
    with open(ws / "recipes/huge.rcp", "wb") as f:
        f.truncate(1 << 40)
    (ws / "recipes/latin1.rcp").write_bytes(b'X = "caf\xe9"\n')
    yield {"ws": ws.resolve(), "outside": outside.resolve(), "sock": sock}
    sock.close()


NEVER_OPENED = ["recipes/fifo.rcp", "recipes/socket.rcp", "recipes/dir.rcp", "/dev/zero", "/dev/urandom",
                "/dev/null", "/dev/full"]
NEVER_READ = ["recipes/big.rcp", "recipes/huge.rcp"]
TARGETS = ["recipes/r.rcp", "recipes/lib/common.rcp", "recipes/missing.rcp", "recipes/out.rcp", "recipes/loop.rcp",
           "recipes/latin1.rcp", "", "recipes", "rcp.toml", "../outside/secret.rcp", "recipes/../../outside/secret.rcp",
           "recipes/./r.rcp", "recipes//r.rcp", "/dev/stdin", "/proc/self/mem", "/", *NEVER_OPENED, *NEVER_READ]


@st.composite
def uris(draw, ws: Path) -> str:
    """A document URI: a scheme (file: with and without a host, others, none), a path the
    workspace holds or one of the hostile ones, written plainly or percent-encoded, with
    perhaps a NUL, a control character, a broken or non-UTF-8 escape, a query or a fragment."""
    target = draw(st.sampled_from(TARGETS))
    path = target if target.startswith("/") else f"{ws}/{target}"
    if draw(st.booleans()):
        path = quote(path)
    if draw(st.booleans()):
        mangle = draw(st.sampled_from(["%00", "\x00", "\n", "\t", "\x7f", "%0A", "%zz", "%", "%ff", "%c3%28", "?q=1",
                                       "#frag", "\ud800", "%ED%A0%80", "/..", "/../..", "é", "😀", " "]))
        at = draw(st.integers(0, len(path)))
        path = path[:at] + mangle + path[at:]
    prefix = draw(st.sampled_from(["file://"] * 8 + ["file://localhost", "FILE://", "file:", "file://example.com",
                                                      "http://example.com", "untitled:", "", "file:///"]))
    return prefix + path if prefix != "file:" else "file:" + path.lstrip("/")


def test_every_request_is_answered_and_nothing_but_regular_files_in_the_workspace_is_read(hostile, monkeypatch):
    """A property over document URIs (schemes, NUL and control characters, percent-escapes,
    ``..``, symlinks out of the workspace, devices, FIFOs, sockets, directories, files over
    the size limit) and every request kind: each gets a result or an error the protocol
    defines for it (``InvalidParams`` for a URI that names no file, ``RequestFailed`` for a
    file the CLI would not read), never an internal error; no FIFO, socket, device or
    directory is ever opened, no byte of a file over the limit is read, and the file a
    symlink out of the workspace leads to is not opened because of it."""
    ws, outside = hostile["ws"], hostile["outside"]
    files = Files(monkeypatch)
    served = Served(ws)

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(uri=uris(ws), method=st.sampled_from(METHODS), line=st.sampled_from([0, 2, 10 ** 6]),
           character=st.sampled_from([0, 3, 7, 10 ** 6]))
    @example(uri="file:///dev/zero", method="textDocument/hover", line=0, character=0)
    @example(uri=f"file://{ws}/recipes/fifo.rcp", method="textDocument/hover", line=0, character=0)
    @example(uri=f"file://{ws}/recipes/a%00b.rcp", method="textDocument/hover", line=0, character=0)
    @example(uri=f"file://{ws}/recipes/out.rcp", method="textDocument/definition", line=0, character=0)
    @example(uri=f"file://{ws}/recipes/lib/common.rcp", method="textDocument/references", line=0, character=0)
    @example(uri=f"file://{ws}/recipes/r.rcp", method="textDocument/completion", line=0, character=7)
    def check(uri, method, line, character):
        files.opened.clear()
        got = served.request(method, position_request(method, uri, line, character))
        assert "result" in got or got["error"]["code"] in (INVALID_PARAMS, REQUEST_FAILED), got
        if "error" in got:
            assert "Traceback" not in json.dumps(got) and got["error"].get("data") is None
        if "/out.rcp" in uri:
            assert not files.touched(outside / "secret.rcp"), "read through a symlink out of the workspace"
        for p in NEVER_OPENED:
            assert not files.touched(ws / p if not p.startswith("/") else Path(p)), f"{p} was opened"
        for p in NEVER_READ:
            assert files.read.get(str(ws / p), 0) == 0, f"{p} was read"

    try:
        check()
    finally:
        served.close()


def test_a_bad_uri_in_a_notification_is_said_where_the_client_looks(hostile):
    """didOpen of a document the server does not read gets a diagnostic saying why, and the
    server goes on; a FIFO named by an open document is never read (its buffer is)."""
    ws = hostile["ws"]
    served = Served(ws)
    try:
        served.open("file:///tmp/a\x00b.rcp", "X = 1\n")
        (d,) = served.diagnostics("file:///tmp/a\x00b.rcp", 1)
        assert "NUL" in d["message"] and d["severity"] == 1
        served.open("untitled:Untitled-1", "X = 1\n")
        (d,) = served.diagnostics("untitled:Untitled-1", 1)
        assert "file: URIs only" in d["message"]
        uri = (ws / "recipes/out.rcp").as_uri()
        served.open(uri, "X = 1\n")
        (d,) = served.diagnostics(uri, 1)
        assert d["code"] == "E0906"
        fifo = (ws / "recipes/fifo.rcp").as_uri()
        served.open(fifo, 'load("//recipes/lib/common.rcp", "STEPS")\nX = STEPS\n')
        assert [d["code"] for d in served.diagnostics(fifo, 1)] == ["L0001"]
        got = served.request("textDocument/hover", position_request("textDocument/hover", fifo, 1, 5))
        assert "STEPS = 10" in got["result"]["contents"]["value"]
    finally:
        served.close()


def _sized(size: int, char: str, surrogate: bool) -> str:
    """A recipe text (a comment) of ``size`` bytes of UTF-8 (give or take a character of
    ``char``), with a lone surrogate in its last line when ``surrogate``."""
    tail = "X = 1\n# \ud800\n" if surrogate else "X = 1\n"
    width = len(char.encode())
    fill = max(0, size - len(tail.encode("utf-8", "surrogatepass")) - 2) // width
    return "# " + char * fill + "\n" + tail


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(delta=st.integers(-3, 3), char=st.sampled_from(["a", "é", "😀"]), surrogate=st.booleans())
@example(delta=5 * 1024 * 1024 - MAX_FILE_BYTES, char="a", surrogate=False)   # the reported 5 MB buffer
def test_a_buffer_is_held_to_the_size_limit_before_it_is_parsed(hostile, delta, char, surrogate):
    """Buffers of sizes around :data:`~rcpc.core.limits.MAX_FILE_BYTES` (bytes of UTF-8, not
    characters): over it, the one diagnostic is E0803, as for a file; a lone surrogate is
    E0003 (not UTF-8); either way nothing parses the text, and requests on it find nothing.
    At or under it, the text is checked as the CLI checks a file."""
    from rcpc.core.syntax import parser
    from rcpc.lsp import session as session_module

    text = _sized(MAX_FILE_BYTES + delta, char, surrogate)
    size = len(text.encode("utf-8", "surrogatepass"))
    parsed: list = []
    real_parse, real_partial = parser.parse, session_module.parse
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(parser, "parse", lambda src, *a, **k: parsed.append(len(src.text)) or real_parse(src, *a, **k))
        mp.setattr(session_module, "parse", lambda src: parsed.append(len(src.text)) or real_partial(src))
        served = Served(hostile["ws"])
        try:
            uri = (hostile["ws"] / "recipes/r.rcp").as_uri()
            served.open(uri, text)
            found = [d["code"] for d in served.diagnostics(uri, 1)]
            refused = size > MAX_FILE_BYTES or surrogate
            assert found == (["E0803"] if size > MAX_FILE_BYTES else ["E0003"] if surrogate else found)
            if refused:
                assert len(text) not in parsed
                hover = served.request("textDocument/hover", position_request("textDocument/hover", uri, 1, 0))
                assert hover["result"] is None
            else:
                assert "E0803" not in found and len(text) in parsed
        finally:
            served.close()


def test_a_message_over_the_limit_is_dropped_unread_and_the_server_goes_on(hostile):
    """A didOpen of :data:`~rcpc.core.limits.MAX_MESSAGE_BYTES` + 1 bytes is read a piece at
    a time and dropped (no read larger than a piece), the client is told, and the next
    request is answered."""
    from rcpc.lsp.protocol import _PIECE

    reads: list = []
    served = Served(hostile["ws"], reads)
    try:
        uri = (hostile["ws"] / "recipes/r.rcp").as_uri()
        head = {"jsonrpc": "2.0", "method": "textDocument/didOpen",
                "params": {"textDocument": {"uri": uri, "languageId": "rcp", "version": 1, "text": ""}}}
        body = json.dumps(head).encode()
        body = body.replace(b'"text": ""', b'"text": "' + b"#" * (MAX_MESSAGE_BYTES + 1 - len(body)) + b'"')
        assert len(body) == MAX_MESSAGE_BYTES + 1
        served.out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        served.out.flush()
        shown = served.note("window/showMessage")
        assert f"{MAX_MESSAGE_BYTES + 1} bytes" in shown["message"] and shown["type"] == 1
        assert max(reads) <= _PIECE
        got = served.request("textDocument/hover", position_request("textDocument/hover", uri, 2, 1))
        assert "maxtext_flags" in got["result"]["contents"]["value"]   # from the file: the buffer never came
    finally:
        served.close()


def test_requests_after_shutdown_are_invalid_and_exit_ends_the_server(hostile):
    """LSP 3.17: after ``shutdown`` a request is answered ``InvalidRequest`` (it got no answer:
    the client waited for ever); ``exit`` then ends the server."""
    served = Served(hostile["ws"])
    uri = (hostile["ws"] / "recipes/r.rcp").as_uri()
    assert served.request("shutdown", None)["result"] is None
    for method in METHODS:
        got = served.request(method, position_request(method, uri))
        assert got["error"]["code"] == INVALID_REQUEST
    assert served.request("shutdown", None)["error"]["code"] == INVALID_REQUEST
    served.notify("exit", None)
    served.thread.join(HANG)
    assert not served.thread.is_alive() and served.server.shut_down
