"""``--flag RENDER.KEY=VALUE`` (docs/cli.md, Flag overrides): one MaxText flag of the flag set a
render carries, as that set's last layer, in every shape a render carries flags (flag file,
JobSet argv items, ``--maxtext=`` wrapped items, a ``bash -c`` string, a command file); typed by
the MaxText schema; refused by the checks and contracts a recipe's flag meets; its provenance
names the item."""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rcpc.api import Workspace as Api
from rcpc.cli import main
from rcpc.core.diagnostics import CompileError

RECIPE = '''T = param(bool, default = False)
F = maxtext_flags({"steps": 10, "run_name": "base", "remat_policy": "full"},
                  {"per_device_batch_size": 2} if T else {})
flag_file(name = "trainer", flags = F)
command_file(name = "launch", argv = ["bash", "-c", f"python3 -m MaxText.train base.yml {F.shell} && echo done"])
jobset(name = "js", spec = {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": {
    "containers": [
        {"name": "main", "image": "img", "command": ["python3", "-m", "MaxText.train", "base.yml"] + F.argv},
        {"name": "wrapped", "image": "img", "args": [f"--maxtext={t}" for t in F.argv]},
        {"name": "joined", "image": "img", "args": ["bash", "-c", "train " + " ".join(F.argv)]},
    ]}}}}}]})
variant("default")
variant("t", set = {"T": True}, against = "default",
        changes = {"trainer": ["per_device_batch_size"], "launch": ["per_device_batch_size"],
                   "js": ["per_device_batch_size"]})
'''


def _api(root: Path) -> Api:
    (root / "recipes").mkdir(parents=True, exist_ok=True)
    (root / "rcp.toml").write_text('maxtext_schema = "builtin:maxtext"\n')
    (root / "recipes" / "r.rcp").write_text(RECIPE)
    return Api(root)


def _last(tokens: list[str], key: str) -> str | None:
    """The value MaxText reads for ``key`` from ``key=value`` words: the last one's."""
    found = [t.split("=", 1)[1] for t in tokens if t.startswith(key + "=")]
    return found[-1] if found else None


def _read_back(files: dict, key: str) -> list[str | None]:
    """What MaxText reads for ``key`` in every place of the renders, parsed independently of
    rcpc: the flag file and the command file by shlex, each JobSet container by YAML (argv
    items, ``--maxtext=`` wrapped items, a ``bash -c`` string)."""
    out = [_last(shlex.split(files["trainer.flags"]), key)]
    launch = shlex.split(files["launch.sh"].split("\n", 1)[1].replace("\\\n", " "))
    out.append(_last(shlex.split(launch[2]), key))
    spec = yaml.safe_load(files["js.yaml"])["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    main_, wrapped, joined = spec["containers"]
    out.append(_last(main_["command"], key))
    out.append(_last([a.removeprefix("--maxtext=") for a in wrapped["args"]], key))
    out.append(_last(joined["args"][2].split(" "), key))  # argv tokens joined unquoted, as the recipe writes them
    return out


_names = st.text(st.sampled_from("abc XYZ_-.'\"$#,:"), min_size=1, max_size=12)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.integers(-1, 10 ** 6), min_size=1, max_size=3), name=_names,
       render=st.sampled_from(["trainer", "trainer.flags", "js", "launch.sh"]))
@example(steps=[20], name="sweep #3 'a'", render="trainer")
def test_the_last_flag_reaches_every_shape_as_the_last_layer(tmp_path, steps, name, render):
    """Each --flag item is a later layer of the one flag set, in every render carrying it:
    MaxText reads the last item's value everywhere (the recipe's own value before it)."""
    api = _api(Path(tempfile.mkdtemp(dir=tmp_path)))
    items = [f"{render}.steps={n}" for n in steps] + [f"{render}.run_name={name}"]
    rendered = api.render("r", flags=items)
    assert rendered.variant == "custom"
    assert _read_back(rendered.files, "steps") == [str(steps[-1])] * 5
    # the shapes that quote for the shell give MaxText the text back; the one that joins argv
    # tokens into a bash string unquoted holds the same token, as the recipe's own tokens are
    read = _read_back(rendered.files, "run_name")
    assert all(yaml.safe_load(v) == name for v in read[:4])
    assert read[4] is not None
    assert _read_back(api.render("r").files, "steps") == ["10"] * 5


