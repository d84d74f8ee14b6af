"""The ``rcpc`` command line: argument parsing and dispatch only.

Exit codes: 0 success, 1 errors in the input (diagnostics on stderr), 2 usage errors.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path

from rcpc.core.diagnostics import CompileError, Diagnostic, format_text, io_hint, to_json
from rcpc.interrupts import unwritable
from rcpc.replay import Recorder, stderr_color


class _Unbuilt:
    """Stands for the subparser of a command that was not invoked: every call (adding an
    argument, a group, a subparser) does nothing, so start-up builds only what it parses."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: self


def _subparser(unbuilt: bool = False, **kwargs):
    """A command's parser (``add_subparsers``' ``parser_class``): a :class:`_Parser`, or for a
    command not invoked (``unbuilt``) an :class:`_Unbuilt`: its name and help are all the
    parent's usage, help and "invalid choice" list show, and an ArgumentParser made for it
    cost ~0.2 ms (argparse translates its group titles, ``gettext.find`` each time)."""
    return _Unbuilt() if unbuilt else _Parser(**kwargs)


class _OnlyInvoked:
    """``add_subparsers()``'s action, adding every command by name and help (so usage, help
    and "invalid choice" list them all) but only ``command``'s parser in full."""

    def __init__(self, sub, command: str):
        self.sub, self.command = sub, command

    def add_parser(self, name: str, **kwargs):
        if name == self.command:
            return self.sub.add_parser(name, **kwargs)
        return self.sub.add_parser(name, help=kwargs.get("help"), unbuilt=True)


def _invoked(argv: list[str]) -> str | None:
    """The command ``argv`` invokes (its first word), or None when it asks for help first."""
    for word in argv:
        if word in ("-h", "--help"):
            return None
        if not word.startswith("-"):
            return word
    return None


