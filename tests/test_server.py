"""The build server (``rcpc server``, :mod:`rcpc.server`, :mod:`rcpc.client`): a command run
through it prints, writes and exits exactly as in-process (``RCPC_NO_SERVER=1``); every
check that the server served a request reads its request counter (``rcpc server status``),
so a test passes only if the server was used (or, where it must not be, was not).

Races are driven with the test hook (:mod:`rcpc.testhook`, point ``served``: the request's
child reports its pid on a pipe and waits for a go), never by sleeping; waits for a process
to end have a generous upper bound (a hang), never a timing assertion.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import area_leftovers, output_tree
from rcpc.servercmd import wait_gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the build server is Linux-only")

REPO = Path(__file__).resolve().parents[1]
RCPC = shutil.which("rcpc", path=str(Path(sys.executable).parent)) or shutil.which("rcpc")
RL = "rl/qwen35_397b_256_v7x"
TRACEBACK = re.compile(r"Traceback|Exception ignored|Fatal Python error")
BROKEN = 'F = maxtext_flags({"steps": "many", "no_such_flag": 1})\nflag_file(name = "t", flags = F)\n'


def _gone(pid: int, timeout: float = 60) -> bool:
    """Whether process ``pid`` ends within ``timeout`` seconds (a bound for a hang)."""
    return wait_gone(pid, timeout)


class Server:
    """A build server in private ``XDG_RUNTIME_DIR`` / ``XDG_CACHE_HOME`` directories."""

    def __init__(self, root: Path, launcher=None, env=None):
        import tempfile

        self.root = root
        root.mkdir(parents=True)
        # a short path: a Unix socket's path has at most 107 bytes
        self.run_dir = Path(tempfile.mkdtemp(prefix="rcpc-test-"))
        self.run_dir.chmod(0o700)
        self.cache = root / "cache"
        drop = ("RCPC_NO_SERVER", "RCPC_NO_CACHE", "RCPC_TEST_STOP", "NO_COLOR")
        self.env = {k: v for k, v in os.environ.items() if k not in drop}
        self.env.update(XDG_RUNTIME_DIR=str(self.run_dir), XDG_CACHE_HOME=str(self.cache), **(env or {}))
        self.launcher = launcher or [RCPC]  # how rcpc is run (the server and its clients alike)

    def rcpc(self, *args, cwd=None, env=None, served: bool = True, **kw) -> subprocess.CompletedProcess:
        """``rcpc ARGS`` through the server (``served``) or in-process (RCPC_NO_SERVER=1)."""
        e = {**self.env, **(env or {})}
        if not served:
            e["RCPC_NO_SERVER"] = "1"
        return subprocess.run([*self.launcher, *args], cwd=cwd or self.root, env=e, capture_output=True, timeout=300,
                              **kw)

    def start(self, *args) -> subprocess.CompletedProcess:
        r = self.rcpc("server", "start", *args)
        assert r.returncode == 0, r.stderr.decode()
        return r

    def status(self) -> tuple[int | None, int]:
        """(server pid or None, requests served)."""
        r = self.rcpc("server", "status")
        m = re.search(r"running: pid (\d+), (\d+) request", r.stdout.decode())
        if r.returncode or m is None:
            return None, 0
        return int(m[1]), int(m[2])

    def log(self) -> str:
        """The server's log file."""
        return next(str(p) for p in (self.run_dir / "rcpc").glob("server-*.log"))

    def served(self) -> int:
        return self.status()[1]

    def settled(self, timeout: float = 60) -> None:
        """Wait until no request's child runs any more (a child answers its client before its
        deferred work, :mod:`rcpc.core.deferred`; the server stores what it handed over once
        it has ended). The bound is for a hang."""
        import time

        end = time.monotonic() + timeout
        while "0 running" not in self.rcpc("server", "status").stdout.decode():
            assert time.monotonic() < end, "a request's child never ended"
            time.sleep(0.01)

    def stop(self) -> None:
        pid, _ = self.status()
        self.rcpc("server", "stop")
        if pid is not None and not _gone(pid, 60):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.run_dir, ignore_errors=True)


@pytest.fixture
def server(tmp_path):
    """A running server, stopped (killed if need be) whatever the test did."""
    s = Server(tmp_path / "srv")
    s.start()
    try:
        yield s
    finally:
        try:
            os.chmod(s.run_dir / "rcpc", 0o700)
        except OSError:
            pass
        s.stop()


