"""rcpc's standard library ships inside the package (issue 39, kind 1): a repository of
``rcp.toml`` and one recipe loads ``@rcpc//maxtext_tpu.rcp`` (the reported E0201 was the
user copying 500 lines), builds, checks and keeps goldens with ``pytest rcp.toml``.

* a label resolves to the package's own file and nothing else: no workspace file shadows it,
  a path that is not plain names is E0206 and a missing file E0201 with a did-you-mean
  (a property over label texts); a standard library file's own loads stay in the library;
* the build cache, the AST cache and no-op replay key on the standard library file's bytes:
  a changed package file never replays a stale build;
* a diagnostic inside a standard library file is shown at the workspace's load or call that
  reached it, saying the file is rcpc's (a property over faults in a library file);
* ``explain`` and ``lint`` follow ``@rcpc//`` loads; the editor's diagnostics are ``check``'s.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import SCHEMA_TOML, STDLIB_SOURCE
from rcpc.build import replay
from rcpc.__main__ import run
from rcpc.core.diagnostics import CompileError, Diagnostic
from rcpc.core.fmt import format_source
from rcpc.core.source import Span
from rcpc.core.values import to_python
from rcpc.domain import stdlib
from rcpc.domain.lint import lint
from rcpc.domain.recipe import Compiler
from rcpc.domain.workspace import Workspace

RECIPE = '''load("@rcpc//maxtext_tpu.rcp", "maxtext_jobset")

FLAGS = maxtext_flags({"model_name": "llama3.1-8b", "steps": 10, "dataset_type": "synthetic"})

maxtext_jobset(
    "my-run",
    "gcr.io/p/img:1",
    "tpu7x:2x2x1",
    FLAGS,
    {"xla_tpu_scoped_vmem_limit_kib": 61440},
)
'''
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _rcpc(cwd: Path, *argv: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rcpc", *argv], cwd=cwd, env=env, capture_output=True, text=True)


# the reported case ---------------------------------------------------------------------------
def test_a_repository_of_rcp_toml_and_one_recipe_builds_checks_and_keeps_goldens(tmp_path):
    """The issue's "done when", through the CLI as a new user runs it."""
    repo = tmp_path / "team"
    (repo / "recipes").mkdir(parents=True)
    (repo / "rcp.toml").write_text('maxtext_schema = "builtin:maxtext"\nkube_schemas = ["builtin:jobset"]\n')
    (repo / "recipes" / "train.rcp").write_text(RECIPE)
    # as a new user's shell has it: no pytest-xdist worker's variables (tests/run), which make
    # the pytest run below an xdist worker to syrupy (no snapshot report)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")},
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for argv in (["build"], ["check"], ["fmt", "--check", "recipes/"], ["lint"]):
        got = _rcpc(repo, *argv, env=env)
        assert got.returncode == 0, (argv, got.stderr)
    assert "\n  name: my-run\n" in (repo / "rcpc-out" / "train" / "default" / "jobset.yaml").read_text()
    pytest_ = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "rcp.toml"]
    got = subprocess.run(pytest_, cwd=repo, env=env, capture_output=True, text=True)
    assert got.returncode == 1 and "--snapshot-update" in got.stdout   # no golden yet
    got = subprocess.run([*pytest_, "--snapshot-update"], cwd=repo, env=env, capture_output=True, text=True)
    assert got.returncode == 0, got.stdout
    assert (repo / "golden" / "train" / "default" / "jobset.yaml").is_file()
    got = subprocess.run(pytest_, cwd=repo, env=env, capture_output=True, text=True)
    assert got.returncode == 0 and "1 snapshot passed" in got.stdout, got.stdout
    assert sorted(p.name for p in repo.iterdir()) == ["golden", "rcp.toml", "rcpc-out", "recipes"]


