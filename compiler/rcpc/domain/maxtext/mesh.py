"""MaxText's device mesh against the TPU slice it runs on (``E0340``), computed from the
values MaxText computes it from.

Sources, at the pinned MaxText commit (``../shared/data/maxtext/``):

* The mesh's axes are ``mesh_axes`` — the flag's value, else the model config's
  (``models/deepseek3-671b-2dfsdp.yml`` sets ``['data', 'fsdp', 'expert', 'context']``),
  else base.yml's (which has no ``sequence`` axis). Each axis takes its value from its own key
  (``types.py`` ``set_derived_and_validate_values``, section I: ``ici_map``/``dcn_map``):
  ``stage`` from ``*_pipeline_parallelism``, ``model`` from ``*_tensor_parallelism``, the vLLM
  axes ``attn_dp``/``attn_dp_expert`` are 1, any other name is a ``KeyError``. A key of no
  axis (``ici_sequence_parallelism`` under base.yml's axes) is not part of the mesh.
* A value is the flag's, else the container's ``M_<KEY>`` environment variable (parsed by
  ``int()`` as ``pyconfig`` parses it), else the model config's, else base.yml's; pydantic's
  lax mode converts it (``True`` is 1, ``2.0`` is 2: :mod:`rcpc.domain.maxtext.lax`).
* ``maxtext_utils.create_device_mesh`` / ``max_utils.fill_unspecified_mesh_axes``: the ICI
  values' product is the devices of a slice, at most one ``-1`` taking the rest; the DCN
  values are filled to the number of slices only when there are several (one slice builds
  its mesh from the ICI values alone). ``inference_benchmark_test`` makes the mesh one slice
  of every device.
* ``num_slices`` set (not -1), else a positive ``compile_topology_num_slices``: MaxText takes it as
  the number of slices (``max_utils.get_num_slices``) and gives each ``devices / num_slices`` of
  the devices it finds (``create_device_mesh``).
* ``types.py``: ``dcn_diloco_parallelism = -1`` is resolved first, to the slices the other
  DCN values leave, in place of the first ``-1`` of the DCN values; and on one slice, the
  product of the twelve DCN keys other than diloco (``sequence`` included) must be 1 or -1
  ("DCN parallelism requested but only one slice available").

* ``custom_mesh`` (``max_utils.is_valid_custom_mesh``, asked on several slices, or on one
  with ``allow_split_physical_axes``): one of the ring strategies (``hybrid_ring_64x4``,
  ``hybrid_ring_32x8``), and the filled ICI values' distinct sizes those the strategy names.

Not checked (the devices are not the slice's, or the axes are not known): a flag set naming
``custom_mesh_and_rule`` (its YAML, not read, may replace ``mesh_axes``), ``compile_topology``
or ``internal_compile`` (ahead-of-time compilation for another topology).
"""

from __future__ import annotations

from rcpc.core.diagnostics import Diagnostic
from rcpc.core.source import Span
from rcpc.core.values import Str, to_python, type_name
from rcpc.domain.maxtext import lax
from rcpc.domain.maxtext.emit import value_text
from rcpc.domain.maxtext.flagset import entries, resolved

# mesh axis name -> the middle of its keys (ici_<name>_parallelism, dcn_<name>_parallelism)
AXIS_KEYS = {
    "diloco": "diloco", "data": "data", "stage": "pipeline", "fsdp": "fsdp", "fsdp_transpose": "fsdp_transpose",
    "sequence": "sequence", "context": "context", "context_usp_ulysses": "context_usp_ulysses",
    "context_autoregressive": "context_autoregressive", "tensor": "tensor", "tensor_sequence": "tensor_sequence",
    "model": "tensor", "expert": "expert", "autoregressive": "autoregressive",
}
VLLM_AXES = frozenset(("attn_dp", "attn_dp_expert"))  # always 1 in MaxText's mesh
# the DCN keys of types.py's one-slice check, in its order (diloco is not among them)
ONE_SLICE_DCN = ("data", "pipeline", "fsdp", "fsdp_transpose", "sequence", "context", "context_usp_ulysses",
                 "tensor", "tensor_sequence", "expert", "context_autoregressive", "autoregressive")
