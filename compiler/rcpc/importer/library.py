"""Shared library functions an imported manifest may be a call of, tried in order.

A :class:`Candidate` names the library, the function and how its arguments are read off a
template (:meth:`Candidate.extract` returns the recipe source, or None when the template is
not of the function's shape). No candidate is trusted: :mod:`rcpc.importer.proof` renders the
call and compares it with the template as data, and the import falls back to a data literal
(:func:`rcpc.importer.manifest.literal`) when none is equal. A new library function is one
more entry in :data:`CANDIDATES`.
"""

from __future__ import annotations

from typing import Callable

import attrs

from rcpc.importer import manifest as m
from rcpc.importer.literals import fstring, placeholders, scalar, string

MAXTEXT_TPU = "//recipes/lib/maxtext_tpu.rcp"


@attrs.frozen
class Candidate:
    """``function`` of ``library`` (a workspace path, ``//...``); ``arguments(template)``
    returns ``(call source, names to load)`` or None when the template has not its shape."""

    library: str
    function: str
    arguments: Callable

    def extract(self, t: m.Template) -> str | None:
        """The whole recipe as a call of the function, or None."""
        found = self.arguments(t)
        if found is None:
            return None
        call, loads = found
        names = ", ".join(string(n) for n in sorted(set(loads) | {self.function}))
        lines = m.header(t, f"as a call of {self.function}")
        at = lines.index("") + 1
        lines[at:at] = [f"load({string(self.library)}, {names})", ""]
        return "\n".join(lines + m.flag_lines(t) + call + ["", 'variant("default")']) + "\n"


def _xpk_jobset(t: m.Template):
    """``xpk_jobset(NAME, IMAGE, tpu_slice(...), xpk_command(FLAGS, LIBTPU, ...))``: the
    older generation of the published TPU recipes (recipes/lib/maxtext_tpu.rcp)."""
    s, doc = t.startup, t.doc
    if s is None or s.flags is None or s.xla is None or s.trainer is None:
        return None
    names = set(t.params)
    cs = m.containers(doc)
    try:
        (job,) = doc["spec"]["replicatedJobs"]
        selector = job["template"]["spec"]["template"]["spec"]["nodeSelector"]
        shape = f"{selector['cloud.google.com/gke-tpu-accelerator']}:{selector['cloud.google.com/gke-tpu-topology']}"
    except (KeyError, TypeError, ValueError):
        return None
    images = {c.get("image") for c in cs}
    if len(images) != 1 or not isinstance(doc["metadata"].get("name"), str):
        return None
    loads = ["xpk_command"]
    container_names = [c.get("name") for c in cs]
    extra = []
    if container_names == ["jax-tpu-1", "jax-tpu-2"]:
        extra.append("containers = TWO_CONTAINERS_PER_HOST")
        loads.append("TWO_CONTAINERS_PER_HOST")
    elif container_names != ["jax-tpu"]:
        extra.append("containers = [" + ", ".join(string(str(n)) for n in container_names) + "]")
    if "ports" not in cs[0]:
        extra.append("container = XPK_CONTAINER")
        loads.append("XPK_CONTAINER")
    prefix, items, sep, suffix = s.xla
    libtpu = []
    for item in items:
        k, eq, v = item[2:].partition("=")
        if not eq:
            return None
        libtpu.append(f"    {string(k)}: {scalar(v)},")
    command = [m.FLAGS_NAME, "LIBTPU_FLAGS"]
    program = s.trainer.program
    if program == "python3 -m maxtext.trainers.pre_train.train maxtext/configs/base.yml":
        command.append("trainer = MAXTEXT_PRE_TRAIN")
        loads.append("MAXTEXT_PRE_TRAIN")
    elif program != "python3 -m MaxText.train MaxText/configs/base.yml":
        command.append(f"trainer = {string(program)}")
    artifacts = _artifacts(s.text, names)
    if artifacts is not None:
        command.append(f"artifacts = {artifacts}")
    if prefix:
        command.append("spaced = True")
    call = (["LIBTPU_FLAGS = {"] + libtpu + ["}", "",
            "xpk_jobset(",
            f"    {fstring(placeholders(doc['metadata']['name'], names))},",
            f"    {fstring(placeholders(images.pop() or '', names))},",
            f"    tpu_slice({string(shape)}),",
            f"    xpk_command({', '.join(command)}),"]
            + [f"    {e}," for e in extra] + [")"])
    return call, loads


def _artifacts(text: str, names) -> str | None:
    """The value of ``export ARTIFACT_DIR='...'`` in a startup command (recipe source)."""
    from rcpc.importer.command import parse_commands

    for c in parse_commands(text):
        for w in getattr(c, "parts", []):
            raw = text[w.pos[0]:w.pos[1]] if w.kind == "word" else ""
            if raw.startswith("ARTIFACT_DIR='") and raw.endswith("'"):
                return fstring(placeholders(raw[len("ARTIFACT_DIR='"):-1], names))
    return None


CANDIDATES = (
    Candidate(MAXTEXT_TPU, "xpk_jobset", _xpk_jobset),
)
