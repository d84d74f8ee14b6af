"""MaxText in the recipe domain: flag sets with its last-key-wins semantics, their
emission, its schema and cross-field refusals, and the device mesh
(docs/maxtext.md). It imports the language core, itself and the seam of
docs/architecture.md; never :mod:`rcpc.domain.kube.rules`."""

BUILTIN = "builtin:maxtext"  # the name of the MaxText schema rcpc ships (rcpc/domain/schemas/maxtext.json)
