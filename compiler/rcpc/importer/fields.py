"""The param type of each placeholder of a manifest template, from the Kubernetes schema of
the field it stands in.

envsubst writes a value's text into the YAML, and the YAML reader types it (kubectl reads
YAML 1.1 scalars: :mod:`rcpc.domain.kube.manifests`): ``replicas: ${N}`` with ``N=3`` is the
integer 3. A ``str`` param renders the string ``"3"`` there, which the schema refuses
(``E1101``) and which is not the template's data. So a placeholder that stands alone and
unquoted (a plain scalar ``${NAME}``, or ``$NAME``) as the value of a field whose schema type is

* ``integer``, or integer-or-string (``x-kubernetes-int-or-string``: a quantity such as
  ``google.com/tpu``, a probe's port): an ``int`` param (``--set`` reads decimal digits,
  :func:`rcpc.domain.builtins.param_value_from_text`, which YAML reads back as the same
  integer);
* ``boolean``: a ``bool`` param (``true``/``false``: YAML 1.1 booleans);
* ``number``: a ``float`` param (a decimal with a dot, which YAML 1.1 reads as a float);

and every other placeholder a ``str`` param. The schema is the workspace's (``kube_schemas``)
for the template's apiVersion and kind, else rcpc's built-in JobSet schema; a kind neither
describes keeps ``str`` params (the proof then tells a placeholder that YAML reads as a
number: ``E1203``).

``E1207`` (at the placeholder, in the template) for one that stands in such a field but
cannot be a typed param: quoted (``"${N}"`` is a string after envsubst for every value, which
the field refuses), part of the value (``8${N}``), standing in fields of two types, or given
``--set`` text that is not of its type.
"""

from __future__ import annotations

import attrs
import yaml

from rcpc.core.builtins import article
from rcpc.core.diagnostics import CompileError, Diagnostic
from rcpc.core.source import Span
from rcpc.core.values import Dict, List, Str
from rcpc.domain.builtins import param_value_from_text
from rcpc.domain.kube.paths import manifest_path
from rcpc.domain.values import Param
from rcpc.importer.literals import Ref, placeholders

# schema type → (param type, what the field holds, as a diagnostic says it)
TYPES = {"integer": ("int", "an integer"), "int-or-string": ("int", "an integer or a string"),
         "boolean": ("bool", "a boolean"), "number": ("float", "a number")}


@attrs.frozen
class Place:
    """A placeholder ``name`` standing as the whole value at ``path`` (keys and list
    indexes) of the template, at ``span``; ``field`` the schema type there (a key of
    :data:`TYPES`), ``schema`` the field's schema (its ``minimum``/``maximum``)."""

    name: str
    path: tuple
    span: Span
    field: str
    schema: dict = attrs.field(eq=False, repr=False)

    @property
    def type(self) -> str:
        """The param type: ``int``, ``bool`` or ``float``."""
        return TYPES[self.field][0]

    def where(self) -> str:
        """``spec.replicas (an integer)``: the field, as diagnostics and param docs name it."""
        return f"{manifest_path(self.path)} ({TYPES[self.field][1]})"


def field_schema(schema, path: tuple):
    """The schema of the field at ``path`` (keys and list indexes) of an object whose schema
    is ``schema`` (an ``openAPIV3Schema``: ``properties``, ``additionalProperties``,
    ``items``), or None where the schema does not say."""
    s = schema
    for p in path:
        if not isinstance(s, dict):
            return None
        if isinstance(p, int):
            s = s.get("items")
        else:
            props = s.get("properties")
            s = props.get(p) if isinstance(props, dict) and p in props else s.get("additionalProperties")
    return s if isinstance(s, dict) else None


def field_type(schema, path: tuple) -> str | None:
    """The type of the field at ``path``: ``int-or-string``, or the schema's ``type``
    (``string``, ``integer``, ``number``, ``boolean``, ``object``, ``array``); None where the
    schema does not say."""
    s = field_schema(schema, path)
    if s is None:
        return None
    if s.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    t = s.get("type")
    return t if isinstance(t, str) else None


