"""Flags read from a manifest are read as the container receives them (issue 38, kind 2):
Kubernetes expands ``$(VAR)`` and ``$$`` in a container's ``command``, ``args`` and env
values before the process starts, so MaxText's launch checks, ``rcpc explain``, ``rcpc diff``
and the contracts all see the expanded value, in every shape a container carries flags in.

The oracle is the spec as one regular expression (``test_kube_expansion.oracle``) with the
container's env built as the kubelet builds it (in order, each value expanded with the ones
before it, ``valueFrom`` known only at run time), written here apart from
:mod:`rcpc.domain.kube.expansion`. Each generated case is compared with the same flag written
already expanded in a ``flag_file``: one verdict."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import SCHEMA_TOML, Ws
from rcpc.core.diagnostics import CompileError
from rcpc.domain.explain import explain
from rcpc.domain.renders import render_changes
from test_kube_expansion import REFERENCE, oracle

_POD = ('{{"replicatedJobs": [{{"name": "w", "template": {{"spec": {{"template": {{"spec": {{"containers": '
        '[{{"name": "main", "image": "i", "env": ENV, {field}}}]}}}}}}}}}}]}}')
SHAPES = {
    "args": _POD.format(field='"args": F.argv'),
    "command": _POD.format(field='"command": ["python3", "-m", "maxtext.train", "base.yml"] + F.argv'),
    "bash -c": _POD.format(field='"command": ["bash", "-c", f"python3 -m maxtext.train base.yml {F.shell}"]'),
}
PIECES = ["$", "$$", "$(A)", "$(B)", "$(RUN_ID)", "$(NOPE)", "$(", ")", "x", "/"]
TEXT = st.lists(st.sampled_from(PIECES), max_size=5).map("".join)
# env entries: (name, value); None is a valueFrom (known when the pod runs)
# (Kubernetes refuses an env name twice); B is the variant's: "base", or the tuned value
ENV = st.lists(st.tuples(st.sampled_from(["A", "RUN_ID", "C"]), st.none() | TEXT), max_size=3, unique_by=lambda e: e[0])


def kubelet_env(env: list) -> dict:
    """The known values of a container's env (kubelet makeEnvironmentVariables)."""
    defined: dict = {}
    for name, value in env:
        if value is None or any(defined.get(m[1], "") is None for m in REFERENCE.finditer(value) if m[1] is not None):
            defined[name] = None
        else:
            defined[name] = oracle(value, {k: v for k, v in defined.items() if v is not None})
    return {k: v for k, v in defined.items() if v is not None}


def _env(env: list, tuned: str | None) -> str:
    items = [f'{{"name": "{n}", "valueFrom": {{"fieldRef": {{"fieldPath": "metadata.name"}}}}}}' if v is None
             else f'{{"name": "{n}", "value": "{v}"}}' for n, v in env]
    items.append('{"name": "B", "value": "%s" if T else "%s"}' % (tuned, "base") if tuned is not None else
                 '{"name": "OTHER", "value": "1"}')
    return "[" + ", ".join(items) + "]"


VARIANTS = 'variant("default")\nvariant("tuned", set = {"T": True}, against = "default", changes = {"r": []})\n'


def _verdict(ws: Ws, text: str) -> dict:
    """The effective run_name explain gives in each variant, the flag keys diff finds changed,
    and whether the contract (nothing declared) names run_name."""
    path = ws.write("recipes/r.rcp", "T = param(bool, default = False)\n" + text + VARIANTS, dedent=False).resolve()
    compiler = ws.compiler()
    recipe, builds = compiler.build(path)
    notes = [n for d in compiler.check_contracts(recipe, builds) if d.code == "E0610" for n in d.notes]
    default, tuned = ({r.name: r.value for r in b.renders} for b in builds)
    (name,) = default
    return {"effective": [explain(compiler, path, name, "run_name", v)["effective"] for v in ("default", "tuned")],
            "diff": sorted(c.key for c in render_changes(default[name], tuned[name]).get("flags", ())),
            "contract": any("effective value of run_name changed" in n for n in notes)}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run_name=TEXT, env=ENV, tuned=st.none() | TEXT)
@example(run_name="exp$$1", env=[], tuned=None)                          # the issue's: MaxText gets exp$1
@example(run_name="gs://b/$(RUN_ID)/out", env=[("RUN_ID", "r7")], tuned=None)
@example(run_name="x$(B)", env=[], tuned="y")      # the env changes, the flag it expands into changes
@example(run_name="x$(A)", env=[("A", None)], tuned=None)                # valueFrom: kept as written
def test_flags_in_a_container_are_read_as_it_receives_them(run_name, env, tuned, tmp_path_factory):
    received = []
    for t in (False, True):
        entries = [*env, ("B", tuned if t else "base")] if tuned is not None else env
        received.append(oracle(run_name, kubelet_env(entries)))
    ws = Ws(tmp_path_factory.mktemp("shapes"))
    (ws.root / "rcp.toml").write_text(SCHEMA_TOML)
    # the flag written as the container receives it, in a flag file
    expected = _verdict(ws, f'F = maxtext_flags({{"run_name": "{received[1]}" if T else "{received[0]}", "steps": 3}})\n'
                            'flag_file(name = "r", flags = F)\n')
    for shape, render in SHAPES.items():
        got = _verdict(ws, f'F = maxtext_flags({{"run_name": "{run_name}", "steps": 3}})\n'
                           f'jobset(name = "r", spec = {render.replace("ENV", _env(env, tuned))})\n')
        assert got == expected, (shape, got, expected)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=TEXT | st.sampled_from(["5", "12", "007"]))
@example(value="5")      # M_STEPS = $(N) with N = 5: MaxText reads 5
@example(value="$$5")    # N is $5: not a number
def test_an_env_override_is_checked_as_expanded(value, tmp_path_factory):
    """``M_STEPS: $(N)``: MaxText parses the expanded text (E0319 when int() refuses it)."""
    ws = Ws(tmp_path_factory.mktemp("env"))
    (ws.root / "rcp.toml").write_text(SCHEMA_TOML)
    env = f'[{{"name": "N", "value": "{value}"}}, {{"name": "M_STEPS", "value": "$(N)"}}]'
    text = ('F = maxtext_flags({"run_name": "r"})\n'
            f'jobset(name = "r", spec = {SHAPES["args"].replace("ENV", env)})\n')
    expanded = oracle("$(N)", kubelet_env([("N", value)]))
    try:
        int(expanded)
        refused = False
    except ValueError:
        refused = True
    try:
        ws.build(text, dedent=False)
        codes = []
    except CompileError as exc:
        codes = [d.code for d in exc.diagnostics]
    assert ("E0319" in codes) == refused, (value, expanded, codes)


def test_explain_says_what_the_container_receives(sws, capsys, monkeypatch):
    """The text report shows the value as written and as received."""
    from rcpc.cli import main

    env = '[{"name": "RUN_ID", "value": "r7"}]'
    sws.write("recipes/r.rcp", 'F = maxtext_flags({"run_name": "gs://b/$(RUN_ID)/out"})\n'
              f'jobset(name = "r", spec = {SHAPES["args"].replace("ENV", env)})\n', dedent=False)
    monkeypatch.chdir(sws.root)
    assert main(["explain", "recipes/r.rcp", "r", "run_name"]) == 0
    out = capsys.readouterr().out
    assert "effective: gs://b/r7/out" in out
    assert re.search(r"1\. gs://b/\$\(RUN_ID\)/out .*\n\s+the container receives gs://b/r7/out", out), out
