"""The suite's groups under ``tests/run`` (pytest-xdist, ``--dist loadgroup``): the tests of an
``xdist_group`` are one unit of the scheduler, so they run on one worker and share their
module fixtures (MaxText's loader in tests/test_maxtext_agreement.py, the catalog's outputs in
tests/test_diagnostic_catalog.py). With pytest 9.2 and pytest-xdist 3.8 they were not: every
group was spread over both workers (pytest-xdist issue #1386; tests/conftest.py sets what is
missing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from xdist.scheduler import LoadGroupScheduling

from conftest import xdist_group

TESTS = Path(__file__).resolve().parent


def _scope(nodeid: str) -> str:
    """The unit of work the controller's loadgroup scheduler makes of ``nodeid``."""
    return LoadGroupScheduling._split_scope(None, nodeid)


def test_each_group_is_one_unit_of_the_loadgroup_scheduler(request, tmp_path):
    """In a worker of ``--dist loadgroup`` (tests/run), every test of this session that is in a
    group has that group as its scheduling unit; in any other run (or one with no group), the same is checked on a
    small grouped module run by ``pytest -n 2 --dist loadgroup``: each group's tests on one
    worker."""
    grouped = [(item, xdist_group(item)) for item in request.session.items if xdist_group(item)]
    if request.config.getoption("loadgroup", False) and grouped:
        assert [(item.nodeid, _scope(item.nodeid)) for item, g in grouped if _scope(item.nodeid) != g] == []
        return
    (tmp_path / "test_grouped.py").write_text(
        "import os, pytest\n"
        "@pytest.mark.xdist_group('a')\n@pytest.mark.parametrize('i', range(6))\n"
        "def test_a(i): print('RAN a', os.environ['PYTEST_XDIST_WORKER'])\n"
        "@pytest.mark.xdist_group(name='b')\n@pytest.mark.parametrize('i', range(6))\n"
        "def test_b(i): print('RAN b', os.environ['PYTEST_XDIST_WORKER'])\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-p", "no:jaxtyping", "-p", "no:anyio", "-n", "2",
                           "--dist", "loadgroup", "-rP", "-q", "--rootdir", str(tmp_path), str(tmp_path)],
                          cwd=tmp_path, env={**__import__("os").environ, "PYTHONPATH": str(TESTS)},
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ran = [line.split()[1:] for line in proc.stdout.splitlines() if line.startswith("RAN ")]
    assert len(ran) == 12
    assert {g: len({w for h, w in ran if h == g}) for g in "ab"} == {"a": 1, "b": 1}, ran
