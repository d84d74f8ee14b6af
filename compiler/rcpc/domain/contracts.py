"""Variant diff contracts (docs/review.md), checked inside every render, whatever its shape.

``variant("tuned", set = {...}, against = "default", changes = {...})`` states what ``tuned``
changes relative to ``default``. Each ``changes`` item names renders and what may change in
them:

* ``"trainer": ["custom_mesh_and_rule"]`` — a render *stem* (every render of that name:
  ``trainer.flags``, ``trainer.yaml``, ``trainer.sh``) or a file name, with **flag keys**;
* ``"trainer.yaml": ["spec.replicatedJobs[name=pw-node].replicas"]`` — the file name of a
  render whose data has places (:attr:`~rcpc.domain.renders.RenderKind.paths`: a manifest, a
  command file), with **paths** (spelled as in :mod:`rcpc.domain.delta`; a path covers
  everything under it, including adding or removing it).

A render is compared in two parts (the render protocol, :mod:`rcpc.domain.embedding`): the
flag sets it carries, wherever they are (a ``.flags`` file, an ``args`` list, a ``bash -c``
string, a launch command's ``--command`` word), by **key**; everything else by **path**, on
its data with each run of flag tokens replaced by one marker. A path never explains a flag:
declaring ``...command[2]`` covers the text around the flags in that string, not them.

The contract holds when:

* every render not named is byte-identical to the other variant's (and exists in both);
* every render named differs;
* in a named render, the keys whose *effective* (last) value changed in any flag set it
  carries are declared; each declared key it carries changed there; no key's tokens changed
  without its effective value (an override that re-sets the value it has);
* in a named render, every other difference is under a declared path, and each declared path
  has a change under it.

Errors: ``E0610`` (the contract is broken; notes list every problem and the actual delta),
``E0612`` (one difference the contract does not explain: a flag key with its old and new value
and the recipe line that set it, or a path, old → new, and the line that made it), ``E0611``
(a ``changes`` item naming no render, flag keys for renders that carry no flag set, or not a
list of strings), ``E0613`` (a path that cannot be parsed), ``E0614`` (a path naming nothing in
either variant's render).
"""

from __future__ import annotations

from rcpc.core import record
from rcpc.core.diagnostics import Diagnostic, did_you_mean
from rcpc.core.values import List, Str, equal, type_name
from rcpc.domain.delta import (Change, PathError, all_paths, covered, data_delta, format_path, made_in, parse_path,
                               resolve)
from rcpc.domain.embedding import delta as flag_delta, embeddings, match, readable, without_flags
from rcpc.domain.renders import kind_of, render_data

MAX_REPORTED = 20  # E0612 diagnostics per variant; the rest are counted in E0610's notes
MAX_CAUSES = 8  # a variant's set entries built again one by one to find the one an E0612 comes from


def render_delta(old_build, new_build) -> list[tuple[str, str]]:
    """(render name, status) for every render of either build, old order first; status is
    ``identical``, ``changed``, ``added`` or ``removed``."""
    old = {r.name: r for r in old_build.renders}
    new = {r.name: r for r in new_build.renders}
    out = []
    for name in [*old, *(n for n in new if n not in old)]:
        if name not in new:
            out.append((name, "removed"))
        elif name not in old:
            out.append((name, "added"))
        else:
            out.append((name, "identical" if old[name].text == new[name].text else "changed"))
    return out


# the contract -------------------------------------------------------------------------------
@record.frozen
class _Entry:
    """One ``changes`` item: the renders it names, its flag keys or its paths
    (``(text, segments, span)``)."""

    key: str
    span: object
    renders: tuple
    flag_keys: tuple = ()
    paths: tuple = ()


@record.frozen
class _Flag:
    """An unexplained flag change in one render: a key's effective value (``change``, a
    :class:`~rcpc.domain.maxtext.flagset.FlagChange`) or its tokens alone (``tokens``: old and new
    texts), at ``path`` of the render."""

    render: str
    stem: str
    path: tuple
    key: str
    change: object = None
    tokens: tuple = ()
    why: tuple = ()  # the conditionals and calls that chose the layer of the new (else old) entry
    where: object = None  # token changes alone: the span of the last token written


