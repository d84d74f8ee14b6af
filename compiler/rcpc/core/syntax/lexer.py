"""The fast parser's scanner (:mod:`rcpc.core.syntax.descent`): the terminals of
``grammar.lark`` as one compiled regex, from tables derived from the grammar ahead of time
(:mod:`rcpc.core.syntax.scan_tables`, written by :mod:`rcpc.core.syntax.terminals`, which
reads the grammar as lark's basic lexer does and holds the reference lexer :func:`~rcpc.core.
syntax.terminals.lex`).

The fast parser reads :func:`scan`: the terminals as one regex without named groups
(:data:`SCANNER`, lark's order, the frequent terminals tried first where no two can begin
alike), each token's terminal told from its text, and the postlexer's rules in the same loop,
giving parallel lists instead of a token object each. tests/test_descent.py holds it equal to
the reference lexer and the postlexer.
"""

from __future__ import annotations

import re

from rcpc.core import patterns
from rcpc.core.syntax import scan_tables
from rcpc.core.syntax.postlex import BadIndent, TooManyTokens, indent_at
from rcpc.core.syntax.tokens import make

# (blanks, token) pairs of :func:`re.findall`: the ignored terminals but ``COMMENT`` skipped (a
# possessive prefix), then one of the other terminals (in the scanner's order), or the end ("").
SCANNER = patterns.precompiled(scan_tables.SCANNER)
SCAN_ORDER = scan_tables.SCAN_ORDER  # the names of those terminals, in the scanner's order
KEYWORD_NAMES = frozenset(scan_tables.KEYWORDS)  # words the lexer reads as keywords or literals (if, True, null...)
_EXACT = scan_tables.EXACT  # a token's terminal by its whole text: keywords and punctuation


class LexError(Exception):
    """No terminal matches at offset ``pos`` (the fast parser declines; lark reports it)."""

    def __init__(self, pos: int):
        self.pos = pos


# Otherwise by its first character (see _kind).
_FIRST = dict.fromkeys("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdeghijklmnopqrstuvwxyz_", "NAME")
_FIRST.update(dict.fromkeys("0123456789.", "#NUMBER"), f="#F", **{'"': "STRING", "'": "STRING"})
_FIRST.update({"\n": "_NL", "\r": "_NL", "#": "COMMENT", "": "#END"})
_TRIPLE = ('"""', "\'\'\'")
_DEPTH = {"LPAR": 1, "LSQB": 1, "LBRACE": 1, "RPAR": -1, "RSQB": -1, "RBRACE": -1}
_LINE_ENDS = frozenset(("_NL", "_INDENT", "_DEDENT"))
_BREAKS = ("\f", "\n")  # the last blank before a line break that makes it counted
_UNCOUNTED = frozenset(("_NL", "_INDENT", "_DEDENT", "#TRAILING"))  # layout: not counted as tokens


def _kind(tok: str) -> str:
    """The terminal of a token the scanner found that is not in :data:`_EXACT` and not a plain
    name, string or newline (a number, a name or string beginning with ``f``, a comment, the
    end ``#END``), as the named groups of :data:`MASTER` say."""
    kind = _FIRST[tok[:1]]
    if kind == "#NUMBER":
        return "FLOAT" if "." in tok or "e" in tok or "E" in tok else "INT"
    if kind == "#F":
        if tok[1:2] not in ("\"", "'"):
            return "NAME"
        return "LONG_STRING" if tok[1:4] in _TRIPLE else "STRING"
    return kind


_CHECK_EVERY = 4096  # tokens scanned between two comparisons of the count with MAX_TOKENS


