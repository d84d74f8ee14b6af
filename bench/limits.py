#!/usr/bin/env python3
"""Limits benchmark: time and peak memory of `rcpc check` and `rcpc fmt --check` against the
size of adversarial inputs, up to the documented limits (docs/language.md, "Limits").

Usage: python bench/limits.py [--sizes 0.0625,0.25,1] [--shapes list,blank,...] [--runs N]

Each shape is an input that once cost quadratic time or gigabytes (issue 12, item 9), or
another way to make a file large: 10,000 lines of `Xi = Yi` took 209 s, a 4 MB list literal
454 s and 2.8 GB, 4 MB of blank lines 4 GB, a 40-deep diamond of loads never finished,
`--maxtext-base /dev/zero` exhausted memory. Sizes are fractions of the limit of the input
(4 MiB for a source file, 16 MiB for a schema, 64 levels of loads, 10,000 renders). Every command
runs as a whole process with the build cache off; the time is the median of --runs runs, the
memory the peak resident set (``wait4``'s ``ru_maxrss``). For each shape and command it prints
the figures, the slope of log(time) and log(memory) against log(size) between the two largest
sizes (1: linear; 2: quadratic), and the cost per input byte; writes
bench/results/limits.json and bench/results/LIMITS.md (and limits.png when matplotlib is
installed).
"""

from __future__ import annotations

import argparse
import json
import math
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
sys.path.insert(0, str(REPO / "compiler"))
from rcpc.core.limits import MAX_FILE_BYTES, MAX_LOAD_DEPTH, MAX_RENDERS, MAX_SCHEMA_BYTES  # noqa: E402

MB = 1 << 20


def _fill(unit: str, size: int, head: str = "", tail: str = "") -> str:
    """``head`` + ``unit`` repeated to about ``size`` bytes + ``tail``."""
    return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail


# Each shape: (what, limit in bytes, build(root, size) -> extra argv). Files go under root.
MANIFEST_X = 'manifest(name = "m", apiVersion = "v1", kind = "K", data = {"x": X})\n'
def _recipe(root: Path, text: str) -> list[str]:
    (root / "recipes" / "r.rcp").write_text(text)
    return []


def _lines(make, size: int) -> str:
    """``make(i)`` for i = 0, 1, ... until about ``size`` bytes."""
    out, total = [], 0
    while total < size:
        out.append(make(len(out)))
        total += len(out[-1])
    return "".join(out)


def assign(root, size):
    return _recipe(root, _lines(lambda i: f"X{i} = {i}\n", size - 40) + 'variant("default")\n')


def unknown(root, size):
    return _recipe(root, _lines(lambda i: f"X{i} = Y{i}\n", size))


def list_literal(root, size):
    return _recipe(root, _fill("1, ", size, "X = [", ']\nvariant("default")\n'))


def dict_literal(root, size):
    return _recipe(root, "X = {" + _lines(lambda i: f'"k{i}": {i}, ', size - 40) + '}\nvariant("default")\n')


def blank(root, size):
    return _recipe(root, _fill("\n", size, "", 'X = 1\nvariant("default")\n'))


def crlf_blank(root, size):
    return _recipe(root, _fill("\r\n", size, "", 'X = 1\r\nvariant("default")\r\n'))


def string(root, size):
    return _recipe(root, _fill("ab", size, 'X = "', '"\n' + MANIFEST_X))


def long_string(root, size):
    return _recipe(root, _fill("ab\n", size, 'X = """', '"""\n' + MANIFEST_X))


def comment(root, size):
    return _recipe(root, _fill("#", size, "", '\nX = 1\nvariant("default")\n'))


def fstring(root, size):
    return _recipe(root, _fill("{A}-", size, 'A = "a"\nX = f"', '"\n' + MANIFEST_X))


def digits(root, size):
    return _recipe(root, _fill("1", size, "X = ", "\n"))


def syntax_errors(root, size):
    return _recipe(root, _fill("X = (\n", size))


def renders(root, size):
    # the recipe is small; its output is not: `size` manifests of 100 items each
    return _recipe(root, f'D = {{f"k{{j}}": j for j in range(100)}}\n[manifest(name = f"m{{i}}", apiVersion = "v1", '
                         f'kind = "K", data = D) for i in range({size})]\nvariant("default")\n')


