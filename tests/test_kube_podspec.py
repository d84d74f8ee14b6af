"""Pod rules of issue 38 (``rcpc.domain.kube.podspec``; kind 3) and the required fields that
arrive as null (kind 1), through ``rcpc validate`` and ``rcpc check``.

Each property draws from the rule's value space in Kubernetes' validation
(``pkg/apis/core/validation/validation.go``: ``ValidateTolerations``, ``validateTaintEffect``,
``validateDNSPolicy``, ``validatePodDNSConfig``, ``ValidateVolumes``, ``ValidateVolumeMounts``,
``validateContainers``; apimachinery ``ValidateObjectMeta``): every operator, effect and DNS
policy spelling with its wrong cases, names near the RFC 1123 label's limits, null in each
required field; the oracles are written from that source."""

from __future__ import annotations

import json
import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.test_kube_pod_rules import ABSENT, job, jobset, put, run

SETTINGS = settings(max_examples=60, deadline=None)


def findings(manifest: dict, code: str = r"E10\d\d|W100\d") -> list[tuple[str, str]]:
    """(code, message) of each finding of ``rcpc validate``."""
    return re.findall(rf"(?:error|warning)\[({code})\]: (.*)", run(manifest))


def spellings(*words: str) -> list[str]:
    """Each word, its wrong cases and near misses."""
    out = set(words)
    for w in words:
        out |= {w.lower(), w.upper(), w + "s", w[:-1], w[0].lower() + w[1:]}
    return sorted(out) + ["", " "]


OPERATORS = spellings("Equal", "Exists") + ["Equals", "In", "Lt"]
EFFECTS = spellings("NoSchedule", "PreferNoSchedule", "NoExecute") + ["NoScheduleNoAdmit"]
LABEL_VALUES = st.one_of(st.sampled_from(["", "x", "a-b", "a_b.c", "-a", "a" * 63, "a" * 64, "a b", "é"]),
                         st.text("ab-_.9 ", max_size=5))
KEYS = st.one_of(st.sampled_from(["", "google.com/tpu", "nvidia.com/gpu", "a/b/c", "Key", "-k", "k" * 64]),
                 st.text("ab-/._", max_size=5))


