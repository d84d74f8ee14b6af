"""``rcpc lint``: findings about recipes that compile but are probably not what was meant.

:func:`lint` returns :class:`~rcpc.core.diagnostics.Diagnostic` values (severity ``warning`` or
``note``; codes ``L0xxx``), sorted by place:

========  ========  ==================================================================
code      severity  finding
========  ========  ==================================================================
L0001     warning   a constant never used in its file (in a library: a private ``_name``)
L0002     warning   a param never used in its recipe
L0003     warning   a loaded name never used (in a library: a private ``_alias``)
L0004     warning   a param used in its recipe but by no render (only by ``require``,
                    ``variant`` or values no render reaches)
L0005     warning   a variant whose renders are byte-identical to its ``against`` (not a
                    sweep's point: a sweep may hold its baseline)
                    variant's (not reported when it declares ``changes = {}``: then that
                    is the contract)
L0006     note      one flag set spells its bools both ``True``/``False`` and
                    ``true``/``false`` (MaxText reads them alike; rcpc keeps spellings on
                    purpose, so this is a note, not a fix)
L0650     warning   a function's argument never used in its body (not for ``_name``)
L0651     warning   a function's local assigned but never used
L0652     warning   a function's argument or local that shadows a top-level name of its
                    file or a built-in
========  ========  ==================================================================

In a library, public names are exported, so an unused public constant or load is not a
finding. Warnings the compiler itself gives while evaluating the linted recipes (such as
``W0330``, a no-op flag override, and ``W0707``) are included as they are, not re-derived.
A file that does not compile yields its errors (severity ``error``) instead of lint findings.

A finding is silenced by a comment on the line where it is reported (or on the last line of
the statement that starts there): ``# rcpc: ignore[L0001]`` or ``# rcpc: ignore[L0001,L0004]``.
The same comments silence the compiler's warnings and notes (``W0321``, ``N0331``, ...) in
``rcpc build`` and ``rcpc check`` (:func:`unsilenced`); an error cannot be silenced.
"""

from __future__ import annotations

from pathlib import Path
from collections.abc import Iterable

from rcpc.core.builtins import NAMES
from rcpc.core.diagnostics import NOTE, WARNING, CompileError, Diagnostic, did_you_mean_or_list
from rcpc.core.patterns import LazyPattern
from rcpc.core.resolve import ARGUMENT, COMPREHENSION, LOCAL, assigned_names
from rcpc.core.syntax import ast
from rcpc.core.syntax.walk import walk
from rcpc.core.values import Bool, Dict, List
from rcpc.domain.builtins import UNIVERSE
from rcpc.domain.values import FlagFile, FlagSet

__all__ = ["lint", "CODES", "ignored_codes", "unsilenced"]

CODES = {
    "L0001": "unused constant",
    "L0002": "unused param",
    "L0003": "unused load",
    "L0004": "param used by no render",
    "L0005": "variant identical to the variant it is against",
    "L0006": "mixed bool spellings in one flag set",
    "L0650": "unused function argument",
    "L0651": "unused local",
    "L0652": "shadowed name",
}

_IGNORE = LazyPattern(r"#.*?\brcpc:\s*ignore\[\s*([A-Za-z0-9_]+(?:\s*,\s*[A-Za-z0-9_]+)*)\s*\]")
# calls whose value a recipe declares as a statement (an unused one is W0707's, not L0001's)
_RENDER_CALLS = frozenset(n for n, f in UNIVERSE.functions.items() if f.makes != "value")
_NOT_RENDERS = frozenset(n for n, f in UNIVERSE.functions.items() if f.makes == "variant") | {"require"}


def lint(compiler, paths: Iterable[str | Path] = ()) -> list[Diagnostic]:
    """Lint recipe and library files with ``compiler`` (a :class:`rcpc.domain.recipe.Compiler`).

    ``paths`` are .rcp files, directories (every recipe and library under them) or recipe
    names (``rl/x``); none means every recipe and library of the workspace. Returns the
    findings not silenced by an ``ignore`` comment, sorted by file, line and column."""
    ws = compiler.workspace
    files = _files(ws, list(paths))
    found: list[Diagnostic] = []
    for item in files:
        if isinstance(item, Diagnostic):
            found.append(item)
            continue
        try:
            found.extend(_lint_file(compiler, item))
        except CompileError as exc:
            found.extend(exc.diagnostics)
    found.extend(compiler.diagnostics())  # the compiler's own warnings (W0330, W0707, ...)
    out: list[Diagnostic] = []
    seen = set()
    cache: dict = {}
    for d in found:
        key = (d.code, d.message, d.span)
        if key in seen or _silenced(compiler, d, cache):
            continue
        seen.add(key)
        out.append(d)
    out.sort(key=lambda d: (d.span.path, d.span.line, d.span.col, d.code) if d.span else ("", 0, 0, d.code))
    return out


