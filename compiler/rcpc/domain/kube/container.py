"""Kubernetes core validation of one container of a pod spec (``E1014``): what the API server
refuses in a container of a pod, or of a pod template (a Job's, a JobSet's replicated job's,
a Deployment's), when the object is created. Called by :func:`rcpc.domain.kube.pod.check_pod`
for every container of ``containers``, ``initContainers`` and ``ephemeralContainers``.

Rules (Kubernetes ``pkg/apis/core/validation/validation.go``, ``validateContainerCommon``,
which applies to every container of a pod and of a pod template alike):

* a container has a ``name`` ("Required"; its form and uniqueness are ``E1002``/``E1004``) and
  an ``image`` ("Required", also in a pod template: a JobSet's or Job's template without one
  is accepted and its Jobs or pods are then refused); a pod's image has no leading or trailing
  whitespace (``validateContainerOnlyForPod``, Go's ``strings.TrimSpace``: the pods a
  controller creates from such a template are refused);
* ``imagePullPolicy`` is ``Always``, ``Never`` or ``IfNotPresent`` (``validatePullPolicy``);
* ports (``validateContainerPorts``): ``containerPort`` is set and 1 to 65535
  (``IsValidPortNum``; 0 is "Required"), a ``hostPort`` other than 0 (unset) too; ``protocol``
  is ``TCP``, ``UDP`` or ``SCTP`` (an empty one defaults to ``TCP``, ``SetDefaults_ContainerPort``);
  a port ``name`` is an IANA_SVC_NAME (``IsValidPortName``) and unique among the container's
  ports — Kubernetes checks this per container, not across the pod, though the API reference
  says "unique within the pod"; with ``hostNetwork``, a set ``hostPort`` equals
  ``containerPort`` (``validatePodHostNetworkDeps``);
* env (``ValidateEnv``, ``validateEnvVarValueFrom``): a name is given and, by
  ``IsRelaxedEnvVarName`` (the rule since Kubernetes 1.32, when the feature gate
  ``RelaxedEnvironmentVariableValidation`` went on by default; GA and locked on in 1.34), is
  printable ASCII other than ``=``; a ``valueFrom`` names exactly one source (``fieldRef``,
  ``resourceFieldRef``, ``configMapKeyRef``, ``secretKeyRef``) and comes with no non-empty
  ``value``;
* a container's resource request is at most its limit (``ValidateResourceRequirements``); an
  extended resource (a name with a domain outside ``kubernetes.io``, as ``google.com/tpu``)
  cannot be overcommitted: its limit is set and equal to its request (``validateContainerResourceName``,
  ``ValidateResourceRequirements``: "must be equal to ... limit", "Limit must be set"), and it
  is a whole number (``validateResourceQuantityValue``: "must be an integer"; ``4000m`` is 4);
* a volume mount names a volume of the pod (``ValidateVolumeMounts``: not found).

Values of the wrong type are left to the schema (``E1101``) or to other rules (``E1001``).
"""

from __future__ import annotations

from rcpc.core.values import Dict, Int, List, Null, Str, text_of
from rcpc.domain.kube import validation as kv
from rcpc.domain.kube.paths import diag
from rcpc.domain.kube.quantity import GO_SPACE, amount as quantity

PULL_POLICIES = ("Always", "Never", "IfNotPresent")
PROTOCOLS = ("TCP", "UDP", "SCTP")
ENV_SOURCES = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")  # core/v1 EnvVarSource
def extended(resource: str) -> bool:
    """Whether ``resource`` is an extended resource (a domain-prefixed name outside
    ``kubernetes.io``, such as ``google.com/tpu``): never overcommitted."""
    domain, slash, _ = resource.partition("/")
    return bool(slash) and domain != "kubernetes.io" and not domain.endswith(".kubernetes.io") \
        and not resource.startswith("requests.")


def _absent(d: Dict, key: str) -> bool:
    """Whether ``key`` is unset in ``d`` as Kubernetes decodes it (missing or null)."""
    v = d.items.get(key)
    return v is None or type(v) is Null


def check_container(c: Dict, path: tuple, kind: str, volumes: set, host_network: bool, out: list) -> None:
    """The rules on one container at ``path`` of a pod whose volumes are named ``volumes``
    (see the module docstring); ``host_network``: the pod sets ``hostNetwork: true``."""
    name = c.items.get("name")
    if _absent(c, "name") or (type(name) is Str and not name.value):
        out.append(diag("E1014", kind, path + ("name",), "the container has no name (Required)", (name or c).span,
                        hint='add "name": "..." (lower-case letters, digits and \'-\')'))
    _check_image(c, path, kind, out)
    v = c.items.get("imagePullPolicy")
    if type(v) is Str and v.value not in PULL_POLICIES:
        out.append(diag("E1014", kind, path + ("imagePullPolicy",), f"imagePullPolicy {v.value!r} is not one of "
                        f"{', '.join(PULL_POLICIES)}", v.span, hint=f"write one of {', '.join(PULL_POLICIES)}"))
    ports = c.items.get("ports")
    if type(ports) is List:
        _check_ports(ports, path + ("ports",), kind, host_network, out)
    env = c.items.get("env")
    if type(env) is List:
        _check_env(env, path + ("env",), kind, out)
    mounts = c.items.get("volumeMounts")
    for i, m in enumerate(mounts.items if type(mounts) is List else ()):
        name = m.items.get("name") if type(m) is Dict else None
        if type(name) is Str and name.value and name.value not in volumes:  # an empty one: Required (kube_podspec)
            out.append(diag("E1014", kind, path + ("volumeMounts", i, "name"), f"volume mount {name.value!r} "
                            "names no volume of the pod", name.span,
                            hint=f'add {{"name": "{name.value}", ...}} to the pod\'s volumes'))
    _check_resources(c, path, kind, out)


