"""Never lose a user's file (issue "Never lose a user's file", kinds 1-4, 7, 8 and 10): names
that become paths are portable components, recipes and libraries are read from inside the
workspace only, no diagnostic quotes more than an excerpt of a line, rcpc replaces or removes
only what it wrote (its manifest says what) and refuses to write over anything else, and
``fmt`` keeps every byte of a string and the file's mode."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from conftest import area_leftovers, output_tree, rcp_string
from rcpc.core import names
from rcpc.core.diagnostics import visible
from rcpc.cli import main

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# characters that make names dangerous as paths, and some that are harmless
DANGEROUS = [".", "/", "\\", "\0", "\n", "\x7f", "\u2028", ":", "*", " ", "a", "B", "b", "-", "_", "\u00e9",
             "e\u0301", "\udcff", "C", "O", "N", "1"]


def words(alphabet, **kw):
    """Strings made of pieces of ``alphabet`` (a piece may be more than one character)."""
    return st.lists(st.sampled_from(alphabet), **kw).map("".join)


def everything(root: Path, skip: str | None = None) -> dict:
    """Every entry under ``root`` (not following symlinks): {path: file bytes, link target
    or None for a directory}, leaving out ``root/skip``."""
    found = {}
    for d, dirs, files in os.walk(root):
        if skip is not None and Path(d) == root:
            dirs[:] = [x for x in dirs if x != skip]
            files = [f for f in files if f != skip]
        for n in dirs + files:
            p = Path(d) / n
            rel = p.relative_to(root).as_posix()
            found[rel] = os.readlink(p) if p.is_symlink() else None if p.is_dir() else p.read_bytes()
    return found


def run(root: Path, *argv: str) -> tuple[int, str]:
    """``rcpc ARGV`` in-process in ``root``: (exit code, stderr)."""
    err = io.StringIO()
    with contextlib.chdir(root), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code
    return code, err.getvalue()


def workspace(root: Path, files: dict) -> Path:
    shutil.rmtree(root, ignore_errors=True)
    for path, text in {"rcp.toml": "", **files}.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


@pytest.fixture(autouse=True)
def no_cache(monkeypatch):
    monkeypatch.setenv("RCPC_NO_CACHE", "1")


# 1. names that are paths ---------------------------------------------------------------------
@given(st.one_of(words(DANGEROUS, max_size=6), st.text(max_size=8)))
@example("..")
@example(".")
@example("")
@example("a/b")
@example("a\\b")
@example("a\0b")
@example("con.yaml")
@example("x.")
@example(".hidden")
@example("\udcff")
def test_a_name_accepted_is_one_portable_component(tmp_path_factory, name):
    if names.problem(name) is not None:
        return
    d = tmp_path_factory.mktemp("one")
    with open(os.path.join(d, name), "w"):
        pass
    assert os.listdir(d) == [name]   # exactly one entry, in that directory, with that name
    assert os.path.normpath(os.path.join("d", name)) == "d/" + name
    assert not name.startswith(".") and name[-1] not in ". " and "\\" not in name
    assert not any(unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") for c in name)
    assert names.fold(names.fold(name)) == names.fold(name) and len(name.encode()) <= 255


SAFE_FOR_FILES = [c for c in DANGEROUS if c not in "/\0"]
COMPONENT = words(SAFE_FOR_FILES, min_size=1, max_size=4).filter(
    lambda c: c not in (".", "..") and len(c.encode("utf-8", "surrogateescape")) < 200)


@SETTINGS
@given(dirs=st.lists(COMPONENT, max_size=2), stem=words(SAFE_FOR_FILES, max_size=4))
@example(dirs=[], stem="..")
@example(dirs=[], stem=".")
@example(dirs=["sub"], stem="..")
def test_no_recipe_file_name_makes_a_build_write_outside_its_place(tmp_path_factory, dirs, stem):
    """The reported fault: ``recipes/...rcp`` is named ``..``, and with ``variant("victim")``
    a build replaced ``<workspace>/victim/``. Whatever a recipe file is called, a build
    writes ``out/<its name>/victim/m.yaml`` or fails with a located error, and nothing else
    changes."""
    root = workspace(tmp_path_factory.mktemp("ws"), {"victim/precious.txt": "mine\n", "out/victim/mine.txt": "mine\n"})
    recipe = root.joinpath("recipes", *dirs, stem + ".rcp")
    recipe.parent.mkdir(parents=True, exist_ok=True)
    recipe.write_text('manifest(name = "m", apiVersion = "v1", kind = "K")\nvariant("victim")\n')
    before = everything(root)
    code, err = run(root, "build", "-o", "out")
    name = recipe.relative_to(root / "recipes").as_posix()[:-4]
    if code == 0:
        assert all(names.problem(part) is None for part in name.split("/"))
        assert everything(root, skip="out") == {k: v for k, v in before.items() if not k.startswith("out/") and k != "out"}
        assert output_tree(root / "out") == {f"{name}/victim/m.yaml": b"apiVersion: v1\nkind: K\nmetadata:\n  name: m\n",
                                             "victim/mine.txt": b"mine\n"}
    else:
        assert code == 1 and "Traceback" not in err and everything(root) == before
        shown = visible(Path(os.path.relpath(recipe, root)).as_posix())  # its control characters escaped
        assert re.search(r"error\[E09(05|06|10)\]", err) and (shown in err or "E0910" in err), err


def variant_recipe(name: str) -> str:
    return f'flag_file(name = "f", flags = maxtext_flags({{"steps": 1}}))\nvariant({rcp_string(name)})\n'


@SETTINGS
@given(st.one_of(words(DANGEROUS, max_size=5), st.text(max_size=6)))
@example("..")
@example("a/b")
@example("Custom")
@example("aux")
@example("x.")
@example("\udcff")   # E0002 at the escape since surrogate escapes are E0002 (the merged main failed here)
@example(".\udcff")
def test_no_variant_or_render_name_leaves_its_place(tmp_path_factory, name):
    """A variant name is a directory and a render name a file: each is one portable
    component (else a located E0604 / E0701), and a build writes only where it names. A lone
    surrogate (how Python spells a file name's byte that is not UTF-8) has no spelling in the
    language: E0002 at its escape, whatever else the name holds."""
    surrogate = any("\ud800" <= c <= "\udfff" for c in name)
    root = workspace(tmp_path_factory.mktemp("ws"), {"recipes/r.rcp": variant_recipe(name)})
    code, err = run(root, "build", "-o", "out")
    if code == 0:
        assert output_tree(root / "out") == {f"r/{name}/f.flags": b"steps=1\n"}
    else:
        where = r"recipes/r\.rcp:2:\d+: error\[E0002\]" if surrogate else r"recipes/r\.rcp:2:9: error\[E0604\]"
        assert re.search(where, err) and "Traceback" not in err, err
        assert not (root / "out").exists()
    recipe = f'flag_file(name = {rcp_string(name)}, flags = maxtext_flags({{"steps": 1}}))\n'
    root = workspace(tmp_path_factory.mktemp("ws"), {"recipes/r.rcp": recipe})
    code, err = run(root, "build", "-o", "out")
    if code == 0:
        assert output_tree(root / "out") == {f"r/default/{name}.flags": b"steps=1\n"}
    else:
        where = r"recipes/r\.rcp:1:\d+: error\[E0002\]" if surrogate else r"recipes/r\.rcp:1:18: error\[E0701\]"
        assert re.search(where, err) and not (root / "out").exists(), err


def respelled(draw, name: str) -> str:
    """``name`` with the case of some letters swapped, or with é spelled another way."""
    flips = draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
    other = "".join(c.swapcase() if f else c for c, f in zip(name, flips))
    return unicodedata.normalize("NFD" if draw(st.booleans()) else "NFC", other)


@SETTINGS
@given(st.data())
def test_names_that_are_one_file_where_case_is_ignored_collide(tmp_path_factory, data):
    """Two variants, two renders or two recipes whose names differ only in case or Unicode
    normalization would be one directory or file on macOS and Windows: a located error."""
    name = data.draw(st.text(st.sampled_from("abcXYZ\u00e9"), min_size=1, max_size=6))
    other = respelled(data.draw, name)
    assume(other != name)
    ascii_ = name.isascii() and other.isascii()
    if ascii_:
        root = workspace(tmp_path_factory.mktemp("ws"), {"recipes/r.rcp": f'variant("{name}")\nvariant("{other}")\n'})
        code, err = run(root, "check")
        assert code == 1 and "recipes/r.rcp:2:1: error[E0603]" in err and "case is ignored" in err
        flags = 'flag_file(name = "{}", flags = maxtext_flags({{"steps": 1}}))\n'
        root = workspace(tmp_path_factory.mktemp("ws"), {"recipes/r.rcp": flags.format(name) + flags.format(other)})
        code, err = run(root, "check")
        assert code == 1 and "recipes/r.rcp:2:1: error[E0702]" in err
    root = workspace(tmp_path_factory.mktemp("ws"), {f"recipes/{name}.rcp": 'variant("v")\n',
                                                     f"recipes/{other}.rcp": 'variant("v")\n'})
    if len(os.listdir(root / "recipes")) == 2:   # the file system keeps both
        code, err = run(root, "build")
        assert code == 1 and "error[E0903]" in err and not (root / "rcpc-out").exists()


def test_a_directory_spelled_two_ways_collides(tmp_path):
    root = workspace(tmp_path, {"recipes/Rl/x.rcp": 'variant("v")\n', "recipes/rl/y.rcp": 'variant("v")\n'})
    code, err = run(root, "check")
    assert code == 1 and "error[E0903]: recipe 'Rl/x' and recipe 'rl/y' spell one directory two ways" in err


# 2, 3. recipes outside the workspace, secrets ---------------------------------------------------
SECRET = "hunter2-do-not-print"


def traced(root: Path, *argv: str) -> tuple[subprocess.CompletedProcess, str]:
    """``rcpc ARGV`` with every file open traced: (result, the strace log)."""
    log = root.parent / "open.log"
    r = subprocess.run(["strace", "-f", "-qq", "-o", str(log), "-e", "trace=open,openat,openat2",
                        sys.executable, "-m", "rcpc", *argv], cwd=root, capture_output=True, text=True,
                       env={**os.environ, "RCPC_SECRET": SECRET, "RCPC_NO_CACHE": "1"})
    return r, log.read_text()


@pytest.mark.parametrize("argv", [("check",), ("check", "--diagnostics", "json"), ("check", "recipes/lib"),
                                  ("build",), ("fmt",), ("fmt", "--check"), ("lint",)])
def test_a_symlink_to_the_environment_is_never_read(tmp_path, argv):
    """The reported fault: ``ln -s /proc/self/environ recipes/lib/env.rcp``, and ``rcpc
    check`` printed the environment in a diagnostic. The link is a located error and is
    never opened."""
    root = workspace(tmp_path / "ws", {"recipes/r.rcp": 'variant("default")\n'})
    (root / "recipes" / "lib").mkdir()
    (root / "recipes" / "lib" / "env.rcp").symlink_to("/proc/self/environ")
    r, log = traced(root, *argv)
    assert SECRET not in r.stdout + r.stderr and "Traceback" not in r.stderr
    assert r.returncode == 1 and "recipes/lib/env.rcp" in r.stderr and "E0906" in r.stderr
    assert not re.search(r'open\w*\([^)]*(/env\.rcp"|"/proc/self/environ")', log)


@pytest.mark.parametrize("argv", [("check",), ("build",), ("fmt",), ("build", "recipes/evil.rcp"),
                                  ("render", "recipes/evil.rcp"), ("check", "recipes/evil.rcp")])
def test_a_recipe_linked_from_outside_is_never_read(tmp_path, argv):
    """A symlink ``recipes/evil.rcp`` to a file outside: compiled and written next to its
    target before. Now a located error for every command, and the file is never opened."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.rcp").write_text(f'X = "{SECRET}" +\nvariant("../../victim")\n')
    root = workspace(tmp_path / "ws", {"recipes/r.rcp": 'variant("default")\n'})
    (root / "recipes" / "evil.rcp").symlink_to(outside / "secret.rcp")
    before = everything(tmp_path, skip="ws")
    r, log = traced(root, *argv)
    assert r.returncode in (1, 2) and SECRET not in r.stdout + r.stderr and "Traceback" not in r.stderr
    assert "E0906" in r.stderr and "recipes/evil.rcp" in r.stderr
    assert "secret.rcp" not in log and not re.search(r'open\w*\(.*evil\.rcp', log)
    assert everything(tmp_path, skip="ws") == {**before, "open.log": log.encode()}


