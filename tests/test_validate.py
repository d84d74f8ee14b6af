"""``rcpc validate FILE.yaml...``: the Kubernetes, JobSet and TPU checks on plain manifests,
located at file:line:col of the YAML node; and the shipped JobSet schema (``builtin:jobset``),
regenerated from the CRD by ``rcpc schema jobset`` byte for byte."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.test_real_validators import SUBST, TEMPLATES, envsubst

REPO = Path(__file__).resolve().parents[1]
CRD = REPO.parent / "shared" / "data" / "jobset" / "jobset.x-k8s.io_jobsets.yaml"
JOBSET_COMMIT = "08dfbdfd682714a9ab929633eca8dc95315187e7"   # ../shared/data/README.md
SHIPPED = REPO / "compiler" / "rcpc" / "domain" / "schemas" / "jobset.json"


def published(name: str) -> str:
    return envsubst(TEMPLATES / name, SUBST)


def test_every_published_manifest_validates(cli, ws):
    for template in sorted(TEMPLATES.glob("*.yaml")):
        (ws.root / template.name).write_text(published(template.name))
    r = cli("validate", *sorted(p.name for p in ws.root.glob("*.yaml")))
    assert r.code == 0, r.err
    assert r.err.strip() == "rcpc: validated 13 document(s) in 13 file(s): ok"


def test_errors_at_the_yaml_node(cli, ws):
    """Every rule family on a published manifest, each reported at its YAML node."""
    text = published("gemma4-2b_8k-bf16-tpu7x-4x4x4.yaml")
    text = text.replace("google.com/tpu: 2", "google.com/tpu: 3", 1)          # E1006 (topology annotation)
    text = text.replace("parallelism: 16", "parallelism: 8", 1)              # E1007
    text = text.replace("- name: jax-tpu-2", "- name: jax-tpu-1", 1)         # E1004
    (ws.root / "m.yaml").write_text(text)
    r = cli("validate", "m.yaml")
    assert r.code == 1
    lines = text.splitlines()
    got = {line.split(" error[")[1][:5]: line.split(": error[")[0] for line in r.err.splitlines() if " error[" in line}

    def at(code, needle, nth=0):
        row = [i for i, line in enumerate(lines) if needle in line][nth]
        return f"m.yaml:{row + 1}:{lines[row].index(needle.split(': ')[-1]) + 1}"

    assert got["E1006"] == at("E1006", "google.com/tpu: 3")
    assert got["E1007"] == at("E1007", "parallelism: 8")
    assert got["E1004"] == at("E1004", "- name: jax-tpu-1", 1)


ENV = st.lists(st.tuples(st.sampled_from(["A", "B", "LIBTPU_INIT_ARGS"]),
                         st.one_of(st.text("abc019 ", max_size=5), st.integers(0, 99), st.booleans())),
               min_size=1, max_size=4)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(env=ENV, flow=st.booleans(), indent=st.sampled_from([2, 4]))
@example(env=[("LIBTPU_INIT_ARGS", "x"), ("LIBTPU_INIT_ARGS", "y")], flow=False, indent=2)
@example(env=[("A", "019"), ("B", "1 ")], flow=True, indent=2)
def test_located_by_node_marks(cli, ws, env, flow, indent):
    """Env faults in any YAML layout: E1001 for a value kubectl does not read as a string (a
    number, a bool, or a string PyYAML writes plain that go-yaml reads as another type, such
    as ``y`` or ``019``), E1010 for a repeated name, each at the line:col ruamel.yaml (an
    independent parser) gives that node."""
    from ruamel.yaml import YAML

    from rcpc.core import goyaml

    doc = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
           "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": {"containers": [
               {"name": "main", "image": "img", "env": [{"name": n, "value": v} for n, v in env]}]}}}}}]}}
    text = yaml.safe_dump(doc, default_flow_style=flow, indent=indent, sort_keys=False, width=10**6)
    (ws.root / "m.yaml").write_text("---\n" + text)
    r = cli("validate", "--diagnostics", "json", "m.yaml")
    found = [(d["code"], d["span"]["line"], d["span"]["col"]) for d in json.loads(r.err)["diagnostics"]]
    items = YAML().load("---\n" + text)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"][0]["env"]
    expected = []
    names = [n for n, _ in env]
    for i, (n, v) in enumerate(env):
        plain = isinstance(v, str) and not yaml.safe_dump(v).startswith(("'", '"'))
        if not isinstance(v, str) or plain and goyaml.resolve(v)[0] != "str":
            line, col = items[i].lc.value("value")
            expected.append(("E1001", line + 1, col + 1))
        if n in names[:i]:
            line, col = items.lc.item(i)
            expected.append(("E1010", line + 1, col + 1))
    assert sorted(found) == sorted(expected)
    assert r.code == (1 if expected else 0)


def test_multi_document_files_and_bad_yaml(cli, ws):
    ok = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n"
    (ws.root / "two.yaml").write_text(ok + "---\n" + ok.replace("k: v", "k: 8") + "---\n")
    (ws.root / "broken.yaml").write_text("a: [1,\n")
    (ws.root / "list.yaml").write_text("- 1\n")
    (ws.root / "dup.yaml").write_text(ok + "metadata:\n  name: b\n")
    r = cli("validate", "two.yaml", "broken.yaml", "list.yaml", "dup.yaml", "nope.yaml")
    assert r.code == 1 and "Traceback" not in r.err
    heads = [line for line in r.err.splitlines() if "error[" in line]
    assert heads[0].startswith("two.yaml:13:6: error[E1008]: ConfigMap data.k: ConfigMap data values are strings")
    assert heads[1].startswith("broken.yaml:2:1: error[E1103]: broken.yaml is not valid YAML")
    assert heads[2].startswith("list.yaml:1:1: error[E1103]: document 1 of list.yaml is not a Kubernetes object")
    assert heads[3].startswith("dup.yaml:7:1: error[E1103]: key 'metadata' is repeated in one mapping")
    assert "error[E1103]: cannot read nope.yaml" in heads[4]
    assert r.err.endswith("rcpc: validated 2 document(s) in 5 file(s): 5 error(s)\n")


def test_bundled_renders_validate(cli, tmp_path, monkeypatch, capsys):
    from rcpc.cli import main

    monkeypatch.chdir(REPO)
    assert main(["build", "-o", str(tmp_path / "out"), "-j", "1"]) == 0
    renders = sorted(str(p) for p in (tmp_path / "out").rglob("*.yaml"))
    capsys.readouterr()
    assert main(["validate", *renders]) == 0, capsys.readouterr().err
    assert f"validated {len(renders)} document(s)" in capsys.readouterr().err


# the shipped schema ----------------------------------------------------------------------------------
def test_shipped_jobset_schema_is_regenerated_byte_for_byte(tmp_path, monkeypatch, capsys):
    from rcpc.cli import main

    out = tmp_path / "jobset.json"
    assert main(["schema", "jobset", str(CRD), "--commit", JOBSET_COMMIT, "-o", str(out)]) == 0
    assert out.read_bytes() == SHIPPED.read_bytes()
    capsys.readouterr()
    assert main(["schema", "jobset", str(CRD), "--commit", JOBSET_COMMIT]) == 0
    assert capsys.readouterr().out.encode() == SHIPPED.read_bytes()
    shipped = json.loads(SHIPPED.read_text())
    assert shipped["x-rcpc-provenance"]["commit"] == JOBSET_COMMIT
    assert "description" not in json.dumps(shipped["properties"]["spec"]["properties"]["replicatedJobs"]["items"]
                                           ["properties"]["name"])


def test_schema_command_errors(cli, ws):
    (ws.root / "x.yaml").write_text("kind: Nothing\n")
    r = cli("schema", "jobset", "x.yaml")
    assert r.code == 1 and "error[E1102]" in r.err and "no CustomResourceDefinition" in r.err


@pytest.mark.parametrize("kind", ["new", "file", "symlink", "fifo", "symlink to fifo", "directory"])
@pytest.mark.parametrize("command", ["jobset", "maxtext"])
def test_schema_output_file_of_every_kind(cli, ws, kind, command):
    """``rcpc schema jobset CRD -o /dev/full`` replaced the device node with a regular file
    (as root): ``-o`` writes as a shell redirection would. A regular file, or the file a
    symlink names, is replaced atomically keeping its mode and the link; a device or FIFO is
    written to in place (``-o /dev/stdout``); a directory is an error (E0950), left alone."""
    import os
    import stat
    import threading

    out = ws.root / "out.json"
    target = ws.root / "target"
    got: list[bytes] = []
    reader = None
    if kind == "file":
        out.write_text("old\n")
        out.chmod(0o640)
    elif kind == "symlink":
        target.write_text("old\n")
        target.chmod(0o600)
        out.symlink_to("target")
    elif kind in ("fifo", "symlink to fifo"):
        os.mkfifo(target if kind != "fifo" else out)
        if kind != "fifo":
            out.symlink_to("target")
        reader = threading.Thread(target=lambda: got.append((target if kind != "fifo" else out).read_bytes()),
                                  daemon=True)  # a regression must not hang the run
        reader.start()
    elif kind == "directory":
        out.mkdir()
    source = str(CRD) if command == "jobset" else str(REPO.parent / "shared" / "data" / "maxtext")
    r = cli("schema", command, source, "--commit", "x", "-o", "out.json")
    if reader is not None:
        reader.join(timeout=60)
    if kind == "directory":
        assert r.code == 1 and "error[E0950]" in r.err and out.is_dir() and not list(out.iterdir())
        return
    assert r.code == 0, r.err
    expected = cli("schema", command, source, "--commit", "x").out.encode()
    if kind in ("fifo", "symlink to fifo"):
        assert got == [expected] and stat.S_ISFIFO((target if kind != "fifo" else out).lstat().st_mode)
    elif kind == "symlink":
        assert out.is_symlink() and target.read_bytes() == expected and stat.S_IMODE(target.stat().st_mode) == 0o600
    else:
        assert out.read_bytes() == expected and not out.is_symlink()
        if kind == "file":
            assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert sorted(p.name for p in ws.root.iterdir() if ".rcpc-tmp" in p.name) == []


def test_bundled_workspace_names_the_builtin_schema():
    import tomllib

    assert tomllib.loads((REPO / "rcp.toml").read_text())["kube_schemas"] == ["builtin:jobset"]


def test_builtin_schema_is_used_like_the_crd(ws):
    """builtin:jobset rejects what the CRD rejects (an unknown field, here)."""
    text = ('jobset(name = "js", metadata = {"name": "js"}, spec = {"replicatedJobs": [{"name": "w", '
            '"template": {"spec": {"paralelism": 1, "template": {"spec": {"containers": [{"name": "m", "image": "i"}]}}}}}]})\n')
    ws.build(text)
    col = text.index('"paralelism"') + 1
    for schema in ("builtin:jobset", str(CRD)):
        ws.write("rcp.toml", f'kube_schemas = ["{schema}"]\n')
        f = ws.fails(text)
        assert f.code == "E1101" and f.message.endswith("unknown field 'paralelism'") and f.where == f"recipes/r.rcp:1:{col}"


@pytest.mark.parametrize("where", ["rcp.toml", "--kube-schema"])
def test_unknown_builtin_schema(cli, ws, where):
    ws.write("recipes/r.rcp", 'variant("default")\n')
    if where == "rcp.toml":
        ws.write("rcp.toml", 'kube_schemas = ["builtin:jobsets"]\n')
        r = cli("check")
    else:
        r = cli("check", "--kube-schema", "builtin:jobsets")
    assert r.code == 1 and "error[E1102]: no built-in schema 'builtin:jobsets'" in r.err
    assert "help: built-in schemas: builtin:jobset" in r.err


def test_check_strict_crd_reports_what_the_webhook_defaults(cli, monkeypatch, capsys):
    """The bundled tpu_recipes leave failure-policy rule names to the webhook, as the published
    manifests do, and the XPK-generated ones keep its null fields (labels, env,
    serviceAccountName), which the API server prunes: rcpc check passes, rcpc check
    --strict-crd reports each (E1012) at the recipe, with the library line that made it."""
    from rcpc.cli import main

    monkeypatch.chdir(REPO)
    capsys.readouterr()
    assert main(["check", "-j", "1"]) == 0
    capsys.readouterr()
    assert main(["check", "-j", "1", "--strict-crd"]) == 1
    err = capsys.readouterr().err
    heads = [line for line in err.splitlines() if "error[" in line]
    rule_name = ("error[E1012]: JobSet spec.failurePolicy.rules[0]: missing required field 'name' "
                 "(the raw schema rejects it; the JobSet webhook fills it in")
    pruned_null = re.compile(r"error\[E1012\]: JobSet spec\.replicatedJobs\[0\]\.template\.spec\.template\.\S+: None "
                             r"is not of type '\w+' \(the raw schema rejects it; the API server drops this null")
    assert heads and all(rule_name in h or pruned_null.search(h) for h in heads)
    assert sum(rule_name in h for h in heads) == len(list((REPO / "recipes" / "tpu_recipes").glob("*.rcp")))
    assert {h.split(":")[0] for h in heads} == {f"recipes/tpu_recipes/{p.name}"
                                               for p in (REPO / "recipes" / "tpu_recipes").glob("*.rcp")}
    assert "value made here: @rcpc//maxtext_tpu.rcp:" in err
