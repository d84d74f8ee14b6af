"""Properties of ``merge()`` (:mod:`rcpc.domain.kube.merge`, Kubernetes' strategic merge) over generated
values: nothing of the base is dropped that the patch does not set, everything the patch sets
is in the result, every leaf is the very value (span, provenance) of the side it came from,
merging is associative where the values agree on what each path holds (an object, a keyed
list, anything else: a patch that turns an object into a scalar and a later one that turns it
back are a left fold, as kubectl applies patches, not associative) and idempotent, and ``{}``
is its identity. The rules themselves, by
example, are in tests/spec/merge.rcp."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rcpc.domain.kube.merge import MERGE_KEYS, merge
from rcpc.core.source import Span
from rcpc.core.values import Dict, Int, List, Str, equal

SPAN = Span("t.rcp", 1, 1, 1, 2)
KEYS = ["a", "b", "image", "args", "containers", "env"]


def _dict(items: dict) -> Dict:
    return Dict(items, {k: SPAN for k in items}, SPAN)


scalars = st.one_of(st.integers(-3, 3).map(lambda i: Int(i, str(i), SPAN)),
                    st.sampled_from(["x", "y", ""]).map(lambda s: Str(s, SPAN)))


def _named(children):
    """A keyed list: objects with distinct names."""
    return st.lists(st.tuples(st.sampled_from(["main", "side", "init"]), children), max_size=3,
                    unique_by=lambda t: t[0]).map(
        lambda items: List(tuple(_dict({"name": Str(n, SPAN), **d.items}) for n, d in items), SPAN))


def _values(depth: int):
    if depth == 0:
        return scalars
    inner = _values(depth - 1)
    objects = _objects(depth - 1)
    return st.one_of(scalars, objects, st.lists(inner, max_size=2).map(lambda xs: List(tuple(xs), SPAN)))


def _objects(depth: int):
    if depth < 0:
        return st.just(_dict({}))
    inner = _values(depth)
    keyed = _named(_objects(depth - 1))
    return st.dictionaries(st.sampled_from(KEYS), inner, max_size=4).flatmap(
        lambda d: st.fixed_dictionaries({k: keyed for k in d if k in MERGE_KEYS}).map(
            lambda ks: _dict({k: ks.get(k, v) for k, v in d.items()})))


objects = _objects(2)


def leaves(v, path=()):
    """path → leaf value; a keyed list's items are addressed by their key."""
    if type(v) is Dict:
        out = {}
        for k, x in v.items.items():
            if type(x) is List and k in MERGE_KEYS and all(type(i) is Dict for i in x.items):
                for item in x.items:
                    name = item.items[MERGE_KEYS[k]].value
                    out.update(leaves(item, path + (k, name)))
                if not x.items:
                    out[path + (k,)] = x
            elif type(x) is Dict and x.items:
                out.update(leaves(x, path + (k,)))
            else:
                out[path + (k,)] = x
        return out
    return {path: v}


def same(got, want) -> bool:
    """The very value (a scalar or a list that replaced); an empty merged object or keyed
    list is a container made anew, equal to it."""
    return got is want or (type(want) in (Dict, List) and not want.items and equal(got, want))


def _covered(path, paths) -> bool:
    """``path`` or one of its prefixes is set by the patch."""
    return any(path[:i] in paths for i in range(1, len(path) + 1))


@settings(max_examples=300, deadline=None)
@given(objects, objects)
def test_nothing_is_dropped_and_the_patch_wins(base, patch):
    out = leaves(merge([base, patch], SPAN))
    set_by_patch = leaves(patch)
    for path, value in set_by_patch.items():
        if path in out:  # a leaf of the patch is in the result, as that very value
            assert same(out[path], value)
        else:  # or the base has an object there that the (empty) patch object merged into
            assert type(value) in (Dict, List) and not value.items
    for path, value in leaves(base).items():
        if not _covered(path, set_by_patch) and not any(_covered(p, {path}) for p in set_by_patch):
            assert same(out[path], value)  # provenance: the base's own value, span and all


def kinds(v, path=()) -> dict:
    """path → what it holds ("object", "keyed list", "value"), every path of ``v``."""
    if type(v) is Dict:
        out = {path: "object"}
        for k, x in v.items.items():
            if type(x) is List and k in MERGE_KEYS and all(type(i) is Dict for i in x.items):
                out[path + (k,)] = "keyed list"
                for item in x.items:
                    out.update(kinds(item, path + (k, item.items[MERGE_KEYS[k]].value)))
            else:
                out.update(kinds(x, path + (k,)))
        return out
    return {path: "value"}


def _agree(*values) -> bool:
    seen: dict = {}
    return all(seen.setdefault(p, kind) == kind for v in values for p, kind in kinds(v).items())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(objects, objects, objects)
def test_associative_where_the_kinds_agree(a, b, c):
    assume(_agree(a, b, c))
    assert equal(merge([merge([a, b], SPAN), c], SPAN), merge([a, merge([b, c], SPAN)], SPAN))


def test_a_patch_that_changes_a_kind_is_a_left_fold():
    """{args: {x}} then {args: 0} then {args: {y}}: the scalar dropped x, so y alone (kubectl
    applies patches in turn); grouped the other way, x and y both (hypothesis found it)."""
    one = Int(1, "1", SPAN)
    a, b, c = _dict({"args": _dict({"x": one})}), _dict({"args": Int(0, "0", SPAN)}), _dict({"args": _dict({"y": one})})
    assert list(merge([a, b, c], SPAN).items["args"].items) == ["y"]
    assert list(merge([a, merge([b, c], SPAN)], SPAN).items["args"].items) == ["x", "y"]


@settings(max_examples=200, deadline=None)
@given(objects)
def test_identity_and_idempotence(a):
    empty = _dict({})
    assert equal(merge([a, empty], SPAN), a)
    assert equal(merge([empty, a], SPAN), a)
    assert equal(merge([a, a], SPAN), a)
