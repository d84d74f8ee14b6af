"""docs/review.md shows the Markdown report of the seed change (the tuned toggle's appended
flag), generated here so that it cannot drift: the test builds a git repository whose last
commit adds the tuned layer to the bundled RL recipe, runs
``rcpc diff --rev HEAD~1 --format markdown``, and compares docs/review.md with that report
in its generated section. ``pytest --snapshot-update`` rewrites the section."""

from __future__ import annotations

from pathlib import Path

from rcpc.testing.golden import GoldenExtension
from tests.test_diff_rev import REPO, RL, edited, make_repo, run  # noqa: F401 (run: a fixture)

DOC = REPO / "docs" / "review.md"
BEGIN = "<!-- begin generated: rcpc diff --rev HEAD~1 --format markdown of the seed change -->\n"
END = "<!-- end generated -->\n"
TUNED_LAYER = ('    # Tuned: the 64-way dense-weight mesh rule, appended after the default (last value wins).\n'
               '    {"custom_mesh_and_rule": "cp-as-ep-dense-no-cp"} if TRAINER_TUNED_FLAGS else {},\n')


def seed_report(root: Path, run) -> str:
    before = edited(TUNED_LAYER, "")[RL]
    real = (REPO / RL).read_text()
    make_repo(root, [{RL: before}, {RL: real}])
    code, out, err = run(root, "diff", "--rev", "HEAD~1", "--format", "markdown")
    assert code == 0, err
    return out


def test_review_doc_shows_the_seed_change_report(tmp_path, run, snapshot, request):
    report = seed_report(tmp_path / "repo", run)
    # the claim the report proves: one flag appended in the tuned renders, nothing else
    assert "**4 changed, 0 added, 0 removed, 48 identical (of 52 renders).**" in report
    assert "**Contracts:** every contract holds." in report
    assert ("| `custom_mesh_and_rule` | `cp-as-ep → cp-as-ep-dense-no-cp` | `rl/qwen35_397b_256_v7x: "
            "{tuned, six-tuned} × {trainer.flags, trainer.yaml}` (4) |") in report
    doc = DOC.read_text(encoding="utf-8")
    head, rest = doc.split(BEGIN)
    _, tail = rest.split(END)
    request.node.golden_path = DOC
    assert snapshot(extension_class=GoldenExtension) == head + BEGIN + "\n" + report + "\n" + END + tail
