"""Built-ins of the recipe domain, plugged into the language core through one
:class:`~rcpc.core.builtins.Universe` (:data:`UNIVERSE`):

* ``param(type, default = ..., doc = "", choices = [...])`` — a typed recipe parameter
  (a declaration: ``NAME = param(...)``);
* ``maxtext_flags(layer, ..., schema = "//path", unknown_keys = [...], unknown_values = {...},
  tpu_slice = S, num_slices = 1)`` — a MaxText flag set (:mod:`rcpc.domain.maxtext.flagset`), checked against the MaxText
  schema (``maxtext_schema`` in rcp.toml, or ``schema``: ``builtin:maxtext``, a ``.json`` or a
  base.yml; ``None`` for the flags of a trainer MaxText's schema does not describe, such as
  MaxDiffusion, which reads its command line the same way) and, with ``tpu_slice``, against
  the slice's devices (mesh parallelism);
* ``jobset(name = ..., metadata = {...}, spec = {...})`` and
  ``manifest(name = ..., apiVersion = ..., kind = ..., metadata = {...}, <field> = ...)`` —
  Kubernetes objects, rendered as ``<name>.yaml``;
* ``flag_file(name = ..., flags = FLAGS)`` — a flag set rendered as ``<name>.flags``;
* ``tpu_slice("tpu7x:4x4x8")`` (:mod:`rcpc.domain.tpu`);
* ``variant("name", set = {...}, against = "...", changes = {...})``;
* ``merge(base, patch, ...)`` — a deep merge of dicts with Kubernetes' strategic-merge rules,
  and ``replace(value)`` to replace instead of merge (:mod:`rcpc.domain.kube.merge`).

Attributes: flag sets have ``argv``, ``shell``, ``resolved`` and the method
``shell_quoted(keys, raw = [])`` (the shell form with those flags' value parts quoted, and
those of ``raw`` as written) and ``shell_raw(keys)``; TPU slices have ``generation accelerator
topology dims chips hosts devices chips_per_host devices_per_chip machine_type node_selector
name accelerator_type device_type`` (:func:`rcpc.domain.tpu.accelerator_type`). ``+`` joins
flag sets (later layers win).

A recipe's top-level expression statement declares renders (a render value, or a list of
them) or a variant; :class:`RecipeResult` holds what a recipe declared.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from rcpc.core import names
from rcpc.core import record
from rcpc.core.builtins import Declaration, Function, Universe, _bind, _expect, _int, article
from rcpc.core.diagnostics import CompileError, Diagnostic, did_you_mean, did_you_mean_or_list, error
from rcpc.core.evaluate import DOCSTRING_HINT, NO_SCOPE, Context, ModuleResult
from rcpc.core.limits import INT_LIMIT, LIMIT_HINT, MAX_NAME, MAX_SWEEP
from rcpc.core.patterns import LazyPattern
from rcpc.core.source import COMMAND_LINE_SPAN, Span
from rcpc.core.syntax import ast
from rcpc.core.values import Bool, Builtin, Dict, Float, Int, List, Null, Str, TypeName, equal, text_of, type_name
from rcpc.domain import provenance
from rcpc.domain.maxtext import flagset as maxtext
from rcpc.domain.maxtext.emit import NotAScalar, cli_document
from rcpc.domain.renders import KINDS, RENDER_NAME, kind_of
from rcpc.domain.tpu import ACCELERATOR_LABEL, TOPOLOGY_LABEL, accelerator_type_name, device_type_name, tpu_slice
from rcpc.domain.values import FlagSet, Param, TpuSlice, Variant



@record.define
class RecipeContext(Context):
    """The run as the domain's built-ins see it: ``schema(path | None, span)`` gives the
    MaxText schema for a flag set (None: the workspace's, which may be None)."""

    schema: Callable = lambda path, span: None


@record.define
class RecipeResult(ModuleResult):
    """What evaluating a recipe (or a library) file declared, besides its exports."""

    params: list = record.Factory(list)
    param_values: dict = record.Factory(dict)  # name → the value used
    declared: list = record.Factory(list)  # the render values declared, as evaluated (W0707 compares ids)
    renders: list = record.Factory(list)     # Manifest | FlagFile, in declaration order
    variants: list = record.Factory(list)    # Variant, in declaration order

    TRACED = ("params", "param_values", "declared", "renders", "variants")  # rcpc.core.trace


# parameters -------------------------------------------------------------------------------
PARAM_TYPES = {"bool": (Bool,), "int": (Int,), "float": (Float, Int), "str": (Str,)}


def make_param(name: str, span: Span, args: list, kwargs: dict) -> Param:
    """Build the :class:`Param` of ``NAME = param(type, default, doc, choices)``."""
    a = _bind("param", span, args, kwargs, ("type", "default"), {"type"}, {"doc", "choices"})
    ptype = a["type"]
    if type(ptype) is Builtin and ptype.name == "str":
        ptype = TypeName("str", ptype.span)
    if type(ptype) is not TypeName:
        raise error("E0502", "param() needs a type: bool, int, float or str", ptype.span,
                    hint="write e.g. param(int, default = 8)")
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
        raise error("E0602", f"param '{name}' is {article(ptype)}, got {article(type_name(value))}", value.span,
                    hint=f"give {article(ptype)} value, or change the param's type")
    if choices is not None and not any(equal(value, c) for c in choices):
        allowed = ", ".join(text_of(c) or "?" for c in choices)
        raise error("E0602", f"param '{name}' must be one of: {allowed}", value.span,
                    hint="give one of the choices, or add it to choices = [...]")


_BOOL_TEXT = ("true", "True", "false", "False")
_INT_TEXT = LazyPattern(r"^[-+]?[0-9]+$")
_FLOAT_TEXT = LazyPattern(r"^[-+]?(?:[0-9](?:_?[0-9])*(?:\.(?:[0-9](?:_?[0-9])*)?)?|\.[0-9](?:_?[0-9])*)(?:[eE][-+]?[0-9]+)?$")


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
        raise error("E0602", f"--set {param.name}={text}: not {article(param.type)}", param.span, hint=hint)
    if param.choices is not None and not any(equal(value, c) for c in param.choices):
        allowed = ", ".join(text_of(c) or "?" for c in param.choices)
        raise error("E0602", f"--set {param.name}={text}: not one of the choices ({allowed})", param.span,
                    hint=did_you_mean(text, [text_of(c) or "" for c in param.choices]) or f"write one of: {allowed}")
    return value



# functions --------------------------------------------------------------------------------
def _maxtext_flags(ctx, fn, span, args, kwargs):
    a = _bind("maxtext_flags", span, [], kwargs, (), set(),
              {"schema", "unknown_keys", "unknown_values", "tpu_slice", "num_slices"})
    path = a.get("schema")
    if path is not None:
        _expect(path, (Str, Null), "schema")
    if type(path) is Null:  # not MaxText's flags (a MaxDiffusion trainer): no schema to check them
        schema = None
    else:
        schema = ctx.schema(path.value if path is not None else None, path.span if path is not None else span)
    unknown = a.get("unknown_keys")
    if unknown is not None:
        _expect(unknown, (List,), "unknown_keys")
    if "num_slices" in a and "tpu_slice" not in a:
        raise error("E0306", "num_slices needs tpu_slice", a["num_slices"].span,
                    hint='give the slice too: tpu_slice = tpu_slice("tpu7x:4x4x8")')
    fs = maxtext.make_flagset(args, span, schema, unknown, ctx.warn, ctx.report, a.get("unknown_values"))
    if "tpu_slice" in a:
        slice_ = _expect(a["tpu_slice"], (TpuSlice,), "tpu_slice")
        num = _expect(a.get("num_slices", Int(1, "1", span)), (Int,), "num_slices")
        if num.value < 1:
            raise error("E0306", f"num_slices is {num.value}: a job runs on at least 1 slice", num.span,
                        hint="give the number of slices, 1 or more")
        from rcpc.domain.maxtext import mesh

        for d in mesh.check_mesh(fs, slice_, num.value, span):
            ctx.report(d)
    ctx.collect(fs)
    return fs


def _tpu_slice(ctx, fn, span, args, kwargs):
    a = _bind("tpu_slice", span, args, kwargs, ("spec",), {"spec"})
    spec = _expect(a["spec"], (Str,), "tpu_slice spec")
    return tpu_slice(spec.value, spec.span)


def _cli_value(ctx, fn, span, args, kwargs):
    """``cli_value(text)``: the value OmegaConf's ``from_cli`` reads from the command-line
    value ``text`` (:func:`~rcpc.domain.maxtext.emit.cli_document`), keeping ``text`` as its
    spelling, so that a flag set writes it back as ``key=text``: ``cli_value("on")`` is the bool
    true written ``on``, ``cli_value("~")`` None written ``~``, ``cli_value("0x10")`` the int 16
    written ``0x10``, ``cli_value('{"a":1}')`` the dict ``{"a": 1}`` written as that JSON.
    ``E1220`` for a text OmegaConf does not read as flag data (not YAML, a date, a list, a
    mapping with a key that is not a string)."""
    a = _bind("cli_value", span, args, kwargs, ("text",), {"text"})
    text = _expect(a["text"], (Str,), "cli_value() text")
    try:
        got = cli_document(text.value)
        if type(got) is list:
            raise NotAScalar(text.value)
    except NotAScalar:
        raise error("E1220", f"OmegaConf does not read {text.value[:60]!r} as a bool, number, null, string or "
                    "mapping of string keys", text.span, hint="write a list as a list literal") from None
    value = of_reading(got, text.value, span, text.span)
    if type(value) is Dict:
        return record.evolve(value, text=text.value)
    return value


def of_reading(got, text: str, span: Span, at: Span):
    """The value of ``got`` (:func:`~rcpc.domain.maxtext.emit.cli_document`'s data), a scalar
    spelled ``text`` (the items of a mapping in their canonical spelling), made at ``span``:
    the one reading of a flag's word as a typed value (``cli_value()``, and ``rcpc import``'s
    flag values, :mod:`rcpc.importer.literals`). ``E0806`` at ``at`` for an int outside the
    64-bit range."""
    if type(got) is bool:
        return Bool(got, text, span)
    if type(got) is int:
        if not -INT_LIMIT <= got < INT_LIMIT:
            raise error("E0806", f"{text[:60]!r} holds an int outside the 64-bit range", at, hint=LIMIT_HINT)
        return Int(got, text, span)
    if type(got) is float:
        return Float(got, text, span)
    if got is None:
        return Null(text, span)
    if type(got) is str:
        return Str(got, span)
    if type(got) is list:
        return List(tuple(of_reading(x, _spelling(x), span, at) for x in got), span)
    return Dict({k: of_reading(x, _spelling(x), span, at) for k, x in got.items()}, {k: span for k in got}, span)


def _spelling(x) -> str:
    """A spelling of an item of a mapping read by :func:`of_reading` (its text is the whole)."""
    if type(x) is bool:
        return "true" if x else "false"
    return "null" if x is None else repr(x) if type(x) is float else str(x)


def _check_variant_name(name: str, span: Span, hint: str = "use letters, digits, '.', '-' and '_'") -> None:
    """``E0604`` when ``name`` cannot name a variant: ``custom`` (the ``--set`` builds'), or
    not one plain, portable directory name (:mod:`rcpc.core.names`)."""
    if names.fold(name) == "custom":
        raise error("E0604", f"variant name {name!r} is reserved for --set builds ('custom')", span,
                    hint="choose another name")
    if not RENDER_NAME.fullmatch(name) or ".." in name or len(name) > MAX_NAME:
        raise error("E0604", f"variant name {name[:40]!r} is not a plain directory name", span, hint=hint)
    why = names.problem(name)
    if why is not None:
        raise error("E0604", f"variant name {name!r} is not a portable directory name: it {why}", span, hint=hint)


def _contract(a: dict) -> tuple:
    """(against, changes) of a ``variant()`` or ``variants()`` call's arguments ``a``:
    ``E0609`` for ``changes`` without ``against``."""
    against = a.get("against")
    if against is not None:
        against = _expect(against, (Str,), "against").value
    changes = a.get("changes")
    if changes is not None:
        _expect(changes, (Dict,), "changes")
        if against is None:
            raise error("E0609", "changes = {...} needs against = \"VARIANT\": the variant it is compared with",
                        changes.span, hint='add against = "default"')
    return against, changes


def _variant(ctx, fn, span, args, kwargs):
    a = _bind("variant", span, args, kwargs, ("name",), {"name"}, {"set", "against", "changes"})
    name = _expect(a["name"], (Str,), "variant name")
    _check_variant_name(name.value, name.span)
    sets = _expect(a.get("set", Dict({}, {}, span)), (Dict,), "set")
    return Variant(name.value, sets, *_contract(a), span)


_FIELD = LazyPattern(r"\{([^{}]*)\}")


def _variants(ctx, fn, span, args, kwargs):
    """``variants(over = {PARAM: [values], ...}, name = "TEMPLATE", set = {...}, against =
    ..., changes = {...})``: a sweep, one :class:`Variant` per point of the product of the
    ``over`` lists (the first param varying slowest, as ``itertools.product``), each setting
    its point's values (and ``set``'s), named by the template with ``{PARAM}`` replaced by
    the point's value (default: the values joined by ``-``), each with the same contract.
    The product's size is checked before it is expanded (``E0636`` over
    :data:`~rcpc.core.limits.MAX_SWEEP`). Errors: ``E0635`` an empty ``over`` or list,
    ``E0634`` a template field that is not a param of ``over``, ``E0633`` two points given
    one name, ``E0637`` a param in both ``over`` and ``set``, ``E0604`` a name that is no
    variant name, ``E0602`` a value that is no param value."""
    a = _bind("variants", span, args, kwargs, (), {"over"}, {"name", "set", "against", "changes"})
    over = _expect(a["over"], (Dict,), "over")
    if not over.items:
        raise error("E0635", "variants(over = {}) declares no variant", over.span,
                    hint='give each param swept and its values: over = {"BS": [2, 4]}')
    size = 1
    for key, values in over.items.items():
        _expect(values, (List,), f"over[{key!r}]")
        if not values.items:
            raise error("E0635", f"over[{key!r}] is an empty list: the product has no point", values.span,
                        hint="give the param's values, or leave it out of over")
        size *= len(values.items)
        if size > MAX_SWEEP:  # before anything is expanded
            raise error("E0636", f"variants(): the product of over's lists has more than {MAX_SWEEP:,} points",
                        over.span, hint="sweep fewer values at once (split the sweep, or build one point with "
                                        "--set); every point is evaluated, checked and kept as goldens")
        for v in values.items:
            if type(v) not in PARAM_TYPES["float"] + PARAM_TYPES["bool"] + PARAM_TYPES["str"]:
                raise error("E0602", f"over[{key!r}] holds {article(type_name(v))}, not a param value", v.span,
                            hint="sweep bool, int, float or str values")
    template = _expect(a.get("name", Str("-".join(f"{{{k}}}" for k in over.items), over.span)), (Str,), "name")
    for field in _FIELD.findall(template.value):
        if field not in over.items:
            raise error("E0634", f"name template field {{{field}}} is not a param of over", template.span,
                        hint=did_you_mean_or_list(field, list(over.items), "over's params"))
    base = _expect(a.get("set", Dict({}, {}, span)), (Dict,), "set")
    for key in base.items:
        if key in over.items:
            raise error("E0637", f"'{key}' is both swept (over) and fixed (set)", base.key_spans.get(key, base.span),
                        hint="give it in one of them")
    against, changes = _contract(a)
    keys = list(over.items)
    out, seen = [], {}
    for point in itertools.product(*(over.items[k].items for k in keys)):
        values = dict(zip(keys, point))
        name = _FIELD.sub(lambda m: text_of(values[m.group(1)]), template.value)
        _check_variant_name(name, template.span, hint="give name = \"...\" a template whose values make a name of "
                            "letters, digits, '.', '-' and '_'")
        shown = ", ".join(f"{k}={text_of(v)}" for k, v in values.items())
        first = seen.get(names.fold(name))
        seen[names.fold(name)] = shown
        if first is not None:
            raise error("E0633", f"variants(): points {{{first}}} and {{{shown}}} are both named {name!r}",
                        template.span, hint="list each value of over once" if first == shown else
                        "name every swept param in the template, e.g. " + "-".join(f"{k.lower()}{{{k}}}" for k in keys))
        sets = Dict({**base.items, **values}, {**base.key_spans, **over.key_spans}, span)
        out.append(Variant(name, sets, against, changes, span, sweep=True))
    return List(tuple(out), span)


def _flagset_plus(ctx, left: FlagSet, right: FlagSet, span: Span) -> FlagSet:
    """``a + b`` of flag sets: ``b``'s layers after ``a``'s (MaxText's last key wins)."""
    if len(left.layers) + len(right.layers) > maxtext.MAX_LAYERS:
        raise error("E0802", f"flag set of more than {maxtext.MAX_LAYERS} layers", span, hint=LIMIT_HINT)
    joined = FlagSet(left.layers + right.layers, span, left.schema or right.schema,
                     left.acknowledged + right.acknowledged)
    maxtext.check_weight(joined)
    problems = maxtext.merge_problems(joined)
    if problems:
        raise CompileError(problems)
    ctx.collect(joined)
    return joined


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
        "accelerator_type": lambda: Str(accelerator_type_name(s), span),
        "device_type": lambda: Str(device_type_name(s), span),
        "node_selector": lambda: Dict({ACCELERATOR_LABEL: Str(s.accelerator, span),
                                       TOPOLOGY_LABEL: Str(s.topology, span)},
                                      {ACCELERATOR_LABEL: span, TOPOLOGY_LABEL: span}, span),
    }


