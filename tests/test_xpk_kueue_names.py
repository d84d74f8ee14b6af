"""Names XPK and Kueue refuse (issue 38, kind 5).

* ``xpk_workload_create`` (@rcpc//maxtext_tpu.rcp) refuses a workload name XPK's
  ``workload_name_type`` (AI-Hypercomputer/xpk ``src/xpk/parser/validators.py``) refuses:
  ``re.fullmatch(r'[a-z]([-a-z0-9]*[a-z0-9])?', name)`` and at most 40 characters. The oracle
  is that code's rule, the names near its limits (39, 40, 41 characters; each end; each
  character class).
* Kueue's webhook (kubernetes-sigs/kueue ``pkg/controller/jobframework/validation.go``)
  refuses a ``kueue.x-k8s.io/queue-name`` label or annotation that is not a DNS-1123 subdomain
  (E1017)."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.conftest import Ws
from tests.test_jobset_gates_cel import jobset_of, validate

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def xpk_accepts(name: str) -> bool:
    match = re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name)
    return match is not None and len(match.group(0)) <= 40


NAMES = st.one_of(
    st.builds(lambda n, c: c * n, st.integers(38, 42), st.sampled_from(["a", "a-", "1"])),
    st.text(alphabet="az09-_.A", max_size=6),
    st.sampled_from(["", "a", "llama-70b-0", "Llama_70b", "-a", "a-", "0a", "a" * 40, "a" * 41, "é"]))


@SETTINGS
@given(name=NAMES)
@example(name="a" * 41)                  # the issue's: one over XPK's 40
@example(name="llama-70b-0")
@example(name="user-deepseekv3-671b-4096-fsdp-20250101-1200")   # a shell recipe's printf %.26s + date: 44
def test_xpk_workload_create_refuses_what_xpk_refuses(tmp_path_factory, name):
    ws = Ws(tmp_path_factory.mktemp("ws"))
    ws.write("recipes/r.rcp", 'load("@rcpc//maxtext_tpu.rcp", "xpk_workload_create")\n'
             'NAME = param(str, default = "w")\n'
             'command_file(name = "launch", argv = xpk_workload_create("c", "p", "z", "tpu7x-4x4x4", "img", NAME, '
             '"echo"))\n')
    if xpk_accepts(name):
        ws.build(sets=[f"NAME={name}"])
    else:
        f = ws.fails(sets=[f"NAME={name}"])
        assert f.code == "E0790" and f"XPK refuses the workload name '{name}'" in f.message


QUEUES = st.one_of(st.sampled_from(["multislice-queue", "Multislice_Queue", "a.b", "a..b", "-a", "a" * 253, "a" * 254,
                                    ""]), st.text(alphabet="az09-._A", min_size=1, max_size=6))


def is_subdomain(s: str) -> bool:
    return len(s) <= 253 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", s) is not None


def is_label_value(s: str) -> bool:
    return len(s) <= 63 and re.fullmatch(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?", s) is not None


@settings(max_examples=60, deadline=None)
@given(queue=QUEUES, where=st.sampled_from(["labels", "annotations"]), kind=st.sampled_from(["JobSet", "Job", "Pod"]))
@example(queue="Multislice_Queue", where="labels", kind="JobSet")    # the issue's
@example(queue="multislice-queue", where="labels", kind="JobSet")    # XPK's
def test_kueue_queue_name(queue, where, kind):
    """E1017 for a queue name that is not a DNS-1123 subdomain on a Job or JobSet (Kueue's
    webhooks); a label value that is not one at all is E1003 already, reported once."""
    meta = {"name": "x", where: {"kueue.x-k8s.io/queue-name": queue}}
    if kind == "JobSet":
        manifest = jobset_of({}, [{"name": "w"}]) | {"metadata": meta}
    else:
        pod = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}
        manifest = {"apiVersion": "batch/v1" if kind == "Job" else "v1", "kind": kind, "metadata": meta,
                    "spec": {"template": {"spec": pod}} if kind == "Job" else pod}
    out = validate(manifest)
    found = re.findall(r"error\[(E1003|E1017)\]", out)
    want = []
    if where == "labels" and not is_label_value(queue):
        want = ["E1003"]
    elif kind != "Pod" and queue and not is_subdomain(queue):
        want = ["E1017"]
    elif kind != "Pod" and queue == "":
        want = ["E1017"]
    assert found == want, out
