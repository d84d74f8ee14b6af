"""Path-level deltas between two versions of a render's data (docs/review.md).

A manifest is data, so "what changed" is a list of :class:`Change` at *paths*, spelled as a
user would point at a field (the spelling of ``kubectl explain`` and JSONPath, with list
items of Kubernetes objects addressed by name, as strategic merge patches merge them)::

    spec.replicatedJobs[name=proc].template.spec.template.spec.containers[name=main].env[name=ENABLE_MULTI_NUMA].value
    metadata.labels["kueue.x-k8s.io/queue-name"]
    spec.replicatedJobs[name=pw-node].template.spec.template.spec.containers[name=pathways-worker].args[2]

* a map key is ``.key`` (the first without the dot) when it is a plain identifier (letters,
  digits, ``_``, ``-``, not starting with a digit or ``-``), else ``["key"]`` (a JSON string);
* a list whose items (in both versions) are all maps with a distinct string ``name`` is
  addressed by name: ``[name=VALUE]``, VALUE bare when it has only letters, digits and
  ``_ . : / @ + -``, else a JSON string; any other list by 0-based index ``[3]``;
* in a path written in a contract, ``[*]`` is any item, and ``[N]`` of a named list means its
  item N.

Values are compared as they are written: a scalar by its type and rendered spelling (``True``
and ``true`` differ, as their bytes do), a map also by its key order, a list by its items in
order. Lists by index are aligned with :class:`difflib.SequenceMatcher`, so one inserted
item is one ``added`` change, not a change at every later index; a list or map whose items
only moved is one ``reordered`` change.

The walk serves ``rcpc diff`` and diff contracts alike (:func:`data_delta`), on data whose
flag tokens the render protocol has set apart (:func:`rcpc.domain.embedding.without_flags`:
flags are compared by key, not by path). Inputs are language values (:mod:`rcpc.core.values`,
with spans) or plain Python data (a golden file read back with ``yaml.safe_load``).
"""

from __future__ import annotations

import json
import re

from rcpc.core import record
from rcpc.core.emit.yaml import float_text, int_text
from rcpc.core.patterns import LazyPattern
from rcpc.core.values import Bool, Dict, Float, Int, List, Null, Str, equal


# paths ------------------------------------------------------------------------------------
@record.frozen
class Key:
    """A map key."""

    name: str


@record.frozen
class Index:
    """A list item by 0-based position."""

    index: int


@record.frozen
class Named:
    """An item of a list of maps, by its ``name``."""

    name: str


@record.frozen
class AnyItem:
    """``[*]``: any item of a list (declared paths only)."""


_PLAIN_KEY = LazyPattern(r"[A-Za-z_][A-Za-z0-9_-]*")
_PLAIN_NAME = LazyPattern(r"[A-Za-z0-9_.:/@+-]+")


def format_path(path: tuple) -> str:
    """The spelling of a path (a tuple of segments); ``(root)`` for the empty path."""
    out: list[str] = []
    for seg in path:
        t = type(seg)
        if t is Key:
            if _PLAIN_KEY.fullmatch(seg.name):
                out.append(("." if out else "") + seg.name)
            else:
                out.append("[" + json.dumps(seg.name, ensure_ascii=False) + "]")
        elif t is Index:
            out.append(f"[{seg.index}]")
        elif t is Named:
            name = seg.name if _PLAIN_NAME.fullmatch(seg.name) else json.dumps(seg.name, ensure_ascii=False)
            out.append(f"[name={name}]")
        else:
            out.append("[*]")
    return "".join(out) or "(root)"


class PathError(ValueError):
    """A path that cannot be parsed; ``col`` is the 1-based column of the problem."""

    def __init__(self, message: str, col: int):
        super().__init__(message)
        self.col = col


_JSON_STRING = LazyPattern(r'"(?:[^"\\]|\\.)*"')


