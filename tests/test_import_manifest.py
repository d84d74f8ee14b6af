"""``rcpc import manifest`` (issue 19): every published TPU JobSet template
(../shared/data/tpu-recipes/*.yaml) becomes a recipe whose render equals the template after
envsubst, the proof is the import's own, and the recipe is fmt-canonical and lint clean.

The oracle of the proof's envsubst is the real envsubst(1) binary (gettext), run with the same
SHELL-FORMAT on every template.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from rcpc.cli import main
from rcpc.core.fmt import format_source
from rcpc.domain.workspace import Workspace
from rcpc.importer import proof
from rcpc.importer.driver import import_manifest

REPO = Path(__file__).resolve().parents[1]
TEMPLATES = REPO.parent / "shared" / "data" / "tpu-recipes"
ALL = sorted(p.name for p in TEMPLATES.glob("*.yaml"))
# The older generation the shared library's xpk_jobset renders (the other seven are the
# XPK-generated generation, which has no library function yet: they import as data literals).
LIBRARY_CALLS = {
    "deepseek3-671b_4k-bf16-tpu7x-4x4x8.yaml", "deepseek3-671b_4k-fp8-tpu7x-4x4x8.yaml",
    "gpt-oss-120b_8k-bf16-tpu7x-4x4x4.yaml", "llama3.1-70b_8k-bf16-tpu7x-4x4x4.yaml",
    "llama3.1-70b_8k-bf16-tpu7x-4x8x8.yaml", "qwen3-235b-a22b_4k-bf16-tpu7x-4x8x8.yaml",
}


def _nonblank(text: str) -> int:
    """Characters other than whitespace and comments (as bench/ports.py counts)."""
    return sum(len(re.sub(r"\s+", "", ln.split("#", 1)[0] if not ln.lstrip().startswith("#") else ""))
               for ln in text.splitlines())


def test_thirteen_templates():
    assert len(ALL) == 13


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
    renders = proof.build(proof.fresh_compiler(REPO), out, values)
    (text,) = renders.values()
    assert yaml.safe_load(text) == yaml.safe_load(_real_envsubst(TEMPLATES / name, values))
    if name in LIBRARY_CALLS:
        assert "xpk_jobset(" in imported.text and "a call of xpk_jobset" == imported.how
        assert _nonblank(imported.text) < _nonblank((TEMPLATES / name).read_text())
    else:
        assert imported.how.startswith("a data literal")
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
    src = str(TEMPLATES / "llama3.1-70b_8k-fp8-tpu7x-4x4x4.yaml")
    out = tmp_path / "r.rcp"
    code, stdout, err = _run(["import", "manifest", src, "-o", str(out), "--set", "WORKLOAD_NAME=llama-fp8"], capsys)
    assert code == 0, err
    assert stdout == ""
    assert "equal (a data literal)" in err and f"wrote {out}" in err
    # the flags that have no maxtext_flags spelling are named on stderr and in the recipe
    assert "warning[W1200]: TODO(import)" in err and "weight_quantization_calibration_method" in err
    text = out.read_text()
    assert "# TODO(import)" in text and 'default = "llama-fp8"' in text
    before = out.read_bytes()
    code, _, err = _run(["import", "manifest", src, "-o", str(out)], capsys)
    assert code == 1 and "error[E1202]" in err and "--force" in err
    assert out.read_bytes() == before
    code, _, err = _run(["import", "manifest", src, "-o", str(out), "--force"], capsys)
    assert code == 0 and "equal" in err
    code, _, err = _run(["import", "manifest", src, "-o", str(tmp_path)], capsys)
    assert code == 1 and "is a directory" in err


def test_cli_stdout_is_the_recipe(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    code, out, err = _run(["import", "manifest", str(TEMPLATES / "llama3.1-70b_8k-bf16-tpu7x-4x4x4.yaml")], capsys)
    assert code == 0
    assert out.startswith("# Imported from") and "xpk_jobset(" in out
    assert "equal (a call of xpk_jobset)" in err


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


def test_set_of_a_name_that_is_no_placeholder(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    rc, _, err = _run(["import", "manifest", str(TEMPLATES / "llama3.1-70b_8k-bf16-tpu7x-4x4x4.yaml"),
                       "--set", "WORKLOAD=x"], capsys)
    assert rc == 1 and "error[E1205]" in err and "WORKLOAD_NAME" in err


def test_a_placeholder_that_yaml_types_differently_is_not_equal(tmp_path, monkeypatch, capsys):
    """The template's `replicas: ${N}` is a number after envsubst; the param is a string."""
    monkeypatch.chdir(REPO)
    t = tmp_path / "t.yaml"
    t.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  n: ${N}\n")
    rc, out, err = _run(["import", "manifest", str(t), "--set", "N=3"], capsys)
    assert rc == 1 and "error[E1203]" in err and "$.data.n" in err
    assert out == ""


def test_output_path_problems(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    src = tmp_path / "t.yaml"
    src.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${N}\n")
    rc, _, err = _run(["import", "manifest", str(src), "-o", str(tmp_path / "no" / "such" / "r.rcp")], capsys)
    assert rc == 1 and "error[E1202]" in err and not (tmp_path / "no").exists()
    rc, _, err = _run(["import", "manifest", str(src), "-o", str(src), "--force"], capsys)
    assert rc == 1 and "is the input file" in err
    assert src.read_text().startswith("apiVersion")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.yaml"]  # no temporary file left
