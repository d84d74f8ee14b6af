"""Decide a MaxText refusal's condition (an expression tree of :mod:`rcpc.domain.maxtext.refusals`,
read from ``types.py``'s model validators) on config values, as Python decides the ``if``:
``and``/``or`` return an operand, comparisons chain, ``in`` tests a literal tuple, list or set.
Our own small interpreter over the tree's nodes: no ``eval``.
"""

from __future__ import annotations

import operator

from rcpc.core.patterns import LazyPattern

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
    :meth:`rcpc.domain.maxtext.refusals._Extractor.expression`)."""
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
    if "call" in t:
        return CALLS[t["call"]](values, *(value(e, values) for e in t["args"]))
    raise ValueError(f"unknown expression node {sorted(t)}")


def _ep_rank(values: dict) -> int:
    """MaxText's expert-parallel rank (types.py ``ep_enabled``, ``infer_ep_axes``,
    ``_normalize_axes``): the product of ``ici_<axis>_parallelism * max(dcn_<axis>_parallelism,
    1)`` over the mesh axes the ``exp`` logical axis maps to in ``logical_axis_rules``; -1 when
    one of them is -1 (to be filled). Reads ``values`` of those keys (KeyError: undecided)."""
    axes: tuple = ()
    for rule in values["logical_axis_rules"] or ():
        if rule and len(rule) >= 2 and rule[0] == "exp":
            found = rule[1]
            axes = (found,) if isinstance(found, str) else tuple(a for a in found if isinstance(a, str)) \
                if isinstance(found, (list, tuple)) else ()
            break
    rank = 1
    for axis in axes:
        ici, dcn = values.get(f"ici_{axis}_parallelism", 1), values.get(f"dcn_{axis}_parallelism", 1)
        if ici == -1 or dcn == -1:
            return -1
        rank *= ici * max(dcn, 1)
    return rank


def _power_of_two(values: dict, n) -> bool:
    """``2**floor(log2(n)) == n`` as types.py's ``get_individual_scales`` tests it (False for
    n <= 0, where math.log2 raises)."""
    return type(n) is int and n > 0 and n & (n - 1) == 0


# The dtype names jnp.dtype() reads (numpy's type names and ml_dtypes' that jax registers),
# besides numpy's type codes (_TYPESTR).
_DTYPES = frozenset((
    "bool", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
    "float32", "float64", "float128", "complex64", "complex128", "complex256", "half", "single", "double",
    "longdouble", "float", "int", "uint", "complex", "byte", "ubyte", "short", "ushort", "intc", "uintc",
    "long", "ulong", "longlong", "ulonglong", "intp", "uintp", "csingle", "cdouble", "clongdouble", "object",
    "str", "bytes", "void", "datetime64", "timedelta64", "bfloat16", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e4m3b11fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu",
    "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "int2", "int4", "uint2", "uint4", "float0"))
_TYPESTR = LazyPattern(r"[<>=|]?[?bBhHiIlLqQpPeEfdgFDGSaUVOMmc]\d*(?:\[\w+\])?")


def _numpy_dtype(values: dict, name) -> bool:
    """Whether ``jnp.dtype(name)`` reads the string ``name`` (pyconfig.py ``HyperParameters``
    makes ``mu_dtype`` a dtype so): a known name or a NumPy type code (``f4``, ``<f8``)."""
    return type(name) is str and (name in _DTYPES or bool(_TYPESTR.fullmatch(name)))


# the functions a ``{"call": name, "args": [...]}`` node names (rcpc/domain/maxtext/refusal_rules.py)
CALLS = {"ep_rank": _ep_rank, "power_of_two": _power_of_two, "numpy_dtype": _numpy_dtype,
         "lower": lambda values, s: s.lower() if type(s) is str else s}


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
