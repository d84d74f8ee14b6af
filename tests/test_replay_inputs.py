"""No-op replay is keyed on every input that can change a result (issue 37, kind 5: replay
that outlives its inputs). One input changed, whichever, is a miss:

* each environment variable rcpc reads (:data:`rcpc.core.envvars.READ`; every read of the
  package goes through that list, found by reading the package's syntax trees);
* each third-party distribution rcpc depends on (:func:`rcpc.core.distributions.found`, the
  closure of the declared dependencies: a version changed, a reinstall, another version
  installed beside it), the closure holding every distribution a full run imports;
* each of rcpc's own files;
* the output's bookkeeping: a replay exits 0 only where a full build would (a damaged
  manifest, a link taken, ...: ``E0910``/``E0912``).

The reported cases are among them: jsonschema upgraded (``check`` replayed "ok" where the
new jsonschema finds errors), a warning caused by an environment variable replayed after the
variable was fixed, damaged bookkeeping replayed with exit 0."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from rcpc.build import replay
from rcpc.__main__ import run
from rcpc.core import distributions, envvars, usercache
from rcpc.domain.kube import schemacache
from test_replay import served, settle

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "compiler" / "rcpc"


@pytest.fixture
def recorded(cached_ws, monkeypatch):
    """A workspace whose ``build`` and ``check`` are recorded (files settled first)."""
    for name in envvars.READ:
        if name != "XDG_CACHE_HOME":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(replay, "RACY_NS", 0)
    assert run(["build"]) == 0
    settle(cached_ws)
    assert run(["build"]) == 0 and run(["check"]) == 0
    assert served() == 0 and served(["check"]) == 0
    return cached_ws


# environment variables ---------------------------------------------------------------------
READS = ("environ", "environb", "getenv", "getenvb", "putenv", "unsetenv", "expanduser")


def _constants(tree: ast.Module) -> dict:
    return {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name) and isinstance(node.value, ast.Constant)}


def environment_reads() -> tuple[list[str], set[str]]:
    """(places that read the environment other than through rcpc.core.envvars, names read
    through its ``get`` and ``home``) in the package's source."""
    stray, names = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        shown = path.relative_to(PACKAGE)
        if str(shown) in (os.path.join("core", "envvars.py"), "oracle_driver.py"):
            continue  # the declarations; the oracle's driver runs in MaxText's interpreter, not rcpc's
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = _constants(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in READS or isinstance(node, ast.Name) and node.id in READS:
                stray.append(f"{shown}:{node.lineno}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("get", "home"):
                if node.func.id == "home":
                    names.add("HOME")
                elif node.args and "from rcpc.core.envvars import" in path.read_text(encoding="utf-8"):
                    arg = node.args[0]
                    names.add(arg.value if isinstance(arg, ast.Constant) else constants.get(getattr(arg, "id", None)))
    return stray, names


def test_every_environment_variable_rcpc_reads_is_declared_in_one_list():
    """No read of ``os.environ`` (``getenv``, ``expanduser``) but through
    :mod:`rcpc.core.envvars`, and the names read are exactly those declared."""
    stray, names = environment_reads()
    assert stray == []
    assert names == set(envvars.READ)


def test_an_undeclared_variable_cannot_be_read():
    with pytest.raises(KeyError):
        envvars.get("RCPC_SOMETHING_NEW")


@pytest.mark.parametrize("name", envvars.READ)
@pytest.mark.parametrize("value", ["", "0", "other"])
def test_each_environment_variable_read_changed_is_a_miss(recorded, monkeypatch, name, value):
    was = os.environ.get(name)
    monkeypatch.setenv(name, value)
    assert served() is None and served(["check"]) is None
    if was is None:
        monkeypatch.delenv(name)
    else:
        monkeypatch.setenv(name, was)
    assert served() == 0


def test_a_warning_caused_by_a_variable_is_not_replayed_once_it_is_fixed(cached_ws, monkeypatch, capsys):
    """The reported case: RCPC_CACHE_MAX_MB=lots warns (at the hourly trim); the run was
    recorded with its warning, and replayed with it after the variable was fixed."""
    monkeypatch.setattr(replay, "RACY_NS", 0)
    monkeypatch.setenv("RCPC_CACHE_MAX_MB", "lots")
    assert run(["check"]) == 0
    assert "RCPC_CACHE_MAX_MB='lots' is not a whole number" in capsys.readouterr().err
    settle(cached_ws)
    stamp = cached_ws.parent / "cache" / "rcpc" / ".trimmed"
    stamp.unlink()  # the next run trims (and warns) again: recorded with the warning
    assert run(["check"]) == 0 and served(["check"]) == 0
    assert "is not a whole number" in capsys.readouterr().err
    monkeypatch.delenv("RCPC_CACHE_MAX_MB")
    assert served(["check"]) is None
    assert run(["check"]) == 0 and "is not a whole number" not in capsys.readouterr().err


# third-party distributions -----------------------------------------------------------------
def test_the_declared_dependencies_are_pyprojects():
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert sorted(distributions.normalize(distributions._requirement_name(d)) for d in declared) == \
        sorted(distributions.normalize(d) for d in distributions.DECLARED)


IMPORTED = """
import sys
before = set(sys.modules)  # the interpreter's start-up (site, .pth files)
from rcpc.__main__ import run
for argv in (["check", "-j", "1"], ["build", "-j", "1"], ["validate", "{manifest}"], ["validate", "{invalid}"]):
    assert run(argv) in (0, 1), argv
print(" ".join(sorted({{name.split(".")[0] for name, m in sys.modules.items()
                       if name not in before and getattr(m, "__file__", None)}})))
"""


# imported by a dependency when installed, changing none of rcpc's results: {module: why}
INERT = {"idna": "jsonschema's format checks; rcpc's validators are made with no format checker"}


def test_every_distribution_a_full_run_imports_is_in_the_closure(tmp_path):
    """Cold runs of check, build and validate of the bundled recipes and of a JobSet the
    compiled validator refuses (so jsonschema validates it too): each module they import from outside the standard library
    belongs to rcpc or to a distribution of :func:`distributions.found` ("whichever is
    complete": the closure of the declared dependencies holds what was imported), or is one
    a dependency imports when installed that changes none of rcpc's results (:data:`INERT`,
    and rcpc makes no format checker)."""
    import importlib.metadata

    ws = tmp_path / "ws"
    shutil.copytree(REPO / "recipes", ws / "recipes")
    shutil.copy2(REPO / "rcp.toml", ws / "rcp.toml")
    manifest = REPO.parent / "shared" / "data" / "tpu-recipes" / "llama3.1-70b_8k-bf16-tpu7x-4x4x4.yaml"
    invalid = ws / "invalid.yaml"
    invalid.write_text(manifest.read_text().replace("replicas: 1", "replicas: one", 1))
    assert invalid.read_text() != manifest.read_text()
    env = {**os.environ, "RCPC_NO_CACHE": "1"}
    r = subprocess.run([sys.executable, "-c", IMPORTED.format(manifest=manifest, invalid=invalid)], cwd=ws, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    owners = importlib.metadata.packages_distributions()
    imported = {m for m in r.stdout.split() if m not in sys.stdlib_module_names and m != "rcpc"}
    assert {"jsonschema", "yaml"} <= imported
    assert "fastjsonschema" not in imported  # the compiled validator runs without it (kube_compiled)
    closure = {name for name, *_ in distributions.found()}
    outside = {m: owners.get(m) for m in imported
               if not {distributions.normalize(d) for d in owners.get(m, [])} & closure}
    assert set(outside) <= set(INERT)
    assert not any("format_checker" in p.read_text() or "FormatChecker" in p.read_text()
                   for p in PACKAGE.rglob("*.py"))


@pytest.fixture
def site(tmp_path_factory, monkeypatch):
    """A directory first on ``sys.path`` holding a copy of the metadata of every distribution
    of the closure (so that it is what is found), with a fresh process's view of them."""
    directory = tmp_path_factory.mktemp("site")
    for _, _, path, _ in distributions.found():
        info = directory / Path(path).parent.name
        info.mkdir()
        shutil.copy2(path, info / Path(path).name)
    settle(directory)
    monkeypatch.setattr(sys, "path", [str(directory), *sys.path])
    fresh_process(monkeypatch)
    assert all(p.startswith(str(directory)) for _, _, p, _ in distributions.found())
    return directory


def fresh_process(monkeypatch) -> None:
    """Forget what a process finds once (the distributions and every key built on them)."""
    monkeypatch.setattr(distributions, "_FOUND", [])
    monkeypatch.setattr(usercache, "_KNOWN", {})
    monkeypatch.setattr(schemacache, "_KEY_BASE", [])


def upgrade(info: Path, version: str = "999.0") -> Path:
    """Install another ``version`` in place of the distribution whose metadata is ``info``."""
    name = info.name.split("-", 1)[0]
    new = info.with_name(f"{name}-{version}.dist-info")
    info.rename(new)
    meta = new / "METADATA"
    meta.write_text("".join(f"Version: {version}\n" if line.startswith("Version:") else line
                            for line in meta.read_text().splitlines(True)))
    return new


def reinstall(info: Path) -> Path:
    meta = info / "METADATA"
    data = meta.read_bytes()
    meta.unlink()
    meta.write_bytes(data)
    return info


def beside(info: Path) -> Path:
    """Another version installed beside it (two metadata of one name: pip would remove one)."""
    other = info.with_name(info.name.split("-", 1)[0] + "-0.0.1.dist-info")
    shutil.copytree(info, other)
    return info


DISTRIBUTIONS = sorted(name for name, *_ in distributions.found())


@pytest.mark.parametrize("change", [upgrade, reinstall, beside], ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", DISTRIBUTIONS)
def test_each_distribution_changed_is_a_miss(site, cached_ws, monkeypatch, name, change):
    """Exhaustive over the closure and the ways a distribution changes: a version changed
    (jsonschema upgraded, the reported case), a reinstall of the same version, another
    version installed beside it."""
    monkeypatch.setattr(replay, "RACY_NS", 0)
    assert run(["build"]) == 0
    settle(cached_ws)
    assert run(["build"]) == 0 and served() == 0
    (info,) = [Path(p).parent for n, _, p, _ in distributions.found() if n == name]
    change(info)
    assert served() is None


JOBSET = '''jobset(name = "js", spec = {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {
    "template": {"spec": {"containers": [{"name": "main", "image": "img"}], "restartPolicy": "Never"}}}}}]})
variant("default")
'''


def test_an_upgraded_jsonschema_is_neither_replayed_nor_served_from_the_caches(site, cached_ws, monkeypatch,
                                                                                  capsys):
    """The reported case: ``check`` replayed "ok" after jsonschema was upgraded, where the
    new jsonschema finds errors. Here the upgrade is a new version's metadata and new
    findings (every JobSet refused); after it, in a new process, neither replay nor the
    build and validation caches give the old result."""
    from rcpc.domain.kube import schema as kube_schema

    monkeypatch.setattr(replay, "RACY_NS", 0)
    (cached_ws / "rcp.toml").write_text('kube_schemas = ["builtin:jobset"]\n')
    (cached_ws / "recipes" / "js.rcp").write_text(JOBSET)
    assert run(["check"]) == 0
    settle(cached_ws)
    assert run(["check"]) == 0 and served(["check"]) == 0
    (info,) = [Path(p).parent for n, _, p, _ in distributions.found() if n == "jsonschema"]
    upgrade(info, "99.0")
    fresh_process(monkeypatch)
    monkeypatch.setattr(kube_schema, "_errors", lambda validator, plain: [[["spec"], "required", "'x' is a "
                                                                            "required property", None]])
    # the new findings are jsonschema's: the compiled validator (rcpc.domain.kube.compiled, rcpc's own
    # code) sends every JobSet on to it, as it does each one it refuses
    monkeypatch.setattr(kube_schema.SchemaIndex, "compiled", lambda self, api, kind: None)
    capsys.readouterr()
    assert served(["check"]) is None
    assert run(["check"]) == 1
    assert "error[E11" in capsys.readouterr().err


# rcpc's own files -----------------------------------------------------------------------------
@pytest.fixture
def own(tmp_path_factory, monkeypatch):
    """A copy of rcpc's package standing for it in replay (its files' stats are read once a
    process: the real ones are not touched)."""
    copy = tmp_path_factory.mktemp("own") / "rcpc"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    settle(copy)
    monkeypatch.setattr(replay, "_PACKAGE", str(copy))
    monkeypatch.setattr(replay, "_PACKAGE_TREE", [])
    return copy


def test_each_own_file_changed_is_a_miss(own, recorded):
    """Exhaustive over rcpc's files: each one's stat moved (a size kept, content changed,
    as an edit or an upgrade leaves it) is a miss, and put back... still a miss (its ctime
    moved); a file added beside them is a miss too."""
    files = sorted(p for p in own.rglob("*") if p.suffix in (".py", ".lark"))
    assert len(files) > 100
    for path in files:
        st_before = path.stat()
        os.utime(path, ns=(st_before.st_atime_ns, st_before.st_mtime_ns + 10**9))
        assert served() is None, path
        os.utime(path, ns=(st_before.st_atime_ns, st_before.st_mtime_ns))
    (own / "core" / "new.py").write_text("")
    assert served() is None


# the output's bookkeeping -----------------------------------------------------------------------
def _damage(out: Path, how: str) -> None:
    area = out / ".rcpc"
    current = area / os.readlink(area / "current")
    if how == "manifest junk":
        (current / ".manifest").write_text("{")
    elif how == "manifest of another shape":
        data = json.loads((current / ".manifest").read_text())
        data["format"] = 2
        (current / ".manifest").write_text(json.dumps(data))
    elif how == "manifest gone":
        (current / ".manifest").unlink()
    elif how == "current retargeted":
        (area / "current").unlink()
        (area / "current").symlink_to("gen/x")
    elif how == "current a directory":
        (area / "current").unlink()
        shutil.copytree(current, area / "current", symlinks=True)
    elif how == "link replaced by a copy":
        (out / "r").unlink()
        shutil.copytree(current / "r", out / "r")
    elif how == "link spelled otherwise":
        (out / "r").unlink()
        (out / "r").symlink_to(f".rcpc/gen/{current.name}/r")
    elif how == "marker gone":
        (area / "MANAGED_BY_RCPC").unlink()
    elif how == "area replaced":
        shutil.move(str(area), str(out / "elsewhere"))
        shutil.copytree(out / "elsewhere", area, symlinks=True)
        (area / "MANAGED_BY_RCPC").unlink()
        (area / "note.txt").write_text("mine")
    else:
        raise AssertionError(how)


DAMAGE = ["manifest junk", "manifest of another shape", "manifest gone", "current retargeted",
          "current a directory", "link replaced by a copy", "link spelled otherwise", "marker gone", "area replaced"]


@pytest.mark.parametrize("how", DAMAGE)
def test_damaged_bookkeeping_is_never_replayed(recorded, capsys, how):
    """The reported case: a build replayed with exit 0 where a full build refuses its
    damaged bookkeeping (E0910/E0912). Each damage: no replay, and the full build says
    what it finds."""
    _damage(recorded / "rcpc-out", how)
    assert served() is None
    capsys.readouterr()
    code = run(["build"])
    err = capsys.readouterr().err
    assert code == 1 and ("error[E0910]" in err or "error[E0912]" in err), err
