"""``rcpc import shell`` (issue 19): every XPK launch recipe (../shared/data/tpu-recipes/xpk/*.sh)
becomes a recipe whose ``command_file`` render runs the same command line, proven by the import
and checked here against bash running the whole original file (its ``source``, ``pip`` and
``xpk`` stubbed, the params' assignments given the test's values).
"""

from __future__ import annotations

import re
import shlex
import stat
import subprocess
from pathlib import Path

import bashlex
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import run_bash_stubbed
from rcpc.cli import main
from rcpc.core.diagnostics import CompileError
from rcpc.core.fmt import format_source
from rcpc.domain.lint import lint
from rcpc.domain.maxtext.flagset import argv as flag_argv
from rcpc.domain.workspace import Workspace
from rcpc.importer import bash, proof, shell, shell_library
from rcpc.importer.command import split
from rcpc.importer.driver import import_shell

REPO = Path(__file__).resolve().parents[1]
XPK = REPO.parent / "shared" / "data" / "tpu-recipes" / "xpk"
ALL = sorted(p.name for p in XPK.glob("*.sh"))
# The flag blob that stays a string: MaxDiffusion's, whose command writes some keys again
# before it (a flag set's tokens would not be the trainer's). Quoted values ('fixed,-224,224',
# tokenizer_path='...') and a glob (*.arrayrecord) are flag sets' shell_quoted/raw keys.
NO_FLAG_SET = {"wan2.1-14b_bf16-tpu7x-4x4x4.sh"}
# The recipes whose launch command is a call of the shared library (@rcpc//maxtext_tpu.rcp),
# and the call. The others are not: deepseek3 gcs/lustre run `--tpu-type`, `--base-docker-image`,
# `--storage` and another --command (cd, pip install, MAXTEXT_ASSETS_ROOT); wan2.1 keeps its
# flags as a string (NO_FLAG_SET).
# The recipes MaxText's pinned schema refuses (use_random_routing=True with an expert-parallel
# rank of 1): equal, with a W1208 TODO(import).
REFUSED = {"deepseek3-671b_4k-bf16-tpu7x-4x4x8.sh", "deepseek3-671b_4k-bf16-tpu7x-4x8x8-gcs.sh",
           "deepseek3-671b_4k-bf16-tpu7x-4x8x8-lustre.sh", "gpt-oss-120b_8k-bf16-tpu7x-4x4x4.sh",
           "qwen3-235b-a22b_4k-bf16-tpu7x-4x8x8.sh"}
ONE_CALL = "maxtext_xpk_workload"
TWO_CALLS = "xpk_workload_create with xpk_workload_command"
CALLS = {
    "deepseek3-671b_4k-bf16-tpu7x-4x4x8.sh": ONE_CALL,
    "deepseek3-671b_4k-bf16-tpu7x-4x8x8.sh": TWO_CALLS,
    "deepseek3-671b_4k-fp8-tpu7x-4x4x8.sh": ONE_CALL,
    "gemma4-26b_4k-bf16-tpu7x-4x4x4.sh": TWO_CALLS,
    "gemma4-2b_8k-bf16-tpu7x-4x4x4.sh": TWO_CALLS,
    "gemma4-31b_8k-bf16-tpu7x-4x4x4.sh": TWO_CALLS,
    "gemma4-4b_8k-bf16-tpu7x-4x4x4.sh": TWO_CALLS,
    "gpt-oss-120b_8k-bf16-tpu7x-4x4x4.sh": ONE_CALL,
    "llama3.1-70b_8k-bf16-tpu7x-4x4x4.sh": ONE_CALL,
    "llama3.1-70b_8k-bf16-tpu7x-4x8x8.sh": ONE_CALL,
    "llama3.1-70b_8k-fp8-tpu7x-4x4x4.sh": TWO_CALLS,
    "qwen3-235b-a22b_4k-bf16-tpu7x-4x8x8.sh": TWO_CALLS,
}


def _nonblank(text: str) -> int:
    """Characters other than whitespace and comments (as bench/ports.py counts)."""
    return sum(len(re.sub(r"\s+", "", ln.split("#", 1)[0] if not ln.lstrip().startswith("#") else ""))
               for ln in text.splitlines())


