"""The compiled JobSet validator (:mod:`rcpc.domain.kube.compiled`) changes nothing but the
time: over mutations of every JobSet the bundled recipes render and of the published TPU
manifests (a leaf replaced by a value of any JSON type, a field removed, an unknown field
added, at any depth), :func:`rcpc.domain.kube.schema.check_schema` gives the same diagnostics
(code, message, span, hint) with the compiled validator as with jsonschema alone, with
``strict_crd`` or not; and the generated module is what ``python -m rcpc.domain.kube.codegen``
writes today."""

from __future__ import annotations

import copy
import functools
import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import examples
from rcpc.api import Workspace
from rcpc.domain.kube import codegen as kube_codegen, compiled as kube_compiled, schema as kube_schema
from rcpc.domain.kube.schema import SchemaIndex, check_schema
from rcpc.domain.kube.manifests import load_manifests

REPO = Path(__file__).resolve().parents[1]
JOBSET = REPO / "compiler" / "rcpc" / "domain" / "schemas" / "jobset.json"
TEMPLATES = REPO.parent / "shared" / "data" / "tpu-recipes"
API, KIND = "jobset.x-k8s.io/v1alpha2", "JobSet"


@functools.cache
def jobsets() -> list:
    """The JobSets of the bundled recipes' renders (every variant) and of the published TPU
    manifests (placeholders filled), as plain data. Built on first use, not at import: every
    pytest-xdist worker imports the module to collect it, one runs its tests."""
    out = []
    for _, _, renders in Workspace(REPO).build().variants:
        for name, text in renders:
            if name.endswith(".yaml"):
                out.extend(d for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind") == KIND)
    for path in sorted(TEMPLATES.glob("*.yaml")):
        text = re.sub(r"\$\{(\w+)\}", lambda m: m.group(1).lower().replace("_", "-"), path.read_text())
        out.extend(d for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind") == KIND)
    return out


VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 2 ** 40), st.floats(allow_nan=False, allow_infinity=False, width=32),
                   st.sampled_from(["", "a", "100Mi", "100Mi\n", "Never", "OnFailure", "x" * 70, "1.5", "-1",
                                    "Parallel", "Sequential", "kubernetes.io/hostname"]),
                   st.lists(st.integers(0, 3), max_size=2), st.dictionaries(st.sampled_from(["a", "name"]),
                                                                           st.integers(0, 2), max_size=2))


def _places(value, path=()):
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _places(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _places(v, (*path, i))


def _mutate(doc, path, how: str, value):
    doc = copy.deepcopy(doc)
    *parent_path, last = path
    parent = doc
    for p in parent_path:
        parent = parent[p]
    if how == "replace":
        parent[last] = value
    elif how == "remove" and isinstance(parent, dict):
        del parent[last]
    elif how == "add" and isinstance(parent[last], dict):
        parent[last]["unknownField"] = value
    return doc


def _diagnostics(doc, tmp: Path, strict_crd: bool, compiled: bool, monkeypatch) -> list:
    path = tmp / "m.yaml"
    path.write_text(yaml.safe_dump(doc))
    data = load_manifests(path, "m.yaml")[1][0]
    with monkeypatch.context() as mp:
        mp.setenv("RCPC_NO_CACHE", "1")
        if not compiled:
            mp.setattr(SchemaIndex, "compiled", lambda self, api, kind: None)
        found = check_schema(data, SchemaIndex([JOBSET]), strict_crd)
    return [(d.code, d.message, str(d.span), d.hint) for d in found]


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("compiled")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), how=st.sampled_from(["replace", "remove", "add"]), value=VALUES,
       strict_crd=st.booleans())
