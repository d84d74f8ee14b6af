"""rcp.toml's table kept in the store (:func:`rcpc.domain.workspace.config_table`, issues 37
and 41): a build after an edit of a recipe reads the table parsed before instead of importing
tomli (tests/test_startup_imports.py: NOT_EDITED_WITH).

Kind tested: whatever TOML document rcp.toml holds (tables, arrays, strings, ints, floats with
NaN, infinities and -0.0, bools, dates and times), the table given is tomllib's, of the same
types (Python's own tomllib is the oracle: rcpc reads TOML 1.0 as it does), when it is parsed
and when it is read back; a read back imports no tomli; a table
JSON cannot give back (a date or a time) is not kept; an error is not kept."""

from __future__ import annotations

import json
import math
import sys
import tomllib

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import storefiles
from storefiles import cache  # noqa: F401 (a fixture)
from rcpc.core import store
from rcpc.core.diagnostics import CompileError
from rcpc.core.usercache import code_fingerprint
from rcpc.domain.workspace import AREA, config_table

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# TOML's text: no surrogate (not UTF-8), no DEL (a control character TOML refuses unescaped)
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x7f"), max_size=6)
SCALAR = st.one_of(TEXT, st.integers(-2 ** 63, 2 ** 63 - 1), st.floats(), st.booleans(),
                   st.datetimes(), st.dates(), st.times())
VALUE = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(TEXT, inner, max_size=3)), max_leaves=8)


def toml(value) -> str:
    """``value`` written as a TOML value (inline)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # JSON's escapes are TOML's
    if isinstance(value, (int, float)):
        return repr(value)  # inf, nan, -0.0, 1e+16 are TOML's spellings too
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml(k)} = {toml(v)}" for k, v in value.items()) + "}"
    return value.isoformat()  # a datetime, date or time: TOML's local forms


def same(a, b) -> bool:
    """``a`` and ``b`` are equal and of the same types throughout (NaN is NaN, -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is float:
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b


def kept(cache) -> list:
    """The store's entries of rcp.toml's tables in the user cache ``cache``."""
    store.flush()
    return storefiles.rows(cache, AREA) if storefiles.database(cache).exists() else []


def has_time(value) -> bool:
    if isinstance(value, dict):
        return any(has_time(v) for v in value.values())
    if isinstance(value, list):
        return any(has_time(v) for v in value)
    return not isinstance(value, (str, int, float))


@SETTINGS
@given(table=st.dictionaries(TEXT, VALUE, max_size=4))
@example(table={"recipe_dirs": ["recipes"], "output_dir": "rcpc-out", "x": [float("nan"), -0.0, float("-inf")]})
@example(table={"when": {"a": [1, "b"]}})
def test_a_table_read_back_is_tomllibs(table, cache, monkeypatch):  # noqa: F811 (the fixture)
    text = "".join(f"{toml(k)} = {toml(v)}\n" for k, v in table.items())
    raw = text.encode()
    want = tomllib.loads(text)
    assert same(config_table(raw, text), want)  # parsed
    store.flush()  # written, and the next read is from the database
    k = store.key(AREA, code_fingerprint(), sys.version, raw)
    kept = store.get(AREA, k)
    assert (kept is None) == has_time(want)
    if kept is not None:
        with monkeypatch.context() as m:
            m.setitem(sys.modules, "tomli", None)  # importing it raises ImportError
            assert same(config_table(raw, text), want)  # read back
    else:
        assert same(config_table(raw, text), want)


# Pieces of TOML text, valid and not: keys, values of every kind, brackets, separators, escapes,
# comments, line breaks, and what TOML 1.1 (tomli 2.4+) added to 1.0: a line break and a trailing
# comma in an inline table, the \e and \xHH escapes, a time without seconds.
PIECES = st.sampled_from(["a", "b.c", '"q"', "'l'", " = ", "=", " ", "\n", "\r\n", "[", "]", "[[", "]]", "{", "}",
                          ",", ", ", "1", "-0", "0x1F", "1_000", "1.5", "1e3", "inf", "nan", "true", "false",
                          '"s"', '"""m\nl"""', "", '"\\\\e"', '"\\\\x41"', '"\\\\u00e9"', "1979-05-27",
                          "07:32:00", "07:32", "1979-05-27T07:32:00Z", "1979-05-27 07:32", "# c", "\\t"])


@settings(max_examples=400, deadline=None)
@given(text=st.lists(PIECES, max_size=14).map("".join))
@example(text="x = {a = 1,\\n b = 2}\\n")  # TOML 1.1: a line break in an inline table
@example(text="x = {a = 1,}\\n")  # TOML 1.1: a trailing comma in an inline table
@example(text='x = "\\\\e"\\n')  # TOML 1.1: the escape character
@example(text='x = "\\\\x41"\\n')  # TOML 1.1: \\xHH
@example(text="x = 07:32\\n")  # TOML 1.1: a time without seconds
@example(text='recipe_dirs = ["recipes"]\\noutput_dir = "out"\\n')
def test_rcpc_reads_toml_1_0_as_pythons_tomllib(text):
    """rcpc reads rcp.toml and values files with tomli 2.3 (its import loads no ``typing``;
    pyproject.toml pins it below 2.4, which reads TOML 1.1): it accepts and refuses exactly what
    Python 3.11's tomllib does, and gives the same table, over texts made of TOML's pieces."""
    import tomli

    try:
        want = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        with pytest.raises(tomli.TOMLDecodeError):
            tomli.loads(text)
        return
    assert same(tomli.loads(text), want)


def test_an_error_is_not_kept(cache):  # noqa: F811 (the fixture)
    for text in ('recipe_dirs = ["a"\n', "a.b.c = 1\n" + "x" + ".x" * 1_001 + " = 1\n"):
        for _ in range(2):
            with pytest.raises(CompileError) as e:
                config_table(text.encode(), text)
            assert e.value.diagnostics[0].code == "E0901"
        assert not kept(cache)


def test_with_the_cache_off_nothing_is_kept(cache, monkeypatch):  # noqa: F811 (the fixture)
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    text = 'recipe_dirs = ["recipes"]\n'
    assert config_table(text.encode(), text) == {"recipe_dirs": ["recipes"]}
    monkeypatch.delenv("RCPC_NO_CACHE")
    assert not kept(cache)