def _params(compiler, path: Path) -> dict:
    """The recipe's params and their defaults (as evaluated: before the checks, which refuse
    the REFUSED recipes)."""
    return {p.name: p.default.value for p in compiler.evaluate(path.resolve(), {}).params}


def _original_argv(src: Path, values: dict) -> list:
    """bash runs the whole original file: each param's assignment line gets the value."""
    text = src.read_text()
    for name, value in values.items():
        text, n = re.subn(rf"^(export )?{name}=.*$", lambda m: f"{m.group(1) or ''}{name}={shlex.quote(value)}",
                          text, count=1, flags=re.M)
        assert n == 1, name
    stubs = "source() { :; }\npip() { return 0; }\n"
    return run_bash_stubbed(stubs + text, ["xpk"])


def test_fifteen_shell_recipes():
    assert len(ALL) == 15


def test_the_porting_guide_names_every_refused_recipe():
    """docs/porting.md lists the shell recipes the pinned MaxText refuses (E0350) as the port
    tests know them (it named 3 of the 5: found by a user trial)."""
    guide = (REPO / "docs" / "porting.md").read_text(encoding="utf-8")
    refused = guide[guide.index("(E0350:"):guide.index("imports equal with a `TODO(import)` (W1208)")]
    assert sorted(re.findall(r"`([^`]+\.sh)`", refused)) == sorted(REFUSED)


@pytest.mark.parametrize("name", ALL)
def test_every_shell_recipe_imports_equal(name, tmp_path):
    imported = import_shell(Workspace.find(REPO), XPK / name, name)
    assert format_source(imported.text, "x.rcp") == imported.text
    out = tmp_path / "r.rcp"
    out.write_text(imported.text)
    compiler = proof.fresh_compiler(REPO)
    assert imported.check(compiler, out) == []
    params = _params(compiler, out)
    assert {"WORKLOAD_NAME", "WORKLOAD_IMAGE", "CLUSTER_NAME", "PROJECT_ID", "ZONE"} <= set(params)
    values = {k: f"t-{k.lower().replace('_', '-')}" for k in params}
    renders = (proof.renders if name in REFUSED else proof.build)(compiler, out, values)  # REFUSED: E0350
    assert list(renders) == ["launch.sh"]
    ours = run_bash_stubbed(renders["launch.sh"], ["xpk"])
    theirs = _original_argv(XPK / name, values)
    assert len(ours) == 1 and ours == theirs
    assert ours[0][:3] == ["xpk", "workload", "create"]
    # the MaxText tokens: the recipe's flag set is what the launch command's trainer gets
    command = next(w for w in ours[0] if w.startswith("--command="))
    trainer, libtpu = split(command[len("--command="):])
    if name in NO_FLAG_SET:
        assert "maxtext_flags(" not in imported.text
        assert "# TODO(import): kept as a string" in imported.text or name.startswith("wan")
    else:
        flags = compiler.bindings(out.resolve(), [f"{k}={v}" for k, v in values.items()])["MAXTEXT_ARGS"]
        assert flag_argv(flags) == shlex.split(" ".join(trainer.words))
    assert ("XLA_FLAGS = {" if name in CALLS else "XLA_FLAGS = [") in imported.text and libtpu is not None


