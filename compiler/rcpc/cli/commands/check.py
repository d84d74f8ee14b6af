"""``rcpc check``: evaluate every recipe and variant, run contracts and lint; write nothing
(:meth:`rcpc.api.Workspace.check`)."""

from __future__ import annotations

from rcpc.cli.options import common, jobs_option, seconds, strict
from rcpc.completion import annotate
from rcpc.build.parallel import AUTO

ORDER = 50


def arguments(sub) -> None:
    c = sub.add_parser("check", parents=[common(), strict()],
                       help="evaluate every recipe and variant, run contracts; write nothing")
    c.add_argument("paths", nargs="*", metavar="PATH", help="recipes, .rcp files or directories; default: all")
    c.add_argument("--notes", action="store_true", help="also print notes (e.g. flags set to their MaxText default)")
    c.add_argument("--maxtext", metavar="PATH",
                   help="also run this MaxText checkout's own config loader on every flag set the recipes render "
                        "(overrides rcp.toml maxtext_oracle; docs/maxtext.md, Oracle mode)")
    c.add_argument("--maxtext-python", metavar="PYTHON",
                   help="the interpreter that runs it: a path or a command on PATH (default: rcp.toml "
                        "maxtext_python, else the one running rcpc)")
    c.add_argument("--maxtext-timeout", metavar="SECONDS", type=seconds,
                   help="the seconds one run of MaxText's loader may take (default: 120, plus 10 for each flag set)")
    jobs_option(c, AUTO)
    annotate(c)


def execute(args, run) -> int:
    maxtext = args.maxtext or run.config.maxtext_oracle
    result = run.workspace.check(args.paths or [], jobs=args.jobs, maxtext=args.maxtext,
                                 maxtext_python=args.maxtext_python, maxtext_timeout=args.maxtext_timeout)
    recorder = run.recorder
    if maxtext is not None:  # MaxText's files are no dependency a replay could check
        recorder.discard()
    for deps in result.dependencies:
        recorder.note_dependencies(deps)
    recorder.note_links(run.config.links)
    run.diagnostics(result.failures)
    notes = [d for d in result.findings if d.severity == "note"]
    run.diagnostics([d for d in result.findings if d.severity != "note" or args.notes])
    warnings = sum(1 for d in result.findings if d.severity == "warning")
    status = ("ok" if not result.errors else f"{result.errors} error(s)") + (f", {warnings} warning(s)" if warnings else "")
    if notes and not args.notes:
        status += f" ({len(notes)} note(s): --notes shows them)"
    failed = f" ({result.failed} failed)" if result.failed else ""  # their variants are not counted
    run.report.status(f"rcpc: checked {result.recipes} recipe(s){failed}, {result.variants} variant(s), "
                      f"{result.libraries} librar{'y' if result.libraries == 1 else 'ies'}: {status}")
    return 1 if result.errors else 0
