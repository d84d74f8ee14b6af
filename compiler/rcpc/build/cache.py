"""The build cache: a warm ``rcpc build`` or ``rcpc check`` of unchanged recipes reuses the
last results without parsing or evaluating anything (lark and the evaluator are not even
imported).

An entry is keyed by the request: rcpc's version and the size and mtime of each of its own
source files, the bytes of ``rcp.toml`` the workspace was read from, the recipe, the variant
or ``--set`` items and the schema options. It records its own key, the SHA-256 of the bytes
of every file the recipe depended on *as the compiler read them* (the recipe, its loads,
schema files: :attr:`rcpc.domain.recipe.Compiler.digests`, never a second read, so a file edited
while its recipe compiles is not cached under its new content), every symlink followed (a
lookup checks that each still resolves to the same file), each render's text as a
content-addressed blob, and the warnings printed.

A lookup is a hit only when the entry is well formed (:func:`_validate`: its own key, every
dependency and the recipe itself among them, variant and render names that are single safe
path components, blobs named by SHA-256 digests, diagnostics of the right shape), every
dependency still has the recorded hash (as this run first saw the file: :attr:`BuildCache.seen`)
and every blob reads back with its hash; anything
unreadable, corrupted, swapped with another recipe's entry or different is a miss, and the
recipe is compiled again (and the entry rewritten). Entries live in
``$XDG_CACHE_HOME/rcpc/builds`` (``~/.cache/rcpc/builds``); ``RCPC_NO_CACHE=1`` turns the cache
off.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from rcpc.core.envvars import get
from rcpc.core.files import read_limited
from rcpc.core.limits import MAX_FILE_BYTES, MAX_NAME, MAX_RENDERS, MAX_SCHEMA_BYTES
from rcpc.core.usercache import cache_dir, code_fingerprint, make_dirs, read_owned, write_atomic
from rcpc.domain.workspace import LINK

_DIGEST = re.compile(r"[0-9a-f]{64}\Z")
# A variant or render name as the compiler accepts it (rcpc.domain.renders.RENDER_NAME, E0701/E0604): one
# path component, no '..', no leading '.'.
_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_RENDER_SUFFIXES = (".yaml", ".flags", ".sh")  # of rcpc.domain.renders.KINDS (tests/test_cache.py)
_MAX_BLOB = MAX_RENDERS * MAX_FILE_BYTES  # no render is larger than this


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def safe_component(name) -> bool:
    """True when ``name`` is a variant or render name the compiler could have produced: one
    path component of letters, digits, ``.``, ``-`` and ``_``, not starting with ``.``, without
    ``..``, at most :data:`~rcpc.core.limits.MAX_NAME` characters."""
    return type(name) is str and len(name) <= MAX_NAME and ".." not in name and bool(_COMPONENT.match(name))


class BuildCache:
    """Cached builds of one workspace. ``options`` are the request details that change
    results (variant, ``--set`` items, schema options), as strings; ``config`` the bytes of
    ``rcp.toml`` the workspace was read from."""

    def __init__(self, root: Path, config: bytes):
        self.dir = cache_dir("builds", _sha(str(root).encode())[:16])
        self.enabled = self.dir is not None and not get("RCPC_NO_CACHE")
        self._base_key = _sha(code_fingerprint().encode() + b"\0" + config) if self.enabled else ""
        # {path: SHA-256} of each file as this run saw it (compiled, or checked by a lookup): a
        # later lookup in the run checks against it, not the file read again, so that one
        # command sees one version of a file edited while it runs
        self.seen: dict[str, str] = {}

    def note(self, deps: dict[str, str] | None) -> None:
        """Files this run used, as {path: SHA-256 hex} (``LINK`` entries are skipped)."""
        for path, digest in (deps or {}).items():
            if not digest.startswith(LINK):
                self.seen.setdefault(path, digest)

    def _key(self, recipe: Path, options: list[str]) -> str:
        return _sha("\0".join([self._base_key, str(recipe), *options]).encode())

    def _entry_path(self, key: str) -> Path:
        return Path(self.dir) / "entries" / f"{key}.json"

    def lookup(self, recipe: Path, options: list[str], contracts: bool = False):
        """``(builds, warnings, deps)`` of the last identical request, or None. ``builds`` is a
        list of (variant, [(render name, text)]); ``warnings`` a list of
        :class:`~rcpc.core.diagnostics.Diagnostic`; ``deps`` maps each dependency's path to its
        SHA-256 hex digest (or ``LINK`` + the real path of a symlink). With ``contracts``, a
        fourth item: the variants whose diff contract was checked and held, in the recipe's
        order (an entry is stored only when every contract held)."""
        if not self.enabled:
            return None
        key = self._key(recipe, options)
        try:
            entry = json.loads(read_owned(str(self._entry_path(key)), _MAX_BLOB))
            deps, builds, warnings, held = _validate(entry, key, str(recipe))
            for path, digest in deps.items():
                if digest.startswith(LINK):
                    if os.path.realpath(path) != digest[len(LINK):]:
                        return None
                elif (self.seen.get(path) or _sha(read_limited(path, MAX_SCHEMA_BYTES))) != digest:
                    return None
            out = []
            for variant, renders in builds:
                texts = []
                for name, digest in renders:
                    data = read_owned(os.path.join(self.dir, "blobs", digest), _MAX_BLOB)
                    if _sha(data) != digest:
                        return None
                    texts.append((name, data.decode("utf-8")))
                out.append((variant, texts))
            self.note(deps)
            return (out, warnings, deps, held) if contracts else (out, warnings, deps)
        except (OSError, ValueError, UnicodeDecodeError, RecursionError):
            return None

    def store(self, recipe: Path, options: list[str], deps: dict[str, str] | None, builds,
              warnings: list, contracts: list[str] = ()) -> dict | None:
        """Record a successful build of ``recipe`` whose dependencies ``deps`` ({path: SHA-256
        hex of the bytes compiled, or ``LINK`` + real path}, from
        :meth:`~rcpc.domain.recipe.Compiler.dependency_digests`) were compiled into ``builds``
        ([(variant, [(render, text)])]) with ``warnings`` (diagnostic dicts), every diff
        contract of the variants ``contracts`` holding; failures to write are ignored.
        Returns ``deps``, or None when the cache is off or ``deps`` is None (a dependency
        changed while it was compiled: nothing is stored)."""
        if not self.enabled or deps is None:
            return None
        self.note(deps)
        key = self._key(recipe, options)
        self._write(key, deps, builds, warnings, list(contracts))
        return deps

    def _write(self, key: str, deps: dict, builds, warnings: list, contracts: list) -> None:
        """Write the entry ``key`` and the blobs of its renders (those not already there
        intact); failures to write are ignored."""
        try:
            blobs = Path(self.dir) / "blobs"
            make_dirs(str(blobs))
            make_dirs(str(self._entry_path(key).parent))
            entry_builds = []
            for variant, renders in builds:
                refs = []
                for name, text in renders:
                    data = text.encode("utf-8")
                    digest = _sha(data)
                    blob = blobs / digest
                    try:
                        good = _sha(read_owned(str(blob), _MAX_BLOB)) == digest
                    except OSError:  # new, unreadable or not a file
                        good = False
                    if not good:
                        write_atomic(blob, data)
                    refs.append([name, digest])
                entry_builds.append([variant, refs])
            entry = {"key": key, "deps": deps, "builds": entry_builds, "warnings": warnings, "contracts": contracts}
            write_atomic(self._entry_path(key), json.dumps(entry).encode())
        except OSError:
            pass


def _validate(entry, key: str, recipe: str):
    """``(deps, builds, warnings, contracts)`` of a cache entry read back, with the warnings as
    :class:`~rcpc.core.diagnostics.Diagnostic`. Raises ValueError for anything that a store of the
    request ``key`` for ``recipe`` could not have written."""
    from rcpc.core.diagnostics import from_json

    if type(entry) is not dict or set(entry) != {"key", "deps", "builds", "warnings", "contracts"}:
        raise ValueError("not a cache entry")
    if entry["key"] != key:  # another request's entry (swapped or copied): not ours
        raise ValueError("the entry of another request")
    deps = entry["deps"]
    if type(deps) is not dict or recipe not in deps:
        raise ValueError("bad dependencies")
    for path, digest in deps.items():
        if not (os.path.isabs(path) and type(digest) is str
                and (_DIGEST.match(digest) or digest.startswith(LINK + os.sep))):
            raise ValueError("bad dependency")
    builds = entry["builds"]
    if type(builds) is not list:
        raise ValueError("bad builds")
    variants = set()
    for build in builds:
        if type(build) is not list or len(build) != 2 or type(build[1]) is not list:
            raise ValueError("bad build")
        variant, renders = build
        if not safe_component(variant) or variant in variants:
            raise ValueError("bad variant name")
        variants.add(variant)
        names = set()
        for ref in renders:
            if type(ref) is not list or len(ref) != 2:
                raise ValueError("bad render")
            name, digest = ref
            if not safe_component(name) or not name.endswith(_RENDER_SUFFIXES) or name in names:
                raise ValueError("bad render name")
            if type(digest) is not str or not _DIGEST.match(digest):
                raise ValueError("bad blob digest")
            names.add(name)
    if type(entry["warnings"]) is not list:
        raise ValueError("bad warnings")
    held = entry["contracts"]
    if type(held) is not list or not all(v in variants for v in held) or len(set(held)) != len(held):
        raise ValueError("bad contracts")
    warnings = [from_json(d) for d in entry["warnings"]]
    return deps, builds, warnings, held


def request(ws, variant: str | None, sets) -> tuple[BuildCache, list[str]]:
    """The build cache of workspace ``ws`` and a request's options (what, besides files,
    changes results); ``sets``: ``--set`` items or an :class:`~rcpc.domain.overrides.Overrides`."""
    from rcpc.domain.overrides import Overrides

    options = [f"variant={variant or ''}", *Overrides.of(sets).options(),
               f"maxtext_schema={ws.maxtext_schema}", f"kube_schemas={list(map(str, ws.kube_schemas))}",
               *(["strict_crd"] if ws.strict_crd else [])]
    return BuildCache(ws.root, ws.config_bytes), options


def store_built(cache: BuildCache, options: list[str], compiler, path: Path, recipe, builds: list,
                found: list):
    """Store in ``cache`` the builds ``builds`` of ``recipe`` (at ``path``), made by
    ``compiler`` with the warnings ``found``, every contract of them checked and holding
    (:meth:`rcpc.domain.recipe.Compiler.compile`). Returns ``([(variant, [(render, text)])],
    found, {dependency: SHA-256} or None)`` (None: the cache is off, or a dependency changed
    while it was compiled)."""
    from rcpc.core.diagnostics import to_json
    from rcpc.domain.recipe import contract_variants

    out = [(vb.variant, [(r.name, r.text) for r in vb.renders]) for vb in builds]
    deps = cache.store(path, options, compiler.dependency_digests(path), out, [to_json(d) for d in found],
                       contract_variants(recipe, builds))
    return out, found, deps