def scan(text: str, comments: list | None, record: list | None, base: int, count) -> tuple:
    """:func:`lex` and :func:`rcpc.core.syntax.postlex.postlex` in one loop, for the fast parser:
    the tokens the grammar reads, ending in ``$END``, as four lists (terminal names, texts,
    start and end offsets in ``text``). ``comments``, ``record`` and ``base`` as in those two
    (``COMMENT`` tokens appended to ``comments``; the offset in the file of each token counted
    appended to ``record``, in no particular order; tokens counted in ``count``, the parse's
    :class:`~rcpc.core.syntax.postlex.TokenCount`, as
    :func:`~rcpc.core.syntax.postlex.postlex` and the parser's comment callback count them:
    not a line break unless after a form feed or backslash-newline, not a trailing comma,
    comments included).

    Raises :class:`LexError`, :class:`~rcpc.core.syntax.postlex.TooManyTokens`,
    :class:`~rcpc.core.syntax.postlex.BadIndent` as they do (``LexError`` once the text is
    scanned; ``TooManyTokens`` within :data:`_CHECK_EVERY` tokens of the limit, before the rest
    of the text is scanned: the fast parser only declines on them)."""
    types: list = []
    values: list = []
    starts: list = []
    ends: list = []
    add_type, add_value, add_start, add_end = types.append, values.append, starts.append, ends.append
    exact = _EXACT.get
    first = _FIRST.get
    depth_of = _DEPTH.get
    trailing: list = []  # the indices in ``types`` of the trailing commas (not counted)
    remarks = 0  # the comments (counted)
    remark = (-1, "")  # the last comment's end and text (a form feed may end it)
    broken = 0  # the line breaks after a form feed or backslash-newline (counted)
    made = 0  # the _INDENT and _DEDENT tokens made (not read)
    depth = 0
    levels = [0]
    pos = 0
    nls = 0  # the _NL tokens kept (not counted)
    check_at = _CHECK_EVERY  # how many tokens kept before the count is next compared with the limit
    # findall (~a third less than finditer and groups()) where the text cannot reach the limit
    # (a match counts one token at most, and at most two begin at one offset: an empty one,
    # the end, and one after it), else finditer: a text of too many tokens stops at the limit
    fits = count.n + 2 * len(text) + 2 <= count.limit
    for blank, tok in SCANNER.findall(text) if fits else (m.groups() for m in SCANNER.finditer(text)):
        if len(types) >= check_at:
            check_at += _CHECK_EVERY
            if count.n + len(types) - made - nls - len(trailing) + remarks + broken > count.limit:
                raise TooManyTokens(pos)
        start = pos + len(blank)
        pos = start + len(tok)
        kind = exact(tok)
        if kind is not None:
            step = depth_of(kind)
            if step is not None:
                if step > 0:
                    depth += 1
                else:
                    if depth:
                        depth -= 1
                    if types and types[-1] == "COMMA":
                        trailing.append(len(types) - 1)
        else:
            kind = first(tok[:1])
            if kind == "_NL":
                before = blank.rstrip(" \t")
                if not before and remark[0] == start - len(blank):  # a comment's end is just before
                    before = remark[1].rstrip(" \t")
                if before[-1:] in _BREAKS:  # (postlex.after_blank_break)
                    broken += 1
                    if record is not None:
                        record.append(base + start)
                last = types[-1] if types else None
                if depth or last is None or last in _LINE_ENDS:
                    continue
                add_type(kind), add_value(tok), add_start(start), add_end(pos)
                nls += 1
                indent = indent_at(text, pos)
                if indent < 0:
                    continue
                if last == "COLON":
                    if indent <= levels[-1]:
                        raise BadIndent(pos, "expected an indented block")
                    levels.append(indent)
                    made += 1
                    add_type("_INDENT"), add_value(""), add_start(start), add_end(pos)
                elif len(levels) > 1 and indent != levels[-1]:
                    if indent > levels[-1]:
                        raise BadIndent(pos, "unexpected indent")
                    while indent < levels[-1]:
                        levels.pop()
                        made += 1
                        add_type("_DEDENT"), add_value(""), add_start(start), add_end(pos)
                    if indent != levels[-1]:
                        raise BadIndent(pos, "unindent does not match any outer indentation level")
                continue
            if kind == "STRING":
                if tok[:3] in _TRIPLE:
                    kind = "LONG_STRING"
            elif kind != "NAME":
                kind = _kind(tok)
                if kind == "COMMENT":
                    remarks += 1
                    remark = (pos, tok)
                    if comments is not None:
                        comments.append(make((kind, tok, start, pos)))
                    if record is not None:
                        record.append(base + start)
                    continue
                if kind == "#END":
                    continue
        add_type(kind), add_value(tok), add_start(start), add_end(pos)
    if pos != len(text):
        raise LexError(pos)
    read = len(types) - made - nls - len(trailing) + remarks + broken
    counted = count.n = count.n + read
    if counted > count.limit:
        raise TooManyTokens(pos)
    if record is not None:
        for i in trailing:
            types[i] = "#TRAILING"  # (put back below)
        record.extend([base + s for k, s in zip(types, starts) if k not in _UNCOUNTED])
        for i in trailing:
            types[i] = "COMMA"
    if types and depth == 0:
        if types[-1] not in _LINE_ENDS:
            add_type("_NL"), add_value("\n"), add_start(starts[-1]), add_end(ends[-1])
        while len(levels) > 1:
            levels.pop()
            add_type("_DEDENT"), add_value(""), add_start(starts[-1]), add_end(ends[-1])
    add_type("$END"), add_value(""), add_start(0), add_end(0)
    return types, values, starts, ends
