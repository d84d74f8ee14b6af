"""Attacks on the validation cache's shapes (:mod:`rcpc.domain.kube.schemashape`, commit 7f2ae95):
manifests the cache reports otherwise than an uncached run (``RCPC_NO_CACHE=1``). Each test
names its finding; each failed on the commit it was written against (7f2ae95) and passes
since the fix (``_structural`` reads schemas only where schemas are, shapes are taken on the
validated schema, a schema key of another type keeps the value, cache keys are a tuple's
repr).

* Finding A: :func:`rcpc.domain.kube.schema._structural` treats a ``properties`` map as a
  schema, so a *property named* ``default`` or ``x-kubernetes-validations`` is dropped from
  the validated schema (its field then falls to ``additionalProperties``), a property named
  ``x-kubernetes-preserve-unknown-fields`` removes the property ``additionalProperties``,
  one named ``x-kubernetes-int-or-string`` removes the property ``type``. The shape is taken
  against the raw schema, where the property's own (text-blind) schema still governs the field,
  so a string that the validated schema reads is left out of the shape: the cache reports
  valid a manifest jsonschema rejects.
* Finding B: the shape reads a schema's keys as strings (``k.startswith("x-")``); a YAML
  schema with a key of another type (``1:``, ``true:``, ``null:``), which jsonschema ignores
  as an unknown keyword, raises AttributeError with the cache on (a traceback, exit 1) and
  validates with it off.
* Finding C: the cache key joins its fields with NUL; apiVersion and kind may hold NUL, and a
  shape leaves out the manifest's own apiVersion and kind, so ("ex/v1", "A\\0B") and
  ("ex/v1\\0A", "B") share shape keys: one kind's "valid" is served to the other.
* Side finding S (cache on or off): the same ``_structural`` rewriting makes fields named
  ``default``, ``x-kubernetes-validations``, ... "unknown fields", and ``nullable`` beside
  ``type`` a traceback.
"""

from __future__ import annotations

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rcpc.domain.kube import schema as kube_schema
from rcpc.domain.kube.schema import SchemaIndex, check_schema
from rcpc.domain.kube.manifests import load_manifests
from rcpc.domain.kube.schemashape import shape

TEXTS = ["", "a", "aa", "b", "zzz", "1"]
CHECKED = {"type": "string", "pattern": "^a+$"}


def valid(value, schema) -> bool:
    """As rcpc validates (test_schemashape.valid)."""
    return not list(jsonschema.Draft7Validator(kube_schema._structural(schema)).iter_errors(value))


def colliding(name: str) -> dict:
    """An object schema whose property ``name`` is any string, with other fields held to
    ``^a+$`` by ``additionalProperties``; the sibling property that makes ``_structural``
    drop ``name`` (for keyword-named properties it reads)."""
    props = {name: {"type": "string"}}
    if name == "additionalProperties":
        props["x-kubernetes-preserve-unknown-fields"] = {"type": "boolean"}
    if name == "type":
        props["x-kubernetes-int-or-string"] = {"type": "boolean"}
    return {"type": "object", "properties": props, "additionalProperties": CHECKED}


NAMES = ["default", "x-kubernetes-validations", "additionalProperties", "type"]


@settings(max_examples=100, deadline=None)
@given(name=st.sampled_from(NAMES), a=st.sampled_from(TEXTS), b=st.sampled_from(TEXTS))
def test_finding_a_keyword_named_properties_one_shape_one_validity(name, a, b):
    """Finding A, as the shape's claim: shape(a) == shape(b) implies a valid <=> b valid, under
    the schema as validated (after ``_structural``), for fields named like a keyword that
    ``_structural`` reads."""
    schema = colliding(name)
    va, vb = {name: a}, {name: b}
    if shape(va, schema) == shape(vb, schema):
        assert valid(va, schema) == valid(vb, schema)


CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: SCHEMA
"""


def crd(tmp_path, spec: dict, name="crd.yaml"):
    root = {"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"},
        "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}, "spec": spec}}
    doc = yaml.safe_load(CRD.replace("SCHEMA", "{}"))
    doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = root
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def widget(tmp_path, spec: dict, name="m.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                                    "spec": spec}))
    return load_manifests(path, name)[1][0]


def shown(diags) -> list:
    return [(d.code, d.message, str(d.span)) for d in diags]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)


def uncached(data, index) -> list:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RCPC_NO_CACHE", "1")
        return shown(check_schema(data, index))


@pytest.mark.parametrize("name", NAMES)
def test_finding_a_a_field_named_like_a_keyword_is_reported_as_without_the_cache(cache, tmp_path, name):
    """Finding A end to end (``rcpc validate --kube-schema crd.yaml`` on w-ok.yaml, then on
    w-bad.yaml: exit 0 cached, exit 1 with RCPC_NO_CACHE=1, before the fix): the field named
    like a keyword is held to its own property's schema (any string), cached or not, and a
    field ``additionalProperties`` reads is still refused after a valid widget was cached."""
    index = SchemaIndex([crd(tmp_path, colliding(name))])
    good = widget(tmp_path, {name: "aaa"})
    renamed = widget(tmp_path, {name: "zzz"}, "renamed.yaml")
    bad = widget(tmp_path, {name: "aaa", "other": "zzz"}, "bad.yaml")
    assert uncached(good, index) == shown(check_schema(good, index)) == []
    assert uncached(renamed, index) == shown(check_schema(renamed, index)) == []
    expected = uncached(bad, index)
    assert expected and expected[0][0] == "E1101" and "'zzz' does not match" in expected[0][1]
    assert shown(check_schema(bad, index)) == expected


@pytest.mark.parametrize("key", ["1", "true", "null", "1.5"])
@pytest.mark.parametrize("where", ["object", "string"])
def test_finding_b_a_schema_key_that_is_not_a_string_validates_as_without_the_cache(cache, tmp_path, key, where):
    """Finding B: a YAML CRD with a key of another type than string (here ``1:`` beside
    ``type: object`` or beside ``type: string``), which jsonschema ignores, raised
    AttributeError ('int' object has no attribute 'startswith') in the shape with the cache
    on; ``RCPC_NO_CACHE=1`` validates it."""
    spec = {"type": "object", "properties": {"size": {"type": "string"}}}
    path = crd(tmp_path, spec)
    raw = path.read_text()
    if where == "object":
        raw = raw.replace("          spec:\n", f"          spec:\n            {key}: note\n", 1)
    else:
        raw = raw.replace("                type: string\n", f"                type: string\n                {key}: note\n", 1)
    assert raw != path.read_text()
    path.write_text(raw)
    index = SchemaIndex([path])
    data = widget(tmp_path, {"size": "big"})
    expected = uncached(data, index)
    assert expected == []
    assert shown(check_schema(data, index)) == expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(api=st.text("ab/\0", max_size=4), kind=st.text("ab/\0", max_size=4),
       api2=st.text("ab/\0", max_size=4), kind2=st.text("ab/\0", max_size=4))
def test_finding_c_keys_of_two_kinds_differ(cache, api, kind, api2, kind2):
    """Finding C, as the key's claim: one manifest (or shape) under two (apiVersion, kind)
    pairs has two keys. The key joins its fields with NUL, which apiVersion and kind may hold:
    ("ex/v1", "A\\0B") and ("ex/v1\\0A", "B") share keys; before shapes, the manifest's own
    apiVersion and kind (repr escapes NUL) kept them apart, a shape leaves them out."""
    from rcpc.domain.kube import schemacache
    from rcpc.domain.kube.schemashape import ANY_STRING

    if (api, kind) != (api2, kind2):
        plain = {"apiVersion": ANY_STRING, "kind": ANY_STRING}
        assert (schemacache.key("s", api, kind, False, plain, shaped=True)
                != schemacache.key("s", api2, kind2, False, plain, shaped=True))


NUL_SCHEMAS = """\
x-kubernetes-group-version-kind: [{group: ex, version: v1, kind: "A\\0B"}]
type: object
properties:
  apiVersion: {type: string}
  kind: {type: string}
  metadata: {type: object, x-kubernetes-preserve-unknown-fields: true}
  spec: {type: object, additionalProperties: {type: string}}
---
x-kubernetes-group-version-kind: [{group: ex, version: "v1\\0A", kind: "B"}]
type: object
properties:
  apiVersion: {type: string}
  kind: {type: string}
  metadata: {type: object, x-kubernetes-preserve-unknown-fields: true}
  spec: {type: object, additionalProperties: {type: integer}}
"""


def test_finding_c_a_kind_with_nul_is_served_another_kinds_valid(cache, tmp_path):
    """Finding C end to end (``rcpc validate --kube-schema nul-schema.yaml nul1.yaml`` then
    ``nul2.yaml``: exit 0 cached, exit 1 with RCPC_NO_CACHE=1): a valid manifest of
    ("ex/v1", "A\\0B") makes one of ("ex/v1\\0A", "B") with a string where its schema wants
    an integer valid from the cache."""
    path = tmp_path / "schemas.yaml"
    path.write_text(NUL_SCHEMAS)
    index = SchemaIndex([path])
    docs = []
    for i, (api, kind) in enumerate([("ex/v1", "A\\0B"), ("ex/v1\\0A", "B")]):
        m = tmp_path / f"nul{i}.yaml"
        m.write_text(f'apiVersion: "{api}"\nkind: "{kind}"\nmetadata: {{name: x}}\nspec: {{x: zzz}}\n')
        docs.append(load_manifests(m, m.name)[1][0])
    assert uncached(docs[0], index) == shown(check_schema(docs[0], index)) == []
    expected = uncached(docs[1], index)
    assert [d[0] for d in expected] == ["E1101"]
    assert shown(check_schema(docs[1], index)) == expected


@pytest.mark.parametrize("names", [("default",), ("x-kubernetes-validations",),
                                   ("x-kubernetes-preserve-unknown-fields", "additionalProperties"),
                                   ("nullable", "type"), ("x-kubernetes-int-or-string", "type")])
def test_side_finding_a_field_named_like_a_keyword_validates_as_its_property_says(tmp_path, monkeypatch, names):
    """Side finding S (the root of finding A, with the cache off too): ``_structural`` rewrites
    a ``properties`` map as if it were a schema, so a CRD field named ``default`` is reported
    "unknown field 'default'", and fields named ``nullable`` and ``type`` raise AttributeError
    ('list' object has no attribute 'get') in jsonschema; the API server accepts each field as
    its property's schema says."""
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    spec = {"type": "object", "properties": {n: {"type": "boolean"} for n in names}}
    spec["properties"][names[-1]] = {"type": "string"}
    index = SchemaIndex([crd(tmp_path, spec)])
    data = widget(tmp_path, {names[-1]: "anything"})
    assert shown(check_schema(data, index)) == []
