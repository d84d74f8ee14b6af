"""What MaxText checks when it starts, beyond each flag: the model config a ``model_name``
loads, and ``M_<KEY>`` environment overrides (MaxText ``configs/pyconfig.py``,
``_initialize_pydantic``; docs/maxtext.md states the rules with their sources).

Checked on every flag set a render carries, whatever its kind and shape, as the render
protocol finds them (:func:`rcpc.domain.renders.carried`: a ``flag_file``, an ``args`` list, a
``bash -c`` string, a ``command_file``'s ``--command``), on the tokens MaxText reads there; the
container ones (env, mesh) where a Kubernetes container's ``command`` or ``args`` hold them.
Findings:

* ``E0315`` — a flag also set by ``models/<model_name>.yml`` to another value, without
  ``override_model_config`` (MaxText's ``validate_no_keys_overridden_twice``);
* ``E0316`` — a container env ``M_<KEY>`` for a key its flags set (MaxText refuses a key set
  both on the command line and in the environment), or one the model config sets;
* ``E0319`` — an ``M_<KEY>`` value MaxText cannot parse as the key's type (``int()``,
  ``float()``, ``str2bool``), or for a key whose value is None or a list, or a value it parses
  and its config then refuses (the schema's type: an enum's other value, a bound, ``none``
  made None by ``_prepare_for_pydantic``);
* ``W0315`` — an ``M_`` variable naming no key MaxText reads (it is ignored);
* ``E0322`` — a container env ``XLA_FLAGS`` beside a ``dump_hlo_xla_flags`` of its flags
  (MaxText's ``validate_and_set_hlo_dump_defaults`` refuses both);
* ``E0350`` — a config one of MaxText's cross-field refusals (types.py's model validators)
  refuses (:func:`rcpc.domain.maxtext.crossfield.check_refusals`), once a flag set;
* ``E0340`` — the flag set's mesh does not fit the TPU slice its container's pod selects (node
  selector or GKE slice-topology annotation: :func:`rcpc.domain.kube.slices.pod_slice`) and the number
  of slices (a JobSet replicated job's ``replicas``, one slice a replica as XPK runs it; 1 for
  a Job or a Pod), with the container's ``M_`` variables (:func:`rcpc.domain.maxtext.mesh.check_mesh`):
  MaxText builds its mesh from the devices it finds (``create_device_mesh``), whatever
  ``tpu_slice`` the recipe named.
"""

from __future__ import annotations

from rcpc.core import record
from rcpc.core.diagnostics import WARNING, CompileError, Diagnostic, did_you_mean
from rcpc.domain.maxtext.emit import value_text
from rcpc.domain.maxtext import lax
from rcpc.domain.maxtext.crossfield import check_refusals
from rcpc.domain.kube.slices import pod_slice
from rcpc.domain.kube.expansion import env_entries
from rcpc.domain.maxtext.flagset import resolved
from rcpc.core.values import Dict, Int, List, Str, to_python
from rcpc.domain.renders import carried
from rcpc.domain.values import FlagSet, Manifest

import json

ENV_PREFIX = "M_"  # pyconfig._MAX_PREFIX
# variables other than M_ ones that MaxText's config loader reads and can refuse on (types.py:
# validate_and_set_hlo_dump_defaults); the others it reads (HF_TOKEN, JOBSET_NAME) only fill values
LOADER_ENV = ("XLA_FLAGS",)
_READABLE = {"bool": "y/yes/t/true/1 or n/no/f/false/0 (any case)", "int": "write decimal digits (Python's int())",
             "float": "write a number Python's float() reads, such as 1e-5"}


def check_renders(renders, found: dict | None = None) -> list[Diagnostic]:
    """Findings of the module docstring for a variant's renders (values of any render kind).
    ``found`` keeps, across calls, what is derived from values alone, by the values' identity
    (variants share render values, :mod:`rcpc.core.trace`, and values are immutable): each
    render's embeddings and pods, and each check's findings."""
    found = {} if found is None else found
    memo = found.setdefault("embed", {})
    out: list = []
    checked: set = set()
    refused: dict = {}  # id(flag set) -> (flag set, the M_ names of containers carrying it)
    for r in renders:
        embedded, pods = _kept(found, "render", (r,), lambda: render_sites(r, memo))
        for e in embedded:
            fs = e.seen()
            env = [name for name, _, _ in env_overrides(e.container)] if e.container is not None else ()
            if id(fs) not in checked:
                checked.add(id(fs))
                out.extend(_kept(found, "model", (fs,), lambda: check_model_config(fs)))
            refused.setdefault(id(fs), (fs, set()))[1].update(env)
            if e.container is None:
                continue
            if (id(fs), id(e.container)) not in checked:
                checked.add((id(fs), id(e.container)))
                out.extend(_kept(found, "env", (e.container, fs), lambda: check_env(e.container, [fs])))
            pod = pods.get(id(e.container))
            if pod is not None and (id(fs), id(pod[0])) not in checked:
                checked.add((id(fs), id(pod[0])))
                out.extend(_kept(found, "mesh", (fs, pod[0], e.container),
                                 lambda: _pod_mesh(fs, *pod[1:], e.container)))
    for fs, env in refused.values():  # once a flag set, with every container's M_ variables
        if fs.schema is None or not fs.schema.refusals:
            continue
        keys = frozenset(k for k in fs.schema.fields if ENV_PREFIX + k.upper() in env) if env else frozenset()
        out.extend(_kept(found, ("refusals", keys), (fs,), lambda: _refusals(fs, keys)))
    return out


