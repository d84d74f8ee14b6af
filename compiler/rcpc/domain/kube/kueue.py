"""Kueue's admission rules on the labels and annotations of a job it queues (``E1017``),
as Kueue's webhooks apply them when a Job or JobSet is created (kubernetes-sigs/kueue
``pkg/controller/jobframework/validation.go``: ``ValidateJobOnCreate``,
``validateCreateForQueueName``, ``ValidateQueueName``, ``ValidateLabelAsCRDName``,
``ValidateAnnotationAsCRDName``, ``validateCreateForMaxExecTime``):

* the ``kueue.x-k8s.io/queue-name`` label (and the annotation of that name, its older
  spelling) names a LocalQueue: a DNS-1123 subdomain;
* the ``kueue.x-k8s.io/prebuilt-workload-name`` label names a Workload: a DNS-1123 subdomain;
* the ``kueue.x-k8s.io/max-exec-time-seconds`` label is an integer above 0 (Go's
  ``strconv.Atoi``: an optional sign and decimal digits, within 64 bits).

Only the kinds whose webhooks call these are checked (:data:`KINDS`: batch/v1 Job, JobSet);
on another kind the labels are inert data. A label value that is not a valid label value at
all is ``E1003`` already and is not reported twice.
"""

from __future__ import annotations

from rcpc.core.diagnostics import Diagnostic
from rcpc.core.patterns import LazyPattern
from rcpc.core.values import Dict, Str
from rcpc.domain.kube import validation as kv
from rcpc.domain.kube.paths import diag

QUEUE_NAME = "kueue.x-k8s.io/queue-name"
PREBUILT_WORKLOAD = "kueue.x-k8s.io/prebuilt-workload-name"
MAX_EXEC_TIME = "kueue.x-k8s.io/max-exec-time-seconds"
KINDS = frozenset(("Job", "JobSet"))
_ATOI = LazyPattern(r"[+-]?[0-9]+\Z")


def check(data: Dict, kind: str) -> list[Diagnostic]:
    """The Kueue rules a manifest of ``kind`` breaks (see the module docstring)."""
    if kind not in KINDS:
        return []
    out: list[Diagnostic] = []
    md = data.items.get("metadata")
    for where in ("labels", "annotations"):
        found = md.items.get(where) if type(md) is Dict else None
        if type(found) is not Dict:
            continue
        names = (QUEUE_NAME, PREBUILT_WORKLOAD) if where == "labels" else (QUEUE_NAME,)
        for key in names:
            value = found.items.get(key)
            if type(value) is Str and kv.dns1123_subdomain(value.value) and not (where == "labels" and
                                                                                 kv.label_value(value.value)):
                what = "LocalQueue" if key == QUEUE_NAME else "Workload"
                out.append(diag("E1017", kind, ("metadata", where, key), f"{key} {value.value!r} names a {what}: "
                                f"{kv.dns1123_subdomain(value.value)[0]}", value.span,
                                hint=f"a {what} name is lower-case letters, digits, '-' and '.' (Kueue's webhook "
                                     "refuses the object)"))
        value = found.items.get(MAX_EXEC_TIME) if where == "labels" else None
        if type(value) is Str and not (_ATOI.match(value.value) and 0 < int(value.value) < 2 ** 63):
            out.append(diag("E1017", kind, ("metadata", where, MAX_EXEC_TIME), f"{MAX_EXEC_TIME} {value.value!r} is "
                            "not a number of seconds above 0", value.span, hint='write the seconds, such as "3600"'))
    return out
