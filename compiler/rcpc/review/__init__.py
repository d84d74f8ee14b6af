"""Review of recipe changes: ``rcpc diff`` reports (:mod:`rcpc.review.report`) and a
workspace as it was at a git revision (:mod:`rcpc.review.revision`)."""
