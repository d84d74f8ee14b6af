"""``rcpc explain``: where a flag's effective value comes from (docs/maxtext.md, provenance).

For one key of one flag set, evaluated for a variant: the effective (last-wins) value and
the chain of every layer that set the key, with its value, ``file:line:col``, and why the
layer was active (the condition that chose it and the params (or, inside a function, the
arguments) it named; for a layer made inside a library function, each call site that led
there), plus the schema
default when the flag set was checked against a MaxText schema, and the ``M_<KEY>``
environment overrides of the containers that carry the flag set (MaxText reads those too).
"""

from __future__ import annotations

from pathlib import Path

from rcpc.core.diagnostics import did_you_mean, error
from rcpc.core.source import COMMAND_LINE_SPAN
from rcpc.core.values import Str
from rcpc.domain.flag_overrides import apply_flags
from rcpc.domain.launch import ENV_PREFIX, env_overrides
from rcpc.domain.maxtext.emit import value_text
from rcpc.core.emit.scalars import scalar_str
from rcpc.domain.maxtext.mesh import EffectiveValues, _UNKNOWN
from rcpc.domain.overrides import Overrides
from rcpc.domain.recipe import Compiler
from rcpc.domain.renders import carried, kind_of
from rcpc.domain.values import FlagSet


def _evaluated(compiler: Compiler, path: Path, variant: str | None, sets):
    """(recipe, the variant's name, its evaluation) of ``--variant`` (default ``default``) or
    param overrides (``--set`` items, or an :class:`~rcpc.domain.overrides.Overrides`:
    values files and ``--flag`` items too). ``E0607`` for an unknown variant."""
    recipe, _ = compiler.recipe(path)
    overrides = Overrides.of(sets)
    if overrides.params:
        name, raw = "custom", compiler.param_overrides(overrides)[0]
    else:
        name = variant or "default"
        raw = dict(recipe.variant(name).sets.items)
    result = compiler.evaluate(path, raw)
    if overrides.flags:  # the renders as built with them (the names bound in the recipe as written)
        result.renders = apply_flags(result.renders, overrides.flags, compiler.context.warn)
        name = "custom"
    return recipe, name, result


def effective(compiler: Compiler, path: Path, render: str, variant: str | None = None,
              sets: list[str] | None = None) -> dict:
    """``rcpc explain --effective``: the whole config MaxText starts with for the flag set
    ``render`` carries (a render's name, or a name bound to a flag set), as plain data: every
    key of base.yml, the model config ``model_name`` loads (``models/<name>.yml``), the flags,
    and the ``M_<KEY>`` variables of the container that carries them, each value with where it
    comes from, in MaxText's precedence (the flag, then the env, then the model config, then
    base.yml; MaxText ``pyconfig.initialize``). ``E0620`` for a render carrying no flag set
    or several; ``E0621`` when the flag set has no MaxText schema to start from."""
    recipe, name, result = _evaluated(compiler, path, variant, sets)
    (fs, _), container, where = _find(result, render), None, render
    for r in result.renders:
        if render in (r.name, kind_of(r).file_name(r)):
            found = carried(r)
            container = found[0].container if found else None
            where = kind_of(r).file_name(r)
    if fs.schema is None:  # rcp.toml names none, or the flag set says schema = None (MaxDiffusion's flags)
        hint = ('name one in rcp.toml (maxtext_schema = "builtin:maxtext") or in maxtext_flags(schema = ...)'
                if compiler.workspace.maxtext_schema is None else
                "the flag set is made with schema = None (not MaxText's flags): --effective shows MaxText's "
                "config only; explain one KEY instead")
        raise error("E0621", f"flag set '{render}' has no MaxText schema to start from", fs.span, hint=hint)
    env = {n: (v, v.span if v is not None else item.span) for n, v, item in env_overrides(container)} \
        if container is not None else {}
    values = EffectiveValues(fs, env)
    model = values.start("model_name")
    keys = list(dict.fromkeys([*fs.schema.defaults, *values.model, *values.cli]))
    rows = []
    for key in keys:
        value, at = values.raw(key)
        source = values.source(key)
        if source == "flag":
            label = _where(values.cli[key].key_span)
        elif source == "env":
            label = f"{at[0].split(' = ')[0]} of container {_name(container)} in {where}" if at else "env"
        elif source == "model":
            label = f"models/{model}.yml"
        else:
            label = source
        shown = "(MaxText cannot read the env value)" if value is _UNKNOWN else _yaml_text(value)
        rows.append({"key": key, "value": shown, "source": source, "from": label})
    return {"recipe": recipe.name, "variant": name, "render": where, "schema": fs.schema.path,
            "model": model if model not in (None, "default") else None, "config": rows}


def _name(container) -> str:
    n = container.items.get("name") if container is not None else None
    return repr(n.value) if type(n) is Str else "?"


