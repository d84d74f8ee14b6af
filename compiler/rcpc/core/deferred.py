"""Work a command may finish after its caller has its answer: writes into rcpc's user caches
(build, validation), and the removal of an output generation no reader can reach any more.
None of it changes what the command printed, returned or published; each piece is one whose
failure, or loss when the process is killed, the next run already survives (a cache entry
missing, a generation a killed build left, :mod:`rcpc.output`).

In-process, :func:`defer` runs the work at once, where it is. The build server's child for a
request (:mod:`rcpc.serverchild`) calls :func:`hold` first; it then sends the client the exit
status as soon as the command has ended and its standard streams are closed, and only then
runs what was held (:func:`run`), so the client does not wait for cache writes, nor for its
process's address space to be torn down (the shape of Gradle's and Bazel's daemons, which
answer the client before their bookkeeping). A process forked from the holding one (a ``-j``
worker) runs its work at once, as in-process.
"""

from __future__ import annotations

import os
from typing import Callable

_HELD: list = []          # [pid of the holding process]
_QUEUE: list[Callable[[], None]] = []


def hold() -> None:
    """From now on, this process (not processes forked from it) keeps what :func:`defer` is
    given until :func:`run`."""
    _HELD[:] = [os.getpid()]
    _QUEUE.clear()


def defer(work: Callable[[], None]) -> None:
    """Run ``work`` (no arguments; its result is ignored) now, or, in a holding process
    (:func:`hold`), at :func:`run`. ``work`` must not print, and must catch what it expects
    to fail (an OSError writing a cache); anything else it raises is raised here in-process
    and dropped at :func:`run`."""
    if holding():
        _QUEUE.append(work)
    else:
        work()


def holding() -> bool:
    """Whether :func:`defer` keeps work back in this process."""
    return bool(_HELD) and _HELD[0] == os.getpid()


def run() -> None:
    """Run the held work in the order it was deferred, each piece whatever the others raised;
    the process stops holding."""
    _HELD.clear()
    while _QUEUE:
        work = _QUEUE.pop(0)
        try:
            work()
        except Exception:
            pass
