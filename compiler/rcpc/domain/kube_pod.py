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
  ``ValidateResourceRequirements``: "must be equal to ... limit", "Limit must be set");
* a volume mount names a volume of the pod (``ValidateVolumeMounts``: not found);
* a Job's ``parallelism``, ``completions`` and ``backoffLimit`` are not negative,
  ``activeDeadlineSeconds`` is positive, ``completionMode`` is ``NonIndexed`` or ``Indexed``
  (``validateJobSpec``).

Values of the wrong type are left to the schema (``E1101``) or to other rules.
"""

from __future__ import annotations

import re
from fractions import Fraction

from rcpc.core.values import Dict, Float, Int, List, Str
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


def check_job(job: Dict, path: tuple, kind: str, out: list) -> None:
    """The rules on one Job spec at ``path`` (its pod template is checked by :func:`check_pod`)."""
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


def _one_of(d: Dict, key: str, allowed: tuple, path: tuple, kind: str, out: list, why: str | None) -> None:
    v = d.items.get(key)
    if type(v) is Str and v.value not in allowed:
        out.append(diag("E1014", kind, path + (key,), f"{key} {v.value!r} is not one of "
                        f"{', '.join(allowed)}" + (f" ({why})" if why else ""), v.span,
                        hint=f"write one of {', '.join(allowed)}"))
