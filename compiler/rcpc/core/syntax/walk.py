"""One generic walk over the AST (:mod:`rcpc.core.syntax.ast`), for every pass that visits nodes.

* :func:`children` — the child nodes of any node, in source order (a dict's key before its
  value; a comprehension's element before its ``for`` clause);
* :func:`walk` — every node of a tree once, parent before children, in source order;
* :class:`Visitor` — a depth-first visitor with scope hooks: ``visit_<Class>`` methods where
  a pass needs them, :meth:`Visitor.generic_visit` elsewhere, and a comprehension visited in
  scope order (:meth:`Visitor.visit_Comprehension`) between :meth:`Visitor.enter_scope` and
  :meth:`Visitor.leave_scope`.

Nodes are the AST classes; a dict item (a ``(key, value)`` tuple), a :class:`~ast.Paren` and
a :class:`~ast.Comment` are not nodes (a walk yields the key and the value).
"""

from __future__ import annotations

from collections.abc import Iterator

from rcpc.core.syntax import ast

__all__ = ["children", "walk", "Visitor"]

_NONE = ()


def _fstring(n):
    return tuple(p for p in n.parts if type(p) is not str)


def _dict(n):
    return tuple(x for item in n.items for x in item)


def _comprehension(n):
    return (n.elt, n.clause) if n.key is None else (n.key, n.elt, n.clause)


def _binary(n):
    return (n.left, n.right)


def _unary(n):
    return (n.operand,)


_CHILDREN = {
    ast.Name: None, ast.IntLit: None, ast.FloatLit: None, ast.BoolLit: None, ast.NoneLit: None,
    ast.StrLit: None, ast.LoadName: None,
    ast.FString: _fstring,
    ast.ListLit: lambda n: n.items,
    ast.DictLit: _dict,
    ast.Comprehension: _comprehension,
    ast.CompFor: lambda n: (n.iter, *n.conds),
    ast.BinOp: _binary, ast.BoolOp: _binary, ast.Compare: _binary,
    ast.Neg: _unary, ast.Not: _unary,
    ast.Conditional: lambda n: (n.then, n.cond, n.orelse),
    ast.Index: lambda n: (n.obj, n.index),
    ast.Attr: lambda n: (n.obj,),
    ast.Call: lambda n: (n.func, *n.args, *n.kwargs),
    ast.Keyword: lambda n: (n.value,),
    ast.Assign: lambda n: (n.value,),
    ast.Load: lambda n: n.names,
    ast.ExprStmt: lambda n: (n.expr,),
    ast.Module: lambda n: n.stmts,
    ast.Def: lambda n: (*n.params, *n.body),
    ast.Parameter: lambda n: _NONE if n.default is None else (n.default,),
    ast.Return: lambda n: _NONE if n.value is None else (n.value,),
    ast.If: lambda n: (*(x for cond, body in n.branches for x in (cond, *body)), *n.orelse),
    ast.For: lambda n: (n.iter, *n.body),
}

NODE_TYPES = tuple(_CHILDREN)


def children(node) -> tuple:
    """The child nodes of ``node``, in source order. Raises ``TypeError`` for a non-node."""
    try:
        get = _CHILDREN[type(node)]
    except KeyError:
        raise TypeError(f"not an AST node: {type(node).__name__}") from None
    return _NONE if get is None else get(node)


def walk(node) -> Iterator:
    """Every node of the tree under ``node`` (itself included) once: parent first, then its
    children in source order. Iterative, so any nesting the parser accepts is walked."""
    stack = [node]
    pop, extend, table = stack.pop, stack.extend, _CHILDREN
    while stack:
        n = pop()
        yield n
        get = table[type(n)]
        if get is not None:
            extend(reversed(get(n)))


class Visitor:
    """Depth-first visitor. :meth:`visit` calls ``visit_<Class>(node)`` when the subclass
    defines it, else :meth:`generic_visit` (the children, in source order). A comprehension
    is visited in scope order: its ``for`` clause's iterable in the enclosing scope, then
    :meth:`enter_scope`, the conditions, key and element (where the loop variable is bound),
    then :meth:`leave_scope` (the :class:`~ast.CompFor` holding them is not visited itself;
    :func:`walk` yields it). Recursive: a tree nested deeper than Python's stack raises
    ``RecursionError``, which callers turn into ``E0801``."""

    def __init__(self):
        cls = type(self)
        table = cls.__dict__.get("_dispatch")
        if table is None:  # built once per visitor class
            table = {t: getattr(cls, "visit_" + t.__name__, cls.generic_visit) for t in NODE_TYPES}
            cls._dispatch = table
        self._table = table

    def visit(self, node) -> None:
        self._table[type(node)](self, node)

    def generic_visit(self, node) -> None:
        get = _CHILDREN[type(node)]
        if get is not None:
            table = self._table
            for child in get(node):
                table[type(child)](self, child)

    def visit_Comprehension(self, node: ast.Comprehension) -> None:
        clause = node.clause
        self.visit(clause.iter)
        self.enter_scope(node)
        for cond in clause.conds:
            self.visit(cond)
        if node.key is not None:
            self.visit(node.key)
        self.visit(node.elt)
        self.leave_scope(node)

    def enter_scope(self, node: ast.Comprehension) -> None:
        """A comprehension's scope begins: ``node.clause.var`` is bound in it."""

    def leave_scope(self, node: ast.Comprehension) -> None:
        """The comprehension's scope ends."""
