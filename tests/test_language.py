"""The recipe language, feature by feature (docs/language.md, DESIGN.md §2): each feature's
success cases and its errors (code, message, ``path:line:col``)."""

from __future__ import annotations

import pytest
import yaml

from rcpc.values import Bool, Float, Int, Null, Str, text_of, to_python

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


def test_computed_values_are_spelled_canonically(ws):
    assert ws.py('f"{2_000 * 1}"') == "2000"
    assert ws.py('f"{not True}-{not true}-{1 < 2}"') == "False-false-True"
    assert ws.value("- -5").text == "5"


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


@pytest.mark.parametrize("src, col, message", [
    (r'"bad \q"', 10, r"unknown escape \q"),
    (r'"bad \x4"', 10, r"bad escape \x4"),
    (r'"\u12"', 6, r"bad escape \u12"),
])
def test_bad_escapes(ws, src, col, message):
    f = ws.fails_expr(src)
    assert (f.code, f.message, f.where) == ("E0002", message, f"recipes/r.rcp:1:{col}")


def test_unclosed_string(ws):
    f = ws.fails('X = 1\nY = "abc\n')
    assert (f.code, f.where) == ("E0001", "recipes/r.rcp:2:5")
    assert "triple-quoted" in f.diag.hint


# f-strings --------------------------------------------------------------------------------
def test_fstring_interpolation(ws):
    before = 'P = "demo"\nN = 2_000_000\nLR = 1e-6\nT = True\nt = true\nD = {"k": "v"}\n'
    assert ws.py('f"{P}-train"', before) == "demo-train"
    assert ws.py('f"{N}/{LR}/{T}/{t}/{None}/{null}"', before) == "2_000_000/1e-6/True/true/null/null"
    assert ws.py('f"{{literal}} {{{P}}}"', before) == "{literal} {demo}"
    assert ws.py("f\"{D['k']}{P + '!'}{N * 0}{len(P)}\"", before) == "v" + "demo!" + "0" + "4"
    assert ws.py(r'f"tab\t{P}\n"', before) == "tab\tdemo\n"
    assert ws.py("f'{P}'", before) == "demo"
    assert ws.py('f"""multi\n{P}"""', before) == "multi\ndemo"


@pytest.mark.parametrize("expr, code, col, message", [
    ('f"{"', "E0001", 7, "unclosed '{' in f-string"),
    ('f"a}"', "E0001", 8, "single '}' in f-string"),
    ('f"{}"', "E0001", 7, "empty replacement field in f-string"),
    ('f"a{[1]}"', "E0301", 9, "cannot put a list into an f-string"),
    ('f"a{D}"', "E0301", 9, "cannot put a dict into an f-string"),
    ('f"xy{NAMEE}"', "E0101", 10, "unknown name 'NAMEE'"),
])
def test_fstring_errors(ws, expr, code, col, message):
    f = ws.fails_expr(expr, 'NAME = 1\nD = {"k": 1}\n')
    assert (f.code, f.message, f.where) == (code, message, f"recipes/r.rcp:3:{col}")


# names ------------------------------------------------------------------------------------
def test_single_assignment(ws):
    f = ws.fails("A = 1\nB = 2\nA = 3\n")
    assert (f.code, f.message, f.where) == ("E0102", "'A' is already bound in this file", "recipes/r.rcp:3:1")
    assert [(label, str(span)) for label, span in f.diag.related] == [("first bound here", "recipes/r.rcp:1:1")]


def test_a_loaded_name_cannot_be_reassigned(ws):
    ws.write("recipes/lib/a.rcp", "A = 1\n")
    f = ws.fails('load("lib/a.rcp", "A")\nA = 2\n')
    assert (f.code, f.where) == ("E0102", "recipes/r.rcp:2:1")


def test_builtin_names_cannot_be_bound(ws):
    f = ws.fails("X = 1\nrange = 3\n")
    assert (f.code, f.message, f.where) == ("E0104", "cannot bind built-in name 'range'", "recipes/r.rcp:2:1")


def test_unknown_name_did_you_mean(ws):
    f = ws.fails("TRAINER_FLAGS = 1\nX = TRAINER_FLAG + 1\n")
    assert (f.code, f.message, f.where) == ("E0101", "unknown name 'TRAINER_FLAG'", "recipes/r.rcp:2:5")
    assert f.diag.hint == "did you mean 'TRAINER_FLAGS'?"
    assert "^^^^^^^^^^^^" in f.text


