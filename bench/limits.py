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
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
sys.path.insert(0, str(REPO / "compiler"))
from rcpc.core.limits import MAX_FILE_BYTES, MAX_LOAD_DEPTH, MAX_RENDERS, MAX_SCHEMA_BYTES, MAX_TOKENS  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import summary  # noqa: E402
from stats import RSS_METHOD, loglog_slope, machine_load, run_measured  # noqa: E402

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
COMMANDS = {"check": ["check"], "fmt": ["fmt", "--check"], "lint": ["lint"]}
NO_FMT = {"schema", "diamond", "renders"}  # fmt reads the recipe only: nothing new to measure
LINT = {"assign"}  # one finding a line (L0001): silencing was a whole-file scan per finding
COUNTS = {"diamond", "renders"}  # sizes in files or renders, not bytes
# the diagnostic a shape exists to provoke: any other limit's code (E08xx) means the size was
# rejected, not measured, and the row is left out of the fit. E0808 (more than MAX_ERRORS
# errors, the rest not reported: clang's -ferror-limit) caps a report after the work, it
# refuses nothing.
EXPECTED = {"digits": "E0806"}
NOT_REFUSALS = {"E0808"}
_CODE = re.compile(r"error\[(E08\d\d)\]")
_TOKEN = re.compile(r'[A-Za-z_][A-Za-z0-9_]*|\d+|"[^"\n]*"|#[^\n]*|[^\s\w]')


def _commands(name: str) -> list[str]:
    return ["check", *([] if name in NO_FMT else ["fmt"]), *(["lint"] if name in LINT else [])]


