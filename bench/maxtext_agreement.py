"""Differential check of rcpc's MaxText checks against MaxText's own config loader.

    python bench/maxtext_agreement.py [--maxtext ../shared/data/maxtext-src] [--python PYTHON]
                                      [--limit N] [--seed S]

From real ports (the bundled tpu-recipes ports, made valid for the pinned MaxText: the keys the
pinned schema does not know and ``use_random_routing`` with an expert-parallel rank of 1
taken out), it generates mutations across types, enums, bounds, None spellings,
interpolations, model configs, the mesh, ``M_`` overrides, cross-field rules and override
layers (:func:`mutations`), writes each as a recipe (the port's flags and the mutation's layers
in one ``maxtext_flags``, a JobSet on the port's TPU slice with the mutation's replicas and
``M_`` env), and compares, for each:

* **MaxText**: MaxText's loader (``pyconfig.initialize`` and mesh creation, rcpc's oracle
  driver) on the argv, env, devices and slices the harness itself made;
* **built-in**: whether ``rcpc`` with the built-in schema reports an error;
* **oracle mode**: whether ``rcpc check --maxtext`` (the launches rcpc finds in the renders,
  run through the oracle) reports ``E0360``.

Prints the agreement figures (misses and false alarms listed) and writes
``bench/results/maxtext-agreement.json``. The loader's answers are cached (rcpc's oracle
cache), so a second run takes seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
MAXTEXT = SHARED / "data" / "maxtext-src"
OUT = REPO / "bench" / "results" / "maxtext-agreement.json"
# (port recipe, TPU slice): a dense llama, a MoE qwen3 on a larger slice, a small gemma4, a MoE
# deepseek3 with fp8 quantization
PORTS = (("llama3_1_70b_8k_bf16_tpu7x_4x4x4", "tpu7x:4x4x4"), ("qwen3_235b_a22b_4k_bf16_tpu7x_4x8x8", "tpu7x:4x8x8"),
         ("gemma4_2b_8k_bf16_tpu7x_4x4x4", "tpu7x:4x4x4"), ("deepseek3_671b_4k_fp8_tpu7x_4x4x8", "tpu7x:4x4x8"))
FIXED = ("use_random_routing",)  # refused by the pinned MaxText with an EP rank of 1 (types.py:3196)


def literal(v) -> str:
    """``v`` (plain data) as a recipe literal."""
    if v is None or type(v) is bool:
        return repr(v)
    if type(v) in (int, float):
        return repr(v)
    if type(v) is str:
        return json.dumps(v)
    if type(v) is list:
        return "[" + ", ".join(literal(x) for x in v) + "]"
    if type(v) is dict:
        return "{" + ", ".join(f"{json.dumps(k)}: {literal(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def port_flags(name: str) -> dict:
    """The effective flags of a port's ``MAXTEXT_FLAGS``, made valid for the pinned MaxText."""
    from rcpc.core.values import to_python
    from rcpc.domain.maxtext.flagset import resolved
    from rcpc.domain.recipe import Compiler
    from rcpc.domain.workspace import Workspace

    compiler = Compiler(Workspace.find(REPO))
    result = compiler.evaluate(REPO / "recipes" / "tpu_recipes" / f"{name}.rcp", {})
    fs = result.exports["MAXTEXT_FLAGS"]
    return {k: to_python(e.value) for k, e in resolved(fs).items() if k in fs.schema and k not in FIXED}


# mutations -------------------------------------------------------------------------------------
def _m(kind: str, *layers, env=None, replicas: int = 1, note: str = "") -> dict:
    return {"kind": kind, "layers": [dict(x) for x in layers], "env": dict(env or {}), "replicas": replicas,
            "note": note}


def _simple(t: dict) -> str | None:
    return t["type"] if t["type"] in ("int", "float", "bool", "str") else None


