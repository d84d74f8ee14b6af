"""``rcpc schema maxtext PATH``: derive the MaxText schema from a MaxText checkout.

Inputs (read as data; nothing of MaxText, pydantic or jax is imported):

* ``types.py`` — MaxText's pydantic config model (``src/maxtext/configs/types.py``), read with
  Python's :mod:`ast`. The schema's keys are the fields of ``MaxTextConfig``: every annotated
  field of its ``BaseModel`` bases, collected over the C3 method resolution order as pydantic
  does (a class nearer ``MaxTextConfig`` wins), plus its own nested models (``dpo``, ``lora``).
  Each annotation becomes a type node (below); ``Field(default, ge=, gt=, le=, lt=)`` gives the
  default and the bounds; ``PositiveInt``, ``NonNegativeInt`` and ``NonNegativeFloat`` are
  bounded ints and floats (pydantic.types); an ``Enum`` class defined in types.py gives its
  values as choices, one imported from ``maxtext.common.common_types`` those of
  ``common/common_types.py`` (read the same way; without that file, a string of unknown
  choices); a field with a ``field_validator(..., mode="before")`` is ``validated`` (its input
  is converted by MaxText's own code first, so rcpc does not type it).
* ``base.yml`` — the defaults MaxText starts from, read as MaxText reads it (OmegaConf: YAML 1.1
  plus OmegaConf's float resolver, :func:`rcpc.domain.maxtext.emit.yaml_loader`).
* ``models/*.yml`` — the per-model configs ``model_name=X`` loads, read the same way.
* MaxText's refusals: those of types.py's validators (:mod:`rcpc.domain.maxtext.refusals`) and those
  modelled by hand (:mod:`rcpc.domain.maxtext.refusal_rules`), located by their text in the file each
  names (``pyconfig.py`` beside types.py, ``utils/accelerator_to_spec_map.py`` in the package),
  the rules with a YAML file (``custom_mesh_and_rule/``) and the ``remat_policy`` values of
  ``layers/decoders.py``.

Type nodes are JSON objects with a ``type``: ``int``, ``float`` (optional bounds ``ge gt le
lt``), ``bool``, ``str``, ``none``, ``any``, ``literal`` (``values``), ``enum`` (``name``,
``kind`` str or int, ``values`` or null when unknown), ``list`` (``items``), ``dict``
(``values``), ``union`` (``of``), ``model`` (``name``, ``extra``, ``fields``) and
``validated`` (``by``).

PATH is a MaxText checkout (``src/maxtext/configs/`` under it) or a directory holding
``base.yml``, ``types.py`` and ``models/`` directly. Errors: ``E0321``.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from pathlib import Path

from rcpc import __version__
from rcpc.core.diagnostics import error
from rcpc.core.files import ExpandsTooFar, load_yaml_bounded, read_limited, yaml_node_limit
from rcpc.core.limits import MAX_SCHEMA_BYTES
from rcpc.core.source import Span
from rcpc.domain.maxtext import BUILTIN  # the name of the schema rcpc ships (derived by this module)
from rcpc.domain.maxtext.emit import yaml_loader
from rcpc.domain.maxtext.refusal_rules import RULES, custom_rule_refusals, located
from rcpc.domain.maxtext.refusals import contradicts, extract

REPOSITORY = "AI-Hypercomputer/maxtext"
PACKAGE = "src/maxtext"
CONFIGS = f"{PACKAGE}/configs"
_SCALARS = {"int": "int", "float": "float", "bool": "bool", "str": "str", "Any": "any"}
# pydantic.types constrained aliases that MaxText uses.
_CONSTRAINED = {"PositiveInt": ("int", {"gt": 0}), "NonNegativeInt": ("int", {"ge": 0}),
                "NonNegativeFloat": ("float", {"ge": 0}), "PositiveFloat": ("float", {"gt": 0}),
                "NegativeInt": ("int", {"lt": 0}), "NonPositiveInt": ("int", {"le": 0})}
_BOUNDS = ("ge", "gt", "le", "lt")
_FIELD_KWARGS = frozenset((*_BOUNDS, "default", "default_factory", "description"))


class _Unsupported(Exception):
    """An annotation or Field argument this reader does not know (the schema would be wrong)."""


def configs_dir(root: Path) -> Path:
    """The directory holding base.yml and types.py: ``root/src/maxtext/configs`` in a checkout,
    else ``root`` itself. ``E0321`` when neither holds ``base.yml``."""
    for d in (root / CONFIGS, root):
        if os.path.lexists(d / "base.yml"):  # a FIFO or device: an error when read, not "none"
            return d
    raise error("E0321", f"no MaxText base.yml under {root} (looked in {CONFIGS}/ and the directory itself)",
                None, hint="give the root of a MaxText checkout, or a directory with base.yml, types.py, models/")


def derive(root: Path, commit: str | None = None, repository: str = REPOSITORY,
           base_yml: Path | None = None, read=None) -> dict:
    """The schema document of the MaxText checkout at ``root`` (see the module docstring).
    ``commit`` is recorded in the provenance (the checkout's git HEAD when it is a git work
    tree and ``commit`` is None). ``base_yml`` names the base config when it is not
    ``base.yml`` (types.py and models/ are then read beside it). Every file is read once,
    through ``read(path, limit)`` (default :func:`rcpc.core.files.read_limited`: bounded, never a
    FIFO or a device), and its provenance hash is of those bytes. ``E0321`` for unreadable or
    unsupported inputs."""
    seen: dict[Path, bytes] = {}

    def once(path: Path, limit: int) -> bytes:
        if path not in seen:
            seen[path] = (read or read_limited)(path, limit)
        return seen[path]

    cdir = base_yml.parent if base_yml is not None else configs_dir(root)
    types_path = cdir / "types.py"
    files = {"base.yml": base_yml or cdir / "base.yml"}
    paths = {"base.yml": f"{CONFIGS}/base.yml"}  # name -> path in the MaxText repository
    try:
        if os.path.lexists(types_path):  # a FIFO or device is an error, not a missing file
            files["types.py"] = types_path
            tree = _read(types_path, once)
            external = {}
            common = cdir.parent / "common" / "common_types.py"
            if os.path.lexists(common):  # the enums types.py imports (common_types.py)
                files["common_types.py"], paths["common_types.py"] = common, f"{PACKAGE}/common/common_types.py"
                external = _enums_of(_read(common, once))
            mod = _Module(tree, external)
            fields = _fields_of(mod, "MaxTextConfig")
        else:
            tree = fields = None
        base = read_yaml(files["base.yml"], "base.yml", read=once)
        models = {}
        for p in sorted((cdir / "models").glob("*.yml")) if (cdir / "models").is_dir() else ():
            files[f"models/{p.name}"] = p
            data = read_yaml(p, f"models/{p.name}", read=once)
            models[p.stem] = data
    except _Unsupported as exc:
        raise error("E0321", f"cannot read {types_path}: {exc}", None,
                    hint="this MaxText uses a type rcpc does not know yet; please report it") from None
    if fields is None:  # only base.yml: types from the defaults (a weaker schema)
        fields = {k: {"type": _type_of_default(v)} for k, v in base.items()}
    for key, value in base.items():
        if key not in fields:  # a base.yml key types.py lacks: MaxText refuses to start with it
            fields[key] = {"type": _type_of_default(value), "source": "base.yml only"}
        fields[key]["base"] = value
    refusals: list = []
    found = by_hand = 0
    if tree is not None:  # MaxText's cross-field refusals (rcpc/domain/maxtext/refusals.py)
        try:
            refusals, found = extract(tree, mod, "MaxTextConfig", fields)
        except _Unsupported as exc:
            raise error("E0321", f"cannot read {types_path}: {exc}", None,
                        hint="this MaxText uses a type rcpc does not know yet; please report it") from None
        refusals = [r for r in refusals if not contradicts(r["when"])]
        texts = {"types.py": once(types_path, MAX_SCHEMA_BYTES).decode("utf-8")}
        rules = list(RULES)
        for name in sorted({r["file"] for r in rules} - {"types.py"}):  # the other files rules are found in
            p = (cdir.parent if "/" in name else cdir) / name  # "utils/x.py": in the package; "x.py": in configs/
            if os.path.lexists(p):
                files[name], texts[name] = p, once(p, MAX_SCHEMA_BYTES).decode("utf-8")
                if "/" in name:
                    paths[name] = f"{PACKAGE}/{name}"
        rule_dir = cdir / "custom_mesh_and_rule"
        if rule_dir.is_dir() and "custom_mesh_and_rule" in fields:  # a rule with no YAML file: refused
            known = []
            for p in sorted(rule_dir.glob("*.yml")):
                files[f"custom_mesh_and_rule/{p.name}"] = p
                once(p, MAX_SCHEMA_BYTES)
                known.append(p.stem)
            anchor = 'raise ValueError(f"Custom mesh config file not found at {custom_mesh_path}")'
            rules += [custom_rule_refusals(k, anchor, known) for k in ("custom_mesh_and_rule",
                                                                         "custom_mesh_and_rule_for_eval") if k in fields]
        hand = [r for r in located(rules, texts) if set(r["reads"]) <= set(fields)]
        by_hand = len(hand)
        refusals += hand
        decoders = cdir.parent / "layers" / "decoders.py"
        if os.path.lexists(decoders) and "remat_policy" in fields:
            files["layers/decoders.py"], paths["layers/decoders.py"] = decoders, f"{PACKAGE}/layers/decoders.py"
            restricted = _remat_policies(_read(decoders, once))
            if restricted is not None:
                fields["remat_policy"]["restricted"] = restricted
    if commit is None:
        commit = _git_head(root)
    provenance = {
        "generator": f"rcpc {__version__}",
        "repository": repository,
        "commit": commit,
        "files": {name: {"path": paths.get(name, f"{CONFIGS}/{name}"), "sha256": hashlib.sha256(seen[p]).hexdigest()}
                  for name, p in files.items()},
        "regenerate": "rcpc schema maxtext PATH_TO_MAXTEXT -o compiler/rcpc/domain/schemas/maxtext.json",
        "types": "from types.py" if "types.py" in files else "from base.yml defaults (no types.py)",
    }
    if tree is not None:
        provenance["refusals"] = (f"{len(refusals) - by_hand} of the {found} refusals (raise ValueError, assert) in "
                                  "the methods of MaxTextConfig's classes decidable from the config values "
                                  "(rcpc/domain/maxtext/refusals.py), and {by_hand} modelled by hand, located in MaxText's "
                                  "files by their text (rcpc/domain/maxtext/refusal_rules.py)".replace("{by_hand}", str(by_hand)))
    return {"provenance": provenance, "fields": dict(sorted(fields.items())),
            "models": {name: models[name] for name in sorted(models)}, "refusals": refusals}


def dumps(doc: dict) -> str:
    """The canonical text of a schema document: the provenance, then one field, one model and
    one refusal a line (reviewable diffs), keys sorted, UTF-8, LF, one final newline."""
    def one(v) -> str:
        return json.dumps(v, ensure_ascii=False, sort_keys=True, allow_nan=False)

    lines = ["{", f' "provenance": {json.dumps(doc["provenance"], ensure_ascii=False, indent=2)},']
    for section in ("fields", "models"):
        items = list(doc[section].items())
        lines.append(f' "{section}": {{')
        for i, (k, v) in enumerate(items):
            lines.append(f"  {one(k)}: {one(v)}" + ("," if i + 1 < len(items) else ""))
        lines.append(" },")
    refusals = doc.get("refusals", [])
    lines.append(' "refusals": [')
    for i, r in enumerate(refusals):
        lines.append(f"  {one(r)}" + ("," if i + 1 < len(refusals) else ""))
    lines.append(" ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _read(path: Path, read) -> ast.Module:
    try:
        return ast.parse(read(path, MAX_SCHEMA_BYTES).decode("utf-8"), str(path))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as exc:  # ValueError: a NUL byte
        raise error("E0321", f"cannot read {path}: {exc}", None,
                    hint="give MaxText's own types.py (src/MaxText/configs/types.py)") from None


def _git_head(root: Path) -> str:
    import subprocess

    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 else "unknown"


def _type_of_default(value) -> dict:
    """A type from a base.yml default (no types.py): its Python type; null is any."""
    for t, name in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str")):
        if type(value) is t:
            return {"type": name}
    if isinstance(value, list):
        return {"type": "list", "items": {"type": "any"}}
    if isinstance(value, dict):
        return {"type": "dict", "values": {"type": "any"}}
    return {"type": "any"}


# types.py ------------------------------------------------------------------------------------
class _Module:
    """The parts of types.py the schema needs: type aliases, enums, models, imported names."""

    def __init__(self, tree: ast.Module, external: dict | None = None):
        #: enums imported from maxtext.common.common_types: name -> (kind, {member: value})
        self.external: dict = external or {}
        self.aliases: dict[str, ast.expr] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.imported: set[str] = set()
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.aliases[node.targets[0].id] = node.value
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("maxtext"):
                self.imported.update(a.asname or a.name for a in node.names)

    def bases(self, name: str) -> list[str]:
        return [_dotted(b) for b in self.classes[name].bases]

    def is_enum(self, name: str) -> bool:
        return name in self.classes and any(b.split(".")[-1] in ("Enum", "IntEnum", "StrEnum")
                                            for b in self.bases(name))

    def is_model(self, name: str, seen=()) -> bool:
        if name == "BaseModel":
            return True
        return name in self.classes and name not in seen and any(
            self.is_model(b, (*seen, name)) for b in self.bases(name))

    def mro(self, name: str) -> list[str]:
        """C3 linearization over the classes of this module (BaseModel and beyond dropped)."""
        bases = [b for b in self.bases(name) if b in self.classes]
        seqs = [self.mro(b) for b in bases] + [bases]
        out = [name]
        while any(seqs):
            for seq in seqs:
                if not seq:
                    continue
                head = seq[0]
                if not any(head in s[1:] for s in seqs):
                    break
            else:
                raise _Unsupported(f"inconsistent class hierarchy for {name}")
            out.append(head)
            seqs = [s[1:] if s and s[0] == head else s for s in seqs]
        return out


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ast.unparse(node)


def _fields_of(mod: "_Module", root: str) -> dict:
    if root not in mod.classes:
        raise _Unsupported(f"no class {root}")
    return _model_fields(mod, root)


def _model_fields(mod: _Module, name: str) -> dict:
    fields: dict = {}
    for cls in reversed(mod.mro(name)):  # nearer classes override farther ones, as in pydantic
        for stmt in mod.classes[cls].body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                fields[stmt.target.id] = _field(mod, stmt)
    validated = _validated_fields(mod, name)
    for key in validated:
        if key in fields:
            fields[key]["type"] = {"type": "validated", "by": f"types.py:{validated[key]}"}
    return fields


def _validated_fields(mod: _Module, name: str) -> dict:
    """Fields with a ``field_validator(..., mode="before")``: field → line."""
    out = {}
    for cls in mod.mro(name):
        for node in ast.walk(mod.classes[cls]):
            if (isinstance(node, ast.Call) and _dotted(node.func).endswith("field_validator")
                    and any(k.arg == "mode" and isinstance(k.value, ast.Constant) and k.value.value in ("before", "wrap", "plain")
                            for k in node.keywords)):
                for a in node.args:
                    if isinstance(a, ast.Constant) and isinstance(a.value, str):
                        out[a.value] = node.lineno
    return out


def _field(mod: _Module, stmt: ast.AnnAssign) -> dict:
    tp = _type(mod, stmt.annotation)
    out: dict = {"source": f"types.py:{stmt.lineno}"}
    value = stmt.value
    bounds: dict = {}
    default = _NO_DEFAULT
    if isinstance(value, ast.Call) and _dotted(value.func) in ("Field", "pydantic.Field"):
        for kw in value.keywords:
            if kw.arg not in _FIELD_KWARGS:
                raise _Unsupported(f"line {stmt.lineno}: Field({kw.arg}=...)")
            if kw.arg in _BOUNDS:
                bounds[kw.arg] = _literal(kw.value)
            elif kw.arg == "default":
                default = kw.value
            elif kw.arg == "default_factory":
                default = kw.value
                out["default"] = _factory(mod, kw.value)
        if value.args:
            default = value.args[0]
    elif value is not None:
        default = value
    if bounds:
        tp = _bound(tp, bounds, stmt.lineno)
    out["type"] = tp
    if default is not _NO_DEFAULT and "default" not in out:
        try:
            out["default"] = _default(mod, default)
        except _Unsupported:
            out["default_expr"] = ast.unparse(default)
    return out


_NO_DEFAULT = object()


def _literal(node: ast.expr):
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise _Unsupported(f"line {node.lineno}: {ast.unparse(node)} is not a literal") from None


def _default(mod: _Module, node: ast.expr):
    if isinstance(node, ast.Attribute):  # Enum.MEMBER or Enum.MEMBER.value
        target = node.value if node.attr == "value" else node
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and mod.is_enum(target.value.id):
            return _enum_values(mod, target.value.id)[1][target.attr]
        raise _Unsupported(ast.unparse(node))
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise _Unsupported(ast.unparse(node)) from None


def _factory(mod: _Module, node: ast.expr):
    name = _dotted(node)
    if name in ("list", "dict"):
        return [] if name == "list" else {}
    if mod.is_model(name):
        return {}
    raise _Unsupported(f"default_factory={name}")


def _bound(tp: dict, bounds: dict, line: int) -> dict:
    """Bounds apply to the numbers of a type (pydantic pushes them through Optional)."""
    if tp["type"] in ("int", "float"):
        return {**tp, **bounds}
    if tp["type"] == "union":
        return {**tp, "of": [_bound(t, bounds, line) if t["type"] in ("int", "float") else t for t in tp["of"]]}
    raise _Unsupported(f"line {line}: bounds on a {tp['type']}")


def _enums_of(tree: ast.Module) -> dict:
    """name -> (kind, {member: value}) of each Enum class of a module (common_types.py)."""
    mod = _Module(tree)
    return {name: _enum_values(mod, name) for name in mod.classes if mod.is_enum(name)}


def _remat_policies(tree: ast.Module) -> dict | None:
    """The ``remat_policy`` values MaxText's decoder accepts when it builds its layers
    (``layers/decoders.py``, ``Decoder.get_remat_policy``: each string it compares
    ``cfg.remat_policy`` with, and ``"full"``, which its final ``assert`` requires), with the
    line of that ``assert``; None when the method is not found."""
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name == "get_remat_policy":
            values, line = set(), None
            for n in ast.walk(fn):
                if isinstance(n, ast.Compare) and ast.unparse(n.left).endswith(".remat_policy"):
                    for c in n.comparators:
                        for e in (c.elts if isinstance(c, (ast.Tuple, ast.List, ast.Set)) else [c]):
                            if isinstance(e, ast.Constant) and isinstance(e.value, str):
                                values.add(e.value)
                if isinstance(n, ast.Assert) and line is None:
                    line = n.lineno
            if values and line is not None:
                return {"values": sorted(values), "source": f"layers/decoders.py:{line}"}
    return None


def _enum_values(mod: _Module, name: str) -> tuple[str, dict]:
    cls = mod.classes[name]
    kind = "int" if any(b.split(".")[-1] in ("IntEnum", "int") for b in mod.bases(name)) else "str"
    members = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            members[stmt.targets[0].id] = _literal(stmt.value)
    return kind, members


def _type(mod: _Module, node: ast.expr, seen: tuple = ()) -> dict:
    if isinstance(node, ast.Constant) and node.value is None:
        return {"type": "none"}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union([_type(mod, node.left, seen), _type(mod, node.right, seen)])
    if isinstance(node, ast.Subscript):
        head = _dotted(node.value).split(".")[-1]
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Optional":
            return _union([_type(mod, args[0], seen), {"type": "none"}])
        if head == "Union":
            return _union([_type(mod, a, seen) for a in args])
        if head == "Literal":
            return {"type": "literal", "values": [_literal(a) for a in args]}
        if head in ("list", "List", "Sequence"):
            return {"type": "list", "items": _type(mod, args[0], seen)}
        if head in ("dict", "Dict", "Mapping"):
            return {"type": "dict", "values": _type(mod, args[-1], seen)}
        raise _Unsupported(f"line {node.lineno}: {ast.unparse(node)}")
    name = _dotted(node)
    short = name.split(".")[-1]
    if short in _SCALARS:
        return {"type": _SCALARS[short]}
    if short in ("list", "List"):
        return {"type": "list", "items": {"type": "any"}}
    if short in ("dict", "Dict"):
        return {"type": "dict", "values": {"type": "any"}}
    if short in _CONSTRAINED:
        base, bounds = _CONSTRAINED[short]
        return {"type": base, **bounds}
    if name in mod.classes and mod.is_enum(name):
        kind, members = _enum_values(mod, name)
        return {"type": "enum", "name": name, "kind": kind, "values": list(members.values())}
    if name in mod.classes and mod.is_model(name):
        return {"type": "model", "name": name, "extra": _extra(mod, name), "fields": _model_fields(mod, name)}
    if name in mod.aliases and name not in seen:
        alias = mod.aliases[name]
        if isinstance(alias, ast.Call) and _dotted(alias.func).split(".")[-1] == "NewType":
            return _type(mod, alias.args[1], (*seen, name))
        return _type(mod, alias, (*seen, name))
    if name in mod.imported and name in mod.external:  # an Enum of maxtext.common.common_types
        kind, members = mod.external[name]
        return {"type": "enum", "name": name, "kind": kind, "values": list(members.values())}
    if name in mod.imported:  # imported from a file not read: its values are unknown
        return {"type": "enum", "name": name, "kind": "str", "values": None}
    raise _Unsupported(f"line {getattr(node, 'lineno', '?')}: unknown type {name}")


def _extra(mod: _Module, name: str) -> str:
    for cls in mod.mro(name):
        for stmt in mod.classes[cls].body:
            if (isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "model_config"
                                                     for t in stmt.targets) and isinstance(stmt.value, ast.Call)):
                for kw in stmt.value.keywords:
                    if kw.arg == "extra":
                        return _literal(kw.value)
    return "ignore"  # pydantic's default


def _union(parts: list) -> dict:
    out: list = []
    for p in parts:
        for q in (p["of"] if p["type"] == "union" else [p]):
            if q not in out:
                out.append(q)
    return out[0] if len(out) == 1 else {"type": "union", "of": out}


def read_yaml(path: Path, shown: str, span: Span | None = None, read=None) -> dict:
    """A YAML mapping read as MaxText reads it. ``E0320`` when unreadable or not a mapping.
    ``read(path, limit)`` reads its bytes (default :func:`rcpc.core.files.read_limited`), at most
    :data:`~rcpc.core.limits.MAX_SCHEMA_BYTES`."""
    import yaml

    try:
        text = (read or read_limited)(path, MAX_SCHEMA_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error("E0320", f"cannot read the MaxText schema {shown}: {getattr(exc, 'strerror', None) or exc}",
                    span, hint="maxtext_schema in rcp.toml (or --maxtext-schema) names the schema: "
                    f"{BUILTIN}, a .json schema, or MaxText's base.yml") from None
    limit = yaml_node_limit(len(text))
    try:  # weighed before it is built: a merge-key bomb costs its weight to build (load_yaml_bounded)
        data = load_yaml_bounded(text, yaml_loader(), limit, single=True)[0]
    except yaml.YAMLError as exc:
        raise error("E0320", f"the MaxText schema {shown} is not valid YAML: {exc}", span,
                    hint="give MaxText's own base.yml (src/MaxText/configs/base.yml)") from None
    except ExpandsTooFar:
        raise error("E0320", f"the MaxText schema {shown} expands to more than {limit} values (YAML aliases "
                    "repeat their anchor's value each time)", span,
                    hint="give MaxText's own base.yml (src/MaxText/configs/base.yml)") from None
    if not isinstance(data, dict):
        raise error("E0320", f"the MaxText schema {shown} is not a YAML mapping", span,
                    hint="give MaxText's own base.yml (src/MaxText/configs/base.yml)")
    return data