@example(data=None, how="replace", value=True, strict_crd=False)     # a bool where an integer goes
@example(data=None, how="replace", value="100Mi\n", strict_crd=False)  # `$` before a final newline
def test_the_compiled_validator_changes_no_diagnostic(tmp, monkeypatch, data, how, value, strict_crd):
    if data is None:  # the examples: the first JobSet's replicas (an integer), or a quantity (a string)
        doc = jobsets()[0]
        path = ("spec", "replicatedJobs", 0, "replicas") if value is True else (
            "spec", "replicatedJobs", 0, "template", "spec", "template", "spec", "containers", 0, "resources")
        if value is not True:
            doc = _mutate(doc, path, "replace", {"limits": {"memory": "1"}})
            path = (*path, "limits", "memory")
    else:
        doc = data.draw(st.sampled_from(jobsets()))
        path = data.draw(st.sampled_from([p for p in _places(doc) if p]))
    mutated = _mutate(doc, path, how, value)
    fast = _diagnostics(mutated, tmp, strict_crd, True, monkeypatch)
    assert fast == _diagnostics(mutated, tmp, strict_crd, False, monkeypatch)


def test_every_bundled_jobset_is_valid_by_the_compiled_validator():
    """The compiled validator serves the shipped schema (its digest matches) and finds the
    bundled JobSets valid, as jsonschema does: the fast path is the one taken."""
    index = SchemaIndex([JOBSET])
    check = index.compiled(API, KIND)
    assert check is not None and len(jobsets()) > 13
    strict = jsonschema.Draft7Validator(index.structural(API, KIND))
    for doc in jobsets():
        plain = copy.deepcopy(doc)
        for _, _, step in kube_schema._STAGES:
            step(plain, index.schema(API, KIND), KIND)
        assert kube_compiled.valid(check, plain) and not list(strict.iter_errors(plain))


def test_a_lenient_validator_would_be_caught(tmp, monkeypatch):
    """The canary: a compiled validator that accepts everything changes the diagnostics of
    an invalid JobSet (so the property above can fail)."""
    doc = _mutate(jobsets()[0], ("spec", "replicatedJobs", 0, "replicas"), "replace", "two")
    honest = _diagnostics(doc, tmp, False, False, monkeypatch)
    monkeypatch.setattr(SchemaIndex, "compiled", lambda self, api, kind: lambda plain: None)
    assert honest and _diagnostics(doc, tmp, False, True, monkeypatch) == []


def test_another_schema_is_not_served_by_the_compiled_validator():
    """A schema of the same apiVersion and kind that is not the one the module was made from
    (a field added) gets no compiled validator: jsonschema validates it."""
    structural = copy.deepcopy(SchemaIndex([JOBSET]).structural(API, KIND))
    assert kube_compiled.validator(API, KIND, structural) is not None
    structural["properties"]["spec"]["properties"]["extra"] = {"type": "string"}
    assert kube_compiled.validator(API, KIND, structural) is None
    assert kube_compiled.validator("v1", "ConfigMap", structural) is None


def test_the_shipped_file_is_served_without_hashing_its_structural_form(monkeypatch):
    """An index of the shipped schema file (its identity is the module's SOURCE_SHA256) gets
    the compiled validator without the structural form's digest (~1 ms of a first build)."""
    monkeypatch.setattr(kube_compiled, "digest", lambda structural: pytest.fail("the structural form was hashed"))
    assert SchemaIndex([JOBSET]).compiled(API, KIND) is not None


def test_the_same_schema_in_other_bytes_is_served_by_its_digest(tmp_path):
    """The shipped schema written out again (other bytes, the same schema) is served after its
    structural form's digest matched; a schema with a field added in such a file is not."""
    import json

    doc = json.loads(JOBSET.read_text())
    same = tmp_path / "same.json"
    same.write_text(json.dumps(doc, indent=1))
    assert SchemaIndex([same]).content != SchemaIndex([JOBSET]).content
    assert SchemaIndex([same]).compiled(API, KIND) is not None
    other = tmp_path / "other.json"
    doc["properties"]["spec"]["properties"]["extra"] = {"type": "string"}
    other.write_text(json.dumps(doc))
    assert SchemaIndex([other]).compiled(API, KIND) is None


def test_the_generated_module_is_current():
    """``python -m rcpc.domain.kube.codegen --check``: the module is what the generator writes
    from today's schema and ``structural`` (rcpc[test] pins the fastjsonschema it names)."""
    assert kube_codegen.main(["--check"]) == 0


