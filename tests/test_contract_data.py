"""Diff contracts at the level of data (DESIGN.md §3.4, docs/review.md): flag-token
provenance through every way a recipe embeds a flag set, the path spelling, and declared
manifest paths."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.domain.delta import (AnyItem, Index, Key, Named, PathError, data_delta, format_path, parse_path, resolve,
                        word_diff)
from rcpc.core.diagnostics import format_text
from tests.conftest import rcp_string

# a flag set embedded every way a recipe can: a .flags render, an argv list, the shell form as
# an env value, inside an f-string inside a join (a bash -c script), and after `+`
EMBED = '''
flag_file(name = "trainer", flags = F)
jobset(name = "trainer", spec = {
    "args": ["--port=8080"] + F.argv,
    "env": [{"name": "FLAGS", "value": F.shell}, {"name": "OTHER", "value": "x"}],
    "command": ["bash", "-c", " && ".join(["set -e", f"python3 train.py {F.shell} | tee log", "echo done"])],
    "tail": F.shell + " --extra=1",
    "flags_in_list": [f"--maxtext={t}" for t in F.argv],
})
jobset(name = "other", spec = {"replicas": 1})
variant("default")
'''

KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True)
TEXT = st.text(alphabet="ab =#'\"$:,-{}", min_size=0, max_size=6)
VALUES = st.one_of(st.integers(-5, 300).map(str), st.sampled_from(["True", "true", "False", "None"]),
                   TEXT.map(rcp_string))


def contract_diags(ws, flags_src: str, declared: list[str]) -> tuple[list, str]:
    """The contract diagnostics of a recipe embedding ``flags_src``'s F, and their text."""
    recipe = ("T = param(bool, default = False)\n" + flags_src + EMBED
              + f'variant("tuned", set = {{"T": True}}, against = "default", changes = {{"trainer": {declared!r}}})\n')
    ws.write("recipes/r.rcp", recipe, dedent=False)
    compiler = ws.compiler()
    recipe_obj, builds = compiler.build((ws.root / "recipes/r.rcp").resolve())
    diags = compiler.check_contracts(recipe_obj, builds)
    return diags, "\n".join(format_text(d, compiler.sources) for d in diags)


def flags_source(base: dict, tuned_layer: dict | None, inplace: dict) -> str:
    """``F = maxtext_flags({...}, {...} if T else {})``; ``inplace`` maps a base key to its
    tuned value written as ``(NEW if T else OLD)``."""
    entries = []
    for k, v in base.items():
        value = f"({inplace[k]} if T else {v})" if k in inplace else v
        entries.append(f'        "{k}": {value},')
    layer = ""
    if tuned_layer:
        layer = "    {" + ", ".join(f'"{k}": {v}' for k, v in tuned_layer.items()) + "} if T else {},\n"
    return "F = maxtext_flags(\n    {\n" + "\n".join(entries) + "\n    },\n" + layer + ")\n"


@st.composite
def flag_change(draw):
    """A base flag set and one declared key whose effective value the tuned variant changes,
    by an appended layer (the shell-recipe way) or in place."""
    keys = draw(st.lists(KEYS, min_size=1, max_size=6, unique=True))
    base = {k: draw(VALUES) for k in keys}
    appended = draw(st.booleans())
    key = draw(st.sampled_from(keys) if not appended else st.one_of(st.sampled_from(keys), KEYS))
    new = draw(VALUES.filter(lambda v: _effective(v) != _effective(base.get(key))))
    if appended:
        return base, {key: new}, {}, key
    return base, None, {key: new}, key


def _effective(literal):
    """What MaxText reads for a literal: True and true are the same bool."""
    return None if literal is None else literal.lower() if literal in ("True", "true", "False", "false") else literal


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(change=flag_change())
@example(change=({"custom_mesh_and_rule": '"cp-as-ep"', "packing": "True"},
                 {"custom_mesh_and_rule": '"cp-as-ep-dense-no-cp"'}, {}, "custom_mesh_and_rule"))
