"""The vLLM serving shape imports as calls of ``@rcpc//vllm_tpu.rcp`` (issue 39, kind 4):
a file of a Namespace, a StorageClass, a PersistentVolumeClaim and a Deployment running
vLLM's OpenAI API server (the published gemma4 server file, and generated variations: other
models, options, switches, slices, env, documents left out, reordered or added) is one call a
document, the server's arguments a dict of options, proven equal by the import; the oracle
here is PyYAML's reading of the file and of the renders, document by document.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.core.diagnostics import CompileError
from rcpc.domain.lint import lint
from rcpc.domain.workspace import Workspace
from rcpc.importer import proof
from rcpc.importer.driver import import_manifest

REPO = Path(__file__).resolve().parents[1]
VLLM = REPO.parent / "shared" / "data" / "tpu-recipes" / "more" / "inference_ironwood_vLLM_Gemma4_gemma4-server.yaml"
SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SERVER = ["python3", "-m", "vllm.entrypoints.openai.api_server"]


def _import(tmp_path: Path, text: str, sets: dict | None = None):
    src = tmp_path / "server.yaml"
    src.write_text(text)
    imported = import_manifest(Workspace.find(REPO), src, "server.yaml", sets or {}, None)
    out = tmp_path / "r.rcp"
    out.write_text(imported.text)
    return imported, out


def _same_as_pyyaml(out: Path, text: str, values: dict) -> None:
    """The renders, read by PyYAML, are the file's documents after envsubst, in order."""
    renders = proof.renders(proof.fresh_compiler(REPO), out, values)
    ours = [yaml.safe_load(t) for t in renders.values()]
    theirs = [d for d in yaml.safe_load_all(proof.envsubst(text, values)) if d is not None]
    assert ours == theirs


def test_the_published_server_file_is_one_call_a_document(tmp_path):
    imported, out = _import(tmp_path, VLLM.read_text())
    assert imported.how == "a call of vllm_tpu_deployment"
    for call in ('kube_namespace("gemma4-test")', 'gke_pd_storage_class("hyperdisk-balanced-tpu")',
                 'volume_claim("hd-claim-v2", "hyperdisk-balanced-tpu", "100Gi", namespace = "gemma4-test")',
                 "vllm_tpu_deployment(", 'tpu_slice("tpu7x:2x2x1")', '"no-enable-prefix-caching": True',
                 '"gpu-memory-utilization": 0.9', 'claim = "hd-claim-v2"'):
        assert call in imported.text
    assert "manifest(" not in imported.text and '"--' not in imported.text
    assert imported.check(proof.fresh_compiler(REPO), out) == []
    _same_as_pyyaml(out, VLLM.read_text(), {})
    assert [d.code for d in lint(proof.fresh_compiler(REPO), [out])] == []
    # a canary: the proof sees a changed option
    out.write_text(imported.text.replace('"max-num-seqs": 256', '"max-num-seqs": 255'))
    (found,) = imported.check(proof.fresh_compiler(REPO), out)[:1]
    assert "$[3].spec.template.spec.containers[0].args[5]" in found


_SLICES = ["tpu7x:2x2x1", "tpu-v6e-slice:1x1", "tpu-v6e-slice:2x2", "tpu-v6e-slice:2x4", "tpu-v5p-slice:2x2x1",
           "tpu-v5-lite-podslice:2x4"]
_CHIPS = {"2x2x1": 4, "1x1": 1, "2x2": 4, "2x4": 8}
_VALUES = {
    "host": st.just("0.0.0.0"), "port": st.sampled_from(["8000", "8080"]), "seed": st.sampled_from(["0", "42"]),
    "max-model-len": st.sampled_from(["1524", "8192"]), "tensor-parallel-size": st.sampled_from(["1", "4", "8"]),
    "gpu-memory-utilization": st.sampled_from(["0.9", "0.95", "0.90"]),
    "kv-cache-dtype": st.sampled_from(["fp8", "auto"]), "served-model-name": st.from_regex(r"[a-z][a-z0-9.-]{0,8}",
                                                                                           fullmatch=True),
    "limit-mm-per-prompt": st.just('{"image": 0, "video": 0}'), "download-dir": st.just("/data/models"),
    "trust-remote-code": st.just(None), "async-scheduling": st.just(None), "no-enable-prefix-caching": st.just(None),
}


