"""MaxText flag-set semantics (docs/maxtext.md, *Last key wins*): ordered layers, last key wins.

A flag set is a list of layers; each layer is an ordered map written as a dict in a recipe.
A key repeated inside one layer is an error (always a typo); a key repeated across layers is
an override, because MaxText applies ``key=value`` arguments in order with OmegaConf's
``from_cli`` and keeps the last value. The rendered argv keeps every layer's entries in
order, repeats included, exactly like a shell recipe that appends a tuned flag.
"""

from __future__ import annotations

from rcpc.core import record
from rcpc.core.builtins import article
from rcpc.core import patterns
from rcpc.domain.maxtext import lax
from rcpc.core.limits import LIMIT_HINT, MAX_LAYERS, MAX_NODES
from rcpc.core.diagnostics import (NOTE, WARNING, CompileError, Diagnostic, did_you_mean, did_you_mean_or_list, error,
                                   unique)
from rcpc.domain.maxtext.emit import FlagValueError, token, value_text
from rcpc.core.source import Span
from rcpc.core.values import (Bool, Dict, Float, Int, List, Str, equal, text_of, to_python,
                              type_name, weight)
from rcpc.domain.values import FlagEntry, FlagLayer, FlagSet


# OmegaConf dotted keys: identifier segments joined by '.', list indices allowed.
_KEY = patterns.precompiled(r"^[A-Za-z_][A-Za-z0-9_\-]*(?:\.[A-Za-z0-9_\-]+)*$")
_SET = object.__setattr__  # FlagEntry.token, on a frozen entry (the token is a function of its fields)


def layer_from_dict(d: Dict, problems: list | None = None) -> FlagLayer:
    """Check and convert one layer. Errors: ``E0303`` bad key (empty, whitespace, ``=``),
    ``E0304`` a value with no flag form, ``E0317`` a string MaxText could not read back. A
    dict literal cannot repeat a key (``E0302`` is raised where the dict is built). With
    ``problems``, errors are appended there and the bad entries left out; else the first
    is raised."""
    entries = []
    for key, value in d.items.items():
        span = d.key_spans.get(key, d.span)
        found = _token_or_problem(key, value, span)
        if type(found) is str:  # the entry's token: kept for what renders it (entry_token)
            entry = FlagEntry(key, span, value)
            _SET(entry, "token", found)
            entries.append(entry)
        elif problems is None:
            raise CompileError(found)
        else:
            problems.append(found)
    return FlagLayer(tuple(entries), d.span, d.why)


def _entry_problem(key: str, value, span: Span) -> Diagnostic | None:
    """The problem of entry ``key``: ``value`` (at ``span``), or None."""
    found = _token_or_problem(key, value, span)
    return None if type(found) is str else found


def _token_or_problem(key: str, value, span: Span) -> Diagnostic | str:
    """The problem of entry ``key``: ``value`` (at ``span``), else its token."""
    if not _KEY.fullmatch(key):  # not match(): '$' also matches before a final "\n"
        what = ("is empty" if not key else "has leading or trailing whitespace" if key != key.strip()
                else "is not a MaxText key (letters, digits, '_', '-', dotted segments)")
        return Diagnostic("E0303", f"flag key {key!r} {what}", span,
                          hint=f"write {key.strip()!r}" if key.strip() and key != key.strip() else None)
    try:
        return token(key, value)
    except FlagValueError as exc:
        hint = ("flag values are strings, numbers, bools, None, lists and dicts of those" if exc.code == "E0304"
                else "write the text MaxText should get without it")
        return Diagnostic("E0317" if exc.code == "E0317" else "E0304", f"flag '{key}': {exc}",
                          exc.value.span, hint=hint)


