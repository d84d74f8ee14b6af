"""What every benchmark here measures the same way: one whole process's wall and CPU time,
the machine's load, medians, and the slope of a log-log fit.

Not a benchmark itself; imported by bench/peers.py, bench/limits.py and bench/jobs.py.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple


class Run(NamedTuple):
    """One process measured: seconds of wall-clock and of CPU (user + system, the process and
    every child it waited for), peak resident set in MiB (the largest of those processes),
    exit code and standard error."""

    wall: float
    cpu: float
    rss_mib: float
    code: int
    stderr: str


# The command runs as the only child of this small launcher, which reports its wall time and
# its rusage (RUSAGE_CHILDREN: the command and the children it waited for). Not run directly
# from the benchmark: on Linux a process's ru_maxrss starts at the resident set of the process
# it was forked from (exec folds the old memory's high-water mark in), so a command started by
# a benchmark holding 55 MiB of parsed outputs reported at least 55 MiB. The launcher holds
# about 9 MiB (python -S -I), the floor of every figure.
_LAUNCH = """import json, resource, subprocess, sys, time
err, timeout, cmd = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
t = time.perf_counter()
with open(err, "w") as f:
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=f)
    try:
        code = p.wait(timeout if timeout > 0 else None)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        code = None
wall = time.perf_counter() - t
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps([wall, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024, code]))
"""
RSS_METHOD = "launcher"  # how Run.rss_mib is measured (reports leave out figures measured otherwise)


def run_measured(cmd: list, cwd, env: dict, timeout: float | None = None, check: bool = True) -> Run:
    """Run ``cmd`` to its end and measure it (:class:`Run`), as the only child of a small
    launcher (:data:`_LAUNCH`): wall time from its start to its end, CPU time and peak memory
    of it and of the children it waited for (a build's workers). Raises RuntimeError when it
    exits non-zero (unless not ``check``), TimeoutError past ``timeout`` (it is killed)."""
    with tempfile.NamedTemporaryFile("r", suffix=".stderr") as err:
        out = subprocess.run([sys.executable, "-S", "-I", "-c", _LAUNCH, err.name, str(timeout or 0),
                              *map(str, cmd)], cwd=cwd, env=env, capture_output=True, text=True, check=True)
        wall, cpu, rss, code = json.loads(out.stdout)
        text = err.read()
    if code is None:
        raise TimeoutError(f"{' '.join(map(str, cmd))}: still running after {timeout} s")
    if code and check:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({code}): {text[-2000:]}")
    return Run(wall, cpu, rss, code, text)


def machine_load() -> dict:
    """The 1-minute load average and the processes runnable now (``/proc/loadavg``'s 4th
    field, this one included) against the CPUs this process may use."""
    out = {"loadavg_1min": round(os.getloadavg()[0], 2), "cpus": len(os.sched_getaffinity(0))}
    try:
        with open("/proc/loadavg") as f:
            out["runnable"] = int(f.read().split()[3].split("/")[0])
    except (OSError, IndexError, ValueError):
        pass
    return out


def loglog_slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log(y) on log(x) over every point with x, y > 0 (1: linear, 2:
    quadratic); None with fewer than two such points."""
    pts = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0 and math.isfinite(y)]
    if len({x for x, _ in pts}) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
