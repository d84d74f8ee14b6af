"""Diagnostics for CI: SARIF 2.1.0 and GitHub Actions workflow commands.

* :func:`to_sarif` — one SARIF log (OASIS SARIF 2.1.0, the format code-scanning services
  ingest, e.g. GitHub's ``upload-sarif``): one run of the ``rcpc`` tool, a rule per code
  used (its title from the diagnostic catalog; each code's example is in
  ``docs/diagnostics.md``), a result
  per diagnostic with its primary location and its related spans as related locations.
  Columns are counted in Unicode code points (``columnKind``), as rcpc counts them; paths
  are relative to the workspace root, given as ``%SRCROOT%``.
* :func:`github_command` — a ``::error file=...,line=...,col=...,endLine=...,endColumn=...,
  title=CODE::message`` line (``::warning`` / ``::notice``), the annotation syntax of GitHub
  Actions' workflow commands, with their escaping of ``%``, CR, LF, and of ``:`` and ``,``
  in properties.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from rcpc.core.diagnostics import ERROR, NOTE, WARNING, Diagnostic, visible
from rcpc.core.source import Span
from rcpc.domain import stdlib

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {ERROR: "error", WARNING: "warning", NOTE: "note"}
_GITHUB = {ERROR: "error", WARNING: "warning", NOTE: "notice"}


def _titles() -> dict[str, str]:
    from rcpc.catalog import CATALOG

    return {e.code: e.title for e in CATALOG}


def _message(d: Diagnostic) -> str:
    return "\n".join([d.message, *d.notes, *([f"help: {d.hint}"] if d.hint else [])])


def artifact(path: str) -> dict:
    """A SARIF ``artifactLocation`` for a diagnostic's path: a path relative to the workspace
    root as a relative URI reference under ``%SRCROOT%`` (percent-encoded, RFC 3986); a path
    outside it (``rcpc validate /abs/file.yaml``) as an absolute ``file:`` URI, with no base
    (SARIF 2.1.0 §3.4.3: with ``uriBaseId``, ``uri`` is relative); a standard library label
    (``@rcpc//maxtext_tpu.rcp``) as the ``file:`` URI of the installed file."""
    p = stdlib.path_of(path) if stdlib.is_label(path) else Path(path)
    if p.is_absolute():
        return {"uri": p.as_uri()}
    return {"uri": quote(p.as_posix(), safe="/"), "uriBaseId": "%SRCROOT%"}


def _location(span: Span, message: str | None = None) -> dict:
    physical: dict = {"artifactLocation": artifact(span.path)}
    if span.line > 0:
        physical["region"] = {"startLine": span.line, "startColumn": span.col,
                              "endLine": span.end_line, "endColumn": max(span.end_col, 1)}
    loc: dict = {"physicalLocation": physical}
    if message is not None:
        loc["message"] = {"text": message}
    return loc


def _placed(span: Span | None) -> bool:
    """A span naming a file of the workspace (not ``<command line>``)."""
    return span is not None and not span.path.startswith("<")


def to_sarif(diags: list[Diagnostic], root: Path, version: str) -> dict:
    """A SARIF 2.1.0 log (plain data, for ``json.dumps``) of ``diags``, paths relative to the
    workspace ``root``."""
    titles = _titles()
    codes = sorted({d.code for d in diags})
    rules = [{"id": c, "name": c, "shortDescription": {"text": titles.get(c, c)},
              "help": {"text": f"rcpc's docs/diagnostics.md, {c}"}} for c in codes]
    results = []
    for d in diags:
        r: dict = {"ruleId": d.code, "ruleIndex": codes.index(d.code), "level": _LEVEL.get(d.severity, "note"),
                   "message": {"text": _message(d)}}
        if _placed(d.span):
            r["locations"] = [_location(d.span)]
        related = [_location(s, label) for label, s in d.related if _placed(s)]
        if related:
            for i, loc in enumerate(related):
                loc["id"] = i
            r["relatedLocations"] = related
        results.append(r)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "rcpc", "version": version, "rules": rules}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": root.as_uri() + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_command(d: Diagnostic) -> str:
    """One GitHub Actions annotation line for ``d``; its message shows what is not printable
    escaped as the text form does (:func:`rcpc.core.diagnostics.visible`: the annotation and
    the log are read by people), its ``file`` names the file as it is."""
    props = []
    if _placed(d.span):
        props.append(f"file={_escape_property(Path(d.span.path).as_posix())}")
        if d.span.line > 0:
            props += [f"line={d.span.line}", f"col={d.span.col}", f"endLine={d.span.end_line}",
                      f"endColumn={d.span.end_col}"]
    props.append(f"title={_escape_property(f'rcpc {d.code}')}")
    where = f"{d.span}: " if _placed(d.span) and d.span.line > 0 else ""
    message = visible(where + _message(d), lines=True)
    return f"::{_GITHUB.get(d.severity, 'notice')} {','.join(props)}::{_escape_data(message)}"