@pytest.mark.parametrize("item, want", [
    ("trainer.steps=10", "steps=10"),            # an int key: the int
    ("trainer.run_name=10", "run_name='10'"),    # a str key: the string "10", quoted for YAML
    ("trainer.enable_checkpointing=false", "enable_checkpointing=false"),
    ("trainer.learning_rate=1e-4", "learning_rate=1e-4"),
])
def test_the_value_is_typed_by_the_maxtext_schema(tmp_path, item, want):
    text = _api(tmp_path).render("r", flags=[item]).files["trainer.flags"]
    assert shlex.split(text.splitlines()[-1]) == [want]  # the argv token MaxText gets


@pytest.mark.parametrize("item, code", [
    ("trainer.stepz=10", "E0310"),        # unknown MaxText key, with did-you-mean
    ("trainer.steps=ten", "E0311"),       # not the key's type
    ("trainr.steps=10", "E0638"),         # no such render
    ("trainer.steps", "E0638"),           # no '='
    ("trainer.bad key=1", "E0303"),       # not a MaxText key
])
def test_refused_with_the_check_that_forbids_it(tmp_path, item, code):
    with pytest.raises(CompileError) as info:
        _api(tmp_path).render("r", flags=[item])
    assert info.value.diagnostics[0].code == code


def test_a_render_name_is_listed_once_however_many_files_it_names(tmp_path):
    """E0638's list of render names names each once: a JobSet and a flag file of one name
    (the RL recipe's trainer.yaml and trainer.flags) were listed as ``trainer, trainer``."""
    api = _api(tmp_path)
    (tmp_path / "recipes" / "r.rcp").write_text(RECIPE + 'flag_file(name = "js", flags = F)\n')
    with pytest.raises(CompileError) as info:
        api.render("r", flags=["zzzzzz.steps=1"])
    d = info.value.diagnostics[0]
    listed = d.hint.removeprefix("renders: ").split(", ")
    assert d.code == "E0638" and d.hint.startswith("renders: ") and len(listed) == len(set(listed)) and "js" in listed


def test_a_render_must_carry_exactly_one_flag_set(tmp_path):
    api = _api(tmp_path)
    (tmp_path / "recipes" / "r.rcp").write_text(
        'F = maxtext_flags({"steps": 1})\nG = maxtext_flags({"steps": 2})\n'
        'manifest(name = "two", apiVersion = "v1", kind = "ConfigMap", data = {"a": F.shell, "b": G.shell})\n'
        'manifest(name = "none", apiVersion = "v1", kind = "ConfigMap", data = {"a": "x"})\n')
    for item in ("two.steps=3", "none.steps=3"):
        with pytest.raises(CompileError) as info:
            api.render("r", flags=[item])
        assert info.value.diagnostics[0].code == "E0639"


def test_a_variants_contract_refuses_an_undeclared_flag(tmp_path):
    """--variant t --flag: t's params, the flag, and t's contract, which names the flag
    that breaks it and says it was built with --flag."""
    api = _api(tmp_path)
    with pytest.raises(CompileError) as info:
        api.render("r", "t", flags=["trainer.steps=20"])
    d = info.value.diagnostics[0]
    assert d.code == "E0610" and "variant 't'" in d.message and "built with --flag trainer.steps=20" in d.notes
    ok = api.render("r", "t", flags=["trainer.per_device_batch_size=4"]).files["trainer.flags"]
    assert ok.endswith("per_device_batch_size=2\nper_device_batch_size=4\n")


