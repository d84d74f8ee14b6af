"""Where a render carries MaxText flag sets: the one walk every check asks (docs/architecture.md,
"The render protocol").

A render kind declares its data (:attr:`rcpc.domain.renders.RenderKind.data`: a manifest's
document, a command file's argv, a flag file's tokens). Strings made from a flag set's
``.argv`` and ``.shell`` carry pieces naming the tokens they hold (:mod:`rcpc.domain.provenance`),
through f-strings, ``+``, ``join`` and ``replace``, so the flag sets of any render are found in
its data, whatever shape the recipe or a library function gave it:

* **argv form** — a run of list items, each one whole token of one flag set (``args:
  FLAGS.argv``, a flag file's lines, a command file's words);
* **shell form** — tokens inside one string (``bash -c`` text, ``--command=...`` of a launch
  command), each flag set of the string one embedding.

An :class:`Embedding` says which flag set, where (a path spelled as :mod:`rcpc.domain.delta`
spells it), in which form, the tokens as written, and the Kubernetes container whose
``command`` or ``args`` hold it (for the launch checks: its env, its pod's TPU slice). In a
container's ``command`` and ``args`` Kubernetes expands ``$(VAR)`` and ``$$`` before the
process starts (:mod:`rcpc.domain.kube.expansion`): :meth:`Embedding.seen` is the flag set with
each value as the container receives it, so every check, contract, diff and explain reads
what MaxText reads. Each value is expanded on its own; a ``$(`` left open in one value that a
later token's ``)`` would close is read as kept (no flag value of a real recipe holds one).

:func:`without_flags` is the other half of the protocol: the data with each run of flag
tokens replaced by one marker, so that a contract or a diff compares what is not flags by
path, and the flags by key.
"""

from __future__ import annotations

from rcpc.core import record
from rcpc.core.values import Dict, List, Str
from rcpc.domain.maxtext.emit import shell_quote, token
from rcpc.domain.maxtext.flagset import flag_delta
from rcpc.domain.provenance import FlagToken
from rcpc.domain.delta import Index, Key, Named, names
from rcpc.domain.kube.expansion import container_env, expand
from rcpc.domain.values import FlagEntry, FlagLayer, FlagSet

MARKER = "\0maxtext_flags\0"  # stands for one run of flag tokens in without_flags (no token holds NUL)
_SHOWN = "{maxtext flags}"   # how a marker reads in a message
_CONTAINER_LISTS = ("containers", "initContainers")  # a pod spec's container lists (Kubernetes PodSpec)
_EXPANDED = ("command", "args")  # a container's fields the kubelet expands with its env (ExpandContainerCommandAndArgs)


@record.frozen
class Embedding:
    """One place a render carries tokens of one flag set (see the module docstring). ``path``
    is the list (argv form) or the string (shell form); ``tokens``:
    ((:class:`~rcpc.domain.provenance.FlagToken`, token text), ...) in the order written;
    ``container``: the container dict whose ``command``/``args`` hold them, else None."""

    flags: FlagSet
    path: tuple
    form: str
    tokens: tuple
    container: object = None
    wrapper: str = MARKER  # argv form: each item's text around its token (MARKER: the token alone)
    env: tuple = ()  # ((name, value), ...): the env Kubernetes expands the tokens with (command/args)

    def received(self, entry: FlagEntry) -> FlagEntry:
        """``entry`` (one of the tokens') as the process receives it: a string value with
        ``$(VAR)`` or ``$$`` expanded by Kubernetes (:func:`rcpc.domain.kube.expansion.expand`
        with :attr:`env`); ``entry`` itself when expansion leaves it as written."""
        v = entry.value
        if not self.env or type(v) is not Str or "$" not in v.value:
            return entry
        text = expand(v.value, dict(self.env))
        return entry if text == v.value else record.evolve(entry, value=Str(text, v.span))

    def seen(self) -> FlagSet:
        """The flag set MaxText reads here: the tokens' entries in the order written, as the
        process receives them (:meth:`received`), one layer for each run of one layer
        (``flags`` itself when the tokens are all of its entries, in order, none changed by
        expansion: the common case, and the identity launch checks are kept by)."""
        entries = [self.received(t.entry) for t, _ in self.tokens]
        mine = [e for layer in self.flags.layers for e in layer.entries]
        if len(entries) == len(mine) and all(a is b for a, b in zip(entries, mine)):
            return self.flags
        layers: list[FlagLayer] = []
        run: list = []
        last = None
        for (t, _), entry in zip(self.tokens, entries):
            if run and t.layer != last:
                layers.append(FlagLayer(tuple(run), self.flags.layers[last - 1].span, self.flags.layers[last - 1].why))
                run = []
            run.append(entry)
            last = t.layer
        if run:
            layers.append(FlagLayer(tuple(run), self.flags.layers[last - 1].span, self.flags.layers[last - 1].why))
        return FlagSet(tuple(layers), self.flags.span, self.flags.schema, self.flags.acknowledged)

    def keys(self) -> list[str]:
        """The flag keys of the tokens, each once, in order."""
        return list(dict.fromkeys(t.key for t, _ in self.tokens))


