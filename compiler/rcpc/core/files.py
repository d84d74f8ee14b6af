"""Bounded reads of input files: every file rcpc reads (recipes, loaded files, ``rcp.toml``,
schema files, cache entries, outputs compared before a rewrite) is read through
:func:`read_limited`, so that a huge file, ``/dev/zero`` or a FIFO named as an input is an
error, never a read without end or a hang.

Imports only ``os``, ``stat`` and ``errno``: the no-op replay (:mod:`rcpc.build.replay`) uses it
before anything else is loaded.
"""

from __future__ import annotations

import errno
import os
import stat

from rcpc.core.limits import MAX_NODES

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class TooLarge(OSError):
    """The file holds more than the limit: ``size`` is the number of bytes it has (its
    ``st_size``, or the limit + 1 when it grew while being read)."""

    def __init__(self, path, size: int, limit: int):
        super().__init__(errno.EFBIG, f"{size} bytes, over the limit of {limit}", os.fspath(path))
        self.size = size
        self.limit = limit


class NotRegular(OSError):
    """The path names a directory, device, FIFO or socket, not a regular file."""

    def __init__(self, path):
        super().__init__(errno.EINVAL, "not a regular file", os.fspath(path))


def identity(path: str | os.PathLike) -> tuple:
    """What any change to a file or directory moves, symlinks followed: (size, mtime and
    ctime in ns, inode, device). Raises OSError."""
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev


def read_limited(path: str | os.PathLike, limit: int, follow: bool = True) -> bytes:
    """The bytes of the regular file ``path`` (symlinks followed), which must hold at most
    ``limit`` bytes. At most ``limit + 1`` bytes are read, and a FIFO is never opened for
    reading in a blocking way (``O_NONBLOCK``; the type is checked before and after opening).
    ``follow`` False: ``path`` is a real path whose last component must not be a symlink
    (``lstat``, and ``O_NOFOLLOW``: one put there since it was resolved is refused, ``ELOOP``).

    Raises :class:`TooLarge`, :class:`NotRegular`, or another :class:`OSError` (missing,
    unreadable)."""
    if not stat.S_ISREG((os.stat if follow else os.lstat)(path).st_mode):
        raise NotRegular(path)
    fd = os.open(path, _FLAGS if follow else _FLAGS | getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # replaced since the check above
            raise NotRegular(path)
        if st.st_size > limit:
            raise TooLarge(path, st.st_size, limit)
        data = read_fd(fd, limit + 1)
        if len(data) > limit:  # grew past the limit while being read
            raise TooLarge(path, limit + 1, limit)
        return data
    finally:
        os.close(fd)


def read_fd(fd: int, most: int) -> bytes:
    """The bytes of open file ``fd`` from its offset to its end, or its first ``most``
    bytes. Raises OSError."""
    chunks = []
    while most > 0:
        chunk = os.read(fd, min(most, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        most -= len(chunk)
    return b"".join(chunks)


def expanded_size(value, limit: int, children=None) -> int:
    """The number of nodes of a loaded YAML or JSON document (dicts, lists and scalars, keys
    not counted) with every shared part counted each time it is used, as a reader that walks
    or copies the document meets it: a YAML alias repeats its anchor's value. ``children(node)``
    gives a node's child nodes, or None for a scalar (default: a dict's values, a list's
    items). Computed in time linear in the *distinct* nodes and their uses (``children`` is called
once a distinct node; a repeated use is one look-up), capped at
    ``limit + 1``; so ``expanded_size(doc, limit) > limit`` says that the document is a
    "billion laughs" (nine aliases of nine aliases ... in an 800-byte file) before anything
    walks it; a document that holds itself (``&a [*a]``) is endless, ``limit + 1``.
    Iterative: a deep document cannot exhaust the stack."""
    children = children or _children
    weights: dict[int, int] = {}
    open_nodes: set[int] = set()  # being weighed: met again below itself, the document is a cycle
    stack = [(value, None)]
    while stack:
        node, kids = stack.pop()
        if kids is None:
            if id(node) in weights:  # weighed: a use of a shared node costs one look-up, not its children
                continue  # (listing them first made `[*a, *a, ...]` of a big `&a` quadratic: hours)
            if id(node) in open_nodes:  # `&a [*a]`: endless to a reader that walks it
                return limit + 1
            kids = children(node)
            if kids is None:
                continue
            open_nodes.add(id(node))
            stack.append((node, kids))
            stack.extend((x, None) for x in kids)
            continue
        total = 1
        for x in kids:
            total = min(total + weights.get(id(x), 1), limit + 1)
        weights[id(node)] = total
    return weights.get(id(value), 1)


def _children(node):
    if isinstance(node, dict):
        return list(node.values())
    return list(node) if isinstance(node, (list, tuple)) else None


def yaml_node_limit(size: int) -> int:
    """How many nodes a YAML file of ``size`` bytes may expand to: one a byte, plus 100,000
    (room for anchors reused a few times), at most :data:`rcpc.core.limits.MAX_NODES`. A file
    without aliases never comes near it, and reading one that does stays linear in its
    size."""

    return min(MAX_NODES, size + 100_000)


def write_output(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path``, a file the user named (``-o FILE``, or a recipe ``rcpc fmt``
    rewrites), as a shell redirection would but atomically where it can: a regular file (or a
    symlink to one) is replaced through a temporary file of a unique name beside its real
    path (two runs never share one), keeping the symlink and the file's mode and owner (where
    allowed); a device, FIFO or socket (``-o /dev/stdout``) is written to in place,
    never replaced (``-o /dev/full`` replaced the device node with a regular file); a new
    path gets a new file. Raises OSError (``IsADirectoryError`` for a directory; the
    temporary file is removed)."""
    import tempfile

    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", os.fspath(path))
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(path, "wb") as f:
            f.write(data)
        return
    real = os.path.realpath(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(real)}.", suffix=".rcpc-tmp", dir=os.path.dirname(real))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if st is not None:
                mode = stat.S_IMODE(st.st_mode)
            else:  # as open(2) would make it: 0666 less the umask
                mask = os.umask(0o22)
                os.umask(mask)
                mode = 0o666 & ~mask
            os.fchmod(f.fileno(), mode)
            if st is not None and (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
                try:  # keep the owner, where allowed
                    os.fchown(f.fileno(), st.st_uid, st.st_gid)
                except PermissionError:
                    pass
        os.replace(tmp, real)
    except BaseException:
        discard(tmp)
        raise


def yaml_node_children(node):
    """A composed YAML node's children (a mapping's values, a merge key's ``<<`` value
    included; a sequence's items), None for a scalar: the ``children`` of
    :func:`expanded_size` for PyYAML nodes."""
    if isinstance(node.value, list):
        return [v for _, v in node.value] if node.id == "mapping" else node.value
    return None


class ExpandsTooFar(ValueError):
    """A YAML stream whose documents expand past the limit (see :func:`load_yaml_bounded`);
    ``document`` is the 1-based number of the document that crossed it."""

    def __init__(self, document: int):
        super().__init__(f"document {document} expands past the limit")
        self.document = document


def load_yaml_bounded(text: str, loader, limit: int, single: bool = False) -> list:
    """The documents of YAML ``text`` as ``loader`` (a PyYAML Loader class) constructs them,
    each composed and weighed (:func:`expanded_size` over its nodes, every alias and every
    merge key ``<<`` counted each time it is used) *before* it is constructed. Weighing the
    constructed data is too late: PyYAML copies the pairs of every mapping a ``<<`` names into
    the merging mapping, so ``<<: [*m, *m, ...]`` of a big ``&m`` (or a chain of merges)
    built hundreds of millions of pairs (minutes, gigabytes) that collapse into one small
    dict. ``single``: exactly one document (``yaml.load``'s rule; an empty stream is
    ``[None]``). Raises :class:`ExpandsTooFar` when the documents together weigh more than
    ``limit``, ``yaml.YAMLError`` for text that does not read.

    A text without ``&`` defines no anchor, so no alias or merge key in it can share a node:
    each node is written out where it is used, at most two a character (``-`` is a list and
    its null item), and such a text within half the limit is built without being weighed
    (the weighing walks every node in Python: most of the cost of reading a 16 kB manifest
    with libyaml)."""
    unshared = "&" not in text and 2 * len(text) + 1 <= limit
    reader = loader(text)
    try:
        if single:
            node = reader.get_single_node()
            nodes = iter([node])
        else:
            nodes = iter(lambda: reader.get_node() if reader.check_node() else None, None)
        docs, total = [], 0
        for i, node in enumerate(nodes, 1):
            if node is not None and not unshared:
                total += expanded_size(node, limit, yaml_node_children)
                if total > limit:
                    raise ExpandsTooFar(i)
            docs.append(None if node is None else reader.construct_document(node))
        return docs
    finally:
        reader.dispose()


def discard(path: str) -> None:
    """Remove the temporary file ``path`` if it is there (after a failed write)."""
    try:
        os.unlink(path)
    except OSError:
        pass