def accepted_limit(name: str, limit: int, build) -> int:
    """The largest size of shape ``name`` to time: its limit, or, where the file would have
    more than MAX_TOKENS tokens at that size (E0809: refused before any work, nothing to time),
    90% of the size at which it would. Tokens are counted by rcpc's parser on 1/64 of the limit
    and scaled (shapes grow by repeating a unit); a shape the parser refuses (syntax errors) is
    counted by a regex at the full size."""
    if name in COUNTS or name == "schema":
        return limit
    from rcpc.core.source import Source
    from rcpc.core.syntax import postlex
    from rcpc.core.syntax.parser import parse

    with tempfile.TemporaryDirectory(prefix="rcpc-limits-") as tmp:
        root = Path(tmp)
        (root / "recipes" / "lib").mkdir(parents=True)
        build(root, limit // 64)
        text = (root / "recipes" / "r.rcp").read_text()
        try:
            count = postlex.TokenCount()
            parse(Source("r.rcp", text), tokens=count)
            tokens = count.n * limit / len(text)
        except Exception:  # an error shape: the parser stops at the first errors
            build(root, limit - 200)
            tokens = len(_TOKEN.findall((root / "recipes" / "r.rcp").read_text()))
    return limit if tokens <= MAX_TOKENS else int(limit * 0.9 * MAX_TOKENS / tokens)


def measure(name: str, argv: list, size: int, build, rcpc: str, env: dict, runs: int, timeout: float) -> dict:
    """One shape at one size, ``runs`` times: the median time, the largest peak memory, the exit
    codes, the limit codes (E08xx) printed and those of them it was refused with (:func:`refused`).
    Wall time and CPU time (user + system: what load on a shared machine disturbs least) are
    both kept."""
    with tempfile.TemporaryDirectory(prefix="rcpc-limits-") as tmp:
        root = Path(tmp)
        (root / "recipes" / "lib").mkdir(parents=True)
        (root / "rcp.toml").write_text("")
        extra = build(root, size)
        measured = size if name in COUNTS else sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        times, cpus, mems, codes, limits = [], [], [], set(), set()
        for _ in range(runs):
            try:
                r = run_measured([rcpc, *argv, *extra], root, env, timeout, check=False)
            except TimeoutError:
                times.append(math.inf)
                codes.add(-9)
                break
            times.append(r.wall)
            cpus.append(r.cpu)
            mems.append(r.rss_mib)
            codes.add(r.code)
            limits.update(_CODE.findall(r.stderr))
    return {"size": measured, "seconds": statistics.median(times), "runs": times,
            "cpu_seconds": statistics.median(cpus) if cpus else math.inf, "peak_mib": max(mems or [0]),
            "exit": sorted(codes), "codes": sorted(limits), "rejected": refused(name, limits)}


def refused(name: str, codes) -> list[str]:
    """The limit codes among ``codes`` that mean the input of shape ``name`` was refused."""
    return sorted(set(codes) - NOT_REFUSALS - {EXPECTED.get(name)})


MIN_STEP = 0.05  # CPU seconds: steps smaller than this are within the noise of a loaded machine


def added_cost_exponent(rows: list, key: str) -> float | None:
    """log2 of how much more the last doubling of the size added to ``key`` than the doubling
    before it: (c(4s) - c(2s)) / (c(2s) - c(s)) is 2 for linear cost and 4 for quadratic, whatever
    the fixed cost, so this is 1 for linear and 2 for quadratic. From the three largest sizes
    accepted (each twice the one before); None without them or when a step adds less than
    :data:`MIN_STEP` (a ratio of noise)."""
    ok = [r for r in rows if not r["rejected"]][-3:]
    if len(ok) < 3 or any(abs(b["size"] / a["size"] - 2) > 0.1 for a, b in zip(ok, ok[1:])):
        return None
    first, second = ok[1][key] - ok[0][key], ok[2][key] - ok[1][key]
    return math.log2(second / first) if min(first, second) >= MIN_STEP else None


def analyse(doc: dict) -> None:
    """Mark the refused rows and fit the slopes of every result of ``doc`` (in place), from
    its measurements: so that ``--report-only`` applies the rules of this file to a
    limits.json measured before."""
    base = doc["baseline"]
    for key, r in doc["results"].items():
        name = key.split("/")[0]
        for row in r["rows"]:
            row["rejected"] = refused(name, row.get("codes", row["rejected"]))
        r["time_slope"] = fitted(r["rows"], "cpu_seconds", base["cpu_seconds"])
        r["wall_slope"] = fitted(r["rows"], "seconds", base["seconds"])
        r["memory_slope"] = fitted(r["rows"], "peak_mib", base["peak_mib"])
        r["added_cost_exponent"] = added_cost_exponent(r["rows"], "cpu_seconds")


def fitted(rows: list, key: str, base: float) -> float | None:
    """The least-squares log-log slope of ``key`` above the fixed cost ``base`` against size,
    over the rows not rejected whose cost above ``base`` is at least ``base`` / 2 (smaller
    ones are start-up noise)."""
    pts = [(r["size"], r[key] - base) for r in rows if not r["rejected"] and r[key] - base >= base / 2]
    return loglog_slope(pts) if len(pts) >= 2 else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="0.0625,0.125,0.25,0.5,1",
                    help="fractions of each shape's accepted limit (doubling by default)")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--report-only", action="store_true",
                    help="apply this file's rules to bench/results/limits.json and rewrite the reports")
    args = ap.parse_args()
    if args.report_only:
        doc = json.loads((RESULTS / "limits.json").read_text())
        analyse(doc)
        write(doc)
        return 0
    rcpc = shutil.which("rcpc") or sys.exit("rcpc is not installed (pip install .)")
    fractions = [float(f) for f in args.sizes.split(",")]
    env = {**os.environ, "RCPC_NO_CACHE": "1"}
    with tempfile.TemporaryDirectory(prefix="rcpc-limits-") as tmp:  # the fixed cost: rcpc with no work
        (Path(tmp) / "rcp.toml").write_text("")
        empty = [run_measured([rcpc, "check"], tmp, env, 60, check=False) for _ in range(max(3, args.runs))]
    base_time = statistics.median(r.wall for r in empty)
    base_cpu = statistics.median(r.cpu for r in empty)
    base_mem = statistics.median(r.rss_mib for r in empty)
    results = {}
    for name in args.shapes.split(","):
        what, limit, build = SHAPES[name]
        top = accepted_limit(name, limit, build)
        for command in _commands(name):
            argv = COMMANDS[command]
            rows = []
            for frac in fractions:
                size = max(2, int(top * frac)) if name in COUNTS else int(top * frac) - 200
                rows.append(measure(name, argv, size, build, rcpc, env, args.runs, args.timeout))
                row = rows[-1]
                print(f"{name:12} {command:6} {row['size']:>10} {row['seconds']:8.2f} s {row['peak_mib']:8.1f} MiB  "
                      f"exit {row['exit']}{'  REJECTED ' + ','.join(row['rejected']) if row['rejected'] else ''}",
                      flush=True)
            results[f"{name}/{command}"] = {
                "shape": what, "command": "rcpc " + " ".join(argv), "limit": limit, "accepted_limit": top,
                "rows": rows}
    doc = {"python": platform.python_version(), "machine": platform.platform(), "cpus": os.cpu_count(),
           "runs": args.runs, "load": machine_load(), "rss_method": RSS_METHOD,
           "baseline": {"command": "rcpc check (empty workspace)", "seconds": base_time, "cpu_seconds": base_cpu,
                        "peak_mib": base_mem},
           "limits": {"source_bytes": MAX_FILE_BYTES, "schema_bytes": MAX_SCHEMA_BYTES,
                      "load_depth": MAX_LOAD_DEPTH, "tokens": MAX_TOKENS}, "results": results}
    analyse(doc)
    write(doc)
    return 0