def _item_token(x) -> tuple | None:
    """(FlagToken, the item's text with the token as :data:`MARKER`) of a list item holding
    exactly one token of ``.argv`` (the item itself, or ``f"--maxtext={t}"`` for each ``t`` of
    it); None for any other item (a string of the ``.shell`` form is the shell form, however
    many tokens it holds)."""
    if type(x) is Str and len(x.pieces) == 1:
        a, b, origin = x.pieces[0]
        if origin.form == "argv":
            return origin, x.value[:a] + MARKER + x.value[b:]
    return None


_SHARED = 32  # values of at least this many items (Dict.size) are kept in embeddings' memo


def embeddings(data, memo: dict | None = None) -> list[Embedding]:
    """Every :class:`Embedding` in ``data`` (a language value: dicts, lists, strings with
    pieces), in document order. ``memo`` keeps, across calls, what is found under each large
    value by its identity (and the container around it): renders share values (every rollout
    replica's pod spec is one value, in every variant that does not change it)."""
    out: list[Embedding] = []
    _walk(data, (), None, {} if memo is None else memo, out)
    return out


def _walk(v, path: tuple, container, memo: dict, out: list) -> None:
    """The embeddings of ``v`` appended to ``out``; ``path`` is the trail to ``v`` (see
    :func:`_path`): the walk visits every item, and few hold a flag token, so a place is made
    only where an embedding is found."""
    t = type(v)
    if t is Str:
        if v.pieces:
            out.extend(_in_string(v, _path(path), container))
        return
    if t is not Dict and t is not List or not v.has_pieces:  # no token in it: nothing to find
        return
    if v.size < _SHARED:
        _children(v, path, container, memo, out)
        return
    key = (id(v), container if type(container) is str else id(container))
    hit = memo.get(key)
    if hit is None or hit[0] is not v:
        found: list[Embedding] = []
        _children(v, (), container, memo, found)
        hit = memo[key] = (v, found, container)  # the container is held: its id stays its own
    if path and hit[1]:
        where = _path(path)
        out.extend([record.evolve(e, path=where + e.path) for e in hit[1]])
    else:
        out.extend(hit[1])


def _path(trail: tuple) -> tuple:
    """The place (a path as :mod:`rcpc.domain.delta` spells it) of a trail of the walk: ``()``,
    or ``(the parent's trail, step)`` where a step is a dict key (a ``str``: :class:`Key`) or
    ``(items, i)``, item ``i`` of a list's items (:class:`Named` by its name when
    :func:`~rcpc.domain.delta.names` names every item, else :class:`Index`)."""
    steps = []
    while trail:
        trail, step = trail
        steps.append(step)
    out = []
    for step in reversed(steps):
        if type(step) is str:
            out.append(Key(step))
        else:
            items, i = step
            item_names = names(items)
            out.append(Named(item_names[i]) if item_names is not None else Index(i))
    return tuple(out)


def _children(v, path: tuple, container, memo: dict, out: list) -> None:
    if type(v) is Dict:
        env = None
        for k, x in v.items.items():
            kind = type(x)
            if kind is Str:
                if not x.pieces:  # most items: a string that holds no token (not walked)
                    continue
            elif kind is List:
                if not x.has_pieces:
                    continue
                if k in _CONTAINER_LISTS:
                    _walk(x, (path, k), "pod", memo, out)
                    continue
            elif kind is not Dict or not x.has_pieces:  # a dict without a token: nothing to find
                continue
            start = len(out)
            _walk(x, (path, k), container, memo, out)
            if v is container and k in _EXPANDED and len(out) > start:
                env = tuple(sorted((n, t) for n, t in container_env(v).items() if t is not None)) \
                    if env is None else env
                if env:
                    out[start:] = [record.evolve(e, env=env) for e in out[start:]]
        return
    _in_list(v, path, container, memo, out)


