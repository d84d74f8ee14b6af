"""Shared library functions an imported manifest may be a call of, tried in order.

A :class:`Candidate` names the library, the JobSet function, the startup command function
passed to it (if any) and how their arguments are read off a template
(:meth:`Candidate.extract` returns the recipe source, or None when the template is not of the
functions' shape). The arguments are read off the template's data (the JobSet's metadata,
node selector, pod annotations, containers) and its startup command (the trainer, the
``LIBTPU_INIT_ARGS`` spacing, ``ARTIFACT_DIR``, the log copy command, ...), and a keyword is
written only where the template differs from the function's default. No candidate is
trusted: :mod:`rcpc.importer.proof` renders the call and compares it with the template as
data, and the import falls back to a data literal (:func:`rcpc.importer.manifest.literal`)
when none is equal. A new library function is one more entry in :data:`CANDIDATES`.

The functions are those of ``@rcpc//maxtext_tpu.rcp`` (rcpc's standard library; the shapes of
the published TPU recipes, ../shared/reference/tpu-recipes.md): ``maxtext_jobset`` (the whole hand-written
recipe in one call), ``xpk_jobset`` with ``xpk_command`` or ``xpk_maxdiffusion_command``,
and ``xpk_generated_jobset`` with ``xpk_generated_command`` (the JobSet as XPK generates it).
"""

from __future__ import annotations

from typing import Callable

import attrs

from rcpc.importer import manifest as m
from rcpc.importer.command import parse_commands
from rcpc.importer.literals import fstring, placeholders, scalar, string

MAXTEXT_TPU = "@rcpc//maxtext_tpu.rcp"

# Kubernetes/GKE names the library's functions write (@rcpc//maxtext_tpu.rcp).
ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
SLICE_TOPOLOGY_ANNOTATION = "cloud.google.com/gke-tpu-slice-topology"
ONE_CONTAINER = ["jax-tpu"]
TWO_CONTAINERS = ["jax-tpu-1", "jax-tpu-2"]

# Trainer programs the library names (their constant, in the library).
TRAINERS = {
    "python3 -m MaxText.train MaxText/configs/base.yml": "MAXTEXT_TRAIN_LEGACY",
    "python3 -m maxtext.trainers.pre_train.train maxtext/configs/base.yml": "MAXTEXT_PRE_TRAIN",
    "python3 -m src.maxdiffusion.train_wan src/maxdiffusion/configs/base_wan_14b.yml": "MAXDIFFUSION_TRAIN_WAN",
}
# The commands copying train.log to the bucket (GSUTIL_CP, GCLOUD_STORAGE_CP): their words.
COPIES = {("gsutil", "cp"): "GSUTIL_CP", ("gcloud", "storage", "cp", "--no-user-output-enabled"): "GCLOUD_STORAGE_CP"}
# How XPK's generated command starts: a blank line after the trap (XPK_GENERATED_COMMAND_START).
_GENERATED_START = "trap _sigterm SIGTERM;\n\n("
_MAXDIFFUSION_CACHE = "HF_HUB_CACHE=/dev/shm "


@attrs.frozen
class Call:
    """A function call being written: ``function``, ``args`` (recipe source, in order:
    positional first, then ``name = value`` keywords) and the library ``loads`` it needs."""

    function: str
    args: list
    loads: list

    def inline(self) -> str:
        """The call on one line (``rcpc fmt`` lays it out)."""
        return f"{self.function}({', '.join(self.args)})"


