"""The fast paths of the render checks and emitters agree with the straightforward code they
replace, over a value space.

* :func:`rcpc.domain.kube.rules._walk` visits only dicts and lists and checks a dict only when a
  rule may apply (:data:`~rcpc.domain.kube.rules._RULE_KEYS`, ``_RULE_STEPS``);
  :func:`rcpc.domain.kube.schema._walk_lists` skips scalars and values whose schema marks
  no list type below (:func:`~rcpc.domain.kube.schema._marks_lists`, memoized per schema
  node). Reference: the walks as they were, visiting every value and checking every dict.
  Both remember large values found clean (the session's tables ``kube.CLEAN`` and
  ``kube_schema.CLEAN``, by identity, last path step, metadata and schema node). Manifests are drawn along the bundled JobSet schema (so that pod specs,
  containers, env lists and list-map keys come up), with small pools of names and scalars
  (so that duplicates, bad names and TPU requests come up), plus stray fields; and drawn
  again reusing values already drawn at other places, and checked twice.
* :meth:`rcpc.core.evaluate.Evaluator._list` and ``_dict`` make literal items (and string
  literal keys) themselves instead of through ``eval``, short of the depth limit. Reference:
  both as they were, every item through ``eval``; compared on everything a value records
  (spans, spellings, sizes, provenance) and on the errors (E0301, E0302, E0801).
* :func:`rcpc.domain.embedding.embeddings` keeps what it finds under large shared values, and
  makes the place of an item only where it finds an embedding (a trail of keys and list
  positions until then). Reference: the walk as it was (no memo, each item's place made as it
  is visited), over manifests drawn along the JobSet schema.
* :func:`rcpc.core.values._check_size` adds the items' weights in a loop. Reference:
  ``1 + sum(weight(item))``, on every container of a value (shared ones too).
* :func:`rcpc.domain.maxtext.emit.value_text` finds a lone surrogate with a regex. Reference:
  the first one a character-by-character scan finds.
* :func:`rcpc.core.emit.yaml.emit_document` memoizes keys and the lines of large dicts and
  lists by identity and indent, and writes plain strings without going through ``_inline``.
  Reference: the emitter as it was, on documents that hold one value at several places and
  indents, emitted again (from the memos).
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rcpc.core import evaluate as E, record
from rcpc.core.diagnostics import CompileError, error
from rcpc.core.session import Session
from rcpc.core.emit import yaml as Y
from rcpc.core.limits import MAX_DEPTH
from rcpc.core.syntax import ast
from rcpc.core.emit.scalars import double_quoted, plain_ok, quoted
from rcpc.core.source import Span
from rcpc.core.values import Bool, Dict, Float, Int, List, Null, Str, text_of, type_name, weight
from rcpc.domain import launch
from rcpc.domain.kube import rules as kube, schema as kube_schema
from rcpc.domain.maxtext import emit as flags
from rcpc.domain.tpu import tpu_slice
from rcpc.domain.kube.paths import CONTAINER_LISTS
from test_yaml_emit import DOCS
from conftest import Ws, value_of

SCHEMA = kube_schema.builtin_jobset_schema()


# reference walks (as they were before the fast paths) -------------------------------------------
def ref_walk(v, path, kind, out, meta, core_lists, clean=None):
    if type(v) is List:
        for i, x in enumerate(v.items):
            ref_walk(x, path + (i,), kind, out, None, core_lists)
        return
    if type(v) is not Dict:
        return
    kube._check_node(v, path, kind, out, meta, core_lists)  # every rule, on every dict
    for k, x in v.items.items():
        ref_walk(x, path + (k,), kind, out, v.items.get("metadata") if k == "spec" else None, core_lists)


def ref_walk_lists(v, s, path, kind, out, memo=None):
    if not isinstance(s, dict):
        return
    if type(v) is Dict:
        props = s.get("properties") or {}
        extra = s.get("additionalProperties")
        for k, x in v.items.items():
            ref_walk_lists(x, props.get(k, extra), path + (k,), kind, out)
    elif type(v) is List:
        items = s.get("items")
        list_type = s.get("x-kubernetes-list-type")
        if list_type == "map" and (not path or path[-1] not in CONTAINER_LISTS):
            kube_schema._list_map(v, items if isinstance(items, dict) else {},
                                  s.get("x-kubernetes-list-map-keys") or [], path, kind, out)
        elif list_type == "set":
            seen: dict = {}
            for i, x in enumerate(v.items):
                key = kube_schema._scalar_key(x)
                if key in seen:
                    shown = repr(x.value) if type(x) is Str else kube_schema.text_of(x)
                    out.append(kube_schema._diag("E1010", kind, path + (i,), f"{shown} is repeated in "
                                                 f"{path[-1] if path else 'a list'}, a set", x.span,
                                                 related=(("first here", seen[key]),), hint="list each item once"))
                seen.setdefault(key, x.span)
        for i, x in enumerate(v.items):
            ref_walk_lists(x, items, path + (i,), kind, out)


def with_reference(fn, *args):
    """``fn(*args)`` with the reference walks in place of the fast ones."""
    saved = kube._walk, kube_schema._walk_lists
    kube._walk, kube_schema._walk_lists = ref_walk, ref_walk_lists
    try:
        return fn(*args)
    finally:
        kube._walk, kube_schema._walk_lists = saved


def shown(diags) -> list:
    return [(d.code, d.message, d.span, d.severity, d.hint, d.related) for d in diags]


# manifests along the JobSet schema --------------------------------------------------------------
def ref_marked(s, depth=0) -> bool:
    """Whether a map or set list type is anywhere below schema ``s`` (to steer the drawing)."""
    if not isinstance(s, dict) or depth > 40:
        return False
    if s.get("x-kubernetes-list-type") in ("map", "set"):
        return True
    below = [*(s.get("properties") or {}).values(), s.get("additionalProperties"), s.get("items")]
    return any(ref_marked(x, depth + 1) for x in below)


NAMES = ["main", "main", "side", "Bad_Name", "x" * 70, "", "/a", "/a", "TCP", "UDP"]
SCALARS = st.one_of(st.sampled_from(NAMES), st.sampled_from([0, 1, 1, 2, 8, -1, 4.5, None, True]))
LABEL_KEYS = st.sampled_from(["app", "bad key!", "cloud.google.com/gke-tpu-accelerator",
                              "cloud.google.com/gke-tpu-topology", "google.com/tpu",
                              "cloud.google.com/gke-tpu-slice-topology", "a/b/c", "x" * 64])
LABEL_VALUES = st.one_of(st.sampled_from(["tpu-v5-lite-podslice", "tpu-v6e-slice", "2x4", "4x4", "1x1", "4",
                                          "8", "ok", "bad value!", "y" * 64]), SCALARS)
STRAY = st.sampled_from(["nodeSelector", "matchLabels", "env", "exec", "command", "template", "resources",
                         "limits", "requests", "metadata", "labels", "annotations", "parallelism",
                         "containers", "spec", "value", "name"])


LEAF = st.one_of(SCALARS, st.just({}), st.just([]))
STRING_LEAF = st.one_of(st.sampled_from(NAMES), LABEL_VALUES)
_KEY_STRATEGIES: dict = {}


def key_strategies(props: dict):
    """(a marked key, or None; up to 3 of the keys) of a schema node's ``properties``, made
    once per node: Hypothesis validates every strategy made, and making these on every draw
    (and a composite strategy for every value drawn) was most of this file's time."""
    found = _KEY_STRATEGIES.get(id(props))
    if found is None:
        marked = sorted(k for k, x in props.items() if ref_marked(x))
        found = _KEY_STRATEGIES[id(props)] = (props, st.sampled_from(marked) if marked else None,
                                              st.lists(st.sampled_from(sorted(props)), max_size=3, unique=True))
    return found[1:]


