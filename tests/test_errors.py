"""Diagnostics (DESIGN.md §6): every error has a code, a message and the ``path:line:col`` of
its span, syntax errors included; the CLI prints ``file:line:col: error[CODE]: message``, the
source line and a caret, exits 1 and never shows a Python traceback; usage errors exit 2."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.diagnostics import CompileError, format_text
from rcpc.recipe import Compiler
from rcpc.workspace import Workspace

# (source, code, path:line:col, message, help) — help None means "not checked".
SYNTAX = [
    pytest.param('jobset(name = "a" spec = {})\n', "E0001", "1:19",
                 "unexpected 'spec'; expected ')', ',', '(', '+', '-', '.' or ...",
                 "is a ',' missing before this?", id="missing-comma-call"),
    pytest.param("X = [\n    1\n    2\n]\n", "E0001", "3:5",
                 "unexpected '2'; expected ']', ',', '(', '+', '-', '.' or ...",
                 "is a ',' missing before this, or the '[' opened at recipes/r.rcp:1:5 not closed?",
                 id="missing-comma-list"),
    pytest.param('X = {"a": 1 "b": 2}\n', "E0001", "1:13", None,
                 "is a ',' missing before this?", id="missing-comma-dict"),
    pytest.param("X = [1, 2\n", "E0001", "1:9", "unexpected end of file; expected ']', ',', '(', '+', '-', '.' or ...",
                 "the '[' opened at recipes/r.rcp:1:5 is not closed", id="unclosed-bracket-eof"),
    pytest.param('X = {"a": 1,\n\n# trailing comment\n', "E0001", "1:12", None,
                 "the '{' opened at recipes/r.rcp:1:5 is not closed", id="unclosed-brace-eof"),
    pytest.param("X = [1, 2)\n", "E0001", "1:10", "unexpected ')'; expected ']' or ','",
                 "')' does not close the '[' opened at recipes/r.rcp:1:5",
                 id="mismatched-bracket"),
    pytest.param('X = {"a" = 1}\n', "E0001", "1:10", None,
                 'dict entries are written "key": value', id="equals-in-dict"),
    pytest.param("X = len(x: 1)\n", "E0001", "1:10", None,
                 "keyword arguments use '=', dict entries use ':' inside {...}", id="colon-in-call"),
    pytest.param("def f(x):\n    return x\n", "E0001", "1:5", "'def' is not part of the recipe language",
                 "recipes cannot define functions; compute values with expressions and built-ins", id="def"),
    pytest.param("X = 1\nimport os\n", "E0001", "2:8", "'import' is not part of the recipe language",
                 'use load("//path/to/file.rcp", "NAME") to use constants from another file', id="import"),
    pytest.param("from x import y\n", "E0001", "1:6", "'from' is not part of the recipe language", None,
                 id="from"),
    pytest.param("while True:\n    X = 1\n", "E0001", "1:7", "'while' is not part of the recipe language",
                 "there are no loops at statement level; use a list comprehension", id="while"),
    pytest.param("X = 1 Y = 2\n", "E0001", "1:7", None, None, id="two-statements-one-line"),
    pytest.param("X = \n", "E0001", "1:5", None, None, id="missing-value"),
    pytest.param("X = 1 if True\n", "E0001", "1:14", "unexpected end of line; expected 'else' or 'or'", None,
                 id="if-without-else"),
    pytest.param("X = 1\nY = @\n", "E0001", "2:5", "unexpected character '@'", None, id="bad-character"),
    pytest.param("X = 1;\n", "E0001", "1:6", "unexpected character ';'", None, id="semicolon"),
    pytest.param('X = "abc\n', "E0001", "1:5", "unexpected character '\"'",
                 "this string is not closed on its line; use a triple-quoted string for several lines",
                 id="unclosed-string"),
    pytest.param('X = 1\nY = """abc\n\nZ = 2\n', "E0001", "2:5", None,
                 "this triple-quoted string is never closed", id="unclosed-triple-quoted"),
    pytest.param("X = 1 +* 2\n", "E0001", "1:8", None, None, id="operator-operator"),
    pytest.param('load(X, "A")\n', "E0001", "1:6", "unexpected 'X'; expected a string", None,
                 id="load-path-not-a-string"),
    pytest.param(r'X = "a\qb"' + "\n", "E0002", "1:7", r"unknown escape \q", r"write \\ for a backslash",
                 id="bad-escape"),
    pytest.param('X = len(x = 1, 2)\n', "E0001", "1:16", "positional argument after a keyword argument",
                 "put positional arguments first", id="positional-after-keyword"),
    pytest.param('X = f"a{1 +}"\n', "E0001", "1:11", None, None, id="fstring-syntax"),
]


