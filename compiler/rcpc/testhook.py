"""A hook for tests that must drive a race deterministically (never by sleeping): with
``RCPC_TEST_STOP=<point>`` and ``RCPC_TEST_STOP_FD=<fd>`` in the environment, a process that
reaches the named point writes ``<point> <pid>`` and a newline to file descriptor ``fd`` (a
pipe the test reads) and stops itself with SIGSTOP, until the test sends SIGCONT or kills it.

Points: ``worker`` (a ``-j`` worker process has started). Without the variables
:func:`point` does nothing.
"""

from __future__ import annotations

import os
import signal


def point(name: str) -> None:
    """Report reaching point ``name`` and stop, when a test asked for it."""
    if os.environ.get("RCPC_TEST_STOP") != name:
        return
    fd = int(os.environ["RCPC_TEST_STOP_FD"])
    os.write(fd, f"{name} {os.getpid()}\n".encode())
    os.kill(os.getpid(), signal.SIGSTOP)
