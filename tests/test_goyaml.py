"""YAML as Kubernetes reads it (go-yaml v2 through sigs.k8s.io/yaml, :mod:`rcpc.core.goyaml`):
the resolver against Go's rules, ``rcpc validate`` reading manifests that way, and the YAML
emitter writing nothing plain that kubectl would read as another type.

No Go toolchain is at hand, so the oracles are written from the Go source
(``goyaml.v2/resolve.go`` ``resolve``, ``strconv.ParseInt``/``ParseUint``/``ParseFloat``,
``math/big`` ``SetString``, ``yaml.go`` ``convertToJSONableObject``): a table of cases worked
out by hand, and a second formulation of Go's integer grammar as one regular expression."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rcpc.core import goyaml
from rcpc.core.emit.scalars import plain_ok
from rcpc.core.emit.yaml import emit_document
from rcpc.core.values import to_python

# (text, kind, value): each worked out from the Go source by hand
CASES = [
    ("y", "bool", True), ("Y", "bool", True), ("yes", "bool", True), ("on", "bool", True), ("ON", "bool", True),
    ("n", "bool", False), ("NO", "bool", False), ("off", "bool", False), ("False", "bool", False),
    ("oN", "str", "oN"), ("tRUE", "str", "tRUE"), ("t", "str", "t"), ("f", "str", "f"),
    ("~", "null", None), ("", "null", None), ("Null", "null", None), ("nULL", "str", "nULL"),
    ("0", "int", 0), ("00", "int", 0), ("-0", "int", 0), ("+7", "int", 7), ("0777", "int", 511),
    ("0x1F", "int", 31), ("0X1F", "int", 31), ("+0X1F", "int", 31), ("-0x1f", "int", -31),
    ("0o17", "int", 15), ("0O17", "int", 15), ("0b101", "int", 5), ("0B101", "int", 5), ("-0b101", "int", -5),
    ("0_x1F", "int", 31), ("1_000", "int", 1000), ("1__0", "int", 10), ("+_1", "int", 1), ("0b+1", "int", 1),
    ("0b-1", "int", -1), ("9223372036854775807", "int", 2 ** 63 - 1), ("18446744073709551615", "int", 2 ** 64 - 1),
    ("-9223372036854775808", "int", -2 ** 63), ("0x" + "F" * 17, "int", 16 ** 17 - 1),
    ("0b" + "1" * 65, "int", 2 ** 65 - 1),
    ("08", "float", 8.0), ("0999", "float", 999.0), ("1e5", "float", 1e5), ("1E5", "float", 1e5),
    ("1e-5", "float", 1e-5), ("1.0e5", "float", 1e5), ("1.", "float", 1.0), ("+.5", "float", 0.5),
    ("-.5e1", "float", -5.0), (".5", "float", 0.5), (".5e-3", "float", 0.0005), ("1_000.5", "float", 1000.5),
    ("1_e5", "float", 1e5), ("18446744073709551616", "float", 2.0 ** 64), ("-9223372036854775809", "float", -2.0 ** 63),
    ("0" + "7" * 30, "float", float("7" * 30)), ("1e-400", "float", 0.0),
    (".inf", "float", math.inf), ("+.Inf", "float", math.inf), ("-.INF", "float", -math.inf),
    ("1:30", "str", "1:30"), ("190:20:30", "str", "190:20:30"), ("1e400", "str", "1e400"), (".5e400", "str", ".5e400"),
    (".5_0", "str", ".5_0"), ("._5", "str", "._5"), (".", "str", "."), (".e1", "str", ".e1"), ("+", "str", "+"),
    ("-", "str", "-"), ("0x", "str", "0x"), ("0b", "str", "0b"), ("0b2", "str", "0b2"), ("0xZ", "str", "0xZ"),
    ("-0x" + "F" * 17, "str", "-0x" + "F" * 17), ("+.nan", "str", "+.nan"), ("1.2.3", "str", "1.2.3"),
    ("2001-12-14", "str", "2001-12-14"), ("0x1p-2", "str", "0x1p-2"), ("inf", "str", "inf"), ("_1", "str", "_1"),
    ("<<", "str", "<<"), ("=", "str", "="), ("v1", "str", "v1"), ("1e3x", "str", "1e3x"),
]


@pytest.mark.parametrize("text, kind, value", CASES)
def test_resolve_as_go_yaml(text, kind, value):
    assert goyaml.resolve(text) == (kind, value)
    if kind == "float" and math.isnan(value):
        assert math.isnan(goyaml.resolve(text)[1])


def test_nan():
    for text in (".nan", ".NaN", ".NAN"):
        kind, value = goyaml.resolve(text)
        assert kind == "float" and math.isnan(value)


# Go's base-0 integer grammar (strconv: a sign, then 0b/0o/0x in any case, or a leading 0 for
# octal, else decimal), as one expression: a second formulation of what _parse_int reads
_GO_INT = re.compile(r"([+-]?)(?:0([bB])([01]+)|0([oO])([0-7]+)|0([xX])([0-9a-fA-F]+)|(0[0-7]*)|([1-9][0-9]*))")


def _oracle_int(plain: str):
    m = _GO_INT.fullmatch(plain)
    if m is None:
        return None
    sign, b, bd, o, od, x, xd, octal, dec = m.groups()
    n = int(bd, 2) if b else int(od, 8) if o else int(xd, 16) if x else int(octal, 8) if octal else int(dec)
    return -n if sign == "-" else n


@settings(max_examples=3000, deadline=None)
@given(st.text(st.sampled_from(list("0123456789abfxoXOB_.+-eE")), min_size=1, max_size=12))
@example("0_x1F")
@example("0X1F")
def test_ints_are_go_strconv_ints(text):
    """Whenever Go's grammar reads the text (underscores dropped) as a 64-bit int, go-yaml's
    resolve gives that int; whatever it gives as an int is such an int, or a 0b form, or a
    big int beyond 64 bits."""
    kind, value = goyaml.resolve(text)
    if text[0] not in "+-0123456789":
        assert kind != "int"
        return
    plain = text.replace("_", "")
    n = _oracle_int(plain)
    if n is not None and (-2 ** 63 <= n < 2 ** 63 or n < 2 ** 64 and plain[0] not in "+-"):  # ParseInt, ParseUint
        assert (kind, value) == ("int", n), text
    elif kind == "int":
        assert plain.lstrip("-").startswith("0b") or abs(value) >= 2 ** 63, text


@settings(max_examples=2000, deadline=None)
@given(st.text(st.sampled_from(list("0123456789abxoXOB_.+-eEyYnN~:")), max_size=10))
@example("0X1F")
@example("0_x1F")
@example("08")
@example("1e5")
@example("y")
def test_what_rcpc_writes_plain_kubectl_reads_as_that_string(text):
    """A string the YAML emitter writes unquoted is one go-yaml keeps a string."""
    doc = emit_document(_value({"k": text}))
    if doc == f"k: {text}\n":
        assert goyaml.resolve(text) == ("str", text)
    assert plain_ok(text) <= (goyaml.resolve(text) == ("str", text))


def _value(data):
    from conftest import value_of

    return value_of(data)


@pytest.mark.parametrize("x, text", [
    (1e6, "1e+06"), (100000.0, "100000"), (1e-5, "1e-05"), (0.0001, "0.0001"), (1.5, "1.5"), (0.1, "0.1"),
    (123456.7, "123456.7"), (16777217.0, "1.6777216e+07"), (3.4e38, "3.4e+38"), (1e39, ".inf"), (-1e39, "-.inf"),
    (0.0, "0"), (-0.0, "-0"), (-2.5, "-2.5"), (1e-45, "1e-45"), (math.nan, ".nan"),
])
def test_float_keys_as_go_formats_them(x, text):
    assert goyaml.float32_g(x) == text


# --- rcpc validate reads as kubectl ---------------------------------------------------------
POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: p
  labels:
    app: x
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: img
    env:
    - name: A
      value: {value}
"""


