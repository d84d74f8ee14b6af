"""Values files: param values apart from the recipe (``rcpc build --values clusters/prod.toml``;
docs/cli.md, Values files), as Helm's ``-f values.yaml`` or Kustomize's per-cluster overlays.

A values file is TOML 1.0 (toml.io) whose top-level keys are param names, each set to a
bool, an integer, a float or a string::

    PROJECT = "my-project"
    ZONE = "europe-west4-a"
    STEPS = 200
    PROFILE = true

:func:`read_values` reads one: the values as recipe values whose spans point into the file
(so a wrong type is reported at the value, and ``rcpc explain`` shows where a value came from),
and where each key is; :func:`locate` and :func:`load` find and read the file a ``--values``
item names. The param types them (:func:`rcpc.domain.builtins.check_param_value`,
as a variant's ``set``); an unknown param is reported at its key
(:meth:`rcpc.domain.recipe.Compiler.build`). Errors: ``E0630`` a file that cannot be read,
``E0631`` text that is not TOML, ``E0632`` a key that is not a param name = value (a table, a
dotted key, an array, a date), ``E0803``/``E0003`` as for recipes.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import tomli
from pathlib import Path

from rcpc.core import record
from rcpc.core.diagnostics import CompileError, Diagnostic, error, io_hint
from rcpc.core.digest import hexdigest
from rcpc.core.files import NotRegular, TooLarge
from rcpc.core.limits import INT_LIMIT, MAX_ERRORS, MAX_FILE_BYTES
from rcpc.core.source import Span
from rcpc.core.values import Bool, Float, Int, Str
from rcpc.domain.workspace import check_dotted_keys, entry, not_utf8, toml_error, too_large

_HINT = "a values file holds lines NAME = VALUE: a param's name, a bool, integer, float or string (docs/cli.md, " \
        "Values files)"
_KEY = re.compile(r"""[ \t]*(?:([A-Za-z0-9_-]+)|"((?:[^"\\\n]|\\.)*)"|'([^'\n]*)')[ \t]*(=|\.)?""")
_FLOAT = re.compile(r"^[-+]?[0-9](?:_?[0-9])*(?:\.[0-9](?:_?[0-9])*)?(?:[eE][-+]?[0-9](?:_?[0-9])*)?$")


@record.frozen
class ValuesFile:
    """One values file read: ``shown`` (its path as diagnostics name it: relative to the
    workspace when inside it, else as given), ``values`` (param name →
    :class:`~rcpc.core.values.Bool` / ``Int`` / ``Float`` / ``Str``, spans in the file) and
    ``keys`` (param name → the span of its key), in the file's order; ``path`` (its real path,
    the build's dependency), ``sha256`` (hex, of the bytes read: what a build's provenance
    records, for the user's own tools) and ``digest`` (hex, :mod:`rcpc.core.digest`: what the
    build's dependencies record) when read from a file."""

    shown: str
    values: dict
    keys: dict
    path: str = ""
    sha256: str = ""
    digest: str = ""


def locate(workspace, path: Path, given: str) -> tuple[Path, str]:
    """``(real path, shown)`` of the values file at ``path`` (absolute; ``given``: as the user
    named it) in workspace ``workspace`` (:class:`~rcpc.domain.workspace.Workspace`). A values
    file is named on the command line, so it may lie outside the workspace; one named inside
    it must resolve inside it (``E0906``: a symlink there leading out is not read, as for
    recipes, so a file another user can write cannot make a build quote a file elsewhere).
    ``shown`` is its path relative to the workspace when inside it, else ``given``."""
    inside = workspace.root in entry(path).parents
    real = workspace.inside(path) if inside else Path(os.path.realpath(path))  # E0906: a link out
    return real, workspace.display(real) if workspace.root in real.parents else given


def load(real: Path, shown: str, read) -> tuple[ValuesFile, str]:
    """The :class:`ValuesFile` at ``real`` (:func:`locate`) and its text, its bytes read by
    ``read(real, limit, follow)`` (:func:`rcpc.core.files.read_limited`, or a compiler's
    read that records them) without following a symlink put in its place since it was
    resolved, within :data:`~rcpc.core.limits.MAX_FILE_BYTES` (``E0803``, checked before
    reading). ``E0630`` when it cannot be read or is not a regular file, ``E0003`` when it
    is not UTF-8, and the errors of :func:`read_values`."""
    try:
        data = read(real, MAX_FILE_BYTES, follow=False)
    except TooLarge as exc:
        raise too_large(shown, exc.size) from None
    except OSError as exc:
        why = "it is not a regular file" if isinstance(exc, NotRegular) else exc.strerror
        raise error("E0630", f"cannot read values file {shown}: {why}", None,
                    hint=io_hint(exc) if not isinstance(exc, NotRegular) else
                    "name a TOML file of NAME = VALUE lines (docs/cli.md, Values files)") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(shown, data[:exc.start].count(b"\n") + 1) from None
    return read_values(text, shown, str(real), hashlib.sha256(data).hexdigest(), hexdigest(data)), text


