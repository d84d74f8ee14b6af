#!/usr/bin/env python3
"""Language server latency: how long after an edit of the RL recipe `rcpc lsp` publishes
diagnostics, measured through a real stdio pipe with pygls' LanguageClient, against a cold
`rcpc check` of the same recipe (the command an editor without the server would run on save)
measured in the same run, interleaved.

Each round edits the open buffer (a param default changed, a different value each round, so
every edit must be compiled again) and times, from the didChange notification sent:
* first: the first diagnostics published (parse and name errors; the server's debounce
  included);
* full: the full diagnostics (every variant evaluated, contracts, MaxText and Kubernetes
  checks, lint), published after the first;
then runs `RCPC_NO_CACHE=1 rcpc check RECIPE` as a whole process.
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


async def serve_rounds(runs: int, check_times: list) -> list[tuple[float, float]]:
    client = LanguageClient("bench", "1")
    published: asyncio.Queue = asyncio.Queue()
    client.feature(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(
        lambda ls, p: published.put_nowait((time.perf_counter(), p.version)))
    await client.start_io(sys.executable, "-m", "rcpc", "lsp", cwd=str(REPO))
    await client.initialize_async(T.InitializeParams(capabilities=T.ClientCapabilities(), root_uri=REPO.as_uri()))
    client.initialized(T.InitializedParams())
    text = RECIPE.read_text()
    assert EDIT in text
    uri = RECIPE.as_uri()
    client.text_document_did_open(T.DidOpenTextDocumentParams(
        text_document=T.TextDocumentItem(uri=uri, language_id="rcp", version=1, text=text)))
    for _ in range(2):   # the quick and the full diagnostics of the opened buffer
        await published.get()
    out = []
    for i in range(runs):
        version = i + 2
        edited = text.replace(EDIT, f"ROLLOUT_REPLICAS = param(int, default = {17 + i % 8},")
        start = time.perf_counter()
        client.text_document_did_change(T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=edited)]))
        times = []
        while len(times) < 2:
            at, v = await published.get()
            if v == version:
                times.append(at - start)
        out.append((times[0], times[1]))
        check_times.append(cold_check())
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return out


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
    rounds = asyncio.run(serve_rounds(args.runs, checks))
    first = statistics.median(r[0] for r in rounds) * 1000
    full = statistics.median(r[1] for r in rounds) * 1000
    check = statistics.median(checks) * 1000
    ratio = statistics.median(r[1] / c for r, c in zip(rounds, checks))
    result = {"recipe": NAME, "runs": args.runs, "first_ms": round(first, 1), "full_ms": round(full, 1),
              "cold_check_ms": round(check, 1), "full_over_check": round(ratio, 3),
              "first_ms_max": round(max(r[0] for r in rounds) * 1000, 1),
              "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],  # 1-min, before and after
              "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"}
    print(f"diagnostics after an edit of {NAME} ({args.runs} edits, medians):")
    print(f"  first (parse + names):  {first:7.1f} ms   (max {result['first_ms_max']} ms; target < 100 ms)")
    print(f"  full (check + lint):    {full:7.1f} ms")
    print(f"  rcpc check, cold, CLI:  {check:7.1f} ms   full / check = {ratio:.2f}")
    print(f"  load average (1 min) before / after: {result['load_average']}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "lsp.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
