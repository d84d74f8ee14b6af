"""The language core: syntax (parser, AST, comments), name resolution, evaluation, the
universal built-ins, values, diagnostics and the formatter. It knows nothing of MaxText or
Kubernetes: the recipe domain (:mod:`rcpc.domain`) plugs into it (docs/architecture.md)."""
