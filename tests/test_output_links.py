"""A render built again with the bytes and mode its current output file has is hard-linked
into the new generation instead of written (:func:`rcpc.build.output._stage`). After every build
each file holds exactly its render; a variant whose renders are all unchanged is kept as it
is (its files, their modes); in any other, each file has the mode a fresh write gives it
and is the previous generation's file (same inode) exactly when its bytes and mode were
unchanged."""

from __future__ import annotations

import os
import stat

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import area_leftovers, output_tree
from rcpc.build.output import _link_same, publish

RENDERS = ("trainer.yaml", "trainer.flags", "launch.sh")
TEXTS = st.sampled_from(["", "a\n", "b\n", "a\nb\n", "é\n"])
BUILD = st.tuples(st.fixed_dictionaries({v: st.tuples(*[TEXTS] * len(RENDERS)) for v in ("default", "tuned")}),
                  st.sampled_from([0o022, 0o077, 0o002]))


def _mode(name: str, umask: int) -> int:
    return (0o777 if name.endswith(".sh") else 0o666) & ~umask


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(BUILD, min_size=1, max_size=5))
@example([({"default": ("a\n", "a\n", "a\n"), "tuned": ("a\n", "a\n", "a\n")}, 0o022),
          ({"default": ("a\n", "b\n", "a\n"), "tuned": ("a\n", "a\n", "a\n")}, 0o022),   # one flag edited
          ({"default": ("a\n", "b\n", "a\n"), "tuned": ("a\n", "b\n", "a\n")}, 0o077)])  # same bytes, new umask
def test_unchanged_renders_are_linked_and_every_file_is_as_written(tmp_path_factory, builds):
    out = tmp_path_factory.mktemp("ws") / "out"
    before: dict = {}  # path under out -> (text, mode, inode) after the previous build
    saved = os.umask(0o022)
    try:
        for variants, umask in builds:
            os.umask(umask)
            publish(out, [("r", v, list(zip(RENDERS, texts))) for v, texts in variants.items()], "out", whole={"r"})
            os.umask(0o022)
            want = {f"r/{v}/{name}": text.encode() for v, texts in variants.items()
                    for name, text in zip(RENDERS, texts)}
            assert output_tree(out) == want
            assert not area_leftovers(out)
            now = {}
            for path, data in want.items():
                st_ = os.stat(out / path)
                now[path] = (data, stat.S_IMODE(st_.st_mode), st_.st_ino)
            for v in variants:
                mine = [p for p in want if p.startswith(f"r/{v}/")]
                if all(p in before and before[p][0] == now[p][0] for p in mine):
                    assert all(now[p] == before[p] for p in mine)  # kept as it was
                    continue
                for p in mine:
                    assert now[p][1] == _mode(p, umask)
                    linked = p in before and before[p][2] == now[p][2]
                    assert linked == (p in before and before[p][:2] == now[p][:2]), p
            before = now
    finally:
        os.umask(saved)


@given(kind=st.sampled_from(["fifo", "other bytes", "other mode", "symlink", "missing", "directory"]))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_only_a_regular_file_with_the_bytes_and_mode_is_linked(tmp_path_factory, kind):
    """Anything else where the current render was (put there between the comparison and the
    link) is never read in a blocking way nor linked: the render is written instead."""
    d = tmp_path_factory.mktemp("d")
    src, dst = d / "src", d / "dst"
    (d / "real").write_bytes(b"x\n")
    os.chmod(d / "real", 0o644)
    if kind == "fifo":
        os.mkfifo(src, 0o644)
    elif kind == "symlink":
        os.symlink(d / "real", src)
    elif kind == "directory":
        src.mkdir()
    elif kind != "missing":
        src.write_bytes(b"y\n" if kind == "other bytes" else b"x\n")
        os.chmod(src, 0o600 if kind == "other mode" else 0o644)
    assert not _link_same(str(src), str(dst), b"x\n", 0o644)
    assert not dst.exists()
    assert _link_same(str(d / "real"), str(dst), b"x\n", 0o644) and os.path.samefile(d / "real", dst)


@given(errno_=st.sampled_from(["EPERM", "EMLINK", "EXDEV", "ENOTSUP"]))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_where_no_hard_link_can_be_made_every_file_is_written(tmp_path_factory, monkeypatch, errno_):
    """A file system that refuses hard links (os.link fails with one of these: FAT, some
    network mounts) gets every render written, or copied from the current generation: the
    same tree as with links."""
    import errno

    def refuse(*args, **kwargs):
        raise OSError(getattr(errno, errno_), os.strerror(getattr(errno, errno_)))

    out = tmp_path_factory.mktemp("ws") / "out"
    builds = [{"default": ("a\n", "b\n", "a\n"), "tuned": ("a\n", "b\n", "a\n")},
              {"default": ("a\n", "c\n", "a\n"), "tuned": ("a\n", "b\n", "a\n")}]
    with monkeypatch.context() as m:
        m.setattr(os, "link", refuse)
        for variants in builds:
            publish(out, [("r", v, list(zip(RENDERS, texts))) for v, texts in variants.items()], "out", whole={"r"})
            assert output_tree(out) == {f"r/{v}/{name}": text.encode() for v, texts in variants.items()
                                        for name, text in zip(RENDERS, texts)}
            assert not area_leftovers(out)
