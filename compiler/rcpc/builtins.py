"""Built-in functions, operators, indexing and attributes of the recipe language.

Built-in functions (all hermetic: no environment, clock, network or file access):

* ``param(type, default = ..., doc = "", choices = [...])`` — a typed recipe parameter;
* ``maxtext_flags(layer, ..., schema = "//path", unknown_keys = [...], tpu_slice = S,
  num_slices = 1)`` — a MaxText flag set (:mod:`rcpc.maxtext`), checked against the MaxText
  schema (``maxtext_schema`` in rcp.toml, or ``schema``: ``builtin:maxtext``, a ``.json`` or a
  base.yml) and, with ``tpu_slice``, against the slice's devices (mesh parallelism);
* ``jobset(name = ..., metadata = {...}, spec = {...})`` and
  ``manifest(name = ..., apiVersion = ..., kind = ..., metadata = {...}, <field> = ...)`` —
  Kubernetes objects, rendered as ``<name>.yaml``;
* ``flag_file(name = ..., flags = FLAGS)`` — a flag set rendered as ``<name>.flags``;
* ``tpu_slice("tpu7x:4x4x8")`` (:mod:`rcpc.tpu`);
* ``variant("name", set = {...}, against = "...", changes = {...})``;
* ``require(condition, "message")`` — fails the build (``E0790``) with the message when the
  condition is false; a top-level ``require(...)`` statement is allowed;
* ``merge(base, patch, ...)`` — a deep merge of dicts with Kubernetes' strategic-merge rules,
  and ``replace(value)`` to replace instead of merge (:mod:`rcpc.merge`);
* ``range``, ``len``, ``str``, ``json``.

Attributes: flag sets have ``argv``, ``shell``, ``resolved``; TPU slices have
``generation accelerator topology dims chips hosts devices chips_per_host devices_per_chip
machine_type node_selector name``; strings have ``join replace split upper lower startswith
endswith strip``; dicts have ``keys values get``.
"""

from __future__ import annotations

import re

from rcpc import maxtext, names, provenance
from rcpc.diagnostics import CompileError, did_you_mean, error
from rcpc.limits import INT_LIMIT, MAX_NAME, MAX_STRING
from rcpc.emit.json import JsonError, to_json
from rcpc.source import COMMAND_LINE_SPAN, Span
from rcpc.tpu import ACCELERATOR_LABEL, TOPOLOGY_LABEL, tpu_slice
from rcpc.values import (Bool, Builtin, Dict, FlagFile, FlagSet, Float, Int, List, Manifest, Null,
                         Param, Str, TpuSlice, TypeName, Variant, equal, text_of, type_name, weight)

JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"
RENDER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


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
            raise error("E0306", f"{fname}() got argument '{name}' twice", name_span)
        if name not in known and not extra_kwargs:
            raise error("E0306", f"{fname}() has no argument '{name}'", name_span,
                        hint=did_you_mean(name, known) or f"arguments: {', '.join(sorted(known))}")
        out[name] = (v, name_span)
    missing = [n for n in sorted(required) if n not in out]
    if missing:
        raise error("E0306", f"{fname}() is missing argument '{missing[0]}'", span)
    return {k: v for k, (v, _) in out.items()}


def _expect(value, types, what: str):
    if type(value) not in types:
        names = " or ".join(sorted({type_name_of(t) for t in types}))
        raise error("E0301", f"{what} must be {_article(names)}, got {_article(type_name(value))}", value.span)
    return value


def type_name_of(t) -> str:
    from rcpc.values import TYPE_NAMES
    return TYPE_NAMES[t]


def bool_text(value: bool, like: str) -> str:
    """Spell a computed bool in the family of ``like`` (``true``/``false`` or ``True``/``False``)."""
    if like.islower():
        return "true" if value else "false"
    return "True" if value else "False"


