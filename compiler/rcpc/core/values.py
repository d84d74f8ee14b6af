"""Runtime values of the recipe language. Every value carries the :class:`Span` of the
expression that produced it (provenance), and numbers, booleans and nulls keep their source
spelling (``text``) so renders write them as the author did (docs/language.md, *How values are written*).

Scalars: :class:`Null`, :class:`Bool`, :class:`Int`, :class:`Float`, :class:`Str`.
Containers: :class:`List`, :class:`Dict` (insertion-ordered, string keys).
Built-in kinds: :class:`TypeName`, :class:`Builtin`. A host program adds its own kinds
(the recipe domain: :mod:`rcpc.domain.values`); each names itself to the language by a
``TYPE_NAME`` class attribute.
"""

from __future__ import annotations

from collections.abc import Callable

from rcpc.core import record
from rcpc.core.diagnostics import error
from rcpc.core.limits import MAX_NODES
from rcpc.core.source import Span

_value = record.define(frozen=True, eq=False)


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
    (:mod:`rcpc.domain.provenance`). Diff contracts use it to tell a declared flag's tokens from
    everything else in a manifest."""

    value: str
    span: Span
    pieces: tuple = ()




def concat(parts: list, span) -> Str:
    """One string from ``parts`` (``str`` or :class:`Str`), keeping every piece (``Str.pieces``) at
    its new offset. The caller checks the length limit."""
    text: list[str] = []
    pieces: list = []
    at = 0
    for p in parts:
        if type(p) is str:
            text.append(p)
            at += len(p)
            continue
        if p.pieces:
            pieces.extend((s + at, e + at, o) for s, e, o in p.pieces)
        text.append(p.value)
        at += len(p.value)
    return Str("".join(text), span, tuple(pieces))


def join(sep: str, items: list, span) -> Str:
    """``sep.join(items)`` of :class:`Str` items, pieces kept."""
    parts: list = []
    for i, item in enumerate(items):
        if i:
            parts.append(sep)
        parts.append(item)
    return concat(parts, span)


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
    """Set ``size`` (:func:`weight`) and ``has_pieces`` (a string with pieces in it, at any
    depth) of a new list or dict; ``E0802`` past :data:`MAX_NODES`."""
    size = 1  # 1 + the weight of each item, weight inlined (every dict and list made pays this)
    pieces = False
    for v in container.items.values() if type(container) is Dict else container.items:
        t = type(v)
        if t is List or t is Dict:
            size += v.size
            if v.has_pieces:
                pieces = True
        elif t is Str:
            size += 1 + len(v.value) // 16
            if v.pieces:
                pieces = True
        else:
            size += 1
    if size > MAX_NODES:
        raise error("E0802", f"value of more than {MAX_NODES} items (counting nested ones)", container.span,
                    hint="a value reused at several places counts at each; renders this large are a mistake")
    object.__setattr__(container, "size", size)
    if pieces:
        object.__setattr__(container, "has_pieces", True)


@_value
class List:
    """A list. ``size``: its :func:`weight`; ``has_pieces``: whether a string in it, at any
    depth, holds flag-token pieces (:attr:`Str.pieces`): walks that look for flag tokens
    pass over the values without (:mod:`rcpc.domain.embedding`). Both are set as it is made."""

    items: tuple
    span: Span
    size: int = record.field(init=False, default=0)
    has_pieces: bool = record.field(init=False, default=False, repr=False)

    def __attrs_post_init__(self):
        _check_size(self)


@_value
class Dict:
    """String-keyed, insertion-ordered. ``key_spans[k]`` is where key ``k`` was written.
    ``why`` explains how this dict was chosen (for flag provenance): a tuple of
    (condition Span, condition value, params named in it) for each conditional that chose it,
    and (call Span, None, function name) for each function call it was made in. ``text``: the
    spelling a flag writes it in (``cli_value('{"a":1}')``: JSON as a shell recipe wrote it),
    kept while OmegaConf reads that text as these items; "" for a flow mapping of its own.
    ``size`` and ``has_pieces`` as for :class:`List`."""

    items: dict
    key_spans: dict
    span: Span
    why: tuple = ()
    text: str = ""  # its spelling as a flag value (cli_value), "" for none
    size: int = record.field(init=False, default=0)
    has_pieces: bool = record.field(init=False, default=False, repr=False)

    def __attrs_post_init__(self):
        _check_size(self)


@_value
class TypeName:
    """A parameter type: ``bool``, ``int``, ``float`` or ``str``."""

    name: str
    span: Span


@_value
class Builtin:
    """A built-in function (or a method bound to ``receiver``)."""

    name: str
    fn: Callable
    span: Span
    receiver: object = None


TYPE_NAMES = {
    Null: "None", Bool: "bool", Int: "int", Float: "float", Str: "string", List: "list",
    Dict: "dict", TypeName: "type", Builtin: "function",
}


def type_name_of(t: type) -> str:
    """The language's name for value type ``t``: the core's (:data:`TYPE_NAMES`), else the
    type's ``TYPE_NAME`` (a host's kind), else its Python name."""
    return TYPE_NAMES.get(t) or getattr(t, "TYPE_NAME", t.__name__)


def type_name(v) -> str:
    """The language's name for the type of ``v`` (used in error messages)."""
    return type_name_of(type(v))


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
