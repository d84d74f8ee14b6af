"""Kubernetes rules for manifests (DESIGN.md §3.3), reported at the recipe span that
produced the offending value, with the manifest path (``spec.replicatedJobs[1].template...``).

Built-in rules (with or without a schema):

* ``E1001`` env var values are strings (``value: "0"``, not ``0``);
* ``E1002`` names: ``metadata.name`` a DNS-1123 subdomain, a JobSet's a DNS-1123 label (at
  most 63 characters) whose generated pod names ``<jobset>-<job>-<i>-<j>-xxxxx`` also fit 63
  characters (JobSet webhook), container and replicated-job names DNS-1123 labels;
* ``E1003`` label and annotation values are strings; label values are at most 63
  characters of ``[A-Za-z0-9_.-]`` starting and ending alphanumeric;
* ``E1004`` container names (containers and initContainers) unique within a pod;
* ``E1005`` resource quantities well-formed (``4``, ``"500m"``, ``"16Gi"``, ``"1e3"``);
* ``E1006`` a pod on TPU nodes (accelerator and topology node selector) requests exactly the
  host's chips (``google.com/tpu`` summed over its containers); ``E1007`` its Job's
  ``parallelism`` and ``completions`` equal the slice's hosts.

Schema validation (:class:`SchemaIndex`, ``kube_schemas`` in rcp.toml): CRDs (their
``openAPIV3Schema`` per served version) or plain JSON schemas carrying
``x-kubernetes-group-version-kind``, checked with jsonschema after modelling what happens
before validation on a real cluster: the API server's structural defaulting (``default:``)
and, for JobSets, the JobSet webhook's defaulting (rule names ``failurePolicyRule<i>``,
``completionMode: Indexed``, pod ``restartPolicy: OnFailure``, network and policies).
Kubernetes extensions: ``x-kubernetes-int-or-string`` (integer or string),
``x-kubernetes-preserve-unknown-fields`` (any field), ``nullable``; unknown fields are errors
(``kubectl apply`` with strict field validation). CEL rules (``x-kubernetes-validations``)
are not evaluated. ``E1101`` a violation, ``E1102`` an unusable schema file.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from rcpc.diagnostics import Diagnostic, did_you_mean, error
from rcpc.source import Span
from rcpc.tpu import ACCELERATOR_LABEL, ALIASES, TOPOLOGY_LABEL, tpu_slice
from rcpc.values import Dict, Float, Int, List, Str, text_of, to_python, type_name

TPU_RESOURCE = "google.com/tpu"
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
# resource.Quantity: a signed decimal number with a binary-SI, decimal-SI or exponent suffix.
_QUANTITY = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")


def manifest_path(path: tuple) -> str:
    """``("spec", "replicatedJobs", 1, "name")`` → ``spec.replicatedJobs[1].name``."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(the manifest)"


def _diag(code: str, kind: str, path: tuple, message: str, span: Span, hint: str | None = None) -> Diagnostic:
    return Diagnostic(code, f"{kind} {manifest_path(path)}: {message}", span, hint=hint)


# built-in rules ------------------------------------------------------------------------------
def check_rules(data: Dict) -> list[Diagnostic]:
    """Every built-in rule violation of one manifest (see the module docstring)."""
    kind = data.items.get("kind")
    kind = kind.value if type(kind) is Str else "manifest"
    out: list[Diagnostic] = []
    _check_name(data, kind, out)
    _walk(data, (), kind, out)
    return out


def _check_name(data: Dict, kind: str, out: list) -> None:
    md = data.items.get("metadata")
    if type(md) is not Dict or "name" not in md.items and "generateName" not in md.items:
        out.append(_diag("E1002", kind, ("metadata",), "metadata.name is missing",
                         md.span if type(md) is Dict else data.span, hint='add "name": "..." to metadata'))
        return
    if type(md.items.get("name")) is not Str:
        return
    name = md.items["name"]
    path = ("metadata", "name")
    if kind == "JobSet":
        if not _LABEL.match(name.value) or len(name.value) > 63:
            out.append(_diag("E1002", kind, path, f"{name.value!r} is not a DNS-1123 label of at most 63 "
                             "characters (lower-case letters, digits, '-')", name.span,
                             hint="a JobSet name prefixes its job and pod names"))
            return
        spec = data.items.get("spec")
        jobs = spec.items.get("replicatedJobs") if type(spec) is Dict else None
        for rj in jobs.items if type(jobs) is List else ():
            if type(rj) is not Dict or type(rj.items.get("name")) is not Str:
                continue
            replicas = _int(rj.items.get("replicas"), 1)
            jspec = _get(rj, "template", "spec")
            completions = _int(jspec.items.get("completions"), 1) if jspec else 1
            pod = f"{name.value}-{rj.items['name'].value}-{replicas - 1}-{completions - 1}-abcde"
            if len(pod) > 63:
                out.append(_diag("E1002", kind, path, f"pod names such as {pod!r} ({len(pod)} characters) "
                                 "exceed 63 characters", name.span,
                                 hint="shorten the JobSet or replicated job name (JobSet webhook rule)"))
    elif not _SUBDOMAIN.match(name.value) or len(name.value) > 253:
        out.append(_diag("E1002", kind, path, f"{name.value!r} is not a DNS-1123 subdomain", name.span,
                         hint="lower-case letters, digits, '-' and '.'"))


