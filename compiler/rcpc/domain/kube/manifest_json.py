"""A manifest file that kubectl reads as JSON, as rcpc values with spans.

``kubectl apply -f`` reads a file whose first 4,096 bytes open, after white space, with ``{``
as a stream of JSON values (``k8s.io/apimachinery/pkg/util/yaml`` ``GuessJSONStream``), with
Go's ``encoding/json``, not with go-yaml. JSON read as YAML differs: a string holding DEL or a
C1 control character, or a ``\\ud83d\\ude00`` surrogate pair, is valid JSON that YAML refuses,
and several objects one after another are one YAML document. So such a file is read here as
JSON: ``encoding/json``'s grammar (no ``NaN``, no comments, no trailing commas), values one
after another with only white space (space, tab, CR, LF) between, a lone surrogate escape
read as U+FFFD; a number as the API machinery converts it (``ConvertMapNumbers``:
``json.Number.Int64`` when the text is an integer that fits, else ``Float64``, an error when
that overflows). Errors are ``E1103``.
"""

from __future__ import annotations

import bisect
import json
import re

from rcpc.core.diagnostics import CompileError, Diagnostic
from rcpc.core.limits import MAX_DEPTH
from rcpc.core.source import Span
from rcpc.core.values import Bool, Dict, Float, Int, List, Null, Str

_WS = re.compile(r"[ \t\r\n]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_SURROGATE = re.compile("[\ud800-\udfff]")
_HINT = "write the file as JSON, or as block YAML (not opening with '{')"


class _Reader:
    def __init__(self, text: str, shown: str):
        self.text, self.shown = text, shown
        self.lines = [0] + [m.end() for m in re.finditer("\n", text)]
        self.problems: list[Diagnostic] = []

    def span(self, start: int, end: int) -> Span:
        line = bisect.bisect_right(self.lines, start)
        end_line = bisect.bisect_right(self.lines, max(end - 1, start))
        return Span(self.shown, line, start - self.lines[line - 1] + 1, end_line,
                    max(end, start + 1) - self.lines[end_line - 1] + 1)

    def fail(self, i: int, what: str):
        raise CompileError(Diagnostic("E1103", f"kubectl reads {self.shown} as JSON (it opens with '{{') and "
                                      f"cannot: {what}", self.span(i, i + 1), hint=_HINT))

    def skip(self, i: int) -> int:
        return _WS.match(self.text, i).end()

    def value(self, i: int, depth: int = 1):
        """The value at ``i`` (no white space before it) at nesting level ``depth`` and the
        index after it. Deeper than :data:`~rcpc.core.limits.MAX_DEPTH` is ``E1103``, as in
        a YAML manifest."""

        text = self.text
        c = text[i:i + 1]
        if c in ("{", "[") and depth > MAX_DEPTH:
            raise CompileError(Diagnostic("E1103", f"the document nests more than {MAX_DEPTH} levels here",
                                          self.span(i, i + 1),
                                          hint=f"a manifest nests a few dozen levels; at most {MAX_DEPTH}"))
        if c == "{":
            return self.obj(i, depth)
        if c == "[":
            items, j = [], self.skip(i + 1)
            if text[j:j + 1] == "]":
                return List((), self.span(i, j + 1)), j + 1
            while True:
                v, j = self.value(j, depth + 1)
                items.append(v)
                j = self.skip(j)
                if text[j:j + 1] == "]":
                    return List(tuple(items), self.span(i, j + 1)), j + 1
                if text[j:j + 1] != ",":
                    self.fail(j, "expected ',' or ']' in a list")
                j = self.skip(j + 1)
        if c == '"':
            s, j = self.string(i)
            return Str(s, self.span(i, j)), j
        for word, make in (("true", lambda sp: Bool(True, "true", sp)), ("false", lambda sp: Bool(False, "false", sp)),
                           ("null", lambda sp: Null("null", sp))):
            if text.startswith(word, i):
                return make(self.span(i, i + len(word))), i + len(word)
        m = _NUMBER.match(text, i)
        if m is None:
            self.fail(i, "expected a JSON value")
        num, j, span = m.group(), m.end(), self.span(i, m.end())
        if not m.group(1) and not m.group(2) and -(1 << 63) <= int(num) < (1 << 63):
            return Int(int(num), num, span), j
        x = float(num)
        if x in (float("inf"), float("-inf")):
            self.problems.append(Diagnostic("E1103", f"{num} is out of a float64's range: kubectl cannot convert it",
                                            span, hint="write a smaller number"))
        return Float(x, num, span), j

    def string(self, i: int) -> tuple[str, int]:
        try:
            s, j = json.decoder.scanstring(self.text, i + 1, True)
        except json.JSONDecodeError as exc:
            self.fail(exc.pos, exc.msg)
        return _SURROGATE.sub("\ufffd", s), j

    def obj(self, i: int, depth: int):
        text, items, keys = self.text, {}, {}
        j = self.skip(i + 1)
        if text[j:j + 1] == "}":
            return Dict(items, keys, self.span(i, j + 1)), j + 1
        while True:
            if text[j:j + 1] != '"':
                self.fail(j, "expected a double-quoted key")
            k, after = self.string(j)
            span = self.span(j, after)
            j = self.skip(after)
            if text[j:j + 1] != ":":
                self.fail(j, "expected ':' after a key")
            v, j = self.value(self.skip(j + 1), depth + 1)
            if k in items:
                self.problems.append(Diagnostic("E1103", f"key {k!r} is repeated in one object", span,
                                                related=(("first here", keys[k]),),
                                                hint="kubectl keeps only the last one, silently: keep one"))
            items[k], keys[k] = v, span
            j = self.skip(j)
            if text[j:j + 1] == "}":
                return Dict(items, keys, self.span(i, j + 1)), j + 1
            if text[j:j + 1] != ",":
                self.fail(j, "expected ',' or '}' in an object")
            j = self.skip(j + 1)


def read_json_stream(text: str, start: int, shown: str) -> list:
    """The JSON values of ``text`` from index ``start`` (past a BOM), one after another, as
    values with spans (module docstring). Raises :class:`CompileError` (``E1103``)."""
    reader, out = _Reader(text, shown), []
    i = reader.skip(start)
    while i < len(text):
        v, i = reader.value(i)
        out.append(v)
        i = reader.skip(i)
    if reader.problems:
        raise CompileError(reader.problems)
    return out
