"""A custom build is recorded in the output's provenance (docs/cli.md, Output directory): the
generation's manifest lists, per recipe and variant built with ``--values``/``--set``/``--flag``,
every override in the order it was layered (values files with their SHA-256 and the params they
set, ``--set`` items as typed, ``--flag`` items), and a build without any writes exactly the
manifest and renders it always did."""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import rcpc.build.parallel
from rcpc.api import Workspace as Api
from rcpc.cli import main
from rcpc.core.diagnostics import CompileError

RECIPE = '''STEPS = param(int, default = 10)
NAME = param(str, default = "base")
PROFILE = param(bool, default = False)
F = maxtext_flags({"steps": STEPS, "run_name": NAME}, {"profiler": "xplane"} if PROFILE else {})
flag_file(name = "trainer", flags = F)
command_file(name = "launch", argv = ["bash", "-c", f"python3 -m MaxText.train base.yml {F.shell}"])
variant("default")
variant("long", set = {"STEPS": 100})
'''
TOML = {"STEPS": lambda v: str(v), "NAME": lambda v: json.dumps(v), "PROFILE": lambda v: "true" if v else "false"}
VALUE = {"STEPS": st.integers(-1, 10 ** 6), "NAME": st.text("abc XYZ_-.:/", max_size=8), "PROFILE": st.booleans()}
SET_TEXT = {"STEPS": st.integers(0, 999).map(str), "NAME": st.text("abc XYZ_-.=:", max_size=8),
            "PROFILE": st.sampled_from(["true", "false"])}


def _workspace(root: Path) -> Api:
    (root / "recipes").mkdir(parents=True, exist_ok=True)
    (root / "rcp.toml").write_text('maxtext_schema = "builtin:maxtext"\n')
    (root / "recipes" / "r.rcp").write_text(RECIPE)
    return Api(root)


def _manifest(out: Path) -> bytes:
    return (out / ".rcpc" / "current" / ".manifest").read_bytes()


def _tree(out: Path) -> dict:
    """{variant/render: bytes} of recipe r's output."""
    top = (out / "r").resolve()
    return {p.relative_to(top).as_posix(): p.read_bytes() for p in sorted(top.rglob("*")) if p.is_file()}


_values_file = st.lists(st.sampled_from(sorted(VALUE)), unique=True, max_size=3).flatmap(
    lambda names: st.tuples(*(st.tuples(st.just(n), VALUE[n]) for n in names)))
_set = st.sampled_from(sorted(SET_TEXT)).flatmap(lambda n: SET_TEXT[n].map(lambda t: f"{n}={t}"))
_flag = st.tuples(st.sampled_from(["trainer", "trainer.flags", "launch", "launch.sh"]),
                  st.one_of(st.tuples(st.just("steps"), st.integers(0, 10 ** 6).map(str)),
                            st.tuples(st.just("run_name"), st.text("abcXYZ_-.:", min_size=1, max_size=8))))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(_values_file, max_size=3), sets=st.lists(_set, max_size=3), flags=st.lists(_flag, max_size=3),
       base=st.sampled_from([None, "long"]))
@example(files=[(("NAME", "prod"), ("STEPS", 2000))], sets=["STEPS=10"], flags=[("trainer", ("steps", "30"))],
         base=None)  # the build: --values clusters/prod.toml --set STEPS=10 --flag trainer.steps=30
@example(files=[], sets=[], flags=[("trainer", ("steps", "7"))], base="long")  # --variant long --flag
def test_the_manifest_lists_exactly_the_overrides_given_in_the_order_they_were_layered(
        tmp_path, monkeypatch, files, sets, flags, base):
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(root / "cache"))
    api = _workspace(root)
    out = root / "out"
    # a plain build: the manifest and renders a build without overrides always wrote
    api.build().write(out)
    plain_manifest, plain_tree = _manifest(out), _tree(out)
    assert b"provenance" not in plain_manifest
    paths = []
    for i, items in enumerate(files):
        (root / "clusters").mkdir(exist_ok=True)
        path = root / "clusters" / f"v{i}.toml"
        path.write_text("# values\n" + "".join(f"{n} = {TOML[n](v)}\n" for n, v in items))
        paths.append(str(path))
    flag_items = [f"{render}.{key}={value}" for render, (key, value) in flags]
    if not (paths or sets or flag_items):
        flag_items = ["trainer.steps=1"]
        flags = [("trainer", ("steps", "1"))]
    params = bool(paths or sets)
    api.build(variant=None if params else base, sets=sets, values=paths, flags=flag_items).write(out)
    record = json.loads(_manifest(out))["provenance"]
    want = [{"kind": "values", "path": f"clusters/v{i}.toml", "params": [n for n, _ in items],
             "sha256": hashlib.sha256(Path(paths[i]).read_bytes()).hexdigest()} for i, items in enumerate(files)]
    want += [{"kind": "set", "name": s.split("=", 1)[0], "value": s.split("=", 1)[1]} for s in sets]
    want += [{"kind": "flag", "render": render, "key": key, "value": value} for render, (key, value) in flags]
    assert record == {"r": {"custom": {"overrides": want, **({} if params else {"variant": base or "default"})}}}
    # the declared variants' outputs are untouched; a plain build of every variant keeps custom and its record
    assert {k: v for k, v in _tree(out).items() if not k.startswith("custom/")} == plain_tree
    api.build().write(out)
    assert json.loads(_manifest(out))["provenance"] == record
    # a build of named variants only, into a new directory, writes the manifest a plain build always did
    fresh = root / "fresh"
    api.build().write(fresh)
    assert _manifest(fresh) == plain_manifest and _tree(fresh) == plain_tree


