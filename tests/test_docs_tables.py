"""Every Markdown table in the project's documents renders as one (GitHub-flavoured Markdown:
a table is a header row, a delimiter row, then rows; a blank line ends it, and rows after it
without a header and delimiter of their own render as plain text). A new user found the last
two rows of docs/porting.md's table of XPK shapes shown as text, cut off by a blank line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted({*REPO.glob("*.md"), *(REPO / "docs").glob("*.md"), *(REPO / "bench").glob("*.md"),
                    *(REPO / "bench" / "results").glob("*.md"), *(REPO / "editors").rglob("*.md")})
ROW = re.compile(r"^\s*\|.*\|\s*$")
DELIMITER = re.compile(r"^\s*\|(\s*:?-+:?\s*\|)+\s*$")


def tables(text: str) -> list[tuple[int, list[str]]]:
    """(1-based first line, lines) of each run of table rows outside fenced code blocks."""
    out, run, fenced = [], None, False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and ROW.match(line):
            if run is None:
                run = (n, [])
                out.append(run)
            run[1].append(line)
        else:
            run = None
    return out


def test_the_check_finds_a_table_cut_by_a_blank_line():
    cut = "| a | b |\n|---|---|\n| 1 | 2 |\n\n| 3 | 4 |\n"
    assert [first for first, rows in tables(cut) if len(rows) < 2 or not DELIMITER.match(rows[1])] == [5]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_table_has_its_header_and_delimiter(path):
    broken = [first for first, rows in tables(path.read_text(encoding="utf-8"))
              if len(rows) < 2 or not DELIMITER.match(rows[1])]
    assert not broken, f"{path.relative_to(REPO)}: rows without a header and delimiter row at lines {broken}"
