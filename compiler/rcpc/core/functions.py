"""User functions: the value of a ``def`` in a library file, and calling one.

Starlark's rules (and Bazel's ``.bzl`` macros): a function is defined at the top level of a
library file; its parameter defaults are evaluated once, where the ``def`` is; a call binds
the arguments (positional, then keyword; parameters after ``*`` by keyword only) and runs
the body — assignments, ``if``/``elif``/``else``, ``for`` over a list or a dict's keys,
``return`` — in a scope of its own. Values are immutable, so a call cannot change anything
outside it. There is no ``while``, and a call to a function that is already running
(recursion, direct or not) is ``E0650``: every build terminates.

Diagnostics:

* ``E0650`` a recursive call (the chain of calls as secondary spans);
* ``E0651`` an argument that does not fit (too many positional, unknown or repeated keyword
  with a did-you-mean, missing), at the call, with the ``def`` as a secondary span;
* an error inside a body carries each call site that led there (``called from``), innermost
  first, as a load chain does (``loaded from``).
"""

from __future__ import annotations

from rcpc.core import record
from rcpc.core.diagnostics import CompileError, did_you_mean, error
from rcpc.core.source import Span
from rcpc.core.syntax import ast
from rcpc.core.values import TYPE_NAMES


@record.define(frozen=True, eq=False)
class Function:
    """A ``def``: its AST (``node``), the values of its parameter defaults (None for a
    required parameter), and the evaluator of the file that defines it (whose top-level
    names the body sees). ``span`` is the def's name."""

    name: str
    node: ast.Def
    defaults: tuple
    evaluator: object
    span: Span


TYPE_NAMES[Function] = "function"


@record.frozen
class Frame:
    """One running call: the function and the call expression."""

    function: Function
    call: Span


def bind_arguments(fn: Function, call: ast.Call, args: list, kwargs: dict) -> dict:
    """The body's initial scope: parameter name → value. ``args`` are the positional values,
    ``kwargs`` name → (value, name span). ``E0651`` for arguments that do not fit."""
    node = fn.node
    defined = (("defined here", node.span),)
    params = node.params
    positional = [p for p in params if not p.keyword_only]
    if len(args) > len(positional):
        most = f"at most {len(positional)}" if any(p.default is not None for p in positional) else str(len(positional))
        raise error("E0651", f"{fn.name}() takes {most} positional argument{'s' if len(positional) != 1 else ''}, "
                    f"got {len(args)}", call.args[len(positional)].span if call.args else call.span,
                    related=defined,
                    hint="name the arguments after '*' in the def: NAME = value" if len(positional) < len(params) else None)
    scope = {p.name: v for p, v in zip(positional, args)}
    names = [p.name for p in params]
    for name, (value, name_span) in kwargs.items():
        if name not in names:
            raise error("E0651", f"{fn.name}() has no parameter '{name}'", name_span, related=defined,
                        hint=did_you_mean(name, names) or f"parameters: {', '.join(names) or 'none'}")
        if name in scope:
            raise error("E0651", f"{fn.name}() got argument '{name}' twice (by position and by name)", name_span,
                        related=defined, hint="give it by position or by name, not both")
        scope[name] = value
    missing = [p.name for p in params if p.name not in scope and p.default is None]
    if missing:
        listed = ", ".join(f"'{m}'" for m in missing)
        raise error("E0651", f"{fn.name}() is missing argument{'s' if len(missing) > 1 else ''} {listed}", call.span,
                    related=defined, hint=f"pass {missing[0]} = ...")
    for p, default in zip(params, fn.defaults):
        if p.name not in scope:
            scope[p.name] = default
    return scope


def check_recursion(stack: list, fn: Function, call: Span) -> None:
    """``E0650`` when ``fn`` is already running (the calls that led here are added as the
    error leaves each body, :func:`called_from`)."""
    for frame in stack:
        if frame.function is fn:
            raise error("E0650", f"{fn.name}() calls itself (recursion is not allowed)", call,
                        related=(("defined here", fn.node.span),),
                        hint="every build must terminate: compute with a for loop over a list, or a comprehension")


def called_from(exc: CompileError, fn: Function, call: Span) -> CompileError:
    """``exc`` raised inside ``fn``'s body, each diagnostic with the call site added: each
    level of a call chain adds its own, so the chain reads innermost first."""
    return CompileError([record.evolve(d, related=d.related + ((f"in {fn.name}() called from", call),))
                         for d in exc.diagnostics])
