"""The token of the fast parser (:mod:`rcpc.core.syntax.descent`): what
:class:`~rcpc.core.syntax.builder.AstBuilder` reads of a token, and no more.

lark's ``Token`` (the reference parser's, :mod:`rcpc.core.syntax.parser`) is a ``str``
subclass with the same attributes; :data:`TOKEN_TYPES` names both without importing lark,
so the builder tells a token from a node the same way on either path.
"""

from __future__ import annotations


class Token:
    """One token: its terminal ``type`` (the grammar's name: ``NAME``, ``COMMA``, ``IF``,
    ``_NL``...), its text ``value``, and its offsets ``[start_pos, end_pos)`` in the text
    being parsed (characters)."""

    __slots__ = ("type", "value", "start_pos", "end_pos")

    def __init__(self, type: str, value: str, start_pos: int, end_pos: int):
        self.type = type
        self.value = value
        self.start_pos = start_pos
        self.end_pos = end_pos

    @classmethod
    def new_borrow_pos(cls, type_: str, value: str, borrow) -> "Token":
        """A token of ``type_`` and ``value`` at ``borrow``'s place (as lark's method of the
        same name: the postlexer's ``_NL``, ``_INDENT`` and ``_DEDENT``)."""
        return cls(type_, value, borrow.start_pos, borrow.end_pos)

    def __repr__(self) -> str:
        return f"Token({self.type!r}, {self.value!r}, {self.start_pos}, {self.end_pos})"


# A token of either parser: ours, or lark's (a str subclass; no AST child is a str).
TOKEN_TYPES = (Token, str)
