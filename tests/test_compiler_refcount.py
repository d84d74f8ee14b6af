"""A dropped :class:`~rcpc.domain.recipe.Compiler` is freed by reference counting alone: the
language server drops one on each library edit, and a compiler that is cyclic garbage (its
context held a bound method of it: 57,374 objects at 64 KB of recipes) waited for a full
collection of the cyclic GC."""

from __future__ import annotations

import gc
import weakref

import pytest

from rcpc.api import check_file
from rcpc.core.session import Session
from rcpc.domain.recipe import Compiler
from rcpc.domain.workspace import Workspace

from conftest import REPO


@pytest.fixture
def no_gc():
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.parametrize("path, schemas", [("recipes/tpu_recipes/gemma4_2b_8k_bf16_tpu7x_4x4x4.rcp", True),
                                           ("compiler/rcpc/stdlib/maxtext_tpu.rcp", False)])
def test_a_dropped_compiler_after_a_check_is_freed_by_reference_counting(no_gc, path, schemas):
    """A recipe (every variant, flags checked against the shipped MaxText schema, manifests
    against JobSet's) and a library, checked by a compiler with a session kept (as the
    language server keeps it), then the compiler dropped with the cyclic GC off."""
    session = Session()
    compiler = Compiler(Workspace.find(REPO), session)
    check_file(compiler, REPO / path)
    assert bool(compiler._schemas) == schemas  # the recipe's flags were checked against a schema
    ref = weakref.ref(compiler)
    del compiler
    assert ref() is None


def test_the_language_server_frees_the_compiler_it_drops_on_a_library_edit(no_gc):
    """The language server's session checks a recipe (its diagnostics), then a library's
    buffer changes: the compiler it drops is freed at once."""
    from rcpc.lsp.session import Session as LspSession

    session = LspSession(Workspace.find(REPO))
    recipe = REPO / "recipes" / "tpu_recipes" / "gemma4_2b_8k_bf16_tpu7x_4x4x4.rcp"
    library = REPO / "compiler" / "rcpc" / "stdlib" / "maxtext_tpu.rcp"
    session.diagnostics(recipe)
    ref = weakref.ref(session.compiler())
    session.update(library, library.read_text() + "\n")
    assert ref() is None
