"""rcpc: a recipe compiler for MaxText / Tunix launches on TPU pods.

Recipes (``*.rcp``) compile, with MaxText's last-key-wins override semantics, into MaxText
flag strings and Kubernetes manifests (JobSets). See ``docs/`` for the language and CLI, and
docs/api.md for the library: :class:`Workspace` (build, render, check, explain),
:func:`parse` and :func:`format_source` (:mod:`rcpc.api`).
"""

__version__ = "0.1.0"

# A compile allocates many small objects that reference counting frees (ASTs and values hold
# no cycles; a parse leaves none, rcpc.core.syntax.descent.FastParser.close). The cyclic
# collector's default threshold (700) made it cost ~10% of a cold build; at 50,000 each
# young-generation collection still scanned the ~70,000 live objects of the recipe being
# compiled (~50 ms each, ~4% of a 1,000-recipe build). It still runs, 700x less often.
GC_THRESHOLDS = (500_000, 20, 20)

_API = ("Workspace", "parse", "format_source", "UsageError", "Build", "Check", "Rendered")
__all__ = [*_API, "CompileError", "__version__"]


def __getattr__(name: str):
    """The library API, imported on first use (PEP 562): ``import rcpc`` stays as cheap as the
    command's start-up needs."""
    if name in _API:
        from rcpc import api

        return getattr(api, name)
    if name == "CompileError":
        from rcpc.core.diagnostics import CompileError

        return CompileError
    raise AttributeError(f"module 'rcpc' has no attribute {name!r}")
