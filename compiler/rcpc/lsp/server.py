"""The language server: LSP requests and notifications over stdio (pygls, lsprotocol).

Diagnostics are published as the user types, debounced (:data:`DEBOUNCE` seconds after the
last edit): first the buffer's parse and name errors, at once, then everything ``rcpc check``
and ``rcpc lint`` find for it (evaluation of every variant, contracts, MaxText and Kubernetes
checks). A newer edit cancels the analysis of an older one. Positions are converted between
rcpc's character columns and the client's UTF-16 code units.

Initialization options (``initializationOptions``): ``{"variant": NAME}``, the variant whose
effective values hover shows (default: ``default``).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

from lsprotocol import types as T
from pygls.lsp.server import LanguageServer

from rcpc import __version__
from rcpc.core.diagnostics import CompileError, Diagnostic
from rcpc.core.fmt import format_source
from rcpc.lsp import query
from rcpc.lsp.session import Session
from rcpc.core.source import Source, Span

DEBOUNCE = 0.03   # seconds of quiet after an edit before it is analysed
_SEVERITY = {"error": T.DiagnosticSeverity.Error, "warning": T.DiagnosticSeverity.Warning,
             "note": T.DiagnosticSeverity.Information}
_KINDS = {"keyword": T.CompletionItemKind.Keyword, "function": T.CompletionItemKind.Function,
          "variable": T.CompletionItemKind.Variable, "param": T.CompletionItemKind.Variable,
          "field": T.CompletionItemKind.Field, "file": T.CompletionItemKind.File}
_SYMBOLS = {"param": T.SymbolKind.Variable, "flag set": T.SymbolKind.Object, "render": T.SymbolKind.File,
            "variant": T.SymbolKind.Event, "value": T.SymbolKind.Constant, "load": T.SymbolKind.Module}
_DID_YOU_MEAN = re.compile(r"did you mean '([^']*)'\?")


class RcpServer(LanguageServer):
    """The server: one :class:`~rcpc.lsp.session.Session` per workspace root seen."""

    def __init__(self):
        super().__init__("rcpc", __version__, text_document_sync_kind=T.TextDocumentSyncKind.Full)
        self.sessions: dict[Path, Session] = {}
        self.variant: str | None = None
        self._pending: dict[str, asyncio.Task] = {}
        self.shut_down = False   # the client sent shutdown (LSP: exit then ends with status 0, else 1)

    def session(self, real: Path) -> Session:
        from rcpc.domain.workspace import Workspace

        root = Workspace.find(real.parent).root
        got = self.sessions.get(root)
        if got is None:
            got = self.sessions[root] = Session(root)
        return got


def path_of(uri: str) -> Path:
    """The real path of a ``file:`` URI."""
    return Path(unquote(urlparse(uri).path)).resolve()


def uri_of(path: Path) -> str:
    return path.as_uri()


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
        return T.Range(T.Position(0, 0), T.Position(0, 0))
    text = src.line_text if src is not None else (lambda n: "")
    return T.Range(T.Position(span.line - 1, _utf16(text(span.line), span.col)),
                   T.Position(span.end_line - 1, _utf16(text(span.end_line), span.end_col)))


def position(src: Source, pos: T.Position) -> tuple[int, int]:
    """1-based (line, character column) of an LSP position."""
    return pos.line + 1, _chars(src.line_text(pos.line + 1), pos.character)


def _source(session: Session, real: Path) -> Source | None:
    text = session.text(real)
    return None if text is None else Source(session.workspace.display(real), text, str(real))


def _location(session: Session, span: Span) -> T.Location:
    real = session.real(span.path)
    return T.Location(uri_of(real), to_range(span, _source(session, real)))


# diagnostics -------------------------------------------------------------------------------
def to_lsp(session: Session, d: Diagnostic, real: Path, src: Source) -> T.Diagnostic:
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
        span = mine[0] if mine else Span(src.path, 1, 1, 1, 1)
    extra = [*d.notes, *([f"help: {d.hint}"] if d.hint else [])]
    related = [T.DiagnosticRelatedInformation(_location(session, s), label) for label, s in d.related
               if s.line > 0]
    m = _DID_YOU_MEAN.search(d.hint or "")
    return T.Diagnostic(to_range(span, src), "\n".join([message, *extra]), _SEVERITY.get(d.severity),
                        d.code, source="rcpc", related_information=related or None,
                        data={"replace": m.group(1)} if m else None)


def publish(ls: RcpServer, uri: str, diags: list[Diagnostic], version) -> None:
    real = path_of(uri)
    session = ls.session(real)
    src = _source(session, real)
    out = [to_lsp(session, d, real, src) for d in diags]
    ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri, out, version))


async def analyse(ls: RcpServer, uri: str, version, delay: float = DEBOUNCE) -> None:
    """Debounced analysis of one buffer: syntax and names first, then everything."""
    await asyncio.sleep(delay)
    real = path_of(uri)
    try:
        session = ls.session(real)
    except CompileError as exc:   # a bad rcp.toml (E0901): said at the top of the buffer
        top = T.Range(T.Position(0, 0), T.Position(0, 0))
        out = [T.Diagnostic(top, f"{d.span}: {d.message}" if d.span else d.message, _SEVERITY.get(d.severity),
                            d.code, source="rcpc") for d in exc.diagnostics]
        ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri, out, version))
        return
    quick = session.syntax_diagnostics(real)
    publish(ls, uri, quick, version)
    if quick:
        return
    await asyncio.sleep(0)   # a newer edit cancels this task here
    publish(ls, uri, session.diagnostics(real), version)


def schedule(ls: RcpServer, uri: str, version) -> None:
    old = ls._pending.pop(uri, None)
    if old is not None:
        old.cancel()
    ls._pending[uri] = asyncio.ensure_future(analyse(ls, uri, version))


# the server --------------------------------------------------------------------------------
server = RcpServer()


@server.feature(T.INITIALIZE)
def _initialize(ls: RcpServer, params: T.InitializeParams) -> None:
    opts = params.initialization_options
    if isinstance(opts, dict) and isinstance(opts.get("variant"), str):
        ls.variant = opts["variant"]


@server.feature(T.SHUTDOWN)
def _shutdown(ls: RcpServer, params) -> None:
    ls.shut_down = True


@server.feature(T.TEXT_DOCUMENT_DID_OPEN)
def _did_open(ls: RcpServer, params: T.DidOpenTextDocumentParams) -> None:
    session, real, _ = _buffer(ls, params.text_document.uri)
    if session is not None:
        session.update(real, params.text_document.text)
    schedule(ls, params.text_document.uri, params.text_document.version)


@server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
def _did_change(ls: RcpServer, params: T.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    doc = ls.workspace.get_text_document(uri)   # pygls applied the changes
    session, real, _ = _buffer(ls, uri)
    if session is not None:
        session.update(real, doc.source)
    schedule(ls, uri, params.text_document.version)
    if session is not None and session.workspace.is_library(real):   # the open files that may load it
        for other, text_doc in list(ls.workspace.text_documents.items()):
            if other != uri:
                schedule(ls, other, text_doc.version)


@server.feature(T.TEXT_DOCUMENT_DID_SAVE)
def _did_save(ls: RcpServer, params: T.DidSaveTextDocumentParams) -> None:
    schedule(ls, params.text_document.uri, None)


@server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
def _did_close(ls: RcpServer, params: T.DidCloseTextDocumentParams) -> None:
    session, real, _ = _buffer(ls, params.text_document.uri)
    if session is not None:
        session.close(real)
    ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(params.text_document.uri, []))


def _buffer(ls: RcpServer, uri: str) -> tuple[Session | None, Path, str | None]:
    """The session, real path and text of a document (text None: unreadable, or in a
    workspace whose rcp.toml is bad)."""
    real = path_of(uri)
    try:
        session = ls.session(real)
    except CompileError:
        return None, real, None
    return session, real, session.text(real)


def _at(ls: RcpServer, params):
    session, real, _ = _buffer(ls, params.text_document.uri)
    src = None if session is None else _source(session, real)
    if src is None:
        return None
    return session, real, src, position(src, params.position)


@server.feature(T.TEXT_DOCUMENT_HOVER)
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


@server.feature(T.TEXT_DOCUMENT_DEFINITION)
def _definition(ls: RcpServer, params: T.DefinitionParams):
    at = _at(ls, params)
    if at is None:
        return None
    session, real, _, (line, col) = at
    span = query.definition(session, real, line, col)
    return None if span is None else _location(session, span)


@server.feature(T.TEXT_DOCUMENT_REFERENCES)
def _references(ls: RcpServer, params: T.ReferenceParams):
    at = _at(ls, params)
    if at is None:
        return None
    session, real, _, (line, col) = at
    spans = query.references(session, real, line, col, params.context.include_declaration)
    return [_location(session, s) for s in spans]


@server.feature(T.TEXT_DOCUMENT_COMPLETION, T.CompletionOptions(trigger_characters=['"', "'", "{", "(", ","]))
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


@server.feature(T.TEXT_DOCUMENT_FORMATTING)
def _formatting(ls: RcpServer, params: T.DocumentFormattingParams):
    from rcpc.core.diagnostics import CompileError

    session, real, text = _buffer(ls, params.text_document.uri)
    if text is None:
        return None
    try:
        out = format_source(text, session.workspace.display(real))
    except CompileError:
        return None   # the diagnostics say why
    if out == text:
        return []
    lines = text.split("\n")
    end = T.Position(len(lines) - 1, _utf16(lines[-1], len(lines[-1]) + 1))
    return [T.TextEdit(T.Range(T.Position(0, 0), end), out)]


@server.feature(T.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def _symbols(ls: RcpServer, params: T.DocumentSymbolParams):
    session, real, text = _buffer(ls, params.text_document.uri)
    mod = None if text is None else session.module(real)
    if mod is None:
        return []
    src = mod.source

    def conv(s: query.Symbol) -> T.DocumentSymbol:
        return T.DocumentSymbol(s.name, _SYMBOLS[s.kind], to_range(s.span, src), to_range(s.name_span, src),
                                detail=s.kind, children=[conv(c) for c in s.children] or None)

    return [conv(s) for s in query.symbols(mod)]


@server.feature(T.TEXT_DOCUMENT_CODE_ACTION,
                T.CodeActionOptions(code_action_kinds=[T.CodeActionKind.QuickFix]))
def _code_actions(ls: RcpServer, params: T.CodeActionParams):
    _, _, text = _buffer(ls, params.text_document.uri)
    if text is None:
        return []
    src = Source("", text)
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


def serve() -> int:
    """Serve LSP over stdin/stdout until the client says exit (or closes stdin). The exit
    status is the protocol's: 0 when the client sent ``shutdown`` first, else 1 (LSP 3.17,
    *exit notification*). Standard output belongs to the protocol, and pygls may have closed
    it: nothing is flushed there afterwards."""
    import sys

    server.start_io(sys.stdin.buffer, _ClientOut(sys.stdout.buffer))
    sys.stdout = None
    return 0 if server.shut_down else 1



class _ClientOut:
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