def _int(value: int, span: Span) -> Int:
    if not -INT_LIMIT <= value < INT_LIMIT:
        raise error("E0806", "integer result is out of the 64-bit range", span)
    return Int(value, str(value), span)


# parameters -------------------------------------------------------------------------------
PARAM_TYPES = {"bool": (Bool,), "int": (Int,), "float": (Float, Int), "str": (Str,)}


def make_param(name: str, span: Span, args: list, kwargs: dict) -> Param:
    """Build the :class:`Param` of ``NAME = param(type, default, doc, choices)``."""
    a = _bind("param", span, args, kwargs, ("type", "default"), {"type"}, {"doc", "choices"})
    ptype = a["type"]
    if type(ptype) is Builtin and ptype.name == "str":
        ptype = TypeName("str", ptype.span)
    if type(ptype) is not TypeName:
        raise error("E0502", "param() needs a type: bool, int, float or str", ptype.span)
    default = a.get("default")
    if type(default) is Null:
        default = None
    doc = _expect(a.get("doc", Str("", span)), (Str,), "doc").value
    choices = a.get("choices")
    if choices is not None:
        _expect(choices, (List,), "choices")
        for c in choices.items:
            check_param_value(ptype.name, c, name, None)
        choices = choices.items
    if default is not None:
        check_param_value(ptype.name, default, name, choices)
    return Param(name, ptype.name, default, choices, doc, span)


def check_param_value(ptype: str, value, name: str, choices) -> None:
    """``E0602`` when ``value`` is not of the param's type or not one of its choices."""
    if type(value) not in PARAM_TYPES[ptype]:
        raise error("E0602", f"param '{name}' is {_article(ptype)}, got {_article(type_name(value))}", value.span)
    if choices is not None and not any(equal(value, c) for c in choices):
        allowed = ", ".join(text_of(c) or "?" for c in choices)
        raise error("E0602", f"param '{name}' must be one of: {allowed}", value.span)


_BOOL_TEXT = ("true", "True", "false", "False")
_INT_TEXT = re.compile(r"^[-+]?[0-9]+$")
_FLOAT_TEXT = re.compile(r"^[-+]?(?:[0-9](?:_?[0-9])*(?:\.(?:[0-9](?:_?[0-9])*)?)?|\.[0-9](?:_?[0-9])*)(?:[eE][-+]?[0-9]+)?$")


def param_value_from_text(param: Param, text: str):
    """The value of ``--set NAME=TEXT`` for ``param``: bool accepts true/True/false/False,
    int decimal digits, float a decimal or exponent spelling (kept as written), str anything.
    ``E0602`` for text that is not of the param's type or not one of its choices."""
    span = COMMAND_LINE_SPAN
    value = None
    if param.type == "bool" and text in _BOOL_TEXT:
        value = Bool(text.lower() == "true", text, span)
    elif param.type == "int" and _INT_TEXT.match(text) and len(text) <= 20 and -INT_LIMIT <= int(text) < INT_LIMIT:
        value = Int(int(text), text, span)
    elif param.type == "float" and _FLOAT_TEXT.match(text) and abs(float(text.replace("_", ""))) != float("inf"):
        value = Float(float(text.replace("_", "")), text, span)
    elif param.type == "str":
        value = Str(text, span)
    if value is None:
        hint = {"bool": "write true, false, True or False", "int": "write decimal digits",
                "float": "write a number such as 0.5 or 1e-6"}.get(param.type)
        raise error("E0602", f"--set {param.name}={text}: not {_article(param.type)}", param.span, hint=hint)
    if param.choices is not None and not any(equal(value, c) for c in param.choices):
        allowed = ", ".join(text_of(c) or "?" for c in param.choices)
        raise error("E0602", f"--set {param.name}={text}: not one of the choices ({allowed})", param.span)
    return value


