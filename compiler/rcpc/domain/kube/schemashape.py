"""The part of a manifest a JSON schema can see: what the validation cache keys a *valid*
result on, so that a manifest whose strings changed only where the schema accepts any string
(a container's ``args``, an env value, a name under ``metadata``) is known valid without
jsonschema. In the edit loop that is every JobSet of a recipe after one flag changed, and
across variants every JobSet that differs only in flag text.

:func:`shape` replaces such a string by :data:`ANY_STRING` and keeps everything else. The
rule it rests on (JSON Schema draft 7, §6, as jsonschema's ``Draft7Validator`` applies it
with no format checker): the keywords that can tell two strings apart are ``pattern``,
``minLength``, ``maxLength``, ``enum``, ``const``, ``format`` and the applicators (``allOf``,
``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``, ``$ref``, ``dependencies``); every
other keyword either ignores strings (``properties``, ``items``, ``minimum``, ...) or only
looks at the type. So a string whose schema has none of them (an ``anyOf`` whose branches
have none, as Kubernetes' int-or-string, is allowed) validates whatever its text. A string
is also replaced only where every enclosing object and array is reached through
``properties``, ``additionalProperties`` or a single ``items`` schema, with no keyword on
the way that compares whole values (``enum``, ``const``, ``uniqueItems``, ``contains``,
applicators); below anything else the value is kept as it is. Keys are always kept.

Hence, for a schema ``S`` and manifests ``a``, ``b``: ``shape(a, S) == shape(b, S)`` implies
``a`` is valid under ``S`` exactly when ``b`` is. Only "valid" is cached under a shape; a
result with violations (whose messages quote values) is cached under the exact manifest
(:mod:`rcpc.domain.kube.schemacache`).
"""

from __future__ import annotations


class _AnyString:
    """The stand-in for a string the schema cannot tell from any other; its :func:`repr`
    (what cache keys are made of) is no plain value's."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<any string>"


ANY_STRING = _AnyString()

# Keywords that never make a string's text matter (draft 7; Kubernetes' and rcpc's x- and
# annotation keywords besides). "anyOf" is checked branch by branch.
_TEXT_BLIND = frozenset((
    "type", "nullable", "description", "title", "$comment", "default", "example", "examples",
    "readOnly", "writeOnly", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minItems", "maxItems", "uniqueItems", "items", "additionalItems", "contains",
    "minProperties", "maxProperties", "required", "properties", "additionalProperties",
    "patternProperties", "propertyNames", "anyOf",
))
# Keywords under which an object's values are reached only through properties /
# additionalProperties and nothing compares them whole.
_OBJECT_SAFE = frozenset((
    "type", "nullable", "description", "title", "$comment", "default", "example", "examples",
    "readOnly", "writeOnly", "minProperties", "maxProperties", "required", "properties",
    "additionalProperties", "propertyNames",
    "pattern", "minLength", "maxLength", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "items",  # ignored for objects
))
# Keywords under which an array's items are reached only through one items schema.
_ARRAY_SAFE = frozenset((
    "type", "nullable", "description", "title", "$comment", "default", "example", "examples",
    "readOnly", "writeOnly", "minItems", "maxItems", "items",
    "pattern", "minLength", "maxLength", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minProperties", "maxProperties", "required", "properties",
    "additionalProperties", "propertyNames",  # ignored for arrays
))


def _known(schema: dict, allowed: frozenset) -> bool:
    return all(type(k) is str and (k in allowed or k.startswith("x-")) for k in schema)


def _text_blind(schema) -> bool:
    """True when every string is valid under ``schema`` or none is, whatever its text."""
    if type(schema) is bool:
        return True
    if type(schema) is not dict or not _known(schema, _TEXT_BLIND):
        return False
    branches = schema.get("anyOf")
    return branches is None or (type(branches) is list
                                and all(type(b) is dict and _text_blind(b) for b in branches))


def _nothing(schema) -> bool:
    return type(schema) is bool or schema == {}


def shape(value, schema, memo: dict | None = None):
    """``value`` (plain data: dict, list, str, int, float, bool, None) with each string the
    schema cannot tell from another replaced by :data:`ANY_STRING` (module docstring); a new
    structure, ``value`` is not changed. ``schema``: the JSON schema validation applies
    (:meth:`rcpc.domain.kube.schema.SchemaIndex.structural`), not the CRD's schema as written.
    A schema key that is not a string (YAML allows ``1:``) is not a keyword this module knows:
    the value below it is kept. ``memo``: {id(schema node): (the node, its plan)} of what
    :func:`_plan` found of schema nodes (which depends on the node alone), kept by the caller
    for a schema it shapes values of again (default: this call's). Raises RecursionError past
    Python's depth."""
    return _shape(value, schema, {} if memo is None else memo)


def _plan(schema, memo: dict) -> tuple:
    """What :func:`_shape` does under ``schema``, remembered in ``memo``: (whether a string is
    replaced, how a dict's values are reached: (properties, the schema of the others) or None
    (kept whole), how a list's items are: their schema or None (kept whole))."""
    hit = memo.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    blind = _text_blind(schema)
    if _nothing(schema):
        found = (blind, ({}, True), True)
    else:
        entries = None
        if type(schema) is dict and _known(schema, _OBJECT_SAFE):
            extra = schema.get("additionalProperties", True)
            # a key additionalProperties forbids makes the manifest invalid whatever its value
            entries = (schema.get("properties") or {}, extra if type(extra) is dict else True)
        items = None
        if type(schema) is dict and _known(schema, _ARRAY_SAFE):
            items = schema.get("items", True)
            if type(items) not in (dict, bool):
                items = None
        found = (blind, entries, items)
    memo[id(schema)] = (schema, found)
    return found


def _shape(value, schema, memo: dict):
    kind = type(value)
    if kind is not str and kind is not dict and kind is not list:
        return value
    hit = memo.get(id(schema))
    plan = hit[1] if hit is not None and hit[0] is schema else _plan(schema, memo)
    if kind is str:
        return ANY_STRING if plan[0] else value
    if kind is dict:
        if plan[1] is None:
            return value
        props, rest = plan[1]
        return {k: _shape(v, props[k] if k in props else rest, memo) for k, v in value.items()}
    if plan[2] is None:
        return value
    items = plan[2]
    return [_shape(v, items, memo) for v in value]
