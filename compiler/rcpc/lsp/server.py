"""The language server: LSP requests and notifications over stdio (pygls, lsprotocol).

Two threads: the protocol's (pygls' event loop) reads every message as it comes, keeps which
documents are open at which version, and answers; everything that reads a session (parse,
evaluation, check, hover, completion, formatting) runs on the compiler thread
(:mod:`rcpc.lsp.worker`), in order.

Diagnostics are published as the user types, debounced (:data:`DEBOUNCE` seconds after the
last edit): first the buffer's parse and name errors, then everything ``rcpc check`` reports
for the file (:meth:`rcpc.lsp.session.Session.diagnostics`). A result is published only for
the document's latest version: an edit cancels the analysis waiting for the previous one,
an analysis whose text was replaced meanwhile is skipped when its turn comes, and a result
whose text was replaced while it was computed is dropped. A request the client cancels
before its turn is not run. Positions are converted between rcpc's character columns and
the client's UTF-16 code units.

Requests are untrusted input (:mod:`rcpc.lsp.documents`): a document URI must be a ``file:``
URI (else the request is answered ``InvalidParams``), the document must resolve inside its
workspace, a file that is not open is read as the CLI reads its inputs (else
``RequestFailed``, saying why), an open buffer is held to the CLI's limits before it is
parsed (else its diagnostic says why and requests on it find nothing), and a message over
:data:`~rcpc.core.limits.MAX_MESSAGE_BYTES` is dropped unread (:mod:`rcpc.lsp.protocol`).
After ``shutdown``, requests are answered ``InvalidRequest``; ``exit`` ends the server.

Initialization options (``initializationOptions``): ``{"variant": NAME}``, the variant whose
effective values hover shows (default: ``default``).
"""

from __future__ import annotations

import asyncio
import re
import sys
import traceback
from pathlib import Path

from lsprotocol import types as T
from pygls.lsp.server import LanguageServer

from rcpc import __version__
from rcpc.core import store
from rcpc.core.cachetrim import maybe_trim
from rcpc.core.diagnostics import CompileError, Diagnostic
from rcpc.core.fmt import format_source
from rcpc.core.limits import MAX_MESSAGE_BYTES
from rcpc.core.session import Session as Caches
from rcpc.core.source import Source, Span
from rcpc.domain import stdlib
from rcpc.lsp import query
from rcpc.lsp.documents import SETTINGS, BadUri, locate, path_of
from rcpc.lsp.protocol import TOO_LARGE, ClientIn, ClientOut, RcpProtocol, RequestError
from rcpc.lsp.session import Session
from rcpc.lsp.worker import Worker

DEBOUNCE = 0.03   # seconds of quiet after an edit before it is analysed
_SEVERITY = {"error": T.DiagnosticSeverity.Error, "warning": T.DiagnosticSeverity.Warning,
             "note": T.DiagnosticSeverity.Hint}
_KINDS = {"keyword": T.CompletionItemKind.Keyword, "function": T.CompletionItemKind.Function,
          "variable": T.CompletionItemKind.Variable, "param": T.CompletionItemKind.Variable,
          "field": T.CompletionItemKind.Field, "file": T.CompletionItemKind.File}
_SYMBOLS = {"param": T.SymbolKind.Variable, "flag set": T.SymbolKind.Object, "render": T.SymbolKind.File,
            "variant": T.SymbolKind.Event, "value": T.SymbolKind.Constant, "load": T.SymbolKind.Module,
            "function": T.SymbolKind.Function, "sweep": T.SymbolKind.Array}
_DID_YOU_MEAN = re.compile(r"did you mean '([^']*)'\?")
_TOP = T.Range(T.Position(0, 0), T.Position(0, 0))


