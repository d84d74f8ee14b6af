"""When may a string be written as a plain (unquoted) YAML scalar?

A plain scalar is read back as the same string only if no YAML resolver gives it another
type. Readers differ, so a string is plain only when *every* reader we care about keeps it a
string:

* YAML 1.1 as implemented by PyYAML (OmegaConf, hence MaxText's flag parsing, and our tests):
  bools ``yes/no/on/off/true/false`` in three casings, ints with ``0b``/``0x``/octal/``_``/
  sexagesimal forms, floats needing a ``.``, ``.inf``/``.nan``, nulls ``~``/``null``,
  timestamps, ``<<`` (merge) and ``=`` (value);
* YAML 1.1 as Kubernetes reads it (go-yaml v2, :mod:`rcpc.core.goyaml`, asked for every
  string): also ``y``/``n``, floats such as ``1e3`` and ``08``, ints such as ``0X1F`` and
  ``0_x1F`` (Go's ``strconv`` after the underscores are dropped);
* YAML 1.2 core schema: ``0o17``, ``1e3``, ``.5``;
* OmegaConf's extra float resolver (``1e-5``, ``1_000.5``).

It must also parse as one plain scalar at all: no leading indicator character, no ``: `` or
`` #``, no leading/trailing space, only printable characters, no line breaks.
"""

from __future__ import annotations

import functools
import re

from rcpc.core import goyaml
from rcpc.core import patterns

_AMBIGUOUS = patterns.precompiled(r"""^(?:
    # booleans (YAML 1.1 incl. go-yaml's y/n) and nulls
    y|Y|n|N|yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
  | ~|null|Null|NULL
  # ints: YAML 1.1 (binary, octal, decimal with _, hex, sexagesimal) and 1.2 (0o)
  | [-+]?0b[0-1_]+
  | [-+]?0o?[0-7_]+
  | [-+]?(?:0|[1-9][0-9_]*)
  | [-+]?0x[0-9a-fA-F_]+
  | [-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
  # floats: any digits/dots/underscores with an optional exponent (covers 1.1, 1.2, OmegaConf);
  # written so that no two ways split the digits (a long digit run backtracks linearly)
  | [-+]?(?:[0-9_]*|(?:[0-9][0-9_]*)?\.[0-9_]*)(?:[eE][-+]?[0-9]+)?
  | [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
  | [-+]?\.(?:inf|Inf|INF)
  | \.(?:nan|NaN|NAN)
  # timestamps (YAML 1.1)
  | [0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?
    (?:(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
    (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)?
  # merge and value keys
  | <<|=
)$""", re.VERBOSE)

# First characters that start something other than a plain scalar (YAML indicators), plus
# characters we keep out of plain scalars to stay clear of every reader's corner cases.
_BAD_FIRST = set("-?:,[]{}#&*!|>'\"%@` \t")
# Plain scalars use a conservative printable ASCII set; anything else is quoted. Flow
# indicators ([]{}) are harmless in block context but kept out, so that a reader in flow
# context (and OmegaConf's interpolation grammar) sees a plain string too.
_SAFE_CHARS = patterns.precompiled(r"[A-Za-z0-9 _./:=@+,%~$()<>^\-;*&!?|'\"`#\\]*")


@functools.lru_cache(maxsize=1 << 14)  # keys and values repeat across renders
def plain_ok(s: str) -> bool:
    """True when ``s`` can be written unquoted as a YAML scalar (block context) and every
    reader listed in the module docstring reads it back as the same string."""
    if not s or s[0] in _BAD_FIRST or s[-1] in " \t:" or s.startswith(("---", "...")):
        return False  # "---" and "..." open a line as YAML document markers
    # fullmatch: a '$'-anchored match would accept a string ending in "\n".
    if not _SAFE_CHARS.fullmatch(s):
        return False
    if ": " in s or " #" in s:
        return False
    return not _AMBIGUOUS.fullmatch(s) and goyaml.resolve(s)[0] == goyaml.STR


def single_quoted(s: str) -> str:
    """YAML single-quoted form (``'`` doubled). Only for strings without line breaks."""
    return "'" + s.replace("'", "''") + "'"


_DQ_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0",
               "\a": "\\a", "\b": "\\b", "\v": "\\v", "\f": "\\f", "\x1b": "\\e",
               "\x85": "\\N", "\xa0": "\\_", "\u2028": "\\L", "\u2029": "\\P"}


def double_quoted(s: str) -> str:
    """YAML double-quoted form with escapes for every non-printable character."""
    out = []
    for c in s:
        esc = _DQ_ESCAPES.get(c)
        if esc is not None:
            out.append(esc)
        elif not c.isprintable() or 0xD800 <= ord(c) <= 0xDFFF:
            code = ord(c)
            out.append(f"\\x{code:02x}" if code < 0x100 else
                       f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def needs_double_quotes(s: str) -> bool:
    """True when the single-quoted form cannot hold ``s`` exactly (line breaks, control or
    non-printable characters, which YAML folds or rejects inside single quotes)."""
    return not s.isprintable() or "\xa0" in s or "\u2028" in s or "\u2029" in s or "\x85" in s


def quoted(s: str) -> str:
    """The shortest exact quoted form: single quotes when possible, else double quotes."""
    return double_quoted(s) if needs_double_quotes(s) else single_quoted(s)


def scalar_str(s: str) -> str:
    """A one-line YAML scalar that reads back as exactly ``s``."""
    return s if plain_ok(s) else quoted(s)
