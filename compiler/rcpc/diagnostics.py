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


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """A ``did you mean 'x'?`` hint for the closest candidate (difflib ratio >= 0.6), or None."""
    close = difflib.get_close_matches(word, list(candidates), n=1)
    return f"did you mean '{close[0]}'?" if close else None


def format_text(diag: Diagnostic, sources: dict[str, Source]) -> str:
    """Render one diagnostic as text: header, source line with carets, related spans, help.

    ``sources`` maps a span's display path to its :class:`Source` for the quoted line; a span
    whose source is unknown is shown as its location only.
    """
    out = []
    where = f"{diag.span}: " if diag.span and diag.span.line else ""
    out.append(f"{where}{diag.severity}[{diag.code}]: {diag.message}")
    if diag.span is not None:
        out.extend(_quote(diag.span, sources))
    for label, span in diag.related:
        out.append(f"  {label}: {span}")
        out.extend(_quote(span, sources))
    for note in diag.notes:
        out.append(f"  note: {note}")
    if diag.hint:
        out.append(f"help: {diag.hint}")
    return "\n".join(out)


def _quote(span: Span, sources: dict[str, Source]) -> list[str]:
    src = sources.get(span.path)
    if src is None or span.line <= 0:
        return []
    text = src.line_text(span.line).expandtabs(1)
    width = len(str(span.line))
    if span.end_line == span.line:
        length = max(1, span.end_col - span.col)
    else:
        length = max(1, len(text) - span.col + 1)
    gutter = " " * width
    return [
        f" {gutter} |",
        f" {span.line} | {text}",
        f" {gutter} | {' ' * (span.col - 1)}{'^' * length}",
    ]