def test_unknown_name_without_a_close_match_has_no_suggestion(ws):
    f = ws.fails("X = zzzqqq\n")
    assert f.code == "E0101" and f.diag.hint is None


def test_every_name_error_of_a_file_is_reported(ws):
    f = ws.fails("X = AAA\nY = BBB\nZ = X\nZ = 1\n")
    assert [(d.code, str(d.span)) for d in f.diags] == [
        ("E0101", "recipes/r.rcp:1:5"), ("E0101", "recipes/r.rcp:2:5"), ("E0102", "recipes/r.rcp:4:1")]


def test_use_before_assignment(ws):
    f = ws.fails("X = 1\nY = Z + X\nZ = 2\n")
    assert (f.code, f.message, f.where) == ("E0103", "'Z' is used before it is assigned", "recipes/r.rcp:2:5")
    assert [(label, str(span)) for label, span in f.diag.related] == [("assigned here", "recipes/r.rcp:3:1")]


def test_comprehension_variable_is_local(ws):
    f = ws.fails("X = [i for i in range(3)]\nY = i\n")
    assert (f.code, f.where) == ("E0101", "recipes/r.rcp:2:5")


# operators --------------------------------------------------------------------------------
def test_plus_on_strings_lists_dicts(ws):
    assert ws.py('"a" + "b" + ""') == "ab"
    assert ws.py("[1] + [2, 3] + []") == [1, 2, 3]
    merged = ws.py('{"a": 1, "b": 2} + {"b": 3, "c": 4}')
    assert merged == {"a": 1, "b": 3, "c": 4} and list(merged) == ["a", "b", "c"]
    assert list(ws.py('{"z": 1} + {"a": 2}')) == ["z", "a"]  # never sorted


def test_plus_on_flag_sets(ws):
    before = 'A = maxtext_flags({"x": 1, "y": 2})\nB = maxtext_flags({"x": 3})\n'
    assert ws.py("(A + B).argv", before) == ["x=1", "y=2", "x=3"]
    assert ws.py("(A + B).resolved", before) == {"x": 3, "y": 2}


@pytest.mark.parametrize("expr, value", [
    ("7 - 2 * 3", 1), ("(7 - 2) * 3", 15), ("7 // 2", 3), ("-7 // 2", -4), ("7 % 3", 1),
    ("-7 % 3", 2), ("2_000 * 1_000", 2000000), ("10 - -3", 13), ("1 + 2 * 3 - 4 // 2", 5),
])
def test_int_arithmetic(ws, expr, value):
    v = ws.value(expr)
    assert type(v) is Int and v.value == value and v.text == str(value)


@pytest.mark.parametrize("expr", ["1.5 + 2.0", "2 * 1e-6", "1e-6 - 1", "3 // 1.5", "1.0 % 2"])
def test_no_float_arithmetic(ws, expr):
    f = ws.fails_expr(expr)
    assert f.code == "E0301" and f.message.startswith("no float arithmetic")
    assert f.where == "recipes/r.rcp:1:5"


@pytest.mark.parametrize("expr, message", [
    ('1 + "a"', "unsupported operand types for +: int and string"),
    ('"a" * 3', "unsupported operand types for *: string and int"),
    ('[1] + {"a": 1}', "unsupported operand types for +: list and dict"),
    ("True + 1", "unsupported operand types for +: bool and int"),
    ('"a" - "b"', "unsupported operand types for -: string and string"),
])
def test_operand_type_errors(ws, expr, message):
    f = ws.fails_expr(expr)
    assert (f.code, f.message, f.where) == ("E0301", message, "recipes/r.rcp:1:5")


@pytest.mark.parametrize("expr, col", [("1 // 0", 10), ("5 % (2 - 2)", 10)])
def test_division_by_zero(ws, expr, col):
    f = ws.fails_expr(expr)
    assert (f.code, f.message, f.where) == ("E0303", "division by zero", f"recipes/r.rcp:1:{col}")


@pytest.mark.parametrize("expr, value", [
    ("1 == 1", True), ("1 == 1.0", True), ("1 != 2", True), ("True == 1", False),
    ('"a" == "a"', True), ("[1, [2]] == [1, [2]]", True), ('{"a": 1} == {"a": 1}', True),
    ("None == null", True), ("None == False", False),
    ("1 < 2", True), ("2 <= 2", True), ("3 > 4", False), ("1e-6 < 1", True), ('"a" < "b"', True),
    ("2 in [1, 2]", True), ("3 not in [1, 2]", True), ('"k" in {"k": 1}', True),
    ('"ell" in "hello"', True), ('"x" not in "hello"', True),
])
def test_comparisons(ws, expr, value):
    v = ws.value(expr)
    assert type(v) is Bool and v.value is value


