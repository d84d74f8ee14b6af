"""What one run of ``rcpc`` keeps while a command runs: :class:`Run`, made by
:func:`rcpc.cli.main` and passed to the command, with the :class:`Report` that prints its
diagnostics. Nothing of a run is kept in module globals."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from rcpc import __version__
from rcpc.core.diagnostics import format_text, to_json, visible
from rcpc.core.files import read_limited
from rcpc.core.limits import MAX_FILE_BYTES
from rcpc.core.source import Source
from rcpc.domain import stdlib


def json_text(data) -> str:
    """``data`` as the JSON document a command prints (indented by 2, not ASCII-escaped), with
    each character of its strings that is not printable written as a JSON ``\\u`` escape (a
    pair of them beyond the BMP): ``json.dumps`` escapes only U+0000-U+001F, so a C1 control
    (U+009B CSI) or a bidi override (U+202E) from the input reached the terminal raw. The data
    read back is the same; printable text is written as before, byte for byte."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    if text.replace("\n", "").isprintable():  # outside its strings JSON text holds no other
        return text
    return "".join(c if c.isprintable() or c == "\n" else _json_escape(ord(c)) for c in text)


def _json_escape(code: int) -> str:
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xd800 + (code >> 10):04x}\\u{0xdc00 + (code & 0x3ff):04x}"


def stderr(line: str) -> None:
    """Write one line to stderr in one call: a signal cannot split it from its newline."""
    sys.stderr.write(line + "\n")


class Report:
    """Prints diagnostics of kind ``kind`` (``--diagnostics``): as text at once (coloured
    when ``color``), as GitHub Actions annotations on stdout at once, or collected and
    printed by :meth:`finish` when the command ends: one JSON document on stderr, or one
    SARIF log on stdout (:mod:`rcpc.findings`)."""

    def __init__(self, kind: str, color: bool):
        self.kind, self.color, self.items, self.summary = kind, color, [], None
        self.as_json = kind == "json"
        self.root = Path.cwd()  # the workspace root, once known (SARIF's %SRCROOT%)

    def status(self, line: str) -> None:
        """The command's closing status line (in JSON: the document's ``summary``); as text,
        with what is not printable in the paths and names it holds escaped
        (:func:`rcpc.core.diagnostics.visible`; lines it holds stay lines)."""
        if self.as_json:
            self.summary = line
        else:
            stderr(visible(line, lines=True))

    def add(self, diags, sources) -> None:
        """Report diagnostics ``diags``, quoting source lines from ``sources`` ({display
        path: Source}, :class:`Sources`); one found in rcpc's standard library is shown
        where the workspace reached it (:func:`rcpc.domain.stdlib.attributed`)."""
        for d in map(stdlib.attributed, diags):
            if self.kind == "github":
                from rcpc.findings import github_command

                sys.stdout.write(github_command(d) + "\n")
            elif self.kind == "sarif":
                self.items.append(d)
            elif self.as_json:
                self.items.append(to_json(d, bounded=True))
            else:
                stderr(format_text(d, sources, self.color))

    def finish(self) -> None:
        """Print what is kept for the end: the SARIF log, or the JSON document."""
        if self.kind == "sarif":
            from rcpc.findings import to_sarif

            sys.stdout.write(json_text(to_sarif(self.items, self.root, __version__)) + "\n")
        elif self.as_json:
            doc = {"diagnostics": self.items}
            if self.summary is not None:
                doc["summary"] = self.summary
            stderr(json_text(doc))


class Run:
    """One run of a command: its :class:`Report`, its replay :class:`rcpc.build.replay.Recorder`,
    ``progress`` (what a Ctrl-C would leave written, for its message: set as a command
    writes) and, for a command run in a workspace, the :class:`rcpc.api.Workspace`
    (``workspace``, None until the dispatch opens it)."""

    def __init__(self, report: Report, recorder):
        self.report = report
        self.recorder = recorder
        self.progress = "nothing was written"
        self.workspace = None

    @property
    def config(self):
        """The workspace's settings (:class:`rcpc.domain.workspace.Workspace`, rcp.toml)."""
        return self.workspace.config

    @property
    def sources(self) -> dict:
        """Sources for quoting diagnostics (:class:`Sources`); {} outside a workspace."""
        if self.workspace is None:
            return {}
        return Sources(self.workspace.config, self.workspace.sources)

    def diagnostics(self, diags, sources: dict | None = None) -> None:
        """Report ``diags`` (:meth:`Report.add`) with the workspace's sources and ``sources``
        (:attr:`rcpc.core.diagnostics.CompileError.sources`)."""
        known = self.sources  # a new table each time
        for path, source in (sources or {}).items():
            known.setdefault(path, source)
        self.report.add(diags, known)


class Sources(dict):
    """Display path → :class:`~rcpc.core.source.Source`: the compiler's, and ``get`` reads a
    file not yet known (diagnostics from the build cache or from worker processes), never
    outside the workspace ``ws`` but for the schema files named and rcpc's own."""

    def __init__(self, ws, known: dict):
        super().__init__(known)
        self.ws = ws

    def get(self, path: str, default=None):
        if path not in self:
            real = Path(os.path.realpath(self.ws.path_of(path)))
            named = {Path(os.path.realpath(p)) for p in (self.ws.maxtext_schema, *self.ws.kube_schemas) if p}
            if self.ws.root not in real.parents and real not in named and not stdlib.contains(real):
                return default  # never read outside the workspace, save the schema files named and rcpc's own
            try:  # bounded, as when compiling (E0803); decoded as the compiler decodes it: no
                # newline translation (a lone '\r' stays)
                self[path] = Source(path, read_limited(real, MAX_FILE_BYTES).decode("utf-8"), str(real))
            except (OSError, UnicodeDecodeError, ValueError):  # <command line>, gone, not text
                return default
        return self[path]
