"""Kubernetes rules for manifests (docs/kubernetes.md), reported at the span that produced the
offending value (a recipe's, or a YAML file's for ``rcpc validate``), with the manifest path
(``spec.replicatedJobs[1].template...``). docs/kubernetes.md lists every rule with its source.

:func:`check_manifest` runs all of them on one manifest value:

* built-in rules (:func:`check_rules`, with or without a schema): ``E1015`` an
  ``apiVersion`` and a ``kind``; ``E1001`` env values are strings; ``E1002``
  ``metadata.name`` (given, not null) and container names; ``E1003`` label and annotation
  values; ``E1004`` container names unique in a pod; ``E1005`` resource quantities, wherever a
  built-in kind holds one (:mod:`rcpc.domain.kube.quantity`);
  ``E1006``/``E1007``/``E1013`` a TPU pod requests its host's chips and its Job runs one pod a
  host, the topology read from the node selector or the GKE slice-topology annotation;
  ``E1008`` strings where Kubernetes wants strings (``command``/``args`` items, ConfigMap and
  Secret data); ``E1009`` label and annotation keys, annotations' total size; for kinds
  without a schema, Kubernetes' pod rules on duplicates (``E1010`` volumes, mount paths;
  ``W1001`` env names, ports, which the API server only warns about); ``E1014`` Kubernetes'
  core validation of pod and Job specs, and ``W1003``-``W1005`` (:mod:`rcpc.domain.kube.pod`);
* Kueue's label rules on Jobs and JobSets (``E1017``, :mod:`rcpc.domain.kube.kueue`);
* the JobSet webhook (:mod:`rcpc.domain.kube.jobset`; its feature-gated rules with ``gates``) and the
  JobSet CRD's CEL rules (``E1016``, :mod:`rcpc.domain.kube.jobset_cel`);
* list types (:func:`rcpc.domain.kube.schema.check_lists`): ``E1010`` two entries of one key in a list the schema
  marks ``x-kubernetes-list-type: map`` (keyed by ``x-kubernetes-list-map-keys``) or
  ``set``, reported at the second entry; for a JobSet with no configured schema, the markers
  of rcpc's built-in JobSet schema;
* schema validation (:mod:`rcpc.domain.kube.schema`, ``kube_schemas`` in rcp.toml): CRDs (their
  ``openAPIV3Schema`` per served version) or plain JSON schemas carrying
  ``x-kubernetes-group-version-kind``, checked with jsonschema after what the API server
  does before validating: it drops nulls the schema does not allow (structural pruning,
  apiextensions-apiserver ``PruneNonNullableNullsWithoutDefaults``), applies ``default:``
  values, and for JobSets the webhook's defaults (:func:`rcpc.domain.kube.jobset.default`). Kubernetes
  extensions: ``x-kubernetes-int-or-string``, ``x-kubernetes-preserve-unknown-fields``,
  ``nullable``; unknown fields are errors (``kubectl apply`` with strict field validation).
  CEL rules (``x-kubernetes-validations``) are not evaluated (the JobSet CRD's are modelled,
  above). ``E1101`` a violation,
  ``E1102`` an unusable schema file; with ``strict_crd``, ``E1012`` what the raw schema
  rejects that the API server or the webhook would have filled in or dropped.
"""

from __future__ import annotations

from rcpc.domain.kube import quantity as kube_quantity, validation as kv
from rcpc.domain.kube.paths import CONTAINER_LISTS as _CONTAINER_LISTS, diag as _diag, manifest_path, value_at
from rcpc.domain.kube.slices import pod_slice
from rcpc.core.diagnostics import Diagnostic
from rcpc.core.values import Dict, Int, List, Null, Str, text_of, type_name

TPU_RESOURCE = "google.com/tpu"
JOBSET_GROUP = "jobset.x-k8s.io"
# metadata.name: a DNS-1123 subdomain, except for the kinds Kubernetes names otherwise
# (core validation ValidateServiceName, ValidateNamespaceName).
_NAME_RULES = {"Service": ("an RFC 1035 label", kv.dns1035_label),
               "Namespace": ("an RFC 1123 label", kv.dns1123_label)}