class RcpServer(LanguageServer):
    """The server: one :class:`~rcpc.lsp.session.Session` per workspace, all filling the
    server's ``caches`` (one :class:`rcpc.core.session.Session` for its life); ``latest``, the
    version of each open document (by URI, as the client names it), kept on the protocol's
    thread and read by the compiler thread to skip stale work."""

    def __init__(self):
        super().__init__("rcpc", __version__, text_document_sync_kind=T.TextDocumentSyncKind.Full,
                         protocol_cls=RcpProtocol)
        self.sessions: dict[Path, Session] = {}   # touched on the compiler thread only
        self.caches = Caches()   # every session's compilers fill it, for the server's life (compiler thread)
        self.variant: str | None = None
        self.latest: dict[str, object] = {}
        self.worker = Worker()
        self._pending: dict[str, asyncio.Task] = {}
        self.shut_down = False   # the client sent shutdown (LSP: exit then ends with status 0, else 1)

    def run(self, fn):
        """Await ``fn()`` run on the compiler thread (cancelled with the awaiting task if
        its turn has not come)."""
        return asyncio.wrap_future(self.worker.submit(fn))

    def document(self, uri: str) -> tuple[Session, Path]:
        """The session and real path of a document (compiler thread). Raises
        :class:`~rcpc.lsp.documents.BadUri` or :class:`CompileError` (``E0901``, ``E0906``,
        ``E0907``, ``E0201``). A workspace whose settings changed gets a new session, the
        open buffers carried over."""
        ws, real = locate(path_of(uri), self.caches.table(SETTINGS))
        got = self.sessions.get(ws.root)
        if got is None or got.workspace != ws:
            old = got
            got = self.sessions[ws.root] = Session(ws, self.caches)
            for path, text in (old.buffers.items() if old is not None else ()):
                got.update(path, text)
        return got, real

    # analysis ------------------------------------------------------------------------------
    def edit(self, uri: str, version, text: str) -> None:
        """A document was opened or edited: its buffer is updated on the compiler thread,
        then analysed (every other open document too when it is a library)."""
        self.latest[uri] = version
        updated = self.worker.submit(lambda: self._update(uri, version, text))
        self.schedule(uri, version, updated)

    def _update(self, uri: str, version, text: str) -> bool:
        """(compiler thread) Lay ``text`` over the document; whether it is a library."""
        if self.latest.get(uri) != version:
            return False   # a newer text is queued
        try:
            session, real = self.document(uri)
        except (BadUri, CompileError):
            return False   # the analysis says why
        session.update(real, text)
        return session.workspace.is_library(real)

    def schedule(self, uri: str, version, updated=None) -> None:
        old = self._pending.pop(uri, None)
        if old is not None:
            old.cancel()
        self._pending[uri] = asyncio.ensure_future(self._analyse(uri, version, updated))

    async def _analyse(self, uri: str, version, updated) -> None:
        """Debounced analysis of one document: syntax and names first, then everything."""
        try:
            if updated is not None and await asyncio.shield(asyncio.wrap_future(updated)):
                for other, v in list(self.latest.items()):   # the open files that may load it
                    if other != uri:
                        self.schedule(other, v)
            await asyncio.sleep(DEBOUNCE)
            for full in (False, True):
                found = await self.run(lambda: self._diagnose(uri, version, full))
                if found is None or self.latest.get(uri) != version:
                    return   # replaced, or closed
                self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri, found, version))
                if any(d.severity == T.DiagnosticSeverity.Error for d in found):
                    return
        except asyncio.CancelledError:
            raise
        except Exception:   # a bug: said in the client's log, the server goes on
            self.window_log_message(T.LogMessageParams(
                T.MessageType.Error, f"rcpc: internal error checking {uri}:\n{traceback.format_exc()}"))

    def _diagnose(self, uri: str, version, full: bool) -> list[T.Diagnostic] | None:
        """(compiler thread) The document's diagnostics as LSP's, or None when its text has
        been replaced since (the newer text's analysis is queued)."""
        if self.latest.get(uri) != version:
            return None
        try:
            session, real = self.document(uri)
        except BadUri as exc:
            return [T.Diagnostic(_TOP, f"rcpc does not read this document: {exc}", T.DiagnosticSeverity.Error,
                                 source="rcpc")]
        except CompileError as exc:   # a bad rcp.toml (E0901), a symlink out (E0906): at the top
            return [T.Diagnostic(_TOP, f"{d.span}: {d.message}" if d.span else d.message, _SEVERITY.get(d.severity),
                                 d.code, source="rcpc") for d in exc.diagnostics]
        found = session.diagnostics(real) if full else session.syntax_diagnostics(real)
        if full:   # the entries it made written, the cache kept under its size limit, as a command does

            store.flush()
            maybe_trim()
        src = _source(session, real)
        return [to_lsp(session, d, real, src) for d in found]

    def close(self, uri: str) -> None:
        self.latest.pop(uri, None)
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        self.worker.submit(lambda: self._close(uri))
        self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri, []))

    def _close(self, uri: str) -> None:
        if uri in self.latest:
            return   # opened again since
        try:
            session, real = self.document(uri)
        except (BadUri, CompileError):
            return
        session.close(real)


