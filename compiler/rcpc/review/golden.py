"""Golden tests of a workspace's renders (docs/review.md, *Golden tests*): every render of every
recipe × variant compared byte for byte with its golden file ``<golden_dir>/<recipe>/<variant>/<render>``,
every variant's diff contract run, and golden files that no render produces any more
(*obsolete*, syrupy's "unused snapshots") found. ``rcpc test`` (:meth:`rcpc.api.Workspace.test`)
and the pytest plugin (:mod:`rcpc.testing.plugin`) both compile with :func:`compile_goldens`,
read and write goldens with :func:`read_golden` and :func:`write_golden` (the plugin through
syrupy's extension, :mod:`rcpc.testing.golden`) and find obsolete goldens with :func:`obsolete`,
so the two give the same verdicts and write the same bytes.

A golden is input another user may have written: it is read only when every directory from the
golden directory down to it is a real directory (no symlink) and it is a regular file, not a
symlink, of at most :data:`~rcpc.core.limits.MAX_FILE_BYTES` bytes of UTF-8 (``E1303``
otherwise, and it is neither read nor written); nothing is written outside the golden directory.
"""

from __future__ import annotations

import errno
import os
import re
import shlex
import stat
from pathlib import Path

from rcpc.build.cache import request, store_built
from rcpc.core import record
from rcpc.core.diagnostics import CompileError, Diagnostic
from rcpc.core.files import NotRegular, TooLarge, load_yaml_bounded, read_limited, yaml_node_limit
from rcpc.core.limits import MAX_FILE_BYTES
from rcpc.core.source import Span, file_span
from rcpc.domain.delta import data_delta

DIFF_LINES = 20  # of a render's unified diff that rcpc test shows