@pytest.mark.parametrize("value, kind", [("1e-5", "float"), ("y", "bool"), ("0X1F", "int"), ("08", "float"),
                                         ("on", "bool"), ("0o17", "int")])
def test_env_values_kubectl_reads_as_other_types(cli, ws, value, kind):
    """The attacker's ``value: 1e-5`` passed (PyYAML reads a string); kubectl sends a number."""
    (ws.root / "p.yaml").write_text(POD.format(value=value))
    r = cli("validate", "p.yaml")
    assert r.code == 1 and f"got {kind}" in r.err and "p.yaml:14:14: error[E1001]" in r.err, r.err
    (ws.root / "p.yaml").write_text(POD.format(value=f'"{value}"'))
    assert cli("validate", "p.yaml").code == 0


@pytest.mark.parametrize("value", ["1:30", "2001-12-14", "1.2.3", "abc", "'1e-5'", "|\n        1e-5"])
def test_env_values_kubectl_reads_as_strings(cli, ws, value):
    (ws.root / "p.yaml").write_text(POD.format(value=value))
    r = cli("validate", "p.yaml")
    assert r.code == 0, r.err


def test_keys_become_json_keys(cli, ws):
    """``yes:`` is the key ``true``; two keys kubectl makes one are a repeated key; a null key
    and a NaN value are refused as kubectl refuses them."""
    text = POD.format(value='"v"').replace("    app: x\n", "    yes: a\n    true: b\n")
    (ws.root / "p.yaml").write_text(text)
    r = cli("validate", "p.yaml")
    assert r.code == 1 and "key 'true' is repeated" in r.err and "p.yaml:7:5" in r.err, r.err
    (ws.root / "p.yaml").write_text(POD.format(value='"v"').replace("    app: x\n", "    ~: a\n"))
    r = cli("validate", "p.yaml")
    assert r.code == 1 and "E1103" in r.err and "null key" in r.err and "p.yaml:6:5" in r.err, r.err
    (ws.root / "p.yaml").write_text(POD.format(value='"v"') + "  priority: .nan\n")
    r = cli("validate", "p.yaml")
    assert r.code == 1 and "not a number JSON can hold" in r.err, r.err


