"""The package's layers (docs/architecture.md), read from its import graph with Python's ``ast``:
every ``import`` and ``from ... import`` of a module, at any depth (a function-level import is
an edge too).

* the language core (``rcpc.core``) imports nothing outside it;
* the recipe domain (``rcpc.domain``) imports the core and itself, never the tool around them
  (CLI, build, review, API);
* inside the domain, the Kubernetes and MaxText sub-domains (``rcpc.domain.kube``,
  ``rcpc.domain.maxtext``) import the core, themselves and the seam (:data:`SEAM`), never each
  other nor the recipe model beside them; the seam imports the core and itself (an edge that
  breaks a rule is declared in :data:`DECLARED`, with its reason);
* the graph has no cycle.
"""

from __future__ import annotations

import ast
import functools
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


SUBDOMAINS = ("kube", "maxtext")  # rcpc.domain.kube, rcpc.domain.maxtext

# The seam: the modules of the recipe domain that both sub-domains may import, and what each
# gives them (docs/architecture.md).
SEAM = {
    "rcpc.domain.values": "the domain's values: FlagSet, FlagLayer, FlagEntry (maxtext), TpuSlice",
    "rcpc.domain.tpu": "TPU slice facts: GKE's node labels, accelerator names, topologies (kube.rules)",
    "rcpc.domain.workspace": "builtin_schema, the path of a schema rcpc ships (kube.schema, kube.codegen)",
    "rcpc.domain.stdlib": "where the standard library's .rcp files are (workspace)",
}

# The edges that break a rule, each with its reason.
DECLARED = {
    ("rcpc.domain.workspace", "rcpc.domain.kube.jobset"):
        "rcp.toml's jobset_feature_gates are checked against JobSet's FEATURE_GATES (a function-level import)",
}


def layer(module: str) -> str:
    """``core``, ``kube``, ``maxtext``, ``seam``, ``domain`` (the recipe model) or ``tool``."""
    if module == "rcpc.core" or module.startswith("rcpc.core."):
        return "core"
    for name in SUBDOMAINS:
        if module == f"rcpc.domain.{name}" or module.startswith(f"rcpc.domain.{name}."):
            return name
    if module in SEAM:
        return "seam"
    if module == "rcpc.domain" or module.startswith("rcpc.domain."):
        return "domain"
    return "tool"


ALLOWED = {"core": {"core"}, "seam": {"core", "seam"},
           "kube": {"core", "seam", "kube"}, "maxtext": {"core", "seam", "maxtext"},
           "domain": {"core", "seam", "kube", "maxtext", "domain"},
           "tool": {"core", "seam", "kube", "maxtext", "domain", "tool"}}


def wrong_imports(module: str, edges: dict[str, set[str]]) -> list[str]:
    """The modules ``module`` imports against :data:`ALLOWED`, not counting a package above it
    (``from rcpc.domain import values`` names the package ``rcpc.domain`` too) nor a
    :data:`DECLARED` edge."""
    return sorted(t for t in edges[module]
                  if layer(t) not in ALLOWED[layer(module)] and not module.startswith(t + ".")
                  and (module, t) not in DECLARED)

@functools.cache
def package_graph() -> dict[str, set[str]]:
    """:func:`graph` of the package, read on first use, not at import: every pytest-xdist
    worker imports this module to collect it (its tests are parametrized by :func:`modules`,
    the same names)."""
    return graph()


def test_the_graph_is_read():
    """The reader sees the package: both layers, and edges known to exist."""
    assert {"rcpc.core.evaluate", "rcpc.domain.recipe", "rcpc.cli"} <= package_graph().keys()
    assert "rcpc.core.builtins" in package_graph()["rcpc.core.evaluate"]
    assert "rcpc.core.evaluate" in package_graph()["rcpc.domain.recipe"]
    assert {layer(m) for m in package_graph()} == set(ALLOWED)


@pytest.mark.parametrize("module", sorted(modules()))
def test_a_module_imports_only_its_layer_and_those_below(module):
    wrong = wrong_imports(module, package_graph())
    assert not wrong, f"{module} ({layer(module)}) imports {wrong}: see docs/architecture.md"


def test_the_seam_and_the_declared_edges_exist():
    """A seam module that is gone, or a declared edge the code no longer has, is taken out of
    the map (else it would excuse a later import)."""
    assert set(SEAM) <= package_graph().keys()
    assert [e for e in DECLARED if e[1] not in package_graph().get(e[0], ())] == []


def test_no_import_cycle():
    assert cycles(package_graph()) == []


def test_the_checks_catch_what_they_look_for(tmp_path):
    """A core module importing the domain, a sub-domain importing the other or the recipe
    model, the seam importing a sub-domain, and a cycle, are found; a package above the module
    is not (a test that cannot fail proves nothing)."""
    root = tmp_path / "rcpc"
    for rel, text in {"__init__.py": "", "core/__init__.py": "", "domain/__init__.py": "",
                      "domain/kube/__init__.py": "", "domain/maxtext/__init__.py": "",
                      "core/a.py": "def f():\n    from rcpc.domain import b\n",
                      "domain/b.py": "from rcpc.domain.c import x\n",
                      "domain/c.py": "import rcpc.domain.b\n",
                      "domain/values.py": "", "domain/tpu.py": "from rcpc.domain.kube import rules\n",
                      "domain/kube/rules.py": "from rcpc.domain import values, b\nfrom rcpc.domain.maxtext import flagset\n",
                      "domain/maxtext/flagset.py": "from rcpc.domain import values\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    edges = graph(root)
    assert wrong_imports("rcpc.core.a", edges) == ["rcpc.domain", "rcpc.domain.b"]
    assert wrong_imports("rcpc.domain.kube.rules", edges) == ["rcpc.domain.b", "rcpc.domain.maxtext",
                                                            "rcpc.domain.maxtext.flagset"]
    assert wrong_imports("rcpc.domain.tpu", edges) == ["rcpc.domain.kube", "rcpc.domain.kube.rules"]
    assert wrong_imports("rcpc.domain.maxtext.flagset", edges) == []
    assert cycles(edges) == [["rcpc.domain.b", "rcpc.domain.c"]]
