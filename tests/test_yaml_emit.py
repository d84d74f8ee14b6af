"""Canonical YAML emission of manifests (DESIGN.md §3.3) and field cases F10–F14, F16.

Property: ``yaml.safe_load(emit_document(v)) == to_python(v)`` (types and key order
included) for every value, with PyYAML (YAML 1.1, what OmegaConf and most tools use) and with
ruamel.yaml in YAML 1.2 mode (what newer tools use), and the text is canonical: LF only,
one final newline, no trailing spaces, no folded lines.
"""

from __future__ import annotations

import io

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from conftest import SPAN, rcp_string, same, spelled, value_of
from rcpc.core.emit.yaml import EmitError, emit_document
from rcpc.domain.tpu import tpu_slice
from rcpc.core.values import Dict, to_python

YAML12 = YAML(typ="safe")  # ruamel.yaml reads YAML 1.2 (core schema) by default


def load12(text: str):
    return YAML12.load(io.StringIO(text))


def roundtrip(data) -> str:
    """Emit ``data`` (plain Python, ``spelled`` numbers allowed) and check both readers."""
    v = value_of(data)
    doc = emit_document(v)
    expected = to_python(v)
    assert same(yaml.safe_load(doc), expected), doc
    assert same(load12(doc), expected), doc
    assert_canonical_text(doc)
    return doc


def assert_canonical_text(doc: str) -> None:
    assert "\r" not in doc
    assert doc.endswith("\n") and not doc.endswith("\n\n")
    for line in doc.split("\n"):
        assert line == line.rstrip(" \t"), repr(line)
        assert not line.startswith("\t")


# exact output -----------------------------------------------------------------------------
def test_canonical_block_style(ws):
    text = ws.render("""\
        jobset(
            name = "trainer",
            metadata = {"name": "demo-train", "labels": {"team": "no", "id": "356136738"}},
            spec = {
                "replicatedJobs": [{
                    "name": "worker",
                    "template": {"spec": {"containers": [{
                        "name": "c",
                        "image": "gcr.io/x:1",
                        "command": ["bash", "-c"],
                        "args": ["echo hi\\nexit 0\\n"],
                        "env": [{"name": "A", "value": "true"}, {"name": "B", "value": "1e3"}],
                        "resources": {"limits": {"google.com/tpu": 4}},
                    }]}},
                    "empty": {},
                    "none": [],
                    "n": None,
                }],
                "ratio": 1e-6,
                "flag": True,
            },
        )
    """, "trainer.yaml")
    assert text == (
        "apiVersion: jobset.x-k8s.io/v1alpha2\n"
        "kind: JobSet\n"
        "metadata:\n"
        "  name: demo-train\n"
        "  labels:\n"
        "    team: 'no'\n"
        "    id: '356136738'\n"
        "spec:\n"
        "  replicatedJobs:\n"
        "    - name: worker\n"
        "      template:\n"
        "        spec:\n"
        "          containers:\n"
        "            - name: c\n"
        "              image: gcr.io/x:1\n"
        "              command:\n"
        "                - bash\n"
        "                - '-c'\n"
        "              args:\n"
        "                - |\n"
        "                  echo hi\n"
        "                  exit 0\n"
        "              env:\n"
        "                - name: A\n"
        "                  value: 'true'\n"
        "                - name: B\n"
        "                  value: '1e3'\n"
        "              resources:\n"
        "                limits:\n"
        "                  google.com/tpu: 4\n"
        "      empty: {}\n"
        "      none: []\n"
        "      'n': null\n"
        "  ratio: 1.0e-06\n"
        "  flag: True\n"
    )


# field cases ------------------------------------------------------------------------------
NORWAY = ["no", "No", "NO", "yes", "Yes", "on", "On", "off", "OFF", "y", "Y", "n", "N", "true", "True", "false",
          "null", "Null", "~"]


@pytest.mark.parametrize("word", NORWAY)
def test_f10_norway(word):
    doc = roundtrip({"nodeSelector": {word: word}, "env": [{"name": "X", "value": word}]})
    assert f"  - name: X\n    value: '{word}'\n" in doc
    assert f"  '{word}': '{word}'\n" in doc


