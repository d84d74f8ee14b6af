"""Incremental parsing (:mod:`rcpc.core.syntax.incremental`) equals a full parse: after any
sequence of edits of a real recipe, the module built from the earlier parse's chunks is the
one :func:`rcpc.core.syntax.parser.parse` builds from the whole text (statements, comments,
every span), and a text that does not parse raises the same diagnostics."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.core import astcache
from rcpc.core.diagnostics import CompileError
from rcpc.core.source import Source
from rcpc.core.syntax import incremental, parser, postlex

from conftest import BUNDLED_FILES

REPO = Path(__file__).resolve().parents[1]
FILES = [str(p.relative_to(REPO)) for p in BUNDLED_FILES]
# Lines that open or close what decides where statements begin: brackets, strings, blocks,
# continuations, comments.
SNIPPETS = ["else:", "elif X:", "if X:", "    Y = 1", "def f(a):", "    return a", "X = (", ")", "]", "}",
            "X = [1,", '"""', "'''", 'S = """a', 'b"""', "X = 1 \\", "    + 2", "# comment", "", "Z = {",
            '"k": "v#x",', "X = 'it''s'", 'F = f"{X} {Y}"', "[A, B] = [1, 2]", "load(\"//lib/x.rcp\", \"A\")",
            "elsewhere = 1", "X = '(' + \"[\"", "for i in L:", "\tT = 1"]


def outcome(source: Source):
    try:
        m = parser.parse(source)
    except CompileError as exc:
        return "error", [(d.code, d.message, str(d.span), d.hint, d.related) for d in exc.diagnostics]
    return "ok", (m.stmts, m.comments)


def incremental_outcome(source: Source, earlier: tuple):
    try:
        m, chunks = incremental.parse(source, earlier)
    except CompileError as exc:
        return ("error", [(d.code, d.message, str(d.span), d.hint, d.related) for d in exc.diagnostics]), earlier
    assert m.source is source and m.path == source.path
    return ("ok", (m.stmts, m.comments)), chunks


@st.composite
def edit(draw, lines: list[str]):
    kind = draw(st.sampled_from(["replace", "delete", "insert", "char", "duplicate", "snippet"]))
    n = len(lines)
    at = draw(st.integers(0, max(n - 1, 0)))
    if kind == "replace" and n:
        lines[at] = lines[draw(st.integers(0, n - 1))]
    elif kind == "delete" and n:
        del lines[at:at + draw(st.integers(1, 4))]
    elif kind == "insert":
        lines.insert(at, lines[draw(st.integers(0, n - 1))] if n else "X = 1")
    elif kind == "char" and n:
        line = lines[at]
        col = draw(st.integers(0, len(line)))
        lines[at] = line[:col] + draw(st.sampled_from(list("()[]{}\"'#\\:= \n1aX"))) + line[col + 1:]
    elif kind == "duplicate" and n:
        end = min(n, at + draw(st.integers(1, 8)))
        lines[end:end] = lines[at:end]
    else:
        lines.insert(at, draw(st.sampled_from(SNIPPETS)))
    return lines


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_incremental_parse_equals_a_full_parse(data):
    path = data.draw(st.sampled_from(FILES), label="file")
    text = (REPO / path).read_text(encoding="utf-8")
    source = Source(path, text)
    result, chunks = incremental_outcome(source, ())
    assert result == outcome(source)
    lines = text.split("\n")
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        lines = data.draw(edit(list(lines)), label="edited")
        source = Source(path, "\n".join(lines))
        result, chunks = incremental_outcome(source, chunks)
        assert result == outcome(source)
        if result[0] == "ok":   # the chunks reused and parsed are the chunks of a parse from scratch
            assert chunks == incremental.parse(source, ())[1]


@pytest.mark.parametrize("path", FILES)
def test_moved_statements_keep_their_spans_right(path):
    """Lines inserted above every statement move every chunk: the spans are those of a full
    parse of the new text."""
    text = (REPO / path).read_text(encoding="utf-8")
    _, chunks = incremental.parse(Source(path, text), ())
    moved = Source(path, "# new\n\nX0 = [\n    1,\n]\n" + text)
    module, new = incremental.parse(moved, chunks)
    assert (module.stmts, module.comments) == outcome(moved)[1]
    # none parsed again but the file's leading comments, now after X0
    assert sum(c.digest in {o.digest for o in chunks} for c in new) >= len(chunks) - 1


def test_only_the_edited_statement_is_parsed(monkeypatch):
    path = "recipes/rl/qwen35_397b_256_v7x.rcp"
    text = (REPO / path).read_text(encoding="utf-8")
    _, chunks = incremental.parse(Source(path, text), ())
    parsed = []
    real = parser.parse_lines
    monkeypatch.setattr(parser, "parse_lines", lambda s, a, b: parsed.append(s.text[a:b]) or real(s, a, b))
    edited = text.replace('"ragged_buffer_factor": 2.0,', '"ragged_buffer_factor": 3.5,')
    module, _ = incremental.parse(Source(path, edited), chunks)
    assert len(parsed) == 1 and '"ragged_buffer_factor": 3.5,' in parsed[0]
    assert (module.stmts, module.comments) == outcome(Source(path, edited))[1]


def test_the_token_limit_counts_the_whole_file(monkeypatch):
    """Chunks each under the limit, the file over it: E0809, as a full parse reports."""
    monkeypatch.setattr(parser, "MAX_TOKENS", 40)
    monkeypatch.setattr(postlex, "MAX_TOKENS", 40)  # where both parsers count
    monkeypatch.setattr(incremental, "MAX_TOKENS", 40)
    small = "".join(f"X{i} = {i}\n" for i in range(5))
    _, chunks = incremental.parse(Source("r.rcp", small), ())
    big = Source("r.rcp", small + "".join(f"Y{i} = {i}\n" for i in range(10)))
    with pytest.raises(CompileError) as exc:
        incremental.parse(big, chunks)
    assert [d.code for d in exc.value.diagnostics] == ["E0809"]
    assert outcome(big)[0] == "error"


@pytest.mark.parametrize("text, starts", [
    ("A = 1\nB = 2\n", [0, 6]),
    ("A = (\nB)\nC = 1\n", [0, 9]),
    ('A = """\nB = 1\n"""\nC = 1\n', [0, 18]),
    ("if X:\n    A = 1\nelse:\n    A = 2\nB = 1\n", [0, 32]),
    ("A = 1 \\\nB\nC = 1\n", [0, 10]),
    ("# c\nA = 1\n# d\n\nB = 2\n", [0, 4, 15]),
    ("A = '#('\nB = 1\n", [0, 9]),
    ("elsewhere = 1\nelse_ = 2\n", [0, 14]),
])
def test_chunks_begin_where_top_level_statements_do(text, starts):
    assert incremental.chunk_starts(text) == starts


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)
    monkeypatch.setattr(astcache, "_EARLIER", {})
    return tmp_path / "rcpc" / "ast"


def test_the_next_process_reparses_only_the_edit(cache, monkeypatch):
    """The AST cache records each path's last parse: a later run (no parse of its own in
    memory) takes the unchanged statements from it."""
    path = "recipes/rl/qwen35_397b_256_v7x.rcp"
    text = (REPO / path).read_text(encoding="utf-8")
    astcache.parse(Source(path, text))
    monkeypatch.setattr(astcache, "_EARLIER", {})   # as in a new process
    parsed = []
    real = parser.parse_lines
    monkeypatch.setattr(parser, "parse_lines", lambda s, a, b: parsed.append(a) or real(s, a, b))
    edited = Source(path, text.replace('"ragged_buffer_factor": 2.0,', '"ragged_buffer_factor": 3.5,'))
    module = astcache.parse(edited)
    assert len(parsed) == 1 and (module.stmts, module.comments) == outcome(edited)[1]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(at=st.integers(0, 10 ** 6), bits=st.integers(1, 255), which=st.sampled_from(["entry", "last"]))
def test_a_damaged_last_parse_lends_nothing_wrong(cache, monkeypatch, at, bits, which):
    """A damaged record of the last parse, or a damaged entry it names, is a miss: the
    edited file is parsed in full, and the result is a full parse's."""
    text = 'X = 1\n# c\nY = [X, "s"]\nZ = {"a": Y}\n'
    astcache.parse(Source("recipes/r.rcp", text))
    monkeypatch.setattr(astcache, "_EARLIER", {})
    victim = next((cache / "last").iterdir()) if which == "last" else next(
        p for p in cache.rglob("*") if p.is_file() and p.parent.name != "last")
    data = bytearray(victim.read_bytes())
    data[at % len(data)] ^= bits
    victim.write_bytes(bytes(data))
    edited = Source("recipes/r.rcp", text.replace("X = 1", "X = 2"))
    module = astcache.parse(edited)
    assert (module.stmts, module.comments) == outcome(edited)[1]


