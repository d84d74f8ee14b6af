"""rcpc's verdict on manifests, cross-checked by validators it did not write, run as users run
them (their command lines, offline):

* ``check-jsonschema`` with the JobSet CRD's schema (converted here, as openapi2jsonschema
  does for kubeconform: int-or-string, nullable, strict unknown fields) on each JobSet after the
  JobSet webhook's one defaulting that the CRD requires (failure-policy rule names);
* ``kubernetes-validate --strict`` (built-in kinds' OpenAPI schemas, bundled) on the child Jobs
  the JobSet controller creates from each replicated job's template, and on a ConfigMap.

Every bundled render and every published TPU manifest (after envsubst with the port tests'
values) passes all of them and ``rcpc validate``; where the raw CRD rejects a published
manifest (XPK's nulls, which the API server prunes), ``rcpc validate --strict-crd`` rejects
exactly the same files; and for faults of each kind both sides reject.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.test_tpu_recipes_port import TEMPLATES, VALUES, envsubst

# all in one pytest-xdist worker (tests/run: --dist loadgroup): its module fixtures (rcpc build of every recipe, the CRD schema) run once
pytestmark = pytest.mark.xdist_group("test_real_validators")

REPO = Path(__file__).resolve().parents[1]
CRD = REPO.parent / "shared" / "data" / "jobset" / "jobset.x-k8s.io_jobsets.yaml"
BIN = Path(sys.executable).parent
SUBST = {**VALUES[1].values[0], "DATASET_DIR": "gs://my-bucket/datasets"}


def json_schema(node):
    """An openAPIV3Schema as a JSON schema, the way openapi2jsonschema --strict converts CRDs
    for kubeconform (written here, independently of rcpc's own conversion)."""
    if isinstance(node, list):
        return [json_schema(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: json_schema(v) for k, v in node.items() if not k.startswith("x-kubernetes") and k != "description"}
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["oneOf"] = [{"type": "string"}, {"type": "integer"}]
    if node.get("nullable") and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
        out.setdefault("additionalProperties", False)
    return out


@pytest.fixture(scope="module")
def crd_schema(tmp_path_factory) -> Path:
    crd = yaml.safe_load(CRD.read_text())
    path = tmp_path_factory.mktemp("schema") / "jobset.schema.json"
    path.write_text(json.dumps(json_schema(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])))
    return path


def tool(name: str) -> str:
    exe = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if exe is None:
        pytest.fail(f"{name} not found: pip install '.[test]'")
    return exe


def run(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True)


def named_rules(doc: dict) -> dict:
    """The JobSet with the webhook's rule names (jobset_webhook.go Default), as a user
    validating offline must write them."""
    doc = copy.deepcopy(doc)
    for i, rule in enumerate(((doc.get("spec") or {}).get("failurePolicy") or {}).get("rules") or []):
        rule.setdefault("name", f"failurePolicyRule{i}")
    return doc


def without_nulls(doc):
    """``doc`` with every null-valued key dropped, as the API server prunes them (the
    XPK-generated manifests, and their ports, keep null labels, env and serviceAccountName)."""
    if isinstance(doc, dict):
        return {k: without_nulls(v) for k, v in doc.items() if v is not None}
    if isinstance(doc, list):
        return [without_nulls(v) for v in doc]
    return doc


def child_jobs(doc: dict) -> list:
    """The batch/v1 Jobs the JobSet controller creates (one per replica; the last, with the
    longest name), from each replicated job's template."""
    jobs = []
    for rj in doc["spec"]["replicatedJobs"]:
        template = rj["template"]
        jobs.append({"apiVersion": "batch/v1", "kind": "Job",
                     "metadata": {**(template.get("metadata") or {}),
                                  "name": f"{doc['metadata']['name']}-{rj['name']}-{rj.get('replicas', 1) - 1}"},
                     "spec": template["spec"]})
    return jobs


def write_docs(path: Path, docs: list) -> Path:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def renders(tmp_path_factory) -> list[Path]:
    """Every render of every variant of the bundled recipes, built by ``rcpc build``."""
    out = tmp_path_factory.mktemp("renders")
    proc = run(BIN / "python", "-m", "rcpc", "build", "-o", out, "-j", "1")
    assert proc.returncode == 0, proc.stderr
    found = sorted(out.rglob("*.yaml"))
    assert len(found) >= 51
    return found


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> list[Path]:
    """The 13 published TPU manifests after envsubst with the port tests' values."""
    out = tmp_path_factory.mktemp("published")
    paths = []
    for template in sorted(TEMPLATES.glob("*.yaml")):
        path = out / template.name
        path.write_text(envsubst(template, SUBST))
        paths.append(path)
    assert len(paths) == 13
    return paths


def check_jsonschema(schema: Path, files: list[Path]) -> subprocess.CompletedProcess:
    return run(tool("check-jsonschema"), "--schemafile", schema, *files)


def kubernetes_validate(files: list[Path]) -> subprocess.CompletedProcess:
    return run(tool("kubernetes-validate"), "--strict", "--quiet", *files)


def rcpc_validate(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rcpc", "validate", *map(str, args)], capture_output=True,
                          text=True, cwd=REPO)


def raw_schema_errors(schema: Path, files: list[Path]) -> set:
    """(file, manifest path) of each error check-jsonschema reports on the files as they are
    (the file as an absolute path: renders of several variants share names)."""
    proc = run(tool("check-jsonschema"), "--schemafile", schema, "-o", "json", *files)
    return {(str((REPO / e["filename"]).resolve()), e["path"].removeprefix("$."))
            for e in json.loads(proc.stdout)["errors"]}


def strict_crd_errors(files: list[Path]) -> set:
    """(file, manifest path) of each E1012 of ``rcpc validate --strict-crd``, as
    :func:`raw_schema_errors` gives them; also checks that nothing else is reported."""
    proc = rcpc_validate("--strict-crd", "--diagnostics", "json", *files)
    found = json.loads(proc.stderr)["diagnostics"]
    assert {d["code"] for d in found} <= {"E1012"}, proc.stderr
    return {(str((REPO / d["span"]["path"]).resolve()), d["message"].split(": ", 1)[0].split(" ", 1)[1])
            for d in found}


def test_bundled_renders(renders, crd_schema, tmp_path):
    defaulted = [write_docs(tmp_path / f"{i}.yaml", [without_nulls(named_rules(yaml.safe_load(p.read_text())))])
                 for i, p in enumerate(renders)]
    proc = check_jsonschema(crd_schema, defaulted)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    jobs = write_docs(tmp_path / "jobs.yaml", [j for p in renders for j in child_jobs(yaml.safe_load(p.read_text()))])
    proc = kubernetes_validate([jobs])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = rcpc_validate(*renders)
    assert proc.returncode == 0, proc.stderr
    # what the raw CRD rejects (the renders leave rule names to the webhook and, as the
    # XPK-generated ones do, nulls to the API server's pruning, as published manifests do)
    # is exactly what rcpc --strict-crd reports, file by file (one run of each on all of them)
    raw = raw_schema_errors(crd_schema, renders)
    assert raw and raw == strict_crd_errors(renders)


def test_published_manifests(published, crd_schema, tmp_path):
    proc = rcpc_validate(*published)
    assert proc.returncode == 0, proc.stderr
    assert "validated 13 document(s) in 13 file(s): ok" in proc.stderr
    # XPK's nulls and the unnamed rules: the raw CRD rejects them (the API server prunes the
    # nulls, the webhook names the rules); rcpc --strict-crd reports exactly those
    raw = raw_schema_errors(crd_schema, published)
    assert raw == strict_crd_errors(published)
    null_env = [c for p in published for j in child_jobs(yaml.safe_load(p.read_text()))
                for c in j["spec"]["template"]["spec"]["containers"] if "env" in c and c["env"] is None]
    assert len(null_env) > 0 and sum(1 for _, path in raw if path.endswith(".env")) == len(null_env)
    for path in published:
        proc = kubernetes_validate([write_docs(tmp_path / f"jobs-{path.name}", child_jobs(yaml.safe_load(path.read_text())))])
        assert proc.returncode == 0, (path.name, proc.stdout + proc.stderr)


def test_the_readme_says_what_strict_crd_reports_on_the_bundled_recipes():
    """README.md counts what ``rcpc check --strict-crd`` reports on the bundled recipes (it
    showed the command as if it passed; it exits 1): the nulls the API server prunes and the
    rules the webhook names, nothing else."""
    import re

    proc = subprocess.run([sys.executable, "-m", "rcpc", "check", "--strict-crd", "--diagnostics", "json"],
                          capture_output=True, text=True, cwd=REPO)
    found = json.loads(proc.stderr)["diagnostics"]
    nulls = [d for d in found if "the API server drops this null" in d["message"]]
    unnamed = [d for d in found if "missing required field 'name'" in d["message"] and "fills it in" in d["message"]]
    assert proc.returncode == 1 and {d["code"] for d in found} == {"E1012"}
    assert len(found) == len(nulls) + len(unnamed)
    said = re.search(r"reports \(E1012\) the\s+(\d+) values.*?(\d+) nulls.*?and (\d+) failure-policy\s+rules",
                     (REPO / "README.md").read_text(encoding="utf-8"), re.S)
    assert said is not None and tuple(map(int, said.groups())) == (len(found), len(nulls), len(unnamed))


# Faults of each kind: rcpc rejects, and so does each validator whose schema can say so.
FAULTS = {
    "args item not a string": (lambda c: c.__setitem__("args", ["-t", 2592000]), "E1008"),
    "env value not a string": (lambda c: c.__setitem__("env", [{"name": "X", "value": 0}]), "E1001"),
    "unknown container field": (lambda c: c.__setitem__("imagePullPolice", "Always"), "E1101"),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_faults_are_rejected_by_all(fault, published, crd_schema, tmp_path):
    change, code = FAULTS[fault]
    doc = named_rules(yaml.safe_load(published[0].read_text()))
    change(doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0])
    path = write_docs(tmp_path / "bad.yaml", [doc])
    proc = rcpc_validate(path)
    assert proc.returncode == 1 and f"[{code}]" in proc.stderr, proc.stderr
    assert check_jsonschema(crd_schema, [path]).returncode != 0
    assert kubernetes_validate([write_docs(tmp_path / "jobs.yaml", child_jobs(doc))]).returncode != 0


def test_configmap_agrees_with_kubernetes_validate(tmp_path):
    good = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"steps": "30"}}
    bad = {**good, "data": {"steps": 30}}
    for doc, ok in ((good, True), (bad, False)):
        path = write_docs(tmp_path / "cm.yaml", [doc])
        assert (kubernetes_validate([path]).returncode == 0) is ok
        assert (rcpc_validate(path).returncode == 0) is ok