def test_the_package_ships_every_standard_library_file(ws):
    """What loads is what the checkout holds (CI installs the package, not editable: the
    files are package data), each a label, canonical (rcpc fmt) and lint-clean as a library
    (also by CI's ``rcpc lint``: this repository's rcp.toml lists them as a library directory)."""
    shipped = {p.relative_to(stdlib.DIRECTORY).as_posix(): p.read_bytes() for p in stdlib.DIRECTORY.rglob("*.rcp")}
    source = {p.relative_to(STDLIB_SOURCE).as_posix(): p.read_bytes() for p in STDLIB_SOURCE.rglob("*.rcp")}
    assert shipped == source and {"maxtext_tpu.rcp", "rl_pathways.rcp"} <= set(shipped)
    assert stdlib.files() == sorted(stdlib.PREFIX + name for name in shipped)
    for name, data in shipped.items():
        assert format_source(data.decode(), stdlib.PREFIX + name) == data.decode()
    compiler = ws.compiler()
    assert all(compiler.workspace.is_library(p) for p in stdlib.DIRECTORY.rglob("*.rcp"))
    assert lint(compiler, sorted(stdlib.DIRECTORY.rglob("*.rcp"))) == []


# resolution -----------------------------------------------------------------------------------
PARTS = st.sampled_from(["maxtext_tpu.rcp", "rl_pathways.rcp", "nope.rcp", "..", ".", "", "stdlib", "rcpc",
                         "a\\b.rcp", "..\\x.rcp", "maxtext_tpu", "x.rcp", "recipes", "\0.rcp"])
LABELS = st.builds(lambda repo, parts: f"@{repo}//" + "/".join(parts),
                   st.sampled_from(["rcpc", "rcpc", "rcpc", "", "rcp", "other", "rcpc/"]),
                   st.lists(PARTS, min_size=1, max_size=5))


@SETTINGS
@given(target=LABELS)
@example(target="@rcpc//../x.rcp")                 # the traversal
@example(target="@rcpc//nope.rcp")                 # the unknown file
@example(target="@rcpc//../stdlib/maxtext_tpu.rcp")  # back into the library through '..': still refused
@example(target="@rcpc//maxtext_tpu.rcp")
@example(target="@rcpc///maxtext_tpu.rcp")
def test_a_label_names_a_file_of_the_package_or_is_refused_with_a_hint(target):
    span = Span("recipes/r.rcp", 1, 6, 1, 6 + len(target))
    parts = target.partition("//")[2].split("/")
    plain = target.startswith(stdlib.PREFIX) and all(p not in ("", ".", "..") and "\\" not in p and "\0" not in p
                                                      for p in parts)
    try:
        got = stdlib.resolve(target, span)
    except CompileError as exc:
        (d,) = exc.diagnostics
        assert d.span == span and d.hint
        if not plain:
            assert d.code == "E0206"
        else:
            assert d.code == "E0201" and not stdlib.DIRECTORY.joinpath(*parts).is_file()
        return
    assert plain and got == stdlib.DIRECTORY.joinpath(*parts) and got.is_file()
    assert stdlib.label(got) == target and stdlib.DIRECTORY in got.parents


@pytest.mark.parametrize("target, code, words", [
    ("@rcpc//../x.rcp", "E0206", "no '..'"),
    ("@rcpc//nope.rcp", "E0201", "the files of rcpc's standard library: @rcpc//maxdiffusion_tpu.rcp, @rcpc//maxtext_tpu.rcp"),
    ("@rcpc//maxtext_tp.rcp", "E0201", "did you mean '@rcpc//maxtext_tpu.rcp'?"),
    ("@rcp//maxtext_tpu.rcp", "E0206", "rcpc's standard library is @rcpc//FILE.rcp"),
    ("@rcpc/maxtext_tpu.rcp", "E0206", "a file of this workspace is //path/to/file.rcp"),
])
def test_a_bad_label_is_a_diagnostic_at_the_load_exit_1(ws, cli, target, code, words):
    ws.write("recipes/r.rcp", f'load("{target}", "maxtext_jobset")\n')
    r = cli("check")
    assert r.code == 1 and "Traceback" not in r.err
    assert f"recipes/r.rcp:1:6: error[{code}]" in r.err and words in r.err


