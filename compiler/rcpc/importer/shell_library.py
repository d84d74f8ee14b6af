"""Shared library functions an imported shell launch recipe may be a call of, tried in order.

A :class:`ShellCandidate` reads the arguments of a library function off a shell recipe's
launch command (:class:`rcpc.importer.shell.Script`): :meth:`ShellCandidate.extract`
returns a :class:`Launch` (the ``command_file`` argv as a call, the XLA flag list as a dict
the call takes), or None when the command has not the function's shape. No candidate is
trusted: the import's own proof (:func:`rcpc.importer.driver.import_shell`: every word of
the command line bash runs, and the MaxText flag tokens) decides, and the import falls back
to the words of the command line when no call is equal. A new library function is one more
entry in :data:`SHELL_CANDIDATES`.

The functions are those of ``@rcpc//maxtext_tpu.rcp``: ``xpk_workload_create`` (the
argv of ``xpk workload create``, its flags in the order the published XPK launch recipes
write them, ../shared/data/tpu-recipes/xpk/*.sh) with ``xpk_workload_command`` (the
``--command`` text: XPK exports the TPU runtime environment itself, so it is
``xpk_steps`` without ``XPK_TPU_ENV_STEPS``), and ``maxtext_xpk_workload`` (the two in one
call when ``xpk_workload_command`` takes no keyword); and those of
``@rcpc//maxdiffusion_tpu.rcp``: ``maxdiffusion_xpk_workload`` with
``maxdiffusion_generate_command`` (the ironwood MaxDiffusion inference script, read off the
command its ``eval ${cmd}`` spells: the ``key=value`` words a flag set without a schema, the
XLA flags a dict, a ``case``'s lookup of device types the slice).
"""

from __future__ import annotations

import ast
from typing import Callable

import attrs

from rcpc.core.source import Span
from rcpc.domain.maxtext.emit import NotAScalar, cli_document
from rcpc.domain.tpu import accelerator_type, device_type_name, tpu_slice
from rcpc.importer.library import COPIES, MAXTEXT_TPU, TRAINERS, Call
from rcpc.importer.literals import Ref, cli_source, flag_scalar, fstring, scalar, string
from rcpc.importer.shell import SLICE_NAME, _words

# The flags of `xpk workload create` in xpk_workload_create's order (their keyword: the
# defaults it writes when not given).
CREATE_FLAGS = ("cluster", "project", "zone", "priority", "max-restarts", "device-type", "num-slices",
                "docker-image", "enable-debug-logs", "workload", "command")
_KEYWORDS = {"priority": ("priority", "very-high"), "max-restarts": ("max_restarts", "0"),
             "num-slices": ("num_slices", "1")}
# How libtpu_init_args spells LIBTPU_INIT_ARGS: (prefix, separator, suffix) → spaced.
_SPACINGS = {("   ", "   ", " "): True, ("", " ", " "): False}
_MARK = "\0"


@attrs.frozen
class Launch:
    """A launch command as a library call: ``shape`` (the functions, as the import reports
    them), ``load`` (the ``load(...)`` line), ``dicts`` (list binding name → the dict source
    that replaces it: the XLA flags the call takes as a dict), ``argv`` (source of the
    ``command_file`` argv), ``layers`` (flag set name → its entries as layers: dicts, and the
    names of the library's flag layers found among them, :func:`named_layers`)."""

    shape: str
    load: str
    dicts: dict
    argv: str
    layers: dict = attrs.Factory(dict)


