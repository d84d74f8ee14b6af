"""rcpc as a Python library (docs/api.md): what the ``rcpc`` command does, without printing.

* :class:`Workspace` — a workspace (the directory of an ``rcp.toml``): :meth:`~Workspace.build`,
  :meth:`~Workspace.render`, :meth:`~Workspace.check`, :meth:`~Workspace.explain`;
* :func:`parse` and :func:`format_source` — one file's text, in memory.

Errors in the input raise :class:`~rcpc.core.diagnostics.CompileError` (its ``diagnostics``
carry code, message, span and hint); a request that names nothing in the workspace raises
:class:`UsageError`. A run's state is not kept in module globals: each :class:`Workspace`
holds its own compiler and caches (the parser's tables are shared by the process, and one
parse runs at a time: call from one thread). The CLI (:mod:`rcpc.cli`) is a shell over this
module.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from rcpc.core import record
from rcpc.core.diagnostics import CompileError, Diagnostic, did_you_mean, unique
from rcpc.core.files import read_limited
from rcpc.core.session import Session
from rcpc.core.source import Source, file_span
from rcpc.domain import stdlib


class UsageError(ValueError):
    """A request that names no recipe, file or render of the workspace (the CLI's exit 2)."""


@record.frozen
class Build:
    """Compiled recipes, not written yet. ``recipes``: (recipe name, [(variant, [(file name,
    text)])], diagnostics, dependencies) per recipe, in the order asked; ``diagnostics``: the
    warnings found, each once; ``paths``: the recipe files; ``provenance``: {(recipe,
    variant): record} of each variant built with ``--set``/``--values``/``--flag`` overrides
    (:func:`rcpc.domain.overrides.provenance`), written into the output's manifest."""

    workspace: "Workspace"
    paths: tuple
    recipes: tuple
    diagnostics: tuple
    whole: bool  # every variant of each recipe was built (no --variant or --set)
    listed: bool  # the recipes were named (not: every recipe of the workspace)
    compared: object = None  # the rcpc.build.output.Comparison made while compiling, or None
    provenance: dict = record.field(factory=dict)

    @property
    def variants(self) -> list:
        """[(recipe, variant, [(file name, text)])] in build order."""
        return [(name, variant, renders) for name, builds, _, _ in self.recipes for variant, renders in builds]

    @property
    def renders(self) -> dict:
        """{(recipe, variant): {file name: text}}."""
        return {(name, variant): dict(renders) for name, variant, renders in self.variants}

    def write(self, output: str | os.PathLike | None = None, shown: str | None = None) -> int:
        """Write every render to ``output/<recipe>/<variant>/<file>`` (default: the
        workspace's ``output_dir``) as ``rcpc build`` does (:func:`rcpc.build.output.publish`:
        atomic per variant, files rcpc did not write kept or reported). Returns the number of
        variant directories written (unchanged ones are not rewritten), a
        :class:`rcpc.build.output.Written` that also says whether the record of overrides
        changed or directories were dropped. ``E0950`` when the
        output cannot be written."""
        from rcpc.build.output import publish

        ws = self.workspace.config
        out_dir = Path(output) if output is not None else ws.output_dir
        names = [name for name, _, _, _ in self.recipes]
        shown = shown or (str(output) if output is not None else ws.display(out_dir))
        _not_a_source_directory(ws, out_dir, shown)
        try:
            return publish(out_dir, self.variants, shown,
                           whole=set(names) if self.whole else set(),
                           known=None if self.listed else set(names),
                           origins={name: file_span(ws.display(path)) for name, path in zip(names, self.paths)},
                           compared=self.compared if self.compared and self.compared.out_dir == out_dir else None,
                           provenance=self.provenance)
        except OSError as exc:
            raise CompileError(Diagnostic("E0950", f"cannot write to {out_dir}: {_why_not(out_dir, exc)}", None,
                                          hint="the previous output, if any, is unchanged")) from None


_SOURCES = (("golden_dir", "golden directory"), ("recipe_dirs", "recipe directory"),
            ("library_dirs", "library directory"))


def _not_a_source_directory(ws, out_dir: Path, shown: str) -> None:
    """``E0910`` when ``out_dir`` is, or is inside, a directory of the workspace's sources
    (rcp.toml's ``golden_dir``, ``recipe_dirs``, ``library_dirs``): a build there would mix
    renders with the files it is made from (``-o golden`` was refused only where a recipe's
    directory existed, with a hint to delete it: the goldens). When ``out_dir`` is rcp.toml's
    ``output_dir``, the error is at that line of rcp.toml."""
    out = Path(os.path.realpath(out_dir))
    configured = out == Path(os.path.realpath(ws.output_dir))
    for key, what in _SOURCES:
        found = getattr(ws, key)
        for d in (found,) if isinstance(found, Path) else found:
            real = Path(os.path.realpath(d))
            if out == real or real in out.parents:
                raise CompileError(Diagnostic(
                    "E0910", f"cannot write to {shown}: it is {'' if out == real else 'inside '}the workspace's "
                    f"{what} {ws.display(real)} (rcp.toml's {key})",
                    ws.setting_span("output_dir") if configured else None,
                    hint=("set rcp.toml's output_dir to a directory outside the workspace's sources (its default "
                          "is rcpc-out), or give one with -o" if configured else
                          f"choose another output directory (-o), such as {ws.display(ws.output_dir)}, the "
                          "workspace's output_dir") + "; nothing was written"))


def _why_not(out_dir: Path, exc: OSError) -> str:
    """Why the output directory cannot be written, in the user's terms: the path on the
    way to it that exists but is no directory (EEXIST, ENOTDIR), else the system's reason."""

    if exc.errno in (errno.EEXIST, errno.ENOTDIR):
        for p in reversed((out_dir, *out_dir.parents)):
            try:
                mode = os.stat(p).st_mode
            except OSError:
                break
            if not stat.S_ISDIR(mode):
                kind = "a file" if stat.S_ISREG(mode) else "a special file"
                return f"{p} is {kind}, not a directory (-o and output_dir name the output directory)"
    return exc.strerror or str(exc)


@record.frozen
class Check:
    """What :meth:`Workspace.check` found: ``failures``, the diagnostics of each recipe and
    library that failed, in order; ``findings``, the warnings and notes of the others, each
    once; counts (``failed``: the recipes that failed, whose variants ``variants`` does not
    count); and ``dependencies`` (what each result depends on, for the replay record)."""

    failures: tuple
    findings: tuple
    errors: int
    recipes: int
    variants: int
    libraries: int
    dependencies: tuple
    failed: int = 0


@record.frozen
class Rendered:
    """One variant's renders: the recipe's name, the variant built (``custom`` for ``--set``
    values) and its :class:`~rcpc.domain.recipe.Render` list (``name``, ``text``, ``value``)."""

    recipe: str
    variant: str
    renders: tuple

    @property
    def files(self) -> dict:
        """{file name: text}."""
        return {r.name: r.text for r in self.renders}


def _no_recipe(ws, name: str) -> str:
    """The message for ``name``, which names no recipe of workspace ``ws``: the closest
    recipe name, else one of them, and what a recipe is."""
    from rcpc.domain.workspace import RECIPE_SUFFIX

    try:
        known = [ws.recipe_name(r) for r in ws.recipes()]
    except CompileError:  # reported when the workspace is built
        known = []
    word = Path(name).as_posix().removesuffix(RECIPE_SUFFIX)
    near = did_you_mean(word, known) or did_you_mean(Path(word).name, known)
    example = f" ({near})" if near else f" (a recipe is a name such as {known[0]})" if known else ""
    dirs = ", ".join(ws.display(d) for d in ws.recipe_dirs)
    return (f"no recipe {name!r} in this workspace{example}: recipes are the .rcp files under {dirs}, named by "
            f"their path there without .rcp (a .rcp file elsewhere is not one; library files are loaded by "
            f"recipes, not built)")


def with_options(config, maxtext_schema: str | None = None, kube_schemas: list[str] | None = None,
                 strict_crd: bool = False):
    """Workspace settings ``config`` with the schema options of :class:`Workspace` applied
    (paths relative to the current directory)."""
    if maxtext_schema:
        config = record.evolve(config, maxtext_schema=config.schema_path(maxtext_schema, Path.cwd()))
    if kube_schemas:
        config = record.evolve(config, kube_schemas=tuple(config.schema_path(p, Path.cwd()) for p in kube_schemas))
    if strict_crd:
        config = record.evolve(config, strict_crd=True)
    return config


class Workspace:
    """A workspace: the directory ``root`` or the nearest one above it with an ``rcp.toml``
    (or ``root`` itself with the defaults when there is none). ``maxtext_schema`` and
    ``kube_schemas`` replace the rcp.toml settings (paths relative to the current directory,
    or ``builtin:NAME``); ``strict_crd`` reports what only the raw CRD rejects.

    Compiled files are kept for the life of the object (one compiler, one run's caches):
    make a new :class:`Workspace` to see files changed since."""

    def __init__(self, root: str | os.PathLike = ".", *, maxtext_schema: str | None = None,
                 kube_schemas: list[str] | None = None, strict_crd: bool = False):
        from rcpc.domain.workspace import Workspace as Config

        # the rcp.toml settings (rcpc.domain.workspace.Workspace)
        self.config = with_options(Config.find(root), maxtext_schema, kube_schemas, strict_crd)
        self.session = Session()  # this workspace's caches (rcpc.core.session), its compiler's too
        self._compiler = None
        self._manifests: dict = {}  # display path → Source of the manifests validate() read

    @property
    def compiler(self):
        """The :class:`~rcpc.domain.recipe.Compiler` of this workspace, made on first use
        (a build served from the cache never needs one)."""
        if self._compiler is None:
            from rcpc.domain.recipe import Compiler

            self._compiler = Compiler(self.config, self.session)
        return self._compiler

    @property
    def sources(self) -> dict:
        """{display path: Source} of the files compiled or validated so far (for quoting
        diagnostics)."""
        return {**(self._compiler.sources if self._compiler is not None else {}), **self._manifests}

    def recipe_paths(self, names=()) -> list[Path]:
        """The recipe files of ``names`` (recipe names such as ``rl/x``, or ``.rcp`` paths),
        each once; every recipe of the workspace when ``names`` is empty. :class:`UsageError`
        for a name that is not a recipe of the workspace, or a workspace without recipes."""
        ws = self.config
        if not names:
            found = ws.recipes()
            if not found:
                raise UsageError(f"no recipes under {', '.join(ws.display(d) for d in ws.recipe_dirs)}")
            return found
        out = []
        for n in names:
            p = ws.find_recipe(n)
            if p is None:
                raise UsageError(_no_recipe(ws, n))
            out.append(p)
        return list(dict.fromkeys(out))

    def build(self, recipes=(), *, variant: str | None = None, sets: list[str] | None = None,
              values: list[str] | None = None, flags: list[str] | None = None,
              jobs: int = 1, output: str | os.PathLike | None = None) -> Build:
        """Compile ``recipes`` (recipe names, ``.rcp`` paths or directories, as :meth:`test`
        takes them; default: all) for every declared variant, or only ``variant``,
        or with ``sets`` (``NAME=VALUE`` param values) and ``values`` (values files, paths
        relative to the current directory; :mod:`rcpc.domain.overrides`), built as variant
        ``custom``; ``flags``: ``RENDER.KEY=VALUE`` MaxText flag overrides. From the
        build cache when nothing they read changed, else in ``jobs`` processes
        (:data:`rcpc.build.parallel.AUTO`: as ``-j auto`` decides). Raises the
        first failing recipe's :class:`CompileError`. :meth:`Build.write` writes the result.
        ``output``: the directory it will be written to, compared with the renders as
        workers compile them (:class:`rcpc.build.output.Comparison`), which makes the write faster."""
        from rcpc.build.cache import request
        from rcpc.domain.overrides import Overrides
        from rcpc.build.parallel import compile_recipes

        ws = self.config
        sets = Overrides.of(sets, values, flags)
        cache, options = request(ws, variant, sets)
        paths = self._named(recipes, libraries=False)[0] if recipes else self.recipe_paths([])
        compared = arrived = None
        if output is not None:
            from rcpc.build.output import Comparison

            compared = Comparison(Path(output))

            def arrived(path: Path, result: tuple) -> None:
                for v, renders in result[0]:
                    compared.add(ws.recipe_name(path), v, renders)

        compiled = compile_recipes(ws, lambda: self.compiler, cache, options, paths, variant, sets, jobs=jobs,
                                   arrived=arrived)
        for result in compiled:
            if isinstance(result, CompileError):  # the first failing recipe, as without workers
                raise result
        results = tuple((ws.recipe_name(path), *result) for path, result in zip(paths, compiled))
        found = unique(d for _, _, diags, _ in results for d in diags if d.severity != "note")
        return Build(self, tuple(paths), results, tuple(found), whole=not (variant or sets),
                     listed=bool(recipes), compared=compared, provenance=self._provenance(sets, variant, results))

    def _provenance(self, overrides, variant: str | None, results: tuple) -> dict:
        """{(recipe, variant): record} of the variants of ``results`` built with ``overrides``
        (:func:`rcpc.domain.overrides.provenance`); {} without any. Each values file is the
        one this run's compiler read when it compiled here (once a run: the same bytes), else
        read now, without a compiler (a build from the cache imports none), and must be the
        one every recipe was built from (its digest among the build's dependencies):
        ``E0630`` when it changed meanwhile, rather than a record of bytes the renders did not
        come from."""
        if not overrides:
            return {}
        from rcpc.domain.overrides import provenance
        from rcpc.domain.valuesfile import load, locate

        files = []
        for path, given in overrides.values:
            if self._compiler is not None:
                files.append(self._compiler.values_file(Path(path), given))
            else:
                files.append(load(*locate(self.config, Path(path), given), read_limited)[0])
        for f in files:
            if any(deps is not None and deps.get(f.path) != f.digest for _, _, _, deps in results):
                raise CompileError(Diagnostic("E0630", f"values file {f.shown} changed while rcpc built with it",
                                              None, hint="build again (nothing was written)"))
        return {(name, v): provenance(overrides, variant, files, [n for n, _ in renders])
                for name, builds, _, _ in results for v, renders in builds}

    def render(self, recipe: str, variant: str | None = None, sets: list[str] | None = None,
               values: list[str] | None = None, flags: list[str] | None = None) -> Rendered:
        """The renders of one variant of ``recipe`` (default: ``default``; with ``sets`` or
        ``values``, the param values given, as variant ``custom``; ``flags`` as in
        :meth:`build`), compiled in memory, nothing written."""
        from rcpc.domain.overrides import Overrides

        (path,) = self.recipe_paths([recipe])
        sets = Overrides.of(sets, values, flags)
        info, builds = self.compiler.build(path, variant or (None if sets else "default"), sets)
        return Rendered(info.name, builds[0].variant, tuple(builds[0].renders))

    def test(self, recipes=(), *, update: bool = False):
        """Golden-test ``recipes`` (recipe names, ``.rcp`` paths or directories; default: all), as ``rcpc
        test`` does (:func:`rcpc.review.golden.run_goldens`): each render compared with its
        golden file under ``golden_dir``, every contract run, obsolete goldens found (in the
        whole golden directory when every recipe is tested); ``update``: goldens written and
        deleted as ``pytest rcp.toml --snapshot-update`` does. Returns the
        :class:`rcpc.review.golden.Tested`; raises OSError when a golden cannot be written."""
        from rcpc.review.golden import run_goldens

        paths = self._named(recipes, libraries=False)[0] if recipes else self.recipe_paths([])
        return run_goldens(self, paths, whole=not recipes, update=update)

    def _named(self, paths, libraries: bool = True) -> tuple[list[Path], list[Path]]:
        """``(recipes, libraries)`` that ``paths`` name (recipe names such as ``rl/x``, ``.rcp``
        files, directories: every recipe and library under one; a recipe's name names that
        recipe even where a path of that name exists), each once, in order: what
        ``rcpc check`` and ``rcpc test`` run. A path is taken where it sits (its directory's
        real path): :class:`UsageError` when that is outside the workspace; ``E0906``
        (:class:`CompileError`) when a symlink leads out of it, ``E0907`` when it cannot be
        resolved (:meth:`rcpc.domain.workspace.Workspace.inside`). Without
        ``libraries`` (``rcpc test``), a path naming no recipe (a directory without one, a
        library file) is a :class:`UsageError`."""
        ws = self.config
        recipes: list[Path] = []
        found_libraries: list[Path] = []
        for p in paths:
            named = None if str(p).endswith(".rcp") else ws.find_recipe(str(p))
            if named is not None:  # a recipe's name names it, whatever the current directory holds
                recipes.append(named)  # (its output directory holds a directory of each name)
                continue
            if not os.path.lexists(p):  # a recipe name, not a path
                recipes.extend(self.recipe_paths([p]))
                continue
            q = self._inside(p)
            if q.is_dir():
                under = [r for r in ws.recipes() if q in r.parents]
                if not under and not libraries:
                    raise UsageError(f"no recipes under {p}")
                recipes.extend(under)
                if libraries:
                    found_libraries.extend(lib for lib in ws.libraries() if q in lib.parents)
            elif libraries and ws.is_library(q):
                found_libraries.append(q)
            else:
                recipes.extend(self.recipe_paths([p]))
        return list(dict.fromkeys(recipes)), list(dict.fromkeys(found_libraries))

    def _inside(self, p) -> Path:
        """The real path of the file or directory ``p``, taken where it sits (its directory's
        real path and its name): :class:`UsageError` when that is outside the workspace,
        ``E0906`` (:class:`CompileError`) when it is a symlink out of it (nothing read there),
        ``E0907`` when it cannot be resolved."""
        from rcpc.domain.workspace import entry

        ws = self.config
        q = entry(Path(p))
        if q != ws.root and ws.root not in q.parents:
            raise UsageError(f"{p} is outside the workspace {ws.root}")
        return ws.inside(q)

    def check(self, paths=(), *, jobs: int = 1, maxtext: str | os.PathLike | None = None,
              maxtext_python: str | None = None, maxtext_timeout: float | None = None) -> Check:
        """Evaluate every variant of the recipes under ``paths`` (recipe names, ``.rcp``
        files or directories; default: the whole workspace), run their contracts and lint,
        and evaluate the libraries (also those no recipe loads). Nothing is written but the
        build cache. Errors are returned, not raised: :attr:`Check.errors` counts them.

        With ``maxtext`` (a MaxText checkout; default: rcp.toml's ``maxtext_oracle``), MaxText's
        own config loader also runs on every flag set the recipes render, with
        ``maxtext_python`` (default: rcp.toml's ``maxtext_python``, else this interpreter):
        :mod:`rcpc.oracle`, its refusals ``E0360``; ``maxtext_timeout``: the seconds one run of
        the loader may take."""
        from rcpc.build.cache import request

        ws = self.config
        if paths:
            recipes, libraries = self._named(paths)
        else:
            recipes, libraries = self.recipe_paths([]), ws.libraries()
        checked = _check(ws, lambda: self.compiler, recipes, libraries, jobs, request(ws, None, None))
        oracle = self._oracle(recipes, maxtext, maxtext_python, maxtext_timeout, jobs)
        if not oracle:
            return checked
        failures = tuple(unique([*checked.failures, *oracle]))
        return record.evolve(checked, failures=failures, errors=sum(1 for d in failures if d.severity == "error"))

    def oracle_settings(self, maxtext=None, maxtext_python: str | None = None):
        """(MaxText path, interpreter, where they were named) of the oracle a check runs: the
        arguments, else rcp.toml's ``maxtext_oracle`` / ``maxtext_python``; (None, None, None)
        when no MaxText is named."""
        ws = self.config
        if maxtext is not None:
            return Path(maxtext), maxtext_python or ws.maxtext_python, None
        if ws.maxtext_oracle is not None:
            return ws.maxtext_oracle, maxtext_python or ws.maxtext_python, ws.setting_span("maxtext_oracle")
        return None, None, None

    def _oracle(self, recipes: list, maxtext, maxtext_python, timeout, jobs: int) -> list:
        """``E0360``-``E0362`` of MaxText's loader on every launch of ``recipes``
        (:mod:`rcpc.oracle`); ``E0361`` when it cannot run."""
        path, python, span = self.oracle_settings(maxtext, maxtext_python)
        if path is None:
            return []
        from rcpc.domain.launches import recipe_launches
        from rcpc.oracle import Oracle, check_launches
        from rcpc.build.parallel import AUTO, idle_cpus

        if jobs == AUTO:
            jobs = max(1, idle_cpus())
        try:
            oracle = Oracle(path, python, span, timeout=timeout, jobs=jobs,
                            shown=str(maxtext) if maxtext is not None else self.config.display(path),
                            session=self.session)
            found = []
            for real in recipes:
                try:
                    found += recipe_launches(self.compiler, real, self.config.maxtext_schema is None)
                except CompileError:
                    continue  # the recipe's own errors are reported by the check
            return check_launches(oracle, found)
        except CompileError as exc:
            return exc.diagnostics

    def explain(self, recipe: str, flag_set: str, key: str, variant: str | None = None,
                sets: list[str] | None = None, values: list[str] | None = None,
                flags: list[str] | None = None) -> dict:
        """Where flag ``key`` of ``flag_set`` (a top-level name bound to ``maxtext_flags``,
        or a flag render such as ``trainer``) gets its effective value, as plain data
        (:func:`rcpc.domain.explain.explain`: ``effective``, ``chain`` of layers, ``env``
        overrides, the schema default)."""
        from rcpc.domain.explain import explain
        from rcpc.domain.overrides import Overrides

        (path,) = self.recipe_paths([recipe])
        return explain(self.compiler, path, flag_set, key, variant, Overrides.of(sets, values, flags))

    def explain_effective(self, recipe: str, render: str, variant: str | None = None,
                          sets: list[str] | None = None, values: list[str] | None = None,
                          flags: list[str] | None = None) -> dict:
        """The whole config MaxText starts with for the flag set ``render`` carries, each
        value with where it comes from (:func:`rcpc.domain.explain.effective`)."""
        from rcpc.domain.explain import effective
        from rcpc.domain.overrides import Overrides

        (path,) = self.recipe_paths([recipe])
        return effective(self.compiler, path, render, variant, Overrides.of(sets, values, flags))

    def format(self, paths=(), *, jobs: int = 1) -> tuple[list, list]:
        """The canonical text of the ``.rcp`` files under ``paths`` (files or directories;
        default: the recipe directories), formatted in ``jobs`` processes (or :data:`rcpc.build.parallel.AUTO`), nothing written:
        ``([(file, new text | None when canonical | CompileError | FormatterBug)], errors)``,
        ``errors`` being the diagnostics of files not read (a symlink out of the workspace,
        ``E0906``). :class:`UsageError` for a path that does not exist or is outside the
        workspace."""
        from rcpc.domain.workspace import RECIPE_SUFFIX, entry
        from rcpc.build.parallel import format_files

        ws = self.config
        files: list[Path] = []
        errors: list = []
        for p in paths or [str(d) for d in ws.recipe_dirs]:
            q = Path(p)
            if q.is_dir():
                found = sorted(q.rglob("*" + RECIPE_SUFFIX))
            elif os.path.lexists(q):
                found = [q]
            else:
                raise UsageError(f"no such file or directory: {p}")
            if ws.root not in entry(q).parents:
                raise UsageError(f"{p} is outside the workspace {ws.root}")
            for x in found:
                try:
                    real = ws.inside(x)  # never a symlink out of the workspace (E0906)
                except CompileError as exc:
                    errors.extend(exc.diagnostics)
                    continue
                if real.is_file():
                    files.append(real)
                elif x is q:
                    raise UsageError(f"no such file: {p}")
        files = list(dict.fromkeys(files))
        return list(zip(files, format_files(ws, lambda: self.compiler, files, jobs))), errors

    def params(self, recipe: str) -> tuple:
        """The params ``recipe`` declares (:class:`~rcpc.domain.values.Param`: ``name``,
        ``type``, ``default`` (None: required), ``choices``, ``doc``), in declaration order."""
        (path,) = self.recipe_paths([recipe])
        info, _ = self.compiler.recipe(path)
        return info.params

    def diff(self, recipe: str, variant: str, against: str | None = None):
        """The renders of ``variant`` compared with those of ``against`` (default: the
        variant's own ``against``, else ``default``), as ``rcpc diff --variant`` reports them:
        ``(recipe name, against, [RenderDiff])`` (:func:`rcpc.review.report.compare`: each render's status,
        unified diff and what changed). ``E0607`` for a variant the recipe does not declare."""
        from rcpc.review import report as review

        (path,) = self.recipe_paths([recipe])
        info, _ = self.compiler.recipe(path)
        against = against or info.variant(variant).against or "default"
        info.variant(against)  # E0607 unless declared
        _, (new,) = self.compiler.build(path, variant)
        _, (old,) = self.compiler.build(path, against)
        return info.name, against, review.compare(old.renders, new.renders, f"{against}/", f"{variant}/")

    def lint(self, paths=()) -> list:
        """Lint findings (``L`` codes, :mod:`rcpc.domain.lint`) of the recipes and libraries
        under ``paths`` (default: all), not silenced by an ``# rcpc: ignore`` comment, sorted
        by place. :class:`UsageError` for a path outside the workspace, ``E0906``
        (:class:`CompileError`) for a symlink out of it, as :meth:`check` takes paths
        (:meth:`_inside`)."""
        from rcpc.domain.lint import lint

        for p in paths:
            if os.path.lexists(p):  # else a recipe name (or E0201)
                self._inside(p)
        return lint(self.compiler, paths)

    def validate(self, files) -> tuple:
        """Plain Kubernetes manifests (multi-document YAML files) through the checks recipes'
        manifests get (:func:`rcpc.domain.kube.rules.check_manifest`), with the configured schemas,
        else the built-in JobSet schema: ``(documents checked, diagnostics)``. The files read
        are kept in :attr:`sources` for quoting."""
        from rcpc.domain.kube.rules import check_manifest
        from rcpc.domain.kube.schema import SchemaIndex
        from rcpc.domain.kube.manifests import load_manifests

        ws = self.config
        index = SchemaIndex(list(ws.kube_schemas) or [ws.schema_path("builtin:jobset")], ws.display,
                            session=self.session)
        found: list = []
        documents = 0
        for name in files:
            real = Path(name).resolve()
            shown = ws.display(real)
            try:
                source, docs = load_manifests(real, shown, found)  # W1104 warnings into found
            except CompileError as exc:
                found.extend(exc.diagnostics)
                continue
            self._manifests[shown] = source
            documents += len(docs)
            for doc in docs:
                found.extend(check_manifest(doc, index, ws.strict_crd, ws.jobset_feature_gates, self.session))
        return documents, tuple(unique(found))


def check_file(compiler, path: str | os.PathLike) -> Check:
    """What :meth:`Workspace.check` reports for one ``.rcp`` file, given by its real path
    inside the workspace, compiled by ``compiler`` (a :class:`~rcpc.domain.recipe.Compiler`
    a tool keeps between runs: the language server's, :mod:`rcpc.lsp.session`) without the
    build cache. The file's text, and any other file's, is what ``compiler.sources`` holds,
    else what the disk holds: laid over it, an editor's unsaved buffers are checked, and the
    file need not be saved nor be a recipe yet. A file under ``library_dirs`` is evaluated
    as a library, any other as a recipe (every variant, contracts, lint). :class:`UsageError`
    for a path outside the workspace."""
    from rcpc.build.cache import request

    ws = compiler.workspace
    real = Path(path)
    if ws.root not in real.parents:
        raise UsageError(f"{path} is outside the workspace {ws.root}")
    cache, options = request(ws, None, None)
    cache.enabled = False
    library = ws.is_library(real)
    return _check(ws, lambda: compiler, [] if library else [real], [real] if library else [], 1, (cache, options))


def _check(ws, get_compiler, recipes: list, libraries: list, jobs: int, requested: tuple) -> Check:
    """:meth:`Workspace.check` of the recipe and library files given (real paths) of
    workspace settings ``ws``, compiled by ``get_compiler()``, with the build cache and
    options ``requested`` (:func:`rcpc.build.cache.request`)."""
    from rcpc.build.parallel import compile_recipes

    recipes = list(dict.fromkeys(recipes))
    diagnostics: list = []
    deps: list = []
    variants = 0
    cache, options = requested
    found: list = []
    failed = 0
    for result in compile_recipes(ws, get_compiler, cache, ["lint", *options], recipes, lint=True, jobs=jobs):
        if isinstance(result, CompileError):
            failed += 1
            diagnostics.extend(result.diagnostics)
        else:
            builds, diags, dep = result
            deps.append(dep)
            variants += len(builds)
            found.extend(diags)
    noted = 0  # files whose digests the cache has been told of (each told once: linear in libraries)
    for lib in dict.fromkeys(libraries):  # also the ones no recipe loads
        hit = cache.lookup(lib, ["library", *options])
        if hit is not None:
            deps.append(hit[2])
            continue
        compiler = get_compiler()
        try:
            compiler.library(lib, ())
            deps.append(cache.store(lib, ["library", *options], compiler.dependency_digests(lib), [], []))
        except CompileError as exc:
            diagnostics.extend(exc.diagnostics)
        cache.note(compiler.read_digests(noted))
        noted = compiler.files_read()
    # An error in a library is found by each recipe that loads it ("loaded from") and by
    # the library's own evaluation: reported once, the first time (with its load site).
    # One found in rcpc's standard library is shown at the recipe's load or call that reached it.
    diagnostics = unique(map(stdlib.attributed, diagnostics))
    errors = sum(1 for d in diagnostics if d.severity == "error")
    return Check(tuple(diagnostics), tuple(unique(map(stdlib.attributed, found))), errors, len(recipes), variants,
                 len(set(libraries)), tuple(deps), failed)


def parse(text: str, path: str = "<text>", session: Session | None = None):
    """The AST (:class:`rcpc.core.syntax.ast.Module`, comments attached on demand) of recipe
    source ``text``; ``path`` names it in diagnostics. Names are not resolved. Raises
    :class:`CompileError` (``E0001`` syntax, ``E0002`` bad escape). ``session``: the
    :class:`~rcpc.core.session.Session` (e.g. a :attr:`Workspace.session`) whose reference
    parser reads a text the fast parser declines (default: one made for this call, ~12 ms)."""
    from rcpc.core.syntax.parser import parse as parse_source

    return parse_source(Source(path, text), session=session)


def format_source(text: str, path: str = "<text>", session: Session | None = None) -> str:
    """The canonical form of recipe source ``text`` (docs/style.md), comments kept, as
    ``rcpc fmt`` writes it. Raises :class:`CompileError` for a syntax error. ``session`` as
    for :func:`parse`."""
    from rcpc.core.fmt import format_source as fmt

    return fmt(text, path, session)


def derive_schema(kind: str, path: str | os.PathLike, commit: str | None = None) -> str:
    """The text of a schema rcpc ships, derived from its source (``rcpc schema``): ``kind``
    ``maxtext``, the MaxText schema of the checkout at ``path`` (types.py, base.yml, models/;
    :func:`rcpc.domain.maxtext.schemagen.derive`; ``commit`` default: the checkout's git HEAD), or
    ``jobset``, the JobSet schema of the CRD file ``path``
    (``jobset.x-k8s.io_jobsets.yaml``; :func:`rcpc.domain.kube.crd.derive_schema`). Raises
    :class:`CompileError` for a source it cannot read or derive from."""
    if kind == "maxtext":
        from rcpc.domain.maxtext.schemagen import derive, dumps

        return dumps(derive(Path(path), commit=commit))
    from rcpc.domain.kube.crd import derive_schema as jobset

    return jobset(Path(path), commit)


def import_recipe(workspace: Workspace, kind: str, file: str, *, sets: list[str] | None = None,
                  variables: list[str] | None = None, output: str | None = None, force: bool = False):
    """The recipe ``rcpc import`` makes of ``file`` (as named on the command line): ``kind``
    ``manifest``, a manifest template with ``${VAR}`` placeholders (``sets``: ``VAR=VALUE``
    defaults, ``variables``: the placeholders that become params, as envsubst's SHELL-FORMAT),
    or ``shell``, a shell launch recipe; proven equal to it (:mod:`rcpc.importer.driver`).
    Returns the :class:`rcpc.importer.driver.Imported` (``text``, ``how``, ``notes``), nothing
    written. ``output``, the recipe file it is for, is checked first, before any work:
    ``E1202`` for an empty name, a directory, an existing file without ``force``, the input
    itself, a file of rcpc's standard library or one in a directory that does not exist. :class:`UsageError` when ``file`` does not
    exist; the import's errors (``E12xx``) as :class:`CompileError`."""
    from rcpc.importer import driver

    source = Path(file)
    if not os.path.lexists(source):  # as rcpc fmt: a usage error (exit 2), not an E12xx of the file
        raise UsageError(f"no such file: {file}")
    if output is not None:
        target = Path(output)
        problem = None
        if output == "":
            problem = "-o needs a file name"
        elif target.is_dir():
            problem = "is a directory"
        elif (target.exists() or target.is_symlink()) and not force:
            problem = "exists (rcpc import never replaces a file unless --force is given)"
        elif target.exists() and target.resolve() == source.resolve():
            problem = "is the input file"
        elif stdlib.contains(Path(os.path.realpath(target))):
            problem = f"it is in rcpc's standard library ({stdlib.DIRECTORY}): rcpc's own files are never written"
        elif not (target.parent if str(target.parent) else Path(".")).is_dir():
            problem = f"its directory {target.parent} does not exist (rcpc import makes no directory)"
        if problem:
            raise CompileError(Diagnostic("E1202", f"cannot write {output}: {problem}", None,
                                          hint="name a new .rcp file in an existing directory, or add --force to "
                                               "replace one"))
    if kind == "manifest":
        from rcpc.domain.recipe import parse_sets

        return driver.import_manifest(workspace.config, source, file, parse_sets(sets or []), variables)
    return driver.import_shell(workspace.config, source, file)


def check_import(workspace: Workspace, imported, file: str, recipe: str | os.PathLike) -> None:
    """Prove the recipe written at ``recipe`` equal to the input ``file`` of ``imported``
    (:func:`import_recipe`), compiled afresh as the workspace will compile it. Raises
    :class:`CompileError` ``E1203`` (the first differences) when it is not."""
    from rcpc.importer.driver import IMPORT_BUG_HINT
    from rcpc.importer.proof import fresh_compiler

    found = imported.check(fresh_compiler(workspace.config.root), Path(recipe).resolve())
    if found:
        raise CompileError(Diagnostic("E1203", f"the imported recipe is not equal to {file}: {found[0]}", None,
                                      notes=tuple(found[1:4]), hint=IMPORT_BUG_HINT))


def diff_revision(workspace: Workspace, rev: str, recipes=(), variant: str | None = None, *,
                  maxtext_schema: str | None = None, kube_schemas: list[str] | None = None,
                  strict_crd: bool = False):
    """The renders of ``workspace`` at git revision ``rev`` compared with the work tree's
    (``rcpc diff --rev``, :func:`rcpc.review.report.diff_revision`), both built by the running rcpc:
    ``recipes`` (default: every recipe on either side) × ``variant`` (default: every one) ×
    render, the schema options applied to both sides as :class:`Workspace` applies them.
    Returns the :class:`rcpc.review.report.RevisionDiff`. ``E0615`` (git), ``E0607`` (a variant on
    neither side) as :class:`CompileError`; :class:`UsageError` for a recipe on neither side."""
    from rcpc.review import report as review

    try:
        return review.diff_revision(workspace.config, rev, list(recipes), variant,
                                    lambda w: with_options(w, maxtext_schema, kube_schemas, strict_crd))
    except LookupError as exc:
        raise UsageError(f"no recipe {exc.args[0]!r} in the work tree or at {rev}") from None


def output_bookkeeping(output: str | os.PathLike):
    """What a build that finds its output already in place reads of the output directory's
    bookkeeping, for no-op replay to check the same (:func:`rcpc.build.output.bookkeeping`:
    ``(links, files, absent)``, or None when nothing may be replayed)."""
    from rcpc.build.output import bookkeeping

    return bookkeeping(Path(output))


def completion_candidates(kind: str, recipe: str | None = None, root: str | os.PathLike = ".") -> list[str]:
    """The words shell completion offers for ``kind`` in the workspace of ``root``:
    ``recipes`` (recipe names), or ``recipe``'s ``variants``, ``renders`` (file names) or
    ``params`` (as ``NAME=``). [] when there are none: no workspace, no such recipe, or a
    recipe that does not compile (completion never reports errors)."""
    try:
        workspace = Workspace(root)
        ws = workspace.config
        if kind == "recipes":
            return [ws.recipe_name(p) for p in ws.recipes()]
        path = ws.find_recipe(recipe or "")
        if path is None:
            return []
        rec, build = workspace.compiler.recipe(path)
    except (CompileError, OSError):
        return []
    if kind == "variants":
        return list(dict.fromkeys(["default", *(v.name for v in rec.variants)]))
    if kind == "renders":
        return [r.name for r in build.renders]
    return [f"{p.name}=" for p in rec.params]
