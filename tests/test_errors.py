"""Diagnostics (DESIGN.md §6): every error has a code, a message and the ``path:line:col`` of
its span, syntax errors included; the CLI prints ``file:line:col: error[CODE]: message``, the
source line and a caret, exits 1 and never shows a Python traceback; usage errors exit 2.

Which diagnostic each wrong input gets (code, place, message, hint) is specified in the
language itself: ``tests/spec/*.rcp`` (``tests/test_spec.py``); this file tests how they are
printed, the command line, and inputs no spec file can hold (random, huge, not UTF-8)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from rcpc.core.diagnostics import CompileError, format_text
from rcpc.domain.recipe import Compiler
from rcpc.domain.workspace import Workspace

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


PATHS = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters=":"), min_size=1,
                max_size=20)


@settings(max_examples=100, deadline=None)
@given(path=PATHS, related=st.lists(st.tuples(PATHS, st.integers(0, 3)), max_size=3), line=st.integers(0, 3))
@example(path="recipes/r.rcp", related=[("--flag trainer.steps=10", 0)], line=573)  # the report
def test_a_span_without_a_line_is_shown_as_its_path(path, related, line):
    """A span with no line (a whole file, a --flag) is shown as its path, as the primary span
    or a related one, never as ``path:0:0`` (``the new value is made here: --flag
    trainer.steps=10:0:0``); one with a line as ``path:line:col``."""
    from rcpc.core.diagnostics import Diagnostic, visible
    from rcpc.core.source import Span

    assume(line or not path.startswith("<"))  # <command line> and its kin are no file: not shown
    spans = [(f"label {i}", Span(p, n, n, n, n + 1)) for i, (p, n) in enumerate(related)]
    d = Diagnostic("E0612", "m", Span(path, line, 1, line, 2), related=tuple(spans), hint="h")
    text = format_text(d, {})
    head = text.splitlines()[0]
    shown = visible(path)  # a path's unassigned or format characters are shown escaped
    assert head.startswith(f"{shown}:{line}:1: error[E0612]" if line else f"{shown}: error[E0612]"), head
    for label, span in spans:
        assert f"  {label}: {visible(span.path)}:{span.line}:{span.line}" in text if span.line else \
            f"  {label}: {visible(span.path)}\n" in text + "\n"
    assert f"{shown}:0:" not in text and all(f"{visible(p)}:0:" not in text for p, _ in related)


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


def test_an_unknown_param_names_the_recipe_that_lacks_it(ws, cli):
    """A build of several recipes with --set or a values file: the recipe without the param is
    named (--set TUNED=true said "no such param", not of which recipe: found by a user trial)."""
    ws.write("recipes/a.rcp", "TUNED = param(bool, default = False)\nvariant(\"default\")\n")
    ws.write("recipes/b.rcp", "N = param(int, default = 1)\nvariant(\"default\")\n")
    ws.write("v.toml", "TUNED = true\n")
    r = cli("build", "--set", "TUNED=true")
    assert r.code == 1 and "error[E0601]: --set TUNED: no such param in b" in r.err, r.err
    r = cli("build", "--values", "v.toml")
    assert r.code == 1 and "values file v.toml sets 'TUNED', which is not a param of b" in r.err, r.err


def test_cli_set_errors(ws, cli):
    ws.write("recipes/r.rcp", "TUNED = param(bool, default = False)\n")
    r = cli("render", "r", "--set", "TUNNED=true")
    assert r.code == 1
    assert r.err.splitlines() == ["error[E0601]: --set TUNNED: no such param in r", "help: did you mean 'TUNED'?"]
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


@pytest.mark.parametrize("count", [0, 1, 2])
def test_the_build_line_counts_renders_in_english(ws, cli, count, tmp_path):
    """``rcpc: 1 render of 1 recipe(s)`` (it said ``1 renders``)."""
    ws.write("recipes/r.rcp", "".join(f'manifest(name = "m{i}", apiVersion = "v1", kind = "K")\n'
                                      for i in range(count)) + 'variant("default")\n')
    r = cli("build", "-o", str(tmp_path / "out"))
    assert r.code == 0 and f"rcpc: {count} {'render' if count == 1 else 'renders'} of 1 recipe(s)" in r.err, r.err


def test_the_check_line_counts_what_failed_and_what_warned(ws, cli):
    """``rcpc check``'s last line says how many recipes failed (their variants are not
    counted: a new user saw 13 variants where a clean run had 17, with no word why) and how
    many warnings it printed (it said "ok" after two warnings)."""
    ws.write("recipes/ok.rcp", 'variant("default")\nvariant("more")\n')
    ws.write("recipes/bad.rcp", "X = undefined_name\n")
    ws.write("recipes/warned.rcp", "UNUSED = 1\nvariant(\"default\")\n")
    r = cli("check")
    assert r.code == 1 and r.err.count("warning[") == 1, r.err
    assert r.err.rstrip().endswith("rcpc: checked 3 recipe(s) (1 failed), 3 variant(s), 0 libraries: "
                                   "1 error(s), 1 warning(s)"), r.err


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


@pytest.mark.parametrize("lib", [
    "def f(a, a):\n    return a\n",              # E0653, a definition error
    'X = 1\nvariant("x")\n',                      # E0706, a statement a library cannot hold
    "X = UNKNOWN\n",                              # E0101, an evaluation error
])
@pytest.mark.parametrize("loaders", [0, 1, 2])
def test_check_reports_a_library_error_once(ws, cli, lib, loaders):
    """A library error is found by each recipe that loads it and by the library's own
    evaluation; rcpc check prints it once (the first time, with its load site) and counts it
    once."""
    ws.write("recipes/lib/f.rcp", lib, dedent=False)
    ws.write("recipes/other.rcp", "Y = 1\n", dedent=False)  # a recipe that does not load it
    for i in range(loaders):
        ws.write(f"recipes/r{i}.rcp", 'load("//recipes/lib/f.rcp", "X")\n' if "X =" in lib else
                 'load("//recipes/lib/f.rcp", "f")\n', dedent=False)
    r = cli("check")
    assert r.code == 1
    heads = re.findall(r"^recipes/lib/f\.rcp:\d+:\d+: error\[E\d+\]", r.err, re.M)
    assert len(heads) == 1, r.err
    assert re.search(r": 1 error\(s\)(, \d+ warning\(s\))?$", r.err.rstrip()), r.err  # (other.rcp: Y unused)
    assert ("loaded from: recipes/r0.rcp" in r.err) == (loaders > 0)


@pytest.mark.parametrize("char", sorted("|&^~@;/"))
@pytest.mark.parametrize("where", ["X = 1 {} 2\n", "def f(x):\n    return x {} 2\n"])
def test_an_operator_rcpc_lacks_says_what_to_write(ws, char, where):
    """A character of Python's or Starlark's operators that rcpc's language lacks (``|`` to
    merge dicts, found by a user trial) is E0001 at it, with what to write instead."""
    from rcpc.core.syntax.parser import _UNKNOWN_OPERATORS

    text = where.format(char)
    f = ws.fails(text, path="recipes/lib/l.rcp" if text.startswith("def") else "recipes/r.rcp")
    (d,) = f.diags
    assert (d.code, d.span.col) == ("E0001", text.splitlines()[-1].index(char) + 1)
    assert d.hint == _UNKNOWN_OPERATORS[char] and f"'{char}'" in d.hint


@pytest.mark.parametrize("place", ["recipe", "library", "function"])
@pytest.mark.parametrize("value, docstring", [('"""Doc."""', True), ("'doc'", True), ('{"a": 1}', False), ("[1]", False)])
def test_an_unused_value_is_told_what_to_do_where_it_is(ws, place, value, docstring):
    """E0705 of a value on its own line: a string is told it is no docstring (write # comments),
    anywhere; another value in a library is not told to make it a render, which a library may
    not declare (both found by a user trial)."""
    from rcpc.core.evaluate import DOCSTRING_HINT

    if place == "recipe":
        f = ws.fails(f"{value}\nX = 1\n")
    elif place == "library":
        ws.write("recipes/lib/l.rcp", f"{value}\nY = 1\n")
        f = ws.fails('load("//recipes/lib/l.rcp", "Y")\nX = Y\n')
    else:
        ws.write("recipes/lib/l.rcp", f"def g(x):\n    {value}\n    return x\n")
        f = ws.fails('load("//recipes/lib/l.rcp", "g")\nX = g(1)\n')
    d = next(d for d in f.diags if d.code == "E0705")
    if docstring:
        assert d.hint == DOCSTRING_HINT
    else:
        assert d.hint != DOCSTRING_HINT and (("make it a render" in d.hint) == (place == "recipe")), d.hint
