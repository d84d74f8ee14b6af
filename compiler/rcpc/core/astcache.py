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
(:func:`rcpc.core.usercache.read_owned`: this user's own), its header names the key asked for, its payload has the
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
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import sys

from rcpc.core import record
from rcpc.core.envvars import get
from rcpc.core.source import Source
from rcpc.core.usercache import cache_dir, code_fingerprint, installed, make_dirs, read_owned, write_atomic

MAGIC = b"rcpc-ast 2\n"
_HEADER = len(MAGIC) + 64 + 64  # magic, key and payload digest (hex)
_ALLOWED = {"rcpc.core.source": {"Span"}, "rcpc.core.syntax.incremental": {"Chunk"}}  # and the AST's (_allowed)
_KEY_BASE: list[str] = []  # computed once a process
_EARLIER: dict[str, tuple] = {}  # display path -> the chunks of its last parse in this process


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
    if get("RCPC_NO_CACHE"):
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
        data = read_owned(os.path.join(directory, k[:2], k), limit)
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
    chunks = _read(directory, key(source), source.path, _limit(len(source.text)))
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
        k = read_owned(os.path.join(directory, "last", _last_name(source.path)), 64).decode("ascii")
    except (OSError, ValueError):
        return ()
    if len(k) != 64 or k.strip("0123456789abcdef"):
        return ()
    return _read(directory, k, source.path, 4 * _limit(len(source.text))) or ()


def store(module, chunks: tuple) -> None:
    """Keep the parse ``module`` (whose ``source`` is set), cut in ``chunks``
    (:func:`rcpc.core.syntax.incremental.parse`), for the next run; it becomes its path's
    last parse. Failures to write are ignored."""
    directory = _directory()
    if directory is None or module.source is None:
        return
    k = key(module.source)
    try:
        payload = pickle.dumps((module.path, _code_id(), chunks), protocol=pickle.HIGHEST_PROTOCOL)
        make_dirs(os.path.join(directory, k[:2]))
        make_dirs(os.path.join(directory, "last"))
        header = MAGIC + k.encode() + hashlib.sha256(payload).hexdigest().encode()
        write_atomic(os.path.join(directory, k[:2], k), header + payload)
        write_atomic(os.path.join(directory, "last", _last_name(module.path)), k.encode())
    except (OSError, RecursionError, pickle.PicklingError):
        pass


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
