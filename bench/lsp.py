#!/usr/bin/env python3
"""Language server latency: how long after an edit of the RL recipe `rcpc lsp` publishes
diagnostics, and answers a hover, measured through a real stdio pipe with pygls'
LanguageClient, against a cold `rcpc check` of the same recipe (the command an editor without
the server would run on save) measured in the same run, interleaved.

Each round edits the open buffer (a param default changed, a different value each round, so
every edit must be compiled again) and times, from the didChange notification sent:
* first: the first diagnostics published (parse and name errors; the server's debounce
  included);
* full: the full diagnostics (`rcpc check` of the file: every variant evaluated, contracts,
  MaxText and Kubernetes checks, lint), published after the first;
* hover, busy: a hover on a MaxText key sent as the first diagnostics arrive, while the full
  check runs on the compiler thread (it waits for it);
* hover, idle: the same hover once the full diagnostics are in;
then runs `RCPC_NO_CACHE=1 rcpc check RECIPE` as a whole process. Then bursts of edits sent
back to back (as fast typing sends them): the time from the last edit to its full
diagnostics, and how many of the replaced versions got diagnostics published (stale work
is skipped, so: none).
Target: first < 100 ms.

Usage: python bench/lsp.py [--runs 20]
Prints the medians and the median ratio full / check, and writes bench/results/lsp.json. Run
from the repository root with rcpc[lsp] installed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from lsprotocol import types as T
from pygls.lsp.client import LanguageClient

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "recipes/rl/qwen35_397b_256_v7x.rcp"
NAME = "rl/qwen35_397b_256_v7x"
RESULTS = REPO / "bench" / "results"
EDIT = "ROLLOUT_REPLICAS = param(int, default = 16,"


BURST = 8   # edits a burst sends back to back
KEY = '"custom_mesh_and_rule": "cp-as-ep"'   # the MaxText key hovered


async def serve_rounds(runs: int, check_times: list) -> dict:
    client = LanguageClient("bench", "1")
    published: asyncio.Queue = asyncio.Queue()
    client.feature(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(
        lambda ls, p: published.put_nowait((time.perf_counter(), p.version)))
    await client.start_io(sys.executable, "-m", "rcpc", "lsp", cwd=str(REPO))
    await client.initialize_async(T.InitializeParams(capabilities=T.ClientCapabilities(), root_uri=REPO.as_uri()))
    client.initialized(T.InitializedParams())
    text = RECIPE.read_text()
    assert EDIT in text and KEY in text
    uri = RECIPE.as_uri()
    at = text.index(KEY)
    hover_at = T.HoverParams(T.TextDocumentIdentifier(uri),
                             T.Position(text.count("\n", 0, at), at - text.rfind("\n", 0, at) + 2))
    client.text_document_did_open(T.DidOpenTextDocumentParams(
        text_document=T.TextDocumentItem(uri=uri, language_id="rcp", version=1, text=text)))
    for _ in range(2):   # the quick and the full diagnostics of the opened buffer
        await published.get()

    def edit(version: int) -> float:
        edited = text.replace(EDIT, f"ROLLOUT_REPLICAS = param(int, default = {17 + version % 8},")
        client.text_document_did_change(T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=edited)]))
        return time.perf_counter()

    async def hover() -> float:
        start = time.perf_counter()
        got = await client.text_document_hover_async(hover_at)
        assert "custom_mesh_and_rule" in got.contents.value
        return time.perf_counter() - start

    rounds = []
    for i in range(runs):
        version = i + 2
        start = edit(version)
        times = []
        busy = None
        while len(times) < 2:
            when, v = await published.get()
            if v == version:
                times.append(when - start)
                if busy is None:
                    busy = asyncio.ensure_future(hover())
        busy = await busy
        rounds.append((times[0], times[1], busy, await hover()))
        check_times.append(cold_check())
    bursts, stale = [], 0
    for i in range(runs):
        first = 1000 + i * BURST
        for version in range(first, first + BURST):
            start = edit(version)
        last = first + BURST - 1
        seen: dict = {}
        while seen.get(last, 0) < 2:
            when, v = await published.get()
            seen[v] = seen.get(v, 0) + 1
        bursts.append(when - start)
        stale += sum(n for v, n in seen.items() if v != last)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {"rounds": rounds, "bursts": bursts, "stale": stale}


def cold_check() -> float:
    env = {**os.environ, "RCPC_NO_CACHE": "1"}
    start = time.perf_counter()
    subprocess.run(["rcpc", "check", NAME], cwd=REPO, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    checks: list = []
    load_before = os.getloadavg()[0]
    served = asyncio.run(serve_rounds(args.runs, checks))
    rounds = served["rounds"]
    ms = lambda xs: round(statistics.median(xs) * 1000, 1)
    first, full = ms(r[0] for r in rounds), ms(r[1] for r in rounds)
    busy, idle = ms(r[2] for r in rounds), ms(r[3] for r in rounds)
    burst = ms(served["bursts"])
    check = ms(checks)
    ratio = statistics.median(r[1] / c for r, c in zip(rounds, checks))
    result = {"recipe": NAME, "runs": args.runs, "first_ms": first, "full_ms": full,
              "cold_check_ms": check, "full_over_check": round(ratio, 3),
              "first_ms_max": round(max(r[0] for r in rounds) * 1000, 1),
              "hover_busy_ms": busy, "hover_idle_ms": idle,
              "burst_edits": BURST, "burst_last_to_full_ms": burst, "burst_stale_published": served["stale"],
              "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],  # 1-min, before and after
              "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"}
    print(f"diagnostics after an edit of {NAME} ({args.runs} edits, medians):")
    print(f"  first (parse + names):  {first:7.1f} ms   (max {result['first_ms_max']} ms; target < 100 ms)")
    print(f"  full (rcpc check):      {full:7.1f} ms")
    print(f"  rcpc check, cold, CLI:  {check:7.1f} ms   full / check = {ratio:.2f}")
    print(f"  hover on a MaxText key: {idle:7.1f} ms idle, {busy:.1f} ms sent while the full check runs")
    print(f"  {BURST} edits back to back: {burst:.1f} ms from the last to its full diagnostics; "
          f"{served['stale']} publication(s) for the {BURST - 1} replaced versions")
    print(f"  load average (1 min) before / after: {result['load_average']}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "lsp.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