@pytest.mark.parametrize("argv", [("check",), ("build",), ("fmt",), ("fmt", "recipes/loop.rcp"),
                                  ("render", "recipes/loop.rcp"), ("build", "loop")])
def test_a_self_referencing_symlink_recipe_is_a_located_error(tmp_path, argv):
    root = workspace(tmp_path, {"recipes/r.rcp": 'variant("default")\n'})
    (root / "recipes" / "loop.rcp").symlink_to("loop.rcp")
    code, err = run(root, *argv)
    assert code == 1 and "recipes/loop.rcp: error[E0907]: symlink that cannot be resolved: it is a symlink loop" in err


def test_fmt_never_writes_through_a_symlink_out_of_the_workspace(tmp_path):
    outside = tmp_path / "outside.rcp"
    outside.write_text("X = [1,2]\n")
    root = workspace(tmp_path / "ws", {"recipes/r.rcp": "Y = [1,2]\n"})
    (root / "recipes" / "link.rcp").symlink_to(outside)
    code, err = run(root, "fmt")
    assert code == 1 and "recipes/link.rcp: error[E0906]" in err
    assert outside.read_text() == "X = [1,2]\n" and (root / "recipes" / "r.rcp").read_text() == "Y = [1, 2]\n"
    code, err = run(root, "fmt", str(outside))
    assert code == 2 and "outside the workspace" in err and outside.read_text() == "X = [1,2]\n"


