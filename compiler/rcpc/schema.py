"""The MaxText schema: the keys of a MaxText base config (``base.yml``) and their defaults.

MaxText loads ``base.yml`` with OmegaConf, i.e. PyYAML's YAML 1.1 SafeLoader plus OmegaConf's
extra float resolver (so ``1.e-05`` and ``1e-5`` are floats, ``150_001`` an int). The type
of a key is the type of its default; a ``null`` default leaves the type to usage (any
scalar is accepted). Loading is cached per file and run.

Errors: ``E0320`` when the file cannot be read or is not a YAML mapping.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from rcpc.diagnostics import error
from rcpc.files import read_limited
from rcpc.limits import MAX_SCHEMA_BYTES
from rcpc.source import Span

# OmegaConf's float resolver (omegaconf/_utils.py, get_yaml_loader): YAML 1.1 floats, and
# also exponent forms without a dot or without a sign.
_OMEGACONF_FLOAT = re.compile(r"""^(?:
     [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+][0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""", re.X)

TYPE_OF = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict"}


@attrs.frozen
class MaxTextSchema:
    """``defaults`` maps each top-level key to its default (plain Python data)."""

    path: str
    defaults: dict

    def type_of(self, key: str) -> str | None:
        """``bool``, ``int``, ``float``, ``str``, ``list`` or ``dict``; None for a null default."""
        default = self.defaults[key]
        return None if default is None else TYPE_OF.get(type(default), "str")


def _loader():
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc, valid-type]
        pass

    Loader.yaml_implicit_resolvers = {k: list(v) for k, v in base.yaml_implicit_resolvers.items()}
    Loader.add_implicit_resolver("tag:yaml.org,2002:float", _OMEGACONF_FLOAT, list("-+0123456789."))
    return Loader


def load_schema(path: Path, span: Span | None, display: str | None = None, read=None) -> MaxTextSchema:
    """Read a MaxText base config. ``span`` is where it was named (for errors); ``display``
    is how to show its path (default: as given); ``read(path, limit)`` reads its bytes
    (default :func:`rcpc.files.read_limited`), at most :data:`~rcpc.limits.MAX_SCHEMA_BYTES`."""
    import yaml

    shown = display or str(path)
    try:
        text = (read or read_limited)(path, MAX_SCHEMA_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error("E0320", f"cannot read the MaxText schema {shown}: {getattr(exc, 'strerror', None) or exc}",
                    span, hint="maxtext_base in rcp.toml (or --maxtext-base) names MaxText's base.yml") from None
    try:
        data = yaml.load(text, Loader=_loader())
    except yaml.YAMLError as exc:
        raise error("E0320", f"the MaxText schema {shown} is not valid YAML: {exc}", span) from None
    if not isinstance(data, dict):
        raise error("E0320", f"the MaxText schema {shown} is not a YAML mapping", span)
    return MaxTextSchema(shown, data)
