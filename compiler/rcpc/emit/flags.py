"""Flag emission: MaxText ``key=value`` tokens, the argv list, the one-line shell form and
the ``.flags`` file (DESIGN.md §3.1–3.2).

MaxText reads each token with OmegaConf's ``from_cli``: split at the first ``=``, the rest
read as YAML (PyYAML, YAML 1.1 plus OmegaConf's float resolver). So a value is written so
that this reading gives back exactly the recipe's value:

* bools, ints and floats in their source spelling (``True`` stays ``True``, ``1e-6`` stays
  ``1e-6``) when that reads back as the same number, else canonically (``0123`` → ``123``);
  None/null as ``null``;
* a string plain when YAML reads it back as the same string, else YAML-quoted inside the
  token (``profiler=''``, ``run_name='sweep #3'``, ``x='true'``); every ``=`` after the
  first is kept verbatim;
* a list in YAML flow form without spaces (``checkpoint_steps=[5,9]``).

The shell form joins tokens with single spaces, each quoted for POSIX shells only when
needed, so that ``shlex.split(shell) == argv``.
"""

from __future__ import annotations

import re

from rcpc.emit.scalars import plain_ok, quoted
from rcpc.emit.yaml import float_text
from rcpc.values import Bool, Float, Int, List, Null, Str, type_name

# A number keeps its spelling only when OmegaConf's from_cli reads that spelling back as the
# same number: PyYAML's YAML 1.1 resolvers (yaml/resolver.py: a leading 0 means octal, a float
# needs a '.') plus the float resolver OmegaConf adds (omegaconf/_yaml.py get_yaml_loader,
# which reads '1e-6'). Other spellings ('0123' is octal 83, '.5e3' and '-.5' are strings,
# '1_0' from --set for a float is an int) are written in a canonical form instead.
_DECIMAL_INT = re.compile(r"[-+]?(?:0|[1-9][0-9_]*)")
_YAML11_FLOAT = re.compile(r"[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?")
_OMEGACONF_FLOAT = re.compile(r"[-+]?[0-9]+(?:_[0-9]+)*\.[0-9_]*(?:[eE][-+]?[0-9]+)?"
                              r"|[-+]?[0-9]+(?:_[0-9]+)*[eE][-+]?[0-9]+"
                              r"|\.[0-9]+(?:_[0-9]+)*(?:[eE][-+][0-9]+)?")
# Field case F5: MaxText's base.yml spells "no value" as the string None, so a flag holding the
# four letters None must come from a string the author wrote, and is then quoted (x='None')
# so that it visibly stays a string; the null value renders as null.
_QUOTE_ALWAYS = frozenset(("None",))
_SHELL_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")
# Characters with a meaning inside POSIX double quotes (and bash history expansion).
_DQ_SPECIAL = re.compile(r'[$`"\\!]')


class FlagValueError(Exception):
    """A value that has no flag form (a dict or a built-in kind); ``value`` is it."""

    def __init__(self, value, reason: str):
        super().__init__(reason)
        self.value = value


def value_text(v, in_list: bool = False) -> str:
    """The YAML text of a flag value, as it appears after ``key=``."""
    t = type(v)
    if t is Str:
        s = v.value
        if plain_ok(s) and s not in _QUOTE_ALWAYS and not (in_list and ("," in s or ":" in s)):
            return s
        return quoted(s)
    if t is Int:
        return v.text if _DECIMAL_INT.fullmatch(v.text) else str(v.value)
    if t is Float:
        if _YAML11_FLOAT.fullmatch(v.text) or _OMEGACONF_FLOAT.fullmatch(v.text):
            return v.text
        return float_text(v)
    if t is Bool:
        return v.text
    if t is Null:
        return "null"
    if t is List:
        if in_list:
            raise FlagValueError(v, "a flag value cannot be a list of lists")
        return "[" + ",".join(value_text(x, True) for x in v.items) + "]"
    raise FlagValueError(v, f"a flag value cannot be a {type_name(v)}")


def token(key: str, value) -> str:
    """One argv token ``key=value``."""
    return f"{key}={value_text(value)}"


def shell_quote(tok: str) -> str:
    """POSIX-shell quoting, only when needed: bare when every character is safe, in double
    quotes when the token holds single quotes but nothing special inside double quotes
    (``"profiler=''"`` reads better than the all-single-quote form), else in single quotes
    with ``'"'"'`` for each single quote (as :func:`shlex.quote`)."""
    if _SHELL_SAFE.fullmatch(tok):
        return tok
    if "'" in tok and not _DQ_SPECIAL.search(tok):
        return '"' + tok + '"'
    return "'" + tok.replace("'", "'\"'\"'") + "'"


def shell_form(argv: list[str]) -> str:
    """Tokens joined by single spaces, each shell-quoted when needed."""
    return " ".join(shell_quote(t) for t in argv)


def flag_file(argv: list[str]) -> str:
    """The ``.flags`` render: one shell-quoted token per line, LF, one final newline, so a
    review diff shows the flag that changed and ``shlex.split`` of the file gives the argv."""
    return "".join(shell_quote(t) + "\n" for t in argv)
