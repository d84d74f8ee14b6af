"""The schema-validation cache (:mod:`rcpc.domain.kube.schemacache`) never lies: a manifest's
violations come from the cache only when the entry was written for exactly this manifest,
these schema files, this rcpc and this jsonschema; a damaged, truncated, swapped or stale
entry is a miss (validated again, entry rewritten), and writers racing on one entry leave a
whole entry or none."""

from __future__ import annotations

import json
import multiprocessing
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import storefiles
from storefiles import cache  # noqa: F401 (a fixture)
from rcpc.core import store
from rcpc.core.diagnostics import CompileError
from rcpc.core.session import Session
from rcpc.domain.kube import schema as kube_schema, schemacache
from rcpc.domain.kube.schema import SchemaIndex, check_schema
from rcpc.domain.kube.manifests import load_manifests
from tests.conftest import kube_checks

REPO = Path(__file__).resolve().parents[1]
SCHEMA = {"type": "object", "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "ConfigMap"}],
          "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                         "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
                         "immutable": {"type": "boolean"},
                         "data": {"type": "object", "additionalProperties": {"type": "string"}}}}
GOOD = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n"
BAD = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, nmae: x}\nimmutable: 'yes'\ndata: {a: 1}\n"


@pytest.fixture
def index(tmp_path):
    path = tmp_path / "cm.json"
    path.write_text(json.dumps(SCHEMA))
    return SchemaIndex([path])


def manifest(tmp_path, text: str):
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return load_manifests(path, "m.yaml")[1][0]


def shown(diags) -> list:
    return [(d.code, d.message, str(d.span), d.hint) for d in diags]


def uncached(data, index, strict_crd=False) -> list:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RCPC_NO_CACHE", "1")
        return shown(check_schema(data, index, strict_crd))


def validations(monkeypatch, strict_crd=False) -> list:
    """A list that gets one item per validation by jsonschema (with ``strict_crd``, one
    validation checks the manifest before each of the API server's stages and after them)."""
    calls, runs = [], []
    real = kube_schema._errors
    per_validation = len(kube_schema._STAGES) + 1 if strict_crd else 1

    def counting(validator, plain):
        runs.append(1)
        if len(runs) % per_validation == 0:
            calls.append(1)
        return real(validator, plain)

    monkeypatch.setattr(kube_schema, "_errors", counting)
    return calls


@pytest.mark.parametrize("strict_crd", [False, True])
@pytest.mark.parametrize("text", [GOOD, BAD], ids=["valid", "violations"])
def test_a_hit_reports_what_validating_reports(cache, index, tmp_path, monkeypatch, text, strict_crd):
    data = manifest(tmp_path, text)
    expected = uncached(data, index, strict_crd)
    calls = validations(monkeypatch, strict_crd)
    assert shown(check_schema(data, index, strict_crd)) == expected   # miss: validated, stored
    assert shown(check_schema(manifest(tmp_path, text), index, strict_crd)) == expected  # hit
    assert len(calls) == 1
    if text is BAD:
        assert {d[0] for d in expected} == {"E1101"} and len(expected) == 3


def test_a_hit_does_not_import_jsonschema(tmp_path):
    """The edit loop's unchanged manifests cost neither jsonschema's import nor a validation."""
    import subprocess

    path = tmp_path / "cm.json"
    path.write_text(json.dumps(SCHEMA))
    (tmp_path / "m.yaml").write_text(BAD)
    code = ("import sys; from pathlib import Path; from rcpc.domain.kube.schema import SchemaIndex, check_schema;"
            "from rcpc.domain.kube.manifests import load_manifests;"
            f"d = load_manifests(Path({str(tmp_path / 'm.yaml')!r}), 'm.yaml')[1][0];"
            f"print(len(check_schema(d, SchemaIndex([Path({str(path)!r})])))); print('jsonschema' in sys.modules)")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert runs == ["3\nTrue\n", "3\nFalse\n"]