@pytest.mark.parametrize("src, code, where, message, hint", SYNTAX)
def test_syntax_errors(ws, src, code, where, message, hint):
    f = ws.fails(src, dedent=False)
    assert len(f.diags) == 1
    assert f.code == code
    assert f.where == f"recipes/r.rcp:{where}"
    if message is not None:
        assert f.message == message
    if hint is not None:
        assert f.diag.hint == hint


SEMANTIC = [
    pytest.param("X = 1\nX = 2\n", "E0102", "2:1", "'X' is already bound in this file", id="rebind"),
    pytest.param("FOO = 1\nY = FOOO\n", "E0101", "2:5", "unknown name 'FOOO'", id="unknown-name"),
    pytest.param("Y = Z\nZ = 1\n", "E0103", "1:5", "'Z' is used before it is assigned", id="use-before-assign"),
    pytest.param("len = 1\n", "E0104", "1:1", "cannot bind built-in name 'len'", id="rebind-builtin"),
    pytest.param("X = 1 + 1.5\n", "E0301", "1:5", "no float arithmetic ('+'): write the value you mean",
                 id="float-arithmetic"),
    pytest.param('X = {"a": 1, "a": 2}\n', "E0302", "1:14", "key 'a' appears twice in this dict", id="dup-key"),
    pytest.param("X = 1 // 0\n", "E0303", "1:10", "division by zero", id="div-zero"),
    pytest.param("X = [1][1]\n", "E0305", "1:9", "index 1 out of range for list of length 1", id="index"),
    pytest.param('X = "s".nope\n', "E0307", "1:9", "a string has no attribute 'nope'", id="attr"),
    pytest.param('X = tpu_slice("tpu7x:4x4x3")\n', "E0401", "1:15",
                 "TPU v7x has no topology '4x4x3': every dimension must be a power of two", id="tpu"),
    pytest.param('X = maxtext_flags({"a ": 1})\n', "E0303", "1:20",
                 "flag key 'a ' has leading or trailing whitespace", id="flag-key"),
    pytest.param("P = param(int)\n", "E0606", "1:5", "param 'P' has no default and no value was given",
                 id="param-no-default"),
    pytest.param('"orphan"\n', "E0705", "1:1", "this string is not used", id="unused-expr"),
    pytest.param('manifest(name = "a/b", apiVersion = "v1", kind = "K")\n', "E0701", "1:17",
                 "render name 'a/b' is not a plain file name", id="render-name"),
]


@pytest.mark.parametrize("src, code, where, message", SEMANTIC)
def test_semantic_errors(ws, src, code, where, message):
    f = ws.fails(src, dedent=False)
    assert (f.code, f.where, f.message) == (code, f"recipes/r.rcp:{where}", message)


def test_errors_of_one_file_are_collected(ws):
    f = ws.fails("A = B\nC = D\nA = 3\n")
    assert [(d.code, str(d.span)) for d in f.diags] == [
        ("E0101", "recipes/r.rcp:1:5"), ("E0101", "recipes/r.rcp:2:5"), ("E0102", "recipes/r.rcp:3:1")]


def test_formatted_diagnostic(ws):
    f = ws.fails("FLAGS = 1\nX = [\n    FLAG,\n]\n")
    assert f.text == (
        "recipes/r.rcp:3:5: error[E0101]: unknown name 'FLAG'\n"
        "   |\n"
        " 3 |     FLAG,\n"
        "   |     ^^^^\n"
        "help: did you mean 'FLAGS'?"
    )


def test_formatted_diagnostic_with_related_span(ws):
    f = ws.fails("A = 1\nA = 2\n")
    assert f.text == (
        "recipes/r.rcp:2:1: error[E0102]: 'A' is already bound in this file\n"
        "   |\n"
        " 2 | A = 2\n"
        "   | ^\n"
        "  first bound here: recipes/r.rcp:1:1\n"
        "   |\n"
        " 1 | A = 1\n"
        "   | ^\n"
        "help: names are assigned once; use a new name or a conditional expression"
    )