@pytest.mark.parametrize("expr, message", [
    ('1 < "a"', "cannot order int and string"),
    ("[1] < [2]", "cannot order list and list"),
    ("1 in 5", "'in' needs a list, dict or string on the right, got int"),
])
def test_comparison_errors(ws, expr, message):
    f = ws.fails_expr(expr)
    assert (f.code, f.message) == ("E0301", message)


@pytest.mark.parametrize("expr, value", [
    ("True and False", False), ("True or False", True), ("not False", True),
    ("not (1 == 2) and 2 > 1", True),
    ("False and [1][5]", False),  # short-circuit: the right side is not evaluated
    ("True or [1][5]", True),
])
def test_and_or_not(ws, expr, value):
    assert ws.py(expr) is value


@pytest.mark.parametrize("expr, col, message", [
    ("1 and True", 5, "'and' needs bools, got int"),
    ('False or "x"', 14, "'or' needs bools, got string"),
    ("not []", 9, "'not' needs a bool, got list"),
])
def test_bool_operator_errors(ws, expr, col, message):
    f = ws.fails_expr(expr)
    assert (f.code, f.message, f.where) == ("E0301", message, f"recipes/r.rcp:1:{col}")


def test_conditional_expression(ws):
    assert ws.py('"a" if 1 < 2 else "b"') == "a"
    assert ws.py('"a" if 1 > 2 else "b"') == "b"
    assert ws.py("1 if True else [1][5]") == 1  # only the chosen branch is evaluated
    assert ws.py('"a" if False else "b" if True else "c"') == "b"


def test_condition_must_be_a_bool(ws):
    f = ws.fails_expr('"a" if 1 else "b"')
    assert (f.code, f.message, f.where) == ("E0301", "a condition must be a bool, got int", "recipes/r.rcp:1:12")
    assert "compare explicitly" in f.diag.hint


# indexing and attributes ------------------------------------------------------------------
@pytest.mark.parametrize("expr, value", [
    ("[10, 20, 30][0]", 10), ("[10, 20, 30][-1]", 30), ('"abc"[1]', "b"), ('"abc"[-3]', "a"),
    ('{"a": {"b": [5]}}["a"]["b"][0]', 5),
])
def test_indexing(ws, expr, value):
    assert ws.py(expr) == value


@pytest.mark.parametrize("expr, code, col, message", [
    ("[1, 2][2]", "E0305", 12, "index 2 out of range for list of length 2"),
    ("[1, 2][-3]", "E0305", 12, "index -3 out of range for list of length 2"),
    ('"ab"[5]', "E0305", 10, "index 5 out of range for string of length 2"),
    ('{"alpha": 1}["alpah"]', "E0305", 18, "key 'alpah' not in dict"),
    ('[1]["a"]', "E0301", 9, "index must be an int, got a string"),
    ('{"a": 1}[0]', "E0301", 14, "dict key must be a string, got an int"),
    ("5[0]", "E0301", 5, "a int cannot be indexed"),
])
def test_indexing_errors(ws, expr, code, col, message):
    f = ws.fails_expr(expr)
    assert (f.code, f.message, f.where) == (code, message, f"recipes/r.rcp:1:{col}")


def test_missing_dict_key_did_you_mean(ws):
    f = ws.fails_expr('{"alpha": 1}["alpah"]')
    assert f.diag.hint == "did you mean 'alpha'?"


def test_attributes_of_a_tpu_slice(ws):
    before = 'S = tpu_slice("tpu7x:4x4x8")\n'
    assert ws.py("[S.chips, S.hosts, S.devices, S.chips_per_host, S.devices_per_chip]", before) == [128, 32, 256, 4, 2]
    assert ws.py("[S.generation, S.accelerator, S.topology, S.name, S.machine_type]", before) == [
        "v7x", "tpu7x", "4x4x8", "tpu7x:4x4x8", "tpu7x-standard-4t"]
    assert ws.py("S.dims", before) == [4, 4, 8]
    assert ws.py("S.node_selector", before) == {
        "cloud.google.com/gke-tpu-accelerator": "tpu7x", "cloud.google.com/gke-tpu-topology": "4x4x8"}
    assert ws.py('f"{S.chips}"', before) == "128"


