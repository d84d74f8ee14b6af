"""The schema-validation cache: what jsonschema found in one manifest, kept in the user cache
so that an unchanged manifest (in the edit loop, most of a recipe's) is not validated again,
and jsonschema is not even imported when every manifest hits.

An entry holds the violations :func:`rcpc.domain.kube.schema.check_schema` found, as plain
records (path, validator, message, and for ``additionalProperties`` the allowed fields),
before each of the API server's stages with ``strict_crd`` and after them all. Its *key* is
the digest of rcpc's own code (:func:`rcpc.core.usercache.code_fingerprint`), the Python
version, where jsonschema is installed and the size and mtime of its ``__init__.py`` (its
messages are part of the result), the identity of the schema files (the digest, :mod:`rcpc.core.digest`, of their
paths, sizes and bytes' digests, :func:`schema_identity`), apiVersion, kind, ``strict_crd``
and the manifest (:func:`repr` of its plain data: ``1``, ``1.0``, ``True`` and ``"1"`` differ).
A render with no finding at all (no rule, no schema, error or warning) is also kept under its
text (:func:`render_key`: the render determines the manifest's data, which reads back from
it), so the next build that renders it again skips every check (:meth:`rcpc.domain.recipe.
Compiler.check_manifest`) without even reading the schemas; with no schema file but the
built-in JobSet one, it is also kept under its argv view (:func:`view_key`,
:mod:`rcpc.domain.kube.argvview`: the argv words no check reads left out), so a manifest that
differs from it only in such words (a flag edited) skips every check too. Where jsonschema
validates (a schema with no compiled validator, :mod:`rcpc.domain.kube.compiled`), every
result is kept under the exact manifest (an unchanged manifest, as most of a recipe's are
after an edit, skips even the API server's stages), and a manifest found valid is also kept
under its *shape* (:mod:`rcpc.domain.kube.schemashape`: the strings no keyword of the schema can
tell apart left out), so a manifest that differs from a valid one only in such strings (a
flag in a container's ``args``) is valid without jsonschema; a result with violations is
kept only under the exact manifest. Where the compiled validator decides, its verdict costs
less than either entry (:func:`rcpc.domain.kube.schema.check_schema`). Entries are those of the ``schema`` area of rcpc's store
(:mod:`rcpc.core.store`: its keys, entry format, validation, trust rules and batched writes),
with the results as JSON. A lookup is a hit only when the store returns the entry (its bytes
check against the key asked for) and the records have the expected shape; anything else is a
miss (validated again, entry rewritten). ``RCPC_NO_CACHE=1`` turns the cache off; failures to
write are ignored.
"""

from __future__ import annotations

import json
import sys

from rcpc.core import digest as content_digest, store as entries
from rcpc.core.usercache import code_fingerprint, installed

AREA = "schema"
_KEY_BASE: list[str] = []  # computed once a process


def _key_base() -> str:
    if not _KEY_BASE:
        _KEY_BASE.append(f"{code_fingerprint()}\0{sys.version}\0{installed('jsonschema')}")
    return _KEY_BASE[0]


def key(identity: str, api_version: str, kind: str, strict_crd: bool, plain, *, shaped: bool = False) -> str | None:
    """The entry key of validating ``plain`` (a manifest as plain data:
    :func:`rcpc.core.values.to_python`) against the schemas of ``identity``: 64 hex characters.
    The manifest is written with :func:`repr`, which keeps every type apart (``1``, ``1.0``,
    ``True``, ``"1"``, as values and as keys); None when that fails (too deep) or the cache
    is off: not cached. With ``shaped``, ``plain`` is a manifest's shape
    (:func:`rcpc.domain.kube.schemashape.shape`, after the API server's stages) and the key is
    one only "valid" is stored under."""
    if not enabled():
        return None
    try:
        manifest = repr(plain)
    except RecursionError:
        return None
    return _digest(identity, api_version, kind, bool(strict_crd), "shape" if shaped else "manifest", manifest)