@pytest.mark.parametrize("value", [True, 3, "x", ["a"], None])
@pytest.mark.parametrize("path", [("spec", "replicatedJobs"), ("spec", "replicatedJobs", 0, "template"),
                                  ("spec", "replicatedJobs", 0, "template", "spec", "template"),
                                  ("spec", "failurePolicy"), ("spec", "failurePolicy", "rules"),
                                  ("spec", "volumeClaimPolicies")])
def test_the_webhook_defaults_take_a_field_of_any_type(path, value):
    """Found by the property above: the JobSet webhook's defaults (rcpc.domain.kube.jobset.default)
    raised on a ``template`` that is not a mapping (a traceback from ``rcpc validate``); a
    field of another type than the schema's is left for validation to report."""
    from rcpc.domain.kube import jobset

    doc = copy.deepcopy(jobsets()[0])
    doc["spec"].setdefault("failurePolicy", {"rules": [{}]})
    doc["spec"].setdefault("volumeClaimPolicies", [{}])
    mutated = _mutate(doc, path, "replace", value)
    jobset.default(mutated)
    assert mutated["spec"]["successPolicy"] == {"operator": "All"}


# slim (rcpc.domain.kube.codegen.slim): fastjsonschema's code made smaller keeps every verdict ------
SCHEMAS = [
    {"type": "object", "required": ["a"], "additionalProperties": False,
     "properties": {"a": {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^[0-9]+(Mi|Gi)$"}]},
                    "b": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}},
                                                     "required": ["name"]}, "maxItems": 2},
                    "c": {"type": ["boolean", "null"]}, "d": {"enum": ["x", "y"]},
                    "e": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}}},
    {"type": "array", "items": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"k": {"type": "number"}},
                                                           "additionalProperties": False}]}, "minItems": 1},
]
JSON = st.recursive(st.none() | st.booleans() | st.integers(-2, 3) | st.floats(-1, 1) |
                    st.sampled_from(["", "x", "y", "7Mi", "7Mi\n", "1"]),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["a", "b", "c", "d", "e", "k", "name", "z"]), inner, max_size=4), max_leaves=8)


def _verdicts(code: str):
    space: dict = {}
    exec(compile(code, "<generated>", "exec"), space)

    def verdict(value):
        try:
            space["validate"](copy.deepcopy(value))
        except kube_compiled.JsonSchemaValueException:
            return False
        return True
    return verdict


@functools.cache
def _pairs():
    import fastjsonschema

    out = []
    for schema in SCHEMAS:
        code = fastjsonschema.compile_to_code(schema, **kube_compiled.OPTIONS).replace(
            kube_codegen._LIBRARY_IMPORT, kube_codegen._OWN_IMPORT)
        out.append((_verdicts(code), _verdicts(kube_codegen.slim(code))))
    return out


@settings(max_examples=200, deadline=None)
@given(value=JSON, which=st.integers(0, len(SCHEMAS) - 1))
@example(value={"a": "7Mi\n"}, which=0)   # a pattern's `$`
@example(value={"a": 1, "b": [{"name": "n"}, {}]}, which=0)
def test_slim_keeps_every_verdict(value, which):
    """Over JSON values, fastjsonschema's code for a schema (anyOf, patterns, required,
    additionalProperties, nested lists) and that code slimmed agree on valid or not."""
    full, slimmed = _pairs()[which]
    assert slimmed(value) == full(value)


def test_slim_drops_the_messages_and_long_names_of_the_shipped_module():
    """The shipped validator raises no message and names no local after its schema path
    (its byte code was 1.9 MB, ~4 ms to import, with them)."""
    text = (REPO / "compiler" / "rcpc" / "domain" / "kube" / "compiled_jobset.py").read_text()
    assert "raise JsonSchemaValueException(" not in text and "locals()" not in text
    assert "data__spec" not in text and text.count("raise JsonSchemaValueException\n") > 500