@pytest.mark.parametrize("change", ["value", "type", "schema", "strict", "code"])
def test_a_stale_key_is_a_miss(cache, index, tmp_path, monkeypatch, change):
    """Whatever the result depends on is in the key: the manifest (its values and their
    types: 1 and "1" differ), the schema files, strict_crd, rcpc's code and jsonschema."""
    data = manifest(tmp_path, GOOD)
    check_schema(data, index)
    strict = False
    if change == "value":
        data = manifest(tmp_path, GOOD.replace("a: b", "a: b, c: d"))  # (a: c is valid by shape: test_schemashape)
    elif change == "type":
        data = manifest(tmp_path, GOOD.replace("a: b", "a: 1"))
    elif change == "schema":
        path = tmp_path / "cm.json"
        path.write_text(json.dumps({**SCHEMA, "required": ["immutable"]}))
        index = SchemaIndex([path])
    elif change == "strict":
        strict = True
    else:
        monkeypatch.setattr(schemacache, "_KEY_BASE", ["another rcpc"])
    expected = uncached(data, index, strict)
    calls = validations(monkeypatch, strict)
    assert shown(check_schema(data, index, strict)) == expected
    assert len(calls) == 1


def test_keys_keep_types_apart(cache):
    keys = {schemacache.key("s", "v1", "ConfigMap", False, v)
            for v in ({"a": 1}, {"a": 1.0}, {"a": True}, {"a": "1"}, {1: 1}, {"a": [1]}, {"a": None})}
    assert len(keys) == 7


def entry(cache, data, index) -> str:
    """The key of the entry kept under the exact manifest ``data`` (a valid one has a second,
    under its shape), written to the store's database."""
    from rcpc.core.values import to_python

    k = schemacache.key(index.identity, "v1", "ConfigMap", False, to_python(data))
    storefiles.read(cache, k)
    return k


def test_an_unchanged_valid_manifest_is_served_by_its_exact_entry(cache, index, tmp_path, monkeypatch):
    """No stage and no shape for a manifest validated before: after an edit most of a
    recipe's manifests are unchanged."""
    shapes = []  # the stages ran (the webhook's is the last, before the shape is taken)
    real = kube_schema._webhook
    monkeypatch.setattr(kube_schema, "_webhook", lambda *a: shapes.append(1) or real(*a))
    data = manifest(tmp_path, GOOD)
    assert shown(check_schema(data, index)) == [] and len(shapes) == 1
    assert shown(check_schema(data, index)) == [] and len(shapes) == 1
    storefiles.delete(cache, entry(cache, data, index))  # then the shape entry answers, after the stages
    assert shown(check_schema(data, index)) == [] and len(shapes) == 2


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(at=st.integers(0, 10 ** 6), bits=st.integers(1, 255), cut=st.booleans())
@example(at=10 ** 6, bits=1, cut=False)  # the last byte of the payload
def test_a_damaged_entry_is_a_miss(cache, index, tmp_path, at, bits, cut):
    data = manifest(tmp_path, BAD)
    expected = uncached(data, index)
    for k, _, _ in storefiles.rows(cache) if storefiles.database(cache).exists() else ():
        storefiles.delete(cache, k)
    check_schema(data, index)
    k = entry(cache, data, index)
    raw = bytearray(storefiles.read(cache, k))
    if cut:
        raw = raw[:at % len(raw)]
    else:
        raw[at % len(raw)] ^= bits
    storefiles.rewrite(cache, k, bytes(raw))
    assert schemacache.lookup(k) is None
    assert shown(check_schema(data, index)) == expected   # validated again, entry rewritten
    assert schemacache.lookup(k) is not None


@pytest.mark.parametrize("payload", [
    {"before": [], "final": [[["data", "a"], "type", "forged", None]], "extra": 1},
    {"before": [], "final": [[["data", 1.5], "type", "m", None]]},
    {"before": [], "final": [["data", "type", "m", None]]},
    {"before": [], "final": [[[], "additionalProperties", "m", [1]]]},
    [],
], ids=["extra-key", "float-in-path", "path-not-list", "allowed-not-str", "not-a-dict"])
def test_a_well_formed_entry_of_the_wrong_shape_is_a_miss(cache, index, tmp_path, payload):
    """Even with the entry's key and digest made to match, the records' shape is checked."""
    data = manifest(tmp_path, GOOD)
    check_schema(data, index)
    k = entry(cache, data, index)
    storefiles.rewrite(cache, k, store.entry(schemacache.AREA, k, json.dumps(payload).encode()))
    assert shown(check_schema(data, index)) == uncached(data, index)


def test_another_manifests_entry_is_a_miss(cache, index, tmp_path):
    good, bad = manifest(tmp_path, GOOD), manifest(tmp_path, BAD)
    check_schema(good, index)
    check_schema(bad, index)
    first, second = entry(cache, good, index), entry(cache, bad, index)
    a, b = storefiles.read(cache, first), storefiles.read(cache, second)
    storefiles.rewrite(cache, first, b)
    storefiles.rewrite(cache, second, a)
    assert shown(check_schema(good, index)) == uncached(good, index) == []
    assert shown(check_schema(bad, index)) == uncached(bad, index)


