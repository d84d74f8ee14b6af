"""rcpc's MaxText checks against MaxText's real config loader (``../shared/data/maxtext-src`` at the
pinned commit, run in a subprocess by rcpc's oracle on CPU devices), issue 36:

* every refusal of the built-in schema, read from types.py or modelled by hand, fires (E0350) on
  a config that MaxText's loader refuses: none is a refusal that can never fire;
* a reduced version of ``bench/maxtext_agreement.py``'s differential set (mutations of a real
  port across every kind): the built-in schema raises no false alarm and agrees on at least 98%
  of them, and the oracle mode agrees on all.

Each part runs the loader once per device count, every case in one subprocess (JAX's start-up
is the cost), with a private user cache so that the loader really runs."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest

from rcpc.core.diagnostics import CompileError
from rcpc.domain import lax
from rcpc.domain.refusal_eval import Undecided, holds
from rcpc.domain.schema import BUILTIN_PATH, load_schema
from rcpc.domain.schemagen import BUILTIN

REPO = Path(__file__).resolve().parents[1]
MAXTEXT = REPO.parent / "shared" / "data" / "maxtext-src"
SCHEMA = load_schema(BUILTIN_PATH, None, BUILTIN)
_spec = importlib.util.spec_from_file_location("maxtext_agreement", REPO / "bench" / "maxtext_agreement.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.fixture
def oracle(tmp_path, monkeypatch):
    """MaxText at the pinned commit, with a private cache. JAX reserves more than the suite's
    memory bound (conftest.py's RLIMIT_DATA) for 256 CPU devices and aborts: the loader's runs
    get the hard limit (as outside the tests), restored afterwards."""
    import resource

    from rcpc.oracle import Oracle

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)
    bound = resource.getrlimit(resource.RLIMIT_DATA)
    resource.setrlimit(resource.RLIMIT_DATA, (bound[1], bound[1]))
    yield Oracle(MAXTEXT, timeout=900, jobs=2)  # a loaded machine must not make a run time out
    resource.setrlimit(resource.RLIMIT_DATA, bound)


# every refusal fires on a config MaxText refuses ------------------------------------------------
def _constants(tree) -> list:
    if isinstance(tree, dict):
        found = [tree["const"]] if "const" in tree else []
        return found + [c for v in tree.values() for c in _constants(v)]
    if isinstance(tree, list):
        return [c for v in tree for c in _constants(v)]
    return []


def _candidates(t: dict, near: list) -> list:
    """Values pydantic accepts for type node ``t``, around the condition's constants."""
    flat = [x for c in near for x in (c if isinstance(c, list) else [c])]
    kind = t["type"]
    if kind == "union":
        return [v for m in t["of"] for v in _candidates(m, near)]
    if kind == "bool":
        return [True, False]
    if kind == "none":
        return [None]
    if kind in ("enum", "literal"):
        return list(t["values"] or [])
    if kind == "str":
        return [c for c in flat if type(c) is str] + ["", "x"]
    if kind == "list":
        items = _candidates(t["items"], near)
        return [[]] + ([[items[-1]]] if items else [])
    if kind in ("int", "float"):
        nums = [c + d for c in flat if type(c) in (int, float) and c == c and abs(c) < 1e6 for d in (-1, 0, 1)]
        nums += [0, 1, 2, 3, 4, -1]
        out = []
        for n in nums:
            try:
                out.append(lax.validate(t, int(n) if kind == "int" and n == int(n) else n))
            except lax.Invalid:
                continue
        return out
    return []


def firing_config(r: dict, seed: int) -> dict | None:
    """Flag values (the keys the refusal reads that differ from MaxText's defaults, else one of
    them) on which refusal ``r``'s condition holds, found by a seeded random search."""
    from rcpc.domain.crossfield import _MISSING, _value

    near = _constants(r["when"])
    start = {k: _value(SCHEMA, {}, {}, k) for k in r["reads"]}
    if any(v is _MISSING for v in start.values()):
        return None
    options = {k: _candidates(SCHEMA.type_of(k), near) for k in r["reads"]}
    rng = random.Random(seed)
    for tries in range(4000):
        values = dict(start)
        for k in r["reads"]:
            if options[k] and rng.random() < (0.6 if tries > 50 else 0.3):
                values[k] = rng.choice(options[k])
        try:
            if not holds(r["when"], values):
                continue
        except Undecided:
            continue
        changed = {k: v for k, v in values.items() if v != start[k] or type(v) is not type(start[k])}
        return changed or {r["reads"][0]: values[r["reads"][0]]}
    return None


def test_every_refusal_fires_on_a_config_maxtexts_loader_refuses(sws, oracle):
    from rcpc.domain.maxtext import argv

    chosen = []
    for i, r in enumerate(SCHEMA.refusals):
        config = firing_config(r, i)
        assert config is not None, f"no config makes {r.get('file', 'types.py')}:{r['line']} fire"
        chosen.append((r, config))
    text = "".join(f"F{i} = maxtext_flags({bench.literal(c)})\nflag_file(name = \"f{i}\", flags = F{i})\n"
                   for i, (_, c) in enumerate(chosen))
    path = sws.write("recipes/r.rcp", text, dedent=False)
    with pytest.raises(CompileError) as exc:
        sws.build()
    fired: dict = {}
    for d in exc.value.diagnostics:
        if d.code == "E0350":
            fired.setdefault((d.span.line - 1) // 2, set()).add(d.message)
    compiler = sws.last_compiler
    exports = compiler.evaluate(path.resolve(), {}).exports
    answers = oracle.run([{"argv": argv(exports[f"F{i}"]), "env": {}, "devices": 1, "slices": 1, "mesh": False}
                          for i in range(len(chosen))])
    for i, ((r, config), answer) in enumerate(zip(chosen, answers)):
        where = f"{r.get('file', 'types.py')}:{r['line']}"
        assert any(f"({where}, " in m for m in fired.get(i, ())), f"{where} did not fire on {config}"
        assert answer is not None and answer["ok"] is False, f"MaxText accepts {config}, which {where} refuses"


# the reduced differential set -------------------------------------------------------------------
PORT, TPU = bench.PORTS[0]  # llama3.1-70b on tpu7x:4x4x4


def reduced() -> list:
    """Three mutations of each kind (ten of the override-layer kind), seeded: about 45."""
    base = bench.port_flags(PORT)
    every = bench.mutations(SCHEMA, base, random.Random(36))
    rng = random.Random(7)
    out = [bench._m("baseline")]
    for kind in dict.fromkeys(m["kind"] for m in every):
        of_kind = [m for m in every if m["kind"] == kind]
        out += rng.sample(of_kind, min(10 if kind == "layers" else 3, len(of_kind)))
    return [(PORT, base, TPU, m) for m in out]


def test_builtin_and_oracle_agree_with_maxtexts_loader(tmp_path, oracle):
    rows = bench.judge(tmp_path / "ws", reduced(), oracle)
    summary = bench.summarize(rows)
    assert summary["judged"] == len(rows), [r for r in rows if r["maxtext"] is None]  # every case answered
    alarms = [(r["layers"], r["env"], r["rcpc"]) for r in rows if r["rcpc"] and r["maxtext"] == "ok"]
    assert not alarms  # no false alarm
    assert summary["builtin"]["ratio"] >= 0.98, [(r["layers"], r["maxtext"]) for r in rows
                                                  if not r["rcpc"] and r["maxtext"] != "ok"]
    assert summary["oracle_mode"]["ratio"] == 1.0
    assert [r for r in rows if not r["same_launch"]] == []  # rcpc found the argv, env, devices and slices the harness made
    assert summary["refused_by_maxtext"] >= 10  # the set exercises refusals, not only accepted configs
