"""Diagnostics as data, and their text rendering.

A :class:`Diagnostic` has a stable code (``E0101``), a severity, a message, a primary span,
secondary labelled spans ("first set here", "loaded from"), notes and a ``help`` hint.
Stages raise :class:`CompileError` carrying one or more diagnostics; only the CLI renders them.
The text form follows the convention of rustc and clang::

    path:line:col: error[E0101]: unknown name 'FOO'
      3 | x = FOO
        |     ^^^
    help: did you mean 'FOOD'?

Every piece of text the form prints but the quoted source line (the message, notes, hint,
related labels, paths) shows each character that is not printable as the escape Python's
``repr`` writes (:func:`visible`): much of it comes from the input (a recipe's strings,
``--set`` values, rcp.toml, file names), and an ESC sequence, a C1 control or a bidi
override in it must not reach the terminal raw.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable

from rcpc.core import patterns
from rcpc.core import record
from rcpc.core.source import Source, Span

ERROR = "error"
WARNING = "warning"
NOTE = "note"
MAX_SUGGEST = 100  # characters of a name that did_you_mean compares


@record.frozen
class Diagnostic:
    """One finding. ``related`` is a tuple of (label, Span) shown after the primary span."""

    code: str
    message: str
    span: Span | None
    severity: str = ERROR
    hint: str | None = None
    related: tuple[tuple[str, Span], ...] = ()
    notes: tuple[str, ...] = ()


class CompileError(Exception):
    """Raised by any stage for bad input; carries every diagnostic found (at least one), and
    ``sources`` ({display path: :class:`~rcpc.core.source.Source`}) of files they quote that
    whoever reports them may not know (``rcp.toml`` of a workspace that could not be opened)."""

    def __init__(self, diagnostics: Diagnostic | Iterable[Diagnostic]):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = list(diagnostics)
        self.sources: dict = {}
        super().__init__("; ".join(d.message for d in self.diagnostics))


def error(code: str, message: str, span: Span | None, hint: str | None = None,
          related: Iterable[tuple[str, Span]] = (), notes: Iterable[str] = ()) -> CompileError:
    """Shorthand: a :class:`CompileError` holding one error diagnostic."""
    return CompileError(Diagnostic(code, message, span, ERROR, hint, tuple(related), tuple(notes)))


def unique(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Each diagnostic once (same code, message and span), in order."""
    seen, out = set(), []
    for d in diags:
        key = (d.code, d.message, d.span)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def by_place(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics in source order (file, line, column; stable), those without a span last."""
    return sorted(diags, key=lambda d: (0, d.span.path, d.span.line, d.span.col) if d.span else (1, "", 0, 0))


def io_hint(exc: BaseException) -> str:
    """What to check when a file cannot be read or written, from the ``OSError``'s errno (any
    other exception: a damaged file)."""

    return {errno.ENOENT: "check the path: no such file or directory",
            errno.EACCES: "check the file's permissions (ls -l)", errno.EPERM: "check the file's permissions (ls -l)",
            errno.EISDIR: "name a file, not a directory",
            errno.ENOTDIR: "a part of the path is a file, not a directory",
            errno.ELOOP: "a symlink on the path leads to itself", errno.ENAMETOOLONG: "use a shorter path",
            errno.ENOSPC: "free space on the disk", errno.EROFS: "the file system is read-only"}.get(
        getattr(exc, "errno", None), "check that the file exists and is readable text")


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """A ``did you mean 'x'?`` hint for the closest candidate (difflib ratio >= 0.6), else for
    the one candidate ``word`` begins (``rl/qwen35`` for ``rl/qwen35_397b_256_v7x``, too far
    for difflib), or None. Words and candidates longer than :data:`MAX_SUGGEST` characters are
    not compared (difflib is quadratic in their length)."""
    candidates = list(candidates)
    if len(word) > MAX_SUGGEST:
        return None
    import difflib

    close = difflib.get_close_matches(word, [c for c in candidates if len(c) <= MAX_SUGGEST], n=1)
    if not close and word:
        close = list(dict.fromkeys(c for c in candidates if c.startswith(word)))
        close = close if len(close) == 1 else []
    return f"did you mean '{close[0]}'?" if close else None


def did_you_mean_or_list(word: str, candidates: Iterable[str], what: str) -> str:
    """:func:`did_you_mean`, or else ``what`` and the first 12 candidates (``what: none`` when
    there are none): a hint that is always given."""
    candidates = list(candidates)
    shown = ", ".join(candidates[:12]) + (", ..." if len(candidates) > 12 else "")
    return did_you_mean(word, candidates) or f"{what}: {shown or 'none'}"


QUOTE_WIDTH = 160   # characters of a source line quoted at most: an excerpt around the span
MESSAGE_WIDTH = 400   # characters of a message, hint or note shown at most (they may hold source text)

_COLORS = {ERROR: "\033[1;31m", WARNING: "\033[1;33m", NOTE: "\033[1;36m"}
_BOLD, _BLUE, _GREEN, _RESET = "\033[1m", "\033[1;34m", "\033[1;32m", "\033[0m"


def format_text(diag: Diagnostic, sources: dict[str, Source], color: bool = False) -> str:
    """Render one diagnostic as text: header, source line with carets, related spans, help.

    ``sources`` maps a span's display path to its :class:`Source` for the quoted line; a span
    whose source is unknown is shown as its location only. ``color`` adds ANSI colours (the
    CLI asks for them only on a terminal and when ``NO_COLOR`` is unset, https://no-color.org).
    """
    def paint(code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if color else text

    out = []
    where = ""
    if diag.span is not None and diag.span.line:
        where = f"{visible(str(diag.span))}: "
    elif diag.span is not None and not diag.span.path.startswith("<"):  # the file itself
        where = f"{visible(diag.span.path)}: "
    head = paint(_COLORS.get(diag.severity, ""), visible(f"{diag.severity}[{diag.code}]"))
    out.append(f"{paint(_BOLD, where.rstrip())}{' ' if where else ''}{head}: "
               f"{paint(_BOLD, visible(_bounded(diag.message)))}")
    if diag.span is not None:
        out.extend(_quote(diag.span, sources, paint))
    for label, span in diag.related:
        out.append(f"  {visible(label)}: {visible(str(span))}")
        out.extend(_quote(span, sources, paint))
    for note in diag.notes:
        out.append(f"  {paint(_BOLD, 'note')}: {visible(_bounded(note))}")
    if diag.hint:
        out.append(f"{paint(_GREEN, 'help')}: {visible(_bounded(diag.hint))}")
    return "\n".join(out)


def visible(text: str, lines: bool = False) -> str:
    """``text`` as it may be printed to a terminal: each character that is not printable
    (``str.isprintable``: C0 controls and ESC, DEL, C1 controls such as U+009B CSI, format
    characters such as the bidi overrides U+202A-U+202E and U+2066-U+2069 and zero-width
    ones, line and paragraph separators, surrogates from undecodable file names, unassigned
    code points) written as the escape Python's ``repr`` writes for it (``\\x1b``,
    ``\\u202e``, ``\\t``); ``lines``: a ``\\n`` stays (text of several lines). Printable
    text, a backslash included, is returned unchanged, so what was printed before stays
    byte for byte; a printed escape is therefore the escape of one character unless the text
    held a backslash itself. Cut text first (:data:`MESSAGE_WIDTH`): an escape is up to 10
    characters."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or (lines and c == "\n") else repr(c)[1:-1] for c in text)


