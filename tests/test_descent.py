"""The fast parser (rcpc.core.syntax.descent) against lark's, the reference: on every text it
accepts, the same statements (every node, span, paren, spelling), comments, token count and
token offsets; every text lark rejects, it declines (and ``parse`` then reports lark's
diagnostics). Differential on every .rcp of the repository and of ../shared, hypothesis
properties over generated and mutated recipes, witnesses for each corner of the grammar, and
a valid build that never imports lark."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.core import record
from rcpc.core.diagnostics import CompileError
from rcpc.core.source import Source, Span
from rcpc.core.syntax import lexer, parser, postlex, terminals
from rcpc.core.syntax.descent import DECLINED, FastParser
from rcpc.core.syntax.tokens import Token
from test_fuzz import BUNDLED, generated_inputs, mutated_inputs

REPO = Path(__file__).resolve().parents[1]


@functools.cache
def _reference() -> parser.ReferenceParser:
    """lark's parser, for its lexer and terminals (made once for this module)."""
    return parser.ReferenceParser()

SHARED = REPO.parent / "shared"
CORPUS = sorted({*REPO.glob("recipes/**/*.rcp"), *REPO.glob("compiler/**/*.rcp"), *REPO.glob("tests/**/*.rcp"),
                 *REPO.glob("docs/**/*.rcp"), *REPO.glob("golden/**/*.rcp"), *REPO.glob("bench/**/*.rcp"),
                 *SHARED.glob("**/*.rcp")})


def _result(parse, text: str, path: str):
    """``parse(source, token_at)``'s result: ("ok", statements, comments, tokens, token
    offsets) or ("error", diagnostics)."""
    source = Source(path, text)
    token_at: list = []
    tokens = postlex.TokenCount()
    try:
        module = parse(source, token_at, tokens=tokens)
    except CompileError as exc:
        return ("error", exc.diagnostics)
    return ("ok", module.stmts, module.comments, tokens.n, token_at)


def lark_parse(text: str, path: str = "r.rcp"):
    """lark's result (:func:`_result`)."""
    return _result(parser._parse_lark, text, path)


def fast_parse(text: str, path: str = "r.rcp"):
    """The fast parser's result, as :func:`lark_parse`'s; ``None`` when it declines."""
    source = Source(path, text)
    token_at: list = []
    found: list = []
    tokens = postlex.TokenCount()
    try:
        stmts = FastParser(source, token_at, tokens).statements(text, 0, found)
    except DECLINED:
        return None
    token_at.sort()
    return ("ok", tuple(stmts), tuple(parser._comment(source, t) for t in found), tokens.n, token_at)


def wired_parse(text: str, path: str = "r.rcp"):
    """``parser.parse`` (fast first, lark on a decline), as :func:`lark_parse`'s result."""
    return _result(parser.parse, text, path)


def same(a, b) -> bool:
    """``a == b`` for parse results, without recursion (a chain of 1000 '+' nests as deep)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, str) or isinstance(y, str):
            if not (isinstance(x, str) and isinstance(y, str) and x == y):
                return False
        elif type(x) is not type(y):
            return False
        elif type(x) in (tuple, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif record.has(type(x)) and type(x) is not Span:
            stack.extend((getattr(x, f.name), getattr(y, f.name)) for f in record.fields(type(x)))
        elif x != y:
            return False
    return True


def check_agrees(text: str, must_accept: bool = False) -> str:
    """The differential property on one text; returns lark's verdict ("ok"/"error")."""
    reference = lark_parse(text)
    fast = fast_parse(text)
    if reference[0] == "error":
        assert fast is None, "the fast parser accepts what lark rejects"
    else:
        assert fast is not None or not must_accept, "the fast parser declines a valid text"
        if fast is not None:
            assert same(fast, reference)
    assert same(wired_parse(text), reference)
    return reference[0]


