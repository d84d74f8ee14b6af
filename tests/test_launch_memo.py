"""The launch checks (:func:`rcpc.domain.launch.check_renders`) keep what they derive from
values alone across a recipe's variants, by the values' identity: a variant that shares a
container or a flag set with another gets the same findings without computing them again,
and one that does not gets its own. The findings of every variant, with the notes naming the
variants each occurs in, are those of a build that keeps nothing. (The walk that finds the
flag sets a render carries keeps what it finds under shared values too:
tests/test_fast_paths.py.)"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import Ws
from rcpc.core.diagnostics import CompileError
from rcpc.domain import launch

RECIPE = """\
AX = param(int, default = {ax})
ENV = param(bool, default = {env})
TOPO = param(str, default = "2x2x1")
CH = param(int, default = {ch})
RING = param(bool, default = {ring})
F = maxtext_flags({{"ici_fsdp_parallelism": AX}}, schema = None)
G = maxtext_flags({{"steps": 5}}, schema = None)
H = maxtext_flags({{"num_moe_token_chunks": CH}}, schema = "builtin:maxtext")
POD = {{"nodeSelector": {{"cloud.google.com/gke-tpu-accelerator": "tpu7x",
                          "cloud.google.com/gke-tpu-topology": TOPO}},
       "containers": [{{"name": "main", "image": "i", "args": F.argv,
                        "env": [{{"name": "M_ICI_FSDP_PARALLELISM", "value": "2"}}] if ENV else [],
                        "resources": {{"requests": {{"google.com/tpu": 4}}, "limits": {{"google.com/tpu": 4}}}}}}]}}
jobset(name = "trainer", spec = {{"replicatedJobs": [{{"name": "slice", "template": {{"spec": {{
    "parallelism": 1, "completions": 1, "template": {{"spec": POD}}}}}}}}]}})
jobset(name = "other", spec = {{"replicatedJobs": [{{"name": "slice", "template": {{"spec": {{
    "parallelism": 1, "completions": 1, "template": {{"spec": {{"nodeSelector": POD["nodeSelector"],
    "containers": [{{"name": "main", "image": "i", "args": G.argv,
                    "resources": {{"requests": {{"google.com/tpu": 4}}, "limits": {{"google.com/tpu": 4}}}}}}]}}}}}}}}}}]}})
jobset(name = "moe", spec = {{"replicatedJobs": [{{"name": "cpu", "template": {{"spec": {{
    "parallelism": 1, "completions": 1, "template": {{"spec": {{"containers": [{{"name": "main", "image": "i",
    "args": H.argv, "env": [{{"name": "M_USE_RING_OF_EXPERTS", "value": "true"}}] if RING else []}}]}}}}}}}}}}]}})
variant("default")
{variants}"""

AXIS = st.sampled_from([1, 2, 4, 8, 3, -1])
CHUNKS = st.sampled_from([1, 2])  # 2 without use_ring_of_experts: E0350, unless M_ sets it
VARIANTS = st.lists(st.tuples(st.none() | AXIS, st.none() | st.booleans(), st.none() | st.sampled_from(["4x4x4"]),
                              st.none() | CHUNKS, st.none() | st.booleans()), max_size=4)


def findings(text: str) -> list:
    with tempfile.TemporaryDirectory() as d:
        try:
            Ws(Path(d)).build(text, dedent=False)
        except CompileError as exc:
            return sorted((x.code, x.message, str(x.span), x.notes, x.related) for x in exc.diagnostics)
        return []


@settings(max_examples=40, deadline=None)
@given(ax=AXIS, env=st.booleans(), ch=CHUNKS, ring=st.booleans(), variants=VARIANTS)
@example(ax=8, env=False, ch=1, ring=False,
         variants=[(3, None, None, None, None), (None, True, None, None, None), (3, True, None, None, None)])
@example(ax=3, env=True, ch=1, ring=False,  # each its own fault
         variants=[(8, False, None, None, None), (None, None, None, None, None)])
@example(ax=8, env=False, ch=1, ring=False, variants=[(None, None, "4x4x4", None, None)])  # one flag set on two slices
@example(ax=8, env=False, ch=2, ring=True, variants=[(None, None, None, None, False)])  # one flag set, other M_ variables
def test_kept_findings_are_a_fresh_builds(ax, env, ch, ring, variants):
    sets = []
    for i, (a, e, topo, c, r) in enumerate(variants):
        items = ([f'"AX": {a}'] if a is not None else []) + ([f'"ENV": {e}'] if e is not None else []) + \
            ([f'"TOPO": "{topo}"'] if topo is not None else []) + ([f'"CH": {c}'] if c is not None else []) + ([f'"RING": {r}'] if r is not None else [])
        sets.append(f'variant("v{i}", set = {{{", ".join(items)}}})\n')
    text = RECIPE.format(ax=ax, env=env, ch=ch, ring=ring, variants="".join(sets))
    kept = findings(text)
    with pytest.MonkeyPatch.context() as m:  # a build that keeps nothing
        m.setattr(launch, "_kept", lambda found, kind, values, make: make())
        fresh = findings(text)
    assert kept == fresh
    assert kept or (ax in (1, 2, 4, 8, -1) and not env and (ch == 1 or ring))  # the example recipes do find faults