def _shell_keys(name: str, fn, span, args, kwargs, keyword: str = "") -> tuple:
    """The ``keys`` argument of ``FLAGS.shell_quoted(keys, raw = [...])`` /
    ``FLAGS.shell_raw(keys)`` (and the ``keyword`` list, when given): flags of the set
    (``E0656`` for one it does not have); ``(keys, keyword keys)``."""
    a = _bind(name, span, args, kwargs, ("keys",), {"keys"}, {keyword} if keyword else frozenset())
    present = {e.key for layer in fn.receiver.layers for e in layer.entries}
    out = []
    for arg in ("keys", keyword):
        if arg not in a:
            out.append(frozenset())
            continue
        keys = _expect(a[arg], (List,), f"{name}() {arg}")
        for k in keys.items:
            _expect(k, (Str,), "each key")
            if k.value not in present:
                raise error("E0656", f"{name}(): the flag set has no flag '{k.value}'", k.span,
                            hint=did_you_mean_or_list(k.value, present, "its flags"))
        out.append(frozenset(k.value for k in keys.items))
    return tuple(out)


def _flagset_shell_quoted(ctx, fn, span, args, kwargs):
    """``FLAGS.shell_quoted(keys, raw = [])``: the shell form with the value part of each flag
    in ``keys`` quoted even where the shell needs no quotes (``key='a,b'``), as a hand-written
    recipe may publish it; the argv the shell reads is the same. ``raw``: flags written as
    ``shell_raw`` writes them (``E0656`` when a key is in both)."""
    always, raw = _shell_keys("shell_quoted", fn, span, args, kwargs, "raw")
    if always & raw:
        raise error("E0656", f"shell_quoted(): '{sorted(always & raw)[0]}' is both quoted and raw", span,
                    hint="a flag's value part is either quoted or written as it is: name it in one list")
    _raw_strings(fn.receiver, raw)
    return provenance.shell_value(fn.receiver, span, always, raw)


