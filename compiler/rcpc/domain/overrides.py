"""What one build sets from the command line, apart from the recipe (docs/cli.md): ``--set
NAME=VALUE`` items, ``--values FILE.toml`` files of param values and ``--flag
RENDER.KEY=VALUE`` MaxText flag overrides.

Param values are layered as Helm layers ``-f`` and ``--set``: values files in the order given
(a later file wins), then ``--set`` items (in order; they win over every file); ``--flag``
items are then later layers of the flag sets the renders carry.

:func:`provenance` is what a build with overrides records beside its renders, in the output's
manifest (docs/cli.md, Output directory: every override, in the order it was layered), as
Helm keeps the values a release was installed with (``helm get values``).
"""

from __future__ import annotations

import os

from rcpc.core import record
from rcpc.core.diagnostics import error


@record.frozen
class Overrides:
    """One build's command-line overrides: ``sets`` (``NAME=VALUE`` text), ``values``
    ((absolute path, path as given) of each values file, in order) and ``flags``
    (``RENDER.KEY=VALUE`` text). False when it holds none."""

    sets: tuple = ()
    values: tuple = ()
    flags: tuple = ()

    def __bool__(self) -> bool:
        return bool(self.sets or self.values or self.flags)

    @property
    def params(self) -> bool:
        """It sets param values (``--set`` or ``--values``): the build is variant ``custom``."""
        return bool(self.sets or self.values)

    @classmethod
    def of(cls, sets=None, values=None, flags=None) -> "Overrides":
        """``sets`` as an :class:`Overrides` (returned as it is), or a list of ``--set``
        items (None: none), with ``values`` (paths, relative to the current directory) and
        ``flags`` items."""
        if isinstance(sets, Overrides):
            return sets
        return cls(tuple(sets or ()), tuple((os.path.abspath(p), str(p)) for p in values or ()), tuple(flags or ()))

    def options(self) -> list[str]:
        """The build cache's options for these overrides (:func:`rcpc.build.cache.request`): what,
        besides the files read, changes the result (a values file's bytes are a dependency)."""
        return [*(f"set={s}" for s in self.sets), *(f"values={p}" for p, _ in self.values),
                *(f"flag={f}" for f in self.flags)]


def parse_sets(sets) -> dict[str, str]:
    """``NAME=VALUE`` strings from ``--set`` → {name: text} (a later item wins); the text is
    typed by the param when it is declared (:func:`rcpc.domain.builtins.param_value_from_text`).
    ``E0608`` for an item without ``=`` or one that is not UTF-8 (a surrogate-escaped byte of
    argv)."""
    out = {}
    for item in sets:
        name, eq, text = item.partition("=")
        if not eq or not name:
            raise error("E0608", f"--set {item!r} is not NAME=VALUE", None,
                        hint="write --set NAME=VALUE, e.g. --set MAX_STEPS=100")
        if any("\ud800" <= c <= "\udfff" for c in item):  # bytes argv could not decode
            raise error("E0608", f"--set {item!r} is not valid UTF-8 text", None,
                        hint="values are written into UTF-8 renders")
        out[name] = text
    return out


def flag_target(item: str, files) -> tuple[str, list[str], str, str]:
    """What ``--flag`` item ``item`` (``RENDER.KEY=VALUE``) names among the render file names
    ``files`` (in declaration order): ``(RENDER, the file names it names, KEY, VALUE)``.
    RENDER is a file name (``trainer.flags``) or a stem (``trainer``: every render of that
    name, as in a contract's ``changes``); the longest one that ``item`` starts with, followed
    by ``.`` and a key, is taken (render names may hold dots). ``("", [], "", VALUE)`` when
    none is."""
    head, _, text = item.partition("=")
    found: dict[str, list[str]] = {}
    for f in files:
        for name in dict.fromkeys((f, f.rsplit(".", 1)[0])):
            found.setdefault(name, []).append(f)
    for name in sorted(found, key=len, reverse=True):
        if head.startswith(name + ".") and len(head) > len(name) + 1:
            return name, found[name], head[len(name) + 1:], text
    return "", [], "", text


def provenance(overrides: Overrides, variant: str | None, files, renders) -> dict:
    """The record of one variant built with ``overrides`` (true): ``{"overrides": [...]}``,
    each override in the order it was layered (values files, then ``--set`` items, then
    ``--flag`` items, each in the order given), plus ``"variant"``, the variant whose params
    a build of ``--flag`` items alone has (``variant`` or ``default``). An override is

    * ``{"kind": "values", "path": P, "sha256": D, "params": [NAME, ...]}``: a values file
      (``P`` relative to the workspace when inside it, else as given; ``D`` the SHA-256 hex of
      the bytes the build read; the params it sets, in the file's order);
    * ``{"kind": "set", "name": NAME, "value": TEXT}``: a ``--set`` item, the value as typed;
    * ``{"kind": "flag", "render": RENDER, "key": KEY, "value": TEXT}``: a ``--flag`` item
      (``RENDER`` as given: a file name or a stem).

    ``files``: the :class:`~rcpc.domain.valuesfile.ValuesFile` of each values file, in order;
    ``renders``: the variant's render file names (:func:`flag_target` resolves each ``--flag``
    item among them as the build did). JSON data: lists and strings only."""
    layers: list[dict] = [{"kind": "values", "path": f.shown, "sha256": f.sha256, "params": list(f.keys)}
                          for f in files]
    for item in overrides.sets:
        name, _, text = item.partition("=")
        layers.append({"kind": "set", "name": name, "value": text})
    for item in overrides.flags:
        render, _, key, text = flag_target(item, renders)
        layers.append({"kind": "flag", "render": render, "key": key, "value": text})
    out: dict = {"overrides": layers}
    if not overrides.params:
        out["variant"] = variant or "default"
    return out
