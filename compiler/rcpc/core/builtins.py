"""Universal built-ins of the language: functions, operators, indexing and attributes.

Built-in functions (all hermetic: no environment, clock, network or file access):

* ``require(condition, "message")`` — fails the build (``E0790``) with the message when the
  condition is false; a top-level ``require(...)`` statement is allowed;
* ``dict(key = value, ...)`` — a dict of the keyword arguments, in order (Starlark's
  ``dict``; keys are names, so ``dict(steps = 30)`` is ``{"steps": 30}``; for other keys
  write a dict literal);
* ``range``, ``len``, ``str``, ``json``; the types ``bool``, ``int``, ``float`` (``str`` is
  both the function and the type).

Attributes: strings have ``join replace split upper lower startswith endswith strip``; dicts
have ``keys values get``.

A host program adds its own built-ins, value kinds, attributes and ``+`` through one
:class:`Universe` (the recipe domain's: :data:`rcpc.domain.builtins.UNIVERSE`), as
starlark-go's host supplies predeclared names next to its ``Universe``.
"""

from __future__ import annotations

from types import MappingProxyType
from collections.abc import Callable, Mapping

from rcpc.core import record
from rcpc.core.diagnostics import did_you_mean, did_you_mean_or_list, error
from rcpc.core.emit.json import JsonError, to_json
from rcpc.core.limits import INT_LIMIT, LIMIT_HINT, MAX_STRING
from rcpc.core.source import Span
from rcpc.core.values import (Bool, Builtin, Dict, Float, Int, List, Null, Str, TypeName, concat, equal,
                              join, text_of, type_name, type_name_of, weight)

# helpers ----------------------------------------------------------------------------------
def _bind(fname: str, span: Span, args: list, kwargs: dict, positional: tuple, required: set,
          optional: set = frozenset(), extra_kwargs: bool = False) -> dict:
    """Match arguments to names. ``E0306`` for too many, unknown, repeated or missing ones."""
    if len(args) > len(positional):
        raise error("E0306", f"{fname}() takes at most {len(positional)} positional argument(s), "
                    f"got {len(args)}", span, hint="name the arguments: NAME = value")
    out = {name: (v, v.span) for name, v in zip(positional, args)}
    known = set(positional) | required | optional
    for name, (v, name_span) in kwargs.items():
        if name in out:
            raise error("E0306", f"{fname}() got argument '{name}' twice", name_span,
                        hint="give each argument once")
        if name not in known and not extra_kwargs:
            raise error("E0306", f"{fname}() has no argument '{name}'", name_span,
                        hint=did_you_mean(name, known) or f"arguments: {', '.join(sorted(known))}")
        out[name] = (v, name_span)
    missing = [n for n in sorted(required) if n not in out]
    if missing:
        raise error("E0306", f"{fname}() is missing argument '{missing[0]}'", span,
                    hint=f"give {missing[0]} = ... in the call")
    return {k: v for k, (v, _) in out.items()}


def _expect(value, types, what: str):
    if type(value) not in types:
        names = " or ".join(sorted({type_name_of(t) for t in types}))
        raise error("E0301", f"{what} must be {article(names)}, got {article(type_name(value))}", value.span,
                    hint=f"give {article(names)} here")
    return value


def bool_text(value: bool, like: str) -> str:
    """Spell a computed bool in the family of ``like`` (``true``/``false`` or ``True``/``False``)."""
    if like.islower():
        return "true" if value else "false"
    return "True" if value else "False"


def _int(value: int, span: Span) -> Int:
    if not -INT_LIMIT <= value < INT_LIMIT:
        raise error("E0806", "integer result is out of the 64-bit range", span,
                    hint="ints are 64-bit signed, as Kubernetes and YAML readers take them")
    return Int(value, str(value), span)


def article(word: str) -> str:
    """``word`` after its indefinite article, chosen by its first letter: ``an int``, ``a
    str``, ``an int or float`` (the type names and descriptions diagnostics write)."""
    return ("an " if word[:1] in "aeiou" else "a ") + word


