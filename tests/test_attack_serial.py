"""Attacks on the serial-path changes (Comparison while workers compile, os._exit at the
end of a command, directories resolved once, guided -j chunks, the recorder's compared
outputs): each test states one kind of wrong outcome that must not happen."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from rcpc import output, replay
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
