"""The editor sees what ``rcpc check`` sees, and hover and go-to-definition work everywhere
(issue 35, kind 4). Reported: with docs/review.md's own example, ``check`` printed 6 errors
(E0610/E0612) and the editor one lint note; hover and definition did nothing on library
functions (null; stopped at ``load()``); hover on a ``def`` header line was an internal
error with a traceback (recipes/lib/maxtext_tpu.rcp:228).

* the published diagnostics of an unsaved buffer equal ``check``'s (and, for a library,
  ``lint``'s) for the same text saved, in code, severity and range: a property over the
  bundled recipes and libraries with one injected fault of several kinds, at any top-level
  place;
* hover and definition at every place of every bundled file answer without an error;
* library functions: hover shows the signature and the doc comment, definition jumps to
  the ``def``;
* stale work: an analysis whose text was replaced while the compiler thread was busy is
  never run, and its result never published; a cancelled request never runs.
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

pytest.importorskip("pygls")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from lsprotocol import types as T  # noqa: E402

from rcpc import api  # noqa: E402
from rcpc.core.syntax import ast  # noqa: E402
from rcpc.domain import stdlib  # noqa: E402
from test_fuzz import BUNDLED, BUNDLED_LIBS, BUNDLED_RECIPES, mutated_inputs  # noqa: E402
from test_lsp_untrusted import CANCELLED, HANG, Served, position_request  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SEVERITY = {"error": 1, "warning": 2, "note": 4}
RL = "recipes/rl/qwen35_397b_256_v7x.rcp"
TPU = "recipes/tpu_recipes/gemma4_2b_8k_bf16_tpu7x_4x4x4.rcp"
LIB = "recipes/lib/maxtext_tpu.rcp"
REVIEW_EXAMPLE = ('"ENABLE_MULTI_NUMA": "0",', '"ENABLE_MULTI_NUMA": "1" if TRAINER_TUNED_FLAGS else "0",')


def copy_workspace(to: Path) -> Path:
    """The repository's workspace (rcp.toml and recipes/) copied to ``to``, the standard
    library as its own library (``BUNDLED``: recipes/lib/NAME.rcp)."""
    to.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "rcp.toml", to / "rcp.toml")
    for path, text in BUNDLED.items():
        (to / path).parent.mkdir(parents=True, exist_ok=True)
        (to / path).write_text(text, encoding="utf-8")
    return to.resolve()


# faults ------------------------------------------------------------------------------------
JOBSET = ('jobset(name = "Fault_JS", spec = {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": '
          '{"spec": {"containers": [{"name": "main", "image": "x"}], "restartPolicy": "Never"}}}}}]})')
STATEMENTS = {   # a statement added at a top-level place
    "unused constant": 'FAULT_UNUSED = 1',
    "type error": 'FAULT_TYPE = 1 + "a"',
    "kubernetes name": JOBSET,
}
LIBRARY_STATEMENTS = {
    "unused private name": "_FAULT_UNUSED = 1",
    "type error": 'FAULT_TYPE = 1 + "a"',
    "unused argument": "def fault_function(unused):\n    return 1",
}
LAYERS = {   # a first layer added to the recipe's flag set
    "unknown MaxText key": '{"learnin_rate": 1}',
    "unknown MaxText key (no suggestion)": '{"no_such_maxtext_flag": 1}',
    "MaxText type error": '{"steps": "ten"}',
}
_PARAMS: dict = {}


def params(target: str) -> list:
    """(name, another valid-looking value as recipe text) of each param of a bundled recipe."""
    if target not in _PARAMS:
        out = []
        for p in api.Workspace(REPO).params(target):
            value = getattr(p.default, "value", None)
            if p.choices:
                other = next((c.value for c in p.choices if c.value != value), value)
                out.append((p.name, json.dumps(other)))
            elif isinstance(value, bool):
                out.append((p.name, "False" if value else "True"))
            elif isinstance(value, int):
                out.append((p.name, str(value + 1)))
            elif isinstance(value, str):
                out.append((p.name, json.dumps(value + "-x")))
        _PARAMS[target] = out
    return _PARAMS[target]


def top_level_lines(text: str) -> list[int]:
    """The lines (1-based) where a statement after the file's loads starts, and the end."""
    stmts = api.parse(text).stmts
    after = [s for s in stmts if type(s) is not ast.Load]
    return [s.span.line for s in after] + [text.count("\n") + 1]


