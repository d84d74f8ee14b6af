"""Deferred work (:mod:`rcpc.core.deferred`): at once in-process and in a process forked from
a holding one; held, in order, until ``run`` in the holding process, each piece whatever the
others raise."""

from __future__ import annotations

import os

import pytest

from rcpc.core import deferred


@pytest.fixture(autouse=True)
def _not_holding():
    yield
    deferred.run()


def test_in_process_work_runs_at_once():
    done = []
    deferred.defer(lambda: done.append(1))
    assert done == [1] and not deferred.holding()


def test_in_process_work_raises_where_it_is():
    with pytest.raises(ZeroDivisionError):
        deferred.defer(lambda: 1 / 0)


def test_held_work_runs_in_order_at_run_whatever_raises():
    done = []
    deferred.hold()
    deferred.defer(lambda: done.append("a"))
    deferred.defer(lambda: 1 / 0)
    deferred.defer(lambda: done.append("b"))
    assert done == [] and deferred.holding()
    deferred.run()
    assert done == ["a", "b"] and not deferred.holding()
    deferred.defer(lambda: done.append("c"))  # no longer held
    assert done == ["a", "b", "c"]


def test_a_forked_process_does_not_hold():
    deferred.hold()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # a -j worker: its work is done at once, where nobody would run it later
        try:
            deferred.defer(lambda: os.write(w, b"done"))
        finally:
            os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    with os.fdopen(r, "rb") as f:
        assert f.read() == b"done"
    assert deferred.holding()