def test_f10_in_a_recipe(ws):
    text = ws.render("""\
        jobset(name = "j", spec = {"template": {"spec": {
            "nodeSelector": {"cloud.google.com/gke-spot": "true", "x": "no"},
            "containers": [{"name": "c", "image": "i", "env": [{"name": "ENABLE", "value": "on"}, {"name": "D", "value": "off"}]}],
        }}})
    """, "j.yaml")
    assert "cloud.google.com/gke-spot: 'true'\n" in text and "x: 'no'\n" in text
    assert "value: 'on'\n" in text and "value: 'off'\n" in text
    spec = yaml.safe_load(text)["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"cloud.google.com/gke-spot": "true", "x": "no"}


NUMBERLIKE = ["356136738", "2000000", "1e3", "1E3", "1e-6", "0755", "0o17", "0x1F", "0b101", "12:30", "1:2:3",
              "1_000", ".5", "1.", "+1", "-1", "-0", ".inf", "-.Inf", ".nan", "2001-12-14", "2001-12-14t21:59:43.10-05:00",
              "0.0", "00"]


@pytest.mark.parametrize("s", NUMBERLIKE)
def test_f11_number_like_strings_are_quoted(s):
    doc = roundtrip({"label": s})
    assert doc != f"label: {s}\n"


def test_f11_big_integers(ws):
    text = ws.render("""\
        manifest(name = "m", apiVersion = "v1", kind = "K",
                 spec = {"steps": 2000000, "big": 9223372036854775807, "label": "356136738",
                         "u": 2_000_000, "z": 0123, "neg": -5})
    """, "m.yaml")
    assert "  steps: 2000000\n" in text and "2e+06" not in text and "2000000.0" not in text
    assert "  big: 9223372036854775807\n" in text
    assert "  label: '356136738'\n" in text
    assert "  u: 2000000\n" in text and "  z: 123\n" in text and "  neg: -5\n" in text
    for load in (yaml.safe_load, load12):
        spec = load(text)["spec"]
        assert same(spec, {"steps": 2000000, "big": 9223372036854775807, "label": "356136738",
                           "u": 2000000, "z": 123, "neg": -5})


@pytest.mark.parametrize("src, out, value", [
    ("1e-6", "1.0e-06", 1e-06),   # '1e-6' is a string to YAML 1.1
    ("1.e-05", "1.e-05", 1e-05),
    ("2.0", "2.0", 2.0),
    (".5", "0.5", 0.5),
    ("1E+3", "1000.0", 1000.0),
    ("1_000.5", "1000.5", 1000.5),
    ("1.5e+300", "1.5e+300", 1.5e300),
    ("-2.5", "-2.5", -2.5),
    ("0123", "123", 123),
    ("2_000", "2000", 2000),
    ("True", "True", True), ("true", "true", True), ("False", "False", False), ("false", "false", False),
    ("None", "null", None), ("null", "null", None),
])
def test_number_and_bool_spelling(ws, src, out, value):
    text = ws.render(f'manifest(name = "m", apiVersion = "v1", kind = "K", x = {src})\n', "m.yaml")
    assert text.endswith(f"\nx: {out}\n")
    for load in (yaml.safe_load, load12):
        assert same(load(text)["x"], value)


def test_f12_key_order_is_kept(ws):
    src = """\
        P = param(bool, default = False)
        C = {"name": "main", "image": "img", "command": ["run"], "args": ["--x"] if P else []}
        jobset(name = "j", spec = {"zeta": 1, "alpha": 2, "containers": [C], "mid": {"b": 1, "a": 2}})
        variant("default")
        variant("on", set = {"P": True})
    """
    out = ws.build(src)
    for variant in ("default", "on"):
        text = out[variant]["j.yaml"]
        data = yaml.safe_load(text)
        assert list(data) == ["apiVersion", "kind", "metadata", "spec"]
        assert list(data["spec"]) == ["zeta", "alpha", "containers", "mid"]
        assert list(data["spec"]["containers"][0]) == ["name", "image", "command", "args"]
        assert list(data["spec"]["mid"]) == ["b", "a"]


def test_f13_long_strings_are_never_folded(ws):
    command = " ".join(f"--flag_{i}=value_{i}" for i in range(200))
    assert len(command) > 3000
    script = "set -e\nfor i in 1 2 3; do\n  echo \"$i\"\ndone\n\nexit 0\n"
    text = ws.render(f'manifest(name = "m", apiVersion = "v1", kind = "K", command = ["bash", "-c", "{command}"],'
                     f' script = {rcp_string(script)}, strip = "no newline\\nat end")\n', "m.yaml")
    assert f"  - '{command}'\n" in text  # one line, however long (quoted: it starts with '-')
    assert "script: |\n  set -e\n  for i in 1 2 3; do\n    echo \"$i\"\n  done\n\n  exit 0\n" in text
    assert "strip: |-\n  no newline\n  at end\n" in text
    assert_canonical_text(text)
    for load in (yaml.safe_load, load12):
        data = load(text)
        assert data["command"][2] == command and data["script"] == script and data["strip"] == "no newline\nat end"


@pytest.mark.parametrize("s", ["line with trailing space \nnext", "  leading indent\nx", "tab\there\nx",
                               "ends with two\n\n", "\n", "crlf\r\nline", "a\u2028b\nc"])
def test_multiline_strings_that_cannot_be_block_scalars(s):
    doc = roundtrip({"s": s, "l": [s]})
    assert "\n" not in doc.split("s: ", 1)[1].split("\nl:")[0]  # kept on one (escaped) line


def test_f14_hash_in_a_value(ws):
    text = ws.render('manifest(name = "m", apiVersion = "v1", kind = "K", '
                     'note = "see ticket #42", a = "a#b", b = "#start", c = "x # y")\n', "m.yaml")
    assert "note: 'see ticket #42'\n" in text and "a: a#b\n" in text and "b: '#start'\n" in text
    for load in (yaml.safe_load, load12):
        d = load(text)
        assert (d["note"], d["a"], d["b"], d["c"]) == ("see ticket #42", "a#b", "#start", "x # y")


def test_f16_line_endings(ws):
    text = ws.render('manifest(name = "m", apiVersion = "v1", kind = "K", s = "a\\r\\nb", e = "", '
                     'l = ["x ", " y"], m = "multi\\nline\\n")\n', "m.yaml")
    assert_canonical_text(text)
    assert yaml.safe_load(text)["s"] == "a\r\nb"


def test_values_with_no_yaml_form(ws):
    f = ws.fails('F = maxtext_flags({"a": 1})\nmanifest(name = "m", apiVersion = "v1", kind = "K", args = F)\n')
    assert (f.code, f.message, f.where) == ("E0703", "a maxtext_flags cannot be written to YAML", "recipes/r.rcp:1:5")
    with pytest.raises(EmitError):
        emit_document(Dict({"t": tpu_slice("v4:2x2x1", SPAN)}, {}, SPAN))


def test_empty_and_scalar_documents():
    assert emit_document(value_of({})) == "{}\n"
    assert emit_document(value_of([])) == "[]\n"
    assert emit_document(value_of("no")) == "'no'\n"
    assert emit_document(value_of([[1, [2]], {"a": {}}])) == "- - 1\n  - - 2\n- a: {}\n"


# properties -------------------------------------------------------------------------------
AWKWARD = ["no", "on", "off", "yes", "y", "n", "true", "null", "~", "", " ", "356136738", "1e3", "0755", "0o17",
           "12:30", "1_000", ".5", "-", "- x", "? x", ": x", "a: b", "a:b", "x #y", "#", "&a", "*a", "!a", "%a", "@a",
           "`a", "|", ">", "'", '"', "[a]", "{a}", "a,b", "<<", "=", "2001-12-14", ".inf", ".NaN", "=x", "x=",
           "gs://b/p", "${VAR}", "C:\\dir", "é", "\u2028", "\x85", "\xa0", "\ufeff", "\t", "\x00", "😀", "a\nb",
           "a\n", "\n", "a\n\n", " a\nb", "a \nb", "a\n b\n"]
ALPHABET = st.sampled_from(list("ab09 ._-+:#=,'\"\\$!&*?[]{}|>%@`~<\t\n\r") +
                           ["é", "\u2028", "\x85", "\xa0", "\ufeff", "😀", "\x00", "\x7f", "\x1b"])
STRINGS = st.one_of(
    st.sampled_from(AWKWARD),
    st.text(ALPHABET, max_size=12),
    st.builds(lambda a, b: a + b, st.sampled_from(AWKWARD), st.text(ALPHABET, max_size=3)),
    st.builds(lambda a, b: a + b, st.text(ALPHABET, max_size=3), st.sampled_from(AWKWARD)),
    st.text(st.characters(blacklist_categories=("Cs",))),
)
_FLOAT_RE = r"[0-9][0-9_]*\.[0-9_]*(?:[eE][+-]?[0-9]+)?|\.[0-9][0-9_]*(?:[eE][+-]?[0-9]+)?|[0-9][0-9_]*[eE][+-]?[0-9]+"
NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=-(10 ** 30), max_value=10 ** 30).map(lambda i: spelled(i, str(i))),
    st.from_regex(r"\A-?[0-9][0-9_]{0,10}\Z").map(lambda t: spelled(int(t.replace("_", "")), t)),
    st.from_regex(rf"\A-?(?:{_FLOAT_RE})\Z").map(lambda t: spelled(float(t.replace("_", "")), t)),
    st.floats(),
)
BOOLS = st.sampled_from(["True", "False", "true", "false"]).map(lambda t: spelled(t.lower() == "true", t))
SCALARS = st.one_of(STRINGS, NUMBERS, BOOLS, st.none())
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(STRINGS, inner, max_size=4)), max_leaves=20)
DOCS = st.dictionaries(STRINGS, VALUES, max_size=6)


