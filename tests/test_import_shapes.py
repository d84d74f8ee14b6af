"""Every shape of published recipe imports as library calls, proven equal (issue 39, kind 4):

* variables a script reads from its environment are params (the trillium scripts, E1204
  before), with the script's ``${VAR:-default}`` where it has one;
* a flag blob keeps its flag set when a value is quoted where the shell needs no quotes
  (``'fixed,-224,224'``), when the shell reads a value as written (a glob after a param), and
  with spaces around its words (``FLAGS.shell_quoted(keys, raw = [...])``);
* a file of several YAML documents (the vLLM server manifests, E1200 before) is one recipe of
  one render a document, proven equal document by document (the vLLM serving shape as calls
  of @rcpc//vllm_tpu.rcp: tests/test_import_serving.py);
* an accelerator type (``--tpu-type=v5p-16``) is ``tpu_slice("v5p:2x2x2")``, tied to the flag
  sets so that the mesh check runs.

Each kind is a property over generated inputs, the published files its examples; bash runs
the generated scripts (``run_bash_stubbed``) as the oracle of the import's own proof.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import run_bash_stubbed
from rcpc.core.diagnostics import CompileError
from rcpc.core.source import Span
from rcpc.domain.maxtext.flagset import argv as flag_argv
from rcpc.domain.tpu import GENERATIONS, _topologies, accelerator_type, accelerator_type_name, device_type_name, \
    tpu_slice
from rcpc.domain.workspace import Workspace
from rcpc.importer import proof
from rcpc.importer.driver import import_manifest, import_shell

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "tpu-recipes"
MORE = DATA / "more"
TRILLIUM = sorted(p.name for p in MORE.glob("training_trillium_*.sh"))
VLLM = MORE / "inference_ironwood_vLLM_Gemma4_gemma4-server.yaml"
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
COMMAND = 'xpk workload create --workload=w --command="python3 -m MaxText.train MaxText/configs/base.yml ${ARGS}"\n'


def _import(tmp_path: Path, name: str, text: str):
    src = tmp_path / name
    src.write_text(text)
    imported = import_shell(Workspace.find(REPO), src, name)
    out = tmp_path / "r.rcp"
    out.write_text(imported.text)
    return imported, out


def _params(out: Path) -> dict:
    return {p.name: p for p in proof.fresh_compiler(REPO).evaluate(out.resolve(), {}).params}


# kind 1: variables from the environment ------------------------------------------------------
def test_two_trillium_scripts():
    assert len(TRILLIUM) == 2


@pytest.mark.parametrize("name", TRILLIUM)
def test_trillium_scripts_import_as_a_benchmark_runner_call(name, tmp_path):
    """The environment's variables are str params; the launch is maxtext_benchmark_runner on
    the v6e-256 slice; bash running the script with those variables in its environment runs
    the render's command line."""
    imported, out = _import(tmp_path, name, (MORE / name).read_text())
    assert imported.how == "a command_file render, a call of maxtext_benchmark_runner"
    assert 'TPU_SLICE = tpu_slice("v6e:16x16")' in imported.text
    assert imported.check(proof.fresh_compiler(REPO), out) == []
    params = _params(out)
    assert set(params) == {"PROJECT", "ZONE", "CLUSTER_NAME", "OUTPUT_DIR"}
    values = {k: f"t-{k.lower()}" for k in params}
    ours = run_bash_stubbed(proof.build(proof.fresh_compiler(REPO), out, values)["launch.sh"], ["python3"])
    env = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in values.items())
    assert ours == run_bash_stubbed(env + (MORE / name).read_text(), ["python3"])


_NAME = st.sampled_from(["PROJECT", "ZONE", "CLUSTER", "OUT_DIR", "IMAGE", "STEPS"])
_TEXT = st.text("abcxyz019-./", min_size=1, max_size=8)
_WORD_TEXT = st.from_regex(r"[a-z][a-z0-9,./-]{0,7}", fullmatch=True)  # a str value as the shell writes it
_USE = st.sampled_from(["env", "default", "export"])


@SETTINGS
@given(uses=st.dictionaries(_NAME, st.tuples(_USE, _TEXT), min_size=1, max_size=4), braces=st.booleans())
@example(uses={"PROJECT": ("env", "x"), "ZONE": ("env", "x"), "CLUSTER": ("env", "x"), "OUT_DIR": ("env", "x")},
         braces=False)
