"""Incremental parsing: a file's parse made from an earlier parse of the same file, parsing
again only the top-level statements whose text changed (what an editor's language server
and the edit loop need: one edit, one statement).

A file is cut into *chunks* (:func:`chunk_starts`): each begins at a line whose first
character (column 1) starts a top-level statement: a name or ``[`` outside any bracket,
string or line continuation (``\\``), and not ``else``/``elif`` (the rest of an ``if``);
blank and comment lines go with the chunk before them. A chunk is a run of whole statements,
so it parses alone as it does inside the file. Each chunk's parse (or its part of the
whole file's parse, when there was no earlier one) is kept with the SHA-256
of its text and the line it began on (:class:`Chunk`); a chunk of the new text whose digest
an earlier chunk has is taken from it, its spans moved by the difference in lines (columns
do not change: a chunk begins at column 1); the others are parsed
(:func:`rcpc.core.syntax.parser.parse_lines`).

The result equals :func:`rcpc.core.syntax.parser.parse` of the whole text (a hypothesis
property over edits of the bundled recipes, ``tests/test_incremental.py``): any chunk that
does not parse, or more tokens in all than one file may have
(:data:`~rcpc.core.limits.MAX_TOKENS`), and the whole file is parsed instead, so errors
and their recovery are the whole parser's.
"""

from __future__ import annotations

import bisect
import hashlib
import re

from rcpc.core import record
from rcpc.core.diagnostics import CompileError
from rcpc.core.limits import MAX_TOKENS
from rcpc.core.source import Source, Span
from rcpc.core.syntax import ast


@record.frozen
class Chunk:
    """The parse of one chunk: ``digest`` SHA-256 hex of its text, ``line`` the 1-based line
    it begins on, its ``stmts`` and ``comments`` (spans in the file's terms, at ``line``) and
    the ``tokens`` the lexer read."""

    digest: str
    line: int
    stmts: tuple
    comments: tuple
    tokens: int


_SIGNIFICANT = re.compile(r"[\n#\"'\\()\[\]{}]")  # what can change where statements begin
_DEPTH = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


def chunk_starts(text: str) -> list[int]:
    """Offsets of the chunks of ``text`` (the first is 0): every line start at which a
    top-level statement begins (see the module docstring)."""
    starts = [0]
    n = len(text)
    depth = 0
    search = _SIGNIFICANT.search
    m = search(text, 0)
    while m is not None:
        i = m.start()
        c = text[i]
        if c == "\n":
            i += 1
            if (depth == 0 and i < n and text[i].isascii() and (text[i].isalpha() or text[i] in "_[")
                    and not _continues_if(text, i)):
                starts.append(i)
        elif c == "#":
            i = text.find("\n", i)
            if i < 0:
                break
        elif c in "\"'":
            i = _string_end(text, i)
        elif c == "\\":
            # a backslash continuation: the next line continues this statement
            i += 3 if text.startswith("\r\n", i + 1) else 2
        else:
            depth = max(0, depth + _DEPTH[c])
            i += 1
        m = search(text, i)
    return starts


def _continues_if(text: str, i: int) -> bool:
    for word in ("else", "elif"):
        if text.startswith(word, i):
            after = text[i + len(word):i + len(word) + 1]
            if not (after.isalnum() or after == "_"):
                return True
    return False


# A string's body after its opening quote, up to its closing quote (a backslash escapes the
# next character, a line end included); a one-line string also stops at a line end.
_BODY = {q: re.compile(r"(?:[^%s\\\n]|\\[\s\S])*+" % q) for q in "\"'"}
_LONG_BODY = {q * 3: re.compile(r"(?:[^{q}\\]|\\[\s\S]|{q}[^{q}\\]|{q}\\[\s\S]|{q}{q}[^{q}\\]|{q}{q}\\[\s\S])*+".format(q=q))
              for q in "\"'"}  # no lookaround inside a possessive repeat: tests/test_regex_engine.py


