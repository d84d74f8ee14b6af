#!/usr/bin/env python3
"""bench/results/SUMMARY.md, written from the benchmarks' results JSON and from nothing else.

Usage: python bench/summary.py        (bench/editloop.py, bench/peers.py, bench/jobs.py and
                                       bench/limits.py also call it when they end)

Reads bench/results/editloop.json, peers.json, jobs.json and limits.json (each section is left
out when its file is missing) and writes SUMMARY.md. No figure in it is typed by hand:
tests/test_bench_summary.py fails when SUMMARY.md differs from what :func:`render` makes of
the JSON files beside it.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
HEADLINE = ("rcpc build (first, -j auto)", "Pkl (native CLI)", "100")  # target: <= 1.0x wall


def _load(results: Path, name: str) -> dict | None:
    p = results / name
    return json.loads(p.read_text()) if p.exists() else None


def _span(values: list) -> str:
    return f"{min(values):g}–{max(values):g}" if values else "?"


def _loads(loads: list) -> str:
    la = [x["loadavg_1min"] for x in loads]
    run = [x["runnable"] for x in loads if "runnable" in x]
    return f"load average {_span(la)}, runnable processes {_span(run)} (on {loads[0]['cpus']} CPUs)" if loads else "?"


def peers_section(r: dict) -> list[str]:
    out = ["## rcpc against peers on equal work (`bench/peers.py`)", "",
           "Every tool reads the same N recipes (each shaped like the RL recipe: 6 JobSets and a flag file",
           "of 80 MaxText flags, loading one shared library) and writes all 7 N files into an output",
           "directory that does not exist yet, a new one each run. rcpc's **first build** is what a user",
           "gets after a clone: an empty build cache (a new one each run), cache on. Whole processes,",
           "interleaved (the order rotates each round), after one unrecorded warm-up round; medians of",
           "the runs; CPU time is user + system of the process and the workers it waited for; peak",
           "memory is the largest process's resident set. Ratios are medians of the per-round ratios.", ""]
    for n, part in sorted(r["per_n"].items(), key=lambda x: int(x[0])):
        out += [f"### N = {n} ({part['runs']} runs; {_loads(part['load'])})", "",
                "| command | wall (s) | CPU (s) | peak MiB | accepted: recipes / files written | output equal to rcpc's |",
                "|---|---|---|---|---|---|"]
        for name, m in part["medians"].items():
            acc = part["accepted"].get(name)
            same = part["same_output"].get(name)
            out.append(f"| {name} | {m['wall']:.3f} | {m['cpu']:.3f} | {_mib(m['rss_mib'], part)} | "
                       + (f"{acc['recipes']} / {acc['files']}" if acc else "(writes no output)") + " | "
                       + ("" if same is None else "yes" if same["same"] else f"NO: {same['differing']}") + " |")
        if part.get("rss_method") != "launcher":
            out.append(f"\n{NO_MEMORY}")
        out.append("")
        if part["ratios"]:
            peers = list(next(iter(part["ratios"].values())))
            out += ["| rcpc first build / peer (wall, CPU) | " + " | ".join(peers) + " |",
                    "|---|" + "---|" * len(peers)]
            for mine, per in part["ratios"].items():
                out.append(f"| {mine} | " + " | ".join(
                    f"{per[p]['wall']:.2f}x, {per[p]['cpu']:.2f}x" for p in peers) + " |")
            out.append("")
    mine, peer, n = HEADLINE
    part = r["per_n"].get(n)
    ratio = part and part["ratios"].get(mine, {}).get(peer)
    out += ["### Target", ""]
    if ratio:
        out.append(f"* **rcpc's first build of N={n} ≤ 1.0x Pkl native in wall time**: "
                   f"{'met' if ratio['wall'] <= 1.0 else 'MISSED'} — {ratio['wall']:.2f}x wall, "
                   f"{ratio['cpu']:.2f}x CPU (`-j auto`; {_loads(part['load'])}).")
        one = part["ratios"].get("rcpc build (first, -j 1)", {}).get(peer)
        if one:
            out.append(f"* the same with `-j 1` (one process, like Pkl's one `pkl eval`): {one['wall']:.2f}x wall, "
                       f"{one['cpu']:.2f}x CPU.")
    else:
        out.append(f"* rcpc's first build of N={n} against {peer}: not measured in this run"
                   + (f" ({r['pkl_unavailable']})" if r.get("pkl_unavailable") else "") + ".")
    for size, part in sorted(r["per_n"].items(), key=lambda x: int(x[0])):
        c = part.get("cache_cost")
        if c:
            out.append(f"* no cache that costs on a first build of N={size} (`-j 1`, CPU with the cache / without ≤ "
                       f"1.0): {'met' if c['cpu'] <= 1.0 else 'MISSED'} — {c['cpu']:.2f}x CPU, {c['wall']:.2f}x wall, "
                       f"{c['rss_mib']:.2f}x peak memory.")
    out += ["", "Versions: " + "; ".join(f"{k} {v}" for k, v in r["versions"].items()) + ".",
            f"Machine: {r['machine']['platform']}, {r['machine']['cpus']} CPUs "
            f"({r['machine'].get('affinity', '?')} usable).", ""]
    return out


# bench/editloop.py's rows: (row, what it is, target as a ratio to python -c pass or None)
EDITLOOP_ROWS = (("edit", "one MaxText flag edited, then `rcpc build` (warm cache)", 8.0),
                 ("editnc", "the same edit and build with `RCPC_NO_CACHE=1` (no cache)", None),
                 ("noop", "`rcpc build` again, nothing changed", None),
                 ("check", "`rcpc check` of the workspace after the edit", None),
                 ("test", "the edit, then `rcpc test` (the golden check)", None),
                 ("golden", "the edit, then `pytest rcp.toml` (the same check through pytest)", None),
                 ("first", "the first build after a clone (empty user cache, new output directory)", 10.0),
                 ("nocache", "the same first build with `RCPC_NO_CACHE=1` (no cache entry made)", None))


def editloop_section(r: dict) -> list[str]:
    mine = r["this"]
    out = ["## The edit loop and the first build of the RL recipe (`bench/editloop.py`)", "",
           f"Whole processes, {r['runs']} interleaved rounds, medians; each ratio is the median of the per-round",
           "ratios to `python -c pass` (the same interpreter, timed in the same rounds). CPU is user + system",
           f"of the process and the children it waited for. Python {r['python']}, {r['cpus']} CPUs, load average"
           f" {r['load_average'][0]} before, {r['load_average'][1]} after.", "",
           "| row | what | wall (ms) | CPU (ms) | CPU / python -c pass | target |", "|---|---|---|---|---|---|",
           f"| python | `python -c pass` | {mine['python']['wall_median_s'] * 1000:.1f} | "
           f"{mine['python']['cpu_median_s'] * 1000:.1f} | 1.0x | |"]
    for row, what, target in EDITLOOP_ROWS:
        m = mine.get(row)
        if m is None:
            continue
        verdict = "" if target is None else f"≤ {target:g}x: {'met' if m['cpu_ratio_to_python'] <= target else 'MISSED'}"
        out.append(f"| {row} | {what} | {m['wall_median_s'] * 1000:.1f} | {m['cpu_median_s'] * 1000:.1f} | "
                   f"{m['cpu_ratio_to_python']:.1f}x | {verdict} |")
    out.append("")
    if "test_over_edit" in mine:
        t = mine["test_over_edit"]["cpu"]
        out.append(f"* the golden check after an edit ≤ 2x the edit's build (`rcpc test`): "
                   f"{'met' if t <= 2.0 else 'MISSED'} — {t:.2f}x CPU.")
    if "first_over_nocache" in mine:
        c = mine["first_over_nocache"]
        out.append(f"* no cache that costs on a first build (first / nocache ≤ 1.0): "
                   f"{'met' if c['cpu'] <= 1.0 else 'MISSED'} — {c['cpu']:.2f}x CPU, {c['wall']:.2f}x wall.")
    if "edit_over_editnc" in mine:
        e, k = mine["edit_over_editnc"], mine.get("repaid_after_edits")
        repaid = "never (an edit saves nothing)" if k is None else f"after {k:.1f} edit(s)"
        out.append(f"* what the caches save an edit (edit / editnc): {e['cpu']:.2f}x CPU, {e['wall']:.2f}x wall; "
                   f"what they cost a first build is repaid {repaid} (CPU medians).")
    out.append("")
    return out


def jobs_section(r: dict) -> list[str]:
    out = ["## `-j auto` against `-j 1` (`bench/jobs.py`)", "",
           "The peers workspace built by `rcpc build` (first build: fresh output directory, empty cache)",
           "with the default `-j auto` and with `-j 1`, interleaved; medians, and the median of the",
           "per-round ratios auto / 1. Target: ≤ 1.0 at every N (docs/cli.md, \"Parallel builds\"). The",
           "control is `-j 1` run a second time in the same rounds: its ratio to `-j 1` is the noise of",
           "the machine then (identical work), against which to read auto / 1.", "",
           "| N | runs | -j auto wall (s) | -j auto CPU (s) | -j 1 wall (s) | -j 1 CPU (s) | auto / 1 wall | auto / 1 CPU | control wall, CPU | load |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for n, row in sorted(r["per_n"].items(), key=lambda x: int(x[0])):
        out.append(f"| {n} | {r['runs']} | {row['auto']['wall']:.3f} | {row['auto']['cpu']:.3f} | {row['1']['wall']:.3f} | "
                   f"{row['1']['cpu']:.3f} | {row['ratio_wall']:.2f} | {row['ratio_cpu']:.2f} | "
                   + (f"{row['control_wall']:.2f}, {row['control_cpu']:.2f}" if "control_wall" in row else "")
                   + f" | {_loads(row['load'])} |")
    noise = ", ".join(f"N={n} {row['noise_wall']:.3f}" for n, row in sorted(r["per_n"].items(), key=lambda x: int(x[0]))
                      if "noise_wall" in row)
    out += ["", f"Never slower (auto / 1 wall at most 1.0 plus the noise, half the control's interquartile range"
                f"{': ' + noise if noise else ''}; at every N): {'met' if r['met'] else 'MISSED'}.", ""]
    return out


def limits_section(r: dict) -> list[str]:
    out = ["## Limits and slopes (`bench/limits.py`)", "",
           "Adversarial input shapes at sizes doubling up to the largest the compiler accepts, each size",
           f"run {r.get('runs', '?')} times (medians). The slopes are least-squares fits of log(cost above the",
           "fixed cost of an rcpc process) on log(size) over the accepted sizes (1: linear, 2:",
           "quadratic); the time slope is CPU time's. A fixed cost that grows with any input but not",
           "with its size pulls that slope below 1; the added-cost exponent has no fixed cost: log2 of",
           "how much more CPU time the last doubling of the size added than the doubling before it (1:",
           "linear, 2: quadratic; n/a where a step added less than 0.05 s, the noise). Rows refused by",
           "a limit (an `E08xx` code) are listed but not fitted.",
           "Every row: LIMITS.md.", "",
           "| shape | command | sizes (bytes or count) | largest: CPU s | largest: peak MiB | CPU slope | added-cost exponent | wall slope | memory slope | refused at |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for x in r["results"].values():
        ok = [row for row in x["rows"] if not row.get("rejected")]
        refused = [str(row["size"]) + " (" + ",".join(row["rejected"]) + ")" for row in x["rows"] if row.get("rejected")]
        last = ok[-1] if ok else {"cpu_seconds": float("nan"), "peak_mib": float("nan")}
        out.append(f"| {x['shape']} | `{x['command']}` | {', '.join(str(row['size']) for row in ok)} | "
                   f"{last['cpu_seconds']:.2f} | {_mib(last['peak_mib'], r)} | {_slope(x['time_slope'])} | "
                   f"{_slope(x.get('added_cost_exponent'))} | "
                   f"{_slope(x.get('wall_slope'))} | {_slope(x['memory_slope']) if r.get('rss_method') == 'launcher' else '—'}"
                   f" | {', '.join(refused)} |")
    if r.get("rss_method") != "launcher":
        out += ["", NO_MEMORY]
    out.append("")
    return out


NO_MEMORY = ("Peak memory: not shown for this run (—). Each command was started by the benchmark process, and "
             "on Linux a child's peak resident set starts at its parent's, so the figures were the benchmark's; "
             "bench/stats.py now starts every command from a small launcher (about 11 MiB, the floor).")


def _mib(value: float, measured: dict) -> str:
    """A peak memory figure, or — when ``measured`` (a result) was not measured through the launcher."""
    return f"{value:.0f}" if measured.get("rss_method") == "launcher" else "—"


def _slope(s) -> str:
    return "n/a" if s is None else f"{s:.2f}"


def render(results: Path = RESULTS) -> str:
    """The text of SUMMARY.md from the JSON files in ``results``."""
    out = ["# Benchmarks: summary", "",
           "Written by `bench/summary.py` from the results JSON in this directory (editloop.json, peers.json,",
           "jobs.json, limits.json); never edited by hand. Reproduce: `python bench/editloop.py`,",
           "`python bench/peers.py`, `python bench/jobs.py`, `python bench/limits.py` (each rewrites this file).", ""]
    for name, section in (("editloop.json", editloop_section), ("peers.json", peers_section),
                          ("jobs.json", jobs_section), ("limits.json", limits_section)):
        data = _load(results, name)
        if data is not None:
            out += section(data)
    return "\n".join(out).rstrip("\n") + "\n"


def write(results: Path = RESULTS) -> None:
    """Write ``results``/SUMMARY.md (:func:`render`)."""
    (results / "SUMMARY.md").write_text(render(results))


if __name__ == "__main__":
    write()
    sys.exit(0)