class Fault:
    """A bundled file's text with one fault: ``target`` (its path), ``text``, ``kind``, and
    ``where`` (the line the fault's statement was put before); shown without the text."""

    def __init__(self, target: str, text: str, kind: str, where: int | None = None):
        self.target, self.text, self.kind, self.where = target, text, kind, where

    def __repr__(self) -> str:
        return f"Fault({self.target!r}, {self.kind!r}, line {self.where})"


@st.composite
def faulted(draw) -> Fault:
    """A bundled recipe or library with one fault that check or lint reports: a statement
    put before a top-level statement (or at the end), a layer of bad MaxText flags, a
    variant whose contract an override breaks."""
    target = draw(st.sampled_from(BUNDLED_RECIPES + BUNDLED_LIBS))
    text = BUNDLED[target]
    library = target in BUNDLED_LIBS
    kind = draw(st.sampled_from(["statement"] + ([] if library else ["layer", "contract"])))
    if kind == "layer":
        name = draw(st.sampled_from(sorted(LAYERS)))
        return Fault(target, text.replace("maxtext_flags(", f"maxtext_flags({LAYERS[name]}, ", 1), name)
    if kind == "contract":
        choices = params(target)
        name, value = draw(st.sampled_from(choices)) if choices else (None, None)
        sets = f'set = {{"{name}": {value}}}, ' if name else ""
        declares = "" if "variant(" in text else 'variant("default")\n'
        statement = f'{declares}variant("fault", {sets}against = "default", changes = {{}})'
        name = f"contract ({name})"
    else:
        table = LIBRARY_STATEMENTS if library else STATEMENTS
        name = draw(st.sampled_from(sorted(table)))
        statement = table[name]
    line = draw(st.sampled_from(top_level_lines(text)))
    lines = text.split("\n")
    return Fault(target, "\n".join(lines[:line - 1] + [statement] + lines[line - 1:]), name, line)


# what check says, as the editor would show it --------------------------------------------------
def shown_as_lsp(diags, shown: str, text: str) -> list:
    """(code, severity, ((line, character), (line, character))) of each diagnostic as the
    editor shows it in file ``shown`` (0-based, UTF-16): at its span when that is in the
    file, else at its first related span in the file (the load that reaches it), else at the
    top."""
    lines = text.split("\n")

    def units(line: int, col: int) -> int:
        head = lines[line - 1][:col - 1] if 0 < line <= len(lines) else ""
        return len(head.encode("utf-16-le")) // 2

    out = []
    for d in diags:
        span = d.span
        if span is None or span.path != shown:
            span = next((s for _, s in d.related if s.path == shown and s.line > 0), None)
        if span is None or span.line <= 0:
            where = ((0, 0), (0, 0))
        else:
            where = ((span.line - 1, units(span.line, span.col)), (span.end_line - 1, units(span.end_line, span.end_col)))
        out.append((d.code, SEVERITY[d.severity], where))
    return sorted(out)


def published(diags: list[dict]) -> list:
    return sorted((d.get("code"), d["severity"], ((d["range"]["start"]["line"], d["range"]["start"]["character"]),
                                                  (d["range"]["end"]["line"], d["range"]["end"]["character"])))
                  for d in diags)


def check_of(root: Path, target: str) -> list:
    """What ``rcpc check`` reports for ``target`` in the workspace at ``root`` (for a
    library without errors, with ``rcpc lint``'s findings)."""
    ws = api.Workspace(root)
    result = ws.check([str(root / target)])
    found = [*result.failures, *result.findings]
    if target in BUNDLED_LIBS and not result.errors:
        found += ws.lint([str(root / target)])
    return list({(d.code, d.message, d.span): d for d in found}.values())


@pytest.fixture
def editor(tmp_path, monkeypatch):
    """A server on a copy of the repository's workspace (the files on disk unchanged) and a
    second copy, ``disk``, where the faulted text is saved for ``check``."""
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    root = copy_workspace(tmp_path / "editor")
    served = Served(root)
    yield served, root, copy_workspace(tmp_path / "disk")
    served.close()