def _write_many(cache_home: str, n: int) -> None:
    import os

    os.environ["XDG_CACHE_HOME"] = cache_home
    for i in range(n):
        schemacache.store("ab" + "0" * 62, {"before": [], "final": [[["data", "a"], "type", "x" * (i % 7 + 1) * 999,
                                                                     None]]})
        store.flush()  # a transaction each, racing the other writer's


def test_concurrent_writers_leave_a_whole_entry(cache, tmp_path):
    """Two processes rewriting one entry, each in a transaction a write, while this one reads
    it, each read a run of its own (a run that found no database does not look again until it
    ends: store.flush): every read is a whole entry (one of those written) or a miss, never a
    part; once the writers are done, a new run finds the entry."""
    ctx = multiprocessing.get_context("fork")
    writers = [ctx.Process(target=_write_many, args=(str(tmp_path / "cache"), 300)) for _ in range(2)]
    for w in writers:
        w.start()
    while any(w.is_alive() for w in writers):
        found = schemacache.lookup("ab" + "0" * 62)
        store.flush()
        if found is not None:
            message = found["final"][0][2]
            assert set(message) == {"x"} and len(message) % 999 == 0
    for w in writers:
        w.join()
        assert w.exitcode == 0
    assert schemacache.lookup("ab" + "0" * 62) is not None


def test_no_cache_turns_it_off(cache, index, tmp_path, monkeypatch):
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    check_schema(manifest(tmp_path, BAD), index)
    store.flush()
    assert not (cache / "rcpc").exists()


# A whole render found with no findings: the next run skips its checks --------------------------
JOBSET_RECIPE = '''
jobset(name = "js", spec = {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {"template": {
    "spec": {"containers": [{"name": "main", "image": "img", "env": [%s]}], "restartPolicy": "Never"}}}}}]})
'''


def test_a_clean_render_is_not_checked_again_in_the_next_run(kube_ws, monkeypatch):
    calls = kube_checks(monkeypatch)
    first = kube_ws.build(JOBSET_RECIPE % "")
    assert len(calls) == 1
    assert kube_ws.build() == first and len(calls) == 1  # another run (a new Compiler): from the cache
    kube_ws.build(JOBSET_RECIPE % '{"name": "A", "value": "1"}')  # another render: checked
    assert len(calls) == 2


def test_without_kube_schemas_nothing_is_cached_and_every_run_reports_the_same(kube_ws, monkeypatch):
    """With no schema file configured (the built-in rules alone) the checks cost less than the
    validation cache's keys and entries: none is made, each run checks its manifests, and
    reports what a run with the cache off reports (issue 41: the cache cost a first build)."""
    (kube_ws.root / "rcp.toml").write_text('recipe_dirs = ["recipes"]\n')
    calls = kube_checks(monkeypatch)
    for run in (1, 2):
        assert kube_ws.build(POD_RECIPE) and len(calls) == 2 * run - 1
        assert [d.code for d in kube_ws.last_compiler.diagnostics()] == ["W1001"]
        assert kube_ws.build(JOBSET_RECIPE % "") and len(calls) == 2 * run
    store.flush()
    cache = kube_ws.root.parent / "cache"
    assert not storefiles.database(cache).exists() or storefiles.rows(cache, "schema") == []
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    assert kube_ws.build(POD_RECIPE) and [d.code for d in kube_ws.last_compiler.diagnostics()] == ["W1001"]


POD_RECIPE = '''
manifest(name = "p", apiVersion = "v1", kind = "Pod", metadata = {"name": "p"}, spec = {
    "containers": [{"name": "main", "image": "img", "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}]})
'''


def test_a_render_with_a_warning_is_checked_in_every_run(kube_ws, monkeypatch):
    """A Pod's repeated env name is a warning (pkg/api/pod/warnings.go): shown in every run."""
    calls = kube_checks(monkeypatch)
    for run in (1, 2):
        kube_ws.build(POD_RECIPE)
        assert len(calls) == run
        assert [d.code for d in kube_ws.last_compiler.diagnostics()] == ["W1001"]


