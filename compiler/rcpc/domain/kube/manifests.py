"""Plain Kubernetes manifests (YAML files) as rcpc values, for ``rcpc validate``: each
document becomes a :class:`~rcpc.core.values.Dict` whose every value carries the
``file:line:col`` span of its YAML node, so the Kubernetes, JobSet and TPU rules
(:func:`rcpc.domain.kube.rules.check_manifest`) report where the file says it.

The YAML is read as kubectl reads it (sigs.k8s.io/yaml over go-yaml v2,
:mod:`rcpc.core.goyaml`): nodes are composed with their marks (never found by searching the
text), plain scalars typed as go-yaml types them (``y`` and ``yes`` are bools, ``0755`` and
``0X1F`` ints, ``1e-5`` a float, ``1:30`` and a timestamp strings), mapping keys made JSON
keys as sigs.k8s.io/yaml makes them (``yes:`` is the key ``true``), ``<<`` merges applied in
go-yaml v2's order (:meth:`_Builder.mapping`: a key written before ``<<`` is overwritten),
``! 123`` a string, ``!!binary`` decoded. The file is cut into documents as kubectl cuts it
(:func:`check_yaml_cuts`), and one that opens with ``{`` is read as JSON
(:func:`json_start`, :mod:`rcpc.domain.kube.manifest_json`). ``E1103`` for a file that cannot be
read, is not YAML, repeats a key in one mapping (go-yaml's strict reading refuses it; kubectl
keeps the last silently), holds a document that is not a mapping, or holds what kubectl cannot
turn into JSON (a null or too large key, a NaN or infinite number, a value its tag cannot have).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from rcpc.core import goyaml
from rcpc.core.diagnostics import CompileError, Diagnostic, error, io_hint
from rcpc.core.files import expanded_size, read_limited, yaml_node_limit
from rcpc.core.limits import MAX_DEPTH, MAX_SCHEMA_BYTES
from rcpc.core.source import Source, Span
from rcpc.core.values import Bool, Dict, Float, Int, List, Null, Str

_PLAIN = "rcpc:plain"  # the tag composition gives a plain, untagged scalar: go-yaml resolves it
_YAML_TAG = "tag:yaml.org,2002:"
_MERGE_TAG = _YAML_TAG + "merge"


def _loader():
    """PyYAML's (C) safe loader composing nodes, with every plain untagged scalar (but ``<<``,
    the merge key) tagged :data:`_PLAIN` instead of PyYAML's YAML 1.1 resolution."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):
        def resolve(self, kind, value, implicit):
            if kind is yaml.ScalarNode and implicit[0] and value != "<<":
                return _PLAIN
            return super().resolve(kind, value, implicit)

    return Loader


def _span(path: str, node) -> Span:
    start, end = node.start_mark, node.end_mark
    return Span(path, start.line + 1, start.column + 1, end.line + 1, end.column + 1)


