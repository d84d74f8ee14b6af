"""Name resolution, before any evaluation (Starlark rules), recording a binding for every name.

* Single assignment: a name is bound once per file (``E0102``), by ``NAME = ...`` or by
  ``load()``; built-in names cannot be rebound (``E0104``).
* Every name used is bound earlier in the file, bound by an enclosing comprehension, or
  built in: an unknown name is ``E0101`` with a did-you-mean; a name bound only later in the
  file is ``E0103``. An unknown name that a file this one loads exports is reported once, at
  that ``load()`` (where the fix goes), with its uses as secondary spans.
* An expression nested deeper than :data:`~rcpc.core.limits.MAX_DEPTH` levels (each node of
  its tree one level, as evaluation counts them) is ``E0801``, whether or not it is ever
  evaluated (a branch not taken, a function never called), so that what ``check`` accepts
  ``fmt`` formats; statements nested deeper than Python's stack allows to walk are too.

All errors of a file are collected and raised together, up to :data:`~rcpc.core.limits.MAX_ERRORS`
(then ``E0808``): each unknown name looks for a suggestion among every name bound, so a file
of n unknown names cost n² (10,000 lines of ``Xi = Yi`` took 209 s).

Bindings (starlark-go's ``resolve.Binding``): :func:`resolve` sets ``module.bindings`` to the
file's :class:`Bindings`: for every :class:`~rcpc.core.syntax.ast.Name` use, the
:class:`Binding` it refers to — its kind (:data:`TOP_LEVEL`, :data:`PARAM`, :data:`LOADED`
with the load path and the name in the loaded file, :data:`COMPREHENSION`, :data:`BUILTIN`)
and the span of the defining occurrence. A comprehension variable is visible in its
conditions, key and element (not in its iterable) and shadows any other binding of its name;
an inner comprehension's variable shadows an outer one's.

Functions (``def``, Starlark's rules): a def's parameters (:data:`ARGUMENT`) and every name
its body assigns or loops over (:data:`LOCAL`, one binding per name, at its first
assignment) are local to it, and may be assigned again; any other name in the body is a
top-level name of the file (bound anywhere in it: the body runs when the function is
called) or a built-in. Parameter defaults are resolved where the ``def`` is. A parameter
named twice is ``E0653``.
"""

from __future__ import annotations

from itertools import chain
from collections.abc import Iterator

from rcpc.core import record
from rcpc.core.diagnostics import CompileError, Diagnostic, did_you_mean
from rcpc.core.limits import MAX_DEPTH, MAX_ERRORS
from rcpc.core.source import Span
from rcpc.core.syntax import ast
from rcpc.core.syntax.walk import Visitor

__all__ = ["resolve", "Binding", "Bindings", "TOP_LEVEL", "PARAM", "LOADED", "COMPREHENSION", "BUILTIN",
           "FUNCTION", "ARGUMENT", "LOCAL", "assigned_names"]

TOP_LEVEL = "top-level"          # NAME = value
PARAM = "param"                  # NAME = param(...)
LOADED = "loaded"                # load("path", "NAME") or load("path", LOCAL = "NAME")
COMPREHENSION = "comprehension"  # [... for NAME in ...]
BUILTIN = "builtin"              # a predeclared name (len, maxtext_flags, ...)
FUNCTION = "function"            # def NAME(...): (top level of a library file)
ARGUMENT = "argument"            # a parameter of a def
LOCAL = "local"                  # a name assigned (or a for variable) in a def's body


@record.frozen
class Binding:
    """What a name refers to. ``span`` is the defining occurrence (the assigned name, the
    load's alias or name string, the comprehension variable; ``None`` for a built-in); a
    :data:`LOADED` binding also has the ``load`` path as written and the ``remote`` name bound
    in that file."""

    kind: str
    name: str
    span: Span | None
    load: str | None = None
    remote: str | None = None


class Bindings:
    """The bindings of one module: ``defs``, every binding the file makes (in the order
    bound: a statement's comprehension variables before the name it assigns), and for every
    name used, the binding it refers to."""

    __slots__ = ("defs", "_uses")

    def __init__(self):
        self.defs: list[Binding] = []
        self._uses: dict[int, tuple[ast.Name, Binding]] = {}

    def of(self, name: ast.Name) -> Binding | None:
        """The binding of a name node of this module (``None`` for an unresolved name)."""
        got = self._uses.get(id(name))
        return None if got is None else got[1]

    def uses(self) -> Iterator[tuple[ast.Name, Binding]]:
        """(name node, binding) for every resolved use, in the order resolved."""
        return iter(self._uses.values())

    def references(self, binding: Binding) -> list[ast.Name]:
        """The name nodes that refer to ``binding``."""
        return [n for n, b in self._uses.values() if b == binding]

    def _use(self, name: ast.Name, binding: Binding) -> None:
        self._uses[id(name)] = (name, binding)


