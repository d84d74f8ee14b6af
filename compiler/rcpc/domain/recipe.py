"""Compiling recipes: sources, the load graph, params, variants and renders.

A :class:`Compiler` serves one run. It reads, parses and resolves each file once, evaluates
each loaded (library) file once, and evaluates a recipe once per variant (libraries cannot
see params, so their exports are shared by every variant).

Load errors (``E02xx``): missing file, missing name, cycle (found on resolved real paths, so
``./a.rcp`` and ``../x/a.rcp`` spellings of one file are one node), escaping the workspace.
An error inside a loaded file is reported at that file's line:col with ``loaded from``
spans back to the recipe.
"""

from __future__ import annotations

import itertools
import os
from _weakref import ref as _weak_ref  # weakref.ref itself (the weakref module is Python: ~0.7 ms)
from pathlib import Path

from rcpc.core import record
from rcpc.core.digest import hexdigest
from rcpc.domain import builtins as B
from rcpc.core.limits import (LIMIT_HINT, MAX_ERRORS, MAX_FILE_BYTES, MAX_LOAD_DEPTH, MAX_NODES, MAX_RENDERS,
                               MAX_SCHEMA_BYTES)
from rcpc.core.diagnostics import (CompileError, Diagnostic, by_place, did_you_mean, did_you_mean_or_list, error,
                                   io_hint, unique)
from rcpc.core.evaluate import Evaluator
from rcpc.core.files import TooLarge, read_limited
from rcpc.core.names import fold
from rcpc.core.resolve import resolve
from rcpc.domain.maxtext.schema import BUILTIN_PATH, load_schema, schema_sources
from rcpc.domain.maxtext import BUILTIN
from rcpc.core.source import COMMAND_LINE_SPAN, Source, Span
from rcpc.core.session import Session
from rcpc.core.syntax import ast
from rcpc.core.syntax import parser
from rcpc.core.values import Dict
from rcpc.domain.overrides import Overrides, parse_sets
from rcpc.domain.values import FlagSet, Manifest, Variant
from rcpc.domain.renders import kind_of
from rcpc.domain import stdlib
from rcpc.domain.workspace import LINK, Workspace, entry, not_utf8, too_large

DEFAULT_VARIANT = "default"
# the built-ins whose call statements declare variants (variant, variants): a variant's own
# build skips them (its declarations come from the default evaluation)
VARIANT_CALLS = frozenset(n for n, f in B.UNIVERSE.functions.items() if f.makes == "variant")


@record.frozen
class Render:
    """One output file: ``name`` (``trainer.yaml``), its exact ``text``, and the value it was
    emitted from (a Manifest or FlagFile)."""

    name: str
    text: str
    value: object


@record.frozen
class VariantBuild:
    """A recipe evaluated for one variant: the variant's name, the param values used and the
    renders in declaration order."""

    variant: str
    params: dict
    renders: tuple
    problems: tuple = ()  # the manifests' errors: (Diagnostic, render span, render file name)


@record.frozen
class Recipe:
    """A recipe's declarations (from its default evaluation)."""

    path: Path
    name: str
    params: tuple
    variants: tuple

    def variant(self, name: str):
        """The declared variant ``name`` (:class:`~rcpc.domain.values.Variant`). Raises
        CompileError ``E0607`` when the recipe declares none of that name (did-you-mean over
        the declared ones)."""
        for v in self.variants:
            if v.name == name:
                return v
        names = [v.name for v in self.variants]
        raise error("E0607", f"recipe {self.name} has no variant '{name}'", None,
                    hint=did_you_mean(name, names) or f"variants: {', '.join(names)}")


