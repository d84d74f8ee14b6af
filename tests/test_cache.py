"""The build cache: a warm build reuses results, and any change to what a render depends on
triggers a compile (issue "Performance": cache correctness)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

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


def test_a_package_that_cannot_be_read_whole_never_gets_the_same_fingerprint(tmp_path, monkeypatch):
    """A directory of the package that cannot be listed: its changes cannot be seen, so its
    fingerprint differs every time (no cache entry is reused), rather than one of what could
    be read (os.walk passed over such a directory) or an error."""
    import os

    from rcpc.core import usercache

    (tmp_path / "core").mkdir()
    (tmp_path / "__init__.py").write_text("")
    real = os.scandir

    def scandir(path):
        if os.path.basename(path) == "core":
            raise PermissionError(13, "Permission denied", path)
        return real(path)
    monkeypatch.setattr(os, "scandir", scandir)
    assert usercache.code_fingerprint(str(tmp_path)) != usercache.code_fingerprint(str(tmp_path))


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
        deps, entry = rcpc.build.cache.decode(storefiles.payload("build", key, data))
        assert entry["contracts"] == []
        storefiles.rewrite(tmp_path / "cache", key, store.entry("build", key, rcpc.build.cache.pack(
            deps, {**entry, "contracts": contracts})))
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


def _walked(package: str, *more: str) -> tuple:
    """The code fingerprint and the replay record's package tree as ``os.walk`` reads them
    (what :func:`rcpc.core.usercache.package_files` replaced: two walks of rcpc's package)."""
    import hashlib
    import os

    from rcpc.build import replay

    parts, listings, files = list(more), {}, {}
    for d, dirs, names in os.walk(package):
        dirs[:] = sorted(n for n in dirs if n != "__pycache__")
        listings[d] = replay.listing(d)
        for name in sorted(names):
            if name.endswith((".py", ".lark")):
                path = os.path.join(d, name)
                st = os.stat(path)
                parts.append(f"{os.path.relpath(path, package)}:{st.st_size}:{st.st_mtime_ns}")
                files[path] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=32).hexdigest(), listings, files


