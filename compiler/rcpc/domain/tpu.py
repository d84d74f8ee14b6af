"""TPU slice facts for GKE: generation, chips per host, devices per chip, the node labels
that select a slice's nodes, the machine type, and which topologies exist.

Sources (Google Cloud documentation, "TPUs in GKE" / "Plan TPUs in GKE" and the per-version
system-architecture pages):

* v4: accelerator label ``tpu-v4-podslice``, machine ``ct4p-hightpu-4t``, 4 chips a host,
  one JAX device a chip (megacore), 3-D topologies ``AxBxC``.
* v5p: ``tpu-v5p-slice``, ``ct5p-hightpu-4t``, 4 chips a host, one device a chip, 3-D; a
  slice of a cube (4x4x4) or more is whole cubes, each dimension a multiple of 4 (``4x4x12``),
  up to ``16x16x24`` (6,144 chips, the largest slice of the 8,960-chip pod; "TPU v5p",
  Configurations).
* v5e: ``tpu-v5-lite-podslice``, 2-D topologies; single-host ``1x1`` (``ct5lp-hightpu-1t``),
  ``2x2`` (``ct5lp-hightpu-4t``), ``2x4`` (``ct5lp-hightpu-8t``); multi-host slices use
  ``ct5lp-hightpu-4t`` (4 chips a host): ``4x4``, ``4x8``, ``8x8``, ``8x16`` and ``16x16``
  only (:data:`MULTI_HOST_2D`).
* v6e (Trillium): ``tpu-v6e-slice``, as v5e with ``ct6e-standard-{1,4,8}t``.
* v7x (Ironwood): ``tpu7x``, ``tpu7x-standard-4t``, 4 chips a host, two devices (TensorCores
  exposed separately) a chip, 3-D topologies (reference/rl-397b-v7x.md: 4x4x8 = 128 chips =
  256 devices = 32 hosts).

The node selector of a slice is ``cloud.google.com/gke-tpu-accelerator`` and
``cloud.google.com/gke-tpu-topology``; under GKE dynamic slicing (as XPK writes it) the pod
template gives the topology in its ``cloud.google.com/gke-tpu-slice-topology`` annotation.
"""

from __future__ import annotations

from rcpc.core import record
from rcpc.core.diagnostics import CompileError, error
from rcpc.core import patterns
from rcpc.core.source import Span
from rcpc.domain.values import TpuSlice

ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
# A pod template's annotation naming its slice's topology under GKE dynamic slicing (the
# XPK-generated manifests select only the accelerator and give the topology here).
SLICE_TOPOLOGY_ANNOTATION = "cloud.google.com/gke-tpu-slice-topology"


@record.frozen
class Generation:
    """Facts of one TPU generation. ``single_host`` maps a single-host topology to (machine
    type or None for ``machine_type``, chips of that host); other topologies are multi-host
    slices of ``chips_per_host``-chip ``machine_type`` hosts."""

    name: str
    accelerator: str
    machine_type: str
    chips_per_host: int
    devices_per_chip: int
    dims: int
    max_chips: int
    single_host: dict = record.field(factory=dict)
    cubes: bool = False  # a slice of 4x4x4 or more is whole cubes: dimensions multiples of 4
    type_prefix: str = ""  # the accelerator type's name before '-' (v5p-16, tpu7x-4x4x4)
    tensorcores_per_chip: int = 1  # the count an accelerator type's name gives is of TensorCores


_3D = dict(dims=3, single_host={"2x2x1": (None, 4)})
GENERATIONS = {
    g.name: g for g in (
        Generation("v4", "tpu-v4-podslice", "ct4p-hightpu-4t", 4, 1, max_chips=4096, type_prefix="v4",
                   tensorcores_per_chip=2, **_3D),
        Generation("v5p", "tpu-v5p-slice", "ct5p-hightpu-4t", 4, 1, max_chips=6144, cubes=True, type_prefix="v5p",
                   tensorcores_per_chip=2, **_3D),
        Generation("v7x", "tpu7x", "tpu7x-standard-4t", 4, 2, max_chips=9216, type_prefix="tpu7x",
                   tensorcores_per_chip=2, **_3D),
        Generation("v5e", "tpu-v5-lite-podslice", "ct5lp-hightpu-4t", 4, 1, dims=2, max_chips=256,
                   single_host={"1x1": ("ct5lp-hightpu-1t", 1), "2x2": ("ct5lp-hightpu-4t", 4),
                                "2x4": ("ct5lp-hightpu-8t", 8)}, type_prefix="v5litepod"),
        Generation("v6e", "tpu-v6e-slice", "ct6e-standard-4t", 4, 1, dims=2, max_chips=256,
                   single_host={"1x1": ("ct6e-standard-1t", 1), "2x2": ("ct6e-standard-4t", 4),
                                "2x4": ("ct6e-standard-8t", 8)}, type_prefix="v6e"),
    )
}
# The values GKE labels TPU nodes with (cloud.google.com/gke-tpu-accelerator).
GKE_ACCELERATORS = frozenset(g.accelerator for g in GENERATIONS.values())

