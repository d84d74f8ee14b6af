"""A hook for tests that must drive a race deterministically (never by sleeping): with
``RCPC_TEST_STOP=<point>``, ``RCPC_TEST_STOP_FD=<fd>`` and ``RCPC_TEST_GO_FD=<fd>`` in the
environment, a process that reaches the named point writes ``<point> <pid>`` and a newline to
the first file descriptor (a pipe the test reads), then waits until it can read a byte, or end
of file, from the second (a pipe the test writes to or closes): a handshake, so the test
knows where the process is and chooses when it goes on.

``RCPC_TEST_STOP`` may name several points, separated by commas. Points: ``worker`` (a
``-j`` worker process has started), ``fork`` (the main process has just forked a worker of
its pool, :mod:`rcpc.build.pool`), ``pool`` (the main process has made its pool of workers, before
it uses it), ``store-begin`` and ``store-commit`` (a process is about to take the store's write
lock, and holds it with its entries written but not committed: :func:`rcpc.core.store.flush`). Without the variables :func:`point` does nothing.

``RCPC_TEST_KILL=<file name>`` (several separated by commas): a ``-j`` worker kills itself
(SIGKILL) when it is about to compile or format a file of that name (:func:`kill`), as the
kernel's out-of-memory killer would: a fault injected where a test (and the diagnostics
catalog's example of ``E0952``) wants it.
"""

from __future__ import annotations

import os

from rcpc.core.envvars import get


def point(name: str) -> None:
    """Report reaching point ``name`` and wait for the test, when a test asked for it."""
    if name not in get("RCPC_TEST_STOP", "").split(","):
        return
    os.write(int(get("RCPC_TEST_STOP_FD")), f"{name} {os.getpid()}\n".encode())
    os.read(int(get("RCPC_TEST_GO_FD")), 1)


def kill(name: str | None) -> None:
    """SIGKILL this process when a test named file ``name`` in ``RCPC_TEST_KILL``."""
    if name and name in get("RCPC_TEST_KILL", "").split(","):
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