def render_sites(r, memo: dict) -> tuple:
    """(the embeddings of render ``r`` (a render value of any kind:
    :func:`rcpc.domain.renders.carried`), {id(container): (pod, slice, slices, replicas)} of
    the pods of a manifest that select a TPU slice); ``memo`` as for
    :func:`rcpc.domain.embedding.embeddings`."""

    pods = {}
    if type(r) is Manifest:
        for pod, slice_, slices, where in slice_pods(r.data):
            for c in pod_containers(pod):
                pods[id(c)] = (pod, slice_, slices, where)
    return tuple(carried(r, memo)), pods


def _refusals(fs: FlagSet, keys: frozenset) -> list[Diagnostic]:
    cli = command_line(fs)
    return check_refusals(fs, cli, *model_of(fs, cli), keys)


def _kept(found: dict, kind, values: tuple, make):
    """``make()``, kept in ``found`` under ``kind`` (a hashable: a name, with what else the
    result depends on) and the identities of ``values`` (held with the result, so no
    identity is reused while it is kept)."""
    key = (kind, *map(id, values))
    hit = found.get(key)
    if hit is None or any(a is not b for a, b in zip(hit[0], values)):
        hit = found[key] = (values, make())
    return hit[1]


def slice_pods(data: Dict):
    """(pod spec, :class:`TpuSlice`, number of slices, replicas value or None) for each pod
    of a ``JobSet`` (each replicated job's pod template; its ``replicas``, default 1, are the
    slices), ``Job`` (``spec.template``) or ``Pod`` manifest that selects a valid TPU slice
    (:func:`rcpc.domain.kube.slices.pod_slice`). A topology no slice has is the Kubernetes checks'
    to report (``E0401``); such a pod is left out here."""
    kind = data.items.get("kind")
    kind = kind.value if type(kind) is Str else None
    spec = data.items.get("spec")
    if type(spec) is not Dict:
        return
    if kind == "Pod":
        templates = [(data, None)]
    elif kind == "Job":
        templates = [(spec.items.get("template"), None)]
    elif kind == "JobSet":
        jobs = spec.items.get("replicatedJobs")
        templates = []
        for rj in jobs.items if type(jobs) is List else ():
            job = _at(rj, "template", "spec")
            if job is not None:
                replicas = rj.items.get("replicas")
                templates.append((job.items.get("template"), replicas if type(replicas) is Int else None))
    else:
        return
    for template, replicas in templates:
        pod = _at(template, "spec")
        if pod is None:
            continue
        try:
            slice_ = pod_slice(pod, template.items.get("metadata"))
        except CompileError:
            continue
        slices = replicas.value if replicas is not None else 1
        if slice_ is not None and slices >= 1:  # 0 replicas run no pod
            yield pod, slice_, slices, replicas


def _at(d, *keys):
    for k in keys:
        d = d.items.get(k) if type(d) is Dict else None
    return d if type(d) is Dict else None


def pod_containers(pod: Dict):
    """The dicts of a pod spec's ``containers`` list."""
    group = pod.items.get("containers")
    return [c for c in (group.items if type(group) is List else ()) if type(c) is Dict]


def _pod_mesh(fs: FlagSet, slice_, slices: int, replicas, container: Dict) -> list[Diagnostic]:
    """``E0340`` of :func:`rcpc.domain.maxtext.mesh.check_mesh` against the slice a pod runs on,
    showing where the pod selects it."""
    name = container.items.get("name")
    who = f"container {name.value!r}" if type(name) is Str else "the container"
    where = ((f"{who} runs on {slice_.accelerator}:{slice_.topology} "
              f"({slice_.devices} devices): the pod selects it here", slice_.span),)
    if replicas is not None:
        where += ((f"{slices} slice{'' if slices == 1 else 's'}: the replicated job's replicas", replicas.span),)
    env = {}
    if type(container.items.get("env")) is List:
        for name_, value, item in env_overrides(container):  # a later entry wins, as in the kubelet
            env[name_] = (value, value.span if value is not None else item.span)
    from rcpc.domain.maxtext.mesh import check_mesh

    return [record.evolve(d, related=d.related + where) for d in check_mesh(fs, slice_, slices, container.span, env)]


