"""Review reports of ``rcpc diff`` (docs/review.md): per recipe × variant × render, whether it
is identical, changed, added or removed; for a changed render the keys whose *effective* value
changed in any flag set it carries (wherever: a flag file, a JobSet's command, a launch
command), and the path-level delta of the rest (:mod:`rcpc.domain.delta`); then the unified
diff.

Formats: text (coloured on a terminal unless ``NO_COLOR`` is set, with the changed words of
a changed line highlighted, so a long ``args`` or ``command`` line is not reviewed as one
unit), ``--stat`` (one line per render that is not identical), JSON, and Markdown for a pull
request: whether every contract holds, one row per effective flag change with the renders it
reaches, the other changes by path, and the unified diffs of what the rows do not say, folded.
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

import attrs

from rcpc import __version__
from rcpc.core import record
from rcpc.core.diagnostics import CompileError, did_you_mean_or_list, error, visible
from rcpc.core.envvars import get
from rcpc.core.session import Session
from rcpc.domain.embedding import readable
from rcpc.domain.renders import render_changes
from rcpc.domain.delta import format_path
from rcpc.domain.maxtext.emit import value_text
from rcpc.core.values import to_python


@attrs.frozen
class RenderDiff:
    """One render compared: ``name`` is ``recipe/variant/render`` (or the render alone in a
    variant diff); ``flags`` / ``paths`` are set when a flag file / manifest changed."""

    name: str
    render: str
    status: str
    diff: str
    flags: list | None = None
    paths: list | None = None
    recipe: str = ""
    variant: str = ""

    def lines(self) -> list[str]:
        """The effective flag changes, then the path-level delta, one line a change."""
        out = [c.describe() for c in self.flags or ()] + [readable(c.describe()) for c in self.paths or ()]
        if not out and self.status == "changed":
            return ["no flag's effective value changes"]
        return out

    def counts(self) -> tuple[int, int]:
        """Lines added and removed by the unified diff."""
        body = self.diff.splitlines()[2:]
        return (sum(1 for x in body if x.startswith("+")), sum(1 for x in body if x.startswith("-")))


def compare(old_renders, new_renders, old_label: str, new_label: str, recipe: str = "",
            variant: str = "") -> list[RenderDiff]:
    """Every render of ``old_renders`` and ``new_renders`` (tuples of
    :class:`~rcpc.domain.recipe.Render`, either None when the variant is missing on that side) in
    order (old first). With ``recipe`` and ``variant``, a render is named
    ``recipe/variant/render``; the labels prefix the unified diff's file names."""
    old = {r.name: r for r in old_renders or ()}
    new = {r.name: r for r in new_renders or ()}
    out = []
    for render in [*old, *(n for n in new if n not in old)]:
        a, b = old.get(render), new.get(render)
        status = ("removed" if b is None else "added" if a is None
                  else "identical" if a.text == b.text else "changed")
        full = f"{recipe}/{variant}/{render}" if recipe else render
        diff = "".join(difflib.unified_diff(a.text.splitlines(True) if a else [], b.text.splitlines(True) if b else [],
                                            f"{old_label}{full}", f"{new_label}{full}"))
        extra = render_changes(a.value, b.value) if status == "changed" else {}
        out.append(RenderDiff(full, render, status, diff, extra.get("flags"), extra.get("paths"), recipe, variant))
    return out


def totals(diffs: list[RenderDiff]) -> str:
    """``2 changed, 1 added, 0 removed, 52 identical (of 55 renders)``."""
    n = {s: sum(1 for d in diffs if d.status == s) for s in ("changed", "added", "removed", "identical")}
    return (f"{n['changed']} changed, {n['added']} added, {n['removed']} removed, {n['identical']} identical "
            f"(of {len(diffs)} render{'s' if len(diffs) != 1 else ''})")


# JSON -------------------------------------------------------------------------------------
def _plain(v):
    if v is None or isinstance(v, (str, int, float, bool, list)):
        return v
    try:
        return to_python(v)
    except TypeError:
        return None


