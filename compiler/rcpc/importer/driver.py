"""``rcpc import``: choose the recipe an input becomes, and prove it equal.

For a manifest, each library candidate (:data:`rcpc.importer.library.CANDIDATES`, and
:data:`rcpc.importer.serving.CANDIDATES` for a file of several documents too) that
extracts a call is rendered and compared with the template (:mod:`.proof`: the renders as
written, before the Kubernetes and TPU rules); the first equal one is the import, else the
data literal, which must be equal itself. The chosen recipe is then built with its defaults,
as ``rcpc build`` would: an error there is the template's (the recipe is the template as
data), reported at the template (:mod:`.relocate`), except one at a typed param whose
default the import chose, a ``W1201`` ``TODO(import)``, and a refusal of the config by
MaxText's pinned schema (``E0350``: a recipe published for another MaxText version), a
``W1208`` ``TODO(import)``: the recipe is equal to its input, and ``rcpc build`` refuses it
as it refuses the input. A shell recipe is built the same way once proven equal. The recipe text is ``rcpc fmt``'s
canonical form of what the stages wrote. No diagnostic names the temporary recipe file the
import builds: each is moved to the input file.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import attrs

from rcpc.core.diagnostics import CompileError, Diagnostic
from rcpc.core.fmt import format_source
from rcpc.core.source import Span
from rcpc.domain import stdlib
from rcpc.domain.kube.schema import SchemaIndex
from rcpc.domain.maxtext.flagset import argv
from rcpc.domain.values import FlagSet
from rcpc.importer import command, interpret, library, manifest, proof, relocate, serving, shell, shell_library

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
    return format_source(text, "<import>")


def import_manifest(ws, path: Path, shown: str, sets: dict, variables) -> Imported:
    """The recipe of manifest template ``path`` (see :func:`rcpc.importer.manifest.read` for
    the arguments and errors), proven equal to it in the workspace ``ws``. Raises
    :class:`CompileError` ``E1203`` when no recipe is equal (the first differences), and the
    errors of the recipe's build at the template."""
    template = manifest.read(path, shown, sets, variables, _schemas(ws))
    root = ws.root
    types = {n: template.type_of(n) for n in template.params}

    def check(compiler, recipe: Path) -> list:
        return proof.manifest_differences(compiler, recipe, template.text, template.params, types)

    def attempt(make):
        """(recipe text, differences) of ``make(template)``; keys the MaxText schema does not
        know are acknowledged (``unknown_keys``, a TODO) and the recipe made again."""
        nonlocal template
        while True:
            text = canonical(make(template))
            outcome = proof.with_recipe(text, lambda p: _outcome(lambda: check(proof.fresh_compiler(root), p), root, p))
            if isinstance(outcome, list):
                return text, outcome
            exc, keys, recipe_shown = outcome
            s = manifest.split_startup_of(template)
            if not keys or s is None or s.flags is None or set(keys) <= set(s.unknown_keys):
                raise CompileError(_at_template(template, text, recipe_shown, exc.diagnostics,
                                                "found evaluating the recipe rcpc import made"))
            note = _unknown_note(keys, manifest.locate(template.shown, template.text, f"{keys[0]}="))
            template = manifest.with_startup(attrs.evolve(template, notes=template.notes + (note,)),
                                             attrs.evolve(s, unknown_keys=tuple(dict.fromkeys(s.unknown_keys + keys))))

    tried = []
    # a JobSet's functions read one document; the serving shape's, each document of a file
    for cand in (library.CANDIDATES if not template.documents else ()) + serving.CANDIDATES:
        if not _has_library(ws, cand.library) or cand.extract(template) is None:
            continue
        try:
            text, found = attempt(cand.extract)
        except CompileError as exc:
            found = [f"the call does not build: {exc.diagnostics[0].message}"]
        if not found:
            template, text = _valid(root, template, cand.extract, text)
            return Imported(text, f"a call of {cand.shape}", template.notes, check)
        tried.append(f"{cand.shape}: {found[0]}")
    text, found = attempt(manifest.literal)
    if found:
        raise CompileError(Diagnostic("E1203", f"the imported recipe is not equal to {shown}: {found[0]}",
                                      _difference_span(template, found[0]),
                                      notes=tuple(found[1:4]),
                                      hint="a placeholder in a field no schema in kube_schemas types is a str param, "
                                      "and YAML may read its value as a number or bool after envsubst: quote it in the "
                                      "template, add the object's schema to kube_schemas, or make the param typed by hand"))
    template, text = _valid(root, template, manifest.literal, text)
    how = (f"data literals, one render for each of its {len(template.documents)} documents" if template.documents
           else "a data literal") + (f" (no library function renders it: {'; '.join(tried)})" if tried else "")
    return Imported(text, how, template.notes, check)