def test_a_record_stays_with_its_output_and_goes_with_it(tmp_path, monkeypatch):
    """Each recipe's custom output keeps its own record while another recipe is built; a
    build of every recipe drops the output, and the record, of a recipe that no longer
    exists; the same renders made by other overrides are a new record."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    api = _workspace(tmp_path)
    (tmp_path / "recipes" / "q.rcp").write_text(RECIPE)
    out = tmp_path / "out"
    api.build(["r"], sets=["STEPS=5"]).write(out)
    api.build(["q"], flags=["trainer.steps=6"]).write(out)
    records = json.loads(_manifest(out))["provenance"]
    assert records["r"]["custom"]["overrides"] == [{"kind": "set", "name": "STEPS", "value": "5"}]
    assert records["q"]["custom"] == {"overrides": [{"kind": "flag", "render": "trainer", "key": "steps",
                                                     "value": "6"}], "variant": "default"}
    (tmp_path / "clusters.toml").write_text("STEPS = 5\n")
    assert api.build(["r"], values=[str(tmp_path / "clusters.toml")]).write(out) == 0  # same renders
    assert json.loads(_manifest(out))["provenance"]["r"]["custom"]["overrides"][0]["kind"] == "values"
    (tmp_path / "recipes" / "q.rcp").unlink()
    Api(tmp_path).build().write(out)
    assert set(json.loads(_manifest(out))["provenance"]) == {"r"}


def test_a_values_file_changed_while_it_was_built_is_refused(tmp_path, monkeypatch):
    """The record's SHA-256 is of the bytes the renders were built from: a values file
    rewritten after a cached build read it, before its record is made, is E0630, nothing
    written."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)
    _workspace(tmp_path)
    values = tmp_path / "v.toml"
    values.write_text("STEPS = 5\n")
    Api(tmp_path).build(values=[str(values)])  # fills the build cache
    compile_recipes = rcpc.build.parallel.compile_recipes

    def then_edit(*args, **kwargs):
        result = compile_recipes(*args, **kwargs)  # from the cache: this process read nothing
        values.write_text("STEPS = 6\n")
        return result

    monkeypatch.setattr(rcpc.build.parallel, "compile_recipes", then_edit)
    with pytest.raises(CompileError) as info:
        Api(tmp_path).build(values=[str(values)])
    d = info.value.diagnostics[0]
    assert d.code == "E0630" and "v.toml changed while rcpc built with it" in d.message


def test_a_damaged_record_is_a_damaged_manifest(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _workspace(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["build", "r", "--set", "STEPS=3"]) == 0
    manifest = Path("rcpc-out/.rcpc/current/.manifest").resolve()
    data = json.loads(manifest.read_text())
    data["provenance"]["r"]["gone"] = data["provenance"]["r"]["custom"]  # a variant the output lacks
    manifest.write_text(json.dumps(data))
    assert main(["build", "r", "--set", "STEPS=4"]) == 1
    assert "error[E0912]" in capsys.readouterr().err


# (argv of the second build, what its status line says it wrote): after `rcpc build r --set STEPS=5`
STATUS_CASES = [
    (["build", "r", "--set", "STEPS=5"], "0 of 1 variant directory written)"),  # nothing changed
    (["build", "r", "--values", "v.toml"], "0 of 1 variant directory written; the record of overrides (provenance) "
                                           "written)"),  # the same renders, by other overrides: only the record
    (["build", "r", "--set", "STEPS=6"], "1 of 1 variant directory written; the record of overrides (provenance) "
                                         "written)"),
    (["build", "r", "--variant", "long"], "1 of 1 variant directory written)"),  # custom kept as it was
    (["build"], "2 of 2 variant directories written)"),
]


@pytest.mark.parametrize("argv, said", STATUS_CASES, ids=["same", "record-only", "renders-and-record", "variant",
                                                          "whole"])
def test_the_status_line_says_what_a_build_wrote(tmp_path, monkeypatch, capsys, argv, said):
    """Issue 39: a build whose renders were unchanged but whose record of overrides changed
    said "0 of 1 variant directory written" though it wrote a new manifest."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _workspace(tmp_path)
    (tmp_path / "v.toml").write_text("STEPS = 5\n")
    monkeypatch.chdir(tmp_path)
    assert main(["build", "r", "--set", "STEPS=5"]) == 0
    before = _manifest(tmp_path / "rcpc-out")
    capsys.readouterr()
    assert main(argv) == 0
    status = capsys.readouterr().err.strip().splitlines()[-1]
    assert status.endswith(said), status
    assert (_manifest(tmp_path / "rcpc-out") == before) == (said == STATUS_CASES[0][1])


def test_the_status_line_says_a_build_removed_what_it_no_longer_makes(tmp_path, monkeypatch, capsys):
    """A variant no longer declared: its directory leaves the output though no directory is written."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _workspace(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["build"]) == 0
    Path("recipes/r.rcp").write_text(RECIPE.replace('variant("long", set = {"STEPS": 100})\n', ""))
    capsys.readouterr()
    assert main(["build"]) == 0
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        "(0 of 1 variant directory written; variant directories of other builds removed)")
    assert not Path("rcpc-out/r/long").exists()
