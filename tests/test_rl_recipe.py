"""The RL launch recipe ``recipes/rl/qwen35_397b_256_v7x.rcp`` against its reference.

The oracle is ``../shared/reference/rl-397b-v7x.md`` (beside the checkout, as in CI): the
parameter list, the trainer's MaxText flag tokens, the libtpu flag strings, the per-role
environment and the vLLM JSON are parsed out of it, never retyped here. The rest checks the
JobSet shapes the reference describes, the toggle's reach (TRAINER_TUNED_FLAGS changes only
``trainer.yaml`` and ``trainer.flags``), Kubernetes typing (env values and TPU quantities
are strings) and the JobSet CRD schema.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

from rcpc.core.diagnostics import CompileError
from rcpc.domain.recipe import Compiler
from rcpc.domain.workspace import Workspace

# all in one pytest-xdist worker (tests/run: --dist loadgroup): its module fixtures (the RL recipe compiled) run once
pytestmark = pytest.mark.xdist_group("test_rl_recipe")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[1] / ".." / "shared"
REFERENCE = SHARED / "reference" / "rl-397b-v7x.md"
JOBSET_CRD = SHARED / "data" / "jobset" / "jobset.x-k8s.io_jobsets.yaml"
RECIPE = REPO / "recipes" / "rl" / "qwen35_397b_256_v7x.rcp"

VARIANTS = ("default", "tuned", "six", "six-tuned")
TUNED_TOKEN = "custom_mesh_and_rule=cp-as-ep-dense-no-cp"
ROLLOUT_EP = 16   # 2 devices a chip * (2*2*4 chips) / vLLM DP 2


# --- the reference ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ref() -> str:
    assert REFERENCE.is_file(), f"reference not found at {REFERENCE}"
    return REFERENCE.read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    """The body of the ``## heading...`` section (up to the next ``## ``)."""
    start = text.index("\n## " + heading)
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


def _code_span(text: str, after: str = "") -> str:
    """The first inline `code` span after ``after`` (it may wrap lines), with its line breaks
    removed (the reference wraps long spans after a space or a comma)."""
    text = text[text.index(after) + len(after):] if after else text
    m = re.search(r"`([^`]+)`", text)
    return m.group(1)


def ref_flag_tokens(text: str) -> list[str]:
    body = _section(text, "The trainer's MaxText flag set")
    block = body[body.index("```") + 3:]
    return block[:block.index("```")].split()


def ref_libtpu(text: str, role: str) -> str:
    if role == "trainer":
        span = _code_span(_section(text, "Trainer libtpu flags"))
    else:
        span = _code_span(_section(text, "Trainer libtpu flags"), "Rollout libtpu flags:")
    return " ".join(span.split())


def ref_env(text: str, role: str) -> dict:
    """``* Role: `K=V K=V ...``` of the extra-environment section, in order."""
    body = _section(text, "Extra environment")
    span = _code_span(body, f"* {role}:")
    return dict(re.findall(r"(\w+)=(<[^>]*>|\S+)", span))


def ref_vllm_json(text: str) -> str:
    span = _code_span(_section(text, "vLLM rollout settings"))
    return span.replace("\n", "").replace("<rollout EP>", str(ROLLOUT_EP))


def ref_params(text: str) -> dict:
    """``NAME: type = default`` items of the Parameters section → {name: (type, python value)}."""
    body = _section(text, "Parameters")
    out = {}
    for name, ptype, default in re.findall(r"`(\w+): (str|int|bool|float) = ([^`]+)`", body):
        value = {"str": lambda s: json.loads(s), "int": int, "float": float,
                 "bool": lambda s: {"True": True, "False": False}[s]}[ptype](default.strip())
        out[name] = (ptype, value)
    return out


# --- the recipe ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def compiler() -> Compiler:
    return Compiler(Workspace.find(REPO))


@pytest.fixture(scope="module")
def compiled(compiler):
    return compiler.build(RECIPE.resolve())


@pytest.fixture(scope="module")
def texts(compiled) -> dict:
    """variant → render name → exact text."""
    _, builds = compiled
    return {b.variant: {r.name: r.text for r in b.renders} for b in builds}


@pytest.fixture(scope="module")
def docs(texts) -> dict:
    """variant → render name → parsed YAML (manifests only)."""
    return {v: {n: yaml.safe_load(t) for n, t in r.items() if n.endswith(".yaml")}
            for v, r in texts.items()}


def flags_of(text: str) -> list[str]:
    return shlex.split(text)


