"""``rcpc import manifest`` reading a trainer's flag words (issue 19): a key written again
starts a new ``maxtext_flags`` layer (the last ``key=value`` wins, as MaxText's command line
reads it), an entry that sets the value already in force is acknowledged for lint (W0330),
a value single-quoted where the shell needs no quotes is read with ``shell_quoted``, and a
trainer that is not MaxText's gets ``schema = None``. The proof and lint are the oracles of
the end-to-end test; the property test checks the split against the words themselves.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rcpc.domain.maxtext.emit import shell_quote
from rcpc.domain.lint import lint
from rcpc.domain.workspace import Workspace
from rcpc.importer import proof
from rcpc.importer.driver import import_manifest
from rcpc.importer.literals import quoted_flag_value, scalar
from rcpc.importer.manifest import FLAGS_NAME, SHELL_NAME, is_maxtext, split_startup

REPO = Path(__file__).resolve().parents[1]
TRAINER = "python3 -m MaxText.train MaxText/configs/base.yml"
KEYS = ["steps", "run_name", "prompt", "calibration"]
# value texts: bare, needing quotes (a space), quoted by choice only (a comma), numbers, bools
VALUES = ["3", "-1", "0.25", "True", "false", "flash", "a b.", "fixed,-224,224", "x/y:z"]


def _word(key: str, text: str, always: bool) -> str:
    return shell_quote(f"{key}={text}", always)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(VALUES), st.booleans()), min_size=1, max_size=12))
def test_flag_words_split_into_layers(words):
    raws = [_word(k, v, always) for k, v, always in words]
    text = f"{TRAINER} {' '.join(raws)}"
    startup, notes = split_startup(text, (), lambda w: None)
    # the shell form writes a word bare, or with quotes it needs (either form), or with quotes
    # it needs not (shell_quoted's form): a key written bare and with extra quotes has no spelling
    forms: dict = {}
    for k, v, _ in words:
        forms.setdefault(k, set())
    for (k, v, always), raw in zip(words, raws):
        plain, quoted = _word(k, v, False), _word(k, v, True)
        forms[k].add("either" if plain == quoted else "bare" if raw == plain else "quoted")
    if any({"bare", "quoted"} <= f for f in forms.values()):
        assert startup.flags is None and len(notes) == 1 and notes[0].code == "W1200"
        assert f"{{{FLAGS_NAME}.shell}}" not in text
        return
    assert notes == [] and startup.flags is not None
    # every word, in order, once; a new layer exactly where its key is already in the layer
    flat = [(k, v) for layer in startup.flags for k, v in layer.items()]
    assert flat == [(k, scalar(v)) for k, v, _ in words]
    layer_of, layers, seen = [], 0, set()
    for k, _, _ in words:
        if k in seen:
            layers, seen = layers + 1, set()
        seen.add(k)
        layer_of.append(layers)
    assert len(startup.flags) == layers + 1
    # the entries that set the value in force are the no-ops lint reports (W0330)
    noop, in_force = set(), {}
    for (k, v, _), at in zip(words, layer_of):
        if in_force.get(k) == v:
            noop.add((at, k))
        in_force[k] = v
    assert startup.noop == noop
    # the keys with extra quotes, in the order of their first such word
    assert list(startup.quoted) == list(dict.fromkeys(k for (k, v, _), raw in zip(words, raws)
                                                      if raw != _word(k, v, False)))
    assert startup.shell == (SHELL_NAME if startup.quoted else f"{FLAGS_NAME}.shell")
    assert shlex.split(" ".join(raws)) == [f"{k}={v}" for k, v, _ in words]


@settings(deadline=None)
@given(st.sampled_from(KEYS), st.sampled_from(VALUES), st.booleans())
def test_quoted_flag_value(key, text, always):
    raw = _word(key, text, always)
    found = quoted_flag_value(key, raw, ())
    if not raw.startswith(f"{key}='"):
        assert found is None  # bare: flag_value's case
    else:
        assert found == (scalar(text), raw != _word(key, text, False))
    assert quoted_flag_value(key, raw.replace("'", '"'), ()) is None


def test_trainer_is_maxtext():
    assert is_maxtext("python3 -m MaxText.train MaxText/configs/base.yml")
    assert is_maxtext("python3 -m maxtext.trainers.pre_train.train maxtext/configs/base.yml")
    assert not is_maxtext("python3 -m src.maxdiffusion.train_wan src/maxdiffusion/configs/base_wan_14b.yml")
    assert not is_maxtext("python3 -m maxtextish.train configs/base.yml")


TEMPLATE = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: ${WORKLOAD_NAME}
spec:
  replicatedJobs:
  - name: slice-job
    replicas: 1
    template:
      spec:
        template:
          spec:
            containers:
            - name: trainer
              image: ${WORKLOAD_IMAGE}
              command:
              - bash
              - -c
              - |
                set -e && cd /app && python3 -m diffusion.train diffusion/configs/base_x.yml out=${BASE_OUTPUT_DIR} steps=3 method='fixed,-224,224' prompt='a b.' out=${BASE_OUTPUT_DIR}/run steps=3 method='fixed,-224,224'
"""


def test_layers_quotes_and_another_trainer_import_equal_and_lint_clean(tmp_path):
    """No library function has this shape: the data literal carries the flag set (two
    layers, the no-op entries acknowledged, the quoted key, schema = None) and is equal."""
    src = tmp_path / "t.yaml"
    src.write_text(TEMPLATE)
    imported = import_manifest(Workspace.find(REPO), src, "t.yaml", {}, None)
    assert imported.how == "a data literal" and imported.notes == ()
    text = imported.text
    assert "schema = None" in text and text.count("# rcpc: ignore[W0330]") == 2
    assert f'{SHELL_NAME} = {FLAGS_NAME}.shell_quoted(["method"])' in text
    out = tmp_path / "r.rcp"
    out.write_text(text)
    assert imported.check(proof.fresh_compiler(REPO), out) == []
    assert [(d.code, d.message) for d in lint(proof.fresh_compiler(REPO), [out])] == []
