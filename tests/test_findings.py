"""Findings for CI: ``--diagnostics sarif`` (validated against the SARIF 2.1.0 JSON schema),
``--diagnostics github`` (workflow-command annotations) and ``rcpc params --format json``."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urljoin, urlsplit

import jsonschema
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.findings import _escape_data, _escape_property, artifact

# The SARIF 2.1.0 schema (the OASIS standard's final JSON schema, rtm.5) as npm's
# @microsoft/jest-sarif ships it; tests/js is installed by .ci/run (npm ci).
SARIF_SCHEMA = Path(__file__).parent / "js/node_modules/@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json"

BAD = 'X = 1\nY = "é" + str(X)\nX = 2\nZ = UNKNOWN_NAM\nUNKNOWN_NAME = 3\n'
WARN = 'S = tpu_slice("tpu7x:2x2x4")\nV = 1\nmanifest(name = "m", apiVersion = "v1", kind = "ConfigMap", data = {"v": str(V)})\n'


def sarif_schema() -> dict:
    assert SARIF_SCHEMA.is_file(), "install the test's npm packages: npm ci --prefix tests/js"
    return json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))


def test_sarif_is_valid_and_says_what_the_text_says(ws, cli):
    ws.write("recipes/r.rcp", BAD, dedent=False)
    ws.write("recipes/w.rcp", WARN, dedent=False)
    checked = cli("check", "--diagnostics", "sarif")
    assert checked.code == 1
    log = json.loads(checked.out)
    jsonschema.Draft4Validator(sarif_schema()).validate(log)
    (run,) = log["runs"]
    assert log["version"] == "2.1.0" and run["tool"]["driver"]["name"] == "rcpc"
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == ws.root.resolve().as_uri() + "/"
    results = {r["ruleId"]: r for r in run["results"]}
    assert {"E0102", "E0101"} <= set(results)
    dup = results["E0102"]
    assert dup["level"] == "error"
    assert dup["message"]["text"].startswith("'X' is already bound in this file\nhelp: ")
    (loc,) = dup["locations"]
    assert loc["physicalLocation"] == {"artifactLocation": {"uri": "recipes/r.rcp", "uriBaseId": "%SRCROOT%"},
                                       "region": {"startLine": 3, "startColumn": 1, "endLine": 3, "endColumn": 2}}
    (rel,) = dup["relatedLocations"]
    assert rel["message"]["text"] == "first bound here"
    assert rel["physicalLocation"]["region"]["startLine"] == 1
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted(results)
    assert all(run["tool"]["driver"]["rules"][r["ruleIndex"]]["id"] == r["ruleId"] for r in run["results"])
    # the same findings as the text output, one result per diagnostic
    text = cli("check", "--diagnostics", "json")
    assert len(json.loads(text.err)["diagnostics"]) == len(run["results"])

    linted = cli("lint", "recipes/w.rcp", "--diagnostics", "sarif")
    log = json.loads(linted.out)
    jsonschema.Draft4Validator(sarif_schema()).validate(log)
    assert [(r["ruleId"], r["level"]) for r in log["runs"][0]["results"]] == [("L0001", "warning")]


_SEGMENT = st.text(st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)), min_size=1, max_size=8)


@given(parts=st.lists(_SEGMENT.filter(lambda p: p not in (".", "..")), min_size=1, max_size=4),
       absolute=st.booleans())
def test_a_sarif_artifact_location_names_its_file(parts, absolute):
    """A diagnostic's path, relative to the workspace root or absolute (``rcpc validate
    /abs/file.yaml`` used to give ``"uri": "/abs/file.yaml"`` under ``%SRCROOT%``), is a URI
    that resolves to that file: relative ones against the root's URI, absolute ones alone;
    any character of a file name percent-encoded (RFC 3986)."""
    root = PurePosixPath("/ws/root dir")
    path = PurePosixPath("/", *parts) if absolute else PurePosixPath(*parts)
    loc = artifact(str(path))
    if absolute:
        assert "uriBaseId" not in loc
        resolved = loc["uri"]
    else:
        assert loc["uriBaseId"] == "%SRCROOT%" and not urlsplit(loc["uri"]).scheme
        resolved = urljoin(Path(root).as_uri() + "/", loc["uri"])
    assert resolved.startswith("file:///")
    assert unquote(urlsplit(resolved).path) == str(path if absolute else root / path)


def test_sarif_of_a_clean_run_and_of_a_diagnostic_without_a_place(ws, cli):
    ws.write("recipes/w.rcp", 'manifest(name = "m", apiVersion = "v1", kind = "ConfigMap", data = {})\n',
             dedent=False)
    clean = cli("check", "--diagnostics", "sarif")
    assert clean.code == 0 and json.loads(clean.out)["runs"][0]["results"] == []
    assert "checked 1 recipe(s)" in clean.err
    unplaced = cli("build", "recipes/w.rcp", "--set", "NOPE=1", "--diagnostics", "sarif")
    log = json.loads(unplaced.out)
    jsonschema.Draft4Validator(sarif_schema()).validate(log)
    (r,) = log["runs"][0]["results"]
    assert r["ruleId"] == "E0601" and "locations" not in r


def test_github_annotations(ws, cli):
    ws.write("recipes/r.rcp", BAD, dedent=False)
    got = cli("check", "--diagnostics", "github")
    assert got.code == 1
    lines = got.out.splitlines()
    assert lines[0] == ("::error file=recipes/r.rcp,line=3,col=1,endLine=3,endColumn=2,title=rcpc E0102::"
                        "recipes/r.rcp:3:1: 'X' is already bound in this file%0Ahelp: names are assigned once; "
                        "use a new name or a conditional expression")
    assert all(line.startswith(("::error ", "::warning ", "::notice ")) for line in lines)
    assert "error(s)" in got.err   # the closing status stays on stderr


@given(st.text())
def test_github_escaping_round_trips(text):
    """Workflow commands end at a newline and split properties at ',' and ':': escaped data
    holds neither a CR nor a LF, an escaped property neither ',' nor ':', and the runner's
    unescaping gives the text back."""
    def unescape(s: str) -> str:
        return s.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")

    data, prop = _escape_data(text), _escape_property(text)
    assert "\n" not in data and "\r" not in data
    assert not {",", ":", "\n", "\r"} & set(prop)
    assert unescape(data) == text and unescape(prop) == text


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(length=st.integers(0, 600), newlines=st.booleans())
@example(length=500, newlines=False)  # the report: a 500-character COMMAND_PREFIX padded every row
def test_params_table_cuts_long_defaults(ws, cli, length, newlines):
    """``rcpc params``'s table shows a type or default of at most 40 characters, one line, cut
    with ``...``; the short params' rows are as wide as their own columns need; --format json
    keeps the value whole."""
    from rcpc.core.diagnostics import visible

    long = ("x\n" if newlines else "x ") * (length // 2)
    ws.write("recipes/r.rcp", f"P = param(str, default = {json.dumps(long)}, doc = \"Prefix.\")\n"
             "N = param(int, default = 2, doc = \"Steps.\")\n", dedent=False)
    got = cli("params", "r")
    assert got.code == 0, got.err
    lines = got.out.splitlines()
    assert len(lines) == 3 and all(len(line) <= len("NAME  TYPE  ") + 40 + len("  Prefix.") for line in lines), lines
    one_line = visible(long)  # a newline shown as \\n
    assert (one_line if len(one_line) <= 40 else one_line[:37] + "...") in lines[1], lines
    assert json.loads(cli("params", "r", "--format", "json").out)["params"][0]["default"] == long


def test_params_json(ws, cli):
    ws.write("recipes/r.rcp", '''N = param(int, default = 2, doc = "Steps.")
MODE = param(str, default = "a", choices = ["a", "b"])
LR = param(float, default = 1e-6)
ON = param(bool, default = true)
manifest(name = "m", apiVersion = "v1", kind = "ConfigMap", data = {"v": MODE + str(N + 1) + str(LR) + str(ON)})
''', dedent=False)
    got = cli("params", "recipes/r.rcp", "--format", "json")
    assert got.code == 0, got.err
    assert json.loads(got.out) == {"recipe": "r", "params": [
        {"name": "N", "type": "int", "required": False, "default": 2, "choices": None, "doc": "Steps."},
        {"name": "MODE", "type": "str", "required": False, "default": "a", "choices": ["a", "b"], "doc": ""},
        {"name": "LR", "type": "float", "required": False, "default": 1e-6, "choices": None, "doc": ""},
        {"name": "ON", "type": "bool", "required": False, "default": True, "choices": None, "doc": ""},
    ]}
