"""MaxText refusals rcpc models by hand: checks its loader makes that the ``ast`` reader of
types.py's validators (:mod:`rcpc.domain.maxtext.refusals`) cannot decide (a helper function over the
logical axis rules, a statement after code that may change any field) or that are not in
types.py at all (``pyconfig.py``). Each is written in the expression language of
:mod:`rcpc.domain.maxtext.refusal_eval` (with its ``call`` nodes) and located, when the schema is
derived (:func:`located`), by the text of MaxText's message in MaxText's own file: the line
recorded is the line that raises there, and a rule whose text that MaxText no longer has is
left out of the schema (never a stale rule). A test runs each on a case MaxText's real loader
refuses (``tests/test_maxtext_agreement.py``).
"""

from __future__ import annotations

import ast

# one field, a constant, a comparison -----------------------------------------------------------
def _f(name: str) -> dict:
    return {"field": name}


def _c(value) -> dict:
    return {"const": value}


def _cmp(left: dict, op: str, right: dict) -> dict:
    return {"compare": left, "ops": [[op, right]]}


def _not(e: dict) -> dict:
    return {"not": e}


def _all(*es) -> dict:
    return {"and": list(es)}


def _any(*es) -> dict:
    return {"or": list(es)}


def _fields(e) -> set:
    """The fields expression tree ``e`` reads."""
    if isinstance(e, dict):
        return ({e["field"]} if "field" in e else set()).union(*(_fields(v) for v in e.values()))
    return set().union(*(_fields(v) for v in e)) if isinstance(e, list) else set()


def _validator(anchor: str, when: dict, message: list) -> dict:
    """A refusal of types.py's ``MaxTextConfig.set_derived_and_validate_values`` that raises at
    ``anchor``, reading the fields of ``when``."""
    return {"file": "types.py", "anchor": anchor, "in": "MaxTextConfig.set_derived_and_validate_values",
            "when": when, "reads": sorted(_fields(when)), "message": message}


# the parallelism keys ep_rank reads (types.py ep_enabled: ici_/dcn_<axis>_parallelism of the
# axes the `exp` logical axis maps to)
PARALLEL_AXES = ("diloco", "data", "pipeline", "fsdp", "fsdp_transpose", "sequence", "context",
                 "context_usp_ulysses", "context_autoregressive", "tensor", "tensor_sequence", "expert",
                 "autoregressive")
PARALLEL_KEYS = tuple(f"{p}_{a}_parallelism" for a in PARALLEL_AXES for p in ("ici", "dcn"))
# the flags types.py's set_derived_and_validate_values requires at their disabled value when the
# expert-parallel rank is 1 (its _ep_disabled_flags)
EP_DISABLED = (("use_random_routing", False), ("use_ragged_sort", False), ("ragged_buffer_factor", -1.0),
               ("use_ring_of_experts", False), ("num_moe_emb_chunks", 0))


def _ep_rule(flag: str, disabled) -> dict:
    return {
        "file": "types.py", "anchor": 'raise ValueError(f"When EP rank is 1, {flag_name} must be',
        "in": "MaxTextConfig.set_derived_and_validate_values (ep_enabled)",
        # custom_mesh_and_rule replaces logical_axis_rules with its YAML's first: not decided then
        "when": _all(_not(_f("override_logical_axis_rules")), _cmp(_f("custom_mesh_and_rule"), "==", _c("")),
                     _cmp({"call": "ep_rank", "args": []}, "==", _c(1)), _cmp(_f(flag), "!=", _c(disabled))),
        "reads": sorted({flag, "override_logical_axis_rules", "custom_mesh_and_rule", "logical_axis_rules",
                         *PARALLEL_KEYS}),
        "message": [f"When EP rank is 1, {flag} must be {disabled} (was ", {"field": flag}, ")."],
    }


