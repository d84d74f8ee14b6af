"""MaxText flag sets (DESIGN.md §3.1–3.2) and field cases F1, F2, F5, F6, F7, F8, F11, F14, F16.

The oracle is the real omegaconf package: MaxText reads ``key=value`` arguments with
``OmegaConf.from_cli``, so for every flag set ``OmegaConf.from_cli(shlex.split(shell))`` must
give exactly the typed values of rcpc's ``.resolved`` view.
"""

from __future__ import annotations

import functools
import re
import shlex
import subprocess

import pytest
import yaml
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from conftest import SPAN, Ws, examples, rcp_string, same, spelled, value_of
from rcpc.domain.maxtext import flagset as maxtext
from rcpc.core.diagnostics import CompileError
from rcpc.domain.maxtext.emit import flag_file, shell_form, shell_quote, token
from rcpc.core.values import to_python

FLAGS_RENDER = 'flag_file(name = "f", flags = F)\n'


def flags(ws, layers_src: str) -> dict:
    """argv, shell form, resolved dict and the .flags render of ``F = maxtext_flags(...)``."""
    out = ws.build(f"F = maxtext_flags({layers_src})\nA = F.argv\nS = F.shell\nR = F.resolved\n"
                   + FLAGS_RENDER + 'manifest(name = "m", apiVersion = "v1", kind = "K", '
                   'data = {"argv": A, "shell": S, "resolved": R})\n')["default"]
    data = yaml.safe_load(out["m.yaml"])["data"]
    return {"argv": data["argv"], "shell": data["shell"], "resolved": data["resolved"],
            "file": out["f.flags"]}


def omegaconf_view(argv: list[str]) -> dict:
    """What MaxText has from these arguments: OmegaConf's from_cli, resolved as
    ``pyconfig`` resolves it (``to_container(resolve=True)``)."""
    return OmegaConf.to_container(OmegaConf.from_cli(argv), resolve=True)


def unflatten(resolved: dict) -> dict:
    """A resolved view with dotted keys nested, as OmegaConf nests them."""
    out: dict = {}
    for key, value in resolved.items():
        *parents, last = key.split(".")
        node = out
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return out


# rendering rules (§3.2) -------------------------------------------------------------------
def test_bools_keep_their_spelling(ws):
    f = flags(ws, '{"a": True, "b": true, "c": False, "d": false}')
    assert f["argv"] == ["a=True", "b=true", "c=False", "d=false"]
    assert same(omegaconf_view(f["argv"]), {"a": True, "b": True, "c": False, "d": False})


@pytest.mark.parametrize("src, tok, value", [
    ("1e-6", "1e-6", 1e-06),             # F2: never 1e-06
    ("1.e-05", "1.e-05", 1e-05),          # MaxText base.yml style
    ("2.0", "2.0", 2.0),
    ("1E+3", "1E+3", 1000.0),
    ("2000000", "2000000", 2000000),      # F11: never 2e+06 or 2000000.0
    ("2_000_000", "2_000_000", 2000000),  # YAML 1.1 reads the underscores as the same int
    ("356136738", "356136738", 356136738),
    ("-5", "-5", -5),
    ("-1e-6", "-1e-6", -1e-06),
    ("9223372036854775807", "9223372036854775807", 9223372036854775807),  # the largest int
    # spellings that OmegaConf would misread are written canonically instead
    ("0123", "123", 123),                 # '0123' is octal 83 in YAML 1.1
    ("08", "8", 8),                       # '08' is a string in YAML 1.1
    (".5e3", "500.0", 500.0),             # YAML 1.1 floats need a signed exponent after '.5'
    ("-.5", "-0.5", -0.5),                # '-.5' is a string to PyYAML and OmegaConf
    ("1_0e5", "1_0e5", 1000000.0),
])
def test_numbers_keep_their_spelling_when_it_reads_back(ws, src, tok, value):
    f = flags(ws, f'{{"x": {src}}}')
    assert f["argv"] == [f"x={tok}"]
    assert same(omegaconf_view(f["argv"])["x"], value)
    assert same(f["resolved"]["x"], value)


def test_f2_exponent_float(ws):
    f = flags(ws, '{"learning_rate": 1e-6}')
    assert f["argv"] == ["learning_rate=1e-6"]
    assert same(omegaconf_view(f["argv"]), {"learning_rate": 1e-06})


def test_f11_big_integers(ws):
    f = flags(ws, '{"steps": 2000000}')
    assert f["argv"] == ["steps=2000000"] and f["shell"] == "steps=2000000"
    assert same(omegaconf_view(f["argv"]), {"steps": 2000000})


def test_f1_empty_string(ws):
    f = flags(ws, '{"profiler": ""}')
    assert f["argv"] == ["profiler=''"]
    assert f["shell"] == "profiler=\"''\""  # the value part quoted, as hand-written recipes do
    assert f["file"] == "profiler=\"''\"\n"
    assert shlex.split(f["shell"]) == f["argv"]
    assert same(omegaconf_view(f["argv"]), {"profiler": ""})
    assert OmegaConf.from_cli(["profiler="])["profiler"] is None  # why bare 'profiler=' is wrong


def test_f5_none_vs_null(ws):
    f = flags(ws, '{"load_parameters_path": None, "b": null, "c": "None", "d": "null", "e": "NULL"}')
    assert f["argv"] == ["load_parameters_path=null", "b=null", "c='None'", "d='null'", "e='NULL'"]
    assert same(omegaconf_view(f["argv"]), {"load_parameters_path": None, "b": None, "c": "None",
                                            "d": "null", "e": "NULL"})