# max_utils.is_valid_custom_mesh: strategy -> the distinct ICI axis sizes it reshapes, sorted
CUSTOM_MESHES = {"hybrid_ring_64x4": [1, 4, 64], "hybrid_ring_32x8": [1, 8, 32]}
ENV_PREFIX = "M_"
_UNKNOWN = object()  # a value rcpc cannot know (or that MaxText refuses, reported elsewhere)
# maxtext.inference.inference_utils.str2bool, pyconfig's parser of a bool M_ variable
_STR2BOOL = {"y": True, "yes": True, "t": True, "true": True, "1": True,
             "n": False, "no": False, "f": False, "false": False, "0": False}


def env_value(start, text: str):
    """What ``pyconfig`` makes of an ``M_<KEY>`` variable's ``text`` for a key whose value was
    ``start``: the parser of that value's type (``str2bool`` in any case for a bool, ``int()``,
    ``float()``, ``str``). Raises ValueError when the parser refuses the text, TypeError when
    the type has none (None, a list: pyconfig's own TypeError)."""
    t = type(start)
    if t is bool:
        if text.lower() not in _STR2BOOL:
            raise ValueError(text)
        return _STR2BOOL[text.lower()]
    if t in (int, float, str):
        return t(text)
    raise TypeError(t.__name__)


class EffectiveValues:
    """The value MaxText ends with for each key of a flag set: the flag's, the container's
    ``M_`` variable's, the model config's, base.yml's (in that order of precedence), each
    with where it was set (``(label, span, order)``, or None for a default)."""

    def __init__(self, fs, env: dict | None):
        self.fs, self.schema, self.env = fs, fs.schema, env or {}
        self.cli = resolved(fs)
        self.order = {e.key: i for i, e in enumerate(entries(fs))}
        self.model: dict = {}
        self.override = False
        if self.schema is not None:  # read before the M_ variables are (pyconfig's temp_cfg)
            name = self.start("model_name")
            if type(name) is str and name != "default":
                self.model = self.schema.models.get(name.replace("-Instruct", ""), {})
            self.override = bool(self.start("override_model_config"))

    def start(self, key: str):
        """The value ``key`` has before the ``M_`` variables are read: the flag's, else base.yml's."""
        e = self.cli.get(key)
        return to_python(e.value) if e is not None else self.schema.defaults.get(key)

    def raw(self, key: str):
        """(plain value or ``_UNKNOWN``, where or None); ``_UNKNOWN`` when nothing sets it."""
        e = self.cli.get(key)
        if e is not None:
            return to_python(e.value), (f"{key} = {value_text(e.value)} set here", e.value.span, self.order[key])
        env = self.env.get(ENV_PREFIX + key.upper())
        if env is not None and (key not in self.model or self.override):
            return self._from_env(key, *env)
        if key in self.model:
            return self.model[key], None
        if self.schema is not None and key in self.schema.defaults:
            return self.schema.defaults[key], None
        return _UNKNOWN, None

    def source(self, key: str) -> str:
        """Where the value of ``key`` comes from, by :meth:`raw`'s precedence: ``flag``,
        ``env``, ``model`` (``models/<name>.yml``), ``base.yml`` or ``types.py`` (its default),
        or ``unset``."""
        if key in self.cli:
            return "flag"
        if ENV_PREFIX + key.upper() in self.env and (key not in self.model or self.override):
            return "env"
        if key in self.model:
            return "model"
        if self.schema is not None and key in self.schema.defaults:
            return "base.yml" if "base" in self.schema.fields[key] else "types.py"
        return "unset"

    def _from_env(self, key: str, value, span: Span):
        """``pyconfig``'s parse of an ``M_`` variable by the type of the value it replaces."""
        start = self.model[key] if key in self.model else (
            self.schema.defaults.get(key, _UNKNOWN) if self.schema is not None else _UNKNOWN)
        where = (f"{ENV_PREFIX}{key.upper()} = {value.value!r} in the container's env" if type(value) is Str
                 else f"{ENV_PREFIX}{key.upper()} in the container's env", span, len(self.order))
        if start is not _UNKNOWN and type(start) not in (bool, int, float, str):
            return start, None  # MaxText cannot override it (TypeError): E0319
        if type(value) is not Str or start is _UNKNOWN:
            return _UNKNOWN, where
        try:
            return env_value(start, value.value), where
        except ValueError:
            return _UNKNOWN, where  # E0319 (rcpc.domain.launch)

    def typed(self, key: str, kind: str):
        """(pydantic's value for type ``kind`` or ``_UNKNOWN``, where); a value pydantic
        refuses is ``_UNKNOWN`` (the schema checks report it)."""
        value, where = self.raw(key)
        if value is _UNKNOWN:
            return value, where
        if type(value) is str and value.lower() == "none":
            value = None  # pyconfig._prepare_for_pydantic
        try:
            return lax.validate({"type": kind}, value), where
        except lax.Invalid:
            return _UNKNOWN, where