def _in_list(v: List, path: tuple, container, memo: dict, out: list) -> None:
    """The embeddings of list ``v`` (at trail ``path``) in order: argv-form runs of items each
    holding one token of one flag set in one wrapper, and those found in its other items."""
    items = v.items
    run: list = []  # ((FlagToken, token text), wrapper) of the run being read

    def close():
        if run:
            out.append(Embedding(run[0][0][0].flags, _path(path), "argv", tuple(t for t, _ in run), _own(container),
                                 run[0][1]))
            run.clear()

    for i, x in enumerate(items):
        kind = type(x)
        held = _item_token(x) if kind is Str and x.pieces else None
        if held is not None:
            origin, wrapper = held
            if run and (run[-1][0][0].flags is not origin.flags or run[-1][1] != wrapper):
                close()
            a, b, _ = x.pieces[0]
            run.append(((origin, x.value[a:b]), wrapper))
            continue
        close()
        if kind is Dict or kind is List or (kind is Str and x.pieces):
            inner = (x if type(x) is Dict else None) if container == "pod" else container
            _walk(x, (path, (items, i)), inner, memo, out)
    close()


def _own(container):
    return None if container == "pod" else container


def _in_string(s: Str, path: tuple, container) -> list[Embedding]:
    if not s.pieces:
        return []
    by_set: dict[int, list] = {}
    for a, b, origin in s.pieces:
        by_set.setdefault(id(origin.flags), []).append((origin, s.value[a:b]))
    return [Embedding(tokens[0][0].flags, path, "shell", tuple(tokens), _own(container)) for tokens in by_set.values()]


def without_flags(data):
    """``data`` with every run of flag tokens replaced by :data:`MARKER`: in a list, a run of
    items each holding one token of one flag set in one wrapper becomes one item (the
    wrapper); in a string, a run of one flag set's pieces joined by single spaces becomes one
    marker. Values that hold no token are kept as they are (shared, so comparing two versions
    skips what they share)."""
    t = type(data)
    if t is Str:
        return _string_without(data) if data.pieces else data
    if (t is Dict or t is List) and not data.has_pieces:  # no token in it: kept as it is
        return data
    if t is Dict:
        items = {k: without_flags(x) for k, x in data.items.items()}
        if all(items[k] is x for k, x in data.items.items()):
            return data
        return Dict(items, data.key_spans, data.span, data.why)
    if t is List:
        out: list = []
        last = None  # (flag set, wrapper) of the run of token items being replaced
        changed = False
        for x in data.items:
            held = _item_token(x)
            if held is not None:
                changed = True
                key = (held[0].flags, held[1])
                if last is None or last[0] is not key[0] or last[1] != key[1]:
                    out.append(Str(held[1], x.span))
                last = key
                continue
            last = None
            y = without_flags(x)
            changed = changed or y is not x
            out.append(y)
        return List(tuple(out), data.span) if changed else data
    return data


def with_layer(data, fs: FlagSet, grown: FlagSet):
    """``data`` with every embedding of flag set ``fs`` carrying ``grown`` instead, ``fs``'s
    layers and then one more (``--flag RENDER.KEY=VALUE``, :mod:`rcpc.domain.flag_overrides`):
    each token of ``fs`` now names ``grown``, and the tokens of ``grown``'s last layer are
    written right after each run of ``fs``'s tokens, in that run's form (an argv run: one item
    each, in the run's wrapper; a string: after the run's last token, joined by a space and
    shell-quoted when the run was), so MaxText, which keeps the last value of a repeated key,
    reads them last. Values that hold no token of ``fs`` are kept as they are."""
    extra = [(token(e.key, e.value), FlagToken(e.key, len(grown.layers), e, grown.layers[-1].why, grown))
             for e in grown.layers[-1].entries]

    def walk(v):
        t = type(v)
        if t is Str:
            return _string_with(v, fs, grown, extra) if v.pieces else v
        if t is Dict:
            items = {k: walk(x) for k, x in v.items.items()}
            return v if all(items[k] is x for k, x in v.items.items()) else Dict(items, v.key_spans, v.span, v.why)
        if t is List:
            out: list = []
            for i, x in enumerate(v.items):
                held = _item_token(x)
                if held is not None and held[0].flags is fs:
                    out.append(_repoint(x, fs, grown))
                    after = _item_token(v.items[i + 1]) if i + 1 < len(v.items) else None
                    if after is None or after[0].flags is not fs or after[1] != held[1]:  # the run ends here
                        for text, origin in extra:
                            a = held[1].index(MARKER)
                            out.append(Str(held[1].replace(MARKER, text), x.span, ((a, a + len(text), origin),)))
                    continue
                out.append(walk(x))
            return v if len(out) == len(v.items) and all(a is b for a, b in zip(out, v.items)) else \
                List(tuple(out), v.span)
        return v

    return walk(data)


