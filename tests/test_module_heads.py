"""Module heads are honest (issue 40): a module imports what it uses at its head; an import
inside a function (deferred, "lazy") is for the start-up path alone and is named, with its
reason, in ONE place: :data:`rcpc.cli.lazy.LAZY`, the CLI dispatch's table.

Read with Python's ``ast`` from every module of the package: every ``import`` and ``from ...
import`` inside a function or lambda (at any depth) must be listed there as (importing
module, imported module), and every entry there must still name such an import (a stale
entry is an error too). A canary shows the reader finds each kind."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rcpc.cli.lazy import LAZY

PACKAGE = Path(__file__).resolve().parent.parent / "compiler" / "rcpc"


def module_name(path: Path, root: Path = PACKAGE) -> str:
    """The dotted name of the module at ``path`` under the package ``root``."""
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def deferred(source: str, module: str, is_package: bool, known) -> set[tuple[str, str]]:
    """(``module``, imported module) of each import inside a function or lambda of
    ``source``. ``from a import b`` names ``a.b`` when that is a module (``known(name)``),
    else ``a``; a relative import is resolved against ``module``."""
    found = set()

    def imported(node) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        base = node.module or ""
        if node.level:
            parts = module.split(".") if is_package else module.split(".")[:-1]
            parts = parts[:len(parts) - (node.level - 1)]
            base = ".".join(parts + ([node.module] if node.module else []))
        return [f"{base}.{a.name}" if known(f"{base}.{a.name}") else base for a in node.names]

    def walk(node, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if inside and isinstance(child, (ast.Import, ast.ImportFrom)):
                found.update((module, name) for name in imported(child))
            walk(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    walk(ast.parse(source), False)
    return found


def package_deferred(root: Path = PACKAGE) -> set[tuple[str, str]]:
    """Every in-function import of the package under ``root``, as :func:`deferred`."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    found = set()
    for name, path in files.items():
        found |= deferred(path.read_text(encoding="utf-8"), name, path.name == "__init__.py", files.__contains__)
    return found


@pytest.fixture(scope="module")
def found() -> set[tuple[str, str]]:
    """:func:`package_deferred` of the package, read once for the module's tests (when they run:
    not at collection, which every pytest-xdist worker does, ~1.4 s of parsing)."""
    return package_deferred()


def test_every_in_function_import_is_named_in_the_dispatch_table(found):
    unnamed = sorted(pair for pair in found if pair not in LAZY)
    assert not unnamed, ("in-function imports not named in rcpc.cli.lazy.LAZY (move them to the module's head, "
                         f"or name them there with why the start-up path needs them deferred): {unnamed}")


def test_every_entry_names_an_in_function_import(found):
    stale = sorted(pair for pair in LAZY if pair not in found)
    assert not stale, f"rcpc.cli.lazy.LAZY names imports that are no longer deferred: {stale}"


def test_each_entry_says_why():
    for pair, why in LAZY.items():
        assert isinstance(why, str) and len(why.split()) >= 4, (pair, why)


@pytest.mark.parametrize("source,expected", [
    ("def f():\n    import yaml\n", {("m.a", "yaml")}),
    ("def f():\n    from m import b\n", {("m.a", "m.b")}),
    ("def f():\n    from m.b import c\n", {("m.a", "m.b")}),
    ("class C:\n    def f(self):\n        if x:\n            import json\n", {("m.a", "json")}),
    ("f = lambda: __import__('x')\ng = lambda: [__import__] or None\n", set()),
    ("def f():\n    from . import b\n", {("m.a", "m.b")}),
    ("import os\nif os:\n    import json\ntry:\n    import yaml\nexcept ImportError:\n    pass\n", set()),
])
def test_the_reader_finds_what_it_looks_for(source, expected):
    """The canary: a function's import is found at any depth, a head's (even under ``if`` or
    ``try``) is not, ``from pkg import module`` names the module."""
    assert deferred(source, "m.a", False, {"m.b"}.__contains__) == expected