def _flagset_shell_raw(ctx, fn, span, args, kwargs):
    """``FLAGS.shell_raw(keys)``: the shell form with the value part of each flag in ``keys``
    written as it is, unquoted, for the shell that runs the command to read (``run_name=$RUN``
    expands there; a published template's ``<placeholder>`` stays as published). Each such
    flag's value must be a string (``E0656``): the shell, not MaxText's YAML reading, gives
    the text MaxText gets, and rcpc checks the text as written."""
    (raw,) = _shell_keys("shell_raw", fn, span, args, kwargs)[:1]
    _raw_strings(fn.receiver, raw)
    return provenance.shell_value(fn.receiver, span, raw=raw)


def _raw_strings(fs: FlagSet, raw: frozenset) -> None:
    """``E0656`` unless the value of each flag of ``fs`` in ``raw`` is a string."""
    for layer in fs.layers:
        for e in layer.entries:
            if e.key in raw and type(e.value) is not Str:
                raise error("E0656", f"shell_raw(): the value of '{e.key}' is {type_name(e.value)}, not a string",
                            e.value.span, hint="a raw value is text the shell reads: write it as a string")


def _flagset_attrs(fs: FlagSet, span: Span) -> dict:
    return {
        "argv": lambda: provenance.argv_value(fs, span),
        "shell": lambda: provenance.shell_value(fs, span),
        "shell_quoted": lambda: Builtin("shell_quoted", _flagset_shell_quoted, span, fs),
        "shell_raw": lambda: Builtin("shell_raw", _flagset_shell_raw, span, fs),
        "resolved": lambda: maxtext.resolved_dict(fs, span),
    }


