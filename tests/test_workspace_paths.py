"""Finding recipes and libraries resolves each file's directory once (issue 20: resolving
every file's whole path was a third of the serial start of a 100-recipe build): the fast
path must resolve exactly as :meth:`pathlib.Path.resolve` does, note the same followed
symlinks, and give the same E0906/E0907 diagnostics, over any tree of files, directories
and symlinks (inside and outside the workspace, dangling, looping)."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.core.diagnostics import CompileError
from rcpc.domain.workspace import RECIPE_SUFFIX, Workspace, _within

NAMES = st.sampled_from(["a", "b", "lib", "x.rcp", "y.rcp", "..x.rcp"])
ENTRY = st.tuples(st.lists(NAMES, min_size=1, max_size=3),
                  st.sampled_from(["file", "dir", "link-in", "link-out", "link-dir", "link-up", "dangling", "loop"]),
                  st.lists(NAMES, min_size=0, max_size=2))


def _make(root: Path, outside: Path, entries: list) -> None:
    """A tree under ``root/recipes`` from ``entries`` (parts, kind, link target parts)."""
    for parts, kind, target in entries:
        p = root / "recipes" / Path(*parts)
        if os.path.lexists(p) or any(os.path.lexists(q) and not q.is_dir() for q in p.parents):
            continue
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            if kind == "file":
                p.write_text("X = 1\n")
            elif kind == "dir":
                p.mkdir()
            elif kind == "link-in":
                p.symlink_to(root / "recipes" / Path(*target) if target else root / "recipes")
            elif kind == "link-out":
                p.symlink_to(outside / "secret.rcp")
            elif kind == "link-dir":
                p.symlink_to(outside)
            elif kind == "link-up":
                p.symlink_to(Path("..", *target))
            elif kind == "dangling":
                p.symlink_to(root / "nowhere" / "n.rcp")
            else:
                p.symlink_to(p.name)  # itself
        except OSError:  # a parent that is a dangling symlink or a file: not made
            continue


def _outcome(f):
    try:
        return ("ok", f())
    except CompileError as exc:
        return ("error", [(d.code, d.message, d.span) for d in exc.diagnostics])


@given(entries=st.lists(ENTRY, max_size=12))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_directory_resolved_once_resolves_every_file_as_resolve_does(tmp_path_factory, entries):
    base = tmp_path_factory.mktemp("tree")
    root, outside = base / "ws", base / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.rcp").write_text("S = 1\n")
    (root / "recipes").mkdir()
    _make(root, outside, entries)
    ws = Workspace(root, (root / "recipes",), (root / "recipes" / "lib",), root / "out", root / "golden")
    slow = Workspace(root, ws.recipe_dirs, ws.library_dirs, ws.output_dir, ws.golden_dir)
    parents: dict = {}
    try:
        found = sorted((root / "recipes").rglob("*" + RECIPE_SUFFIX))
    except OSError:  # a symlink loop met by the walk itself
        return
    for p in found:
        assert _outcome(lambda: ws.inside(p, parents)) == _outcome(lambda: slow.inside(p))
    assert ws.links == slow.links


PARTS = st.lists(st.sampled_from(["a", "b", "ab", "a b", "é"]), max_size=4)


@given(path=PARTS, directory=PARTS)
def test_within_is_being_the_directory_or_below_it(path, directory):
    p, d = PurePosixPath("/", *path), PurePosixPath("/", *directory)
    assert _within(p, d) == (p == d or d in p.parents)


def test_within_the_root_directory():
    assert _within(PurePosixPath("/a"), PurePosixPath("/")) and _within(PurePosixPath("/"), PurePosixPath("/"))
    assert not _within(PurePosixPath("/ab"), PurePosixPath("/a"))  # a prefix of the name is not a parent


KEYS = ("recipe_dirs", "library_dirs", "kube_schemas", "maxtext_schema")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(linked=st.sets(st.sampled_from(KEYS)))
@example(linked={"kube_schemas"})   # a CRD named through a symlink turned --strict-crd on
def test_rcp_toml_read_through_symlinks_sets_each_field_it_names(tmp_path_factory, linked):
    """A Workspace read from rcp.toml holds what each key names, and nothing else: a path
    through a symlink is recorded in ``links`` (the build cache checks it still holds) and
    leaves every other field, ``strict_crd`` among them, as it was."""
    root = tmp_path_factory.mktemp("ws")
    real = root / "real"
    for d in ("recipes", "lib"):
        (real / d).mkdir(parents=True)
    (real / "crd.json").write_text("{}")
    (real / "base.json").write_text("{}")
    (root / "via").symlink_to(real)
    spelled = {key: ("via/" if key in linked else "real/") + name for key, name in
               zip(KEYS, ("recipes", "lib", "crd.json", "base.json"))}
    (root / "rcp.toml").write_text(
        f'recipe_dirs = ["{spelled["recipe_dirs"]}"]\nlibrary_dirs = ["{spelled["library_dirs"]}"]\n'
        f'kube_schemas = ["{spelled["kube_schemas"]}"]\nmaxtext_schema = "{spelled["maxtext_schema"]}"\n')
    ws = Workspace.find(root)
    assert ws.strict_crd is False and ws.jobset_feature_gates == frozenset()
    assert ws.recipe_dirs == (real / "recipes",) and ws.library_dirs == (real / "lib",)
    assert ws.kube_schemas == (real / "crd.json",) and ws.maxtext_schema == real / "base.json"
    assert {Path(p).relative_to(root).parts[0] for p in ws.links} == ({"via"} if linked else set())