def to_json(d: RenderDiff) -> dict:
    """A render's comparison as plain data."""
    out = {"render": d.render, "status": d.status, "diff": d.diff}
    if d.recipe:
        out = {"recipe": d.recipe, "variant": d.variant, **out}
    if d.flags is not None:
        out["flags"] = [{"key": c.key, "old": None if c.old is None else value_text(c.old.value),
                         "new": None if c.new is None else value_text(c.new.value)} for c in d.flags]
    if d.paths is not None:
        out["paths"] = [{"path": format_path(c.path), "kind": c.kind, "old": _plain(c.old), "new": _plain(c.new),
                         "text": c.describe()} for c in d.paths]
    return out


# text -------------------------------------------------------------------------------------
RED, GREEN, YELLOW, CYAN, BOLD, REVERSE, RESET = ("\033[31m", "\033[32m", "\033[33m", "\033[36m", "\033[1m",
                                                   "\033[7m", "\033[0m")
_STATUS_COLOR = {"changed": YELLOW, "added": GREEN, "removed": RED, "identical": ""}


def stdout_color() -> bool:
    """Colour on stdout: a terminal, and ``NO_COLOR`` unset (https://no-color.org)."""
    return sys.stdout.isatty() and not get("NO_COLOR")


def paint(code: str, text: str, color: bool) -> str:
    return f"{code}{text}{RESET}" if color and code else text


_WORDS = re.compile(r"\w+|\s+|[^\w\s]")


def _highlight(old: str, new: str) -> tuple[str, str]:
    """A removed and an added line with the words that differ in reverse video (the line's
    own colour around them), as ``git``'s diff-highlight shows them."""
    wa, wb = _WORDS.findall(old), _WORDS.findall(new)
    a: list[str] = []
    b: list[str] = []
    for op, a1, a2, b1, b2 in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes():
        left, right = "".join(wa[a1:a2]), "".join(wb[b1:b2])
        if op == "equal":
            a.append(left)
            b.append(right)
        else:
            a.append(f"{REVERSE}{left}{RESET}{RED}" if left else "")
            b.append(f"{REVERSE}{right}{RESET}{GREEN}" if right else "")
    return f"{RED}{''.join(a)}{RESET}", f"{GREEN}{''.join(b)}{RESET}"


def color_diff(diff: str) -> str:
    """A unified diff in colour: file names bold, hunk heads cyan, removed lines red, added
    green, and in each removed/added pair of lines the changed words highlighted."""
    lines = diff.splitlines()
    out = [paint(BOLD, x, True) for x in lines[:2]]
    i = 2
    while i < len(lines):
        line = lines[i]
        if line.startswith("@@"):
            out.append(paint(CYAN, line, True))
            i += 1
            continue
        if not line.startswith(("-", "+")):
            out.append(line)
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j].startswith("-"):
            j += 1
        k = j
        while k < len(lines) and lines[k].startswith("+"):
            k += 1
        removed, added = lines[i:j], lines[j:k]
        pairs = min(len(removed), len(added))
        marked = [_highlight(removed[n][1:], added[n][1:]) for n in range(pairs)]
        out.extend(f"{RED}-{RESET}{m[0]}" for m in marked)
        out.extend(paint(RED, x, True) for x in removed[pairs:])
        out.extend(f"{GREEN}+{RESET}{m[1]}" for m in marked)
        out.extend(paint(GREEN, x, True) for x in added[pairs:])
        i = k
    return "\n".join(out) + "\n"


def details_text(d: RenderDiff, color: bool) -> list[str]:
    """A render's delta lines (indented) and its unified diff, what is not printable in them
    escaped (:func:`rcpc.core.diagnostics.visible`: a render's text comes from the recipe's
    strings, and the text reports are read on a terminal)."""
    out = [f"  {visible(x)}" for x in d.lines()]
    if d.diff:
        diff = visible(d.diff, lines=True)
        out.append((color_diff(diff) if color else diff).rstrip("\n"))
    return out