# statements -------------------------------------------------------------------------------
def _statement(ev, stmt: ast.ExprStmt, value, result) -> None:
    """A top-level expression statement of ``ev``'s module (an
    :class:`~rcpc.core.evaluate.Evaluator`): renders or a variant, declared in a recipe."""
    items = value.items if type(value) is List else (value,)
    if all(kind_of(v) is not None for v in items):  # an empty list: no renders
        kind = "renders"
        target = result.renders
    elif all(type(v) is Variant for v in items):  # variant(...), or the list variants(...) makes
        kind = "variants"
        target = result.variants
    else:
        raise error("E0705", f"this {type_name(value)} is not used", stmt.span,
                    hint=DOCSTRING_HINT if type(stmt.expr) is ast.StrLit else
                    "assign it to a name, or make it a render (jobset, manifest, flag_file)" if ev.is_recipe else
                    "assign it to a name (a library exports its names; renders are declared in recipes)")
    if not ev.is_recipe:
        raise error("E0706", f"a loaded file cannot declare {kind}", stmt.span,
                    hint="declare renders and variants in the recipe; export constants from libraries")
    if kind == "renders":  # one made by a library function is located at the recipe line declaring it
        result.declared.extend(items)
        items = [record.evolve(v, span=stmt.span) if v.span.path != stmt.span.path else v for v in items]
    target.extend(items)