@attrs.frozen
class ShellCandidate:
    """``function`` of ``library`` building the argv, its ``--command`` built by ``command``
(a function of the library, or "" when ``function`` builds it too);
    ``arguments(script, words)`` returns ``(dicts, Call)`` or None when the launch command
    (``words``: the text and :class:`Ref` pieces of each word, after quote removal) has not
    the functions' shape."""

    library: str
    function: str
    command: str
    arguments: Callable

    @property
    def shape(self) -> str:
        """The functions' names (``xpk_workload_create with xpk_workload_command``)."""
        return f"{self.function} with {self.command}" if self.command else self.function

    def extract(self, script) -> Launch | None:
        """The launch command of ``script`` (its only one) as a call, or None."""

        commands = [i for i in script.items if isinstance(i, tuple) and i[0] == "command"]
        if len(commands) != 1:
            return None
        words = commands[0][5]
        found = self.arguments(script, words)
        if found is None:
            return None
        dicts, call = found
        layers = {}
        for b in script.bindings.values():
            if b.kind == "flags" and b.shell_name in {r.text for w in words for r in w if isinstance(r, Ref)}:
                parts = named_layers(b.default)
                if any(isinstance(p, str) for p in parts):
                    layers[b.name] = parts
        loads = set(call.loads) | {self.function} | {p for ps in layers.values() for p in ps if isinstance(p, str)}
        names = ", ".join(string(n) for n in sorted(loads))
        return Launch(self.shape, f"load({string(self.library)}, {names})", dicts, call.inline(), layers)


# Flag layers -----------------------------------------------------------------------------
# The library's flag layers (@rcpc//maxtext_tpu.rcp "MaxText flags"), each entry as the
# importer writes its value (recipe source).
LAYERS = {
    "FSDP_MESH": {"dcn_pipeline_parallelism": "1", "dcn_data_parallelism": "-1", "ici_pipeline_parallelism": "1",
                  "ici_fsdp_transpose_parallelism": "1", "ici_fsdp_parallelism": "-1"},
    "SYNTHETIC_DATA": {"dataset_type": string("synthetic"), "dataset_path": string("gs://max-datasets-rogue")},
}


def named_layers(entries: dict) -> list:
    """``entries`` (key → value source, in order) as layers of a flag set: each run of
    entries that is a library layer (same keys in the same order, same values) its name, the
    entries between them dicts. The flag set's tokens are the same (maxtext_flags keeps layer
    order; no key is in two layers)."""
    items = list(entries.items())
    parts, run, i = [], {}, 0
    while i < len(items):
        name = next((n for n, layer in LAYERS.items() if items[i:i + len(layer)] == list(layer.items())), None)
        if name is None:
            run[items[i][0]] = items[i][1]
            i += 1
            continue
        if run:
            parts.append(run)
            run = {}
        parts.append(name)
        i += len(LAYERS[name])
    return parts + ([run] if run else [])


# Pieces as text ----------------------------------------------------------------------------
# A word's pieces are matched as one string, each Ref a marker (NUL, its index, NUL: no shell
# word holds a NUL), and cut back into pieces for the recipe source.

def _flat(pieces) -> tuple[str, list]:
    refs = [p for p in pieces if isinstance(p, Ref)]
    out, n = [], 0
    for p in pieces:
        if isinstance(p, Ref):
            out.append(f"{_MARK}{n}{_MARK}")
            n += 1
        else:
            out.append(p)
    return "".join(out), refs


def _source(text: str, refs: list) -> str:
    """Recipe source of ``text`` (a part of a :func:`_flat` string)."""
    pieces = []
    for i, part in enumerate(text.split(_MARK)):
        if i % 2:
            pieces.append(refs[int(part)])
        elif part:
            pieces.append(part)
    return fstring(pieces) if pieces else '""'


def _between(text: str, before: str, after: str) -> str | None:
    """The text between the only ``before`` and the next ``after``, or None."""
    if text.count(before) != 1:
        return None
    rest = text[text.index(before) + len(before):]
    return rest[:rest.index(after)] if after in rest else None


# xpk_workload_create ---------------------------------------------------------------------

