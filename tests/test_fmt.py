"""``rcpc fmt`` (:func:`rcpc.core.fmt.format_source`, docs/style.md).

* Goldens: ``tests/fmt/NAME.in.rcp`` formats to ``tests/fmt/NAME.out.rcp`` exactly, and the
  ``.out`` file is a fixed point. ``RCPC_FMT_UPDATE=1 pytest tests/test_fmt.py`` rewrites the
  ``.out`` files (review the diff).
* Properties over generated recipes (hypothesis): formatting is idempotent and changes no
  render (both versions compiled in a throw-away workspace, every render of every variant
  compared byte for byte; a recipe that fails must fail the same way formatted). The
  generator lays out the same tokens at random: comments after any token inside brackets,
  own-line comments, blank lines, trailing commas, either quote style.
* The same two properties for every bundled recipe under ``recipes/``.
"""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rcpc.core.diagnostics import CompileError
from rcpc.core.fmt import WIDTH, format_source, normalize_string
from rcpc.domain.recipe import Compiler
from rcpc.domain.workspace import Workspace

from conftest import bundled_sources

REPO = Path(__file__).resolve().parents[1]
GOLDEN_DIR = Path(__file__).with_name("fmt")
CASES = sorted(p.name[: -len(".in.rcp")] for p in GOLDEN_DIR.glob("*.in.rcp"))
BUNDLED = bundled_sources()  # the recipes, and the standard library as recipes/lib/NAME.rcp
RCP_TOML = 'recipe_dirs = ["recipes"]\nlibrary_dirs = ["recipes/lib"]\n'


def fmt(text: str, path: str = "t.rcp") -> str:
    return format_source(text, path)


# goldens ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CASES)
def test_golden(name):
    src = (GOLDEN_DIR / f"{name}.in.rcp").read_text(encoding="utf-8")
    out_path = GOLDEN_DIR / f"{name}.out.rcp"
    got = fmt(src, f"tests/fmt/{name}.in.rcp")
    if os.environ.get("RCPC_FMT_UPDATE"):
        out_path.write_text(got, encoding="utf-8")
    want = out_path.read_text(encoding="utf-8")
    assert got == want, "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                                     "expected", "formatted"))
    assert fmt(want) == want  # the expected output is canonical itself


def test_goldens_cover_the_feature_list():
    assert {"comments", "long_calls", "nested_data", "strings", "loads", "literals",
            "blank_lines"} <= set(CASES)


# behaviour, case by case ------------------------------------------------------------------
def test_syntax_error_raises_the_compilers_error():
    with pytest.raises(CompileError) as info:
        fmt("X = [1, 2\nY = 3\n", "bad.rcp")
    assert info.value.diagnostics[0].code == "E0001"
    assert str(info.value.diagnostics[0].span).startswith("bad.rcp:")


def test_bad_escape_raises_the_compilers_error():
    with pytest.raises(CompileError) as info:
        fmt('X = "\\q"\n')
    assert info.value.diagnostics[0].code == "E0002"


@pytest.mark.parametrize("src, out", [
    ("", ""),
    ("\n\n  \n", ""),
    ("# only a comment", "# only a comment\n"),
    ("X=1", "X = 1\n"),
    ("X = 1\r\nY = 2\r\n", "X = 1\nY = 2\n"),
    ("X = 1   # trailing spaces after a comment   \n", "X = 1  # trailing spaces after a comment\n"),
    ("X = f(a,b=1)\n", "X = f(a, b = 1)\n"),
    ("X = {'a':1}\n", 'X = {"a": 1}\n'),
    ("X = [ ]\n", "X = []\n"),
    ("X = - - 5\n", "X = - -5\n"),
    ("X = not(A)\n", "X = not (A)\n"),
    ("X = a  .  b [ 0 ] ( 1 )\n", "X = a.b[0](1)\n"),
    ("X = 1 + \\\n    2\n", "X = 1 + 2\n"),
])
def test_small_inputs(src, out):
    assert fmt(src) == out


@pytest.mark.parametrize("spelling", ["1e-6", "1.e-05", ".5", "1E+3", "2_000_000", "0", "1_000.5",
                                      "True", "true", "False", "false", "None", "null"])
def test_literal_spelling_is_never_changed(spelling):
    assert fmt(f"X = [{spelling}, -{spelling}]\n") == f"X = [{spelling}, -{spelling}]\n"