def lint_built(compiler, real: Path, recipe, builds) -> list[Diagnostic]:
    """The lint findings (L codes) of recipe ``real``, already built by ``compiler`` as
    ``recipe`` and ``builds`` (:meth:`rcpc.domain.recipe.Compiler.build`, every variant): what
    :func:`lint` finds for it, without building it a second time (``rcpc check``). Silenced
    findings are left out; sorted by place."""
    found = unsilenced(compiler, _lint_file(compiler, real, (recipe, builds)))
    return sorted(dict.fromkeys(found), key=lambda d: (d.span.path, d.span.line, d.span.col, d.code)
                  if d.span else ("", 0, 0, d.code))


def unsilenced(compiler, diags) -> list[Diagnostic]:
    """``diags`` without the warnings and notes an ``# rcpc: ignore[CODE]`` comment silences
    (the rule of this module's docstring; ``rcpc build`` and ``rcpc check`` apply it to every
    warning they print). Errors are never silenced."""
    cache: dict = {}
    return [d for d in diags if not _silenced(compiler, d, cache)]


def ignored_codes(module: ast.Module) -> dict[int, set[str]]:
    """``{line: {codes}}`` of the ``# rcpc: ignore[...]`` comments of a parsed module."""
    out: dict[int, set[str]] = {}
    for c in module.comments:
        m = _IGNORE.search(c.text)
        if m:
            out.setdefault(c.span.line, set()).update(x.strip().upper() for x in m.group(1).split(","))
    return out


# files -------------------------------------------------------------------------------------
def _files(ws, paths: list) -> list:
    if not paths:
        return list(dict.fromkeys([*ws.recipes(), *ws.libraries()]))
    out: list = []
    for p in paths:
        q = Path(p)
        if q.is_dir():
            q = q.resolve()
            out.extend(r for r in ws.recipes() if q in r.parents)
            out.extend(lib for lib in ws.libraries() if q in lib.parents)
        elif q.is_file():
            out.append(q.resolve())
        else:
            found = ws.find_recipe(str(p))
            if found is None:
                names = [ws.recipe_name(r) for r in ws.recipes()]
                out.append(Diagnostic("E0201", f"cannot lint {p}: no such file, directory or recipe", None,
                                      hint=did_you_mean_or_list(str(p), names, "name a .rcp file, a directory or "
                                                                "a recipe; recipes")))
            else:
                out.append(found)
    return list(dict.fromkeys(out))


# one file ----------------------------------------------------------------------------------
def _lint_file(compiler, real: Path, built: tuple | None = None) -> list[Diagnostic]:
    """``built``: the recipe's (Recipe, builds) when it was built already."""
    module = compiler.module(real)  # parse + resolve; raises CompileError
    is_library = compiler.workspace.is_library(real)
    diags = _unused(module, is_library) + _functions(module)
    if is_library:
        compiler.library(real, ())  # evaluation errors and compiler warnings
        return diags
    diags.extend(_params_without_renders(module))
    recipe, builds = built if built is not None else compiler.build(real)
    diags.extend(_identical_variants(compiler, recipe, builds))
    diags.extend(_mixed_bools(compiler, real, builds))
    return diags


def _stmt_uses(module: ast.Module, stmt) -> set:
    """The names of the file's own bindings (not built-ins or comprehension variables) that
    ``stmt`` uses (``module.bindings``, from the resolver)."""
    of = module.bindings.of
    used: set = set()
    for n in walk(stmt):
        if type(n) is ast.Name:
            b = of(n)
            if b is not None and b.span is not None and b.kind not in _INNER:
                used.add(b.name)
    return used


def _call_name(node) -> str | None:
    if type(node) is ast.Call and type(node.func) is ast.Name:
        return node.func.id
    return None


