"""``rcpc import manifest`` (issue 19): every published TPU JobSet template
(../shared/data/tpu-recipes/*.yaml) becomes a recipe whose render equals the template after
envsubst, the proof is the import's own, and the recipe is fmt-canonical and lint clean.

The oracle of the proof's envsubst is the real envsubst(1) binary (gettext), run with the same
SHELL-FORMAT on every template.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
from pathlib import Path
from unittest import mock

import attrs
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rcpc.cli import main
from rcpc.core.fmt import format_source
from rcpc.domain.lint import lint
from rcpc.domain.workspace import Workspace
from rcpc.importer import proof
from rcpc.importer.command import parse_commands
from rcpc.importer.driver import import_manifest

REPO = Path(__file__).resolve().parents[1]
TEMPLATES = REPO.parent / "shared" / "data" / "tpu-recipes"
ALL = sorted(p.name for p in TEMPLATES.glob("*.yaml"))
# What each template imports as: the shared library's function (@rcpc//maxtext_tpu.rcp)
# and the startup command function passed to it, read off the template and proven equal. The
# hand ports (recipes/tpu_recipes/) are written with the same functions.
IMPORTS = {
    "deepseek3-671b_4k-bf16-tpu7x-4x4x8.yaml": "maxtext_jobset",
    "deepseek3-671b_4k-bf16-tpu7x-4x8x8.yaml": "xpk_generated_jobset with xpk_generated_command",
    "deepseek3-671b_4k-fp8-tpu7x-4x4x8.yaml": "maxtext_jobset",
    "gemma4-26b_4k-bf16-tpu7x-4x4x4.yaml": "xpk_generated_jobset with xpk_generated_command",
    "gemma4-2b_8k-bf16-tpu7x-4x4x4.yaml": "xpk_generated_jobset with xpk_generated_command",
    "gemma4-31b_8k-bf16-tpu7x-4x4x4.yaml": "xpk_generated_jobset with xpk_generated_command",
    "gemma4-4b_8k-bf16-tpu7x-4x4x4.yaml": "xpk_generated_jobset with xpk_generated_command",
    "gpt-oss-120b_8k-bf16-tpu7x-4x4x4.yaml": "maxtext_jobset",
    "llama3.1-70b_8k-bf16-tpu7x-4x4x4.yaml": "maxtext_jobset",
    "llama3.1-70b_8k-bf16-tpu7x-4x8x8.yaml": "maxtext_jobset",
    "llama3.1-70b_8k-fp8-tpu7x-4x4x4.yaml": "xpk_jobset with xpk_command",
    "qwen3-235b-a22b_4k-bf16-tpu7x-4x8x8.yaml": "xpk_jobset with xpk_command",
    "wan2.1-14b_bf16-tpu7x-4x4x4.yaml": "xpk_jobset with xpk_maxdiffusion_command",
}


def _nonblank(text: str) -> int:
    """Characters other than whitespace and comments (as bench/ports.py counts)."""
    return sum(len(re.sub(r"\s+", "", ln.split("#", 1)[0] if not ln.lstrip().startswith("#") else ""))
               for ln in text.splitlines())


def test_thirteen_templates():
    assert len(ALL) == 13 and sorted(IMPORTS) == ALL


@pytest.mark.parametrize("name", ALL)
def test_candidates_read_the_shape_off_the_template(name):
    """Before any proof: the functions whose shape the template has are the one it imports as
    (and, for a hand-written recipe's shape, maxtext_jobset's longer form xpk_jobset), so an
    import builds one call, not every candidate."""
    from rcpc.importer.library import CANDIDATES
    from rcpc.importer.manifest import read

    template = read(TEMPLATES / name, name, {}, None)
    shapes = [c.shape for c in CANDIDATES if c.extract(template) is not None]
    expect = [IMPORTS[name]] + (["xpk_jobset with xpk_command"] if IMPORTS[name] == "maxtext_jobset" else [])
    assert shapes == expect


# use_random_routing=True with an expert-parallel rank of 1 (the ports leave it out)
REFUSED = {"deepseek3-671b_4k-bf16-tpu7x-4x4x8.yaml", "gpt-oss-120b_8k-bf16-tpu7x-4x4x4.yaml",
           "qwen3-235b-a22b_4k-bf16-tpu7x-4x8x8.yaml"}


@pytest.mark.parametrize("name", ALL)
def test_every_template_imports_equal(name, tmp_path):
    ws = Workspace.find(REPO)
    imported = import_manifest(ws, TEMPLATES / name, name, {}, None)
    assert format_source(imported.text, "x.rcp") == imported.text  # canonical
    # proven again here, independently of the import's choice, and with a third set of values
    out = tmp_path / "r.rcp"
    out.write_text(imported.text)
    assert imported.check(proof.fresh_compiler(REPO), out) == []
    values = {"WORKLOAD_NAME": "q3-0", "WORKLOAD_IMAGE": "gcr.io/p-1/runner@sha256:" + "0a" * 32,
              "BASE_OUTPUT_DIR": "gs://tpu-runs_eu-1/exp=lr-3e-4/v1.2+rc/", "DATASET_DIR": "gs://d/ata"}
    values = {k: v for k, v in values.items() if k in re.findall(r"\$\{(\w+)\}", (TEMPLATES / name).read_text())}
    # the templates MaxText's pinned schema refuses (E0350): rendered as evaluated, W1208 said
    refused = any(d.code == "W1208" for d in imported.notes)
    assert refused is (name in REFUSED)
    renders = (proof.renders if refused else proof.build)(proof.fresh_compiler(REPO), out, values)
    (text,) = renders.values()
    assert yaml.safe_load(text) == yaml.safe_load(_real_envsubst(TEMPLATES / name, values))
    # a call of the library function: shorter than the template, and lint clean
    assert imported.how == f"a call of {IMPORTS[name]}"
    for function in IMPORTS[name].split(" with "):
        assert f"\n{function}(" in imported.text or f"    {function}(" in imported.text
    assert "COMMAND =" not in imported.text and "jobset(\n    name =" not in imported.text  # no literal left
    assert _nonblank(imported.text) < _nonblank((TEMPLATES / name).read_text())
    assert [d.code for d in lint(proof.fresh_compiler(REPO), [out])] == (["E0350"] if refused else [])
    assert "TPU_WORKER_ID =" not in imported.text  # read by the pod's shell: kept literal


def _real_envsubst(template: Path, values: dict) -> str:
    exe = shutil.which("envsubst")
    if exe is None:
        pytest.fail("envsubst not found: install gettext-base (the oracle of this test)")
    fmt = " ".join("${%s}" % k for k in values)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", **values}
    return subprocess.run([exe, fmt], input=template.read_bytes(), env=env, capture_output=True,
                          check=True).stdout.decode()


@pytest.mark.parametrize("name", ALL)
def test_our_envsubst_is_envsubst(name):
    text = (TEMPLATES / name).read_text()
    values = proof.other_values({k: "" for k in dict.fromkeys(re.findall(r"\$\{(\w+)\}", text))
                                 if k != "TPU_WORKER_ID"})
    assert proof.envsubst(text, values) == _real_envsubst(TEMPLATES / name, values)


def _run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_cli_writes_lint_clean_recipe_and_refuses_to_overwrite(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    src = str(TEMPLATES / "gpt-oss-120b_8k-bf16-tpu7x-4x4x4.yaml")
    out = tmp_path / "r.rcp"
    code, stdout, err = _run(["import", "manifest", src, "-o", str(out), "--set", "WORKLOAD_NAME=gpt-oss"], capsys)
    assert code == 0, err
    assert stdout == ""
    assert "equal (a call of maxtext_jobset)" in err and f"wrote {out}" in err
    # the key MaxText's schema does not know is named on stderr, at its word in the template,
    # and in the recipe
    line = next(i for i, ln in enumerate(Path(src).read_text().splitlines(), 1) if " fsdp_shard_on_exp=" in ln)
    col = Path(src).read_text().splitlines()[line - 1].index(" fsdp_shard_on_exp=") + 2
    assert f"{src}:{line}:{col}: warning[W1200]: TODO(import)" in err and "fsdp_shard_on_exp" in err
    text = out.read_text()
    assert "# TODO(import)" in text and 'default = "gpt-oss"' in text
    before = out.read_bytes()
    code, _, err = _run(["import", "manifest", src, "-o", str(out)], capsys)
    assert code == 1 and "error[E1202]" in err and "--force" in err
    assert out.read_bytes() == before
    code, _, err = _run(["import", "manifest", src, "-o", str(out), "--force"], capsys)
    assert code == 0 and "equal" in err
    code, _, err = _run(["import", "manifest", src, "-o", str(tmp_path)], capsys)
    assert code == 1 and "is a directory" in err


def test_flag_words_without_a_spelling_stay_shell_text(tmp_path, monkeypatch, capsys):
    """A value in double quotes has no maxtext_flags spelling (the shell form writes single
    quotes): the flags stay shell text, named at their word, and no library call renders the
    command as written, so the import is a data literal, still equal."""
    monkeypatch.chdir(REPO)
    src = tmp_path / "fp8.yaml"
    text = (TEMPLATES / "llama3.1-70b_8k-fp8-tpu7x-4x4x4.yaml").read_text()
    word = "weight_quantization_calibration_method='fixed,-224,224'"
    assert word in text
    src.write_text(text.replace(word, word.replace("'", '"')))
    code, out, err = _run(["import", "manifest", str(src)], capsys)
    assert code == 0, err
    line = next(i for i, ln in enumerate(src.read_text().splitlines(), 1) if "weight_quantization_calib" in ln)
    assert f"{src}:{line}:" in err and "warning[W1200]: TODO(import)" in err
    assert "equal (a data literal)" in err and "# TODO(import)" in out and "maxtext_flags(" not in out


def test_no_candidate_is_trusted(tmp_path):
    """A template of a library function's shape that differs from it in one field: each
    candidate that reads it is built and compared, and the import is the data literal."""
    src = tmp_path / "t.yaml"
    text = (TEMPLATES / "llama3.1-70b_8k-bf16-tpu7x-4x4x4.yaml").read_text()
    assert text.count("backoffLimit: 0") == 1
    src.write_text(text.replace("backoffLimit: 0", "backoffLimit: 3"))
    imported = import_manifest(Workspace.find(REPO), src, "t.yaml", {}, None)
    assert imported.how.startswith("a data literal (no library function renders it: maxtext_jobset: ")
    assert "xpk_jobset with xpk_command: " in imported.how and "backoffLimit" in imported.how
    out = tmp_path / "r.rcp"
    out.write_text(imported.text)
    assert imported.check(proof.fresh_compiler(REPO), out) == []


def test_cli_stdout_is_the_recipe(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    code, out, err = _run(["import", "manifest", str(TEMPLATES / "llama3.1-70b_8k-bf16-tpu7x-4x4x4.yaml")], capsys)
    assert code == 0
    assert out.startswith("# Imported from") and "maxtext_jobset(" in out
    assert "equal (a call of maxtext_jobset)" in err


@pytest.mark.parametrize("text, code", [
    ("a: [\n", "E1103"),                                      # not YAML
    ("- 1\n- 2\n", "E1103"),                                  # not a mapping
    ("kind: A\n---\nkind: B\n", "E1200"),                     # two documents
    ("apiVersion: v1\nkind: ConfigMap\n", "E1200"),           # no metadata
])
def test_bad_input_is_located_and_writes_nothing(text, code, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    out = tmp_path / "r.rcp"
    rc, stdout, err = _run(["import", "manifest", str(bad), "-o", str(out)], capsys)
    assert rc == 1 and f"error[{code}]" in err and stdout == ""
    assert not out.exists()


@pytest.mark.parametrize("spec", ["x", "[1]", "{replicatedJobs: x}", "{replicatedJobs: [{template: [x]}]}",
                                  "{replicatedJobs: [{template: {spec: {template: {spec: {containers: 1}}}}}]}"])
def test_a_manifest_of_another_shape_is_a_data_literal(spec, tmp_path, monkeypatch, capsys):
    """A spec that is not a JobSet's (a string, a list, a replicatedJobs of other shapes)
    imports as a data literal, equal, without a traceback."""
    monkeypatch.chdir(REPO)
    src = tmp_path / "t.yaml"
    src.write_text(f"apiVersion: v1\nkind: Thing\nmetadata:\n  name: ${{NAME}}\nspec: {spec}\n")
    rc, out, err = _run(["import", "manifest", str(src)], capsys)
    assert rc == 0, err
    assert "equal (a data literal)" in err and out.startswith("# Imported from")


def test_set_of_a_name_that_is_no_placeholder(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    rc, _, err = _run(["import", "manifest", str(TEMPLATES / "llama3.1-70b_8k-bf16-tpu7x-4x4x4.yaml"),
                       "--set", "WORKLOAD=x"], capsys)
    assert rc == 1 and "error[E1205]" in err and "WORKLOAD_NAME" in err


def test_a_placeholder_that_yaml_types_differently_is_not_equal(tmp_path, monkeypatch, capsys):
    """The template's `replicas: ${N}` is a number after envsubst; the param is a string."""
    monkeypatch.chdir(REPO)
    t = tmp_path / "t.yaml"
    t.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  count: ${N}\n")
    rc, out, err = _run(["import", "manifest", str(t), "--set", "N=3"], capsys)
    assert rc == 1 and f"{t}:6:10: error[E1203]" in err and "$.data.count" in err  # at the value
    assert out == ""


