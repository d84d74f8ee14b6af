"""``rcpc fmt``: format recipes canonically, in place, or list (``--check``) or show
(``--diff``) what would change (:meth:`rcpc.api.Workspace.format`)."""

from __future__ import annotations

import difflib
import sys

from rcpc.cli.options import common, jobs_option
from rcpc.cli.run import stderr
from rcpc.completion import annotate
from rcpc.core.diagnostics import CompileError, visible
from rcpc.core.files import write_output
from rcpc.core.fmt import FormatterBug
from rcpc.build.parallel import AUTO

ORDER = 70


def arguments(sub) -> None:
    f = sub.add_parser("fmt", parents=[common()], help="format recipes canonically (in place)")
    f.add_argument("paths", nargs="*", metavar="PATH", help=".rcp files or directories; default: all")
    g = f.add_mutually_exclusive_group()
    g.add_argument("--check", action="store_true", help="write nothing; list files that are not formatted, exit 1")
    g.add_argument("--diff", action="store_true", help="write nothing; print the changes as a diff, exit 1 if any")
    jobs_option(f, AUTO)
    annotate(f)


def execute(args, run) -> int:
    workspace = run.workspace
    formatted, errors = workspace.format(args.paths, jobs=args.jobs)
    bugs = 0
    changed = []
    for real, out in formatted:
        shown = run.config.display(real)
        if isinstance(out, CompileError):
            errors.extend(out.diagnostics)
            try:
                workspace.compiler.source(real)  # for the quoted source line
            except CompileError:
                pass
            continue
        if isinstance(out, FormatterBug):  # never written: the file is left as it is
            stderr(visible(f"rcpc: error: {shown} is left unformatted: {out} (a bug in rcpc fmt)"))
            bugs += 1
            continue
        if out is None:
            continue
        changed.append(shown)
        if args.diff:
            text = workspace.compiler.source(real).text
            sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), out.splitlines(True),
                                                       f"a/{shown}", f"b/{shown}"))
        elif args.check:
            print(visible(shown))
        else:
            write_output(real, out.encode("utf-8"))  # atomic, keeping mode and owner
            run.progress = f"{len(changed)} file(s) were reformatted"
    if errors:
        raise CompileError(errors)
    if bugs:
        return 1
    verb = "would reformat" if args.check or args.diff else "reformatted"
    run.report.status(f"rcpc: {verb} {len(changed)} of {len(formatted)} file(s)")
    return 1 if changed and (args.check or args.diff) else 0