def _unused(module: ast.Module, is_library: bool) -> list[Diagnostic]:
    """L0001 / L0002 / L0003: bindings never used in their file."""
    used: set = set()
    for stmt in module.stmts:
        used |= _stmt_uses(module, stmt)
    out = []

    def exported(name: str) -> bool:
        return is_library and not name.startswith("_")

    for stmt in module.stmts:
        if isinstance(stmt, ast.Def):
            if stmt.name not in used and not exported(stmt.name):
                out.append(Diagnostic("L0001", f"private function '{stmt.name}' is never called", stmt.name_span,
                                      WARNING, hint="remove it, or use it"))
        elif isinstance(stmt, ast.Assign):
            name = stmt.name
            if name in used or exported(name):
                continue
            callee = _call_name(stmt.value)
            if callee == "param":
                out.append(Diagnostic("L0002", f"param '{name}' is never used", stmt.name_span, WARNING,
                                      hint="remove it: variants and --set can set it, to no effect"))
            elif callee in _RENDER_CALLS and not is_library:
                continue  # W0707 (a render or variant never declared) says it already
            else:
                what = "private name" if is_library else "constant"
                out.append(Diagnostic("L0001", f"{what} '{name}' is assigned but never used", stmt.name_span,
                                      WARNING, hint="remove it, or use it"))
        elif isinstance(stmt, ast.Load):
            for ln in stmt.names:
                if ln.local in used or exported(ln.local):
                    continue
                out.append(Diagnostic("L0003", f"'{ln.local}' is loaded from {stmt.path} but never used",
                                      ln.span, WARNING, hint="remove it from the load(...)"))
    return out


_INNER = frozenset((COMPREHENSION, ARGUMENT, LOCAL))


def _functions(module: ast.Module) -> list[Diagnostic]:
    """L0650 / L0651 / L0652: a def's arguments and locals never used, or shadowing a
    top-level name of the file or a built-in (Pylint's unused-argument, unused-variable and
    redefined-outer-name / redefined-builtin)."""
    of = module.bindings.of
    top = {b.name for b in module.bindings.defs if b.kind not in _INNER}
    out: list[Diagnostic] = []
    for stmt in module.stmts:
        if type(stmt) is not ast.Def:
            continue
        used = set()
        for n in walk(stmt):
            if type(n) is ast.Name:
                b = of(n)
                if b is not None and b.kind in (ARGUMENT, LOCAL):
                    used.add(b.name)
        names = [(p.name, p.span, "argument") for p in stmt.params]
        names += [(n, span, "local") for n, span in assigned_names(stmt.body).items()
                  if n not in {p.name for p in stmt.params}]
        for name, span, what in names:
            if name not in used and not name.startswith("_"):
                code = "L0650" if what == "argument" else "L0651"
                hint = f"remove it, or name it _{name}"
                out.append(Diagnostic(code, f"{what} '{name}' of {stmt.name}() is never used", span, WARNING,
                                      hint=hint))
            if name in top:
                out.append(Diagnostic("L0652", f"{what} '{name}' of {stmt.name}() shadows the top-level name "
                                      f"'{name}'", span, WARNING, hint="rename it: the body cannot see the other"))
            elif name in _builtin_names():
                out.append(Diagnostic("L0652", f"{what} '{name}' of {stmt.name}() shadows the built-in "
                                      f"'{name}'", span, WARNING, hint="rename it: the body cannot call the built-in"))
    return out


def _builtin_names() -> frozenset:
    return NAMES


def _params_without_renders(module: ast.Module) -> list[Diagnostic]:
    """L0004: a param used in the recipe that no render statement reaches (statically,
    through the names each top-level value uses)."""
    deps: dict[str, set] = {}
    params: dict[str, ast.Assign] = {}
    used: set = set()
    roots: set = set()
    for stmt in module.stmts:
        names = _stmt_uses(module, stmt)
        used |= names
        if isinstance(stmt, ast.Assign):
            deps[stmt.name] = names
            if _call_name(stmt.value) == "param":
                params[stmt.name] = stmt
        elif isinstance(stmt, ast.ExprStmt) and _call_name(stmt.expr) not in _NOT_RENDERS:
            roots |= names
    reached: set = set()
    todo = list(roots)
    while todo:
        n = todo.pop()
        if n in reached:
            continue
        reached.add(n)
        todo.extend(deps.get(n, ()))
    out = []
    for name, stmt in params.items():
        if name in used and name not in reached:
            out.append(Diagnostic("L0004", f"param '{name}' does not affect any render", stmt.name_span,
                                  WARNING, hint="it is used only by require(...), variant(...) or values that "
                                  "no render uses; remove it or use it in a render"))
    return out


