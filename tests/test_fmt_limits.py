"""``rcpc fmt`` and the input limits (docs/language.md, "Limits"; rcpc issue 12).

The rule: what ``rcpc check`` accepts, ``rcpc fmt`` formats, and what it writes ``rcpc check``
accepts again. The token limit counts no layout (line breaks, trailing commas: exactly what the
formatter adds or removes), so a file and its canonical text have the same count (fewer, when
the file has a line break after a form feed or backslash-newline: those count); the size
limit counts bytes, and the canonical layout can genuinely need more than the input (one
element a line, 4 spaces a level): only then does ``rcpc fmt`` refuse the file, with ``E0951``
located at the statement that crosses it, never a "bug in rcpc fmt".

The limits are patched small (a few dozen tokens, a few hundred bytes) so that hypothesis can
put inputs on both sides of each limit quickly; one test runs the reported case (a list of
49,000 elements) at the real limits.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from rcpc.cli import main
from rcpc.core import fmt
from rcpc.core.diagnostics import CompileError
from rcpc.core.limits import MAX_DEPTH, MAX_TOKENS
from rcpc.core.source import Source
from rcpc.core.syntax import parser, postlex


# generated recipes: the same kinds of boxes, laid out at random ----------------------------
def _box(draw, open_: str, close: str, items: list, commas: bool = True) -> str:
    """``items`` between brackets, flat or one a line, maybe with a trailing comma and
    comments."""
    if not items:
        return open_ + close
    exploded = draw(st.booleans())
    trailing = draw(st.booleans())
    if not exploded:
        return open_ + ", ".join(items) + ("," if trailing else "") + close
    lines = []
    for i, it in enumerate(items):
        last = i == len(items) - 1
        comment = "  # c" if draw(st.integers(0, 5)) == 0 else ""
        lines.append(it + ("," if not last or trailing or comment else "") + comment)
    # a line break after a backslash-newline or a form feed is counted (the formatter drops them)
    breaks = draw(st.sampled_from(["\n"] * 6 + [" \\\n\n", "\n\f\n"]))
    return open_ + "\n" + breaks.join(lines) + "\n" + close


LEAVES = st.sampled_from(["1", '"s"', "22", "'q'", "x"])
KINDS = st.sampled_from(["list", "dict", "call"])


@st.composite
def values(draw, depth: int = 0):
    """An expression: an int or string, or a list, dict or call (positional and keyword
    arguments) of more of them, nested a few levels."""
    if depth >= 3 or draw(st.integers(0, 2)) == 0:
        return draw(LEAVES)
    kind = draw(KINDS)
    n = draw(st.integers(0, 7))
    items = [draw(values(depth + 1)) for _ in range(n)]
    if kind == "list":
        return _box(draw, "[", "]", items)
    if kind == "dict":
        return _box(draw, "{", "}", [f'"k{i}": {v}' for i, v in enumerate(items)])
    kws = [f"a{i} = {draw(values(depth + 1))}" for i in range(draw(st.integers(0, 3)))]
    return "f" + _box(draw, "(", ")", items + kws)


@st.composite
def recipes(draw):
    stmts = [f"X{i} = {draw(values())}" for i in range(draw(st.integers(1, 2)))]
    return "\n".join(stmts) + ("\n" if draw(st.booleans()) else "")


# the verdicts, under patched limits ----------------------------------------------------------
def _limits(monkeypatch, tokens: int, size: int) -> None:
    monkeypatch.setattr(postlex, "MAX_TOKENS", tokens)  # where a parse's TokenCount takes its limit
    monkeypatch.setattr(fmt, "MAX_FILE_BYTES", size)


def _count(text: str) -> int:
    """The tokens the compiler counts in ``text`` (it must parse)."""
    tokens = postlex.TokenCount()
    parser.parse(Source("t.rcp", text), tokens=tokens)
    return tokens.n


def check_verdict(text: str, size: int):
    """What ``rcpc check`` says of ``text`` as far as the limits go: ``"ok"``, or the code of
    the first error (E0803 for a file over the size limit, as ``Compiler.source`` reads it;
    the parse's errors, E0809 among them)."""
    if len(text.encode("utf-8")) > size:
        return "E0803"
    try:
        parser.parse(Source("t.rcp", text))
    except CompileError as exc:
        return exc.diagnostics[0].code
    return "ok"


def fmt_verdict(text: str, size: int):
    """``rcpc fmt``'s: ("ok", canonical text) or ("error", diagnostic); a formatter bug raises."""
    if len(text.encode("utf-8")) > size:
        return "error", "E0803"
    try:
        return "ok", fmt.format_source(text, "t.rcp")
    except CompileError as exc:
        return "error", exc.diagnostics[0]


def assert_fmt_agrees_with_check(text: str, canonical: str, count: int, size: int) -> None:
    """fmt formats what check accepts (or refuses it with E0951, located, if and only if its
    canonical text, ``canonical``, is over the size limit); what it writes check accepts,
    with the same token count (``count``, the input's), and formats to itself; what check
    refuses for its tokens fmt refuses alike, at the same place."""
    verdict = check_verdict(text, size)
    assert verdict in ("ok", "E0809")
    outcome, got = fmt_verdict(text, size)
    event(f"check: {verdict}; fmt: {outcome if outcome == 'ok' else got.code}")
    if verdict != "ok":  # a token limit crossed by the input itself: the same located error
        assert outcome == "error" and got.code == verdict
        with pytest.raises(CompileError) as exc:
            parser.parse(Source("t.rcp", text))
        assert got.span == exc.value.diagnostics[0].span
        return
    over = len(canonical.encode("utf-8")) > size
    if outcome == "error":
        assert got.code == "E0951" and over, got
        assert got.span is not None and got.span.line >= 1 and got.span.col >= 1 and got.hint
        return
    assert not over and got == canonical
    assert check_verdict(got, size) == "ok"  # what fmt writes, check reads
    # the rule: layout is not counted (a line break after a form feed or backslash-newline is)
    assert _count(got) == count if not any(c in text for c in "\f\\") else _count(got) <= count
    assert fmt.format_source(got, "t.rcp") == got


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=recipes(), token_delta=st.sampled_from(range(-2, 4)), size_delta=st.sampled_from(range(-4, 17)))
@example(text="X = [" + "1, " * 30 + "]\n", token_delta=0, size_delta=8)  # the reported case, small
@example(text="X = [" + "1, " * 30 + "1]\n", token_delta=0, size_delta=8)  # exploded by width alone
@example(text="X = f(" + "[0, [1, 2]], " * 12 + "a = {'k': 1})", token_delta=0, size_delta=-1)
def test_fmt_agrees_with_check_around_the_limits(text, token_delta, size_delta):
    """Each generated file is tried with the token limit a few tokens either side of its own
    count, and the size limit a few bytes either side of its canonical text's size."""
    try:
        count = _count(text)
        canonical = fmt.format_source(text, "t.rcp")
    except CompileError:  # the generator makes only valid recipes at the real limits
        raise AssertionError(text) from None
    size = max(len(text.encode("utf-8")), len(canonical.encode("utf-8")) + size_delta)  # check reads it
    with pytest.MonkeyPatch.context() as m:
        _limits(m, max(1, count + token_delta), size)
        assert_fmt_agrees_with_check(text, canonical, count, size)


