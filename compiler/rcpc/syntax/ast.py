"""AST of the recipe language: frozen attrs nodes, each with the :class:`~rcpc.source.Span`
of the source text it came from.

Literals keep their source spelling (``text``) so that ``1e-6`` renders as ``1e-6`` and
``True`` as ``True`` (DESIGN.md §2).
"""

from __future__ import annotations

from typing import Union

import attrs

from rcpc.source import Span

frozen = attrs.frozen(slots=True)


@frozen
class Name:
    id: str
    span: Span


@frozen
class IntLit:
    value: int
    text: str
    span: Span


@frozen
class FloatLit:
    value: float
    text: str
    span: Span


@frozen
class BoolLit:
    value: bool
    text: str
    span: Span


@frozen
class NoneLit:
    text: str
    span: Span


@frozen
class StrLit:
    value: str
    span: Span


@frozen
class FString:
    """``f"..."``: ``parts`` alternate literal text (str) and embedded expressions."""

    parts: tuple
    span: Span


@frozen
class ListLit:
    items: tuple
    span: Span


@frozen
class DictLit:
    """``items`` is a tuple of (key expr, value expr) in source order."""

    items: tuple
    span: Span


@frozen
class CompFor:
    """One ``for VAR in ITER if COND...`` clause of a comprehension."""

    var: str
    var_span: Span
    iter: "Expr"
    conds: tuple
    span: Span


@frozen
class Comprehension:
    """``[elt for ...]`` (``key`` is None) or ``{key: elt for ...}``."""

    key: "Expr | None"
    elt: "Expr"
    clause: CompFor
    span: Span


@frozen
class BinOp:
    """Arithmetic or concatenation: ``op`` is one of ``+ - * // %``."""

    op: str
    left: "Expr"
    right: "Expr"
    span: Span


@frozen
class Neg:
    operand: "Expr"
    span: Span


@frozen
class BoolOp:
    """``and`` / ``or`` (short-circuit)."""

    op: str
    left: "Expr"
    right: "Expr"
    span: Span


@frozen
class Not:
    operand: "Expr"
    span: Span


@frozen
class Compare:
    """``op`` is one of ``== != < > <= >= in not in``."""

    op: str
    left: "Expr"
    right: "Expr"
    span: Span


@frozen
class Conditional:
    """``then if cond else orelse``."""

    cond: "Expr"
    then: "Expr"
    orelse: "Expr"
    span: Span


@frozen
class Index:
    obj: "Expr"
    index: "Expr"
    span: Span


@frozen
class Attr:
    obj: "Expr"
    name: str
    name_span: Span
    span: Span


@frozen
class Keyword:
    name: str
    name_span: Span
    value: "Expr"


@frozen
class Call:
    func: "Expr"
    args: tuple
    kwargs: tuple  # of Keyword
    span: Span


Expr = Union[Name, IntLit, FloatLit, BoolLit, NoneLit, StrLit, FString, ListLit, DictLit,
             Comprehension, BinOp, Neg, BoolOp, Not, Compare, Conditional, Index, Attr, Call]


@frozen
class Assign:
    name: str
    name_span: Span
    value: Expr
    span: Span


@frozen
class LoadName:
    """One imported name: ``local`` is bound in the loading file to ``remote`` of the loaded one."""

    local: str
    remote: str
    span: Span


@frozen
class Load:
    path: str
    path_span: Span
    names: tuple  # of LoadName
    span: Span


@frozen
class ExprStmt:
    expr: Expr
    span: Span


Stmt = Union[Assign, Load, ExprStmt]


@frozen
class Module:
    """A parsed file: its statements in order."""

    path: str
    stmts: tuple