@pytest.mark.parametrize("s, tok", [
    ("true", "x='true'"), ("False", "x='False'"), ("yes", "x='yes'"), ("no", "x='no'"), ("on", "x='on'"),
    ("null", "x='null'"), ("~", "x='~'"), ("1e-5", "x='1e-5'"), ("0123", "x='0123'"), ("12", "x='12'"),
    ("1_000", "x='1_000'"), ("0x1F", "x='0x1F'"), (".inf", "x='.inf'"), ("12:30", "x='12:30'"),
    ("2024-01-01", "x=2024-01-01"), ("a: b", "x='a: b'"), ("x #y", "x='x #y'"), ("[1]", "x='[1]'"),
    ("{a}", "x='{a}'"), ("it's", "x=it's"), ("- a", "x='- a'"), ("*ref", "x='*ref'"), ("&a", "x='&a'"),
    ("!tag", "x='!tag'"), ("%x", "x='%x'"), ("@x", "x='@x'"), ("'q'", "x='''q'''"), ('"q"', "x='\"q\"'"),
    (" lead", "x=' lead'"), ("trail ", "x='trail '"), ("a\nb", 'x="a\\nb"'), ("tab\there", 'x="tab\\there"'),
    ("plain-value_1.2/x", "x=plain-value_1.2/x"), ("gs://b/p", "x=gs://b/p"), ("a=b", "x=a=b"),
    ("=", "x='='"), ("<<", "x='<<'"), ("é", "x=é"),
    # strings YAML 1.1 readers other than PyYAML (go-yaml) or YAML 1.2 read as something else,
    # OmegaConf as the string: bare (reads_plain)
    ("n", "x=n"), ("Y", "x=Y"), ("08", "x=08"), ("0o17", "x=0o17"), ("0X1F", "x=0X1F"), ("-a", "x=-a"),
    ("a[b]", "x=a[b]"), ("OFF", "x='OFF'"), ("1e3", "x='1e3'"), (".5", "x='.5'"),
])
def test_strings_reread_as_the_same_string(s, tok):
    argv = [token("x", value_of(s))]
    assert argv == [tok]
    assert same(omegaconf_view(shlex.split(shell_form(argv))), {"x": s})


def test_one_yaml_loader_reads_flag_values_and_schemas(tmp_path, monkeypatch):
    """MaxText's YAML is one Loader class, made once (session 5 review: schemagen built a new
    class on every read): a flag value (cli_document) and a base.yml (schemagen.read_yaml)
    are read with the same class, however many reads."""
    from rcpc.core import files
    from rcpc.domain.maxtext import emit, schemagen

    used = []
    real = files.load_yaml_bounded
    monkeypatch.setattr(schemagen, "load_yaml_bounded", lambda text, loader, *a, **k: (used.append(loader),
                                                                                       real(text, loader, *a, **k))[1])
    base = tmp_path / "base.yml"
    base.write_text("steps: 1\nlr: 1e-3\n")
    assert [schemagen.read_yaml(base, "base.yml") for _ in range(2)] == [{"steps": 1, "lr": 1e-3}] * 2
    assert used == [emit.yaml_loader()] * 2 and emit.yaml_loader() is emit.yaml_loader()
    assert emit.cli_document("1e-3") == 1e-3


@settings(max_examples=examples(300, 100), deadline=None)
@given(s=st.one_of(st.text(alphabet="aZn0189.-+_eE:, #'\"[]{}!&*|%@~=<?$", max_size=6), st.text(max_size=4)))
@example(s="on")
@example(s="a: b")
def test_a_plain_string_is_one_cli_value_reads_as_itself(s):
    """reads_plain (outside a list) is cli_document's reading, not a copy of it: ``s`` is
    plain exactly when it is printable and OmegaConf's from_cli reads it as the string ``s``."""
    from rcpc.domain.maxtext.emit import NotAScalar, cli_document, reads_plain

    try:
        got = cli_document(s)
    except NotAScalar:
        got = None
    assert reads_plain(s) == (s != "" and s.isprintable() and type(got) is str and got == s)


# Strings around every YAML reader's corner: indicators, bools and nulls of YAML 1.1 (PyYAML's
# and go-yaml's), numbers of 1.1, 1.2 and OmegaConf, timestamps, interpolations.
_YAMLISH = st.one_of(
    st.text(alphabet="aZn0189.-+_eExXoO:, #'\"[]{}!&*|>%@`~=<?$\\/", max_size=6),
    st.sampled_from(["y", "Y", "n", "N", "yes", "No", "ON", "off", "True", "FALSE", "null", "Null", "~", "1e3",
                     "1E-5", "08", "0o17", "0X1F", "0x1F", "0b101", "1_000", "12:30", ".5", "-.inf", ".NaN",
                     "2024-01-01", "=", "<<", "---", "...", "None"]),
    st.text(max_size=4))