_JOB_FIELDS = ("parallelism", "completions", "completionMode", "backoffLimit", "podFailurePolicy")  # batch/v1 JobSpec
# Where a kind holds a batch/v1 JobSpec, by the last two steps of its path (a Job's spec, a
# CronJob's jobTemplate.spec, a JobSet's replicatedJobs[].template.spec): one there is a
# JobSpec even when it writes none of the fields above (a pod's spec holds no ``template``).
_JOB_SPECS = {"Job": ("spec",), "CronJob": ("jobTemplate", "spec"), "JobSet": ("template", "spec")}
# Objects whose data maps hold strings (core/v1 ConfigMap data, binaryData; Secret data, stringData).
_STRING_MAPS = {"ConfigMap": ("data", "binaryData"), "Secret": ("data", "stringData")}


def object_kind(data: Dict) -> str:
    """The Kubernetes object kind of manifest ``data`` (its ``kind``; ``manifest`` when it
    has none). Not :func:`rcpc.domain.renders.kind_of` (a render value's render kind)."""
    kind = data.items.get("kind")
    return kind.value if type(kind) is Str else "manifest"


def check_manifest(data: Dict, index=None, strict_crd: bool = False, gates: frozenset = frozenset(),
                   session=None) -> list[Diagnostic]:
    """Every finding on one manifest (errors and warnings; see the module docstring).
    ``index``: the :class:`~rcpc.domain.kube.schema.SchemaIndex` of the configured schemas, if
    any; ``gates``: the JobSet feature gates the cluster runs with (``jobset_feature_gates``);
    ``session``: the :class:`~rcpc.core.session.Session` whose tables remember the large
    values found clean (renders share them; default: remembered for this call only)."""
    from rcpc.domain.kube import jobset, jobset_cel, kueue
    from rcpc.domain.kube.schema import builtin_jobset_schema, check_lists, check_schema

    kind = object_kind(data)
    api = data.items.get("apiVersion")
    api = api.value if type(api) is Str else ""
    schema = index.schema(api, kind) if index is not None else None
    if schema is None and kind == "JobSet" and api.startswith(JOBSET_GROUP + "/"):
        schema = builtin_jobset_schema(session)
    out = check_rules(data, core_lists=schema is None, session=session)
    out += kueue.check(data, kind)
    if kind == "JobSet":
        named = {d.span for d in out if d.code == "E1002"}
        out += [d for d in jobset.check(data, manifest_path, gates) if d.code != "E1002" or d.span not in named]
        out += jobset_cel.check(data)
    if schema is not None:
        out += check_lists(data, schema, kind, session)
    flagged = {d.span for d in out if d.severity == "error"}  # a value a rule already reports
    return out + [d for d in check_schema(data, index, strict_crd) if d.span not in flagged]


# built-in rules ------------------------------------------------------------------------------
def check_rules(data: Dict, core_lists: bool = True, session=None) -> list[Diagnostic]:
    """Every built-in rule violation of one manifest (see the module docstring).
    ``core_lists``: apply Kubernetes' pod rules on duplicate entries (for kinds whose list
    types no schema gives); ``session`` as for :func:`check_manifest`."""
    kind = object_kind(data)
    out: list[Diagnostic] = []
    _check_type(data, out)
    _check_name(data, kind, out)
    _walk(data, (), kind, out, None, core_lists, _clean_table(session))
    for key in _STRING_MAPS.get(kind, ()):
        if type(data.items.get(key)) is Dict:
            for k, value in data.items[key].items.items():
                _want_string(value, (key, k), kind, f"{kind} {key} values", out)
    _check_kind_quantities(data, kind, out)
    for path, pod in pod_specs(data, kind):
        from rcpc.domain.kube import pod as kube_pod

        kube_pod.check_containers_given(pod, path, kind, out)
    return out


