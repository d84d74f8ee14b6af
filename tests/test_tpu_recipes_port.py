"""Ports of published MaxText JobSets (../shared/data/tpu-recipes, reference/tpu-recipes.md).

The oracle: for the same parameter values, the published envsubst template filled in by the
real ``envsubst`` binary and the recipe's render parse (``yaml.safe_load``) to the same data:
every field, list item and string (the ``bash -c`` startup command byte for byte), with the
same types (``google.com/tpu: 2`` is an int, ``hostNetwork`` a bool), compared strictly so that
``2 == 2.0`` or ``True == 1`` cannot pass. The MaxText flag set's tokens must be the published
command's tokens between ``.../configs/base.yml`` and the end of the training command.
Where the template's string pasting would hand MaxText a wrongly typed value, the render
quotes it instead (``test_maxtext_reads_the_params_back``).

To cover another port, add a :class:`Port` to ``PORTS``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from rcpc.domain.maxtext.emit import shell_form
from rcpc.domain.maxtext.flagset import argv
from rcpc.domain.recipe import Compiler
from rcpc.domain.values import FlagSet
from rcpc.domain.workspace import Workspace
from rcpc.importer.proof import differences  # strict: bool is not int, int is not float

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
TEMPLATES = SHARED / "data" / "tpu-recipes"
# Exactly the SHELL-FORMAT of reference/tpu-recipes.md: ${TPU_WORKER_ID}, $PID, $(date), ...
# stay literal.
ENVSUBST_FORMAT = "${WORKLOAD_NAME} ${WORKLOAD_IMAGE} ${BASE_OUTPUT_DIR} ${DATASET_DIR}"


@dataclass(frozen=True)
class Port:
    recipe: str                     # path under the repository
    template: str                   # file name under TEMPLATES
    params: tuple = ("WORKLOAD_NAME", "WORKLOAD_IMAGE", "BASE_OUTPUT_DIR")
    render: str = "jobset.yaml"
    flags: str = "MAXTEXT_FLAGS"    # the recipe's maxtext_flags(...) binding
    quote: tuple = ()               # flags the command quotes anyway (FLAGS.shell_quoted)
    # (published token, the port's token or "" when it leaves it out) of each flag the port
    # changes so that MaxText at the pinned commit takes it: use_random_routing=True is refused
    # with an expert-parallel rank of 1 (types.py), fsdp_shard_on_exp is shard_exp_on_fsdp there
    changed: tuple = ()

    def __str__(self) -> str:
        return Path(self.recipe).stem


PORTS = [
    Port("recipes/tpu_recipes/qwen3_235b_a22b_4k_bf16_tpu7x_4x8x8.rcp",
         "qwen3-235b-a22b_4k-bf16-tpu7x-4x8x8.yaml",
         changed=(("use_random_routing=True", ""),)),
    Port("recipes/tpu_recipes/llama3_1_70b_8k_bf16_tpu7x_4x4x4.rcp",
         "llama3.1-70b_8k-bf16-tpu7x-4x4x4.yaml"),
    Port("recipes/tpu_recipes/deepseek3_671b_4k_bf16_tpu7x_4x4x8.rcp",
         "deepseek3-671b_4k-bf16-tpu7x-4x4x8.yaml",
         changed=(("use_random_routing=True", ""), ("fsdp_shard_on_exp=True", "shard_exp_on_fsdp=True"))),
    Port("recipes/tpu_recipes/deepseek3_671b_4k_fp8_tpu7x_4x4x8.rcp",
         "deepseek3-671b_4k-fp8-tpu7x-4x4x8.yaml",
         changed=(("fsdp_shard_on_exp=True", "shard_exp_on_fsdp=True"),)),
    Port("recipes/tpu_recipes/llama3_1_70b_8k_bf16_tpu7x_4x8x8.rcp",
         "llama3.1-70b_8k-bf16-tpu7x-4x8x8.yaml"),
    Port("recipes/tpu_recipes/gpt_oss_120b_8k_bf16_tpu7x_4x4x4.rcp",
         "gpt-oss-120b_8k-bf16-tpu7x-4x4x4.yaml",
         changed=(("use_random_routing=True", ""), ("fsdp_shard_on_exp=True", "shard_exp_on_fsdp=True"))),
    Port("recipes/tpu_recipes/llama3_1_70b_8k_fp8_tpu7x_4x4x4.rcp",
         "llama3.1-70b_8k-fp8-tpu7x-4x4x4.yaml",
         quote=("weight_quantization_calibration_method", "act_quantization_calibration_method")),
    Port("recipes/tpu_recipes/wan2_1_14b_bf16_tpu7x_4x4x4.rcp",
         "wan2.1-14b_bf16-tpu7x-4x4x4.yaml",
         params=("WORKLOAD_NAME", "WORKLOAD_IMAGE", "BASE_OUTPUT_DIR", "DATASET_DIR")),
    Port("recipes/tpu_recipes/gemma4_31b_8k_bf16_tpu7x_4x4x4.rcp",
         "gemma4-31b_8k-bf16-tpu7x-4x4x4.yaml"),
    # the XPK-generated generation (xpk_generated_jobset)
    Port("recipes/tpu_recipes/gemma4_2b_8k_bf16_tpu7x_4x4x4.rcp",
         "gemma4-2b_8k-bf16-tpu7x-4x4x4.yaml"),
    Port("recipes/tpu_recipes/gemma4_4b_8k_bf16_tpu7x_4x4x4.rcp",
         "gemma4-4b_8k-bf16-tpu7x-4x4x4.yaml"),
    Port("recipes/tpu_recipes/gemma4_26b_4k_bf16_tpu7x_4x4x4.rcp",
         "gemma4-26b_4k-bf16-tpu7x-4x4x4.yaml"),
    Port("recipes/tpu_recipes/deepseek3_671b_4k_bf16_tpu7x_4x8x8.rcp",
         "deepseek3-671b_4k-bf16-tpu7x-4x8x8.yaml"),
]

# Parameter values given to both sides; None means the recipe's defaults.
VALUES = [
    pytest.param(None, id="defaults"),
    pytest.param({
        "WORKLOAD_NAME": "qwen3-bench-0",
        "WORKLOAD_IMAGE": "us-docker.pkg.dev/my-project/maxtext/runner:2025-06-01",
        "BASE_OUTPUT_DIR": "gs://my-bucket/qwen3",
    }, id="typical"),
    pytest.param({
        # shortest-ish DNS-1123 name with digits; an image by digest; a bucket path with
        # '=', '-', '_', ',', '.', '+' and a trailing '/' (ARTIFACT_DIR then has '//')
        "WORKLOAD_NAME": "q3-0",
        "WORKLOAD_IMAGE": "gcr.io/p-1/maxtext_runner@sha256:" + "0123456789abcdef" * 4,
        "BASE_OUTPUT_DIR": "gs://tpu-runs_eu-1/exp=lr-3e-4/bs=16,seq=4096/v1.2+rc/",
    }, id="awkward"),
]

# The MaxText flags of a published command: after the trainer's config file, up to the pipe
# into tee (qwen3) or the end of the subshell (llama3.1, deepseek3).
_FLAGS_SEGMENT = re.compile(r" -m \S+ \S+/configs/base(?:_wan_14b)?\.yml (?P<flags>.*?)(?: \| tee |\) & PID=)")


# helpers ----------------------------------------------------------------------------------
def _compiler() -> Compiler:
    return Compiler(Workspace.find(REPO))


def _values(port: Port, values: dict | None) -> dict:
    """The values used: the recipe's declared defaults, overridden by ``values``."""
    recipe, _ = _compiler().recipe(REPO / port.recipe)
    params = {p.name: p for p in recipe.params}
    assert sorted(params) == sorted(port.params), "the port's params are the template's variables"
    defaults = {name: params[name].default.value for name in port.params}
    return defaults if values is None else {**defaults, **values}