def _repoint(s: Str, fs: FlagSet, grown: FlagSet) -> Str:
    """``s`` with its pieces of ``fs`` naming ``grown``."""
    return Str(s.value, s.span, tuple((a, b, record.evolve(o, flags=grown) if o.flags is fs else o)
                                      for a, b, o in s.pieces))


def _string_with(s: Str, fs: FlagSet, grown: FlagSet, extra: list) -> Str:
    """:func:`with_layer` of one string: ``extra``'s tokens after each run of ``fs``'s pieces
    (pieces adjacent or one space apart)."""
    if not any(o.flags is fs for _, _, o in s.pieces):
        return s
    text, out, pieces, at = s.value, [], [], 0
    shift = 0
    for i, (a, b, o) in enumerate(s.pieces):
        pieces.append((a + shift, b + shift, record.evolve(o, flags=grown) if o.flags is fs else o))
        nxt = s.pieces[i + 1] if i + 1 < len(s.pieces) else None
        ends = o.flags is fs and (nxt is None or nxt[2].flags is not fs or nxt[0] not in (b, b + 1)
                                  or nxt[0] == b + 1 and text[b] != " ")
        if not ends:
            continue
        out.append(text[at:b])
        at = b
        for tok, origin in extra:
            written = shell_quote(tok) if o.form == "shell" else tok
            start = b + shift + 1
            out.append(" " + written)
            pieces.append((start, start + len(written), record.evolve(origin, form=o.form)))
            shift += 1 + len(written)
    out.append(text[at:])
    return Str("".join(out), s.span, tuple(pieces))


def _string_without(s: Str) -> Str:
    text = s.value
    out: list[str] = []
    at = 0
    last = None  # (end, flag set) of the run being replaced
    for a, b, origin in s.pieces:
        if last is not None and last[1] is origin.flags and (a == last[0] or a == last[0] + 1 and text[last[0]] == " "):
            at = b
            last = (b, origin.flags)
            continue
        out.append(text[at:a])
        out.append(MARKER)
        at = b
        last = (b, origin.flags)
    out.append(text[at:])
    return Str("".join(out), s.span)


def readable(text: str) -> str:
    """``text`` (a description of data :func:`without_flags` made) with each marker, raw or
    JSON-escaped, written as ``{maxtext flags}``."""
    return text.replace(MARKER, _SHOWN).replace("\\u0000maxtext_flags\\u0000", _SHOWN)


def match(old: list[Embedding], new: list[Embedding]) -> list[tuple]:
    """Pairs (old, new) of the embeddings of two versions of a render that are at one place:
    the same path and form, the n-th of them there; an embedding with no partner is paired
    with None."""
    def keyed(found):
        out, seen = {}, {}
        for e in found:
            k = (e.path, e.form)
            n = seen[k] = seen.get(k, -1) + 1
            out[(*k, n)] = e
        return out

    a, b = keyed(old), keyed(new)
    return [(a.get(k), b.get(k)) for k in [*a, *(k for k in b if k not in a)]]


@record.frozen
class FlagDelta:
    """What changed between two versions of one embedding: ``changes``, each key whose
    effective value differs (:class:`~rcpc.domain.maxtext.flagset.FlagChange`), and ``ineffective``,
    (key, old token texts, new token texts, the FlagToken written last) of each key whose
    tokens differ while its effective value does not."""

    changes: tuple
    ineffective: tuple


def delta(old: Embedding | None, new: Embedding | None) -> FlagDelta:
    """The :class:`FlagDelta` of two versions of one embedding (either None when it is only in
    the other version: every key of the other then changes)."""

    empty = FlagSet((), (new or old).flags.span, (new or old).flags.schema)
    changes = flag_delta(old.seen() if old else empty, new.seen() if new else empty)
    changed = {c.key for c in changes}
    ineffective = []
    if old is not None and new is not None:
        for key in dict.fromkeys([*old.keys(), *new.keys()]):
            a = [text for t, text in old.tokens if t.key == key]
            b = [(t, text) for t, text in new.tokens if t.key == key]
            if a != [text for _, text in b] and key not in changed:
                ineffective.append((key, tuple(a), tuple(text for _, text in b), b[-1][0] if b else None))
    return FlagDelta(tuple(changes), tuple(ineffective))
