"""Values of the recipe domain: MaxText flag sets (:class:`FlagSet` of :class:`FlagLayer` of
:class:`FlagEntry`), :class:`TpuSlice`, the renders (:class:`Manifest`, :class:`FlagFile`),
:class:`Variant` and :class:`Param`. Like the core's values (:mod:`rcpc.core.values`) they
are frozen, carry the :class:`Span` that made them, and name themselves to the language by
``TYPE_NAME`` (in error messages)."""

from __future__ import annotations

from rcpc.core import record
from rcpc.core.source import Span
from rcpc.core.values import Dict

_value = record.define(frozen=True, eq=False)


@_value
class FlagEntry:
    """One ``key=value`` of a flag-set layer. ``token``: its MaxText argv token, once made
    (:func:`rcpc.domain.maxtext.flagset.entry_token`, which fills it: an entry's key and value
    never change, so its token is made once for every render and check that reads it)."""

    key: str
    key_span: Span
    value: object
    token: object = record.field(init=False, default=None, eq=False, repr=False)


@_value
class FlagLayer:
    """An ordered map of flags (a dict written in a recipe); ``why`` as for :class:`Dict`."""

    entries: tuple
    span: Span
    why: tuple = ()


@_value
class FlagSet:
    """MaxText flags as ordered layers: a later layer's key overrides an earlier one's
    (MaxText keeps the last value of a repeated key), docs/maxtext.md, *Last key wins*."""

    TYPE_NAME = "maxtext_flags"

    layers: tuple
    span: Span
    schema: object = None  # the MaxTextSchema its keys were checked against, if any
    # ((key, span), ...): the unknown keys acknowledged where its layers were made
    # (maxtext_flags' unknown_keys), carried wherever it is spliced in or joined
    acknowledged: tuple = ()


@_value
class TpuSlice:
    """A TPU slice (see :mod:`rcpc.domain.tpu`); attributes are exposed to recipes by name."""

    TYPE_NAME = "tpu_slice"

    generation: str
    accelerator: str
    topology: str
    dims: tuple
    chips: int
    hosts: int
    chips_per_host: int
    devices_per_chip: int
    machine_type: str
    span: Span

    @property
    def devices(self) -> int:
        return self.chips * self.devices_per_chip


@_value
class Manifest:
    """A Kubernetes object to render as ``<name>.yaml``; ``data`` is a :class:`Dict`."""

    TYPE_NAME = "manifest"

    name: str
    data: Dict
    span: Span


@_value
class FlagFile:
    """A flag set to render as ``<name>.flags`` (one token per line, shell-quoted)."""

    TYPE_NAME = "flag_file"

    name: str
    flags: FlagSet
    span: Span


@_value
class CommandFile:
    """A command line to render as ``<name>.sh``: ``argv`` (a list of strings, the program
    first) written as an executable bash script that runs it, each word shell-quoted."""

    TYPE_NAME = "command_file"

    name: str
    argv: List
    span: Span


@_value
class Variant:
    """``variant(name, set = {...}, against = ..., changes = {...})``, or one point of
    ``variants(over = {...}, ...)`` (``sweep``: its ``changes`` say what the point *may*
    change, since a point equal to ``against`` in one swept param leaves that param's flags
    as they are; docs/language.md, Sweeps)."""

    TYPE_NAME = "variant"

    name: str
    sets: Dict
    against: str | None
    changes: Dict | None
    span: Span
    sweep: bool = False


@_value
class Param:
    """A declared, typed recipe parameter (``NAME = param(type, default = ..., ...)``)."""

    TYPE_NAME = "param"

    name: str
    type: str
    default: object
    choices: tuple | None
    doc: str
    span: Span
