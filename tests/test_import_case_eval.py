"""``case ... esac`` and ``eval`` in a shell launch recipe (issue 39, kind 4: the ironwood
MaxDiffusion inference script was E1201, bashlex has no ``case``, and it launches with
``eval ${cmd}``).

* the interpreter (:mod:`rcpc.importer.interpret`, the proof's reading of a script, which
  runs nothing) gives the command lines real bash runs, for generated scripts of cases
  (alternations, quoted and bare patterns, a ``*`` arm) and evals of strings built with
  quotes;
* ``rcpc import shell`` makes a case on a param its ``choices`` and one lookup a name, and an
  eval of a string the script sets the command that string spells, proven equal; bash runs
  the same command lines from the script and from the render for every choice (the
  published script among the examples);
* an eval of a string rcpc cannot know is a ``TODO(import)`` saying why, with a hint, and
  E1204 when it was the only launch.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import run_bash_stubbed
from test_import_shapes import _import
from rcpc.core.diagnostics import CompileError
from rcpc.domain.lint import lint
from rcpc.importer import interpret, proof

REPO = Path(__file__).resolve().parents[1]
WAN = REPO.parent / "shared" / "data" / "tpu-recipes" / "more" / \
    "inference_ironwood_MaxDiffusion_Wan2.x_Wan2.1-T2V_run_recipe.sh"
SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
ENV = ("PROJECT_ID", "CLUSTER_NAME", "ZONE", "BASE_OUTPUT_DIR", "HF_TOKEN")


# the interpreter ---------------------------------------------------------------------------
_VALUE = st.sampled_from(["a", "b", "7x-8", "tpu7x-2x2x1", "720p", "x y"])
_PATTERN = st.sampled_from(["bare", "double", "single"])


def _pattern(value: str, how: str) -> str:
    if how == "bare" and " " not in value:
        return value
    return f"'{value}'" if how == "single" else f'"{value}"'


@st.composite
def _case_scripts(draw):
    """A script setting P, a case on P (arms of alternations, perhaps a '*' arm), then a
    launch built in a string and run by eval (or run directly)."""
    values = draw(st.lists(_VALUE, min_size=1, max_size=4, unique=True))
    arms, n = [], 0
    for v in values:
        group = [v] + ([f"{v}-alt"] if draw(st.booleans()) else [])
        body = f"W={n}; Q='{v} q'" if draw(st.booleans()) else f"W={n}\n    Q='{v} q'"
        arms.append(f"  {' | '.join(_pattern(g, draw(_PATTERN)) for g in group)}) {body} ;;")
        n += 1
    if draw(st.booleans()):
        arms.append("  *) W=none; Q=other ;;")
    p = draw(st.sampled_from(values + ["unmatched"]))
    quote = draw(st.sampled_from(['"$P"', "$P", '"${P}"']))
    launch = draw(st.sampled_from([
        "cmd=\"xpk run --w=$W --q='$Q' --c='a && b'\"\neval ${cmd}",
        'cmd="xpk run --w=$W"\neval "$cmd --q=\'$Q\'"',
        "eval xpk run \"--w=$W\" \"'$Q'\"",
        "FLAGS=\"'\\\"'\\\"'k=v'\\\"'\\\"' x=1\"\ncmd=\"xpk run --command='go $FLAGS --w=$W'\"\neval ${cmd}",
        'xpk run "--w=$W" "--q=$Q"',
    ]))
    return f"P={shlex.quote(p)}\nW=unset\nQ=unset\ncase {quote} in\n" + "\n".join(arms) + "\nesac\n" + launch + "\n"


@SETTINGS
@given(text=_case_scripts())
@example(text="P=b\nW=u\ncase \"$P\" in\n  a | \"b\") W=1 ;;\n  *) W=2 ;;\nesac\ncmd=\"xpk --w=$W\"\neval ${cmd}\n")
@example(text="P=b\ncase $P in a) X=1 ;; (b) X=2; Y=3 ;; *) echo no; exit 1;; esac; xpk \"$X$Y\"\n")  # one line
def test_the_interpreter_runs_case_and_eval_as_bash_does(text):
    assert interpret.run(text, ["xpk"]) == run_bash_stubbed(text, ["xpk"])


@pytest.mark.parametrize("text, words", [
    ("X=1\ncase $X in\n  1) c='xpk $(date)'; eval \"$c\" ;;\nesac\n", "in the string eval runs, at offset 4"),
    ("eval \"xpk $(date)\"\n", "command substitution"),
    ("eval 'xpk \"'\n", "not shell the parser reads"),
    ("X=1\ncase $X in\n  1*) xpk a ;;\nesac\n", "glob pattern"),
    ("c='eval eval eval eval eval eval eval eval eval xpk'\neval $c\n", "eval nested more than 8 deep"),
])
def test_what_the_interpreter_does_not_follow_is_unsupported_at_its_place(text, words):
    with pytest.raises(interpret.Unsupported) as exc:
        interpret.run(text, ["xpk"])
    assert words in exc.value.message


@pytest.mark.parametrize("text, offset", [
    ("case x in\n  a) y ;&\nesac\n", 15),
    ("case x in\n  a) case y in b) ;; esac ;;\nesac\n", 15),
    ("X=1\ncase $X in\n  a) Y=1 ;;\n", 26),  # an early end: at the text's end
    ("case x\n  a) y ;;\nesac\n", 7),
])
def test_a_case_the_front_end_cannot_read_is_e1201_at_its_place(text, offset, tmp_path):
    with pytest.raises(CompileError) as exc:
        _import(tmp_path, "s.sh", text)
    d = exc.value.diagnostics[0]
    line = text.count("\n", 0, offset) + 1
    assert d.code == "E1201" and d.span.line == line, (d.message, d.span)


# the import --------------------------------------------------------------------------------
# values of a str param (a number or true/false would make it an int, float or bool param)
_CHOICES = st.lists(st.from_regex(r"[a-z][a-z0-9.-]{0,6}", fullmatch=True).filter(lambda v: v not in ("true", "false")),
                    min_size=1, max_size=3, unique=True)


@st.composite
def _launch_scripts(draw):
    """A script: params from the environment and with defaults, a case on one assigning
    values in its arms (an int, a float, a string; alternations), a '*' arm that exits, a
    command string using them all, and eval of it."""
    choices = draw(_CHOICES)
    alts = {c: draw(st.booleans()) for c in choices}
    keys = [k for c in choices for k in ([c, f"{c}-alt"] if alts[c] else [c])]
    default = draw(st.sampled_from(keys))
    arms = []
    for i, c in enumerate(choices):
        pats = " | ".join(f'"{k}"' for k in ([c, f"{c}-alt"] if alts[c] else [c]))
        arms.append(f"  {pats})\n    N={i + 1}\n    F=0.{i + 5}\n    T=\"t-{c}\"\n    ;;")
    arms.append("  *)\n    echo \"Error: unsupported $KIND\"\n    exit 1\n    ;;")
    quote = draw(st.sampled_from(["'\"'\"'", "'"]))
    evaluated = draw(st.sampled_from(["eval ${cmd}", 'eval "$cmd"', "eval $cmd"]))
    text = (f'export ZONE="${{ZONE}}"\nexport KIND="${{KIND:-{default}}}"\n'
            "case \"$KIND\" in\n" + "\n".join(arms) + f"\nesac\nARGS=\"k={quote}v{quote} n=$N f=$F\"\n"
            "cmd=\"xpk workload create --zone=$ZONE --type=$T \\\n  --command='set -e && run ${ARGS}'\"\n"
            + evaluated + "\n")
    return text, keys


def _bash_equal(out: Path, text: str, values: dict) -> None:
    """bash runs the same xpk command line from the render and from the script, with
    ``values`` set (in the script's environment; as params of the render)."""
    ours = run_bash_stubbed(proof.build(proof.fresh_compiler(REPO), out, values)["launch.sh"], ["xpk"])
    env = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in values.items())
    assert ours == run_bash_stubbed(env + text, ["xpk"])