def _merge(ctx, fn, span, args, kwargs):
    from rcpc.domain.kube.merge import merge

    _bind("merge", span, [], kwargs, (), set())
    return merge(args, span)


def _replace(ctx, fn, span, args, kwargs):
    from rcpc.domain.kube.merge import Replace

    a = _bind("replace", span, args, kwargs, ("value",), {"value"})
    return Replace(a["value"], span)


def _declare_param(ev, stmt: ast.Assign, call: ast.Call, result):
    """``NAME = param(...)``: the param's value, the override given (a value, or ``--set``
    text typed by the param), else its default."""
    if not ev.is_recipe:
        raise error("E0502", "param() is only allowed in a recipe, not in a loaded file", call.span,
                    hint="pass values into libraries by merging dicts in the recipe")
    args = [ev.eval(a, NO_SCOPE) for a in call.args]
    kwargs = {k.name: (ev.eval(k.value, NO_SCOPE), k.name_span) for k in call.kwargs}
    param = make_param(stmt.name, call.span, args, kwargs)
    ev.params[stmt.name] = param
    result.params.append(param)
    if stmt.name in ev.overrides:
        value = ev.overrides[stmt.name]
        if type(value) is str:  # from --set NAME=VALUE: typed by the param
            value = param_value_from_text(param, value)
        else:  # a variant's or a values file's value: of the param's type, where it is written
            check_param_value(param.type, value, stmt.name, param.choices)
    elif param.default is None:
        raise error("E0606", f"param '{stmt.name}' has no default and no value was given", call.span,
                    hint=f"give it a default, or set it with --set {stmt.name}=VALUE")
    else:
        value = param.default
    result.param_values[stmt.name] = value
    return value


