"""Module-level regular expressions at a fraction of ``re.compile``'s cost: :class:`LazyPattern`,
compiled on first use, for patterns a build may not need; :func:`precompiled`, compiled ahead of
time, for the patterns every build uses.

Python's ``re`` compiler is pure Python: compiling a pattern costs ~30-300 us of CPU (more for
long alternations), paid at import by every process that imports the module, whether or not it
matches anything. An edit build imported ~40 module-level patterns it never used (Kubernetes
name rules, YAML 1.1 timestamps, MaxText's lax-mode spellings, lint's ignore comments...):
~3 ms of its CPU. :class:`LazyPattern` stands where ``re.compile(...)`` stood and compiles on the
first attribute read, so the module's code (``_NAME.fullmatch(text)``) is unchanged.

A pattern used on every build (the lexer's scanner: ~0.8 ms to compile, the YAML emitter's
scalar rules: ~0.6 ms...) is :func:`precompiled`: ``re.compile`` is ``sre_parse`` (the pattern's
syntax tree), ``sre_compile`` (that tree as the matching engine's code: a list of ints) and
``_sre.compile`` (the :class:`re.Pattern` of that code; C, it validates the code). The first two,
pure Python and nearly all of the cost, are done ahead of time by ``python -m
rcpc.core.pattern_codegen`` for the interpreter the package's byte code is made for (CPython
3.11, the oldest the package supports and CI's), and their result shipped in
:mod:`rcpc.core.pattern_codes`; at import only ``_sre.compile`` runs (~25 us for the scanner).
A :class:`LazyPattern` is made from the table too when first used (the Kubernetes name rules of a
first build's validation...). The pattern is the one ``re.compile`` returns: ``re.Pattern``
equality compares the engine's code (``tests/test_patterns.py`` checks every entry). On another interpreter (another
``_sre.MAGIC`` or version), or for a pattern the table lacks, it is ``re.compile``.
"""

from __future__ import annotations

import re
import sys

import _sre

from rcpc.core.pattern_codes import INTERPRETER, PATTERNS

__all__ = ["LazyPattern", "precompiled"]

# The table is this interpreter's: same version (its byte-code tag) and engine.
_USABLE = INTERPRETER == (sys.implementation.cache_tag, _sre.MAGIC, _sre.CODESIZE)
ASKED: list = []  # (pattern, flags) of each precompiled() call and LazyPattern made: what the generator writes


def precompiled(pattern: str, flags: int = 0, asked: bool = True) -> re.Pattern:
    """``re.compile(pattern, flags)`` (the same :class:`re.Pattern`), from the engine code
    :mod:`rcpc.core.pattern_codes` holds for it when that table is this interpreter's, else
    compiled now. For module-level patterns of the build path (the generator collects every
    call made while it imports the package's modules; ``asked=False``: a :class:`LazyPattern`'s,
    collected when it was made)."""
    if asked:
        ASKED.append((pattern, flags))
    entry = PATTERNS.get((pattern, flags)) if _USABLE else None
    if entry is None:
        return re.compile(pattern, flags)
    final_flags, code, groups, groupindex, indexgroup = entry
    return _sre.compile(pattern, final_flags, list(code), groups, groupindex, indexgroup)


class LazyPattern:
    """``re.compile(pattern, flags)``, compiled on the first read of one of its attributes
    (``match``, ``fullmatch``, ``search``, ``sub``, ``pattern``, ``groups``...), which are then
    the compiled :class:`re.Pattern`'s own. Its methods are kept on the instance after the
    first read, so a later call costs what calling the pattern's method costs. Dunder names
    are not delegated (``copy`` and ``pickle`` see a plain object); :attr:`compiled` is the
    :class:`re.Pattern` itself, for an API that needs one."""

    def __init__(self, pattern: str, flags: int = 0):
        self._source = (pattern, flags)
        ASKED.append(self._source)

    @property
    def compiled(self) -> re.Pattern:
        """The :class:`re.Pattern` (compiled now if it was not yet)."""
        found = self.__dict__.get("_compiled")
        if found is None:
            found = self._compiled = precompiled(*self._source, asked=False)
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