def check_mesh(fs, tpu_slice, num_slices: int, span: Span, env: dict | None = None) -> list[Diagnostic]:
    """``E0340`` findings of the mesh of flag set ``fs`` on ``num_slices`` slices of
    ``tpu_slice`` (module docstring). ``env`` maps the ``M_...`` variables of the container
    carrying the flag set to ``(value, span)``. Each finding is at the value among the group's
    that was set last (a flag, else an ``M_`` variable), else at ``span``; the group's other
    settings are related spans."""
    v = EffectiveValues(fs, env)
    for key in ("custom_mesh_and_rule", "compile_topology"):
        if v.typed(key, "str")[0] not in ("", None, _UNKNOWN):
            return []
    if v.typed("internal_compile", "bool")[0] is True:
        return []
    benchmark = v.typed("inference_benchmark_test", "bool")[0] is True
    out: list = []
    axes, where = v.raw("mesh_axes")
    if axes is _UNKNOWN:  # no schema: the axes the flag set sets
        names = [k[4:-12] for k in v.cli if k.startswith("ici_") and k.endswith("_parallelism")]
        axes = [a for a, m in AXIS_KEYS.items() if m in names and a != "model"]
        dcn = [k[4:-12] for k in v.cli if k.startswith("dcn_") and k.endswith("_parallelism")]
        dcn_axes = [a for a, m in AXIS_KEYS.items() if m in dcn and a != "model"]
    elif type(axes) is list and all(type(a) is str for a in axes):
        bad = [a for a in axes if a not in AXIS_KEYS and a not in VLLM_AXES]
        if bad:
            return [Diagnostic("E0340", f"mesh_axes names {bad[0]!r}, which is no axis of MaxText's mesh",
                               where[1] if where else span,
                               hint="MaxText's axes: " + ", ".join([*AXIS_KEYS, *sorted(VLLM_AXES)]))]
        dcn_axes = axes
    else:
        return []  # a mesh_axes pydantic refuses: E0311
    what = f"devices of {tpu_slice.accelerator}:{tpu_slice.topology}"
    key = "num_slices"
    asked, asked_at = v.typed(key, "int")
    if asked == -1:  # max_utils.get_num_slices: then compile_topology_num_slices, when positive
        topology_slices, topology_at = v.typed("compile_topology_num_slices", "int")
        if topology_slices is not _UNKNOWN and topology_slices > 0:
            key, asked, asked_at = "compile_topology_num_slices", topology_slices, topology_at
    if asked not in (-1, 0, _UNKNOWN) and asked != num_slices and asked > 1 and not benchmark:
        return [Diagnostic("E0340", f"{key} = {asked}, but the pod runs on {num_slices} slice"
                           f"{'s' if num_slices > 1 else ''}: MaxText's mesh groups the devices by the slice they are "
                           f"in and finds {num_slices}", asked_at[1] if asked_at else span,
                           hint="leave num_slices at -1 (MaxText counts the slices), or run that many slices "
                                "(the replicated job's replicas)")]
    if asked not in (-1, 0, _UNKNOWN) and asked != num_slices and not benchmark:
        # MaxText takes num_slices as given (max_utils.get_num_slices) and splits the devices it finds
        devices = tpu_slice.devices * num_slices // asked
        what = (f"devices a slice gets when MaxText splits the {tpu_slice.devices * num_slices} devices of "
                f"{num_slices} {tpu_slice.accelerator}:{tpu_slice.topology} slice{'s' if num_slices > 1 else ''} "
                f"into {key} = {asked}")
        num_slices = asked
    else:
        devices = tpu_slice.devices * (num_slices if benchmark else 1)
        what += f" x {num_slices} (inference_benchmark_test)" if benchmark and num_slices > 1 else ""
    out += _fill(v, "ici", axes, devices, what, span)
    out += _dcn(v, dcn_axes, num_slices, benchmark, span)
    if not out:
        out += _custom_mesh(v, axes, devices, 1 if benchmark else num_slices, span)
    return out