def test_slim_keeps_a_message_that_might_fail():
    """A message whose making could raise (a field that is not a local, a conversion) is kept,
    and so are the names of a function that still reads ``locals()``."""
    code = ("def validate(data, name_prefix=None):\n"
            "    data_len = len(data)\n"
            "    if data_len > 1:\n"
            "        raise JsonSchemaValueException(\"{other}\".format(**locals()))\n"
            "    if data_len > 2:\n"
            "        raise JsonSchemaValueException(\"{data_len!r}\".format(**locals()))\n"
            "    if data_len > 3:\n"
            "        raise JsonSchemaValueException(\"\" + (name_prefix or \"data\") + \" {data_len}\".format(**locals()))\n")
    slimmed = kube_codegen.slim(code)
    assert slimmed.count("format(**locals())") == 2 and "data_len" in slimmed
    assert "raise JsonSchemaValueException\n" in slimmed


# shared (rcpc.domain.kube.codegen.shared): repeated subschemas made one definition, $ref'd -------
PIECES = st.sampled_from([{}, {"type": "string"}, {"type": "integer", "minimum": 0}, {"enum": ["x", 1]},
                          {"type": "string", "pattern": "^[0-9]+$"}, {"type": ["boolean", "null"]}])
SUBSCHEMAS = st.recursive(PIECES, lambda inner: st.one_of(
    st.builds(lambda properties, extra, required: {"type": "object", "properties": properties,
                                                   "additionalProperties": extra,
                                                   **({"required": sorted(required & properties.keys())}
                                                      if required & properties.keys() else {})},
              st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3), st.booleans() | inner,
              st.sets(st.sampled_from(["a", "b"]))),
    st.builds(lambda items: {"type": "array", "items": items, "maxItems": 2}, inner),
    st.builds(lambda items, more: {"items": items, "additionalItems": more}, st.lists(inner, min_size=1, max_size=2),
              st.booleans() | inner),
    st.builds(lambda of: {"anyOf": of}, st.lists(inner, min_size=1, max_size=2)),
    st.builds(lambda then: {"not": then}, inner)), max_leaves=5)


def _nearly(schema: dict):
    """``schema`` with one keyword of one of its subschemas (or itself) removed: a subschema
    that a wrong sharing, one taking near for equal, would merge with ``schema``'s."""
    places = [((schema, None), schema)] + list(kube_codegen._subschemas(schema))
    cuts = [(i, keyword) for i, (_, sub) in enumerate(places) for keyword in sub
            if keyword != "properties" or "required" not in sub]  # a required field must stay allowed

    def cut(which):
        copied = copy.deepcopy(schema)
        sub = ([copied] + [s for _, s in kube_codegen._subschemas(copied)])[which[0]]
        del sub[which[1]]
        return copied
    return st.sampled_from(cuts).map(cut) if cuts else st.just(schema)


def _fitting(schema: dict):
    """Values that tend to satisfy ``schema`` (one of SUBSCHEMAS), so that the verdicts
    compared are not all "invalid"."""
    if "anyOf" in schema:
        return st.one_of([_fitting(sub) for sub in schema["anyOf"]])
    if "properties" in schema:
        fields = {name: _fitting(sub) for name, sub in schema["properties"].items()}
        return st.fixed_dictionaries({}, optional={**fields, "z": JSON})
    if isinstance(schema.get("items"), list):
        fixed = st.tuples(*map(_fitting, schema["items"])).map(list)
        return fixed | st.tuples(fixed, JSON).map(lambda pair: [*pair[0], pair[1]])
    if isinstance(schema.get("items"), dict):
        return st.lists(_fitting(schema["items"]), max_size=3)
    return st.sampled_from(["1", "12", "x", "1\n", 0, 1, -1, True, None, {}, []])


@st.composite
def _sharing(draw):
    """(schema, value): a subschema at "a" and in "c"'s items (at least twice), beside one at
    "b" that is nearly it (or any other); a value that tends to fit either, or any value."""
    s = draw(SUBSCHEMAS)
    t = draw(_nearly(s) | SUBSCHEMAS)
    schema = {"type": "object", "properties": {"a": s, "b": t, "c": {"type": "array", "items": s}}}
    either = _fitting(s) | _fitting(t)
    fitting = st.fixed_dictionaries({}, optional={"a": either, "b": either, "c": st.lists(either, max_size=3)})
    value = draw(st.one_of(fitting, fitting, JSON))
    return schema, value


