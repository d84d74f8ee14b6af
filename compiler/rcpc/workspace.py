"""The workspace: its root (the nearest directory up with an ``rcp.toml``, else the current
directory), its configuration, where recipes live, and how ``load()`` paths resolve.

``rcp.toml`` keys (all optional)::

    recipe_dirs = ["recipes"]          # searched for *.rcp; a recipe's name is its path
                                       # under one of these, without .rcp
    library_dirs = ["recipes/lib"]     # *.rcp here are loaded by recipes, never built
    output_dir = "rcpc-out"            # default for `rcpc build -o`
    golden_dir = "golden"              # golden snapshots: <golden_dir>/<recipe>/<variant>/<render>
    maxtext_schema = "builtin:maxtext" # MaxText schema for flag sets (none by default): the shipped
                                       # one, a .json from `rcpc schema maxtext`, or a base.yml
    maxtext_base = "path/to/base.yml"  # the older spelling of maxtext_schema = "path/to/base.yml"
    kube_schemas = ["path/to/crd.yaml"]  # CRDs / JSON schemas manifests are validated against
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import attrs

from rcpc.diagnostics import did_you_mean, error
from rcpc.source import Span

CONFIG_NAME = "rcp.toml"
RECIPE_SUFFIX = ".rcp"


@attrs.frozen
class Workspace:
    """``root`` is absolute and symlink-resolved; dirs are absolute; ``config`` is the
    ``rcp.toml`` read (None when the workspace has none)."""

    root: Path
    recipe_dirs: tuple
    library_dirs: tuple
    output_dir: Path
    golden_dir: Path
    maxtext_schema: Path | None = None
    kube_schemas: tuple = ()
    config: Path | None = None
    links: dict = attrs.field(factory=dict, eq=False, repr=False)

    def real(self, raw: Path) -> Path:
        """``raw`` with symlinks resolved (:meth:`pathlib.Path.resolve`). When a symlink was
        followed, the resolution is remembered in ``links`` ({absolute path as written:
        real path}): the build cache and replay check that it still holds, as retargeting a
        link changes what is read without changing any file that was read."""
        return _real(raw, self.links)

    @classmethod
    def find(cls, start: str | os.PathLike = ".") -> "Workspace":
        """The workspace containing ``start`` (a file or directory). ``E0901`` for a bad
        ``rcp.toml``."""
        here = Path(start).resolve()
        if here.is_file():
            here = here.parent
        for d in (here, *here.parents):
            cfg = d / CONFIG_NAME
            if cfg.exists():
                return cls._load(d, cfg)
        return cls(here, (here / "recipes",), (here / "recipes" / "lib",), here / "rcpc-out",
                   here / "golden")

    @classmethod
    def _load(cls, root: Path, cfg: Path) -> "Workspace":
        span = Span(CONFIG_NAME, 1, 1, 1, 1)
        links: dict = {}
        try:
            data = tomllib.loads(cfg.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise error("E0901", f"{CONFIG_NAME} is not valid TOML: {exc}", span) from None
        except OSError as exc:
            raise error("E0901", f"cannot read {cfg}: {exc.strerror or exc}", None) from None

        def dirs(key, default):
            value = data.get(key, default)
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise error("E0901", f"{CONFIG_NAME}: '{key}' must be a list of strings", span)
            return tuple(_real(root / v, links) for v in value)

        def one_dir(key, default):
            value = data.get(key, default)
            if not isinstance(value, str):
                raise error("E0901", f"{CONFIG_NAME}: '{key}' must be a string", span)
            return root / value

        known = ["recipe_dirs", "library_dirs", "output_dir", "golden_dir", "maxtext_schema", "maxtext_base",
                 "kube_schemas"]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise error("E0901", f"{CONFIG_NAME}: unknown key '{unknown[0]}'", span,
                        hint=did_you_mean(unknown[0], known))
        if "maxtext_schema" in data and "maxtext_base" in data:
            raise error("E0901", f"{CONFIG_NAME}: name the MaxText schema once (maxtext_schema; maxtext_base is "
                        "its older spelling)", span)
        schema = None
        for key in ("maxtext_schema", "maxtext_base"):
            if key in data:
                one_dir(key, "")  # E0901 unless a string
                schema = _schema_path(root, data[key], links)
        return cls(root, dirs("recipe_dirs", ["recipes"]), dirs("library_dirs", ["recipes/lib"]),
                   one_dir("output_dir", "rcpc-out"), one_dir("golden_dir", "golden"), schema,
                   dirs("kube_schemas", []), cfg, links)

    def schema_path(self, spec: str) -> Path:
        """The file a MaxText schema spec names: ``builtin:maxtext`` (the shipped schema) or a
        path (relative to the current directory, as on the command line)."""
        return _schema_path(Path.cwd(), spec, self.links)

    def display(self, path: Path) -> str:
        """``path`` relative to the root when inside it (for diagnostics), else absolute."""
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def is_library(self, path: Path) -> bool:
        return any(d == path or d in path.parents for d in self.library_dirs)

    def recipe_name(self, path: Path) -> str:
        """``recipes/rl/x.rcp`` → ``rl/x``: the path under the recipe dir without ``.rcp``."""
        for d in self.recipe_dirs:
            if d in path.parents:
                return path.relative_to(d).with_suffix("").as_posix()
        return self.display(path.with_suffix(""))

    def recipes(self) -> list[Path]:
        """Every recipe file (not library files), sorted by name. ``E0903`` when two files
        have one name, or one recipe's name is a directory of another's (``p`` and ``p/q``:
        ``p``'s variant ``q`` would write where ``p/q`` does)."""
        found: dict[str, Path] = {}
        for d in self.recipe_dirs:
            if d.is_dir():
                for p in sorted(d.rglob("*" + RECIPE_SUFFIX)):
                    real = self.real(p)
                    if self.is_library(real) or not real.is_file():
                        continue
                    name = self.recipe_name(real)
                    if name in found and found[name] != real:
                        raise error("E0903", f"two recipes are named '{name}': {self.display(found[name])} "
                                    f"and {self.display(real)}", None, hint="rename one of them")
                    found[name] = real
        for name in found:
            parts = name.split("/")
            head = next((h for h in ("/".join(parts[:i]) for i in range(1, len(parts))) if h in found), None)
            if head is not None:
                raise error("E0903", f"recipe '{head}' and recipe '{name}' would share the output "
                            f"directory {head}/", None, hint=f"rename {self.display(found[head])} or its folder")
        return [found[k] for k in sorted(found)]

    def libraries(self) -> list[Path]:
        """Every library file, sorted."""
        out = set()
        for d in self.library_dirs:
            if d.is_dir():
                out.update(self.real(p) for p in d.rglob("*" + RECIPE_SUFFIX) if p.is_file())
        return sorted(out)

    def find_recipe(self, name: str) -> Path | None:
        """A recipe by name (``rl/x``) or by file path inside the workspace (not a library);
        None when there is none."""
        p = Path(name)
        cands = [p] if p.suffix == RECIPE_SUFFIX else [d / (name + RECIPE_SUFFIX) for d in self.recipe_dirs]
        for cand in cands:
            try:
                real = self.real(cand)
                if not real.is_file():
                    continue
            except (OSError, RuntimeError):
                continue
            if self.root in real.parents and not self.is_library(real):
                return real
        return None

    def resolve_load(self, target: str, from_file: Path, span: Span) -> Path:
        """The real path of ``load(target)`` written in ``from_file``: ``//x`` is relative to
        the root, anything else to the loading file's directory. Symlinks are resolved
        before checking that the file is inside the workspace. Errors: ``E0204`` escaping the
        workspace, ``E0201`` missing file, ``E0205`` not a ``.rcp`` path."""
        if not target.endswith(RECIPE_SUFFIX):
            raise error("E0205", f"load path {target!r} does not name a {RECIPE_SUFFIX} file", span)
        return self.resolve_path(target, from_file, span)

    def resolve_path(self, target: str, from_file: Path, span: Span, verb: str = "load") -> Path:
        """The real path of a file named in a recipe (as :meth:`resolve_load`, any file)."""
        if target.startswith("//"):
            raw = self.root / target[2:]
        elif target.startswith("/"):
            raise error("E0204", f"load path {target!r} is absolute", span,
                        hint="write workspace paths as //path/to/file.rcp")
        else:
            raw = from_file.parent / target
        try:
            real = self.real(raw)
            is_file = real.is_file()
        except (OSError, RuntimeError) as exc:  # name too long, symlink loop
            raise error("E0201", f"cannot {verb} {target[:80]!r}: {getattr(exc, 'strerror', None) or exc}",
                        span) from None
        if real != self.root and self.root not in real.parents:
            raise error("E0204", f"load path {target!r} leaves the workspace", span,
                        hint="recipes may only read files inside their workspace (the directory of rcp.toml)")
        if not is_file:
            raise error("E0201", f"cannot {verb} {target!r}: no such file", span,
                        hint=f"looked for {self.display(real)}")
        return real


def _schema_path(base: Path, spec: str, links: dict) -> Path:
    from rcpc.schema import BUILTIN, BUILTIN_PATH

    return BUILTIN_PATH if spec == BUILTIN else _real(base / spec, links)


def _real(raw: Path, links: dict) -> Path:
    real = raw.resolve()
    written = os.path.normpath(os.path.abspath(raw))
    if str(real) != written:
        links[written] = str(real)
    return real