def make_flagset(layers: list, span: Span, schema=None, unknown_keys: List | None = None,
                 warn=None, report=None, unknown_values: Dict | None = None) -> FlagSet:
    """Build a :class:`FlagSet` from layer values: dicts become layers, flag sets are spliced
    in (their layers in order), empty dicts are skipped. ``E0301`` for any other value.

    Every problem is found in one pass. Malformed entries (``E0301``-``E0304``, ``E0317``)
    and keys OmegaConf would merge otherwise than last-wins (``E0318``) are raised together.
    With a :class:`~rcpc.domain.maxtext.schema.MaxTextSchema`, every entry is checked as MaxText reads it
    (:func:`check_entry`); ``unknown_keys`` acknowledges, key by key, keys the schema does not
    know, and ``unknown_values`` (key → list of values) values of a key's choices the schema
    does not know (a newer MaxText's enum member); the keys a spliced flag set acknowledged stay
    acknowledged (:attr:`FlagSet.acknowledged`). Those findings do not make the flag set malformed: errors go to ``report(diagnostic)``
    when given (the caller raises them with the rest of the recipe's), else are raised;
    warnings and notes go to ``warn(diagnostic)``.
    """
    out = []
    problems: list = []
    inherited: dict = {}  # the unknown keys the spliced flag sets acknowledged
    for layer in layers:
        t = type(layer)
        if t is Dict:
            if layer.items:
                out.append(layer_from_dict(layer, problems))
        elif t is FlagSet:
            out.extend(layer.layers)
            inherited.update(layer.acknowledged)
            if len(out) > MAX_LAYERS:
                raise error("E0802", f"flag set of more than {MAX_LAYERS} layers", span, hint=LIMIT_HINT)
        else:
            problems.append(Diagnostic("E0301", f"a maxtext_flags layer must be a dict, got {type_name(layer)}",
                                       layer.span, hint="write the layer as {\"key\": value, ...}"))
    fs = FlagSet(tuple(out), span, schema, tuple(inherited.items()))
    problems.extend(merge_problems(fs))
    if problems:
        raise CompileError(problems)
    warn = warn or (lambda d: None)
    found: list = []
    if schema is not None:
        acknowledged = {**inherited, **_acknowledged(unknown_keys, schema, out, warn)}
        values_ok = _acknowledged_values(unknown_values, schema, warn)
        seen = resolved(fs)  # what MaxText sees of each key: its last value (repeated dicts merged)
        last = {id(x): x for x in {e.key: e for e in entries(fs)}.values()}
        layers_checked = []
        for layer in out:
            checked = []
            for e in layer.entries:
                if id(e) in last:  # an overridden value never reaches MaxText: not checked
                    if seen[e.key] is e:
                        e, diags = check_entry(e, schema, acknowledged, values_ok)
                    else:  # a dict merged with the earlier ones: the merge is checked
                        diags = check_entry(seen[e.key], schema, acknowledged, values_ok)[1]
                    found.extend(diags)
                checked.append(e)
            layers_checked.append(record.evolve(layer, entries=tuple(checked)))
        fs = FlagSet(tuple(layers_checked), span, schema, tuple(acknowledged.items()))
    check_weight(fs)
    _lint(fs, warn)
    errors = [d for d in found if d.severity == "error"]
    for d in found:
        if d.severity != "error":
            warn(d)
    if errors:
        if report is None:
            raise CompileError(errors)
        for d in errors:
            report(d)
    return fs


def flags_weight(fs: FlagSet) -> int:
    """What a flag set costs to render (:func:`rcpc.core.values.weight` of every entry's value;
    layers shared by ``+`` count each time)."""
    return sum(weight(e.value) for layer in fs.layers for e in layer.entries)


def check_weight(fs: FlagSet) -> None:
    """``E0802`` when a flag set would render more than the value limit."""
    total = flags_weight(fs)
    if total > MAX_NODES:
        raise error("E0802", f"flag set of more than {MAX_NODES} items (counting repeated layers)", fs.span,
                    hint=LIMIT_HINT)


