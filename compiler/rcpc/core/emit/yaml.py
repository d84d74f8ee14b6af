"""Canonical YAML emitter for manifests (docs/kubernetes.md).

Output rules: block style, 2-space indentation, sequences indented under their key, keys in
declared order (never sorted), no line folding at any width, multi-line strings as ``|``
(or ``|-``) block scalars, every string that any YAML 1.1 or 1.2 reader would misread quoted
(:mod:`rcpc.core.emit.scalars`), numbers and booleans in their source spelling when YAML 1.1 and
1.2 both read that spelling as the same value (else a canonical form), LF line ends, exactly
one final newline, no trailing spaces. ``yaml.safe_load(emit(v)) == to_python(v)`` holds for
every value (tested with PyYAML and a YAML 1.2 reader).
"""

from __future__ import annotations

import math

from rcpc.core.emit.scalars import double_quoted, plain_ok, quoted
from rcpc.core import patterns
from rcpc.core.values import Bool, Dict, Float, Int, List, Null, Str, type_name

_INT_BOTH = patterns.precompiled(r"^[-+]?(?:0|[1-9][0-9]*)$")
_FLOAT_BOTH = patterns.LazyPattern(r"^[-+]?[0-9]+\.[0-9]*(?:[eE][-+][0-9]+)?$")
_BOOL_BOTH = frozenset(("true", "True", "TRUE", "false", "False", "FALSE"))


class EmitError(Exception):
    """A value that has no YAML form (a built-in kind such as a tpu_slice); ``value`` is it."""

    def __init__(self, value):
        super().__init__(f"a {type_name(value)} cannot be written to YAML")
        self.value = value


def emit_document(value, session=None) -> str:
    """One YAML document for ``value`` (normally a :class:`Dict`), ending in one newline.
    ``session``: the :class:`~rcpc.core.session.Session` whose tables (:data:`KEYS`,
    :data:`BLOCKS`) keep the keys' forms and the large blocks written, for the documents
    emitted after (default: kept for this document only)."""
    lines: list[str] = []
    memo = (session.table(KEYS), session.table(BLOCKS)) if session is not None else ({}, {})
    if type(value) is Dict and value.items:
        _mapping(value, 0, lines, memo)
    elif type(value) is List and value.items:
        _sequence(value, 0, lines, memo)
    else:
        after: list[str] = []
        lines.append(_inline(value, 0, after))
        lines.extend(after)
    return "\n".join(lines) + "\n"


def int_text(v: Int) -> str:
    """An int's YAML spelling: as written when both YAML versions read it so, else decimal."""
    return v.text if _INT_BOTH.fullmatch(v.text) else str(v.value)


def float_text(v: Float) -> str:
    """A float's YAML spelling: as written when YAML 1.1 (which needs a '.' and a signed
    exponent) and 1.2 both read it as this float, else a canonical form such as ``1.0e-06``."""
    if _FLOAT_BOTH.fullmatch(v.text):
        return v.text
    x = v.value
    if math.isnan(x):
        return ".nan"
    if math.isinf(x):
        return ".inf" if x > 0 else "-.inf"
    r = repr(x)
    mantissa, e, exp = r.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    if e:
        if exp[0] not in "+-":
            exp = "+" + exp
        return f"{mantissa}e{exp}"
    return mantissa


def _block_scalar_ok(s: str) -> bool:
    if "\n" not in s or s.endswith("\n\n") or s.strip("\n") == "":
        return False
    lines = s.rstrip("\n").split("\n")
    first = next(line for line in lines if line)
    if first[0] in " \t":
        return False
    for line in lines:
        if line != line.rstrip(" \t") or not line.isprintable() and line != "":
            return False
    return True


def _str(s: str, indent: int, after: list[str]) -> str:
    if plain_ok(s):
        return s
    if _block_scalar_ok(s):
        pad = " " * (indent + 2)
        for line in s.rstrip("\n").split("\n"):
            after.append(pad + line if line else "")
        return "|" if s.endswith("\n") else "|-"
    if "\n" in s:
        return double_quoted(s)
    return quoted(s)