@st.composite
def _server_files(draw):
    """A server file: some of the four documents (the Deployment always), in some order, with
    perhaps a Service after them, and the Deployment's variations."""
    model = draw(st.sampled_from(["google/gemma-4-31B-it", "Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B-Instruct",
                                  "${MODEL_ID}"]))
    keys = draw(st.lists(st.sampled_from(sorted(_VALUES)), unique=True, max_size=6))
    options = {"model": model} | {k: draw(_VALUES[k]) for k in keys}
    options = dict(draw(st.permutations(list(options.items()))))
    spec = draw(st.sampled_from(_SLICES))
    accelerator, topology = spec.split(":")
    namespace = draw(st.sampled_from([None, "serving", "${NAMESPACE}"]))
    claim = draw(st.booleans())
    env = draw(st.lists(st.sampled_from(["HF_HOME", "VLLM_LOGGING_LEVEL", "TPU_MULTIPROCESS_DP"]), unique=True))
    token = draw(st.sampled_from(["hf-secret", "my-token", None]))
    port = int(options.get("port", "8000"))
    meta = {"name": "vllm-server"} | ({"namespace": namespace} if namespace else {})
    variables = [{"name": n, "value": "1" if n != "HF_HOME" else "/data"} for n in env]
    if token:
        variables.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": token, "key": "hf_api_token"}}})
    mounts, volumes = [{"mountPath": "/dev/shm", "name": "dshm"}], [{"emptyDir": {"medium": "Memory"}, "name": "dshm"}]
    if claim:
        mounts.insert(0, {"mountPath": "/data", "name": "data-volume"})
        volumes.append({"name": "data-volume", "persistentVolumeClaim": {"claimName": "cache"}})
    chips = str(_CHIPS[topology])
    container = {"name": "vllm-server", "image": draw(st.sampled_from(["vllm/vllm-tpu:nightly", "${IMAGE}"])),
                 "command": SERVER, "args": [f"--{k}" if v is None else f"--{k}={v}" for k, v in options.items()],
                 "env": variables, "ports": [{"containerPort": port}],
                 "resources": {"limits": {"google.com/tpu": chips}, "requests": {"google.com/tpu": chips}},
                 "readinessProbe": {"tcpSocket": {"port": port}, "initialDelaySeconds": 15, "periodSeconds": 10},
                 "volumeMounts": mounts}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": {
        "replicas": draw(st.sampled_from([1, 2])), "selector": {"matchLabels": {"app": "vllm-server"}},
        "template": {"metadata": {"labels": {"app": "vllm-server"}}, "spec": {
            "nodeSelector": {"cloud.google.com/gke-tpu-accelerator": accelerator,
                             "cloud.google.com/gke-tpu-topology": topology},
            "containers": [container], "volumes": volumes}}}}
    others = {
        "Namespace": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace or "default"}},
        "StorageClass": {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"},
                         "provisioner": "pd.csi.storage.gke.io", "parameters": {"type": draw(st.sampled_from(
                             ["hyperdisk-balanced", "pd-ssd"]))}, "reclaimPolicy": "Delete",
                         "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": True},
        "PersistentVolumeClaim": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "cache"},
                                  "spec": {"storageClassName": "fast", "accessModes": draw(st.sampled_from(
                                      [["ReadWriteOnce"], ["ReadWriteOncePod"]])),
                                           "resources": {"requests": {"storage": "50Gi"}}}},
    }
    kept = draw(st.lists(st.sampled_from(sorted(others)), unique=True))
    docs = draw(st.permutations([others[k] for k in kept] + [deployment]))
    if draw(st.booleans()):  # a document of no library shape stays a data literal
        docs.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "vllm-service"},
                     "spec": {"selector": {"app": "vllm-server"}, "type": "LoadBalancer",
                              "ports": [{"name": "http", "port": port, "targetPort": port}]}})
    return "---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs), options