@pytest.mark.parametrize("name", ALL)
def test_a_library_call_where_a_shape_matches(name, tmp_path):
    """The recipes of CALLS import as a call of the shared library (proven equal: the import
    says so only then), shorter than the shell file and lint clean; the others as words."""
    imported = import_shell(Workspace.find(REPO), XPK / name, name)
    if name not in CALLS:
        assert imported.how == "a command_file render" and "load(" not in imported.text
        assert all(c.extract(shell.read(XPK / name, name)) is None for c in shell_library.SHELL_CANDIDATES)
        return
    assert imported.how == f"a command_file render, a call of {CALLS[name]}"
    assert f"    argv = {CALLS[name].split(' with ')[0]}(" in imported.text
    assert '"xpk",' not in imported.text and "--command=" not in imported.text and "_JOINED" not in imported.text
    # shorter than the shell file, but for the slice it names, which the recipe checks the flags
    # on (TPU_SLICE lines: a check the shell file has not); the llama3.1 fp8 recipe's six empty
    # exports are documented params, longer than the file
    tie = sum(_nonblank(line) for line in imported.text.splitlines() if "TPU_SLICE" in line)
    if name != "llama3.1-70b_8k-fp8-tpu7x-4x4x4.sh":
        assert _nonblank(imported.text) - tie < _nonblank((XPK / name).read_text())
    out = tmp_path / "r.rcp"
    out.write_text(imported.text)
    refused = ["E0350"] if name in REFUSED else []  # the W1208 the import said
    assert [d.code for d in lint(proof.fresh_compiler(REPO), [out])] == refused


_LAYERS = st.sampled_from(sorted(shell_library.LAYERS))
_ENTRY = st.tuples(st.sampled_from(["steps", "dataset_type", "ici_fsdp_parallelism", "dcn_data_parallelism",
                                    "model_name", "dataset_path", "remat_policy"]),
                   st.sampled_from(["1", "-1", '"synthetic"', '"gs://max-datasets-rogue"', "True", '"full"']))


@settings(max_examples=200, deadline=None)
@given(runs=st.lists(st.one_of(_LAYERS, st.lists(_ENTRY, max_size=3)), max_size=6))
def test_named_layers_keep_every_entry_in_order(runs):
    """Any flag set's entries cut into library layers and dicts: the entries, in order, are
    the same (so the tokens are), each named part is exactly a library layer, and no run of
    entries left in a dict is one."""
    entries = {}
    for run in runs:
        for k, v in (shell_library.LAYERS[run].items() if isinstance(run, str) else run):
            entries.setdefault(k, v)
    parts = shell_library.named_layers(entries)
    flat = [kv for p in parts for kv in (shell_library.LAYERS[p] if isinstance(p, str) else p).items()]
    assert flat == list(entries.items())
    for p in parts:
        if isinstance(p, dict):
            items = list(p.items())
            assert not any(items[i:i + len(layer)] == list(layer.items())
                           for layer in shell_library.LAYERS.values() for i in range(len(items)))


_CREATE = """export CLUSTER_NAME="c1"
export WORKLOAD_NAME="w1"
XLA_FLAGS=" \
  --xla_tpu_scoped_vmem_limit_kib=61440 \
  --xla_enable_async_all_gather=true "
MAXTEXT_ARGS="steps=5 dataset_type=synthetic run_name=${WORKLOAD_NAME}"
xpk workload create \
"""
_FLAGS = ["--cluster=$CLUSTER_NAME", "--project=p1", "--zone=z1", "--priority=very-high", "--max-restarts=0",
          "--device-type=tpu7x-4x4x4", "--num-slices=1", "--docker-image=img", "--enable-debug-logs",
          '--workload="${WORKLOAD_NAME}"']
_COMMAND = ("--command=\"set -e && export ENABLE_PATHWAYS_PERSISTENCE='1' && export LIBTPU_INIT_ARGS='${XLA_FLAGS}' "
            "&& export JAX_PLATFORMS='tpu,cpu' && export ENABLE_PJRT_COMPATIBILITY='true' && "
            "python3 -m MaxText.train MaxText/configs/base.yml ${MAXTEXT_ARGS}\"")


def _create(tmp_path, flags, command=_COMMAND) -> Path:
    src = tmp_path / "launch.sh"
    src.write_text(_CREATE + "".join(f"  {f} \\\n" for f in flags) + f"  {command}\n")
    return src


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.one_of(st.just(list(range(len(_FLAGS)))), st.permutations(range(len(_FLAGS)))),
       keep=st.one_of(st.just([True] * len(_FLAGS)), st.just([not f.startswith("--enable") for f in _FLAGS]),
                      st.lists(st.booleans(), min_size=len(_FLAGS), max_size=len(_FLAGS))),
       renamed=st.sampled_from([None, None, "--tpu-type=", "--base-docker-image=", "--storage="]))