def rjob(doc: dict, name: str) -> dict:
    (job,) = [j for j in doc["spec"]["replicatedJobs"] if j["name"] == name]
    return job


def pod(doc: dict, name: str = "proc") -> dict:
    return rjob(doc, name)["template"]["spec"]["template"]["spec"]


def container(doc: dict, name: str, job: str = "proc") -> dict:
    (c,) = [c for c in pod(doc, job)["containers"] if c["name"] == name]
    return c


def plain_env(c: dict) -> dict:
    """name → value of the container's env entries that have a value (in order)."""
    return {e["name"]: e["value"] for e in c["env"] if "value" in e}


def arg_value(c: dict, option: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in c["args"] if a.startswith(f"--{option}=")]
    return value


# --- params -------------------------------------------------------------------------------------
def test_params_match_reference(compiled, ref):
    recipe, _ = compiled
    params = {p.name: p for p in recipe.params}
    expected = ref_params(ref)
    assert len(expected) == 11
    assert list(params) == list(expected)
    for name, (ptype, default) in expected.items():
        p = params[name]
        assert p.type == ptype, name
        assert p.default.value == default and type(p.default.value) is type(default), name
        assert p.doc, f"{name} has no doc"


def test_remat_policy_takes_what_maxtext_takes(compiled):
    """REMAT_POLICY reaches the trainer as its ``--remat_policy`` option, which no MaxText flag
    check reads: its choices are MaxText's remat policies, as rcpc's MaxText schema lists them
    (a new user's ``--set REMAT_POLICY=fulll`` built; it is now E0602 with "did you mean 'full'?")."""
    recipe, _ = compiled
    (param,) = [p for p in recipe.params if p.name == "REMAT_POLICY"]
    schema = json.loads((REPO / "compiler" / "rcpc" / "domain" / "schemas" / "maxtext.json").read_text())
    assert [c.value for c in param.choices] == schema["fields"]["remat_policy"]["restricted"]["values"]


def test_variants_declared(compiled):
    recipe, builds = compiled
    assert [v.name for v in recipe.variants] == list(VARIANTS)
    assert [b.variant for b in builds] == list(VARIANTS)


# --- the MaxText flag set -----------------------------------------------------------------------
def test_default_flags_are_the_reference_tokens(texts, docs, ref):
    expected = ref_flag_tokens(ref)
    # The reference's heading says "71 tokens"; its block holds 65 (counted here, not assumed).
    assert len(expected) == 65
    tokens = flags_of(texts["default"]["trainer.flags"])
    assert tokens == expected
    # The same tokens are the tail of the trainer's argv, after its --name=value options.
    args = container(docs["default"]["trainer.yaml"], "main")["args"]
    assert args[-len(expected):] == expected
    assert all(a.startswith("--") for a in args[:-len(expected)])
    # Mixed bool spellings survive: `packing=True`, everything else lower case.
    assert "packing=True" in tokens and "use_gdn_kernel=true" in tokens


def test_tuned_flags_append_one_token(texts, ref):
    expected = ref_flag_tokens(ref)
    for base, tuned in (("default", "tuned"), ("six", "six-tuned")):
        assert flags_of(texts[base]["trainer.flags"]) == expected
        assert flags_of(texts[tuned]["trainer.flags"]) == expected + [TUNED_TOKEN]


def test_tuned_flags_effective_values_with_omegaconf(texts):
    import omegaconf
    base = omegaconf.OmegaConf.from_cli(flags_of(texts["default"]["trainer.flags"]))
    tuned = omegaconf.OmegaConf.from_cli(flags_of(texts["tuned"]["trainer.flags"]))
    assert base.custom_mesh_and_rule == "cp-as-ep"
    assert tuned.custom_mesh_and_rule == "cp-as-ep-dense-no-cp"
    changed = {k for k in tuned if tuned[k] != base.get(k)}
    assert changed == {"custom_mesh_and_rule"}
    assert base.packing is True and base.ragged_buffer_factor == 2.0
    assert base.gdn_chunk_size == 64 and base.use_iota_embed is False


@pytest.mark.parametrize("base,tuned", [("default", "tuned"), ("six", "six-tuned")])
def test_toggle_changes_only_the_trainer(texts, base, tuned):
    assert list(texts[base]) == list(texts[tuned])
    changed = {n for n in texts[base] if texts[base][n] != texts[tuned][n]}
    assert changed == {"trainer.yaml", "trainer.flags"}
    # ... and in trainer.yaml only by the appended token.
    a = texts[base]["trainer.yaml"].splitlines()
    b = texts[tuned]["trainer.yaml"].splitlines()
    assert len(b) == len(a) + 1
    (extra,) = [i for i in range(len(b)) if i >= len(a) or a[i] != b[i]][:1]
    assert b[extra].strip() == f"- {TUNED_TOKEN}"
    assert b[:extra] + b[extra + 1:] == a


