"""What MaxText would refuse or read differently, rcpc refuses first (issue 14): value rules
(choices, bounds, None, "none", "???"), model configs, M_<KEY> environment overrides, every
finding of a recipe in one run, `# rcpc: ignore[...]` in build and check, and the done-when
run of `rcpc check` on a workspace configured like the bundled one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import SCHEMA_TOML, Ws
from rcpc.core.diagnostics import CompileError
from rcpc.domain.maxtext.schema import BUILTIN_PATH, load_schema
from rcpc.domain.maxtext import BUILTIN

REPO = Path(__file__).resolve().parents[1]
SCHEMA = load_schema(BUILTIN_PATH, None, BUILTIN)
FLAGS = 'flag_file(name = "f", flags = F)\n'


def diags_of(ws, text: str) -> list:
    """Every diagnostic of building ``text`` (errors raised, or warnings when it builds)."""
    from rcpc.core.diagnostics import CompileError

    ws.write("recipes/r.rcp", text, dedent=False)
    try:
        ws.build()
    except CompileError as exc:
        return exc.diagnostics
    return ws.last_compiler.diagnostics(include_notes=True)


# values ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("layer, code, message", [
    ('{"hardware": "tpux"}', "E0312", "'hardware' must be one of 'tpu', 'gpu', 'gpu_multiprocess', 'cpu'; got tpux"),
    ('{"dtype": "bf16"}', "E0312", "'dtype' must be one of 'bfloat16', 'float32', 'float16'; got bf16"),
    ('{"sharding_tolerance": 1.5}', "E0313", "'sharding_tolerance' must be float >= 0.0 and <= 1.0; got 1.5"),
    ('{"mtp_num_layers": -1}', "E0313", "'mtp_num_layers' must be int >= 0; got -1"),
    ('{"num_experts": "0"}', "E0313", "'num_experts' must be int > 0; got '0'"),
    ('{"steps": None}', "E0314", "'steps' cannot be None: it is an int >= -1"),
    ('{"steps": "NONE"}', "E0314", "'steps' cannot be None: it is an int >= -1"),
    ('{"lora.lora_rnak": 4}', "E0310", "unknown MaxText key 'lora.lora_rnak': LoRA (a mapping) has no key 'lora_rnak'"),
    ('{"lora": {"lora_rank": -2}}', "E0313", "'lora['lora_rank']' must be int >= 0; got {lora_rank: -2}"),
])
def test_values_maxtext_refuses(sws, layer, code, message):
    (d,) = [d for d in diags_of(sws, f"F = maxtext_flags({layer})\n" + FLAGS) if d.severity == "error"]
    assert (d.code, d.message) == (code, message)
    assert str(d.span).startswith("recipes/r.rcp:1:")


@pytest.mark.parametrize("layer, code, message", [
    ('{"max_num_checkpoints_to_keep": "none"}', "W0313",
     "MaxText reads the string 'none' as None for 'max_num_checkpoints_to_keep'"),
    ('{"run_name": "None"}', "W0313", "MaxText reads the string 'None' as None for 'run_name'"),
    ('{"steps": "???"}', "W0312", "'???' is OmegaConf's MISSING marker: MaxText keeps the default of 'steps' instead"),
    ('{"dpo.dpo_betta": 0.2}', "W0314", "MaxText ignores 'dpo.dpo_betta': DPO (a mapping) has no key 'dpo_betta'"),
    ('{"enable_checkpointing": "yes"}', "W0321", "'enable_checkpointing' is a bool: MaxText reads the string 'yes' "
     "as true"),
    ('{"steps": True}', "W0322", "'steps' is an int >= -1: MaxText reads the bool True as 1"),
    ('{"steps": 2.0}', "W0322", "'steps' is an int >= -1: MaxText reads the float 2.0 as 2"),
    ('{"enable_checkpointing": 0}', "W0322", "'enable_checkpointing' is a bool: MaxText reads the int 0 as false"),
])
def test_values_maxtext_reads_otherwise_warn(sws, layer, code, message):
    found = diags_of(sws, f"F = maxtext_flags({layer})\n" + FLAGS)
    assert [(d.code, d.message) for d in found if d.severity == "warning"] == [(code, message)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.nested_given])
@given(st.sampled_from([k for k in sorted(SCHEMA.fields) if SCHEMA.type_of(k)["type"] in ("literal", "enum")
                        and SCHEMA.type_of(k)["values"] and all(type(v) is str for v in SCHEMA.type_of(k)["values"])]),
       st.data())
def test_every_choice_key_refuses_other_strings_and_takes_its_choices(key, data):
    """The kind of 'bad choice': every Literal/Enum key of types.py. A choice spelled none (any
    case) is taken by none: MaxText makes the string None before its model reads it
    (pyconfig._prepare_for_pydantic), so only a key that may be None takes it
    (VisionEncoderBlockType.NONE = "none" is refused so)."""
    from rcpc.domain.maxtext import flagset as maxtext
    from test_maxtext_schema import _entry

    values = SCHEMA.type_of(key)["values"]
    good = data.draw(st.sampled_from(values))
    if good.lower() == "none":  # judged as None is
        codes = [d.code for d in maxtext.check_entry(_entry(key, good), SCHEMA, {})[1]]
        assert codes == [d.code for d in maxtext.check_entry(_entry(key, None), SCHEMA, {})[1]], key
        return
    bad = data.draw(st.text(min_size=1, max_size=8).filter(lambda s: s not in values and s.lower() != "none"
                                                           and s != "???"))
    assert not [d for d in maxtext.check_entry(_entry(key, good), SCHEMA, {})[1] if d.severity == "error"]
    codes = [d.code for d in maxtext.check_entry(_entry(key, bad), SCHEMA, {})[1]]
    assert codes == ["E0312"], (key, bad, codes)


# model configs (item 3) -------------------------------------------------------------------------
def test_model_config_conflict_is_reported_at_the_flag_naming_the_model_value(sws):
    text = ('F = maxtext_flags({\n    "model_name": "gemma4-31b",\n    "head_dim": 128,\n'
            '    "base_emb_dim": 5376.0,\n})\n' + FLAGS)
    (d,) = [d for d in diags_of(sws, text) if d.severity == "error"]
    assert (d.code, str(d.span)) == ("E0315", "recipes/r.rcp:3:17")
    assert d.message == "'head_dim' is 128 here, but models/gemma4-31b.yml sets it to 256"
    assert d.related[0][0] == "model_name set here"
    # base_emb_dim 5376.0 == 5376 in Python, as MaxText compares them: no conflict
    ok = text.replace('"head_dim": 128', '"head_dim": 256')
    assert not [d for d in diags_of(sws, ok) if d.severity == "error"]
    forced = text.replace('"head_dim": 128,', '"head_dim": 128,\n    "override_model_config": True,')
    assert not [d for d in diags_of(sws, forced) if d.severity == "error"]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(SCHEMA.models)), st.data())
@example("gemma4-31b", None)
def test_every_model_config_key_conflicts_when_set_otherwise(tmp_path_factory, model, data):
    """The kind: any model file, any key it sets (scalars), another value → E0315."""
    ws = Ws(tmp_path_factory.mktemp("m"))
    (ws.root / "rcp.toml").write_text(SCHEMA_TOML, encoding="utf-8")
    scalars = [k for k, v in SCHEMA.models[model].items() if type(v) in (int, str, bool) and k in SCHEMA.fields]
    if not scalars:
        return
    key = "local_rope_max_timescale" if data is None else data.draw(st.sampled_from(scalars))
    value = SCHEMA.models[model][key]
    other = {int: lambda v: str(v + 1), str: lambda v: json.dumps(v + "x"), bool: lambda v: str(not v)}[type(value)](value)
    found = diags_of(ws, f'F = maxtext_flags({{"model_name": "{model}", "{key}": {other}}})\n' + FLAGS)
    assert "E0315" in [d.code for d in found], (model, key, other, found)


# M_ environment overrides (item 4) ---------------------------------------------------------------
JOBSET = '''F = maxtext_flags({{"steps": 10, "model_name": "llama2-7b"}})
jobset(name = "js", spec = {{"replicatedJobs": [{{"name": "w", "template": {{"spec": {{"template": {{"spec": {{
    "containers": [{{
        "name": "main",
        "image": "img",
        "args": ["python3", "-m", "maxtext.trainers.pre_train.train"] + F.argv,
        "env": [
            {{"name": "M_{key}", "value": "{value}"}},
        ],
    }}],
}}}}}}}}}}]}})
'''


@pytest.mark.parametrize("key, value, code, line", [
    ("STEPS", "100", "E0316", 8),            # also a flag of the container
    ("BASE_EMB_DIM", "4096", "E0316", 8),    # also set by models/llama2-7b.yml
    ("LEARNING_RATE", "fast", "E0319", 8),   # float("fast") fails in MaxText
    ("ENABLE_CHECKPOINTING", "maybe", "E0319", 8),
    ("WEIGHT_SPARSITY_N", "3", "E0319", 8),  # its base.yml value is null: MaxText has no parser
    ("MESH_AXES", "data", "E0319", 8),       # a list: no parser either
    ("STEPZ", "3", "W0315", 8),              # names no key: MaxText ignores it
])
def test_env_overrides(sws, key, value, code, line):
    found = diags_of(sws, JOBSET.format(key=key, value=value))
    (d,) = [d for d in found if d.code.startswith(("E031", "W031"))]
    assert d.code == code and d.span.line == line
    if code.startswith("W"):  # a warning: the build goes on
        assert sws.build()["default"]["js.yaml"]
    assert not [d for d in diags_of(sws, JOBSET.format(key="PER_DEVICE_BATCH_SIZE", value="2"))
                if d.code.startswith(("E", "W"))]


# what MaxText's pydantic config accepts for each key (types.py at the pinned commit)
_ACCEPTS = {
    "DTYPE": lambda t: t in ("bfloat16", "float32", "float16"),                # DType enum, types.py:438
    "OPT_TYPE": lambda t: t in ("adamw", "adam_pax", "sgd", "muon"),           # OptimizerType, types.py:1862
    "LOCAL_CHECKPOINT_PERIOD": lambda t: _int(t) is not None and _int(t) >= 0,  # NonNegativeInt, types.py:409
    "STEPS": lambda t: _int(t) is not None and _int(t) >= -1,                  # ge=-1, types.py:1719
}


def _int(text: str):
    try:
        return int(text)
    except ValueError:
        return None


@settings(max_examples=60, deadline=None)
@given(key=st.sampled_from(sorted(_ACCEPTS)),
       text=st.sampled_from(["bfloat16", "float17", "adamw", "lion", "none", "None", "0", "-1", "-3", "7", "x"]))
@example(key="DTYPE", text="float17")  # the reports: parsed, then refused by pydantic
@example(key="OPT_TYPE", text="lion")
@example(key="LOCAL_CHECKPOINT_PERIOD", text="-3")
@example(key="DTYPE", text="none")
def test_an_env_override_is_checked_against_the_schema(tmp_path_factory, key, text):
    """An ``M_<KEY>`` value MaxText parses (``int()``, ``str``) and then refuses in its config
    (an enum, a bound, ``none`` made None) is E0319 at the value, as the same value given as a
    flag would be refused; one it accepts is no finding."""
    ws = Ws(tmp_path_factory.mktemp("env"))
    (ws.root / "rcp.toml").write_text(SCHEMA_TOML, encoding="utf-8")
    jobset = JOBSET.replace('"steps": 10, ', "") if key == "STEPS" else JOBSET
    found = [d for d in diags_of(ws, jobset.format(key=key, value=text)) if d.code.startswith(("E031", "W031"))]
    accepted = _ACCEPTS[key](text) and text.lower() != "none"
    assert [d.code for d in found] == ([] if accepted else ["E0319"]), found
    assert all(d.span.line == 8 for d in found)


def test_env_conflict_through_a_shell_command(sws):
    text = ('F = maxtext_flags({"steps": 10})\n'
            'jobset(name = "js", spec = {"template": {"spec": {"containers": [{"name": "c", "image": "i", '
            '"command": ["bash", "-c", "python3 train.py " + F.shell],\n'
            '  "env": [{"name": "M_STEPS", "value": "5"}]}]}}})\n')
    (d,) = diags_of(sws, text)
    assert (d.code, str(d.span)) == ("E0316", "recipes/r.rcp:3:20")
    assert d.message == "container 'c' sets M_STEPS in its env and 'steps' in its MaxText flags"


@pytest.mark.parametrize("form", ["F.shell", 'F.shell_quoted(["run_name"])', 'F.shell_quoted(["steps", "run_name"])'])
def test_env_conflict_through_a_shell_command_with_quoted_values(sws, form):
    """A command that quotes chosen values (``shell_quoted``) still carries the flag set."""
    text = ('F = maxtext_flags({"steps": 10, "run_name": "a,b"})\n'
            'jobset(name = "js", spec = {"template": {"spec": {"containers": [{"name": "c", "image": "i", '
            f'"command": ["bash", "-c", "python3 train.py " + {form}],\n'
            '  "env": [{"name": "M_STEPS", "value": "5"}]}]}}})\n')
    (d,) = diags_of(sws, text)
    assert (d.code, str(d.span)) == ("E0316", "recipes/r.rcp:3:20")


# XLA_FLAGS beside dump_hlo_xla_flags (types.py, validate_and_set_hlo_dump_defaults) --------------
_XLA = {  # the container's XLA_FLAGS entries (before the env's other entries): (entries, the text received)
    "absent": ([], ""),
    "empty": (['{"name": "XLA_FLAGS", "value": ""}'], ""),
    "set": (['{"name": "XLA_FLAGS", "value": "--xla_dump_to=/tmp/d"}'], "set"),
    "expanded empty": (['{"name": "D", "value": ""}', '{"name": "XLA_FLAGS", "value": "$(D)"}'], ""),
    "expanded": (['{"name": "D", "value": "/tmp/d"}', '{"name": "XLA_FLAGS", "value": "--xla_dump_to=$(D)"}'], "set"),
    "set, then emptied": (['{"name": "XLA_FLAGS", "value": "--x"}', '{"name": "XLA_FLAGS", "value": ""}'], ""),
    "runtime": (['{"name": "XLA_FLAGS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}'], ""),
}
_DUMP = {  # where dump_hlo_xla_flags comes from: (flags, env entries, whether it is set)
    "none": ({}, [], False),
    "flag, empty": ({"dump_hlo_xla_flags": '""'}, [], False),
    "flag": ({"dump_hlo_xla_flags": '"--xla_dump_to=/tmp/h"'}, [], True),
    "M_ variable": ({}, ['{"name": "M_DUMP_HLO_XLA_FLAGS", "value": "--xla_dump_to=/tmp/h"}'], True),
    "M_ variable, empty": ({}, ['{"name": "M_DUMP_HLO_XLA_FLAGS", "value": ""}'], False),
}
_CARRY = {"args": '"args": F.argv', "bash -c": '"command": ["bash", "-c", "python3 -m maxtext.train " + F.shell]'}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(xla=st.sampled_from(sorted(_XLA)), dump=st.sampled_from(sorted(_DUMP)), carry=st.sampled_from(sorted(_CARRY)))
@example(xla="set", dump="flag", carry="args")  # the reported case: refused by MaxText, passed by check
def test_xla_flags_beside_dump_hlo_xla_flags_is_refused(tmp_path_factory, xla, dump, carry):
    """MaxText refuses a launch whose env has XLA_FLAGS (not empty, as the container receives it)
    and whose config has dump_hlo_xla_flags (not empty, from a flag or M_DUMP_HLO_XLA_FLAGS):
    E0322 at the XLA_FLAGS entry, in every shape a container carries flags; no finding otherwise."""
    ws = Ws(tmp_path_factory.mktemp("xla"))
    (ws.root / "rcp.toml").write_text(SCHEMA_TOML, encoding="utf-8")
    (xla_entries, received), (flags, dump_env, dumped) = _XLA[xla], _DUMP[dump]
    flag_text = ", ".join(f'"{k}": {v}' for k, v in {"steps": "10", **flags}.items())
    env = ",\n        ".join(xla_entries + dump_env)
    text = (f"F = maxtext_flags({{{flag_text}}})\n"
            'jobset(name = "js", spec = {"template": {"spec": {"containers": [{"name": "c", "image": "i", '
            f'{_CARRY[carry]},\n  "env": [\n        {env}\n    ]}}]}}}}}})\n')
    found = [d for d in diags_of(ws, text) if d.code.startswith("E")]
    assert [d.code for d in found] == (["E0322"] if received and dumped else []), (text, found)
    if found:
        assert found[0].span.line == 3 + len(xla_entries) and "XLA_FLAGS" in found[0].message


def test_explain_shows_env_overrides(sws, capsys, monkeypatch):
    from rcpc.cli import main

    sws.write("recipes/r.rcp", JOBSET.format(key="PER_DEVICE_BATCH_SIZE", value="2"), dedent=False)
    monkeypatch.chdir(sws.root)
    assert main(["explain", "r", "F", "per_device_batch_size"]) == 0
    out = capsys.readouterr().out
    assert "env: M_PER_DEVICE_BATCH_SIZE=2 at recipes/r.rcp:8:" in out and "container 'main' of js.yaml" in out
    assert main(["explain", "r", "F", "per_device_batch_size", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["env"][0]["name"] == "M_PER_DEVICE_BATCH_SIZE" and doc["env"][0]["value"] == "2"


# all at once (item 8) ---------------------------------------------------------------------------
def test_six_unknown_keys_in_one_run(sws):
    keys = ["stepz", "learnig_rate", "per_device_bach_size", "run_nam", "enable_checkpointin", "dtyp"]
    text = "F = maxtext_flags({\n" + "".join(f'    "{k}": 1,\n' for k in keys) + "})\n" + FLAGS
    found = diags_of(sws, text)
    assert [(d.code, d.span.line) for d in found] == [("E0310", i) for i in range(2, 8)]


def test_a_schema_error_does_not_hide_kubernetes_errors(sws):
    text = ('F = maxtext_flags({"stepz": 1})\n' + FLAGS +
            'jobset(name = "js", spec = {"containers": [{"name": "c", "image": "i", "args": F.argv, '
            '"env": [{"name": "ENABLE_MULTI_NUMA", "value": 0}]}]})\n')
    assert sorted(d.code for d in diags_of(sws, text)) == ["E0310", "E1001"]


# `# rcpc: ignore[...]` in build and check ------------------------------------------------------
def test_ignore_comments_silence_warnings_in_build_and_check(sws, cli):
    (sws.root / "rcp.toml").write_text(SCHEMA_TOML, encoding="utf-8")
    sws.write("recipes/r.rcp", 'F = maxtext_flags({\n    "enable_checkpointing": "False",  # rcpc: ignore[W0321]\n'
                               '    "steps": "100",\n})\n' + FLAGS + 'variant("default")\n', dedent=False)
    for command in ("build", "check"):
        r = cli(command)
        assert r.code == 0 and "W0321" in r.err and "recipes/r.rcp:3:" in r.err and "recipes/r.rcp:2:" not in r.err
    sws.write("recipes/r.rcp", 'F = maxtext_flags({"stepz": 1})  # rcpc: ignore[E0310]\n' + FLAGS, dedent=False)
    r = cli("check")
    assert r.code == 1 and "E0310" in r.err  # an error is never silenced


# done when: a fresh workspace like the bundled one -----------------------------------------------
def test_check_of_a_fresh_workspace_catches_every_kind_at_its_line_in_one_run(tmp_path, monkeypatch, capsys):
    from rcpc.cli import main

    bundled = (REPO / "rcp.toml").read_text(encoding="utf-8")
    assert 'maxtext_schema = "builtin:maxtext"' in bundled and 'kube_schemas = ["builtin:jobset"]' in bundled
    (tmp_path / "rcp.toml").write_text(bundled, encoding="utf-8")
    recipe = (tmp_path / "recipes" / "r.rcp")
    recipe.parent.mkdir()
    recipe.write_text('''F = maxtext_flags({
    "model_name": "llama2-7b",
    "per_device_bach_size": 8,
    "steps": "many",
    "hardware": "tpuv7",
    "sharding_tolerance": 2.0,
    "base_emb_dim": 1024,
})
jobset(name = "js", spec = {"template": {"spec": {"containers": [{
    "name": "main", "image": "img",
    "args": F.argv,
    "env": [{"name": "M_STEPS", "value": "3"}],
}]}}})
''', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    assert main(["check"]) == 1
    err = capsys.readouterr().err
    found = re.findall(r"^recipes/r\.rcp:(\d+):\d+: error\[(E\d+)\]", err, re.M)
    # with the bundled JobSet schema, the Kubernetes error (spec.template is not a JobSet
    # field) comes in the same run
    assert found == [("3", "E0310"), ("4", "E0311"), ("5", "E0312"), ("6", "E0313"), ("7", "E0315"),
                     ("9", "E1101"), ("12", "E0316")], err


def test_bundled_recipes_and_ports_check_clean_with_no_options(capsys, monkeypatch):
    from rcpc.cli import main

    monkeypatch.chdir(REPO)
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    assert main(["check"]) == 0
    err = capsys.readouterr().err
    assert "error" not in err and "warning" not in err


# the build cache keys on the schema ---------------------------------------------------------------
def test_build_cache_depends_on_the_schema_file(cached_ws, build_calls):
    from rcpc.cli import main

    schema = json.loads(BUILTIN_PATH.read_text(encoding="utf-8"))
    (cached_ws / "s.json").write_text(json.dumps(schema), encoding="utf-8")
    (cached_ws / "rcp.toml").write_text('maxtext_schema = "s.json"\n', encoding="utf-8")
    assert main(["build", "-j", "1"]) == 0 and len(build_calls) == 1
    assert main(["build", "-j", "1"]) == 0 and len(build_calls) == 1  # served from the cache
    del schema["fields"]["steps"]
    (cached_ws / "s.json").write_text(json.dumps(schema), encoding="utf-8")
    assert main(["build", "-j", "1"]) == 1 and len(build_calls) == 2  # the edit is seen: 'steps' unknown


def test_the_shipped_schema_is_a_dependency_of_every_checked_recipe(sws):
    sws.build('F = maxtext_flags({"steps": 1})\n' + FLAGS)
    assert BUILTIN_PATH in sws.last_compiler.dependencies((sws.root / "recipes/r.rcp").resolve())


# acknowledgements travel with the flag set ---------------------------------------------------------
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.sampled_from(["splice", "splice+slice", "plus"]), min_size=1, max_size=4),
       acknowledged=st.booleans())
@example(steps=["splice+slice"], acknowledged=True)  # maxtext_flags(F, tpu_slice = S) dropped F's unknown_keys
def test_an_acknowledged_unknown_key_stays_acknowledged_where_its_flag_set_goes(steps, acknowledged, tmp_path_factory):
    """A key a flag set acknowledged (unknown_keys) is acknowledged in every flag set made from
    it (spliced into maxtext_flags, with or without a slice, or joined with +), and never
    otherwise: E0310 exactly when no maxtext_flags acknowledged it."""
    ws = Ws(tmp_path_factory.mktemp("ack"))
    (ws.root / "rcp.toml").write_text(SCHEMA_TOML)
    ack = ', unknown_keys = ["use_gdn_kernel"]' if acknowledged else ""
    lines = [f'F0 = maxtext_flags({{"steps": 1, "use_gdn_kernel": True}}{ack})']
    for i, step in enumerate(steps, 1):
        made = {"splice": f'maxtext_flags(F{i - 1}, {{"steps": {i + 1}}})',
                "splice+slice": f'maxtext_flags(F{i - 1}, {{"steps": {i + 1}}}, tpu_slice = tpu_slice("tpu7x:2x2x1"))',
                "plus": f'F{i - 1} + maxtext_flags({{"steps": {i + 1}}})'}[step]
        lines.append(f"F{i} = {made}")
    lines.append(f'flag_file(name = "r", flags = F{len(steps)})')
    try:
        ws.build("\n".join(lines) + "\n", dedent=False)
        codes = []
    except CompileError as exc:
        codes = sorted({d.code for d in exc.diagnostics})
    assert codes == ([] if acknowledged else ["E0310"]), (steps, codes)
