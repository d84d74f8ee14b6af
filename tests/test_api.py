"""The library API (docs/api.md): the page's examples run as doctests in the workspace the page
describes, and one test per documented call with what the page does not show (errors, the
same results as the command line)."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

import rcpc
from rcpc.cli import main

DOC = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def _recipe() -> str:
    """The page's recipe (its one ```rcp block)."""
    (block,) = re.findall(r"```rcp\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    return block


@pytest.fixture
def demo(tmp_path, monkeypatch):
    """The page's directory: workspace ``demo`` with the page's recipe; the current directory."""
    (tmp_path / "demo" / "recipes").mkdir(parents=True)
    (tmp_path / "demo" / "rcp.toml").write_text("")
    (tmp_path / "demo" / "recipes" / "hello.rcp").write_text(_recipe())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def test_the_pages_examples(demo):
    result = doctest.testfile(str(DOC), module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 15 and result.failed == 0


def test_the_pages_examples_fail_when_wrong(demo, tmp_path):
    """The doctest run reports a wrong example (so the test above can fail)."""
    wrong = tmp_path / "wrong.md"
    wrong.write_text("```python\n>>> import rcpc\n>>> rcpc.format_source('X=1\\n')\n'X=1\\n'\n\n```\n")
    result = doctest.testfile(str(wrong), module_relative=False, verbose=False, report=False)
    assert result.failed == 1


def test_workspace_finds_the_workspace_above(demo):
    ws = rcpc.Workspace(demo / "demo" / "recipes")
    assert ws.config.root == (demo / "demo").resolve()
    with pytest.raises(rcpc.UsageError, match="no recipe 'nope'"):
        ws.recipe_paths(["nope"])


def test_workspace_schema_options(demo):
    ws = rcpc.Workspace("demo", maxtext_schema="builtin:maxtext", kube_schemas=["builtin:jobset"], strict_crd=True)
    assert ws.config.maxtext_schema.name == "maxtext.json" and ws.config.strict_crd
    assert [p.name for p in ws.config.kube_schemas] == ["jobset.json"]


def test_render_is_what_the_command_prints(demo, capsys, monkeypatch):
    rendered = rcpc.Workspace("demo").render("hello", variant="long")
    assert rendered.variant == "long"
    monkeypatch.chdir(demo / "demo")
    assert main(["render", "hello", "--variant", "long"]) == 0
    assert capsys.readouterr().out == rendered.files["train.flags"]


def test_render_raises_compile_errors(demo):
    (demo / "demo" / "recipes" / "hello.rcp").write_text(_recipe() + "X = Y\n")
    with pytest.raises(rcpc.CompileError) as exc:
        rcpc.Workspace("demo").render("hello")
    assert [d.code for d in exc.value.diagnostics] == ["E0101"]


def test_build_write_is_what_the_command_writes(demo, monkeypatch):
    assert rcpc.Workspace("demo").build().write(demo / "api-out") == 2
    monkeypatch.chdir(demo / "demo")
    assert main(["build", "-o", str(demo / "cli-out"), "-j", "1"]) == 0
    written = sorted(f.relative_to(demo / "cli-out") for f in (demo / "cli-out" / "hello").rglob("*.flags"))
    assert [str(f) for f in written] == ["hello/default/train.flags", "hello/long/train.flags"]
    for f in written:
        assert (demo / "cli-out" / f).read_text() == (demo / "api-out" / f).read_text()


def test_check_returns_errors(demo):
    (demo / "demo" / "recipes" / "hello.rcp").write_text(_recipe() + "X = Y\n")
    result = rcpc.Workspace("demo").check()
    assert result.errors == 1 and [d.code for d in result.failures] == ["E0101"]


def test_explain_errors(demo):
    with pytest.raises(rcpc.CompileError) as exc:
        rcpc.Workspace("demo").explain("hello", "FLAGS", "stepz")
    assert [d.code for d in exc.value.diagnostics] == ["E0616"]


def test_parse_is_in_memory(demo):
    module = rcpc.parse("load(\"//lib/x.rcp\", \"A\")\nB = A\n", "unsaved.rcp")
    assert module.path == "unsaved.rcp" and len(module.stmts) == 2  # the load is not followed


def test_format_source_raises_on_syntax_errors():
    with pytest.raises(rcpc.CompileError) as exc:
        rcpc.format_source("X = [\n", "x.rcp")
    assert exc.value.diagnostics[0].span.path == "x.rcp"


def test_params_diff_lint_validate_errors(demo):
    ws = rcpc.Workspace("demo")
    with pytest.raises(rcpc.UsageError):
        ws.params("nope")
    with pytest.raises(rcpc.CompileError) as exc:
        ws.diff("hello", "lnog")
    assert exc.value.diagnostics[0].code == "E0607" and "long" in exc.value.diagnostics[0].hint
    with pytest.raises(rcpc.UsageError, match="outside the workspace"):
        ws.lint([str(demo)])
    (demo / "demo" / "recipes" / "hello.rcp").write_text(_recipe() + "UNUSED = 1\n")
    assert [d.code for d in rcpc.Workspace("demo").lint()] == ["L0001"]
    documents, found = ws.validate([str(demo / "missing.yaml")])
    assert documents == 0 and found and found[0].severity == "error"


def test_format_returns_the_canonical_text(demo):
    (demo / "demo" / "recipes" / "hello.rcp").write_text(_recipe() + "X=[1,2]\n")
    (demo / "demo" / "recipes" / "bad.rcp").write_text("X = [\n")
    formatted = dict(rcpc.Workspace("demo").format(jobs=1)[0])
    assert formatted[(demo / "demo" / "recipes" / "hello.rcp").resolve()].endswith("X = [1, 2]\n")
    assert isinstance(formatted[(demo / "demo" / "recipes" / "bad.rcp").resolve()], rcpc.CompileError)
    with pytest.raises(rcpc.UsageError, match="no such file"):
        rcpc.Workspace("demo").format(["demo/recipes/missing.rcp"])