def _inline(v, indent: int, after: list[str]) -> str:
    t = type(v)
    if t is Str:
        return _str(v.value, indent, after)
    if t is Int:
        return int_text(v)
    if t is Float:
        return float_text(v)
    if t is Bool:
        return v.text if v.text in _BOOL_BOTH else ("true" if v.value else "false")
    if t is Null:
        return "null"
    if t is Dict and not v.items:
        return "{}"
    if t is List and not v.items:
        return "[]"
    raise EmitError(v)


# The session's table (rcpc.core.session.Session.table) of keys written: key -> its YAML form
# (a manifest's keys are few and repeat in every render)
KEYS = "rcpc.core.emit.yaml:keys"
_KEYS_MAX = 1 << 14


def _key(k: str, keys: dict) -> str:
    text = keys.get(k)
    if text is None:
        text = k if plain_ok(k) else quoted(k)
        if len(keys) < _KEYS_MAX:
            keys[k] = text
    return text


# The session's table of blocks written: (id(value), indent) -> (the value, its lines): a dict
# or list of at least _SHARED_SIZE that renders share (a recipe's env list in each of its
# JobSets) is written once. Values are immutable; the entry keeps its value so that the id is
# not reused while it lives (as long as the session, at most _BLOCKS_MAX entries).
BLOCKS = "rcpc.core.emit.yaml:blocks"
_BLOCKS_MAX = 1 << 12
_SHARED_SIZE = 64  # smaller blocks cost more to look up and keep than to write again


def _block(v, indent: int, out: list[str], memo: tuple) -> None:
    """The lines of a non-empty dict or list at ``indent`` (the lines :func:`_mapping` or
    :func:`_sequence` write), from ``memo[1]`` (the table :data:`BLOCKS`) when written before."""
    if v.size < _SHARED_SIZE:
        (_mapping if type(v) is Dict else _sequence)(v, indent, out, memo)
        return
    blocks = memo[1]
    key = (id(v), indent)
    hit = blocks.get(key)
    if hit is not None and hit[0] is v:
        out.extend(hit[1])
        return
    start = len(out)
    (_mapping if type(v) is Dict else _sequence)(v, indent, out, memo)
    if len(blocks) >= _BLOCKS_MAX:
        blocks.clear()
    blocks[key] = (v, out[start:])


# YAML readers (libyaml, so PyYAML's C loader; go-yaml's scanner) take a simple (implicit) key
# of at most 1024 characters ("could not find expected ':'"); a longer one is written as an
# explicit '? key' line, its value on a ': ' line
_SIMPLE_KEY_MAX = 1000


def _mapping(d: Dict, indent: int, out: list[str], memo: tuple) -> None:
    pad = " " * indent
    keys = memo[0]
    for k, v in d.items.items():
        key = keys.get(k) or _key(k, keys)
        if len(key) > _SIMPLE_KEY_MAX:
            out.append(f"{pad}? {key}")
            key = ""
        t = type(v)
        if t is Str:
            s = v.value
            if plain_ok(s):  # the common case, as _inline would write it
                out.append(f"{pad}{key}: {s}")
                continue
        elif t is Dict or t is List:
            if v.items:
                out.append(f"{pad}{key}:")
                _block(v, indent + 2, out, memo)
                continue
        after: list[str] = []
        out.append(f"{pad}{key}: {_inline(v, indent, after)}")
        if after:
            out.extend(after)


def _sequence(items: List, indent: int, out: list[str], memo: tuple) -> None:
    pad = " " * indent
    dash = pad + "- "
    inner = indent + 2
    for v in items.items:
        t = type(v)
        if t is Str:
            s = v.value
            if plain_ok(s):  # the common case, as _inline would write it
                out.append(dash + s)
                continue
        elif (t is Dict or t is List) and v.items:
            start = len(out)
            _block(v, inner, out, memo)
            out[start] = dash + out[start][inner:]
            continue
        after: list[str] = []
        out.append(dash + _inline(v, indent, after))
        if after:
            out.extend(after)
