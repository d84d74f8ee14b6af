"""MaxText's cross-field refusals, read from ``types.py`` with :mod:`ast` (a stage of
:mod:`rcpc.domain.maxtext.schemagen`; nothing of MaxText or pydantic is imported).

``MaxTextConfig``'s ``@model_validator(mode="after")`` methods (those of its ``BaseModel``
bases first, in pydantic's order: the method resolution order reversed, then each class's own
in definition order) refuse a config with ``if <condition>: raise ValueError("...")`` or
``assert <condition>, "..."``. A refusal is kept (*decidable*) only when its outcome follows
from the config values alone:

* the ``if`` body is exactly one ``raise ValueError(...)`` (or the statement is an
  ``assert``), at the top level of a validator or of a method the validator calls as a
  statement (``self._validate_x()``), or under ``if`` statements that are decidable
  themselves (``if A: if B: raise`` is ``A and B``; code after ``if A: return`` runs under
  ``not A``); never inside ``for``/``while``/``with``/``try`` or a nested function;
* the condition (and every enclosing one) uses only ``self.<field>`` of a typed field of the
  schema, constants, comparisons, ``and``/``or``/``not``, ``in`` with a literal
  tuple/list/set of constants, ``len(...)`` and arithmetic (:func:`expression`);
* no field it reads can have been changed before it: assigned (``self.x = ...``,
  ``setattr(self, "x", ...)``, ``self.x[i] = ...``), mutated in place (``self.x.append``, a
  list or dict field handed to a function) earlier in the chain of validators (conditional
  assignments included), or given a ``field_validator``. Anything that could change an
  unknown field (``setattr`` with a computed name, ``self`` handed to a function whose body
  is not in types.py, a ``mode="before"`` model validator that is not a no-op) makes every
  later refusal undecidable.

Each refusal is a JSON object: ``line`` (types.py line of the ``if``/``assert``), ``in``
(``Class.method``), ``when`` (the condition under which MaxText raises, an expression tree,
:mod:`rcpc.domain.maxtext.refusal_eval`), ``reads`` (the fields it reads, sorted), ``message``
(MaxText's text: a list of strings and ``{"field": name}`` or ``{"expr": source}`` for
f-string holes) and ``guards`` (``[line, truth]`` of each enclosing ``if`` and early return,
outermost first: where the condition came from).
"""

from __future__ import annotations

import ast

_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
        ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}
_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
        ast.Pow: "**"}
_PURE = frozenset(("getattr", "hasattr", "isinstance", "len", "str", "repr", "type", "id", "bool", "int",
                   "float", "print"))  # builtins that read their arguments without changing them
_IMMUTABLE = frozenset(("int", "float", "bool", "str", "none", "literal", "enum"))
_MAX_DEPTH = 8  # helper methods calling helper methods


class Undecidable(Exception):
    """A condition or statement rcpc cannot decide from the config values alone."""


class _State:
    """The fields that may have changed so far (``assigned``), or ``poisoned``: any may have."""

    def __init__(self):
        self.assigned: set[str] = set()
        self.poisoned = False
        # (tree, line, truth): a branch not taken that may change any field (``if
        # self.elastic_enabled: elastic_utils.f(self)``); later refusals are decided only
        # where each holds
        self.unless: list = []

    def copy(self) -> "_State":
        out = _State()
        out.assigned, out.poisoned, out.unless = set(self.assigned), self.poisoned, list(self.unless)
        return out


