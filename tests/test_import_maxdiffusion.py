"""The last published shape as library calls (issue 39, kind 4): the ironwood MaxDiffusion
inference script imports as ``maxdiffusion_xpk_workload(..., maxdiffusion_generate_command(
FLAGS, XLA_FLAGS, ...))`` of ``@rcpc//maxdiffusion_tpu.rcp``, its ``key=value`` words a flag
set without MaxText's schema (``maxtext_flags(..., schema = None, tpu_slice = TPU_SLICE)``),
its XLA flags a dict, its ``--tpu-type`` the slice a ``case`` chooses
(``TPU_SLICE = tpu_slice({...}[TPU_TYPE])``), its JSON value ``cli_value('{...}')`` (spelled as
published, read as the mapping), its values the launching shell expands f-strings of params.

Proven equal by the import (every word bash runs, for the defaults, a second value and each
``case`` branch, and the flag set's tokens the words the generate script gets); here bash
runs the script and the render as the oracle, for generated scripts of the shape (models in
a case, flag orders, quoted JSON, expanded values, with and without the output directory
exported), the published one among them with a golden of its recipe.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_bash_stubbed
from test_import_shapes import _import
from rcpc.domain.maxtext.flagset import argv as flag_argv
from rcpc.domain.values import FlagSet
from rcpc.importer import proof
from rcpc.importer.driver import _trainer_tokens
from rcpc.testing.golden import GoldenExtension

REPO = Path(__file__).resolve().parents[1]
WAN = REPO.parent / "shared" / "data" / "tpu-recipes" / "more" / \
    "inference_ironwood_MaxDiffusion_Wan2.x_Wan2.1-T2V_run_recipe.sh"
GOLDEN = REPO / "tests" / "imports" / "maxdiffusion_wan2_1_t2v.rcp"
ENV = {"PROJECT_ID": "p-1", "CLUSTER_NAME": "c-1", "ZONE": "z-1", "BASE_OUTPUT_DIR": "gs://b/o", "HF_TOKEN": "t-1"}
SHAPE = "a call of maxdiffusion_xpk_workload with maxdiffusion_generate_command"


def _launched(out: Path, text: str, values: dict) -> list:
    """The xpk argv bash runs from the render and from the script ``text`` (``values`` in its
    environment, params of the render): asserted equal, returned."""
    ours = run_bash_stubbed(proof.build(proof.fresh_compiler(REPO), out, values)["launch.sh"], ["xpk"])
    env = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in values.items())
    assert ours == run_bash_stubbed(env + text, ["xpk"])
    (argv,) = ours
    return argv


def _flags_equal(out: Path, argv: list, values: dict) -> None:
    """The flag set's tokens are the words the generate script gets (after its config)."""
    (flags,) = [v for v in proof.fresh_compiler(REPO).bindings(out.resolve(), [f"{k}={v}" for k, v in values.items()])
                .values() if type(v) is FlagSet]
    assert flags.schema is None
    command = argv[-1].removeprefix("--command=")
    assert flag_argv(flags) == shlex.split(command.split(".yml ", 1)[1])
    assert _trainer_tokens([argv]) == flag_argv(flags)  # the import's proof reads the generate script's flags


@pytest.mark.parametrize("tpu_type", ["7x-8", "tpu7x-2x2x1", "7x-16", "tpu7x-2x2x2"])
@pytest.mark.parametrize("resolution", ["720p", "480p"])
def test_the_published_script_imports_as_a_library_call(tpu_type, resolution, tmp_path, request, snapshot):
    """Equal by the import's proof, as the call; bash launches the same words from the render
    as from the script (its launch part, after its environment setup) for each TPU type and
    resolution; the flag set's tokens are the generate script's words; the recipe is the
    golden tests/imports/maxdiffusion_wan2_1_t2v.rcp."""
    text = WAN.read_text()
    imported, out = _import(tmp_path, WAN.name, text)
    assert imported.how == f"a command_file render, {SHAPE}"
    assert imported.check(proof.fresh_compiler(REPO), out) == []
    values = ENV | {"WORKLOAD_NAME": "w-1", "TPU_TYPE": tpu_type, "RESOLUTION": resolution}
    argv = _launched(out, text[text.index("# --- Configuration ---"):], values)
    assert argv[8] == f"--tpu-type=tpu7x-2x2x{1 if tpu_type.endswith(('8', '1')) else 2}"
    _flags_equal(out, argv, values)
    if (tpu_type, resolution) == ("7x-8", "720p"):
        request.node.golden_path = GOLDEN
        assert snapshot(extension_class=GoldenExtension) == imported.text


# generated scripts of the shape ----------------------------------------------------------------
_Q = "'\\\"'\\\"'"  # '"'"' inside the double-quoted blob: a single quote in the eval'd string
_MODELS = st.lists(st.sampled_from(["wan2.1", "wan2.2", "ltx-video", "flux-dev", "sdxl"]), min_size=1, max_size=3,
                   unique=True)