def test_attributes_of_a_flag_set(ws):
    before = 'F = maxtext_flags({"a": 1e-6, "b": "x y"}, {"a": 2})\n'
    assert ws.py("F.argv", before) == ["a=1e-6", "b=x y", "a=2"]
    assert ws.py("F.shell", before) == "a=1e-6 'b=x y' a=2"
    assert ws.py("F.resolved", before) == {"a": 2, "b": "x y"}


def test_attributes_of_strings_and_dicts(ws):
    assert ws.py('"a,b,c".split(",")') == ["a", "b", "c"]
    assert ws.py('" a  b ".split()') == ["a", "b"]
    assert ws.py('"-".join(["x", "y", "z"])') == "x-y-z"
    assert ws.py('" Hi ".strip().upper() + "Hi".lower()') == "HIhi"
    assert ws.py('"a-b-c".replace("-", "_")') == "a_b_c"
    assert ws.py('["abc".startswith("ab"), "abc".endswith("bc"), "abc".startswith("c")]') == [True, True, False]
    d = '{"x": 1, "y": 2}'
    assert ws.py(f"{d}.keys()") == ["x", "y"]
    assert ws.py(f"{d}.values()") == [1, 2]
    assert ws.py(f'[{d}.get("x"), {d}.get("z"), {d}.get("z", 5)]') == [1, None, 5]


@pytest.mark.parametrize("expr, col, message, hint", [
    ('tpu_slice("v5e:2x2").chipz', 26, "a tpu_slice has no attribute 'chipz'", "did you mean 'chips'?"),
    ('maxtext_flags({"a": 1}).args', 29, "a maxtext_flags has no attribute 'args'", "did you mean 'argv'?"),
    ('"abc".foo', 11, "a string has no attribute 'foo'",
     "a string has: endswith, join, lower, replace, split, startswith, strip, upper"),
    ('{"name": 1}.name', 17, "a dict has no attribute 'name'", 'use ["name"] to read a dict entry'),
    ("(1).real", 9, "a int has no attribute 'real'", None),
])
def test_attribute_errors(ws, expr, col, message, hint):
    f = ws.fails_expr(expr)
    assert (f.code, f.message, f.where, f.diag.hint) == ("E0307", message, f"recipes/r.rcp:1:{col}", hint)


def test_method_argument_errors(ws):
    f = ws.fails_expr('"-".join([1, 2])')
    assert (f.code, f.message) == ("E0301", "each item joined must be a string, got an int")
    f = ws.fails_expr('"a".split(",", ",")')
    assert f.code == "E0306"


# containers and comprehensions ------------------------------------------------------------
def test_dicts_keep_insertion_order(ws):
    assert list(ws.py('{"z": 1, "a": 2, "m": 3}')) == ["z", "a", "m"]


def test_dict_keys_are_strings(ws):
    f = ws.fails_expr("{1: 2}")
    assert (f.code, f.message, f.where) == ("E0301", "dict keys are strings, got int", "recipes/r.rcp:1:6")
    assert f.diag.hint == 'write the key as a string: "1"'


def test_repeated_key_in_one_dict(ws):
    f = ws.fails('X = {\n    "a": 1,\n    "a": 2,\n}\n')
    assert (f.code, f.message, f.where) == ("E0302", "key 'a' appears twice in this dict", "recipes/r.rcp:3:5")
    assert [str(s) for _, s in f.diag.related] == ["recipes/r.rcp:2:5"]


def test_list_comprehensions(ws):
    assert ws.py("[i * 2 for i in range(5) if i != 2]") == [0, 2, 6, 8]
    assert ws.py("[i for i in range(10) if i > 2 if i % 2 == 0]") == [4, 6, 8]
    assert ws.py('[k + "!" for k in {"a": 1, "b": 2}]') == ["a!", "b!"]
    assert ws.py('[f"rollout-{i}" for i in range(N)]', "N = 3\n") == ["rollout-0", "rollout-1", "rollout-2"]
    assert ws.py("[x for x in []]") == []


def test_dict_comprehensions(ws):
    v = ws.py('{f"r{i}": i * i for i in range(4) if i > 0}')
    assert v == {"r1": 1, "r2": 4, "r3": 9} and list(v) == ["r1", "r2", "r3"]


