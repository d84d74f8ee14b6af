"""The JobSet controller's admission rules and the names it derives, modelled on
``../shared/data/jobset/jobset_webhook.go`` and ``pod_webhook.go`` (kubernetes-sigs/jobset
``pkg/webhooks/`` at 08dfbdfd) and the controller's naming (``pkg/util/placement``
``GenJobName``/``GenPodName``, ``pkg/controllers`` ``coordinatorEndpoint``, ``GetSubdomain``,
``labelAndAnnotateObject``).

:func:`default` is the mutating webhook's ``Default`` on plain data; :func:`check` is
``ValidateCreate`` on a manifest value, run on what ``Default`` and the CRD's structural
defaults would give (``replicas`` 1, ``groupName`` ``default``, ``completionMode``
``Indexed``, rule names ``failurePolicyRule<i>``). Each finding is a diagnostic at the recipe
(or YAML) span of the value to change:

* ``E1002`` a name the controller derives is not what Kubernetes accepts: child Job names
  ``<jobset>-<job>-<i>`` and pod names ``<jobset>-<job>-<i>-<j>-xxxxx`` (RFC 1035 labels),
  the headless Service ``spec.network.subdomain`` (or the JobSet name), group names;
* ``E1003`` a label value the controller writes is not a valid label value (the coordinator
  endpoint ``<jobset>-<job>-<i>-<j>.<subdomain>``, the replicated job name);
* ``E1009`` the exclusive-topology annotation is not a label key (the pod webhook makes it
  the ``topologyKey`` of the pods' affinity);
* ``E1011`` any other webhook rule: failure-policy rule names (length, pattern, unique),
  target replicated jobs and job failure reasons, ``dependsOn``, success-policy targets,
  coordinator indices, ``spec.managedBy``, replicas × parallelism, volume claim policies;
  and the rules behind JobSet's feature gates (``pkg/features/features.go``; the alpha gates
  are off unless the cluster's controller runs with them: ``jobset_feature_gates`` in
  rcp.toml names them): the ``RestartJob`` and ``RestartJobAndIgnoreMaxRestarts`` actions
  need ``RestartJob`` (and then replicated jobs of at most 1,024 replicas); the
  ``InPlaceRestart`` restart strategy needs ``InPlaceRestart``.

Not modelled: checks against existing cluster objects (PVCs), and ``ValidateUpdate`` (rcpc
creates, it does not update, so ``ElasticJobSet`` has nothing to check).
"""

from __future__ import annotations

from rcpc.core.patterns import LazyPattern
from rcpc.domain.kube import validation as kv
from rcpc.core.diagnostics import Diagnostic, did_you_mean
from rcpc.core.values import Dict, Int, List, Str

# jobset_webhook.go validOnJobFailureReasons (batch/v1 JobReason*).
JOB_FAILURE_REASONS = ("BackoffLimitExceeded", "DeadlineExceeded", "FailedIndexes", "MaxFailedIndexesExceeded",
                       "PodFailurePolicy")
