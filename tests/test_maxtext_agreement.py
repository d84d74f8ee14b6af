"""rcpc's MaxText checks against MaxText's real config loader (``../shared/data/maxtext-src`` at the
pinned commit, run in a subprocess by rcpc's oracle on CPU devices), issue 36:

* every refusal of the built-in schema, read from types.py or modelled by hand, fires (E0350) on
  a config that MaxText's loader refuses: none is a refusal that can never fire;
* a reduced version of ``bench/maxtext_agreement.py``'s differential set (mutations of a real
  port across every kind): the built-in schema raises no false alarm and agrees on at least 98%
  of them, and the oracle mode agrees on all;
* ``rcpc check`` on the bundled recipes agrees with the loader on every flag set they render;
* the loader's answers are cached by (MaxText, flag set).

All parts share ONE run of the loader (the ``loader`` fixture): one subprocess per device
count, every case of that count in it (JAX's start-up and MaxText's import are the cost), with
a private user cache so that the loader really runs."""

from __future__ import annotations

import importlib.util
import json
import random
import re
from pathlib import Path

import pytest
import storefiles

from rcpc.core.diagnostics import CompileError
from rcpc.domain.maxtext import lax
from rcpc.domain.maxtext.flagset import check_entry, resolved
from rcpc.domain.maxtext.refusal_eval import Undecided, holds
from rcpc.domain.maxtext.schema import BUILTIN_PATH, load_schema
from rcpc.domain.maxtext import BUILTIN

# one worker runs MaxText's loader once for the module (its fixture is ~100 s), started first
# (tests/conftest.py, pytest_collection_modifyitems)
pytestmark = pytest.mark.xdist_group("test_maxtext_agreement")

