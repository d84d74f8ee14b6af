"""``tpu_slice("<generation>:<topology>")`` (DESIGN.md §3.3): the facts of each TPU generation
on GKE (chips, hosts, devices, node selector, machine type) and bad topologies as errors.

Facts: Google Cloud "Plan TPUs in GKE" and the TPU system-architecture pages; the v7x numbers
also match ../shared/reference/rl-397b-v7x.md (4x4x8 = 128 chips = 256 devices = 32 hosts)
and the published v7x JobSets in ../shared/data/tpu-recipes (4x4x8: parallelism 32,
``google.com/tpu: 4``, accelerator ``tpu7x``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from conftest import SPAN
from rcpc.core.diagnostics import CompileError
from rcpc.domain.tpu import ACCELERATOR_LABEL, TOPOLOGY_LABEL, tpu_slice

# spec, generation, accelerator label, machine type, chips, hosts, chips per host, devices
FACTS = [
    ("v4:2x2x1", "v4", "tpu-v4-podslice", "ct4p-hightpu-4t", 4, 1, 4, 4),
    ("v4:2x2x2", "v4", "tpu-v4-podslice", "ct4p-hightpu-4t", 8, 2, 4, 8),
    ("tpu-v4-podslice:4x4x4", "v4", "tpu-v4-podslice", "ct4p-hightpu-4t", 64, 16, 4, 64),
    ("v4:8x16x16", "v4", "tpu-v4-podslice", "ct4p-hightpu-4t", 2048, 512, 4, 2048),
    ("v5p:2x2x1", "v5p", "tpu-v5p-slice", "ct5p-hightpu-4t", 4, 1, 4, 4),
    ("v5p:2x4x4", "v5p", "tpu-v5p-slice", "ct5p-hightpu-4t", 32, 8, 4, 32),
    ("tpu-v5p-slice:4x4x8", "v5p", "tpu-v5p-slice", "ct5p-hightpu-4t", 128, 32, 4, 128),
    ("v5e:1x1", "v5e", "tpu-v5-lite-podslice", "ct5lp-hightpu-1t", 1, 1, 1, 1),
    ("v5e:2x2", "v5e", "tpu-v5-lite-podslice", "ct5lp-hightpu-4t", 4, 1, 4, 4),
    ("v5litepod:2x4", "v5e", "tpu-v5-lite-podslice", "ct5lp-hightpu-8t", 8, 1, 8, 8),
    ("tpu-v5-lite-podslice:4x4", "v5e", "tpu-v5-lite-podslice", "ct5lp-hightpu-4t", 16, 4, 4, 16),
    ("v5e:16x16", "v5e", "tpu-v5-lite-podslice", "ct5lp-hightpu-4t", 256, 64, 4, 256),
    ("v6e:1x1", "v6e", "tpu-v6e-slice", "ct6e-standard-1t", 1, 1, 1, 1),
    ("v6e:2x2", "v6e", "tpu-v6e-slice", "ct6e-standard-4t", 4, 1, 4, 4),
    ("v6e:2x4", "v6e", "tpu-v6e-slice", "ct6e-standard-8t", 8, 1, 8, 8),
    ("tpu-v6e-slice:8x16", "v6e", "tpu-v6e-slice", "ct6e-standard-4t", 128, 32, 4, 128),
    ("tpu7x:2x2x1", "v7x", "tpu7x", "tpu7x-standard-4t", 4, 1, 4, 8),
    ("tpu7x:2x2x4", "v7x", "tpu7x", "tpu7x-standard-4t", 16, 4, 4, 32),
    ("tpu7x:4x4x4", "v7x", "tpu7x", "tpu7x-standard-4t", 64, 16, 4, 128),
    ("tpu7x:4x4x8", "v7x", "tpu7x", "tpu7x-standard-4t", 128, 32, 4, 256),
    ("v7x:4x8x8", "v7x", "tpu7x", "tpu7x-standard-4t", 256, 64, 4, 512),
]


@pytest.mark.parametrize("spec, gen, accel, machine, chips, hosts, per_host, devices", FACTS)
def test_generation_facts(spec, gen, accel, machine, chips, hosts, per_host, devices):
    s = tpu_slice(spec, SPAN)
    topology = spec.split(":")[1]
    assert (s.generation, s.accelerator, s.topology, s.machine_type) == (gen, accel, topology, machine)
    assert (s.chips, s.hosts, s.chips_per_host, s.devices) == (chips, hosts, per_host, devices)
    assert s.hosts * s.chips_per_host == s.chips
    assert s.devices_per_chip == (2 if gen == "v7x" else 1)
    assert s.dims == tuple(int(d) for d in topology.split("x"))


@pytest.mark.parametrize("spec, gen, accel, machine, chips, hosts, per_host, devices", FACTS)
def test_slice_attributes_in_a_recipe(ws, spec, gen, accel, machine, chips, hosts, per_host, devices):
    topology = spec.split(":")[1]
    got = ws.py("[S.generation, S.accelerator, S.topology, S.name, S.machine_type, S.chips, S.hosts, "
                "S.chips_per_host, S.devices, S.node_selector]", f'S = tpu_slice("{spec}")\n')
    assert got == [gen, accel, topology, f"{accel}:{topology}", machine, chips, hosts, per_host, devices,
                   {ACCELERATOR_LABEL: accel, TOPOLOGY_LABEL: topology}]


def test_node_selector_labels():
    assert ACCELERATOR_LABEL == "cloud.google.com/gke-tpu-accelerator"
    assert TOPOLOGY_LABEL == "cloud.google.com/gke-tpu-topology"


def test_v7x_slice_matches_the_published_jobset(ws):
    """The recipe-built JobSet pieces agree with AI-Hypercomputer/tpu-recipes' 4x4x8 manifest."""
    ref_path = Path(__file__).resolve().parents[2] / "shared/data/tpu-recipes/deepseek3-671b_4k-bf16-tpu7x-4x4x8.yaml"
    ref = yaml.safe_load(ref_path.read_text())
    job = ref["spec"]["replicatedJobs"][0]["template"]["spec"]
    pod = job["template"]["spec"]
    got = ws.py('{"parallelism": S.hosts, "completions": S.hosts, "nodeSelector": S.node_selector, '
                '"tpu": S.chips_per_host}', 'S = tpu_slice("tpu7x:4x4x8")\n')
    assert got["parallelism"] == job["parallelism"] == 32
    assert got["completions"] == job["completions"] == 32
    for label, value in got["nodeSelector"].items():
        assert pod["nodeSelector"][label] == value
    limits = pod["containers"][0]["resources"]["limits"]
    assert str(got["tpu"]) == str(limits["google.com/tpu"])