def report_text(header: list[str], diffs: list[RenderDiff], color: bool) -> str:
    """The text report: the header, one summary line per render that is not identical (its
    status and first change), the totals, then each such render's details. Names, lines
    and diffs show what is not printable escaped (:func:`rcpc.core.diagnostics.visible`)."""
    shown = [d for d in diffs if d.status != "identical"]
    width = max((len(visible(d.name)) for d in shown), default=0)
    out = [paint(BOLD, visible(h), color) for h in header]
    for d in shown:
        lines = d.lines()
        first = visible(lines[0]) + (f" (+{len(lines) - 1} more)" if len(lines) > 1 else "") if lines else ""
        status = paint(_STATUS_COLOR[d.status], f"{d.status:<8}", color)
        out.append(f"{status} {visible(d.name):<{width}}  {first}".rstrip())
    out.append(totals(diffs))
    for d in shown:
        out.append("")
        out.append(paint(BOLD, f"== {visible(d.name)}: {d.status}", color))
        out.extend(details_text(d, color))
    return "\n".join(out) + "\n"


def report_stat(header: list[str], diffs: list[RenderDiff], color: bool) -> str:
    """``--stat``: one line per render that is not identical, with its lines added and
    removed (as ``git diff --stat``), then the totals (names as :func:`report_text` shows
    them)."""
    shown = [d for d in diffs if d.status != "identical"]
    width = max((len(visible(d.name)) for d in shown), default=0)
    out = [paint(BOLD, visible(h), color) for h in header]
    for d in shown:
        plus, minus = d.counts()
        out.append(f" {visible(d.name):<{width}} | {paint(_STATUS_COLOR[d.status], f'{d.status:<8}', color)} | "
                   f"{paint(GREEN, f'+{plus}', color)} {paint(RED, f'-{minus}', color)}")
    out.append(" " + totals(diffs))
    return "\n".join(out) + "\n"


# Markdown ---------------------------------------------------------------------------------
def _code(text: str) -> str:
    """Inline code for a Markdown table cell (``|`` escaped; backticks in the text fenced by
    longer backtick runs)."""
    text = text.replace("|", "\\|")
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def report_markdown(title: str, intro: str, diffs: list[RenderDiff], contracts: list | None = None) -> str:
    """A report to paste into a pull request: a heading, an introduction, whether every
    contract holds (``contracts``: (recipe, variant, first problem) of each broken one, None
    when they were not checked), one table row per effective flag change (key, old → new, the
    renders it reaches), one per other change by path, the totals, then the unified diffs of
    the renders whose change the rows do not say whole (added, removed, changed beyond flags),
    folded in ``<details>``. What is not printable is shown escaped, as in the text report
    (:func:`rcpc.core.diagnostics.visible`): a bidi override in a render must not reorder
    what a reviewer reads."""
    shown = [d for d in diffs if d.status != "identical"]
    out = [f"### {title}", "", intro, ""]
    if contracts is not None:
        out += [f"**Contracts:** {'every contract holds' if not contracts else f'{len(contracts)} broken'}.", ""]
        out += [f"- {_code(f'{r}/{v}')}: {_code(p)}" for r, v, p in contracts] + ([""] if contracts else [])
    flags: dict = {}
    paths: dict = {}
    for d in shown:
        for c in d.flags or ():
            flags.setdefault((c.key, c.describe()), []).append(d)
        for c in d.paths or ():
            paths.setdefault(readable(c.describe()), []).append(d)
    if flags:
        out += ["| flag | change | renders |", "|---|---|---|"]
        out += [f"| {_code(key)} | {_code(text.split(': ', 1)[1])} | {_renders(ds)} |"
                for (key, text), ds in flags.items()]
        out.append("")
    if paths:
        out += ["| other change | renders |", "|---|---|"]
        out += [f"| {_code(text)} | {_renders(ds)} |" for text, ds in paths.items()]
        out.append("")
    out += [f"**{totals(diffs)}.**", ""]
    for d in shown:
        if d.status == "changed" and not d.paths and d.flags:
            continue  # a flag row says all of it
        out += ["<details>", f"<summary><code>{_html(d.name)}</code>: {d.status}</summary>", ""]
        if d.diff:
            fence = "`" * max(3, max((len(m) for m in re.findall(r"`{3,}", d.diff)), default=0) + 1)
            out += [f"{fence}diff", d.diff.rstrip("\n"), fence, ""]
        out += ["</details>", ""]
    return visible("\n".join(out).rstrip("\n") + "\n", lines=True)


