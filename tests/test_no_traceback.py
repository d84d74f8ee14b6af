"""Every command, whatever its input, ends with a located error or a result, never a
traceback (issue 12, item 7). The reported tracebacks are examples of the properties below:
``"\\UFFFFFFFF"``; ``rcpc fmt`` on a byte ``\\xff``, on ``X = [,]`` (which ``check`` accepted),
``{,}``, ``tpu_slice(,)``, ``X = 32 .hosts``; ``rcpc render`` to a stdout that is not UTF-8; a
relative ``XDG_CACHE_HOME``; a closed pipe leaving a replay record of a cut-short run.
(Interrupts and dying workers: tests/test_interrupts.py.)"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.build import replay
from rcpc.core.diagnostics import CompileError
from rcpc.core.fmt import format_source
from rcpc.core.source import Source
from rcpc.core.syntax.parser import parse
from test_fuzz import BUNDLED, FuzzWorkspace, generated_inputs, mutated_inputs

SYNTAX = ["X = [,]", "X = {,}", "X = tpu_slice(,)", "X = f(,)", "X = 32 .hosts", "X = 1_0 .x", "X = 1 .e5",
          'X = "\\UFFFFFFFF"', 'X = "\\x+1"', "X = [1,]", "X = {1: 2,}", "X = f(1,)", "X = []", "X = (1)",
          "X = 1.5 .x", "X = -32 .hosts", "load(\"//a.rcp\",)", "load(\"//a.rcp\", \"A\",)"]


def texts():
    """Recipe texts: the reported ones, the bundled recipes damaged, and generated ones."""
    return st.one_of(st.sampled_from(SYNTAX).map(lambda t: (t + "\n").encode()),
                     mutated_inputs().map(lambda ft: ft[0][ft[1]]),
                     generated_inputs().map(lambda files: files["recipes/r.rcp"]))


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(texts())
@example(b"X = [,]\n")
@example(b"X = 32 .hosts\n")
def test_fmt_and_check_agree_on_what_is_valid_syntax(data):
    """``check`` accepted ``X = [,]`` and ``rcpc fmt`` crashed on it: both parse with one
    grammar, so a text parses for one exactly when it does for the other, and fmt either
    formats it (to text that parses to the same tree, which it verifies) or reports the
    compiler's syntax error."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return  # both report E0003 before parsing (test_fmt_reports_bytes_that_are_not_utf8)
    try:
        parse(Source("r.rcp", text))
        parsed = True
    except CompileError:
        parsed = False
    try:
        out = format_source(text, "r.rcp")
    except CompileError:
        assert not parsed, "fmt rejects what the compiler parses"
        return
    assert parsed, "fmt formats what the compiler rejects"
    assert format_source(out, "r.rcp") == out


def test_empty_brackets_with_a_comma_are_a_syntax_error(ws):
    for text, col in (("X = [,]", 6), ("X = {,}", 6), ("X = tpu_slice(,)", 15)):
        f = ws.fails(text + "\n")
        assert (f.code, f.where) == ("E0001", f"recipes/r.rcp:1:{col}")


def test_fmt_keeps_the_space_before_an_attribute_of_an_int():
    assert format_source("X = 32 .hosts\n", "r.rcp") == "X = 32 .hosts\n"
    assert format_source("X = 1.5 .x\n", "r.rcp") == "X = 1.5.x\n"


def test_fmt_reports_bytes_that_are_not_utf8(ws, cli):
    ws.write("recipes/r.rcp", "")
    (ws.root / "recipes" / "r.rcp").write_bytes(b'X = "a\xff"\n')
    r = cli("fmt")
    assert r.code == 1 and "recipes/r.rcp:1:1: error[E0003]: recipes/r.rcp is not UTF-8 text" in r.err
    assert (ws.root / "recipes" / "r.rcp").read_bytes() == b'X = "a\xff"\n'


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_render_writes_utf8_whatever_the_stdout_encoding(ws, encoding):
    """``PYTHONIOENCODING=ascii rcpc render`` crashed on 'é'; stdout gets the render's bytes,
    the same as the file ``rcpc build`` writes."""
    ws.write("recipes/r.rcp", 'manifest(name = "m", apiVersion = "v1", kind = "K", data = {"x": "é", "y": "日本"})\n')
    env = {**os.environ, "PYTHONIOENCODING": encoding, "RCPC_NO_CACHE": "1"}
    r = subprocess.run([sys.executable, "-m", "rcpc", "render", "r"], cwd=ws.root, capture_output=True, env=env)
    assert r.returncode == 0 and b"Traceback" not in r.stderr
    assert subprocess.run([sys.executable, "-m", "rcpc", "build"], cwd=ws.root, env=env).returncode == 0
    assert r.stdout == (ws.root / "rcpc-out" / "r" / "default" / "m.yaml").read_bytes()