def diamond(root, size):
    # size: depth of the diamond (2 files a level, each loading both files of the next level);
    # the bottom file fails, so every level fails too (evaluated once each, not 2**depth times)
    depth = size
    lib = root / "recipes" / "lib"
    for i in range(depth):
        for s in "ab":
            if i == depth - 1:
                body = 'V = 1 + "x"\n'
            else:
                body = (f'load("//recipes/lib/l{i + 1}a.rcp", A = "V")\n'
                        f'load("//recipes/lib/l{i + 1}b.rcp", B = "V")\nV = A + B\n')
            (lib / f"l{i}{s}.rcp").write_text(body)
    return _recipe(root, 'load("//recipes/lib/l0a.rcp", "V")\nX = V\n')


def schema(root, size):
    (root / "base.yml").write_text(_lines(lambda i: f"key_{i}: {i}\n", size))
    _recipe(root, 'F = maxtext_flags({"key_1": 2})\nflag_file(name = "f", flags = F)\n')
    return ["--maxtext-base", "base.yml"]


SHAPES = {
    "assign": ("lines of X = i", MAX_FILE_BYTES, assign),
    "unknown": ("lines of Xi = Yi (unknown names)", MAX_FILE_BYTES, unknown),
    "list": ("one list literal [1, 1, ...]", MAX_FILE_BYTES, list_literal),
    "dict": ("one dict literal", MAX_FILE_BYTES, dict_literal),
    "blank": ("blank lines (LF)", MAX_FILE_BYTES, blank),
    "crlf": ("blank lines (CRLF)", MAX_FILE_BYTES, crlf_blank),
    "string": ("one string literal", MAX_FILE_BYTES, string),
    "long_string": ('one """ string of lines', MAX_FILE_BYTES, long_string),
    "comment": ("one comment line", MAX_FILE_BYTES, comment),
    "fstring": ("one f-string of fields", MAX_FILE_BYTES, fstring),
    "digits": ("one integer literal (E0806)", MAX_FILE_BYTES, digits),
    "syntax": ("lines of syntax errors", MAX_FILE_BYTES, syntax_errors),
    "renders": ("manifests of 100 items rendered", MAX_RENDERS, renders),
    "schema": ("MaxText base.yml keys", MAX_SCHEMA_BYTES, schema),
    "diamond": ("diamond of failing loads (levels)", MAX_LOAD_DEPTH, diamond),
}
COMMANDS = {"check": ["check"], "fmt": ["fmt", "--check"]}
NO_FMT = {"schema", "diamond", "renders"}  # fmt reads the recipe only: nothing new to measure
COUNTS = {"diamond", "renders"}  # sizes in files or renders, not bytes


