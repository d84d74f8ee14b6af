"""A bare word of a flag blob keeps its spelling (issue 39: ``run_name=on`` was a false
E1203). The shell passes ``key=text`` to MaxText as written, and OmegaConf reads ``text``
as YAML: ``on`` is the bool true, ``null`` None, ``0x10`` 16, ``.inf`` a float. The importer
wrote the string ``"on"``, which a flag set writes ``run_name='on'`` (another word), so its
own proof failed. Now such a word is ``cli_value("on")``: the value MaxText reads, written
back as written. A value MaxText's schema refuses for its key (the bool true for the str
``run_name``: pydantic refuses it, so the published ``run_name=on`` stops MaxText) is then
that refusal, E0311 at the script's word, as any value the schema refuses.

The property: for generated bare words (YAML 1.1's bools, nulls and numbers in every
spelling OmegaConf reads, and plain text), the import is equal, the flag set's token is the
word (what MaxText gets), and bash runs the same command line from the render as from the
script. (A bare ``~`` right after ``=`` is not among them: bash expands it to the home
directory in the shell that runs the command, so it is not text MaxText gets.)
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import run_bash_stubbed
from test_import_shapes import COMMAND, _import
from rcpc.core.diagnostics import CompileError
from rcpc.domain.maxtext.emit import cli_reading
from rcpc.domain.maxtext.flagset import argv as flag_argv
from rcpc.importer import proof

REPO = Path(__file__).resolve().parents[1]
SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Spellings OmegaConf reads as something other than the string (YAML 1.1 with its float
# resolver), in their case variants, and plain text beside them.
_YAML_WORDS = ["on", "off", "On", "OFF", "yes", "no", "Yes", "NO", "true", "False", "TRUE", "null", "Null", "NULL",
               "1e3", "1E3", "-1e-3", "0x10", "0X1f", "0o17", "017", "0b101", "1_000", "+5", "1:30", ".inf",
               "-.inf", "+.Inf", ".nan", ".NaN", "1.", "-0.5", "3.0e+2"]
_BARE = st.sampled_from(_YAML_WORDS) | st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.:+-]{0,6}", fullmatch=True)
# A key of each type a reading can have, so that MaxText's schema takes the value.
_KEYS = {bool: "enable_checkpointing", int: "steps", float: "adam_eps_root", str: "run_name",
         type(None): "tokenizer_path"}


def _script(words: list) -> str:
    return f'ARGS="{" ".join(words)}"\n' + COMMAND


def _launched(out: Path) -> list:
    """The words bash runs from the recipe's render (as the import's proof renders it)."""
    (ours,) = run_bash_stubbed(proof.renders(proof.fresh_compiler(REPO), out.resolve(), {})["launch.sh"], ["xpk"])
    return ours


@SETTINGS
@given(word=_BARE, typed=st.booleans())
@example(word="on", typed=False)  # the report: run_name=on (MaxText's str key refuses the bool: W1208)
@example(word="on", typed=True)
@example(word="NULL", typed=True)
@example(word="0x10", typed=True)
@example(word=".inf", typed=True)
@example(word="1e3", typed=True)
@example(word="0:", typed=False)  # a mapping for OmegaConf: kept as a string (a TODO), equal
def test_a_bare_word_keeps_its_spelling(word, typed, tmp_path):
    """``key=WORD`` imports equal (never E1203), the flag set's token is ``key=WORD`` (what
    MaxText gets: its value is OmegaConf's reading), and bash launches the same words from
    the render as from the script; with ``typed``, the key is one whose type takes the
    reading (rcpc build launches the word), else ``run_name``, a str: a reading that is not a
    string is MaxText's refusal, E0311 at the script's word (never E1203)."""
    try:
        reading, scalar = cli_reading(word), True
    except ValueError:  # NotAScalar
        reading, scalar = word, False
    key = _KEYS[type(reading)] if typed else "run_name"
    words = ["model_name=llama2-7b", f"{key}={word}"]
    text = _script(words)
    if not typed and type(reading) in (bool, int, float):  # MaxText's str run_name refuses them (None is "")
        try:
            _import(tmp_path, "b.sh", text)
        except CompileError as exc:  # at the script's word, as MaxText's refusal: not the import's fault
            (d,) = exc.diagnostics
            assert d.code == "E0311" and (d.span.line, d.span.col) == (1, text.index("run_name=") + 1), d
            return
        raise AssertionError(f"run_name={word} is not a string for MaxText")
    try:
        imported, out = _import(tmp_path, "b.sh", text)
    except CompileError as exc:  # the report's kind: no word makes the import's proof fail
        raise AssertionError(f"{word!r}: {[d.code + ' ' + d.message for d in exc.diagnostics]}") from None
    assert imported.check(proof.fresh_compiler(REPO), out) == []
    if not scalar:  # read as a mapping or list (0:): no flag value spells it
        assert "kept as a string" in imported.text
        return
    assert "kept as a string" not in imported.text
    flags = proof.fresh_compiler(REPO).bindings(out.resolve())["ARGS"]
    assert flag_argv(flags) == words
    assert _launched(out) == run_bash_stubbed(text, ["xpk"])[0]
    refused = [n for n in imported.notes if n.code == "W1208"]
    (built,) = run_bash_stubbed(proof.build(proof.fresh_compiler(REPO), out, {})["launch.sh"], ["xpk"]) \
        if not refused else (None,)
    assert refused or built == run_bash_stubbed(text, ["xpk"])[0]  # rcpc build launches the word as written


def test_cli_value_writes_its_text_and_checks_the_reading(tmp_path):
    """``cli_value(text)`` is the value OmegaConf reads, spelled ``text`` in flags; a text
    read as a list or mapping is E1220."""
    recipe = tmp_path / "c.rcp"
    recipe.write_text('F = maxtext_flags({"enable_checkpointing": cli_value("off"), "steps": cli_value("0x10"), '
                      '"run_name": cli_value("n")})\nX = cli_value("[1, 2]")\n')
    try:
        proof.fresh_compiler(REPO).bindings(recipe.resolve())
    except CompileError as exc:
        assert [d.code for d in exc.diagnostics] == ["E1220"]
    else:
        raise AssertionError("cli_value of a list is not an error")
    recipe.write_text('F = maxtext_flags({"enable_checkpointing": cli_value("off"), "steps": cli_value("0x10"), '
                      '"run_name": cli_value("n")})\n')
    flags = proof.fresh_compiler(REPO).bindings(recipe.resolve())["F"]
    assert flag_argv(flags) == ["enable_checkpointing=off", "steps=0x10", "run_name=n"]
    assert [e.value.value for layer in flags.layers for e in layer.entries] == [False, 16, "n"]
