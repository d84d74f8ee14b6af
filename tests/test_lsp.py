"""``rcpc lsp`` end to end: pygls' own LanguageClient talks to ``python -m rcpc lsp`` over a
real stdio pipe (open, change, hover, definition, references, completion, formatting,
document symbols, code actions), in a small workspace and on the bundled RL recipe."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")
from lsprotocol import types as T  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
RL = REPO / "recipes/rl/qwen35_397b_256_v7x.rcp"
HANG = 120   # seconds: a guard against a hung server, never a speed check

TOML = 'recipe_dirs = ["recipes"]\nlibrary_dirs = ["recipes/lib"]\nmaxtext_schema = "builtin:maxtext"\n' \
       'kube_schemas = ["builtin:jobset"]\n'
COMMON = 'IMAGE = "example.registry/maxtext:1"\nSLICE_SPEC = "tpu7x:2x2x4"\n'
RECIPE = '''load("//recipes/lib/common.rcp", "IMAGE", "SLICE_SPEC")

STEPS = param(int, default = 10, doc = "Training steps.")
S = tpu_slice(SLICE_SPEC)
FLAGS = maxtext_flags({
    "steps": STEPS,
    "learning_rate": 0.001,
})
CONTAINER = {"name": "main", "image": IMAGE, "args": FLAGS.argv}

flag_file(name = "trainer", flags = FLAGS)
jobset(name = "js", spec = {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": {
    "containers": [CONTAINER],
    "restartPolicy": "Never",
}}}}}]})

variant("long", set = {"STEPS": 20})
'''


@pytest.fixture
def workspace(tmp_path) -> Path:
    (tmp_path / "recipes/lib").mkdir(parents=True)
    (tmp_path / "rcp.toml").write_text(TOML)
    (tmp_path / "recipes/lib/common.rcp").write_text(COMMON)
    (tmp_path / "recipes/r.rcp").write_text(RECIPE)
    return tmp_path


class Editor:
    """A pygls client with the server started over stdio, and the diagnostics it publishes."""

    def __init__(self, root: Path):
        self.root = root
        self.client = LanguageClient("rcpc-test", "1")
        self.published: asyncio.Queue = asyncio.Queue()
        self.client.feature(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(lambda ls, p: self.published.put_nowait(p))

    async def start(self, options=None) -> T.InitializeResult:
        await self.client.start_io(sys.executable, "-m", "rcpc", "lsp", cwd=str(self.root))
        got = await self.client.initialize_async(T.InitializeParams(
            capabilities=T.ClientCapabilities(), root_uri=self.root.as_uri(), initialization_options=options))
        self.client.initialized(T.InitializedParams())
        return got

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()

    def open(self, path: Path, text: str | None = None) -> str:
        uri = path.as_uri()
        self.client.text_document_did_open(T.DidOpenTextDocumentParams(
            text_document=T.TextDocumentItem(uri=uri, language_id="rcp", version=1,
                                             text=path.read_text() if text is None else text)))
        return uri

    def change(self, uri: str, version: int, text: str) -> None:
        self.client.text_document_did_change(T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=text)]))

    async def diagnostics(self, uri: str, version: int, until) -> list[T.Diagnostic]:
        """The first diagnostics published for ``uri`` at ``version`` that satisfy ``until``."""
        async def wait():
            while True:
                p = await self.published.get()
                if p.uri == uri and p.version == version and until(p.diagnostics):
                    return list(p.diagnostics)
        return await asyncio.wait_for(wait(), HANG)

    def doc(self, uri):
        return T.TextDocumentIdentifier(uri=uri)

    async def hover(self, uri, line, char):
        return await self.client.text_document_hover_async(
            T.HoverParams(text_document=self.doc(uri), position=T.Position(line, char)))

    async def definition(self, uri, line, char):
        return await self.client.text_document_definition_async(
            T.DefinitionParams(text_document=self.doc(uri), position=T.Position(line, char)))

    async def references(self, uri, line, char):
        return await self.client.text_document_references_async(T.ReferenceParams(
            context=T.ReferenceContext(include_declaration=True), text_document=self.doc(uri),
            position=T.Position(line, char)))

    async def complete(self, uri, line, char) -> list[T.CompletionItem]:
        got = await self.client.text_document_completion_async(
            T.CompletionParams(text_document=self.doc(uri), position=T.Position(line, char)))
        return list(got.items)


def run(root: Path, scenario, options=None):
    async def main():
        editor = Editor(root)
        await editor.start(options)
        try:
            return await scenario(editor)
        finally:
            await editor.stop()
    return asyncio.run(main())


def at(text: str, needle: str, nth: int = 0, plus: int = 0) -> tuple[int, int]:
    """(0-based line, character) of the ``nth`` occurrence of ``needle``, ``plus`` characters in."""
    i = -1
    for _ in range(nth + 1):
        i = text.index(needle, i + 1)
    line = text.count("\n", 0, i)
    return line, i - (text.rfind("\n", 0, i) + 1) + plus


def test_diagnostics_as_you_type_and_the_did_you_mean_fix(workspace):
    recipe = workspace / "recipes/r.rcp"

    async def scenario(ed: Editor):
        uri = ed.open(recipe)
        first = await ed.diagnostics(uri, 1, lambda ds: any(d.code == "L0001" for d in ds))
        assert [(d.code, d.severity) for d in first] == [("L0001", T.DiagnosticSeverity.Warning)]
        assert first[0].range.start == T.Position(3, 0)
        # unsaved edits: a misspelt name, then a MaxText key typo and a wrong type
        typo = RECIPE.replace('"image": IMAGE', '"image": IMAGES')
        ed.change(uri, 2, typo)
        (d,) = await ed.diagnostics(uri, 2, lambda ds: bool(ds))
        assert d.code == "E0101" and "did you mean 'IMAGE'?" in d.message
        assert d.range == T.Range(T.Position(*at(typo, "IMAGES")), T.Position(*at(typo, "IMAGES", plus=6)))
        actions = await ed.client.text_document_code_action_async(T.CodeActionParams(
            text_document=ed.doc(uri), range=d.range, context=T.CodeActionContext(diagnostics=[d])))
        (fix,) = actions
        assert fix.kind == T.CodeActionKind.QuickFix
        assert [e.new_text for e in fix.edit.changes[uri]] == ["IMAGE"]
        bad = RECIPE.replace('"learning_rate": 0.001', '"learning_rat": 0.001').replace('"steps": STEPS',
                                                                                      '"steps": "ten"')
        ed.change(uri, 3, bad)
        found = await ed.diagnostics(uri, 3, lambda ds: len(ds) >= 2)
        codes = {d.code for d in found}
        assert len(codes) >= 2 and all(d.source == "rcpc" for d in found)
        key = next(d for d in found if "learning_rat" in d.message)
        assert key.range.start.line == at(bad, "learning_rat")[0]
        fixes = await ed.client.text_document_code_action_async(T.CodeActionParams(
            text_document=ed.doc(uri), range=key.range, context=T.CodeActionContext(diagnostics=[key])))
        assert [e.new_text for e in fixes[0].edit.changes[uri]] == ['"learning_rate"']
        # a syntax error is reported from the unsaved buffer, the file on disk untouched
        ed.change(uri, 4, RECIPE.replace("STEPS = param(", "STEPS = param(("))
        (err,) = await ed.diagnostics(uri, 4, lambda ds: bool(ds))
        assert err.severity == T.DiagnosticSeverity.Error and err.code.startswith("E00")
        assert recipe.read_text() == RECIPE
        ed.change(uri, 5, RECIPE)
        await ed.diagnostics(uri, 5, lambda ds: [d.code for d in ds] == ["L0001"])

    run(workspace, scenario)


def test_hover_definition_references_across_load(workspace):
    recipe = workspace / "recipes/r.rcp"
    lib = workspace / "recipes/lib/common.rcp"

    async def scenario(ed: Editor):
        uri = ed.open(recipe)
        h = await ed.hover(uri, *at(RECIPE, '"steps": STEPS', plus=11))
        assert "param `int`" in h.contents.value and "default: `10`" in h.contents.value
        assert "Training steps." in h.contents.value
        h = await ed.hover(uri, *at(RECIPE, "tpu_slice", plus=2))
        assert "tpu_slice(spec)" in h.contents.value
        h = await ed.hover(uri, *at(RECIPE, '"image": IMAGE', plus=10))
        assert "loaded from `//recipes/lib/common.rcp`" in h.contents.value
        assert 'IMAGE = "example.registry/maxtext:1"' in h.contents.value
        # a MaxText key: schema type and default, effective value and explain chain
        h = await ed.hover(uri, *at(RECIPE, '"learning_rate"', plus=3))
        text = h.contents.value
        assert "type: `float (ge 0)`" in text and "base.yml" in text
        assert "effective in variant `long`: `0.001`" in text and "recipes/r.rcp:7:5" in text
        loc = await ed.definition(uri, *at(RECIPE, '"image": IMAGE', plus=10))
        assert loc.uri == lib.as_uri() and loc.range.start == T.Position(0, 0)
        loc = await ed.definition(uri, *at(RECIPE, '"//recipes', plus=3))
        assert loc.uri == lib.as_uri()
        loc = await ed.definition(uri, *at(RECIPE, "flags = FLAGS", plus=9))
        assert loc.uri == uri and loc.range.start == T.Position(*at(RECIPE, "FLAGS = "))
        refs = await ed.references(uri, *at(RECIPE, "flags = FLAGS", plus=9))
        assert sorted((r.range.start.line, r.range.start.character) for r in refs) == sorted(
            [at(RECIPE, "FLAGS = "), at(RECIPE, "FLAGS.argv"), at(RECIPE, "flags = FLAGS", plus=8)])
        # from the library: its definition and the loading recipe's load name and use
        lib_uri = ed.open(lib)
        refs = await ed.references(lib_uri, 0, 1)
        assert {(r.uri, r.range.start.line) for r in refs} == {
            (lib_uri, 0), (uri, 0), (uri, at(RECIPE, '"image": IMAGE')[0])}
        slice_hover = await ed.hover(uri, *at(RECIPE, "SLICE_SPEC)", plus=1))
        assert "tpu7x:2x2x4" in slice_hover.contents.value

    run(workspace, scenario)


def test_completion(workspace):
    recipe = workspace / "recipes/r.rcp"

    async def scenario(ed: Editor):
        uri = ed.open(recipe)
        # names at a statement start: built-ins, params, loaded names
        labels = {i.label for i in await ed.complete(uri, *at(RECIPE, "CONTAINER ="))}
        assert {"maxtext_flags", "jobset", "variant", "STEPS", "IMAGE", "FLAGS"} <= labels
        # keyword arguments of a built-in
        text = RECIPE + 'X = maxtext_flags({}, sch'
        ed.change(uri, 2, text)
        items = await ed.complete(uri, text.count("\n"), len(text.split("\n")[-1]))
        assert {"schema", "unknown_keys", "tpu_slice", "num_slices"} <= {i.label for i in items}
        # names a library exports, inside load("...", "
        text = 'load("//recipes/lib/common.rcp", "' + RECIPE[RECIPE.index("\n"):]
        ed.change(uri, 3, text)
        items = await ed.complete(uri, 0, len('load("//recipes/lib/common.rcp", "'))
        assert {i.label for i in items} == {"IMAGE", "SLICE_SPEC"}
        # MaxText keys in a maxtext_flags dict, with their types
        text = RECIPE.replace('    "learning_rate": 0.001,\n', '    "learning_rate": 0.001,\n    "per_device_b')
        ed.change(uri, 4, text)
        line, char = at(text, '"per_device_b', plus=len('"per_device_b'))
        items = {i.label: i for i in await ed.complete(uri, line, char)}
        assert items["per_device_batch_size"].detail == "int | float"
        assert items["per_device_batch_size"].insert_text == "per_device_batch_size"
        assert len(items) > 500
        # param names in variant(set = {...})
        text = RECIPE + 'variant("short", set = {'
        ed.change(uri, 5, text)
        items = await ed.complete(uri, text.count("\n"), len(text.split("\n")[-1]))
        assert [(i.label, i.insert_text) for i in items] == [("STEPS", '"STEPS"')]
        # ... and in a sweep's variants(over = {...})
        text = RECIPE + 'variants(over = {'
        ed.change(uri, 6, text)
        items = await ed.complete(uri, text.count("\n"), len(text.split("\n")[-1]))
        assert [(i.label, i.insert_text) for i in items] == [("STEPS", '"STEPS"')]
        # JobSet fields in jobset(spec = {...}), following the path of keys
        text = RECIPE + 'jobset(name = "b", spec = {"replicatedJobs": [{"template": {"spec": {"'
        ed.change(uri, 7, text)
        items = {i.label for i in await ed.complete(uri, text.count("\n"), len(text.split("\n")[-1]))}
        assert {"parallelism", "completions", "backoffLimit", "template"} <= items
        text = RECIPE + 'jobset(name = "b", spec = {"'
        ed.change(uri, 8, text)
        items = {i.label for i in await ed.complete(uri, text.count("\n"), len(text.split("\n")[-1]))}
        assert {"replicatedJobs", "failurePolicy", "network", "successPolicy"} <= items

    run(workspace, scenario)


def test_formatting_and_symbols(workspace):
    recipe = workspace / "recipes/r.rcp"

    async def scenario(ed: Editor):
        uri = ed.open(recipe)
        edits = await ed.client.text_document_formatting_async(T.DocumentFormattingParams(
            text_document=ed.doc(uri), options=T.FormattingOptions(tab_size=4, insert_spaces=True)))
        from rcpc.core.fmt import format_source

        (edit,) = edits
        assert edit.range.start == T.Position(0, 0) and edit.range.end == T.Position(RECIPE.count("\n"), 0)
        assert edit.new_text == format_source(RECIPE, "recipes/r.rcp")
        symbols = await ed.client.text_document_document_symbol_async(T.DocumentSymbolParams(text_document=ed.doc(uri)))
        assert [(s.name, s.detail) for s in symbols] == [
            ("//recipes/lib/common.rcp", "load"), ("STEPS", "param"), ("S", "value"), ("FLAGS", "flag set"),
            ("CONTAINER", "value"), ("trainer", "render"), ("js", "render"), ("long", "variant")]

    run(workspace, scenario)


def test_the_rl_recipe(tmp_path):
    """The bundled RL recipe: clean, its outline, a MaxText key's hover for the variant chosen
    in the initialization options."""
    text = RL.read_text()

    async def scenario(ed: Editor):
        uri = ed.open(RL)
        await ed.diagnostics(uri, 1, lambda ds: any(d.code == "L0006" for d in ds))
        line, char = at(text, '"custom_mesh_and_rule"', plus=2)
        h = await ed.hover(uri, line, char)
        assert "effective in variant `tuned`" in h.contents.value
        symbols = await ed.client.text_document_document_symbol_async(T.DocumentSymbolParams(text_document=ed.doc(uri)))
        kinds = {s.detail for s in symbols} | {c.detail for s in symbols for c in (s.children or ())}
        assert {"param", "flag set", "variant", "render"} <= kinds

    run(REPO, scenario, options={"variant": "tuned"})


def test_a_bad_workspace_or_a_file_outside_one(tmp_path):
    """A bad rcp.toml is reported in the buffer (E0901); a file in a directory without one is
    checked as the CLI would; the server keeps answering either way."""
    bad = tmp_path / "bad"
    (bad / "recipes").mkdir(parents=True)
    (bad / "rcp.toml").write_text("recipe_dirs = 3\n")
    (bad / "recipes/r.rcp").write_text("X = 1\n")
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "x.rcp").write_text("X = Y\n")

    async def scenario(ed: Editor):
        uri = ed.open(bad / "recipes/r.rcp")
        (d,) = await ed.diagnostics(uri, 1, lambda ds: bool(ds))
        assert d.code == "E0901" and d.severity == T.DiagnosticSeverity.Error
        assert await ed.hover(uri, 0, 0) is None
        other = ed.open(loose / "x.rcp")
        found = await ed.diagnostics(other, 1, lambda ds: bool(ds))
        assert [x.code for x in found] == ["E0101"]
        h = await ed.hover(other, 0, 0)
        assert h is not None and "X" in h.contents.value

    run(tmp_path, scenario)


DICT_RECIPE = RECIPE.replace('''FLAGS = maxtext_flags({
    "steps": STEPS,
    "learning_rate": 0.001,
})''', '''FLAGS = maxtext_flags(dict(
    steps = STEPS,
    learning_rate = 0.001,
), schema = "builtin:maxtext")
OTHER = dict(learning_rate = 1)''')


def test_maxtext_keys_as_dict_keywords(workspace):
    """``maxtext_flags(dict(key = value))`` (how ports list flags): the keyword names are
    MaxText keys for hover and completion, as ``{"key": value}``'s keys are; another dict's
    keywords and maxtext_flags' own are not."""
    recipe = workspace / "recipes/r.rcp"
    recipe.write_text(DICT_RECIPE)

    async def scenario(ed: Editor):
        uri = ed.open(recipe)
        h = await ed.hover(uri, *at(DICT_RECIPE, "learning_rate = 0.001", plus=3))
        text = h.contents.value
        assert "**learning_rate** (MaxText flag)" in text and "type: `float (ge 0)`" in text
        assert "effective in variant `long`: `0.001`" in text and "recipes/r.rcp:7:5" in text
        assert h.range.start == T.Position(*at(DICT_RECIPE, "learning_rate = 0.001"))
        h = await ed.hover(uri, *at(DICT_RECIPE, "learning_rate = 1", plus=3))
        assert h is None or "MaxText" not in h.contents.value
        h = await ed.hover(uri, *at(DICT_RECIPE, 'schema = "builtin', plus=2))
        assert h is None or "MaxText flag" not in h.contents.value
        # completion of a key where a keyword argument of the dict starts
        text = DICT_RECIPE.replace("    learning_rate = 0.001,\n", "    learning_rate = 0.001,\n    per_device_b")
        ed.change(uri, 2, text)
        line, char = at(text, "per_device_b", plus=len("per_device_b"))
        items = {i.label: i for i in await ed.complete(uri, line, char)}
        assert items["per_device_batch_size"].insert_text == "per_device_batch_size = "
        assert len(items) > 500
        # in a value, names again (not keys)
        text = DICT_RECIPE.replace("learning_rate = 0.001", "learning_rate = STE")
        ed.change(uri, 3, text)
        line, char = at(text, "= STE", plus=len("= STE"))
        labels = {i.label for i in await ed.complete(uri, line, char)}
        assert "STEPS" in labels and "per_device_batch_size" not in labels

    run(workspace, scenario)