class Compiler:
    """Compiles recipes of one workspace; holds the per-run caches. ``session``: the
    :class:`~rcpc.core.session.Session` whose caches (the parse tables, the schemas made, the
    manifests found clean) it fills: a tool that makes compilers one after another (the language
    server) passes its own so that they survive; default: a new one. ``share_variants``: a
    variant's evaluation redoes the default evaluation's statements that none of its
    overrides reaches rather than evaluating them (:mod:`rcpc.core.trace`; False evaluates
    every statement, the oracle of tests/test_trace.py)."""

    share_variants = True

    def __init__(self, workspace: Workspace, session: Session | None = None):
        self.workspace = workspace
        self.session = Session() if session is None else session
        self.sources: dict[str, Source] = {}     # display path → Source (for diagnostics)
        self._modules: dict[Path, ast.Module] = {}
        self._exports: dict[Path, dict] = {}
        self._base: dict[Path, VariantBuild] = {}   # each recipe's evaluation with no overrides
        self._base_exports: dict[Path, dict] = {}   # ... and its top-level bindings
        self._schemas: dict[Path, object] = {}
        self._kube = None
        self._kube_identity: str | None = None  # of the schema files, before they are parsed
        self._schema_read: dict[Path, bytes] = {}  # their bytes, until they are parsed
        self._clean: set[str] = set()               # renders of manifests found clean
        self._loads: dict[Path, set] = {}           # file → files it loads
        self._warnings: dict[Path, list] = {}       # file → warnings found evaluating it
        self.schema_files: set[Path] = set()        # schema files read in this run
        # loaded files whose evaluation failed, since the evaluation of a recipe or of a
        # library checked on its own (the root) began: each root has their warnings once
        self._failed: dict[Path, CompileError] = {}
        # ... and for the run, those whose failure reads nothing of the chain of loads that
        # reached them: file → (error, replay: its warnings and the failing files it loaded, in
        # order). One whose evaluation met a load cycle (E0202's message shows the chain from
        # the root) is evaluated again in each root, as before.
        self._failures: dict[Path, tuple] = {}
        self._cycles = 0     # E0202s raised and chain-read failures passed on, so far in the run
        self._frames: list = []  # [position in context.diagnostics, replay] of each library being evaluated
        self._parsed: dict[Path, object] = {}  # parsed, not yet resolved (the load graph's), or its CompileError
        self._height: dict[Path, int] = {}          # file → files in its longest chain of loads
        self._targets: dict[Path, list] = {}        # file → (file, Load) of its loads
        self._resolved: dict[tuple, Path] = {}      # (load path, directory of the loading file) → file
        self._too_deep: dict[Path, CompileError] = {}  # file → E0801 of its too long chain
        self._rendered = 0  # weight of the renders emitted for the recipe being built
        self._traces: dict[Path, object] = {}  # each recipe's default evaluation, step by step (rcpc.core.trace)
        self._emitted: dict[int, tuple] = {}  # id(render value) → (value, text), for the recipe being built
        self._containers: dict[int, tuple] = {}  # id(manifest value) → (value, its containers), likewise
        self._views: tuple[dict, dict] = ({}, {})  # argv views' texts by node, likewise (argvview.text)
        self._view_applies: bool | None = None  # argvview.applies to the workspace's schema files
        # file → digest (rcpc.core.digest) of the bytes read and compiled (None: read twice with different bytes)
        self.digests: dict[Path, str | None] = {}
        self._values: dict[Path, object] = {}  # values file (real path) → its ValuesFile, read once a run
        # shared by every evaluation of the run; its schema function holds the compiler weakly,
        # so a dropped compiler is freed by reference counting, not left to the cyclic GC
        self.context = B.RecipeContext(schema=_weakly(self._schema))

    # files ------------------------------------------------------------------------------
    def read(self, real: Path, limit: int, follow: bool = True) -> bytes:
        """The bytes of input file ``real`` (at most ``limit``; :func:`rcpc.core.files.read_limited`,
        ``follow`` as there), their digest (:mod:`rcpc.core.digest`) kept in :attr:`digests`: the build cache keys on the
        bytes compiled, not on what the file holds later. Raises OSError."""
        data = read_limited(real, limit, follow)
        digest = hexdigest(data)
        if self.digests.setdefault(real, digest) != digest:
            self.digests[real] = None
        return data

    def source(self, real: Path) -> Source:
        """The text of source file ``real`` (a real path: its last component is not followed
        if it is a symlink now), read once a run: ``sources`` holds it, and what is laid
        there (an editor's buffer) is read instead. ``E0803`` over
        :data:`~rcpc.core.limits.MAX_FILE_BYTES` (checked before reading), ``E0201`` when it
        cannot be read or is not a regular file, ``E0003`` when it is not UTF-8."""
        display = self.workspace.display(real)
        src = self.sources.get(display)
        if src is None:
            try:
                data = self.read(real, MAX_FILE_BYTES, follow=False)
            except TooLarge as exc:
                raise too_large(display, exc.size) from None
            except OSError as exc:
                raise error("E0201", f"cannot read {display}: {exc.strerror}", None, hint=io_hint(exc)) from None
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise not_utf8(display, data[:exc.start].count(b"\n") + 1) from None
            src = self.sources[display] = Source(display, text, str(real))
        return src

    def module(self, real: Path, chain: tuple = ()) -> ast.Module:
        """Parsed and name-resolved AST of a file (cached). ``chain``: the (file, load span)
        chain its evaluation's loads extend (as :meth:`library`; a recipe's is ``((real,
        None),)``): resolving an unknown name evaluates the files it loads along it. A file
        that fails to resolve and reaches a load cycle also gets the cycle's ``E0202``, as its
        evaluation would have (:meth:`_cycle_errors`)."""
        mod = self._modules.get(real)
        if mod is None:
            self.check_load_depth(real)  # before resolving, which loads (and evaluates) what it names
            mod = self._parsed.pop(real, None) or parser.parse(self.source(real), session=self.session)
            if isinstance(mod, CompileError):
                raise mod
            try:
                resolve(mod, B.NAMES, lambda name: self._exported_by(real, mod, name, chain))
            except CompileError as exc:
                raise CompileError(unique([*exc.diagnostics, *self._cycle_errors(real, mod, chain)])) from None
            self._modules[real] = mod
        return mod

    def _cycle_errors(self, real: Path, mod: ast.Module, chain: tuple) -> list[Diagnostic]:
        """The errors of the failing ``load()`` statements of ``mod`` (file ``real``, reached
        by ``chain``) when they hold an ``E0202`` its evaluation would have raised (the same
        message and ``loaded from`` spans), else none. Loads are evaluated only when a chain of
        loads from ``real`` reaches a load cycle on the parsed load graph (:meth:`_reaches_cycle`):
        a file whose names do not resolve reports no more than before unless a cycle is reached."""
        if not self._reaches_cycle(real, {p for p, _ in chain}):
            return []
        load, found = self._loader(real, chain), []
        for stmt in mod.stmts:
            if type(stmt) is ast.Load:
                try:
                    load(stmt.path, stmt.path_span)
                except CompileError as exc:  # evaluation goes on past a failing statement too
                    found.extend(exc.diagnostics)
        return by_place(found) if any(d.code == "E0202" for d in found) else []  # as evaluation orders them

    def _load_targets(self, real: Path) -> list[tuple[Path, ast.Load]]:
        """(file, load statement) of each ``load()`` of ``real`` that names a workspace file;
        empty when ``real`` cannot be read or parsed (its evaluation reports why)."""
        found = self._targets.get(real)
        if found is not None:
            return found
        mod = self._modules.get(real) or self._parsed.get(real)
        if mod is None:
            try:
                mod = self._parsed[real] = parser.parse(self.source(real), session=self.session)
            except CompileError as exc:
                mod = self._parsed[real] = exc  # raised again by module(), not parsed twice
        out = self._targets[real] = []
        for stmt in mod.stmts if type(mod) is ast.Module else ():
            if type(stmt) is ast.Load:
                try:
                    out.append((self.resolve_load(stmt.path, real, stmt.path_span), stmt))
                except CompileError:
                    continue
        return out

    def _reaches_cycle(self, root: Path, on_chain: set) -> bool:
        """Whether a chain of loads from ``root`` (on the parsed load graph) loads ``root``, a
        file of ``on_chain``, or a file on it, again: a load cycle."""
        reach, todo = set(), [root]
        while todo:
            for dep, _ in self._load_targets(todo.pop()):
                if dep == root or dep in on_chain:
                    return True
                if dep not in reach:
                    reach.add(dep)
                    todo.append(dep)
        # a cycle among the files reached: they cannot all be taken off, files loading none first
        loads = {f: {d for d, _ in self._load_targets(f)} for f in reach}
        while loads:
            done = [f for f, deps in loads.items() if not deps & loads.keys()]
            if not done:
                return True
            for f in done:
                del loads[f]
        return False

    def check_load_depth(self, root: Path) -> None:
        """``E0801`` when a chain of loads from ``root`` holds more than
        :data:`~rcpc.core.limits.MAX_LOAD_DEPTH` files, found on the parsed load graph before
        anything is evaluated (iteratively: a chain of any length costs one parse a file, and
        each file's height is kept for the run). The error is at the last load of the longest
        chain, the same for every root above it, so a chain of N libraries is one error.
        Cycles are left to the evaluation (``E0202``)."""
        if self._height.get(root, 0) <= MAX_LOAD_DEPTH and root in self._height:
            return
        stack, on_path = [(root, iter(self._load_targets(root)))], {root}
        while stack:
            node, deps = stack[-1]
            for dep, _ in deps:
                if dep not in self._height and dep not in on_path:
                    stack.append((dep, iter(self._load_targets(dep))))
                    on_path.add(dep)
                    break
            else:
                stack.pop()
                on_path.discard(node)
                self._height[node] = 1 + max((self._height.get(d, -1) for d, _ in self._load_targets(node)
                                              if d != node), default=-1)
        if self._height[root] <= MAX_LOAD_DEPTH:
            return
        path, node, stmt = [], root, None
        while node not in self._too_deep:  # down the longest chain, to its last load
            path.append(node)
            targets = self._load_targets(node)
            if not targets:
                self._too_deep[node] = error(
                    "E0801", f"load chain deeper than {MAX_LOAD_DEPTH} files: {self._height[root]} files from "
                    f"{self.workspace.display(root)} to this load of {self.workspace.display(node)}",
                    stmt.path_span, hint="load shared constants from fewer levels of files")
                break
            node, stmt = max(targets, key=lambda t: self._height.get(t[0], -1))
        found = self._too_deep[node]
        self._too_deep.update((p, found) for p in path)
        raise found

    def _exported_by(self, real: Path, mod: ast.Module, name: str, chain: tuple):
        """The ``load()`` of ``mod`` (file ``real``, reached by ``chain``) whose file exports
        ``name``, or None. A loaded file that cannot be read or evaluated counts as exporting
        nothing here (its own errors are reported when it is loaded), and so does one on a
        load cycle (``real`` or a file of ``chain``, being resolved or evaluated: asking it
        again would recurse)."""
        on_chain = {p for p, _ in chain} | {real}
        for stmt in mod.stmts:
            if type(stmt) is not ast.Load or name.startswith("_"):
                continue
            try:
                dep = self.resolve_load(stmt.path, real, stmt.path_span)
                if dep not in on_chain and name in self.library(dep, chain + ((real, stmt.path_span),)):
                    return stmt
            except CompileError:
                continue
        return None

    def resolve_load(self, target: str, real: Path, span: Span) -> Path:
        """The file ``load(target)`` in file ``real`` (at ``span``) names
        (:meth:`rcpc.domain.workspace.Workspace.resolve_load`), found once a run for each load
        path and directory of a loading file (on what it depends: every recipe of a directory
        loads its libraries by one path, and each load is resolved for the load graph and again
        as it is evaluated; a run reads each file once too). Its errors are raised each time,
        at ``span``."""
        key = (target, real.parent)
        found = self._resolved.get(key)
        if found is None:
            found = self._resolved[key] = self.workspace.resolve_load(target, real, span)
        return found

    def forget_resolved(self) -> None:
        """Resolve load paths afresh from now on (:meth:`resolve_load`): for a tool that keeps
        a compiler while files change (the language server, after an edit)."""
        self._resolved.clear()

    def _loader(self, real: Path, chain: tuple):
        """The ``load(target, span)`` function of file ``real``'s evaluation (:meth:`_load`).
        It holds the compiler weakly: the functions a file defines keep their evaluator, and
        the compiler keeps those functions in the exports."""
        load = _weakly(self._load)
        return lambda target, span: load(real, chain, target, span)

    def _load(self, real: Path, chain: tuple, target: str, span: Span) -> dict:
        """The exports of the file ``target`` names in ``real`` (load path at ``span``),
        reached by ``chain``: ``E0202`` when it is ``real`` or a file of ``chain``."""
        dep = self.resolve_load(target, real, span)
        self._loads.setdefault(real, set()).add(dep)
        if dep in [p for p, _ in chain] or dep == real:
            names = [self.workspace.display(p) + f":{s.line}" for p, s in chain[1:]]
            cycle = " -> ".join([*names, f"{self.workspace.display(real)}:{span.line}",
                                 self.workspace.display(dep)])
            self._cycles += 1
            raise error("E0202", f"load cycle: {cycle}", span,
                        hint="break the cycle by moving shared constants into a third file")
        return self.library(dep, chain + ((real, span),))

    def library(self, real: Path, chain: tuple) -> dict:
        """Exports of a loaded file, evaluated once per run, failing or not. ``chain`` is the
        tuple of (file, load span) that led here, for cycles and ``loaded from`` notes.
        ``E0801`` past :data:`~rcpc.core.limits.MAX_LOAD_DEPTH` files. A failure is raised
        to every recipe (or library checked on its own) that loads the file as its own
        evaluation would: the first time in that root its warnings (and those of the failing
        files it loads) are added to the run's again, in the order evaluating it adds them. A
        failure that met a load cycle is evaluated again in each root (its message names the
        chain)."""
        exports = self._exports.get(real)
        if exports is not None:
            return exports
        if not chain:
            self._failed = {}
        frame = self._frames[-1] if self._frames else None
        if frame is not None:  # the warnings the loading file added so far are its own
            frame[1].extend(self.context.diagnostics[frame[0]:])
        failed = self._failed.get(real)
        if failed is None:
            failed = self._replay(real) if real in self._failures else self._evaluate_library(real, chain)
        if frame is not None:  # what loading this file added is the file's, not the loader's
            frame[0] = len(self.context.diagnostics)
        if failed is None:
            return self._exports[real]
        if real not in self._failures:
            self._cycles += 1  # so the loader's failure, if any, is not kept for the run either
        elif frame is not None and self._failures[real][1]:
            frame[1].append(real)
        if not chain:  # checked on its own (rcpc check of a library)
            raise failed
        raise _loaded_from(failed, chain[-1][1]) from None

    def _evaluate_library(self, real: Path, chain: tuple) -> CompileError | None:
        """Evaluate loaded file ``real``: None when it succeeds (its exports and warnings
        kept), else its error, kept for this root (:attr:`_failed`) and, when no load cycle
        was met, for the run (:attr:`_failures`) with its replay."""
        seen, cycles = len(self.context.diagnostics), self._cycles
        frame = [seen, []]
        self._frames.append(frame)
        try:
            mod = self.module(real, chain)
            # a later root finds the module resolved: what resolving it loaded is not redone
            frame[:] = [len(self.context.diagnostics), []]
            result = Evaluator(self._loader(real, chain), None, is_recipe=False,
                               ctx=self.context, universe=B.UNIVERSE).run(mod)
            if result.errors:  # reported while evaluating, which went on (flags MaxText refuses)
                raise CompileError(result.errors)
        except CompileError as exc:
            # reported once per error (the paths through a diamond reach a file more than once)
            failed = self._failed[real] = CompileError(unique(exc.diagnostics))
            if self._cycles == cycles:
                self._failures[real] = (failed, (*frame[1], *self.context.diagnostics[frame[0]:]))
            return failed
        else:
            self._exports[real] = result.exports
            self._warnings[real] = self.context.diagnostics[seen:]
            return None
        finally:
            self._frames.pop()

    def _replay(self, real: Path) -> CompileError:
        """The failure of ``real`` kept for the run, met for the first time in this root: its
        warnings, and those of the failing files it loads not met yet, added again."""
        failed, replay = self._failures[real]
        self._failed[real] = failed
        for item in replay:
            if type(item) is Diagnostic:
                self.context.diagnostics.append(item)
            elif item not in self._failed:
                self._replay(item)
        return failed

    def loaded_warnings(self, real: Path) -> list[Diagnostic]:
        """Warnings and notes of the files recipe ``real`` loads (transitively, by path). A
        loaded file is evaluated once a run, so its warnings are found for whichever recipe
        loads it first; they belong to every recipe that loads it. Call after evaluating it."""
        found: list[Diagnostic] = []
        for dep in sorted(self.dependencies(real) - {real}):
            found.extend(self._warnings.get(dep, ()))
        return found

    def in_recipe(self, real: Path, diags) -> list[Diagnostic]:
        """The warnings and notes found for recipe ``real`` as its author reads them
        (:func:`rcpc.domain.stdlib.attributed`): one whose span is in rcpc's standard library
        and that names no place of the workspace (a flag entry written there) gets, as
        ``loaded from``, the recipe's ``load()`` that reaches that file, and is shown there,
        where ``# rcpc: ignore[CODE]`` silences it. Call before :meth:`release`."""
        out = []
        for d in diags:
            if d.span is not None and stdlib.is_label(d.span.path) \
                    and all(stdlib.is_label(s.path) for _, s in d.related):
                dep = self.workspace.path_of(d.span.path)
                site = next((stmt.path_span for target, stmt in self._load_targets(real)
                             if target == dep or dep in self.dependencies(target)), None)
                if site is not None:
                    d = record.evolve(d, related=(*d.related, ("loaded from", site)))
            out.append(stdlib.attributed(d))
        return out

    def library_warnings(self, real: Path) -> list[Diagnostic]:
        """Warnings and notes found evaluating library ``real`` in this run (with those of the
        files it loads); empty when it has not been evaluated, or failed."""
        return list(self._warnings.get(real, ()))

    def _schema(self, target: str | None, span: Span):
        """The MaxText schema of a flag set: ``target`` (a path named by the flag set, as a
        load path; ``builtin:maxtext`` for the shipped one) or the workspace's
        ``maxtext_schema``; None when neither is given."""
        if target is None:
            path = self.workspace.maxtext_schema
            if path is None:
                return None
        elif target == BUILTIN:
            path = BUILTIN_PATH
        else:
            path = self.workspace.resolve_path(target, self.workspace.path_of(span.path), span, verb="read")
        self.schema_files.update(schema_sources(path))
        schema = self._schemas.get(path)
        if schema is None:
            shown = BUILTIN if path == BUILTIN_PATH else self.workspace.display(path)
            schema = self._schemas[path] = load_schema(path, span if target is not None else None, shown,
                                                       self.read, self.session)
        return schema

    def _schema_identity(self) -> str | None:
        """The identity of the workspace's Kubernetes schema files (their bytes, read once a
        run; "" for none), without parsing them; None when one cannot be read (the error is
        reported when they are loaded)."""
        if self._kube is not None:
            return self._kube.identity
        if self._kube_identity is None:
            from rcpc.domain.kube import schemacache

            try:
                files = [(self.workspace.display(p), self._schema_bytes(p), self._digest(p))
                         for p in self.workspace.kube_schemas]
            except OSError:
                return None
            self._kube_identity = schemacache.schema_identity(files) if files else ""
        return self._kube_identity

    def _schema_bytes(self, real: Path, limit: int = MAX_SCHEMA_BYTES) -> bytes:
        """The bytes of Kubernetes schema file ``real`` (:meth:`read`, ``limit``), read once a run:
        those :meth:`_schema_identity` read are kept for the :class:`SchemaIndex` made after it."""
        data = self._schema_read.get(real)
        if data is None:
            data = self._schema_read[real] = self.read(real, limit)
        return data

    def _digest(self, real: Path) -> bytes | None:
        """The digest (32 bytes) of the bytes :meth:`read` gave for ``real``, None when it gave none or two."""
        found = self.digests.get(real)
        return None if found is None else bytes.fromhex(found)

    def check_manifest(self, manifest: Manifest, text: str) -> list[Diagnostic]:
        """Kubernetes rules and, with ``kube_schemas``, schema validation (:mod:`rcpc.domain.kube.rules`):
        the errors found (warnings go with the run's other warnings). ``text`` is the
        manifest's render: the render determines the data (it reads back to it), so a render
        found clean once in this run is clean again (variants and lint share renders), and
        one found clean in an earlier run, with the same schema files, rcpc, ``strict_crd`` and
        JobSet feature gates, is clean from the validation cache
        (:func:`rcpc.domain.kube.schemacache.render_key`), as is one whose argv view (the argv
        words no check reads left out: a flag edited) was found clean (:meth:`_argv_view_key`).
        Without ``kube_schemas`` (no schema validation: the built-in rules alone, ~0.4 ms a
        JobSet) nothing is cached: making the keys and entries cost ~half as much again on a
        first build (issue 41: 600 JobSets at ``bench/peers.py`` N=100), more than a hit saves."""
        if text in self._clean:
            return []
        from rcpc.domain.kube import schemacache

        gates = self.workspace.jobset_feature_gates
        if not self.workspace.kube_schemas:
            return self._checked(manifest, text, gates, None, None)
        key = schemacache.render_key(self._schema_identity(), self.workspace.strict_crd, text, gates)
        if schemacache.lookup(key) == schemacache.NO_FINDINGS:
            self._clean.add(text)
            return []
        view = self._argv_view_key(manifest, gates)
        if schemacache.lookup(view) == schemacache.NO_FINDINGS:
            self._clean.add(text)
            return []
        return self._checked(manifest, text, gates, key, view)

    def _checked(self, manifest: Manifest, text: str, gates: frozenset, key: str | None, view: str | None):
        """:meth:`check_manifest`'s checks run: the errors found; a clean manifest kept under
        ``key`` and ``view`` (validation cache keys, None: not kept)."""
        from rcpc.domain.kube import rules as kube, schemacache
        from rcpc.domain.kube.schema import SchemaIndex

        if self._kube is None and self.workspace.kube_schemas:
            self._kube = SchemaIndex(list(self.workspace.kube_schemas), self.workspace.display,
                                     _weakly(self._schema_bytes), self.session,
                                     _weakly(self._digest))  # kept by the compiler: no cycle
            self._schema_read.clear()
        diags = kube.check_manifest(manifest.data, self._kube, self.workspace.strict_crd, gates, self.session)
        if not diags:
            self._clean.add(text)
            schemacache.store(key, schemacache.NO_FINDINGS)
            schemacache.store(view, schemacache.NO_FINDINGS)
        self.context.diagnostics.extend(d for d in diags if d.severity != "error")
        return [d for d in diags if d.severity == "error"]

    def _argv_view_key(self, manifest: Manifest, gates: frozenset) -> str | None:
        """The validation cache's key of ``manifest``'s argv view
        (:mod:`rcpc.domain.kube.argvview`: the argv words no check reads left out), under
        which a clean manifest is kept so that one differing from it only in such words (a
        flag edited) is clean too; None when the view does not apply (a schema file other
        than the built-in JobSet one) or the cache is off."""
        from rcpc.domain.kube import argvview, schemacache

        if self._view_applies is None:
            self._view_applies = argvview.applies(self.workspace.kube_schemas)
        if not self._view_applies or not schemacache.enabled():
            return None
        try:
            viewed = argvview.text(manifest.data, self._views)  # the manifests of a recipe share most nodes
        except RecursionError:
            return None
        return schemacache.view_key(self._schema_identity(), self.workspace.strict_crd, viewed, gates)

    def dependencies(self, real: Path) -> set[Path]:
        """Every file the recipe's renders depend on: the recipe, the files it loads
        (transitively), the schema files read and the kube schemas read in this run."""
        out: set[Path] = set()
        todo = [real]
        while todo:
            f = todo.pop()
            if f not in out:
                out.add(f)
                todo.extend(self._loads.get(f, ()))
        kube = set(self.workspace.kube_schemas) if self._kube is not None else set()
        return out | self.schema_files | kube | set(self._values)

    def read_digests(self, since: int = 0) -> dict[str, str]:
        """{path: digest hex} of every file read in this run (with one version); ``since``:
        only the files first read after the first ``since`` (a count :meth:`files_read` gave)."""
        items = self.digests.items()
        if since:
            items = itertools.islice(items, since, None)
        return {str(p): d for p, d in items if d is not None}

    def files_read(self) -> int:
        """How many files this run has read so far (for :meth:`read_digests`)."""
        return len(self.digests)

    def dependency_digests(self, real: Path) -> dict[str, str] | None:
        """{path: digest hex of the bytes compiled} of :meth:`dependencies`, plus every
        symlink followed in this run as {path as written: ``LINK`` + real path}; None when a
        dependency was read twice with different bytes (it changed during the run), so the
        result must not be cached."""
        out: dict[str, str] = {}
        for path in sorted(self.dependencies(real)):
            digest = self.digests.get(path)
            if digest is None:
                return None
            out[str(path)] = digest
        out.update((written, LINK + real_path) for written, real_path in self.workspace.links.items())
        return out

    def compile(self, real: Path, variant: str | None = None, sets=None, lint: bool = False) -> tuple:
        """Build recipe ``real`` as :meth:`build` does, check its variants' contracts (and
        lint it when ``lint``): ``(Recipe, [VariantBuild], [the warnings and notes a build
        prints])``, what ``rcpc build`` and ``rcpc check`` report of it (the tool stores it in
        the build cache, :func:`rcpc.build.cache.store_built`). The recipe is released after
        (:meth:`release`: memory stays flat; diagnostics quoting it read the file again).
        Raises :class:`~rcpc.core.diagnostics.CompileError` (a build's errors, a broken
        contract)."""
        seen = len(self.context.diagnostics)
        try:
            recipe, builds = self.build(real, variant, sets)
            diags = self.check_contracts(recipe, builds)
            if diags:
                raise CompileError(diags)
            return recipe, builds, self.build_warnings(real, recipe, builds, seen, lint)
        finally:
            self.release(real)

    def build_warnings(self, real: Path, recipe: Recipe, builds: list, seen: int, lint: bool = False) -> list:
        """The warnings and notes a build of recipe ``real`` prints, as ``recipe`` and
        ``builds`` made by this compiler after it had ``seen`` diagnostics: its own and those
        of the files it loads, as its author reads them (:meth:`in_recipe`), less those an
        ``# rcpc: ignore`` silences; with ``lint``, the linter's findings on them too (L
        codes). Call before :meth:`release`."""
        from rcpc.domain.lint import lint_built, unsilenced

        found = unsilenced(self, self.in_recipe(real, unique([*self.loaded_warnings(real),
                                                              *self.context.diagnostics[seen:]])))
        if lint:  # its own findings (L codes) on the builds just made; the compiler's warnings are in already
            found += [d for d in lint_built(self, real, recipe, builds)
                      if d.code.startswith("L") and d.severity != "error"]
        return found

    def release(self, real: Path) -> None:
        """Drop what this run keeps of recipe ``real`` (source text, AST, default evaluation
        and its trace, renders kept by identity, render texts found clean)
        once its results are taken, so memory stays flat over a large workspace. What it
        loaded stays cached; it is parsed again if it is asked for again."""
        self.sources.pop(self.workspace.display(real), None)
        self._modules.pop(real, None)
        if real in self._failures:  # a recipe that also failed as a loaded file: its text may change
            self._failures.clear()
        self._base.pop(real, None)
        self._base_exports.pop(real, None)
        self._traces.pop(real, None)
        self._emitted, self._containers, self._views = {}, {}, ({}, {})
        self._clean.clear()

    def diagnostics(self, include_notes: bool = False) -> list[Diagnostic]:
        """Warnings (and notes) found so far in this run, each once, in order found."""
        return unique(d for d in self.context.diagnostics if include_notes or d.severity != "note")

    # recipes ----------------------------------------------------------------------------
    def evaluate(self, real: Path, overrides: dict, declare_variants: bool = True, record: bool = False,
                 base=None):
        """Evaluate the recipe file with param ``overrides`` (values, or ``--set`` text);
        ``declare_variants`` False skips its ``variant(...)`` statements (a variant's build).
        ``record``/``base``: keep what each statement did, or redo the statements of such a
        trace that no override reaches (:mod:`rcpc.core.trace`)."""
        self._failed = {}  # a new root (resolving may load files already)
        mod = self.module(real, ((real, None),))
        return Evaluator(self._loader(real, ((real, None),)), overrides, is_recipe=True,
                         ctx=self.context, universe=B.UNIVERSE,
                         skip_calls=frozenset() if declare_variants else VARIANT_CALLS,
                         record=record, base=base).run(mod)

    def default_exports(self, real: Path) -> dict:
        """The recipe's top-level bindings with no overrides: kept from its default
        evaluation in this run (:meth:`build`), else evaluated now."""
        exports = self._base_exports.get(real)
        return exports if exports is not None else self.evaluate(real, {}).exports

    def bindings(self, real: Path, sets=None) -> dict:
        """The recipe's top-level bindings (name → value), evaluated with ``--set`` items (or
        an :class:`~rcpc.domain.overrides.Overrides`' param values). Raises the errors
        reported while evaluating (:meth:`Context.report`)."""
        result = self.evaluate(real, self.param_overrides(Overrides.of(sets))[0])
        if result.errors:
            raise CompileError(result.errors)
        return result.exports

    def recipe(self, real: Path) -> tuple[Recipe, VariantBuild]:
        """The recipe's declarations and its default evaluation."""
        recipe, build = self._recipe(real)
        self._raise_problems(recipe, [build])
        return recipe, build

    def _recipe(self, real: Path) -> tuple[Recipe, VariantBuild]:
        self._rendered = 0
        self._emitted, self._containers = {}, {}
        result = self.evaluate(real, {}, record=self.share_variants)
        self._traces[real] = result.trace
        params = {p.name: p for p in result.params}
        variants = _check_variants(result.variants, params)
        build = self._base[real] = self._variant_build(DEFAULT_VARIANT, result)
        self._base_exports[real] = result.exports
        return Recipe(real, self.workspace.recipe_name(real), tuple(result.params), variants), build

    def param_overrides(self, overrides: Overrides) -> tuple[dict, list]:
        """The param values of ``overrides``, layered (:mod:`rcpc.domain.overrides`): values
        files in order, then ``--set`` items. Returns ({name: value, or ``--set`` text}, [the
        :class:`~rcpc.domain.valuesfile.ValuesFile` of each file]). Raises as
        :meth:`values_file` and :func:`parse_sets`."""
        raw, files = {}, [self.values_file(Path(path), given) for path, given in overrides.values]
        for found in files:
            raw.update(found.values)
        raw.update(parse_sets(overrides.sets))
        return raw, files

    def values_file(self, path: Path, given: str):
        """The :class:`~rcpc.domain.valuesfile.ValuesFile` at ``path`` (absolute; ``given``:
        as the user named it), read once a run (:func:`rcpc.domain.valuesfile.load`: where it
        may lie, the limits, the errors), through :meth:`read`: it is a dependency of the build
        (the cache and replay check its bytes)."""
        from rcpc.domain.valuesfile import load, locate

        real, shown = locate(self.workspace, path, given)
        found = self._values.get(real)
        if found is None:
            found, text = load(real, shown, self.read)
            self.sources[shown] = Source(shown, text, str(real))
            self._values[real] = found
        return found

    def build(self, real: Path, variant: str | None = None, sets=None):
        """Evaluate a recipe for every declared variant (or the one named, or param
        overrides, ``--set`` items or an :class:`~rcpc.domain.overrides.Overrides`, as variant
        ``custom``). Returns (Recipe, [VariantBuild]). ``E0601`` for an overridden name
        that is not a declared param (at its key in a values file)."""
        self._rendered = 0
        overrides = Overrides.of(sets)
        if overrides:
            return self._build_custom(real, variant, overrides)
        recipe, default = self._recipe(real)
        chosen = recipe.variants if variant is None else [recipe.variant(variant)]
        builds = [self.evaluate_with(real, v.name, dict(v.sets.items), default) for v in chosen]
        self._raise_problems(recipe, builds)
        return recipe, builds

    def _build_custom(self, real: Path, variant: str | None, overrides: Overrides) -> tuple[Recipe, list]:
        """The build of :meth:`build` with ``overrides``, as variant ``custom``: param values
        (``--set``, ``--values``), else the params of ``variant`` (default: ``default``), and
        the ``--flag`` items applied to the renders (:mod:`rcpc.domain.flag_overrides`). A
        ``--flag`` build of a variant with a contract is checked against it (``E0610``,
        ``E0612``), its against variant built as declared."""
        from rcpc.domain.flag_overrides import apply_flags

        base = None
        if overrides.params:
            raw, files = self.param_overrides(overrides)
        else:
            declared, _ = self._recipe(real)
            base = declared.variant(variant or DEFAULT_VARIANT)
            raw = dict(base.sets.items)
        result = self.evaluate(real, raw)
        params = {p.name: p for p in result.params}
        if overrides.params:
            _check_overridden(overrides, files, params, self.workspace.recipe_name(real))
        recipe = Recipe(real, self.workspace.recipe_name(real), tuple(result.params),
                        _check_variants(result.variants, params))
        if overrides.flags:
            result.renders = apply_flags(result.renders, overrides.flags, self.context.warn)
        builds = [self._variant_build("custom", result)]
        self._raise_problems(recipe, builds)
        if base is not None and overrides.flags and base.against is not None and base.changes is not None:
            from rcpc.domain.contracts import check_contract

            other = recipe.variant(base.against)
            other = self.evaluate_with(real, other.name, dict(other.sets.items), self._base[real])
            found = check_contract(base, other, builds[0], self._embedded())
            if found:
                built = "built with " + " ".join(f"--flag {f}" for f in overrides.flags)
                raise CompileError([record.evolve(d, notes=(built,) + d.notes) for d in found])
        return recipe, builds

    def _raise_problems(self, recipe: Recipe, builds: list) -> None:
        """Raise the manifest errors of ``builds`` (variants of ``recipe``), each once: an
        error on a value made in a loaded file is reported at the render's declaration in
        the recipe, with the loaded file's line as ``value made here``; the recipe, variants
        and renders it occurs in are named in a note (also for any error when the recipe
        has several variants)."""
        shown = self.workspace.display(recipe.path)
        merged: dict = {}
        for b in builds:
            for d, span, fname in b.problems:
                if d.span is not None and d.span.path != shown and span.path == shown:
                    d = record.evolve(d, span=span, related=(("value made here", d.span),) + d.related)
                entry = merged.setdefault((d.code, d.message, d.span, d.related), (d, {}))
                entry[1].setdefault(b.variant, []).append(fname)
        out = []
        for d, where in merged.values():
            if len(recipe.variants) > 1 or d.related[:1] and d.related[0][0] == "value made here":
                d = record.evolve(d, notes=d.notes + tuple(
                    f"in recipe {recipe.name}, variant {v}: {', '.join(dict.fromkeys(f))}" for v, f in where.items()))
            out.append(d)
        if out:
            raise CompileError(out)

    def check_contracts(self, recipe: Recipe, builds: list) -> list[Diagnostic]:
        """Contract diagnostics of every built variant that declares one (:meth:`contracts`,
        one list)."""
        return [d for _, diags in self.contracts(recipe, builds) for d in diags]

    def contracts(self, recipe: Recipe, builds: list) -> list[tuple[str, list[Diagnostic]]]:
        """``[(variant, diagnostics)]`` of every built variant that declares a contract, in the
        order of ``builds`` (no diagnostics: it held); the variant it is against is evaluated
        too when it was not among ``builds``. Call before :meth:`release` (the contracts walk
        the renders' embeddings this build found: :meth:`_embedded`)."""
        from rcpc.domain.contracts import check_contract

        by_name = {b.variant: b for b in builds}
        variants = {v.name: v for v in recipe.variants}
        out: list = []
        for b in builds:
            v = variants.get(b.variant)
            if v is None or v.against is None or v.changes is None:
                continue
            other = by_name.get(v.against)
            if other is None:
                w = variants[v.against]
                other = by_name[v.against] = self.evaluate_with(
                    recipe.path, w.name, dict(w.sets.items), self._base[recipe.path])
                self._raise_problems(recipe, [other])
            out.append((b.variant, check_contract(v, other, b, self._embedded(), self._rebuild(recipe.path, v.name))))
        return out

    def _rebuild(self, real: Path, name: str):
        """``rebuild(sets)`` for :func:`rcpc.domain.contracts.check_contract`: variant ``name``
        built again with other param values, leaving no trace in the run (its warnings, the
        render count ``E0802`` bounds); None when that build fails."""
        def rebuild(sets: dict):
            rendered, warned = self._rendered, len(self.context.diagnostics)
            try:
                return self.evaluate_with(real, name, sets, self._base[real])
            except CompileError:
                return None
            finally:
                self._rendered = rendered
                del self.context.diagnostics[warned:]
        return rebuild

    def _embedded(self) -> dict:
        """The memo of the renders' embeddings this recipe's build keeps (the one
        :func:`rcpc.domain.launch.check_renders` fills, under ``"embed"``), for the contract
        checks, which walk the same values."""
        return self._containers.setdefault("embed", {})

    def evaluate_with(self, real: Path, name: str, overrides: dict, default: VariantBuild) -> VariantBuild:
        """One variant's build; reuses the default evaluation when nothing is overridden."""
        if not overrides:
            return record.evolve(default, variant=name)
        return self._variant_build(name, self.evaluate(real, overrides, declare_variants=False,
                                                       base=self._traces.get(real)))

    def _variant_build(self, name: str, result) -> VariantBuild:
        """The renders of one evaluation. Every finding is raised at once: the errors reported
        while evaluating (flags MaxText would refuse), each manifest's Kubernetes errors, and
        what MaxText checks at start (:mod:`rcpc.domain.launch`)."""
        from rcpc.domain.launch import check_renders

        renders = []
        problems = []
        found: list = list(result.errors)
        seen: dict[str, tuple[str, Span]] = {}   # folded file name → (file name, declared at)
        for value in result.renders:
            kind = kind_of(value)
            fname = kind.file_name(value)
            first = seen.get(fold(fname))
            if first is not None:
                named = f"named '{fname}'" if first[0] == fname else \
                    f"named '{first[0]}' and '{fname}', one file where case is ignored (macOS, Windows)"
                raise error("E0702", f"two renders are {named}", value.span,
                            related=(("first declared here", first[1]),),
                            hint="give each jobset/manifest/flag_file a distinct name")
            seen[fold(fname)] = (fname, value.span)
            if len(seen) > MAX_RENDERS:
                raise error("E0805", f"more than {MAX_RENDERS} renders", value.span,
                            hint="a recipe this large is a mistake (a loop over too long a list?): split it")
            # each value is bounded (MAX_NODES), but one can be rendered many times
            self._rendered += kind.weight(value)
            if self._rendered > MAX_NODES:
                raise error("E0802", f"the renders of this recipe hold more than {MAX_NODES} items "
                            "(every variant counted)", value.span,
                            hint="renders this large are a mistake; a value rendered many times counts each time")
            emitted = self._emitted.get(id(value))
            if emitted is not None and emitted[0] is value:  # a value another variant shares
                text = emitted[1]
            else:
                try:
                    text = kind.emit(value, self.session)
                except RecursionError:
                    raise error("E0801", "value nested too deeply to write", value.span, hint=LIMIT_HINT) from None
                self._emitted[id(value)] = (value, text)
            problems.extend((d, value.span, fname) for d in kind.check(self, value, text))
            renders.append(Render(fname, text, value))
        for d in check_renders(result.renders, self._containers):
            (found.append if d.severity == "error" else self.context.warn)(d)
        if found:  # with the manifests' errors, reported at once (their places as found)
            raise CompileError(by_place(unique([*found, *(d for d, _, _ in problems)])))
        return VariantBuild(name, dict(result.param_values), tuple(renders), tuple(problems))