@example(uses={"STEPS": ("default", "10"), "IMAGE": ("export", "x")}, braces=True)
@example(uses={"ZONE": ("default", "0.10"), "PROJECT": ("default", "1.")}, braces=False)
def test_variables_from_the_environment_are_params(uses, braces, tmp_path):
    """A variable the script reads without setting (``$NAME``), or sets to the environment's
    value (``export NAME="${NAME}"``), is a str param with a placeholder default; one set to
    ``${NAME:-default}`` a param of that default's type. The import is proven equal; bash,
    with the values in its environment, runs the render's command line."""
    lines = []
    for name, (use, default) in uses.items():
        if use == "default":
            lines.append(f'{name}="${{{name}:-{default}}}"')
        elif use == "export":
            lines.append(f'export {name}="${{{name}}}"')
    words = [f"--{n.lower()}=" + ("${%s}" % n if braces else f"${n}") for n in uses]
    text = "\n".join(lines + ["xpk workload create " + " ".join(words)]) + "\n"
    imported, out = _import(tmp_path, "env.sh", text)
    params = _params(out)
    assert set(params) == set(uses)
    for name, (use, default) in uses.items():
        if use == "default":
            # a number as written: no leading zero in an int; a float with a '.' or an exponent
            typed = int(default) if re.fullmatch(r"-?(0|[1-9][0-9]*)", default) else \
                float(default) if re.fullmatch(r"-?[0-9]+(\.[0-9]*([eE][-+]?[0-9]+)?|[eE][-+]?[0-9]+)", default) else default
            assert params[name].default.value == typed and type(params[name].default.value) is type(typed)
        else:
            assert "From the environment" in params[name].doc
    values = {n: {int: "7", float: "7.25"}.get(type(params[n].default.value), f"v-{n.lower()}") for n in uses}
    ours = run_bash_stubbed(proof.build(proof.fresh_compiler(REPO), out, values)["launch.sh"], ["xpk"])
    env = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in values.items())
    assert ours == run_bash_stubbed(env + text, ["xpk"])


# kind 2: quoted and raw values, spaces around the words ----------------------------------------
_STR_KEYS = ["run_name", "tokenizer_path", "dataset_path", "base_output_directory", "hf_path", "model_name"]
_WORD = st.sampled_from(["bare", "quoted", "spaced", "raw"])


def _word(key: str, how: str, value: str) -> str:
    if how == "bare":
        return f"{key}={value}"
    if how == "quoted":  # quotes the shell needs not
        return f"{key}='{value}'"
    if how == "spaced":  # quotes the shell needs
        return f"{key}='{value} {value}'"
    return f"{key}=${{DIR}}/{value}*.x"  # the shell reads it as written


@SETTINGS
@given(words=st.lists(st.tuples(_WORD, _WORD_TEXT), min_size=2, max_size=5),
       pad=st.tuples(st.sampled_from(["", " ", "  "]), st.sampled_from(["", " ", "  "])))
@example(words=[("quoted", "fixed,-224,224"), ("bare", "x")], pad=("", " "))
@example(words=[("spaced", "a"), ("raw", "b"), ("quoted", "c")], pad=(" ", ""))
# OmegaConf reads bare n as the string n: the flag set wrote it 'n' (a go-yaml bool), not the input
@example(words=[("bare", "x"), ("bare", "n")], pad=("", ""))
@example(words=[("quoted", "Y"), ("bare", "08"), ("raw", "y")], pad=("", ""))
def test_flag_sets_keep_quoted_and_raw_values(words, pad, tmp_path):
    """``key='v'``, ``key='a b'``, ``key=${DIR}/v*.x`` and spaces around the words: the blob is
    a flag set (never a string kept for review), its shell form the words as written."""
    blob = " ".join(_word(k, how, v) for k, (how, v) in zip(_STR_KEYS, words))
    text = f'export DIR="/d"\nARGS="{pad[0]}{blob}{pad[1]}"\n' + COMMAND
    imported, out = _import(tmp_path, "q.sh", text)
    assert "maxtext_flags(" in imported.text and "kept as a string" not in imported.text
    assert imported.check(proof.fresh_compiler(REPO), out) == []
    quoted = [k for k, (how, _) in zip(_STR_KEYS, words) if how == "quoted"]
    raw = [k for k, (how, _) in zip(_STR_KEYS, words) if how == "raw"]
    if quoted or raw or pad != ("", ""):
        assert "ARGS_SHELL = " in imported.text
    (ours,) = run_bash_stubbed(proof.build(proof.fresh_compiler(REPO), out, {})["launch.sh"], ["xpk"])
    assert ours == run_bash_stubbed(text, ["xpk"])[0]
    flags = proof.fresh_compiler(REPO).bindings(out.resolve())["ARGS"]
    command = ours[-1].removeprefix("--command=")
    assert flag_argv(flags) == shlex.split(command.split("base.yml", 1)[1])


