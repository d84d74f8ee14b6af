"""Lexer of the fast parser (:mod:`rcpc.core.syntax.descent`): the terminals of
``grammar.lark``, read from the grammar itself at import, as one compiled master regex.

The regex is the one lark's basic lexer builds (the reference, :mod:`rcpc.core.syntax.parser`):
each terminal a named group, tried in lark's order (priority, then longest possible match,
then longest pattern, then name: ``LONG_STRING.3`` before ``STRING.2`` before the rest; Python's
``re`` takes the first alternative that matches). Keywords (string terminals a ``NAME`` matches
whole, ``if``, ``True``, ``null``...) are not in it: a ``NAME`` whose whole text is one is
retyped, as lark's ``UnlessCallback`` does. Anonymous string terminals (``"("``, ``","``) get
lark's names (``LPAR``, ``COMMA``).

The fast parser reads :func:`scan`: the same terminals as one regex without named groups
(:data:`SCANNER`, the frequent terminals tried first where no two can begin alike), each
token's terminal told from its text, and the postlexer's rules in the same loop, giving
parallel lists instead of a token object each. :func:`lex` (with the postlexer) is its
reference in tests/test_descent.py.
"""

from __future__ import annotations

import re
from ast import literal_eval
from pathlib import Path

try:
    from re import _parser as _sre_parse  # Python 3.11+
except ImportError:  # pragma: no cover
    import sre_parse as _sre_parse

from rcpc.core.syntax.postlex import BadIndent, TooManyTokens, indent_at
from rcpc.core.syntax.tokens import make

GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")

# lark's names for the punctuation of the grammar (lark.load_grammar._TERMINAL_NAMES).
_PUNCTUATION = {"(": "LPAR", ")": "RPAR", "[": "LSQB", "]": "RSQB", "{": "LBRACE", "}": "RBRACE",
                ",": "COMMA", ":": "COLON", "=": "EQUAL", ".": "DOT", "+": "PLUS", "-": "MINUS",
                "*": "STAR", "%": "PERCENT", "<": "LESSTHAN", ">": "MORETHAN"}

_DEF = re.compile(r"^([A-Z_][A-Z0-9_]*)(?:\.(\d+))?\s*:\s*(.*?)\s*$")
_IGNORE = re.compile(r"^%ignore\s+(.*?)\s*$")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_REGEXP = re.compile(r"^/(.*)/([imslux]*)$")


class Terminal:
    """One terminal: ``name``, ``priority``, its regex, and what lark sorts terminals by
    (``max_width``, the length of its pattern ``value``); ``keyword`` when it is a string."""

    __slots__ = ("name", "priority", "regex", "value", "max_width", "string")

    def __init__(self, name: str, priority: int, regex: str, value: str, string: str | None):
        self.name, self.priority, self.regex, self.value, self.string = name, priority, regex, value, string
        self.max_width = len(string) if string is not None else int(_sre_parse.parse(regex).getwidth()[1])


def _fix_escaping(s: str) -> str:
    """A grammar literal's body as lark reads it (lark.load_grammar._fix_escaping)."""
    w = ""
    it = iter(s)
    for n in it:
        w += n
        if n == "\\":
            n2 = next(it)
            if n2 == "\\":
                w += "\\\\"
            elif n2 not in "Uuxnftr":
                w += "\\"
            w += n2
    w = w.replace('\\"', '"').replace("'", "\\'")
    return literal_eval("u'''%s'''" % w)


def _literal(text: str) -> tuple[str, str | None]:
    """(regex, string or None) of a grammar literal: ``"..."`` or ``/.../``."""
    if text.startswith('"'):
        s = _fix_escaping(text[1:-1]).replace("\\\\", "\\")
        return re.escape(s), s
    m = _REGEXP.match(text)
    if m is None or m.group(2):
        raise ValueError(f"grammar.lark: unsupported terminal pattern {text!r}")
    return _fix_escaping(m.group(1)), None


