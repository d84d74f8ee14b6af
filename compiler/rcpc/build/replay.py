"""No-op replay: a repeated ``rcpc build`` or ``rcpc check`` whose inputs and outputs are all
unchanged prints what it printed last time, without importing the CLI, the workspace or any
third-party library (the shape of a no-op ``make``/``ninja`` run, or git's stat index).

A *record* is kept per request: the command line, the working directory, whether stderr is
coloured, the Python version, its module search path (``sys.path``), where rcpc is installed
and the value of every environment variable rcpc reads (:data:`rcpc.core.envvars.READ`). It
holds

* ``files``: (path, size, mtime_ns, ctime_ns, inode, hex digest or None) of every file the
  result depends on: ``rcp.toml``, every recipe's dependencies (recipe, loads, schema files),
  rcpc's own source files and the metadata file of every third-party distribution it depends
  on (:func:`rcpc.core.distributions.found`: its version, and a reinstall rewrites it; no
  digest) and, for ``build``, every output file and the output's bookkeeping (its marker and
  current manifest, no digest: :func:`rcpc.build.output.bookkeeping`);
* ``listings``: the entries of every directory searched (recipe and library directories,
  rcpc's package, each output variant directory, each ``sys.path`` directory holding a
  distribution it depends on: another version installed beside it; a symlink as ``name ->
  target``), or None for a directory that must not exist; ``absent``: the ``rcp.toml`` paths
  that the workspace search passed over (and markers of an rcpc area above the output);
  ``links``: each symlink followed to reach a recipe, a loaded file, a schema, a searched
  directory or the output directory, with the real path it must still resolve to;
  ``readlinks``: the output's own symlinks (its ``current`` generation, each first-part
  link), with the text each must still hold, so a replay exits 0 only where a full build
  would find its bookkeeping intact (not ``E0910``/``E0912``);
* what the command wrote to stdout and stderr, and its exit code (only 0 is recorded).

A record is a checksum (:func:`_checksum`) followed by the record in :mod:`marshal` format.

:func:`serve` replays a record when every stat and listing is still the same, or when a file
whose stat changed still has its size and the recorded digest (:mod:`rcpc.core.digest`; a touched or rewritten but
unchanged file, as git refreshes its index: the content is what the result depends on; only
then is :mod:`rcpc.core.digest` imported). Anything else (a missing, unreadable or corrupted record
included) is a miss, and the full command runs and records again. A replay prints what a full run would print now, so :class:`Recorder`
writes a record only for a run that ran to its end (:meth:`Recorder.finished`: not one cut
short by a closed pipe, whose output and dependencies are partial), exited 0 and wrote no
output (:meth:`Recorder.discard`: its status line counts what it wrote), after checking that
each dependency's bytes still have the digest the compiler read, ``rcp.toml`` still has the
bytes the workspace was read from, and each output's bytes are the ones emitted; directory
listings are taken before compiling. As in git's "racy clean" rule, a file changed (mtime or
ctime: a restored mtime still moves the ctime) less than :data:`RACY_NS` before the run began
is not trusted (a change in the same timestamp tick could leave its stat equal), so no record
is written; any later change then moves the ctime the record holds. Records live in
``$XDG_CACHE_HOME/rcpc/replay`` (``~/.cache/rcpc/replay``); ``RCPC_NO_CACHE=1`` turns replay off
together with the build cache.

This module imports only built-in modules (``os``, ``sys``, ``marshal``, ``time``; :mod:`rcpc.core.digest`
for a file whose stat changed), :mod:`rcpc.core.envvars`, :mod:`rcpc.core.files` and
:mod:`rcpc.core.usercache` (:mod:`rcpc.core.distributions` when recording).
"""

from __future__ import annotations

import marshal
import os
import sys
import time

from rcpc.core import distributions
from rcpc.core.envvars import get, values
from rcpc.core.files import identity, read_limited
from rcpc.core.usercache import cache_dir, make_dirs, package_files, read_owned, write_atomic
from rcpc.interrupts import PipeEnd, unwritable

COMMANDS = ("build", "check")
FORMAT = 4
RACY_NS = 2_000_000_000  # 2 s: coarser than any file system's timestamp granularity (FAT: 2 s)
MAX_RECORD = 1 << 30     # bytes of one record
MAX_FILE = 16 << 20      # bytes of one file whose content is checked (rcpc.core.limits.MAX_SCHEMA_BYTES)
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # rcpc's package