def draw_along(draw, s, depth=0):
    """A plain value drawn along schema ``s``: mostly what it describes, sometimes not."""
    if not isinstance(s, dict) or depth > 16 or draw(st.integers(0, 60)) == 0:
        return draw(LEAF)
    props = s.get("properties") or {}
    extra = s.get("additionalProperties")
    if props:
        marked, some = key_strategies(props)
        keys = [draw(marked)] if marked is not None else []  # on towards the list rules
        keys += [k for k in ("name", "value", "containerPort") if k in props and draw(st.integers(0, 3))]
        keys += [k for k in draw(some) if k not in keys]
        out = {k: draw_along(draw, props[k], depth + 1) for k in keys}
        if draw(st.integers(0, 4)) == 0:
            k = draw(STRAY)
            out[k] = draw_along(draw, props.get(k, s), depth + 1)
        return out
    if isinstance(extra, dict):
        return {draw(LABEL_KEYS): draw_along(draw, extra, depth + 1) for _ in range(draw(st.integers(0, 3)))}
    if s.get("type") == "array" or "items" in s:
        return [draw_along(draw, s.get("items"), depth + 1) for _ in range(draw(st.integers(0, 3)))]
    if s.get("type") == "object":
        return {draw(LABEL_KEYS): draw(LABEL_VALUES) for _ in range(draw(st.integers(0, 3)))}
    return draw(STRING_LEAF if s.get("type") == "string" else SCALARS)


