"""Name resolution, before any evaluation (Starlark rules).

* Single assignment: a name is bound once per file (``E0102``), by ``NAME = ...`` or by
  ``load()``; built-in names cannot be rebound (``E0104``).
* Every name used is bound earlier in the file, bound by an enclosing comprehension, or
  built in: an unknown name is ``E0101`` with a did-you-mean; a name bound only later in the
  file is ``E0103``. An unknown name that a file this one loads exports is reported once, at
  that ``load()`` (where the fix goes), with its uses as secondary spans.
* An expression nested deeper than Python's stack allows to walk is ``E0801``.

All errors of a file are collected and raised together, up to :data:`~rcpc.limits.MAX_ERRORS`
(then ``E0808``): each unknown name looks for a suggestion among every name bound, so a file
of n unknown names cost n² (10,000 lines of ``Xi = Yi`` took 209 s).
"""

from __future__ import annotations

from rcpc.diagnostics import CompileError, Diagnostic, did_you_mean
from rcpc.limits import MAX_ERRORS
from rcpc.syntax import ast


def resolve(module: ast.Module, predeclared: frozenset[str], loaded_by=None) -> None:
    """Check ``module``'s names. Raises :class:`CompileError` with every problem found.
    ``loaded_by(name)``, when given, is the :class:`~rcpc.syntax.ast.Load` statement of
    this module whose file exports ``name`` (or None); it is asked only about unknown names."""
    diags: list[Diagnostic] = []
    unloaded: dict[str, tuple] = {}  # name → (its Load, spans of its uses)
    later: dict[str, object] = {}
    for stmt in module.stmts:
        for name, span in _binds(stmt):
            later.setdefault(name, span)
    bound: dict[str, object] = {}

    def report(d: Diagnostic) -> None:
        if len(diags) >= MAX_ERRORS:
            raise _TooMany(d.span)
        diags.append(d)

    def bind(name, span):
        if name in predeclared:
            report(Diagnostic("E0104", f"cannot bind built-in name '{name}'", span, hint="choose another name"))
        elif name in bound:
            report(Diagnostic("E0102", f"'{name}' is already bound in this file", span,
                              hint="names are assigned once; use a new name or a conditional expression",
                              related=(("first bound here", bound[name]),)))
        else:
            bound[name] = span

    def use(node: ast.Name, scope: frozenset):
        n = node.id
        if n in scope or n in bound or n in predeclared:
            return
        if n in later:
            report(Diagnostic("E0103", f"'{n}' is used before it is assigned", node.span,
                              related=(("assigned here", later[n]),),
                              hint="move the assignment above its first use"))
            return
        load = unloaded[n][0] if n in unloaded else loaded_by(n) if loaded_by else None
        if load is not None:
            unloaded.setdefault(n, (load, []))[1].append(node.span)
            return
        if len(diags) >= MAX_ERRORS:  # before looking for a suggestion among every name
            raise _TooMany(node.span)
        report(Diagnostic("E0101", f"unknown name '{n}'", node.span,
                          hint=did_you_mean(n, [*bound, *scope, *predeclared])))

    for stmt in module.stmts:
        try:
            if isinstance(stmt, ast.Assign):
                walk_names(stmt.value, frozenset(), use)
                bind(stmt.name, stmt.name_span)
            elif isinstance(stmt, ast.Load):
                for ln in stmt.names:
                    bind(ln.local, ln.span)
            else:
                walk_names(stmt.expr, frozenset(), use)
        except RecursionError:  # the first walk of each tree: nesting deeper than Python's stack
            diags.append(Diagnostic("E0801", "expression nested too deeply", stmt.span,
                                    hint="split it into several named values"))
        except _TooMany as stop:
            diags.append(Diagnostic("E0808", f"more than {MAX_ERRORS} errors in this file; the rest are not "
                                    "reported", stop.span, hint="fix the errors above first"))
            break
    for n, (load, uses) in unloaded.items():
        diags.append(Diagnostic("E0101", f"'{n}' is used but not loaded: {load.path} exports it, and this "
                                "load() does not name it", load.span,
                                related=tuple(("used here", s) for s in uses),
                                hint=f'add "{n}" to the names of this load()'))
    if diags:
        raise CompileError(diags)


class _TooMany(Exception):
    def __init__(self, span):
        self.span = span


def _binds(stmt):
    if isinstance(stmt, ast.Assign):
        yield stmt.name, stmt.name_span
    elif isinstance(stmt, ast.Load):
        for ln in stmt.names:
            yield ln.local, ln.span


def walk_names(node, scope: frozenset, use) -> None:
    """Visit every name in ``node`` (an expression) with its comprehension scope."""
    t = type(node)
    if t is ast.Name:
        use(node, scope)
    elif t in (ast.IntLit, ast.FloatLit, ast.BoolLit, ast.NoneLit, ast.StrLit):
        return
    elif t is ast.FString:
        for p in node.parts:
            if not isinstance(p, str):
                walk_names(p, scope, use)
    elif t is ast.ListLit:
        for x in node.items:
            walk_names(x, scope, use)
    elif t is ast.DictLit:
        for k, v in node.items:
            walk_names(k, scope, use)
            walk_names(v, scope, use)
    elif t is ast.Comprehension:
        clause = node.clause
        walk_names(clause.iter, scope, use)
        inner = scope | {clause.var}
        for c in clause.conds:
            walk_names(c, inner, use)
        if node.key is not None:
            walk_names(node.key, inner, use)
        walk_names(node.elt, inner, use)
    elif t in (ast.BinOp, ast.BoolOp, ast.Compare):
        walk_names(node.left, scope, use)
        walk_names(node.right, scope, use)
    elif t in (ast.Neg, ast.Not):
        walk_names(node.operand, scope, use)
    elif t is ast.Conditional:
        walk_names(node.cond, scope, use)
        walk_names(node.then, scope, use)
        walk_names(node.orelse, scope, use)
    elif t is ast.Index:
        walk_names(node.obj, scope, use)
        walk_names(node.index, scope, use)
    elif t is ast.Attr:
        walk_names(node.obj, scope, use)
    elif t is ast.Call:
        walk_names(node.func, scope, use)
        for a in node.args:
            walk_names(a, scope, use)
        for kw in node.kwargs:
            walk_names(kw.value, scope, use)
    else:  # pragma: no cover - the parser builds no other node
        raise TypeError(f"unexpected node {t.__name__}")