# kind 3: several YAML documents ------------------------------------------------------------
def _document(kind: str, i: int, placeholder: bool) -> str:
    name = "${NAME}-%d" % i if placeholder else f"n{i}"
    if kind == "Namespace":
        return f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n"
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: \"{i}\"\n"


@SETTINGS
@given(docs=st.lists(st.tuples(st.sampled_from(["Namespace", "ConfigMap"]), st.booleans()), min_size=1, max_size=4))
@example(docs=[("Namespace", False), ("ConfigMap", True), ("ConfigMap", True)])
def test_several_documents_are_one_render_each(docs, tmp_path):
    """A file of N documents is one recipe of N renders, each the document after envsubst (the
    import's proof, document by document); changing one document's render is found at it."""
    src = tmp_path / "t.yaml"
    src.write_text("---\n".join(_document(k, i, p) for i, (k, p) in enumerate(docs)))
    imported = import_manifest(Workspace.find(REPO), src, "t.yaml", {}, None)
    out = tmp_path / "r.rcp"
    out.write_text(imported.text)
    compiler = proof.fresh_compiler(REPO)
    params = {"NAME": "nm"} if any(p for _, p in docs) else {}
    assert len(proof.renders(compiler, out, params)) == len(docs)
    assert imported.check(compiler, out) == []
    if len(docs) > 1:
        out.write_text(imported.text.replace('"n1"', '"changed"').replace('f"{NAME}-1"', '"changed"'))
        (found,) = imported.check(proof.fresh_compiler(REPO), out)[:1]
        assert "$[1].metadata.name" in found


def test_the_vllm_server_manifests_import_equal(tmp_path):
    """The published vLLM server file: four documents (Namespace, StorageClass,
    PersistentVolumeClaim, Deployment), four renders, equal; one library call a document
    (tests/test_import_serving.py)."""
    imported = import_manifest(Workspace.find(REPO), VLLM, VLLM.name, {}, None)
    assert imported.how == "a call of vllm_tpu_deployment"
    out = tmp_path / "r.rcp"
    out.write_text(imported.text)
    compiler = proof.fresh_compiler(REPO)
    assert list(proof.build(compiler, out, {})) == ["namespace.yaml", "storageclass.yaml",
                                                    "persistentvolumeclaim.yaml", "deployment.yaml"]
    assert imported.check(compiler, out) == []


# kind 4: accelerator types -------------------------------------------------------------------
_SLICES = sorted({(g, t) for g in GENERATIONS for chips in [1, 4, 8, 16, 32, 64, 128, 192, 256, 512, 768, 1024]
                  for t in _topologies(chips, GENERATIONS[g].dims)[:1]})


def _valid(gen: str, topology: str):
    try:
        return tpu_slice(f"{gen}:{topology}", Span("t", 1, 1, 1, 1))
    except CompileError:
        return None


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_SLICES))
@example(("v5p", "2x2x2"))
@example(("v6e", "16x16"))
@example(("v7x", "4x4x4"))
def test_accelerator_types_name_their_slice(gen_topology):
    """Both of a slice's accelerator type names (``v5p-16``, ``v5p-2x2x2``) read back as it."""
    s = _valid(*gen_topology)
    if s is None:
        return
    spec = f"{s.generation}:{s.topology}"
    assert accelerator_type(accelerator_type_name(s)) == spec
    assert accelerator_type(device_type_name(s)) == spec


@pytest.mark.parametrize("name, spec", [
    ("v5p-16", "v5p:2x2x2"), ("v5p-8", "v5p:2x2x1"), ("v5p-512", "v5p:4x8x8"), ("v5p-384", "v5p:4x4x12"),
    ("v4-16", "v4:2x2x2"), ("v6e-256", "v6e:16x16"), ("v6e-8", "v6e:2x4"), ("v5litepod-16", "v5e:4x4"),
    ("tpu7x-128", "v7x:4x4x4"), ("tpu7x-4x8x8", "v7x:4x8x8"), ("v5p-15", None), ("v6e-12", None), ("gpu-8", None),
])
def test_accelerator_type_table(name, spec):
    """XPK's names (system_characteristics.py): a count of TensorCores on v4, v5p, v7x (two a
    chip), of chips on v5e, v6e; the topology closest to a cube."""
    assert accelerator_type(name) == spec


_V5P = ["v5p-8", "v5p-16", "v5p-32", "v5p-64", "v5p-128"]


