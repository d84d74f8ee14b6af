"""The expression nesting limit (MAX_DEPTH, docs/language.md "Limits") holds for every
expression written, evaluated or not, and counts levels exactly as evaluation does.

The reported fault (a kind of issue 12's "fmt and check must agree"): an expression nested
400-800 levels in a branch never taken (or a function never called) passed `rcpc check`,
which only evaluation limited, while `rcpc fmt` refused it (E0801 "nested too deeply to
format"); beyond ~900 levels check failed where Python's stack gave out. Name resolution now
counts the levels of every expression (rcpc.core.resolve)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import LIB, Ws
from rcpc.core import evaluate as E
from rcpc.core import fmt
from rcpc.core import resolve as R
from rcpc.core.diagnostics import CompileError
from rcpc.core.limits import MAX_DEPTH

# One sub-expression each, always evaluated (no branch not taken, no short circuit): evaluation
# reaches the innermost node before it can fail on anything else (a type error is raised on
# the way out), so "E0801 or not" is well defined for evaluation too.
# Operands are parenthesized (no level): without, "-{}" around "0 if False else 1" made
# "(-0) if False else 1", a deeper branch never taken (found by this test in CI).
WRAPPERS = ["[{}]", '{{"k": {}}}', "({})", "-({})", "not ({})", "({}) + 1", "1 + ({})", "({}) if True else 0",
            "0 if False else ({})", "[{}][0]", "len([{}])", 'f"{{{}}}"', "[x for x in [{}]]", "({}) == 1",
            '{{"a": {}}}.get("a")', "str({})", "[i for i in range(1) if ({})]", "dict(a = {})",
            "{{k: v for k, v in {{1: {}}}.items()}}"]
LEAVES = ["1", '"s"', "True", "None", "Y", "1.5", "[]"]


def _e0801(ws: Ws, text: str) -> bool:
    try:
        ws.names("Y = 1\n" + text, dedent=False)
    except CompileError as exc:
        return any(d.code == "E0801" for d in exc.diagnostics)
    return False


def _first_refused(tmp_path_factory, lifted, prefix: list, leaf: str) -> int:
    """The fewest ``[...]`` levels around ``prefix`` (wrappers, outermost first) around ``leaf``
    that give E0801 with ``lifted``'s check lifted: the other's limit, found by bisection."""
    def refused(k: int) -> bool:
        expr = leaf
        for w in reversed(prefix):
            expr = w.format(expr)
        text = "X = " + "[" * k + expr + "]" * k + "\n"
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(lifted, "MAX_DEPTH", 10 ** 6)
            return _e0801(Ws(tmp_path_factory.mktemp("depth")), text)

    low, high = 0, MAX_DEPTH + 1  # refused(high) always: the list levels alone pass the limit
    while low < high:
        mid = (low + high) // 2
        if refused(mid):
            high = mid
        else:
            low = mid + 1
    return low


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(WRAPPERS), max_size=12), st.sampled_from(LEAVES))
@example([], "1")
@example(["[x for x in [{}]]", "dict(a = {})", "({}).x"], "Y")
@example(["-({})", "0 if False else ({})"], "1")
def test_resolution_limits_nesting_exactly_where_evaluation_did(tmp_path_factory, prefix, leaf):
    """Around any chain of constructs every level of which is evaluated, resolution's check
    alone (evaluation's lifted) refuses from exactly the nesting where evaluation's alone
    does: the same levels are counted, construct by construct."""
    assert _first_refused(tmp_path_factory, E, prefix, leaf) == _first_refused(tmp_path_factory, R, prefix, leaf)


@pytest.mark.parametrize("where", ["X = 1 if True else {}\n", "X = 0 if False else 1 if True else {}\n",
                                   "X = True or {}\n", "def f():\n    return {}\n",
                                   "def f(x):\n    if x:\n        return 1\n    return {}\n"])
@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 400, 800, 1500])
@pytest.mark.parametrize("opening, closing", [("[", "]"), ("len(", ")"), ("-", ""), ("1 + ", ""), ("x.", "")])
def test_nesting_never_evaluated_is_refused_so_check_and_fmt_agree(tmp_path, where, levels, opening, closing):
    """The reported cases: nesting past the limit in a branch not taken or a function never
    called is E0801, located in the file, once (it was accepted up to ~900 levels, then a
    RecursionError said "nested too deeply" at the statement)."""
    expr = opening * levels + "1" + closing * levels if opening != "x." else "Y" + ".x" * levels
    with pytest.raises(CompileError) as info:
        Ws(tmp_path).names(where.format(expr), dedent=False)
    (d,) = info.value.diagnostics
    assert (d.code, d.message) == ("E0801", f"expression nested deeper than {MAX_DEPTH} levels")
    assert d.span.path == LIB and d.span.line > 0


def test_parentheses_are_no_level(tmp_path):
    levels = 3 * MAX_DEPTH
    assert Ws(tmp_path).names("X = " + "(" * levels + "1" + ")" * levels + "\n", dedent=False)["X"].value == 1


@pytest.mark.parametrize("opening, closing", [("[", "]"), ("len(", ")"), ("-", ""), ("1 + ", "")])
def test_what_check_accepts_fmt_formats_at_the_limit(tmp_path, opening, closing):
    """The deepest expression check accepts, in a branch not taken, formats (and again to
    itself): fmt handles MAX_DEPTH levels, the limit check now applies to every expression."""
    levels = MAX_DEPTH - 2  # the conditional and the literal are levels too
    text = "Y = 1\nX = 1 if True else " + opening * levels + "1" + closing * levels + "\n"
    Ws(tmp_path).names(text, dedent=False)  # accepted
    out = fmt.format_source(text, "t.rcp")
    assert fmt.format_source(out, "t.rcp") == out