@pytest.mark.parametrize("expr, code, message", [
    ("[i for i in 5]", "E0301", "cannot iterate over a int"),
    ("[i for i in [1] if i]", "E0301", "a condition must be a bool, got int"),
    ('{"k": i for i in range(2)}', "E0302", "key 'k' is produced twice by this comprehension"),
    ("{i: i for i in range(2)}", "E0301", "dict keys are strings, got int"),
])
def test_comprehension_errors(ws, expr, code, message):
    f = ws.fails_expr(expr)
    assert (f.code, f.message) == (code, message)


def test_builtin_functions(ws):
    assert ws.py("range(3)") == [0, 1, 2]
    assert ws.py("range(2, 10, 3)") == [2, 5, 8]
    assert ws.py("range(3, 0, -1)") == [3, 2, 1]
    assert ws.py('[len([1, 2]), len({"a": 1}), len("abc")]') == [2, 1, 3]
    assert ws.py('[str(1e-6), str(2_000), str(True), str(None), str("s")]') == ["1e-6", "2_000", "True", "null", "s"]
    assert ws.py('json({"b": [1, 1e-6, True, None, "x\\"y"], "a": {}})') == '{"b":[1,1e-6,true,null,"x\\"y"],"a":{}}'


@pytest.mark.parametrize("expr, code, message", [
    ("range(1, 2, 0)", "E0303", "range() step must not be zero"),
    ("range()", "E0306", "range() takes 1 to 3 ints"),
    ('range("3")', "E0301", "range() argument must be an int, got a string"),
    ("len(5)", "E0301", "len() of a int"),
    ("str([1])", "E0301", "str() of a list"),
    ("json(tpu_slice(\"v4:2x2x1\"))", "E0301", "a tpu_slice has no JSON form"),
    ("len([1], [2])", "E0306", "len() takes at most 1 positional argument(s), got 2"),
    ("len(y = 1)", "E0306", "len() has no argument 'y'"),
    ("len(x = 1, x = 2)", "E0306", "argument 'x' given twice"),
    ("(5)(1)", "E0301", "a int is not callable"),
])
def test_builtin_function_errors(ws, expr, code, message):
    f = ws.fails_expr(expr)
    assert (f.code, f.message) == (code, message)


def test_positional_argument_after_keyword(ws):
    f = ws.fails_expr('variant(set = {}, "x")')
    assert (f.code, f.message, f.where) == ("E0001", "positional argument after a keyword argument", "recipes/r.rcp:1:23")


def test_expression_statement_must_declare_something(ws):
    f = ws.fails('X = 1\n"just a string"\n')
    assert (f.code, f.message, f.where) == ("E0705", "this string is not used", "recipes/r.rcp:2:1")


def test_recipes_cannot_define_functions_or_loop(ws):
    for src, word in [("def f(x):\n    return x\n", "def"), ("while True:\n    X = 1\n", "while"),
                      ("import os\n", "import"), ("lambda x: x\n", "lambda"), ("class A:\n    pass\n", "class")]:
        f = ws.fails(src)
        assert f.code == "E0001" and f.message == f"'{word}' is not part of the recipe language", src


# load() -----------------------------------------------------------------------------------
def test_load_workspace_and_relative_paths_and_aliases(ws):
    ws.write("recipes/lib/base.rcp", '_PRIVATE = 40\nANSWER = _PRIVATE + 2\nNAME = "base"\n')
    ws.write("recipes/lib/more.rcp", 'load("base.rcp", "ANSWER")\nDOUBLE = ANSWER * 2\n')
    ws.write("recipes/sub/r.rcp", """\
        load("//recipes/lib/base.rcp", "ANSWER", N = "NAME")
        load("../lib/more.rcp", "DOUBLE")
        load("./../lib/./base.rcp", A2 = "ANSWER")
        V = [ANSWER, N, DOUBLE, A2]
    """ + M)
    out = ws.build(path="recipes/sub/r.rcp")
    assert data_of(out["default"]["m.yaml"]) == [42, "base", 84, 42]


def test_load_private_name(ws):
    ws.write("recipes/lib/a.rcp", "_P = 1\n")
    f = ws.fails('load("lib/a.rcp", "_P")\n')
    assert (f.code, f.message, f.where) == ("E0203", "'_P' is private to lib/a.rcp", "recipes/r.rcp:1:19")