# Spellings accepted before the ':' (GKE accelerator labels and Cloud TPU version names).
ALIASES = {
    "v4": "v4", "tpu-v4-podslice": "v4",
    "v5p": "v5p", "tpu-v5p-slice": "v5p",
    "v5e": "v5e", "v5litepod": "v5e", "tpu-v5-lite-podslice": "v5e",
    "v6e": "v6e", "tpu-v6e-slice": "v6e",
    "v7x": "v7x", "tpu7x": "v7x",
}


# The multi-host 2-D topologies GKE offers for v5e and v6e ("Plan TPUs in GKE", the v5e/v6e
# tables): the first dimension is the smaller one, as in the label ('8x4' selects no node).
MULTI_HOST_2D = ((4, 4), (4, 8), (8, 8), (8, 16), (16, 16))
_TOPOLOGY = patterns.precompiled(r"[1-9][0-9]*(?:x[1-9][0-9]*)*")


def _cube(chips: int) -> str:
    """The 3-D topology of ``chips`` (a power of two, at least 8) closest to a cube, smallest
    dimension first (``16`` → ``2x2x4``)."""
    k = chips.bit_length() - 1
    return "x".join(str(2 ** (k // 3 + (i >= 3 - k % 3))) for i in range(3))


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def tpu_slice(spec: str, span: Span) -> TpuSlice:
    """Parse ``"<generation>:<topology>"`` (e.g. ``"tpu7x:4x4x8"``) into a :class:`TpuSlice`.

    Topology rules: the generation's number of dimensions, written in ASCII digits without
    leading zeros; every dimension a power of two; 3-D slices written with non-decreasing
    dimensions, each at least 2 (``2x2x1`` being the one single-host 3-D shape); multi-host
    slices a whole number of hosts; at most the generation's largest slice. Raises
    :class:`CompileError` ``E0401`` naming the rule broken.
    """
    gen_name, sep, topology = spec.partition(":")
    gen_key = ALIASES.get(gen_name.strip().lower())
    if not sep or gen_key is None:
        raise error("E0401", f"bad TPU slice {spec!r}", span,
                    hint="write '<generation>:<topology>', e.g. 'tpu7x:4x4x8'; generations: "
                    + ", ".join(sorted(ALIASES)))
    gen = GENERATIONS[gen_key]
    # ASCII digits without a leading zero only: int() alone accepts " 8", "+8", "08" and "٨",
    # which would put a non-canonical topology into the node selector label.
    if _TOPOLOGY.fullmatch(topology):
        dims = tuple(int(d) if len(d) <= 6 else 0 for d in topology.split("x"))
    else:
        dims = ()
    if len(dims) != gen.dims or not all(dims):
        shape = "x".join(["N"] * gen.dims)
        raise error("E0401", f"bad topology {topology!r} for TPU {gen.name}", span,
                    hint=f"{gen.name} topologies are {gen.dims} positive whole numbers without leading "
                    f"zeros, joined by a lower-case 'x': '{shape}'")
    chips = 1
    for d in dims:
        chips *= d
    single = gen.single_host.get(topology)
    if single is not None:
        machine, chips_per_host = single[0] or gen.machine_type, single[1]
        hosts = 1
    else:
        problem = hint = None
        several = "more chips than one slice has are several slices: num_slices, a JobSet's replicas"
        whole_cubes = gen.cubes and min(dims) >= 4
        if whole_cubes and any(d % 4 for d in dims):
            problem = "a slice of a cube (4x4x4) or more is whole cubes: every dimension a multiple of 4"
            hint = "write each dimension as 4, 8, 12, 16, ..."
        elif not whole_cubes and not all(_pow2(d) for d in dims):
            problem = "every dimension must be a power of two"
            hint = "write each dimension as 1, 2, 4, 8, 16, ..."
        elif gen.dims == 3 and list(dims) != sorted(dims):
            problem = f"dimensions are written smallest first ('{'x'.join(map(str, sorted(dims)))}')"
            hint = f"write '{'x'.join(map(str, sorted(dims)))}'"
        elif chips % gen.chips_per_host:
            problem = f"a multi-host slice is a whole number of {gen.chips_per_host}-chip hosts"
            hint = f"single-host topologies of {gen.name}: {', '.join(gen.single_host)}"
        elif chips > gen.max_chips:
            problem = f"the largest {gen.name} slice has {gen.max_chips} chips"
            hint = several
        elif gen.dims == 3 and min(dims) < 2:
            # GKE's 3-D topologies are 2x2x1 (one host) and then 2x2x2, 2x2x4, 2x4x4, ...
            problem = "multi-host 3-D slices are at least 2 in every dimension (single-host: 2x2x1)"
            hint = f"{chips} chips are '{_cube(chips)}'" if chips >= 8 else "write 2x2x1 for one host"
        elif gen.dims == 2 and dims not in MULTI_HOST_2D:
            shown = ", ".join("x".join(map(str, d)) for d in MULTI_HOST_2D)
            problem = f"GKE's multi-host v5e/v6e slices are {shown} (single-host: 1x1, 2x2, 2x4)"
            if tuple(sorted(dims)) in MULTI_HOST_2D or "x".join(map(str, sorted(dims))) in gen.single_host:
                hint = f"the smaller dimension comes first: '{'x'.join(map(str, sorted(dims)))}'"
            else:
                hint = "more chips than one slice has are several slices: num_slices, a JobSet's replicas"
        if problem:
            raise error("E0401", f"TPU {gen.name} has no topology {topology!r}: {problem}", span, hint=hint)
        machine, chips_per_host = gen.machine_type, gen.chips_per_host
        hosts = chips // chips_per_host
    return TpuSlice(gen.name, gen.accelerator, topology, dims, chips, hosts, chips_per_host,
                    gen.devices_per_chip, machine, span)


# Accelerator types ----------------------------------------------------------------------------
# Cloud TPU's and XPK's names of a slice (`gcloud compute tpus accelerator-types list`; XPK's
# src/xpk/core/system_characteristics.py, get_tpu_system_characteristics_map, which gives each
# topology both names): `<prefix>-<topology>` (tpu7x-4x4x4, v5p-2x2x2) and `<prefix>-<count>`,
# the count being TensorCores (two a chip on v4, v5p and v7x: v5p-16 is 8 chips, 2x2x2) or
# chips (v5e, v6e: v6e-256 is 16x16).
_PREFIXES = {g.type_prefix: g for g in GENERATIONS.values()}
_TYPE = patterns.LazyPattern(r"([a-z0-9]+)-([1-9][0-9]*(?:x[1-9][0-9]*)*)")


def accelerator_type_name(s: TpuSlice) -> str:
    """The accelerator type of slice ``s`` with a count (``v5p-16``, ``v6e-256``, ``tpu7x-128``)."""
    g = GENERATIONS[s.generation]
    return f"{g.type_prefix}-{s.chips * g.tensorcores_per_chip}"


def device_type_name(s: TpuSlice) -> str:
    """The accelerator type of slice ``s`` with its topology (``tpu7x-4x4x4``): XPK's other
    spelling of a device type (``xpk workload create --device-type``)."""
    return f"{GENERATIONS[s.generation].type_prefix}-{s.topology}"


def accelerator_type(name: str) -> str | None:
    """The ``tpu_slice`` spec (``"v5p:2x2x2"``) of an accelerator type (``v5p-16``,
    ``tpu7x-4x4x4``, ``v6e-256``), None when ``name`` is not one of a slice :func:`tpu_slice`
    accepts. A count names the topology XPK gives it: of the generation's topologies with that
    many chips, the one closest to a cube (the smallest largest dimension, then the smallest
    next: v5p-512 is 4x8x8, not 4x4x16)."""
    m = _TYPE.fullmatch(name)
    gen = _PREFIXES.get(m.group(1)) if m else None
    if gen is None:
        return None
    span = Span("<accelerator type>", 1, 1, 1, 1)
    if "x" in m.group(2):
        candidates = [m.group(2)]
    else:
        count = int(m.group(2)) if len(m.group(2)) <= 6 else 0
        if count % gen.tensorcores_per_chip:
            return None
        candidates = _topologies(count // gen.tensorcores_per_chip, gen.dims)
    for topology in candidates:
        try:
            tpu_slice(f"{gen.name}:{topology}", span)
        except CompileError:
            continue
        return f"{gen.name}:{topology}"
    return None


def _topologies(chips: int, dims: int) -> list:
    """The topologies of ``chips`` chips in ``dims`` dimensions, smallest dimension first, the
    one closest to a cube first."""
    if chips < 1 or chips > max(g.max_chips for g in GENERATIONS.values()):
        return []
    found = set()

    def split(rest: int, left: int, least: int, dims_so_far: tuple) -> None:
        if left == 1:
            if rest >= least:
                found.add(dims_so_far + (rest,))
            return
        for d in range(max(least, 1), rest + 1):
            if rest % d == 0:
                split(rest // d, left - 1, d, dims_so_far + (d,))

    split(chips, dims, 1, ())
    if dims == 3 and chips == 4:
        found.add((2, 2, 1))  # the single-host 3-D slice is written 2x2x1
    return ["x".join(map(str, t)) for t in sorted(found, key=lambda t: sorted(t, reverse=True))]