RULES: tuple = (
    *(_ep_rule(flag, disabled) for flag, disabled in EP_DISABLED),
    {"file": "types.py", "anchor": 'raise ValueError("Global parameter scale cannot be zero.")',
     "in": "get_individual_scales", "when": _cmp(_f("global_parameter_scale"), "==", _c(0)),
     "reads": ["global_parameter_scale"], "message": ["Global parameter scale cannot be zero."]},
    {"file": "types.py", "anchor": '"Global parameter scale should be a power of two.',
     "in": "get_individual_scales",
     "when": _all(_cmp(_f("global_parameter_scale"), ">", _c(0)),
                  _not({"call": "power_of_two", "args": [_f("global_parameter_scale")]})),
     "reads": ["global_parameter_scale"], "message": ["Global parameter scale should be a power of two."]},
    {"file": "types.py", "anchor": "log_2_scale = math.floor(math.log2(scale))", "in": "get_individual_scales",
     "when": _cmp(_f("global_parameter_scale"), "<", _c(0)), "reads": ["global_parameter_scale"],
     "message": ["math domain error", " (math.log2 of a negative global_parameter_scale)"]},
    {"file": "types.py", "anchor": "raise ValueError(\"hf_path can't be empty when dataset_type=hf\")",
     "in": "MaxTextConfig.set_derived_and_validate_values",
     "when": _all(_cmp(_f("dataset_type"), "==", _c("hf")), _not(_f("hf_path"))),
     "reads": ["dataset_type", "hf_path"], "message": ["hf_path can't be empty when dataset_type=hf"]},
    {"file": "types.py", "anchor": '"When dataset_type=grain, set grain_train_files, "',
     "in": "MaxTextConfig.set_derived_and_validate_values",
     "when": _all(_cmp(_f("dataset_type"), "==", _c("grain")), _not(_f("grain_train_files")),
                  _not(_f("grain_train_mixture_config_path")),
                  _not(_all(_f("hf_path"), _cmp(_f("grain_file_type"), "==", _c("parquet"))))),
     "reads": ["dataset_type", "grain_file_type", "grain_train_files", "grain_train_mixture_config_path", "hf_path"],
     "message": ["When dataset_type=grain, set grain_train_files, grain_train_mixture_config_path, or use hf_path "
                 "with grain_file_type=parquet."]},
    {"file": "types.py", "anchor": '"ici/dcn_context_usp_ulysses_parallelism was specified, but is only supported when "',
     "in": "MaxTextConfig._validate_usp_context_parallelism",
     "when": _all(_cmp(_f("context_parallel_strategy"), "!=", _c("usp")),
                  _any(_cmp(_f("ici_context_usp_ulysses_parallelism"), "!=", _c(1)),
                       _cmp(_f("dcn_context_usp_ulysses_parallelism"), "!=", _c(1)))),
     "reads": ["context_parallel_strategy", "dcn_context_usp_ulysses_parallelism",
               "ici_context_usp_ulysses_parallelism"],
     "message": ["ici/dcn_context_usp_ulysses_parallelism was specified, but is only supported when "
                 "context_parallel_strategy='usp'."]},
    {"file": "pyconfig.py",
     "anchor": 'raise ValueError("At most one of `use_tokamax_splash` and `use_jax_splash` can be set to True.")',
     "in": "_initialize_pydantic", "when": _all(_f("use_tokamax_splash"), _f("use_jax_splash")),
     "reads": ["use_jax_splash", "use_tokamax_splash"],
     "message": ["At most one of `use_tokamax_splash` and `use_jax_splash` can be set to True."]},
    {"file": "pyconfig.py", "anchor": 'jnp.dtype(final_dict["mu_dtype"])', "in": "HyperParameters.__init__",
     "when": _all(_f("mu_dtype"), _not({"call": "numpy_dtype", "args": [_f("mu_dtype")]})),
     "reads": ["mu_dtype"], "message": ["data type '", {"field": "mu_dtype"}, "' not understood (jnp.dtype() of "
                                        "mu_dtype: a NumPy or JAX dtype name, such as float32 or bfloat16)"]},
)


def _lower(e: dict) -> dict:
    return {"call": "lower", "args": [e]}


_CP = _lower(_f("context_parallel_strategy"))  # types.py lower-cases it before its checks
_SMALL_GEMMA4 = {"const": ["gemma4-e2b", "gemma4-e4b"], "kind": "tuple"}
_STAGES = {"op": "*", "args": [_f("ici_pipeline_parallelism"), _f("dcn_pipeline_parallelism")]}  # pipeline stages