@settings(max_examples=300, deadline=None)
@given(DOCS)
@example({"nodeSelector": {"a": "no", "b": "on", "c": "off", "d": "yes", "e": "y", "f": "n"}})  # F10
@example({"steps": spelled(2000000, "2000000"), "labels": {"id": "356136738", "x": "1e3", "y": "0755",
                                                           "z": "0o17", "t": "12:30"}})  # F11
@example({"name": "main", "image": "img", "command": ["c"], "args": ["a"]})  # F12
@example({"command": "x" * 3000, "script": "set -e\necho hi\n"})  # F13
@example({"note": "see ticket #42", "run_name": "sweep #3"})  # F14
@example({"a": "...", "b": "---", "c": "... x", "d": "--- y"})  # YAML document markers
@example({"s": "a\r\nb", "t": "trailing \nspace"})  # F16
@example({"k": "D\n"})  # a newline-terminated one-word string must not be written plain
def test_pyyaml_reads_back_the_value(doc):
    v = value_of(doc)
    text = emit_document(v)
    assert same(yaml.safe_load(text), to_python(v)), text
    assert_canonical_text(text)


@settings(max_examples=300, deadline=None)
@given(DOCS)
@example({"nodeSelector": {"a": "no", "b": "on", "c": "off", "d": "yes", "e": "y", "f": "n"}})  # F10
@example({"steps": spelled(2000000, "2000000"), "labels": {"id": "356136738", "x": "1e3", "y": "0755",
                                                           "z": "0o17", "t": "12:30"}})  # F11
@example({"command": "x" * 3000, "script": "set -e\necho hi\n"})  # F13
@example({"note": "see ticket #42"})  # F14
@example({"f": spelled(1e-6, "1e-6"), "g": spelled(1e-05, "1.e-05"), "h": spelled(True, "True")})
def test_yaml12_reads_back_the_value(doc):
    v = value_of(doc)
    text = emit_document(v)
    assert same(load12(text), to_python(v)), text


@settings(max_examples=50, deadline=None)
@given(st.text(st.sampled_from(list("ab -#:'\"")), min_size=3000, max_size=3200))
@example("x" * 3000)
@example(" ".join(["--flag=value"] * 300))
def test_f13_no_folding_at_any_width(s):
    text = emit_document(value_of({"command": s}))
    assert text.count("\n") == 1  # one line: never folded
    assert yaml.safe_load(text) == {"command": s}