def test_the_editor_publishes_what_check_reports(editor):
    """A property: one fault injected in a bundled recipe or library, sent as an unsaved
    buffer; the diagnostics the server publishes for it equal what ``rcpc check`` (and for a
    library ``rcpc lint``) reports for the same text saved: codes, severities and ranges."""
    served, root, disk = editor
    versions = iter(range(1, 10 ** 6))

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(faulted())
    @example(Fault(RL, BUNDLED[RL].replace(*REVIEW_EXAMPLE), "docs/review.md's violation, in every role"))
    @example(Fault(LIB, BUNDLED[LIB], "none"))
    @example(Fault(TPU, BUNDLED[TPU] + "FAULT_UNUSED = 1\n", "unused constant (with the notes)"))
    def check(case):
        target, text = case.target, case.text
        (disk / target).write_text(text, encoding="utf-8")
        try:
            expected = shown_as_lsp(check_of(disk, target), target, text)
        finally:
            (disk / target).write_text(BUNDLED[target], encoding="utf-8")
        uri = (root / target).as_uri()
        version = next(versions)
        served.open(uri, text, version)
        try:
            assert published(served.diagnostics(uri, version)) == expected
        finally:
            served.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    check()


def test_a_library_edit_is_seen_by_the_recipes_that_load_it(editor):
    """An unsaved error in a library: the open recipe that loads it is checked again and
    shows what ``check`` reports for it with the library saved so (at its load)."""
    served, root, disk = editor
    recipe, lib = (root / TPU).as_uri(), (root / LIB).as_uri()
    served.open(recipe, BUNDLED[TPU])
    served.diagnostics(recipe, 1)
    broken = BUNDLED[LIB] + 'FAULT_TYPE = 1 + "a"\n'
    served.open(lib, broken)
    (disk / LIB).write_text(broken)
    expected = shown_as_lsp(check_of(disk, TPU), TPU, BUNDLED[TPU])
    assert [e[0] for e in expected] == ["E0301"] and expected[0][2][0][0] == 4   # at the load
    assert published(served.diagnostics(recipe, 1)) == expected


def test_docs_review_example_shows_the_contract_errors(editor):
    """docs/review.md's violation (``tuned`` also flips an env value of the trainer
    container), unsaved in the editor: the E0610 and E0612 errors of both tuned variants at
    their ``variant(...)`` lines, as ``check`` reports them (the editor showed one lint note)."""
    served, root, disk = editor
    uri = (root / RL).as_uri()
    text = BUNDLED[RL].replace(*REVIEW_EXAMPLE, 1)
    served.open(uri, text)
    found = published(served.diagnostics(uri, 1))
    errors = {(code, where[0][0] + 1) for code, severity, where in found if severity == 1}
    tuned = [n for n, line in enumerate(text.splitlines(), 1)
             if line.startswith("variant(") and "tuned" in "".join(text.splitlines()[n - 1:n + 1])]
    assert len(tuned) == 2 and errors == {(code, n) for code in ("E0610", "E0612") for n in tuned}
    (disk / RL).write_text(text)
    assert found == shown_as_lsp(check_of(disk, RL), RL, text)
    assert (root / RL).read_text() == BUNDLED[RL]


