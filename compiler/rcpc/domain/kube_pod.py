"""Kubernetes core validation of pod specs and Job specs (``E1014``): what the API server
refuses when the pod or Job is created, whatever schema the manifest has. For a JobSet, its
controller creates the Jobs: the JobSet is accepted, and these faults then leave it without
Jobs, so rcpc reports them at the JobSet.

Rules (Kubernetes ``pkg/apis/core/validation`` and ``pkg/apis/batch/validation``):

* a pod's ``restartPolicy`` is ``Always``, ``OnFailure`` or ``Never``; a Job's pods' is
  ``OnFailure`` or ``Never`` (``ValidateRestartPolicy``, ``validatePodTemplateSpec`` of a Job);
* a container's ``imagePullPolicy`` is ``Always``, ``Never`` or ``IfNotPresent``
  (``validatePullPolicy``);
* a container's resource request is at most its limit (``ValidateResourceRequirements``); an
  extended resource (a name with a domain outside ``kubernetes.io``, as ``google.com/tpu``)
  cannot be overcommitted: its limit is set and equal to its request (``validateContainerResourceName``,
  ``ValidateResourceRequirements``: "must be equal to ... limit", "Limit must be set"), and it
  is a whole number (``validateResourceQuantityValue``: "must be an integer"; ``4000m`` is 4);
* a volume mount names a volume of the pod (``ValidateVolumeMounts``: not found);
* a Job's ``parallelism``, ``completions`` and ``backoffLimit`` are not negative,
  ``activeDeadlineSeconds`` is positive, ``completionMode`` is ``NonIndexed`` or ``Indexed``
  (``validateJobSpec``); an ``Indexed`` Job sets ``completions`` ("when completion mode is
  Indexed"; with neither ``parallelism`` nor ``completions`` set, Kubernetes' defaulting sets
  both to 1, ``SetDefaults_Job``); a Job with a ``podFailurePolicy`` runs its pods with ``restartPolicy: Never``
  (``validatePodFailurePolicy``); a Job's pod template gives a ``restartPolicy`` (the pod
  default, ``Always``, is not one a Job's pods may have).

For the Job template of a JobSet's replicated job, the values are those the JobSet webhook
gives before the controller creates the Jobs (``jobset_webhook.go`` ``Default``): an unset
``completionMode`` is ``Indexed`` and an unset ``restartPolicy`` ``OnFailure``.

Values of the wrong type are left to the schema (``E1101``) or to other rules.
"""

from __future__ import annotations

import re
from fractions import Fraction

from rcpc.core.values import Dict, Float, Int, List, Str, text_of
from rcpc.domain.kube_paths import CONTAINER_LISTS, diag

RESTART_POLICIES = ("Always", "OnFailure", "Never")
JOB_RESTART_POLICIES = ("OnFailure", "Never")
PULL_POLICIES = ("Always", "Never", "IfNotPresent")
COMPLETION_MODES = ("NonIndexed", "Indexed")
_SUFFIX = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60,
           "n": Fraction(1, 10 ** 9), "u": Fraction(1, 10 ** 6), "m": Fraction(1, 1000), "": 1,
           "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15, "E": 10 ** 18}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?")


def quantity(v) -> Fraction | None:
    """The amount of a resource quantity (``4``, ``"500m"``, ``"16Gi"``, ``"1e3"``;
    apimachinery ``resource.ParseQuantity``), exactly; None when ``v`` is not one."""
    if type(v) is Int:
        return Fraction(v.value)
    if type(v) is Float:
        return Fraction(v.value)
    if type(v) is not Str:
        return None
    m = _QUANTITY.fullmatch(v.value)
    if m is None:
        return None
    number, suffix = Fraction(m.group(1)), m.group(2) or ""
    if suffix[:1] in ("e", "E"):
        exponent = int(suffix[1:])
        return number * Fraction(10) ** exponent if abs(exponent) <= 64 else None
    return number * _SUFFIX[suffix]


def extended(resource: str) -> bool:
    """Whether ``resource`` is an extended resource (a domain-prefixed name outside
    ``kubernetes.io``, such as ``google.com/tpu``): never overcommitted."""
    domain, slash, _ = resource.partition("/")
    return bool(slash) and domain != "kubernetes.io" and not domain.endswith(".kubernetes.io") \
        and not resource.startswith("requests.")


def check_pod(pod: Dict, path: tuple, kind: str, in_job: bool, out: list) -> None:
    """The rules on one pod spec at ``path`` (``in_job``: the pod template of a Job's spec)."""
    allowed = JOB_RESTART_POLICIES if in_job else RESTART_POLICIES
    _one_of(pod, "restartPolicy", allowed, path, kind, out,
            "a Job's pods restart OnFailure or Never" if in_job else None)
    volumes = pod.items.get("volumes")
    names = {v.items["name"].value for v in (volumes.items if type(volumes) is List else ())
             if type(v) is Dict and type(v.items.get("name")) is Str}
    for key in CONTAINER_LISTS:
        group = pod.items.get(key)
        for i, c in enumerate(group.items if type(group) is List else ()):
            if type(c) is Dict:
                _check_container(c, path + (key, i), kind, names, out)


