"""Kubernetes core validation of pod specs and Job specs (``E1014``): what the API server
refuses when the pod or Job is created, whatever schema the manifest has. For a JobSet, its
controller creates the Jobs: the JobSet is accepted, and these faults then leave it without
Jobs, so rcpc reports them at the JobSet.

Rules (Kubernetes ``pkg/apis/core/validation`` and ``pkg/apis/batch/validation``):

* a pod spec has containers (``validateContainers``: Required);
* a pod's ``restartPolicy`` is ``Always``, ``OnFailure`` or ``Never``; a Job's pods' is
  ``OnFailure`` or ``Never`` (``ValidateRestartPolicy``, ``validatePodTemplateSpec`` of a Job);
* each container: :mod:`rcpc.domain.kube.container` (name and image required, ports, env,
  ``imagePullPolicy``, resources, volume mounts);
* tolerations, ``dnsPolicy`` (and ``hostNetwork`` without the DNS policy that goes with it),
  volume names, volume mounts' names and paths: :mod:`rcpc.domain.kube.podspec`;
* ``$(VAR)`` references Kubernetes leaves as written (warnings): :mod:`rcpc.domain.kube.references`;
* no two ports of the pod's containers (or of one init container) share a protocol, host IP
  and host port (``checkHostPortConflicts``);
* a Job's ``parallelism``, ``completions``, ``activeDeadlineSeconds``, ``backoffLimit``,
  ``backoffLimitPerIndex``, ``maxFailedIndexes`` and ``ttlSecondsAfterFinished`` are not
  negative (``ValidateNonnegativeField``: the API reference calls ``activeDeadlineSeconds``
  "positive", and the API server accepts 0), ``completionMode`` is ``NonIndexed`` or ``Indexed``
  (``validateJobSpec``); an ``Indexed`` Job sets ``completions`` ("when completion mode is
  Indexed"; with neither ``parallelism`` nor ``completions`` set, Kubernetes' defaulting sets
  both to 1, ``SetDefaults_Job``); ``backoffLimitPerIndex`` and ``maxFailedIndexes`` need the
  ``Indexed`` mode ("requires indexed completion mode"), ``maxFailedIndexes`` needs
  ``backoffLimitPerIndex``; a Job's pod template gives a ``restartPolicy`` (the pod default,
  ``Always``, is not one a Job's pods may have);
* a Job's ``podFailurePolicy`` (``validatePodFailurePolicy``): runs its pods with
  ``restartPolicy: Never``; has at most 20 rules; each rule (``validatePodFailurePolicyRule``)
  has an ``action`` (``Count``, ``FailIndex``, ``FailJob``, ``Ignore``; ``FailIndex`` only with
  ``backoffLimitPerIndex``) and exactly one of ``onExitCodes`` (set) and ``onPodConditions``
  (a non-empty list: XPK's ``onPodConditions: []`` beside ``onExitCodes`` is accepted);
  ``onExitCodes`` (``validatePodFailurePolicyRuleOnExitCodes``) has an operator ``In`` or
  ``NotIn``, a ``containerName`` (when given) of one of the template's containers or init
  containers, 1 to 255 ``values``, unique ("Duplicate value"; for a JobSet its CRD's list type
  reports it, E1010), ascending ("must be ordered"), no 0 with ``In``;
  ``onPodConditions`` (``validatePodFailurePolicyRuleOnPodConditions``) has at most 20
  patterns, each a ``type`` that is a qualified name and a ``status`` ``True``, ``False`` or
  ``Unknown`` (empty: ``True``, ``SetDefaults_Job``).

For the Job template of a JobSet's replicated job, the values are those the JobSet webhook
gives before the controller creates the Jobs (``jobset_webhook.go`` ``Default``): an unset
``completionMode`` is ``Indexed`` and an unset ``restartPolicy`` ``OnFailure``.

Values of the wrong type are left to the schema (``E1101``) or to other rules.
"""

from __future__ import annotations

from rcpc.core.values import Bool, Dict, Int, List, Null, Str
from rcpc.domain.kube import validation as kv
from rcpc.domain.kube.container import check_container
from rcpc.domain.kube.paths import CONTAINER_LISTS, diag
from rcpc.domain.kube.podspec import check_podspec
from rcpc.domain.kube.references import check_references

RESTART_POLICIES = ("Always", "OnFailure", "Never")
JOB_RESTART_POLICIES = ("OnFailure", "Never")
COMPLETION_MODES = ("NonIndexed", "Indexed")
# batch validation: validatePodFailurePolicy and its rules
FAILURE_ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
EXIT_CODE_OPERATORS = ("In", "NotIn")
CONDITION_STATUSES = ("False", "True", "Unknown")
MAX_FAILURE_RULES = 20          # maxPodFailurePolicyRules
MAX_EXIT_CODES = 255            # maxPodFailurePolicyOnExitCodesValues
MAX_CONDITION_PATTERNS = 20     # maxPodFailurePolicyOnPodConditionsPatterns


