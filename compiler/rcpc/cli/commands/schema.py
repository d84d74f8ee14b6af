"""``rcpc schema maxtext PATH`` and ``rcpc schema jobset CRD.yaml``: a schema rcpc ships,
derived from its source (:func:`rcpc.api.derive_schema`), to stdout or written atomically
to ``-o FILE``."""

from __future__ import annotations

import argparse
import sys

from rcpc.api import derive_schema
from rcpc.core.diagnostics import CompileError, Diagnostic, io_hint
from rcpc.core.files import write_output

ORDER = 100
WORKSPACE = False


def arguments(sub) -> None:
    s = sub.add_parser("schema", help="derive a schema rcpc ships from its source (builtin:maxtext, builtin:jobset)")
    kinds = s.add_subparsers(dest="kind", required=True, metavar="KIND")
    m = kinds.add_parser("maxtext", help="the MaxText schema of a MaxText checkout (types.py, base.yml, models/)")
    m.add_argument("path", metavar="PATH", help="a MaxText checkout, or a directory with base.yml, types.py, models/")
    m.add_argument("--commit", help="the MaxText commit to record (default: the checkout's git HEAD)")
    sj = kinds.add_parser("jobset", help="the JobSet schema (builtin:jobset) from the JobSet CRD")
    sj.add_argument("path", metavar="CRD.yaml", help="jobset.x-k8s.io_jobsets.yaml of a JobSet checkout")
    sj.add_argument("--commit", default="unknown", help="the JobSet commit the CRD is from (provenance)")
    for k in (m, sj):
        k.add_argument("-o", "--output", metavar="FILE", help="write the schema here (default: stdout)")
        k.add_argument("--diagnostics", choices=("text", "json"), default="text", help=argparse.SUPPRESS)


def execute(args, run) -> int:
    text = derive_schema(args.kind, args.path, args.commit)
    if not args.output:
        sys.stdout.write(text)
        return 0
    try:
        write_output(args.output, text.encode("utf-8"))
    except BrokenPipeError:  # -o /dev/stdout, its reader gone: as for stdout (the dispatch)
        raise
    except OSError as exc:
        raise CompileError(Diagnostic("E0950", f"cannot write {args.output}: {exc.strerror or exc}", None,
                                      hint=io_hint(exc))) from None
    run.report.status(f"rcpc: wrote the {args.kind} schema of {args.path} to {args.output}")
    return 0
