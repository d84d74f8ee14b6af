"""Variant diff contracts, `rcpc diff` and `rcpc check` (DESIGN.md §3.4)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.cli import main

BASE = '''
TUNED = param(bool, default = False)
EXTRA = param(bool, default = False)
LR = param(str, default = "1e-6")
FLAGS = maxtext_flags(
    {"custom_mesh_and_rule": "cp-as-ep", "packing": True, "learning_rate": 1e-6},
    {"custom_mesh_and_rule": "cp-as-ep-dense-no-cp"} if TUNED else {},
    {"packing": true} if EXTRA else {},
)
flag_file(name = "trainer", flags = FLAGS)
jobset(name = "trainer", spec = {"args": FLAGS.argv})
jobset(name = "orchestrator", spec = {"lr": LR})
variant("default")
'''


def workspace(tmp_path, monkeypatch, variants: str):
    (tmp_path / "rcp.toml").write_text("")
    (tmp_path / "recipes").mkdir(exist_ok=True)
    (tmp_path / "recipes" / "r.rcp").write_text(BASE + variants)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_contract_holds(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch, 'variant("tuned", set = {"TUNED": True}, against = "default", '
                                     'changes = {"trainer": ["custom_mesh_and_rule"]})\n')
    code, _, err = run(capsys, "check")
    assert code == 0, err
    assert "checked 1 recipe(s), 2 variant(s), 0 libraries: ok" in err
    assert run(capsys, "build")[0] == 0
    assert (tmp_path / "rcpc-out" / "r" / "tuned" / "trainer.flags").read_text().endswith(
        "custom_mesh_and_rule=cp-as-ep-dense-no-cp\n")


def test_extra_render_change_is_reported(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch, 'variant("tuned", set = {"TUNED": True, "LR": "2e-6"}, against = "default", '
                                     'changes = {"trainer": ["custom_mesh_and_rule"]})\n')
    code, _, err = run(capsys, "check")
    assert code == 1
    assert "r.rcp:14:1: error[E0610]: variant 'tuned' breaks its contract against 'default'" in err
    assert "orchestrator.yaml is changed but not declared in changes" in err
    assert "custom_mesh_and_rule: cp-as-ep → cp-as-ep-dense-no-cp" in err


def test_declared_change_that_does_not_happen_is_reported(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch, 'variant("tuned", set = {"TUNED": False}, against = "default", '
                                     'changes = {"trainer": ["custom_mesh_and_rule"]})\n')
    code, _, err = run(capsys, "check")
    assert code == 1
    assert "trainer.flags is declared to change but is byte-identical" in err
    assert "actual delta: none" in err


def test_flag_delta_must_equal_declared_keys(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch,
              'variant("tuned", set = {"TUNED": True}, against = "default", '
              'changes = {"trainer": ["custom_mesh_and_rule", "packing"]})\n'
              'variant("more", set = {"TUNED": True}, against = "default", changes = {"trainer": []})\n')
    code, _, err = run(capsys, "check")
    assert code == 1
    assert "trainer.flags: packing declared to change but did not" in err
    assert "trainer.flags: effective value of custom_mesh_and_rule changed but is not declared" in err


def test_respelled_override_is_no_effective_change_and_not_explained(tmp_path, monkeypatch, capsys):
    # packing=True -> packing=true appends a token (bytes differ) but MaxText's value is the
    # same: no effective change, and a token of an undeclared key in both renders
    workspace(tmp_path, monkeypatch, 'variant("x", set = {"EXTRA": True}, against = "default", '
                                     'changes = {"trainer": []})\n')
    code, _, err = run(capsys, "check")
    assert code == 1
    assert "trainer.flags changed\n  note:     no flag's effective value changes" in err
    # one E0612 for the key, in every shape that carries it (a .flags file, an args list)
    assert ("error[E0612]: variant 'x' changes trainer.flags and 1 more place(s): the tokens of flag 'packing' "
            "change (packing=True → packing=True, packing=true) but its effective value does not") in err
    assert "note: in: trainer.flags, trainer.yaml at spec.args" in err
    assert "the last token is made here: recipes/r.rcp:8:6" in err
    # declaring the key does not help: its effective value does not change (too small)
    workspace(tmp_path, monkeypatch, 'variant("x", set = {"EXTRA": True}, against = "default", '
                                     'changes = {"trainer": ["packing"]})\n')
    code, _, err = run(capsys, "check")
    assert code == 1 and "trainer.flags: packing declared to change but did not" in err
    assert "the tokens of flag 'packing' change (packing=True → packing=True, packing=true) but its " \
           "effective value does not" in err


def test_contract_naming_a_missing_render(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch, 'variant("tuned", set = {"TUNED": True}, against = "default", '
                                     'changes = {"trainr": ["custom_mesh_and_rule"]})\n')
    code, _, err = run(capsys, "check")
    assert code == 1
    assert "error[E0611]: changes names render 'trainr', which does not exist" in err


def test_build_writes_nothing_when_a_contract_breaks(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch, 'variant("tuned", set = {"TUNED": True}, against = "default", '
                                     'changes = {"orchestrator": []})\n')
    code, _, err = run(capsys, "build")
    assert code == 1 and "E0610" in err
    assert not (tmp_path / "rcpc-out").exists()
    # --variant alone still checks against the variant it names
    code, _, err = run(capsys, "build", "--variant", "tuned")
    assert code == 1 and "E0610" in err


def test_against_must_name_a_variant(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch, 'variant("tuned", set = {"TUNED": True}, against = "defualt", '
                                     'changes = {"trainer": []})\n')
    code, _, err = run(capsys, "check")
    assert code == 1
    assert "error[E0605]" in err and "did you mean 'default'?" in err


def test_diff_text(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch, 'variant("tuned", set = {"TUNED": True}, against = "default", '
                                     'changes = {"trainer": ["custom_mesh_and_rule"]})\n')
    code, out, _ = run(capsys, "diff", "r", "--variant", "tuned")
    assert code == 0
    assert out.splitlines()[0] == "r: variant tuned against default"
    assert "trainer.flags: changed\n  custom_mesh_and_rule: cp-as-ep → cp-as-ep-dense-no-cp\n" in out
    assert "+custom_mesh_and_rule=cp-as-ep-dense-no-cp\n" in out
    assert "orchestrator.yaml: identical" in out
    # against itself: everything identical, still exit 0
    code, out, _ = run(capsys, "diff", "r", "--variant", "tuned", "--against", "tuned")
    assert code == 0 and "changed" not in out


def test_diff_json(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch, 'variant("tuned", set = {"TUNED": True})\n')
    code, out, _ = run(capsys, "diff", "r", "--variant", "tuned", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["against"] == "default"
    by_name = {r["render"]: r for r in doc["renders"]}
    assert by_name["orchestrator.yaml"] == {"render": "orchestrator.yaml", "status": "identical", "diff": ""}
    assert by_name["trainer.flags"]["flags"] == [
        {"key": "custom_mesh_and_rule", "old": "cp-as-ep", "new": "cp-as-ep-dense-no-cp"}]


@pytest.mark.parametrize("argv, code", [(["diff", "r", "--variant", "nope"], 1),
                                         (["diff", "nope", "--variant", "default"], 2)])
def test_diff_errors(tmp_path, monkeypatch, capsys, argv, code):
    workspace(tmp_path, monkeypatch, "")
    got, _, err = run(capsys, *argv)
    assert got == code and "Traceback" not in err
    if code == 1:
        assert "error[E0607]: recipe r has no variant 'nope'" in err


def test_changes_need_against(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch, 'variant("v", set = {"TUNED": True}, changes = {"trainer": []})\n')
    code, _, err = run(capsys, "check")
    assert code == 1 and "error[E0609]" in err


def test_check_reports_every_recipe(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch, "")
    (tmp_path / "recipes" / "bad1.rcp").write_text("X = Y\n")
    (tmp_path / "recipes" / "bad2.rcp").write_text('jobset(name = "a/b", spec = {})\n')
    code, _, err = run(capsys, "check")
    assert code == 1
    assert "recipes/bad1.rcp:1:5: error[E0101]: unknown name 'Y'" in err
    assert "recipes/bad2.rcp:1:15: error[E0701]" in err
    assert "checked 3 recipe(s)" in err


def _e0612_related(cli) -> tuple[list, str]:
    """``rcpc check`` in the workspace, which fails: the (label, place) related spans of its first
    E0612, and that diagnostic's text on."""
    r = cli("check")
    assert r.code == 1, r.err
    e0612 = r.err[r.err.index("error[E0612]"):]
    return re.findall(r"^  (.+): (recipes/\S+)$", e0612, re.M), e0612