RULE_NAME_MAX = 128  # jobset_webhook.go maxRuleNameLength
# pkg/features/features.go defaultFeatureGates: name -> on by default
FEATURE_GATES = {"InPlaceRestart": False, "TLSOptions": True, "RestartJob": False, "ElasticJobSet": False}
RESTART_JOB_ACTIONS = ("RestartJob", "RestartJobAndIgnoreMaxRestarts")
MAX_REPLICAS_RESTART_JOB = 1024  # jobset_webhook.go maxReplicasPerReplicatedJob
MANAGED_BY_MAX = 63  # jobset_webhook.go maxManagedByLength
MAX_INT32 = 2**31 - 1
POD_NAME_SUFFIX = "-abcde"  # the webhook's stand-in for the 5 random characters of a pod name
EXCLUSIVE_KEY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
COORDINATOR_KEY = "jobset.sigs.k8s.io/coordinator"
_RULE_NAME = LazyPattern(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?\Z")


def default(plain: dict) -> None:
    """The mutating webhook's ``Default`` (jobset_webhook.go), in place on plain data:
    success and startup policies, ``completionMode: Indexed``, pod ``restartPolicy:
    OnFailure``, DNS hostnames and not-ready addresses on, failure-policy rule names
    ``failurePolicyRule<i>``, volume-claim retention ``Delete``. A field of another type than
    the schema's is left as it is (validation reports it)."""
    spec = plain.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("successPolicy", {"operator": "All"})
    spec.setdefault("startupPolicy", {"startupPolicyOrder": "AnyOrder"})
    for rj in _items(spec.get("replicatedJobs")):
        jspec = _field(_field(rj, "template"), "spec")
        if isinstance(jspec, dict):
            jspec.setdefault("completionMode", "Indexed")
            pod = _field(_field(jspec, "template"), "spec")
            if isinstance(pod, dict) and not pod.get("restartPolicy"):
                pod["restartPolicy"] = "OnFailure"
    if spec.get("network") is None:
        spec["network"] = {}
    network = spec["network"]
    if isinstance(network, dict):
        network.setdefault("enableDNSHostnames", True)
        network.setdefault("publishNotReadyAddresses", True)
    for i, rule in enumerate(_items(_field(spec.get("failurePolicy"), "rules"))):
        if isinstance(rule, dict) and not rule.get("name"):
            rule["name"] = rule_name(i)
    for claim in _items(spec.get("volumeClaimPolicies")):
        if isinstance(claim, dict) and claim.get("retentionPolicy") is None:
            claim["retentionPolicy"] = {"whenDeleted": "Delete"}


def _field(value, name: str):
    """``value[name]`` of a mapping, else None (a value of another type, or no such field)."""
    return value.get(name) if isinstance(value, dict) else None


def _items(value) -> list:
    """The items of a list, else none."""
    return value if isinstance(value, list) else []


def rule_name(index: int) -> str:
    """The name ``Default`` gives an unnamed failure-policy rule (``defaultRuleNameFmt``)."""
    return f"failurePolicyRule{index}"


def job_name(jobset: str, job: str, index: int) -> str:
    """A child Job's name (``placement.GenJobName``)."""
    return f"{jobset}-{job}-{index}"


def pod_name(jobset: str, job: str, job_index: int, pod_index: int) -> str:
    """A pod's name without its random suffix (``placement.GenPodName``), also its hostname."""
    return f"{jobset}-{job}-{job_index}-{pod_index}"


# checks ------------------------------------------------------------------------------------------
def _get(d, key):
    return d.items.get(key) if type(d) is Dict else None


def _str(d, key) -> Str | None:
    v = _get(d, key)
    return v if type(v) is Str else None


def _int(d, key, default: int | None) -> int | None:
    v = _get(d, key)
    return v.value if type(v) is Int else default


def _list(d, key) -> tuple:
    v = _get(d, key)
    return v.items if type(v) is List else ()


def _dicts(d, key):
    return [x for x in _list(d, key) if type(x) is Dict]


class _Findings:
    """Diagnostics of one JobSet, one per (code, span): a cause reported once, not once for
    every name derived from it."""

    def __init__(self, path_of):
        self.path_of = path_of
        self.out: list[Diagnostic] = []
        self._seen: set = set()

    def add(self, code: str, where: tuple, message: str, span, hint: str | None = None, related=()) -> None:
        if (code, span) in self._seen:
            return
        self._seen.add((code, span))
        self.out.append(Diagnostic(code, f"JobSet {self.path_of(where)}: {message}", span, hint=hint,
                                   related=tuple(related)))


def _charset_problem(name: str, first_letter: bool) -> bool:
    """Whether ``name`` cannot be part of an RFC 1035 label whatever surrounds it (characters
    other than ``[a-z0-9-]``, or, at the start of the label, a first character that is not a
    letter)."""
    if any(not (c.isascii() and (c.islower() or c.isdigit() or c == "-")) for c in name):
        return True
    return first_letter and not (name[:1].isascii() and name[:1].islower())


def check(data: Dict, path_of, gates: frozenset = frozenset()) -> list[Diagnostic]:
    """``ValidateCreate`` findings of one JobSet manifest value (see the module docstring);
    ``path_of(tuple)`` renders a manifest path for messages; ``gates``: the feature gates
    named on (besides those on by default)."""
    md, spec = _get(data, "metadata"), _get(data, "spec")
    if type(spec) is not Dict:
        return []
    found = _Findings(path_of)
    name_v = _str(md, "name")
    if name_v is not None:
        name, name_span, name_at = name_v.value, name_v.span, ("metadata", "name")
    else:
        gen = _str(md, "generateName")
        if gen is None:
            return []
        # apiserver names.SimpleNameGenerator: the prefix cut to 58 characters + 5 random ones
        name, name_span, name_at = gen.value[:58] + "xxxxx", gen.span, ("metadata", "generateName")
    jobs = _dicts(spec, "replicatedJobs")
    network = _get(spec, "network")
    subdomain_v = _str(network, "subdomain")
    _names(found, name, name_span, name_at, jobs, subdomain_v)
    gates = gates | {g for g, on in FEATURE_GATES.items() if on}
    _policies(found, spec, jobs, gates)
    _coordinator(found, spec, jobs, name, name_span, name_at, subdomain_v)
    _exclusive_topology(found, data, jobs)
    _volume_claims(found, spec, jobs)
    managed = _str(spec, "managedBy")
    if managed is not None:
        problems = kv.domain_prefixed_path(managed.value) + kv.too_long(managed.value, MANAGED_BY_MAX)
        if problems:
            found.add("E1011", ("spec", "managedBy"), f"{managed.value!r} {problems[0]}", managed.span,
                      hint="leave managedBy out for the JobSet controller, or name a controller as "
                           "example.com/controller")
    return found.out


def _names(found: _Findings, name: str, name_span, name_at, jobs, subdomain_v) -> None:
    """Child Job, pod, Service and group names (jobset_webhook.go ValidateCreate)."""
    if subdomain_v is not None and subdomain_v.value:
        problems = kv.dns1123_subdomain(subdomain_v.value) + kv.dns1035_label(subdomain_v.value)
        if problems:
            found.add("E1002", ("spec", "network", "subdomain"), f"{subdomain_v.value!r} is not a valid "
                      f"headless Service name: {problems[0]}", subdomain_v.span,
                      hint="the subdomain names the JobSet's headless Service: an RFC 1035 label")
    for i, rj in enumerate(jobs):
        rj_name = _str(rj, "name")
        if rj_name is None:
            continue
        at = ("spec", "replicatedJobs", i)
        group = _str(rj, "groupName")
        if group is not None and kv.dns1035_label(group.value):
            found.add("E1002", at + ("groupName",), f"group name {group.value!r} "
                      f"{kv.dns1035_label(group.value)[0]}", group.span,
                      hint="a group name is a lower-case letter, then letters, digits and '-'")
        replicas = _int(rj, "replicas", 1)
        jspec = _get(_get(rj, "template"), "spec")
        parallelism = _int(jspec, "parallelism", 1)
        if replicas * parallelism > MAX_INT32:
            found.add("E1011", at + ("replicas",), f"replicas × parallelism is {replicas * parallelism}, over "
                      f"{MAX_INT32}", (_get(rj, "replicas") or rj).span,
                      hint="Kubernetes counts pods in 32 bits: use fewer replicas or pods")
        longest = job_name(name, rj_name.value, replicas - 1)
        problems = kv.dns1035_label(longest)
        if problems:
            _blame(found, "child Job", longest, problems[0], name, name_span, name_at, rj_name, at)
            continue
        mode = _str(jspec, "completionMode")
        completions = _int(jspec, "completions", None)
        if (mode is None or mode.value == "Indexed") and completions is not None:
            pod = pod_name(name, rj_name.value, replicas - 1, completions - 1) + POD_NAME_SUFFIX
            problems = kv.dns1035_label(pod)
            if problems:
                _blame(found, "pod", pod, problems[0], name, name_span, name_at, rj_name, at)
    service = subdomain_v.value if subdomain_v is not None and subdomain_v.value else name
    if service == name and not _charset_problem(name, True) and kv.dns1035_label(name):
        found.add("E1002", name_at, f"{name!r} also names the JobSet's headless Service: "
                  f"{kv.dns1035_label(name)[0]}", name_span, hint="shorten the name, or set spec.network.subdomain")


def _blame(found: _Findings, what: str, derived: str, problem: str, name: str, name_span, name_at,
           rj_name: Str, at: tuple) -> None:
    """Report a derived name that is not an RFC 1035 label at the name that makes it so: the
    JobSet's (wrong first character or characters, or length) or the replicated job's."""
    length = f" ({len(derived)} characters)" if len(derived) > kv.DNS1035_LABEL_MAX else ""
    message = f"{what} names such as {derived!r}{length} are not RFC 1035 labels: {problem}"
    if _charset_problem(name, True):
        found.add("E1002", name_at, f"JobSet name {name!r}: {message}", name_span,
                  hint="a JobSet name starts with a lower-case letter and holds only [a-z0-9-] "
                       "(JobSet webhook: child Job and pod names are RFC 1035 labels)")
    elif _charset_problem(rj_name.value, False):
        found.add("E1002", at + ("name",), f"replicated job name {rj_name.value!r}: {message}", rj_name.span,
                  hint="a replicated job name holds only [a-z0-9-] (it is part of its Job and pod names)")
    else:
        found.add("E1002", name_at, f"JobSet name {name!r} is too long: {message}", name_span,
                  related=(("replicated job name", rj_name.span),),
                  hint="shorten the JobSet or replicated job name (JobSet webhook)")


def _policies(found: _Findings, spec: Dict, jobs: list, gates: frozenset) -> None:
    """dependsOn, success and failure policies (jobset_webhook.go ValidateCreate,
    validateFailurePolicy)."""
    names: list[str] = []
    for i, rj in enumerate(jobs):
        depends = _dicts(rj, "dependsOn")
        if i == 0 and _get(rj, "dependsOn") is not None:
            found.add("E1011", ("spec", "replicatedJobs", 0, "dependsOn"), "the first replicated job cannot "
                      "have dependsOn", _get(rj, "dependsOn").span,
                      hint="a replicated job depends on earlier ones: move it after what it depends on")
        rj_name = _str(rj, "name")
        for k, dep in enumerate(depends):
            target = _str(dep, "name")
            if i and target is not None and target.value not in names:
                found.add("E1011", ("spec", "replicatedJobs", i, "dependsOn", k, "name"), f"{target.value!r} is "
                          "not an earlier replicated job", target.span,
                          hint="a replicated job depends on jobs listed before it")
        if rj_name is not None:
            names.append(rj_name.value)
    success = _get(spec, "successPolicy")
    _targets(found, success, ("spec", "successPolicy"), names)
    policy = _get(spec, "failurePolicy")
    if not _gated(found, policy, jobs, gates):
        return  # the webhook stops checking the failure policy there
    seen: dict[str, object] = {}
    for i, rule in enumerate(_list(policy, "rules")):
        if type(rule) is not Dict:
            continue
        at = ("spec", "failurePolicy", "rules", i)
        given = _str(rule, "name")
        name = given.value if given is not None and given.value else rule_name(i)
        span = given.span if given is not None else rule.span
        if not 1 <= len(name) <= RULE_NAME_MAX or not _RULE_NAME.match(name):
            found.add("E1011", at + ("name",), f"failure policy rule name {name[:80]!r} is not valid: at most "
                      f"{RULE_NAME_MAX} characters, a letter first, then letters, digits, '_', ',' or ':', "
                      "ending with a letter, digit or '_'", span,
                      hint="for example 'failJobSetOnPodFailure'")
        if name in seen:
            found.add("E1011", at + ("name",), f"failure policy rule name {name!r} is used twice", span,
                      related=(("first used here", seen[name]),), hint="give each rule its own name")
        seen.setdefault(name, span)
        _targets(found, rule, at, names)
        for k, reason in enumerate(_list(rule, "onJobFailureReasons")):
            if type(reason) is Str and reason.value not in JOB_FAILURE_REASONS:
                found.add("E1011", at + ("onJobFailureReasons", k), f"{reason.value!r} is not a job failure "
                          f"reason ({', '.join(JOB_FAILURE_REASONS)})", reason.span,
                          hint=did_you_mean(reason.value, JOB_FAILURE_REASONS) or "write one of the reasons listed; "
                          "a pod's own failure reaches the JobSet as PodFailurePolicy")


def _gated(found: _Findings, policy, jobs: list, gates: frozenset) -> bool:
    """The failure policy's feature-gated rules (ValidateCreate: InPlaceRestart;
    validateFailurePolicy: RestartJob). False when a ``RestartJob`` action is refused: the
    webhook checks the policy no further."""
    at = ("spec", "failurePolicy")
    strategy = _str(policy, "restartStrategy")
    if strategy is not None and strategy.value == "InPlaceRestart" and "InPlaceRestart" not in gates:
        found.add("E1011", at + ("restartStrategy",), "the InPlaceRestart restart strategy needs the InPlaceRestart "
                  "feature gate, off by default (alpha)", strategy.span, hint=_gate_hint("InPlaceRestart"))
    for i, rule in enumerate(_list(policy, "rules")):
        action = _str(rule, "action")
        if action is None or action.value not in RESTART_JOB_ACTIONS:
            continue
        if "RestartJob" not in gates:
            found.add("E1011", at + ("rules", i, "action"), f"the {action.value} action needs the RestartJob feature "
                      "gate, off by default (alpha)", action.span, hint=_gate_hint("RestartJob"))
            return False
        for k, rj in enumerate(jobs):
            if _int(rj, "replicas", 1) > MAX_REPLICAS_RESTART_JOB:
                found.add("E1011", ("spec", "replicatedJobs", k, "replicas"), f"with a {action.value} rule a "
                          f"replicated job has at most {MAX_REPLICAS_RESTART_JOB} replicas", _get(rj, "replicas").span,
                          related=(("the rule's action", action.span),),
                          hint="use fewer replicas, or RestartJobSet")
                break
        break
    return True


def _gate_hint(gate: str) -> str:
    return (f"when the cluster's JobSet controller runs with --feature-gates={gate}=true, say so in rcp.toml: "
            f'jobset_feature_gates = ["{gate}"]; otherwise use another value')


def _targets(found: _Findings, d, at: tuple, names: list) -> None:
    for k, target in enumerate(_list(d, "targetReplicatedJobs")):
        if type(target) is Str and target.value not in names:
            found.add("E1011", at + ("targetReplicatedJobs", k), f"{target.value!r} is not a replicated job of "
                      "this JobSet", target.span, hint=f"replicated jobs: {', '.join(names) or 'none'}")


def _coordinator(found: _Findings, spec: Dict, jobs: list, name: str, name_span, name_at, subdomain_v) -> None:
    """validateCoordinator and validateCoordinatorLabelValue."""
    coord = _get(spec, "coordinator")
    target = _str(coord, "replicatedJob")
    if target is None:
        return
    at = ("spec", "coordinator")
    rj = next((r for r in jobs if _str(r, "name") is not None and _str(r, "name").value == target.value), None)
    if rj is None:
        found.add("E1011", at + ("replicatedJob",), f"coordinator replicated job {target.value!r} does not exist",
                  target.span, hint=did_you_mean(target.value, [n.value for n in (_str(r, "name") for r in jobs) if n])
                  or "name one of spec.replicatedJobs")
        return
    job_index, pod_index = _int(coord, "jobIndex", 0), _int(coord, "podIndex", 0)
    jspec = _get(_get(rj, "template"), "spec")
    completions = _int(jspec, "completions", None)
    mode = _str(jspec, "completionMode")
    if not 0 <= job_index < _int(rj, "replicas", 1):
        found.add("E1011", at + ("jobIndex",), f"coordinator job index {job_index} is not a job of "
                  f"{target.value!r}", (_get(coord, "jobIndex") or coord).span,
                  hint=f"job indexes run from 0 to replicas - 1 ({_int(rj, 'replicas', 1) - 1})")
    elif completions is None or (mode is not None and mode.value != "Indexed"):
        found.add("E1011", at, "the coordinator's job must be Indexed with completions set",
                  coord.span, hint='set completionMode: "Indexed" and completions in its Job spec')
    elif not 0 <= pod_index < completions:
        found.add("E1011", at + ("podIndex",), f"coordinator pod index {pod_index} is not a pod of "
                  f"{target.value!r}", (_get(coord, "podIndex") or coord).span,
                  hint=f"pod indexes run from 0 to completions - 1 ({completions - 1})")
    subdomain = subdomain_v.value if subdomain_v is not None and subdomain_v.value else name
    endpoint = f"{pod_name(name, target.value, job_index, pod_index)}.{subdomain}"
    problems = kv.label_value(endpoint)
    if problems:
        related = [("coordinator replicated job", target.span)]
        if subdomain_v is not None and subdomain_v.value:
            related.append(("subdomain", subdomain_v.span))
        found.add("E1003", name_at, f"the JobSet controller labels every Job and pod {COORDINATOR_KEY}="
                  f"{endpoint!r} ({len(endpoint)} characters), not a valid label value: {problems[0]}",
                  name_span, related=related,
                  hint="the value is <jobset>-<job>-<i>-<j>.<subdomain>: shorten the JobSet or coordinator "
                       "job name, or set a short spec.network.subdomain")


def _exclusive_topology(found: _Findings, data: Dict, jobs: list) -> None:
    """The exclusive-placement annotation, on the JobSet or a job template, becomes the
    pods' affinity ``topologyKey`` (pod_webhook.go setExclusiveAffinities), a label key."""
    places = [(("metadata", "annotations"), _get(_get(data, "metadata"), "annotations"))]
    for i, rj in enumerate(jobs):
        places.append((("spec", "replicatedJobs", i, "template", "metadata", "annotations"),
                       _get(_get(_get(rj, "template"), "metadata"), "annotations")))
    for at, notes in places:
        value = _str(notes, EXCLUSIVE_KEY)
        if value is not None and kv.qualified_name(value.value):
            found.add("E1009", at + (EXCLUSIVE_KEY,), f"{value.value!r} becomes the pods' affinity topologyKey, "
                      f"a label key: {kv.qualified_name(value.value)[0]}", value.span,
                      hint="name a node label, such as cloud.google.com/gke-nodepool")


def _volume_claims(found: _Findings, spec: Dict, jobs: list) -> None:
    """validateVolumeClaimPolicies, without the checks against existing PVCs."""
    names: dict[str, object] = {}
    for p, policy in enumerate(_dicts(spec, "volumeClaimPolicies")):
        for t, template in enumerate(_dicts(policy, "templates")):
            claim = _str(_get(template, "metadata"), "name")
            if claim is None:
                continue
            at = ("spec", "volumeClaimPolicies", p, "templates", t, "metadata", "name")
            if claim.value in names:
                found.add("E1011", at, f"volume claim template name {claim.value!r} is used twice", claim.span,
                          related=(("first used here", names[claim.value]),), hint="give each template its own name")
            names.setdefault(claim.value, claim.span)
            if kv.dns1123_subdomain(claim.value):
                found.add("E1002", at, f"{claim.value!r} {kv.dns1123_subdomain(claim.value)[0]}", claim.span,
                          hint="lower-case letters, digits, '-' and '.'")
            mounted = False
            for i, rj in enumerate(jobs):
                pod = _get(_get(_get(_get(rj, "template"), "spec"), "template"), "spec")
                for v, volume in enumerate(_dicts(pod, "volumes")):
                    vname = _str(volume, "name")
                    if vname is not None and vname.value == claim.value:
                        found.add("E1011", ("spec", "replicatedJobs", i, "template", "spec", "template", "spec",
                                            "volumes", v, "name"), f"volume {claim.value!r} conflicts with the "
                                  "volume claim template of that name", vname.span,
                                  related=(("volume claim template", claim.span),),
                                  hint="rename the volume or the template")
                for c in _dicts(pod, "initContainers") + _dicts(pod, "containers"):
                    mounted = mounted or any(_str(m, "name") is not None and _str(m, "name").value == claim.value
                                             for m in _dicts(c, "volumeMounts"))
            if not mounted:
                found.add("E1011", at, f"no container mounts the volume claim template {claim.value!r}",
                          claim.span, hint="add a volumeMount with this name to a container")
