"""MaxText schema checks, string spellings, lints, mesh consistency and `rcpc explain`
(DESIGN.md §3.1-3.2; shared/cases F3, F4), with the schema rcpc ships (builtin:maxtext)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from rcpc.domain.maxtext import lax, flagset as maxtext
from rcpc.domain.recipe import Compiler
from rcpc.domain.maxtext.schema import BUILTIN_PATH, load_schema
from rcpc.domain.maxtext import BUILTIN
from rcpc.domain.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]
MAXTEXT = REPO.parent / "shared" / "data" / "maxtext"
MAXTEXT_SRC = REPO.parent / "shared" / "data" / "maxtext-src"  # MaxText's package: common_types.py and the rest
BASE_YML = MAXTEXT / "base.yml"
SCHEMA = load_schema(BUILTIN_PATH, None, BUILTIN)
KEYS = sorted(SCHEMA.fields)
SCHEMA_TOML = f'maxtext_schema = "{BUILTIN}"\n'


@pytest.fixture
def sws(ws):
    """A workspace whose rcp.toml names the shipped MaxText schema."""
    (ws.root / "rcp.toml").write_text(SCHEMA_TOML, encoding="utf-8")
    return ws


def flags_recipe(layer: str, extra: str = "") -> str:
    return f"F = maxtext_flags({layer}{extra})\nflag_file(name = \"f\", flags = F)\n"


def warnings_of(ws) -> list:
    return ws.last_compiler.diagnostics(include_notes=True)


# the schema itself ---------------------------------------------------------------------------
def test_schema_reads_base_yml_with_yaml_1_1_and_omegaconf_floats():
    assert len([k for k in SCHEMA.fields if "base" in SCHEMA.fields[k]]) == 696
    assert SCHEMA.defaults["normalization_layer_epsilon"] == 1e-05      # written 1.e-05
    assert SCHEMA.defaults["steps"] == 150001                           # written 150_001
    assert SCHEMA.defaults["learning_rate"] == 3e-05                    # written 3.e-5


def test_schema_types_come_from_types_py():
    assert len(SCHEMA.fields) == 775  # every field of MaxTextConfig, base.yml's 696 among them
    assert SCHEMA.type_of("enable_checkpointing") == {"type": "bool"}
    assert SCHEMA.type_of("per_device_batch_size") == {"type": "union", "of": [{"type": "int"}, {"type": "float"}]}
    assert SCHEMA.type_of("run_name") == {"type": "str"}
    assert SCHEMA.type_of("weight_sparsity_n") == {"type": "union", "of": [{"type": "int"}, {"type": "none"}]}
    assert SCHEMA.type_of("max_num_checkpoints_to_keep")["of"] == [{"type": "int"}, {"type": "none"}]
    assert SCHEMA.type_of("local_sa_block_q")["of"] == [{"type": "int"}, {"type": "none"}]
    assert SCHEMA.type_of("mtp_num_layers") == {"type": "int", "ge": 0}                       # NonNegativeInt
    assert SCHEMA.type_of("sharding_tolerance") == {"type": "float", "ge": 0.0, "le": 1.0}    # Field(ge=, le=)
    assert SCHEMA.type_of("dtype")["values"] == ["bfloat16", "float32", "float16"]           # an Enum
    assert SCHEMA.type_of("hardware") == {"type": "literal", "values": ["tpu", "gpu", "gpu_multiprocess", "cpu"]}
    assert "llama2" in SCHEMA.type_of("decoder_block")["values"]  # an Enum of common_types.py
    assert SCHEMA.type_of("constant_bound_config")["type"] == "validated"
    assert SCHEMA.type_of("lora")["extra"] == "forbid" and SCHEMA.type_of("dpo")["extra"] == "ignore"
    assert SCHEMA.fields["steps"]["source"].startswith("types.py:")
    assert SCHEMA.models["gemma4-31b"]["base_emb_dim"] == 5376 and len(SCHEMA.models) == 78


def _typed_example(t):
    kind = t["type"]
    if kind == "union":
        return _typed_example(next(m for m in t["of"] if m["type"] != "none"))
    return {"int": 1 if t.get("gt") == 0 or t.get("ge", 0) >= 0 else -1, "float": 0.5, "bool": True,
            "str": "x"}.get(kind)


@pytest.mark.parametrize("key", [k for k in KEYS if SCHEMA.fields[k].get("base") == "None"])
def test_every_key_base_yml_writes_as_None_takes_its_types_py_type(key):
    """The kind of issue 14 item 2: base.yml writes None for 23 keys whose type is
    `X | None` in types.py; a base.yml-only schema typed them all str."""
    t = SCHEMA.type_of(key)
    assert lax.accepts_none(t)
    value = _typed_example(t)
    if value is not None:
        _, diags = maxtext.check_entry(_entry(key, value), SCHEMA, {})
        assert not [d for d in diags if d.severity == "error"], (key, value, diags)


def test_reported_values_are_accepted(sws):
    sws.build(flags_recipe('{"max_num_checkpoints_to_keep": 5, "local_sa_block_q": 1024}'))
    assert not [d for d in warnings_of(sws) if d.severity == "warning"]


def test_shipped_schema_is_what_the_generator_writes_byte_for_byte(tmp_path, capsys):
    from rcpc.cli import main

    shipped = BUILTIN_PATH.read_text(encoding="utf-8")
    commit = json.loads(shipped)["provenance"]["commit"]
    assert main(["schema", "maxtext", str(MAXTEXT_SRC), "--commit", commit]) == 0  # a checkout's layout
    assert capsys.readouterr().out == shipped, "regenerate: " + json.loads(shipped)["provenance"]["regenerate"]
    assert main(["schema", "maxtext", str(tmp_path)]) == 1
    assert "E0321" in capsys.readouterr().err


def test_the_configs_directory_alone_knows_less():
    """A directory of types.py, base.yml and models/ alone (no common_types.py, pyconfig.py,
    custom_mesh_and_rule/ or layers/ beside it) gives the same keys and types, except that the
    enums types.py imports have unknown values and remat_policy's restriction is missing."""
    from rcpc.domain.maxtext.schemagen import derive

    flat = derive(MAXTEXT, commit="x")
    shipped = json.loads(BUILTIN_PATH.read_text(encoding="utf-8"))
    differ = {k for k in shipped["fields"] if flat["fields"][k] != shipped["fields"][k]}
    imported = {k for k, f in shipped["fields"].items() if f["type"].get("name") in ENUMS_OF_COMMON_TYPES}
    assert differ == imported | {"remat_policy"}
    assert {"custom_mesh_and_rule", "shard_mode", "context_parallel_reorder_strategy", "vision_encoder_block"} <= imported
    for k in imported:
        assert flat["fields"][k]["type"]["values"] is None