# Where a kind holds its pod spec (core/v1, apps/v1, batch/v1; a JobSet's in each replicated job)
_POD_SPEC_PATHS = {"Pod": ("spec",), "PodTemplate": ("template", "spec"),
                   "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
                   **{k: ("spec", "template", "spec") for k in ("Job", "Deployment", "StatefulSet", "DaemonSet",
                                                              "ReplicaSet", "ReplicationController")}}


def pod_specs(data: Dict, kind: str):
    """(path, pod spec) of each pod spec a manifest of ``kind`` holds where its kind puts one."""
    if kind == "JobSet":
        jobs = _get(data, "spec")
        jobs = jobs.items.get("replicatedJobs") if jobs else None
        for i, rj in enumerate(jobs.items if type(jobs) is List else ()):
            pod = _get(rj, "template", "spec", "template", "spec")
            if pod is not None:
                yield ("spec", "replicatedJobs", i, "template", "spec", "template", "spec"), pod
        return
    path = _POD_SPEC_PATHS.get(kind)
    pod = _get(data, *path) if path else None
    if pod is not None:
        yield path, pod


def _check_kind_quantities(data: Dict, kind: str, out: list) -> None:
    """``E1005`` in the quantity maps of a PersistentVolume's, ResourceQuota's or LimitRange's
    spec (:data:`rcpc.domain.kube.quantity.KIND_MAPS`)."""
    spec = data.items.get("spec")
    if type(spec) is not Dict:
        return
    for key in kube_quantity.KIND_MAPS.get(kind, ()):
        kube_quantity.check_map(spec.items.get(key), ("spec", key), kind, out)
    limits = spec.items.get("limits") if kind == "LimitRange" else None
    for i, item in enumerate(limits.items if type(limits) is List else ()):
        for key in kube_quantity.LIMIT_RANGE_MAPS:
            if type(item) is Dict:
                kube_quantity.check_map(item.items.get(key), ("spec", "limits", i, key), kind, out)


def _check_type(data: Dict, out: list) -> None:
    """``E1015``: an object has a non-empty ``apiVersion`` and ``kind`` (kubectl maps the object
    to a resource with them; without one it refuses the document: "apiVersion not set",
    "Object 'Kind' is missing"; a null is empty)."""
    for key in ("apiVersion", "kind"):
        v = data.items.get(key)
        if type(v) is Str and v.value:
            continue
        how = "missing" if v is None else "null" if type(v) is Null else "empty" if type(v) is Str else \
            f"a {type_name(v)}, not a string"
        example = _API_VERSIONS.get(object_kind(data), "v1' or 'batch/v1") if key == "apiVersion" else "JobSet"
        out.append(Diagnostic("E1015", f"{key} is {how}: kubectl cannot tell which resource the object is",
                              (v or data).span, hint=f"give {key} as a string, such as '{example}'"))


_API_VERSIONS = {"Pod": "v1", "ConfigMap": "v1", "Secret": "v1", "Service": "v1", "Job": "batch/v1",
                 "CronJob": "batch/v1", "Deployment": "apps/v1", "StatefulSet": "apps/v1",
                 "JobSet": f"{JOBSET_GROUP}/v1alpha2"}