# hover and definition ----------------------------------------------------------------------
def test_library_functions_hover_and_definition(editor):
    """A call of a function loaded from rcpc's standard library (``@rcpc//``): hover shows its signature and doc
    comment, definition jumps to its ``def`` in the library; likewise from the load()'s
    name; in the library, hover on the ``def`` header (an internal error) and on an
    argument; references of the function (from the recipe) reach its def and the recipe's call."""
    served, root, _ = editor
    recipe, lib = (root / TPU).as_uri(), (stdlib.DIRECTORY / "maxtext_tpu.rcp").as_uri()  # the installed file
    text, lib_text = (REPO / TPU).read_text(encoding="utf-8"), BUNDLED[LIB]
    assert '"@rcpc//maxtext_tpu.rcp"' in text
    served.open(recipe, text)

    def at(source: str, needle: str, plus: int = 1) -> tuple[int, int]:
        i = source.index(needle)
        return source.count("\n", 0, i), i - (source.rfind("\n", 0, i) + 1) + plus

    def request(method, uri, where):
        got = served.request(method, position_request(method, uri, *where))
        assert "error" not in got, got
        return got["result"]

    def_line = lib_text.count("\n", 0, lib_text.index("def xpk_generated_jobset("))
    for where in (at(text, "xpk_generated_jobset(\n"), at(text, '"xpk_generated_jobset"', 2)):
        hover = request("textDocument/hover", recipe, where)["contents"]["value"]
        assert "def xpk_generated_jobset(name, image, slice, command" in hover
        assert "loaded from `@rcpc//maxtext_tpu.rcp`" in hover
        assert f"@rcpc//maxtext_tpu.rcp:{def_line + 1}" in hover
        doc_line = lib_text.split("\n")[def_line - 1].lstrip("# ")
        assert doc_line and doc_line in hover   # the comment right above the def
        loc = request("textDocument/definition", recipe, where)
        assert loc["uri"] == lib and loc["range"]["start"] == {"line": def_line, "character": 4}
    header = lib_text.count("\n", 0, lib_text.index("def libtpu_init_args("))
    assert header == 227   # @rcpc//maxtext_tpu.rcp:228, the reported line
    for char in range(len(lib_text.split("\n")[header]) + 1):
        request("textDocument/hover", lib, (header, char))
        request("textDocument/definition", lib, (header, char))
    hover = request("textDocument/hover", lib, (header, 6))["contents"]["value"]
    assert "def libtpu_init_args(flags, *, spaced = False)" in hover and "LIBTPU_INIT_ARGS" in hover
    hover = request("textDocument/hover", lib, at(lib_text, "flags[k]}", 0))["contents"]["value"]
    assert hover == "`flags`: argument of libtpu_init_args()"
    # from the recipe's call: a standard library file belongs to no workspace (opened on its
    # own, its references are those of the workspace its directory is in)
    refs = served.request("textDocument/references", position_request(
        "textDocument/references", recipe, *at(text, "xpk_generated_jobset(\n")))["result"]
    assert {(r["uri"], r["range"]["start"]["line"]) for r in refs} >= {
        (lib, def_line), (recipe, at(text, "xpk_generated_jobset(\n")[0])}


def _positions(text: str):
    """Every place a hover can differ: each line's start and end, and each boundary between
    a word and what is not one (a node starts or ends only there)."""
    for n, line in enumerate(text.split("\n")):
        cols = {0, len(line)}
        cols.update(i for i in range(1, len(line)) if line[i].isalnum() != line[i - 1].isalnum()
                    or not line[i].isalnum())
        for c in sorted(cols):
            yield n, c


@pytest.mark.parametrize("target", sorted(BUNDLED))
def test_hover_and_definition_answer_everywhere_in_a_bundled_file(tmp_path, monkeypatch, target):
    """Hover and definition at every place of every bundled recipe and library (one per
    distinct node under the cursor: the answer is a function of it) answer without an error.
    ``explain`` (MaxText keys' hover) is recorded, not run: its answer for every key of a
    recipe is the next test's."""
    from rcpc.lsp import query, server as srv

    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    explained: list = []
    monkeypatch.setattr("rcpc.domain.explain.explain", lambda c, path, name, key, variant: explained.append(key)
                        or {"variant": variant, "effective": "1", "chain": []})
    root = copy_workspace(tmp_path)
    ls = srv.make_server()
    uri = (root / target).as_uri()
    session, real = ls.document(uri)
    mod = session.module(real)
    seen = set()
    for line, char in _positions(BUNDLED[target]):
        hit = query.node_at(mod, line + 1, char + 1)
        key = id(hit.node) if hit else line   # nothing under the cursor: the same answer on the whole line
        if key in seen:
            continue
        seen.add(key)
        where = T.Position(line, char)
        srv._hover(ls, T.HoverParams(T.TextDocumentIdentifier(uri), where))
        srv._definition(ls, T.DefinitionParams(T.TextDocumentIdentifier(uri), where))
    assert len(seen) > 100 and (target in BUNDLED_LIBS or explained)


def test_hover_on_every_maxtext_key_of_a_recipe(tmp_path, monkeypatch):
    """Every MaxText key of a bundled recipe's flag set: its hover holds its schema type and
    its effective value (explain), none an error."""
    from rcpc.lsp import server as srv

    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    root = copy_workspace(tmp_path)
    ls = srv.make_server()
    uri = (root / TPU).as_uri()
    text = BUNDLED[TPU]
    start, end = text.index("maxtext_flags("), text.index("\n)\n", text.index("maxtext_flags("))
    keys = 0
    for n, line in enumerate(text[:end].split("\n")):
        stripped = line.strip()
        if text.count("\n", 0, start) < n and " = " in stripped and not stripped.startswith("#"):
            hover = srv._hover(ls, T.HoverParams(T.TextDocumentIdentifier(uri), T.Position(n, line.index(stripped))))
            key = stripped.split(" = ")[0]
            assert f"**{key}** (MaxText flag)" in hover.contents.value
            assert "effective in variant `default`" in hover.contents.value
            keys += 1
    assert keys > 20