def stderr_color() -> bool:
    """Whether diagnostics on stderr are coloured: a terminal, and ``NO_COLOR`` unset
    (https://no-color.org)."""
    return sys.stderr.isatty() and not get("NO_COLOR")


def _fnv1a(text: str) -> int:
    """64-bit FNV-1a of ``text``'s UTF-8 bytes: a record's file name (the full key is stored
    in the record and compared, so a collision is only a miss)."""
    h = 0xCBF29CE484222325
    for b in text.encode("utf-8", "surrogateescape"):
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def request_key(argv: list[str], color: bool) -> str | None:
    """The key of a request, or None when replay does not apply (another command,
    ``RCPC_NO_CACHE`` set, or no cache directory)."""
    if not argv or argv[0] not in COMMANDS or get("RCPC_NO_CACHE") or cache_dir() is None:
        return None
    return "\0".join([str(FORMAT), sys.version, repr(sys.path), _PACKAGE, values(), os.getcwd(),
                      "color" if color else "plain", *argv])


_PRIME = (1 << 64) - 59  # the largest prime below 2**64


def _checksum(payload: bytes) -> bytes:
    """8 bytes guarding a record against corruption: the payload read as one little-endian
    integer, modulo the prime 2**64 - 59. A change is missed only if it alters that integer
    by a multiple of the prime: never when confined to 7 consecutive bytes, and with
    probability about 2**-64 for other damage (a Mersenne prime 2**p - 1 would miss a bit
    moved by p places). Computed by ``int`` in C, so it costs microseconds."""
    return (int.from_bytes(payload, "little") % _PRIME).to_bytes(8, "little")


def _record_path(key: str) -> str | None:
    directory = cache_dir("replay")
    return None if directory is None else os.path.join(directory, f"{_fnv1a(key):016x}")


def _stat(path: str) -> tuple:
    st = os.stat(path)
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def listing(directory: str) -> tuple | None:
    """The sorted entry names of ``directory`` (a symlink as ``name -> target``), or None
    when it does not exist or is not a directory. ``__pycache__`` is left out: Python makes it
    when it first imports a module of the directory (rcpc's package on a fresh checkout, a
    parallel test's import), and nothing rcpc reads is in it."""
    try:
        with os.scandir(directory) as it:
            names = [e.name + " -> " + os.readlink(e.path) if e.is_symlink() else e.name for e in it
                     if e.name != "__pycache__"]
    except (FileNotFoundError, NotADirectoryError):
        return None
    names.sort()
    return tuple(names)


def read_record(path: str) -> tuple:
    """The record in file ``path``: (format, key, files, listings, absent, links, readlinks,
    stdout, stderr, exit code). Raises OSError, or ValueError when the checksum does not match."""
    data = read_owned(path, MAX_RECORD)
    if data[:8] != _checksum(data[8:]):
        raise ValueError(f"{path}: checksum mismatch")
    return marshal.loads(data[8:])


def serve(argv: list[str], color: bool) -> int | None:
    """Replay the record of this request when nothing it depends on changed: write its stdout
    and stderr and return its exit code. None on any miss (the caller runs the command)."""
    key = request_key(argv, color)
    if key is None:
        return None
    try:
        fmt, rkey, files, listings, absent, links, readlinks, out, err, code = read_record(_record_path(key))
        if fmt != FORMAT or rkey != key or type(out) is not str or type(err) is not str or type(code) is not int:
            return None
        for path, *st, digest in files:
            if _stat(path) != tuple(st) and not _same_content(path, st[0], digest):
                return None
        for directory, names in listings:
            if listing(directory) != names:
                return None
        for path in absent:
            if os.path.lexists(path):
                return None
        for path, real in links:
            if os.path.realpath(path) != real:
                return None
        for path, text in readlinks:
            if os.readlink(path) != text:
                return None
    except Exception:  # no record, unreadable, of another shape, a file gone: a miss
        return None
    return _replay_output(out, err, code)


def _replay_output(out: str, err: str, code: int) -> int:
    """Write a record's stdout ``out`` and stderr ``err``; returns its exit ``code``, which a
    reader gone does not change (:class:`rcpc.interrupts.PipeEnd`), or 1 when a stream
    cannot take its text (:func:`rcpc.interrupts.unwritable`: ENOSPC used to end in a
    traceback). An empty text is not written: flushing an empty write onto ``/dev/full``
    fails, where the command itself, writing nothing, exits 0."""

    try:
        for stream, text in ((PipeEnd(sys.stdout), out), (PipeEnd(sys.stderr), err)):
            if text:
                stream.write(text)
                stream.flush()
    except OSError as exc:
        return unwritable(exc)
    return code