@SETTINGS
@given(name=st.sampled_from(_V5P), slices=st.integers(1, 3), flag=st.sampled_from(["--tpu-type", "--device-type"]))
@example(name="v5p-16", slices=1, flag="--tpu-type")
def test_an_accelerator_type_is_a_slice_the_flags_are_checked_on(name, slices, flag, tmp_path):
    """``--tpu-type=v5p-16`` is ``tpu_slice("v5p:2x2x2")``, the word its ``.accelerator_type``,
    and the flag sets carry the slice: a mesh that does not fit its devices is E0340 at the
    script."""
    spec = accelerator_type(name)
    text = (f'ARGS="steps=1 ici_fsdp_parallelism=-1"\nxpk workload create {flag}={name} --num-slices={slices} '
            '--command="python3 -m MaxText.train MaxText/configs/base.yml ${ARGS}"\n')
    imported, out = _import(tmp_path, "s.sh", text)
    assert f'TPU_SLICE = tpu_slice("{spec}")' in imported.text
    assert "tpu_slice = TPU_SLICE" in imported.text and (f"num_slices = {slices}" in imported.text) is (slices > 1)
    assert f'f"{flag}={{TPU_SLICE.accelerator_type}}"' in imported.text
    assert imported.check(proof.fresh_compiler(REPO), out) == []
    chips = tpu_slice(spec, Span("t", 1, 1, 1, 1)).chips
    with pytest.raises(CompileError) as exc:
        _import(tmp_path, "s.sh", text.replace("ici_fsdp_parallelism=-1", f"ici_fsdp_parallelism={chips + 1}"))
    assert exc.value.diagnostics[0].code == "E0340" and exc.value.diagnostics[0].span.path == "s.sh"


def test_shell_quoted_with_raw_keys(tmp_path):
    """``F.shell_quoted(keys, raw = [...])``: one value quoted, another as written; a key in
    both lists is E0656."""
    (tmp_path / "rcp.toml").write_text("")
    (tmp_path / "recipes").mkdir()
    r = tmp_path / "recipes" / "r.rcp"
    r.write_text('F = maxtext_flags({"a": "x,y", "b": "$D/*.x", "c": "z"})\nS = F.shell_quoted(["a"], raw = ["b"])\n')
    assert proof.fresh_compiler(tmp_path).bindings(r)["S"].value == "a='x,y' b=$D/*.x c=z"
    r.write_text(r.read_text().replace('raw = ["b"]', 'raw = ["a"]'))
    with pytest.raises(CompileError) as exc:
        proof.fresh_compiler(tmp_path).bindings(r)
    assert exc.value.diagnostics[0].code == "E0656"


@pytest.mark.parametrize("use", ["$A z=3", "z=3 $A", "${A} z='a b'"])
def test_a_blob_that_splices_another_flag_set_stays_a_string(use, tmp_path):
    """``B="$A z=3"`` (A a flag set): B is a string with a TODO(import) (it raised KeyError),
    proven equal."""
    text = f'A="x=1 y=2"\nB="{use}"\nxpk run "$B"\n'
    imported, out = _import(tmp_path, "ab.sh", text)
    assert "kept as a string, not maxtext_flags: it uses a value that is not a param" in imported.text
    assert run_bash_stubbed(proof.build(proof.fresh_compiler(REPO), out, {})["launch.sh"], ["xpk"]) == \
        run_bash_stubbed(text, ["xpk"])


def test_a_jobset_among_documents_keeps_its_checked_flag_set(tmp_path):
    """A published JobSet after a Namespace document: two renders, the JobSet's startup
    command split into its MaxText flag set (checked: a key the schema does not know is
    acknowledged with unknown_keys, as in a file of one document), proven equal."""
    jobset = (DATA / "llama3.1-70b_8k-bf16-tpu7x-4x4x4.yaml").read_text()
    assert " steps=30 " in jobset
    src = tmp_path / "t.yaml"
    src.write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${WORKLOAD_NAME}\n---\n"
                   + jobset.replace(" steps=30 ", " steps=30 brand_new_key=1 "))
    imported = import_manifest(Workspace.find(REPO), src, "t.yaml", {}, None)
    assert imported.how == "data literals, one render for each of its 2 documents"
    assert "MAXTEXT_FLAGS = maxtext_flags(" in imported.text and 'unknown_keys = ["brand_new_key"]' in imported.text
    out = tmp_path / "r.rcp"
    out.write_text(imported.text)
    compiler = proof.fresh_compiler(REPO)
    assert list(proof.build(compiler, out, {})) == ["namespace.yaml", "jobset.yaml"]
    assert imported.check(compiler, out) == []
