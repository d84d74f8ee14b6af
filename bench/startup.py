#!/usr/bin/env python3
"""Start-up benchmark: `rcpc build` of the RL recipe as a whole process, cold (the build
cache off: parse, evaluate, emit) and warm (inputs and outputs unchanged: no-op replay), against
`python -c pass`, measured in the same run, interleaved (cold, warm, baseline, cold, ...).

Usage: python bench/startup.py [--runs N] [--recipe NAME]
Prints the median wall time of each command and the medians of the pairwise ratios, and
writes bench/results/startup.json. Run from the repository root with rcpc installed.
"""

from __future__ import annotations

import argparse
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


def timed(cmd: list[str], cwd: str, env=None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--recipe", default="rl/qwen35_397b_256_v7x")
    args = ap.parse_args()
    repo = Path(__file__).resolve().parents[1]
    rcpc = shutil.which("rcpc") or sys.exit("rcpc is not installed (pip install .)")
    out = tempfile.mkdtemp(prefix="rcpc-bench-")
    build = [rcpc, "build", args.recipe, "-o", out]
    baseline = [sys.executable, "-c", "pass"]
    cold_env = {**os.environ, "RCPC_NO_CACHE": "1"}
    for cmd in (build, baseline):  # warm-up: page cache, grammar cache, build cache
        timed(cmd, str(repo))
    time.sleep(2.1)  # outputs older than replay's racy-clean window (2 s), so the next run records
    timed(build, str(repo))
    cold, warm, base = [], [], []
    for _ in range(args.runs):
        cold.append(timed(build, str(repo), cold_env))
        warm.append(timed(build, str(repo)))
        base.append(timed(baseline, str(repo)))
    shutil.rmtree(out, ignore_errors=True)
    med = statistics.median
    result = {
        "command": f"rcpc build {args.recipe}", "baseline": "python -c pass", "runs": args.runs,
        "cold_median_s": med(cold), "warm_median_s": med(warm), "baseline_median_s": med(base),
        "cold_ratio": med([c / b for c, b in zip(cold, base)]),
        "warm_ratio": med([w / b for w, b in zip(warm, base)]),
        "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
    }
    print(f"rcpc build {args.recipe}, cold: median {result['cold_median_s'] * 1000:.1f} ms "
          f"({result['cold_ratio']:.1f}x python -c pass)")
    print(f"rcpc build {args.recipe}, warm: median {result['warm_median_s'] * 1000:.1f} ms "
          f"({result['warm_ratio']:.1f}x python -c pass)")
    print(f"python -c pass: median {result['baseline_median_s'] * 1000:.1f} ms")
    dest = repo / "bench" / "results" / "startup.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
