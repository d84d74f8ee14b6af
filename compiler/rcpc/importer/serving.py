"""The vLLM serving shape of a manifest file, as calls of ``@rcpc//vllm_tpu.rcp``.

A file of the shape AI-Hypercomputer/tpu-recipes publishes for a vLLM server on a TPU slice
(../shared/data/tpu-recipes/more/inference_ironwood_vLLM_Gemma4_gemma4-server.yaml: a
Namespace, a StorageClass, a PersistentVolumeClaim and a Deployment running
``vllm.entrypoints.openai.api_server``) is read document by document: each one of those kinds
becomes a call of the library function rendering it (``kube_namespace``, ``gke_pd_storage_class``,
``volume_claim``, ``vllm_tpu_deployment``), the server's ``--name=value`` arguments a dict
of options (``VLLM_OPTIONS``, rendered by ``vllm_args``), and any other document a data literal
(:func:`rcpc.importer.manifest.literal`'s form). The shape is the Deployment's: without one
running a vLLM server there is no call. As for every candidate
(:mod:`rcpc.importer.library`), nothing read here is trusted: the import's proof compares
the renders with the file and falls back to data literals when they differ.
"""

from __future__ import annotations

import re

import attrs

from rcpc.importer import manifest as m
from rcpc.importer.library import ACCELERATOR_LABEL, TOPOLOGY_LABEL, Call
from rcpc.importer.literals import fstring, number, placeholders, string

VLLM_TPU = "@rcpc//vllm_tpu.rcp"
OPTIONS_NAME = "VLLM_OPTIONS"
# What the library writes by default (@rcpc//vllm_tpu.rcp).
API_SERVER = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
HF_TOKEN_SECRET = {"name": "hf-secret", "key": "hf_api_token"}
DATA_VOLUME = "data-volume"
DATA_PATH = "/data"
STORAGE_CLASS_FIELDS = {"provisioner": "pd.csi.storage.gke.io", "reclaimPolicy": "Delete",
                        "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": True}
_OPTION = re.compile(r"[a-z][a-z0-9-]*")  # vllm_option_ok


def _text(v, names) -> str:
    """Recipe source of a string of the template (its placeholders as references)."""
    if not isinstance(v, str):
        raise TypeError(v)
    return fstring(placeholders(v, names))


def _metadata(doc: dict, names) -> tuple[str, list]:
    """``(name source, [namespace keyword])`` of an object's metadata of only a name and a
    namespace."""
    meta = doc["metadata"]
    if not set(meta) <= {"name", "namespace"}:
        raise KeyError("metadata")
    return _text(meta["name"], names), ([f"namespace = {_text(meta['namespace'], names)}"] if "namespace" in meta
                                        else [])


def _namespace(doc: dict, names):
    if set(doc) != {"apiVersion", "kind", "metadata"} or set(doc["metadata"]) != {"name"}:
        return None
    return [], Call("kube_namespace", [_text(doc["metadata"]["name"], names)], [])


def _storage_class(doc: dict, names):
    if {k: doc.get(k) for k in STORAGE_CLASS_FIELDS} != STORAGE_CLASS_FIELDS or set(doc["parameters"]) != {"type"}:
        return None
    name, rest = _metadata(doc, names)
    disk = doc["parameters"]["type"]
    args = [name] + ([] if disk == "hyperdisk-balanced" else [f"disk_type = {_text(disk, names)}"])
    return ([], Call("gke_pd_storage_class", args, [])) if not rest else None


def _volume_claim(doc: dict, names):
    spec = doc["spec"]
    name, keywords = _metadata(doc, names)
    args = [name, _text(spec["storageClassName"], names), _text(spec["resources"]["requests"]["storage"], names)]
    modes = spec["accessModes"]
    if modes != ["ReadWriteOnce"]:
        keywords.append("access_modes = [" + ", ".join(_text(x, names) for x in modes) + "]")
    return [], Call("volume_claim", args + keywords, [])


def options(args: list, names) -> list | None:
    """The server's arguments as the lines of ``VLLM_OPTIONS = {...}`` (``--name=value`` an
    entry, a number as spelled, else a string; ``--name`` True), or None when an argument is
    not of those forms (a value in the next word, a name vllm_args refuses, a name twice)."""
    entries: dict = {}
    for a in args:
        if not isinstance(a, str) or not a.startswith("--"):
            return None
        key, eq, v = a[2:].partition("=")
        if not _OPTION.fullmatch(key) or key in entries:
            return None
        entries[key] = "True" if not eq else v if number(v) else _text(v, names)
    return [f"{OPTIONS_NAME} = {{"] + [f"    {string(k)}: {v}," for k, v in entries.items()] + ["}", ""]


