"""Highlighting: the TextMate grammar (``editors/vscode/syntaxes/rcp.tmLanguage.json``)
tokenized by the real engine of VS Code (npm's vscode-textmate + vscode-oniguruma, installed
in tests/js by .ci/run), and the Pygments lexer found through its ``pygments.lexers`` entry
point, both on the bundled recipes and on a sample of every token kind."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, String

from rcpc.domain.builtins import NAMES

from conftest import BUNDLED_FILES

# all in one pytest-xdist worker (tests/run: --dist loadgroup): its module fixture runs VS Code's TextMate engine (node) once
pytestmark = pytest.mark.xdist_group("test_highlight")

REPO = Path(__file__).resolve().parent.parent
GRAMMAR = REPO / "editors/vscode/syntaxes/rcp.tmLanguage.json"
TOKENIZE = REPO / "tests/js/tokenize.mjs"
RECIPES = BUNDLED_FILES

SAMPLE = '''load("//lib/x.rcp", "A", B = "C")  # rcpc: ignore[L0001]
N = param(int, default = 1_000, doc = """two
lines""")
X = {"lr": 1e-6, 'on': true, "off": False, "none": null, "n": -N // 2}
Y = [f"{k}-{{raw}}-{X['lr']}" for k in X.keys() if k != "n" and not k in ["on"]]
Z = X.get("lr") if len(Y) >= 2 else None
'''

# A call of every built-in (a sample for the tokenizers; it need not compile).
BUILTIN_CALLS = "X = [" + ", ".join(f"{n}(a, b = bool)" for n in sorted(NAMES)) + "]\n"


@pytest.fixture(scope="module")
def textmate():
    """{file: [[(text, scopes)] per line]} of the sample (as ``sample.rcp``) and the bundled recipes."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        sample = Path(tmp) / "sample.rcp"
        sample.write_text(SAMPLE)
        calls = Path(tmp) / "builtins.rcp"
        calls.write_text(BUILTIN_CALLS)
        got = subprocess.run(["node", str(TOKENIZE), str(GRAMMAR), str(sample), str(calls), *map(str, RECIPES)],
                             capture_output=True, text=True, cwd=TOKENIZE.parent)
        assert got.returncode == 0, got.stderr + "\n(install the npm packages: npm ci --prefix tests/js)"
        out = json.loads(got.stdout)
        return {Path(k).name if k in (str(sample), str(calls)) else str(Path(k).relative_to(REPO)): v
                for k, v in out.items()}


def scopes_of(lines, text: str, nth: int = 0) -> list[str]:
    found = [s for line in lines for t, s in line if t == text]
    assert len(found) > nth, f"no token {text!r}"
    return found[nth]


def test_textmate_sample(textmate):
    lines = textmate["sample.rcp"]
    expect = {
        "load": "keyword.control.import.rcp",
        "# rcpc: ignore[L0001]": None,
        "N": "entity.name.variable.definition.rcp",
        "param": "support.function.builtin.rcp",
        "int": "support.type.rcp",
        "default": "variable.parameter.rcp",
        "1_000": "constant.numeric.integer.rcp",
        "1e-6": "constant.numeric.float.rcp",
        '"lr"': "meta.mapping.key.rcp",
        "'on'": "meta.mapping.key.rcp",
        "true": "constant.language.boolean.rcp",
        "False": "constant.language.boolean.rcp",
        "null": "constant.language.null.rcp",
        "None": "constant.language.null.rcp",
        "//": "keyword.operator.arithmetic.rcp",
        "for": "keyword.control.loop.rcp",
        "and": "keyword.operator.logical.rcp",
        "not": "keyword.operator.logical.rcp",
        "{{": "constant.character.escape.rcp",
        "keys": "variable.other.property.rcp",
        ">=": "keyword.operator.comparison.rcp",
        "if": "keyword.control.conditional.rcp",
    }
    for text, scope in expect.items():
        if scope is not None:
            assert scope in scopes_of(lines, text), (text, scopes_of(lines, text))
    assert "keyword.other.directive.ignore.rcp" in scopes_of(lines, "rcpc: ignore[L0001]")
    # the triple-quoted doc spans two lines; the f-string's fields are expressions
    assert "string.quoted.triple.rcp" in scopes_of(lines, "lines")
    k = scopes_of(lines, "k", 0)
    assert "meta.interpolation.rcp" in k and "variable.other.rcp" in k
    assert "meta.interpolation.rcp" in scopes_of(lines, "X", 1)
    assert "meta.interpolation.rcp" not in scopes_of(lines, "k", 1)
    assert "string.interpolated.rcp" in scopes_of(lines, "-", 1)


def test_textmate_bundled_recipes(textmate):
    rl = textmate["recipes/rl/qwen35_397b_256_v7x.rcp"]
    assert "keyword.control.import.rcp" in scopes_of(rl, "load")
    assert "string.quoted.double.rcp" in scopes_of(rl, "@rcpc//rl_pathways.rcp")
    assert "entity.name.variable.definition.rcp" in scopes_of(rl, "ROLLOUT_REPLICAS")
    assert "meta.mapping.key.rcp" in scopes_of(rl, '"model_name"')
    assert "constant.language.boolean.rcp" in scopes_of(rl, "True")
    for name, lines in textmate.items():
        text = {"sample.rcp": SAMPLE, "builtins.rcp": BUILTIN_CALLS}.get(name) or (REPO / name).read_text()
        text = text.split("\n")
        for n, (line, toks) in enumerate(zip(text, lines), 1):
            assert "".join(t for t, _ in toks) == line
            if line.startswith("#"):   # a comment line is a comment: no string ran on into it
                assert toks[0][1][1:] == ["comment.line.number-sign.rcp", "punctuation.definition.comment.rcp"], \
                    (name, n)
            if line and line[0].isupper() and " = " in line:   # a top-level definition
                assert toks[0][1][1:] == ["entity.name.variable.definition.rcp"], (name, n, toks[0])