@st.composite
def along(draw, s):
    """:func:`draw_along` as a strategy."""
    return draw_along(draw, s)


def spanned(x, counter):
    """A language value of plain data with a distinct span for every value and key."""
    def span():
        n = next(counter)
        return Span("<m>", n, 1, n, 2)
    if x is None:
        return Null("None", span())
    if isinstance(x, bool):
        return Bool(x, str(x), span())
    if isinstance(x, int):
        return Int(x, str(x), span())
    if isinstance(x, float):
        return Float(x, repr(x), span())
    if isinstance(x, str):
        return Str(x, span())
    if isinstance(x, list):
        return List(tuple(spanned(i, counter) for i in x), span())
    keys = {k: span() for k in x}
    return Dict({k: spanned(v, counter) for k, v in x.items()}, keys, span())


MANIFESTS = st.builds(lambda spec, md: {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                        "metadata": md, "spec": spec},
                      along(SCHEMA["properties"]["spec"]), along(SCHEMA["properties"]["metadata"]))


TPU_JOBSET = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "j"},
              "spec": {"replicatedJobs": [{"name": "a", "template": {"spec": {
                  "parallelism": 1, "completions": 3, "template": {
                      "metadata": {"annotations": {"cloud.google.com/gke-tpu-slice-topology": "4x4"}},
                      "spec": {"nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
                                                "cloud.google.com/gke-tpu-topology": "4x8"},
                               "containers": [{"name": "main", "resources": {"limits": {"google.com/tpu": 2}},
                                               "ports": [{"containerPort": 1}, {"containerPort": 1}],
                                               "env": [{"name": "A", "value": 1}]},
                                              {"name": "main", "command": [1]}]}}}}}]}}


@settings(max_examples=300, deadline=None)
@given(MANIFESTS, st.booleans())
@example(TPU_JOBSET, True)
@example(TPU_JOBSET, False)
def test_manifest_checks_agree_with_the_full_walks(plain, core_lists):
    data = spanned(plain, itertools.count(1))
    session = Session()
    for _ in range(2):  # again: from the session's memos
        assert shown(kube.check_manifest(data, session=session)) == shown(with_reference(kube.check_manifest, data))
        assert shown(kube.check_rules(data, core_lists, session)) == shown(with_reference(kube.check_rules, data,
                                                                                           core_lists))


def draw_along_shared(draw, s, pool, counter, depth=0):
    """A language value drawn along schema ``s`` (as :func:`draw_along`) that often reuses a
    value drawn before (from ``pool``), wherever it lands: renders share values, under other
    keys, schema nodes and metadata."""
    if pool and draw(st.integers(0, 3)) == 0:
        return pool[draw(st.integers(0, len(pool) - 1))]
    if not isinstance(s, dict) or depth > 16 or draw(st.integers(0, 60)) == 0:
        return spanned(draw(LEAF), counter)
    props = s.get("properties") or {}
    extra = s.get("additionalProperties")
    if props:
        marked, some = key_strategies(props)
        keys = [draw(marked)] if marked is not None else []
        keys += [k for k in ("name", "value", "containerPort", "metadata") if k in props and draw(st.integers(0, 3))]
        keys += [k for k in draw(some) if k not in keys]
        items = {k: draw_along_shared(draw, props[k], pool, counter, depth + 1) for k in dict.fromkeys(keys)}
        v = Dict(items, {k: Span("<k>", 1, 1, 1, 2) for k in items}, Span("<d>", next(counter), 1, 1, 2))
    elif isinstance(extra, dict) or s.get("type") == "object":
        v = spanned({draw(LABEL_KEYS): draw(LABEL_VALUES) for _ in range(draw(st.integers(0, 3)))}, counter)
    elif s.get("type") == "array" or "items" in s:
        v = List(tuple(draw_along_shared(draw, s.get("items"), pool, counter, depth + 1)
                       for _ in range(draw(st.integers(0, 3)))), Span("<l>", next(counter), 1, 1, 2))
    else:
        return spanned(draw(STRING_LEAF), counter)
    pool.append(v)
    return v