def test_the_candidates_decline_a_command_of_another_shape(order, keep, renamed, tmp_path):
    """xpk workload create with its flags in another order, some left out, or one XPK flag
    the library does not write: a candidate extracts a call only when the flags are
    xpk_workload_create's, in its order (--enable-debug-logs may be left out)."""
    flags = [_FLAGS[i] for i in order if keep[i]]
    if renamed:
        flags.append(renamed + "x")
    script = shell.read(_create(tmp_path, flags), "launch.sh")
    names = [f[2:].split("=")[0] for f in flags] + ["command"]
    shaped = names == [n for n in shell_library.CREATE_FLAGS if n in names] and \
        set(shell_library.CREATE_FLAGS) - {"enable-debug-logs"} <= set(names)
    for cand in shell_library.SHELL_CANDIDATES:
        assert (cand.extract(script) is not None) is (shaped and cand.function == "xpk_workload_create"
                                                      or shaped and "enable-debug-logs" in names
                                                      and cand.function == "maxtext_xpk_workload")


def test_the_proof_decides_not_the_candidate(tmp_path):
    """A --command the candidate reads as xpk_workload_command's but that has one more step:
    the call is built and found not equal, and the import is the command's words (equal)."""
    command = _COMMAND.replace("&& python3", "&& echo go && python3")
    imported = import_shell(Workspace.find(REPO), _create(tmp_path, _FLAGS, command), "launch.sh")
    assert shell_library.SHELL_CANDIDATES[0].extract(shell.read(tmp_path / "launch.sh", "x")) is not None
    assert imported.how.startswith("a command_file render (no library function builds it: maxtext_xpk_workload: ")
    assert "load(" not in imported.text and '"xpk",' in imported.text
    plain = import_shell(Workspace.find(REPO), _create(tmp_path, _FLAGS), "launch.sh")
    assert plain.how == f"a command_file render, a call of {ONE_CALL}"
    assert "        WORKLOAD_NAME,\n        MAXTEXT_ARGS,\n        XLA_FLAGS,\n    ),\n)\n" in plain.text


@pytest.mark.parametrize("name", ALL)
def test_nothing_is_dropped_silently(name):
    """Every top-level statement of the file is converted or kept as a TODO(import) comment,
    and every TODO is listed (W1200)."""
    imported = import_shell(Workspace.find(REPO), XPK / name, name)
    src = (XPK / name).read_text()
    text = imported.text
    todos = text.count("# TODO(import)")
    assert todos == sum(1 for d in imported.notes if d.code in ("W1200", "W1208")) > 0
    assert any(d.code == "W1208" for d in imported.notes) is (name in REFUSED)
    for node in bashlex.parse(src):
        first = src[node.pos[0]:node.pos[1]].splitlines()[0]
        name_ = first.removeprefix("export ").split("=", 1)[0]
        converted = re.search(rf"^{re.escape(name_)} = ", text, re.M) or first.startswith("xpk ")
        assert converted or f"#     {first}" in text or f"# TODO(import): the shell computes it: {first}" in text, first


CONDITIONAL = """#!/bin/bash
export TUNED=false
export RUN="r1"
STEPS="${STEPS:-10}"
ARGS="steps=${STEPS} run_name=${RUN}"
if [ "$TUNED" = true ]; then
  ARGS="$ARGS remat_policy=full scan_layers=False"
fi
xpk workload create --workload="$RUN" --command="python3 -m MaxText.train MaxText/configs/base.yml ${ARGS}"
"""


def test_conditional_append_is_a_layer_on_a_bool_param(tmp_path):
    src = tmp_path / "launch.sh"
    src.write_text(CONDITIONAL)
    imported = import_shell(Workspace.find(REPO), src, "launch.sh")  # proven for TUNED false and true
    assert "TUNED = param(bool, default = false)" in imported.text
    assert "STEPS = param(int, default = 10)" in imported.text
    assert '{"remat_policy": "full", "scan_layers": False} if TUNED else {}' in imported.text
    out = tmp_path / "r.rcp"
    out.write_text(imported.text)
    compiler = proof.fresh_compiler(REPO)
    for tuned in ("true", "false"):
        (line,) = run_bash_stubbed(proof.build(compiler, out, {"TUNED": tuned})["launch.sh"], ["xpk"])
        assert ("remat_policy=full" in line[-1]) is (tuned == "true")