def write(doc: dict) -> None:
    """limits.json, LIMITS.md, limits.png and the summary from ``doc``."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "limits.json").write_text(json.dumps(doc, indent=2) + "\n")
    (RESULTS / "LIMITS.md").write_text(report(doc))
    plot(doc)
    summary.write()
    print(report(doc))


def _fmt_slope(s: float | None) -> str:
    return "n/a" if s is None else f"{s:.2f}"


MEMORY_CAVEAT = ("The memory figures of this run are not the commands' own: each command was started by the "
                 "benchmark process, and on Linux a child's peak resident set starts at its parent's (bench/stats.py "
                 "now starts every command from a small launcher). Its times are unaffected.")


def report(doc: dict) -> str:
    base = doc["baseline"]
    out = ["# Limits benchmark", "",
           "Generated by `python bench/limits.py` (see bench/README.md, \"Limits\"). Each row: one",
           "input shape at one size, doubling up to the largest size the compiler accepts (the",
           "documented limit, or below the token limit where that comes first), one whole `rcpc`",
           f"process with the build cache off, {doc['runs']} runs: CPU and wall seconds (medians; the wall",
           "time of every run listed) and peak resident set (MiB, the largest). The slopes are",
           "least-squares fits of log(cost above the fixed cost of `rcpc check` of an empty workspace:",
           f"{base['cpu_seconds'] * 1000:.0f} ms CPU, {base['seconds'] * 1000:.0f} ms wall, "
           f"{base['peak_mib']:.0f} MiB) on log(size), over the",
           "sizes accepted whose cost above it is at least half of it (1 is linear, 2 quadratic); the",
           "time slope is CPU time's, which the load of a shared machine disturbs least. A row with a",
           "limit code under \"rejected\" was refused, not worked on, and is not fitted.", "",
           f"Limits: source file {doc['limits']['source_bytes']} bytes, {doc['limits'].get('tokens', '?')} tokens, "
           f"schema file {doc['limits']['schema_bytes']} bytes, load chain {doc['limits']['load_depth']} files.", "",
           "The added-cost exponent is log2 of how much more CPU time the last doubling of the size added",
           "than the one before (1: linear, 2: quadratic), free of any fixed cost; n/a where a step",
           f"added less than {MIN_STEP} s (noise).", "",
           "| shape | command | size | CPU s | wall s | wall, each run | peak MiB | exit | rejected | "
           "CPU slope | added-cost exponent | wall slope | memory slope |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key, r in doc["results"].items():
        for i, row in enumerate(r["rows"]):
            last = i == len(r["rows"]) - 1
            out.append(f"| {r['shape'] if i == 0 else ''} | {r['command'] if i == 0 else ''} | {row['size']} | "
                       f"{row['cpu_seconds']:.2f} | {row['seconds']:.2f} | {', '.join(f'{t:.2f}' for t in row['runs'])} | "
                       f"{row['peak_mib']:.0f} | {','.join(map(str, row['exit']))} | {','.join(row['rejected'])} | "
                       + (f"{_fmt_slope(r['time_slope'])} | {_fmt_slope(r.get('added_cost_exponent'))} | "
                          f"{_fmt_slope(r.get('wall_slope'))} | {_fmt_slope(r['memory_slope'])} |" if last else " | | | |"))
    if doc.get("rss_method") != RSS_METHOD:
        out += ["", MEMORY_CAVEAT]
    out += ["", f"Machine: {doc['machine']}, {doc['cpus']} CPUs, Python {doc['python']}; load when it ended: "
            f"{doc['load']}.", ""]
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
