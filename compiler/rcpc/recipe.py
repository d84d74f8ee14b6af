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

from pathlib import Path

import attrs

from rcpc import builtins as B
from rcpc.limits import MAX_FILE_BYTES, MAX_RENDERS
from rcpc.diagnostics import CompileError, Diagnostic, by_place, did_you_mean, error, unique
from rcpc.emit.flags import flag_file
from rcpc.emit.yaml import EmitError, emit_document
from rcpc.evaluate import Context, Evaluator
from rcpc.maxtext import argv
from rcpc.resolve import resolve
from rcpc.schema import BUILTIN, BUILTIN_PATH, load_schema, schema_sources
from rcpc.source import COMMAND_LINE_SPAN, Source, Span
from rcpc.syntax import ast
from rcpc.syntax.parser import parse
from rcpc.values import Dict, FlagFile, FlagSet, Manifest, Variant
from rcpc.workspace import Workspace

DEFAULT_VARIANT = "default"


@attrs.frozen
class Render:
    """One output file: ``name`` (``trainer.yaml``), its exact ``text``, and the value it was
    emitted from (a Manifest or FlagFile)."""

    name: str
    text: str
    value: object


@attrs.frozen
class VariantBuild:
    """A recipe evaluated for one variant: the variant's name, the param values used and the
    renders in declaration order."""

    variant: str
    params: dict
    renders: tuple


@attrs.frozen
class Recipe:
    """A recipe's declarations (from its default evaluation)."""

    path: Path
    name: str
    params: tuple
    variants: tuple


