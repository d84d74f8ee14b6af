"""Plain Kubernetes manifests (YAML files) as rcpc values, for ``rcpc validate``: each
document becomes a :class:`~rcpc.core.values.Dict` whose every value carries the
``file:line:col`` span of its YAML node, so the Kubernetes, JobSet and TPU rules
(:func:`rcpc.domain.kube.check_manifest`) report where the file says it.

The YAML is read as kubectl reads it (sigs.k8s.io/yaml, YAML 1.1 scalars: PyYAML's safe
resolver): nodes are composed with their marks (never found by searching the text), scalars
typed by their resolved tag (``yes`` is a bool, ``0755`` an int, a timestamp stays a
string), mapping keys are strings, ``<<`` merges are applied. ``E1103`` for a file that
cannot be read, is not YAML, repeats a key in one mapping (kubectl refuses that too), or holds
a document that is not a mapping.
"""

from __future__ import annotations

from pathlib import Path

from rcpc.core.diagnostics import CompileError, Diagnostic, error, io_hint
from rcpc.core.source import Source, Span
from rcpc.core.values import Bool, Dict, Float, Int, List, Null, Str


def _span(path: str, node) -> Span:
    start, end = node.start_mark, node.end_mark
    return Span(path, start.line + 1, start.column + 1, end.line + 1, end.column + 1)


class _Builder:
    """Composed YAML nodes → values with spans (one file)."""

    def __init__(self, path: str):
        import yaml

        self.path = path
        self.yaml = yaml
        self.constructor = yaml.constructor.SafeConstructor()
        self.problems: list[Diagnostic] = []

    def value(self, node, depth: int = 1):
        """The value of ``node`` at nesting level ``depth`` (the document is level 1). A
        mapping or sequence deeper than :data:`~rcpc.core.limits.MAX_DEPTH` levels, as deep
        as a recipe's value may be, is ``E1103`` at that node (and read as null): the checks
        walk a manifest recursively, and libyaml reads 1,000 levels (a 600-level ConfigMap
        was a RecursionError in ``rcpc validate`` and ``rcpc import manifest``)."""
        from rcpc.core.limits import MAX_DEPTH

        yaml = self.yaml
        span = _span(self.path, node)
        if depth > MAX_DEPTH and isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            self.problems.append(Diagnostic("E1103", f"the document nests more than {MAX_DEPTH} levels here",
                                            span, hint=f"a manifest nests a few dozen levels; at most {MAX_DEPTH}"))
            return Null("null", span)
        if isinstance(node, yaml.MappingNode):
            self.constructor.flatten_mapping(node)
            items, keys = {}, {}
            for k, v in node.value:
                key = str(k.value)
                if key in items:
                    self.problems.append(Diagnostic("E1103", f"key {key!r} is repeated in one mapping",
                                                    _span(self.path, k), related=(("first here", keys[key]),),
                                                    hint="kubectl refuses a repeated key: keep one"))
                items[key] = self.value(v, depth + 1)
                keys.setdefault(key, _span(self.path, k))
            return Dict(items, keys, span)
        if isinstance(node, yaml.SequenceNode):
            return List(tuple(self.value(x, depth + 1) for x in node.value), span)
        tag = node.tag.rsplit(":", 1)[-1]
        if tag in ("null", "bool", "int", "float"):
            v = self.constructor.construct_object(node)
            if v is None:
                return Null(node.value or "null", span)
            if isinstance(v, bool):
                return Bool(v, node.value, span)
            return (Int if isinstance(v, int) else Float)(v, node.value, span)
        return Str(node.value, span)  # str, timestamp, binary: the text


def _node_children(node):
    """A composed YAML node's children (a mapping's values, a sequence's items), None for a
    scalar."""
    if isinstance(node.value, list):
        return [v for _, v in node.value] if node.id == "mapping" else node.value
    return None


def load_manifests(real: Path, shown: str) -> tuple[Source, list[Dict]]:
    """The source of YAML file ``real`` (shown as ``shown``) and its documents as values
    (empty documents skipped). Raises :class:`CompileError` (``E1103``)."""
    import yaml

    from rcpc.core.files import expanded_size, read_limited, yaml_node_limit
    from rcpc.core.limits import MAX_SCHEMA_BYTES

    try:  # bounded, and never a FIFO or a device (rcpc validate /dev/zero exhausted memory)
        text = read_limited(real, MAX_SCHEMA_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error("E1103", f"cannot read {shown}: {getattr(exc, 'strerror', None) or exc}", None,
                    hint=io_hint(exc)) from None
    source = Source(shown, text, str(real))
    limit = yaml_node_limit(len(text))
    builder = _Builder(shown)
    docs = []
    try:
        for i, node in enumerate(yaml.compose_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)), 1):
            if node is None or isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null"):
                continue  # an empty document, as kubectl skips it
            if expanded_size(node, limit, _node_children) > limit:  # a billion laughs hung rcpc validate
                raise CompileError(Diagnostic(
                    "E1103", f"document {i} of {shown} expands to more than {limit} values (YAML aliases repeat "
                    "their anchor's value each time)", _span(shown, node),
                    hint="at most one value a byte of the file, plus 100,000: write fewer aliases"))
            value = builder.value(node)
            if type(value) is not Dict:
                builder.problems.append(Diagnostic("E1103", f"document {i} of {shown} is not a Kubernetes object "
                                                   "(a mapping)", value.span,
                                                   hint="each document (between --- lines) is one object"))
                continue
            docs.append(value)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        span = Span(shown, mark.line + 1, mark.column + 1, mark.line + 1, mark.column + 2) if mark else None
        raise CompileError(Diagnostic("E1103", f"{shown} is not valid YAML: {getattr(exc, 'problem', None) or exc}",
                                      span, hint="YAML indents with spaces; quote values holding ': ' or '#'")
                           ) from None
    if builder.problems:
        raise CompileError(builder.problems)
    return source, docs