def render(port: Port, values: dict | None) -> str:
    """The recipe's render, built in-process (``--set`` for each value)."""
    sets = None if values is None else [f"{k}={v}" for k, v in values.items()]
    _, builds = _compiler().build(REPO / port.recipe, sets=sets)
    (build,) = builds
    texts = {r.name: r.text for r in build.renders}
    assert list(texts) == [port.render], "a port has exactly one render"
    return texts[port.render]


def recipe_value(port: Port, values: dict | None, name: str):
    """A top-level binding of the recipe evaluated with ``values`` as ``--set`` items."""
    sets = [f"{k}={v}" for k, v in (values or {}).items()]
    return _compiler().bindings((REPO / port.recipe).resolve(), sets)[name]


def published_text(port: Port, values: dict) -> str:
    """The port's template filled in by envsubst, with the flags the port changes changed in its
    command (in each container; a token left out with the space before it)."""
    text = envsubst(TEMPLATES / port.template, values)
    for token, ours in port.changed:
        assert f" {token}" in text, token
        text = text.replace(f" {token}", f" {ours}" if ours else "")
    return text


def envsubst(template: Path, values: dict) -> str:
    """The template filled in by the real envsubst with ``values`` as its environment."""
    exe = shutil.which("envsubst")
    if exe is None:
        pytest.fail("envsubst not found: install gettext-base (the oracle of this test)")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", **values}
    proc = subprocess.run([exe, ENVSUBST_FORMAT], input=template.read_bytes(), env=env,
                          capture_output=True, check=True)
    return proc.stdout.decode("utf-8")


