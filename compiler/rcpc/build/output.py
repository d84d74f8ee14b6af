"""Owned, crash-atomic output: what a reader finds at ``DIR/<recipe>/<variant>/<render>``.

Everything is evaluated, checked and emitted in memory before anything is written. rcpc then
publishes a new *generation* of the whole output directory ``DIR``::

    DIR/.rcpc/                     rcpc's own area (created by rcpc; nothing else writes here)
        MANAGED_BY_RCPC            the marker saying so
        lock                       the build lock (fcntl.flock)
        current -> gen/7           the one symlink switched to publish a generation
        gen/7/.manifest            what generation 7 is (JSON): recipes, variants, renders, and
                                   the overrides each custom build was made with
        gen/7/rl/x -> ../../../outputs/12   each recipe's output, by a relative symlink
        outputs/12/<variant>/<render>       one recipe's output, never changed once published
    DIR/rl -> .rcpc/current/rl     one link per first part of a recipe name
    DIR/<anything else>            not rcpc's: never read, replaced or removed

A reader's path ``DIR/rl/x/tuned/trainer.flags`` resolves through ``DIR/rl``, ``current``
and the recipe's link, so each lookup sees one complete generation, the old one or the new
one, at every instant: ``current`` is replaced by rename(2) of a new symlink over it. A link
for a new first part is made before the switch (until then it leads nowhere, as in the old
generation); a link no longer needed is removed after it (from then on it leads nowhere, as
in the new one). A recipe whose output did not change keeps its ``outputs/<n>``: a build that
changes one recipe of a thousand makes one directory of renders and a thousand symlinks.

A build (:func:`publish`), holding ``DIR/.rcpc/lock`` (on the real path of ``DIR``, so every
spelling of it, symlinks included, takes the same lock):

1. plans the new generation: each recipe built with all its variants gets exactly those
   (``custom``, the ``--set`` output, is kept until the next ``--set`` build), a variant
   built alone replaces that variant, every other recipe's current output is carried over,
   and on a build of every recipe the outputs of recipes that no longer exist are dropped;
   each variant built with overrides gets their record in the manifest (``provenance``),
   every other keeps the one its output had (:func:`_records`);
2. unless that is exactly the current generation, refuses, before touching anything, to go
   on when the current generation, or the output of a recipe that changes, holds a file its
   manifest does not list (``E0911``: a user's file inside a variant directory would be lost
   with it), when a link it needs is
   taken by something rcpc did not make (``E0910``: ``-o .`` next to a ``compiler/``
   directory) or when the manifest is damaged (``E0912``);
3. removes what a build killed outright left: generations other than the current one, and
   the outputs and links that only they used (by their manifests: only the files they list;
   outputs no manifest lists were never published and go whole); then stops if there is
   nothing to write;
4. writes a new ``outputs/<n>`` for each recipe whose output changed (renders that did not
   change hard-linked from the old one), the new generation and its manifest, makes the new
   links, switches ``current``, then removes the links, the generation and the outputs no
   longer used, still holding the lock.

Whether a variant's renders "differ from the current generation's" (step 1) is found by
reading its files back, or, for renders compared while workers were still compiling
(:class:`Comparison`), from that comparison where every stat it took still holds.

Ctrl-C or SIGTERM before the first link of step 4 leaves the previous output (what was
staged is removed); from then on, the signals are held back until the end and then raise
:class:`InterruptedAfterWrite` (the CLI then says the new output was written).
Files are written as UTF-8 bytes with LF line ends exactly as emitted, with the usual
modes (0666 and 0777 less the umask; a command file's ``.sh`` render 0777 less the umask, an
executable).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import time
from pathlib import Path

try:  # the C module: `signal` makes its enums (~0.9 ms) for the masks a publish sets and puts back
    import _signal as signal
except ImportError:  # not CPython
    import signal

from rcpc.build.replay import RACY_NS
from rcpc.core.diagnostics import CompileError, Diagnostic, error
from rcpc.core.files import identity as _stat
from rcpc.core.files import read_fd, read_limited
from rcpc.core.limits import MAX_MANIFEST_BYTES
from rcpc.core.names import problem
from rcpc.interrupts import hold, release

AREA = ".rcpc"
MARKER = "MANAGED_BY_RCPC"
MANIFEST = ".manifest"
LOCK = "lock"
FORMAT = 1
_MARKER_TEXT = ("This directory is written by rcpc. It holds the generations of the output that\n"
                "the links beside it lead to; rcpc replaces them on every build. Do not edit.\n")
_SIGNALS = {signal.SIGINT, signal.SIGTERM}


class InterruptedAfterWrite(KeyboardInterrupt):
    """Ctrl-C or SIGTERM arrived while the new output was being swapped in: it is in place,
    whole (the signal was held back until then)."""


def publish(out_dir: Path, builds: list, shown: str, whole=frozenset(), known=None, origins=None,
            compared: "Comparison | None" = None, provenance: dict | None = None) -> int:
    """Make ``builds`` [(recipe, variant, [(render name, text)])] the output in ``out_dir``
    (``shown`` is how diagnostics name it). ``whole``: the recipes built with every declared
    variant (their other variant directories, ``custom`` aside, are dropped); ``known``: every
    recipe of the workspace when all were built (outputs of others are dropped), else None;
    ``origins``: recipe → span of its file, for ``E0910``; ``compared``: renders compared with
    the output while they were compiled (:class:`Comparison`); ``provenance``: {(recipe,
    variant): record} of the variants built with overrides (:func:`rcpc.domain.overrides.provenance`),
    kept in the manifest while the variant's output is (a variant built without is recorded
    with none). Returns how many variant directories were written, as a :class:`Written`
    (0 when the output already was exactly this, or only its manifest changed: a record of
    overrides, a variant directory dropped). Raises
    :class:`CompileError` (``E0905``, ``E0910``-``E0912``; nothing touched) or OSError."""
    for recipe, variant, renders in builds:
        _check_names(recipe, variant, [name for name, _ in renders])
    out = _claim(Path(out_dir), shown, {recipe.split("/", 1)[0] for recipe, _, _ in builds}, origins or {})
    area = out / AREA
    staged: list[Path] = []   # what to remove if the new generation is not published
    try:
        with open(area / LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            old_gen, old = _current(area, shown)
            if compared is not None:
                compared.verified = {}
            tree, changed = _plan(old_gen, old, builds, whole, known,
                                  compared if compared is not None and compared.valid(old_gen, old) else None,
                                  None if compared is None else compared.verified)
            links = set(_links(tree))
            records = _records(old, tree, builds, provenance or {})
            kept = {recipe for recipe, variants in tree.items() if variants == old["recipes"].get(recipe)
                    and not any((recipe, v) in changed for v in variants)}   # their outputs stay as they are
            same = (tree == old["recipes"] and records == old.get("provenance", {}) and not changed
                    and all(_ours(out, name) for name in links))
            if not same:  # before anything is touched
                if old_gen is not None:
                    _refuse_foreign(area, old_gen, old, kept, shown)
                _refuse_taken(out, links, shown, origins or {})
            _sweep(out, old_gen, old)
            if same:
                return Written(0)
            gen = _staged_dir(area / "gen", staged)
            new = _stage(area, gen, old, tree, kept,
                         {(r, v): renders for r, v, renders in builds if (r, v) in changed}, staged, records)
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
            hold()  # a signal another thread takes is kept too (rcpc.interrupts.hold)
            try:  # the swap and the clean-up run to the end
                _swap(out, gen, links)
                staged = []
                _in_area(out, lambda out_fd, area_fd: _clean(out_fd, area_fd, links, old_gen, old, new))
            finally:
                try:  # a signal held back meanwhile is raised here
                    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
                    release()
                except KeyboardInterrupt:
                    if staged:  # the swap failed and was undone
                        raise
                    raise InterruptedAfterWrite from None
            dropped = any(v not in tree.get(r, {}) for r, variants in old["recipes"].items() for v in variants)
            return Written(len(changed), records != old.get("provenance", {}), dropped)
    finally:
        for path in staged:  # never published: nobody can have written into it
            _remove_tree(path)


class Written(int):
    """How many variant directories :func:`publish` wrote (an int), and what else of the
    output's manifest it changed: ``record``, the record of overrides (``provenance``);
    ``dropped``, variant directories of the output left out of the new generation."""

    def __new__(cls, variants: int, record: bool = False, dropped: bool = False):
        self = super().__new__(cls, variants)
        self.record, self.dropped = record, dropped
        return self

    def describe(self, of: int) -> str:
        """What was written, for the status line of a build of ``of`` variant directories."""
        what = [f"{int(self)} of {of} variant director{'y' if of == 1 else 'ies'} written"]
        if self.record:
            what.append("the record of overrides (provenance) written")
        if self.dropped:
            what.append("variant directories of other builds removed")
        return "; ".join(what)


def _check_names(recipe: str, variant: str, renders: list) -> None:
    """Every name that becomes a path component is one (the compiler's checks located them
    already; this guards the file system against any path that did not pass them)."""
    for part in [*recipe.split("/"), variant, *renders]:
        why = problem(part)
        if why is not None:
            raise error("E0905", f"cannot write {recipe}/{variant}: {part!r} {why}", None,
                        hint="rename the recipe file, variant or render")


def _claim(out_dir: Path, shown: str, links: set, origins: dict) -> Path:
    """The real path of the output directory, created if missing, with rcpc's area in it
    (made, or checked to be rcpc's: it holds the marker, or nothing at all, as after a
    build killed between making it and marking it). ``E0910``, before anything is made,
    when the area is not rcpc's, or, in a directory with no area yet, when one of the
    ``links`` would be taken."""
    out = Path(os.path.realpath(out_dir))
    for d in out.parents:
        if d.name == AREA and os.path.lexists(d / MARKER):
            raise error("E0910", f"cannot write to {shown}: it is inside rcpc's own area {d}", None,
                        hint="choose an output directory outside every .rcpc directory")
    if not os.path.lexists(out / AREA):
        _refuse_taken(out, links, shown, origins)
    os.makedirs(out, exist_ok=True)
    area = out / AREA
    try:
        os.mkdir(area)
    except FileExistsError:
        pass
    if not stat.S_ISDIR(os.lstat(area).st_mode) or not (os.path.lexists(area / MARKER) or not os.listdir(area)):
        raise error("E0910", f"cannot write to {shown}: {os.path.join(shown, AREA)} exists and was not made by rcpc",
                    None, hint=f"rcpc keeps its generations of the output there; move it away, or choose "
                               f"another output directory (-o)")
    try:
        fd = os.open(area / MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return out
    with os.fdopen(fd, "w") as f:
        f.write(_MARKER_TEXT)
    return out


def _generation_id(area: Path) -> int | None:
    """The number of the current generation; None when there is none yet."""
    try:
        target = os.readlink(area / "current")
    except FileNotFoundError:
        return None
    except OSError:  # not a symlink
        return -1
    head, _, number = target.partition("/")
    return int(number) if head == "gen" and number.isdigit() and number == str(int(number)) else -1


def _current(area: Path, shown: str) -> tuple[Path | None, dict]:
    """The current generation's directory and manifest (None and an empty manifest before
    the first build). ``E0912`` when either is damaged."""
    number = _generation_id(area)
    if number is None:
        return None, {"recipes": {}, "outputs": {}, "links": []}
    gen = area / "gen" / str(number)
    manifest = _read_manifest(gen) if number >= 0 else None
    if manifest is None:
        raise error("E0912", f"cannot write to {shown}: the record of what rcpc wrote there "
                             f"({os.path.join(shown, AREA)}) is damaged", None,
                    hint=f"move any file of your own out of {shown}, then delete {os.path.join(shown, AREA)} "
                         f"and the links to it")
    return gen, manifest


def bookkeeping(out_dir: Path) -> tuple[dict[str, str], list[str], list[str]] | None:
    """What a build that finds its output already in place (:func:`publish` writing nothing)
    reads of ``out_dir``'s bookkeeping, for no-op replay (:mod:`rcpc.build.replay`) to check the
    same: ``(links, files, absent)``: each symlink with the text it must still hold (the
    area's ``current``, each first-part link), the files it reads or opens (the marker, the
    current manifest and the lock, which it makes when missing; any change to them is a
    miss) and the markers that must stay absent
    (of a ``.rcpc`` directory above ``out_dir``: ``E0910``). None when such a build would
    refuse (``E0910``, ``E0912``) or find no generation: nothing may then be replayed."""
    out = Path(os.path.realpath(out_dir))
    area = out / AREA
    absent = [str(d / MARKER) for d in out.parents if d.name == AREA]
    try:
        if any(os.path.lexists(p) for p in absent) or not stat.S_ISDIR(os.lstat(area).st_mode):
            return None
        gen, manifest = _current(area, str(out_dir))
    except (OSError, CompileError):
        return None
    if gen is None or not os.path.lexists(area / MARKER) or not all(_ours(out, name) for name in manifest["links"]):
        return None
    links = {str(area / "current"): f"gen/{gen.name}"}
    links.update((str(out / name), f"{AREA}/current/{name}") for name in manifest["links"])
    return links, [str(area / MARKER), str(gen / MANIFEST), str(area / LOCK)], absent


def _read_manifest(gen: Path) -> dict | None:
    """The manifest of generation ``gen``: ``{"format": 1, "recipes": {recipe: {variant:
    [render names]}}, "outputs": {recipe: n, its directory outputs/<n>}, "links": [first
    parts of the recipe names]}``, and ``"provenance": {recipe: {variant: record}}`` when
    a variant was built with overrides (:func:`rcpc.domain.overrides.provenance`: a JSON
    object with a list ``overrides`` of objects); None when it is missing, unreadable, or
    not of that shape with portable names only."""
    try:
        data = json.loads(read_limited(gen / MANIFEST, MAX_MANIFEST_BYTES))
        recipes, outputs = data["recipes"], data["outputs"]
        ok = (data["format"] == FORMAT and type(recipes) is dict and data["links"] == _links(recipes)
              and type(outputs) is dict and outputs.keys() == recipes.keys()
              and all(type(n) is int and n > 0 for n in outputs.values()))
        for recipe, variants in recipes.items():
            ok = ok and type(variants) is dict
            _check_names(recipe, "v", [])
            for variant, renders in variants.items():
                ok = ok and type(renders) is list and all(type(r) is str for r in renders)
                _check_names(recipe, variant, renders)
        records = data.get("provenance", {})
        ok = ok and type(records) is dict and all(
            type(variants) is dict and variants and variants.keys() <= recipes.get(recipe, {}).keys()
            and all(type(r) is dict and type(r.get("overrides")) is list
                    and all(type(o) is dict for o in r["overrides"]) for r in variants.values())
            for recipe, variants in records.items())
        _nested(recipes)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, CompileError):
        return None
    return data if ok else None


def _links(recipes: dict) -> list[str]:
    return sorted({recipe.split("/", 1)[0] for recipe in recipes})


def _nested(recipes) -> dict:
    """The recipes' places in a generation as a tree: {name: subtree, or None for a recipe's
    link}. ValueError when one recipe's place is inside another's."""
    root: dict = {}
    for recipe in recipes:
        *dirs, name = recipe.split("/")
        node = root
        for part in dirs:
            node = node.setdefault(part, {})
            if node is None:
                raise ValueError(recipe)
        if name in node:
            raise ValueError(recipe)
        node[name] = None
    return root


def _variants(variants: dict) -> dict:
    """A recipe's output directory as a tree: {variant: {render: None}}."""
    return {variant: dict.fromkeys(renders) for variant, renders in variants.items()}


