"""MaxText flag-set semantics (DESIGN.md §3.1): ordered layers, last key wins.

A flag set is a list of layers; each layer is an ordered map written as a dict in a recipe.
A key repeated inside one layer is an error (always a typo); a key repeated across layers is
an override, because MaxText applies ``key=value`` arguments in order with OmegaConf's
``from_cli`` and keeps the last value. The rendered argv keeps every layer's entries in
order, repeats included, exactly like a shell recipe that appends a tuned flag.
"""

from __future__ import annotations

import re

from rcpc.diagnostics import error
from rcpc.emit.flags import FlagValueError, token
from rcpc.source import Span
from rcpc.values import Dict, FlagEntry, FlagLayer, FlagSet, List, Str, type_name

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


def make_flagset(layers: list, span: Span) -> FlagSet:
    """Build a :class:`FlagSet` from layer values: dicts become layers, flag sets are spliced
    in (their layers in order), empty dicts are skipped. ``E0301`` for any other value."""
    out = []
    for layer in layers:
        t = type(layer)
        if t is Dict:
            if layer.items:
                out.append(layer_from_dict(layer))
        elif t is FlagSet:
            out.extend(layer.layers)
        else:
            raise error("E0301", f"a maxtext_flags layer must be a dict, got {type_name(layer)}",
                        layer.span, hint="write the layer as {\"key\": value, ...}")
    return FlagSet(tuple(out), span)


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


def argv_list(fs: FlagSet, span: Span) -> List:
    """:func:`argv` as a language :class:`List` of strings."""
    return List(tuple(Str(t, span) for t in argv(fs)), span)