def contract_variants(recipe: Recipe, builds: list) -> list[str]:
    """The names of the variants among ``builds`` whose declaration in ``recipe`` has a diff
    contract (``against`` and ``changes``), in the recipe's order."""
    built = {b.variant for b in builds}
    return [v.name for v in recipe.variants if v.name in built and v.against is not None and v.changes is not None]


def _weakly(method):
    """A function calling bound ``method`` that holds its object by a weak reference (a bound
    method held by an attribute of its own object is a reference cycle). Raises
    ReferenceError once the object is gone."""
    # not ``method``: it holds the object (weakref.WeakMethod's refs: the weakref module, ~0.7 ms
    # of a build's imports, is not needed for them)
    ref, function, name = _weak_ref(method.__self__), method.__func__, method.__qualname__

    def call(*args, **kwargs):
        obj = ref()
        if obj is None:
            raise ReferenceError(f"{name}: its object is gone")
        return function(obj, *args, **kwargs)
    return call


def _loaded_from(exc: CompileError, span: Span) -> CompileError:
    """Add the load statement that loaded the failing file; each level of a load chain adds
    its own, so the chain reads innermost first."""
    return CompileError([record.evolve(d, related=d.related + (("loaded from", span),))
                         for d in exc.diagnostics])


def _check_variants(variants: list, params: dict) -> tuple:
    """Variant names unique, ``set`` keys declared params of the right type, ``against``
    naming a declared variant. With no variant declared, the recipe has ``default``."""
    if not variants:
        return (Variant(DEFAULT_VARIANT, Dict({}, {}, COMMAND_LINE_SPAN), None, None, COMMAND_LINE_SPAN),)
    seen: dict[str, Variant] = {}
    folded: dict[str, Variant] = {}
    for v in variants:
        first = folded.get(fold(v.name))
        if first is not None:
            twice = "is declared twice" if first.name == v.name else \
                f"and variant '{first.name}' are one directory where case is ignored (macOS, Windows)"
            raise error("E0603", f"variant '{v.name}' {twice}", v.span,
                        related=(("first declared here", first.span),),
                        hint="give each variant its own name (names differ in more than case)")
        seen[v.name] = folded[fold(v.name)] = v
        for key, value in v.sets.items.items():
            if key not in params:
                raise error("E0601", f"variant '{v.name}' sets '{key}', which is not a param",
                            v.sets.key_spans.get(key, v.span),
                            hint=did_you_mean(key, params) or f"params: {', '.join(params) or 'none'}")
            p = params[key]
            B.check_param_value(p.type, value, key, p.choices)
    for v in variants:
        if v.against is not None and v.against not in seen:
            raise error("E0605", f"variant '{v.name}' is against '{v.against}', which is not declared",
                        v.span, hint=did_you_mean_or_list(v.against, seen, "variants"))
    return tuple(variants)


