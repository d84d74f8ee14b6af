"""Attacks on the build server's memory of parses and the per-process memos (branch
``server-warm``): the AST cache entries a request's child reports and the server keeps
(:func:`rcpc.server.learn`, :func:`rcpc.core.astcache.remember`), and the schemas shared by
their bytes (:mod:`rcpc.domain.kube_schema`).

A command through the server must do exactly what it does in-process (``RCPC_NO_SERVER=1``):
print, exit, write its outputs, and fill the client's cache.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rcpc.domain import kube_schema
from test_server import RCPC, TRACEBACK, files, server  # noqa: F401 (the fixture)

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the build server is Linux-only")

TOML = 'recipe_dirs = ["recipes"]\nlibrary_dirs = ["recipes/lib"]\noutput_dir = "rcpc-out"\n' \
       'maxtext_schema = "builtin:maxtext"\nkube_schemas = ["builtin:jobset"]\n'
TAIL = 'F = maxtext_flags({"steps": A, "run_name": "r"})\nflag_file(name = "t", flags = F)\n'
# top-level statements (and broken ones): strings, long strings, comments, f-strings, line
# continuations, brackets, CRLF, tabs, else branches: what decides where the incremental
# parser cuts a file into chunks
STATEMENTS = [
    'A = 1\n', 'A = 2\n', 'B = "two"\n', 'B = "tw\\"o"\n', "B = 'x#y'\n", 'B = """multi\nX = 5\n"""\n',
    "B = '''a\n'''\n", 'C = f"{B}-x"\n', 'C = f"{A}"  # c\n', '# comment\n', '\n', 'D = [\n1,\n2]\n',
    'E = A + \\\n  1\n', 'if A == 1:\n    G = 1\nelse:\n    G = 2\n', 'def f(x):\n\treturn x + 1\n',
    'H = {"k": "v"}\r\n', 'J = (\n# c\n3)\n', 'K = "unterminated\n', 'L = [,\n', '  N = 1\n',
    'O = "a\\\nb"\n', 'P = """x\\"""\n"""\n', 'Q = 1 # "\n',
]
COMMANDS = [["build"], ["check", "--notes"], ["fmt", "--check"], ["lint"], ["fmt", "--diff"], ["fmt"]]


def _workspace(path: Path, text: str) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    (path / "recipes").mkdir(parents=True)
    (path / "rcp.toml").write_text(TOML)
    (path / "recipes" / "x.rcp").write_bytes(text.encode())
    return path


def _run(server, ws: Path, args, served: bool, cache: Path) -> subprocess.CompletedProcess:
    r = server.rcpc(*args, cwd=ws, served=served, env={"XDG_CACHE_HOME": str(cache)})
    assert not TRACEBACK.search(r.stderr.decode()), r.stderr.decode()
    return r


def _ast_entries(cache: Path) -> set:
    """The names of the AST cache's files (entries and last-parse records) under ``cache``."""
    root = cache / "rcpc" / "ast"
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()} if root.is_dir() else set()


@linux
def test_a_served_command_fills_the_clients_cache_as_in_process(server, tmp_path):
    """A client with another (here: empty) ``XDG_CACHE_HOME`` than the one the server keeps
    a file's parse for gets in its cache the entry (and the path's last-parse record) that
    the same command writes in-process (it was served the parse from memory and its cache
    stayed cold: a CI cache directory, a fresh ``~/.cache`` after ``rm -rf``). The server
    stores a served command's new parses after the command; its answer to ``status`` comes
    after that."""
    ws = _workspace(tmp_path / "ws", "A = 1\n" + TAIL)
    before = server.served()
    _run(server, ws, ["build"], True, tmp_path / "warm")  # the server now keeps x.rcp's parse
    _run(server, ws, ["build"], True, tmp_path / "served")
    _run(server, ws, ["build"], False, tmp_path / "local")
    assert server.served() == before + 2
    assert _ast_entries(tmp_path / "local")
    assert _ast_entries(tmp_path / "served") == _ast_entries(tmp_path / "local")


@linux
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 1), st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=6),
                          st.sampled_from(COMMANDS)), min_size=2, max_size=5))
