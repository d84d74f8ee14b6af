"""Kubernetes resource quantities (``"500m"``, ``"16Gi"``, ``4``): which texts the API server
reads as one, and their amount. Mirrors apimachinery ``pkg/api/resource/quantity.go``
(``ParseQuantity``, ``parseQuantityString``) and ``suffix.go`` (``suffixHandler.interpret``),
the parser, not only the grammar its comment gives::

    <quantity> ::= <signedNumber><suffix>
    <number>   ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>   ::= Ki | Mi | Gi | Ti | Pi | Ei | n | u | m | "" | k | M | G | T | P | E
                 | e<signedNumber> | E<signedNumber>

What the parser accepts beyond the grammar, and so the API server does too: a number part
that is empty or only a sign or a point (``"-"``, ``"."``, ``"+."``, ``"Gi"`` and ``"e3"``
are all 0); an exponent of any int64 (``"1e99999"``), cut to 32 bits (``int32(parsed)``:
``"1e4294967296"`` is 1). What it refuses that the grammar would suggest: an exponent with a
fraction (``"1e1.5"``), other cases of the suffixes (``"1ki"``, ``"1KI"``, ``"1K"``), anything
around the text (``" 1"``), and a number of no digit with an exponent below -9
(``"e-10"``: ``ErrNumeric``). A JSON number is read from its text (``Quantity.UnmarshalJSON``),
so YAML's ``4`` and ``0.5`` are quantities too, and a null is the zero quantity.

The amount is exact (an int when it is whole, else a :class:`~fractions.Fraction`: a build's
quantities are whole, and it imports neither :mod:`fractions` nor :mod:`decimal`), with the
parser's two adjustments: a
value finer than 10^-9 is rounded away from zero to it (``"0.1n"`` is 1n), and a binary-SI
amount is capped at 2^63-1. An exponent beyond ±:data:`MAX_EXPONENT` is taken at that bound
(the amounts compared by the rules are then still ordered, if not exact).
"""

from __future__ import annotations

import math

from rcpc.core.patterns import LazyPattern
from rcpc.core.values import Dict, Float, Int, Null, Str, text_of, type_name
from rcpc.domain.kube.paths import diag

_DECIMAL_SI = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SI = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")  # parseQuantityString: what a suffix may start with
_DIGITS = frozenset("0123456789")
_INT64_MAX = 2 ** 63 - 1
# what Go's json.Marshal writes as an escape inside a string (and control characters)
_JSON_ESCAPED = frozenset('"\\<>&\u2028\u2029')
# Go's unicode.IsSpace, which strings.TrimSpace trims (Python's str.strip also trims \x1c-\x1f)
GO_SPACE = "".join(sorted(set("\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000")
                          | {chr(c) for c in range(0x2000, 0x200B)}))
_NANO = 10 ** 9  # nanos in one
# The pattern controller-gen writes for every resource.Quantity field of a CRD (the JobSet CRD's
# ``x-kubernetes-int-or-string`` quantities, ../shared/data/jobset/), its '$' the end of the text
# as in Go's regexp.
CRD_PATTERN = LazyPattern(r"(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                         r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?\Z")
MAX_EXPONENT = 400