_JSON = st.dictionaries(st.from_regex(r"block_[a-z]{1,6}", fullmatch=True), st.integers(1, 8192), min_size=1,
                        max_size=4)


@st.composite
def _scripts(draw):
    """A MaxDiffusion launch script: a case on the model (model name and frames), a case on
    the TPU type (XPK's name and the context parallelism), the flags in any order (a quoted
    or bare lookup, a quoted JSON value, the output directory quoted or bare), the output
    directory exported or not, launched by eval."""
    models = draw(_MODELS)
    arms = "".join(f'  "{m}")\n    MODEL_NAME={m}\n    FRAMES={17 + 8 * i}\n    ;;\n' for i, m in enumerate(models))
    blocks = json.dumps(draw(_JSON), separators=(",", ":")).replace('"', '\\"')
    q, qo = (_Q if draw(st.booleans()) else "" for _ in range(2))
    words = [f"model_name={q}${{MODEL_NAME}}{q}", "num_frames=${FRAMES}", "ici_context_parallelism=${ICI}",
             f"flash_block_sizes={_Q}{blocks}{_Q}", "fps=16", "use_kv_cache=True",
             f"output_dir={qo}${{BASE_OUTPUT_DIR}}/${{WORKLOAD_NAME}}{qo}"]
    words = draw(st.permutations(words))
    exports = "export ARTIFACT_DIR=${BASE_OUTPUT_DIR}/${WORKLOAD_NAME} && \\\n" \
        "export OUTPUT_DIR=${BASE_OUTPUT_DIR}/${WORKLOAD_NAME} && \\\n" if draw(st.booleans()) else ""
    setup = "pip install -e . && \\\n" if draw(st.booleans()) else ""
    text = ('export PROJECT_ID="${PROJECT_ID}"\nexport CLUSTER_NAME="${CLUSTER_NAME}"\nexport ZONE="${ZONE}"\n'
            'export BASE_OUTPUT_DIR="${BASE_OUTPUT_DIR}"\n'
            f'export MODEL="${{MODEL:-{models[0]}}}"\nexport TPU_TYPE="${{TPU_TYPE:-7x-8}}"\n'
            'export WORKLOAD_IMAGE="${WORKLOAD_IMAGE:-img:latest}"\nexport WORKLOAD_NAME="${WORKLOAD_NAME:-w-1}"\n'
            f'XLA_FLAGS="{_Q} --xla_a=1 --xla_b=true{_Q}"\n'
            f'case "$MODEL" in\n{arms}  *)\n    echo "Error: unsupported model $MODEL"\n    exit 1\n    ;;\nesac\n'
            'case "$TPU_TYPE" in\n  "7x-8")\n    XPK_TPU_TYPE="tpu7x-2x2x1"\n    ICI=8\n    ;;\n'
            '  "7x-16")\n    XPK_TPU_TYPE="tpu7x-2x2x2"\n    ICI=16\n    ;;\n  *)\n    exit 1\n    ;;\nesac\n'
            'ARGS="' + " \\\n".join(words) + '"\n'
            'cmd="xpk workload create \\\n  --cluster=$CLUSTER_NAME \\\n  --project=$PROJECT_ID \\\n  --zone=$ZONE \\\n'
            '  --priority=very-high \\\n  --max-restarts=0 \\\n  --tpu-type=$XPK_TPU_TYPE \\\n  --num-slices=1 \\\n'
            '  --docker-image=\\"${WORKLOAD_IMAGE}\\" \\\n  --enable-debug-logs \\\n'
            '  --workload=\\"${WORKLOAD_NAME}\\" \\\n'
            f"  --command='set -e && \\\n{exports}export LIBTPU_INIT_ARGS=${{XLA_FLAGS}} && \\\n{setup}"
            "  python src/maxdiffusion/generate_wan.py  \\\n  src/maxdiffusion/configs/base_wan_14b.yml \\\n"
            "  ${ARGS}'\"\n\neval ${cmd}\n")
    return text, models


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(file=_scripts())
def test_maxdiffusion_shaped_scripts_import_as_library_calls(file, tmp_path):
    """Each generated script imports as the call (never a list of words), proven equal; for
    every model and TPU type bash launches the same words from the render as from the script,
    and the flag set's tokens are the generate script's words."""
    text, models = file
    imported, out = _import(tmp_path, "md.sh", text)
    assert imported.how == f"a command_file render, {SHAPE}", imported.how
    assert "cli_value(" in imported.text and "tpu_slice = TPU_SLICE" in imported.text
    assert imported.check(proof.fresh_compiler(REPO), out) == []
    for model in models:
        for tpu_type in ("7x-8", "7x-16"):
            values = {k: ENV[k] for k in ("PROJECT_ID", "CLUSTER_NAME", "ZONE", "BASE_OUTPUT_DIR")} | \
                {"MODEL": model, "TPU_TYPE": tpu_type}
            _flags_equal(out, _launched(out, text, values), values)