def _create_values(words, device: str = "device-type") -> dict | None:
    """flag → ``(value text, refs)`` of an ``xpk workload create`` command whose flags are
    :data:`CREATE_FLAGS` in that order (its slice named by ``--{device}``), else None."""
    flat = [_flat(w) for w in words]
    if [t for t, _ in flat[:3]] != ["xpk", "workload", "create"]:
        return None
    flags = tuple(device if n == "device-type" else n for n in CREATE_FLAGS)
    values = {}
    for text, refs in flat[3:]:
        if not text.startswith("--"):
            return None
        name, eq, value = text[2:].partition("=")
        if name in values or (name == "enable-debug-logs") == bool(eq):
            return None
        values[name] = (value, refs)
    if [n for n in flags if n in values] != list(values) or set(flags) - {"enable-debug-logs"} - set(values):
        return None
    return values


def _keywords(values: dict) -> list:
    """The keywords of xpk_workload_create (and maxdiffusion_xpk_workload) whose flag differs
    from the default."""
    args = []
    for flag, (keyword, default) in _KEYWORDS.items():
        value, refs = values[flag]
        if value != default:
            args.append(f"{keyword} = {value if not refs and value.isdigit() else _source(value, refs)}")
    if "enable-debug-logs" not in values:
        args.append("debug_logs = False")
    return args


def _create(command: Callable) -> Callable:
    """The arguments reader of xpk_workload_create with the ``--command`` reader ``command``
    (``(script, flat text, refs)`` → ``(dicts, Call)`` or None)."""

    def arguments(script, words):
        values = _create_values(words)
        if values is None:
            return None
        found = command(script, *values["command"])
        if found is None:
            return None
        dicts, cmd = found
        args = [_source(*values[n]) for n in ("cluster", "project", "zone", "device-type", "docker-image", "workload")]
        args.append(cmd.inline())
        return dicts, Call("xpk_workload_create", args + _keywords(values), list(cmd.loads) + [cmd.function])

    return arguments


# xpk_workload_command --------------------------------------------------------------------

def _libtpu(script, text: str, refs: list) -> tuple[str, str, bool] | None:
    """``(list binding name, its dict source, spaced)`` of ``LIBTPU_INIT_ARGS='${NAME}'`` in
    the command, NAME a list of ``--key=value`` flags spelled as libtpu_init_args writes
    them; else None."""
    inner = _between(text, "export LIBTPU_INIT_ARGS='", "'")
    if inner is None or inner.count(_MARK) != 2 or inner[0] != _MARK or inner[-1] != _MARK:
        return None
    ref = refs[int(inner[1:-1])].text
    b = script.bindings.get(ref.removesuffix("_JOINED"))
    if b is None or b.kind != "list" or not ref.endswith("_JOINED") or b.list_format not in _SPACINGS:
        return None

    lines = []
    for item in ast.literal_eval(b.source):
        k, eq, v = item[2:].partition("=")
        if not eq or not k.isidentifier():
            return None
        lines.append(f"    {string(k)}: {scalar(v)},\n")
    return b.name, f"{b.name} = {{\n{''.join(lines)}}}", _SPACINGS[b.list_format]


