"""Command-line fuzzing for bench/fuzz.py: every command (``check``, ``build``, ``render``,
``fmt --check``, ``fmt``, and ``build``/``check`` again on warm caches) over mutated and
generated recipes, under two hash seeds.

Each seed has a long-lived *server* process (``PYTHONHASHSEED`` set; its own cache directory)
that runs commands in-process as the ``rcpc`` script does (:func:`rcpc.__main__.run`), so an
input costs milliseconds, not a Python start-up per command; every ``--process-every``-th input
also runs as real ``rcpc`` processes, whose results must equal the servers'. For each input
the workspace is copied once per seed and the commands run in order. The property:

* no traceback: no exception escapes a command, and no output holds ``Traceback``;
* no hang: a command answers within ``--hang-seconds`` (the server is killed and restarted);
* exit code 0, 1 or 2 (usage), and every located diagnostic names a file of the input;
* determinism: both seeds give the same exit codes, stdout, stderr (the workspace path
  aside) and files;
* nothing touched outside the output directory: the workspace tree is snapshotted before and
  after; only ``fmt`` may change files, and only ``.rcp`` files under ``recipes/``;
* ``fmt`` never changes a render: the build after it writes what the build before it wrote.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

SEEDS = ("1", "2")
COMMANDS = [["check", "-j", "1"], ["build", "-o", "out", "-j", "1"], ["render", "{target}"],
            ["fmt", "--check"], ["fmt"], ["build", "-o", "out", "-j", "1"], ["check", "-j", "1"]]
REPO = Path(__file__).resolve().parents[1]


class Failure(AssertionError):
    """The property failed for an input; ``str()`` says how."""


def _serve() -> None:  # the server's main loop: one JSON request a line on stdin
    import contextlib
    import io
    import signal

    from rcpc.__main__ import run

    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    reply = sys.stdout
    for line in sys.stdin:
        req = json.loads(line)
        out, err = io.StringIO(), io.StringIO()
        exc = None
        code = None
        try:
            os.chdir(req["cwd"])
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = run(req["argv"])
        except SystemExit as e:  # argparse usage errors
            code = e.code
        except BaseException:  # noqa: BLE001 - any exception is the finding
            exc = traceback.format_exc()
        finally:
            for s, h in handlers.items():
                signal.signal(s, h)
        reply.write(json.dumps({"code": code, "out": out.getvalue(), "err": err.getvalue(), "exc": exc}) + "\n")
        reply.flush()


class Server:
    """A process with one hash seed that runs rcpc commands in-process."""

    def __init__(self, seed: str, cache: Path, hang_seconds: float):
        self.seed, self.cache, self.hang_seconds = seed, cache, hang_seconds
        self.proc = None

    def _start(self) -> None:
        env = {**os.environ, "PYTHONHASHSEED": self.seed, "XDG_CACHE_HOME": str(self.cache)}
        env.pop("RCPC_NO_CACHE", None)
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__)), "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, text=True, cwd=REPO)

    def run(self, cwd: Path, argv: list[str]) -> dict:
        """{"code", "out", "err", "exc"}; ``exc`` is "hang" when no answer came in time."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write(json.dumps({"cwd": str(cwd), "argv": argv}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], self.hang_seconds)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.close()
            return {"code": None, "out": "", "err": "", "exc": "hang" if not ready else "server died"}
        return json.loads(line)

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def process_run(seed: str, cache: Path, cwd: Path, argv: list[str], hang_seconds: float) -> dict:
    """The same as :meth:`Server.run`, as a whole ``rcpc`` process."""
    env = {**os.environ, "PYTHONHASHSEED": seed, "XDG_CACHE_HOME": str(cache)}
    env.pop("RCPC_NO_CACHE", None)
    try:
        r = subprocess.run([sys.executable, "-m", "rcpc", *argv], cwd=cwd, env=env, capture_output=True,
                           timeout=hang_seconds)
    except subprocess.TimeoutExpired:
        return {"code": None, "out": "", "err": "", "exc": "hang"}
    return {"code": r.returncode, "out": r.stdout.decode("utf-8", "surrogateescape"),
            "err": r.stderr.decode("utf-8", "surrogateescape"), "exc": None}