@settings(SETTINGS, max_examples=5)
@given(file=_launch_scripts())
def test_a_case_and_an_eval_import_as_choices_lookups_and_the_command(file, tmp_path):
    """The case's param has the patterns as choices, each name it sets a lookup; eval's
    string is the command it spells, its words the recipe's expressions (the string's binding
    said to be the launch command, not a name it does not use); the proof holds, and bash runs
    the same command for every choice."""
    text, keys = file
    imported, out = _import(tmp_path, "s.sh", text)
    assert f"choices = [{', '.join(chr(34) + k + chr(34) for k in keys)}]" in imported.text.replace("\n    ", " ")
    assert "[KIND]" in imported.text and "command_file(" in imported.text and "TODO(import): not converted" not in \
        imported.text
    # the eval's string is the launch command: not "not used by the launch command" (found by a user trial)
    assert not [d for d in imported.notes if "cmd is not used" in d.message], imported.notes
    assert "# TODO(import): not used by the launch command:\n#     cmd=" not in imported.text
    assert imported.check(proof.fresh_compiler(REPO), out) == []
    for k in keys:
        _bash_equal(out, text, {"ZONE": "z-1", "KIND": k})


@pytest.mark.parametrize("values", [
    {},
    {"TPU_TYPE": "7x-16", "RESOLUTION": "480p"},
    {"TPU_TYPE": "tpu7x-2x2x1", "RESOLUTION": "720p"},
])
def test_the_published_maxdiffusion_script_imports_equal(values, tmp_path):
    """The ironwood MaxDiffusion inference script (E1201 before): equal by the import's
    proof; bash running its launch part (after its environment setup) with the environment's
    variables, and bash running the render with the same values, run the same xpk command line,
    for each resolution and TPU type; the recipe is lint clean."""
    text = WAN.read_text()
    imported, out = _import(tmp_path, WAN.name, text)
    assert imported.how.startswith("a command_file render")
    assert 'TPU_TYPE = param(str, default = "7x-8", choices = ["7x-8", "tpu7x-2x2x1", "7x-16", "tpu7x-2x2x2"])' \
        in imported.text
    assert 'WIDTH = {"720p": 1280, "480p": 832}[RESOLUTION]' in imported.text
    assert imported.check(proof.fresh_compiler(REPO), out) == []
    assert [d.code for d in lint(proof.fresh_compiler(REPO), [out]) if d.severity == "error"] == []
    values = {k: f"t-{k.lower().replace('_', '-')}" for k in ENV} | {"WORKLOAD_NAME": "w-1"} | values
    launch = text[text.index("# --- Configuration ---"):]
    _bash_equal(out, launch, values)