def extract(tree: ast.Module, mod, root: str, fields: dict) -> tuple[list[dict], int]:
    """(decidable refusals, number of refusals found) of the after-validators of class
    ``root`` (``MaxTextConfig``) of the types.py module ``mod`` (a
    :class:`rcpc.domain.maxtext.schemagen._Module`); ``fields`` is the schema's field table (a
    refusal reads only typed fields). Found counts every ``raise ValueError`` and
    ``assert`` inside those validators and the helpers they call."""
    ex = _Extractor(mod, root, fields)
    ex.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    state = _State()
    for cls in reversed(mod.mro(root)):
        for fn in _validators(mod.classes[cls]):
            mode = _mode(fn)
            ex.local = {}
            if mode == "after":
                ex.walk(fn.body, [], state, _param(fn), f"{cls}.{fn.name}", 0)
            elif not _noop(fn):
                state.poisoned = True
    found = sum(1 for cls in mod.mro(root) for stmt in mod.classes[cls].body if isinstance(stmt, ast.FunctionDef)
                for n in ast.walk(stmt) if isinstance(n, ast.Assert) or (isinstance(n, ast.Raise) and _value_error(n)))
    return ex.out, found


def _validators(cls: ast.ClassDef):
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and _mode(stmt) is not None:
            yield stmt


def _mode(fn: ast.FunctionDef) -> str | None:
    for d in fn.decorator_list:
        if isinstance(d, ast.Call) and _name(d.func).endswith("model_validator"):
            for kw in d.keywords:
                if kw.arg == "mode" and isinstance(kw.value, ast.Constant):
                    return kw.value.value
            return "wrap"
    return None


def _noop(fn: ast.FunctionDef) -> bool:
    """A before-validator that returns its input unchanged (``return values``)."""
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    args = [a.arg for a in fn.args.args]
    return (len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Name)
            and len(args) >= 2 and body[0].value.id == args[1])


def _param(fn: ast.FunctionDef) -> str:
    return fn.args.args[0].arg if fn.args.args else "self"


def _name(node) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    return ""


def _returns(stmt) -> bool:
    """Whether a return can leave the enclosing function from inside ``stmt``."""
    todo = [stmt]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Return):
            return True
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(n))
    return False


def _terminates(body: list) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


def _value_error(stmt) -> bool:
    exc = stmt.exc if isinstance(stmt, ast.Raise) else None
    if isinstance(exc, ast.Call):
        exc = exc.func
    return isinstance(exc, ast.Name) and exc.id == "ValueError"