_PARSERS: dict[str | None, argparse.ArgumentParser] = {}  # command -> its parser, built once a process


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; with ``command``, only that command's arguments are built. Built
    once a process (parsing arguments does not change a parser)."""
    p = _PARSERS.get(command)
    if p is None:
        p = _PARSERS[command] = _build_parser(command)
    return p


def _parse(argv: list[str]):
    """``argv`` parsed, with a command's positionals allowed after its options (``rcpc render
    R --variant V trainer.flags``), as ``git`` and ``bazel`` take them: argparse gives its
    positionals the first run of words only, and a subparser cannot be parsed intermixed
    from the top, so the command's own parser parses the words after the command again
    (``parse_intermixed_args``) when the first parse leaves words over. Exits 2 (argparse's
    usage error, from the command's parser) on what neither parse takes."""
    parser = _parser(_invoked(argv))
    args, extras = parser.parse_known_args(argv)
    if not extras:
        return args
    command = parser._subparsers._group_actions[0].choices.get(args.command)
    if command is None or args.command not in argv:
        return parser.parse_args(argv)
    try:
        rest = command.parse_intermixed_args(argv[argv.index(args.command) + 1:])
    except TypeError:  # arguments parse_intermixed_args does not support
        return parser.parse_args(argv)
    return argparse.Namespace(**{**vars(args), **vars(rest)})


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose help and version, printed to stdout, raise what fails to write
    them (argparse ignores it), for :func:`_parsed`; its subparsers are of this class too.
    A usage error on a stderr that cannot take it still exits 2."""

    def _print_message(self, message, file=None):
        if message and file is sys.stdout:
            file.write(message)
        else:
            super()._print_message(message, file)


def _build_parser(command: str | None) -> argparse.ArgumentParser:
    p = _Parser(prog="rcpc", description="Compile launch recipes into MaxText flags and Kubernetes manifests.")
    from rcpc import __version__
    p.add_argument("--version", action="version", version=f"rcpc {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_subparser)
    if command is not None:
        sub = _OnlyInvoked(sub, command)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--maxtext-schema", metavar="SCHEMA",
                        help="MaxText schema to check flag sets against: builtin:maxtext, a .json written by "
                        "`rcpc schema maxtext`, or a base.yml (overrides rcp.toml maxtext_schema)")
    common.add_argument("--maxtext-base", metavar="BASE_YML",
                        help="the older spelling of --maxtext-schema BASE_YML")
    common.add_argument("--diagnostics", choices=("text", "json", "sarif", "github"), default="text",
                        help="how errors and warnings are printed (json: one document on stderr; sarif: "
                        "one SARIF 2.1.0 log on stdout; github: GitHub Actions annotations on stdout)")
    common.add_argument("--kube-schema", action="append", metavar="CRD",
                        help="CRD or JSON schema (or builtin:jobset) to validate manifests against "
                             "(repeatable; overrides rcp.toml kube_schemas)")
    strict = argparse.ArgumentParser(add_help=False)
    strict.add_argument("--strict-crd", action="store_true",
                        help="also report what the raw CRD rejects but the API server or the JobSet webhook "
                             "would fill in or drop (as offline validators such as kubeconform see it)")

    b = sub.add_parser("build", parents=[common], help="write every render of recipes to DIR/<recipe>/<variant>/<render>")
    b.add_argument("recipes", nargs="*", metavar="RECIPE", help="recipe names (rl/x) or .rcp paths; default: all")
    g = b.add_mutually_exclusive_group()
    g.add_argument("--variant", metavar="V", help="only this variant (default: every declared variant)")
    g.add_argument("--set", dest="sets", action="append", metavar="NAME=VALUE",
                   help="set a declared param; the build is written as variant 'custom'")
    _values_option(b)
    b.add_argument("-o", "--output", metavar="DIR", help="output directory (default: rcp.toml output_dir, else rcpc-out)")
    _jobs_option(b)

    r = sub.add_parser("render", parents=[common], help="print renders of one recipe to stdout")
    r.add_argument("recipe", metavar="RECIPE")
    r.add_argument("render", nargs="?", metavar="RENDER", help="one render (trainer.yaml or trainer); default: all")
    g = r.add_mutually_exclusive_group()
    g.add_argument("--variant", metavar="V", default=None)
    g.add_argument("--set", dest="sets", action="append", metavar="NAME=VALUE")
    _values_option(r)

    pa = sub.add_parser("params", parents=[common], help="list the params of a recipe")
    pa.add_argument("recipe", metavar="RECIPE")
    pa.add_argument("--format", choices=("text", "json"), default="text")

    d = sub.add_parser("diff", parents=[common], help="compare the renders of two variants, or of a git revision "
                       "and the work tree")
    d.add_argument("recipes", nargs="*", metavar="RECIPE",
                   help="with --variant: the one recipe; with --rev: recipes to compare (default: all)")
    d.add_argument("--variant", metavar="A", help="the variant to compare (with --rev: only this variant)")
    d.add_argument("--against", metavar="B", help="default: the variant's own 'against', else 'default'")
    d.add_argument("--rev", metavar="REF", help="compare the renders at git revision REF with the work tree's")
    d.add_argument("--stat", action="store_true", help="one line per render that is not identical")
    d.add_argument("--format", choices=("text", "json", "markdown"), default="text")

    c = sub.add_parser("check", parents=[common, strict], help="evaluate every recipe and variant, run contracts; write nothing")
    c.add_argument("paths", nargs="*", metavar="PATH", help="recipes, .rcp files or directories; default: all")
    c.add_argument("--notes", action="store_true", help="also print notes (e.g. flags set to their MaxText default)")
    c.add_argument("--maxtext", metavar="PATH",
                   help="also run this MaxText checkout's own config loader on every flag set the recipes render "
                        "(overrides rcp.toml maxtext_oracle; docs/maxtext.md, Oracle mode)")
    c.add_argument("--maxtext-python", metavar="PYTHON",
                   help="the interpreter that runs it: a path or a command on PATH (default: rcp.toml "
                        "maxtext_python, else the one running rcpc)")
    c.add_argument("--maxtext-timeout", metavar="SECONDS", type=_seconds,
                   help="the seconds one run of MaxText's loader may take (default: 120, plus 10 for each flag set)")
    _jobs_option(c)

    v = sub.add_parser("validate", parents=[common, strict],
                       help="check plain Kubernetes manifests (multi-document YAML) with rcpc's Kubernetes, "
                            "JobSet and TPU rules")
    v.add_argument("files", nargs="+", metavar="FILE.yaml")

    f = sub.add_parser("fmt", parents=[common], help="format recipes canonically (in place)")
    f.add_argument("paths", nargs="*", metavar="PATH", help=".rcp files or directories; default: all")
    g = f.add_mutually_exclusive_group()
    g.add_argument("--check", action="store_true", help="write nothing; list files that are not formatted, exit 1")
    g.add_argument("--diff", action="store_true", help="write nothing; print the changes as a diff, exit 1 if any")
    _jobs_option(f)

    li = sub.add_parser("lint", parents=[common], help="report unused names, no-op overrides, ...")
    li.add_argument("paths", nargs="*", metavar="PATH", help="recipes, .rcp files or directories; default: all")

    e = sub.add_parser("explain", parents=[common], help="where a flag's effective value comes from")
    e.add_argument("recipe", metavar="RECIPE")
    e.add_argument("flagset", metavar="FLAGSET", help="a top-level name bound to maxtext_flags, or a render that "
                   "carries one (trainer, trainer.yaml, launch.sh)")
    e.add_argument("key", metavar="KEY", nargs="?", help="the flag (not with --effective)")
    e.add_argument("--effective", action="store_true",
                   help="the whole config MaxText starts with: base.yml, the model config, the flags, M_ env")
    g = e.add_mutually_exclusive_group()
    g.add_argument("--variant", metavar="V")
    g.add_argument("--set", dest="sets", action="append", metavar="NAME=VALUE")
    _values_option(e)
    e.add_argument("--format", choices=("text", "json"), default="text")

    s = sub.add_parser("schema", help="derive a schema rcpc ships from its source (builtin:maxtext, builtin:jobset)")
    kinds = s.add_subparsers(dest="kind", required=True, metavar="KIND")
    m = kinds.add_parser("maxtext", help="the MaxText schema of a MaxText checkout (types.py, base.yml, models/)")
    m.add_argument("path", metavar="PATH", help="a MaxText checkout, or a directory with base.yml, types.py, models/")
    m.add_argument("--commit", help="the MaxText commit to record (default: the checkout's git HEAD)")
    sj = kinds.add_parser("jobset", help="the JobSet schema (builtin:jobset) from the JobSet CRD")
    sj.add_argument("path", metavar="CRD.yaml", help="jobset.x-k8s.io_jobsets.yaml of a JobSet checkout")
    sj.add_argument("--commit", default="unknown", help="the JobSet commit the CRD is from (provenance)")
    for k in (m, sj):
        k.add_argument("-o", "--output", metavar="FILE", help="write the schema here (default: stdout)")
        k.add_argument("--diagnostics", choices=("text", "json"), default="text", help=argparse.SUPPRESS)
    im = sub.add_parser("import", help="a recipe from a manifest template or a shell launch recipe, proven "
                        "equal to it")
    ikinds = im.add_subparsers(dest="kind", required=True, metavar="KIND")
    imm = ikinds.add_parser("manifest", help="a manifest template with ${VAR} placeholders (envsubst)")
    imm.add_argument("file", metavar="FILE.yaml")
    imm.add_argument("--set", dest="sets", action="append", metavar="VAR=VALUE",
                     help="the default of the param a placeholder becomes (default: the name in lowercase)")
    imm.add_argument("--var", dest="variables", action="append", metavar="VAR",
                     help="a placeholder that becomes a param, as envsubst's SHELL-FORMAT names it (repeatable; "
                     "default: every ${VAR} but the variables a pod's shell reads at run time, e.g. TPU_WORKER_ID)")
    ims = ikinds.add_parser("shell", help="a shell launch recipe (export NAME=..., flag blobs, xpk workload create)")
    ims.add_argument("file", metavar="FILE.sh")
    for k in (imm, ims):
        k.add_argument("-o", "--output", metavar="RECIPE.rcp", help="write the recipe here (default: stdout)")
        k.add_argument("--force", action="store_true", help="replace RECIPE.rcp when it exists")
        k.add_argument("--diagnostics", choices=("text", "json"), default="text", help=argparse.SUPPRESS)
        for opt in ("--maxtext-schema", "--maxtext-base", "--kube-schema"):
            k.add_argument(opt, default=None, help=argparse.SUPPRESS)
    sub.add_parser("lsp", help="serve the Language Server Protocol on stdin/stdout (needs rcpc[lsp])")
    co = sub.add_parser("completion", help="print a shell completion script (bash, zsh, fish)")
    from rcpc.completion import SHELLS, annotate

    co.add_argument("shell", nargs="?", choices=SHELLS)
    co.add_argument("--list", nargs="+", metavar="KIND", help=argparse.SUPPRESS)  # the scripts' candidates

    annotate(p, {k: v for k, v in {"build": b, "render": r, "params": pa, "diff": d, "check": c, "explain": e,
                                   "lint": li, "fmt": f}.items() if type(v) is not _Unbuilt})
    return p


def _jobs(text: str) -> int:
    if text == "auto":
        from rcpc.parallel import AUTO

        return AUTO
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a number of processes (1 or more) or 'auto', got {text!r}")
    return n


def _seconds(text: str) -> float:
    """A duration in seconds: a finite number above 0 (``--maxtext-timeout``)."""
    import math

    try:
        n = float(text)
    except ValueError:
        n = 0.0
    if not (math.isfinite(n) and n > 0):
        raise argparse.ArgumentTypeError(f"expected a number of seconds (more than 0), got {text!r}")
    return n


def _values_option(p) -> None:
    p.add_argument("--values", action="append", metavar="FILE.toml",
                   help="param values from a TOML file of NAME = VALUE lines (repeatable: a later file wins, "
                        "--set wins over files); the build is variant 'custom' (docs/cli.md, Values files)")
    p.add_argument("--flag", dest="flags", action="append", metavar="RENDER.KEY=VALUE",
                   help="set one MaxText flag of the flag set RENDER carries, as its last layer (repeatable); "
                        "the build is variant 'custom', of --variant V checked against V's contract "
                        "(docs/cli.md, Flag overrides)")


def _no_variant_with_values(args) -> None:
    """``--values`` sets params, as ``--set`` does: not with ``--variant`` (a usage error)."""
    if args.values and args.variant:
        raise _Usage("--values sets params as --set does: not with --variant (use one, or copy the variant's "
                     "values into the file)")


def _jobs_option(p) -> None:
    p.add_argument("-j", "--jobs", type=_jobs, default="auto", metavar="N",
                   help="work in N processes (default: auto, one per idle CPU when the work pays; 1: no workers)")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code. ``build`` and ``check`` leave a replay record
    (:mod:`rcpc.replay`) when they succeed; a command that may have written to the user cache
    trims it (:mod:`rcpc.core.cachetrim`). Ctrl-C or SIGTERM exits 130 with a message that
    says what was written (:data:`_PROGRESS`); repeated signals are ignored while it unwinds
    (:mod:`rcpc.interrupts`). A reader of stdout or stderr that goes away (``| head``) does
    not end the command: what follows is discarded and the exit code is the command's own
    (:class:`rcpc.interrupts.PipeEnd`)."""
    from rcpc.interrupts import (ignore_interrupts, interrupts, outlive_readers, restore_interrupts,
                                 restore_streams, utf8_streams)

    global _RECORDER
    argv = sys.argv[1:] if argv is None else list(argv)
    utf8_streams()
    streams = outlive_readers()  # a reader gone (| head) changes where output goes, not the outcome
    previous = None
    try:
        args = _parsed(argv)
        previous = interrupts() if threading.current_thread() is threading.main_thread() else None
        if args.command not in _UNCACHED:
            from rcpc.core.usercache import cache_dir

            cache_dir()  # a cache that cannot be trusted is said so (W0960) here, not in each -j worker
        _PROGRESS[0] = "nothing was written"
        color = stderr_color()
        _RECORDER = Recorder(argv, color)
        _RECORDER.capture()
        code = 1
        try:
            _REPORT.start(getattr(args, "diagnostics", "text"), color=color)
            try:
                code = _run(args)
            finally:
                ignore_interrupts()  # the outcome is decided: the closing output is not cut
                unwritten = _close_output()
            code = code or unwritten  # a failure or an interrupt (130) already decided keeps its code
            if args.command not in _UNCACHED:
                from rcpc.core.cachetrim import maybe_trim

                maybe_trim()  # the user cache kept under its size limit (at most once an hour)
        finally:
            _RECORDER.save(code)
    finally:
        restore_streams(streams)
        if previous is not None:
            restore_interrupts(previous)
    return code


_UNCACHED = ("lsp", "completion", "schema")  # commands that use no user cache (the language server: its own)


def _parsed(argv: list[str]):
    """:func:`_parse`, whose help and version (``--help``, ``--version``: SystemExit 0) reach
    stdout or end in exit 1 (:func:`rcpc.interrupts.unwritable`): ``rcpc --help > /dev/full``
    exited 0, argparse ignoring the failed write (:class:`_Parser`), and ``rcpc --version
    >&-`` exited 120 with an ``Exception ignored`` traceback at the interpreter's flush."""
    try:
        try:
            return _parse(argv)
        except SystemExit:
            sys.stdout.flush()
            raise
    except OSError as exc:
        raise SystemExit(unwritable(exc)) from None


def _close_output() -> int:
    """Print what the report keeps for the end (SARIF on stdout, JSON on stderr) and flush
    stdout; 0, or 1 when a stream cannot take it (:func:`rcpc.interrupts.unwritable`): ENOSPC
    there used to end in a traceback, or in exit 120 with nothing said."""
    try:
        _REPORT.finish()
        if sys.stdout is not None:  # rcpc lsp: None once it serves (stdout carries the protocol)
            sys.stdout.flush()
    except OSError as exc:
        return unwritable(exc)
    return 0


# What a Ctrl-C would leave, for its message: set as a command writes (build, fmt).
_PROGRESS = ["nothing was written"]


def _run(args) -> int:
    from rcpc.api import UsageError, Workspace

    compiler = None
    try:
        if args.command == "schema":  # needs no workspace
            return _schema(args)
        if args.command in ("lsp", "completion"):
            return _tool(args)
        workspace = Workspace(".", **_schema_options(args))
        ws = workspace.config
        _REPORT.root = ws.root
        _RECORDER.note_workspace(str(ws.root), ws.config and str(ws.config), ws.config_bytes,
                                 [str(d) for d in (*ws.recipe_dirs, *ws.library_dirs)], str(Path(".").resolve()))
        compiler = _LazyCompiler(workspace)
        code = _COMMANDS[args.command](args, ws, compiler)
        sys.stdout.flush()
        _RECORDER.finished()
        return code
    except CompileError as exc:
        _REPORT.add(exc.diagnostics, compiler.sources if compiler else {})
        return 1
    except (_Usage, UsageError) as exc:
        _stderr(f"rcpc: {exc}")
        return 2
    except BrokenPipeError:  # the reader of a file named by -o went away (-o /dev/stdout | head)
        try:  # and nothing at exit either, when Python flushes stdout
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is not a file (replaced, closed)
            pass
        return 0
    except OSError as exc:  # writing stdout (a full disk, /dev/full)
        return unwritable(exc)
    except KeyboardInterrupt as exc:
        from rcpc.output import InterruptedAfterWrite

        done = "the new output was written in full" if isinstance(exc, InterruptedAfterWrite) else _PROGRESS[0]
        _stderr(f"rcpc: interrupted; {done}")
        return 130
    except (RecursionError, MemoryError) as exc:
        _stderr(f"rcpc: error: the input is too large or too deeply nested ({type(exc).__name__})")
        return 1


def _schema_options(args) -> dict:
    """The ``--maxtext-schema`` (``--maxtext-base``), ``--kube-schema`` and ``--strict-crd``
    options, as :class:`rcpc.api.Workspace` takes them."""
    return {"maxtext_schema": args.maxtext_schema or args.maxtext_base, "kube_schemas": args.kube_schema,
            "strict_crd": getattr(args, "strict_crd", False)}


class _Usage(Exception):
    pass


def _stderr(line: str) -> None:
    """Write one line to stderr in one call: a signal cannot split it from its newline."""
    sys.stderr.write(line + "\n")


class _LazyCompiler:
    """The workspace's :class:`~rcpc.domain.recipe.Compiler`, created (and the evaluator
    imported) only when a command needs to compile something: a warm build served from the
    cache never does. ``workspace`` is the :class:`rcpc.api.Workspace`."""

    def __init__(self, workspace):
        self.workspace = workspace
        self.ws = workspace.config

    @property
    def sources(self) -> "_Sources":
        """Sources for quoting diagnostics: the compiler's, else read when asked for (for
        diagnostics from the build cache or from worker processes)."""
        return _Sources(self.ws, self.workspace.sources)

    def get(self):
        """The compiler itself."""
        return self.workspace.compiler

    def __getattr__(self, name):
        return getattr(self.get(), name)


class _Sources(dict):
    """Display path → :class:`~rcpc.core.source.Source`; ``get`` reads a file not yet known."""

    def __init__(self, ws, known: dict):
        super().__init__(known)
        self.ws = ws

    def get(self, path: str, default=None):
        if path not in self:
            from rcpc.core.files import read_limited
            from rcpc.core.limits import MAX_FILE_BYTES
            from rcpc.core.source import Source

            from rcpc.domain import stdlib

            real = Path(os.path.realpath(self.ws.path_of(path)))
            named = {Path(os.path.realpath(p)) for p in (self.ws.maxtext_schema, *self.ws.kube_schemas) if p}
            if self.ws.root not in real.parents and real not in named and not stdlib.contains(real):
                return default  # never read outside the workspace, save the schema files named and rcpc's own
            try:  # bounded, as when compiling (E0803); decoded as the compiler decodes it: no
                # newline translation (a lone '\r' stays)
                self[path] = Source(path, read_limited(real, MAX_FILE_BYTES).decode("utf-8"), str(real))
            except (OSError, UnicodeDecodeError, ValueError):  # <command line>, gone, not text
                return default
        return self[path]


class _Report:
    """Prints diagnostics: as text at once (coloured on a terminal unless NO_COLOR is set), as
    GitHub Actions annotations on stdout at once, or collected and printed when the command
    ends: one JSON document on stderr, or one SARIF log on stdout (:mod:`rcpc.findings`)."""

    def start(self, kind: str, color: bool) -> None:
        self.kind, self.color, self.items, self.summary = kind, color, [], None
        self.as_json = kind == "json"
        self.root = Path.cwd()   # the workspace root, once known (SARIF's %SRCROOT%)

    def status(self, line: str) -> None:
        """The command's closing status line (in JSON: the document's ``summary``)."""
        if self.as_json:
            self.summary = line
        else:
            _stderr(line)

    def add(self, diags, sources) -> None:
        from rcpc.domain.stdlib import attributed

        for d in map(attributed, diags):
            if self.kind == "github":
                from rcpc.findings import github_command

                sys.stdout.write(github_command(d) + "\n")
            elif self.kind == "sarif":
                self.items.append(d)
            elif self.as_json:
                self.items.append(to_json(d, bounded=True))
            else:
                _stderr(format_text(d, sources, self.color))

    def finish(self) -> None:
        if self.kind == "sarif":
            import json

            from rcpc import __version__
            from rcpc.findings import to_sarif

            sys.stdout.write(json.dumps(to_sarif(self.items, self.root, __version__), indent=2,
                                        ensure_ascii=False) + "\n")
        elif self.as_json:
            import json

            doc = {"diagnostics": self.items}
            if self.summary is not None:
                doc["summary"] = self.summary
            _stderr(json.dumps(doc, indent=2, ensure_ascii=False))


_REPORT = _Report()
_RECORDER: Recorder | None = None


def _print_diagnostics(diags, compiler) -> None:
    _REPORT.add(diags, compiler.sources)


def _build(args, ws, compiler) -> int:
    if args.output == "":
        raise _Usage("-o needs a directory")
    out_dir = Path(args.output) if args.output else ws.output_dir
    _no_variant_with_values(args)
    build = compiler.workspace.build(args.recipes, variant=args.variant, sets=args.sets, values=args.values,
                                     flags=args.flags, jobs=args.jobs, output=out_dir)
    _print_diagnostics(build.diagnostics, compiler)
    written = build.write(out_dir, args.output or ws.display(out_dir))
    if written:
        _PROGRESS[0] = "the new output was written in full"
        _RECORDER.discard()  # replayed, its status line would say it wrote what it did not
    for _, _, _, deps in build.recipes:
        _RECORDER.note_dependencies(deps)
    _RECORDER.note_links(ws.links)
    variants = build.variants
    verified = build.compared.verified if build.compared is not None and not written else {}
    for recipe, variant, renders in variants:
        _RECORDER.note_outputs(os.path.abspath(out_dir / recipe / variant), renders,
                               compared=verified.get((recipe, variant)))
    if not written:
        from rcpc.output import bookkeeping

        _RECORDER.note_bookkeeping(os.path.abspath(out_dir), bookkeeping(out_dir))
    count = sum(len(renders) for _, _, renders in variants)
    _REPORT.status(f"rcpc: {count} renders of {len(build.recipes)} recipe(s) in {out_dir} "
                   f"({written} of {len(variants)} variant director{'y' if len(variants) == 1 else 'ies'} written)")
    return 0


def _render(args, ws, compiler) -> int:
    _no_variant_with_values(args)
    rendered = compiler.workspace.render(args.recipe, args.variant, args.sets, args.values, args.flags)
    renders = rendered.renders
    if args.render:
        renders = [r for r in renders if r.name == args.render or r.name.rsplit(".", 1)[0] == args.render]
        if not renders:
            raise _Usage(f"{rendered.recipe} has no render {args.render!r}; renders: "
                         + ", ".join(r.name for r in rendered.renders))
    out = sys.stdout
    if len(renders) == 1:
        out.write(renders[0].text)
    else:
        for r in renders:
            out.write(f"---\n# Source: {rendered.recipe}/{rendered.variant}/{r.name}\n{r.text}")
    return 0


def _params(args, ws, compiler) -> int:
    from rcpc.core.values import text_of

    if args.format == "json":
        import json

        from rcpc.core.emit.json import to_json as value_json

        doc = [{"name": p.name, "type": p.type, "required": p.default is None,
                "default": None if p.default is None else json.loads(value_json(p.default)),
                "choices": [json.loads(value_json(c)) for c in p.choices] if p.choices else None,
                "doc": p.doc} for p in compiler.workspace.params(args.recipe)]
        (path,) = compiler.workspace.recipe_paths([args.recipe])
        name = compiler.workspace.config.recipe_name(path)
        print(json.dumps({"recipe": name, "params": doc}, indent=2, ensure_ascii=False))
        return 0
    rows = [("NAME", "TYPE", "DEFAULT", "DOC")]
    for p in compiler.workspace.params(args.recipe):
        default = "(required)" if p.default is None else text_of(p.default)
        ptype = p.type + (" {" + ",".join(text_of(c) for c in p.choices) + "}" if p.choices else "")
        rows.append((p.name, ptype, default, p.doc))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[3] if r[3] else
              "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return 0


def _diff(args, ws, compiler) -> int:
    from rcpc import review

    if args.rev is not None:
        return _diff_rev(args, ws)
    if len(args.recipes) != 1 or args.variant is None:
        raise _Usage("diff needs one RECIPE and --variant A (or --rev REF to compare with a git revision)")
    recipe, against, diffs = compiler.workspace.diff(args.recipes[0], args.variant, args.against)
    title = f"{recipe}: variant {args.variant} against {against}"
    color = review.stdout_color()
    if args.format == "json":
        import json

        doc = {"recipe": recipe, "variant": args.variant, "against": against,
               "renders": [review.to_json(d) for d in diffs]}
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    elif args.format == "markdown":
        sys.stdout.write(review.report_markdown(f"rcpc diff `{recipe}`: `{args.variant}` against `{against}`",
                                                f"Renders of variant `{args.variant}` compared with `{against}`.",
                                                diffs))
    elif args.stat:
        sys.stdout.write(review.report_stat([title], diffs, color))
    else:
        sys.stdout.write(review.report_variants(title, diffs, color))
    return 0


def _diff_rev(args, ws) -> int:
    from rcpc import review
    from rcpc.api import with_options

    if args.against is not None:
        raise _Usage("--against compares variants; --rev compares every variant with itself at REF")
    try:
        result = review.diff_revision(ws, args.rev, args.recipes, args.variant,
                                      lambda w: with_options(w, **_schema_options(args)))
    except LookupError as exc:
        raise _Usage(f"no recipe {exc.args[0]!r} in the work tree or at {args.rev}") from None
    if args.format == "json":
        import json

        print(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
    elif args.format == "markdown":
        sys.stdout.write(result.markdown())
    elif args.stat:
        sys.stdout.write(review.report_stat(result.header(), result.diffs, review.stdout_color()))
    else:
        sys.stdout.write(review.report_text(result.header(), result.diffs, review.stdout_color()))
    for diags, sources in result.errors:
        _REPORT.add(diags, sources)
    return 1 if result.errors else 0


def _check(args, ws, compiler) -> int:
    maxtext = args.maxtext or ws.maxtext_oracle
    result = compiler.workspace.check(args.paths or [], jobs=args.jobs, maxtext=args.maxtext,
                                      maxtext_python=args.maxtext_python, maxtext_timeout=args.maxtext_timeout)
    if maxtext is not None:  # MaxText's files are no dependency a replay could check
        _RECORDER.discard()
    for deps in result.dependencies:
        _RECORDER.note_dependencies(deps)
    _RECORDER.note_links(ws.links)
    _print_diagnostics(result.failures, compiler)
    notes = [d for d in result.findings if d.severity == "note"]
    _print_diagnostics([d for d in result.findings if d.severity != "note" or args.notes], compiler)
    status = "ok" if not result.errors else f"{result.errors} error(s)"
    if notes and not args.notes:
        status += f" ({len(notes)} note(s): --notes shows them)"
    _REPORT.status(f"rcpc: checked {result.recipes} recipe(s), {result.variants} variant(s), {result.libraries} "
                   f"librar{'y' if result.libraries == 1 else 'ies'}: {status}")
    return 1 if result.errors else 0


def _validate(args, ws, compiler) -> int:
    """``rcpc validate FILE.yaml...`` (:meth:`rcpc.api.Workspace.validate`)."""
    documents, found = compiler.workspace.validate(args.files)
    _REPORT.add(found, compiler.sources)
    errors = sum(1 for d in found if d.severity == "error")
    _REPORT.status(f"rcpc: validated {documents} document(s) in {len(args.files)} file(s): "
                   + (f"{errors} error(s)" if errors else "ok"))
    return 1 if errors else 0


def _explain(args, ws, compiler) -> int:
    import json

    if args.effective == (args.key is not None):
        raise _Usage("explain needs a KEY, or --effective without one")
    _no_variant_with_values(args)
    if args.effective:
        report = compiler.workspace.explain_effective(args.recipe, args.flagset, args.variant, args.sets,
                                                      args.values, args.flags)
        if args.format == "json":
            print(json.dumps(report, indent=2, ensure_ascii=False))
            return 0
        print(f"{report['recipe']} {report['render']} (variant {report['variant']}): the config MaxText starts with "
              f"({report['schema']}{', model ' + report['model'] if report['model'] else ''})")
        width = max((len(r["key"]) for r in report["config"]), default=0)
        for r in report["config"]:
            print(f"  {r['key']:<{width}}  {r['value']}  ({r['from']})")
        return 0
    report = compiler.workspace.explain(args.recipe, args.flagset, args.key, args.variant, args.sets, args.values,
                                        args.flags)
    if args.format == "json":
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    print(f"{report['recipe']} {report['flag_set']} {report['key']} (variant {report['variant']})")
    print(f"effective: {report['effective']}")
    for i, step in enumerate(report["chain"], 1):
        came = f"; value from {step['value_from']}" if "value_from" in step else ""
        print(f"  {i}. {step['value']}  at {step['location']}  (layer {step['layer']}: {step['active']}{came})")
        if "received" in step:
            print(f"     the container receives {step['received']}  (Kubernetes expands $(VAR) and $$ with its env)")
    for env in report["env"]:
        print(f"env: {env['name']}={env['value']} at {env['location']}  (container '{env['container']}' of "
              f"{env['render']}; MaxText reads it instead of the default)")
    if report.get("schema") is not None:
        default = report["schema_default"]
        print(f"schema default: {default if report['in_schema'] else '(not in schema)'}  ({report['schema']})")
    return 0


def _schema(args) -> int:
    """``rcpc schema maxtext PATH`` (:mod:`rcpc.domain.schemagen`) or ``rcpc schema jobset CRD.yaml``
    (:mod:`rcpc.domain.crd`): a derived schema, to stdout or written atomically to ``-o FILE``."""
    if args.kind == "maxtext":
        from rcpc.domain.schemagen import derive, dumps

        text = dumps(derive(Path(args.path), commit=args.commit))
    else:
        from rcpc.domain.crd import derive_schema

        text = derive_schema(Path(args.path), args.commit)
    if not args.output:
        sys.stdout.write(text)
        return 0
    from rcpc.core.files import write_output

    try:
        write_output(args.output, text.encode("utf-8"))
    except BrokenPipeError:  # -o /dev/stdout, its reader gone: as for stdout (_run)
        raise
    except OSError as exc:
        raise CompileError(Diagnostic("E0950", f"cannot write {args.output}: {exc.strerror or exc}", None,
                                      hint=io_hint(exc))) from None
    _REPORT.status(f"rcpc: wrote the {args.kind} schema of {args.path} to {args.output}")
    return 0


def _fmt(args, ws, compiler) -> int:
    import difflib

    from rcpc.core.files import write_output
    from rcpc.core.fmt import FormatterBug

    formatted, errors = compiler.workspace.format(args.paths, jobs=args.jobs)
    bugs = 0
    changed = []
    for real, out in formatted:
        shown = ws.display(real)
        if isinstance(out, CompileError):
            errors.extend(out.diagnostics)
            try:
                compiler.source(real)  # for the quoted source line
            except CompileError:
                pass
            continue
        if isinstance(out, FormatterBug):  # never written: the file is left as it is
            _stderr(f"rcpc: error: {shown} is left unformatted: {out} (a bug in rcpc fmt)")
            bugs += 1
            continue
        if out is None:
            continue
        changed.append(shown)
        if args.diff:
            text = compiler.source(real).text
            sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), out.splitlines(True),
                                                       f"a/{shown}", f"b/{shown}"))
        elif args.check:
            print(shown)
        else:
            write_output(real, out.encode("utf-8"))  # atomic, keeping mode and owner
            _PROGRESS[0] = f"{len(changed)} file(s) were reformatted"
    if errors:
        raise CompileError(errors)
    if bugs:
        return 1
    verb = "would reformat" if args.check or args.diff else "reformatted"
    _REPORT.status(f"rcpc: {verb} {len(changed)} of {len(formatted)} file(s)")
    return 1 if changed and (args.check or args.diff) else 0