@example(change=({"a": '"x y"', "k": '"p q"', "b": "1"}, None, {"k": '"p r"'}, "k"))
def test_changing_only_the_declared_flag_holds_in_every_embedding(ws, change):
    base, layer, inplace, key = change
    diags, text = contract_diags(ws, flags_source(base, layer, inplace), [key])
    assert diags == [], text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(change=flag_change(), data=st.data())
def test_an_undeclared_flag_is_reported_in_every_embedding(ws, change, data):
    base, layer, inplace, key = change
    others = [k for k in base if k != key and k not in inplace]
    if not others:
        base = {**base, "zz_other": "1"}
        others = ["zz_other"]
    other = data.draw(st.sampled_from(others))
    new = data.draw(VALUES.filter(lambda v: _effective(v) != _effective(base[other])))
    diags, text = contract_diags(ws, flags_source(base, layer, {**inplace, other: new}), [key])
    assert [d.code for d in diags][:1] == ["E0610"], text
    assert f"trainer.flags: effective value of {other} changed but is not declared" in text
    # one E0612 names the key, with every place it is embedded
    (flag,) = [d for d in diags if d.code == "E0612" and f"flag {other}: " in d.message]
    assert flag.hint == f'declare the flag key: changes = {{"trainer": ["{other}"]}}'
    places = flag.notes[0]
    for where in ("trainer.flags", "trainer.yaml at spec.args", "trainer.yaml at spec.env[name=FLAGS].value",
                  "trainer.yaml at spec.command[2]", "trainer.yaml at spec.tail",
                  "trainer.yaml at spec.flags_in_list"):
        assert where in places, (where, text)
    # each points at the entry of the flag that changed
    line = next(i for i, x in enumerate(flags_source(base, layer, {**inplace, other: new}).splitlines(), 2)
                if x.startswith(f'        "{other}":'))
    assert f"the new value is made here: recipes/r.rcp:{line}:" in text


def test_a_declared_key_whose_tokens_move_without_changing_its_value_is_reported(ws):
    # the tuned layer re-sets k to the value it already has: tokens differ, MaxText's value does not
    src = 'F = maxtext_flags({"k": "a", "j": 1}, {"k": "a"} if T else {})\n'
    diags, text = contract_diags(ws, src, ["k"])
    assert "trainer.flags: k declared to change but did not" in text
    assert "the tokens of flag 'k' change (k=a → k=a, k=a) but its effective value does not" in text


def test_manifest_only_flag_keys_must_change_somewhere(ws):
    recipe = textwrap.dedent('''\
        T = param(bool, default = False)
        F = maxtext_flags({"k": "a", "j": 1}, {"j": 2} if T else {})
        jobset(name = "js", spec = {"args": F.argv})
        variant("default")
        variant("t", set = {"T": True}, against = "default", changes = {"js": ["k"]})
        ''')
    ws.write("recipes/r.rcp", recipe)
    compiler = ws.compiler()
    r, builds = compiler.build((ws.root / "recipes/r.rcp").resolve())
    diags = compiler.check_contracts(r, builds)
    text = "\n".join(format_text(d, compiler.sources) for d in diags)
    assert "js.yaml: k declared to change but did not" in text
    assert "variant 't' changes js.yaml at spec.args: flag j: 1 → 2" in text


def test_flag_keys_for_a_render_without_flags_are_an_error(ws):
    ws.write("recipes/r.rcp", '''\
        T = param(bool, default = False)
        jobset(name = "js", spec = {"replicas": 2 if T else 1})
        variant("default")
        variant("t", set = {"T": True}, against = "default", changes = {"js": ["spec.replicas"]})
        ''')
    compiler = ws.compiler()
    r, builds = compiler.build((ws.root / "recipes/r.rcp").resolve())
    (d,) = compiler.check_contracts(r, builds)
    assert d.code == "E0611" and "embeds no flag set" in d.message
    assert d.hint == 'paths go under the file name: "js.yaml"'


