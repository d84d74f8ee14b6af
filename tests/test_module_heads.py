"""Module heads are honest outside the start-up path (issue 40): a module of the importer, the
review, the LSP and the tools around them says at its head what it imports. An import inside a
function stays only where it must, each listed in :data:`LAZY` with its reason: what would
otherwise put a module on a path users time (``rcpc build``/``check``, the edit loop,
``rcpc --help``, pytest's plugin load), or what runs before or outside rcpc's own process.

The files are those this record covers (:data:`FILES`); the build path's own files are
covered by the start-up table of the CLI's dispatch; review/golden.py (the goldens' path, which
pytest's plugin loads) is not yet in this record."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "compiler" / "rcpc"

FILES = sorted({*PACKAGE.glob("importer/*.py"), *(p for p in PACKAGE.glob("review/*.py") if p.name != "golden.py"), *PACKAGE.glob("lsp/*.py"),
                *(PACKAGE / f for f in ("oracle_driver.py", "grammars.py", "completion.py", "findings.py",
                                        "testhook.py", "interrupts.py", "__main__.py", "__init__.py",
                                        "domain/explain.py", "domain/lint.py", "domain/kube/codegen.py",
                                        "domain/kube/crd.py", "domain/maxtext/schemagen.py"))})

# (file relative to the package, module imported inside a function) → why it is not at the head
LAZY = {
    ("__init__.py", "rcpc.api"): "PEP 562: `import rcpc` (every command's first import) does not load the library API",
    ("__init__.py", "rcpc.core.diagnostics.CompileError"): "PEP 562, as rcpc.api: rcpc.CompileError on first use",
    ("__main__.py", "rcpc.build.replay"): "the start-up dispatch: imported after interrupts() is installed, so "
                                           "Ctrl-C during the import exits 130 quietly",
    ("__main__.py", "gc"): "the start-up dispatch: a replayed command never tunes the collector",
    ("__main__.py", "rcpc.cli.main"): "the start-up dispatch: a replayed build/check never imports the CLI",
    ("interrupts.py", "_signal"): "the C module, on the first line of every command: `signal` imports enum",
    ("interrupts.py", "signal"): "the fallback where _signal is missing",
    ("testhook.py", "signal"): "testhook is on the build and check path (the store's and pool's test points), "
                               "signal is not on check's: only a test's kill needs it",
    ("completion.py", "shtab"): "only `rcpc completion` writes a script; cli imports completion for every command",
    ("findings.py", "rcpc.catalog.CATALOG"): "only SARIF output names the codes' titles; findings is on every command's path",
    ("review/report.py", "tempfile"): "`rcpc --help` imports review.report (cli's diff command); only diff --rev "
                                      "checks a revision out",
    ("review/report.py", "rcpc.review.revision"): "as tempfile: only `rcpc diff --rev` reads git",
    ("review/report.py", "rcpc.domain.recipe.Compiler"): "as tempfile: `rcpc --help` does not load the compiler",
    ("domain/maxtext/schemagen.py", "subprocess"): "schemagen is on the build path (its YAML loader, refusals); "
                                                   "only `rcpc schema` asks git for MaxText's commit",
    ("domain/maxtext/schemagen.py", "yaml"): "as subprocess: PyYAML is not imported by a build; only a MaxText "
                                             "YAML config read (rcpc schema, the oracle's tests) needs it",
    ("oracle_driver.py", "maxtext.configs.pyconfig"): "run in the user's interpreter: MaxText is imported after stdout is "
                                             "moved to stderr and inside the try that reports a failed import",
    ("oracle_driver.py", "maxtext.utils.elastic_utils"): "as maxtext.configs.pyconfig",
    ("oracle_driver.py", "maxtext.utils.max_utils"): "as maxtext.configs.pyconfig",
    ("oracle_driver.py", "maxtext.utils.maxtext_utils.create_device_mesh"): "as maxtext.configs.pyconfig: only when a case makes a mesh",
    ("oracle_driver.py", "jax"): "as maxtext.configs.pyconfig: only when a case makes a mesh",
}


def function_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every ``import`` / ``from ... import`` inside a function, a lambda or
    a class body of the module at ``path`` (``import a.b`` is ``a.b``, ``from a import b``
    is ``a.b``, ``from . import x`` is ``.x``)."""
    found = []

    def visit(node, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = inside or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
            if nested and isinstance(child, ast.Import):
                found.extend((child.lineno, a.name) for a in child.names)
            elif nested and isinstance(child, ast.ImportFrom):
                base = "." * child.level + (child.module or "")
                found.extend((child.lineno, f"{base}.{a.name}" if base != "." else f".{a.name}") for a in child.names)
            visit(child, nested)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_a_function_imports_only_what_is_listed(path):
    rel = path.relative_to(PACKAGE).as_posix()
    stray = [f"{rel}:{line}: {module}" for line, module in function_imports(path) if (rel, module) not in LAZY]
    assert not stray, "import at the module's head, or list it in LAZY with its reason: " + "; ".join(stray)


def test_every_listed_import_still_exists():
    """An entry the code no longer has is taken out (else it would excuse a later import)."""
    present = {(p.relative_to(PACKAGE).as_posix(), m) for p in FILES for _, m in function_imports(p)}
    assert sorted(set(LAZY) - present) == []
    assert all(PACKAGE / rel in FILES for rel, _ in LAZY)


def test_the_scan_sees_imports_at_any_depth(tmp_path):
    """The canary: imports in a function, a nested function, a method and a lambda's default
    are found; the head's and an ``if`` at module level's are not."""
    p = tmp_path / "m.py"
    p.write_text("import os\nif os:\n    import sys\n"
                 "def f():\n    import json\n    def g():\n        from rcpc.core import values\n"
                 "class C:\n    def m(self):\n        from . import x\n")
    assert function_imports(p) == [(5, "json"), (7, "rcpc.core.values"), (10, ".x")]
