"""``rcpc render``: print renders of one recipe to stdout (:meth:`rcpc.api.Workspace.render`)."""

from __future__ import annotations

import sys

from rcpc.api import UsageError
from rcpc.cli.options import common, no_variant_with_values, variant_options
from rcpc.completion import annotate
from rcpc.core.diagnostics import did_you_mean

ORDER = 20


def arguments(sub) -> None:
    r = sub.add_parser("render", parents=[common()], help="print renders of one recipe to stdout")
    r.add_argument("recipe", metavar="RECIPE")
    r.add_argument("render", nargs="?", metavar="RENDER", help="one render (trainer.yaml or trainer); default: all")
    variant_options(r)
    annotate(r)


def execute(args, run) -> int:
    no_variant_with_values(args)
    rendered = run.workspace.render(args.recipe, args.variant, args.sets, args.values, args.flags)
    renders = rendered.renders
    if args.render:
        renders = [r for r in renders if r.name == args.render or r.name.rsplit(".", 1)[0] == args.render]
        if not renders:
            names = [r.name for r in rendered.renders]
            near = did_you_mean(args.render, [*dict.fromkeys(n.rsplit(".", 1)[0] for n in names), *names])
            raise UsageError(f"{rendered.recipe} has no render {args.render!r}"
                             + (f" ({near})" if near else "") + "; renders: " + ", ".join(names))
    out = sys.stdout
    if len(renders) == 1:
        out.write(renders[0].text)
    else:
        for r in renders:
            out.write(f"---\n# Source: {rendered.recipe}/{rendered.variant}/{r.name}\n{r.text}")
    return 0
