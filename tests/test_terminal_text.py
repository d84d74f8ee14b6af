"""Text from the input never reaches the terminal raw: every character of a printed
diagnostic's message, notes, hint, related labels and paths that is not printable is shown as
the escape Python's ``repr`` writes (:func:`rcpc.core.diagnostics.visible`), as the quoted
source line already replaced it. An attack found an ESC sequence, a C1 control (U+009B CSI)
or a bidi override (U+202E, "Trojan Source") in a ``--set`` value, a values file's key, an
rcp.toml string or a file name printed raw by ``format_text``, free to clear the screen or
reorder what rcpc said."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import examples
from rcpc.core import diagnostics
from rcpc.core.diagnostics import MESSAGE_WIDTH, Diagnostic, format_text, visible
from rcpc.core.source import Source, Span

# Characters the attack used, and their kin: ESC, C1 controls, bidi embeddings, overrides and
# isolates, zero-width and other format characters, line/paragraph separators, CR, NUL, DEL, a
# lone surrogate (an undecodable file name), an unassigned code point, no-break space.
HOSTILE = ("\x1b", "\x1b[2J", "\x1b]8;;http://x\x1b\\", "\x9b", "\x85", "\x9d", "\u202a", "\u202b", "\u202c",
           "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200b", "\u200e", "\u200f", "\ufeff",
           "\u2028", "\u2029", "\r", "\n", "\t", "\x00", "\x07", "\x08", "\x7f", "\udcff", "\ud800", "\U000e0001",
           "\u0378", "\xa0", "\u3000")
TEXT = st.lists(st.one_of(st.sampled_from(HOSTILE), st.characters(), st.text(max_size=4)),
                max_size=12).map("".join)
# rcpc's own colour codes: the only non-printable characters the coloured form may hold
OWN_CODES = sorted({*diagnostics._COLORS.values(), diagnostics._BOLD, diagnostics._BLUE, diagnostics._GREEN,
                    diagnostics._RESET}, key=len, reverse=True)
_ESCAPE = re.compile(r"\\(x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|[tnr])")


def unescape(shown: str) -> str:
    """The inverse of :func:`visible` for text without a backslash of its own."""
    def one(m):
        e = m.group(1)
        return {"t": "\t", "n": "\n", "r": "\r"}.get(e) or chr(int(e[1:], 16))
    return _ESCAPE.sub(one, shown)


def uncolored(text: str) -> str:
    for code in OWN_CODES:
        text = text.replace(code, "")
    return text


@settings(max_examples=examples(300, 100), deadline=None)
@given(message=TEXT, hint=st.none() | TEXT, notes=st.lists(TEXT, max_size=2),
       related=st.lists(st.tuples(TEXT, TEXT, st.integers(0, 2)), max_size=2), path=TEXT,
       line=st.integers(0, 2), source=TEXT)
@example(message="bad value '\x1b[2J\u202eevil'", hint="did you mean '\x9b31m'?", notes=["\u2028n\rx"],
         related=[("set \u2066here", "recipes/\x1b]8;;x\x07r.rcp", 1)], path="r\x00.rcp", line=1,
         source="X = \"\u202e\x1b[2J\"")  # the attack's shapes
def test_a_printed_diagnostic_holds_no_character_that_is_not_printable(message, hint, notes, related, path, line,
                                                                       source):
    """The text form of any diagnostic, colour off and on, holds no character that is not
    printable but the newlines between its lines and, with colour, rcpc's own colour codes;
    the coloured form is the plain one with those codes added; each piece of text is shown
    as :func:`visible` writes it."""
    spans = tuple((label, Span(p, n, 1, n, 2)) for label, p, n in related)
    d = Diagnostic("E0602", message, Span(path, line, 1, line, 3), hint=hint or None, related=spans,
                   notes=tuple(notes))
    sources = {path: Source(path, source + "\n")}
    sources.update((p, Source(p, source)) for _, p, _ in related)
    plain = format_text(d, sources)
    colored = format_text(d, sources, color=True)
    for text in (plain, uncolored(colored)):
        for row in text.split("\n"):
            assert row.isprintable(), ascii(row)
    assert uncolored(colored) == plain
    rows = plain.split("\n")
    assert visible(diagnostics._bounded(message)) in rows[0]
    for piece in (hint, *notes, *(label for label, _, _ in related), *(p for _, p, _ in related)):
        if piece:
            assert visible(diagnostics._bounded(piece)) in plain


@settings(max_examples=examples(500, 200), deadline=None)
@given(text=TEXT)
@example(text="\x1b\u202e\x9b\udcff\U000e0001\n\r\t\x00")
def test_visible_is_printable_and_says_which_characters_it_escaped(text):
    """:func:`visible` is printable (with ``lines``, but for newlines), leaves printable text
    alone, and for text without a backslash of its own can be read back: distinct inputs stay
    distinct, each escape naming the code point it stands for."""
    shown = visible(text)
    assert shown.isprintable()
    assert all(row.isprintable() for row in visible(text, lines=True).split("\n"))
    if text.isprintable():
        assert shown == text
    if "\\" not in text:
        assert unescape(shown) == text
        assert unescape(visible(text, lines=True)) == text


@given(a=TEXT, b=TEXT)
@settings(max_examples=examples(200, 100), deadline=None)
def test_distinct_messages_print_distinct_text(a, b):
    """Two diagnostics whose messages differ (and hold no backslash, the one character shown
    as itself that an escape begins with) print differently."""
    a, b = a.replace("\\", "/")[:MESSAGE_WIDTH], b.replace("\\", "/")[:MESSAGE_WIDTH]
    fa, fb = (format_text(Diagnostic("E0601", m, None), {}) for m in (a, b))
    assert (fa == fb) == (a == b)


# ---- end to end: the attack's inputs through the CLI

RECIPE = 'TUNED = param(bool, default = False)\nmanifest(name = "m", apiVersion = "v1", kind = "K")\n'


def _raw_free(err: str) -> None:
    assert all(row.isprintable() for row in err.split("\n")), ascii(err)


def test_a_set_value_and_name_with_esc_and_a_bidi_override_are_shown_escaped(ws, cli):
    ws.write("recipes/r.rcp", RECIPE)
    r = cli("render", "r", "--set", "TUNED=\x1b[2J\u202emaybe")
    assert r.code == 1
    _raw_free(r.err)
    assert "error[E0602]: --set TUNED=\\x1b[2J\\u202emaybe: not a bool" in r.err, r.err
    r = cli("render", "r", "--set", "TUN\u202eED\x9b=true")
    assert r.code == 1
    _raw_free(r.err)
    assert r.err.splitlines() == ["error[E0601]: --set TUN\\u202eED\\x9b: no such param in r",
                                  "help: did you mean 'TUNED'?"], r.err


def test_a_values_file_key_with_esc_and_a_bidi_override_is_shown_escaped(ws, cli):
    ws.write("recipes/r.rcp", RECIPE)
    ws.write("v.toml", '"TUN\\u001bED\\u202e" = true\n')
    r = cli("render", "r", "--values", "v.toml")
    assert r.code == 1
    _raw_free(r.err)
    assert "sets 'TUN\\x1bED\\u202e', which is not a param" in r.err, r.err


def test_an_rcp_toml_string_in_a_hint_is_shown_escaped(ws, cli):
    """The hint of a value of the wrong type repeats the user's own strings (the line to
    write); written as a TOML string, the escape means the same character there."""
    ws.write("recipes/r.rcp", RECIPE)
    ws.write("rcp.toml", 'output_dir = ["out\\u202e\\u2066\\u0085"]\n')
    r = cli("check")
    assert r.code == 1
    _raw_free(r.err)
    assert 'help: write output_dir = "out\\u202e\\u2066\\x85"' in r.err, r.err


@pytest.mark.parametrize("name", ["r\x1b[2J", "\u202er", "r\x9b", "r\r"])
def test_a_file_name_with_a_control_character_is_shown_escaped(ws, cli, name):
    (ws.root / "recipes").mkdir()
    try:
        (ws.root / "recipes" / f"{name}.rcp").write_text("X = \n", encoding="utf-8")
    except OSError:  # a file system that refuses the name
        pytest.skip(f"the file system refuses {name!r}")
    r = cli("check")
    assert r.code == 1
    _raw_free(r.err)
    assert f"recipes/{visible(name)}.rcp" in r.err, r.err



# ---- every text a command prints: names, paths and values from the input, escaped

HOSTILE_RECIPE = r'''MODE = param(str, default = "a\u202eb\x1b[2J", doc = "the mode \u2066\x1b]8;;x\x07 here\x9b")
F = maxtext_flags({"run_name": MODE, "steps": 1})
flag_file(name = "trainer", flags = F)
variant("default")
variant("evil", set = {"MODE": "\x1b[31m\u202eevil\x9b"}, against = "default", changes = {"trainer": ["run_name"]})
'''
R = "r\u202e"  # a recipe's name (its file's) with a bidi override: a name rcpc accepts
COMMANDS = [
    ("check",), ("lint",), ("build", "-o", "out\x1b[2J\u202e"), ("params", R), ("explain", R, "trainer", "run_name"),
    ("explain", R, "trainer", "--effective"), ("diff", R, "--variant", "evil"),
    ("diff", R, "--variant", "evil", "--stat"), ("fmt", "--check"), ("test",), ("test", "--snapshot-update"),
    ("render", "no\x1b[2Jsuch\u202e"), ("render", R, "--set", "MODE\x9b=1"), ("build", "--bog\x1b[2Jus\u202e"),
    ("import", "shell", "l\u202e.sh"),
    # JSON and SARIF: the same data, what is not printable written as JSON escapes
    ("params", R, "--format", "json"), ("explain", R, "trainer", "run_name", "--format", "json"),
    ("diff", R, "--variant", "evil", "--format", "json"), ("render", R, "--set", "MODE\x9b=1", "--diagnostics", "json"),
    ("render", R, "--set", "MODE\u202e=1", "--diagnostics", "sarif"),
    # read by people in review and CI: markdown for a pull request, GitHub annotations
    ("diff", R, "--variant", "evil", "--format", "markdown"),
    ("render", R, "--set", "MODE\u202e=1", "--diagnostics", "github"),
]


@pytest.mark.parametrize("argv", COMMANDS, ids=ascii)
def test_what_a_command_prints_holds_no_character_that_is_not_printable(ws, cli, argv):
    """A workspace whose recipe name, param doc, strings and variants hold ESC sequences, C1
    controls and bidi overrides: what each command prints as text for people (status lines,
    tables, explanations, diff reports, usage errors, diagnostics) holds none of them raw."""
    ws.write(f"recipes/{R}.rcp", HOSTILE_RECIPE)
    (ws.root / "l\u202e.sh").write_text('export MODEL="q\u202e\x1bx"\nexport FLAGS="run_name=${MODEL} steps=1"\n'
                                         'python3 -m maxtext.train "$FLAGS"\n', encoding="utf-8")
    r = cli(*argv)
    for text in (r.out, r.err) if argv[0] != "import" else (r.err,):  # import's stdout is the recipe: data
        assert all(row.isprintable() for row in text.split("\n")), ascii(text)
    assert r.out or r.err
    if "json" in argv or "sarif" in argv:
        doc = json.loads(r.err if "--diagnostics" in argv and "json" in argv else r.out)
        assert {"\u202e", "\x9b"} & set(json.dumps(doc, ensure_ascii=False))  # the data holds them as they were


JSON_DATA = st.recursive(st.none() | st.booleans() | st.integers() | TEXT,
                         lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                         max_leaves=8)


@settings(max_examples=examples(300, 100), deadline=None)
@given(data=JSON_DATA)
@example(data={"k\u202e": ["\x9b", "\U000e0001", "\udcff", "\u2028", "\x1b[2J"]})
@example(data={"\ud800\udcff": None})
def test_printed_json_is_the_same_data_and_printable(data):
    """A command's JSON (:func:`rcpc.cli.run.json_text`) reads back as the data it was made
    of, holds nothing that is not printable but its newlines, and is ``json.dumps``' text
    where that already was."""
    from rcpc.cli.run import json_text

    text = json_text(data)
    assert json.loads(text) == json.loads(json.dumps(data))  # data (a surrogate pair of two escapes is one)
    assert all(row.isprintable() for row in text.split("\n")), ascii(text)
    plain = json.dumps(data, indent=2, ensure_ascii=False)
    if plain.replace("\n", "").isprintable():
        assert text == plain


def test_a_golden_failure_shows_its_paths_escaped(tmp_path):
    """``pytest rcp.toml``: what rcpc's plugin prints (a golden failure's report, the summary of
    what changed, the goldens ``--snapshot-update`` wrote) shows a recipe name's bidi override
    escaped; pytest's own lines (node ids among them) are pytest's."""
    import subprocess
    import sys

    (tmp_path / "rcp.toml").write_text("")
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / f"{R}.rcp").write_text('flag_file(name = "trainer", flags = maxtext_flags({"steps": 1}))\n'
                                                  'variant("default")\n', encoding="utf-8")
    def pytest(*args):
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:jaxtyping",
                               "rcp.toml", *args], cwd=tmp_path, capture_output=True, text=True, encoding="utf-8",
                              timeout=300)

    r = pytest()
    assert r.returncode == 1
    assert "golden golden/r\\u202e/default/trainer.flags is missing" in r.stdout, r.stdout[-3000:]
    assert "\nmissing goldens: r\\u202e/default/trainer.flags\n" in r.stdout, r.stdout[-3000:]
    r = pytest("--snapshot-update")
    assert r.returncode == 0
    assert "\nwritten   golden/r\\u202e/default/trainer.flags\n" in r.stdout, r.stdout[-3000:]
