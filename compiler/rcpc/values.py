"""Runtime values of the recipe language. Every value carries the :class:`Span` of the
expression that produced it (provenance), and numbers, booleans and nulls keep their source
spelling (``text``) so renders write them as the author did (DESIGN.md §2).

Scalars: :class:`Null`, :class:`Bool`, :class:`Int`, :class:`Float`, :class:`Str`.
Containers: :class:`List`, :class:`Dict` (insertion-ordered, string keys).
Built-in kinds: :class:`FlagSet`, :class:`TpuSlice`, :class:`Manifest`, :class:`FlagFile`,
:class:`Variant`, :class:`Param`, :class:`TypeName`, :class:`Builtin`.
"""

from __future__ import annotations

from typing import Any, Callable

import attrs

from rcpc.limits import MAX_NODES
from rcpc.source import Span

_value = attrs.define(slots=True, frozen=True, eq=False, repr=True)


@_value
class Null:
    text: str
    span: Span


@_value
class Bool:
    value: bool
    text: str
    span: Span


@_value
class Int:
    value: int
    text: str
    span: Span


@_value
class Float:
    value: float
    text: str
    span: Span


@_value
class Str:
    """A string. ``pieces`` is its flag-token provenance: ``((start, end, FlagToken), ...)``,
    the character ranges of ``value`` that are tokens of a flag set (``.argv`` items, the
    ``.shell`` form, and whatever f-strings, ``+`` and ``join`` build from them), in order
    (:mod:`rcpc.provenance`). Diff contracts use it to tell a declared flag's tokens from
    everything else in a manifest."""

    value: str
    span: Span
    pieces: tuple = ()




def weight(v) -> int:
    """What a value costs to render: 1 a value, plus 1 every 16 characters of a string, with
    nested (and shared) containers counted in full."""
    t = type(v)
    if t is List or t is Dict:
        return v.size
    if t is Str:
        return 1 + len(v.value) // 16
    return 1


def _check_size(container) -> None:
    size = 1 + sum(map(weight, container.items.values() if type(container) is Dict else container.items))
    if size > MAX_NODES:
        from rcpc.diagnostics import error

        raise error("E0802", f"value of more than {MAX_NODES} items (counting nested ones)", container.span,
                    hint="a value reused at several places counts at each; renders this large are a mistake")
    object.__setattr__(container, "size", size)


@_value
class List:
    items: tuple
    span: Span
    size: int = attrs.field(init=False, default=0)

    def __attrs_post_init__(self):
        _check_size(self)


@_value
class Dict:
    """String-keyed, insertion-ordered. ``key_spans[k]`` is where key ``k`` was written.
    ``why`` explains how this dict was chosen (for flag provenance): a tuple of
    (condition Span, condition value, params named in it) for each conditional that chose it,
    and (call Span, None, function name) for each function call it was made in."""

    items: dict
    key_spans: dict
    span: Span
    why: tuple = ()
    size: int = attrs.field(init=False, default=0)

    def __attrs_post_init__(self):
        _check_size(self)


@_value
class FlagEntry:
    """One ``key=value`` of a flag-set layer."""

    key: str
    key_span: Span
    value: Any


@_value
class FlagLayer:
    """An ordered map of flags (a dict written in a recipe); ``why`` as for :class:`Dict`."""

    entries: tuple
    span: Span
    why: tuple = ()


@_value
class FlagSet:
    """MaxText flags as ordered layers: a later layer's key overrides an earlier one's
    (MaxText keeps the last value of a repeated key), DESIGN.md §3.1."""

    layers: tuple
    span: Span
    schema: Any = None  # the MaxTextSchema its keys were checked against, if any


@_value
class TpuSlice:
    """A TPU slice (see :mod:`rcpc.tpu`); attributes are exposed to recipes by name."""

    generation: str
    accelerator: str
    topology: str
    dims: tuple
    chips: int
    hosts: int
    chips_per_host: int
    devices_per_chip: int
    machine_type: str
    span: Span

    @property
    def devices(self) -> int:
        return self.chips * self.devices_per_chip


@_value
class Manifest:
    """A Kubernetes object to render as ``<name>.yaml``; ``data`` is a :class:`Dict`."""

    name: str
    data: Dict
    span: Span


@_value
class FlagFile:
    """A flag set to render as ``<name>.flags`` (one token per line, shell-quoted)."""

    name: str
    flags: FlagSet
    span: Span


@_value
class Variant:
    """``variant(name, set = {...}, against = ..., changes = {...})``."""

    name: str
    sets: Dict
    against: str | None
    changes: Dict | None
    span: Span


@_value
class TypeName:
    """A parameter type: ``bool``, ``int``, ``float`` or ``str``."""

    name: str
    span: Span


@_value
class Param:
    """A declared, typed recipe parameter (``NAME = param(type, default = ..., ...)``)."""

    name: str
    type: str
    default: Any
    choices: tuple | None
    doc: str
    span: Span


@_value
class Builtin:
    """A built-in function (or a method bound to ``receiver``)."""

    name: str
    fn: Callable
    span: Span
    receiver: Any = None


TYPE_NAMES = {
    Null: "None", Bool: "bool", Int: "int", Float: "float", Str: "string", List: "list",
    Dict: "dict", FlagSet: "maxtext_flags", TpuSlice: "tpu_slice", Manifest: "manifest",
    FlagFile: "flag_file", Variant: "variant", TypeName: "type", Param: "param",
    Builtin: "function",
}


def type_name(v) -> str:
    """The language's name for the type of ``v`` (used in error messages)."""
    return TYPE_NAMES.get(type(v), type(v).__name__)


def to_python(v):
    """Plain Python data of a value: None/bool/int/float/str/list/dict (recursively).
    Raises TypeError for built-in kinds that have no data form."""
    t = type(v)
    if t is Str or t is Int or t is Float or t is Bool:
        return v.value
    if t is Null:
        return None
    if t is List:
        return [to_python(x) for x in v.items]
    if t is Dict:
        return {k: to_python(x) for k, x in v.items.items()}
    raise TypeError(type_name(v))


def equal(a, b) -> bool:
    """Language equality: same type and equal contents (int and float compare by value;
    a bool never equals a number, as in Starlark; dicts compare regardless of key order)."""
    ta, tb = type(a), type(b)
    if ta in (Int, Float) and tb in (Int, Float):
        return a.value == b.value
    if ta is not tb:
        return False
    if ta is Null:
        return True
    if ta in (Str, Bool):
        return a.value == b.value
    if ta is List:
        return len(a.items) == len(b.items) and all(equal(x, y) for x, y in zip(a.items, b.items))
    if ta is Dict:
        return (a.items.keys() == b.items.keys()  # as in Python: key order does not matter
                and all(equal(a.items[k], b.items[k]) for k in a.items))
    return a is b


def text_of(v) -> str | None:
    """The spelling of a scalar as interpolated into strings and flags (``True`` stays
    ``True``, ``1e-6`` stays ``1e-6``, None/null is ``null``), or None for non-scalars."""
    t = type(v)
    if t is Str:
        return v.value
    if t is Int or t is Float or t is Bool:
        return v.text
    if t is Null:
        return "null"
    return None
