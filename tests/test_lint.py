"""``rcpc lint`` (:func:`rcpc.domain.lint.lint`): each finding, where it is not reported, and
silencing with ``# rcpc: ignore[CODE]``."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.core.diagnostics import format_text
from rcpc.domain.lint import CODES, ignored_codes, lint
from rcpc.domain.recipe import Compiler
from rcpc.core.source import Source
from rcpc.core.syntax.parser import parse
from rcpc.domain.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]
LIB = "recipes/lib/consts.rcp"
RECIPE = "recipes/r.rcp"
CM = 'manifest(name = "m", apiVersion = "example.com/v1", kind = "Settings", data = {"v": V})\n'


def run(ws, *paths):
    compiler = Compiler(Workspace.find(ws.root))
    return lint(compiler, [str(ws.root / p) for p in paths] if paths else [])


def codes(diags):
    return [(d.code, d.span.line if d.span else None) for d in diags]


# L0001 / L0002 / L0003: unused bindings ----------------------------------------------------
def test_unused_constant_in_a_recipe(ws):
    ws.write(RECIPE, 'V = "x"\nUNUSED = 1\n' + CM)
    (d,) = run(ws, RECIPE)
    assert (d.code, d.severity, d.span.line, d.span.col) == ("L0001", "warning", 2, 1)
    assert d.message == "constant 'UNUSED' is assigned but never used"


def test_unused_param(ws):
    ws.write(RECIPE, 'V = "x"\nP = param(bool, default = False)\n' + CM)
    (d,) = run(ws, RECIPE)
    assert (d.code, d.span.line) == ("L0002", 2)
    assert d.message == "param 'P' is never used"


def test_unused_load_in_a_recipe(ws):
    ws.write(LIB, 'A = "a"\nB = "b"\n')
    ws.write(RECIPE, f'load("//{LIB}", "A", BB = "B")\nV = A\n' + CM)
    (d,) = run(ws, RECIPE)
    assert (d.code, d.span.line, d.span.col) == ("L0003", 1, 39)
    assert d.message == f"'BB' is loaded from //{LIB} but never used"


def test_used_names_are_not_reported(ws):
    ws.write(LIB, 'A = "a"\n')
    ws.write(RECIPE, f'load("//{LIB}", "A")\nP = param(int, default = 2)\n'
                     'V = [f"{A}-{i}" for i in range(P)]\n' + CM)
    assert run(ws, RECIPE) == []


def test_a_comprehension_variable_is_not_a_use_of_a_constant(ws):
    ws.write(RECIPE, 'x = 1\nV = [x for x in range(2)]\n' + CM)
    assert codes(run(ws, RECIPE)) == [("L0001", 1)]


def test_library_public_names_are_exported_not_unused(ws):
    ws.write("recipes/lib/other.rcp", 'O = 1\n')
    ws.write(LIB, 'load("//recipes/lib/other.rcp", "O")\nPUBLIC = 1\n')
    assert run(ws, LIB) == []


def test_library_private_names_must_be_used(ws):
    ws.write("recipes/lib/other.rcp", 'O = 1\n')
    ws.write(LIB, 'load("//recipes/lib/other.rcp", _O = "O")\n_PRIVATE = 1\n_USED = 2\nPUBLIC = _USED\n')
    diags = run(ws, LIB)
    assert codes(diags) == [("L0003", 1), ("L0001", 2)]
    assert diags[1].message == "private name '_PRIVATE' is assigned but never used"


@pytest.mark.parametrize("call", [
    'manifest(name = "n", apiVersion = "v1", kind = "ConfigMap")',
    'jobset(name = "n", spec = {})',
    'flag_file(name = "n", flags = maxtext_flags({"steps": 1}))',
    'command_file(name = "n", argv = ["echo"])',  # reported twice (W0707 and L0001) from a hand-kept table
    'variant("other")',
])
def test_an_undeclared_render_is_left_to_the_compilers_warning(ws, call):
    """Every call whose value a recipe declares (each render kind's functions and variant()):
    an unused one is W0707 alone (the lint table is derived from the built-ins' declarations)."""
    ws.write(RECIPE, f'V = "x"\nJ = {call}\n' + CM)
    assert [d.code for d in run(ws, RECIPE)] == ["W0707"]


# L0004: a param no render uses ---------------------------------------------------------------
def test_param_used_only_by_require(ws):
    ws.write(RECIPE, 'V = "x"\nN = param(int, default = 2)\nrequire(N > 0, "N must be positive")\n' + CM)
    (d,) = run(ws, RECIPE)
    assert (d.code, d.span.line) == ("L0004", 2)
    assert d.message == "param 'N' does not affect any render"


def test_param_used_only_by_an_unused_constant(ws):
    ws.write(RECIPE, 'V = "x"\nN = param(int, default = 2)\nTWICE = N * 2\n' + CM)
    assert codes(run(ws, RECIPE)) == [("L0004", 2), ("L0001", 3)]


def test_param_reaching_a_render_through_constants_and_a_flag_file(ws):
    ws.write(RECIPE, 'T = param(bool, default = False)\nA = {"k": 1} if T else {}\nB = A\n'
                     'F = maxtext_flags({"k": 0}, B)\nflag_file(name = "t", flags = F)\n')
    assert run(ws, RECIPE) == []


def test_param_set_only_through_variants_is_unused(ws):
    ws.write(RECIPE, 'V = "x"\nT = param(bool, default = False)\n' + CM
             + 'variant("default")\nvariant("t", set = {"T": True})\n')
    assert codes(run(ws, RECIPE)) == [("L0002", 2)]


# L0005: a variant identical to its against -------------------------------------------------
VARIANTS = ('T = param(bool, default = False)\nV = "on" if T else "off"\n' + CM + 'variant("default")\n')
U_CHECKED = 'U = param(bool, default = False)\nrequire(U or not U, "a check that renders nothing")\n'


def test_variant_identical_to_its_against(ws):
    ws.write(RECIPE, U_CHECKED + VARIANTS + 'variant("u", set = {"U": True}, against = "default")\n')
    diags = run(ws, RECIPE)
    assert [d.code for d in diags] == ["L0004", "L0005"]  # U reaches no render, so 'u' changes nothing
    d = diags[1]
    assert (d.span.line, d.message) == (7, "variant 'u' renders exactly what 'default' renders")


def test_variant_that_changes_a_render_is_fine(ws):
    ws.write(RECIPE, VARIANTS + 'variant("t", set = {"T": True}, against = "default")\n')
    assert run(ws, RECIPE) == []


def test_variant_declaring_no_changes_is_its_contract(ws):
    ws.write(RECIPE, U_CHECKED + VARIANTS + 'variant("u", set = {"U": True}, against = "default", changes = {})\n')
    assert [d.code for d in run(ws, RECIPE)] == ["L0004"]


# L0006: mixed bool spellings in one flag set -------------------------------------------------
def test_mixed_bool_spellings_in_one_flag_set_is_a_note(ws):
    ws.write(RECIPE, 'F = maxtext_flags({"a": True, "b": true}, {"c": false})\nflag_file(name = "t", flags = F)\n')
    compiler = Compiler(Workspace.find(ws.root))
    (d,) = lint(compiler, [str(ws.root / RECIPE)])
    assert (d.code, d.severity, d.span.line, d.span.col) == ("L0006", "note", 1, 5)
    text = format_text(d, compiler.sources)
    assert "True ('a'): recipes/r.rcp:1:25" in text and "true ('b'): recipes/r.rcp:1:36" in text


@pytest.mark.parametrize("flags", ['{"a": True, "b": False}', '{"a": true}, {"b": false}', '{"a": 1}'])
def test_one_bool_spelling_is_fine(ws, flags):
    ws.write(RECIPE, f'flag_file(name = "t", flags = maxtext_flags({flags}))\n')
    assert run(ws, RECIPE) == []


def test_mixed_spellings_in_plain_dicts_are_not_flag_sets(ws):
    ws.write(RECIPE, 'V = json({"a": True, "b": true})\n' + CM)
    assert run(ws, RECIPE) == []


def test_mixed_spellings_across_layers_joined_with_plus(ws):
    ws.write(RECIPE, 'A = maxtext_flags({"a": True})\nB = maxtext_flags({"b": true})\n'
                     'flag_file(name = "t", flags = A + B)\n')
    assert [d.code for d in run(ws, RECIPE)] == ["L0006"]


# compiler warnings are reused -------------------------------------------------------------------
def test_noop_override_is_the_compilers_W0330_once(ws):
    ws.write(RECIPE, 'F = maxtext_flags({"a": 1}, {"a": 1})\nflag_file(name = "t", flags = F)\n'
                     'variant("default")\nvariant("other")\n')
    assert [d.code for d in run(ws, RECIPE)] == ["W0330"]


# silencing ----------------------------------------------------------------------------------
def test_ignore_comment_silences_one_code_on_its_line(ws):
    ws.write(RECIPE, 'V = "x"\nA = 1  # rcpc: ignore[L0001]\nB = 2  # rcpc: ignore[L0002]\n' + CM)
    assert codes(run(ws, RECIPE)) == [("L0001", 3)]


def test_ignore_comment_with_several_codes(ws):
    ws.write(RECIPE, 'V = "x"\nN = param(int, default = 1)  # rcpc: ignore[L0001, L0002]\n' + CM)
    assert run(ws, RECIPE) == []


def test_ignore_comment_on_the_last_line_of_the_statement(ws):
    ws.write(RECIPE, 'V = "x"\nA = [\n    1,\n]  # rcpc: ignore[L0001]\n' + CM)
    assert run(ws, RECIPE) == []


def test_ignore_comment_elsewhere_does_not_silence(ws):
    ws.write(RECIPE, 'V = "x"\n# rcpc: ignore[L0001]\nA = 1\n' + CM)
    assert codes(run(ws, RECIPE)) == [("L0001", 3)]


def test_ignore_silences_a_note_and_a_compiler_warning(ws):
    ws.write(RECIPE, 'F = maxtext_flags(  # rcpc: ignore[L0006]\n    {"a": True, "b": true},\n'
                     '    {"a": True},  # rcpc: ignore[W0330]\n)\nflag_file(name = "t", flags = F)\n')
    assert run(ws, RECIPE) == []


def test_ignore_in_a_string_is_not_a_comment(ws):
    ws.write(RECIPE, 'V = "x"\nA = "# rcpc: ignore[L0001]"\n' + CM)
    assert codes(run(ws, RECIPE)) == [("L0001", 2)]


def test_ignored_codes_parser():
    text = 'A = 1  # rcpc: ignore[L0001]\nB = 2  # note; rcpc:ignore[ l0002 ,L0003 ]\nC = "#rcpc: ignore[L9]"\n'
    assert ignored_codes(parse(Source("t.rcp", text))) == {1: {"L0001"}, 2: {"L0002", "L0003"}}


# inputs -------------------------------------------------------------------------------------------
def test_a_file_that_does_not_compile_gives_its_errors(ws):
    ws.write(RECIPE, "X = [1,\n")
    (d,) = run(ws, RECIPE)
    assert (d.code, d.severity) == ("E0001", "error")


def test_paths_directories_names_and_the_whole_workspace(ws):
    ws.write(LIB, '_P = 1\n')
    ws.write("recipes/a/x.rcp", 'V = "x"\nU = 1\n' + CM)
    assert [d.span.path for d in run(ws)] == ["recipes/a/x.rcp", LIB]
    assert [d.span.path for d in run(ws, "recipes/lib")] == [LIB]
    compiler = Compiler(Workspace.find(ws.root))
    assert [d.span.path for d in lint(compiler, ["a/x"])] == ["recipes/a/x.rcp"]
    (missing,) = lint(compiler, ["nope/nothing.rcp"])
    assert missing.code == "E0201" and missing.severity == "error"


def test_codes_are_documented():
    assert sorted(CODES) == [f"L000{i}" for i in range(1, 7)] + ["L0650", "L0651", "L0652"]
    style = (REPO / "docs" / "style.md").read_text(encoding="utf-8")
    for code in CODES:
        assert code in style


def test_bundled_recipes_are_lint_clean_but_for_notes():
    compiler = Compiler(Workspace.find(REPO))
    diags = lint(compiler, [])
    assert [d for d in diags if d.severity != "note"] == [], "\n".join(
        format_text(d, compiler.sources) for d in diags)


# L0650 / L0651 / L0652: functions -----------------------------------------------------------
def test_function_arguments_and_locals(ws):
    ws.write(LIB, "N = 1\n\n"
                  "def f(a, b, _c = 0):\n"
                  "    unused = 2\n"
                  "    N = a\n"
                  "    len = 1\n"
                  "    for _i in [1]:\n"
                  "        N = N\n"
                  "    return N\n\n"
                  "def _private():\n"
                  "    return 1\n")
    found = [(d.code, d.span.line, d.span.col, d.message) for d in run(ws, LIB)]
    assert found == [
        ("L0650", 3, 10, "argument 'b' of f() is never used"),
        ("L0651", 4, 5, "local 'unused' of f() is never used"),
        ("L0652", 5, 5, "local 'N' of f() shadows the top-level name 'N'"),
        ("L0651", 6, 5, "local 'len' of f() is never used"),
        ("L0652", 6, 5, "local 'len' of f() shadows the built-in 'len'"),
        ("L0001", 11, 5, "private function '_private' is never called"),
    ]


def test_used_function_names_are_not_reported(ws):
    ws.write(LIB, "def _helper(x):\n    return x\n\ndef f(a, *, b = 1):\n"
                  "    y = [_helper(i) for i in [a]]\n    if b > 0:\n        return y\n    return []\n")
    assert run(ws, LIB) == []


# silencing is linear: one index a file, whatever the number of findings (issue 41, kind 4) --
def _silenced_by_rescanning(compiler, d, cache):
    """The algorithm before the index, kept as the oracle: for each finding, a scan of its
    whole file for ``ignore[`` (quadratic in findings x bytes), then the same rule."""
    from rcpc.core.diagnostics import CompileError
    from rcpc.core.syntax import ast

    if d.span is None or d.severity == "error":
        return False
    src = compiler.sources.get(d.span.path)
    if src is None or "ignore[" not in src.text:
        return False
    info = cache.get(d.span.path)
    if info is None:
        try:
            module = compiler.module(Path(src.real))
        except CompileError:
            module = ast.Module(src.path, ())
        ends = {}
        for stmt in module.stmts:
            ends.setdefault(stmt.span.line, stmt.span.end_line)
        info = cache[d.span.path] = (ignored_codes(module), ends)
    ignores, ends = info
    lines = {d.span.line, d.span.end_line, ends.get(d.span.line, d.span.line)}
    return any(d.code.upper() in ignores.get(line, ()) for line in lines)


_SILENCE_CODES = ("L0001", "l0002", "W0330", "N0331")
_codes = st.lists(st.sampled_from(_SILENCE_CODES), min_size=1, max_size=3, unique=True)
_comment = st.one_of(st.just(""), _codes.map(lambda cs: f"  # rcpc: ignore[{', '.join(cs)}]"),
                     st.just("  # a plain comment"))
_statement = st.one_of(
    st.tuples(st.just("one"), _comment),                      # Xi = i  # ...
    st.tuples(st.just("list"), _comment, _comment),           # Xi = [  # ...\n    1,\n]  # ...
    st.tuples(st.just("own"), _codes),                        # # rcpc: ignore[...] on its own line
    st.tuples(st.just("string"), _codes),                     # Xi = "# rcpc: ignore[...]"
    st.tuples(st.just("broken"), _comment),                   # a syntax error: the file does not compile
)


def _ignore_file(stmts) -> str:
    out = []
    for i, s in enumerate(stmts):
        if s[0] == "one":
            out.append(f"X{i} = {i}{s[1]}")
        elif s[0] == "list":
            out += [f"X{i} = [{s[1]}", "    1,", f"]{s[2]}"]
        elif s[0] == "own":
            out.append(f"# rcpc: ignore[{','.join(s[1])}]")
        elif s[0] == "string":
            out.append(f'X{i} = "# rcpc: ignore[{",".join(s[1])}]"')
        else:
            out.append(f"X{i} = ({s[1]}")
    return "\n".join(out) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(stmts=[("one", "  # rcpc: ignore[L0001]"), ("one", "")])
@example(stmts=[("list", "", "  # rcpc: ignore[W0330, L0001]"), ("own", ["L0001"]), ("string", ["l0002"])])
@example(stmts=[("broken", "  # rcpc: ignore[L0001]")])
@given(stmts=st.lists(_statement, max_size=8))
def test_silencing_verdicts_equal_the_rescanning_oracle(ws, stmts):
    """Every finding a file could have (each line, span end, code, severity) gets the verdict
    the old per-finding rescan gave, in files with and without ignore comments."""
    from rcpc.core.diagnostics import Diagnostic
    from rcpc.core.source import Span
    from rcpc.domain import lint as lint_module

    real = ws.write(RECIPE, _ignore_file(stmts), dedent=False).resolve()
    compiler = Compiler(Workspace.find(ws.root))
    src = compiler.source(real)
    last = src.text.count("\n") + 1
    diags = [Diagnostic("L0001", "no span", None, "warning"),
             Diagnostic("L0001", "elsewhere", Span("recipes/other.rcp", 1, 1, 1, 2), "warning")]
    for line in range(1, last + 1):
        for end in {line, min(line + 2, last)}:
            for code in (*_SILENCE_CODES, "L0003"):
                for severity in ("warning", "note", "error"):
                    diags.append(Diagnostic(code, "m", Span(src.path, line, 1, end, 2), severity))
    new_cache: dict = {}
    old_cache: dict = {}
    got = [lint_module._silenced(compiler, d, new_cache) for d in diags]
    want = [_silenced_by_rescanning(compiler, d, old_cache) for d in diags]
    assert got == want


def test_silencing_indexes_each_file_once_whatever_the_findings(ws):
    """The work per finding is constant: a file of 300 unused constants, half silenced, is
    looked up (and searched for ignore comments) a few times in all, not once per finding."""

    class Counting(dict):
        looked_up = 0

        def get(self, key, default=None):
            Counting.looked_up += key == RECIPE
            return super().get(key, default)

    text = "".join(f"X{i} = {i}{'  # rcpc: ignore[L0001]' if i % 2 else ''}\n" for i in range(300))
    ws.write(RECIPE, text + 'variant("default")\n', dedent=False)
    compiler = Compiler(Workspace.find(ws.root))
    compiler.sources = Counting()
    found = lint(compiler, [str(ws.root / RECIPE)])
    assert [d.span.line for d in found if d.code == "L0001"] == list(range(1, 301, 2))
    assert Counting.looked_up <= 5
