"""A hook for tests that must drive a race deterministically (never by sleeping): with
``RCPC_TEST_STOP=<point>``, ``RCPC_TEST_STOP_FD=<fd>`` and ``RCPC_TEST_GO_FD=<fd>`` in the
environment, a process that reaches the named point writes ``<point> <pid>`` and a newline to
the first file descriptor (a pipe the test reads), then waits until it can read a byte, or end
of file, from the second (a pipe the test writes to or closes): a handshake, so the test
knows where the process is and chooses when it goes on.

``RCPC_TEST_STOP`` may name several points, separated by commas. Points: ``worker`` (a
``-j`` worker process has started), ``fork`` (the main process has just forked a worker,
inside ``Pool()``), ``pool`` (the main process has made its pool of workers, before it
uses it), ``served`` (the build server's child for a request is about to run the command,
:mod:`rcpc.server`; the client forwards these two descriptors to it). Without the variables :func:`point` does nothing.
"""

from __future__ import annotations

import os


def point(name: str) -> None:
    """Report reaching point ``name`` and wait for the test, when a test asked for it."""
    if name not in os.environ.get("RCPC_TEST_STOP", "").split(","):
        return
    os.write(int(os.environ["RCPC_TEST_STOP_FD"]), f"{name} {os.getpid()}\n".encode())
    os.read(int(os.environ["RCPC_TEST_GO_FD"]), 1)
