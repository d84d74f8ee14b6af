"""YAML scalars as Kubernetes reads them: go-yaml v2, through sigs.k8s.io/yaml.

``kubectl`` (apimachinery's YAML decoder) and the API server turn YAML into JSON with
``sigs.k8s.io/yaml`` ``YAMLToJSON``, which unmarshals with its fork of go-yaml v2
(``goyaml.v2/resolve.go`` ``resolve``) into ``interface{}`` and converts the keys
(``yaml.go`` ``convertToJSONableObject``). Its YAML 1.1 differs from PyYAML's in ways that
change a manifest's meaning:

* bools are ``y Y yes Yes YES true True TRUE on On ON`` and ``n N no No NO false False FALSE
  off Off OFF`` (PyYAML has no ``y``/``n``); nulls ``~ null Null NULL`` and the empty scalar;
* a plain scalar starting with a digit or a sign is, after its underscores are dropped, an
  int when Go's ``strconv.ParseInt(s, 0, 64)`` (or ``ParseUint``) reads it: ``0x1F``,
  ``0X1F``, ``0o17``, ``0O17``, ``0b101``, ``0777`` (octal), ``0_x1F``; else a float when it
  matches ``^[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?$`` and is in range:
  ``1e-5``, ``1e3``, ``08`` (8.0), a decimal beyond 64 bits; else, when the int was only
  out of range, a big int (``0x`` and 17 hex digits);
* a plain scalar starting with ``.`` is a float when ``strconv.ParseFloat`` reads it (no
  underscores): ``.5``, ``.5e3``; ``.inf``/``.nan`` spellings as in YAML 1.1;
* no base-60 numbers (``1:30`` is a string), and a timestamp stays its text (go-yaml v2 keeps
  timestamp-like scalars as strings when decoding into ``interface{}``);
* quoted and block scalars are strings; a scalar with an explicit tag is resolved as the tag
  says (``!!float 1`` is 1.0, ``!!binary`` is decoded from base64, :func:`resolve_tagged`),
  and a tag the text cannot have is an error; a scalar with the non-specific tag ``!`` or a
  tag of an application is its text (``resolvableTag``).

A mapping key becomes a JSON key: a string as is, an int in decimal, a bool ``true`` or
``false``, a float in Go's shortest ``float32`` ``%g`` form (``1e+06``); a null, a big int or
an unsigned 64-bit key is an error. A NaN or infinite value cannot be written as JSON
(``encoding/json``: unsupported value), so such a manifest never reaches the server.

What rcpc writes (:mod:`rcpc.core.emit.scalars`) is plain only when :func:`resolve` reads it
back as the same string.
"""

from __future__ import annotations

import math

from rcpc.core import patterns

STR, INT, FLOAT, BOOL, NULL = "str", "int", "float", "bool", "null"