@pytest.mark.parametrize("literal, canonical", [
    ("'abc'", '"abc"'),
    ("f'{X}-a'", 'f"{X}-a"'),
    ("'it\\'s'", '"it\\\'s"'),          # escapes kept: the value is the same
    ("'say \"hi\"'", "'say \"hi\"'"),   # a double quote inside: kept
    ("f'{D[\"k\"]}'", "f'{D[\"k\"]}'"),  # so an f-string's inner quotes keep working
    ("'''a\nb'''", "'''a\nb'''"),       # triple-quoted: kept as written
    ('"\\x41\\u00e9"', '"\\x41\\u00e9"'),
])
def test_string_quotes(literal, canonical):
    assert normalize_string(literal) == canonical
    assert fmt(f"X = {literal}\n") == f"X = {canonical}\n"


def test_a_line_of_exactly_the_width_stays_and_one_more_explodes():
    head = 'X = f("'
    fill = "a" * (WIDTH - len(head) - 2)
    fits = f'{head}{fill}")\n'
    assert len(fits.rstrip("\n")) == WIDTH
    assert fmt(fits) == fits
    assert fmt(f'{head}{fill}a")\n') == f'X = f(\n    "{fill}a",\n)\n'


def test_trailing_comma_keeps_a_short_box_exploded():
    assert fmt("X = [1, 2,]\n") == "X = [\n    1,\n    2,\n]\n"
    assert fmt("X = [1, 2]\n") == "X = [1, 2]\n"
    assert fmt("X = [\n    1,\n    2\n]\n") == "X = [1, 2]\n"  # no trailing comma: joined


def test_a_long_trailing_comment_does_not_explode_the_code():
    src = "X = [1, 2]  # " + "c" * 120 + "\n"
    assert fmt(src) == src


def test_comments_are_never_lost_and_stay_on_their_element():
    src = "X = f(\n    a,  # about a\n    # about b\n    b = [1],\n)\n"
    assert fmt(src) == src


def test_load_statements_first_sorted_names_sorted():
    src = ('X = b + a\nload("//z.rcp", "b")\nload("//a.rcp", "z", "a")\n')
    assert fmt(src) == 'load("//a.rcp", "a", "z")\nload("//z.rcp", "b")\n\nX = b + a\n'


def test_output_has_no_trailing_whitespace_and_one_final_newline():
    src = (REPO / "recipes" / "rl" / "qwen35_397b_256_v7x.rcp").read_text(encoding="utf-8")
    out = fmt(src)
    assert out.endswith("\n") and not out.endswith("\n\n")
    assert all(line == line.rstrip() for line in out.split("\n"))


def test_indentation_is_four_spaces_a_level():
    out = fmt("X = f(" + ", ".join(f"a{i} = [{i}, " + '"' + "x" * 30 + '"]' for i in range(3)) + ")\n")
    for line in out.splitlines()[1:-1]:
        assert (len(line) - len(line.lstrip(" "))) % 4 == 0


# renders ------------------------------------------------------------------------------------
def _renders(root: Path) -> dict:
    """{recipe: {variant: {render: text}}} or {recipe: ("error", codes)} for a workspace."""
    compiler = Compiler(Workspace.find(root))
    out = {}
    for recipe in compiler.workspace.recipes():
        key = recipe.relative_to(root).as_posix()
        try:
            _, builds = compiler.build(recipe)
            out[key] = {b.variant: {r.name: r.text for r in b.renders} for b in builds}
        except CompileError as exc:
            out[key] = ("error", sorted(d.code for d in exc.diagnostics))
    return out


def _formatted_copy(files: dict, root: Path) -> dict:
    """Write ``files`` (path → text) to ``root`` formatted; returns the formatted texts."""
    (root / "rcp.toml").write_text(RCP_TOML, encoding="utf-8")
    out = {}
    for path, text in files.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        out[path] = fmt(text, path)
        p.write_text(out[path], encoding="utf-8")
    return out


def _write(files: dict, root: Path) -> None:
    (root / "rcp.toml").write_text(RCP_TOML, encoding="utf-8")
    for path, text in files.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def check_format_properties(files: dict) -> None:
    """Idempotent, and renders of every recipe and variant unchanged."""
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        _write(files, Path(a))
        formatted = _formatted_copy(files, Path(b))
        for path, text in formatted.items():
            assert fmt(text, path) == text, f"not idempotent: {path}"
        assert _renders(Path(b)) == _renders(Path(a))


@pytest.mark.parametrize("path", sorted(BUNDLED))
def test_bundled_recipe_formatting_is_idempotent(path):
    text = BUNDLED[path]
    once = fmt(text, path)
    assert fmt(once, path) == once