def _entries(variant, values: dict) -> tuple[list[_Entry], list[Diagnostic]]:
    names = list(values)
    entries, diags = [], []
    for key, items in variant.changes.items.items():
        span = variant.changes.key_spans.get(key, variant.span)
        if type(items) is not List or not all(type(k) is Str for k in items.items):
            diags.append(Diagnostic("E0611", f"changes['{key}'] must be a list of strings, got {type_name(items)}",
                                    items.span, hint="list flag keys, or paths under a render's file name"))
            continue
        matched = tuple(n for n in names if n == key or values[n].name == key)  # a file name, or a stem
        if not matched:
            # a render by its file name (paths in it) or its name (the keys of its flag sets): "lanch" is "launch"
            either = list(dict.fromkeys(x for n in names for x in (values[n].name, n)))
            diags.append(Diagnostic("E0611", f"changes names render '{key}', which does not exist", span,
                                    hint=did_you_mean(key, either) or "renders: " + ", ".join(names)))
            continue
        if matched == (key,) and kind_of(values[key]).paths:
            paths = []
            for item in items.items:
                try:
                    paths.append((item.value, parse_path(item.value), item.span))
                except PathError as exc:
                    col = item.span.col + exc.col  # after the opening quote
                    diags.append(Diagnostic("E0613", f"path {item.value!r}: {exc}",
                                            record.evolve(item.span, col=col, end_line=item.span.line, end_col=col + 1),
                                            hint="write paths as spec.replicatedJobs[name=proc].replicas, "
                                                 "list items as [N] or [name=VALUE], other keys as [\"a.b/c\"]"))
            entries.append(_Entry(key, span, matched, paths=tuple(paths)))
        else:
            entries.append(_Entry(key, span, matched, flag_keys=tuple((k.value, k.span) for k in items.items)))
    return entries, diags


