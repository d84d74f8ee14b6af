"""MaxText flag-set semantics (DESIGN.md §3.1): ordered layers, last key wins.

A flag set is a list of layers; each layer is an ordered map written as a dict in a recipe.
A key repeated inside one layer is an error (always a typo); a key repeated across layers is
an override, because MaxText applies ``key=value`` arguments in order with OmegaConf's
``from_cli`` and keeps the last value. The rendered argv keeps every layer's entries in
order, repeats included, exactly like a shell recipe that appends a tuned flag.
"""

from __future__ import annotations

import re

import attrs

from rcpc.limits import MAX_LAYERS, MAX_NODES
from rcpc.diagnostics import NOTE, WARNING, Diagnostic, did_you_mean, error
from rcpc.emit.flags import FlagValueError, token, value_text
from rcpc.source import Span
from rcpc.values import (Bool, Dict, FlagEntry, FlagLayer, FlagSet, Float, Int, List, Null, Str,
                         equal, text_of, to_python, type_name, weight)


# OmegaConf dotted keys: identifier segments joined by '.', list indices allowed.
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*(?:\.[A-Za-z0-9_\-]+)*$")


def layer_from_dict(d: Dict) -> FlagLayer:
    """Check and convert one layer. Errors: ``E0303`` bad key (empty, whitespace, ``=``),
    ``E0304`` a value with no flag form. A dict literal cannot repeat a key (``E0302`` is
    raised where the dict is built)."""
    entries = []
    for key, value in d.items.items():
        span = d.key_spans.get(key, d.span)
        if not _KEY.fullmatch(key):  # not match(): '$' also matches before a final "\n"
            what = ("is empty" if not key else "has leading or trailing whitespace" if key != key.strip()
                    else "is not a MaxText key (letters, digits, '_', '-', dotted segments)")
            raise error("E0303", f"flag key {key!r} {what}", span,
                        hint=f"write {key.strip()!r}" if key.strip() and key != key.strip() else None)
        try:
            token(key, value)
        except FlagValueError as exc:
            raise error("E0304", f"flag '{key}': {exc}", exc.value.span,
                        hint="flag values are strings, numbers, bools, None or lists of those")
        entries.append(FlagEntry(key, span, value))
    return FlagLayer(tuple(entries), d.span, d.why)


def make_flagset(layers: list, span: Span, schema=None, unknown_keys: List | None = None,
                 warn=None) -> FlagSet:
    """Build a :class:`FlagSet` from layer values: dicts become layers, flag sets are spliced
    in (their layers in order), empty dicts are skipped. ``E0301`` for any other value.

    With a :class:`~rcpc.schema.MaxTextSchema`, every key and value is checked
    (:func:`check_entry`); ``unknown_keys`` acknowledges, key by key, keys the schema does not
    know (a newer MaxText than the pinned base.yml). ``warn(diagnostic)`` receives warnings
    and notes: no-op overrides (``W0330``), keys set only to their schema default (``N0331``).
    """
    out = []
    for layer in layers:
        t = type(layer)
        if t is Dict:
            if layer.items:
                out.append(layer_from_dict(layer))
        elif t is FlagSet:
            out.extend(layer.layers)
            if len(out) > MAX_LAYERS:
                raise error("E0802", f"flag set of more than {MAX_LAYERS} layers", span)
        else:
            raise error("E0301", f"a maxtext_flags layer must be a dict, got {type_name(layer)}",
                        layer.span, hint="write the layer as {\"key\": value, ...}")
    warn = warn or (lambda d: None)
    if schema is not None:
        acknowledged = _acknowledged(unknown_keys, schema, out, warn)
        out = [attrs.evolve(layer, entries=tuple(check_entry(e, schema, acknowledged, warn)
                                                 for e in layer.entries)) for layer in out]
    fs = FlagSet(tuple(out), span, schema)
    check_weight(fs)
    _lint(fs, warn)
    return fs


def check_weight(fs: FlagSet) -> None:
    """``E0802`` when a flag set would render more than the value limit (layers shared by
    ``+`` count each time)."""
    total = sum(weight(e.value) for layer in fs.layers for e in layer.entries)
    if total > MAX_NODES:
        raise error("E0802", f"flag set of more than {MAX_NODES} items (counting repeated layers)", fs.span)


def _acknowledged(unknown_keys, schema, layers, warn) -> dict:
    """key → span of each acknowledged unknown key; warns on keys the schema does know
    (``W0323``) and on keys no layer sets (``W0324``)."""
    out: dict = {}
    if unknown_keys is None:
        return out
    used = {e.key for layer in layers for e in layer.entries}
    for item in unknown_keys.items:
        if type(item) is not Str:
            raise error("E0301", f"unknown_keys holds key names (strings), got {type_name(item)}", item.span)
        if item.value in schema.defaults:
            warn(Diagnostic("W0323", f"'{item.value}' is in the MaxText schema; it needs no acknowledgement",
                            item.span, WARNING, hint="remove it from unknown_keys"))
        elif item.value not in used:
            warn(Diagnostic("W0324", f"unknown key '{item.value}' is acknowledged but never set", item.span,
                            WARNING, hint="remove it from unknown_keys"))
        out[item.value] = item.span
    return out