# positions ---------------------------------------------------------------------------------
def _utf16(line_text: str, col: int) -> int:
    """UTF-16 code units before 1-based character column ``col``."""
    head = line_text[:max(0, col - 1)]
    return len(head) + sum(1 for c in head if ord(c) > 0xFFFF)


def _chars(line_text: str, units: int) -> int:
    """1-based character column at ``units`` UTF-16 code units into the line."""
    n = 0
    for i, c in enumerate(line_text):
        if n >= units:
            return i + 1
        n += 2 if ord(c) > 0xFFFF else 1
    return len(line_text) + 1


def to_range(span: Span, src: Source | None) -> T.Range:
    """The LSP range of a span (a span of line 0, a whole file: its first character)."""
    if span.line <= 0:
        return _TOP
    text = src.line_text if src is not None else (lambda n: "")
    return T.Range(T.Position(span.line - 1, _utf16(text(span.line), span.col)),
                   T.Position(span.end_line - 1, _utf16(text(span.end_line), span.end_col)))


def position(src: Source, pos: T.Position) -> tuple[int, int]:
    """1-based (line, character column) of an LSP position."""
    return pos.line + 1, _chars(src.line_text(pos.line + 1), pos.character)


def _source(session: Session, real: Path) -> Source | None:
    """The text of a file of the session's workspace, for its positions (None: outside the
    workspace, or unreadable)."""
    if not session.inside(real):
        return None
    try:
        return session.source(real)
    except CompileError:
        return None


def _location(session: Session, span: Span) -> T.Location:
    real = session.real(span.path)
    return T.Location(real.as_uri(), to_range(span, _source(session, real)))


# diagnostics -------------------------------------------------------------------------------
def to_lsp(session: Session, d: Diagnostic, real: Path, src: Source | None) -> T.Diagnostic:
    """An rcpc diagnostic of buffer ``real`` as an LSP diagnostic: its related spans as
    related information, its notes and hint in the message; ``data.replace`` the word a
    did-you-mean hint offers (for the code action). A diagnostic whose span lies in another
    file is shown at its first related span in this file, else at the top."""
    span = d.span
    message = d.message
    if span is None or session.real(span.path) != real:
        mine = [s for _, s in d.related if session.real(s.path) == real and s.line > 0]
        if span is not None:
            message = f"{span}: {message}"
        span = mine[0] if mine else Span("", 1, 1, 1, 1)
    extra = [*d.notes, *([f"help: {d.hint}"] if d.hint else [])]
    related = [T.DiagnosticRelatedInformation(_location(session, s), label) for label, s in d.related
               if s.line > 0]
    m = _DID_YOU_MEAN.search(d.hint or "")
    return T.Diagnostic(to_range(span, src), "\n".join([message, *extra]), _SEVERITY.get(d.severity),
                        d.code, source="rcpc", related_information=related or None,
                        data={"replace": m.group(1)} if m else None)


# requests (each runs on the compiler thread) -----------------------------------------------
def _open(ls: RcpServer, uri: str) -> tuple[Session, Path, Source] | None:
    """The session, real path and text of the document a request names; None when there
    is nothing to answer from (its workspace's rcp.toml is bad, or its open buffer is over
    the limits: its diagnostics say why). Raises :class:`RequestError`: ``InvalidParams``
    for a URI that names no file, ``RequestFailed`` for a file the CLI would not read."""
    try:
        session, real = ls.document(uri)
    except BadUri as exc:
        raise RequestError(T.ErrorCodes.InvalidParams, f"rcpc does not read {_shown(uri)}: {exc}") from None
    except CompileError as exc:
        if exc.diagnostics[0].code == "E0901":
            return None
        raise RequestError(T.LSPErrorCodes.RequestFailed, _said(exc, uri)) from None
    if real in session.refused:
        return None
    try:
        return session, real, session.source(real)
    except CompileError as exc:
        raise RequestError(T.LSPErrorCodes.RequestFailed, _said(exc, uri)) from None


