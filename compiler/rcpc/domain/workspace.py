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
    kube_schemas = ["builtin:jobset", "path/to/crd.yaml"]  # schemas manifests are validated
                                       # against: rcpc's own (builtin:NAME) or CRD / JSON files
    jobset_feature_gates = ["RestartJob"]  # JobSet feature gates the cluster's JobSet
                                       # controller runs with (its alpha gates are off by default)
    maxtext_oracle = "../maxtext"      # `rcpc check` also runs this MaxText checkout's config
                                       # loader on every flag set (docs/maxtext.md, Oracle mode)
    maxtext_python = "python3"         # the interpreter that runs it (a path, or a command on
                                       # PATH; default: the one running rcpc)
"""

from __future__ import annotations

import errno
import json
import os
import re
import sys
from pathlib import Path

from rcpc.core import patterns, record, store
from rcpc.core.diagnostics import CompileError, Diagnostic, did_you_mean, did_you_mean_or_list, error, io_hint
from rcpc.core.files import read_limited
from rcpc.core.limits import MAX_FILE_BYTES
from rcpc.core.names import fold, problem
from rcpc.core.source import Source, Span, file_span
from rcpc.core.usercache import code_fingerprint
from rcpc.domain import stdlib

CONFIG_NAME = "rcp.toml"
RECIPE_SUFFIX = ".rcp"
BUILTIN = "builtin:"
SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
LINK = "->"  # a dependency that is a symlink resolution (LINK + real path), not a file's digest


def builtin_schema(name: str) -> Path | None:
    """The schema file rcpc ships as ``builtin:NAME`` (``schemas/NAME.json``), or None."""
    path = SCHEMA_DIR / f"{name}.json"
    return path if name.isidentifier() and path.is_file() else None


@record.frozen
class Workspace:
    """``root`` is absolute and symlink-resolved; dirs are absolute; ``config`` is the
    ``rcp.toml`` read (None when the workspace has none) and ``config_bytes`` the bytes that
    were parsed (what the build cache and replay key on: never read a second time)."""

    root: Path
    recipe_dirs: tuple
    library_dirs: tuple
    output_dir: Path
    golden_dir: Path
    maxtext_schema: Path | None = None
    kube_schemas: tuple = ()
    config: Path | None = None
    strict_crd: bool = False  # also report what the raw CRD rejects (rcpc check --strict-crd)
    jobset_feature_gates: frozenset = frozenset()  # JobSet feature gates on in the cluster (rcpc.domain.kube.jobset)
    maxtext_oracle: Path | None = None  # a MaxText checkout whose loader `rcpc check` runs
    maxtext_python: str | None = None  # the interpreter that runs it
    links: dict = record.field(factory=dict, eq=False, repr=False)
    config_bytes: bytes = record.field(default=b"", eq=False, repr=False)
    # rcpc's standard library (@rcpc//): the running rcpc's when None (rcpc.domain.stdlib);
    # never a setting of rcp.toml (rcpc diff --rev sets a revision's: rcpc.review.revision)
    stdlib_dir: Path | None = None

    def real(self, raw: Path, parents: dict | None = None) -> Path:
        """``raw`` with symlinks resolved (:meth:`pathlib.Path.resolve`). When a symlink was
        followed, the resolution is remembered in ``links`` ({absolute path as written:
        real path}): the build cache and replay check that it still holds, as retargeting a
        link changes what is read without changing any file that was read. ``parents``: the
        real paths of directories found so far ({directory: real path}), for many files of
        a few directories (:func:`entry`)."""
        return _real(raw, self.links, parents)

    def schema_path(self, text: str, base: Path | None = None) -> Path:
        """A ``kube_schemas`` entry: ``builtin:NAME`` (a schema rcpc ships), else a path
        relative to ``base`` (default: the workspace root). ``E1102`` for an unknown
        built-in name."""
        if text.startswith(BUILTIN):
            path = builtin_schema(text[len(BUILTIN):])
            if path is None:
                known = sorted(p.stem for p in SCHEMA_DIR.glob("*.json"))
                raise error("E1102", f"no built-in schema {text!r}", Span(CONFIG_NAME, 1, 1, 1, 1),
                            hint=f"built-in schemas: {', '.join(BUILTIN + k for k in known)}")
            return path
        return self.real((base or self.root) / text)

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
        """The workspace of ``rcp.toml`` file ``cfg`` in directory ``root``: its errors carry
        the text parsed (:attr:`rcpc.core.diagnostics.CompileError.sources`), to be quoted from
        (no compiler reads rcp.toml; reading it again could quote another text)."""
        try:
            raw = read_limited(cfg, MAX_FILE_BYTES)
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            where = _offset_span(raw, exc.start)
            raise error("E0901", f"{CONFIG_NAME} is not valid TOML: it is not UTF-8 ({exc.reason})", where,
                        hint="save rcp.toml as UTF-8") from None
        except OSError as exc:
            raise error("E0901", f"cannot read {cfg}: {exc.strerror or exc}", None, hint=io_hint(exc)) from None
        try:
            return cls._parsed(root, cfg, raw, text)
        except CompileError as exc:
            exc.sources[CONFIG_NAME] = Source(CONFIG_NAME, text, str(cfg))
            raise

    @classmethod
    def _parsed(cls, root: Path, cfg: Path, raw: bytes, text: str) -> "Workspace":
        """:meth:`_load` of the bytes ``raw`` (``text``, decoded) read from ``cfg``."""
        links: dict = {}
        try:
            data = config_table(raw, text)
        except RecursionError:  # tomli recurses into arrays and inline tables: `[[[...` 1,000 deep
            raise error("E0901", f"{CONFIG_NAME} is not valid TOML: its arrays or inline tables nest too deeply",
                        Span(CONFIG_NAME, 1, 1, 1, 1),
                        hint="rcp.toml's values are strings and lists of strings (docs/cli.md, Workspace)") from None

        def strings(key, default):
            value = data.get(key, default)
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise error("E0901", f"{CONFIG_NAME}: '{key}' must be a list of strings", _key_span(text, key),
                            hint=_rewritten(key, value, True))
            return value

        def path(key, value):
            if "\0" in value:
                raise error("E0901", f"{CONFIG_NAME}: '{key}' contains a NUL character, which no path can hold",
                            _key_span(text, key), hint="remove the \\0 from the path")
            return root / value

        def resolved(key, value):
            try:
                return _real(path(key, value), links)
            except (OSError, RuntimeError):  # a symlink loop
                raise error("E0901", f"{CONFIG_NAME}: '{key}' entry {value!r} cannot be resolved (a symlink "
                            f"loop)", _key_span(text, key), hint="a symlink on the path leads to itself") from None

        def dirs(key, default):
            out = []
            for v in strings(key, default):
                real = resolved(key, v)
                if real != root and root not in real.parents:
                    raise error("E0901", f"{CONFIG_NAME}: '{key}' entry {v!r} leaves the workspace",
                                _key_span(text, key), hint="recipes are read from inside the workspace only")
                out.append(real)
            return tuple(out)

        def one_dir(key, default):
            value = data.get(key, default)
            if not isinstance(value, str):
                raise error("E0901", f"{CONFIG_NAME}: '{key}' must be a string", _key_span(text, key),
                            hint=_rewritten(key, value, False))
            return path(key, value)

        known = ["recipe_dirs", "library_dirs", "output_dir", "golden_dir", "maxtext_schema", "maxtext_base",
                 "kube_schemas", "jobset_feature_gates",
                 "maxtext_oracle", "maxtext_python"]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise error("E0901", f"{CONFIG_NAME}: unknown key '{unknown[0]}'", _key_span(text, unknown[0]),
                        hint=did_you_mean_or_list(unknown[0], known, "rcp.toml's keys"))
        if "maxtext_schema" in data and "maxtext_base" in data:
            raise error("E0901", f"{CONFIG_NAME}: name the MaxText schema once (maxtext_schema; maxtext_base is "
                        "its older spelling)", _key_span(text, "maxtext_base"), hint="remove maxtext_base")
        ws = cls(root, dirs("recipe_dirs", ["recipes"]), dirs("library_dirs", ["recipes/lib"]),
                 one_dir("output_dir", "rcpc-out"), one_dir("golden_dir", "golden"), config=cfg, links=links,
                 config_bytes=raw)  # by name: a positional `links` was strict_crd (a symlink turned it on)

        def schema(key, v):  # builtin:NAME, or a path that may lie outside the workspace
            return ws.schema_path(v) if v.startswith(BUILTIN) else resolved(key, v)

        maxtext = None
        for key in ("maxtext_schema", "maxtext_base"):
            if key in data:
                one_dir(key, "")  # E0901 unless a string without NUL
                maxtext = schema(key, data[key])
        oracle = one_dir("maxtext_oracle", "") if "maxtext_oracle" in data else None
        python = None
        if "maxtext_python" in data:
            one_dir("maxtext_python", "")  # E0901 unless a string without NUL
            python = data["maxtext_python"]
            python = str(root / python) if os.sep in python and not os.path.isabs(python) else python
        return record.evolve(ws, maxtext_schema=maxtext,
                             kube_schemas=tuple(schema("kube_schemas", v) for v in strings("kube_schemas", [])),
                             jobset_feature_gates=_gates(strings("jobset_feature_gates", []), text),
                             maxtext_oracle=oracle, maxtext_python=python)

    def setting_span(self, key: str) -> Span:
        """Where ``key`` is set in this workspace's ``rcp.toml`` (line 1 when not found)."""
        return _key_span(self.config_bytes.decode("utf-8", "replace"), key)

    def display(self, path: Path) -> str:
        """``path`` relative to the root when inside it (for diagnostics), its ``@rcpc//``
        label when it is a file of rcpc's standard library (:mod:`rcpc.domain.stdlib`), else
        absolute."""
        if stdlib.contains(path, self.stdlib_dir):
            return stdlib.label(path, self.stdlib_dir)
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def path_of(self, shown: str) -> Path:
        """The file a display path (:meth:`display`, a span's path) names: a standard library
        label's file, else the path relative to the root (not resolved)."""
        return stdlib.path_of(shown, self.stdlib_dir) if stdlib.is_label(shown) else self.root / shown

    def is_library(self, path: Path) -> bool:
        """``path`` (absolute, real) is a library directory or inside one, or a file of rcpc's
        standard library."""
        return any(_within(path, d) for d in self.library_dirs) or stdlib.contains(path, self.stdlib_dir)

    def recipe_name(self, path: Path) -> str:
        """``recipes/rl/x.rcp`` → ``rl/x``: the path under the recipe dir without ``.rcp``."""
        for d in self.recipe_dirs:
            if path != d and _within(path, d):
                return path.relative_to(d).as_posix()[:-len(RECIPE_SUFFIX)]
        return self.display(path)[:-len(RECIPE_SUFFIX)]

    def inside(self, raw: Path, parents: dict | None = None) -> Path:
        """The real path of ``raw``, a file found in the workspace (a recipe, a library, a
        file to format), which must resolve inside it. ``E0906`` when a symlink leads out
        (nothing is read there), ``E0907`` when it cannot be resolved (a symlink loop).
        ``parents`` as in :meth:`real`."""
        try:
            real = self.real(raw, parents)
        except (OSError, RuntimeError) as exc:  # RuntimeError: Python < 3.13's symlink loop
            why = "it is a symlink loop" if isinstance(exc, RuntimeError) or exc.errno == errno.ELOOP else exc.strerror
            raise error("E0907", f"symlink that cannot be resolved: {why}", file_span(self.display(entry(raw))),
                        hint="a symlink that points to itself, directly or through others, names no file") from None
        if not _within(real, self.root):
            raise error("E0906", "symlink to a file outside the workspace (not read)", file_span(self.display(entry(raw))),
                        hint="recipes and the files they load must be inside the workspace (the directory of "
                             "rcp.toml); copy the file in instead of linking to it")
        return real

    def _name_error(self, real: Path, shown: Path, name: str | None = None) -> Diagnostic | None:
        """``E0905`` for a recipe whose name (from file ``real``, found as ``shown``; ``name``
        when found already) has a part that is not one portable path component
        (:mod:`rcpc.core.names`), else None."""
        name = name if name is not None else self.recipe_name(real)
        for part in name.split("/"):
            why = problem(part)
            if why is not None:
                return Diagnostic("E0905", f"recipe name {name!r} cannot be a path in the output: {part!r} {why}",
                                  file_span(self.display(entry(shown))),
                                  hint="rename the file: each part of a recipe's name becomes a directory "
                                       "of the output (docs/cli.md)")
        return None

    def recipes(self) -> list[Path]:
        """Every recipe file (not library files), sorted by name. Every problem found is
        raised at once: ``E0906``/``E0907`` for a file that does not resolve inside the
        workspace, ``E0905`` for a name that is not portable path components, ``E0903`` when
        two files have one name (also where case or Unicode normalization is ignored, as on
        macOS and Windows), or one recipe's name is a directory of another's (``p`` and
        ``p/q``: ``p``'s variant ``q`` would write where ``p/q`` does)."""
        found: dict[str, Path] = {}
        folded: dict[str, str] = {}   # names.fold(name) → name
        errors: list = []
        parents: dict = {}
        for d in self.recipe_dirs:
            if d.is_dir():
                for p in sorted(d.rglob("*" + RECIPE_SUFFIX)):
                    try:
                        real = self.inside(p, parents)
                    except CompileError as exc:
                        errors.extend(exc.diagnostics)
                        continue
                    if self.is_library(real) or not real.is_file():
                        continue
                    name = self.recipe_name(real)
                    bad = self._name_error(real, p, name)
                    if bad is not None:
                        errors.append(bad)
                        continue
                    same = folded.setdefault(fold(name), name)
                    if same in found and found[same] != real:
                        how = "" if same == name else f" ('{same}' and '{name}' are one name where case is ignored)"
                        errors.append(Diagnostic(
                            "E0903", f"two recipes are named '{same}'{how}: {self.display(found[same])} "
                            f"and {self.display(real)}", None, hint="rename one of them"))
                        continue
                    found[name] = real
        by_fold = {fold(name): name for name in found}
        spelled: dict[str, str] = {}   # fold(directory) → a recipe name spelling it
        for name in found:
            parts = name.split("/")
            heads = ["/".join(parts[:i]) for i in range(1, len(parts))]
            head = next((by_fold[fold(h)] for h in heads if fold(h) in by_fold), None)
            if head is not None:
                errors.append(Diagnostic(
                    "E0903", f"recipe '{head}' and recipe '{name}' would share the output directory {head}/",
                    None, hint=f"rename {self.display(found[head])} or its folder"))
            for h in heads:
                other = spelled.setdefault(fold(h), name)
                if not other.startswith(h + "/"):
                    errors.append(Diagnostic(
                        "E0903", f"recipe '{other}' and recipe '{name}' spell one directory two ways, one "
                                 f"directory where case is ignored (macOS, Windows)", None,
                        hint=f"rename the folder of {self.display(found[name])}"))
                    break
        if errors:
            raise CompileError(errors)
        return [found[k] for k in sorted(found)]

    def libraries(self) -> list[Path]:
        """Every library file, sorted. ``E0906``/``E0907`` (all of them at once) for files
        that do not resolve inside the workspace: those are never read."""
        out = set()
        errors: list = []
        parents: dict = {}
        for d in self.library_dirs:
            if d.is_dir():
                for p in d.rglob("*" + RECIPE_SUFFIX):
                    try:
                        real = self.inside(p, parents)
                    except CompileError as exc:
                        errors.extend(exc.diagnostics)
                        continue
                    if real.is_file():
                        out.add(real)
        if errors:
            raise CompileError(errors)
        return sorted(out)

    def find_recipe(self, name: str) -> Path | None:
        """A recipe by name (``rl/x``) or by the path of its file: one :meth:`recipes` lists
        (under a recipe directory, not a library); None when there is none (a ``.rcp`` file
        elsewhere in the workspace is no recipe: its name would be its path, which another
        recipe's output may hold). Raises ``E0905``-``E0907`` as :meth:`recipes` does for it."""
        p = Path(name)
        cands = [p] if p.suffix == RECIPE_SUFFIX else [d / (name + RECIPE_SUFFIX) for d in self.recipe_dirs]
        for cand in cands:
            if not os.path.lexists(cand):
                continue
            at = entry(cand)
            if not any(at != d and _within(at, d) for d in self.recipe_dirs):
                continue  # outside the recipe directories (or the workspace): no recipe of it
            real = self.inside(cand)
            if not real.is_file() or self.is_library(real):
                continue
            bad = self._name_error(real, cand)
            if bad is not None:
                raise CompileError(bad)
            return real
        return None

    def resolve_load(self, target: str, from_file: Path, span: Span) -> Path:
        """The real path of ``load(target)`` written in ``from_file``: ``@rcpc//x`` is a file
        of rcpc's standard library (:func:`rcpc.domain.stdlib.resolve`, as is every load of a
        standard library file), ``//x`` is relative to the root, anything else to the loading
        file's directory. Symlinks are resolved before checking that the file is inside the
        workspace. Errors: ``E0204`` escaping the workspace, ``E0201`` missing file, ``E0205``
        not a ``.rcp`` path, ``E0206`` a label naming no standard library file."""
        if not target.endswith(RECIPE_SUFFIX):
            raise error("E0205", f"load path {target!r} does not name a {RECIPE_SUFFIX} file", span,
                        hint=f"load() reads recipe files: end the path with {RECIPE_SUFFIX}")
        if target.startswith("@"):
            return stdlib.resolve(target, span, directory=self.stdlib_dir)
        if stdlib.contains(from_file, self.stdlib_dir):
            return stdlib.resolve(target, span, stdlib.label(from_file, self.stdlib_dir), self.stdlib_dir)
        return self.resolve_path(target, from_file, span)

    def resolve_path(self, target: str, from_file: Path, span: Span, verb: str = "load") -> Path:
        """The real path of a file named in a recipe (as :meth:`resolve_load`, any file)."""
        if "\0" in target:
            raise error("E0201", f"cannot {verb} {target[:80]!r}: a path cannot contain a NUL character", span,
                        hint="remove the \\0 from the path")
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
                        span, hint=io_hint(exc)) from None
        if real != self.root and self.root not in real.parents:
            raise error("E0204", f"load path {target!r} leaves the workspace", span,
                        hint="recipes may only read files inside their workspace (the directory of rcp.toml)")
        if not is_file:
            shipped = stdlib.suggestion(target) if verb == "load" else None
            raise error("E0201", f"cannot {verb} {target!r}: no such file", span,
                        hint=f"looked for {self.display(real)}" + (f"; {shipped}" if shipped else ""))
        return real