def resolve(module: ast.Module, predeclared: frozenset[str], loaded_by=None) -> Bindings:
    """Check ``module``'s names and record their bindings (``module.bindings``, returned).
    Raises :class:`CompileError` with every problem found (the bindings found are kept).
    ``loaded_by(name)``, when given, is the :class:`~rcpc.core.syntax.ast.Load` statement of this
    module whose file exports ``name`` (or None); it is asked only about unknown names."""
    bindings = module.bindings = Bindings()
    resolver = _Resolver(module, predeclared, bindings, loaded_by)
    for stmt in chain(module.stmts, _Deferred(resolver)):  # the defs' bodies last
        try:
            resolver.statement(stmt)
        except _TooDeep as deep:
            resolver.diags.append(Diagnostic("E0801", f"expression nested deeper than {MAX_DEPTH} levels", deep.span,
                                             hint="split it into several named values"))
        except RecursionError:  # statements (if, for) nested deeper than Python's stack
            resolver.diags.append(Diagnostic("E0801", "statements nested too deeply", stmt.span,
                                             hint="split it into several functions"))
        except _TooMany as stop:
            resolver.diags.append(Diagnostic("E0808", f"more than {MAX_ERRORS} errors in this file; the rest are "
                                             "not reported", stop.span, hint="fix the errors above first"))
            break
    for n, (load, uses) in resolver.unloaded.items():
        resolver.diags.append(Diagnostic("E0101", f"'{n}' is used but not loaded: {load.path} exports it, and "
                                         "this load() does not name it", load.span,
                                         related=tuple(("used here", s) for s in uses),
                                         hint=f'add "{n}" to the names of this load()'))
    if resolver.diags:
        raise CompileError(resolver.diags)
    return bindings


class _Deferred:
    """The bodies of the file's functions, resolved after every top-level statement (a body
    may name a top-level name bound after the def)."""

    def __init__(self, resolver):
        self.resolver = resolver

    def __iter__(self):
        while self.resolver.deferred:
            yield self.resolver.deferred.pop(0)


@record.frozen
class _Body:
    """A def whose body is still to be resolved (a pseudo-statement of :class:`_Deferred`)."""

    node: ast.Def

    @property
    def span(self):
        return self.node.span


def assigned_names(stmts, out: dict | None = None) -> dict:
    """name → span of its first assignment (or ``for`` variable) in a def's body."""
    out = {} if out is None else out
    for st in stmts:
        t = type(st)
        if t is ast.Assign:
            out.setdefault(st.name, st.name_span)
        elif t is ast.For:
            out.setdefault(st.var, st.var_span)
            assigned_names(st.body, out)
        elif t is ast.If:
            for _, body in st.branches:
                assigned_names(body, out)
            assigned_names(st.orelse, out)
    return out


class _TooMany(Exception):
    def __init__(self, span):
        self.span = span


class _TooDeep(Exception):
    """An expression node at level :data:`~rcpc.core.limits.MAX_DEPTH` + 1, at ``span``."""

    def __init__(self, span):
        self.span = span


# The nodes evaluation counts as a level (rcpc.core.evaluate.Evaluator.eval): expressions.
_EXPRESSIONS = frozenset((ast.IntLit, ast.FloatLit, ast.BoolLit, ast.NoneLit, ast.StrLit, ast.FString, ast.ListLit,
                          ast.DictLit, ast.Comprehension, ast.BinOp, ast.Neg, ast.BoolOp, ast.Not, ast.Compare,
                          ast.Conditional, ast.Index, ast.Attr, ast.Call))  # and ast.Name: visit_Name


def _is_param(value) -> bool:
    return type(value) is ast.Call and type(value.func) is ast.Name and value.func.id == "param"