RULES += (
    {"file": "types.py", "anchor": '"Elastic training is only supported with Pathways (`enable_single_controller=True`)."',
     "in": "MaxTextConfig.set_derived_and_validate_values",
     "when": _all(_f("elastic_enabled"), _not(_f("enable_single_controller"))),
     "reads": ["elastic_enabled", "enable_single_controller"],
     "message": ["Elastic training is only supported with Pathways (`enable_single_controller=True`)."]},
    {"file": "types.py", "anchor": "requires scan_layers=False (per-layer KV sharing is incompatible with nn.scan)",
     "in": "MaxTextConfig.set_derived_and_validate_values",
     "when": _all(_cmp(_f("model_name"), "in", _SMALL_GEMMA4), _f("scan_layers")),
     "reads": ["model_name", "scan_layers"],
     "message": [{"field": "model_name"}, " requires scan_layers=False (per-layer KV sharing is incompatible with "
                 "nn.scan)."]},
    {"file": "types.py", "anchor": 'raise ValueError(f"Multimodal is not yet supported for {self.model_name}',
     "in": "MaxTextConfig.set_derived_and_validate_values",
     "when": _all(_f("use_multimodal"), _cmp(_f("model_name"), "in", _SMALL_GEMMA4)),
     "reads": ["model_name", "use_multimodal"],
     "message": ["Multimodal is not yet supported for ", {"field": "model_name"}, "; only text inputs are supported."]},
    {"file": "types.py", "anchor": 'raise ValueError(f"Multimodal is only supported for {valid_mm_models}',
     "in": "MaxTextConfig.set_derived_and_validate_values",
     "when": _all(_f("use_multimodal"), _cmp(_f("model_name"), "not in", {"const_of": "valid_mm_models"}),
                  _cmp(_f("model_name"), "!=", _c("default"))),
     "reads": ["model_name", "use_multimodal"],
     "message": ["Multimodal is only supported for the models types.py's valid_mm_models names, not ",
                 {"field": "model_name"}]},
    {"file": "types.py", "anchor": 'raise ValueError("moe_mlp_dim must be positive for MoE models (num_experts > 1)")',
     "in": "MaxTextConfig.set_derived_and_validate_values",
     # moe_mlp_dim is 2**k * base_moe_mlp_dim (k >= 0 for a valid global_parameter_scale)
     "when": _all(_cmp(_f("num_experts"), ">", _c(1)), _cmp(_f("base_moe_mlp_dim"), "<=", _c(0))),
     "reads": ["base_moe_mlp_dim", "num_experts"],
     "message": ["moe_mlp_dim must be positive for MoE models (num_experts > 1)"]},
    {"file": "types.py", "anchor": '"TPU USP attention requires ici_context_parallelism > 1 for the ring dimension."',
     "in": "MaxTextConfig._validate_usp_context_parallelism",
     # this or one of the USP checks before it (hardware, context_sharding, mesh_axes, rules)
     "when": _all(_cmp(_CP, "==", _c("usp")), _any(_cmp(_f("ici_context_parallelism"), "<=", _c(1)),
                                                   _cmp(_f("ici_context_usp_ulysses_parallelism"), "<=", _c(1)))),
     "reads": ["context_parallel_strategy", "ici_context_parallelism", "ici_context_usp_ulysses_parallelism"],
     "message": ["TPU USP attention requires ici_context_parallelism > 1 for the ring dimension and "
                 "ici_context_usp_ulysses_parallelism > 1 for the Ulysses dimension."]},
    {"file": "types.py", "anchor": 'f"ring_scan_unroll={self.ring_scan_unroll} was specified, but is only supported when "',
     "in": "MaxTextConfig.set_derived_and_validate_values",
     "when": _all(_cmp(_CP, "not in", {"const": ["ring", "usp"], "kind": "tuple"}),
                  _cmp(_f("ring_scan_unroll"), "!=", _c(1))),
     "reads": ["context_parallel_strategy", "ring_scan_unroll"],
     "message": ["ring_scan_unroll=", {"field": "ring_scan_unroll"}, " was specified, but is only supported when "
                 "context_parallel_strategy='ring' or 'usp'."]},
    {"file": "types.py", "anchor": "raise ValueError(\"`partial_rotary_factor` is only effective when `decoder_block`",
     "in": "MaxTextConfig.set_derived_and_validate_values",
     "when": _all(_cmp(_f("decoder_block"), "not in", {"const": ["qwen3_next", "qwen3_5"], "kind": "tuple"}),
                  _cmp(_f("partial_rotary_factor"), "is not", _c(None)),
                  _cmp(_f("partial_rotary_factor"), "!=", _c(1.0))),
     "reads": ["decoder_block", "partial_rotary_factor"],
     "message": ["`partial_rotary_factor` is only effective when `decoder_block` is set to 'qwen3_next'."]},
    {"file": "types.py", "anchor": "f\"Setting `indexer_cutoff_threshold='{self.indexer_cutoff_threshold}'` is only valid",
     "in": "MaxTextConfig.set_derived_and_validate_values",
     "when": _all(_not(_f("use_indexer")), _cmp(_f("indexer_cutoff_threshold"), "!=", _c("remat"))),
     "reads": ["indexer_cutoff_threshold", "use_indexer"],
     "message": ["Setting `indexer_cutoff_threshold='", {"field": "indexer_cutoff_threshold"}, "'` is only valid "
                 "when `use_indexer=True` (DeepSeek Sparse Attention / MLA Indexer)."]},
    {"file": "types.py",
     "anchor": '"context_parallel_strategy must be one of \'all_gather\', \'ring\', \'ulysses\', or \'usp\'."',
     "in": "MaxTextConfig.set_derived_and_validate_values",
     "when": _cmp(_CP, "not in", {"const": ["all_gather", "ring", "ulysses", "usp"], "kind": "tuple"}),
     "reads": ["context_parallel_strategy"],
     "message": ["context_parallel_strategy must be one of 'all_gather', 'ring', 'ulysses', or 'usp'."]},
    {"file": "types.py", "anchor": "is not supported with 'explicit' sharding. ",
     "in": "MaxTextConfig.set_derived_and_validate_values",
     "when": _all(_cmp(_f("shard_mode"), "==", _c("explicit")),
                  _cmp(_f("decoder_block"), "not in", {"const": ["simple", "simple_mlp", "llama2", "deepseek"],
                                                       "kind": "set"})),
     "reads": ["decoder_block", "shard_mode"],
     "message": ["Decoder '", {"field": "decoder_block"}, "' is not supported with 'explicit' sharding."]},
    {"file": "types.py", "anchor": "\"Muon dimension numbers haven't been tested for this model.",
     "in": "MaxTextConfig.set_derived_and_validate_values",
     "when": _all(_cmp(_f("opt_type"), "==", _c("muon")),
                  _cmp(_f("decoder_block"), "not in", {"const": ["deepseek", "deepseek4", "qwen3", "gemma3", "llama2"],
                                                       "kind": "list"})),
     "reads": ["decoder_block", "opt_type"],
     "message": ["Muon dimension numbers haven't been tested for this model (decoder_block ",
                 {"field": "decoder_block"}, ")."]},
    # (num_stages = ici * dcn pipeline parallelism; a num_pipeline_microbatches of -1 is computed to fit)
    _validator('assert self.num_pipeline_microbatches > 0, "num_pipeline_microbatches must be positive"',
               _all(_any(_cmp(_f("ici_pipeline_parallelism"), ">", _c(1)), _cmp(_f("dcn_pipeline_parallelism"), ">", _c(1))),
                    _cmp(_STAGES, ">", _c(0)),  # 0 stages: divmod fails before (ZeroDivisionError)
                    _cmp(_f("num_pipeline_microbatches"), "!=", _c(-1)), _cmp(_f("num_pipeline_microbatches"), "<=", _c(0))),
               ["num_pipeline_microbatches must be positive"]),
    _validator('f"The number of microbatches ({self.num_pipeline_microbatches}) must be divisible by the number of "',
               _all(_any(_cmp(_f("ici_pipeline_parallelism"), ">", _c(1)), _cmp(_f("dcn_pipeline_parallelism"), ">", _c(1))),
                    _cmp(_STAGES, ">", _c(0)), _cmp(_f("num_pipeline_microbatches"), ">", _c(0)),
                    _cmp({"op": "%", "args": [_f("num_pipeline_microbatches"), _STAGES]}, "!=", _c(0))),
               ["The number of microbatches (", {"field": "num_pipeline_microbatches"}, ") must be divisible by the "
                "number of stages (ici_pipeline_parallelism * dcn_pipeline_parallelism)"]),
    *({"file": "types.py", "anchor": 'f"{param_name}_schedule is \'{schedule}\' but {param_name}_end is None. "',
       "in": "MaxTextConfig.set_derived_and_validate_values",
       "when": _all(_cmp(_f(f"{p}_schedule"), "!=", _c("constant")), _cmp(_f(f"{p}_end"), "is", _c(None))),
       "reads": [f"{p}_end", f"{p}_schedule"],
       "message": [f"{p}_schedule is '", {"field": f"{p}_schedule"}, f"' but {p}_end is None. Set {p}_end to a "
                   "target value or use schedule='constant'."]}
      for p in ("distill_alpha", "distill_temperature", "distill_beta")),
)


