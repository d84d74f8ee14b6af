"""The TPU slice a Kubernetes pod runs on, read from its node selector and its template's
annotations (GKE's labels: :mod:`rcpc.domain.tpu`): :func:`pod_slice`, for the Kubernetes
checks (:mod:`rcpc.domain.kube.rules`: ``E1006``, ``E1007``, ``E1013``, ``W1002``) and for
MaxText's launch checks on a pod (:mod:`rcpc.domain.launch`). A module of its own so that a
build whose renders were validated before reads slices without loading the Kubernetes rules.
"""

from __future__ import annotations

from rcpc.core.diagnostics import did_you_mean
from rcpc.core.values import Dict, Str
from rcpc.domain.kube.paths import diag as _diag
from rcpc.domain.tpu import (ACCELERATOR_LABEL, ALIASES, GENERATIONS, GKE_ACCELERATORS, SLICE_TOPOLOGY_ANNOTATION,
                             TOPOLOGY_LABEL, tpu_slice)


def pod_slice(pod: Dict, meta, path: tuple = (), kind: str = "", out: list | None = None):
    """The TPU slice a pod runs on: the accelerator from its node selector, the topology from
    its node selector (``cloud.google.com/gke-tpu-topology``) or, as GKE dynamic slicing
    writes it, its template's ``cloud.google.com/gke-tpu-slice-topology`` annotation. None
    for a pod that selects no TPU slice. ``E1013`` (into ``out``) when both give a topology
    and they differ."""
    sel = pod.items.get("nodeSelector")
    acc = sel.items.get(ACCELERATOR_LABEL) if type(sel) is Dict else None
    if type(acc) is Str and acc.value not in GKE_ACCELERATORS and out is not None:
        _unknown_accelerator(acc, path, kind, out)
    if type(acc) is not Str or acc.value not in ALIASES:
        return None
    topo = sel.items.get(TOPOLOGY_LABEL)
    annotations = meta.items.get("annotations") if type(meta) is Dict else None
    noted = annotations.items.get(SLICE_TOPOLOGY_ANNOTATION) if type(annotations) is Dict else None
    if type(topo) is Str and type(noted) is Str and topo.value != noted.value and out is not None:
        out.append(_diag("E1013", kind, path + ("nodeSelector", TOPOLOGY_LABEL), f"the node selector asks for "
                         f"topology {topo.value} but the pod's {SLICE_TOPOLOGY_ANNOTATION} annotation "
                         f"asks for {noted.value}", topo.span, related=(("annotation", noted.span),),
                         hint="give the slice's topology once"))
    if type(topo) is not Str:
        topo = noted
    if type(topo) is not Str:
        return None
    return tpu_slice(f"{acc.value}:{topo.value}", topo.span)


def _unknown_accelerator(acc: Str, path: tuple, kind: str, out: list) -> None:
    """``W1002``: a node selector asking for a TPU accelerator that no GKE node is labelled
    with (the pods never schedule; the API server accepts it)."""
    gen = GENERATIONS.get(ALIASES.get(acc.value, ""))
    hint = (f"GKE labels {gen.name} nodes {gen.accelerator}" if gen is not None
            else did_you_mean(acc.value, GKE_ACCELERATORS) or "GKE's values: " + ", ".join(sorted(GKE_ACCELERATORS)))
    out.append(_diag("W1002", kind, path + ("nodeSelector", ACCELERATOR_LABEL),
                     f"no GKE node is labelled {ACCELERATOR_LABEL}={acc.value}: the pods would never be scheduled",
                     acc.span, severity="warning", hint=hint))
