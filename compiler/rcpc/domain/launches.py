"""What MaxText is started with, per flag set a variant renders: the flag set, the devices and
slices it finds (the TPU slice a container's pod selects, times the replicated job's
``replicas``), and the ``M_<KEY>`` variables of the container's env. The input of the MaxText
oracle (:mod:`rcpc.oracle`, ``rcpc check --maxtext``), which runs MaxText's own loader on each.

Found with :mod:`rcpc.domain.launch`'s readers of renders (the containers of a manifest, the
flag sets a container carries, the slice its pod selects), as its checks find them. Where the
workspace names a MaxText schema, a flag set checked against none (``schema = None``: another
trainer's flags) is not MaxText's config and is left out.
"""

from __future__ import annotations

from rcpc.core import record
from rcpc.core.source import Span
from rcpc.core.values import Dict, List, Str
from rcpc.domain.launch import carried_flag_sets, containers, env_overrides, pod_containers, slice_pods
from rcpc.domain.values import FlagFile, FlagSet, Manifest


@record.frozen
class Launch:
    """One start of MaxText: ``flags`` (its argv), ``devices`` (all the devices of all its
    slices; None when no TPU slice is known, as for a ``flag_file``), ``slices`` (at least
    1), ``env`` (``(name, text, span)`` of each ``M_`` variable with a literal value, in env
    order) and ``span`` (the container or flag file)."""

    flags: FlagSet
    devices: int | None
    slices: int
    env: tuple
    span: Span


def launches(renders, flag_sets, unchecked: bool = False) -> list[Launch]:
    """The launches of a variant's renders (``Manifest`` and ``FlagFile`` values; others are
    skipped); ``flag_sets``: the flag sets the evaluation made (what a container may carry).
    A flag set that a TPU pod's container carries is not also listed without a slice. Flag
    sets without a schema are kept only when ``unchecked`` (the workspace names no schema)."""
    out: list = []
    forms: dict = {}
    for r in renders:
        if type(r) is Manifest:
            in_pods = set()
            for pod, tpu, slices, _ in slice_pods(r.data):
                for c in pod_containers(pod):
                    in_pods.add(id(c))
                    env = _env(c)
                    for fs in carried_flag_sets(c, flag_sets, forms):
                        out.append(Launch(fs, tpu.devices * slices, slices, env, c.span))
            for c in containers(r.data):
                if id(c) not in in_pods:
                    out.extend(Launch(fs, None, 1, _env(c), c.span) for fs in carried_flag_sets(c, flag_sets, forms))
        elif type(r) is FlagFile:
            out.append(Launch(r.flags, None, 1, (), r.span))
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
    return tuple(found.values())


def recipe_launches(compiler, real, unchecked: bool = False) -> list[Launch]:
    """The launches of every variant of the recipe file ``real``, evaluated by ``compiler`` (a
    :class:`~rcpc.domain.recipe.Compiler`): the default evaluation's and each declared
    variant's with its ``set`` params. A flag set is found whatever errors the evaluation
    reported (the oracle judges it on its own). Raises CompileError when the recipe cannot be
    evaluated at all (a syntax error: the check reports it). ``unchecked`` as for
    :func:`launches`."""
    result = compiler.evaluate(real, {})
    out = launches(result.renders, flag_sets_of(result), unchecked)
    for v in result.variants:
        if v.sets.items:
            other = compiler.evaluate(real, dict(v.sets.items), declare_variants=False)
            out += launches(other.renders, flag_sets_of(other), unchecked)
    return out


def flag_sets_of(result) -> list[FlagSet]:
    """The flag sets an evaluation made: those it collected and those bound at top level, each
    once."""
    found = [*result.collected, *(v for v in result.exports.values() if type(v) is FlagSet)]
    return list({id(fs): fs for fs in found}.values())