class Compiler:
    """Compiles recipes of one workspace; holds the per-run caches."""

    def __init__(self, workspace: Workspace):
        self.workspace = workspace
        self.sources: dict[str, Source] = {}     # display path → Source (for diagnostics)
        self._modules: dict[Path, ast.Module] = {}
        self._exports: dict[Path, dict] = {}
        self._base: dict[Path, VariantBuild] = {}   # each recipe's evaluation with no overrides
        self._schemas: dict[Path, object] = {}
        self._kube = None
        self._loads: dict[Path, set] = {}           # file → files it loads
        self._warnings: dict[Path, list] = {}       # file → warnings found evaluating it
        self.schema_files: set[Path] = set()        # schema files read in this run
        self.context = Context(self._schema)          # shared by every evaluation of the run

    # files ------------------------------------------------------------------------------
    def source(self, real: Path) -> Source:
        display = self.workspace.display(real)
        src = self.sources.get(display)
        if src is None:
            try:
                data = real.read_bytes()
            except OSError as exc:
                raise error("E0201", f"cannot read {display}: {exc.strerror}", None) from None
            if len(data) > MAX_FILE_BYTES:
                raise error("E0803", f"{display} is {len(data)} bytes, over the limit of {MAX_FILE_BYTES}",
                            Span(display, 1, 1, 1, 1))
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                line = data[:exc.start].count(b"\n") + 1
                raise error("E0003", f"{display} is not UTF-8 text", Span(display, line, 1, line, 1)) from None
            src = self.sources[display] = Source(display, text, str(real))
        return src

    def module(self, real: Path) -> ast.Module:
        """Parsed and name-resolved AST of a file (cached)."""
        mod = self._modules.get(real)
        if mod is None:
            mod = parse(self.source(real))
            resolve(mod, B.NAMES)
            self._modules[real] = mod
        return mod

    def _loader(self, real: Path, chain: tuple):
        def load(target: str, span: Span) -> dict:
            dep = self.workspace.resolve_load(target, real, span)
            self._loads.setdefault(real, set()).add(dep)
            if dep in [p for p, _ in chain] or dep == real:
                names = [self.workspace.display(p) + f":{s.line}" for p, s in chain[1:]]
                cycle = " -> ".join([*names, f"{self.workspace.display(real)}:{span.line}",
                                     self.workspace.display(dep)])
                raise error("E0202", f"load cycle: {cycle}", span,
                            hint="break the cycle by moving shared constants into a third file")
            return self.library(dep, chain + ((real, span),))
        return load

    def library(self, real: Path, chain: tuple) -> dict:
        """Exports of a loaded file (evaluated once per run). ``chain`` is the tuple of
        (file, load span) that led here, for cycles and ``loaded from`` notes."""
        exports = self._exports.get(real)
        if exports is None:
            seen = len(self.context.diagnostics)
            try:
                mod = self.module(real)
                result = Evaluator(self._loader(real, chain), None, is_recipe=False,
                                   ctx=self.context).run(mod)
            except CompileError as exc:
                if not chain:  # checked on its own (rcpc check of a library)
                    raise
                raise _loaded_from(exc, chain[-1][1]) from None
            if result.errors:
                if not chain:
                    raise CompileError(result.errors)
                raise _loaded_from(CompileError(result.errors), chain[-1][1])
            exports = self._exports[real] = result.exports
            self._warnings[real] = self.context.diagnostics[seen:]
        return exports

    def loaded_warnings(self, real: Path) -> list[Diagnostic]:
        """Warnings and notes of the files recipe ``real`` loads (transitively, by path). A
        loaded file is evaluated once a run, so its warnings are found for whichever recipe
        loads it first; they belong to every recipe that loads it. Call after evaluating it."""
        found: list[Diagnostic] = []
        for dep in sorted(self.dependencies(real) - {real}):
            found.extend(self._warnings.get(dep, ()))
        return found

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
            path = self.workspace.resolve_path(target, self.workspace.root / span.path, span, verb="read")
        self.schema_files.update(schema_sources(path))
        schema = self._schemas.get(path)
        if schema is None:
            shown = BUILTIN if path == BUILTIN_PATH else self.workspace.display(path)
            schema = self._schemas[path] = load_schema(path, span if target is not None else None, shown)
        return schema

    def _check_manifest(self, manifest: Manifest) -> list[Diagnostic]:
        """Kubernetes rules and, with ``kube_schemas``, schema validation (:mod:`rcpc.kube`)."""
        from rcpc import kube

        if self._kube is None and self.workspace.kube_schemas:
            self._kube = kube.SchemaIndex(list(self.workspace.kube_schemas), self.workspace.display)
        return kube.check_rules(manifest.data) + kube.check_schema(manifest.data, self._kube)

    def dependencies(self, real: Path) -> set[Path]:
        """Every file the recipe's renders depend on: the recipe, the files it loads
        (transitively), the schema files read and the kube schemas configured."""
        out: set[Path] = set()
        todo = [real]
        while todo:
            f = todo.pop()
            if f not in out:
                out.add(f)
                todo.extend(self._loads.get(f, ()))
        return out | self.schema_files | set(self.workspace.kube_schemas)

    def release(self, real: Path) -> None:
        """Drop what this run keeps of recipe ``real`` (source text, AST, default evaluation)
        once its results are taken, so memory stays flat over a large workspace. What it
        loaded stays cached; it is parsed again if it is asked for again."""
        self.sources.pop(self.workspace.display(real), None)
        self._modules.pop(real, None)
        self._base.pop(real, None)

    def diagnostics(self, include_notes: bool = False) -> list[Diagnostic]:
        """Warnings (and notes) found so far in this run, each once, in order found."""
        return unique(d for d in self.context.diagnostics if include_notes or d.severity != "note")

    # recipes ----------------------------------------------------------------------------
    def evaluate(self, real: Path, overrides: dict):
        """Evaluate the recipe file with param ``overrides`` (values, or ``--set`` text)."""
        mod = self.module(real)
        return Evaluator(self._loader(real, ((real, None),)), overrides, is_recipe=True,
                         ctx=self.context).run(mod)

    def bindings(self, real: Path, sets: list[str] | None = None) -> dict:
        """The recipe's top-level bindings (name → value), evaluated with ``--set`` items.
        Raises the errors reported while evaluating (:meth:`Context.report`)."""
        result = self.evaluate(real, parse_sets(sets or []))
        if result.errors:
            raise CompileError(result.errors)
        return result.exports

    def recipe(self, real: Path) -> tuple[Recipe, VariantBuild]:
        """The recipe's declarations and its default evaluation."""
        result = self.evaluate(real, {})
        params = {p.name: p for p in result.params}
        variants = _check_variants(result.variants, params)
        build = self._base[real] = self._variant_build(DEFAULT_VARIANT, result)
        return Recipe(real, self.workspace.recipe_name(real), tuple(result.params), variants), build

    def build(self, real: Path, variant: str | None = None, sets: list[str] | None = None):
        """Evaluate a recipe for every declared variant (or the one named, or ``--set``
        overrides as variant ``custom``). Returns (Recipe, [VariantBuild]).
        ``E0601`` for a ``--set`` name that is not a declared param."""
        if sets:
            raw = parse_sets(sets)
            result = self.evaluate(real, raw)
            params = {p.name: p for p in result.params}
            for name in raw:
                if name not in params:
                    raise error("E0601", f"--set {name}: no such param", None,
                                hint=did_you_mean(name, params) or f"params: {', '.join(params) or 'none'}")
            recipe = Recipe(real, self.workspace.recipe_name(real), tuple(result.params),
                            _check_variants(result.variants, params))
            return recipe, [self._variant_build("custom", result)]
        recipe, default = self.recipe(real)
        chosen = recipe.variants
        if variant is not None:
            chosen = [v for v in recipe.variants if v.name == variant]
            if not chosen:
                names = [v.name for v in recipe.variants]
                raise error("E0607", f"recipe {recipe.name} has no variant '{variant}'", None,
                            hint=did_you_mean(variant, names) or f"variants: {', '.join(names)}")
        builds = [self.evaluate_with(real, v.name, dict(v.sets.items), default) for v in chosen]
        return recipe, builds

    def check_contracts(self, recipe: Recipe, builds: list) -> list[Diagnostic]:
        """Contract diagnostics of every built variant that declares one; the variant it is
        against is evaluated too when it was not among ``builds``."""
        from rcpc.contracts import check_contract

        by_name = {b.variant: b for b in builds}
        variants = {v.name: v for v in recipe.variants}
        diags: list[Diagnostic] = []
        for b in builds:
            v = variants.get(b.variant)
            if v is None or v.against is None or v.changes is None:
                continue
            other = by_name.get(v.against)
            if other is None:
                w = variants[v.against]
                other = by_name[v.against] = self.evaluate_with(
                    recipe.path, w.name, dict(w.sets.items), self._base[recipe.path])
            diags.extend(check_contract(v, other, b))
        return diags

    def evaluate_with(self, real: Path, name: str, overrides: dict, default: VariantBuild) -> VariantBuild:
        """One variant's build; reuses the default evaluation when nothing is overridden."""
        if not overrides:
            return attrs.evolve(default, variant=name)
        return self._variant_build(name, self.evaluate(real, overrides))

    def _variant_build(self, name: str, result) -> VariantBuild:
        """The renders of one evaluation. Every finding is raised at once: the errors reported
        while evaluating (flags MaxText would refuse), each manifest's Kubernetes errors, and
        what MaxText checks at start (:mod:`rcpc.launch`)."""
        from rcpc.launch import check_renders

        renders = []
        found: list = list(result.errors)
        seen: dict[str, Span] = {}
        for value in result.renders:
            fname = f"{value.name}.yaml" if type(value) is Manifest else f"{value.name}.flags"
            if fname in seen:
                raise error("E0702", f"two renders are named '{fname}'", value.span,
                            related=(("first declared here", seen[fname]),),
                            hint="give each jobset/manifest/flag_file a distinct name")
            seen[fname] = value.span
            if len(seen) > MAX_RENDERS:
                raise error("E0805", f"more than {MAX_RENDERS} renders", value.span)
            try:
                text = _emit(value)
            except RecursionError:
                raise error("E0801", "value nested too deeply to write", value.span) from None
            if type(value) is Manifest:
                found.extend(self._check_manifest(value))
            renders.append(Render(fname, text, value))
        flag_sets = [*result.flag_sets, *(v for v in result.exports.values() if type(v) is FlagSet)]
        for d in check_renders(result.renders, flag_sets):
            (found.append if d.severity == "error" else self.context.warn)(d)
        if found:
            raise CompileError(by_place(unique(found)))
        return VariantBuild(name, dict(result.param_values), tuple(renders))


