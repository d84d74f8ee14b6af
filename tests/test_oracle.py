"""The MaxText oracle's machinery (rcpc/oracle.py, rcpc/oracle_driver.py, rcpc/domain/launches.py),
driven with a stand-in MaxText package (the diagnostics catalog's ``FAKE_MAXTEXT`` with a loader that
refuses ``context_parallel_strategy=usp`` and hangs on ``steps=-1``) so that every path runs in
a fraction of a second: what a case carries to the loader (argv, ``M_`` env, devices, slices),
where a refusal is reported, the cache, the timeout, what cannot run, and rcp.toml's settings.
MaxText's real loader is run by tests/test_maxtext_agreement.py."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import storefiles
from rcpc.catalog import FAKE_MAXTEXT
from rcpc.core import store
from rcpc.core.diagnostics import CompileError
from rcpc.oracle import Oracle, check_launches, package_digest

# JAX as the stand-in's mesh creation needs it (the driver imports jax for a case with a mesh, and
# hands jax.devices() to create_device_mesh): the CPU devices of the process's XLA_FLAGS. It comes
# first on the loader's PYTHONPATH (the package's parent), so that a process starts in a fraction
# of a second instead of importing the real JAX (~2 s of CPU for each of this module's runs).
JAX = {"mt/src/jax/__init__.py": (
    "import os\nimport re\n\n_N = int(re.search(r'--xla_force_host_platform_device_count=(\\d+)',\n"
    "                   os.environ['XLA_FLAGS']).group(1))\n\n\ndef devices():\n"
    "    return [f'cpu:{i}' for i in range(_N)]\n")}
FAKE = dict(FAKE_MAXTEXT, **JAX)
FAKE["mt/src/maxtext/configs/pyconfig.py"] = (
    "import time\n\n\ndef _handle_config_exception(e):\n    raise e\n\n\n"
    "def initialize(argv):\n"
    "    if 'context_parallel_strategy=usp' in argv:\n"
    "        raise ValueError('TPU USP attention requires ici_context_usp_ulysses_parallelism > 1 for the Ulysses "
    "dimension.')\n"
    "    if 'steps=-1' in argv:\n"
    "        time.sleep(60)\n"
    "    return object()\n")

# A loader that answers with what it was given: refuses every case, its message the JSON of its
# argv (without MaxText's base.yml), the M_ variables and the device count it sees.
ECHO = dict(FAKE_MAXTEXT, **JAX)
ECHO["mt/src/maxtext/configs/pyconfig.py"] = (
    "import json, os\n\nAT_IMPORT = os.environ.get('XLA_FLAGS')\n\n\ndef _handle_config_exception(e):\n"
    "    raise e\n\n\n"
    "def initialize(argv):\n"
    "    env = {k: v for k, v in os.environ.items() if k.startswith('M_')}\n"
    "    raise ValueError(json.dumps({'argv': argv[2:], 'base': argv[1].endswith('configs/base.yml'), 'env': env,\n"
    "                                 'xla': os.environ.get('XLA_FLAGS'), 'devices': AT_IMPORT,\n"
    "                                 'home': os.environ.get('HOME'),\n"
    "                                 'cwd': os.getcwd()}))\n")


@pytest.fixture
def mt(tmp_path, monkeypatch):
    """A stand-in MaxText checkout at ``tmp_path/mt`` and a private user cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)
    yield _write(tmp_path, FAKE)
    store.flush()


def _write(root: Path, files: dict) -> Path:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root / "mt"


def _case(argv, env=None, devices=1, slices=1, mesh=False) -> dict:
    return {"argv": list(argv), "env": dict(env or {}), "devices": devices, "slices": slices, "mesh": mesh}


def test_answers_each_case_and_serves_repeats_from_the_cache(mt):
    oracle = Oracle(mt)
    cases = [_case(["steps=5"]), _case(["context_parallel_strategy=usp"])]
    first = oracle.run(cases)
    assert first[0] == {"ok": True}
    assert first[1]["ok"] is False and first[1]["type"] == "ValueError"
    assert "ici_context_usp_ulysses_parallelism > 1" in first[1]["message"]
    assert oracle.ran == 2
    again = Oracle(mt)
    assert again.run(cases) == first and again.ran == 0  # no subprocess: all from the cache


def test_the_cache_keys_on_the_package_content(mt):
    """A package's digest is found once a session (a Workspace's run), anew in another: an
    edited MaxText is another oracle, whose results are run again."""
    from rcpc import oracle as module
    from rcpc.core.session import Session

    case = [_case(["steps=5"])]
    Oracle(mt).run(case)
    session = Session()
    table = session.table(module.DIGESTS)
    before = package_digest(mt / "src" / "maxtext", table)
    (mt / "src" / "maxtext" / "configs" / "base.yml").write_text("steps: 7\n")
    assert package_digest(mt / "src" / "maxtext", table) == before  # found once a session (a Workspace's run)
    assert package_digest(mt / "src" / "maxtext") != before  # no process-wide memo: found anew
    assert package_digest(mt / "src" / "maxtext", Session().table(module.DIGESTS)) != before
    edited = Oracle(mt)
    edited.run(case)
    assert edited.ran == 1  # another MaxText: run again


