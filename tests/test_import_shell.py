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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rcpc.cli import main
from rcpc.core.fmt import format_source
from rcpc.domain.maxtext import argv as flag_argv
from rcpc.domain.workspace import Workspace
from rcpc.importer import proof
from rcpc.importer.command import split
from rcpc.importer.driver import import_shell

REPO = Path(__file__).resolve().parents[1]
XPK = REPO.parent / "shared" / "data" / "tpu-recipes" / "xpk"
ALL = sorted(p.name for p in XPK.glob("*.sh"))
# The flag blobs that stay strings: a quoted value (tokenizer_path='...', 'fixed,-224,224'), a
# glob (*.arrayrecord) the flag set's shell form would quote, maxdiffusion's repeated keys.
NO_FLAG_SET = {"deepseek3-671b_4k-bf16-tpu7x-4x8x8-gcs.sh", "deepseek3-671b_4k-bf16-tpu7x-4x8x8-lustre.sh",
               "llama3.1-70b_8k-fp8-tpu7x-4x4x4.sh", "wan2.1-14b_bf16-tpu7x-4x4x4.sh"}


def _params(compiler, path: Path) -> dict:
    """The recipe's params and their defaults."""
    recipe, _ = compiler.recipe(path.resolve())
    return {p.name: p.default.value for p in recipe.params}


def _original_argv(src: Path, values: dict) -> list:
    """bash runs the whole original file: each param's assignment line gets the value."""
    text = src.read_text()
    for name, value in values.items():
        text, n = re.subn(rf"^(export )?{name}=.*$", lambda m: f"{m.group(1) or ''}{name}={shlex.quote(value)}",
                          text, count=1, flags=re.M)
        assert n == 1, name
    stubs = "source() { :; }\npip() { return 0; }\n"
    return proof.run_stubbed(stubs + text, ["xpk"])


def test_fifteen_shell_recipes():
    assert len(ALL) == 15


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
    renders = proof.build(compiler, out, values)
    assert list(renders) == ["launch.sh"]
    ours = proof.run_stubbed(renders["launch.sh"], ["xpk"])
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
    assert "XLA_FLAGS = [" in imported.text and libtpu is not None


@pytest.mark.parametrize("name", ALL)
def test_nothing_is_dropped_silently(name):
    """Every top-level statement of the file is converted or kept as a TODO(import) comment,
    and every TODO is listed (W1200)."""
    imported = import_shell(Workspace.find(REPO), XPK / name, name)
    src = (XPK / name).read_text()
    text = imported.text
    todos = text.count("# TODO(import)")
    assert todos == sum(1 for d in imported.notes if d.code == "W1200") > 0
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
        (line,) = proof.run_stubbed(proof.build(compiler, out, {"TUNED": tuned})["launch.sh"], ["xpk"])
        assert ("remat_policy=full" in line[-1]) is (tuned == "true")


def test_a_recipe_that_differs_is_not_equal(tmp_path):
    """The proof can fail: one changed word of the command line is found."""
    name = "llama3.1-70b_8k-bf16-tpu7x-4x4x4.sh"
    imported = import_shell(Workspace.find(REPO), XPK / name, name)
    out = tmp_path / "r.rcp"
    out.write_text(imported.text.replace('"--priority=very-high"', '"--priority=high"'))
    found = imported.check(proof.fresh_compiler(REPO), out)
    assert found and "$argv[0][6]" in found[0] and "--priority=high" in found[0]
    out.write_text(imported.text.replace('"steps": 30,', '"steps": 31,'))
    assert imported.check(proof.fresh_compiler(REPO), out)


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
    assert "equal (a command_file render)" in err and "warning[W1200]: TODO(import)" in err
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


def test_missing_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    rc, _, err = _run(["import", "shell", str(tmp_path / "none.sh")], capsys)
    assert rc == 1 and "error[E1201]" in err


# Words of a command line as a shell author writes them: plain text, single quotes, double
# quotes with escapes, backslashes, $NAME and ${NAME} of the script's params.
_PLAIN = st.text(alphabet="abcXYZ019-_=:,./+@%", min_size=1, max_size=6)
_SQ = st.text(alphabet="ab $\"\\*?{}=-", max_size=6).map(lambda s: "'" + s + "'")
_DQ = st.lists(st.one_of(st.text(alphabet="ab '{}=-,*?", min_size=1, max_size=4),
                         st.sampled_from(["\\$", "\\\\", '\\"', "\\`", "\\a", "$A-", "${B}", "\\\n"])),
               max_size=4).map(lambda xs: '"' + "".join(xs) + '"')
_BS = st.sampled_from(["\\ ", "\\'", '\\"', "\\$", "\\*", "\\\\"])
_REF = st.sampled_from(["$A/", "${B}", "${A}x"])
WORDS = st.lists(st.lists(st.one_of(_PLAIN, _SQ, _DQ, _BS, _REF), min_size=1, max_size=4).map("".join),
                 min_size=1, max_size=4)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=WORDS)
def test_any_quoting_of_words_imports_equal_to_bash(words, tmp_path):
    """The importer's quote removal is bash's: for any quoting of the words (params A and B
    as $A and ${B}), the recipe's command line is the one bash runs (the import proves it;
    here also bash on the file itself)."""
    src = tmp_path / "w.sh"
    # B is not empty: an unquoted ${B} that is empty is no word at all in bash, one empty word
    # in the recipe (docs/migrate.md: unquoted expansions are not split)
    src.write_text('export A="a1"\nexport B="b2"\nxpk ' + " ".join(words) + "\n")
    try:
        theirs = proof.run_stubbed(src.read_text(), ["xpk"])
    except subprocess.CalledProcessError:
        return  # not a command bash runs
    imported = import_shell(Workspace.find(REPO), src, "w.sh")
    out = tmp_path / "r.rcp"
    out.write_text(imported.text)
    compiler = proof.fresh_compiler(REPO)
    params = _params(compiler, out)
    renders = proof.build(compiler, out, {k: v for k, v in {"A": "a1", "B": "b2"}.items() if k in params})
    if "launch.sh" in renders:
        assert proof.run_stubbed(renders["launch.sh"], ["xpk"]) == theirs
