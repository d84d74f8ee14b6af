"""Every regular expression of the package reads the same on every Python it allows (issue 37,
kind 8).

Python 3.11.0–3.11.3's ``re`` gets some possessive repeats (``*+``, ``++``, ``?+``, ``{m,n}+``)
and atomic groups wrong: a possessive repeat holding another repeat or a lookaround fails to
match text it should (on Debian 12's Python 3.11.2, every triple-quoted string was a syntax
error). The package writes possessive repeats only where the alternatives are disjoint, so
each has the same matches as its plain (backtracking) twin; this test compares the two on
generated text, for every compiled pattern of every module and every terminal of the grammar.
On a Python whose engine is right it holds by construction; CI runs it on the oldest Python
``requires-python`` allows (``.ci/run``), where a pattern of the failing shape is caught.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rcpc
from rcpc.core.syntax import terminals


def _plain(pattern: str) -> str:
    """``pattern`` with every possessive quantifier made greedy and every atomic group a plain
    group (escapes and character classes read as ``re`` reads them)."""
    out, i, n, in_class = [], 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "]" and not (out and out[-1] in ("[", "[^")):
                in_class = False
            out.append(c)
        elif c == "[":
            in_class = True
            out.append("[^" if pattern.startswith("[^", i) else "[")
            i += 2 if pattern.startswith("[^", i) else 1
            continue
        elif pattern.startswith("(?>", i):
            out.append("(?:")
            i += 3
            continue
        elif c in "*+?}" and i + 1 < n and pattern[i + 1] == "+":
            out.append(c)
            i += 2
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _possessive(pattern: str) -> bool:
    return _plain(pattern) != pattern


def _patterns() -> dict:
    """Every compiled pattern at module level (also inside dicts, lists and tuples) of every
    module of the package, and every terminal and scanner of the grammar, that uses a
    possessive quantifier or an atomic group."""
    found: dict = {}
    for info in pkgutil.walk_packages(rcpc.__path__, "rcpc."):
        if info.name.endswith((".__main__",)) or ".lsp." in info.name and importlib.util.find_spec("pygls") is None:
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            values = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else [value]
            for v in list(values)[:50]:
                if isinstance(v, re.Pattern) and _possessive(v.pattern):
                    found[f"{info.name}.{name}"] = (v.pattern, v.flags)
    for t in terminals.TERMINALS:
        if _possessive(t.regex):
            found[f"grammar {t.name}"] = (t.regex, 0)
    return found


PATTERNS = _patterns()
_ALPHABET = list("abAZ_09.-eE+\\\"' \t\n\r\f{}[],:#/$=f*x")


def test_the_patterns_are_found():
    """The walk finds the patterns this test exists for (it is not vacuous)."""
    names = set(PATTERNS)
    assert {"grammar LONG_STRING", "grammar STRING", "grammar INT", "grammar FLOAT", "grammar _NL"} <= names
    assert any(n.startswith("rcpc.core.syntax.lexer.") for n in names)


def test_the_plain_twin_is_plain():
    assert _plain(r'"[^"\\]*+(?:a|b)++x?+[*+]+\++(?>c)') == r'"[^"\\]*(?:a|b)+x?[*+]+\++(?:c)'


def _pieces(pattern: str) -> list[str]:
    """Text likely to exercise ``pattern``: its literal characters and a few runs."""
    chars = sorted({c for c in pattern if c.isprintable() or c in "\t\n\r\f"} | set(_ALPHABET))
    return chars + ['"""', "'''", "\\\n", "\\\r\n", "1_0", "e+5", ".5", "a.b", '"a"', "'a'", "\r\n  ", "]]"]


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_possessive_patterns_match_as_their_plain_twins(name):
    pattern, flags = PATTERNS[name]
    ours, twin = re.compile(pattern, flags), re.compile(_plain(pattern), flags)

    @settings(max_examples=150, deadline=None, database=None)
    @given(text=st.lists(st.sampled_from(_pieces(pattern)), max_size=16).map("".join))
    def agree(text):
        for at in (0, min(1, len(text))):
            a, b = ours.match(text, at), twin.match(text, at)
            assert (a and a.span()) == (b and b.span()), (text, at)
        a, b = ours.search(text), twin.search(text)
        assert (a and a.span()) == (b and b.span()), text

    agree()


@pytest.mark.parametrize("text", ['"""a\nb"""', '"""ab"""', "'''a'b'''", 'f"""x{1}"""', '"""a""b"""', '""""""'])
def test_triple_quoted_strings_parse(text):
    """The reported case: on Python 3.11.2 no triple-quoted string lexed (E0001)."""
    from rcpc.api import parse

    parse(f"X = {text}\n", "t.rcp")