@pytest.mark.parametrize("key", ["recipe_dirs", "library_dirs"])
def test_recipe_directories_must_be_inside_the_workspace(tmp_path, key):
    (tmp_path / "elsewhere").mkdir()
    root = workspace(tmp_path / "ws", {"rcp.toml": f'# config\n{key} = ["../elsewhere"]\n'})
    code, err = run(root, "check")
    assert code == 1 and f"rcp.toml:2:1: error[E0901]: rcp.toml: '{key}' entry '../elsewhere' leaves the workspace" in err


@given(st.text(min_size=1, max_size=400), st.data())
@example("SECRET=" + "s" * 5000, None)
def test_a_diagnostic_quotes_an_excerpt_of_a_line(line, data):
    """Never more than QUOTE_WIDTH characters of a source line, and the caret under the
    span's first character, however long the line."""
    from rcpc.core.diagnostics import QUOTE_WIDTH, Diagnostic, format_text
    from rcpc.core.source import Source, Span

    line = line.replace("\n", " ").replace("\r", " ")
    col = data.draw(st.integers(1, len(line))) if data else len(line)
    end = data.draw(st.integers(col, len(line) + 1)) if data else len(line) + 1
    text = format_text(Diagnostic("E0001", "x", Span("a.rcp", 1, col, 1, end)), {"a.rcp": Source("a.rcp", line + "\n")})
    _, _, quoted, carets = text.split("\n")
    assert len(quoted) <= len(" 1 | ") + QUOTE_WIDTH + 6
    shown = quoted[len(" 1 | "):]
    at = carets.index("^") - len("   | ")
    assert "".join(c if c.isprintable() else " " for c in line[col - 1].expandtabs(1)) == shown[at]
    assert carets.count("^") >= 1 and at + carets.count("^") <= len(shown)