@pytest.mark.parametrize("value", ["cache", "./cache", "~/cache", ""])
def test_a_relative_xdg_cache_home_is_ignored(tmp_path, value):
    """The XDG Base Directory spec: a relative path in XDG_CACHE_HOME is invalid and must be
    ignored; it put the cache inside the workspace."""
    ws = tmp_path / "ws"
    (ws / "recipes").mkdir(parents=True)
    (ws / "rcp.toml").write_text("")
    (ws / "recipes" / "r.rcp").write_text('flag_file(name = "f", flags = maxtext_flags({"a": 1}))\n')
    home = tmp_path / "home"
    env = {**os.environ, "XDG_CACHE_HOME": value, "HOME": str(home)}
    env.pop("RCPC_NO_CACHE", None)
    for _ in range(2):
        assert subprocess.run([sys.executable, "-m", "rcpc", "build"], cwd=ws, env=env).returncode == 0
    assert sorted(p.name for p in ws.iterdir() if p.name != ".rcpc-out.rcpc-lock") == ["rcp.toml", "rcpc-out", "recipes"]
    assert (home / ".cache" / "rcpc" / "store" / "store.db").is_file()


def test_no_cache_without_an_absolute_home(monkeypatch):
    from rcpc.core.usercache import cache_dir

    monkeypatch.setenv("XDG_CACHE_HOME", "rel")
    monkeypatch.setenv("HOME", "also-relative")
    assert cache_dir("x") is None
    assert replay.request_key(["build"], False) is None


class _ClosedPipe(io.StringIO):
    """stderr whose reader went away after ``room`` characters (``rcpc check 2>&1 | head -1``)."""

    def __init__(self, room: int):
        super().__init__()
        self.room = room

    def write(self, text):
        if self.tell() + len(text) > self.room:
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(text)


def test_a_closed_pipe_cuts_neither_the_run_nor_its_replay(cached_ws, monkeypatch, capsys):
    """The reported fault: the closed pipe ended the run with exit 0 and a replay record of
    the output so far, and of only the dependencies seen so far: later runs replayed it.
    (Since: a reader gone does not end the run, :class:`rcpc.interrupts.PipeEnd`.) The run
    goes on to its end; its record holds everything it wrote, which a replay prints."""
    from rcpc.__main__ import run

    monkeypatch.setattr(replay, "RACY_NS", 0)
    (cached_ws / "recipes" / "r.rcp").write_text((cached_ws / "recipes" / "r.rcp").read_text() + "X = 1\n")
    with monkeypatch.context() as m:
        m.setattr(sys, "stderr", _ClosedPipe(20))
        assert run(["check"]) == 0
    capsys.readouterr()
    assert replay.serve(["check"], False) == 0
    assert "warning[L0001]: constant 'X' is assigned but never used" in capsys.readouterr().err


PIPED = {  # a workspace with a recipe that fails its checks, one that builds, a file fmt changes
    "rcp.toml": "", "recipes/good.rcp": 'X = 1\nflag_file(name = "f", flags = maxtext_flags({"steps": 5}))\n',
    "recipes/bad.rcp": 'flag_file(name = "f", flags = maxtext_flags({"steps": 5}))\nY = undefined_name\n',
    "recipes/ugly.rcp": 'flag_file(name="f",flags=maxtext_flags({"steps":5}))\n',
}
PIPED_COMMANDS = [("check", "-j", "1"), ("check", "-j", "1", "recipes/good.rcp"), ("fmt", "--check"),
                  ("build", "-j", "1", "recipes/good.rcp", "recipes/ugly.rcp"), ("render", "recipes/good.rcp"),
                  ("build", "-j", "1"), ("fmt", "--diff")]