def check_pod(pod: Dict, path: tuple, kind: str, in_job: bool, out: list) -> None:
    """The rules on one pod spec at ``path`` (``in_job``: the pod template of a Job's spec)."""
    allowed = JOB_RESTART_POLICIES if in_job else RESTART_POLICIES
    _one_of(pod, "restartPolicy", allowed, path, kind, out,
            "a Job's pods restart OnFailure or Never" if in_job else None)
    volumes = pod.items.get("volumes")
    names = {v.items["name"].value for v in (volumes.items if type(volumes) is List else ())
             if type(v) is Dict and type(v.items.get("name")) is Str}
    _check_host_ports(pod, path, kind, out)
    check_podspec(pod, path, kind, out)
    if not in_job:  # a Job's pods: check_job, which knows whether the Job is Indexed
        check_references(pod, path, kind, False, out)
    host_network = pod.items.get("hostNetwork")
    host_network = type(host_network) is Bool and host_network.value
    for key in CONTAINER_LISTS:
        group = pod.items.get(key)
        for i, c in enumerate(group.items if type(group) is List else ()):
            if type(c) is Dict:
                check_container(c, path + (key, i), kind, names, host_network, out)


def check_containers_given(pod: Dict, path: tuple, kind: str, out: list) -> None:
    """``validateContainers``: a pod spec has at least one container ("Required"; a null or
    an empty list is none)."""
    containers = pod.items.get("containers")
    if type(containers) is List and containers.items:
        return
    if containers is not None and type(containers) not in (List, Null):
        return  # the wrong type: the schema's to report
    out.append(diag("E1014", kind, path + ("containers",), "the pod has no containers (Required: a pod runs at "
                    "least one)", (containers or pod).span, hint='add "containers": [{"name": "...", "image": "..."}]'))


def _check_host_ports(pod: Dict, path: tuple, kind: str, out: list) -> None:
    """``checkHostPortConflicts``: no two ports with one protocol (empty: ``TCP``), host IP and
    host port (other than 0) among the pod's containers, nor within one init container (init
    containers run one by one)."""
    groups = [("containers", None)]
    init = pod.items.get("initContainers")
    groups += [("initContainers", i) for i in range(len(init.items) if type(init) is List else 0)]
    for key, only in groups:
        group = pod.items.get(key)
        seen: dict = {}
        for i, c in enumerate(group.items if type(group) is List else ()):
            ports = c.items.get("ports") if type(c) is Dict and (only is None or i == only) else None
            for j, port in enumerate(ports.items if type(ports) is List else ()):
                host = port.items.get("hostPort") if type(port) is Dict else None
                if type(host) is not Int or host.value == 0:
                    continue
                proto, ip = port.items.get("protocol"), port.items.get("hostIP")
                at = ((proto.value or "TCP") if type(proto) is Str else "TCP", ip.value if type(ip) is Str else "",
                      host.value)
                if at in seen:
                    out.append(diag("E1014", kind, path + (key, i, "ports", j, "hostPort"), f"host port "
                                    f"{at[0]}/{at[1]}/{at[2]} is used twice in the pod (Duplicate value)", host.span,
                                    related=(("first used here", seen[at]),),
                                    hint="give each port a host port of its own, or leave hostPort out"))
                seen.setdefault(at, host.span)


def check_job(job: Dict, path: tuple, kind: str, out: list, jobset: bool = False, core_lists: bool = True) -> None:
    """The rules on one Job spec at ``path`` (its pod template is checked by :func:`check_pod`);
    ``jobset``: the Job template of a JobSet's replicated job (the webhook's defaults apply);
    ``core_lists``: report a repeated exit code (for a JobSet, its CRD's list type does: E1010)."""
    policy = job.items.get("podFailurePolicy")
    if type(policy) is Dict and type(policy.items.get("rules")) is List:
        _check_failure_policy(job, policy.items["rules"], path + ("podFailurePolicy", "rules"), kind, core_lists, out)
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "backoffLimitPerIndex",
                "maxFailedIndexes", "ttlSecondsAfterFinished"):
        v = job.items.get(key)
        if type(v) is Int and v.value < 0:
            out.append(diag("E1014", kind, path + (key,), f"{key} is {v.value}: it must not be negative",
                            v.span, hint=f"give 0 or more, or leave {key} out for Kubernetes' default"))
    _one_of(job, "completionMode", COMPLETION_MODES, path, kind, out, None)
    mode = job.items.get("completionMode")
    indexed = mode.value == "Indexed" if type(mode) is Str else jobset
    for key in ("backoffLimitPerIndex", "maxFailedIndexes"):
        v = job.items.get(key)
        if type(v) is Int and not indexed and (type(mode) is not Str or mode.value in COMPLETION_MODES):
            out.append(diag("E1014", kind, path + (key,), f"{key} requires the Indexed completion mode",
                            v.span, hint='set completionMode: "Indexed" (and completions)'))
    if type(job.items.get("maxFailedIndexes")) is Int and _absent(job, "backoffLimitPerIndex"):
        out.append(diag("E1014", kind, path + ("backoffLimitPerIndex",), "maxFailedIndexes requires "
                        "backoffLimitPerIndex to be set", job.items["maxFailedIndexes"].span,
                        hint="set backoffLimitPerIndex, or leave maxFailedIndexes out"))
    if indexed and type(job.items.get("completions")) is not Int and type(job.items.get("parallelism")) is Int:
        why = "" if type(mode) is Str else ": the JobSet webhook makes a replicated job's Job Indexed"
        out.append(diag("E1014", kind, path + ("completions",), f"an Indexed Job needs completions{why}",
                        (mode if type(mode) is Str else job.items["parallelism"]).span,
                        hint="set completions (for a TPU slice: one pod a host, completions = parallelism)"))
    template = job.items.get("template")
    pod = template.items.get("spec") if type(template) is Dict else None
    if type(pod) is not Dict:
        return
    check_references(pod, path + ("template", "spec"), kind, indexed, out)
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