def _bounded(text: str | None) -> str | None:
    """``text`` cut to :data:`MESSAGE_WIDTH` characters, saying how many were left out."""
    if text is None or len(text) <= MESSAGE_WIDTH:
        return text
    return f"{text[:MESSAGE_WIDTH]}... ({len(text) - MESSAGE_WIDTH} more characters)"


def to_json(diag: Diagnostic, bounded: bool = False) -> dict:
    """The diagnostic as plain data (``rcpc ... --format json``): code, severity, message,
    span (path, line, col, end_line, end_col; null when there is none), related spans with
    their labels, notes and hint. ``bounded``: message, notes and hint cut as
    :func:`format_text` cuts them (for printing; the build cache keeps them whole)."""
    cut = _bounded if bounded else (lambda text: text)
    def span(s: Span | None):
        return None if s is None else {"path": s.path, "line": s.line, "col": s.col,
                                       "end_line": s.end_line, "end_col": s.end_col}

    return {"code": diag.code, "severity": diag.severity, "message": cut(diag.message), "span": span(diag.span),
            "related": [{"label": label, "span": span(s)} for label, s in diag.related],
            "notes": [cut(note) for note in diag.notes], "hint": cut(diag.hint)}


def from_json(data: dict) -> Diagnostic:
    """The inverse of :func:`to_json`. Raises ValueError for data of another shape (read back
    from the build cache, it must not crash the text renderer later)."""
    def span(d):
        if d is None:
            return None
        if type(d) is not dict or set(d) != _SPAN_KEYS or type(d["path"]) is not str \
                or any(type(d[k]) is not int or not 0 <= d[k] < 1 << 32 for k in _SPAN_KEYS - {"path"}):
            raise ValueError("bad span")
        return Span(d["path"], d["line"], d["col"], d["end_line"], d["end_col"])

    def text(x, optional=False):
        if type(x) is str or (optional and x is None):
            return x
        raise ValueError("bad text")

    if type(data) is not dict or set(data) != _DIAGNOSTIC_KEYS or type(data["code"]) is not str \
            or not _CODE.match(data["code"]) or data["severity"] not in (ERROR, WARNING, NOTE) \
            or type(data["related"]) is not list or type(data["notes"]) is not list:
        raise ValueError("not a diagnostic")
    related = []
    for r in data["related"]:
        if type(r) is not dict or set(r) != {"label", "span"}:
            raise ValueError("bad related span")
        related.append((text(r["label"]), span(r["span"])))
    return Diagnostic(data["code"], text(data["message"]), span(data["span"]), data["severity"],
                      text(data["hint"], optional=True), tuple(related), tuple(text(n) for n in data["notes"]))


