"""``E0350``: a flag set whose config one of MaxText's cross-field refusals refuses (the
decidable ``if ...: raise ValueError`` / ``assert`` of ``types.py``'s model validators that
the schema records, :mod:`rcpc.domain.maxtext.refusals`), decided by :mod:`rcpc.domain.maxtext.refusal_eval`.

Each field a refusal reads takes the value MaxText validates: the flag's, else the model
config's (``models/<model_name>.yml``), else base.yml's (types.py's default when base.yml lacks
the key), converted as pydantic's lax mode converts it (:func:`rcpc.domain.maxtext.lax.validate`; a
string ``none`` in any case is None, ``_prepare_for_pydantic``). A refusal is left undecided
(no finding: a false error is worse than a miss) when no flag of the set is among the fields
it reads (a refusal whose values the model config chosen by a ``model_name`` flag sets is
reported at that flag), when a field is overridden by an ``M_<KEY>`` variable of a container carrying the
set, when a value is one the schema refuses (its own finding, E0311-E0314), or when Python
would raise deciding it.
"""

from __future__ import annotations

from rcpc.core.diagnostics import Diagnostic
from rcpc.domain.maxtext import lax
from rcpc.domain.maxtext.emit import value_text
from rcpc.domain.maxtext.refusal_eval import Undecided, holds, message
from rcpc.domain.values import FlagSet

_MISSING = object()


def check_refusals(fs: FlagSet, cli: dict, model_name: str | None, model: dict | None,
                   env_keys=frozenset()) -> list[Diagnostic]:
    """``E0350`` for each refusal of ``fs.schema.refusals`` (types.py's model validators)
    whose condition holds on the config the flag set resolves to (module docstring), at the
    flag (of those the condition reads) set last, the others as related locations. ``cli``:
    the set's top-level config with the entry that set each key
    (:func:`rcpc.domain.launch.command_line`); ``model_name``, ``model``: the model config
    ``model_name`` loads (:func:`rcpc.domain.launch.model_of`); ``env_keys``: keys an ``M_``
    variable of a container carrying the set overrides."""
    schema = fs.schema
    if schema is None or not schema.refusals:
        return []
    model = model or {}
    order = {id(e): i for i, e in enumerate(e for layer in fs.layers for e in layer.entries)}
    cache: dict = {}
    out = []
    for r in schema.refusals:
        reads = r["reads"]
        flags = [k for k in reads if k in cli]
        if not flags and "model_name" in cli and any(k in model for k in reads):
            flags = ["model_name"]  # the values come from the model config the flags chose
        if not flags or any(k in env_keys for k in reads):
            continue
        values = {}
        for k in reads:
            if k not in cache:
                cache[k] = _value(schema, cli, model, k)
            values[k] = cache[k]
        if any(v is _MISSING for v in values.values()):
            continue
        try:
            if not holds(r["when"], values):
                continue
        except Undecided:
            continue
        flags.sort(key=lambda k: order.get(id(cli[k][1]), -1))
        named = [k for k in flags if {"field": k} in r["message"]]  # the flag MaxText's message names
        if named:
            flags = [k for k in flags if k not in named] + named
        entry = cli[flags[-1]][1]
        related = tuple((f"'{k}' is {value_text(cli[k][1].value)} here", cli[k][1].value.span) for k in flags[:-1])
        notes = tuple(f"'{k}' is {values[k]!r} ({f'models/{model_name}.yml' if k in model else 'base.yml'})"
                      for k in reads if k not in cli)
        out.append(Diagnostic(
            "E0350", f"MaxText refuses this config: \"{message(r['message'], values)}\" "
            f"({r.get('file', 'types.py')}:{r['line']}, {r['in']})", entry.value.span, related=related,
            notes=(*notes, f"schema: {schema.path}"),
            hint="change the flags so the condition MaxText checks is false: "
            + ", ".join(f"{k}={values[k]!r}" for k in reads)))
    return out


def merge_rules(base, new):
    """pyconfig.py ``_merge_logical_axis_rules``: the rules of ``new`` replace every rule of
    ``base`` with the same logical name, and are appended. A value that is not a list of
    rules is returned as it is (pydantic's to refuse)."""
    if not new:
        return base
    if type(base) is not list or type(new) is not list or not all(type(r) is list and r for r in [*base, *new]):
        return new
    names = {r[0] for r in new}
    return [r for r in base if r[0] not in names] + list(new)


def _value(schema, cli: dict, model: dict, key: str):
    """The value pydantic validates for ``key`` (flag, model config, base.yml / types.py
    default), as pydantic makes it; ``_MISSING`` when unknown or refused by the schema."""
    if key == "logical_axis_rules":  # merged rule by rule: base.yml's, the model config's, the flags'
        raw = merge_rules(merge_rules(schema.defaults.get(key) or [], model.get(key) or []),
                          cli[key][0] if key in cli else [])
    elif key in cli:
        raw = cli[key][0]
    elif key in model:
        raw = model[key]
    elif key in schema.defaults:
        raw = schema.defaults[key]
    else:
        return _MISSING
    if type(raw) is str and raw.lower() == "none":
        raw = None
    try:
        return lax.validate(schema.type_of(key), raw)
    except (lax.Invalid, KeyError, ValueError):
        return _MISSING