def _scan(text: str) -> tuple[str, str, str, str] | None:
    """``parseQuantityString``: (sign, numerator digits, fraction digits, suffix), or None for
    ``ErrFormatWrong``. Leading zeros are dropped; all-zero text (after a sign) is 0; a
    numerator of no digits is "0"."""
    pos, end = 0, len(text)
    sign = ""
    if pos < end and text[0] in "+-":
        sign = text[0]
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return sign, "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        return None
    return sign, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int] | None:
    """``suffixHandler.interpret``: (base, exponent) of a suffix, or None (``ErrSuffix``)."""
    if suffix in _DECIMAL_SI:
        return 10, _DECIMAL_SI[suffix]
    if suffix in _BINARY_SI:
        return 2, _BINARY_SI[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[0] in "+-" else digits
        if not body or not body.isascii() or not body.isdigit():
            return None
        parsed = int(digits)
        if not -2 ** 63 <= parsed < 2 ** 63:  # strconv.ParseInt(s, 10, 64): out of range
            return None
        return 10, (parsed + 2 ** 31) % 2 ** 32 - 2 ** 31  # int32(parsed)
    return None


def parse(text: str) -> int | Fraction | None:
    """The amount of quantity ``text`` as ``resource.ParseQuantity`` reads it (an int when it is
    whole, else a Fraction), or None when it refuses it (see the module docstring)."""
    if text.isdigit() and text.isascii():  # the common case, as the parser reads it: the number
        return int(text)
    if not text:
        return None
    scanned = _scan(text)
    if scanned is None:
        return None
    sign, num, denom, suffix = scanned
    found = _interpret(suffix)
    if found is None:
        return None
    base, exponent = found
    if base == 10 and exponent + 9 < len(denom) and not any(c in _DIGITS for c in text[:len(text) - len(suffix)]):
        return None  # below the nano, ParseQuantity reads the number with inf.Dec: no digit, ErrNumeric
    # the amount is top / bottom (both ints, top >= 0)
    top, bottom = int(num + denom), 10 ** len(denom)
    if base == 10:
        exponent = max(-MAX_EXPONENT, min(MAX_EXPONENT, exponent))
        if exponent >= 0:
            top *= 10 ** exponent
        else:
            bottom *= 10 ** -exponent
    else:
        top *= 2 ** exponent
    if top * _NANO % bottom:  # rounded up (away from zero) to the nano
        top, bottom = top * _NANO // bottom + 1, _NANO
    amount = _exact(top, bottom)
    if base == 2 and amount > _INT64_MAX:
        amount = _INT64_MAX
    return -amount if sign == "-" else amount


def _exact(top: int, bottom: int) -> int | Fraction:
    """``top / bottom`` exactly: an int when it is whole, else a Fraction (lowest terms)."""
    whole, rest = divmod(top, bottom)
    if not rest:
        return whole
    from fractions import Fraction

    return Fraction(top, bottom)


def go_json_number(value: float) -> str:
    """The text Go's ``encoding/json`` writes for the finite float64 ``value`` (what kubectl
    sends for a YAML float): the shortest digits that read back as ``value``, plain from
    10^-6 up to 10^21 (``0.5``, ``4``), else as ``1e+21``/``1e-7``."""

    short = repr(value)
    if value == 0 or 1e-6 <= abs(value) < 1e21:
        from decimal import Decimal

        text = format(Decimal(short), "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    mantissa, _, exp = short.partition("e")
    return f"{mantissa.removesuffix('.0')}e{exp[0]}{exp[1:].lstrip('0').rjust(2 if exp[0] == '+' else 1, '0')}"


def amount(value, crd: bool = False) -> int | Fraction | None:
    """The amount of a manifest value where a quantity is wanted, as ``Quantity.UnmarshalJSON``
    reads what kubectl sends: a string without the white space around it (Go's
    ``strings.TrimSpace``; but a character Go's JSON encoder escapes, such as a tab or a
    newline, reaches the parser as its escape, which it refuses), an int or float from its
    JSON number, a null as 0 (an int when the amount is whole, else a Fraction); None for
    anything else (a bool, a list, a dict). With ``crd``
    (a custom resource's field, such as a JobSet's pod template), a string must first match
    the pattern the CRD's structural schema gives every quantity (:data:`CRD_PATTERN`):
    the API server checks it before the controller ever parses the value."""
    t = type(value)
    if t is Str:
        text = value.value
        if crd and not CRD_PATTERN.match(text):
            return None
        if any(c in _JSON_ESCAPED or c < " " for c in text):
            return None
        return parse(text.strip(GO_SPACE))
    if t is Int:  # its JSON text is its digits, which parse() reads as the number
        return value.value
    if t is Float:
        return parse(go_json_number(value.value)) if math.isfinite(value.value) else None
    if t is Null:
        return 0
    return None  # a bool, a list, a dict


# where built-in kinds hold quantities ------------------------------------------------------------
# A dict at a path ending in one of these steps holds quantities under the keys given: maps of
# resource names to quantities ("resources": a container's, a pod's, a PersistentVolumeClaim
# spec's, an ephemeral volume's claim template's), or one quantity.
QUANTITY_MAPS = {"resources": ("limits", "requests")}
QUANTITY_FIELDS = {"emptyDir": "sizeLimit", "resourceFieldRef": "divisor"}
# maps of quantities in the spec of these kinds (core/v1 PersistentVolumeSpec.capacity,
# ResourceQuotaSpec.hard; LimitRangeSpec.limits[] items)
KIND_MAPS = {"PersistentVolume": ("capacity",), "ResourceQuota": ("hard",)}
LIMIT_RANGE_MAPS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")
# The kinds of k8s.io/api that hold quantities: their fields are read by Go (Quantity.UnmarshalJSON);
# any other kind is taken for a custom resource, whose schema gives CRD_PATTERN first.
BUILTIN_KINDS = frozenset(("Pod", "PodTemplate", "ReplicationController", "ReplicaSet", "Deployment", "StatefulSet",
                           "DaemonSet", "Job", "CronJob", "PersistentVolume", "PersistentVolumeClaim",
                           "ResourceQuota", "LimitRange", "Node"))
QUANTITY_HINT = 'write a number or a string such as "4", "500m", "16Gi"'


def check_value(value, path: tuple, kind: str, out: list, nonnegative: str | None = None) -> None:
    """``E1005`` when ``value`` is not a quantity (:func:`amount`; for a ``kind`` not in
    :data:`BUILTIN_KINDS`, as a custom resource's); with ``nonnegative`` (the rule's name,
    for the message), ``E1014`` when it is below 0."""

    found = amount(value, kind not in BUILTIN_KINDS)
    shown = text_of(value)
    if found is None:
        what = repr(shown) if shown is not None else f"a {type_name(value)}"
        out.append(diag("E1005", kind, path, f"{what} is not a resource quantity", value.span, hint=QUANTITY_HINT))
    elif found < 0 and nonnegative:
        out.append(diag("E1014", kind, path, f"{path[-1]} is {shown}: it must be greater than or equal to 0 "
                        f"({nonnegative})", value.span, hint="give 0 or more"))


def check_map(d, path: tuple, kind: str, out: list, nonnegative: str | None = None) -> None:
    """:func:`check_value` on every value of the map ``d`` (resource name → quantity)."""

    if type(d) is Dict:
        for k, value in d.items.items():
            check_value(value, path + (k,), kind, out, nonnegative)
