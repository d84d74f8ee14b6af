"""The ``rcpc`` command line: :func:`main` and the dispatch.

Each command is one module of :mod:`rcpc.cli.commands`, a shell over :mod:`rcpc.api`, found
by its file (``import_.py`` is ``import``, a Python keyword); it declares

* ``ORDER``: its place in ``rcpc --help``;
* ``arguments(sub)``: adds its parser to ``sub`` (argparse's subparsers);
* ``execute(args, run) -> int``: runs it with the parsed ``args`` and the :class:`Run`;
* ``WORKSPACE = False`` when it runs outside any workspace (no rcp.toml read, no user cache);
* optionally ``replayable(args, run) -> bool``: False when the run is known, before it runs,
  never to be recorded for replay (:class:`rcpc.build.replay.Recorder`): what the recorder
  notes before the command runs is then not taken.

Start-up imports the one command module a run invokes (:func:`command`, the only deferred
import of the CLI); ``--help`` and a command line that names no command import them all.

Exit codes: 0 success, 1 errors in the input (diagnostics on stderr), 2 usage errors.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rcpc import __version__
from rcpc.api import UsageError, Workspace
from rcpc.cli.options import schema_options
from rcpc.cli.parsing import Parser, invoked, parsed
from rcpc.cli.parsing import parse as parse_with
from rcpc.cli.run import Report, Run, stderr
from rcpc.core import store
from rcpc.core.cachetrim import maybe_trim
from rcpc.core.diagnostics import CompileError, visible
from rcpc.core.usercache import cache_dir
from rcpc.interrupts import (ignore_interrupts, interrupts, outlive_readers, restore_interrupts, restore_streams,
                             unwritable, utf8_streams)
from rcpc.build.replay import Recorder, stderr_color

COMMANDS = Path(__file__).parent / "commands"  # one module a command


def _modules() -> dict[str, str]:
    """{command name: module name} of the modules of :mod:`rcpc.cli.commands`, by name (a
    command that is a Python keyword has a module named with a ``_`` after it)."""
    stems = sorted(n[:-3] for n in os.listdir(COMMANDS)
                   if n.endswith(".py") and n[:-3].isidentifier() and n[0] != "_")  # not an editor's .#x.py
    return {stem.removesuffix("_"): stem for stem in stems}


def command_names() -> list[str]:
    """The commands, by name, from the modules of :mod:`rcpc.cli.commands` (sorted)."""
    return list(_modules())


def command(name: str):
    """The module of command ``name`` (:func:`command_names`), imported: the CLI's one
    deferred import."""
    module = f"rcpc.cli.commands.{_modules()[name]}"
    __import__(module)  # as an import statement imports (importlib.import_module is hidden from -X importtime)
    return sys.modules[module]


class _Unbuilt:
    """Stands for the subparser of a command that was not invoked: every call does nothing."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: self


def _subparser(unbuilt: bool = False, **kwargs):
    """A command's parser (``add_subparsers``' ``parser_class``): a :class:`Parser`, or for a
    command not invoked (``unbuilt``) an :class:`_Unbuilt`: its name is all the parent's usage
    and "invalid choice" list show, and an ArgumentParser made for it costs ~0.2 ms (argparse
    translates its group titles, ``gettext.find`` each time)."""
    return _Unbuilt() if unbuilt else Parser(**kwargs)


