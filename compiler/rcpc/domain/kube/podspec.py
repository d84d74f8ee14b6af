"""Kubernetes core validation of a pod spec's scheduling and volume fields (Kubernetes
``pkg/apis/core/validation/validation.go``), for :func:`rcpc.domain.kube.pod.check_pod`:

* tolerations (``ValidateTolerations``): a ``key`` is a qualified name (``ValidateLabelName``);
  without a key the ``operator`` is ``Exists`` (it matches every taint); ``operator`` is
  ``Equal`` (also when empty) with a ``value`` that is a label value, or ``Exists`` with no
  ``value``; an ``effect`` is ``NoSchedule``, ``PreferNoSchedule`` or ``NoExecute``
  (``validateTaintEffect``); ``tolerationSeconds`` only with ``NoExecute`` — each ``E1014``;
* ``dnsPolicy`` is ``ClusterFirstWithHostNet``, ``ClusterFirst``, ``Default`` or ``None``
  (``validateDNSPolicy``; empty is defaulted to ``ClusterFirst``, ``SetDefaults_PodSpec``),
  and ``None`` comes with a ``dnsConfig`` of at least one nameserver (``validatePodDNSConfig``)
  — ``E1014``;
* ``W1003``: ``hostNetwork: true`` with ``dnsPolicy`` unset or ``ClusterFirst``: such a pod
  falls back to the node's DNS (the ``Default`` policy; Kubernetes' DNS documentation, "Pod's
  DNS Policy"), where cluster names such as the JobSet's pod hostnames, the JAX
  coordinator's among them, do not resolve; the API server accepts it;
* volumes (``ValidateVolumes``): a ``name`` is given (``E1014``, Required; a null is empty)
  and is an RFC 1123 label (``E1002``, ``IsDNS1123Label``); a volume mount has a ``name`` and
  a ``mountPath`` (``ValidateVolumeMounts``, Required: ``E1014``).

Values of the wrong type are left to the schema (``E1101``).
"""

from __future__ import annotations

from rcpc.core.diagnostics import did_you_mean
from rcpc.core.values import Bool, Dict, List, Null, Str
from rcpc.domain.kube import validation as kv
from rcpc.domain.kube.paths import CONTAINER_LISTS, diag

TOLERATION_OPERATORS = ("Equal", "Exists")           # core.TolerationOp*
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")  # core.TaintEffect*
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")  # core.DNS*


def _text(d: Dict, key: str) -> str | None:
    """The string at ``key`` as Kubernetes decodes it ("" for missing or null), or None for
    another type (the schema's to report)."""
    v = d.items.get(key)
    if v is None or type(v) is Null:
        return ""
    return v.value if type(v) is Str else None


def _one_of(value, allowed: tuple, what: str) -> str:
    return did_you_mean(value, allowed) or f"{what} is one of {', '.join(allowed)}"


def check_podspec(pod: Dict, path: tuple, kind: str, out: list) -> None:
    """The rules of the module docstring on the pod spec ``pod`` at ``path``."""
    tolerations = pod.items.get("tolerations")
    for i, t in enumerate(tolerations.items if type(tolerations) is List else ()):
        if type(t) is Dict:
            _check_toleration(t, path + ("tolerations", i), kind, out)
    _check_dns(pod, path, kind, out)
    volumes = pod.items.get("volumes")
    for i, v in enumerate(volumes.items if type(volumes) is List else ()):
        if type(v) is Dict:
            _check_name(v, path + ("volumes", i), kind, "volume", out)
    for key in CONTAINER_LISTS:
        group = pod.items.get(key)
        for i, c in enumerate(group.items if type(group) is List else ()):
            mounts = c.items.get("volumeMounts") if type(c) is Dict else None
            for j, m in enumerate(mounts.items if type(mounts) is List else ()):
                if type(m) is Dict:
                    _check_mount(m, path + (key, i, "volumeMounts", j), kind, out)