_TREE_NAMES = st.sampled_from(["a.py", "b.lark", "c.txt", "__init__.py", "__pycache__", "d", "e", "z.py"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(st.tuples(st.lists(_TREE_NAMES, min_size=1, max_size=3),
                                  st.sampled_from(["file", "dir", "link-file", "link-dir", "dangling-dir"])),
                        max_size=12))
def test_one_walk_gives_the_fingerprint_and_the_package_tree_os_walk_gives(tmp_path_factory, entries):
    """One walk of a package (:func:`rcpc.core.usercache.package_files`) gives the code
    fingerprint and the replay record's listings and file stats exactly as ``os.walk`` gave
    them, whatever the tree holds (nested directories, ``__pycache__``, symlinks to files and
    directories, which are listed but not entered)."""
    import os

    from rcpc.core import usercache

    root = tmp_path_factory.mktemp("package")
    for parts, kind in entries:
        path = root.joinpath(*parts)
        if any(p.exists() and not p.is_dir() or p.is_symlink() for p in [*path.parents][:len(parts) - 1]):
            continue
        if path.exists() or path.is_symlink():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "file":
            path.write_text(str(parts))
        elif kind == "dir":
            path.mkdir()
        elif kind == "link-file":
            (root / "target.py").write_text("t")
            os.symlink(root / "target.py", path)
        elif kind == "link-dir":
            os.symlink(path.parent, path) if path.parent != root else os.symlink(root, path)
        else:
            os.symlink(root / "missing", path) if not path.name.endswith((".py", ".lark")) else None
    fingerprint, listings, files = _walked(str(root), "more")
    got_listings, got_files = usercache.package_files(str(root))
    assert usercache._fingerprint(str(root), "more") == fingerprint
    assert got_listings == listings
    assert {p: (s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino) for p, _, s in got_files} == files


def test_rcpcs_package_is_walked_once_for_the_fingerprint_and_the_replay_record(monkeypatch):
    """rcpc's own package is read once a process, by one walk that the code fingerprint and
    a replay record share (each walked it apart: ~1.1 ms of an edit build)."""
    import os

    from rcpc.build import replay
    from rcpc.core import usercache

    from rcpc.core.distributions import fingerprint as distributions

    distributions()  # found once a process (it lists sys.path's directories)
    opened = []
    real = os.scandir
    monkeypatch.setattr(usercache, "_KNOWN", {})
    monkeypatch.setattr(replay, "_PACKAGE_TREE", [])
    monkeypatch.setattr(usercache.os, "scandir", lambda p=".": opened.append(p) or real(p))
    listings, files = replay.package_tree()
    fingerprint = usercache.code_fingerprint()
    monkeypatch.setattr(usercache.os, "scandir", real)
    assert (fingerprint, listings, files) == _walked(usercache._OWN, distributions())
    assert sorted(opened) == sorted(listings) and len(opened) == len(set(opened))


_NAMES = st.sampled_from(["a.yaml", "b.flags", "c.sh", "trainer.yaml", "x-1.flags"])


@settings(max_examples=80, deadline=None)
@given(builds=st.dictionaries(st.sampled_from(["default", "tuned", "six", "v.2"]),
                              st.dictionaries(_NAMES, st.text("ab\n\"\\é\x00\ud800\U0001f600", max_size=6), max_size=4),
                              max_size=4),
       contracts=st.booleans())
def test_an_entry_keeps_each_distinct_text_once_and_reads_back_as_stored(builds, contracts):
    """An entry's payload (:func:`rcpc.build.cache.encode`) reads back as the builds, warnings
    and contracts stored, its dependencies from its first line alone, and holds each distinct
    render text once (variants share most renders: the RL recipe's entry was 2.3x its texts)."""
    import json

    from rcpc.build import cache

    made = [(variant, list(renders.items())) for variant, renders in builds.items()]
    held = [v for v, _ in made][:1] if contracts else []
    deps = {"/ws/recipes/r.rcp": "0" * 64}
    payload = cache.encode(deps, made, [], held)
    head, _, rest = payload.partition(b"\n")
    assert json.loads(head) == deps == cache._validate_deps(payload, "/ws/recipes/r.rcp")
    assert cache._validate(cache.decode(payload)[1]) == (made, [], held)
    texts = cache.decode(payload)[1]["texts"]
    assert sorted(texts) == sorted({t for _, renders in made for _, t in renders})
    assert payload.endswith(b"\n" + b"".join(t.encode("utf-8", "surrogatepass") for t in texts))  # unescaped


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.text("aé\n\U0001f600", max_size=5), max_size=4),
       sizes=st.lists(st.integers(-2, 12), max_size=5))
@example(texts=["é"], sizes=[1, 1])  # a size cutting a character in two
def test_an_entry_whose_text_sizes_do_not_fit_is_refused(texts, sizes):
    """An entry's text sizes (rcpc.build.cache.pack) that do not cut its bytes into UTF-8 texts
    exactly are refused (ValueError: a miss), never read as other texts."""
    import json

    from rcpc.build import cache

    payload = cache.pack({}, {"texts": texts, "builds": []})
    head, _, body = payload.partition(b"\n")
    _, _, data = body.partition(b"\n")
    forged = head + b"\n" + json.dumps({"texts": sizes, "builds": []}).encode() + b"\n" + data
    try:
        got = cache.decode(forged)[1]["texts"]
    except ValueError:
        return
    assert b"".join(t.encode("utf-8", "surrogatepass") for t in got) == data and \
        [len(t.encode("utf-8", "surrogatepass")) for t in got] == sizes


def test_a_lookup_after_an_edit_decodes_only_the_dependencies(wsc, monkeypatch):
    """After an edit the entry's recorded hashes no longer match: the renders, most of the
    entry, are not decoded (the RL recipe's 279 kB of JSON: ~0.6 ms of an edit build)."""
    root, calls = wsc
    assert build() == 0
    decoded = []
    real = rcpc.build.cache.decode
    monkeypatch.setattr(rcpc.build.cache, "decode", lambda payload: decoded.append(1) or real(payload))
    (root / "recipes" / "r.rcp").write_text(RECIPE.replace("default = 2", "default = 3"))
    assert build() == 0 and len(calls) == 2 and decoded == []
    assert build() == 0 and len(calls) == 2 and decoded == [1]