def test_bundled_recipes_render_the_same_formatted():
    files = BUNDLED
    with tempfile.TemporaryDirectory() as b:
        _formatted_copy(files, Path(b))
        formatted = _renders(Path(b))
    original = _renders(REPO)
    assert formatted == original
    assert all(not isinstance(v, tuple) for v in original.values())  # they all compile


# generated recipes --------------------------------------------------------------------------
STR_CHARS = "ab z09-_$.{}/:#\"'\\\né\t"


def _quote(value: str, q: str) -> str:
    out = []
    for c in value:
        if c == "\\":
            out.append("\\\\")
        elif c == q:
            out.append("\\" + q)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        else:
            out.append(c)
    return q + "".join(out) + q


class Gen:
    """Typed expressions as token lists (brackets and commas separate tokens)."""

    def __init__(self, draw, env: dict, lib: bool):
        self.draw = draw
        self.env = env  # name -> type
        self.lib = lib

    def d(self, strategy):
        return self.draw(strategy)

    def pick(self, options):
        return self.d(st.sampled_from(options))

    def names(self, ty):
        return [n for n, t in self.env.items() if t == ty]

    def seq(self, open_, items, close, trailing_ok=True):
        toks = [open_]
        for i, item in enumerate(items):
            if i:
                toks.append(",")
            toks.extend(item)
        if items and trailing_ok and self.d(st.booleans()):
            toks.append(",")
        toks.append(close)
        return toks

    def string_lit(self):
        value = self.d(st.text(STR_CHARS, max_size=8))
        kind = self.d(st.integers(0, 5))
        if kind == 5 and '"' not in value and "\\" not in value and not value.endswith('"'):
            return ['"""' + value + '\nline"""']
        return [_quote(value, self.pick(['"', "'"]))]

    def expr(self, ty, depth=0):
        leaf = depth >= 3 or self.d(st.integers(0, 2)) == 0
        return getattr(self, "e_" + ty)(depth, leaf)

    def named(self, ty):
        names = self.names(ty)
        return [self.pick(names)] if names and self.d(st.booleans()) else None

    def e_str(self, depth, leaf):
        n = self.named("str")
        if n:
            return n
        if leaf:
            return self.string_lit()
        k = self.d(st.integers(0, 6))
        if k == 0:
            return self.expr("str", depth + 1) + ["+"] + self.expr("str", depth + 1)
        if k == 1:
            scalars = [n for n, t in self.env.items() if t in ("str", "int", "bool", "float")]
            if scalars:
                q = self.pick(['"', "'"])
                parts = [f"{{{self.pick(scalars)}}}" for _ in range(self.d(st.integers(1, 2)))]
                return ["f" + q + "-{{x}}-".join(parts) + q]
            return self.string_lit()
        if k == 2:
            return ["str", "("] + self.expr("int", depth + 1) + [")"]
        if k == 3:
            return ["("] + self.expr("str", depth + 1) + ["if"] + self.expr("bool", depth + 1) + ["else"] + self.expr("str", depth + 1) + [")"]
        if k == 4:
            items = [self.expr("str", depth + 1) for _ in range(self.d(st.integers(0, 3)))]
            return self.string_lit() + [".", "join", "("] + self.seq("[", items, "]") + [")"]
        if k == 5:
            return ["("] + self.expr("str", depth + 1) + [")", ".", self.pick(["upper", "lower", "strip"]), "(", ")"]
        return ["("] + self.expr("str", depth + 1) + [")"]

    def e_int(self, depth, leaf):
        n = self.named("int")
        if n:
            return n
        if leaf:
            v = self.d(st.integers(0, 5000))
            text = f"{v:_}" if self.d(st.booleans()) else str(v)
            return [text]
        k = self.d(st.integers(0, 5))
        if k == 0:
            return self.expr("int", depth + 1) + [self.pick(["+", "-", "*"])] + self.expr("int", depth + 1)
        if k == 1:
            return ["-"] + self.expr("int", depth + 1)
        if k == 2:
            items = [self.expr(self.pick(["int", "str"]), depth + 1) for _ in range(self.d(st.integers(0, 3)))]
            return ["len", "("] + self.seq("[", items, "]") + [")"]
        if k == 3:
            return ["("] + self.expr("int", depth + 1) + [")", self.pick(["//", "%"]), str(self.d(st.integers(1, 9)))]
        if k == 4:
            return ["("] + self.expr("int", depth + 1) + ["if"] + self.expr("bool", depth + 1) + ["else"] + self.expr("int", depth + 1) + [")"]
        return ["("] + self.expr("int", depth + 1) + [")"]

    def e_bool(self, depth, leaf):
        n = self.named("bool")
        if n:
            return n
        if leaf:
            return [self.pick(["True", "true", "False", "false"])]
        k = self.d(st.integers(0, 4))
        if k == 0:
            return ["not"] + self.expr("bool", depth + 1)
        if k == 1:
            return ["("] + self.expr("bool", depth + 1) + [self.pick(["and", "or"])] + self.expr("bool", depth + 1) + [")"]
        if k == 2:
            return self.expr("int", depth + 1) + [self.pick(["<", "<=", "==", "!=", ">", ">="])] + self.expr("int", depth + 1)
        if k == 3:
            items = [self.expr("str", depth + 1) for _ in range(self.d(st.integers(0, 3)))]
            return self.expr("str", depth + 1) + self.pick([["in"], ["not", "in"]]) + self.seq("[", items, "]")
        return ["("] + self.expr("bool", depth + 1) + [")"]

    def e_float(self, depth, leaf):
        n = self.named("float")
        if n:
            return n
        return [self.pick(["1e-6", "1.e-05", ".5", "2.0", "1E+3", "1_000.5", "0.125", "-1e-6"])]

    def e_none(self, depth, leaf):
        return [self.pick(["None", "null"])]

    def e_list(self, depth, leaf):
        n = self.named("list")
        if n:
            return n
        k = self.d(st.integers(0, 3))
        if leaf or k == 0:
            items = [self.expr(self.pick(["str", "int", "bool", "float", "none"]), depth + 1)
                     for _ in range(self.d(st.integers(0, 4)))]
            return self.seq("[", items, "]")
        if k == 1:
            return self.expr("list", depth + 1) + ["+"] + self.expr("list", depth + 1)
        var = "x"
        body = self.pick([[var], ["f\"r-{x}\""], [var, "*", "2"], ["str", "(", var, ")"]])
        toks = ["["] + body + ["for", var, "in", "range", "(", str(self.d(st.integers(0, 4))), ")"]
        if self.d(st.booleans()):
            toks += ["if", var, "!=", "1"]
        return toks + ["]"]

    def e_dict(self, depth, leaf):
        n = self.named("dict")
        if n:
            return n
        k = self.d(st.integers(0, 3))
        if leaf or k == 0:
            keys = self.d(st.lists(st.text("abkz_-. ", min_size=1, max_size=5), max_size=4, unique=True))
            items = [[_quote(key, self.pick(['"', "'"])), ":"] + self.expr(self.pick(["str", "int", "bool", "float", "none", "list", "dict"]), depth + 1)
                     for key in keys]
            return self.seq("{", items, "}")
        if k == 1:
            return self.expr("dict", depth + 1) + ["+"] + self.expr("dict", depth + 1)
        return ["{", "f\"k{x}\"", ":", "x", "for", "x", "in", "range", "(", str(self.d(st.integers(0, 3))), ")", "}"]