def _check_container(c: Dict, path: tuple, kind: str, volumes: set, out: list) -> None:
    _one_of(c, "imagePullPolicy", PULL_POLICIES, path, kind, out, None)
    mounts = c.items.get("volumeMounts")
    for i, m in enumerate(mounts.items if type(mounts) is List else ()):
        name = m.items.get("name") if type(m) is Dict else None
        if type(name) is Str and name.value not in volumes:
            out.append(diag("E1014", kind, path + ("volumeMounts", i, "name"), f"volume mount {name.value!r} "
                            "names no volume of the pod", name.span,
                            hint=f'add {{"name": "{name.value}", ...}} to the pod\'s volumes'))
    res = c.items.get("resources")
    limits = res.items.get("limits") if type(res) is Dict else None
    requests = res.items.get("requests") if type(res) is Dict else None
    limits = limits.items if type(limits) is Dict else {}
    for group, amounts in (("limits", limits), ("requests", requests.items if type(requests) is Dict else {})):
        for name, value in amounts.items():
            q = quantity(value)
            if q is not None and extended(name) and q.denominator != 1:
                out.append(diag("E1014", kind, path + ("resources", group, name), f"{name} is {text_of(value)}: an "
                                "extended resource is a whole number", value.span, hint="give a whole number"))
    for name, value in (requests.items.items() if type(requests) is Dict else ()):
        want, cap = quantity(value), quantity(limits.get(name))
        where = path + ("resources", "requests", name)
        if want is None:
            continue
        if extended(name) and name not in limits:
            out.append(diag("E1014", kind, where, f"{name} is requested without a limit: an extended resource "
                            "cannot be overcommitted, its limit must be set", value.span,
                            hint=f"set resources.limits {name} to the same value (or only the limit)"))
        elif cap is not None and extended(name) and want != cap:
            out.append(diag("E1014", kind, where, f"the {name} request must equal its limit (an extended "
                            "resource cannot be overcommitted)", value.span,
                            related=(("limit", limits[name].span),), hint="give the request and the limit one value"))
        elif cap is not None and want > cap:
            out.append(diag("E1014", kind, where, f"the {name} request is more than its limit", value.span,
                            related=(("limit", limits[name].span),), hint="a request is at most its limit"))


def check_job(job: Dict, path: tuple, kind: str, out: list, jobset: bool = False) -> None:
    """The rules on one Job spec at ``path`` (its pod template is checked by :func:`check_pod`);
    ``jobset``: the Job template of a JobSet's replicated job (the webhook's defaults apply)."""
    for key in ("parallelism", "completions", "backoffLimit"):
        v = job.items.get(key)
        if type(v) is Int and v.value < 0:
            out.append(diag("E1014", kind, path + (key,), f"{key} is {v.value}: it must not be negative",
                            v.span, hint=f"give 0 or more, or leave {key} out for Kubernetes' default"))
    v = job.items.get("activeDeadlineSeconds")
    if type(v) is Int and v.value <= 0:
        out.append(diag("E1014", kind, path + ("activeDeadlineSeconds",), f"activeDeadlineSeconds is {v.value}: "
                        "it must be positive", v.span, hint="leave it out for no deadline"))
    _one_of(job, "completionMode", COMPLETION_MODES, path, kind, out, None)
    mode = job.items.get("completionMode")
    indexed = mode.value == "Indexed" if type(mode) is Str else jobset
    if indexed and type(job.items.get("completions")) is not Int and type(job.items.get("parallelism")) is Int:
        why = "" if type(mode) is Str else ": the JobSet webhook makes a replicated job's Job Indexed"
        out.append(diag("E1014", kind, path + ("completions",), f"an Indexed Job needs completions{why}",
                        (mode if type(mode) is Str else job.items["parallelism"]).span,
                        hint="set completions (for a TPU slice: one pod a host, completions = parallelism)"))
    template = job.items.get("template")
    pod = template.items.get("spec") if type(template) is Dict else None
    if type(pod) is not Dict:
        return
    restart = pod.items.get("restartPolicy")
    at = path + ("template", "spec", "restartPolicy")
    if type(restart) is not Str and not jobset:
        out.append(diag("E1014", kind, at, "the pod template gives no restartPolicy: a pod's default, Always, "
                        "is not one a Job's pods may have", pod.span, hint='set restartPolicy: "Never" (or "OnFailure")'))
        return
    policy = job.items.get("podFailurePolicy")
    effective = restart.value if type(restart) is Str else "OnFailure"
    if type(policy) is Dict and effective != "Never":
        why = "" if type(restart) is Str else " (the JobSet webhook sets OnFailure when it is unset)"
        out.append(diag("E1014", kind, at, f"a Job with a podFailurePolicy runs its pods with restartPolicy Never, "
                        f"not {effective}{why}", (restart if type(restart) is Str else policy).span,
                        related=(("podFailurePolicy", policy.span),), hint='set restartPolicy: "Never"'))


def _one_of(d: Dict, key: str, allowed: tuple, path: tuple, kind: str, out: list, why: str | None) -> None:
    v = d.items.get(key)
    if type(v) is Str and v.value not in allowed:
        out.append(diag("E1014", kind, path + (key,), f"{key} {v.value!r} is not one of "
                        f"{', '.join(allowed)}" + (f" ({why})" if why else ""), v.span,
                        hint=f"write one of {', '.join(allowed)}"))
