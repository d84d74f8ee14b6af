"""A manifest's shape (:mod:`rcpc.domain.kube.schemashape`) decides validity: two manifests of one
shape are both valid or both invalid under the schema, as jsonschema validates it. The
validation cache serves "valid" by shape (the edit loop's JobSets, whose flags changed inside
container args), so this is what keeps that cache from lying.

The property runs over random schemas built from every keyword a CRD or a JSON schema may hold
(string constraints, applicators, keywords that compare whole values, Kubernetes' extensions)
and random manifests of them, each paired with a copy whose strings were changed; it is shown
to fail when the shape forgets a keyword that reads a string's text. The bundled recipes'
JobSets and the published TPU manifests are cases under the real JobSet schema.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import examples
from rcpc.domain.kube import schema as kube_schema, schemashape
from rcpc.domain.kube.schema import SchemaIndex, check_schema
from rcpc.domain.kube.manifests import load_manifests
from rcpc.domain.kube.schemashape import ANY_STRING, shape

REPO = Path(__file__).resolve().parents[1]
TEMPLATES = REPO.parent / "shared" / "data" / "tpu-recipes"
JOBSET = REPO / "compiler" / "rcpc" / "domain" / "schemas" / "jobset.json"

TEXTS = ["", "a", "b", "ab", "A", "aaaa", "-x", "1", "2020-01-01T00:00:00Z"]
KEYS = ["a", "b", "default", "type"]  # property names that are keywords too (the attack's finding A)


def valid(value, schema) -> bool:
    """As rcpc validates: jsonschema draft 7 on the schema with Kubernetes' extensions made
    explicit."""
    return not list(jsonschema.Draft7Validator(kube_schema._structural(schema)).iter_errors(value))


def string_schemas():
    base = st.builds(lambda constraint, note: {"type": "string", **constraint, **note},
                     st.sampled_from([{}, {"pattern": "^a+$"}, {"minLength": 2}, {"maxLength": 2},
                                      {"enum": ["a", "ab"]}, {"const": "a"}, {"format": "date-time"}]),
                     st.sampled_from([{}, {"description": "d"}, {"nullable": True}]))
    int_or_string = st.one_of(
        st.fixed_dictionaries({"x-kubernetes-int-or-string": st.just(True)},
                              optional={"pattern": st.just("^[0-9]+$")}),
        st.fixed_dictionaries({"anyOf": st.just([{"type": "integer"}, {"type": "string"}])},
                              optional={"x-kubernetes-int-or-string": st.just(True)}),
        st.just({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]}))
    return st.one_of(base, int_or_string, st.just({}), st.booleans())


def schemas():
    def extend(children):
        props = st.dictionaries(st.sampled_from(KEYS), children, max_size=3)
        obj = st.fixed_dictionaries({"type": st.just("object"), "properties": props}, optional={
            "additionalProperties": st.one_of(st.booleans(), children),
            "required": st.lists(st.sampled_from(KEYS), max_size=2, unique=True),
            "x-kubernetes-preserve-unknown-fields": st.just(True),
            "enum": st.just([{"a": "a"}, {"a": "b"}]), "propertyNames": st.just({"maxLength": 1}),
            "patternProperties": st.builds(lambda s: {"^b": s}, children),
            "dependencies": st.builds(lambda s: {"a": s}, children),
            "minProperties": st.just(1), "nullable": st.booleans()})
        arr = st.fixed_dictionaries({"type": st.just("array"), "items": children}, optional={
            "uniqueItems": st.just(True), "contains": st.just({"const": "a"}), "maxItems": st.just(2),
            "x-kubernetes-list-type": st.sampled_from(["atomic", "set", "map"])})
        tuple_items = st.builds(lambda a, b: {"type": "array", "items": [a, b]}, children, children)
        applied = st.one_of(
            st.builds(lambda a, b: {"allOf": [a, b]}, children, children),
            st.builds(lambda a, b: {"oneOf": [a, b]}, children, children),
            st.builds(lambda a, b: {"anyOf": [a, b]}, children, children),
            st.builds(lambda a: {"not": a}, children),
            st.builds(lambda a, b: {"if": a, "then": b}, children, children))
        return st.one_of(obj, arr, tuple_items, applied)

    return st.recursive(string_schemas(), extend, max_leaves=8)


def values(draw, schema, depth=0):
    """A value mostly of the schema's form (so that many are valid), sometimes anything."""
    if depth > 4 or not isinstance(schema, dict) or draw(st.integers(0, 9)) == 0:
        return draw(st.recursive(st.one_of(st.sampled_from(TEXTS), st.integers(0, 1), st.none()),
                                      lambda c: st.one_of(st.lists(c, max_size=2),
                                                          st.dictionaries(st.sampled_from(KEYS), c, max_size=2)),
                                      max_leaves=4))
    for branch in ("anyOf", "oneOf", "allOf"):
        if schema.get(branch) and isinstance(schema[branch], list):
            return values(draw, draw(st.sampled_from(schema[branch])), depth + 1)
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        keys = draw(st.lists(st.sampled_from(KEYS), max_size=3, unique=True))
        return {k: values(draw, props.get(k, schema.get("additionalProperties", {})), depth + 1) for k in keys}
    if schema.get("type") == "array":
        items = schema.get("items", {})
        n = draw(st.integers(0, 3))
        return [values(draw, items[i % len(items)] if isinstance(items, list) and items else items, depth + 1)
                for i in range(n)]
    if schema.get("x-kubernetes-int-or-string"):
        return draw(st.one_of(st.integers(0, 1), st.sampled_from(TEXTS)))
    return draw(st.sampled_from(TEXTS))