def _lint(args, ws, compiler) -> int:
    found = compiler.workspace.lint(args.paths)
    _print_diagnostics(found, compiler)
    problems = [d for d in found if d.severity in ("error", "warning")]
    _REPORT.status(f"rcpc: lint: {len(problems)} finding(s)" + (
        f", {len(found) - len(problems)} note(s)" if len(found) > len(problems) else ""))
    return 1 if problems else 0


def _tool(args) -> int:
    """``rcpc lsp`` (the language server, :mod:`rcpc.lsp`) and ``rcpc completion SHELL``."""
    if args.command == "completion":
        from rcpc.completion import KINDS, candidates, script

        if args.list:
            if args.list[0] in KINDS:
                sys.stdout.writelines(w + "\n" for w in candidates(args.list[0], (args.list[1:] or [None])[0]))
            return 0
        if args.shell is None:
            raise _Usage("completion: name a shell (bash, zsh, fish)")
        sys.stdout.write(script(_parser(), args.shell))
        return 0
    try:
        from rcpc.lsp.server import serve
    except ImportError as exc:
        raise _Usage(f"rcpc lsp needs the lsp extra: pip install 'rcpc[lsp]' ({exc})") from None
    return serve()


def _import(args, ws, compiler) -> int:
    """``rcpc import manifest|shell FILE [-o RECIPE.rcp]`` (:mod:`rcpc.importer`): the recipe
    to stdout or ``-o`` (never over an existing file without ``--force``), then proven equal
    to the input; exit 1 when it is not."""
    from rcpc.core.files import write_output
    from rcpc.domain import stdlib
    from rcpc.importer import driver

    source = Path(args.file)
    shown = args.file
    if not os.path.lexists(source):  # as rcpc fmt: a usage error (exit 2), not an E12xx of the file
        raise _Usage(f"no such file: {shown}")
    out = args.output
    if out is not None:
        target = Path(out)
        problem = None
        if out == "":
            problem = "-o needs a file name"
        elif target.is_dir():
            problem = "is a directory"
        elif (target.exists() or target.is_symlink()) and not args.force:
            problem = "exists (rcpc import never replaces a file unless --force is given)"
        elif target.exists() and target.resolve() == source.resolve():
            problem = "is the input file"
        elif stdlib.contains(Path(os.path.realpath(target))):
            problem = f"it is in rcpc's standard library ({stdlib.DIRECTORY}): rcpc's own files are never written"
        if problem:
            raise CompileError(Diagnostic("E1202", f"cannot write {out}: {problem}", None,
                                          hint="name a new .rcp file, or add --force to replace it"))
    if args.kind == "manifest":
        from rcpc.domain.recipe import parse_sets

        imported = driver.import_manifest(ws, source, shown, parse_sets(args.sets or []), args.variables)
    else:
        imported = driver.import_shell(ws, source, shown)
    _REPORT.add(imported.notes, compiler.sources)
    if out is None:
        sys.stdout.write(imported.text)
        sys.stdout.flush()
        found = []  # proven on the same text before it was printed
    else:
        try:
            write_output(out, imported.text.encode("utf-8"))
        except OSError as exc:
            raise CompileError(Diagnostic("E1202", f"cannot write {out}: {exc.strerror or exc}", None,
                                          hint=io_hint(exc))) from None
        _PROGRESS[0] = f"{out} was written"
        from rcpc.importer.proof import fresh_compiler

        found = imported.check(fresh_compiler(ws.root), Path(out).resolve())
    if found:
        raise CompileError(Diagnostic("E1203", f"the imported recipe is not equal to {shown}: {found[0]}", None,
                                      notes=tuple(found[1:4]), hint=driver.IMPORT_BUG_HINT))
    todo = sum(1 for d in imported.notes if d.severity == "warning" and d.code != "W1104")
    retyped = sum(1 for d in imported.notes if d.code == "W1104")
    _REPORT.status(f"rcpc: import {args.kind} {shown}: equal ({imported.how})"
                   + (f"; {todo} TODO(import) item(s) listed above" if todo else "")
                   + (f"; {retyped} key(s) kubectl retypes, listed above" if retyped else "")
                   + (f"; wrote {out}" if out else ""))
    return 0


_COMMANDS = {"import": _import, "validate": _validate, "fmt": _fmt, "lint": _lint, "explain": _explain, "build": _build, "render": _render, "params": _params, "diff": _diff, "check": _check}
