#!/usr/bin/env python3
"""Cache benchmark (issues 40 and 41: one store, writes batched a run): what rcpc's caches cost
and save on N recipes (bench/peers.py's data model), for this rcpc and, with ``--against
RCPC``, another install's (``main`` before a branch, in its own virtual environment), in the
same rounds, interleaved (the order alternates each round), as whole processes, wall and CPU
time (the process and its waited-for children: ``wait4``), medians and the median of the
per-round ratios, the machine's load recorded each round.

Rows, each ``rcpc build -j 1`` into a new output directory (so replay never serves it):

* first: an empty user cache (a new ``XDG_CACHE_HOME``): every recipe compiled, every cache
  entry written;
* second: the cache the first build left: every recipe from the build cache;
* nocache: ``RCPC_NO_CACHE=1``: what a first build costs without writing any cache entry
  (the floor "no cache that costs on a first build" is measured against).

Usage: python bench/store.py [--n 100] [--runs 7] [--against PATH/TO/rcpc]
Prints a table (medians in ms; wall, CPU, and user CPU alone); writes
bench/results/store.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import spec, write_rcpc  # noqa: E402

ROWS = ("first", "second", "nocache")
KINDS = ("wall", "cpu", "user")


def timed(cmd: list[str], cwd: Path, env: dict) -> dict:
    """{"wall", "cpu", "user"} seconds of the process ``cmd`` (CPU: its own and its waited-for
    children's user and system time; user: user time alone, the part the file system's load
    on a shared machine moves least)."""
    import subprocess

    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status):
        sys.exit(f"{' '.join(cmd)} failed in {cwd}: {err.decode()[-2000:]}")
    return {"wall": time.perf_counter() - start, "cpu": usage.ru_utime + usage.ru_stime, "user": usage.ru_utime}


def load() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--against", metavar="RCPC", help="another install's rcpc, timed in the same rounds")
    args = ap.parse_args()
    here = shutil.which("rcpc")
    subjects = {"this": here, **({"against": args.against} if args.against else {})}
    tmp = Path(tempfile.mkdtemp(prefix="rcpc-bench-store-"))
    env = {k: v for k, v in os.environ.items() if k not in ("RCPC_NO_CACHE", "PYTHONDONTWRITEBYTECODE")}
    samples = {s: {r: {k: [] for k in KINDS} for r in ROWS} for s in subjects}
    loads = []
    try:
        ws = {}
        for s, rcpc in subjects.items():
            ws[s] = tmp / s
            write_rcpc(ws[s], [spec(k) for k in range(args.n)])
            timed([rcpc, "fmt", "recipes"], ws[s], env)
        for r in range(args.runs + 1):  # round 0 warms the page cache: not recorded
            loads.append(load())
            order = list(subjects) if r % 2 else list(reversed(subjects))
            for s in order:
                cache = tmp / f"cache-{s}-{r}"
                for row in ROWS:
                    run_env = {**env, "XDG_CACHE_HOME": str(cache if row != "nocache" else tmp / "none")}
                    if row == "nocache":
                        run_env["RCPC_NO_CACHE"] = "1"
                    out = tmp / f"out-{s}-{r}-{row}"
                    got = timed([subjects[s], "build", "-j", "1", "-o", str(out)], ws[s], run_env)
                    shutil.rmtree(out, ignore_errors=True)
                    if r:
                        for k in KINDS:
                            samples[s][row][k].append(got[k])
                shutil.rmtree(cache, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results = {"n": args.n, "runs": args.runs, "load": [min(loads), statistics.median(loads), max(loads)],
               "subjects": subjects, "samples": samples, "time": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    print(f"N={args.n}, {args.runs} rounds, load {min(loads):.1f}-{max(loads):.1f} (median {statistics.median(loads):.1f})")
    for row in ROWS:
        line = f"{row:8}"
        for s in subjects:
            line += f"  {s}:" + "".join(f" {k} {statistics.median(samples[s][row][k]) * 1000:5.0f}" for k in KINDS)
        if "against" in subjects:
            line += "  this/against:"
            for k in KINDS:
                ratio = statistics.median(a / b for a, b in zip(samples["this"][row][k], samples["against"][row][k]))
                results.setdefault("ratios", {}).setdefault(row, {})[k] = ratio
                line += f" {k} {ratio:.2f}"
        print(line)
    out = Path(__file__).resolve().parent / "results" / "store.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