_SPAN_KEYS = frozenset(("path", "line", "col", "end_line", "end_col"))
_DIAGNOSTIC_KEYS = frozenset(("code", "severity", "message", "span", "related", "notes", "hint"))
_CODE = patterns.precompiled(r"[EWNL][0-9]{4}\Z")


def _quote(span: Span, sources: dict[str, Source], paint=lambda code, text: text) -> list[str]:
    src = sources.get(span.path)
    if src is None or span.line <= 0:
        return []
    raw = src.line_text(span.line)
    col = span.col - 1   # where the caret starts, 0-based
    start = 0
    if len(raw) > QUOTE_WIDTH:  # an excerpt around the span, never the whole of a long line
        start = max(0, min(col - QUOTE_WIDTH // 4, len(raw) - QUOTE_WIDTH))
    shown = raw[start:start + QUOTE_WIDTH]
    text = "".join(c if c.isprintable() else " " for c in shown.expandtabs(1))
    if span.end_line == span.line:
        length = max(1, span.end_col - span.col)
    else:
        length = max(1, len(raw) - col)
    col -= start
    if start:
        text, col = "..." + text, col + 3
    if start + len(shown) < len(raw):
        text += "..."
        length = max(1, min(length, len(text) - 3 - col))
    width = len(str(span.line))
    gutter = " " * width
    return [
        paint(_BLUE, f" {gutter} |"),
        paint(_BLUE, f" {span.line} |") + f" {text}",
        paint(_BLUE, f" {gutter} |") + " " + " " * col + paint(_COLORS[ERROR], "^" * length),
    ]
