"""The argv view (:mod:`rcpc.domain.kube.argvview`): a manifest that differs from one found clean
only in argv words no Kubernetes check reads (a MaxText flag edited) is clean from the
validation cache, and a build served that way reports exactly what the full checks report
(the oracle: ``RCPC_NO_CACHE=1``, every check run), renders and diagnostics alike."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.core.diagnostics import CompileError
from rcpc.domain.kube import argvview
from rcpc.domain.kube.schemashape import ANY_STRING
from tests.conftest import examples, kube_checks

REPO = Path(__file__).resolve().parents[1]
JOBSET = '''
jobset(name = "js", spec = {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {
    %s"template": {"spec": {"containers": [{"name": "main", "image": "img", "env": [{"name": "FOO", "value": "1"}],
    %s}], "restartPolicy": "Never"}}}}}]})
'''
# words the checks read (references, a shell's script, options, types) and words they do not
WORD = st.one_of(
    st.sampled_from(["bash", "sh", "-c", "-ec", "--norc", "$(FOO)", "$(NOPE)", "$(JOB_COMPLETION_INDEX)", "$$(NOPE)",
                     "$(date)", "echo $(NOPE)", "", "ragged_buffer_factor=2.0", "ragged_buffer_factor=3.5", "-"]),
    st.text(st.characters(min_codepoint=32, max_codepoint=126, exclude_characters='"\\{}'), max_size=12),
    st.integers(-3, 3),
)
ARGV = st.lists(WORD, max_size=5)


POD = '''
manifest(name = "p", apiVersion = "v1", kind = "Pod", metadata = {"name": "p"}, spec = {"restartPolicy": "Never",
    "%s": [{"name": "main", "image": "img", "env": [{"name": "FOO", "value": "1"}], %s}], %s})
'''
WHERE = ("indexed", "non-indexed", "pod", "pod-init")  # a JobSet's (Indexed) Job, a NonIndexed one, a Pod


def recipe(command, args, where: str = "indexed") -> str:
    """A manifest whose one container runs ``command`` (None: no field) and ``args``, in a
    pod of ``where`` (:data:`WHERE`; ``pod-init``: an init container beside a plain one)."""
    fields = ", ".join(f'"{k}": {json.dumps(v)}' for k, v in (("command", command), ("args", args)) if v is not None)
    if where.startswith("pod"):
        init = where == "pod-init"
        return POD % ("initContainers" if init else "containers", fields,
                      '"containers": [{"name": "c", "image": "img"}]' if init else '"hostname": "p"')
    mode = "" if where == "indexed" else '"completionMode": "NonIndexed", "completions": 1, "parallelism": 1, '
    return JOBSET % (mode, fields)


def outcome(ws, text: str, **kw) -> tuple:
    """What a build reports: its renders, or its errors, and its warnings (as shown)."""
    def shown(diags):
        return [(d.code, d.message, str(d.span), d.hint, d.notes) for d in diags]

    try:
        renders = ws.build(text, **kw)
    except CompileError as exc:
        renders = shown(exc.diagnostics)
    return renders, shown(ws.last_compiler.diagnostics())


def oracle(ws, text: str, **kw) -> tuple:
    """:func:`outcome` with the cache off: every check run."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RCPC_NO_CACHE", "1")
        return outcome(ws, text, **kw)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.none() | ARGV, args=ARGV, edits=st.lists(st.tuples(st.integers(0, 9), WORD), max_size=3),
       where=st.sampled_from(WHERE))
@example(command=None, args=["--model", "ragged_buffer_factor=2.0"], edits=[(1, "ragged_buffer_factor=3.5")],
         where="indexed")  # the edit loop: a flag edited
@example(command=None, args=["--model", "ragged_buffer_factor=2.0"], edits=[(1, "ragged_buffer_factor=$(NOPE)")],
         where="indexed")  # an edit that breaks a check (W1004)
@example(command=["bash", "-c"], args=["echo $(JOB_COMPLETION_INDEX)"], edits=[(0, "python")], where="non-indexed")
@example(command=["bash", "-c"], args=["$(date)"], edits=[(0, "python")], where="indexed")  # no longer a shell
@example(command=["bash", "-c"], args=["$(date)"], edits=[(1, "x")], where="indexed")  # no longer its script
@example(command=None, args=["x", "y"], edits=[(1, 3)], where="indexed")  # E1008: not a string
def test_an_edited_argv_reports_what_the_full_checks_report(kube_ws, command, args, edits, where):
    """Build ``a``, then ``b`` (``a`` with argv words replaced) with the cache, as the edit
    loop does: ``b`` reports what the full checks of ``b`` report (no cache at all)."""
    argv = (command or []) + args
    for at, word in edits:
        if argv:
            argv[at % len(argv)] = word
    n = len(command) if command is not None else 0
    before, after = recipe(command, args, where), recipe(None if command is None else argv[:n], argv[n:], where)
    outcome(kube_ws, before)
    cut = outcome(kube_ws, after)
    assert cut == oracle(kube_ws, after)