def _custom_mesh(v: EffectiveValues, axes, devices: int, slices: int, span: Span) -> list[Diagnostic]:
    """``custom_mesh``: a strategy that reshapes the mesh into rings
    (``max_utils.is_valid_custom_mesh``), asked by ``create_device_mesh`` on several slices, or
    on one with ``allow_split_physical_axes``: a name of no strategy, or one whose distinct
    filled ICI values (sorted) are not the strategy's, is refused."""
    strategy, where = v.typed("custom_mesh", "str")
    if strategy in ("", None, _UNKNOWN) or (slices <= 1 and v.typed("allow_split_physical_axes", "bool")[0]
                                            is not True):
        return []
    at = where[1] if where else span
    if strategy not in CUSTOM_MESHES:
        return [Diagnostic("E0340", f"custom_mesh {strategy!r} is no strategy MaxText reshapes a mesh with", at,
                           hint="MaxText's strategies: " + ", ".join(CUSTOM_MESHES) + " (or \"\" for none)")]
    got = _group(v, "ici", [AXIS_KEYS[a] for a in axes if a not in VLLM_AXES], span, [])
    if got is None:
        return []
    values = [x for _, x, _ in got] + [1] * sum(a in VLLM_AXES for a in axes)
    known = _product(x for x in values if x != -1)
    values = [devices // known if x == -1 else x for x in values]
    if sorted(set(values)) == CUSTOM_MESHES[strategy]:
        return []
    return [Diagnostic("E0340", f"custom_mesh {strategy!r} needs an ICI mesh whose distinct axis sizes are "
                       f"{', '.join(map(str, CUSTOM_MESHES[strategy]))}; this one's are "
                       f"{', '.join(map(str, sorted(set(values))))}", at,
                       notes=("ici axes: " + " * ".join(f"{k}={x}" for (k, _, _), x in zip(got, values)),),
                       hint="set the ici axes to the strategy's sizes, or leave custom_mesh empty")]


def _group(v: EffectiveValues, prefix: str, names, span: Span, out: list):
    """(key, value, where) of each name's key; None (after an E0340 into ``out`` for a flag
    set without a schema) when a value is unknown or not an int."""
    got = []
    for name in names:
        key = f"{prefix}_{name}_parallelism"
        value, where = v.typed(key, "int")
        if value is _UNKNOWN:
            if v.schema is None and key in v.cli:
                e = v.cli[key]
                out.append(Diagnostic("E0340", f"'{key}' must be an int, got {type_name(e.value)}", e.value.span,
                                      hint="write a whole number, or -1 for the rest"))
            return None
        got.append((key, value, where))
    return got


def _place(got: list, span: Span, only=None):
    """(where to report, related) for a group: the setting made last (among ``only`` when
    given), the others as related."""
    set_here = sorted(dict.fromkeys(w for _, _, w in got if w is not None), key=lambda w: w[2])
    candidates = [w for w in set_here if only is None or w in only] or set_here
    last = candidates[-1] if candidates else None
    related = tuple((w[0], w[1]) for w in set_here if w is not last)
    return (last[1] if last else span), related


def _product(values) -> int:
    out = 1
    for x in values:
        out *= x
    return out


def _fill(v: EffectiveValues, prefix: str, names, total: int, what: str, span: Span, got=None) -> list[Diagnostic]:
    """``max_utils.fill_unspecified_mesh_axes`` of the group's values to ``total``."""
    out: list = []
    if got is None:
        got = _group(v, prefix, [AXIS_KEYS[a] for a in names if a not in VLLM_AXES], span, out)
    if got is None or (not got and v.schema is None):  # without a schema: the axes the flags set
        return out
    values = [x for _, x, _ in got]
    shown = " * ".join(dict.fromkeys(f"{k}={x}" for k, x, _ in got if x != 1)) or "all 1"
    fill = list(dict.fromkeys(k for k, x, _ in got if x == -1))
    known = _product(x for x in values if x != -1)
    if values.count(-1) > 1:
        where, related = _place(got, span, {w for k, x, w in got if x == -1})
        return [Diagnostic("E0340", f"{prefix} mesh has {values.count(-1)} axes set to -1 ({', '.join(fill)}); at "
                           "most one may be", where, related=related, notes=(f"{prefix} axes: {shown}",),
                           hint="give every axis but one a number")]
    if (fill and (known <= 0 or total % known)) or (not fill and known != total):
        where, related = _place(got, span)
        return [Diagnostic("E0340", f"{prefix} mesh product {known} does not fit the {total} {what}", where,
                           related=related, notes=(f"{prefix} axes: {shown}",),
                           hint="the product of the axes must equal it (one axis may be -1 to take the rest)")]
    return []


def _dcn(v: EffectiveValues, axes, slices: int, benchmark: bool, span: Span) -> list[Diagnostic]:
    out: list = []
    if slices <= 1:
        names = ONE_SLICE_DCN if v.schema is not None else [AXIS_KEYS[a] for a in axes if a in AXIS_KEYS
                                                            and AXIS_KEYS[a] != "diloco"]
        got = _group(v, "dcn", names, span, out)
        if got and abs(_product(x for _, x, _ in got)) > 1:
            where, related = _place(got, span)
            shown = " * ".join(f"{k}={x}" for k, x, _ in got if x != 1)
            out.append(Diagnostic("E0340", f"dcn mesh product {_product(x for _, x, _ in got)} does not fit the 1 "
                                  "slice: MaxText refuses DCN parallelism on one slice", where, related=related,
                                  notes=(f"dcn axes: {shown}",),
                                  hint="on one slice the dcn axes are 1 (or -1); run more slices (replicas) "
                                  "to use them"))
        if out or got is None:
            return out
    got = _group(v, "dcn", [AXIS_KEYS[a] for a in axes if a not in VLLM_AXES], span, out)
    if got is None or (not got and v.schema is None):
        return out
    diloco = [i for i, (k, _, _) in enumerate(got) if k == "dcn_diloco_parallelism"]
    d_value, d_where = v.typed("dcn_diloco_parallelism", "int")
    if d_value == -1:  # types.py resolves it before the mesh is made
        other = _product(x for _, x, _ in got if x != -1)
        minus = [i for i, (_, x, _) in enumerate(got) if x == -1]
        if other <= 0 or slices % other or not minus:
            where, related = _place(got + ([] if diloco else [("dcn_diloco_parallelism", -1, d_where)]), span)
            return out + [Diagnostic("E0340", f"dcn_diloco_parallelism = -1 cannot take the rest of the {slices} "
                                     f"slices: the other dcn axes' product is {other}", where, related=related,
                                     hint="make the other dcn axes' product divide the slices, or give "
                                     "dcn_diloco_parallelism a number")]
        k, _, w = got[minus[0]]
        got[minus[0]] = (k, slices // other, w)
    if slices > 1 and not benchmark:
        out += _fill(v, "dcn", axes, slices, "slices", span, got)
    return out