def test_a_recipe_that_differs_is_not_equal(tmp_path):
    """The proof can fail: one changed word of the command line is found."""
    name = "llama3.1-70b_8k-bf16-tpu7x-4x4x4.sh"
    imported = import_shell(Workspace.find(REPO), XPK / name, name)
    out = tmp_path / "r.rcp"
    out.write_text(imported.text.replace('tpu_slice("v7x:4x4x4")', 'tpu_slice("v7x:4x8x8")'))  # the slice
    found = imported.check(proof.fresh_compiler(REPO), out)
    assert found and "$argv[0][8]" in found[0] and "--device-type=tpu7x-4x8x8" in found[0]
    out.write_text(imported.text.replace('"steps": 30,', '"steps": 31,'))
    assert imported.check(proof.fresh_compiler(REPO), out)
    name = "wan2.1-14b_bf16-tpu7x-4x4x4.sh"  # a word of the command line
    imported = import_shell(Workspace.find(REPO), XPK / name, name)
    out.write_text(imported.text.replace('"--priority=very-high"', '"--priority=high"'))
    found = imported.check(proof.fresh_compiler(REPO), out)
    assert found and "$argv[0][6]" in found[0] and "--priority=high" in found[0]


def _run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_cli_import_then_build_writes_an_executable_launch_sh(tmp_path, monkeypatch, capsys):
    ws = tmp_path / "ws"
    (ws / "recipes").mkdir(parents=True)
    (ws / "rcp.toml").write_text("")
    monkeypatch.chdir(ws)
    src = XPK / "gemma4-2b_8k-bf16-tpu7x-4x4x4.sh"
    code, out, err = _run(["import", "shell", str(src), "-o", "recipes/gemma.rcp"], capsys)
    assert code == 0, err
    # a workspace of rcp.toml alone: the call of the standard library (@rcpc//maxtext_tpu.rcp)
    assert "equal (a command_file render, a call of xpk_workload_create" in err and "warning[W1200]: TODO(import)" in err
    code, _, err = _run(["build", "gemma", "--set", "PROJECT_ID=p1", "-o", "out"], capsys)
    assert code == 0, err
    launch = ws / "out" / "gemma" / "custom" / "launch.sh"
    mode = launch.stat().st_mode
    assert mode & stat.S_IXUSR and launch.read_text().startswith("#!/bin/bash\n")
    assert subprocess.run(["bash", "-n", str(launch)]).returncode == 0
    for cmd in (["fmt", "--check", "recipes/"], ["lint"]):
        code, _, err = _run(cmd, capsys)
        assert code == 0, err


@pytest.mark.parametrize("text, code", [
    ("if true; then\n  xpk run\n", "E1201"),          # unexpected end of file
    ("xpk run 'unterminated\n", "E1201"),
    ("set -e\necho done\n", "E1204"),                 # nothing launched
    ("", "E1204"),
    (b"xpk \xff\n", "E1201"),                          # not UTF-8
])
def test_bad_shell_is_located_and_writes_nothing(text, code, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    src = tmp_path / "launch.sh"
    src.write_bytes(text if isinstance(text, bytes) else text.encode())
    out = tmp_path / "r.rcp"
    rc, stdout, err = _run(["import", "shell", str(src), "-o", str(out)], capsys)
    assert rc == 1 and f"error[{code}]" in err and stdout == ""
    assert not out.exists()


# Words of a command line as a shell author writes them: plain text, single quotes, double
# quotes with escapes, backslashes, $NAME and ${NAME} of the script's params.
_PLAIN = st.text(alphabet="abcXYZ019-_=:,./+@%", min_size=1, max_size=6)
_SQ = st.text(alphabet="ab $\"\\*?{}=-`<()~", max_size=6).map(lambda s: "'" + s + "'")
_DQ = st.lists(st.one_of(st.text(alphabet="ab '{}=-,*?", min_size=1, max_size=4),
                         st.sampled_from(["\\$", "\\\\", '\\"', "\\`", "\\a", "$A-", "${B}", "\\\n"])),
               max_size=4).map(lambda xs: '"' + "".join(xs) + '"')
_BS = st.sampled_from(["\\ ", "\\'", '\\"', "\\$", "\\*", "\\\\"])
_REF = st.sampled_from(["$A/", "${B}", "${A}x"])
WORDS = st.lists(st.lists(st.one_of(_PLAIN, _SQ, _DQ, _BS, _REF), min_size=1, max_size=4).map("".join),
                 min_size=1, max_size=4)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=WORDS)