def _int(v, default: int) -> int:
    return v.value if type(v) is Int else default


def _get(d, *keys):
    for k in keys:
        if type(d) is not Dict:
            return None
        d = d.items.get(k)
    return d if type(d) is Dict else None


def _walk(v, path: tuple, kind: str, out: list) -> None:
    if type(v) is List:
        for i, x in enumerate(v.items):
            _walk(x, path + (i,), kind, out)
        return
    if type(v) is not Dict:
        return
    items = v.items
    for key in ("labels", "annotations"):
        if path and path[-1] == "metadata" and type(items.get(key)) is Dict:
            _check_labels(items[key], path + (key,), kind, key == "labels", out)
    if type(items.get("env")) is List:
        _check_env(items["env"], path + ("env",), kind, out)
    if type(items.get("containers")) is List:
        _check_pod(v, path, kind, out)
    if path and path[-1] == "resources":
        for key in ("limits", "requests"):
            if type(items.get(key)) is Dict:
                _check_quantities(items[key], path + (key,), kind, out)
    if type(items.get("template")) is Dict and type(items.get("parallelism")) is Int:
        _check_job(v, path, kind, out)
    for k, x in items.items():
        _walk(x, path + (k,), kind, out)


def _check_env(env: List, path: tuple, kind: str, out: list) -> None:
    for i, var in enumerate(env.items):
        if type(var) is not Dict or "value" not in var.items:
            continue
        value = var.items["value"]
        if type(value) is not Str:
            name = var.items.get("name")
            label = f"env var {name.value}" if type(name) is Str else "env var"
            text = text_of(value)
            hint = f'write "{text}"' if text is not None and type(value) is not List else None
            out.append(_diag("E1001", kind, path + (i, "value"),
                             f"{label}: Kubernetes env values are strings, got {type_name(value)}",
                             value.span, hint=hint))


def _check_labels(d: Dict, path: tuple, kind: str, is_labels: bool, out: list) -> None:
    for k, value in d.items.items():
        if type(value) is not Str:
            text = text_of(value)
            out.append(_diag("E1003", kind, path + (k,), f"{'label' if is_labels else 'annotation'} values "
                             f"are strings, got {type_name(value)}", value.span,
                             hint=f'write "{text}"' if text is not None else None))
        elif is_labels and (len(value.value) > 63 or not _LABEL_VALUE.match(value.value)):
            out.append(_diag("E1003", kind, path + (k,), f"label value {value.value!r} is not valid "
                             "(at most 63 characters of letters, digits, '-', '_', '.', alphanumeric at "
                             "both ends)", value.span))


def _check_pod(pod: Dict, path: tuple, kind: str, out: list) -> None:
    seen: dict = {}
    for key in ("initContainers", "containers"):
        group = pod.items.get(key)
        for i, c in enumerate(group.items if type(group) is List else ()):
            name = c.items.get("name") if type(c) is Dict else None
            if type(name) is not Str:
                continue
            where = path + (key, i, "name")
            if not _LABEL.match(name.value) or len(name.value) > 63:
                out.append(_diag("E1002", kind, where, f"container name {name.value!r} is not a DNS-1123 label",
                                 name.span))
            if name.value in seen:
                out.append(Diagnostic("E1004", f"{kind} {manifest_path(where)}: container name "
                                      f"{name.value!r} is used twice in one pod", name.span,
                                      related=(("first used here", seen[name.value]),)))
            seen.setdefault(name.value, name.span)
    _check_tpu_request(pod, path, kind, out)


