"""``rcpc import``: choose the recipe an input becomes, and prove it equal.

For a manifest, each library candidate (:data:`rcpc.importer.library.CANDIDATES`) that
extracts a call is built and compared with the template; the first equal one is the import,
else the data literal, which must be equal itself. The recipe text is ``rcpc fmt``'s
canonical form of what the stages wrote.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from rcpc.core.diagnostics import CompileError, Diagnostic


@attrs.frozen
class Imported:
    """An import: the recipe ``text`` (canonical), ``how`` it was made (a sentence),
    ``notes`` (``W1200`` warnings: what was kept as shell text, each marked ``TODO(import)``
    in the recipe or named here), and ``check(compiler, path)`` → differences of the recipe
    written at ``path`` (empty: equal)."""

    text: str
    how: str
    notes: tuple
    check: object


def canonical(text: str) -> str:
    """``text`` as ``rcpc fmt`` writes it."""
    from rcpc.core.fmt import format_source

    return format_source(text, "<import>")


def import_manifest(ws, path: Path, shown: str, sets: dict, variables) -> Imported:
    """The recipe of manifest template ``path`` (see :func:`rcpc.importer.manifest.read` for
    the arguments and errors), proven equal to it in the workspace ``ws``. Raises
    :class:`CompileError` ``E1203`` when no recipe is equal (the first differences)."""
    from rcpc.importer import library, manifest, proof

    template = manifest.read(path, shown, sets, variables)
    root = ws.root

    def check(compiler, recipe: Path) -> list:
        return proof.manifest_differences(compiler, recipe, template.text, template.params)

    def attempt(make):
        """(recipe text, differences) of ``make(template)``; keys the MaxText schema does not
        know are acknowledged (``unknown_keys``, a TODO) and the recipe made again."""
        nonlocal template
        while True:
            text = canonical(make(template))
            outcome = proof.with_recipe(text, lambda p: _outcome(lambda: check(proof.fresh_compiler(root), p)))
            if isinstance(outcome, list):
                return text, outcome
            exc, keys = outcome
            s = template.startup
            if not keys or s is None or s.flags is None or set(keys) <= set(s.unknown_keys):
                raise exc
            note = Diagnostic("W1200", "TODO(import): MaxText keys the schema does not know are acknowledged "
                              f"with unknown_keys: {', '.join(keys)}", None,
                              severity="warning", hint="check them against the MaxText version you run")
            template = attrs.evolve(template, notes=template.notes + (note,),
                                    startup=attrs.evolve(s, unknown_keys=tuple(dict.fromkeys(s.unknown_keys + keys))))

    tried = []
    for cand in library.CANDIDATES:
        if not (root / cand.library.removeprefix("//")).is_file() or cand.extract(template) is None:
            continue
        try:
            text, found = attempt(cand.extract)
        except CompileError as exc:
            found = [f"the call does not build: {exc.diagnostics[0].message}"]
        if not found:
            return Imported(text, f"a call of {cand.function}", template.notes, check)
        tried.append(f"{cand.function}: {found[0]}")
    text, found = attempt(manifest.literal)
    if found:
        raise CompileError(Diagnostic("E1203", f"the imported recipe is not equal to {shown}: {found[0]}", None,
                                      notes=tuple(found[1:4]),
                                      hint="a placeholder that YAML reads as a number or bool after envsubst is imported as a str "
                                      "param: quote it in the template, or make the param typed by hand"))
    how = "a data literal" + (f" (no library function renders it: {'; '.join(tried)})" if tried else "")
    return Imported(text, how, template.notes, check)


def _outcome(run):
    """``run()``'s differences, or ``(CompileError, unknown MaxText keys)`` when the recipe
    does not build (read while the recipe file still exists)."""
    try:
        return run()
    except CompileError as exc:
        return exc, _unknown_keys(exc)


def _unknown_keys(exc: CompileError) -> tuple:
    """The MaxText keys ``E0310`` (unknown key) reports in ``exc``, from the recipe text at
    each diagnostic's span."""
    keys = []
    for d in exc.diagnostics:
        if d.code == "E0310" and d.span is not None and d.span.path:
            try:
                line = Path(d.span.path).read_text(encoding="utf-8").splitlines()[d.span.line - 1] \
                    if Path(d.span.path).is_file() else ""
            except OSError:
                line = ""
            at = line[d.span.col - 1:]
            key = at.split('"')[1] if at.startswith('"') else ""
            if key:
                keys.append(key)
    return tuple(keys)
