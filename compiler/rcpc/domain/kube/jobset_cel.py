"""The JobSet CRD's CEL validation rules (``x-kubernetes-validations`` of
``../shared/data/jobset/jobset.x-k8s.io_jobsets.yaml``, kubernetes-sigs/jobset at 08dfbdfd),
which the API server evaluates on every JobSet it admits, schema or none configured in rcpc
(``E1016``). rcpc does not evaluate CEL: each rule that can refuse a JobSet when it is
created is modelled here by its text (:data:`RULES`), and ``tests/test_jobset_cel.py``
checks that the shipped schema holds no other rule, but the transition rules
(``self == oldSelf``: a value is immutable), which only an update evaluates:

* ``spec``: a ``startupPolicy`` with ``startupPolicyOrder: InOrder`` and a replicated job with
  ``dependsOn`` are mutually exclusive (a ``dependsOn`` written, even empty, is ``has()``);
* ``spec.volumeClaimPolicies[]``: no claim template sets ``metadata.namespace``.

A null is pruned before the rules run (structural pruning), so it is not ``has()``.
"""

from __future__ import annotations

from rcpc.core.diagnostics import Diagnostic
from rcpc.core.values import Dict, List, Str
from rcpc.domain.kube.paths import manifest_path, value_at

STARTUP_AND_DEPENDS_ON = ("!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && "
                          "self.replicatedJobs.exists(x, has(x.dependsOn)))")
CLAIM_NAMESPACE = "self.templates.all(t, !has(t.metadata.namespace) || size(t.metadata.namespace) == 0)"
RULES = (STARTUP_AND_DEPENDS_ON, CLAIM_NAMESPACE)


def _diag(path: tuple, message: str, span, related=(), hint: str | None = None) -> Diagnostic:
    return Diagnostic("E1016", f"JobSet {manifest_path(path)}: {message}", span, hint=hint, related=tuple(related))


def check(data: Dict) -> list[Diagnostic]:
    """The :data:`RULES` a JobSet manifest value breaks, each at the value to change."""
    out: list[Diagnostic] = []
    spec = value_at(data, "spec")
    order = value_at(spec, "startupPolicy", "startupPolicyOrder")
    jobs = value_at(spec, "replicatedJobs")
    depends = [(i, value_at(rj, "dependsOn")) for i, rj in enumerate(jobs.items if type(jobs) is List else ())]
    depends = [(i, d) for i, d in depends if d is not None]
    if type(order) is Str and order.value == "InOrder" and depends:
        out.append(_diag(("spec", "startupPolicy", "startupPolicyOrder"), "startupPolicy InOrder and dependsOn "
                         "are mutually exclusive (the CRD's rule: StartupPolicy and DependsOn APIs are mutually "
                         "exclusive)", order.span,
                         related=[(f"dependsOn of replicatedJobs[{i}]", d.span) for i, d in depends],
                         hint="keep dependsOn (startupPolicy is deprecated) and leave startupPolicy out"))
    policies = value_at(spec, "volumeClaimPolicies")
    for p, policy in enumerate(policies.items if type(policies) is List else ()):
        templates = value_at(policy, "templates")
        for t, template in enumerate(templates.items if type(templates) is List else ()):
            namespace = value_at(template, "metadata", "namespace")
            if type(namespace) is Str and namespace.value:
                out.append(_diag(("spec", "volumeClaimPolicies", p, "templates", t, "metadata", "namespace"),
                                 "namespace cannot be set for VolumeClaimPolicies templates (the CRD's rule)",
                                 namespace.span, hint="leave the namespace out: the claims go in the JobSet's"))
    return out


def rules_of(schema) -> list[str]:
    """Every CEL rule (``x-kubernetes-validations[].rule``) of a JSON schema, anywhere in it."""
    found: list[str] = []
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            for v in node.get("x-kubernetes-validations") or []:
                if isinstance(v, dict) and isinstance(v.get("rule"), str):
                    found.append(v["rule"])
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return found