@attrs.frozen
class Candidate:
    """``function`` of ``library`` (a load path: ``@rcpc//...``, or a workspace path
    ``//...``), its startup command built by ``command`` (a function of the library, or "" when ``arguments`` writes it);
    ``arguments(template)`` returns ``(lines defining LIBTPU_FLAGS etc., the call)`` or None
    when the template has not the functions' shape."""

    library: str
    function: str
    arguments: Callable
    command: str = ""

    @property
    def shape(self) -> str:
        """The functions' names, as the import reports them (``xpk_jobset with xpk_command``)."""
        return f"{self.function} with {self.command}" if self.command else self.function

    def extract(self, t: m.Template) -> str | None:
        """The whole recipe as a call of the function, or None."""
        found = self.arguments(t)
        if found is None:
            return None
        before, call = found
        names = ", ".join(string(n) for n in sorted(set(call.loads) | {self.function}))
        lines = m.header(t, f"as a call of {self.shape}")
        at = lines.index("") + 1
        lines[at:at] = [f"load({string(self.library)}, {names})", ""]
        return "\n".join(lines + m.flag_lines(t) + before + [call.inline(), "", 'variant("default")']) + "\n"


# The JobSet ------------------------------------------------------------------------------

@attrs.frozen
class Job:
    """What the JobSet functions read off a template: ``name`` and ``image`` (recipe
    source), ``slice`` (a tpu_slice spec, ``tpu7x:4x4x4``), the container names, whether
    they declare ports, whether the JobSet is XPK's generated one (null labels), and whether
    the slice is exclusive (the topology in the node selector, not GKE dynamic slicing)."""

    name: str
    image: str
    slice: str
    containers: list
    ports: bool
    generated: bool
    exclusive: bool


def read_job(t: m.Template) -> Job | None:
    """The :class:`Job` of a JobSet of one replicated job whose containers run one image,
    or None."""
    doc, names = t.doc, set(t.params)
    cs = m.containers(doc)
    try:
        (job,) = doc["spec"]["replicatedJobs"]
        pod = job["template"]["spec"]["template"]
        selector = pod["spec"]["nodeSelector"]
        accelerator = selector[ACCELERATOR_LABEL]
        topology = selector.get(TOPOLOGY_LABEL)
        exclusive = topology is not None
        if not exclusive:
            topology = ((pod.get("metadata") or {}).get("annotations") or {}).get(SLICE_TOPOLOGY_ANNOTATION)
        name = doc["metadata"].get("name")
    except (AttributeError, KeyError, TypeError, ValueError):  # not of this shape
        return None
    images = [c.get("image") for c in cs]
    if not (isinstance(accelerator, str) and isinstance(topology, str) and isinstance(name, str)) \
            or not images or not all(isinstance(i, str) for i in images) or len(set(images)) != 1:
        return None
    return Job(fstring(placeholders(name, names)), fstring(placeholders(images[0], names)),
               f"{accelerator}:{topology}", [c.get("name") for c in cs], "ports" in cs[0],
               "labels" in doc["metadata"], exclusive)


def _containers(job: Job, default: list, loads: list) -> list:
    """The ``containers = ...`` keyword when the names are not ``default``."""
    if job.containers == default:
        return []
    for names, constant in ((ONE_CONTAINER, "ONE_CONTAINER_PER_HOST"), (TWO_CONTAINERS, "TWO_CONTAINERS_PER_HOST")):
        if job.containers == names:
            loads.append(constant)
            return [f"containers = {constant}"]
    return ["containers = [" + ", ".join(string(str(n)) for n in job.containers) + "]"]


def _jobset(function: str, command: Callable, *, generated: bool) -> Callable:
    """The arguments reader of ``function`` (xpk_jobset, or xpk_generated_jobset when
    ``generated``) with the startup command ``command(template)`` returns (or None)."""

    def arguments(t: m.Template):
        job = read_job(t)
        if job is None or job.generated != generated or (not generated and not job.exclusive):
            return None
        found = command(t)
        if found is None:
            return None
        before, cmd = found
        loads = list(cmd.loads) + [cmd.function]
        args = [job.name, job.image, f"tpu_slice({string(job.slice)})", cmd.inline()]
        if generated:
            args += _containers(job, TWO_CONTAINERS, loads)
            if job.ports:
                args.append("container = XPK_CONTAINER_WITH_PORTS")
                loads.append("XPK_CONTAINER_WITH_PORTS")
            if job.exclusive:
                args.append("exclusive = True")
        else:
            args += _containers(job, ONE_CONTAINER, loads)
            if not job.ports:
                args.append("container = XPK_CONTAINER")
                loads.append("XPK_CONTAINER")
        return before, Call(function, args, loads)

    return arguments


