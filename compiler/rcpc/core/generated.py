"""Files of the package generated from others (the compiled JobSet validator, the record
templates, the scanner's tables): written, or checked, by their generator's command."""

from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(expected: dict[Path, str], argv: list[str], command: str) -> int:
    """Write each file of ``expected`` ({path: text}); with ``--check`` in ``argv``, write
    nothing and return 1, naming each file that differs (or is missing) on stderr with the
    ``command`` that writes it, else 0."""
    if "--check" in argv:
        stale = [p for p, text in expected.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
        for p in stale:
            print(f"{p} is stale: run {command}", file=sys.stderr)
        return 1 if stale else 0
    for p, text in expected.items():
        p.write_text(text, encoding="utf-8")
    return 0
