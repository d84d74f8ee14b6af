"""The CLI keeps no run's state in module globals (issue 40): what one run needs (its report,
replay recorder, progress, workspace) is a :class:`rcpc.cli.run.Run` made by ``main`` and
passed down. No module of ``rcpc.cli`` rebinds or mutates a module-level name after import:
read from the source (every function of every module), and seen at run time (each module's
namespace is the same after ``main`` ran commands as before)."""

from __future__ import annotations

import ast
import importlib
import os
import sys
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parent.parent / "compiler" / "rcpc" / "cli"
REPO = CLI.parents[2]
MUTATORS = {"append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "setdefault", "add",
            "discard", "sort", "reverse", "__setitem__", "__delitem__", "__setattr__"}


def _module_names(tree: ast.Module) -> set[str]:
    """The names a module binds at its top level (assignments, imports, defs, classes)."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _root(node) -> str | None:
    """The name an attribute or subscript chain starts at (``a`` of ``a.b[c].d``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _locals(fn) -> set[str]:
    """The names function ``fn`` binds itself (parameters, assignments, loops, imports, ...)."""
    a = fn.args
    names = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p is not None}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((x.asname or x.name).split(".")[0] for x in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not fn:
            names.add(node.name)
    declared = {n for node in ast.walk(fn) if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names}
    return names - declared


def module_state_writes(source: str) -> list[str]:
    """Each place a function of the module ``source`` rebinds (``global``, ``nonlocal``) or
    mutates (item or attribute assignment or deletion, a mutating method, ``setattr``) a
    name the module binds at its top level, as ``line: text``."""
    tree = ast.parse(source)
    module = _module_names(tree)
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        own = _locals(fn) if not isinstance(fn, ast.Lambda) else {a.arg for a in fn.args.args}
        shared = module - own
        for node in ast.walk(fn):
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                found.append(node)
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                found.extend(t for t in targets
                             if isinstance(t, (ast.Attribute, ast.Subscript)) and _root(t) in shared)
            elif isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Attribute) and f.attr in MUTATORS and _root(f.value) in shared:
                    found.append(node)
                elif (isinstance(f, ast.Name) and f.id in ("setattr", "delattr") and node.args
                      and _root(node.args[0]) in shared):
                    found.append(node)
    return [f"{line}: {text}" for line, text in sorted({(n.lineno, ast.get_source_segment(source, n)) for n in found})]


CANARY = '''
import sys
STATE = []
TABLE = {}
class Box: ...
BOX = Box()
def run(x, local=[]):
    global STATE
    STATE = [x]
    TABLE[x] = 1
    BOX.value = x
    STATE.append(x)
    setattr(BOX, "v", x)
    sys.stdout = None
    del TABLE[x]
    local.append(x)            # its own: fine
    STATE2 = {}; STATE2[x] = 1  # its own: fine
    return [y for y in TABLE]
'''


def test_the_reader_finds_each_kind_of_write():
    """A canary holding each kind: the reader is not blind (a test that cannot fail is none)."""
    found = module_state_writes(CANARY)
    assert [f.split(": ", 1)[1] for f in found] == [
        "global STATE", "TABLE[x]", "BOX.value", "STATE.append(x)", 'setattr(BOX, "v", x)', "sys.stdout",
        "TABLE[x]"]


@pytest.mark.parametrize("path", sorted(CLI.rglob("*.py")), ids=lambda p: str(p.relative_to(CLI)))
def test_no_cli_module_writes_its_module_state(path):
    assert module_state_writes(path.read_text(encoding="utf-8")) == []


def _snapshot(modules) -> dict:
    """{(module, name): (identity, state)} of the modules' namespaces: a container's items and
    a plain object's attributes (functions, classes and modules by identity)."""
    out = {}
    for module in modules:
        for name, value in vars(module).items():
            if name.startswith("__"):  # the import system's (__loader__, __spec__, ...)
                continue
            if isinstance(value, (dict, list, set)):
                state = repr(value)
            elif hasattr(value, "__dict__") and not isinstance(value, type) and not callable(value) \
                    and type(value).__name__ != "module":
                state = repr(sorted(vars(value).items(), key=lambda kv: kv[0]))
            else:
                state = None
            out[(module.__name__, name)] = (id(value), state)
    return out