@settings(max_examples=300, deadline=None)
@given(s=_YAMLISH, in_list=st.booleans())
@example(s="n", in_list=False)  # tokenizer_path=n was written tokenizer_path='n' (import shapes, kind 2)
@example(s="y", in_list=True)
@example(s="0:0", in_list=True)
@example(s="2024-01-01", in_list=False)
def test_a_string_is_quoted_exactly_when_omegaconf_would_read_it_otherwise(s, in_list):
    """MaxText's reader is the rule (docs/language.md, How values are written): OmegaConf's
    from_cli reads every emitted string back as itself, and the string is YAML-quoted only
    when its bare text would read as something else (a bool, a number, a null, not one
    scalar). ``None`` is always quoted (F5), a string with a character that is not printable
    too (shown escaped); ``???`` is OmegaConf's MISSING either way."""
    from rcpc.domain.maxtext.emit import FlagValueError, escape_interpolations

    value = value_of([s] if in_list else s)
    try:
        tok = token("x", value)
    except FlagValueError:
        return  # a lone surrogate, or a string OmegaConf versions read differently (E0317)
    assume(s != "???")
    want = [s] if in_list else s
    assert same(omegaconf_view([tok])["x"], want)
    bare = escape_interpolations(s)
    if tok != "x=" + (f"[{bare}]" if in_list else bare) and s != "None" and s.isprintable():
        try:
            misread = omegaconf_view(["x=" + (f"[{bare}]" if in_list else bare)])["x"] != want
        except Exception:  # YAML or OmegaConf refuses the bare text
            misread = True
        assert misread, f"{tok!r} is quoted, but OmegaConf reads {bare!r} back as {s!r}"


def test_f6_equals_inside_a_value(ws):
    path = "gs://b/run/epoch=3/step=100/items"
    f = flags(ws, f'{{"load_parameters_path": "{path}"}}')
    assert f["argv"] == [f"load_parameters_path={path}"]
    assert f["shell"] == f"load_parameters_path={path}"
    assert same(omegaconf_view(shlex.split(f["shell"])), {"load_parameters_path": path})
    key, _, value = f["argv"][0].partition("=")  # any flag parser splits at the first '='
    assert (key, value) == ("load_parameters_path", path)


def test_f7_list_value(ws):
    f = flags(ws, '{"checkpoint_steps": [5, 9]}')
    assert f["argv"] == ["checkpoint_steps=[5,9]"]
    assert f["shell"] == "checkpoint_steps='[5,9]'"  # quoted: no glob, no split
    assert shlex.split(f["shell"]) == f["argv"]
    assert same(omegaconf_view(f["argv"]), {"checkpoint_steps": [5, 9]})
    assert _bash_argv(f["shell"]) == f["argv"]


def test_list_items_are_quoted_in_flow_context(ws):
    f = flags(ws, '{"x": ["a,b", "c:d", "", "true", 1e-6, None, True, "plain", "s p"], "e": []}')
    assert f["argv"] == ["x=['a,b',c:d,'','true',1e-6,null,True,plain,s p]", "e=[]"]  # c:d: one scalar
    assert same(omegaconf_view(f["argv"]), {"x": ["a,b", "c:d", "", "true", 1e-06, None, True, "plain", "s p"],
                                            "e": []})


@pytest.mark.parametrize("value", ["ablation a&b 2", "a;b", "cost $5", "it's", 'say "hi"', "glob*", "sweep #3",
                                   "back\\slash", "`cmd`", "!bang", "x|y", "a>b<c", "(paren)", "~home",
                                   "tab\tsep", "new\nline"])
def test_f8_shell_metacharacters(ws, value):
    f = flags(ws, f'{{"run_name": {rcp_string(value)}}}')
    (tok,) = f["argv"]
    assert same(omegaconf_view(f["argv"]), {"run_name": value})
    assert shlex.split(f["shell"]) == f["argv"]
    assert _bash_argv(f["shell"]) == f["argv"]
    assert shlex.split(f["file"]) == f["argv"]


def test_f8_reported_value(ws):
    f = flags(ws, '{"run_name": "ablation a&b 2"}')
    assert f["argv"] == ["run_name=ablation a&b 2"]
    assert f["shell"] == "run_name='ablation a&b 2'"
    assert _bash_argv(f["shell"]) == f["argv"]


def test_f14_hash_in_a_value(ws):
    f = flags(ws, '{"run_name": "sweep #3", "note": "see ticket #42", "x": "a#b"}')
    assert f["argv"] == ["run_name='sweep #3'", "note='see ticket #42'", "x=a#b"]
    assert f["shell"] == "run_name=\"'sweep #3'\" note=\"'see ticket #42'\" x='a#b'"
    assert _bash_argv(f["shell"]) == f["argv"]
    assert same(omegaconf_view(shlex.split(f["shell"])), {"run_name": "sweep #3", "note": "see ticket #42", "x": "a#b"})


@pytest.mark.parametrize("key", [" run_name", "run_name ", "run_name\\t", "run_name\\n", "\\trun_name",
                                 "\\r\\nrun_name"])
def test_f16_key_with_surrounding_whitespace(ws, key):
    f = ws.fails(f'X = 1\nF = maxtext_flags({{"ok": 1, "{key}": 2}})\n')
    assert f.code == "E0303"
    assert f.where == "recipes/r.rcp:2:29"  # the key's own line:col
    assert "leading or trailing whitespace" in f.message
    assert f.diag.hint == "write 'run_name'"


@settings(max_examples=200)
@given(st.from_regex(r"\A[a-z_][a-z0-9_.]{0,10}\Z"), st.text(" \t\n\r\f\v\xa0\u2028", min_size=1, max_size=3),
       st.sampled_from(["lead", "trail", "both"]))
@example("run_name", " ", "lead")     # F16
@example("run_name", "\n", "trail")   # F16: '$' in a regex also matches before a final newline
def test_f16_whitespace_around_any_key_is_an_error(key, ws_chars, where):
    bad = (ws_chars if where != "trail" else "") + key + (ws_chars if where != "lead" else "")
    with pytest.raises(CompileError) as info:
        maxtext.make_flagset([value_of({"ok": 1, bad: 2})], SPAN)
    (d,) = info.value.diagnostics
    assert d.code == "E0303" and "leading or trailing whitespace" in d.message