_EXAMPLES = {"recipe_dirs": "recipes", "library_dirs": "recipes/lib", "kube_schemas": "builtin:jobset",
             "jobset_feature_gates": "FeatureName", "maxtext_python": "python3"}


def _rewritten(key: str, value, listed: bool) -> str:
    """The hint for rcp.toml's ``key`` given ``value`` (parsed TOML) of the wrong type: the
    line to write, with the strings (and numbers, as text) ``value`` holds, as a list of
    strings when ``listed``, else as one string (its first string, if any): ``kube_schemas =
    "builtin:jobset"`` gets ``write kube_schemas = ["builtin:jobset"]``; an example where it
    holds none. The line is TOML (1.0, basic strings) that gives ``key`` a value of the type
    asked for."""
    items = value if isinstance(value, list) else [value]
    texts = [v if isinstance(v, str) else repr(v) for v in items
             if isinstance(v, str) or type(v) in (int, float)] or [_EXAMPLES.get(key, "path")]
    if listed:
        return f"write {key} = [{', '.join(map(_toml_string, texts))}]"
    return f"write {key} = {_toml_string(next((v for v in items if isinstance(v, str)), texts[0]))}"


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string: JSON's escapes are TOML's, and TOML also escapes DEL."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007F")


def _key_span(text: str, key: str) -> Span:
    """Where ``key`` is set in rcp.toml's ``text``: a line ``key =``, ``"key" =`` or
    ``'key' =``, or a table header ``[key]`` (TOML 1.0, keys and tables); line 1 when none is
    found (a key set by a dotted key or an inline table)."""
    forms = (key, f'"{key}"', f"'{key}'")
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        col = len(line) - len(stripped) + 1
        for form in forms:
            if stripped.startswith(form) and stripped[len(form):].lstrip().startswith("="):
                return Span(CONFIG_NAME, n, col, n, col + len(form))
            if stripped.startswith("[") and stripped[1:].lstrip().startswith(form) \
                    and stripped[1:].lstrip()[len(form):].lstrip().startswith("]"):
                return Span(CONFIG_NAME, n, col, n, col + len(stripped.split("]")[0]) + 1)
    return Span(CONFIG_NAME, 1, 1, 1, 1)


