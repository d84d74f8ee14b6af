"""rcpc's directory in the user cache, trusted only when it is the user's own; reads and atomic
writes of its files; and the fingerprint of rcpc's code and of the distributions it depends
on (:mod:`rcpc.core.distributions`) that cache keys include. Imports only ``os``, ``stat``,
``sys`` and :mod:`rcpc.core.files` (:mod:`rcpc.core.digest` when fingerprinting, :mod:`rcpc.core.diagnostics`
to warn): the no-op replay
(:mod:`rcpc.build.replay`) uses it before anything else is loaded.

Trust (a cache another user can write is input they control: a planted entry would make a
broken ``rcpc check`` print ok, and lark's grammar cache is a pickle): ``rcpc`` in the cache
directory and every directory rcpc makes or uses under it must be a directory (``lstat``: not
a symbolic link), owned by the user running rcpc and not writable by group or others; rcpc
makes its directories with mode 0700. When one is not, rcpc does not use the cache at all (no
build, validation or grammar cache, no replay) and says so once a process (``W0960``).
Each file is read only when it is a regular file (not followed if a symbolic link) owned by
the user and not writable by group or others (:func:`read_owned`), so an entry another user
planted (before the directory was made private, say) is a miss; files are written with mode
0600. The directory holding ``rcpc`` (``~/.cache``, ``$XDG_CACHE_HOME``) is the user's
choice and may be a symbolic link; ``root`` may own it.
"""

from __future__ import annotations

import os
import stat
import sys
import time

from rcpc.core.envvars import get, home
from rcpc.core.files import discard, read_fd

WARNING = "W0960"
_TRUST: dict[str, str | None] = {}  # directory -> why it is not trusted (None: trusted), once a process
_WARNED: list[str] = []             # the cache directories warned about (once a process)
_MADE: set[str] = set()             # directories make_dirs made (or found) and trusted


def cache_dir(*parts: str) -> str | None:
    """``$XDG_CACHE_HOME/rcpc/<parts>``, or ``~/.cache/rcpc/...`` when the variable is unset,
    empty or a relative path (the XDG Base Directory specification: "If an implementation
    encounters a relative path in any of these variables it should consider the path invalid
    and ignore it"; a relative one would put the cache in the current directory, a
    workspace). None when no absolute directory can be found (``HOME`` unset or relative
    too), or when ``rcpc`` there or a directory of ``parts`` that exists cannot be trusted
    (:func:`why_untrusted`; said once, ``W0960``): rcpc then runs without its caches. Not
    created here (:func:`make_dirs`)."""
    base = get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(home(), ".cache")
        if not os.path.isabs(base):
            return None
    root = here = os.path.join(base, "rcpc")
    for part in ("", *parts):
        here = os.path.join(here, part) if part else here
        why = _why(here)
        if why is not None:
            _warn(root, here, why)
            return None
    return here


def _why(directory: str) -> str | None:
    """:func:`why_untrusted`, once a process for each directory (a missing one is looked at
    again: rcpc may make it)."""
    if directory not in _TRUST:
        why = why_untrusted(directory)
        if why == "missing":
            return None
        _TRUST[directory] = why
    return _TRUST[directory]


def why_untrusted(directory: str) -> str | None:
    """Why ``directory`` of the user cache must not be used, or None when it may: it must
    be a directory (by ``lstat``: a symbolic link is not followed), owned by this user, not
    writable by group or others. ``"missing"`` when it does not exist."""
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid != os.getuid():
        return f"is owned by another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _warn(root: str, directory: str, why: str) -> None:
    """Say once a process, on stderr, that the cache at ``root`` is not used and why."""
    if root in _WARNED:
        return
    _WARNED.append(root)
    from rcpc.core.diagnostics import Diagnostic, format_text

    what = "it" if directory == root else directory
    fix = (f"chown $USER {directory} && chmod go-w {directory}, or remove it" if "user" in why or "writable" in why
           else f"remove {directory}")
    sys.stderr.write(format_text(Diagnostic(
        WARNING, f"the user cache {root} is not used: {what} {why}, so another user could write what rcpc "
                 "reads from it; rcpc runs without its caches", None, severity="warning",
        hint=f"{fix} (rcpc makes its directories with mode 0700), or set XDG_CACHE_HOME to a directory of "
             "your own"), {}, False) + "\n")


def make_dirs(directory: str) -> None:
    """Make ``directory`` of the user cache (``rcpc`` or a directory under it) and those
    missing on the way (mode 0700), each of them trusted (:func:`why_untrusted`). Raises
    OSError (PermissionError when it is not in the user cache, or one cannot be trusted)."""
    if directory in _MADE and _TRUST.get(directory, "") is None:  # made and trusted, once a process (_why)
        return
    root = cache_dir()
    if root is None or not (directory == root or directory.startswith(root + os.sep)):
        raise PermissionError(f"{directory} is not in rcpc's user cache")
    os.makedirs(os.path.dirname(root), exist_ok=True)  # the user's own cache directory (~/.cache)
    here = root
    for part in ("", *os.path.relpath(directory, root).split(os.sep)):
        here = os.path.join(here, part) if part and part != "." else here
        try:
            os.mkdir(here, 0o700)
        except FileExistsError:
            pass
        why = _why(here)
        if why is not None:
            raise PermissionError(f"{here} {why}")
    _MADE.add(directory)