def _check_quantities(d: Dict, path: tuple, kind: str, out: list) -> None:
    for k, value in d.items.items():
        ok = (type(value) in (Int, Float) and value.value >= 0) or (type(value) is Str and _QUANTITY.match(value.value))
        if not ok:
            out.append(_diag("E1005", kind, path + (k,), f"{text_of(value)!r} is not a resource quantity",
                             value.span, hint='write a number or a string such as "4", "500m", "16Gi"'))


def _pod_slice(pod: Dict):
    sel = pod.items.get("nodeSelector")
    if type(sel) is not Dict:
        return None
    acc, topo = sel.items.get(ACCELERATOR_LABEL), sel.items.get(TOPOLOGY_LABEL)
    if type(acc) is not Str or type(topo) is not Str or acc.value not in ALIASES:
        return None
    return tpu_slice(f"{acc.value}:{topo.value}", topo.span)


def _check_tpu_request(pod: Dict, path: tuple, kind: str, out: list) -> None:
    slice_ = _pod_slice(pod)
    if slice_ is None:
        return
    total = 0
    spans = []
    containers = pod.items.get("containers")
    for c in containers.items if type(containers) is List else ():
        res = _get(c, "resources")
        if res is None:
            continue
        for key in ("limits", "requests"):
            q = _get(res, key)
            v = q.items.get(TPU_RESOURCE) if q else None
            if v is not None:
                n = _quantity_int(v)
                if n is not None:
                    total += n
                    spans.append(v.span)
                break
    if total != slice_.chips_per_host:
        out.append(_diag("E1006", kind, path + ("containers",),
                         f"the pod's containers request {total} {TPU_RESOURCE} but a "
                         f"{slice_.accelerator}:{slice_.topology} host has {slice_.chips_per_host} chips",
                         spans[0] if spans else pod.span,
                         hint=f"request {TPU_RESOURCE}: {slice_.chips_per_host} in total over the pod's containers"))


def _quantity_int(v) -> int | None:
    if type(v) is Int:
        return v.value
    if type(v) is Str and v.value.isdigit():
        return int(v.value)
    return None


def _check_job(job: Dict, path: tuple, kind: str, out: list) -> None:
    pod = _get(job, "template", "spec")
    slice_ = _pod_slice(pod) if pod else None
    if slice_ is None or slice_.hosts == 1 and job.items["parallelism"].value == 1:
        return
    for key in ("parallelism", "completions"):
        v = job.items.get(key)
        if type(v) is Int and v.value != slice_.hosts:
            out.append(_diag("E1007", kind, path + (key,), f"{key} is {v.value} but the "
                             f"{slice_.accelerator}:{slice_.topology} slice has {slice_.hosts} hosts",
                             v.span, hint="one pod a host: parallelism = completions = hosts"))


