"""``rcpc explain``: where a flag's effective value comes from (DESIGN.md §3.1 provenance).

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
from rcpc.domain.emit.flags import value_text
from rcpc.core.emit.scalars import scalar_str
from rcpc.domain.recipe import Compiler, parse_sets
from rcpc.domain.values import FlagSet


def explain(compiler: Compiler, path: Path, flagset: str, key: str, variant: str | None = None,
            sets: list[str] | None = None) -> dict:
    """The provenance report as plain data (see the module docstring). ``flagset`` is a
    top-level name bound to a flag set, or a render (``trainer``, ``trainer.flags``,
    ``trainer.yaml``, ``launch.sh``) that carries one flag set (the render protocol,
    :func:`rcpc.domain.renders.carried`: the tokens MaxText reads there). Errors: ``E0607`` unknown variant, ``E0620`` no such flag set,
    ``E0616`` a key no layer of the flag set sets and no ``M_<KEY>`` environment variable of
    its containers sets (did-you-mean over the keys it sets)."""
    recipe, _ = compiler.recipe(path)
    if sets:
        overrides, name = parse_sets(sets), "custom"
    else:
        name = variant or "default"
        chosen = [v for v in recipe.variants if v.name == name]
        if not chosen:
            names = [v.name for v in recipe.variants]
            raise error("E0607", f"recipe {recipe.name} has no variant '{name}'", None,
                        hint=did_you_mean(name, names) or f"variants: {', '.join(names)}")
        overrides = dict(chosen[0].sets.items)
    result = compiler.evaluate(path, overrides)
    fs = _find(result, flagset)
    chain = []
    for index, layer in enumerate(fs.layers, 1):
        for e in layer.entries:
            if e.key == key:
                chain.append({"value": value_text(e.value), "location": str(e.key_span), "layer": index,
                              "active": _why(compiler, layer.why)})
    env = _env(result, fs, key)
    if not chain and not env:
        keys = list(dict.fromkeys(e.key for layer in fs.layers for e in layer.entries))
        shown = ", ".join(keys[:12]) + (", …" if len(keys) > 12 else "")
        raise error("E0616", f"flag set '{flagset}' does not set '{key}' in variant {name}", fs.span,
                    hint=did_you_mean(key, keys) or (f"keys set: {shown}" if keys else "it sets no keys"))
    report = {"recipe": recipe.name, "variant": name, "flag_set": flagset, "key": key,
              # not on the command line, MaxText takes the M_<KEY> environment value
              "effective": chain[-1]["value"] if chain else env[-1]["value"], "chain": chain, "env": env}
    if fs.schema is not None:
        report["schema"] = fs.schema.path
        report["in_schema"] = key in fs.schema.defaults
        report["schema_default"] = _yaml_text(fs.schema.defaults.get(key)) if key in fs.schema.defaults else None
    return report


def _env(result, fs: FlagSet, key: str) -> list[dict]:
    from rcpc.core.values import Str
    from rcpc.domain.launch import ENV_PREFIX, env_overrides
    from rcpc.domain.renders import carried, kind_of

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


def _find(result, name: str) -> FlagSet:
    from rcpc.domain.renders import carried, kind_of

    value = result.exports.get(name)
    if type(value) is FlagSet:
        return value
    for r in result.renders:
        if name in (r.name, kind_of(r).file_name(r)):
            sets = {tuple(id(t.entry) for t, _ in e.tokens): e for e in carried(r)}  # one per token sequence
            if len(sets) == 1:
                (e,) = sets.values()
                return e.seen()
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
