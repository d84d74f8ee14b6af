"""The content digest of rcpc's own keys and records: BLAKE2b with a 32-byte (256-bit) digest
(RFC 7693), the one every cache key, cache entry check, build dependency and replay record
uses (:mod:`rcpc.core.store`, :mod:`rcpc.build.cache`, :mod:`rcpc.build.replay`, the
compiler's file digests, the schema identities of :mod:`rcpc.domain.kube.schemacache`).

It is taken from CPython's ``_blake2`` extension, the module :func:`hashlib.blake2b` itself
is (``hashlib`` imports it from there), without importing :mod:`hashlib`: that import loads
OpenSSL's ``libcrypto`` for its SHA-2 functions, ~2.4 ms of every build and the largest
single import a build made (issue 41). BLAKE2b hashes ~1.1 GB/s here against OpenSSL's
SHA-256 ~1.7 GB/s; a first build of the RL recipe hashes ~1.1 MB (~0.4 ms more). Python
documents :func:`hashlib.blake2b` as always present; an interpreter whose module of it is not
named ``_blake2`` gets it from :mod:`hashlib`: the same digests.

Digests users read and compare with their own tools stay SHA-256 through :mod:`hashlib`
(a values file's in a build's provenance, the derived schemas' provenance, git's blob ids).
"""

from __future__ import annotations

try:
    from _blake2 import blake2b as _blake2b
except ImportError:  # not CPython's module layout: hashlib's blake2b, the same function
    from hashlib import blake2b as _blake2b

SIZE = 32  # bytes of a digest; its hex form has 64 characters


def new(data: bytes = b""):
    """A BLAKE2b hash object of ``data`` with a :data:`SIZE`-byte digest (``update``,
    ``digest``, ``hexdigest`` as :mod:`hashlib`'s objects)."""
    return _blake2b(data, digest_size=SIZE)


def digest(data: bytes) -> bytes:
    """The :data:`SIZE`-byte BLAKE2b digest of ``data`` (bytes or any buffer)."""
    return _blake2b(data, digest_size=SIZE).digest()


def hexdigest(data: bytes) -> str:
    """:func:`digest` of ``data`` as 64 lowercase hex characters."""
    return _blake2b(data, digest_size=SIZE).hexdigest()