AREA = "config"  # the store's area of rcp.toml's tables (rcpc.core.store)


def config_table(raw: bytes, text: str) -> dict:
    """The table of rcp.toml (``raw``, decoded as ``text``): :func:`check_dotted_keys`, then
    ``tomli.loads`` (TOML 1.0: tomli 2.3, the library Python 3.11's ``tomllib`` is made from,
    whose import loads no ``typing``: ~4 ms of a first build less). ``E0901`` when tomli refuses
    it (RecursionError passes).

    A table parsed before is read back from the store (:mod:`rcpc.core.store`, area
    :data:`AREA`) as JSON, keyed by the file's bytes, rcpc's code
    (:func:`rcpc.core.usercache.code_fingerprint`, which holds tomli's version) and Python's
    version: a build after an edit of a recipe does not import tomli (with datetime: ~3 ms).
    Only a table JSON gives back as it was is kept (:func:`_plain`:
    tables, lists, strings, ints, floats, bools; not a TOML date or time); an error is never
    kept (the next run parses again and reports it)."""
    k = store.key(AREA, code_fingerprint(), sys.version, raw) if store.enabled() else None
    kept = store.get(AREA, k)
    if kept is not None:
        try:
            data = json.loads(kept)
        except ValueError:  # not written by this code: a miss
            data = None
        if type(data) is dict:
            return data
    import tomli

    check_dotted_keys(text)
    try:
        data = tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        why, where = toml_error(exc)
        raise error("E0901", f"{CONFIG_NAME} is not valid TOML: {why}", where,
                    hint="rcp.toml is TOML 1.0 (toml.io); its keys are listed in docs/cli.md, Workspace") from None
    if k is not None:
        try:
            payload = json.dumps(data).encode() if _plain(data) else None
        except (RecursionError, ValueError):  # nested too deep to write, an int too long for str()
            payload = None
        if payload is not None:
            store.put(AREA, k, payload)
    return data


