"""Values files (``--values FILE.toml``, docs/cli.md, Values files): layered like ``--set``
(later files win, ``--set`` wins over files), each value typed by its param, an unknown param
at its key with did-you-mean, a wrong type at the value, read under the limits and
confinement of every input, and a dependency of the build (cache and replay)."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.cli import main
from rcpc.core.diagnostics import CompileError
from rcpc.core.limits import MAX_FILE_BYTES
from rcpc.core.values import to_python
from rcpc.domain.overrides import Overrides
from rcpc.domain.recipe import Compiler
from rcpc.domain.workspace import Workspace

NAMES = ("PROJECT", "ZONE", "STEPS")
RECIPE = """PROJECT = param(str, default = "dev")
ZONE = param(str, default = "us-central2-b")
STEPS = param(int, default = 10)
PROFILE = param(bool, default = False)
LR = param(float, default = 0.001)
manifest(name = "m", apiVersion = "v1", kind = "ConfigMap",
         data = {"project": PROJECT, "zone": ZONE, "steps": str(STEPS)})
"""
PARAM_TYPES = {"PROJECT": "str", "STEPS": "int", "PROFILE": "bool", "LR": "float"}


def _workspace(root: Path) -> Path:
    (root / "recipes").mkdir(parents=True, exist_ok=True)
    (root / "rcp.toml").write_text("", encoding="utf-8")
    (root / "recipes" / "r.rcp").write_text(RECIPE, encoding="utf-8")
    return (root / "recipes" / "r.rcp").resolve()


def _bindings(root: Path, files: list[str], sets: list[str] = ()) -> dict:
    compiler = Compiler(Workspace.find(root))
    return compiler.bindings(_workspace(root), Overrides.of(list(sets), [str(root / f) for f in files]))


def _fails(root: Path, files: list[str], sets: list[str] = ()) -> CompileError:
    compiler = Compiler(Workspace.find(root))
    with pytest.raises(CompileError) as info:
        compiler.build(_workspace(root), None, Overrides.of(list(sets), [str(root / f) for f in files]))
    return info.value.diagnostics[0]


_layer = st.dictionaries(st.sampled_from(NAMES), st.integers(0, 99))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(_layer, max_size=4), sets=_layer)
@example(files=[{"PROJECT": 1, "STEPS": 1}, {"STEPS": 2}], sets={"PROJECT": 3})
def test_layering_later_files_win_and_set_wins_over_files(tmp_path, files, sets):
    """Each param's value is its last --set item's, else the last file's that sets it, else
    its default (Helm's -f / --set order)."""
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    written = []
    for i, layer in enumerate(files):
        text = "".join(f'{k} = {v}\n' if k == "STEPS" else f'{k} = "v{v}"\n' for k, v in layer.items())
        (root / f"v{i}.toml").write_text(text, encoding="utf-8")
        written.append(f"v{i}.toml")
    items = [f"{k}={v}" if k == "STEPS" else f"{k}=s{v}" for k, v in sets.items()]
    got = _bindings(root, written, items)
    for name, default in (("PROJECT", "dev"), ("ZONE", "us-central2-b"), ("STEPS", 10)):
        want = default
        for layer in files:
            if name in layer:
                want = layer[name] if name == "STEPS" else f"v{layer[name]}"
        if name in sets:
            want = sets[name] if name == "STEPS" else f"s{sets[name]}"
        assert to_python(got[name]) == want, name


def _toml(value) -> str:
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is str:
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


_text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=20)
_scalars = st.one_of(st.booleans(), st.integers(-(2 ** 63), 2 ** 63 - 1),
                     st.floats(allow_nan=False, allow_infinity=False), _text)
_KINDS = {bool: "bool", int: "int", float: "float", str: "str"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(PARAM_TYPES)), value=_scalars, pad=st.integers(0, 3))
@example(name="STEPS", value="200", pad=0)
@example(name="LR", value=3, pad=1)
def test_each_value_is_typed_by_its_param(tmp_path, name, value, pad):
    """A value of the param's type (an int for a float param too, as in a recipe) is taken
    as written; any other is E0602 at the value's line and column."""
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    written = _toml(value)
    (root / "v.toml").write_text(f"# cluster values\n{' ' * pad}{name} ={' ' * pad} {written}\n", encoding="utf-8")
    kind = _KINDS[type(value)]
    if kind == PARAM_TYPES[name] or (kind, PARAM_TYPES[name]) == ("int", "float"):
        got = to_python(_bindings(root, ["v.toml"])[name])
        assert got == value and (type(got) is not float or math.copysign(1, got) == math.copysign(1, value))
    else:
        d = _fails(root, ["v.toml"])
        assert (d.code, d.span.path, d.span.line, d.span.col) == ("E0602", "v.toml", 2, 2 * pad + len(name) + 4)


