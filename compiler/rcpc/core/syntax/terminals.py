"""The terminals of ``grammar.lark``, read from the grammar itself, as lark's basic lexer
builds them: the reference of the fast parser's scanner (:mod:`rcpc.core.syntax.lexer`),
whose tables (:mod:`rcpc.core.syntax.scan_tables`) ``python -m rcpc.core.syntax.terminals``
writes from here (``--check``: exit 1 when they differ from what it would write;
tests/test_descent.py runs it). Not imported by a build: reading the grammar, ordering its
terminals and compiling :data:`MASTER` were ~5 ms of every process that parsed.

:data:`MASTER` is the regex lark's basic lexer builds (the reference,
:mod:`rcpc.core.syntax.parser`): each terminal a named group, tried in lark's order
(priority, then longest possible match, then longest pattern, then name: ``LONG_STRING.3``
before ``STRING.2`` before the rest; Python's ``re`` takes the first alternative that
matches). Keywords (string terminals a ``NAME`` matches whole, ``if``, ``True``, ``null``...)
are not in it: a ``NAME`` whose whole text is one is retyped, as lark's ``UnlessCallback``
does. Anonymous string terminals (``"("``, ``","``) get lark's names (``LPAR``, ``COMMA``).
:func:`lex` (with the postlexer) is the scanner's reference in tests/test_descent.py.
"""

from __future__ import annotations

import re
import sys
from ast import literal_eval
from pathlib import Path

try:
    from re import _parser as _sre_parse  # Python 3.11+
except ImportError:  # pragma: no cover
    import sre_parse as _sre_parse

from rcpc.core.generated import write_or_check
from rcpc.core.syntax.lexer import LexError
from rcpc.core.syntax.tokens import make

GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")
TABLES_PATH = Path(__file__).with_name("scan_tables.py")

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


# The fast parser's scanner (its tables) ----------------------------------------------------------------------
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


def exact(terminals: list, ignored: set, keywords: dict) -> dict:
    """A token's terminal by its whole text: keywords and punctuation, and each alternative of
    an ``"a" | "b"`` terminal (``COMP_OP``, ``MUL_OP``)."""
    out = dict(keywords)
    for t in terminals:
        if t.string is not None and t.name not in ignored:
            out.setdefault(t.string, t.name)
    for t in terminals:
        if t.string is None and t.regex.startswith("(?:") and re.fullmatch(r"\(\?:(?:[^()|]+\|)*[^()|]+\)", t.regex):
            for alt in t.regex[3:-1].split("|"):
                out.setdefault(re.sub(r"\\(.)", r"\1", alt), t.name)
    return out


def tables_text() -> str:
    """The source of :mod:`rcpc.core.syntax.scan_tables`: the scanner's pattern and order
    (:func:`_scanner`), the keywords and :func:`exact`, from this grammar."""
    scanner, order = _scanner(TERMINALS, IGNORED, KEYWORDS)
    return "\n".join([
        '"""Generated by python -m rcpc.core.syntax.terminals from grammar.lark; do not edit. The tables of',
        'the fast parser\'s scanner (rcpc.core.syntax.lexer), derived there from the grammar."""',
        "# fmt: off",
        f"SCANNER = {scanner.pattern!r}",
        f"SCAN_ORDER = {order!r}",
        f"KEYWORDS = {KEYWORDS!r}",
        f"EXACT = {exact(TERMINALS, IGNORED, KEYWORDS)!r}",
        ""])


def main(argv: list[str]) -> int:
    """Write :mod:`rcpc.core.syntax.scan_tables` (``--check``: exit 1 when it differs)."""
    return write_or_check({TABLES_PATH: tables_text()}, argv, "python -m rcpc.core.syntax.terminals")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
