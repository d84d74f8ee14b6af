"""``rcpc import shell`` runs nothing a script says (issue 37, kinds 1 and 2).

The proof of an import interprets the script's syntax tree (:mod:`rcpc.importer.interpret`);
these tests hold it to two things:

* **nothing acts**: every bash construct that can run a program or write a file, generated at
  every place a launch script can hold it (a statement, a launch command's word, a value the
  command uses, a flag layer, its condition, a param's default), leaves the file system outside
  the import's output untouched; each construct is first shown to act under real bash (the
  canary), so the test could fail;
* **the meaning is bash's**: on generated scripts of the subset it interprets (assignments with
  every quoting, expansions, splitting, flag layers, launch commands), it gives the command
  lines real bash gives (:func:`conftest.run_bash_stubbed`, on the tests' own scripts).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import run_bash_stubbed
from rcpc.cli import main
from rcpc.importer import interpret

REPO = Path(__file__).resolve().parents[1]

# Each construct acts on the file MARK when bash runs it (MARK is an absolute path); "SRC" is a
# script that, when sourced or run, writes MARK.
ACTING = [
    "$(touch MARK)", "`touch MARK`", "<(touch MARK)", ">(touch MARK)", "$(( $(touch MARK) 0 ))",
    "${X:=$(touch MARK)}", "${X:-$(touch MARK)}", "${UNSET_X?$(touch MARK)}", "$[ $(touch MARK) 1 ]",
    "\"$(touch MARK)\"", "\"`touch MARK`\"", "a{b,$(touch MARK)}",
]
STATEMENTS = [
    "touch MARK", "echo x > MARK", "echo x >> MARK", "xpk run 2> MARK", "xpk run &> MARK", "xpk run >| MARK",
    "xpk run <> MARK", "eval 'touch MARK'", "source SRC", ". SRC", "exec touch MARK", "command touch MARK",
    "builtin eval 'touch MARK'", "bash -c 'touch MARK'", "bash SRC", "trap 'touch MARK' EXIT", "f() { touch MARK; }; f",
    "xpk run && touch MARK", "xpk run || touch MARK", "xpk run | tee MARK", "xpk run & touch MARK", "{ touch MARK; }",
    "(touch MARK)", "for i in 1; do touch MARK; done", "while true; do touch MARK; break; done",
    "case x in x) touch MARK;; esac", "coproc touch MARK", "time touch MARK", "cat > MARK <<EOF\nx\nEOF",
    "declare -x A=$(touch MARK)", "export RCPC_ARGV=MARK", "printf x > MARK", "read A < SRC && touch MARK",
    "if touch MARK; then :; fi", "PATH=/nonexistent xpk run", "BASH_ENV=SRC bash -c :", "alias xpk='touch MARK'",
    "PROMPT_COMMAND='touch MARK'", "IFS=/; xpk $(touch MARK)", "set -e; touch MARK",
]

BASE = """#!/bin/bash
export WORKLOAD_NAME="w1"
STEPS="${STEPS:-10}"
TUNED=false
ARGS="steps=${STEPS} run_name=${WORKLOAD_NAME}"
if [ "$TUNED" = true ]; then
  ARGS="$ARGS remat_policy=full"
