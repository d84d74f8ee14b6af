"""The importers' one reading of words (session 5 review): a flag word is read as a typed
value by the reading ``cli_value()`` uses (:func:`rcpc.domain.builtins.of_reading`, with its
64-bit range check), and "a number as written" has one definition
(:func:`rcpc.importer.literals.number`) that flag values, shell assignments and params and
vLLM options all use. So every word ``rcpc import shell`` imports compiles and renders as
the script wrote it: an int past 2**63 stays in the command as written (a string, W1200),
never ``cli_value("9223372036854775808")`` or a literal the recipe cannot hold (E0806).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import examples, run_bash_stubbed
from rcpc.core.diagnostics import CompileError
from rcpc.domain.workspace import Workspace
from rcpc.importer import proof
from rcpc.importer.driver import import_shell
from rcpc.core.values import to_python
from rcpc.importer.literals import number, scalar

REPO = Path(__file__).resolve().parents[1]
KEYS = ["alpha", "beta", "gamma"]

_EDGE = st.sampled_from([2 ** 63 - 1, 2 ** 63, -(2 ** 63), -(2 ** 63) + 1, -(2 ** 63) - 1, 2 ** 64, 0])
_INTS = st.one_of(_EDGE, st.integers(-(2 ** 63) - 3, -(2 ** 63) + 3), st.integers(2 ** 63 - 3, 2 ** 63 + 3),
                  st.integers(-1000, 1000))
_INT_WORDS = st.one_of(_INTS.map(str), _INTS.map(lambda i: f"+{i}" if i >= 0 else str(i)),
                       _INTS.filter(lambda i: i >= 0).map(hex), _INTS.map(lambda i: f"{i:_}"))
_FLOAT_WORDS = st.one_of(st.floats(allow_nan=False, allow_infinity=False).map(repr),
                         st.sampled_from(["1e400", "-1e400", "1e-400", "1.", "-0.0", "00.5", "1e5", "+1.5", "2.5E-3",
                                          ".5", ".inf", "-.inf", "1_0.5"]))
_OTHER_WORDS = st.one_of(st.sampled_from(["True", "false", "on", "yes", "null", "~", "flash", "a/b:c", "0123", "x1"]),
                         st.text("abcxyz019._-", min_size=1, max_size=6))
WORDS = st.one_of(_INT_WORDS, _FLOAT_WORDS, _OTHER_WORDS)


def _script(words: list) -> str:
    blob = " ".join(f"{KEYS[i % len(KEYS)]}{i}={w}" for i, w in enumerate(words))
    return (f'ARGS="{blob}"\n'
            'xpk workload create --cluster=c --command="python3 -m MaxText.train MaxText/configs/base.yml ${ARGS}"\n')


@settings(max_examples=examples(40, 10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(WORDS, min_size=2, max_size=5))
@example(words=["5", "9223372036854775808"])  # the report: an int past 2**63 (E0806 building the import)
@example(words=["5", "0x8000000000000000"])   # ... spelled so that it imported as cli_value("0x8000000000000000")
@example(words=["5", "-9223372036854775808"])  # in range, but no literal spells it (its digits are not)
@example(words=["+5", "1e400"])                # no unary '+'; a float literal that overflows
def test_every_flag_word_imports_compiles_and_renders_the_same(words, tmp_path):
    """Flag words of ints around +-2**63 (decimal, signed, hex, with '_'), floats, bools and
    strings: ``rcpc import shell`` gives a recipe (no error), which compiles and runs the same
    command line as the script, each word written as the script wrote it."""
    src = tmp_path / "f.sh"
    src.write_text(_script(words))
    imported = import_shell(Workspace.find(REPO), src, "f.sh")  # raised E0806 before the fix
    out = tmp_path / "r.rcp"
    out.write_text(imported.text)
    renders = proof.build(proof.fresh_compiler(REPO), out, {})
    assert run_bash_stubbed(renders["launch.sh"], ["xpk"]) == run_bash_stubbed(src.read_text(), ["xpk"])


# the three definitions the importers had (literals.py's scalar, shell.py's _literal and
# _param, serving.py's _NUMBER), the oracle of what they decided
_OLD_FLAG_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_OLD_FLAG_FLOAT = re.compile(r"[-+]?[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+")
_OLD_SHELL_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_OLD_SHELL_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+")
_OLD_SERVING = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")


def _fits(text: str) -> bool:
    """A literal holds it: an int whose digits are below 2**63, a float that is finite."""
    digits = text.lstrip("+-")
    if re.fullmatch(r"[0-9]+", digits):
        return int(digits) < 2 ** 63
    return abs(float(text)) != float("inf")


@settings(max_examples=examples(400, 150), deadline=None)
@given(text=st.one_of(_INT_WORDS, _FLOAT_WORDS, _OTHER_WORDS, st.text("-+0123456789.eE", max_size=8)))
@example(text="+5")
@example(text="9223372036854775808")
@example(text="-9223372036854775808")
@example(text="1e400")
@example(text="1e-5")
def test_one_number_decides_as_the_three_did_but_where_one_was_wrong(text):
    """:func:`number` decides as each old definition did, except where that one was wrong:
    literals.py's took a '+' sign (the language has no unary '+': a syntax error), ints past
    the 64-bit range and floats that overflow (E0806), all of which did not compile; shell.py's
    and serving.py's took a float only as ``-?D.D`` and an int past the range (E0806): a float
    spelled ``1e-5``, ``3.`` or ``00.5`` is a number the recipe writes back as spelled (they
    made it a string, and a shell param of that default a str param)."""
    kind = number(text)
    flag = bool(_OLD_FLAG_INT.fullmatch(text) or _OLD_FLAG_FLOAT.fullmatch(text))
    assert bool(kind) == (flag and not text.startswith("+") and _fits(text))
    shell = "int" if _OLD_SHELL_INT.fullmatch(text) else "float" if _OLD_SHELL_FLOAT.fullmatch(text) else None
    assert bool(_OLD_SERVING.fullmatch(text)) == (shell is not None)  # serving.py's: shell.py's two in one
    if shell is not None:
        assert kind == (shell if _fits(text) else None)
    else:  # the float spellings shell.py and serving.py made strings, or no number
        assert kind in (None, "float")
    if kind:
        assert scalar(text) == text


@settings(max_examples=examples(150, 60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.one_of(st.integers(-(2 ** 63) + 1, 2 ** 63 - 1).map(str), _EDGE.map(str),
                                 st.floats(allow_nan=False, allow_infinity=False).map(repr), _FLOAT_WORDS),
                       min_size=1, max_size=8).map(lambda ts: [t for t in ts if number(t)]))
@example(texts=["-0", "3.", "00.5", "1e-400", "-9223372036854775807", "9223372036854775807"])
def test_a_number_as_written_compiles_and_is_written_back(texts, ws):
    """Every text :func:`number` accepts is a literal that compiles, of that kind, and is
    written back as spelled (interpolated; flag renders use the same spelling)."""
    names = ws.names("".join(f"X{i} = {t}\nS{i} = f\"{{X{i}}}\"\n" for i, t in enumerate(texts)))
    for i, t in enumerate(texts):
        assert type(names[f"X{i}"]).__name__.lower() == number(t) and names[f"S{i}"].value == t


def test_an_int_no_value_holds_is_kept_as_written(tmp_path):
    """The reported case, end to end: the flag blob holding it stays a string (W1200 says
    why), the others of the file import as before."""
    src = tmp_path / "f.sh"
    src.write_text(_script(["5", "9223372036854775808"]))
    imported = import_shell(Workspace.find(REPO), src, "f.sh")
    assert "9223372036854775808" in imported.text and "cli_value" not in imported.text
    assert any(d.code == "W1200" and "9223372036854775808" in d.message for d in imported.notes)
    try:
        proof.build(proof.fresh_compiler(REPO), _written(tmp_path, imported.text), {})
    except CompileError as exc:  # pragma: no cover - the failure this test is for
        raise AssertionError(exc.diagnostics) from None


def _written(tmp_path: Path, text: str) -> Path:
    out = tmp_path / "r.rcp"
    out.write_text(text)
    return out


@settings(max_examples=examples(150, 60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.one_of(WORDS, st.sampled_from(['{"a": 1}', '{"a": 9223372036854775808}', "[1, 2]",
                                                         "{a: 0x8000000000000000}"])), min_size=1, max_size=8))
@example(texts=["9223372036854775808", "0x8000000000000000", '{"a": 9223372036854775808}', "+5", "1e400"])
def test_every_flag_source_the_helpers_write_compiles(texts, ws):
    """The flag value sources the importers write of a word (flag_scalar, a flag word of a
    library call's command, shell_library._flag_entry, whose mappings are cli_value too)
    compile, each to the value OmegaConf reads from the word; a word no value holds gets no
    source (None), never one that does not compile."""
    from rcpc.domain.maxtext.emit import cli_document
    from rcpc.importer.literals import flag_scalar
    from rcpc.importer.shell_library import _flag_entry

    sources = []
    for t in texts:
        entry = _flag_entry(f"k={t}", [])
        sources += [s for s in (flag_scalar(t), entry and entry[1]) if s is not None]
    names = ws.names("".join(f"X{i} = {s}\n" for i, s in enumerate(sources)))
    for i, s in enumerate(sources):
        if s.startswith("cli_value("):  # the value OmegaConf reads (the literal's escapes are Python's)
            assert to_python(names[f"X{i}"]) == cli_document(ast.literal_eval(s[len("cli_value("):-1]))