def _target(recipe: str, n: int) -> str:
    """The link from ``gen/<g>/<recipe>`` to ``outputs/<n>``, relative."""
    return "../" * (recipe.count("/") + 2) + f"outputs/{n}"


def _ours(out, name: str, dir_fd: int | None = None) -> bool:
    """``out/name`` (``out`` relative to directory ``dir_fd`` when given) is the link rcpc
    makes for recipes whose name starts with ``name``."""
    try:
        return os.readlink(os.path.join(out, name), dir_fd=dir_fd) == f"{AREA}/current/{name}"
    except OSError:
        return False


def _sweep(out: Path, current: Path | None, manifest: dict) -> None:
    """Remove what an earlier build killed outright (SIGKILL, power loss) left behind: a
    half-made ``current.new``, every generation but the current one with the links and
    outputs only they used (by their manifests), and outputs no manifest lists (never
    published)."""
    area = out / AREA
    try:
        os.unlink(area / "current.new")
    except FileNotFoundError:
        pass
    keep = set(manifest["outputs"].values())
    listed = set(keep)
    for name in sorted(_listdir(area / "gen")):
        gen = area / "gen" / name
        if gen == current:
            continue
        other = _read_manifest(gen)
        if other is None:  # never published (its manifest is written before the switch)
            _remove_tree(gen)
            continue
        listed.update(other["outputs"].values())
        for link in set(other["links"]) - set(manifest["links"]):
            if _ours(out, link):
                os.unlink(out / link)
        _drop(area, gen, other, keep)
    for name in _listdir(area / "outputs"):
        if not (name.isdigit() and int(name) in listed):
            _remove_tree(area / "outputs" / name)