def _generated(schema: dict, slimmed: bool = False):
    import fastjsonschema

    code = fastjsonschema.compile_to_code(schema, **kube_compiled.OPTIONS).replace(
        kube_codegen._LIBRARY_IMPORT, kube_codegen._OWN_IMPORT)
    return _verdicts(kube_codegen.slim(code) if slimmed else code)


def _same_verdicts(schema: dict, hoisted: dict, value) -> bool:
    """Whether ``hoisted`` judges ``value`` as ``schema`` does: under jsonschema (Draft 7), and
    in fastjsonschema's code (``hoisted``'s slimmed, as the shipped module is)."""
    return (jsonschema.Draft7Validator(hoisted).is_valid(value) == jsonschema.Draft7Validator(schema).is_valid(value)
            and _generated(hoisted, slimmed=True)(value) == _generated(schema)(value))


@settings(max_examples=examples(200, ci=100), deadline=None)
@given(case=_sharing())
@example(case=({"properties": {"a": {"type": "object", "properties": {"b": {"type": "integer", "minimum": 0}},
                                     "additionalProperties": False},
                               "c": {"items": {"type": "integer", "minimum": 0}}}},
               {"a": {"b": -1}, "c": [0, 1]}))
def test_shared_subschemas_keep_every_verdict(case):
    """Over schemas (objects with additionalProperties, arrays, tuples, anyOf, not, patterns,
    nested; a subschema at two places at least) and JSON values, the schema with its repeated
    subschemas shared (every size) gives each value the verdict the schema gives it, under
    jsonschema and in the code fastjsonschema generates (slimmed: a shared subschema's call
    loses the name it passes for messages)."""
    schema, value = case
    hoisted = kube_codegen.shared(schema, min_size=0)
    assert hoisted["definitions"] and "$ref" in json.dumps(hoisted["properties"])
    assert _same_verdicts(schema, hoisted, value)


def test_a_wrong_sharing_would_be_caught(monkeypatch):
    """The canary: subschemas shared as one though they differ (here in their
    ``additionalProperties``) change a verdict the property above compares."""
    schema = {"properties": {"a": {"type": "object", "additionalProperties": False},
                             "b": {"type": "object", "additionalProperties": True},
                             "c": {"items": {"type": "object", "additionalProperties": False}}}}
    value = {"a": {"x": 1}}
    assert _same_verdicts(schema, kube_codegen.shared(schema, min_size=0), value)
    canonical = kube_codegen._canonical
    monkeypatch.setattr(kube_codegen, "_canonical",
                        lambda sub: canonical({k: v for k, v in sub.items() if k != "additionalProperties"}))
    wrong = kube_codegen.shared(schema, min_size=0)
    assert not _same_verdicts(schema, wrong, value)


def test_the_shipped_module_calls_its_shared_subschemas():
    """The JobSet schema's repeated subschemas (a probe 9 times, a container twice) are
    functions of the shipped module, called where they occur (its source was 1.3 MB inlined)."""
    text = (REPO / "compiler" / "rcpc" / "domain" / "kube" / "compiled_jobset.py").read_text()
    assert text.count("\ndef validate___definitions_s") > 20 and len(text) < 500_000


def test_the_shipped_module_compiles_its_patterns_on_first_use():
    """Its patterns (fastjsonschema's ``re.compile`` at import: ~0.5 ms of a first build, two of
    three for a status no render holds) are LazyPatterns of the same sources, each made from
    the engine code rcpc.core.pattern_codes ships (tests/test_patterns.py: re.compile's own)."""
    from rcpc.core import pattern_codes
    from rcpc.core.patterns import LazyPattern
    from rcpc.domain.kube import compiled_jobset

    lazy = list(compiled_jobset.REGEX_PATTERNS.values())
    assert len(lazy) == 3 and all(isinstance(p, LazyPattern) and p._source in pattern_codes.PATTERNS for p in lazy)
    assert all(p._source == (k.removesuffix("$") + "\\Z", 0) for k, p in compiled_jobset.REGEX_PATTERNS.items())
