"""``rcpc test``: compare every render with its golden file, run contracts, find obsolete goldens
(:meth:`rcpc.api.Workspace.test`); ``--snapshot-update`` writes and deletes goldens as ``pytest
rcp.toml --snapshot-update`` does."""

from __future__ import annotations

from rcpc.cli.options import common
from rcpc.completion import annotate
from rcpc.core.diagnostics import CompileError, Diagnostic

ORDER = 55


def arguments(sub) -> None:
    t = sub.add_parser("test", parents=[common()],
                       help="compare every render with its golden file and run contracts (pytest rcp.toml "
                            "without pytest)")
    t.add_argument("recipes", nargs="*", metavar="PATH",
                   help="recipe names (rl/x), .rcp paths or directories of recipes; default: all")
    t.add_argument("--snapshot-update", action="store_true",
                   help="write changed and missing goldens, delete obsolete ones (as pytest rcp.toml "
                        "--snapshot-update)")
    annotate(t)


def execute(args, run) -> int:
    from rcpc.review.golden import diagnostics, golden_summary

    ws = run.config
    try:
        tested = run.workspace.test(args.recipes, update=args.snapshot_update)
    except OSError as exc:
        run.progress = "some goldens may have been written"
        raise CompileError(Diagnostic("E1304", f"cannot write goldens under {ws.display(ws.golden_dir)}: "
                                      f"{exc.strerror or exc}", None,
                                      hint="the goldens written before this one stay written; fix the "
                                           "directory and run `rcpc test --snapshot-update` again")) from None
    run.diagnostics(diagnostics(ws, tested))
    lines = []
    if tested.updated:
        for _, path, old, _ in tested.changed:
            lines.append(f"{'written' if old is None else 'rewritten':<9} {ws.display(path)}")
        lines += [f"{'deleted':<9} {ws.display(p)}" for p in tested.obsolete]
    elif tested.changed:
        lines.append(f"rcpc: what changed in {len(tested.changed)} golden render(s):")
        lines += golden_summary([(name, old, new) for name, _, old, new in tested.changed],
                                [ws.config or ws.root / "rcp.toml"])
    failed = len(tested.failures) + (0 if tested.updated else len(tested.changed) + len(tested.obsolete))
    status = "ok" if not failed else f"{failed} failure(s)"
    if tested.updated and (tested.changed or tested.obsolete):
        status += f"; {len(tested.changed)} golden(s) written, {len(tested.obsolete)} deleted"
    lines.append(f"rcpc: tested {tested.renders} render(s) and {tested.contracts} contract(s): {status}")
    run.report.status("\n".join(lines))
    return 1 if tested.failed else 0