def test_a_missing_workspace_copy_hints_at_the_shipped_file(ws):
    f = ws.fails('load("//recipes/lib/maxtext_tpu.rcp", "maxtext_jobset")\n')
    assert f.code == "E0201" and "load it as @rcpc//maxtext_tpu.rcp" in f.diag.hint


def test_no_workspace_file_shadows_the_standard_library(ws):
    """Files a workspace could hold where a label might be looked for (a relative
    ``@rcpc/`` directory, a copy under the library directory) are not read; the workspace's
    own ``//`` library still loads as before."""
    fake = "def libtpu_init_args(flags, *, spaced = False):\n    return \"shadowed\"\n"
    for path in ("recipes/@rcpc/maxtext_tpu.rcp", "@rcpc/maxtext_tpu.rcp", "recipes/lib/maxtext_tpu.rcp"):
        ws.write(path, fake)
    names = ws.names('load("@rcpc//maxtext_tpu.rcp", "libtpu_init_args")\n'
                     'load("//recipes/lib/maxtext_tpu.rcp", OWN = "libtpu_init_args")\n'
                     'X = libtpu_init_args({"a": 1})\nY = OWN({"a": 1})\n', path="recipes/lib/user.rcp")
    assert (to_python(names["X"]), to_python(names["Y"])) == ("--a=1 ", "shadowed")


@pytest.fixture
def own_stdlib(tmp_path_factory, monkeypatch) -> Path:
    """A standard library of the test's own (the package's directory, patched): its files
    are what a changed installation would hold."""
    d = tmp_path_factory.mktemp("site-packages") / "rcpc" / "stdlib"
    d.mkdir(parents=True)
    monkeypatch.setattr(stdlib, "DIRECTORY", d.resolve())
    return d.resolve()


def test_a_standard_library_file_loads_only_standard_library_files(ws, own_stdlib):
    """In a standard library file, ``//`` is the library's root (Bazel: ``//`` in an external
    repository is that repository's) and a relative path stays in it: the workspace's
    ``//b.rcp`` is not read; climbing out is E0206."""
    (own_stdlib / "a.rcp").write_text('load("//b.rcp", "B")\nload("sub/c.rcp", "C")\nA = B + C\n')
    (own_stdlib / "b.rcp").write_text("B = 1\n")
    (own_stdlib / "sub").mkdir()
    (own_stdlib / "sub" / "c.rcp").write_text('load("../b.rcp", B2 = "B")\nC = B2 + 10\n')
    ws.write("b.rcp", "B = 100\n")
    assert to_python(ws.names('load("@rcpc//a.rcp", "A")\nX = A\n')["X"]) == 12
    (own_stdlib / "b.rcp").write_text('load("../../x.rcp", "X")\nB = X\n')
    f = ws.fails('load("@rcpc//a.rcp", "A")\nX = A\n')
    assert f.code == "E0206" and "leaves rcpc's standard library" in f.message


# caches -------------------------------------------------------------------------------------
def test_a_changed_standard_library_file_is_never_replayed_or_served_stale(cached_ws, own_stdlib, monkeypatch,
                                                                            capsys):
    """Build, record (no-op replay), then change the package's file (same size, its old
    mtime restored: only its bytes differ): no replay, and the build (build cache and AST
    cache on, in this process and on disk) gives the new value."""
    monkeypatch.setattr(replay, "RACY_NS", 0)
    lib = own_stdlib / "tiny.rcp"
    lib.write_text("LR = 1e-6\n")
    (cached_ws / "recipes" / "r.rcp").write_text(
        (cached_ws / "recipes" / "r.rcp").read_text().replace('"//recipes/lib/l.rcp"', '"@rcpc//tiny.rcp"'))
    past = time.time() - 3600
    for p in [*cached_ws.rglob("*"), lib]:
        os.utime(p, (past, past), follow_symlinks=False)
    assert run(["build"]) == 0
    assert run(["build"]) == 0   # recorded
    assert replay.serve(["build"], replay.stderr_color()) == 0
    compiler = Compiler(Workspace.find(cached_ws))
    compiler.build(cached_ws / "recipes" / "r.rcp")
    assert compiler.dependency_digests(cached_ws / "recipes" / "r.rcp")[str(lib)]  # keyed on its bytes
    st_before = lib.stat()
    lib.write_text("LR = 2e-6\n")
    os.utime(lib, ns=(st_before.st_atime_ns, st_before.st_mtime_ns))
    capsys.readouterr()
    assert replay.serve(["build"], replay.stderr_color()) is None
    assert run(["build"]) == 0
    assert "learning_rate=2e-6\n" in (cached_ws / "rcpc-out" / "r" / "default" / "trainer.flags").read_text()


