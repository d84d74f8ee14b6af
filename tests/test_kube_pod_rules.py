"""Kubernetes' core and batch validation of containers and Jobs (E1014, ``rcpc.domain.kube.container``
and ``rcpc.domain.kube.pod``) through ``rcpc validate``: an attacker's manifests (containerPort
70000, env name ``A=B``, a container with no image, a podFailurePolicy naming no container,
exit codes ``[2, 1]``) passed rcpc and the API server refused them.

Each property draws from the rule's value space and compares with an oracle written from the
Kubernetes source (``pkg/apis/core/validation/validation.go``: ``validateContainerPorts``,
``ValidateEnv``, ``validateEnvVarValueFrom``, ``validateContainerCommon``,
``validateContainerOnlyForPod``; apimachinery ``IsValidPortNum``, ``IsValidPortName``,
``IsRelaxedEnvVarName``; ``pkg/apis/batch/validation/validation.go``: ``validatePodFailurePolicy``
and its rule functions)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.core.diagnostics import CompileError
from tests.conftest import Ws

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
ABSENT = object()


def run(manifest: dict) -> str:
    """What ``rcpc validate`` prints on ``manifest`` written as a YAML file (JSON is YAML's
    flow style; block style is the published manifests' test, tests/test_validate.py)."""
    from rcpc.cli import main

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "m.yaml").write_text(json.dumps(manifest) + "\n")
        err = io.StringIO()
        with contextlib.chdir(d), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            main(["validate", "m.yaml"])
    return err.getvalue()


def validate(manifest: dict) -> list[str]:
    """The E1014 messages of ``rcpc validate`` on ``manifest``."""
    return [line.split("error[E1014]: ", 1)[1] for line in run(manifest).splitlines() if "error[E1014]" in line]


def put(d: dict, **fields) -> dict:
    """``d`` with each field that is not :data:`ABSENT`."""
    return {**d, **{k: v for k, v in fields.items() if v is not ABSENT}}


def job(pod: dict, **spec) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {**spec, "template": {"spec": {"restartPolicy": "Never", **pod}}}}


def jobset(pod: dict, **spec) -> dict:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
            "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {
                **spec, "template": {"spec": {"restartPolicy": "Never", **pod}}}}}]}}


# ports ------------------------------------------------------------------------------------------
def is_port_name(s: str) -> bool:
    """IANA_SVC_NAME as IsValidPortName checks it."""
    return (len(s) <= 15 and re.fullmatch(r"[-a-z0-9]+", s) is not None and re.search("[a-z]", s) is not None
            and "--" not in s and not s.startswith("-") and not s.endswith("-"))


PORT_NUMBERS = st.one_of(st.integers(-3, 3), st.integers(65533, 65538), st.integers(-2 ** 31, 2 ** 31 - 1))
PORT_NAMES = st.one_of(st.sampled_from(["", "http", "grpc-1", "HTTP", "-a", "a-", "a--b", "123", "a" * 15, "a" * 16]),
                       st.text("ab1-_Z", max_size=17))
PORTS = st.lists(st.fixed_dictionaries({}, optional={
    "containerPort": PORT_NUMBERS, "hostPort": PORT_NUMBERS, "name": PORT_NAMES,
    "protocol": st.sampled_from(["TCP", "UDP", "SCTP", "", "tcp", "HTTP"])}), max_size=3)


@SETTINGS
@given(ports=PORTS)
@example(ports=[{"containerPort": 70000}])                          # the report
@example(ports=[{"containerPort": 80, "name": "http"}, {"containerPort": 81, "name": "http"}])
def test_container_ports(ports):
    """validateContainerPorts: containerPort set and 1..65535, hostPort 0 or 1..65535, protocol
    TCP/UDP/SCTP (empty: TCP), a name an IANA_SVC_NAME unique among the container's ports. Two
    containers with the same ports: names are unique per container, not across the pod; host
    ports are unique across the pod's containers (checkHostPortConflicts)."""
    refused = 0
    names = set()
    for p in ports:
        name = p.get("name", "")
        if name and not is_port_name(name):
            refused += 1
        elif name and name in names:
            refused += 1
        names.add(name)
        refused += not 1 <= p.get("containerPort", 0) <= 65535
        refused += p.get("hostPort", 0) != 0 and not 1 <= p["hostPort"] <= 65535
        refused += p.get("protocol", "") not in ("", "TCP", "UDP", "SCTP")
    hosts = [(p.get("protocol") or "TCP", p["hostPort"]) for p in ports if p.get("hostPort", 0) != 0]
    refused = 2 * refused + 2 * len(hosts) - len(set(hosts))   # checkHostPortConflicts, over both containers
    pod = {"containers": [{"name": "a", "image": "i", "ports": ports}, {"name": "b", "image": "i", "ports": ports}]}
    found = validate(job(pod))
    assert len(found) == refused, (ports, found)