def _check_name(data: Dict, kind: str, out: list) -> None:
    """``E1002``: ``metadata.name`` is given (or ``generateName``: ValidateObjectMeta, "name or
    generateName is required"; a null is empty) and is a valid name of ``kind``."""
    md = data.items.get("metadata")
    name = md.items.get("name") if type(md) is Dict else None
    gen = md.items.get("generateName") if type(md) is Dict else None
    if type(name) is Str and name.value:
        what, rule = _NAME_RULES.get(kind, ("an RFC 1123 subdomain", kv.dns1123_subdomain))
        problems = rule(name.value)
        if problems:
            out.append(_diag("E1002", kind, ("metadata", "name"), f"{name.value!r} is not {what}: {problems[0]}",
                             name.span, hint="lower-case letters, digits and '-' (Kubernetes object names)"))
        return
    if (type(gen) is Str and gen.value) or (name is not None and type(name) not in (Str, Null)):
        return  # a generated name (the JobSet rules check it), or the wrong type: the schema's
    if name is None and gen is None:
        out.append(_diag("E1002", kind, ("metadata",), "metadata.name is missing",
                         md.span if type(md) is Dict else data.span, hint='add "name": "..." to metadata'))
        return
    given = name if name is not None else gen
    key = "name" if name is not None else "generateName"
    how = "null" if type(given) is Null else "empty"
    out.append(_diag("E1002", kind, ("metadata", key), f"metadata.{key} is {how}: the API server reads it as empty, "
                     "and an object needs a name (or a generateName prefix)", given.span,
                     hint="give the object a name (an unset variable, such as XPK's WORKLOAD_NAME, leaves it empty)"))


def _int(v, default: int) -> int:
    return v.value if type(v) is Int else default


def _get(d, *keys):
    """The dict at ``keys`` under ``d``, or None."""
    d = value_at(d, *keys)
    return d if type(d) is Dict else None


# Keys whose presence in a dict, and last path steps, that make a rule look at the dict
# (:func:`_check_node`); any other dict only has its children visited.
_RULE_KEYS = frozenset(("nodeSelector", "matchLabels", "env", "template", *_CONTAINER_LISTS))
_RULE_STEPS = frozenset(("metadata", "exec", *kube_quantity.QUANTITY_MAPS, *kube_quantity.QUANTITY_FIELDS))


def _walk(v, path: tuple, kind: str, out: list, meta, core_lists: bool, clean: dict) -> None:
    """Visit every dict and list; ``meta`` is the metadata of the object whose ``spec`` ``v``
    is (for a pod spec: its template's labels and annotations). Scalars hold nothing to
    check and are not visited; a dict is checked only when :data:`_RULE_KEYS` or
    :data:`_RULE_STEPS` say a rule may apply to it."""
    if type(v) is List:
        for i, x in enumerate(v.items):
            t = type(x)
            if t is Dict or t is List:
                (_walk_shared if x.size >= _SHARED_SIZE else _walk)(x, path + (i,), kind, out, None, core_lists,
                                                                    clean)
        return
    if type(v) is not Dict:
        return
    items = v.items
    if (path and path[-1] in _RULE_STEPS) or not _RULE_KEYS.isdisjoint(items):
        _check_node(v, path, kind, out, meta, core_lists)
    for k, x in items.items():
        t = type(x)
        if t is Dict or t is List:
            (_walk_shared if x.size >= _SHARED_SIZE else _walk)(
                x, path + (k,), kind, out, items.get("metadata") if k == "spec" else None, core_lists, clean)


# The session's table (rcpc.core.session.Session.table) of values found clean:
# (id(value), last two path steps, id(meta), kind, core_lists) -> (the value, meta): a dict or
# list of at least _SHARED_SIZE found clean there. Renders share values (a recipe's env list in
# each of its JobSets); what the rules find in one depends on nothing else (the path beyond its
# last two steps, which place a JobSpec (_JOB_SPECS), only names a finding). Values are immutable; the entry keeps them so that their ids are
# not reused while it lives.
CLEAN = "rcpc.domain.kube.rules:clean"
_CLEAN_MAX = 1 << 12
_SHARED_SIZE = 16


def _clean_table(session) -> dict:
    """The table of values found clean (:data:`CLEAN`) of ``session``, or one for this call."""
    return session.table(CLEAN) if session is not None else {}