def _shown(uri) -> str:
    text = repr(uri)
    return text if len(text) <= 200 else text[:200] + "..."


def _said(exc: CompileError, uri: str) -> str:
    """The first diagnostic of ``exc`` as ``rcpc check`` prints its first line (the
    document's URI for its place when it has none)."""
    d = exc.diagnostics[0]
    return f"{d.span if d.span is not None else _shown(uri)}: {d.severity}[{d.code}]: {d.message}"


def _at(ls: RcpServer, params):
    got = _open(ls, params.text_document.uri)
    if got is None:
        return None
    session, real, src = got
    return session, real, src, position(src, params.position)


def _hover(ls: RcpServer, params: T.HoverParams):
    at = _at(ls, params)
    if at is None:
        return None
    session, real, src, (line, col) = at
    got = query.hover(session, real, line, col, ls.variant)
    if got is None:
        return None
    text, span = got
    rng = to_range(span, src) if span is not None and session.real(span.path) == real else None
    return T.Hover(T.MarkupContent(T.MarkupKind.Markdown, text), rng)


def _definition(ls: RcpServer, params: T.DefinitionParams):
    at = _at(ls, params)
    if at is None:
        return None
    session, real, _, (line, col) = at
    span = query.definition(session, real, line, col)
    return None if span is None else _location(session, span)


def _references(ls: RcpServer, params: T.ReferenceParams):
    at = _at(ls, params)
    if at is None:
        return None
    session, real, _, (line, col) = at
    spans = query.references(session, real, line, col, params.context.include_declaration)
    return [_location(session, s) for s in spans]


def _completion(ls: RcpServer, params: T.CompletionParams):
    at = _at(ls, params)
    if at is None:
        return None
    session, real, src, (line, col) = at
    offset = len("\n".join(src.text.split("\n")[:line - 1])) + (line > 1) + col - 1
    items = query.completions(session, real, src.text, offset)
    return T.CompletionList(False, [
        T.CompletionItem(i.label, kind=_KINDS.get(i.kind), detail=i.detail or None,
                         documentation=T.MarkupContent(T.MarkupKind.Markdown, i.doc) if i.doc else None,
                         insert_text=i.insert) for i in items])


def _formatting(ls: RcpServer, params: T.DocumentFormattingParams):
    got = _open(ls, params.text_document.uri)
    if got is None:
        return None
    session, real, src = got
    if stdlib.contains(real):
        return None   # rcpc's own file: no workspace writes it
    text = src.text
    try:
        out = format_source(text, session.workspace.display(real), session.caches)
    except CompileError:
        return None   # the diagnostics say why
    if out == text:
        return []
    lines = text.split("\n")
    end = T.Position(len(lines) - 1, _utf16(lines[-1], len(lines[-1]) + 1))
    return [T.TextEdit(T.Range(T.Position(0, 0), end), out)]


def _symbols(ls: RcpServer, params: T.DocumentSymbolParams):
    got = _open(ls, params.text_document.uri)
    mod = None if got is None else got[0].module(got[1])
    if mod is None:
        return []
    src = mod.source

    def conv(s: query.Symbol) -> T.DocumentSymbol:
        return T.DocumentSymbol(s.name, _SYMBOLS[s.kind], to_range(s.span, src), to_range(s.name_span, src),
                                detail=s.kind, children=[conv(c) for c in s.children] or None)

    return [conv(s) for s in query.symbols(mod, got[0].sweep_points(got[1]))]