REPO = Path(__file__).resolve().parents[1]
MAXTEXT = REPO.parent / "shared" / "data" / "maxtext-src"
SCHEMA = load_schema(BUILTIN_PATH, None, BUILTIN)
_spec = importlib.util.spec_from_file_location("maxtext_agreement", REPO / "bench" / "maxtext_agreement.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


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
    from rcpc.domain.maxtext.crossfield import _MISSING, _value

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




# one run of MaxText's loader for the whole module -----------------------------------------------
def refusal_cases(root: Path) -> list:
    """``(refusal, config, rcpc's E0350 messages on it, the loader's case)`` for each refusal of
    the built-in schema: a config that makes it fire (:func:`firing_config`), built with the
    built-in schema as one recipe of a flag set per refusal. The cases run without a mesh, on
    the devices of the reduced set's slice (so in its loader subprocess)."""
    from rcpc.domain.maxtext.flagset import argv
    from rcpc.domain.recipe import Compiler
    from rcpc.domain.tpu import tpu_slice
    from rcpc.domain.workspace import Workspace

    chosen = []
    for i, r in enumerate(SCHEMA.refusals):
        config = firing_config(r, i)
        assert config is not None, f"no config makes {r.get('file', 'types.py')}:{r['line']} fire"
        chosen.append((r, config))
    (root / "recipes").mkdir(parents=True)
    (root / "rcp.toml").write_text('maxtext_schema = "builtin:maxtext"\n', encoding="utf-8")
    path = (root / "recipes" / "r.rcp").resolve()
    path.write_text("".join(f"F{i} = maxtext_flags({bench.literal(c)})\nflag_file(name = \"f{i}\", flags = F{i})\n"
                            for i, (_, c) in enumerate(chosen)), encoding="utf-8")
    compiler = Compiler(Workspace.find(root))
    with pytest.raises(CompileError) as exc:
        compiler.build(path)
    fired: dict = {}
    for d in exc.value.diagnostics:
        if d.code == "E0350":
            fired.setdefault((d.span.line - 1) // 2, set()).add(d.message)
    exports = compiler.evaluate(path, {}).exports
    devices = tpu_slice(TPU, None).devices
    return [(r, config, fired.get(i, set()), {"argv": argv(exports[f"F{i}"]), "env": {}, "devices": devices,
                                             "slices": 1, "mesh": False})
            for i, (r, config) in enumerate(chosen)]


def bundled_launches() -> list:
    """``(recipe, launch)`` of every distinct launch of the bundled recipes, every variant's, as
    ``rcpc check --maxtext`` finds them (:func:`rcpc.domain.launches.recipe_launches`)."""
    from rcpc.domain.launches import recipe_launches
    from rcpc.domain.recipe import Compiler
    from rcpc.domain.workspace import Workspace
    from rcpc.oracle import case_of

    ws = Workspace.find(REPO)
    compiler = Compiler(ws)
    seen: dict = {}
    for recipe in ws.recipes():
        for x in recipe_launches(compiler, recipe):
            seen.setdefault(json.dumps(case_of(x), sort_keys=True), (recipe, x))
    return list(seen.values())


@pytest.fixture(scope="module")
def loader(tmp_path_factory):
    """Every case of this module (the refusals', the reduced differential set's, the bundled
    recipes' launches) judged by MaxText at the pinned commit in ONE ``Oracle.run``: one loader
    subprocess per device count (JAX's start-up and MaxText's import are the cost, ~6 s of CPU
    each), one at a time (two would split the largest group between two subprocesses, one start
    more, while the suite's other pytest-xdist worker keeps the other CPU busy), with a private
    user cache so that the loader really runs. The oracle mode of the reduced set and the
    bundled launches' findings then come from that cache. JAX reserves more than the suite's
    memory bound (conftest.py's RLIMIT_DATA) for hundreds of CPU devices and aborts: the
    loader's runs get the hard limit (as outside the tests), restored afterwards."""
    import resource

    from rcpc.oracle import Oracle, case_of, check_launches

    tmp = tmp_path_factory.mktemp("agreement")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp / "cache"))
        mp.delenv("RCPC_NO_CACHE", raising=False)
        refusals = refusal_cases(tmp / "refusals")
        rows, truth, found = bench.prepare(tmp / "mutations", reduced())
        bundled = bundled_launches()
        cases = [c for *_, c in refusals] + truth + [case_of(x) for _, x in bundled]
        oracle = Oracle(MAXTEXT, timeout=900)  # a loaded machine must not make a run time out
        bound = resource.getrlimit(resource.RLIMIT_DATA)
        resource.setrlimit(resource.RLIMIT_DATA, (bound[1], bound[1]))
        try:
            answers = oracle.run(cases)
        finally:
            resource.setrlimit(resource.RLIMIT_DATA, bound)
        ran = oracle.ran
        a, b = len(refusals), len(refusals) + len(truth)
        rows = bench.conclude(rows, truth, found, answers[a:b], oracle)
        findings = [check_launches(oracle, [x]) for _, x in bundled]
        again = Oracle(MAXTEXT)  # another check of the same flag sets with the same MaxText
        repeated = again.run(cases)
        yield {"cases": cases, "answers": answers, "ran": ran, "ran_after": oracle.ran, "again": repeated,
               "again_ran": again.ran, "entries": storefiles.rows(tmp / "cache", "oracle"),
               "refusals": list(zip(refusals, answers[:a])), "rows": rows,
               "bundled": list(zip(bundled, answers[b:], findings))}


# every refusal fires on a config MaxText refuses ------------------------------------------------
def _where(r: dict) -> str:
    return f"{r.get('file', 'types.py')}:{r['line']}"


def _text(r: dict) -> str:
    """The start of the first literal part of refusal ``r``'s message: MaxText's own words."""
    return next(p.strip() for p in r["message"] if isinstance(p, str) and len(p.strip()) >= 8)[:25]


