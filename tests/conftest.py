"""Shared test helpers: a throw-away rcpc workspace in ``tmp_path``, compiled in-process.

* ``ws`` — a :class:`Ws`: ``ws.write(path, text)`` writes files (text is dedented),
  ``ws.build(...)`` compiles a recipe with :class:`rcpc.domain.recipe.Compiler` and returns
  ``{variant: {render name: text}}``, ``ws.names(text)`` evaluates a file of constants and
  returns its bindings, ``ws.py(expr)`` the plain-Python value of one expression, and
  ``ws.fails(...)`` the :class:`Failure` (diagnostics + formatted text) of bad input.
* ``build_calls`` — the list of :meth:`Compiler.build` calls made in this process;
  ``CACHED_RECIPE`` a recipe loading ``//recipes/lib/l.rcp`` with two variants, and
  ``cached_ws`` a workspace of it (the current directory) with the build cache on.
* ``cli`` — runs ``rcpc.cli.main([...])`` in the workspace (``monkeypatch.chdir``) and
  returns a :class:`CliResult` (exit code, stdout, stderr).
* ``output_tree(out)`` — what a reader finds in an output directory: {path: bytes} of every
  file reached through rcpc's links (its own ``.rcpc`` area aside); ``area_leftovers(out)``
  — what that area holds beyond the current generation and the outputs it uses.
* ``value_of(x)`` — a language value (:mod:`rcpc.core.values`) built from plain Python data, for
  driving the emitters directly; ``spelled(...)`` gives a number its source spelling;
  ``rcp_string(s)`` is a recipe string literal for ``s``; ``same(a, b)`` is type-strict equality.
"""

from __future__ import annotations

import math
import os
import shutil
import textwrap
from pathlib import Path

import attrs
import pytest

from rcpc.core.diagnostics import CompileError, format_text
from rcpc.domain.recipe import Compiler
from rcpc.core.source import Span
from rcpc.core.values import Bool, Dict, Float, Int, List, Null, Str, to_python
from rcpc.domain import stdlib
from rcpc.domain.workspace import Workspace

# A test whose memory runs away fails with MemoryError where it allocates, its traceback in the
# report, instead of the kernel's OOM killer ending the whole run with no trace (a loop in
# bashlex grew a test process to 23 GB, tests/test_import_bash.py). RLIMIT_DATA (Linux >= 4.7)
# counts the heap and private writable mappings, not reserved address space (node's), and is
# inherited by the commands tests start. The heaviest test takes about 750 MB (E0804's example).
MAX_TEST_DATA = 4 << 30


def _bound_memory() -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if soft == resource.RLIM_INFINITY or soft > MAX_TEST_DATA:
        resource.setrlimit(resource.RLIMIT_DATA, (MAX_TEST_DATA, hard))


_bound_memory()


def _hypothesis_profile() -> None:
    """``RCPC_HYPOTHESIS_PROFILE=ci`` (set by ``.ci/run``): every property draws the same
    examples on every run (Hypothesis ``derandomize``, seeded from the test), so a CI run's
    result is its commit's, never the luck of its draw. Other runs draw new examples (random
    text found a lexer and a pydantic-reading fault in CI runs of one session): exploring is
    theirs, and each fault they find becomes an ``@example``."""
    from hypothesis import settings

    settings.register_profile("ci", derandomize=True)
    settings.load_profile(os.environ.get("RCPC_HYPOTHESIS_PROFILE", "default"))


_hypothesis_profile()

CI_PROFILE = os.environ.get("RCPC_HYPOTHESIS_PROFILE") == "ci"


def examples(explore: int, ci: int) -> int:
    """``max_examples`` of a property that draws many: ``explore`` where each run draws new
    examples (the default profile), ``ci`` in the ``ci`` profile (``tests/run``, CI), whose
    runs all draw the same ones, so that more of them would repeat the same check on every
    run. ``ci`` is chosen per property to still reach every part of its value space (each
    branch of its strategies, many times over); each fault found is an ``@example``."""
    return ci if CI_PROFILE else explore


