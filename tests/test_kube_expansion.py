"""Kubernetes' ``$(VAR)`` expansion (``rcpc.domain.kube.expansion``) and the warnings on the
references it leaves as written (W1004, W1005; ``rcpc.domain.kube.references``).

The oracle of ``expand`` is the expansion spec as one regular expression (``$$`` is ``$``;
``$(NAME)``, NAME up to the first ``)``, is NAME's value when defined, else kept), written
independently of the scanner that mirrors Kubernetes' ``expansion.Expand``. The value space is
the syntax's own characters (``$``, ``(``, ``)``) among others, and names defined or not."""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from rcpc.domain.kube.expansion import JOB_COMPLETION_INDEX, expand, expand_known, references

SETTINGS = settings(max_examples=300, deadline=None)
NAMES = ["A", "B", "RUN_ID", "", "a b", JOB_COMPLETION_INDEX]
TEXT = st.lists(st.sampled_from(["$", "(", ")", "A", "B", "RUN_ID", " ", "x", "é", "{", "}"]), max_size=14).map("".join)
ENV = st.dictionaries(st.sampled_from(NAMES), st.text(alphabet="$()Ax", max_size=4), max_size=4)
REFERENCE = re.compile(r"\$(?:\$|\(([^)]*)\))")


def oracle(text: str, env: dict) -> str:
    return REFERENCE.sub(lambda m: "$" if m[0] == "$$" else env.get(m[1], m[0]), text)


@SETTINGS
@given(text=TEXT, env=ENV)
@example(text="exp$$1", env={})                                  # the issue's: MaxText gets exp$1
@example(text="gs://b/$(RUN_ID)/out", env={"RUN_ID": "r7"})      # expanded when defined
@example(text="gs://b/$(RUN_ID)/out", env={})                    # kept when not
@example(text="--resource_manager_address=$(PATHWAYS_HEAD):29001", env={"PATHWAYS_HEAD": "h.js"})
@example(text="$$(A)", env={"A": "x"})                           # an escaped reference is text
@example(text="$(A", env={"A": "x"})                             # no ')': kept
@example(text="$($(A)", env={"A": "x"})                          # the name is '$(A'
@example(text="$(A)$", env={"A": "$(B)"})                        # a value is not expanded again
@example(text="${A} $A", env={"A": "x"})                         # only $( ) is a reference
def test_expand_is_kubernetes_expansion(text, env):
    assert expand(text, env) == oracle(text, env)
    assert [r.name for r in references(text)] == [m[1] for m in REFERENCE.finditer(text) if m[0] != "$$"]
    assert all(text[r.start:r.end] == f"$({r.name})" for r in references(text))


@SETTINGS
@given(text=TEXT, env=st.dictionaries(st.sampled_from(NAMES), st.none() | st.text(alphabet="$()Ax", max_size=4),
                                      max_size=4))
@example(text="x", env={"A": None})
@example(text="$(A) x", env={"A": None, "B": "b"})                # known only at run time: kept
def test_expand_known_is_expansion_by_the_known_names(text, env):
    """``expand_known`` (a text without ``$`` returned as it is) is the oracle's expansion with
    the names whose value is known."""
    assert expand_known(text, env) == oracle(text, {k: v for k, v in env.items() if v is not None})


# the warnings ------------------------------------------------------------------------------------
def warnings(manifest: dict) -> list[tuple[str, str, str]]:
    """(code, manifest path, referenced name) of each W1004/W1005 of ``rcpc validate``."""
    from rcpc.cli import main

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "m.yaml").write_text(json.dumps(manifest) + "\n")
        err = io.StringIO()
        with contextlib.chdir(d), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            main(["validate", "m.yaml"])
    return re.findall(r"warning\[(W100[45])\]: \w+ (\S+): \$\((.*?)\) ", err.getvalue())


def pod(container: dict, kind: str, mode) -> tuple[dict, str]:
    spec = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "i", **container}]}
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}, "spec."
    job = {"template": {"spec": spec}} | ({"completionMode": mode, "completions": 2} if mode else {})
    if kind == "Job":
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": job}, "spec.template.spec."
    return ({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
             "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": job}}]}},
            "spec.replicatedJobs[0].template.spec.template.spec.")