class _Extractor:
    def __init__(self, mod, root: str, fields: dict):
        self.mod, self.fields = mod, fields
        self.methods: dict[str, ast.FunctionDef] = {}
        for cls in reversed(mod.mro(root)):  # a nearer class's method wins
            for stmt in mod.classes[cls].body:
                if isinstance(stmt, ast.FunctionDef):
                    self.methods[stmt.name] = (cls, stmt)
        self.functions = {}
        self.out: list[dict] = []
        self.local: dict[str, ast.FunctionDef] = {}  # nested functions of the validator walked
        self.field_validated = set()
        for cls in mod.mro(root):
            for node in ast.walk(mod.classes[cls]):
                if isinstance(node, ast.Call) and _name(node.func).endswith("field_validator"):
                    self.field_validated.update(a.value for a in node.args if isinstance(a, ast.Constant))

    # statements ------------------------------------------------------------------------
    def walk(self, body: list, guards: list, state: _State, p: str, where: str, depth: int) -> None:
        """Walk a statement list in execution order; ``guards`` are (tree or None when
        undecidable, line, truth) of the conditions it runs under."""
        guards = list(guards)
        for stmt in body:
            if isinstance(stmt, ast.If):
                self._if(stmt, guards, state, p, where, depth)
                try:
                    cond = self.expression(stmt.test, p)
                except Undecidable:
                    cond = None
                # a branch that raises refuses the config whatever follows; one that returns
                # early leaves what follows to run only on the other branch
                body_ends, else_ends = _terminates(stmt.body), _terminates(stmt.orelse)
                body_ret = bool(stmt.body) and isinstance(stmt.body[-1], ast.Return)
                else_ret = bool(stmt.orelse) and isinstance(stmt.orelse[-1], ast.Return)
                if body_ends and else_ends:
                    return
                if body_ret:
                    guards.append((cond, stmt.lineno, False))
                elif else_ret:
                    guards.append((cond, stmt.lineno, True))
                elif _returns(stmt):
                    guards.append((None, stmt.lineno, True))
                continue
            if isinstance(stmt, ast.Assert):
                self._refusal(stmt, ast.UnaryOp(ast.Not(), stmt.test), stmt.msg, guards, state, p, where)
                continue
            if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and not stmt.value.args
                    and not stmt.value.keywords and isinstance(stmt.value.func, ast.Attribute)
                    and isinstance(stmt.value.func.value, ast.Name) and stmt.value.func.value.id == p
                    and stmt.value.func.attr in self.methods and depth < _MAX_DEPTH):
                cls, fn = self.methods[stmt.value.func.attr]
                self.walk(fn.body, guards, state, _param(fn), f"{cls}.{fn.name}", depth + 1)
                continue
            self._mutations(stmt, p, state, depth)
            if isinstance(stmt, (ast.Return, ast.Raise)):
                return
            if _returns(stmt):
                guards.append((None, stmt.lineno, True))

    def _if(self, stmt: ast.If, guards, state, p, where, depth) -> None:
        refusal = len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Raise) and _value_error(stmt.body[0])
        if refusal:
            exc = stmt.body[0].exc
            msg = exc.args[0] if isinstance(exc, ast.Call) and exc.args else None
            self._refusal(stmt, stmt.test, msg, guards, state, p, where)
        branches = [(body, taken) for body, taken in ((stmt.body, True), (stmt.orelse, False))
                    if body and not (refusal and taken)]
        if branches:  # the condition, computed once for both
            try:
                cond = self.expression(stmt.test, p)
            except Undecidable:
                cond = None
            for body, taken in branches:
                self.walk(body, [*guards, (cond, stmt.lineno, taken)], state.copy(), p, where, depth)
        self._mutations_of(stmt, p, state, depth)  # what either branch may change, for what follows

    def _refusal(self, stmt, test, msg, guards, state, p, where) -> None:
        if state.poisoned or any(g[0] is None for g in guards):
            return
        try:
            cond = self.expression(test, p)
        except Undecidable:
            return
        guards = [*state.unless, *guards]
        parts = [g[0] if g[2] else {"not": g[0]} for g in guards] + [cond]
        when = parts[0] if len(parts) == 1 else {"and": parts}
        reads = sorted(_reads(when))
        if not reads or set(reads) & state.assigned:
            return
        self.out.append({"line": stmt.lineno, "in": where, "when": when, "reads": reads,
                         "message": self._message(msg, p), "guards": [[g[1], g[2]] for g in guards]})

    # expressions -----------------------------------------------------------------------
    def expression(self, node, p: str, ctx: str = "bool") -> dict:
        """The tree of a condition (``Undecidable`` when it reads anything but typed fields
        and constants): ``{"field": k}``, ``{"const": v}`` (``"kind"`` tuple/list/set for a
        literal collection), ``{"not": e}``, ``{"neg": e}``, ``{"and": [e...]}``, ``{"or":
        [e...]}``, ``{"compare": e, "ops": [[op, e]...]}`` (ops ``== != < <= > >= in
        not in is is not``; ``is`` only with None, True or False), ``{"op": "+ - * / // % **",
        "args": [e, e]}``, ``{"len": e}``. A list or dict field is read only where its value
        decides as pydantic's list and pyconfig's tuple alike (``ctx``: a truth value, the
        argument of ``len``, the right of ``in``); an enum field only when its class is a
        ``str`` or ``int`` enum of types.py (its members compare as their values).
        ``Enum.MEMBER.value`` of a str or int enum of types.py or common_types.py is its value;
        ``isinstance(self.key, int)`` (``float``, ``str``) is True when pydantic makes the key
        one, and ``self.key is not None`` when it makes it one or None."""
        if isinstance(node, ast.Constant) and (node.value is None or type(node.value) in (bool, int, float, str)):
            return {"const": node.value}
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = []
            for e in node.elts:
                if not (isinstance(e, ast.Constant) and (e.value is None or type(e.value) in (bool, int, float, str))):
                    raise Undecidable(ast.unparse(node))
                items.append(e.value)
            return {"const": items, "kind": {ast.Tuple: "tuple", ast.List: "list", ast.Set: "set"}[type(node)]}
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == p:
            f = self.fields.get(node.attr)
            if f is None or node.attr in self.field_validated or not _typed(f["type"]):
                raise Undecidable(node.attr)
            if "base" not in f and "default" not in f:
                raise Undecidable(node.attr)
            if not self._comparable(f["type"]) or (ctx == "value" and not _immutable(f["type"])):
                raise Undecidable(node.attr)
            return {"field": node.attr}
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
            if isinstance(node.op, ast.Not):
                return {"not": self.expression(node.operand, p, "bool")}
            return {"neg": self.expression(node.operand, p, "value")}
        if isinstance(node, ast.BoolOp):
            return {"and" if isinstance(node.op, ast.And) else "or": [self.expression(v, p, ctx) for v in node.values]}
        if isinstance(node, ast.Compare) and all(type(o) in _CMP for o in node.ops):
            ops = []
            for o, c in zip(node.ops, node.comparators):
                if isinstance(o, (ast.Is, ast.IsNot)) and not (isinstance(c, ast.Constant) and c.value in (None, True, False)
                                                                and type(c.value) in (type(None), bool)):
                    raise Undecidable(ast.unparse(node))
                ops.append([_CMP[type(o)], self.expression(c, p, "container" if isinstance(o, (ast.In, ast.NotIn)) else "value")])
            return {"compare": self.expression(node.left, p, "value"), "ops": ops}
        if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
            return {"op": _BIN[type(node.op)], "args": [self.expression(node.left, p, "value"),
                                                        self.expression(node.right, p, "value")]}
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"
                and len(node.args) == 1 and not node.keywords):
            return {"len": self.expression(node.args[0], p, "container")}
        if (isinstance(node, ast.Attribute) and node.attr == "value" and isinstance(node.value, ast.Attribute)
                and isinstance(node.value.value, ast.Name)):  # Enum.MEMBER.value
            value = self._member_value(node.value.value.id, node.value.attr)
            if value is not None:
                return {"const": value}
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"
                and len(node.args) == 2 and not node.keywords and isinstance(node.args[1], ast.Name)
                and node.args[1].id in ("int", "float", "str") and isinstance(node.args[0], ast.Attribute)):
            field = self.expression(node.args[0], p, "value")  # isinstance(self.key, int)
            t = self.fields[field["field"]]["type"]
            if t["type"] == node.args[1].id:  # pydantic made it one: always
                return {"const": True}
            if t["type"] == "union" and sorted(m["type"] for m in t["of"]) == sorted((node.args[1].id, "none")):
                return {"compare": field, "ops": [["is not", {"const": None}]]}
        raise Undecidable(ast.unparse(node))

    def _member_value(self, enum: str, member: str):
        """The value of ``enum.member`` (an ``Enum`` of types.py or of common_types.py), when a
        str or int; None otherwise."""
        if enum in self.mod.classes and self.mod.is_enum(enum):
            members = {st.targets[0].id: st.value.value for st in self.mod.classes[enum].body
                       if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                       and isinstance(st.value, ast.Constant)}
        else:
            members = self.mod.external.get(enum, (None, {}))[1] if enum in self.mod.imported else {}
        value = members.get(member)
        return value if type(value) in (str, int) else None

    def _comparable(self, t: dict) -> bool:
        """Whether pydantic's value of type ``t`` decides as rcpc's does: an enum must be one
        of types.py's ``str``/``int`` enums (an imported one's values are unknown)."""
        if t["type"] == "union":
            return all(self._comparable(x) for x in t["of"])
        if t["type"] in ("list", "dict"):
            return self._comparable(t.get("items") or t.get("values"))
        if t["type"] == "enum":
            name = t.get("name")
            return (t.get("values") is not None and name in self.mod.classes
                    and any(b.split(".")[-1] in ("str", "int", "StrEnum", "IntEnum") for b in self.mod.bases(name)))
        return True

    def _message(self, msg, p: str) -> list:
        if msg is None:
            return []
        if isinstance(msg, ast.Constant) and isinstance(msg.value, str):
            return [msg.value]
        if isinstance(msg, ast.JoinedStr):
            out: list = []
            for v in msg.values:
                if isinstance(v, ast.Constant):
                    out.append(v.value)
                elif (isinstance(v, ast.FormattedValue) and v.conversion == -1 and v.format_spec is None
                      and isinstance(v.value, ast.Attribute) and isinstance(v.value.value, ast.Name)
                      and v.value.value.id == p and v.value.attr in self.fields):
                    out.append({"field": v.value.attr})
                elif (isinstance(v, ast.FormattedValue) and v.conversion == -1 and v.format_spec is None
                      and isinstance(v.value, ast.Attribute) and v.value.attr == "value"
                      and isinstance(v.value.value, ast.Attribute) and isinstance(v.value.value.value, ast.Name)
                      and self._member_value(v.value.value.value.id, v.value.value.attr) is not None):
                    out.append(str(self._member_value(v.value.value.value.id, v.value.value.attr)))  # Enum.X.value
                else:
                    out.append({"expr": ast.unparse(v.value if isinstance(v, ast.FormattedValue) else v)})
            return out
        return [{"expr": ast.unparse(msg)}]

    # what a statement may change ------------------------------------------------------------
    def _mutations(self, stmt, p: str, state: _State, depth: int) -> None:
        self._mutations_of(stmt, p, state, depth)

    def _mutations_of(self, node, p: str, state: _State, depth: int, seen: frozenset = frozenset()) -> None:
        """Record in ``state`` what running ``node`` may change (module docstring). A branch
        of a decidable ``if`` that may change any field adds an ``unless`` guard (not
        taking that branch is enough for nothing unknown to have changed)."""
        loops: dict[str, list] = {}  # loop variable -> the literal strings it takes
        for n in ast.walk(node):
            if (isinstance(n, ast.For) and isinstance(n.target, ast.Name) and isinstance(n.iter, (ast.Tuple, ast.List))
                    and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in n.iter.elts)):
                loops[n.target.id] = [e.value for e in n.iter.elts]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in seen:
            node = ast.Module(body=node.body, type_ignores=[])  # a helper's body, as it runs
        self._scan(node, p, state, depth, seen, loops)

    def _scan(self, n, p, state, depth, seen, loops, top=False) -> None:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not top:
            self.local[n.name] = n  # a nested function runs when it is named (called)
            return
        if isinstance(n, ast.If):
            self._scan(n.test, p, state, depth, seen, loops)
            try:
                cond = self.expression(n.test, p)
            except Undecidable:
                cond = None
            if cond is not None and _reads(cond) & state.assigned:
                cond = None
            for branch, truth in ((n.body, True), (n.orelse, False)):
                inner = state.copy()
                inner.poisoned = False
                for part in branch:
                    self._scan(part, p, inner, depth, seen, loops)
                state.assigned |= inner.assigned
                state.unless.extend(u for u in inner.unless if u not in state.unless)
                if inner.poisoned:
                    if cond is not None:
                        state.unless.append((cond, n.lineno, not truth))
                    else:
                        state.poisoned = True
            return
        self._effect(n, p, state, depth, seen, loops)
        if isinstance(n, ast.Name) and n.id in self.local and n.id not in seen and depth < _MAX_DEPTH:
            self._scan(self.local[n.id], p, state, depth + 1, seen | {n.id}, loops, True)
        for child in ast.iter_child_nodes(n):
            self._scan(child, p, state, depth, seen, loops)

    def _effect(self, n, p, state, depth, seen, loops) -> None:
        """What one node itself may change (its children are scanned apart)."""
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            target = n.value if isinstance(n, ast.Subscript) else n
            while isinstance(target, ast.Subscript):
                target = target.value
            if isinstance(n, ast.Attribute) and _is(n.value, p):
                state.assigned.add(n.attr)
            elif isinstance(target, ast.Attribute) and _is(target.value, p):
                state.assigned.add(target.attr)
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Attribute) and _is(target.value.value, p):
                state.assigned.add(target.value.attr)
        elif isinstance(n, ast.Attribute) and _is(n.value, p) and n.attr == "__dict__":
            state.poisoned = True
        elif isinstance(n, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and _is(n.value, p):
            state.poisoned = True  # an alias of self
        elif (isinstance(n, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and isinstance(n.value, ast.Attribute)
              and _is(n.value.value, p)):  # an alias of a field's list or dict
            f = self.fields.get(n.value.attr)
            if f is None or not _immutable(f["type"]):
                state.assigned.add(n.value.attr)
        elif isinstance(n, ast.Call):
            self._call(n, p, state, depth, loops, seen)

    def _call(self, n: ast.Call, p, state, depth, loops, seen) -> None:
        fname = _name(n.func)
        args = [*n.args, *(k.value for k in n.keywords)]
        if fname in ("setattr", "object.__setattr__") and n.args and _is(n.args[0], p):
            key = n.args[1] if len(n.args) > 1 else None
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                state.assigned.add(key.value)
            elif isinstance(key, ast.Name) and key.id in loops:
                state.assigned.update(loops[key.id])
            else:
                state.poisoned = True
            return
        if isinstance(n.func, ast.Attribute) and _is(n.func.value, p):  # self.method(...)
            found = self.methods.get(n.func.attr)
            if found is None or depth >= _MAX_DEPTH:
                state.poisoned = True
            elif n.func.attr not in seen:
                self._mutations_of(found[1], _param(found[1]), state, depth + 1, seen | {n.func.attr})
        elif (isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Attribute)
              and _is(n.func.value.value, p)):  # self.x.append(...): x may change in place
            state.assigned.add(n.func.value.attr)
        for i, a in enumerate(args):
            if _is(a, p) and fname not in _PURE:
                fn = self.functions.get(fname)
                if fn is None or i >= len(fn.args.args) or i >= len(n.args) or depth >= _MAX_DEPTH:
                    state.poisoned = True
                elif fname not in seen:
                    self._mutations_of(fn, fn.args.args[i].arg, state, depth + 1, seen | {fname})
            elif isinstance(a, ast.Attribute) and _is(a.value, p) and fname not in _PURE:
                f = self.fields.get(a.attr)
                if f is None or not _immutable(f["type"]):
                    state.assigned.add(a.attr)


def _is(node, p: str) -> bool:
    return isinstance(node, ast.Name) and node.id == p


def _typed(t: dict) -> bool:
    return t["type"] not in ("validated", "model", "any")


def _immutable(t: dict) -> bool:
    if t["type"] == "union":
        return all(_immutable(x) for x in t["of"])
    return t["type"] in _IMMUTABLE


def _reads(tree) -> set:
    if isinstance(tree, dict):
        if "field" in tree and len(tree) == 1:
            return {tree["field"]}
        return set().union(*(_reads(v) for v in tree.values())) if tree else set()
    if isinstance(tree, list):
        return set().union(*(_reads(v) for v in tree)) if tree else set()
    return set()


def contradicts(when: dict) -> bool:
    """Whether a condition is false whatever the values: a conjunction (``and`` nested in
    ``and``) holding a term and its negation. Such a refusal could never fire (a guard ``not
    A`` added for a branch that may change any field, and the refusal's own ``A``: types.py's
    ``elastic_enabled`` checks); the schema leaves it out."""
    terms: list = []

    def flat(e):
        if isinstance(e, dict) and set(e) == {"and"}:
            for x in e["and"]:
                flat(x)
        else:
            terms.append(e)

    flat(when)
    return any({"not": t} in terms for t in terms)
