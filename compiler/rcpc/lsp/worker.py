"""The language server's compiler thread: every piece of work that reads a session (parse,
evaluation, check, hover, completion...) runs on one thread, in the order asked, while the
protocol's thread goes on reading messages.

The compiler and the parser serve one thread at a time (:mod:`rcpc.api`), so the work is
not spread over threads; what the thread buys is that the protocol is never blocked by it:
an edit that arrives while a check runs is read at once, which makes the queued work for the
text it replaces stale (skipped when its turn comes, :class:`Worker`'s callers decide), and
a request the client cancels before its turn is never run (``$/cancelRequest``: pygls
cancels the request's task, which cancels its future here).
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Callable


class Worker:
    """One daemon thread running submitted callables in order. The thread starts with the
    first submission; a process may end while it works (it holds nothing that must be
    finished: its results are answers to a client that is gone)."""

    def __init__(self, name: str = "rcpc-compiler"):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._name = name
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, fn: Callable[[], object]) -> Future:
        """Run ``fn()`` on the thread after the work submitted before it. Returns its
        :class:`~concurrent.futures.Future`: cancelling it before ``fn`` starts means ``fn``
        never runs."""
        future: Future = Future()
        self._jobs.put((future, fn))
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        return future

    def _run(self) -> None:
        while True:
            future, fn = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue   # cancelled before its turn
            try:
                result = fn()
            except BaseException as exc:   # handed to whoever waits for it
                future.set_exception(exc)
            else:
                future.set_result(result)
