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

Recording is cheap, since most traces are never read (a recipe whose variants override
nothing, or that has none): the run keeps only a :func:`mark` before each statement (how long
each of those containers was, and the steps taken) and, at its end, what the containers hold
(:func:`traced`); the :class:`Step` of a statement is made from them when a later run asks
for it (:meth:`Trace.step`). The containers only grow during a run (a file it loads removes
only the errors and values its own run added), so the items between two marks are exactly
what the statement between them added (tests/test_trace.py holds the steps so made equal to
steps taken as each statement ends).
"""

from __future__ import annotations

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
    """What one run of ``module`` did, kept as :func:`traced` made it: ``env`` (the names
    bound), ``marks`` (one :func:`mark` before each top-level statement, then one at the
    end) and ``kept`` (each watched container's items from the first mark on); the
    :class:`Step` of each statement is made when asked (:meth:`step`), as are the names each
    statement reads."""

    module: object
    env: dict
    marks: list
    kept: tuple
    _steps: dict = record.Factory(dict)
    _reads: dict = record.Factory(dict)

    def __len__(self) -> int:
        """The number of statements the run did."""
        return len(self.marks) - 1

    def step(self, i: int) -> Step:
        """The :class:`Step` of statement ``i`` (``0 <= i < len(self)``), made once."""
        found = self._steps.get(i)
        if found is None:
            found = self._steps[i] = _step(self, i)
        return found

    def reads(self, i: int, stmt) -> frozenset:
        """Every name used in statement ``i`` (``stmt``), computed once."""
        found = self._reads.get(i)
        if found is None:
            found = self._reads[i] = frozenset(n.id for n in walk(stmt) if type(n) is ast.Name)
        return found


def _fields(result) -> tuple:
    return tuple([getattr(result, name) for name in getattr(type(result), "TRACED", ())])


def watched(ev, result) -> tuple:
    """The containers a statement of ``ev``'s run can add to, in :func:`mark`'s order: the
    declarations, the result's ``TRACED`` fields, the context's warnings, reported errors
    and collected values. Taken once a run: none of them is rebound during one."""
    ctx = ev.ctx
    return (ev.params, *_fields(result), ctx.diagnostics, ctx.errors, ctx.collected)


def mark(containers: tuple, ctx) -> tuple:
    """Where the run stands before a statement: the length of each of ``containers``
    (:func:`watched`), then the comprehension steps taken."""
    return (*map(len, containers), ctx.steps)


def traced(ev, module, containers: tuple, marks: list) -> Trace:
    """The :class:`Trace` of ``ev``'s run of ``module``, ended just now without errors:
    ``marks`` holds one :func:`mark` of ``containers`` before each statement and one after
    the last. Call before the run takes its errors and collected values off the context."""
    first = marks[0]
    kept = tuple((tuple(c.items()) if type(c) is dict else c)[at:] for c, at in zip(containers, first))
    return Trace(module, dict(ev.env), marks, kept)


def _step(trace: Trace, i: int) -> Step:
    first, (before, after) = trace.marks[0], trace.marks[i:i + 2]
    added = tuple(tuple(items[a - base:b - base]) if b != a else ()
                  for items, base, a, b in zip(trace.kept, first, before, after))
    stmt = trace.module.stmts[i]
    bound = ((stmt.name, trace.env[stmt.name]),) if type(stmt) is ast.Assign else ()
    return Step(bound, added[0], added[1:-3], *added[-3:], after[-1] - before[-1])


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
    return (i < len(trace) and dirty.isdisjoint(trace.reads(i, stmt))
            and ev.ctx.steps + trace.step(i).steps <= MAX_STEPS)


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