KEY_CHARS = st.text(st.sampled_from(list("0123456789abxXoO_.+-eEyYnNtT")), min_size=1, max_size=6)


@settings(max_examples=400, deadline=None)
@given(key=st.one_of(KEY_CHARS, st.sampled_from(["yes", "no", "on", "off", "y", "n", "true", "False", "0x10", "0o17",
                                                  "1e3", "08", "1_000", "1.0", "1", "-1", "app"])),
       quoted=st.booleans())
@example(key="n", quoted=False)
@example(key="yes", quoted=False)
def test_a_plain_key_kubectl_sends_as_other_text_is_a_warning(key, quoted):
    """W1104 exactly for a plain (unquoted, untagged) key that go-yaml reads as another type
    and kubectl sends as other text (``yes`` as ``true``, ``0x10`` as ``16``); ``1`` stays
    ``1``, a quoted key is its text, and nothing else changes what is read."""
    from rcpc.core.diagnostics import CompileError
    from rcpc.domain.kube.manifests import parse_manifests

    written = f'"{key}"' if quoted else key
    warnings: list = []
    try:
        docs = parse_manifests(f"kind: ConfigMap\ndata:\n  {written}: v\n", "m.yaml", warnings)
    except CompileError:  # a null key (E1103): not a warning's business
        assert not quoted and goyaml.json_key(*goyaml.resolve(key)) is None
        return
    kind, value = (goyaml.STR, key) if quoted else goyaml.resolve(key)
    sent = goyaml.json_key(kind, value)
    assert list(to_python(docs[0])["data"]) == [sent]
    assert [(d.code, d.severity, d.span.line, d.span.col) for d in warnings] == \
        ([("W1104", "warning", 3, 3)] if sent != key else [])
    if warnings:
        assert repr(sent) in warnings[0].message and f'"{key}"' in warnings[0].hint