def read_values(text: str, shown: str, path: str = "", sha256: str = "", digest: str = "") -> ValuesFile:
    """The values of values file ``shown`` holding ``text`` (decoded UTF-8, at most
    :data:`~rcpc.core.limits.MAX_FILE_BYTES`, checked by the caller; ``path``, ``sha256`` and
    ``digest``: the file's real path, the SHA-256 and :mod:`rcpc.core.digest` hex digests of its
    bytes, kept in the result). Raises ``E0631`` for
    text that is not TOML (at tomli's line and column), ``E0632`` for a table, a dotted key
    or a value that is no param value (an array, an inline table, a date, nan or inf, an
    integer outside 64 bits: each such value, up to :data:`~rcpc.core.limits.MAX_ERRORS`, then
    ``E0808``)."""
    check_dotted_keys(text, shown, "E0631")
    try:
        data = tomli.loads(text)
    except RecursionError:  # tomli recurses into arrays and inline tables
        raise error("E0631", f"{shown} is not valid TOML: its arrays or inline tables nest too deeply",
                    Span(shown, 1, 1, 1, 1), hint=_HINT) from None
    except tomli.TOMLDecodeError as exc:
        why, where = toml_error(exc, shown)
        raise error("E0631", f"{shown} is not valid TOML: {why}", where, hint=_HINT) from None
    places = _places(text, shown)
    values, keys, refused = {}, {}, []
    for name, raw in data.items():
        key_span, value_span, written = places.get(name, (Span(shown, 1, 1, 1, 1),) * 2 + ("",))
        keys[name] = key_span
        try:
            values[name] = _value(name, raw, written, value_span, shown)
        except CompileError as exc:  # every value no param can hold, at once (as unknown params)
            refused.extend(exc.diagnostics)
            if len(refused) > MAX_ERRORS:
                del refused[MAX_ERRORS:]
                refused.append(Diagnostic("E0808", f"more than {MAX_ERRORS} values that are no param value; the "
                                          "rest are not reported", value_span, hint="fix the errors above first"))
                break
    if refused:
        raise CompileError(refused)
    return ValuesFile(shown, values, keys, path, sha256, digest)


def _value(name: str, raw, written: str, span: Span, shown: str):
    """The recipe value of TOML value ``raw`` of key ``name`` (``written``: its text in the
    file when it is one line). ``E0632`` for one no param can hold."""
    if type(raw) is bool:
        return Bool(raw, "true" if raw else "false", span)
    if type(raw) is int and -INT_LIMIT <= raw < INT_LIMIT:
        return Int(raw, str(raw), span)
    if type(raw) is float and math.isfinite(raw):
        return Float(raw, written.replace("_", "") if _FLOAT.match(written) else repr(raw), span)
    if type(raw) is str:
        return Str(raw, span)
    what = {dict: "a table", list: "an array", int: "an integer outside 64 bits",
            float: "not a finite number"}.get(type(raw), "a date or time")
    raise error("E0632", f"{shown}: {name} is {what}, not a param value", span, hint=_HINT)


def _places(text: str, shown: str) -> dict:
    """Param name → (key span, value span, the value's text on its line) of each top-level
    ``KEY = VALUE`` of ``text``, found line by line outside multi-line strings and arrays
    (columns in characters, as tomli counts them). ``E0632`` at a table header or a dotted
    key: a values file's keys are param names."""
    out: dict = {}
    depth, quote = 0, None  # open brackets; the multi-line string's delimiter we are inside
    for n, line in enumerate(text.split("\n"), 1):
        i = 0
        if quote is None and depth == 0:
            stripped = line.lstrip(" \t")
            col = len(line) - len(stripped) + 1
            if stripped.startswith("["):
                raise error("E0632", f"{shown}: a table is not a param value", Span(shown, n, col, n, len(line) + 1),
                            hint=_HINT)
            m = _KEY.match(line)
            if m and m.group(4):
                name = next(g for g in m.groups()[:3] if g is not None)
                key = Span(shown, n, col, n, len(line[:m.start(4)].rstrip()) + 1)
                if m.group(4) == ".":
                    raise error("E0632", f"{shown}: dotted key {name}.… is not a param name", key, hint=_HINT)
                i = m.end(0)
                rest = line[i:]
                start = i + len(rest) - len(rest.lstrip(" \t"))
                end = _value_end(line, start)
                out.setdefault(name, (key, Span(shown, n, start + 1, n, end + 1), line[start:end]))
        depth, quote = _scan(line, i, depth, quote)
    return out


def _value_end(line: str, start: int) -> int:
    """Where the value starting at ``start`` of ``line`` ends on that line (before a comment)."""
    if line.startswith(('"""', "'''"), start):
        return len(line.rstrip())
    if start < len(line) and line[start] in "\"'":
        q, j = line[start], start + 1
        while j < len(line) and line[j] != q:
            j += 2 if q == '"' and line[j] == "\\" else 1
        return min(j + 1, len(line))
    m = re.compile(r"[^\s#,\]}]*").match(line, start)
    return m.end() if m.end() > start else len(line.split("#")[0].rstrip()) or start + 1


def _scan(line: str, i: int, depth: int, quote: str | None) -> tuple[int, str | None]:
    """(bracket depth, open multi-line string delimiter) after reading ``line`` from ``i``:
    strings and comments skipped, so a ``[`` or ``=`` in them counts for nothing."""
    while i < len(line):
        if quote is not None:
            end = line.find(quote, i)
            while end > 0 and quote == '"""' and _escaped(line, end):
                end = line.find(quote, end + 1)
            if end < 0:
                return depth, quote
            i, quote = end + 3, None
            continue
        c = line[i]
        if c == "#":
            break
        if line.startswith(('"""', "'''"), i):
            quote, i = line[i:i + 3], i + 3
        elif c in "\"'":
            j = i + 1
            while j < len(line) and line[j] != c:
                j += 2 if c == '"' and line[j] == "\\" else 1
            i = j + 1
        else:
            depth += (c in "[{") - (c in "]}")
            i += 1
    return depth, quote


def _escaped(line: str, at: int) -> bool:
    """The character at ``at`` follows an odd number of backslashes."""
    n = 0
    while at - n - 1 >= 0 and line[at - n - 1] == "\\":
        n += 1
    return n % 2 == 1
