"""The catalog of diagnostics, product data: one small example per code, each a workspace and
the ``rcpc`` command run in it. ``docs/diagnostics.md`` is rendered from it, and
``tests/test_diagnostic_catalog.py`` runs every example (its exact output is a golden file in
``tests/diagnostics/``) and checks that every code the compiler raises has one.

An example's workspace is ``files`` (path → text; ``recipes/r.rcp`` is ``recipe`` unless named
otherwise, ``rcp.toml`` empty unless given) and ``links`` (path → symlink target);
``before``, when given, is a command run first (it must succeed), after which the files of
``then`` are written.
"""

from __future__ import annotations

import attrs

M = 'manifest(name = "m", apiVersion = "v1", kind = "ConfigMap", data = {"v": V})\n'
FLAGS = 'flag_file(name = "f", flags = F)\n'
BASE_YML = "steps: 150_001\nenable_checkpointing: true\nper_device_batch_size: 12.0\nrun_name: \"\"\n" \
           "ici_fsdp_parallelism: -1\nici_tensor_parallelism: 1\ndcn_data_parallelism: -1\n"
SCHEMA_TOML = 'maxtext_base = "base.yml"\n'
BUILTIN = {"rcp.toml": 'maxtext_schema = "builtin:maxtext"\n'}
ENV_JOBSET = ('jobset(name = "js", spec = {"template": {"spec": {"containers": [{\n'
              '    "name": "main",\n    "image": "img",\n    "args": F.argv,\n    "env": [{"name": "%s", "value": "%s"}],\n}]}}})\n')
JOBSET_TPU = '''S = tpu_slice("tpu7x:2x2x4")
jobset(name = "js", spec = {"replicatedJobs": [{"name": "w", "template": {"spec": {
    "parallelism": PARALLELISM, "completions": S.hosts,
    "template": {"spec": {"nodeSelector": S.node_selector, "containers": [
        {"name": "main", "image": "img", "resources": {"limits": {"google.com/tpu": TPU}}},
    ]}},
}}}]})
'''
IMPORT_CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  n: ${N}\n"
IMPORT_JOBSET = """apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: ${NAME}
spec:
  replicatedJobs:
  - name: w
    template:
      spec:
        template:
          spec:
            containers:
            - name: main
              image: img
              command:
              - bash
              - -c
              - python3 -m MaxText.train MaxText/configs/base.yml steps=10 run_name="a b"
"""

# a TPU JobSet template with placeholders in integer fields (int params, rcpc.importer.fields)
IMPORT_TYPED = """apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: ${NAME}
spec:
  replicatedJobs:
  - name: w
    replicas: ${SLICES}
    template:
      spec:
        parallelism: ${HOSTS}
        completions: 2
        template:
          spec:
            nodeSelector:
              cloud.google.com/gke-tpu-accelerator: tpu7x
              cloud.google.com/gke-tpu-topology: 2x2x2
            containers:
            - name: main
              image: ${IMAGE}
              resources:
                limits:
                  google.com/tpu: 4
"""


# A stand-in for a MaxText checkout (the oracle examples): the modules rcpc's oracle driver
# loads, its config loader refusing what MaxText's refuses for one config (types.py's check of
# pipeline weight prefetching, which rcpc does not model), and taking a minute for another.
FAKE_MAXTEXT = {
    "mt/src/maxtext/__init__.py": "",
    "mt/src/maxtext/configs/__init__.py": "",
    "mt/src/maxtext/configs/base.yml": "steps: 150_001\n",
    "mt/src/maxtext/configs/pyconfig.py": (
        "import time\n\n\ndef _handle_config_exception(e):\n    raise e\n\n\n"
        "def initialize(argv):\n"
        "    if 'pipeline_fsdp_ag_per_repeat=True' in argv:\n"
        "        raise AssertionError('Pipeline weight prefetching only supports circular pipeline.')\n"
        "    if 'steps=-1' in argv:\n"
        "        time.sleep(60)\n"
        "    return object()\n"),
    "mt/src/maxtext/utils/__init__.py": "",
    "mt/src/maxtext/utils/max_utils.py": "def maybe_initialize_jax_distributed_system(raw_keys):\n    pass\n",
    "mt/src/maxtext/utils/elastic_utils.py": "def live_slice_indices(config=None):\n    return {0}\n",
    "mt/src/maxtext/utils/maxtext_utils.py": "def create_device_mesh(config, devices=None):\n    return devices\n",
}


@attrs.frozen
class Example:
    """One diagnostic's example: its ``code`` and ``title``, the workspace, the command line
    (``argv``), the environment variables set for it (``env``) and the exit code it gives."""

    code: str
    title: str
    recipe: str = ""
    files: dict = attrs.Factory(dict)
    argv: tuple = ("check",)
    exit: int = 1
    links: dict = attrs.Factory(dict)
    before: tuple = ()
    then: dict = attrs.Factory(dict)
    env: dict = attrs.Factory(dict)

    def workspace(self) -> dict:
        """Path → text of every file of the example's workspace."""
        out = {"rcp.toml": ""}
        if self.recipe:
            out["recipes/r.rcp"] = self.recipe
        out.update(self.files)
        return out