# 4. outputs rcpc does not own ---------------------------------------------------------------------
TWO = {"recipes/a.rcp": 'manifest(name = "m", apiVersion = "v1", kind = "K")\nvariant("x")\nvariant("y")\n',
       "recipes/b/c.rcp": 'manifest(name = "n", apiVersion = "v1", kind = "K")\n'}


@pytest.mark.parametrize("place, named", [
    ("a/x/notes.txt", "a/x/notes.txt"), ("a/notes.txt", "a/notes.txt"), ("a/x/sub/notes.txt", "a/x/sub"),
    ("a/.x.old-1/f", "a/.x.old-1"), ("a/.y.tmp-2/f", "a/.y.tmp-2"), ("b/notes.txt", "b/notes.txt"),
    ("b/c/default/.m.yaml.swp", "b/c/default/.m.yaml.swp"), ("b/c/default/m/f", "b/c/default/m")])
def test_a_users_file_inside_the_output_is_never_removed(tmp_path, place, named):
    """The reported faults: user files inside a variant directory vanished on rebuild, and
    the clean-up deleted any ``.*.old-*`` or ``.*.tmp-*``. A file rcpc did not write, wherever
    it is put in the output of a recipe being built, or between them, makes the build refuse
    (E0911, exit 1), and nothing at all is touched."""
    root = workspace(tmp_path, TWO)
    assert run(root, "build")[0] == 0
    (root / "rcpc-out" / place).parent.mkdir(parents=True, exist_ok=True)
    (root / "rcpc-out" / place).write_text("mine\n")
    (root / "recipes" / "a.rcp").write_text(TWO["recipes/a.rcp"].replace('"m"', '"m2"'))
    before = everything(root)
    code, err = run(root, "build")
    assert code == 1 and f"error[E0911]: rcpc-out/{named} was not written by rcpc" in err
    assert everything(root) == before
    assert (root / "rcpc-out" / place).read_text() == "mine\n"
    shutil.move(root / "rcpc-out" / named, tmp_path / "moved")   # as the hint says
    assert run(root, "build")[0] == 0 and "a/x/m2.yaml" in output_tree(root / "rcpc-out")


def test_a_users_file_in_the_output_of_a_recipe_not_built_stays(tmp_path):
    root = workspace(tmp_path, TWO)
    assert run(root, "build")[0] == 0
    (root / "rcpc-out" / "b" / "c" / "default" / "notes.txt").write_text("mine\n")
    (root / "recipes" / "a.rcp").write_text(TWO["recipes/a.rcp"].replace('"m"', '"m2"'))
    assert run(root, "build", "a")[0] == 0
    assert (root / "rcpc-out" / "b" / "c" / "default" / "notes.txt").read_text() == "mine\n"
    assert "a/x/m2.yaml" in output_tree(root / "rcpc-out")


def test_users_entries_beside_rcpcs_links_are_never_touched(tmp_path):
    root = workspace(tmp_path, TWO)
    mine = {"rcpc-out/notes.txt": "n\n", "rcpc-out/.x.old-1/f": "o\n", "rcpc-out/.y.tmp-2/f": "t\n",
            "rcpc-out/a.old/f": "a\n"}
    for path, text in mine.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    assert run(root, "build")[0] == 0
    (root / "recipes" / "b" / "c.rcp").unlink()   # stale: its output and link go
    assert run(root, "build")[0] == 0
    assert {p: (root / p).read_text() for p in mine} == mine
    assert sorted(os.listdir(root / "rcpc-out")) == [".rcpc", ".x.old-1", ".y.tmp-2", "a", "a.old", "notes.txt"]


