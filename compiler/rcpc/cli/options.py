"""Options more than one command takes: the schema and diagnostics options, ``--strict-crd``,
``-j``, ``--values``/``--flag``, and the argument types they parse with."""

from __future__ import annotations

import argparse
import math

from rcpc.api import UsageError
from rcpc.cli.parsing import Parser


def common() -> argparse.ArgumentParser:
    """A parent parser (argparse's ``parents=``) of the options every workspace command takes:
    ``--maxtext-schema`` (``--maxtext-base``), ``--diagnostics``, ``--kube-schema``."""
    p = Parser(add_help=False)
    p.add_argument("--maxtext-schema", metavar="SCHEMA",
                   help="MaxText schema to check flag sets against: builtin:maxtext, a .json written by "
                   "`rcpc schema maxtext`, or a base.yml (overrides rcp.toml maxtext_schema)")
    p.add_argument("--maxtext-base", metavar="BASE_YML",
                   help="the older spelling of --maxtext-schema BASE_YML")
    p.add_argument("--diagnostics", choices=("text", "json", "sarif", "github"), default="text",
                   help="how errors and warnings are printed (json: one document on stderr; sarif: "
                   "one SARIF 2.1.0 log on stdout; github: GitHub Actions annotations on stdout)")
    p.add_argument("--kube-schema", action="append", metavar="CRD",
                   help="CRD or JSON schema (or builtin:jobset) to validate manifests against "
                        "(repeatable; overrides rcp.toml kube_schemas)")
    return p


def strict() -> argparse.ArgumentParser:
    """A parent parser of ``--strict-crd`` (``check``, ``validate``)."""
    p = Parser(add_help=False)
    p.add_argument("--strict-crd", action="store_true",
                   help="also report what the raw CRD rejects but the API server or the JobSet webhook "
                        "would fill in or drop (as offline validators such as kubeconform see it)")
    return p


def schema_options(args: argparse.Namespace) -> dict:
    """The ``--maxtext-schema`` (``--maxtext-base``), ``--kube-schema`` and ``--strict-crd``
    options, as :class:`rcpc.api.Workspace` takes them; a command without them (no
    :func:`common` parent) gets the workspace's own settings."""
    value = vars(args).get
    return {"maxtext_schema": value("maxtext_schema") or value("maxtext_base"), "kube_schemas": value("kube_schema"),
            "strict_crd": value("strict_crd", False)}


def jobs(text: str, auto: int) -> int:
    """The value of ``-j TEXT``: N, a number of processes (1 or more), or for ``auto`` the
    value ``auto`` (:data:`rcpc.build.parallel.AUTO`, which the commands that run workers pass)."""
    if text == "auto":
        return auto
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a number of processes (1 or more) or 'auto', got {text!r}")
    return n


def seconds(text: str) -> float:
    """A duration in seconds: a finite number above 0 (``--maxtext-timeout``)."""
    try:
        n = float(text)
    except ValueError:
        n = 0.0
    if not (math.isfinite(n) and n > 0):
        raise argparse.ArgumentTypeError(f"expected a number of seconds (more than 0), got {text!r}")
    return n


def jobs_option(p: argparse.ArgumentParser, auto: int) -> None:
    """Add ``-j``/``--jobs`` (:func:`jobs`; ``auto``: :data:`rcpc.build.parallel.AUTO`, passed by
    the commands that run workers, which import it) to the command parser ``p``."""
    p.add_argument("-j", "--jobs", type=lambda text: jobs(text, auto), default="auto", metavar="N",
                   help="work in N processes (default: auto, one per idle CPU when the work pays; 1: no workers)")


def variant_options(p: argparse.ArgumentParser, help_variant: str | None = None, help_set: str | None = None) -> None:
    """Add ``--variant V`` or ``--set NAME=VALUE`` (one of them), then ``--values`` and
    ``--flag`` (:func:`no_variant_with_values`), to the command parser ``p``."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--variant", metavar="V", help=help_variant)
    g.add_argument("--set", dest="sets", action="append", metavar="NAME=VALUE", help=help_set)
    p.add_argument("--values", action="append", metavar="FILE.toml",
                   help="param values from a TOML file of NAME = VALUE lines (repeatable: a later file wins, "
                        "--set wins over files); the build is variant 'custom' (docs/cli.md, Values files)")
    p.add_argument("--flag", dest="flags", action="append", metavar="RENDER.KEY=VALUE",
                   help="set one MaxText flag of the flag set RENDER carries, as its last layer (repeatable); "
                        "the build is variant 'custom', of --variant V checked against V's contract "
                        "(docs/cli.md, Flag overrides)")


def no_variant_with_values(args: argparse.Namespace) -> None:
    """``--values`` sets params, as ``--set`` does: not with ``--variant`` (a usage error)."""
    if args.values and args.variant:
        raise UsageError("--values sets params as --set does: not with --variant (use one, or copy the variant's "
                         "values into the file)")