def test_contract_provenance_sees_through_calls(ws, cli):
    """A flag changed by a layer made two calls deep in a library: E0612 points at the
    value's line inside the function, then at each call site (innermost first) and the
    conditional that chose it; ``rcpc explain`` shows the same chain for the effective value."""
    ws.write("recipes/lib/f.rcp",
             "def layer(tuned):\n"
             "    return {\"steps\": 99} if tuned else {}\n"
             "\n"
             "def trainer(steps, *, tuned = False):\n"
             "    return maxtext_flags({\"steps\": steps}, layer(tuned))\n")
    ws.write("recipes/r.rcp",
             'load("//recipes/lib/f.rcp", "trainer")\n'
             "T = param(bool, default = False)\n"
             "F = trainer(10, tuned = T)\n"
             'flag_file(name = "f", flags = F)\n'
             'variant("default")\n'
             'variant("tuned", set = {"T": True}, against = "default", changes = {"f": []})\n')
    labels, e0612 = _e0612_related(cli)
    assert labels == [
        ("the new value is made here", "recipes/lib/f.rcp:2:13"),
        ("in layer(), called here", "recipes/lib/f.rcp:5:44"),
        ("in trainer(), called here", "recipes/r.rcp:3:5"),
        ("chosen because this is true", "recipes/lib/f.rcp:2:29"),
    ], e0612
    r = cli("explain", "r", "F", "steps", "--variant", "tuned")
    assert r.code == 0, r.err
    assert r.out.splitlines()[3] == (
        "  2. 99  at recipes/lib/f.rcp:2:13  (layer 2: made in layer() called as `layer(tuned)` at "
        "recipes/lib/f.rcp:5:44; made in trainer() called as `trainer(10, tuned = T)` at recipes/r.rcp:3:5; "
        "`tuned` is true at recipes/lib/f.rcp:2:29 with tuned=True)")


