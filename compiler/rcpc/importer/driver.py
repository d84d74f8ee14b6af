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

# E1203: the import's own proof failed, which is rcpc's fault, not the input's.
IMPORT_BUG_HINT = "this is a fault of rcpc import: please report it with the input file"


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
            note = _unknown_note(keys, manifest.locate(template.shown, template.text, f"{keys[0]}="))
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
            return Imported(text, f"a call of {cand.shape}", template.notes, check)
        tried.append(f"{cand.shape}: {found[0]}")
    text, found = attempt(manifest.literal)
    if found:
        raise CompileError(Diagnostic("E1203", f"the imported recipe is not equal to {shown}: {found[0]}", None,
                                      notes=tuple(found[1:4]),
                                      hint="a placeholder that YAML reads as a number or bool after envsubst is imported as a str "
                                      "param: quote it in the template, or make the param typed by hand"))
    how = "a data literal" + (f" (no library function renders it: {'; '.join(tried)})" if tried else "")
    return Imported(text, how, template.notes, check)


def _unknown_note(keys, span) -> Diagnostic:
    """``W1200`` for MaxText ``keys`` acknowledged with ``unknown_keys``, at ``span`` (the
    template's first ``key=`` word)."""
    return Diagnostic("W1200", "TODO(import): MaxText keys the schema does not know are acknowledged with "
                      f"unknown_keys: {', '.join(keys)}", span, severity="warning",
                      hint="check them against the MaxText version you run")


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


def import_shell(ws, path: Path, shown: str) -> Imported:
    """The recipe of shell launch recipe ``path`` (:mod:`rcpc.importer.shell`), proven equal
    to it: for the defaults and for a second value of every param, the command lines bash
    runs for the shell file's converted statements and for the recipe's ``command_file``
    renders are the same words, and each MaxText flag set's tokens are the words of the
    trainer's flags in the launch command. Raises :class:`CompileError` (``E1201`` the file
    cannot be parsed, ``E1204`` it launches nothing, ``E1203`` not equal)."""
    from rcpc.importer import proof, shell, shell_library

    script = shell.read(path, shown)
    if not shell.programs(script):
        raise CompileError(Diagnostic("E1204", f"{shown} runs no command rcpc can reproduce (only shell builtins, "
                                      "or commands using values the shell computes)", None,
                                      notes=tuple(n.message for n in script.notes[:5]),
                                      hint="rcpc import shell turns a launch command (xpk workload create ...) into "
                                      "a command_file render"))
    root = ws.root

    def check(compiler, recipe: Path) -> list:
        return _shell_differences(compiler, recipe, script)

    def attempt(launch):
        """(recipe text, differences) of the recipe with ``launch``; keys the MaxText schema
        does not know are acknowledged (``unknown_keys``, a TODO) and the recipe made again."""
        while True:
            text = canonical(shell.recipe(script, launch))
            outcome = proof.with_recipe(text, lambda p: _outcome(lambda: check(proof.fresh_compiler(root), p)))
            if isinstance(outcome, list):
                return text, outcome
            exc, keys = outcome
            if not keys or not shell.add_unknown_keys(script, keys):
                raise exc

    tried = []
    for cand in shell_library.SHELL_CANDIDATES:
        launch = cand.extract(script) if (root / cand.library.removeprefix("//")).is_file() else None
        if launch is None:
            continue
        try:
            text, found = attempt(launch)
        except CompileError as exc:
            found = [f"the call does not build: {exc.diagnostics[0].message}"]
        if not found:
            return Imported(text, f"a command_file render, a call of {cand.shape}", tuple(shell.notes(script)), check)
        tried.append(f"{cand.shape}: {found[0]}")
    text, found = attempt(None)
    if found:
        raise CompileError(Diagnostic("E1203", f"the imported recipe is not equal to {shown}: {found[0]}", None,
                                      notes=tuple(found[1:4]), hint=IMPORT_BUG_HINT))
    how = "a command_file render" + (f" (no library function builds it: {'; '.join(tried)})" if tried else "")
    return Imported(text, how, tuple(shell.notes(script)), check)


def _shell_differences(compiler, recipe: Path, script) -> list:
    import subprocess

    from rcpc.domain.maxtext import argv
    from rcpc.domain.values import FlagSet
    from rcpc.importer import proof, shell

    kept = shell.used(script)
    defaults = {b.name: shell._visible(b.name) if b.default == "" else _typed(b) for b in script.bindings.values()
                if b.kind == "param" and b.name in kept}
    programs = shell.programs(script)
    for values in (defaults, _other(defaults)):
        sets = [f"{k}={shell._text(v)}" for k, v in values.items()]
        renders = proof.build(compiler, recipe, {k: shell._text(v) for k, v in values.items()})
        try:
            ours = [line for name, text in renders.items() if name.endswith(".sh")
                    for line in proof.run_stubbed(text, programs)]
            theirs = proof.run_stubbed(shell.derived_script(script, values), programs)
        except (OSError, subprocess.SubprocessError) as exc:
            return [f"bash could not run the comparison: {getattr(exc, 'stderr', None) or exc}"]
        shown = ", ".join(f"{k}={v!r}" for k, v in values.items())
        found = list(proof.differences(ours, theirs, "$argv"))
        if found:
            return [f"with {shown}: {d}" for d in found]
        bindings = compiler.bindings(recipe.resolve(), sets)
        for name, value in bindings.items():
            if type(value) is not FlagSet:
                continue
            tokens = _trainer_tokens(theirs)
            if tokens is not None and tokens != argv(value):
                return [f"with {shown}: the MaxText tokens of {name} are not the launch command's trainer's: "
                        f"{next((a for a, b in zip(argv(value), tokens) if a != b), argv(value)[len(tokens):][:1])}"]
    return []


def _trainer_tokens(lines) -> list | None:
    """The MaxText flag tokens (as the trainer's argv gets them) of the last trainer found in
    the words of command lines ``lines`` (a word, or the value of a ``--name=`` word, parsed as
    shell); None when there is none."""
    import shlex

    from rcpc.importer import command

    tokens = None
    for line in lines:
        for word in line:
            if "configs/base.yml" not in word:
                continue
            text = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
            try:
                trainer, _ = command.split(text)
            except Exception:  # bashlex errors: not a command line
                continue
            if trainer is not None:
                tokens = shlex.split(" ".join(trainer.words))
    return tokens


def _typed(b):
    if b.type == "int":
        return int(b.default)
    if b.type == "bool":
        return b.default == "true"
    return b.default


def _other(defaults: dict) -> dict:
    """A second value of each param: another int, the other bool, a distinct string."""
    from rcpc.importer.proof import other_values

    strings = other_values({k: v for k, v in defaults.items() if isinstance(v, str)})
    return {k: (not v if isinstance(v, bool) else v + 1 if isinstance(v, int) else strings[k])
            for k, v in defaults.items()}