# declared manifest paths ------------------------------------------------------------------------
PATHS = '''\
T = param(bool, default = False)
jobset(name = "js", metadata = {"name": "js", "labels": {"kueue.x-k8s.io/queue-name": "q2" if T else "q"}},
       spec = {"replicatedJobs": [
    {"name": "proc", "replicas": 1, "template": {"containers": [{"name": "main", "image": "i:2" if T else "i:1"}]}},
    {"name": "pw-node", "replicas": 4 if T else 2},
]})
jobset(name = "other", spec = {})
variant("default")
'''


def check_paths(ws, changes: str) -> str:
    ws.write("recipes/r.rcp", PATHS + f'variant("t", set = {{"T": True}}, against = "default", changes = {changes})\n',
             dedent=False)
    compiler = ws.compiler()
    r, builds = compiler.build((ws.root / "recipes/r.rcp").resolve())
    return "\n".join(format_text(d, compiler.sources) for d in compiler.check_contracts(r, builds))


@pytest.mark.parametrize("changes", [
    '{"js.yaml": ["spec.replicatedJobs[name=pw-node].replicas", "spec.replicatedJobs[name=proc].template", '
    '"metadata.labels[\\"kueue.x-k8s.io/queue-name\\"]"]}',
    # [N] of a named list is its item N; [*] any item; a path covers what is under it
    '{"js.yaml": ["spec.replicatedJobs[*]", "metadata.labels"]}',
    '{"js.yaml": ["spec.replicatedJobs[1].replicas", "spec.replicatedJobs[0].template.containers[0].image", '
    '"metadata"]}',
])
def test_declared_paths_explain_their_changes(ws, changes):
    assert check_paths(ws, changes) == ""


def test_an_undeclared_path_is_reported_with_its_line(ws):
    text = check_paths(ws, '{"js.yaml": ["spec.replicatedJobs[name=pw-node].replicas", "metadata"]}')
    assert ("error[E0612]: variant 't' changes js.yaml at "
            'spec.replicatedJobs[name=proc].template.containers[name=main].image: "i:1" → "i:2"') in text
    assert "the new value is made here: recipes/r.rcp:4:91" in text


def test_a_declared_path_that_does_not_change_or_does_not_exist(ws):
    text = check_paths(ws, '{"js.yaml": ["spec", "metadata.name", "spec.replicatedJobs[name=pw-nod]"]}')
    assert "js.yaml: metadata.name declared to change but did not" in text
    assert "error[E0614]: changes names path 'spec.replicatedJobs[name=pw-nod]', which is not in js.yaml" in text
    assert "did you mean 'spec.replicatedJobs[name=pw-node]'?" in text
    assert "metadata.labels" in text  # the undeclared label change


def test_a_path_that_cannot_be_read(ws):
    text = check_paths(ws, '{"js.yaml": ["spec.replicatedJobs[name=]"]}')
    assert "recipes/r.rcp:9:97: error[E0613]: path 'spec.replicatedJobs[name=]'" in text


# the path spelling ----------------------------------------------------------------------------------
SEGMENTS = st.lists(st.one_of(st.text(min_size=1, max_size=6).map(Key), st.integers(0, 99).map(Index),
                              st.text(min_size=1, max_size=6).map(Named), st.just(AnyItem())),
                    min_size=1, max_size=6)


@given(path=SEGMENTS)
@example(path=(Key("spec"), Key("replicatedJobs"), Named("proc"), Key("env"), Named("ENABLE_MULTI_NUMA"),
               Key("value")))
@example(path=(Key("metadata"), Key("labels"), Key("kueue.x-k8s.io/queue-name")))
def test_a_spelled_path_reads_back(path):
    assert parse_path(format_path(tuple(path))) == tuple(path)


