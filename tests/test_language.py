"""The recipe language, feature by feature (docs/language.md, DESIGN.md §2): what the spec
files (``tests/spec/*.rcp``, run by ``tests/test_spec.py``) cannot say — the language values
and their types, the caret under a span, a hint's absence, ``--set`` and ``--variant``, render
texts, CRLF bytes, numbers past Python's own limits."""

from __future__ import annotations

import pytest
import yaml

from rcpc.core.values import Bool, Float, Int, Null, text_of, to_python

M = 'manifest(name = "m", apiVersion = "example.com/v1", kind = "Settings", data = {"v": V})\n'


def data_of(render: str):
    return yaml.safe_load(render)["data"]["v"]


# literals ---------------------------------------------------------------------------------
@pytest.mark.parametrize("src, value, kind", [
    ("2000000", 2000000, Int),
    ("2_000_000", 2000000, Int),
    ("0", 0, Int),
    ("-5", -5, Int),
    ("1e-6", 1e-6, Float),
    ("1.e-05", 1e-05, Float),
    ("2.0", 2.0, Float),
    (".5", 0.5, Float),
    ("1E+3", 1000.0, Float),
    ("-1e-6", -1e-6, Float),
    ("1_000.5", 1000.5, Float),
])
def test_number_literals_keep_their_spelling(ws, src, value, kind):
    v = ws.value(src)
    assert type(v) is kind
    assert v.value == value and type(v.value) is type(value)
    assert v.text == src
    assert ws.py(f'f"{{{src}}}"') == src  # interpolated as written


@pytest.mark.parametrize("src, value", [("True", True), ("False", False), ("true", True),
                                        ("false", False)])
def test_all_four_bool_spellings(ws, src, value):
    v = ws.value(src)
    assert type(v) is Bool and v.value is value and v.text == src
    assert ws.py(f'f"{{{src}}}"') == src


@pytest.mark.parametrize("src", ["None", "null"])
def test_none_and_null(ws, src):
    v = ws.value(src)
    assert type(v) is Null and to_python(v) is None
    assert ws.py(f'f"{{{src}}}"') == "null"
    assert ws.py(f"{src} == None") is True


@pytest.mark.parametrize("src, value", [
    ('"plain"', "plain"),
    ("'single'", "single"),
    ('""', ""),
    (r'"a\nb\tc\rd"', "a\nb\tc\rd"),
    (r'"q\"q\'q\\q"', "q\"q'q\\q"),
    (r"'it\'s'", "it's"),
    (r'"\x41\u00e9\U0001F600"', "A\u00e9\U0001F600"),
    ('"${HOME} {not} $x"', "${HOME} {not} $x"),  # plain strings are literal
    ('"a # not a comment"', "a # not a comment"),
    ('"joined \\\nline"', "joined line"),  # backslash-newline joins lines
])
def test_string_literals(ws, src, value):
    assert ws.py(src) == value


def test_triple_quoted_strings(ws):
    before = 'A = """line 1\n  "quoted" line 2\n\'single\' \\t tab\n"""\n' \
             "B = '''x\ny'''\n"
    assert ws.py("A", before) == 'line 1\n  "quoted" line 2\n\'single\' \t tab\n'
    assert ws.py("B", before) == "x\ny"


# names ------------------------------------------------------------------------------------
def test_unknown_name_did_you_mean(ws):
    f = ws.fails("TRAINER_FLAGS = 1\nX = TRAINER_FLAG + 1\n")
    assert (f.code, f.message, f.where) == ("E0101", "unknown name 'TRAINER_FLAG'", "recipes/r.rcp:2:5")
    assert f.diag.hint == "did you mean 'TRAINER_FLAGS'?"
    assert "^^^^^^^^^^^^" in f.text


def test_unknown_name_without_a_close_match_has_no_suggestion(ws):
    f = ws.fails("X = zzzqqq\n")
    assert f.code == "E0101" and f.diag.hint is None


# params, variants, --set ------------------------------------------------------------------
PARAMS = """\
    TUNED = param(bool, default = False, doc = "use the tuned mesh")
    REPLICAS = param(int, default = 4)
    LR = param(float, default = 1e-6)
    RATIO = param(float, default = 2)
    MODE = param(str, default = "x", choices = ["x", "y"])
    V = [TUNED, REPLICAS, LR, RATIO, MODE, f"{TUNED}|{REPLICAS}|{LR}|{MODE}"]
"""


def test_params_defaults_and_declarations(ws):
    ws.write("recipes/r.rcp", PARAMS + M)
    recipe, build = ws.compiler().recipe((ws.root / "recipes/r.rcp").resolve())
    assert [(p.name, p.type, p.doc) for p in recipe.params] == [
        ("TUNED", "bool", "use the tuned mesh"), ("REPLICAS", "int", ""), ("LR", "float", ""),
        ("RATIO", "float", ""), ("MODE", "str", "")]
    assert [text_of(c) for c in recipe.params[4].choices] == ["x", "y"]
    assert [v.name for v in recipe.variants] == ["default"]  # implicit when none is declared
    assert data_of(build.renders[0].text) == [False, 4, 1e-6, 2, "x", "False|4|1e-6|x"]


