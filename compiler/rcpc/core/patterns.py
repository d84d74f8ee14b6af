"""Regular expressions compiled on first use, for module-level patterns a build may not need.

Python's ``re`` compiler is pure Python: compiling a pattern costs ~30-300 us of CPU (more for
long alternations), paid at import by every process that imports the module, whether or not it
matches anything. An edit build imported ~40 module-level patterns it never used (Kubernetes
name rules, YAML 1.1 timestamps, MaxText's lax-mode spellings, lint's ignore comments...):
~3 ms of its CPU. :class:`LazyPattern` stands where ``re.compile(...)`` stood and compiles on the
first attribute read, so the module's code (``_NAME.fullmatch(text)``) is unchanged.

A pattern used on every build (the lexer's scanner, the YAML emitter's scalar rules) gains
nothing from this: it stays a plain ``re.compile``.
"""

from __future__ import annotations

import re

__all__ = ["LazyPattern"]


class LazyPattern:
    """``re.compile(pattern, flags)``, compiled on the first read of one of its attributes
    (``match``, ``fullmatch``, ``search``, ``sub``, ``pattern``, ``groups``...), which are then
    the compiled :class:`re.Pattern`'s own. Its methods are kept on the instance after the
    first read, so a later call costs what calling the pattern's method costs. Dunder names
    are not delegated (``copy`` and ``pickle`` see a plain object); :attr:`compiled` is the
    :class:`re.Pattern` itself, for an API that needs one."""

    def __init__(self, pattern: str, flags: int = 0):
        self._source = (pattern, flags)

    @property
    def compiled(self) -> re.Pattern:
        """The :class:`re.Pattern` (compiled now if it was not yet)."""
        found = self.__dict__.get("_compiled")
        if found is None:
            found = self._compiled = re.compile(*self._source)
        return found

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self.compiled, name)
        if callable(value):
            self.__dict__[name] = value  # found by the next read without this method
        return value

    def __repr__(self) -> str:
        pattern, flags = self._source
        return f"LazyPattern({pattern!r}{f', {flags!r}' if flags else ''})"