def _remove_tree(path: Path) -> None:
    """Remove the directory ``path`` and what it holds, ignoring errors (``shutil.rmtree``;
    shutil, which imports bz2 and lzma, is loaded only when a tree is removed: ~2 ms that a
    build whose output has nothing to drop does not pay)."""
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _listdir(path: Path) -> list[str]:
    try:
        return os.listdir(path)
    except FileNotFoundError:
        return []


def _plan(old_gen: Path | None, old: dict, builds: list, whole, known, compared=None,
          verified: dict | None = None) -> tuple[dict, set]:
    """The new generation's manifest tree, and the (recipe, variant) pairs built whose
    renders differ from the current generation's (as ``compared`` found, where it holds).
    ``verified``: a dict given the stats of the files of each variant found unchanged
    ({(recipe, variant): {render name: stat}}, :attr:`Comparison.verified`)."""
    tree = {recipe: dict(variants) for recipe, variants in old["recipes"].items()
            if known is None or recipe in known}
    for recipe in whole:
        tree[recipe] = {v: names for v, names in tree.get(recipe, {}).items() if v == "custom"}
    changed = set()
    for recipe, variant, renders in builds:
        tree.setdefault(recipe, {})[variant] = sorted(name for name, _ in renders)
        same = compared.same(recipe, variant) if compared is not None else None
        stats = compared._found.get((recipe, variant)) if same else None
        if same is None:
            stats = [] if verified is not None else None
            same = _same(old_gen, old, recipe, variant, renders, stats)
        if not same:
            changed.add((recipe, variant))
        elif verified is not None:  # the directory's stat first, then each file's
            verified[(recipe, variant)] = {os.path.basename(path): st for path, st in stats[1:]}
    return {recipe: {v: tree[recipe][v] for v in sorted(tree[recipe])} for recipe in sorted(tree)}, changed