def mutations(schema, base: dict, rng: random.Random) -> list[dict]:
    """The mutations of one port (``base``: its flags) over the schema's keys."""
    fields = schema.fields
    out: list = []
    by_type: dict = {}
    for k, f in sorted(fields.items()):
        if k in base or "base" not in f:
            continue
        kind = _simple(f["type"])
        if kind is not None and not any(b in f["type"] for b in ("ge", "gt", "le", "lt")):
            by_type.setdefault(kind, []).append(k)
    wrong = {"int": ["abc", 1.5, "12", True, 2.0, "1e3", "", [1]],
             "float": ["abc", "1e-3", True, "inf", [1.0], "1_0.5"],
             "bool": ["flase", 2, "yes", 0, "True", 1.0, "on", "maybe"],
             "str": [5, 5.5, True, ["a"], {"a": 1}, "text"]}
    for kind, keys in sorted(by_type.items()):  # types
        for k in rng.sample(keys, min(6, len(keys))):
            for v in rng.sample(wrong[kind], 3):
                out.append(_m("type", {k: v}))
    for k, f in sorted(fields.items()):  # enums and literals
        t = f["type"]
        ts = t["of"] if t["type"] == "union" else [t]
        values = [x for m in ts if m["type"] in ("enum", "literal") for x in (m.get("values") or [])]
        if not values or not all(type(x) is str for x in values) or "base" not in f:
            continue
        picks = rng.sample(values, min(2, len(values)))
        for v in picks:
            out.append(_m("enum", {k: v}))
        wrongs = [values[0].upper() if values[0].upper() != values[0] else values[0] + "x", values[0][:-1] or "zz"]
        out.append(_m("enum", {k: rng.choice(wrongs)}))
    for k, f in sorted(fields.items()):  # bounds
        t = f["type"]
        if t["type"] not in ("int", "float") or "base" not in f:
            continue
        for op in ("ge", "gt", "le", "lt"):
            if op in t:
                b = t[op]
                step = 1 if t["type"] == "int" else 0.5
                inside = b if op in ("ge", "le") else (b + step if op == "gt" else b - step)
                outside = b - step if op in ("ge", "gt") else b + step
                out.append(_m("bound", {k: outside}))
                if rng.random() < 0.5:
                    out.append(_m("bound", {k: inside}))
    keys = sorted(k for k in fields if "base" in fields[k] and k not in base and _simple(fields[k]["type"]) is None
                  and fields[k]["type"]["type"] == "union")
    for k in rng.sample(keys, min(20, len(keys))) + rng.sample(sorted(by_type.get("int", [])), 8) \
            + rng.sample(sorted(by_type.get("str", [])), 8):  # None spellings
        out.append(_m("none", {k: rng.choice([None, "none", "None", "NONE"])}))
    for k in rng.sample(sorted(by_type.get("str", [])), 6):  # interpolations
        out.append(_m("interpolation", {k: rng.choice(["${steps}", "a${x}b", "$HOME", "${oc.env:HOME}"])}))
    for k in rng.sample(sorted(by_type.get("int", [])), 4):
        out.append(_m("interpolation", {k: "${steps}"}))
    models = sorted(schema.models)
    name = base.get("model_name")
    own = schema.models.get(name, {})
    for m in rng.sample(models, 12):  # model configs
        out.append(_m("model", {"model_name": m}))
    for k, v in list(own.items())[:8]:
        if type(v) in (int, float) and type(v) is not bool:
            out.append(_m("model", {k: v}))
            out.append(_m("model", {k: v + 1}))
            out.append(_m("model", {k: v + 1, "override_model_config": True}))
    out += _mesh(base, rng) + _env(schema, base, own, rng) + _cross(base) + _layers()
    return out


