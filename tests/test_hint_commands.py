"""Every rcpc command a diagnostic's hint tells the user to run exists: a hint naming ``rcpc
list``, which there is not, sent a user to ``invalid choice: 'list'`` (found by a user trial:
``rcpc lint nosuch``; ``rcpc diff --rev --variant`` said the same). The hints are read from the
source (each ``hint=`` argument's string parts, f-strings included), the commands from the CLI's
own list (a word after "rcpc" that ends in s is a verb of a sentence about rcpc)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import rcpc
from rcpc.cli import command_names

PACKAGE = Path(rcpc.__file__).parent


def _hint_texts() -> list[tuple[str, int, str]]:
    """(file, line, text) of each string part of every ``hint=`` keyword argument."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg == "hint":
                        out.extend((path.relative_to(PACKAGE).as_posix(), c.lineno, c.value)
                                   for c in ast.walk(kw.value)
                                   if isinstance(c, ast.Constant) and isinstance(c.value, str))
    return out


def test_every_command_a_hint_names_exists():
    hints = _hint_texts()
    assert len(hints) > 100  # the walk found the hints
    commands = set(command_names())
    # "rcpc WORD": a command, or rcpc in a sentence, its verb ending in s ("rcpc keeps ...": no command
    # ends so but params, a command); ".rcpc" is a directory's name
    named = [(f, line, m.group(1)) for f, line, text in hints
             for m in re.finditer(r"(?<![.\w])rcpc ([a-z][a-z-]*)", text)]
    assert named  # hints do name commands
    wrong = sorted(n for n in named if n[2] not in commands and not n[2].endswith("s"))
    assert not wrong, wrong