# a plain value of the dict f1 returns: (its text in f1, whether it is made there, so f1's calls are its own)
_PLAIN = {"str": ('f"--steps={n}"', True), "list": ('[f"--steps={n}", "--x"]', True), "param": ("n", False),
          "call": ("g(n)", False)}


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(depth=st.integers(1, 3), shape=st.sampled_from(sorted(_PLAIN)), above=st.integers(0, 2))
@example(depth=2, shape="str", above=0)  # the report: an f-string made in the standard library
@example(depth=2, shape="call", above=0)  # made by another function, put in f1's dict: f1's calls are not its
def test_a_plain_value_made_in_a_function_names_the_recipes_call(ws, cli, depth, shape, above):
    """A change of plain data (a string, a list, a number: no call chain of its own) some calls
    deep in a library: when it is written in the dict a function makes, E0612 points at where
    it is made, then at each call that made that dict, innermost first, the last the recipe's
    own (a string made in the standard library pointed at the library's line only); a value
    made elsewhere and passed in (a param, another function's result) gets no call chain, not
    the dict's."""
    text, own = _PLAIN[shape]
    ws.write("recipes/lib/f.rcp", "# a comment\n" * above
             + f"def f1(n):\n    return {{\"name\": \"main\", \"value\": {text}}}\n"
             + "".join(f"\ndef f{k}(n):\n    return f{k - 1}(n)\n" for k in range(2, depth + 1))
             + '\ndef g(n):\n    return f"--g={n}"\n')
    ws.write("recipes/r.rcp", f'load("//recipes/lib/f.rcp", "f{depth}")\n'
             "N = param(int, default = 10)\n"
             f"M = f{depth}(N)\n"
             'manifest(name = "m", apiVersion = "example.com/v1", kind = "Thing", spec = M)\n'
             'variant("default")\n'
             'variant("t", set = {"N": 20}, against = "default", changes = {"m.yaml": ["spec.name"]})\n')
    labels, e0612 = _e0612_related(cli)
    labels = [(label, *place.rsplit(":", 2)[:2]) for label, place in labels]
    want = [(f"in f{k}(), called here", "recipes/lib/f.rcp", str(above + 3 * k + 2)) for k in range(1, depth)]
    want.append((f"in f{depth}(), called here", "recipes/r.rcp", "3"))
    assert labels[0][0] == "the new value is made here" and labels[1:] == (want if own else []), e0612


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reach=st.lists(st.booleans(), min_size=2, max_size=4).filter(any), flag=st.booleans())
@example(reach=[True, False], flag=False)  # the report: set = {"TRAINER_TUNED_FLAGS": True, "MAX_STEPS": 10}
def test_each_unexplained_change_names_the_set_entry_it_comes_from(ws, cli, reach, flag):
    """A variant setting several params, some reaching an undeclared part of a render (a plain
    value, or a flag), others only declared ones: each E0612 names the ``set`` entry of the
    param it comes from, and only that one (the variant is built again with each param set
    back); the primary span stays the variant's."""
    n = len(reach)
    params = "".join(f"P{i} = param(int, default = 1)\n" for i in range(n))
    undeclared = [i for i in range(n) if reach[i]]
    if flag:
        body = ("F = maxtext_flags({" + ", ".join(f'"k{i}": P{i}' for i in undeclared) + "})\n"
                'flag_file(name = "m", flags = F)\n')
    else:
        body = 'manifest(name = "m", apiVersion = "example.com/v1", kind = "Thing", spec = {' + \
               ", ".join(f'"v{i}": P{i}' for i in undeclared) + "})\n"
    body += ('manifest(name = "n", apiVersion = "example.com/v1", kind = "Thing", spec = {' +
             ", ".join(f'"v{i}": P{i}' for i in range(n)) + "})\n")
    sets = ", ".join(f'"P{i}": 2' for i in range(n))
    ws.write("recipes/r.rcp", params + body + 'variant("default")\n'
             f'variant(\n    "t",\n    set = {{{sets}}},\n    against = "default",\n'
             f'    changes = {{"n.yaml": [{", ".join(f"{chr(34)}spec.v{i}{chr(34)}" for i in range(n))}]}},\n)\n')
    set_line = params.count("\n") + body.count("\n") + 4
    r = cli("check")
    assert r.code == 1
    found = []
    for block in r.err.split("error[E0612]")[1:]:
        block = block.split("\nrecipes/")[0]
        key = re.search(r"changes m\S* at (\S+):|flag (k\d+)", block)
        causes = re.findall(r"^  caused by setting (P\d+) here: recipes/r.rcp:(\d+):\d+$", block, re.M)
        found.append((key.group(1) or key.group(2), causes))
    want = [(f"k{i}" if flag else f"spec.v{i}", [(f"P{i}", str(set_line))]) for i in undeclared]
    assert sorted(found) == sorted(want), r.err


