"""``rcpc lsp``: serve the Language Server Protocol on stdin/stdout (:mod:`rcpc.lsp.server`;
needs the ``lsp`` extra, pygls)."""

from __future__ import annotations

from rcpc.api import UsageError

ORDER = 120
WORKSPACE = False  # the language server keeps its own workspaces and caches


def arguments(sub) -> None:
    sub.add_parser("lsp", help="serve the Language Server Protocol on stdin/stdout (needs rcpc[lsp])")


def execute(args, run) -> int:
    try:  # an optional dependency: its absence is a usage error, not a traceback
        from rcpc.lsp.server import serve
    except ImportError as exc:
        raise UsageError(f"rcpc lsp needs the lsp extra: pip install 'rcpc[lsp]' ({exc})") from None
    return serve()
