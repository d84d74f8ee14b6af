"""The ``rcpc`` command line: argument parsing and dispatch only.

Exit codes: 0 success, 1 errors in the input (diagnostics on stderr), 2 usage errors.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path

from rcpc.cache import request
from rcpc.diagnostics import CompileError, Diagnostic, did_you_mean, format_text, to_json, unique
from rcpc.parallel import compile_recipes
from rcpc.replay import Recorder, stderr_color


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rcpc", description="Compile launch recipes into MaxText flags and Kubernetes manifests.")
    from rcpc import __version__
    p.add_argument("--version", action="version", version=f"rcpc {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--maxtext-base", metavar="BASE_YML",
                        help="MaxText base.yml to check flag sets against (overrides rcp.toml maxtext_base)")
    common.add_argument("--diagnostics", choices=("text", "json"), default="text",
                        help="how errors and warnings are printed (json: one document on stderr)")
    common.add_argument("--kube-schema", action="append", metavar="CRD",
                        help="CRD or JSON schema to validate manifests against (repeatable; overrides rcp.toml kube_schemas)")

    b = sub.add_parser("build", parents=[common], help="write every render of recipes to DIR/<recipe>/<variant>/<render>")
    b.add_argument("recipes", nargs="*", metavar="RECIPE", help="recipe names (rl/x) or .rcp paths; default: all")
    g = b.add_mutually_exclusive_group()
    g.add_argument("--variant", metavar="V", help="only this variant (default: every declared variant)")
    g.add_argument("--set", dest="sets", action="append", metavar="NAME=VALUE",
                   help="set a declared param; the build is written as variant 'custom'")
    b.add_argument("-o", "--output", metavar="DIR", help="output directory (default: rcp.toml output_dir, else rcpc-out)")
    _jobs_option(b)

    r = sub.add_parser("render", parents=[common], help="print renders of one recipe to stdout")
    r.add_argument("recipe", metavar="RECIPE")
    r.add_argument("render", nargs="?", metavar="RENDER", help="one render (trainer.yaml or trainer); default: all")
    g = r.add_mutually_exclusive_group()
    g.add_argument("--variant", metavar="V", default=None)
    g.add_argument("--set", dest="sets", action="append", metavar="NAME=VALUE")

    pa = sub.add_parser("params", parents=[common], help="list the params of a recipe")
    pa.add_argument("recipe", metavar="RECIPE")

    d = sub.add_parser("diff", parents=[common], help="compare the renders of two variants of a recipe")
    d.add_argument("recipe", metavar="RECIPE")
    d.add_argument("--variant", required=True, metavar="A")
    d.add_argument("--against", metavar="B", help="default: the variant's own 'against', else 'default'")
    d.add_argument("--format", choices=("text", "json"), default="text")

    c = sub.add_parser("check", parents=[common], help="evaluate every recipe and variant, run contracts; write nothing")
    c.add_argument("paths", nargs="*", metavar="PATH", help="recipes, .rcp files or directories; default: all")
    c.add_argument("--notes", action="store_true", help="also print notes (e.g. flags set to their MaxText default)")
    _jobs_option(c)

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
    e.add_argument("flagset", metavar="FLAGSET", help="a top-level name bound to maxtext_flags, or a flag render (trainer)")
    e.add_argument("key", metavar="KEY")
    g = e.add_mutually_exclusive_group()
    g.add_argument("--variant", metavar="V")
    g.add_argument("--set", dest="sets", action="append", metavar="NAME=VALUE")
    e.add_argument("--format", choices=("text", "json"), default="text")
    return p


def _jobs(text: str) -> int:
    if text == "auto":
        from rcpc.parallel import default_jobs

        return default_jobs()
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a number of processes (1 or more) or 'auto', got {text!r}")
    return n


def _jobs_option(p) -> None:
    p.add_argument("-j", "--jobs", type=_jobs, default="auto", metavar="N",
                   help="work in N processes (default: auto, one per CPU; 1: no workers)")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code. ``build`` and ``check`` leave a replay record
    (:mod:`rcpc.replay`) when they succeed."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        from rcpc.__main__ import sigterm_interrupts

        sigterm_interrupts()
    global _RECORDER
    color = stderr_color()
    _RECORDER = Recorder(argv, color)
    _RECORDER.capture()
    code = 1
    try:
        _REPORT.start(args.diagnostics == "json", color=color)
        try:
            code = _run(args)
        finally:
            _REPORT.finish()
    finally:
        _RECORDER.save(code)
    return code


def _run(args) -> int:
    from rcpc.workspace import Workspace

    compiler = None
    try:
        ws = Workspace.find(".")
        if args.maxtext_base:
            import attrs

            ws = attrs.evolve(ws, maxtext_base=ws.real(Path(args.maxtext_base)))
        if args.kube_schema:
            import attrs

            ws = attrs.evolve(ws, kube_schemas=tuple(ws.real(Path(p)) for p in args.kube_schema))
        _RECORDER.note_workspace(str(ws.root), ws.config and str(ws.config),
                                 [str(d) for d in (*ws.recipe_dirs, *ws.library_dirs)], str(Path(".").resolve()))
        compiler = _LazyCompiler(ws)
        code = _COMMANDS[args.command](args, ws, compiler)
        sys.stdout.flush()
        return code
    except CompileError as exc:
        _REPORT.add(exc.diagnostics, compiler.sources if compiler else {})
        return 1
    except _Usage as exc:
        print(f"rcpc: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # writing stdout (a full disk, /dev/full)
        print(f"rcpc: error: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        from rcpc.output import InterruptedAfterWrite

        done = "the new output was written in full" if isinstance(exc, InterruptedAfterWrite) else "nothing was written"
        print(f"rcpc: interrupted; {done}", file=sys.stderr)
        return 130
    except (RecursionError, MemoryError) as exc:
        print(f"rcpc: error: the input is too large or too deeply nested ({type(exc).__name__})",
              file=sys.stderr)
        return 1


class _Usage(Exception):
    pass


class _LazyCompiler:
    """The :class:`~rcpc.recipe.Compiler`, created (and the evaluator imported) only when a
    command needs to compile something: a warm build served from the cache never does."""

    def __init__(self, ws):
        self.ws = ws
        self._compiler = None

    @property
    def sources(self) -> "_Sources":
        """Sources for quoting diagnostics: the compiler's, else read when asked for (for
        diagnostics from the build cache or from worker processes)."""
        return _Sources(self.ws, self._compiler.sources if self._compiler is not None else {})

    def get(self):
        """The compiler itself."""
        if self._compiler is None:
            from rcpc.recipe import Compiler

            self._compiler = Compiler(self.ws)
        return self._compiler

    def __getattr__(self, name):
        return getattr(self.get(), name)


class _Sources(dict):
    """Display path → :class:`~rcpc.source.Source`; ``get`` reads a file not yet known."""

    def __init__(self, ws, known: dict):
        super().__init__(known)
        self.ws = ws

    def get(self, path: str, default=None):
        if path not in self:
            from rcpc.limits import MAX_FILE_BYTES
            from rcpc.source import Source

            real = self.ws.root / path
            try:
                if real.stat().st_size > MAX_FILE_BYTES:  # not read when compiling either (E0803)
                    return default
                # decoded as the compiler decodes it: no newline translation (a lone '\r' stays)
                self[path] = Source(path, real.read_bytes().decode("utf-8"), str(real))
            except (OSError, UnicodeDecodeError, ValueError):  # <command line>, gone, not text
                return default
        return self[path]


class _Report:
    """Prints diagnostics: as text at once (coloured on a terminal unless NO_COLOR is set), or
    collected and printed as one JSON document when the command ends."""

    def start(self, as_json: bool, color: bool) -> None:
        self.as_json, self.color, self.items, self.summary = as_json, color, [], None

    def status(self, line: str) -> None:
        """The command's closing status line (in JSON: the document's ``summary``)."""
        if self.as_json:
            self.summary = line
        else:
            print(line, file=sys.stderr)

    def add(self, diags, sources) -> None:
        for d in diags:
            if self.as_json:
                self.items.append(to_json(d))
            else:
                print(format_text(d, sources, self.color), file=sys.stderr)

    def finish(self) -> None:
        if self.as_json:
            import json

            doc = {"diagnostics": self.items}
            if self.summary is not None:
                doc["summary"] = self.summary
            print(json.dumps(doc, indent=2, ensure_ascii=False), file=sys.stderr)


_REPORT = _Report()
_RECORDER: Recorder | None = None


def _print_diagnostics(diags, compiler) -> None:
    _REPORT.add(diags, compiler.sources)


def _recipe_paths(ws, names: list[str]) -> list[Path]:
    if not names:
        found = ws.recipes()
        if not found:
            raise _Usage(f"no recipes under {', '.join(ws.display(d) for d in ws.recipe_dirs)}")
        return found
    out = []
    for n in names:
        p = ws.find_recipe(n)
        if p is None:
            raise _Usage(f"no recipe {n!r} in this workspace (give a name such as rl/qwen35_397b_256_v7x, "
                         "or the path of a .rcp file under the recipe directories; library files are "
                         "loaded by recipes, not built)")
        out.append(p)
    return list(dict.fromkeys(out))


def _build(args, ws, compiler) -> int:
    if args.output == "":
        raise _Usage("-o needs a directory")
    out_dir = Path(args.output) if args.output else ws.output_dir
    cache, options = request(ws, args.variant, args.sets)
    paths = _recipe_paths(ws, args.recipes)
    compiled = compile_recipes(ws, compiler.get, cache, options, paths, args.variant, args.sets, jobs=args.jobs)
    for result in compiled:
        if isinstance(result, CompileError):  # the first failing recipe, as without workers
            raise result
    results = [(ws.recipe_name(path), *result) for path, result in zip(paths, compiled)]
    _print_diagnostics(unique(d for _, _, found, _ in results for d in found if d.severity != "note"), compiler)
    from rcpc.output import unchanged, write_all

    batch = [(name, variant, renders) for name, builds, _, _ in results for variant, renders in builds]
    changed = [b for b in batch if not unchanged(out_dir, *b)]
    try:
        if changed:
            write_all(out_dir, changed)
    except OSError as exc:
        raise CompileError(Diagnostic("E0950", f"cannot write to {out_dir}: {exc.strerror or exc}", None,
                                      hint="the previous output, if any, is unchanged")) from None
    for _, _, _, deps in results:
        _RECORDER.note_dependencies(deps)
    _RECORDER.note_links(ws.links)
    for recipe, variant, renders in batch:
        _RECORDER.note_outputs(os.path.abspath(out_dir / recipe / variant), renders)
    count = sum(len(renders) for _, _, renders in batch)
    _REPORT.status(f"rcpc: {count} renders of {len(results)} recipe(s) in {out_dir} "
                   f"({len(changed)} of {len(batch)} variant director{'y' if len(batch) == 1 else 'ies'} written)")
    return 0


def _render(args, ws, compiler) -> int:
    (path,) = _recipe_paths(ws, [args.recipe])
    variant = args.variant if args.variant or args.sets else None
    recipe, builds = compiler.build(path, variant or ("default" if not args.sets else None), args.sets)
    vb = builds[0]
    renders = vb.renders
    if args.render:
        renders = [r for r in renders if r.name == args.render or r.name.rsplit(".", 1)[0] == args.render]
        if not renders:
            raise _Usage(f"{recipe.name} has no render {args.render!r}; renders: "
                         + ", ".join(r.name for r in vb.renders))
    out = sys.stdout
    if len(renders) == 1:
        out.write(renders[0].text)
    else:
        for r in renders:
            out.write(f"---\n# Source: {recipe.name}/{vb.variant}/{r.name}\n{r.text}")
    return 0


def _params(args, ws, compiler) -> int:
    from rcpc.values import text_of

    (path,) = _recipe_paths(ws, [args.recipe])
    recipe, _ = compiler.recipe(path)
    rows = [("NAME", "TYPE", "DEFAULT", "DOC")]
    for p in recipe.params:
        default = "(required)" if p.default is None else text_of(p.default)
        ptype = p.type + (" {" + ",".join(text_of(c) for c in p.choices) + "}" if p.choices else "")
        rows.append((p.name, ptype, default, p.doc))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[3] if r[3] else
              "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return 0


def _diff(args, ws, compiler) -> int:
    import json

    from rcpc.contracts import diff_report

    (path,) = _recipe_paths(ws, [args.recipe])
    recipe, _ = compiler.recipe(path)
    variants = {v.name: v for v in recipe.variants}
    for name in (args.variant, args.against):
        if name is not None and name not in variants:
            raise CompileError(Diagnostic("E0607", f"recipe {recipe.name} has no variant '{name}'", None,
                                          hint=did_you_mean(name, variants) or f"variants: {', '.join(variants)}"))
    against = args.against or variants[args.variant].against or "default"
    if against not in variants:
        raise CompileError(Diagnostic("E0607", f"recipe {recipe.name} has no variant '{against}'", None,
                                      hint="name the variant to compare with: --against V"))
    _, (new,) = compiler.build(path, args.variant)
    _, (old,) = compiler.build(path, against)
    report = diff_report(old, new)
    if args.format == "json":
        from rcpc.emit.flags import value_text

        def fv(e):
            return None if e is None else value_text(e.value)

        for entry in report:
            if "flags" in entry:
                entry["flags"] = [{"key": c.key, "old": fv(c.old), "new": fv(c.new)} for c in entry["flags"]]
        doc = {"recipe": recipe.name, "variant": args.variant, "against": against, "renders": report}
        print(json.dumps(doc, indent=2, ensure_ascii=False))
        return 0
    out = [f"{recipe.name}: variant {args.variant} against {against}"]
    for entry in report:
        out.append(f"{entry['render']}: {entry['status']}")
        for c in entry.get("flags", ()):
            out.append(f"  {c.describe()}")
        if entry["diff"]:
            out.append(entry["diff"].rstrip("\n"))
    print("\n".join(out))
    return 0


def _check(args, ws, compiler) -> int:
    paths: list[Path] = []
    libraries: list[Path] = []
    for p in args.paths or []:
        q = Path(p).resolve()
        if q != ws.root and ws.root not in q.parents:
            raise _Usage(f"{p} is outside the workspace {ws.root}")
        if q.is_dir():
            paths.extend(r for r in ws.recipes() if q in r.parents)
            libraries.extend(lib for lib in ws.libraries() if q in lib.parents)
        elif ws.is_library(q):
            libraries.append(q)
        else:
            paths.extend(_recipe_paths(ws, [p]))
    if not args.paths:
        paths = _recipe_paths(ws, [])
        libraries = ws.libraries()
    paths = list(dict.fromkeys(paths))
    errors = 0
    variants = 0
    cache, options = request(ws, None, None)
    found: list = []
    compiled = compile_recipes(ws, compiler.get, cache, ["lint", *options], paths, lint=True, jobs=args.jobs)
    for result in compiled:
        if isinstance(result, CompileError):
            _print_diagnostics(result.diagnostics, compiler)
            errors += sum(1 for d in result.diagnostics if d.severity == "error")
        else:
            builds, diags, deps = result
            _RECORDER.note_dependencies(deps)
            variants += len(builds)
            found.extend(diags)
    for lib in dict.fromkeys(libraries):  # also the ones no recipe loads
        hit = cache.lookup(lib, ["library", *options])
        if hit is not None:
            _RECORDER.note_dependencies(hit[2])
            continue
        try:
            compiler.library(lib, ())
            _RECORDER.note_dependencies(cache.store(lib, ["library", *options], compiler.dependencies(lib), [], []))
        except CompileError as exc:
            _print_diagnostics(exc.diagnostics, compiler)
            errors += len(exc.diagnostics)
    _RECORDER.note_links(ws.links)
    found = unique(found)
    notes = [d for d in found if d.severity == "note"]
    _print_diagnostics([d for d in found if d.severity != "note" or args.notes], compiler)
    status = "ok" if not errors else f"{errors} error(s)"
    if notes and not args.notes:
        status += f" ({len(notes)} note(s): --notes shows them)"
    _REPORT.status(f"rcpc: checked {len(paths)} recipe(s), {variants} variant(s), {len(set(libraries))} "
                   f"librar{'y' if len(set(libraries)) == 1 else 'ies'}: {status}")
    return 1 if errors else 0


def _explain(args, ws, compiler) -> int:
    import json

    from rcpc.explain import explain

    (path,) = _recipe_paths(ws, [args.recipe])
    report = explain(compiler, path, args.flagset, args.key, args.variant, args.sets)
    if args.format == "json":
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    print(f"{report['recipe']} {report['flag_set']} {report['key']} (variant {report['variant']})")
    print(f"effective: {report['effective'] if report['effective'] is not None else '(not set)'}")
    for i, step in enumerate(report["chain"], 1):
        print(f"  {i}. {step['value']}  at {step['location']}  (layer {step['layer']}: {step['active']})")
    if report.get("schema") is not None:
        default = report["schema_default"]
        print(f"schema default: {default if report['in_schema'] else '(not in schema)'}  ({report['schema']})")
    return 0


def _fmt(args, ws, compiler) -> int:
    import difflib

    from rcpc.parallel import format_files

    files: list[Path] = []
    for p in args.paths or [str(d) for d in ws.recipe_dirs]:
        q = Path(p)
        if q.is_dir():
            files.extend(sorted(x.resolve() for x in q.rglob("*.rcp") if x.is_file()))
        elif q.is_file():
            files.append(q.resolve())
        else:
            raise _Usage(f"no such file or directory: {p}")
    errors: list = []
    changed = []
    files = list(dict.fromkeys(files))
    for real, out in zip(files, format_files(ws, compiler.get, files, args.jobs)):
        shown = ws.display(real)
        if isinstance(out, CompileError):
            errors.extend(out.diagnostics)
            try:
                compiler.source(real)  # for the quoted source line
            except CompileError:
                pass
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
            tmp = real.with_name(f".{real.name}.fmt-tmp")
            tmp.write_text(out, encoding="utf-8")
            os.replace(tmp, real)
    if errors:
        raise CompileError(errors)
    verb = "would reformat" if args.check or args.diff else "reformatted"
    _REPORT.status(f"rcpc: {verb} {len(changed)} of {len(files)} file(s)")
    return 1 if changed and (args.check or args.diff) else 0


def _lint(args, ws, compiler) -> int:
    from rcpc.lint import lint

    for p in args.paths:
        q = Path(p).resolve()
        if q.exists() and q != ws.root and ws.root not in q.parents:
            raise _Usage(f"{p} is outside the workspace {ws.root}")
    found = lint(compiler.get(), args.paths)
    _print_diagnostics(found, compiler)
    problems = [d for d in found if d.severity in ("error", "warning")]
    _REPORT.status(f"rcpc: lint: {len(problems)} finding(s)" + (
        f", {len(found) - len(problems)} note(s)" if len(found) > len(problems) else ""))
    return 1 if problems else 0


_COMMANDS = {"fmt": _fmt, "lint": _lint, "explain": _explain, "build": _build, "render": _render, "params": _params, "diff": _diff, "check": _check}