def test_output_path_problems(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    src = tmp_path / "t.yaml"
    src.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${N}\n")
    from rcpc.importer import driver

    def never(*args, **kwargs):  # the output is checked before the import and its proof run
        raise AssertionError("imported before the output was checked")
    for kind in ("manifest", "shell"):
        monkeypatch.setattr(driver, f"import_{kind}", never)
        rc, _, err = _run(["import", kind, str(src), "-o", str(tmp_path / "no" / "such" / "r.rcp")], capsys)
        assert rc == 1 and "error[E1202]" in err and "does not exist" in err and not (tmp_path / "no").exists(), err
    monkeypatch.undo()
    monkeypatch.chdir(REPO)
    rc, _, err = _run(["import", "manifest", str(src), "-o", str(src), "--force"], capsys)
    assert rc == 1 and "is the input file" in err
    assert src.read_text().startswith("apiVersion")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.yaml"]  # no temporary file left


def _nodes(value, path=()):
    """The paths of every node of a YAML document."""
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _nodes(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _nodes(v, path + (i,))


def _replaced(doc, path, new):
    if not path:
        return new
    out = copy.copy(doc)
    out[path[0]] = _replaced(doc[path[0]], path[1:], new)
    return out


_TEMPLATES = {}
_COMMANDS: dict = {}


def _parsed_once(text: str):
    """``parse_commands(text)``, each text parsed once in this session (and an error raised
    again): a candidate reads the startup command's nodes, never changes them, and a mutated
    template mostly keeps its command, which the bounded bashlex parse (a trace function on
    every call) took most of this property's time parsing again, once for each candidate."""
    if text not in _COMMANDS:
        try:
            _COMMANDS[text] = (parse_commands(text), None)
        except Exception as exc:  # noqa: BLE001 -- what the parse raises, raised each time
            _COMMANDS[text] = (None, exc)
    nodes, exc = _COMMANDS[text]
    if exc is not None:
        raise exc.with_traceback(None)
    return nodes


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(ALL), st.data(), st.sampled_from([None, "x", 0, 1.5, True, [], {}, ["x"], {"x": None},
                                                         [{"name": ["x"], "image": {}}]]))
def test_candidates_of_a_template_of_another_shape_decline(name, data, new):
    """Any node of a template replaced by a value of another shape: each candidate reads the
    template or declines (None); none raises, whatever the node (the proof decides the rest)."""
    from rcpc.importer.library import CANDIDATES
    from rcpc.importer.manifest import read, startup_command

    if name not in _TEMPLATES:
        _TEMPLATES[name] = read(TEMPLATES / name, name, {}, None)
    template = _TEMPLATES[name]
    paths = [p for p in _nodes(template.doc) if p and p[0] != "apiVersion"]
    path = data.draw(st.sampled_from(paths))
    mutated = attrs.evolve(template, doc=_replaced(template.doc, path, new))
    startup_command(mutated.doc)  # read() finds the startup command in any shape
    with mock.patch("rcpc.importer.command.parse_commands", _parsed_once), \
            mock.patch("rcpc.importer.library.parse_commands", _parsed_once):  # bound at its head too
        for cand in CANDIDATES:
            found = cand.extract(mutated)
            assert found is None or found.startswith("# Imported from")
