"""Source files and spans.

A :class:`Span` names a range of one source file by 1-based line and column (columns count
characters, not bytes; ``end_col`` is exclusive), the way compilers and editors report
positions (``path:line:col``).
"""

from __future__ import annotations

import bisect

from rcpc.core import record


@record.frozen
class Span:
    """A range in a source file: ``path`` as shown to users, 1-based ``line``/``col``,
    ``end_line``/``end_col`` (exclusive); line 0 when it names a whole file or an origin
    that has no lines (a ``--flag``), shown as its path alone.
    Values set from the command line use path ``<command line>``."""

    path: str
    line: int
    col: int
    end_line: int
    end_col: int

    def __str__(self) -> str:
        """``path:line:col``, or ``path`` for a span with no line (it was ``--flag x=1:0:0``)."""
        return f"{self.path}:{self.line}:{self.col}" if self.line else self.path


COMMAND_LINE_SPAN = Span("<command line>", 0, 0, 0, 0)
_new = object.__new__
_set_path, _set_line, _set_col, _set_end_line, _set_end_col = (
    Span.__dict__[f.name].__set__ for f in record.fields(Span))  # the slots, in field order
_bisect_right = bisect.bisect_right


def joined(first: Span, last: Span) -> Span:
    """The span from ``first``'s start to ``last``'s end, in ``first``'s file (built as
    :meth:`Source.span` builds one: the parsers join the spans of a node's first and last
    parts)."""
    span = _new(Span)
    _set_path(span, first.path)
    _set_line(span, first.line)
    _set_col(span, first.col)
    _set_end_line(span, last.end_line)
    _set_end_col(span, last.end_col)
    return span


def file_span(path: str) -> Span:
    """A span naming a whole file rather than a place in it (line 0): a diagnostic about the
    file itself (its name, where it leads) is shown as ``path: error[...]``, with no line
    quoted, so nothing of the file is read to report it."""
    return Span(path, 0, 0, 0, 0)


class Source:
    """One source file's text with a line table for offset → (line, col) lookups.

    ``path`` is the display path (relative to the workspace where possible); ``real`` is the
    resolved absolute path used for identity (load cycles, caching).
    """

    __slots__ = ("path", "real", "text", "_starts")

    def __init__(self, path: str, text: str, real: str | None = None):
        self.path = path
        self.real = real or path
        self.text = text
        starts = [0]
        find = text.find
        i = find("\n")
        while i != -1:
            starts.append(i + 1)
            i = find("\n", i + 1)
        self._starts = starts

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based (line, col) of a 0-based character offset."""
        i = bisect.bisect_right(self._starts, offset) - 1
        return i + 1, offset - self._starts[i] + 1

    def span(self, start: int, end: int) -> Span:
        """The span of character offsets ``[start, end)`` (as :meth:`line_col` of each; built
        without attrs' frozen ``__init__``: the parsers make one a token)."""
        starts = self._starts
        i = _bisect_right(starts, start)
        first = starts[i - 1]
        if i == len(starts) or end < starts[i]:  # on the same line
            j, last = i, first
        else:
            j = _bisect_right(starts, end, i)
            last = starts[j - 1]
        span = _new(Span)
        _set_path(span, self.path)
        _set_line(span, i)
        _set_col(span, start - first + 1)
        _set_end_line(span, j)
        _set_end_col(span, end - last + 1)
        return span

    def text_of(self, span: Span) -> str:
        """The source text a span covers (lines joined with newlines)."""
        if span.line == span.end_line:
            return self.line_text(span.line)[span.col - 1:span.end_col - 1]
        lines = [self.line_text(n) for n in range(span.line, span.end_line + 1)]
        lines[0] = lines[0][span.col - 1:]
        lines[-1] = lines[-1][:span.end_col - 1]
        return "\n".join(lines)

    def line_text(self, line: int) -> str:
        """The text of 1-based ``line`` without its newline ('' when out of range)."""
        if not 1 <= line <= len(self._starts):
            return ""
        start = self._starts[line - 1]
        end = self._starts[line] - 1 if line < len(self._starts) else len(self.text)
        return self.text[start:end].rstrip("\r")