# pipeline parallelism (types.py set_derived_and_validate_values): the layers pipelined are
# pipeline_parallel_layers, or when -1 the decoder layers (a DeepSeek decoder's less its first
# dense layers); the decoder layers are 2**layer_scale * base_num_decoder_layers, layer_scale 0
# for a global_parameter_scale of 1, 2 or 4 (get_individual_scales; another scale: undecided)
_PER_REPEAT = {"op": "*", "args": [_STAGES, _f("num_layers_per_pipeline_stage")]}
_USING_PP = _all(_any(_cmp(_f("ici_pipeline_parallelism"), ">", _c(1)), _cmp(_f("dcn_pipeline_parallelism"), ">", _c(1))),
                 _cmp(_f("global_parameter_scale"), "in", {"const": [1, 2, 4], "kind": "tuple"}))
_DEEPSEEK = _cmp(_f("decoder_block"), "==", _c("deepseek"))
_PIPELINED = (  # (condition, the layers pipelined under it)
    (_cmp(_f("pipeline_parallel_layers"), "!=", _c(-1)), _f("pipeline_parallel_layers")),
    (_all(_cmp(_f("pipeline_parallel_layers"), "==", _c(-1)), _DEEPSEEK),
     {"op": "-", "args": [_f("base_num_decoder_layers"), _f("first_num_dense_layers")]}),
    (_all(_cmp(_f("pipeline_parallel_layers"), "==", _c(-1)), _not(_DEEPSEEK)), _f("base_num_decoder_layers")),
)

