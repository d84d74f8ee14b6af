#!/usr/bin/env python3
"""Fuzz rcpc for a fixed wall time with the generators of tests/test_fuzz.py.

Usage: python bench/fuzz.py [--minutes N] [--only generated|mutated] [--strict] [--seed S]

Alternates batches of generated recipes (random programs drawn from the grammar) and
mutated bundled recipes, each input checked by ``tests/test_fuzz.py``'s property: it
compiles (and every render ends in exactly one newline, no CR) or raises CompileError whose
diagnostics have valid codes and spans; any other exception, a compile running longer than
the hang limit or a compile slower than the hypothesis deadline is a failure. A failing
input is shrunk by hypothesis and saved, with its exception and traceback, under
``bench/fuzz-failures/<time>-<kind>-<signature>/`` (one directory per distinct failure).
Shrinking a failure gets at most SHRINK_SECONDS (past the end of the run too). Known bugs
listed in ``test_fuzz.TOLERATED`` are counted but are not failures unless --strict.

Prints the number of inputs tried (generated and mutated separately) and exits 1 when
anything failed. Run from anywhere with rcpc, pytest and hypothesis installed.
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

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings  # noqa: E402

import test_fuzz as F  # noqa: E402

FAILURES = REPO / "bench" / "fuzz-failures"
BATCH = 500        # examples per hypothesis run; the clock is checked between runs and inside
SHRINK_SECONDS = 60  # time to shrink one failure (past it, further shrink attempts pass)


class Fuzzer:
    def __init__(self, root: Path, deadline: float, strict: bool, deadline_ms: int, seed_: int | None):
        self.workspaces = {"generated": F.FuzzWorkspace(root / "generated"),
                           "mutated": F.FuzzWorkspace(root / "mutated")}
        self.strategies = {"generated": F.generated_cases(), "mutated": F.mutated_cases()}
        self.deadline = deadline
        self.tolerated = frozenset() if strict else frozenset(F.TOLERATED)
        self.deadline_ms = deadline_ms
        self.seed = seed_
        self.batches = 0
        self.counts = {k: collections.Counter() for k in self.workspaces}
        self.failures: dict[str, Path] = {}   # signature -> saved directory

    def batch(self, kind: str) -> None:
        ws = self.workspaces[kind]
        counts = self.counts[kind]
        state = {"shrinking": False, "last": None, "current": None, "shrink_until": 0.0}

        @settings(max_examples=BATCH, deadline=self.deadline_ms, database=None, verbosity=Verbosity.quiet,
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
                outcome = F.check_case(ws, case)
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
            "or feed the files to tests/test_fuzz.py check_input().\n\n" + tb,
            encoding="utf-8")
        self.failures[sig] = out
        print(f"  FAILURE {sig}\n    saved in {out.relative_to(REPO)}", flush=True)

    def report(self, final: bool = False) -> None:
        parts = []
        for kind, c in self.counts.items():
            outcomes = ", ".join(f"{k} {v}" for k, v in sorted(c.items()) if k != "tried")
            parts.append(f"{kind}: {c['tried']} tried ({outcomes})")
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
    ap.add_argument("--only", choices=["generated", "mutated"], help="one input source only")
    ap.add_argument("--strict", action="store_true", help="known bugs (test_fuzz.TOLERATED) fail too")
    ap.add_argument("--deadline-ms", type=int, default=F.DEADLINE_MS, help="slowest compile allowed")
    ap.add_argument("--seed", type=int, help="seed the batches (reproducible run)")
    args = ap.parse_args()
    start = time.monotonic()
    deadline = start + args.minutes * 60
    kinds = [args.only] if args.only else ["generated", "mutated"]
    with tempfile.TemporaryDirectory(prefix="rcpc-fuzz-") as tmp:
        fuzzer = Fuzzer(Path(tmp), deadline, args.strict, args.deadline_ms, args.seed)
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
        fuzzer.report(final=True)
        elapsed = time.monotonic() - start
        total = sum(c["tried"] for c in fuzzer.counts.values())
        print(f"{total} inputs in {elapsed:.0f} s ({total / max(elapsed, 1e-9):.0f}/s); "
              f"{len(fuzzer.failures)} distinct failure(s)", flush=True)
        return 1 if fuzzer.failures else 0


if __name__ == "__main__":
    sys.exit(main())
