"""``rcpc explain``: where a flag's effective value comes from
(:meth:`rcpc.api.Workspace.explain`), or the whole config MaxText starts with
(``--effective``, :meth:`rcpc.api.Workspace.explain_effective`)."""

from __future__ import annotations

from rcpc.api import UsageError
from rcpc.cli.options import common, no_variant_with_values, variant_options
from rcpc.cli.run import json_text
from rcpc.completion import annotate
from rcpc.core.diagnostics import visible

ORDER = 90


def arguments(sub) -> None:
    e = sub.add_parser("explain", parents=[common()], help="where a flag's effective value comes from")
    e.add_argument("recipe", metavar="RECIPE")
    e.add_argument("flagset", metavar="FLAGSET", help="a top-level name bound to maxtext_flags, or a render that "
                   "carries one (trainer, trainer.yaml, launch.sh)")
    e.add_argument("key", metavar="KEY", nargs="?", help="the flag (not with --effective)")
    e.add_argument("--effective", action="store_true",
                   help="the whole config MaxText starts with: base.yml, the model config, the flags, M_ env")
    variant_options(e)
    e.add_argument("--format", choices=("text", "json"), default="text")
    annotate(e)


def execute(args, run) -> int:
    if args.effective == (args.key is not None):
        raise UsageError("explain needs a KEY, or --effective without one")
    no_variant_with_values(args)
    if args.effective:
        return _effective(args, run)
    report = run.workspace.explain(args.recipe, args.flagset, args.key, args.variant, args.sets, args.values,
                                   args.flags)
    if args.format == "json":
        print(json_text(report))
        return 0
    _say(f"{report['recipe']} {report['flag_set']} {report['key']} (variant {report['variant']})")
    _say(f"effective: {report['effective']}")
    for i, step in enumerate(report["chain"], 1):
        came = f"; value from {step['value_from']}" if "value_from" in step else ""
        _say(f"  {i}. {step['value']}  at {step['location']}  (layer {step['layer']}: {step['active']}{came})")
        if "received" in step:
            _say(f"     the container receives {step['received']}  (Kubernetes expands $(VAR) and $$ with its env)")
    for env in report["env"]:
        _say(f"env: {env['name']}={env['value']} at {env['location']}  (container '{env['container']}' of "
             f"{env['render']}; MaxText reads it instead of the default)")
    if report.get("schema") is not None:
        default = report["schema_default"]
        _say(f"schema default: {default if report['in_schema'] else '(not in schema)'}  ({report['schema']})")
    return 0


def _effective(args, run) -> int:
    """``rcpc explain RECIPE RENDER --effective``."""
    report = run.workspace.explain_effective(args.recipe, args.flagset, args.variant, args.sets, args.values,
                                             args.flags)
    if args.format == "json":
        print(json_text(report))
        return 0
    _say(f"{report['recipe']} {report['render']} (variant {report['variant']}): the config MaxText starts with "
         f"({report['schema']}{', model ' + report['model'] if report['model'] else ''})")
    width = max((len(r["key"]) for r in report["config"]), default=0)
    for r in report["config"]:
        _say(f"  {r['key']:<{width}}  {r['value']}  ({r['from']})")
    return 0


def _say(line: str) -> None:
    """Print one line of the text report, its values and names from the recipe (strings,
    paths) with what is not printable escaped (:func:`rcpc.core.diagnostics.visible`)."""
    print(visible(line))