def check_contract(variant, against_build, build, memo: dict | None = None, rebuild=None) -> list[Diagnostic]:
    """Diagnostics for ``variant``'s contract against ``against_build`` (empty when it holds
    or there is none): ``E0610`` first, then each ``E0612``. A sweep's point
    (:attr:`~rcpc.domain.values.Variant.sweep`) may leave what it declares unchanged.
    ``memo``: what the run found under each large value of the renders, as for
    :func:`rcpc.domain.embedding.embeddings` (the variants' renders share values, and the
    build walked them already: :func:`rcpc.domain.launch.render_sites`). ``rebuild(sets)``:
    the variant built with other param values (a ``VariantBuild``, None when that fails),
    with which each ``E0612`` names the entry of the variant's ``set`` it comes from
    (:class:`_Causes`)."""
    if variant.against is None or variant.changes is None:
        return []
    exact = not variant.sweep
    delta = render_delta(against_build, build)
    old = {r.name: r.value for r in against_build.renders}
    new = {r.name: r.value for r in build.renders}
    entries, diags = _entries(variant, {**old, **new})
    diags.extend(_flag_keys_without_flags(entries, old, new, memo))
    if diags:
        return diags
    keys: dict[str, set] = {}
    paths: dict[str, list] = {}
    for e in entries:
        for n in e.renders:
            keys.setdefault(n, set()).update(k for k, _ in e.flag_keys)
            paths.setdefault(n, []).extend(e.paths)
    problems: list[str] = []
    unexplained: list = []  # (render, Change) and _Flag
    actual: list[str] = []
    for name, status in delta:
        if status != "identical":
            actual.append(f"{name} {status}")
        if status == "identical":
            if name in keys and exact:
                problems.append(f"{name} is declared to change but is byte-identical")
            continue
        if name not in keys:
            problems.append(f"{name} is {status} but not declared in changes")
        if status != "changed":
            continue
        compared = _compare(name, old[name], new[name], memo)
        actual.extend(f"  {line}" for line in compared.summary())
        declared = _declared_paths(name, paths.get(name, ()), compared, problems if exact else [], diags)
        unexplained.extend((name, c, compared.data[1]) for c in compared.paths
                           if not any(covered(c.path, d) for d in declared))
        allowed = keys.get(name, set())
        extra = sorted({f.key for f in compared.flags if f.change is not None} - allowed)
        if extra and name in keys:
            problems.append(f"{name}: effective value of {', '.join(extra)} changed but is not declared")
        for f in compared.flags:
            if f.change is None or f.key not in allowed:
                unexplained.append(f)
        missing = [k for k in sorted(allowed) if k in compared.carried and k not in compared.changed]
        if missing and exact:
            problems.append(f"{name}: {', '.join(missing)} declared to change but did not")
    for e in entries:  # a declared key that no named render carries, in either variant
        carried = set().union(*(_carried_keys(v[n], memo) for n in e.renders for v in (old, new) if n in v))
        for k in (k for k, _ in e.flag_keys if k not in carried):  # a misspelt key, or another render's
            near = did_you_mean(k, sorted(carried))
            problems.append(f"{', '.join(e.renders)}: {k} declared to change, but no flag set there has that key"
                            + (f" ({near})" if near else ""))
    counts: dict[str, int] = {}
    for u in unexplained:
        name = u.render if type(u) is _Flag else u[0]
        if name in keys:
            counts[name] = counts.get(name, 0) + 1
    problems.extend(f"{name}: {n} change{'s' if n > 1 else ''} not explained by changes" for name, n in counts.items())
    if not problems:
        return diags
    reported = _unexplained(variant, unexplained, new, _Causes(variant, against_build, build, old, rebuild, memo))
    notes = tuple(problems) + (("actual delta:", *("  " + a for a in actual)) if actual else ("actual delta: none",))
    if len(reported) > MAX_REPORTED:
        notes += (f"{len(reported) - MAX_REPORTED} more unexplained changes are not shown",)
    head = Diagnostic("E0610", f"variant '{variant.name}' breaks its contract against '{variant.against}'",
                      variant.span, notes=notes, hint="fix the recipe, or declare the change in changes = {...}")
    return [head, *diags, *reported[:MAX_REPORTED]]


@record.frozen
class _Compared:
    """One changed render, both parts: ``flags`` (every :class:`_Flag` of its flag sets,
    effective changes and token-only changes), ``changed`` (keys whose effective value
    changed), ``carried`` (keys of any flag set it carries, in either variant), and ``paths``
    (the :class:`~rcpc.domain.delta.Change` of everything else); ``data`` the old and new data
    without flags (for declared paths)."""

    flags: tuple
    changed: frozenset
    carried: frozenset
    paths: tuple
    data: tuple

    def summary(self, limit: int = 5) -> list[str]:
        """The first few changes, for E0610's actual delta."""
        lines = [f.change.describe() for f in self.flags if f.change is not None]
        lines = list(dict.fromkeys(lines))
        lines += [readable(c.describe()) for c in self.paths]
        if not lines:
            lines = ["no flag's effective value changes" if self.flags else "text changed, data the same"]
        return lines[:limit]


def _compare(name: str, old_value, new_value, memo: dict | None) -> _Compared:
    a, b = render_data(old_value), render_data(new_value)
    flags, changed, carried = [], set(), set()
    for ea, eb in match(embeddings(a, memo), embeddings(b, memo)):
        carried.update(*(e.keys() for e in (ea, eb) if e is not None))
        d = flag_delta(ea, eb)
        at = (eb or ea).path
        why = {id(t.entry): t.why for e in (ea, eb) if e is not None for t, _ in e.tokens}
        flags.extend(_Flag(name, new_value.name, at, c.key, change=c,
                           why=why.get(id(c.new if c.new is not None else c.old), ())) for c in d.changes)
        flags.extend(_Flag(name, new_value.name, at, key, tokens=(x, y), why=t.why if t else (),
                           where=t.entry.key_span if t else None) for key, x, y, t in d.ineffective)
        changed.update(c.key for c in d.changes)
    na, nb = without_flags(a), without_flags(b)
    return _Compared(tuple(flags), frozenset(changed), frozenset(carried), tuple(data_delta(na, nb)), (na, nb))