def parse_path(text: str) -> tuple:
    """The segments of a path spelled as :func:`format_path` writes it (``[*]`` allowed).
    Raises :class:`PathError`."""
    segs: list = []
    i = 0
    n = len(text)
    if not text:
        raise PathError("the path is empty", 1)
    while i < n:
        c = text[i]
        if c == "." and segs or not segs and c != "[":
            if c == ".":
                i += 1
            m = _PLAIN_KEY.match(text, i)
            if not m:
                raise PathError("expected a key (letters, digits, '_', '-'; others as [\"key\"])", i + 1)
            segs.append(Key(m.group()))
            i = m.end()
        elif c == "[":
            start = i
            i += 1
            if text.startswith("*]", i):
                segs.append(AnyItem())
                i += 2
                continue
            m = re.compile(r"[0-9]+\]").match(text, i)
            if m:
                segs.append(Index(int(m.group()[:-1])))
                i = m.end()
                continue
            m = _JSON_STRING.match(text, i)
            if m and text.startswith("]", m.end()):
                segs.append(Key(json.loads(m.group())))
                i = m.end() + 1
                continue
            if text.startswith("name=", i):
                i += 5
                m = _JSON_STRING.match(text, i) or _PLAIN_NAME.match(text, i)
                if m and text.startswith("]", m.end()):
                    value = m.group()
                    segs.append(Named(json.loads(value) if value.startswith('"') else value))
                    i = m.end() + 1
                    continue
            raise PathError("expected [N], [name=VALUE], [\"key\"] or [*]", start + 1)
        else:
            raise PathError(f"unexpected {c!r}", i + 1)
    return tuple(segs)


# values -------------------------------------------------------------------------------------
MAP, LIST, SCALAR = "map", "list", "scalar"


def _kind(x) -> str:
    t = type(x)
    if t is Dict or t is dict:
        return MAP
    if t is List or t is list or t is tuple:
        return LIST
    return SCALAR


def _entries(x) -> dict:
    return x.items if type(x) is Dict else x


def _elems(x):
    return x.items if type(x) is List else x


def scalar_key(x):
    """A scalar's identity as rendered: its type and the spelling the YAML emitter writes."""
    t = type(x)
    if t is Str:
        return ("str", x.value)
    if t is Int:
        return ("int", int_text(x))
    if t is Float:
        return ("float", float_text(x))
    if t is Bool:
        return ("bool", x.text)
    if t is Null:
        return ("null",)
    return (type(x).__name__, x)


def deep_key(x):
    """A hashable identity of a whole value (maps keep their key order)."""
    k = _kind(x)
    if k == MAP:
        return (MAP, tuple((key, deep_key(v)) for key, v in _entries(x).items()))
    if k == LIST:
        return (LIST, tuple(deep_key(v) for v in _elems(x)))
    return scalar_key(x)


def _string(x) -> str | None:
    t = type(x)
    return x.value if t is Str else x if t is str else None


def names(x) -> list[str] | None:
    """The ``name`` of each item when every item is a map with a distinct string name."""
    out = []
    for item in _elems(x):
        if _kind(item) != MAP:
            return None
        name = _string(_entries(item).get("name"))
        if name is None:
            return None
        out.append(name)
    return out if len(set(out)) == len(out) else None


def show(x, limit: int = 80) -> str:
    """A short display of a value: strings JSON-quoted, numbers and bools as rendered, maps
    and lists in flow form, cut at ``limit`` characters."""
    k = _kind(x)
    if k == MAP:
        text = "{" + ", ".join(f"{json.dumps(key, ensure_ascii=False)}: {show(v, limit)}"
                               for key, v in _entries(x).items()) + "}"
    elif k == LIST:
        text = "[" + ", ".join(show(v, limit) for v in _elems(x)) + "]"
    else:
        key = scalar_key(x)
        if key[0] == "str":
            text = json.dumps(key[1], ensure_ascii=False)
        elif key[0] == "null":
            text = "null"
        elif type(x) in (Int, Float, Bool):
            text = key[1]
        else:
            text = json.dumps(x)
    return text if len(text) <= limit else text[:limit - 1] + "…"


_WORD = LazyPattern(r"\s+|[^\s]+")


def word_diff(a: str, b: str, context: int = 2) -> str:
    """The change from ``a`` to ``b`` word by word, as ``git diff --word-diff=plain`` writes it
    (``[-removed-]{+added+}``), keeping ``context`` words around each change and eliding the
    rest with ``…``. Newlines show as ``⏎``."""
    from difflib import SequenceMatcher

    wa, wb = _WORD.findall(a), _WORD.findall(b)
    out: list[str] = []
    ops = SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes()
    for i, (op, a1, a2, b1, b2) in enumerate(ops):
        if op == "equal":
            words = wa[a1:a2]
            keep = context * 2  # words and the spaces between them
            head = words[:keep] if i > 0 else []
            tail = words[-keep:] if i < len(ops) - 1 else []
            if len(words) > len(head) + len(tail):
                out.append("".join(head) + ("…" if head or tail else "") + "".join(tail))
            else:
                out.append("".join(words))
            continue
        if a2 > a1:
            out.append("[-" + "".join(wa[a1:a2]) + "-]")
        if b2 > b1:
            out.append("{+" + "".join(wb[b1:b2]) + "+}")
    return "".join(out).replace("\n", "⏎")


