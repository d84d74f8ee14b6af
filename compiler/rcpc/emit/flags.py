"""Flag emission: MaxText ``key=value`` tokens, the argv list, the one-line shell form and
the ``.flags`` file (DESIGN.md §3.1–3.2).

MaxText reads each token with OmegaConf's ``from_cli``: split at the first ``=``, the rest
read as YAML (PyYAML, YAML 1.1 plus OmegaConf's float resolver). So a value is written so
that this reading gives back exactly the recipe's value:

* bools, ints and floats in their source spelling (``True`` stays ``True``, ``1e-6`` stays
  ``1e-6``); None/null as ``null``;
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
from rcpc.values import Bool, Float, Int, List, Null, Str, type_name

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
        if plain_ok(s) and not (in_list and ("," in s or ":" in s)):
            return s
        return quoted(s)
    if t is Int or t is Float or t is Bool:
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
    if _SHELL_SAFE.match(tok):
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