def _renders(diffs: list[RenderDiff]) -> str:
    """The renders a change reaches, compactly: per recipe, ``{variants} × {renders}`` when it
    reaches every pair of them, else each ``variant/render``."""
    by_recipe: dict = {}
    for d in diffs:
        by_recipe.setdefault(d.recipe, []).append(d)
    parts = []
    for recipe, ds in by_recipe.items():
        variants = list(dict.fromkeys(d.variant for d in ds))
        renders = list(dict.fromkeys(d.render for d in ds))
        if len(ds) == len(variants) * len(renders) and len(ds) > 1:
            inner = f"{{{', '.join(variants)}}} × {{{', '.join(renders)}}}"
        else:
            inner = ", ".join(f"{d.variant}/{d.render}" if d.variant else d.render for d in ds)
        parts.append(_code(f"{recipe}: {inner}" if recipe else inner) + f" ({len(ds)})")
    return "<br>".join(parts)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def report_variants(title: str, diffs: list[RenderDiff], color: bool) -> str:
    """The text report of ``rcpc diff RECIPE --variant A``: every render with its status,
    then its delta and unified diff when it is not identical (as :func:`report_text` shows
    them)."""
    out = [paint(BOLD, visible(title), color)]
    for d in diffs:
        out.append(f"{visible(d.render)}: {paint(_STATUS_COLOR[d.status], d.status, color)}")
        out.extend(details_text(d, color))
    return "\n".join(out) + "\n"


# revisions ----------------------------------------------------------------------------------
@attrs.frozen
class RevisionDiff:
    """``rcpc diff --rev``: the revision compared (:class:`rcpc.review.revision.Revision`), rcpc's own
    files that differ there, every render compared, and the diagnostics of recipes that did
    not compile (``(diagnostics, sources)`` per side)."""

    rev: object
    own_files: list
    diffs: list
    errors: list
    contracts: list = attrs.Factory(list)  # (recipe, variant, first problem) of each contract broken in the work tree

    def header(self) -> list[str]:
        r = self.rev
        lines = [f"rcpc diff --rev {r.rev}: a/ is {r.rev} ({r.commit[:12]}), b/ is the work tree",
                 f"both sides are built by the running rcpc {__version__}"]
        if self.own_files:
            lines.append(f"rcpc's own files differ at {r.rev} ({len(self.own_files)}: "
                         f"{', '.join(self.own_files[:3])}{', …' if len(self.own_files) > 3 else ''}); "
                         f"{r.rev} is built by the running rcpc all the same")
        return lines

    def markdown(self) -> str:
        r = self.rev
        own = (f"rcpc's own files differ at `{r.rev}` ({len(self.own_files)}), but both sides are built by "
               f"the running rcpc {__version__}" if self.own_files else
               f"both sides are built by the running rcpc {__version__}")
        intro = f"`a/` is `{r.rev}` (`{r.commit[:12]}`), `b/` is the work tree; {own}."
        return report_markdown(f"rcpc diff `{r.rev}` → work tree", intro, self.diffs, self.contracts)

    def to_json(self) -> dict:
        n = {s: sum(1 for d in self.diffs if d.status == s) for s in ("changed", "added", "removed", "identical")}
        return {"rev": self.rev.rev, "commit": self.rev.commit, "rcpc": __version__,
                "rcpc_files_differ": self.own_files, "summary": n, "renders": [to_json(d) for d in self.diffs]}