def _emit(value) -> str:
    if type(value) is FlagFile:
        return flag_file(argv(value.flags))
    try:
        return emit_document(value.data)
    except EmitError as exc:
        raise error("E0703", str(exc), exc.value.span,
                    hint="manifests hold dicts, lists, strings, numbers, bools and None") from None


def _loaded_from(exc: CompileError, span: Span) -> CompileError:
    """Add the load statement that loaded the failing file; each level of a load chain adds
    its own, so the chain reads innermost first."""
    return CompileError([attrs.evolve(d, related=d.related + (("loaded from", span),))
                         for d in exc.diagnostics])


def _check_variants(variants: list, params: dict) -> tuple:
    """Variant names unique, ``set`` keys declared params of the right type, ``against``
    naming a declared variant. With no variant declared, the recipe has ``default``."""
    if not variants:
        return (Variant(DEFAULT_VARIANT, Dict({}, {}, COMMAND_LINE_SPAN), None, None, COMMAND_LINE_SPAN),)
    seen: dict[str, Variant] = {}
    for v in variants:
        if v.name in seen:
            raise error("E0603", f"variant '{v.name}' is declared twice", v.span,
                        related=(("first declared here", seen[v.name].span),))
        seen[v.name] = v
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
                        v.span, hint=did_you_mean(v.against, seen))
    return tuple(variants)


def parse_sets(sets: list[str]) -> dict[str, str]:
    """``NAME=VALUE`` strings from ``--set`` → {name: text}; the text is typed by the param
    when it is declared (:func:`rcpc.builtins.param_value_from_text`). ``E0608`` for an item
    without ``=``."""
    out = {}
    for item in sets:
        name, eq, text = item.partition("=")
        if not eq or not name:
            raise error("E0608", f"--set {item!r} is not NAME=VALUE", None)
        out[name] = text
    return out