_MAP = {**{w: True for w in ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")},
        **{w: False for w in ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")},
        **{w: None for w in ("", "~", "null", "Null", "NULL")},
        **{w: math.nan for w in (".nan", ".NaN", ".NAN")},
        **{w: math.inf for w in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF")},
        **{w: -math.inf for w in ("-.inf", "-.Inf", "-.INF")}}
_STYLE_FLOAT = patterns.precompiled(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_DOT_FLOAT = patterns.LazyPattern(r"\.[0-9]+(?:[eE][-+]?[0-9]+)?")  # what ParseFloat reads of a text opening with '.'
_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}
_RANGE, _SYNTAX = "range", "syntax"
INT64 = (-(1 << 63), (1 << 63) - 1)
UINT64 = (1 << 64) - 1


def _parse_uint(s: str, base: int) -> int | str:
    """Go's ``strconv.ParseUint(s, base, 64)`` for a ``s`` without underscores: the value, or
    ``_SYNTAX``/``_RANGE``. Base 0 reads a ``0b``/``0o``/``0x`` prefix (any case) or a leading
    ``0`` (octal), else decimal."""
    if not s:
        return _SYNTAX
    if base == 0:
        base = 10
        if s[0] == "0":
            prefix = s[1:2].lower() if len(s) >= 3 else ""
            base = {"b": 2, "o": 8, "x": 16}.get(prefix, 8)
            s = s[2:] if prefix in ("b", "o", "x") else s[1:]
            if not s:
                return 0  # "0", and "00" reads the second 0 as octal
    digits = _DIGITS[base]
    if not all(c in digits for c in s):
        return _SYNTAX
    n = int(s, base)
    return n if n <= UINT64 else _RANGE


def _parse_int(s: str, base: int = 0) -> int | str:
    """Go's ``strconv.ParseInt(s, base, 64)``: an optional sign, then :func:`_parse_uint`."""
    if not s:
        return _SYNTAX
    sign = -1 if s[0] == "-" else 1
    u = _parse_uint(s[1:] if s[0] in "+-" else s, base)
    if type(u) is str:
        return u
    n = sign * u
    return n if INT64[0] <= n <= INT64[1] else _RANGE


def _float(s: str) -> float | None:
    """``strconv.ParseFloat(s, 64)`` of a decimal text already matched by a pattern: the value,
    or None when it is out of range (ParseFloat's ErrRange; an underflow reads as 0)."""
    x = float(s)
    return None if math.isinf(x) else x


def _big(s: str) -> int | None:
    """``big.Int.SetString(s, 0)``: a sign, then a ``0b``/``0o``/``0x``/``0`` prefix or decimal."""
    sign = -1 if s[:1] == "-" else 1
    body = s[1:] if s[:1] in "+-" else s
    base = 10
    if body[:1] == "0" and len(body) > 1:
        prefix = body[1].lower()
        base = {"b": 2, "o": 8, "x": 16}.get(prefix, 8)
        body = body[2:] if prefix in ("b", "o", "x") else body[1:]
    if not body or not all(c in _DIGITS[base] for c in body):
        return None
    return sign * int(body, base)


def resolve(text: str) -> tuple[str, object]:
    """(kind, value) of the plain, untagged scalar ``text`` as go-yaml v2 reads it into
    ``interface{}``: ``("bool", True)``, ``("null", None)``, ``("int", 31)``, ``("float", 1e-05)``
    or ``("str", text)``. The rules are the module docstring's."""
    if text in _MAP:
        v = _MAP[text]
        return (BOOL if type(v) is bool else NULL if v is None else FLOAT), v
    first = text[0]
    if first == ".":
        return (FLOAT, _float(text)) if _DOT_FLOAT.fullmatch(text) and _float(text) is not None else (STR, text)
    if not (first in "+-" or "0" <= first <= "9"):
        return STR, text  # the letters of the bools and nulls were looked up above
    plain = text.replace("_", "")
    n = _parse_int(plain)
    if type(n) is int:
        return INT, n
    u = _parse_uint(plain, 0)
    if type(u) is int:
        return INT, u
    if _STYLE_FLOAT.fullmatch(plain):
        x = _float(plain)
        if x is not None:
            return FLOAT, x
    for prefix, sign in (("0b", ""), ("-0b", "-")):
        if plain.startswith(prefix):
            b = _parse_int(sign + plain[len(prefix):], 2)
            if type(b) is int:
                return INT, b
            b = _parse_uint(plain[len(prefix):], 2) if not sign else b
            if type(b) is int:
                return INT, b
            break
    if u == _RANGE:  # ParseUint's error decides, as the last one go-yaml keeps
        big = _big(plain)
        if big is not None:
            return INT, big
    return STR, text


def resolve_tagged(tag: str, text: str) -> tuple[str, object] | None:
    """(kind, value) of a scalar with the explicit YAML tag ``tag`` (``str``, ``int``,
    ``float``, ``bool``, ``null``, ``binary``, ``timestamp`` of ``tag:yaml.org,2002:``); None
    when go-yaml refuses it (``resolve``'s deferred check: "cannot decode !!str `x` as a
    !!int"; ``decoder.scalar``: "!!binary value contains invalid base64 data"). ``!!str``
    takes any text; ``!!binary`` is base64 and reads as the bytes it encodes (Go's
    ``base64.StdEncoding.DecodeString``, line breaks ignored; bytes that are not UTF-8 become
    U+FFFD as ``encoding/json`` writes them); ``!!timestamp`` keeps its text when
    :func:`parse_timestamp` reads it; ``!!float`` takes an int that fits Go's ``int`` (an
    ``int64``) too, not a ``uint64`` or a big int (the deferred check switches on ``int64`` and
    ``int`` only)."""
    if tag == STR:
        return STR, text
    if tag == "binary":
        data = _base64(text)
        return None if data is None else (STR, data.decode("utf-8", errors="replace"))
    if tag == "timestamp":
        return (STR, text) if parse_timestamp(text) else None
    kind, value = resolve(text)
    if kind == tag:
        return kind, value
    if tag == FLOAT and kind == INT and INT64[0] <= value <= INT64[1]:
        return FLOAT, float(value)
    return None


_B64 = patterns.LazyPattern(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def _base64(text: str) -> bytes | None:
    """Go's ``base64.StdEncoding.DecodeString(text)``: ``\\r`` and ``\\n`` are skipped, then
    the text is padded standard base64 (any other character, a missing or extra ``=``, is an
    error: None)."""
    import base64

    body = text.replace("\r", "").replace("\n", "")
    if not _B64.fullmatch(body):
        return None
    return base64.b64decode(body)


# go-yaml v2 resolve.go allowedTimestampFormats, as Go's time.Parse reads each layout: a 4-digit
# year; a month, day, hour, minute, second of one or two digits; an optional fraction of a
# second after '.' or ','; 'Z' or a ±hh:mm offset
_TIMESTAMPS = (
    patterns.LazyPattern(r"(\d{4})-(\d\d?)-(\d\d?)[Tt](\d\d?):(\d\d?):(\d\d?)(?:[.,]\d+)?(?:Z|[-+](\d\d):(\d\d))"),
    patterns.LazyPattern(r"(\d{4})-(\d\d?)-(\d\d?) (\d\d?):(\d\d?):(\d\d?)(?:[.,]\d+)?"),
    patterns.LazyPattern(r"(\d{4})-(\d\d?)-(\d\d?)"),
)


def parse_timestamp(s: str) -> bool:
    """go-yaml v2 ``parseTimestamp``: True when one of ``allowedTimestampFormats``
    (``2006-1-2T15:4:5.999999999Z07:00``, the same with ``t``, ``2006-1-2 15:4:5.999999999``,
    ``2006-1-2``) reads ``s`` with Go's ``time.Parse``, whose ranges apply: month 1-12, a day
    of that month (29 February in leap years), hour < 24, minute and second < 60, a zone offset
    of at most 24 hours and 60 minutes."""
    import calendar

    for pattern in _TIMESTAMPS:
        m = pattern.fullmatch(s)
        if m is None:
            continue
        year, month, day, *rest = (None if g is None else int(g) for g in m.groups())
        if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year or 2000, month)[1]:  # year 0 is leap
            continue
        if rest and (rest[0] >= 24 or rest[1] >= 60 or rest[2] >= 60):
            continue
        if len(rest) > 3 and rest[3] is not None and (rest[3] > 24 or rest[4] > 60):
            continue
        return True
    return False


def json_key(kind: str, value) -> str | None:
    """The JSON object key ``sigs.k8s.io/yaml`` makes of a mapping key read as (``kind``,
    ``value``); None for a key it refuses (null, or an int outside ``int64``)."""
    if kind == STR:
        return value
    if kind == BOOL:
        return "true" if value else "false"
    if kind == INT:
        return str(value) if INT64[0] <= value <= INT64[1] else None
    if kind == FLOAT:
        return float32_g(value)
    return None


def float32_g(x: float) -> str:
    """Go's ``strconv.FormatFloat(x, 'g', -1, 32)`` with go-yaml's names for the infinities and
    NaN: the shortest decimal that reads back as the same ``float32`` (of those, the nearest),
    in ``%e`` form when its exponent is below -4 or at least 6 (``1e+06``, ``1e-05``,
    ``100000``, ``0.5``). "Reads back" is lying in the ``float32``'s rounding interval, which
    is narrower below a power of two (Go's shortest formatting, ``ryuFtoaShortest``, allows
    for it: 2**-96 is ``1.2621775e-29``, not the correctly rounded ``1.2621774e-29``'s
    9-digit neighbour)."""
    import struct
    from fractions import Fraction

    if math.isnan(x):
        return ".nan"
    try:
        f = struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        f = math.copysign(math.inf, x)
    if math.isinf(f):
        return ".inf" if f > 0 else "-.inf"
    if f == 0:
        return "-0" if math.copysign(1, f) < 0 else "0"
    sign = "-" if f < 0 else ""
    bits = struct.unpack("<I", struct.pack("<f", abs(f)))[0]
    exact = Fraction(abs(f))
    up = Fraction(struct.unpack("<f", struct.pack("<I", bits + 1))[0]) if bits + 1 < 0x7F800000 else \
        exact + (exact - Fraction(struct.unpack("<f", struct.pack("<I", bits - 1))[0]))
    down = Fraction(struct.unpack("<f", struct.pack("<I", bits - 1))[0]) if bits > 1 else Fraction(0)
    lo, hi, even = (down + exact) / 2, (exact + up) / 2, bits % 2 == 0

    def reads_back(q: Fraction) -> bool:  # rounds to this float32 (ties to the even mantissa)
        return lo <= q <= hi if even else lo < q < hi

    for p in range(1, 10):
        mantissa, _, exp_text = f"{abs(f):.{p - 1}e}".partition("e")
        nearest, exp = int(mantissa.replace(".", "")), int(exp_text) - (p - 1)
        scale = Fraction(10) ** exp
        fits = [m for m in (nearest - 1, nearest, nearest + 1) if m > 0 and reads_back(m * scale)]
        if fits:
            m = min(fits, key=lambda m: (abs(m * scale - exact), m % 2))
            break
    digits = str(m).rstrip("0")
    exp = exp + len(str(m)) - 1  # of the first digit
    if exp < -4 or exp >= 6:
        tail = f".{digits[1:]}" if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{tail}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp >= 0:
        whole, frac = digits[:exp + 1].ljust(exp + 1, "0"), digits[exp + 1:]
        return sign + whole + (f".{frac}" if frac else "")
    return f"{sign}0.{'0' * (-exp - 1)}{digits}"