def _records(old: dict, tree: dict, builds: list, provenance: dict) -> dict:
    """The new generation's record of overrides ({recipe: {variant: record}}, only the
    variants that have one): each variant built gets its record in ``provenance`` (or none),
    every other variant of ``tree`` keeps the one it had (its output is carried over)."""
    records = {recipe: {v: r for v, r in old.get("provenance", {}).get(recipe, {}).items() if v in variants}
               for recipe, variants in tree.items()}
    for recipe, variant, _ in builds:
        records[recipe].pop(variant, None)
        if (recipe, variant) in provenance:
            records[recipe][variant] = provenance[(recipe, variant)]
    return {recipe: dict(sorted(variants.items())) for recipe, variants in records.items() if variants}


def _same(gen: Path | None, manifest: dict, recipe: str, variant: str, renders: list, stats=None) -> bool:
    """The current generation already holds exactly these renders there, byte for byte.
    ``stats``: a list to which the stat (:func:`rcpc.core.files.identity`) of the variant directory, taken
    before it is listed, and of each file, taken before it is read, are appended."""
    if gen is None or manifest["recipes"].get(recipe, {}).get(variant) != sorted(n for n, _ in renders):
        return False
    d = os.path.join(gen, recipe, variant)
    try:
        if stats is not None:
            stats.append((d, _stat(d)))
        if sorted(os.listdir(d)) != sorted(n for n, _ in renders):
            return False
        for name, text in renders:  # bounded: an output replaced by a FIFO or /dev/zero is no hang
            data = text.encode("utf-8")
            path = os.path.join(d, name)
            if stats is not None:
                stats.append((path, _stat(path)))
            if read_limited(path, len(data)) != data:
                return False
    except OSError:
        return False
    return True