def _check_image(c: Dict, path: tuple, kind: str, out: list) -> None:
    image = c.items.get("image")
    where = path + ("image",)
    if type(image) is Null or image is None or (type(image) is Str and not image.value):
        out.append(diag("E1014", kind, where, "the container has no image (Required)",
                        image.span if image is not None else c.span,
                        hint='give the container an image, such as "us-docker.pkg.dev/project/repo/image:tag"'))
    elif type(image) is Str and (image.value[0] in GO_SPACE or image.value[-1] in GO_SPACE):
        trimmed = image.value.strip(GO_SPACE)
        out.append(diag("E1014", kind, where, f"image {image.value!r} has leading or trailing whitespace: the API "
                        "server refuses a pod with it (for a template, every pod made from it)", image.span,
                        hint=f"write {trimmed!r}" if trimmed else "give the container an image"))


def _check_ports(ports: List, path: tuple, kind: str, host_network: bool, out: list) -> None:
    """``validateContainerPorts`` on one container's ports (and ``validatePodHostNetworkDeps``)."""
    names: dict = {}
    for i, port in enumerate(ports.items):
        if type(port) is not Dict:
            continue
        at = path + (i,)
        name = port.items.get("name")
        if type(name) is Str and name.value:
            problems = kv.port_name(name.value)
            if problems:
                out.append(diag("E1014", kind, at + ("name",), f"port name {name.value!r} is not an IANA service "
                                f"name: {problems[0]}", name.span,
                                hint="at most 15 lower-case letters, digits and '-', with a letter, such as 'http' "
                                     "or 'grpc-1'"))
            elif name.value in names:
                out.append(diag("E1014", kind, at + ("name",), f"port name {name.value!r} is used twice in the "
                                "container (Duplicate value)", name.span,
                                related=(("first used here", names[name.value]),),
                                hint="give each port of a container its own name"))
            else:
                names[name.value] = name.span
        number = port.items.get("containerPort")
        if _absent(port, "containerPort") or (type(number) is Int and number.value == 0):
            out.append(diag("E1014", kind, at + ("containerPort",), "the port has no containerPort (Required)",
                            number.span if type(number) is Int else port.span, hint="give a port number, 1 to 65535"))
        elif type(number) is Int and kv.port_number(number.value):
            out.append(diag("E1014", kind, at + ("containerPort",), f"containerPort {number.value} must be between "
                            "1 and 65535", number.span, hint="give a port number, 1 to 65535"))
        host = port.items.get("hostPort")
        if type(host) is Int and host.value != 0 and kv.port_number(host.value):
            out.append(diag("E1014", kind, at + ("hostPort",), f"hostPort {host.value} must be between 1 and 65535",
                            host.span, hint="give a port number, 1 to 65535, or 0 (or leave it out) for none"))
        elif (host_network and type(host) is Int and host.value != 0 and type(number) is Int
              and host.value != number.value):
            out.append(diag("E1014", kind, at + ("hostPort",), f"hostPort {host.value} must match containerPort "
                            f"{number.value} when hostNetwork is true", host.span,
                            hint="leave hostPort out (with hostNetwork it is the containerPort)"))
        proto = port.items.get("protocol")
        if type(proto) is Str and proto.value and proto.value not in PROTOCOLS:
            out.append(diag("E1014", kind, at + ("protocol",), f"protocol {proto.value!r} is not one of "
                            f"{', '.join(PROTOCOLS)}", proto.span, hint=f"write one of {', '.join(PROTOCOLS)}"))


def _check_env(env: List, path: tuple, kind: str, out: list) -> None:
    """``ValidateEnv`` on one container's env."""
    for i, var in enumerate(env.items):
        if type(var) is not Dict:
            continue
        name = var.items.get("name")
        if _absent(var, "name") or (type(name) is Str and not name.value):
            out.append(diag("E1014", kind, path + (i, "name"), "the env var has no name (Required)",
                            name.span if type(name) is Str else var.span, hint='add "name": "..."'))
        elif type(name) is Str and kv.env_var_name(name.value):
            out.append(diag("E1014", kind, path + (i, "name"), f"env var name {name.value!r} is not valid: "
                            f"{kv.env_var_name(name.value)[0]}", name.span,
                            hint="use printable ASCII characters other than '=' (NAME=VALUE is a name and a value)"))
        source = var.items.get("valueFrom")
        if type(source) is not Dict:
            continue
        given = [k for k in ENV_SOURCES if not _absent(source, k)]
        value = var.items.get("value")
        where = path + (i, "valueFrom")
        if not given:
            out.append(diag("E1014", kind, where, "valueFrom names no source: it must specify one of fieldRef, "
                            "resourceFieldRef, configMapKeyRef or secretKeyRef", source.span,
                            hint="add one source, or write value instead"))
        elif type(value) is Str and value.value:
            out.append(diag("E1014", kind, where, "valueFrom may not be specified when value is not empty",
                            source.span, related=(("value", value.span),), hint="keep value or valueFrom, not both"))
        elif len(given) > 1:
            out.append(diag("E1014", kind, where, f"valueFrom names {len(given)} sources ({', '.join(given)}): it "
                            "may have only one", source.span, hint="keep one source"))


def _check_resources(c: Dict, path: tuple, kind: str, out: list) -> None:
    """``ValidateResourceRequirements`` on one container's requests and limits."""
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