# the corpus: every real recipe -----------------------------------------------------------------
def _snippets():
    """The ```python and ```rcp blocks of docs/ and ../shared (recipes, error examples, and
    some Python, which both parsers must reject alike)."""
    out = []
    for md in sorted([*REPO.glob("docs/**/*.md"), *SHARED.glob("**/*.md")]):
        block = None
        for n, line in enumerate(md.read_text(encoding="utf-8").splitlines(keepends=True)):
            if block is None and line.rstrip() in ("```python", "```rcp"):
                block, start = [], n + 2
            elif block is not None and line.startswith("```"):
                out.append(pytest.param("".join(block), id=f"{md.relative_to(REPO.parent)}:{start}"))
                block = None
            elif block is not None:
                block.append(line)
    return out


SNIPPETS = _snippets()


def test_the_corpus_is_found():
    assert len(CORPUS) >= 20 and len(SNIPPETS) >= 100


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(REPO.parent)))
def test_fast_parser_equals_lark_on_every_recipe(path):
    text = path.read_text(encoding="utf-8")
    verdict = check_agrees(text, must_accept=True)
    if verdict == "error":  # an error fixture: the fast parser declines it (checked above)
        assert "spec" in path.parts or "diagnostics" in path.parts, path


@pytest.mark.parametrize("text", SNIPPETS)
def test_fast_parser_equals_lark_on_the_docs_examples(text):
    check_agrees(text)


@pytest.mark.parametrize("path", CORPUS[:40], ids=lambda p: str(p.relative_to(REPO.parent)))
def test_lexer_and_postlexer_give_lark_tokens(path):
    """The master regex and the shared postlexer give the stream lark's lexer gives."""
    text = path.read_text(encoding="utf-8")
    reference = _reference()
    reference.text = text
    try:
        expected = [(t.type, str(t), t.start_pos) for t in reference.lark.lex(text)]
    except Exception:  # noqa: BLE001 (lark's error: the fast lexer must fail too)
        expected = None
    try:
        got = [(t.type, t.value, t.start_pos)
               for t in postlex.postlex(terminals.lex(text, None), text, None, 0, Token.new_borrow_pos,
                                        postlex.TokenCount())]
    except (lexer.LexError, postlex.BadIndent):
        got = None
    if expected is not None:
        assert got == expected


def test_lexer_order_and_keywords_are_lark_s():
    """The terminals read from grammar.lark, in lark's order; keywords as lark's lexer decides."""
    lark = _reference().lark
    basic = lark.parser.lexer.lexer
    assert terminals.ORDER == [t.name for t in basic.scanner.terminals]
    assert set(parser._KEYWORDS) == {t.pattern.value for t in lark.terminals
                                     if t.pattern.type == "str" and t.pattern.value.isidentifier()}
    assert {t.pattern.value: t.name for t in lark.terminals if t.pattern.value in terminals.KEYWORDS} == terminals.KEYWORDS


def test_skipped_blanks_begin_no_other_terminal():
    """The master regex skips blanks and backslash-newlines before each token (a possessive
    prefix): sound only if no other terminal can begin where they do."""
    for c in " \t\f\\":
        for t in terminals.TERMINALS:
            if t.name not in terminals.IGNORED:
                for rest in ("", "a", "1", "\n", '"', " ", "\\"):
                    assert re.match(t.regex, c + rest) is None, (t.name, c + rest)


# the scanner (lexer.scan): lex + postlex in one loop ------------------------------------------
def _lex_postlex(text: str, base: int = 7):
    """The reference token stream of the fast parser: ``terminals.lex`` (MASTER, lark's order)
    through the shared postlexer, as ``scan``'s four lists with ``$END``, plus the comments,
    the recorded offsets (sorted) and the token count; or the name of the exception."""
    tokens = postlex.TokenCount()
    comments: list = []
    record: list = []
    try:
        toks = [tuple(t) for t in postlex.postlex(terminals.lex(text, comments), text, record, base,
                                                   Token.new_borrow_pos, tokens)]
    except (lexer.LexError, postlex.BadIndent, postlex.TooManyTokens) as exc:
        return type(exc).__name__
    toks.append(("$END", "", 0, 0))
    tokens.n += len(comments)  # comments count too (lark's parser counts them in its comment callback)
    record += [base + c.start_pos for c in comments]
    if tokens.n > tokens.limit:
        return "TooManyTokens"
    return [list(x) for x in zip(*toks)], comments, sorted(record), tokens.n