def _finish(ev, module: ast.Module, result) -> None:
    """``W0707`` for a name bound to a render or variant that is never declared (a
    ``X = jobset(...)`` whose value is not used as a top-level statement)."""
    if not ev.is_recipe:
        return
    declared = {*map(id, result.declared), *map(id, result.variants)}
    for stmt in module.stmts:
        if type(stmt) is not ast.Assign:
            continue
        value = ev.env.get(stmt.name)
        sweep = type(value) is List and value.items and all(type(v) is Variant for v in value.items)
        if sweep and id(value.items[0]) not in declared:
            ev.ctx.warn(Diagnostic("W0707", f"'{stmt.name}' holds variants that are never declared",
                                   stmt.name_span, "warning",
                                   hint=f"write {stmt.name} on a line of its own to declare them"))
        elif (type(value) is Variant or kind_of(value) is not None) and id(value) not in declared:
            what = "variant" if type(value) is Variant else "render"
            ev.ctx.warn(Diagnostic("W0707", f"'{stmt.name}' holds a {type_name(value)} that is never "
                                     f"declared as a {what}", stmt.name_span, "warning",
                                     hint=f"write {stmt.name} on a line of its own to declare it"))


UNIVERSE = Universe(
    functions={
        "maxtext_flags": Function(
            _maxtext_flags, "maxtext_flags(layer, ..., schema = \"//path\", unknown_keys = [...], unknown_values = {...}, "
            "tpu_slice = S, "
            "num_slices = 1)", "A MaxText flag set: layers of `{key: value}`, the last value of a key wins (as "
            "MaxText's command line); checked against the MaxText schema.",
            ("schema", "unknown_keys", "unknown_values", "tpu_slice", "num_slices"),
            reference="Layers are dicts (or flag sets, spliced in); `{}` layers are skipped. The schema is the "
            "one rcp.toml configures (docs/maxtext.md); `unknown_keys` acknowledges keys the schema does not know, one by one, "
            "and `unknown_values` (`{\"key\": [\"value\", ...]}`) values of a key's choices it does not know (a "
            "newer MaxText's); `schema = None` checks no key (another trainer's flags, such as MaxDiffusion's); "
            "`tpu_slice` checks the mesh parallelism against the slice. Attributes: `.argv` (list of `key=value` "
            "tokens, repeats kept), `.shell` (one string, shell-quoted), `.shell_quoted(keys, raw = [...])` (the "
            "same with those flags' value parts quoted, and those of `raw` written as `.shell_raw` writes them), "
            "`.shell_raw(keys)` (the same with those flags' value parts written unquoted, for the shell that runs "
            "the command to read: `run_name=$RUN_ID`; E0656 unless each value is a string), `.resolved` (dict, "
            "last value wins). The tokens of `.argv` and `.shell` know the flag key, layer and flag set they "
            "render, also inside strings built from them (see *Strings that carry flags* below; diff contracts "
            "and MaxText checks use it: docs/review.md, docs/maxtext.md)."),
        "tpu_slice": Function(_tpu_slice, "tpu_slice(spec)",
                              "A TPU slice, `\"<generation>:<topology>\"` (e.g. `\"tpu7x:4x4x8\"`).",
                              reference="v4, v5e, v5p, v6e, v7x. Attributes: `.generation .accelerator .topology "
                              ".dims .chips .hosts .devices .chips_per_host .devices_per_chip .machine_type "
                              ".node_selector .name`, `.accelerator_type` (Cloud TPU's and XPK's name with a count: "
                              "`v5p-16` for v5p:2x2x2, TensorCores on v4, v5p and v7x, chips on v5e and v6e) and "
                              "`.device_type` (XPK's `--device-type` spelling with the topology: `tpu7x-4x4x4`; XPK "
                              "takes both)."),
        "cli_value": Function(_cli_value, "cli_value(text)",
                              "The value MaxText's command line reads from `text` (OmegaConf's `from_cli`), "
                              "spelled `text` in flags.",
                              reference="`cli_value(\"on\")` is the bool true, `cli_value(\"~\")` None, "
                              "`cli_value(\"0x10\")` the int 16, `cli_value(\".inf\")` a float, "
                              "`cli_value('{\"a\":1}')` the dict `{\"a\": 1}`: values a literal cannot spell "
                              "as a shell recipe wrote them, which a flag set writes back as written "
                              "(`run_name=on`, JSON as published) and checks as MaxText reads them "
                              "(docs/maxtext.md). `rcpc import shell` writes it for such a word. E1220 for a "
                              "text OmegaConf does not read as a scalar or a mapping of string keys."),
        "variant": Function(_variant, "variant(name, set = {...}, against = \"...\", changes = {...})",
                            "A named set of param values; `changes` is its diff contract against `against`.",
                            ("set", "against", "changes"), "variant",
                            reference="`rcpc build` writes each (docs/review.md, Contracts)."),
        "variants": Function(_variants, "variants(over = {PARAM: [values], ...}, name = \"TEMPLATE\", set = {...}, "
                             "against = \"...\", changes = {...})",
                             "A sweep: one variant per point of the product of `over`'s lists, named by the template "
                             "(`\"bs{BS}-{REMAT}\"`; default: the values joined by `-`), each with the contract.",
                             ("over", "name", "set", "against", "changes"), "variant",
                             reference="See *Sweeps* above."),
        "merge": Function(_merge, "merge(base, patch, ...)",
                          "A deep merge of dicts with Kubernetes' strategic-merge rules: lists of containers, env, "
                          "volumes, ports ... merge item by item by their key; the patch wins.",
                          reference="Dicts merge key by key, scalars and most lists replace; the keys of the lists "
                          "that merge: `containers`, `env`, `volumes`, `replicatedJobs` by `name`, `volumeMounts` by "
                          "`mountPath`, `ports` by `containerPort`. Each leaf keeps its provenance "
                          "(docs/kubernetes.md)."),
        "replace": Function(_replace, "replace(value)",
                            "Inside a `merge()` patch: replace this value whole instead of merging it.",
                            reference="Kubernetes' `$patch: replace`."),
        **{name: f for kind in KINDS for name, f in kind.functions.items()}},
    declarations={"param": Declaration(_declare_param, "NAME = param(type, default = ...)",
                                       "param(type, default = ..., doc = \"\", choices = [...])",
                                       "A typed recipe parameter, set by variants and `--set NAME=VALUE`.",
                                       ("default", "doc", "choices"),
                                       reference="`type` is `bool`, `int`, `float` or `str`; it must be assigned to "
                                       "a top-level name in the recipe; `--values` files set it too (docs/cli.md, "
                                       "Values files).")},
    attributes={TpuSlice: _slice_attrs, FlagSet: _flagset_attrs},
    plus={FlagSet: _flagset_plus},
    statement=_statement, finish=_finish, result=RecipeResult)
NAMES = UNIVERSE.names