def _check_failure_policy(job: Dict, rules: List, path: tuple, kind: str, core_lists: bool, out: list) -> None:
    """``validatePodFailurePolicy``: at most 20 rules, each checked by :func:`_check_failure_rule`
    against the names of the pod template's containers and init containers."""
    if len(rules.items) > MAX_FAILURE_RULES:
        out.append(diag("E1014", kind, path, f"podFailurePolicy has {len(rules.items)} rules: at most "
                        f"{MAX_FAILURE_RULES} are allowed", rules.span, hint="merge rules with the same action"))
    template = job.items.get("template")
    pod = template.items.get("spec") if type(template) is Dict else None
    names = set()
    for key in ("containers", "initContainers"):
        group = pod.items.get(key) if type(pod) is Dict else None
        for c in group.items if type(group) is List else ():
            name = c.items.get("name") if type(c) is Dict else None
            names.add(name.value if type(name) is Str else "")
    per_index = not _absent(job, "backoffLimitPerIndex")
    for i, rule in enumerate(rules.items):
        if type(rule) is Dict:
            _check_failure_rule(rule, path + (i,), kind, names, per_index, core_lists, out)


def _check_failure_rule(rule: Dict, path: tuple, kind: str, names: set, per_index: bool, core_lists: bool,
                        out: list) -> None:
    """``validatePodFailurePolicyRule``: the action, and exactly one of ``onExitCodes`` (set)
    and ``onPodConditions`` (a non-empty list)."""
    action = rule.items.get("action")
    if _absent(rule, "action") or (type(action) is Str and not action.value):
        out.append(diag("E1014", kind, path + ("action",), "the rule has no action (Required)",
                        action.span if type(action) is Str else rule.span,
                        hint=f"give one of {', '.join(FAILURE_ACTIONS)}"))
    elif type(action) is Str and action.value == "FailIndex" and not per_index:
        out.append(diag("E1014", kind, path + ("action",), "action FailIndex requires backoffLimitPerIndex to be set",
                        action.span, hint="set backoffLimitPerIndex in the Job spec, or use FailJob"))
    elif type(action) is Str and action.value not in FAILURE_ACTIONS:
        out.append(diag("E1014", kind, path + ("action",), f"action {action.value!r} is not one of "
                        f"{', '.join(FAILURE_ACTIONS)}", action.span, hint=f"write one of {', '.join(FAILURE_ACTIONS)}"))
    codes = rule.items.get("onExitCodes")
    conditions = rule.items.get("onPodConditions")
    has_codes = not _absent(rule, "onExitCodes")
    has_conditions = type(conditions) is List and len(conditions.items) > 0
    if type(codes) is Dict:
        _check_exit_codes(codes, path + ("onExitCodes",), kind, names, core_lists, out)
    if has_conditions:
        _check_conditions(conditions, path + ("onPodConditions",), kind, out)
    if has_codes and has_conditions:
        out.append(diag("E1014", kind, path, "specifying both onExitCodes and onPodConditions is not supported",
                        rule.span, hint="split it into two rules"))
    elif not has_codes and not has_conditions and (conditions is None or type(conditions) in (Null, List)):
        out.append(diag("E1014", kind, path, "the rule needs one of onExitCodes and onPodConditions (a rule "
                        "with neither, or with an empty onPodConditions, is refused)", rule.span,
                        hint='add onExitCodes: {"operator": "In", "values": [...]} or onPodConditions'))


