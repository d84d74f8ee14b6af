"""MaxText schema checks, string spellings, lints, mesh consistency and `rcpc explain`
(DESIGN.md §3.1-3.2; shared/cases F3, F4)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from rcpc import maxtext
from rcpc.recipe import Compiler
from rcpc.schema import load_schema
from rcpc.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]
BASE_YML = REPO.parent / "shared" / "data" / "maxtext" / "base.yml"
SCHEMA = load_schema(BASE_YML, None)
KEYS = sorted(SCHEMA.defaults)


@pytest.fixture
def sws(ws):
    """A workspace whose rcp.toml names the real MaxText base.yml."""
    (ws.root / "rcp.toml").write_text(f'maxtext_base = "{BASE_YML}"\n', encoding="utf-8")
    return ws


def flags_recipe(layer: str, extra: str = "") -> str:
    return f"F = maxtext_flags({layer}{extra})\nflag_file(name = \"f\", flags = F)\n"


def warnings_of(ws) -> list:
    return ws.last_compiler.diagnostics(include_notes=True)


# the schema itself ---------------------------------------------------------------------------
def test_schema_reads_base_yml_with_yaml_1_1_and_omegaconf_floats():
    assert len(SCHEMA.defaults) == 696
    assert SCHEMA.defaults["normalization_layer_epsilon"] == 1e-05      # written 1.e-05
    assert SCHEMA.defaults["steps"] == 150001                           # written 150_001
    assert SCHEMA.defaults["learning_rate"] == 3e-05                    # written 3.e-5
    assert SCHEMA.type_of("enable_checkpointing") == "bool"
    assert SCHEMA.type_of("per_device_batch_size") == "float"
    assert SCHEMA.type_of("run_name") == "str"
    assert SCHEMA.type_of("weight_sparsity_n") is None                  # null: typed by usage


def test_missing_schema_file_is_an_error(ws):
    (ws.root / "rcp.toml").write_text('maxtext_base = "nope/base.yml"\n')
    f = ws.fails(flags_recipe('{"steps": 1}'))
    assert f.code == "E0320" and "cannot read the MaxText schema" in f.message


# F4: unknown keys -----------------------------------------------------------------------------
def test_f4_key_typo(sws):
    f = sws.fails(flags_recipe('{\n    "per_device_bach_size": 8,\n}'))
    assert (f.code, f.where) == ("E0310", "recipes/r.rcp:2:5")
    assert f.message == "unknown MaxText key 'per_device_bach_size'"
    assert f.diag.hint == "did you mean 'per_device_batch_size'?"


def _typos(key: str):
    out = set()
    for i in range(len(key)):
        out.add(key[:i] + key[i + 1:])                      # deletion
        out.add(key[:i] + key[i] + key[i:])                 # duplication
        if i + 1 < len(key):
            out.add(key[:i] + key[i + 1] + key[i] + key[i + 2:])  # swap
    return sorted(t for t in out if t and t not in SCHEMA.defaults and t[0].isalpha())


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([k for k in KEYS if len(k) > 6]), st.data())
@example("per_device_batch_size", None)
def test_every_one_character_typo_is_an_error_with_a_suggestion(key, data):
    typos = _typos(key)
    typo = "per_device_bach_size" if data is None else data.draw(st.sampled_from(typos))
    with pytest.raises(Exception) as info:
        maxtext.check_entry(_entry(typo, 1), SCHEMA, {}, lambda d: None)
    diag = info.value.diagnostics[0]
    assert diag.code == "E0310"
    assert diag.hint.startswith("did you mean '")   # the closest key; usually `key` itself


def _entry(key, value):
    from rcpc.source import Span
    from rcpc.values import FlagEntry, Int, Str

    span = Span("<t>", 1, 1, 1, 2)
    v = Int(value, str(value), span) if isinstance(value, int) else Str(value, span)
    return FlagEntry(key, span, v)


def test_unknown_keys_are_acknowledged_one_by_one(sws):
    text = flags_recipe('{"use_gdn_kernel": True, "gdn_cp_mode": "head"}',
                        ', unknown_keys = ["use_gdn_kernel"]')
    f = sws.fails(text)
    assert f.code == "E0310" and "gdn_cp_mode" in f.message
    out = sws.build(flags_recipe('{"use_gdn_kernel": True, "gdn_cp_mode": "head"}',
                                 ', unknown_keys = ["use_gdn_kernel", "gdn_cp_mode"]'))
    assert out["default"]["f.flags"] == "use_gdn_kernel=True\ngdn_cp_mode=head\n"
    assert not [d for d in warnings_of(sws) if d.severity == "warning"]


def test_acknowledging_a_known_or_unused_key_warns(sws):
    sws.build(flags_recipe('{"steps": 5}', ', unknown_keys = ["steps", "never_set"]'))
    codes = {d.code: d.message for d in warnings_of(sws)}
    assert codes["W0323"] == "'steps' is in the MaxText schema; it needs no acknowledgement"
    assert codes["W0324"] == "unknown key 'never_set' is acknowledged but never set"


def test_without_a_schema_any_key_is_accepted(ws):
    out = ws.build(flags_recipe('{"per_device_bach_size": 8}'))
    assert out["default"]["f.flags"] == "per_device_bach_size=8\n"


# F3 and types --------------------------------------------------------------------------------
@pytest.mark.parametrize("spelling", ["False", "false", "FALSE", "True", "true", "TRUE"])
def test_f3_bool_spelled_as_text_becomes_the_bool_with_a_warning(sws, spelling):
    out = sws.build(flags_recipe(f'{{"enable_checkpointing": "{spelling}"}}'))
    assert out["default"]["f.flags"] == f"enable_checkpointing={spelling}\n"
    (w,) = [d for d in warnings_of(sws) if d.code == "W0321"]
    assert w.severity == "warning" and str(w.span) == "recipes/r.rcp:1:44"
    assert w.hint == f"write {spelling} without quotes"
    parsed = OmegaConf.to_container(OmegaConf.from_cli(["enable_checkpointing=" + spelling]))
    assert parsed["enable_checkpointing"] is (spelling.lower() == "true")


def test_f3_misspelled_bool_is_an_error_naming_key_and_type(sws):
    f = sws.fails(flags_recipe('{\n  "enable_checkpointing": "flase",\n}'))
    assert (f.code, f.where) == ("E0311", "recipes/r.rcp:2:27")
    assert f.message == "'enable_checkpointing' is a bool in the MaxText schema; got a string 'flase'"


@pytest.mark.parametrize("layer, flags", [
    ('{"steps": "100"}', "steps=100\n"),
    ('{"learning_rate": "1e-5"}', "learning_rate=1e-5\n"),
    ('{"per_device_batch_size": "16.0"}', "per_device_batch_size=16.0\n"),
])
def test_string_spellings_of_numbers_become_numbers(sws, layer, flags):
    assert sws.build(flags_recipe(layer))["default"]["f.flags"] == flags
    assert [d.code for d in warnings_of(sws) if d.severity == "warning"] == ["W0321"]


@pytest.mark.parametrize("layer, message", [
    ('{"steps": 1.5}', "'steps' is an int in the MaxText schema; got a float '1.5'"),
    ('{"steps": True}', "'steps' is an int in the MaxText schema; got a bool 'True'"),
    ('{"run_name": 5}', "'run_name' is a str in the MaxText schema; got an int '5'"),
    ('{"per_device_batch_size": "big"}', "'per_device_batch_size' is a float in the MaxText schema; got a string 'big'"),
    ('{"enable_checkpointing": 1}', "'enable_checkpointing' is a bool in the MaxText schema; got an int '1'"),
])
def test_values_that_cannot_be_the_key_type(sws, layer, message):
    f = sws.fails(flags_recipe(layer))
    assert (f.code, f.message) == ("E0311", message)


def test_int_for_a_float_key_and_null_defaults_accept_usage(sws):
    out = sws.build(flags_recipe('{"per_device_batch_size": 16, "weight_sparsity_n": 2, "run_name": None}'))
    assert out["default"]["f.flags"] == "per_device_batch_size=16\nweight_sparsity_n=2\nrun_name=null\n"


# exact quoting with a schema: the OmegaConf oracle -------------------------------------------
SCALAR_KEYS = [k for k in KEYS if SCHEMA.type_of(k) in ("bool", "int", "float", "str")]


def _value_for(kind):
    if kind == "bool":
        return st.sampled_from(["True", "False", "true", "false", '"True"', '"false"'])
    if kind == "int":
        return st.integers(-10**12, 10**12).map(str) | st.integers(0, 10**6).map(lambda i: f'"{i}"')
    if kind == "float":
        return st.sampled_from(["1e-6", "2.0", "1.e-05", "3e8", '"1e-5"', "16.0", "-0.5"])
    alphabet = st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\\\"$")
    return st.text(alphabet, max_size=12).map(lambda s: json.dumps(s, ensure_ascii=False))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(SCALAR_KEYS), min_size=1, max_size=6, unique=True), st.data())
def test_omegaconf_reads_exactly_the_resolved_values(tmp_path_factory, keys, data):
    from tests.conftest import Ws

    ws = Ws(tmp_path_factory.mktemp("w"))
    (ws.root / "rcp.toml").write_text(f'maxtext_base = "{BASE_YML}"\n', encoding="utf-8")
    layer = ", ".join(f'"{k}": {data.draw(_value_for(SCHEMA.type_of(k)))}' for k in keys)
    ws.write("recipes/r.rcp", f"F = maxtext_flags({{{layer}}})\n", dedent=False)
    compiler = Compiler(Workspace.find(ws.root))
    fs = compiler.bindings((ws.root / "recipes/r.rcp").resolve())["F"]
    shell = fs_shell(fs)
    got = OmegaConf.to_container(OmegaConf.from_cli(shlex.split(shell)), resolve=False)
    want = {k: _py(e.value) for k, e in maxtext.resolved(fs).items()}
    assert got == want and all(type(got[k]) is type(want[k]) for k in want)


def fs_shell(fs):
    from rcpc.emit.flags import shell_form

    return shell_form(maxtext.argv(fs))


def _py(v):
    from rcpc.values import to_python

    return to_python(v)


# lints ----------------------------------------------------------------------------------------
def test_no_op_override_warns(ws):
    ws.build(flags_recipe('{"a": 1, "b": True}, {"b": true}, {"a": 2}'))
    (w,) = [d for d in warnings_of(ws) if d.code == "W0330"]
    assert w.message == "no-op override: 'b' is already true"
    assert str(w.span) == "recipes/r.rcp:1:41" and str(w.related[0][1]) == "recipes/r.rcp:1:28"


def test_key_set_only_to_its_default_is_a_note(sws):
    sws.build(flags_recipe('{"enable_checkpointing": true, "steps": 150001, "run_name": "x"}'))
    notes = {d.message for d in warnings_of(sws) if d.code == "N0331"}
    assert notes == {"'enable_checkpointing' is set to its MaxText default (true)",
                     "'steps' is set to its MaxText default (150001)"}


# mesh consistency -----------------------------------------------------------------------------
MESH = ('{"ici_fsdp_parallelism": 32, "ici_expert_parallelism": 2, "ici_context_parallelism": 4}'
        ', tpu_slice = tpu_slice("tpu7x:4x4x8")')


def test_mesh_that_fills_the_slice(sws):
    sws.build(flags_recipe(MESH))
    sws.build(flags_recipe('{"ici_fsdp_parallelism": -1, "ici_tensor_parallelism": 4}'
                           ', tpu_slice = tpu_slice("tpu7x:4x4x8"), num_slices = 4'))


@pytest.mark.parametrize("layer, message, note", [
    ('{"ici_fsdp_parallelism": 16, "ici_expert_parallelism": 2, "ici_context_parallelism": 4}',
     "ici mesh product 128 does not fit the 256 devices of tpu7x:4x4x8",
     "ici axes: ici_fsdp_parallelism=16 * ici_context_parallelism=4 * ici_expert_parallelism=2"),
    ('{"ici_tensor_parallelism": -1}', "ici mesh has 2 axes set to -1 (ici_fsdp_parallelism, "
     "ici_tensor_parallelism); at most one may be", None),
    ('{"ici_fsdp_parallelism": -1, "ici_tensor_parallelism": 3}',
     "ici mesh product 3 does not fit the 256 devices of tpu7x:4x4x8", None),
])
def test_mesh_that_does_not_fit_shows_the_numbers(sws, layer, message, note):
    f = sws.fails(flags_recipe(layer, ', tpu_slice = tpu_slice("tpu7x:4x4x8")'))
    assert (f.code, f.message) == ("E0340", message)
    if note:
        assert note in f.diag.notes


def test_dcn_mesh_must_match_num_slices(ws):
    f = ws.fails(flags_recipe('{"ici_fsdp_parallelism": 256, "dcn_data_parallelism": 2}',
                              ', tpu_slice = tpu_slice("tpu7x:4x4x8"), num_slices = 4'))
    assert f.message == "dcn mesh product 2 does not fit the 4 slices"
    ws.build(flags_recipe('{"ici_fsdp_parallelism": 256, "dcn_data_parallelism": -1}',
                          ', tpu_slice = tpu_slice("tpu7x:4x4x8"), num_slices = 4'))


# the bundled recipes check clean against base.yml ------------------------------------------------
def test_bundled_recipes_check_clean_against_base_yml(capsys, monkeypatch):
    from rcpc.cli import main

    monkeypatch.chdir(REPO)
    code = main(["check", "--maxtext-base", str(BASE_YML)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "error" not in err and "warning" not in err
    assert "recipe(s)" in err and ": ok" in err


# explain --------------------------------------------------------------------------------------
def test_explain_tuned_rl_shows_both_settings_and_the_param(capsys, monkeypatch):
    from rcpc.cli import main

    monkeypatch.chdir(REPO)
    code = main(["explain", "rl/qwen35_397b_256_v7x", "TRAINER_FLAGS", "custom_mesh_and_rule",
                 "--variant", "tuned", "--maxtext-base", str(BASE_YML)])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert lines[1] == "effective: cp-as-ep-dense-no-cp"
    assert lines[2].startswith("  1. cp-as-ep  at recipes/rl/qwen35_397b_256_v7x.rcp:") and "(layer 1: always)" in lines[2]
    assert lines[3].startswith("  2. cp-as-ep-dense-no-cp  at recipes/rl/qwen35_397b_256_v7x.rcp:")
    assert "`TRAINER_TUNED_FLAGS` is true" in lines[3] and "with TRAINER_TUNED_FLAGS=True" in lines[3]
    assert lines[4].startswith("schema default: ")


def test_explain_json_and_default_variant(capsys, monkeypatch):
    from rcpc.cli import main

    monkeypatch.chdir(REPO)
    assert main(["explain", "rl/qwen35_397b_256_v7x", "trainer", "custom_mesh_and_rule", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["variant"] == "default" and doc["effective"] == "cp-as-ep"
    assert [s["value"] for s in doc["chain"]] == ["cp-as-ep"] and "schema" not in doc
    assert main(["explain", "rl/qwen35_397b_256_v7x", "TRAINER_FLAG", "x"]) == 1
    assert "did you mean 'TRAINER_FLAGS'?" in capsys.readouterr().err