# diagnostics --------------------------------------------------------------------------------
LIBRARY = "A = 1\n\ndef f(x):\n    return x + 1\n\nB = 2\n"
FAULTS = ['X = Y\n', 'X = 1 + "a"\n', 'X = maxtext_flags({"steps": "ten"})\n', 'load("//nope.rcp", "Z")\n',
          'X = A\nX = 2\n', 'def g(x):\n    return x.nope\nG = g(1)\n']


@SETTINGS
@given(fault=st.sampled_from(FAULTS), at=st.integers(0, 6))
@example(fault='X = 1 + "a"\n', at=6)
def test_an_error_in_a_standard_library_file_is_shown_at_the_load_as_rcpcs(tmp_path_factory, fault, at):
    """Every error of a faulty standard library file, as ``check`` reports it for a recipe
    that loads it: at the recipe's ``@rcpc//`` load, its place in the file kept, and a note
    that the file is rcpc's."""
    root = tmp_path_factory.mktemp("ws")
    own = tmp_path_factory.mktemp("stdlib")
    lines = LIBRARY.splitlines(keepends=True)
    (own / "lib.rcp").write_text("".join(lines[:at] + [fault] + lines[at:]))
    (root / "rcp.toml").write_text('maxtext_schema = "builtin:maxtext"\n')
    (root / "recipes").mkdir()
    (root / "recipes" / "r.rcp").write_text('load("@rcpc//lib.rcp", "A")\nV = A\n')
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(stdlib, "DIRECTORY", own.resolve())
        from rcpc.api import Workspace as Api

        result = Api(root).check()
    errors = [d for d in result.failures if d.severity == "error"]
    assert errors
    for d in errors:
        assert d.span.path == "recipes/r.rcp" and d.span.line == 1, d
        assert d.related[0][0] == "in rcpc's standard library" and d.related[0][1].path == "@rcpc//lib.rcp"
        assert any("@rcpc//lib.rcp is rcpc's own file" in n for n in d.notes)


def test_an_error_in_a_standard_library_function_is_shown_at_the_call(ws, cli):
    ws.write("recipes/r.rcp", 'load("@rcpc//maxtext_tpu.rcp", "libtpu_init_args")\n\nX = libtpu_init_args(3)\n')
    r = cli("check")
    assert r.code == 1 and "recipes/r.rcp:3:5: error[E0307]" in r.err
    assert "in rcpc's standard library: @rcpc//maxtext_tpu.rcp:" in r.err and "flags.keys()" in r.err  # quoted
    assert "@rcpc//maxtext_tpu.rcp is rcpc's own file, shipped with rcpc" in r.err
    r = cli("check", "--diagnostics", "json")
    (d,) = json.loads(r.err)["diagnostics"]
    assert d["span"]["path"] == "recipes/r.rcp" and d["related"][0]["span"]["path"] == "@rcpc//maxtext_tpu.rcp"
    r = cli("check", "--diagnostics", "sarif")   # the installed file, as code scanning can open it
    (result,) = json.loads(r.out)["runs"][0]["results"]
    assert {"uri": (stdlib.DIRECTORY / "maxtext_tpu.rcp").as_uri()} in [
        loc["physicalLocation"]["artifactLocation"] for loc in result["relatedLocations"]]


