"""The AST cache: a file's parse (:func:`rcpc.core.syntax.parser.parse`: statements and comments)
kept in the user cache, keyed by the file's content, so that an unchanged recipe or library
skips the parse in the edit loop, in a partial rebuild, in
``rcpc fmt --check`` and in ``-j`` workers.

An entry's name and header hold its *key*: the SHA-256 of rcpc's own code (its version and
the size and mtime of each of its source files, :func:`rcpc.core.usercache.code_fingerprint`), the
Python version, where lark is installed and the size and mtime of its ``__init__.py``, the
file's display path (spans name it) and its text. The header also holds the SHA-256 of the
payload, a :mod:`pickle` of the path, the SHA-256 of the code's part of the key, and the
parse cut at its top-level statements (:class:`~rcpc.core.syntax.incremental.Chunk`). A lookup
is a hit only when the entry is a regular file of bounded size
(:func:`rcpc.core.files.read_limited`), its header names the key asked for, its payload has the
recorded digest, and it unpickles, with only the AST node classes,
:class:`~rcpc.core.source.Span` and ``Chunk`` allowed as classes, to chunks of that path made
by this code. Anything else (missing, truncated, damaged, another file's entry, another
version's) is a miss: the file is parsed and the entry rewritten. Only successful parses are
stored.

On a miss, the path's last parse (this process's, else the entry that ``ast/last/<SHA-256 of
the code's key and the path>`` names, read under the same checks) lends the chunks whose text
did not change (:func:`rcpc.core.syntax.incremental.parse`): after one edit, only the edited
statement is parsed. Entries live in ``$XDG_CACHE_HOME/rcpc/ast``
(``~/.cache/rcpc/ast``); ``RCPC_NO_CACHE=1`` turns the cache off, the last parses kept in
memory too; failures to write are ignored.

The build server (:mod:`rcpc.server`) keeps entries in memory, so that each request's child
inherits them: an unchanged library is not read or unpickled again, and an edited file's last
parse is at hand. Each child reports the entries it used (:func:`used`), which the server
reads again under the same checks (:func:`remember`), and hands over the texts whose parses
it would store (:func:`hand_over`, :func:`handed`), which the server parses and stores after
the command (:func:`keep_parsed`). Entries in memory are found by cache directory and key,
so an entry of another text is never served and a lookup in another cache directory reads
(and so fills) that one; at most :data:`MEMORY_CHARS` characters of source are kept, in files
of at most :data:`ENTRY_CHARS`, oldest dropped first.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import sys

from rcpc.core import record
from rcpc.core.files import read_limited
from rcpc.core.source import Source
from rcpc.core.usercache import cache_dir, code_fingerprint, installed, write_atomic

MAGIC = b"rcpc-ast 2\n"
_HEADER = len(MAGIC) + 64 + 64  # magic, key and payload digest (hex)
_ALLOWED = {"rcpc.core.source": {"Span"}, "rcpc.core.syntax.incremental": {"Chunk"}}  # and the AST's (_allowed)
_KEY_BASE: list[str] = []  # computed once a process
_EARLIER: dict[str, tuple] = {}  # display path -> the chunks of its last parse in this process
# (cache directory, key) -> (chunks, characters of source): entries handed to remember() and
# keep_parsed(), by directory (a lookup in another cache directory reads that one, and so fills it)
_MEMORY: dict[tuple, tuple] = {}
_USED: dict[str, tuple] = {}  # display path -> (directory, key, characters) of its entry looked up or stored
# characters of source whose parses remember() and keep_parsed() keep in all, and in one file:
# an AST takes 13 (the bundled recipes) to 112 (a dense list) bytes of memory a character
MEMORY_CHARS = 1 << 20
ENTRY_CHARS = 1 << 16


def _key_base() -> str:
    if not _KEY_BASE:
        _KEY_BASE.append(f"{code_fingerprint()}\0{sys.version}\0{installed('lark')}")
    return _KEY_BASE[0]


def key(source: Source) -> str:
    """The entry key of ``source``'s parse: SHA-256 hex of the code, Python and lark versions,
    the display path and the text."""
    data = "\0".join((_key_base(), source.path, source.text)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def _last_name(path: str) -> str:
    """The name of the record of ``path``'s last stored parse (by this code)."""
    return hashlib.sha256("\0".join((_key_base(), "last", path)).encode("utf-8", "surrogatepass")).hexdigest()


def _code_id() -> str:
    return hashlib.sha256(_key_base().encode("utf-8", "surrogatepass")).hexdigest()


def _directory() -> str | None:
    if os.environ.get("RCPC_NO_CACHE"):
        return None
    return cache_dir("ast")


def _allowed(module: str, name: str) -> bool:
    from rcpc.core.syntax import ast

    if module == "rcpc.core.syntax.ast":
        cls = getattr(ast, name, None)
        return isinstance(cls, type) and cls.__module__ == module and record.has(cls)
    return name in _ALLOWED.get(module, ())