def _code_actions(ls: RcpServer, params: T.CodeActionParams):
    got = _open(ls, params.text_document.uri)
    if got is None:
        return []
    src = got[2]
    out = []
    for d in params.context.diagnostics:
        data = d.data if isinstance(d.data, dict) else {}
        word = data.get("replace")
        if not isinstance(word, str):
            continue
        r = d.range
        old = src.text_of(Span("", r.start.line + 1, _chars(src.line_text(r.start.line + 1), r.start.character),
                               r.end.line + 1, _chars(src.line_text(r.end.line + 1), r.end.character)))
        new = f"{old[0]}{word}{old[0]}" if len(old) >= 2 and old[0] in "\"'" and old[-1] == old[0] else word
        edit = T.WorkspaceEdit(changes={params.text_document.uri: [T.TextEdit(r, new)]})
        out.append(T.CodeAction(f"Replace with '{word}'", kind=T.CodeActionKind.QuickFix, diagnostics=[d],
                                edit=edit, is_preferred=True))
    return out


_REQUESTS = {
    T.TEXT_DOCUMENT_HOVER: (_hover, None),
    T.TEXT_DOCUMENT_DEFINITION: (_definition, None),
    T.TEXT_DOCUMENT_REFERENCES: (_references, None),
    T.TEXT_DOCUMENT_COMPLETION: (_completion, T.CompletionOptions(trigger_characters=['"', "'", "{", "(", ","])),
    T.TEXT_DOCUMENT_FORMATTING: (_formatting, None),
    T.TEXT_DOCUMENT_DOCUMENT_SYMBOL: (_symbols, None),
    T.TEXT_DOCUMENT_CODE_ACTION: (_code_actions, T.CodeActionOptions(code_action_kinds=[T.CodeActionKind.QuickFix])),
}


def _on_thread(handler):
    async def answer(ls: RcpServer, params):
        return await ls.run(lambda: handler(ls, params))
    return answer


# notifications (on the protocol's thread) --------------------------------------------------
def _initialize(ls: RcpServer, params: T.InitializeParams) -> None:
    opts = params.initialization_options
    if isinstance(opts, dict) and isinstance(opts.get("variant"), str):
        ls.variant = opts["variant"]


def _shutdown(ls: RcpServer, params) -> None:
    ls.shut_down = True
    for task in ls._pending.values():
        task.cancel()


def _did_open(ls: RcpServer, params: T.DidOpenTextDocumentParams) -> None:
    doc = params.text_document
    ls.edit(doc.uri, doc.version, doc.text)


def _did_change(ls: RcpServer, params: T.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.edit(uri, params.text_document.version, ls.workspace.get_text_document(uri).source)  # pygls applied them


def _did_save(ls: RcpServer, params: T.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    if uri in ls.latest:
        ls.schedule(uri, ls.latest[uri])


def _did_close(ls: RcpServer, params: T.DidCloseTextDocumentParams) -> None:
    ls.close(params.text_document.uri)


def _too_large(ls: RcpServer, params) -> None:
    size = params.get("bytes") if isinstance(params, dict) else getattr(params, "bytes", None)
    ls.window_show_message(T.ShowMessageParams(
        T.MessageType.Error, f"rcpc: a message of {size} bytes from the editor was dropped unread: over the limit "
                             f"of {MAX_MESSAGE_BYTES} bytes (a buffer this large is over the size limit of a "
                             "recipe, docs/language.md, Limits)"))


def make_server() -> RcpServer:
    """A new server with every feature registered (not started: :meth:`start_io`)."""
    ls = RcpServer()
    for method, handler in ((T.INITIALIZE, _initialize), (T.SHUTDOWN, _shutdown),
                            (T.TEXT_DOCUMENT_DID_OPEN, _did_open), (T.TEXT_DOCUMENT_DID_CHANGE, _did_change),
                            (T.TEXT_DOCUMENT_DID_SAVE, _did_save), (T.TEXT_DOCUMENT_DID_CLOSE, _did_close),
                            (TOO_LARGE, _too_large)):
        ls.feature(method)(handler)
    for method, (handler, options) in _REQUESTS.items():
        ls.feature(method, options)(_on_thread(handler))
    return ls


def serve() -> int:
    """Serve LSP over stdin/stdout until the client says exit (or closes stdin). The exit
    status is the protocol's: 0 when the client sent ``shutdown`` first, else 1 (LSP 3.17,
    *exit notification*). Standard output belongs to the protocol, and pygls may have closed
    it: nothing is flushed there afterwards."""
    server = make_server()
    server.start_io(ClientIn(sys.stdin.buffer), ClientOut(sys.stdout.buffer))
    sys.stdout = None
    return 0 if server.shut_down else 1