class _Resolver(Visitor):
    def _builtin(self, n: str) -> Binding | None:
        """The binding of built-in ``n`` (None if ``n`` is not predeclared)."""
        got = self.builtins.get(n)
        if got is None and n in self.predeclared:
            got = self.builtins[n] = Binding(BUILTIN, n, None)
        return got

    def __init__(self, module: ast.Module, predeclared: frozenset, bindings: Bindings, loaded_by=None):
        super().__init__()
        self.loaded_by = loaded_by
        self.unloaded: dict[str, tuple] = {}  # name → (the Load whose file exports it, spans of its uses)
        self.predeclared = predeclared
        self.builtins: dict[str, Binding] = {}  # the built-ins used, each bound once a module
        self.bindings = bindings
        self.diags: list[Diagnostic] = []
        self.bound: dict[str, Binding] = {}  # top-level names bound so far
        self.where: dict[str, Span] = {}     # ... where, as diagnostics show it
        self.scopes: list[Binding] = []      # enclosing comprehension variables, innermost last
        self.locals: dict[str, Binding] = {}  # the arguments and locals of the def being resolved
        self.deferred: list = []             # defs whose bodies are still to be resolved
        self.later: dict[str, Span] = {}     # every top-level name, where first bound
        self.depth = 0                       # expression levels around the node being visited
        for stmt in module.stmts:
            if type(stmt) is ast.Assign:
                self.later.setdefault(stmt.name, stmt.name_span)
            elif type(stmt) is ast.Load:
                for ln in stmt.names:
                    self.later.setdefault(ln.local, ln.span)

    def report(self, d: Diagnostic) -> None:
        if len(self.diags) >= MAX_ERRORS:
            raise _TooMany(d.span)
        self.diags.append(d)

    def statement(self, stmt) -> None:
        self.depth = 0
        t = type(stmt)
        if t is ast.Assign:
            self.visit(stmt.value)
            self.bind(Binding(PARAM if _is_param(stmt.value) else TOP_LEVEL, stmt.name, stmt.name_span),
                      stmt.name_span)
        elif t is ast.Load:
            for ln in stmt.names:
                self.bind(Binding(LOADED, ln.local, ln.local_span, stmt.path, ln.remote), ln.span)
        elif t is ast.Def:
            for p in stmt.params:
                if p.default is not None:
                    self.visit(p.default)
            self.bind(Binding(FUNCTION, stmt.name, stmt.name_span), stmt.name_span)
            self.deferred.append(_Body(stmt))
        elif t is _Body:
            self.body(stmt.node)
        else:
            self.visit(stmt.expr)

    def body(self, node: ast.Def) -> None:
        """Resolve a def's body in its own scope (see the module docstring)."""
        self.locals = {}
        for p in node.params:
            if p.name in self.locals:
                self.report(Diagnostic("E0653", f"parameter '{p.name}' appears twice in {node.name}()", p.span,
                                       related=(("first here", self.locals[p.name].span),),
                                       hint="give each parameter its own name"))
                continue
            b = self.locals[p.name] = Binding(ARGUMENT, p.name, p.span)
            self.bindings.defs.append(b)
        for name, span in assigned_names(node.body, {}).items():
            if name not in self.locals:
                b = self.locals[name] = Binding(LOCAL, name, span)
                self.bindings.defs.append(b)
        try:
            for st in node.body:
                self.visit(st)
        finally:
            self.locals = {}

    def bind(self, b: Binding, span: Span) -> None:
        """Bind a top-level name; ``span`` is where diagnostics point (a load's whole
        ``LOCAL = "NAME"``)."""
        name = b.name
        if name in self.predeclared:
            self.report(Diagnostic("E0104", f"cannot bind built-in name '{name}'", span,
                                         hint="choose another name"))
        elif name in self.bound:
            self.report(Diagnostic("E0102", f"'{name}' is already bound in this file", span,
                                         hint="names are assigned once; use a new name or a conditional expression",
                                         related=(("first bound here", self.where[name]),)))
        else:
            self.bound[name] = b
            self.where[name] = span
            self.bindings.defs.append(b)

    def enter_scope(self, node: ast.Comprehension) -> None:
        clause = node.clause
        b = Binding(COMPREHENSION, clause.var, clause.var_span)
        self.bindings.defs.append(b)
        self.scopes.append(b)

    def leave_scope(self, node: ast.Comprehension) -> None:
        self.scopes.pop()

    def generic_visit(self, node) -> None:
        if type(node) in _EXPRESSIONS:
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise _TooDeep(node.span)
            Visitor.generic_visit(self, node)
            self.depth -= 1
        else:
            Visitor.generic_visit(self, node)

    def visit_Comprehension(self, node: ast.Comprehension) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _TooDeep(node.span)
        Visitor.visit_Comprehension(self, node)
        self.depth -= 1

    def visit_Name(self, node: ast.Name) -> None:
        if self.depth >= MAX_DEPTH:
            raise _TooDeep(node.span)
        n = node.id
        for b in reversed(self.scopes):
            if b.name == n:
                self.bindings._use(node, b)
                return
        b = self.locals.get(n) or self.bound.get(n) or self._builtin(n)
        if b is not None:
            self.bindings._use(node, b)
            return
        if n in self.later:
            self.report(Diagnostic("E0103", f"'{n}' is used before it is assigned", node.span,
                                         related=(("assigned here", self.later[n]),),
                                         hint="move the assignment above its first use"))
            return
        load = self.unloaded[n][0] if n in self.unloaded else self.loaded_by(n) if self.loaded_by else None
        if load is not None:
            self.unloaded.setdefault(n, (load, []))[1].append(node.span)
            return
        if len(self.diags) >= MAX_ERRORS:  # before looking for a suggestion among every name
            raise _TooMany(node.span)
        hint = did_you_mean(n, [*self.bound, *self.locals, *{b.name for b in self.scopes}, *self.predeclared])
        self.report(Diagnostic("E0101", f"unknown name '{n}'", node.span, hint=hint))
