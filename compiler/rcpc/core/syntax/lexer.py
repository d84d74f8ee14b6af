"""Lexer of the fast parser (:mod:`rcpc.core.syntax.descent`): the terminals of
``grammar.lark``, read from the grammar itself at import, as one compiled master regex.

The regex is the one lark's basic lexer builds (the reference, :mod:`rcpc.core.syntax.parser`):
each terminal a named group, tried in lark's order (priority, then longest possible match,
then longest pattern, then name: ``LONG_STRING.3`` before ``STRING.2`` before the rest; Python's
``re`` takes the first alternative that matches). Keywords (string terminals a ``NAME`` matches
whole, ``if``, ``True``, ``null``...) are not in it: a ``NAME`` whose whole text is one is
retyped, as lark's ``UnlessCallback`` does. Anonymous string terminals (``"("``, ``","``) get
lark's names (``LPAR``, ``COMMA``).
"""

from __future__ import annotations

import re
from ast import literal_eval
from pathlib import Path

try:
    from re import _parser as _sre_parse  # Python 3.11+
except ImportError:  # pragma: no cover
    import sre_parse as _sre_parse

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


def _master(terminals: list, ignored: set, keywords: dict) -> tuple:
    """The master regex: the ignored terminals but ``COMMENT`` as a possessive prefix (each
    match skips the blanks before its token: none of them can begin another terminal, which
    tests/test_descent.py checks), then every other terminal but the keywords a named group,
    in lark's order, then ``__END`` (the end of the text, after blanks). Also the order."""
    scanned = sorted((t for t in terminals if t.string not in keywords),
                     key=lambda t: (-t.priority, -t.max_width, -len(t.value), t.name))
    skipped = [t for t in scanned if t.name in ignored and t.name != "COMMENT"]
    prefix = "(?:%s)*+" % "|".join(t.regex for t in skipped)
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