def _env(items: list, names) -> tuple[list, object]:
    """``(env keywords, the hf_token Secret key ref)`` of a container's env: ``{name, value}``
    items, then (optionally) HF_TOKEN from a Secret key."""
    token = None
    if items and items[-1].get("name") == "HF_TOKEN" and "valueFrom" in items[-1]:
        if set(items[-1]) != {"name", "valueFrom"} or set(items[-1]["valueFrom"]) != {"secretKeyRef"}:
            raise KeyError("env")
        token, items = items[-1]["valueFrom"]["secretKeyRef"], items[:-1]
    if any(set(i) != {"name", "value"} for i in items):
        raise KeyError("env")
    env = ["env = {" + ", ".join(f"{_text(i['name'], names)}: {_text(i['value'], names)}" for i in items) + "}"]
    return env if items else [], token


def _deployment(doc: dict, names):
    """``vllm_tpu_deployment(NAME, IMAGE, tpu_slice(...), VLLM_OPTIONS, ...)`` of a Deployment
    whose one container runs the vLLM server; None otherwise."""
    spec = doc["spec"]
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    command = container.get("command")
    if not isinstance(command, list) or "vllm" not in " ".join(map(str, command)):
        return None
    before = options(container.get("args") or [], names)
    if before is None:
        return None
    name, keywords = _metadata(doc, names)
    selector = pod["nodeSelector"]
    slice_spec = f"{selector[ACCELERATOR_LABEL]}:{selector[TOPOLOGY_LABEL]}"
    args = [name, _text(container["image"], names), f"tpu_slice({string(slice_spec)})", OPTIONS_NAME]
    env, token = _env(container.get("env") or [], names)
    keywords += env
    if token != HF_TOKEN_SECRET:
        keywords.append("hf_token = " + ("None" if token is None else m.value(token, names, None)))
    claims = [v["persistentVolumeClaim"]["claimName"] for v in pod.get("volumes") or []
              if v.get("name") == DATA_VOLUME and "persistentVolumeClaim" in v]
    if claims:
        keywords.append(f"claim = {_text(claims[0], names)}")
        paths = [v["mountPath"] for v in container.get("volumeMounts") or [] if v.get("name") == DATA_VOLUME]
        if paths and paths[0] != DATA_PATH:
            keywords.append(f"data_path = {_text(paths[0], names)}")
    if spec.get("replicas", 1) != 1:
        keywords.append(f"replicas = {m.value(spec['replicas'], names, None)}")
    if command != API_SERVER:
        keywords.append(f"command = {m.value(command, names, None)}")
    return before, Call("vllm_tpu_deployment", args + keywords, [])


# kind → (apiVersion, reader)
READERS = {"Namespace": ("v1", _namespace), "StorageClass": ("storage.k8s.io/v1", _storage_class),
           "PersistentVolumeClaim": ("v1", _volume_claim), "Deployment": ("apps/v1", _deployment)}


def _call(doc, names):
    """``(lines before, Call)`` of one document, or None when it is not of a library shape."""
    api, reader = READERS.get(doc.get("kind"), (None, None))
    if reader is None or doc.get("apiVersion") != api:
        return None
    try:
        return reader(doc, names)
    except (AttributeError, KeyError, TypeError, ValueError):  # not of this shape
        return None


@attrs.frozen
class ServingCandidate:
    """The vLLM serving shape (see the module docstring); the interface of
    :class:`rcpc.importer.library.Candidate` (``library``, ``shape``, ``extract``)."""

    library: str = VLLM_TPU
    shape: str = "vllm_tpu_deployment"

    def extract(self, t: m.Template) -> str | None:
        """The whole recipe (one call a document of a library shape, data literals for the
        others), or None when no document is a Deployment running the vLLM server or two
        documents would render under the same name."""
        docs = t.documents or (t,)
        names = set(t.params)
        kinds = [str(d.doc.get("kind", "manifest")).lower() for d in docs]
        calls = [_call(d.doc, names) for d in docs]
        if len(set(kinds)) != len(kinds) or not any(c is not None and c[1].function == self.shape for c in calls):
            return None
        body, loads = [], set()
        for d, kind, found in zip(docs, kinds, calls):
            if found is None:
                body += m.literal_body(d, kind, first=d is docs[0])
                continue
            before, call = found
            loads.add(call.function)
            body += before + [call.inline(), ""]
        how = "as calls of @rcpc//vllm_tpu.rcp" + (", one a document" if t.documents else "")
        lines = m.header(t, how)
        at = lines.index("") + 1
        lines[at:at] = [f"load({string(self.library)}, {', '.join(string(n) for n in sorted(loads))})", ""]
        return "\n".join(lines + body + ['variant("default")']) + "\n"


CANDIDATES = (ServingCandidate(),)