MISSPELT = ["STEPZ", "PROJCT", "ZONES", "LRR", "BSS", "REMATT"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(in_files=st.lists(st.lists(st.sampled_from(MISSPELT), unique=True, max_size=3), max_size=2),
       in_sets=st.lists(st.sampled_from(MISSPELT), unique=True, max_size=3))
@example(in_files=[["BSS", "REMATT"]], in_sets=[])  # the report: the second key was not reported
def test_every_unknown_param_is_reported_at_once(tmp_path, in_files, in_sets):
    """Every key of the values files and every ``--set`` name that is not a param is an
    ``E0601``, all in one run, in order (files first, as they are read, then ``--set``)."""
    if not any(in_files) and not in_sets:
        return
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    names = []
    for i, keys in enumerate(in_files):
        (root / f"v{i}.toml").write_text("".join(f"{k} = 1\n" for k in keys) + "STEPS = 3\n")
        names.append(f"v{i}.toml")
    compiler = Compiler(Workspace.find(root))
    with pytest.raises(CompileError) as info:
        compiler.build(_workspace(root), None, Overrides.of([f"{k}=1" for k in in_sets],
                                                            [str(root / f) for f in names]))
    found = [(d.code, d.message.split("'")[1] if d.message.startswith("values") else d.message.split()[1].rstrip(":"))
             for d in info.value.diagnostics]
    assert found == [("E0601", k) for keys in in_files for k in keys] + [("E0601", k) for k in in_sets]


def test_unknown_params_are_reported_up_to_the_error_limit(tmp_path):
    """Every unknown param at once, up to MAX_ERRORS, then E0808 (as a file's name errors): a
    values file of 30,000 misspelt keys printed 150,000 lines."""
    from rcpc.core.limits import MAX_ERRORS

    root = Path(tempfile.mkdtemp(dir=tmp_path))
    (root / "v.toml").write_text("".join(f"K{i} = 1\n" for i in range(MAX_ERRORS + 5)))
    compiler = Compiler(Workspace.find(root))
    with pytest.raises(CompileError) as info:
        compiler.build(_workspace(root), None, Overrides.of(["Z=1"], [str(root / "v.toml")]))
    codes = [d.code for d in info.value.diagnostics]
    assert codes == ["E0601"] * MAX_ERRORS + ["E0808"]
    assert info.value.diagnostics[-1].span.line == MAX_ERRORS + 1


_key = st.sampled_from(["{}", '"{}"', "'{}'"])
_noise = st.sampled_from(["", "# STEPZ = 1\n", 'PROJECT = """\nSTEPZ = "no"\n"""\n',
                          "ZONE = '''\n[STEPZ]\nSTEPZ = 2 '''\n", "\n", "PROFILE = true # [not a table]\n",
                          'LR = 1e-3\nPROJECT = "a # b [c]"\n'])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=_noise, spelling=_key, after=_noise)
@example(before='PROJECT = """\nSTEPZ = "no"\n"""\n', spelling="{}", after="")
def test_unknown_param_is_reported_at_its_key(tmp_path, before, spelling, after):
    """A key that is not a param is E0601 at its key (whatever comes before: comments,
    multi-line strings whose lines look like keys or tables), with the closest param."""
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    if {ln.split(" =")[0] for ln in before.splitlines() if " = " in ln} & \
            {ln.split(" =")[0] for ln in after.splitlines() if " = " in ln}:
        after = ""  # a TOML key once
    lines = before.count("\n")
    (root / "v.toml").write_text(before + spelling.format("STEPZ") + " = 1\n" + after, encoding="utf-8")
    d = _fails(root, ["v.toml"])
    assert (d.code, d.span.line, d.span.col) == ("E0601", lines + 1, 1)
    assert d.span.end_col == 1 + len(spelling.format("STEPZ"))
    assert "did you mean 'STEPS'" in d.hint


