"""Renders compared with the output while workers compile them (issue 20: at 1,000 recipes,
reading back 7,000 unchanged files under the build lock was a third of a second with every
worker done): :func:`rcpc.build.output.publish` given that :class:`~rcpc.build.output.Comparison` must do
exactly what it does without one, whatever happened to the output in between (files edited,
appended, removed, added, a variant directory emptied), including a same-size edit within
one timestamp tick of the comparison, which only the racy-clean rule catches."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples, output_tree
from rcpc.build import output
from rcpc.core.diagnostics import CompileError

RECIPES = ["a", "b/c"]
VARIANTS = ["default", "x"]
TEXT = st.sampled_from(["one\n", "two\n", "owt\n", "three\n"])
FILES = st.dictionaries(st.sampled_from(["f.flags", "g.yaml"]), TEXT, min_size=1)
BUILD = st.fixed_dictionaries({(r, v): FILES for r in RECIPES for v in VARIANTS})
CHANGES = st.dictionaries(st.sampled_from([(r, v) for r in RECIPES for v in VARIANTS]), FILES, max_size=2)
MUTATION = st.tuples(st.sampled_from(["edit", "edit-same-tick", "append", "remove", "add", "none"]),
                     st.sampled_from(RECIPES), st.sampled_from(VARIANTS), st.sampled_from(["f.flags", "g.yaml"]))


def _builds(spec: dict) -> list:
    return [(r, v, sorted(files.items())) for (r, v), files in spec.items()]


def _outcome(out: Path, builds: list, compared) -> tuple:
    try:
        written = output.publish(out, builds, "out", whole=set(RECIPES), known=set(RECIPES), compared=compared)
    except CompileError as exc:
        return ("error", [d.code for d in exc.diagnostics], output_tree(out))
    return ("ok", written, output_tree(out))


@given(first=BUILD, changes=CHANGES, mutations=st.lists(MUTATION, max_size=4), racy=st.booleans())
@settings(max_examples=examples(150, 50), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_publish_with_a_comparison_made_earlier_does_what_it_does_without(tmp_path_factory, monkeypatch, first,
                                                                         changes, mutations, racy):
    second = {**first, **changes}  # mostly unchanged, as in a rebuild
    base = tmp_path_factory.mktemp("cmp")
    out = base / "out"
    output.publish(out, _builds(first), "out", whole=set(RECIPES), known=set(RECIPES))
    # File times as a logical clock: every change the test makes moves it, except an edit
    # "in the same tick" (possible only for a file changed just before the comparison).
    clock = {"now": 1}
    times: dict = {}
    real_stat = output._stat

    def fake_stat(path):
        st_ = real_stat(path)
        t = times.get(os.path.realpath(path), 0)
        return (st_[0], t, t, st_[3], st_[4])

    monkeypatch.setattr(output, "_stat", fake_stat)
    compared = output.Comparison(out)
    if racy:  # every file changed just before the comparison began: none of its stats is trusted
        compared._before = 0
    for (r, v), files in second.items():
        compared.add(r, v, sorted(files.items()))

    def touch(p: Path) -> None:
        clock["now"] += 1
        times[os.path.realpath(p)] = clock["now"]

    for kind, r, v, name in mutations:
        d = out / r / v
        p = d / name
        if kind == "edit" and p.is_file():
            p.write_text(p.read_text()[::-1])
            touch(p)
        elif kind == "edit-same-tick" and racy and p.is_file():
            p.write_text(p.read_text()[::-1])   # same size, same time: only the racy rule catches it
        elif kind == "append" and p.is_file():
            p.write_text(p.read_text() + "more\n")
            touch(p)
        elif kind == "remove" and p.is_file():
            p.unlink()
            touch(d)
        elif kind == "add" and d.is_dir():
            (d / "mine.txt").write_text("a user's file\n")
            touch(d)
    copy = base / "copy"
    shutil.copytree(out, copy, symlinks=True)
    monkeypatch.setattr(output, "_stat", real_stat)
    want = _outcome(copy, _builds(second), None)
    monkeypatch.setattr(output, "_stat", fake_stat)
    assert _outcome(out, _builds(second), compared) == want


def test_a_comparison_of_another_generation_is_not_used(tmp_path):
    out = tmp_path / "out"
    one = [("a", "default", [("f.flags", "one\n")])]
    output.publish(out, one, "out")
    compared = output.Comparison(out)
    compared.add("a", "default", one[0][2])
    output.publish(out, [("a", "default", [("f.flags", "two\n")])], "out")   # another build, meanwhile
    assert output.publish(out, one, "out", compared=compared) == 1
    assert output_tree(out) == {"a/default/f.flags": b"one\n"}


def test_a_build_with_workers_writes_what_one_without_writes(tmp_path, monkeypatch):
    """End to end: ``rcpc build`` with workers (each result compared as it arrives) over an
    output that is partly stale gives the output a build with -j 1 gives."""
    from rcpc.build import parallel
    from rcpc.cli import main

    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    (tmp_path / "rcp.toml").write_text("")
    (tmp_path / "recipes").mkdir()
    monkeypatch.chdir(tmp_path)
    for k in range(8):
        (tmp_path / "recipes" / f"r{k}.rcp").write_text(
            f'flag_file(name = "t", flags = maxtext_flags({{"steps": {k}}}))\nvariant("default")\n'
            f'variant("more", set = {{}})\n')
    assert main(["build", "-j", "1", "-o", "one"]) == 0
    shutil.copytree(tmp_path / "one", tmp_path / "two", symlinks=True)
    for k in (1, 5):
        (tmp_path / "recipes" / f"r{k}.rcp").write_text(
            f'flag_file(name = "t", flags = maxtext_flags({{"steps": {k + 100}}}))\nvariant("default")\n')
    assert main(["build", "-j", "1", "-o", "one"]) == 0
    assert main(["build", "-j", "3", "-o", "two"]) == 0
    assert output_tree(tmp_path / "two") == output_tree(tmp_path / "one")