def containers(doc: dict) -> list:
    (job,) = doc["spec"]["replicatedJobs"]
    return job["template"]["spec"]["template"]["spec"]["containers"]


def flag_segment(command: str) -> str:
    m = _FLAGS_SEGMENT.search(command)
    assert m, "no MaxText training command in the startup command"
    return m["flags"]


# tests ------------------------------------------------------------------------------------
@pytest.mark.parametrize("values", VALUES)
@pytest.mark.parametrize("port", PORTS, ids=str)
def test_render_is_the_published_template(port: Port, values):
    values = _values(port, values)
    published = yaml.safe_load(published_text(port, values))
    text = render(port, values)
    ours = yaml.safe_load(text)
    diff = list(differences(ours, published))
    assert not diff, "render != envsubst(template):\n" + "\n".join(diff)
    assert ours == published
    # The values really went in (a template variable the recipe ignored would differ above,
    # unless the recipe's default happened to equal the test value).
    for name, value in values.items():
        assert value in text, name


@pytest.mark.parametrize("values", VALUES)
@pytest.mark.parametrize("port", PORTS, ids=str)
def test_flag_set_is_the_published_flags(port: Port, values):
    values = _values(port, values)
    flags = recipe_value(port, values, port.flags)
    assert type(flags) is FlagSet
    tokens = argv(flags)

    published = yaml.safe_load(published_text(port, values))
    published_commands = {c["command"][2] for c in containers(published)}
    (published_command,) = published_commands
    segment = flag_segment(published_command)
    assert tokens == shlex.split(segment)  # the argv MaxText gets

    # The flag set's shell form is what the render runs, in every container.
    ours = yaml.safe_load(render(port, values))
    for c in containers(ours):
        assert flag_segment(c["command"][2]) == shell_form(tokens, frozenset(port.quote))


# Values that are valid (a JobSet may be named "true": its child Job and pod names are RFC 1035
# labels) but that the published template's string pasting gets wrong: MaxText would read
# run_name=true as the bool True and base_output_directory=gs://b/run: as a mapping. The
# render quotes both tokens; it then differs from envsubst's output on purpose.
MANGLED = {
    "WORKLOAD_NAME": "true",
    "WORKLOAD_IMAGE": "gcr.io/my-project/maxtext-runner:1",
    "BASE_OUTPUT_DIR": "gs://my-bucket/run:",
}


@pytest.mark.parametrize("values", [*VALUES, pytest.param(MANGLED, id="mangled-by-envsubst")])
@pytest.mark.parametrize("port", PORTS, ids=str)
def test_maxtext_reads_the_params_back(port: Port, values):
    """What MaxText parses (bash word splitting, then OmegaConf ``from_cli``) from the
    render's command is exactly the params, as strings."""
    from omegaconf import OmegaConf

    from_cli = OmegaConf.from_cli
    values = _values(port, values)

    def parsed(command: str) -> dict:
        return dict(from_cli(shlex.split(flag_segment(command))))

    for c in containers(yaml.safe_load(render(port, values))):
        cfg = parsed(c["command"][2])
        assert cfg["base_output_directory"] == values["BASE_OUTPUT_DIR"]
        assert cfg["run_name"] == values["WORKLOAD_NAME"]
    if values == MANGLED:
        published = containers(yaml.safe_load(envsubst(TEMPLATES / port.template, values)))[0]
        cfg = parsed(published["command"][2])
        assert cfg["run_name"] is True
        assert cfg["base_output_directory"] != values["BASE_OUTPUT_DIR"]