WORDS = st.sampled_from(["$(A)", "$(RUN_ID)", "$(JOB_COMPLETION_INDEX)", "$(date)", "$$(A)", "$(X_SERVICE_HOST)",
                         "x", "$(A", "$(a b)"])


@settings(max_examples=80, deadline=None)
@given(env=st.lists(st.tuples(st.sampled_from(["A", "B", "RUN_ID", JOB_COMPLETION_INDEX]), WORDS | st.none()),
                    max_size=3),
       shell=st.booleans(), args=st.lists(WORDS, max_size=3), kind=st.sampled_from(["Pod", "Job", "JobSet"]),
       mode=st.sampled_from([None, "Indexed", "NonIndexed"]), env_from=st.booleans())
@example(env=[], shell=False, args=["--base_output_directory=gs://b/$(RUN_ID)/out"], kind="JobSet", mode=None,
         env_from=False)   # the issue's: no RUN_ID, the container gets $(RUN_ID)
@example(env=[("PATHWAYS_HEAD", "x")], shell=False, args=["--resource_manager_address=$(PATHWAYS_HEAD):29001"],
         kind="JobSet", mode=None, env_from=False)   # the RL recipe's: defined, expanded
@example(env=[], shell=False, args=["--process_id=$(JOB_COMPLETION_INDEX)"], kind="Job", mode=None, env_from=False)
@example(env=[("B", "$(JOB_COMPLETION_INDEX)")], shell=False, args=[], kind="JobSet", mode=None, env_from=False)
@example(env=[], shell=True, args=["echo $(date)"], kind="Job", mode=None, env_from=False)  # the shell's $(date)
@example(env=[("A", None), ("B", "$(A)-$(RUN_ID)")], shell=False, args=["$(B)"], kind="Pod", mode=None,
         env_from=False)  # a valueFrom entry defines its name; the reference is placed at its entry's index
def test_references_left_as_written_are_warned(env, shell, args, kind, mode, env_from):
    """W1004 for each ``$(X)`` that names no env var defined for its place (env values: the
    earlier ones, valueFrom entries too; command and args: all, and JOB_COMPLETION_INDEX in an
    Indexed Job's pods), but a service's variable, a container with envFrom, and a shell's own
    command substitution; W1005 for a $(JOB_COMPLETION_INDEX) among them; each at its place
    (``env[j].value``: the entry's index in the list)."""
    field_ref = {"valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    container = {"env": [{"name": n, **({"value": v} if v is not None else field_ref)} for n, v in env],
                 "args": list(args)}
    if shell:
        container["command"] = ["/bin/bash", "-c"]
    if env_from:
        container["envFrom"] = [{"configMapRef": {"name": "cm"}}]
    manifest, prefix = pod(container, kind, mode)
    indexed = kind == "JobSet" and mode != "NonIndexed" or kind == "Job" and mode == "Indexed"
    want = []
    if not env_from:
        defined: set = set()
        for j, (n, v) in enumerate(env):
            for m in REFERENCE.finditer(v or ""):
                if m[0] != "$$" and m[1] not in defined and not m[1].endswith("_SERVICE_HOST"):
                    code = "W1005" if m[1] == JOB_COMPLETION_INDEX else "W1004"
                    want.append((code, f"{prefix}containers[0].env[{j}].value", m[1]))
            defined.add(n)
        defined |= {JOB_COMPLETION_INDEX} if indexed else set()
        for j, a in enumerate(args):
            for m in REFERENCE.finditer(a):
                name = m[1]
                if m[0] == "$$" or name in defined or name.endswith("_SERVICE_HOST"):
                    continue
                if shell and j == 0 and not re.fullmatch(r"[A-Z_][A-Z0-9_]*", name):
                    continue  # the script's command substitution
                code = "W1005" if name == JOB_COMPLETION_INDEX else "W1004"
                want.append((code, f"{prefix}containers[0].args[{j}]", name))
    assert sorted(warnings(manifest)) == sorted(want)
