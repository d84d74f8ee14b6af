"""Evaluating a file again with other param values, redoing only what they change.

A recipe's variants evaluate it again with some params overridden, yet most of its statements
read no overridden param, directly or through a name bound from one: their values and effects
are the default evaluation's. One run (:class:`~rcpc.core.evaluate.Evaluator` with
``record=True``) keeps, for each top-level statement, what it did (:class:`Step`); a later run
of the same module given that :class:`Trace` (``base=``) does it again without evaluating
whenever no name the statement reads is *dirty* (:func:`replayable`): overridden, or bound by
a statement that was evaluated again. The names a statement reads are every name in it (an
over-approximation: a comprehension variable or a built-in spelled like a dirty name only
costs an evaluation). Values are immutable, so the same objects serve every variant, and what
is derived from a value alone (its YAML, its Kubernetes findings) can be kept by identity.

What a step does again: the names it bound (the environment, and the declarations of
:attr:`~rcpc.core.evaluate.Evaluator.params`), the items it added to the fields of the
result that the result class names in ``TRACED`` (lists, and dicts that only get new keys),
the warnings, reported errors and collected values it added to the
:class:`~rcpc.core.evaluate.Context`, and the comprehension steps it took: a statement whose
steps would exceed the budget is evaluated instead, so ``E0804`` is raised where it would be.
Only a run that ended without errors leaves a trace. The result is the same as evaluating
every statement (tests/test_trace.py compares the two on the bundled recipes and on
generated ones).
"""

from __future__ import annotations

from itertools import islice

from rcpc.core import record
from rcpc.core.limits import MAX_STEPS
from rcpc.core.syntax import ast
from rcpc.core.syntax.walk import walk


@record.frozen
class Step:
    """What one top-level statement did: ``bound`` (name, value) pairs, ``declared`` (name,
    declaration) pairs, ``added`` the items it added to each traced result field (in
    ``TRACED`` order; (key, value) pairs for a dict), ``warned``/``reported``/``collected``
    what it added to the context's lists, ``steps`` the comprehension steps it took."""

    bound: tuple
    declared: tuple
    added: tuple
    warned: tuple
    reported: tuple
    collected: tuple
    steps: int


@record.define(eq=False)
class Trace:
    """The steps of one run of ``module`` (one per top-level statement, in order) and, filled
    as later runs ask, the names each statement reads."""

    module: object
    steps: list
    _reads: dict = record.Factory(dict)

    def reads(self, i: int, stmt) -> frozenset:
        """Every name used in statement ``i`` (``stmt``), computed once."""
        found = self._reads.get(i)
        if found is None:
            found = self._reads[i] = frozenset(n.id for n in walk(stmt) if type(n) is ast.Name)
        return found


def _fields(result) -> tuple:
    return tuple([getattr(result, name) for name in getattr(type(result), "TRACED", ())])


def mark(ev, result) -> tuple:
    """Where the run stands (lengths of what a statement can add to) before a statement."""
    ctx = ev.ctx
    return (len(ev.params), tuple(map(len, _fields(result))), len(ctx.diagnostics), len(ctx.errors),
            len(ctx.collected), ctx.steps)


def _added(container, since: int) -> tuple:
    n = len(container) - since
    if not n:  # most statements add to none of them
        return ()
    if type(container) is dict:  # new keys come last (insertion order): read them off the end
        return tuple(reversed(tuple(islice(reversed(container.items()), n))))
    return tuple(container[since:])


def record(ev, result, stmt, at: tuple) -> Step:
    """The :class:`Step` of ``stmt``, just evaluated by ``ev`` from mark ``at``."""
    ctx = ev.ctx
    params, fields, warned, reported, collected, steps = at
    bound = ((stmt.name, ev.env[stmt.name]),) if type(stmt) is ast.Assign else ()
    return Step(bound, _added(ev.params, params), tuple(map(_added, _fields(result), fields)),
                _added(ctx.diagnostics, warned), _added(ctx.errors, reported), _added(ctx.collected, collected),
                ctx.steps - steps)


def replayable(ev, trace: Trace, i: int, stmt, dirty: set) -> bool:
    """Whether statement ``i`` can be done again from ``trace`` in ``ev``'s run: an
    assignment, or an expression statement the run does not skip (``skip_calls``), that
    binds no ``dirty`` name, reads none, and whose steps fit the budget. The caller makes
    the name of an assignment not done again dirty."""
    t = type(stmt)
    if t is ast.ExprStmt:
        call = stmt.expr
        if type(call) is ast.Call and type(call.func) is ast.Name and call.func.id in ev.skip_calls:
            return False
    elif t is not ast.Assign or stmt.name in dirty:
        return False
    return (i < len(trace.steps) and dirty.isdisjoint(trace.reads(i, stmt))
            and ev.ctx.steps + trace.steps[i].steps <= MAX_STEPS)


def replay(ev, result, step: Step) -> None:
    """Do again what ``step`` did, in ``ev``'s run with ``result``."""
    ctx = ev.ctx
    ev.env.update(step.bound)
    ev.params.update(step.declared)
    for container, items in zip(_fields(result), step.added):
        (container.update if type(container) is dict else container.extend)(items)
    ctx.diagnostics.extend(step.warned)
    ctx.errors.extend(step.reported)
    ctx.collected.extend(step.collected)
    ctx.steps += step.steps