# changes --------------------------------------------------------------------------------------
@record.frozen
class Change:
    """One difference at ``path``: ``kind`` is ``changed`` (``old`` → ``new``), ``added``
    (``new``), ``removed`` (``old``) or ``reordered`` (``old``/``new``: the item order, as
    lists of keys, names or values). ``where`` is the value whose span made the new state (the
    new value, or the container that lost an item), None for plain data."""

    path: tuple
    kind: str
    old: object = None
    new: object = None
    where: object = None

    def describe(self, limit: int = 80) -> str:
        """``path: old → new`` (a long or multi-line string as a word diff)."""
        p = format_path(self.path)
        if self.kind == "added":
            return f"{p}: added {show(self.new, limit)}"
        if self.kind == "removed":
            return f"{p}: removed {show(self.old, limit)}"
        if self.kind == "reordered":
            return f"{p}: reordered {', '.join(self.old)} → {', '.join(self.new)}"
        a, b = _string(self.old), _string(self.new)
        if a is not None and b is not None and (len(a) + len(b) > limit or "\n" in a + b):
            return f"{p}: {word_diff(a, b)}"
        return f"{p}: {show(self.old, limit)} → {show(self.new, limit)}"


class _Walk:
    """One walk over two versions, collecting :class:`Change` in document order."""

    def __init__(self):
        self.changes: list[Change] = []

    def walk(self, old, new, path: tuple) -> None:
        if old is new:  # one value (variants share what no override reaches): nothing changed
            return
        ko, kn = _kind(old), _kind(new)
        if ko != kn:
            self.changes.append(Change(path, "changed", old, new, new))
        elif ko == MAP:
            self._map(old, new, path)
        elif ko == LIST:
            self._list(old, new, path)
        elif scalar_key(old) != scalar_key(new):
            self.changes.append(Change(path, "changed", old, new, new))

    def _map(self, old, new, path: tuple) -> None:
        self._pairs(_entries(old), _entries(new), Key, new, path)

    def _pairs(self, a: dict, b: dict, segment, new, path: tuple) -> None:
        """Items matched by key (a map) or by name (a named list): ``segment`` makes the path
        step; ``new`` is the container in the new version."""
        common_a = [k for k in a if k in b]
        common_b = [k for k in b if k in a]
        if common_a != common_b:
            self.changes.append(Change(path, "reordered", common_a, common_b, new))
        for k, v in a.items():
            if k not in b:
                self.changes.append(Change(path + (segment(k),), "removed", v, None, new))
            else:
                self.walk(v, b[k], path + (segment(k),))
        for k, v in b.items():
            if k not in a:
                self.changes.append(Change(path + (segment(k),), "added", None, v, v))

    def _list(self, old, new, path: tuple) -> None:
        a, b = list(_elems(old)), list(_elems(new))
        na, nb = names(a), names(b)
        if na is not None and nb is not None and (a or b):
            self._pairs(dict(zip(na, a)), dict(zip(nb, b)), Named, new, path)
            return
        ia, ib = list(range(len(a))), list(range(len(b)))
        ka, kb = [deep_key(a[i]) for i in ia], [deep_key(b[j]) for j in ib]
        if ka == kb:
            return
        if sorted(ka, key=repr) == sorted(kb, key=repr):
            self.changes.append(Change(path, "reordered", [show(a[i], 40) for i in ia],
                                       [show(b[j], 40) for j in ib], new))
            return
        from difflib import SequenceMatcher

        for op, a1, a2, b1, b2 in SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes():
            if op == "equal":
                continue
            pairs = min(a2 - a1, b2 - b1)
            for k in range(pairs):
                i, j = ia[a1 + k], ib[b1 + k]
                self.walk(a[i], b[j], path + (Index(j),))
            for k in range(a1 + pairs, a2):
                self.changes.append(Change(path + (Index(ia[k]),), "removed", a[ia[k]], None, new))
            for k in range(b1 + pairs, b2):
                self.changes.append(Change(path + (Index(ib[k]),), "added", None, b[ib[k]], b[ib[k]]))


