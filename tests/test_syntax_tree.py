"""The one syntax tree: the generic walker (:mod:`rcpc.core.syntax.walk`), the bindings the
resolver records (:mod:`rcpc.core.resolve`), comments attached by the parser
(:mod:`rcpc.core.syntax.comments`), one parse per file per command, and ``rcpc fmt`` agreeing with
``rcpc check`` on what is syntax.

* Walker: every node type is reached; over generated programs, :func:`walk` yields every
  node (found by reflection over the node classes' fields) exactly once, children in source
  order, and the :class:`Visitor` visits the same nodes.
* Bindings: each kind (top-level, param, loaded with its file and remote name, comprehension,
  built-in) with its defining span, shadowing by comprehension variables, and, over generated
  programs, a binding for every name of a file that resolves.
* Comments: leading, trailing, dangling and file-end placement; over generated recipes,
  every comment placed exactly once.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.core import record
from rcpc.core import resolve as R
from rcpc.domain.builtins import NAMES
from rcpc.core.diagnostics import CompileError
from rcpc.core.fmt import format_source
from rcpc.core.source import Source
from rcpc.core.syntax import ast
from rcpc.core.syntax.comments import attached, key, part
from rcpc.core.syntax.parser import parse
from rcpc.core.syntax.walk import NODE_TYPES, Visitor, children, walk
from tests.test_fmt import workspaces
from tests.test_fuzz import generated_inputs

EVERY_NODE = '''\
load("//recipes/lib/a.rcp", "A", N = "NAME")
P = param(int, default = 1)
X = [1, 2.5, True, None, "s", f"{P}-x", {"k": -P}, not True]
Y = {k: v for k in ["a"] if k != "b"}
Z = (A + 1) if X[0] == 1 and True or False else N.upper()
jobset(name = "j", spec = {})
def f(a, b = 1, *, c = None):
    for x in [a]:
        if x == b:
            return x
        elif x == c:
            y = x
        else:
            return
    return b
'''


def parsed(text: str, path: str = "t.rcp") -> ast.Module:
    return parse(Source(path, text))


def reflected(node) -> list:
    """Every node under ``node``, found through the fields of the node classes (the oracle)."""
    out: list = []

    def go(x):
        if isinstance(x, (tuple, list)):
            for y in x:
                go(y)
        elif type(x) in NODE_TYPES:
            out.append(x)
            for f in record.fields(type(x)):
                if f.name not in ("parens", "comments", "source", "bindings", "_attached"):
                    go(getattr(x, f.name))

    go(node)
    return out


def start(node):
    span = node.name_span if type(node) is ast.Keyword else node.span
    return span.line, span.col


def check_walk(module: ast.Module) -> None:
    walked = list(walk(module))
    assert len({id(n) for n in walked}) == len(walked), "a node was walked twice"
    assert sorted(map(id, walked)) == sorted(map(id, reflected(module)))
    for n in walked:
        kids = children(n)
        if type(n) is not ast.Module:
            assert [start(k) for k in kids] == sorted(start(k) for k in kids), f"{type(n).__name__} children out of order"
    visited: list = []

    class Every(Visitor):
        def generic_visit(self, node):
            visited.append(node)
            super().generic_visit(node)

        def visit_Comprehension(self, node):
            visited.extend((node, node.clause))
            super().visit_Comprehension(node)

    Every().visit(module)
    assert sorted(map(id, visited)) == sorted(map(id, walked))


# the walker -------------------------------------------------------------------------------
def test_walk_reaches_every_node_type():
    module = parsed(EVERY_NODE)
    assert {type(n) for n in walk(module)} == set(NODE_TYPES)
    check_walk(module)


def test_children_of_a_non_node_is_an_error():
    with pytest.raises(TypeError):
        children(("a", "b"))


def test_walk_is_iterative():
    module = parsed("X = " + "[" * 2000 + "]" * 2000 + "\n")
    assert sum(1 for n in walk(module) if type(n) is ast.ListLit) == 2000


def test_visitor_scope_hooks_follow_comprehension_scopes():
    events: list = []

    class Scopes(Visitor):
        def enter_scope(self, node):
            events.append(("enter", node.clause.var))

        def leave_scope(self, node):
            events.append(("leave", node.clause.var))

        def visit_Name(self, node):
            events.append(node.id)

    Scopes().visit(parsed("X = [[x + y for x in y] for y in Z if y]\n"))
    # the outer iterable first, in the enclosing scope; then the condition and the element
    assert events == ["Z", ("enter", "y"), "y", "y", ("enter", "x"), "x", "y", ("leave", "x"), ("leave", "y")]


def _text(files: dict) -> str:
    return files["recipes/r.rcp"].decode("utf-8", "replace")


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(generated_inputs())
def test_walk_visits_every_node_of_generated_programs_once(files):
    for raw in files.values():
        try:
            module = parsed(raw.decode("utf-8"))
        except (CompileError, UnicodeDecodeError):
            continue
        try:
            check_walk(module)
        except RecursionError:  # the oracle recurses; the walker does not
            pass


# bindings ---------------------------------------------------------------------------------
def bindings_by_use(module: ast.Module) -> list:
    """(name, line:col of the use) -> binding, in source order."""
    return [(n.id, f"{n.span.line}:{n.span.col}", module.bindings.of(n))
            for n in walk(module) if type(n) is ast.Name]


def resolved(text: str) -> ast.Module:
    module = parsed(text)
    R.resolve(module, NAMES)
    return module


def test_bindings_of_top_level_names_params_and_builtins():
    m = resolved('A = 1\nP = param(int, default = A)\nB = len([A, P])\n')
    uses = bindings_by_use(m)
    assert [(name, where, b.kind) for name, where, b in uses] == [
        ("param", "2:5", R.BUILTIN), ("int", "2:11", R.BUILTIN), ("A", "2:26", R.TOP_LEVEL),
        ("len", "3:5", R.BUILTIN), ("A", "3:10", R.TOP_LEVEL), ("P", "3:13", R.PARAM)]
    a, p = uses[2][2], uses[5][2]
    assert (a.name, str(a.span)) == ("A", "t.rcp:1:1")
    assert (p.name, str(p.span)) == ("P", "t.rcp:2:1")
    assert uses[0][2].span is None
    assert [(b.kind, b.name) for b in m.bindings.defs] == [(R.TOP_LEVEL, "A"), (R.PARAM, "P"), (R.TOP_LEVEL, "B")]
    assert [str(n.span) for n in m.bindings.references(a)] == ["t.rcp:2:26", "t.rcp:3:10"]


def test_a_param_in_parentheses_is_a_param():
    m = resolved("P = (param(int, default = 1))\nX = P\n")
    assert m.bindings.defs[0].kind == R.PARAM


def test_comprehension_variables_shadow_and_scope():
    m = resolved("x = [1]\nX = [[x for x in x] for x in x if x]\n")
    uses = bindings_by_use(m)
    got = [(where, b.kind, str(b.span)) for _, where, b in uses]
    assert got == [
        ("2:7", R.COMPREHENSION, "t.rcp:2:13"),   # inner element: the inner x
        ("2:18", R.COMPREHENSION, "t.rcp:2:25"),  # inner iterable: the outer x
        ("2:30", R.TOP_LEVEL, "t.rcp:1:1"),       # outer iterable: the top-level x
        ("2:35", R.COMPREHENSION, "t.rcp:2:25"),  # outer condition: the outer x
    ]
    assert [(b.kind, str(b.span)) for b in m.bindings.defs] == [  # in the order bound
        (R.TOP_LEVEL, "t.rcp:1:1"), (R.COMPREHENSION, "t.rcp:2:25"), (R.COMPREHENSION, "t.rcp:2:13"),
        (R.TOP_LEVEL, "t.rcp:2:1")]


def test_a_comprehension_variable_is_not_visible_after_it():
    with pytest.raises(CompileError) as info:
        resolved("X = [i for i in range(3)]\nY = i\n")
    assert [d.code for d in info.value.diagnostics] == ["E0101"]


def test_names_in_fstrings_have_bindings():
    m = resolved('N = 1\nX = f"{N}-{[i for i in range(N)]}"\n')
    assert [(name, b.kind) for name, _, b in bindings_by_use(m)] == [
        ("N", R.TOP_LEVEL), ("i", R.COMPREHENSION), ("range", R.BUILTIN), ("N", R.TOP_LEVEL)]


def test_loaded_names_point_at_the_file_and_name_they_come_from(ws):
    ws.write("recipes/lib/a.rcp", 'A = 1\nNAME = "n"\n')
    ws.write("recipes/r.rcp", 'load("lib/a.rcp", "A", N = "NAME")\nX = [A, N]\n')
    compiler = ws.compiler()
    real = (ws.root / "recipes/r.rcp").resolve()
    module = compiler.module(real)
    uses = bindings_by_use(module)
    a, n = uses[0][2], uses[1][2]
    assert (a.kind, a.name, a.load, a.remote, str(a.span)) == (R.LOADED, "A", "lib/a.rcp", "A", "recipes/r.rcp:1:19")
    assert (n.kind, n.name, n.load, n.remote, str(n.span)) == (R.LOADED, "N", "lib/a.rcp", "NAME", "recipes/r.rcp:1:24")
    # go to definition: the load path resolves to the library, where the remote name is bound
    for b, where in ((a, "recipes/lib/a.rcp:1:1"), (n, "recipes/lib/a.rcp:2:1")):
        lib = compiler.workspace.resolve_load(b.load, real, b.span)
        defined = [d for d in compiler.module(lib).bindings.defs if d.name == b.remote]
        assert [str(d.span) for d in defined] == [where]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(generated_inputs())
def test_every_name_of_a_resolved_file_has_a_binding(files):
    for raw in files.values():
        try:
            module = parsed(raw.decode("utf-8"))
            R.resolve(module, NAMES)
        except (CompileError, UnicodeDecodeError, RecursionError):
            continue
        for n in walk(module):
            if type(n) is ast.Name:
                b = module.bindings.of(n)
                assert b is not None and b.name == n.id
                assert (b.span is None) == (b.kind == R.BUILTIN)


# comments ---------------------------------------------------------------------------------
def notes(text: str):
    module = parsed(text)
    return module, attached(module)


def texts(comments) -> list:
    return [c.text for c in comments]


def test_leading_trailing_and_file_end_comments():
    m, a = notes("# header\n\n# about X\nX = 1  # one\n\nY = 2\n# the end\n")
    x, y = m.stmts
    assert texts(a.of(key(x)).leading) == ["# header", "# about X"]
    assert a.of(key(x)).trailing.text == "# one"
    assert a.blank_before(a.of(key(x)).leading[1]) and a.of(key(y)).blank
    assert texts(a.end) == ["# the end"]


def test_comments_inside_brackets():
    m, a = notes('X = f(  # open\n    a,  # after a\n    # before b\n    b = [1],\n    # dangling\n)\n')
    call = m.stmts[0].value
    assert a.of(key(call)).after_open.text == "# open"
    assert a.of(key(call.args[0])).trailing.text == "# after a"
    assert texts(a.of(id(call.kwargs[0])).leading) == ["# before b"]
    assert texts(a.of(key(call)).before_close) == ["# dangling"]


def test_comments_on_parentheses_clauses_and_load_paths():
    m, a = notes('load(  # l\n    "//x.rcp",  # path\n    "A",\n)\n'
                 'X = (  # p\n    1 +  # mid\n    2\n)\nY = [\n    x\n    # the clause\n    for x in Z\n    if x  # cond\n]\n')
    load, x, y = m.stmts
    assert a.of(id(load)).after_open.text == "# l"
    assert a.of(part("path", load)).trailing.text == "# path"
    paren = x.value.parens[-1]
    assert a.of(id(paren)).after_open.text == "# p"
    assert texts(a.of(id(x.value)).leading) == ["# mid"]  # mid-element: above the element
    comp = y.value
    assert texts(a.of(id(comp.clause)).leading) == ["# the clause"]
    assert a.of(part("if", comp.clause.conds[0])).trailing.text == "# cond"


def test_comments_are_the_files_not_a_strings():
    m = parsed('X = f"{A # in a field}" + "# in a string"  # one\n')
    assert texts(m.comments) == ["# one"]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(workspaces())
def test_every_comment_is_placed_once(files):
    for text in files.values():
        module = parsed(text)
        placed = attached(module).placed()
        assert sorted(map(id, placed)) == sorted(map(id, module.comments))
        assert len({id(c) for c in placed}) == len(placed)


# one parse per file per command -------------------------------------------------------------
def test_each_file_is_parsed_once_per_command(ws, cli, monkeypatch):
    import rcpc.core.syntax.parser as parser

    ws.write("recipes/lib/a.rcp", "A = 1\n_UNUSED = 2  # rcpc: ignore[L0001]\n")
    ws.write("recipes/r.rcp", 'load("lib/a.rcp", "A")\nB = 2\nmanifest(name = "m", apiVersion = "v1", '
                              'kind = "K", data = {"a": A})\n')
    ws.write("recipes/s.rcp", "X=[1,\n2]\n")  # not canonical: fmt parses its output too
    parsed_texts: list = []
    real = parser._parse_text

    def counting(parser_, source, text, base):
        if base == 0:  # a file (not an f-string's field)
            parsed_texts.append((source.path, text))
        return real(parser_, source, text, base)

    from rcpc.core.syntax.descent import FastParser

    fast = FastParser.statements

    def counting_fast(self, text, base, comments):
        if comments is not None:  # a file (not an f-string's field)
            parsed_texts.append((self.source.path, text))
        return fast(self, text, base, comments)

    monkeypatch.setattr(parser, "_parse_text", counting)
    monkeypatch.setattr(FastParser, "statements", counting_fast)
    monkeypatch.setenv("RCPC_NO_CACHE", "1")  # every file parsed (by the fast parser, or lark): counted
    for argv in (["lint"], ["check", "-j", "1"], ["fmt", "--check", "-j", "1"]):
        parsed_texts.clear()
        cli(*argv)
        assert parsed_texts, argv
        assert len(parsed_texts) == len(set(parsed_texts)), (argv, parsed_texts)
    # with the caches on, a check of unchanged recipes parses nothing (the build cache); lint
    # and fmt still parse each file once (there is no AST cache: loading a pickled parse cost
    # about as much as parsing, bench/editloop.py)
    monkeypatch.setenv("XDG_CACHE_HOME", str(ws.root.parent / "cache"))
    monkeypatch.delenv("RCPC_NO_CACHE")
    cli("check", "-j", "1")
    parsed_texts.clear()
    cli("check", "-j", "1")
    assert parsed_texts == []
    for argv in (["lint"], ["fmt", "--check", "-j", "1"]):
        parsed_texts.clear()
        cli(*argv)
        assert parsed_texts and len(parsed_texts) == len(set(parsed_texts)), (argv, parsed_texts)


# fmt and check agree on what is syntax -------------------------------------------------------
AGREEMENT = [
    pytest.param(b"X = [,]\n", id="leading-comma-list"),
    pytest.param(b"X = {,}\n", id="leading-comma-dict"),
    pytest.param(b'S = tpu_slice(,)\n', id="leading-comma-call"),
    pytest.param(b"X = [1,,]\n", id="double-comma"),
    pytest.param(b'X = "\xff"\n', id="not-utf8"),
    pytest.param(b"X = 32 .hosts\n", id="attribute-of-an-int"),
    pytest.param(b'X = """a\r\nb"""\r\nmanifest(name = "m", apiVersion = "v1", kind = "K", data = {"x": X})\r\n',
                 id="crlf-in-triple-quoted"),
]


@pytest.mark.parametrize("data", AGREEMENT)
def test_fmt_and_check_agree(ws, cli, data):
    """A syntax error is the same diagnostic for both; what check parses, fmt formats, and the
    formatted file compiles to the same renders (or the same errors)."""
    (ws.root / "recipes").mkdir(exist_ok=True)
    path = ws.root / "recipes" / "r.rcp"
    path.write_bytes(data)
    check = cli("check", "-j", "1")
    fmt = cli("fmt", "--check", "-j", "1", "recipes/r.rcp")
    assert "Traceback" not in check.err + fmt.err
    syntax = re.findall(r"error\[E000\d\].*", check.err)
    if syntax:
        assert fmt.code == 1 and re.findall(r"error\[E000\d\].*", fmt.err) == syntax
        return
    assert fmt.code in (0, 1) and "error[" not in fmt.err
    before = cli("render", "r")
    cli("fmt", "-j", "1", "recipes/r.rcp")
    after = cli("render", "r")
    assert (after.code, after.out, after.err) == (before.code, before.out, before.err)
    assert cli("fmt", "--check", "recipes/r.rcp").code == 0


def test_fmt_keeps_crlf_inside_a_triple_quoted_string():
    out = format_source('X = """a\r\nb"""\r\nY = 1\r\n', "t.rcp")
    assert out == 'X = """a\r\nb"""\nY = 1\n'


TOKENS = ["X", "=", "(", ")", "[", "]", "{", "}", ",", ":", ".", "+", "-", "not", "if", "else", "for", "in",
          "1", "32", "1.5", "1e3", '"s"', "'t'", 'f"{X}"', "True", "None", "\n", " ", "#c\n", "\\\n", "\t", "hosts",
          "e5", "_x"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=25))
@example(["X", "=", "32", " ", ".", "hosts"])
@example(["X", "=", "1", " ", ".", "e5"])
@example(["X", "=", "[", ",", "]"])
def test_fmt_formats_exactly_what_the_parser_accepts(tokens):
    """Token soup: formatting raises the parser's CompileError or succeeds; the formatter never
    fails its own check (FormatterBug) nor crashes."""
    text = "".join(tokens)
    try:
        parse(Source("t.rcp", text))
    except CompileError as exc:
        with pytest.raises(CompileError) as info:
            format_source(text, "t.rcp")
        assert info.value.diagnostics == exc.diagnostics
        return
    except RecursionError:
        return
    out = format_source(text, "t.rcp")
    assert format_source(out, "t.rcp") == out


def test_the_parse_table_cache_file_names_every_lark_option(tmp_path, monkeypatch):
    """Two parsers built with different options never share a cache file (lark would
    rebuild and overwrite it on every start, or load tables built for other options)."""
    from rcpc.core.syntax.parser import _cache_path

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    base = dict(parser="lalr", keep_all_tokens=True, postlex=object())
    names = [_cache_path("G", base), _cache_path("G", {**base, "keep_all_tokens": False}),
             _cache_path("G", {**base, "propagate_positions": True}), _cache_path("G", {**base, "postlex": None}),
             _cache_path("H", base)]
    assert len(set(names)) == len(names)
    assert _cache_path("G", dict(reversed(list(base.items())))) == names[0]
    assert all(n.startswith(str(tmp_path)) for n in names)
