"""``rcpc build``: write every render of recipes to ``DIR/<recipe>/<variant>/<render>``
(:meth:`rcpc.api.Workspace.build`, :meth:`rcpc.api.Build.write`)."""

from __future__ import annotations

import os
from pathlib import Path

from rcpc.api import UsageError, output_bookkeeping
from rcpc.cli.options import common, jobs_option, no_variant_with_values, variant_options
from rcpc.completion import annotate
from rcpc.build.output import InterruptedAfterWrite
from rcpc.build.parallel import AUTO

ORDER = 10


def arguments(sub) -> None:
    b = sub.add_parser("build", parents=[common()],
                       help="write every render of recipes to DIR/<recipe>/<variant>/<render>")
    b.add_argument("recipes", nargs="*", metavar="RECIPE", help="recipe names (rl/x), .rcp paths or directories of them; default: all")
    variant_options(b, "only this variant (default: every declared variant)",
                    "set a declared param; the build is written as variant 'custom'")
    b.add_argument("-o", "--output", metavar="DIR", help="output directory (default: rcp.toml output_dir, else rcpc-out)")
    jobs_option(b, AUTO)
    annotate(b)


def replayable(args, run) -> bool:
    """False for a build into an output directory that does not exist: one that succeeds
    writes it, and a build that writes is not recorded (:func:`execute`), so the listings and
    stats replay takes before compiling are not (a first build after a clone: ~0.5 ms)."""
    return os.path.lexists(Path(args.output) if args.output else run.config.output_dir)


def execute(args, run) -> int:
    if args.output == "":
        raise UsageError("-o needs a directory")
    ws = run.config
    out_dir = Path(args.output) if args.output else ws.output_dir
    no_variant_with_values(args)
    build = run.workspace.build(args.recipes, variant=args.variant, sets=args.sets, values=args.values,
                                flags=args.flags, jobs=args.jobs, output=out_dir)
    run.diagnostics(build.diagnostics)
    try:
        written = build.write(out_dir, args.output or ws.display(out_dir))
    except InterruptedAfterWrite:  # the signal was held back until the new output was in place
        run.progress = "the new output was written in full"
        raise
    recorder = run.recorder
    if written or written.record or written.dropped:
        run.progress = "the new output was written in full"
        recorder.discard()  # replayed, its status line would say it wrote what it did not
    for _, _, _, deps in build.recipes:
        recorder.note_dependencies(deps)
    recorder.note_links(ws.links)
    variants = build.variants
    verified = build.compared.verified if build.compared is not None and not written else {}
    for recipe, variant, renders in variants:
        recorder.note_outputs(os.path.abspath(out_dir / recipe / variant), renders,
                              compared=verified.get((recipe, variant)))
    if not written:
        recorder.note_bookkeeping(os.path.abspath(out_dir), output_bookkeeping(out_dir))
    count = sum(len(renders) for _, _, renders in variants)
    run.report.status(f"rcpc: {count} render{'' if count == 1 else 's'} of {len(build.recipes)} recipe(s) in {out_dir} "
                      f"({written.describe(len(variants))})")
    return 0
