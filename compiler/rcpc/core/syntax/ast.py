"""AST of the recipe language: frozen record nodes (:mod:`rcpc.core.record`), each with the
:class:`~rcpc.core.source.Span` of the source text it came from.

Literals keep their source spelling (``text``) so that ``1e-6`` renders as ``1e-6`` and
``True`` as ``True`` (docs/language.md, *How values are written*). The tree also keeps what ``rcpc fmt`` needs to print it
back without the source: a string's ``raw`` text (quotes, prefix and escapes as written), the
``trailing_comma`` of a bracketed list, and the parentheses around an expression
(``parens``: one :class:`Paren` a pair, innermost first; a node's own ``span`` excludes them).
The :class:`Module` holds the file's comments (:class:`Comment`); which node each belongs to
(leading, trailing, dangling) is :func:`rcpc.core.syntax.comments.attach`'s answer, kept on the
module (:attr:`Module.attached`). The resolver records a binding for every name
(:attr:`Module.bindings`, :mod:`rcpc.core.resolve`).
"""

from __future__ import annotations

from rcpc.core import record
from rcpc.core.source import Span

frozen = record.frozen


@frozen
class Comment:
    """One ``# ...`` comment: its text (trailing whitespace removed) and span."""

    text: str
    span: Span


@frozen
class Paren:
    """A pair of parentheses around an expression: ``span`` runs from ``(`` to ``)``."""

    span: Span


@frozen
class Name:
    id: str
    span: Span
    parens: tuple = ()  # of Paren


@frozen
class IntLit:
    value: int
    text: str
    span: Span
    parens: tuple = ()  # of Paren


@frozen
class FloatLit:
    value: float
    text: str
    span: Span
    parens: tuple = ()  # of Paren


@frozen
class BoolLit:
    value: bool
    text: str
    span: Span
    parens: tuple = ()  # of Paren


@frozen
class NoneLit:
    text: str
    span: Span
    parens: tuple = ()  # of Paren


@frozen
class StrLit:
    """A string: ``value`` decoded, ``raw`` the literal as written (quotes and escapes)."""

    value: str
    raw: str
    span: Span
    parens: tuple = ()  # of Paren


@frozen
class FString:
    """``f"..."``: ``parts`` alternate literal text (str) and embedded expressions."""

    parts: tuple
    raw: str
    span: Span
    parens: tuple = ()  # of Paren


@frozen
class ListLit:
    items: tuple
    trailing_comma: bool
    span: Span
    parens: tuple = ()  # of Paren


@frozen
class DictLit:
    """``items`` is a tuple of (key expr, value expr) in source order."""

    items: tuple
    trailing_comma: bool
    span: Span
    parens: tuple = ()  # of Paren


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
    parens: tuple = ()  # of Paren


@frozen
class BinOp:
    """Arithmetic or concatenation: ``op`` is one of ``+ - * // %``."""

    op: str
    left: "Expr"
    right: "Expr"
    span: Span
    parens: tuple = ()  # of Paren


@frozen
class Neg:
    operand: "Expr"
    span: Span
    parens: tuple = ()  # of Paren


@frozen
class BoolOp:
    """``and`` / ``or`` (short-circuit)."""

    op: str
    left: "Expr"
    right: "Expr"
    span: Span
    parens: tuple = ()  # of Paren


@frozen
class Not:
    operand: "Expr"
    span: Span
    parens: tuple = ()  # of Paren


@frozen
class Compare:
    """``op`` is one of ``== != < > <= >= in not in``."""

    op: str
    left: "Expr"
    right: "Expr"
    span: Span
    parens: tuple = ()  # of Paren


@frozen
class Conditional:
    """``then if cond else orelse``."""

    cond: "Expr"
    then: "Expr"
    orelse: "Expr"
    span: Span
    parens: tuple = ()  # of Paren


@frozen
class Index:
    obj: "Expr"
    index: "Expr"
    span: Span
    parens: tuple = ()  # of Paren


@frozen
class Attr:
    obj: "Expr"
    name: str
    name_span: Span
    span: Span
    parens: tuple = ()  # of Paren


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
    trailing_comma: bool
    span: Span
    parens: tuple = ()  # of Paren


Expr = (Name | IntLit | FloatLit | BoolLit | NoneLit | StrLit | FString | ListLit | DictLit
        | Comprehension | BinOp | Neg | BoolOp | Not | Compare | Conditional | Index | Attr | Call)


@frozen
class Assign:
    name: str
    name_span: Span
    value: Expr
    span: Span


@frozen
class LoadName:
    """One imported name: ``local`` is bound in the loading file to ``remote`` of the loaded
    one. ``raw`` is the remote name's string as written; ``local_span`` the defining occurrence
    (the alias in ``N = "NAME"``, else the string itself, which is then all of ``span``)."""

    local: str
    remote: str
    raw: str
    local_span: Span
    span: Span

    @property
    def aliased(self) -> bool:
        """Written ``LOCAL = "REMOTE"``."""
        return self.local_span != self.span


@frozen
class Load:
    """``load(PATH, NAME...)``: ``path`` decoded, ``path_raw`` as written."""

    path: str
    path_raw: str
    path_span: Span
    names: tuple  # of LoadName
    trailing_comma: bool
    span: Span


@frozen
class ExprStmt:
    expr: Expr
    span: Span


@frozen
class Parameter:
    """One parameter of a ``def``: ``default`` is None for a required one; ``keyword_only``
    for those after ``*``."""

    name: str
    span: Span
    default: "Expr | None"
    keyword_only: bool


@frozen
class Return:
    """``return [value]`` (``value`` None: the function returns None)."""

    value: "Expr | None"
    span: Span


@frozen
class If:
    """``if COND: ... elif COND: ... else: ...``: ``branches`` is a tuple of (condition,
    body) pairs (the ``if`` and each ``elif``), ``orelse`` the ``else`` body (``()``: none)."""

    branches: tuple
    orelse: tuple
    span: Span


@frozen
class For:
    """``for VAR in ITER:`` and its body, over a finite value (a list or a dict's keys)."""

    var: str
    var_span: Span
    iter: "Expr"
    body: tuple
    span: Span


@frozen
class Def:
    """``def NAME(params):`` and its body (library files only). ``span`` is the header,
    from ``def`` to ``:``; ``end`` the span of the whole definition."""

    name: str
    name_span: Span
    params: tuple  # of Parameter
    trailing_comma: bool
    body: tuple
    span: Span
    end: Span


Stmt = Assign | Load | ExprStmt | Def | Return | If | For


@record.define(eq=False)
class Module:
    """A parsed file: its statements and its comments, in source order. ``source`` is the
    :class:`~rcpc.core.source.Source` it was parsed from. ``bindings`` is set by
    :func:`rcpc.core.resolve.resolve` (``None`` before)."""

    path: str
    stmts: tuple
    comments: tuple = ()  # of Comment
    source: object = None
    bindings: object = None
    attached: object = None  # the comments' places (:func:`rcpc.core.syntax.comments.attached`)
