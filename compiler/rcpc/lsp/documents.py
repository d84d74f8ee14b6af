"""Which file a document URI of the protocol names, and the limits an open buffer is held to.

A request is untrusted input, as a recipe is: the server reads only what ``rcpc check``
would read for the same file, under the same limits.

* :func:`path_of` — the absolute path a ``file:`` URI names; :class:`BadUri` for any other
  URI (another scheme, a host, a query or fragment, a broken or non-UTF-8 percent-escape,
  a NUL or another control character, a relative path, more than :data:`MAX_URI` characters);
* :func:`locate` — the document's workspace (the nearest directory up with an ``rcp.toml``,
  found from where its directory entry is) and its real path, which must lie inside it;
* :func:`buffer_problem` — what the CLI would refuse in an open buffer's text, had it read
  it from a file (``E0803`` over :data:`~rcpc.core.limits.MAX_FILE_BYTES`, ``E0003``), found
  before anything parses it.

A file that is not open is read by the compiler (:meth:`rcpc.domain.recipe.Compiler.source`):
a regular file only (a device, FIFO, socket or directory is refused before it is opened),
its size checked before reading.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from rcpc.core.diagnostics import Diagnostic, error, io_hint
from rcpc.core.limits import MAX_FILE_BYTES
from rcpc.core.files import identity
from rcpc.domain.workspace import CONFIG_NAME, Workspace, entry, not_utf8, too_large

MAX_URI = 16 * 1024  # characters of a document URI: a path of PATH_MAX (4096) bytes, each percent-escaped
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_PIECE = 1 << 20  # characters of a buffer encoded at a time to count its bytes
# The server's table (rcpc.core.session.Session.table) of settings read: rcp.toml path → (its
# identity when read, the Workspace read from it), for the _KEPT files read last
SETTINGS = "rcpc.lsp.documents:settings"
_KEPT = 64


class BadUri(ValueError):
    """A document URI that names no file the server can read; ``str()`` says why."""


def path_of(uri: str) -> Path:
    """The absolute path named by ``uri``, a ``file:`` URI (RFC 8089: no host, or
    ``localhost``; the path percent-encoded UTF-8). Raises :class:`BadUri`."""
    if not isinstance(uri, str) or len(uri) > MAX_URI:
        raise BadUri(f"a document URI is a string of at most {MAX_URI} characters")
    if _CONTROL.search(uri):   # before urlsplit, which drops tabs and line breaks
        raise BadUri("the URI holds a NUL or another control character")
    try:
        parts = urlsplit(uri)
    except ValueError as exc:   # an unclosed '[' in the authority
        raise BadUri(f"not a URI ({exc})") from None
    if parts.scheme != "file":
        raise BadUri(f"rcpc reads file: URIs only, not {parts.scheme or 'a relative reference'}:")
    if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
        raise BadUri("a file: URI names a local file: no host, query or fragment")
    if _BAD_ESCAPE.search(parts.path):
        raise BadUri("a '%' in a URI starts an escape of two hex digits")
    try:
        path = unquote(parts.path, errors="strict")
        path.encode("utf-8")   # a lone surrogate (a JSON \\ud800) names no file
    except UnicodeError:
        raise BadUri("the URI's path is not UTF-8") from None
    if _CONTROL.search(path):
        raise BadUri("the URI's path holds a NUL or another control character (percent-escaped)")
    if not path.startswith("/"):
        raise BadUri("the URI's path is not absolute")
    return Path(path)


def locate(path: Path, settings: dict | None = None) -> tuple[Workspace, Path]:
    """The workspace settings of the document at ``path`` (from an ``rcp.toml`` at or above
    the real directory holding its entry, as the CLI finds it; that directory when there is
    none) and the document's real path, which must lie inside that workspace. Raises
    :class:`~rcpc.core.diagnostics.CompileError`: ``E0901`` for a bad ``rcp.toml``,
    ``E0906`` for a symlink out of the workspace, ``E0907`` for one that cannot be
    resolved, ``E0201`` for a path the system refuses (a name too long). ``settings``: the
    table (:data:`SETTINGS`) of the settings read before, kept while their file is unchanged
    (default: read anew)."""
    try:
        ws = _find(entry(path).parent, {} if settings is None else settings)
    except OSError as exc:   # a name too long
        raise error("E0201", f"cannot read {path}: {exc.strerror}", None, hint=io_hint(exc)) from None
    return ws, ws.inside(path)


def _find(directory: Path, loaded: dict) -> Workspace:
    """:meth:`Workspace.find` of a real directory, the settings read from an ``rcp.toml``
    kept while the file is unchanged (its size, times and inode: :func:`rcpc.core.files.identity`),
    so that a request costs a few ``stat`` calls, not a TOML parse."""
    for d in (directory, *directory.parents):
        cfg = d / CONFIG_NAME
        if not cfg.exists():
            continue
        stamp = identity(cfg)
        got = loaded.get(cfg)
        if got is not None and got[0] == stamp:
            return got[1]
        ws = Workspace.find(d)
        if identity(cfg) == stamp:   # not changed while it was read
            loaded.pop(next(iter(loaded)), None) if len(loaded) >= _KEPT else None
            loaded[cfg] = (stamp, ws)
        return ws
    return Workspace.find(directory)


def buffer_problem(shown: str, text: str) -> Diagnostic | None:
    """What reading ``text`` from the file ``shown`` would refuse: ``E0803`` when it is more
    than :data:`~rcpc.core.limits.MAX_FILE_BYTES` bytes in UTF-8, ``E0003`` when it cannot be
    UTF-8 (a lone surrogate, which a JSON string can carry); None for a text the CLI would
    read. Counted a piece at a time: no copy of a large text is made."""
    size, bad = 0, None
    for start in range(0, len(text), _PIECE):
        piece = text[start:start + _PIECE]
        try:
            size += len(piece.encode("utf-8"))
        except UnicodeEncodeError as exc:
            size += len(piece.encode("utf-8", "surrogatepass"))
            bad = start + exc.start if bad is None else bad
    if size > MAX_FILE_BYTES:
        return too_large(shown, size).diagnostics[0]
    return None if bad is None else not_utf8(shown, text.count("\n", 0, bad) + 1).diagnostics[0]