ENUMS_OF_COMMON_TYPES = {"AttentionType", "DecoderBlockType", "ReorderStrategy", "ShardMode", "CustomRule",
                         "VisionEncoderBlockType"}


def test_enums_come_from_common_types_py():
    assert SCHEMA.type_of("custom_mesh_and_rule")["values"] == ["", "pure-fsdp", "cp-as-ep", "ep-as-cp",
                                                                "pipeline-large-moe", "2d-fsdp", "ep-as-dp",
                                                                "shard-exp-on-fsdp"]
    assert SCHEMA.type_of("shard_mode")["values"] == ["auto", "explicit"]
    assert SCHEMA.type_of("context_parallel_reorder_strategy")["values"] == ["auto", "dual_chunk_swap", "striped"]
    assert "qwen3_vl" in SCHEMA.type_of("vision_encoder_block")["values"]
    assert SCHEMA.provenance["files"]["common_types.py"]["path"] == "src/maxtext/common/common_types.py"


def test_maxtext_base_derives_the_same_schema_on_the_fly():
    derived = load_schema(MAXTEXT_SRC / "src" / "maxtext" / "configs" / "base.yml", None)
    assert derived.fields == SCHEMA.fields and derived.models == SCHEMA.models
    assert derived.refusals == SCHEMA.refusals


def test_a_base_yml_alone_types_keys_by_their_defaults(tmp_path):
    (tmp_path / "base.yml").write_text("steps: 150_001\nrun_name: ''\nlr: 1.e-5\nx: null\n", encoding="utf-8")
    schema = load_schema(tmp_path / "base.yml", None)
    assert {k: f["type"]["type"] for k, f in schema.fields.items()} == {"steps": "int", "run_name": "str",
                                                                         "lr": "float", "x": "any"}
    assert schema.provenance["types"] == "from base.yml defaults (no types.py)"


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
    _, (diag,) = maxtext.check_entry(_entry(typo, 1), SCHEMA, {})
    assert diag.code == "E0310"
    assert diag.hint.startswith("did you mean '")   # the closest key; usually `key` itself


