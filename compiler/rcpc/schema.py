"""The MaxText schema: every key MaxText accepts, its type, default and choices, and the
model configs, as derived by :mod:`rcpc.schemagen` from MaxText's ``types.py``, ``base.yml``
and ``models/*.yml``.

Where it comes from (``maxtext_schema`` in rcp.toml, ``--maxtext-schema``, or
``maxtext_flags(..., schema = ...)``):

* ``builtin:maxtext`` — the schema shipped with rcpc (``rcpc/schemas/maxtext.json``, generated
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
import re
from pathlib import Path

import attrs

from rcpc.diagnostics import error
from rcpc.files import expanded_size, read_limited, yaml_node_limit
from rcpc.limits import MAX_SCHEMA_BYTES
from rcpc.source import Span

BUILTIN = "builtin:maxtext"
BUILTIN_PATH = Path(__file__).resolve().parent / "schemas" / "maxtext.json"

# OmegaConf's float resolver (omegaconf/_utils.py, get_yaml_loader): YAML 1.1 floats, and
# also exponent forms without a dot or without a sign.
_OMEGACONF_FLOAT = re.compile(r"""^(?:
     [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+][0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""", re.X)


@attrs.frozen
class MaxTextSchema:
    """``fields``: key → {"type": type node, "base": base.yml value (when base.yml has the
    key), "default" / "default_expr": types.py's default, "source": "types.py:LINE"};
    ``models``: model name → {key: value} of ``models/<name>.yml``; ``provenance``: where the
    schema came from; ``path``: how to name it in messages."""

    path: str
    fields: dict
    models: dict = attrs.field(factory=dict)
    provenance: dict = attrs.field(factory=dict)

    @property
    def defaults(self) -> dict:
        """key → the value MaxText starts from (base.yml's, else types.py's literal default);
        keys with neither are left out."""
        out = {}
        for k, f in self.fields.items():
            if "base" in f:
                out[k] = f["base"]
            elif "default" in f:
                out[k] = f["default"]
        return out

    def __contains__(self, key: str) -> bool:
        return key in self.fields

    def type_of(self, key: str) -> dict:
        """The type node of ``key`` (see :mod:`rcpc.schemagen`)."""
        return self.fields[key]["type"]

    def start_value(self, key: str):
        """``(True, value)``: what MaxText has for ``key`` before the command line
        (``base.yml``); ``(False, None)`` when base.yml does not set it."""
        f = self.fields.get(key)
        return (True, f["base"]) if f is not None and "base" in f else (False, None)


def yaml_loader():
    """PyYAML's (C) SafeLoader with OmegaConf's extra float resolver: MaxText's YAML."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc, valid-type]
        pass

    Loader.yaml_implicit_resolvers = {k: list(v) for k, v in base.yaml_implicit_resolvers.items()}
    Loader.add_implicit_resolver("tag:yaml.org,2002:float", _OMEGACONF_FLOAT, list("-+0123456789."))
    return Loader


def read_yaml(path: Path, shown: str, span: Span | None = None, read=None) -> dict:
    """A YAML mapping read as MaxText reads it. ``E0320`` when unreadable or not a mapping.
    ``read(path, limit)`` reads its bytes (default :func:`rcpc.files.read_limited`), at most
    :data:`~rcpc.limits.MAX_SCHEMA_BYTES`."""
    import yaml

    try:
        text = (read or read_limited)(path, MAX_SCHEMA_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error("E0320", f"cannot read the MaxText schema {shown}: {getattr(exc, 'strerror', None) or exc}",
                    span, hint="maxtext_schema in rcp.toml (or --maxtext-schema) names the schema: "
                    f"{BUILTIN}, a .json schema, or MaxText's base.yml") from None
    try:
        data = yaml.load(text, Loader=yaml_loader())
    except yaml.YAMLError as exc:
        raise error("E0320", f"the MaxText schema {shown} is not valid YAML: {exc}", span) from None
    limit = yaml_node_limit(len(text))
    if expanded_size(data, limit) > limit:
        raise error("E0320", f"the MaxText schema {shown} expands to more than {limit} values (YAML aliases "
                    "repeat their anchor's value each time)", span)
    if not isinstance(data, dict):
        raise error("E0320", f"the MaxText schema {shown} is not a YAML mapping", span)
    return data


def schema_sources(path: Path) -> list[Path]:
    """What a schema depends on (what the build cache must hash): the ``.json`` itself, or a
    base.yml with the ``types.py`` and ``models/*.yml`` beside it *and its directory*: which
    of those files exist changes the schema (adding ``types.py`` makes it stricter), and a
    directory is never read as a file, so it has no digest and a result checked against a
    base.yml is never cached or replayed (:meth:`rcpc.recipe.Compiler.dependency_digests`).
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


def load_schema(path: Path, span: Span | None, display: str | None = None, read=None) -> MaxTextSchema:
    """Read a schema: a ``.json`` document, or a ``base.yml`` (derived on the fly with the
    ``types.py`` and ``models/`` beside it). ``span`` is where it was named (for errors);
    ``display`` is how to show its path (default: as given); ``read`` as for
    :func:`read_yaml`."""
    shown = display or str(path)
    if path.suffix == ".json":
        try:
            doc = json.loads((read or read_limited)(path, MAX_SCHEMA_BYTES).decode("utf-8"))
            return MaxTextSchema(shown, doc["fields"], doc.get("models", {}), doc.get("provenance", {}))
        except (OSError, UnicodeDecodeError) as exc:
            raise error("E0320", f"cannot read the MaxText schema {shown}: {getattr(exc, 'strerror', None) or exc}",
                        span) from None
        except (ValueError, KeyError, TypeError) as exc:
            raise error("E0320", f"the MaxText schema {shown} is not a schema written by `rcpc schema maxtext`: "
                        f"{exc}", span) from None
    from rcpc.schemagen import derive

    read_yaml(path, shown, span, read)  # E0320 for an unreadable or non-mapping base.yml, at the span
    doc = derive(path.parent, commit="", base_yml=path, read=read)
    return MaxTextSchema(shown, doc["fields"], doc["models"], doc["provenance"])