def merge_problems(fs: FlagSet) -> list[Diagnostic]:
    """``E0318`` where OmegaConf's ``from_cli`` would not keep the last value: a dotted key
    (``m.0``) and another key of the set of which one is a path prefix of the other (OmegaConf
    merges them into one value), and a repeated key whose values are a list and a dict (it
    refuses to merge those). A repeated key with two dict values is merged, as OmegaConf
    merges it (:func:`resolved`)."""
    out = []
    first: dict = {}
    for e in entries(fs):
        first.setdefault(e.key, e)
    for e in entries(fs):
        parts = e.key.split(".")
        for i in range(1, len(parts)):
            prefix = ".".join(parts[:i])
            if prefix in first:
                other = first[prefix]
                later, earlier = (e, other) if _position(fs, e) > _position(fs, other) else (other, e)
                out.append(Diagnostic(
                    "E0318", f"'{later.key}' and '{earlier.key}' set parts of one MaxText value", later.key_span,
                    related=(("also set here", earlier.key_span),),
                    hint="OmegaConf merges them into one value, so the flag set's last-wins view would be wrong: "
                    f"set the whole value once, as '{parts[0]}'"))
    current: dict = {}
    for e in entries(fs):
        before = current.get(e.key)
        if before is not None:
            clash = _merge_clash(before.value, e.value)
            if clash is not None:
                out.append(Diagnostic("E0318", f"'{e.key}' is set to a {clash[1]} after a {clash[0]}: OmegaConf "
                                      "cannot merge those", e.value.span, related=(("set here", before.value.span),),
                                      hint="OmegaConf merges a repeated key's dicts and refuses a list/dict mix; "
                                      "set it once"))
            else:
                e = record.evolve(e, value=merged(before.value, e.value))
        current[e.key] = e
    return unique(out)


def _position(fs: FlagSet, entry) -> int:
    for i, e in enumerate(entries(fs)):
        if e is entry:
            return i
    return -1


def _merge_clash(a, b) -> tuple[str, str] | None:
    ta, tb = type(a), type(b)
    if (ta is List and tb is Dict) or (ta is Dict and tb is List):
        return type_name(a), type_name(b)
    if ta is Dict and tb is Dict:
        for k, v in b.items.items():
            if k in a.items:
                clash = _merge_clash(a.items[k], v)
                if clash is not None:
                    return clash
    return None


def merged(a, b):
    """OmegaConf's merge of a repeated key's values: dicts merge key by key (recursively),
    anything else is replaced by the later value."""
    if type(a) is Dict and type(b) is Dict:
        items = dict(a.items)
        spans = dict(a.key_spans)
        for k, v in b.items.items():
            items[k] = merged(items[k], v) if k in items else v
            spans[k] = b.key_spans.get(k, b.span)
        return Dict(items, spans, b.span, b.why)
    return b


def _acknowledged_values(unknown_values, schema, warn) -> dict:
    """key → the values ``unknown_values`` acknowledges for it (strings); ``E0301`` for another
    shape; ``W0325`` for a value the schema accepts (no acknowledgement needed) or a key the
    schema does not know (acknowledge the key itself with ``unknown_keys``)."""
    out: dict = {}
    if unknown_values is None:
        return out
    if type(unknown_values) is not Dict:
        raise error("E0301", f"unknown_values maps keys to lists of values, got {type_name(unknown_values)}",
                    unknown_values.span, hint='write unknown_values = {"custom_mesh_and_rule": ["new-rule"]}')
    for key, values in unknown_values.items.items():
        span = unknown_values.key_spans.get(key, unknown_values.span)
        if type(values) is not List or not all(type(v) is Str for v in values.items):
            raise error("E0301", f"unknown_values['{key}'] must be a list of strings", values.span,
                        hint=f'write unknown_values = {{"{key}": ["value"]}}')
        if key not in schema:
            warn(Diagnostic("W0325", f"'{key}' is not in the MaxText schema: acknowledge the key with unknown_keys",
                            span, WARNING, hint="move it to unknown_keys"))
            continue
        t = schema.type_of(key)
        for v in values.items:
            try:
                lax.validate(t, v.value)
            except lax.Invalid:
                continue
            if any(m["type"] == "enum" and m["values"] is None for m in (t["of"] if t["type"] == "union" else [t])):
                continue  # choices the schema does not know (common_types.py was not read): it accepts anything
            warn(Diagnostic("W0325", f"{v.value!r} is a value '{key}' takes in the MaxText schema; it needs no "
                            "acknowledgement", v.span, WARNING, hint="remove it from unknown_values"))
        out[key] = frozenset(v.value for v in values.items)
    return out


