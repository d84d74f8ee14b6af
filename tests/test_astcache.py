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


# Entries kept in memory (what the build server hands each child: astcache.remember) ----------
@pytest.fixture
def memory(cache, monkeypatch):
    """The cache, with this test's own memory, record of use and last parses."""
    for name in ("_MEMORY", "_USED", "_EARLIER"):
        monkeypatch.setattr(astcache, name, {})
    for name in ("_HANDING", "_HANDED"):
        monkeypatch.setattr(astcache, name, [])
    return cache


def test_remembered_entries_are_served_from_memory(memory):
    source = Source("recipes/r.rcp", TEXT)
    astcache.parse(source)
    used = astcache.used()
    assert used == [(str(memory), "recipes/r.rcp", astcache.key(source), len(TEXT))]
    astcache.remember(used)
    entry(memory, source).unlink()  # no longer on disk: served from memory
    hit = astcache.lookup(source)
    assert hit is not None and hit.source is source and same(hit, parse(source))
    assert astcache.lookup(Source("recipes/r.rcp", TEXT + "Z = 1\n")) is None  # another text: not this entry


def test_memory_serves_the_cache_directory_it_was_read_from(memory, monkeypatch, tmp_path_factory):
    """A lookup in another cache directory (another XDG_CACHE_HOME) reads that one: a miss
    there is parsed and stored there, as without the memory."""
    source = Source("recipes/r.rcp", TEXT)
    astcache.parse(source)
    astcache.remember(astcache.used())
    other = tmp_path_factory.mktemp("other")
    monkeypatch.setenv("XDG_CACHE_HOME", str(other))
    assert astcache.lookup(source) is None
    astcache.parse(source)
    assert entry(other / "rcpc" / "ast", source).is_file()


def test_an_entry_is_remembered_only_under_the_lookup_checks(memory):
    source = Source("recipes/r.rcp", TEXT)
    astcache.parse(source)
    path = entry(memory, source)
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    astcache.remember(astcache.used())
    assert astcache._MEMORY == {} and astcache.lookup(source) is None


JUNK = st.recursive(st.none() | st.integers() | st.text(max_size=8) | st.binary(max_size=8),
                    lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner, inner, inner), max_leaves=20)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(JUNK | st.tuples(st.text(max_size=20), st.text(max_size=20), st.text(max_size=70),
                                        st.integers(-5, 1 << 30)), max_size=6))
def test_remember_ignores_whatever_is_not_an_entry_it_can_read(memory, entries):
    astcache.remember(entries)
    assert astcache._MEMORY == {} and astcache._EARLIER == {}


def test_memory_keeps_the_newest_parses_within_its_bound(memory, monkeypatch):
    monkeypatch.setattr(astcache, "MEMORY_CHARS", 2 * len(TEXT) + 20)
    sources = [Source(f"recipes/r{i}.rcp", TEXT + f"Z = {i}\n") for i in range(5)]
    for s in sources:
        astcache.parse(s)
        astcache.remember(astcache.used()[-1:])
    assert [k for _, k in astcache._MEMORY] == [astcache.key(s) for s in sources[-2:]]
    assert sorted(astcache._EARLIER) == ["recipes/r3.rcp", "recipes/r4.rcp"]
    monkeypatch.setattr(astcache, "ENTRY_CHARS", len(TEXT))  # a file larger than that is not kept
    astcache.remember(astcache.used()[:1])
    assert [k for _, k in astcache._MEMORY] == [astcache.key(s) for s in sources[-2:]]


def test_parses_handed_over_are_stored_by_the_process_that_keeps_them(memory):
    """The build server's child hands its new parses over; the server parses the texts
    again, stores them and keeps them in memory (keep_parsed)."""
    source = Source("recipes/r.rcp", TEXT)
    astcache.hand_over()
    first = astcache.parse(source)
    assert not entry(memory, source).exists()
    assert astcache.handed() == [(str(memory), "recipes/r.rcp", TEXT)]
    assert astcache.used() == [(str(memory), "recipes/r.rcp", astcache.key(source), len(TEXT))]
    astcache._HANDING.clear()  # the server's process
    astcache._MEMORY.clear()
    astcache.keep_parsed(astcache.handed())
    assert entry(memory, source).exists() and (str(memory), astcache.key(source)) in astcache._MEMORY
    astcache._MEMORY.clear()
    assert same(astcache.lookup(source), first) and same(first, parse(source))