def _plain(value) -> bool:
    """``value`` is made of what JSON writes and reads back unchanged (json.loads(json.dumps(
    value)) == value, of the same types): dicts of str keys, lists, str, int, float (NaN and
    infinities as Python's json writes them), bool."""
    t = type(value)
    if t is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if t is list:
        return all(_plain(v) for v in value)
    return t in (str, int, float, bool)


def toml_error(exc: "tomli.TOMLDecodeError", shown: str = CONFIG_NAME) -> tuple[str, Span]:
    """tomli's reason for refusing TOML file ``shown`` (rcp.toml, a values file) and where:
    its ``msg``, ``lineno`` and ``colno`` (1-based, columns in characters; at the end of the
    document, the column after its last character)."""
    return exc.msg, Span(shown, exc.lineno, exc.colno, exc.lineno, exc.colno + 1)


# A key as TOML writes it at the start of a line (a key/value pair, a [table] or [[array]]
# header) or in an inline table, with its dotted parts (toml.io: bare or quoted keys)
_KEY_PART = r"""(?:[A-Za-z0-9_-]++|"(?:[^"\\\n]|\\.)*+"|'[^'\n]*+')"""
_DOTTED_KEY = patterns.LazyPattern(rf"(?:^[ \t]*+\[?\[?|[{{,])[ \t]*+{_KEY_PART}(?:[ \t]*+\.[ \t]*+{_KEY_PART})++", re.M)
MAX_KEY_DOTS = 1_000