def test_path_spelling():
    assert format_path((Key("spec"), Key("replicatedJobs"), Named("pw-node"), Key("replicas"))) == \
        "spec.replicatedJobs[name=pw-node].replicas"
    assert format_path((Key("labels"), Key("a.b/c"), Index(0), Named("x y"))) == 'labels["a.b/c"][0][name="x y"]'
    for bad, col in [("", 1), ("spec..x", 6), ("spec[x]", 5), ("a[name=]", 2), ("a]", 2), ("1a", 1)]:
        with pytest.raises(PathError) as info:
            parse_path(bad)
        assert info.value.col == col, bad


def test_resolve_names_items_canonically():
    data = {"spec": {"jobs": [{"name": "a", "n": 1}, {"name": "b", "n": 2}], "ports": [{"p": 1}, {"p": 2}]}}
    assert resolve(parse_path("spec.jobs[1].n"), data) == [(Key("spec"), Key("jobs"), Named("b"), Key("n"))]
    assert resolve(parse_path("spec.ports[*].p"), data) == [
        (Key("spec"), Key("ports"), Index(0), Key("p")), (Key("spec"), Key("ports"), Index(1), Key("p"))]
    assert resolve(parse_path("spec.jobs[name=c]"), data) == []
    assert resolve(parse_path("spec.nope"), data) == []


# the delta itself --------------------------------------------------------------------------------------
def test_delta_kinds_on_plain_data():
    old = {"a": 1, "b": [1, 2, 3], "c": [{"name": "x"}, {"name": "y"}], "d": {"p": 1, "q": 2}, "e": True}
    new = {"a": 2, "b": [1, 2, 3, 4], "c": [{"name": "y"}, {"name": "x"}], "d": {"q": 2, "p": 1}, "f": None}
    got = [c.describe() for c in data_delta(old, new)]
    assert got == ["a: 1 → 2",
                   "b[3]: added 4", "c: reordered x, y → y, x", "d: reordered p, q → q, p",
                   "e: removed true", "f: added null"]
    assert [c.describe() for c in data_delta([1, 2, 3], [3, 2, 1])] == ["(root): reordered 1, 2, 3 → 3, 2, 1"]


def test_word_diff_of_a_long_line():
    a = " ".join(f"key{i}={i}" for i in range(80))
    b = a.replace("key40=40", "key40=41")
    assert word_diff(a, b) == "…key38=38 key39=39 [-key40=40-]{+key40=41+} key41=41 key42=42…"


LEAVES = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "x y"]), st.booleans(), st.none())
TREES = st.recursive(LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from("pqrs"), inner, max_size=4),
    st.lists(st.fixed_dictionaries({"name": st.sampled_from("xyz")}, optional={"v": inner}), max_size=3)),
    max_leaves=12)


def _sharing(old, new, data):
    """``new`` with some of its items replaced by ``old``'s item at the same key or index, the
    same object (as variants share what no override reaches)."""
    if type(old) is not type(new) or not isinstance(new, (dict, list)):
        return old if data.draw(st.booleans()) else new
    if isinstance(new, dict):
        return {k: _sharing(old[k], v, data) if k in old else v for k, v in new.items()}
    return [_sharing(old[i], v, data) if i < len(old) else v for i, v in enumerate(new)]


def _fresh(x):
    """A copy of ``x`` that shares no container with it."""
    if isinstance(x, dict):
        return {k: _fresh(v) for k, v in x.items()}
    return [_fresh(v) for v in x] if isinstance(x, list) else x


@given(old=TREES, new=TREES, data=st.data())
@example(old={"p": [1, {"q": 2}]}, new={"p": [1, {"q": 3}]}, data=None)
def test_a_value_shared_by_both_versions_has_the_delta_of_a_copy(old, new, data):
    """The walk takes one object on both sides as unchanged: the delta is the one an equal
    copy gives, whatever is shared."""
    if data is not None:
        new = _sharing(old, new, data)
    else:
        new = {"p": [old["p"][0], {"q": 3}]}
    assert [c.describe() for c in data_delta(old, new)] == [c.describe() for c in data_delta(_fresh(old), new)]
    assert data_delta(old, old) == []