def restrung(draw, value):
    """``value`` with some of its strings replaced by others (keys kept)."""
    if type(value) is str:
        return draw(st.sampled_from(TEXTS)) if draw(st.booleans()) else value
    if type(value) is dict:
        return {k: restrung(draw, v) for k, v in value.items()}
    if type(value) is list:
        return [restrung(draw, v) for v in value]
    return value


@st.composite
def pairs(draw):
    """(schema, a, b): a random schema, a value mostly of its form, and that value with some
    of its strings changed."""
    schema = draw(schemas())
    a = values(draw, schema)
    return schema, a, restrung(draw, a)


def counterexample(case) -> bool:
    """Whether ``case`` has equal shapes and different validity."""
    schema, a, b = case
    validated = kube_schema._structural(schema)  # shapes are taken on the schema validated
    return shape(a, validated) == shape(b, validated) and valid(a, schema) != valid(b, schema)


# For each keyword that reads a string's text or compares whole values: two values that only
# that keyword tells apart (what the property must catch if the shape forgot the keyword).
WITNESSES = {
    "pattern": ({"type": "string", "pattern": "^a+$"}, "a", "b"),
    "maxLength": ({"type": "string", "maxLength": 2}, "a", "aaaa"),
    "minLength": ({"type": "string", "minLength": 2}, "ab", "a"),
    "enum": ({"type": "object", "enum": [{"a": "a"}]}, {"a": "a"}, {"a": "b"}),
    "const": ({"type": "string", "const": "a"}, "a", "b"),
    "allOf": ({"allOf": [{"type": "string"}, {"type": "string", "pattern": "^a"}]}, "a", "b"),
    "oneOf": ({"oneOf": [{"type": "string"}, {"type": "string", "pattern": "^a"}]}, "b", "a"),
    "not": ({"not": {"type": "string", "pattern": "^a"}}, "b", "a"),
    "if then": ({"if": {"type": "string", "pattern": "^a"}, "then": {"type": "integer"}}, "b", "a"),
    "uniqueItems": ({"type": "array", "uniqueItems": True, "items": {"type": "string"}}, ["a", "b"], ["a", "a"]),
    "contains": ({"type": "array", "contains": {"const": "a"}, "items": {"type": "string"}}, ["a"], ["b"]),
    "patternProperties": ({"type": "object", "patternProperties": {"^b": {"type": "string", "pattern": "^a"}}},
                          {"b": "a"}, {"b": "b"}),
    "dependencies": ({"type": "object", "dependencies": {"a": {"properties": {"a": {}, "b": {"const": "a"}}}}},
                     {"a": 1, "b": "a"}, {"a": 1, "b": "b"}),
}