@pytest.mark.parametrize("spec, fragment", [
    ("tpu7x", "bad TPU slice 'tpu7x'"),
    ("v9:2x2x1", "bad TPU slice 'v9:2x2x1'"),
    (":2x2x1", "bad TPU slice ':2x2x1'"),
    ("", "bad TPU slice ''"),
    ("v4:", "bad topology '' for TPU v4"),
    ("v4:4x4", "bad topology '4x4' for TPU v4"),
    ("v5e:2x2x2", "bad topology '2x2x2' for TPU v5e"),
    ("v4:2x2x1x1", "bad topology '2x2x1x1' for TPU v4"),
    ("v4:axbxc", "bad topology 'axbxc' for TPU v4"),
    ("v4:0x2x2", "bad topology '0x2x2' for TPU v4"),
    ("v4:-2x2x2", "bad topology '-2x2x2' for TPU v4"),
    ("tpu7x:4x4x8 ", "bad topology '4x4x8 ' for TPU v7x"),       # would leak into the node label
    ("tpu7x:4x4x08", "bad topology '4x4x08' for TPU v7x"),
    ("tpu7x:4x4x+8", "bad topology '4x4x+8' for TPU v7x"),
    ("v5e:4x\u0664", "bad topology '4x\u0664' for TPU v5e"),       # an Arabic-Indic 4
    ("tpu7x:4X4X8", "bad topology '4X4X8' for TPU v7x"),
    ("tpu7x:4x4x3", "TPU v7x has no topology '4x4x3': every dimension must be a power of two"),
    ("v5e:6x6", "TPU v5e has no topology '6x6': every dimension must be a power of two"),
    ("tpu7x:8x4x4", "TPU v7x has no topology '8x4x4': dimensions are written smallest first ('4x4x8')"),
    ("v4:2x1x2", "TPU v4 has no topology '2x1x2': dimensions are written smallest first ('1x2x2')"),
    ("v4:1x1x2", "TPU v4 has no topology '1x1x2': a multi-host slice is a whole number of 4-chip hosts"),
    ("v4:1x2x2", "TPU v4 has no topology '1x2x2': multi-host 3-D slices are at least 2 in every dimension"),
    ("tpu7x:1x4x4", "TPU v7x has no topology '1x4x4': multi-host 3-D slices are at least 2 in every dimension"),
    ("v4:32x32x32", "TPU v4 has no topology '32x32x32': the largest v4 slice has 4096 chips"),
    ("v5e:32x32", "TPU v5e has no topology '32x32': the largest v5e slice has 256 chips"),
    ("v5e:2x8", "TPU v5e has no topology '2x8': GKE's multi-host v5e/v6e slices are 4x4, 4x8, 8x8, 8x16, 16x16"),
    ("v6e:4x2", "TPU v6e has no topology '4x2': GKE's multi-host v5e/v6e slices are 4x4, 4x8, 8x8, 8x16, 16x16"),
    ("v6e:8x4", "TPU v6e has no topology '8x4': GKE's multi-host v5e/v6e slices are"),  # a new user's
    ("v5e:1x2", "TPU v5e has no topology '1x2'"),
])
def test_bad_slices_are_errors(spec, fragment):
    with pytest.raises(CompileError) as info:
        tpu_slice(spec, SPAN)
    (d,) = info.value.diagnostics
    assert d.code == "E0401"
    assert d.message.startswith(fragment), d.message