def test_pygments_entry_point_and_tokens():
    lexer = get_lexer_for_filename("x.rcp")
    assert type(lexer) is type(get_lexer_by_name("rcp"))
    toks = [(t, v) for t, v in lexer.get_tokens(SAMPLE) if v.strip()]
    assert "".join(v for _, v in lexer.get_tokens(SAMPLE)) == SAMPLE
    kinds = dict((v, t) for t, v in reversed(toks))
    assert kinds["load"] is Keyword.Namespace
    assert kinds["# rcpc: ignore[L0001]"] is Comment.Special
    assert kinds["N"] is Name.Variable
    assert kinds["param"] is Name.Builtin and kinds["int"] is Name.Builtin.Type
    assert kinds["default"] is Name.Attribute
    assert kinds["1_000"] is Number.Integer and kinds["1e-6"] is Number.Float
    assert kinds['"lr"'] is Name.Tag and kinds["'on'"] is Name.Tag
    for c in ("true", "False", "null", "None"):
        assert kinds[c] is Keyword.Constant
    assert kinds["and"] is Operator.Word and kinds["for"] is Keyword
    assert (String.Interpol, "{") in toks and (String.Escape, "{{") in toks
    assert (Name, "k") in toks


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: str(p.relative_to(REPO)))
def test_pygments_bundled_recipes(path):
    text = path.read_text()
    toks = list(get_lexer_by_name("rcp").get_tokens(text))
    assert not [v for t, v in toks if t is Error]
    assert "".join(v for _, v in toks).rstrip("\n") == text.rstrip("\n")


def test_grammars_name_every_builtin_of_the_compiler(textmate):
    """The built-in functions and types the TextMate grammar and the Pygments lexer mark are
    exactly the compiler's (a new built-in is highlighted, or this fails), and each is marked
    as such where a recipe calls it."""
    import re

    from rcpc.domain.builtins import NAMES
    from rcpc.highlight import BUILTINS, TYPES

    from rcpc.lsp.query import BUILTIN_DOCS

    assert sorted(BUILTINS + TYPES) == sorted(NAMES) and not set(BUILTINS) & set(TYPES)
    assert sorted(BUILTIN_DOCS) == sorted(NAMES)  # the editor's hover and signature help too
    rules = {r["name"]: r["match"] for r in json.loads(GRAMMAR.read_text())["repository"]["builtin"]["patterns"]}
    listed = {scope: set(re.search(r"\(\?:([\w|]+)\)", m).group(1).split("|")) for scope, m in rules.items()}
    assert listed == {"support.function.builtin.rcp": set(BUILTINS), "support.type.rcp": set(TYPES)}
    lines = textmate["builtins.rcp"]
    for name in BUILTINS:
        assert "support.function.builtin.rcp" in scopes_of(lines, name), name
    assert "support.type.rcp" in scopes_of(lines, "bool")
    toks = [(t, v) for t, v in get_lexer_by_name("rcp").get_tokens(BUILTIN_CALLS) if v.strip()]
    for name in BUILTINS:
        assert (Name.Builtin, name) in toks, name


def test_the_generated_word_lists_are_current():
    """Both grammars' built-in words are generated from the built-ins' declarations
    (``python -m rcpc.grammars``): regenerated, every file is as committed."""
    from rcpc import grammars

    for path, text in grammars.generated(REPO).items():
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run python -m rcpc.grammars"


def test_every_builtin_is_declared_with_a_signature_and_a_doc():
    """One declaration a built-in (rcpc.core.builtins.Function/Declaration/TypeDoc): the lint
    tables, the language server's and the grammars read it, so each has a doc to show."""
    from rcpc.core.builtins import Function
    from rcpc.domain import lint
    from rcpc.domain.builtins import NAMES, UNIVERSE
    from rcpc.domain.renders import KINDS

    for name in NAMES:
        d = UNIVERSE.declared(name)
        assert d is not None and d.doc.endswith("."), name
        assert type(d) is not Function or d.signature.startswith(name), name
    renders = {n for k in KINDS for n in k.functions}
    assert {n for n, f in UNIVERSE.functions.items() if f.makes == "render"} == renders
    assert lint._RENDER_CALLS == renders | {"variant", "variants"}  # command_file was missing from a hand-kept copy


def test_vscode_extension_manifest():
    """The manifest names the grammar, its scope and the language as they are, and its entry
    point starts ``rcpc lsp`` over stdio."""
    ext = REPO / "editors/vscode"
    manifest = json.loads((ext / "package.json").read_text())
    (lang,) = manifest["contributes"]["languages"]
    (grammar,) = manifest["contributes"]["grammars"]
    assert lang["extensions"] == [".rcp"] and grammar["language"] == lang["id"]
    assert (ext / grammar["path"]).resolve() == GRAMMAR
    assert json.loads(GRAMMAR.read_text())["scopeName"] == grammar["scopeName"] == "source.rcp"
    assert json.loads((ext / lang["configuration"]).read_text())["comments"]["lineComment"] == "#"
    main = (ext / manifest["main"]).read_text()
    assert 'args: ["lsp"]' in main and "vscode-languageclient" in manifest["dependencies"]
    subprocess.run(["node", "--check", str(ext / manifest["main"])], check=True)
