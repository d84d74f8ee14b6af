"""The token of the fast parser (:mod:`rcpc.core.syntax.descent`): what
:class:`~rcpc.core.syntax.builder.AstBuilder` reads of a token, and no more.

lark's ``Token`` (the reference parser's, :mod:`rcpc.core.syntax.parser`) is a ``str``
subclass with the same attributes; :data:`TOKEN_TYPES` names both without importing lark,
so the builder tells a token from a node the same way on either path.
"""

from __future__ import annotations

from collections import namedtuple


class Token(namedtuple("_Token", "type value start_pos end_pos")):
    """One token: its terminal ``type`` (the grammar's name: ``NAME``, ``COMMA``, ``IF``,
    ``_NL``...), its text ``value``, and its offsets ``[start_pos, end_pos)`` in the text
    being parsed (characters). A tuple (made by :func:`make`, in C): the lexer makes one a
    token."""

    __slots__ = ()

    @classmethod
    def new_borrow_pos(cls, type_: str, value: str, borrow) -> "Token":
        """A token of ``type_`` and ``value`` at ``borrow``'s place (as lark's method of the
        same name: the postlexer's ``_NL``, ``_INDENT`` and ``_DEDENT``)."""
        return _new(cls, (type_, value, borrow.start_pos, borrow.end_pos))


_new = tuple.__new__


def make(fields: tuple) -> Token:
    """The :class:`Token` of ``(type, value, start_pos, end_pos)``."""
    return _new(Token, fields)


# A token of either parser: ours, or lark's (a str subclass). No AST child is a str or a Token
# (a dict item is a plain tuple).
TOKEN_TYPES = (Token, str)
