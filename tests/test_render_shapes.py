"""Every check that is about flags gives the same verdict for the same flags in every render
shape (issue 35): a ``flag_file``, a manifest's ``args`` list, a manifest's ``bash -c`` string,
a ``command_file``'s ``--command`` word, and the library's JobSet and XPK builders
(@rcpc//maxtext_tpu.rcp), which put the flags where their published recipes do.

For generated flag sets and tuned variants, per shape: MaxText's launch findings (model-config
conflicts E0315, cross-field refusals E0350), the contract's verdict (the undeclared keys whose
effective value changed, the declared keys that did not change), ``rcpc diff``'s flag changes
and ``rcpc explain``'s effective values. The mesh check (E0340) needs a TPU slice, which only
the shapes that select one have; it is left out of the comparison.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import SCHEMA_TOML, Ws
from rcpc.core.diagnostics import CompileError
from rcpc.domain.explain import explain
from rcpc.domain.renders import render_changes


_POD = ('{{"replicatedJobs": [{{"name": "w", "template": {{"spec": {{"template": {{"spec": {{"containers": '
        '[{{"name": "main", "image": "i", {field}}}]}}}}}}}}}}]}}')
SHAPES = {
    "flag_file": 'flag_file(name = "r", flags = F)',
    "manifest argv": 'jobset(name = "r", spec = ' + _POD.format(field='"args": F.argv') + ")",
    "manifest bash -c": 'jobset(name = "r", spec = ' + _POD.format(
        field='"command": ["bash", "-c", f"set -e && python3 -m maxtext.train base.yml {F.shell} | tee log"]') + ")",
    "command_file": 'command_file(name = "r", argv = ["xpk", "workload", "create", '
                    'f"--command=python3 -m maxtext.train base.yml {F.shell}"])',
    "library jobset": 'maxtext_jobset("r", "img", "tpu7x:4x4x4", F, {"xla_tpu_scoped_vmem_limit_kib": 65536})',
    "library xpk": 'command_file(name = "r", argv = maxtext_xpk_workload("c", "p", "z", "tpu7x-4x4x4", "img", "w", F, '
                   '{"xla_tpu_scoped_vmem_limit_kib": 65536}))',
}
LOAD = 'load("@rcpc//maxtext_tpu.rcp", "maxtext_jobset", "maxtext_xpk_workload")\n'
STEM = {"library jobset": "jobset"}  # the render's name where the library chooses it

# keys and the values drawn for them: a model-config conflict (llama3.1-8b's base_emb_dim is
# 4096), a cross-field refusal (num_moe_token_chunks > 1 needs use_ring_of_experts), quoting
VALUES = {
    "model_name": ['"llama3.1-8b"', '"default"'],
    "base_emb_dim": ["4096", "1024"],
    "steps": ["10", "30", "-1"],
    "per_device_batch_size": ["2", "4", "2.0"],
    "remat_policy": ['"full"', '"minimal"'],
    "num_moe_token_chunks": ["1", "2"],
    "run_name": ['"r1"', '"a b"', '"x=$y"'],
    "use_ring_of_experts": ["False", "True", "true"],
}
KEYS = sorted(VALUES)


@st.composite
def recipes(draw):
    """(flag entries of the base layer, of the tuned layer, the keys the contract declares)."""
    base_keys = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=5, unique=True))
    base = {k: draw(st.sampled_from(VALUES[k])) for k in base_keys}
    tuned_keys = draw(st.lists(st.sampled_from(KEYS), max_size=3, unique=True))
    tuned = {k: draw(st.sampled_from(VALUES[k])) for k in tuned_keys}
    declared = draw(st.lists(st.sampled_from(KEYS), max_size=3, unique=True))
    return base, tuned, declared


def _layer(d: dict) -> str:
    return "{" + ", ".join(f'"{k}": {v}' for k, v in d.items()) + "}"


def _text(shape: str, base: dict, tuned: dict, declared: list) -> str:
    return (LOAD + "T = param(bool, default = False)\n"
            f"F = maxtext_flags({_layer(base)}, {_layer(tuned)} if T else {{}})\n"
            + SHAPES[shape] + "\n"
            'variant("default")\n'
            f'variant("tuned", set = {{"T": True}}, against = "default", '
            f'changes = {{"{STEM.get(shape, "r")}": {declared!r}}})\n')


def _verdict(ws: Ws, text: str) -> dict:
    """What every flag check says of the recipe, with the render's name taken out."""
    path = ws.write("recipes/r.rcp", text.replace("'", '"'), dedent=False).resolve()
    compiler = ws.compiler()
    try:
        recipe, builds = compiler.build(path)
    except CompileError as exc:
        found = sorted({(d.code, d.message, str(d.span)) for d in exc.diagnostics if d.code != "E0340"})
        return {"errors": found}
    out: dict = {"errors": []}
    notes = [n for d in compiler.check_contracts(recipe, builds) if d.code == "E0610" for n in d.notes]
    undeclared = {k for n in notes for m in [re.search(r"effective value of (.+) changed but is not declared", n)]
                  if m for k in m.group(1).split(", ")}
    unchanged = {k for n in notes for m in [re.search(r": (.+) declared to change but did not", n)]
                 if m for k in m.group(1).split(", ")}
    out["contract"] = (sorted(undeclared), sorted(unchanged))
    default, tuned = ({r.name: r.value for r in b.renders} for b in builds)
    (name,) = default
    changes = render_changes(default[name], tuned[name])
    out["diff"] = sorted((c.key, c.describe()) for c in changes.get("flags", ()))
    out["explain"] = {}
    for key in KEYS:
        for variant in ("default", "tuned"):
            try:
                report = explain(compiler, path, name, key, variant)
            except CompileError as exc:
                report = {"effective": exc.diagnostics[0].code}
            out["explain"][key, variant] = report["effective"]
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=recipes())
@example(case=({"model_name": '"llama3.1-8b"', "base_emb_dim": "1024"}, {}, []))  # E0315 in the issue
@example(case=({"num_moe_token_chunks": "2"}, {}, []))  # a cross-field refusal (E0350)
@example(case=({"remat_policy": '"full"', "per_device_batch_size": "2"},  # the reported contract
               {"remat_policy": '"minimal"', "per_device_batch_size": "4"}, ["remat_policy"]))