def _check_exit_codes(codes: Dict, path: tuple, kind: str, names: set, core_lists: bool, out: list) -> None:
    """``validatePodFailurePolicyRuleOnExitCodes``: operator In or NotIn; a containerName of the
    pod; 1 to 255 values, unique, ascending, no 0 with In."""
    op = codes.items.get("operator")
    if _absent(codes, "operator") or (type(op) is Str and not op.value):
        out.append(diag("E1014", kind, path + ("operator",), "onExitCodes has no operator (Required)",
                        op.span if type(op) is Str else codes.span, hint="give In or NotIn"))
    elif type(op) is Str and op.value not in EXIT_CODE_OPERATORS:
        out.append(diag("E1014", kind, path + ("operator",), f"operator {op.value!r} is not one of In, NotIn",
                        op.span, hint="write In or NotIn"))
    name = codes.items.get("containerName")
    if type(name) is Str and name.value not in names:
        known = ", ".join(sorted(n for n in names if n)) or "none"
        out.append(diag("E1014", kind, path + ("containerName",), f"containerName {name.value!r} names no container "
                        "or init container of the pod template", name.span,
                        hint=f"name one of the pod's containers ({known}), or leave containerName out for any"))
    values = codes.items.get("values")
    if _absent(codes, "values") or (type(values) is List and not values.items):
        out.append(diag("E1014", kind, path + ("values",), "onExitCodes needs at least one value",
                        values.span if type(values) is List else codes.span, hint="list the exit codes, such as [1]"))
        return
    if type(values) is not List:
        return
    if len(values.items) > MAX_EXIT_CODES:
        out.append(diag("E1014", kind, path + ("values",), f"onExitCodes has {len(values.items)} values: at most "
                        f"{MAX_EXIT_CODES} are allowed", values.span, hint="use the other operator with fewer values"))
    seen: dict = {}
    ordered = True
    previous = None
    for j, v in enumerate(values.items):
        if type(v) is not Int:
            previous = None
            continue
        if v.value == 0 and type(op) is Str and op.value == "In":
            out.append(diag("E1014", kind, path + ("values", j), "exit code 0 must not be listed with the In "
                            "operator", v.span, hint="a pod that exits 0 succeeded; leave 0 out"))
        if v.value in seen and core_lists:
            out.append(diag("E1014", kind, path + ("values", j), f"exit code {v.value} is listed twice (Duplicate "
                            "value)", v.span, related=(("first listed here", seen[v.value]),),
                            hint="list each exit code once"))
        seen.setdefault(v.value, v.span)
        if previous is not None and previous > v.value:
            ordered = False
        previous = v.value
    if not ordered:
        out.append(diag("E1014", kind, path + ("values",), "onExitCodes values must be ordered (ascending)",
                        values.span, hint=f"write {sorted(seen)}"))


def _check_conditions(patterns: List, path: tuple, kind: str, out: list) -> None:
    """``validatePodFailurePolicyRuleOnPodConditions``: at most 20 patterns, each a condition
    type that is a qualified name and a status True, False or Unknown (empty: True,
    ``SetDefaults_Job``)."""
    if len(patterns.items) > MAX_CONDITION_PATTERNS:
        out.append(diag("E1014", kind, path, f"onPodConditions has {len(patterns.items)} patterns: at most "
                        f"{MAX_CONDITION_PATTERNS} are allowed", patterns.span, hint="split the rule"))
    for j, p in enumerate(patterns.items):
        if type(p) is not Dict:
            continue
        t = p.items.get("type")
        problems = kv.qualified_name(t.value) if type(t) is Str else ["is required"] if _absent(p, "type") else []
        if problems:
            out.append(diag("E1014", kind, path + (j, "type"), f"condition type {getattr(t, 'value', '')!r} is not "
                            f"valid: {problems[0]}", t.span if type(t) is Str else p.span,
                            hint="give a pod condition type, such as DisruptionTarget"))
        status = p.items.get("status")
        if type(status) is Str and status.value and status.value not in CONDITION_STATUSES:
            out.append(diag("E1014", kind, path + (j, "status"), f"status {status.value!r} is not one of "
                            f"{', '.join(CONDITION_STATUSES)}", status.span,
                            hint=f"write one of {', '.join(CONDITION_STATUSES)}"))


def _absent(d: Dict, key: str) -> bool:
    v = d.items.get(key)
    return v is None or type(v) is Null


def _one_of(d: Dict, key: str, allowed: tuple, path: tuple, kind: str, out: list, why: str | None) -> None:
    v = d.items.get(key)
    if type(v) is Str and v.value not in allowed:
        out.append(diag("E1014", kind, path + (key,), f"{key} {v.value!r} is not one of "
                        f"{', '.join(allowed)}" + (f" ({why})" if why else ""), v.span,
                        hint=f"write one of {', '.join(allowed)}"))