def typed_places(doc, text: str, schema, names) -> list:
    """The :class:`Place` of each placeholder of ``names`` that stands alone, unquoted, as
    the value of a field :data:`TYPES` types, in the template's document ``doc`` (values
    with spans, :func:`rcpc.domain.kube.manifests.load_manifests`) of source ``text``; in order.
    Raises :class:`CompileError` ``E1207`` for a placeholder of such a field that cannot be
    a typed param (quoted, or part of the value), at its place."""
    lines = text.splitlines()
    out: list = []
    problems: list = []

    def plain(span: Span) -> bool:  # the scalar starts with its text: no quote, no block indicator
        line = lines[span.line - 1] if 0 < span.line <= len(lines) else ""
        return line[span.col - 1:span.col] == "$"

    def walk(v, path: tuple) -> None:
        t = type(v)
        if t is Dict:
            for k, x in v.items.items():
                walk(x, path + (k,))
        elif t is List:
            for i, x in enumerate(v.items):
                walk(x, path + (i,))
        elif t is Str:
            pieces = placeholders(v.value, names)
            refs = [p for p in pieces if isinstance(p, Ref)]
            field = field_type(schema, path) if refs else None
            if field not in TYPES:
                return
            whole = len(pieces) == 1 and isinstance(pieces[0], Ref)  # ${NAME} or $NAME, as envsubst reads both
            if whole and plain(v.span):
                out.append(Place(refs[0].text, path, v.span, field, field_schema(schema, path)))
            elif field != "int-or-string":  # a string is valid there: the placeholder stays str
                problems.append(_cannot(refs[0].text, path, v.span, field, quoted=whole))

    walk(doc, ())
    if problems:
        raise CompileError(problems)
    return out


def _cannot(name: str, path: tuple, span: Span, field: str, quoted: bool) -> Diagnostic:
    what = TYPES[field][1]
    key = next((p for p in reversed(path) if isinstance(p, str)), "field")
    if quoted:
        return Diagnostic("E1207", f"${{{name}}} is quoted in {manifest_path(path)}, {what}: after envsubst it "
                          f"is a string for every value, which Kubernetes refuses there", span,
                          hint=f"write it unquoted ({key}: ${{{name}}}): it then imports as "
                          f"{article(TYPES[field][0])} param")
    return Diagnostic("E1207", f"${{{name}}} is part of the value of {manifest_path(path)}, {what}: rcpc "
                      "import makes a typed param of a placeholder that is the whole value", span,
                      hint=f"make the whole value one placeholder ({key}: ${{{name}}}), or write the value out")


def param_types(places: list) -> dict:
    """``{name: the first Place}`` of each typed placeholder. ``E1207`` for a placeholder
    standing in fields of two param types, at its second place."""
    first: dict = {}
    problems = []
    for p in places:
        seen = first.setdefault(p.name, p)
        if seen.type != p.type:
            problems.append(Diagnostic("E1207", f"${{{p.name}}} stands in {p.where()} and in {seen.where()}: "
                                       "no param type renders both as envsubst does", p.span,
                                       related=(("first here", seen.span),),
                                       hint="use a placeholder of its own in each field"))
    if problems:
        raise CompileError(problems)
    return first


def default_text(place: Place) -> str:
    """The default the import gives a typed param without ``--set``: ``1`` for an int
    (Kubernetes' default count of replicas, parallelism and completions; moved into the
    field's ``minimum``..``maximum``), ``false`` for a bool, ``1.0`` for a float."""
    if place.type == "bool":
        return "false"
    if place.type == "float":
        return "1.0"
    value = 1
    low, high = place.schema.get("minimum"), place.schema.get("maximum")
    if isinstance(low, int) and not isinstance(low, bool) and value < low:
        value = low
    if isinstance(high, int) and not isinstance(high, bool) and value > high:
        value = high
    return str(value)


def check_set(place: Place, text: str) -> None:
    """``E1207`` at the placeholder's first place when ``--set NAME=text`` is not of its
    param's type as ``rcpc build --set`` reads it
    (:func:`rcpc.domain.builtins.param_value_from_text`), or is not text that envsubst's YAML
    reads back as that value: an int in plain decimal (``08`` is a string in YAML 1.1,
    ``010`` the octal 8), a float with a dot (``1e-6`` is a string in YAML 1.1)."""
    hint = {"int": "write decimal digits, without a leading zero or +", "bool": "write true or false",
            "float": "write a decimal with a dot, such as 0.5 or 1.0e-6"}[place.type]
    try:
        value = param_value_from_text(Param(place.name, place.type, None, None, "", place.span), text).value
        read = yaml.safe_load(text)
    except (CompileError, yaml.YAMLError):
        value, read = None, None
    same = {"int": lambda: type(read) is int and read == value and text == str(value),
            "bool": lambda: type(read) is bool and read == value,
            "float": lambda: type(read) is float and read == value and "_" not in text}[place.type]
    if value is None or not same():
        raise CompileError(Diagnostic("E1207", f"--set {place.name}={text}: ${{{place.name}}} stands in "
                                      f"{place.where()}, so it is {article(place.type)} param", place.span,
                                      hint=hint))


def other_text(ptype: str, text: str) -> str:
    """A second value of a typed param whose first is ``text`` (the proof's): the next
    integer, the other boolean, the float plus one (spelled with a dot)."""
    if ptype == "int":
        return str(int(text) + 1)
    if ptype == "bool":
        return "false" if text.lower() == "true" else "true"
    shown = repr(float(text.replace("_", "")) + 1.0)
    if "." not in shown and "e" in shown:  # 1e+20: YAML 1.1 reads a float only with a dot
        mantissa, exponent = shown.split("e")
        shown = f"{mantissa}.0e{exponent}"
    return shown
