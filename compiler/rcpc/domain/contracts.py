"""Variant diff contracts (DESIGN.md §3.4), checked inside every render.

``variant("tuned", set = {...}, against = "default", changes = {...})`` states what ``tuned``
changes relative to ``default``. Each ``changes`` item names renders and what may change in
them:

* ``"trainer": ["custom_mesh_and_rule"]`` — a render *stem* (every render of that name:
  ``trainer.flags``, ``trainer.yaml``) or a flag render's file name (``trainer.flags``), with
  **flag keys**;
* ``"trainer.yaml": ["spec.replicatedJobs[name=pw-node].replicas"]`` — a manifest's file
  name, with **manifest paths** (spelled as in :mod:`rcpc.domain.delta`; a path covers everything
  under it, including adding or removing it).

The contract holds when:

* every render not named is byte-identical to the other variant's (and exists in both);
* every render named differs;
* inside a named render, every difference of the *data* is explained: it is under a
  declared path, or it is made only of tokens of declared flag keys (``.argv`` items, and
  the pieces of strings built from ``.argv``/``.shell``: values carry their provenance,
  :mod:`rcpc.domain.provenance`), and wherever a declared key's tokens changed its effective (last)
  value changed too;
* in a ``.flags`` render the keys whose *effective* value differs are exactly the declared
  keys; a key declared for manifests only changes effectively in at least one of them; a
  declared path has a change under it.

Errors: ``E0610`` (the contract is broken; notes list every problem and the actual delta),
``E0612`` (one difference the contract does not explain: render, path, old → new, and the
recipe line that made the new value), ``E0611`` (a ``changes`` item naming no render, or not a
list of strings), ``E0613`` (a manifest path that cannot be parsed), ``E0614`` (a manifest
path naming nothing in either variant's render).
"""

from __future__ import annotations

from rcpc.core import record
from rcpc.domain.delta import (Change, PathError, all_paths, contract_delta, covered, format_path, parse_path,
                               resolve)
from rcpc.core.diagnostics import Diagnostic, did_you_mean
from rcpc.domain.maxtext import flag_delta
from rcpc.domain.provenance import has_tokens
from rcpc.core.values import List, Str, type_name
from rcpc.domain.renders import render_changes, render_data
from rcpc.domain.values import FlagFile

MAX_REPORTED = 20  # E0612 diagnostics per variant; the rest are counted in E0610's notes


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
    """One ``changes`` item: the renders it names, its flag keys or its manifest paths
    (``(text, segments, span)``)."""

    key: str
    span: object
    renders: tuple
    flag_keys: tuple = ()
    paths: tuple = ()


def _entries(variant, names: list[str]) -> tuple[list[_Entry], list[Diagnostic]]:
    entries, diags = [], []
    for key, items in variant.changes.items.items():
        span = variant.changes.key_spans.get(key, variant.span)
        if type(items) is not List or not all(type(k) is Str for k in items.items):
            diags.append(Diagnostic("E0611", f"changes['{key}'] must be a list of strings, got {type_name(items)}",
                                    items.span, hint="list flag keys, or manifest paths under a .yaml name"))
            continue
        matched = tuple(n for n in names if n == key or n.rsplit(".", 1)[0] == key)
        if not matched:
            diags.append(Diagnostic("E0611", f"changes names render '{key}', which does not exist", span,
                                    hint=did_you_mean(key, names) or "renders: " + ", ".join(names)))
            continue
        if matched == (key,) and key.endswith(".yaml"):
            paths = []
            for item in items.items:
                try:
                    paths.append((item.value, parse_path(item.value), item.span))
                except PathError as exc:
                    col = item.span.col + exc.col  # after the opening quote
                    diags.append(Diagnostic("E0613", f"manifest path {item.value!r}: {exc}",
                                            record.evolve(item.span, col=col, end_line=item.span.line, end_col=col + 1),
                                            hint="write paths as spec.replicatedJobs[name=proc].replicas, "
                                                 "list items as [N] or [name=VALUE], other keys as [\"a.b/c\"]"))
            entries.append(_Entry(key, span, matched, paths=tuple(paths)))
        else:
            entries.append(_Entry(key, span, matched, flag_keys=tuple((k.value, k.span) for k in items.items)))
    return entries, diags