def _entry(key, value):
    from rcpc.core.source import Span
    from rcpc.domain.values import FlagEntry

    from conftest import value_of

    span = Span("<t>", 1, 1, 1, 2)
    return FlagEntry(key, span, value_of(value))


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


def test_schema_none_checks_no_key_even_with_a_workspace_schema(sws):
    """``schema = None``: the flags of another trainer (MaxDiffusion's train_wan reads its
    command line as MaxText does, with keys and choices of its own)."""
    layer = '{"guidance_scale": 5.0, "remat_policy": "FULL", "model_name": "wan2.1"}'
    assert sws.fails(flags_recipe(layer)).code in ("E0310", "E0312")
    out = sws.build(flags_recipe(layer, ", schema = None"))
    assert out["default"]["f.flags"] == "guidance_scale=5.0\nremat_policy=FULL\nmodel_name=wan2.1\n"
    assert sws.fails(flags_recipe(layer, ", schema = 3")).code == "E0301"


# F3 and types --------------------------------------------------------------------------------
@pytest.mark.parametrize("spelling", ["False", "false", "FALSE", "True", "true", "TRUE"])
def test_f3_bool_spelled_as_text_becomes_the_bool_with_a_warning(sws, spelling):
    out = sws.build(flags_recipe(f'{{"enable_checkpointing": "{spelling}"}}'))
    assert out["default"]["f.flags"] == f"enable_checkpointing={spelling}\n"
    (w,) = [d for d in warnings_of(sws) if d.code == "W0321"]
    assert w.severity == "warning" and str(w.span) == "recipes/r.rcp:1:44"
    assert w.hint == f"write {spelling} without quotes (a param that holds it is then a param(bool, ...))"
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
    ('{"steps": 1.5}', "'steps' is an int >= -1 in the MaxText schema; got a float '1.5'"),
    ('{"steps": "1e3"}', "'steps' is an int >= -1 in the MaxText schema; got a string '1e3'"),
    ('{"run_name": 5}', "'run_name' is a str in the MaxText schema; got an int '5'"),
    ('{"per_device_batch_size": "big"}',
     "'per_device_batch_size' is an int or float in the MaxText schema; got a string 'big'"),
    ('{"enable_checkpointing": 2}', "'enable_checkpointing' is a bool in the MaxText schema; got an int '2'"),
    ('{"enable_checkpointing": "flase"}',
     "'enable_checkpointing' is a bool in the MaxText schema; got a string 'flase'"),
])
def test_values_that_cannot_be_the_key_type(sws, layer, message):
    f = sws.fails(flags_recipe(layer))
    assert (f.code, f.message) == ("E0311", message)


def test_int_for_a_float_key_and_optional_keys(sws):
    out = sws.build(flags_recipe('{"per_device_batch_size": 16, "weight_sparsity_n": 2, "run_name": None, '
                                 '"learning_rate": 1}'))
    assert out["default"]["f.flags"] == ("per_device_batch_size=16\nweight_sparsity_n=2\nrun_name=null\n"
                                         "learning_rate=1\n")
    assert not [d for d in warnings_of(sws) if d.severity == "warning"]


# exact quoting with a schema: the OmegaConf oracle -------------------------------------------
SCALAR_KEYS = [k for k in KEYS if SCHEMA.type_of(k) in ({"type": "bool"}, {"type": "int"}, {"type": "float"},
                                                        {"type": "str"}) and k not in maxtext.EMPTY_AS_NONE]


def _value_for(kind):
    if kind == "bool":
        return st.sampled_from(["True", "False", "true", "false", '"True"', '"false"'])
    if kind == "int":
        return st.integers(-10**12, 10**12).map(str) | st.integers(0, 10**6).map(lambda i: f'"{i}"')
    if kind == "float":
        return st.sampled_from(["1e-6", "2.0", "1.e-05", "3e8", '"1e-5"', "16.0", "-0.5"])
    alphabet = st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\\\"")
    texts = st.text(alphabet, max_size=12) | st.sampled_from(["${run_name}", "cost${", "a\\${x}", "???"])
    return texts.filter(lambda s: s.lower() != "none").map(lambda s: json.dumps(s, ensure_ascii=False))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(SCALAR_KEYS), min_size=1, max_size=6, unique=True), st.data())
