"""``rcpc import manifest`` of a template whose placeholders stand in fields the Kubernetes
schema types as an integer, a boolean or an integer-or-string (``replicas: ${NUM_SLICES}``,
``parallelism: ${HOSTS}``): each becomes a typed param (rcpc.importer.fields), the import is
proven equal, and every diagnostic of the import's own build is at the user's file
(rcpc.importer.relocate), never at the temporary recipe the import removes.

The oracle of equality is the real envsubst(1) (gettext) and PyYAML's YAML 1.1 reading, as
kubectl reads it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from rcpc.cli import main
from rcpc.domain.kube.schema import builtin_jobset_schema
from rcpc.domain.kube.manifests import load_manifests
from rcpc.importer import fields, proof

REPO = Path(__file__).resolve().parents[1]
LLAMA = REPO.parent / "shared" / "data" / "tpu-recipes" / "llama3.1-70b_8k-bf16-tpu7x-4x4x4.yaml"
SMALL = """apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: ${NAME}
spec:
  failurePolicy:
    maxRestarts: 0
  replicatedJobs:
  - name: w
    replicas: 1
    template:
      spec:
        parallelism: 2
        completions: 2
        backoffLimit: 0
        template:
          spec:
            hostNetwork: true
            terminationGracePeriodSeconds: 30
            nodeSelector:
              cloud.google.com/gke-tpu-accelerator: tpu7x
              cloud.google.com/gke-tpu-topology: 2x2x2
            containers:
            - name: main
              image: ${IMAGE}
              ports:
              - containerPort: 8471
              resources:
                limits:
                  google.com/tpu: 4