def _scanned(text: str, base: int = 7):
    """``lexer.scan``'s result, as :func:`_lex_postlex`'s."""
    tokens = postlex.TokenCount()
    comments: list = []
    record: list = []
    try:
        lists = lexer.scan(text, comments, record, base, tokens)
    except (lexer.LexError, postlex.BadIndent, postlex.TooManyTokens) as exc:
        return type(exc).__name__
    return [list(x) for x in lists], comments, sorted(record), tokens.n


def check_scan(text: str) -> None:
    """The scanner gives the stream (terminal names, texts, offsets), comments, recorded token
    offsets and count that lex + postlex give, or fails too (maybe with another of their
    exceptions: it reports a text without a token or with too many at its end, and the fast
    parser only declines on any of them)."""
    got, expected = _scanned(text), _lex_postlex(text)
    if isinstance(expected, str) or isinstance(got, str):
        assert isinstance(expected, str) and isinstance(got, str), (got, expected)
    else:
        assert got == expected


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(REPO.parent)))
def test_scan_is_lex_and_postlex_on_every_recipe(path):
    check_scan(path.read_text(encoding="utf-8"))


SCAN_CORNERS = [
    "\"a\\\"b\" 'c\\'d' f\"x{y}\" f'z' \"\"\"a\"\"b\\\"\"\"\" '''c''d''' f\"\"\"e\"\"\" f'''g'''\n",
    "\"\" '' f\"\" \"\"\"\"\"\" X = \"a\\\nb\"\n", "\"unclosed\n", "\"\"\"unclosed\n", "f", "f1 = f\"\\x41\"\n",
    "X = 1 ! 2\n", "X = 1 \\\n + 2 \\\r\n + 3\n", "\t\f X = .5 + 5. + 5e3 + 1_0 // 2 % 3 * 4 <= 5 != 6\n",
    "def f():\n  if a:\n    return 1\n  return 2\n", "def f():\n    x = 1\n  return x\n", "def f():\nreturn\n",
    "X = [\n  1,\n]\n# c\n", "X = (]\n", "X = )\n", "", "\n", "# c", "X = '\\\r\nb'\n",
]


@pytest.mark.parametrize("text", SCAN_CORNERS)
def test_scan_is_lex_and_postlex_on_each_corner(text):
    check_scan(text)


def test_scan_counts_and_limits_tokens_as_postlex(monkeypatch):
    monkeypatch.setattr(postlex, "MAX_TOKENS", 10)
    check_scan("X = [1, 2]\n")
    check_scan("X = [1, 2, 3, 4, 5]\n")
    assert _scanned("X = [1, 2, 3, 4, 5]\n") == "TooManyTokens"


SCAN_ALPHABET = "aef_1.0eE+-*/%<>=!(),:[]{}#\"'\\ \t\f\r\nx"


def _scanned_under(text: str, limit: int):
    """``lexer.scan``'s result (as :func:`_scanned`) with a token limit of ``limit``."""
    tokens = postlex.TokenCount(limit)
    try:
        lists = lexer.scan(text, [], [], 7, tokens)
    except (lexer.LexError, postlex.BadIndent, postlex.TooManyTokens) as exc:
        return type(exc).__name__
    return [list(x) for x in lists], tokens.n


@settings(max_examples=200, deadline=None)
@given(st.text(SCAN_ALPHABET, max_size=60))
@example("X = [1, 2, 3]\n")
def test_scan_reads_alike_far_from_and_near_the_limit(text):
    """A text far below the token limit is read with ``findall``, one near it with
    ``finditer`` (stopping at the limit): the same tokens and count either way, and
    ``TooManyTokens`` one token over it."""
    far = _scanned_under(text, 10 ** 9)
    if isinstance(far, str):
        assert _scanned_under(text, 2 * len(text) + 1) == far
        return
    n = far[1]
    assert n <= 2 * len(text) + 1  # the bound the findall path is taken under
    assert _scanned_under(text, n) == far  # the finditer path (n < 2 * len + 2) unless the text is empty
    assert _scanned_under(text, n - 1) == "TooManyTokens"


