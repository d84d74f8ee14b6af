"""The build cache: a warm build reuses results, and any change to what a render depends on
triggers a compile (issue "Performance": cache correctness)."""

from __future__ import annotations

from pathlib import Path

import pytest

import rcpc.build.cache
import storefiles
from conftest import CACHED_RECIPE as RECIPE
from rcpc.core import store
from rcpc.cli import main



@pytest.fixture
def wsc(cached_ws, build_calls):
    return cached_ws, build_calls


def build(*args) -> int:
    return main(["build", *args])


def flags(root: Path, variant: str = "default") -> str:
    return (root / "rcpc-out" / "r" / variant / "trainer.flags").read_text()


def test_warm_build_compiles_nothing(wsc):
    root, calls = wsc
    assert build() == 0 and len(calls) == 1
    assert build() == 0 and len(calls) == 1
    assert flags(root) == "learning_rate=1e-6\nsteps=2\n"


def test_a_changed_loaded_file_rebuilds(wsc):
    root, calls = wsc
    build()
    (root / "recipes" / "lib" / "l.rcp").write_text("LR = 2e-6\n")
    assert build() == 0 and len(calls) == 2
    assert flags(root) == "learning_rate=2e-6\nsteps=2\n"


def test_a_changed_recipe_rebuilds(wsc):
    root, calls = wsc
    build()
    (root / "recipes" / "r.rcp").write_text(RECIPE.replace("default = 2", "default = 5"))
    build()
    assert len(calls) == 2 and flags(root) == "learning_rate=1e-6\nsteps=5\n"


def test_params_and_variants_are_part_of_the_key(wsc):
    root, calls = wsc
    build()
    build("--set", "N=7")
    assert len(calls) == 2 and flags(root, "custom").endswith("steps=7\n")
    build("--set", "N=7")
    assert len(calls) == 2
    build("--set", "N=8")
    assert len(calls) == 3
    build("--variant", "more")
    assert len(calls) == 4


def test_a_new_rcpc_rebuilds(wsc, monkeypatch):
    root, calls = wsc
    build()
    monkeypatch.setattr(rcpc.build.cache, "code_fingerprint", lambda: "another rcpc")
    build()
    assert len(calls) == 2


def test_the_code_fingerprint_changes_with_any_source_file(tmp_path):
    from rcpc.core.usercache import code_fingerprint

    (tmp_path / "core").mkdir()
    (tmp_path / "__init__.py").write_text('__version__ = "0.1.0"\n')
    (tmp_path / "core" / "grammar.lark").write_text("start: X\n")
    (tmp_path / "notes.txt").write_text("not code\n")
    seen = {code_fingerprint(str(tmp_path))}
    (tmp_path / "notes.txt").write_text("still not code\n")
    assert code_fingerprint(str(tmp_path)) in seen
    for edit in (lambda: (tmp_path / "__init__.py").write_text('__version__ = "0.2.0"\n'),  # a new version
                 lambda: (tmp_path / "core" / "grammar.lark").write_text("start: Y Z\n"),
                 lambda: (tmp_path / "core" / "new.py").write_text("")):
        edit()
        now = code_fingerprint(str(tmp_path))
        assert now not in seen
        seen.add(now)


def test_rcpcs_own_fingerprint_is_found_once_a_process(monkeypatch):
    """The code a process runs is the code it loaded: its own fingerprint (and where lark
    and jsonschema are) are found once; another package's at each call."""
    from rcpc.core import usercache

    calls = []
    real = usercache._fingerprint
    monkeypatch.setattr(usercache, "_KNOWN", {})
    monkeypatch.setattr(usercache, "_fingerprint", lambda package, *more: calls.append(package) or real(package, *more))
    first = usercache.code_fingerprint()
    from rcpc.core.distributions import fingerprint

    assert usercache.code_fingerprint() == first == real(str(Path(usercache.__file__).parents[1]), fingerprint())
    usercache.code_fingerprint(str(Path(usercache.__file__).parent))
    usercache.code_fingerprint(str(Path(usercache.__file__).parent))
    assert len(calls) == 3
    assert usercache.installed("lark") == usercache.installed("lark") == usercache._installed("lark")


def test_a_changed_or_missing_output_is_rewritten_from_the_cache(wsc):
    root, calls = wsc
    build()
    out = root / "rcpc-out" / "r" / "default" / "trainer.flags"
    out.write_text("tampered\n")
    (root / "rcpc-out" / "r" / "more" / "trainer.flags").unlink()
    assert build() == 0 and len(calls) == 1
    assert flags(root) == "learning_rate=1e-6\nsteps=2\n" and flags(root, "more").endswith("steps=3\n")


@pytest.mark.parametrize("part", ["header", "payload"])
def test_a_corrupted_cache_entry_is_ignored_and_rebuilt(wsc, tmp_path, part):
    root, calls = wsc
    build()
    for key, _, data in storefiles.rows(tmp_path / "cache", "build"):
        at = 3 if part == "header" else len(data) - 10
        storefiles.rewrite(tmp_path / "cache", key, data[:at] + bytes([data[at] ^ 1]) + data[at + 1:])
    (root / "rcpc-out").rename(root / "old-out")
    assert build() == 0 and len(calls) == 2
    assert flags(root) == "learning_rate=1e-6\nsteps=2\n"
    assert build() == 0 and len(calls) == 2   # the entry was rewritten


@pytest.mark.parametrize("contracts", [["nope"], ["default", "default"], [1], "default", None])
def test_an_entry_naming_contracts_it_could_not_hold_is_ignored(wsc, tmp_path, contracts):
    """An entry's list of variants whose contract held (what ``pytest rcp.toml`` serves
    contract items from) names built variants, each once; anything else is a miss."""
    import json

    root, calls = wsc
    build()
    for key, _, data in storefiles.rows(tmp_path / "cache", "build"):
        entry = json.loads(storefiles.payload("build", key, data))
        assert entry["contracts"] == []
        storefiles.rewrite(tmp_path / "cache", key, store.entry("build", key, json.dumps(
            {**entry, "contracts": contracts}).encode()))
    (root / "rcpc-out").rename(root / "old-out")
    assert build() == 0 and len(calls) == 2


def test_errors_are_never_cached(wsc):
    root, calls = wsc
    (root / "recipes" / "r.rcp").write_text(RECIPE + "X = Y\n")
    assert build() == 1 and build() == 1
    assert len(calls) == 2


@pytest.mark.parametrize("kind", ["flag_file", "manifest", "command_file"])
def test_a_recipe_of_every_render_kind_is_served_from_the_cache(wsc, kind):
    """An entry is read back whatever render kinds its recipe has: the suffixes an entry's
    render names may end with are those of every render kind (a recipe with a command file,
    ``.sh``, was compiled on every build)."""
    from rcpc.domain.renders import KINDS

    root, calls = wsc
    assert set(rcpc.build.cache._RENDER_SUFFIXES) == {k.suffix for k in KINDS}
    render = {"flag_file": 'flag_file(name = "more", flags = maxtext_flags({"steps": 3}))\n',
              "manifest": 'manifest(name = "more", apiVersion = "v1", kind = "ConfigMap", data = {})\n',
              "command_file": 'command_file(name = "more", argv = ["echo", "hi"])\n'}[kind]
    (root / "recipes" / "r.rcp").write_text(RECIPE + render)
    assert build() == 0 and build() == 0 and len(calls) == 1