def _frame(method: str, id: int | None = None, params=None) -> bytes:
    import json

    body = {"jsonrpc": "2.0", "method": method, **({"id": id} if id is not None else {}),
            **({"params": params} if params is not None else {})}
    data = json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


@pytest.mark.parametrize("messages, status", [
    (["shutdown", "exit"], 0),
    (["exit"], 1),            # exit without shutdown: the protocol's error status
    (["shutdown"], 0),        # then stdin ends: the client went away after shutdown
    ([], 1),                  # stdin ends: the client went away
    (["shutdown", "exit", "exit"], 0),
])
@pytest.mark.parametrize("reader", ["reads", "closed"])
def test_the_exit_status_is_the_protocols(messages, status, reader, tmp_path):
    """LSP 3.17, exit notification: status 0 when shutdown came first, else 1; never 120 (a
    flush of the standard output pygls closed), whether the client still reads stdout or
    closed it after its last message."""
    import subprocess

    init = {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}
    data = _frame("initialize", 1, init) + _frame("initialized", params={})
    for i, m in enumerate(messages):
        data += _frame(m, 10 + i if m == "shutdown" else None)
    proc = subprocess.Popen([sys.executable, "-m", "rcpc", "lsp"], cwd=tmp_path, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdin.write(data)
    proc.stdin.close()
    if reader == "closed":
        proc.stdout.close()
    else:
        proc.stdout.read()
    assert proc.wait(timeout=60) == status
    err = proc.stderr.read().decode()
    assert "Traceback" not in err
    proc.stderr.close()
    if reader == "reads":
        proc.stdout.close()
