"""The build cache: a warm ``rcpc build`` or ``rcpc check`` of unchanged recipes reuses the
last results without parsing or evaluating anything (lark and the evaluator are not even
imported).

An entry is one of the ``build`` area of rcpc's store (:mod:`rcpc.core.store`: its key
discipline, entry format, validation, trust rules and batched writes), keyed by the request:
the workspace's directory, rcpc's version and the size and mtime of each of its own source
files (:func:`rcpc.core.usercache.code_fingerprint`), the bytes of ``rcp.toml`` the workspace
was read from, the recipe, the variant or ``--set`` items and the schema options. Its payload
(:func:`encode`: two lines of JSON) records first the digest (:mod:`rcpc.core.digest`) of the bytes of every file the
recipe depended on *as the compiler read them* (the recipe, its loads, schema files:
:attr:`rcpc.domain.recipe.Compiler.digests`, never a second read, so a file edited while its
recipe compiles is not cached under its new content) and every symlink followed (a lookup
checks that each still resolves to the same file), then each render's name and text (each
distinct text once), the warnings printed and the variants whose contracts held.

A lookup is a hit only when the store returns the entry (its bytes check against the key
asked for) and the payload is well formed (:func:`_validate`: every dependency and the recipe
itself among them, variant and render names that are single safe path components,
diagnostics of the right shape) and every dependency still has the recorded hash (as this
run first saw the file: :attr:`BuildCache.seen`); anything unreadable, corrupted, another
request's or different is a miss, and the recipe is compiled again (and the entry
rewritten). ``RCPC_NO_CACHE=1`` turns the cache off.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from rcpc.core import patterns
from rcpc.core import store
from rcpc.core.diagnostics import from_json, to_json
from rcpc.core.digest import hexdigest
from rcpc.core.files import read_limited
from rcpc.core.limits import MAX_NAME, MAX_SCHEMA_BYTES
from rcpc.core.usercache import code_fingerprint
from rcpc.domain.workspace import LINK

AREA = "build"

_DIGEST = patterns.precompiled(r"[0-9a-f]{64}\Z")
# A variant or render name as the compiler accepts it (rcpc.domain.renders.RENDER_NAME, E0701/E0604): one
# path component, no '..', no leading '.'.
_COMPONENT = patterns.precompiled(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_RENDER_SUFFIXES = (".yaml", ".flags", ".sh")  # of rcpc.domain.renders.KINDS (tests/test_cache.py)


def safe_component(name) -> bool:
    """True when ``name`` is a variant or render name the compiler could have produced: one
    path component of letters, digits, ``.``, ``-`` and ``_``, not starting with ``.``, without
    ``..``, at most :data:`~rcpc.core.limits.MAX_NAME` characters."""
    return type(name) is str and len(name) <= MAX_NAME and ".." not in name and bool(_COMPONENT.match(name))


class BuildCache:
    """Cached builds of one workspace (at ``root``), entries of the store's ``build`` area
    (:mod:`rcpc.core.store`). ``options`` are the request details that change results
    (variant, ``--set`` items, schema options), as strings; ``config`` the bytes of
    ``rcp.toml`` the workspace was read from."""

    def __init__(self, root: Path, config: bytes):
        self.enabled = store.enabled()
        self._base = (str(root), code_fingerprint(), config) if self.enabled else ()
        # {path: digest} of each file as this run saw it (compiled, or checked by a lookup): a
        # later lookup in the run checks against it, not the file read again, so that one
        # command sees one version of a file edited while it runs
        self.seen: dict[str, str] = {}

    def note(self, deps: dict[str, str] | None) -> None:
        """Files this run used, as {path: digest hex} (``LINK`` entries are skipped)."""
        for path, digest in (deps or {}).items():
            if not digest.startswith(LINK):
                self.seen.setdefault(path, digest)

    def _key(self, recipe: Path, options: list[str]) -> str:
        return store.key(AREA, *self._base, str(recipe), *options)

    def lookup(self, recipe: Path, options: list[str], contracts: bool = False):
        """``(builds, warnings, deps)`` of the last identical request, or None. ``builds`` is a
        list of (variant, [(render name, text)]); ``warnings`` a list of
        :class:`~rcpc.core.diagnostics.Diagnostic`; ``deps`` maps each dependency's path to its
        hex digest (:mod:`rcpc.core.digest`; or ``LINK`` + the real path of a symlink). With ``contracts``, a
        fourth item: the variants whose diff contract was checked and held, in the recipe's
        order (an entry is stored only when every contract held)."""
        if not self.enabled:
            return None
        payload = store.get(AREA, self._key(recipe, options))
        if payload is None:
            return None
        try:
            deps = _validate_deps(payload, str(recipe))
            for path, digest in deps.items():
                if digest.startswith(LINK):
                    if os.path.realpath(path) != digest[len(LINK):]:
                        return None
                elif (self.seen.get(path) or hexdigest(read_limited(path, MAX_SCHEMA_BYTES))) != digest:
                    return None
            builds, warnings, held = _validate(decode(payload)[1])
        except (OSError, ValueError, UnicodeDecodeError, RecursionError):
            return None
        self.note(deps)
        return (builds, warnings, deps, held) if contracts else (builds, warnings, deps)

    def store(self, recipe: Path, options: list[str], deps: dict[str, str] | None, builds,
              warnings: list, contracts: list[str] = ()) -> dict | None:
        """Record a successful build of ``recipe`` whose dependencies ``deps`` ({path: digest
        hex of the bytes compiled, or ``LINK`` + real path}, from
        :meth:`~rcpc.domain.recipe.Compiler.dependency_digests`) were compiled into ``builds``
        ([(variant, [(render, text)])]) with ``warnings`` (diagnostic dicts), every diff
        contract of the variants ``contracts`` holding: written with the run's other entries
        (:func:`rcpc.core.store.flush`). Returns ``deps``, or None when the cache is off or
        ``deps`` is None (a dependency changed while it was compiled: nothing is stored)."""
        if not self.enabled or deps is None:
            return None
        self.note(deps)
        store.put(AREA, self._key(recipe, options), encode(deps, builds, warnings, contracts))
        return deps


def encode(deps: dict, builds, warnings: list, contracts) -> bytes:
    """The payload of an entry (:func:`pack`) of the builds ``builds``, each distinct render
    text once: variants share most renders (the RL recipe's 52 renders hold 22 texts, 120 of
    279 kB), and the entry's size is paid for in encoding, hashing, writing and reading it back."""
    texts: dict[str, int] = {}  # text -> its index, in order of first use
    refs = [[variant, [[name, texts.setdefault(text, len(texts))] for name, text in renders]]
            for variant, renders in builds]
    return pack(deps, {"texts": list(texts), "builds": refs, "warnings": warnings, "contracts": list(contracts)})


