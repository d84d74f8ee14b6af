"""``rcpc lint``: report unused names, no-op overrides, ... (:meth:`rcpc.api.Workspace.lint`)."""

from __future__ import annotations

from rcpc.cli.options import common
from rcpc.completion import annotate

ORDER = 80


def arguments(sub) -> None:
    li = sub.add_parser("lint", parents=[common()], help="report unused names, no-op overrides, ...")
    li.add_argument("paths", nargs="*", metavar="PATH", help="recipes, .rcp files or directories; default: all")
    annotate(li)


def execute(args, run) -> int:
    found = run.workspace.lint(args.paths)
    run.diagnostics(found)
    problems = [d for d in found if d.severity in ("error", "warning")]
    run.report.status(f"rcpc: lint: {len(problems)} finding(s)" + (
        f", {len(found) - len(problems)} note(s)" if len(found) > len(problems) else ""))
    return 1 if problems else 0