def _check_overridden(overrides: Overrides, files: list, params: dict, recipe: str) -> None:
    """``E0601`` for each name of a values file (at its key) and of a ``--set`` item that is
    not a declared param of ``params``, the params of recipe ``recipe`` (named: a build of
    several recipes applies the overrides to each), with the closest param's name: all of them
    at once (a values file with two misspelt keys reported the first only)."""
    hint = lambda name: did_you_mean(name, params) or f"params: {', '.join(params) or 'none'}"  # noqa: E731
    unknown = [(f"values file {f.shown} sets '{name}', which is not a param of {recipe}", span, name)
               for f in files for name, span in f.keys.items() if name not in params]
    unknown += [(f"--set {name}: no such param in {recipe}", None, name) for name in parse_sets(overrides.sets) if name not in params]
    # as a file's name errors, up to MAX_ERRORS (30,000 misspelt keys printed 150,000 lines), hints only for those
    found = [Diagnostic("E0601", message, span, hint=hint(name)) for message, span, name in unknown[:MAX_ERRORS]]
    if len(unknown) > MAX_ERRORS:
        found.append(Diagnostic("E0808", f"more than {MAX_ERRORS} names that are not params; the rest are not "
                                "reported", unknown[MAX_ERRORS][1], hint="fix the errors above first"))
    if found:
        raise CompileError(found)