def _gates(names: list, text: str) -> frozenset:
    """The ``jobset_feature_gates`` of rcp.toml: each a JobSet feature gate
    (:data:`rcpc.domain.kube.jobset.FEATURE_GATES`). ``E0901`` for another name."""
    if not names:  # the JobSet model is not loaded to check no name
        return frozenset()
    from rcpc.domain.kube.jobset import FEATURE_GATES

    for name in names:
        if name not in FEATURE_GATES:
            raise error("E0901", f"{CONFIG_NAME}: 'jobset_feature_gates' entry {name!r} is not a JobSet feature gate",
                        _key_span(text, "jobset_feature_gates"),
                        hint=did_you_mean_or_list(name, sorted(FEATURE_GATES), "JobSet's feature gates"))
    return frozenset(names)


def check_dotted_keys(text: str, shown: str = CONFIG_NAME, code: str = "E0901") -> None:
    """``code`` (``E0901`` for rcp.toml) at the key that brings the dots of the dotted keys of
    TOML file ``shown`` past :data:`MAX_KEY_DOTS`, checked before tomli reads it. tomli
    (Python's tomllib too) takes time quadratic in a dotted key's parts (``x.x.x....y = 1``: 20,000 parts,
    8 s; a 4 MiB rcp.toml, hours), and the keys of rcp.toml and of a values file are
    top-level names, so none is needed (a dot in a quoted part counts too)."""
    dots = 0
    for m in _DOTTED_KEY.finditer(text):
        dots += m.group().count(".")
        if dots > MAX_KEY_DOTS:
            line = text.count("\n", 0, m.start()) + 1
            col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            raise error(code, f"{shown}: its dotted keys and table headers hold more than "
                        f"{MAX_KEY_DOTS:,} dots", Span(shown, line, col, line, col + 1),
                        hint=f"{shown}'s keys are top-level names (docs/cli.md, "
                             f"{'Workspace' if shown == CONFIG_NAME else 'Values files'}): no tables")