_SPELLINGS = {
    "bool": (re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), lambda t, sp: Bool(t.lower() == "true", t, sp)),
    "int": (re.compile(r"^[-+]?[0-9]+$"), lambda t, sp: Int(int(t), t, sp)),
    "float": (re.compile(r"^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$"),
              lambda t, sp: Float(float(t), t, sp)),
}
_ACCEPTS = {"bool": (Bool,), "int": (Int,), "float": (Float, Int), "str": (Str,), "list": (List,),
            "dict": ()}


def check_entry(e: FlagEntry, schema, acknowledged: dict, warn) -> FlagEntry:
    """Check one entry against the schema; returns it, with a string spelling of the key's
    type converted to that type. ``E0310`` unknown key (did-you-mean), ``E0311`` a value that
    cannot be the key's type, ``W0321`` a string spelling of the key's type (accepted)."""
    if e.key not in schema.defaults:
        if e.key in acknowledged:
            return e
        raise error("E0310", f"unknown MaxText key '{e.key}'", e.key_span,
                    hint=did_you_mean(e.key, schema.defaults)
                    or "acknowledge a key newer than the schema with unknown_keys = [...]",
                    notes=(f"schema: {schema.path}",))
    want = schema.type_of(e.key)
    value = e.value
    if want is None or type(value) in _ACCEPTS[want] or type(value) is Null:
        return e
    spelled = _SPELLINGS.get(want)
    if type(value) is Str and spelled and spelled[0].match(value.value):
        typed = spelled[1](value.value, value.span)
        warn(Diagnostic("W0321", f"'{e.key}' is {_a(want)}: the string {value.value!r} is written as the "
                        f"{want} {typed.text}", value.span, WARNING,
                        hint=f"write {typed.text} without quotes"))
        return attrs.evolve(e, value=typed)
    shown = f" {text_of(value)!r}" if text_of(value) is not None else ""
    raise error("E0311", f"'{e.key}' is {_a(want)} in the MaxText schema; got {_a(type_name(value))}{shown}",
                value.span, hint=f"default: {schema.defaults[e.key]!r}", notes=(f"schema: {schema.path}",))


def _a(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


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
    for key, es in settings.items():
        if key in fs.schema.defaults and all(_is_default(x.value, fs.schema.defaults[key]) for x in es):
            warn(Diagnostic("N0331", f"'{key}' is set to its MaxText default ({value_text(es[0].value)})",
                            es[0].key_span, NOTE, hint="the entry can go unless the recipe pins it on purpose"))


def _is_default(value, default) -> bool:
    try:
        py = to_python(value)
    except TypeError:
        return False
    return type(py) is type(default) and py == default


def check_mesh(fs: FlagSet, tpu_slice, num_slices: int, span: Span) -> None:
    """MaxText's mesh rule: the product of ``ici_*_parallelism`` is the devices of one slice
    and the product of ``dcn_*_parallelism`` the number of slices, with at most one ``-1`` in
    each group standing for the rest (MaxText ``max_utils.fill_unspecified_mesh_axes``).
    Unset keys take their schema defaults when a schema is known. ``E0340`` shows the numbers.
    """
    res = resolved(fs)
    for prefix, total, what in (("ici", tpu_slice.devices, f"devices of {tpu_slice.accelerator}:{tpu_slice.topology}"),
                                ("dcn", num_slices, "slices")):
        axes: dict = {}
        if fs.schema is not None:
            for k, v in fs.schema.defaults.items():
                if k.startswith(prefix + "_") and k.endswith("_parallelism") and type(v) is int:
                    axes[k] = (v, None)
        for k, e in res.items():
            if k.startswith(prefix + "_") and k.endswith("_parallelism"):
                if type(e.value) is not Int:
                    raise error("E0340", f"'{k}' must be an int, got {type_name(e.value)}", e.value.span)
                axes[k] = (e.value.value, e.key_span)
        if not axes:
            continue
        fill = [k for k, (v, _) in axes.items() if v == -1]
        product = 1
        for k, (v, _) in axes.items():
            if v != -1:
                product *= v
        shown = " * ".join(f"{k}={v}" for k, (v, _) in axes.items() if v != 1) or "all 1"
        where = next((sp for k in fill or axes for sp in [axes[k][1]] if sp is not None), span)
        if len(fill) > 1:
            raise error("E0340", f"{prefix} mesh has {len(fill)} axes set to -1 ({', '.join(fill)}); at most one may be",
                        where, notes=(f"{prefix} axes: {shown}",))
        if (fill and (product <= 0 or total % product)) or (not fill and product != total):
            raise error("E0340", f"{prefix} mesh product {product} does not fit the {total} {what}", where,
                        notes=(f"{prefix} axes: {shown}",),
                        hint="the product of the axes must equal it (one axis may be -1 to take the rest)")


def entries(fs: FlagSet):
    """Every entry of every layer, in render order (repeats kept)."""
    for layer in fs.layers:
        yield from layer.entries


def argv(fs: FlagSet) -> list[str]:
    """The argv tokens: every layer's entries in order, repeats kept."""
    return [token(e.key, e.value) for e in entries(fs)]


def resolved(fs: FlagSet) -> dict:
    """The effective view: key → the last :class:`FlagEntry` that set it, in order of first
    appearance (what MaxText ends up with)."""
    out: dict = {}
    for e in entries(fs):
        out[e.key] = e
    return out


def resolved_dict(fs: FlagSet, span: Span) -> Dict:
    """:func:`resolved` as a language :class:`Dict` of effective values."""
    res = resolved(fs)
    return Dict({k: e.value for k, e in res.items()}, {k: e.key_span for k, e in res.items()}, span)