def read_terminals(grammar: str) -> tuple[list, set, dict]:
    """The terminals of ``grammar`` (lark's syntax, as ``grammar.lark`` uses it): (every
    terminal, the names of the ignored ones, keyword text → terminal name). Raises
    ``ValueError`` on a construct this reader does not know (the grammar changed: extend it)."""
    terminals: dict[str, Terminal] = {}
    ignored: set[str] = set()
    anonymous: list[str] = []
    for line in grammar.splitlines():
        line = line.strip()
        if not line or line.startswith("//") or line.startswith("%declare"):
            continue
        m = _IGNORE.match(line)
        if m:
            what = m.group(1)
            if what in terminals:
                ignored.add(what)
            else:
                name = f"__IGNORE_{sum(n.startswith('__IGNORE_') for n in terminals) + 1}"
                regex, string = _literal(what)
                terminals[name] = Terminal(name, 0, regex, regex if string is None else string, string)
                ignored.add(name)
            continue
        m = _DEF.match(line)
        if m and m.group(1) not in ("start",):
            name, prio, body = m.group(1), int(m.group(2) or 0), m.group(3)
            alternatives = [a.strip() for a in body.split(" | ")] if body.startswith('"') else [body]
            if len(alternatives) == 1:
                regex, string = _literal(alternatives[0])
                value = regex if string is None else string
            else:  # "a" | "b": one regex, longest first (lark's order)
                strings = sorted((_literal(a)[1] for a in alternatives), key=len, reverse=True)
                regex = value = "(?:%s)" % "|".join(re.escape(s) for s in strings)
                string = None
            terminals[name] = Terminal(name, prio, regex, value, string)
            continue
        anonymous.extend(_fix_escaping(s[1:-1]) for s in _STRING.findall(line))
    named_strings = {t.string: t.name for t in terminals.values() if t.string is not None}
    for s in anonymous:
        if s in named_strings:
            continue
        name = s.upper() if s.isidentifier() else _PUNCTUATION.get(s)
        if name is None:
            raise ValueError(f"grammar.lark: no terminal name for {s!r}")
        terminals[name] = Terminal(name, 0, re.escape(s), s, s)
        named_strings[s] = name
    keywords: dict[str, str] = {}
    regexps = [t for t in terminals.values() if t.string is None]
    for t in list(terminals.values()):  # strings a regex terminal matches whole: keywords
        if t.string is None:
            continue
        for r in regexps:
            if r.priority == t.priority and re.fullmatch(r.regex, t.string):
                keywords[t.string] = t.name
                break
    return list(terminals.values()), ignored, keywords


def _skip_prefix(skipped: list) -> str:
    """The possessive repeat of the ignored terminals ``skipped`` (blanks, line continuations):
    one flat alternation, a ``[...]+`` run read one character an iteration. Python 3.11.0-3.11.3
    match a possessive repeat holding another repeat wrongly (tests/test_regex_engine.py), so
    every other ignored terminal must be a fixed-length alternation (``ValueError`` if not)."""
    units = []
    for t in skipped:
        unit = t.regex[:-1] if re.fullmatch(r"\[[^\]]*\]\+", t.regex) else t.regex
        if re.search(r"(?<!\\)[*+?{]", unit.replace("[^", "[")):
            raise ValueError(f"grammar.lark: the ignored terminal {t.regex!r} repeats inside the skip prefix")
        units.append(unit)
    return "(?:%s)*+" % "|".join(units)


def _master(terminals: list, ignored: set, keywords: dict) -> tuple:
    """The master regex: the ignored terminals but ``COMMENT`` as a possessive prefix (each
    match skips the blanks before its token: none of them can begin another terminal, which
    tests/test_descent.py checks), then every other terminal but the keywords a named group,
    in lark's order, then ``__END`` (the end of the text, after blanks). Also the order."""
    scanned = sorted((t for t in terminals if t.string not in keywords),
                     key=lambda t: (-t.priority, -t.max_width, -len(t.value), t.name))
    skipped = [t for t in scanned if t.name in ignored and t.name != "COMMENT"]
    prefix = _skip_prefix(skipped)
    groups = "|".join(f"(?P<{t.name}>{t.regex})" for t in scanned if t not in skipped)
    return re.compile(f"{prefix}(?:{groups}|(?P<__END>\\Z))"), [t.name for t in scanned]


TERMINALS, IGNORED, KEYWORDS = read_terminals(GRAMMAR_PATH.read_text(encoding="utf-8"))
MASTER, ORDER = _master(TERMINALS, IGNORED, KEYWORDS)
KEYWORD_NAMES = frozenset(KEYWORDS)  # words the lexer reads as keywords or literals (if, True, null...)


class LexError(Exception):
    """No terminal matches at offset ``pos`` (the fast parser declines; lark reports it)."""

    def __init__(self, pos: int):
        self.pos = pos


def lex(text: str, comments: list | None) -> list:
    """The tokens of ``text`` (:class:`~rcpc.core.syntax.tokens.Token`, offsets in ``text``),
    ignored terminals skipped (blanks before a token are part of its match); each ``COMMENT`` token is appended to ``comments`` unless it is
    ``None``. Raises :class:`LexError` where no terminal matches."""
    out = []
    append = out.append
    pos = 0
    keyword = KEYWORDS.get
    for m in MASTER.finditer(text):
        if m.start() != pos:
            raise LexError(pos)
        pos = m.end()
        kind = m.lastgroup
        if kind == "COMMENT":
            if comments is not None:
                start, end = m.span(kind)
                comments.append(make((kind, text[start:end], start, end)))
            continue
        if kind == "__END":
            continue
        start, end = m.span(kind)
        value = text[start:end]
        if kind == "NAME":
            kind = keyword(value, kind)
        append(make((kind, value, start, end)))
    if pos != len(text):
        raise LexError(pos)
    return out


# The fast parser's scanner ----------------------------------------------------------------------
# The same terminals as MASTER, tried in the same (lark's) order, but without a named group each:
# one regex finds every token, and its terminal is told from its text (:data:`_EXACT`, then its
# first character). Without groups, each alternative begins with a literal or a character set,
# which Python's re tests before entering it; and ``findall`` makes no match objects.
# tests/test_descent.py holds :func:`scan` equal to :func:`lex` and the postlexer.