def _piped_run(root: Path, argv: tuple, streams: dict, replayed: bool = False) -> tuple:
    """(exit code, files under rcpc-out with their bytes) of ``rcpc argv`` in-process, with
    ``sys.stdout``/``sys.stderr`` the doubles named in ``streams`` (``_ClosedPipe``: a reader
    gone after so many characters). ``replayed``: with the replay cache on (beside ``root``),
    so that a run after a successful ``build``/``check`` is a replay."""
    import shutil

    from rcpc.__main__ import run

    shutil.rmtree(root / "rcpc-out", ignore_errors=True)
    with pytest.MonkeyPatch.context() as m:
        m.chdir(root)
        if replayed:
            m.setenv("XDG_CACHE_HOME", str(root.with_name(root.name + "-cache")))
            m.delenv("RCPC_NO_CACHE", raising=False)
            m.setattr(replay, "RACY_NS", 0)
        else:
            m.setenv("RCPC_NO_CACHE", "1")
        for name, stream in streams.items():
            m.setattr(sys, name, stream)
        try:
            code = run(list(argv))
        except SystemExit as exc:  # argparse: --help, --version
            code = exc.code
    out = root / "rcpc-out"
    files = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()
             and ".rcpc" not in p.parts}
    return code, files


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(argv=st.sampled_from(PIPED_COMMANDS), room=st.integers(0, 400),
       streams=st.sampled_from([("stdout",), ("stderr",), ("stdout", "stderr")]))
@example(argv=("check", "-j", "1"), room=0, streams=("stdout", "stderr"))  # the reported case: exit 0
@example(argv=("fmt", "--diff"), room=0, streams=("stdout",))  # written by writelines: exited 0
def test_a_reader_gone_changes_no_exit_code_and_no_output(tmp_path_factory, argv, room, streams):
    """``rcpc check 2>&1 | head`` exited 0 on a failed check (the BrokenPipeError ended the run
    with 0), and a build whose log reader left could end before writing its output. Whatever
    stream's reader goes, after however many characters, the exit code and the files written
    are those of a run nobody cut."""
    root = _piped_workspace(tmp_path_factory)
    whole = _piped_run(root, argv, {})
    assert whole[0] in (0, 1)
    assert _piped_run(root, argv, {name: _ClosedPipe(room) for name in streams}) == whole


def _piped_workspace(tmp_path_factory) -> Path:
    """A new workspace holding :data:`PIPED`."""
    root = tmp_path_factory.mktemp("piped")
    for name, text in PIPED.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


class _FullDisk(_ClosedPipe):
    """stdout on a disk that is full after ``room`` characters."""

    def write(self, text):
        try:
            return super().write(text)
        except BrokenPipeError:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)) from None


FULL_COMMANDS = [*PIPED_COMMANDS, ("check", "-j", "1", "recipes/good.rcp", "--diagnostics", "sarif"),
                 ("lint", "--diagnostics", "sarif"), ("check", "-j", "1", "--diagnostics", "github"), ("--version",),
                 ("render", "--help")]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(argv=st.sampled_from(FULL_COMMANDS), room=st.one_of(st.just("/dev/full"), st.integers(0, 400)),
       replayed=st.booleans())
@example(argv=("lint", "--diagnostics", "sarif"), room=0, replayed=False)  # the SARIF log: a traceback
@example(argv=("check", "-j", "1", "recipes/good.rcp"), room="/dev/full", replayed=True)  # exit 1, a traceback
@example(argv=("--version",), room=0, replayed=False)  # argparse ignored the failed write: exit 0
def test_a_full_disk_is_an_error_wherever_stdout_is_written(tmp_path_factory, argv, room, replayed):
    """stdout that cannot take what rcpc writes (ENOSPC: a full disk, ``/dev/full``) failed
    with a traceback when written after the command (the SARIF log) or by a replay, a replay
    failed on ``/dev/full`` writing nothing, and ``--help`` exited 0 (argparse ignores it).
    Wherever the write, and whether the run is replayed: exit 1 with ``rcpc: error: No space
    left on device`` (said once) when it wrote more than fits, else the exit code of a run on
    a stdout with room."""
    if room == "/dev/full" and not os.path.exists("/dev/full"):
        return
    root = _piped_workspace(tmp_path_factory)
    out, err = io.StringIO(), io.StringIO()
    code = _piped_run(root, argv, {"stdout": out, "stderr": err}, replayed)[0]
    full = open("/dev/full", "w", encoding="utf-8") if room == "/dev/full" else _FullDisk(room)
    err = io.StringIO()
    try:
        cut = _piped_run(root, argv, {"stdout": full, "stderr": err}, replayed)[0]
    finally:
        with contextlib.suppress(OSError):  # what stays buffered fails again
            full.close()
    fits = len(out.getvalue()) <= (0 if room == "/dev/full" else room)
    assert (cut, err.getvalue().count("rcpc: error: No space left on device")) == ((code, 0) if fits else (1, 1))