@pytest.mark.parametrize("key, what", [("", "is empty"), ("a=b", "is not a MaxText key"),
                                       ("a b", "is not a MaxText key"), ("1abc", "is not a MaxText key"),
                                       ("a..b", "is not a MaxText key"), ("a.", "is not a MaxText key")])
def test_bad_flag_keys(ws, key, what):
    f = ws.fails(f'F = maxtext_flags({{"{key}": 1}})\n')
    assert (f.code, f.where) == ("E0303", "recipes/r.rcp:1:20")
    assert what in f.message


def test_dotted_keys_are_allowed(ws):
    f = flags(ws, '{"a.b": 1, "c-d": 2, "_e": 3}')
    assert f["argv"] == ["a.b=1", "c-d=2", "_e=3"]
    assert same(omegaconf_view(f["argv"]), {"a": {"b": 1}, "c-d": 2, "_e": 3})


@pytest.mark.parametrize("value, message", [
    ('tpu_slice("v4:2x2x1")', "flag 'x': a flag value cannot be a tpu_slice"),
    ('[{"": 1}]', "flag 'x': OmegaConf refuses an empty key in a flag value"),
])
def test_values_with_no_flag_form(ws, value, message):
    f = ws.fails(f'F = maxtext_flags({{"x": {value}}})\n')
    assert (f.code, f.message) == ("E0304", message)


def test_nested_values(ws):
    """Issue 14 item 5: lists of lists (logical_axis_rules, data_sharding) and mappings."""
    f = flags(ws, '{"data_sharding": [["data", "stage", "fsdp"]], "logical_axis_rules": [["batch", ["data", "fsdp"]], '
                  '["embed", []]], "m": {"a": 1, "b c": [True, None], "k: v": {"x": "${y}"}}}')
    assert f["argv"] == ["data_sharding=[[data,stage,fsdp]]", "logical_axis_rules=[[batch,[data,fsdp]],[embed,[]]]",
                         "m={a: 1, b c: [True,null], 'k: v': {x: '\\${y}'}}"]
    assert same(omegaconf_view(shlex.split(f["shell"])), f["resolved"])


def test_interpolation_syntax_in_a_plain_string_is_literal(ws):
    """Issue 14 item 1: `${` is escaped so MaxText (which resolves) ends with the text."""
    f = flags(ws, r'{"run_name": "cost${", "base_output_directory": "gs://bkt/${table}/runs", '
                  r'"a": "\\${x}", "b": ["${y}"], "c": "$x {y}"}')
    # plain where OmegaConf reads the text back as it is (docs/language.md), quoted in a list
    assert f["argv"] == ["run_name=cost\\${", "base_output_directory=gs://bkt/\\${table}/runs",
                         "a=\\\\\\${x}", "b=['\\${y}']", "c=$x {y}"]
    assert omegaconf_view(shlex.split(f["shell"])) == {"run_name": "cost${", "base_output_directory":
                                                       "gs://bkt/${table}/runs", "a": "\\${x}", "b": ["${y}"],
                                                       "c": "$x {y}"}
    assert f["resolved"]["run_name"] == "cost${"


@pytest.mark.parametrize("value, code", [('"\\ud800"', "E0002"), ('["a", "x\\udfff"]', "E0002"),
                                         ('{"k\\ud800": 1}', "E0002"), (r'"\\???"', "E0317")])
def test_strings_maxtext_cannot_read_back_are_located_errors(ws, value, code):
    """Issue 14 item 7: a lone surrogate (PyYAML refuses it; the language has no way to
    write one: the escape is E0002) or a string OmegaConf versions read differently is an
    error at the value, never a flag file MaxText cannot read."""
    f = ws.fails(f'X = 1\nF = maxtext_flags({{"ok": 1,\n  "x": {value}}})\n')
    assert f.code == code and f.where.startswith("recipes/r.rcp:3:")


def test_dotted_keys_overlapping_another_key_are_errors(ws):
    """Issue 14 item 6: OmegaConf merges `m.0` into `m`; rcpc refuses the overlap."""
    f = ws.fails('F = maxtext_flags({"m": [1, 2]}, {"m.0": 9})\n')
    assert (f.code, f.where) == ("E0318", "recipes/r.rcp:1:35")
    assert f.message == "'m.0' and 'm' set parts of one MaxText value"
    assert str(f.diag.related[0][1]) == "recipes/r.rcp:1:20"
    assert OmegaConf.to_container(OmegaConf.from_cli(["m=[1,2]", "m.0=9"])) == {"m": [9, 2]}  # why


def test_repeated_dict_values_merge_as_in_omegaconf(ws):
    f = flags(ws, '{"m": {"a": 1, "n": {"p": 1}}}, {"m": {"b": 2, "n": {"q": 2}}}, {"l": [1]}, {"l": [2, 3]}')
    assert f["resolved"] == {"m": {"a": 1, "n": {"p": 1, "q": 2}, "b": 2}, "l": [2, 3]}
    assert same(omegaconf_view(f["argv"]), f["resolved"])
    g = ws.fails('F = maxtext_flags({"m": [1]}, {"m": {"a": 1}})\n')
    assert g.code == "E0318" and "OmegaConf cannot merge those" in g.message


