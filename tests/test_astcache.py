"""The AST cache (:mod:`rcpc.core.astcache`) never lies: an entry is used only when it is the
parse of exactly this text by this code; any damaged, truncated, swapped or foreign entry is a
miss, after which the file is parsed and the entry rewritten."""

from __future__ import annotations

import hashlib
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rcpc.core import astcache
from rcpc.core.source import Source
from rcpc.core.syntax.parser import parse

TEXT = 'load("//lib/l.rcp", "A")\nX = maxtext_flags({"steps": 10, "lr": 1e-6})  # c\nY = [A, "s", True]\n'


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)
    return tmp_path / "rcpc" / "ast"


def entry(cache, source):
    k = astcache.key(source)
    return cache / k[:2] / k


def same(a, b) -> bool:
    return a.path == b.path and a.stmts == b.stmts and a.comments == b.comments


def test_a_parse_is_stored_and_served(cache):
    source = Source("recipes/r.rcp", TEXT)
    assert astcache.lookup(source) is None
    first = astcache.parse(source)
    hit = astcache.lookup(source)
    assert hit is not None and hit.source is source and same(hit, first) and same(hit, parse(source))


def test_the_key_is_the_text_and_the_path(cache):
    astcache.parse(Source("recipes/r.rcp", TEXT))
    assert astcache.lookup(Source("recipes/r.rcp", TEXT + "Z = 1\n")) is None
    assert astcache.lookup(Source("recipes/s.rcp", TEXT)) is None   # spans name the path


def test_syntax_errors_are_not_stored(cache):
    from rcpc.core.diagnostics import CompileError

    with pytest.raises(CompileError):
        astcache.parse(Source("recipes/r.rcp", "X = [\n"))
    assert not cache.exists() or not any(cache.rglob("*"))


def test_no_cache_turns_it_off(cache, monkeypatch):
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    astcache.parse(Source("recipes/r.rcp", TEXT))
    assert not cache.exists()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(at=st.integers(0, 10 ** 6), bits=st.integers(1, 255), cut=st.booleans())
def test_a_damaged_entry_is_a_miss_or_the_same_tree(cache, at, bits, cut):
    source = Source("recipes/r.rcp", TEXT)
    good = astcache.parse(source)
    path = entry(cache, source)
    data = bytearray(path.read_bytes())
    if cut:
        data = data[:at % len(data)]
    else:
        data[at % len(data)] ^= bits
    path.write_bytes(bytes(data))
    hit = astcache.lookup(source)
    assert hit is None   # a flip anywhere, header or payload, is caught by the key or digest
    astcache.parse(source)  # parsed again, entry rewritten
    assert same(astcache.lookup(source), good)


def test_another_files_entry_is_a_miss(cache):
    a, b = Source("recipes/a.rcp", TEXT), Source("recipes/b.rcp", "B = 2\n")
    astcache.parse(a)
    astcache.parse(b)
    ea, eb = entry(cache, a), entry(cache, b)
    da, db = ea.read_bytes(), eb.read_bytes()
    ea.write_bytes(db)
    eb.write_bytes(da)
    assert astcache.lookup(a) is None and astcache.lookup(b) is None


@pytest.mark.parametrize("payload", [
    ("recipes/r.rcp", (pickle.loads(pickle.dumps(OSError("x"))),), ()),   # a class not of the AST
    ("recipes/other.rcp", (), ()),                                       # another path
    ("recipes/r.rcp", [], ()),                                           # not a tuple
    ("recipes/r.rcp", (), ("# c",)),                                     # comments not Comment
], ids=["foreign-class", "other-path", "list", "bad-comment"])
def test_a_well_formed_entry_of_the_wrong_content_is_a_miss(cache, payload):
    """Even with the header's key and digest made to match, only AST classes are built and
    the shape is checked."""
    source = Source("recipes/r.rcp", TEXT)
    astcache.parse(source)
    path = entry(cache, source)
    raw = pickle.dumps(payload)
    head = path.read_bytes()[:len(astcache.MAGIC) + 64]
    path.write_bytes(head + hashlib.sha256(raw).hexdigest().encode() + raw)
    assert astcache.lookup(source) is None


EDITS = [TEXT, TEXT.replace("10", "11"), TEXT + "W = 2\n", "W = 2\n" + TEXT, TEXT.replace("# c", "# d"), "X = [\n"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from(EDITS), st.booleans(), st.booleans()),
                      min_size=1, max_size=8))
def test_an_edit_loop_parses_as_the_parser(cache, monkeypatch, steps):
    """Model of the edit loop: each step parses the file's text (from the cache or
    incrementally from the path's last parse), in this process or in a new one (the last
    parses in memory forgotten), the disk cache possibly emptied in between: every parse
    equals the parser's, errors included."""
    import shutil

    from rcpc.core.diagnostics import CompileError

    monkeypatch.setattr(astcache, "_EARLIER", {})
    shutil.rmtree(cache, ignore_errors=True)
    for text, new_process, wipe in steps:
        if new_process:
            astcache._EARLIER.clear()
        source = Source("recipes/r.rcp", text)
        try:
            expected = parse(source)
        except CompileError as exc:
            with pytest.raises(CompileError) as got:
                astcache.parse(source)
            assert [str(d) for d in got.value.diagnostics] == [str(d) for d in exc.diagnostics]
        else:
            assert same(astcache.parse(source), expected)
        if wipe:
            shutil.rmtree(cache, ignore_errors=True)