def test_columns_count_characters_not_bytes(ws):
    f = ws.fails('X = "é€😀" + Y\n')
    assert f.where == "recipes/r.rcp:1:13"


# the command line -------------------------------------------------------------------------
LINE = re.compile(r"^(?P<path>[^:\s]+):(?P<line>\d+):(?P<col>\d+): error\[(?P<code>E\d{4})\]: (?P<msg>.+)$")


def _caret(err: str) -> tuple[str, str]:
    """The quoted source line and the caret line of the first diagnostic."""
    lines = err.splitlines()
    src = next(i for i, l in enumerate(lines) if re.match(r"^ \d+ \| ", l))
    return lines[src], lines[src + 1]


@pytest.mark.parametrize("src, code, line, col, width", [
    ("X = 1\nY = [1, 2\nZ = 3\n", "E0001", 3, 1, 1),
    ('N = 3\nX = f"{N}-{M}"\n', "E0101", 2, 12, 1),
    ("A = 1\n  B = A + 2.5\n", "E0301", 2, 7, 7),
    ('A = {"k": 1}["kk"]\n', "E0305", 1, 14, 4),
])
def test_cli_prints_location_source_line_and_caret(ws, cli, src, code, line, col, width):
    ws.write("recipes/r.rcp", src, dedent=False)
    r = cli("render", "recipes/r.rcp")
    assert r.code == 1
    assert r.out == ""
    assert "Traceback" not in r.err
    first = LINE.match(r.err.splitlines()[0])
    assert first, r.err
    assert (first["path"], int(first["line"]), int(first["col"]), first["code"]) == ("recipes/r.rcp", line, col, code)
    quoted, caret = _caret(r.err)
    assert quoted == f" {line} | {src.splitlines()[line - 1]}"
    prefix = f" {' ' * len(str(line))} | "
    assert caret == prefix + " " * (col - 1) + "^" * width


def test_cli_error_in_loaded_file(ws, cli):
    ws.write("recipes/lib/mesh.rcp", 'AXES = 4\nMESH = AXES + "x"\n')
    ws.write("recipes/r.rcp", 'X = 1\n\nload("lib/mesh.rcp", "MESH")\n')
    r = cli("render", "r")
    assert r.code == 1 and "Traceback" not in r.err
    lines = r.err.splitlines()
    assert lines[0] == "recipes/lib/mesh.rcp:2:8: error[E0301]: unsupported operand types for +: int and string"
    assert "  loaded from: recipes/r.rcp:3:6" in lines
    assert ' 3 | load("lib/mesh.rcp", "MESH")' in lines


def test_cli_load_cycle(ws, cli):
    ws.write("recipes/lib/a.rcp", 'load("./b.rcp", "B")\nA = B\n')
    ws.write("recipes/lib/b.rcp", 'load("../lib/a.rcp", "A")\nB = A\n')
    ws.write("recipes/r.rcp", 'load("lib/a.rcp", "A")\n')
    r = cli("render", "r")
    assert r.code == 1 and "Traceback" not in r.err
    assert r.err.splitlines()[0] == (
        "recipes/lib/b.rcp:1:6: error[E0202]: load cycle: recipes/r.rcp:1 -> recipes/lib/a.rcp:1"
        " -> recipes/lib/b.rcp:1 -> recipes/lib/a.rcp")


def test_cli_set_errors(ws, cli):
    ws.write("recipes/r.rcp", "TUNED = param(bool, default = False)\n")
    r = cli("render", "r", "--set", "TUNNED=true")
    assert r.code == 1
    assert r.err.splitlines() == ["error[E0601]: --set TUNNED: no such param", "help: did you mean 'TUNED'?"]
    r = cli("render", "r", "--set", "TUNED=maybe")
    # a bad value points at the param's declaration, which shows its type
    assert r.code == 1 and r.err.startswith("recipes/r.rcp:1:9: error[E0602]: --set TUNED=maybe: not a bool")
    assert "help: write true, false, True or False" in r.err


