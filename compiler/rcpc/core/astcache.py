"""The AST cache: a file's parse (:func:`rcpc.core.syntax.parser.parse`: statements and comments)
kept in the user cache, keyed by the file's content, so that an unchanged recipe or library
skips lark (its import, its tables and the parse) in the edit loop, in a partial rebuild, in
``rcpc fmt --check`` and in ``-j`` workers.

An entry's name and header hold its *key*: the SHA-256 of rcpc's own code (its version and
the size and mtime of each of its source files, :func:`rcpc.core.usercache.code_fingerprint`), the
Python version, where lark is installed and the size and mtime of its ``__init__.py``, the
file's display path (spans name it) and its text. The header also holds the SHA-256 of the
payload, a :mod:`pickle` of the statements and comments. A lookup is a hit only when the
entry is a regular file of bounded size (:func:`rcpc.core.files.read_limited`), its header names
the key asked for, its payload has the recorded digest, and it unpickles, with only the AST
node classes and :class:`~rcpc.core.source.Span` allowed as classes, to an
:class:`~rcpc.core.syntax.ast.Module` of that path. Anything else (missing, truncated, damaged,
another file's entry, another version's) is a miss: the file is parsed and the entry
rewritten. Only successful parses are stored. Entries live in ``$XDG_CACHE_HOME/rcpc/ast``
(``~/.cache/rcpc/ast``); ``RCPC_NO_CACHE=1`` turns the cache off; failures to write are ignored.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import sys

from rcpc.core.files import read_limited
from rcpc.core.source import Source
from rcpc.core.usercache import cache_dir, code_fingerprint, write_atomic

MAGIC = b"rcpc-ast 1\n"
_HEADER = len(MAGIC) + 64 + 64  # magic, key and payload digest (hex)
_ALLOWED = {"rcpc.core.source": {"Span"}}  # plus every class of rcpc.core.syntax.ast (_allowed)
_KEY_BASE: list[str] = []  # computed once a process


def _key_base() -> str:
    if not _KEY_BASE:
        from importlib.util import find_spec

        spec = find_spec("lark")
        origin = spec.origin if spec is not None and spec.origin else ""
        st = os.stat(origin) if origin else None
        lark = f"{origin}:{st.st_size}:{st.st_mtime_ns}" if st else "no lark"
        _KEY_BASE.append(f"{code_fingerprint()}\0{sys.version}\0{lark}")
    return _KEY_BASE[0]


def key(source: Source) -> str:
    """The entry key of ``source``'s parse: SHA-256 hex of the code, Python and lark versions,
    the display path and the text."""
    data = "\0".join((_key_base(), source.path, source.text)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def _directory() -> str | None:
    if os.environ.get("RCPC_NO_CACHE"):
        return None
    return cache_dir("ast")


def _allowed(module: str, name: str) -> bool:
    from rcpc.core.syntax import ast

    if module == "rcpc.core.syntax.ast":
        cls = getattr(ast, name, None)
        return isinstance(cls, type) and cls.__module__ == module and hasattr(cls, "__attrs_attrs__")
    return name in _ALLOWED.get(module, ())


class _Unpickler(pickle.Unpickler):
    """Builds AST nodes and spans only: any other class or function named by the payload is
    an error (a damaged or foreign entry)."""

    def find_class(self, module: str, name: str):
        if not _allowed(module, name):
            raise pickle.UnpicklingError(f"{module}.{name} is not an AST class")
        return super().find_class(module, name)


def lookup(source: Source):
    """The cached :class:`~rcpc.core.syntax.ast.Module` of ``source`` (with ``source`` set on it),
    or None on any miss."""
    from rcpc.core.syntax import ast

    directory = _directory()
    if directory is None:
        return None
    k = key(source)
    try:
        # an AST pickles to a few times its text; far larger is not an entry we wrote
        data = read_limited(os.path.join(directory, k[:2], k), 64 * len(source.text) + 65536)
        if len(data) < _HEADER or data[:len(MAGIC)] != MAGIC or data[len(MAGIC):len(MAGIC) + 64] != k.encode():
            return None
        payload = data[_HEADER:]
        if hashlib.sha256(payload).hexdigest().encode() != data[len(MAGIC) + 64:_HEADER]:
            return None
        path, stmts, comments = _Unpickler(io.BytesIO(payload)).load()
        if path != source.path or type(stmts) is not tuple or type(comments) is not tuple:
            return None
        if not all(type(c) is ast.Comment for c in comments):
            return None
        return ast.Module(path, stmts, comments, source)
    except (OSError, ValueError, EOFError, TypeError, AttributeError, IndexError, KeyError,
            RecursionError, MemoryError, pickle.UnpicklingError):
        return None


def store(module) -> None:
    """Keep the parse ``module`` (whose ``source`` is set) for the next run."""
    directory = _directory()
    if directory is None or module.source is None:
        return
    k = key(module.source)
    try:
        payload = pickle.dumps((module.path, module.stmts, module.comments), protocol=pickle.HIGHEST_PROTOCOL)
        os.makedirs(os.path.join(directory, k[:2]), exist_ok=True)
        header = MAGIC + k.encode() + hashlib.sha256(payload).hexdigest().encode()
        write_atomic(os.path.join(directory, k[:2], k), header + payload)
    except (OSError, RecursionError, pickle.PicklingError):
        pass


def parse(source: Source):
    """:func:`rcpc.core.syntax.parser.parse` of ``source``, from the cache when this text was
    parsed before. Raises what it raises."""
    module = lookup(source)
    if module is None:
        from rcpc.core.syntax.parser import parse as parse_text

        module = parse_text(source)
        store(module)
    return module
