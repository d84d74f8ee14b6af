#!/usr/bin/env python3
"""Formatter benchmark: `rcpc fmt --check` against a cold `rcpc check` of the same workspace,
measured in the same run, interleaved (check, fmt, check -j 1, fmt -j 1, check, ...).

The workspace is the peers benchmark's (bench/peers.py): N recipes shaped like the bundled RL
recipe, loading one library, formatted first so `fmt --check` finds nothing to change (the
common case in CI: every file parsed and printed, none written). `check` runs with the build
cache off (`RCPC_NO_CACHE=1`): it parses, evaluates, emits, checks contracts and lints.
Target: `fmt --check` no slower than a cold `check` (both with the default `-j auto`).

Usage: python bench/fmt.py [--sizes 100,1000] [--runs 3]
Prints the median wall time of each command and the median of the per-round ratios
fmt / check, and writes bench/results/fmt.json. Run from the repository root, rcpc installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"


def _peers():
    spec = importlib.util.spec_from_file_location("peers", REPO / "bench" / "peers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(cmd: list, cwd: Path, env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    rcpc = shutil.which("rcpc") or str(Path(sys.executable).with_name("rcpc"))
    if not Path(rcpc).exists():
        sys.exit("rcpc is not installed (pip install -e .)")
    peers = _peers()
    base = Path(tempfile.mkdtemp(prefix="rcpc-fmt-bench-"))
    env = {**os.environ, "RCPC_NO_CACHE": "1", "XDG_CACHE_HOME": str(base / "xdg-cache")}
    commands = {
        "rcpc check": [rcpc, "check"],
        "rcpc fmt --check": [rcpc, "fmt", "--check"],
        "rcpc check -j 1": [rcpc, "check", "-j", "1"],
        "rcpc fmt --check -j 1": [rcpc, "fmt", "--check", "-j", "1"],
    }
    results: dict = {"runs": args.runs, "medians_s": {}, "ratio_fmt_over_check": {}, "ratio_fmt_over_check_j1": {},
                     "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                 "platform": platform.platform()}}
    try:
        for n in [int(x) for x in args.sizes.split(",") if x]:
            ws = base / f"n{n}"
            peers.write_rcpc(ws, [peers.spec(k) for k in range(n)])
            subprocess.run([rcpc, "fmt", "recipes"], cwd=ws, env=env, check=True, stdout=subprocess.DEVNULL)
            for cmd in commands.values():  # warm-up: page cache, parse tables
                timed(cmd, ws, env)
            samples: dict = {name: [] for name in commands}
            for _ in range(args.runs):
                for name, cmd in commands.items():
                    samples[name].append(timed(cmd, ws, env))
            for name, s in samples.items():
                results["medians_s"].setdefault(name, {})[str(n)] = statistics.median(s)
            pairs = zip(samples["rcpc fmt --check"], samples["rcpc check"])
            results["ratio_fmt_over_check"][str(n)] = statistics.median(f / c for f, c in pairs)
            pairs = zip(samples["rcpc fmt --check -j 1"], samples["rcpc check -j 1"])
            results["ratio_fmt_over_check_j1"][str(n)] = statistics.median(f / c for f, c in pairs)
            print(f"N={n}: " + ", ".join(f"{k} {statistics.median(v):.3f} s" for k, v in samples.items())
                  + f"; fmt/check {results['ratio_fmt_over_check'][str(n)]:.2f}"
                  + f" (-j 1: {results['ratio_fmt_over_check_j1'][str(n)]:.2f})", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "fmt.json").write_text(json.dumps(results, indent=2) + "\n")
    worst = max(results["ratio_fmt_over_check"].values())
    print(f"target fmt --check <= cold check: {'met' if worst <= 1 else 'MISSED'} (worst ratio {worst:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