@SETTINGS
@given(container=st.integers(1, 3), host=st.sampled_from([ABSENT, 0, 1, 2]))
def test_host_network_ports(container, host):
    """validatePodHostNetworkDeps: with hostNetwork a set hostPort equals containerPort (a pod
    template may leave it 0: the pod's defaulting sets it)."""
    port = put({"containerPort": container}, hostPort=host)
    found = validate(job({"hostNetwork": True, "containers": [{"name": "a", "image": "i", "ports": [port]}]}))
    assert len(found) == (host not in (ABSENT, 0) and host != container), found


# env -------------------------------------------------------------------------------------------
def is_env_name(s: str) -> bool:
    """IsRelaxedEnvVarName: not empty, printable ASCII (space to '~') other than '='."""
    return bool(s) and all(32 <= ord(c) <= 126 and c != "=" for c in s)


@SETTINGS
@given(name=st.one_of(st.text(st.sampled_from("Az_1.- =~$:\t\x7f\x1féü\u3000"), max_size=6),
                      st.sampled_from([ABSENT, None, "", "A=B", "=", "MY VAR", "1X", "..", "a.b-c"])))
@example(name="A=B")                                                  # the report
def test_env_var_names(name):
    """ValidateEnv with IsRelaxedEnvVarName (Kubernetes 1.32 and later): a name is required,
    and is printable ASCII other than '='."""
    var = put({"value": "v"}, name=name)
    found = validate(job({"containers": [{"name": "c", "image": "i", "env": [var]}]}))
    refused = name in (ABSENT, None) or not is_env_name(name)
    assert len(found) == refused, (name, found)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.text(st.characters(max_codepoint=0x80)), st.text(st.sampled_from(" ~=\x1f\x7fA"))))
def test_env_var_name_rule_is_the_oracle(name):
    """:func:`rcpc.domain.kube.validation.env_var_name` (str methods, not a loop over the
    characters) refuses exactly what IsRelaxedEnvVarName refuses, over any text."""
    from rcpc.domain.kube.validation import env_var_name

    assert (env_var_name(name) == []) == is_env_name(name), name


SOURCES = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")
SOURCE_VALUE = {"fieldRef": {"fieldPath": "metadata.name"}, "resourceFieldRef": {"resource": "limits.cpu"},
                "configMapKeyRef": {"name": "m", "key": "k"}, "secretKeyRef": {"name": "s", "key": "k"}}


@SETTINGS
@given(value=st.sampled_from([ABSENT, None, "", "x"]), has_source=st.booleans(),
       sources=st.dictionaries(st.sampled_from(SOURCES), st.booleans(), max_size=4))
@example(value="x", has_source=True, sources={"fieldRef": True})      # value and valueFrom together
def test_env_value_from(value, has_source, sources):
    """validateEnvVarValueFrom: a valueFrom names exactly one source (a null one is none), and
    comes with no non-empty value."""
    var = put({"name": "X"}, value=value)
    if has_source:
        var["valueFrom"] = {k: SOURCE_VALUE[k] if set_ else None for k, set_ in sources.items()}
    given_ = sum(sources.values())
    refused = has_source and (given_ == 0 or value == "x" or given_ > 1)
    found = validate(job({"containers": [{"name": "c", "image": "i", "env": [var]}]}))
    assert len(found) == refused, (var, found)


# container names and images ---------------------------------------------------------------------
NAMES = st.sampled_from([ABSENT, "a", "b", "a-b", "A", "-a", "a_b"])