@pytest.mark.parametrize("name", ["stdout", "stderr"])
@pytest.mark.parametrize("replacement", [None, "a stream"])
def test_a_stream_the_command_replaces_stays_replaced(monkeypatch, name, replacement):
    """``rcpc lsp`` sets ``sys.stdout`` to None (the protocol's stream, which the client may
    close); :func:`rcpc.cli.main` put its stream back, whose flush at exit failed: exit 120
    (tests/test_lsp.py). A stream the command replaces stays as it left it; the other one
    is put back as it was before main."""
    from rcpc import cli

    kept = {n: io.StringIO() for n in ("stdout", "stderr")}
    for n, stream in kept.items():
        monkeypatch.setattr(sys, n, stream)
    new = io.StringIO() if replacement else None

    def command(args, run) -> int:
        setattr(sys, name, new)
        return 0

    monkeypatch.setattr(cli, "_run", command)
    assert cli.main(["completion", "bash"]) == 0
    other = "stderr" if name == "stdout" else "stdout"
    assert getattr(sys, name) is new and getattr(sys, other) is kept[other]


WRITES = {  # every way rcpc writes text to a stream: each must pass through the wrappers' write
    "write": lambda stream, lines: stream.write("".join(lines)),
    "writelines": lambda stream, lines: stream.writelines(iter(lines)),
    "print": lambda stream, lines: print(*lines, sep="", end="", file=stream),
}


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.text(max_size=20), max_size=8), room=st.integers(0, 100), how=st.sampled_from(sorted(WRITES)))
@example(lines=["--- a/x\n", "+++ b/x\n"], room=0, how="writelines")  # rcpc fmt --diff | head: exit 0
def test_every_write_reaches_the_tee_and_outlives_its_reader(lines, room, how):
    """``sys.stdout.writelines`` went past :class:`rcpc.interrupts.PipeEnd` (and the replay
    tee) to the stream itself, so a reader gone raised BrokenPipeError out of ``rcpc fmt
    --diff``, which exited 0. However text is written, nothing raises, the tee keeps all of
    it, and the reader got a beginning of it (all of it unless it left)."""
    from rcpc.interrupts import PipeEnd

    pipe, text = _ClosedPipe(room), "".join(lines)
    tee = replay._Tee(PipeEnd(pipe))
    WRITES[how](tee, lines)
    tee.flush()
    assert "".join(tee.parts) == text
    assert tee._stream.gone == (len(text) > room)
    assert text.startswith(pipe.getvalue()) and (tee._stream.gone or pipe.getvalue() == text)


# every command over fuzzed inputs --------------------------------------------------------------
COMMANDS = [("build", "-o", "out", "-j", "1"), ("check", "-j", "1"), ("fmt", "--check"), ("render", "{target}")]


@pytest.fixture(scope="module")
def fuzz_ws(tmp_path_factory):
    return FuzzWorkspace(tmp_path_factory.mktemp("no-traceback"))


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(mutated_inputs(), generated_inputs().map(lambda f: (f, "recipes/r.rcp"))),
       st.sampled_from(COMMANDS))
def test_every_command_ends_in_a_result_or_a_located_error(fuzz_ws, monkeypatch, capsys, case, argv):
    """In-process, so any exception escaping ``main`` fails here (bench/fuzz.py runs the same
    property as whole processes under two hash seeds, for minutes)."""
    from rcpc.cli import main

    files, target = case
    fuzz_ws.write(files)
    monkeypatch.chdir(fuzz_ws.root)
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    argv = [a.replace("{target}", target) for a in argv]
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse: a usage error
        code = exc.code
    err = capsys.readouterr().err
    assert code in (0, 1, 2), err
    assert "a bug in rcpc fmt" not in err, err
    for line in err.splitlines():
        if "error[" in line and not line.startswith("error["):
            assert line.split(":", 1)[0] in files or line.split(":", 1)[0].startswith("<"), line


REPO = Path(__file__).resolve().parents[1]
RL = "recipes/rl/qwen35_397b_256_v7x.rcp"
DATA = REPO.parent / "shared" / "data"
WRITERS = [  # every command that writes a result to stdout, or to a file named with -o
    ("render", RL), ("params", RL), ("params", "--format", "json", RL),
    ("diff", "--variant", "default", "--against", "six", RL), ("explain", RL, "trainer", "gdn_chunk_size"),
    ("completion", "bash"), ("schema", "jobset", str(DATA / "jobset" / "jobset.x-k8s.io_jobsets.yaml")),
    ("schema", "jobset", str(DATA / "jobset" / "jobset.x-k8s.io_jobsets.yaml"), "-o", "/dev/stdout"),
    ("schema", "maxtext", str(DATA / "maxtext"), "--commit", "0" * 40, "-o", "/dev/stdout"),
]