def data_delta(old, new) -> list[Change]:
    """Every change from ``old`` to ``new`` (see the module docstring), in document order."""
    w = _Walk()
    w.walk(old, new, ())
    return w.changes


def _item(item_names: list | None, j: int):
    """The path step to item ``j`` of a list whose items have ``item_names`` (None: unnamed)."""
    return Named(item_names[j]) if item_names is not None else Index(j)


_ABSENT = object()  # no node where a path step leads


def _child(node, seg):
    """The node path step ``seg`` (a :class:`Key`, :class:`Named` or :class:`Index`) leads to
    from ``node``; :data:`_ABSENT` when there is none (a missing key, no such item, a step of
    another kind than the node)."""
    k = _kind(node)
    if type(seg) is Key:
        return _entries(node).get(seg.name, _ABSENT) if k == MAP else _ABSENT
    if k != LIST:
        return _ABSENT
    items = list(_elems(node))
    if type(seg) is Index:
        return items[seg.index] if 0 <= seg.index < len(items) else _ABSENT
    item_names = names(items) if items else None
    return items[item_names.index(seg.name)] if item_names is not None and seg.name in item_names else _ABSENT


# declared paths -------------------------------------------------------------------------------
def resolve(path: tuple, data) -> list[tuple]:
    """The canonical paths (as :func:`data_delta` spells them) that a declared ``path`` names
    in ``data``: ``[N]`` of a named list becomes ``[name=...]``, ``[*]`` every item. Empty
    when the path names nothing in ``data``."""
    found: list[tuple] = []

    def go(node, i: int, canon: tuple):
        if i == len(path):
            found.append(canon)
            return
        seg = path[i]
        if type(seg) in (Key, Named):
            child = _child(node, seg)
            if child is not _ABSENT:
                go(child, i + 1, canon + (seg,))
            return
        if _kind(node) != LIST:
            return
        items = list(_elems(node))
        item_names = names(items) if items else None
        chosen = range(len(items)) if type(seg) is AnyItem else [seg.index] if seg.index < len(items) else []
        for j in chosen:
            go(items[j], i + 1, canon + (_item(item_names, j),))

    go(data, 0, ())
    return found


def made_in(data, path: tuple, where) -> tuple:
    """The calls that made the value at ``path`` (canonical, as :func:`data_delta` spells it)
    in ``data``, found from the dicts holding it, for a value that keeps no call chain of its
    own (a string, a list, a number): the ``why`` (:meth:`rcpc.core.evaluate.Context.called`:
    each call site, innermost first) of the innermost dict holding it whose own text holds
    ``where`` (the value's span: written in that dict, so made by the same call); ``()`` when
    no dict made inside a call holds it so (a value made elsewhere and passed in: its maker's
    calls are not known, and the dict's would not be its)."""
    nodes = [data]  # the nodes along the path, from the root
    for seg in path:
        node = _child(nodes[-1], seg)
        if node is _ABSENT:
            break
        nodes.append(node)
    found = next((n.why for n in reversed(nodes) if getattr(n, "why", ()) and getattr(n, "span", None) is not None
                  and where is not None and _within(where, n.span)), ())
    return tuple(w for w in found if w[1] is None)  # the calls (a conditional's entry says what chose a layer)


def _within(inner, outer) -> bool:
    """Whether span ``inner`` lies in span ``outer`` (one file)."""
    return (inner.path == outer.path and (outer.line, outer.col) <= (inner.line, inner.col)
            and (inner.end_line, inner.end_col) <= (outer.end_line, outer.end_col))


def all_paths(data, limit: int = 5000) -> list[str]:
    """The spelled path of every node of ``data`` (for did-you-mean hints), at most ``limit``."""
    out: list[str] = []

    def go(node, path: tuple):
        if len(out) >= limit:
            return
        if path:
            out.append(format_path(path))
        k = _kind(node)
        if k == MAP:
            for key, v in _entries(node).items():
                go(v, path + (Key(key),))
        elif k == LIST:
            items = list(_elems(node))
            item_names = names(items) if items else None
            for j, v in enumerate(items):
                go(v, path + (_item(item_names, j),))

    go(data, ())
    return out


def covered(path: tuple, declared: list[tuple]) -> bool:
    """Whether ``path`` is at or under one of the ``declared`` canonical paths."""
    return any(path[:len(d)] == d for d in declared)
