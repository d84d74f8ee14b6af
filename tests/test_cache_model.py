"""The build cache and no-op replay, proven against a model (issue 12, item 6: a cache that
can lie). A hypothesis state machine applies random sequences of

* edits of the workspace: content (same size too), an edit that restores the old mtime,
  mtime-only touches, a symlinked library retargeted, a recipe added or removed, rcp.toml
  rewritten, and an edit made *while* a recipe compiles (a deterministic hook: the file is
  rewritten right after the compiler has read it);
* damage to the caches: a build-cache entry of the store truncated, replaced by garbage, by
  another recipe's or another cache's entry, a byte of a render flipped, or rewritten as a
  well-formed entry of valid JSON of another shape, naming ``../../POISON.yaml`` or an empty
  dependency list; a replay record's byte flipped;
* commands (``build``, ``build --variant``, ``build <recipe>``, ``check``), run in-process
  with both caches, as ``rcpc`` runs (replay first);

and checks every command against the same command run without any cache
(``RCPC_NO_CACHE=1``) in a copy of the workspace as it was before the command: the same exit
code, stdout, stderr (paths aside) and output files, and nothing written outside the output
directory.

File timestamps: replay trusts a file's stat when the file changed more than ``RACY_NS``
before the run (git's racy-clean rule), so that any later edit moves its ctime. The test sets
``RACY_NS`` to 0 and, before each edit, waits for the file system's clock to tick past every
timestamp the workspace holds, which is the guarantee that rule gives.

CI runs 25 sequences of up to 14 steps; ``RCPC_MODEL_EXAMPLES=N`` runs N.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import storefiles
import rcpc.build.cache
from rcpc.build import replay
from rcpc.core import store
from rcpc.domain.recipe import Compiler

RECIPE_A = '''load("//recipes/lib/cur.rcp", "LR")
N = param(int, default = {n})
F = maxtext_flags({{"learning_rate": LR, "steps": N}}{extra})
flag_file(name = "trainer", flags = F)
manifest(name = "cm", apiVersion = "v1", kind = "ConfigMap", data = {{"n": str(N)}})
variant("default")
variant("more", set = {{"N": N + 1}})
'''
RECIPE_B = '''load("//recipes/lib/l1.rcp", "LR")
flag_file(name = "b", flags = maxtext_flags({{"learning_rate": LR, "x": {x}}}))
variant("default")
variant("more")
'''
POOLS = {
    "recipes/a.rcp": [RECIPE_A.format(n=2, extra=""), RECIPE_A.format(n=3, extra=""),
                      RECIPE_A.format(n=2, extra=', {"steps": 2}'),       # a no-op override: W0330
                      RECIPE_A.format(n=2, extra="") + "Z = Q\n"],       # an error
    "recipes/b.rcp": [RECIPE_B.format(x=1), RECIPE_B.format(x=7), RECIPE_B.format(x='"y"')],
    "recipes/lib/l1.rcp": ["LR = 1e-6\n", "LR = 2e-6\n", "LR = 1e-5\n", "LR = Q\n", "LR = 3e-6\nW_ = 1\n"],
    "recipes/lib/l2.rcp": ["LR = 5e-1\n", "LR = 6e-1\n", "LR = 0.125\n"],
    "rcp.toml": ["", "# config\n", 'recipe_dirs = ["recipes"]\n', 'maxtext_schema = "mt/base.yml"\n'],
    # a MaxText schema derived from a base.yml: a types.py appearing beside it makes it stricter
    "mt/base.yml": ["steps: 1\nlearning_rate: 1.0e-6\nx: 1\nk: 1\n", "steps: 1\nlearning_rate: 1.0e-6\nx: 'a'\nk: 1\n"],
    "mt/types.py": [None, "from pydantic import BaseModel, Field\nclass MaxTextConfig(BaseModel):\n"
                          "    steps: int = Field(1, le=2)\n"],
    "recipes/c.rcp": [None, 'flag_file(name = "c", flags = maxtext_flags({"k": 1}))\n'],  # None: absent
}
FILES = sorted(POOLS)
COMMANDS = [("build",), ("build", "--variant", "more"), ("build", "a"), ("check",)]
ENTRY_DAMAGE = ["truncate", "garbage", "shape", "swap", "poison_render", "poison_variant", "poison_text", "no_deps",
                "bad_warning", "flip", "other_area"]
QUOTED = re.compile(r"^\s*(\d+\s*)?\|")  # a quoted source line or caret line of a diagnostic


def files_outside_output(root: Path) -> dict:
    """Every file of the workspace but the output directory (and its lock file beside it)."""
    return {p.relative_to(root).as_posix(): (p.readlink() if p.is_symlink() else p.read_bytes())
            for p in sorted(root.rglob("*")) if (p.is_file() or p.is_symlink())
            and not p.relative_to(root).as_posix().startswith(("rcpc-out", ".rcpc-out"))}


def output_tree(root: Path) -> dict:
    out = root / "rcpc-out"
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@contextlib.contextmanager
def environment(cwd: Path, **env):
    """The current directory, environment variables (None: unset) and rcpc's signal handlers
    for one in-process command, restored afterwards."""
    old_cwd = os.getcwd()
    old_env = _setenv(env)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(old_cwd)
        _setenv(old_env)
        for s, h in handlers.items():
            signal.signal(s, h)


def _setenv(env: dict) -> dict:
    """Set (or, for None, unset) environment variables; returns their previous values."""
    old = {k: os.environ.get(k) for k in env}
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    return old


def run_rcpc(argv, cwd: Path, **env) -> tuple[int, str, str]:
    """``rcpc ARGV`` in-process as the command runs it (replay first), with its output."""
    from rcpc.__main__ import run

    out, err = io.StringIO(), io.StringIO()
    with environment(cwd, **env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(list(argv))
    return code, out.getvalue(), err.getvalue()


class CacheModel(RuleBasedStateMachine):
    """The workspace is the model's state; an uncached run is the oracle."""

    @initialize()
    def workspace(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="rcpc-cache-model-"))
        self.root = self.tmp / "ws"
        self.cache = self.tmp / "cache"
        (self.root / "recipes" / "lib").mkdir(parents=True)
        for rel in FILES:
            if POOLS[rel][0] is not None:
                (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
                (self.root / rel).write_text(POOLS[rel][0])
        (self.root / "recipes" / "lib" / "cur.rcp").symlink_to("l1.rcp")
        self.expected_outside = files_outside_output(self.root)
        self.builds = 0
        self._patch = replay.RACY_NS
        replay.RACY_NS = 0

    def teardown(self):
        replay.RACY_NS = getattr(self, "_patch", replay.RACY_NS)
        if hasattr(self, "tmp"):
            shutil.rmtree(self.tmp, ignore_errors=True)

    # edits -------------------------------------------------------------------------------
    def _tick(self) -> None:
        """Wait until the file system's clock has passed every timestamp in the workspace
        (a probe file's ctime moves past them), so an edit changes the stat it touches."""
        latest = max(max(st.st_mtime_ns, st.st_ctime_ns) for st in
                     (p.lstat() for p in self.tmp.rglob("*")))
        probe = self.tmp / "probe"
        while True:
            probe.write_bytes(b"")
            if probe.stat().st_ctime_ns > latest:
                return

    def _write(self, rel: str, text: str | None) -> None:
        path = self.root / rel
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    @rule(rel=st.sampled_from(FILES), choice=st.integers(0, 9), keep_mtime=st.booleans())
    def edit(self, rel, choice, keep_mtime):
        pool = POOLS[rel]
        text = pool[choice % len(pool)]
        path = self.root / rel
        self._tick()
        before = path.stat() if path.exists() else None
        self._write(rel, text)
        if keep_mtime and before is not None and text is not None:  # cp -p, touch -d, git's mtime restore
            os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        self.expected_outside = files_outside_output(self.root)

    @rule(rel=st.sampled_from([r for r in FILES if POOLS[r][0] is not None]))
    def touch(self, rel):
        self._tick()
        os.utime(self.root / rel)

    @rule()
    def retarget(self):
        link = self.root / "recipes" / "lib" / "cur.rcp"
        target = "l2.rcp" if os.readlink(link) == "l1.rcp" else "l1.rcp"
        self._tick()
        link.unlink()
        link.symlink_to(target)
        self.expected_outside = files_outside_output(self.root)

    @precondition(lambda self: self.builds > 0)
    @rule(pick=st.integers(0, 99), delete=st.booleans())
    def tamper_output(self, pick, delete):
        outputs = sorted(p for p in (self.root / "rcpc-out").rglob("*") if p.is_file())
        if outputs:
            victim = outputs[pick % len(outputs)]
            self._tick()
            if delete:
                victim.unlink()
            else:
                victim.write_bytes(victim.read_bytes().upper())

    # damage to the caches ----------------------------------------------------------------
    @precondition(lambda self: self.builds > 0)
    @rule(kind=st.sampled_from(ENTRY_DAMAGE), pick=st.integers(0, 99), every=st.booleans())
    def damage_entries(self, kind, pick, every):
        """Damage one build-cache entry of the store (or every one), and drop the replay
        records so that the next command looks its recipes up in the build cache. Damage to
        the entry's bytes (truncate, garbage, flip, swap, other_area) is left for the store's
        check to find; damage to its payload (shape, poison_*, no_deps, bad_warning) is written
        as a well-formed entry, for the build cache's own validation to find."""
        for record in self.cache.glob("rcpc/replay/*"):
            record.unlink()
        if not storefiles.database(self.cache).exists():
            return
        entries = storefiles.rows(self.cache, "build")
        if not entries:
            return
        victims = entries if every else [entries[pick % len(entries)]]
        if kind == "swap":  # each entry gets another one's bytes: another recipe's, or same recipe's
            for i, (key, _, _) in enumerate(entries):
                storefiles.rewrite(self.cache, key, entries[(i + 1 + pick) % len(entries)][2])
            return
        if kind == "other_area":  # the bytes of an entry of another cache (the validation cache's)
            others = storefiles.rows(self.cache, "schema") or [("", "", store.entry("schema", "00" * 32, b"{}"))]
            for i, (key, _, _) in enumerate(victims):
                storefiles.rewrite(self.cache, key, others[(i + pick) % len(others)][2])
            return
        for key, _, data in victims:
            if kind == "truncate":
                storefiles.rewrite(self.cache, key, data[: len(data) // 2])
            elif kind == "garbage":
                storefiles.rewrite(self.cache, key, b"\x00garbage")
            elif kind == "flip":  # a byte of the payload's middle: most of it is the renders' text
                if data:  # (an entry damaged before may be short, or empty)
                    i = (len(data) // 2 + pick % 40) % len(data)
                    storefiles.rewrite(self.cache, key, data[:i] + bytes([data[i] ^ 0x20]) + data[i + 1:])
            elif kind == "shape":
                payload = b"[]\n" + json.dumps({"texts": 1, "builds": {"x": 1}, "warnings": "w", "key": 5}).encode()
                storefiles.rewrite(self.cache, key, store.entry("build", key, payload))
            else:  # poison_render, poison_variant, poison_text, no_deps, bad_warning: one field made wrong
                try:
                    deps, entry = rcpc.build.cache.decode(storefiles.payload("build", key, data))
                    rcpc.build.cache._validate(entry)
                except (AssertionError, ValueError):  # damaged already (truncated, reshaped): nothing to poison
                    continue
                builds = entry["builds"]
                if kind == "no_deps":
                    deps = {}
                elif kind == "bad_warning":  # well-formed JSON, a diagnostic of the wrong shape
                    entry["warnings"] = [{"code": 5, "span": {"line": "x"}}]
                for build in builds if kind.startswith("poison") else ():
                    if kind == "poison_variant":
                        build[0] = "../../POISON"
                    elif build[1] and kind == "poison_text":  # a render's text out of the entry's texts
                        build[1][0][1] = len(entry["texts"])
                    elif build[1]:
                        build[1][0][0] = "../../POISON.yaml"
                payload = rcpc.build.cache.pack(deps, entry)
                storefiles.rewrite(self.cache, key, store.entry("build", key, payload))

    @precondition(lambda self: self.builds > 0)
    @rule(pick=st.integers(0, 99), at=st.integers(0, 10 ** 6))
    def damage_record(self, pick, at):
        records = sorted(self.cache.glob("rcpc/replay/*"))
        if records:
            record = records[pick % len(records)]
            data = bytearray(record.read_bytes())
            data[at % len(data)] ^= 0x20
            record.write_bytes(bytes(data))

    # commands ----------------------------------------------------------------------------
    def _oracle(self, argv) -> tuple[int, str, str, dict]:
        """The command without any cache, in a copy of the workspace as it is now."""
        ref_root = self.tmp / "ref"
        shutil.rmtree(ref_root, ignore_errors=True)
        shutil.copytree(self.root, ref_root, symlinks=True)
        code, out, err = run_rcpc(argv, ref_root, RCPC_NO_CACHE="1", XDG_CACHE_HOME=str(self.tmp / "ref-cache"))
        return code, out, err.replace(str(ref_root), "<ws>"), output_tree(ref_root)

    @rule(argv=st.sampled_from(COMMANDS))
    def command(self, argv):
        expected = self._oracle(argv)
        code, out, err = run_rcpc(argv, self.root, XDG_CACHE_HOME=str(self.cache), RCPC_NO_CACHE=None)
        self.builds += 1
        got = (code, out, err.replace(str(self.root), "<ws>"), output_tree(self.root))
        assert got == expected

    @rule(argv=st.sampled_from(COMMANDS), rel=st.sampled_from(["recipes/lib/l1.rcp", "recipes/a.rcp",
                                                                "recipes/b.rcp", "recipes/lib/l2.rcp"]),
          choice=st.integers(0, 9))
    def command_with_an_edit_while_compiling(self, argv, rel, choice):
        """The reported fault: a file edited while its recipe compiled was cached under its new
        content's hash with the old output, and served forever."""
        expected = self._oracle(argv)  # the workspace as the compile reads it
        path = (self.root / rel).resolve()
        pool = [t for t in POOLS[rel] if t is not None]
        text = pool[choice % len(pool)]
        real_read = Compiler.read
        done = []

        def read_then_edit(compiler, real, limit, *how, **also):
            data = real_read(compiler, real, limit, *how, **also)
            if real == path and not done:
                path.write_text(text)
                done.append(True)
            return data

        Compiler.read = read_then_edit
        try:
            code, out, err = run_rcpc(argv, self.root, XDG_CACHE_HOME=str(self.cache), RCPC_NO_CACHE=None)
        finally:
            Compiler.read = real_read
        self.builds += 1
        self.expected_outside = files_outside_output(self.root)
        # diagnostics quote source lines by reading the file again, after the edit: not compared
        strip = lambda e: "\n".join(x for x in e.replace(str(self.root), "<ws>").splitlines() if not QUOTED.match(x))
        assert (code, out, strip(err), output_tree(self.root)) == (expected[0], expected[1], strip(expected[2]),
                                                                  expected[3])

    @invariant()
    def nothing_written_outside_the_output_directory(self):
        if hasattr(self, "root"):
            assert files_outside_output(self.root) == self.expected_outside
            assert not list(self.tmp.rglob("POISON*"))


_EXAMPLES = int(os.environ.get("RCPC_MODEL_EXAMPLES", "25"))
CacheModel.TestCase.settings = settings(max_examples=_EXAMPLES, stateful_step_count=14, deadline=None,
                                        database=None, report_multiple_bugs=False,
                                        suppress_health_check=list(HealthCheck))
TestCacheModel = CacheModel.TestCase


# The reported faults, as fixed sequences of the machine's steps ------------------------------
def _sequence(steps) -> None:
    machine = CacheModel()
    machine.workspace()
    try:
        for name, *args in steps:
            getattr(machine, name)(*args)
            machine.nothing_written_outside_the_output_directory()
    finally:
        machine.teardown()


ALL_COMMANDS = [("command", argv) for argv in COMMANDS]


def test_a_file_edited_while_its_recipe_compiles_is_not_cached_under_its_new_content():
    _sequence([("command_with_an_edit_while_compiling", ("build",), "recipes/lib/l1.rcp", 1),
               *ALL_COMMANDS,
               ("command_with_an_edit_while_compiling", ("check",), "recipes/a.rcp", 1), *ALL_COMMANDS])


def test_a_file_appearing_beside_a_base_yml_schema_is_seen():
    """A cached check passed after a ``types.py`` was added beside the configured base.yml,
    which made the schema refuse ``steps = 3``: which files a derived schema is read from
    is part of what the result depends on."""
    _sequence([("edit", "rcp.toml", 3, False), *ALL_COMMANDS, ("edit", "mt/types.py", 1, False), *ALL_COMMANDS,
               ("edit", "mt/types.py", 0, False), *ALL_COMMANDS])


def test_one_command_sees_one_version_of_a_file_edited_while_it_runs():
    """Found by the machine: a library edited while ``check`` compiled its recipes was then
    looked up, for the check of the library on its own, by its new bytes; that cache hit hid
    the error the recipes had just reported from the old ones. Lookups in a run check against
    the bytes the run already used (BuildCache.seen)."""
    _sequence([("command_with_an_edit_while_compiling", ("check",), "recipes/lib/l1.rcp", 3),
               ("retarget",), ("retarget",),
               ("command_with_an_edit_while_compiling", ("check",), "recipes/lib/l1.rcp", 0)])


@pytest.mark.parametrize("kind", ENTRY_DAMAGE)
def test_a_damaged_entry_is_a_miss(kind):
    """Swapped entries were served with exit 0, an entry naming ../../POISON.yaml wrote
    outside -o, valid JSON of the wrong shape crashed every later build."""
    edits = [("edit", "recipes/lib/l1.rcp", 1, True), ("edit", "recipes/a.rcp", 1, True)]
    _sequence([*ALL_COMMANDS, *[step for argv in COMMANDS for step in
                                (("damage_entries", kind, 0, True), ("command", argv))],
               ("damage_entries", kind, 1, True), *edits, *ALL_COMMANDS])


def test_a_file_of_the_output_area_removed_or_altered_after_a_replayed_build_is_made_again():
    """Found by the machine: after a no-op build was replayed, the output area's lock file
    removed, the next build was replayed again and left it missing, where a build without
    the caches makes it again (it takes the lock). Each file of ``.rcpc/`` (the marker, the
    lock, the current manifest), removed or altered: the next build is what an uncached one is."""
    probe = CacheModel()
    probe.workspace()
    try:
        probe.command(("build",))
        files = sorted(p for p in (probe.root / "rcpc-out").rglob("*") if p.is_file())
        area = [i for i, p in enumerate(files) if ".rcpc" in p.relative_to(probe.root).parts
                and "outputs" not in p.parts]
    finally:
        probe.teardown()
    assert len(area) >= 3, files  # the marker, the lock, a generation's manifest
    for pick in area:
        for delete in (True, False):
            _sequence([("command", ("build",)), ("command", ("build",)), ("tamper_output", pick, delete),
                       ("command", ("build",)), ("command", ("build",))])
