"""The environment variables rcpc reads, declared in one place (:data:`READ`). Every read of
the package goes through :func:`get` or :func:`home` (``tests/test_replay_inputs.py`` finds
any other read of ``os.environ`` in the package), and no-op replay keys its records on their
values (:func:`values`, :func:`rcpc.build.replay.request_key`): a run whose output a variable
changed (a warning about ``RCPC_CACHE_MAX_MB``, colours under ``NO_COLOR``) is never replayed
once the variable is changed. Imports only ``os``: replay reads it before anything else."""

from __future__ import annotations

import os

READ = (
    "HOME",               # where ~/.cache is (os.path.expanduser): rcpc.core.usercache
    "NO_COLOR",           # diagnostics uncoloured on a terminal (https://no-color.org)
    "RCPC_CACHE_MAX_MB",  # the user cache's size limit: rcpc.core.cachetrim
    "RCPC_NO_CACHE",      # caches and replay off
    "RCPC_TEST_GO_FD",    # rcpc.core.testhook: a test's handshake with a process at a point
    "RCPC_TEST_KILL",
    "RCPC_TEST_STOP",
    "RCPC_TEST_STOP_FD",
    "XDG_CACHE_HOME",     # where the user cache is: rcpc.core.usercache
)


def get(name: str, default: str | None = None) -> str | None:
    """The value of environment variable ``name`` (``default`` when unset). KeyError when
    ``name`` is not declared in :data:`READ`: a read replay would not key on."""
    if name not in READ:
        raise KeyError(f"{name} is not declared in rcpc.core.envvars.READ")
    return os.environ.get(name, default)


def home() -> str:
    """The user's home directory (``os.path.expanduser("~")``: ``HOME``, else the password
    database)."""
    return os.path.expanduser("~")


def values() -> str:
    """Every declared variable that is set, as ``NAME=value`` lines (an unset variable and
    an empty one differ): what replay keys on."""
    return "\0".join(f"{name}={os.environ[name]}" for name in READ if name in os.environ)


def for_subprocess(**overrides: str) -> dict[str, str]:
    """This process's environment with ``overrides``, for a program rcpc runs (git, for
    ``rcpc diff --rev``): it reads its own variables (``GIT_DIR``, ``HOME``, ...). The
    commands that run one are never replayed (:data:`rcpc.build.replay.COMMANDS`)."""
    return {**os.environ, **overrides}