RULES += (
    _validator('f"The number of layers per stage ({self.num_layers_per_pipeline_stage}) times the number of stages "',
               _all(_USING_PP, _cmp(_f("num_pipeline_repeats"), "==", _c(-1)),
                    _any(*(_all(when, _cmp({"op": "%", "args": [layers, _PER_REPEAT]}, "!=", _c(0)))
                           for when, layers in _PIPELINED))),
               ["The number of layers per stage (", {"field": "num_layers_per_pipeline_stage"}, ") times the number "
                "of stages (ici_pipeline_parallelism * dcn_pipeline_parallelism) must divide the number of "
                "pipeline_parallel_layers which defaults to decoder layers"]),
    _validator('f"The product of pipeline stages ({num_stages}), repeats ({self.num_pipeline_repeats}), and layers "',
               _all(_USING_PP, _cmp(_f("num_pipeline_repeats"), "!=", _c(-1)),
                    _any(*(_all(when, _cmp({"op": "*", "args": [_PER_REPEAT, _f("num_pipeline_repeats")]}, "!=", layers))
                           for when, layers in _PIPELINED))),
               ["The product of pipeline stages, repeats (", {"field": "num_pipeline_repeats"}, "), and layers per "
                "stage (", {"field": "num_layers_per_pipeline_stage"}, ") must be equal to pipeline_parallel_layers "
                "which defaults to decoder layers"]),
    # in types.py's `if self.use_indexer:`, after its attention_type check (read from types.py)
    _validator('raise NotImplementedError("Sparse indexer has not implemented for q_lora_rank = 0.")',
               _all(_f("use_indexer"), _cmp(_f("q_lora_rank"), "==", _c(0))),
               ["Sparse indexer has not implemented for q_lora_rank = 0."]),
    _validator('"Sparse indexer is only supported with dot_product attention or flash attention with tokamax splash."',
               _all(_f("use_indexer"), _not(_any(_cmp(_f("attention"), "==", _c("dot_product")),
                                                 _all(_cmp(_f("attention"), "==", _c("flash")),
                                                      _f("use_tokamax_splash"))))),
               ["Sparse indexer is only supported with dot_product attention or flash attention with tokamax splash."]),
    # pyconfig.py makes an empty hf_access_token None and never leaves tokenizer_path empty (a
    # model's Hugging Face id, else MaxText's default tokenizer), so only the token decides
    _validator('"Engram requires both \'hf_access_token\' and \'tokenizer_path\' "',
               _all(_f("engram_layers"), _not(_f("hf_access_token"))),
               ["Engram requires both 'hf_access_token' and 'tokenizer_path' to load the Hugging Face tokenizer."]),
    # an AOT compile topology MaxText has no system characteristics for (get_num_target_devices,
    # unless internal_compile bypasses the topology mappings)
    {"file": "utils/accelerator_to_spec_map.py", "anchor": 'f"Invalid compile topology: {user_facing_name}.',
     "in": "get_system_characteristics (types.py MaxTextConfig.set_derived_and_validate_values)",
     "when": _all(_not(_f("internal_compile")), _f("compile_topology"),
                  _cmp(_f("compile_topology"), "not in", {"keys_of": "UserFacingNameToSystemCharacteristics"})),
     "reads": ["compile_topology", "internal_compile"],
     "message": ["Invalid compile topology: ", {"field": "compile_topology"},
                 " (utils/accelerator_to_spec_map.py's UserFacingNameToSystemCharacteristics names the valid ones)"]},
)