class Comparison:
    """The current output of ``out_dir`` compared with renders while they are compiled,
    without the build lock (:func:`publish` takes it later; the comparison reads, never
    writes). :func:`publish` trusts a variant found unchanged only when the generation is
    still the one compared and the stat of its directory and of each of its files is still
    the one taken before they were listed and read, with a ctime and mtime older than
    :data:`rcpc.build.replay.RACY_NS` before the comparison began: any later change to them moves
    their ctime (git's "racy clean" rule, as the no-op replay applies it). A variant found
    changed is written again whatever happened since (always safe). Anything else is
    compared again under the lock."""

    def __init__(self, out_dir: Path):
        self.out_dir = out_dir
        self._before = time.time_ns() - RACY_NS  # a stat changed after this is not trusted
        self._found: dict = {}   # (recipe, variant) → [(path, stat)] when unchanged, else False
        # Set by publish: (recipe, variant) → {render name: stat} of each variant it found
        # unchanged, the stat taken before the bytes were compared (those files held their
        # renders then; the replay recorder trusts that only while the stat is the same).
        self.verified: dict = {}
        area = Path(os.path.realpath(out_dir)) / AREA
        try:
            number = _generation_id(area)
        except OSError:
            number = None
        self._gen = area / "gen" / str(number) if number is not None and number >= 0 else None
        self._manifest = _read_manifest(self._gen) if self._gen is not None else None

    def add(self, recipe: str, variant: str, renders: list) -> None:
        """Compare one variant's renders [(name, text)] with the current output."""
        if self._manifest is None:
            return
        stats: list = []
        self._found[(recipe, variant)] = _same(self._gen, self._manifest, recipe, variant, renders, stats) and stats

    def valid(self, gen: Path | None, manifest: dict) -> bool:
        """The comparison was made with generation ``gen`` and its ``manifest`` (the current
        ones, read under the lock)."""
        return gen is not None and gen == self._gen and manifest == self._manifest

    def same(self, recipe: str, variant: str) -> bool | None:
        """False: the variant changed (or was found changed); True: it is unchanged (its
        stats verified now); None: not known (compare it again)."""
        found = self._found.get((recipe, variant))
        if found is None:
            return None
        if found is False:
            return False
        for path, st in found:
            if max(st[1], st[2]) >= self._before:
                return None
            try:
                if _stat(path) != st:
                    return None
            except OSError:
                return None
        return True