def _difference_span(template, difference: str):
    """The template's span of the node a proof difference names (``with A=1: $.spec.x: ...``,
    :func:`rcpc.importer.proof.differences`), else of the whole object."""
    at = difference.find(": $")
    found = relocate.at_path(template.value, difference[at + 3:].removeprefix(".")) \
        if at >= 0 and template.value is not None else None
    return found or (template.value.span if template.value is not None else None)


def _schemas(ws):
    """``schema_of(apiVersion, kind)``: the schema of the workspace's ``kube_schemas`` for
    the object, else of rcpc's built-in JobSet schema, else None (the types of placeholders,
    :mod:`rcpc.importer.fields`)."""
    indexes = []

    def schema_of(api: str, kind: str):
        if not indexes:
            indexes.extend(SchemaIndex([p], ws.display) for p in (*ws.kube_schemas, ws.schema_path("builtin:jobset")))
        return next((s for s in (i.schema(api, kind) for i in indexes) if s is not None), None)

    return schema_of


def _has_library(ws, load_path: str) -> bool:
    """The library a candidate loads (``@rcpc//FILE.rcp``, rcpc's standard library, or a
    workspace path ``//...``) exists, so its functions can be tried."""
    if stdlib.is_label(load_path):
        return stdlib.path_of(load_path, ws.stdlib_dir).is_file()
    return (ws.root / load_path.removeprefix("//")).is_file()


def _valid(root: Path, template, make, text: str):
    """``(template, text)`` once the recipe ``text`` (``make(template)``) is built with its
    defaults, as ``rcpc build`` would: every error at the template (:func:`_at_template`). An
    error at the place of a typed param whose default the import chose (``1`` for
    ``parallelism`` on a slice of 16 hosts) is a ``W1201`` note instead, and the recipe is made
    again with it (a ``TODO(import)`` comment); any other error is raised, a
    :class:`CompileError`."""
    errors, shown = _build_errors(root, text)
    if not errors:
        return template, text
    defaults = ", ".join(f"{n}={v}" for n, v in template.params.items())
    found = _at_template(template, text, shown, errors, "found building the recipe rcpc import made, with its "
                         "defaults" + (f" ({defaults})" if defaults else ""))
    refused, found = _refused(found)
    chosen = {template.places[n].span: n for n in template.chosen}
    if not all(any(s in chosen for s in relocate.spans(d)) for d in found):
        raise CompileError([d for d in found if not any(s in chosen for s in relocate.spans(d))])
    notes = list(refused)
    for d in found:
        name = next(chosen[s] for s in relocate.spans(d) if s in chosen)
        notes.append(Diagnostic("W1201", f"TODO(import): {name} = {template.params[name]}, the default rcpc import "
                                f"chose, is not valid here: {d.message} ({d.code})", template.places[name].span,
                                severity="warning", related=tuple((lb, s) for lb, s in d.related if s != d.span),
                                hint=f"import again with --set {name}=VALUE (the value the template is run with), "
                                "or change the param's default"))
    template = attrs.evolve(template, notes=template.notes + tuple(notes))
    return template, canonical(make(template))


def _build_errors(root: Path, text: str) -> tuple:
    """``(diagnostics, the recipe's path as they show it)`` of building the recipe ``text``
    with its defaults in the workspace at ``root``, as ``rcpc build`` would (``([], "")``
    when it builds)."""
    def run(path: Path):
        compiler = proof.fresh_compiler(root)
        try:
            compiler.build(path)
        except CompileError as exc:
            return exc.diagnostics, _shown(compiler, path)
        return [], ""

    return proof.with_recipe(text, run)


# Findings of the build that say the input's MaxText config is one the pinned MaxText refuses
# (a recipe published for another MaxText version): the import is still equal, and says so.
REFUSALS = frozenset({"E0350"})


