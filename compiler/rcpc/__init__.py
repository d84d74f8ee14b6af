"""rcpc: a recipe compiler for MaxText / Tunix launches on TPU pods.

Recipes (``*.rcp``) compile, with MaxText's last-key-wins override semantics, into MaxText
flag strings and Kubernetes manifests (JobSets). See ``docs/`` for the language and CLI, and
docs/api.md for the library: :class:`Workspace` (build, render, check, explain),
:func:`parse` and :func:`format_source` (:mod:`rcpc.api`).
"""

__version__ = "0.1.0"

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