CATALOG = [
    # syntax ---------------------------------------------------------------------------------
    Example("E0001", "syntax error", 'jobset(name = "a" spec = {})\n'),
    Example("E0002", "bad escape in a string", 'X = "C:\\q"\n'),
    Example("E0003", "file is not UTF-8", files={"recipes/r.rcp": "X = 1\nY = \"\udcff\"\n"}),
    # names ----------------------------------------------------------------------------------
    Example("E0101", "unknown name", "TUNED = True\nX = TUNDE\n"),
    Example("E0102", "name bound twice", "X = 1\nX = 2\n"),
    Example("E0103", "name used before it is assigned", "X = Y + 1\nY = 1\n"),
    Example("E0104", "built-in name rebound", "len = 3\n"),
    # functions ------------------------------------------------------------------------------
    Example("E0650", "recursive function call", 'load("//recipes/lib/f.rcp", "depth")\nX = depth(3)\n',
            files={"recipes/lib/f.rcp": "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n"}),
    Example("E0651", "argument that does not fit the function", 'load("//recipes/lib/f.rcp", "trainer")\n'
            'X = trainer(steps = 10, tuned = True)\n',
            files={"recipes/lib/f.rcp": "def trainer(steps, *, tune = False):\n    return {\"steps\": steps}\n"}),
    Example("E0652", "local used before it is assigned", 'load("//recipes/lib/f.rcp", "f")\nX = f(False)\n',
            files={"recipes/lib/f.rcp": "def f(big):\n    if big:\n        n = 64\n    return n\n"}),
    Example("E0653", "parameter named twice", 'load("//recipes/lib/f.rcp", "f")\nX = f(1, 2)\n',
            files={"recipes/lib/f.rcp": "def f(a, a):\n    return a\n"}),
    Example("E0654", "function defined in a recipe", "def f(x):\n    return x\n"),
    Example("E0655", "list that cannot be merged by its Kubernetes key",
            'X = merge({"env": [{"name": "A", "value": "1"}]}, {"env": [{"value": "2"}]})\n'),
    Example("E0656", "shell_quoted() of a flag the set does not have",
            'F = maxtext_flags(dict(run_name = "a,b", steps = 1))\nS = F.shell_quoted(["run_nam"])\n'),
    # loads ----------------------------------------------------------------------------------
    Example("E0201", "load of a missing file", 'load("//recipes/lib/nope.rcp", "A")\n'),
    Example("E0202", "load cycle", 'load("//recipes/lib/a.rcp", "A")\n',
            files={"recipes/lib/a.rcp": 'load("b.rcp", "B")\nA = B\n',
                   "recipes/lib/b.rcp": 'load("./a.rcp", "A")\nB = A\n'}),
    Example("E0203", "load of a missing or private name", 'load("//recipes/lib/a.rcp", "MESH", "_X")\n',
            files={"recipes/lib/a.rcp": "MESHES = 1\n_X = 2\n"}),
    Example("E0204", "load path leaving the workspace", 'load("//../outside.rcp", "A")\n'),
    Example("E0205", "load path that is not a .rcp file", 'load("//recipes/lib/a.txt", "A")\n'),
    Example("E0206", "load path that names no file of rcpc's standard library",
            'load("@rcpc//../stdlib/maxtext_tpu.rcp", "maxtext_jobset")\n'),
    # types and values -------------------------------------------------------------------------
    Example("E0301", "type error", 'X = 1 + "a"\n'),
    Example("E0302", "key repeated in one dict", 'F = maxtext_flags({\n    "steps": 1,\n    "steps": 2,\n})\n'),
    Example("E0303", "bad flag key or bad operand", 'F = maxtext_flags({" steps": 1})\n'),
    Example("E0304", "value with no flag form", 'F = maxtext_flags({"mesh": tpu_slice("tpu7x:2x2x1")})\n'),
    Example("E0305", "index or key not found", 'D = {"fsdp": 32}\nX = D["fspd"]\n'),
    Example("E0306", "bad arguments to a built-in", 'S = tpu_slice(spec = "tpu7x:2x2x1", size = 4)\n'),
    Example("E0307", "unknown attribute", 'S = tpu_slice("tpu7x:4x4x8")\nX = S.chip\n'),
    # MaxText ----------------------------------------------------------------------------------
    Example("E0310", "unknown MaxText key", 'F = maxtext_flags({"stepz": 10})\n',
            files={"rcp.toml": SCHEMA_TOML, "base.yml": BASE_YML}),
    Example("E0311", "value that cannot be the key's type", 'F = maxtext_flags({"enable_checkpointing": "flase"})\n',
            files={"rcp.toml": SCHEMA_TOML, "base.yml": BASE_YML}),
    Example("E0312", "value not one of the key's choices", 'F = maxtext_flags({"hardware": "tpuv7"})\n', files=BUILTIN),
    Example("E0313", "value out of the key's bounds", 'F = maxtext_flags({"sharding_tolerance": 2.0})\n', files=BUILTIN),
    Example("E0314", "None for a key that cannot be None", 'F = maxtext_flags({"steps": "none"})\n', files=BUILTIN),
    Example("E0315", "flag and model config disagree",
            'F = maxtext_flags({\n    "model_name": "gemma4-31b",\n    "head_dim": 128,\n})\n' + FLAGS, files=BUILTIN),
    Example("E0316", "key set both by the env (M_KEY) and the flags",
            'F = maxtext_flags({"steps": 10})\n' + ENV_JOBSET % ("M_STEPS", "100"), files=BUILTIN),
    Example("E0317", "string MaxText cannot read back", 'F = maxtext_flags({"run_name": "\\\\???"})\n'),
    Example("E0318", "keys OmegaConf merges into one value", 'F = maxtext_flags({"m": [1, 2]}, {"m.0": 9})\n'),
    Example("E0319", "M_KEY value MaxText cannot read",
            'F = maxtext_flags({"steps": 10})\n' + ENV_JOBSET % ("M_LEARNING_RATE", "fast"), files=BUILTIN),
    Example("E0322", "XLA_FLAGS in the env beside dump_hlo_xla_flags",
            'F = maxtext_flags({"dump_hlo_xla_flags": "--xla_dump_to=/tmp/hlo"})\n'
            + ENV_JOBSET % ("XLA_FLAGS", "--xla_dump_hlo_as_text"), files=BUILTIN),
    Example("E0320", "MaxText schema cannot be read", 'F = maxtext_flags({"steps": 1})\n',
            files={"rcp.toml": 'maxtext_base = "missing.yml"\n'}),
    Example("E0340", "mesh does not fit the TPU slice",
            'F = maxtext_flags({"ici_fsdp_parallelism": 16}, tpu_slice = tpu_slice("tpu7x:4x4x8"))\n',
            files={"rcp.toml": SCHEMA_TOML, "base.yml": BASE_YML}),
    Example("E0350", "config one of MaxText's cross-field validators refuses",
            'F = maxtext_flags({"num_moe_token_chunks": 2})\n' + FLAGS, files=BUILTIN),
    Example("E0321", "MaxText sources cannot be read", argv=("schema", "maxtext", "no-maxtext-here")),
    Example("E0360", "MaxText's own config loader refuses the flag set (rcpc check --maxtext)",
            'F = maxtext_flags({"ici_pipeline_parallelism": 2, "num_layers_per_pipeline_stage": 8,\n'
            '                   "pipeline_fsdp_ag_per_repeat": True})\n' + FLAGS,
            files={**FAKE_MAXTEXT, **BUILTIN},
            argv=("check", "--maxtext", "mt")),
    Example("E0361", "MaxText's config loader cannot run", 'F = maxtext_flags({"steps": 1})\n' + FLAGS,
            argv=("check", "--maxtext", "no-maxtext-here")),
    Example("E0362", "MaxText's config loader did not answer in time",
            'F = maxtext_flags({"steps": -1})\n' + FLAGS, files={**FAKE_MAXTEXT, **BUILTIN},
            argv=("check", "--maxtext", "mt", "--maxtext-timeout", "2")),
    Example("W0312", "OmegaConf's MISSING marker", 'F = maxtext_flags({"steps": "???"})\n' + FLAGS, files=BUILTIN,
            exit=0),
    Example("W0313", "the string none, which MaxText reads as None",
            'F = maxtext_flags({"max_num_checkpoints_to_keep": "None"})\n' + FLAGS, files=BUILTIN, exit=0),
    Example("W0314", "nested key MaxText ignores", 'F = maxtext_flags({"dpo": {"dpo_betta": 0.2}})\n' + FLAGS,
            files=BUILTIN, exit=0),
    Example("W0315", "M_ variable naming no MaxText key",
            'F = maxtext_flags({"steps": 10})\n' + ENV_JOBSET % ("M_STEPZ", "100"), files=BUILTIN, exit=0),
    Example("W0321", "string spelling of the key's type", 'F = maxtext_flags({"enable_checkpointing": "False"})\n' + FLAGS,
            files={"rcp.toml": SCHEMA_TOML, "base.yml": BASE_YML}, exit=0),
    Example("W0322", "value pydantic converts to the key's type", 'F = maxtext_flags({"steps": 2.0})\n' + FLAGS,
            files=BUILTIN, exit=0),
    Example("W0323", "acknowledged key the schema knows",
            'F = maxtext_flags({"steps": 5}, unknown_keys = ["steps"])\n' + FLAGS,
            files={"rcp.toml": SCHEMA_TOML, "base.yml": BASE_YML}, exit=0),
    Example("W0324", "acknowledged key never set",
            'F = maxtext_flags({"steps": 5}, unknown_keys = ["gdn_cp_mode"])\n' + FLAGS,
            files={"rcp.toml": SCHEMA_TOML, "base.yml": BASE_YML}, exit=0),
    Example("W0325", "acknowledged value the schema knows",
            'F = maxtext_flags({"dtype": "bfloat16"}, unknown_values = {"dtype": ["bfloat16"]})\n' + FLAGS,
            files=BUILTIN, exit=0),
    Example("W0360", "value MaxText's loader accepts and its model refuses",
            'F = maxtext_flags({"remat_policy": "ful"})\n' + FLAGS, files=BUILTIN, exit=0),
    Example("W0330", "no-op override", 'F = maxtext_flags({"packing": True}, {"packing": true})\n' + FLAGS, exit=0),
    Example("N0331", "key set to its MaxText default", 'F = maxtext_flags({"steps": 150001})\n' + FLAGS,
            files={"rcp.toml": SCHEMA_TOML, "base.yml": BASE_YML}, argv=("check", "--notes"), exit=0),
    # TPU --------------------------------------------------------------------------------------
    Example("E0401", "TPU slice that does not exist", 'S = tpu_slice("tpu7x:4x4x6")\n'),
    # params and variants ------------------------------------------------------------------------
    Example("E0501", "param() not assigned to a name", "X = [param(int, default = 1)]\n"),
    Example("E0502", "bad param() or param() in a library", "N = param(\"int\", default = 1)\n"),
    Example("E0601", "variant or --set naming an unknown param",
            'TUNED = param(bool, default = False)\nvariant("tuned", set = {"TUNNED": True})\n'),
    Example("E0602", "param value of the wrong type",
            'N = param(int, default = 4)\nvariant("big", set = {"N": "8"})\n'),
    Example("E0603", "variant declared twice", 'variant("default")\nvariant("default")\n'),
    Example("E0604", "bad variant name", 'variant("a/b")\n'),
    Example("E0605", "against naming an undeclared variant", 'variant("default")\nvariant("t", against = "defualt")\n'),
    Example("E0606", "param without a value", "N = param(int)\n"),
    Example("E0607", "unknown variant on the command line", 'variant("default")\n',
            argv=("build", "r", "--variant", "tunde")),
    Example("E0608", "--set item without =", "N = param(int, default = 1)\n", argv=("build", "r", "--set", "N")),
    Example("E0609", "changes without against",
            'T = param(bool, default = False)\nvariant("t", set = {"T": True}, changes = {"m": []})\n'),
    Example("E0610", "diff contract broken",
            'T = param(bool, default = False)\nV = "a" if T else "b"\n' + M +
            'variant("default")\nvariant("t", set = {"T": True}, against = "default", changes = {})\n'),
    Example("E0611", "contract naming a render that does not exist",
            'T = param(bool, default = False)\nV = "a" if T else "b"\n' + M +
            'variant("default")\nvariant("t", set = {"T": True}, against = "default", changes = {"n": []})\n'),
    Example("E0612", "change a contract does not explain",
            'T = param(bool, default = False)\nF = maxtext_flags({"steps": 10}, {"steps": 20} if T else {})\n'
            'jobset(name = "m", spec = {"args": F.argv, "env": [{"name": "DEBUG", "value": "1" if T else "0"}]})\n'
            'variant("default")\nvariant("t", set = {"T": True}, against = "default", changes = {"m": ["steps"]})\n'),
    Example("E0613", "manifest path in changes that cannot be read",
            'T = param(bool, default = False)\nV = "a" if T else "b"\n' + M +
            'variant("default")\nvariant("t", set = {"T": True}, against = "default", changes = {"m.yaml": ["data[v]"]})\n'),
    Example("E0614", "manifest path in changes naming nothing",
            'T = param(bool, default = False)\nV = "a" if T else "b"\n' + M +
            'variant("default")\nvariant("t", set = {"T": True}, against = "default", changes = {"m.yaml": ["data.w"]})\n'),
    Example("E0615", "git revision that cannot be read", 'variant("default")\n', argv=("diff", "--rev", "HEAD~1")),
    Example("E0616", "explain of a key the flag set does not set", 'F = maxtext_flags({"steps": 1})\n' + FLAGS,
            argv=("explain", "r", "F", "step")),
    Example("E0620", "explain of an unknown flag set", 'F = maxtext_flags({"steps": 1})\n' + FLAGS,
            argv=("explain", "r", "FLAG", "steps")),
    Example("E0630", "values file that cannot be read", "N = param(int, default = 1)\n" + 'variant("default")\n',
            argv=("build", "r", "--values", "clusters/prod.toml")),
    Example("E0631", "values file that is not TOML", "N = param(int, default = 1)\n",
            files={"prod.toml": "N = 1 2\n"}, argv=("build", "r", "--values", "prod.toml")),
    Example("E0632", "values file key that is no param = value", "N = param(int, default = 1)\n",
            files={"prod.toml": "[cluster]\nN = 2\n"}, argv=("build", "r", "--values", "prod.toml")),
    Example("E0633", "sweep naming two points alike",
            'BS = param(int, default = 1)\nREMAT = param(str, default = "full")\n'
            'variants(over = {"BS": [2, 4], "REMAT": ["full", "minimal"]}, name = "bs{BS}")\n'),
    Example("E0634", "sweep name template field that is not swept",
            'BS = param(int, default = 1)\nvariants(over = {"BS": [2, 4]}, name = "bs{BZ}")\n'),
    Example("E0635", "sweep with nothing to sweep", 'BS = param(int, default = 1)\nvariants(over = {"BS": []})\n'),
    Example("E0636", "sweep too large", 'A = param(int, default = 1)\nB = param(int, default = 1)\n'
            'variants(over = {"A": range(100), "B": range(100)}, name = "a{A}-b{B}")\n'),
    Example("E0637", "param both swept and fixed",
            'BS = param(int, default = 1)\nvariants(over = {"BS": [2, 4]}, set = {"BS": 8})\n'),
    Example("E0638", "--flag naming no render", 'F = maxtext_flags({"steps": 10})\nflag_file(name = "trainer", flags = F)\n',
            argv=("build", "r", "--flag", "trainr.steps=20")),
    Example("E0639", "--flag of a render that carries no flag set",
            'manifest(name = "cm", apiVersion = "v1", kind = "ConfigMap", data = {"a": "x"})\n',
            argv=("build", "r", "--flag", "cm.steps=20")),
    # renders ------------------------------------------------------------------------------------
    Example("E0701", "bad render name", 'manifest(name = "../m", apiVersion = "v1", kind = "ConfigMap")\n'),
    Example("E0702", "two renders with one name",
            'manifest(name = "m", apiVersion = "v1", kind = "ConfigMap")\njobset(name = "m", spec = {})\n'),
    Example("E0703", "value with no YAML form", 'V = tpu_slice("tpu7x:2x2x1")\n' + M),
    Example("E0705", "expression statement that does nothing", "1 + 2\n"),
    Example("E0706", "declaration in a loaded file", 'load("//recipes/lib/a.rcp", "A")\n',
            files={"recipes/lib/a.rcp": 'A = 1\nvariant("x")\n'}),
    Example("E0621", "explain --effective of a flag set with no MaxText schema",
            'flag_file(name = "f", flags = maxtext_flags({"steps": 1}))\n',
            argv=["explain", "--effective", "r", "f"]),
    Example("E0707", "string operation that would cut a flag token",
            'F = maxtext_flags({"run_name": "exp-1", "steps": 10})\n'
            'command_file(name = "run", argv = ["bash", "-c", f"train {F.shell}".replace("steps", "max_steps")])\n'),
    Example("W0707", "render or variant assigned but never declared",
            'M = manifest(name = "m", apiVersion = "v1", kind = "ConfigMap")\nvariant("default")\n', exit=0),
    Example("E0790", "require() failed", 'N = 48\nrequire(N % 32 == 0, "the batch must be a multiple of FSDP (32)")\n'),
    # limits ---------------------------------------------------------------------------------------
    Example("E0801", "nesting too deep", "X = " + "[" * 300 + "]" * 300 + "\n"),
    Example("E0802", "value too large", "X = range(2000000)\n"),
    Example("E0803", "file too large", "# " + "x" * (4 * 1024 * 1024) + "\n"),
    Example("E0804", "evaluation budget exceeded",  # one list iterated: 2.1 s to the budget, not 5.4 (a new list each)
            "R = range(3000)\nX = [[i for i in R] for j in R]\n"),
    Example("E0805", "too many renders",
            '[manifest(name = f"m{i}", apiVersion = "v1", kind = "ConfigMap") for i in range(10001)]\n'),
    Example("E0806", "number out of range", "X = 9223372036854775808\n"),
    Example("E0808", "too many errors in one file", "".join(f"X{i} = Y{i}\n" for i in range(21))),
    Example("E0809", "too many tokens in one file", "X = [\n" + "    1,\n" * 50000 + "]\n"),
    # workspace ------------------------------------------------------------------------------------
    Example("E0901", "bad rcp.toml", 'variant("default")\n', files={"rcp.toml": 'recipe_dir = ["recipes"]\n'}),
    Example("E0903", "recipes sharing an output directory", 'variant("q")\n',
            files={"recipes/r/q.rcp": 'variant("default")\n'}),
    Example("E0905", "recipe name that is not a portable path", 'variant("victim")\n',
            files={"recipes/...rcp": 'variant("victim")\n'}),
    Example("E0906", "symlink leading out of the workspace", 'variant("default")\n',
            links={"recipes/lib/env.rcp": "/proc/self/environ"}),
    Example("E0907", "symlink that cannot be resolved", 'variant("default")\n', links={"recipes/loop.rcp": "loop.rcp"}),
    Example("E0910", "output path taken by something rcpc did not make", 'variant("rcpc")\n',
            files={"recipes/compiler.rcp": 'variant("rcpc")\n', "compiler/rcpc/main.py": "print('mine')\n"},
            argv=("build", "-o", ".")),
    Example("E0911", "a file of the user's inside rcpc's output", 'variant("default")\n', argv=("build",),
            before=("build",), then={"recipes/r.rcp": 'variant("default")\nvariant("more")\n',
                                     "rcpc-out/r/default/notes.txt": "my notes\n"}),
    Example("E0912", "damaged record of the output", 'variant("default")\n', argv=("build",),
            before=("build",), then={"recipes/r.rcp": 'variant("more")\n', "rcpc-out/.rcpc/gen/1/.manifest": "{}\n"}),
    Example("W0960", "user cache another user could write", 'variant("default")\n', exit=0,
            links={"cache/rcpc": "/tmp"}, env={"XDG_CACHE_HOME": "$PWD/cache"}),
    Example("E0950", "output cannot be written", 'variant("default")\n',
            files={"out": "a file, not a directory\n"}, argv=("build", "-o", "out")),
    Example("E0951", "formatted file over the size limit",
            "X = " + "[0, " * 30 + "[" + "1, " * 45000 + "]" + "]" * 30 + "\n", argv=("fmt",)),
    Example("E0952", "a -j worker process ended before it was done", 'variant("default")\n',
            files={f"recipes/r{k}.rcp": 'variant("default")\n' for k in range(1, 5)}
            | {"recipes/r5.rcp": 'variant("default")\n' + "# enough source for the -j policy to start workers\n" * 2000},
            argv=("build", "-j", "2"), env={"RCPC_TEST_KILL": "r3.rcp"}),  # (more than parallel.MIN_PARALLEL_BYTES)
    # Kubernetes -----------------------------------------------------------------------------------
    Example("E1001", "env value that is not a string",
            'jobset(name = "js", spec = {"containers": [{"name": "c", "image": "i", "env": [{"name": "ENABLE_MULTI_NUMA", "value": 0}]}]})\n'),
    Example("E1002", "bad Kubernetes name", 'jobset(name = "js", metadata = {"name": "Demo_Train"}, spec = {})\n'),
    Example("E1003", "label value that is not a string",
            'jobset(name = "js", metadata = {"name": "js", "labels": {"id": 356136738}}, spec = {})\n'),
    Example("E1004", "container name used twice in a pod",
            'jobset(name = "js", spec = {"containers": [{"name": "main", "image": "i"}, {"name": "main", "image": "i"}]})\n'),
    Example("E1005", "bad resource quantity",
            'jobset(name = "js", spec = {"resources": {"limits": {"memory": "16GB"}}})\n'),
    Example("E1006", "TPU request that does not match the host",
            'S = tpu_slice("tpu7x:2x2x4")\nPARALLELISM = S.hosts\nTPU = 8\n' + JOBSET_TPU.split("\n", 1)[1]),
    Example("E1007", "parallelism that does not match the hosts",
            'S = tpu_slice("tpu7x:2x2x4")\nPARALLELISM = 8\nTPU = 4\n' + JOBSET_TPU.split("\n", 1)[1]),
    Example("E1008", "string field given another type",
            'jobset(name = "js", spec = {"containers": [{"name": "c", "image": "i", "args": ["--timeout", 2592000]}]})\n'),
    Example("E1009", "bad label or annotation key",
            'jobset(name = "js", metadata = {"name": "js", "labels": {"a/b/c": "x"}}, spec = {})\n'),
    Example("E1010", "two entries with one key in a keyed list",
            'BASE_ENV = [{"name": "LIBTPU_INIT_ARGS", "value": "--a"}]\n'
            'TUNED_ENV = [{"name": "LIBTPU_INIT_ARGS", "value": "--b"}]\n'
            'POD = {"containers": [{"name": "c", "image": "i", "env": BASE_ENV + TUNED_ENV}]}\n'
            'jobset(name = "js", spec = {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": POD}}}}]})\n'),
    Example("E1011", "JobSet webhook rule",
            'jobset(name = "js", spec = {"failurePolicy": {"rules": [{"action": "FailJobSet", "onJobFailureReasons": '
            '["PodFailed"]}]}, "replicatedJobs": []})\n'),
    Example("E1012", "raw CRD rejects what the cluster fills in (--strict-crd)",
            'jobset(name = "js", spec = {"failurePolicy": {"rules": [{"action": "FailJobSet"}]}, "replicatedJobs": [\n'
            '    {"name": "w", "template": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}},\n'
            ']})\n', files={"rcp.toml": 'kube_schemas = ["builtin:jobset"]\n'}, argv=("check", "--strict-crd")),
    Example("E1014", "pod or Job spec Kubernetes' core validation refuses",
            'POD = {"restartPolicy": "Always", "containers": [{"name": "c", "image": "i"}]}\n'
            'jobset(name = "js", spec = {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": POD}}}}]})\n'),
    Example("E1013", "TPU topology given twice, differently",
            'jobset(name = "js", spec = {"template": {"metadata": {"annotations": {"cloud.google.com/gke-tpu-slice-topology": '
            '"4x4x4"}}, "spec": {"nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu7x", '
            '"cloud.google.com/gke-tpu-topology": "4x4x8"}, "containers": [{"name": "c", "image": "i", "resources": {"limits": '
            '{"google.com/tpu": 4}}}]}}})\n'),
    Example("E1015", "object without apiVersion or kind", files={"m.yaml": "kind: ConfigMap\nmetadata:\n  name: c\n"},
            argv=("validate", "m.yaml")),
    Example("E1016", "JobSet CRD validation rule (CEL)",
            'POD = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}\n'
            'JOB = {"spec": {"template": {"spec": POD}}}\n'
            'jobset(name = "js", spec = {"startupPolicy": {"startupPolicyOrder": "InOrder"}, "replicatedJobs": [\n'
            '    {"name": "a", "template": JOB},\n'
            '    {"name": "b", "dependsOn": [{"name": "a", "status": "Ready"}], "template": JOB},\n'
            ']})\n'),
    Example("E1017", "Kueue label Kueue's webhook refuses",
            'jobset(name = "js", metadata = {"name": "js", "labels": {"kueue.x-k8s.io/queue-name": "Multislice_Queue"}}, '
            'spec = {})\n'),
    Example("W1001", "env var defined twice in a pod (the API server warns)",
            'manifest(name = "p", apiVersion = "v1", kind = "Pod", spec = {"containers": [{"name": "c", "image": "i", '
            '"env": [{"name": "X", "value": "1"}, {"name": "X", "value": "2"}]}]})\n', exit=0),
    Example("W1002", "TPU accelerator label no GKE node has",
            'jobset(name = "js", spec = {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": {\n'
            '    "nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v7x"},\n'
            '    "containers": [{"name": "main", "image": "img"}],\n}}}}}]})\n', exit=0),
    Example("W1003", "hostNetwork without the DNS policy that goes with it",
            'POD = {"hostNetwork": True, "restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}\n'
            'jobset(name = "js", spec = {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": POD}}}}]})\n',
            exit=0),
    Example("W1004", "$(VAR) that names no env var of the container",
            'ARGS = ["--base_output_directory=gs://bucket/$(RUN_ID)/out"]\n'
            'POD = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "i", "args": ARGS}]}\n'
            'jobset(name = "js", spec = {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": POD}}}}]})\n',
            exit=0),
    Example("W1005", "$(JOB_COMPLETION_INDEX) that stays as written",
            'ARGS = ["--process_id=$(JOB_COMPLETION_INDEX)"]\n'
            'manifest(name = "j", apiVersion = "batch/v1", kind = "Job", spec = {"template": {"spec": {\n'
            '    "restartPolicy": "Never", "containers": [{"name": "main", "image": "i", "args": ARGS}],\n'
            '}}})\n', exit=0),
    Example("E1101", "schema violation", 'manifest(name = "cm", apiVersion = "v1", kind = "ConfigMap", immutable = "yes")\n',
            files={"rcp.toml": 'kube_schemas = ["cm.json"]\n',
                   "cm.json": '{"type": "object", "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", '
                              '"kind": "ConfigMap"}], "properties": {"apiVersion": {"type": "string"}, "kind": '
                              '{"type": "string"}, "metadata": {"type": "object"}, "immutable": {"type": "boolean"}, '
                              '"data": {"type": "object", "additionalProperties": {"type": "string"}}}}\n'}),
    # import ---------------------------------------------------------------------------------------
    Example("E1200", "document that is not a Kubernetes object to import",
            files={"t.yaml": IMPORT_CM + "---\napiVersion: v1\nkind: ConfigMap\n"},
            argv=("import", "manifest", "t.yaml")),
    Example("E1201", "shell file that bash cannot parse", files={"launch.sh": "if [ -n \"$X\" ]; then\n  xpk run\n"},
            argv=("import", "shell", "launch.sh")),
    Example("E1204", "shell file that launches nothing", files={"launch.sh": "set -e\necho \"$(date)\"\n"},
            argv=("import", "shell", "launch.sh")),
    Example("E1220", "cli_value() of a text that is no flag value",
            'F = maxtext_flags({"steps": cli_value("[1, 2]")})\n'),
    Example("E1206", "command_file argv that no command line can be", 'command_file(name = "launch", argv = [])\n'),
    Example("E1202", "import output that would replace a file", files={"t.yaml": IMPORT_CM, "r.rcp": "X = 1\n"},
            argv=("import", "manifest", "t.yaml", "-o", "r.rcp")),
    Example("E1203", "imported recipe not equal to its input",
            files={"t.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  replicas: ${N}\n"},
            argv=("import", "manifest", "t.yaml", "--set", "N=3")),
    Example("E1205", "--set of a name that is no placeholder", files={"t.yaml": IMPORT_CM},
            argv=("import", "manifest", "t.yaml", "--set", "M=1")),
    Example("E1207", "placeholder of a typed field that cannot be a typed param",
            files={"t.yaml": IMPORT_TYPED.replace("replicas: ${SLICES}", 'replicas: "${SLICES}"')},
            argv=("import", "manifest", "t.yaml")),
    Example("W1208", "imported config MaxText refuses (TODO(import))",
            files={**BUILTIN, "launch.sh": 'ARGS="steps=1 num_moe_token_chunks=2"\nxpk workload create --workload=w '
                   '--command="python3 -m MaxText.train MaxText/configs/base.yml ${ARGS}"\n'},
            argv=("import", "shell", "launch.sh", "-o", "r.rcp"), exit=0),
    Example("W1209", "statement not converted that may change the launch command (TODO(import))",
            files={"launch.sh": 'ARGS="steps=10"\nif [ "$TUNED" = 1 ]; then ARGS="$ARGS steps=20"; fi\n'
                   'xpk workload create --workload=w --command="python3 -m MaxText.train MaxText/configs/base.yml '
                   '${ARGS}"\n'},
            argv=("import", "shell", "launch.sh", "-o", "r.rcp"), exit=0),
    Example("W1201", "typed param whose default the import chose is not valid (TODO(import))",
            files={"t.yaml": IMPORT_TYPED}, argv=("import", "manifest", "t.yaml", "-o", "r.rcp"), exit=0),
    Example("W1200", "part of the input kept as text (TODO(import))", files={"t.yaml": IMPORT_JOBSET},
            argv=("import", "manifest", "t.yaml", "-o", "r.rcp"), exit=0),
    # golden tests (rcpc test) -----------------------------------------------------------------------
    Example("E1300", "render that differs from its golden file", 'flag_file(name = "f", flags = maxtext_flags({"steps": 1}))\n',
            argv=("test",), before=("test", "--snapshot-update"),
            then={"recipes/r.rcp": 'flag_file(name = "f", flags = maxtext_flags({"steps": 2}))\n'}),
    Example("E1301", "render without a golden file", 'flag_file(name = "f", flags = maxtext_flags({"steps": 1}))\n',
            argv=("test",)),
    Example("E1302", "golden file that no render produces", 'flag_file(name = "f", flags = maxtext_flags({"steps": 1}))\n',
            argv=("test",), before=("test", "--snapshot-update"), then={"golden/r/default/old.flags": "steps=1\n"}),
    Example("E1303", "golden file that is not read", 'flag_file(name = "f", flags = maxtext_flags({"steps": 1}))\n',
            argv=("test",), links={"golden/r/default/f.flags": "../../../recipes/r.rcp"}),
    Example("E1304", "golden file that cannot be written", 'flag_file(name = "f", flags = maxtext_flags({"steps": 1}))\n',
            files={"golden": "a file, not a directory\n"}, argv=("test", "--snapshot-update")),
    # lint -----------------------------------------------------------------------------------------
    Example("L0001", "unused constant", 'UNUSED = 1\nvariant("default")\n', argv=("lint",)),
    Example("L0002", "unused param", 'P = param(int, default = 1)\nvariant("default")\n', argv=("lint",)),
    Example("L0003", "unused load", 'load("//recipes/lib/a.rcp", "A")\nvariant("default")\n',
            files={"recipes/lib/a.rcp": "A = 1\n"}, argv=("lint",)),
    Example("L0004", "param used by no render",
            'N = param(int, default = 1)\nrequire(N > 0, "N must be positive")\nvariant("default")\n',
            argv=("lint",)),
    Example("L0005", "variant identical to its against",
            "P = param(int, default = 1)\nV = f\"{P}\"\n" + M +
            'variant("default")\nvariant("same", set = {"P": 1}, against = "default")\n', argv=("lint",)),
    Example("L0006", "mixed bool spellings in one flag set",
            'F = maxtext_flags({"packing": True, "megablox": true})\n' + FLAGS + 'variant("default")\n',
            argv=("lint",), exit=0),
    Example("L0650", "unused function argument", files={"recipes/lib/f.rcp": "def f(a, b):\n    return a\n"},
            argv=("lint",)),
    Example("L0651", "unused local", files={"recipes/lib/f.rcp": "def f(a):\n    b = a + 1\n    return a\n"},
            argv=("lint",)),
    Example("L0652", "shadowed name", files={"recipes/lib/f.rcp": "N = 8\n\ndef f(N):\n    return N\n"},
            argv=("lint",)),
    Example("E1103", "manifest file that cannot be read as Kubernetes objects", files={"m.yaml": "kind: Pod\nkind: Job\n"},
            argv=("validate", "m.yaml")),
    Example("W1104", "key kubectl reads as another type",
            files={"m.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  yes: a\n"},
            argv=("validate", "m.yaml"), exit=0),
    Example("E1102", "schema file that cannot be used", 'variant("default")\n' + 'jobset(name = "js", spec = {})\n',
            files={"rcp.toml": 'kube_schemas = ["crd.yaml"]\n', "crd.yaml": "kind: Nothing\n"}),
]