def pytest_configure(config):
    """Under pytest-xdist (``tests/run``: ``-n auto``) each worker has a user cache of its own
    (``XDG_CACHE_HOME``, a new empty directory, removed at the end), as each process of a
    serial run had the whole cache to itself: a test that counts cache entries or hits never
    sees another worker's, whichever tests run beside it. Set before collection, which
    compiles the recipes of ``rcp.toml``."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        import shutil
        import tempfile

        cache = tempfile.mkdtemp(prefix=f"rcpc-test-cache-{worker}-")
        os.environ["XDG_CACHE_HOME"] = cache
        config.add_cleanup(lambda: shutil.rmtree(cache, ignore_errors=True))


# The modules whose one expensive fixture makes them the suite's long pole: collected first, so
# that under xdist (--dist loadgroup) a worker starts on them while the other takes the rest.
FIRST = ("test_maxtext_agreement.py",)


def xdist_group(item) -> str | None:
    """The group ``--dist loadgroup`` gives ``item``: the names of its ``xdist_group`` marks,
    sorted and joined with ``_`` (pytest-xdist's ``WorkerInteractor.pytest_collection_modifyitems``,
    xdist/remote.py), or None."""
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    return "_".join(sorted(names)) or None


def _set_nodeid(item, nodeid: str) -> None:
    if hasattr(item, "_id"):  # pytest >= 9.2: a structured id (_pytest/nodeid.py), read back by str()
        from _pytest.nodeid import NodeId

        item._id = NodeId.parse(nodeid)
    else:
        item._nodeid = nodeid


@pytest.hookimpl(trylast=True)  # after pytest-xdist's own suffixing, which it leaves alone where that worked
def pytest_collection_modifyitems(config, items):
    """The modules of :data:`FIRST` are collected first. In a worker of ``--dist loadgroup``,
    each test of an ``xdist_group`` carries ``@GROUP`` at the end of its node id, which is all
    the controller's scheduler (``LoadGroupScheduling._split_scope``) groups tests by.
    pytest-xdist 3.8 sets it by assigning ``item._nodeid``, which pytest 9.2's structured ids
    no longer read (pytest-xdist issue #1386, fix pending in PR #1388): every group was spread
    over both workers and its module fixtures made on each (MaxText's loader ran twice). Set
    here where it is missing (tests/test_suite_groups.py checks it)."""
    items.sort(key=lambda item: item.path.name not in FIRST)  # stable: the order is kept otherwise
    if config.getoption("loadgroup", False):  # set in each worker of --dist loadgroup (xdist/remote.py)
        for item in items:
            group = xdist_group(item)
            if group and not item.nodeid.endswith("@" + group):
                _set_nodeid(item, f"{item.nodeid}@{group}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """After a test that ran out of memory is reported, what it allocated is freed (its
    frames, which pytest keeps for post-mortem debugging, are dropped), so the tests after
    it have their memory back."""
    report = yield
    if call.excinfo is not None and call.excinfo.errisinstance(MemoryError):
        import gc
        import sys
        import traceback

        traceback.clear_frames(call.excinfo.tb)
        call.excinfo.value.__traceback__ = None
        call.excinfo = None
        sys.last_type = sys.last_value = sys.last_traceback = None
        gc.collect()
    return report


RCP_TOML = 'recipe_dirs = ["recipes"]\nlibrary_dirs = ["recipes/lib"]\n'
REPO = Path(__file__).resolve().parents[1]
STDLIB_SOURCE = REPO / "compiler" / "rcpc" / "stdlib"  # rcpc's standard library (@rcpc//NAME.rcp) in the checkout
# The .rcp files of the checkout: the bundled recipes and the standard library
BUNDLED_FILES = sorted([*(REPO / "recipes").rglob("*.rcp"), *STDLIB_SOURCE.rglob("*.rcp")])


def bundled_sources() -> dict[str, str]:
    """The bundled ``.rcp`` files as a workspace of their own would hold them, {workspace path:
    text}: the recipes under ``recipes/``, and rcpc's standard library (``@rcpc//NAME``) as
    ``recipes/lib/NAME`` with the recipes' ``@rcpc//`` loads pointed there, so that a test may
    change (format, mutate) a standard library file as it changes a recipe."""
    out = {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8").replace('"' + stdlib.PREFIX, '"//recipes/lib/')
           for p in sorted((REPO / "recipes").rglob("*.rcp"))}
    out.update(("recipes/lib/" + p.relative_to(STDLIB_SOURCE).as_posix(), p.read_text(encoding="utf-8"))
               for p in sorted(STDLIB_SOURCE.rglob("*.rcp")))
    return out
RECIPE = "recipes/r.rcp"
LIB = "recipes/lib/consts.rcp"
SPAN = Span("<test>", 1, 1, 1, 1)


@attrs.frozen
class Failure:
    """A compile that raised: every diagnostic, the first one, and the text the CLI prints."""

    diags: list
    text: str

    @property
    def diag(self):
        return self.diags[0]

    @property
    def code(self) -> str:
        return self.diags[0].code

    @property
    def message(self) -> str:
        return self.diags[0].message

    @property
    def where(self) -> str:
        """``path:line:col`` of the first diagnostic's primary span."""
        return str(self.diags[0].span)


class Ws:
    """A workspace rooted at ``root`` with an ``rcp.toml`` (recipes under ``recipes/``)."""

    def __init__(self, root: Path):
        self.root = root
        (root / "rcp.toml").write_text(RCP_TOML, encoding="utf-8")
        self.last_compiler: Compiler | None = None

    def write(self, path: str, text: str, dedent: bool = True) -> Path:
        p = self.root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text) if dedent else text, encoding="utf-8")
        return p

    def compiler(self) -> Compiler:
        self.last_compiler = Compiler(Workspace.find(self.root))
        return self.last_compiler

    def build(self, text: str | None = None, path: str = RECIPE, variant: str | None = None,
              sets: list[str] | None = None, dedent: bool = True) -> dict:
        """Compile ``path`` (written from ``text`` when given): ``{variant: {render: text}}``."""
        if text is not None:
            self.write(path, text, dedent)
        _, builds = self.compiler().build((self.root / path).resolve(), variant, sets)
        return {b.variant: {r.name: r.text for r in b.renders} for b in builds}

    def render(self, text: str, name: str, **kw) -> str:
        """One render of the default (or only) variant."""
        (renders,) = self.build(text, **kw).values()
        return renders[name]

    def names(self, text: str, path: str = LIB, dedent: bool = True) -> dict:
        """Evaluate a file of constants (as a loaded file) and return its bindings."""
        real = self.write(path, text, dedent).resolve()
        return self.compiler().library(real, ())

    def value(self, expr: str, before: str = ""):
        """The language value of ``X = expr`` (after the statements in ``before``)."""
        return self.names(textwrap.dedent(before) + f"X = {expr}\n", dedent=False)["X"]

    def py(self, expr: str, before: str = ""):
        """The plain-Python value of ``expr``."""
        return to_python(self.value(expr, before))

    def fails(self, text: str | None = None, path: str = RECIPE, variant: str | None = None,
              sets: list[str] | None = None, dedent: bool = True) -> Failure:
        """Compile and expect a :class:`CompileError`; returns it as a :class:`Failure`."""
        with pytest.raises(CompileError) as info:
            self.build(text, path, variant, sets, dedent)
        sources = self.last_compiler.sources if self.last_compiler else {}
        diags = info.value.diagnostics
        return Failure(diags, "\n".join(format_text(d, sources) for d in diags))

    def fails_expr(self, expr: str, before: str = "") -> Failure:
        """Compile ``X = expr`` as a recipe line and expect an error."""
        return self.fails(textwrap.dedent(before) + f"X = {expr}\n", dedent=False)


