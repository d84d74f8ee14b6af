"""``rcpc explain``: where a flag's effective value comes from (DESIGN.md §3.1 provenance).

For one key of one flag set, evaluated for a variant: the effective (last-wins) value and
the chain of every layer that set the key, with its value, ``file:line:col``, and why the
layer was active (the condition that chose it and the params it named), plus the schema
default when the flag set was checked against a MaxText schema, and the ``M_<KEY>``
environment overrides of the containers that carry the flag set (MaxText reads those too).
"""

from __future__ import annotations

from pathlib import Path

from rcpc.diagnostics import did_you_mean, error
from rcpc.emit.flags import value_text
from rcpc.emit.scalars import scalar_str
from rcpc.recipe import Compiler, parse_sets
from rcpc.values import FlagFile, FlagSet


def explain(compiler: Compiler, path: Path, flagset: str, key: str, variant: str | None = None,
            sets: list[str] | None = None) -> dict:
    """The provenance report as plain data (see the module docstring). ``flagset`` is a
    top-level name bound to a flag set or a flag render's name (``trainer`` or
    ``trainer.flags``). Errors: ``E0607`` unknown variant, ``E0620`` no such flag set,
    ``E0616`` a key that neither a layer of the flag set nor an ``M_<KEY>`` environment
    override of a container carrying it sets (did-you-mean over the keys it sets)."""
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
    if not chain and not env:  # an M_<KEY> override of a carrying container sets it too
        keys = list(dict.fromkeys(e.key for layer in fs.layers for e in layer.entries))
        shown = ", ".join(keys[:12]) + (", …" if len(keys) > 12 else "")
        raise error("E0616", f"flag set '{flagset}' does not set '{key}' in variant {name}", fs.span,
                    hint=did_you_mean(key, keys) or (f"keys set: {shown}" if keys else "it sets no keys"))
    report = {"recipe": recipe.name, "variant": name, "flag_set": flagset, "key": key,
              "effective": chain[-1]["value"] if chain else env[-1]["value"], "chain": chain}
    report["env"] = env
    if fs.schema is not None:
        report["schema"] = fs.schema.path
        report["in_schema"] = key in fs.schema.defaults
        report["schema_default"] = _yaml_text(fs.schema.defaults.get(key)) if key in fs.schema.defaults else None
    return report


def _env(result, fs: FlagSet, key: str) -> list[dict]:
    from rcpc.launch import ENV_PREFIX, carried_flag_sets, containers, env_overrides
    from rcpc.values import Manifest, Str

    name = ENV_PREFIX + key.split(".")[0].upper()
    out = []
    for r in result.renders:
        if type(r) is not Manifest:
            continue
        for c in containers(r.data):
            if not carried_flag_sets(c, [fs]):
                continue
            for env_name, value, item in env_overrides(c):
                if env_name == name:
                    cname = c.items["name"].value if type(c.items["name"]) is Str else "?"
                    out.append({"name": env_name, "value": value.value if type(value) is Str else None,
                                "location": str(item.items["name"].span), "container": cname,
                                "render": f"{r.name}.yaml"})
    return out


def _find(result, name: str) -> FlagSet:
    value = result.exports.get(name)
    if type(value) is FlagSet:
        return value
    for r in result.renders:
        if type(r) is FlagFile and name in (r.name, f"{r.name}.flags"):
            return r.flags
    candidates = [k for k, v in result.exports.items() if type(v) is FlagSet]
    candidates += [r.name for r in result.renders if type(r) is FlagFile]
    raise error("E0620", f"no flag set named '{name}'", None,
                hint=did_you_mean(name, candidates) or f"flag sets: {', '.join(candidates) or 'none'}")


def _why(compiler: Compiler, why: tuple) -> str:
    if not why:
        return "always"
    parts = []
    for span, value, params in why:
        src = compiler.sources.get(span.path)
        text = src.text_of(span) if src else "condition"
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