def test_provenance_and_cli(tmp_path, monkeypatch, capsys):
    """explain shows the item as the last layer; build writes variant custom and keys its
    cache on the items."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _api(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["explain", "r", "js", "steps", "--flag", "js.steps=30"]) == 0
    assert "2. 30  at --flag js.steps=30  (layer 2: always)" in capsys.readouterr().out
    for n in (40, 41):
        assert main(["build", "r", "--flag", f"trainer.steps={n}"]) == 0
        assert (tmp_path / "rcpc-out/r/custom/trainer.flags").read_text().endswith(f"steps={n}\n")


_PINNED = {"steps": st.integers(0, 10 ** 6).map(str), "run_name": st.text("abcXYZ_-.", min_size=1, max_size=8),
           "learning_rate": st.sampled_from(["1e-4", "0.5", "3"]), "enable_checkpointing": st.sampled_from(["true",
                                                                                                            "false"])}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(render=st.sampled_from(["trainer", "trainer.flags", "js", "launch.sh"]),
       item=st.sampled_from(sorted(_PINNED)).flatmap(lambda k: _PINNED[k].map(lambda v: (k, v))),
       declared=st.integers(1, 64))
@example(render="trainer", item=("steps", "20"), declared=4)
@example(render="js", item=("steps", "10"), declared=2)  # the value it already has: its tokens still change
def test_a_flag_on_a_key_the_contract_pins_is_refused(tmp_path, render, item, declared):
    """--variant t --flag on any key t's contract does not declare, whatever its value and
    whichever render names the flag set, breaks the contract (E0610, with the E0612 naming
    the key); the key it declares may take any value."""
    api = _api(Path(tempfile.mkdtemp(dir=tmp_path)))
    key, value = item
    with pytest.raises(CompileError) as info:
        api.render("r", "t", flags=[f"{render}.{key}={value}"])
    codes = [d.code for d in info.value.diagnostics]
    assert codes[0] == "E0610" and any(d.code == "E0612" and (f"flag {key}:" in d.message or f"'{key}'" in d.message)
                                       for d in info.value.diagnostics), codes
    ok = api.render("r", "t", flags=[f"{render}.per_device_batch_size={declared}"])
    assert _read_back(ok.files, "per_device_batch_size") == [str(declared)] * 5


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(render=st.sampled_from(["trainer", "js", "launch"]), chunks=st.integers(2, 64),
       variant=st.sampled_from([None, "t"]))
@example(render="trainer", chunks=2, variant=None)
def test_a_flag_maxtext_refuses_is_refused(tmp_path, render, chunks, variant):
    """A --flag value MaxText's config loader refuses (num_moe_token_chunks > 1 without
    use_ring_of_experts: types.py's set_derived_and_validate_values) is E0350, as the same
    value written in the recipe is, with or without a variant's contract."""
    api = _api(Path(tempfile.mkdtemp(dir=tmp_path)))
    with pytest.raises(CompileError) as info:
        api.render("r", variant, flags=[f"{render}.num_moe_token_chunks={chunks}"])
    assert info.value.diagnostics[0].code == "E0350"
    one = api.render("r", flags=[f"{render}.num_moe_token_chunks=1"])  # what MaxText accepts
    assert one.files["trainer.flags"].endswith("num_moe_token_chunks=1\n")


def test_a_stem_names_every_render_of_that_name(tmp_path):
    """RENDER as a stem names every render of that name (as a contract's changes do): they
    must carry one flag set between them (E0639 for two), whatever the hash seed."""
    api = _api(tmp_path)
    body = ('F = maxtext_flags({"steps": 1})\nG = maxtext_flags({"steps": 2})\nflag_file(name = "t", flags = F)\n'
            'manifest(name = "t", apiVersion = "v1", kind = "ConfigMap", data = {"a": %s.shell})\n')
    (tmp_path / "recipes" / "r.rcp").write_text(body % "F")
    files = api.render("r", flags=["t.steps=3"]).files
    assert files["t.flags"] == "steps=1\nsteps=3\n" and "steps=1 steps=3" in files["t.yaml"]
    (tmp_path / "recipes" / "r.rcp").write_text(body % "G")
    with pytest.raises(CompileError) as info:
        Api(tmp_path).render("r", flags=["t.steps=3"])
    assert info.value.diagnostics[0].code == "E0639" and "t.flags and t.yaml" in info.value.diagnostics[0].message
    assert Api(tmp_path).render("r", flags=["t.yaml.steps=3"]).files["t.yaml"].count("steps=3") == 1
