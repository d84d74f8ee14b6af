"""Kubernetes rules and JobSet CRD validation (DESIGN.md §3.3; shared/cases F9-F13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
CRD = REPO.parent / "shared" / "data" / "jobset" / "jobset.x-k8s.io_jobsets.yaml"

# A small valid TPU JobSet; tests replace one piece at a time.
JOBSET = '''\
POD = {
    "nodeSelector": S.node_selector,
    "containers": [{
        "name": "main",
        "image": "img",
        "env": [{"name": "X", "value": ENV_VALUE}],
        "resources": {"limits": {"google.com/tpu": TPU}},
    }],
}
jobset(
    name = "js",
    metadata = {"name": NAME, "labels": {"team": LABEL}},
    spec = {
        "failurePolicy": {"rules": [{"action": "FailJobSet", "onJobFailureReasons": ["PodFailurePolicy"]}]},
        "replicatedJobs": [{
            "name": "slice",
            "template": {"spec": {
                "parallelism": PARALLELISM,
                "completions": S.hosts,
                "template": {"spec": POD},
            }},
        }],
    },
)
'''
DEFAULTS = {"ENV_VALUE": '"0"', "TPU": "4", "NAME": '"demo-train"', "LABEL": '"ml"', "PARALLELISM": "S.hosts"}


def recipe(**over) -> str:
    values = {**DEFAULTS, **over}
    return 'S = tpu_slice("tpu7x:2x2x4")\n' + "".join(f"{k} = {v}\n" for k, v in values.items()) + JOBSET


@pytest.fixture
def kws(ws):
    (ws.root / "rcp.toml").write_text(f'kube_schemas = ["{CRD}"]\n', encoding="utf-8")
    return ws


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_valid_jobset_passes_rules_and_crd(kws):
    out = kws.build(recipe())
    doc = yaml.safe_load(out["default"]["js.yaml"])
    assert doc["spec"]["failurePolicy"]["rules"][0] == {"action": "FailJobSet", "onJobFailureReasons": ["PodFailurePolicy"]}


# CRD validation at the recipe's line:col, with the manifest path -----------------------------------
def test_wrong_field_type(kws):
    text = recipe(PARALLELISM='"4"')
    f = kws.fails(text)
    assert f.code == "E1101"
    assert f.message == "JobSet spec.replicatedJobs[0].template.spec.parallelism: '4' is not of type 'integer'"
    assert f.where == "recipes/r.rcp:6:15"   # PARALLELISM = "4"


def test_unknown_field(kws):
    text = recipe().replace('"completions": S.hosts,', '"completions": S.hosts,\n                "paralelism": 4,')
    f = kws.fails(text)
    assert f.code == "E1101"
    assert f.message == "JobSet spec.replicatedJobs[0].template.spec.paralelism: unknown field 'paralelism'"
    assert f.where == f"recipes/r.rcp:{line_of(text, 'paralelism')}:17"
    assert f.diag.hint == "did you mean 'parallelism'?"


def test_missing_required_field(kws):
    text = recipe().replace('"name": "slice",\n', "")
    f = kws.fails(text)
    assert f.code == "E1101"
    assert f.message == "JobSet spec.replicatedJobs[0]: missing required field 'name'"
    assert f.where == f"recipes/r.rcp:{line_of(text, 'replicatedJobs')}:28"


def test_failure_policy_rule_name_is_defaulted_by_the_webhook_but_action_is_required(kws):
    kws.build(recipe())                     # the rule has no name, as in the published manifests
    text = recipe().replace('"action": "FailJobSet", ', "")
    f = kws.fails(text)
    assert f.message == "JobSet spec.failurePolicy.rules[0]: missing required field 'action'"


def test_int_or_string_quantities(kws):
    kws.build(recipe(TPU='"4"'))
    f = kws.fails(recipe(TPU="4.5"))
    assert f.code in ("E1101", "E1014")  # a fraction of a chip; not also a count of chips (E1006)


def test_every_error_of_a_manifest_is_reported(kws):
    f = kws.fails(recipe(PARALLELISM='"4"').replace('"image": "img",', '"image": "img", "imagePullPolice": "x",'))
    assert sorted(d.message.split(":")[0] for d in f.diags) == [
        "JobSet spec.replicatedJobs[0].template.spec.parallelism",
        "JobSet spec.replicatedJobs[0].template.spec.template.spec.containers[0].imagePullPolice"]


def test_plain_json_schema_by_group_version_kind(ws, tmp_path):
    schema = {"type": "object", "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "ConfigMap"}],
              "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                             "metadata": {"type": "object"}, "immutable": {"type": "boolean"},
                             "data": {"type": "object", "additionalProperties": {"type": "string"}}}}
    (ws.root / "cm.json").write_text(json.dumps(schema))
    (ws.root / "rcp.toml").write_text('kube_schemas = ["cm.json"]\n')
    ws.build('manifest(name = "cm", apiVersion = "v1", kind = "ConfigMap", immutable = True)\n')
    f = ws.fails('manifest(name = "cm", apiVersion = "v1", kind = "ConfigMap", immutable = "true")\n')
    assert f.code == "E1101" and f.message == "ConfigMap immutable: 'true' is not of type 'boolean'"
    assert f.where == "recipes/r.rcp:1:74"


def test_bundled_jobsets_validate_against_the_real_crd(capsys, monkeypatch):
    from rcpc.cli import main

    monkeypatch.chdir(REPO)
    code = main(["check", "--kube-schema", str(CRD)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert ": ok" in err


# built-in rules ------------------------------------------------------------------------------------
ENV_VALUES = st.one_of(st.integers(-10**6, 10**6).map(str), st.sampled_from(["1.0", "True", "false", "2e3"]))


@settings(max_examples=40, deadline=None)
@given(ENV_VALUES)
@example("0")                                              # F9: {"ENABLE_MULTI_NUMA": 0}
def test_f9_env_values_must_be_strings(tmp_path_factory, literal):
    from tests.conftest import Ws

    ws = Ws(tmp_path_factory.mktemp("w"))
    f = ws.fails(recipe(ENV_VALUE=literal))
    assert f.code == "E1001" and f.where == "recipes/r.rcp:2:13"
    assert "Kubernetes env values are strings" in f.message
    assert f.message.startswith("JobSet spec.replicatedJobs[0].template.spec.template.spec.containers[0].env[0].value")
    assert f.diag.hint == f'write "{literal}"'


@pytest.mark.parametrize("value", ["0", "1.0", "true", "no", "on", "off", "yes", "y", "356136738", "1e3", "0755"])
def test_f9_f10_f11_string_env_and_label_values_stay_strings(ws, value):
    out = ws.build(recipe(ENV_VALUE=f'"{value}"', LABEL=f'"{value}"'))
    doc = yaml.safe_load(out["default"]["js.yaml"])
    env = doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["env"][0]
    assert env["value"] == value and doc["metadata"]["labels"]["team"] == value


def test_f11_label_values_are_strings(ws):
    f = ws.fails(recipe(LABEL="356136738"))
    assert (f.code, f.where) == ("E1003", "recipes/r.rcp:5:9")
    assert f.diag.hint == 'write "356136738"'
    f = ws.fails(recipe(LABEL='"has space"'))
    assert f.code == "E1003" and "is not valid" in f.message


def test_container_names_unique_within_a_pod(ws):
    text = recipe().replace('"containers": [{', '"initContainers": [{"name": "main", "image": "i"}],\n    "containers": [{')
    f = ws.fails(text)
    assert f.code == "E1004" and "container name 'main' is used twice in one pod" in f.message
    assert f.diag.related[0][0] == "first used here"


@pytest.mark.parametrize("quantity, code, message", [
    ('"4x"', "E1005", "is not a resource quantity"), ('"1.5.2"', "E1005", "is not a resource quantity"),
    ('"-"', "E1005", "is not a resource quantity"),  # ParseQuantity reads it as 0; the JobSet CRD's pattern does not
    ("-1", "E1014", "must be greater than or equal to 0")])
def test_resource_quantities(ws, quantity, code, message):
    """A few spellings in a JobSet (the whole space: tests/test_kube_quantity.py)."""
    text = recipe().replace('"limits": {"google.com/tpu": TPU}', f'"limits": {{"google.com/tpu": TPU, "memory": {quantity}}}')
    f = ws.fails(text)
    assert f.code == code and message in f.message


def test_tpu_request_must_match_the_host(ws):
    f = ws.fails(recipe(TPU='"8"'))
    assert f.code == "E1006"
    assert "request 8 google.com/tpu but a tpu7x:2x2x4 host has 4 chips" in f.message
    assert f.where == "recipes/r.rcp:3:7"


def test_parallelism_must_match_hosts(ws):
    f = ws.fails(recipe(PARALLELISM="8"))
    assert f.code == "E1007" and "parallelism is 8 but the tpu7x:2x2x4 slice has 4 hosts" in f.message
    assert f.where == "recipes/r.rcp:6:15"