@settings(max_examples=300, deadline=None)
@given(st.text(SCAN_ALPHABET, max_size=60))
@example("#\f\n")  # CI found it: a comment ending with a form feed, then a line break (counted)
@example("X = 1 # a\f \n")
def test_scan_is_lex_and_postlex_on_random_text(text):
    check_scan(text)


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_inputs())
def test_scan_is_lex_and_postlex_on_mutated_recipes(files_target):
    for text in mutated(files_target[0]):
        check_scan(text)


# grammar.lark's strings, unrolled: the texts of the plain form they replaced
PLAIN_STRING = r'''f?("(?:[^"\\\n]|\\(?:\r?\n|.))*+"|'(?:[^'\\\n]|\\(?:\r?\n|.))*+')'''
PLAIN_LONG_STRING = r'f?("""(?:[^"\\]|\\[\s\S]|"(?!""))*+"""|' + r"'''(?:[^'\\]|\\[\s\S]|'(?!''))*+''')"


@settings(max_examples=400, deadline=None)
@given(st.text("f\"'\\\r\na ", max_size=30), st.integers(0, 5))
def test_grammar_strings_match_what_the_plain_regexes_match(text, at):
    regexes = {t.name: t.regex for t in terminals.TERMINALS}
    for name, plain in (("STRING", PLAIN_STRING), ("LONG_STRING", PLAIN_LONG_STRING)):
        a, b = re.compile(plain).match(text, at), re.compile(regexes[name]).match(text, at)
        assert (a and a.span()) == (b and b.span()), name


def test_first_chars_cover_every_match_of_each_terminal():
    """_first_chars (the scanner's reordering rests on it): no terminal matches a text that
    begins outside its first characters (each scanned terminal matching some probe)."""
    alphabet = SCAN_ALPHABET + "AZ_9"
    rests = ("", "a", "1", '"', "'", "\n", '""', "''", '"x"', "'x'", '""x"""', "'''", "=", "/", "0")
    probes = [c + rest for c in alphabet for rest in rests]
    for t in terminals.TERMINALS:
        chars, empty = terminals._first_chars(terminals._sre_parse.parse(t.regex))
        assert chars is not None and not empty, t.name
        starts = {p[0] for p in probes if re.match(t.regex, p)}
        assert starts <= chars, t.name
        assert starts or t.name not in lexer.SCAN_ORDER, t.name


def test_the_scanner_tries_frequent_terminals_first_without_changing_any_match():
    """Each pair of terminals the scanner tries in another order than lark's cannot begin alike."""
    order = lexer.SCAN_ORDER
    lark_order = [n for n in terminals.ORDER if n in order]
    assert sorted(order) == sorted(lark_order) and order[:3] == ["_NL", "LONG_STRING", "STRING"]
    first = {t.name: terminals._first_chars(terminals._sre_parse.parse(t.regex))[0] for t in terminals.TERMINALS}
    for i, a in enumerate(lark_order):
        for b in lark_order[i + 1:]:
            if order.index(b) < order.index(a):
                assert not first[a] & first[b], (a, b)


# properties ------------------------------------------------------------------------------------
def mutated(files: dict) -> list:
    """The texts of :func:`test_fuzz.mutated_inputs`'s files that its mutations changed: the
    others are bundled sources as they are (:data:`test_fuzz.BUNDLED`), each checked once on its
    own (``test_*_on_each_bundled_source``), not again with every example (most of these
    properties' time, as they were)."""
    return [data.decode("utf-8", "surrogateescape") for path, data in files.items()
            if data != BUNDLED[path].encode("utf-8")]


@pytest.mark.parametrize("path", sorted(BUNDLED))
def test_fast_parser_equals_lark_on_each_bundled_source(path):
    """What the mutations start from, unmutated."""
    assert check_agrees(BUNDLED[path], must_accept=True) == "ok"
    check_scan(BUNDLED[path])


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(generated_inputs())
def test_fast_parser_equals_lark_on_generated_recipes(files):
    for data in files.values():
        check_agrees(data.decode("utf-8"))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_inputs())
def test_fast_parser_equals_lark_on_mutated_recipes(files_target):
    for text in mutated(files_target[0]):
        check_agrees(text)


