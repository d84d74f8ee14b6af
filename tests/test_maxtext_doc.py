"""docs/maxtext.md shows the real output of ``rcpc explain`` on the bundled RL recipe,
generated here so that its file:line:col references cannot drift from the recipe
(``pytest --snapshot-update`` rewrites the section)."""

from __future__ import annotations

from pathlib import Path

from rcpc.cli import main
from rcpc.testing.golden import GoldenExtension

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "maxtext.md"
ARGV = ["explain", "rl/qwen35_397b_256_v7x", "TRAINER_FLAGS", "custom_mesh_and_rule", "--variant", "tuned"]
BEGIN = f"<!-- begin generated: rcpc {' '.join(ARGV)} -->\n"
END = "<!-- end generated -->\n"


def test_the_explain_example_is_real_output(monkeypatch, capsys, snapshot, request):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    capsys.readouterr()
    code = main(ARGV)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "effective: cp-as-ep-dense-no-cp" in out and "recipes/rl/qwen35_397b_256_v7x.rcp:" in out
    head, rest = DOC.read_text(encoding="utf-8").split(BEGIN)
    _, tail = rest.split(END)
    request.node.golden_path = DOC
    assert snapshot(extension_class=GoldenExtension) == head + BEGIN + f"```\n{out.rstrip()}\n```\n" + END + tail
