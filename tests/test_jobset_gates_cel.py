"""JobSet rules of issue 38 (kind 4): the CRD's CEL rules (E1016, ``rcpc.domain.kube.jobset_cel``)
and the webhook's feature-gated rules (E1011, ``rcpc.domain.kube.jobset``), the gates named in
rcp.toml's ``jobset_feature_gates``.

Sources: the JobSet CRD (``../shared/data/jobset/jobset.x-k8s.io_jobsets.yaml``: its
``x-kubernetes-validations``), ``jobset_webhook.go`` (``ValidateCreate``,
``validateFailurePolicy``) and kubernetes-sigs/jobset ``pkg/features/features.go`` (the gates
and their defaults)."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.domain.kube import jobset, jobset_cel

REPO = Path(__file__).resolve().parents[1]
CRD = REPO.parent / "shared" / "data" / "jobset" / "jobset.x-k8s.io_jobsets.yaml"
SHIPPED = REPO / "compiler" / "rcpc" / "domain" / "schemas" / "jobset.json"
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
POD = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}


def test_every_cel_rule_of_the_crd_is_modelled():
    """Each CEL rule of the CRD, and of the schema rcpc ships, is one rcpc models, or a
    transition rule (``oldSelf``) that only an update evaluates; each modelled rule is in
    the CRD (a new JobSet release with new rules fails here)."""
    crd = yaml.safe_load(CRD.read_text(encoding="utf-8"))
    for schema in (crd, json.loads(SHIPPED.read_text(encoding="utf-8"))):
        rules = set(jobset_cel.rules_of(schema))
        assert {r for r in rules if "oldSelf" not in r} == set(jobset_cel.RULES)


def validate(manifest: dict, toml: str = "") -> str:
    from rcpc.cli import main

    import tempfile

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "m.yaml").write_text(json.dumps(manifest) + "\n")
        if toml:
            (Path(d) / "rcp.toml").write_text(toml)
        err = io.StringIO()
        with contextlib.chdir(d), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            main(["validate", "m.yaml"])
    return err.getvalue()


def codes(out: str, code: str) -> list[str]:
    return re.findall(rf"error\[{code}\]: JobSet (\S+):", out)


def jobset_of(spec: dict, jobs: list[dict]) -> dict:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
            "spec": {**spec, "replicatedJobs": [{**j, "template": {"spec": {"template": {"spec": POD}}}} for j in jobs]}}


ORDERS = st.sampled_from([None, "AnyOrder", "InOrder", "inorder"])
DEPENDS = st.sampled_from([None, [], [{"name": "a", "status": "Ready"}]])


@SETTINGS
@given(order=ORDERS, depends=st.lists(DEPENDS, min_size=1, max_size=3), namespace=st.sampled_from([None, "", "ns"]))
@example(order="InOrder", depends=[None, [{"name": "a", "status": "Ready"}]], namespace=None)   # the issue's
def test_cel_rules(order, depends, namespace):
    """E1016 once when startupPolicy InOrder meets a replicated job with dependsOn (written,
    even empty; a null is pruned); once for each claim template with a namespace."""
    jobs = [{"name": f"j{i}"} | ({"dependsOn": d} if d is not None else {}) for i, d in enumerate(depends)]
    spec = {"startupPolicy": {"startupPolicyOrder": order}} if order else {}
    if namespace is not None:
        spec["volumeClaimPolicies"] = [{"templates": [{"metadata": {"name": "data", "namespace": namespace}}]}]
    found = codes(validate(jobset_of(spec, jobs)), "E1016")
    want = ["spec.startupPolicy.startupPolicyOrder"] if order == "InOrder" and any(d is not None for d in depends) else []
    want += ["spec.volumeClaimPolicies[0].templates[0].metadata.namespace"] if namespace else []
    assert found == want


ACTIONS = st.sampled_from(["FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts", "RestartJob",
                           "RestartJobAndIgnoreMaxRestarts"])


@SETTINGS
@given(actions=st.lists(ACTIONS, max_size=3), strategy=st.sampled_from([None, "Recreate", "InPlaceRestart"]),
       gates=st.lists(st.sampled_from(sorted(jobset.FEATURE_GATES)), max_size=2, unique=True),
       replicas=st.sampled_from([1, 1024, 1025]))
@example(actions=["RestartJob"], strategy=None, gates=[], replicas=1)               # the issue's: gate off
@example(actions=["RestartJob"], strategy=None, gates=["RestartJob"], replicas=1)   # named in rcp.toml
@example(actions=["RestartJobAndIgnoreMaxRestarts"], strategy=None, gates=["RestartJob"], replicas=1025)
@example(actions=[], strategy="InPlaceRestart", gates=[], replicas=1)
def test_feature_gated_rules(actions, strategy, gates, replicas):
    """E1011 for a RestartJob action without the RestartJob gate (the webhook then checks the
    policy no further), for more than 1,024 replicas with it, and for the InPlaceRestart
    strategy without its gate; the gates as rcp.toml names them."""
    policy = {"rules": [{"action": a, "name": f"rule{i}"} for i, a in enumerate(actions)]}
    if strategy:
        policy["restartStrategy"] = strategy
    manifest = jobset_of({"failurePolicy": policy}, [{"name": "w", "replicas": replicas}])
    toml = f"jobset_feature_gates = {json.dumps(gates)}\n"
    found = codes(validate(manifest, toml), "E1011")
    restart = [i for i, a in enumerate(actions) if a in jobset.RESTART_JOB_ACTIONS]
    want = ["spec.failurePolicy.restartStrategy"] if strategy == "InPlaceRestart" and "InPlaceRestart" not in gates else []
    if restart and "RestartJob" not in gates:
        want.append(f"spec.failurePolicy.rules[{restart[0]}].action")
    elif restart and replicas > 1024:
        want.append("spec.replicatedJobs[0].replicas")
    assert found == want


def test_an_unknown_gate_is_a_config_error():
    out = validate(jobset_of({}, [{"name": "w"}]), 'jobset_feature_gates = ["RestartJobs"]\n')
    assert "error[E0901]: rcp.toml: 'jobset_feature_gates' entry 'RestartJobs' is not a JobSet feature gate" in out
    assert "did you mean 'RestartJob'?" in out


def test_gates_key_the_validation_cache(tmp_path, monkeypatch):
    """A render found clean with a gate on is checked again with it off (the cache key holds
    the gates)."""
    from tests.conftest import Ws

    from rcpc.domain.kube import schemacache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)
    (tmp_path / "ws").mkdir()
    ws = Ws(tmp_path / "ws")
    recipe = ('POD = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}\n'
              'jobset(name = "js", spec = {"failurePolicy": {"rules": [{"action": "RestartJob", "name": "r"}]}, '
              '"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": POD}}}}]})\n')
    (ws.root / "rcp.toml").write_text('jobset_feature_gates = ["RestartJob"]\n')
    ws.build(recipe)
    assert schemacache.enabled()
    (ws.root / "rcp.toml").write_text("")
    assert ws.fails().code == "E1011"