@pytest.fixture
def bundled_workspace(tmp_path) -> tuple[Path, dict]:
    """(a copy of the repository's workspace: rcp.toml and recipes/, the environment of a
    process that builds it with the cache on in a private ``XDG_CACHE_HOME``): for tests that
    run ``rcpc`` as a user does on the bundled recipes."""
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copy2(REPO / "rcp.toml", root / "rcp.toml")
    shutil.copytree(REPO / "recipes", root / "recipes")
    env = {k: v for k, v in os.environ.items() if k not in ("RCPC_NO_CACHE", "PYTHONPATH")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    return root, env


@pytest.fixture
def ws(tmp_path) -> Ws:
    return Ws(tmp_path)


SCHEMA_TOML = 'recipe_dirs = ["recipes"]\nlibrary_dirs = ["recipes/lib"]\nmaxtext_schema = "builtin:maxtext"\n'


@pytest.fixture
def sws(tmp_path) -> Ws:
    """A workspace with MaxText's derived schema configured (``builtin:maxtext``)."""
    ws = Ws(tmp_path)
    (tmp_path / "rcp.toml").write_text(SCHEMA_TOML, encoding="utf-8")
    return ws


# A recipe loading a library constant, with two variants (for cache, replay and -j tests).
CACHED_RECIPE = '''load("//recipes/lib/l.rcp", "LR")
N = param(int, default = 2)
F = maxtext_flags({"learning_rate": LR, "steps": N})
flag_file(name = "trainer", flags = F)
variant("default")
variant("more", set = {"N": 3})
'''


@pytest.fixture
def cached_ws(tmp_path, monkeypatch) -> Path:
    """The current directory set to a workspace root holding ``recipes/r.rcp``
    (``CACHED_RECIPE``) and ``recipes/lib/l.rcp``, with the build cache on, in a private
    ``XDG_CACHE_HOME`` (``tmp_path / "cache"``)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)
    root = tmp_path / "ws"
    (root / "recipes" / "lib").mkdir(parents=True)
    (root / "rcp.toml").write_text("")
    (root / "recipes" / "r.rcp").write_text(CACHED_RECIPE)
    (root / "recipes" / "lib" / "l.rcp").write_text("LR = 1e-6\n")
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def build_calls(monkeypatch) -> list:
    """The arguments of every :meth:`Compiler.build` call made in this process from now on
    (a recipe compiled in a worker process, or served from a cache, adds none)."""
    calls: list = []
    real = Compiler.build

    def counting(self, *a, **k):
        calls.append(a)
        return real(self, *a, **k)

    monkeypatch.setattr(Compiler, "build", counting)
    return calls


@attrs.frozen
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def kube_ws(tmp_path, monkeypatch) -> Ws:
    """A workspace (under ``tmp_path``) validating against the built-in JobSet schema, with a
    private user cache, the cache on."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)
    (tmp_path / "ws").mkdir()
    ws = Ws(tmp_path / "ws")
    (ws.root / "rcp.toml").write_text('recipe_dirs = ["recipes"]\nkube_schemas = ["builtin:jobset"]\n')
    return ws


def kube_checks(monkeypatch) -> list:
    """A list that gets one item per manifest the Kubernetes checks run on."""
    from rcpc.domain.kube import rules as kube

    calls: list = []
    real = kube.check_manifest
    monkeypatch.setattr(kube, "check_manifest", lambda *a: calls.append(1) or real(*a))
    return calls


@pytest.fixture
def cli(ws, monkeypatch, capsys):
    """``cli("render", "recipes/r.rcp")`` → :class:`CliResult`, run in the ``ws`` workspace."""
    from rcpc.cli import main

    def run(*argv: str) -> CliResult:
        monkeypatch.chdir(ws.root)
        capsys.readouterr()
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse usage errors
            code = exc.code
        out, err = capsys.readouterr()
        return CliResult(code, out, err)

    return run


def output_tree(out: Path) -> dict:
    """What a reader finds in output directory ``out``: {path under it: bytes} of every file
    reached by following rcpc's links (its own area ``.rcpc`` aside; a link that leads
    nowhere is no file)."""
    found = {}
    for d, dirs, files in os.walk(out, followlinks=True):
        if Path(d) == out:
            dirs[:] = [x for x in dirs if x != ".rcpc"]
        for f in files:
            p = Path(d) / f
            if p.is_file():
                found[p.relative_to(out).as_posix()] = p.read_bytes()
    return dict(sorted(found.items()))


def area_leftovers(out: Path) -> list:
    """What rcpc's area in output directory ``out`` holds besides its marker, its lock, the
    current generation and the outputs that generation uses (a build killed outright leaves
    more, until the next build)."""
    import json

    area = out / ".rcpc"
    current = os.readlink(area / "current")
    used = json.loads((area / current / ".manifest").read_text())["outputs"].values()
    found = {f"gen/{p.name}" for p in (area / "gen").iterdir()} | {f"outputs/{p.name}" for p in (area / "outputs").iterdir()}
    found |= {p.name for p in area.iterdir()} - {"gen", "outputs"}
    return sorted(found - {"MANAGED_BY_RCPC", "lock", "current", current, *(f"outputs/{n}" for n in used)})


# values from plain Python data ------------------------------------------------------------
@attrs.frozen
class spelled:
    """A number or bool with an explicit source spelling, e.g. ``spelled(1e-6, "1e-6")``."""

    value: object
    text: str


def value_of(x):
    """A language value for plain Python data (dict keys must be strings). Numbers get a
    spelling the recipe language could have written (``str(int)``, ``repr(float)``)."""
    if isinstance(x, spelled):
        v = x.value
        if isinstance(v, bool):
            return Bool(v, x.text, SPAN)
        if isinstance(v, int):
            return Int(v, x.text, SPAN)
        return Float(v, x.text, SPAN)
    if x is None:
        return Null("None", SPAN)
    if isinstance(x, bool):
        return Bool(x, "True" if x else "False", SPAN)
    if isinstance(x, int):
        return Int(x, str(x), SPAN)
    if isinstance(x, float):
        return Float(x, repr(x), SPAN)
    if isinstance(x, str):
        return Str(x, SPAN)
    if isinstance(x, (list, tuple)):
        return List(tuple(value_of(i) for i in x), SPAN)
    if isinstance(x, dict):
        return Dict({k: value_of(v) for k, v in x.items()}, {k: SPAN for k in x}, SPAN)
    raise TypeError(type(x))


def rcp_string(s: str) -> str:
    """A recipe string literal (double-quoted, escaped) whose value is exactly ``s``."""
    out = []
    for c in s:
        if c == "\\":
            out.append("\\\\")
        elif c == '"':
            out.append('\\"')
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        elif not c.isprintable() or 0xD800 <= ord(c) <= 0xDFFF:
            out.append(f"\\U{ord(c):08x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def same(a, b) -> bool:
    """Equality that also compares types (True != 1, 1 != 1.0), dict key order, and lets nan
    equal nan."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


def run_bash_stubbed(text: str, programs) -> list:
    """The test oracle of :mod:`rcpc.importer.interpret`: the command lines (lists of words)
    real bash runs for ``programs`` when it runs ``text``, each program a shell function that
    records its words and does nothing else; bash has no startup files and a new empty
    directory as HOME and working directory. For the tests' own scripts and the published
    recipes only: it runs what ``text`` says. Raises :class:`subprocess.CalledProcessError`
    when the script fails."""
    import shlex
    import shutil
    import subprocess
    import tempfile

    bash = shutil.which("bash")
    assert bash is not None, "the shell-import tests compare with bash"
    with tempfile.TemporaryDirectory(prefix="rcpc-test-bash-") as d:
        record = Path(d) / "argv"
        record.write_bytes(b"")
        stubs = "".join(f"{p}() {{ printf '%s\\0' {shlex.quote(p)} \"$@\" >> {shlex.quote(str(record))}; "
                        f"printf '\\1\\0' >> {shlex.quote(str(record))}; }}\n" for p in programs)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": d, "LC_ALL": "C"}
        subprocess.run([bash, "--noprofile", "--norc", "-c", stubs + text], cwd=d, env=env, check=True,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
        words = record.read_bytes().split(b"\0")[:-1]
    out, cur = [], []
    for w in words:
        if w == b"\1":
            out.append(cur)
            cur = []
        else:
            cur.append(w.decode("utf-8", "surrogateescape"))
    return out


def bench_script(name: str):
    """The module of script ``bench/<name>.py`` (bench/ is not a package), loaded from this
    checkout."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
