#!/usr/bin/env python3
"""Start-up benchmark: `rcpc build` of the RL recipe as a whole process against
`python -c pass`, measured in the same run, interleaved (A B A B ...).

Usage: python bench/startup.py [--runs N] [--recipe NAME]
Prints the median wall time of each command and the median of the pairwise ratios, and
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


def timed(cmd: list[str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
    for cmd in (build, baseline):  # warm-up: page cache, grammar cache
        timed(cmd, str(repo))
    a, b = [], []
    for _ in range(args.runs):
        a.append(timed(build, str(repo)))
        b.append(timed(baseline, str(repo)))
    shutil.rmtree(out, ignore_errors=True)
    ratios = [x / y for x, y in zip(a, b)]
    result = {
        "command": f"rcpc build {args.recipe}", "baseline": "python -c pass", "runs": args.runs,
        "median_s": statistics.median(a), "baseline_median_s": statistics.median(b),
        "median_ratio": statistics.median(ratios),
        "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
    }
    print(f"rcpc build {args.recipe}: median {result['median_s'] * 1000:.1f} ms")
    print(f"python -c pass: median {result['baseline_median_s'] * 1000:.1f} ms")
    print(f"ratio (pairwise median): {result['median_ratio']:.2f}x")
    dest = repo / "bench" / "results" / "startup.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
