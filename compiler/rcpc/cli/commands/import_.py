"""``rcpc import manifest|shell FILE [-o RECIPE.rcp]``: a recipe from a manifest template or
a shell launch recipe (:func:`rcpc.api.import_recipe`), to stdout or ``-o`` (never over an
existing file without ``--force``), proven equal to the input (:func:`rcpc.api.check_import`
for the file written); exit 1 when it is not."""

from __future__ import annotations

import argparse
import sys

from rcpc.api import check_import, import_recipe
from rcpc.core.diagnostics import CompileError, Diagnostic, io_hint
from rcpc.core.files import write_output

ORDER = 110


def arguments(sub) -> None:
    im = sub.add_parser("import", help="a recipe from a manifest template or a shell launch recipe, proven "
                        "equal to it")
    ikinds = im.add_subparsers(dest="kind", required=True, metavar="KIND")
    imm = ikinds.add_parser("manifest", help="a manifest template with ${VAR} placeholders (envsubst)")
    imm.add_argument("file", metavar="FILE.yaml")
    imm.add_argument("--set", dest="sets", action="append", metavar="VAR=VALUE",
                     help="the default of the param a placeholder becomes (default: the name in lowercase)")
    imm.add_argument("--var", dest="variables", action="append", metavar="VAR",
                     help="a placeholder that becomes a param, as envsubst's SHELL-FORMAT names it (repeatable; "
                     "default: every ${VAR} but the variables a pod's shell reads at run time, e.g. TPU_WORKER_ID)")
    ims = ikinds.add_parser("shell", help="a shell launch recipe (export NAME=..., flag blobs, xpk workload create)")
    ims.add_argument("file", metavar="FILE.sh")
    for k in (imm, ims):
        k.add_argument("-o", "--output", metavar="RECIPE.rcp", help="write the recipe here (default: stdout)")
        k.add_argument("--force", action="store_true", help="replace RECIPE.rcp when it exists")
        k.add_argument("--diagnostics", choices=("text", "json"), default="text", help=argparse.SUPPRESS)
        for opt in ("--maxtext-schema", "--maxtext-base", "--kube-schema"):
            k.add_argument(opt, default=None, help=argparse.SUPPRESS)


def execute(args, run) -> int:
    out = args.output
    imported = import_recipe(run.workspace, args.kind, args.file, sets=getattr(args, "sets", None),
                             variables=getattr(args, "variables", None), output=out, force=args.force)
    run.diagnostics(imported.notes)
    if out is None:
        sys.stdout.write(imported.text)
        sys.stdout.flush()  # the import proved this very text equal to the input
    else:
        try:
            write_output(out, imported.text.encode("utf-8"))
        except OSError as exc:
            raise CompileError(Diagnostic("E1202", f"cannot write {out}: {exc.strerror or exc}", None,
                                          hint=io_hint(exc))) from None
        run.progress = f"{out} was written"
        check_import(run.workspace, imported, args.file, out)
    todo = sum(1 for d in imported.notes if d.severity == "warning" and d.code != "W1104")
    retyped = sum(1 for d in imported.notes if d.code == "W1104")
    reaching = sum(1 for d in imported.notes if d.code == "W1209")  # the proof did not try what they do
    run.report.status(f"rcpc: import {args.kind} {args.file}: "
                      + (f"equal for the values tried, {reaching} statement(s) not converted may change the launch "
                         "command (W1209)" if reaching else "equal")
                      + f" ({imported.how})"
                      + (f"; {todo} TODO(import) item(s) listed above" if todo else "")
                      + (f"; {retyped} key(s) kubectl retypes, listed above" if retyped else "")
                      + (f"; wrote {out}" if out else "")
                      + ("; rcp.toml names no maxtext_schema, so rcpc check does not check the MaxText keys: add "
                         'maxtext_schema = "builtin:maxtext"' if args.kind == "shell" and run.config.maxtext_schema is None
                         else ""))
    return 0
