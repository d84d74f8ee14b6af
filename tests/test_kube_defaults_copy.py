"""A schema's default put into a manifest is a copy (rcpc.domain.kube.schema._copied): equal to
``copy.deepcopy`` of it, sharing no dict or list with the schema (the manifest is then filled and
pruned in place, so a shared container would carry one manifest's defaults into the next), and
without importing :mod:`copy` for JSON data (a first build's path: tests/test_startup_imports.py)."""

from __future__ import annotations

import copy
import datetime

from hypothesis import example, given, strategies as st

from rcpc.domain.kube.schema import _copied, apply_defaults

_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
# what a YAML schema may hold besides JSON's values (SafeLoader: !!set, !!timestamp, !!pairs' tuples)
_YAML = st.dates() | st.datetimes() | st.frozensets(st.integers(), max_size=3) | st.tuples(st.integers(), st.lists(st.integers(), max_size=2))
_VALUES = st.recursive(_SCALARS | _YAML, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=25)


def _containers(value, out: set) -> set:
    """ids of the dicts and lists reachable from ``value`` through dicts and lists."""
    if type(value) in (dict, list):
        out.add(id(value))
        for v in value.values() if type(value) is dict else value:
            _containers(v, out)
    return out


@given(_VALUES)
@example({"replicas": 1, "template": {"spec": {"containers": [{"ports": []}]}}})
@example([{"a": datetime.date(2026, 12, 6)}, {1, 2}])
def test_a_default_is_copied_as_deepcopy_copies_it_sharing_no_container(value):
    copied = _copied(value)
    assert copied == copy.deepcopy(value)
    assert not _containers(copied, set()) & _containers(value, set())


def test_a_default_filled_into_one_manifest_does_not_reach_the_next():
    schema = {"properties": {"spec": {"default": {"policy": {}}, "properties": {
        "policy": {"properties": {"restart": {"default": "Never"}}}}}}}
    first, second = {}, {}
    apply_defaults(first, schema)
    first["spec"]["policy"]["restart"] = "Always"
    apply_defaults(second, schema)
    assert second == {"spec": {"policy": {"restart": "Never"}}}
    assert schema["properties"]["spec"]["default"] == {"policy": {}}
