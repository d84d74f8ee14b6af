"""What every benchmark here measures the same way: one whole process's wall and CPU time,
the machine's load, medians, and the slope of a log-log fit.

Not a benchmark itself; imported by bench/peers.py, bench/limits.py and bench/jobs.py.
"""

from __future__ import annotations

import math
import os
import subprocess
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


def run_measured(cmd: list, cwd, env: dict, timeout: float | None = None, check: bool = True) -> Run:
    """Run ``cmd`` to its end and measure it (:class:`Run`; ``wait4``'s rusage, so a build's
    workers count). Raises RuntimeError when it exits non-zero (unless not ``check``),
    TimeoutError past ``timeout`` (the process is killed)."""
    with tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        deadline = None if timeout is None else start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG if deadline else 0)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                raise TimeoutError(f"{' '.join(map(str, cmd))}: still running after {timeout} s")
            time.sleep(0.005)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read()
    if code and check:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({code}): {text[-2000:]}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, code, text)


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
