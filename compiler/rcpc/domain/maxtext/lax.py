"""Pydantic's lax mode over the values MaxText hands it, for the type nodes of
:mod:`rcpc.domain.maxtext.schemagen`: what ``MaxTextConfig(**values)`` accepts, converts or refuses.

The input is plain data as OmegaConf gives it (``None``, ``bool``, ``int``, ``float``,
``str``, lists and string-keyed dicts). The rules follow pydantic v2's conversion table
(https://docs.pydantic.dev/latest/concepts/conversion_table/, lax mode, Python input) and
its smart-mode unions; ``tests/test_lax.py`` checks them against the real pydantic over
generated values:

* ``int``: an int; a bool; a finite float with no fractional part; a string of decimal digits
  (surrounding whitespace, a sign, ``_`` between digits and a ``.0…`` tail allowed);
* ``float``: a float; an int or bool; a string Python-like float (``1e-5``, ``.5``, ``5.``,
  ``inf``, ``nan``, ``_`` between digits), surrounding whitespace allowed unless it has a ``_``;
* ``bool``: a bool; 0 or 1 (int or float); a string that is, in any case, one of ``0 off f
  false n no`` or ``1 on t true y yes``;
* ``str``: only a string (an int is refused);
* literals and string enums: an equal string; int enums: an int as converted above;
* lists: a list, item by item; dicts: a dict, value by value; models: a dict, field by field
  (an unknown key refused when the model forbids extras, else dropped);
* unions: the first member the value matches exactly, else the first that converts it.

Bounds (``ge gt le lt``) are checked on the converted number.
"""

from __future__ import annotations

import math
import re

from rcpc.core.patterns import LazyPattern

