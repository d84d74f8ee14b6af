"""A deep merge that knows Kubernetes: ``merge(base, patch, ...)`` and ``replace(value)``.

``+`` on dicts is shallow (a key of the right side replaces the left side's value whole, so
nested keys of the left are dropped). :func:`merge` follows Kubernetes' strategic merge patch
(``kubectl apply``, Kustomize patches), each rule explicit:

* **dicts merge** key by key, recursively; a key only in the base is kept, a key only in the
  patch is added at the end (the base's key order is kept);
* **scalars replace**: the patch's value wins (``None`` too: it is a value here, not a
  deletion);
* **lists of objects keyed by a merge key merge** item by item: the lists Kubernetes
  declares with a ``patchMergeKey`` (:data:`MERGE_KEYS`, from ``k8s.io/api/core/v1``'s
  ``types.go`` and JobSet's ``+listMapKey``): ``containers``, ``initContainers``, ``env``,
  ``volumes``, ``imagePullSecrets``, ``replicatedJobs`` by ``name``, ``volumeMounts`` by
  ``mountPath``, ``ports`` by ``containerPort``. An item whose key the base has merges
  into it (in the base's place); a new one is appended. Every item of both lists must be
  an object holding the key, each key once (``E0655`` otherwise: no silent guess);
* **other lists replace** (``args``, ``command``, ``tolerations``...), as in Kubernetes;
* **``replace(value)``** in the patch replaces whatever the base has there, whole (a dict
  or a keyed list too): Kubernetes' ``$patch: replace``.

Provenance is kept per leaf: every value in the result is the very value (with its span and
flag-token pieces) of the side it came from, and each dict's ``key_spans`` name where its
keys were written.
"""

from __future__ import annotations

from rcpc.core import record
from rcpc.core.diagnostics import error
from rcpc.core.source import Span
from rcpc.core.values import TYPE_NAMES, Dict, Int, List, Str, type_name

# Field name → merge key of the lists Kubernetes merges by key (strategic merge patch
# `patchMergeKey` tags of k8s.io/api core/v1 PodSpec, Container; JobSet's ReplicatedJobs
# `+listType=map +listMapKey=name`).
MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "env": "name",
    "volumes": "name", "imagePullSecrets": "name", "replicatedJobs": "name",
    "volumeMounts": "mountPath", "ports": "containerPort",
}


@record.define(frozen=True, eq=False)
class Replace:
    """``replace(value)``: in a :func:`merge` patch, ``value`` replaces the base's value whole."""

    value: object
    span: Span


TYPE_NAMES[Replace] = "replace"


def merge(values: list, span: Span) -> Dict:
    """Strategic merge of ``values`` (dicts), left to right: ``merge(a, b, c)`` is
    ``merge(merge(a, b), c)``. ``E0655`` for a non-dict argument or a keyed list that cannot
    be merged by its key."""
    if len(values) < 2:
        raise error("E0655", f"merge() takes a base and at least one patch, got {len(values)} value(s)", span,
                    hint="write merge(BASE, PATCH, ...)")
    for v in values:
        if type(v) is not Dict:
            raise error("E0655", f"merge() merges dicts, got {'a replace()' if type(v) is Replace else type_name(v)}",
                        v.span, hint="merge(base, patch, ...) of dicts; replace(...) goes inside a patch")
    out = values[0]
    for patch in values[1:]:
        out = _dicts(out, patch, span)
    return out


def _dicts(base: Dict, patch: Dict, span: Span) -> Dict:
    items = dict(base.items)
    spans = dict(base.key_spans)
    for key, value in patch.items.items():
        items[key] = _value(key, base.items[key], value, span) if key in base.items else _plain(value)
        spans[key] = patch.key_spans.get(key, patch.span)
    return Dict(items, spans, base.span, base.why + patch.why)


def _value(field: str, base, patch, span: Span):
    t = type(patch)
    if t is Replace:
        return _plain(patch.value)
    if t is Dict and type(base) is Dict:
        return _dicts(base, patch, span)
    if t is List and type(base) is List and field in MERGE_KEYS:
        return _keyed(field, MERGE_KEYS[field], base, patch, span)
    return _plain(patch)


def _plain(value):
    """A patch value added where the base has nothing: ``replace()`` markers inside it are
    unwrapped (there is nothing to replace); a value without any is returned as it is."""
    t = type(value)
    if t is Replace:
        return _plain(value.value)
    if not _has_replace(value):
        return value
    if t is Dict:
        return record.evolve(value, items={k: _plain(v) for k, v in value.items.items()})
    return List(tuple(_plain(v) for v in value.items), value.span)


def _has_replace(value) -> bool:
    t = type(value)
    if t is Replace:
        return True
    if t is Dict:
        return any(_has_replace(v) for v in value.items.values())
    if t is List:
        return any(_has_replace(v) for v in value.items)
    return False


def _keyed(field: str, key: str, base: List, patch: List, span: Span) -> List:
    """Merge two lists of objects by ``key`` (see the module docstring)."""
    at = {k: i for i, k in enumerate(_keys(field, key, base))}
    out = list(base.items)
    for k, item in zip(_keys(field, key, patch), patch.items):
        if k in at:
            out[at[k]] = _dicts(out[at[k]], item, span)
        else:
            at[k] = len(out)
            out.append(_plain(item))
    return List(tuple(out), base.span)


def _keys(field: str, key: str, lst: List) -> list:
    keys: list = []
    seen: dict = {}
    for item in lst.items:
        k = item.items.get(key) if type(item) is Dict else None
        if type(k) not in (Str, Int):
            raise error("E0655", f"cannot merge '{field}' by '{key}': this {type_name(item)} has no '{key}'",
                        item.span, hint=f"Kubernetes merges '{field}' items by '{key}'; give every item one, "
                        "or write replace([...]) to replace the list whole")
        if k.value in seen:
            raise error("E0655", f"cannot merge '{field}' by '{key}': {k.value!r} appears twice", k.span,
                        related=(("first here", seen[k.value]),),
                        hint=f"each item of a list merged by '{key}' has its own '{key}'")
        seen[k.value] = k.span
        keys.append(k.value)
    return keys
