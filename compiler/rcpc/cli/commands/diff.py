"""``rcpc diff``: compare the renders of two variants (:meth:`rcpc.api.Workspace.diff`), or
of a git revision and the work tree (:func:`rcpc.api.diff_revision`), as text, a stat,
JSON or markdown (:mod:`rcpc.review.report`)."""

from __future__ import annotations

import sys

from rcpc.review import report as review
from rcpc.api import UsageError, diff_revision
from rcpc.cli.options import common, schema_options
from rcpc.cli.run import json_text
from rcpc.completion import annotate

ORDER = 40


def arguments(sub) -> None:
    d = sub.add_parser("diff", parents=[common()], help="compare the renders of two variants, or of a git revision "
                       "and the work tree")
    d.add_argument("recipes", nargs="*", metavar="RECIPE",
                   help="with --variant: the one recipe; with --rev: recipes to compare (default: all)")
    d.add_argument("--variant", metavar="A", help="the variant to compare (with --rev: only this variant)")
    d.add_argument("--against", metavar="B", help="default: the variant's own 'against', else 'default'")
    d.add_argument("--rev", metavar="REF", help="compare the renders at git revision REF with the work tree's")
    d.add_argument("--stat", action="store_true", help="one line per render that is not identical")
    d.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    annotate(d)


def execute(args, run) -> int:
    if args.rev is not None:
        return _revision(args, run)
    if len(args.recipes) != 1 or args.variant is None:
        raise UsageError("diff needs one RECIPE and --variant A (or --rev REF to compare with a git revision)")
    recipe, against, diffs = run.workspace.diff(args.recipes[0], args.variant, args.against)
    title = f"{recipe}: variant {args.variant} against {against}"
    color = review.stdout_color()
    if args.format == "json":
        doc = {"recipe": recipe, "variant": args.variant, "against": against,
               "renders": [review.to_json(d) for d in diffs]}
        print(json_text(doc))
    elif args.format == "markdown":
        sys.stdout.write(review.report_markdown(f"rcpc diff `{recipe}`: `{args.variant}` against `{against}`",
                                                f"Renders of variant `{args.variant}` compared with `{against}`.",
                                                diffs))
    elif args.stat:
        sys.stdout.write(review.report_stat([title], diffs, color))
    else:
        sys.stdout.write(review.report_variants(title, diffs, color))
    return 0


def _revision(args, run) -> int:
    """``rcpc diff --rev REF [RECIPE...]``."""
    if args.against is not None:
        raise UsageError("--against compares variants; --rev compares every variant with itself at REF")
    result = diff_revision(run.workspace, args.rev, args.recipes, args.variant, **schema_options(args))
    if args.format == "json":
        print(json_text(result.to_json()))
    elif args.format == "markdown":
        sys.stdout.write(result.markdown())
    elif args.stat:
        sys.stdout.write(review.report_stat(result.header(), result.diffs, review.stdout_color()))
    else:
        sys.stdout.write(review.report_text(result.header(), result.diffs, review.stdout_color()))
    for diags, sources in result.errors:
        run.report.add(diags, sources)
    return 1 if result.errors else 0