def check_contract(variant, against_build, build) -> list[Diagnostic]:
    """Diagnostics for ``variant``'s contract against ``against_build`` (empty when it holds
    or there is none): ``E0610`` first, then each ``E0612``."""
    if variant.against is None or variant.changes is None:
        return []
    delta = render_delta(against_build, build)
    entries, diags = _entries(variant, [n for n, _ in delta])
    old = {r.name: r.value for r in against_build.renders}
    new = {r.name: r.value for r in build.renders}
    diags.extend(_flag_keys_without_flags(entries, old, new))
    if diags:
        return diags
    keys: dict[str, set] = {}
    paths: dict[str, list] = {}
    for e in entries:
        for n in e.renders:
            keys.setdefault(n, set()).update(k for k, _ in e.flag_keys)
            paths.setdefault(n, []).extend(e.paths)
    problems: list[str] = []
    unexplained: list[tuple[str, Change]] = []
    effective: dict[str, set] = {}
    for name, status in delta:
        if name not in keys:
            if status != "identical":
                problems.append(f"{name} is {status} but not declared in changes")
            if status == "changed":
                unexplained.extend((name, c) for c in contract_delta(render_data(old[name]),
                                                                     render_data(new[name]), ())[0])
            continue
        if status == "identical":
            problems.append(f"{name} is declared to change but is byte-identical")
            continue
        if status == "changed":
            changes, effective[name] = _named_render(name, old[name], new[name], keys[name], paths[name],
                                                     problems, diags)
            unexplained.extend((name, c) for c in changes)
    for e in entries:
        if any(n.endswith(".flags") for n in e.renders):
            continue
        changed = set().union(*(effective.get(n, set()) for n in e.renders))
        missing = [k for k, _ in e.flag_keys if k not in changed]
        if missing and any(n in effective for n in e.renders):
            problems.append(f"{', '.join(e.renders)}: {', '.join(missing)} declared to change but did not")
    if unexplained:
        counts: dict[str, int] = {}
        for name, _ in unexplained:
            counts[name] = counts.get(name, 0) + 1
        problems.extend(f"{name}: {n} change{'s' if n > 1 else ''} not explained by changes"
                        for name, n in counts.items() if name in keys)
    if not problems:
        return diags
    actual: list[str] = []
    for name, status in delta:
        if status != "identical":
            actual.append(f"{name} {status}")
        if status == "changed":
            actual.extend(f"  {line}" for line in _summary(old[name], new[name]))
    reported = _unexplained(variant, unexplained, keys)
    notes = tuple(problems) + (("actual delta:", *("  " + a for a in actual)) if actual
                               else ("actual delta: none",))
    if len(reported) > MAX_REPORTED:
        notes += (f"{len(reported) - MAX_REPORTED} more unexplained changes are not shown",)
    head = Diagnostic("E0610", f"variant '{variant.name}' breaks its contract against '{variant.against}'",
                      variant.span, notes=notes, hint="fix the recipe, or declare the change in changes = {...}")
    return [head, *diags, *reported[:MAX_REPORTED]]


def _named_render(name: str, old_value, new_value, keys: set, paths: list, problems: list,
                  diags: list) -> tuple[list[Change], set]:
    """Check one changed render named in ``changes`` with its declared flag ``keys`` and
    manifest ``paths``; appends to ``problems`` (E0610 notes) and ``diags`` (E0614). Returns
    the changes nothing declared explains, and the keys whose effective value changed."""
    a, b = render_data(old_value), render_data(new_value)
    declared = []
    for text, segs, span in paths:
        found = sorted(set(resolve(segs, a)) | set(resolve(segs, b)), key=repr)
        if not found:
            diags.append(Diagnostic("E0614", f"changes names path '{text}', which is not in {name}", span,
                                    hint=did_you_mean(text, all_paths(b)) or "paths are spelled as in "
                                    "`rcpc diff`: spec.replicatedJobs[name=proc].replicas"))
        declared.append((text, found))
    changes, effective = contract_delta(a, b, keys)
    for text, found in declared:
        if found and not any(covered(c.path, found) for c in changes):
            problems.append(f"{name}: {text} declared to change but did not")
    if type(old_value) is FlagFile:
        got = {c.key for c in flag_delta(old_value.flags, new_value.flags)}
        extra, missing = sorted(got - keys), sorted(keys - got)
        if extra:
            problems.append(f"{name}: effective value of {', '.join(extra)} changed but is not declared")
        if missing:
            problems.append(f"{name}: {', '.join(missing)} declared to change but did not")
    return [c for c in changes if not any(covered(c.path, found) for _, found in declared)], effective


