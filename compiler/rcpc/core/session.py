"""What one run of rcpc keeps between the files it reads: a :class:`Session`.

go-jsonnet hands its VM an importer and an import cache; rcpc hands a
:class:`~rcpc.domain.recipe.Compiler` a session. It owns every cache a run fills (nothing is
kept in module globals: ``tests/test_module_state.py`` fails when a module-level name is
rebound or mutated at run time), so two workspaces in one process (two editors' in the
language server, two tests) never share or clear each other's, and what a cache keeps lives
as long as the session. Who owns one: an :class:`rcpc.api.Workspace` (through its compiler),
the language server (one for its life, shared by the compilers it makes: its caches survive
edits), a worker process (one a process). Limits and options are not here: they are passed
to the call that applies them (:mod:`rcpc.core.limits` holds the defaults).

A session is used by one thread at a time, as its compiler is.
"""

from __future__ import annotations


class Session:
    """The caches of one run.

    * ``parsers``: idle :class:`~rcpc.core.syntax.parser.ReferenceParser` objects (lark's
      tables loaded, ~12 ms each), taken by a parse lark must read and given back after it
      (a parse started during another makes its own);
    * ``tables``: memo tables by name (:meth:`table`), each owned by the module that names it,
      which bounds it (a name is ``module:what``, e.g. ``rcpc.domain.kube.schema:made``). A
      table keyed by an object's ``id`` keeps the object in its entry, so the id is not
      reused while the entry lives, and dies with the session."""

    __slots__ = ("parsers", "tables")

    def __init__(self):
        self.parsers: list = []
        self.tables: dict[str, dict] = {}

    def table(self, name: str) -> dict:
        """The memo table ``name`` (made empty on first use)."""
        found = self.tables.get(name)
        if found is None:
            found = self.tables[name] = {}
        return found
