"""Postlexer of the recipe language, shared by both parsers (lark's, in
:mod:`rcpc.core.syntax.parser`, and the fast one, :mod:`rcpc.core.syntax.descent`): a token
stream in, the stream the grammar (``grammar.lark``) reads out.

Newlines inside (), [] and {} and at the start are dropped, runs of them merged, and the file
ends with one; indentation after a line ending in ``:`` becomes ``_INDENT`` and back
``_DEDENT`` (a function's, ``if``'s or ``for``'s block); elsewhere at the top level,
indentation means nothing. The tokens read are counted (a :class:`TokenCount`, one a parse)
against :data:`~rcpc.core.limits.MAX_TOKENS`: a parse costs microseconds a token, so the count, not
the size in bytes, is what bounds it.

What is counted is what a file says, not how it is laid out (docs/language.md, "Limits"):
every token read, comments included (the parser's comment callback counts those), but not a
line break and not a trailing comma (a comma just before a closing bracket). ``rcpc fmt``
adds and removes exactly those, so the canonical layout of a file has its count (or fewer,
see below): what ``rcpc check`` accepts, ``rcpc fmt`` can write back (as with Black, gofmt or
jsonnetfmt, the layout never decides whether a file is valid). Line breaks stay bounded by
the tokens: a run of them (blank lines, indentation) is one token, and one that follows a
form feed or a backslash-newline (which could otherwise separate runs two bytes apart, with
no token between) is counted (:func:`after_blank_break`); the formatter writes neither.
"""

from __future__ import annotations

from rcpc.core.limits import MAX_TOKENS

_BRACKETS_OPEN = frozenset(("LPAR", "LSQB", "LBRACE"))
_BRACKETS_CLOSE = frozenset(("RPAR", "RSQB", "RBRACE"))
_LINE_ENDS = ("_NL", "_INDENT", "_DEDENT")



class TokenCount:
    """The tokens one parse of a file has read (``n``; f-string fields included, see the
    module's docstring for which count) and its ``limit`` (default: :data:`MAX_TOKENS`, read
    when the parse starts). One a parse, never shared: two parses interleaved count apart."""

    __slots__ = ("n", "limit")

    def __init__(self, limit: int | None = None):
        self.n = 0
        self.limit = MAX_TOKENS if limit is None else limit


class TooManyTokens(Exception):
    """The file has more than :data:`~rcpc.core.limits.MAX_TOKENS` tokens; ``pos`` is the offset
    (in the text being parsed) of the first token over the limit."""

    def __init__(self, pos: int):
        self.pos = pos


class BadIndent(Exception):
    """Indentation that matches no enclosing block; ``pos`` is its offset in the parsed text."""

    def __init__(self, pos: int, message: str):
        self.pos = pos
        self.message = message


def indent_at(text: str, pos: int) -> int:
    """The indentation (tabs to multiples of 8) of the first line at or after ``pos`` that
    holds code: blank and comment-only lines do not count (as in Python); -1 at the end."""
    n = len(text)
    while True:
        start = text.rfind("\n", 0, pos) + 1
        i = start
        while i < n and text[i] in " \t\f":
            i += 1
        if i >= n:
            return -1
        if text[i] in "#\r\n":
            nl = text.find("\n", i)
            if nl < 0:
                return -1
            pos = nl + 1
            continue
        return len(text[start:i].expandtabs(8))


def postlex(stream, text: str, record: list | None, base: int, new_token, count: TokenCount):
    """The tokens the grammar reads, from the lexer's ``stream`` of ``text`` (the text being
    parsed: indentation is measured in it). ``record``: a list to which each token's offset in
    the file (``base`` + its offset in ``text``) is appended, or ``None``. ``new_token(type,
    value, borrow)`` makes a ``_NL``/``_INDENT``/``_DEDENT`` at ``borrow``'s place (lark's
    ``Token.new_borrow_pos`` or :meth:`rcpc.core.syntax.tokens.Token.new_borrow_pos`).

    Raises :class:`TooManyTokens` past ``count.limit`` (counted in ``count``, the parse's
    :class:`TokenCount`, across the f-string fields of the file: every token but a line break or a
    trailing comma, see the module's docstring), :class:`BadIndent`."""
    depth = 0
    last = None  # the last token yielded; tokens must not be held back (contextual lexer)
    levels = [0]  # indentation of the enclosing blocks
    comma = None  # a comma yielded but not counted yet: counted unless a closing bracket follows
    for tok in stream:
        kind = tok.type
        if kind == "_NL":
            if text and after_blank_break(text, tok.start_pos):
                _count(tok, record, base, count)
            if depth == 0 and last is not None and last.type not in _LINE_ENDS:
                if comma is not None:
                    _count(comma, record, base, count)
                    comma = None
                opens = last.type == "COLON"
                last = tok
                yield tok
                yield from _indentation(tok, text, levels, opens, new_token)
            continue
        if kind in _BRACKETS_OPEN:
            depth += 1
        elif kind in _BRACKETS_CLOSE:
            if depth:
                depth -= 1
            comma = None  # a trailing comma: layout, not counted
        if comma is not None:
            _count(comma, record, base, count)
            comma = None
        if kind == "COMMA":
            comma = tok
        else:
            _count(tok, record, base, count)
        last = tok
        yield tok
    if comma is not None:
        _count(comma, record, base, count)
    if last is not None and depth == 0:
        if last.type not in _LINE_ENDS:
            last = new_token("_NL", "\n", last)
            yield last
        while len(levels) > 1:
            levels.pop()
            yield new_token("_DEDENT", "", last)


def after_blank_break(text: str, pos: int) -> bool:
    """Whether the blanks just before offset ``pos`` of ``text`` (a line break's start) hold a
    form feed or a backslash-newline: that line break is counted as a token. (Spaces and tabs
    aside, what precedes a line break is a token, a comment, the start, or those: a ``\\n``
    there can only end a backslash-newline, as a run of line breaks is one token.)"""
    i = pos - 1
    while i >= 0 and text[i] in " \t":
        i -= 1
    return i >= 0 and text[i] in "\f\n"


def _count(tok, record: list | None, base: int, count: TokenCount) -> None:
    """Count ``tok`` (read at its ``start_pos`` in the text, ``base`` in the file) in
    ``count``, its offset in the file appended to ``record`` (unless ``None``); raise
    :class:`TooManyTokens` past the limit."""
    count.n += 1
    if record is not None:
        record.append(base + tok.start_pos)
    if count.n > count.limit:
        raise TooManyTokens(tok.start_pos)


def _indentation(tok, text: str, levels: list, opens: bool, new_token):
    indent = indent_at(text, tok.end_pos) if text else 0
    if indent < 0:  # the end: the blocks close there
        return
    if opens:
        if indent <= levels[-1]:
            raise BadIndent(tok.end_pos, "expected an indented block")
        levels.append(indent)
        yield new_token("_INDENT", "", tok)
        return
    if len(levels) == 1 or indent == levels[-1]:
        return
    if indent > levels[-1]:
        raise BadIndent(tok.end_pos, "unexpected indent")
    while indent < levels[-1]:
        levels.pop()
        yield new_token("_DEDENT", "", tok)
    if indent != levels[-1]:
        raise BadIndent(tok.end_pos, "unindent does not match any outer indentation level")
