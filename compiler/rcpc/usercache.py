"""rcpc's directory in the user cache, and atomic writes into it. Imports only ``os``: the
no-op replay (:mod:`rcpc.replay`) uses it before anything else is loaded."""

from __future__ import annotations

import os


def cache_dir(*parts: str) -> str:
    """``$XDG_CACHE_HOME/rcpc/<parts>`` (``~/.cache/rcpc/...`` when the variable is unset or
    empty), per the XDG Base Directory specification. Not created here."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
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
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