fi
xpk workload create --workload="$WORKLOAD_NAME" --command="python3 -m MaxText.train MaxText/configs/base.yml ${ARGS}"
"""


def _placed(construct: str, where: str) -> str:
    """BASE with ``construct`` (an expansion) or a statement placed ``where``."""
    if where == "statement-first":
        return BASE.replace("export WORKLOAD_NAME", construct + "\nexport WORKLOAD_NAME", 1)
    if where == "statement-last":
        return BASE + construct + "\n"
    if where == "command-word":
        return BASE.replace('--workload="$WORKLOAD_NAME"', f'--workload="$WORKLOAD_NAME" {construct}')
    if where == "command-quoted":
        return BASE.replace("${ARGS}\"", "${ARGS} " + construct.replace('"', '\\"') + '"')
    if where == "used-value":
        return BASE.replace('run_name=${WORKLOAD_NAME}"', "run_name=${WORKLOAD_NAME} tag=" + construct + '"')
    if where == "layer":
        return BASE.replace("remat_policy=full", "remat_policy=" + construct)
    if where == "condition":
        return BASE.replace('[ "$TUNED" = true ]', f'[ "$TUNED" = {construct} ]')
    if where == "param-default":
        return BASE.replace('"${STEPS:-10}"', '"${STEPS:-' + construct + '}"')
    raise AssertionError(where)


EXPANSION_PLACES = ["command-word", "command-quoted", "used-value", "layer", "condition", "param-default"]
STATEMENT_PLACES = ["statement-first", "statement-last"]


def _tree(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*")) if not p.is_symlink()}


def _fill(text: str, sandbox: Path) -> str:
    return text.replace("MARK", shlex.quote(str(sandbox / "MARK"))).replace("SRC", shlex.quote(str(sandbox / "src.sh")))


@pytest.fixture
def sandbox(tmp_path):
    box = tmp_path / "box"
    box.mkdir()
    (box / "src.sh").write_text(f"touch {shlex.quote(str(box / 'MARK'))}\n")
    return box


@pytest.mark.parametrize("construct", ACTING + STATEMENTS)
def test_each_construct_acts_under_bash(construct, sandbox):
    """The canary: real bash, given the construct (the launch program a no-op), writes MARK,
    so the import tests below would see it if the import ran the construct."""
    import subprocess

    env = {"PATH": os.environ["PATH"], "HOME": str(sandbox)}
    text = construct if construct in STATEMENTS else f"xpk() {{ :; }}\nxpk {construct}"
    if construct.startswith("alias"):
        text = "shopt -s expand_aliases\n" + construct + "\nxpk run"
    elif construct.startswith("PROMPT_COMMAND"):
        text = construct + "\neval \"$PROMPT_COMMAND\""
    elif construct.startswith("export RCPC_ARGV"):
        text = construct + "\ntouch \"$RCPC_ARGV\""  # the harness of before appended to this file
    elif construct.startswith("PATH="):
        text = "xpk() { :; }\n" + construct + "; touch MARK"  # a function ignores PATH: MARK shows it ran
    elif construct.startswith("xpk run"):
        text = ("xpk() { return 1; }\n" if "||" in construct else "xpk() { :; }\n") + construct
    subprocess.run(["bash", "--noprofile", "--norc", "-c", _fill(text, sandbox)], cwd=sandbox, env=env,
                   stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    assert (sandbox / "MARK").exists(), construct


def _import(tmp_path: Path, text: str, sandbox: Path) -> tuple[int, dict, dict]:
    ws = tmp_path / "ws"
    (ws / "recipes").mkdir(parents=True, exist_ok=True)
    (ws / "rcp.toml").write_text('recipe_dirs = ["recipes"]\n')
    src = ws / "launch.sh"
    src.write_text(_fill(text, sandbox))
    before = _tree(tmp_path)
    out = ws / "recipes" / "imported.rcp"
    cwd = os.getcwd()
    os.chdir(ws)
    try:
        code = main(["import", "shell", str(src), "-o", str(out)])
    finally:
        os.chdir(cwd)
    after = _tree(tmp_path)
    after.pop(str(out.relative_to(tmp_path)), None)
    return code, before, after


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(construct=st.sampled_from(ACTING), where=st.sampled_from(EXPANSION_PLACES))
@example(construct="<(touch MARK)", where="command-word")  # the reported case: kubectl apply -f <(touch X)
def test_no_expansion_anywhere_runs(construct, where, tmp_path_factory):
    _runs_nothing(tmp_path_factory.mktemp("imp"), _placed(construct, where))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(statement=st.sampled_from(STATEMENTS), where=st.sampled_from(STATEMENT_PLACES))
@example(statement="export RCPC_ARGV=MARK", where="statement-first")  # the reported harness variable
def test_no_statement_anywhere_runs(statement, where, tmp_path_factory):
    _runs_nothing(tmp_path_factory.mktemp("imp"), _placed(statement, where))


def _runs_nothing(tmp_path, script: str) -> None:
    """Importing ``script`` (a sourced ``box/src.sh`` would make ``box/MARK``) makes no MARK and
    changes nothing but its output, whether it imports (0) or not (1)."""
    box = tmp_path / "box"
    box.mkdir()
    (box / "src.sh").write_text(f"touch {shlex.quote(str(box / 'MARK'))}\n")
    code, before, after = _import(tmp_path, script, box)
    assert code in (0, 1)
    assert not (box / "MARK").exists()
    assert after == before


def test_the_reported_process_substitution_is_kept_as_text_to_review(tmp_path):
    """``kubectl apply -f <(touch X; ...)``: the command is not converted (a TODO), and X is
    never made."""
    box = tmp_path / "box"
    box.mkdir()
    text = BASE + "kubectl apply -f <(touch MARK; echo '{}')\n"
    code, before, after = _import(tmp_path, text, box)
    assert code == 0 and not (box / "MARK").exists() and after == before
    recipe = (tmp_path / "ws" / "recipes" / "imported.rcp").read_text()
    assert "# TODO(import)" in recipe and "kubectl" not in recipe.split("# TODO(import)")[0]


# the meaning is bash's ------------------------------------------------------------------------
_VALUE = st.text(alphabet=st.sampled_from(list("ab =,-:/.@%+_\t\n")), max_size=8)


@st.composite
def _word(draw, names: list[str], strict: bool) -> str:
    """A shell word of quoted and unquoted literal text and ``$NAME``/``${NAME}`` references;
    ``strict``: only what the interpreter reads (no glob, tilde, brace or ``$`` specials)."""
    wild = "" if strict else "{}*?~`"
    parts: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["plain", "single", "double", "ref", "dref", "escape", "empty"]))
        if kind == "plain":
            text = draw(st.text(alphabet=st.sampled_from(list("ab=,-:/.@%+_")), min_size=1, max_size=5))
            bare = parts and parts[-1].startswith("$V") and not parts[-1].startswith("${")
            parts.append(("/" if bare else "") + text)  # $V0a would be the name V0a
        elif kind == "single":
            quoted = "ab $\"\\{}~`;|&<>()\n" + wild  # a glob character in a value split unquoted is refused
            parts.append("'" + draw(st.text(alphabet=st.sampled_from(list(quoted)), max_size=5)) + "'")
        elif kind == "double":
            refs = [f"${n}/" for n in names] + [f"${{{n}}}" for n in names]  # "$V0a" names V0a
            inner = draw(st.lists(st.one_of(
                st.text(alphabet=st.sampled_from(list("ab ';|&<>()\n,{}~" + wild)), min_size=1, max_size=3),
                st.sampled_from(['\\"', "\\\\", "\\$", "\\`", "\\a", "$ "] + refs)), max_size=4))
            parts.append('"' + "".join(inner) + '"')
        elif kind in ("ref", "dref") and names:
            n = draw(st.sampled_from(names))
            parts.append(f"${{{n}}}" if kind == "dref" else f"${n}")
        elif kind == "escape":
            parts.append("\\" + draw(st.sampled_from(list("ab $'\"\\;|&<>()" + wild))))
        elif kind == "empty":
            parts.append(draw(st.sampled_from(["''", '""'])))
        if not strict and draw(st.integers(0, 9)) == 0:
            parts.append(draw(st.sampled_from(["*", "a?", "~", "{a,b}", "$?", "$1", "${V0:-x}", "$'x'"])))
    word = "".join(parts)
    return word if not word.startswith("#") else "x" + word


@st.composite
def _script(draw, strict: bool = False) -> str:
    names: list[str] = []
    lines = []
    for i in range(draw(st.integers(0, 4))):
        name = f"V{i}"
        value = draw(st.one_of(_word(names, strict), _VALUE.map(shlex.quote)))
        lines.append(f"{name}={value}")
        names.append(name)
    if names and draw(st.booleans()):
        flag = names[0]
        cond = draw(st.sampled_from([f'[ "${flag}" = x ]', f'[[ ${flag} == "a" ]]', f'[ "${flag}" != b ]']))
        body = f'{draw(st.sampled_from(names))}={draw(_word(names, strict))}'
        lines.append(f"if {cond}; then\n  {body}\nfi")
    for _ in range(draw(st.integers(1, 2))):
        words = draw(st.lists(_word(names, strict), min_size=0, max_size=5))
        lines.append(" ".join(["xpk", *words]))
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None)
@given(text=_script())
@example(text="V0=' b '\nxpk \"\"$V0 $V0\"\" a$V0 \"$V0\"\n")  # explicit and implicit nulls around a split
@example(text="V0=\nxpk $V0 \"\"$V0 $V0$V0 '' a\"$V0\"\n")
@example(text="V0=a\nif [ \"$V0\" = a ]; then\n  V0=\"$V0 b\"\nfi\nxpk $V0\n")
def test_the_interpreter_never_reads_otherwise_than_bash(text):
    """Any script: the interpreter refuses it or gives the command lines bash gives."""
    try:
        ours = interpret.run(text, ["xpk"])
    except interpret.Unsupported:
        return  # refused: the import then keeps it as text to review; never a wrong reading
    assert ours == run_bash_stubbed(text, ["xpk"])


@settings(max_examples=150, deadline=None)
@given(text=_script(strict=True))
def test_the_interpreted_subset_reads_as_bash_reads_it(text):
    """Scripts of the subset the module docstring lists: interpreted, never refused, and equal
    to bash (unless bashlex itself cannot parse the text)."""
    try:
        ours = interpret.run(text, ["xpk"])
    except interpret.Unsupported as exc:
        assert "shell parser" in exc.message, exc.message
        return
    assert ours == run_bash_stubbed(text, ["xpk"])


def test_the_published_recipes_read_the_same_as_under_bash():
    """The 15 published XPK scripts' launch commands, their params given: the interpreter and
    bash (its setup statements stubbed) agree word for word (the import tests prove the recipes
    against the interpreter)."""
    from rcpc.importer import shell

    xpk = REPO.parent / "shared" / "data" / "tpu-recipes" / "xpk"
    for path in sorted(xpk.glob("*.sh")):
        script = shell.read(path, path.name)
        values = {b.name: f"v-{b.name.lower()}" for b in script.bindings.values() if b.kind == "param"}
        derived = shell.derived_script(script, values)
        assert interpret.run(derived, ["xpk"]) == run_bash_stubbed(derived, ["xpk"]), path.name