@SETTINGS
@given(init=st.lists(NAMES, max_size=2), main=st.lists(NAMES, min_size=1, max_size=3))
@example(init=["a"], main=["a"])                                      # Duplicate value across the lists
@example(init=[], main=[ABSENT])                                      # Required
def test_container_names(init, main):
    """validateContainerCommon: a name is required (E1014) and a DNS-1123 label (E1002);
    validateContainers/validateInitContainers: unique across containers and init containers
    (E1004)."""
    def containers(names):
        return [put({"image": "i"}, name=n) for n in names]

    err = run(job({"initContainers": containers(init), "containers": containers(main)}))
    found = re.findall(r"error\[(E\d+)\]", err)
    given_ = [n for n in init + main if n is not ABSENT]
    want = (["E1014"] * (len(init + main) - len(given_))
            + ["E1002"] * sum(re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", n) is None for n in given_)
            + ["E1004"] * (len(given_) - len(set(given_))))
    assert sorted(found) == sorted(want), (init, main, err)


GO_SPACE = "\t\n\v\f\r \x85\xa0\u3000\u2009"   # some of Go's unicode.IsSpace


@SETTINGS
@given(image=st.one_of(st.sampled_from([ABSENT, None, "", " ", "img", " img", "img\n", "img\u3000", "im g",
                                        "\x1cimg", "img\x1f", "img\xa0"]),
                       st.text(st.sampled_from("i \t\x1c\u2009"), max_size=4)),
       make=st.sampled_from([job, jobset]), list_=st.sampled_from(["containers", "initContainers"]))
@example(image=ABSENT, make=jobset, list_="containers")              # the report: a JobSet without Jobs
def test_container_image(image, make, list_):
    """validateContainerCommon: every container of a pod or pod template has an image;
    validateContainerOnlyForPod: a pod's image has no leading or trailing whitespace (Go's
    unicode.IsSpace, not Python's: \\x1c-\\x1f are not trimmed), so the pods made from such a
    template are refused."""
    pod = {"containers": [{"name": "c", "image": "i"}]}
    pod[list_] = pod.get(list_, []) + [put({"name": "d"}, image=image)]
    found = validate(make(pod))
    refused = image in (ABSENT, None, "") or image[0] in GO_SPACE or image[-1] in GO_SPACE
    assert len(found) == refused, (image, found)


# podFailurePolicy -------------------------------------------------------------------------------
EXIT_CODES = st.fixed_dictionaries({}, optional={
    "operator": st.sampled_from(["In", "NotIn", "", "in"]),
    "containerName": st.sampled_from(["main", "init", "nope", ""]),
    "values": st.lists(st.sampled_from([0, 1, 2, 42]), max_size=4)})
CONDITIONS = st.lists(st.fixed_dictionaries({"type": st.sampled_from(["DisruptionTarget", "Ready", "a/b/c", ""])},
                                            optional={"status": st.sampled_from(["True", "False", "Unknown", "",
                                                                                 "Maybe"])}), max_size=2)
RULES = st.lists(st.fixed_dictionaries({}, optional={
    "action": st.sampled_from(["FailJob", "Ignore", "Count", "FailIndex", "", "RestartJob"]),
    "onExitCodes": st.one_of(st.none(), EXIT_CODES), "onPodConditions": CONDITIONS}), max_size=3)


def rule_faults(rule: dict, per_index: bool) -> int:
    """How many errors validatePodFailurePolicyRule reports for ``rule`` (containers: main,
    init container: init)."""
    n = 0
    action = rule.get("action", "")
    n += action == "" or (action == "FailIndex" and not per_index) or action not in (
        "FailJob", "Ignore", "Count", "FailIndex")
    codes, conditions = rule.get("onExitCodes"), rule.get("onPodConditions") or []
    if codes is not None:
        op, values = codes.get("operator", ""), codes.get("values", [])
        n += op not in ("In", "NotIn")
        n += "containerName" in codes and codes["containerName"] not in ("main", "init")
        n += not values
        n += sum(op == "In" and v == 0 for v in values)
        n += len(values) - len(set(values))
        n += any(a > b for a, b in zip(values, values[1:]))
    for p in conditions:
        n += re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", p["type"]) is None
        n += p.get("status", "") not in ("", "True", "False", "Unknown")
    n += (codes is not None) == bool(conditions)   # both, or neither
    return n


@SETTINGS
@given(rules=RULES, per_index=st.booleans(), many=st.booleans())
@example(rules=[{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "containerName": "nope", "values": [1]}}],
         per_index=False, many=False)                                 # the report: names no container