@pytest.mark.parametrize("garbage", [b"", b"{", b'{"ok": "yes"}', b'{"ok": false}', b"[1]", b"\xff"])
def test_a_cache_entry_that_is_no_result_is_a_miss(mt, garbage):
    oracle = Oracle(mt)
    case = _case(["steps=5"])
    oracle.run([case])
    (entry,) = storefiles.rows(mt.parent / "cache", "oracle")
    storefiles.rewrite(mt.parent / "cache", entry[0], store.entry("oracle", entry[0], garbage))
    again = Oracle(mt)
    assert again.run([case]) == [{"ok": True}] and again.ran == 1


@pytest.mark.parametrize("name", [store.DATABASE, store.DATABASE + "-wal"])
@pytest.mark.parametrize("how", storefiles.HOW)
def test_an_entry_another_user_could_have_planted_is_a_miss(mt, how, name):
    """The oracle's cache is trusted as rcpc's others are (rcpc.core.store): an entry that
    says MaxText accepts a flag set it refuses, in a store another user could have written,
    is not believed."""
    if how == "other uid" and os.getuid() != 0:
        pytest.skip("chown to another user needs root")
    oracle = Oracle(mt)
    case = _case(["context_parallel_strategy=usp"])
    (refused,) = oracle.run([case])
    assert refused["ok"] is False
    cache = mt.parent / "cache"
    ((key, _, _),) = storefiles.rows(cache, "oracle")
    db = storefiles.database(cache)
    assert stat.S_IMODE(db.stat().st_mode) == 0o600 and stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    storefiles.rewrite(cache, key, store.entry("oracle", key, b'{"ok": true}'))
    storefiles.plant(cache, how, name)
    again = Oracle(mt)
    assert again.run([case]) == [refused] and again.ran == 1


@pytest.mark.parametrize("which", ["rcpc", "rcpc/store"])
def test_a_cache_directory_another_user_can_write_is_not_used(mt, tmp_path, monkeypatch, capsys, which):
    from rcpc.core import usercache

    monkeypatch.setattr(usercache, "_TRUST", {})
    monkeypatch.setattr(usercache, "_WARNED", [])
    directory = tmp_path / "cache" / which
    directory.mkdir(parents=True, mode=0o700)
    os.chmod(directory, 0o777)
    oracle = Oracle(mt)
    assert not oracle.cache and "warning[W0960]" in capsys.readouterr().err
    assert oracle.run([_case(["steps=5"])]) == [{"ok": True}]
    store.flush()
    assert not (tmp_path / "cache" / "rcpc" / "store").exists() or not any(
        (tmp_path / "cache" / "rcpc" / "store").iterdir())  # nothing written to it