class GoldenUnreadable(Exception):
    """A golden file that is not read (``E1303``): ``reason`` says why."""

    def __init__(self, path: Path, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


def _place(path: Path, golden_dir: Path) -> str | None:
    """Why ``path`` (under ``golden_dir``) is no place for a golden: a symlink or a file on the
    way down from ``golden_dir``; None when every directory that exists is a real one."""
    here = golden_dir
    for part in path.relative_to(golden_dir).parts[:-1]:
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(mode):
            return f"{here.name} on its path is a symlink"
        if not stat.S_ISDIR(mode):
            return f"{here.name} on its path is not a directory"
    return None


def read_golden(path: Path, golden_dir: Path | None = None) -> str | None:
    """The text of the golden file ``path`` (its UTF-8 bytes, no newline translation), or None
    when there is none. ``golden_dir``: the golden directory it lies under, every directory
    between checked (:func:`_place`). Raises :class:`GoldenUnreadable` for a symlink, a file
    that is not regular, larger than :data:`~rcpc.core.limits.MAX_FILE_BYTES` or not UTF-8."""
    problem = _place(path, golden_dir) if golden_dir is not None else None
    if problem:
        raise GoldenUnreadable(path, problem)
    try:
        data = read_limited(path, MAX_FILE_BYTES, follow=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except TooLarge as exc:
        raise GoldenUnreadable(path, f"it holds {exc.size} bytes, more than {MAX_FILE_BYTES}") from None
    except NotRegular:
        reason = "it is a symlink" if os.path.islink(path) else "it is not a regular file"
        raise GoldenUnreadable(path, reason) from None
    except OSError as exc:
        reason = "it is a symlink" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        raise GoldenUnreadable(path, reason) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GoldenUnreadable(path, f"it is not UTF-8 (byte {exc.start})") from None


def write_golden(path: Path, text: str) -> None:
    """Write ``text`` as the golden file ``path``: its UTF-8 bytes, no newline translation, the
    directories above made; a symlink put at ``path`` is refused (``O_NOFOLLOW``: ELOOP),
    never written through. Raises OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o666)
    with os.fdopen(fd, "wb") as f:
        f.write(text.encode("utf-8"))


@record.frozen
class Compiled:
    """One recipe as the golden tests see it: its ``name``; ``builds``, [(variant, [(render,
    text)])]; ``contracts``, [(variant, diagnostics)] of each variant with a diff contract
    (no diagnostics: it held); ``errors``, the diagnostics of a recipe that does not compile
    (then no builds); ``sources`` for quoting them."""

    name: str
    builds: list
    contracts: list
    errors: list
    sources: dict


def compile_goldens(workspace, paths: list[Path]):
    """:class:`Compiled` of each recipe file ``paths`` of ``workspace`` (a
    :class:`rcpc.api.Workspace`), in order. A recipe whose inputs are unchanged since it was
    last built (by ``rcpc build``, ``rcpc check``, ``rcpc test`` or the pytest plugin) comes
    from the build cache (:mod:`rcpc.build.cache`: every variant's renders and the contracts
    that held), compiled by nothing; the others are compiled, every contract run (a broken one
    is reported with the renders, not instead of them), and stored there when every contract
    holds."""

    ws = workspace.config
    cache, options = request(ws, None, None)
    for path in paths:
        name = ws.recipe_name(path)
        hit = cache.lookup(path, options, contracts=True)
        if hit is not None:
            built, _, _, held = hit
            yield Compiled(name, built, [(variant, []) for variant in held], [], {})
            continue
        yield _compiled(workspace.compiler, cache, options, path, name)


def _compiled(compiler, cache, options, path: Path, name: str) -> Compiled:
    """:class:`Compiled` of recipe ``path`` built by ``compiler`` (a
    :class:`rcpc.domain.recipe.Compiler`) as :meth:`~rcpc.domain.recipe.Compiler.compile`
    builds it (its contracts run with the build's embeddings, the recipe released after), but
    every contract's verdict kept apart; stored in ``cache`` when every contract holds. The
    sources of the files it read are kept (a copy) only when there is a diagnostic to quote."""
    seen = len(compiler.context.diagnostics)
    try:
        recipe, builds = compiler.build(path)
        contracts = compiler.contracts(recipe, builds)
        built = [(b.variant, [(r.name, r.text) for r in b.renders]) for b in builds]
        if not any(diags for _, diags in contracts):
            store_built(cache, options, compiler, path, recipe, builds,
                        compiler.build_warnings(path, recipe, builds, seen))
            return Compiled(name, built, contracts, [], {})
        return Compiled(name, built, contracts, [], dict(compiler.sources))
    except CompileError as exc:
        return Compiled(name, [], [], exc.diagnostics, dict(compiler.sources))
    finally:
        compiler.release(path)


def obsolete(roots, expected: set, unknown) -> list[Path]:
    """The golden files under the directories ``roots`` (those that exist; symlinks to
    directories not followed) that no render produces (not in ``expected``), sorted, leaving
    alone dot files and everything under ``unknown`` (golden directories of recipes that did
    not compile)."""
    found = []
    for root in roots:
        for top, dirs, files in os.walk(root):  # followlinks=False
            here = Path(top)
            if any(u == here or u in here.parents for u in unknown):
                dirs.clear()
                continue
            for f in files:
                p = here / f
                if not f.startswith(".") and p not in expected:
                    found.append(p)
    return sorted(found)


def remove_obsolete(paths: list[Path], golden_dir: Path) -> None:
    """Delete the obsolete goldens ``paths`` (:func:`obsolete`; a symlink itself, not what it
    names), then the directories under ``golden_dir`` they leave empty, as syrupy deletes
    unused snapshots under ``--snapshot-update``."""
    for p in paths:
        p.unlink()
    for d in sorted({p.parent for p in paths}, key=lambda d: len(d.parts), reverse=True):
        while d != golden_dir and golden_dir in d.parents and d.is_dir() and not any(d.iterdir()):
            d.rmdir()
            d = d.parent


# --- what changed -------------------------------------------------------------------------------

def update_command(configs=()) -> str:
    """The commands that rewrite the goldens of the workspaces ``configs`` (their rcp.toml
    paths) and run nothing else: ``rcpc test --snapshot-update`` (about a second: no pytest
    session), or ``pytest rcp.toml --snapshot-update``."""
    here = Path.cwd()
    roots = [Path(os.path.abspath(c)).parent for c in configs] or [here]
    # rcpc finds the workspace at or above the current directory: elsewhere it is run there
    dirs = dict.fromkeys("." if r == here or r in here.parents else os.path.relpath(r) for r in roots)
    rcpc = " ; ".join("rcpc test --snapshot-update" if d == "." else f"(cd {d} && rcpc test --snapshot-update)"
                      for d in dirs)
    targets = " ".join(dict.fromkeys(os.path.relpath(c) for c in configs)) or "rcp.toml"
    return f"`{rcpc}` (or `pytest {targets} --snapshot-update`)"


def visible(line: str) -> str:
    """A diff line with its end made visible: CR, a missing final newline and trailing
    whitespace would otherwise not show in the report."""
    body = line[:-1] if line.endswith("\n") else line
    out = body.replace("\r", "\\r")
    if body != body.rstrip(" \t"):
        out += "⏎"
    if not line.endswith("\n"):
        out += "  (no newline at end)"
    return out


def render_diff(name: str, golden: str, render: str) -> list[str]:
    """The unified diff of the golden text and the render's text of render ``name``
    (``recipe/variant/render``), each line's end made visible (:func:`visible`)."""
    import difflib

    return [visible(line) for line in difflib.unified_diff(golden.splitlines(True), render.splitlines(True),
                                                           f"golden/{name}", f"render/{name}")]


def effective_tokens(text: str) -> dict:
    """key → last value text of a ``.flags`` render (one shell-quoted token a line). A text
    without quotes or backslashes splits at shell whitespace (space, tab, CR, LF: not
    ``str.split``'s wider set), as ``shlex.split`` would split it (POSIX mode, no comments),
    without its pure-Python tokenizer (a sixth of the summary of a flag edit)."""
    if any(c in text for c in "'\"\\"):
        tokens = shlex.split(text)
    else:
        tokens = [t for t in re.split(r"[ \t\r\n]+", text) if t]
    out: dict = {}
    for tok in tokens:
        key, _, value = tok.partition("=")
        out[key] = value
    return out


def _read_yaml(text: str):
    """One YAML document (a golden or a render) as data, read by libyaml where PyYAML has it
    (``CSafeLoader``: the pure-Python ``safe_load`` was a quarter of the golden run after an
    edit, ``bench/editloop.py``), weighed before it is built
    (:func:`rcpc.core.files.load_yaml_bounded`: a golden edited into an alias bomb is refused,
    ValueError). Raises ``yaml.YAMLError`` for text that does not read."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return load_yaml_bounded(text, loader, yaml_node_limit(len(text)), single=True)[0]


def render_changes(name: str, old: str, new: str) -> list[str]:
    """What changed in one render, one line a change: a flag file's effective values, a
    manifest's paths (:func:`rcpc.domain.delta.data_delta` of both texts read as YAML)."""
    import yaml

    try:
        if name.endswith(".flags"):
            a, b = effective_tokens(old), effective_tokens(new)
            lines = [f"flag {k}: {a.get(k, '(unset)')} → {b.get(k, '(unset)')}"
                     for k in [*a, *(k for k in b if k not in a)] if a.get(k) != b.get(k)]
            return lines or ["flag tokens changed, no effective value"]
        if name.endswith(".yaml"):
            lines = [c.describe() for c in data_delta(_read_yaml(old), _read_yaml(new))]
            return lines or ["text changed, data the same"]
    except (ValueError, yaml.YAMLError):  # a golden edited by hand into something unreadable
        pass
    return ["text changed"]


def golden_summary(changed: list, configs=()) -> list[str]:
    """The lines of the account of what changed in the failing goldens ``changed`` ([(render
    name, golden text or None, render text)]): each distinct change once (in order first
    seen), with the renders it is in; then the missing goldens, and the commands that accept
    them (:func:`update_command` of the workspaces' ``configs``)."""
    groups: dict[str, list[str]] = {}
    missing = []
    for name, old, new in changed:
        if old is None:
            missing.append(name)
            continue
        for line in dict.fromkeys(render_changes(name, old, new)):
            groups.setdefault(line, []).append(name)
    out = []
    for line, names in groups.items():
        shown = ", ".join(names[:4]) + (f", … ({len(names)} renders)" if len(names) > 4 else "")
        out += [line, f"    in {shown}"]
    if missing:
        out.append(f"missing goldens: {', '.join(missing)}")
    out.append(f"run {update_command(configs)} to accept the new renders")
    return out


# --- rcpc test ----------------------------------------------------------------------------------

@record.frozen
class Tested:
    """What :func:`run_goldens` found (:meth:`rcpc.api.Workspace.test`): ``renders``, the
    number compared; ``changed``, [(render name, golden path, golden text or None when missing,
    render text)] of each render that differs from its golden (under ``--snapshot-update``:
    each golden written); ``failures``, the diagnostics of recipes that do not compile, broken
    contracts and goldens not read (``E1303``); ``obsolete``, the golden files no render
    produces (under ``--snapshot-update``: deleted); ``contracts``, the number run;
    ``broken``, what else failed, by the pytest plugin's item names: ``recipe/variant:contract``
    of each broken contract, the name of each recipe that does not compile, the render name
    of each golden not read; ``updated``: whether goldens were written and deleted."""

    renders: int
    changed: list
    failures: list
    obsolete: list
    contracts: int
    broken: list
    updated: bool

    @property
    def failed(self) -> bool:
        """True when a golden test failed (with ``--snapshot-update``: one that an update
        cannot fix: a recipe that does not compile, a broken contract, a golden not read)."""
        return bool(self.failures) or (not self.updated and bool(self.changed or self.obsolete))


def run_goldens(workspace, paths: list[Path], whole: bool, update: bool = False) -> Tested:
    """Golden-test the recipes ``paths`` of ``workspace`` (:class:`rcpc.api.Workspace`):
    compile them (:func:`compile_goldens`), compare each render with its golden, run every
    contract, and find obsolete goldens: in the whole golden directory when ``whole`` (every
    recipe tested), else under the tested recipes' own golden directories. ``update``: write
    each changed or missing golden and delete the obsolete ones, as ``pytest rcp.toml
    --snapshot-update`` does (the same bytes: :func:`write_golden`). Raises OSError when a
    golden cannot be written."""
    ws = workspace.config
    golden_dir = ws.golden_dir
    expected: set = set()
    unknown: list = []
    changed: list = []
    failures: list = []
    broken: list = []
    renders = contracts = 0
    for compiled in compile_goldens(workspace, paths):
        if compiled.errors:
            unknown.append(golden_dir / compiled.name)
            failures += compiled.errors
            broken.append(compiled.name)
            continue
        for variant, built in compiled.builds:
            for render, text in built:
                path = golden_dir / compiled.name / variant / render
                expected.add(path)
                renders += 1
                try:
                    old = read_golden(path, golden_dir)
                except GoldenUnreadable as exc:
                    failures.append(unreadable(ws, exc))
                    broken.append(f"{compiled.name}/{variant}/{render}")
                    continue
                if old != text:
                    changed.append((f"{compiled.name}/{variant}/{render}", path, old, text))
                    if update:
                        write_golden(path, text)
        contracts += len(compiled.contracts)
        failures += [d for _, diags in compiled.contracts for d in diags]
        broken += [f"{compiled.name}/{variant}:contract" for variant, diags in compiled.contracts if diags]
    roots = [golden_dir] if whole else [golden_dir / ws.recipe_name(p) for p in paths]
    found = obsolete(roots, expected, unknown)
    if update:
        remove_obsolete(found, golden_dir)
    return Tested(renders, changed, failures, found, contracts, broken, update)


def unreadable(ws, exc: GoldenUnreadable) -> Diagnostic:
    """``E1303`` for the golden ``exc`` names (of workspace settings ``ws``)."""
    return Diagnostic("E1303", f"golden file not read: {exc.reason}", file_span(ws.display(exc.path)),
                      hint="a golden is a regular UTF-8 file of at most 4 MiB under the golden directory, "
                           "reached through no symlink; delete it and write it again with `rcpc test "
                           "--snapshot-update`")


def _first_difference(old: str, new: str) -> tuple[int, int]:
    """(line, column), 1-based, of the first character where ``old`` and ``new`` differ, in
    ``old`` (its end when ``new`` goes on past it)."""
    n = len(os.path.commonprefix([old, new]))
    line = old.count("\n", 0, n) + 1
    return line, n - (old.rfind("\n", 0, n) + 1) + 1


def diagnostics(ws, tested: Tested) -> list[Diagnostic]:
    """The report of ``tested`` (of workspace settings ``ws``), as diagnostics, in order: the
    failures (recipes, contracts, unreadable goldens), then per changed render ``E1300`` (at
    its first difference in the golden, with the first :data:`DIFF_LINES` lines of the
    unified diff as notes) or ``E1301`` (missing), then ``E1302`` per obsolete golden.
    Nothing for goldens that ``--snapshot-update`` wrote or deleted."""
    out = list(tested.failures)
    if tested.updated:
        return out
    command = update_command([ws.config or ws.root / "rcp.toml"])
    hint = f"run {command} to accept the new render"
    for name, path, old, new in tested.changed:
        shown = ws.display(path)
        if old is None:
            out.append(Diagnostic("E1301", f"no golden for render {name}", file_span(shown), hint=hint))
            continue
        diff = render_diff(name, old, new)
        notes = diff[2:DIFF_LINES + 2]
        if len(diff) > DIFF_LINES + 2:
            notes.append(f"… {len(diff) - DIFF_LINES - 2} more diff lines")
        line, col = _first_difference(old, new)
        out.append(Diagnostic("E1300", f"golden differs from the render {name}", Span(shown, line, col, line, col + 1),
                              hint=hint, notes=tuple(notes)))
    for path in tested.obsolete:
        out.append(Diagnostic("E1302", "golden file that no recipe, variant or render produces any more",
                              file_span(ws.display(path)),
                              hint=f"run {command} to delete it"))
    return out
