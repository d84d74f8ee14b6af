"""Attacks on the serial-path changes (Comparison while workers compile, os._exit at the
end of a command, directories resolved once, guided -j chunks, the recorder's compared
outputs): each test states one kind of wrong outcome that must not happen."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from rcpc.build import output, replay
from rcpc.__main__ import run

PAST = time.time() - 3600


def settle(root: Path) -> None:
    """Date every file under ``root`` an hour back (mtime; the racy rule is off below)."""
    for p in root.rglob("*"):
        os.utime(p, (PAST, PAST), follow_symlinks=False)


@pytest.fixture
def recorded(cached_ws, monkeypatch):
    """A workspace built once and settled (the next build that writes nothing is recorded)."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(replay, "RACY_NS", 0)
    assert run(["build"]) == 0
    settle(cached_ws)
    return cached_ws


def _user_copy(ws: Path, texts: dict) -> Path:
    """A directory of the user's shaped as the output of recipe ``r`` (same names), its
    files holding ``texts`` {variant/render: text}, made before the run starts."""
    mine = ws / "mine"
    for rel, text in texts.items():
        (mine / rel).parent.mkdir(parents=True, exist_ok=True)
        (mine / rel).write_text(text)
    settle(mine)
    return mine


@pytest.mark.parametrize("swap", ["first-part link", "current link"])
def test_an_output_replaced_after_publish_compared_it_is_not_recorded_as_compared(recorded, monkeypatch, swap):
    """publish found every output unchanged (written 0), then, before the recorder took
    their stats, what ``rcpc-out/r/<variant>/<render>`` resolves to became another file of
    old stats and other bytes (a link swapped). The recorder must not record it as holding
    the render it never read: a later replay would say the output is up to date while a
    build says otherwise (before the recorder trusted publish, it read the file back)."""
    ws = recorded
    out = ws / "rcpc-out"
    renders = {f"{v}/trainer.flags": (out / "r" / v / "trainer.flags").read_text() for v in ("default", "more")}
    mine = _user_copy(ws, {rel: "--user_edit=1\n" + text for rel, text in renders.items()})
    real_publish = output.publish

    def publish_then_swap(*a, **k):
        written = real_publish(*a, **k)
        if swap == "first-part link":
            os.unlink(out / "r")
            os.symlink(mine, out / "r")
        else:  # current -> a generation of the user's, holding r
            fake = ws / "fakegen"
            fake.mkdir()
            os.symlink(mine, fake / "r")
            os.symlink(fake, out / ".rcpc" / "current.new")
            os.rename(out / ".rcpc" / "current.new", out / ".rcpc" / "current")
        return written

    monkeypatch.setattr(output, "publish", publish_then_swap)
    recipe = ws / "recipes" / "r.rcp"
    recipe.write_text(recipe.read_text() + "# a comment: the renders do not change\n")
    settle(ws / "recipes")
    assert run(["build"]) == 0
    monkeypatch.setattr(output, "publish", real_publish)
    for rel, text in renders.items():
        assert (out / "r" / rel).read_text() != text  # the output no longer holds the renders
    assert replay.serve(["build"], replay.stderr_color()) is None  # so nothing is replayed


SCRIPT = Path(__file__).resolve().parents[1] / "compiler" / "bin" / "rcpc"
FORMS = {"script": [sys.executable, str(SCRIPT)], "module": [sys.executable, "-m", "rcpc"]}
# (argv, the standard descriptors closed, the exit status): what the command does with a
# closed stream is what it does with one that fails (stdout: an error, exit 1; stdin and
# stderr: nothing read, nothing shown), and never a traceback.
CLOSED_CASES = [
    (["render", "recipes/r.rcp"], (1,), 1),
    (["render", "recipes/r.rcp"], (0, 2), 0),
    (["build"], (1,), 0),
    (["check"], (0, 1, 2), 0),
    (["render", "recipes/nope.rcp"], (1,), 2),
    (["build"], (2,), 0),
    (["diff", "recipes/r.rcp", "--variant", "more", "--against", "default"], (1,), 1),  # isatty: a traceback
    (["lint", "--diagnostics", "sarif"], (1,), 1),  # the SARIF log at the end: exit 120, nothing said
    (["--version"], (1,), 1),  # argparse's output, flushed at exit: 120, an "Exception ignored" traceback
    (["render", "--help"], (1,), 1),
]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("argv,closed,status", CLOSED_CASES)
def test_a_closed_standard_stream_is_no_traceback(cached_ws, form, argv, closed, status):
    """``rcpc render r >&-`` (stdout closed by the caller): Python makes ``sys.stdout``
    None and rcpc crashed with an AttributeError traceback in every command (``build`` and
    ``check`` too, at their closing flush)."""
    import subprocess

    def close():
        for fd in closed:
            os.close(fd)

    env = {**os.environ, "PYTHONFAULTHANDLER": ""}
    r = subprocess.run([*FORMS[form], *argv], cwd=cached_ws, env=env, preexec_fn=close, timeout=120,
                       **({} if 1 in closed else {"stdout": subprocess.PIPE}),
                       **({} if 2 in closed else {"stderr": subprocess.PIPE}))
    err = r.stderr or b""
    assert r.returncode == status and b"Traceback" not in err, err.decode()
    if 1 in closed and status == 1:
        assert err.count(b"rcpc: error:") == 1, err.decode()  # said once (it was twice: the closing flush)


DYING_WORKER = """
import os, sys
from rcpc.build import parallel
real = parallel._work
def work(path):
    if path.name == "r7.rcp":
        os._exit(9)   # as a worker killed (OOM killer, kill -9) in the middle of a recipe
    return real(path)
parallel._work = work
parallel.MIN_PARALLEL_BYTES = 0
from rcpc.__main__ import exit_now, run
exit_now(run(["build", "-j", "2"]))
"""


def test_a_worker_dying_mid_recipe_ends_the_build_with_an_error(tmp_path):
    """A -j worker that dies while it compiles (killed, out of memory) must end the build
    with an error and the previous output unchanged, never a build that waits forever."""
    import subprocess

    (tmp_path / "rcp.toml").write_text("")
    (tmp_path / "recipes").mkdir()
    for k in range(12):
        (tmp_path / "recipes" / f"r{k}.rcp").write_text(
            f'flag_file(name = "t", flags = maxtext_flags({{"steps": {k}}}))\nvariant("default")\n')
    env = {**os.environ, "RCPC_NO_CACHE": "1"}
    try:  # a guard against the hang, not a timing: the build takes well under a second
        r = subprocess.run([sys.executable, "-c", DYING_WORKER], cwd=tmp_path, env=env, capture_output=True,
                           timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("the build hung after a worker died")
    assert r.returncode == 1 and b"Traceback" not in r.stderr, r.stderr.decode()
    assert b"recipes/r7.rcp: error[E0952]" in r.stderr and b"(exit status 9)" in r.stderr
    assert not (tmp_path / "rcpc-out").exists()