def test_other_schema_bytes_or_strict_crd_are_other_entries(kube_ws, monkeypatch):
    """The entry names the schema files' bytes and strict_crd: either changed, the checks run."""
    from rcpc.domain.workspace import Workspace

    calls = kube_checks(monkeypatch)
    kube_ws.build(JOBSET_RECIPE % "")
    builtin = Workspace.find(kube_ws.root).kube_schemas[0]
    (kube_ws.root / "jobset.json").write_bytes(builtin.read_bytes() + b"\n")
    (kube_ws.root / "rcp.toml").write_text('recipe_dirs = ["recipes"]\nkube_schemas = ["jobset.json"]\n')
    kube_ws.build()
    assert len(calls) == 2
    from rcpc.core import record

    real = Workspace.find
    monkeypatch.setattr(Workspace, "find", staticmethod(lambda *a, **k: record.evolve(real(*a, **k), strict_crd=True)))
    kube_ws.build()
    assert len(calls) == 3
    kube_ws.build()
    assert len(calls) == 3


def test_a_render_found_invalid_is_reported_in_every_run(kube_ws, monkeypatch):
    bad = JOBSET_RECIPE.replace('"replicas": 1', '"replicas": "one"') % ""
    for _ in range(2):
        with pytest.raises(CompileError) as exc:
            kube_ws.build(bad)
        assert {d.code for d in exc.value.diagnostics} and all(d.code.startswith("E") for d in exc.value.diagnostics)


@pytest.mark.parametrize("seen_before", [False, True], ids=["bytes new to the session", "bytes seen before"])
def test_what_a_schema_index_makes_is_shared_by_the_same_bytes_only(tmp_path, seen_before):
    """Structural schemas and validators are made once a session for the same schema bytes,
    wherever the file is and however it is shown; other bytes get their own, and so does
    another session. Whether the bytes were seen before (by an earlier index of the session)
    does not matter: two indexes made before either is used share too (an index that has made
    nothing yet was once given a fresh table by the next one)."""
    session = Session()
    text = json.dumps(SCHEMA) + " " * (1 + len(str(tmp_path)))  # bytes of this test's own, same schema
    if seen_before:
        SchemaIndex([_written(tmp_path / "earlier.json", text)], session=session).structural("v1", "ConfigMap")
    a, b, c = tmp_path / "a.json", tmp_path / "sub-b.json", tmp_path / "c.json"
    a.write_text(text)
    b.write_text(text)
    stricter = json.loads(json.dumps(SCHEMA))
    stricter["required"] = ["immutable"]
    c.write_text(json.dumps(stricter))
    ia, ib = SchemaIndex([a], session=session), SchemaIndex([b], lambda p: "shown/" + p.name, session=session)
    ic = SchemaIndex([c], session=session)
    assert ia.structural("v1", "ConfigMap") is ib.structural("v1", "ConfigMap")
    assert ia.validator("v1", "ConfigMap") is ib.validator("v1", "ConfigMap")
    assert ic.structural("v1", "ConfigMap") is not ia.structural("v1", "ConfigMap")
    other = SchemaIndex([a], session=Session())
    assert other.structural("v1", "ConfigMap") is not ia.structural("v1", "ConfigMap")
    assert other.structural("v1", "ConfigMap") == ia.structural("v1", "ConfigMap")
    data = manifest(tmp_path, GOOD)
    assert uncached(data, ia) == uncached(data, ib) == []
    assert [m for _, m, _, _ in uncached(data, ic)] == ["ConfigMap (the manifest): missing required field 'immutable'"]


def _written(path, text):
    path.write_text(text)
    return path


def test_the_same_bytes_read_as_json_and_as_yaml_are_other_schemas(tmp_path):
    """1e3 is the number 1000.0 in JSON and the string '1e3' in YAML 1.1: a .json and a
    .yaml file of the same bytes do not share what is made of them."""
    text = json.dumps(SCHEMA).replace('"immutable": {"type": "boolean"}', '"immutable": {"type": "boolean"}, '
                                      '"size": {"type": "number", "maximum": 1e3}')
    (tmp_path / "s.json").write_text(text)
    (tmp_path / "s.yaml").write_text(text)
    session = Session()
    as_json, as_yaml = SchemaIndex([tmp_path / "s.json"], session=session), SchemaIndex([tmp_path / "s.yaml"],
                                                                                         session=session)
    assert as_json.structural("v1", "ConfigMap") is not as_yaml.structural("v1", "ConfigMap")
    assert as_json.structural("v1", "ConfigMap")["properties"]["size"]["maximum"] == 1000.0
    assert as_yaml.structural("v1", "ConfigMap")["properties"]["size"]["maximum"] == "1e3"