# provenance through string operations -------------------------------------------------------
# A string's pieces (Str.pieces: a host's provenance, e.g. MaxText flag tokens) follow its
# text through f-strings, +, join, str(), and the operations below that keep each piece whole
# (replace, split, strip, indexing); an operation that would cut or rewrite a piece is E0707,
# never a string that silently lost its provenance.
def cut_error(origin, op: str, span: Span):
    """``E0707``: ``op`` would cut or rewrite the piece ``origin`` (its ``describe()`` and
    ``hint()`` say what it is and what to do instead)."""
    what = origin.describe() if hasattr(origin, "describe") else "a piece of tracked text"
    return error("E0707", f"{op} would cut or rewrite {what}", span,
                 hint=origin.hint() if hasattr(origin, "hint") else None)


def substring(s: Str, a: int, b: int, span: Span, op: str) -> Str:
    """``s.value[a:b]`` with the pieces wholly inside it (shifted); ``E0707`` when a piece is
    partly inside."""
    pieces = []
    for p0, p1, origin in s.pieces:
        if p1 <= a or p0 >= b:
            continue
        if p0 < a or p1 > b:
            raise cut_error(origin, op, span)
        pieces.append((p0 - a, p1 - a, origin))
    return Str(s.value[a:b], span, tuple(pieces))


def no_pieces(value, op: str, span: Span) -> None:
    """``E0707`` when a string in ``value`` (walked through lists and dicts) holds a piece:
    ``op`` makes text of it that cannot keep one."""
    todo = [value]
    while todo:
        v = todo.pop()
        t = type(v)
        if t is Str and v.pieces:
            raise cut_error(v.pieces[0][2], op, span)
        if t is List:
            todo.extend(v.items)
        elif t is Dict:
            todo.extend(v.items.values())


# functions --------------------------------------------------------------------------------
def _range(ctx, fn, span, args, kwargs):
    _bind("range", span, [], kwargs, (), set())
    if not 1 <= len(args) <= 3:
        raise error("E0306", "range() takes 1 to 3 ints", span, hint="range(n), range(a, b) or range(a, b, step)")
    nums = [_expect(x, (Int,), "range() argument").value for x in args]
    r = range(*nums) if nums[-1] != 0 or len(nums) < 3 else None
    if r is None:
        raise error("E0303", "range() step must not be zero", args[2].span,
                    hint="count up with a positive step, down with a negative one")
    if len(r) > MAX_STRING:
        raise error("E0802", f"range of {len(r)} items is over the limit of {MAX_STRING}", span, hint=LIMIT_HINT)
    return List(tuple(_int(i, span) for i in r), span)


def _dict(ctx, fn, span, args, kwargs):
    if args:
        raise error("E0306", "dict() takes keyword arguments only", args[0].span,
                    hint='write dict(key = value, ...), or a dict literal {"key": value}')
    return Dict({k: v for k, (v, _) in kwargs.items()}, {k: s for k, (_, s) in kwargs.items()}, span,
                ctx.called())


def _len(ctx, fn, span, args, kwargs):
    a = _bind("len", span, args, kwargs, ("x",), {"x"})
    x = a["x"]
    if type(x) in (List, Dict):
        return _int(len(x.items), span)
    if type(x) is Str:
        return _int(len(x.value), span)
    raise error("E0301", f"len() of a {type_name(x)}", x.span, hint="len() counts a list's or dict's items or a "
                "string's characters")


def _str(ctx, fn, span, args, kwargs):
    a = _bind("str", span, args, kwargs, ("x",), {"x"})
    text = text_of(a["x"])
    if text is None:
        raise error("E0301", f"str() of a {type_name(a['x'])}", a["x"].span, hint="use json(...)")
    return Str(text, span, a["x"].pieces if type(a["x"]) is Str else ())


def _json(ctx, fn, span, args, kwargs):
    a = _bind("json", span, args, kwargs, ("x",), {"x"})
    no_pieces(a["x"], "json()", span)
    if weight(a["x"]) * 16 * 6 > MAX_STRING * 16:  # a character can take 6 in JSON (\uXXXX)
        raise error("E0802", "json() of a value this large would exceed the string limit", span, hint=LIMIT_HINT)
    try:
        text = to_json(a["x"])
        if len(text) > MAX_STRING:
            raise error("E0802", f"json() would make a string of {len(text)} characters, over the limit "
                        f"of {MAX_STRING}", span, hint=LIMIT_HINT)
        return Str(text, span)
    except JsonError as exc:
        raise error("E0301", str(exc), exc.value.span, hint="json() writes strings, numbers, bools, None, lists and "
                    "dicts") from None


