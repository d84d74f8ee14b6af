"""The package's layers (docs/architecture.md), read from its import graph with Python's ``ast``:
every ``import`` and ``from ... import`` of a module, at any depth (a function-level import is
an edge too).

* the language core (``rcpc.core``) imports nothing outside it;
* the recipe domain (``rcpc.domain``) imports the core and itself, never the tool around them
  (CLI, caches, output, API);
* the graph has no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "compiler" / "rcpc"


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    """{dotted module name: file} of every module of the package under ``root``."""
    out = {}
    for p in sorted(root.rglob("*.py")):
        parts = p.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def imports(path: Path, known: dict) -> set[str]:
    """The package's modules that the module at ``path`` imports (``from rcpc.x import y``
    counts ``rcpc.x``, and ``rcpc.x.y`` when that is a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        found.update(n for n in names if n in known)
    return found


def graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """{module: modules it imports}, a package importing itself (``from rcpc import
    __version__``, ``rcpc/__init__.py``) not counted."""
    known = modules(root)
    package = root.name
    return {m: {t for t in imports(p, known) if t != m and t != package} for m, p in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def layer(module: str) -> str:
    for name in ("core", "domain"):
        if module == f"rcpc.{name}" or module.startswith(f"rcpc.{name}."):
            return name
    return "tool"


ALLOWED = {"core": {"core"}, "domain": {"core", "domain"}, "tool": {"core", "domain", "tool"}}

GRAPH = graph()


def test_the_graph_is_read():
    """The reader sees the package: both layers, and edges known to exist."""
    assert {"rcpc.core.evaluate", "rcpc.domain.recipe", "rcpc.cli"} <= GRAPH.keys()
    assert "rcpc.core.builtins" in GRAPH["rcpc.core.evaluate"]
    assert "rcpc.core.evaluate" in GRAPH["rcpc.domain.recipe"]


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_a_module_imports_only_its_layer_and_those_below(module):
    wrong = sorted(t for t in GRAPH[module] if layer(t) not in ALLOWED[layer(module)])
    assert not wrong, f"{module} ({layer(module)}) imports {wrong}: see docs/architecture.md"


def test_no_import_cycle():
    assert cycles(GRAPH) == []


def test_the_checks_catch_what_they_look_for(tmp_path):
    """A core module importing the domain, and a cycle, are found (a test that cannot fail
    proves nothing)."""
    root = tmp_path / "rcpc"
    for rel, text in {"__init__.py": "", "core/__init__.py": "", "domain/__init__.py": "",
                      "core/a.py": "def f():\n    from rcpc.domain import b\n",
                      "domain/b.py": "from rcpc.domain.c import x\n",
                      "domain/c.py": "import rcpc.domain.b\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    edges = graph(root)
    assert "rcpc.domain.b" in edges["rcpc.core.a"] and layer("rcpc.domain.b") not in ALLOWED["core"]
    assert cycles(edges) == [["rcpc.domain.b", "rcpc.domain.c"]]