def _cli_modules() -> list:
    from rcpc import cli

    for name in cli.command_names():
        cli.command(name)
    return [m for n, m in sorted(sys.modules.items()) if n == "rcpc.cli" or n.startswith("rcpc.cli.")]


def test_the_snapshot_sees_a_mutated_module(monkeypatch):
    """The run-time check's canary: a module whose list, dict or object changed is seen."""
    import types

    fake = types.ModuleType("fake")
    fake.LIST, fake.TABLE, fake.OBJ = ["a"], {}, types.SimpleNamespace(x=1)
    before = _snapshot([fake])
    fake.LIST[0] = "b"
    fake.TABLE["k"] = 1
    fake.OBJ.x = 2
    after = _snapshot([fake])
    assert {k for k in before if before[k] != after[k]} == {("fake", "LIST"), ("fake", "TABLE"), ("fake", "OBJ")}


def test_main_leaves_every_cli_module_as_it_was(monkeypatch, capsys, tmp_path):
    """Commands of each shape run in the repository's workspace: one that compiles, one
    that fails, a usage error, one outside any workspace; each module's namespace after is
    what it was before."""
    from rcpc.cli import main

    monkeypatch.chdir(REPO)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    modules = _cli_modules()
    before = _snapshot(modules)
    runs = [(["params", "rl/qwen35_397b_256_v7x"], 0), (["render", "rl/qwen35_397b_256_v7x", "nope"], 2),
            (["validate", os.devnull, "--diagnostics", "json"], 1), (["completion", "--list", "recipes"], 0)]
    for argv, code in runs:
        assert main(argv) == code, (argv, capsys.readouterr())
    capsys.readouterr()
    assert _snapshot(_cli_modules()) == before
    assert {m.__name__ for m in _cli_modules()} == {m.__name__ for m in modules}  # nothing new imported


def test_every_command_module_is_found_and_declares_what_the_dispatch_reads():
    from rcpc import cli

    names = cli.command_names()
    assert len(names) == len(list((CLI / "commands").glob("[!_]*.py")))
    orders = []
    for name in names:
        module = importlib.import_module(cli.command(name).__name__)
        assert callable(module.arguments) and callable(module.execute), name
        assert module.__doc__ and f"rcpc {name}" in module.__doc__, name
        orders.append(module.ORDER)
    assert len(set(orders)) == len(orders)


NEW_COMMAND = '''"""``rcpc recipes``: list the recipes of the workspace (a command added by one file)."""

ORDER = 35


def arguments(sub) -> None:
    sub.add_parser("recipes", help="list the recipes of the workspace")


def execute(args, run) -> int:
    for p in run.workspace.recipe_paths():
        print(run.config.recipe_name(p))
    return 0
'''


def test_a_command_is_one_module(monkeypatch, capsys, tmp_path):
    """A command module dropped beside the others (here: a copy of the commands directory
    with one more) is listed by ``rcpc --help`` at its ORDER, parsed and run, without a
    registry or any other file changed (docs/architecture.md, Where things go)."""
    from rcpc import cli
    from rcpc.cli import commands

    copy = tmp_path / "commands"
    copy.mkdir()
    for p in CLI.joinpath("commands").glob("*.py"):
        (copy / p.name).symlink_to(p)
    (copy / "recipes.py").write_text(NEW_COMMAND)
    for stray in (".#recipes.py", "recipes.py~", "notes.txt", "old-build.py"):  # an editor's, a person's
        (copy / stray).write_text("raise SystemExit('imported')\n")
    monkeypatch.setattr(cli, "COMMANDS", copy)
    monkeypatch.setattr(commands, "__path__", [*commands.__path__, str(copy)])
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()
              if line.startswith("    ") and not line.startswith("     ")]  # not a wrapped help line
    assert listed[:5] == ["build", "render", "params", "recipes", "diff"] and len(listed) == len(cli.command_names())
    assert "old-build" not in cli.command_names()
    try:
        assert cli.main(["recipes"]) == 0
        assert "rl/qwen35_397b_256_v7x" in capsys.readouterr().out.splitlines()
    finally:  # the trial module leaves the process
        sys.modules.pop("rcpc.cli.commands.recipes", None)
        vars(commands).pop("recipes", None)
