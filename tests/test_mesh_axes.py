"""The mesh MaxText builds from its configuration, against the slice a pod selects (E0340,
``rcpc.domain.maxtext.mesh``). Reported: on tpu7x:4x4x4 (128 devices), ``ici_sequence_parallelism =
2, ici_fsdp_parallelism = 64`` was "ok" — base.yml's ``mesh_axes`` has no ``sequence`` axis,
so MaxText's ICI product is 64 and it stops — and ``ici_sequence_parallelism = 2,
ici_fsdp_parallelism = 128``, which MaxText runs, was refused. Of the same kind: the axes a
``mesh_axes`` flag or a model config (``deepseek3-671b-2dfsdp``) names, ``M_<KEY>`` variables in
the container's env, ``dcn_diloco_parallelism = -1``, the one-slice DCN rule, ``True``/``2.0``
values pydantic converts.

The oracle below is MaxText's algorithm written from its sources, not from rcpc: the values
are base.yml's, then the model config's, the command line's and the env's
(``pyconfig._initialize_pydantic``); the axes and the diloco and one-slice rules are
``types.py``'s ``set_derived_and_validate_values``; the fill is
``max_utils.fill_unspecified_mesh_axes``, called by ``maxtext_utils.create_device_mesh``
(the DCN values only on several slices)."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import Ws
from rcpc.core.diagnostics import CompileError
from rcpc.domain.maxtext import BUILTIN

MAXTEXT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "maxtext"
BASE = yaml.safe_load((MAXTEXT / "base.yml").read_text(encoding="utf-8"))
MODELS = ["deepseek3-671b-2dfsdp", "deepseek3-671b-batchsplit"]
MODEL_CONFIGS = {m: yaml.safe_load((MAXTEXT / "models" / f"{m}.yml").read_text(encoding="utf-8")) for m in MODELS}

# types.py ici_map / dcn_map (section I of set_derived_and_validate_values)
KEY_OF_AXIS = {"diloco": "diloco", "data": "data", "stage": "pipeline", "fsdp": "fsdp",
               "fsdp_transpose": "fsdp_transpose", "sequence": "sequence", "context": "context",
               "context_usp_ulysses": "context_usp_ulysses", "context_autoregressive": "context_autoregressive",
               "tensor": "tensor", "tensor_sequence": "tensor_sequence", "model": "tensor", "expert": "expert",
               "autoregressive": "autoregressive", "attn_dp": None, "attn_dp_expert": None}
# types.py's one-slice check ("DCN parallelism requested but only one slice available")
ONE_SLICE = ["data", "pipeline", "fsdp", "fsdp_transpose", "sequence", "context", "context_usp_ulysses",
             "tensor", "tensor_sequence", "expert", "context_autoregressive", "autoregressive"]

# (accelerator label, topology, JAX devices, hosts, chips a host), from GKE's TPU tables
SLICES = [("tpu7x", "4x4x4", 128, 16, 4), ("tpu7x", "2x2x1", 8, 1, 4), ("tpu-v6e-slice", "4x4", 16, 4, 4),
          ("tpu7x", "4x4x8", 256, 32, 4)]
ICI_KEYS = ["data", "fsdp", "sequence", "tensor", "expert", "pipeline", "context"]
DCN_KEYS = ["data", "fsdp", "diloco", "sequence", "pipeline"]
VALUES = st.sampled_from([-1, 0, 1, 2, 3, 4, 8, 16, 32, 64, 128, True, 2.0])
# max_utils.is_valid_custom_mesh: strategy -> the distinct ICI sizes it reshapes
RINGS = {"hybrid_ring_64x4": [1, 4, 64], "hybrid_ring_32x8": [1, 8, 32]}
DCN_VALUES = st.sampled_from([-1, 0, 1, 2, 3, 4])
AXES = st.lists(st.sampled_from(["data", "stage", "fsdp", "sequence", "tensor", "model", "expert", "context",
                                 "diloco", "attn_dp", "bogus"]), min_size=1, max_size=5, unique=True)


def fill(values: list, target: int) -> list | None:
    """max_utils.fill_unspecified_mesh_axes: the filled values, or None where its asserts fail."""
    values = list(values)
    if -1 in values:
        if values.count(-1) != 1:
            return None
        try:
            determined = target / math.prod(values) * -1
        except ZeroDivisionError:  # numpy gives inf, and int(inf) raises
            return None
        if not determined >= 1:
            return None
        values[values.index(-1)] = int(determined)
    return values if math.prod(values) == target else None


def maxtext_accepts(cfg: dict, devices: int, slices: int) -> bool:
    """Whether MaxText builds a mesh from config ``cfg`` on ``slices`` slices of ``devices``."""
    axes = cfg["mesh_axes"]
    if any(a not in KEY_OF_AXIS for a in axes):
        return False  # ici_map[axis]: KeyError
    value = {k: int(v) for k, v in cfg.items() if k.endswith("_parallelism")}  # pydantic's int
    ici = [value[f"ici_{KEY_OF_AXIS[a]}_parallelism"] if KEY_OF_AXIS[a] else 1 for a in axes]
    dcn = [value[f"dcn_{KEY_OF_AXIS[a]}_parallelism"] if KEY_OF_AXIS[a] else 1 for a in axes]
    if abs(math.prod(value[f"dcn_{k}_parallelism"] for k in ONE_SLICE)) > 1 and not slices > 1:
        return False
    if value["dcn_diloco_parallelism"] == -1:
        other = math.prod(v for v in dcn if v != -1)
        if not (other > 0 and slices % other == 0) or -1 not in dcn:
            return False
        dcn[dcn.index(-1)] = slices // other
    if cfg.get("inference_benchmark_test"):
        devices, slices = devices * slices, 1
    filled = fill(ici, devices)
    if filled is None or (slices > 1 and fill(dcn, slices) is None):
        return False
    # maxtext_utils.create_device_mesh asks max_utils.is_valid_custom_mesh on several slices, or with
    # allow_split_physical_axes: an unknown strategy, or ICI sizes not the strategy's, raise
    strategy = cfg.get("custom_mesh") or ""
    if strategy and (slices > 1 or cfg.get("allow_split_physical_axes")):
        return sorted(set(filled)) == RINGS.get(strategy)
    return True


def literal(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(literal(x) for x in v) + "]"
    return f'"{v}"' if isinstance(v, str) else repr(v)


def recipe(slice_, replicas: int, flags: dict, env: dict) -> str:
    acc, topo, _, hosts, per_host = slice_
    # a run_name: a flag set with no token is carried by no container
    body = ", ".join(f'"{k}": {literal(v)}' for k, v in {"run_name": "r", **flags}.items())
    env_list = ", ".join(f'{{"name": "{k}", "value": "{v}"}}' for k, v in env.items())
    tpu = f'{{"google.com/tpu": {per_host}}}'
    return (f"F = maxtext_flags({{{body}}})\n"
            'jobset(name = "js", spec = {"replicatedJobs": [{"name": "slice", '
            f'"replicas": {replicas}, "template": {{"spec": {{"parallelism": {hosts}, "completions": {hosts}, '
            '"template": {"spec": {"nodeSelector": {"cloud.google.com/gke-tpu-accelerator": '
            f'"{acc}", "cloud.google.com/gke-tpu-topology": "{topo}"}}, "containers": [{{"name": "main", '
            f'"image": "i", "args": ["python3", "train.py"] + F.argv, "env": [{env_list}], '
            f'"resources": {{"limits": {tpu}}}}}]}}}}}}}}}}]}})\n')


def mesh_errors(text: str) -> list:
    with tempfile.TemporaryDirectory() as d:
        ws = Ws(Path(d))
        (ws.root / "rcp.toml").write_text(f'maxtext_schema = "{BUILTIN}"\n', encoding="utf-8")
        try:
            ws.build(text, dedent=False)
        except CompileError as exc:
            # a cross-field refusal (E0350: 3 pipeline stages of deepseek3's 58 layers) is another
            # check's (tests/test_maxtext_agreement.py)
            others = [x for x in exc.diagnostics if x.code not in ("E0340", "E0350")]
            assert not others, others
            return [x for x in exc.diagnostics if x.code == "E0340"]
        return []


@st.composite
def configs(draw):
    """(flags, env, model): a flag set (with a model config, or a mesh_axes flag, or
    neither) and ``M_`` variables for keys it does not set."""
    model = draw(st.sampled_from([None] + MODELS))
    flags = {} if model is None else {"model_name": model}
    if model is None and draw(st.booleans()):
        flags["mesh_axes"] = draw(AXES)
    for k, v in draw(st.dictionaries(st.sampled_from(ICI_KEYS), VALUES, max_size=3)).items():
        flags[f"ici_{k}_parallelism"] = v
    for k, v in draw(st.dictionaries(st.sampled_from(DCN_KEYS), DCN_VALUES, max_size=2)).items():
        flags[f"dcn_{k}_parallelism"] = v
    if draw(st.integers(0, 9)) == 0:
        flags["inference_benchmark_test"] = True
    if draw(st.integers(0, 5)) == 0:
        flags["custom_mesh"] = draw(st.sampled_from([*RINGS, "hybrid_ring_16x16"]))
        flags["allow_split_physical_axes"] = draw(st.booleans())
    env = {}
    for k, v in draw(st.dictionaries(st.sampled_from([f"ici_{k}_parallelism" for k in ICI_KEYS]
                                                     + [f"dcn_{k}_parallelism" for k in DCN_KEYS]),
                                     st.sampled_from([-1, 1, 2, 4, 64]), max_size=2)).items():
        if k not in flags:
            env["M_" + k.upper()] = v
    return flags, env, model


def effective(flags: dict, env: dict, model) -> dict:
    """pyconfig: base.yml, then the model config, the command line, the M_ variables."""
    cfg = dict(BASE)
    cfg.update(MODEL_CONFIGS[model] if model else {})
    cfg.update(flags)
    for name, text in env.items():
        key = name[2:].lower()
        cfg[key] = type(cfg[key])(str(text))  # int() of the variable's text
    return cfg


@settings(max_examples=150, deadline=None)
@given(slice_=st.sampled_from(SLICES), replicas=st.integers(1, 4), config=configs())
# the report: sequence is no axis of base.yml's mesh_axes (false ok, then a false error)
@example(slice_=SLICES[0], replicas=1, config=({"ici_sequence_parallelism": 2, "ici_fsdp_parallelism": 64}, {}, None))
@example(slice_=SLICES[0], replicas=1, config=({"ici_sequence_parallelism": 2, "ici_fsdp_parallelism": 128}, {}, None))
@example(slice_=SLICES[0], replicas=2, config=({"dcn_sequence_parallelism": 2, "dcn_data_parallelism": 1}, {}, None))
# a model config's mesh_axes (no tensor axis); a mesh_axes flag
@example(slice_=SLICES[0], replicas=1, config=({"model_name": "deepseek3-671b-2dfsdp", "ici_fsdp_parallelism": 128,
                                                "ici_tensor_parallelism": 2}, {}, "deepseek3-671b-2dfsdp"))
@example(slice_=SLICES[0], replicas=1, config=({"mesh_axes": ["data", "fsdp"], "ici_expert_parallelism": 2,
                                                "ici_fsdp_parallelism": 128}, {}, None))
@example(slice_=SLICES[0], replicas=1, config=({"mesh_axes": ["fsdp", "bogus"]}, {}, None))
# M_ variables in the container's env
@example(slice_=SLICES[0], replicas=1, config=({}, {"M_ICI_FSDP_PARALLELISM": 64}, None))
@example(slice_=SLICES[0], replicas=1, config=({"ici_fsdp_parallelism": 128}, {"M_ICI_TENSOR_PARALLELISM": 2}, None))
# dcn_diloco_parallelism = -1 beside the default dcn_data_parallelism = -1; one slice
@example(slice_=SLICES[0], replicas=4, config=({"dcn_diloco_parallelism": -1}, {}, None))
@example(slice_=SLICES[0], replicas=1, config=({"dcn_fsdp_parallelism": -1}, {}, None))
@example(slice_=SLICES[0], replicas=1, config=({"dcn_diloco_parallelism": 2}, {}, None))
# values pydantic converts
@example(slice_=SLICES[0], replicas=1, config=({"ici_fsdp_parallelism": -1, "ici_tensor_parallelism": True}, {}, None))
@example(slice_=SLICES[0], replicas=1, config=({"ici_fsdp_parallelism": -1, "ici_tensor_parallelism": 2.0}, {}, None))
@example(slice_=SLICES[0], replicas=2, config=({"ici_fsdp_parallelism": 128, "inference_benchmark_test": True}, {},
                                               None))
# custom_mesh: a strategy MaxText has not, and one whose ring sizes are not the ICI mesh's
@example(slice_=SLICES[3], replicas=2, config=({"custom_mesh": "hybrid_ring_16x16"}, {}, None))
@example(slice_=SLICES[3], replicas=2, config=({"custom_mesh": "hybrid_ring_64x4", "ici_fsdp_parallelism": 64,
                                                "ici_tensor_parallelism": 4}, {}, None))
@example(slice_=SLICES[3], replicas=1, config=({"custom_mesh": "hybrid_ring_32x8", "ici_fsdp_parallelism": 64,
                                                "ici_tensor_parallelism": 4, "allow_split_physical_axes": True}, {},
                                               None))
@example(slice_=SLICES[3], replicas=1, config=({"custom_mesh": "hybrid_ring_32x8"}, {}, None))
def test_the_mesh_rcpc_checks_is_the_mesh_maxtext_builds(slice_, replicas, config):
    flags, env, model = config
    accepts = maxtext_accepts(effective(flags, env, model), slice_[2], replicas)
    found = mesh_errors(recipe(slice_, replicas, flags, env))
    assert (not found) == accepts, [d.message for d in found]
    for d in found:  # at a value the recipe wrote (a flag or an env variable), or the container
        assert str(d.span).startswith("recipes/r.rcp:")
        assert any("the pod selects it here" in label for label, _ in d.related)


def test_a_custom_mesh_rule_or_an_aot_topology_is_not_the_pods_mesh():
    """``custom_mesh_and_rule`` loads a YAML (not read by rcpc) that may replace mesh_axes;
    ``compile_topology`` compiles for another topology's devices: no E0340 either way."""
    bad = {"ici_fsdp_parallelism": 3}
    assert mesh_errors(recipe(SLICES[0], 1, bad, {}))
    for extra in ({"custom_mesh_and_rule": "pipeline-large-moe"}, {"compile_topology": "v5e-256"}):
        assert mesh_errors(recipe(SLICES[0], 1, {**bad, **extra}, {})) == []