def parser(name: str | None = None) -> argparse.ArgumentParser:
    """The argument parser: every command by name, and the arguments of command ``name``
    only (start-up imports its module alone); of every command when ``name`` is None or
    names no command (help, a usage error that lists them, completion scripts)."""
    p = Parser(prog="rcpc", description="Compile launch recipes into MaxText flags and Kubernetes manifests.")
    p.add_argument("--version", action="version", version=f"rcpc {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_subparser)
    names = command_names()
    if name in names:
        for n in names:
            if n == name:
                command(n).arguments(sub)
            else:
                sub.add_parser(n, unbuilt=True)  # named, for "invalid choice"; never parsed
    else:
        for module in sorted(map(command, names), key=lambda m: m.ORDER):
            module.arguments(sub)
    return p


def parse(argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed (:func:`rcpc.cli.parsing.parse`) by the parser of the command it
    invokes."""
    return parse_with(parser(invoked(argv)), argv)


def _main_thread() -> bool:
    """Whether this is the main thread (signal handlers can be set only there). A thread other
    than the main one is started through :mod:`threading` (rcpc's own, and a caller's that runs
    :func:`main` in one), so while it is not imported only the main thread runs: a run does not
    import it (~1 ms) to ask."""
    threading = sys.modules.get("threading")
    return threading is None or threading.current_thread() is threading.main_thread()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code. ``build`` and ``check`` leave a replay record
    (:mod:`rcpc.build.replay`) when they succeed; a command that may have written to the user cache
    writes the entries it made (:func:`rcpc.core.store.flush`) and trims it (:mod:`rcpc.core.cachetrim`). Ctrl-C or SIGTERM exits 130 with a message that
    says what was written (:attr:`Run.progress`); repeated signals are ignored while it
    unwinds (:mod:`rcpc.interrupts`). A reader of stdout or stderr that goes away (``| head``)
    does not end the command: what follows is discarded and the exit code is the command's
    own (:class:`rcpc.interrupts.PipeEnd`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    utf8_streams()
    streams = outlive_readers()  # a reader gone (| head) changes where output goes, not the outcome
    previous = None
    try:
        args = parsed(parser(invoked(argv)), argv)
        previous = interrupts() if _main_thread() else None
        cached = getattr(command(args.command), "WORKSPACE", True)
        if cached:
            cache_dir()  # a cache that cannot be trusted is said so (W0960) here, not in each -j worker
        color = stderr_color()
        recorder = Recorder(argv, color)
        recorder.capture()
        code = 1
        try:
            run = Run(Report(getattr(args, "diagnostics", "text"), color), recorder)
            try:
                code = _run(args, run)
            finally:
                ignore_interrupts()  # the outcome is decided: the closing output is not cut
                unwritten = _close_output(run.report)
            code = code or unwritten  # a failure or an interrupt (130) already decided keeps its code
            if cached:
                store.flush()  # the run's cache entries, written together (one transaction)
                maybe_trim()  # the user cache kept under its size limit (at most once an hour)
        finally:
            recorder.save(code)
    finally:
        restore_streams(streams)
        if previous is not None:
            restore_interrupts(previous)
    return code


def _close_output(report: Report) -> int:
    """Print what the report keeps for the end (SARIF on stdout, JSON on stderr) and flush
    stdout; 0, or 1 when a stream cannot take it (:func:`rcpc.interrupts.unwritable`): ENOSPC
    there used to end in a traceback, or in exit 120 with nothing said."""
    try:
        report.finish()
        if sys.stdout is not None:  # rcpc lsp: None once it serves (stdout carries the protocol)
            sys.stdout.flush()
    except OSError as exc:
        return unwritable(exc)
    return 0


def _always(args: argparse.Namespace, run: Run) -> bool:
    return True


def _run(args: argparse.Namespace, run: Run) -> int:
    """Run the command ``args`` invoke, in the workspace of the current directory unless it
    runs outside any; its errors reported, as exit codes."""
    module = command(args.command)
    try:
        if not getattr(module, "WORKSPACE", True):
            return module.execute(args, run)
        run.workspace = Workspace(".", **schema_options(args))
        ws = run.config
        run.report.root = ws.root
        if not getattr(module, "replayable", _always)(args, run):
            run.recorder.discard()
        run.recorder.note_workspace(str(ws.root), ws.config and str(ws.config), ws.config_bytes,
                                    [str(d) for d in (*ws.recipe_dirs, *ws.library_dirs)], str(Path(".").resolve()))
        code = module.execute(args, run)
        sys.stdout.flush()
        run.recorder.finished()
        return code
    except CompileError as exc:
        run.diagnostics(exc.diagnostics, exc.sources)
        return 1
    except UsageError as exc:
        stderr(visible(f"rcpc: {exc}", lines=True))  # it may name a path or word given
        return 2
    except BrokenPipeError:  # the reader of a file named by -o went away (-o /dev/stdout | head)
        try:  # and nothing at exit either, when Python flushes stdout
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is not a file (replaced, closed)
            pass
        return 0
    except OSError as exc:  # writing stdout (a full disk, /dev/full)
        return unwritable(exc)
    except KeyboardInterrupt:
        stderr(visible(f"rcpc: interrupted; {run.progress}"))
        return 130
    except RecursionError:
        stderr("rcpc: error: the input is too large or too deeply nested (RecursionError)")
        return 1
    except MemoryError:
        stderr(f"rcpc: error: out of memory (MemoryError); {visible(run.progress)}\n"
               "  help: rcpc needs more memory than this process may use (`ulimit -v`, a container's memory "
               "limit): raise the limit, or build fewer recipes at once (each -j worker needs its own)")
        return 1