def test_cli_bad_utf8_and_bad_toml(ws, cli):
    (ws.root / "recipes").mkdir()
    (ws.root / "recipes" / "r.rcp").write_bytes(b'X = 1\nY = "\xff"\n')
    r = cli("render", "r")
    assert r.code == 1 and "Traceback" not in r.err
    assert r.err.startswith("recipes/r.rcp:2:1: error[E0003]: recipes/r.rcp is not UTF-8 text")
    (ws.root / "rcp.toml").write_text("recipe_dirs = [\n")
    r = cli("render", "r")
    assert r.code == 1 and "error[E0901]" in r.err and "Traceback" not in r.err


@pytest.mark.parametrize("argv", [
    ["frobnicate"],
    ["render"],
    ["render", "no_such_recipe"],
    ["render", "r", "--variant", "default", "--set", "A=1"],
    ["render", "r", "no_such_render"],
    ["build", "--bogus-option"],
    [],
])
def test_cli_usage_errors_exit_2(ws, cli, argv):
    ws.write("recipes/r.rcp", 'manifest(name = "m", apiVersion = "v1", kind = "K")\n')
    r = cli(*argv)
    assert r.code == 2, r
    assert "Traceback" not in r.err
    assert r.err.strip()


def test_cli_success_exits_0(ws, cli):
    ws.write("recipes/r.rcp", 'manifest(name = "m", apiVersion = "v1", kind = "K")\n')
    r = cli("render", "r", "m")
    assert (r.code, r.out, r.err) == (0, "apiVersion: v1\nkind: K\nmetadata:\n  name: m\n", "")


# no input crashes the compiler -------------------------------------------------------------
TOKENS = ["X", "Y", "=", "==", "(", ")", "[", "]", "{", "}", ",", ":", ".", "+", "-", "*", "//", "%",
          "1", "1e-6", '"s"', "'t'", 'f"{X}"', 'f"{', '"""a', "True", "None", "if", "else", "for", "in",
          "not", "and", "or", "load", "\n", " ", "#c", "\\", "param", "maxtext_flags", "tpu_slice",
          "range", "len", "variant", "jobset", "def", "$", "@", "\t", "\r\n", "é", "0123", "_x"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(TOKENS), max_size=30))
@example(["X", "=", '"""a'])
@example(["X", "=", "[", "1", ",", "\n"])
@example(["X", "=", 'f"{'])
@example(["load", "(", '"s"', ")"])
@example(["X", "=", "(", "(", "(", "(", "1"])
def test_any_input_gives_a_result_or_diagnostics(tmp_path_factory, tokens):
    """Random token soup: compiling never raises anything but CompileError, and every
    diagnostic points inside the file and formats."""
    root = tmp_path_factory.mktemp("fuzz")
    (root / "rcp.toml").write_text("")
    (root / "recipes").mkdir()
    text = " ".join(tokens)
    path = root / "recipes" / "r.rcp"
    path.write_text(text, encoding="utf-8", newline="")
    compiler = Compiler(Workspace.find(root))
    try:
        compiler.build(path.resolve())
    except CompileError as exc:
        lines = text.split("\n")
        for d in exc.diagnostics:
            assert re.fullmatch(r"E\d{4}", d.code)
            if d.span is not None and d.span.path == "recipes/r.rcp":
                assert 1 <= d.span.line <= len(lines) + 1
                assert d.span.col >= 1
            assert format_text(d, compiler.sources)


@pytest.mark.parametrize("src", [
    "X = " + "[" * 3000 + "]" * 3000,
    "X = " + "-" * 3000 + "1",
    "X = 1" + " + 1" * 3000,
    'X = "a"' + ".upper()" * 3000,
    'X = f"{' + "-" * 3000 + '1}"',
])
def test_deep_nesting_is_an_error_not_a_crash(ws, cli, src):
    ws.write("recipes/r.rcp", "Y = 1\n" + src + "\n", dedent=False)
    r = cli("render", "r")
    assert r.code == 1
    assert "Traceback" not in r.err and "RecursionError" not in r.err
    assert re.match(r"^recipes/r\.rcp:\d+:\d+: error\[E0801\]: expression nested", r.err)


def test_moderate_nesting_is_fine(ws):
    assert ws.py("[" * 60 + "1" + "]" * 60) == eval("[" * 60 + "1" + "]" * 60)
    assert ws.py("1" + " + 1" * 150) == 151