def _maxtext_jobset(t: m.Template):
    """``maxtext_jobset(NAME, IMAGE, "tpu7x:4x4x4", MAXTEXT_FLAGS, LIBTPU_FLAGS)``: the
    xpk_jobset with xpk_command that takes no keyword."""
    found = _jobset("xpk_jobset", _xpk_command, generated=False)(t)
    if found is None:
        return None
    before, call = found
    job = read_job(t)
    if call.args[3] != f"xpk_command({m.FLAGS_NAME}, LIBTPU_FLAGS)" or len(call.args) > 4:
        return None
    return before, Call("maxtext_jobset", [job.name, job.image, string(job.slice), m.FLAGS_NAME, "LIBTPU_FLAGS"], [])


# The startup command ---------------------------------------------------------------------

def _libtpu(s: m.Startup, spaced: bool) -> list | None:
    """``LIBTPU_FLAGS = {...}`` when the XLA flag list is spelled as the library's
    ``libtpu_init_args(..., spaced = spaced)`` writes it (``--k=v `` each, or ``   --k=v``
    each and one space at the end), else None."""
    prefix, items, sep, suffix = s.xla
    if (prefix, sep, suffix) != (("   ", "   ", " ") if spaced else ("", " ", " ")):
        return None
    lines = []
    for item in items:
        k, eq, v = item[2:].partition("=")
        if not eq or not k.isidentifier():
            return None
        lines.append(f"    {string(k)}: {scalar(v)},")
    return ["LIBTPU_FLAGS = {"] + lines + ["}", ""]


def _words(text: str):
    """``(words, raw texts)`` of each simple command of ``text``."""
    for c in parse_commands(text):
        ws = [w for w in getattr(c, "parts", []) if w.kind == "word"]
        yield [w.word for w in ws], [text[w.pos[0]:w.pos[1]] for w in ws]


def _artifacts(text: str, names) -> str | None:
    """The value of ``export ARTIFACT_DIR='...'`` in a startup command (recipe source)."""
    for _, raws in _words(text):
        for raw in raws:
            if raw.startswith("ARTIFACT_DIR='") and raw.endswith("'"):
                return fstring(placeholders(raw[len("ARTIFACT_DIR='"):-1], names))
    return None


def _copy(text: str) -> str | None:
    """The library constant of the command copying train.log (GSUTIL_CP, ...), or None."""
    for words, _ in _words(text):
        if "train.log" in words and tuple(words[:words.index("train.log")]) in COPIES:
            return COPIES[tuple(words[:words.index("train.log")])]
    return None


def _banner(text: str) -> str | None:
    """The text of the ``echo '...'`` step, or None."""
    for words, raws in _words(text):
        if len(words) == 2 and words[0] == "echo" and raws[1] == f"'{words[1]}'":
            return words[1]
    return None


def _startup(t: m.Template, spaced: bool):
    """``(startup, LIBTPU_FLAGS lines)`` when the command has a flag set, a trainer and an
    XLA flag list spelled with ``spaced``; else None."""
    s = t.startup
    if s is None or s.flags is None or s.xla is None or s.trainer is None:
        return None
    libtpu = _libtpu(s, spaced)
    return None if libtpu is None else (s, libtpu)


def _trainer(s: m.Startup, default: str, loads: list) -> list:
    """The ``trainer = ...`` keyword when the trainer is not the library's ``default``."""
    constant = TRAINERS.get(s.trainer.program)
    if constant == default:
        return []
    if constant is not None:
        loads.append(constant)
        return [f"trainer = {constant}"]
    return [f"trainer = {string(s.trainer.program)}"]


def _quote(s: m.Startup) -> list:
    return ["quote = [" + ", ".join(string(k) for k in s.quoted) + "]"] if s.quoted else []