def _same_content(path: str, size: int, digest: str | None) -> bool:
    """Whether the file ``path``, whose stat changed, still holds ``size`` bytes with the
    hex ``digest`` (:mod:`rcpc.core.digest`; None: not known, so no)."""
    if digest is None or os.stat(path).st_size != size:
        return False
    from rcpc.core.digest import hexdigest

    return hexdigest(read_limited(path, MAX_FILE)) == digest


_PACKAGE_TREE: list = []  # [(listings, files)] of rcpc's package, once a process


def package_tree() -> tuple:
    """({directory: entry names}, {path: stat}) of rcpc's package directories and its
    ``.py`` and ``.lark`` files (what a record depends on of rcpc's own code), read once a
    process: the code a process runs is what it imported. The walk is the one rcpc's code
    fingerprint reads (:func:`rcpc.core.usercache.package_files`). OSError when it cannot be
    read."""
    if not _PACKAGE_TREE:
        listings, files = package_files(_PACKAGE)
        _PACKAGE_TREE.append((dict(listings), {path: (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                                               for path, _, st in files}))
    return _PACKAGE_TREE[0]


class _Tee:
    """A text stream that also keeps what is written to it."""

    def __init__(self, stream):
        self._stream = stream
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return self._stream.write(text)

    def writelines(self, lines) -> None:
        """Each line through :meth:`write`, kept as well (not past the tee)."""
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self._stream, name)


