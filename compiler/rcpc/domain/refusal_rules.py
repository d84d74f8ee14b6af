"""MaxText refusals rcpc models by hand: checks its loader makes that the ``ast`` reader of
types.py's validators (:mod:`rcpc.domain.refusals`) cannot decide (a helper function over the
logical axis rules, a statement after code that may change any field) or that are not in
types.py at all (``pyconfig.py``). Each is written in the expression language of
:mod:`rcpc.domain.refusal_eval` (with its ``call`` nodes) and located, when the schema is
derived (:func:`located`), by the text of MaxText's message in MaxText's own file: the line
recorded is the line that raises there, and a rule whose text that MaxText no longer has is
left out of the schema (never a stale rule). A test runs each on a case MaxText's real loader
refuses (``tests/test_maxtext_agreement.py``).
"""

from __future__ import annotations

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
     "when": _all(_cmp(_f("global_parameter_scale"), "!=", _c(0)),
                  _not({"call": "power_of_two", "args": [_f("global_parameter_scale")]})),
     "reads": ["global_parameter_scale"], "message": ["Global parameter scale should be a power of two."]},
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
     "reads": ["mu_dtype"], "message": ["jnp.dtype() cannot read mu_dtype ", {"field": "mu_dtype"},
                                        " (a NumPy or JAX dtype name, such as float32 or bfloat16)"]},
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
        line = text.count("\n", 0, at) + 1
        out.append({k: v for k, v in r.items() if k != "anchor"} | {"line": line, "guards": [], "by": "hand"})
    return out
