"""The suite's memory guard (``conftest.py``): a test whose memory runs away fails with a
MemoryError at its own line, and the tests after it run with their memory back; the run goes
on instead of the kernel's OOM killer ending it with no trace (as a loop in bashlex once did,
at 23 GB)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

RUNAWAY = '''
def test_runaway():
    grown = []
    while True:
        grown.append(bytearray(1 << 20))


def test_after_it():
    assert len(bytearray(768 << 20)) == 768 << 20
'''
BOUND = 1 << 30  # the run's RLIMIT_DATA here: the runaway stops at 1 GB, not at conftest's 4 GB


def _bounded() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_DATA, (BOUND, resource.getrlimit(resource.RLIMIT_DATA)[1]))


def test_the_suite_runs_with_its_memory_bounded():
    """conftest.py bounds this process (and what it starts) to MAX_TEST_DATA."""
    import resource

    from conftest import MAX_TEST_DATA

    soft, _ = resource.getrlimit(resource.RLIMIT_DATA)
    assert soft != resource.RLIM_INFINITY and soft <= MAX_TEST_DATA


def test_a_runaway_test_fails_at_its_line_and_the_run_goes_on(tmp_path):
    """In a run bounded to 1 GB (conftest.py keeps a lower bound than its own), so that the
    runaway fills 1 GB rather than 4: after its MemoryError, the next test gets 768 MB, which
    it could not if the runaway's memory were still held."""
    (tmp_path / "test_x.py").write_text(RUNAWAY)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider",
                        "-p", "no:randomly", "-p", "no:jaxtyping", "test_x.py"], cwd=tmp_path, capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(TESTS)}, timeout=600, preexec_fn=_bounded)
    assert "test_x.py:5: MemoryError" in r.stdout, r.stdout[-3000:]
    assert "1 failed, 1 passed" in r.stdout and r.returncode == 1
    assert "INTERNALERROR" not in r.stdout + r.stderr