def _mesh(base: dict, rng: random.Random) -> list[dict]:
    out = [_m("mesh", {"ici_fsdp_parallelism": v}) for v in (-1, 1, 2, 3, 7, 16, 1024)]
    out += [_m("mesh", {"ici_tensor_parallelism": v}) for v in (-1, 2, 4)]
    out += [_m("mesh", {"ici_data_parallelism": v}) for v in (-1, 2, 3)]
    out += [_m("mesh", {"dcn_data_parallelism": v}) for v in (1, 2)]
    out += [_m("mesh", {"dcn_fsdp_parallelism": 2}), _m("mesh", {"dcn_pipeline_parallelism": 2})]
    out += [_m("mesh", {}, replicas=2), _m("mesh", {"dcn_data_parallelism": 2}, replicas=2),
            _m("mesh", {"dcn_data_parallelism": 1}, replicas=2), _m("mesh", {"dcn_data_parallelism": 3}, replicas=2),
            _m("mesh", {"dcn_fsdp_parallelism": 2, "dcn_data_parallelism": 1}, replicas=2),
            _m("mesh", {"num_slices": 2}), _m("mesh", {"num_slices": 1}, replicas=2),
            _m("mesh", {"mesh_axes": ["data", "fsdp", "tensor"]}),
            _m("mesh", {"mesh_axes": ["data", "fsdp", "tensorr"]}),
            _m("mesh", {"ici_fsdp_parallelism": -1, "ici_tensor_parallelism": -1}),
            _m("mesh", {"dcn_diloco_parallelism": -1}, replicas=2)]
    return out


def _env(schema, base: dict, own: dict, rng: random.Random) -> list[dict]:
    out = [_m("env", env={"M_STEPS": v}) for v in ("7", "seven", "-3", "7.0", " 7")]
    out += [_m("env", env={"M_DTYPE": v}) for v in ("float32", "bf16", "none")]
    out += [_m("env", env={"M_ENABLE_CHECKPOINTING": v}) for v in ("yes", "maybe", "FALSE")]
    out += [_m("env", env={"M_LEARNING_RATE": v}) for v in ("1e-4", "fast")]
    out += [_m("env", env={"M_" + k.upper(): "1"}) for k in list(base)[:3]]  # also set by the flags
    out += [_m("env", env={"M_" + k.upper(): "1"}) for k in list(own)[:2]]  # also set by the model config
    out += [_m("env", env={"M_NO_SUCH_KEY": "1"}), _m("env", env={"M_LOGICAL_AXIS_RULES": "[]"}),
            _m("env", env={"M_DATA_SHARDING": "x"}), _m("env", env={"M_RUN_NAME": "none"}),
            _m("env", env={"M_ICI_FSDP_PARALLELISM": "3"}), _m("env", env={"M_HF_PATH": "x"})]
    return out