def explain(compiler: Compiler, path: Path, flagset: str, key: str, variant: str | None = None,
            sets: list[str] | None = None) -> dict:
    """The provenance report as plain data (see the module docstring). ``flagset`` is a
    top-level name bound to a flag set, or a render (``trainer``, ``trainer.flags``,
    ``trainer.yaml``, ``launch.sh``) that carries one flag set (the render protocol,
    :func:`rcpc.domain.renders.carried`: the tokens MaxText reads there). Errors: ``E0607`` unknown variant, ``E0620`` no such flag set,
    ``E0616`` a key no layer of the flag set sets and no ``M_<KEY>`` environment variable of
    its containers sets (did-you-mean over the keys it sets)."""
    recipe, name, result = _evaluated(compiler, path, variant, sets)
    fs, embedded = _find(result, flagset)
    overrides = Overrides.of(sets)
    given = {f.shown for f in compiler.param_overrides(overrides)[1]} | {COMMAND_LINE_SPAN.path}
    chain = []
    if embedded is None:
        for index, layer in enumerate(fs.layers, 1):
            for e in layer.entries:
                if e.key == key:
                    chain.append(_step(compiler, e, e, index, layer.why, given))
    else:  # the tokens a render carries, each as the container receives it
        for t, _ in embedded.tokens:
            if t.key == key:
                chain.append(_step(compiler, t.entry, embedded.received(t.entry), t.layer, t.why, given))
    env = _env(result, fs, key)
    if not chain and not env:
        keys = list(dict.fromkeys(e.key for layer in fs.layers for e in layer.entries))
        shown = ", ".join(keys[:12]) + (", …" if len(keys) > 12 else "")
        raise error("E0616", f"flag set '{flagset}' does not set '{key}' in variant {name}", fs.span,
                    hint=did_you_mean(key, keys) or (f"keys set: {shown}" if keys else "it sets no keys"))
    report = {"recipe": recipe.name, "variant": name, "flag_set": flagset, "key": key,
              # not on the command line, MaxText takes the M_<KEY> environment value
              "effective": chain[-1].get("received", chain[-1]["value"]) if chain else env[-1]["value"],
              "chain": chain, "env": env}
    if fs.schema is not None:
        report["schema"] = fs.schema.path
        report["in_schema"] = key in fs.schema.defaults
        report["schema_default"] = _yaml_text(fs.schema.defaults.get(key)) if key in fs.schema.defaults else None
    return report


def _step(compiler: Compiler, written, received, layer: int, why: tuple, given: set) -> dict:
    """One step of explain's chain: the value as written, and as the container receives it
    when Kubernetes' ``$(VAR)`` expansion changes it (``received``); ``value_from``, where a
    param's value came from when it is one of ``given`` (a values file, ``--set``)."""
    step = {"value": value_text(written.value), "location": _where(written.key_span), "layer": layer,
            "active": _why(compiler, why)}
    if received is not written:
        step["received"] = value_text(received.value)
    span = written.value.span
    if span.path in given:
        step["value_from"] = span.path if span == COMMAND_LINE_SPAN else str(span)
    return step


def _where(span) -> str:
    """Where a flag is set: ``path:line:col``, or a ``--flag`` item (a span of no line)."""
    return span.path if span.line == 0 else str(span)


def _env(result, fs: FlagSet, key: str) -> list[dict]:
    name = ENV_PREFIX + key.split(".")[0].upper()
    out = []
    for r in result.renders:
        for e in carried(r):
            if e.container is None or e.seen() is not fs and e.flags is not fs:
                continue
            for env_name, value, item in env_overrides(e.container):
                if env_name == name:
                    cname = e.container.items.get("name")
                    out.append({"name": env_name, "value": value.value if type(value) is Str else None,
                                "location": str(item.items["name"].span),
                                "container": cname.value if type(cname) is Str else "?",
                                "render": kind_of(r).file_name(r)})
    return out


def _find(result, name: str) -> tuple:
    """(the flag set named ``name``, the :class:`~rcpc.domain.embedding.Embedding` it was
    read from: None for a name bound to a flag set)."""
    value = result.exports.get(name)
    if type(value) is FlagSet:
        return value, None
    for r in result.renders:
        if name in (r.name, kind_of(r).file_name(r)):
            sets = {tuple(id(t.entry) for t, _ in e.tokens): e for e in carried(r)}  # one per token sequence
            if len(sets) == 1:
                (e,) = sets.values()
                return e.seen(), e
            if sets:
                raise error("E0620", f"render '{name}' carries {len(sets)} flag sets", None,
                            hint="name the flag set by the constant it is bound to")
    candidates = [k for k, v in result.exports.items() if type(v) is FlagSet]
    candidates += [kind_of(r).file_name(r) for r in result.renders if carried(r)]
    raise error("E0620", f"no flag set named '{name}'", None,
                hint=did_you_mean(name, candidates) or f"flag sets: {', '.join(candidates) or 'none'}")


def _why(compiler: Compiler, why: tuple) -> str:
    if not why:
        return "always"
    parts = []
    for span, value, params in why:
        src = compiler.sources.get(span.path)
        text = src.text_of(span) if src else "condition"
        if value is None:  # a function call it was made in
            parts.append(f"made in {params}() called as `{text}` at {span}")
            continue
        part = f"`{text}` is {'true' if value else 'false'} at {span}"
        if params:
            part += " with " + ", ".join(f"{n}={v}" for n, v in params)
        parts.append(part)
    return "; ".join(parts)


def _yaml_text(default) -> str:
    if default is None:
        return "null"
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, str):
        return scalar_str(default)
    return repr(default)