def test_validate_and_import_say_which_keys_kubectl_retypes(cli, ws):
    (ws.root / "p.yaml").write_text(POD.format(value='"v"').replace("    app: x\n", "    yes: a\n"))
    r = cli("validate", "p.yaml")
    assert r.code == 0 and "p.yaml:6:5: warning[W1104]: kubectl reads the key 'yes' as a bool and sends it as " \
        "the key 'true'" in r.err, r.err
    (ws.root / "t.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  n: ${V}\n")
    r = cli("import", "manifest", "t.yaml", "-o", "t.rcp")
    assert r.code == 0 and "W1104" in r.err and "1 key(s) kubectl retypes" in r.err, r.err
    assert '"false": V' in (ws.root / "t.rcp").read_text()


def test_explicit_tags(cli, ws):
    (ws.root / "p.yaml").write_text(POD.format(value="!!str 1e-5"))
    assert cli("validate", "p.yaml").code == 0
    (ws.root / "p.yaml").write_text(POD.format(value="!!int abc"))
    r = cli("validate", "p.yaml")
    assert r.code == 1 and "cannot read 'abc' as a !!int" in r.err and "help:" in r.err, r.err


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(st.sampled_from(list("0123456789abxX_.+-eyYn~:")), min_size=1, max_size=6),
                       st.text(st.sampled_from(list("0123456789abxX_.+-eyYn~:")), max_size=6), max_size=5))
@example({"yes": "0X1F", "0_x1F": "y", "1e3": "08"})
def test_kubectl_reads_back_what_rcpc_writes(tmp_path_factory, data):
    """Every string document the emitter writes reads back, as kubectl reads it, as the same
    strings (keys included)."""
    from rcpc.domain.kube.manifests import load_manifests

    value = _value({"apiVersion": "v1", "kind": "ConfigMap", "data": data})
    path = tmp_path_factory.getbasetemp() / "kubectl-reads-back.yaml"
    path.write_text(emit_document(value))
    _, docs = load_manifests(path, "m.yaml")
    assert to_python(docs[0]) == to_python(value)


@settings(max_examples=300, deadline=None)
@given(st.from_regex(r"\A[A-Z_][A-Z0-9_]{0,3}\Z"))
@example("N")
@example("Y")
@example("ON")
@example("NULL")
def test_an_imported_placeholder_default_is_a_string_to_kubectl(name):
    """``rcpc import manifest`` proves its recipe with placeholder defaults put into the
    template; ``${N}`` as ``n`` would be go-yaml's false, and the proof (rightly) unequal."""
    from rcpc.importer.manifest import visible_default

    assert goyaml.resolve(visible_default(name))[0] == "str"


# --- merges, tags and document cutting as kubectl reads them ----------------------------------
def _read(text):
    from rcpc.domain.kube.manifests import parse_manifests

    return [to_python(d) for d in parse_manifests(text, "m.yaml")]


def _refused(text):
    from rcpc.core.diagnostics import CompileError

    with pytest.raises(CompileError) as info:
        _read(text)
    diags = info.value.diagnostics
    assert all(d.code == "E1103" and d.hint for d in diags), diags
    return diags


_ANCHORS = {"x": {"p": 1, "q": 2}, "y": {"p": 3, "r": 4}}
_PAIR = st.one_of(st.tuples(st.just("key"), st.sampled_from("pqrs"), st.integers(0, 9)),
                  st.tuples(st.just("merge"), st.lists(st.sampled_from("xy"), min_size=1, max_size=2), st.booleans()))