@settings(max_examples=5, deadline=None)
@given(st.integers(9, 30))
def test_what_is_made_of_schemas_is_kept_for_a_bounded_number_of_contents(tmp_path_factory, edits):
    """A long-lived process (the language server) sees a schema file edited many times:
    what is made is kept for the last MADE_KEPT contents only, and an index in use keeps
    its own."""
    path = tmp_path_factory.mktemp("edits") / "s.json"
    first = None
    session = Session()
    for i in range(edits):
        path.write_text(json.dumps(SCHEMA) + " " * i)
        index = SchemaIndex([path], session=session)
        index.validator("v1", "ConfigMap")
        first = first or index
    assert len(session.table(kube_schema.MADE)) == kube_schema.MADE_KEPT
    assert len(session.table(kube_schema.READ)) == kube_schema.MADE_KEPT
    assert first.structural("v1", "ConfigMap") is first.structural("v1", "ConfigMap")


@pytest.mark.parametrize("field, value", [("{type: number, maximum: '1e3'}", "5000"),   # YAML 1.1: a string
                                          ("{type: string, maxLength: ten}", "bbbb"),
                                          ("{type: string, pattern: '[a-'}", "bbbb"),
                                          ("{type: integer, multipleOf: two}", "4")])
def test_a_schema_jsonschema_cannot_apply_is_a_diagnostic_at_its_file(tmp_path, field, value):
    """A keyword whose value Draft 7 does not allow made jsonschema raise while validating
    (on main too: a traceback): E1102 at the schema file, saying where in the schema."""
    (tmp_path / "s.yaml").write_text(
        "x-kubernetes-group-version-kind: [{group: ex.io, version: v1, kind: T}]\n"
        f"type: object\nproperties:\n  count: {field}\n")  # not `n`: kubectl reads that key as "false"
    index = SchemaIndex([tmp_path / "s.yaml"], lambda p: p.name)
    data = manifest(tmp_path, f"apiVersion: ex.io/v1\nkind: T\nmetadata: {{name: m}}\ncount: {value}\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RCPC_NO_CACHE", "1")
        with pytest.raises(CompileError) as got:
            check_schema(data, index)
    (d,) = got.value.diagnostics
    assert d.code == "E1102" and str(d.span) == "s.yaml" and d.span.line == 0, d
    assert "s.yaml is not a valid JSON schema for ex.io/v1 T" in d.message and "(at properties/count/" in d.message


FIELDS = st.lists(st.one_of(st.text(alphabet="ab\0 1T", max_size=4), st.booleans(), st.none(),
                            st.sampled_from(["True", "None", "1", "\0"])), max_size=4)


@given(a=FIELDS, b=FIELDS)
@example(a=["a\0b", "c"], b=["a", "\0b", "c"])
@example(a=["True"], b=[True])
@example(a=["render", "x\ny"], b=["render", "x\\ny"])
def test_a_key_tells_every_two_field_lists_apart(a, b):
    """Keys are digests of their fields: two lists of fields give one key exactly when they
    are equal, type included (a NUL, a newline, the text "True" and True kept apart)."""
    same = len(a) == len(b) and all(type(x) is type(y) and x == y for x, y in zip(a, b))
    assert (schemacache._digest(*a) == schemacache._digest(*b)) == same


def test_a_schema_file_is_read_once_for_its_bytes_and_validation_leaves_it_as_read(tmp_path):
    """Indexes of the same bytes share the documents as read, other bytes are read anew, and validating every
    published TPU JobSet (pruning, defaulting: the webhooks' and the schema's defaults)
    leaves the documents equal to a fresh read of the bytes."""
    crd = (REPO.parent / "shared" / "data" / "jobset" / "jobset.x-k8s.io_jobsets.yaml").read_bytes()
    a, b, c = tmp_path / "a.yaml", tmp_path / "sub" / "b.yaml", tmp_path / "c.yaml"
    b.parent.mkdir()
    a.write_bytes(crd)
    b.write_bytes(crd)
    c.write_bytes(crd + b"\n# edited\n")
    session = Session()
    ia, ib = SchemaIndex([a], session=session), SchemaIndex([b], lambda p: "shown/" + p.name, session=session)
    ic = SchemaIndex([c], session=session)
    key = ("jobset.x-k8s.io/v1alpha2", "JobSet")
    assert ia.schema(*key) is ib.schema(*key)
    assert ic.schema(*key) is not ia.schema(*key) and ic.schema(*key) == ia.schema(*key)
    published = sorted((REPO.parent / "shared" / "data" / "tpu-recipes").glob("*.yaml"))
    assert len(published) == 13
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RCPC_NO_CACHE", "1")
        for path in published:
            for data in load_manifests(path, path.name)[1]:
                check_schema(data, ia, strict_crd=True)
    import yaml

    assert session.table(kube_schema.READ)[("yaml", crd)] == list(yaml.safe_load_all(crd))