class Recorder:
    """Collects, while a command runs, what its result depends on, and writes the record.
    ``stdout``/``stderr`` are captured from :meth:`capture` on. Every ``note_*`` call may be
    made any number of times; :meth:`save` writes nothing if anything failed to verify."""

    def __init__(self, argv: list[str], color: bool):
        self.key = request_key(argv, color)
        self._files: dict[str, tuple] = {}
        self._listings: dict[str, tuple | None] = {}
        self._absent: list[str] = []
        self._links: dict[str, str] = {}
        self._readlinks: dict[str, str] = {}
        self._ok = self.key is not None
        self._finished = False
        self._streams: tuple[_Tee, _Tee] | None = None
        self._start = time.time_ns()

    def capture(self) -> None:
        """Tee ``sys.stdout`` and ``sys.stderr`` from now on (undone by :meth:`save`), for a
        request that replay applies to."""
        if self.key is None:
            return
        self._streams = (_Tee(sys.stdout), _Tee(sys.stderr))
        sys.stdout, sys.stderr = self._streams

    def _stat_of(self, path: str, st: tuple) -> bool:
        """Whether ``path`` with stat ``st`` can be trusted (not changed less than
        :data:`RACY_NS` before the command started); records it if so, else fails the run."""
        if max(st[1], st[2]) > self._start - RACY_NS:
            self._ok = False
            return False
        self._files[path] = (*st, None)
        return True

    def _file(self, path: str, expected: bytes | str | None = None, compared: tuple | None = None) -> None:
        """Record ``path``'s stat. ``expected``: its bytes, or their hex digest (:mod:`rcpc.core.digest`).
        ``compared``: the stat (:func:`rcpc.core.files.identity`: size, mtime, ctime, inode,
        device) of a file found to hold ``expected`` (bytes) during this run: it is not read
        again while ``path`` still leads to that file with that stat (a link swapped since
        leads elsewhere: read). A file changed (mtime or ctime: a restored mtime still
        moves the ctime) less than :data:`RACY_NS` before the command started is not trusted,
        so a file compared after the start and found unchanged since RACY_NS before it still
        holds those bytes. Nothing is done once the run cannot be recorded."""
        if not self._ok:
            return
        try:
            st = _stat(path)
            if not self._stat_of(path, st) or expected is None:
                return
            from rcpc.core.digest import hexdigest

            data = expected if compared is not None and identity(path) == compared else read_limited(path, MAX_FILE)
            digest = hexdigest(data)
            if (digest if isinstance(expected, str) else data) != expected:
                self._ok = False
                return
            self._files[path] = (*st, digest)
        except OSError:
            self._ok = False

    def _tree(self, root: str) -> None:
        """Record the listing of ``root`` and every directory under it (not following
        symlinks)."""
        if not self._ok or root in self._listings:  # under a directory searched before (recipes/lib)
            return
        self._listings[root] = listing(root)
        for directory, dirs, _ in os.walk(root):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for d in dirs:
                path = os.path.join(directory, d)
                if path not in self._listings:
                    self._listings[path] = listing(path)

    def note_workspace(self, root: str, config: str | None, config_bytes: bytes, searched: list[str],
                       start: str) -> None:
        """Before compiling: the workspace ``root``, its config file (None for none) and the
        bytes of it that were parsed, the directories searched for recipes and libraries, and
        the directory ``start`` the workspace search began at (every ``rcp.toml`` it passed
        over must stay absent)."""
        if config is not None:
            self._file(config, config_bytes)
        here = start
        while here != root or config is None:
            self._absent.append(os.path.join(here, "rcp.toml"))
            parent = os.path.dirname(here)
            if parent == here:
                break
            here = parent
        for d in searched:
            self._tree(d)
        if not self._ok:  # nothing will be recorded: rcpc's files are not read
            return
        try:
            listings, files = package_tree()
        except OSError:
            self._ok = False
            return
        self._listings.update(listings)
        for path, st in files.items():
            if not self._stat_of(path, st):
                return

        for _, _, path, directory in distributions.found():
            if directory not in self._listings:  # site-packages holds most: listed once (~0.16 ms each)
                self._listings[directory] = listing(directory)
            self._file(path)

    def note_dependencies(self, deps: dict[str, str] | None) -> None:
        """Files the result depends on, with the hex digests their compile saw (None:
        not known, so nothing is recorded)."""
        if deps is None:
            self._ok = False
            return
        for path, digest in deps.items():
            if digest.startswith("->"):  # rcpc.domain.workspace.LINK: a symlink followed, not a file
                self.note_links({path: digest[2:]})
            elif path not in self._files:
                self._file(path, digest)

    def note_links(self, links: dict[str, str]) -> None:
        """Symlinks followed: {path as written: the real path it resolved to}."""
        for path, real in links.items():
            self._links[path] = real
            if os.path.realpath(path) != real:
                self._ok = False

    def note_outputs(self, directory: str, renders: list, compared: dict | None = None) -> None:
        """An output directory that must hold exactly ``renders`` [(name, text)].
        ``compared``: {render name: stat} of the files found to hold their renders during
        this run (:attr:`rcpc.build.output.Comparison.verified`, as :func:`rcpc.build.output.publish`
        found them before it wrote nothing): one whose stat is still that is not read again
        (:meth:`_file`)."""
        if not self._ok:
            return
        self._listings[directory] = tuple(sorted(name for name, _ in renders))
        for name, text in renders:
            self._file(os.path.join(directory, name), text.encode("utf-8"), (compared or {}).get(name))

    def note_bookkeeping(self, out_dir: str, found: tuple | None) -> None:
        """The output directory ``out_dir`` (absolute) and its bookkeeping as
        :func:`rcpc.build.output.bookkeeping` found it after the build (None: a full build would
        refuse it, or found none: nothing is recorded)."""
        if found is None:
            self._ok = False
            return
        links, files, absent = found
        self.note_links({out_dir: os.path.realpath(out_dir)})
        self._readlinks.update(links)
        self._absent.extend(absent)
        for path in files:
            self._file(path)

    def discard(self) -> None:
        """This run's output must not be replayed (for ``build``: it wrote output, and a later
        run with nothing to write prints another status line)."""
        self._ok = False

    def finished(self) -> None:
        """The command ran to its end (not cut short by an exception such as a closed pipe,
        which would leave a partial output and partial dependencies)."""
        self._finished = True

    def save(self, code: int) -> None:
        """Stop capturing; write the record when the command ran to its end, succeeded and
        everything verified. Failures to write are ignored (the next run is simply not
        replayed)."""
        if self._streams is None:
            return
        out, err = self._streams
        sys.stdout, sys.stderr = out._stream, err._stream
        self._streams = None
        if not self._ok or not self._finished or code != 0:
            return
        record = (FORMAT, self.key, [(p, *st) for p, st in self._files.items()],
                  list(self._listings.items()), self._absent, list(self._links.items()),
                  list(self._readlinks.items()), "".join(out.parts), "".join(err.parts), code)
        path = _record_path(self.key)
        payload = marshal.dumps(record)
        try:
            make_dirs(os.path.dirname(path))
            write_atomic(path, _checksum(payload) + payload)
        except OSError:
            pass