_TRUE = frozenset(("1", "on", "t", "true", "y", "yes"))
_FALSE = frozenset(("0", "off", "f", "false", "n", "no"))
_INT_TEXT = LazyPattern(r"[+-]?[0-9]+(?:_[0-9]+)*(?:\.0+)?")
_FLOAT_TEXT = LazyPattern(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_FLOAT_WORDS = LazyPattern(r"[+-]?(?:inf|infinity|nan)", re.I)
_I64 = 1 << 63
# Unicode White_Space (what pydantic-core's Rust str::trim strips; Python's str.strip also
# strips U+001C..U+001F, which are not White_Space)
_WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008" \
               "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"

# failure kinds, least to most specific: the value is of another type / not one of the
# choices / out of bounds / an unknown key of a model that forbids extras
TYPE, CHOICE, BOUND, EXTRA = 0, 1, 2, 3


class Invalid(Exception):
    """``kind`` (TYPE, CHOICE, BOUND, EXTRA), ``path`` (list indices and dict keys below
    the flag's value) and ``expected`` (a description of the type node that refused it)."""

    def __init__(self, kind: int, expected: str, path: tuple = ()):
        super().__init__(expected)
        self.kind, self.expected, self.path = kind, expected, path


def validate(t: dict, v, path: tuple = (), ignored: list | None = None):
    """The value pydantic makes of ``v`` for type node ``t``; :class:`Invalid` when it
    refuses it. ``ignored`` (when given) receives the paths of dict keys a model drops."""
    kind = t["type"]
    if kind == "any" or kind == "validated":
        return v
    if kind == "none":
        if v is None:
            return None
        raise Invalid(TYPE, "None", path)
    if kind == "bool":
        return _bool(v, path)
    if kind in ("int", "float"):
        n = _int(v, path) if kind == "int" else _float(v, path)
        _bounds(t, n, path)
        return n
    if kind == "str":
        if type(v) is str:
            return v
        raise Invalid(TYPE, "str", path)
    if kind == "literal":
        for x in t["values"]:
            if type(x) is type(v) and x == v:
                return v
        raise Invalid(CHOICE if type(v) in {type(x) for x in t["values"]} else TYPE, describe(t), path)
    if kind == "enum":
        return _enum(t, v, path)
    if kind == "list":
        if type(v) is not list:
            raise Invalid(TYPE, describe(t), path)
        return [validate(t["items"], x, (*path, i), ignored) for i, x in enumerate(v)]
    if kind == "dict":
        if type(v) is not dict:
            raise Invalid(TYPE, describe(t), path)
        return {k: validate(t["values"], x, (*path, k), ignored) for k, x in v.items()}
    if kind == "model":
        return _model(t, v, path, ignored)
    if kind == "union":
        return _union(t, v, path, ignored)
    raise ValueError(f"unknown type node {kind!r}")


def _bool(v, path):
    if type(v) is bool:
        return v
    if type(v) in (int, float) and v in (0, 1):
        return bool(v)
    if type(v) is str:
        low = v.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
    raise Invalid(TYPE, "bool", path)


def _int(v, path):
    t = type(v)
    if t is int or t is bool:
        return int(v)
    if t is float and math.isfinite(v) and v == int(v) and -_I64 <= v < _I64:
        return int(v)
    if t is str:
        s = v.strip(_WHITE_SPACE)
        if not _INT_TEXT.fullmatch(s):
            s = _without_leading_zeros(s)
        if s is not None and _INT_TEXT.fullmatch(s):
            return int(s.split(".")[0].replace("_", ""))
    raise Invalid(TYPE, "int", path)


def _without_leading_zeros(s: str) -> str | None:
    """pydantic-core's second reading of an int's text: after the sign, a run of zeros and
    underscores that starts with a zero goes (``"0__0"`` is 0, ``"-0__1"`` -1, ``"0__"`` is
    refused), keeping the last zero before a ``.`` or at the end. None when the text does not
    start so. (pydantic-core also reads ``"0-1"`` as -1; rcpc refuses that.)"""
    sign, body = (s[0], s[1:]) if s[:1] in ("+", "-") else ("", s)
    if body[:1] != "0":
        return None
    i = 1
    while i < len(body) and body[i] in "0_":
        i += 1
    rest = body[-1] if i == len(body) else body[i - 1:] if body[i] == "." else body[i:]
    return sign + rest if rest[:1] not in ("+", "-") else None


def _float(v, path):
    t = type(v)
    if t is float:
        return v
    if t is int or t is bool:
        try:
            return float(v)
        except OverflowError:
            raise Invalid(TYPE, "float", path) from None
    if t is str:
        s = v if "_" in v else v.strip(_WHITE_SPACE)  # pydantic-core strips no space around a "_" form
        if _FLOAT_WORDS.fullmatch(s):
            return float(s)
        if not s.startswith("_") and not s.endswith("_") and "__" not in s:
            plain = s.replace("_", "")
            if _FLOAT_TEXT.fullmatch(plain):
                return float(plain)
    raise Invalid(TYPE, "float", path)


def _bounds(t: dict, n, path) -> None:
    ok = all(op not in t or test(n, t[op]) for op, test in (
        ("ge", lambda a, b: a >= b), ("gt", lambda a, b: a > b),
        ("le", lambda a, b: a <= b), ("lt", lambda a, b: a < b)))
    if not ok:
        raise Invalid(BOUND, describe(t), path)


def _enum(t: dict, v, path):
    values = t["values"]
    if t["kind"] == "int":
        try:
            n = _int(v, path)
        except Invalid:
            raise Invalid(TYPE, describe(t), path) from None
        if values is None or n in values:
            return n
        raise Invalid(CHOICE, describe(t), path)
    if type(v) is not str:
        raise Invalid(TYPE, describe(t), path)
    if values is None or v in values:
        return v
    raise Invalid(CHOICE, describe(t), path)


def _model(t: dict, v, path, ignored):
    if type(v) is not dict:
        raise Invalid(TYPE, describe(t), path)
    out = {}
    for k, x in v.items():
        f = t["fields"].get(k)
        if f is None:
            if t["extra"] == "forbid":
                raise Invalid(EXTRA, describe(t), (*path, k))
            if ignored is not None:
                ignored.append((*path, k))
            continue
        out[k] = validate(f["type"], x, (*path, k), ignored)
    for k, f in t["fields"].items():
        if k not in out and "default" not in f and "default_expr" not in f:
            raise Invalid(TYPE, f"{describe(t)} with '{k}' set", (*path, k))
    return out


_EXACT = {"none": lambda v: v is None, "bool": lambda v: type(v) is bool, "int": lambda v: type(v) is int,
          "float": lambda v: type(v) is float, "str": lambda v: type(v) is str,
          "list": lambda v: type(v) is list, "dict": lambda v: type(v) is dict, "model": lambda v: type(v) is dict}


def _union(t: dict, v, path, ignored):
    best = None
    for member in t["of"]:  # smart mode: a member of the value's own type first
        exact = _EXACT.get(member["type"])
        if exact is not None and exact(v):
            try:
                return validate(member, v, path, ignored)
            except Invalid as exc:
                best = exc if best is None or exc.kind > best.kind else best
    for member in t["of"]:
        try:
            return validate(member, v, path, ignored)
        except Invalid as exc:
            best = exc if best is None or exc.kind > best.kind else best
    if best is not None and best.kind > TYPE:
        raise best
    raise Invalid(TYPE, describe(t), path)


def describe(t: dict) -> str:
    """A type node in words: ``int >= 0``, ``int or None``, ``one of 'a', 'b'``, ``list of str``."""
    kind = t["type"]
    if kind in ("int", "float"):
        ops = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
        bounds = [f"{ops[op]} {t[op]}" for op in ("gt", "ge", "lt", "le") if op in t]
        return kind + (" " + " and ".join(bounds) if bounds else "")
    if kind in ("bool", "str", "any"):
        return kind
    if kind == "none":
        return "None"
    if kind in ("literal", "enum"):
        values = t["values"]
        if values is None:
            return f"{t['name']} (a string)"
        return "one of " + ", ".join(repr(x) for x in values)
    if kind == "list":
        return "list of " + describe(t["items"])
    if kind == "dict":
        return "dict of " + describe(t["values"])
    if kind == "model":
        return f"{t['name']} (a mapping)"
    if kind == "union":
        return " or ".join(describe(m) for m in t["of"])
    if kind == "validated":
        return f"any (converted by {t['by']})"
    return kind


def accepts_none(t: dict) -> bool:
    """Whether ``None`` is a valid value of type node ``t``."""
    try:
        validate(t, None)
        return True
    except Invalid:
        return False
