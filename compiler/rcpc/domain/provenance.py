"""Flag-token provenance on strings (DESIGN.md §3.4: contracts hold inside every render).

A flag set's ``.argv`` items and its ``.shell`` form are strings whose characters come from
the set's tokens. Each such :class:`~rcpc.core.values.Str` carries ``pieces``: the character range
of every token in it, with the :class:`FlagToken` (flag key, layer, entry) it renders. The
pieces follow the text wherever the recipe moves it: an f-string, ``+`` of strings and
``sep.join(items)`` shift them to their new offsets; any other string operation (``replace``,
``upper``, indexing, ``json``) makes a plain string, which a contract then treats like any
other data.

A diff contract that declares flag key ``k`` removes the pieces of ``k`` (with one adjacent
space, the separator of the shell form) from both variants' strings before comparing them
(:func:`without`), so only ``k``'s tokens may differ.
"""

from __future__ import annotations

from rcpc.core import record
from rcpc.domain.emit.flags import shell_quote, token
from rcpc.core.values import Dict, List, Str, join
from rcpc.domain.values import FlagEntry


@record.frozen
class FlagToken:
    """Where one ``key=value`` token comes from: the flag ``key``, the 1-based ``layer`` of
    its flag set, the layer's :class:`~rcpc.core.values.FlagEntry` (its spans and value) and
    the layer's ``why`` (the function calls it was made in and the conditionals that chose
    it, as :attr:`~rcpc.core.values.Dict.why`)."""

    key: str
    layer: int
    entry: FlagEntry
    why: tuple = ()


def _tokens(fs):
    for index, layer in enumerate(fs.layers, 1):
        for e in layer.entries:
            yield token(e.key, e.value), FlagToken(e.key, index, e, layer.why)


def argv_value(fs, span) -> List:
    """``FLAGS.argv``: one string per token (MaxText's ``key=value``, repeats kept), each a
    single piece naming its token."""
    return List(tuple(Str(t, span, ((0, len(t), origin),)) for t, origin in _tokens(fs)), span)


def shell_value(fs, span, always: frozenset = frozenset()) -> Str:
    """``FLAGS.shell``: the tokens shell-quoted when needed and joined by single spaces
    (:func:`rcpc.domain.emit.flags.shell_form`), one piece per (quoted) token; the value
    part of each flag whose key is in ``always`` quoted anyway (``FLAGS.shell_quoted(keys)``)."""
    parts: list = []
    for t, origin in _tokens(fs):
        q = shell_quote(t, origin.key in always)
        parts.append(Str(q, span, ((0, len(q), origin),)))
    return join(" ", parts, span)


def tokens_of(s: Str, keys) -> list:
    """``(FlagToken, token text)`` of each piece of ``s`` whose key is in ``keys``, in order."""
    return [(o, s.value[a:b]) for a, b, o in s.pieces if o.key in keys]


def without(s: Str, keys) -> str:
    """``s``'s text with the pieces of ``keys`` removed. Pieces next to each other (joined by
    nothing or one space) are removed as one run, with one adjacent space (the one before the
    run, else the one after it): removing tokens from a shell form leaves the same text
    whether they were first, last, alone or several."""
    text = s.value
    runs: list[list[int]] = []
    for a, b, o in sorted(p for p in s.pieces if p[2].key in keys):
        if runs and (a == runs[-1][1] or a == runs[-1][1] + 1 and text[runs[-1][1]] == " "):
            runs[-1][1] = max(runs[-1][1], b)
        else:
            runs.append([a, b])
    if not runs:
        return text
    out: list[str] = []
    at = 0
    for a, b in runs:
        if a > 0 and text[a - 1] == " " and a - 1 >= at:
            a -= 1
        elif b < len(text) and text[b] == " ":
            b += 1
        out.append(text[at:a])
        at = b
    out.append(text[at:])
    return "".join(out)


def has_tokens(value) -> bool:
    """Whether any string in ``value`` (a list or dict, walked through) holds a flag token."""
    t = type(value)
    if t is Str:
        return bool(value.pieces)
    if t is List:
        return any(has_tokens(x) for x in value.items)
    if t is Dict:
        return any(has_tokens(x) for x in value.items.values())
    return False