def _walk_shared(v, path: tuple, kind: str, out: list, meta, core_lists: bool, clean: dict) -> None:
    """:func:`_walk` of a large value, skipped where it was found clean before (``clean``,
    the table :data:`CLEAN`)."""
    key = (id(v), path[-2:], id(meta), kind, core_lists)
    hit = clean.get(key)
    if hit is not None and hit[0] is v and hit[1] is meta:
        return
    found = len(out)
    _walk(v, path, kind, out, meta, core_lists, clean)
    if len(out) == found:
        if len(clean) >= _CLEAN_MAX:
            clean.clear()
        clean[key] = (v, meta)


def _check_node(v: Dict, path: tuple, kind: str, out: list, meta, core_lists: bool) -> None:
    """The rules on one dict at ``path`` (not its children)."""
    items = v.items
    if path and path[-1] == "metadata":
        for key in ("labels", "annotations"):
            if type(items.get(key)) is Dict:
                _check_labels(items[key], path + (key,), kind, key == "labels", out)
    for key in ("nodeSelector", "matchLabels"):  # validated as labels (ValidateNodeSelector, ValidateLabelSelector)
        if type(items.get(key)) is Dict:
            _check_labels(items[key], path + (key,), kind, True, out)
    if type(items.get("env")) is List:
        _check_env(items["env"], path + ("env",), kind, out)
    if path[-1:] == ("exec",) and type(items.get("command")) is List:  # probes, lifecycle hooks
        _want_strings(items["command"], path + ("command",), kind, out)
    if any(type(items.get(k)) is List for k in _CONTAINER_LISTS):
        from rcpc.domain.kube import pod as kube_pod

        _check_pod(v, path, kind, out, meta, core_lists)
        kube_quantity.check_map(items.get("overhead"), path + ("overhead",), kind, out, "validateOverhead")
        kube_pod.check_pod(v, path, kind, kind in _JOB_SPECS and path[-2:] == ("template", "spec"), out)
    step = path[-1] if path else None
    for key in kube_quantity.QUANTITY_MAPS.get(step, ()):  # ValidateResourceQuantityValue
        kube_quantity.check_map(items.get(key), path + (key,), kind, out, "ValidateResourceQuantityValue")
    field = kube_quantity.QUANTITY_FIELDS.get(step)
    if field is not None and field in items:
        kube_quantity.check_value(items[field], path + (field,), kind, out,
                                  "validateVolumeSource" if step == "emptyDir" else None)
    if type(items.get("template")) is Dict and (any(k in items for k in _JOB_FIELDS)
                                                 or path[-2:] == _JOB_SPECS.get(kind)):
        from rcpc.domain.kube import pod as kube_pod

        _check_job(v, path, kind, out)
        kube_pod.check_job(v, path, kind, out, jobset=kind == "JobSet" and path[-2:] == ("template", "spec"),
                           core_lists=core_lists)


def _want_strings(items: List, path: tuple, kind: str, out: list) -> None:
    for i, x in enumerate(items.items):
        _want_string(x, path + (i,), kind, f"{path[-1]} items", out)


def _want_string(value, path: tuple, kind: str, what: str, out: list) -> None:
    """``E1008``: ``value`` must be a string (Kubernetes declares the field ``string``); a null
    is what the API server reads as empty."""
    if type(value) in (Str, Null):
        return
    text = text_of(value)
    out.append(_diag("E1008", kind, path, f"{what} are strings, got {type_name(value)}", value.span,
                     hint=f'write "{text}"' if text is not None else None))


def _check_env(env: List, path: tuple, kind: str, out: list) -> None:
    for i, var in enumerate(env.items):
        if type(var) is not Dict or "value" not in var.items:
            continue
        value = var.items["value"]
        if type(value) not in (Str, Null):
            name = var.items.get("name")
            label = f"env var {name.value}" if type(name) is Str else "env var"
            text = text_of(value)
            hint = f'write "{text}"' if text is not None and type(value) is not List else None
            out.append(_diag("E1001", kind, path + (i, "value"),
                             f"{label}: Kubernetes env values are strings, got {type_name(value)}",
                             value.span, hint=hint))


