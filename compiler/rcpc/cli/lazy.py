"""The deferred (in-function) imports of rcpc, each with why it is not at its module's head:
the dispatch's one table of them (issue 40; docs/architecture.md, *Where lazy imports live*).

A module imports what it uses at its head. An import inside a function is for the start-up
path alone: a command, or a build that does not need a module (a heavy library, a stage it
does not run, another command's code), does not pay for importing it. Each such import is an
entry of :data:`LAZY`: (importing module, imported module) -> the reason. The dispatch's own
deferred import, :func:`rcpc.cli.command` (the one command module a run invokes), is a call of
``__import__`` and not listed. ``tests/test_module_heads.py`` reads every module's syntax tree
and fails on an in-function import not named here and on an entry that names none.

Nothing imports this module at run time: it is data, for that test and for readers.
"""

from __future__ import annotations

_COMMAND = ("rcpc.api serves every command: each function imports its own command's modules, so "
            "`rcpc fmt`, `schema`, `validate` or `completion` do not load the compiler's stages")
_STAGE = ("a stage of a build or check: `rcpc fmt` imports rcpc.domain.recipe (its Compiler parses and "
          "formats) and runs none of the evaluation's checks")
_VALIDATE = ("a manifest is validated only when its render is not in the validation cache: a build whose "
             "renders were validated before, and `rcpc fmt`, do not load the JobSet validators")
_CACHED = ("a build served from the build cache (no input changed) imports no compiler: the recipe model and "
           "the render kinds (and the evaluator, parser and MaxText model under them) load only to build")
_WORKERS = ("-j N worker processes only: an in-process build (-j 1, or -j auto on a busy machine) "
            "does not import multiprocessing")
_PLUGIN = ("pytest loads rcpc's plugin in every session of an environment rcpc is installed in: it imports "
           "no compiler (nor syrupy's assertion machinery) until a session collects rcp.toml")
_MESH = ("the mesh check (MaxText's device mesh against the slice) only where a flag set is given tpu_slice or "
         "the launch checks' memo misses (a flag set, a pod or an M_ variable changed): an edit of another flag "
         "reads it from the memo")
_LARK = ("the reference (lark) parser only (the language server's recovery, the grammar's tests): "
         "a build parses with the generated scanner and recursive descent")