def _require(ctx, fn, span, args, kwargs):
    a = _bind("require", span, args, kwargs, ("condition", "message"), {"condition", "message"})
    cond = _expect(a["condition"], (Bool,), "require() condition")
    message = _expect(a["message"], (Str,), "require() message")
    if not cond.value:
        raise error("E0790", f"requirement failed: {message.value}", span,
                    hint="the recipe's author asks for this; change the values the condition reads")
    return Null("None", span)


@record.frozen
class Function:
    """A built-in function, declared once: ``call(ctx, builtin, span, args, kwargs)`` computes
    it; ``signature`` and ``doc`` (one sentence) are what an editor shows (hover, completion);
    ``keywords`` its keyword arguments (completion); ``makes`` ``"value"``, or
    ``"render"``/``"variant"`` for a call whose value a recipe declares as a statement (lint
    leaves an unused one to ``W0707``); ``reference`` (Markdown) what docs/language.md's
    built-in table says after ``doc``. The lint tables, the language server's, both
    highlighting grammars and that table are derived from these declarations
    (:mod:`rcpc.grammars`)."""

    call: Callable
    signature: str
    doc: str
    keywords: tuple = ()
    makes: str = "value"
    reference: str = ""


@record.frozen
class TypeDoc:
    """A built-in type name (``bool``, ``int``, ``float``, ``str``), declared with its ``doc``."""

    doc: str


FUNCTIONS = {
    "dict": Function(_dict, "dict(key = value, ...)",
                     'A dict of the keyword arguments, in order: `dict(steps = 30)` is `{"steps": 30}`.',
                     reference="Starlark's `dict`: `maxtext_flags(dict(steps = 30, run_name = \"x\"))` is "
                               "`maxtext_flags({\"steps\": 30, \"run_name\": \"x\"})`; keys are names, so a key "
                               "such as `a.b` needs the literal; keyword arguments only, each once (E0306)."),
    "range": Function(_range, "range(stop) / range(start, stop[, step])", "A list of ints.",
                      reference="As in Python."),
    "len": Function(_len, "len(x)", "The length of a string, list or dict."),
    "str": Function(_str, "str(x)", "`x` as a string; as a param type, a string param.",
                    reference="A number keeps its spelling."),
    "json": Function(_json, "json(x)", "`x` as compact JSON text.",
                     reference="Keys in the order written, numbers as spelled."),
    "require": Function(_require, "require(condition, message)",
                        "Fails the build (E0790) with `message` when `condition` is false.",
                        reference="May stand alone as a statement."),
}
TYPES = {"bool": TypeDoc("The param type of `True`/`False` (also spelled `true`/`false`)."),
         "int": TypeDoc("The param type of whole numbers."),
         "float": TypeDoc("The param type of decimal numbers."),
         "str": TypeDoc("The param type of strings.")}
# `str` is both a type (for param) and a function; as a value it is the function, and
# param() accepts the function `str` as the type.

_EMPTY = MappingProxyType({})


@record.frozen
class Declaration:
    """A built-in that declares the name it is assigned to (``NAME = param(...)``):
    ``declare(evaluator, stmt, call, result)`` evaluates the call and returns the name's
    value; ``usage`` is shown when it is called anywhere else (``E0501``); ``signature``,
    ``doc``, ``keywords`` and ``reference`` as for :class:`Function`."""

    declare: Callable
    usage: str
    signature: str = ""
    doc: str = ""
    keywords: tuple = ()
    reference: str = ""