def test_variants_set_params(ws):
    out = ws.build(PARAMS + M + """\
        variant("default")
        variant("tuned", set = {"TUNED": true, "REPLICAS": 16, "LR": 1.e-05, "MODE": "y"})
    """)
    assert list(out) == ["default", "tuned"]
    assert data_of(out["tuned"]["m.yaml"]) == [True, 16, 1e-05, 2, "y", "true|16|1.e-05|y"]
    assert data_of(out["default"]["m.yaml"])[0] is False


def test_only_the_named_variant_is_built(ws):
    out = ws.build(PARAMS + M + 'variant("default")\nvariant("t", set = {"TUNED": True})\n', variant="t")
    assert list(out) == ["t"]


@pytest.mark.parametrize("sets, expect", [
    (["TUNED=true"], [True, 4, 1e-6, 2, "x", "true|4|1e-6|x"]),
    (["TUNED=False", "REPLICAS=8"], [False, 8, 1e-6, 2, "x", "False|8|1e-6|x"]),
    (["LR=1.e-05", "MODE=y"], [False, 4, 1e-05, 2, "y", "False|4|1.e-05|y"]),
    (["LR=3"], [False, 4, 3.0, 2, "x", "False|4|3|x"]),
])
def test_set_overrides_params_keeping_spelling(ws, sets, expect):
    out = ws.build(PARAMS + M, sets=sets)
    assert list(out) == ["custom"]
    assert data_of(out["custom"]["m.yaml"]) == expect


@pytest.mark.parametrize("sets, code, message, hint", [
    (["TUNNED=true"], "E0601", "--set TUNNED: no such param in r", "did you mean 'TUNED'?"),
    (["ZZZ=1"], "E0601", "--set ZZZ: no such param in r", "params: TUNED, REPLICAS, LR, RATIO, MODE"),
    (["TUNED=yes"], "E0602", "--set TUNED=yes: not a bool", "write true, false, True or False"),
    (["REPLICAS=1.5"], "E0602", "--set REPLICAS=1.5: not an int", "write decimal digits"),
    (["REPLICAS="], "E0602", "--set REPLICAS=: not an int", "write decimal digits"),
    (["LR=fast"], "E0602", "--set LR=fast: not a float", "write a number such as 0.5 or 1e-6"),
    (["MODE=z"], "E0602", "--set MODE=z: not one of the choices (x, y)", "write one of: x, y"),
    (["TUNED"], "E0608", "--set 'TUNED' is not NAME=VALUE",
     "write --set NAME=VALUE, e.g. --set MAX_STEPS=100"),
])
def test_set_errors(ws, sets, code, message, hint):
    f = ws.fails(PARAMS + M, sets=sets)
    assert (f.code, f.message, f.diag.hint) == (code, message, hint)


def test_required_param_can_be_given_by_set(ws):
    out = ws.build('N = param(int)\nV = N\n' + M, sets=["N=7"])
    assert data_of(out["custom"]["m.yaml"]) == 7


def test_unknown_variant(ws):
    f = ws.fails(PARAMS + M + 'variant("default")\nvariant("tuned")\n', variant="tunde")
    assert (f.code, f.message, f.diag.hint) == ("E0607", "recipe r has no variant 'tunde'", "did you mean 'tuned'?")


# renders ----------------------------------------------------------------------------------
def test_renders_from_a_comprehension_and_jobset_defaults(ws):
    out = ws.build("""\
        F = maxtext_flags({"a": 1})
        [jobset(name = f"rollout-{i}", spec = {"replicas": i}) for i in range(2)]
        flag_file(name = "trainer", flags = F)
        manifest(name = "cm", apiVersion = "v1", kind = "ConfigMap", data = {"z": "1"}, immutable = True)
    """)["default"]
    assert list(out) == ["rollout-0.yaml", "rollout-1.yaml", "trainer.flags", "cm.yaml"]
    assert yaml.safe_load(out["rollout-1.yaml"]) == {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "rollout-1"},
        "spec": {"replicas": 1}}
    assert list(yaml.safe_load(out["cm.yaml"])) == ["apiVersion", "kind", "metadata", "data", "immutable"]
    assert out["trainer.flags"] == "a=1\n"


def test_crlf_source_files(ws):
    (ws.root / "recipes").mkdir()
    (ws.root / "recipes" / "r.rcp").write_bytes(
        b'X = "a\\\r\nb"\r\nV = [\r\n  X,\r\n  f"{X}\\\r\nc",\r\n]\r\n' + M.encode())
    assert data_of(ws.build()["default"]["m.yaml"]) == ["ab", "abc"]
    (ws.root / "recipes" / "r.rcp").write_bytes(b"X = 1\r\nY = Z\r\n")
    f = ws.fails()
    assert (f.code, f.where) == ("E0101", "recipes/r.rcp:2:5")
    assert " 2 | Y = Z\n" in f.text + "\n"


@pytest.mark.parametrize("text", [
    "X = 9223372036854775808\n",                       # 2**63
    "X = " + "9" * 5000 + "\n",                        # more digits than int() allows by default
    "A = 4294967296\nX = A * A * A\n",                 # an arithmetic result
    "X = 1e999\n",                                     # a float that is inf
])
def test_numbers_out_of_range_are_errors(ws, text):
    f = ws.fails(text, dedent=False)
    assert f.code == "E0806" and f.diag.span is not None