def test_bad_slice_in_a_recipe_points_at_the_spec(ws):
    f = ws.fails('X = 1\nS = tpu_slice("tpu7x:4x4x3")\n')
    assert (f.code, f.where) == ("E0401", "recipes/r.rcp:2:15")
    f = ws.fails('S = tpu_slice("tpu8:2x2x1")\n')
    assert (f.code, f.where) == ("E0401", "recipes/r.rcp:1:15")
    assert "tpu7x" in f.diag.hint and "v5e" in f.diag.hint
    f = ws.fails("S = tpu_slice(4)\n")
    assert (f.code, f.message) == ("E0301", "tpu_slice spec must be a string, got an int")


def test_slice_from_a_param(ws):
    src = """\
        SLICE = param(str, default = "tpu7x:2x2x4")
        S = tpu_slice(SLICE)
        manifest(name = "m", apiVersion = "v1", kind = "K", hosts = S.hosts, sel = S.node_selector)
    """
    out = ws.build(src, sets=["SLICE=tpu7x:2x2x8"])["custom"]["m.yaml"]
    data = yaml.safe_load(out)
    assert data["hosts"] == 8 and data["sel"][TOPOLOGY_LABEL] == "2x2x8"
    f = ws.fails(src, sets=["SLICE=tpu7x:2x2x3"])
    assert f.code == "E0401"


@pytest.mark.parametrize("gen", ["v5e", "v6e"])
@pytest.mark.parametrize("a", [1, 2, 4, 8, 16, 32])
@pytest.mark.parametrize("b", [1, 2, 4, 8, 16, 32])
def test_a_2d_slice_is_one_gke_offers(gen, a, b):
    """Every power-of-two 2-D topology up to 32x32: accepted exactly when GKE offers it
    ("Plan TPUs in GKE": 1x1, 2x2, 2x4 on one host; 4x4, 4x8, 8x8, 8x16, 16x16), with the
    larger dimension second as in the node label (a node selector of '8x4' matches no node
    pool, and its pods stay Pending)."""
    offered = {(1, 1), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16)}
    spec = f"{gen}:{a}x{b}"
    if (a, b) in offered:
        assert tpu_slice(spec, SPAN).chips == a * b
        return
    with pytest.raises(CompileError) as info:
        tpu_slice(spec, SPAN)
    d = info.value.diagnostics[0]
    assert d.code == "E0401" and f"has no topology '{a}x{b}'" in d.message
    if (b, a) in offered:
        assert d.hint == f"the smaller dimension comes first: '{b}x{a}'"


_V5P_DIMS = st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16, 20, 24, 28, 32])


@given(a=_V5P_DIMS, b=_V5P_DIMS, c=_V5P_DIMS)
@example(a=16, b=16, c=24)  # the report: the largest v5p slice was refused
@example(a=4, b=4, c=12)
@example(a=16, b=16, c=32)  # 8,192 chips: more than a slice has (the pod's 8,960 is no slice)
def test_a_v5p_slice_is_one_cloud_tpu_offers(a, b, c):
    """v5p ("TPU v5p", Configurations): one host 2x2x1; below a cube, powers of two of at
    least 2 (2x2x2, 2x2x4, 2x4x4); from one cube (4x4x4) on, whole cubes (every dimension a
    multiple of 4) up to 16x16x24, 6,144 chips; smallest dimension first."""
    dims = (a, b, c)
    chips = a * b * c
    if min(dims) >= 4:
        offered = all(d % 4 == 0 for d in dims) and chips <= 6144
    else:
        offered = dims == (2, 2, 1) or (min(dims) >= 2 and all(d & (d - 1) == 0 for d in dims))
    offered = offered and (dims == (2, 2, 1) or list(dims) == sorted(dims))
    spec = f"v5p:{a}x{b}x{c}"
    if offered:
        s = tpu_slice(spec, SPAN)
        assert (s.chips, s.hosts) == (chips, max(chips // 4, 1))
        return
    with pytest.raises(CompileError) as info:
        tpu_slice(spec, SPAN)
    assert info.value.diagnostics[0].code == "E0401"
