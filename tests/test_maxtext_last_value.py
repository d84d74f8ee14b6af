"""Checks apply to the value MaxText sees: each key's last value in a flag set's layers (issue 36,
kind 4). Over generated layer sequences of good and bad values, the findings of the flag set are
those of a flag set holding only the last values: an overridden value is never reported, the
value MaxText keeps always is."""

from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import SCHEMA_TOML

# key -> values MaxText accepts and values it refuses (types, choices, bounds, None)
VALUES = {
    "steps": ([30, -1, 10], [-5, "many", None, 1.5]),
    "dtype": (["bfloat16", "float32"], ["bf16", 5, "BFLOAT16"]),
    "per_device_batch_size": ([4.0, 2, 0.5], ["x", None]),
    "enable_checkpointing": ([False, True, "yes"], ["maybe", 2]),
    "custom_mesh_and_rule": (["pure-fsdp", ""], ["2d-fsdp", "cp-as-epp"]),
    "mu_dtype": (["float32", "bfloat16"], ["bf16", "fp32"]),
    "global_parameter_scale": ([1, 2, 4], [3, 0]),
}


def _literal(v) -> str:
    return "None" if v is None else json.dumps(v) if type(v) is not bool else repr(v)


def _recipe(layers: list[dict]) -> str:
    body = ", ".join("{" + ", ".join(f'"{k}": {_literal(v)}' for k, v in layer.items()) + "}" for layer in layers)
    return f"F = maxtext_flags({body})\nflag_file(name = \"f\", flags = F)\n"


def _errors(ws, layers) -> list:
    from rcpc.core.diagnostics import CompileError

    ws.write("recipes/r.rcp", _recipe(layers), dedent=False)
    try:
        ws.build()
    except CompileError as exc:
        return sorted((d.code, d.message) for d in exc.diagnostics if d.severity == "error")
    return []


layer = st.dictionaries(st.sampled_from(sorted(VALUES)),
                        st.sampled_from([v for good, bad in VALUES.values() for v in good + bad]), max_size=3)


@settings(max_examples=60, deadline=None)
@given(st.lists(layer, min_size=1, max_size=4))
@example([{"steps": -5}, {"steps": 30}])  # issue 36: E0313 before, on a value MaxText never sees
@example([{"dtype": "bf16"}, {"dtype": "bfloat16"}])  # issue 36: E0312 before
@example([{"steps": 30}, {"steps": -5}])  # the last value is refused
def test_findings_are_those_of_the_last_values(tmp_path_factory, layers):
    from conftest import Ws

    ws = Ws(tmp_path_factory.mktemp("ws"))
    (ws.root / "rcp.toml").write_text(SCHEMA_TOML, encoding="utf-8")
    last: dict = {}
    for x in layers:
        last.update(x)
    assert _errors(ws, layers) == _errors(ws, [last] if last else [])
