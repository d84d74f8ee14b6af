"""Kubernetes in the recipe domain: the API server's, JobSet's and Kueue's rules for
manifests, their schemas, and manifests read from files (docs/kubernetes.md). It
imports the language core, itself and the seam of docs/architecture.md; never
:mod:`rcpc.domain.maxtext.flagset`."""