@pytest.mark.parametrize("config, out", [
    ("", "golden"), ("", "golden/rl"), ("", "recipes"), ("", "recipes/lib/x"),
    ('golden_dir = "g"\nrecipe_dirs = ["src"]\nlibrary_dirs = ["libs"]\n', "g"),
    ('golden_dir = "g"\nrecipe_dirs = ["src"]\nlibrary_dirs = ["libs"]\n', "src/a"),
    ('golden_dir = "g"\nrecipe_dirs = ["src"]\nlibrary_dirs = ["libs"]\n', "libs"),
])
def test_output_into_the_workspaces_sources_is_refused(tmp_path, config, out):
    """``-o golden`` (or a recipe or library directory, or inside one) is refused before
    anything is written: a new user's ``-o golden`` got E0910 only where a recipe's directory
    existed, with a hint to delete it (the goldens)."""
    src = "src" if config else "recipes"
    root = workspace(tmp_path, {"rcp.toml": config, f"{src}/rl/r.rcp": 'variant("default")\n',
                                f"{'g' if config else 'golden'}/rl/r/default/x.yaml": "kept: 1\n",
                                f"{'libs' if config else 'recipes/lib'}/l.rcp": "X = 1\n"})
    before = everything(root)
    code, err = run(root, "build", "-o", out)
    assert code == 1 and f"error[E0910]: cannot write to {out}: it is " in err and "rcp.toml's" in err, err
    assert "delete" not in err and everything(root) == before


def test_output_over_the_workspace_refuses_to_take_a_users_directory(tmp_path):
    """The reported fault: ``-o .`` with a recipe ``compiler`` and ``variant("rcpc")``
    deleted ``compiler/rcpc/``. Now E0910 at the recipe, exit 1, nothing made or changed."""
    root = workspace(tmp_path, {"recipes/compiler.rcp": 'variant("rcpc")\n', "compiler/rcpc/main.py": "x = 1\n"})
    before = everything(root)
    code, err = run(root, "build", "-o", ".")
    assert code == 1 and "recipes/compiler.rcp: error[E0910]: cannot write ./compiler" in err
    assert everything(root) == before
    root = workspace(tmp_path, {"recipes/r.rcp": 'variant("rcpc")\n', "compiler/rcpc/main.py": "x = 1\n"})
    assert run(root, "build", "-o", ".")[0] == 0   # no clash: rcpc's link r and area .rcpc beside them
    assert (root / "compiler" / "rcpc" / "main.py").read_text() == "x = 1\n" and (root / "r").is_symlink()


def test_an_area_rcpc_did_not_make_is_refused_and_an_empty_one_is_taken(tmp_path):
    root = workspace(tmp_path, TWO)
    (root / "rcpc-out" / ".rcpc").mkdir(parents=True)
    (root / "rcpc-out" / ".rcpc" / "mine").write_text("x\n")
    before = everything(root)
    code, err = run(root, "build")
    assert code == 1 and "error[E0910]: cannot write to rcpc-out: rcpc-out/.rcpc exists and was not made by rcpc" in err
    assert everything(root) == before
    (root / "rcpc-out" / ".rcpc" / "mine").unlink()   # empty, as a build killed right after making it leaves it
    assert run(root, "build")[0] == 0 and len(output_tree(root / "rcpc-out")) == 3
    code, err = run(root, "build", "-o", "rcpc-out/.rcpc/gen/x")
    assert code == 1 and "inside rcpc's own area" in err


@pytest.mark.parametrize("manifest", [
    "{}", "not json", '{"format": 1, "links": ["x"], "outputs": {"x/../..": 1}, "recipes": {"x/../..": {}}}',
    '{"format": 1, "links": [".."], "outputs": {"..": 1}, "recipes": {"..": {"v": ["f"]}}}',
    '{"format": 1, "links": ["a"], "outputs": {"a": 0}, "recipes": {"a": {"v": ["f"]}}}',
    '{"format": 1, "links": ["a"], "outputs": {"a": 1}, "recipes": {"a": {"v": ["../../../x"]}}}'])
def test_a_damaged_manifest_is_refused_and_nothing_is_touched(tmp_path, manifest):
    root = workspace(tmp_path, TWO)
    assert run(root, "build")[0] == 0
    (root / "rcpc-out" / ".rcpc" / "current" / ".manifest").write_text(manifest)
    (root / "recipes" / "a.rcp").write_text(TWO["recipes/a.rcp"].replace('"m"', '"m2"'))
    before = everything(root)
    code, err = run(root, "build")
    assert code == 1 and "error[E0912]" in err and everything(root) == before