@pytest.mark.parametrize("argv", WRITERS, ids=" ".join)
def test_a_reader_gone_before_the_first_write_ends_the_command_quietly(argv, tmp_path):
    """``rcpc ... | head`` where head has gone: exit 0 and nothing on stderr, as for any
    Unix filter whose reader left (a reported case: ``rcpc schema ... -o /dev/stdout | head``
    exited 1 with "cannot write"). The pipe's read end is closed before rcpc starts, so its
    first write fails (Python ignores SIGPIPE: EPIPE): no timing involved."""
    read, write = os.pipe()
    os.close(read)
    try:
        r = subprocess.run([sys.executable, "-m", "rcpc", *argv], cwd=REPO, stdout=write, stderr=subprocess.PIPE,
                           env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)}, timeout=300)
    finally:
        os.close(write)
    assert (r.returncode, r.stderr.decode()) == (0, "")


# Where a build runs out of memory (bench trial: `ulimit -v` at 40-60 MB on a build of 300
# recipes): the stage it raised in, and what the run must end with. A stage that writes the
# cache drops its entries (the build's result stands); any other ends the run with exit 1.
OUT_OF_MEMORY = [("rcpc.core.syntax.parser", "parse", 1), ("rcpc.domain.recipe", "Compiler.evaluate", 1),
                 ("rcpc.domain.maxtext.emit", "value_text", 1), ("rcpc.build.output", "publish", 1),
                 ("rcpc.core.store", "_write", 0), ("rcpc.core.store", "_sqlite", 0)]


@pytest.mark.parametrize("module, name, code", OUT_OF_MEMORY, ids=[f"{m.rsplit('.', 1)[1]}.{n}" for m, n, _ in
                                                                      OUT_OF_MEMORY])
def test_memory_running_out_is_said_and_costs_no_output(cached_ws, monkeypatch, capsys, module, name, code):
    """A MemoryError anywhere in a build is said as such ("out of memory", with what was
    written and a hint; it was "the input is too large or too deeply nested"), never a
    traceback, and leaves the output of the last build; where the cache is written (and where
    SQLite's library cannot even be loaded: ``ImportError`` at the end of the run, reported
    with a traceback), the cache is dropped and the build stands, equal to one without it."""
    import importlib

    from rcpc.__main__ import run
    from rcpc.core import store

    store.flush()
    assert run(["build", "-o", "out"]) == 0
    before = {p: p.read_bytes() for p in sorted((cached_ws / "out").rglob("*")) if p.is_file()}
    (cached_ws / "recipes" / "lib" / "l.rcp").write_text("LR = 2e-6\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cached_ws.parent / "fresh-cache"))
    owner = importlib.import_module(module)
    *path, attr = name.split(".")
    for part in path:
        owner = getattr(owner, part)

    def exhausted(*a, **k):
        raise MemoryError

    if name == "_sqlite":  # its shared library cannot be mapped: an import that fails
        monkeypatch.setitem(sys.modules, "_sqlite3", None)
    else:
        monkeypatch.setattr(owner, attr, exhausted)
    capsys.readouterr()
    assert run(["build", "-o", "out"]) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    after = {p: p.read_bytes() for p in sorted((cached_ws / "out").rglob("*")) if p.is_file()}
    if code:
        assert "rcpc: error: out of memory (MemoryError); nothing was written" in err and "help: " in err
        assert after == before
    else:
        store.flush()
        assert not list((cached_ws.parent / "fresh-cache").rglob("store.db")) or name == "_write"
        monkeypatch.undo()
        monkeypatch.setenv("RCPC_NO_CACHE", "1")
        monkeypatch.chdir(cached_ws)
        assert run(["build", "-o", "uncached"]) == 0
        rel = {p.relative_to(cached_ws / "out"): b for p, b in after.items() if ".rcpc" not in p.parts}
        assert rel == {p.relative_to(cached_ws / "uncached"): p.read_bytes()
                       for p in sorted((cached_ws / "uncached").rglob("*")) if p.is_file() and ".rcpc" not in p.parts}