def is_qualified_name(k: str) -> bool:
    *prefix, name = k.split("/") if k.count("/") <= 1 else ["", "", ""]
    ok_prefix = not prefix or (prefix[0] != "" and len(prefix[0]) <= 253 and re.fullmatch(
        r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", prefix[0]) is not None)
    return ok_prefix and 0 < len(name) <= 63 and re.fullmatch(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]", name) is not None


def toleration_faults(t: dict) -> int:
    """How many errors ValidateTolerations gives toleration ``t`` (a null or missing field is "")."""
    key, op, value, effect = (t.get(f) or "" for f in ("key", "operator", "value", "effect"))
    n = 0
    if key and not is_qualified_name(key):
        n += 1
    if not key and op != "Exists":
        n += 1
    if t.get("tolerationSeconds") is not None and effect != "NoExecute":
        n += 1
    if op in ("Equal", ""):
        n += bool(value) and not (len(value) <= 63 and re.fullmatch(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]", value))
    elif op == "Exists":
        n += bool(value)
    else:
        n += 1
    return n + bool(effect and effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"))


TOLERATION = st.fixed_dictionaries({}, optional={
    "key": KEYS, "operator": st.sampled_from(OPERATORS + [None]), "value": LABEL_VALUES,
    "effect": st.sampled_from(EFFECTS + [None]), "tolerationSeconds": st.sampled_from([None, 0, 30])})
PUBLISHED = {"operator": "Exists", "key": "google.com/tpu"}   # every published TPU manifest's


@SETTINGS
@given(tolerations=st.lists(TOLERATION, max_size=3), make=st.sampled_from([job, jobset]))
@example(tolerations=[PUBLISHED], make=jobset)
@example(tolerations=[{"key": "google.com/tpu", "operator": "Exists", "value": "present"}], make=job)  # the issue's
@example(tolerations=[{"key": "google.com/tpu", "operator": "exists"}], make=job)
@example(tolerations=[{"key": "google.com/tpu", "operator": "Equals", "value": "x"}], make=job)
@example(tolerations=[{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedules"}], make=jobset)
@example(tolerations=[{"operator": "Equal"}], make=job)   # no key: it must be Exists
def test_tolerations(tolerations, make):
    manifest = make({"containers": [{"name": "c", "image": "i"}], "tolerations": tolerations})
    got = [m for _, m in findings(manifest) if ".tolerations[" in m]
    assert len(got) == sum(map(toleration_faults, tolerations)), got


DNS_POLICIES = spellings("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None") + ["ClusterFirstWithHostnet"]


@SETTINGS
@given(policy=st.sampled_from(DNS_POLICIES + [ABSENT, None]), host=st.sampled_from([ABSENT, True, False]),
       servers=st.sampled_from([ABSENT, [], ["8.8.8.8"]]), make=st.sampled_from([job, jobset]))
@example(policy="ClusterFirstWithHostnet", host=True, servers=ABSENT, make=jobset)   # the issue's
@example(policy=ABSENT, host=True, servers=ABSENT, make=jobset)                     # W1003
@example(policy="ClusterFirstWithHostNet", host=True, servers=ABSENT, make=jobset)  # the published manifests'
@example(policy="None", host=ABSENT, servers=ABSENT, make=job)
def test_dns_policy_and_host_network(policy, host, servers, make):
    """E1014 for a DNS policy Kubernetes does not know (empty is defaulted to ClusterFirst), for
    None without a nameserver; W1003 for hostNetwork with the policy unset or ClusterFirst."""
    pod = put({"containers": [{"name": "c", "image": "i"}]}, dnsPolicy=policy, hostNetwork=host,
              dnsConfig={"nameservers": servers} if servers is not ABSENT else ABSENT)
    got = sorted(code for code, m in findings(make(pod)) if ".dnsPolicy:" in m or ".dnsConfig:" in m)
    effective = policy if policy not in (ABSENT, None) else ""
    want = []
    if effective and effective not in ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"):
        want.append("E1014")
    if effective == "None" and not (servers is not ABSENT and servers):
        want.append("E1014")
    if host is True and effective in ("", "ClusterFirst"):
        want.append("W1003")
    assert got == sorted(want)


def is_label(s: str) -> bool:
    return len(s) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", s) is not None


VOLUME_NAMES = st.one_of(st.sampled_from(["dshm-2", "Shm_Vol", "a" * 63, "a" * 64, "-a", "a-", "a.b", "0", "", None,
                                          ABSENT]),
                         st.text("ab9-._A", min_size=1, max_size=6))


@SETTINGS
@given(names=st.lists(VOLUME_NAMES, min_size=1, max_size=3), make=st.sampled_from([job, jobset]))
@example(names=["Shm_Vol"], make=job)       # the issue's: not a DNS-1123 label
@example(names=[None], make=jobset)         # null: Required
@example(names=["a" * 64], make=job)        # one over the limit
def test_volume_names(names, make):
    volumes = [put({"emptyDir": {}}, name=n) for n in names]
    got = [code for code, m in findings(make({"containers": [{"name": "c", "image": "i"}], "volumes": volumes}),
                                        "E1002|E1014") if ".volumes[" in m]
    want = ["E1014" if n in ("", None, ABSENT) else "E1002" for n in names if n in ("", None, ABSENT) or not is_label(n)]
    assert sorted(got) == sorted(want)


# kind 1: a required field that arrives as null ----------------------------------------------------
def js(name) -> dict:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": put({}, name=name),
            "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}}]}}


@SETTINGS
@given(name=st.sampled_from([None, "", ABSENT, "js", "Bad_Name"]), api=st.sampled_from([None, "", ABSENT, "x/v1"]),
       kind=st.sampled_from([None, "", ABSENT, "JobSet"]))
@example(name=None, api="x/v1", kind="JobSet")     # the issue's: `metadata.name:`
def test_object_identity(name, api, kind):
    """E1002 for a missing, null or empty metadata.name (the API server reads null as empty:
    "name or generateName is required") or a bad one; E1015 for a missing, null or empty
    apiVersion or kind (kubectl cannot map the object)."""
    body = {k: v for k, v in js(name).items() if k not in ("apiVersion", "kind")}
    manifest = put(body, apiVersion=api if api != "x/v1" else "jobset.x-k8s.io/v1alpha2", kind=kind)
    got = findings(manifest, "E1002|E1015")
    assert sorted(c for c, _ in got if c == "E1015") == ["E1015"] * ((api in (None, "", ABSENT)) + (kind in (None, "", ABSENT)))
    names = [m for c, m in got if c == "E1002"]
    assert len(names) == (name != "js"), names
    if name is None:
        assert "metadata.name is null" in names[0]


REQUIRED = {  # where a pod holds a required field, and its manifest path under the pod
    "container image": lambda v: ({"containers": [put({"name": "c"}, image=v)]}, "containers[0].image"),
    "container name": lambda v: ({"containers": [put({"image": "i"}, name=v)]}, "containers[0].name"),
    "env name": lambda v: ({"containers": [{"name": "c", "image": "i", "env": [put({"value": "x"}, name=v)]}]},
                           "containers[0].env[0].name"),
    "volume name": lambda v: ({"containers": [{"name": "c", "image": "i"}], "volumes": [put({"emptyDir": {}}, name=v)]},
                              "volumes[0].name"),
    "mount name": lambda v: ({"containers": [{"name": "c", "image": "i", "volumeMounts": [put({"mountPath": "/m"}, name=v)]}],
                              "volumes": [{"name": "v", "emptyDir": {}}]}, "containers[0].volumeMounts[0].name"),
    "mount path": lambda v: ({"containers": [{"name": "c", "image": "i", "volumeMounts": [put({"name": "v"}, mountPath=v)]}],
                              "volumes": [{"name": "v", "emptyDir": {}}]}, "containers[0].volumeMounts[0].mountPath"),
    "containers": lambda v: (put({}, containers=v if v is not None else None) if v != "x" else
                             {"containers": [{"name": "c", "image": "i"}]}, "containers"),
}


@SETTINGS
@given(field=st.sampled_from(sorted(REQUIRED)), value=st.sampled_from([None, "", ABSENT]),
       make=st.sampled_from([job, jobset]))
@example(field="container image", value=None, make=jobset)   # XPK's template with WORKLOAD_IMAGE unset
def test_required_pod_fields_as_null(field, value, make):
    """Each required field of a pod, null, empty or left out, is one error at its path."""
    if field == "containers" and value == "":
        value = []
    pod, at = REQUIRED[field](value)
    out = run(make(pod))
    assert len(re.findall(rf"error\[E1014\]: \w+ \S+\.{re.escape(at)}: ", out)) == 1, out


@settings(max_examples=20, deadline=None)
@given(value=st.sampled_from(["None", '""', "NAME"]))
@example(value="None")
def test_check_refuses_a_null_name(tmp_path_factory, value):
    """``rcpc check`` on a recipe whose JobSet name comes out null (it rendered ``name: null``
    and said ok)."""
    from tests.conftest import Ws

    ws = Ws(tmp_path_factory.mktemp("ws"))
    ws.write("recipes/r.rcp", f'NAME = "js"\njobset(name = "js", metadata = {{"name": {value}}}, spec = {{}})\n')
    from rcpc.cli import main
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.chdir(ws.root), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["check"])
    assert (code == 0) == (value == "NAME"), err.getvalue()
    if value == "None":
        assert "error[E1002]: JobSet metadata.name: metadata.name is null" in err.getvalue()


# the issue's examples through both commands ----------------------------------------------------------
def rcp_literal(v) -> str:
    """``v`` (plain data) as a recipe literal."""
    return json.dumps(v).replace("true", "True").replace("false", "False").replace("null", "None")


ISSUE_POD = {
    "hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostnet", "restartPolicy": "Never",
    "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "value": "x"},
                    {"key": "google.com/tpu", "operator": "exists"}, {"operator": "Exists", "effect": "NoSchedules"}],
    "volumes": [{"name": "Shm_Vol", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gb"}}, {"name": None, "emptyDir": {}}],
    "containers": [{"name": "main", "image": None, "ports": [{"containerPort": 70000}],
                    "env": [{"name": "A=B", "value": "1"}]}],
}
ISSUE_JOBSET = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                "metadata": {"name": None, "labels": {"kueue.x-k8s.io/queue-name": "Multislice_Queue"}},
                "spec": {"startupPolicy": {"startupPolicyOrder": "InOrder"},
                         "failurePolicy": {"rules": [{"action": "RestartJob", "name": "r"}]},
                         "replicatedJobs": [{"name": "a", "template": {"spec": {"template": {"spec": ISSUE_POD}}}},
                                            {"name": "b", "dependsOn": [{"name": "a", "status": "Ready"}],
                                             "template": {"spec": {"template": {"spec": ISSUE_POD}}}}]}}


def test_check_and_validate_agree_on_the_issue_examples(tmp_path):
    """Each example of issue 38 (kinds 1, 3, 4, 5 and the two warnings) is reported by
    ``rcpc validate`` on the YAML and by ``rcpc check`` on a recipe writing the same data,
    with the same code at the same manifest path (the warnings on a JobSet without errors:
    a failing check shows its errors)."""
    import contextlib
    import io

    from rcpc.cli import main
    from tests.conftest import Ws

    def found(text: str, severity: str) -> set:
        return set(re.findall(rf"{severity}\[(\w+)\]: JobSet (\S+):", text))

    clean_pod = {"hostNetwork": True, "restartPolicy": "Never", "containers": [
        {"name": "main", "image": "i", "args": ["--out=gs://b/$(RUN_ID)/out", "--id=$(JOB_COMPLETION_INDEX)"],
         "env": [{"name": "X", "value": "$(JOB_COMPLETION_INDEX)"}]}]}
    clean = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
             "spec": {"replicatedJobs": [{"name": "a", "template": {"spec": {"template": {"spec": clean_pod}}}}]}}
    for i, manifest in enumerate((ISSUE_JOBSET, clean)):
        (tmp_path / str(i)).mkdir()
        ws = Ws(tmp_path / str(i))
        ws.write("recipes/r.rcp", f'jobset(name = "js", metadata = {rcp_literal(manifest["metadata"])}, '
                 f'spec = {rcp_literal(manifest["spec"])})\n')
        err = io.StringIO()
        with contextlib.chdir(ws.root), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            assert main(["check"]) == (1 if manifest is ISSUE_JOBSET else 0)
        severity = "error" if i == 0 else "warning"
        by_check, by_validate = found(err.getvalue(), severity), found(run(manifest), severity)
        assert by_check == by_validate
        codes = {c for c, _ in by_check}
        # (no E1011 for the RestartJob action: without a name the JobSet never reaches the webhook)
        assert codes == ({"E1002", "E1005", "E1014", "E1016", "E1017"} if i == 0 else
                         {"W1003", "W1004", "W1005"}), codes