def test_what_a_case_carries_to_the_loader(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("M_STEPS", "from-the-user's-shell")  # never passed on
    mt = _write(tmp_path, ECHO)
    (answer,) = Oracle(mt).run([_case(["steps=5", "run_name=a b"], {"M_DTYPE": "float32"}, devices=8, slices=2)])
    seen = json.loads(answer["message"])
    assert seen["argv"] == ["steps=5", "run_name=a b"] and seen["base"] is True
    assert seen["env"] == {"M_DTYPE": "float32"}
    assert seen["devices"] == "--xla_force_host_platform_device_count=8"  # the process's, for jax's backend
    assert seen["xla"] is None  # what the loader reads is the launch's env: no XLA_FLAGS there
    home = Path(seen["home"])
    assert seen["cwd"] == str(home) and home != Path.home() and not home.exists()  # a temporary directory, gone


@pytest.mark.parametrize("entries, seen", [
    ([], None),  # the oracle's own XLA_FLAGS (its CPU devices) are never the loader's
    ([("XLA_FLAGS", "--xla_dump_to=/tmp/d")], "--xla_dump_to=/tmp/d"),
    ([("D", "/tmp/e"), ("XLA_FLAGS", "--xla_dump_to=$(D)")], "--xla_dump_to=/tmp/e"),  # as the container receives it
    ([("XLA_FLAGS", "--a"), ("XLA_FLAGS", "")], ""),  # the last entry wins
])
def test_the_loader_reads_the_xla_flags_of_the_launchs_container(sws, tmp_path, monkeypatch, entries, seen):
    """MaxText's loader reads XLA_FLAGS (types.py, validate_and_set_hlo_dump_defaults, which
    refuses it beside dump_hlo_xla_flags): a case carries the container's, expanded as
    Kubernetes expands it, and the loader sees it, not the oracle's device count."""
    from rcpc.domain.launches import launches
    from rcpc.oracle import case_of

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    env = ", ".join(f'{{"name": "{n}", "value": "{v}"}}' for n, v in entries)
    path = sws.write("recipes/r.rcp", JOBSET.replace('{"name": "M_DTYPE", "value": "float32"}',
                                                     '{"name": "M_DTYPE", "value": "float32"}, ' + env if env
                                                     else '{"name": "M_DTYPE", "value": "float32"}')
                     .replace("CP})", '"ring"})'), dedent=False).resolve()
    (launch,) = launches(sws.compiler().evaluate(path, {}).renders)
    (answer,) = Oracle(_write(tmp_path, ECHO)).run([case_of(launch)])
    got = json.loads(answer["message"])
    assert got["xla"] == seen and got["env"] == {"M_DTYPE": "float32"}
    assert got["devices"] == "--xla_force_host_platform_device_count=32"  # 2 slices of 16


def test_a_loader_that_does_not_answer_is_ended_at_its_timeout(mt):
    oracle = Oracle(mt, timeout=1)
    answers = oracle.run([_case(["steps=5"]), _case(["steps=-1"]), _case(["steps=6"])])
    assert answers[0] == {"ok": True} and answers[1:] == [{"unanswered": "its run was ended after 1 s"}] * 2
    assert oracle.timed_out == 1
    assert len(storefiles.rows(mt.parent / "cache", "oracle")) == 1  # only answers are cached


@pytest.mark.parametrize("where, python, problem", [
    ("nowhere", None, "no MaxText package under"),
    ("mt", "no-such-python-here", "no interpreter 'no-such-python-here'"),
])
def test_an_oracle_that_cannot_run_is_E0361(mt, where, python, problem):
    with pytest.raises(CompileError) as exc:
        Oracle(mt.parent / where, python).run([_case(["steps=5"])])
    (d,) = exc.value.diagnostics
    assert d.code == "E0361" and problem in d.message


def test_a_loader_that_dies_leaves_its_cases_unanswered_with_the_reason(mt):
    (mt / "src" / "maxtext" / "configs" / "pyconfig.py").write_text(
        "import os, signal, sys\n\n\ndef _handle_config_exception(e):\n    raise e\n\n\n"
        "def initialize(argv):\n    if 'steps=6' in argv:\n        sys.stderr.write('out of memory\\n')\n"
        "        sys.stderr.flush()\n        os.kill(os.getpid(), signal.SIGABRT)\n    return object()\n")
    oracle = Oracle(mt)
    answers = oracle.run([_case(["steps=5"]), _case(["steps=6"]), _case(["steps=7"])])
    assert answers == [{"ok": True}] + [{"unanswered": "its run ended with status -6 (SIGABRT): out of memory"}] * 2
    assert len(storefiles.rows(mt.parent / "cache", "oracle")) == 1


def test_a_maxtext_its_interpreter_cannot_import_is_E0361(mt):
    (mt / "src" / "maxtext" / "utils" / "max_utils.py").write_text("import no_such_module_anywhere\n")
    with pytest.raises(CompileError) as exc:
        Oracle(mt).run([_case(["steps=5"])])
    (d,) = exc.value.diagnostics
    assert d.code == "E0361" and "cannot be imported" in d.message and "no_such_module_anywhere" in d.message


SCHEMA = 'maxtext_schema = "builtin:maxtext"\n'
JOBSET = '''S = tpu_slice("tpu7x:2x2x2")
F = maxtext_flags({"steps": 5}, {"context_parallel_strategy": CP})
jobset(name = "js", spec = {"replicatedJobs": [{"name": "w", "replicas": 2, "template": {"spec": {
    "parallelism": S.hosts, "completions": S.hosts,
    "template": {"spec": {"nodeSelector": S.node_selector, "containers": [{
        "name": "main", "image": "img", "args": F.argv, "env": [{"name": "M_DTYPE", "value": "float32"}],
        "resources": {"limits": {"google.com/tpu": S.chips_per_host}},
    }]}},
}}}]})
'''


def test_a_refusal_is_reported_at_the_flag_maxtext_names(ws, mt, cli):
    ws.write("rcp.toml", SCHEMA)
    ws.write("recipes/r.rcp", 'CP = "usp"\n' + JOBSET.replace('"context_parallel_strategy": CP',
                                                                  '"ici_context_usp_ulysses_parallelism": 1, '
                                                                  '"context_parallel_strategy": CP'), dedent=False)
    r = cli("check", "--maxtext", str(mt))
    assert r.code == 1
    assert "recipes/r.rcp:3:73: error[E0360]: MaxText's config loader refuses this flag set: ValueError: TPU USP " \
           "attention requires ici_context_usp_ulysses_parallelism > 1" in r.err
    assert "MaxText started here: recipes/r.rcp:6:75" in r.err
    assert f"note: MaxText {mt} (on 32 CPU devices, 2 slices)" in r.err


def test_every_variant_and_launch_is_judged_once(ws, mt, cli):
    ws.write("recipes/r.rcp", 'CP = param(str, default = "ring")\n' + JOBSET
              + 'variant("default")\nvariant("usp", set = {"CP": "usp"})\nvariant("again", set = {"CP": "usp"})\n',
              dedent=False)
    r = cli("check", "--maxtext", str(mt))
    assert r.code == 1 and r.err.count("error[E0360]") == 1, r.err  # one flag set, refused once


def test_rcp_toml_names_the_oracle_and_its_interpreter(ws, mt, cli):
    ws.write("rcp.toml", f'{SCHEMA}maxtext_oracle = "mt"\nmaxtext_python = "{sys.executable}"\n')
    ws.write("recipes/r.rcp", 'CP = "usp"\n' + JOBSET, dedent=False)
    r = cli("check")
    assert r.code == 1 and "error[E0360]" in r.err and "note: MaxText mt (" in r.err
    ws.write("rcp.toml", 'maxtext_oracle = "mt"\nmaxtext_python = "no-such-python-here"\n')
    r = cli("check")
    assert r.code == 1 and "rcp.toml:1:1: error[E0361]: no interpreter 'no-such-python-here'" in r.err


@pytest.mark.parametrize("toml", ['maxtext_oracle = 5\n', 'maxtext_python = ["python3"]\n', 'maxtext_oracle = "a\\u0000b"\n'])
def test_rcp_toml_oracle_settings_are_strings(ws, cli, toml):
    ws.write("rcp.toml", toml)
    r = cli("check")
    assert r.code == 1 and "error[E0901]" in r.err


def test_a_check_with_the_oracle_is_never_replayed(ws, mt, cli, monkeypatch):
    ws.write("rcp.toml", SCHEMA)
    ws.write("recipes/r.rcp", 'CP = "ring"\n' + JOBSET, dedent=False)
    from rcpc.build import replay

    saved = []
    monkeypatch.setattr(replay.Recorder, "save", lambda self, code: saved.append(self._ok))
    assert cli("check", "--maxtext", str(mt)).code == 0
    assert saved in ([], [False])


# where a refusal is reported -------------------------------------------------------------------
KNOWN = (("steps", "5"), ("log_period", "10"), ("dtype", '"bfloat16"'), ("learning_rate", "1e-4"),
         ("per_device_batch_size", "2.0"), ("remat_policy", '"full"'), ("run_name", '"r"'),
         ("enable_checkpointing", "False"), ("max_target_length", "2048"), ("scan_layers", "True"),
         ("attention", '"flash"'), ("opt_type", '"adamw"'))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.lists(st.sampled_from(KNOWN), unique=True, min_size=0, max_size=len(KNOWN)), at=st.integers(0, 12),
       newer=st.sampled_from(["use_gdn_kernel", "gdn_cp_mode", "zz_newer_flag"]))