def _refused(found: list) -> tuple[list, list]:
    """``(W1208 notes, the other diagnostics)`` of ``found`` (diagnostics at the input): each
    of :data:`REFUSALS` becomes a ``W1208`` ``TODO(import)`` at the same place."""
    notes = [Diagnostic("W1208", f"TODO(import): rcpc build refuses the recipe as it refuses the input it equals: "
                        f"{d.message} ({d.code})", d.span, severity="warning",
                        related=d.related, notes=d.notes,
                        hint="the input sets a config the pinned MaxText schema refuses (it may be written for "
                        "another MaxText version): change the flags MaxText names, or pin the maxtext_schema of the "
                        "MaxText it runs, before you build")
             for d in found if d.code in REFUSALS]
    return notes, [d for d in found if d.code not in REFUSALS]


def _at_template(template, text: str, shown: str, diagnostics, how: str) -> list:
    """``diagnostics`` of the import's recipe ``text`` (shown as ``shown``) at the template
    (:func:`rcpc.importer.relocate.relocate`): a param at its first placeholder, a flag at its
    ``key=`` word, a Kubernetes finding at its path, anything else at the object's first
    line; ``how`` the note saying how the recipe was built."""
    def placeholder(name: str):
        place = template.places.get(name)
        if place is not None:
            return place.span
        return manifest.locate(template.shown, template.text, "${" + name + "}") \
            if "${" + name + "}" in template.text else None

    def word(key: str):
        return manifest.locate(template.shown, template.text, f"{key}=") if f"{key}=" in template.text else None

    first = template.value.span if template.value is not None else Span(template.shown, 1, 1, 1, 1)
    places = relocate.Places(text, shown, template.value, placeholder, word, first)
    return relocate.relocate(diagnostics, places, how, hint="the recipe is the template as data: fix the template "
                             "(rcpc validate shows it after envsubst) and import again")


def _unknown_note(keys, span) -> Diagnostic:
    """``W1200`` for MaxText ``keys`` acknowledged with ``unknown_keys``, at ``span`` (the
    template's first ``key=`` word)."""
    return Diagnostic("W1200", "TODO(import): MaxText keys the schema does not know are acknowledged with "
                      f"unknown_keys: {', '.join(keys)}", span, severity="warning",
                      hint="check them against the MaxText version you run")


def _outcome(run, root: Path, path: Path):
    """``run()``'s differences, or ``(CompileError, unknown MaxText keys, the recipe's path
    as diagnostics show it)`` when the recipe at ``path`` does not build in the workspace at
    ``root`` (read while the recipe file still exists)."""
    try:
        return run()
    except CompileError as exc:
        return exc, _unknown_keys(exc), _shown(proof.fresh_compiler(root), path)