class _Builder:
    """Composed YAML nodes → values with spans (one file)."""

    def __init__(self, path: str, text: str = ""):
        import yaml

        self.path = path
        self.text = text
        self.yaml = yaml
        self.problems: list[Diagnostic] = []
        self.warnings: list[Diagnostic] = []  # W1104: keys kubectl sends as other text
        self.merging: set[int] = set()  # ids of the mapping nodes being merged (a cycle is refused)
        self.reported: set[int] = set()  # ids of the key nodes already reported repeated

    def value(self, node, depth: int = 1):
        """The value of ``node`` at nesting level ``depth`` (the document is level 1). A
        mapping or sequence deeper than :data:`~rcpc.core.limits.MAX_DEPTH` levels, as deep
        as a recipe's value may be, is ``E1103`` at that node (and read as null): the checks
        walk a manifest recursively, and libyaml reads 1,000 levels (a 600-level ConfigMap
        was a RecursionError in ``rcpc validate`` and ``rcpc import manifest``)."""

        yaml = self.yaml
        span = _span(self.path, node)
        if depth > MAX_DEPTH and isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            self.problems.append(Diagnostic("E1103", f"the document nests more than {MAX_DEPTH} levels here",
                                            span, hint=f"a manifest nests a few dozen levels; at most {MAX_DEPTH}"))
            return Null("null", span)
        if isinstance(node, yaml.MappingNode):
            items, keys = {}, {}
            self.mapping(node, items, keys, depth)
            return Dict(items, keys, span)
        if isinstance(node, yaml.SequenceNode):
            return List(tuple(self.value(x, depth + 1) for x in node.value), span)
        kind, v = self.scalar(node)
        if kind == goyaml.NULL:
            return Null(node.value or "null", span)
        if kind == goyaml.BOOL:
            return Bool(v, node.value, span)
        if kind == goyaml.INT:
            return Int(v, node.value, span)
        if kind == goyaml.FLOAT:
            if math.isnan(v) or math.isinf(v):
                self.problems.append(Diagnostic(
                    "E1103", f"{node.value} is not a number JSON can hold: kubectl cannot send this document", span,
                    hint="Kubernetes fields take finite numbers; quote it if a string is meant"))
            return Float(v, node.value, span)
        return Str(v, span)

    def mapping(self, node, items: dict, keys: dict, depth: int) -> None:
        """Set the pairs of mapping ``node`` into ``items`` (JSON key → value) and ``keys`` (JSON
        key → span of the key), as go-yaml v2 ``decoder.mapping`` sets them into a Go map: in
        the order written, each pair overwriting what was set before, and a ``<<`` key merging
        its value there and then (``decoder.merge``). So a key written *before* ``<<`` is
        overwritten by the merged mapping's, one written after it overwrites the merged one
        (PyYAML's and YAML 1.1's rule, that written keys always win, is not go-yaml v2's), and
        of a list of merged mappings the earlier win (merged last to first). A key written twice
        in one mapping is ``E1103`` (go-yaml's ``UnmarshalStrict`` refuses it; kubectl's
        non-strict reading keeps the last silently)."""
        written: set[str] = set()
        for k, v in node.value:
            if k.tag == _MERGE_TAG and k.value == "<<":  # isMerge: plain, '!' or !!merge '<<'
                # an alias is composed as its anchor's node, which starts before this key
                self.merge(v, items, keys, depth, alias=v.start_mark.index < k.start_mark.index)
                continue
            key = self.key(k)
            if key is None:
                continue
            if key in written and id(k) not in self.reported:
                self.reported.add(id(k))
                self.problems.append(Diagnostic("E1103", f"key {key!r} is repeated in one mapping",
                                                _span(self.path, k), related=(("first here", keys[key]),),
                                                hint="kubectl keeps only the last one, silently: keep one"))
            written.add(key)
            items[key] = self.value(v, depth + 1)
            keys[key] = _span(self.path, k)

    def merge(self, node, items: dict, keys: dict, depth: int, alias: bool = False) -> None:
        """go-yaml v2 ``decoder.merge``: a mapping (or an alias of one) is set in as
        :meth:`mapping` sets it; a list of them written there is set in from its last item to
        its first (the earlier win); anything else, an ``alias`` of a list included, is
        ``E1103`` ("map merge requires map or sequence of maps as the value"), and so is a
        mapping that merges itself ("anchor value contains itself")."""
        yaml = self.yaml
        if alias and isinstance(node, yaml.SequenceNode):
            parts = [node]  # go-yaml merges an alias only when its anchor is a mapping
        else:
            parts = node.value[::-1] if isinstance(node, yaml.SequenceNode) else [node]
        for part in parts:
            if not isinstance(part, yaml.MappingNode):
                self.problems.append(Diagnostic("E1103", "'<<' merges a mapping or a list of mappings, not this",
                                                _span(self.path, part),
                                                hint="write '<<: *anchor' with an anchor of a mapping"))
                continue
            if id(part) in self.merging:
                self.problems.append(Diagnostic("E1103", "this mapping merges itself ('<<' of its own anchor)",
                                                _span(self.path, part), hint="merge another mapping's anchor"))
                continue
            self.merging.add(id(part))
            try:
                self.mapping(part, items, keys, depth)
            finally:
                self.merging.discard(id(part))

    def non_specific(self, node) -> bool:
        """True when plain scalar ``node`` carries the non-specific tag ``!`` (``! 123``):
        PyYAML resolves it as an untagged plain scalar, go-yaml v2 keeps the tag ``!``, which
        ``resolve`` does not resolve (``resolvableTag``), so the text is a string. The node's
        properties (an ``&anchor``, the tag) come before its text."""
        text, i = self.text, node.start_mark.index
        while i < len(text) and text[i] in "&!":
            if text[i] == "!":
                return True
            while i < len(text) and text[i] not in " \t\r\n":
                i += 1
            while i < len(text) and text[i] in " \t\r\n":
                i += 1
        return False

    def scalar(self, node) -> tuple[str, object]:
        """(kind, value) of a scalar node as go-yaml reads it (:mod:`rcpc.core.goyaml`): plain
        and untagged by :func:`~rcpc.core.goyaml.resolve`, quoted and block scalars as
        strings, a tagged one as its tag says (``E1103`` when the text cannot have the tag,
        read as its text)."""
        tag = node.tag
        if tag == _PLAIN:
            return (goyaml.STR, node.value) if self.non_specific(node) else goyaml.resolve(node.value)
        short = tag[len(_YAML_TAG):] if tag.startswith(_YAML_TAG) else None
        if short not in (goyaml.STR, goyaml.INT, goyaml.FLOAT, goyaml.BOOL, goyaml.NULL, "binary", "timestamp"):
            return goyaml.STR, node.value  # !!merge on another text, or a tag of an application: its text
        found = goyaml.resolve_tagged(short, node.value)
        if found is None:
            what = "base64" if short == "binary" else f"a !!{short}"
            self.problems.append(Diagnostic("E1103", f"cannot read {node.value!r} as {what} (kubectl refuses "
                                            "it too)", _span(self.path, node),
                                            hint=f"drop the !!{short} tag, or write a value that is one"))
            return goyaml.STR, node.value
        return found

    def key(self, node) -> str | None:
        """The JSON key kubectl makes of a mapping key node (``yes`` is ``true``, ``0x10`` is
        ``16``: :func:`rcpc.core.goyaml.json_key`); None, with ``E1103``, for one it refuses."""
        if not isinstance(node, self.yaml.ScalarNode):
            self.problems.append(Diagnostic("E1103", "a mapping or a list as a key: JSON keys are strings",
                                            _span(self.path, node), hint="write the key as a string"))
            return None
        kind, value = self.scalar(node)
        key = goyaml.json_key(kind, value)
        if key is None:
            self.problems.append(Diagnostic("E1103", f"kubectl cannot make a JSON key of {node.value!r} "
                                            f"(a {kind} key)", _span(self.path, node),
                                            hint="quote the key: JSON keys are strings"))
        elif node.tag == _PLAIN and kind != goyaml.STR and key != node.value:
            self.warnings.append(Diagnostic(
                "W1104", f"kubectl reads the key {node.value!r} as {'an' if kind == goyaml.INT else 'a'} {kind} and "
                f"sends it as the key {key!r}",
                _span(self.path, node), severity="warning",
                hint=f"quote it ({_quoted(node.value)}: ...) to keep the key as written, or write {key!r}"))
        return key