def test_a_note_on_a_flag_written_in_the_standard_library_is_at_the_load_and_silenced_there(ws, cli):
    """A flag entry of a standard library layer (``FSDP_MESH``) that MaxText defaults anyway
    (N0331): the note is at the recipe's ``load()`` (no line of the user's files wrote the
    entry), where an ignore comment silences it, as it cannot in rcpc's file."""
    text = ('load("@rcpc//maxtext_tpu.rcp", "FSDP_MESH"){}\n\n'
            'F = maxtext_flags(FSDP_MESH, {{"steps": 1, "model_name": "llama3.1-8b"}})\n'
            'flag_file(name = "trainer", flags = F)\n')
    ws.write("rcp.toml", SCHEMA_TOML)
    ws.write("recipes/r.rcp", text.format(""))
    r = cli("check", "--notes")
    assert r.code == 0 and "recipes/r.rcp:1:6: note[N0331]: 'ici_fsdp_parallelism' is set to its MaxText" in r.err
    assert "@rcpc//maxtext_tpu.rcp:" not in r.err.split("note[N0331]")[0]   # every one at the load
    assert "in rcpc's standard library: @rcpc//maxtext_tpu.rcp:" in r.err and "# rcpc: ignore[N0331]" in r.err
    ws.write("recipes/r.rcp", text.format("  # rcpc: ignore[N0331]"))
    r = cli("check", "--notes")
    assert r.code == 0 and "N0331" not in r.err


def test_the_editor_shows_it_where_check_does(ws):
    from rcpc.lsp.session import Session

    real = ws.write("recipes/r.rcp", 'load("@rcpc//maxtext_tpu.rcp", "libtpu_init_args")\nX = libtpu_init_args(3)\n')
    session = Session(Workspace.find(ws.root))
    (d,) = [d for d in session.diagnostics(real.resolve()) if d.severity == "error"]
    assert str(d.span) == "recipes/r.rcp:2:5" and d.related[0][1].path == "@rcpc//maxtext_tpu.rcp"
    assert session.inside(stdlib.DIRECTORY / "maxtext_tpu.rcp")   # its text is read for positions


def test_a_standard_library_file_checked_on_its_own_keeps_its_place():
    d = Diagnostic("E0301", "x", Span("@rcpc//maxtext_tpu.rcp", 3, 1, 3, 2))
    assert stdlib.attributed(d) == d
    inside = Diagnostic("E0301", "x", Span("@rcpc//a.rcp", 3, 1, 3, 2), related=(("loaded from", Span("@rcpc//b.rcp",
                                                                                                        1, 6, 1, 9)),))
    assert stdlib.attributed(inside) == inside   # no place of the workspace to move it to


@pytest.mark.parametrize("severity", ["error", "warning", "note"])
def test_only_what_can_be_silenced_is_offered_an_ignore_comment(severity):
    """A finding in the standard library, moved to the workspace's call: its note offers
    ``# rcpc: ignore[CODE]`` for a warning or a note, never for an error, which no comment
    silences (E0790 of an XPK workload name offered it: found by a user trial)."""
    d = Diagnostic("E0790" if severity == "error" else "W0707", "x", Span("@rcpc//maxtext_tpu.rcp", 3, 1, 3, 2),
                   severity=severity, related=(("called here", Span("recipes/r.rcp", 2, 5, 2, 9)),))
    moved = stdlib.attributed(d)
    assert str(moved.span) == "recipes/r.rcp:2:5"
    assert ("ignore[" in moved.notes[-1]) == (severity != "error"), moved.notes


# the tools that follow loads ----------------------------------------------------------------
def test_explain_and_lint_follow_standard_library_loads(ws, cli):
    ws.write("rcp.toml", SCHEMA_TOML)
    ws.write("recipes/r.rcp", '''\
        load("@rcpc//maxtext_tpu.rcp", "FSDP_MESH", "SYNTHETIC_DATA")

        F = maxtext_flags(FSDP_MESH, {"steps": 1, "model_name": "llama3.1-8b"})
        flag_file(name = "trainer", flags = F)
        ''')
    line = (stdlib.DIRECTORY / "maxtext_tpu.rcp").read_text().splitlines().index('    "ici_fsdp_parallelism": -1,') + 1
    r = cli("explain", "r", "F", "ici_fsdp_parallelism")
    assert r.code == 0 and f"at @rcpc//maxtext_tpu.rcp:{line}:5" in r.out, r.out + r.err
    r = cli("lint")
    assert "'SYNTHETIC_DATA' is loaded from @rcpc//maxtext_tpu.rcp but never used" in r.err
    r = cli("fmt", str(stdlib.DIRECTORY / "maxtext_tpu.rcp"))
    assert r.code != 0 and "outside the workspace" in r.err   # no workspace writes rcpc's file