def test_two_workspaces_of_one_display_path_through_one_server(server, tmp_path_factory, steps):
    """Two workspaces whose recipe has the same display path (``recipes/x.rcp``) and other
    texts, edited alternately: each command through one server (whose memory lends the
    other workspace's parse of that path) prints, exits and writes what it does
    in-process with an empty cache. (Passes: 460 random steps of this model, run by hand,
    found no difference.)"""
    base = tmp_path_factory.mktemp("two")
    shared = base / "shared-cache"
    for i, (which, statements, args) in enumerate(steps):
        text = "".join(statements) + TAIL
        ws = base / f"ws{which}"
        if not ws.exists():
            _workspace(ws, text)
        (ws / "recipes" / "x.rcp").write_bytes(text.encode())
        snapshot = base / "snapshot"
        shutil.rmtree(snapshot, ignore_errors=True)
        shutil.copytree(ws, snapshot, symlinks=True)
        r = _run(server, ws, args, True, shared)
        served = (r.returncode, r.stdout, r.stderr, files(ws))
        aside = base / "aside"
        shutil.rmtree(aside, ignore_errors=True)
        ws.rename(aside)
        snapshot.rename(ws)  # the same state at the same path, for the in-process run
        r = _run(server, ws, args, False, base / f"empty{i}")
        local = (r.returncode, r.stdout, r.stderr, files(ws))
        shutil.rmtree(ws)
        aside.rename(ws)
        assert served == local, (i, args, text)


SCHEMA = ('{"x-kubernetes-group-version-kind": [{"group": "ex.io", "version": "v1", "kind": "T"}], '
          '"type": "object", "properties": {"n": {"type": "number", "maximum": 1e3}}}\n')


def test_schemas_shared_by_bytes_are_read_as_their_own_format(tmp_path):
    """:class:`~rcpc.domain.kube_schema.SchemaIndex` shared structural schemas and
    validators by the files' bytes only (fixed: by format and bytes), but the same bytes are read as JSON
    from a ``.json`` file and as YAML from a ``.yaml`` one (``1e3``: the number 1000.0 in
    JSON, the string ``'1e3'`` in YAML 1.1). In one process (the language server, the
    Python API), the ``.yaml`` index is handed the ``.json`` index's schema."""
    (tmp_path / "s.json").write_text(SCHEMA)
    (tmp_path / "s.yaml").write_text(SCHEMA)
    made = dict(kube_schema._MADE)
    try:
        first = kube_schema.SchemaIndex([tmp_path / "s.json"])
        first.structural("ex.io/v1", "T")
        second = kube_schema.SchemaIndex([tmp_path / "s.yaml"])
        own = kube_schema._structural(second.schema("ex.io/v1", "T"))
        assert second.structural("ex.io/v1", "T") == own
    finally:
        kube_schema._MADE.clear()
        kube_schema._MADE.update(made)


def test_a_yaml_schema_with_a_string_bound_is_a_diagnostic_not_a_traceback(tmp_path):
    """(Was a traceback, on main too.) A YAML schema whose ``maximum`` is not a
    number (``1e3`` is a string in YAML 1.1) makes ``rcpc validate`` crash with jsonschema's
    TypeError instead of a located diagnostic."""
    (tmp_path / "s.yaml").write_text(SCHEMA)
    (tmp_path / "rcp.toml").write_text('recipe_dirs = ["recipes"]\noutput_dir = "rcpc-out"\nkube_schemas = ["s.yaml"]\n')
    (tmp_path / "recipes").mkdir()
    (tmp_path / "m.yaml").write_text("apiVersion: ex.io/v1\nkind: T\nmetadata:\n  name: m\nn: 5000\n")
    env = {**os.environ, "RCPC_NO_SERVER": "1", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    r = subprocess.run([RCPC, "validate", "m.yaml"], cwd=tmp_path, env=env, capture_output=True, timeout=300)
    err = r.stderr.decode()
    assert not TRACEBACK.search(err), err
    assert r.returncode == 1 and re.search(r"s\.yaml|m\.yaml:\d+:\d+", err), err


@settings(max_examples=3, deadline=None)
@given(st.integers(9, 24))
def test_schemas_made_for_their_bytes_are_not_kept_without_bound(tmp_path_factory, edits):
    """Every distinct content of a ``--kube-schema`` file adds its
    structural schemas and validators to a process-wide memo that is never trimmed. A
    long-lived process (the language server, rebuilding as a schema file is edited) grows
    by ~0.6 MB per edit of a JobSet-sized schema (100 edits: +60 MB RSS, measured);
    :func:`rcpc.domain.schema.load_schema` keeps at most 8 MaxText schemas, this should
    keep a bounded number too."""
    path = tmp_path_factory.mktemp("edits") / "s.json"
    made = dict(kube_schema._MADE)
    kube_schema._MADE.clear()
    try:
        for i in range(edits):
            path.write_text(SCHEMA + " " * i)  # the file edited: other bytes, the same schema
            kube_schema.SchemaIndex([path]).prepare()
        contents = {key[0] for key in kube_schema._MADE}
        assert len(contents) <= 8, f"{len(contents)} schema contents kept after {edits} edits"
    finally:
        kube_schema._MADE.clear()
        kube_schema._MADE.update(made)