def test_a_partial_build_carries_the_other_outputs_over_as_they_are(tmp_path):
    root = workspace(tmp_path, TWO)
    assert run(root, "build")[0] == 0
    kept = os.stat(root / "rcpc-out" / "b" / "c" / "default" / "n.yaml").st_ino
    (root / "recipes" / "a.rcp").write_text(TWO["recipes/a.rcp"].replace('variant("y")', 'variant("z")'))
    (root / "recipes" / "b" / "c.rcp").unlink()
    assert run(root, "build", "a", "--variant", "x")[0] == 0   # one variant: a/y stays
    assert set(output_tree(root / "rcpc-out")) == {"a/x/m.yaml", "a/y/m.yaml", "b/c/default/n.yaml"}
    assert os.stat(root / "rcpc-out" / "b" / "c" / "default" / "n.yaml").st_ino == kept   # not even copied
    assert run(root, "build", "a")[0] == 0   # every variant of a: the renamed y goes
    assert set(output_tree(root / "rcpc-out")) == {"a/x/m.yaml", "a/z/m.yaml", "b/c/default/n.yaml"}
    assert run(root, "build", "a", "--set", "X=1")[0] == 1   # no such param
    assert run(root, "build")[0] == 0   # every recipe: the deleted one's output and link go
    assert set(output_tree(root / "rcpc-out")) == {"a/x/m.yaml", "a/z/m.yaml"}
    assert sorted(os.listdir(root / "rcpc-out")) == [".rcpc", "a"]
    manifest = json.loads((root / "rcpc-out" / ".rcpc" / "current" / ".manifest").read_text())
    assert manifest == {"format": 1, "links": ["a"], "outputs": {"a": manifest["outputs"]["a"]},
                        "recipes": {"a": {"x": ["m.yaml"], "z": ["m.yaml"]}}}
    assert not area_leftovers(root / "rcpc-out")


OPS = st.lists(st.one_of(
    st.tuples(st.just("edit"), st.sampled_from("pqr"), st.integers(0, 3)),
    st.tuples(st.just("delete"), st.sampled_from("pqr")),
    st.tuples(st.just("rename"), st.sampled_from("pqr"), st.sampled_from(["v", "w"])),
    st.tuples(st.just("build"), st.sampled_from(["all", "p", "q/s", "r"]), st.sampled_from([None, "v", "custom"])),
), min_size=1, max_size=8)
RECIPES = {"p": "recipes/p.rcp", "q": "recipes/q/s.rcp", "r": "recipes/r.rcp"}
NAMES = {"p": "p", "q": "q/s", "r": "r"}
USER_FILES = {"notes.txt": b"n\n", ".p.old-1/f": b"o\n", ".q.tmp-2/f": b"t\n"}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(OPS)
def test_the_output_is_what_the_builds_so_far_wrote(tmp_path_factory, ops):
    """Model-based: recipes edited, deleted and their variants renamed between builds of
    everything, of one recipe, of one variant or of ``--set`` values. After each build the
    reader finds exactly what the model says (a built recipe's declared variants, ``custom``
    kept until the next ``--set``, other recipes carried over, deleted ones dropped by a build
    of everything), rcpc's area holds one generation, and the user's files are untouched."""
    root = tmp_path_factory.mktemp("ws")
    (root / "rcp.toml").write_text("")
    for path, text in USER_FILES.items():
        (root / "rcpc-out" / path).parent.mkdir(parents=True, exist_ok=True)
        (root / "rcpc-out" / path).write_bytes(text)
    source = {k: (0, "v") for k in RECIPES}   # recipe → (value, name of its second variant)
    model: dict = {}   # recipe name → {variant: value}

    def write(k):
        value, second = source[k]
        p = root / RECIPES[k]
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f'N = param(int, default = {value})\nmanifest(name = "m", apiVersion = "v1", kind = "K", '
                     f'data = {{"c": N}})\nvariant("default")\nvariant("{second}", set = {{"N": {value} + 10}})\n')

    for k in RECIPES:
        write(k)
    for op in ops:
        if op[0] == "edit" and op[1] in source:
            source[op[1]] = (op[2], source[op[1]][1])
            write(op[1])
        elif op[0] == "delete" and op[1] in source:
            (root / RECIPES[op[1]]).unlink()
            del source[op[1]]
        elif op[0] == "rename" and op[1] in source:
            source[op[1]] = (source[op[1]][0], op[2])
            write(op[1])
        elif op[0] == "build":
            which = [k for k in source if op[1] in ("all", NAMES[k])]
            if not which:
                continue
            argv = ["build"] + ([] if op[1] == "all" else [op[1]])
            argv += {None: [], "v": ["--variant", "default"], "custom": ["--set", "N=7"]}[op[2]]
            code, err = run(root, *argv)
            assert code == 0, err
            if op[1] == "all":
                model = {name: vs for name, vs in model.items() if name in {NAMES[k] for k in source}}
            for k in which:
                value, second = source[k]
                if op[2] is None:
                    model[NAMES[k]] = {"default": value, second: value + 10,
                                       **{v: n for v, n in model.get(NAMES[k], {}).items() if v == "custom"}}
                else:
                    model.setdefault(NAMES[k], {})["default" if op[2] == "v" else "custom"] = \
                        value if op[2] == "v" else 7
            want = {f"{name}/{v}/m.yaml": f"apiVersion: v1\nkind: K\nmetadata:\n  name: m\ndata:\n  c: {n}\n".encode()
                    for name, vs in model.items() for v, n in vs.items()}
            assert output_tree(root / "rcpc-out") == {**want, **USER_FILES}
            assert not area_leftovers(root / "rcpc-out")
            links = {p.name for p in (root / "rcpc-out").iterdir() if p.is_symlink()}
            assert links == {name.split("/")[0] for name in model}


