"""The build cache: a warm ``rcpc build`` or ``rcpc check`` of unchanged recipes reuses the
last results without parsing or evaluating anything (lark and the evaluator are not even
imported).

An entry is keyed by the request: rcpc's version and the size and mtime of each of its own
source files, the recipe, ``rcp.toml``'s bytes, the variant or ``--set`` items and the schema
options. It records the SHA-256 of every file the recipe depended on (the recipe, its loads,
schema files), every symlink followed to reach them (a lookup checks that each still resolves
to the same file), each render's text as a content-addressed blob, and the warnings printed. A
lookup is a hit only when every dependency still has the recorded hash and every blob reads
back with its hash; anything unreadable, corrupted or different is a miss, and the recipe is
compiled again (and the entry rewritten). Entries live in ``$XDG_CACHE_HOME/rcpc/builds``
(``~/.cache/rcpc/builds``); ``RCPC_NO_CACHE=1`` turns the cache off.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from rcpc import __version__
from rcpc.usercache import cache_dir, write_atomic

_PACKAGE = Path(__file__).resolve().parent
LINK = "->"  # a dependency that is a symlink resolution, not a file's digest


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _code_fingerprint() -> str:
    """rcpc's own code: its version and every source file's size and mtime."""
    parts = [__version__]
    for p in sorted(_PACKAGE.rglob("*")):
        if p.suffix in (".py", ".lark"):
            st = p.stat()
            parts.append(f"{p.relative_to(_PACKAGE)}:{st.st_size}:{st.st_mtime_ns}")
    return _sha("\n".join(parts).encode())


class BuildCache:
    """Cached builds of one workspace. ``options`` are the request details that change
    results (variant, ``--set`` items, schema options), as strings."""

    def __init__(self, root: Path, config: bytes):
        self.dir = Path(cache_dir("builds", _sha(str(root).encode())[:16]))
        self.enabled = not os.environ.get("RCPC_NO_CACHE")
        self._base_key = _sha(_code_fingerprint().encode() + b"\0" + config) if self.enabled else ""

    def _key(self, recipe: Path, options: list[str]) -> str:
        return _sha("\0".join([self._base_key, str(recipe), *options]).encode())

    def lookup(self, recipe: Path, options: list[str]):
        """``(builds, warnings, deps)`` of the last identical request, or None. ``builds`` is a
        list of (variant, [(render name, text)]); ``warnings`` a list of diagnostic dicts;
        ``deps`` maps each dependency's path to its SHA-256 hex digest."""
        if not self.enabled:
            return None
        try:
            entry = json.loads((self.dir / "entries" / f"{self._key(recipe, options)}.json").read_text())
            for path, digest in entry["deps"].items():
                if digest.startswith(LINK):
                    if os.path.realpath(path) != digest[len(LINK):]:
                        return None
                elif _sha(Path(path).read_bytes()) != digest:
                    return None
            builds = []
            for variant, renders in entry["builds"]:
                texts = []
                for name, digest in renders:
                    data = (self.dir / "blobs" / digest).read_bytes()
                    if _sha(data) != digest:
                        return None
                    texts.append((name, data.decode("utf-8")))
                builds.append((variant, texts))
            return builds, entry["warnings"], entry["deps"]
        except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
            return None

    def store(self, recipe: Path, options: list[str], deps: set[Path], builds, warnings: list,
              links: dict | None = None) -> dict | None:
        """Record a successful build; failures to write the cache are ignored. ``links`` are
        the symlinks followed ({path as written: real path}, :attr:`Workspace.links`).
        Returns the dependencies ({path: SHA-256 hex, or ``LINK`` + real path for a link}),
        or None when the cache is off or they could not be read."""
        if not self.enabled:
            return None
        digests = None
        try:
            digests = {str(p): _sha(p.read_bytes()) for p in sorted(deps)}
            digests.update((written, LINK + real) for written, real in (links or {}).items())
            blobs = self.dir / "blobs"
            blobs.mkdir(parents=True, exist_ok=True)
            (self.dir / "entries").mkdir(parents=True, exist_ok=True)
            entry_builds = []
            for variant, renders in builds:
                refs = []
                for name, text in renders:
                    data = text.encode("utf-8")
                    digest = _sha(data)
                    blob = blobs / digest
                    if not blob.exists() or _sha(blob.read_bytes()) != digest:  # new, or corrupted
                        write_atomic(blob, data)
                    refs.append([name, digest])
                entry_builds.append([variant, refs])
            entry = {"deps": digests, "builds": entry_builds, "warnings": warnings}
            write_atomic(self.dir / "entries" / f"{self._key(recipe, options)}.json",
                          json.dumps(entry).encode())
        except OSError:
            pass
        return digests


def request(ws, variant: str | None, sets: list[str] | None) -> tuple[BuildCache, list[str]]:
    """The build cache of workspace ``ws`` and a request's options (what, besides files,
    changes results)."""
    from rcpc.workspace import CONFIG_NAME

    try:
        config = (ws.root / CONFIG_NAME).read_bytes()
    except OSError:
        config = b""
    options = [f"variant={variant or ''}", *(f"set={s}" for s in sets or []),
               f"maxtext_schema={ws.maxtext_schema}", f"kube_schemas={list(map(str, ws.kube_schemas))}"]
    return BuildCache(ws.root, config), options


def compile_fresh(compiler, cache: BuildCache, options: list[str], path: Path,
                  variant: str | None = None, sets: list[str] | None = None, lint: bool = False):
    """Compile one recipe with ``compiler`` (a :class:`~rcpc.recipe.Compiler`), check its
    contracts (and lint it when ``lint``), and store the result in ``cache``. Returns
    ``([(variant, [(render, text)])], [warnings and notes], {dependency: SHA-256} or None)``.
    Raises :class:`~rcpc.diagnostics.CompileError`."""
    from rcpc.diagnostics import CompileError, to_json, unique

    seen = len(compiler.context.diagnostics)
    try:
        recipe, builds = compiler.build(path, variant, sets)
        diags = compiler.check_contracts(recipe, builds)
        if diags:
            raise CompileError(diags)
        from rcpc.lint import unsilenced

        found = unsilenced(compiler, unique([*compiler.loaded_warnings(path), *compiler.context.diagnostics[seen:]]))
        if lint:  # its own findings (L codes); the compiler's warnings are in already
            from rcpc.lint import lint as run_lint

            found += [d for d in run_lint(compiler, [path]) if d.code.startswith("L") and d.severity != "error"]
        out = [(vb.variant, [(r.name, r.text) for r in vb.renders]) for vb in builds]
        deps = cache.store(path, options, compiler.dependencies(path), out, [to_json(d) for d in found],
                           compiler.workspace.links)
    finally:
        compiler.release(path)  # memory stays flat; diagnostics quoting it read the file again
    return out, found, deps
