"""Evaluation: AST → values, with provenance (every value carries the span that made it).

One :class:`Evaluator` evaluates one file; a file yields its top-level bindings as exports.
What else a file may declare is the host's (:class:`~rcpc.core.builtins.Universe`: the
recipe domain's params, renders and variants, :mod:`rcpc.domain.builtins`):

* ``NAME = f(...)`` with ``f`` a declaration of the universe (``param``) binds the name to
  what the declaration gives;
* a top-level expression statement's value goes to the universe's ``statement`` hook; with
  none, or a value it does not take, it is an error (``E0705``), since it would do nothing.

Arithmetic is on ints only (``+ - * // %``); ``+`` also joins strings and lists, merges dicts
(right wins) and is extended by the universe for its own kinds. Conditions must be bools.
Errors are :class:`~rcpc.core.diagnostics.CompileError` with the span of the offending
expression.
"""

from __future__ import annotations

from types import MappingProxyType
from collections.abc import Callable

from rcpc.core import builtins as B
from rcpc.core import functions as F
from rcpc.core import record
from rcpc.core import trace as T
from rcpc.core.limits import INT_LIMIT, LIMIT_HINT, MAX_DEPTH, MAX_STEPS, MAX_STRING
from rcpc.core.diagnostics import CompileError, Diagnostic, by_place, did_you_mean, did_you_mean_or_list, error
from rcpc.core.resolve import LOCAL
from rcpc.core.source import Span
from rcpc.core.syntax import ast
from rcpc.core.syntax.walk import walk
from rcpc.core.values import Bool, Builtin, Dict, Float, Int, List, Null, Str, concat, text_of, type_name

_BOOLS_HINT = "compare explicitly, e.g. X != 0 or X != \"\""
# E0705 of a string on its own line: Python's and Starlark's docstring, which rcpc has not
DOCSTRING_HINT = "a string on its own is not a docstring here: write # comments"

NO_SCOPE = MappingProxyType({})  # the scope outside any comprehension


class _Poisoned(Exception):
    """A statement used a name whose own statement failed: skip it without a new error."""


_POISON = object()  # the value of a name whose statement failed
_FALLTHROUGH = object()  # a function body's statements ran to their end without a return


@record.define
class Context:
    """What built-ins may ask of the run: ``diagnostics`` collects warnings and notes. A host
    subclasses it with what its built-ins need (the recipe domain: the MaxText schema)."""

    diagnostics: list = record.Factory(list)
    steps: int = 0  # comprehension iterations of the file being evaluated (Evaluator.run)
    errors: list = record.Factory(list)     # errors that do not stop evaluation (see report)
    collected: list = record.Factory(list)  # values built-ins collected in the run (see collect)

    def collect(self, value) -> None:
        """Keep ``value`` (built by a built-in) in the result of the module being evaluated
        (:attr:`ModuleResult.collected`): the recipe domain keeps every flag set built."""
        self.collected.append(value)
    calls: list = record.Factory(list)      # the running function calls (functions.Frame), outermost first

    def called(self) -> tuple:
        """The ``why`` of a dict made inside a function call: each call site, innermost
        first, as ``(call span, None, function name)`` (explain shows them); ``()`` outside."""
        return tuple((f.call, None, f.function.name) for f in reversed(self.calls))

    def warn(self, diagnostic) -> None:
        self.diagnostics.append(diagnostic)

    def report(self, diagnostic) -> None:
        """An error that leaves the value usable (a flag MaxText would refuse): evaluation goes
        on, so the file's other errors are found too; it is raised with them at the end."""
        self.errors.append(diagnostic)


@record.define
class ModuleResult:
    """What evaluating one file produced (a host adds its fields by subclassing:
    :attr:`~rcpc.core.builtins.Universe.result`)."""

    exports: dict
    errors: list = record.Factory(list)      # reported errors (Context.report) of this file
    collected: list = record.Factory(list)   # values collected (Context.collect) while evaluating it
    trace: object = None  # what each statement did (rcpc.core.trace.Trace), when recorded

    TRACED = ()  # the fields a statement adds to, which a trace records (rcpc.core.trace)