@record.frozen
class Universe:
    """The predeclared environment: the core's built-ins plus what a host program plugs in.

    * ``functions``: name → :class:`Function`;
    * ``declarations``: name → :class:`Declaration`;
    * ``attributes``: value type → ``fn(value, span)`` giving {attribute name: thunk};
    * ``plus``: value type → ``fn(ctx, left, right, span)``, ``+`` of two values of that type;
    * ``statement``: ``fn(evaluator, stmt, value, result)`` for the value of a top-level
      expression statement (None: any value there is ``E0705``, unused);
    * ``finish``: ``fn(evaluator, module, result)`` after a module evaluated without error;
    * ``result``: the class of a module's result (a subclass of
      :class:`~rcpc.core.evaluate.ModuleResult` with the host's fields).

    A host's names must not shadow the core's (``ValueError``)."""

    functions: Mapping = _EMPTY
    declarations: Mapping = _EMPTY
    attributes: Mapping = _EMPTY
    plus: Mapping = _EMPTY
    statement: Callable | None = None
    finish: Callable | None = None
    result: type | None = None
    names: frozenset = record.field(init=False)

    def __attrs_post_init__(self):
        clash = (set(self.functions) | set(self.declarations)) & (set(FUNCTIONS) | set(TYPES))
        if clash or set(self.functions) & set(self.declarations):
            raise ValueError(f"built-in names defined twice: {sorted(clash)}")
        if not all(type(f) is Function for f in self.functions.values()):
            raise ValueError("a host's functions are declared as Function(call, signature, doc)")
        object.__setattr__(self, "names", frozenset(FUNCTIONS) | frozenset(TYPES)
                           | frozenset(self.functions) | frozenset(self.declarations))

    def lookup(self, name: str, span: Span):
        """The value of built-in ``name`` (the resolver has already rejected unknown names)."""
        if name in ("bool", "int", "float"):
            return TypeName(name, span)
        f = FUNCTIONS.get(name) or self.functions.get(name)  # None: a declaration (E0501 if called here)
        return Builtin(name, f.call if f is not None else None, span)

    def declared(self, name: str):
        """The :class:`Function`, :class:`Declaration` or :class:`TypeDoc` of built-in
        ``name`` (a function before a type: ``str`` is both), or None."""
        return FUNCTIONS.get(name) or self.functions.get(name) or self.declarations.get(name) or TYPES.get(name)


CORE = Universe()  # the language with no host: universal built-ins only
NAMES = CORE.names