class _Unpickler(pickle.Unpickler):
    """Builds AST nodes, spans and chunks only: any other class or function named by the
    payload is an error (a damaged or foreign entry)."""

    def find_class(self, module: str, name: str):
        if not _allowed(module, name):
            raise pickle.UnpicklingError(f"{module}.{name} is not an AST class")
        return super().find_class(module, name)


def _chunk(c) -> bool:
    from rcpc.core.syntax import ast
    from rcpc.core.syntax.incremental import Chunk

    return (type(c) is Chunk and type(c.digest) is str and len(c.digest) == 64 and type(c.line) is int
            and type(c.tokens) is int and c.tokens >= 0 and type(c.stmts) is tuple and type(c.comments) is tuple
            and all(type(m) is ast.Comment for m in c.comments))


def _read(directory: str, k: str, path: str, limit: int) -> tuple | None:
    """The chunks of entry ``k``, a parse of ``path`` by this code; None on any miss."""
    try:
        data = read_limited(os.path.join(directory, k[:2], k), limit)
        if len(data) < _HEADER or data[:len(MAGIC)] != MAGIC or data[len(MAGIC):len(MAGIC) + 64] != k.encode():
            return None
        payload = data[_HEADER:]
        if hashlib.sha256(payload).hexdigest().encode() != data[len(MAGIC) + 64:_HEADER]:
            return None
        found, code, chunks = _Unpickler(io.BytesIO(payload)).load()
        if found != path or code != _code_id() or type(chunks) is not tuple or not all(map(_chunk, chunks)):
            return None
        return chunks
    except (OSError, ValueError, EOFError, TypeError, AttributeError, IndexError, KeyError,
            RecursionError, MemoryError, pickle.UnpicklingError):
        return None


def _module(source: Source, chunks: tuple):
    from rcpc.core.syntax import ast

    return ast.Module(source.path, tuple(s for c in chunks for s in c.stmts),
                      tuple(m for c in chunks for m in c.comments), source)


def _is_cache(directory) -> bool:
    """Whether ``directory`` names an AST cache directory as :func:`_directory` makes one:
    an absolute path ending in ``rcpc/ast`` (what :func:`remember` and :func:`keep_parsed`
    are handed is read and written only there)."""
    return (type(directory) is str and os.path.isabs(directory)
            and directory.endswith(os.sep + os.path.join("rcpc", "ast")))


def _limit(chars: int) -> int:
    """The largest entry of a text of ``chars`` characters: an AST pickles to a few times
    its text; far larger is not an entry we wrote."""
    return 64 * chars + 65536


def lookup(source: Source):
    """The cached :class:`~rcpc.core.syntax.ast.Module` of ``source`` (with ``source`` set on it),
    or None on any miss."""
    directory = _directory()
    if directory is None:
        return None
    k = key(source)
    _USED[source.path] = (directory, k, len(source.text))
    kept = _MEMORY.get((directory, k))
    chunks = kept[0] if kept is not None else _read(directory, k, source.path, _limit(len(source.text)))
    if chunks is None:
        return None
    _EARLIER[source.path] = chunks
    return _module(source, chunks)


def _earlier(source: Source) -> tuple:
    """The chunks of the last parse of ``source``'s path: this process's, else the one the
    cache recorded as the path's last (any miss: none)."""
    directory = _directory()
    if directory is None:
        return ()
    chunks = _EARLIER.get(source.path)
    if chunks is not None:
        return chunks
    try:
        k = read_limited(os.path.join(directory, "last", _last_name(source.path)), 64).decode("ascii")
    except (OSError, ValueError):
        return ()
    if len(k) != 64 or k.strip("0123456789abcdef"):
        return ()
    return _read(directory, k, source.path, 4 * _limit(len(source.text))) or ()


def store(module, chunks: tuple) -> None:
    """Keep the parse ``module`` (whose ``source`` is set), cut in ``chunks``
    (:func:`rcpc.core.syntax.incremental.parse`), for the next run; it becomes its path's
    last parse. In a process that hands its parses over (:func:`hand_over`), the text is
    kept for :func:`handed` instead, while they total at most :data:`HAND_OVER_CHARS`."""
    directory = _directory()
    if directory is None or module.source is None:
        return
    k = key(module.source)
    text = module.source.text
    if _HANDING and _HANDING[0] == os.getpid() and _HANDING[1] + len(text) <= HAND_OVER_CHARS:
        _HANDING[1] += len(text)
        _HANDED.append((directory, module.path, text, k, chunks))
    elif not _write(directory, module.path, k, chunks):
        return
    _USED[module.path] = (directory, k, len(text))


def _write(directory: str, path: str, k: str, chunks: tuple) -> bool:
    """Write the entry ``k`` of ``path``'s parse ``chunks`` in ``directory`` and make it the
    path's last parse; whether it was written."""
    try:
        payload = pickle.dumps((path, _code_id(), chunks), protocol=pickle.HIGHEST_PROTOCOL)
        os.makedirs(os.path.join(directory, k[:2]), exist_ok=True)
        os.makedirs(os.path.join(directory, "last"), exist_ok=True)
        header = MAGIC + k.encode() + hashlib.sha256(payload).hexdigest().encode()
        write_atomic(os.path.join(directory, k[:2], k), header + payload)
        write_atomic(os.path.join(directory, "last", _last_name(path)), k.encode())
    except (OSError, RecursionError, pickle.PicklingError):
        return False
    return True


