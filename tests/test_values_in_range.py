"""Values that must stay in range (issue 12, items 7 and 10): string escapes name exactly one
Unicode character (``"\\x+1"`` was accepted, ``"\\UFFFFFFFF"`` crashed), ints stay 64-bit under
every operator (negation left the range), and text from the command line that is not UTF-8
is an error, not a crash when the render is written. Whole value spaces, by hypothesis."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.core.limits import INT_LIMIT

HEX = "0123456789abcdefABCDEF"
WIDTH = {"x": 2, "u": 4, "U": 8}


def expected_escape(kind: str, digits: str):
    """The character ``\\<kind><digits>`` denotes, or None when it must be an error: exactly
    WIDTH hex digits (int(s, 16) also takes '+', '-', '_' and spaces) naming a Unicode scalar
    value (at most 0x10FFFF, not a surrogate)."""
    if len(digits) != WIDTH[kind] or not all(c in HEX for c in digits):
        return None
    code = int(digits, 16)
    return None if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF else chr(code)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from("xuU"), digits=st.text(st.sampled_from(HEX + "+-_ gG"), max_size=9))
@example(kind="x", digits="+1")          # the reported case: accepted
@example(kind="U", digits="FFFFFFFF")    # the reported case: a traceback
@example(kind="u", digits="d800")
@example(kind="U", digits="0010ffff")
@example(kind="u", digits="1_00")
def test_a_hex_escape_is_one_unicode_character_or_e0002(ws, kind, digits):
    from rcpc.core.diagnostics import CompileError

    src = f'X = "\\{kind}{digits}"\n'
    want = expected_escape(kind, digits[:WIDTH[kind]])
    try:
        got = ws.py('"\\' + kind + digits + '"')
    except CompileError as exc:
        d = exc.diagnostics[0]
        assert want is None, f"{src!r}: {d.message}"
        assert d.code in ("E0002", "E0001") and d.span is not None
        return
    assert want is not None, f"{src!r} was accepted as {got!r}"
    assert got == want + digits[WIDTH[kind]:]


INT64 = st.integers(-INT_LIMIT, INT_LIMIT - 1)


def literal(n: int) -> str:
    """A recipe expression for int ``n`` (-2**63 has no literal: its magnitude is out of range)."""
    return f"({n + 1} - 1)" if n == -INT_LIMIT else f"({n})"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=INT64, b=INT64, op=st.sampled_from(["+", "-", "*", "//", "%", "neg"]))
@example(a=-INT_LIMIT, b=0, op="neg")        # the reported case: -(-2**63) was 2**63
@example(a=-INT_LIMIT, b=-1, op="//")
@example(a=INT_LIMIT - 1, b=1, op="+")
def test_int_results_stay_in_the_64_bit_range(ws, a, b, op):
    """Every int an operator computes is in [-2**63, 2**63) or the operation is E0806 (E0303 for
    a division by zero), as Python computes it otherwise."""
    from rcpc.core.diagnostics import CompileError

    expr = f"-{literal(a)}" if op == "neg" else f"{literal(a)} {op} {literal(b)}"
    if op in ("//", "%") and b == 0:
        want = "E0303"
    else:
        value = -a if op == "neg" else {"+": a + b, "-": a - b, "*": a * b, "//": a // (b or 1),
                                        "%": a % (b or 1)}[op]
        want = value if -INT_LIMIT <= value < INT_LIMIT else "E0806"
    try:
        got = ws.py(expr)
    except CompileError as exc:
        assert exc.diagnostics[0].code == want, f"{expr}: {exc.diagnostics[0].message}"
        return
    assert got == want, expr


def test_negation_keeps_the_spelling_inside_the_range(ws):
    assert ws.py("-(-9223372036854775807)") == INT_LIMIT - 1
    assert ws.render('X = -(-3)\nflag_file(name = "f", flags = maxtext_flags({"x": -X}))\n', "f.flags") == "x=-3\n"


@pytest.mark.parametrize("text", ["\udcff", "a\udc80b"])
def test_set_values_that_are_not_utf8_are_an_error(ws, text):
    """argv holds undecodable bytes as surrogates: such a value could not be written."""
    f = ws.fails('P = param(str, default = "x")\nflag_file(name = "f", flags = maxtext_flags({"p": P}))\n',
                 sets=[f"P={text}"])
    assert f.code == "E0608" and "UTF-8" in f.message