"""
# keys whose (first) value is replaced, and the param type a plain placeholder there gets
KEYS = {"replicas": "int", "parallelism": "int", "completions": "int", "backoffLimit": "int", "maxRestarts": "int",
        "terminationGracePeriodSeconds": "int", "containerPort": "int", "hostNetwork": "bool",
        "google.com/tpu": "int"}
INT_OR_STRING = {"google.com/tpu"}
SOURCES = {"small": SMALL, "llama": LLAMA.read_text() if LLAMA.is_file() else ""}
LOCATED = re.compile(r"^(\S+?):(\d+):(\d+): (error|warning)\[([EW]\d{4})\]", re.M)


def _run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def _envsubst(text: str, values: dict) -> str:
    exe = shutil.which("envsubst")
    if exe is None:
        pytest.fail("envsubst not found: install gettext-base (the oracle of this test)")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", **values}
    return subprocess.run([exe, " ".join("${%s}" % k for k in values)], input=text.encode(), env=env,
                          capture_output=True, check=True).stdout.decode()


def _placeholder(text: str, key: str, style: str) -> tuple[str, str, int]:
    """``text`` with the first ``key: value`` written with a placeholder in ``style``
    (plain ``${P}``, quoted ``"${P}"``, or part of the value ``1${P}``); the param's name and
    the line."""
    name = "P_" + re.sub(r"\W", "_", key).upper()
    m = re.search(rf"^(\s*-?\s*{re.escape(key)}: )([^\s#]+)", text, re.M)
    assert m, key
    value = {"plain": "${%s}", "quoted": '"${%s}"', "part": "1${%s}"}[style] % name
    return text[:m.start(2)] + value + text[m.end(2):], name, text.count("\n", 0, m.start()) + 1


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(source=st.sampled_from(sorted(SOURCES)),
       chosen=st.dictionaries(st.sampled_from(sorted(KEYS)), st.sampled_from(["plain", "plain", "quoted", "part"]),
                              min_size=1, max_size=3),
       sets=st.dictionaries(st.sampled_from(sorted(KEYS)), st.integers(0, 40), max_size=2))
@example(source="llama", chosen={"replicas": "plain", "parallelism": "plain"}, sets={})  # the report
@example(source="llama", chosen={"replicas": "plain", "parallelism": "plain"}, sets={"parallelism": 16})
def test_a_placeholder_in_a_typed_field(source, chosen, sets, tmp_path_factory, monkeypatch, capsys):
    """Any placeholder in an integer, boolean or integer-or-string field of a JobSet: plain,
    it is a typed param and the import is equal (a default the import chose that the rules
    refuse is a located W1201); quoted or part of an integer or boolean field's value, it is
    E1207 at its place. Whatever the outcome, every diagnostic is located in the user's
    file with a hint, and none names the temporary recipe."""
    monkeypatch.chdir(REPO)
    tmp = tmp_path_factory.mktemp("typed")
    text = SOURCES[source]
    chosen = {k: s for k, s in chosen.items() if re.search(rf"^\s*-?\s*{re.escape(k)}: ", text, re.M)}
    assume(chosen)  # a key the source writes
    names, lines = {}, {}
    for key, style in chosen.items():
        text, name, line = _placeholder(text, key, style)
        names[key], lines[key] = name, line
    src = tmp / "t.yaml"
    src.write_text(text)
    argv = ["import", "manifest", str(src), "-o", str(tmp / "r.rcp")]
    set_values = {names[k]: str(v) for k, v in sets.items() if chosen.get(k) == "plain"}
    for name, value in set_values.items():
        argv += ["--set", f"{name}={value}"]
    code, _, err = _run(argv, capsys)
    assert "rcpc-import-" not in err and "imported.rcp" not in err
    located = LOCATED.findall(err)
    assert all(path == str(src) for path, *_ in located), err
    blocks = [b for b in re.split(r"(?m)^(?=\S+:\d+:\d+: (?:error|warning)\[)", err) if LOCATED.match(b)]
    assert all("\nhelp: " in b for b in blocks), err  # each with a hint
    refused = {k for k, s in chosen.items() if s != "plain" and k not in INT_OR_STRING}
    if refused:
        assert code == 1
        for key in refused:
            assert f"{src}:{lines[key]}:" in err and "error[E1207]" in err, err
        return
    if code == 1:  # a value set (or an int-or-string text) the Kubernetes and TPU rules refuse: located
        assert located and all(sev == "error" for _, _, _, sev, _ in located if sev == "error"), err
        assert set_values or any(s != "plain" for s in chosen.values()), err
        return
    assert "equal" in err, err
    recipe = (tmp / "r.rcp").read_text()
    for key, style in chosen.items():
        if style == "plain":
            assert re.search(rf"^{names[key]} = param\(\s*{KEYS[key]},", recipe, re.M), recipe
    for _, line, _, sev, code_ in located:  # a warning of a default the import chose, at its placeholder
        assert sev == "warning" and code_ in ("W1200", "W1201")
    # equal to envsubst(1) with a third set of values, read as kubectl reads YAML
    values = {n: ("true" if KEYS[k] == "bool" else "7") if chosen[k] == "plain" else f"x{i}"
              for i, (k, n) in enumerate(names.items())}
    values.update({n: n.lower().replace("_", "-") for n in re.findall(r"\$\{(\w+)\}", text)
                   if n not in values and n != "TPU_WORKER_ID"})
    (render,) = proof.renders(proof.fresh_compiler(REPO), tmp / "r.rcp", values).values()
    assert yaml.safe_load(render) == yaml.safe_load(_envsubst(text, values))


def _typed_paths(schema, path=(), depth=0):
    """(path, field type) of every integer, boolean and int-or-string field of a JobSet
    schema, a list's item at index 0, a map's value under key ``k``."""
    if not isinstance(schema, dict) or depth > 14:
        return
    t = fields.field_type({"properties": {"x": schema}}, ("x",))
    if t in fields.TYPES:
        yield path, t
    for k, s in (schema.get("properties") or {}).items():
        yield from _typed_paths(s, path + (k,), depth + 1)
    if isinstance(schema.get("items"), dict):
        yield from _typed_paths(schema["items"], path + (0,), depth + 1)
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _typed_paths(schema["additionalProperties"], path + ("k",), depth + 1)


TYPED = sorted(set(_typed_paths(builtin_jobset_schema())), key=str)


def _yaml_at(path: tuple, value: str) -> str:
    """A YAML document holding ``value`` (written as is) at ``path``."""
    lines, indent = ["apiVersion: jobset.x-k8s.io/v1alpha2", "kind: JobSet"], ""
    for i, p in enumerate(path):
        last = i == len(path) - 1
        if isinstance(p, int):
            lines.append(f"{indent}-" + (f" {value}" if last else ""))
        else:
            lines.append(f"{indent}{p}:" + (f" {value}" if last else ""))
        indent += "  "
    return "\n".join(lines) + "\n"


def test_the_schema_has_typed_fields():
    kinds = {t for _, t in TYPED}
    assert {"integer", "boolean", "int-or-string"} <= kinds and len(TYPED) > 200


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(typed=st.sampled_from(TYPED), style=st.sampled_from(["plain", "bare", "quoted", "part"]))
@example(typed=(("spec", "replicatedJobs", 0, "replicas"), "integer"), style="plain")
@example(typed=(("spec", "replicatedJobs", 0, "template", "spec", "parallelism"), "integer"), style="plain")
def test_every_typed_field_of_the_jobset_schema(typed, style, tmp_path_factory):
    """Each integer, boolean and int-or-string field of rcpc's JobSet schema: a plain
    placeholder there is a typed param of its type, at its place; a quoted one, or one that
    is part of the value, is E1207 there (an int-or-string field takes the string: str)."""
    from rcpc.core.diagnostics import CompileError

    path, field = typed
    value = {"plain": "${P}", "bare": "$P", "quoted": '"${P}"', "part": "1${P}"}[style]
    style = "plain" if style == "bare" else style  # envsubst replaces $P as it does ${P}
    f = tmp_path_factory.mktemp("f") / "t.yaml"
    f.write_text(_yaml_at(path, value))
    source, (doc,) = load_manifests(f, "t.yaml")
    line = len(f.read_text().splitlines())
    try:
        places = fields.typed_places(doc, source.text, builtin_jobset_schema(), {"P"})
    except CompileError as exc:
        assert style != "plain" and field != "int-or-string"
        (d,) = exc.diagnostics
        assert d.code == "E1207" and d.span.path == "t.yaml" and d.span.line == line and d.hint
        return
    if style != "plain":
        assert field == "int-or-string" and places == []
        return
    (place,) = places
    assert place.name == "P" and place.path == path and place.span.line == line
    assert place.type == fields.TYPES[field][0]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["int", "bool", "float"]), st.one_of(st.integers(-10**6, 10**6), st.booleans(),
                                                          st.floats(-1e6, 1e6, allow_nan=False).map(repr),
                                                          st.text("0123456789+-.eE_xo", max_size=6)))
def test_set_text_is_what_yaml_reads_back(ptype, raw):
    """``--set`` text of a typed param is accepted only when ``rcpc build --set`` reads it as
    that type and envsubst's YAML 1.1 reads it back as the same value (``010`` is octal 8 to
    YAML, ``1e-6`` a string); else E1207 at the placeholder, with a hint. The proof's second
    value of an accepted text is accepted too, and differs."""
    from rcpc.core.diagnostics import CompileError
    from rcpc.core.source import Span

    text = str(raw).lower() if isinstance(raw, bool) else str(raw)
    field = {"int": "integer", "bool": "boolean", "float": "number"}[ptype]
    place = fields.Place("P", ("x",), Span("t.yaml", 3, 4, 3, 8), field, {})
    try:
        fields.check_set(place, text)
    except CompileError as exc:
        (d,) = exc.diagnostics
        assert d.code == "E1207" and d.span == place.span and d.hint
        read = None
        try:
            read = yaml.safe_load(text)
        except yaml.YAMLError:
            pass
        if ptype == "int":
            assert not (type(read) is int and text == str(read))
        if ptype == "bool":
            assert type(read) is not bool
        return
    read = yaml.safe_load(text)
    assert type(read) is {"int": int, "bool": bool, "float": float}[ptype]
    other = fields.other_text(ptype, text)
    assert other != text
    fields.check_set(place, other)


def test_a_number_field_is_a_float_param(tmp_path):
    f = tmp_path / "t.yaml"
    f.write_text("apiVersion: x/v1\nkind: T\nmetadata:\n  name: n\nspec:\n  ratio: ${R}\n")
    source, (doc,) = load_manifests(f, "t.yaml")
    schema = {"properties": {"spec": {"properties": {"ratio": {"type": "number"}}}}}
    (place,) = fields.typed_places(doc, source.text, schema, {"R"})
    assert place.type == "float" and fields.default_text(place) == "1.0"
    assert type(yaml.safe_load(fields.other_text("float", "1.0e+20"))) is float  # written with a dot


@pytest.mark.parametrize("old, new, where", [
    ("  ttlSecondsAfterFinished: 43200", "  ttlSecondsAfterFinished: 43200\n  fooBar: 1", "fooBar"),  # unknown field
    ("backoffLimit: 0 ", 'backoffLimit: "0" ', '"0"'),                      # a string in an integer field
    ("per_device_batch_size=2", "per_device_batch_size=abc", "per_device_batch_size="),  # a MaxText value
    ("name: ${WORKLOAD_NAME}", "name: Bad_Name", "Bad_Name"),                 # not a DNS-1123 name
])
def test_errors_of_the_import_build_are_at_the_template(old, new, where, tmp_path, monkeypatch, capsys):
    """A template the recipe cannot be built from (the recipe is the template as data): each
    error at the template's line and column of the value (an unknown field: of its key;
    a MaxText flag: of its word), with a hint; nothing names the
    temporary recipe rcpc import built."""
    monkeypatch.chdir(REPO)
    text = LLAMA.read_text()
    assert old in text
    src = tmp_path / "t.yaml"
    src.write_text(text.replace(old, new, 1))
    code, out, err = _run(["import", "manifest", str(src)], capsys)
    assert code == 1 and out == ""
    assert "rcpc-import-" not in err and "imported.rcp" not in err
    line = next(i for i, ln in enumerate(src.read_text().splitlines(), 1) if where in ln)
    col = src.read_text().splitlines()[line - 1].index(where) + 1
    located = LOCATED.findall(err)
    assert located and all(path == str(src) for path, *_ in located), err
    assert any(int(ln) == line and int(c) == col for _, ln, c, _, _ in located), err
    assert "\nhelp: " in err
