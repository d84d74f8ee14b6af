"""bench/results/SUMMARY.md is written by bench/summary.py from the results JSON beside it
(peers.json, jobs.json, limits.json): it must be exactly what that script makes of them, so
that no figure in it is typed or edited by hand, and none goes stale while its JSON changes."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import bench_script

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"


def _summary():
    return bench_script("summary")


def test_summary_is_what_the_results_json_says():
    assert (RESULTS / "SUMMARY.md").read_text(encoding="utf-8") == _summary().render(RESULTS), \
        "bench/results/SUMMARY.md is stale or edited by hand: run python bench/summary.py"


def test_a_changed_figure_changes_the_summary(tmp_path):
    """The canary: the check above can fail (a figure in the JSON shows in the summary)."""
    for name in ("peers.json", "jobs.json", "limits.json"):
        if (RESULTS / name).exists():
            (tmp_path / name).write_text((RESULTS / name).read_text())
    summary = _summary()
    before = summary.render(tmp_path)
    jobs = json.loads((tmp_path / "jobs.json").read_text())
    jobs["per_n"][next(iter(jobs["per_n"]))]["ratio_wall"] = 9.87
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    after = summary.render(tmp_path)
    assert before != after and "9.87" in after