@pytest.mark.parametrize("statement, why", [
    ("eval ${REMOTE_CMD}", "$REMOTE_CMD is not set by the script"),
    ('export REMOTE_CMD="${REMOTE_CMD}"\neval ${REMOTE_CMD}', "its command is $REMOTE_CMD"),
    ('eval "$(curl -s https://example.com/cmd)"', "a command substitution"),
    ('cmd="xpk a; xpk b"\neval ${cmd}', "eval runs 2 commands"),
    ('cmd="cd /tmp"\neval ${cmd}', "is not a launch program"),
])
def test_an_eval_of_a_string_rcpc_cannot_know_is_a_todo_with_a_hint(statement, why, tmp_path):
    """Alone, it is E1204 (nothing to launch) listing why; beside a launch, a W1200
    TODO(import) at the eval with the hint."""
    with pytest.raises(CompileError) as exc:
        _import(tmp_path, "s.sh", statement + "\n")
    d = exc.value.diagnostics[0]
    assert d.code == "E1204" and any(why in n for n in d.notes), d.notes
    imported, _ = _import(tmp_path, "t.sh", statement + "\nxpk run --x=1\n")
    (note,) = [n for n in imported.notes if "eval" in n.message]
    assert why in note.message and "eval ${cmd}" in note.hint and note.span.line == statement.count("\n") + 1