def diff_revision(live, rev_text: str, names: list[str], variant: str | None, adjust) -> RevisionDiff:
    """Compare the renders of workspace ``live`` at git revision ``rev_text`` (built from
    git's objects, :mod:`rcpc.review.revision`) with the work tree's, both with the running rcpc:
    every recipe (or those ``names``, recipe names or ``.rcp`` paths of the work tree) ×
    variant (or ``variant``) × render. ``adjust(workspace)`` applies the command line's
    schema options to the revision's workspace. Raises ``E0615`` (git), ``E0607`` (a
    variant on neither side); ``LookupError(name)`` for a recipe on neither side."""
    import tempfile

    from rcpc.review import revision
    from rcpc.domain.recipe import Compiler

    rev = revision.find(live.root, rev_text)
    with tempfile.TemporaryDirectory(prefix="rcpc-rev-") as tmp:
        old_ws = adjust(revision.materialise(rev, Path(tmp), live))
        sides = []
        for ws in (old_ws, live):
            try:
                sides.append({ws.recipe_name(p): p for p in ws.recipes()})
            except CompileError as exc:  # a recipe name refused (E0903, E0905, ...)
                if ws is live:
                    raise
                raise CompileError(_relabelled(exc.diagnostics, rev.rev)) from None
        chosen = []
        for n in names:
            p = live.find_recipe(n)
            name = live.recipe_name(p) if p is not None else n.removesuffix(".rcp")
            if name not in sides[0] and name not in sides[1]:
                raise LookupError(n)
            chosen.append(name)
        chosen = list(dict.fromkeys(chosen)) or sorted(sides[0].keys() | sides[1].keys())
        session = Session()  # one run: the two revisions share what is made of the same schema bytes
        compilers = (Compiler(old_ws, session), Compiler(live, session))
        diffs: list[RenderDiff] = []
        errors: list = []
        broken: list = []
        seen_variant = variant is None
        variants: dict = {}  # every variant of the recipes compared, for E0607's hint
        for name in chosen:
            built = []
            for side, compiler in zip(sides, compilers):
                builds: dict = {}
                if name in side:
                    try:
                        recipe_, vbs = compiler.build(side[name])
                        builds = {b.variant: b for b in vbs}
                        if compiler is compilers[1]:  # the work tree's contracts, for the review
                            broken.extend((name, d.message.split("'")[1], (d.notes or (d.message,))[0])
                                          for d in compiler.check_contracts(recipe_, vbs) if d.code == "E0610")
                    except CompileError as exc:
                        errors.append((exc.diagnostics, compiler))
                        builds = None
                built.append(builds)
            if None in built:
                continue
            old, new = built
            variants.update(dict.fromkeys([*old, *new]))
            for v in [*old, *(v for v in new if v not in old)]:
                if variant is not None and v != variant:
                    continue
                seen_variant = True
                diffs.extend(compare(old[v].renders if v in old else None, new[v].renders if v in new else None,
                                     "a/", "b/", name, v))
        if not seen_variant:
            raise error("E0607", f"no recipe compared has a variant '{variant}'", None,
                        hint=did_you_mean_or_list(variant, variants, "variants"))
        own = revision.own_files_differ(rev)
    return RevisionDiff(rev, own, diffs, [((_relabelled(d, rev.rev), _relabelled_sources(c, rev.rev))
                                           if c is compilers[0] else (d, c.sources)) for d, c in errors], broken)


def _relabelled(diags: list, rev: str) -> list:
    """Diagnostics of the revision's side with each path shown as ``REV:path`` (the same
    path in the work tree would be a different file); one without a place gets a note
    naming the revision (its message may name paths: those of the revision)."""
    def span(s):
        return s if s is None else record.evolve(s, path=f"{rev}:{s.path}")

    return [record.evolve(d, span=span(d.span), related=tuple((label, span(s)) for label, s in d.related),
                          notes=d.notes if d.span else (*d.notes, f"at revision {rev}"))
            for d in diags]


def _relabelled_sources(compiler, rev: str) -> dict:
    """The revision's sources under the ``REV:path`` names of :func:`_relabelled`."""
    return {f"{rev}:{path}": src for path, src in compiler.sources.items()}
