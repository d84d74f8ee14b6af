"""The workspace: its root (the nearest directory up with an ``rcp.toml``, else the current
directory), its configuration, where recipes live, and how ``load()`` paths resolve.

``rcp.toml`` keys (all optional)::

    recipe_dirs = ["recipes"]          # searched for *.rcp; a recipe's name is its path
                                       # under one of these, without .rcp
    library_dirs = ["recipes/lib"]     # *.rcp here are loaded by recipes, never built
    output_dir = "rcpc-out"            # default for `rcpc build -o`
    golden_dir = "golden"              # golden snapshots: <golden_dir>/<recipe>/<variant>/<render>
    maxtext_base = "path/to/base.yml"  # MaxText schema for flag sets (none by default)
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
    """``root`` is absolute and symlink-resolved; dirs are absolute."""

    root: Path
    recipe_dirs: tuple
    library_dirs: tuple
    output_dir: Path
    golden_dir: Path
    maxtext_base: Path | None = None
    kube_schemas: tuple = ()

    @classmethod
    def find(cls, start: str | os.PathLike = ".") -> "Workspace":
        """The workspace containing ``start`` (a file or directory). ``E0901`` for a bad
        ``rcp.toml``."""
        here = Path(start).resolve()
        if here.is_file():
            here = here.parent
        for d in (here, *here.parents):
            cfg = d / CONFIG_NAME
            if cfg.is_file():
                return cls._load(d, cfg)
        return cls(here, (here / "recipes",), (here / "recipes" / "lib",), here / "rcpc-out",
                   here / "golden")

    @classmethod
    def _load(cls, root: Path, cfg: Path) -> "Workspace":
        span = Span(str(cfg), 1, 1, 1, 1)
        try:
            data = tomllib.loads(cfg.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise error("E0901", f"{CONFIG_NAME} is not valid TOML: {exc}", span) from None

        def dirs(key, default):
            value = data.get(key, default)
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise error("E0901", f"{CONFIG_NAME}: '{key}' must be a list of strings", span)
            return tuple((root / v).resolve() for v in value)

        def one_dir(key, default):
            value = data.get(key, default)
            if not isinstance(value, str):
                raise error("E0901", f"{CONFIG_NAME}: '{key}' must be a string", span)
            return root / value

        known = ["recipe_dirs", "library_dirs", "output_dir", "golden_dir", "maxtext_base", "kube_schemas"]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise error("E0901", f"{CONFIG_NAME}: unknown key '{unknown[0]}'", span,
                        hint=did_you_mean(unknown[0], known))
        base = one_dir("maxtext_base", "") if "maxtext_base" in data else None
        return cls(root, dirs("recipe_dirs", ["recipes"]), dirs("library_dirs", ["recipes/lib"]),
                   one_dir("output_dir", "rcpc-out"), one_dir("golden_dir", "golden"), base,
                   dirs("kube_schemas", []))

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
        """Every recipe file (not library files), sorted by name."""
        found = {}
        for d in self.recipe_dirs:
            if d.is_dir():
                for p in d.rglob("*" + RECIPE_SUFFIX):
                    p = p.resolve()
                    if not self.is_library(p):
                        found[self.recipe_name(p)] = p
        return [found[k] for k in sorted(found)]

    def find_recipe(self, name: str) -> Path | None:
        """A recipe by name (``rl/x``) or by file path; None when there is none."""
        p = Path(name)
        if p.suffix == RECIPE_SUFFIX and p.is_file():
            return p.resolve()
        for d in self.recipe_dirs:
            cand = d / (name + RECIPE_SUFFIX)
            if cand.is_file():
                return cand.resolve()
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
        real = raw.resolve()
        if real != self.root and self.root not in real.parents:
            raise error("E0204", f"load path {target!r} leaves the workspace ({self.root})", span,
                        hint="recipes may only load files inside their workspace")
        if not real.is_file():
            raise error("E0201", f"cannot {verb} {target!r}: no such file", span,
                        hint=f"looked for {self.display(real)}")
        return real