def edited():
    """({file: text} of unsaved buffers, the file asked about): a bundled file with a fault
    injected, or the bundled recipes and libraries damaged at random (tests/test_fuzz.py)."""
    return st.one_of(faulted().map(lambda f: ({f.target: f.text}, f.target)),
                     mutated_inputs().map(lambda ft: ({k: v.decode("utf-8", "surrogateescape")
                                                       for k, v in ft[0].items()}, ft[1])))


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=edited(), picks=st.lists(st.tuples(st.integers(0, 10 ** 4), st.integers(0, 200)), min_size=1, max_size=8))
def test_hover_definition_and_completion_answer_on_edited_text(tmp_path_factory, case, picks):
    """A property: with bundled files edited in unsaved buffers (a fault injected, or
    damaged at random: syntax errors, bytes that are not UTF-8), hover, definition,
    references and completion at any place answer without an error."""
    from rcpc.lsp import server as srv

    buffers, target = case
    root = copy_workspace(tmp_path_factory.mktemp("ws"))
    ls = srv.make_server()
    for version, (path, text) in enumerate(buffers.items(), 1):
        ls.latest[(root / path).as_uri()] = version
        ls._update((root / path).as_uri(), version, text)
    uri = (root / target).as_uri()
    lines = buffers.get(target, BUNDLED[target]).split("\n")
    doc = T.TextDocumentIdentifier(uri)
    for line, char in picks:
        where = T.Position(line % len(lines), char)
        srv._hover(ls, T.HoverParams(doc, where))
        srv._definition(ls, T.DefinitionParams(doc, where))
        srv._references(ls, T.ReferenceParams(T.ReferenceContext(True), doc, where))
        srv._completion(ls, T.CompletionParams(doc, where))


# stale work --------------------------------------------------------------------------------
def test_stale_work_is_skipped_and_a_cancelled_request_never_runs(editor, monkeypatch):
    """While the compiler thread checks version 1, versions 2, 3 and 4 arrive and a hover is
    sent and cancelled: the protocol thread reads them all and answers the cancellation at
    once (the check still running); then only version 4 is checked, version 1's result is
    never published, and the hover never runs."""
    from rcpc.lsp import query
    from rcpc.lsp.session import Session

    served, root, _ = editor
    entered, release = threading.Event(), threading.Event()
    checked, parsed, hovered = [], [], []
    full, quick = Session.diagnostics, Session.syntax_diagnostics

    def slow_full(self, real):
        checked.append(self.buffers.get(real))
        if len(checked) == 1:
            entered.set()
            release.wait(HANG)
        return full(self, real)

    monkeypatch.setattr(Session, "diagnostics", slow_full)
    monkeypatch.setattr(Session, "syntax_diagnostics", lambda self, real: parsed.append(self.buffers.get(real))
                        or quick(self, real))
    monkeypatch.setattr(query, "hover", lambda *a: hovered.append(a))
    uri = (root / TPU).as_uri()
    texts = {v: BUNDLED[TPU] + f"FAULT_{v} = {v}\n" for v in range(1, 5)}
    served.open(uri, texts[1])
    assert entered.wait(HANG)
    for v in (2, 3, 4):
        served.change(uri, texts[v], v)
    hover = served.send_request("textDocument/hover", position_request("textDocument/hover", uri, 10, 3))
    served.notify("$/cancelRequest", {"id": hover})
    assert served.answer(hover)["error"]["code"] == CANCELLED   # answered while the check runs
    assert not release.is_set() and served.server.latest[uri] == 4
    release.set()
    final = served.diagnostics(uri, 4)
    assert [d["code"] for d in final if d["code"] == "L0001"] == ["L0001"]
    assert checked == [texts[1], texts[4]] and parsed == [texts[1], texts[4]] and hovered == []
    ones = [m for m in served.notes if m.get("method") == "textDocument/publishDiagnostics"
            and m["params"].get("version") == 1]
    assert len(ones) <= 1 and all(not m["params"]["diagnostics"] for m in ones)   # the quick ones only
