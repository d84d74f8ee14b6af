"""``rcpc explain`` of a key the flag set does not set is an error with a did-you-mean over
the keys it does set (issue: golden failures that read well)."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

KEYS = st.from_regex(r"[a-z][a-z_]{2,12}", fullmatch=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.lists(KEYS, min_size=1, max_size=8, unique=True), query=KEYS)
@example(keys=["custom_mesh_and_rule", "packing"], query="custom_mesh_and_rules")
@example(keys=["steps"], query="learning_rate")
def test_explain_of_a_key_set_nowhere(ws, cli, keys, query):
    layers = "{" + ", ".join(f'"{k}": 1' for k in keys) + "}"
    ws.write("recipes/r.rcp", f"F = maxtext_flags({layers})\nflag_file(name = \"f\", flags = F)\n")
    result = cli("explain", "r", "F", query)
    if query in keys:
        assert result.code == 0 and "effective: 1" in result.out
        return
    assert result.code == 1 and result.out == ""
    assert f"recipes/r.rcp:1:5: error[E0616]: flag set 'F' does not set '{query}' in variant default" in result.err
    close = difflib.get_close_matches(query, keys, n=1)
    if close:
        assert f"help: did you mean '{close[0]}'?" in result.err
    else:
        assert "help: keys set: " + ", ".join(keys) in result.err


def test_explain_sees_through_function_calls(ws, cli):
    """A layer made inside a library function: its value's line is inside the function, and
    the call site that made it, and the argument its condition named, are shown."""
    ws.write("recipes/lib/f.rcp", "def trainer(steps, *, tuned = False):\n"
                                  "    return maxtext_flags({\"steps\": steps}, {\"steps\": 99} if tuned else {})\n")
    ws.write("recipes/r.rcp", 'load("//recipes/lib/f.rcp", "trainer")\n'
                              "T = param(bool, default = True)\n"
                              "F = maxtext_flags(trainer(10, tuned = T), {\"lr\": 1})\n"
                              'flag_file(name = "f", flags = F)\n')
    result = cli("explain", "r", "F", "steps")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[1] == "effective: 99"
    call = "made in trainer() called as `trainer(10, tuned = T)` at recipes/r.rcp:3:19"
    assert lines[2] == f"  1. 10  at recipes/lib/f.rcp:2:27  (layer 1: {call})"
    assert lines[3] == (f"  2. 99  at recipes/lib/f.rcp:2:45  (layer 2: {call}; "
                        "`tuned` is true at recipes/lib/f.rcp:2:61 with tuned=True)")


def test_explain_effective_is_the_config_maxtext_starts_with(sws, cli):
    """``rcpc explain --effective``: every key of base.yml, the model config's keys, the
    flags and the carrying container's ``M_`` variables, each from where MaxText takes it, in
    its precedence (the flag, then the env, then the model config, then base.yml)."""
    import json

    from conftest import SCHEMA_TOML

    (sws.root / "rcp.toml").write_text(SCHEMA_TOML)  # (the cli fixture's workspace wrote its own)
    sws.write("recipes/r.rcp", '''\
        F = maxtext_flags({"model_name": "llama3.1-8b", "steps": 7, "per_device_batch_size": 2})
        jobset(name = "j", spec = {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": {
            "containers": [{"name": "main", "image": "i", "args": F.argv,
                            "env": [{"name": "M_LEARNING_RATE", "value": "0.5"}]}]}}}}}]})
        ''')
    r = cli("explain", "--effective", "r", "j.yaml", "--format", "json")
    assert r.code == 0, r.err
    report = json.loads(r.out)
    rows = {row["key"]: row for row in report["config"]}
    assert report["model"] == "llama3.1-8b" and report["render"] == "j.yaml"
    assert (rows["steps"]["value"], rows["steps"]["from"]) == ("7", "recipes/r.rcp:1:49")
    assert (rows["learning_rate"]["value"], rows["learning_rate"]["source"]) == ("0.5", "env")
    assert "M_LEARNING_RATE of container 'main' in j.yaml" == rows["learning_rate"]["from"]
    assert (rows["base_emb_dim"]["value"], rows["base_emb_dim"]["from"]) == ("4096", "models/llama3.1-8b.yml")
    assert rows["enable_checkpointing"]["source"] == "base.yml"
    text = cli("explain", "--effective", "r", "j")
    assert "  base_emb_dim" in text.out and "(models/llama3.1-8b.yml)" in text.out
    assert cli("explain", "r", "j").code == 2 and cli("explain", "--effective", "r", "j", "steps").code == 2


@pytest.mark.parametrize("named", [False, True])
def test_explain_effective_needs_a_schema(ws, cli, named):
    """E0621's hint says what is missing: a schema in rcp.toml, or, with one named there, that
    the flag set says schema = None (it said to name one in rcp.toml, which named one: found
    by a user trial)."""
    if named:
        ws.write("rcp.toml", 'maxtext_schema = "builtin:maxtext"\n')
    schema = ", schema = None" if named else ""
    ws.write("recipes/r.rcp", f'flag_file(name = "f", flags = maxtext_flags({{"steps": 1}}{schema}))\n')
    r = cli("explain", "--effective", "r", "f")
    assert r.code == 1 and "error[E0621]" in r.err
    assert ("schema = None" in r.err.split("help:")[1]) == named and ("rcp.toml" in r.err.split("help:")[1]) != named