WORDISH = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_\"'.")


def layout(draw, tokens: list, counter: list) -> str:
    """Join tokens with random whitespace and comments (comments only inside brackets)."""
    out = [tokens[0]]
    depth = 1 if tokens[0] in "([{" else 0
    for prev, tok in zip(tokens, tokens[1:]):
        if tok in ")]}":
            depth -= 1
        need_space = prev[-1] in WORDISH and tok[0] in WORDISH or prev == "-" and tok.startswith("-")
        inside = depth > 0 or tok in ")]}"
        if inside:
            choice = draw(st.integers(0, 9))
        else:
            choice = 0
        if choice <= 4:
            sep = " " if need_space or choice % 2 else ""
        elif choice == 5:
            sep = "\n"
        elif choice == 6:
            sep = "\n\n      "
        elif choice == 7:
            counter[0] += 1
            sep = f"  # c{counter[0]} after {prev[:8]!r}   \n"
        elif choice == 8:
            counter[0] += 1
            sep = f"\n   # c{counter[0]} own line\n"
        else:
            counter[0] += 1
            sep = f"#c{counter[0]}\n\n#d{counter[0]}\n  "
        out.append(sep)
        out.append(tok)
        if tok in "([{":
            depth += 1
    return "".join(out)


@st.composite
def source_file(draw, lib: bool, lib_names: dict):
    """A library (constants only) or a recipe that loads the library, declares params,
    constants, a manifest and a flag file, and two variants."""
    counter = [0]
    env: dict = {}
    stmts: list[str] = []
    if not lib and lib_names:
        chosen = draw(st.lists(st.sampled_from(sorted(lib_names)), min_size=1, unique=True))
        args = [[_quote("//recipes/lib/l.rcp", '"')]]
        for name in chosen:
            if draw(st.booleans()):
                args.append([_quote(name, draw(st.sampled_from(['"', "'"])))])
                env[name] = lib_names[name]
            else:
                alias = "AL_" + name
                args.append([alias, "=", _quote(name, '"')])
                env[alias] = lib_names[name]
        g = Gen(draw, env, lib)
        stmts.append(layout(draw, ["load"] + g.seq("(", args, ")"), counter))
    g = Gen(draw, env, lib)
    if not lib:
        stmts.append(f"P = param(bool, default = {draw(st.sampled_from(['True', 'false']))})")
        stmts.append(f"N = param(int, default = {draw(st.integers(0, 3))})")
        env["P"], env["N"] = "bool", "int"
    for i in range(draw(st.integers(1, 5))):
        ty = draw(st.sampled_from(["str", "int", "bool", "float", "list", "dict"]))
        name = ("_L" if draw(st.booleans()) else "L") + str(i) if lib else f"C{i}"
        stmts.append(layout(draw, [name, "="] + g.expr(ty), counter))
        env[name] = ty
    if not lib:
        fields = [[_quote(f"f{i}", '"'), ":"] + [n] for i, n in enumerate(env)]
        spec = g.seq("{", fields, "}")
        stmts.append(layout(draw, ["manifest", "(", "name", "=", '"m"', ",", "apiVersion", "=", '"example.com/v1"',
                                   ",", "kind", "=", '"Thing"', ",", "spec", "="] + spec + [")"], counter))
        flags = [[_quote(f"k{i}", '"'), ":"] + g.expr(draw(st.sampled_from(["str", "int", "bool", "float", "none"])), 2)
                 for i in range(draw(st.integers(1, 4)))]
        tuned = [['"k0"', ":"] + g.expr("bool", 2)]
        layers = [g.seq("{", flags, "}"), g.seq("{", tuned, "}", False) + ["if", "P", "else", "{", "}"]]
        stmts.append(layout(draw, ["flag_file", "(", "name", "=", '"trainer"', ",", "flags", "=", "maxtext_flags"]
                            + g.seq("(", layers, ")") + [")"], counter))
        stmts.append('variant("default")')
        stmts.append(layout(draw, ["variant", "(", '"other"', ",", "set", "=", "{", '"P"', ":", "not", "P", "}",
                                   ",", "against", "=", '"default"', ")"], counter))
    pieces = []
    for s in stmts:
        kind = draw(st.integers(0, 5))
        if kind == 0:
            pieces.append("\n\n\n")
        elif kind == 1:
            counter[0] += 1
            pieces.append(f"# statement comment {counter[0]}\n")
        pieces.append(s)
        if draw(st.integers(0, 3)) == 0:
            counter[0] += 1
            pieces.append(f"  # trailing {counter[0]}")
        pieces.append("\n")
    return "".join(pieces), {n: t for n, t in env.items() if not n.startswith("_")}