def _xpk_command(t: m.Template):
    """``xpk_command(MAXTEXT_FLAGS, LIBTPU_FLAGS, ...)``: the command of the hand-written
    recipes (@rcpc//maxtext_tpu.rcp)."""
    s = t.startup
    if s is None or _GENERATED_START in s.text or s.xla is None:
        return None
    spaced = s.xla[0] != ""
    found = _startup(t, spaced)
    if found is None:
        return None
    artifacts = _artifacts(s.text, set(t.params))
    if _lead(s) != (" " if artifacts is not None else ""):  # the trainer right after " && " (and " ")
        return None
    loads: list = []
    args = [m.FLAGS_NAME, "LIBTPU_FLAGS"] + _trainer(s, "MAXTEXT_TRAIN_LEGACY", loads)
    if artifacts is not None:
        if _copy(s.text) != "GSUTIL_CP":
            return None
        args.append(f"artifacts = {artifacts}")
    if spaced:
        args.append("spaced = True")
    args += _quote(s)
    return found[1], Call("xpk_command", args, loads)


def _lead(s: m.Startup) -> str | None:
    """The spaces the command writes between ``&& `` and the trainer (xpk_steps' ``lead``)."""
    before = s.text[:s.trainer.program_start]
    stripped = before.rstrip(" ")
    return before[len(stripped) + 1:] if stripped.endswith("&&") else None


def _xpk_generated_command(t: m.Template):
    """``xpk_generated_command(MAXTEXT_FLAGS, LIBTPU_FLAGS, ARTIFACTS, ...)``: the command as
    XPK generates it."""
    s = t.startup
    if s is None or _GENERATED_START not in s.text or s.quoted:
        return None
    found = _startup(t, True)
    if found is None:
        return None
    artifacts = _artifacts(s.text, set(t.params))
    copy = _copy(s.text)
    if artifacts is None or copy is None:
        return None
    lead = _lead(s)
    if not lead:
        return None
    loads: list = []
    args = [m.FLAGS_NAME, "LIBTPU_FLAGS", artifacts] + _trainer(s, "MAXTEXT_PRE_TRAIN", loads)
    if copy != "GCLOUD_STORAGE_CP":
        args.append(f"copy = {copy}")
        loads.append(copy)
    if lead != "  ":
        args.append(f"lead = {string(lead)}")
    return found[1], Call("xpk_generated_command", args, loads)


def _xpk_maxdiffusion_command(t: m.Template):
    """``xpk_maxdiffusion_command(MAXTEXT_FLAGS, LIBTPU_FLAGS, ...)``: the MaxDiffusion
    command (the wan2.1 recipe)."""
    s = t.startup
    if s is None or _GENERATED_START in s.text or s.quoted or s.trainer is None \
            or not s.text[:s.trainer.program_start].endswith("&& " + _MAXDIFFUSION_CACHE):
        return None
    found = _startup(t, False)
    if found is None:
        return None
    banner = _banner(s.text)
    if banner is None:
        return None
    loads: list = []
    args = [m.FLAGS_NAME, "LIBTPU_FLAGS"] + _trainer(s, "MAXDIFFUSION_TRAIN_WAN", loads)
    if banner != "Starting WAN training ...":
        args.append(f"banner = {string(banner)}")
    return found[1], Call("xpk_maxdiffusion_command", args, loads)


CANDIDATES = (
    Candidate(MAXTEXT_TPU, "maxtext_jobset", _maxtext_jobset),
    Candidate(MAXTEXT_TPU, "xpk_jobset", _jobset("xpk_jobset", _xpk_command, generated=False), "xpk_command"),
    Candidate(MAXTEXT_TPU, "xpk_generated_jobset",
              _jobset("xpk_generated_jobset", _xpk_generated_command, generated=True), "xpk_generated_command"),
    Candidate(MAXTEXT_TPU, "xpk_jobset", _jobset("xpk_jobset", _xpk_maxdiffusion_command, generated=False),
              "xpk_maxdiffusion_command"),
)