def _with_witnesses(test):
    """``test`` with each keyword's witness (:data:`WITNESSES`) as an explicit example."""
    for case in WITNESSES.values():
        test = example(case)(test)
    return test


# The ci profile draws 100 random schemas (default runs 300) beside every keyword's witness.
@settings(max_examples=examples(300, 100), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pairs())
@_with_witnesses
@example(({"type": "object", "properties": {"a": {"x-kubernetes-int-or-string": True, "pattern": "^[0-9]+$"}}},
          {"a": "1"}, {"a": "x"}))
def test_one_shape_one_validity(case):
    assert not counterexample(case)


@pytest.mark.parametrize("keyword", sorted(WITNESSES))
def test_the_property_catches_a_shape_that_forgets_a_keyword(monkeypatch, keyword):
    """Each keyword matters: the witness is no counterexample, and becomes one when the shape
    treats the keyword as blind to text. (``format`` is kept out of shapes too, though
    jsonschema checks no format without a format checker: a witness cannot exist for it.)"""
    case = WITNESSES[keyword]
    assert not counterexample(case)
    assert valid(case[1], case[0]) != valid(case[2], case[0])
    for name in ("_TEXT_BLIND", "_OBJECT_SAFE", "_ARRAY_SAFE"):
        monkeypatch.setattr(schemashape, name, getattr(schemashape, name) | set(keyword.split()))
    assert counterexample(case)


def test_strings_only_the_schema_can_read_are_kept():
    schema = {"type": "object", "properties": {
        "name": {"type": "string", "pattern": "^[a-z]+$"}, "args": {"type": "array", "items": {"type": "string"}},
        "size": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}}}
    value = {"name": "job", "args": ["a=1", "b=2"], "size": "2Gi", "other": {"x": ["y"]}}
    assert shape(value, schema) == {"name": "job", "args": [ANY_STRING, ANY_STRING], "size": ANY_STRING,
                                    "other": {"x": [ANY_STRING]}}
    assert repr(ANY_STRING) not in {repr(t) for t in TEXTS}
    assert value == {"name": "job", "args": ["a=1", "b=2"], "size": "2Gi", "other": {"x": ["y"]}}  # not changed


