"""What MaxText is started with, per flag set a variant renders: the flag set, the devices and
slices it finds (the TPU slice a container's pod selects, times the replicated job's
``replicas``), and the variables of the container's env MaxText's loader reads (``M_<KEY>``,
``XLA_FLAGS``). The input of the MaxText
oracle (:mod:`rcpc.oracle`, ``rcpc check --maxtext``), which runs MaxText's own loader on each.

Found as :mod:`rcpc.domain.launch`'s checks find them (the render protocol: every flag set a
render carries, in any shape, and the slice its container's pod selects). Where the
workspace names a MaxText schema, a flag set checked against none (``schema = None``: another
trainer's flags) is not MaxText's config and is left out.
"""

from __future__ import annotations

from rcpc.core import record
from rcpc.core.source import Span
from rcpc.core.values import Dict, List, Str
from rcpc.domain.launch import env_overrides, loader_env, render_sites
from rcpc.domain.values import FlagSet


@record.frozen
class Launch:
    """One start of MaxText: ``flags`` (its argv), ``devices`` (all the devices of all its
    slices; None when no TPU slice is known, as for a ``flag_file``), ``slices`` (at least
    1), ``env`` (``(name, text, span)`` of each ``M_`` variable with a literal value, in env
    order, then each other variable MaxText's loader can refuse on,
    :func:`rcpc.domain.launch.loader_env`) and ``span`` (the container or flag file)."""

    flags: FlagSet
    devices: int | None
    slices: int
    env: tuple
    span: Span


def launches(renders, unchecked: bool = False) -> list[Launch]:
    """The launches of a variant's renders (values of any render kind): one for each flag set a
    render carries (:func:`rcpc.domain.launch.render_sites`, the render protocol: a
    ``flag_file``, a container's ``command``/``args`` in argv or shell form, a
    ``command_file``), with the slices of the pod holding it when it selects a TPU slice. A flag
    set that a TPU pod's container carries is not also listed without a slice. Flag sets
    without a schema are kept only when ``unchecked`` (the workspace names no schema)."""
    out: list = []
    memo: dict = {}
    for r in renders:
        embedded, pods = render_sites(r, memo)
        for e in embedded:
            c = e.container
            pod = pods.get(id(c)) if c is not None else None
            devices, slices = (pod[1].devices * pod[2], pod[2]) if pod is not None else (None, 1)
            out.append(Launch(e.seen(), devices, slices, _env(c) if c is not None else (),
                              c.span if c is not None else r.span))
    sliced = {id(x.flags) for x in out if x.devices is not None}
    return [x for x in out if (unchecked or x.flags.schema is not None)
            and (x.devices is not None or id(x.flags) not in sliced)]


def _env(container: Dict) -> tuple:
    if type(container.items.get("env")) is not List:
        return ()
    found: dict = {}
    for name, value, item in env_overrides(container):  # a later entry wins, as in the kubelet
        if type(value) is Str:
            found[name] = (name, value.value, value.span)
    for name, text, item in loader_env(container):
        found[name] = (name, text, item.items["name"].span)
    return tuple(found.values())


def recipe_launches(compiler, real, unchecked: bool = False) -> list[Launch]:
    """The launches of every variant of the recipe file ``real``, evaluated by ``compiler`` (a
    :class:`~rcpc.domain.recipe.Compiler`): the default evaluation's and each declared
    variant's with its ``set`` params. A flag set is found whatever errors the evaluation
    reported (the oracle judges it on its own). Raises CompileError when the recipe cannot be
    evaluated at all (a syntax error: the check reports it). ``unchecked`` as for
    :func:`launches`."""
    result = compiler.evaluate(real, {})
    out = launches(result.renders, unchecked)
    for v in result.variants:
        if v.sets.items:
            other = compiler.evaluate(real, dict(v.sets.items), declare_variants=False)
            out += launches(other.renders, unchecked)
    return out