# layers (§3.1) ----------------------------------------------------------------------------
def test_later_layer_overrides_and_render_keeps_repeats(ws):
    f = flags(ws, """
        {"custom_mesh_and_rule": "cp-as-ep", "use_gdn_kernel": True, "ragged_buffer_factor": 2.0},
        {"custom_mesh_and_rule": "cp-as-ep-dense-no-cp"},
        {},
        {"ragged_buffer_factor": 3.0, "new": 1},
    """)
    assert f["argv"] == ["custom_mesh_and_rule=cp-as-ep", "use_gdn_kernel=True", "ragged_buffer_factor=2.0",
                         "custom_mesh_and_rule=cp-as-ep-dense-no-cp", "ragged_buffer_factor=3.0", "new=1"]
    assert f["resolved"] == {"custom_mesh_and_rule": "cp-as-ep-dense-no-cp", "use_gdn_kernel": True,
                             "ragged_buffer_factor": 3.0, "new": 1}
    assert list(f["resolved"]) == ["custom_mesh_and_rule", "use_gdn_kernel", "ragged_buffer_factor", "new"]
    assert same(omegaconf_view(shlex.split(f["shell"])), f["resolved"])
    assert f["file"] == "".join(t + "\n" for t in f["argv"])


def test_conditional_layer_and_splicing(ws):
    src = """\
        TUNED = param(bool, default = False)
        BASE = maxtext_flags({"a": 1, "b": 2})
        F = maxtext_flags(BASE, {"b": 3} if TUNED else {}, {"c": "x"})
        G = BASE + maxtext_flags({"a": 9})
        flag_file(name = "f", flags = F)
        flag_file(name = "g", flags = G)
        variant("default")
        variant("tuned", set = {"TUNED": True})
    """
    out = ws.build(src)
    assert out["default"]["f.flags"] == "a=1\nb=2\nc=x\n"
    assert out["tuned"]["f.flags"] == "a=1\nb=2\nb=3\nc=x\n"
    assert out["default"]["g.flags"] == "a=1\nb=2\na=9\n"


def test_repeated_key_in_one_layer_is_an_error(ws):
    f = ws.fails('F = maxtext_flags({\n    "a": 1,\n    "a": 2,\n})\n')
    assert (f.code, f.where) == ("E0302", "recipes/r.rcp:3:5")


def test_layer_must_be_a_dict(ws):
    f = ws.fails('F = maxtext_flags({"a": 1}, ["b=2"])\n')
    assert (f.code, f.message, f.where) == ("E0301", "a maxtext_flags layer must be a dict, got list",
                                            "recipes/r.rcp:1:29")


def test_flag_file_is_lf_one_token_a_line(ws):
    f = flags(ws, '{"a": "x y", "b": "", "c": 1}')
    text = f["file"]
    assert text == "a='x y'\nb=\"''\"\n" + "c=1\n"
    assert "\r" not in text and text.endswith("\n") and not text.endswith("\n\n")
    assert all(line == line.rstrip() for line in text.split("\n"))
    assert shlex.split(text) == f["argv"]


# property: shell form ---------------------------------------------------------------------
ODD = st.sampled_from(list(" \t\n\r'\"\\$`!*?[]{}()<>|&;#~=%@:,^") + ["é", "\u2028", "\xa0", "😀"])
TOKEN_TEXT = st.one_of(st.text(), st.text(ODD, max_size=12),
                       st.builds(lambda a, b: a + b, st.text(ODD, max_size=4), st.text(max_size=8)))
# key=value tokens, whose value part alone the shell form quotes
KEY = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.]{0,8}", fullmatch=True)
KEYED = st.builds(lambda k, v: f"{k}={v}", KEY, TOKEN_TEXT)
TOKENS = st.lists(st.one_of(TOKEN_TEXT, KEYED), max_size=6)


@settings(max_examples=300)
@given(TOKENS)
@example(["profiler=''"])                      # F1
@example(["prompt=a japanese pop star. She is inside a studio."])  # as wan2.1 publishes it
@example(["weight_quantization_calibration_method=fixed,-224,224"])  # quoted by shell_quoted
@example(["x=~/a", "y=~", "z={a,b}"])          # no tilde or brace expansion after the first =
@example(["checkpoint_steps=[5,9]"])           # F7
@example(["run_name=ablation a&b 2"])          # F8
@example(["run_name='sweep #3'"])              # F14
@example([""])
@example(["it's", "$HOME", "a\nb", "!x"])
def test_shlex_split_of_shell_form_is_argv(argv):
    shell = shell_form(argv)
    assert shlex.split(shell) == argv
    assert shlex.split(flag_file(argv)) == argv
    every_key = frozenset(t.partition("=")[0] for t in argv)
    assert shlex.split(shell_form(argv, every_key)) == argv  # FLAGS.shell_quoted(keys)


def test_the_value_part_is_quoted():
    """As hand-written recipes write a token that needs quotes: ``key='value'``, and with
    ``shell_quoted`` a value part that needs none (the llama3.1-70b fp8 recipe)."""
    prompt = "prompt=a japanese pop star young woman with black hair is singing with a smile."
    assert shell_form([prompt]) == "prompt='a japanese pop star young woman with black hair is singing with a smile.'"
    tok = "weight_quantization_calibration_method=fixed,-224,224"
    assert shell_form([tok, "steps=3"]) == tok + " steps=3"
    assert shell_form([tok, "steps=3"], frozenset({tok.split("=")[0]})) == \
        "weight_quantization_calibration_method='fixed,-224,224' steps=3"
    assert shell_form(["a b=c"]) == "'a b=c'"  # a key that needs quotes: the whole token
    shell = shell_form([prompt, tok], frozenset({tok.split("=")[0]}))
    assert same(omegaconf_view(shlex.split(shell)), {"prompt": prompt.split("=", 1)[1],
                                                     "weight_quantization_calibration_method": "fixed,-224,224"})