def test_load_missing_name_did_you_mean(ws):
    ws.write("recipes/lib/a.rcp", "ALPHA = 1\n_ALPH = 2\n")
    f = ws.fails('load("lib/a.rcp", X = "ALPH")\n')
    assert (f.code, f.message, f.where) == ("E0203", "lib/a.rcp has no name 'ALPH'", "recipes/r.rcp:1:19")
    assert f.diag.hint == "did you mean 'ALPHA'?"


@pytest.mark.parametrize("path, code, message", [
    ("lib/nope.rcp", "E0201", "cannot load 'lib/nope.rcp': no such file"),
    ("//nope/x.rcp", "E0201", "cannot load '//nope/x.rcp': no such file"),
    ("../../outside.rcp", "E0204", None),
    ("//../outside.rcp", "E0204", None),
    ("/etc/x.rcp", "E0204", "load path '/etc/x.rcp' is absolute"),
    ("lib/a.yaml", "E0205", "load path 'lib/a.yaml' does not name a .rcp file"),
])
def test_load_path_errors(ws, path, code, message):
    f = ws.fails(f'X = 1\nload("{path}", "A")\n')
    assert (f.code, f.where) == (code, "recipes/r.rcp:2:6")
    if message:
        assert f.message == message
    else:
        assert "leaves the workspace" in f.message


def test_missing_file_hint_names_the_resolved_path(ws):
    f = ws.fails('load("lib/../lib/nope.rcp", "A")\n')
    assert f.diag.hint == "looked for recipes/lib/nope.rcp"


def test_load_cycle_through_dot_spellings(ws):
    ws.write("recipes/lib/a.rcp", 'load("./b.rcp", "B")\nA = B\n')
    ws.write("recipes/lib/b.rcp", 'load("../lib/a.rcp", "A")\nB = A\n')
    f = ws.fails('load("//recipes/lib/a.rcp", "A")\nV = A\n')
    assert f.code == "E0202"
    assert f.message == ("load cycle: recipes/r.rcp:1 -> recipes/lib/a.rcp:1 -> recipes/lib/b.rcp:1"
                         " -> recipes/lib/a.rcp")
    assert f.where == "recipes/lib/b.rcp:1:6"
    assert "Traceback" not in f.text


def test_load_cycle_back_to_the_recipe(ws):
    ws.write("recipes/lib/a.rcp", 'load("../r.rcp", "V")\nA = 1\n')
    f = ws.fails('load("lib/a.rcp", "A")\nV = A\n')
    assert (f.code, f.message) == ("E0202", "load cycle: recipes/r.rcp:1 -> recipes/lib/a.rcp:1 -> recipes/r.rcp")


def test_a_file_loading_itself_is_a_cycle(ws):
    ws.write("recipes/lib/a.rcp", 'X = 1\nload("./../lib/a.rcp", B = "A")\nA = 1\n')
    f = ws.fails('load("lib/a.rcp", "A")\n')
    assert (f.code, f.where) == ("E0202", "recipes/lib/a.rcp:2:6")
    assert f.message.endswith("recipes/lib/a.rcp:2 -> recipes/lib/a.rcp")


def test_error_in_a_loaded_file_is_reported_there(ws):
    ws.write("recipes/lib/mesh.rcp", 'AXES = 4\nMESH = AXES + "x"\n')
    f = ws.fails('X = 1\n\nload("lib/mesh.rcp", "MESH")\n')
    assert (f.code, f.where) == ("E0301", "recipes/lib/mesh.rcp:2:8")
    assert [(label, str(s)) for label, s in f.diag.related] == [("loaded from", "recipes/r.rcp:3:6")]
    assert "recipes/lib/mesh.rcp:2:8: error[E0301]" in f.text
    assert "loaded from: recipes/r.rcp:3:6" in f.text
    assert ' 3 | load("lib/mesh.rcp", "MESH")' in f.text


def test_syntax_error_in_a_loaded_file_is_reported_there(ws):
    ws.write("recipes/lib/mesh.rcp", "A = [1, 2\nB = 3\n")
    f = ws.fails('load("lib/mesh.rcp", "A")\n')
    assert (f.code, f.where) == ("E0001", "recipes/lib/mesh.rcp:2:1")
    assert [label for label, _ in f.diag.related] == ["opened here", "loaded from"]