def _acknowledged(unknown_keys, schema, layers, warn) -> dict:
    """key → span of each acknowledged unknown key; warns on keys the schema does know
    (``W0323``) and on keys no layer sets (``W0324``)."""
    out: dict = {}
    if unknown_keys is None:
        return out
    used = {e.key for layer in layers for e in layer.entries}
    for item in unknown_keys.items:
        if type(item) is not Str:
            raise error("E0301", f"unknown_keys holds key names (strings), got {type_name(item)}", item.span,
                        hint='write the key quoted: unknown_keys = ["use_gdn_kernel"]')
        if item.value.split(".")[0] in schema:
            warn(Diagnostic("W0323", f"'{item.value}' is in the MaxText schema; it needs no acknowledgement",
                            item.span, WARNING, hint="remove it from unknown_keys"))
        elif item.value not in used:
            warn(Diagnostic("W0324", f"unknown key '{item.value}' is acknowledged but never set", item.span,
                            WARNING, hint="remove it from unknown_keys"))
        out[item.value] = item.span
    return out


_SPELLINGS = {
    "bool": (patterns.LazyPattern(r"^(?:true|True|TRUE|false|False|FALSE)\Z"), lambda t, sp: Bool(t.lower() == "true", t, sp)),
    # at most 18 digits: always inside the 64-bit range, and int() has a digit limit
    "int": (patterns.LazyPattern(r"^[-+]?[0-9]{1,18}\Z"), lambda t, sp: Int(int(t), t, sp)),
    "float": (patterns.LazyPattern(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\Z"),
              lambda t, sp: Float(float(t), t, sp)),
}
_PY_NAMES = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict", type(None): "None"}


def check_entry(e: FlagEntry, schema, acknowledged: dict, values_ok: dict | None = None) -> tuple[FlagEntry, list[Diagnostic]]:
    """Check one entry as MaxText reads it (docs/maxtext.md): the value OmegaConf gives,
    MaxText's own rewrites (``"none"`` is None, ...), then pydantic's lax mode on the key's
    type. Returns the entry (a string that is a plain spelling of the key's type, such as
    ``"False"`` or ``"100"``, converted to that type) and the findings: ``E0310`` unknown key
    (did-you-mean), ``E0311`` a value of another type, ``E0312`` not one of the choices,
    ``E0313`` out of bounds, ``E0314`` None where the key cannot be None, ``W0312`` the MISSING
    marker ``???``, ``W0313`` a string ``none``, ``W0314`` a nested key MaxText ignores,
    ``W0321`` a string spelling of the key's type, ``W0322`` a value pydantic converts.
    ``values_ok``: key → values acknowledged as choices of a newer MaxText (no ``E0312``)."""
    top, _, rest = e.key.partition(".")
    notes = (f"schema: {schema.path}",)
    if top not in schema:
        if e.key in acknowledged or top in acknowledged:
            return e, []
        return e, [Diagnostic("E0310", f"unknown MaxText key '{top}'", e.key_span,
                              hint=did_you_mean(top, schema.fields)
                              or "acknowledge a key newer than the schema with unknown_keys = [...]", notes=notes)]
    t, path_problem = _type_at(schema.type_of(top), rest, e)
    if path_problem is not None:
        return e, [path_problem]
    if t is None:
        return e, []
    found: list = []
    value = e.value
    py = to_python(value)
    found.extend(_missing_markers(e.key, value))
    if py == "???":  # OmegaConf's merge keeps base.yml's value: pydantic never sees this one
        return e, found
    if not rest:
        if type(py) is str and py.lower() == "none":
            py = None  # pyconfig._prepare_for_pydantic
            if lax.accepts_none(t) or top in NONE_AS_EMPTY:
                found.append(Diagnostic("W0313", f"MaxText reads the string {value.value!r} as None for '{e.key}'",
                                        value.span, WARNING, hint="write None if None is meant"))
        py = prepare(top, py)
    ignored: list = []
    try:
        got = lax.validate(t, py, (), ignored)
    except lax.Invalid as exc:
        if exc.kind == lax.CHOICE and not rest and py in (values_ok or {}).get(top, ()):
            return e, found  # a choice of a newer MaxText, acknowledged with unknown_values
        return e, found + [_invalid(e, t, py, exc, schema)]
    restricted = schema.fields[top].get("restricted") if not rest else None
    if restricted is not None and type(got) is str and got not in restricted["values"]:
        found.append(Diagnostic("W0360", f"MaxText's config loader accepts {e.key} = {got!r}, but its model refuses it "
                                f"when it builds the layers ({restricted['source']})", value.span, WARNING,
                                hint=did_you_mean(got, restricted["values"]) or "one of: "
                                + ", ".join(restricted["values"])))
    for path in ignored:
        found.append(Diagnostic("W0314", f"MaxText ignores '{e.key}.{'.'.join(map(str, path))}': "
                                f"{lax.describe(t)} has no such key", value.span, WARNING,
                                hint="check the key's spelling", notes=notes))
    if type(py) is str and type(got) is not str and type(got) in (bool, int, float):
        want = _PY_NAMES[type(got)]
        spelled = next((_SPELLINGS[w] for w in ((want,) if want == "bool" else ("int", "float"))
                        if _SPELLINGS[w][0].match(py)), None)
        if spelled is not None:
            typed = spelled[1](py, value.span)
            found.append(Diagnostic("W0321", f"'{e.key}' is {article(want)}: the string {py!r} is written as the "
                                    f"{want} {typed.text}", value.span, WARNING,
                                    hint=f"write {typed.text} without quotes (a param that holds it is then a "
                                         f"param({want}, ...))"))
            return record.evolve(e, value=typed), found
        found.append(Diagnostic("W0321", f"'{e.key}' is {article(want)}: MaxText reads the string {py!r} as "
                                f"{_py_text(got)}", value.span, WARNING, hint=f"write {_py_text(got)}"))
    elif py is not None and type(got) is not type(py) and not (type(py) is int and type(got) is float) \
            and type(py) in (bool, int, float):
        found.append(Diagnostic("W0322", f"'{e.key}' is {article(lax.describe(t))}: MaxText reads the "
                                f"{_PY_NAMES[type(py)]} {value_text(value)} as {_py_text(got)}", value.span,
                                WARNING, hint=f"write {_py_text(got)}"))
    return e, found


# pyconfig._prepare_for_pydantic (MaxText): values rewritten before pydantic sees them.
NONE_AS_EMPTY = frozenset(("run_name", "dump_hlo_local_module_name", "dump_hlo_module_name"))
EMPTY_AS_NONE = frozenset(("hf_train_files", "hf_eval_files", "hf_access_token", "hf_name", "hf_data_dir",
                           "hf_eval_split", "tokenizer_path"))
COERCED_TO_LIST = frozenset(("train_data_columns", "eval_data_columns", "trainable_parameters_mask", "adamw_mask"))


def prepare(key: str, value):
    """What ``pyconfig._prepare_for_pydantic`` makes of a top-level value before pydantic
    (the ``"none"`` rule is applied by the caller): a list of strings for ``data_sharding`` is
    wrapped in a list; a string for the four list-of-str keys becomes a list (a ``[...]`` text
    read as a Python literal); ``""`` is None for the HF keys and ``tokenizer_path``; None is
    ``""`` for ``run_name`` and the HLO module names; a None ``tokenizer_path`` takes
    MaxText's default (any string)."""
    if key == "data_sharding" and type(value) is list and value and type(value[0]) is str:
        return [value]
    if key in COERCED_TO_LIST:
        return _coerce_to_list(value)
    if key in EMPTY_AS_NONE and value == "":
        value = None
    if key in NONE_AS_EMPTY and value is None:
        return ""
    if key == "tokenizer_path" and value is None:
        return "(MaxText's default tokenizer)"
    return value


def _coerce_to_list(value):
    """pyconfig._coerce_to_list."""
    if type(value) is not str:
        return value
    cleaned = value.strip()
    if (cleaned.startswith("[") and cleaned.endswith("]")) or (cleaned.startswith("(") and cleaned.endswith(")")):
        import ast

        try:
            parsed = ast.literal_eval(cleaned)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return [value]
        return list(parsed) if isinstance(parsed, (list, tuple)) else [str(parsed)]
    return [value]


def _type_at(t: dict, rest: str, e: FlagEntry):
    """The type node at dotted path ``rest`` below a key's type: (node, None), (None, None)
    when it is not typed there, or (None, diagnostic) when MaxText refuses the path."""
    for seg in rest.split(".") if rest else ():
        while t["type"] == "union":
            t = next((m for m in t["of"] if m["type"] in ("model", "dict")), t["of"][0])
        kind = t["type"]
        if kind == "model":
            f = t["fields"].get(seg)
            if f is None:
                if t["extra"] == "forbid":
                    return None, Diagnostic("E0310", f"unknown MaxText key '{e.key}': {lax.describe(t)} has no "
                                            f"key '{seg}'", e.key_span,
                                            hint=did_you_mean_or_list(seg, t["fields"], "its keys"))
                return None, Diagnostic("W0314", f"MaxText ignores '{e.key}': {lax.describe(t)} has no key '{seg}'",
                                        e.key_span, WARNING, hint=did_you_mean(seg, t["fields"]))
            t = f["type"]
        elif kind == "dict":
            t = t["values"]
        elif kind in ("any", "validated"):
            return None, None
        else:
            return None, Diagnostic("E0311", f"'{e.key}' sets a part of '{e.key.split('.')[0]}', which is "
                                    f"{article(lax.describe(t))}: OmegaConf makes a mapping of it", e.key_span,
                                    hint="set the whole value")
    return t, None


def _invalid(e: FlagEntry, t: dict, py, exc: "lax.Invalid", schema) -> Diagnostic:
    where = e.key + "".join(f"[{p!r}]" if type(p) is str else f"[{p}]" for p in exc.path)
    notes = (f"schema: {schema.path}",)
    value = e.value
    shown = value_text(value)
    if exc.kind == lax.EXTRA:
        return Diagnostic("E0310", f"unknown MaxText key '{where}': {exc.expected} has no key {exc.path[-1]!r}",
                          value.span, notes=notes, hint="check the key's spelling against the schema")
    if py is None and not exc.path:
        return Diagnostic("E0314", f"'{e.key}' cannot be None: it is {article(lax.describe(t))}", value.span,
                          hint=_default_hint(schema, e.key), notes=notes)
    if exc.kind == lax.CHOICE:
        return Diagnostic("E0312", f"'{where}' must be {exc.expected}; got {shown}", value.span,
                          hint=did_you_mean(str(py), [str(x) for x in _choices(t)]) or _default_hint(schema, e.key),
                          notes=notes)
    if exc.kind == lax.BOUND:
        return Diagnostic("E0313", f"'{where}' must be {exc.expected}; got {shown}", value.span,
                          hint=_default_hint(schema, e.key), notes=notes)
    got = f"{article(type_name(value))}" + (f" {text_of(value)!r}" if text_of(value) is not None else "")
    return Diagnostic("E0311", f"'{e.key}' is {article(lax.describe(t))} in the MaxText schema; got {got}",
                      value.span, hint=_default_hint(schema, e.key), notes=notes)


def _choices(t: dict) -> list:
    if t["type"] in ("literal", "enum"):
        return t["values"] or []
    if t["type"] == "union":
        return [x for m in t["of"] for x in _choices(m)]
    return []


def _default_hint(schema, key: str) -> str | None:
    has, value = schema.start_value(key)
    return f"default: {value!r}" if has else None


def _py_text(v) -> str:
    if v is None:
        return "None"
    if type(v) is bool:
        return "true" if v else "false"
    return repr(v)


def _missing_markers(key: str, value) -> list[Diagnostic]:
    """``W0312`` for each string ``???`` in a value: OmegaConf's MISSING marker, so MaxText
    keeps what base.yml says instead."""
    out = []
    for s in _strings(value):
        if s.value == "???":
            out.append(Diagnostic("W0312", f"'???' is OmegaConf's MISSING marker: MaxText keeps the default of "
                                  f"'{key}' instead", s.span, WARNING, hint="remove the entry, or write the value"))
    return out


def _strings(value):
    t = type(value)
    if t is Str:
        yield value
    elif t is List:
        for x in value.items:
            yield from _strings(x)
    elif t is Dict:
        for x in value.items.values():
            yield from _strings(x)


def _lint(fs: FlagSet, warn) -> None:
    """``W0330`` for an override that re-sets the value already in force; ``N0331`` for a key
    set only to its schema default."""
    current: dict = {}
    for e in entries(fs):
        before = current.get(e.key)
        if before is not None and equal(before.value, e.value):
            warn(Diagnostic("W0330", f"no-op override: '{e.key}' is already {value_text(e.value)}", e.key_span,
                            WARNING, related=(("set here", before.key_span),),
                            hint="remove this entry, or change its value"))
        current[e.key] = e
    if fs.schema is None:
        return
    settings: dict = {}
    for e in entries(fs):
        settings.setdefault(e.key, []).append(e)
    defaults = fs.schema.defaults
    for key, es in settings.items():
        if key in defaults and all(_is_default(x.value, defaults[key]) for x in es):
            warn(Diagnostic("N0331", f"'{key}' is set to its MaxText default ({value_text(es[0].value)})",
                            es[0].key_span, NOTE, hint="the entry can go unless the recipe pins it on purpose"))


def _is_default(value, default) -> bool:
    try:
        py = to_python(value)
    except TypeError:
        return False
    return type(py) is type(default) and py == default


def entries(fs: FlagSet):
    """Every entry of every layer, in render order (repeats kept)."""
    for layer in fs.layers:
        yield from layer.entries


def entry_token(e: FlagEntry) -> str:
    """The argv token ``key=value`` of entry ``e`` (:func:`~rcpc.domain.maxtext.emit.token`),
    made once an entry and kept in it (``FlagEntry.token``): the ``.flags`` file, ``.argv``,
    ``.shell`` and the renders' data all read it. :class:`FlagValueError` as ``token``."""
    found = e.token
    if found is None:
        found = token(e.key, e.value)
        _SET(e, "token", found)
    return found


def argv(fs: FlagSet) -> list[str]:
    """The argv tokens: every layer's entries in order, repeats kept."""
    return [entry_token(e) for e in entries(fs)]


def resolved(fs: FlagSet) -> dict:
    """The effective view: key → the last :class:`FlagEntry` that set it, in order of first
    appearance (what MaxText ends up with); a key repeated with dict values holds their
    merge (:func:`merged`), as OmegaConf merges them."""
    out: dict = {}
    for e in entries(fs):
        before = out.get(e.key)
        if before is not None and type(before.value) is Dict and type(e.value) is Dict:
            e = record.evolve(e, value=merged(before.value, e.value))
        out[e.key] = e
    return out


def resolved_dict(fs: FlagSet, span: Span) -> Dict:
    """:func:`resolved` as a language :class:`Dict` of effective values."""
    res = resolved(fs)
    return Dict({k: e.value for k, e in res.items()}, {k: e.key_span for k, e in res.items()}, span)


# effective-value changes ---------------------------------------------------------------------
@record.frozen
class FlagChange:
    """One effective-value change of a flag set: entries are None when the key is absent."""

    key: str
    old: object
    new: object

    def describe(self) -> str:
        old = "(unset)" if self.old is None else value_text(self.old.value)
        new = "(unset)" if self.new is None else value_text(self.new.value)
        return f"{self.key}: {old} → {new}"


def flag_delta(old_flags, new_flags) -> list[FlagChange]:
    """Keys whose effective value differs between two flag sets (added and removed keys
    included), in order of first appearance (old keys first). Values compare as MaxText sees
    them: ``True`` and ``true`` are the same bool."""
    a, b = resolved(old_flags), resolved(new_flags)
    out = []
    for key in [*a, *(k for k in b if k not in a)]:
        ea, eb = a.get(key), b.get(key)
        if ea is None or eb is None or not equal(ea.value, eb.value):
            out.append(FlagChange(key, ea, eb))
    return out
