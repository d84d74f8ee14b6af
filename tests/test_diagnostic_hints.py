"""Every error rcpc reports says what to do: a ``help:`` line (DESIGN.md §6). A new user found
E0301, E0602, E1002, E1003 and E1101 (among 18 codes of the catalog) printed without one.

The kind is checked where errors are made: every call in ``compiler/rcpc`` that makes an
error diagnostic (``error``, ``Diagnostic``, a manifest rule's ``diag``/``_diag``, a JobSet
finding's ``add``, with an ``E`` code) passes a hint, and no hint that can come out as None
(a bare ``did_you_mean(...)`` or ``None``). The catalog test checks the printed ``help:`` line
of every code's example."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "compiler" / "rcpc"
# the hint's position among each maker's positional arguments
HINT_AT = {"error": 3, "Diagnostic": 4, "diag": 5, "_diag": 5, "add": 4}


def _name(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _is_error_code(node) -> bool:
    v = node.value if isinstance(node, ast.Constant) else None
    return type(v) is str and len(v) == 5 and v[0] == "E" and v[1:].isdigit()


def _maybe_none(hint) -> bool:
    """A hint expression that can be None at run time: None, or a did_you_mean() alone."""
    if isinstance(hint, ast.Constant):
        return hint.value is None
    return isinstance(hint, ast.Call) and _name(hint) == "did_you_mean"


def errors_without_hint(source: str) -> list[tuple[int, str]]:
    """(line, code) of each error made in ``source`` without a hint that is always given."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and _name(node) in HINT_AT and node.args and _is_error_code(node.args[0])):
            continue
        at = HINT_AT[_name(node)]
        hint = next((k.value for k in node.keywords if k.arg == "hint"), None)
        if hint is None and len(node.args) > at:
            hint = node.args[at]
        if hint is None or _maybe_none(hint):
            out.append((node.lineno, node.args[0].value))
    return sorted(out)


def test_the_scan_finds_an_error_without_a_hint():
    source = ('raise error("E0301", "m", span)\n'
              'raise error("E0301", "m", span, hint=did_you_mean(w, names))\n'
              'out.append(Diagnostic("E1004", "m", span, related=()))\n'
              'found.add("E1011", at, "m", span)\n'
              'raise error("E0301", "m", span, "write an int")\n'
              'raise error("E0301", "m", span, hint=did_you_mean(w, names) or "one of ...")\n'
              'warn(Diagnostic("W0323", "m", span))\n')
    assert errors_without_hint(source) == [(1, "E0301"), (2, "E0301"), (3, "E1004"), (4, "E1011")]


def test_every_error_rcpc_makes_has_a_hint():
    missing = [f"{path.relative_to(PACKAGE)}:{line}: {code}"
               for path in sorted(PACKAGE.rglob("*.py")) if path.name != "catalog.py"
               for line, code in errors_without_hint(path.read_text(encoding="utf-8"))]
    assert missing == []