# bashlex looped on this one and the test process grew to 23 GB (the words of the report)
@example(words=["${B}\\\\${B}'$'", "=_", "\\'${B}\\\"'b=${b?'", "'?'X09/aa'\\*?\\{-',%"])
# bashlex raised a TypeError on the render 0='`' (a quote that does not start the word)
@example(words=['0"=\\`"'])
@example(words=["a'`'", "b='$(x'", "c'<(a'"])
def test_any_quoting_of_words_imports_equal_to_bash(words, tmp_path):
    """The importer's quote removal is bash's: for any quoting of the words (params A and B
    as $A and ${B}), the recipe's command line is the one bash runs (the import proves it;
    here also bash on the file itself)."""
    src = tmp_path / "w.sh"
    # B is not empty: an unquoted ${B} that is empty is no word at all in bash, one empty word
    # in the recipe (docs/migrate.md: unquoted expansions are not split)
    src.write_text('export A="a1"\nexport B="b2"\nxpk ' + " ".join(words) + "\n")
    try:
        theirs = run_bash_stubbed(src.read_text(), ["xpk"])
    except subprocess.CalledProcessError:
        return  # not a command bash runs
    try:
        imported = import_shell(Workspace.find(REPO), src, "w.sh")
    except CompileError as exc:  # a word bashlex loops on: refused, located (tests/test_import_bash.py)
        assert exc.diagnostics[0].code == "E1201" and exc.diagnostics[0].message.endswith(bash.STUCK)
        return
    out = tmp_path / "r.rcp"
    out.write_text(imported.text)
    compiler = proof.fresh_compiler(REPO)
    params = _params(compiler, out)
    renders = proof.build(compiler, out, {k: v for k, v in {"A": "a1", "B": "b2"}.items() if k in params})
    if "launch.sh" in renders:
        assert run_bash_stubbed(renders["launch.sh"], ["xpk"]) == theirs


@pytest.mark.parametrize("kind", ["shell", "manifest"])
@pytest.mark.parametrize("missing", ["nope.sh", "no/such/dir/x.yaml", "dangling"])
def test_importing_a_file_that_does_not_exist_is_a_usage_error(kind, missing, tmp_path, monkeypatch, capsys):
    """A path that names no file is the command line's mistake (exit 2, "no such file"), as for
    rcpc fmt: not E1201, "shell file that bash cannot parse" (a new user's typo). A dangling
    symlink is a file that cannot be read: E1201/E1200 as before."""
    (tmp_path / "rcp.toml").write_text("")
    (tmp_path / "dangling").symlink_to("gone")
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(["import", kind, missing], capsys)
    if missing == "dangling":
        assert code == 1 and "cannot read dangling" in err
    else:
        assert code == 2 and err.strip() == f"rcpc: no such file: {missing}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "rcp.toml"]