@SETTINGS
@given(file=_server_files())
@example(file=(VLLM.read_text(), None))
def test_server_files_import_as_calls_proven_equal(file, tmp_path):
    """Every variation imports as one call a document of the library's kinds (the Deployment
    ``vllm_tpu_deployment`` with ``VLLM_OPTIONS``: each option in the file's order, a switch
    True), a Service as a data literal; the import's proof holds and PyYAML reads the same
    documents off the renders as off the file, for the defaults and for other values."""
    text, options = file
    imported, out = _import(tmp_path, text)
    assert imported.how == "a call of vllm_tpu_deployment", imported.how
    assert ("manifest(" in imported.text) is ("kind: Service" in text)
    params = proof.fresh_compiler(REPO).evaluate(out.resolve(), {}).params
    for values in ({p.name: p.default.value for p in params}, {p.name: f"v-{p.name.lower()}" for p in params}):
        _same_as_pyyaml(out, text, values)
    if options is not None:
        block = imported.text.split("VLLM_OPTIONS = {", 1)[1].split("\n}", 1)[0]
        assert [ln.split('"')[1] for ln in block.strip().splitlines()] == list(options)
        switches = [k for k, v in options.items() if v is None]
        assert all(f'"{k}": True' in block for k in switches)


@pytest.mark.parametrize("change, why", [
    ("- --max-num-seqs=256", "- --max-num-seqs\n        - '256'"),  # the value in the next word
    ("- --seed=42", "- --seed=42\n        - --seed=43"),  # an option twice
    ("gke-tpu-topology: 2x2x1", "gke-tpu-topology: 2x2x2"),  # two hosts: one pod cannot hold the slice
    ("containerPort: 8000", "containerPort: 8001"),  # a port that is not the server's
])
def test_what_the_library_does_not_render_stays_a_data_literal(change, why, tmp_path):
    """A Deployment the library's call does not render as written is imported as data
    literals, still proven equal."""
    text = VLLM.read_text()
    assert change in text
    imported, out = _import(tmp_path, text.replace(change, why))
    assert imported.how.startswith("data literals, one render for each of its 4 documents")
    assert "vllm_tpu_deployment" not in imported.text.split("\n\n", 1)[1]
    assert imported.check(proof.fresh_compiler(REPO), out) == []


@pytest.mark.parametrize("options, words", [
    ('{"enforce-eager": False}', "vLLM option 'enforce-eager' is False or None"),
    ('{"seed": None}', "vLLM option 'seed' is False or None"),
    ('{"--model": "x"}', "'--model' is not a vLLM option name"),
    ('{"max_model_len": 8}', "'max_model_len' is not a vLLM option name"),
])
def test_vllm_args_refuses_what_argparse_would_not_read(options, words, tmp_path):
    """``vllm_args`` checks its options: names vLLM's argparse has the form of, no False or
    None (E0790 at the call)."""
    (tmp_path / "rcp.toml").write_text("")
    r = tmp_path / "r.rcp"
    r.write_text(f'load("@rcpc//vllm_tpu.rcp", "vllm_args")\n\nA = vllm_args({options})\n')
    with pytest.raises(CompileError) as exc:
        proof.fresh_compiler(tmp_path).bindings(r)
    d = exc.value.diagnostics[0]
    assert d.code == "E0790" and words in d.message and d.span.path == "@rcpc//vllm_tpu.rcp"
    assert [(why, s.line) for why, s in d.related] == [("in vllm_args() called from", 3)]
