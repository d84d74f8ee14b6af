"""Variant diff contracts (DESIGN.md §3.4).

``variant("tuned", set = {...}, against = "default", changes = {"trainer": ["k"]})`` states
that, relative to variant ``default``:

* every render not named in ``changes`` is byte-identical (and exists in both);
* every render named differs;
* for a named flag render (``.flags``) the set of keys whose *effective* (last-wins) value
  differs is exactly the declared key list.

A ``changes`` key names a render by file name (``trainer.flags``) or by stem (``trainer``:
every render with that stem, e.g. ``trainer.yaml`` and ``trainer.flags``). A key naming no
render is an error (``E0611``); a violated contract is ``E0610`` listing the actual delta.
"""

from __future__ import annotations

import attrs

from rcpc.diagnostics import Diagnostic
from rcpc.maxtext import resolved
from rcpc.values import FlagFile, List, Str, equal, type_name


@attrs.frozen
class FlagChange:
    """One effective-value change of a flag set: entries are None when the key is absent."""

    key: str
    old: object
    new: object

    def describe(self) -> str:
        from rcpc.emit.flags import value_text

        old = "(unset)" if self.old is None else value_text(self.old.value)
        new = "(unset)" if self.new is None else value_text(self.new.value)
        return f"{self.key}: {old} → {new}"


def flag_delta(old_flags, new_flags) -> list[FlagChange]:
    """Keys whose effective value differs between two flag sets (added and removed keys
    included), in order of first appearance (old keys first). Values compare as MaxText sees
    them: ``True`` and ``true`` are the same bool."""
    a, b = resolved(old_flags), resolved(new_flags)
    out = []
    for key in [*a, *(k for k in b if k not in a)]:
        ea, eb = a.get(key), b.get(key)
        if ea is None or eb is None or not equal(ea.value, eb.value):
            out.append(FlagChange(key, ea, eb))
    return out


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


def diff_report(old_build, new_build) -> list[dict]:
    """``rcpc diff``: per render of either build, a dict with ``render``, ``status``
    (:func:`render_delta`), ``diff`` (unified, labelled ``<variant>/<render>``) and, for a
    changed flag file, ``flags`` (the :class:`FlagChange` list of :func:`flag_delta`)."""
    import difflib

    old = {r.name: r for r in old_build.renders}
    new = {r.name: r for r in new_build.renders}
    report = []
    for name, status in render_delta(old_build, new_build):
        a = old[name].text if name in old else ""
        b = new[name].text if name in new else ""
        entry = {"render": name, "status": status,
                 "diff": "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True),
                                                      f"{old_build.variant}/{name}", f"{new_build.variant}/{name}"))}
        if status == "changed" and type(old[name].value) is FlagFile and type(new[name].value) is FlagFile:
            entry["flags"] = flag_delta(old[name].value.flags, new[name].value.flags)
        report.append(entry)
    return report


def _declared(variant, names: list[str]) -> tuple[dict, list[Diagnostic]]:
    """Render name → declared flag keys (None for a non-flag render) from ``changes``."""
    declared: dict = {}
    diags = []
    for key, keys in variant.changes.items.items():
        span = variant.changes.key_spans.get(key, variant.span)
        if type(keys) is not List or not all(type(k) is Str for k in keys.items):
            diags.append(Diagnostic("E0611", f"changes['{key}'] must be a list of flag keys, got {type_name(keys)}",
                                    keys.span, hint="write [] for a render that changes without flag keys"))
            continue
        matched = [n for n in names if n == key or n.rsplit(".", 1)[0] == key]
        if not matched:
            diags.append(Diagnostic("E0611", f"changes names render '{key}', which does not exist", span,
                                    hint="renders: " + ", ".join(names)))
            continue
        flag_keys = [k.value for k in keys.items]
        if flag_keys and not any(n.endswith(".flags") for n in matched):
            diags.append(Diagnostic("E0611", f"changes lists flag keys for '{key}', which has no .flags render",
                                    span))
        for n in matched:
            declared[n] = flag_keys if n.endswith(".flags") else None
    return declared, diags


def check_contract(variant, against_build, build) -> list[Diagnostic]:
    """Diagnostics for ``variant``'s contract (empty when it holds or there is none)."""
    if variant.against is None or variant.changes is None:
        return []
    delta = render_delta(against_build, build)
    declared, diags = _declared(variant, [n for n, _ in delta])
    if diags:
        return diags
    old = {r.name: r for r in against_build.renders}
    new = {r.name: r for r in build.renders}
    problems: list[str] = []
    actual: list[str] = []
    for name, status in delta:
        if status != "identical":
            actual.append(f"{name} {status}")
        if name not in declared:
            if status != "identical":
                problems.append(f"{name} is {status} but not declared in changes")
            continue
        if status == "identical":
            problems.append(f"{name} is declared to change but is byte-identical")
            continue
        keys = declared[name]
        if keys is None or status != "changed":
            continue
        if type(old[name].value) is FlagFile and type(new[name].value) is FlagFile:
            changes = flag_delta(old[name].value.flags, new[name].value.flags)
            actual.extend(f"  {c.describe()}" for c in changes)
            got = {c.key for c in changes}
            if got != set(keys):
                extra = sorted(got - set(keys))
                missing = sorted(set(keys) - got)
                if extra:
                    problems.append(f"{name}: effective value of {', '.join(extra)} changed but is not declared")
                if missing:
                    problems.append(f"{name}: {', '.join(missing)} declared to change but did not")
    if not problems:
        return []
    notes = tuple(problems) + (("actual delta:", *("  " + a for a in actual)) if actual
                               else ("actual delta: none",))
    return [Diagnostic("E0610", f"variant '{variant.name}' breaks its contract against '{variant.against}'",
                       variant.span, notes=notes,
                       hint="fix the recipe, or declare the change in changes = {...}")]