def _refuse_foreign(area: Path, gen: Path, manifest: dict, kept: set, shown: str) -> None:
    """``E0911`` when the current generation, or the output of a recipe not ``kept`` as it
    is, holds anything its manifest does not list (reached through the links, a user may
    have put files there): it would go with them."""
    found: list[str] = []

    def walk(path: Path, rel: str, tree: dict, links: dict) -> None:
        with os.scandir(path) as entries:
            for e in sorted(entries, key=lambda e: e.name):
                want = tree.get(e.name, False)
                if want is None and (e.name not in links and e.is_file(follow_symlinks=False)
                                     or e.name in links and e.is_symlink() and os.readlink(e.path) == links[e.name]):
                    continue
                if type(want) is dict and e.is_dir(follow_symlinks=False):
                    walk(Path(e.path), f"{rel}{e.name}/", want, {k[len(e.name) + 1:]: v for k, v in links.items()
                                                                 if k.startswith(e.name + "/")})
                    continue
                found.append(rel + e.name)

    targets = {recipe: _target(recipe, n) for recipe, n in manifest["outputs"].items()}
    walk(gen, "", {**_nested(manifest["recipes"]), MANIFEST: None}, targets)
    for recipe, n in manifest["outputs"].items():
        d = area / "outputs" / str(n)
        if recipe not in kept and d.is_dir() and not d.is_symlink():
            walk(d, recipe + "/", _variants(manifest["recipes"][recipe]), {})
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise CompileError(Diagnostic(
            "E0911", f"{os.path.join(shown, found[0])}{more} was not written by rcpc, and would be "
                     f"deleted with the output it is in", None,
            hint=f"move it out of {shown}: rcpc replaces the directories it writes there on every build",
            notes=tuple(os.path.join(shown, f) for f in found[1:20])))


def _refuse_taken(out: Path, links: set, shown: str, origins: dict) -> None:
    """``E0910`` for each link needed whose place is taken by something rcpc did not make."""
    diags = []
    for name in sorted(links):
        if os.path.lexists(out / name) and not _ours(out, name):
            recipe = next((r for r in sorted(origins) if r.split("/", 1)[0] == name), None)
            diags.append(Diagnostic(
                "E0910", f"cannot write {os.path.join(shown, name)}: it exists and was not made by rcpc",
                origins.get(recipe), hint=f"recipe '{recipe or name}' writes there: choose another output directory "
                                          f"(-o), or move it away if it is an older rcpc's output"))
    if diags:
        raise CompileError(diags)


