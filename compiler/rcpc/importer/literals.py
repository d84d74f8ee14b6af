"""Recipe source text for imported values (docs/language.md): string literals, f-strings
holding param references, and the spellings of MaxText flag values that
:func:`rcpc.domain.maxtext.emit.value_text` writes back exactly."""

from __future__ import annotations

import re

import attrs

from rcpc.core.diagnostics import CompileError
from rcpc.core.limits import INT_LIMIT
from rcpc.core.source import Span
from rcpc.core.values import Str
from rcpc.domain.builtins import of_reading
from rcpc.domain.maxtext.emit import FlagValueError, NotAScalar, cli_document, cli_reading, shell_quote, token

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# a number as written (:func:`number`): an int in decimal without leading zeros, or a float with
# a '.' or an exponent; a '-' before either (the recipe language has no unary '+')
_NUMBER = re.compile(r"-?(?:(0|[1-9][0-9]*)|[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+)")
_BOOLS = ("True", "False", "true", "false")


@attrs.frozen
class Ref:
    """An expression inside an f-string or a concatenation: ``text`` is recipe source
    (a name, ``NAME.shell``)."""

    text: str


def _escape(s: str) -> str:
    out = []
    for c in s:
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    return "".join(out)


def string(s: str) -> str:
    """A double-quoted string literal of ``s``."""
    return '"' + _escape(s) + '"'


def fstring(pieces) -> str:
    """Source of the string made of ``pieces`` (``str`` text and :class:`Ref`): a plain
    literal when there is no :class:`Ref`, else an f-string (``{``/``}`` doubled)."""
    pieces = [p for p in pieces if p != ""]
    if not any(isinstance(p, Ref) for p in pieces):
        return string("".join(pieces))
    if len(pieces) == 1:  # the whole string is one param: its name
        return pieces[0].text
    out = []
    for p in pieces:
        if isinstance(p, Ref):
            out.append("{" + p.text + "}")
        else:
            out.append(_escape(p).replace("{", "{{").replace("}", "}}"))
    return 'f"' + "".join(out) + '"'


def placeholders(text: str, names) -> list:
    """``text`` split into text and :class:`Ref` pieces at each ``${NAME}`` or ``$NAME`` of
    ``names`` (envsubst's two forms, gettext envsubst(1)); other ``$`` text stays."""
    pieces: list = []
    i = last = 0
    while True:
        i = text.find("$", i)
        if i < 0:
            break
        if text.startswith("{", i + 1):
            end = text.find("}", i + 2)
            name = text[i + 2:end] if end > 0 else ""
            after = end + 1
        else:
            m = _NAME.match(text, i + 1)
            name = m.group(0) if m else ""
            after = i + 1 + len(name)
        if name in names:
            pieces += [text[last:i], Ref(name)]
            last = i = after
        else:
            i += 1
    pieces.append(text[last:])
    return [p for p in pieces if p != ""]


def number(text: str) -> str | None:
    """``"int"`` or ``"float"`` when ``text`` is a number as written: the source of a recipe's
    int or float literal (a ``-`` before it allowed) that compiles and keeps ``text`` as its
    spelling (docs/language.md: a number keeps its source spelling): ``-12``, ``0.5``,
    ``1e-5``, ``3.``; else None: ``+5`` (no unary ``+``), ``007``, ``0x10``, an int outside
    the 64-bit range whose digits a literal cannot hold (``-9223372036854775808`` too:
    its digits are out of range before the ``-`` applies, E0806), a float that overflows to
    infinity (``1e400``). The one reading of a number by the importers (flag values, shell
    assignments and params, vLLM options)."""
    m = _NUMBER.fullmatch(text)
    if m is None:
        return None
    if m.group(1) is not None:
        return "int" if int(m.group(1)) < INT_LIMIT else None
    return "float" if abs(float(text)) != float("inf") else None


def scalar(text: str) -> str:
    """The literal whose flag spelling is ``text``: a bool or a number as spelled
    (:func:`number`), else a string."""
    if text in _BOOLS or number(text):
        return text
    return string(text)