def _bash_argv(shell: str, sep: str = "\\n") -> list[str]:
    """The arguments bash itself parses out of ``shell`` (printf one a line / NUL-separated)."""
    out = subprocess.run(["bash", "-c", f"printf '%s{sep}' {shell}"], capture_output=True, check=True).stdout
    text = out.decode("utf-8", "surrogateescape")
    end = "\n" if sep == "\\n" else "\0"
    if not text:
        return []
    assert text.endswith(end)
    return text[:-1].split(end)


BASH_TEXT = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(BASH_TEXT, st.builds(lambda k, v: f"{k}={v}", KEY, BASH_TEXT)), min_size=1,
                max_size=4))
@example(["run_name=ablation a&b 2", "x=$HOME", "y=`id`", "z=a;b", "w=it's", 'v="q"', "u=*", "t=#c"])  # F8
@example(["x=~/a", "y=~", "z={a,b}", "prompt=a b."])  # bash expands neither after the first = once quoted
def test_bash_reads_the_shell_form_back(argv):
    assert _bash_argv(shell_form(argv), sep="\\0") == argv
    every_key = frozenset(t.partition("=")[0] for t in argv)
    assert _bash_argv(shell_form(argv, every_key), sep="\\0") == argv


# property: the OmegaConf oracle -----------------------------------------------------------
YAML_WORDS = ["yes", "no", "on", "off", "y", "n", "Y", "N", "true", "False", "TRUE", "null", "Null", "~", "None",
              "none", "nan", ".nan", ".inf", "-.inf", "0x1f", "0o17", "0755", "0b101", "1e3", "1e-5", "1.e-05",
              "1_000", "12:30", "1:2:3", "2001-12-14", "2001-12-14 21:59:43.10 -5", "<<", "=", "-", "?", ":",
              "356136738", "2000000", "+1", "-1", ".5", "1.", "0", "00", "-0", "[]", "{}", "", " ", "#",
              # OmegaConf's own syntax, MaxText's "none" rule, escapes
              "${x}", "${", "\\${x}", "\\\\${x}", "a${b.c}d", "${oc.env:HOME}", "???", "\\???", "\\\\???",
              "none", "NONE", "nOnE", "\\", "\\\\", "x\\", "\ud800", "a\udfff"]
STR_ALPHABET = st.sampled_from(list("aZ09 ._-+:#=,'\"\\$!&*?[]{}|>%@`~<\t\n") + ["é", "\u2028", "\x85", "\xa0",
                                                                                "\ufeff", "😀", "\x00", "\x7f",
                                                                                "\ud800"])


def unreadable(s: str) -> bool:
    """Strings no flag can carry exactly (E0317): a lone surrogate (PyYAML refuses it), or
    backslashes then ``???`` (OmegaConf 2.4 reads one backslash fewer, 2.3 all of them)."""
    return any(0xD800 <= ord(c) <= 0xDFFF for c in s) or bool(re.fullmatch(r"\\+\?\?\?", s))


STRINGS = st.one_of(
    st.sampled_from(YAML_WORDS),
    st.text(STR_ALPHABET, max_size=10),
    st.builds(lambda w, t: w + t, st.sampled_from(YAML_WORDS), st.text(STR_ALPHABET, max_size=3)),
    st.builds(lambda t, w: t + w, st.text(STR_ALPHABET, max_size=3), st.sampled_from(YAML_WORDS)),
    st.text(),
)

# The grammar's number spellings (underscores only between digits); exponents kept to two
# digits so that every spelling is a finite float (1e400 is an error, E0806).
_D = r"[0-9](?:_?[0-9])*"
_FLOAT_RE = rf"{_D}\.(?:{_D})?(?:[eE][+-]?[0-9]{{1,2}})?|\.{_D}(?:[eE][+-]?[0-9]{{1,2}})?|{_D}[eE][+-]?[0-9]{{1,2}}"


def _float_from_text(text: str):
    return spelled(float(text.replace("_", "")), text)


def _int_from_text(text: str):
    return spelled(int(text.replace("_", "")), text)


INTS = st.one_of(
    st.integers().map(lambda i: spelled(i, str(i))),
    st.from_regex(r"\A-?[0-9][0-9_]{0,12}\Z").map(_int_from_text),  # underscores, leading zeros
    st.sampled_from(["2000000", "2_000_000", "0123", "08", "-0", "+5", "356136738"]).map(_int_from_text),
)
FLOATS = st.one_of(
    st.from_regex(rf"\A-?(?:{_FLOAT_RE})\Z").map(_float_from_text),  # every spelling the grammar has
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: spelled(x, repr(x))),
    # spellings that only `--set NAME=VALUE` can produce (Python's float() accepts them)
    st.sampled_from(["nan", "inf", "-inf", "Infinity", "1_0", "2", "1e999", "١٢"]).map(
        lambda t: spelled(float(t), t)),
)
BOOLS = st.sampled_from(["True", "False", "true", "false"]).map(lambda t: spelled(t.lower() == "true", t))
NULLS = st.just(None)
SCALARS = st.one_of(STRINGS, INTS, FLOATS, BOOLS, NULLS)
# nested lists and mappings (keys: any text, including OmegaConf and YAML syntax)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.one_of(st.sampled_from(["a", "b", "1", "true", "${x}", "k: v", "x.y",
                                                                   "<<", "???", "none"]),
                                                  st.text(STR_ALPHABET, min_size=1, max_size=4)), inner, max_size=3),
                      max_leaves=8)