def run(cmd: list[str], cwd: Path, env: dict, timeout: float) -> tuple[float, float, int]:
    """(seconds, peak resident set in MiB, exit code) of one process; a timeout is 'inf'."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            return math.inf, usage.ru_maxrss / 1024, -9
        time.sleep(0.01)
    elapsed = time.perf_counter() - start
    return elapsed, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def slope(points: list) -> float | None:
    """Slope of log(y) against log(x) between the two largest x."""
    (x1, y1), (x2, y2) = points[-2:]
    if not (y1 > 0 and y2 > 0 and x2 > x1) or math.isinf(y2):
        return None
    return math.log(y2 / y1) / math.log(x2 / x1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="0.0625,0.25,1", help="fractions of each shape's limit")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    rcpc = shutil.which("rcpc") or sys.exit("rcpc is not installed (pip install .)")
    fractions = [float(f) for f in args.sizes.split(",")]
    env = {**os.environ, "RCPC_NO_CACHE": "1"}
    base_time, base_mem, _ = run([sys.executable, "-c", "pass"], REPO, env, 60)
    results = {}
    for name in args.shapes.split(","):
        what, limit, build = SHAPES[name]
        for command, argv in COMMANDS.items():
            if command == "fmt" and name in NO_FMT:
                continue
            rows = []
            for frac in fractions:
                size = max(2, int(limit * frac)) if name in COUNTS else int(limit * frac) - 200
                with tempfile.TemporaryDirectory(prefix="rcpc-limits-") as tmp:
                    root = Path(tmp)
                    (root / "recipes" / "lib").mkdir(parents=True)
                    (root / "rcp.toml").write_text("")
                    extra = build(root, size)
                    measured = size if name in COUNTS else sum(
                        p.stat().st_size for p in root.rglob("*") if p.is_file())
                    times, mems, codes = [], [], set()
                    for _ in range(args.runs):
                        t, m, code = run([rcpc, *argv, *extra], root, env, args.timeout)
                        times.append(t)
                        mems.append(m)
                        codes.add(code)
                rows.append({"size": measured, "seconds": statistics.median(times), "peak_mib": max(mems),
                             "exit": sorted(codes)})
                print(f"{name:12} {command:6} {measured:>10} {rows[-1]['seconds']:8.2f} s "
                      f"{rows[-1]['peak_mib']:8.1f} MiB  exit {sorted(codes)}", flush=True)
            results[f"{name}/{command}"] = {
                "shape": what, "command": "rcpc " + " ".join(argv), "rows": rows,
                "time_slope": slope([(r["size"], r["seconds"] - base_time) for r in rows]),
                "memory_slope": slope([(r["size"], r["peak_mib"] - base_mem) for r in rows]),
            }
    doc = {"python": platform.python_version(), "machine": platform.platform(), "cpus": os.cpu_count(),
           "baseline": {"command": "python -c pass", "seconds": base_time, "peak_mib": base_mem},
           "limits": {"source_bytes": MAX_FILE_BYTES, "schema_bytes": MAX_SCHEMA_BYTES,
                      "load_depth": MAX_LOAD_DEPTH}, "results": results}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "limits.json").write_text(json.dumps(doc, indent=2) + "\n")
    (RESULTS / "LIMITS.md").write_text(report(doc))
    plot(doc)
    print(report(doc))
    return 0


def _fmt_slope(s: float | None) -> str:
    return "n/a" if s is None else f"{s:.2f}"


def report(doc: dict) -> str:
    base = doc["baseline"]
    out = ["# Limits benchmark", "",
           "Generated by `python bench/limits.py` (see bench/README.md, \"Limits\"). Each row: one",
           "input shape at sizes up to its limit, one whole `rcpc` process with the build cache off;",
           "seconds (wall) and peak resident set (MiB). The slopes are d log(cost) / d log(size)",
           "between the two largest sizes, after subtracting `python -c pass` "
           f"({base['seconds'] * 1000:.0f} ms, {base['peak_mib']:.0f} MiB): 1 is linear, 2 quadratic.", "",
           f"Limits: source file {doc['limits']['source_bytes']} bytes, schema file "
           f"{doc['limits']['schema_bytes']} bytes, load chain {doc['limits']['load_depth']} files.", "",
           "| shape | command | size | seconds | peak MiB | exit | time slope | memory slope |",
           "|---|---|---|---|---|---|---|---|"]
    for key, r in doc["results"].items():
        for i, row in enumerate(r["rows"]):
            last = i == len(r["rows"]) - 1
            out.append(f"| {r['shape'] if i == 0 else ''} | {r['command'] if i == 0 else ''} | {row['size']} | "
                       f"{row['seconds']:.2f} | {row['peak_mib']:.0f} | {','.join(map(str, row['exit']))} | "
                       f"{_fmt_slope(r['time_slope']) if last else ''} | "
                       f"{_fmt_slope(r['memory_slope']) if last else ''} |")
    out += ["", f"Machine: {doc['machine']}, {doc['cpus']} CPUs, Python {doc['python']}.", ""]
    return "\n".join(out)


def plot(doc: dict) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 5))
    for key, r in doc["results"].items():
        xs = [row["size"] for row in r["rows"]]
        a.loglog(xs, [row["seconds"] for row in r["rows"]], marker="o", label=key)
        b.loglog(xs, [row["peak_mib"] for row in r["rows"]], marker="o", label=key)
    a.set(xlabel="input size", ylabel="seconds", title="time")
    b.set(xlabel="input size", ylabel="peak MiB", title="memory")
    a.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(RESULTS / "limits.png", dpi=100)


if __name__ == "__main__":
    sys.exit(main())