def _xpk_workload_command(script, text: str, refs: list):
    """``xpk_workload_command(FLAGS, LIBTPU, ...)``: a trainer the library names (or another
    ``python3 -m ...`` program) running a flag set, after ``set -e`` and the steps the library
    writes; each keyword read off the text where it differs from the default."""
    libtpu = _libtpu(script, text, refs)
    flags = [b for b in script.bindings.values() if b.kind == "flags" and any(r.text == b.shell_name for r in refs)]
    if libtpu is None or len(flags) != 1 or not text.startswith("set -e && "):
        return None
    words = flags[0].words
    if words is not None and words.pad != ("", ""):
        return None  # the library writes the flags with no spaces around them
    trainers = [t for t in TRAINERS if f"{t} " in text]
    if len(trainers) != 1:
        return None
    trainer = trainers[0]
    before = text[:text.index(trainer)]
    stripped = before.rstrip(" ")
    if not stripped.endswith("&&"):
        return None
    lead = before[len(stripped) + 1:]
    args, loads = [flags[0].name, libtpu[0]], []
    for keyword, keys in (("quote", words.quoted if words else ()), ("raw", words.raw if words else ())):
        if keys:
            args.append(f"{keyword} = [{', '.join(string(k) for k in keys)}]")
    if TRAINERS[trainer] != "MAXTEXT_TRAIN_LEGACY":
        args.append(f"trainer = {TRAINERS[trainer]}")
        loads.append(TRAINERS[trainer])
    artifacts = _between(text, "export ARTIFACT_DIR='", "'")
    if artifacts is not None:
        args.append(f"artifacts = {_source(artifacts, refs)}")
        copies = [(words, c) for words, c in COPIES.items() if f"{' '.join(words)} train.log " in text]
        if len(copies) != 1:
            return None
        words, copy = copies[0]
        logs = _between(text, f"{' '.join(words)} train.log ", "/logs/")
        if logs is None:
            return None
        if _source(logs, refs) != _source(artifacts, refs):
            args.append(f"logs = {_source(logs, refs)}")
        if not libtpu[2]:
            args.append("spaced = False")
        if copy != "GSUTIL_CP":
            args.append(f"copy = {copy}")
            loads.append(copy)
        if lead != " ":
            args.append(f"lead = {string(lead)}")
    else:
        if lead:
            return None
        if not libtpu[2]:
            args.append("spaced = False")
    return {libtpu[0]: libtpu[1]}, Call("xpk_workload_command", args, loads)


def _maxtext_xpk_workload(script, words):
    """``maxtext_xpk_workload(CLUSTER, PROJECT, ZONE, DEVICE_TYPE, IMAGE, WORKLOAD, FLAGS,
    LIBTPU)``: the xpk_workload_create with xpk_workload_command that takes no keyword."""
    found = _create(_xpk_workload_command)(script, words)
    if found is None:
        return None
    dicts, call = found
    *coordinates, command = call.args
    if len(call.args) != 7 or not command.startswith("xpk_workload_command(") or "=" in command:
        return None
    inner = command[len("xpk_workload_command("):-1].split(", ")
    return dicts, Call("maxtext_xpk_workload", coordinates + inner, [])


# maxtext_benchmark_runner ----------------------------------------------------------------
RUNNER = ("python3", "-m", "benchmarks.benchmark_runner", "xpk")
# Its flags in its order, each with its argument's place (None: the slice, read off the word).
RUNNER_FLAGS = ("project", "zone", "device_type", "num_slices", "cluster_name", "base_output_directory",
                "model_name", "base_docker_image")


def _maxtext_benchmark_runner(script, words):
    """``maxtext_benchmark_runner(PROJECT, ZONE, TPU_SLICE, CLUSTER, OUTPUT_DIR, MODEL, IMAGE)``:
    the runner's flags in :data:`RUNNER_FLAGS` order, ``--device_type`` the slice the import
    tied (:func:`rcpc.importer.shell._tie_slice`)."""
    flat = [_flat(w) for w in words]
    if tuple(t for t, _ in flat[:4]) != RUNNER or len(flat) != 4 + len(RUNNER_FLAGS):
        return None
    values = {}
    for (text, refs), flag in zip(flat[4:], RUNNER_FLAGS):
        if not text.startswith(f"--{flag}="):
            return None
        values[flag] = (text[len(flag) + 3:], refs)
    device, refs = values.pop("device_type")
    if device != f"{_MARK}0{_MARK}" or refs[0].text != f"{SLICE_NAME}.accelerator_type":
        return None
    num, num_refs = values.pop("num_slices")
    if num_refs or not num.isdigit():
        return None
    args = [_source(*values[f]) for f in ("project", "zone")] + [SLICE_NAME] + \
        [_source(*values[f]) for f in ("cluster_name", "base_output_directory", "model_name", "base_docker_image")]
    if num != "1":
        args.append(f"num_slices = {num}")
    return {}, Call("maxtext_benchmark_runner", args, [])


