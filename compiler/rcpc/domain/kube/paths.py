"""Places in a Kubernetes manifest, as the checks of :mod:`rcpc.domain.kube.rules` and
:mod:`rcpc.domain.kube.schema` name them in their diagnostics."""

from __future__ import annotations

from rcpc.core.diagnostics import Diagnostic
from rcpc.core.source import Span
from rcpc.core.values import Dict, Null

CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")  # of a PodSpec


def manifest_path(path: tuple) -> str:
    """``("spec", "replicatedJobs", 1, "name")`` → ``spec.replicatedJobs[1].name``."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(the manifest)"


def value_at(d, *keys):
    """The value at ``keys`` under dict ``d`` (each step a dict key), or None where a step is
    missing or not a dict; a null is None (the API server reads it as unset)."""
    for k in keys:
        if type(d) is not Dict:
            return None
        d = d.items.get(k)
    return None if type(d) is Null else d


def diag(code: str, kind: str, path: tuple, message: str, span: Span, hint: str | None = None,
         related=(), severity: str = "error") -> Diagnostic:
    """A diagnostic about the value at ``path`` of a manifest of ``kind``."""
    return Diagnostic(code, f"{kind} {manifest_path(path)}: {message}", span, severity, hint, tuple(related))
