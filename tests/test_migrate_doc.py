"""docs/migrate.md is generated here: its command outputs are the real output of
``rcpc import`` and ``rcpc build`` run by this test (a golden file: ``pytest
--snapshot-update`` rewrites it)."""

from __future__ import annotations

from pathlib import Path

from rcpc.cli import main
from rcpc.testing.golden import GoldenExtension

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "migrate.md"
SHELL = "../shared/data/tpu-recipes/xpk/llama3.1-70b_8k-bf16-tpu7x-4x4x4.sh"
MANIFEST = "../shared/data/tpu-recipes/llama3.1-70b_8k-bf16-tpu7x-4x4x4.yaml"


def _run(argv, capsys) -> tuple[str, str]:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out, err


def _block(lang: str, text: str) -> str:
    return f"```{lang}\n{text.rstrip()}\n```\n"


def test_migrate_doc(tmp_path, monkeypatch, capsys, snapshot, request):
    monkeypatch.chdir(REPO)
    recipe, notes = _run(["import", "shell", SHELL], capsys)
    manifest_recipe, manifest_status = _run(["import", "manifest", MANIFEST], capsys)
    ws = tmp_path / "team"
    (ws / "recipes").mkdir(parents=True)
    (ws / "rcp.toml").write_text("")
    (ws / "recipes" / "llama3_1_70b.rcp").write_text(recipe)
    monkeypatch.chdir(ws)
    _, built = _run(["build", "llama3_1_70b", "--set", "PROJECT_ID=my-project", "--set", "CLUSTER_NAME=tpu7x-eu",
                     "--set", "ZONE=europe-west4-a", "--set", "WORKLOAD_NAME=llama-70b-0", "-o", "out"], capsys)
    launch = (ws / "out" / "llama3_1_70b" / "custom" / "launch.sh").read_text()
    doc = "\n".join([
        "# Migrating shell recipes and YAML templates to rcpc",
        "",
        "`rcpc import` turns the launch files a team has today into recipes, and proves each",
        "recipe equal to its input before it says so: the first commit of a migration changes",
        "nothing that runs. This page walks through importing one of the published XPK shell",
        "recipes, reviewing the result and replacing the shell file, then importing a JobSet",
        "template. Every output below is real: `tests/test_migrate_doc.py` runs the commands",
        "and regenerates this page. The published files it imports are in `../shared/data/` beside",
        "this repository's checkout, where its tests find them (`../shared/data/README.md` gives",
        "their sources); with your own files, give their paths instead.",
        "",
        "## 1. Import the shell recipe",
        "",
        _block("sh", f"rcpc import shell {SHELL} -o recipes/llama3_1_70b.rcp"),
        "The recipe is written only when it is new (`--force` replaces an existing file; without",
        "`-o` it goes to stdout). rcpc then builds it and compares (see *The proof* below). On",
        "stderr, each statement it did not convert is listed as a `TODO(import)` (W1200), at its",
        "line, and the last line says whether the recipe is equal:",
        "",
        _block("text", notes),
        "## 2. Review the recipe",
        "",
        "The shell file's statements become, in order: `export NAME=value` a typed param (`int`,",
        "`float` or `bool` by its spelling, else `str`; an empty value a param whose default is its",
        "name in lowercase, so that a missing `--set` shows), the `--xla_...` blob a list (joined with the file's own spacing where the command",
        "uses it), the `key=value` blob a `maxtext_flags` set (each value in the spelling the file",
        "has), and `xpk workload create ...` a `command_file` render whose `argv` is the command's",
        "words. Everything else stays as a `# TODO(import)` comment where it was: review each,",
        "then delete it or convert it by hand.",
        "",
        "When a function of rcpc's standard library (`@rcpc//maxtext_tpu.rcp`, shipped with rcpc:",
        "the recipe loads it, nothing to copy) builds the same command line, `argv` is a call of",
        "it: `maxtext_xpk_workload`, or `xpk_workload_create` with `xpk_workload_command` (a",
        "keyword only where the file differs from the defaults), the `--xla_...` blob the dict of",
        "flags the call takes, and a run of flags that is one of the library's flag layers",
        "(`FSDP_MESH`, `SYNTHETIC_DATA`) named. Twelve of the 15 published XPK recipes import as",
        "such a call; the others (a different `--command`, or MaxDiffusion's flags kept as a string)",
        "as words; the trillium scripts (`python3 -m benchmarks.benchmark_runner xpk ...`) as",
        "`maxtext_benchmark_runner`. No call is trusted: it is proven as any import is.",
        "",
        "The slice the command names by its accelerator type (`--device-type=tpu7x-4x4x4`,",
        "`--tpu-type=v5p-16`, `--device_type=v6e-256`) is `TPU_SLICE = tpu_slice(...)` (v5p-16 is",
        "`v5p:2x2x2`: the count is TensorCores on v4, v5p and v7x, chips on v5e and v6e), the word its",
        "`.device_type` or `.accelerator_type`, and the flag sets carry it (`tpu_slice = TPU_SLICE`,",
        "`num_slices`), so that `rcpc check` checks MaxText's mesh against the slice. A variable the",
        "file reads but never sets (`--project=$PROJECT`, `export ZONE=\"${ZONE}\"`) comes from its",
        "environment: it is a `str` param whose default is its name in lowercase (`project`), set it",
        "with `--set`; `NAME=\"${NAME:-default}\"` is a param of that default.",
        "",
        _block("python", recipe),
        "## 3. Build and run it",
        "",
        "`rcpc build` writes `launch.sh`, an executable bash script that runs exactly the words",
        "of `argv`, each quoted only where bash needs it:",
        "",
        _block("sh", "rcpc build llama3_1_70b --set PROJECT_ID=my-project --set CLUSTER_NAME=tpu7x-eu \\\n"
               "    --set ZONE=europe-west4-a --set WORKLOAD_NAME=llama-70b-0 -o out\n"
               "out/llama3_1_70b/custom/launch.sh"),
        _block("sh", launch),
        "## 4. Replace the shell file",
        "",
        "1. Commit the recipe next to the shell file, with the import's output in the message:",
        "   the diff that follows is the review of the migration.",
        "2. Resolve the `TODO(import)` comments. The environment setup (`source .../activate`,",
        "   `pip show xpk`) belongs to the machine that launches, not to the recipe; a value the",
        "   shell computed (`WORKLOAD_NAME=\"$(printf ... $(date ...))\"`) is now a param: pass it",
        "   with `--set` (or compute it in the job that calls `rcpc build`).",
        "3. Delete the shell file, and launch with `rcpc build ... && out/<recipe>/<variant>/launch.sh`.",
        "   From then on `rcpc fmt --check`, `rcpc lint`, `rcpc check` and the golden files guard",
        "   every change, and `rcpc diff` shows what a variant changes.",
        "",
        "## 5. Import a manifest template",
        "",
        "A JobSet (or any Kubernetes object) written as an envsubst template becomes a recipe in",
        "the same way: each `${VAR}` placeholder a param (`--set VAR=VALUE` gives its",
        "default; `--var VAR` names the placeholders exactly as envsubst's SHELL-FORMAT would;",
        "`${TPU_WORKER_ID}` and the other variables a pod's shell reads at run time stay literal).",
        "A placeholder that is the whole, unquoted value of a field the Kubernetes schema types",
        "(`replicas: ${NUM_SLICES}`, `parallelism: ${HOSTS}`, `hostNetwork: ${HOST_NETWORK}`,",
        "`google.com/tpu: ${CHIPS}`) is an `int`, `bool` or `float` param, as envsubst's YAML reads",
        "its value there; any other a `str` param. The schema is the workspace's `kube_schemas`",
        "for the object's kind, else rcpc's JobSet schema. Such a placeholder quoted (`\"${N}\"`, a",
        "string for every value) or part of a number (`1${N}`) is E1207 at its place. Without",
        "`--set`, a typed param's default is `1` (`false`, `1.0`); where the Kubernetes or TPU rules",
        "refuse it (`parallelism` on a slice of 16 hosts), the import still proves the recipe equal",
        "and lists a `TODO(import)` (W1201) at the placeholder: import again with",
        "`--set HOSTS=16`, or change the default. Any other error of the recipe's build is",
        "reported at the template's line and column (the recipe is the template as data).",
        "The container's startup command is split as above: the MaxText flags into `maxtext_flags`",
        "(a key written again starts a new layer, as the trainer's last `key=value` wins),",
        "`LIBTPU_INIT_ARGS` into a list, the shell around them kept. When a function of the standard",
        "library (`@rcpc//maxtext_tpu.rcp`) renders the same manifest, the recipe is a call of",
        "it, with a keyword only where the template differs from the function's defaults; otherwise",
        "it is a data literal. Each of the 13 published templates is a call: `maxtext_jobset`,",
        "`xpk_jobset` with `xpk_command` or `xpk_maxdiffusion_command`, or `xpk_generated_jobset`",
        "with `xpk_generated_command` (the JobSet as XPK generates it). No call is trusted: it is",
        "proven as any import is, and the data literal is the import when none is equal.",
        "",
        _block("sh", f"rcpc import manifest {MANIFEST}"),
        _block("python", manifest_recipe),
        _block("text", manifest_status),
        "## The proof",
        "",
        "Each import builds the recipe and compares it with its input, for the params' defaults",
        "and again for a second value of every param (so a param the recipe ignored cannot pass",
        "by its default; the renders are compared as written, before the Kubernetes and TPU rules,",
        "which check the build with the defaults). It prints `equal`, or exits 1 with the first",
        "difference (E1203):",
        "",
        "* a manifest: the parsed YAML of the render against the template after envsubst with the",
        "  same values, strictly (`2` is not `2.0`, `true` is not `\"true\"`);",
        "* a shell recipe: bash runs the shell file's converted statements (the params' values",
        "  substituted) and the `launch.sh` render, each command stubbed to record its words; the",
        "  two lists of command lines must be equal, and each MaxText flag set's tokens must be the",
        "  words the trainer gets in the launch command.",
        "",
        "## Limits",
        "",
        "* An unquoted `$VAR` in a command word is one word in the recipe; bash would split it at",
        "  spaces, expand globs in it, and drop it when empty. The proof uses values without spaces;",
        "  quote such words in the shell file if their values may hold spaces.",
        "* The environment `export` gives the launched command is not reproduced: the recipe",
        "  reproduces the command line. Exported variables the command line does not use are",
        "  listed as `TODO(import)`.",
        "* In a shell recipe, a flag blob is a flag set when its words, separated by single spaces",
        "  outside quotes, each have a spelling the flag set writes: bare, its value in single quotes",
        "  (`key='fixed,-224,224'`: `.shell_quoted([...])`), or, for a value the shell reads as",
        "  written (a glob such as `${DIR}/*.arrayrecord`), raw (`.shell_quoted([...], raw = [...])`);",
        "  spaces around the words are kept around the flag set's shell text. It stays a string",
        "  (with a `TODO(import)`) when a key repeats or a word has no such spelling. In a",
        "  template's startup command a repeated key starts a",
        "  new layer and values quoted where the shell needs no quotes are written with",
        "  `shell_quoted`; a word with no such spelling (a value in double quotes) keeps the flags",
        "  as shell text, with a `TODO(import)`. In a field of a kind whose schema rcpc does not",
        "  have (`data` of a ConfigMap, a CRD not in `kube_schemas`), a placeholder is a `str`",
        "  param; one that YAML reads as a number after envsubst (`n: ${N}` with `--set N=3`)",
        "  cannot be: the import says so (E1203). An int-or-string field (a quantity, a port) takes",
        "  an `int` param: a template run with a name or a percentage there (`25%`) needs the",
        "  recipe edited by hand.",
        "* The shell is parsed with bashlex, which does not read every bash construct; such a file is",
        "  E1201 at the place bashlex stops. bashlex reads the text of single quotes that do not start",
        "  a word as if unquoted (`k='`'`, `k='$(x'`, `\\\"'${X'` fail or never end there); bash takes",
        "  it literally, so when bashlex fails rcpc parses the file once more with those characters",
        "  masked (same words, same offsets), unless the file holds a here-document, a backquote",
        "  outside single quotes, `$(` inside double quotes or `$'...'`. Where bashlex never stops on",
        "  a word bash accepts, rcpc bounds its work by the file's length and reports E1201 at that word",
        "  (\"does not finish on this word\") after about a second; in a manifest's startup command",
        "  the command is kept as text (W1200, with the offset in the command where bashlex",
        "  stopped). Command substitutions nested more than about 50 deep",
        "  are refused the same way (`compiler/rcpc/importer/bash.py`). bashlex has no `case`: rcpc",
        "  reads a `case ... esac` that starts a line itself (`compiler/rcpc/importer/shcase.py`,",
        "  each arm's commands parsed by bashlex); an arm that falls through (`;&`, `;;&`), a `case`",
        "  inside an arm, or a `case` inside another compound command is E1201.",
        "* `case \"$P\" in \"a\" | \"b\") X=1; Y=big ;; ... *) echo ...; exit 1 ;; esac` on a `str`",
        "  param `P` (`P=\"${P:-a}\"`) whose arms assign the same names literal values, and whose `*`",
        "  arm (if any) reports and exits, makes `P` a param with the patterns as `choices` (a value",
        "  of no arm exits the script; the build refuses it) and each name a lookup,",
        "  `X = {\"a\": 1, \"b\": 1, ...}[P]`. Any other `case` stays a `TODO(import)` comment.",
        "* `eval ${cmd}` (or `eval \"$cmd ...\"`) of a string the script sets from literals and params",
        "  is the command that string spells, interpreted as bash would (its unquoted expansion",
        "  split, the words joined and parsed again: the quoting inside the string, such as",
        "  `'\"'\"'`, is read), with each param and case-chosen value a reference: the `command_file`",
        "  render's words are the recipe's expressions. The script's words are then what bash runs",
        "  for values without spaces or quotes (a param's value is one word of the recipe, where",
        "  eval would split and parse it again). Where the split string holds a glob character",
        "  (`pip install jax[tpu]`, unquoted in `eval ${cmd}`), bash would match it against the",
        "  files of its working directory: the recipe keeps it as written (bash's result when no",
        "  file matches), with a `W1200` saying so. An eval of a string rcpc cannot know (from the",
        "  environment, a command's output, several commands, a builtin) is a `TODO(import)` saying",
        "  why (E1204 when it was the only launch). The ironwood MaxDiffusion inference script",
        "  imports so, equal (its MaxDiffusion `key=value` words stay inside the `--command` word:",
        "  not yet a flag set).",
        "* A file of several YAML documents is one recipe of one render a document (data literals,",
        "  in order), proven equal document by document. A vLLM server file (the ironwood gemma4",
        "  server: Namespace, StorageClass, PersistentVolumeClaim, and a Deployment running",
        "  `vllm.entrypoints.openai.api_server` on a one-host TPU slice) is one call of",
        "  `@rcpc//vllm_tpu.rcp` a document instead: `kube_namespace`, `gke_pd_storage_class`,",
        "  `volume_claim` and `vllm_tpu_deployment(NAME, IMAGE, tpu_slice(\"tpu7x:2x2x1\"),",
        "  VLLM_OPTIONS, ...)`, the server's arguments the dict `VLLM_OPTIONS` (`--name=value` an entry,",
        "  a number as spelled, a switch such as `--async-scheduling` `True`), rendered and checked by",
        "  `vllm_args`; another document in the file (a Service) stays a data literal, and a",
        "  Deployment the call does not render as written (an option's value in the next word, a",
        "  container port that is not the server's) makes the whole file data literals.",
        "* When the pinned MaxText schema refuses the input's config (E0350: the published",
        "  deepseek3, gpt-oss and qwen3 recipes set `use_random_routing=True` with an",
        "  expert-parallel rank of 1), the import is still equal and written, with a W1208",
        "  `TODO(import)`: `rcpc build` refuses the recipe until the flags are changed.",
        "",
    ])
    request.node.golden_path = DOC
    assert snapshot(extension_class=GoldenExtension) == doc