def test_every_refusal_fires_on_a_config_maxtexts_loader_refuses(loader):
    """For each refusal, the config that makes it fire is refused by MaxText's loader, with
    the message of a refusal rcpc reports on it (MaxText stops at the first it meets: when
    several fire, any of theirs)."""
    by_where: dict = {}
    for r in SCHEMA.refusals:
        by_where.setdefault(_where(r), []).append(_text(r))
    for (r, config, fired, _), answer in loader["refusals"]:
        where = _where(r)
        assert any(f"({where}, " in m for m in fired), f"{where} did not fire on {config}"
        assert answer is not None and answer["ok"] is False, f"MaxText accepts {config}, which {where} refuses"
        said = {t for m in fired for w in re.findall(r"\((\S+:\d+), ", m) for t in by_where[w]}
        assert any(t in answer["message"] for t in said), (where, config, said, answer["message"][:300])


# the reduced differential set -------------------------------------------------------------------
def test_builtin_and_oracle_agree_with_maxtexts_loader(loader):
    rows = loader["rows"]
    summary = bench.summarize(rows)
    assert summary["judged"] == len(rows), [r for r in rows if r["maxtext"] is None]  # every case answered
    alarms = [(r["layers"], r["env"], r["rcpc"]) for r in rows if r["rcpc"] and r["maxtext"] == "ok"]
    assert not alarms  # no false alarm
    assert summary["builtin"]["ratio"] >= 0.98, [(r["layers"], r["maxtext"]) for r in rows
                                                  if not r["rcpc"] and r["maxtext"] != "ok"]
    assert summary["oracle_mode"]["ratio"] == 1.0
    assert [r for r in rows if not r["same_launch"]] == []  # rcpc found the argv, env, devices and slices the harness made
    assert summary["refused_by_maxtext"] >= 10  # the set exercises refusals, not only accepted configs


# the bundled recipes ----------------------------------------------------------------------------
def beyond_the_schema(fs) -> list[str]:
    """The keys of flag set ``fs`` whose value MaxText at the schema's commit refuses but the
    recipe acknowledges (``unknown_keys``, ``unknown_values``: a newer MaxText's key or value):
    each key whose last value the built-in check refuses when nothing is acknowledged."""
    return [k for k, e in resolved(fs).items()
            if any(d.severity == "error" for d in check_entry(e, fs.schema, {}, {})[1])]


def test_check_on_the_bundled_recipes_agrees_with_maxtexts_loader_on_every_flag_set(loader):
    """``rcpc check`` passes every bundled recipe (tests/test_maxtext_fidelity.py), so MaxText's
    loader, on every flag set they render as ``rcpc check --maxtext`` runs it, accepts exactly
    those that set no key or value beyond the pinned schema; one that does (the RL recipe's
    ``unknown_keys``, for a newer MaxText) is refused for such a key, and ``check --maxtext``
    reports that refusal (E0360) at that key."""
    bundled = loader["bundled"]
    assert len(bundled) >= 13 and {x.devices for (_, x), _, _ in bundled} >= {None, 128, 256, 512}
    for (recipe, x), answer, findings in bundled:
        newer = beyond_the_schema(x.flags)
        assert answer["ok"] is (not newer), (recipe.name, newer, answer)
        if newer:
            (d,) = findings
            entries = resolved(x.flags)
            assert d.code == "E0360" and d.span in {entries[k].value.span for k in newer}, (d, newer)
        else:
            assert findings == []


# the cache ---------------------------------------------------------------------------------------
def test_the_loaders_answers_are_cached_by_maxtext_and_flag_set(loader):
    """Keyed by MaxText's package content (its revision, and an edited checkout too), the
    driver, the interpreter and the flag set (argv, M_ env, devices, slices): the oracle mode's
    judgement of the same flag sets, and a second check with a new Oracle, start no loader."""
    distinct = {json.dumps(c, sort_keys=True) for c in loader["cases"]}
    assert loader["ran"] == len(loader["cases"]) and len(loader["entries"]) == len(distinct)
    assert loader["ran_after"] == loader["ran"]  # the oracle mode's runs: all from the cache
    assert loader["again_ran"] == 0 and loader["again"] == loader["answers"]