@settings(max_examples=300, deadline=None)
@given(st.lists(_PAIR, max_size=6))
@example([("key", "p", 3), ("merge", ["x"], False)])
@example([("merge", ["x", "y"], True), ("key", "p", 5)])
def test_merges_as_go_yaml_v2_sets_them(pairs):
    """go-yaml v2 ``decoder.mapping`` sets a mapping's pairs in the order written, a ``<<``
    merging there and then (``decoder.merge``: a list from its last item to its first), each
    overwriting what was set before. PyYAML lets written keys win wherever ``<<`` stands: the
    attacker's ``p: 3`` before ``<<: *x`` is 1 to kubectl, and ``p: 3`` after it was refused as
    a repeated key."""
    written = [name for kind, name, _ in pairs if kind == "key"]
    if len(written) != len(set(written)):
        return  # a key written twice is refused (tested below)
    expect, lines = {}, ["x: &x {p: 1, q: 2}", "y: &y {p: 3, r: 4}", "m:"]
    for kind, a, b in pairs:
        if kind == "key":
            expect[a] = b
            lines.append(f"  {a}: {b}")
        else:
            for anchor in reversed(a):
                expect.update(_ANCHORS[anchor])
            refs = ", ".join(f"*{n}" for n in a)
            lines.append(f"  <<: [{refs}]" if b or len(a) > 1 else f"  <<: {refs}")
    text = "\n".join(lines) + "\n" if pairs else "x: &x {p: 1, q: 2}\ny: &y {p: 3, r: 4}\nm: {}\n"
    assert _read(text)[0]["m"] == expect


@pytest.mark.parametrize("text", ["a: 1\n<<: 5\n", "a: 1\n<<: [{b: 1}, 2]\n", "s: &s [{b: 1}]\nm:\n  <<: *s\n",
                                  "a: 1\na: 2\n", "1: a\n0x1: b\n",
                                  "a: &x {p: 1}\nb: {<<: *x, p: 2, p: 3}\n"])
def test_merges_and_keys_refused(text):
    """A merge of what is not a mapping (or a written list of them) kubectl refuses
    (``failWantMap``); a key written twice in one mapping, compared as go-yaml resolves it
    (``1`` and ``0x1`` are one Go map key), go-yaml's strict reading refuses (``setMapIndex``),
    where kubectl keeps the last silently."""
    _refused(text)


@pytest.mark.parametrize("text, value", [
    # resolvableTag('!') is false: the text is a string
    ("a: ! 123", "123"), ("a: ! true", "true"), ("a: &n ! ~", "~"), ("! 0x10: x", {"0x10": "x"}),
    ("a: !!binary aGVsbG8=", "hello"), ("a: !!binary |\n  aGVs\n  bG8=", "hello"),  # decoder.scalar: base64
    ("a: !!timestamp 2001-12-14", "2001-12-14"), ("a: !!timestamp 2001-12-14t21:59:43.10-05:00",
                                                   "2001-12-14t21:59:43.10-05:00"),
    ("a: !!float 9223372036854775807", float(2 ** 63 - 1)), ("!!merge a: 1", {"a": 1}),
])
def test_tags_as_go_yaml_v2_reads_them(text, value):
    doc = _read(text)[0]
    if type(value) is dict:  # keys: '! 0x10' is the key '0x10', not 16; '!!merge a' is the key 'a'
        assert doc == value
    else:
        assert doc["a"] == value and type(doc["a"]) is type(value)


@pytest.mark.parametrize("text", ["a: !!binary aGVsbG8", "a: !!binary aGVs bG8=", "a: !!binary aGVsbG8===",
                                  "a: !!float 18446744073709551615", "a: !!float 0x" + "F" * 17,
                                  "a: !!timestamp abc", "a: !!timestamp 2001-02-29", "a: !!timestamp 123"])
def test_tags_kubectl_refuses(text):
    _refused(text)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=60), st.integers(1, 80))
def test_binary_is_go_base64(data, width):
    """``!!binary`` reads as the bytes its base64 encodes, its line breaks ignored (Go's
    ``base64.StdEncoding.DecodeString``), and refused with a character outside the alphabet."""
    import base64

    text = base64.b64encode(data).decode()
    broken = "\n".join(text[i:i + width] for i in range(0, len(text), width))
    assert goyaml.resolve_tagged("binary", broken) == ("str", data.decode("utf-8", errors="replace"))
    if text:
        assert goyaml.resolve_tagged("binary", text[:-1] + " ") is None


