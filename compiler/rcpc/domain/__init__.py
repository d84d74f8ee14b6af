"""The recipe domain: params, variants, contracts, MaxText flag sets, TPU slices,
Kubernetes manifests and JobSets, and the render kinds. It builds on the language core
(:mod:`rcpc.core`) and plugs its built-ins into it (docs/architecture.md)."""