def _cross(base: dict) -> list[dict]:
    """Cross-field rules (issue 36's list and types.py's validators)."""
    c = [
        {"use_random_routing": True}, {"use_ragged_sort": True}, {"ragged_buffer_factor": 2.0},
        {"use_ring_of_experts": True}, {"num_moe_emb_chunks": 2},
        {"global_parameter_scale": 3}, {"global_parameter_scale": 0}, {"global_parameter_scale": 2},
        {"dataset_type": "hf"}, {"dataset_type": "hf", "hf_path": "x/y"}, {"dataset_type": "grain"},
        {"dataset_type": "grain", "grain_train_files": "/data/x"}, {"dataset_type": "tfds"},
        {"context_parallel_strategy": "usp"}, {"ici_context_usp_ulysses_parallelism": 2},
        {"use_multimodal": True}, {"num_experts": 4}, {"num_experts": 1},
        {"use_jax_splash": True}, {"use_jax_splash": True, "use_tokamax_splash": False},
        {"mu_dtype": "bf16"}, {"mu_dtype": "bfloat16"}, {"mu_dtype": "float32"}, {"mu_dtype": "fp32"},
        {"remat_policy": "ful"}, {"remat_policy": "full"}, {"remat_policy": "minimal"}, {"remat_policy": "save_qkv_proj"},
        {"elastic_enabled": True}, {"elastic_enabled": True, "enable_single_controller": True},
        {"custom_mesh_and_rule": "cp-as-ep"}, {"custom_mesh_and_rule": "2d-fsdp"}, {"custom_mesh_and_rule": "pure-fsdp"},
        {"shard_mode": "explicit"}, {"shard_mode": "Explicit"}, {"context_parallel_reorder_strategy": "dual_chunk_swap"},
        {"context_parallel_reorder_strategy": "zigzag"}, {"vision_encoder_block": "llama4"},
        {"num_moe_token_chunks": 2}, {"num_moe_token_chunks": 2, "use_ring_of_experts": True},
        {"quantization": "fp8"}, {"quantization": "fp9"}, {"packing": False}, {"max_target_length": 100},
        {"per_device_batch_size": 0.5}, {"per_device_batch_size": 0.01}, {"gradient_accumulation_steps": 3},
        {"steps": 0}, {"learning_rate_schedule_steps": 5}, {"warmup_steps_fraction": 1.5},
        {"attention": "dot_product"}, {"attention": "paged"}, {"attention": "autoselected"},
        {"sparse_matmul": False}, {"megablox": False, "sparse_matmul": True}, {"scan_layers": False},
        {"enable_checkpointing": True}, {"async_checkpointing": True}, {"checkpoint_period": 0},
        {"weight_dtype": "bfloat16"}, {"dtype": "float16"}, {"grad_dtype": "bfloat16"},
        {"opt_type": "sgd"}, {"opt_type": "muon"}, {"decoder_block": "llama2"},
        {"hardware": "cpu"}, {"hardware": "gpu"}, {"compile_topology_num_slices": 2},
        {"ici_expert_parallelism": 2}, {"ici_context_parallelism": 2}, {"ici_pipeline_parallelism": 2},
        {"ici_pipeline_parallelism": 2, "num_pipeline_microbatches": 3}, {"ici_sequence_parallelism": 2},
        {"use_iota_embed": True}, {"use_tokamax_gmm": True}, {"use_tokamax_splash": True},
        {"profiler": "xplane", "profile_periodically_period": 0}, {"profiler": "nsys"},
        {"log_period": 0}, {"eval_interval": 5, "dataset_type": "synthetic"},
        {"head_dim": 96}, {"num_query_heads": 7}, {"num_kv_heads": 3},
        {"ici_pipeline_parallelism": 4}, {"ici_pipeline_parallelism": 2, "num_pipeline_repeats": 3},
        {"ici_pipeline_parallelism": 2, "pipeline_parallel_layers": 8},
        {"compile_topology": "tpu7x-128"}, {"compile_topology": "v5e-257"},
        {"compile_topology": "v5e-257", "internal_compile": True, "internal_compile_num_devices": 128},
        {"use_indexer": True}, {"use_indexer": True, "attention_type": "mla"},
        {"use_indexer": True, "attention_type": "mla", "q_lora_rank": 64},
        {"use_indexer": True, "attention_type": "mla", "q_lora_rank": 64, "attention": "dot_product"},
        {"engram_layers": [1]}, {"engram_layers": [1], "hf_access_token": "t"},
    ]
    return [_m("cross", x) for x in c]


def _layers() -> list[dict]:
    """Override layers: MaxText sees the last value."""
    pairs = [("steps", -5, 30), ("dtype", "bf16", "bfloat16"), ("remat_policy", "ful", "full"),
             ("per_device_batch_size", "x", 4.0), ("attention", "flashh", "flash"), ("hardware", "tpux", "tpu"),
             ("max_target_length", -1, 4096), ("log_period", "often", 50), ("opt_type", "adamx", "adamw"),
             ("enable_checkpointing", "maybe", False), ("mu_dtype", "bf16", "float32"),
             ("custom_mesh_and_rule", "2d-fsdp", "pure-fsdp"), ("global_parameter_scale", 3, 1)]
    out = []
    for k, bad, good in pairs:
        out.append(_m("layers", {k: bad}, {k: good}))
        out.append(_m("layers", {k: good}, {k: bad}))
    return out