@st.composite
def workspaces(draw):
    lib_text, lib_names = draw(source_file(True, {}))
    recipe_text, _ = draw(source_file(False, lib_names))
    return {"recipes/lib/l.rcp": lib_text, "recipes/r.rcp": recipe_text}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(workspaces())
def test_generated_recipes_format_idempotently_and_render_the_same(files):
    check_format_properties(files)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(workspaces())
def test_generated_files_format_idempotently(files):
    for path, text in files.items():
        once = fmt(text, path)  # format_source itself checks: same syntax tree, same comments
        assert fmt(once, path) == once
        assert not once.startswith("\n")
        if '"""' not in once and "'''" not in once:  # a long string's lines are its value
            assert "\n\n\n" not in once
            assert all(line == line.rstrip() for line in once.split("\n"))


def test_generator_makes_recipes_that_compile():
    """Most generated recipes compile (else the render property would test little)."""
    compiled = []

    @settings(max_examples=40, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(workspaces())
    def run(files):
        with tempfile.TemporaryDirectory() as a:
            _write(files, Path(a))
            compiled.append(not isinstance(_renders(Path(a))["recipes/r.rcp"], tuple))

    run()
    assert sum(compiled) >= len(compiled) * 0.6, f"{sum(compiled)} of {len(compiled)} compiled"