def _shown(compiler, path: Path) -> str:
    """How the diagnostics of ``compiler`` show the recipe file ``path``."""
    return compiler.workspace.display(path)


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
    to it: for the defaults, for a second value of every param and for each choice of a
    param a ``case`` chooses on (each of its branches), the command lines bash
    runs for the shell file's converted statements and for the recipe's ``command_file``
    renders are the same words, and each MaxText flag set's tokens are the words of the
    trainer's flags in the launch command. Raises :class:`CompileError` (``E1201`` the file
    cannot be parsed, ``E1204`` it launches nothing, ``E1203`` not equal)."""
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
            outcome = proof.with_recipe(text, lambda p: _outcome(lambda: check(proof.fresh_compiler(root), p), root, p))
            if isinstance(outcome, list):
                return text, outcome
            exc, keys, recipe_shown = outcome
            if not keys or not shell.add_unknown_keys(script, keys):
                raise CompileError(_at_script(script, text, recipe_shown, exc.diagnostics))

    tried = []
    for cand in shell_library.SHELL_CANDIDATES:
        launch = cand.extract(script) if _has_library(ws, cand.library) else None
        if launch is None:
            continue
        try:
            text, found = attempt(launch)
        except CompileError as exc:
            found = [f"the call does not build: {exc.diagnostics[0].message}"]
        if not found:
            text = _valid_shell(root, script, lambda: canonical(shell.recipe(script, launch)), text)
            return Imported(text, f"a command_file render, a call of {cand.shape}", tuple(shell.notes(script, launch)),
                            check)
        tried.append(f"{cand.shape}: {found[0]}")
    text, found = attempt(None)
    if found:
        raise CompileError(Diagnostic("E1203", f"the imported recipe is not equal to {shown}: {found[0]}", None,
                                      notes=tuple(found[1:4]), hint=IMPORT_BUG_HINT))
    text = _valid_shell(root, script, lambda: canonical(shell.recipe(script, None)), text)
    how = "a command_file render" + (f" (no library function builds it: {'; '.join(tried)})" if tried else "")
    return Imported(text, how, tuple(shell.notes(script)), check)


def _valid_shell(root: Path, script, make, text: str) -> str:
    """The recipe ``text`` (``make()``) once built with its defaults, as ``rcpc build`` would:
    a finding that MaxText refuses the input's config (:data:`REFUSALS`) is a ``W1208``
    ``TODO(import)`` of the script (the recipe made again with it); any other error is
    raised at the shell file."""
    errors, shown = _build_errors(root, text)
    if not errors:
        return text
    refused, rest = _refused(_at_script(script, text, shown, errors))
    if rest:
        raise CompileError(rest)
    script.notes.extend(refused)
    return make()


def _at_script(script, text: str, shown: str, diagnostics) -> list:
    """``diagnostics`` of the import's recipe ``text`` (shown as ``shown``) at the shell file
    (:func:`rcpc.importer.relocate.relocate`): a param at its assignment, a flag at its
    ``key=`` word, anything else at the file's first line."""
    def placeholder(name: str):
        b = script.bindings.get(name)
        pos = getattr(getattr(b, "node", None), "pos", None)
        return shell._span(script.shown, script.text, pos) if pos is not None else None

    def word(key: str):
        return manifest.locate(script.shown, script.text, f"{key}=") if f"{key}=" in script.text else None

    places = relocate.Places(text, shown, None, placeholder, word, Span(script.shown, 1, 1, 1, 1))
    return relocate.relocate(diagnostics, places, "found building the recipe rcpc import made",
                             hint="the recipe says what the shell file says: fix the shell file and import again")


def _shell_differences(compiler, recipe: Path, script) -> list:
    kept = shell.used(script)
    defaults = {b.name: shell._visible(b.name) if b.default == "" else _typed(b) for b in script.bindings.values()
                if b.kind == "param" and b.name in kept}
    programs = shell.programs(script)
    other = _other(defaults)
    branches = []
    for b in script.bindings.values():  # a param a case chooses on: another of its choices, then each
        if b.name in other and b.choices:
            other[b.name] = b.choices[-1] if b.default != b.choices[-1] else b.choices[0]
            branches += [{**defaults, b.name: c} for c in b.choices if c not in (b.default, other[b.name])]
    globbed = [] if script.globbed else None  # eval's words keep glob characters as written (noted)
    for values in (defaults, other, *branches):
        sets = [f"{k}={shell._text(v)}" for k, v in values.items()]
        renders = proof.renders(compiler, recipe, {k: shell._text(v) for k, v in values.items()})
        try:
            ours = [line for name, text in renders.items() if name.endswith(".sh")
                    for line in interpret.run(text, programs)]
            theirs = interpret.run(shell.derived_script(script, values), programs, globbed)
        except interpret.Unsupported as exc:
            return [f"the comparison cannot interpret {exc.message}"]
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
    """The flag tokens (as the trainer's argv gets them: MaxText's, MaxDiffusion's) of the last
    trainer found in
    the words of command lines ``lines`` (a word, or the value of a ``--name=`` word, parsed as
    shell); None when there is none."""
    tokens = None
    for line in lines:
        for word in line:
            if "configs/" not in word:  # a trainer's config (command.is_config), then its flags
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
    if b.type == "float":
        return float(b.default)
    return b.default


def _other(defaults: dict) -> dict:
    """A second value of each param: another int, the other bool, a distinct string."""
    strings = proof.other_values({k: v for k, v in defaults.items() if isinstance(v, str)})
    return {k: (not v if isinstance(v, bool) else v + 1 if isinstance(v, int) else v + 0.5 if isinstance(v, float)
                else strings[k]) for k, v in defaults.items()}