@pytest.mark.parametrize("text, code, where", [
    ("STEPS = 1 1\n", "E0631", (1, 11)),
    ("[cluster]\nSTEPS = 1\n", "E0632", (1, 1)),
    ("cluster.STEPS = 1\n", "E0632", (1, 1)),
    ("STEPS = [1]\n", "E0632", (1, 9)),
    ("STEPS = 1979-05-27\n", "E0632", (1, 9)),
    ("LR = nan\n", "E0632", (1, 6)),
    ("STEPS = 9223372036854775808\n", "E0632", (1, 9)),
    ("PROJECT = \"\xff\"\n".encode("latin-1"), "E0003", (1, 1)),
])
def test_what_is_no_values_file_is_refused_where_it_is(tmp_path, text, code, where):
    _workspace(tmp_path)
    p = tmp_path / "v.toml"
    (p.write_bytes if type(text) is bytes else p.write_text)(text)
    d = _fails(tmp_path, ["v.toml"])
    assert (d.code, (d.span.line, d.span.col)) == (code, where)


_REFUSED = ["[1]", "{a = 1}", "1979-05-27", "07:32:00", "nan", "-inf", "9223372036854775808"]
_KEPT = ["1", "true", "0.5", '"s"']


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.sampled_from(_REFUSED + _KEPT), max_size=24))
@example(values=["[1, 2]", "1979-05-27"])  # the report: an array, then a date: the date was not reported
@example(values=["[1]"] * 21 + ["1"])  # past the limit
def test_every_value_no_param_can_hold_is_reported_at_once(values):
    """Each value of a values file that no param can hold (an array, a table, a date or time,
    nan or inf, an integer outside 64 bits) is an E0632 at its value, all in one run in the
    file's order, up to MAX_ERRORS, then E0808 at the next one."""
    from rcpc.core.limits import MAX_ERRORS
    from rcpc.domain.valuesfile import read_values

    text = "".join(f"P{i} = {v}\n" for i, v in enumerate(values))
    refused = [i + 1 for i, v in enumerate(values) if v not in _KEPT]
    if not refused:
        assert set(read_values(text, "v.toml").values) == {f"P{i}" for i in range(len(values))}
        return
    with pytest.raises(CompileError) as info:
        read_values(text, "v.toml")
    found = [(d.code, d.span.line) for d in info.value.diagnostics]
    want = [("E0632", n) for n in refused[:MAX_ERRORS]]
    if len(refused) > MAX_ERRORS:
        want.append(("E0808", refused[MAX_ERRORS]))
    assert found == want


def test_limits_and_confinement(tmp_path):
    """Over MAX_FILE_BYTES is E0803 before reading; a FIFO, a directory or a missing file
    E0630; a symlink inside the workspace leading out E0906 (not read); a file named
    outside the workspace is read (the user named it)."""
    _workspace(tmp_path / "ws")
    root = tmp_path / "ws"
    with open(root / "big.toml", "wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)
    assert _fails(root, ["big.toml"]).code == "E0803"
    os.mkfifo(root / "fifo.toml")
    assert _fails(root, ["fifo.toml"]).code == "E0630"
    assert _fails(root, ["missing.toml"]).code == "E0630"
    (tmp_path / "secret.toml").write_text('STEPS = "secret"\n')
    (root / "link.toml").symlink_to(tmp_path / "secret.toml")
    d = _fails(root, ["link.toml"])
    assert d.code == "E0906" and "secret" not in str(d)
    assert to_python(_bindings(root, ["../secret.toml"], ["STEPS=3"])["STEPS"]) == 3


def test_cli_build_records_the_file_and_misses_cache_and_replay_when_it_changes(tmp_path, monkeypatch, capsys):
    """build --values: variant custom; an edited values file is built again (the build
    cache and the no-op replay both key on its bytes); explain says where a value came from."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "ws"
    _workspace(root)
    (root / "recipes" / "f.rcp").write_text(
        'STEPS = param(int, default = 10)\nF = maxtext_flags({"steps": STEPS})\nflag_file(name = "t", flags = F)\n')
    monkeypatch.chdir(root)
    (root / "prod.toml").write_text("STEPS = 100\n")
    for _ in range(2):
        assert main(["build", "f", "--values", "prod.toml"]) == 0
    (root / "prod.toml").write_text("STEPS = 200\n")
    assert main(["build", "f", "--values", "prod.toml"]) == 0
    assert (root / "rcpc-out/f/custom/t.flags").read_text() == "steps=200\n"
    assert main(["build", "f", "--values", "prod.toml", "--set", "STEPS=300"]) == 0
    assert (root / "rcpc-out/f/custom/t.flags").read_text() == "steps=300\n"
    capsys.readouterr()
    assert main(["explain", "f", "F", "steps", "--values", "prod.toml"]) == 0
    assert "value from prod.toml:1:9" in capsys.readouterr().out
    assert main(["build", "f", "--values", "prod.toml", "--variant", "default"]) == 2