def snapshot(root: Path) -> dict:
    """Every file and symlink under ``root``: relative path → bytes (or link target)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            out[p.relative_to(root).as_posix()] = ("->", os.readlink(p))
        elif p.is_file():
            out[p.relative_to(root).as_posix()] = p.read_bytes()
    return out


def _outside_output(tree: dict) -> dict:
    return {k: v for k, v in tree.items() if not k.startswith(("out/", ".out."))}


class CliFuzz:
    """Runs inputs through every command under both seeds; counts outcomes."""

    def __init__(self, root: Path, base: dict, hang_seconds: float, process_every: int):
        self.root = root
        self.base = base  # files every input is written over: {path: bytes}
        self.hang_seconds = hang_seconds
        self.process_every = process_every
        self.servers = {s: Server(s, root / f"cache-{s}", hang_seconds) for s in SEEDS}
        self.inputs = 0
        self.commands = 0
        self.processes = 0

    def close(self) -> None:
        for s in self.servers.values():
            s.close()

    def check(self, files: dict, target: str) -> None:
        """Run every command on the input ``files`` (path → bytes) written over the files of
        :attr:`base` (rcp.toml, schema); raise :class:`Failure` on any violation of the
        property."""
        base = self.base
        self.inputs += 1
        whole = self.process_every and self.inputs % self.process_every == 0
        results = {}
        for seed in SEEDS:
            for how in (("server", "process") if whole else ("server",)):
                ws = self.root / f"ws-{seed}-{how}"
                shutil.rmtree(ws, ignore_errors=True)
                for rel, data in {**base, **files}.items():
                    p = ws / rel
                    p.parent.mkdir(parents=True, exist_ok=True)
                    p.write_bytes(data)
                results[(seed, how)] = self._commands(seed, how, ws, files, target)
        first = results[(SEEDS[0], "server")]
        for key, got in results.items():
            if got != first:
                diff = next(f"{a[0]}: {a[1:]!r:.600} vs {b[1:]!r:.600}" for a, b in zip(first, got) if a != b)
                raise Failure(f"non-determinism: seed {SEEDS[0]} (server) and seed {key[0]} ({key[1]}) differ "
                              f"at {diff}")

    def _commands(self, seed: str, how: str, ws: Path, files: dict, target: str) -> list:
        out = []
        for argv in COMMANDS:
            argv = [a.replace("{target}", target) for a in argv]
            before = snapshot(ws)
            if how == "server":
                r = self.servers[seed].run(ws, argv)
            else:
                r = process_run(seed, self.root / f"pcache-{seed}", ws, argv, self.hang_seconds)
                self.processes += 1
            self.commands += 1
            after = snapshot(ws)
            shown = " ".join(argv)
            if r["exc"] == "hang":
                raise Failure(f"hang: rcpc {shown} still running after {self.hang_seconds} s")
            if r["exc"]:
                raise Failure(f"traceback: rcpc {shown}\n{r['exc']}")
            text = r["out"] + r["err"]
            if "Traceback" in text:
                raise Failure(f"traceback printed by rcpc {shown}\n{r['err'][-3000:]}")
            if "a bug in rcpc fmt" in text:
                raise Failure(f"rcpc {shown}: {r['err'][-2000:]}")
            if r["code"] not in (0, 1, 2):
                raise Failure(f"exit {r['code']}: rcpc {shown}\n{r['err'][-2000:]}")
            for line in r["err"].splitlines():
                if "error[" in line and not line.startswith("error[") and ": error[" in line:
                    path = line.split(":", 1)[0]
                    if path not in files and path not in self.base and not path.startswith("<"):
                        raise Failure(f"a diagnostic at a file that is not an input: {line}")
            changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
            if argv[0] == "fmt" and len(argv) == 1:
                bad = {k for k in changed if not (k.startswith("recipes/") and k.endswith(".rcp"))}
            else:
                bad = set(_outside_output({k: None for k in changed}))
            if bad:
                raise Failure(f"rcpc {shown} changed files outside its output: {sorted(bad)[:5]}")
            tree = {k: v for k, v in after.items() if not k.startswith(".out.")}
            out.append((shown, r["code"], r["out"], r["err"].replace(str(ws), "<ws>"), tree))
        renders = [(code, {k: v for k, v in tree.items() if k.startswith("out/")})
                   for shown, code, _, _, tree in out if shown.startswith("build")]
        if renders[0] != renders[-1]:  # the build after fmt: fmt never changes a render
            raise Failure("rcpc fmt changed what rcpc build writes (or whether it fails)")
        return out


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:
    _serve()
