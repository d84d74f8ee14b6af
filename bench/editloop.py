#!/usr/bin/env python3
"""Edit-loop benchmark: what a recipe author waits for, as whole processes, against
`python -c pass` (the same interpreter) measured in the same rounds, interleaved, as ratios
(the median of the per-round ratios), in wall-clock and CPU time (the process and the
children it waited for: ``wait4``). rcpc runs as one process (docs/cli.md, *One process*).

Each round, for this rcpc and, with ``--against RCPC``, another install's (the last release:
``main`` before a branch, in its own virtual environment), on its own copy of the bundled
workspace and goldens, in its own user cache:

* python: ``python -c pass``;
* edit: one MaxText flag of the RL recipe changed (a new value each round), then
  ``rcpc build <recipe>``: the recipe and its libraries are parsed and evaluated, the
  output is published;
* golden: the same edit, then ``python -m pytest -q rcp.toml`` (the shipped pytest plugin on
  the goldens: it fails, as after any edit, and says what changed);
* test: the same edit, then ``rcpc test`` (the same golden check without pytest: it fails
  after the edit, with the same account of what changed; docs/review.md);
* pytest: ``python -m pytest -q`` of an empty directory: pytest's own start-up and teardown
  with the plugins installed beside it (the floor under golden: nothing collected);
* editnc: an edit and its build as ``edit``, with ``RCPC_NO_CACHE=1`` (``edit / editnc``: what
  the caches save an edit; with ``first - nocache``, how many edits repay what they cost a
  first build);
* noop: ``rcpc build <recipe>`` right after the edit's build, before replay may record it;
* check: ``rcpc check`` of the workspace after the edit;
* first: the first build after a clone: ``rcpc build <recipe>`` with an empty user cache
  (a new ``XDG_CACHE_HOME``) into a new output directory (parse, evaluate, validate, emit,
  write every render and every cache entry);
* nocache: the same first build with ``RCPC_NO_CACHE=1``: no cache entry looked up, made or
  written, the floor ``first`` is weighed against (``first / nocache``: what the caches cost a
  first build).

Targets (issue 37): edit <= 8x python -c pass, the golden check <= 2x edit (``test``; ``golden``,
pytest's, is reported beside it); (issue 41) first <= 10x
python -c pass, and no cache that costs on a first build (``first / nocache`` <= 1.0).

Usage: python bench/editloop.py [--runs N] [--against PATH/TO/rcpc]
Writes bench/results/editloop.json, then bench/results/SUMMARY.md (bench/summary.py). Run
from the repository root with rcpc installed in a regular (not editable) install with its test dependencies (``pip install '.[test]'``: the
pytest plugins of the repository's test venv are what ``pytest`` loads);
PYTHONDONTWRITEBYTECODE is unset for the runs (without byte-code files every import compiles
its module, and pytest rewrites the plugin's modules again each run).
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
import summary  # noqa: E402

RECIPE = "rl/qwen35_397b_256_v7x"
FLAG = '"ragged_buffer_factor": 2.0,'
ROWS = ("python", "edit", "editnc", "golden", "test", "pytest", "noop", "check", "first", "nocache")
OVER_EDIT = ("golden", "test", "pytest")  # rows also given as a ratio to edit


def timed(cmd: list[str], cwd: Path, env: dict, ok=(0,)) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of the process ``cmd``: its own and its waited-for
    children's user and system time."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) not in ok:
        sys.exit(f"{' '.join(cmd)} failed in {cwd}: {err.decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


class Subject:
    """One rcpc install: its command, its interpreter, its workspace and user cache."""

    def __init__(self, label: str, rcpc: str, repo: Path, tmp: Path, env: dict):
        self.label, self.rcpc, self.tmp = label, rcpc, tmp
        self.python = str(Path(rcpc).with_name("python"))
        if not Path(self.python).exists():
            sys.exit(f"no python beside {rcpc}")
        self.ws = tmp / label / "ws"
        self.ws.mkdir(parents=True)
        (self.ws / "empty").mkdir()
        for name in ("rcp.toml",):
            shutil.copy2(repo / name, self.ws / name)
        for name in ("recipes", "golden"):
            shutil.copytree(repo / name, self.ws / name)
        self.env = {**env, "XDG_CACHE_HOME": str(tmp / label / "cache")}
        self.recipe = self.ws / "recipes" / f"{RECIPE}.rcp"
        self.text = self.recipe.read_text()
        assert FLAG in self.text, FLAG
        self.series: dict[str, list[tuple[float, float]]] = {k: [] for k in ROWS}
        # an install before rcpc test (main before this branch) has no test row
        self.has_test = subprocess.run([rcpc, "test", "--help"], cwd=self.ws, env=self.env,
                                       capture_output=True).returncode == 0

    def edit(self, value: str) -> None:
        self.recipe.write_text(self.text.replace(FLAG, f'"ragged_buffer_factor": {value},'))

    def build(self):
        return timed([self.rcpc, "build", RECIPE, "-o", "out"], self.ws, self.env)

    def golden(self):
        return timed([self.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "rcp.toml"], self.ws, self.env,
                     ok=(0, 1))

    def first(self, i: int, cache: bool = True):
        """A build after a clone: an empty user cache, a new output directory (``cache``
        False: with ``RCPC_NO_CACHE=1``)."""
        fresh = self.tmp / self.label / f"first-{i}{'' if cache else '-nocache'}"
        env = {**self.env, "XDG_CACHE_HOME": str(fresh / "cache"), **({} if cache else {"RCPC_NO_CACHE": "1"})}
        return timed([self.rcpc, "build", RECIPE, "-o", str(fresh / "out")], self.ws, env)

    def round(self, i: int) -> None:
        self.series["python"].append(timed([self.python, "-c", "pass"], self.ws, self.env))
        self.series["first"].append(self.first(i))
        self.series["nocache"].append(self.first(i, cache=False))
        self.edit(f"{3 + i}.5")
        self.series["edit"].append(self.build())
        os.utime(self.recipe)  # changed just now (racy): neither recorded nor replayed, so a real build
        self.series["noop"].append(self.build())
        self.series["check"].append(timed([self.rcpc, "check"], self.ws, self.env))
        self.edit(f"{3 + i}.125")
        self.series["editnc"].append(timed([self.rcpc, "build", RECIPE, "-o", "out"], self.ws,
                                           {**self.env, "RCPC_NO_CACHE": "1"}))
        self.edit(f"{3 + i}.25")
        self.series["golden"].append(self.golden())
        self.edit(f"{3 + i}.75")
        if self.has_test:
            self.series["test"].append(timed([self.rcpc, "test"], self.ws, self.env, ok=(1,)))
        self.series["pytest"].append(timed([self.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "empty"],
                                           self.ws, self.env, ok=(5,)))

    def warm(self) -> None:
        for i in range(2):  # byte code, page cache, grammar tables, ASTs, build cache, rewritten modules
            self.edit(f"1.{i + 1}")
            self.build()
            self.golden()
            if self.has_test:
                timed([self.rcpc, "test"], self.ws, self.env, ok=(0, 1))
            self.first(-1 - i)

    def summary(self) -> dict:
        med = statistics.median
        base = self.series["python"]
        out: dict = {"rcpc": self.rcpc}
        for k in ROWS:
            rows = self.series[k]
            if not rows:
                continue
            out[k] = {"wall_median_s": med(w for w, _ in rows), "cpu_median_s": med(c for _, c in rows)}
            if k != "python":
                out[k]["wall_ratio_to_python"] = med(w / b for (w, _), (b, _) in zip(rows, base))
                out[k]["cpu_ratio_to_python"] = med(c / b for (_, c), (_, b) in zip(rows, base))
        for k in (k for k in OVER_EDIT if self.series[k]):
            out[f"{k}_over_edit"] = {
                "wall": med(g / e for (g, _), (e, _) in zip(self.series[k], self.series["edit"])),
                "cpu": med(g / e for (_, g), (_, e) in zip(self.series[k], self.series["edit"]))}
        out["first_over_nocache"] = {
            "wall": med(f / n for (f, _), (n, _) in zip(self.series["first"], self.series["nocache"])),
            "cpu": med(f / n for (_, f), (_, n) in zip(self.series["first"], self.series["nocache"]))}
        out["edit_over_editnc"] = {
            "wall": med(e / n for (e, _), (n, _) in zip(self.series["edit"], self.series["editnc"])),
            "cpu": med(e / n for (_, e), (_, n) in zip(self.series["edit"], self.series["editnc"]))}
        # what the caches cost a first build over what they save an edit (CPU medians): the edits that repay it
        saved = out["editnc"]["cpu_median_s"] - out["edit"]["cpu_median_s"]
        cost = out["first"]["cpu_median_s"] - out["nocache"]["cpu_median_s"]
        out["repaid_after_edits"] = cost / saved if saved > 0 else None
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--against", metavar="RCPC", help="another install's rcpc, timed in the same rounds")
    args = ap.parse_args()
    repo = Path(__file__).resolve().parents[1]
    rcpc = shutil.which("rcpc") or sys.exit("rcpc is not installed (pip install .)")
    tmp = Path(tempfile.mkdtemp(prefix="rcpc-editloop-"))
    env = {k: v for k, v in os.environ.items() if k not in ("RCPC_NO_CACHE", "PYTHONDONTWRITEBYTECODE")}
    subjects = [Subject("this", rcpc, repo, tmp, env)]
    if args.against:
        subjects.append(Subject("against", args.against, repo, tmp, env))
    load_before = os.getloadavg()[0]
    for s in subjects:
        s.warm()
    for i in range(args.runs):
        for s in subjects[::1 if i % 2 else -1]:  # which goes first alternates
            s.round(i)
    result = {"runs": args.runs, "python": platform.python_version(), "machine": platform.machine(),
              "cpus": os.cpu_count(), "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
    for s in subjects:
        figures = result[s.label] = s.summary()
        print(f"{s.label}: {s.rcpc}")
        print(f"  python -c pass    wall {figures['python']['wall_median_s'] * 1000:6.1f} ms   "
              f"cpu {figures['python']['cpu_median_s'] * 1000:6.1f} ms")
        for k in (k for k in ROWS[1:] if k in figures):
            row = figures[k]
            print(f"  {k:16s}  wall {row['wall_median_s'] * 1000:6.1f} ms {row['wall_ratio_to_python']:5.1f}x   "
                  f"cpu {row['cpu_median_s'] * 1000:6.1f} ms {row['cpu_ratio_to_python']:5.1f}x python -c pass")
        for k in (k for k in OVER_EDIT if f"{k}_over_edit" in figures):
            print(f"  {k + ' / edit':16s}  wall {figures[f'{k}_over_edit']['wall']:.2f}x   "
                  f"cpu {figures[f'{k}_over_edit']['cpu']:.2f}x")
        print(f"  {'first / nocache':16s}  wall {figures['first_over_nocache']['wall']:.2f}x   "
              f"cpu {figures['first_over_nocache']['cpu']:.2f}x   (what the caches cost a first build)")
        print(f"  {'edit / editnc':16s}  wall {figures['edit_over_editnc']['wall']:.2f}x   "
              f"cpu {figures['edit_over_editnc']['cpu']:.2f}x   (what the caches save an edit; first build's cost "
              f"repaid after {figures['repaid_after_edits'] or float('inf'):.1f} edits)")
    print(f"load average (1 min) before / after {result['load_average']}")
    shutil.rmtree(tmp, ignore_errors=True)
    (repo / "bench" / "results" / "editloop.json").write_text(json.dumps(result, indent=2) + "\n")
    summary.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
