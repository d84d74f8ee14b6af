"""What the API server and the JobSet webhook refuse, rcpc refuses first; what they accept, rcpc
accepts (issue "Kubernetes fidelity"). One test of each kind, over generated names, lengths and
values where there is a value space, with the reported example as one case located at its
recipe line:col. The oracles are written here from the rules' definitions (RFC 1123/1035, the
webhook's derived names), independently of rcpc's code."""

from __future__ import annotations

import string

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.core.diagnostics import CompileError
from rcpc.domain.tpu import ALIASES
from tests.conftest import Ws

LOWER, DIGITS = string.ascii_lowercase, string.digits
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def is_rfc1035(s: str) -> bool:
    """RFC 1035 label as Kubernetes checks it: 1-63 characters, a letter first, letters,
    digits and '-', a letter or digit last."""
    return (0 < len(s) <= 63 and s[0] in LOWER and s[-1] in LOWER + DIGITS
            and all(c in LOWER + DIGITS + "-" for c in s))


def is_rfc1123_label(s: str) -> bool:
    return (0 < len(s) <= 63 and s[0] in LOWER + DIGITS and s[-1] in LOWER + DIGITS
            and all(c in LOWER + DIGITS + "-" for c in s))


def is_subdomain(s: str) -> bool:
    return 0 < len(s) <= 253 and all(is_rfc1123_label(part) for part in s.split("."))


def is_qualified_name(k: str) -> bool:
    parts = k.split("/")
    if len(parts) > 2:
        return False
    name = parts[-1]
    ok_name = (0 < len(name) <= 63 and name[0].isascii() and name[0].isalnum() and name[-1].isascii()
               and name[-1].isalnum() and all(c.isascii() and (c.isalnum() or c in "-_.") for c in name))
    return ok_name and (len(parts) == 1 or is_subdomain(parts[0]))


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def fresh(factory) -> Ws:
    return Ws(factory.mktemp("w"))


def codes(ws: Ws, text: str) -> list:
    """The diagnostics of building ``text`` (empty when it builds)."""
    try:
        ws.build(text)
        return []
    except CompileError as exc:
        return exc.diagnostics