# 7, 10. NUL in paths ----------------------------------------------------------------------------
@given(st.sampled_from(["output_dir", "golden_dir", "maxtext_base", "recipe_dirs", "library_dirs", "kube_schemas"]),
       st.text(st.sampled_from("ab/.\0"), max_size=5), st.text(st.sampled_from("ab/.\0"), max_size=5))
@example("output_dir", "out", "")
@settings(deadline=None)  # a run on a loaded machine took 426 ms for one example: no timed assertion
def test_a_nul_in_a_configured_path_is_a_located_error(tmp_path_factory, key, head, tail):
    root = tmp_path_factory.mktemp("ws")
    value = json.dumps(head + "\0" + tail)   # a TOML basic string: "\u0000"
    if key.endswith("dirs") or key == "kube_schemas":
        value = f"[{value}]"
    (root / "rcp.toml").write_text(f"# workspace\n\n{key} = {value}\n")
    code, err = run(root, "build")
    assert code == 1 and f"rcp.toml:3:1: error[E0901]: rcp.toml: '{key}' contains a NUL character" in err


@given(st.text(st.sampled_from("ab/.\0\n\t\x01"), max_size=6), st.sampled_from(["//", "", "./", "../"]))
@example("", "//")
def test_a_nul_in_a_load_path_is_a_located_error(tmp_path_factory, body, head):
    root = workspace(tmp_path_factory.mktemp("ws"), {})
    target = head + body + "\0" + ".rcp"
    (root / "recipes").mkdir()
    (root / "recipes" / "r.rcp").write_text(f'load({rcp_string(target)}, "X")\n')
    code, err = run(root, "check")
    assert code == 1 and "recipes/r.rcp:1:6: error[E0201]" in err and "NUL" in err


# 8, 10. fmt ---------------------------------------------------------------------------------------------
BODY = st.lists(st.sampled_from(["a", " ", "\r\n", "\r", "\n", "\t", "é", "\\\\", '"']), max_size=12).map(
    "".join).filter(lambda s: not s.endswith('"') and '"""' not in s)


@SETTINGS
@given(body=BODY, crlf=st.booleans(), mode=st.sampled_from([0o600, 0o640, 0o644, 0o664, 0o700, 0o755, 0o444]))
@example(body="a\r\nb", crlf=True, mode=0o755)
def test_fmt_keeps_every_render_and_the_files_mode(tmp_path_factory, body, crlf, mode):
    """The reported faults: a CRLF inside a triple-quoted string became LF (the render
    changed), and the file's mode was reset to 0644."""
    nl = "\r\n" if crlf else "\n"
    text = nl.join(['X = """' + body + '"""', 'manifest(name = "m", apiVersion = "v1", kind = "K", data = {"x": X},)', ""])
    root = tmp_path_factory.mktemp("ws")
    (root / "rcp.toml").write_text("")
    (root / "recipes").mkdir()
    recipe = root / "recipes" / "r.rcp"
    recipe.write_bytes(text.encode())
    recipe.chmod(mode)
    before = (root / "before")
    assert run(root, "build", "-o", str(before))[0] == 0
    code, err = run(root, "fmt")
    assert code == 0, err
    assert stat.S_IMODE(recipe.stat().st_mode) == mode
    assert recipe.read_bytes() != text.encode() and b'{"x": X}' in recipe.read_bytes()
    assert run(root, "build", "-o", str(root / "after"))[0] == 0
    assert output_tree(root / "after") == output_tree(before)
    assert sorted(os.listdir(root / "recipes")) == ["r.rcp"]


def test_concurrent_fmt_runs_never_share_a_temporary_file(tmp_path, monkeypatch):
    """The reported fault: every fmt run wrote ``.<name>.fmt-tmp``, so two at once clobbered
    each other's (and a user's file of that name). A second run interleaved right before
    the first's rename: both complete, the last rename wins, nothing is left behind."""
    from rcpc.core.files import write_output

    target = tmp_path / "r.rcp"
    target.write_text("X = 1\n")
    users = tmp_path / ".r.rcp.fmt-tmp"
    users.write_text("mine\n")
    real = os.replace
    calls = []

    def interleaved(src, dst):
        calls.append(src)
        if len(calls) == 1:
            write_output(target, b"second\n")
        real(src, dst)

    monkeypatch.setattr(os, "replace", interleaved)
    write_output(target, b"first\n")
    assert len(set(calls)) == 2 and target.read_bytes() == b"first\n"
    assert sorted(os.listdir(tmp_path)) == [".r.rcp.fmt-tmp", "r.rcp"] and users.read_text() == "mine\n"


LONG = "S3CRET" * 2000


