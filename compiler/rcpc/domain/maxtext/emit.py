"""Flag emission: MaxText ``key=value`` tokens, the argv list, the one-line shell form and
the ``.flags`` file (docs/maxtext.md, *Last key wins* and *Quoting*).

MaxText reads each token with OmegaConf's ``from_cli``: split at the first ``=``, the rest
read as YAML (PyYAML, YAML 1.1 plus OmegaConf's float resolver). So a value is written so
that this reading gives back exactly the recipe's value:

* bools, ints and floats in their source spelling (``True`` stays ``True``, ``1e-6`` stays
  ``1e-6``) when that reads back as the same number, else canonically (``0123`` → ``123``);
  None/null as ``null``;
* a string plain when OmegaConf reads it back as the same string (:func:`reads_plain`: PyYAML
  with OmegaConf's loader, so ``n``, ``y``, ``08``, ``0o17`` and ``-a`` stay bare, while
  ``x='true'``, ``x='on'``, ``x='1e3'`` are quoted), else YAML-quoted inside the token
  (``profiler=''``, ``run_name='sweep #3'``); every ``=`` after the first is kept verbatim;
* a list in YAML flow form without spaces (``checkpoint_steps=[5,9]``), lists of lists too
  (``data_sharding=[[data,fsdp]]``); a dict as a YAML flow mapping (``m={a: 1, b: [x]}``);
* a string is literal: OmegaConf resolves ``${...}`` interpolations in every string value
  (nested ones too), so each ``${`` is escaped as OmegaConf documents (``\\${``, with the
  backslashes before it doubled) and MaxText ends with exactly the recipe's text.

The shell form joins tokens with single spaces, each quoted for POSIX shells only when
needed, so that ``shlex.split(shell) == argv``; as hand-written recipes do, the value part of
a ``key=value`` token is quoted, not the whole token (``prompt='a b.'``).
"""

from __future__ import annotations

import functools
import re

from rcpc.core.emit.scalars import plain_ok, quoted
from rcpc.core.emit.yaml import float_text
from rcpc.core import patterns
from rcpc.core.values import Bool, Dict, Float, Int, List, Null, Str, to_python, type_name

# A number keeps its spelling only when OmegaConf's from_cli reads that spelling back as the
# same number: PyYAML's YAML 1.1 resolvers (yaml/resolver.py: a leading 0 means octal, a float
# needs a '.') plus the float resolver OmegaConf adds (omegaconf/_yaml.py get_yaml_loader,
# which reads '1e-6'). Other spellings ('0123' is octal 83, '.5e3' and '-.5' are strings,
# '1_0' from --set for a float is an int) are written in a canonical form instead.
_DECIMAL_INT = patterns.precompiled(r"[-+]?(?:0|[1-9][0-9_]*)")
_YAML11_FLOAT = patterns.precompiled(r"[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?")
# OmegaConf's float resolver (omegaconf/_utils.py, get_yaml_loader): YAML 1.1 floats, and
# also exponent forms without a dot or without a sign. Also the derived schema's YAML loader
# (:func:`yaml_loader` below, which schemagen uses).
OMEGACONF_FLOAT = patterns.LazyPattern(r"""^(?:
     [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+][0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""", re.X)
# Field case F5: MaxText's base.yml spells "no value" as the string None, so a flag holding the
# four letters None must come from a string the author wrote, and is then quoted (x='None')
# so that it visibly stays a string; the null value renders as null.
_QUOTE_ALWAYS = frozenset(("None",))
_SHELL_SAFE = patterns.precompiled(r"^[A-Za-z0-9_@%+=:,./-]+$")
# The key part of a token whose value part alone is quoted: safe characters, no '='.
_SHELL_KEY = patterns.LazyPattern(r"^[A-Za-z0-9_@%+:,./-]+$")
# Characters with a meaning inside POSIX double quotes (and bash history expansion).
_DQ_SPECIAL = patterns.LazyPattern(r'[$`"\\!]')


_INTERPOLATION = patterns.LazyPattern(r"(\\*)\$\{")
# Strings OmegaConf versions read differently: 2.4 reads "\???" (backslashes, then ???) with
# one backslash fewer (its escape of MISSING), 2.3 verbatim.
_SURROGATE = patterns.LazyPattern("[\ud800-\udfff]")  # the first lone surrogate of a string
_ESCAPED_MISSING = patterns.LazyPattern(r"\\+\?\?\?")


class FlagValueError(Exception):
    """A value with no flag form; ``value`` is it, ``code`` the diagnostic: ``E0304`` (a
    built-in kind), ``E0317`` (a string MaxText could not read back exactly)."""

    def __init__(self, value, reason: str, code: str = "E0304"):
        super().__init__(reason)
        self.value = value
        self.code = code