@settings(max_examples=150, deadline=None)
@given(st.text("ab\n\r\t ", max_size=40), st.data())
def test_source_span_is_line_col_of_each_end(text, data):
    source = Source("p", text)
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert source.span(start, end) == Span("p", *source.line_col(start), *source.line_col(end))


# witnesses: each corner of the grammar ---------------------------------------------------------
VALID = [
    "X = [1, 2,]\nY = {1: 2,}\nZ = f(1, a = 2,)\nload(\"//a.rcp\", \"A\",)\n",
    "X = a not in b\nY = a in b\nZ = not a\nW = not not a == b\n",
    "X = a < b\nY = a == b\nZ = a != b\nV = a >= b\nU = a <= b\nT = a > b\n",
    "X = a if b else c if d else e\nY = (a if b else c)\n",
    "X = [x for x in y if x if not x]\nY = [x * 2 for x in a in b]\n",
    "X = {k: v for k in d if k}\nY = {a: b, c: d}\n",
    "X = ((1))\nY = (a + b) * c\nZ = -(a)\nW = (a).b\n",
    'X = f"a{b}c{{d}}e{ 1 + 2 }f{g(h, i = 1)}"\nY = f"""{a}\n{b.c}"""\nZ = f\'{x["k"]}\'\n',
    'X = """a\r\nb"""\r\nY = 1\r\n',
    "X = 1 + \\\n  2\nY = [1,\n\n  # c\n  2]\n",
    "X\t=\t1\fY\nZ = 2\n".replace("Y\n", "\n"),
    "def f(a, b = 1, *, c, d = 2):\n    return a\n\ndef g():\n    return\n",
    "def f(a):\n    if a:\n        return 1\n    elif b:\n        x = 2\n    else:\n        for i in a:\n"
    "            if i:\n                return i\n    return 3\nX = f(1)\n",
    "def f(a,):\n  # c\n  x = a  # t\n\n  return x\n",
    "# c\nX = 1  # c\nY = [  # c\n  1,  # c\n]  # c\n# c",
    "X = 1",
    "",
    "\n\n",
    "# only a comment",
    'load("//a.rcp", "A", B = "C")\n',
    "X = f(a, b = 1)\nY = -a - -b\nZ = a // b % c * d\n",
    "X = 32 .hosts\nY = 1.5\nZ = .5e3\nW = 1_000\nV = x.y[z](1)[2].w\n",
    "X = True\nY = true\nZ = None\nW = null\nV = False or false and x\n",
    "X = a + b - c\nY = -a.b\n",
    "X = 'a' \"b\" if 0 else 1\n".replace(" \"b\"", ""),
    "X = 1\n  Y = 2\n",  # indentation at the top level means nothing
    "def f():\n  if a:\n    if b:\n      return 1\n  return 2\n",  # dedent by two levels
    "def f():\n\tx = 1\n        return x\n",  # a tab is 8 columns
]
INVALID = [
    "X = [,]\n", "X = {,}\n", "X = f(,)\n", "X = a < b < c\n", "X = a == b == c\n", "X = (a, b)\n",
    "X = [1 2]\n", "X = 1 +\n", "X = 32.hosts\n", "def f(,):\n  return 1\n", "def f(a=1, b):\n  return 1\n",
    "def f(//):\n  return 1\n", "X = f(a = 1, 2)\n", "if a:\n  x = 1\n", "def f():\nreturn 1\n",
    "def f():\n    x = 1\n  return x\n", "X = 99999999999999999999999\n", 'X = "\\q"\n', "X = 1e400\n",
    'load(f"x", "A")\n', "X = f'{}'\n", "X = f'{a'\n", "X = f'}'\n", "X = f'{a = 1}'\n", "lambda x: x\n",
    "X = [x for x in y if a else b]\n", "X = a not b\n", "X = 1 ! 2\n", "X = \"a\nb\"\n", "X = \r 1\n",
    "return 1\n", "def f():\n  def g():\n    return 1\n", "X = a if b\n", "X = (1\nY = 2\n", "X = )\n",
]


@pytest.mark.parametrize("text", VALID)
def test_fast_parser_accepts_each_construct_as_lark(text):
    assert check_agrees(text, must_accept=True) == "ok"