def _carried_keys(value, memo: dict | None) -> set:
    return {k for e in embeddings(render_data(value), memo) for k in e.keys()}


def _declared_paths(name: str, declared: tuple, compared: _Compared, problems: list, diags: list) -> list:
    """The canonical paths each declared path names (``E0614`` for one naming nothing; a
    problem for one with no change under it)."""
    a, b = compared.data
    out = []
    for text, segs, span in declared:
        found = sorted(set(resolve(segs, a)) | set(resolve(segs, b)), key=repr)
        if not found:
            diags.append(Diagnostic("E0614", f"changes names path '{text}', which is not in {name}", span,
                                    hint=did_you_mean(text, all_paths(b)) or "paths are spelled as in "
                                    "`rcpc diff`: spec.replicatedJobs[name=proc].replicas"))
        elif not any(covered(c.path, found) for c in compared.paths):
            problems.append(f"{name}: {text} declared to change but did not")
        out.append(found)
    return out


def _flag_keys_without_flags(entries, old: dict, new: dict, memo: dict | None) -> list[Diagnostic]:
    """``E0611`` for flag keys listed for renders that carry no flag set."""
    out = []
    for e in entries:
        if not e.flag_keys:
            continue
        if not any(embeddings(render_data(v[n]), memo) for n in e.renders for v in (old, new) if n in v):
            named = [n for n in e.renders if kind_of((new.get(n) or old.get(n))).paths]
            out.append(Diagnostic("E0611", f"changes lists flag keys for '{e.key}', which embeds no flag set",
                                  e.span, hint=f"paths go under the file name: \"{named[0]}\""
                                  if named else None))
    return out


def _unexplained(variant, found: list, new: dict, causes) -> list[Diagnostic]:
    """One ``E0612`` per unexplained change, the same change in several renders (e.g. every
    rollout) or places reported once, with the ``set`` entries it comes from (``causes``, a
    :class:`_Causes`)."""
    groups: dict = {}
    for u in found:
        if type(u) is _Flag:
            text, where, why, label, hint = _flag_text(variant, u)
            at = f"{u.render} at {format_path(u.path)}" if u.path else u.render
        else:
            name, c, data = u
            text = readable(c.describe())
            # a value with no call chain of its own (a string, a list) written in a dict made in a function: the
            # calls that made that dict, so the recipe's call site is shown, not only a library's line
            where = getattr(c.where, "span", None)
            why = getattr(c.where, "why", ()) or made_in(data, c.path, where)
            label = "the container without it is made here" if c.kind == "removed" else "the new value is made here"
            hint = (f"declare the path: changes = {{\"{name}\": [\"{format_path(c.path)}\"]}}, or leave it unchanged"
                    if kind_of(new[name]).paths else "leave it unchanged, or declare what changes")
            at = name
            text = f"{name} at {text}"
        groups.setdefault((text, where), (u, [], why, label, hint))[1].append(at)
    out = []
    for (text, where), (u, places, why, label, hint) in groups.items():
        related = (((label, where),) + _calls(why) if where is not None else ()) + causes.of(u)
        notes = (f"in: {', '.join(places)}",) if len(places) > 1 else ()
        if type(u) is _Flag:
            shown = places[0] if len(places) == 1 else f"{places[0]} and {len(places) - 1} more place(s)"
            message = f"variant '{variant.name}' changes {shown}: {text}"
        else:
            message = f"variant '{variant.name}' changes " + (text if len(places) == 1 else
                                                              f"{text} (and {len(places) - 1} more render(s))")
        out.append(Diagnostic("E0612", message, variant.span, related=related, notes=notes, hint=hint))
    return out