class Evaluator:
    """Evaluates one module.

    ``load(target, span) -> dict`` returns a loaded file's exports. ``overrides`` maps
    declared names (params) to values, or to ``--set`` text typed when the param is declared
    (recipe files only); ``is_recipe`` False forbids params, renders and variants (loaded
    files export constants only). ``universe`` is the predeclared environment (default: the
    core's built-ins only). ``skip_calls``: names of built-ins whose top-level call
    statements are not evaluated (the recipe domain skips ``variant(...)`` in a variant's own
    build: the declarations come from the default evaluation, and evaluating every
    declaration in every variant made a recipe of V variants cost V² declarations).
    ``record``: keep what each statement did (:attr:`ModuleResult.trace`); ``base``: such a
    trace of a run of the same module, whose statements that read no overridden name are
    done again rather than evaluated (:mod:`rcpc.core.trace`).
    """

    def __init__(self, load: Callable, overrides: dict | None, is_recipe: bool,
                 ctx: Context | None = None, universe: B.Universe = B.CORE, skip_calls: frozenset = frozenset(),
                 record: bool = False, base=None):
        self.load = load
        self.skip_calls = skip_calls
        self.record = record
        self.base = base
        self.ctx = ctx or Context()
        self.overrides = overrides or {}
        self.is_recipe = is_recipe
        self.universe = universe
        self.env: dict = {}
        self.params: dict = {}  # name → what a declaration (param) bound it to
        self.depth = 0
        self.bindings = None  # the module's (rcpc.core.resolve), for the locals of its functions

    # statements -------------------------------------------------------------------------
    def run(self, module: ast.Module) -> ModuleResult:
        """Evaluate every statement. An error does not stop the file: the statement's name is
        bound to a poisoned value, statements that use it are skipped silently (no cascade of
        follow-on errors), and every error found is raised together at the end."""
        result = (self.universe.result or ModuleResult)(self.env)
        self.bindings = module.bindings
        errors: list = []
        start, collected_start = len(self.ctx.errors), len(self.ctx.collected)
        # The comprehension budget (MAX_STEPS) is one file's evaluation: a library's own
        # evaluation (once a run, for whichever recipe loads it first) does not draw on the
        # recipe's, so a result never depends on which recipes share a run or on -j.
        outer_steps, self.ctx.steps = self.ctx.steps, 0
        marks = [] if self.record else None  # rcpc.core.trace: a mark before each statement
        watched = T.watched(self, result) if marks is not None else ()
        base = self.base if self.base is not None and self.base.module is module else None
        dirty = set(self.overrides)
        for i, stmt in enumerate(module.stmts):
            try:
                if marks is not None:
                    marks.append(T.mark(watched, self.ctx))
                if base is not None:
                    if T.replayable(self, base, i, stmt, dirty):
                        T.replay(self, result, base.step(i))
                        continue
                    if type(stmt) is ast.Assign:
                        dirty.add(stmt.name)
                self._statement(stmt, result)
            except _Poisoned:
                marks = None  # a statement did not end: no trace
                self._poison(stmt)
            except CompileError as exc:
                errors.extend(exc.diagnostics)
                self._poison(stmt)
            except RecursionError:
                errors.append(Diagnostic("E0801", "value nested too deeply", stmt.span,
                                         hint="flatten the data; rcpc nests at most a few hundred levels"))
                self._poison(stmt)
        if marks is not None and not errors:
            marks.append(T.mark(watched, self.ctx))
            result.trace = T.traced(self, module, watched, marks)
        self.ctx.steps = outer_steps
        result.errors = self.ctx.errors[start:]
        del self.ctx.errors[start:]
        result.collected = self.ctx.collected[collected_start:]
        del self.ctx.collected[collected_start:]
        if errors:
            raise CompileError(by_place(errors + result.errors))
        if self.universe.finish is not None:
            self.universe.finish(self, module, result)
        return result

    def _poison(self, stmt) -> None:
        if type(stmt) in (ast.Assign, ast.Def):
            self.env[stmt.name] = _POISON
        elif type(stmt) is ast.Load:
            for ln in stmt.names:
                self.env.setdefault(ln.local, _POISON)

    def _statement(self, stmt, result: ModuleResult) -> None:
        t = type(stmt)
        if t is ast.Assign:
            value = stmt.value
            if (type(value) is ast.Call and type(value.func) is ast.Name
                    and value.func.id in self.universe.declarations):
                declare = self.universe.declarations[value.func.id].declare
                self.env[stmt.name] = declare(self, stmt, value, result)
            else:
                self.env[stmt.name] = self.eval(value, NO_SCOPE)
        elif t is ast.Load:
            exports = self.load(stmt.path, stmt.path_span)
            errors = []
            for ln in stmt.names:
                if ln.remote.startswith("_"):
                    errors.append(Diagnostic("E0203", f"'{ln.remote}' is private to {stmt.path}", ln.span,
                                             hint="names starting with '_' are not exported"))
                elif ln.remote not in exports:
                    public = [k for k in exports if not k.startswith("_")]
                    errors.append(Diagnostic("E0203", f"{stmt.path} has no name '{ln.remote}'", ln.span,
                                             hint=did_you_mean_or_list(ln.remote, public, "its names")))
                else:
                    self.env[ln.local] = exports[ln.remote]
            if errors:
                raise CompileError(errors)
        elif t is ast.Def:
            self.env[stmt.name] = self._def(stmt)
        elif not (type(stmt.expr) is ast.Call and type(stmt.expr.func) is ast.Name
                  and stmt.expr.func.id in self.skip_calls):
            self._expr_stmt(stmt, result)

    def _def(self, node: ast.Def) -> F.Function:
        if self.is_recipe:
            raise error("E0654", f"a recipe cannot define functions ('def {node.name}')", node.span,
                        hint="recipes stay declarative: move the def into a library file and load() it")
        defaults = tuple(None if p.default is None else self.eval(p.default, NO_SCOPE) for p in node.params)
        return F.Function(node.name, node, defaults, self, node.name_span)

    # function bodies ----------------------------------------------------------------------
    def call_function(self, fn: F.Function, node: ast.Call, args: list, kwargs: dict):
        """Call ``fn`` (a def of this evaluator's file) from ``node``: bind the arguments,
        run the body, return its value (None without a ``return``)."""
        stack = self.ctx.calls
        F.check_recursion(stack, fn, node.span)
        scope = F.bind_arguments(fn, node, args, kwargs)
        stack.append(F.Frame(fn, node.span))
        try:
            value = self._body(fn.node.body, scope)
        except CompileError as exc:
            raise F.called_from(exc, fn, node.span) from None
        finally:
            stack.pop()
        return Null("None", node.span) if value is _FALLTHROUGH else value

    def _body(self, stmts, scope: dict):
        """Run statements of a function body in ``scope`` (its locals, changed in place); the
        value of a ``return``, or :data:`_FALLTHROUGH`."""
        for st in stmts:
            t = type(st)
            if t is ast.Assign:
                scope[st.name] = self.eval(st.value, scope)
            elif t is ast.Return:
                return Null("None", st.span) if st.value is None else self.eval(st.value, scope)
            elif t is ast.If:
                for cond, body in st.branches:
                    if self._cond(cond, scope):
                        break
                else:
                    body = st.orelse
                value = self._body(body, scope)
                if value is not _FALLTHROUGH:
                    return value
            elif t is ast.For:
                for item in self._iterate(self.eval(st.iter, scope), st.iter.span, st.span):
                    scope[st.var] = item
                    value = self._body(st.body, scope)
                    if value is not _FALLTHROUGH:
                        return value
            else:
                value = self.eval(st.expr, scope)
                if not (type(value) is Null and type(st.expr) is ast.Call):
                    raise error("E0705", f"this {type_name(value)} is not used", st.span,
                                hint=DOCSTRING_HINT if type(st.expr) is ast.StrLit else
                                "assign it to a name, or return it")
        return _FALLTHROUGH

    def _iterate(self, iterable, span: Span, where: Span) -> tuple:
        """The items a ``for`` or a comprehension goes over (a list's items, a dict's keys),
        charged to the run's step budget (``E0804``)."""
        if type(iterable) is List:
            seq = iterable.items
        elif type(iterable) is Dict:
            seq = tuple(Str(k, iterable.key_spans.get(k, iterable.span)) for k in iterable.items)
        else:
            raise error("E0301", f"cannot iterate over a {type_name(iterable)}", span,
                        hint="iterate over a list, a dict (its keys) or range(n)")
        ctx = self.ctx
        ctx.steps += len(seq)
        if ctx.steps > MAX_STEPS:
            raise error("E0804", f"evaluation budget of {MAX_STEPS} comprehension steps exceeded", where,
                        hint="a recipe should not need millions of items; check the ranges")
        return seq

    def _expr_stmt(self, stmt: ast.ExprStmt, result: ModuleResult) -> None:
        value = self.eval(stmt.expr, NO_SCOPE)
        if type(value) is Null and type(stmt.expr) is ast.Call:
            return  # a call made for its checks, e.g. require(...)
        if self.universe.statement is None:
            raise error("E0705", f"this {type_name(value)} is not used", stmt.span,
                        hint=DOCSTRING_HINT if type(stmt.expr) is ast.StrLit else "assign it to a name")
        self.universe.statement(self, stmt, value, result)

    # expressions ------------------------------------------------------------------------
    def eval(self, node, scope):
        """Evaluate expression ``node``; ``scope`` holds comprehension variables."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.depth -= 1  # the finally below does not run for this frame
            raise error("E0801", f"expression nested deeper than {MAX_DEPTH} levels", node.span,
                        hint="name the inner parts: X = ... then use X")
        try:
            return _DISPATCH[type(node)](self, node, scope)
        finally:
            self.depth -= 1

    def _name(self, node: ast.Name, scope):
        if node.id in scope:
            return scope[node.id]
        if self.bindings is not None and type(scope) is dict:  # inside a function
            b = self.bindings.of(node)
            if b is not None and b.kind == LOCAL:
                raise error("E0652", f"local '{node.id}' is used before it is assigned", node.span,
                            related=(("assigned here", b.span),),
                            hint="assign it on every path before this use")
        if node.id in self.env:
            value = self.env[node.id]
            if value is _POISON:
                raise _Poisoned()
            return value
        return self.universe.lookup(node.id, node.span)

    def _int(self, node, scope):
        return Int(node.value, node.text, node.span)

    def _float(self, node, scope):
        return Float(node.value, node.text, node.span)

    def _bool(self, node, scope):
        return Bool(node.value, node.text, node.span)

    def _none(self, node, scope):
        return Null(node.text, node.span)

    def _str(self, node, scope):
        return Str(node.value, node.span)

    def _fstring(self, node: ast.FString, scope):
        out = []
        tokens = False
        for part in node.parts:
            if type(part) is str:
                out.append(part)
                continue
            v = self.eval(part, scope)
            text = text_of(v)
            if text is None:
                raise error("E0301", f"cannot put a {type_name(v)} into an f-string", part.span,
                            hint="interpolate scalars only; use json(...) or \" \".join(...) for lists")
            if type(v) is Str and v.pieces:
                out.append(v)  # flag tokens keep their provenance
                tokens = True
            else:
                out.append(text)
        if tokens:
            s = concat(out, node.span)
            _limit_str(s.value, node.span)
            return s
        return Str(_limit_str("".join(out), node.span), node.span)

    # Literal items of list and dict literals are made here rather than through eval, while
    # one level deeper is within MAX_DEPTH (where eval would make the same value).
    def _list(self, node: ast.ListLit, scope):
        if self.depth >= MAX_DEPTH:
            return List(tuple(self.eval(x, scope) for x in node.items), node.span)
        out = []
        for x in node.items:
            lit = _LITERALS.get(type(x))
            out.append(lit(x) if lit is not None else self.eval(x, scope))
        return List(tuple(out), node.span)

    def _dict(self, node: ast.DictLit, scope):
        items: dict = {}
        spans: dict = {}
        shallow = self.depth < MAX_DEPTH
        for knode, vnode in node.items:
            if shallow and type(knode) is ast.StrLit:
                k = knode.value  # what eval makes of it: Str(knode.value, ...)
            else:
                key = self.eval(knode, scope)
                if type(key) is not Str:
                    raise error("E0301", f"dict keys are strings, got {type_name(key)}", knode.span,
                                hint=f"write the key as a string: \"{text_of(key)}\"" if text_of(key) else None)
                B.no_pieces(key, "a dict key", knode.span)
                k = key.value
            if k in items:
                raise error("E0302", f"key '{k}' appears twice in this dict", knode.span,
                            related=(("first here", spans[k]),),
                            hint="a repeated key in one dict is a typo; to override, add a later layer or use +")
            lit = _LITERALS.get(type(vnode)) if shallow else None
            items[k] = lit(vnode) if lit is not None else self.eval(vnode, scope)
            spans[k] = knode.span
        return Dict(items, spans, node.span, self.ctx.called())

    def _comprehension(self, node: ast.Comprehension, scope):
        clause = node.clause
        seq = self._iterate(self.eval(clause.iter, scope), clause.iter.span, node.span)
        out_items = []
        keys: dict = {}
        spans: dict = {}
        for item in seq:
            inner = dict(scope)
            inner[clause.var] = item
            if not all(self._cond(c, inner) for c in clause.conds):
                continue
            if node.key is None:
                out_items.append(self.eval(node.elt, inner))
            else:
                key = self.eval(node.key, inner)
                if type(key) is not Str:
                    raise error("E0301", f"dict keys are strings, got {type_name(key)}", node.key.span,
                                hint="make the key a string: str(...) or an f-string")
                B.no_pieces(key, "a dict key", node.key.span)
                if key.value in keys:
                    raise error("E0302", f"key '{key.value}' is produced twice by this comprehension",
                                node.key.span, hint="make the key expression give each item its own key")
                keys[key.value] = self.eval(node.elt, inner)
                spans[key.value] = key.span
        if node.key is None:
            return List(tuple(out_items), node.span)
        return Dict(keys, spans, node.span, self.ctx.called())

    def _cond(self, node, scope) -> bool:
        v = self.eval(node, scope)
        if type(v) is not Bool:
            raise error("E0301", f"a condition must be a bool, got {type_name(v)}", node.span,
                        hint=_BOOLS_HINT)
        return v.value

    def _binop(self, node: ast.BinOp, scope):
        left = self.eval(node.left, scope)
        right = self.eval(node.right, scope)
        plus = self.universe.plus.get(type(left)) if node.op == "+" and type(right) is type(left) else None
        if plus is not None:
            return plus(self.ctx, left, right, node.span)
        return B.binop(node.op, left, right, node.span)

    def _neg(self, node: ast.Neg, scope):
        v = self.eval(node.operand, scope)
        if type(v) in (Int, Float):
            text = v.text[1:] if v.text.startswith("-") else "-" + v.text
            if type(v) is Int and v.value == -INT_LIMIT:  # -(-2**63) is 2**63: out of range
                raise error("E0806", "integer result is out of the 64-bit range", node.span,
                            hint=f"ints lie between -{INT_LIMIT} and {INT_LIMIT - 1}")
            return type(v)(-v.value, text, node.span)
        raise error("E0301", f"cannot negate a {type_name(v)}", node.span, hint="'-' negates an int or a float")

    def _boolop(self, node: ast.BoolOp, scope):
        left = self.eval(node.left, scope)
        if type(left) is not Bool:
            raise error("E0301", f"'{node.op}' needs bools, got {type_name(left)}", node.left.span,
                        hint=_BOOLS_HINT)
        if (node.op == "and") != left.value:
            return left
        right = self.eval(node.right, scope)
        if type(right) is not Bool:
            raise error("E0301", f"'{node.op}' needs bools, got {type_name(right)}", node.right.span,
                        hint=_BOOLS_HINT)
        return right

    def _not(self, node: ast.Not, scope):
        v = self.eval(node.operand, scope)
        if type(v) is not Bool:
            raise error("E0301", f"'not' needs a bool, got {type_name(v)}", node.operand.span, hint=_BOOLS_HINT)
        return Bool(not v.value, B.bool_text(not v.value, v.text), node.span)

    def _compare(self, node: ast.Compare, scope):
        left = self.eval(node.left, scope)
        right = self.eval(node.right, scope)
        return B.compare(node.op, left, right, node.span)

    def _conditional(self, node: ast.Conditional, scope):
        cond = self._cond(node.cond, scope)
        value = self.eval(node.then if cond else node.orelse, scope)
        if type(value) is Dict:
            why = (node.cond.span, cond, tuple(self._params_in(node.cond, scope)))
            value = record.evolve(value, why=value.why + (why,))
        return value

    def _params_in(self, node, scope=NO_SCOPE):
        """(name, value text) of each param, or argument or local of the running function,
        named in ``node`` (for flag provenance)."""

        found: list = []
        for n in walk(node):
            if type(n) is not ast.Name or n.id in [f[0] for f in found]:
                continue
            if self.ctx.calls and n.id in scope:
                value = scope[n.id]
            elif n.id in self.params:
                value = self.env[n.id]
            else:
                continue
            found.append((n.id, text_of(value) or type_name(value)))
        return found

    def _index(self, node: ast.Index, scope):
        return B.index(self.eval(node.obj, scope), self.eval(node.index, scope), node.span)

    def _attr(self, node: ast.Attr, scope):
        obj = self.eval(node.obj, scope)
        return B.attribute(obj, node.name, node.name_span, node.span, self.universe.attributes.get(type(obj)))

    def _call(self, node: ast.Call, scope):
        func = self.eval(node.func, scope)
        if type(func) is not Builtin and type(func) is not F.Function:
            raise error("E0301", f"a {type_name(func)} is not callable", node.func.span,
                        hint="call a def or a built-in; drop the parentheses to use the value")
        declaration = self.universe.declarations.get(func.name) if type(func) is Builtin else None
        if declaration is not None:
            raise error("E0501", f"{func.name}() must be assigned directly to a top-level name", node.span,
                        hint=f"write {declaration.usage}")
        args = [self.eval(a, scope) for a in node.args]
        kwargs = {}
        for kw in node.kwargs:
            if kw.name in kwargs:
                raise error("E0306", f"argument '{kw.name}' given twice", kw.name_span,
                            hint="give each argument once")
            kwargs[kw.name] = (self.eval(kw.value, scope), kw.name_span)
        if type(func) is F.Function:
            return func.evaluator.call_function(func, node, args, kwargs)
        return func.fn(self.ctx, func, node.span, args, kwargs)


def _limit_str(s: str, span: Span) -> str:
    if len(s) > MAX_STRING:
        raise error("E0802", f"string of {len(s)} characters is over the limit of {MAX_STRING}", span, hint=LIMIT_HINT)
    return s


# The value of each literal node (what eval makes of it: Evaluator._int, ...).
_LITERALS = {
    ast.IntLit: lambda n: Int(n.value, n.text, n.span), ast.FloatLit: lambda n: Float(n.value, n.text, n.span),
    ast.BoolLit: lambda n: Bool(n.value, n.text, n.span), ast.NoneLit: lambda n: Null(n.text, n.span),
    ast.StrLit: lambda n: Str(n.value, n.span),
}

_DISPATCH = {
    ast.Name: Evaluator._name, ast.IntLit: Evaluator._int, ast.FloatLit: Evaluator._float,
    ast.BoolLit: Evaluator._bool, ast.NoneLit: Evaluator._none, ast.StrLit: Evaluator._str,
    ast.FString: Evaluator._fstring, ast.ListLit: Evaluator._list, ast.DictLit: Evaluator._dict,
    ast.Comprehension: Evaluator._comprehension, ast.BinOp: Evaluator._binop,
    ast.Neg: Evaluator._neg, ast.BoolOp: Evaluator._boolop, ast.Not: Evaluator._not,
    ast.Compare: Evaluator._compare, ast.Conditional: Evaluator._conditional,
    ast.Index: Evaluator._index, ast.Attr: Evaluator._attr, ast.Call: Evaluator._call,
}