# one mutation as a recipe -----------------------------------------------------------------------
def recipe_text(base: dict, tpu: str, m: dict) -> str:
    layers = ", ".join(literal(x) for x in [base, *m["layers"]] if x)
    env = ", ".join(f'{{"name": {json.dumps(k)}, "value": {json.dumps(v)}}}' for k, v in m["env"].items())
    return (f'S = tpu_slice("{tpu}")\n'
            f"F = maxtext_flags({layers})\n"
            'jobset(name = "js", spec = {"replicatedJobs": [{"name": "w", "replicas": %d, "template": {"spec": {\n'
            '    "parallelism": S.hosts, "completions": S.hosts,\n'
            '    "template": {"spec": {"nodeSelector": S.node_selector, "containers": [{\n'
            '        "name": "main", "image": "img", "args": F.argv, "env": [%s],\n'
            '        "resources": {"limits": {"google.com/tpu": S.chips_per_host}},\n'
            '    }]}},\n'
            '}}}]})\n') % (m["replicas"], env)


def prepare(workdir: Path, cases: list) -> tuple[list, list, list]:
    """For each ``(name, base, tpu, mutation)``, written as a recipe under ``workdir`` and
    compiled with the built-in schema: its row (``rcpc``: the error codes of the build), the
    case the harness itself makes for MaxText's loader (its argv, env, devices and slices) and
    the launches rcpc finds in its renders. Returns ``(rows, truth, found)``."""
    from rcpc.core.diagnostics import CompileError
    from rcpc.domain.launches import launches
    from rcpc.domain.maxtext.flagset import argv
    from rcpc.domain.recipe import Compiler
    from rcpc.domain.tpu import tpu_slice
    from rcpc.domain.workspace import Workspace

    (workdir / "recipes").mkdir(parents=True, exist_ok=True)
    (workdir / "rcp.toml").write_text('maxtext_schema = "builtin:maxtext"\n', encoding="utf-8")
    compiler = Compiler(Workspace.find(workdir))
    rows, truth, found = [], [], []
    for i, (port, base, tpu, m) in enumerate(cases):
        path = (workdir / "recipes" / f"m{i:04d}.rcp").resolve()
        path.write_text(recipe_text(base, tpu, m), encoding="utf-8")
        errors: list = []
        try:
            compiler.build(path)
        except CompileError as exc:
            errors = sorted({d.code for d in exc.diagnostics if d.severity == "error"})
        result = compiler.evaluate(path, {})
        found.append(launches(result.renders))
        compiler.release(path)
        devices = tpu_slice(tpu, None).devices * m["replicas"]
        truth.append({"argv": argv(result.exports["F"]), "env": m["env"], "devices": devices,
                      "slices": m["replicas"], "mesh": True})
        rows.append({"port": port, **m, "rcpc": errors})
    return rows, truth, found


def conclude(rows: list, truth: list, found: list, answers: list, oracle) -> list[dict]:
    """The rows of :func:`prepare` with MaxText's verdict (``answers``: its loader's on
    ``truth``), the oracle mode's (``rcpc check --maxtext``'s findings on the launches rcpc
    found, through ``oracle``: served by its cache when they are the harness's cases) and
    whether rcpc found the launch the harness made."""
    from rcpc.oracle import case_of, check_launches

    for row, answer, got, case in zip(rows, answers, found, truth):
        row["maxtext"] = (None if "unanswered" in answer else "ok" if answer["ok"]
                          else f"{answer['type']}: {' '.join(answer['message'].split())[:160]}")
        row["oracle_mode"] = sorted({d.code for d in check_launches(oracle, got)}) if got else ["no launch"]
        row["same_launch"] = [case_of(x) for x in got] == [case]  # rcpc found what the harness made
    return rows


def judge(workdir: Path, cases: list, oracle) -> list[dict]:
    """:func:`prepare`, MaxText's loader on the harness's cases, :func:`conclude`."""
    rows, truth, found = prepare(workdir, cases)
    return conclude(rows, truth, found, oracle.run(truth), oracle)