@pytest.mark.parametrize("where", WHERE)
def test_a_flag_edit_is_not_checked_again_and_a_reference_is(kube_ws, monkeypatch, where):
    """The cut is taken (a canary for the property above): after one clean build, a manifest
    differing only in a flag word is not checked again; one whose new word holds a ``$`` is."""
    calls = kube_checks(monkeypatch)
    kube_ws.build(recipe(None, ["--model", "ragged_buffer_factor=2.0"], where))
    kube_ws.build(recipe(None, ["--model", "ragged_buffer_factor=3.5"], where))
    assert len(calls) == 1
    outcome(kube_ws, recipe(None, ["--model", "ragged_buffer_factor=$(NOPE)"], where))
    assert len(calls) == 2 and [d.code for d in kube_ws.last_compiler.diagnostics()] == ["W1004"]
    kube_ws.build(recipe(None, ["--model", "ragged_buffer_factor=3.5"], where))
    assert len(calls) == 2


def test_another_schema_file_turns_the_view_off(kube_ws, monkeypatch):
    """A schema file other than the built-in JobSet one may constrain argv text: every
    manifest whose render is new is checked."""
    from rcpc.domain.workspace import Workspace

    builtin = Workspace.find(kube_ws.root).kube_schemas[0]
    (kube_ws.root / "jobset.json").write_bytes(builtin.read_bytes())
    (kube_ws.root / "rcp.toml").write_text('recipe_dirs = ["recipes"]\nkube_schemas = ["jobset.json"]\n')
    calls = kube_checks(monkeypatch)
    for value in ("2.0", "3.5"):
        kube_ws.build(recipe(None, [f"ragged_buffer_factor={value}"]))
    assert len(calls) == 2


@settings(max_examples=60, deadline=None)
@given(command=st.none() | ARGV, args=ARGV)
def test_the_builtin_jobset_schema_reads_no_word_the_view_leaves_out(command, args):
    """Every word :func:`argvview.view` leaves out, the built-in JobSet schema cannot tell from
    any other (:func:`rcpc.domain.kube.schemashape.shape` leaves it out too)."""
    from rcpc.domain.kube.schema import SchemaIndex
    from rcpc.domain.kube.schemashape import shape
    from rcpc.domain.workspace import builtin_schema

    container = {"name": "main", "image": "img"}
    if command is not None:
        container["command"] = command
    container["args"] = args
    plain = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
             "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": {
                 "containers": [container], "initContainers": [dict(container, name="init")]}}}}}]}}
    index = SchemaIndex([builtin_schema("jobset")])
    shaped = shape(plain, index.structural("jobset.x-k8s.io/v1alpha2", "JobSet"))
    viewed = argvview.view(plain)
    pod = ("spec", "replicatedJobs", 0, "template", "spec", "template", "spec")

    def at(v, path):
        for p in path:
            v = v[p]
        return v

    for group in ("containers", "initContainers"):
        for k in ("command", "args"):
            for i, word in enumerate(at(viewed, pod + (group, 0)).get(k) or ()):
                if word is ANY_STRING:
                    assert at(shaped, pod + (group, 0, k, i)) is ANY_STRING


def test_the_rl_recipe_flag_edits_report_what_the_full_checks_report(tmp_path, monkeypatch):
    """The edit loop's recipe (bench/editloop.py): its flag edited to new values, one MaxText
    refuses, with the cache, reports what the full checks report."""
    import shutil

    from tests.conftest import Ws

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)
    root = tmp_path / "ws"
    shutil.copytree(REPO / "recipes", root / "recipes")
    toml = (REPO / "rcp.toml").read_text()
    ws = Ws(root)
    (root / "rcp.toml").write_text(toml)
    path = "recipes/rl/qwen35_397b_256_v7x.rcp"
    text = (root / path).read_text()
    assert '"ragged_buffer_factor": 2.0,' in text
    found = []
    for value in ("2.0", "3.5", '"$(NOPE)"', "-1.0", "4.25"):
        edited = re.sub(r'"ragged_buffer_factor": 2\.0,', f'"ragged_buffer_factor": {value},', text)
        cut = outcome(ws, edited, path=path)
        assert cut == oracle(ws, edited, path=path), value
        found.append(cut)
    assert found[0] != found[1]