def workspace(path: Path, broken: bool = False) -> Path:
    """A fresh copy of the bundled workspace at ``path`` (with a recipe that fails to build)."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    shutil.copy2(REPO / "rcp.toml", path / "rcp.toml")
    shutil.copytree(REPO / "recipes", path / "recipes")
    if broken:
        (path / "recipes" / "broken.rcp").write_text(BROKEN)
    return path


def files(root: Path) -> dict:
    """Every file under ``root`` but the output directory: {path: (bytes, mode)}; and what a
    reader of the output directory finds."""
    found = {}
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x != "rcpc-out"]
        for n in names:
            p = Path(d) / n
            found[p.relative_to(root).as_posix()] = (p.read_bytes(), stat.S_IMODE(p.lstat().st_mode))
    return {"files": found, "out": output_tree(root / "rcpc-out") if (root / "rcpc-out").exists() else None}


def outcome(r: subprocess.CompletedProcess, ws: Path) -> tuple:
    return r.returncode, r.stdout, r.stderr, files(ws)


def both(server: Server, args, broken=False, subdir="", env=None, **kw) -> tuple:
    """The outcome of ``rcpc ARGS`` in-process and through the server, each in a fresh copy
    of the workspace at the same path with an empty cache; asserts that exactly the second
    was served."""
    results = []
    for served in (False, True):
        ws = workspace(server.root / "ws", broken)
        shutil.rmtree(server.cache, ignore_errors=True)
        before = server.served()
        r = server.rcpc(*args, cwd=ws / subdir, served=served, env=env, **kw)
        assert server.served() == before + served
        assert not TRACEBACK.search(r.stderr.decode()), r.stderr.decode()
        results.append(outcome(r, ws))
    return tuple(results)


COMMANDS = {
    "build": (["build"], False),
    "build-one": (["build", RL, "-j", "1"], False),
    "check": (["check", "--notes"], False),
    "render": (["render", RL, "--variant", "tuned"], False),
    "params-json": (["params", RL, "--format", "json"], False),
    "fmt-check": (["fmt", "--check"], False),
    "failing-build": (["build"], True),
    "unknown-command": (["frobnicate"], False),
    "usage-error": (["build", "--variant"], False),
}


@pytest.mark.parametrize("case", COMMANDS)
def test_a_command_through_the_server_is_the_command_in_process(server, case):
    args, broken = COMMANDS[case]
    local, served = both(server, args, broken)
    assert served == local
    if case == "failing-build":
        assert local[0] == 1 and b"error[" in local[2]
    if case.startswith(("unknown", "usage")):
        assert local[0] == 2


def test_a_terminal_is_the_clients_own(server):
    """Diagnostics are coloured when stderr is a terminal: the child writes on the client's
    own descriptors, so ``isatty`` sees the client's terminal."""
    import pty

    outs = []
    for served in (False, True):
        ws = workspace(server.root / "ws", broken=True)
        master, slave = pty.openpty()
        before = server.served()
        e = {**server.env, **({} if served else {"RCPC_NO_SERVER": "1"})}
        proc = subprocess.Popen([RCPC, "build"], cwd=ws, env=e, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        got = b""
        while True:
            try:
                part = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not part:
                break
            got += part
        os.close(master)
        out, _ = proc.communicate(timeout=300)
        assert server.served() == before + served
        outs.append((proc.returncode, out, got))
    assert outs[0] == outs[1]
    assert b"\x1b[" in outs[0][2]  # coloured: a terminal was seen


def test_the_environment_is_the_clients(server, tmp_path):
    """A request runs with the client's environment: ``XDG_CACHE_HOME`` says where the
    cache goes, ``RCPC_NO_CACHE`` turns it off."""
    ws = workspace(tmp_path / "ws")
    before = server.served()
    off = server.rcpc("build", RL, cwd=ws, env={"XDG_CACHE_HOME": str(tmp_path / "c1"), "RCPC_NO_CACHE": "1"})
    on = server.rcpc("build", RL, "-o", "out2", cwd=ws, env={"XDG_CACHE_HOME": str(tmp_path / "c2")})
    assert (off.returncode, on.returncode) == (0, 0), (off.stderr, on.stderr)
    assert server.served() == before + 2
    def kept(cache: Path) -> set:  # what the cache holds, but lark's grammar tables (kept even then)
        found = (cache / "rcpc").iterdir() if (cache / "rcpc").is_dir() else ()
        return {p.name for p in found if not p.name.startswith("grammar-")}

    assert kept(tmp_path / "c1") == set()
    assert kept(tmp_path / "c2")  # build cache, replay records, ASTs


def test_the_working_directory_is_the_clients(server):
    """Run from a subdirectory of the workspace, as in-process."""
    local, served = both(server, ["build", RL], subdir="recipes/rl")
    assert served == local and local[0] == 0


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_the_umask_is_the_clients(server, umask):
    local, served = both(server, ["build", RL], umask=umask)
    assert served == local
    modes = {stat.S_IMODE(p.stat().st_mode) for p in (server.root / "ws" / "rcpc-out").rglob("*.yaml")}
    assert modes == {0o666 & ~umask}


def test_another_interpreter_set_up_is_refused(server, tmp_path):
    """A client started with other interpreter flags (``-X utf8``) runs in-process; the
    server stays."""
    ws = workspace(tmp_path / "ws")
    before = server.served()
    e = {**server.env, "PYTHONUTF8": "1"}
    r = subprocess.run([RCPC, "render", RL], cwd=ws, env=e, capture_output=True, timeout=300)
    local = server.rcpc("render", RL, cwd=ws, served=False)
    assert (r.returncode, r.stdout, r.stderr) == (local.returncode, local.stdout, local.stderr)
    pid, served = server.status()
    assert pid is not None and served == before


def test_no_server_and_unserved_commands_run_in_process(server, tmp_path):
    ws = workspace(tmp_path / "ws")
    before = server.served()
    assert server.rcpc("render", RL, cwd=ws, env={"RCPC_NO_SERVER": "1"}).returncode == 0
    assert server.rcpc("completion", "--list", "recipes", cwd=ws).returncode == 0
    assert server.served() == before


def test_a_stale_server_is_not_used_and_exits(tmp_path):
    """One of rcpc's files changed after the server started (its mtime moved): the next
    request is answered "stale", runs in-process with the same output, and the server exits.
    The server runs a copy of rcpc (a ``PYTHONPATH`` of its own), so that touching its file
    disturbs no other test."""
    import rcpc

    lib = tmp_path / "lib"
    shutil.copytree(Path(rcpc.__file__).parent, lib / "rcpc", ignore=shutil.ignore_patterns("__pycache__"))
    s = Server(tmp_path / "srv", launcher=[sys.executable, "-c", "import sys; from rcpc.__main__ import run; "
                                           "sys.exit(run())"], env={"PYTHONPATH": str(lib)})
    s.start()
    try:
        ws = workspace(tmp_path / "ws")
        local = s.rcpc("render", RL, cwd=ws, served=False)
        pid, before = s.status()
        assert s.rcpc("render", RL, cwd=ws).stdout == local.stdout and s.served() == before + 1  # a copy served
        module = lib / "rcpc" / "testhook.py"
        st = module.stat()
        os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        r = s.rcpc("render", RL, cwd=ws)
        assert (r.returncode, r.stdout, r.stderr) == (local.returncode, local.stdout, local.stderr)
        assert _gone(pid)
        assert s.status() == (None, 0)
        assert b"stopping: stale: " + bytes(module) + b" changed" in Path(s.log()).read_bytes()
    finally:
        s.stop()


@pytest.mark.parametrize("how", ["open-to-others", "symlink"])
def test_an_unsafe_socket_directory_is_not_used(server, tmp_path, how):
    ws = workspace(tmp_path / "ws")
    local = server.rcpc("render", RL, cwd=ws, served=False)
    before = server.served()
    env = None
    if how == "open-to-others":
        os.chmod(server.run_dir / "rcpc", 0o777)
    else:
        other = tmp_path / "other-run"
        other.mkdir(mode=0o700)
        (other / "rcpc").symlink_to(server.run_dir / "rcpc")
        env = {"XDG_RUNTIME_DIR": str(other)}
    r = server.rcpc("render", RL, cwd=ws, env=env)
    refused = server.rcpc("server", "start", env=env)
    os.chmod(server.run_dir / "rcpc", 0o700)
    assert (r.returncode, r.stdout, r.stderr) == (local.returncode, local.stdout, local.stderr)
    assert server.served() == before
    assert refused.returncode == 1 and b"refusing to use it" in refused.stderr
    assert not TRACEBACK.search(refused.stderr.decode())


class Waiting:
    """A client whose request's child waits at the test hook ``served``."""

    def __init__(self, server: Server, ws: Path, args=("build",)):
        self.report_r, report_w = os.pipe()
        go_r, self.go_w = os.pipe()
        e = {**server.env, "RCPC_TEST_STOP": "served", "RCPC_TEST_STOP_FD": str(report_w),
             "RCPC_TEST_GO_FD": str(go_r)}
        self.proc = subprocess.Popen([RCPC, *args], cwd=ws, env=e, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, pass_fds=(report_w, go_r))
        os.close(report_w)
        os.close(go_r)
        self.reports = os.fdopen(self.report_r)
        point, pid = self.reports.readline().split()
        assert point == "served"
        self.child = int(pid)

    def go(self) -> None:
        if self.go_w is not None:
            os.close(self.go_w)
            self.go_w = None

    def end(self) -> tuple:
        self.go()
        out, err = self.proc.communicate(timeout=300)
        self.reports.close()
        return self.proc.returncode, out.decode(), err.decode()


def _cache_files(server: Server, kind: str) -> set:
    return {p for p in (server.cache / "rcpc" / kind).rglob("*") if p.is_file()}


def test_the_client_has_its_answer_before_the_deferred_work(server, tmp_path):
    """A request's child answers its client as soon as the command has ended and let go of
    the client's streams: the client has its exit status and its whole output (its stdout
    reaches end of file) while the child still holds its deferred work (test hook
    ``deferred``): the build cache entry, the validation cache entries and the removal of
    the generation it replaced. Then that work is done, and what was built is what an
    in-process build makes. Without the early answer the client would wait for a child that
    waits for the test: ``communicate`` would hang (bounded)."""
    ws = workspace(tmp_path / "ws")
    assert server.rcpc("build", RL, cwd=ws).returncode == 0  # a generation to replace
    server.settled()
    recipe = ws / "recipes" / f"{RL}.rcp"
    text = recipe.read_text()
    recipe.write_text(re.sub(r'"ragged_buffer_factor": [0-9.]+,', '"ragged_buffer_factor": 7.25,', text))
    builds, schemas = _cache_files(server, "builds"), _cache_files(server, "schema")
    report_r, report_w = os.pipe()
    go_r, go_w = os.pipe()
    env = {**server.env, "RCPC_TEST_STOP": "deferred", "RCPC_TEST_STOP_FD": str(report_w),
           "RCPC_TEST_GO_FD": str(go_r)}
    proc = subprocess.Popen([RCPC, "build", RL], cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            pass_fds=(report_w, go_r))
    os.close(report_w)
    os.close(go_r)
    try:
        out, err = proc.communicate(timeout=300)
        with os.fdopen(report_r) as reports:
            point, pid = reports.readline().split()
            assert point == "deferred"
            assert proc.returncode == 0, err.decode()
            assert b"of 4 variant directories written" in err
            assert not _gone(int(pid), 0)  # still held at the hook
            assert _cache_files(server, "builds") == builds and _cache_files(server, "schema") == schemas
            assert area_leftovers(ws / "rcpc-out")  # the replaced generation is still there
    finally:
        os.close(go_w)
    assert _gone(int(pid))
    server.settled()
    assert len(_cache_files(server, "builds")) > len(builds) and len(_cache_files(server, "schema")) > len(schemas)
    assert area_leftovers(ws / "rcpc-out") == []
    served = output_tree(ws / "rcpc-out")
    local = workspace(tmp_path / "local")
    (local / "recipes" / f"{RL}.rcp").write_text(recipe.read_text())
    assert server.rcpc("build", RL, cwd=local, served=False).returncode == 0
    assert output_tree(local / "rcpc-out") == served


class Deferring:
    """A served command whose child has answered its client and waits at the test hook
    ``deferred``, its deferred work not done yet (:meth:`go` lets it do it)."""

    def __init__(self, server: Server, ws: Path, args=("build",)):
        report_r, report_w = os.pipe()
        go_r, self.go_w = os.pipe()
        env = {**server.env, "RCPC_TEST_STOP": "deferred", "RCPC_TEST_STOP_FD": str(report_w),
               "RCPC_TEST_GO_FD": str(go_r)}
        proc = subprocess.Popen([RCPC, *args], cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                pass_fds=(report_w, go_r))
        os.close(report_w)
        os.close(go_r)
        out, err = proc.communicate(timeout=300)
        self.code, self.out, self.err = proc.returncode, out.decode(), err.decode()
        with os.fdopen(report_r) as reports:
            point, pid = reports.readline().split()
        assert point == "deferred"
        self.child = int(pid)

    def go(self) -> None:
        os.close(self.go_w)
        assert _gone(self.child)


def test_deferred_clean_up_never_touches_an_output_directory_made_since(server, tmp_path):
    """The removal of the generation a served build replaced comes after its client's answer;
    if meanwhile the output directory was deleted (or moved away) and another build made a new
    one at the same path, whose generations and outputs are numbered from 1 again, that
    removal must not reach into the new directory (it removed the new current generation:
    every link led nowhere and each later build failed with E0912)."""
    ws = workspace(tmp_path / "ws")
    assert server.rcpc("build", cwd=ws).returncode == 0
    server.settled()
    recipe = ws / "recipes" / f"{RL}.rcp"
    recipe.write_text(re.sub(r'"ragged_buffer_factor": [0-9.]+,', '"ragged_buffer_factor": 7.25,',
                             recipe.read_text()))
    held = Deferring(server, ws)
    assert held.code == 0, held.err
    moved = tmp_path / "moved"
    (ws / "rcpc-out").rename(moved)  # as `mv` (or `rm -rf`) would, then a build from scratch
    assert server.rcpc("build", cwd=ws, served=False).returncode == 0
    made = output_tree(ws / "rcpc-out")
    held.go()
    server.settled()
    assert output_tree(ws / "rcpc-out") == made
    assert area_leftovers(ws / "rcpc-out") == []
    assert area_leftovers(moved) == []  # the clean-up was done where the build wrote
    assert output_tree(moved) == made
    again = server.rcpc("build", cwd=ws)
    assert again.returncode == 0 and b"(0 of 17 variant directories written)" in again.stderr, again.stderr


def _deferred_killed(log: str, child: int) -> bool:
    """Whether the server's ``log`` says it killed ``child`` in its deferred work."""
    return f"pid {child} (rcpc build) still in its deferred work" in Path(log).read_text()


def test_stop_kills_a_child_stuck_in_its_deferred_work_and_the_next_build_sweeps(server, tmp_path):
    """A child held in its deferred work (the test hook ``deferred``, as a stuck file system
    would hold it; its client has its answer) holds ``rcpc server stop`` a bounded time
    (:data:`rcpc.server.DEFERRED_GRACE`), not for ever: it is killed (SIGKILL), the log says
    so, and the server exits. The output is the new generation, whole; what the killed
    clean-up left (the replaced generation, kept by the lock the child held until killed)
    is removed by the next build, which then has what an in-process build makes."""
    ws = workspace(tmp_path / "ws")
    assert server.rcpc("build", RL, cwd=ws).returncode == 0
    server.settled()
    recipe = ws / "recipes" / f"{RL}.rcp"
    recipe.write_text(re.sub(r'"ragged_buffer_factor": [0-9.]+,', '"ragged_buffer_factor": 7.25,',
                             recipe.read_text()))
    pid, _ = server.status()
    log = server.log()
    held = Deferring(server, ws, ("build", RL))
    try:
        assert held.code == 0, held.err
        stopped = subprocess.run([RCPC, "server", "stop"], env=server.env, capture_output=True, timeout=120)
        assert stopped.returncode == 0 and _gone(pid), stopped.stderr
        assert _gone(held.child, 0) and _deferred_killed(log, held.child)
    finally:
        os.close(held.go_w)
    made = output_tree(ws / "rcpc-out")
    assert area_leftovers(ws / "rcpc-out")  # the replaced generation: its clean-up never ran
    local = workspace(tmp_path / "local")
    (local / "recipes" / f"{RL}.rcp").write_text(recipe.read_text())
    assert server.rcpc("build", RL, cwd=local, served=False).returncode == 0
    assert made == output_tree(local / "rcpc-out")
    again = server.rcpc("build", RL, cwd=ws, served=False)
    assert again.returncode == 0, again.stderr
    assert area_leftovers(ws / "rcpc-out") == [] and output_tree(ws / "rcpc-out") == made


def test_the_idle_timeout_is_not_held_by_a_child_stuck_in_its_deferred_work(tmp_path):
    """The idle timeout counts from the last answer: a child held in its deferred work does
    not keep the server for ever; it is killed when the server exits."""
    s = Server(tmp_path / "srv")
    started = s.start("--idle-timeout", "5")  # the request below comes well within it
    pid = int(re.search(rb"started \(pid (\d+)", started.stderr)[1])
    try:
        log = s.log()
        held = Deferring(s, workspace(tmp_path / "ws"), ("build", RL))
        try:
            assert held.code == 0, held.err
            assert _gone(pid, 120)
            assert _gone(held.child, 0) and _deferred_killed(log, held.child)
        finally:
            os.close(held.go_w)
    finally:
        s.stop()


def test_the_cache_trim_of_a_served_command_comes_after_its_cache_writes(server, tmp_path):
    """A command trims the user cache at its end (:mod:`rcpc.core.cachetrim`): in-process,
    after its build and validation cache writes. A served command defers those writes
    (:mod:`rcpc.core.deferred`): its trim must come after them too, not before (it then
    found the cache under its limit, left an old file that an in-process run removes, and the
    cache passed its limit until the next trim, an hour later)."""
    gone = []
    for served in (False, True):
        ws = workspace(tmp_path / f"ws-{served}")
        shutil.rmtree(server.cache, ignore_errors=True)
        old = server.cache / "rcpc" / "builds" / "old-entry"
        old.parent.mkdir(parents=True)
        old.write_bytes(b"x" * 900_000)  # under the 1 MiB limit alone, not with a build's entries
        os.utime(old, (1_000_000_000, 1_000_000_000))
        r = server.rcpc("build", cwd=ws, served=served, env={"RCPC_CACHE_MAX_MB": "1"})
        assert r.returncode == 0, r.stderr
        server.settled()
        gone.append(not old.exists())
    assert gone == [True, True]


def _spare(server: Server, timeout: float = 60) -> int:
    """The pid of the server's spare child (forked while it is idle, for the next request),
    once there is one; the bound is for a hang."""
    import time

    pid, _ = server.status()
    end = time.monotonic() + timeout
    while True:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if len(children) == 1:
            return int(children[0])
        assert time.monotonic() < end, f"no spare child: {children}"
        time.sleep(0.01)


def test_a_request_is_served_by_the_child_forked_before_it(server, tmp_path):
    """While idle, the server has forked the child for the next request: the request's
    child is that process, and another is forked for the next once it has ended."""
    ws = workspace(tmp_path / "ws")
    spare = _spare(server)
    w = Waiting(server, ws, ("render", RL))
    assert w.child == spare
    code, out, err = w.end()
    assert code == 0, err
    assert out == server.rcpc("render", RL, cwd=ws, served=False).stdout.decode()
    assert _gone(spare)
    assert _spare(server) != spare


def test_a_spare_child_killed_is_replaced_and_requests_go_on(server, tmp_path):
    ws = workspace(tmp_path / "ws")
    spare = _spare(server)
    os.kill(spare, signal.SIGKILL)
    before = server.served()
    r = server.rcpc("render", RL, cwd=ws)
    assert r.returncode == 0 and not TRACEBACK.search(r.stderr.decode()), r.stderr.decode()
    assert r.stdout == server.rcpc("render", RL, cwd=ws, served=False).stdout
    assert server.served() == before + 1
    assert _spare(server) != spare


def _until(predicate, what: str, timeout: float = 60) -> None:
    """Wait until ``predicate()`` holds; the bound is for a hang."""
    import time

    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, what
        time.sleep(0.01)


def test_a_spare_that_dies_before_its_go_has_its_request_served_by_a_fresh_child(server, tmp_path):
    """The spare child took a request (its message, descriptors and go are in its socket) and
    died before it read its go (stopped as the request came, then killed, as the kernel's
    out-of-memory killer may kill an idle process): it ran nothing, so a child forked afresh
    runs the command, which prints, exits and writes what it does in-process (the client
    exited 137, the dead spare's status, or 1, "the build server stopped ... before the
    command ended", when the go found it dead). The request is counted once."""
    ws = workspace(tmp_path / "ws")
    spare = _spare(server)
    before = server.served()
    os.kill(spare, signal.SIGSTOP)
    try:
        proc = subprocess.Popen([RCPC, "build", RL], cwd=ws, env=server.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        _until(lambda: server.served() == before + 1, "the server never handed the request over")
    finally:
        os.kill(spare, signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    local = workspace(tmp_path / "local")
    r = server.rcpc("build", RL, cwd=local, served=False)
    assert (proc.returncode, out, err.replace(b"/ws/", b"/local/")) == (r.returncode, r.stdout, r.stderr), err
    assert proc.returncode == 0 and output_tree(ws / "rcpc-out") == output_tree(local / "rcpc-out")
    assert server.served() == before + 1
    assert f"pid {spare} (rcpc build) ended before its go" in Path(server.log()).read_text()


def test_an_interrupt_reaches_the_child_that_took_over_the_request(server, tmp_path):
    """Ctrl-C of the client while its spare, which took the request, is dead before its go:
    the child that takes the request over is interrupted too (the client forwards each
    signal that came to each child the server names): it ends without its go (the test
    hook ``served`` holds it until the signal comes, if it comes after the child let signals
    through) and the client exits 130 as in-process, nothing written."""
    ws = workspace(tmp_path / "ws")
    spare = _spare(server)
    before = server.served()
    report_r, report_w = os.pipe()
    go_r, go_w = os.pipe()
    env = {**server.env, "RCPC_TEST_STOP": "served", "RCPC_TEST_STOP_FD": str(report_w),
           "RCPC_TEST_GO_FD": str(go_r)}
    os.kill(spare, signal.SIGSTOP)
    try:
        proc = subprocess.Popen([RCPC, "build"], cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                pass_fds=(report_w, go_r))
        os.close(report_w)
        os.close(go_r)
        _until(lambda: server.served() == before + 1, "the server never handed the request over")
        proc.send_signal(signal.SIGINT)
    finally:
        os.kill(spare, signal.SIGKILL)
    try:
        out, err = proc.communicate(timeout=300)  # it ends without the go
    finally:
        os.close(go_w)
        os.close(report_r)
    assert proc.returncode == 130, err
    assert f"pid {spare} (rcpc build) ended before its go" in Path(server.log()).read_text()
    assert err.decode().splitlines()[-1] == "rcpc: interrupted; nothing was written"
    assert not TRACEBACK.search(err.decode()) and not (ws / "rcpc-out").exists()


def test_a_child_killed_after_its_go_is_not_run_again(server, tmp_path):
    """A child that took its go may have written output: killed then (held at the test hook
    ``served``), its death is the command's outcome (137, as a process killed in-process),
    never run again by another child (nothing is built)."""
    ws = workspace(tmp_path / "ws")
    before = server.served()
    w = Waiting(server, ws)
    os.kill(w.child, signal.SIGKILL)
    code, out, err = w.end()
    assert code == 128 + signal.SIGKILL, err
    assert not (ws / "rcpc-out").exists()
    server.settled()
    assert server.served() == before + 1
    assert "ended before its go" not in Path(server.log()).read_text()


def _populate_works() -> bool:
    """Whether this kernel has madvise(2) MADV_POPULATE_WRITE (Linux 5.14): asked of a page
    of a buffer (populating changes no byte)."""
    import ctypes
    import mmap

    from rcpc.server import MADV_POPULATE_WRITE

    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    buf = ctypes.create_string_buffer(2 * mmap.PAGESIZE)
    page = -(-ctypes.addressof(buf) // mmap.PAGESIZE) * mmap.PAGESIZE
    return libc.madvise(page, mmap.PAGESIZE, MADV_POPULATE_WRITE) == 0


def test_populate_makes_memory_private_and_stops_when_asked():
    """:func:`rcpc.server.populate` breaks copy-on-write in a forked child (its pages become
    private: ``Private_Dirty`` of ``/proc/self/smaps_rollup``), and does nothing once the
    request has come; on a kernel without MADV_POPULATE_WRITE it does nothing at all."""
    import ctypes

    from rcpc.server import populate

    libc = ctypes.CDLL(None, use_errno=True)
    block = bytearray(8 << 20)  # dirty memory this process shares with the child after fork
    block[::4096] = b"x" * len(block[::4096])
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            def private() -> int:
                text = Path("/proc/self/smaps_rollup").read_text()
                return int(re.search(r"^Private_Dirty:\s+(\d+) kB", text, re.M)[1])

            before = private()
            none = populate(libc, lambda: True)
            done = populate(libc, lambda: False)
            os.write(w, f"{before} {none} {done} {private()}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    before, none, done, after = map(int, os.read(r, 100).split())
    os.close(r)
    assert status == 0 and none == 0
    if _populate_works():
        assert done >= len(block) and after - before >= len(block) // 1024, (before, after)
    else:
        assert done == 0


def _waits_for_reply(pid: int, timeout: float = 60) -> None:
    """Wait until process ``pid`` (a client) sleeps reading its Unix socket: its request is
    sent. The bound is for a hang."""
    import time

    end = time.monotonic() + timeout
    while "unix_stream" not in Path(f"/proc/{pid}/wchan").read_text():
        assert time.monotonic() < end, "the client never sent its request"
        time.sleep(0.01)


def test_a_request_that_finds_its_spare_dead_does_not_stall_the_server(server, tmp_path):
    """The spare child died and a request came before the server noticed: both are in one
    wake-up (the server was stopped meanwhile). The request forks its own child, whose pidfd
    takes the number of the dead spare's; the dead spare's event, still to be handled in that
    wake-up, must not be taken for the new child's end (the server then sat in waitpid until
    that command had ended, serving nobody: a `rcpc render | rcpc validate -` through it
    would deadlock)."""
    ws = workspace(tmp_path / "ws")
    pid, _ = server.status()
    spare = _spare(server)
    os.kill(pid, signal.SIGSTOP)
    try:
        os.kill(spare, signal.SIGKILL)
        assert _gone(spare)  # a zombie: the server, stopped, cannot reap it yet
        report_r, report_w = os.pipe()
        go_r, go_w = os.pipe()
        env = {**server.env, "RCPC_TEST_STOP": "served", "RCPC_TEST_STOP_FD": str(report_w),
               "RCPC_TEST_GO_FD": str(go_r)}
        proc = subprocess.Popen([RCPC, "render", RL], cwd=ws, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, pass_fds=(report_w, go_r))
        os.close(report_w)
        os.close(go_r)
        _waits_for_reply(proc.pid)
    finally:
        os.kill(pid, signal.SIGCONT)
    try:
        with os.fdopen(report_r) as reports:
            point, child = reports.readline().split()
        assert point == "served"
        status = subprocess.run([RCPC, "server", "status"], env=server.env, capture_output=True, timeout=60)
        assert b"1 running" in status.stdout, status  # answered while the command waits
    finally:
        os.close(go_w)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and not TRACEBACK.search(err.decode()), err


def test_stopping_the_server_ends_its_spare_child(server):
    spare = _spare(server)
    server.rcpc("server", "stop")
    assert _gone(spare)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_is_forwarded_to_the_child(server, tmp_path, sig):
    ws = workspace(tmp_path / "ws")
    w = Waiting(server, ws)
    w.proc.send_signal(sig)
    assert _gone(w.child)  # it ended without the go
    code, out, err = w.end()
    assert code == 130, err
    assert err.splitlines()[-1] == "rcpc: interrupted; nothing was written"
    assert not TRACEBACK.search(err)
    assert not (ws / "rcpc-out").exists()


def test_a_client_killed_outright_has_its_child_terminated(server, tmp_path):
    ws = workspace(tmp_path / "ws")
    w = Waiting(server, ws)
    w.proc.kill()
    w.proc.wait(timeout=60)
    assert _gone(w.child)
    w.end()
    assert server.status()[0] is not None  # the server goes on


def test_a_server_killed_outright_is_reported_by_its_client(server, tmp_path):
    ws = workspace(tmp_path / "ws")
    pid, _ = server.status()
    w = Waiting(server, ws)
    os.kill(pid, signal.SIGKILL)
    assert _gone(w.child)  # it ends with its server
    code, out, err = w.end()
    assert code == 1, err
    assert err.splitlines()[-1].startswith("rcpc: the build server stopped (")
    assert not TRACEBACK.search(err)


def test_concurrent_clients_each_have_their_own_child(server, tmp_path):
    ws = workspace(tmp_path / "ws")
    before = server.served()
    a = Waiting(server, ws, ("render", RL))
    b = Waiting(server, ws, ("render", RL, "--variant", "tuned"))
    assert a.child != b.child
    assert server.status()[1] == before + 2
    ra, rb = a.end(), b.end()
    assert (ra[0], rb[0]) == (0, 0)
    assert ra[1] == server.rcpc("render", RL, cwd=ws, served=False).stdout.decode()
    assert rb[1] == server.rcpc("render", RL, "--variant", "tuned", cwd=ws, served=False).stdout.decode()


def test_the_server_keeps_no_descriptor_of_its_starter(tmp_path):
    """``rcpc server start`` detaches the server: it holds none of its starter's descriptors
    but the standard ones it replaces (a pipe inherited from whatever ran ``rcpc server start``,
    say a harness that waits for end of file on it, a ``make`` job server's, stayed open in the
    server, and in every child of it, for as long as it ran: up to its idle timeout)."""
    s = Server(tmp_path / "srv")
    r, w = os.pipe()
    try:
        started = subprocess.run([RCPC, "server", "start"], env=s.env, capture_output=True, timeout=120,
                                 pass_fds=(w,))
        assert started.returncode == 0, started.stderr
        os.close(w)
        w = None
        readable, _, _ = __import__("select").select([r], [], [], 60)  # the bound is for a hang
        assert readable and os.read(r, 1) == b""  # end of file: no one else holds the write end
    finally:
        if w is not None:
            os.close(w)
        os.close(r)
        s.stop()


def test_start_stop_status(server):
    pid, _ = server.status()
    again = server.rcpc("server", "start")
    assert again.returncode == 0 and f"already running (pid {pid})".encode() in again.stderr
    stopped = server.rcpc("server", "stop")
    assert stopped.returncode == 0 and f"stopped (pid {pid})".encode() in stopped.stderr
    assert _gone(pid)  # `stop` returned when the server closed its connection, exiting
    status = server.rcpc("server", "status")
    assert status.returncode == 1 and b"no build server is running" in status.stdout


def test_the_server_exits_when_idle(tmp_path):
    s = Server(tmp_path / "srv")
    started = s.start("--idle-timeout", "0.2")
    pid = int(re.search(rb"started \(pid (\d+)", started.stderr)[1])
    try:
        assert pid is not None and _gone(pid, 120)
        assert s.status() == (None, 0)
    finally:
        s.stop()


def test_an_edit_loop_through_the_server_is_the_edit_loop_in_process(server):
    """Each child reports the AST cache entries it used and the server keeps them in memory
    for the next (its log says so): a run of edits (a flag, a syntax error, its fix, a
    library, back to an earlier text) builds, through the server, what it builds in-process."""
    recipe, library = Path("recipes/rl/qwen35_397b_256_v7x.rcp"), next((REPO / "recipes").rglob("lib/*.rcp"))
    library = library.relative_to(REPO)
    base = (REPO / recipe).read_text()
    flag = re.search(r'"ragged_buffer_factor": [0-9.]+,', base)[0]
    edits = [(recipe, base.replace(flag, '"ragged_buffer_factor": 3.5,')),
             (recipe, base.replace(flag, '"ragged_buffer_factor": [,')),
             (recipe, base.replace(flag, '"ragged_buffer_factor": 4.5,')),
             (library, (REPO / library).read_text() + "\n_UNUSED_BY_ANYONE = 1\n"),
             (recipe, base.replace(flag, '"ragged_buffer_factor": 3.5,'))]
    runs, caches = [], []
    for served in (False, True):
        ws = workspace(server.root / "ws")
        shutil.rmtree(server.cache, ignore_errors=True)
        seen = []
        for path, text in edits:
            (ws / path).write_text(text)
            r = server.rcpc("build", RL, "-j", "1", cwd=ws, served=served)
            assert not TRACEBACK.search(r.stderr.decode()), r.stderr.decode()
            seen.append(outcome(r, ws))
        runs.append(seen)
        server.settled()  # the server has stored what the last child handed over
        ast = server.cache / "rcpc" / "ast"
        caches.append({p.relative_to(ast).as_posix(): p.read_bytes() if p.parent.name == "last" else None
                       for p in ast.rglob("*") if p.is_file()})
    assert runs[0] == runs[1]
    assert [c[0] for c in runs[0]] == [0, 1, 0, 0, 0]
    assert "AST and validation cache entries in memory" in Path(server.log()).read_text()
    assert caches[0] and caches[1] == caches[0]  # the parses the child handed over were stored


def test_validation_results_are_kept_in_the_servers_memory(server, tmp_path):
    """Each child reports the validation cache entries with no findings it found or stored;
    the server reads them back and keeps them, so the next child does not validate those
    renders again, even with the cache's files gone (it stores only what is new), and builds
    what an in-process build makes."""
    ws = workspace(tmp_path / "ws")
    recipe = ws / "recipes" / f"{RL}.rcp"
    assert server.rcpc("build", RL, cwd=ws).returncode == 0
    server.settled()
    schema = server.cache / "rcpc" / "schema"
    first = {p.name for p in schema.rglob("*") if p.is_file()}
    assert first
    shutil.rmtree(schema)
    recipe.write_text(re.sub(r'"ragged_buffer_factor": [0-9.]+,', '"ragged_buffer_factor": 6.5,', recipe.read_text()))
    r = server.rcpc("build", RL, cwd=ws)
    assert r.returncode == 0, r.stderr.decode()
    server.settled()
    again = {p.name for p in schema.rglob("*") if p.is_file()}
    assert again and not again & first  # the trainer's new renders only
    local = workspace(tmp_path / "local")
    (local / "recipes" / f"{RL}.rcp").write_text(recipe.read_text())
    assert server.rcpc("build", RL, cwd=local, served=False).returncode == 0
    assert output_tree(local / "rcpc-out") == output_tree(ws / "rcpc-out")
    assert "AST and validation cache entries in memory" in Path(server.log()).read_text()


@contextlib.contextmanager
def _server_here(tmp_path):
    """A :class:`rcpc.server.Server` made in this (test) process, listening in ``tmp_path``,
    never serving; its socket, lock and wake-up pipe closed after."""
    import gc

    from rcpc import server as srv

    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    where = {"dir": str(run_dir), "socket": str(run_dir / "s.sock"), "lock": str(run_dir / "lock"),
             "log": str(run_dir / "log")}
    threshold = gc.get_threshold()
    s = srv.Server(where, 60)
    gc.unfreeze()  # the server's start froze this (test) process's objects and raised its threshold
    gc.set_threshold(*threshold)
    try:
        yield s
    finally:
        s.listener.close()
        for fd in (s.lock, s.wake_r, s.wake_w):
            os.close(fd)


def test_a_request_that_cannot_fork_leaks_no_descriptor(tmp_path, monkeypatch):
    """The child's socket pair and pipe are closed when fork (or the pipe, or the socket
    pair) fails; the request fails alone (the accept loop answers it "refused")."""
    import socket

    from rcpc import client

    with _server_here(tmp_path) as s:
        before = sorted(os.listdir("/proc/self/fd"))
        for failing in ("fork", "pipe", "socketpair"):  # the socket pair is made first, then the pipe
            def fail(*args):
                raise OSError(11, "Resource temporarily unavailable")

            a, b = socket.socketpair()
            monkeypatch.setattr(socket if failing == "socketpair" else os, failing, fail)
            message = (client.PROTOCOL, "run", client.identity(), client.interpreter(), "rcpc", ["build"],
                       os.getcwdb(), dict(os.environb), 0o022, [], [0, 1, 2])
            fds = [os.dup(0), os.dup(1), os.dup(2)]
            with pytest.raises(OSError):
                s._request(a, message, fds)
            monkeypatch.undo()
            for fd in fds:  # the caller (_accept) closes what it received
                os.close(fd)
            a.close()
            b.close()
            assert sorted(os.listdir("/proc/self/fd")) == before, failing


@pytest.mark.parametrize("again", [False, True], ids=["no-fork", "second-death"])
def test_a_request_no_child_can_take_is_declined_and_its_client_runs_it(tmp_path, monkeypatch, again):
    """A request whose child ended before its go, when no child can be forked for it (or it
    was given to another child already, which ended so too), is declined: the client, told
    a pid before, gets "refused" and runs the command in-process (:func:`rcpc.client.serve`
    returns None); the server closes the client's descriptors it held."""
    import select
    import socket

    from rcpc import client, server as srv

    ours, theirs = socket.socketpair()
    with _server_here(tmp_path) as s:
        s.poll = select.poll()
        held = [os.dup(0), os.dup(1), os.dup(2)]
        request = srv._Request(ours, "build", ("run",), held[:])
        request.again = again

        def fail(*args):
            raise OSError(11, "Resource temporarily unavailable")

        monkeypatch.setattr(s, "_fork_given", fail)
        assert s._unstarted(request)
        s._again(request)
        reply = client.read_message(theirs)
        assert reply[0] == "refused" and request.conn is None and request.fds == []
        assert ours.fileno() == -1  # closed, and so are the client's descriptors
        for fd in held:
            with pytest.raises(OSError):
                os.fstat(fd)
    theirs.close()
    server_end, client_end = socket.socketpair()  # the client's side: a pid, then "refused"
    try:
        server_end.sendall(client.frame(("pid", 2 ** 22 + 1)) + client.frame(("refused", "no child")))
        assert client._exchange(client_end, client.frame(("run",)), [0, 1, 2]) is None
    finally:
        server_end.close()
        client_end.close()


@pytest.mark.parametrize("runtime", [False, True])
@pytest.mark.parametrize("op, code", [("status", 1), ("stop", 0)])
def test_status_and_stop_where_no_server_ever_ran_say_none_is_running(tmp_path, op, code, runtime):
    """A fresh machine (a new user's first `rcpc server status`): the server's directory does
    not exist yet. That is "no build server is running", not an error telling the user to
    remove a directory that is not there; and nothing is created."""
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), HOME=str(tmp_path / "home"))
    if runtime:
        env["XDG_RUNTIME_DIR"] = str(tmp_path / "run")
        (tmp_path / "run").mkdir(mode=0o700)
    r = subprocess.run([sys.executable, "-m", "rcpc", "server", op], env=env, capture_output=True, timeout=60)
    assert r.returncode == code and b"no build server is running" in r.stdout + r.stderr, r
    assert b"error" not in r.stderr and b"Traceback" not in r.stderr
    assert not (tmp_path / "cache").exists() and not (tmp_path / "run" / "rcpc").exists()


@pytest.mark.parametrize("args, broken, code", [(["check"], True, 1), (["build"], True, 1), (["build"], False, 0)],
                         ids=["failing-check", "failing-build", "build"])
def test_a_reader_gone_before_the_first_write_keeps_the_exit_code_served_and_in_process(server, args, broken, code):
    """``rcpc check 2>&1 | head`` exited 0 on a failed check. With the reader of stdout and
    stderr gone before rcpc starts (the read end closed: no timing involved), the exit code
    is the command's own, and the output directory is the one an uncut run leaves, served or
    not (tests/test_no_traceback.py cuts at every point, in-process)."""
    seen = []
    for served in (False, True):
        ws = workspace(server.root / "ws", broken)
        shutil.rmtree(server.cache, ignore_errors=True)
        before = server.served()
        env = {**server.env, **({} if served else {"RCPC_NO_SERVER": "1"})}
        read, write = os.pipe()
        os.close(read)
        try:
            r = subprocess.run([*server.launcher, *args], cwd=ws, env=env, stdout=write, stderr=write, timeout=300)
        finally:
            os.close(write)
        assert server.served() == before + served
        server.settled()
        seen.append((r.returncode, files(ws)))
    uncut = both(server, args, broken)[0]
    assert seen[0] == seen[1] == (code, uncut[3])