def _summary(old_value, new_value, limit: int = 5) -> list:
    """The first few changes of a changed render for E0610's actual delta."""
    changes = render_changes(old_value, new_value)
    if changes.get("flags") == []:
        return ["no flag's effective value changes"]
    found = changes.get("flags") or changes.get("paths") or []
    return [c.describe() for c in found[:limit]]


def _flag_keys_without_flags(entries, old: dict, new: dict) -> list[Diagnostic]:
    """``E0611`` for flag keys listed for renders that embed no flag set."""
    out = []
    for e in entries:
        if not e.flag_keys or any(n.endswith(".flags") for n in e.renders):
            continue
        if not any(has_tokens(render_data(v[n])) for n in e.renders for v in (old, new) if n in v):
            yaml_names = [n for n in e.renders if n.endswith(".yaml")]
            out.append(Diagnostic("E0611", f"changes lists flag keys for '{e.key}', which embeds no flag set",
                                  e.span, hint=f"manifest paths go under the file name: \"{yaml_names[0]}\""
                                  if yaml_names else None))
    return out


def _unexplained(variant, found: list[tuple[str, Change]], keys: dict) -> list[Diagnostic]:
    """One ``E0612`` per unexplained change, the same change in several renders (e.g. every
    rollout) reported once. ``keys``: render → its declared flag keys."""
    groups: dict = {}
    for name, c in found:
        where, why = _origin(c, keys.get(name, ()))
        groups.setdefault((c.describe(), where), (c, [], why))[1].append(name)
    out = []
    for (text, where), (c, names, why) in groups.items():
        renders = names[0] if len(names) == 1 else f"{names[0]} and {len(names) - 1} more render(s)"
        path = format_path(c.path)
        notes = (f"in: {', '.join(names)}",) if len(names) > 1 else ()
        related = ()
        if where is not None:
            label = "the container without it is made here" if c.kind == "removed" else "the new value is made here"
            related = ((label, where),) + _calls(why)
        key = _flag_key(c)
        hint = (f"declare the flag key: changes = {{\"{names[0].rsplit('.', 1)[0]}\": [\"{key}\"]}}" if key else
                f"declare the path: changes = {{\"{names[0]}\": [\"{path}\"]}}, or leave it unchanged"
                if names[0].endswith(".yaml") else "leave it unchanged, or declare what changes")
        out.append(Diagnostic("E0612", f"variant '{variant.name}' changes {renders} at {text}", variant.span,
                              related=related, notes=notes, hint=hint))
    return out


def _origin(c: Change, keys) -> tuple:
    """(span, why) of the recipe text that made a change: when the new string holds a token
    of an undeclared flag that the old one does not, that flag's entry and its layer's
    ``why``; else the span of the new value (or of the container that lost an item) and, for
    a dict, its ``why``."""
    v = c.where
    if type(v) is Str and v.pieces:
        before = {(o.key, c.old.value[a:b]) for a, b, o in c.old.pieces} if type(c.old) is Str else set()
        for a, b, o in v.pieces:
            if o.key not in keys and (o.key, v.value[a:b]) not in before:
                return o.entry.key_span, o.why
    return getattr(v, "span", None), getattr(v, "why", ())


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


def _flag_key(c: Change) -> str | None:
    """The flag key when the change is one whole flag token (an ``.argv`` item)."""
    for v in (c.new, c.old):
        if type(v) is Str and len(v.pieces) == 1 and v.pieces[0][:2] == (0, len(v.value)):
            return v.pieces[0][2].key
    return None