def summarize(rows: list) -> dict:
    judged = [r for r in rows if r["maxtext"] is not None]
    refused = [r for r in judged if r["maxtext"] != "ok"]
    builtin_agree = [r for r in judged if bool(r["rcpc"]) == (r["maxtext"] != "ok")]
    false_alarms = [r for r in judged if r["rcpc"] and r["maxtext"] == "ok"]
    misses = [r for r in judged if not r["rcpc"] and r["maxtext"] != "ok"]
    oracle_agree = [r for r in judged if ("E0360" in r["oracle_mode"]) == (r["maxtext"] != "ok")]
    kinds: dict = {}
    for r in judged:
        k = kinds.setdefault(r["kind"], {"mutations": 0, "refused": 0, "builtin_agree": 0, "oracle_agree": 0})
        k["mutations"] += 1
        k["refused"] += r["maxtext"] != "ok"
        k["builtin_agree"] += bool(r["rcpc"]) == (r["maxtext"] != "ok")
        k["oracle_agree"] += ("E0360" in r["oracle_mode"]) == (r["maxtext"] != "ok")
    return {"mutations": len(rows), "judged": len(judged), "refused_by_maxtext": len(refused),
            "builtin": {"agree": len(builtin_agree), "ratio": round(len(builtin_agree) / max(1, len(judged)), 4),
                        "false_alarms": len(false_alarms), "misses": len(misses)},
            "oracle_mode": {"agree": len(oracle_agree), "ratio": round(len(oracle_agree) / max(1, len(judged)), 4)},
            "kinds": kinds}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--maxtext", default=str(MAXTEXT))
    ap.add_argument("--python", default=None)
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--limit", type=int, default=0, help="judge only the first N mutations (0: all)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    from rcpc.domain.maxtext.schema import BUILTIN_PATH, load_schema
    from rcpc.oracle import Oracle, package_digest

    schema = load_schema(BUILTIN_PATH, None, "builtin:maxtext")
    rng = random.Random(args.seed)
    cases = []
    for port, tpu in PORTS:
        base = port_flags(port)
        cases.append((port, base, tpu, _m("baseline")))
        cases += [(port, base, tpu, m) for m in mutations(schema, base, rng)]
    if args.limit:
        cases = cases[:args.limit]
    oracle = Oracle(Path(args.maxtext), args.python)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rcpc-agreement-") as tmp:
        rows = judge(Path(tmp), cases, oracle)
    summary = summarize(rows)
    summary.update({"seconds": round(time.monotonic() - started, 1), "loader_runs": oracle.ran,
                    "maxtext_package_sha256": package_digest(oracle.package), "seed": args.seed})
    b, o = summary["builtin"], summary["oracle_mode"]
    print(f"{summary['judged']} mutations judged by MaxText's loader ({summary['refused_by_maxtext']} refused), "
          f"{len(PORTS)} ports")
    print(f"built-in schema: {b['agree']}/{summary['judged']} agree ({b['ratio']:.2%}), "
          f"{b['false_alarms']} false alarm(s), {b['misses']} miss(es)")
    print(f"oracle mode:     {o['agree']}/{summary['judged']} agree ({o['ratio']:.2%})")
    for kind, k in summary["kinds"].items():
        print(f"  {kind:14} {k['mutations']:4} mutations, {k['refused']:4} refused, built-in agrees on "
              f"{k['builtin_agree']}, oracle mode on {k['oracle_agree']}")
    for r in rows:
        if r["maxtext"] is not None and bool(r["rcpc"]) != (r["maxtext"] != "ok"):
            what = "FALSE ALARM" if r["rcpc"] else "miss"
            print(f"  {what}: {r['port']} {r['layers']} env={r['env']} x{r['replicas']}: rcpc {r['rcpc']}, "
                  f"MaxText {r['maxtext'][:160]!r}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    lines = ",\n".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in rows)  # a row a line
    Path(args.out).write_text('{"summary": ' + json.dumps(summary, indent=1) + ',\n"rows": [\n' + lines + "\n]}\n",
                              encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