def owned_file(path: str) -> bool:
    """Whether ``path`` is a regular file (by ``lstat``) owned by this user and not writable
    by group or others: one no other user can have written."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def read_owned(path: str, limit: int) -> bytes:
    """The bytes of ``path``, a file of the user cache: a regular file (a symbolic link is
    not followed) owned by this user, not writable by group or others, of at most ``limit``
    bytes. Raises OSError (PermissionError for a file another user could have written)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022 or st.st_size > limit:
            raise PermissionError(f"{path}: not a file of this user's cache")
        data = read_fd(fd, limit + 1)
        if len(data) > limit:
            raise PermissionError(f"{path}: grew past {limit} bytes")
        return data
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` (mode 0600) through a temporary sibling renamed into place,
    so a reader sees the old file or the new one, never a part. Raises OSError (the
    temporary file is removed)."""
    tmp = f"{os.fspath(path)}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as f:
            os.fchmod(fd, 0o600)
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        discard(tmp)
        raise


_KNOWN: dict[tuple, object] = {}  # (function, argument) -> its result, found once a process
_CODE = (".py", ".lark")  # the files of rcpc's package that are its code


def code_fingerprint(package: str | None = None) -> str:
    """The hex digest (:mod:`rcpc.core.digest`) of rcpc's own code: the path, size and mtime of every ``.py`` and
    ``.lark`` file of the package (``package``: its directory, rcpc's by default; its
    version is in ``__init__.py``), so an upgraded or edited rcpc never serves another
    rcpc's cache entries. rcpc's own also holds the third-party distributions it depends
    on (:func:`rcpc.core.distributions.fingerprint`: jsonschema upgraded, every result it
    gave is a miss) and is found once a process: the code a process runs is the code it
    loaded. A package a directory or file of which cannot be read gets a fingerprint of
    its own each process: no cache entry is kept for it or served to it."""
    if package is not None:
        return _fingerprint(package)
    found = _KNOWN.get(("code", ""))
    if found is None:
        from rcpc.core.distributions import fingerprint

        found = _KNOWN[("code", "")] = _fingerprint(_OWN, fingerprint())
    return found


_OWN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # rcpc's package


def package_files(package: str) -> tuple[dict, list]:
    """``({directory: its entry names}, [(path, path relative to package, os.stat result)])``
    of ``package`` and every directory under it (``__pycache__`` and symlinked directories
    not entered, as :func:`os.walk` does): each listing sorted, a symlink as ``name ->
    target``, ``__pycache__`` left out; the ``.py`` and ``.lark`` files in :func:`os.walk`'s
    order with each directory's names sorted. rcpc's own package (:data:`_OWN`) is read once
    a process and shared by :func:`code_fingerprint` and the replay record
    (:func:`rcpc.build.replay.package_tree`), which walked it apart (~1.1 ms a build). Raises
    OSError when a directory or file cannot be read."""
    known = _KNOWN.get(("tree", package)) if package == _OWN else None
    if known is not None:
        return known
    listings: dict = {}
    files: list = []
    todo = [(package, "")]
    while todo:
        directory, rel = todo.pop()
        names, dirs, code = [], [], []
        with os.scandir(directory) as it:
            for e in it:
                if e.name == "__pycache__":
                    continue
                link = e.is_symlink()
                names.append(e.name + " -> " + os.readlink(e.path) if link else e.name)
                try:
                    is_dir = e.is_dir()
                except OSError:
                    is_dir = False
                if is_dir:
                    if not link:
                        dirs.append(e.name)
                elif e.name.endswith(_CODE):
                    code.append(e.name)
        names.sort()
        listings[directory] = tuple(names)
        for name in sorted(code):
            path = os.path.join(directory, name)
            files.append((path, rel + name, os.stat(path)))
        todo.extend((os.path.join(directory, d), rel + d + "/") for d in sorted(dirs, reverse=True))
    found = (listings, files)
    if package == _OWN:
        _KNOWN[("tree", package)] = found
    return found


def _fingerprint(package: str, *more: str) -> str:
    from rcpc.core.digest import hexdigest

    parts = list(more)
    try:
        parts.extend(f"{rel}:{st.st_size}:{st.st_mtime_ns}" for _, rel, st in package_files(package)[1])
    except OSError as exc:  # a package that cannot be read whole: its changes unseen, its key made once a process
        parts.append(f"unreadable: {exc} {os.getpid()} {time.time_ns()}")  # (so no cache entry is reused)
    return hexdigest("\n".join(parts).encode())


def installed(module: str) -> str:
    """Where the top-level ``module`` is installed and the size and mtime of its
    ``__init__.py`` (``"no <module>"`` when it is not): what cache keys record of a library
    whose output they keep (lark's parse, jsonschema's messages). The module is not
    imported. Found once a process, as :func:`code_fingerprint`."""
    found = _KNOWN.get(("installed", module))
    if found is None:
        found = _KNOWN[("installed", module)] = _installed(module)
    return found


def _installed(module: str) -> str:
    from importlib.util import find_spec

    spec = find_spec(module)
    origin = spec.origin if spec is not None and spec.origin else ""
    st = os.stat(origin) if origin else None
    return f"{origin}:{st.st_size}:{st.st_mtime_ns}" if st else f"no {module}"
