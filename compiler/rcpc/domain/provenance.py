"""Flag-token provenance on strings (docs/review.md, *Diff contracts*: contracts hold inside every render).

A flag set's ``.argv`` items and its ``.shell`` form are strings whose characters come from
the set's tokens. Each such :class:`~rcpc.core.values.Str` carries ``pieces``: the character range
of every token in it, with the :class:`FlagToken` (flag key, layer, entry, flag set) it renders.
The pieces follow the text wherever the recipe moves it: an f-string, ``+``, ``sep.join(items)``,
``str()``, and ``replace``, ``split``, ``strip`` and indexing where they keep each token whole;
an operation that would cut or rewrite a token is an error (``E0707``,
:func:`rcpc.core.builtins.cut_error`), so no string loses its flags silently. The render
protocol finds every flag set a render carries from these pieces (:mod:`rcpc.domain.embedding`).
"""

from __future__ import annotations

from rcpc.core import record
from rcpc.domain.maxtext.emit import shell_quote
from rcpc.domain.maxtext.flagset import entry_token
from rcpc.core.values import List, Str, join
from rcpc.domain.values import FlagEntry


@record.frozen
class FlagToken:
    """Where one ``key=value`` token comes from: the flag ``key``, the 1-based ``layer`` of
    its flag set, the layer's :class:`~rcpc.core.values.FlagEntry` (its spans and value), the
    layer's ``why`` (the function calls it was made in and the conditionals that chose it, as
    :attr:`~rcpc.core.values.Dict.why`) and the :class:`~rcpc.domain.values.FlagSet` itself."""

    key: str
    layer: int
    entry: FlagEntry
    why: tuple = ()
    flags: object = record.field(default=None, eq=False, repr=False)
    form: str = "argv"  # the attribute that wrote it: "argv" (one token a string) or "shell" (.shell)

    def describe(self) -> str:
        """What a string operation would cut (:func:`rcpc.core.values.cut_error`)."""
        return f"the MaxText flag token of '{self.key}' (set at {self.entry.key_span})"

    def hint(self) -> str:
        """How a recipe changes a flag token instead (:func:`rcpc.core.values.cut_error`)."""
        return ("change the flag in its flag set (a layer of maxtext_flags), not in the rendered text: rcpc then "
                "still knows every token (contracts, MaxText checks); docs/porting.md shows the library's setup "
                "steps and raw values for what else a command needs")


def _tokens(fs, form: str = "argv"):
    for index, layer in enumerate(fs.layers, 1):
        for e in layer.entries:
            yield entry_token(e), FlagToken(e.key, index, e, layer.why, fs, form)


def argv_value(fs, span) -> List:
    """``FLAGS.argv``: one string per token (MaxText's ``key=value``, repeats kept), each a
    single piece naming its token."""
    return List(tuple(Str(t, span, ((0, len(t), origin),)) for t, origin in _tokens(fs)), span)


def shell_value(fs, span, always: frozenset = frozenset(), raw: frozenset = frozenset()) -> Str:
    """``FLAGS.shell``: the tokens shell-quoted when needed and joined by single spaces
    (:func:`rcpc.domain.maxtext.emit.shell_form`), one piece per (quoted) token; the value
    part of each flag whose key is in ``always`` quoted anyway (``FLAGS.shell_quoted(keys)``),
    of each in ``raw`` not quoted at all (``FLAGS.shell_raw(keys)``)."""
    parts: list = []
    for t, origin in _tokens(fs, "shell"):
        q = t if origin.key in raw else shell_quote(t, origin.key in always)
        parts.append(Str(q, span, ((0, len(q), origin),)))
    return join(" ", parts, span)