# operators --------------------------------------------------------------------------------
def binop(op: str, left, right, span: Span):
    """``+ - * // %``. ``+`` joins strings/lists and merges dicts (right wins);
    the rest are int arithmetic. ``E0301`` for other operands, ``E0303`` for division by zero."""
    tl, tr = type(left), type(right)
    if tl is Int and tr is Int:
        a, b = left.value, right.value
        if op in ("//", "%") and b == 0:
            raise error("E0303", "division by zero", right.span, hint="divide by a value that is not 0")
        value = {"+": a + b, "-": a - b, "*": a * b, "//": a // b if b else 0, "%": a % b if b else 0}[op]
        return _int(value, span)
    if op == "+" and tl is tr:
        if tl is Str:
            if len(left.value) + len(right.value) > MAX_STRING:
                raise error("E0802", f"string of {len(left.value) + len(right.value)} characters is over "
                            "the limit", span, hint=LIMIT_HINT)
            if left.pieces or right.pieces:  # flag tokens keep their provenance
                return concat([left, right], span)
            return Str(left.value + right.value, span)
        if tl is List:
            if len(left.items) + len(right.items) > MAX_STRING:
                raise error("E0802", "list over the size limit", span, hint=LIMIT_HINT)
            return List(left.items + right.items, span)
        if tl is Dict:
            return Dict({**left.items, **right.items}, {**left.key_spans, **right.key_spans}, span,
                        left.why + right.why)
    if tl is Float or tr is Float:
        raise error("E0301", f"no float arithmetic ('{op}'): write the value you mean", span,
                    hint="float values keep their source spelling; computing them would not")
    raise error("E0301", f"unsupported operand types for {op}: {type_name(left)} and {type_name(right)}",
                span, hint=_operands_hint(op, tl, tr))


def _operands_hint(op: str, tl, tr) -> str:
    if op == "+" and Str in (tl, tr):
        return 'to put a value into a string, write an f-string (f"{X}-suffix") or str(X) + "-suffix"'
    if op == "+":
        return "'+' joins two strings, two lists or two dicts, or adds two ints"
    return f"'{op}' computes on two ints"


def compare(op: str, left, right, span: Span) -> Bool:
    """``== != < > <= >= in not in``; ordering on numbers or on strings."""
    if op in ("==", "!="):
        result = equal(left, right) == (op == "==")
    elif op in ("in", "not in"):
        tr = type(right)
        if tr is List:
            found = any(equal(left, x) for x in right.items)
        elif tr is Dict:
            found = type(left) is Str and left.value in right.items
        elif tr is Str and type(left) is Str:
            found = left.value in right.value
        else:
            raise error("E0301", f"'{op}' needs a list, dict or string on the right, got {type_name(right)}",
                        right.span, hint=f"test membership in a list, a dict's keys or a string: X {op} [...]")
        result = found == (op == "in")
    else:
        numeric = (Int, Float)
        if not (type(left) in numeric and type(right) in numeric or type(left) is type(right) is Str):
            raise error("E0301", f"cannot order {type_name(left)} and {type_name(right)}", span,
                        hint="order two numbers or two strings")
        a, b = left.value, right.value
        result = {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]
    return Bool(result, "True" if result else "False", span)


def index(obj, idx, span: Span):
    """``obj[idx]`` on lists and strings (int, negative from the end) and dicts (string key).
    ``E0305`` when out of range or missing."""
    t = type(obj)
    if t in (List, Str):
        _expect(idx, (Int,), "index")
        seq = obj.items if t is List else obj.value
        i = idx.value
        if not -len(seq) <= i < len(seq):
            raise error("E0305", f"index {i} out of range for {type_name(obj)} of length {len(seq)}", idx.span,
                        hint=f"indexes run from 0 to {len(seq) - 1}, or from -{len(seq)} counting from the end"
                        if seq else f"the {type_name(obj)} is empty")
        if t is List:
            return seq[i]
        i %= len(seq)
        return substring(obj, i, i + 1, span, "indexing") if obj.pieces else Str(seq[i], span)
    if t is Dict:
        _expect(idx, (Str,), "dict key")
        if idx.value not in obj.items:
            raise error("E0305", f"key '{idx.value}' not in dict", idx.span,
                        hint=did_you_mean_or_list(idx.value, obj.items, "keys"))
        return obj.items[idx.value]
    raise error("E0301", f"a {type_name(obj)} cannot be indexed", span,
                hint="index a list or string with an int, a dict with a string key")


# attributes -------------------------------------------------------------------------------
def _method(name, fn, receiver, span):
    return lambda: Builtin(name, fn, span, receiver)


def _str_join(ctx, fn, span, args, kwargs):
    a = _bind("join", span, args, kwargs, ("items",), {"items"})
    items = _expect(a["items"], (List,), "join() argument")
    for x in items.items:
        _expect(x, (Str,), "each item joined")
    if sum(len(x.value) for x in items.items) + len(fn.receiver.value) * len(items.items) > MAX_STRING:
        raise error("E0802", f"join() would make a string over the limit of {MAX_STRING} characters", span,
                    hint=LIMIT_HINT)
    no_pieces(fn.receiver, "join() on this separator", span)
    return join(fn.receiver.value, items.items, span)


def _str_replace(ctx, fn, span, args, kwargs):
    a = _bind("replace", span, args, kwargs, ("old", "new"), {"old", "new"})
    old, new = (_expect(a[k], (Str,), f"replace() {k}").value for k in ("old", "new"))
    receiver = fn.receiver
    s = receiver.value
    grows = len(new) - len(old)
    if grows > 0 and len(s) + (s.count(old) if old else len(s) + 1) * grows > MAX_STRING:
        raise error("E0802", f"replace() would make a string over the limit of {MAX_STRING} characters", span,
                    hint=LIMIT_HINT)
    if not receiver.pieces:
        return Str(s.replace(old, new), span)
    parts: list = []
    at = 0
    for i in _occurrences(s, old):
        parts.append(substring(receiver, at, i, span, "replace()"))
        parts.append(new)
        at = i + len(old)
    parts.append(substring(receiver, at, len(s), span, "replace()"))
    return concat(parts, span)


def _occurrences(s: str, old: str):
    """Where ``str.replace`` replaces ``old`` in ``s``: non-overlapping, left to right; an empty
    ``old`` at every position."""
    if not old:
        yield from range(len(s) + 1)
        return
    i = s.find(old)
    while i >= 0:
        yield i
        i = s.find(old, i + len(old))


def _str_split(ctx, fn, span, args, kwargs):
    a = _bind("split", span, args, kwargs, ("sep",), set())
    sep = a.get("sep")
    sep = _expect(sep, (Str,), "split() separator").value if sep else None
    if sep == "":
        raise error("E0303", "split() separator must not be empty", a["sep"].span,
                    hint="split on a character or text, or give no separator to split on whitespace")
    receiver = fn.receiver
    if not receiver.pieces:
        return List(tuple(Str(p, span) for p in receiver.value.split(sep)), span)
    return List(tuple(substring(receiver, x, y, span, "split()") for x, y in _split_ranges(receiver.value, sep)),
                span)


def _split_ranges(s: str, sep: str | None):
    """The (start, end) of each part ``s.split(sep)`` makes (``sep`` None: runs of whitespace)."""
    if sep is None:
        i, n = 0, len(s)
        while i < n:
            while i < n and s[i].isspace():
                i += 1
            j = i
            while j < n and not s[j].isspace():
                j += 1
            if j > i:
                yield i, j
            i = j
        return
    at = 0
    for i in _occurrences(s, sep):
        yield at, i
        at = i + len(sep)
    yield at, len(s)


def _str_strip(ctx, fn, span, args, kwargs):
    _bind("strip", span, args, kwargs, (), set())
    s = fn.receiver.value
    a = len(s) - len(s.lstrip())
    b = len(s.rstrip())
    return substring(fn.receiver, a, max(a, b), span, "strip()")


def _str_case(op):
    def call(ctx, fn, span, args, kwargs):
        _bind(op, span, args, kwargs, (), set())
        text = getattr(fn.receiver.value, op)()
        if text != fn.receiver.value:
            no_pieces(fn.receiver, f"{op}()", span)
        return Str(text, span, fn.receiver.pieces)
    return call


def _str_test(op):
    def call(ctx, fn, span, args, kwargs):
        a = _bind(op, span, args, kwargs, ("prefix",), {"prefix"})
        r = getattr(fn.receiver.value, op)(_expect(a["prefix"], (Str,), f"{op}() argument").value)
        return Bool(r, "True" if r else "False", span)
    return call


_STR_METHODS = {"join": _str_join, "replace": _str_replace, "split": _str_split,
                "upper": _str_case("upper"), "lower": _str_case("lower"),
                "strip": _str_strip, "startswith": _str_test("startswith"),
                "endswith": _str_test("endswith")}


def _dict_keys(ctx, fn, span, args, kwargs):
    _bind("keys", span, args, kwargs, (), set())
    d = fn.receiver
    return List(tuple(Str(k, d.key_spans.get(k, span)) for k in d.items), span)


def _dict_values(ctx, fn, span, args, kwargs):
    _bind("values", span, args, kwargs, (), set())
    return List(tuple(fn.receiver.items.values()), span)


def _dict_get(ctx, fn, span, args, kwargs):
    a = _bind("get", span, args, kwargs, ("key", "default"), {"key"})
    key = _expect(a["key"], (Str,), "get() key").value
    return fn.receiver.items.get(key, a.get("default", Null("None", span)))


_DICT_METHODS = {"keys": _dict_keys, "values": _dict_values, "get": _dict_get}


def attribute(obj, name: str, name_span: Span, span: Span, host: Callable | None = None):
    """``obj.name`` for built-in values; ``host(obj, span)`` gives the table of a host's
    kind (:attr:`Universe.attributes`). ``E0307`` for an unknown attribute, with a hint."""
    t = type(obj)
    if host is not None:
        table = host(obj, span)
    elif t is Str:
        table = {k: _method(k, f, obj, span) for k, f in _STR_METHODS.items()}
    elif t is Dict:
        table = {k: _method(k, f, obj, span) for k, f in _DICT_METHODS.items()}
    else:
        table = {}
    if name not in table:
        hint = did_you_mean(name, table) or (f"a {type_name(obj)} has: {', '.join(sorted(table))}"
                                             if table else None)
        if t is Dict and name in obj.items:
            hint = f"use [\"{name}\"] to read a dict entry"
        raise error("E0307", f"a {type_name(obj)} has no attribute '{name}'", name_span, hint=hint)
    return table[name]()