def _jobsets() -> list:
    """The JobSets of the published TPU manifests (placeholders filled), as plain data."""
    out = []
    for path in sorted(TEMPLATES.glob("*.yaml")):
        text = re.sub(r"\$\{(\w+)\}", lambda m: m.group(1).lower().replace("_", "-"), path.read_text())
        out.extend(d for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind") == "JobSet")
    return out


def test_the_published_jobsets_differ_in_shape_only_where_the_schema_reads():
    """Under the real JobSet schema: changing every container argument keeps a manifest's shape
    and its validity; changing a string the schema constrains changes the shape."""
    schema = json.loads(JOBSET.read_text())
    validated = kube_schema._structural(schema)
    jobsets = _jobsets()
    assert len(jobsets) == 13
    for doc in jobsets:
        changed = copy.deepcopy(doc)
        for job in changed["spec"]["replicatedJobs"]:
            for c in job["template"]["spec"]["template"]["spec"]["containers"]:
                for field in ("args", "command"):
                    if field in c:
                        c[field] = [a + " extra=1" for a in c[field]]
        assert shape(changed, validated) == shape(doc, validated)
        assert valid(changed, schema) == valid(doc, schema)
        bad = copy.deepcopy(doc)
        c = bad["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
        c.setdefault("resources", {}).setdefault("limits", {})["google.com/tpu"] = "four"  # a quantity's pattern
        assert shape(bad, validated) != shape(doc, validated)
        assert not valid(bad, schema)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)


def test_a_changed_flag_is_valid_without_jsonschema_and_a_bad_value_still_fails(cache, tmp_path, monkeypatch):
    """The cache serves "valid" for a JobSet whose container args changed (no validation) and
    never for one whose change the schema rejects. (The shipped JobSet schema has a compiled
    validator, which needs no cache, rcpc.domain.kube.compiled: turned off here, as for a
    schema without one.)"""
    monkeypatch.setattr(SchemaIndex, "compiled", lambda self, api, kind: None)
    index = SchemaIndex([JOBSET])
    doc = _jobsets()[0]

    def load(d):
        return _load(tmp_path, d)

    calls = []
    real = kube_schema._errors
    monkeypatch.setattr(kube_schema, "_errors", lambda v, p: calls.append(1) or real(v, p))
    assert check_schema(load(doc), index) == [] and len(calls) == 1
    edited = copy.deepcopy(doc)
    container = edited["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    for field in ("args", "command"):
        if field in container:
            container[field] = [a.replace("=", "= ") + " steps=7" for a in container[field]]
    assert check_schema(load(edited), index) == [] and len(calls) == 1   # served by shape
    container.setdefault("resources", {}).setdefault("limits", {})["google.com/tpu"] = "four"
    found = check_schema(load(edited), index)
    assert len(calls) == 2 and [d.code for d in found] == ["E1101"]
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    assert [(d.code, d.message) for d in check_schema(load(edited), index)] == [(d.code, d.message) for d in found]


def _load(tmp_path: Path, d: dict):
    """The manifest ``d`` as rcpc reads it from a YAML file."""
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(d))
    return load_manifests(path, "m.yaml")[1][0]


def test_no_shape_where_the_compiled_validator_decides(cache, tmp_path, monkeypatch):
    """Where the validator compiled for the very schema gives the verdict (the shipped JobSet
    schema), no shape is made or kept, and the findings are those without any cache: the verdict
    costs less (the RL recipe's first build made 20 shapes to spare 16 verdicts, ~1.8 ms more,
    issue 41). Where jsonschema decides (the same schema without its compiled validator), a
    valid manifest's shape is made and kept. Cases: the 13 published JobSets, each also with
    every container argument changed and with a value the schema refuses."""
    from rcpc.core import store

    store.flush()  # what other tests left pending
    made = []
    monkeypatch.setattr(kube_schema, "shape", lambda *a, **k: made.append(1) or shape(*a, **k))
    cases = []
    for doc in _jobsets():
        edited, bad = copy.deepcopy(doc), copy.deepcopy(doc)
        c = edited["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
        c["args"] = [a + " steps=7" for a in c.get("args", ["x"])]
        c = bad["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
        c.setdefault("resources", {}).setdefault("limits", {})["google.com/tpu"] = "four"
        cases += [doc, edited, bad]

    def findings(index):
        return [[(d.code, d.message) for d in check_schema(_load(tmp_path, d), index)] for d in cases]

    cached = findings(SchemaIndex([JOBSET]))
    assert made == [] and not any(area == "schema" for area, _ in store._STATE.pending.values())
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    assert findings(SchemaIndex([JOBSET])) == cached
    assert [bool(f) for f in cached] == [False, False, True] * 13
    monkeypatch.delenv("RCPC_NO_CACHE")
    monkeypatch.setattr(SchemaIndex, "compiled", lambda self, api, kind: None)
    check_schema(_load(tmp_path, cases[0]), SchemaIndex([JOBSET]))
    assert made


_KEPT_MEMO: dict = {}  # one memo across every example: schemas come and go, as in a long-lived process


@settings(max_examples=examples(200, 60), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pairs(), st.data())
@example(({"type": "object", "properties": {"a": {"type": "string", "pattern": "^a"}}}, {"a": "a"}, {"a": {"b": "c"}}),
         None)  # one schema node tested as a string's and as an object's
def test_a_memo_of_schema_tests_changes_no_shape(case, data):
    """``shape`` with a memo of its schema tests (kept by the caller across values and
    schemas: rcpc.domain.kube.schema.SchemaIndex.memo) gives what it gives without one,
    for values of any form under one schema."""
    schema, a, b = case
    others = [values(data.draw, schema) for _ in range(3)] if data is not None else []
    validated = kube_schema._structural(schema)
    fresh: dict = {}
    for value in (a, b, *others, a):
        assert repr(shape(value, validated, _KEPT_MEMO)) == repr(shape(value, validated))
        assert repr(shape(value, validated, fresh)) == repr(shape(value, validated))
