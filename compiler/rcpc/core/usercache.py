"""rcpc's directory in the user cache, atomic writes into it, and the fingerprint of rcpc's
code and of the distributions it depends on (:mod:`rcpc.core.distributions`) that cache keys
include. Imports only ``os`` (``hashlib`` when fingerprinting): the
no-op replay (:mod:`rcpc.replay`) uses it before anything else is loaded."""

from __future__ import annotations

import os

from rcpc.core.envvars import get, home


def cache_dir(*parts: str) -> str | None:
    """``$XDG_CACHE_HOME/rcpc/<parts>``, or ``~/.cache/rcpc/...`` when the variable is unset,
    empty or a relative path (the XDG Base Directory specification: "If an implementation
    encounters a relative path in any of these variables it should consider the path invalid
    and ignore it"; a relative one would put the cache in the current directory, a
    workspace). None when no absolute directory can be found (``HOME`` unset or relative
    too): rcpc then runs without its caches. Not created here."""
    base = get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(home(), ".cache")
        if not os.path.isabs(base):
            return None
    return os.path.join(base, "rcpc", *parts)


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary sibling renamed into place, so a reader
    sees the old file or the new one, never a part. Raises OSError (the temporary file is
    removed)."""
    tmp = f"{os.fspath(path)}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        discard(tmp)
        raise


def discard(path: str) -> None:
    """Remove the temporary file ``path`` if it is there (after a failed write)."""
    try:
        os.unlink(path)
    except OSError:
        pass


_KNOWN: dict[tuple, str] = {}  # (function, argument) -> its result, found once a process


def code_fingerprint(package: str | None = None) -> str:
    """SHA-256 hex of rcpc's own code: the path, size and mtime of every ``.py`` and
    ``.lark`` file of the package (``package``: its directory, rcpc's by default; its
    version is in ``__init__.py``), so an upgraded or edited rcpc never serves another
    rcpc's cache entries. rcpc's own also holds the third-party distributions it depends
    on (:func:`rcpc.core.distributions.fingerprint`: jsonschema upgraded, every result it
    gave is a miss) and is found once a process: the code a process runs is the code it
    loaded."""
    if package is not None:
        return _fingerprint(package)
    found = _KNOWN.get(("code", ""))
    if found is None:
        from rcpc.core.distributions import fingerprint

        own = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        found = _KNOWN[("code", "")] = _fingerprint(own, fingerprint())
    return found


def _fingerprint(package: str, *more: str) -> str:
    import hashlib

    parts = list(more)
    for d, dirs, files in os.walk(package):
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".py", ".lark")):
                path = os.path.join(d, name)
                st = os.stat(path)
                parts.append(f"{os.path.relpath(path, package)}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


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
