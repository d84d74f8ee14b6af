"""Schemas for manifests: list types and validation, as the API server applies a CRD's
structural schema (docs/kubernetes.md).

* :func:`check_lists` (``E1010``): list-map keys and sets (``x-kubernetes-list-type``).
* :class:`SchemaIndex`: schemas by apiVersion and kind, from CRDs (each served version's
  ``openAPIV3Schema``) or plain JSON schemas carrying ``x-kubernetes-group-version-kind``.
* :func:`check_schema` (``E1101``; ``E1012`` with ``strict_crd``): jsonschema validation
  after what the API server does first: :func:`prune_nulls`, :func:`apply_defaults`, and
  for JobSets the webhook's defaults (:func:`rcpc.domain.kube.jobset.default`). ``E1102`` an unusable
  schema file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from rcpc.core.diagnostics import CompileError, Diagnostic, did_you_mean, error, io_hint
from rcpc.core.digest import digest as content_digest
from rcpc.domain.kube import jobset, schemacache
from rcpc.domain.kube import compiled as kube_compiled
from rcpc.core.files import ExpandsTooFar, load_yaml_bounded, read_limited, yaml_node_limit
from rcpc.domain.kube.paths import CONTAINER_LISTS as _CONTAINER_LISTS, diag as _diag
from rcpc.core.limits import MAX_SCHEMA_BYTES
from rcpc.core.source import Span, file_span
from rcpc.core.values import Bool, Dict, Float, Int, List, Str, text_of, to_python
from rcpc.domain.kube.schemashape import shape
from rcpc.domain.workspace import builtin_schema


# list types ----------------------------------------------------------------------------------------
def check_lists(data: Dict, schema: dict, kind: str, session=None) -> list[Diagnostic]:
    """``E1010``: a list the schema marks ``x-kubernetes-list-type: map`` with two entries of
    one key (``x-kubernetes-list-map-keys``; a key field left out takes its schema default,
    as the API server defaults before validating), or a ``set`` with a repeated item; reported
    at the second entry, the first as secondary span. Container lists are left to ``E1004``,
    which also compares names across them. ``session``: the :class:`~rcpc.core.session.Session`
    whose tables (:data:`MARKS`, :data:`CLEAN`) remember what was found (default: this call
    only)."""
    out: list[Diagnostic] = []
    memo = (session.table(MARKS), session.table(CLEAN)) if session is not None else ({}, {})
    if len(memo[0]) > _MARKS_MAX:  # schemas of earlier runs of a long-lived process
        memo[0].clear()
    _walk_lists(data, schema, (), kind, out, memo)
    return out


def _walk_lists(v, s, path: tuple, kind: str, out: list, memo: tuple) -> None:
    """Check the lists of ``v`` against its schema ``s``. Scalars hold no list and are not
    visited, nor is a value whose schema marks no list anywhere below (:func:`_marks_lists`)."""
    if not isinstance(s, dict) or not _marks_lists(s, memo[0]):
        return
    if type(v) is Dict:
        props = s.get("properties") or {}
        extra = s.get("additionalProperties")
        for k, x in v.items.items():
            t = type(x)
            if t is Dict or t is List:
                walk = _walk_shared if x.size >= _SHARED_SIZE else _walk_lists
                walk(x, props.get(k, extra), path + (k,), kind, out, memo)
    elif type(v) is List:
        items = s.get("items")
        list_type = s.get("x-kubernetes-list-type")
        if list_type == "map" and (not path or path[-1] not in _CONTAINER_LISTS):
            _list_map(v, items if isinstance(items, dict) else {}, s.get("x-kubernetes-list-map-keys") or [],
                      path, kind, out)
        elif list_type == "set":
            seen: dict = {}
            for i, x in enumerate(v.items):
                key = _scalar_key(x)
                if key in seen:
                    shown = repr(x.value) if type(x) is Str else text_of(x)
                    out.append(_diag("E1010", kind, path + (i,), f"{shown} is repeated in "
                                     f"{path[-1] if path else 'a list'}, a set", x.span,
                                     related=(("first here", seen[key]),), hint="list each item once"))
                seen.setdefault(key, x.span)
        for i, x in enumerate(v.items):
            t = type(x)
            if t is Dict or t is List:
                (_walk_shared if x.size >= _SHARED_SIZE else _walk_lists)(x, items, path + (i,), kind, out, memo)


# The session's table (rcpc.core.session.Session.table) of values found clean:
# (id(value), id(schema), last path step, kind) -> (the value, the schema): a dict or list of at
# least _SHARED_SIZE found clean there (as :data:`rcpc.domain.kube.rules.CLEAN`; the path beyond its
# last step only names a finding). The entry keeps both so that their ids are not reused.
CLEAN = "rcpc.domain.kube.schema:clean"
_CLEAN_MAX = 1 << 12
_SHARED_SIZE = 16


def _walk_shared(v, s, path: tuple, kind: str, out: list, memo: tuple) -> None:
    """:func:`_walk_lists` of a large value, skipped where it was found clean before
    (``memo[1]``, the table :data:`CLEAN`)."""
    clean = memo[1]
    key = (id(v), id(s), path[-1], kind)
    hit = clean.get(key)
    if hit is not None and hit[0] is v and hit[1] is s:
        return
    found = len(out)
    _walk_lists(v, s, path, kind, out, memo)
    if len(out) == found:
        if len(clean) >= _CLEAN_MAX:
            clean.clear()
        clean[key] = (v, s)


# The session's table of schema nodes looked through: id(schema node) -> (the node, whether it
# or a schema below it marks a list type); the node is kept so that its id is not reused while
# the entry lives
MARKS = "rcpc.domain.kube.schema:marks"
_MARKS_MAX = 1 << 16


def _marks_lists(s: dict, marks: dict) -> bool:
    """False when neither schema node ``s`` nor any schema :func:`_walk_lists` reaches from it
    (``properties``, ``additionalProperties``, ``items``) carries ``x-kubernetes-list-type``
    ``map`` or ``set``:
    no value under ``s`` can break a list rule. True when in doubt (a node of unexpected
    shape, a cycle of YAML aliases, a schema nested too deeply to look through)."""
    memo = marks.get(id(s))
    if memo is not None and memo[0] is s:
        return memo[1]
    marks[id(s)] = (s, True)  # while looking below: a cycle back here is in doubt
    try:
        found = _look_for_lists(s, marks)
    except RecursionError:
        found = True
    marks[id(s)] = (s, found)
    return found


def _look_for_lists(s: dict, marks: dict) -> bool:
    if s.get("x-kubernetes-list-type") in ("map", "set"):  # what _walk_lists acts on
        return True
    props = s.get("properties") or {}
    if not isinstance(props, dict):
        return True
    below = [*props.values(), s.get("additionalProperties"), s.get("items")]
    return any(isinstance(x, dict) and _marks_lists(x, marks) for x in below)


def _scalar_key(x):
    return (type(x).__name__, to_python(x)) if type(x) not in (Dict, List) else ("object", id(x))


def _list_map(v: List, items: dict, keys: list, path: tuple, kind: str, out: list) -> None:
    props = items.get("properties") or {}
    seen: dict = {}
    for i, x in enumerate(v.items):
        if type(x) is not Dict:
            continue
        key = []
        for k in keys:
            value = x.items.get(k)
            key.append(to_python(value) if type(value) in (Str, Int, Float, Bool)
                       else (props.get(k) or {}).get("default"))
        key = tuple(key)
        if key in seen:
            shown = ", ".join(f"{k} {val!r}" for k, val in zip(keys, key))
            field = path[-1] if path else "list"
            out.append(_diag("E1010", kind, path + (i,), f"a second entry with {shown} in {field}, a list keyed "
                             f"by {', '.join(keys)}: the API server refuses it", x.span,
                             related=(("first entry", seen[key]),),
                             hint=f"keep one entry per {', '.join(keys)} (a later entry does not override "
                                  "an earlier one)"))
        seen.setdefault(key, x.span)


# schema validation -------------------------------------------------------------------------------
class SchemaIndex:
    """Schemas by (apiVersion, kind), loaded from CRD or JSON-schema files. ``session``: the
    :class:`~rcpc.core.session.Session` whose tables keep the files as read (:data:`READ`) and
    what is made of them (:data:`MADE`), shared by its indexes of the same bytes (default:
    this index's own). ``digest``: ``digest(path)``, the digest (32 bytes, :mod:`rcpc.core.digest`) of the bytes
    ``read`` gave for ``path`` when the reader made it (else None: made here, once a file)."""

    def __init__(self, paths: list[Path], display=str, read=None, session=None, digest=None):
        self.paths = paths
        self.display = display  # how to show a schema file's path
        self.read = read or read_limited  # read(path, limit) -> bytes, bounded (rcpc.core.files)
        self._read_table = session.table(READ) if session is not None else {}
        self._schemas: dict = {}
        self._origin: dict = {}  # (apiVersion, kind) -> the display path of the file that gives its schema
        self._files: list = []  # (display path, bytes) of each file read
        formats = [_format(p) for p in paths]  # how each file is read: json or yaml
        for p in paths:
            self._load(p)
        sums = [None if digest is None else digest(p) for p in paths]
        sums = [content_digest(raw) if d is None else d for d, (_, raw) in zip(sums, self._files)]
        #: what the validation cache (:mod:`rcpc.domain.kube.schemacache`) keys a result on
        self.identity = schemacache.schema_identity([(f, raw, d) for (f, raw), d in zip(self._files, sums)])
        # what the schemas are made of, wherever the files are and however they are shown
        content = schemacache.schema_identity([(f, raw, d) for f, (_, raw), d in zip(formats, self._files, sums)])
        #: what the schemas are made of: the formats and bytes of the files, in order
        self.content = content
        made_table = session.table(MADE) if session is not None else {}
        made = made_table.pop(content, None)  # an empty dict is one nothing was made in yet: it is still shared
        self._made = {} if made is None else made
        made_table[content] = self._made  # the newest last
        while len(made_table) > MADE_KEPT:
            del made_table[next(iter(made_table))]

    def _load(self, path: Path) -> None:
        shown = self.display(path)
        span = Span(shown, 1, 1, 1, 1)
        try:
            raw = self.read(path, MAX_SCHEMA_BYTES)
            self._files.append((shown, raw))
            docs = _documents(raw, _format(path), shown, self._read_table)
        except (OSError, ValueError) as exc:
            raise error("E1102", f"cannot read the Kubernetes schema {shown}: "
                        f"{getattr(exc, 'strerror', None) or exc}", None, hint=io_hint(exc)) from None
        except RecursionError:  # json.loads of `[[[...` a thousand deep; it was rcpc's bare catch-all
            raise error("E1102", f"cannot read the Kubernetes schema {shown}: nested too deeply for the JSON "
                        "reader", span, hint="a schema nests its arrays and objects a few dozen levels") from None
        found = 0
        for doc in docs:
            if not isinstance(doc, dict):
                continue
            for (api, kind), schema in crd_schemas(doc).items():
                self._schemas[(api, kind)] = schema
                self._origin[(api, kind)] = shown
                found += 1
            for gvk in doc.get("x-kubernetes-group-version-kind", []):
                api = f"{gvk['group']}/{gvk['version']}" if gvk.get("group") else gvk["version"]
                self._schemas[(api, gvk["kind"])] = doc
                self._origin[(api, gvk["kind"])] = shown
                found += 1
        if not found:
            raise error("E1102", f"{shown} holds no CRD and no schema with x-kubernetes-group-version-kind", span,
                        hint="give a CustomResourceDefinition (kubectl get crd NAME -o yaml) or a JSON schema "
                             "with x-kubernetes-group-version-kind (kubectl get --raw /openapi/v2)")

    def schema(self, api_version: str, kind: str) -> dict | None:
        """The schema of ``apiVersion``/``kind`` as written (``openAPIV3Schema``), or None."""
        return self._schemas.get((api_version, kind))

    def structural(self, api_version: str, kind: str) -> dict:
        """The JSON schema validation applies to ``apiVersion``/``kind`` (its
        ``openAPIV3Schema`` with Kubernetes' extensions made explicit), made once a session
        for the same schema files' contents (:data:`MADE_KEPT`); KeyError when there is none."""
        key = (api_version, kind)
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = _structural(self._schemas[key])
        return made

    def validator(self, api_version: str, kind: str):
        """The jsonschema validator (draft 7, no format checker) of ``apiVersion``/``kind``,
        made as :meth:`structural` is; KeyError when there is no schema."""
        key = (api_version, kind, "validator")
        made = self._made.get(key)
        if made is None:
            import jsonschema

            made = self._made[key] = jsonschema.Draft7Validator(self.structural(api_version, kind))
        return made

    def compiled(self, api_version: str, kind: str):
        """The validator compiled ahead of time for this very schema
        (:func:`rcpc.domain.kube.compiled.validator`), or None; made as :meth:`structural` is."""
        key = (api_version, kind, "compiled")
        if key not in self._made:
            self._made[key] = kube_compiled.validator(api_version, kind, self.structural(api_version, kind),
                                                      self.content)
        return self._made[key]

    def memo(self, name: str) -> dict:
        """The memo table ``name`` of what a function found of this index's schema nodes
        (``"shape"``: :func:`rcpc.domain.kube.schemashape.shape`'s tests), kept as
        :meth:`structural` is."""
        table = self._made.get(("memo", name))
        if table is None:
            table = self._made[("memo", name)] = {}
        return table

    def errors(self, api_version: str, kind: str, plain) -> list:
        """jsonschema's violations of ``plain`` as records ``[path, validator, message,
        allowed fields or None]``, by path: none, without jsonschema, when the validator
        compiled for this schema finds it valid (:mod:`rcpc.domain.kube.compiled`). ``E1102``
        at the schema's file when jsonschema cannot apply the schema (a keyword whose value
        is not what Draft 7 allows, such as a ``maximum`` that YAML 1.1 reads as a string:
        jsonschema then raises instead of reporting)."""
        check = self.compiled(api_version, kind)
        if check is not None and kube_compiled.valid(check, plain):
            return []
        try:
            return _errors(self.validator(api_version, kind), plain)
        except Exception as exc:
            raise self._unusable(api_version, kind, exc) from None

    def _unusable(self, api_version: str, kind: str, exc: Exception) -> CompileError:
        import jsonschema

        shown = self._origin[(api_version, kind)]
        try:  # costly on a large schema (0.5 s on JobSet's): only when validation failed
            jsonschema.Draft7Validator.check_schema(self.structural(api_version, kind))
        except jsonschema.exceptions.SchemaError as bad:
            where = "/".join(map(str, bad.absolute_path)) or "the root"
            return error("E1102", f"the Kubernetes schema {shown} is not a valid JSON schema for {api_version} "
                         f"{kind}: {bad.message} (at {where})", file_span(shown),
                         hint="write each keyword's value as JSON Schema (Draft 7) expects; in YAML, quote "
                              "nothing that must be a number, and write exponents with a dot (1.0e+3)")
        return error("E1102", f"the Kubernetes schema {shown} cannot be applied to {api_version} {kind}: "
                     f"{type(exc).__name__}: {exc}", file_span(shown),
                     hint="check the schema with a JSON Schema (Draft 7) validator")


# The session's table (rcpc.core.session.Session.table) of what indexes made: digest of the
# schema files' formats and bytes -> {(apiVersion, kind[, "validator"]): what a SchemaIndex made
# of them}: made once a session, for the MADE_KEPT contents used last (a long-lived process sees
# a schema file edited)
MADE = "rcpc.domain.kube.schema:made"
MADE_KEPT = 8


# The session's table of schema files as read: (format, bytes) of a schema file -> its documents
# as read, for the MADE_KEPT files read last. Shared by every index of those bytes: nothing
# changes a schema as read (what validation needs is made from it).
READ = "rcpc.domain.kube.schema:read"


def _format(path: Path) -> str:
    return "json" if path.suffix == ".json" else "yaml"


def _documents(raw: bytes, fmt: str, shown: str, table: dict) -> list:
    """The documents of a schema file's bytes ``raw`` read as ``fmt`` (``json``, ``yaml``),
    read once for the same bytes (``table``: :data:`READ`'s). Raises as :func:`json.loads` and :func:`_yaml_documents`
    do (UnicodeDecodeError for bytes that are not UTF-8)."""
    key = (fmt, raw)
    docs = table.pop(key, None)
    if docs is None:
        text = raw.decode("utf-8")
        # JSON has no aliases: its values are as many as its text shows (no YAML reader needed)
        docs = [json.loads(text)] if fmt == "json" else _yaml_documents(text, shown)
    table[key] = docs  # the newest last
    while len(table) > MADE_KEPT:
        del table[next(iter(table))]
    return docs


def _yaml_documents(text: str, shown: str) -> list:
    """The documents of a YAML schema file; ``E1102`` for one that does not read or that its
    aliases expand past :func:`rcpc.core.files.yaml_node_limit`. Raises ValueError (with
    the reader's message) for a YAML error."""
    import yaml

    limit = yaml_node_limit(len(text))
    try:  # weighed before it is built: a merge-key bomb costs its weight to build (load_yaml_bounded)
        return load_yaml_bounded(text, getattr(yaml, "CSafeLoader", yaml.SafeLoader), limit)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from None
    except ExpandsTooFar:
        raise error("E1102", f"the Kubernetes schema {shown} expands to more than {limit} values (YAML "
                    "aliases repeat their anchor's value each time)", None,
                    hint="give the schema as the cluster has it: kubectl get crd NAME -o yaml") from None


def crd_schemas(doc: dict) -> dict:
    """{(apiVersion, kind): openAPIV3Schema} of each served version of a
    CustomResourceDefinition document (empty for any other document)."""
    if doc.get("kind") != "CustomResourceDefinition":
        return {}
    spec = doc.get("spec") or {}
    group, kind = spec.get("group"), (spec.get("names") or {}).get("kind")
    out = {}
    for version in spec.get("versions") or []:
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if schema and group and kind and version.get("served", True):
            out[(f"{group}/{version['name']}", kind)] = schema
    return out


BUILTIN_JOBSET = "rcpc.domain.kube.schema:builtin jobset"  # the session's table: {"schema": the schema}


def builtin_jobset_schema(session=None) -> dict:
    """The JobSet schema rcpc ships (``builtin:jobset``), read once a ``session`` (a
    :class:`~rcpc.core.session.Session`; default: read for this call)."""
    table = session.table(BUILTIN_JOBSET) if session is not None else {}
    if "schema" not in table:
        table["schema"] = json.loads(builtin_schema("jobset").read_text(encoding="utf-8"))
    return table["schema"]


# Where a JSON schema (draft 7) holds schemas: keywords whose value is a map of names to
# schemas, a list of schemas, or one schema (``items`` may be a list). Anything else is data
# (``enum``, ``required``, ``default``, ...) or a name (a property's), never a schema.
_SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "dependencies")  # (a dependency's
# list of names is data: left as it is)
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf")
_SCHEMA_ONE = ("items", "additionalProperties", "additionalItems", "not", "contains", "propertyNames",
               "if", "then", "else")


def _structural(s):
    """An openAPIV3Schema as a JSON schema: Kubernetes extensions made explicit, in every
    schema it holds (reached through the keywords that hold schemas, so a property *named*
    ``default`` or ``type`` is a property, not a keyword)."""
    if not isinstance(s, dict):
        return s
    out = {}
    for k, v in s.items():
        if k in ("x-kubernetes-validations", "default"):
            continue
        if k in _SCHEMA_MAPS and isinstance(v, dict):
            out[k] = {name: _structural(x) for name, x in v.items()}
        elif (k in _SCHEMA_LISTS or k == "items") and isinstance(v, list):
            out[k] = [_structural(x) for x in v]
        elif k in _SCHEMA_ONE:
            out[k] = _structural(v)
        else:
            out[k] = v
    if s.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if s.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if s.get("x-kubernetes-preserve-unknown-fields"):
        out.pop("additionalProperties", None)
    elif "properties" in s and "additionalProperties" not in s:
        out["additionalProperties"] = False
    return out


def _field_schema(schema: dict, key: str):
    props = schema.get("properties") or {}
    if key in props:
        return props[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def prune_nulls(data, schema) -> None:
    """The API server's structural pruning of nulls, in place on plain data: a null field
    whose schema is neither ``nullable`` nor has a ``default`` is dropped
    (apiextensions-apiserver ``defaulting.PruneNonNullableNullsWithoutDefaults``). Nulls
    inside lists stay (and fail validation unless nullable)."""
    if not isinstance(schema, dict):
        return
    if isinstance(data, dict):
        for k in list(data):
            sub = _field_schema(schema, k)
            if data[k] is None and isinstance(sub, dict) and not sub.get("nullable") and "default" not in sub:
                del data[k]
            else:
                prune_nulls(data[k], sub)
    elif isinstance(data, list):
        for x in data:
            prune_nulls(x, schema.get("items"))


_SCALARS = (str, int, float, bool, type(None))


def _copied(value):
    """A copy of ``value`` (a schema's ``default``, put into a manifest that is then filled and
    pruned in place) sharing no dict or list with it: dicts and lists copied recursively, JSON's
    scalars (immutable) as they are; anything else a YAML schema may hold (a set, a timestamp)
    through :func:`copy.deepcopy`. Equal to ``copy.deepcopy(value)``; JSON data costs no import of
    :mod:`copy` (with weakref: ~1 ms of a first build)."""
    kind = type(value)
    if kind is dict:
        return {k: _copied(v) for k, v in value.items()}
    if kind is list:
        return [_copied(v) for v in value]
    if kind in _SCALARS:
        return value
    import copy
    return copy.deepcopy(value)


def apply_defaults(data, schema) -> None:
    """The API server's structural defaulting, in place on plain data: a missing property,
    or a null one that is not ``nullable``, with a ``default`` gets it, recursively
    (apiextensions-apiserver ``defaulting.Default``)."""
    if not isinstance(schema, dict):
        return
    if isinstance(data, dict):
        for k, sub in (schema.get("properties") or {}).items():
            if not isinstance(sub, dict):
                continue
            if "default" in sub and (k not in data or data[k] is None and not sub.get("nullable")):
                data[k] = _copied(sub["default"])
            if k in data:
                apply_defaults(data[k], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for k in data:
                if k not in (schema.get("properties") or {}):
                    apply_defaults(data[k], extra)
    elif isinstance(data, list) and isinstance(schema.get("items"), dict):
        items = schema["items"]
        for i, x in enumerate(data):
            if x is None and "default" in items and not items.get("nullable"):
                data[i] = _copied(items["default"])
            apply_defaults(data[i], items)


# What happens to an object before the API server validates it, in order: (why a field the
# raw schema rejects is accepted after this step, what to write for offline validators, step).
_STAGES = (
    ("the API server drops this null (structural pruning)", "leave the field out rather than null",
     lambda plain, schema, kind: prune_nulls(plain, schema)),
    ("the API server fills in the schema's default", "write the schema's default out",
     lambda plain, schema, kind: apply_defaults(plain, schema)),
    ("the JobSet webhook fills it in (jobset_webhook.go Default)",
     "write out what the webhook would (failure-policy rule names are failurePolicyRule<i>)",
     lambda plain, schema, kind: _webhook(plain, kind)),
)


def _webhook(plain, kind: str) -> None:
    if kind == "JobSet":
        jobset.default(plain)


def check_schema(data: Dict, index: SchemaIndex | None, strict_crd: bool = False) -> list[Diagnostic]:
    """Schema violations of one manifest (none without a schema for its apiVersion/kind),
    after the API server's pruning and defaulting and the webhook's defaults. With
    ``strict_crd``, also ``E1012`` for each violation of the raw schema that one of those
    steps removes (what kubeconform, validating offline, reports). What jsonschema finds is
    kept in the validation cache (:mod:`rcpc.domain.kube.schemacache`): an unchanged manifest is
    not validated again. A manifest of a schema that may have a compiled validator
    (:mod:`rcpc.domain.kube.compiled`) is not kept exactly (the verdict costs less than an entry
    for each manifest), only by its shape when valid and jsonschema decides (:func:`_validate`)."""
    if index is None:
        return []
    api, kind = data.items.get("apiVersion"), data.items.get("kind")
    if type(api) is not Str or type(kind) is not Str or index.schema(api.value, kind.value) is None:
        return []
    plain = to_python(data)
    if (api.value, kind.value) in kube_compiled.COMPILED:  # its verdict (or its shape's) costs less than an exact entry
        found = _validate(index, api.value, kind.value, plain, strict_crd)
    else:
        k = schemacache.key(index.identity, api.value, kind.value, strict_crd, plain)
        found = schemacache.lookup(k)
        if found is None or len(found["before"]) != (len(_STAGES) if strict_crd else 0):
            found = _validate(index, api.value, kind.value, plain, strict_crd)
            schemacache.store(k, found)  # and a valid one under its shape too (_validate)
    before = [_keyed(records) for records in found["before"]]
    final = _keyed(found["final"])
    out = [d for rec in final.values() for d in _schema_diags(rec, data, kind.value)]
    after = before[1:] + [final]
    for (why, hint, _), errors, later in zip(_STAGES, before, after):
        for key, rec in errors.items():  # a violation that this stage removes: it explains it
            if key not in later and key not in final:
                out.extend(Diagnostic("E1012", f"{d.message} (the raw schema rejects it; {why})", d.span, hint=hint)
                           for d in _schema_diags(rec, data, kind.value))
    return out


def _validate(index: SchemaIndex, api: str, kind: str, plain, strict_crd: bool) -> dict:
    """jsonschema's violations of ``plain`` (changed in place by the stages) as records
    ``[path, validator, message, allowed fields or None]``: before each stage with
    ``strict_crd`` (``before``) and after them all (``final``). Without ``strict_crd``, where
    jsonschema decides (no validator compiled for this very schema), a manifest whose
    :func:`rcpc.domain.kube.schemashape.shape` was found valid before is valid without it (what
    that module proves: jsonschema not even imported), and a valid one is kept under its
    shape. Where the compiled validator decides, its verdict costs less than the shape: the
    RL recipe's first build made 20 shapes to spare 16 verdicts, ~1.8 ms more, and an edit of
    its image served by shapes took as long as one that validated (issue 41)."""

    schema = index.schema(api, kind)
    before = []  # with strict_crd: the violations before each stage
    for _, _, step in _STAGES:
        if strict_crd:
            before.append(index.errors(api, kind, plain))
        step(plain, schema, kind)
    if strict_crd:
        return {"before": before, "final": index.errors(api, kind, plain)}
    shaped = None
    if schemacache.enabled() and index.compiled(api, kind) is None:
        try:
            shaped = schemacache.key(index.identity, api, kind, False,
                                     shape(plain, index.structural(api, kind), index.memo("shape")), shaped=True)
        except RecursionError:
            pass
    if schemacache.lookup(shaped) == VALID:
        return VALID
    found = {"before": [], "final": index.errors(api, kind, plain)}
    if found == VALID:
        schemacache.store(shaped, found)
    return found


VALID = schemacache.NO_FINDINGS


def _errors(validator, plain) -> list:
    errs = sorted(validator.iter_errors(plain), key=lambda e: list(map(str, e.absolute_path)))
    return [[list(e.absolute_path), e.validator, e.message,
             list(e.schema.get("properties") or {}) if e.validator == "additionalProperties" else None]
            for e in errs]


def _keyed(records: list) -> dict:
    return {(tuple(map(str, rec[0])), rec[1], rec[2]): rec for rec in records}


def _schema_diags(rec: list, data: Dict, kind: str):
    path, validator, message, allowed = tuple(rec[0]), rec[1], rec[2], rec[3]
    node, span = _locate(data, path)
    if validator == "additionalProperties" and allowed is not None and type(node) is Dict:
        for k in node.items:
            if k not in allowed:
                yield _diag("E1101", kind, path + (k,), f"unknown field '{k}'", node.key_spans.get(k, span),
                            hint=did_you_mean(k, allowed) or _fields_hint(allowed))
        return
    hint = _schema_hint(validator, message)
    if validator == "required":
        field = message.split(" is a required property")[0]
        message = f"missing required field {field}"
        held = node.items.get(field[1:-1]) if type(node) is Dict else None
        if held is not None:  # written null, which the API server pruned: reported where it is written
            span = held.span
            message += " (a null is no value)"
    elif validator in ("type", "anyOf") and len(message) > 200:
        message = message[:200] + "..."
    yield _diag("E1101", kind, path, message, span, hint=hint)


_TYPE_WORDS = {"integer": "an integer (no quotes)", "number": "a number (no quotes)", "string": "a string (quoted)",
               "boolean": "true or false (no quotes)", "object": "a dict", "array": "a list", "null": "None"}


def _fields_hint(allowed: list) -> str:
    shown = ", ".join(sorted(allowed)[:12]) + (", ..." if len(allowed) > 12 else "")
    return f"the schema's fields here: {shown}" if allowed else "the schema allows no field here"


def _schema_hint(validator: str, message: str) -> str:
    """What to write instead, from a jsonschema violation's validator and message (JSON Schema
    Draft 7 keywords, as jsonschema words them)."""
    if validator == "type":
        wanted = re.findall(r"'(integer|number|string|boolean|object|array|null)'",
                            message.rpartition(" is not of type ")[2])
        if wanted:
            return "write " + " or ".join(_TYPE_WORDS[w] for w in wanted)
    if validator == "enum":
        return "write one of the values the message lists (case matters)"
    if validator == "required":
        return "add the field; the API server refuses the object without it"
    if validator in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
                     "minItems", "maxItems", "minProperties", "maxProperties"):
        return f"the schema bounds this value ({validator})"
    if validator == "pattern":
        return "write a value the pattern matches"
    return f"the schema's '{validator}' rule refuses this value"


def _locate(data: Dict, path: tuple):
    """The deepest value along ``path`` and its span (the recipe span that produced it)."""
    node = data
    span = data.span
    for p in path:
        if type(node) is Dict and isinstance(p, str) and p in node.items:
            node = node.items[p]
        elif type(node) is List and isinstance(p, int) and p < len(node.items):
            node = node.items[p]
        else:
            break
        span = node.span
    return node, span