NO_FINDINGS = {"before": [], "final": []}  # a valid manifest; a render with no findings


def schema_identity(files) -> str:
    """The identity of Kubernetes schema files: the hex digest (:mod:`rcpc.core.digest`) of each
    file's display path, size and the digest of its bytes, in order (``files``: (display path, bytes, digest of
    the bytes or None) triples: the bytes' digest given when the reader made it, as
    :meth:`rcpc.domain.recipe.Compiler.read` does, else made here; a 223 KB schema takes
    ~0.35 ms to hash, issue 41)."""
    digest = content_digest.new()
    for shown, raw, known in files:
        digest.update(f"{shown}\0{len(raw)}\0".encode("utf-8", "surrogatepass")
                      + (content_digest.digest(raw) if known is None else known))
    return digest.hexdigest()


def render_key(identity: str | None, strict_crd: bool, text: str, gates: frozenset = frozenset()) -> str | None:
    """The entry key of a manifest's render ``text`` checked against the schemas of
    ``identity`` (:func:`schema_identity`; "" for none) with the JobSet feature gates
    ``gates``: only :data:`NO_FINDINGS` is stored under it. None (not cached) when the cache
    is off or ``identity`` is None."""
    if identity is None or not enabled():
        return None
    return _digest(identity, bool(strict_crd), "render", text, *sorted(gates))


def view_key(identity: str | None, strict_crd: bool, viewed: str, gates: frozenset = frozenset()) -> str | None:
    """The entry key of a manifest's argv view checked as for :func:`render_key`, ``viewed``
    the view written with :func:`repr` (:func:`rcpc.domain.kube.argvview.text`: ``repr`` of
    :func:`rcpc.domain.kube.argvview.view` of the manifest's plain data): only
    :data:`NO_FINDINGS` is stored under it. None (not cached) when the cache is off or
    ``identity`` is None."""
    if identity is None or not enabled():
        return None
    return _digest(identity, bool(strict_crd), "argv view", viewed, *sorted(gates))


def _digest(*fields) -> str:
    """The store's key (:func:`rcpc.core.store.key`) of rcpc's key base and ``fields``."""
    return entries.key(AREA, _key_base(), *fields)


def enabled() -> bool:
    """Whether the cache is in use (:func:`rcpc.core.store.enabled`)."""
    return entries.enabled()


def _record(x) -> bool:
    return (type(x) is list and len(x) == 4 and type(x[0]) is list
            and all(type(p) in (str, int) for p in x[0]) and type(x[1]) is str and type(x[2]) is str
            and (x[3] is None or type(x[3]) is list and all(type(a) is str for a in x[3])))


def lookup(k: str | None) -> dict | None:
    """The stored result of key ``k``: ``{"before": [[record, ...], ...], "final": [record,
    ...]}`` with records ``[path, validator, message, allowed-or-None]``; None on any miss."""
    payload = entries.get(AREA, k)
    if payload is None:
        return None
    try:
        found = json.loads(payload.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if (type(found) is not dict or set(found) != {"before", "final"} or type(found["before"]) is not list
            or type(found["final"]) is not list
            or not all(type(s) is list and all(map(_record, s)) for s in found["before"])
            or not all(map(_record, found["final"]))):
        return None
    return found


def store(k: str | None, result: dict) -> None:
    """Keep ``result`` (the shape :func:`lookup` returns) under key ``k``, written with the
    run's other entries (:func:`rcpc.core.store.flush`)."""
    if k is None or not enabled():
        return
    if result == NO_FINDINGS:  # most entries (every key of a clean manifest): written once a process
        payload = _NO_FINDINGS_PAYLOAD
    else:
        try:
            payload = json.dumps(result, ensure_ascii=True, separators=(",", ":")).encode()
        except (ValueError, TypeError, RecursionError):
            return
    entries.put(AREA, k, payload)


_NO_FINDINGS_PAYLOAD = json.dumps(NO_FINDINGS, ensure_ascii=True, separators=(",", ":")).encode()
