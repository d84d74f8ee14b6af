"""Compact JSON of a value (the ``json()`` built-in), keys in declared order, no spaces,
numbers in their source spelling when that spelling is valid JSON (RFC 8259), else the
canonical Python spelling; bools ``true``/``false``; None ``null``."""

from __future__ import annotations

import json

from rcpc.core import patterns
from rcpc.core.values import Bool, Dict, Float, Int, List, Null, Str, type_name

_JSON_NUMBER = patterns.precompiled(r"^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$")


class JsonError(Exception):
    def __init__(self, value):
        super().__init__(f"a {type_name(value)} has no JSON form")
        self.value = value


def to_json(v) -> str:
    """Compact JSON text of ``v``. Raises :class:`JsonError` for built-in kinds and
    non-finite floats."""
    t = type(v)
    if t is Str:
        return json.dumps(v.value, ensure_ascii=False)
    if t is Bool:
        return "true" if v.value else "false"
    if t is Null:
        return "null"
    if t is Int:
        return v.text if _JSON_NUMBER.fullmatch(v.text) else str(v.value)
    if t is Float:
        if v.value != v.value or v.value in (float("inf"), float("-inf")):
            raise JsonError(v)
        return v.text if _JSON_NUMBER.fullmatch(v.text) else repr(v.value)
    if t is List:
        return "[" + ",".join(to_json(x) for x in v.items) + "]"
    if t is Dict:
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + to_json(x)
                              for k, x in v.items.items()) + "}"
    raise JsonError(v)
