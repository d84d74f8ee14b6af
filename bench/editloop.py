#!/usr/bin/env python3
"""Edit-loop benchmark: what a recipe author waits for, as whole `rcpc` processes against
`python -c pass` measured in the same run, interleaved, as ratios (median of the per-round
ratios).

* edit: one MaxText flag of the RL recipe changed (a new value each round), then
  `rcpc build <recipe>`: the recipe is parsed and evaluated, its libraries come from the AST
  cache;
* touched: the recipe's mtime moved, bytes unchanged, then `rcpc build <recipe>`;
* clone: a fresh copy of the workspace at a new path (no replay record, no build-cache entry
  for it), `rcpc build <recipe>`, with the user cache kept (grammar tables, ASTs) and with an
  empty one (`clone-cold`);
* check/build: cold (`RCPC_NO_CACHE=1`) `rcpc check -j 1` against `rcpc build -j 1` of the
  bundled workspace (target: check <= 1.3x build);
* through the build server (``rcpc server start``, docs/cli.md): the same edit then
  `rcpc build <recipe>` as a client of a server started for the run (`edit-server`, against
  `edit` in-process), a build with nothing to do right after it, before replay may record
  it (`noop`, `noop-server`), and a warm `rcpc check` of the workspace after the edit
  (`check-warm`, `check-server`); every other row runs in-process (`RCPC_NO_SERVER=1`);
* variants: a recipe with V variants (V = 1, 10, 100, 400; each sets a param that one flag
  and one manifest use, with a contract), cold `rcpc check -j 1` and `rcpc build -j 1`;
  the time per variant should stay flat (linear).

With ``--settled``, only the served edit, each build followed by a wait until the server has
no running child (``rcpc server status``: ``0 running``; a child answers before its deferred
work, and the server then forks its next one), so that ``python -c pass`` is never timed
against that background work; ``--against RCPC`` adds another install's ``rcpc`` (an older
main, say), with its own server and workspace, interleaved in the same rounds.

Usage: python bench/editloop.py [--runs N] [--variant-runs N] [--no-variants]
       python bench/editloop.py --settled [--runs N] [--against RCPC]
Writes bench/results/editloop.json (``--settled``: editloop-settled.json). Run from the repository root with rcpc installed (a
regular `pip install .`: an editable install adds an import hook); unset
PYTHONDONTWRITEBYTECODE (without byte-code files every import compiles its module).
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

RECIPE = "rl/qwen35_397b_256_v7x"
FLAG = '"ragged_buffer_factor": 2.0,'


CPU: dict[str, list[float]] = {}  # series -> CPU seconds (user + system) of the process itself


def timed(cmd: list[str], cwd, env=None, cpu: str | None = None) -> float:
    """Wall-clock seconds of the process ``cmd``; with ``cpu``, its own CPU time (not its
    children's; a build server's child is not the client's) is added to ``CPU[cpu]``."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stderr.close()
    if proc.returncode:
        sys.exit(f"{' '.join(cmd)} failed in {cwd}: {err.decode()[-2000:]}")
    if cpu is not None:
        CPU.setdefault(cpu, []).append(usage.ru_utime + usage.ru_stime)
    return took


def copy_workspace(repo: Path, dest: Path) -> Path:
    dest.mkdir(parents=True)
    shutil.copy2(repo / "rcp.toml", dest / "rcp.toml")
    shutil.copytree(repo / "recipes", dest / "recipes")
    return dest


def variants_recipe(v: int) -> str:
    lines = ['N = param(int, default = 0)',
             'F = maxtext_flags({"steps": 100 + N, "per_device_batch_size": 1})',
             'flag_file(name = "trainer", flags = F)',
             'manifest(name = "cm", apiVersion = "v1", kind = "ConfigMap", data = {"n": str(N)})',
             'variant("default")']
    lines += [f'variant("v{i}", set = {{"N": {i}}}, against = "default", '
              f'changes = {{"trainer.flags": ["steps"], "cm.yaml": ["data.n"]}})' for i in range(1, v)]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--variant-runs", type=int, default=3)
    ap.add_argument("--no-variants", action="store_true", help="skip the variants series")
    ap.add_argument("--settled", action="store_true", help="the served edit alone, waiting out background work")
    ap.add_argument("--against", metavar="RCPC", help="with --settled: another rcpc to time in the same rounds")
    args = ap.parse_args()
    repo = Path(__file__).resolve().parents[1]
    rcpc = shutil.which("rcpc") or sys.exit("rcpc is not installed (pip install .)")
    tmp = Path(tempfile.mkdtemp(prefix="rcpc-editloop-"))
    env = {k: v for k, v in os.environ.items() if k not in ("RCPC_NO_CACHE", "PYTHONDONTWRITEBYTECODE",
                                                            "RCPC_NO_SERVER")}
    env["XDG_CACHE_HOME"] = str(tmp / "cache")
    (tmp / "run").mkdir(mode=0o700)
    env["XDG_RUNTIME_DIR"] = str(tmp / "run")  # the build server's socket
    server_env = dict(env)
    env["RCPC_NO_SERVER"] = "1"
    cold_env = {**env, "RCPC_NO_CACHE": "1"}
    if args.settled:
        return _settled(args, repo, [rcpc, *([args.against] if args.against else [])], tmp, server_env)
    try:
        return _run(args, repo, rcpc, tmp, env, server_env, cold_env)
    finally:
        subprocess.run([rcpc, "server", "stop"], env=server_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _run(args, repo: Path, rcpc: str, tmp: Path, env: dict, server_env: dict, cold_env: dict) -> int:
    ws = copy_workspace(repo, tmp / "ws")
    recipe = ws / "recipes" / f"{RECIPE}.rcp"
    text = recipe.read_text()
    assert FLAG in text, FLAG
    build = [rcpc, "build", RECIPE, "-o", "out"]
    baseline = [sys.executable, "-c", "pass"]
    load_before = os.getloadavg()[0]
    started = subprocess.run([rcpc, "server", "start"], env=server_env, capture_output=True, text=True)
    if started.returncode:
        sys.exit(f"rcpc server start failed: {started.stderr}")
    for _ in range(2):  # warm-up: byte code, page cache, grammar tables, ASTs, build cache
        timed(build, ws, env)
        timed(build, ws, server_env)
        timed(baseline, ws, env)
    series: dict[str, list[float]] = {k: [] for k in
                                      ("python", "edit", "edit-server", "noop", "noop-server", "check-warm",
                                       "check-server", "touched", "clone", "clone-cold", "check", "build")}
    for i in range(args.runs):
        series["python"].append(timed(baseline, ws, env, cpu="python"))
        # in-process and through the server alternate which goes first
        for where in (("edit", env), ("edit-server", server_env))[::1 if i % 2 else -1]:
            recipe.write_text(text.replace(FLAG, f'"ragged_buffer_factor": {3 + i}.{5 if where[0] == "edit" else 25},'))
            series[where[0]].append(timed(build, ws, where[1], cpu=where[0]))
            os.utime(recipe)  # changed just now (racy): neither recorded nor replayed, so a real build
            series["noop" + where[0][4:]].append(timed(build, ws, where[1]))
        for where in (("check-warm", env), ("check-server", server_env))[::1 if i % 2 else -1]:
            os.utime(recipe)
            series[where[0]].append(timed([rcpc, "check"], ws, where[1]))
        time.sleep(2.1)  # past replay's racy-clean window: the next build records
        timed(build, ws, env)
        os.utime(recipe)  # touched, bytes unchanged
        series["touched"].append(timed(build, ws, env))
        clone = copy_workspace(repo, tmp / f"clone{i}")
        series["clone"].append(timed(build, clone, env))
        shutil.rmtree(clone)
        clone = copy_workspace(repo, tmp / f"clone-cold{i}")
        series["clone-cold"].append(timed(build, clone, {**env, "XDG_CACHE_HOME": str(tmp / f"cache{i}")}))
        shutil.rmtree(clone)
        shutil.rmtree(tmp / f"cache{i}", ignore_errors=True)
        series["check"].append(timed([rcpc, "check", "-j", "1"], ws, cold_env))
        series["build"].append(timed([rcpc, "build", "-j", "1", "-o", "out-all"], ws, cold_env))
    med = statistics.median
    base = series["python"]
    result: dict = {"runs": args.runs, "baseline_median_s": med(base), "python": platform.python_version(),
                    "machine": platform.machine(), "cpus": os.cpu_count(),
                    "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]}  # 1-min, before, after
    served = subprocess.run([rcpc, "server", "status"], env=server_env, capture_output=True, text=True).stdout
    result["server_status"] = served.splitlines()[0] if served else "not running"
    print(result["server_status"])
    for k in ("edit", "edit-server", "noop", "noop-server", "check-warm", "check-server", "touched", "clone",
              "clone-cold"):
        ratios = [a / b for a, b in zip(series[k], base)]
        result[k] = {"median_s": med(series[k]), "ratio_to_python": med(ratios),
                     "round_ratios": [round(r, 2) for r in ratios]}
        print(f"{k:10s} median {med(series[k]) * 1000:7.1f} ms  {result[k]['ratio_to_python']:5.1f}x python -c pass")
    result["client_cpu_over_python"] = med([c / p for c, p in zip(CPU["edit-server"], CPU["python"])])
    result["in_process_cpu_over_python"] = med([c / p for c, p in zip(CPU["edit"], CPU["python"])])
    print(f"CPU time of the rcpc process itself, over python -c pass's: client of the server "
          f"{result['client_cpu_over_python']:.2f}x, in-process build {result['in_process_cpu_over_python']:.1f}x")
    result["check_over_build"] = med([c / b for c, b in zip(series["check"], series["build"])])
    for k in ("edit", "edit-server"):
        print(f"{k} per round (x python -c pass): {result[k]['round_ratios']}")
    print(f"python -c pass median {med(base) * 1000:.1f} ms; load average (1 min) before / after "
          f"{result['load_average']}")
    print(f"cold check -j 1 {med(series['check']) * 1000:.0f} ms, cold build -j 1 {med(series['build']) * 1000:.0f} ms: "
          f"check/build {result['check_over_build']:.2f}")
    result["variants"] = []
    for v in () if args.no_variants else (1, 10, 100, 400):
        vws = tmp / f"variants{v}"
        (vws / "recipes").mkdir(parents=True)
        (vws / "rcp.toml").write_text("")
        (vws / "recipes" / "v.rcp").write_text(variants_recipe(v))
        c = [timed([rcpc, "check", "-j", "1"], vws, cold_env) for _ in range(args.variant_runs)]
        b = [timed([rcpc, "build", "-j", "1", "-o", "out"], vws, cold_env) for _ in range(args.variant_runs)]
        row = {"V": v, "check_median_s": med(c), "build_median_s": med(b)}
        result["variants"].append(row)
        print(f"V={v:4d}: cold check {med(c) * 1000:7.0f} ms, cold build {med(b) * 1000:7.0f} ms")
    if result["variants"]:
        first, last = result["variants"][1], result["variants"][-1]  # per extra variant, 10 -> 400
        result["check_ms_per_variant_10_400"] = (last["check_median_s"] - first["check_median_s"]) / 390 * 1000
        print(f"check: {result['check_ms_per_variant_10_400']:.2f} ms per extra variant (V 10 -> 400)")
    subprocess.run([rcpc, "server", "stop"], env=server_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(tmp, ignore_errors=True)  # the server stopped first: its socket is in there
    dest = repo / "bench" / "results" / "editloop.json"
    dest.write_text(json.dumps(result, indent=2) + "\n")
    return 0


def _settled(args, repo: Path, rcpcs: list[str], tmp: Path, env: dict) -> int:
    """The served edit of each of ``rcpcs`` against ``python -c pass``, waiting after each
    build until its server has no running child; writes bench/results/editloop-settled.json."""
    runs = []  # (rcpc, workspace, recipe file, environment) for each rcpc
    for n, rcpc in enumerate(rcpcs):
        own = tmp / f"settled{n}"
        (own / "run").mkdir(parents=True, mode=0o700)
        e = {**env, "XDG_CACHE_HOME": str(own / "cache"), "XDG_RUNTIME_DIR": str(own / "run")}
        ws = copy_workspace(repo, own / "ws")
        started = subprocess.run([rcpc, "server", "start"], env=e, capture_output=True, text=True)
        if started.returncode:
            sys.exit(f"{rcpc} server start failed: {started.stderr}")
        runs.append((rcpc, ws, ws / "recipes" / f"{RECIPE}.rcp", e))
    text = runs[0][2].read_text()
    assert FLAG in text, FLAG
    baseline = [sys.executable, "-c", "pass"]

    def edit_and_build(run, value: str) -> float:
        rcpc, ws, recipe, e = run
        recipe.write_text(text.replace(FLAG, f'"ragged_buffer_factor": {value},'))
        took = timed([rcpc, "build", RECIPE], ws, e)
        end = time.monotonic() + 60
        while b"0 running" not in subprocess.run([rcpc, "server", "status"], env=e, capture_output=True).stdout:
            if time.monotonic() > end:
                sys.exit(f"{rcpc}: a child of the build server never ended")
            time.sleep(0.01)
        time.sleep(0.05)  # the server forks its next child
        return took

    try:
        for i in range(2):  # warm-up: byte code, page cache, ASTs
            for run in runs:
                edit_and_build(run, f"{1 + i}.5")
        python: list[float] = []
        series: dict[str, list[float]] = {run[0]: [] for run in runs}
        load_before = os.getloadavg()[0]
        for i in range(args.runs):
            python.append(timed(baseline, tmp))
            for run in runs[::1 if i % 2 else -1]:
                series[run[0]].append(edit_and_build(run, f"{3 + i}.0"))
    finally:
        for rcpc, _, _, e in runs:
            subprocess.run([rcpc, "server", "stop"], env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    med = statistics.median
    result: dict = {"runs": args.runs, "baseline_median_s": med(python), "python": platform.python_version(),
                    "cpus": os.cpu_count(), "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
    print(f"python -c pass median {med(python) * 1000:.1f} ms; load average (1 min) before / after "
          f"{result['load_average']}")
    for (rcpc, times), label in zip(series.items(), ("edit-server", "against")):
        ratios = [a / b for a, b in zip(times, python)]
        result[label] = {"rcpc": rcpc, "median_s": med(times), "ratio_to_python": med(ratios),
                         "round_ratios": [round(r, 2) for r in ratios]}
        print(f"{rcpc}: edit-server (settled) median {med(times) * 1000:.1f} ms  {med(ratios):.2f}x python -c pass "
              f"(rounds {min(ratios):.2f}x-{max(ratios):.2f}x)")
    shutil.rmtree(tmp, ignore_errors=True)
    (repo / "bench" / "results" / "editloop-settled.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