def test_error_two_loads_deep_lists_each_load_once(ws):
    ws.write("recipes/lib/mesh.rcp", 'load("inner.rcp", "A")\n')
    ws.write("recipes/lib/inner.rcp", "A = B\n")
    f = ws.fails('load("lib/mesh.rcp", "A")\n')
    assert f.where == "recipes/lib/inner.rcp:1:5"
    assert [(label, str(s)) for label, s in f.diag.related] == [
        ("loaded from", "recipes/lib/mesh.rcp:1:6"), ("loaded from", "recipes/r.rcp:1:6")]


@pytest.mark.parametrize("lib, code", [
    ("A = param(int, default = 1)\n", "E0502"),
    ('A = 1\nvariant("x")\n', "E0706"),
    ('A = 1\nmanifest(name = "m", apiVersion = "v1", kind = "K")\n', "E0706"),
])
def test_loaded_files_hold_constants_only(ws, lib, code):
    ws.write("recipes/lib/a.rcp", lib)
    f = ws.fails('load("lib/a.rcp", "A")\n')
    assert f.code == code and f.where.startswith("recipes/lib/a.rcp:")


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
    (["TUNNED=true"], "E0601", "--set TUNNED: no such param", "did you mean 'TUNED'?"),
    (["ZZZ=1"], "E0601", "--set ZZZ: no such param", "params: TUNED, REPLICAS, LR, RATIO, MODE"),
    (["TUNED=yes"], "E0602", "--set TUNED=yes: not a bool", "write true, false, True or False"),
    (["REPLICAS=1.5"], "E0602", "--set REPLICAS=1.5: not an int", "write decimal digits"),
    (["REPLICAS="], "E0602", "--set REPLICAS=: not an int", "write decimal digits"),
    (["LR=fast"], "E0602", "--set LR=fast: not a float", "write a number such as 0.5 or 1e-6"),
    (["MODE=z"], "E0602", "--set MODE=z: not one of the choices (x, y)", None),
    (["TUNED"], "E0608", "--set 'TUNED' is not NAME=VALUE", None),
])
def test_set_errors(ws, sets, code, message, hint):
    f = ws.fails(PARAMS + M, sets=sets)
    assert (f.code, f.message, f.diag.hint) == (code, message, hint)


@pytest.mark.parametrize("decl, code, col, message", [
    ('param(int, default = "4")', "E0602", 26, "param 'P' is an int, got a string"),
    ("param(bool, default = 0)", "E0602", 27, "param 'P' is a bool, got an int"),
    ("param(float, default = True)", "E0602", 28, "param 'P' is a float, got a bool"),
    ("param(int, default = 1, choices = [2, 3])", "E0602", 26, "param 'P' must be one of: 2, 3"),
    ('param(str, default = "a", choices = ["a", 1])', "E0602", 47, "param 'P' is a str, got an int"),
    ('param("int", default = 1)', "E0502", 11, "param() needs a type: bool, int, float or str"),
    ("param(int)", "E0606", 5, "param 'P' has no default and no value was given"),
    ("param(int, default = 1, dflt = 2)", "E0306", 29, "param() has no argument 'dflt'"),
    ("param(default = 1)", "E0306", 5, "param() is missing argument 'type'"),
])
def test_param_errors(ws, decl, code, col, message):
    f = ws.fails(f"P = {decl}\n")
    assert (f.code, f.message, f.where) == (code, message, f"recipes/r.rcp:1:{col}")


def test_param_must_be_assigned_directly(ws):
    f = ws.fails("X = [param(int, default = 1)]\n")
    assert (f.code, f.where) == ("E0501", "recipes/r.rcp:1:6")


def test_required_param_can_be_given_by_set(ws):
    out = ws.build('N = param(int)\nV = N\n' + M, sets=["N=7"])
    assert data_of(out["custom"]["m.yaml"]) == 7


@pytest.mark.parametrize("variants, code, where, message", [
    ('variant("t", set = {"TUNNED": True})\n', "E0601", "recipes/r.rcp:8:21",
     "variant 't' sets 'TUNNED', which is not a param"),
    ('variant("t", set = {"TUNED": 1})\n', "E0602", "recipes/r.rcp:8:30", "param 'TUNED' is a bool, got an int"),
    ('variant("t", set = {"MODE": "q"})\n', "E0602", "recipes/r.rcp:8:29", "param 'MODE' must be one of: x, y"),
    ('variant("t")\nvariant("t")\n', "E0603", "recipes/r.rcp:9:1", "variant 't' is declared twice"),
    ('variant("t", against = "defalt")\n', "E0605", "recipes/r.rcp:8:1",
     "variant 't' is against 'defalt', which is not declared"),
    ('variant("a/b")\n', "E0604", "recipes/r.rcp:8:9", "variant name 'a/b' is not a plain directory name"),
])
def test_variant_errors(ws, variants, code, where, message):
    f = ws.fails(PARAMS + M + variants)
    assert (f.code, f.where, f.message) == (code, where, message)