def custom_rule_refusals(key: str, anchor: str, known: list[str]) -> dict:
    """The refusal of a ``custom_mesh_and_rule`` (or ``..._for_eval``) value whose YAML file
    MaxText's ``configs/custom_mesh_and_rule/`` lacks (``_load_mesh_config_from_yaml``);
    ``known``: the rule names that have one."""
    return {"file": "types.py", "anchor": anchor, "in": "MaxTextConfig._load_mesh_config_from_yaml",
            "when": _all(_f(key), _cmp(_f(key), "not in", {"const": sorted(known), "kind": "tuple"})),
            "reads": [key], "message": ["Custom mesh config file not found for ", {"field": key},
                                        f" (configs/custom_mesh_and_rule/ has {', '.join(sorted(known))})"]}


def located(rules, texts: dict) -> list[dict]:
    """Each rule with the ``line`` of its anchor in MaxText's file (``texts``: file name →
    its text); rules whose file or text is missing are left out. The anchor itself is not
    kept (the schema records where, not how it was found)."""
    out = []
    for r in rules:
        text = texts.get(r["file"])
        at = text.find(r["anchor"]) if text is not None else -1
        if at < 0:
            continue
        try:
            when = _constants(r["when"], text)
        except LookupError:
            continue
        line = text.count("\n", 0, at) + 1
        out.append({k: v for k, v in r.items() if k != "anchor"} | {"when": when, "line": line, "guards": [],
                                                                    "by": "hand"})
    return out


def _constants(tree, text: str):
    """``tree`` with each ``{"const_of": NAME}`` replaced by the literal tuple or list that
    MaxText's file assigns to NAME, and each ``{"keys_of": NAME}`` by the keys of the dict
    display it assigns to NAME (literal keys, no ``**`` unpacking: else the list would be
    incomplete), read with :mod:`ast`, never run. LookupError when the file has no such
    literal."""
    if isinstance(tree, list):
        return [_constants(x, text) for x in tree]
    if not isinstance(tree, dict):
        return tree
    if "const_of" in tree or "keys_of" in tree:
        name = tree.get("const_of") or tree["keys_of"]
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and node.targets[0].id == name:
                try:
                    if "const_of" in tree and isinstance(node.value, (ast.Tuple, ast.List)):
                        return {"const": list(ast.literal_eval(node.value)), "kind": "tuple"}
                    if "keys_of" in tree and isinstance(node.value, ast.Dict) and None not in node.value.keys:
                        return {"const": sorted(ast.literal_eval(k) for k in node.value.keys), "kind": "tuple"}
                except (ValueError, TypeError):
                    break
        raise LookupError(name)
    return {k: _constants(v, text) for k, v in tree.items()}
