"""No-op replay (issue "Performance"): an unchanged ``rcpc build``/``rcpc check`` is replayed
from its record without importing the CLI, and any change to what it depends on (a loaded
file, the recipe tree, rcp.toml, rcpc itself, an output, the command line) is a miss."""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CACHED_RECIPE as RECIPE
from rcpc.build import replay
from rcpc.__main__ import run

PAST = time.time() - 3600


def settle(root: Path) -> None:
    """Date every file under ``root`` an hour back, so a later write always changes its
    mtime, and recording is not held back by the racy-clean rule."""
    for p in root.rglob("*"):
        os.utime(p, (PAST, PAST), follow_symlinks=False)


@pytest.fixture
def wsr(cached_ws, monkeypatch):
    """A workspace, built once and recorded (files settled before the recording run)."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(replay, "RACY_NS", 0)  # rcpc's own files may be freshly installed
    assert run(["build"]) == 0
    settle(cached_ws)
    assert run(["build"]) == 0   # nothing to write: recorded
    return cached_ws


def served(argv=("build",)):
    """The exit code a replay gives, or None for a miss."""
    return replay.serve(list(argv), replay.stderr_color())


def test_an_unchanged_build_is_replayed_with_the_same_output(wsr, capsys):
    capsys.readouterr()
    assert run(["build"]) == 0
    full = capsys.readouterr()
    assert served() == 0
    assert capsys.readouterr() == full
    assert "rcpc: 2 renders of 1 recipe(s)" in full.err


@pytest.mark.parametrize("where", ["recipes", "recipes/lib"])
def test_a_pycache_made_after_the_record_still_replays(wsr, where):
    """Python makes ``__pycache__`` in a directory the first time it imports a module there
    (rcpc's package on a fresh checkout, while parallel tests import it): no directory listing
    a record holds names it, so its appearing is no change (it failed replays in CI-like runs)."""
    (wsr / where / "__pycache__").mkdir(exist_ok=True)
    assert served() == 0
    assert "__pycache__" not in replay.listing(str(wsr / where))


def test_check_is_replayed_too(wsr, capsys):
    assert served(["check"]) is None
    assert run(["check"]) == 0
    full = capsys.readouterr()
    assert served(["check"]) == 0 and capsys.readouterr() == full


def test_the_command_line_and_colour_are_part_of_the_key(wsr, monkeypatch):
    assert served(["build", "--variant", "more"]) is None
    assert replay.serve(["build"], False) == 0
    assert replay.serve(["build"], True) is None  # coloured diagnostics differ


def mutations(root: Path) -> dict:
    ws_file = root / "recipes" / "lib" / "l.rcp"
    out = root / "rcpc-out" / "r" / "default" / "trainer.flags"
    return {
        "loaded file, same size": lambda: ws_file.write_text("LR = 2e-6\n"),
        "recipe": lambda: (root / "recipes" / "r.rcp").write_text(RECIPE + "\n"),
        "rcp.toml": lambda: (root / "rcp.toml").write_text('recipe_dirs = ["recipes"] \n'),
        "new recipe": lambda: (root / "recipes" / "s.rcp").write_text(RECIPE),
        "new directory of recipes": lambda: (root / "recipes" / "sub").mkdir(),
        "deleted library": lambda: ws_file.unlink(),
        "output edited, same size": lambda: out.write_text(out.read_text().upper()),
        "output deleted": lambda: out.unlink(),
        "extra output": lambda: (out.parent / "x.yaml").write_text(""),
        "output directory gone": lambda: (out.parent).rename(root / "elsewhere"),
    }


@pytest.mark.parametrize("change", list(mutations(Path("/"))))
def test_any_change_is_a_miss_and_the_full_build_is_right(wsr, change):
    mutations(wsr)[change]()
    assert served() is None
    if change == "deleted library":
        assert run(["build"]) == 1
        return
    if change == "extra output":  # a file rcpc did not write, in its output: refused, kept (E0911)
        assert run(["build"]) == 1 and (wsr / "rcpc-out" / "r" / "default" / "x.yaml").exists()
        (wsr / "rcpc-out" / "r" / "default" / "x.yaml").unlink()
    assert run(["build"]) == 0
    lr = "2e-6" if change.startswith("loaded") else "1e-6"
    assert (wsr / "rcpc-out" / "r" / "default" / "trainer.flags").read_text() == f"learning_rate={lr}\nsteps=2\n"
    assert (wsr / "rcpc-out" / "r" / "more" / "trainer.flags").read_text() == f"learning_rate={lr}\nsteps=3\n"


def test_a_workspace_config_appearing_between_cwd_and_root_is_a_miss(wsr, monkeypatch):
    sub = wsr / "recipes" / "lib"
    monkeypatch.chdir(sub)
    assert run(["build"]) == 0 and served() == 0
    (wsr / "recipes" / "rcp.toml").write_text("")
    assert served() is None


def test_a_symlinked_recipe_pointed_elsewhere_is_a_miss(wsr):
    (wsr / "recipes" / "a.rcp").write_text(RECIPE)
    (wsr / "recipes" / "b.rcp").write_text(RECIPE.replace("default = 2", "default = 4"))
    (wsr / "recipes" / "link.rcp").symlink_to("a.rcp")
    settle(wsr)
    assert run(["build"]) == 0
    settle(wsr)
    assert run(["build"]) == 0 and served() == 0
    (wsr / "recipes" / "link.rcp").unlink()
    (wsr / "recipes" / "link.rcp").symlink_to("b.rcp")
    os.utime(wsr / "recipes" / "link.rcp", (PAST, PAST), follow_symlinks=False)
    assert served() is None


def test_rcpcs_own_files_are_dependencies(wsr, tmp_path):
    (record,) = (tmp_path / "cache" / "rcpc" / "replay").iterdir()
    files = {f[0] for f in replay.read_record(str(record))[2]}
    package = Path(replay.__file__).parent.parent  # rcpc's package
    assert {str(package / "__init__.py"), str(package / "cli" / "__init__.py"), str(package / "core" / "syntax" / "grammar.lark")} <= files
    dirs = {d for d, _ in replay.read_record(str(record))[3]}
    assert str(package) in dirs and str(package / "core" / "syntax") in dirs


def test_rcpcs_files_are_recorded_as_the_process_first_read_them(wsr, monkeypatch, tmp_path):
    """The code a process runs is the code it imported: rcpc's package is read once a process.
    A file of it changed since is recorded as it was first read, so the record is a
    miss; recorded as it is now, it would replay the output of the old code."""
    package = tmp_path / "package"
    package.mkdir()
    (package / "__init__.py").write_text("")
    settle(package)
    monkeypatch.setattr(replay, "_PACKAGE", str(package))
    monkeypatch.setattr(replay, "_PACKAGE_TREE", [])
    assert run(["build"]) == 0 and served() == 0
    (package / "__init__.py").write_text("changed = True\n")
    settle(package)
    assert run(["build"]) == 0 and served() is None


def test_failures_and_no_cache_are_never_recorded(wsr, monkeypatch, tmp_path):
    (wsr / "recipes" / "r.rcp").write_text(RECIPE + "X = Y\n")
    settle(wsr)
    assert run(["build"]) == 1 and served() is None
    (wsr / "recipes" / "r.rcp").write_text(RECIPE)
    settle(wsr)
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    assert run(["build"]) == 0 and served() is None
    monkeypatch.delenv("RCPC_NO_CACHE")
    assert run(["build"]) == 0 and served() == 0
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    assert served() is None


@pytest.mark.parametrize("which", ["recipes/r.rcp", "recipes/lib/l.rcp", "rcp.toml",
                                   "rcpc-out/r/default/trainer.flags"])
def test_a_touched_or_rewritten_but_unchanged_file_still_replays(wsr, capsys, which):
    """The stat of a file changed but its bytes did not (touch, an editor saving unchanged
    text, a checkout): its digest is compared with the record's, and the run replays; the
    same size with other bytes is a miss."""
    capsys.readouterr()
    assert run(["build"]) == 0
    full = capsys.readouterr()
    path = wsr / which
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data)   # a new inode, mtime and ctime
    assert served() == 0 and capsys.readouterr() == full
    if data:  # rcp.toml is empty here
        changed = bytearray(data)
        changed[0] = ord("#") if changed[0] != ord("#") else ord(" ")
        path.write_bytes(bytes(changed))
        assert served() is None


@pytest.mark.parametrize("restore_mtime", [False, True], ids=["edited", "edited, mtime restored"])
def test_recently_modified_files_are_not_trusted(wsr, monkeypatch, tmp_path, restore_mtime):
    """git's racy-clean rule: a file written just before recording could change again in the
    same timestamp tick without changing its stat, so nothing is recorded. A restored mtime
    (cp -p, touch -d) does not hide the change: its ctime is recent."""
    monkeypatch.setattr(replay, "RACY_NS", 2_000_000_000)
    package = tmp_path / "package"   # rcpc itself may have been installed seconds ago
    (package / "__init__.py").parent.mkdir()
    (package / "__init__.py").write_text("")
    monkeypatch.setattr(replay, "_PACKAGE", str(package))
    monkeypatch.setattr(replay, "_PACKAGE_TREE", [])
    (wsr / "recipes" / "r.rcp").write_text(RECIPE.replace("default = 2", "default = 3"))
    if restore_mtime:
        settle(wsr)
    assert run(["build"]) == 0 and run(["build"]) == 0 and served() is None   # the recipe is fresh
    now = time.time_ns
    monkeypatch.setattr(replay.time, "time_ns", lambda: now() + 3_000_000_000)  # 3 s later
    assert run(["build"]) == 0 and served() == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_damaged_record_is_a_miss_never_a_crash(wsr, tmp_path, data):
    (record,) = (tmp_path / "cache" / "rcpc" / "replay").iterdir()
    good = record.read_bytes()
    kind = data.draw(st.sampled_from(["truncate", "flip", "garbage", "empty"]))
    if kind == "truncate":
        bad = good[:data.draw(st.integers(0, len(good) - 1))]
    elif kind == "flip":
        i = data.draw(st.integers(0, len(good) - 1))
        bad = good[:i] + bytes([good[i] ^ data.draw(st.integers(1, 255))]) + good[i + 1:]
    elif kind == "garbage":
        bad = data.draw(st.binary(max_size=200))
    else:
        bad = b""
    record.write_bytes(bad)
    try:
        assert served() is None
    finally:
        record.write_bytes(good)
    assert served() == 0


def _moved_bit(good: bytes, at: int, by: int) -> bytes | None:
    """``good`` with a set bit at ``at`` cleared and a clear bit ``by`` places higher set."""
    n = int.from_bytes(good, "little")
    if not (n >> at) & 1 or (n >> (at + by)) & 1 or at + by >= len(good) * 8:
        return None
    return (n - (1 << at) + (1 << (at + by))).to_bytes(len(good), "little")


@pytest.mark.parametrize("by", [61, 64, 127, 521])
def test_a_bit_moved_in_the_record_is_a_miss(wsr, tmp_path, by):
    """The reported damage: a checksum modulo 2**61 - 1 missed a bit moved by 61 places (the
    status line was replayed as 'bcpc: chgcked'); bits moved by other Mersenne exponents too."""
    (record,) = (tmp_path / "cache" / "rcpc" / "replay").iterdir()
    good = record.read_bytes()
    text = good.index(b"rcpc: 2 renders")
    damaged = [d for at in range(text * 8, text * 8 + 64) if (d := _moved_bit(good, at, by))]
    assert damaged
    try:
        for bad in damaged:
            record.write_bytes(bad)
            assert served() is None
    finally:
        record.write_bytes(good)
    assert served() == 0


def _relink(link: Path, target: str) -> None:
    link.unlink()
    link.symlink_to(target)
    os.utime(link, (PAST, PAST), follow_symlinks=False)


def _dir_link(root: Path):
    """The recipe directory is a symlink (recipes -> recA), retargeted to a copy with another
    default."""
    (root / "recipes").rename(root / "recA")
    shutil.copytree(root / "recA", root / "recB", symlinks=True)
    (root / "recB" / "r.rcp").write_text(RECIPE.replace("default = 2", "default = 7"))
    (root / "recipes").symlink_to("recA")
    return ["build"], lambda: _relink(root / "recipes", "recB")


def _load_link(root: Path):
    """A load goes through a directory symlink (shared -> sharedA)."""
    for name, lr in (("sharedA", "1e-6"), ("sharedB", "5e-3")):
        (root / name).mkdir()
        (root / name / "l.rcp").write_text(f"LR = {lr}\n")
    (root / "shared").symlink_to("sharedA")
    (root / "recipes" / "r.rcp").write_text(RECIPE.replace("//recipes/lib/l.rcp", "//shared/l.rcp"))
    return ["build"], lambda: _relink(root / "shared", "sharedB")


def _schema_link(root: Path):
    """--maxtext-schema names a symlink (m.json -> a.json); b.json lacks 'steps'. (A base.yml
    schema is never cached: which files lie beside it is part of it.)"""
    lr = '"learning_rate": {"base": 1.0, "type": {"type": "float"}}'
    (root / "a.json").write_text('{"fields": {"steps": {"base": 1, "type": {"type": "int"}}, %s}}\n' % lr)
    (root / "b.json").write_text('{"fields": {%s}}\n' % lr)
    (root / "m.json").symlink_to("a.json")
    return ["check", "--maxtext-schema", "m.json"], lambda: _relink(root / "m.json", "b.json")


@pytest.mark.parametrize("case", [_dir_link, _load_link, _schema_link], ids=lambda f: f.__name__[1:])
def test_a_retargeted_symlink_is_a_miss_for_replay_and_the_build_cache(wsr, case, capsys, monkeypatch):
    """The reported faults: replay (and, for a load through a linked directory, the build
    cache) kept serving what the old link target gave. Whatever is retargeted, a warm run must
    give what a run without any cache gives."""
    argv, retarget = case(wsr)
    settle(wsr)
    assert run(argv) == 0 and run(argv) == 0 and served(argv) == 0
    retarget()
    assert served(argv) is None

    def result():  # exit code, stderr (without the count of directories written), outputs
        capsys.readouterr()
        code = run(argv)
        err = re.sub(r" \(\d+ of \d+ variant director(y|ies) written\)", "", capsys.readouterr().err)
        return code, err, sorted((p.as_posix(), p.read_text()) for p in (wsr / "rcpc-out").rglob("*.flags"))

    warm = result()
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    assert warm == result()
    assert warm[0] == (1 if case is _schema_link else 0)


def test_outputs_publish_compared_are_recorded_as_if_read_back(wsr, monkeypatch, tmp_path):
    """A build that wrote nothing had every output compared byte for byte under the build
    lock (rcpc.build.output.publish): the recorder takes their stats and hashes the renders in
    memory instead of reading each file a second time, and records for them exactly what
    reading them back records."""
    (record,) = (tmp_path / "cache" / "rcpc" / "replay").iterdir()
    outputs = str(wsr / "rcpc-out")
    read: list = []
    real_read = replay.read_limited
    monkeypatch.setattr(replay, "read_limited", lambda p, n: read.append(str(p)) or real_read(p, n))

    def full_run(comment: str) -> tuple:
        """A build that is not replayed (the recipe changed, not its renders), recorded."""
        recipe = wsr / "recipes" / "r.rcp"
        recipe.write_text(recipe.read_text() + f"# {comment}\n")
        settle(wsr / "recipes")  # the outputs' stats stay as they are
        before = record.stat().st_mtime_ns
        assert run(["build"]) == 0
        assert record.stat().st_mtime_ns != before  # recorded again
        _, _, files, listings, *_ = replay.read_record(str(record))
        return ([f for f in files if f[0].startswith(outputs)], [x for x in listings if x[0].startswith(outputs)])

    compared = full_run("one")
    assert not [p for p in read if p.startswith(outputs)] and compared[0] and compared[1]
    note = replay.Recorder.note_outputs
    monkeypatch.setattr(replay.Recorder, "note_outputs", lambda self, d, renders, compared=False: note(self, d, renders))
    assert full_run("two") == compared
    assert [p for p in read if p.startswith(outputs)]  # read back this time


@given(texts=st.lists(st.text(max_size=40), min_size=1, max_size=4))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_compared_output_is_noted_as_a_read_one(tmp_path_factory, texts):
    """Over any render texts: noting outputs already compared gives the stats, digests and
    listing that reading them gives; a file that differs from its render, read back, is
    not recorded (the run is not replayable)."""
    d = tmp_path_factory.mktemp("out")
    renders = [(f"r{i}.yaml", t) for i, t in enumerate(texts)]
    for name, text in renders:
        (d / name).write_bytes(text.encode("utf-8"))
    read, compared, stale = (replay.Recorder(["build"], False) for _ in range(3))
    for recorder in (read, compared, stale):  # as if started later: the files are not racy
        recorder._start += 2 * replay.RACY_NS
    read.note_outputs(str(d), renders)
    compared.note_outputs(str(d), renders, compared={n: replay.identity(str(d / n)) for n, _ in renders})
    assert read._ok and compared._ok
    assert (read._files, read._listings) == (compared._files, compared._listings)
    stale.note_outputs(str(d), [(name, text + "x") for name, text in renders])
    assert not stale._ok


def test_a_run_that_cannot_be_recorded_reads_and_stats_nothing(wsr, monkeypatch):
    """RCPC_NO_CACHE (no record will be written), or a build that wrote output (discarded):
    the recorder neither stats nor reads what a record would hold."""
    touched: list = []
    monkeypatch.setattr(replay, "_stat", lambda p: touched.append(p) or os.stat(p))
    monkeypatch.setattr(replay, "_PACKAGE_TREE", [])  # rcpc's files not read yet in this process
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    assert run(["build"]) == 0
    assert touched == []
    monkeypatch.delenv("RCPC_NO_CACHE")
    (wsr / "recipes" / "r.rcp").write_text(RECIPE.replace("default = 2", "default = 5"))
    settle(wsr)
    outputs = str(wsr / "rcpc-out")
    assert run(["build"]) == 0
    assert not [p for p in touched if p.startswith(outputs)]


def test_a_build_into_a_new_output_directory_notes_nothing_for_replay(wsr, monkeypatch):
    """A build into an output directory that does not exist writes it, so it is not recorded:
    the recorder lists, stats and reads nothing for it (a first build after a clone: ~0.5 ms);
    the next build into it, with nothing to write, is recorded and the one after replayed."""
    listed: list = []
    real_listing, real_stat, real_tree = replay.listing, replay._stat, replay.package_tree
    monkeypatch.setattr(replay, "listing", lambda d: listed.append(d) or real_listing(d))
    monkeypatch.setattr(replay, "_stat", lambda p: listed.append(p) or real_stat(p))
    monkeypatch.setattr(replay, "package_tree", lambda: listed.append("rcpc") or real_tree())
    argv = ["build", "-o", str(wsr.parent / "new-out")]
    assert run(argv) == 0
    assert listed == []
    settle(wsr.parent / "new-out")
    assert run(argv) == 0   # nothing to write: recorded
    assert "rcpc" in listed and served(argv) == 0


def test_a_record_lists_each_directory_once(wsr, monkeypatch):
    """Every directory a record holds is listed once a run: the ``sys.path`` directory of
    rcpc's distributions (site-packages, ~260 entries) was listed once for each of them, a
    library directory under a recipe directory twice."""
    listed: list = []
    real, noted = replay.listing, replay.Recorder.note_workspace

    def note_workspace(self, *args):
        monkeypatch.setattr(replay, "listing", lambda d: listed.append(d) or real(d))
        try:
            return noted(self, *args)
        finally:
            monkeypatch.setattr(replay, "listing", real)

    monkeypatch.setattr(replay.Recorder, "note_workspace", note_workspace)
    monkeypatch.setattr(replay, "_PACKAGE_TREE", [])
    (wsr / "rcp.toml").write_text((wsr / "rcp.toml").read_text())  # a miss: the build runs and records
    settle(wsr)
    assert run(["build"]) == 0 and served() == 0
    assert str(wsr / "recipes" / "lib") in listed and len(listed) == len(set(listed))