# maxdiffusion_xpk_workload ---------------------------------------------------------------
MAXDIFFUSION_TPU = "@rcpc//maxdiffusion_tpu.rcp"
# The library's defaults: maxdiffusion_generate_command's script and config.
_MAXDIFFUSION = {"script": "src/maxdiffusion/generate_wan.py", "config": "src/maxdiffusion/configs/base_wan_14b.yml"}
_XLA_EXPORT = "export LIBTPU_INIT_ARGS='"
_SPAN = Span("<import>", 1, 1, 1, 1)


def _slice(script, value: str, refs: list) -> tuple[dict, str] | None:
    """``(dicts, slice source)`` of the ``--tpu-type`` value: the slice the import tied
    (``TPU_SLICE.device_type``), or a case's lookup of device types (``XPK_TPU_TYPE``), which
    becomes ``TPU_SLICE = tpu_slice({...}[P])`` in its place."""
    if value != f"{_MARK}0{_MARK}":
        return None
    ref = refs[0].text
    if ref == f"{SLICE_NAME}.device_type":
        return {}, SLICE_NAME
    b = script.bindings.get(ref)
    if b is None or b.kind != "lookup" or not b.arms or SLICE_NAME in script.bindings:
        return None
    specs = [(k, accelerator_type(v)) for k, v in b.arms]
    if any(spec is None or device_type_name(tpu_slice(spec, _SPAN)) != v for (_, spec), (_, v) in zip(specs, b.arms)):
        return None
    param = next(iter(b.uses))
    entries = ", ".join(f"{string(k)}: {string(spec)}" for k, spec in specs)
    return {b.name: f"{SLICE_NAME} = tpu_slice({{{entries}}}[{param}])"}, SLICE_NAME


def _named(script, text: str):
    """The only binding whose assignment holds ``text``: the script's name for a value the
    call takes (the string an eval's command read it from); None when not one."""
    found = [b for b in script.bindings.values() if text in b.raw]
    return found[0] if len(found) == 1 else None


def _xla_dict(name: str, inner: str) -> str | None:
    """``NAME = {...}`` of a LIBTPU_INIT_ARGS text as xla_flags_text writes it (`` --k=v`` each)."""
    if not inner.startswith(" --") or _MARK in inner:
        return None
    lines = []
    for item in inner[3:].split(" --"):
        k, eq, v = item.partition("=")
        if not eq or not k.isidentifier() or not v or " " in v:
            return None
        lines.append(f"    {string(k)}: {scalar(v)},\n")
    return f"{name} = {{\n{''.join(lines)}}}"


def _flag_entry(word: str, refs: list) -> tuple[str, str, bool] | None:
    """``(key, value source, quoted)`` of a ``key=value`` word of the command (a flag set's
    shell form writes it so: bare, or its value part in single quotes); None otherwise. A
    quoted value OmegaConf reads as a mapping (JSON) is ``cli_value(...)`` (its spelling kept);
    a value holding params an f-string of them."""
    key, eq, value = word.partition("=")
    if not eq or not key.isidentifier() or not value:
        return None
    quoted = len(value) > 1 and value[0] == value[-1] == "'"
    inner = value[1:-1] if quoted else value
    if "'" in inner or any(c in inner for c in " \"\\$`") and not quoted:
        return None
    if _MARK in inner:
        return key, _source(inner, refs), quoted
    try:
        document = cli_document(inner)
    except NotAScalar:
        return None
    source = cli_source(inner) if type(document) is dict else flag_scalar(inner)
    return (key, source, quoted) if source is not None else None


