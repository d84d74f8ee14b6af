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
    assert len(bytearray(1 << 30)) == 1 << 30
'''


def test_a_runaway_test_fails_at_its_line_and_the_run_goes_on(tmp_path):
    (tmp_path / "test_x.py").write_text(RUNAWAY)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider",
                        "-p", "no:randomly", "test_x.py"], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(TESTS)}, timeout=600)
    assert "test_x.py:5: MemoryError" in r.stdout, r.stdout[-3000:]
    assert "1 failed, 1 passed" in r.stdout and r.returncode == 1
    assert "INTERNALERROR" not in r.stdout + r.stderr
