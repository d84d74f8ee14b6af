"""MaxText's mesh against the TPU slice a container's pod runs on (E0340,
``rcpc.domain.launch``). A new user's recipe gave ``maxtext_flags`` no ``tpu_slice`` (as no
bundled recipe does) and put ``ici_data_parallelism = 3`` into a JobSet whose pods select
tpu7x:4x4x4: ``rcpc check`` said ok, and MaxText refuses it at start (``create_device_mesh``
fills the mesh from the devices it finds). ``num_slices = 0`` was also accepted."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import Ws
from rcpc.core.diagnostics import CompileError

# (accelerator label, topology, devices, hosts, chips a host): worked out by hand from GKE's
# TPU tables (docs/tpu.md), not by rcpc.
SLICES = [
    ("tpu7x", "2x2x1", 8, 1, 4),
    ("tpu7x", "4x4x4", 128, 16, 4),
    ("tpu7x", "4x4x8", 256, 32, 4),
    ("tpu-v6e-slice", "4x4", 16, 4, 4),
    ("tpu-v5p-slice", "2x2x2", 8, 2, 4),
]
AXES = ["data", "fsdp", "tensor"]
AXIS_VALUES = st.sampled_from([-1, 1, 2, 3, 4, 8, 16, 32, 64, 128])


def maxtext_accepts(values: list[int], total: int) -> bool:
    """MaxText ``max_utils.fill_unspecified_mesh_axes``: at most one -1, which takes the rest
    (the others' product divides ``total``); then the product is ``total``. ``values`` are a
    group's axes (unset ones are 1, as in this test's schema-less flag sets)."""
    if values.count(-1) > 1:
        return False
    known = math.prod(v for v in values if v != -1)
    if -1 in values:
        return known > 0 and total % known == 0
    return known == total


def recipe(slice_: tuple, replicas: int, ici: dict, dcn: int | None, form: str) -> str:
    acc, topo, _, hosts, per_host = slice_
    flags = {f"ici_{k}_parallelism": v for k, v in ici.items()}
    if dcn is not None:
        flags["dcn_data_parallelism"] = dcn
    body = ", ".join(f'"{k}": {v}' for k, v in flags.items())
    carried = {"args": "F.argv", "shell": '["bash", "-c", "python3 train.py " + F.shell]'}[form]
    tpu = f'{{"google.com/tpu": {per_host}}}'
    return (f"F = maxtext_flags({{{body}}}, schema = None)\n"
            'jobset(name = "js", spec = {"replicatedJobs": [{"name": "slice", '
            f'"replicas": {replicas}, "template": {{"spec": {{"parallelism": {hosts}, "completions": {hosts}, '
            '"template": {"spec": {"nodeSelector": {"cloud.google.com/gke-tpu-accelerator": '
            f'"{acc}", "cloud.google.com/gke-tpu-topology": "{topo}"}}, "containers": [{{"name": "main", '
            f'"image": "i", "args": {carried}, "resources": {{"requests": {tpu}, "limits": {tpu}}}}}]}}}}}}}}}}]}})\n')


def mesh_errors(text: str) -> list:
    with tempfile.TemporaryDirectory() as d:
        ws = Ws(Path(d))
        try:
            ws.build(text, dedent=False)
        except CompileError as exc:
            return [x for x in exc.diagnostics if x.code == "E0340"]
        return []


@settings(max_examples=60, deadline=None)
@given(slice_=st.sampled_from(SLICES), replicas=st.integers(1, 4),
       ici=st.fixed_dictionaries({}, optional={k: AXIS_VALUES for k in AXES}),
       dcn=st.none() | st.sampled_from([-1, 1, 2, 3, 4]), form=st.sampled_from(["args", "shell"]))
@example(slice_=SLICES[1], replicas=1, ici={"data": 3, "fsdp": -1}, dcn=None, form="shell")  # the report
@example(slice_=SLICES[2], replicas=2, ici={"fsdp": -1}, dcn=4, form="args")
@example(slice_=SLICES[2], replicas=4, ici={"fsdp": -1, "tensor": 4}, dcn=-1, form="args")
def test_the_mesh_must_fit_the_slice_the_pod_selects(slice_, replicas, ici, dcn, form):
    _, _, devices, _, _ = slice_
    # a group no flag sets is left to MaxText's defaults, which these flag sets (no schema) do not know
    ici_ok = not ici or maxtext_accepts(list(ici.values()), devices)
    dcn_ok = dcn is None or maxtext_accepts([dcn], replicas)
    found = mesh_errors(recipe(slice_, replicas, ici, dcn, form))
    assert sorted(d.message.split()[0] for d in found) == [g for g, ok in (("dcn", dcn_ok), ("ici", ici_ok)) if not ok]
    for d in found:  # located at the recipe's value, showing where the pod selects its slice
        assert str(d.span).startswith("recipes/r.rcp:1:")
        assert any("the pod selects it here" in label for label, _ in d.related)


def test_the_report_shows_the_slice_and_its_place():
    (d,) = mesh_errors(recipe(SLICES[1], 1, {"data": 3, "fsdp": -1}, None, "shell"))
    assert d.message == "ici mesh product 3 does not fit the 128 devices of tpu7x:4x4x4"
    assert [label for label, _ in d.related][-2:] == [
        "container 'main' runs on tpu7x:4x4x4 (128 devices): the pod selects it here",
        "1 slice: the replicated job's replicas"]


def test_a_pod_on_no_tpu_and_a_flag_set_it_does_not_carry_are_not_checked():
    """A Pathways head (a CPU pod) carries the trainer's flags; its workers run on the slice
    without them: the mesh is MaxText's, over devices the head does not select."""
    text = recipe(SLICES[1], 1, {"data": 3}, None, "args")
    assert mesh_errors(text.replace('"cloud.google.com/gke-tpu-accelerator": "tpu7x", ', "")
                       .replace('"cloud.google.com/gke-tpu-topology"', '"kubernetes.io/arch"')) == []
    assert mesh_errors(text.replace('"args": F.argv', '"args": ["python3"]')) == []


@pytest.mark.parametrize("n", [0, -1, -256])
def test_num_slices_is_at_least_one(ws, n):
    head = 'F = maxtext_flags({}, schema = None, tpu_slice = tpu_slice("tpu7x:4x4x8"), num_slices = '
    f = ws.fails(f'{head}{n})\nflag_file(name = "f", flags = F)\n')
    assert (f.code, f.message) == ("E0306", f"num_slices is {n}: a job runs on at least 1 slice")
    assert f.where == f"recipes/r.rcp:1:{len(head) + 1}"