def _values():
    """Strategies of language values (:mod:`rcpc.core.values`) whose view depends on where they
    are: keys naming container lists and argv fields, words the view leaves out and keeps."""
    from rcpc.core.source import Span
    from rcpc.core.values import Bool, Dict, Float, Int, List, Null, Str

    span = Span("t.rcp", 1, 1, 1, 1)
    words = st.sampled_from(["python", "-c", "--x=1", "$(A)", "a$b", "", "x", "containers", "-"]) | st.text(max_size=4)
    scalars = st.one_of(
        words.map(lambda w: Str(w, span)),
        st.integers(-2, 2).map(lambda i: Int(i, str(i), span)),
        st.floats(allow_nan=True).map(lambda f: Float(f, repr(f), span)),
        st.booleans().map(lambda b: Bool(b, str(b), span)),
        st.just(Null("None", span)),
    )
    keys = st.sampled_from(["command", "args", "containers", "initContainers", "ephemeralContainers", "name", "spec"])

    def dict_of(d):
        return Dict(d, {k: span for k in d}, span)

    word = words.map(lambda w: Str(w, span))
    argv = st.lists(word | scalars, max_size=4).map(lambda xs: List(tuple(xs), span))

    def containers(children):
        argvs = argv | st.lists(word | children, max_size=3).map(lambda xs: List(tuple(xs), span)) | children
        entry = st.fixed_dictionaries({}, optional={"name": children, "command": argvs, "args": argvs,
                                                    "containers": children}).map(dict_of)  # a container's fields
        return st.one_of(
            st.lists(entry, max_size=3).map(lambda xs: dict_of({"containers": List(tuple(xs), span)})),
            st.lists(children | entry, max_size=4).map(lambda xs: List(tuple(xs), span)),
            st.dictionaries(keys, children | entry, max_size=5).map(dict_of))
    return scalars, containers


@settings(max_examples=examples(200, 50), deadline=None)
@given(data=st.data())
@example(data=None)  # one node a plain value and a container entry: viewed apart
def test_the_view_text_of_values_is_the_view_of_their_plain_data(data):
    """:func:`argvview.text` (from the values, by node, one memo over several manifests) is
    ``repr(view(to_python(v)))`` whatever the value, its nodes shared between manifests and
    between places (a node under a container list is viewed as a container, elsewhere as any
    value): the validation cache's key of a view is the one the view gives."""
    from rcpc.core.source import Span
    from rcpc.core.values import Dict, List, Str, to_python

    scalars, containers = _values()
    if data is None:  # the same dict as a container entry and as a plain value, in one manifest and in two
        span = Span("t.rcp", 1, 1, 1, 1)
        words = List(tuple(Str(w, span) for w in ("python", "train.py", "steps=1")), span)
        c = Dict({"name": Str("c", span), "args": words}, {"name": span, "args": span}, span)
        both = Dict({"containers": List((c,), span), "other": c}, {"containers": span, "other": span}, span)
        manifests = [both, Dict({"x": c}, {"x": span}, span), Dict({"containers": List((c,), span)}, {}, span),
                     Dict({"spec": both}, {}, span)]
    else:
        pool = data.draw(st.lists(st.recursive(scalars, containers, max_leaves=12), min_size=1, max_size=4))
        # manifests made of the pool's nodes, each found at several places
        manifests = data.draw(st.lists(st.recursive(st.sampled_from(pool), containers, max_leaves=10),
                                       min_size=1, max_size=4))
    memo = ({}, {})
    for m in manifests:
        assert argvview.text(m, memo) == repr(argvview.view(to_python(m)))


def test_the_view_text_refuses_what_has_no_data_form():
    """A value with no data form (a function) raises TypeError, as :func:`rcpc.core.values.to_python`."""
    from rcpc.core.source import Span
    from rcpc.core.values import Builtin, List, to_python

    span = Span("t.rcp", 1, 1, 1, 1)
    v = List((Builtin("len", len, span),), span)
    with pytest.raises(TypeError):
        to_python(v)
    with pytest.raises(TypeError):
        argvview.text(v, ({}, {}))
