"""``rcpc validate``: check plain Kubernetes manifests with rcpc's Kubernetes, JobSet and TPU
rules (:meth:`rcpc.api.Workspace.validate`)."""

from __future__ import annotations

from rcpc.cli.options import common, strict

ORDER = 60


def arguments(sub) -> None:
    v = sub.add_parser("validate", parents=[common(), strict()],
                       help="check plain Kubernetes manifests (multi-document YAML) with rcpc's Kubernetes, "
                            "JobSet and TPU rules")
    v.add_argument("files", nargs="+", metavar="FILE.yaml")


def execute(args, run) -> int:
    documents, found = run.workspace.validate(args.files)
    run.diagnostics(found)
    errors = sum(1 for d in found if d.severity == "error")
    run.report.status(f"rcpc: validated {documents} document(s) in {len(args.files)} file(s): "
                      + (f"{errors} error(s)" if errors else "ok"))
    return 1 if errors else 0
