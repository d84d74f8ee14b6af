"""``rcpc build``, ``check`` and ``fmt`` of the bundled recipes import no attrs (issue 20:
``import attrs`` alone cost 146 M instructions, ~4x ``python -c pass``; the build path's
classes are :mod:`rcpc.core.record` classes). Whole processes, as a user runs them, with
``python -X importtime`` telling every module imported and by whom.

Cold (empty user cache), manifests are validated against the JobSet schema with jsonschema,
which imports attrs itself: there every attrs import must come from inside jsonschema's. After
an edit of one MaxText flag (the edit loop), no attrs module is imported at all.

What was made ahead of time is not made again (issues 37 and 41): neither a first build nor
an edit's imports fastjsonschema (the compiled JobSet validator runs without it), the grammar's
reference lexer (the scanner's tables are generated), the record templates' or the precompiled
patterns' generator; nor any module off the build path (:data:`NOT_BUILT_WITH`: the MaxText schema generator, other
commands' code, PyYAML, lark, jsonschema on valid JobSets), and rcpc's modules it imports are
bounded (:data:`BUILD_PATH_MODULES`; issue 40); an edit's build does not parse rcp.toml again
(:data:`NOT_EDITED_WITH`). A build served from the build cache imports no
compiler at all (:data:`COMPILER`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

RECIPE = "rl/qwen35_397b_256_v7x"
FLAG = r'"ragged_buffer_factor": [0-9.]+,'
THIRD_PARTY_USERS = ("jsonschema", "referencing")  # libraries that import attrs themselves


def imports(ws: Path, env: dict, *args: str) -> list[tuple[str, tuple[str, ...]]]:
    """Each module ``rcpc ARGS`` imported, with the modules whose import imported it
    (innermost first), from ``-X importtime`` (a module is listed when its import ends,
    indented by its depth, after every module it imported)."""
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "rcpc", *args], cwd=ws, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = []
    for line in r.stderr.splitlines():
        if line.startswith("import time:") and line.split("|")[1].strip().isdigit():
            name = line.split("|")[2]
            stripped = name.lstrip()
            rows.append(((len(name) - len(stripped)) // 2, stripped.strip()))
    out = []
    for i, (depth, name) in enumerate(rows):
        parents, d = [], depth
        for later_depth, later in rows[i + 1:]:
            if later_depth < d:
                parents.append(later)
                d = later_depth
        out.append((name, tuple(parents)))
    return out


def _is_attrs(name: str) -> bool:
    return name.split(".")[0] in ("attr", "attrs")


def test_build_check_and_fmt_import_attrs_only_through_jsonschema_and_not_at_all_after_an_edit(bundled_workspace):
    ws, env = bundled_workspace
    for args in (("check",), ("build",)):
        found = imports(ws, env, *args)
        assert any(name == "rcpc.core.syntax.ast" for name, _ in found)
        stray = [(name, parents) for name, parents in found
                 if _is_attrs(name) and not any(p.split(".")[0] in THIRD_PARTY_USERS for p in parents)]
        assert not stray, f"rcpc {' '.join(args)} imported attrs itself: {stray}"

    path = ws / "recipes" / f"{RECIPE}.rcp"
    for i, args in enumerate((("build", RECIPE), ("check",), ("fmt", "--check", "recipes"))):
        text, n = re.subn(FLAG, f'"ragged_buffer_factor": {3 + i}.0,', path.read_text(), count=1)
        assert n == 1
        path.write_text(text)
        found = [name for name, _ in imports(ws, env, *args)]
        if args[0] != "fmt":  # the recipe was compiled again, not replayed
            assert "rcpc.core.evaluate" in found and "rcpc.domain.recipe" in found
        assert "rcpc.core.syntax.ast" in found
        assert not [n for n in found if _is_attrs(n)], f"rcpc {' '.join(args)} after an edit imported attrs"


# Made ahead of time, so never imported by a build (BUILT_AHEAD's modules write what they replace).
BUILT_AHEAD = ("fastjsonschema", "rcpc.core.syntax.terminals", "rcpc.core.record_codegen", "rcpc.domain.kube.codegen",
               "rcpc.core.pattern_codegen")
# Not on the build path (rcpc.cli.lazy names why each is deferred): the generators and what only
# they use, other commands' code, libraries for paths a build of valid recipes does not take.
NOT_BUILT_WITH = ("rcpc.domain.maxtext.schemagen", "rcpc.domain.maxtext.refusals", "rcpc.domain.maxtext.refusal_rules",
                  "rcpc.domain.kube.crd", "rcpc.core.fmt", "rcpc.importer", "rcpc.review", "rcpc.lsp", "rcpc.oracle",
                  "rcpc.domain.explain", "ast", "yaml", "lark", "jsonschema", "multiprocessing", "tempfile", "traceback",
                  "ctypes", "calendar", "base64", "rcpc.build.pool", "rcpc.findings",
                  # the standard library's, for paths a build of valid recipes does not take: did-you-mean
                  # hints and list alignment (difflib), quantities that are not whole (fractions, decimal,
                  # numbers), threads (threading), removing trees and the terminal's width (shutil, with
                  # bz2 and lzma: argparse asks for the width only when it formats help), signal's enums (the
                  # C module _signal masks signals), struct (float32 formatting), the sqlite3 package (the store
                  # uses its C module, _sqlite3: the package adds datetime and its date adapters)
                  "difflib", "heapq", "fractions", "decimal", "numbers", "threading", "shutil", "bz2", "lzma",
                  "signal", "struct", "sqlite3",
                  # copy (with weakref): a schema's defaults are JSON data, copied without it (kube.schema._copied)
                  "copy", "weakref",
                  # typing and string: rcp.toml is read by tomli (Python 3.11's tomllib imports both, ~4 ms)
                  "tomllib", "typing", "string",
                  # hashlib: its import loads OpenSSL (~2.4 ms, the largest a build made); rcpc's digests are
                  # BLAKE2b from the _blake2 module (rcpc.core.digest); a values file's SHA-256 (provenance) only
                  "hashlib", "_hashlib")
# Not on the path of a build after an edit (a first build imports them): rcp.toml's table is read
# back from the store (rcpc.domain.workspace.config_table), so tomli and what only it imports
# (datetime) are not loaded; nor validation's modules an edit does not run (its renders were validated before), the mesh
# check (the launch checks' memo has it), merge() (the RL recipe calls none).
NOT_EDITED_WITH = ("tomli", "datetime",
                   "rcpc.domain.kube.rules", "rcpc.domain.kube.pod", "rcpc.domain.kube.container",
                   "rcpc.domain.kube.podspec", "rcpc.domain.kube.references", "rcpc.domain.kube.jobset",
                   "rcpc.domain.kube.quantity", "rcpc.domain.kube.validation", "rcpc.domain.kube.merge",
                   "rcpc.domain.maxtext.mesh")
# A build whose recipes are all in the build cache compiles nothing (rcpc.cli.lazy: _CACHED).
COMPILER = ("rcpc.domain.recipe", "rcpc.domain.renders", "rcpc.core.evaluate", "rcpc.core.syntax.parser",
            "rcpc.domain.maxtext.flagset")
# rcpc's modules a build imports: 93 for the RL recipe's first build and edit (startup4), 95 by
# December 2026, 97 with rcpc.core.patterns and its table rcpc.core.pattern_codes (module-level
# patterns compiled on first use or ahead of time: ~5 ms less a build), 95 again without the
# worker pool and the findings' formats, 96 with rcpc.domain.kube.slices (pod_slice out of the
# Kubernetes rules: an edit imports 84, neither the rules nor the quantity and name checks).
# More is a decision (a module on every build's path), made by raising this with the reason.
BUILD_PATH_MODULES = 96


def test_a_first_build_and_an_edit_import_nothing_made_ahead_of_time(bundled_workspace):
    ws, env = bundled_workspace
    first = {name for name, _ in imports(ws, env, "build", RECIPE)}
    # the compiled validator gave its verdicts (importlib.import_module's imports are not listed,
    # but what the generated module imports is)
    assert "rcpc.domain.kube.compiled" in first
    path = ws / "recipes" / f"{RECIPE}.rcp"
    text, n = re.subn(FLAG, '"ragged_buffer_factor": 7.0,', path.read_text(), count=1)
    assert n == 1
    path.write_text(text)
    edit = {name for name, _ in imports(ws, env, "build", RECIPE)}
    assert "rcpc.core.syntax.lexer" in edit and "rcpc.core.evaluate" in edit  # compiled, not replayed
    assert "tomli" in first  # the table was parsed, and kept
    assert not sorted(n for n in edit if n in NOT_EDITED_WITH or n.split(".")[0] in NOT_EDITED_WITH), sorted(edit)
    os.utime(path)  # changed just now: not replayed (racy), served from the build cache by content
    cached = {name for name, _ in imports(ws, env, "build", RECIPE)}
    assert "rcpc.build.cache" in cached
    compiler = sorted(n for n in cached if n in COMPILER)
    assert not compiler, f"a build served from the build cache imported the compiler: {compiler}"
    assert "rcpc.domain.kube.pod" in first  # the reader sees the first build validate
    for found in (first, edit):
        assert not [n for n in found if n.split(".")[0] in BUILT_AHEAD or n in BUILT_AHEAD], sorted(found)
        stray = sorted(n for n in found if any(n == m or n.startswith(m + ".") for m in NOT_BUILT_WITH))
        assert not stray, f"a build imported modules off its path: {stray}"
        ours = sorted(n for n in found if n.split(".")[0] == "rcpc")
        assert len(ours) <= BUILD_PATH_MODULES, (len(ours), ours)
