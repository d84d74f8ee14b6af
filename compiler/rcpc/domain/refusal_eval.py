"""Decide a MaxText refusal's condition (an expression tree of :mod:`rcpc.domain.refusals`,
read from ``types.py``'s model validators) on config values, as Python decides the ``if``:
``and``/``or`` return an operand, comparisons chain, ``in`` tests a literal tuple, list or set.
Our own small interpreter over the tree's nodes: no ``eval``.
"""

from __future__ import annotations

import operator

_CMP = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
        ">=": operator.ge, "in": lambda a, b: a in b, "not in": lambda a, b: a not in b,
        "is": operator.is_, "is not": operator.is_not}
_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "//": operator.floordiv,
        "%": operator.mod, "**": operator.pow}
_KINDS = {"tuple": tuple, "list": list, "set": frozenset}


class Undecided(Exception):
    """The condition raises in Python for these values (a ``TypeError`` comparing None with
    a number, a division by zero): MaxText fails there, but not with this refusal."""


def holds(tree: dict, values: dict) -> bool:
    """Whether MaxText's ``if`` takes the raising branch for the config ``values`` (field →
    the value pydantic made of it). ``Undecided`` when Python would raise while deciding."""
    try:
        return bool(value(tree, values))
    except (TypeError, ValueError, ArithmeticError, KeyError) as exc:
        raise Undecided(str(exc)) from None


def value(t: dict, values: dict):
    """The Python value of the expression tree ``t`` (the node kinds of
    :meth:`rcpc.domain.refusals._Extractor.expression`)."""
    if "field" in t:
        return values[t["field"]]
    if "const" in t:
        c = t["const"]
        return _KINDS[t["kind"]](c) if "kind" in t else c
    if "not" in t:
        return not value(t["not"], values)
    if "neg" in t:
        return -value(t["neg"], values)
    if "and" in t:
        out = True
        for e in t["and"]:
            out = value(e, values)
            if not out:
                return out
        return out
    if "or" in t:
        out = False
        for e in t["or"]:
            out = value(e, values)
            if out:
                return out
        return out
    if "compare" in t:
        left = value(t["compare"], values)
        for op, e in t["ops"]:
            right = value(e, values)
            if not _CMP[op](left, right):
                return False
            left = right
        return True
    if "op" in t:
        a, b = (value(e, values) for e in t["args"])
        if t["op"] == "**" and isinstance(b, int) and abs(b) > 4096:
            raise ValueError("exponent too large")  # no runaway powers
        return _OPS[t["op"]](a, b)
    if "len" in t:
        return len(value(t["len"], values))
    raise ValueError(f"unknown expression node {sorted(t)}")


def message(parts: list, values: dict) -> str:
    """MaxText's message, its f-string holes of fields filled with the config's values
    (``str()`` as an f-string does); other holes are shown as their source."""
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif "field" in p and p["field"] in values:
            out.append(format(values[p["field"]]))
        else:
            out.append("{" + p.get("expr", p.get("field", "?")) + "}")
    return "".join(out)