@example(rules=[{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [2, 1]}}],
         per_index=False, many=False)                                 # the report: not ascending
@example(rules=[{"action": "FailJob", "onPodConditions": [], "onExitCodes": {"operator": "NotIn", "values": [42]}}],
         per_index=False, many=False)                                 # as XPK writes it: accepted
def test_pod_failure_policy(rules, per_index, many):
    """validatePodFailurePolicy on a Job (Indexed, so that backoffLimitPerIndex may be set):
    at most 20 rules; each rule's action, exactly one of onExitCodes and a non-empty
    onPodConditions; an onExitCodes' operator, containerName, values (at least one, unique,
    ascending, no 0 with In); an onPodConditions' types and statuses."""
    rules = rules * 7 if many and rules else rules
    spec = {"completionMode": "Indexed", "completions": 1, "podFailurePolicy": {"rules": rules}}
    if per_index:
        spec["backoffLimitPerIndex"] = 1
    pod = {"initContainers": [{"name": "init", "image": "i"}], "containers": [{"name": "main", "image": "i"}]}
    found = validate(job(pod, **spec))
    want = sum(rule_faults(r, per_index) for r in rules) + (len(rules) > 20)
    assert len(found) == want, (rules, found)


@SETTINGS
@given(mode=st.sampled_from([ABSENT, "Indexed", "NonIndexed"]), per_index=st.sampled_from([ABSENT, -1, 1]),
       max_failed=st.sampled_from([ABSENT, -1, 1]), in_jobset=st.booleans())
def test_backoff_limit_per_index(mode, per_index, max_failed, in_jobset):
    """validateJobSpec: backoffLimitPerIndex and maxFailedIndexes are not negative, need the
    Indexed completion mode (a JobSet's Jobs are Indexed unless they say otherwise), and
    maxFailedIndexes needs backoffLimitPerIndex."""
    spec = put({"completions": 1, "parallelism": 1}, completionMode=mode, backoffLimitPerIndex=per_index,
               maxFailedIndexes=max_failed)
    pod = {"containers": [{"name": "c", "image": "i"}]}
    found = validate(jobset(pod, **spec) if in_jobset else job(pod, **spec))
    indexed = mode == "Indexed" or (mode is ABSENT and in_jobset)
    set_ = [v for v in (per_index, max_failed) if v is not ABSENT]
    want = sum(v < 0 for v in set_) + (0 if indexed else len(set_)) + (max_failed is not ABSENT and per_index is ABSENT)
    assert len(found) == want, (spec, found)


# through a recipe build -------------------------------------------------------------------------
RECIPE = '''jobset(name = "js", spec = {"replicatedJobs": [{"name": "w", "template": {"spec": {
    "parallelism": 1, "completions": 1,
    "podFailurePolicy": {"rules": [
        {"action": "FailJob", "onExitCodes": {"containerName": "trainer", "operator": "In", "values": [2, 1]}},
    ]},
    "template": {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "main", "image": "img", "ports": [{"containerPort": 70000}], "env": [{"name": "A=B", "value": "1"}]},
        {"name": "side"},
    ]}},
}}}]})
'''


def test_the_attackers_jobset_through_a_recipe_build(tmp_path):
    """The five faults, each reported at its recipe span by ``rcpc check``/``build``."""
    ws = Ws(tmp_path)
    try:
        ws.build(RECIPE)
        found = []
    except CompileError as exc:
        found = [d for d in exc.diagnostics if d.code == "E1014"]
    lines = RECIPE.splitlines()
    where = {d.message.split(": ", 1)[1]: (d.span.line, lines[d.span.line - 1][d.span.col - 1:]) for d in found}
    want = {"containerName 'trainer' names no container or init container of the pod template": (4, '"trainer"'),
            "onExitCodes values must be ordered (ascending)": (4, "[2, 1]"),
            "containerPort 70000 must be between 1 and 65535": (7, "70000"),
            "env var name 'A=B' is not valid: a valid environment variable name must consist only of printable "
            "ASCII characters other than '='": (7, '"A=B"'),
            "the container has no image (Required)": (8, '{"name": "side"}')}
    assert sorted(where) == sorted(want), where
    for message, (line, text) in want.items():
        assert where[message][0] == line and where[message][1].startswith(text), (message, where[message])
