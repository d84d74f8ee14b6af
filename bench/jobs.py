#!/usr/bin/env python3
"""`-j auto` against `-j 1`: is the default ever slower than one process?

Usage (from the repository root, rcpc installed):  python bench/jobs.py [--sizes 1,10,100] [--runs 15]

For each size N, the peers benchmark's workspace of N recipes (bench/peers.py: each shaped like
the RL recipe, ~8.7 KB of source) is built cold by `rcpc build -j auto` and `rcpc build -j 1`
as whole processes, interleaved (the order rotates each round), each run into a fresh
output directory with an empty private build cache (a first build: every recipe compiled, every
file written). Records wall time and CPU time (the process and the workers it waited for,
``wait4``), and the 1-minute load average and the runnable-process count before each round.
A third mode runs `-j 1` again: its ratio to `-j 1` (an A/A control) is the noise of the
machine at that moment, against which to read auto / 1. Prints the medians and the median of
the per-round ratios auto / 1;
writes bench/results/jobs.json, then bench/results/SUMMARY.md (bench/summary.py). Target: auto / 1 <= 1.0 at every N (docs/cli.md, "Parallel
builds"), read against the control: met when auto / 1 is at most 1.0 plus the noise, half the
interquartile range of the control's per-round ratios (where `-j auto` does the same work as
`-j 1`, in one process, the median of their ratios is as likely above 1.0 as below it).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402  (the workspace generator)
import summary  # noqa: E402
from stats import machine_load, run_measured  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,10,100")
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    rcpc = shutil.which("rcpc") or sys.exit("rcpc is not installed (pip install -e .)")
    sizes = [int(x) for x in args.sizes.split(",") if x]
    base = Path(tempfile.mkdtemp(prefix="rcpc-jobs-"))
    doc: dict = {"sizes": sizes, "runs": args.runs, "machine": {
        "platform": platform.platform(), "cpus": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)),
        "python": platform.python_version()}, "per_n": {}}
    try:
        for n in sizes:
            root = base / f"n{n}"
            peers.write_rcpc(root, [peers.spec(k) for k in range(n)])
            subprocess.run([rcpc, "fmt", "recipes"], cwd=root, check=True, capture_output=True)
            modes = {"auto": [], "1": ["-j", "1"], "1 again": ["-j", "1"]}  # the last: an A/A control
            samples: dict = {m: {"wall": [], "cpu": []} for m in modes}
            loads = []
            for r in range(args.runs + 1):  # round 0 warms the page cache, not recorded
                loads.append(machine_load())
                order = list(modes)[r % 3:] + list(modes)[:r % 3]  # rotates each round
                for m in order:
                    out = base / f"out-{n}-{m}-{r}"
                    env = {**os.environ, "XDG_CACHE_HOME": str(base / f"cache-{n}-{m}-{r}")}
                    env.pop("RCPC_NO_CACHE", None)
                    run = run_measured([rcpc, "build", *modes[m], "-o", str(out)], root, env)
                    if r:
                        samples[m]["wall"].append(run.wall)
                        samples[m]["cpu"].append(run.cpu)
                    shutil.rmtree(out, ignore_errors=True)
                    shutil.rmtree(base / f"cache-{n}-{m}-{r}", ignore_errors=True)
            row = {m: {k: statistics.median(v) for k, v in s.items()} for m, s in samples.items()}
            row["ratio_wall"] = statistics.median(a / b for a, b in zip(samples["auto"]["wall"], samples["1"]["wall"]))
            row["ratio_cpu"] = statistics.median(a / b for a, b in zip(samples["auto"]["cpu"], samples["1"]["cpu"]))
            row["control_wall"] = statistics.median(a / b for a, b in zip(samples["1 again"]["wall"], samples["1"]["wall"]))
            row["control_cpu"] = statistics.median(a / b for a, b in zip(samples["1 again"]["cpu"], samples["1"]["cpu"]))
            q1, _, q3 = statistics.quantiles([a / b for a, b in zip(samples["1 again"]["wall"], samples["1"]["wall"])], n=4)
            row["noise_wall"] = (q3 - q1) / 2  # half the control's interquartile range
            row["samples"] = samples
            row["load"] = loads
            doc["per_n"][str(n)] = row
            print(f"N={n:4d}  -j auto {row['auto']['wall']:.3f} s wall {row['auto']['cpu']:.3f} s CPU   "
                  f"-j 1 {row['1']['wall']:.3f} s wall {row['1']['cpu']:.3f} s CPU   auto/1: wall "
                  f"{row['ratio_wall']:.2f} CPU {row['ratio_cpu']:.2f}   (-j 1 again)/(-j 1): wall "
                  f"{row['control_wall']:.2f} CPU {row['control_cpu']:.2f}   load {loads[0]['loadavg_1min']:.1f}",
                  flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    doc["met"] = all(r["ratio_wall"] <= 1.0 + r["noise_wall"] for r in doc["per_n"].values())
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "jobs.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"auto never slower than -j 1 (median per-round wall ratio <= 1.0 plus the noise, half the control's "
          f"interquartile range, at every N): "
          f"{'met' if doc['met'] else 'MISSED'}")
    summary.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
