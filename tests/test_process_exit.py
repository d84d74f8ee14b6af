"""A command ends by ``os._exit`` after doing what the interpreter does at exit (issue 20:
tearing down a large build's objects one by one was ~30 ms of a 100-recipe build): threads
joined, ``atexit`` handlers run, stdout and stderr flushed, the exit status kept, for the
``rcpc`` script and ``python -m rcpc`` alike."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "compiler" / "bin" / "rcpc"
RECIPE = "\n".join(f'flag_file(name = "f{i}", flags = maxtext_flags({{"steps": {i}, "run_name": "{"x" * 2000}"}}))'
                   for i in range(60)) + "\n"
BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout flushed at exit only
FORMS = {"script": [sys.executable, str(SCRIPT)], "module": [sys.executable, "-m", "rcpc"]}


@pytest.fixture
def big(tmp_path):
    """A workspace whose one recipe renders ~120 KB: more than any pipe or stream buffer."""
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "r.rcp").write_text(RECIPE)
    (tmp_path / "bad.rcp").write_text("X = \n")
    return tmp_path


def _run(form, argv, cwd):
    env = {**BUFFERED, "RCPC_NO_CACHE": "1"}
    return subprocess.run([*FORMS[form], *argv], cwd=cwd, env=env, capture_output=True, timeout=120)


@pytest.mark.parametrize("form", FORMS)
def test_every_byte_written_reaches_the_pipe_and_the_status_is_kept(big, form):
    from rcpc.api import Workspace

    want = "".join(f"---\n# Source: r/default/{r.name}\n{r.text}" for r in Workspace(big).render("r").renders)
    r = _run(form, ["render", "r"], big)
    assert (r.returncode, r.stdout.decode()) == (0, want) and len(r.stdout) > 100_000
    bad = _run(form, ["fmt", "--check", "bad.rcp"], big)
    assert bad.returncode == 1 and b"bad.rcp:1:" in bad.stderr
    assert _run(form, ["no-such-command"], big).returncode == 2


def test_atexit_handlers_run_and_stdout_is_flushed(tmp_path):
    """An ``atexit`` handler (multiprocessing's, a library's) still runs; text printed
    without a newline is not lost."""
    mark = tmp_path / "ran"
    code = ("import atexit, sys\n"
            f"atexit.register(lambda: open({str(mark)!r}, 'w').write('ran'))\n"
            "from rcpc.__main__ import exit_now\n"
            "sys.stdout.write('no newline')\n"
            "exit_now(3)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=BUFFERED, timeout=60)
    assert (r.returncode, r.stdout, mark.read_text()) == (3, "no newline", "ran")


def test_a_stdout_that_cannot_be_flushed_exits_120_as_python_does():
    """The reader of stdout is gone before the last flush: status 120, as CPython's own exit."""

    def status(code: str) -> int:
        r, w = os.pipe()
        os.close(r)
        try:
            return subprocess.run([sys.executable, "-c", code], stdout=w, stderr=subprocess.DEVNULL,
                                  env=BUFFERED, timeout=60).returncode
        finally:
            os.close(w)

    assert status("import sys; sys.stdout.write('x')") == 120
    assert status("import sys; from rcpc.__main__ import exit_now; sys.stdout.write('x'); exit_now(0)") == 120
    assert status("import sys; from rcpc.__main__ import exit_now; sys.stdout.write('x'); exit_now(4)") == 4


def test_a_profiler_still_gets_its_results(tmp_path, big):
    """``python -m cProfile -m rcpc`` writes its statistics after rcpc returns: under a
    profiler (or a tracer) the command exits the usual way."""
    stats = tmp_path / "out.prof"
    r = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(stats), "-m", "rcpc", "render", "r"], cwd=big,
                       env={**BUFFERED, "RCPC_NO_CACHE": "1"}, capture_output=True, timeout=120)
    assert r.returncode == 0 and stats.stat().st_size > 0


def test_ending_imports_nothing_the_command_did_not():
    """The replay path imports almost nothing; ending the process adds no import
    (``threading`` alone cost ~4 ms there, a fifth of Python's start-up)."""
    code = ("import sys\n"
            "import rcpc.build.replay\n"
            "from rcpc.__main__ import shutdown\n"
            "before = set(sys.modules)\n"
            "shutdown(0)\n"
            "print(sorted(set(sys.modules) - before))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=BUFFERED, timeout=60)
    assert (r.returncode, r.stdout) == (0, "[]\n")