def test_omegaconf_reads_exactly_the_resolved_values(tmp_path_factory, keys, data):
    from tests.conftest import Ws

    ws = Ws(tmp_path_factory.mktemp("w"))
    (ws.root / "rcp.toml").write_text(SCHEMA_TOML, encoding="utf-8")
    layer = ", ".join(f'"{k}": {data.draw(_value_for(SCHEMA.type_of(k)["type"]))}' for k in keys)
    ws.write("recipes/r.rcp", f"F = maxtext_flags({{{layer}}})\n", dedent=False)
    compiler = Compiler(Workspace.find(ws.root))
    fs = compiler.bindings((ws.root / "recipes/r.rcp").resolve())["F"]
    shell = fs_shell(fs)
    got = OmegaConf.to_container(OmegaConf.from_cli(shlex.split(shell)), resolve=True)
    want = {k: _py(e.value) for k, e in maxtext.resolved(fs).items()}
    assert got == want and all(type(got[k]) is type(want[k]) for k in want)


def fs_shell(fs):
    from rcpc.domain.maxtext.emit import shell_form

    return shell_form(maxtext.argv(fs))


def _py(v):
    from rcpc.core.values import to_python

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
     "ici axes: ici_fsdp_parallelism=16 * ici_context_parallelism=4 * ici_expert_parallelism=2"),  # mesh_axes order
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


def test_mesh_error_points_at_the_recipe_line_that_set_the_value(sws):
    """E0340 is reported where the flag set last set an axis (the recipe's value), not at the
    library default it overrides; the group's other settings are related spans."""
    sws.write("recipes/lib/mesh.rcp", 'FSDP = maxtext_flags({"ici_fsdp_parallelism": -1})\n')
    f = sws.fails('load("//recipes/lib/mesh.rcp", "FSDP")\n'
                  'F = maxtext_flags(\n    FSDP,\n    {"ici_tensor_parallelism": 3},\n'
                  '    tpu_slice = tpu_slice("tpu7x:4x4x8"),\n)\n' + 'flag_file(name = "f", flags = F)\n')
    assert (f.code, f.where) == ("E0340", "recipes/r.rcp:4:32")
    assert [(label, str(sp)) for label, sp in f.diag.related] == [
        ("ici_fsdp_parallelism = -1 set here", "recipes/lib/mesh.rcp:1:47")]


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
    assert [s["value"] for s in doc["chain"]] == ["cp-as-ep"] and doc["schema"] == "builtin:maxtext"
    assert main(["explain", "rl/qwen35_397b_256_v7x", "TRAINER_FLAG", "x"]) == 1
    assert "did you mean 'TRAINER_FLAGS'?" in capsys.readouterr().err


def test_a_json_schema_is_made_once_for_the_same_bytes_and_name(tmp_path):
    """load_schema reads the file each time (the build cache hashes what is read) but makes
    the schema once a session for the same bytes and name; other bytes, another name or
    another session: its own."""
    import json

    from rcpc.core.session import Session

    session = Session()
    first = load_schema(BUILTIN_PATH, None, "builtin:maxtext", session=session)
    assert load_schema(BUILTIN_PATH, None, "builtin:maxtext", session=session) is first
    assert load_schema(BUILTIN_PATH, None, "builtin:maxtext", session=Session()) is not first
    copy = tmp_path / "s.json"
    copy.write_bytes(BUILTIN_PATH.read_bytes())
    assert load_schema(copy, None, "builtin:maxtext", session=session) is first       # same bytes, same name
    other = load_schema(copy, None, "s.json", session=session)
    assert other is not first and other.path == "s.json" and other.fields == first.fields
    doc = json.loads(BUILTIN_PATH.read_text())
    doc["fields"].pop("steps")
    copy.write_text(json.dumps(doc))
    changed = load_schema(copy, None, "builtin:maxtext", session=session)
    assert "steps" in first and "steps" not in changed
    read = []
    load_schema(BUILTIN_PATH, None, "builtin:maxtext", lambda p, limit: read.append(p) or p.read_bytes())
    assert read == [BUILTIN_PATH]