def _check_labels(d: Dict, path: tuple, kind: str, is_labels: bool, out: list) -> None:
    """Keys and values of labels (``ValidateLabels``: qualified names, label values) or of
    annotations (``ValidateAnnotations``: qualified names once lower-cased, any string, at
    most 256 KiB in total)."""
    what = "label" if is_labels else "annotation"
    for k, value in d.items.items():
        problems = kv.qualified_name(k) if is_labels else kv.annotation_key(k)
        if problems:
            out.append(_diag("E1009", kind, path + (k,), f"{what} key {k[:100]!r} is not valid: {problems[0]}",
                             d.key_spans.get(k, d.span),
                             hint="a key is [prefix/]name: an optional DNS subdomain of at most 253 characters, "
                                  "one '/', a name of at most 63 characters"))
        if type(value) is Null:  # the API server reads a null as empty
            continue
        if type(value) is not Str:
            text = text_of(value)
            out.append(_diag("E1003", kind, path + (k,), f"{what} values are strings, got {type_name(value)}",
                             value.span, hint=f'write "{text}"' if text is not None else None))
        elif is_labels and kv.label_value(value.value):
            out.append(_diag("E1003", kind, path + (k,), f"label value {value.value[:100]!r} is not valid: "
                             f"{kv.label_value(value.value)[0]}", value.span,
                             hint=_for_example(kv.as_label_value(value.value))))
    if not is_labels:
        plain = {k: v.value for k, v in d.items.items() if type(v) is Str}
        size = kv.annotations_size(plain)
        if size > kv.ANNOTATIONS_TOTAL_MAX:
            out.append(_diag("E1009", kind, path, f"annotations hold {size} bytes, over the limit of "
                             f"{kv.ANNOTATIONS_TOTAL_MAX}", d.span,
                             hint="keep large data in a ConfigMap and mount it"))


def _for_example(fixed: str) -> str:
    return f"for example {fixed!r}" if fixed else "use letters and digits"


def _named(items, key: str):
    """(index, item, its ``key`` Str) of each dict item with a string ``key``."""
    for i, x in enumerate(items):
        v = x.items.get(key) if type(x) is Dict else None
        if type(v) is Str:
            yield i, x, v


def _check_pod(pod: Dict, path: tuple, kind: str, out: list, meta, core_lists: bool) -> None:
    seen: dict = {}
    for key in _CONTAINER_LISTS:
        group = pod.items.get(key)
        for i, c, name in _named(group.items if type(group) is List else (), "name"):
            where = path + (key, i, "name")
            if name.value and kv.dns1123_label(name.value):  # an empty one: Required (kube_container)
                out.append(_diag("E1002", kind, where, f"container name {name.value!r} is not an RFC 1123 label: "
                                 f"{kv.dns1123_label(name.value)[0]}", name.span,
                                 hint=_for_example(kv.as_dns1123_label(name.value))))
            if name.value in seen:
                out.append(Diagnostic("E1004", f"{kind} {manifest_path(where)}: container name "
                                      f"{name.value!r} is used twice in one pod", name.span,
                                      related=(("first used here", seen[name.value]),),
                                      hint="give each container of a pod its own name"))
            seen.setdefault(name.value, name.span)
            for k in ("command", "args"):
                if type(c.items.get(k)) is List:
                    _want_strings(c.items[k], path + (key, i, k), kind, out)
            if core_lists:
                _core_container_lists(c, path + (key, i), kind, out)
    if core_lists:
        volumes = pod.items.get("volumes")
        _duplicates(volumes.items if type(volumes) is List else (), "name", path + ("volumes",), kind,
                    "E1010", "volume name", out)
    _check_tpu_request(pod, path, kind, out, meta)