@pytest.mark.parametrize("old, new, where", [
    ("per_device_batch_size=2", "per_device_batch_size=abc", "per_device_batch_size="),  # not a number
    ("max_target_length=8192", "max_target_length=8192 no_such_key_q=1", None),           # acknowledged, not an error
])
def test_errors_of_the_import_build_are_at_the_shell_file(old, new, where, tmp_path, monkeypatch, capsys):
    """An error of the recipe rcpc import shell builds (a MaxText value the schema refuses)
    is at the shell file's word, with a hint; nothing names the temporary recipe."""
    monkeypatch.chdir(REPO)
    text = (XPK / "llama3.1-70b_8k-bf16-tpu7x-4x4x4.sh").read_text()
    assert old in text
    src = tmp_path / "launch.sh"
    src.write_text(text.replace(old, new, 1))
    code, _, err = _run(["import", "shell", str(src)], capsys)
    assert "rcpc-import-" not in err and "imported.rcp" not in err
    if where is None:
        assert code == 0, err
        return
    lines = src.read_text().splitlines()
    line = next(i for i, ln in enumerate(lines, 1) if where in ln)
    assert code == 1 and f"{src}:{line}:{lines[line - 1].index(where) + 1}: error[E0311]" in err, err
    assert "\nhelp: " in err


# Statements the import keeps as comments (not converted) that may assign: (the statement with {V} for the
# variable it assigns and {R} for the one it reads, how it assigns)
_UNCONVERTED = [
    'if [ "${R}" = "1" ]; then {V}="${V} per_device_batch_size=4"; fi',
    'while [ -n "${R}" ]; do {V}="${V} steps=2"; break; done',
    'for x in ${R}; do export {V}="${V} steps=$x"; done',
    '[ "${R}" = 1 ] && unset {V}',
    'if [ -n "${R}" ]; then read {V} < /dev/null; fi',
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(statement=st.sampled_from(_UNCONVERTED), reaches=st.sampled_from(["direct", "through", "unrelated"]))
@example(statement=_UNCONVERTED[0], reaches="direct")  # the report: TUNED "not used", the import "equal"
def test_an_unconverted_statement_that_may_change_the_launch_is_said(tmp_path, statement, reaches):
    """A statement kept as a comment that may assign a name the launch command reads (itself or
    through another binding) is W1209, in place of its W1200; the names it reads stay in the
    recipe (no "not used by the launch command"); one that assigns nothing the launch reads
    is a plain W1200 and no W1209."""
    target = {"direct": "ARGS", "through": "EXTRA", "unrelated": "OTHER"}[reaches]
    src = tmp_path / "launch.sh"
    src.write_text('TUNED="${TUNED:-0}"\nEXTRA="steps=10"\nOTHER="x"\nARGS="${EXTRA} log_period=5"\n'
                   + statement.replace("{V}", target).replace("{R}", "TUNED") + "\n"
                   'xpk workload create --workload=w --command="python3 -m MaxText.train '
                   'MaxText/configs/base.yml ${ARGS}"\n')
    imported = import_shell(Workspace.find(REPO), src, "launch.sh")
    codes = [(d.code, d.span.line) for d in imported.notes if d.span is not None and d.span.line == 5]
    said_unused = [d.message for d in imported.notes if "TUNED is not used" in d.message]
    if reaches == "unrelated":
        assert codes == [("W1200", 5)] and said_unused, imported.notes
    else:
        assert codes == [("W1209", 5)] and not said_unused, imported.notes
        assert re.search(r"^TUNED = param\(", imported.text, re.M), imported.text


@pytest.mark.parametrize("schema", [True, False])
def test_the_import_says_when_rcpc_check_will_not_check_the_maxtext_keys(tmp_path, monkeypatch, capsys, schema):
    """A shell import into a workspace whose rcp.toml names no maxtext_schema says that rcpc check
    will not check the MaxText keys, and what to add (a misspelt key passed check silently after an
    import: found by a user trial); with one named, it says nothing of it."""
    (tmp_path / "rcp.toml").write_text('maxtext_schema = "builtin:maxtext"\n' if schema else "")
    (tmp_path / "launch.sh").write_text('ARGS="steps=10"\nxpk workload create --workload=w --command="python3 -m '
                                        'MaxText.train MaxText/configs/base.yml ${ARGS}"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["import", "shell", "launch.sh", "-o", "r.rcp"]) == 0
    status = capsys.readouterr().err.strip().splitlines()[-1]
    assert status.startswith("rcpc: import shell launch.sh: equal")
    assert ('add maxtext_schema = "builtin:maxtext"' in status) != schema, status