@settings(max_examples=500, deadline=None)
@given(st.integers(0, 9999), st.integers(0, 13), st.integers(0, 32), st.integers(0, 25), st.integers(0, 61),
       st.integers(0, 61), st.sampled_from(["", ".5", ",123456789012"]), st.sampled_from(["Z", "+05:30", "-24:00",
                                                                                          "+25:00", ""]),
       st.sampled_from(["T", "t", " ", None]), st.booleans())
@example(2001, 2, 29, 0, 0, 0, "", "Z", None, False)
def test_timestamps_as_go_time_parse(year, month, day, hour, minute, second, frac, zone, sep, pad):
    """go-yaml's ``parseTimestamp`` (Go's ``time.Parse`` of ``allowedTimestampFormats``)
    against Python's calendar: a date of that month, a time of day, a zone with the 'T' forms
    only (and required there)."""
    import datetime

    f = "{:02d}" if pad else "{}"
    text = f"{year:04d}-{f.format(month)}-{f.format(day)}"
    try:
        datetime.date(year or 2000, month, day)
        ok = True
    except ValueError:
        ok = False
    if sep is not None:
        text += f"{sep}{f.format(hour)}:{f.format(minute)}:{f.format(second)}{frac}{zone if sep != ' ' else ''}"
        ok = ok and hour < 24 and minute < 60 and second < 60 and (sep == " " or zone not in ("", "+25:00"))
    assert goyaml.parse_timestamp(text) == ok, text


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 63, 2 ** 63 - 1) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                     max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=5), _JSON, min_size=1, max_size=4), min_size=1, max_size=3),
       st.lists(st.sampled_from(["", " ", "\n", "\t", "\r\n"]), min_size=3, max_size=3), st.booleans())
@example([{"a": 1}, {"b": [1, 2]}], ["", "\n", ""], False)
def test_a_file_opening_with_a_brace_is_read_as_json(objects, gaps, indent):
    """kubectl reads a file that opens with ``{`` as a stream of JSON values
    (``GuessJSONStream``): several objects one after another are several documents (YAML
    refused them), and what is not JSON (a YAML flow mapping) is refused."""
    import json

    texts = [json.dumps(o, indent=2 if indent else None, ensure_ascii=False) for o in objects]
    text = gaps[0] + "".join(t + gaps[(i + 1) % 3] for i, t in enumerate(texts))
    assert _read(text) == objects
    _refused(text.replace('"', "", 2) if '"' in texts[0] else "{a: 1}")


@pytest.mark.parametrize("text", ["--- {a: 1}\n", "\ufeff--- {a: 1}\n", "a: 1\n--- |\n  x\n", "a: 1\n----\nb: 2\n",
                                  "a: 1\n---x\n",
                                  "%YAML 1.1\n---\na: 1\n", "%TAG !e! tag:example.com,2000:\n---\na: !e!x 1\n",
                                  "{a: 1}\n", '{"a": 1} # c\n', '{"a": 1,}\n', '{"a": NaN}\n'])
def test_document_cuts_kubectl_refuses(text):
    """``YAMLReader.Read`` allows only a comment after ``---``; a directive is cut from its
    ``---``; a file opening with ``{`` must be JSON."""
    diags = _refused(text)
    assert diags[0].span is not None and diags[0].span.line >= 1


@pytest.mark.parametrize("text", ["---\na: 1\n--- # two\nb: 2\n", "---\t\na: 1\n", "# c\n{a: 1}\n",
                                  "a: |\n  --- x\n", '\ufeff{"a": 1}\n'])
def test_document_cuts_kubectl_reads(text):
    assert _read(text)


_LEAF = (st.text(max_size=12) | st.integers(-2 ** 63, 2 ** 63 - 1) | st.booleans() | st.none()
         | st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(["k" * 1030, "0x1F\n", " #a: b", "---"]))
_TREE = st.recursive(_LEAF, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=8) | st.sampled_from(["q" * 1100, "<<", "y"]), inner,
                                       max_size=3),
                     max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8) | st.just("k" * 1030), _TREE, max_size=4))