def _staged_dir(parent: Path, staged: list, after: list | None = None) -> Path:
    """:func:`_next_dir`, noted in ``staged`` with SIGINT and SIGTERM held back from the
    mkdir to the note (a signal in between would leave the directory behind)."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        d = _next_dir(parent, after)
        staged.append(d)
    finally:  # a signal held back meanwhile is raised here, with the directory noted
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return d


def _next_dir(parent: Path, after: list | None = None) -> Path:
    """Make a new directory in ``parent`` (made if missing), numbered one past every one
    there. ``after``: a one-item list holding the number this process made there last, or
    empty (set here): the next number is tried first, without listing ``parent`` again (a
    build makes a thousand, under the lock, so no other process adds any meanwhile), and
    ``parent`` is listed again only when that one exists."""
    if after:
        try:
            os.mkdir(parent / str(after[0] + 1))
            after[0] += 1
            return parent / str(after[0])
        except FileExistsError:
            pass
    os.makedirs(parent, exist_ok=True)
    n = max((int(n) for n in os.listdir(parent) if n.isdigit()), default=0) + 1
    os.mkdir(parent / str(n))
    if after is not None:
        after[:] = [n]
    return parent / str(n)


def _stage(area: Path, gen: Path, old: dict, tree: dict, kept: set, built: dict, staged: list,
           records: dict) -> dict:
    """Write generation ``gen``, not yet published, and return its manifest (with
    ``records``, the overrides of custom builds, :func:`_records`, when there are any): a recipe
    ``kept`` keeps its output directory; any other gets a new one (added to ``staged``)
    holding the renders ``built`` {(recipe, variant): renders}, and the others of its
    variants hard-linked from its current one (copied where the file system has no hard
    links). A render built that its current one holds already, with the mode it would be
    written with, is hard-linked too (a flag edit changes a few renders of each variant;
    creating a file costs ~10x linking one on ext4)."""
    from rcpc.domain.renders import EXECUTABLE_SUFFIXES

    umask = os.umask(0o077)
    os.umask(umask)
    outputs = {}
    numbered: list = []  # the last outputs/<n> made
    parents = {str(gen)}  # directories of the generation made so far
    for recipe, variants in tree.items():
        n = old["outputs"].get(recipe)
        if recipe not in kept:
            d = _staged_dir(area / "outputs", staged, numbered)
            for variant, names in variants.items():
                where = os.path.join(d, variant)
                os.mkdir(where)
                renders = built.get((recipe, variant))
                if renders is None:
                    variants[variant] = _carry(area / "outputs" / str(n) / variant, d / variant, names)
                    continue
                before = None if n is None else area / "outputs" / str(n) / variant
                for name, text in renders:
                    mode = 0o777 if os.path.splitext(name)[1] in EXECUTABLE_SUFFIXES else 0o666
                    data, path = text.encode("utf-8"), os.path.join(where, name)
                    if before is None or not _link_same(os.path.join(before, name), path, data, mode & ~umask):
                        _write_new(path, data, mode)
            n = int(d.name)
        outputs[recipe] = n
        link = os.path.join(gen, recipe)
        parent = os.path.dirname(link)
        if parent not in parents:
            os.makedirs(parent, exist_ok=True)
            parents.add(parent)
        os.symlink(_target(recipe, n), link)
    manifest = {"format": FORMAT, "links": _links(tree), "outputs": outputs, "recipes": tree}
    if records:  # a build without overrides writes the manifest it always did
        manifest["provenance"] = records
    with open(gen / MANIFEST, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    return manifest


def _write_new(path: str, data: bytes, mode: int) -> None:
    """Create the file ``path`` (it must not exist) with ``mode`` (less the umask) holding
    ``data``. Raises OSError."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _link_same(src: str, dst: str, data: bytes, mode: int) -> bool:
    """Hard-link ``src`` as the new file ``dst`` when it is a regular file holding exactly
    ``data`` with permission bits ``mode``; whether it did (False: write ``dst``). A FIFO or
    device put there is never read (``O_NONBLOCK``, type checked on the open file)."""
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(data) or stat.S_IMODE(st.st_mode) != mode:
            return False
        if read_fd(fd, len(data) + 1) != data:
            return False
        os.link(src, dst, follow_symlinks=False)
        return True
    except OSError:  # no hard links here (EPERM, EMLINK, EXDEV, ...), unreadable: written instead
        return False
    finally:
        os.close(fd)