@example(case=({"steps": "10"}, {"steps": "10"}, ["steps"]))  # tokens change, the value does not
def test_every_flag_check_gives_one_verdict_in_every_shape(case, tmp_path_factory):
    base, tuned, declared = case
    verdicts = {}
    for shape in SHAPES:
        root = tmp_path_factory.mktemp("shape")
        ws = Ws(root)
        (root / "rcp.toml").write_text(SCHEMA_TOML)
        verdicts[shape] = _verdict(ws, _text(shape, base, tuned, declared))
    first = verdicts["flag_file"]
    for shape, v in verdicts.items():
        assert v == first, (shape, v, first)


def test_the_reported_contract_names_the_undeclared_key_in_a_command(sws):
    """Issue 35, kind 1: remat_policy and per_device_batch_size change, remat_policy is
    declared: per_device_batch_size is named, remat_policy is not called unchanged, and no
    help suggests the path of the command that holds the flags."""
    text = _text("library jobset", {"remat_policy": '"full"', "per_device_batch_size": "2"},
                 {"remat_policy": '"minimal"', "per_device_batch_size": "4"}, ["remat_policy"])
    path = sws.write("recipes/r.rcp", text.replace("'", '"'), dedent=False).resolve()
    compiler = sws.compiler()
    recipe, builds = compiler.build(path)
    diags = compiler.check_contracts(recipe, builds)
    notes = diags[0].notes
    assert "jobset.yaml: effective value of per_device_batch_size changed but is not declared" in notes
    assert not any("remat_policy declared to change but did not" in n for n in notes)
    (e0612,) = [d for d in diags if d.code == "E0612"]
    assert "flag per_device_batch_size: 2 → 4" in e0612.message
    assert e0612.hint == 'declare the flag key: changes = {"jobset": ["per_device_batch_size"]}'
    assert all("command[" not in (d.hint or "") for d in diags)


def test_a_new_render_kind_is_one_declaration(sws, monkeypatch):
    """docs/architecture.md's claim: a new render kind (a Kueue ``Workload``) is one
    ``RenderKind`` and its value class; MaxText's launch checks, contracts and explain find
    the flags it carries through the render protocol with no other change."""
    from rcpc.core import record
    from rcpc.core.builtins import Function, Universe, _bind, _expect
    from rcpc.core.emit.yaml import emit_document
    from rcpc.core.values import Dict, Str, weight
    from rcpc.domain import builtins as B
    from rcpc.domain import renders

    @record.define(frozen=True, eq=False)
    class Workload:
        TYPE_NAME = "kueue_workload"
        name: str
        data: object
        span: object

    def make(ctx, fn, span, args, kwargs):
        a = _bind("kueue_workload", span, args, kwargs, (), {"name", "spec"})
        return Workload(_expect(a["name"], (Str,), "name").value, Dict({"spec": a["spec"]}, {}, span), span)

    kind = renders.RenderKind(
        name="kueue_workload", suffix=".workload.yaml", value_type=Workload,
        functions={"kueue_workload": Function(make, "kueue_workload(name = ..., spec = {...})",
                                              "A Kueue Workload.", ("name", "spec"), "render")},
        weight=lambda v: weight(v.data), emit=lambda v, session=None: emit_document(v.data, session), check=lambda c, v, t: [],
        data=lambda v: v.data)
    monkeypatch.setattr(renders, "KINDS", (*renders.KINDS, kind))
    monkeypatch.setattr(renders, "_BY_TYPE", {**renders._BY_TYPE, Workload: kind})
    universe = Universe(**{f: getattr(B.UNIVERSE, f) for f in ("declarations", "attributes", "plus", "statement",
                                                                "finish", "result")},
                        functions={**B.UNIVERSE.functions, **kind.functions})
    monkeypatch.setattr(B, "UNIVERSE", universe)
    monkeypatch.setattr(B, "NAMES", universe.names)
    text = ('T = param(bool, default = False)\n'
            'F = maxtext_flags({"model_name": "llama3.1-8b", "steps": 10}, {"steps": 20} if T else {})\n'
            'kueue_workload(name = "w", spec = {"podSets": [{"name": "main", "template": {"spec": {"containers": '
            '[{"name": "main", "image": "i", "args": F.argv}]}}}]})\n'
            'variant("default")\n'
            'variant("tuned", set = {"T": True}, against = "default", changes = {"w": []})\n')
    path = sws.write("recipes/r.rcp", text, dedent=False).resolve()
    compiler = sws.compiler()
    recipe, builds = compiler.build(path)
    assert [r.name for r in builds[0].renders] == ["w.workload.yaml"]
    (head, *_), = [compiler.check_contracts(recipe, builds)]
    assert "w.workload.yaml: effective value of steps changed but is not declared" in head.notes
    assert explain(compiler, path, "w", "steps", "tuned")["effective"] == "20"
    bad = text.replace('"steps": 10}', '"steps": 10, "base_emb_dim": 1024}')
    f = sws.fails(bad, dedent=False)
    assert f.code == "E0315"
