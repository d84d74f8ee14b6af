"""The MaxText schema: every key MaxText accepts, its type, default and choices, and the
model configs, as derived by :mod:`rcpc.domain.maxtext.schemagen` from MaxText's ``types.py``, ``base.yml``
and ``models/*.yml``.

Where it comes from (``maxtext_schema`` in rcp.toml, ``--maxtext-schema``, or
``maxtext_flags(..., schema = ...)``):

* ``builtin:maxtext`` — the schema shipped with rcpc (``rcpc/domain/schemas/maxtext.json``, generated
  from the MaxText commit named in its provenance);
* a ``.json`` file — a schema written by ``rcpc schema maxtext PATH -o FILE``;
* a ``base.yml`` (also ``maxtext_base`` / ``--maxtext-base``, the older spelling) — derived on
  the fly from that file and the ``types.py`` and ``models/`` beside it; with no types.py
  there, each key's type is its default's type.

YAML is read as MaxText reads it (OmegaConf: PyYAML's YAML 1.1 SafeLoader plus OmegaConf's
extra float resolver, so ``1.e-05`` and ``1e-5`` are floats and ``150_001`` an int).

Errors: ``E0320`` when the schema cannot be read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from rcpc.core import record
from rcpc.core.digest import digest
from rcpc.core.diagnostics import error, io_hint
from rcpc.core.files import read_limited
from rcpc.core.limits import MAX_SCHEMA_BYTES
from rcpc.core.source import Span

BUILTIN_PATH = Path(__file__).resolve().parent.parent / "schemas" / "maxtext.json"

@record.frozen
class MaxTextSchema:
    """``fields``: key → {"type": type node, "base": base.yml value (when base.yml has the
    key), "default" / "default_expr": types.py's default, "source": "types.py:LINE"};
    ``models``: model name → {key: value} of ``models/<name>.yml``; ``provenance``: where the
    schema came from; ``refusals``: the cross-field refusals of types.py's model validators
    that rcpc decides (:mod:`rcpc.domain.maxtext.refusals`); ``path``: how to name it in messages."""

    path: str
    fields: dict
    models: dict = record.field(factory=dict)
    provenance: dict = record.field(factory=dict)
    #: MaxText's decidable cross-field refusals (rcpc/domain/maxtext/refusals.py), in validator order
    refusals: list = record.field(factory=list)
    #: key → the value MaxText starts from (base.yml's, else types.py's literal default);
    #: keys with neither are left out. Made once: flag checks read it for every flag set.
    defaults: dict = record.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self):
        object.__setattr__(self, "defaults", {
            k: f["base"] if "base" in f else f["default"] for k, f in self.fields.items() if "base" in f or "default" in f})

    def __contains__(self, key: str) -> bool:
        return key in self.fields

    def type_of(self, key: str) -> dict:
        """The type node of ``key`` (see :mod:`rcpc.domain.maxtext.schemagen`)."""
        return self.fields[key]["type"]

    def start_value(self, key: str):
        """``(True, value)``: what MaxText has for ``key`` before the command line
        (``base.yml``); ``(False, None)`` when base.yml does not set it."""
        f = self.fields.get(key)
        return (True, f["base"]) if f is not None and "base" in f else (False, None)


def schema_sources(path: Path) -> list[Path]:
    """What a schema depends on (what the build cache must hash): the ``.json`` itself, or a
    base.yml with the ``types.py`` and ``models/*.yml`` beside it *and its directory*: which
    of those files exist changes the schema (adding ``types.py`` makes it stricter), and a
    directory is never read as a file, so it has no digest and a result checked against a
    base.yml is never cached or replayed (:meth:`rcpc.domain.recipe.Compiler.dependency_digests`).
    A cached result that ignored a ``types.py`` added later passed recipes MaxText refuses."""
    if path.suffix == ".json":
        return [path]
    out = [path, path.parent]
    if os.path.lexists(path.parent / "types.py"):
        out.append(path.parent / "types.py")
    models = path.parent / "models"
    if models.is_dir():
        out.extend(sorted(models.glob("*.yml")))
    return out


# The session's table (rcpc.core.session.Session.table) of what a .json schema made: (how it
# is shown, digest of its bytes) -> the MaxTextSchema. Read each time (the build cache hashes
# what is read), made once a session; MADE_KEPT kept.
MADE = "rcpc.domain.maxtext.schema:made"
MADE_KEPT = 8


def load_schema(path: Path, span: Span | None, display: str | None = None, read=None,
                session=None) -> MaxTextSchema:
    """Read a schema: a ``.json`` document, or a ``base.yml`` (derived on the fly with the
    ``types.py`` and ``models/`` beside it). ``span`` is where it was named (for errors);
    ``display`` is how to show its path (default: as given); ``read`` as for
    :func:`rcpc.domain.maxtext.schemagen.read_yaml`. A ``.json`` schema of the same bytes and name is made once a
    ``session`` (a :class:`~rcpc.core.session.Session`; schemas are not changed once made;
    default: made each call)."""
    shown = display or str(path)
    if path.suffix == ".json":
        try:
            raw = (read or read_limited)(path, MAX_SCHEMA_BYTES)
            key = (shown, digest(raw))
            made_table = session.table(MADE) if session is not None else {}
            made = made_table.get(key)
            if made is None:
                doc = json.loads(raw.decode("utf-8"))
                made = MaxTextSchema(shown, doc["fields"], doc.get("models", {}), doc.get("provenance", {}),
                                     doc.get("refusals", []))
                if len(made_table) < MADE_KEPT:
                    made_table[key] = made
            return made
        except (OSError, UnicodeDecodeError) as exc:
            raise error("E0320", f"cannot read the MaxText schema {shown}: {getattr(exc, 'strerror', None) or exc}",
                        span, hint=io_hint(exc)) from None
        except (ValueError, KeyError, TypeError) as exc:
            raise error("E0320", f"the MaxText schema {shown} is not a schema written by `rcpc schema maxtext`: "
                        f"{exc}", span, hint="write it again with rcpc schema maxtext BASE_YML") from None
    from rcpc.domain.maxtext.schemagen import derive, read_yaml  # the generator: a base.yml only (lazy: cli/lazy.py)

    read_yaml(path, shown, span, read)  # E0320 for an unreadable or non-mapping base.yml, at the span
    doc = derive(path.parent, commit="", base_yml=path, read=read)
    return MaxTextSchema(shown, doc["fields"], doc["models"], doc["provenance"], doc["refusals"])