LAZY: dict[tuple[str, str], str] = {
    # the entry point: a replayed build/check answers before the CLI is imported
    ("rcpc", "rcpc.api"): "PEP 562: `import rcpc` (the replay fast path, `python -m rcpc`) loads no library API",
    ("rcpc", "rcpc.core.diagnostics"): "PEP 562: rcpc.CompileError is loaded on first use, as rcpc.api",
    ("rcpc.__main__", "rcpc.build.replay"): "after the signal set-up: an interrupt while importing exits 130 quietly",
    ("rcpc.__main__", "rcpc.cli"): "a replayed build/check answers before the CLI (argparse, the compiler) loads",
    ("rcpc.interrupts", "_signal"): "the C module: `signal` imports enum (~2 ms of every start-up, replay's too)",
    ("rcpc.interrupts", "signal"): "fallback when the C module _signal is missing (not CPython)",
    ("rcpc.cli.commands.lsp", "rcpc.lsp.server"): "`rcpc --help` imports every command module: pygls loads only "
                                                  "for `rcpc lsp` itself",
    ("rcpc.cli.commands.test", "rcpc.review.golden"): "`rcpc --help` imports every command module: the golden "
                                                      "check loads only for `rcpc test` itself",
    # rcpc.api: one command's modules each
    **{("rcpc.api", m): _COMMAND for m in (
        "rcpc.build.cache", "rcpc.build.output", "rcpc.build.parallel", "rcpc.core.fmt", "rcpc.core.syntax.parser",
        "rcpc.domain.explain", "rcpc.domain.kube.crd", "rcpc.domain.kube.manifests", "rcpc.domain.kube.rules",
        "rcpc.domain.kube.schema", "rcpc.domain.launches", "rcpc.domain.lint", "rcpc.domain.maxtext.schemagen",
        "rcpc.domain.overrides", "rcpc.domain.recipe", "rcpc.domain.valuesfile", "rcpc.domain.workspace",
        "rcpc.importer.driver", "rcpc.importer.proof", "rcpc.oracle", "rcpc.review.golden", "rcpc.review.report")},
    # the recipe model: stages fmt does not run
    **{("rcpc.domain.recipe", m): _STAGE for m in (
        "rcpc.domain.contracts", "rcpc.domain.launch", "rcpc.domain.lint", "rcpc.domain.kube.rules",
        "rcpc.domain.kube.schemacache")},
    ("rcpc.domain.recipe", "rcpc.domain.kube.schema"): _VALIDATE,
    ("rcpc.domain.recipe", "rcpc.domain.kube.argvview"): _STAGE,
    ("rcpc.domain.recipe", "rcpc.domain.valuesfile"): "only a build given a values file (--values)",
    ("rcpc.domain.recipe", "rcpc.domain.flag_overrides"): "only a build given flag overrides on the command line",
    ("rcpc.domain.kube.rules", "rcpc.domain.kube.schema"): _VALIDATE,
    ("rcpc.domain.kube.rules", "rcpc.domain.kube.jobset"): _VALIDATE,
    ("rcpc.domain.kube.rules", "rcpc.domain.kube.jobset_cel"): _VALIDATE,
    ("rcpc.domain.kube.rules", "rcpc.domain.kube.kueue"): _VALIDATE,
    ("rcpc.domain.kube.rules", "rcpc.domain.kube.pod"): _VALIDATE + " (with its container, podspec and references "
                                                                   "rules): an edit build takes pod_slice alone",
    ("rcpc.domain.kube.schema", "jsonschema"): "jsonschema (with attrs and referencing, ~40 ms) only for a schema "
                                               "with no compiled validator, or to word a refusal",
    ("rcpc.domain.kube.schema", "yaml"): "PyYAML only for a schema file written in YAML",
    ("rcpc.domain.kube.manifests", "yaml"): "PyYAML only where a manifest file is read as YAML (rcpc validate, "
                                            "rcpc import): a JSON stream is read without it",
    ("rcpc.domain.kube.manifests", "rcpc.domain.kube.manifest_json"): "a file that opens with `{` only (kubectl's "
                                                                      "GuessJSONStream)",
    ("rcpc.domain.workspace", "rcpc.domain.kube.jobset"): "only when rcp.toml names jobset_feature_gates: fmt and "
                                                          "lint read rcp.toml without the JobSet model",
    ("rcpc.domain.maxtext.schema", "rcpc.domain.maxtext.schemagen"): "the generator, only for a base.yml schema: "
                                                                     "builtin:maxtext and .json schemas are read "
                                                                     "without it",
    ("rcpc.domain.maxtext.emit", "yaml"): "PyYAML only for a string OmegaConf might read as other than a string: "
                                          "plain strings are decided without it",
    ("rcpc.domain.builtins", "rcpc.domain.kube.merge"): "only a recipe calling merge() or replace()",
    ("rcpc.domain.builtins", "rcpc.domain.maxtext.mesh"): _MESH,
    ("rcpc.domain.launch", "rcpc.domain.maxtext.mesh"): _MESH,
    ("rcpc.domain.maxtext.flagset", "ast"): "ast.literal_eval only for a list flag written as a string "
                                            "(pyconfig._coerce_to_list)",
    ("rcpc.build.output", "rcpc.domain.renders"): _CACHED,
    ("rcpc.build.parallel", "rcpc.domain.recipe"): _CACHED,
    ("rcpc.build.parallel", "rcpc.core.fmt"): "`rcpc fmt` only: the formatter is not on a build's path",
    ("rcpc.build.parallel", "rcpc.build.pool"): "the pool of -j N workers only: a build of one recipe (or -j 1, "
                                                "or -j auto on a busy machine) runs in this process",
    ("rcpc.domain.kube.schema", "copy"): "a schema default that is not JSON data (a YAML set or timestamp): "
                                         "JSON's are copied without it (copy imports weakref: ~1 ms of a first build)",
    ("rcpc.build.pool", "multiprocessing"): _WORKERS,
    ("rcpc.build.pool", "multiprocessing.connection"): _WORKERS,
    ("rcpc.build.pool", "multiprocessing.reduction"): _WORKERS,
    ("rcpc.build.pool", "signal"): "`signal` imports enum (~2 ms): only a pool of workers sends or masks signals "
                                   "(the pool itself is imported only to start -j workers)",
    ("rcpc.build.pool", "traceback"): "a worker's internal error only (its traceback sent to the parent)",
    ("rcpc.build.pool", "ctypes"): "prctl(PR_SET_PDEATHSIG) in a forked worker only (Linux)",
    ("rcpc.build.replay", "rcpc.core.digest"): "the replay fast path hashes a file only when its stat changed",
    ("rcpc.core.files", "tempfile"): "tempfile (random, shutil) only when an output (-o FILE) is replaced",
    ("rcpc.core.goyaml", "fractions"): "float32 formatting only (Go's FormatFloat(x, 'g', -1, 32)): `rcpc fmt` "
                                       "and `completion` print no float32",
    ("rcpc.core.goyaml", "struct"): "as fractions: float32 formatting only",
    ("rcpc.core.goyaml", "base64"): "only a !!binary scalar (a recipe's build reads none)",
    ("rcpc.core.goyaml", "calendar"): "only a !!timestamp scalar (a recipe's build reads none)",
    ("rcpc.core.syntax.parser", "lark"): _LARK,
    ("rcpc.core.syntax.parser", "lark.exceptions"): _LARK,
    ("rcpc.build.cache", "rcpc.domain.overrides"): _CACHED,
    ("rcpc.build.cache", "rcpc.domain.recipe"): _CACHED,
    # the caches: the replay fast path (build/replay.py) and `rcpc fmt` read none
    ("rcpc.core.store", "_sqlite3"): "the store's database is opened only when a cache entry is read or written: "
                                     "a replayed build or check does not import sqlite3 (~3 ms). The C module: "
                                     "sqlite3's package adds datetime and the date adapters (~1.5 ms), which "
                                     "the store, binding bytes, str and int only, never uses",
    ("rcpc.core.usercache", "rcpc.core.digest"): "the replay fast path checks the cache directory's trust but "
                                                 "fingerprints nothing: the digest loads only to fingerprint",
    ("rcpc.core.usercache", "importlib.util"): "as the digest: only to fingerprint an installed distribution",
    ("rcpc.core.usercache", "rcpc.core.distributions"): "as the digest: only to fingerprint (once a process)",
    ("rcpc.core.usercache", "rcpc.core.diagnostics"): "only the warning about an untrusted cache directory (W0960) "
                                                      "is formatted: usercache is on the replay fast path",
    ("rcpc.oracle", "concurrent.futures"): "threads only when the MaxText oracle runs more than one interpreter",
    # modules on every command's path, for one command's need
    ("rcpc.completion", "shtab"): "only `rcpc completion` writes a script; the CLI imports completion for every command",
    ("rcpc.cli.run", "rcpc.findings"): "only --format github or sarif: a command printing text or JSON does not "
                                       "load the findings' formats",
    ("rcpc.findings", "rcpc.catalog"): "only SARIF output names the codes' titles (findings serves --format github "
                                       "too)",
    ("rcpc.core.testhook", "signal"): "testhook is on the build and check path (the store's and pool's test "
                                      "points); only a test's kill needs signal (which imports enum, ~2 ms)",
    ("rcpc.review.report", "tempfile"): "`rcpc --help` imports review.report (diff's options): only diff --rev checks "
                                        "a revision out",
    ("rcpc.review.report", "rcpc.review.revision"): "as tempfile: only `rcpc diff --rev` reads git",
    ("rcpc.review.report", "rcpc.domain.recipe"): "as tempfile: `rcpc --help` does not load the compiler",
    ("rcpc.review.golden", "difflib"): "only a golden that changed is diffed",
    ("rcpc.review.golden", "yaml"): "PyYAML (libyaml) only to summarize a golden that changed",
    ("rcpc.domain.maxtext.schemagen", "subprocess"): "schemagen is on the build path (its YAML loader, refusals); "
                                                     "only `rcpc schema` asks git for MaxText's commit",
    ("rcpc.domain.maxtext.schemagen", "yaml"): "as subprocess: only a MaxText YAML config read (rcpc schema, a "
                                               "base.yml schema) needs PyYAML",
    # standard-library modules a build does not need (issue 37, 41: measured in the commits that moved them)
    ("rcpc.core.diagnostics", "difflib"): "only a diagnostic with a did-you-mean hint compares words (difflib "
                                          "imports heapq: ~1.3 ms of every build otherwise)",
    ("rcpc.domain.stdlib", "difflib"): "as rcpc.core.diagnostics': only a missing @rcpc// file is matched",
    ("rcpc.domain.delta", "difflib"): "only lists that differ are aligned (rcpc diff, a contract's check of a list "
                                      "that changed): a build whose lists are equal does not import difflib",
    ("rcpc.domain.workspace", "tomli"): "only an rcp.toml whose table is not in the store (its bytes, rcpc's code "
                                        "and Python's version not seen before): tomli, with datetime, ~3 ms",
    ("rcpc.cli.parsing", "shutil"): "the terminal's width only when help or usage is formatted: argparse makes a "
                                    "formatter in every add_argument, and a build formats neither",
    ("rcpc.build.output", "shutil"): "shutil (with bz2, lzma, zlib: ~2 ms) only when an output tree is removed, "
                                     "or a render copied where no hard link can be made",
    ("rcpc.build.pool", "threading"): "the parent-watching thread of a worker where prctl is missing (not Linux); "
                                      "the CLI asks for the main thread without importing threading",
    ("rcpc.domain.kube.quantity", "fractions"): "only an amount that is not whole ('500m'): a build's quantities "
                                                "are ints, exact without fractions (with decimal, numbers: ~2 ms)",
    ("rcpc.domain.kube.quantity", "decimal"): "only a float where a quantity is wanted (Go's JSON text of it)",
    # the pytest plugin: pytest loads it in every session of an environment rcpc is installed in
    **{("rcpc.testing.plugin", m): _PLUGIN for m in (
        "rcpc.api", "rcpc.core.diagnostics", "rcpc.review.golden", "rcpc.testing.golden",
        "syrupy.assertion", "syrupy.location")},
    ("rcpc.testing.plugin", "_pytest.unraisableexception"): "a pytest-private name (pytester's), inside the try that "
                                                            "keeps pytest's own collection where it is missing",
    ("rcpc.testing.golden", "rcpc.review.golden"): _PLUGIN,
    # MaxText's loader driver runs in the user's interpreter
    **{("rcpc.oracle_driver", m): "the driver runs in the user's interpreter: MaxText (and JAX) are imported after "
                                  "stdout is moved to stderr, inside the try that reports a failed import"
       for m in ("maxtext.configs", "maxtext.utils", "maxtext.utils.maxtext_utils", "jax")},
}