# Flags before the changed ones, any number: a contract's answer must not depend on how many
# tokens come first (a set of token indices iterated out of list order once an index was >= 8
# made the first token of a key look like its last: correct contracts failed, broken ones passed)
FILLER = [("steps", "100"), ("log_period", "10"), ("learning_rate", "3e-4"), ("run_name", '"x"'),
          ("enable_checkpointing", "False"), ("dataset_type", '"synthetic"'), ("max_target_length", "2048"),
          ("eval_interval", "-1"), ("checkpoint_period", "1000"), ("base_emb_dim", "2048"),
          ("base_num_decoder_layers", "16"), ("base_mlp_dim", "8192"), ("base_num_query_heads", "16"),
          ("base_num_kv_heads", "16"), ("head_dim", "128"), ("vocab_size", "32000")]


def _flags_recipe(before: int, after: int, effective: bool, render: str) -> str:
    first, last = ("2", "4") if effective else ("4 if TUNED else 2", "2")
    keys = FILLER[:before] + [("per_device_batch_size", first)] + FILLER[before:][:after]
    layer = ", ".join(f'"{k}": {v}' for k, v in keys)
    carrier = ('flag_file(name = "trainer", flags = FLAGS)\n' if render == "trainer" else
               'manifest(name = "pod", apiVersion = "v1", kind = "Pod", metadata = {"name": "p"},\n'
               '    spec = {"containers": [{"name": "m", "image": "x", "args": FLAGS.argv}]})\n')
    return (f'TUNED = param(bool, default = False)\n'
            f'FLAGS = maxtext_flags({{{layer}}},\n'
            f'    {{"remat_policy": "full", "per_device_batch_size": {last}}} if TUNED else {{}})\n'
            f'{carrier}variant("default")\n'
            f'variant("tuned", set = {{"TUNED": True}}, against = "default",\n'
            f'        changes = {{"{render}": ["per_device_batch_size", "remat_policy"]}})\n')


