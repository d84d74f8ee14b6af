"""``--flag RENDER.KEY=VALUE``: one MaxText flag of the flag set a render carries, set for one
build without declaring a param (docs/cli.md, Flag overrides), as ``kubectl set env`` or a
one-off ``key=value`` on MaxText's command line would.

The flag set is found by the render protocol (:func:`rcpc.domain.renders.carried`): the one
flag set render ``RENDER`` (a file name, ``trainer.flags``, or its stem, ``trainer``: every render
of that name, which must carry one flag set between them) carries,
in whatever shape (a flag file, a JobSet's argv or ``bash -c`` string, a command file). The
override is one more layer of that flag set (:func:`rcpc.domain.embedding.with_layer`), so
MaxText's last-value-wins reads it last, in every render that carries the set. Its value is
typed by the flag set's MaxText schema as a recipe's would be
(:func:`rcpc.domain.maxtext.flagset.check_entry`: ``steps=10`` is the int 10, ``run_name=10`` the
string ``"10"``), and every check a recipe's flag gets applies (unknown key ``E0310`` with
did-you-mean, type ``E0311``, choices, MaxText's refusals, the launch checks, and the
contract of the variant built). The token's provenance names the ``--flag`` item
(``rcpc explain`` shows it as the last layer).

Errors: ``E0638`` an item that is not ``RENDER.KEY=VALUE`` or names no render, ``E0639`` a
render that carries no flag set, or several.
"""

from __future__ import annotations

from rcpc.core import record
from rcpc.core.diagnostics import CompileError, did_you_mean, error
from rcpc.core.limits import LIMIT_HINT, MAX_LAYERS
from rcpc.core.source import Span
from rcpc.core.values import Str
from rcpc.domain.builtins import param_value_from_text
from rcpc.domain.maxtext import flagset as maxtext
from rcpc.domain.overrides import flag_target
from rcpc.domain.renders import carried, kind_of
from rcpc.domain.values import FlagEntry, FlagLayer, FlagSet, Param

HINT = "write --flag RENDER.KEY=VALUE, e.g. --flag trainer.steps=10 (RENDER: a render's file name or stem)"
_STRING_SPELLING = "W0321"  # the command line is text: a plain spelling of the key's type is the point


def apply_flags(renders: list, items, warn) -> list:
    """``renders`` (render values, in declaration order) with each ``--flag`` item of
    ``items`` applied in order (a later item is a later layer: it wins). ``warn(diagnostic)``
    takes the warnings of the value's check. Raises the errors of the module docstring and
    those of the flag's checks."""
    renders = list(renders)
    for item in items:
        named, key, text = _parse(item, renders)
        sets = list({id(e.flags): e.flags for value in named for e in carried(value)}.values())
        shown = " and ".join(kind_of(r).file_name(r) for r in named)
        if len(sets) != 1:
            raise error("E0639", f"--flag {item}: render {shown} carries "
                        f"{'no MaxText flag set' if not sets else f'{len(sets)} flag sets'}", None,
                        hint="name a render that carries one flag set (a flag_file, or the manifest or command "
                             "that runs one trainer)" if not sets else
                             "override the flag in the recipe, where each flag set is made")
        fs = sets[0]
        grown = _grown(fs, key, text, item, warn)
        renders = [kind_of(r).with_flags(r, fs, grown) for r in renders]
    return renders


def _parse(item: str, renders: list) -> tuple:
    """(the render values RENDER names, KEY, VALUE text) of ``RENDER.KEY=VALUE``
    (:func:`rcpc.domain.overrides.flag_target`); ``E0638``."""
    head, eq, _ = item.partition("=")
    if not eq or any("\ud800" <= c <= "\udfff" for c in item):
        raise error("E0638", f"--flag {item!r} is not RENDER.KEY=VALUE" + ("" if eq else " (no '=')"), None,
                    hint=HINT)
    by_file = {kind_of(r).file_name(r): r for r in renders}
    name, files, key, text = flag_target(item, list(by_file))
    if files:
        return [by_file[f] for f in files], key, text
    stems = list(dict.fromkeys(r.name for r in renders))  # trainer.flags and trainer.yaml: one name
    raise error("E0638", f"--flag {item}: no render named {head.split('.')[0]!r}", None,
                hint=did_you_mean(head.split(".")[0], stems) or f"renders: {', '.join(stems) or 'none'}")


def _grown(fs: FlagSet, key: str, text: str, item: str, warn) -> FlagSet:
    """``fs`` with one more layer setting ``key`` to ``text`` typed by ``fs``'s schema (by its
    YAML spelling without one), checked as a recipe's flag is."""
    span = Span(f"--flag {item}", 0, 0, 0, 0)
    entry = FlagEntry(key, span, _spelled(text, span))
    problem = maxtext._entry_problem(key, entry.value, span)
    if problem is not None:
        raise CompileError(problem)
    if fs.schema is not None:
        known = {e.key: e for e in maxtext.entries(fs)}  # keys the set acknowledged are known here too
        entry, found = maxtext.check_entry(FlagEntry(key, span, _spelled(text, span, typed=False)), fs.schema,
                                           known, None)
        errors = [d for d in found if d.severity == "error"]
        if errors:
            raise CompileError(errors)
        for d in found:
            if d.code != _STRING_SPELLING:
                warn(d)
    if len(fs.layers) + 1 > MAX_LAYERS:
        raise error("E0802", f"flag set of more than {MAX_LAYERS} layers", span, hint=LIMIT_HINT)
    grown = FlagSet(fs.layers + (FlagLayer((entry,), span),), fs.span, fs.schema, fs.acknowledged)
    problems = maxtext.merge_problems(grown)
    if problems:
        raise CompileError(problems)
    maxtext.check_weight(grown)
    return grown


def _spelled(text: str, span: Span, typed: bool = True):
    """The value MaxText's YAML reading gives ``key=text`` where no schema types it: a bool,
    int or float as spelled (as ``--set`` reads one), else the string; ``typed`` False: the
    string, for the schema to type (:func:`rcpc.domain.maxtext.flagset.check_entry`)."""

    if typed:
        for ptype in ("bool", "int", "float"):
            try:
                return record.evolve(param_value_from_text(Param("flag", ptype, None, None, "", span), text), span=span)
            except CompileError:
                continue
    return Str(text, span)