# schema validation -------------------------------------------------------------------------------
class SchemaIndex:
    """Validators by (apiVersion, kind), loaded from CRD or JSON-schema files."""

    def __init__(self, paths: list[Path], display=str):
        self.paths = paths
        self.display = display  # how to show a schema file's path
        self._schemas: dict = {}
        self._validators: dict = {}
        for p in paths:
            self._load(p)

    def _load(self, path: Path) -> None:
        import yaml

        shown = self.display(path)
        span = Span(shown, 1, 1, 1, 1)
        try:
            text = path.read_text(encoding="utf-8")
            docs = [json.loads(text)] if path.suffix == ".json" else list(
                yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
        except (OSError, ValueError, yaml.YAMLError) as exc:
            raise error("E1102", f"cannot read the Kubernetes schema {shown}: {exc}", None) from None
        found = 0
        for doc in docs:
            if not isinstance(doc, dict):
                continue
            if doc.get("kind") == "CustomResourceDefinition":
                spec = doc.get("spec", {})
                group, kind = spec.get("group"), spec.get("names", {}).get("kind")
                for version in spec.get("versions", []):
                    schema = (version.get("schema") or {}).get("openAPIV3Schema")
                    if schema and group and kind:
                        self._schemas[(f"{group}/{version['name']}", kind)] = schema
                        found += 1
            for gvk in doc.get("x-kubernetes-group-version-kind", []):
                api = f"{gvk['group']}/{gvk['version']}" if gvk.get("group") else gvk["version"]
                self._schemas[(api, gvk["kind"])] = doc
                found += 1
        if not found:
            raise error("E1102", f"{shown} holds no CRD and no schema with x-kubernetes-group-version-kind", span)

    def validator(self, api_version: str, kind: str):
        key = (api_version, kind)
        if key not in self._schemas:
            return None
        if key not in self._validators:
            import jsonschema  # a runtime dependency of rcpc

            self._validators[key] = (jsonschema.Draft7Validator(_structural(self._schemas[key])),
                                     self._schemas[key])
        return self._validators[key]


def _structural(s):
    """An openAPIV3Schema as a JSON schema: Kubernetes extensions made explicit."""
    if isinstance(s, list):
        return [_structural(x) for x in s]
    if not isinstance(s, dict):
        return s
    out = {k: _structural(v) for k, v in s.items() if k not in ("x-kubernetes-validations", "default")}
    if s.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if s.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if s.get("x-kubernetes-preserve-unknown-fields"):
        out.pop("additionalProperties", None)
    elif "properties" in s and "additionalProperties" not in s:
        out["additionalProperties"] = False
    return out


def apply_defaults(data, schema) -> None:
    """The API server's structural defaulting: fill missing properties that have a
    ``default``, recursively (in place, on plain data)."""
    if not isinstance(schema, dict):
        return
    if isinstance(data, dict):
        for k, sub in (schema.get("properties") or {}).items():
            if k not in data and isinstance(sub, dict) and "default" in sub:
                data[k] = copy.deepcopy(sub["default"])
            if k in data:
                apply_defaults(data[k], sub)
    elif isinstance(data, list) and isinstance(schema.get("items"), dict):
        for x in data:
            apply_defaults(x, schema["items"])


def jobset_webhook_defaults(data: dict) -> None:
    """What the JobSet mutating webhook sets before validation (jobset
    ``pkg/webhooks/jobset_webhook.go`` ``Default``)."""
    spec = data.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("successPolicy", {"operator": "All"})
    spec.setdefault("startupPolicy", {"startupPolicyOrder": "AnyOrder"})
    for rj in spec.get("replicatedJobs") or []:
        jspec = (rj.get("template") or {}).get("spec") if isinstance(rj, dict) else None
        if isinstance(jspec, dict):
            jspec.setdefault("completionMode", "Indexed")
            pod = (jspec.get("template") or {}).get("spec")
            if isinstance(pod, dict):
                pod.setdefault("restartPolicy", "OnFailure")
    network = spec.setdefault("network", {})
    if isinstance(network, dict):
        network.setdefault("enableDNSHostnames", True)
        network.setdefault("publishNotReadyAddresses", True)
    rules = (spec.get("failurePolicy") or {}).get("rules") if isinstance(spec.get("failurePolicy"), dict) else None
    for i, rule in enumerate(rules or []):
        if isinstance(rule, dict) and not rule.get("name"):
            rule["name"] = f"failurePolicyRule{i}"


def check_schema(data: Dict, index: SchemaIndex | None) -> list[Diagnostic]:
    """Schema violations of one manifest (none without a schema for its apiVersion/kind)."""
    if index is None:
        return []
    api, kind = data.items.get("apiVersion"), data.items.get("kind")
    if type(api) is not Str or type(kind) is not Str:
        return []
    found = index.validator(api.value, kind.value)
    if found is None:
        return []
    validator, schema = found
    plain = to_python(data)
    apply_defaults(plain, schema)
    if kind.value == "JobSet":
        jobset_webhook_defaults(plain)
    out = []
    for err in sorted(validator.iter_errors(plain), key=lambda e: list(map(str, e.absolute_path))):
        for d in _schema_diags(err, data, kind.value):
            out.append(d)
    return out


def _schema_diags(err, data: Dict, kind: str):
    path = tuple(err.absolute_path)
    node, span = _locate(data, path)
    if err.validator == "additionalProperties" and type(node) is Dict:
        allowed = list((err.schema.get("properties") or {}))
        for k in node.items:
            if k not in allowed:
                yield _diag("E1101", kind, path + (k,), f"unknown field '{k}'", node.key_spans.get(k, span),
                            hint=did_you_mean(k, allowed))
        return
    message = err.message
    if err.validator == "required":
        message = f"missing required field {message.split(' is a required property')[0]}"
    elif err.validator in ("type", "anyOf") and len(message) > 200:
        message = message[:200] + "..."
    yield _diag("E1101", kind, path, message, span)


def _locate(data: Dict, path: tuple):
    """The deepest value along ``path`` and its span (the recipe span that produced it)."""
    node = data
    span = data.span
    for p in path:
        if type(node) is Dict and isinstance(p, str) and p in node.items:
            node = node.items[p]
        elif type(node) is List and isinstance(p, int) and p < len(node.items):
            node = node.items[p]
        else:
            break
        span = node.span
    return node, span