def _ungrouped(regex: str) -> str:
    """``regex`` with each capturing group made non-capturing (the terminals' regexes have no
    backreferences)."""
    return re.sub(r"(?<!\\)\((?!\?)", "(?:", regex)


# The terminals of a recipe, most frequent first (counted over the N=100 workspace of
# bench/peers.py), each one that must be tried before another (LONG_STRING before STRING, STRING
# before NAME, COMP_OP before EQUAL, FLOAT before INT) listed before it: the scanner tries them in
# this order where it is free to (:func:`_scan_order`).
_FREQUENT = ("_NL", "LONG_STRING", "STRING", "COMMA", "NAME", "COLON", "LBRACE", "RBRACE", "COMP_OP", "EQUAL",
             "LSQB", "RSQB", "FLOAT", "INT", "PLUS", "LPAR", "RPAR", "DOT", "COMMENT", "MINUS")


def _first_chars(items) -> tuple:
    """(the characters a match of the parsed regex ``items`` can begin with, whether it can
    match the empty string); ``None`` for the characters where this reader cannot tell."""
    chars: set = set()
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            return chars | {chr(av)}, False
        if name == "IN":
            for o, a in av:
                if str(o) == "LITERAL":
                    chars.add(chr(a))
                elif str(o) == "RANGE":
                    chars.update(map(chr, range(a[0], a[1] + 1)))
                else:
                    return None, False
            return chars, False
        if name == "SUBPATTERN":
            first, empty = _first_chars(av[-1])
        elif name == "BRANCH":
            parts = [_first_chars(p) for p in av[1]]
            if any(f is None for f, _ in parts):
                return None, False
            first, empty = set().union(*(f for f, _ in parts)), any(e for _, e in parts)
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            first, empty = _first_chars(av[2])
            empty = empty or av[0] == 0
        else:
            return None, False
        if first is None:
            return None, False
        chars |= first
        if not empty:
            return chars, False
    return chars, True


def _scan_order(scanned: list) -> list:
    """``scanned`` (terminals in lark's order) reordered to try the :data:`_FREQUENT` ones first,
    where that cannot change which one matches: a terminal moves ahead of another only if no
    text can begin a match of both (their first characters are disjoint, and neither matches
    the empty string)."""
    first = {}
    for t in scanned:
        chars, empty = _first_chars(_sre_parse.parse(t.regex))
        first[t.name] = None if empty else chars
    rank = {name: n for n, name in enumerate(_FREQUENT)}
    remaining = list(scanned)
    out = []
    while remaining:
        for t in sorted(remaining, key=lambda t: rank.get(t.name, len(rank))):
            ahead = remaining[:remaining.index(t)]
            if all(first[t.name] is not None and first[a.name] is not None and not first[t.name] & first[a.name]
                   for a in ahead):
                out.append(t)
                remaining.remove(t)
                break
    return out


def _scanner(terminals: list, ignored: set, keywords: dict) -> tuple:
    """(blanks, token) pairs of :func:`re.findall`: the ignored terminals but ``COMMENT``
    skipped as in :data:`MASTER` (a run of the one ``[...]+``, then each other followed by a
    run: the same texts), then one of the other terminals (:func:`_scan_order`), or the end
    (``""``). Also the names of those terminals, in the scanner's order."""
    scanned = sorted((t for t in terminals if t.string not in keywords),
                     key=lambda t: (-t.priority, -t.max_width, -len(t.value), t.name))
    skipped = [t for t in scanned if t.name in ignored and t.name != "COMMENT"]
    ordered = _scan_order([t for t in scanned if t not in skipped])
    prefix = _skip_prefix(skipped)
    body = "|".join(_ungrouped(t.regex) for t in ordered)
    scanner = re.compile(f"({prefix})((?:{body})|\\Z)")
    if scanner.groups != 2:
        raise ValueError("grammar.lark: a terminal's regex has a group the scanner cannot drop")
    return scanner, [t.name for t in ordered]


SCANNER, SCAN_ORDER = _scanner(TERMINALS, IGNORED, KEYWORDS)
# A token's terminal by its whole text: keywords and punctuation.
_EXACT = dict(KEYWORDS)
for _t in TERMINALS:
    if _t.string is not None and _t.name not in IGNORED:
        _EXACT.setdefault(_t.string, _t.name)
for _t in TERMINALS:  # "a" | "b" terminals (COMP_OP, MUL_OP): each alternative
    if _t.string is None and _t.regex.startswith("(?:") and re.fullmatch(r"\(\?:(?:[^()|]+\|)*[^()|]+\)", _t.regex):
        for _alt in _t.regex[3:-1].split("|"):
            _EXACT.setdefault(re.sub(r"\\(.)", r"\1", _alt), _t.name)
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
    for m in SCANNER.finditer(text):  # not findall: a text of too many tokens stops at the limit
        blank, tok = m.groups()
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