# --- JobSets: count, names, namespaces ----------------------------------------------------------
def test_render_names(texts):
    rollouts16 = [f"rollout-{i}.yaml" for i in range(16)]
    rollouts4 = [f"rollout-{i}.yaml" for i in range(4)]
    # In declaration order: the flag file is declared beside the flag set.
    assert list(texts["default"]) == ["trainer.flags", "orchestrator.yaml", "trainer.yaml", *rollouts16]
    assert list(texts["six"]) == ["trainer.flags", "orchestrator.yaml", "trainer.yaml", *rollouts4]


@pytest.mark.parametrize("variant", ["six", "six-tuned"])
def test_six_has_six_jobsets(docs, variant):
    jobsets = [d for d in docs[variant].values() if d["kind"] == "JobSet"]
    assert len(jobsets) == 6
    assert sorted(d["metadata"]["name"] for d in jobsets) == sorted(
        ["demo-orch", "demo-train", "demo-roll-0", "demo-roll-1", "demo-roll-2", "demo-roll-3"])


def test_names_namespaces_and_queue(docs):
    for variant, renders in docs.items():
        n = len(renders) - 2
        expected = {"orchestrator.yaml": "demo-orch", "trainer.yaml": "demo-train",
                    **{f"rollout-{i}.yaml": f"demo-roll-{i}" for i in range(n)}}
        assert {k: d["metadata"]["name"] for k, d in renders.items()} == expected, variant
        for d in renders.values():
            assert d["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
            assert d["metadata"]["namespace"] == "rl-dev"
            assert d["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "multislice-queue"}
            assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", d["metadata"]["name"])
            assert len(d["metadata"]["name"]) <= 63
            for job in d["spec"]["replicatedJobs"]:
                assert job["template"]["spec"]["template"]["spec"]["priorityClassName"] == "medium"


def test_prefix_and_namespace_params(compiler):
    _, (build,) = compiler.build(RECIPE.resolve(), sets=[
        "JOB_PREFIX=exp7", "K8S_NAMESPACE=team-a", "ROLLOUT_REPLICAS=2"])
    docs = {r.name: yaml.safe_load(r.text) for r in build.renders if r.name.endswith(".yaml")}
    assert {k: (d["metadata"]["name"], d["metadata"]["namespace"]) for k, d in docs.items()} == {
        "orchestrator.yaml": ("exp7-orch", "team-a"), "trainer.yaml": ("exp7-train", "team-a"),
        "rollout-0.yaml": ("exp7-roll-0", "team-a"), "rollout-1.yaml": ("exp7-roll-1", "team-a")}
    orch = container(docs["orchestrator.yaml"], "main")
    assert arg_value(orch, "trainer_address") == "exp7-train-proc-0-0.exp7-train:20002"
    assert arg_value(orch, "rollout_addresses") == (
        "exp7-roll-0-proc-0-0.exp7-roll-0:20001,exp7-roll-1-proc-0-0.exp7-roll-1:20001")
    trainer = container(docs["trainer.yaml"], "main")
    assert arg_value(trainer, "maxtext_output_dir") == "gs://example-rl-bucket/maxtext/exp7"
    assert arg_value(orch, "trajectory_log_dir") == "gs://example-rl-bucket/trajectories/exp7/logger"
    assert arg_value(orch, "trajectory_store_dir") == "gs://example-rl-bucket/trajectories/exp7/store"


# --- hosts, TPUs, node selectors ----------------------------------------------------------------
def _job_counts(doc, name):
    spec = rjob(doc, name)["template"]["spec"]
    return spec["completions"], spec["parallelism"], rjob(doc, name)["replicas"]


def test_hosts_completions_parallelism(docs):
    for renders in docs.values():
        assert [j["name"] for j in renders["trainer.yaml"]["spec"]["replicatedJobs"]] == ["proc", "pw-node"]
        assert _job_counts(renders["trainer.yaml"], "proc") == (1, 1, 1)
        assert _job_counts(renders["trainer.yaml"], "pw-node") == (32, 32, 1)
        assert _job_counts(renders["orchestrator.yaml"], "proc") == (1, 1, 1)
        for name, d in renders.items():
            if name.startswith("rollout-"):
                assert [j["name"] for j in d["spec"]["replicatedJobs"]] == ["proc"]
                assert _job_counts(d, "proc") == (4, 4, 1)
            for job in d["spec"]["replicatedJobs"]:
                assert job["template"]["spec"]["completionMode"] == "Indexed"


def test_tpu_quantities_are_the_string_4(docs):
    tpu_containers = set()
    for renders in docs.values():
        for name, d in renders.items():
            for job in d["spec"]["replicatedJobs"]:
                for c in job["template"]["spec"]["template"]["spec"]["containers"]:
                    res = c.get("resources")
                    if res is None:
                        continue
                    assert res == {"requests": {"google.com/tpu": "4"}, "limits": {"google.com/tpu": "4"}}
                    tpu_containers.add((name.split("-")[0], job["name"], c["name"]))
    assert tpu_containers == {("trainer.yaml", "pw-node", "pathways-worker"), ("rollout", "proc", "main")}


def test_node_selectors(docs):
    d = docs["default"]
    assert pod(d["trainer.yaml"], "pw-node")["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu7x", "cloud.google.com/gke-tpu-topology": "4x4x8"}
    assert pod(d["rollout-0.yaml"])["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu7x", "cloud.google.com/gke-tpu-topology": "2x2x4"}
    assert pod(d["orchestrator.yaml"])["nodeSelector"] == {"node.kubernetes.io/instance-type": "n2d-standard-64"}
    assert "nodeSelector" not in pod(d["trainer.yaml"], "proc")   # placed by pod affinity
    orch = container(d["orchestrator.yaml"], "main")
    assert json.loads(arg_value(orch, "sandbox_node_selector")) == {"cloud.google.com/gke-nodepool": "sandbox-np"}


# --- the Pathways trainer shape -----------------------------------------------------------------
def test_trainer_jobset_shape(docs):
    for renders in docs.values():
        d = renders["trainer.yaml"]
        spec = d["spec"]
        assert list(spec) == ["coordinator", "failurePolicy", "network", "replicatedJobs"]
        assert spec["coordinator"] == {"replicatedJob": "proc"}
        assert spec["failurePolicy"] == {"restartStrategy": "Recreate"}
        assert spec["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
        head, workers = pod(d, "proc"), pod(d, "pw-node")
        for p in (head, workers):
            assert p["hostNetwork"] is True
            assert p["dnsPolicy"] == "ClusterFirstWithHostNet"
            assert {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"} in p["tolerations"]
        assert [c["name"] for c in head["containers"]] == ["pathways-rm", "pathways-proxy", "main"]
        assert [c["name"] for c in workers["containers"]] == ["pathways-worker"]
        ports = {c["name"]: [p["containerPort"] for p in c["ports"]]
                 for c in head["containers"] + workers["containers"]}
        assert ports == {"pathways-rm": [29001], "pathways-proxy": [29000], "main": [20002],
                         "pathways-worker": [29005]}
        (term,) = head["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term["topologyKey"] == "kubernetes.io/hostname"
        assert term["labelSelector"]["matchLabels"]["jobset.sigs.k8s.io/jobset-name"] == "demo-train"
        assert term["labelSelector"]["matchLabels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "pw-node"
        rm = container(d, "pathways-rm")["args"]
        for a in ("--node_type=resource_manager", "--instance_count=1", "--instance_type=tpu7x:4x4x8"):
            assert a in rm
        worker = container(d, "pathways-worker", "pw-node")
        assert "--resource_manager_address=$(PATHWAYS_HEAD):29001" in worker["args"]
        assert any(e["name"] == "PATHWAYS_HEAD" and "jobset.sigs.k8s.io/coordinator"
                   in e["valueFrom"]["fieldRef"]["fieldPath"] for e in worker["env"])


def test_rollout_and_orchestrator_shape(docs):
    d = docs["default"]
    for name, port in [("orchestrator.yaml", 20000), ("rollout-0.yaml", 20001)]:
        assert [j["name"] for j in d[name]["spec"]["replicatedJobs"]] == ["proc"]
        (c,) = pod(d[name])["containers"]
        assert c["name"] == "main" and c["ports"] == [{"containerPort": port}]
        assert c["image"] == "example.registry/rl/trainer:latest"
    assert pod(d["rollout-0.yaml"])["hostNetwork"] is True
    # Rollouts differ only by their name.
    r0 = dict(d["rollout-0.yaml"], metadata=None)
    assert all(dict(d[f"rollout-{i}.yaml"], metadata=None) == r0 for i in range(16))


def test_hyperparameters_reach_trainer_and_orchestrator(docs):
    d = docs["default"]
    trainer, orch = container(d["trainer.yaml"], "main"), container(d["orchestrator.yaml"], "main")
    expected = {"learning_rate": "1e-6", "adam_b1": "0.9", "adam_b2": "0.999", "weight_decay": "0.0",
                "max_grad_norm": "0.125", "batch_size": "16", "num_generations": "16", "max_steps": "30",
                "checkpoint_every_n_steps": "1", "max_checkpoints_to_keep": "30", "epsilon_low": "0.2",
                "epsilon_high": "0.28", "advantage_estimator": "grpo-loo", "loss_aggregation": "token-mean",
                "max_seq_tokens_per_tpu": "65536", "max_prompt_length": "4096",
                "max_response_length": "61440", "max_turns": "30", "attention": "flash",
                "base_num_kv_heads": "2", "rpc_timeout_s": "10800"}
    for c in (trainer, orch):
        assert {k: arg_value(c, k) for k in expected} == expected
    assert arg_value(trainer, "train_micro_batch_size") == "64"
    assert arg_value(trainer, "remat_policy") == "custom"
    assert arg_value(trainer, "maxtext_model_name") == "qwen3.5-397b-a17b"
    assert arg_value(trainer, "maxtext_ckpt") == "gs://example-ckpt/qwen35_397b/scanned_reshard_fsdp32_tp2/0/items"
    assert [arg_value(trainer, f"mesh_{a}") for a in ("fsdp", "tp", "expert", "context")] == ["32", "1", "2", "4"]


# --- environment --------------------------------------------------------------------------------
def _all_envs(docs):
    for variant, renders in docs.items():
        for name, d in renders.items():
            for job in d["spec"]["replicatedJobs"]:
                for c in job["template"]["spec"]["template"]["spec"]["containers"]:
                    for e in c.get("env", []):
                        yield variant, name, c["name"], e


def test_every_env_value_is_a_string(docs):
    count = 0
    for variant, name, cname, e in _all_envs(docs):
        assert isinstance(e["name"], str)
        assert ("value" in e) != ("valueFrom" in e), (variant, name, cname, e)
        if "value" in e:
            assert isinstance(e["value"], str), (variant, name, cname, e)
            count += 1
    assert count > 0


def test_downward_api_env_on_every_container(docs):
    labels = {"JOBSET_NAME": "jobset.sigs.k8s.io/jobset-name",
              "REPLICATED_JOB_NAME": "jobset.sigs.k8s.io/replicatedjob-name",
              "JOB_INDEX": "jobset.sigs.k8s.io/job-index",
              "POD_INDEX": "batch.kubernetes.io/job-completion-index"}
    for renders in docs.values():
        for d in renders.values():
            for job in d["spec"]["replicatedJobs"]:
                for c in job["template"]["spec"]["template"]["spec"]["containers"]:
                    head = c["env"][:4]
                    assert [e["name"] for e in head] == list(labels)
                    for e in head:
                        assert e["valueFrom"]["fieldRef"]["fieldPath"] == f"metadata.labels['{labels[e['name']]}']"


def test_env_per_role(docs, ref):
    d = docs["default"]
    trainer_ref = ref_env(ref, "Trainer")
    assert trainer_ref.pop("LIBTPU_INIT_ARGS") == "<trainer libtpu flags>"
    trainer_expected = {"JAX_PLATFORMS": "proxy,cpu", "JAX_BACKEND_TARGET": "grpc://localhost:29000",
                        **trainer_ref, "LIBTPU_INIT_ARGS": ref_libtpu(ref, "trainer")}
    assert list(plain_env(container(d["trainer.yaml"], "main")).items()) == list(trainer_expected.items())

    rollout_expected = {"JAX_PLATFORMS": "tpu,cpu", **ref_env(ref, "Rollout"),
                        "LIBTPU_INIT_ARGS": ref_libtpu(ref, "rollout")}
    for i in range(16):
        env = plain_env(container(d[f"rollout-{i}.yaml"], "main"))
        assert list(env.items()) == list(rollout_expected.items())

    orch_expected = ref_env(ref, "Orchestrator")
    assert list(plain_env(container(d["orchestrator.yaml"], "main")).items()) == list(orch_expected.items())
    # Spot checks of the string spellings the reference calls out.
    assert orch_expected["RAIDEN_BROADCAST_HOST_RATIO"] == "1.0"
    assert rollout_expected["ENABLE_MULTI_NUMA"] == "0"


def test_libtpu_flag_strings(docs, ref):
    trainer_flags = ref_libtpu(ref, "trainer")
    rollout_flags = ref_libtpu(ref, "rollout")
    assert len(trainer_flags.split()) == 15 and len(rollout_flags.split()) == 6
    assert "--xla_tpu_scoped_vmem_limit_kib=65472" in trainer_flags.split()
    for renders in docs.values():
        t = renders["trainer.yaml"]
        assert plain_env(container(t, "main"))["LIBTPU_INIT_ARGS"] == trainer_flags
        assert plain_env(container(t, "pathways-worker", "pw-node"))["LIBTPU_INIT_ARGS"] == trainer_flags
        proxy_args = container(t, "pathways-proxy")["args"]
        assert [a for a in proxy_args if a.startswith("--xla_")] == [
            f for f in trainer_flags.split() if f.startswith("--xla_")]
        assert not any(a.startswith("--DANGEROUS") for a in proxy_args)
        for name, d in renders.items():
            if name.startswith("rollout-"):
                assert plain_env(container(d, "main"))["LIBTPU_INIT_ARGS"] == rollout_flags


# --- vLLM ---------------------------------------------------------------------------------------
def test_vllm_json(docs, ref):
    expected = ref_vllm_json(ref)
    for renders in docs.values():
        for name, d in renders.items():
            if not name.startswith("rollout-"):
                continue
            c = container(d, "main")
            text = arg_value(c, "additional_config")
            assert text == expected
            assert json.loads(text)["sharding"]["sharding_strategy"]["expert_parallelism"] == ROLLOUT_EP
            assert {k: arg_value(c, k) for k in ("data_parallel_size", "max_model_len",
                    "max_num_batched_tokens", "max_num_seqs", "gpu_memory_utilization", "block_size")} == {
                "data_parallel_size": "2", "max_model_len": "65536", "max_num_batched_tokens": "4096",
                "max_num_seqs": "16", "gpu_memory_utilization": "0.9", "block_size": "256"}


def test_rollout_ep_follows_slice_and_dp(compiler):
    # EP = devices of the rollout slice / DP: 2 devices a chip * (2*2*8 chips) / 4 = 16,
    # and 2 * (2*2*4) / 1 = 32.
    for sets, ep in ((["ROLLOUT_TPU_SLICE=tpu7x:2x2x8", "VLLM_DATA_PARALLEL_SIZE=4"], 16),
                     (["VLLM_DATA_PARALLEL_SIZE=1"], 32)):
        _, (build,) = compiler.build(RECIPE.resolve(), sets=sets + ["ROLLOUT_REPLICAS=1"])
        (r,) = [r for r in build.renders if r.name == "rollout-0.yaml"]
        text = arg_value(container(yaml.safe_load(r.text), "main"), "additional_config")
        assert json.loads(text)["sharding"]["sharding_strategy"]["expert_parallelism"] == ep


# --- Kubernetes validity ------------------------------------------------------------------------
def test_jobsets_validate_against_the_crd(docs):
    import jsonschema

    assert JOBSET_CRD.is_file(), f"JobSet CRD not found at {JOBSET_CRD}"
    crd = yaml.safe_load(JOBSET_CRD.read_text(encoding="utf-8"))
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2"]
    validator = jsonschema.Draft7Validator(version["schema"]["openAPIV3Schema"])
    for variant, renders in docs.items():
        for name, d in renders.items():
            errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(d)]
            assert not errors, (variant, name, errors)


def test_renders_are_stable(compiler, texts):
    again = Compiler(Workspace.find(REPO)).build(RECIPE.resolve())[1]
    assert {b.variant: {r.name: r.text for r in b.renders} for b in again} == texts


# --- the recipe's consistency checks ------------------------------------------------------------
@pytest.mark.parametrize("sets,message", [
    (["TRAIN_MICRO_BATCH_SIZE=48"], "multiple of the trainer FSDP size"),
    (["VLLM_DATA_PARALLEL_SIZE=3"], "must divide the devices of the rollout slice"),
    (["ROLLOUT_REPLICAS=0"], "at least 1"),
])
def test_consistency_checks(compiler, sets, message):
    with pytest.raises(CompileError) as exc:
        compiler.build(RECIPE.resolve(), sets=sets)
    assert message in str(exc.value)