def _identical_variants(compiler, recipe, builds) -> list[Diagnostic]:
    """L0005: a variant with ``against`` whose renders are byte-identical to the other's."""
    by_name = {b.variant: b for b in builds}
    out = []
    for v in recipe.variants:
        if v.against is None or v.name not in by_name or v.against not in by_name:
            continue
        if v.changes is not None and not v.changes.items:
            continue  # changes = {}: identical is the declared contract
        if v.sweep:
            continue  # a sweep's point may be its baseline (BS = [1, 2, 4] with BS 1 by default)
        a, b = by_name[v.name], by_name[v.against]
        if [(r.name, r.text) for r in a.renders] == [(r.name, r.text) for r in b.renders]:
            out.append(Diagnostic("L0005", f"variant '{v.name}' renders exactly what '{v.against}' renders",
                                  v.span, WARNING,
                                  hint="its params change no render; remove it, or declare changes = {} "
                                  "if that is the point"))
    return out


def _mixed_bools(compiler, real: Path, builds) -> list[Diagnostic]:
    """L0006: a flag set whose bools are spelled both ``True``/``False`` and ``true``/``false``."""

    sets: dict = {}

    def collect(v, depth=0):
        t = type(v)
        if t is FlagSet:
            sets.setdefault(v.span, v)
        elif t is FlagFile:
            sets.setdefault(v.flags.span, v.flags)
        elif depth < 4 and t is List:
            for x in v.items:
                collect(x, depth + 1)
        elif depth < 4 and t is Dict:
            for x in v.items.values():
                collect(x, depth + 1)

    for b in builds:
        for r in b.renders:
            collect(r.value)
    for v in compiler.default_exports(real).values():
        collect(v)
    out = []
    for span, fs in sets.items():
        first: dict[str, object] = {}
        for layer in fs.layers:
            for e in layer.entries:
                for text, where in _bools(e.value):
                    first.setdefault("python" if text in ("True", "False") else "yaml", (text, e.key, where))
        if len(first) == 2:
            (pt, pk, ps), (yt, yk, ys) = first["python"], first["yaml"]
            out.append(Diagnostic(
                "L0006", "this flag set spells its bools both as True/False and as true/false", span, NOTE,
                related=((f"{pt} ('{pk}')", ps), (f"{yt} ('{yk}')", ys)),
                notes=("MaxText reads both the same; rcpc keeps each spelling as written",),
                hint="pick one spelling unless the flags copy a published recipe byte for byte"))
    return out


def _bools(value):
    t = type(value)
    if t is Bool:
        yield value.text, value.span
    elif t is List:
        for x in value.items:
            yield from _bools(x)


# silencing ---------------------------------------------------------------------------------
def _silenced(compiler, d: Diagnostic, cache: dict) -> bool:
    """An ignore comment for ``d.code`` on the line ``d`` is reported at, on the last line of
    its span, or on the last line of the top-level statement that starts on that line.

    ``cache`` maps a display path to its index (:func:`_ignore_index`), built once per file and
    call: each finding then costs O(1), not a scan of its file (linear in findings x bytes)."""
    if d.span is None or d.severity == "error":
        return False
    path = d.span.path
    if path in cache:
        index = cache[path]
    else:
        index = cache[path] = _ignore_index(compiler, path)
    if index is None:
        return False
    ignores, ends = index
    code = d.code.upper()
    return any(code in ignores.get(line, ())
               for line in (d.span.line, d.span.end_line, ends.get(d.span.line, d.span.line)))


def _ignore_index(compiler, path: str) -> tuple[dict[int, set[str]], dict[int, int]] | None:
    """``({line: {codes}}, {first line: last line of each top-level statement})`` of the file
    shown as ``path``, or None when it has no ignore comment (or is not a source of this run)."""
    src = compiler.sources.get(path)
    if src is None or "ignore[" not in src.text:  # no comment to parse for: one scan a file
        return None
    try:
        module = compiler.module(Path(src.real))  # parsed once in this run, then kept
    except CompileError:  # a file that does not compile has no findings to silence
        return None
    ignores = ignored_codes(module)
    if not ignores:
        return None
    ends: dict[int, int] = {}
    for stmt in module.stmts:
        ends.setdefault(stmt.span.line, stmt.span.end_line)
    return ignores, ends