@example(keys=list(KNOWN), at=2, newer="use_gdn_kernel")  # the RL recipe's: reported at its last listed key
def test_a_refusal_listing_every_key_is_reported_at_the_key_it_refuses(sws, keys, at, newer):
    """pyconfig.py's unknown-key error, "'KEY' not in 'emb_dim', 'mlp_dim', ..." (every key
    MaxText knows), names nearly every flag of the set: the refusal is of the key it names
    first, whichever flags the set has and wherever that key is among them."""
    from rcpc.domain.launches import launches
    from rcpc.domain.maxtext.schema import BUILTIN_PATH, load_schema
    from rcpc.oracle import case_of, refusal

    items = [f'"{k}": {v}' for k, v in keys]
    items.insert(min(at, len(items)), f'"{newer}": True')
    text = "F = maxtext_flags({\n" + "".join(f"    {x},\n" for x in items) + f'}}, unknown_keys = ["{newer}"])\n' \
        'flag_file(name = "f", flags = F)\n'
    path = sws.write("recipes/r.rcp", text, dedent=False).resolve()
    (launch,) = launches(sws.compiler().evaluate(path, {}).renders)
    fields = load_schema(BUILTIN_PATH, None, "builtin:maxtext").fields
    answer = {"ok": False, "type": "ValueError", "locs": [],
              "message": f"{newer!r} not in {', '.join(map(repr, fields))}."}
    d = refusal(launch, case_of(launch), answer)
    assert d.code == "E0360" and d.span.line == 2 + min(at, len(items) - 1)
    assert [what for what, _ in d.related] == ["MaxText started here"]