_HANDING: list = []  # [pid of the process that hands its parses over, characters handed so far]
_HANDED: list = []   # (directory, display path, text, key, chunks) of each parse handed over
# characters of source a process hands over at most (it stores the rest itself); at most
# ENTRY_CHARS, so that whatever is handed over is kept
HAND_OVER_CHARS = ENTRY_CHARS


def hand_over() -> None:
    """From now on, this process (not processes forked from it) hands the parses it would
    store over to another (the build server's child to the server, which parses them again
    and stores them, :func:`keep_parsed`, after the command has ended): :func:`handed`."""
    _HANDING[:] = [os.getpid(), 0]
    _HANDED.clear()


def handed() -> list[tuple[str, str, str]]:
    """``(directory, display path, text)`` of each parse handed over (:func:`hand_over`)."""
    return [entry[:3] for entry in _HANDED]


def store_handed() -> None:
    """Store the parses handed over after all (they could not be handed: :func:`store`)."""
    for directory, path, _, k, chunks in _HANDED:
        _write(directory, path, k, chunks)
    _HANDED.clear()


def keep_parsed(entries) -> None:
    """Parse the texts ``entries`` (as :func:`handed` gives them; anything else, a directory
    that is not an AST cache's included, is ignored) as :func:`parse` would, store each parse
    in its directory and keep it in memory (as :func:`remember` does). A text that does not
    parse is skipped."""
    from rcpc.core.diagnostics import CompileError
    from rcpc.core.syntax import incremental

    for entry in entries:
        if not (type(entry) in (tuple, list) and len(entry) == 3 and all(type(x) is str for x in entry)
                and len(entry[2]) <= ENTRY_CHARS and _is_cache(entry[0])):
            continue
        directory, path, text = entry
        source = Source(path, text)
        try:
            _, chunks = incremental.parse(source, _EARLIER.get(path, ()))
        except (CompileError, RecursionError):
            continue
        k = key(source)
        _write(directory, path, k, chunks)
        _keep(directory, k, path, chunks, len(text))
    _bound()


def used() -> list[tuple[str, str, str, int]]:
    """``(directory, path, key, characters of source)`` of every entry this process looked
    up or stored (the last one a path), oldest first: what :func:`remember` takes."""
    return [(directory, path, k, chars) for path, (directory, k, chars) in _USED.items()]


def remember(entries) -> None:
    """Read the entries ``entries`` (as :func:`used` gives them; anything else, a directory
    that is not an AST cache's included, is ignored) from the cache, under the checks of a
    lookup, and keep them in memory: later lookups of their keys in their directory, in this
    process and in processes forked from it, are served from memory, and each becomes its
    path's last parse. At most :data:`MEMORY_CHARS` characters of source are kept, the
    oldest dropped first, and no file of more than :data:`ENTRY_CHARS` (reading one back
    must not hold the server up)."""
    for entry in entries:
        if not (type(entry) in (tuple, list) and len(entry) == 4 and all(type(x) is str for x in entry[:3])
                and type(entry[3]) is int and 0 <= entry[3] <= ENTRY_CHARS and _is_cache(entry[0])):
            continue
        directory, path, k, chars = entry
        kept = _MEMORY.get((directory, k))
        chunks = kept[0] if kept is not None else _read(directory, k, path, _limit(chars))
        if chunks is not None:
            _keep(directory, k, path, chunks, chars)
    _bound()


def _keep(directory: str, k: str, path: str, chunks: tuple, chars: int) -> None:
    """Keep entry ``k`` of ``directory`` (``path``'s parse, of ``chars`` characters) in
    memory, newest last, as its path's last parse."""
    _MEMORY.pop((directory, k), None)
    _MEMORY[(directory, k)] = (chunks, chars)
    _EARLIER[path] = chunks


def _bound() -> None:
    """Drop the oldest entries kept in memory beyond :data:`MEMORY_CHARS` characters."""
    total = sum(size for _, size in _MEMORY.values())
    while total > MEMORY_CHARS and _MEMORY:
        chunks, size = _MEMORY.pop(next(iter(_MEMORY)))
        total -= size
        for path in [p for p, c in _EARLIER.items() if c is chunks]:
            del _EARLIER[path]


def parse(source: Source):
    """:func:`rcpc.core.syntax.parser.parse` of ``source``, from the cache when this text was
    parsed before, else parsing again only the top-level statements that changed since the
    path's last parse (:mod:`rcpc.core.syntax.incremental`). Raises what it raises."""
    if _directory() is None:  # nothing to reuse or keep: one parse, not cut in chunks
        from rcpc.core.syntax.parser import parse as parse_text

        return parse_text(source)
    module = lookup(source)
    if module is None:
        from rcpc.core.syntax import incremental

        module, chunks = incremental.parse(source, _earlier(source))
        _EARLIER[source.path] = chunks
        store(module, chunks)
    return module
