"""Spec tests: the language's behaviour as ``.rcp`` files with the expected diagnostics inline
(tests/spec/README.md describes the format; starlark-go's ``.star`` tests and CUE's txtar
cases are the models).

Each case of each ``tests/spec/*.rcp`` file is written into a fresh workspace and its recipe
checked with ``rcpc check --notes`` (every variant, contracts, the files it loads); the
diagnostics it prints must be exactly the ones the case's ``###`` annotations expect: a
missing one and an unexpected one both fail the test, which names them by file and line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs
import pytest

SPEC_DIR = Path(__file__).with_name("spec")
RCP_TOML = 'recipe_dirs = ["recipes"]\nlibrary_dirs = ["recipes/lib"]\n'
MAIN = "recipes/r.rcp"

_CASE = re.compile(r"^# ---(?:\s+(.*?))?\s*$")
_FILE = re.compile(r"^# -- (\S+) --\s*$")
_DIRECTIVE = re.compile(r"^# spec:\s*(.*?)\s*$")
_EXPECT = re.compile(r"^(error|warning|note)\[([A-Z][0-9]{4})\](?:@(?:(\d+):)?(\d+))?(?::\s*(.*))?$")
_RELATED = re.compile(r"^related:\s*(.+?) at (?:(\S+?):)?(\d+):(\d+)$")
_OPTIONS = {"lint", "workspace"}


@attrs.define
class Expected:
    """One expected diagnostic: where (file, line; the column when pinned) and what (severity,
    code; the message, hint and related spans when given)."""

    path: str
    line: int
    severity: str
    code: str
    col: int | None = None
    message: str | None = None
    hint: str | None = None
    related: list | None = None
    source_line: int = 0  # where the annotation is written in the spec file

    def matches(self, d: dict) -> bool:
        span = d["span"]
        if span is None or (span["path"], span["line"]) != (self.path, self.line):
            return False
        if (d["severity"], d["code"]) != (self.severity, self.code):
            return False
        if self.col is not None and span["col"] != self.col:
            return False
        if self.message is not None and d["message"] != self.message:
            return False
        if self.hint is not None and d["hint"] != self.hint:
            return False
        if self.related is not None:
            got = [(r["label"], r["span"]["path"], r["span"]["line"], r["span"]["col"]) for r in d["related"]]
            if got != self.related:
                return False
        return True

    def __str__(self) -> str:
        col = f":{self.col}" if self.col is not None else ""
        what = f": {self.message}" if self.message is not None else ""
        return f"{self.path}:{self.line}{col}: {self.severity}[{self.code}]{what}"


@attrs.define
class Case:
    """One independent case: its files (path → text), expectations and options."""

    spec: str
    line: int  # first line of the case in the spec file
    title: str
    files: dict
    expected: list
    options: set

    @property
    def id(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")
        return f"{self.spec}:{self.line}" + (f"-{slug}" if slug else "")


def parse_spec(path: Path) -> list[Case]:
    """The cases of one spec file (a case holding nothing but comments is none). Raises
    ``ValueError`` for a malformed annotation."""
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    heads = [(0, "")] + [(i + 1, m.group(1) or "") for i, line in enumerate(lines) if (m := _CASE.match(line))]
    cases = []
    for (first, title), (nxt, _) in zip(heads, heads[1:] + [(len(lines) + 1, "")]):
        case = _case(path.name, lines, first, nxt - 1, title)
        code = [line for text in case.files.values() for line in text.splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
        if code or case.expected:
            cases.append(case)
    return cases


def _case(spec: str, lines: list[str], first: int, end: int, title: str) -> Case:
    files: dict[str, list[str]] = {MAIN: []}
    current = MAIN
    expected: list[Expected] = []
    options: set = set()
    for i in range(first, end):
        text = lines[i]
        m = _FILE.match(text)
        if m:
            current = m.group(1)
            files[current] = []
            continue
        d = _DIRECTIVE.match(text)
        if d and current == MAIN and not files[MAIN]:
            options |= set(d.group(1).split())
            unknown = options - _OPTIONS
            if unknown:
                raise ValueError(f"{spec}:{i + 1}: unknown spec option(s) {sorted(unknown)}")
        files[current].append(text)
        expected.extend(_annotations(spec, i + 1, text, current, len(files[current])))
    out = {p: "\n".join(body) + "\n" for p, body in files.items()}
    return Case(spec, first + 1, title, out, expected, options)


def _annotations(spec: str, where: int, text: str, path: str, line: int) -> list[Expected]:
    if "###" not in text:
        return []
    found: list[Expected] = []
    for segment in text.split("###")[1:]:
        seg = segment.strip()
        m = _EXPECT.match(seg)
        if m:
            severity, code, at_line, col, message = m.groups()
            found.append(Expected(path, int(at_line) if at_line else line, severity, code,
                                  int(col) if col else None, message, source_line=where))
            continue
        if not found:
            raise ValueError(f"{spec}:{where}: '### {seg}' does not follow an expected diagnostic")
        if seg.startswith("help:"):
            found[-1].hint = seg[len("help:"):].strip()
            continue
        r = _RELATED.match(seg)
        if r:
            label, rpath, rline, rcol = r.groups()
            found[-1].related = (found[-1].related or []) + [(label, rpath or path, int(rline), int(rcol))]
            continue
        raise ValueError(f"{spec}:{where}: cannot read the annotation '### {seg}'")
    return found


CASES = [case for spec in sorted(SPEC_DIR.glob("*.rcp")) for case in parse_spec(spec)]


def run_case(case: Case, root: Path, monkeypatch, capsys) -> list[dict]:
    """``rcpc check --notes`` of the case's main recipe (option ``workspace``: of every
    recipe and library): its diagnostics as JSON data, lint findings only with option
    ``lint``."""
    from rcpc.cli import main

    files = {"rcp.toml": RCP_TOML, **case.files}
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    monkeypatch.chdir(root)
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(root / ".cache"))
    capsys.readouterr()
    main(["check", "--notes", "--diagnostics", "json", "-j", "1", *([] if "workspace" in case.options else [MAIN])])
    _, err = capsys.readouterr()
    found = json.loads(err)["diagnostics"]
    if "lint" not in case.options:
        found = [d for d in found if not d["code"].startswith("L")]
    return found


def _shown(d: dict) -> str:
    s = d["span"]
    where = f"{s['path']}:{s['line']}:{s['col']}" if s else "(no position)"
    related = "".join(f" (related: {r['label']} at {r['span']['path']}:{r['span']['line']}:{r['span']['col']})"
                      for r in d["related"] if r["span"])
    return (f"{where}: {d['severity']}[{d['code']}]: {d['message']}" + (f" (help: {d['hint']})" if d["hint"] else "")
            + related)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_spec(case, tmp_path, monkeypatch, capsys):
    found = run_case(case, tmp_path, monkeypatch, capsys)
    unmatched = list(found)
    missing = []
    for e in case.expected:
        hit = next((d for d in unmatched if e.matches(d)), None)
        if hit is None:
            missing.append(e)
        else:
            unmatched.remove(hit)
    report = [f"missing (tests/spec/{case.spec}:{e.source_line}): {e}" for e in missing]
    report += [f"unexpected: {_shown(d)}" for d in unmatched]
    assert not report, "\n".join(report)


# the runner itself ---------------------------------------------------------------------------
def test_the_spec_files_hold_cases():
    assert len({c.spec for c in CASES}) >= 5 and len(CASES) >= 100


def test_annotation_format(tmp_path):
    spec = tmp_path / "s.rcp"
    spec.write_text(
        "# first case, no title\n"
        "X = Y  ### error[E0101]@5: unknown name 'Y'\n"
        "# --- second\n"
        "# spec: lint\n"
        "X = 1  ### warning[L0001] ### error[E0102] ### help: h ### related: first bound here at 2:1\n"
        "# -- recipes/lib/a.rcp --\n"
        "A = 1\n"
        "### note[N0001]@7:2\n")
    first, second = parse_spec(spec)
    assert (first.id, second.id) == ("s.rcp:1", "s.rcp:4-second")
    assert [str(e) for e in first.expected] == ["recipes/r.rcp:2:5: error[E0101]: unknown name 'Y'"]
    assert second.options == {"lint"}
    assert second.files["recipes/lib/a.rcp"] == "A = 1\n### note[N0001]@7:2\n"
    lint, bound, note = second.expected
    assert (lint.code, lint.line, lint.col, lint.message) == ("L0001", 2, None, None)
    assert (bound.hint, bound.related) == ("h", [("first bound here", "recipes/r.rcp", 2, 1)])
    assert (note.path, note.line, note.col) == ("recipes/lib/a.rcp", 7, 2)


@pytest.mark.parametrize("bad", ["X = 1  ### help: no diagnostic before", "X = 1  ### error[E01]",
                                 "# spec: nonsense"])
def test_malformed_annotations_are_errors(tmp_path, bad):
    spec = tmp_path / "s.rcp"
    spec.write_text(bad + "\n")
    with pytest.raises(ValueError):
        parse_spec(spec)


def test_a_missing_or_unexpected_diagnostic_fails(tmp_path, monkeypatch, capsys):
    spec = tmp_path / "s.rcp"
    spec.write_text("X = Y  ### error[E0101]@6\n# ---\nX = 1 + \"a\"\n")
    wrong_col, unexpected = parse_spec(spec)
    found = run_case(wrong_col, tmp_path / "a", monkeypatch, capsys)
    assert [d["code"] for d in found] == ["E0101"] and not wrong_col.expected[0].matches(found[0])
    found = run_case(unexpected, tmp_path / "b", monkeypatch, capsys)
    assert [d["code"] for d in found] == ["E0301"] and unexpected.expected == []