def _maxdiffusion_xpk_workload(script, words):
    """``maxdiffusion_xpk_workload(CLUSTER, PROJECT, ZONE, TPU_SLICE, IMAGE, WORKLOAD,
    maxdiffusion_generate_command(FLAGS, XLA_FLAGS, ...))``: an ``xpk workload create
    --tpu-type=...`` whose ``--command`` is ``set -e``, the output directory exported, the XLA
    flags exported, setup steps and ``python SCRIPT CONFIG k=v ...``; the flags a flag set
    without a schema and the XLA flags a dict, each named as the script names the string the
    eval reads them from (``MAXDIFFUSION_ARGS``, ``XLA_FLAGS``)."""
    values = _create_values(words, "tpu-type")
    commands = [i for i in script.items if isinstance(i, tuple) and i[0] == "command"]
    if values is None or len(commands) != 1:
        return None
    found = _slice(script, *values["tpu-type"])
    text, refs = values["command"]
    steps = text.split(" && ")
    if found is None or len(steps) < 3 or steps[0] != "set -e" or not steps[-1].startswith("python "):
        return None
    dicts = dict(found[0])
    kwargs, at = [], 1
    artifacts = _source(steps[1][20:], refs) if steps[1].startswith("export ARTIFACT_DIR=") else None
    if artifacts is not None and steps[2].startswith("export OUTPUT_DIR=") \
            and _source(steps[2][18:], refs) == artifacts:
        kwargs.append(f"output_dir = {artifacts}")
        at = 3
    inner = _between(steps[at], _XLA_EXPORT, "'") if steps[at].startswith(_XLA_EXPORT) else None
    xla = _named(script, inner.split("=", 1)[0].strip()) if inner else None
    if xla is None or not steps[at].endswith("'") or len(steps[at]) != len(_XLA_EXPORT) + len(inner) + 1:
        return None
    source = _xla_dict(xla.name, inner)
    if source is None:
        return None
    dicts[xla.name] = source
    setup = steps[at + 1:-1]
    if setup:
        kwargs.append("setup = [" + ", ".join(_source(step, refs) for step in setup) + "]")
    parts = steps[-1].removeprefix("python ").split(" ", 2)
    if len(parts) != 3:
        return None
    for keyword, part in zip(("script", "config"), parts[:2]):
        if part != _MAXDIFFUSION[keyword]:
            kwargs.append(f"{keyword} = {_source(part, refs)}")
    flag_words = _words(parts[2])
    entries = [_flag_entry(w, refs) for w in flag_words or [""]]
    if any(e is None for e in entries) or len({e[0] for e in entries}) != len(entries):
        return None
    flags = _named(script, entries[0][0] + "=")
    if flags is None or flags.name in dicts:
        return None
    lines = "".join(f"    {string(k)}: {v},\n" for k, v, _ in entries)
    dicts[flags.name] = f"{flags.name} = maxtext_flags({{\n{lines}}}, schema = None, tpu_slice = {found[1]})"
    quote = [k for k, _, q in entries if q]
    if quote:
        kwargs.append("quote = [" + ", ".join(string(k) for k in quote) + "]")
    command = Call("maxdiffusion_generate_command", [flags.name, xla.name] + kwargs, [])
    args = [_source(*values[n]) for n in ("cluster", "project", "zone")] + [found[1]] + \
        [_source(*values[n]) for n in ("docker-image", "workload")] + [command.inline()]
    return dicts, Call("maxdiffusion_xpk_workload", args + _keywords(values), ["maxdiffusion_generate_command"])


SHELL_CANDIDATES = (
    ShellCandidate(MAXTEXT_TPU, "maxtext_xpk_workload", "", _maxtext_xpk_workload),
    ShellCandidate(MAXTEXT_TPU, "xpk_workload_create", "xpk_workload_command", _create(_xpk_workload_command)),
    ShellCandidate(MAXTEXT_TPU, "maxtext_benchmark_runner", "", _maxtext_benchmark_runner),
    ShellCandidate(MAXDIFFUSION_TPU, "maxdiffusion_xpk_workload", "maxdiffusion_generate_command",
                   _maxdiffusion_xpk_workload),
)