@pytest.mark.parametrize("recipe", [
    f'load("//../{LONG}.rcp", "X")\n',                                  # E0204: the path in the message
    f'load("//{LONG}", "X")\n',                                          # E0205
    f'S = tpu_slice("{LONG}")\n',                                        # E0401: the spec in the message
    f'jobset(name = "j", metadata = {{"name": "j", "labels": {{"a": "{LONG}"}}}}, spec = {{}})\n',   # E1003
    f'X = 1 + "{LONG}"\n',
    f'X = "{LONG}" $\n',                                                 # E0001 on a long line
])
@pytest.mark.parametrize("form", ["text", "json"])
def test_no_diagnostic_prints_a_long_value_whole(tmp_path, recipe, form):
    """Whatever a diagnostic's message, hint or notes quote of the source, they are cut at
    MESSAGE_WIDTH characters, and a source line at QUOTE_WIDTH (text and JSON alike)."""
    from rcpc.core.diagnostics import MESSAGE_WIDTH

    root = workspace(tmp_path, {"recipes/r.rcp": recipe})
    code, err = run(root, "check", "--diagnostics", form)
    assert code == 1 and "Traceback" not in err and LONG not in err
    assert max(map(len, err.splitlines())) < MESSAGE_WIDTH + 100, err[:2000]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(existing=st.sets(st.integers(1, 40), max_size=8), others=st.sets(st.sampled_from(["x", "07a", ".tmp"])),
       made=st.integers(1, 12), late=st.sets(st.integers(1, 60), max_size=4))
def test_numbered_directories_are_new_and_past_every_number(tmp_path_factory, existing, others, made, late):
    """_next_dir, remembering the last number it made: each directory it makes is new,
    numbered past every number there before, and past the last it made, even when others
    appear between calls (``late``: not under a build's lock, but new all the same)."""
    from rcpc.build.output import _next_dir

    parent = tmp_path_factory.mktemp("outputs")
    for n in existing:
        (parent / str(n)).mkdir()
    for name in others:
        (parent / name).mkdir()
    after: list = []
    seen = set(existing)
    last = max(existing, default=0)
    for i in range(made):
        if i == made // 2:
            for n in late - seen:
                (parent / str(n)).mkdir()
            seen |= late
        d = _next_dir(parent, after)
        assert int(d.name) not in seen and int(d.name) > last and d.is_dir()
        seen.add(int(d.name))
        last = int(d.name)


@SETTINGS
@given(depth=st.integers(1, 3), at=st.integers(0, 2), kind=st.sampled_from(["file", "fifo", "link to file"]),
       via=st.sampled_from(["-o", "output_dir"]))
@example(depth=1, at=0, kind="file", via="-o")   # the report: `rcpc build -o afile` said "File exists"
def test_an_output_path_through_a_file_says_which_file(tmp_path_factory, depth, at, kind, via):
    """An output directory whose path runs into something that is not a directory (at any
    depth, given by -o or output_dir) fails with E0950 naming that path as not a directory,
    exit 1, the thing itself untouched; not the system's bare "File exists"."""
    at = min(at, depth - 1)
    parts = [f"p{i}" for i in range(depth)]
    root = workspace(tmp_path_factory.mktemp("ws"), {"recipes/r.rcp": 'variant("default")\n'})
    if via == "output_dir":
        (root / "rcp.toml").write_text(f'output_dir = "{"/".join(parts)}"\n')
    blocker = root.joinpath(*parts[:at + 1])
    blocker.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(blocker)
    elif kind == "file":
        blocker.write_text("mine\n")
    else:
        (root / "target").write_text("mine\n")
        blocker.symlink_to(root / "target")
    def entries():  # (type, bytes of a regular file): a FIFO is not read
        return {p: (stat.S_IFMT(p.lstat().st_mode), p.read_bytes() if p.is_file() and not p.is_symlink() else None)
                for p in root.rglob("*")}

    before = entries()
    code, err = run(root, "build", *(["-o", "/".join(parts)] if via == "-o" else []))
    shown = "/".join(parts[:at + 1])
    assert code == 1 and "error[E0950]" in err and f"{shown} is a " in err and ", not a directory" in err, err
    assert "File exists" not in err and "Traceback" not in err
    assert entries() == before


def test_rcp_tomls_output_dir_inside_the_sources_is_refused_at_its_line(tmp_path):
    """rcp.toml's own output_dir inside a recipe directory: E0910 at that line of rcp.toml,
    quoted, its hint naming output_dir (it named recipe_dirs and proposed the very output_dir
    refused), nothing written."""
    root = workspace(tmp_path, {"rcp.toml": '# paths\noutput_dir = "recipes/out"\n',
                                "recipes/r.rcp": 'variant("default")\n'})
    before = everything(root)
    code, err = run(root, "build")
    assert code == 1 and "rcp.toml:2:1: error[E0910]: cannot write to recipes/out: it is inside" in err, err
    assert ' 2 | output_dir = "recipes/out"' in err and "set rcp.toml's output_dir" in err
    assert everything(root) == before