def test_parses_not_handed_over_are_stored_as_always(memory, monkeypatch):
    """Beyond HAND_OVER_CHARS, in a process forked from the one that hands over (a -j
    worker), or when the report could not be sent (store_handed), parses are stored."""
    big, small = Source("recipes/big.rcp", TEXT * 3), Source("recipes/small.rcp", TEXT)
    monkeypatch.setattr(astcache, "HAND_OVER_CHARS", len(TEXT) * 2)
    astcache.hand_over()
    astcache.parse(big)
    assert entry(memory, big).exists() and astcache.handed() == []
    astcache.parse(small)
    assert not entry(memory, small).exists()
    astcache.store_handed()
    assert entry(memory, small).exists() and astcache.handed() == []
    other = Source("recipes/other.rcp", TEXT + "Q = 1\n")
    astcache._HANDING[0] = -1  # another process's hand-over (this one was forked from it)
    astcache.parse(other)
    assert entry(memory, other).exists()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(JUNK | st.tuples(st.text(max_size=20), st.text(max_size=20), st.text(max_size=20)),
                        max_size=6))
def test_keep_parsed_ignores_whatever_is_not_a_text_that_parses(memory, entries, tmp_path_factory):
    """Also: nothing is written but in an AST cache directory (the junk's directories are
    relative paths, or absolute ones that are not an AST cache's)."""
    import os

    directory = str(tmp_path_factory.mktemp("kept") / "rcpc" / "ast")
    here = tmp_path_factory.mktemp("cwd")
    astcache._MEMORY.clear()
    entries = [*entries, *[(str(here / e[0].replace("\0", "")), *e[1:]) for e in entries
                           if type(e) is tuple and len(e) == 3 and type(e[0]) is str]]
    cwd = os.getcwd()
    os.chdir(here)
    try:
        astcache.keep_parsed(entries)
        astcache.remember([(e[0], "p", "0" * 64, 1) for e in entries if type(e) is tuple and type(e[0]) is str])
    finally:
        os.chdir(cwd)
    assert not any(here.iterdir())
    texts = [(directory, e[1], e[2]) for e in entries if type(e) is tuple and len(e) == 3 and type(e[1]) is str]
    astcache.keep_parsed([*entries, *texts])
    assert set(astcache._MEMORY) <= {(d, astcache.key(Source(path, text))) for d, path, text in texts}
    for _, path, text in texts:
        try:
            expected = parse(Source(path, text))
        except Exception:
            continue
        kept = astcache._MEMORY[(directory, astcache.key(Source(path, text)))][0]
        assert tuple(x for c in kept for x in c.stmts) == expected.stmts


EDITS = [TEXT, TEXT.replace("10", "11"), TEXT + "W = 2\n", "W = 2\n" + TEXT, TEXT.replace("# c", "# d"), "X = [\n"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from(EDITS), st.booleans(), st.booleans(), st.booleans()),
                      min_size=1, max_size=8))
def test_an_edit_loop_with_remembered_entries_parses_as_the_parser(memory, steps):
    """Model of the build server: each step a child parses the file's text (from memory,
    the disk or incrementally), handing its new parse over or storing it, the server may
    keep what it was handed and remember what was used, and the disk cache may be emptied
    in between: every parse equals the parser's, errors included."""
    import shutil

    from rcpc.core.diagnostics import CompileError

    for name in ("_MEMORY", "_USED", "_EARLIER", "_HANDING", "_HANDED"):
        getattr(astcache, name).clear()
    shutil.rmtree(memory, ignore_errors=True)
    for text, keep, wipe, hand in steps:
        if hand:
            astcache.hand_over()
        source = Source("recipes/r.rcp", text)
        try:
            expected = parse(source)
        except CompileError as exc:
            with pytest.raises(CompileError) as got:
                astcache.parse(source)
            assert [str(d) for d in got.value.diagnostics] == [str(d) for d in exc.diagnostics]
        else:
            assert same(astcache.parse(source), expected)
        astcache._HANDING.clear()  # the server's process
        if keep:
            astcache.keep_parsed(astcache.handed())
            astcache.remember(astcache.used())
        astcache._HANDED.clear()
        if wipe:
            shutil.rmtree(memory, ignore_errors=True)
