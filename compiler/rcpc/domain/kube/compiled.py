"""Kubernetes schema validation compiled to code: the verdict (valid or not) of the schemas
rcpc ships, from a validator that fastjsonschema generated ahead of time, so that a first
build needs no jsonschema (importing it and building its validator were ~40% of a cold build
of the RL recipe, ``bench/editloop.py``).

Only the verdict "valid" is taken from the compiled validator: a manifest it refuses, or one
it cannot judge, is validated by jsonschema as before (:meth:`rcpc.domain.kube.schema.
SchemaIndex.errors`), so every message and its location are jsonschema's. The generator's
options make its rules jsonschema's ``Draft7Validator`` with no format checker:
``use_formats=False`` (no ``format`` checked), ``use_default=False`` (nothing is filled in:
the API server's defaults are :func:`rcpc.domain.kube.schema.apply_defaults`'). Where the two
libraries differ, fastjsonschema is the stricter one (``$`` in a ``pattern`` is ``\\Z``, not
"before a final newline"), which only sends a manifest on to jsonschema;
``tests/test_kube_compiled.py`` checks "compiled valid implies jsonschema valid" over
mutations of every JobSet the bundled recipes render.

A compiled validator serves a schema only when the digest (:mod:`rcpc.core.digest`) of its structural form
(:meth:`~rcpc.domain.kube.schema.SchemaIndex.structural`, as canonical JSON) is the one it
was generated from: a CRD file holding the same JobSet schema is served too, any other
schema is not. The generated modules are files of the package (``kube_compiled_*.py``),
written by ``python -m rcpc.domain.kube.codegen``; ``--check`` exits 1 when one differs from
what it would write (``tests/test_kube_compiled.py`` runs it). They run without fastjsonschema
(importing it cost 2-10 ms of a first build): the exceptions they raise and catch are
:class:`JsonSchemaValueException` and :class:`JsonSchemaValuesException` here.
"""

from __future__ import annotations

import importlib
import json

from rcpc.core.digest import hexdigest

# (apiVersion, kind) -> (generated module, the builtin schema it is made from)
COMPILED = {("jobset.x-k8s.io/v1alpha2", "JobSet"): ("rcpc.domain.kube.compiled_jobset", "jobset")}
OPTIONS = {"use_default": False, "use_formats": False, "detailed_exceptions": False}


class JsonSchemaValueException(ValueError):
    """A violation, raised by a generated validator (in place of fastjsonschema's exception of
    that name, ``fastjsonschema/exceptions.py``: the code raises it with a message only)."""


class JsonSchemaValuesException(ValueError):
    """Several violations (fastjsonschema's ``JsonSchemaValuesException``, raised only with
    ``detailed_exceptions``; the generated code names it where it catches violations)."""


class NotDecimal:
    """Stands for ``decimal.Decimal`` in the generated code, which only asks whether a number
    is one (``isinstance(x, (int, float, Decimal))``): no value is an instance of it, so a
    Decimal would be refused there, and what the compiled code refuses jsonschema judges
    (:func:`valid`): the verdict is jsonschema's either way. A manifest's plain data holds ints
    and floats (JSON's and YAML's readers make no Decimal), and a build does not import
    decimal (~1 ms) for the question."""

    __slots__ = ()


def digest(structural: dict) -> str:
    """The hex digest (:mod:`rcpc.core.digest`) of a structural schema written as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(structural, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hexdigest(text.encode())


def validator(api_version: str, kind: str, structural: dict, content: str | None = None):
    """The compiled validator (a function of a manifest's plain data, raising on a violation)
    of ``structural``, the schema of ``apiVersion``/``kind``; None when none was generated
    from that very schema or its module cannot be imported. ``content``: the identity of the
    schema files ``structural`` was made from (:attr:`rcpc.domain.kube.schema.SchemaIndex.
    content`); when it is that of the builtin schema file the module was generated from
    (``SOURCE_DIGEST``), that file's structural form is the module's without hashing it again
    (~1 ms of a first build; ``python -m rcpc.domain.kube.codegen --check`` keeps the two
    digests the module names those of today's file and :func:`~rcpc.domain.kube.schema.
    SchemaIndex.structural`)."""
    entry = COMPILED.get((api_version, kind))
    if entry is None:
        return None
    try:
        module = importlib.import_module(entry[0])
    except ImportError:
        return None
    if content is not None and content == getattr(module, "SOURCE_DIGEST", None):
        return module.validate
    return module.validate if module.SCHEMA_DIGEST == digest(structural) else None


def valid(check, plain) -> bool:
    """True when the compiled validator ``check`` finds ``plain`` valid; False when it refuses
    it or fails on it in any way (jsonschema then decides)."""
    try:
        check(plain)
    except Exception:
        return False
    return True