@example({"k" * 1030: "v"})
@example({"a": [{"q" * 1100: {"b": "x\ny\n"}}]})
def test_kubectl_reads_every_document_rcpc_writes(data):
    """Any manifest value (keys and strings of any characters, nested lists and dicts, numbers,
    long keys) the emitter writes reads back, as kubectl reads it, as the same value. A key of
    more than 1024 characters was written as a simple key, which no YAML reader takes (libyaml
    and go-yaml: "could not find expected ':'")."""
    from rcpc.domain.kube.manifests import parse_manifests

    value = _value({"apiVersion": "v1", "kind": "ConfigMap", "data": data})
    docs = parse_manifests(emit_document(value), "m.yaml")
    assert to_python(docs[0]) == to_python(value)


def _f32_nearest(q, bits):
    """True when the exact decimal ``q`` rounds to the float32 with bit pattern ``bits`` (its
    neighbours checked: nearer one wins, a tie goes to the even mantissa)."""
    import struct
    from fractions import Fraction

    def val(b):  # past the largest float32: 2**128, where rounding overflows to infinity
        return Fraction(2 ** 128) if b == 0x7F800000 else Fraction(struct.unpack("<f", struct.pack("<I", b))[0])

    me = val(bits)
    for other in (bits - 1, bits + 1):
        if 0 <= other <= 0x7F800000:
            d_me, d_other = abs(q - me), abs(q - val(other))
            if d_other < d_me or d_other == d_me and other % 2 == 0:
                return False
    return True


@settings(max_examples=1500, deadline=None)
@given(st.integers(1, 0x7F7FFFFF) | st.integers(1, 254).map(lambda e: e << 23))
@example(0x0F800000)  # 2**-96: Go writes 1.2621775e-29 (8 digits, above it: the interval is wider there)
def test_float_keys_are_the_shortest_float32_decimal(bits):
    """``float32_g`` against the contract of Go's shortest ``FormatFloat(x, 'g', -1, 32)``:
    the text reads back as the same float32, no decimal of fewer digits does, and no other of
    as many digits is nearer."""
    import struct
    from decimal import Decimal
    from fractions import Fraction

    x = struct.unpack("<f", struct.pack("<I", bits))[0]
    text = goyaml.float32_g(x)
    q = Fraction(Decimal(text))
    assert _f32_nearest(q, bits), text
    digits = Decimal(text).normalize().as_tuple()
    p, exp = len(digits.digits), digits.exponent
    for n in range(1, p):  # fewer digits: the two decimals around x at n digits
        scale = Fraction(10) ** (exp + p - n)
        below = int(Fraction(x) / scale)
        assert not any(_f32_nearest(m * scale, bits) for m in (below, below + 1) if m > 0), (text, n)
    unit = Fraction(10) ** exp
    for m in (q - unit, q + unit):
        assert not (_f32_nearest(m, bits) and abs(m - Fraction(x)) < abs(q - Fraction(x))), text
    if exp + p - 1 < -4 or exp + p - 1 >= 6:
        assert "e" in text
    else:
        assert "e" not in text


def test_validate_reports_kubectl_document_cuts_located(cli, ws):
    """``rcpc validate`` of a Pod written as a YAML flow mapping (kubectl: a JSON syntax
    error), after ``--- `` on the separator line, and with a merge overriding a written key:
    located E1103 or the merged value checked, never a traceback."""
    flow = "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, image: i}]}}\n"
    (ws.root / "p.yaml").write_text(flow)
    r = cli("validate", "p.yaml")
    assert r.code == 1 and "p.yaml:1:2: error[E1103]" in r.err and "as JSON" in r.err and "help:" in r.err, r.err
    (ws.root / "p.yaml").write_text("--- " + flow)
    r = cli("validate", "p.yaml")
    assert r.code == 1 and "p.yaml:1:4: error[E1103]" in r.err and "'---'" in r.err, r.err
    merged = POD.format(value='"v"').replace("    - name: A\n      value: \"v\"\n",
                                              "    - name: A\n      value: \"v\"\n      <<: {value: 1e-5}\n")
    (ws.root / "p.yaml").write_text(merged)
    r = cli("validate", "p.yaml")
    assert r.code == 1 and "got float" in r.err, r.err