KEYS = st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_-]{0,6}\Z") | st.from_regex(r"\A[a-c](?:\.[a-c0-9]){0,2}\Z")
LAYERS = st.lists(st.dictionaries(KEYS, VALUES, max_size=5), min_size=1, max_size=3)


def _strings_and_keys(v, keys_only: bool = False):
    """Every string of a nested value and every key of its dicts (only the keys)."""
    if isinstance(v, str) and not keys_only:
        yield v
    elif isinstance(v, list):
        for x in v:
            yield from _strings_and_keys(x, keys_only)
    elif isinstance(v, dict):
        for k, x in v.items():
            yield k
            yield from _strings_and_keys(x, keys_only)


def _overlapping(layers) -> bool:
    keys = {k for layer in layers for k in layer}
    return any(".".join(k.split(".")[:i]) in keys for k in keys for i in range(1, k.count(".") + 1))


def _clashing(layers) -> bool:
    def clash(a, b):
        if isinstance(a, list) and isinstance(b, dict) or isinstance(a, dict) and isinstance(b, list):
            return True
        return isinstance(a, dict) and isinstance(b, dict) and any(clash(a[k], b[k]) for k in b if k in a)

    seen: dict = {}
    for layer in layers:
        for k, v in layer.items():
            if k in seen and clash(seen[k], v):
                return True
            seen[k] = _merged(seen[k], v) if k in seen else v
    return False


def _merged(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for k, v in b.items():
            out[k] = _merged(out[k], v) if k in out else v
        return out
    return b


def _flagset(layers):
    return maxtext.make_flagset([value_of(layer) for layer in layers], SPAN)


# 400 in CI: LAYERS' every branch (5 scalar kinds, lists and dicts nested to 8 leaves, 1 to 3
# layers, YAML and OmegaConf words as keys and values) many times over; each fault found is an
# @example below
@settings(max_examples=examples(1000, ci=400), deadline=None)
@given(LAYERS)
@example([{"profiler": ""}])                                         # F1
@example([{"learning_rate": spelled(1e-6, "1e-6")}])                 # F2
@example([{"load_parameters_path": None, "b": "None"}])              # F5
@example([{"load_parameters_path": "gs://b/run/epoch=3/step=100/items"}])  # F6
@example([{"checkpoint_steps": [spelled(5, "5"), spelled(9, "9")]}])  # F7
@example([{"run_name": "ablation a&b 2"}, {"run_name": "a;b $x 'q' \"d\" * #"}])  # F8
@example([{"steps": spelled(2000000, "2000000")}, {"label": "356136738"}])  # F11
@example([{"run_name": "sweep #3"}])                                 # F14
@example([{"a": "...", "b": "---", "c": "... x", "d": "--- y"}])            # YAML document markers
@example([{"a": spelled(123, "0123")}, {"a": spelled(500.0, ".5e3")}])  # spellings YAML 1.1 misreads
@example([{"a": spelled(float("nan"), "nan"), "b": spelled(10.0, "1_0"), "c": spelled(2.0, "2")}])
@example([{"run_name": "cost${"}, {"p": "gs://bkt/${table}/runs"}])  # issue 14 item 1
@example([{"a": "???", "b": "none", "c": "NoNe"}])                      # MISSING, MaxText's none rule
@example([{"logical_axis_rules": [["batch", ["data", "fsdp"]]], "m": {"a": {"b": "${x}"}}}])  # item 5
@example([{"m": {"a": 1}}, {"m": {"b": [1]}}])                          # OmegaConf merges dicts
@example([{"m": [spelled(1, "1"), spelled(2, "2")]}, {"m.0": spelled(9, "9")}])  # item 6: E0318
@example([{"x": "\ud800"}])                                            # item 7: E0317
def test_omegaconf_reads_back_the_resolved_values(layers):
    """The oracle: what OmegaConf (then resolution, as MaxText does) makes of the render is
    exactly rcpc's resolved view, or rcpc refuses the flag set for a reason stated here."""
    strings = [s for layer in layers for k, v in layer.items() for s in _strings_and_keys(v)]
    try:
        fs = _flagset(layers)
    except CompileError as exc:
        codes = {d.code for d in exc.diagnostics}
        assert codes <= {"E0317", "E0318", "E0304"}, exc.diagnostics
        if "E0317" in codes:
            assert any(unreadable(s) for s in strings)
        if "E0318" in codes:
            assert _overlapping(layers) or _clashing(layers)
        if "E0304" in codes:
            assert "" in [k for s in layers for v in s.values() for k in _strings_and_keys(v, keys_only=True)]
        return
    assert not any(unreadable(s) for s in strings) and not _overlapping(layers) and not _clashing(layers)
    argv = maxtext.argv(fs)
    shell = shell_form(argv)
    assert shlex.split(shell) == argv
    expected = unflatten(to_python(maxtext.resolved_dict(fs, SPAN)))
    got = omegaconf_view(shlex.split(shell))
    assert same(got, expected), (shell, got, expected)


SOURCE_NUMBERS = st.one_of(st.from_regex(rf"\A-?(?:{_FLOAT_RE})\Z").map(_float_from_text),
                           st.from_regex(r"\A-?[0-9](?:_?[0-9]){0,12}\Z").map(_int_from_text))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(KEYS, st.one_of(STRINGS, BOOLS, NULLS, SOURCE_NUMBERS,
                                       st.lists(st.one_of(STRINGS, BOOLS, NULLS, SOURCE_NUMBERS), max_size=3)),
                       min_size=1, max_size=4))