def escape_interpolations(s: str) -> str:
    """``s`` with every ``${`` escaped for OmegaConf: a run of k backslashes before it
    becomes 2k+1 (omegaconf grammar: ``\\${`` is a literal ``${``, ``\\\\`` a backslash
    before one), so that OmegaConf's resolution gives back ``s``."""
    if "${" not in s:
        return s
    return _INTERPOLATION.sub(lambda m: "\\" * (2 * len(m.group(1)) + 1) + "${", s)


def _readable(v) -> str:
    s = v.value
    lone = None if s.isascii() else _SURROGATE.search(s)
    if lone is not None:
        raise FlagValueError(v, f"the string holds the lone surrogate U+{ord(lone.group()):04X}, which MaxText's "
                             "YAML reader refuses", "E0317")
    if "???" in s and _ESCAPED_MISSING.fullmatch(s):
        raise FlagValueError(v, f"OmegaConf 2.3 and 2.4 read the string {s!r} differently", "E0317")
    return escape_interpolations(s)


@functools.cache
def yaml_loader():
    """PyYAML's (C) SafeLoader with OmegaConf's extra float resolver and without the timestamp
    resolver (``2024-01-01`` stays a string): MaxText's YAML, as OmegaConf reads a config file
    and each ``from_cli`` value (``get_yaml_loader``: omegaconf/_utils.py in 2.3,
    omegaconf/_yaml.py in 2.4; basecontainer.py ``merge_with_dotlist``: ``yaml.load(value, ...)``).
    Made once (cached): one class for every reader, flag values and schemas alike; never
    change it."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc, valid-type]
        pass

    Loader.yaml_implicit_resolvers = {k: list(v) for k, v in base.yaml_implicit_resolvers.items()}
    Loader.add_implicit_resolver("tag:yaml.org,2002:float", OMEGACONF_FLOAT, list("-+0123456789."))
    Loader.yaml_implicit_resolvers = {k: [(tag, r) for tag, r in v if tag != "tag:yaml.org,2002:timestamp"]
                                      for k, v in Loader.yaml_implicit_resolvers.items()}
    return Loader


@functools.lru_cache(maxsize=1 << 12)
def reads_plain(s: str, in_list: bool = False) -> bool:
    """True when OmegaConf's ``from_cli`` reads the value text ``s`` (``in_list``: an item of
    a flow sequence or a value of a flow mapping) back as the string ``s``: plain ``n``,
    ``y``, ``08``, ``0X1F``, ``-a``, ``2024-01-01`` (OmegaConf reads no timestamps); not
    ``on``, ``yes``, ``1e3``, ``null`` (YAML 1.1 bools, OmegaConf's floats, nulls), nor text
    that is not one plain scalar (``a: b``, ``'x``). A string that is not
    :meth:`str.isprintable` (a tab, a control character) is not plain either: its quoted
    form shows it escaped. :func:`rcpc.core.emit.scalars.plain_ok` (every reader's plain
    strings) answers without PyYAML; the rest is asked of PyYAML with :func:`yaml_loader`,
    as OmegaConf asks it."""
    if not s or not s.isprintable():
        return False  # '' is null
    if plain_ok(s) and not (in_list and ("," in s or ":" in s)):
        return True
    if not in_list:  # read as from_cli reads a value (cli_document)
        try:
            got = cli_document(s)
        except NotAScalar:  # not YAML, nor flag data
            return False
        return type(got) is str and got == s
    import yaml

    try:
        items, mapping = (yaml.load(text, Loader=yaml_loader()) for text in (f"[{s}]", f"{{k: {s}}}"))
    except (yaml.YAMLError, ValueError, RecursionError):  # not YAML; a resolved number float() refuses
        return False
    return items == [s] and type(items[0]) is str and mapping == {"k": s} and type(mapping["k"]) is str

# The spellings of null a flag keeps (YAML 1.1's, as OmegaConf reads them; ``None`` is a string there).
_NULLS = frozenset(("null", "Null", "NULL", "~"))


class NotAScalar(ValueError):
    """:func:`cli_reading` of a text OmegaConf does not read as one scalar."""


@functools.lru_cache(maxsize=1 << 12)
def cli_document(text: str):
    """What OmegaConf's ``from_cli`` reads from the value text ``text`` of a ``key=text``
    argument (PyYAML with :func:`yaml_loader`, as ``OmegaConf.from_dotlist`` reads each value:
    omegaconf/basecontainer.py ``merge_with_dotlist``): a scalar (bool, int, float, None, str),
    or a dict or list of them (``{"a":1}``: JSON is YAML); ``on`` is True, ``~`` None, ``0x10``
    16, ``n`` the string ``n``, an empty text ``""`` (``key=`` sets the empty string). Raises
    :class:`NotAScalar` for a text that is not YAML, or holds what a flag value cannot (a
    date, binary data)."""
    if text == "":
        return ""
    import yaml

    try:
        got = yaml.load(text, Loader=yaml_loader())
    except (yaml.YAMLError, ValueError, RecursionError):  # not YAML; a resolved number float() refuses
        raise NotAScalar(text) from None
    if not _plain_data(got):
        raise NotAScalar(text)
    return got


def _plain_data(x, depth: int = 0) -> bool:
    if x is None or type(x) in (bool, int, float, str):
        return True
    if depth > 32:
        return False
    if type(x) is list:
        return all(_plain_data(i, depth + 1) for i in x)
    if type(x) is dict:
        return all(type(k) is str and _plain_data(v, depth + 1) for k, v in x.items())
    return False


def cli_reading(text: str):
    """:func:`cli_document` of a scalar: the bool, int, float, None or str OmegaConf reads
    from ``text``. Raises :class:`NotAScalar` for a text read as a list or mapping, or not as
    YAML at all."""
    got = cli_document(text)
    if type(got) in (list, dict):
        raise NotAScalar(text)
    return got


def _reads_back(text: str, value) -> bool:
    """Whether OmegaConf reads ``text`` back as ``value`` (same types throughout: ``1`` is not
    ``1.0`` nor ``True``): a spelling a flag keeps."""
    try:
        got = cli_document(text)
    except NotAScalar:
        return False
    return type(got) is type(value) and got == value and repr(got) == repr(value)


def value_text(v, in_list: bool = False) -> str:
    """The YAML text of a flag value, as it appears after ``key=``. ``in_list``: inside a
    flow collection. :class:`FlagValueError` for a value with no flag form."""
    t = type(v)
    if t is Str:
        s = _readable(v)
        if s not in _QUOTE_ALWAYS and reads_plain(s, in_list):
            return s
        return quoted(s)
    if t is Int:
        return v.text if _DECIMAL_INT.fullmatch(v.text) or _reads_back(v.text, v.value) else str(v.value)
    if t is Float:
        if _YAML11_FLOAT.fullmatch(v.text) or OMEGACONF_FLOAT.fullmatch(v.text):
            return v.text
        return float_text(v)
    if t is Bool:
        return v.text
    if t is Null:
        return v.text if v.text in _NULLS else "null"
    if t is List:
        return "[" + ",".join(value_text(x, True) for x in v.items) + "]"
    if t is Dict:
        if v.text and _reads_back(v.text, to_python(v)):
            return v.text
        return "{" + ", ".join(f"{_key_text(k, v)}: {value_text(x, True)}" for k, x in v.items.items()) + "}"
    raise FlagValueError(v, f"a flag value cannot be a {type_name(v)}")


def _key_text(k: str, d) -> str:
    """A key of a flow mapping: plain when YAML reads it back as that string, else quoted.
    OmegaConf does not resolve keys, so ``${`` in a key stays as written."""
    span = d.key_spans.get(k, d.span)
    if not k:
        raise FlagValueError(Str(k, span), "OmegaConf refuses an empty key in a flag value")
    lone = None if k.isascii() else _SURROGATE.search(k)
    if lone is not None:
        raise FlagValueError(Str(k, span), f"the key holds the lone surrogate U+{ord(lone.group()):04X}, which "
                             "MaxText's YAML reader refuses", "E0317")
    if plain_ok(k) and k not in _QUOTE_ALWAYS and "," not in k and ":" not in k:
        return k
    return quoted(k)


def token(key: str, value) -> str:
    """One argv token ``key=value``."""
    return f"{key}={value_text(value)}"


def _quote(text: str) -> str:
    """``text`` quoted for POSIX shells: in double quotes when it holds single quotes but
    nothing special inside double quotes (``"''"`` reads better than the all-single-quote
    form), else in single quotes with ``'"'"'`` for each single quote (as :func:`shlex.quote`)."""
    if "'" in text and not _DQ_SPECIAL.search(text):
        return '"' + text + '"'
    return "'" + text.replace("'", "'\"'\"'") + "'"


def shell_quote(tok: str, always: bool = False) -> str:
    """POSIX-shell quoting of one token, only when needed (or ``always``): bare when every
    character is safe; a ``key=value`` token (a key of safe characters) as ``key=`` and its
    value quoted, as hand-written recipes write it (``prompt='a b.'``, ``profiler="''"``);
    any other token quoted whole. The shell's quote removal gives back ``tok`` either way
    (``shlex.split`` and bash read ``key='a b'`` as the one word ``key=a b``)."""
    if _SHELL_SAFE.fullmatch(tok) and not always:
        return tok
    key, eq, value = tok.partition("=")
    if eq and _SHELL_KEY.fullmatch(key):
        return key + "=" + _quote(value)
    return _quote(tok)


def shell_form(argv: list[str], always: frozenset = frozenset()) -> str:
    """Tokens joined by single spaces, each shell-quoted when needed, and the value part of
    each token whose key is in ``always`` quoted anyway."""
    return " ".join(shell_quote(t, t.partition("=")[0] in always) for t in argv)


def flag_file(argv: list[str]) -> str:
    """The ``.flags`` render: one shell-quoted token per line, LF, one final newline, so a
    review diff shows the flag that changed and ``shlex.split`` of the file gives the argv."""
    return "".join(shell_quote(t) + "\n" for t in argv)