def command_line(fs: FlagSet) -> dict:
    """The top-level config OmegaConf's ``from_cli`` makes of the flag set: key → plain value
    (dotted keys nested), with the :class:`FlagEntry` that set each top key last."""
    values: dict = {}
    where: dict = {}
    for key, e in resolved(fs).items():
        top, *rest = key.split(".")
        where[top] = e
        if not rest:
            values[top] = to_python(e.value)
            continue
        node = values.setdefault(top, {})
        for seg in rest[:-1]:
            node = node.setdefault(seg, {}) if type(node) is dict else node
        if type(node) is dict:
            node[rest[-1]] = to_python(e.value)
    return {k: (values[k], where[k]) for k in values}


def model_of(fs: FlagSet, cli: dict) -> tuple[str | None, dict | None]:
    """(model name, model config) that ``model_name`` loads; (None, None) when none."""
    schema = fs.schema
    name = cli["model_name"][0] if "model_name" in cli else schema.defaults.get("model_name", "default")
    if type(name) is not str or name == "default":
        return None, None
    name = name.replace("-Instruct", "") if "-Instruct" in name else name
    return name, schema.models.get(name)


def _overrides_model(fs: FlagSet, cli: dict) -> bool:
    if "override_model_config" in cli:
        return bool(cli["override_model_config"][0])
    return bool(fs.schema.defaults.get("override_model_config"))


def check_model_config(fs: FlagSet) -> list[Diagnostic]:
    """``E0315`` for each flag that ``models/<model_name>.yml`` also sets to a value that is
    not equal (Python ``!=`` on the values OmegaConf reads, as MaxText compares them), unless
    ``override_model_config`` is true."""
    if fs.schema is None:
        return []
    cli = command_line(fs)
    name, model = model_of(fs, cli)
    if not model or _overrides_model(fs, cli):
        return []
    out = []
    for key, model_value in model.items():
        if key in cli and cli[key][0] != model_value:
            entry = cli[key][1]
            related = (("model_name set here", cli["model_name"][1].value.span),) if "model_name" in cli else ()
            out.append(Diagnostic(
                "E0315", f"'{key}' is {value_text(entry.value)} here, but models/{name}.yml sets it to "
                f"{_yaml_text(model_value)}", entry.value.span, related=related,
                hint="MaxText stops when a flag and the model config disagree: drop the flag, or add "
                "\"override_model_config\": True to the flag set",
                notes=(f"schema: {fs.schema.path}",)))
    return out


def env_overrides(container: Dict) -> list[tuple[str, object, Dict]]:
    """(name, value, entry) of each ``M_...`` variable of a container's env (none when it has
    no ``env`` list); a string value as the container receives it, ``$(VAR)`` and ``$$``
    expanded by Kubernetes (:func:`rcpc.domain.kube.expansion.env_entries`; the span the
    value's)."""
    out = []
    for _, item, name, text in env_entries(container):
        if name.startswith(ENV_PREFIX):
            value = item.items.get("value")
            if type(value) is Str and text is not None and text != value.value:
                value = Str(text, value.span)
            out.append((name, value, item))
    return out


def check_env(container: Dict, carried: list) -> list[Diagnostic]:
    """``E0316``, ``E0319`` and ``W0315`` (module docstring) for one container carrying the
    flag sets ``carried``."""
    out = []
    cname = container.items["name"].value if type(container.items["name"]) is Str else "?"
    lines = [command_line(fs) for fs in carried]
    for name, value, item in env_overrides(container):
        span = item.items["name"].span
        hit = next(((cli, k) for cli in lines for k in cli if ENV_PREFIX + k.upper() == name), None)
        if hit is not None:
            cli, key = hit
            out.append(Diagnostic(
                "E0316", f"container '{cname}' sets {name} in its env and '{key}' in its MaxText flags",
                span, related=(("flag set here", cli[key][1].key_span),),
                hint="MaxText refuses a key set both on the command line and in the environment: drop one"))
            continue
        typed = next((i for i, fs in enumerate(carried) if fs.schema is not None), None)
        if typed is not None:
            out.extend(_env_against_schema(carried[typed], lines[typed], name, value, span, cname))
    out.extend(_hlo_dump_twice(container, cname, carried, lines))
    return out


def loader_env(container: Dict) -> list[tuple[str, str, Dict]]:
    """(name, text as the container receives it, entry) of each variable of a container's env,
    other than the ``M_`` ones, that MaxText's config loader reads and can refuse on
    (:data:`LOADER_ENV`), the last entry of a name winning; one whose value is known only
    when the pod runs (``valueFrom``) is left out."""
    found = {name: (name, text, item) for _, item, name, text in env_entries(container)
             if name in LOADER_ENV and text is not None}
    return list(found.values())


