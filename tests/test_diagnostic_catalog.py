"""Every diagnostic code has an example (compiler/rcpc/catalog.py) whose exact output is a golden
file (tests/diagnostics/<CODE>.txt); docs/diagnostics.md is rendered from the same catalog
and is a golden too. `pytest --snapshot-update` rewrites both."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rcpc.cli import main
from rcpc.testing.golden import GoldenExtension
from rcpc.catalog import CATALOG

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "diagnostics"
DOC = REPO / "docs" / "diagnostics.md"


def write(root: Path, files: dict) -> None:
    for path, text in files.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text.encode("utf-8", "surrogateescape"))


# The examples run in one worker (pytest-xdist, --dist loadgroup): the docs page reuses their
# outputs (_OUTPUTS) instead of running every example again (E0804's alone takes seconds).
pytestmark = pytest.mark.xdist_group("diagnostic-catalog")
_OUTPUTS: dict = {}  # code -> (exit code, stderr) of its example, as run_example returned them


def run_example(example, root: Path, monkeypatch, capsys) -> tuple[int, str]:
    """Run ``example`` in the empty directory ``root``: (exit code, stderr with ``root`` written
    ``$PWD``). Remembered in :data:`_OUTPUTS`."""
    _OUTPUTS[example.code] = _run_example(example, root, monkeypatch, capsys)
    return _OUTPUTS[example.code]


def _run_example(example, root: Path, monkeypatch, capsys) -> tuple[int, str]:
    write(root, example.workspace())
    for path, target in example.links.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).symlink_to(target)
    monkeypatch.chdir(root)
    with pytest.MonkeyPatch.context() as env:  # only for this example
        for name, value in example.env.items():
            env.setenv(name, value.replace("$PWD", str(root)))
        if example.before:
            assert main(list(example.before)) == 0
            write(root, example.then)
        capsys.readouterr()
        code = main(list(example.argv))
    out, err = capsys.readouterr()
    return code, err.replace(str(root), "$PWD")


@pytest.mark.parametrize("example", CATALOG, ids=[e.code for e in CATALOG])
def test_example_output_is_exact(example, tmp_path, monkeypatch, capsys, snapshot, request):
    code, err = run_example(example, tmp_path, monkeypatch, capsys)
    assert code == example.exit
    assert f"[{example.code}]" in err
    assert "Traceback" not in err
    if example.code.startswith("E"):  # an error says what to do (a help: line)
        assert "\nhelp: " in err
    request.node.golden_path = GOLDEN / f"{example.code}.txt"
    assert snapshot(extension_class=GoldenExtension) == err


def test_every_code_the_compiler_raises_is_in_the_catalog():
    source = "\n".join(p.read_text() for p in (REPO / "compiler" / "rcpc").rglob("*.py") if p.name != "catalog.py")
    raised = set(re.findall(r'"([EWNL][0-9]{4})"', source))
    assert raised == {e.code for e in CATALOG}


def _section(example, output: str) -> str:
    files = example.workspace()
    shown = []
    for path, text in files.items():
        if not text:
            continue
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        if len(text) > 400:
            text = text[:200] + f"... ({len(text)} characters)\n"
        shown.append(f"`{path}`:\n\n```python\n{text.rstrip()}\n```\n")
    shown.extend(f"`{path}` is a symlink to `{target}`.\n" for path, target in example.links.items())
    shown.extend(f"With `{name}={value}` in the environment"
                 + (" (a fault injected by a test hook, `rcpc.core.testhook`)" if name.startswith("RCPC_TEST_") else "")
                 + ".\n" for name, value in example.env.items())
    if example.before:
        shown.append(f"After `rcpc {' '.join(example.before)}`, these files are written:\n")
        shown.extend(f"`{path}`:\n\n```python\n{text.rstrip()}\n```\n" for path, text in example.then.items())
    return (f"### {example.code}: {example.title}\n\n" + "\n".join(shown)
            + f"\n`rcpc {' '.join(example.argv)}` exits {example.exit} and prints:\n\n```text\n{output.rstrip()}\n```\n")


def test_docs_table_is_rendered_from_the_catalog(tmp_path_factory, monkeypatch, capsys, snapshot, request):
    sections = []
    severity = {}  # as the example prints it (an L finding is a warning or a note)
    for example in CATALOG:  # each example's output, as its test above printed it
        _, err = _OUTPUTS.get(example.code) or run_example(example, tmp_path_factory.mktemp(example.code),
                                                            monkeypatch, capsys)
        sections.append(_section(example, err))
        severity[example.code] = re.search(rf"(error|warning|note)\[{example.code}\]", err).group(1)
    table = "\n".join(f"| [{e.code}](#{e.code.lower()}-{re.sub(r'[^a-z0-9 -]', '', e.title.lower()).replace(' ', '-')}) "
                      f"| {severity[e.code]} | {e.title} |" for e in CATALOG)
    doc = ("# Diagnostics\n\nEvery diagnostic rcpc prints has a stable code: `E` errors (exit 1), `W` "
           "warnings, `N` notes (`rcpc check --notes`) and `L` lint findings (`rcpc lint`, also in "
           "`rcpc check`). `--diagnostics json` prints the same data as "
           "JSON. This page is generated from `compiler/rcpc/catalog.py`; each example below is a test whose "
           "expected output is `tests/diagnostics/<CODE>.txt`.\n\n| code | severity | meaning |\n|---|---|---|\n"
           + table + "\n\n" + "\n".join(sections))
    request.node.golden_path = DOC
    assert snapshot(extension_class=GoldenExtension) == doc