@example({"run_name": "sweep #3", "lr": spelled(1e-6, "1e-6"), "steps": spelled(2000000, "2000000")})
@example({"a": spelled(123, "0123"), "b": spelled(500.0, ".5e3"), "c": spelled(-0.5, "-.5")})
@example({"profiler": "", "checkpoint_steps": [spelled(5, "5"), spelled(9, "9")], "p": None, "q": "None"})
def test_recipe_source_to_omegaconf(tmp_path_factory, layer):
    """End to end: values written in recipe source (escaped strings, spelled numbers, lists)
    → the .flags render → OmegaConf reads back what the recipe's .resolved says."""
    ws = Ws(tmp_path_factory.mktemp("ws"))

    def src(v):
        if isinstance(v, spelled):
            return v.text
        if v is None:
            return "None"
        if isinstance(v, list):
            return "[" + ", ".join(src(x) for x in v) + "]"
        return rcp_string(v)

    def py(v):
        if isinstance(v, spelled):
            return v.value
        if isinstance(v, list):
            return [py(x) for x in v]
        return v

    items = ", ".join(f"{rcp_string(k)}: {src(v)}" for k, v in layer.items())
    text = "F = maxtext_flags({" + items + "})\n" + FLAGS_RENDER
    strings = [s for k, v in layer.items() for s in (k, *_strings_and_keys(v))]
    if any("\ud800" <= c <= "\udfff" for s in strings for c in s):  # no escape spells a lone surrogate
        assert ws.fails(text).code == "E0002"
        return
    if any(unreadable(s) for v in layer.values() for s in _strings_and_keys(v)) or _overlapping([layer]):
        assert ws.fails(text).code in ("E0317", "E0318")
        return
    out = ws.build(text)
    argv = shlex.split(out["default"]["f.flags"])
    assert same(omegaconf_view(argv), unflatten({k: py(v) for k, v in layer.items()}))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(KEYS, st.one_of(st.from_regex(rf"\A(?:{_FLOAT_RE})\Z").map(_float_from_text),
                                       st.from_regex(r"\A[0-9](?:_?[0-9]){0,9}\Z").map(_int_from_text)),
                       min_size=1, max_size=4))
@example({"lr": spelled(1e-6, "1e-6"), "steps": spelled(2000000, "2000000")})
def test_number_literals_in_recipes_reach_omegaconf(tmp_path_factory, layer):
    ws = Ws(tmp_path_factory.mktemp("ws"))
    src = ", ".join(f'"{k}": {v.text}' for k, v in layer.items())
    text = "F = maxtext_flags({" + src + "})\n" + FLAGS_RENDER
    if _overlapping([layer]):
        assert ws.fails(text).code == "E0318"
        return
    argv = shlex.split(ws.build(text)["default"]["f.flags"])
    assert same(omegaconf_view(argv), unflatten({k: v.value for k, v in layer.items()}))


def test_missing_marker_is_written_as_is(ws):
    """``???`` is OmegaConf's MISSING marker: written as is (a schema check warns, W0312)."""
    f = flags(ws, '{"b": "???"}')
    assert f["argv"] == ["b=???"]
    assert OmegaConf.is_missing(OmegaConf.from_cli(f["argv"]), "b")


# Each entry's token is made once and kept in it (FlagEntry.token, flagset.entry_token): the
# .flags file, .argv, .shell and the renders' data read the kept one. It must be the token of
# the entry's own key and value, also for an entry the schema check replaced (a string
# spelling of the key's type: W0321) and one merged from repeated dicts (resolved()).
SCHEMA_KEYS = st.sampled_from(["steps", "enable_checkpointing", "per_device_batch_size", "run_name",
                               "learning_rate", "profiler", "checkpoint_period"])
SPELLINGS = st.sampled_from(["100", "True", "false", "1.5", "1e-3", "None", "none", "x", "", "-1", "0"])


@functools.cache
def _schema():
    from rcpc.domain.maxtext.schema import load_schema
    from rcpc.domain.workspace import builtin_schema

    return load_schema(builtin_schema("maxtext"), None)


def _tokens_alike(fs) -> None:
    from rcpc.domain.provenance import argv_value, shell_value

    fresh = [token(e.key, e.value) for layer in fs.layers for e in layer.entries]
    assert maxtext.argv(fs) == fresh
    assert [e.token for layer in fs.layers for e in layer.entries] == fresh  # kept, and kept right
    assert [s.value for s in argv_value(fs, SPAN).items] == fresh
    assert shell_value(fs, SPAN).value == shell_form(fresh)
    for e in maxtext.resolved(fs).values():
        assert maxtext.entry_token(e) == token(e.key, e.value)


@settings(max_examples=examples(300, ci=100), deadline=None)
@given(LAYERS, st.lists(st.dictionaries(SCHEMA_KEYS, st.one_of(SPELLINGS, SCALARS), max_size=4), max_size=2))
def test_kept_tokens_are_the_tokens_of_the_entries(layers, schema_layers):
    try:
        _tokens_alike(_flagset(layers))
    except CompileError:
        pass
    try:
        fs = maxtext.make_flagset([value_of(layer) for layer in schema_layers], SPAN,
                                  schema=_schema(), report=lambda d: None)
    except CompileError:
        return
    _tokens_alike(fs)
