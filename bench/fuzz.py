#!/usr/bin/env python3
"""Fuzz rcpc for a fixed wall time with the generators of tests/test_fuzz.py.

Usage: python bench/fuzz.py [--minutes N] [--only KIND] [--strict] [--seed S]
                            [--hang-seconds S] [--process-every N]

Alternates batches of four kinds of input:

* ``generated`` recipes (random programs drawn from the grammar) and ``mutated`` bundled
  recipes (a grammar-aware mutator: tokens of each shape deleted, duplicated, swapped,
  replaced, lines moved, brackets and quotes inserted, a stray byte), each compiled in-process
  and checked by ``tests/test_fuzz.py``'s property: it compiles (and every render ends in
  exactly one newline, no CR) or raises CompileError whose diagnostics have valid codes and
  spans; any other exception, a compile running longer than the hang limit or a compile
  slower than the hypothesis deadline is a failure;
* ``cli-mutated`` and ``cli-generated``: the same inputs through every command (``check``,
  ``build``, ``render``, ``fmt --check``, ``fmt``, then ``build`` and ``check`` on warm
  caches) under two hash seeds (``PYTHONHASHSEED`` 1 and 2), checked by
  :mod:`fuzzcli`: no traceback, no hang past ``--hang-seconds``, the same results under both
  seeds (and as whole ``rcpc`` processes, every ``--process-every``-th input), no file
  touched outside the output directory.

A failing input is shrunk by hypothesis and saved, with its exception and traceback, under
``bench/fuzz-failures/<time>-<kind>-<signature>/`` (one directory per distinct failure).
Shrinking a failure gets at most SHRINK_SECONDS (past the end of the run too). Known bugs
listed in ``test_fuzz.TOLERATED`` are counted but are not failures unless --strict.

Prints the number of inputs tried per kind (and commands run) and exits 1 when anything
failed. Run from anywhere with rcpc, pytest and hypothesis installed.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import re
import sys
import tempfile
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings  # noqa: E402

import test_fuzz as F  # noqa: E402
from fuzzcli import CliFuzz  # noqa: E402

FAILURES = REPO / "bench" / "fuzz-failures"
BATCH = 500        # examples per hypothesis run; the clock is checked between runs and inside
SHRINK_SECONDS = 60  # time to shrink one failure (past it, further shrink attempts pass)


CLI_BATCH = 20     # inputs per hypothesis run of the command-line kinds (seconds each)
BASE = {"rcp.toml": F.RCP_TOML.encode(), F.SCHEMA_PATH: F.SCHEMA_YML.encode()}


class Fuzzer:
    def __init__(self, root: Path, deadline: float, strict: bool, deadline_ms: int, seed_: int | None,
                 hang_seconds: float = 60, process_every: int = 10):
        self.workspaces = {"generated": F.FuzzWorkspace(root / "generated"),
                           "mutated": F.FuzzWorkspace(root / "mutated")}
        self.cli = CliFuzz(root / "cli", BASE, hang_seconds, process_every)
        self.strategies = {"generated": F.generated_cases(), "mutated": F.mutated_cases(),
                           "cli-generated": F.generated_cases(), "cli-mutated": F.mutated_cases()}
        self.deadline = deadline
        self.tolerated = frozenset() if strict else frozenset(F.TOLERATED)
        self.deadline_ms = deadline_ms
        self.seed = seed_
        self.batches = 0
        self.counts = {k: collections.Counter() for k in self.strategies}
        self.failures: dict[str, Path] = {}   # signature -> saved directory

    def _check(self, kind: str, case) -> str:
        if kind.startswith("cli-"):
            self.cli.check(case.files, case.target)
            return "ok"
        return F.check_case(self.workspaces[kind], case)

    def batch(self, kind: str) -> None:
        counts = self.counts[kind]
        state = {"shrinking": False, "last": None, "current": None, "shrink_until": 0.0}
        cli = kind.startswith("cli-")

        @settings(max_examples=CLI_BATCH if cli else BATCH, deadline=None if cli else self.deadline_ms,
                  database=None, verbosity=Verbosity.quiet,
                  phases=[Phase.generate, Phase.shrink], report_multiple_bugs=False, print_blob=False,
                  suppress_health_check=list(HealthCheck))
        @given(self.strategies[kind])
        def prop(case):
            now = time.monotonic()
            if now > (state["shrink_until"] if state["shrinking"] else self.deadline):
                return
            counts["shrink steps" if state["shrinking"] else "tried"] += 1
            case = state["current"] = case._replace(tolerated=self.tolerated)
            try:
                outcome = self._check(kind, case)
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt):
                    raise
                if not state["shrinking"]:
                    state["shrinking"] = True
                    state["shrink_until"] = time.monotonic() + SHRINK_SECONDS
                state["last"] = (case, exc, traceback.format_exc())
                raise
            if not state["shrinking"]:
                counts[outcome] += 1

        if self.seed is not None:
            prop = seed(self.seed + self.batches)(prop)
        self.batches += 1
        try:
            prop()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # hypothesis re-raises the shrunk failure (or its own error)
            if state["last"] is not None:  # the last input that raised: the smallest found
                case, cause, tb = state["last"]
            else:  # raised by hypothesis itself (DeadlineExceeded): the last input run
                case, cause, tb = state["current"], exc, traceback.format_exc()
            self.save(kind, case, cause, tb)

    def save(self, kind: str, case, exc: BaseException, tb: str) -> None:
        sig = signature(exc, tb)
        self.counts[kind]["failures"] += 1
        if sig in self.failures:
            print(f"  again: {sig} (saved in {self.failures[sig].relative_to(REPO)})", flush=True)
            return
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        out = FAILURES / f"{stamp}-{kind}-{hashlib.sha1(sig.encode()).hexdigest()[:8]}"
        out.mkdir(parents=True, exist_ok=True)
        target = "?"
        if case is not None:
            target = case.target
            for rel, data in case.files.items():
                if rel in F.BUNDLED and data == F.BUNDLED[rel].encode():
                    continue  # unchanged bundled file: the repository has it
                p = out / "workspace" / rel
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(data)
        (out / "error.txt").write_text(
            f"kind: {kind}\nsignature: {sig}\ntarget: {target}\n"
            f"exception: {type(exc).__name__}: {exc}\n\n"
            "Reproduce: copy workspace/ over a workspace with the bundled recipes/ (rcp.toml:\n"
            f"{F.RCP_TOML.strip()}) and compile {target} with Compiler(Workspace.find(root)).build(path),\n"
            "or feed the files to tests/test_fuzz.py check_input(); for a cli-* kind, run the commands\n"
            "of bench/fuzzcli.py COMMANDS in it under PYTHONHASHSEED=1 and 2.\n\n" + tb,
            encoding="utf-8")
        self.failures[sig] = out
        print(f"  FAILURE {sig}\n    saved in {out.relative_to(REPO)}", flush=True)

    def report(self, final: bool = False) -> None:
        parts = []
        for kind, c in self.counts.items():
            outcomes = ", ".join(f"{k} {v}" for k, v in sorted(c.items()) if k != "tried")
            parts.append(f"{kind}: {c['tried']} tried ({outcomes})")
        parts.append(f"commands run {self.cli.commands} ({self.cli.processes} as whole processes)")
        print(("done. " if final else "") + "; ".join(parts), flush=True)


def signature(exc: BaseException, tb: str) -> str:
    """A failure's identity for deduplication: exception type and the innermost rcpc frame,
    or the assertion's message with numbers and quoted text removed."""
    frames = re.findall(r'File "([^"]+)", line (\d+)', tb)
    inner = [f"{Path(f).name}:{n}" for f, n in frames if "/rcpc/" in f.replace("\\", "/")]
    if isinstance(exc, AssertionError) or not inner:
        msg = str(exc).splitlines()[0] if str(exc) else ""
        msg = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "_", msg)[:80]
        return f"{type(exc).__name__}: {msg}"
    return f"{type(exc).__name__} at {inner[-1]}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="wall time to fuzz (default 10)")
    ap.add_argument("--only", choices=["generated", "mutated", "cli-generated", "cli-mutated", "cli", "compile"],
                    help="one kind of input only (cli: both command-line kinds; compile: the other two)")
    ap.add_argument("--hang-seconds", type=float, default=60, help="a command still running after this hangs")
    ap.add_argument("--process-every", type=int, default=10,
                    help="run every N-th command-line input as whole rcpc processes too (0: never)")
    ap.add_argument("--strict", action="store_true", help="known bugs (test_fuzz.TOLERATED) fail too")
    ap.add_argument("--deadline-ms", type=int, default=F.DEADLINE_MS, help="slowest compile allowed")
    ap.add_argument("--seed", type=int, help="seed the batches (reproducible run)")
    args = ap.parse_args()
    start = time.monotonic()
    deadline = start + args.minutes * 60
    kinds = {None: ["generated", "cli-mutated", "mutated", "cli-generated"], "cli": ["cli-mutated", "cli-generated"],
             "compile": ["generated", "mutated"]}.get(args.only, [args.only])
    with tempfile.TemporaryDirectory(prefix="rcpc-fuzz-") as tmp:
        fuzzer = Fuzzer(Path(tmp), deadline, args.strict, args.deadline_ms, args.seed, args.hang_seconds,
                        args.process_every)
        next_report = start + 60
        i = 0
        try:
            while time.monotonic() < deadline:
                fuzzer.batch(kinds[i % len(kinds)])
                i += 1
                if time.monotonic() >= next_report:
                    fuzzer.report()
                    next_report += 60
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        finally:
            fuzzer.cli.close()
        fuzzer.report(final=True)
        elapsed = time.monotonic() - start
        total = sum(c["tried"] for c in fuzzer.counts.values())
        print(f"{total} inputs in {elapsed:.0f} s ({total / max(elapsed, 1e-9):.1f}/s); "
              f"{len(fuzzer.failures)} distinct failure(s)", flush=True)
        return 1 if fuzzer.failures else 0


if __name__ == "__main__":
    sys.exit(main())