def _offset_span(raw: bytes, offset: int) -> Span:
    """The place of byte ``offset`` of rcp.toml (column in bytes of its line: the line is
    not text)."""
    line = raw.count(b"\n", 0, offset) + 1
    col = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
    return Span(CONFIG_NAME, line, col, line, col + 1)


def entry(p: Path, parents: dict | None = None) -> Path:
    """Where the directory entry ``p`` sits: its directory's real path and its own name (a
    symlink itself is not followed): what is inside the workspace as written. ``parents``:
    {directory: real path} found so far, used and added to (one ``realpath`` a directory,
    not one a file)."""
    if p.name in ("", ".", ".."):
        return Path(os.path.realpath(p))
    if parents is None:
        return Path(os.path.realpath(p.parent)) / p.name
    d = p.parent
    real = parents.get(d)
    if real is None:
        real = parents[d] = Path(os.path.realpath(d))
    return real / p.name


def _within(path: Path, directory: Path) -> bool:
    """``path`` is ``directory`` or inside it (both absolute and normalized): a prefix test
    on the strings, as ``directory in path.parents`` but without making each parent."""
    d = str(directory)
    p = str(path)
    return p == d or p.startswith(d if d.endswith(os.sep) else d + os.sep)


def _real(raw: Path, links: dict, parents: dict | None = None) -> Path:
    # A file that is not a symlink is its directory's real path and its name (a missing one
    # too, as realpath gives); only its directory is resolved, once (``parents``).
    real = raw.resolve() if parents is None or os.path.islink(raw) else entry(raw, parents)
    written = os.path.normpath(os.path.abspath(raw))
    if str(real) != written:
        links[written] = str(real)
    return real


def too_large(shown: str, size: int) -> CompileError:
    """``E0803``: source file ``shown`` (a file, or an editor's buffer) holds ``size`` bytes
    (UTF-8), over :data:`~rcpc.core.limits.MAX_FILE_BYTES`."""
    return error("E0803", f"{shown} is {size} bytes, over the limit of {MAX_FILE_BYTES}", Span(shown, 1, 1, 1, 1),
                 hint="split it into files loaded with load() (docs/language.md, Limits)")


def not_utf8(shown: str, line: int) -> CompileError:
    """``E0003``: source file ``shown`` is not UTF-8 text from line ``line`` on."""
    return error("E0003", f"{shown} is not UTF-8 text", Span(shown, line, 1, line, 1),
                 hint="save the file as UTF-8 (iconv -f LATIN1 -t UTF-8 converts Latin-1)")
