"""What one build sets from the command line, apart from the recipe (docs/cli.md): ``--set
NAME=VALUE`` items, ``--values FILE.toml`` files of param values and ``--flag
RENDER.KEY=VALUE`` MaxText flag overrides.

Param values are layered as Helm layers ``-f`` and ``--set``: values files in the order given
(a later file wins), then ``--set`` items (in order; they win over every file).
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
        """The build cache's options for these overrides (:func:`rcpc.cache.request`): what,
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