@st.composite
def shared_manifests(draw):
    """Two JobSets drawn along the schema from one pool of values (see :func:`draw_along_shared`)."""
    pool: list = []
    counter = itertools.count(1)
    out = []
    for _ in range(2):
        spec = draw_along_shared(draw, SCHEMA["properties"]["spec"], pool, counter)
        head = spanned({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"}, counter)
        md = draw_along_shared(draw, SCHEMA["properties"]["metadata"], pool, counter)
        out.append(Dict({**head.items, "metadata": md, "spec": spec}, {}, head.span))
    return out


@settings(max_examples=300, deadline=None)
@given(shared_manifests(), st.booleans(), st.sampled_from([1, 4, 16]))
@example([spanned(TPU_JOBSET, itertools.count(1)), spanned(TPU_JOBSET, itertools.count(1))], True, 1)
def test_manifest_checks_with_shared_values_agree_with_the_full_walks(pair, core_lists, shared_size):
    """Also with the memos applied to smaller values (``_SHARED_SIZE``), so that they come up often."""
    saved = kube._SHARED_SIZE, kube_schema._SHARED_SIZE
    kube._SHARED_SIZE = kube_schema._SHARED_SIZE = shared_size
    session = Session()
    try:
        for data in (*pair, *pair):  # again: from the memos
            assert shown(kube.check_manifest(data, session=session)) == shown(with_reference(kube.check_manifest,
                                                                                              data))
            assert shown(kube.check_rules(data, core_lists, session)) == shown(with_reference(kube.check_rules, data,
                                                                                               core_lists))
    finally:
        kube._SHARED_SIZE, kube_schema._SHARED_SIZE = saved


def test_the_drawn_manifests_reach_the_rules():
    """The value space above is not vacuous: the example manifest trips the list, pod and TPU rules."""
    codes = {d.code for d in kube.check_manifest(spanned(TPU_JOBSET, itertools.count(1)))}
    assert {"E1010", "E1001", "E1004", "E1006", "E1007", "E1008", "E1013"} <= codes


# the schema memo ------------------------------------------------------------------------------
SCHEMAS = st.recursive(
    st.one_of(st.just({}), st.just({"type": "string"}), st.just(True),
              st.sampled_from(["map", "set", "atomic", 1]).map(lambda t: {"x-kubernetes-list-type": t})),
    lambda inner: st.one_of(
        st.dictionaries(st.sampled_from("abc"), inner, max_size=3).map(lambda p: {"properties": p}),
        inner.map(lambda x: {"items": x}),
        inner.map(lambda x: {"additionalProperties": x}),
        st.lists(inner, max_size=2).map(lambda x: {"items": x})),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(SCHEMAS)
def test_marks_lists_is_whether_a_list_type_is_below(s):
    if isinstance(s, dict):
        marks: dict = {}
        assert kube_schema._marks_lists(s, marks) == ref_marked(s)
        assert kube_schema._marks_lists(s, marks) == ref_marked(s)  # from the memo


def test_marks_lists_on_a_cycle_of_aliases_is_in_doubt():
    s: dict = {"properties": {}}
    s["properties"]["self"] = s
    assert kube_schema._marks_lists(s, {}) is True


# reference YAML emitter (as it was before the fast paths) ---------------------------------------
def ref_emit(value) -> str:
    lines: list[str] = []
    if type(value) is Dict and value.items:
        ref_mapping(value, 0, lines)
    elif type(value) is List and value.items:
        ref_sequence(value, 0, lines)
    else:
        after: list[str] = []
        lines.append(Y._inline(value, 0, after))
        lines.extend(after)
    return "\n".join(lines) + "\n"


def ref_key(k: str) -> str:
    return k if plain_ok(k) else quoted(k)


def ref_mapping(d, indent, out):
    pad = " " * indent
    for k, v in d.items.items():
        t = type(v)
        if t is Dict and v.items:
            out.append(f"{pad}{ref_key(k)}:")
            ref_mapping(v, indent + 2, out)
        elif t is List and v.items:
            out.append(f"{pad}{ref_key(k)}:")
            ref_sequence(v, indent + 2, out)
        else:
            after: list[str] = []
            out.append(f"{pad}{ref_key(k)}: {Y._inline(v, indent, after)}")
            out.extend(after)


def ref_sequence(items, indent, out):
    pad = " " * indent
    inner = indent + 2
    for v in items.items:
        t = type(v)
        if (t is Dict or t is List) and v.items:
            start = len(out)
            (ref_mapping if t is Dict else ref_sequence)(v, inner, out)
            out[start] = pad + "- " + out[start][inner:]
        else:
            after: list[str] = []
            out.append(f"{pad}- {Y._inline(v, indent, after)}")
            out.extend(after)


def sharing(v):
    """``v`` at several places and indents of one document (as renders share a value)."""
    return Dict({"a": v, "b": List((v, Dict({"c": v, "d": List((List((v,), v.span),), v.span)}, {}, v.span)), v.span)},
                {}, v.span)


@settings(max_examples=400, deadline=None)
@given(st.one_of(DOCS, st.lists(DOCS, max_size=3)), st.booleans(), st.sampled_from([1, 4, Y._SHARED_SIZE]))
def test_yaml_emitter_agrees_with_the_reference(doc, shared, shared_size):
    """Also with the block memo applied to smaller values (``_SHARED_SIZE``)."""
    v = value_of(doc)
    if shared:
        v = sharing(v)
    saved, Y._SHARED_SIZE = Y._SHARED_SIZE, shared_size
    session = Session()
    try:
        assert Y.emit_document(v, session) == ref_emit(v)
        assert Y.emit_document(v, session) == ref_emit(v)  # keys and blocks from the session's memos
        assert Y.emit_document(sharing(v), session) == ref_emit(sharing(v))
    finally:
        Y._SHARED_SIZE = saved


def test_yaml_block_memo_is_bounded_and_keeps_its_values():
    session = Session()
    big = value_of({"k": [f"v{i}" for i in range(Y._SHARED_SIZE)]})
    for _ in range(Y._BLOCKS_MAX + 10):
        fresh = value_of({"z": list(range(Y._SHARED_SIZE))})
        Y.emit_document(Dict({"x": big, "y": fresh}, {}, big.span), session)
    blocks = session.table(Y.BLOCKS)
    assert 0 < len(blocks) <= Y._BLOCKS_MAX
    assert all(entry[0] is not None and id(entry[0]) == key[0] for key, entry in blocks.items())


def test_yaml_key_memo_is_bounded():
    keys: dict = {}
    for i in range(Y._KEYS_MAX + 10):
        Y._key(f"k{i}", keys)
    assert len(keys) == Y._KEYS_MAX
    assert Y._key("a: b", keys) == quoted("a: b") and Y._key("\n", keys) == double_quoted("\n")


# literal items of list and dict literals ---------------------------------------------------------
def ref_list(self, node, scope):
    return List(tuple(self.eval(x, scope) for x in node.items), node.span)


def ref_dict(self, node, scope):
    items: dict = {}
    spans: dict = {}
    for knode, vnode in node.items:
        key = self.eval(knode, scope)
        if type(key) is not Str:
            raise error("E0301", f"dict keys are strings, got {type_name(key)}", knode.span,
                        hint=f"write the key as a string: \"{text_of(key)}\"" if text_of(key) else None)
        k = key.value
        if k in items:
            raise error("E0302", f"key '{k}' appears twice in this dict", knode.span,
                        related=(("first here", spans[k]),),
                        hint="a repeated key in one dict is a typo; to override, add a later layer or use +")
        items[k] = self.eval(vnode, scope)
        spans[k] = knode.span
    return Dict(items, spans, node.span, self.ctx.called())


def dump(v):
    """Everything a value records: type, value, spelling, spans, provenance."""
    t = type(v)
    if t is List:
        return ("list", v.span, v.size, [dump(x) for x in v.items])
    if t is Dict:
        return ("dict", v.span, v.size, v.why, list(v.key_spans.items()), [(k, dump(x)) for k, x in v.items.items()])
    return (t.__name__, getattr(v, "value", None), getattr(v, "text", None), v.span, getattr(v, "pieces", None))


def outcome(ws, expr: str):
    try:
        return dump(ws.value(expr, "N = 3\ndef f(x):\n    return {\"in\": [x, 1, \"s\"]}\n"))
    except CompileError as exc:
        return [(d.code, d.message, d.span, d.hint, d.related) for d in exc.diagnostics]


def evaluated_both_ways(ws, expr: str):
    fast = outcome(ws, expr)
    saved = dict(E._DISPATCH)
    E._DISPATCH[ast.ListLit], E._DISPATCH[ast.DictLit] = ref_list, ref_dict
    try:
        return fast, outcome(ws, expr)
    finally:
        E._DISPATCH.update(saved)


LEAVES = st.sampled_from(["1", "10", "1.5", "1e-6", "True", "None", '"a"', "'b'", "N", "1 + N", 'f"{N}-x"',
                          "-2", "f(N)", '"s" + "t"', "[]", "{}"])
KEYS = st.sampled_from(['"a"', '"b"', '"c"', "'a'", '"a" + "b"', "N", 'f"{N}"', "1", "None"])
EXPRS = st.recursive(LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
    st.lists(st.tuples(KEYS, inner), max_size=4).map(lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"),
    inner.map(lambda x: f"[{x} for i in [1, 2]]")), max_leaves=16)


@settings(max_examples=150, deadline=None)
@given(EXPRS)
def test_literal_items_agree_with_eval(tmp_path_factory, expr):
    fast, slow = evaluated_both_ways(Ws(tmp_path_factory.mktemp("lit")), expr)
    assert fast == slow


@pytest.mark.parametrize("depth", [MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1])
@pytest.mark.parametrize("shape", [("[", "1", "]"), ('{"k": ', "1", "}"), ('{"k": ', "[1, N]", "}"),
                                   ("[", '{"k": 1}', "]")])
def test_literal_items_at_the_depth_limit(ws, depth, shape):
    """A literal one level past MAX_DEPTH is E0801 as before (the fast path stops short of it)."""
    opening, leaf, closing = shape
    fast, slow = evaluated_both_ways(ws, opening * depth + leaf + closing * depth)
    assert fast == slow


# flag sets a render carries -----------------------------------------------------------------------
def _with_tokens(v, fs, draw_index):
    """``v`` with some strings made flag tokens of ``fs`` (as ``.argv`` items or inside a
    ``.shell``-made string), others kept."""
    from rcpc.domain.provenance import argv_value, shell_value

    argv, shell = argv_value(fs, v.span).items, shell_value(fs, v.span)
    t = type(v)
    if t is Str:
        pick = draw_index()
        return v if pick == 0 else argv[pick % len(argv)] if pick % 2 else shell
    if t is List:
        return List(tuple(_with_tokens(x, fs, draw_index) for x in v.items), v.span)
    if t is Dict:
        return Dict({k: _with_tokens(x, fs, draw_index) for k, x in v.items.items()}, v.key_spans, v.span)
    return v


def ref_embedding_walk(data):
    """The render protocol's walk as it was: recursive, no memo, each item's place (a tuple of
    path steps) made as it is visited; the embeddings found."""
    from rcpc.domain import embedding as M
    from rcpc.domain.delta import Index, Key, Named, names

    out: list = []

    def walk(v, path, container):
        t = type(v)
        if t is Str:
            out.extend(M._in_string(v, path, container))
        elif t is Dict:
            env = None
            for k, x in v.items.items():
                if type(x) is List and k in M._CONTAINER_LISTS:
                    walk(x, path + (Key(k),), "pod")
                elif type(x) in (Dict, List, Str):
                    start = len(out)
                    walk(x, path + (Key(k),), container)
                    if v is container and k in M._EXPANDED and len(out) > start:
                        env = tuple(sorted((n, t) for n, t in M.container_env(v).items() if t is not None)) \
                            if env is None else env
                        if env:
                            out[start:] = [record.evolve(e, env=env) for e in out[start:]]
        elif t is List:
            item_names = names(v.items) if v.items else None
            run: list = []

            def close():
                if run:
                    out.append(M.Embedding(run[0][0][0].flags, path, "argv", tuple(t for t, _ in run),
                                           M._own(container), run[0][1]))
                    run.clear()

            for i, x in enumerate(v.items):
                held = M._item_token(x)
                if held is not None:
                    if run and (run[-1][0][0].flags is not held[0].flags or run[-1][1] != held[1]):
                        close()
                    a, b, _ = x.pieces[0]
                    run.append(((held[0], x.value[a:b]), held[1]))
                    continue
                close()
                if type(x) in (Dict, List, Str):
                    seg = Named(item_names[i]) if item_names is not None else Index(i)
                    walk(x, path + (seg,), (x if type(x) is Dict else None) if container == "pod" else container)
            close()

    walk(data, (), None)
    return out


def _shown_embeddings(found):
    return [(e.path, e.form, tuple(t for _, t in e.tokens), id(e.container), e.wrapper, e.env) for e in found]


def ref_embeddings(data):
    """The reference walk's embeddings: (path, form, texts, container, wrapper, env) of each."""
    return _shown_embeddings(ref_embedding_walk(data))


@settings(max_examples=150, deadline=None)
@given(MANIFESTS, st.lists(st.integers(0, 7), min_size=1, max_size=40), st.sampled_from([1, 2, 8, 32]))
@example(TPU_JOBSET, [1, 2, 3], 32)
def test_embeddings_under_shared_values_are_those_of_a_walk_without_memo(plain, picks, threshold):
    """A value shared in several places (every rollout's pod spec), the memo of the walk kept
    across calls and two renders: the same embeddings, places and containers as a fresh walk."""
    import rcpc.domain.embedding as embedding
    from rcpc.domain.values import FlagEntry, FlagLayer, FlagSet

    span = Span("<m>", 1, 1, 1, 2)
    entries = tuple(FlagEntry(k, span, Str(v, span)) for k, v in (("steps", "10"), ("run_name", "a b")))
    fs = FlagSet((FlagLayer(entries, span),), span)
    it = iter(picks * 1000)
    sub = _with_tokens(spanned(plain, itertools.count(1)), fs, lambda: next(it))
    data = Dict({"a": sub, "b": List((sub, sub), span), "spec": Dict({"containers": List((sub,), span)}, {}, span)},
                {}, span)
    saved = embedding._SHARED
    embedding._SHARED = threshold
    try:
        memo: dict = {}
        first = _shown_embeddings(embedding.embeddings(data, memo))
        again = _shown_embeddings(embedding.embeddings(data, memo))
        embedding._SHARED = 1 << 30
        assert first == again == _shown_embeddings(embedding.embeddings(data)) == ref_embeddings(data)
    finally:
        embedding._SHARED = saved


# sizes of containers ------------------------------------------------------------------------------
def ref_size(v) -> int:
    """1 + :func:`rcpc.core.values.weight` of each item, containers counted in full."""
    items = v.items.values() if type(v) is Dict else v.items
    return 1 + sum(ref_size(x) if type(x) in (Dict, List) else weight(x) for x in items)


def containers_of(v):
    if type(v) in (Dict, List):
        yield v
        for x in (v.items.values() if type(v) is Dict else v.items):
            yield from containers_of(x)


LONG = st.text(st.sampled_from("ab"), min_size=0, max_size=80)


@settings(max_examples=300, deadline=None)
@given(st.one_of(DOCS, st.lists(st.one_of(LONG, DOCS), max_size=4)),
       st.lists(st.sampled_from([0, 15, 16, 17, 31, 32, 100]), max_size=3))
def test_container_sizes_are_one_plus_the_weights(doc, lengths):
    v = value_of(doc)
    shared = List((v, v, *(Str("x" * n, v.span) for n in lengths), tpu_slice("v5e:2x4", v.span)), v.span)
    for c in containers_of(shared):
        assert c.size == ref_size(c)


def ref_has_pieces(v) -> bool:
    """Whether a string with flag-token pieces is in ``v``, at any depth."""
    if type(v) is Str:
        return bool(v.pieces)
    if type(v) in (Dict, List):
        return any(ref_has_pieces(x) for x in (v.items.values() if type(v) is Dict else v.items))
    return False


@settings(max_examples=80, deadline=None)
@given(MANIFESTS, st.lists(st.integers(0, 7), min_size=1, max_size=40))
def test_containers_know_whether_they_hold_flag_tokens(plain, picks):
    """``has_pieces`` (set as a list or dict is made; the walks for flag tokens pass over the
    values without) is whether a string with pieces is in it, however deep; ``without_flags``
    keeps such a value as it is, as it keeps any value whose items it keeps."""
    from rcpc.domain.embedding import without_flags
    from rcpc.domain.values import FlagEntry, FlagLayer, FlagSet

    span = Span("<m>", 1, 1, 1, 2)
    fs = FlagSet((FlagLayer((FlagEntry("steps", span, Str("10", span)),), span),), span)
    it = iter(picks * 1000)
    v = _with_tokens(spanned(plain, itertools.count(1)), fs, lambda: next(it))
    outer = List((v, Dict({"k": v, "plain": spanned(plain, itertools.count(1))}, {}, span)), span)
    for c in containers_of(outer):
        assert c.has_pieces == ref_has_pieces(c)
        if not c.has_pieces:
            assert without_flags(c) is c


# lone surrogates in flag values -----------------------------------------------------------------------
SURROGATE_TEXT = st.text(st.one_of(st.sampled_from("ab=${}?\\,:"), st.characters(), st.sampled_from(
    ["\ud800", "\udfff", "\udc80", "\ud7ff", "\ue000", "😀", "é"])), max_size=8)


def flag_outcome(v):
    try:
        return flags.value_text(v)
    except flags.FlagValueError as exc:
        return (exc.code, str(exc))


@settings(max_examples=400, deadline=None)
@given(SURROGATE_TEXT, st.booleans())
def test_lone_surrogates_in_flag_values_and_keys(s, as_key):
    """The first lone surrogate (U+D800..U+DFFF) of a string or key is the one reported, as a
    character-by-character scan finds it; a string without one is not refused for it."""
    first = next((c for c in s if 0xD800 <= ord(c) <= 0xDFFF), None)
    got = flag_outcome(value_of({s: "v"} if as_key else s))
    if first is not None:
        what = "key" if as_key else "string"
        assert got == ("E0317", f"the {what} holds the lone surrogate U+{ord(first):04X}, which MaxText's YAML "
                                "reader refuses")
    else:
        assert "surrogate" not in str(got)


def with_shared_size(size, fn, *args):
    saved = kube._SHARED_SIZE, kube_schema._SHARED_SIZE
    kube._SHARED_SIZE = kube_schema._SHARED_SIZE = size
    try:
        return fn(*args)
    finally:
        kube._SHARED_SIZE, kube_schema._SHARED_SIZE = saved


def test_a_pod_spec_shared_by_two_templates_is_checked_with_each_metadata():
    """The clean memo of kube._walk keys on the metadata beside a spec (E1013 reads it)."""
    counter = itertools.count(1)
    pod = spanned({"nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
                                    "cloud.google.com/gke-tpu-topology": "2x4"},
                   "containers": [{"name": "main", "image": "i", "resources": {"limits": {"google.com/tpu": 8}}}]}, counter)

    def job(topology):
        md = spanned({"annotations": {"cloud.google.com/gke-tpu-slice-topology": topology}}, counter)
        return Dict({"parallelism": spanned(1, counter), "completions": spanned(1, counter),
                     "template": Dict({"metadata": md, "spec": pod}, {}, md.span)}, {}, md.span)

    jobs = List(tuple(Dict({"name": spanned(n, counter), "template": Dict({"spec": job(t)}, {}, pod.span)},
                           {}, pod.span) for n, t in (("a", "2x4"), ("b", "4x4"))), pod.span)
    data = Dict({**spanned({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                            "metadata": {"name": "j"}}, counter).items,
                 "spec": Dict({"replicatedJobs": jobs}, {}, pod.span)}, {}, pod.span)
    fast = with_shared_size(1, lambda: shown(kube.check_manifest(data)))
    assert fast == shown(with_reference(kube.check_manifest, data))
    assert [d[0] for d in fast] == ["E1013"]  # the first pod is clean


def test_a_list_shared_under_a_container_list_and_another_key_is_checked_under_each():
    """The clean memo of _walk_lists keys on the last path step (container lists are left to E1004)."""
    counter = itertools.count(1)
    keyed = {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
             "items": {"type": "object", "properties": {"name": {"type": "string"}}}}
    twice = spanned([{"name": "a"}, {"name": "a"}], counter)
    data = Dict({"containers": twice, "sidecars": twice}, {}, twice.span)
    schema = {"type": "object", "additionalProperties": keyed}
    fast = with_shared_size(1, lambda: shown(kube_schema.check_lists(data, schema, "Thing")))
    assert fast == shown(with_reference(kube_schema.check_lists, data, schema, "Thing"))
    assert [d[0] for d in fast] == ["E1010"]