def _article(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


# functions --------------------------------------------------------------------------------
def _maxtext_flags(ctx, fn, span, args, kwargs):
    a = _bind("maxtext_flags", span, [], kwargs, (), set(),
              {"schema", "unknown_keys", "tpu_slice", "num_slices"})
    path = a.get("schema")
    if path is not None:
        _expect(path, (Str,), "schema")
    schema = ctx.schema(path.value if path is not None else None, path.span if path is not None else span)
    unknown = a.get("unknown_keys")
    if unknown is not None:
        _expect(unknown, (List,), "unknown_keys")
    if "num_slices" in a and "tpu_slice" not in a:
        raise error("E0306", "num_slices needs tpu_slice", a["num_slices"].span)
    fs = maxtext.make_flagset(args, span, schema, unknown, ctx.warn, ctx.report)
    if "tpu_slice" in a:
        slice_ = _expect(a["tpu_slice"], (TpuSlice,), "tpu_slice")
        num = _expect(a.get("num_slices", Int(1, "1", span)), (Int,), "num_slices")
        for d in maxtext.check_mesh(fs, slice_, num.value, span):
            ctx.report(d)
    ctx.flag_sets.append(fs)
    return fs


def _metadata(a: dict, name: Str, span: Span) -> Dict:
    md = a.get("metadata")
    if md is None:
        return Dict({"name": name}, {"name": name.span}, span)
    return _expect(md, (Dict,), "metadata")


def _render_name(v) -> str:
    _expect(v, (Str,), "name")
    if not RENDER_NAME.fullmatch(v.value) or ".." in v.value or len(v.value) > MAX_NAME:
        raise error("E0701", f"render name {v.value[:40]!r} is not a plain file name", v.span,
                    hint=f"use at most {MAX_NAME} letters, digits, '.', '-' and '_' (no '/', no '..')")
    why = names.problem(v.value)
    if why is not None:
        raise error("E0701", f"render name {v.value!r} is not a portable file name: it {why}", v.span)
    return v.value


def _jobset(ctx, fn, span, args, kwargs):
    a = _bind("jobset", span, args, kwargs, (), {"name", "spec"}, {"metadata", "apiVersion"})
    name = _render_name(a["name"])
    api = a.get("apiVersion", Str(JOBSET_API_VERSION, span))
    _expect(api, (Str,), "apiVersion")
    data = {"apiVersion": api, "kind": Str("JobSet", span), "metadata": _metadata(a, a["name"], span),
            "spec": _expect(a["spec"], (Dict,), "spec")}
    return Manifest(name, Dict(data, {k: span for k in data}, span), span)


def _manifest(ctx, fn, span, args, kwargs):
    a = _bind("manifest", span, args, kwargs, (), {"name", "apiVersion", "kind"}, {"metadata"},
              extra_kwargs=True)
    name = _render_name(a["name"])
    data = {"apiVersion": _expect(a["apiVersion"], (Str,), "apiVersion"),
            "kind": _expect(a["kind"], (Str,), "kind"),
            "metadata": _metadata(a, a["name"], span)}
    spans = {k: kwargs[k][1] if k in kwargs else span for k in data}
    for k, v in a.items():
        if k not in data and k != "name":
            data[k] = v
            spans[k] = kwargs[k][1]
    return Manifest(name, Dict(data, spans, span), span)


def _flag_file(ctx, fn, span, args, kwargs):
    a = _bind("flag_file", span, args, kwargs, (), {"name", "flags"})
    return FlagFile(_render_name(a["name"]), _expect(a["flags"], (FlagSet,), "flags"), span)


def _tpu_slice(ctx, fn, span, args, kwargs):
    a = _bind("tpu_slice", span, args, kwargs, ("spec",), {"spec"})
    spec = _expect(a["spec"], (Str,), "tpu_slice spec")
    return tpu_slice(spec.value, spec.span)


def _variant(ctx, fn, span, args, kwargs):
    a = _bind("variant", span, args, kwargs, ("name",), {"name"}, {"set", "against", "changes"})
    name = _expect(a["name"], (Str,), "variant name")
    if names.fold(name.value) == "custom":
        raise error("E0604", f"variant name {name.value!r} is reserved for --set builds ('custom')", name.span)
    if not RENDER_NAME.fullmatch(name.value) or ".." in name.value or len(name.value) > MAX_NAME:
        raise error("E0604", f"variant name {name.value[:40]!r} is not a plain directory name", name.span,
                    hint="use letters, digits, '.', '-' and '_'")
    why = names.problem(name.value)
    if why is not None:
        raise error("E0604", f"variant name {name.value!r} is not a portable directory name: it {why}", name.span)
    sets = _expect(a.get("set", Dict({}, {}, span)), (Dict,), "set")
    against = a.get("against")
    if against is not None:
        against = _expect(against, (Str,), "against").value
    changes = a.get("changes")
    if changes is not None:
        _expect(changes, (Dict,), "changes")
        if against is None:
            raise error("E0609", "changes = {...} needs against = \"VARIANT\": the variant it is compared with",
                        changes.span, hint='add against = "default"')
    return Variant(name.value, sets, against, changes, span)


def _range(ctx, fn, span, args, kwargs):
    _bind("range", span, [], kwargs, (), set())
    if not 1 <= len(args) <= 3:
        raise error("E0306", "range() takes 1 to 3 ints", span)
    nums = [_expect(x, (Int,), "range() argument").value for x in args]
    r = range(*nums) if nums[-1] != 0 or len(nums) < 3 else None
    if r is None:
        raise error("E0303", "range() step must not be zero", args[2].span)
    if len(r) > MAX_STRING:
        raise error("E0802", f"range of {len(r)} items is over the limit of {MAX_STRING}", span)
    return List(tuple(_int(i, span) for i in r), span)


def _len(ctx, fn, span, args, kwargs):
    a = _bind("len", span, args, kwargs, ("x",), {"x"})
    x = a["x"]
    if type(x) in (List, Dict):
        return _int(len(x.items), span)
    if type(x) is Str:
        return _int(len(x.value), span)
    raise error("E0301", f"len() of a {type_name(x)}", x.span)


def _str(ctx, fn, span, args, kwargs):
    a = _bind("str", span, args, kwargs, ("x",), {"x"})
    text = text_of(a["x"])
    if text is None:
        raise error("E0301", f"str() of a {type_name(a['x'])}", a["x"].span, hint="use json(...)")
    return Str(text, span, a["x"].pieces if type(a["x"]) is Str else ())


def _json(ctx, fn, span, args, kwargs):
    a = _bind("json", span, args, kwargs, ("x",), {"x"})
    if weight(a["x"]) * 16 * 6 > MAX_STRING * 16:  # a character can take 6 in JSON (\uXXXX)
        raise error("E0802", "json() of a value this large would exceed the string limit", span)
    try:
        text = to_json(a["x"])
        if len(text) > MAX_STRING:
            raise error("E0802", f"json() would make a string of {len(text)} characters, over the limit "
                        f"of {MAX_STRING}", span)
        return Str(text, span)
    except JsonError as exc:
        raise error("E0301", str(exc), exc.value.span) from None


def _require(ctx, fn, span, args, kwargs):
    a = _bind("require", span, args, kwargs, ("condition", "message"), {"condition", "message"})
    cond = _expect(a["condition"], (Bool,), "require() condition")
    message = _expect(a["message"], (Str,), "require() message")
    if not cond.value:
        raise error("E0790", f"requirement failed: {message.value}", span)
    return Null("None", span)


def _merge(ctx, fn, span, args, kwargs):
    from rcpc.merge import merge

    _bind("merge", span, [], kwargs, (), set())
    return merge(args, span)


def _replace(ctx, fn, span, args, kwargs):
    from rcpc.merge import Replace

    a = _bind("replace", span, args, kwargs, ("value",), {"value"})
    return Replace(a["value"], span)


FUNCTIONS = {
    "maxtext_flags": _maxtext_flags, "jobset": _jobset, "manifest": _manifest,
    "flag_file": _flag_file, "tpu_slice": _tpu_slice, "variant": _variant, "range": _range,
    "len": _len, "str": _str, "json": _json, "require": _require,
    "merge": _merge, "replace": _replace,
    "param": None,  # handled by the evaluator: it binds the name being assigned
}
TYPES = ("bool", "int", "float", "str")
# `str` is both a type (for param) and a function; as a value it is the function, and
# param() accepts the function `str` as the type.
NAMES = frozenset(FUNCTIONS) | frozenset(TYPES)


def lookup(name: str, span: Span):
    """The value of built-in ``name`` (the resolver has already rejected unknown names)."""
    if name in ("bool", "int", "float"):
        return TypeName(name, span)
    return Builtin(name, FUNCTIONS[name], span)


# operators --------------------------------------------------------------------------------
def binop(op: str, left, right, span: Span):
    """``+ - * // %``. ``+`` joins strings/lists/flag sets and merges dicts (right wins);
    the rest are int arithmetic. ``E0301`` for other operands, ``E0303`` for division by zero."""
    tl, tr = type(left), type(right)
    if tl is Int and tr is Int:
        a, b = left.value, right.value
        if op in ("//", "%") and b == 0:
            raise error("E0303", "division by zero", right.span)
        value = {"+": a + b, "-": a - b, "*": a * b, "//": a // b if b else 0, "%": a % b if b else 0}[op]
        return _int(value, span)
    if op == "+" and tl is tr:
        if tl is Str:
            if len(left.value) + len(right.value) > MAX_STRING:
                raise error("E0802", f"string of {len(left.value) + len(right.value)} characters is over "
                            "the limit", span)
            if left.pieces or right.pieces:  # flag tokens keep their provenance
                return provenance.concat([left, right], span)
            return Str(left.value + right.value, span)
        if tl is List:
            if len(left.items) + len(right.items) > MAX_STRING:
                raise error("E0802", "list over the size limit", span)
            return List(left.items + right.items, span)
        if tl is Dict:
            return Dict({**left.items, **right.items}, {**left.key_spans, **right.key_spans}, span,
                        left.why + right.why)
        if tl is FlagSet:
            if len(left.layers) + len(right.layers) > maxtext.MAX_LAYERS:
                raise error("E0802", f"flag set of more than {maxtext.MAX_LAYERS} layers", span)
            joined = FlagSet(left.layers + right.layers, span, left.schema or right.schema)
            maxtext.check_weight(joined)
            problems = maxtext.merge_problems(joined)
            if problems:
                raise CompileError(problems)
            return joined
    if tl is Float or tr is Float:
        raise error("E0301", f"no float arithmetic ('{op}'): write the value you mean", span,
                    hint="float values keep their source spelling; computing them would not")
    raise error("E0301", f"unsupported operand types for {op}: {type_name(left)} and {type_name(right)}",
                span)


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
                        right.span)
        result = found == (op == "in")
    else:
        numeric = (Int, Float)
        if not (type(left) in numeric and type(right) in numeric or type(left) is type(right) is Str):
            raise error("E0301", f"cannot order {type_name(left)} and {type_name(right)}", span)
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
            raise error("E0305", f"index {i} out of range for {type_name(obj)} of length {len(seq)}", idx.span)
        return seq[i] if t is List else Str(seq[i], span)
    if t is Dict:
        _expect(idx, (Str,), "dict key")
        if idx.value not in obj.items:
            raise error("E0305", f"key '{idx.value}' not in dict", idx.span,
                        hint=did_you_mean(idx.value, obj.items))
        return obj.items[idx.value]
    raise error("E0301", f"a {type_name(obj)} cannot be indexed", span)


# attributes -------------------------------------------------------------------------------
def _slice_attrs(s: TpuSlice, span: Span) -> dict:
    return {
        "generation": lambda: Str(s.generation, span),
        "accelerator": lambda: Str(s.accelerator, span),
        "topology": lambda: Str(s.topology, span),
        "name": lambda: Str(f"{s.accelerator}:{s.topology}", span),
        "dims": lambda: List(tuple(_int(d, span) for d in s.dims), span),
        "chips": lambda: _int(s.chips, span),
        "hosts": lambda: _int(s.hosts, span),
        "devices": lambda: _int(s.devices, span),
        "chips_per_host": lambda: _int(s.chips_per_host, span),
        "devices_per_chip": lambda: _int(s.devices_per_chip, span),
        "machine_type": lambda: Str(s.machine_type, span),
        "node_selector": lambda: Dict({ACCELERATOR_LABEL: Str(s.accelerator, span),
                                       TOPOLOGY_LABEL: Str(s.topology, span)},
                                      {ACCELERATOR_LABEL: span, TOPOLOGY_LABEL: span}, span),
    }


def _flagset_attrs(fs: FlagSet, span: Span) -> dict:
    return {
        "argv": lambda: provenance.argv_value(fs, span),
        "shell": lambda: provenance.shell_value(fs, span),
        "resolved": lambda: maxtext.resolved_dict(fs, span),
    }


def _method(name, fn, receiver, span):
    return lambda: Builtin(name, fn, span, receiver)


def _str_join(ctx, fn, span, args, kwargs):
    a = _bind("join", span, args, kwargs, ("items",), {"items"})
    items = _expect(a["items"], (List,), "join() argument")
    for x in items.items:
        _expect(x, (Str,), "each item joined")
    if sum(len(x.value) for x in items.items) + len(fn.receiver.value) * len(items.items) > MAX_STRING:
        raise error("E0802", f"join() would make a string over the limit of {MAX_STRING} characters", span)
    return provenance.join(fn.receiver.value, items.items, span)


def _str_replace(ctx, fn, span, args, kwargs):
    a = _bind("replace", span, args, kwargs, ("old", "new"), {"old", "new"})
    old, new = (_expect(a[k], (Str,), f"replace() {k}").value for k in ("old", "new"))
    s = fn.receiver.value
    grows = len(new) - len(old)
    if grows > 0 and len(s) + (s.count(old) if old else len(s) + 1) * grows > MAX_STRING:
        raise error("E0802", f"replace() would make a string over the limit of {MAX_STRING} characters", span)
    return Str(s.replace(old, new), span)


def _str_split(ctx, fn, span, args, kwargs):
    a = _bind("split", span, args, kwargs, ("sep",), set())
    sep = a.get("sep")
    parts = fn.receiver.value.split(_expect(sep, (Str,), "split() separator").value if sep else None)
    return List(tuple(Str(p, span) for p in parts), span)


def _str_simple(op):
    def call(ctx, fn, span, args, kwargs):
        _bind(op, span, args, kwargs, (), set())
        return Str(getattr(fn.receiver.value, op)(), span)
    return call


def _str_test(op):
    def call(ctx, fn, span, args, kwargs):
        a = _bind(op, span, args, kwargs, ("prefix",), {"prefix"})
        r = getattr(fn.receiver.value, op)(_expect(a["prefix"], (Str,), f"{op}() argument").value)
        return Bool(r, "True" if r else "False", span)
    return call


_STR_METHODS = {"join": _str_join, "replace": _str_replace, "split": _str_split,
                "upper": _str_simple("upper"), "lower": _str_simple("lower"),
                "strip": _str_simple("strip"), "startswith": _str_test("startswith"),
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


def attribute(obj, name: str, name_span: Span, span: Span):
    """``obj.name`` for built-in values. ``E0307`` for an unknown attribute, with a hint."""
    t = type(obj)
    if t is TpuSlice:
        table = _slice_attrs(obj, span)
    elif t is FlagSet:
        table = _flagset_attrs(obj, span)
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