def rcp(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


# 1. names the controller derives ----------------------------------------------------------------
NAMES = """NAME = {name}
JOB = {job}
jobset(
    name = "js",
    metadata = {{"name": NAME}},
    spec = {{"replicatedJobs": [{{
        "name": JOB,
        "replicas": {replicas},
        "template": {{"spec": {{"completions": {completions}, "parallelism": 1, "template": {{"spec": {{
            "containers": [{{"name": "main", "image": "img"}}],
        }}}}}}}},
    }}]}},
)
"""
NAME_CHARS = st.text(LOWER[:6] + DIGITS[:4] + "-_.A", min_size=1, max_size=40)


@SETTINGS
@given(name=NAME_CHARS, job=NAME_CHARS, replicas=st.integers(1, 1000), completions=st.integers(1, 100))
@example(name="70b-train", job="slice", replicas=1, completions=1)      # the issue's example: 70b-train-slice-0
@example(name="train", job="slice_0", replicas=1, completions=1)        # the issue's other example
@example(name="a" * 40, job="b" * 10, replicas=1, completions=16)       # pod names over 63 characters
def test_names_the_controller_derives(tmp_path_factory, name, job, replicas, completions):
    text = NAMES.format(name=rcp(name), job=rcp(job), replicas=replicas, completions=completions)
    job_name = f"{name}-{job}-{replicas - 1}"
    pod_name = f"{job_name}-{completions - 1}-abcde"
    valid = is_subdomain(name) and is_rfc1035(job_name) and is_rfc1035(pod_name) and is_rfc1035(name)
    found = codes(fresh(tmp_path_factory), text)
    assert {d.code for d in found} == (set() if valid else {"E1002"})
    if valid:
        return
    first = found[0]
    name_is_wrong = not all(c in LOWER + DIGITS + "-" for c in name) or name[0] not in LOWER
    job_is_wrong = not all(c in LOWER + DIGITS + "-" for c in job)
    where = "NAME" if not is_subdomain(name) or name_is_wrong or not job_is_wrong else "JOB"
    assert (first.span.path, first.span.line, first.span.col) == ("recipes/r.rcp", line_of(text, f"{where} = "), len(where) + 4)


def test_issue_example_child_job_name(ws):
    f = ws.fails(NAMES.format(name='"70b-train"', job='"slice"', replicas=1, completions=1))
    assert f.where == "recipes/r.rcp:1:8"
    assert "child Job names such as '70b-train-slice-0' are not RFC 1035 labels" in f.message
    f = ws.fails(NAMES.format(name='"train"', job='"slice_0"', replicas=1, completions=1))
    assert f.where == "recipes/r.rcp:2:7" and "replicated job name 'slice_0'" in f.message


SUBDOMAIN = """jobset(name = "js", metadata = {{"name": "train"}}, spec = {{
    "network": {{"subdomain": {sub}}},
    "replicatedJobs": [{{"name": "w", "groupName": {group}, "template": {{"spec": {{"template": {{"spec": {{
        "containers": [{{"name": "main", "image": "img"}}]}}}}}}}}}}],
}})
"""


@SETTINGS
@given(sub=NAME_CHARS, group=NAME_CHARS)
@example(sub="svc.example", group="default")    # a dotted subdomain is not a Service name
def test_subdomain_and_group_names(tmp_path_factory, sub, group):
    text = SUBDOMAIN.format(sub=rcp(sub), group=rcp(group))
    found = codes(fresh(tmp_path_factory), text)
    expected = [] if is_rfc1035(sub) else [(2, "subdomain")]
    expected += [] if is_rfc1035(group) else [(3, "group name")]
    assert [(d.code, d.span.line) for d in found] == [("E1002", line) for line, _ in expected]


# 2. label values the controller writes ----------------------------------------------------------
COORDINATOR = """NAME = {name}
jobset(name = "js", metadata = {{"name": NAME}}, spec = {{
    "coordinator": {{"replicatedJob": {job}, "jobIndex": {ji}, "podIndex": {pi}}},
    "network": {{"subdomain": {sub}}},
    "replicatedJobs": [{{"name": {job}, "replicas": 4, "template": {{"spec": {{"completions": 8,
        "template": {{"spec": {{"containers": [{{"name": "main", "image": "img"}}]}}}}}}}}}}],
}})
"""
SHORT = st.text(LOWER, min_size=1, max_size=40)


@SETTINGS
@given(name=SHORT, job=SHORT, ji=st.integers(0, 3), pi=st.integers(0, 7), sub=st.none() | SHORT)
@example(name="a" * 30, job="trainer", ji=0, pi=0, sub=None)    # the issue's example: a 73-character value
def test_coordinator_label_value(tmp_path_factory, name, job, ji, pi, sub):
    text = COORDINATOR.format(name=rcp(name), job=rcp(job), ji=ji, pi=pi, sub=rcp(sub or ""))
    endpoint = f"{name}-{job}-{ji}-{pi}.{sub or name}"
    pod_name = f"{name}-{job}-3-7-abcde"
    found = codes(fresh(tmp_path_factory), text)
    expected = ([] if len(pod_name) <= 63 else ["E1002"]) + ([] if len(endpoint) <= 63 else ["E1003"])
    assert sorted(d.code for d in found) == expected
    for d in found:
        assert (d.span.line, d.span.col) == (1, 8)      # at NAME
        if d.code == "E1003":
            assert f"jobset.sigs.k8s.io/coordinator={endpoint!r} ({len(endpoint)} characters)" in d.message


def test_issue_example_coordinator_label(ws):
    f = ws.fails(COORDINATOR.format(name=rcp("a" * 30), job='"trainer"', ji=0, pi=0, sub='""'))
    assert f.code == "E1003" and "(73 characters)" in f.message and f.where == "recipes/r.rcp:1:8"


# 3. label keys -----------------------------------------------------------------------------------
LABELS = 'jobset(name = "js", metadata = {{"name": "js", "labels": {{{key}: "v"}}, "annotations": {{{key}: "v"}}}}, spec = {{}})\n'
KEYS = st.one_of(
    st.text(LOWER + DIGITS + "-._", min_size=1, max_size=70),
    st.tuples(st.text(LOWER + DIGITS + "-.", min_size=0, max_size=20), st.text(LOWER + "-_./", min_size=0, max_size=70))
    .map("/".join))


@SETTINGS
@given(KEYS)
@example("example.com/" + "a" * 66)      # the issue's example: a 66-character name part
@example("a/b/c")                        # two '/'
@example("kueue.x-k8s.io/queue-name")
def test_label_and_annotation_keys(tmp_path_factory, key):
    text = LABELS.format(key=rcp(key))
    found = [d for d in codes(fresh(tmp_path_factory), text) if d.code == "E1009"]
    if is_qualified_name(key):
        assert found == []
    else:
        col = text.index(rcp(key)) + 1
        assert [(d.span.line, d.span.col) for d in found][:1] == [(1, col)]
        assert len(found) == 2 and found[0].message.startswith("JobSet metadata.labels.")


def test_annotations_total_size(ws):
    text = 'jobset(name = "js", metadata = {{"name": "js", "annotations": {{"a": "{}"}}}}, spec = {{}})\n'
    f = ws.fails(text.format("x" * 262144))
    assert f.code == "E1009" and "annotations hold 262145 bytes, over the limit of 262144" in f.message
    ws.build(text.format("x" * 262143))


# 4. list-map keys and sets -----------------------------------------------------------------------
ENV = """BASE_ENV = [{base}]
TUNED_ENV = [{tuned}]
jobset(name = "js", metadata = {{"name": "js"}}, spec = {{"replicatedJobs": [{{"name": "w", "template": {{"spec": {{
    "template": {{"spec": {{"containers": [{{"name": "main", "image": "img", "env": BASE_ENV + TUNED_ENV}}]}}}},
}}}}}}]}})
"""


def env_items(names) -> str:
    return ", ".join(f'{{"name": "{n}", "value": "1"}}' for n in names)


@SETTINGS
@given(base=st.lists(st.sampled_from(["LIBTPU_INIT_ARGS", "A", "B"]), max_size=3),
       tuned=st.lists(st.sampled_from(["LIBTPU_INIT_ARGS", "C"]), max_size=2),
       crd=st.booleans())
@example(base=["LIBTPU_INIT_ARGS"], tuned=["LIBTPU_INIT_ARGS"], crd=True)    # the issue's example
def test_env_is_a_list_map_keyed_by_name(tmp_path_factory, base, tuned, crd):
    ws = fresh(tmp_path_factory)
    if crd:
        ws.write("rcp.toml", 'kube_schemas = ["builtin:jobset"]\n')
    text = ENV.format(base=env_items(base), tuned=env_items(tuned))
    found = codes(ws, text)
    names = base + tuned
    dup = [i for i, n in enumerate(names) if n in names[:i]]
    assert [d.code for d in found] == ["E1010"] * len(dup)
    for d, i in zip(found, dup):
        assert d.message.endswith(f"env[{i}]: a second entry with name {names[i]!r} in env, a list keyed by name: "
                                  "the API server refuses it")
        line = 1 if i < len(base) else 2
        assert d.span.line == line and d.related[0][0] == "first entry"


def test_issue_example_duplicate_env_at_second_entry(ws):
    f = ws.fails(ENV.format(base=env_items(["LIBTPU_INIT_ARGS"]), tuned=env_items(["LIBTPU_INIT_ARGS"])))
    assert f.code == "E1010" and f.where == "recipes/r.rcp:2:14"
    assert str(f.diag.related[0][1]) == "recipes/r.rcp:1:13"


PORTS = """jobset(name = "js", metadata = {{"name": "js"}}, spec = {{"replicatedJobs": [{{"name": "w", "template": {{"spec": {{
    "template": {{"spec": {{"volumes": [{volumes}], "containers": [{{"name": "main", "image": "img",
        "ports": [{ports}], "volumeMounts": [{mounts}]}}]}}}},
}}}}}}]}})
"""
PORT = st.tuples(st.sampled_from([8080, 8471]), st.sampled_from([None, "TCP", "UDP"]))


@SETTINGS
@given(ports=st.lists(PORT, max_size=3), volumes=st.lists(st.sampled_from(["a", "b"]), max_size=3),
       mounts=st.lists(st.sampled_from(["/x", "/y"]), max_size=3))
def test_ports_volumes_and_mounts_are_list_maps(tmp_path_factory, ports, volumes, mounts):
    text = PORTS.format(
        ports=", ".join(f'{{"containerPort": {p}' + (f', "protocol": "{q}"' if q else "") + "}" for p, q in ports),
        volumes=", ".join(f'{{"name": "{v}", "emptyDir": {{}}}}' for v in volumes),
        mounts=", ".join(f'{{"name": "a", "mountPath": "{m}"}}' for m in mounts))
    keyed = [(p, q or "TCP") for p, q in ports]   # protocol defaults to TCP before the keys are compared
    expected = sum(1 for i, k in enumerate(keyed) if k in keyed[:i]) + sum(
        1 for i, v in enumerate(volumes) if v in volumes[:i]) + sum(1 for i, m in enumerate(mounts) if m in mounts[:i])
    unmounted = 0 if "a" in volumes else len(mounts)   # a mount of no volume of the pod: E1014 (core validation)
    found = codes(fresh(tmp_path_factory), text)
    assert sorted(d.code for d in found) == ["E1010"] * expected + ["E1014"] * unmounted


POD = """manifest(name = "p", apiVersion = "v1", kind = "Pod", metadata = {{"name": "p"}}, spec = {{
    "volumes": [{volumes}],
    "containers": [{{"name": "main", "image": "img", "env": [{env}]}}],
}})
"""


def test_core_pods_follow_kubernetes_duplicate_rules(ws):
    """Core kinds: the API server refuses a repeated volume name but only warns about a
    repeated env name (pkg/api/pod/warnings.go), unless the later one extends $(NAME)."""
    out = ws.build(POD.format(volumes="", env=env_items(["A", "A"])))
    assert "p.yaml" in out["default"]
    warnings = [d for d in ws.last_compiler.diagnostics() if d.code == "W1001"]
    assert len(warnings) == 1 and "env var A hides its previous definition" in warnings[0].message
    ws.build(POD.format(volumes="", env='{"name": "P", "value": "/a"}, {"name": "P", "value": "$(P):/b"}'))
    assert not [d for d in ws.last_compiler.diagnostics() if d.code == "W1001"]
    f = ws.fails(POD.format(volumes='{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}', env=""))
    assert f.code == "E1010" and "volume name 'v' is used twice" in f.message


# 5. strings where Kubernetes wants strings ----------------------------------------------------------
ARGS = """jobset(name = "js", metadata = {{"name": "js"}}, spec = {{"replicatedJobs": [{{"name": "w", "template": {{"spec": {{
    "template": {{"spec": {{"containers": [{{"name": "main", "image": "img", "{field}": ["-t", {value}]}}]}}}},
}}}}}}]}})
"""
NON_STRINGS = st.one_of(st.integers(-10**9, 10**9).map(str), st.sampled_from(["1.5", "True", "false", "1e3", "[1]"]))


@SETTINGS
@given(field=st.sampled_from(["command", "args"]), value=NON_STRINGS)
@example(field="args", value="2592000")     # the issue's example: "args": ["-t", 2592000]
def test_command_and_args_items_are_strings(tmp_path_factory, field, value):
    text = ARGS.format(field=field, value=value)
    f = fresh(tmp_path_factory).fails(text)
    assert f.code == "E1008" and f.message.endswith(f"containers[0].{field}[1]: {field} items are strings, got "
                                                    f"{'list' if value == '[1]' else f.message.rsplit(' ', 1)[-1]}")
    assert f.where == f"recipes/r.rcp:2:{text.splitlines()[1].index(value) + 1}"


@SETTINGS
@given(kind=st.sampled_from(["ConfigMap", "Secret"]), value=NON_STRINGS)
@example(kind="ConfigMap", value="8")
def test_configmap_and_secret_data_are_strings(tmp_path_factory, kind, value):
    text = f'manifest(name = "m", apiVersion = "v1", kind = "{kind}", data = {{"k": {value}}})\n'
    f = fresh(tmp_path_factory).fails(text)
    assert f.code == "E1008" and f.message.startswith(f"{kind} data.k: {kind} data values are strings")
    assert f.where == f"recipes/r.rcp:1:{text.index(value) + 1}"


# 6. nulls the API server prunes -------------------------------------------------------------------------
NULLS = """jobset(name = "js", metadata = {{"name": "js", "labels": {md}}}, spec = {{"replicatedJobs": [{{"name": "w",
    "template": {{"spec": {{"template": {{"metadata": {{"labels": {md}, "annotations": {md}}}, "spec": {{
        "serviceAccountName": {sa}, "containers": [{{"name": "main", "image": "img", "env": {env}}}],
    }}}}}}}}}}]}})
"""


@SETTINGS
@given(md=st.sampled_from(["None", "{}", '{"a": "b"}']), sa=st.sampled_from(["None", '"sa"']),
       env=st.sampled_from(["None", "[]", '[{"name": "X", "value": None}]']), crd=st.booleans())
@example(md="None", sa="None", env="None", crd=True)       # what XPK writes
def test_nulls_the_api_server_prunes_are_valid_and_kept(tmp_path_factory, md, sa, env, crd):
    ws = fresh(tmp_path_factory)
    if crd:
        ws.write("rcp.toml", 'kube_schemas = ["builtin:jobset"]\n')
    out = ws.build(NULLS.format(md=md, sa=sa, env=env))["default"]["js.yaml"]
    doc = yaml.safe_load(out)
    pod = doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert pod["spec"]["serviceAccountName"] == (None if sa == "None" else "sa")   # the render keeps them


def test_a_null_list_item_is_not_pruned(ws):
    ws.write("rcp.toml", 'kube_schemas = ["builtin:jobset"]\n')
    text = NULLS.format(md="None", sa="None", env="None").replace('"containers": [', '"containers": [None, ')
    f = ws.fails(text)
    assert f.code == "E1101" and "containers[0]: None is not of type 'object'" in f.message


# 7. TPU rules wherever the topology is written --------------------------------------------------------
TPU = """S = tpu_slice({spec})
jobset(name = "js", metadata = {{"name": "js"}}, spec = {{"replicatedJobs": [{{"name": "w", "template": {{"spec": {{
    "parallelism": {par}, "completions": {par},
    "template": {{
        "metadata": {{"annotations": {{"cloud.google.com/gke-tpu-slice-topology": S.topology}}}},
        "spec": {{"nodeSelector": {{"cloud.google.com/gke-tpu-accelerator": S.node_selector["cloud.google.com/gke-tpu-accelerator"]}},
            "containers": [{{"name": "main", "image": "img", "resources": {{"limits": {{"google.com/tpu": {tpu}}}}}}}]}},
    }},
}}}}}}]}})
"""


@SETTINGS
@given(topology=st.sampled_from(["2x2x1", "2x2x2", "2x2x4", "4x4x4", "4x4x8", "4x8x8"]),
       tpu=st.integers(1, 8), par=st.integers(1, 64))
@example(topology="4x4x4", tpu=2, par=16)     # the XPK gemma4 shape with one chip request halved
def test_tpu_rules_read_the_topology_annotation(tmp_path_factory, topology, tpu, par):
    from rcpc.domain.tpu import tpu_slice

    s = tpu_slice(f"tpu7x:{topology}", None)
    found = codes(fresh(tmp_path_factory), TPU.format(spec=rcp(f"tpu7x:{topology}"), tpu=tpu, par=par))
    expected = ([] if tpu == s.chips_per_host else ["E1006"])
    expected += [] if par == s.hosts or (s.hosts == 1 and par == 1) else ["E1007", "E1007"]
    assert sorted(d.code for d in found) == sorted(expected)


def test_topology_given_twice_must_agree(ws):
    text = TPU.format(spec='"tpu7x:4x4x4"', tpu=4, par=16).replace(
        '"cloud.google.com/gke-tpu-accelerator": S.node_selector["cloud.google.com/gke-tpu-accelerator"]',
        '"cloud.google.com/gke-tpu-accelerator": "tpu7x", "cloud.google.com/gke-tpu-topology": "4x4x8"')
    found = codes(ws, text)
    assert "E1013" in [d.code for d in found]


def test_parallelism_left_out_is_one_pod(ws):
    """A TPU job whose parallelism is left out (or null, as an unfilled library slot) runs one
    pod: on a multi-host slice that is E1007, at the job spec."""
    text = TPU.format(spec='"tpu7x:4x4x4"', tpu=4, par="None")
    f = ws.fails(text)
    assert f.code == "E1007" and "parallelism is not set (Kubernetes runs 1 pod)" in f.message
    assert f.where == f"recipes/r.rcp:{line_of(text, 'parallelism')}:20"
    ws.build(TPU.format(spec='"tpu7x:2x2x1"', tpu=4, par="None"))


JOB_SPEC = ('{{"template": {{"spec": {{"restartPolicy": "Never", "nodeSelector": S.node_selector, "containers": '
            '[{{"name": "main", "image": "img", "resources": {{"limits": {{"google.com/tpu": S.chips_per_host}}}}}}]}}}}'
            '{fields}}}')
JOBS = {  # a JobSpec (JOB_SPEC) where each kind has it, and its pods on slice S
    "JobSet": 'jobset(name = "js", spec = {{"replicatedJobs": [{{"name": "w", "template": {{"spec": ' + JOB_SPEC + '}}}}]}})',
    "Job": 'manifest(name = "j", apiVersion = "batch/v1", kind = "Job", metadata = {{"name": "j"}}, spec = ' + JOB_SPEC + ')',
    "CronJob": 'manifest(name = "c", apiVersion = "batch/v1", kind = "CronJob", metadata = {{"name": "c"}}, '
               'spec = {{"schedule": "0 * * * *", "jobTemplate": {{"spec": ' + JOB_SPEC + '}}}})',
}


@SETTINGS
@given(kind=st.sampled_from(sorted(JOBS)), topology=st.sampled_from(["2x2x1", "2x2x2", "4x4x4", "4x4x8"]),
       par=st.one_of(st.none(), st.just("None"), st.integers(1, 64)), completions=st.booleans())
@example(kind="JobSet", topology="4x4x8", par=None, completions=False)  # the new user's JobSet: 1 pod of 32
def test_a_tpu_job_runs_one_pod_a_host_whatever_fields_it_writes(tmp_path_factory, kind, topology, par, completions):
    """E1007 on every JobSpec of a Job, CronJob or JobSet whose pods run on a multi-host
    slice, also one that writes none of the Job fields (Kubernetes' default parallelism is
    1: it ran 1 pod of 32, and check said nothing); ``par`` None: parallelism left out,
    "None": written as null; ``completions``: written, as parallelism."""
    from rcpc.domain.tpu import tpu_slice

    hosts = tpu_slice(f"tpu7x:{topology}", None).hosts
    fields = "" if par is None else f', "parallelism": {par}'
    if completions and type(par) is int:
        fields += f', "completions": {par}'
    text = f'S = tpu_slice("tpu7x:{topology}")\n' + JOBS[kind].format(fields=fields) + "\n"
    found = [d.code for d in codes(fresh(tmp_path_factory), text)]
    wrong = 0 if (par == hosts or hosts == 1 and par in (None, "None", 1)) else 1 + (completions and type(par) is int)
    # a JobSet's Job is Indexed (the webhook's default), which needs completions once parallelism is set
    indexed = kind == "JobSet" and type(par) is int and not completions
    assert sorted(found) == ["E1007"] * wrong + ["E1014"] * indexed, text


SELECTED = """jobset(name = "js", spec = {{"replicatedJobs": [{{"name": "w", "template": {{"spec": {{"template": {{"spec": {{
    "nodeSelector": {{"cloud.google.com/gke-tpu-accelerator": {value}}},
    "containers": [{{"name": "main", "image": "img"}}],
}}}}}}}}}}]}})
"""


@SETTINGS
@given(value=st.one_of(st.sampled_from(sorted(set(ALIASES) | {"tpu-v7x", "TPU7X", "v6e-slice", ""})),
                       st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,18}[a-z0-9])?", fullmatch=True)))  # valid label values
@example(value="tpu-v7x")  # the new user's (Ironwood is tpu7x): the pods were never scheduled, check said ok
def test_a_tpu_accelerator_no_gke_node_has_is_a_warning(tmp_path_factory, value):
    """W1002 exactly for the values GKE labels no TPU node with, the accelerator names rcpc
    takes in tpu_slice() ("v7x") included."""
    from rcpc.domain.tpu import GKE_ACCELERATORS

    found = [d for d in codes_and_warnings(fresh(tmp_path_factory), SELECTED.format(value=rcp(value)))
             if d.code == "W1002"]
    assert len(found) == (value not in GKE_ACCELERATORS)


def codes_and_warnings(ws: Ws, text: str) -> list:
    """The errors of building ``text``, or its warnings when it builds."""
    try:
        ws.build(text)
    except CompileError as exc:
        return exc.diagnostics
    return ws.last_compiler.diagnostics()


EXIT_CODES = """jobset(name = "js", metadata = {{"name": "js"}}, spec = {{"replicatedJobs": [{{"name": "w", "template": {{"spec": {{
    "podFailurePolicy": {{"rules": [{{"action": "FailJob", "onExitCodes": {{"operator": "NotIn", "values": {values}}}}}]}},
    "template": {{"spec": {{"restartPolicy": "Never", "containers": [{{"name": "main", "image": "img"}}]}}}},
}}}}}}]}})
"""


@SETTINGS
@given(st.lists(st.sampled_from([42, 127, 128, 255]), min_size=1, max_size=5))
@example([42, 127, 128, 42])      # an exit code listed twice, as `[42] + range(127, 256) + [42]` would
def test_exit_code_values_are_a_set(tmp_path_factory, values):
    """A repeated exit code is the CRD's set rule's (E1010); values out of ascending order are
    Kubernetes' batch validation's (E1014, validatePodFailurePolicyRuleOnExitCodes)."""
    found = codes(fresh(tmp_path_factory), EXIT_CODES.format(values=values))
    repeated = [i for i, v in enumerate(values) if v in values[:i]]
    unordered = any(a > b for a, b in zip(values, values[1:]))
    assert [d.code for d in found] == ["E1014"] * unordered + ["E1010"] * len(repeated)
    found = found[unordered:]
    for d, i in zip(found, repeated):
        assert d.message.endswith(f"onExitCodes.values[{i}]: {values[i]!r} is repeated in values, a set")