def _core_container_lists(c: Dict, path: tuple, kind: str, out: list) -> None:
    """Kubernetes' rules on one container's lists (core validation ValidateVolumeMounts: mount
    paths unique; pkg/api/pod/warnings.go: a repeated env name or port is a warning)."""
    mounts = c.items.get("volumeMounts")
    _duplicates(mounts.items if type(mounts) is List else (), "mountPath", path + ("volumeMounts",), kind,
                "E1010", "mount path", out)
    env = c.items.get("env")
    first: dict = {}
    for i, var, name in _named(env.items if type(env) is List else (), "name"):
        value = var.items.get("value")
        ref = f"$({name.value})"
        # warnings.go: a later definition that extends the earlier one ("$(X)..." ) is fine
        if name.value in first and ("valueFrom" in var.items or type(value) is not Str or value.value == ref
                                    or ref not in value.value):
            out.append(_diag("W1001", kind, path + ("env", i), f"env var {name.value} hides its previous "
                             "definition (the API server warns, and the container gets the last value)",
                             var.span, related=(("previous definition", first[name.value]),),
                             severity="warning", hint="keep one definition of each env var"))
        first.setdefault(name.value, var.span)
    ports = c.items.get("ports")
    seen: dict = {}
    for i, port in enumerate(ports.items if type(ports) is List else ()):
        if type(port) is not Dict or type(port.items.get("containerPort")) is not Int:
            continue
        proto = port.items.get("protocol")
        key = (port.items["containerPort"].value, proto.value if type(proto) is Str else "TCP")
        if key in seen:
            out.append(_diag("W1001", kind, path + ("ports", i), f"duplicate port definition {key[0]}/{key[1]} "
                             "(the API server warns)", port.span, related=(("first defined here", seen[key]),),
                             severity="warning"))
        seen.setdefault(key, port.span)


def _duplicates(items, key: str, path: tuple, kind: str, code: str, what: str, out: list) -> None:
    seen: dict = {}
    for i, item, name in _named(items, key):
        if name.value in seen:
            out.append(_diag(code, kind, path + (i, key), f"{what} {name.value!r} is used twice", name.span,
                             related=(("first used here", seen[name.value]),)))
        seen.setdefault(name.value, name.span)


def _check_tpu_request(pod: Dict, path: tuple, kind: str, out: list, meta) -> None:
    slice_ = pod_slice(pod, meta, path, kind, out)
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
                q = kube_quantity.amount(v)
                if q is not None and q.denominator != 1:
                    return  # a fraction of a chip is E1014's; a sum of whole chips would mislead
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
    """A whole resource quantity's number (``4``, ``"4"``, ``"4000m"``, ``"4e0"``), else None."""
    q = kube_quantity.amount(v)
    return int(q) if q is not None and q.denominator == 1 else None


def _check_job(job: Dict, path: tuple, kind: str, out: list) -> None:
    """``E1007`` on a Job spec whose pods run on a TPU slice: one pod a host. A
    ``parallelism`` left out (or null) is Kubernetes' default, 1."""
    template = _get(job, "template")
    pod = _get(template, "spec")
    slice_ = pod_slice(pod, template.items.get("metadata"), (), kind) if pod else None
    if slice_ is None:
        return
    parallelism = job.items.get("parallelism")
    if type(parallelism) not in (Int, Null) and "parallelism" in job.items:
        return  # the wrong type is the schema's to report
    if slice_.hosts == 1 and (type(parallelism) is not Int or parallelism.value == 1):
        return
    if type(parallelism) is not Int:
        out.append(_diag("E1007", kind, path + ("parallelism",), f"parallelism is not set (Kubernetes runs 1 pod) "
                         f"but the {slice_.accelerator}:{slice_.topology} slice has {slice_.hosts} hosts",
                         parallelism.span if parallelism is not None else job.span,
                         hint="one pod a host: parallelism = completions = hosts"))
    for key in ("parallelism", "completions"):
        v = job.items.get(key)
        if type(v) is Int and v.value != slice_.hosts:
            out.append(_diag("E1007", kind, path + (key,), f"{key} is {v.value} but the "
                             f"{slice_.accelerator}:{slice_.topology} slice has {slice_.hosts} hosts",
                             v.span, hint="one pod a host: parallelism = completions = hosts"))
