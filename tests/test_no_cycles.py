"""A compile leaves no reference cycles behind it (issue 20): what a parse, an evaluation and
the renders make is freed by reference counting the moment it is dropped, so the cyclic
collector can run rarely (``rcpc.GC_THRESHOLDS``) without memory growing with the
number of recipes. A parser and its AST builder referred to each other, and each file's
parse (its text among it) waited for the collector: ~18 MB more at 1,000 recipes."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rcpc.core.session import Session
from rcpc.core.source import Source
from rcpc.core.syntax import parser

from conftest import BUNDLED_FILES

ROOT = Path(__file__).resolve().parents[1]
CORPUS = BUNDLED_FILES
OURS = ("rcpc.",)


def _cyclic_garbage(action) -> list:
    """rcpc's objects that only the cyclic collector would free after ``action()``. What
    exists before is frozen (``gc.freeze``: the collector skips it), so each collection scans
    what the action made, not the whole test session's heap (which made this file 90 s)."""
    gc.disable()
    gc.freeze()  # garbage made before is frozen too: not the action's, not reported
    try:
        action()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        found = [o for o in gc.garbage if type(o).__module__.startswith(OURS)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.unfreeze()
        gc.enable()
    return found


def test_the_check_sees_a_cycle():
    """The canary: a cycle of rcpc objects made by the action is found."""
    from rcpc.core.values import List, Str

    def action():
        items: list = []
        value = List((Str("x", None),), None)
        items.append((value, items))  # a list holding itself, and a value of ours in the cycle

    assert any(type(o).__name__ == "List" for o in _cyclic_garbage(action))


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_parsing_a_file_leaves_no_cycle(path):
    source = Source(str(path), path.read_text(encoding="utf-8"))
    assert _cyclic_garbage(lambda: parser.parse(source)) == []


SESSION = Session()  # its reference parser made before the action: the session keeps it for the run


@given(text=st.sampled_from([p.read_text(encoding="utf-8") for p in CORPUS]), cut=st.integers(0, 400))
@settings(max_examples=40, deadline=None)
def test_a_parse_that_fails_or_falls_back_leaves_no_cycle(text, cut):
    """Also when the fast parser declines (lark reads it, with its session's reference parser:
    lark's parser is itself cyclic, so one made for a single parse is the cyclic collector's)
    or the text is cut mid-statement."""
    source = Source("r.rcp", text[:len(text) - cut])
    if not SESSION.parsers:
        SESSION.parsers.append(parser.ReferenceParser())

    def action():
        try:
            parser.parse(source, session=SESSION)
        except Exception:
            pass

    assert _cyclic_garbage(action) == []


def test_building_a_recipe_leaves_no_cycle_unless_it_defines_functions(monkeypatch):
    """Every bundled recipe, built and released: no cyclic garbage, except where a function
    is defined (its value holds the bindings that hold it, as a Python closure does)."""
    import re

    from rcpc.api import Workspace

    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    ws = Workspace(ROOT)
    paths = ws.recipe_paths([])
    compiler = ws.compiler
    compiler.build(paths[0])  # modules imported, libraries loaded: what stays for the run
    compiler.release(paths[0])
    clean = 0
    for path in paths:
        garbage = _cyclic_garbage(lambda: compiler.build(path) and compiler.release(path))
        files = compiler.dependencies(path)
        defines = any(re.search(r"^\s*def ", f.read_text(encoding="utf-8"), re.M) for f in files if f.suffix == ".rcp")
        assert not garbage or defines, (path.name, sorted({type(o).__qualname__ for o in garbage}))
        clean += not garbage
    assert clean >= len(paths) - 3
