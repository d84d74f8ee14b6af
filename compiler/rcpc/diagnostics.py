"""Diagnostics as data, and their text rendering.

A :class:`Diagnostic` has a stable code (``E0101``), a severity, a message, a primary span,
secondary labelled spans ("first set here", "loaded from"), notes and a ``help`` hint.
Stages raise :class:`CompileError` carrying one or more diagnostics; only the CLI renders them.
The text form follows the convention of rustc and clang::

    path:line:col: error[E0101]: unknown name 'FOO'
      3 | x = FOO
        |     ^^^
    help: did you mean 'FOOD'?
"""

from __future__ import annotations

import difflib
from typing import Iterable

import attrs

from rcpc.source import Source, Span

ERROR = "error"
WARNING = "warning"
NOTE = "note"


@attrs.frozen(slots=True)
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
    """Raised by any stage for bad input; carries every diagnostic found (at least one)."""

    def __init__(self, diagnostics: Diagnostic | Iterable[Diagnostic]):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = list(diagnostics)
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


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """A ``did you mean 'x'?`` hint for the closest candidate (difflib ratio >= 0.6), or None."""
    close = difflib.get_close_matches(word, list(candidates), n=1)
    return f"did you mean '{close[0]}'?" if close else None


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
    where = f"{diag.span}: " if diag.span and diag.span.line else ""
    head = paint(_COLORS.get(diag.severity, ""), f"{diag.severity}[{diag.code}]")
    out.append(f"{paint(_BOLD, where.rstrip())}{' ' if where else ''}{head}: {paint(_BOLD, diag.message)}")
    if diag.span is not None:
        out.extend(_quote(diag.span, sources, paint))
    for label, span in diag.related:
        out.append(f"  {label}: {span}")
        out.extend(_quote(span, sources, paint))
    for note in diag.notes:
        out.append(f"  {paint(_BOLD, 'note')}: {note}")
    if diag.hint:
        out.append(f"{paint(_GREEN, 'help')}: {diag.hint}")
    return "\n".join(out)


def to_json(diag: Diagnostic) -> dict:
    """The diagnostic as plain data (``rcpc ... --format json``): code, severity, message,
    span (path, line, col, end_line, end_col; null when there is none), related spans with
    their labels, notes and hint."""
    def span(s: Span | None):
        return None if s is None else {"path": s.path, "line": s.line, "col": s.col,
                                       "end_line": s.end_line, "end_col": s.end_col}

    return {"code": diag.code, "severity": diag.severity, "message": diag.message, "span": span(diag.span),
            "related": [{"label": label, "span": span(s)} for label, s in diag.related],
            "notes": list(diag.notes), "hint": diag.hint}


def from_json(data: dict) -> Diagnostic:
    """The inverse of :func:`to_json`."""
    def span(d):
        return None if d is None else Span(d["path"], d["line"], d["col"], d["end_line"], d["end_col"])

    return Diagnostic(data["code"], data["message"], span(data["span"]), data["severity"], data["hint"],
                      tuple((r["label"], span(r["span"])) for r in data["related"]), tuple(data["notes"]))


def _quote(span: Span, sources: dict[str, Source], paint=lambda code, text: text) -> list[str]:
    src = sources.get(span.path)
    if src is None or span.line <= 0:
        return []
    raw = src.line_text(span.line)
    text = "".join(c if c.isprintable() else " " for c in raw.expandtabs(1))
    width = len(str(span.line))
    if span.end_line == span.line:
        length = max(1, span.end_col - span.col)
    else:
        length = max(1, len(text) - span.col + 1)
    gutter = " " * width
    return [
        paint(_BLUE, f" {gutter} |"),
        paint(_BLUE, f" {span.line} |") + f" {text}",
        paint(_BLUE, f" {gutter} |") + " " + " " * (span.col - 1) + paint(_COLORS[ERROR], "^" * length),
    ]