def _carry(src: Path, dst: Path, names: list) -> list:
    """Hard-link the renders ``names`` of a variant from ``src`` to ``dst``; returns those
    that were there to carry."""
    kept = []
    for name in names:
        try:
            os.link(src / name, dst / name, follow_symlinks=False)
        except FileNotFoundError:  # deleted by hand: not carried over
            continue
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EMLINK, errno.EXDEV, errno.ENOTSUP):
                raise
            import shutil

            shutil.copyfile(src / name, dst / name, follow_symlinks=False)
        kept.append(name)
    return kept


def _swap(out: Path, gen: Path, links: set) -> None:
    """Publish generation ``gen``: make the ``links`` it needs, then switch ``current`` to it
    with one rename(2). If that fails, the links made are removed again."""
    made = []
    try:
        for name in sorted(links):
            if not os.path.lexists(out / name):
                os.symlink(f"{AREA}/current/{name}", out / name)
                made.append(name)
        new = out / AREA / "current.new"
        os.symlink(f"gen/{gen.name}", new)
        os.rename(new, out / AREA / "current")
    except OSError:
        for name in made:
            os.unlink(out / name)
        raise


def _in_area(out: Path, work) -> None:
    """Run ``work(out_fd, area_fd)`` (under the build lock, which the caller holds), given
    descriptors of the output directory ``out`` and of its area, opened now. The work reaches
    the directories it was given through those descriptors, never by path: a directory deleted or moved away meanwhile and made again at the same path by another
    build (numbering its generations from 1 again) is not this lock's. When they cannot be
    opened, nothing is done (what the work removes, the next build removes, :func:`_sweep`)."""
    fds: list[int] = []
    flags = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC  # O_PATH: no read permission needed
    try:
        fds.append(os.open(out, flags))
        fds.append(os.open(AREA, flags | os.O_NOFOLLOW, dir_fd=fds[0]))
    except OSError:
        for fd in fds:
            os.close(fd)
        return
    try:
        work(fds[0], fds[1])
    finally:
        for fd in fds:
            os.close(fd)


def _clean(out_fd: int, area_fd: int, links: set, old_gen: Path | None, old: dict, new: dict) -> None:
    """After the switch: remove the links no longer needed, the previous generation and the
    outputs only it used (in the output directory and its area open as ``out_fd`` and
    ``area_fd``)."""
    for name in set(old["links"]) - links:
        if _ours(".", name, out_fd):
            try:
                os.unlink(name, dir_fd=out_fd)
            except OSError:
                pass
    if old_gen is not None:
        _drop(".", os.path.join("gen", old_gen.name), old, set(new["outputs"].values()), area_fd)


def _drop(area, gen, manifest: dict, keep: set, dir_fd: int | None = None) -> None:
    """Remove generation ``gen`` and the outputs it lists that are not in ``keep``, by its
    manifest (``area``, ``gen``: paths, relative to directory ``dir_fd`` when given).
    Whatever else is in them stays, and so does the generation with its manifest while
    anything of its outputs does."""
    whole = True
    for recipe, n in manifest["outputs"].items():
        if n not in keep:
            whole &= _remove(os.path.join(area, "outputs", str(n)), _variants(manifest["recipes"][recipe]),
                             dir_fd=dir_fd)
    if whole:
        _remove(gen, _nested(manifest["recipes"]), last=MANIFEST, dir_fd=dir_fd)


def _remove(path, tree: dict, last: str | None = None, dir_fd: int | None = None) -> bool:
    """Delete directory ``path`` (relative to directory ``dir_fd`` when given) holding
    ``tree`` ({name: subtree, or None for a file or symlink}), and then ``last``, never
    following a symlink: each directory is opened with O_NOFOLLOW and emptied through its
    descriptor. Anything else found there stays (and so does ``last``); returns whether
    ``path`` is gone."""

    def empty(dir_fd: int, tree: dict) -> bool:
        emptied = True
        for name, sub in tree.items():
            try:
                if sub is None:
                    os.unlink(name, dir_fd=dir_fd)
                    continue
                fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
                try:
                    done = empty(fd, sub)
                finally:
                    os.close(fd)
                if done:
                    os.rmdir(name, dir_fd=dir_fd)
                else:
                    emptied = False
            except FileNotFoundError:
                pass
            except OSError:  # not what the manifest says it is, or not empty
                emptied = False
        return emptied

    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        if not empty(fd, tree) or os.listdir(fd) != ([last] if last else []):
            return False
        if last:
            os.unlink(last, dir_fd=fd)
    finally:
        os.close(fd)
    try:
        os.rmdir(path, dir_fd=dir_fd)
    except OSError:
        return False
    return True