def test_the_reported_case_formats_at_the_real_limits(tmp_path, monkeypatch, capsys):
    """A list of 49,000 elements (98,004 tokens; check accepts it): fmt said its own output
    did not parse ("more than 100000 tokens ... a bug in rcpc fmt"): exploded, it holds a line
    break an element. Now it formats, and check accepts what it wrote."""
    (tmp_path / "recipes").mkdir()
    (tmp_path / "rcp.toml").write_text('recipe_dirs = ["recipes"]\n', encoding="utf-8")
    recipe = tmp_path / "recipes" / "big.rcp"
    text = "X = [" + "1, " * 49000 + "]\n"
    recipe.write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert _count(text) <= MAX_TOKENS
    assert main(["fmt"]) == 0
    err = capsys.readouterr().err
    assert "bug in rcpc fmt" not in err and "reformatted 1 of 1" in err
    out = recipe.read_text(encoding="utf-8")
    assert out == "X = [\n" + "    1,\n" * 49000 + "]\n"
    assert _count(out) == _count(text)
    assert main(["check"]) == 0


def test_a_canonical_text_over_the_size_limit_is_a_located_error(tmp_path, monkeypatch, capsys):
    """Deep boxes of long lines: the input is small, its canonical layout (4 spaces a level,
    one element a line) over the size limit: E0951 at the statement, exit 1, the file kept."""
    monkeypatch.setattr(fmt, "MAX_FILE_BYTES", 2000)
    (tmp_path / "recipes").mkdir()
    (tmp_path / "rcp.toml").write_text('recipe_dirs = ["recipes"]\n', encoding="utf-8")
    recipe = tmp_path / "recipes" / "r.rcp"
    text = 'A = 1\n# c\nX = ' + "[0, " * 12 + "[" + "1, " * 40 + "]" + "]" * 12 + "\n"
    recipe.write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["fmt"]) == 1
    err = capsys.readouterr().err
    assert "recipes/r.rcp:3:1: error[E0951]: formatted, this file would be" in err
    assert "help: " in err and "bug" not in err
    assert recipe.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("opening, closing", [('{"a": ', "}"), ("f(a = ", ")"), ("f(0, g(", "))"), ("[0, ", "]"),
                                              ("f([", "])"), ("x[", "]"), ("{k: 0 for k in ", "}")])
def test_nesting_check_accepts_is_formatted(opening, closing):
    """``rcpc check`` evaluates nesting up to MAX_DEPTH levels; fmt formats it (its syntax
    tree comparison was recursive: a dict nested 165 deep was E0801 'nested too deeply to
    format')."""
    n = MAX_DEPTH // len(closing)  # (levels of brackets)
    text = "X = " + opening * n + "1" + closing * n + "\n"
    out = fmt.format_source(text, "t.rcp")
    assert fmt.format_source(out, "t.rcp") == out