def _node_children(node):
    """A composed YAML node's children (a mapping's values, a sequence's items), None for a
    scalar."""
    if isinstance(node.value, list):
        return [v for _, v in node.value] if node.id == "mapping" else node.value
    return None


def load_manifests(real: Path, shown: str, warnings: list | None = None) -> tuple[Source, list[Dict]]:
    """The source of YAML file ``real`` (shown as ``shown``) and its documents as values
    (empty documents skipped); ``warnings`` as :func:`parse_manifests`'s. Raises
    :class:`CompileError` (``E1103``)."""

    try:  # bounded, and never a FIFO or a device (rcpc validate /dev/zero exhausted memory)
        text = read_limited(real, MAX_SCHEMA_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error("E1103", f"cannot read {shown}: {getattr(exc, 'strerror', None) or exc}", None,
                    hint=io_hint(exc)) from None
    return Source(shown, text, str(real)), parse_manifests(text, shown, warnings)


# Go's unicode.IsSpace (bytes.TrimLeftFunc in hasJSONPrefix, strings.TrimSpace in YAMLReader)
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"


def _at(shown: str, text: str, index: int) -> Span:
    line = text.count("\n", 0, index) + 1
    col = index - (text.rfind("\n", 0, index) + 1) + 1
    return Span(shown, line, col, line, col + 1)


def json_start(text: str) -> int | None:
    """Where kubectl's JSON stream starts in ``text`` (past a BOM, which ``FileVisitor``
    drops), or None when kubectl reads it as YAML: ``NewYAMLOrJSONDecoder`` reads a file as
    JSON when its first 4,096 bytes open, after white space (Go's ``unicode.IsSpace``), with
    ``{`` (``GuessJSONStream``/``hasJSONPrefix``); :mod:`rcpc.domain.kube.manifest_json` reads it."""
    start = 1 if text.startswith("\ufeff") else 0
    head = text[start:].encode("utf-8")[:4096].decode("utf-8", errors="ignore")
    return start if head.lstrip(_GO_SPACE).startswith("{") else None


def check_yaml_cuts(text: str, shown: str) -> None:
    """What kubectl refuses in how a YAML file is cut into documents, before any YAML is read
    (``k8s.io/apimachinery/pkg/util/yaml`` ``YAMLReader.Read``). Raises
    :class:`CompileError` (``E1103``):

    * the documents are cut at every line that starts with ``---``, and such a line with
      anything but white space or a comment after the ``---`` is refused (``--- {a: 1}``,
      ``--- |``, ``----``: "invalid Yaml document separator");
    * so a ``%YAML`` or ``%TAG`` directive is cut from the ``---`` that must follow it, and
      go-yaml refuses the directive alone ("did not find expected <document start>")."""

    offset = 1 if text.startswith("\ufeff") else 0  # FileVisitor drops the BOM
    for line in text[offset:].split("\n"):
        if line.startswith("---"):
            rest = line[3:].strip(_GO_SPACE)
            if rest and rest[0] != "#":
                raise error("E1103", f"kubectl cuts documents at lines starting with '---' and refuses "
                                  f"{rest[:20]!r} after it", _at(shown, text, offset + 3),
                            hint="put the document on the lines after a bare '---'")
        offset += len(line) + 1
    directive = re.search(r"(?m)^%", text)
    if directive is not None:
        import yaml

        try:
            events = yaml.parse(text, Loader=_loader())
            found = any(isinstance(e, yaml.DocumentStartEvent) and (e.version or e.tags) for e in events)
        except yaml.YAMLError:
            found = False  # the YAML reading reports it
        if found:
            raise error("E1103", "kubectl cuts the directive from the '---' after it and cannot read it",
                        _at(shown, text, directive.start()),
                        hint="drop the %YAML/%TAG directive (kubectl reads YAML 1.1 without it)")


def _objects(values: list, shown: str) -> list[Dict]:
    """The Kubernetes objects of a JSON stream's ``values``: a null skipped (kubectl skips
    ``null``), anything else that is not an object ``E1103``."""
    problems = [Diagnostic("E1103", f"document {i} of {shown} is not a Kubernetes object (a JSON object)", v.span,
                           hint="each JSON value of the file is one object")
                for i, v in enumerate(values, 1) if type(v) not in (Dict, Null)]
    if problems:
        raise CompileError(problems)
    return [v for v in values if type(v) is Dict]


def parse_manifests(text: str, shown: str, warnings: list | None = None) -> list[Dict]:
    """The documents of YAML ``text`` (named ``shown`` in spans) as values, read as kubectl
    reads them (module docstring; empty documents skipped). ``warnings``: a list given the
    ``W1104`` warnings (a plain key kubectl sends as other text: ``yes`` as ``true``, ``0x10``
    as ``16``). Raises :class:`CompileError` (``E1103``)."""
    import yaml


    start = json_start(text)
    if start is not None:
        from rcpc.domain.kube.manifest_json import read_json_stream

        return _objects(read_json_stream(text, start, shown), shown)
    check_yaml_cuts(text, shown)
    limit = yaml_node_limit(len(text))
    builder = _Builder(shown, text)
    docs = []
    try:
        for i, node in enumerate(yaml.compose_all(text, Loader=_loader()), 1):
            if node is None or isinstance(node, yaml.ScalarNode) and builder.scalar(node)[0] == goyaml.NULL:
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
    if warnings is not None:
        warnings.extend(builder.warnings)
    return docs


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