def test_another_paths_last_parse_is_not_used(cache, monkeypatch):
    a, b = Source("recipes/a.rcp", "X = 1\nY = 2\n"), Source("recipes/b.rcp", "X = 1\nY = 2\n")
    astcache.parse(a)
    monkeypatch.setattr(astcache, "_EARLIER", {})
    (ptr,) = (cache / "last").iterdir()
    ptr.rename(cache / "last" / astcache._last_name(b.path))   # b's record names a's entry
    assert astcache._earlier(b) == ()
    assert outcome(b)[1] == (lambda m: (m.stmts, m.comments))(astcache.parse(b))


def _string_end_reference(text: str, i: int) -> int:
    """The end of the string opening at ``i``, read a character at a time (the definition
    incremental._string_end implements with regular expressions)."""
    quote = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else text[i]
    j, n = i + len(quote), len(text)
    while j < n:
        if text[j] == "\\":
            j += 2
        elif text.startswith(quote, j):
            return j + len(quote)
        elif text[j] == "\n" and len(quote) == 1:
            return j
        else:
            j += 1
    return n


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="\"'\\\nab#({", max_size=30), st.sampled_from(['"', "'", '"""', "'''"]))
@example('\\', '"')               # a backslash at the end of the text
@example('a\\\nb"', '"')          # a backslash before a line end continues a one-line string
@example('""""', '"""')           # four quotes close a long string after its first three
def test_a_strings_end_is_found_as_a_character_scan_finds_it(rest, quote):
    text = "x = " + quote + rest
    assert incremental._string_end(text, 4) == _string_end_reference(text, 4)
