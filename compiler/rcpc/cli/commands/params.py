"""``rcpc params``: list the params of a recipe (:meth:`rcpc.api.Workspace.params`), as a
table or as JSON."""

from __future__ import annotations

import json

from rcpc.cli.options import common
from rcpc.cli.run import json_text
from rcpc.completion import annotate
from rcpc.core.emit.json import to_json as value_json
from rcpc.core.diagnostics import visible
from rcpc.core.values import text_of

ORDER = 30


def arguments(sub) -> None:
    pa = sub.add_parser("params", parents=[common()], help="list the params of a recipe")
    pa.add_argument("recipe", metavar="RECIPE")
    pa.add_argument("--format", choices=("text", "json"), default="text")
    annotate(pa)


CELL = 40  # characters of a type or default the table shows (--format json gives them whole)


def _cell(text: str) -> str:
    """``text`` (shown by :func:`~rcpc.core.diagnostics.visible`: one line) for the table: at most
    :data:`CELL` characters, cut with ``...`` (a 500-character default, a command prefix, padded
    every row to its width)."""
    return text if len(text) <= CELL else text[:CELL - 3] + "..."


def execute(args, run) -> int:
    workspace = run.workspace
    if args.format == "json":
        doc = [{"name": p.name, "type": p.type, "required": p.default is None,
                "default": None if p.default is None else json.loads(value_json(p.default)),
                "choices": [json.loads(value_json(c)) for c in p.choices] if p.choices else None,
                "doc": p.doc} for p in workspace.params(args.recipe)]
        (path,) = workspace.recipe_paths([args.recipe])
        name = workspace.config.recipe_name(path)
        print(json_text({"recipe": name, "params": doc}))
        return 0
    rows = [("NAME", "TYPE", "DEFAULT", "DOC")]
    for p in workspace.params(args.recipe):
        default = "(required)" if p.default is None else text_of(p.default)
        ptype = p.type + (" {" + ",".join(text_of(c) for c in p.choices) + "}" if p.choices else "")
        rows.append((visible(p.name), _cell(visible(ptype)), _cell(visible(default)), visible(p.doc or "")))  # a doc's line ends too
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[3] if r[3] else
              "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return 0