def test_where_a_schema_marks_list_types_is_not_looked_for_again(tmp_path, monkeypatch):
    """Where a schema marks list types is found once for its bytes: an index of the same
    bytes made later in the session (the language server's next request) checks lists
    without looking through the schema again, with the findings a fresh look gives (another
    session's)."""
    crd = (REPO.parent / "shared" / "data" / "jobset" / "jobset.x-k8s.io_jobsets.yaml").read_bytes()
    (tmp_path / "j.yaml").write_bytes(crd)
    session = Session()
    published = REPO.parent / "shared" / "data" / "tpu-recipes" / "llama3.1-70b_8k-bf16-tpu7x-4x4x4.yaml"
    (data,) = load_manifests(published, published.name)[1]
    kind = ("jobset.x-k8s.io/v1alpha2", "JobSet")
    first = kube_schema.check_lists(data, SchemaIndex([tmp_path / "j.yaml"], session=session).schema(*kind),
                                    "JobSet", session)
    looked = []
    original = kube_schema._look_for_lists
    monkeypatch.setattr(kube_schema, "_look_for_lists", lambda s, marks: looked.append(s) or original(s, marks))
    schema = SchemaIndex([tmp_path / "j.yaml"], session=session).schema(*kind)
    found = kube_schema.check_lists(data, schema, "JobSet", session)
    assert looked == [] and found == first
    assert kube_schema.check_lists(data, schema, "JobSet", Session()) == found and looked


SCHEMA_FILES = st.lists(st.tuples(st.sampled_from(["a.json", "b.json", "a.json\0"]), st.binary(max_size=6)), max_size=3)


@given(a=SCHEMA_FILES, b=SCHEMA_FILES, known=st.booleans())
@example(a=[("a.json", b"x")], b=[("a.json", b"x")], known=True)
@example(a=[("a.json", b"")], b=[("a.json\0", b"")], known=False)
def test_schema_files_have_one_identity_whoever_hashed_their_bytes(a, b, known):
    """The identity of schema files (display paths and bytes, in order) is the same whether the
    reader gives the bytes' digest or it is made there, and two lists of files share it exactly
    when they are equal."""
    import hashlib

    def identity(files, given):
        return schemacache.schema_identity([(f, raw, hashlib.blake2b(raw, digest_size=32).digest() if given else None)
                                            for f, raw in files])
    assert identity(a, known) == identity(a, not known)
    assert (identity(a, known) == identity(b, False)) == (a == b)


@pytest.mark.parametrize("no_cache", [False, True], ids=["cache", "no cache"])
def test_a_build_hashes_a_schema_file_once(kube_ws, monkeypatch, no_cache):
    """A build hashes the bytes of each Kubernetes schema file once (issue 41: the built-in
    JobSet schema, 223 KB, was hashed five times a first build, ~1.4 ms more): its digest as
    read (the build cache's) makes the identity the validation cache keys on, before the
    schemas are parsed and after; and both identities are one."""
    from rcpc.core import digest
    from rcpc.domain import recipe
    from rcpc.domain.workspace import builtin_schema

    if no_cache:
        monkeypatch.setenv("RCPC_NO_CACHE", "1")
    raw = builtin_schema("jobset").read_bytes()
    fed, real = [], digest._blake2b

    class Counting:
        def __init__(self, data=b"", **kw):
            self.made = real(data, **kw)
            fed.append(len(data) >= len(raw))

        def update(self, data):
            fed.append(len(data) >= len(raw))
            self.made.update(data)

        def digest(self):
            return self.made.digest()

        def hexdigest(self):
            return self.made.hexdigest()

    identities = []
    made = recipe.Compiler._checked

    def checked(self, *args):
        before = self._schema_identity()
        out = made(self, *args)
        identities.append((before, self._kube.identity))
        return out
    monkeypatch.setattr(recipe.Compiler, "_checked", checked)
    monkeypatch.setattr(digest, "_blake2b", Counting)
    kube_ws.build(JOBSET_RECIPE % "")
    assert sum(fed) == 1
    assert identities and all(a == b for a, b in identities)