def flag_value(key: str, raw: str, names) -> str | None:
    """The recipe source of a ``maxtext_flags`` value whose token, as the flag set's shell
    form writes it (:func:`~rcpc.domain.maxtext.emit.shell_quote` of ``key=value``), is exactly
    the shell word ``raw`` (placeholders of ``names`` become references); None when no value
    renders as ``raw``."""
    pieces = placeholders(raw, names)
    if any(isinstance(p, Ref) for p in pieces):  # checked with a plain stand-in for each param
        plain = "".join(p if isinstance(p, str) else "x" for p in pieces)
        if flag_value(key, plain, ()) is None or not (isinstance(pieces[0], str) and pieces[0].startswith(key + "=")):
            return None
        pieces = [p for p in [pieces[0][len(key) + 1:], *pieces[1:]] if p != ""]
        return pieces[0].text if len(pieces) == 1 and isinstance(pieces[0], Ref) else fstring(pieces)
    if not raw.startswith(key + "="):
        return None
    text = raw[len(key) + 1:]
    try:
        if shell_quote(token(key, _value(text))) == raw:
            return flag_scalar(text)
    except (FlagValueError, CompileError):  # no flag form; a reading no value holds (E0806)
        return None
    return None


def quoted_flag_value(key: str, raw: str, names) -> tuple[str, bool] | None:
    """``(source, always)`` for a shell word ``raw`` that writes a flag's value part in single
    quotes (``prompt='a b.'``, ``key='fixed,-224,224'``): the recipe source of the
    ``maxtext_flags`` value, and whether the quotes are there where the shell needs none (as
    ``FLAGS.shell_quoted([key])`` writes it, :func:`~rcpc.domain.maxtext.emit.shell_quote` with
    ``always``) rather than as the flag set's shell form writes it anyway. None for any other
    word, and for a quoted value holding a placeholder of ``names`` (its quoting would depend
    on the param's value)."""
    head = key + "='"
    if not (raw.startswith(head) and raw.endswith("'") and len(raw) > len(head)):
        return None
    inner = raw[len(head):-1]
    if "'" in inner or any(isinstance(p, Ref) for p in placeholders(inner, names)):
        return None
    try:
        tok = token(key, _value(inner))
    except (FlagValueError, CompileError):  # no flag form; a reading no value holds (E0806)
        return None
    for always in (False, True):
        if shell_quote(tok, always) == raw:
            return flag_scalar(inner), always
    return None


def flag_scalar(text: str) -> str | None:
    """The recipe source of the flag value a shell word spells ``text`` (after ``key=``): the
    literal of that spelling (:func:`scalar`), or, where OmegaConf reads ``text`` as a bool,
    number or null no literal spells so (``on``, ``~``, ``0x10``, ``.inf``, ``TRUE``),
    ``cli_value("text")``: the value MaxText reads, written back as written. None when no
    value holds what OmegaConf reads (an int past the 64-bit range, ``0x8000000000000000``:
    ``cli_value`` of it is E0806)."""
    if text in _BOOLS or number(text):
        return text
    return string(text) if type(_reading(text)) is str else cli_source(text)


def cli_source(text: str) -> str | None:
    """``cli_value("text")``: the value OmegaConf reads from ``text`` (a scalar or a mapping),
    when a recipe value holds it (:func:`rcpc.domain.builtins.of_reading`, as ``cli_value``
    makes it); None otherwise (not flag data, an int past the 64-bit range: E0806)."""
    span = Span("<import>", 1, 1, 1, 1)
    try:
        got = cli_document(text)
        if type(got) is list:
            return None  # cli_value() takes no list (E1220)
        of_reading(got, text, span, span)
    except (NotAScalar, CompileError):
        return None
    return f"cli_value({string(text)})"


def _reading(text: str):
    """OmegaConf's reading of ``text`` (:func:`~rcpc.domain.maxtext.emit.cli_reading`); the
    text itself when it is not one scalar."""
    try:
        return cli_reading(text)
    except NotAScalar:
        return text


def _value(text: str):
    """The rcpc value whose flag spelling is ``text``: what OmegaConf reads from it, made a
    value as ``cli_value(text)`` makes it (:func:`rcpc.domain.builtins.of_reading`: its
    spelling kept), else (a string, or not one scalar) the string ``text``. Raises
    :class:`~rcpc.core.diagnostics.CompileError` (``E0806``) for a reading no value holds (an
    int outside the 64-bit range)."""
    got = _reading(text)
    span = Span("<import>", 1, 1, 1, 1)
    if type(got) is str:
        return Str(text, span)
    return of_reading(got, text, span, span)


def joined(name: str, prefix: str, sep: str, suffix: str) -> str:
    """Source of the string ``prefix + sep.join(name) + suffix`` (empty parts left out)."""
    join = f"{string(sep)}.join({name})"
    return " + ".join(x for x in (prefix and string(prefix), join, suffix and string(suffix)) if x)