def _hlo_dump_twice(container: Dict, cname: str, carried: list, lines: list) -> list[Diagnostic]:
    """``E0322``: the container's env sets ``XLA_FLAGS`` (not empty) and a MaxText flag set it
    carries sets ``dump_hlo_xla_flags`` (not empty, by a flag or an ``M_DUMP_HLO_XLA_FLAGS``
    variable): MaxText's ``validate_and_set_hlo_dump_defaults`` (types.py) refuses both."""
    xla = next((entry for name, text, entry in loader_env(container) if name == "XLA_FLAGS" and text), None)
    if xla is None:
        return []
    env = {name: value for name, value, _ in env_overrides(container)}
    out = []
    for fs, cli in zip(carried, lines):
        if fs.schema is None or "dump_hlo_xla_flags" not in fs.schema.fields:
            continue
        by_env = env.get(ENV_PREFIX + "DUMP_HLO_XLA_FLAGS")
        if type(by_env) is Str:
            dump, related = by_env.value, (("M_DUMP_HLO_XLA_FLAGS set here", by_env.span),)
        elif "dump_hlo_xla_flags" in cli:
            value, entry = cli["dump_hlo_xla_flags"]
            dump, related = value, (("dump_hlo_xla_flags set here", entry.key_span),)
        else:
            continue
        if dump and type(dump) is str:
            out.append(Diagnostic(
                "E0322", f"container '{cname}' sets XLA_FLAGS in its env and its MaxText flags set "
                "dump_hlo_xla_flags", xla.items["name"].span, related=related,
                hint="MaxText refuses both (types.py, validate_and_set_hlo_dump_defaults): put the dump flags "
                     "in dump_hlo_xla_flags and drop XLA_FLAGS, or the other way round"))
    return out


def _env_against_schema(fs, cli, name, value, span, cname) -> list[Diagnostic]:
    schema = fs.schema
    model_name, model = model_of(fs, cli)
    model = model or {}
    raw = {k for k in schema.fields if "base" in schema.fields[k]} | set(model) | set(cli)
    by_env = {ENV_PREFIX + k.upper(): k for k in raw}
    key = by_env.get(name)
    if key is None:
        hint = did_you_mean(name, list(by_env))
        return [Diagnostic("W0315", f"MaxText ignores {name} in the env of container '{cname}': it names no key "
                           "of base.yml, the model config or the flags", span, WARNING, hint=hint)]
    if key in model and not _overrides_model(fs, cli):
        return [Diagnostic("E0316", f"container '{cname}' sets {name} in its env, and models/{model_name}.yml sets "
                           f"'{key}'", span, hint="MaxText refuses a key set both by the model config and the "
                           "environment unless override_model_config is true")]
    original = model[key] if key in model else schema.fields[key]["base"]
    if type(value) is not Str:
        return []
    ok = _parses(original, value.value)
    if ok is None:
        return [Diagnostic("E0319", f"MaxText cannot take '{key}' from {name}: its value there is "
                           f"{_yaml_text(original)}, and MaxText reads M_ variables only for strings, numbers "
                           "and bools", value.span, hint=f"set '{key}' in the flags instead of the environment")]
    if not ok:
        kind = "bool" if type(original) is bool else type(original).__name__
        return [Diagnostic("E0319", f"MaxText cannot read {name}={value.value!r} as {kind} '{key}'", value.span,
                           hint=_READABLE[kind])]
    if key not in schema.fields:
        return []
    parsed = _parsed(original, value.value)
    try:
        lax.validate(schema.type_of(key), parsed)
    except lax.Invalid as exc:
        return [Diagnostic("E0319", f"MaxText refuses {name}={value.value!r}: '{key}' must be "
                           f"{exc.expected}", value.span, notes=(f"schema: {schema.path}",),
                           hint=f"write {lax.describe(schema.type_of(key))}")]
    return []


def _parsed(original, text: str):
    """What MaxText validates of an ``M_`` variable's ``text`` that its parser reads
    (:func:`rcpc.domain.maxtext.mesh.env_value`; a string ``none`` in any case is None,
    ``_prepare_for_pydantic``)."""
    from rcpc.domain.maxtext.mesh import env_value

    value = env_value(original, text)
    return None if type(value) is str and value.lower() == "none" else value


def _parses(original, text: str) -> bool | None:
    """Whether MaxText's parser for ``original``'s type reads ``text``; None when it has none."""
    from rcpc.domain.maxtext.mesh import env_value

    try:
        env_value(original, text)
    except ValueError:
        return False
    except TypeError:
        return None
    return True


def _yaml_text(v) -> str:
    if v is None:
        return "null"
    if type(v) is bool:
        return "true" if v else "false"
    if type(v) in (list, dict):
        return json.dumps(v)
    return str(v) if type(v) is not str else repr(v)