def test_variant_typo_did_you_mean(ws):
    f = ws.fails(PARAMS + M + 'variant("t", set = {"TUNNED": True})\n')
    assert f.diag.hint == "did you mean 'TUNED'?"


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


@pytest.mark.parametrize("name", ['"a/b"', '".."', '""', '"-x"', '"a b"', r'"x\n"', '"../up"', '"a..b"'])
def test_render_names_must_be_plain_file_names(ws, name):
    f = ws.fails(f'manifest(name = {name}, apiVersion = "v1", kind = "K")\n')
    assert (f.code, f.where) == ("E0701", "recipes/r.rcp:1:17")
    assert "is not a plain file name" in f.message


def test_duplicate_render_names(ws):
    f = ws.fails("""\
        jobset(name = "trainer", spec = {})
        F = maxtext_flags({"a": 1})
        flag_file(name = "trainer", flags = F)
        manifest(name = "trainer", apiVersion = "v1", kind = "K")
    """)
    assert (f.code, f.message, f.where) == ("E0702", "two renders are named 'trainer.yaml'", "recipes/r.rcp:4:1")
    assert [(label, str(s)) for label, s in f.diag.related] == [("first declared here", "recipes/r.rcp:1:1")]


def test_render_argument_errors(ws):
    f = ws.fails('jobset(name = "j")\n')
    assert (f.code, f.message) == ("E0306", "jobset() is missing argument 'spec'")
    f = ws.fails('jobset(name = "j", spec = [])\n')
    assert (f.code, f.message, f.where) == ("E0301", "spec must be a dict, got a list", "recipes/r.rcp:1:27")
    f = ws.fails('flag_file(name = "f", flags = {"a": 1})\n')
    assert (f.code, f.message) == ("E0301", "flags must be a maxtext_flags, got a dict")
    f = ws.fails('manifest(name = "m", apiVersion = "v1", kind = "K", x = tpu_slice("v4:2x2x1"))\n')
    assert (f.code, f.message) == ("E0703", "a tpu_slice cannot be written to YAML")


def test_crlf_source_files(ws):
    (ws.root / "recipes").mkdir()
    (ws.root / "recipes" / "r.rcp").write_bytes(
        b'X = "a\\\r\nb"\r\nV = [\r\n  X,\r\n  f"{X}\\\r\nc",\r\n]\r\n' + M.encode())
    assert data_of(ws.build()["default"]["m.yaml"]) == ["ab", "abc"]
    (ws.root / "recipes" / "r.rcp").write_bytes(b"X = 1\r\nY = Z\r\n")
    f = ws.fails()
    assert (f.code, f.where) == ("E0101", "recipes/r.rcp:2:5")
    assert " 2 | Y = Z\n" in f.text + "\n"


def test_dict_equality_ignores_key_order(ws):
    out = ws.build('V = [{"a": 1, "b": 2} == {"b": 2, "a": 1}, {"a": 1} == {"a": 2}, {"a": 1} != {"a": 1, "b": 2}]\n' + M)
    assert data_of(out["default"]["m.yaml"]) == [True, False, True]


@pytest.mark.parametrize("text", [
    "X = 9223372036854775808\n",                       # 2**63
    "X = " + "9" * 5000 + "\n",                        # more digits than int() allows by default
    "A = 4294967296\nX = A * A * A\n",                 # an arithmetic result
    "X = 1e999\n",                                     # a float that is inf
])
def test_numbers_out_of_range_are_errors(ws, text):
    f = ws.fails(text, dedent=False)
    assert f.code == "E0806" and f.diag.span is not None


@pytest.mark.parametrize("text", ["X = 1__0\n", "X = 1_\n", "X = 1_.5\n", "X = 1._5\n"])
def test_underscores_only_between_digits(ws, text):
    assert ws.fails(text, dedent=False).code == "E0001"


def test_load_path_must_be_a_plain_string(ws):
    f = ws.fails('P = "x"\nload(f"//recipes/lib/{P}.rcp", "A")\n')
    assert f.code in ("E0205", "E0001")