def _string_end(text: str, i: int) -> int:
    """The offset after the string opening at ``i`` (an unclosed one-line string ends at its
    line's end, an unclosed long string at the end of the text: the parser reports those)."""
    quote = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else text[i]
    body = (_LONG_BODY if len(quote) == 3 else _BODY)[quote]
    j = body.match(text, i + len(quote)).end()
    if text.startswith(quote, j):
        return j + len(quote)
    if len(quote) == 1 and text.startswith("\n", j):
        return j
    return len(text)


def parse(source: Source, earlier: tuple = ()) -> tuple[ast.Module, tuple]:
    """The :class:`~rcpc.core.syntax.ast.Module` of ``source`` and its chunks, reusing the
    chunks of ``earlier`` (:class:`Chunk` s of a parse of any earlier text of this path)
    whose text is unchanged; with none to reuse, the file is parsed whole (one parse is
    cheaper than one per chunk) and its chunks cut from the result. Raises
    :class:`CompileError` as :func:`rcpc.core.syntax.parser.parse` does."""
    from rcpc.core.syntax import parser

    text = source.text
    starts = chunk_starts(text)
    ends = starts[1:] + [len(text)]
    digests = [hashlib.sha256(text[a:b].encode("utf-8", "surrogatepass")).hexdigest() for a, b in zip(starts, ends)]
    by_digest = {c.digest: c for c in earlier}
    if any(d in by_digest for d in digests):
        chunks = []
        tokens = 0
        try:
            for start, end, digest in zip(starts, ends, digests):
                line = source.line_col(start)[0]
                old = by_digest.get(digest)
                if old is not None:
                    chunk = old if old.line == line else _moved(old, line, source.path)
                else:
                    stmts, comments, count = parser.parse_lines(source, start, end)
                    chunk = Chunk(digest, line, stmts, comments, count)
                tokens += chunk.tokens
                if tokens > MAX_TOKENS:
                    break
                chunks.append(chunk)
            else:
                stmts = tuple(s for c in chunks for s in c.stmts)
                comments = tuple(m for c in chunks for m in c.comments)
                return ast.Module(source.path, stmts, comments, source), tuple(chunks)
        except CompileError:
            pass
    token_at: list = []
    module = parser.parse(source, token_at)
    return module, _cut(source, module, starts, digests, token_at)


def _cut(source: Source, module: ast.Module, starts: list, digests: list, token_at: list) -> tuple:
    """The chunks of a whole file's parse: each statement and comment goes to the chunk
    whose lines hold its first line; each token to the chunk holding its offset."""
    lines = [source.line_col(s)[0] for s in starts]
    token_at.sort()
    stmts: list = [[] for _ in starts]
    comments: list = [[] for _ in starts]
    for out, nodes in ((stmts, module.stmts), (comments, module.comments)):
        for node in nodes:
            out[bisect.bisect_right(lines, node.span.line) - 1].append(node)
    bounds = [bisect.bisect_left(token_at, s) for s in starts] + [len(token_at)]
    return tuple(Chunk(d, line, tuple(s), tuple(c), bounds[i + 1] - bounds[i])
                 for i, (d, line, s, c) in enumerate(zip(digests, lines, stmts, comments)))


def _moved(chunk: Chunk, line: int, path: str) -> Chunk:
    delta = line - chunk.line
    return Chunk(chunk.digest, line, _shift(chunk.stmts, delta, path), _shift(chunk.comments, delta, path),
                 chunk.tokens)


def _shift(x, delta: int, path: str):
    """``x`` (an AST node, a tuple of them, a span, or a leaf) with every span ``delta``
    lines further down (its path set to ``path``)."""
    t = type(x)
    if t is Span:
        return Span(path, x.line + delta, x.col, x.end_line + delta, x.end_col)
    if t is tuple:
        return tuple(_shift(y, delta, path) for y in x)
    fields = _FIELDS.get(t)
    if fields is None:
        if not (t.__module__ == ast.__name__ and record.has(t)):
            return x
        fields = _FIELDS[t] = tuple(f.name for f in record.fields(t))
    return t(*(_shift(getattr(x, f), delta, path) for f in fields))


_FIELDS: dict = {}