@given(before=st.integers(0, len(FILLER)), after=st.integers(0, 4), render=st.sampled_from(["trainer", "pod"]),
       effective=st.booleans())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(before=6, after=0, render="trainer", effective=True)   # the report: 9 tokens, a correct contract failed
@example(before=6, after=0, render="pod", effective=False)      # and a broken one passed
def test_a_contract_s_answer_does_not_depend_on_how_many_flags_come_first(tmp_path_factory, before, after,
                                                                        render, effective):
    """The tuned layer sets per_device_batch_size from 2 to 4 or, when ``effective`` is
    false, back to the 2 of the default variant after the first layer made it 4 (its tokens
    change, its value does not): the contract holds exactly when ``effective``."""
    import contextlib
    import io

    root = tmp_path_factory.mktemp("ws")
    (root / "rcp.toml").write_text("")
    (root / "recipes").mkdir()
    (root / "recipes" / "r.rcp").write_text(_flags_recipe(before, after, effective, render))
    err = io.StringIO()
    with contextlib.chdir(root), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["check"])
    if effective:
        assert code == 0, err.getvalue()
    else:
        assert code == 1 and "error[E0612]" in err.getvalue() and \
            "the tokens of flag 'per_device_batch_size' change" in err.getvalue(), err.getvalue()


_KEYS = ["steps", "learning_rate", "per_device_batch_size", "remat_policy"]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(_KEYS), cut=st.integers(1, 3))
@example(key="steps", cut=4)  # the report: "stepz" declared, and the hint pointed the wrong way
def test_a_misspelt_declared_key_or_render_is_named_with_the_closest(ws, cli, key, cut):
    """``changes`` naming a flag key no flag set of the render has (a typo) says so with the
    closest key it has; naming a render that does not exist suggests the closest render by
    its name (the keys of its flag sets) or its file name (paths in it): ``lanch`` is
    ``launch``, not ``launch.sh`` (found by a user trial)."""
    typo = key[:cut] + "z" + key[cut + 1:]
    flags = "{" + ", ".join(f'"{k}": 1' for k in _KEYS) + "}"
    ws.write("recipes/r.rcp", "T = param(bool, default = False)\n"
             f'F = maxtext_flags({flags}, {{"{key}": 2}} if T else {{}})\n'
             'flag_file(name = "trainer", flags = F)\n'
             'variant("default")\n'
             f'variant("t", set = {{"T": True}}, against = "default", changes = {{"trainer": ["{typo}"]}})\n')
    r = cli("check")
    assert r.code == 1 and f"trainer.flags: {typo} declared to change, but no flag set there has that key " \
                           f"(did you mean '{key}'?)" in r.err, r.err
    ws.write("recipes/r.rcp", (ws.root / "recipes/r.rcp").read_text().replace('changes = {"trainer"', 'changes = {"trainr"'))
    r = cli("check")
    assert r.code == 1 and "help: did you mean 'trainer'?" in r.err, r.err


def test_a_change_from_the_against_variants_own_set_names_no_entry_of_the_variant(ws, cli):
    """The against variant sets X; the variant sets only Y, and an undeclared change comes from X
    (the variant keeps X's default): its E0612 names no ``set`` entry (Y did not cause it)."""
    ws.write("recipes/r.rcp", "X = param(int, default = 1)\nY = param(int, default = 1)\n"
             'manifest(name = "m", apiVersion = "example.com/v1", kind = "Thing", spec = {"x": X, "y": Y})\n'
             'variant("base", set = {"X": 5})\n'
             'variant(\n    "t",\n    set = {"Y": 2},\n    against = "base",\n    changes = {"m.yaml": ["spec.y"]},\n)\n')
    r = cli("check")
    assert r.code == 1 and "changes m.yaml at spec.x" in r.err and "caused by setting" not in r.err, r.err