def test_rcpc_import_never_writes_the_standard_library(ws, cli, own_stdlib):
    target = own_stdlib / "maxtext_tpu.rcp"
    target.write_text("X = 1\n")
    template = ws.write("t.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    for out in (str(target), str(own_stdlib / "new.rcp")):
        r = cli("import", "manifest", str(template), "-o", out, "--force")
        assert r.code == 1 and "error[E1202]" in r.err and "rcpc's own files are never written" in r.err, r.err
    assert target.read_text() == "X = 1\n" and not (own_stdlib / "new.rcp").exists()


def test_the_editor_offers_labels_and_never_edits_the_standard_library(ws, own_stdlib, monkeypatch):
    """``load("`` completes the standard library's labels; a standard library file opened
    (after go to definition) gets no formatting edit, where a workspace file does."""
    pytest.importorskip("pygls")
    from test_lsp_untrusted import Served

    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    lib = own_stdlib / "tiny.rcp"
    lib.write_text("X   =  1\n")   # not canonical
    recipe = ws.write("recipes/r.rcp", 'load("")\n')
    mine = ws.write("recipes/lib/mine.rcp", "X   =  1\n")
    served = Served(ws.root)
    try:
        options = {"tabSize": 4, "insertSpaces": True}
        for path, edited in ((mine, True), (lib, False)):
            served.open(path.as_uri(), "X   =  1\n")
            got = served.request("textDocument/formatting", {"textDocument": {"uri": path.as_uri()},
                                                             "options": options})
            assert bool(got["result"]) is edited, got
        served.open(recipe.as_uri(), 'load("")\n')
        got = served.request("textDocument/completion", {"textDocument": {"uri": recipe.as_uri()},
                                                         "position": {"line": 0, "character": 6}})
        items = got["result"]["items"] if isinstance(got["result"], dict) else got["result"]
        assert {"@rcpc//tiny.rcp", "//recipes/lib/mine.rcp"} <= {i["label"] for i in items}
    finally:
        served.close()


def test_diff_rev_in_rcpcs_own_repository_loads_each_sides_standard_library(tmp_path, monkeypatch, capsys):
    """Where the running rcpc's standard library is a directory of the repository (rcpc's
    own), ``rcpc diff --rev`` compiles the revision with the revision's files: a change to
    ``@rcpc//`` files is reviewed as the change of the renders that load them."""
    from rcpc.cli import main
    from test_diff_rev import GIT_ENV, git

    repo = tmp_path / "repo"
    lib = repo / "compiler" / "rcpc" / "stdlib"
    lib.mkdir(parents=True)
    (lib / "tiny.rcp").write_text("LR = 1e-6\n")
    (repo / "rcp.toml").write_text("")
    (repo / "recipes").mkdir()
    (repo / "recipes" / "r.rcp").write_text(
        'load("@rcpc//tiny.rcp", "LR")\n\nflag_file(name = "trainer", flags = maxtext_flags({"learning_rate": LR}))\n')
    for k, v in GIT_ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    monkeypatch.setattr(stdlib, "DIRECTORY", lib.resolve())
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    (lib / "tiny.rcp").write_text("LR = 2e-6\n")
    monkeypatch.chdir(repo)
    capsys.readouterr()
    assert main(["diff", "--rev", "HEAD", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (d,) = [d for d in doc["renders"] if d["status"] == "changed"]
    assert d["flags"] == [{"key": "learning_rate", "old": "1e-6", "new": "2e-6"}]