def _check_toleration(t: Dict, at: tuple, kind: str, out: list) -> None:
    """``ValidateTolerations`` on one toleration at ``at``."""
    key, op, value, effect = _text(t, "key"), _text(t, "operator"), _text(t, "value"), _text(t, "effect")
    span = lambda k: t.items[k].span if type(t.items.get(k)) is Str else t.span  # noqa: E731
    if key:
        problems = kv.qualified_name(key)
        if problems:
            out.append(diag("E1014", kind, at + ("key",), f"toleration key {key[:100]!r} is not valid: {problems[0]}",
                            span("key"), hint="a key is a label key, such as google.com/tpu"))
    elif key == "" and op is not None and op != "Exists":
        out.append(diag("E1014", kind, at + ("operator",), "a toleration without a key must have operator Exists "
                        "(it then matches every taint)", span("operator") if op else t.span,
                        hint='add a key, or write operator: "Exists"'))
    seconds = t.items.get("tolerationSeconds")
    if seconds is not None and type(seconds) is not Null and effect is not None and effect != "NoExecute":
        out.append(diag("E1014", kind, at + ("effect",), "tolerationSeconds is only for effect NoExecute "
                        f"(effect is {effect or 'empty'})", span("effect") if effect else seconds.span,
                        hint='write effect: "NoExecute", or leave tolerationSeconds out'))
    if op in ("Equal", "") and value:
        problems = kv.label_value(value)
        if problems:
            out.append(diag("E1014", kind, at + ("value",), f"toleration value {value[:100]!r} is not valid: "
                            f"{problems[0]}", span("value"), hint="a value is a label value"))
    elif op == "Exists" and value:
        out.append(diag("E1014", kind, at + ("value",), "a toleration with operator Exists has no value (it "
                        "matches every value of the key)", span("value"),
                        hint='leave the value out, or write operator: "Equal"'))
    elif op and op not in TOLERATION_OPERATORS:
        out.append(diag("E1014", kind, at + ("operator",), f"operator {op!r} is not one of Equal, Exists",
                        span("operator"), hint=_one_of(op, TOLERATION_OPERATORS, "an operator")))
    if effect and effect not in TAINT_EFFECTS:
        out.append(diag("E1014", kind, at + ("effect",), f"effect {effect!r} is not one of {', '.join(TAINT_EFFECTS)}",
                        span("effect"), hint=_one_of(effect, TAINT_EFFECTS, "an effect")))


def _check_dns(pod: Dict, path: tuple, kind: str, out: list) -> None:
    """``validateDNSPolicy``, ``validatePodDNSConfig`` for ``None``, and ``W1003``."""
    policy = _text(pod, "dnsPolicy")
    at = path + ("dnsPolicy",)
    if policy and policy not in DNS_POLICIES:
        out.append(diag("E1014", kind, at, f"dnsPolicy {policy!r} is not one of {', '.join(DNS_POLICIES)}",
                        pod.items["dnsPolicy"].span, hint=_one_of(policy, DNS_POLICIES, "a DNS policy")))
    elif policy == "None":
        config = pod.items.get("dnsConfig")
        servers = config.items.get("nameservers") if type(config) is Dict else None
        if not (type(servers) is List and servers.items):
            out.append(diag("E1014", kind, path + ("dnsConfig",), "dnsPolicy None needs a dnsConfig with at least "
                            "one nameserver", (config if type(config) is Dict else pod.items["dnsPolicy"]).span,
                            hint='add dnsConfig: {"nameservers": ["..."]}, or use another dnsPolicy'))
    host = pod.items.get("hostNetwork")
    if type(host) is Bool and host.value and policy in ("", "ClusterFirst"):
        where = pod.items["dnsPolicy"].span if type(pod.items.get("dnsPolicy")) is Str else host.span
        out.append(diag("W1003", kind, at, "with hostNetwork the pod falls back to the node's DNS "
                        f"(dnsPolicy {policy or 'unset, ClusterFirst'}): cluster names, such as the JobSet's pod "
                        "hostnames and the JAX coordinator's address, do not resolve", where, severity="warning",
                        hint='write dnsPolicy: "ClusterFirstWithHostNet"'))


def _check_name(d: Dict, at: tuple, kind: str, what: str, out: list) -> None:
    """A volume's ``name``: Required, an RFC 1123 label."""
    name = d.items.get("name")
    if name is None or type(name) is Null or (type(name) is Str and not name.value):
        out.append(diag("E1014", kind, at + ("name",), f"the {what} has no name (Required)",
                        (name or d).span, hint='add "name": "..." (lower-case letters, digits and \'-\')'))
    elif type(name) is Str and kv.dns1123_label(name.value):
        fixed = kv.as_dns1123_label(name.value)
        out.append(diag("E1002", kind, at + ("name",), f"{what} name {name.value[:100]!r} is not an RFC 1123 label: "
                        f"{kv.dns1123_label(name.value)[0]}", name.span,
                        hint=f"for example {fixed!r}" if fixed else "use lower-case letters and digits"))


def _check_mount(m: Dict, at: tuple, kind: str, out: list) -> None:
    """``ValidateVolumeMounts``: a mount has a ``name`` and a ``mountPath`` (Required)."""
    for key in ("name", "mountPath"):
        v = m.items.get(key)
        if v is None or type(v) is Null or (type(v) is Str and not v.value):
            out.append(diag("E1014", kind, at + (key,), f"the volume mount has no {key} (Required)", (v or m).span,
                            hint=f'add "{key}": "..."'))

