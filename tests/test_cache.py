"""The build cache: a warm build reuses results, and any change to what a render depends on
triggers a compile (issue "Performance": cache correctness)."""

from __future__ import annotations

from pathlib import Path

import pytest

import rcpc.cache
import rcpc.recipe
from rcpc.cli import main

RECIPE = '''load("//recipes/lib/l.rcp", "LR")
N = param(int, default = 2)
F = maxtext_flags({"learning_rate": LR, "steps": N})
flag_file(name = "trainer", flags = F)
variant("default")
variant("more", set = {"N": 3})
'''


@pytest.fixture
def wsc(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)
    root = tmp_path / "ws"
    (root / "recipes" / "lib").mkdir(parents=True)
    (root / "rcp.toml").write_text("")
    (root / "recipes" / "r.rcp").write_text(RECIPE)
    (root / "recipes" / "lib" / "l.rcp").write_text("LR = 1e-6\n")
    monkeypatch.chdir(root)
    calls = []
    real = rcpc.recipe.Compiler.build

    def counting(self, *a, **k):
        calls.append(a)
        return real(self, *a, **k)

    monkeypatch.setattr(rcpc.recipe.Compiler, "build", counting)
    return root, calls


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
    monkeypatch.setattr(rcpc.cache, "__version__", "99.0")
    build()
    assert len(calls) == 2


def test_a_changed_or_missing_output_is_rewritten_from_the_cache(wsc):
    root, calls = wsc
    build()
    out = root / "rcpc-out" / "r" / "default" / "trainer.flags"
    out.write_text("tampered\n")
    (root / "rcpc-out" / "r" / "more" / "trainer.flags").unlink()
    assert build() == 0 and len(calls) == 1
    assert flags(root) == "learning_rate=1e-6\nsteps=2\n" and flags(root, "more").endswith("steps=3\n")


@pytest.mark.parametrize("part", ["entries", "blobs"])
def test_a_corrupted_cache_entry_is_ignored_and_rebuilt(wsc, tmp_path, part):
    root, calls = wsc
    build()
    for p in (tmp_path / "cache" / "rcpc" / "builds").rglob("*"):
        if p.is_file() and p.parent.name == part:
            p.write_bytes(b"\x00garbage")
    (root / "rcpc-out").rename(root / "old-out")
    assert build() == 0 and len(calls) == 2
    assert flags(root) == "learning_rate=1e-6\nsteps=2\n"
    assert build() == 0 and len(calls) == 2   # the entry was rewritten


def test_errors_are_never_cached(wsc):
    root, calls = wsc
    (root / "recipes" / "r.rcp").write_text(RECIPE + "X = Y\n")
    assert build() == 1 and build() == 1
    assert len(calls) == 2