class _Causes:
    """Which entries of a variant's ``set`` an unexplained change comes from: of the params
    the variant sets to a value other than its ``against`` variant's, each one that, set back
    to that variant's value (the rest kept), leaves the change out; when the two builds differ
    in one param alone, set by the variant, that one without building again. None is named
    when the variant sets more than :data:`MAX_CAUSES` such params, when no ``rebuild`` is
    given, when the change needs several of them together or comes from the ``against``
    variant's own ``set``. Builds are made once a param, on the first change that asks."""

    def __init__(self, variant, against_build, build, old: dict, rebuild, memo):
        theirs = against_build.params
        self.variant, self.theirs, self.old, self.rebuild, self.memo = variant, theirs, old, rebuild, memo
        self.params = [p for p, v in variant.sets.items.items()
                       if p in build.params and not (p in theirs and equal(theirs[p], v))]
        # every param whose value differs between the two builds (the against variant's own set entries too)
        self.differ = [p for p, v in build.params.items() if not (p in theirs and equal(theirs[p], v))]
        self.built: dict = {}

    def of(self, u) -> tuple:
        """Related spans (``caused by setting P here``, at the key of ``set``) of the params
        unexplained change ``u`` (a :class:`_Flag`, or ``(render, Change, data)``) comes from;
        one on the variant's first line is left out (the diagnostic quotes that line)."""
        params = self.params
        if len(params) == 1 and self.differ == params:  # the builds differ in this param alone
            found = params
        elif params and self.rebuild is not None and len(params) <= MAX_CAUSES:
            found = [p for p in params if self._gone(p, u)]
        else:
            return ()
        at, spans = self.variant.span, self.variant.sets.key_spans
        # an entry on the variant's first line is quoted with it (the diagnostic's own span) already
        return tuple((f"caused by setting {p} here", spans[p]) for p in found
                     if p in spans and (spans[p].path, spans[p].line) != (at.path, at.line))

    def _gone(self, param: str, u) -> bool:
        """Whether ``u`` is not among the changes once ``param`` is set back."""
        if param not in self.built:
            sets = dict(self.variant.sets.items)
            if param in self.theirs:
                sets[param] = self.theirs[param]
            else:
                del sets[param]
            self.built[param] = self.rebuild(sets)
        build = self.built[param]
        name = u.render if type(u) is _Flag else u[0]
        value = None if build is None else next((r.value for r in build.renders if r.name == name), None)
        if value is None or name not in self.old:
            return False
        compared = _compare(name, self.old[name], value, self.memo)
        if type(u) is _Flag:
            return not any(f.key == u.key and (f.change is None) == (u.change is None) for f in compared.flags)
        return not any(c.path == u[1].path for c in compared.paths)


def _flag_text(variant, f: _Flag) -> tuple:
    """(text, span, why, label, hint) of an unexplained flag change."""
    declare = f'declare the flag key: changes = {{"{f.stem}": ["{f.key}"]}}'
    if f.change is None:
        (a, b) = f.tokens
        return (f"the tokens of flag '{f.key}' change ({', '.join(a) or 'none'} → {', '.join(b) or 'none'}) but its "
                "effective value does not", f.where, f.why, "the last token is made here",
                "remove the override that sets the value the flag already has")
    c = f.change
    entry = c.new if c.new is not None else c.old
    return (f"flag {c.describe()}", entry.key_span, f.why,
            "the new value is made here" if c.new is not None else "the value it loses is made here", declare)


def _calls(why: tuple) -> tuple:
    """Related spans of the function calls a value was made in, innermost first, and of the
    conditionals that chose it: the call site that chose a value made inside a function."""
    out = []
    for span, value, what in why:
        if value is None:  # (call span, None, function name)
            out.append((f"in {what}(), called here", span))
        else:
            out.append((f"chosen because this is {'true' if value else 'false'}", span))
    return tuple(out)