@pytest.mark.parametrize("text", INVALID)
def test_fast_parser_declines_each_error_and_lark_reports_it(text):
    assert check_agrees(text) == "error"
    assert fast_parse(text) is None


def test_paren_and_trailing_comma_are_kept():
    _, stmts, *_ = fast_parse("X = ((a))\nY = [1,]\nZ = f(1)\n")
    assert len(stmts[0].value.parens) == 2
    assert stmts[1].value.trailing_comma and not stmts[2].value.trailing_comma


@pytest.mark.parametrize("depth", [50, 400, 5000])
def test_deep_nesting_falls_back_or_succeeds(depth):
    """Nesting deeper than Python's recursion allows: the fast parser declines (RecursionError),
    lark decides; never a crash."""
    for text in ("X = " + "[" * depth + "]" * depth + "\n", "X = " + "(" * depth + "1" + ")" * depth + "\n",
                 "X = " + "-" * depth + "1\n", "X = " + "not " * depth + "a\n"):
        fast = fast_parse(text)
        reference = lark_parse(text)
        assert fast is None or same(fast, reference)
        assert same(wired_parse(text), reference)


def test_the_token_limit_makes_the_fast_parser_decline(monkeypatch):
    monkeypatch.setattr(postlex, "MAX_TOKENS", 10)
    assert fast_parse("X = [1, 2, 3, 4, 5]\n") is None
    assert fast_parse("X = [1, 2]\n") is not None  # 7 tokens (a line break is not counted)
    with pytest.raises(CompileError) as exc:
        parser.parse(Source("r.rcp", "X = [1, 2, 3, 4, 5]\n"))
    assert exc.value.diagnostics[0].code == "E0809"


def test_syntax_error_diagnostics_are_lark_s():
    text = "X = [1 2]\nY = 1\nZ = (\n"
    got = wired_parse(text)
    assert got == lark_parse(text) and got[0] == "error" and len(got[1]) == 2
    assert "expected" in got[1][0].message


# no lark on a valid build ---------------------------------------------------------------------
DRIVER = """
import sys
from rcpc.cli import main
code = main(sys.argv[1:])
print("LARK" if "lark" in sys.modules else "NO-LARK")
sys.exit(code)
"""


def _rcpc(args: list, cwd: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, RCPC_NO_CACHE="1", XDG_CACHE_HOME=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-c", DRIVER, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_a_valid_build_does_not_import_lark(tmp_path):
    r = _rcpc(["build", "-j", "1", "-o", str(tmp_path / "out")], REPO, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "NO-LARK"


def test_a_syntax_error_is_reported_by_lark(tmp_path):
    ws = tmp_path / "ws"
    (ws / "recipes").mkdir(parents=True)
    (ws / "rcp.toml").write_text('recipe_dirs = ["recipes"]\n')
    (ws / "recipes" / "r.rcp").write_text("X = [1 2]\n")
    r = _rcpc(["build", "-j", "1", "-o", str(tmp_path / "out")], ws, tmp_path)
    assert r.returncode == 1
    assert "recipes/r.rcp:1:8" in r.stderr and "E0001" in r.stderr and "expected" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert r.stdout.strip().splitlines()[-1] == "LARK"


def test_the_scanner_tables_are_what_the_grammar_gives_today():
    """rcpc.core.syntax.scan_tables (what a build's scanner is compiled from, so no process
    reads the grammar to parse) is what ``python -m rcpc.core.syntax.terminals`` writes from
    grammar.lark now; the scanner and keywords the lexer serves are those tables'."""
    assert terminals.main(["--check"]) == 0
    assert terminals.TABLES_PATH.read_text(encoding="utf-8") == terminals.tables_text()
    scanner, order = terminals._scanner(terminals.TERMINALS, terminals.IGNORED, terminals.KEYWORDS)
    assert lexer.SCANNER.pattern == scanner.pattern and lexer.SCAN_ORDER == order
    assert lexer.KEYWORD_NAMES == frozenset(terminals.KEYWORDS)
    assert lexer._EXACT == terminals.exact(terminals.TERMINALS, terminals.IGNORED, terminals.KEYWORDS)
