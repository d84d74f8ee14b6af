"""The diagnostics of an import's own build, at the user's input file.

``rcpc import`` builds the recipe it made in a temporary file, removed before rcpc exits: a
diagnostic there names a file the user cannot open. :func:`relocate` moves each place in
that file to the place of the input it came from:

1. a span on a param's declaration (its default: the value the finding is about) to the
   param's first place in the input (``placeholder(name)``);
2. a Kubernetes finding (``Kind spec.path: message``, :mod:`rcpc.domain.kube.paths`) to
   the template's node at that path (the render equals the template, so the path is the
   template's), an unknown field to its key;
3. a span on a ``"key": value`` entry (a MaxText flag, an XLA flag) to the input's
   ``key=`` word (``word(key)``);
4. anything else to the input's ``fallback`` place, with the recipe line in a note.

Spans in other files (the shared library the recipe loads) stay: the user has those. A
note naming the temporary recipe is replaced by one saying the build was the import's.
"""

from __future__ import annotations

import re

from rcpc.core import record
from rcpc.core.diagnostics import Diagnostic
from rcpc.core.source import Span
from rcpc.core.values import Dict, List

_ENTRY = re.compile(r'\s*"([^"]+)"\s*:')
_DECLARED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*) = param\(")
_TOP = re.compile(r"[A-Za-z_]")


class Places:
    """Where the input says what the recipe (``text``, shown as ``shown`` in diagnostics)
    says: ``doc`` the template's document as values with spans (None for a shell file),
    ``placeholder(name)`` / ``word(key)`` the input's span of a param / a flag's word (or
    None), ``fallback`` the span for anything else."""

    def __init__(self, text: str, shown: str, doc, placeholder, word, fallback: Span):
        self.lines = text.splitlines()
        self.shown = shown
        self.doc = doc
        self.placeholder = placeholder
        self.word = word
        self.fallback = fallback

    def ours(self, span: Span | None) -> bool:
        """Whether ``span`` is in the import's temporary recipe."""
        return span is not None and span.path == self.shown

    def of_param(self, line: int) -> Span | None:
        """Rule 1: the input's place of the param whose declaration recipe line ``line`` is
        part of, or None."""
        for i in range(min(line, len(self.lines)) - 1, -1, -1):  # the top-level statement of the line
            if _TOP.match(self.lines[i]):
                declared = _DECLARED.match(self.lines[i])
                return self.placeholder(declared.group(1)) if declared else None
        return None

    def of_entry(self, line: int) -> Span | None:
        """Rule 3: the input's ``key=`` word of the ``"key": value`` entry on recipe line
        ``line``, or None."""
        entry = _ENTRY.match(self.lines[line - 1]) if 0 < line <= len(self.lines) else None
        return self.word(entry.group(1)) if entry else None

    def of_line(self, line: int) -> Span | None:
        """The input's place of recipe line ``line`` by rules 1 and 3, or None."""
        return self.of_param(line) or self.of_entry(line)

    def of_message(self, message: str) -> Span | None:
        """Rule 2: the template's span of the path a Kubernetes finding names, or None."""
        if self.doc is None:
            return None
        kind = str(getattr(self.doc.items.get("kind"), "value", ""))
        head = f"{kind} "
        if not message.startswith(head) or ": " not in message:
            return None
        return at_path(self.doc, message[len(head):], message)


def at_path(doc, rest: str, message: str = "") -> Span | None:
    """The span of the deepest node of ``doc`` that a manifest path at the start of
    ``rest`` (``spec.replicatedJobs[0].replicas: ...``) reaches, its keys matched against
    the node's own (a key may hold dots: ``cloud.google.com/gke-tpu-topology``); an unknown
    field (``unknown field 'k'``) at its key."""
    node, span, i = doc, None, 0
    while i < len(rest) and not rest.startswith(": ", i):
        if type(node) is List and rest.startswith("[", i):
            end = rest.find("]", i)
            index = rest[i + 1:end]
            if end < 0 or not index.isdigit() or int(index) >= len(node.items):
                break
            node = node.items[int(index)]
            span, i = node.span, end + 1
        elif type(node) is Dict:
            i += rest.startswith(".", i)
            keys = sorted((k for k in node.items if rest.startswith(k, i) and
                           (rest.startswith((".", "[", ": "), i + len(k)) or i + len(k) == len(rest))),
                          key=len, reverse=True)
            if not keys:
                break
            unknown = re.search(r"unknown field '([^']*)'", message)
            if unknown and rest.startswith(": ", i + len(keys[0])) and keys[0] == unknown.group(1):
                return node.key_spans.get(keys[0], node.span)
            node = node.items[keys[0]]
            span, i = node.span, i + len(keys[0])
        else:
            break
    return span


def relocate(diagnostics, places: Places, note: str, hint: str) -> list:
    """``diagnostics`` with every place in the import's recipe moved to the input (see the
    module docstring), ``note`` added (how the recipe was built), ``hint`` given to those
    that have none."""
    out = []
    for d in diagnostics:
        lines = []
        span = d.span
        if places.ours(span):
            found = places.of_param(span.line) or places.of_message(d.message) or places.of_entry(span.line)
            if found is None:
                lines.append(span.line)
                found = places.fallback
            span = found
        related = []
        for label, s in d.related:
            if s is not None and s.path.startswith("<"):  # the import's own --set values: no place
                continue
            if places.ours(s):
                s = places.of_line(s.line)
                if s is None or s == span:
                    continue
            related.append((label, s))
        notes = [n for n in d.notes if places.shown.removesuffix(".rcp") not in n]
        notes += [f"the recipe's line {n}: {places.lines[n - 1].strip()[:120]}" for n in lines
                  if 0 < n <= len(places.lines)]
        out.append(record.evolve(d, span=span, related=tuple(related), notes=tuple(notes) + (note,),
                                 hint=d.hint or hint))
    return out


def spans(d: Diagnostic) -> list:
    """The primary and related spans of ``d``."""
    return ([d.span] if d.span is not None else []) + [s for _, s in d.related]
