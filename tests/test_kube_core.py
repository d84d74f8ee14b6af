"""Kubernetes' core validation of pod and Job specs (E1014, ``rcpc.domain.kube.pod``): what
the API server refuses when the pod or Job is created. A new user's Job (negative
backoffLimit, an unknown completionMode, restartPolicy Always, an unknown imagePullPolicy, a
TPU request without a limit, a cpu request over its limit, a mount of no volume) passed
``rcpc validate``; inside a JobSet, such a pod template leaves the JobSet without Jobs."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import SPAN, value_of
from rcpc.core.values import Str
from rcpc.domain.kube.rules import check_rules
from rcpc.domain.kube.container import quantity

CONTAINER = {"name": "c", "image": "i"}


def job(pod: dict, **spec) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {**spec, "template": {"spec": {"containers": [CONTAINER], **pod}}}}


def jobset(pod: dict) -> dict:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
            "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": pod}}}}]}}


def deployment(pod: dict) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": pod}}}


def e1014(manifest: dict) -> list[str]:
    return [d.message for d in check_rules(value_of(manifest)) if d.code == "E1014"]


@pytest.mark.parametrize("policy", ["Always", "OnFailure", "Never", "always", "", "Sometimes"])
@pytest.mark.parametrize("make, allowed", [(jobset, {"OnFailure", "Never"}), (lambda p: job(p), {"OnFailure", "Never"}),
                                           (deployment, {"Always", "OnFailure", "Never"})])
def test_restart_policy(policy, make, allowed):
    found = e1014(make({"restartPolicy": policy, "containers": [CONTAINER]}))
    assert bool(found) == (policy not in allowed), found


@pytest.mark.parametrize("policy", ["Always", "Never", "IfNotPresent", "ifnotpresent", "Sometimes"])
def test_image_pull_policy(policy):
    found = e1014(jobset({"restartPolicy": "Never", "containers": [{**CONTAINER, "imagePullPolicy": policy}]}))
    assert bool(found) == (policy not in ("Always", "Never", "IfNotPresent"))


@given(volumes=st.lists(st.sampled_from(["a", "b"]), max_size=2, unique=True),
       mounts=st.lists(st.sampled_from(["a", "b", "c"]), max_size=3, unique=True))
def test_a_mount_names_a_volume_of_the_pod(volumes, mounts):
    pod = {"restartPolicy": "Never", "volumes": [{"name": v, "emptyDir": {}} for v in volumes],
           "containers": [{**CONTAINER, "volumeMounts": [{"name": m, "mountPath": f"/{m}"} for m in mounts]}]}
    assert len(e1014(jobset(pod))) == len([m for m in mounts if m not in volumes])


# A quantity written as an int, a string of an int, millis or a binary suffix; its amount.
AMOUNTS = st.integers(0, 4)
SPELLINGS = st.sampled_from(["int", "str", "milli", "Ki"])


def spell(n: int, how: str):
    return {"int": n, "str": str(n), "milli": f"{n * 1000}m", "Ki": f"{n}Ki"}[how]


def amount(n: int, how: str) -> Fraction:
    return Fraction(n * 1024) if how == "Ki" else Fraction(n)


@settings(max_examples=150)
@given(resource=st.sampled_from(["cpu", "memory", "google.com/tpu", "nvidia.com/gpu"]),
       request=st.one_of(st.none(), st.tuples(AMOUNTS, SPELLINGS)),
       limit=st.one_of(st.none(), st.tuples(AMOUNTS, SPELLINGS)))
@example(resource="google.com/tpu", request=(4, "int"), limit=None)   # the report
@example(resource="cpu", request=(2, "str"), limit=(1, "str"))        # the report
def test_requests_and_limits(resource, request, limit):
    """A request is at most its limit; an extended resource's limit is set and equal to its
    request (Kubernetes ValidateResourceRequirements)."""
    res = {}
    if request is not None:
        res["requests"] = {resource: spell(*request)}
    if limit is not None:
        res["limits"] = {resource: spell(*limit)}
    found = e1014(jobset({"restartPolicy": "Never", "containers": [{**CONTAINER, "resources": res}]}))
    extended = "/" in resource
    want = amount(*request) if request is not None else None
    cap = amount(*limit) if limit is not None else None
    refused = want is not None and ((extended and (cap is None or want != cap)) or (cap is not None and want > cap))
    assert bool(found) == refused, (res, found)


@pytest.mark.parametrize("text, value", [("500m", Fraction(1, 2)), ("16Gi", Fraction(16 * 2 ** 30)), ("1e3", 1000),
                                         ("2", 2), (".5", Fraction(1, 2)), ("1.5k", 1500), ("0.1", Fraction(1, 10)),
                                         ("x", None), ("1Gb", None), ("", None)])
def test_quantity(text, value):
    assert quantity(Str(text, SPAN)) == value


@given(key=st.sampled_from(["parallelism", "completions", "backoffLimit", "activeDeadlineSeconds"]),
       n=st.integers(-3, 3))
def test_job_counts(key, n):
    found = e1014(job({"restartPolicy": "Never"}, **{key: n}))
    assert bool(found) == (n < 0)   # validateJobSpec: ValidateNonnegativeField, activeDeadlineSeconds too


@pytest.mark.parametrize("mode", ["NonIndexed", "Indexed", "indexed", "Sometimes"])
def test_completion_mode(mode):
    assert bool(e1014(job({"restartPolicy": "Never"}, completionMode=mode))) == (mode not in ("NonIndexed", "Indexed"))


def test_the_new_users_job_has_seven_faults(tmp_path):
    import contextlib
    import io

    from rcpc.cli import main

    (tmp_path / "job.yaml").write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: llama-v6e}\nspec:\n  parallelism: 4\n  completions: 4\n"
        "  backoffLimit: -1\n  completionMode: Sometimes\n  template:\n    spec:\n      restartPolicy: Always\n"
        "      containers:\n      - name: maxtext\n        image: x\n        imagePullPolicy: Sometimes\n"
        "        resources:\n          requests: {google.com/tpu: 4, cpu: \"2\"}\n          limits: {cpu: \"1\"}\n"
        "        volumeMounts: [{name: missing-vol, mountPath: /dev/shm}]\n")
    err = io.StringIO()
    with contextlib.chdir(tmp_path), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["validate", "job.yaml"])
    assert code == 1 and err.getvalue().count("error[E1014]") == 7, err.getvalue()


_ABSENT = object()


def _with(d: dict, **fields) -> dict:
    return {**d, **{k: v for k, v in fields.items() if v is not _ABSENT}}


@settings(max_examples=150)
@given(in_jobset=st.booleans(), mode=st.sampled_from([_ABSENT, "Indexed", "NonIndexed"]),
       parallelism=st.sampled_from([_ABSENT, 4]), completions=st.sampled_from([_ABSENT, None, 4]),
       failure_policy=st.booleans(), restart=st.sampled_from([_ABSENT, "Never", "OnFailure"]))
@example(in_jobset=True, mode=_ABSENT, parallelism=4, completions=_ABSENT, failure_policy=False,
         restart="Never")  # the report: an Indexed Job without completions, created by no controller
@example(in_jobset=True, mode=_ABSENT, parallelism=4, completions=4, failure_policy=True,
         restart=_ABSENT)  # the report: the webhook's OnFailure with a podFailurePolicy
def test_what_the_job_controller_is_refused(in_jobset, mode, parallelism, completions, failure_policy, restart):
    """Kubernetes' batch validation of the Job a JobSet's controller creates from a replicated
    job (after the JobSet webhook's defaults: completionMode Indexed, restartPolicy OnFailure)
    or of a Job itself (after Kubernetes' defaults: parallelism and completions 1 when neither
    is set, a pod's restartPolicy Always): an Indexed Job needs completions, a podFailurePolicy
    needs restartPolicy Never, a Job's pods restart OnFailure or Never. A new user's JobSets
    broke the first two and passed ``rcpc validate``; their Jobs were never created."""
    pod = _with({"containers": [CONTAINER]}, restartPolicy=restart)
    spec = _with({"template": {"spec": pod}}, completionMode=mode, parallelism=parallelism, completions=completions)
    if failure_policy:
        spec["podFailurePolicy"] = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]}
    manifest = ({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
                 "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": spec}}]}} if in_jobset else
                {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": spec})
    # the values Kubernetes validates, defaults applied
    mode_ = mode if mode is not _ABSENT else ("Indexed" if in_jobset else "NonIndexed")
    completions_ = 1 if completions in (_ABSENT, None) and parallelism is _ABSENT else completions
    restart_ = restart if restart is not _ABSENT else ("OnFailure" if in_jobset else "Always")
    refused = []
    if mode_ == "Indexed" and completions_ in (_ABSENT, None):
        refused.append("completions")
    if restart_ == "Always":
        refused.append("restartPolicy")
    elif failure_policy and restart_ != "Never":
        refused.append("podFailurePolicy")
    found = e1014(manifest)
    assert len(found) == len(refused), (refused, found)
    for what, message in zip(refused, found):
        assert {"completions": "an Indexed Job needs completions", "restartPolicy": "gives no restartPolicy",
                "podFailurePolicy": "a Job with a podFailurePolicy runs its pods with restartPolicy Never"}[what] \
            in message


_TPU_SPELLINGS = st.sampled_from([lambda n: n, str, lambda n: f"{n * 1000}m", lambda n: f"{n}e0",
                                  lambda n: f"{n}.0", lambda n: f"{n / 1000:g}k"])


@given(chips=st.sampled_from([1, 2, 4, 8]), spell=_TPU_SPELLINGS, half=st.booleans())
@example(chips=4, spell=lambda n: f"{n * 1000}m", half=False)  # the report: 4000m refused as "request 0"
@example(chips=4, spell=str, half=True)  # "4500m": E1014, and not also E1006 "request 0"
def test_a_tpu_request_is_any_spelling_of_a_whole_number(chips, spell, half):
    """``google.com/tpu`` in any quantity spelling the API server reads (``4``, ``"4000m"``,
    ``"4e0"``) counts as that many chips (E1006 compares it with the host's 4); a fraction of a
    chip (``"4500m"``) is refused (an extended resource is a whole number: E1014), once: not
    also as a count of chips (E1006 said "request 0" to ``"4500m"``)."""
    amount = spell(chips) if not half else f"{chips * 1000 + 500}m"
    pod = {"restartPolicy": "Never", "nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu7x",
                                                      "cloud.google.com/gke-tpu-topology": "2x2x1"},
           "containers": [{**CONTAINER, "resources": {"limits": {"google.com/tpu": amount}}}]}
    found = [(d.code, d.message) for d in check_rules(value_of(jobset(pod)))]
    assert [c for c, _ in found if c == "E1014"] == (["E1014"] if half else []), found
    assert any(c == "E1006" for c, _ in found) == (not half and chips != 4), found  # one report of one fault