def pack(deps: dict, rest: dict) -> bytes:
    """An entry's payload: its dependencies ``deps`` (JSON) on the first line, so that a lookup
    after an edit, whose recorded hashes no longer match, decodes nothing more; ``rest`` (JSON)
    on the second, each of ``rest["texts"]`` (strings) replaced by its length in bytes; then
    the texts' UTF-8 bytes, one after another. As JSON strings the texts cost their escaping
    both ways (9 of the ~12 ms 100 recipes' entries took to encode, issue 41)."""
    data = [text.encode("utf-8", "surrogatepass") for text in rest["texts"]]
    head = json.dumps({**rest, "texts": [len(d) for d in data]}).encode()
    return json.dumps(deps).encode() + b"\n" + head + b"\n" + b"".join(data)


def decode(payload: bytes) -> tuple:
    """``(deps, rest)`` of a payload :func:`pack` wrote, ``rest["texts"]`` the texts again
    (no other shape checked: :func:`_validate_deps`, :func:`_validate`). Raises ValueError
    (UnicodeDecodeError too) for one it could not have written."""
    head, newline, body = payload.partition(b"\n")
    rest, newline2, data = body.partition(b"\n")
    if not newline or not newline2:
        raise ValueError("not a cache entry")
    entry = json.loads(rest)
    sizes = entry.get("texts") if type(entry) is dict else None
    if type(sizes) is not list or not all(type(n) is int and n >= 0 for n in sizes) or sum(sizes) != len(data):
        raise ValueError("bad render texts")
    texts, at = [], 0
    for n in sizes:
        texts.append(data[at:at + n].decode("utf-8", "surrogatepass"))
        at += n
    entry["texts"] = texts
    return json.loads(head), entry


def _validate_deps(payload: bytes, recipe: str) -> dict:
    """The dependencies (``{path: digest hex or LINK + real path}``) recorded on the first
    line of a payload read back (:func:`encode`; its bytes checked by the store). Raises
    ValueError for anything that a store of a build of ``recipe`` could not have written."""
    head, newline, _ = payload.partition(b"\n")
    if not newline:
        raise ValueError("not a cache entry")
    deps = json.loads(head)
    if type(deps) is not dict or recipe not in deps:
        raise ValueError("bad dependencies")
    for path, digest in deps.items():
        if not (os.path.isabs(path) and type(digest) is str
                and (_DIGEST.match(digest) or digest.startswith(LINK + os.sep))):
            raise ValueError("bad dependency")
    return deps


def _validate(entry):
    """``(builds, warnings, contracts)`` of the rest of a cache entry's payload read back
    (:func:`encode`): builds as ``[(variant, [(render name, text)])]``, the warnings as
    :class:`~rcpc.core.diagnostics.Diagnostic`. Raises ValueError for anything that a store
    could not have written."""

    if type(entry) is not dict or set(entry) != {"texts", "builds", "warnings", "contracts"}:
        raise ValueError("not a cache entry")
    texts = entry["texts"]
    if type(texts) is not list or not all(type(text) is str for text in texts):
        raise ValueError("bad render texts")
    builds = entry["builds"]
    if type(builds) is not list:
        raise ValueError("bad builds")
    variants = set()
    out = []
    for build in builds:
        if type(build) is not list or len(build) != 2 or type(build[1]) is not list:
            raise ValueError("bad build")
        variant, renders = build
        if not safe_component(variant) or variant in variants:
            raise ValueError("bad variant name")
        variants.add(variant)
        names = set()
        made = []
        for ref in renders:
            if type(ref) is not list or len(ref) != 2:
                raise ValueError("bad render")
            name, text = ref
            if not safe_component(name) or not name.endswith(_RENDER_SUFFIXES) or name in names:
                raise ValueError("bad render name")
            if type(text) is not int or not 0 <= text < len(texts):
                raise ValueError("bad render text")
            names.add(name)
            made.append((name, texts[text]))
        out.append((variant, made))
    if type(entry["warnings"]) is not list:
        raise ValueError("bad warnings")
    held = entry["contracts"]
    if type(held) is not list or not all(v in variants for v in held) or len(set(held)) != len(held):
        raise ValueError("bad contracts")
    warnings = [from_json(d) for d in entry["warnings"]]
    return out, warnings, held


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
    found, {dependency: digest} or None)`` (None: the cache is off, or a dependency changed
    while it was compiled)."""
    from rcpc.domain.recipe import contract_variants

    out = [(vb.variant, [(r.name, r.text) for r in vb.renders]) for vb in builds]
    deps = cache.store(path, options, compiler.dependency_digests(path), out, [to_json(d) for d in found],
                       contract_variants(recipe, builds))
    return out, found, deps
