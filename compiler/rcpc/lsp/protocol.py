"""The protocol's edges, around pygls: what the server reads and writes, and the answers it
owes (LSP 3.17, JSON-RPC 2.0).

* :class:`ClientIn` — the standard input the protocol reads: a header line is read at most
  :data:`MAX_HEADER` bytes at a time, and the body of a message over
  :data:`~rcpc.core.limits.MAX_MESSAGE_BYTES` is read and dropped a piece at a time, never
  held (the server is told, :data:`TOO_LARGE`);
* :class:`ClientOut` — the standard output it writes: a client that closed it ends nothing
  but that stream;
* :class:`RcpProtocol` — pygls' protocol with two answers pygls does not give: a request
  after ``shutdown`` is answered ``InvalidRequest`` (pygls drops it, and the client waits for
  ever), and a :class:`RequestError` a handler raises is answered as it says, with no
  traceback logged (pygls logs every exception with one).
"""

from __future__ import annotations

import json

from lsprotocol import types as T
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import RPCRequest

from rcpc.core.limits import MAX_MESSAGE_BYTES

MAX_HEADER = 1024  # bytes of a header line read at once (a longer one is read as several, each ignored)
TOO_LARGE = "rcpc/messageTooLarge"  # the notification a dropped message becomes: {"bytes": its size}
_PIECE = 1 << 20


class RequestError(JsonRpcException):
    """The error response to a request: ``code`` (:class:`lsprotocol.types.ErrorCodes` or
    ``LSPErrorCodes``) and a message for the user."""

    def __init__(self, code: int, message: str):
        super().__init__(message, code)


class RcpProtocol(LanguageServerProtocol):
    """pygls' language server protocol, answering every request (see the module docstring)."""

    def handle_message(self, message) -> None:
        if self._shutdown and isinstance(message, RPCRequest):   # (exit is a notification)
            self._send_response(message.id, error=T.ResponseError(
                T.ErrorCodes.InvalidRequest, f"the server is shut down: no {message.method} after shutdown "
                                             "(LSP: only the exit notification may follow)"))
            return
        super().handle_message(message)

    def _send_handler_result(self, future, *, msg_id) -> None:
        error = None if future.cancelled() else future.exception()
        if isinstance(error, RequestError):
            self._request_futures.pop(msg_id, None)
            self._send_response(msg_id, error=error.to_response_error())
            return
        super()._send_handler_result(future, msg_id=msg_id)


class ClientIn:
    """The client's messages as pygls reads them (``readline``, ``read``), from the binary
    stream ``raw``, with the limits of the module docstring."""

    def __init__(self, raw):
        self.raw = raw

    def readline(self) -> bytes:
        return self.raw.readline(MAX_HEADER)

    def read(self, size: int) -> bytes:
        """The body of a message of ``size`` bytes; over the limit, the body is read and
        dropped, and a :data:`TOO_LARGE` notification stands for it (``b""`` when the input
        ends first)."""
        if size <= MAX_MESSAGE_BYTES:
            return self.raw.read(size)
        left = size
        while left > 0:
            piece = self.raw.read(min(left, _PIECE))
            if not piece:
                return b""
            left -= len(piece)
        return json.dumps({"jsonrpc": "2.0", "method": TOO_LARGE, "params": {"bytes": size}}).encode()


class ClientOut:
    """The standard output the protocol writes to. A client that closed it (it went away,
    or stopped reading after its exit notification) ends nothing but this stream: what is
    written after that is dropped, and the server ends when its input does."""

    def __init__(self, raw):
        self.raw = raw
        self.gone = False

    def write(self, data: bytes) -> None:
        if not self.gone:
            try:
                self.raw.write(data)
            except (BrokenPipeError, ValueError):  # ValueError: closed already
                self.gone = True

    def flush(self) -> None:
        if not self.gone:
            try:
                self.raw.flush()
            except (BrokenPipeError, ValueError):
                self.gone = True

    def close(self) -> None:
        try:
            self.raw.close()
        except OSError:
            pass
