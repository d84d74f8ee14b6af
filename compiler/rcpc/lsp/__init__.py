"""``rcpc lsp``: a Language Server Protocol server for ``.rcp`` files (pygls / lsprotocol).

* :mod:`rcpc.lsp.session` — the editor's view of one workspace: open buffers laid over the
  files on disk, one warm :class:`~rcpc.domain.recipe.Compiler`, diagnostics of a buffer;
* :mod:`rcpc.lsp.query` — what a position means: the name, load or dict key under the cursor,
  its definition, references, hover text, and the completion context of unparsed text;
* :mod:`rcpc.lsp.server` — the protocol: handlers that turn those answers into LSP types.

The server needs the ``lsp`` extra (``pip install 'rcpc[lsp]'``).
"""
