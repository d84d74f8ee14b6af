"""Limits that bound time and memory (issue 12, item 9). Checked structurally, by counting
evaluations, suggestions, tokens and bytes read, never by timing; bench/limits.py shows the
curves (time and memory against input size, every shape up to its limit).

The reported inputs: 10,000 lines of ``Xi = Yi`` (209 s: a suggestion searched among every
name, for every unknown name), a 4 MB list literal (454 s, 2.8 GB) and 4 MB of blank lines
(4 GB: a backtracking record per repetition of a regex group), a 40-deep diamond of loads
(never finished: a failing file evaluated once per path), ``--maxtext-base /dev/zero``
(memory exhausted: unbounded reads).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from re import _parser as sre_parse  # the parser re compiles with (sre_parse before 3.11)
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import rcpc.core.diagnostics
import rcpc.core.evaluate
import rcpc.core.resolve
from rcpc.core import files
from rcpc.core.diagnostics import CompileError
from rcpc.core.limits import MAX_DEPTH, MAX_ERRORS, MAX_FILE_BYTES, MAX_LOAD_DEPTH, MAX_NODES, MAX_TOKENS
from rcpc.core.syntax.parser import GRAMMAR_PATH

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def runs(monkeypatch) -> list:
    """The files evaluated (Evaluator.run calls), in order."""
    calls: list = []
    real = rcpc.core.evaluate.Evaluator.run

    def counting(self, module):
        calls.append(module.path)
        assert len(calls) <= 1000, "evaluated more than 1000 times: exponential"  # fail, not hang
        return real(self, module)

    monkeypatch.setattr(rcpc.core.evaluate.Evaluator, "run", counting)
    return calls


def diamond(ws, depth: int, fail: bool) -> None:
    """Two files a level, each loading both files of the next level; the bottom ones fail."""
    for i in range(depth):
        for s in "ab":
            if i == depth - 1:
                body = 'V = 1 + "x"\n' if fail else "V = 1\n"
            else:
                body = (f'load("//recipes/lib/l{i + 1}a.rcp", A = "V")\n'
                        f'load("//recipes/lib/l{i + 1}b.rcp", B = "V")\nV = A + B\n')
            ws.write(f"recipes/lib/l{i}{s}.rcp", body)


@pytest.mark.parametrize("fail", [False, True], ids=["succeeding", "failing"])
def test_each_file_of_a_diamond_of_loads_is_evaluated_once(ws, runs, fail):
    """40 levels were 2**40 evaluations when the bottom failed; each file is evaluated once
    (a failure is kept, and reported once)."""
    diamond(ws, 40, fail)
    text = 'load("//recipes/lib/l0a.rcp", "V")\nflag_file(name = "f", flags = maxtext_flags({"v": V}))\n'
    if fail:
        f = ws.fails(text)
        assert [str(d.span) for d in f.diags] == ["recipes/lib/l39a.rcp:1:5", "recipes/lib/l39b.rcp:1:5"]
    else:
        assert ws.render(text, "f.flags") == f"v={2 ** 39}\n"
    assert len(runs) == len(set(runs)) == 2 * 40 - 1 + 1  # l0b is not loaded; the recipe is


def test_a_load_chain_is_at_most_max_load_depth_files(ws):
    for i in range(MAX_LOAD_DEPTH + 1):
        ws.write(f"recipes/lib/c{i}.rcp", f'load("c{i + 1}.rcp", "V")\n' if i < MAX_LOAD_DEPTH else "V = 1\n")
    f = ws.fails('load("//recipes/lib/c0.rcp", "V")\nX = V\n')
    assert f.code == "E0801" and f.where == f"recipes/lib/c{MAX_LOAD_DEPTH - 1}.rcp:1:6"
    ws.write(f"recipes/lib/c{MAX_LOAD_DEPTH - 1}.rcp", "V = 1\n")  # 64 files: fine
    assert ws.py("V", before='load("//recipes/lib/c0.rcp", "V")\n') == 1


def test_name_errors_stop_at_max_errors(ws, monkeypatch):
    """The reported case: n unknown names cost n suggestions among n names each."""
    calls = []
    real = rcpc.core.diagnostics.did_you_mean
    def counting(*a):
        calls.append(a)
        assert len(calls) <= MAX_ERRORS, "a suggestion for every unknown name: quadratic"
        return real(*a)

    monkeypatch.setattr(rcpc.core.resolve, "did_you_mean", counting)
    f = ws.fails("".join(f"X{i} = Y{i}\n" for i in range(10_000)))
    assert [d.code for d in f.diags] == ["E0101"] * MAX_ERRORS + ["E0808"]
    assert len(calls) == MAX_ERRORS and f.diags[-1].span.line == MAX_ERRORS + 1


def test_suggestions_compare_only_short_names(monkeypatch):
    long = "A" * 10_000
    assert rcpc.core.diagnostics.did_you_mean(long, [long + "B"]) is None
    assert rcpc.core.diagnostics.did_you_mean("TUNDE", ["TUNED", long]) == "did you mean 'TUNED'?"


def test_a_file_has_at_most_max_tokens_tokens(ws, monkeypatch):
    """A parse costs tens of microseconds a token, in whatever bytes: the count bounds it. A
    file over the limit is parsed once (no syntax-error recovery restarts)."""
    from rcpc.core.syntax import parser

    parses = []
    real = parser._parse_text
    monkeypatch.setattr(parser, "_parse_text", lambda *a: parses.append(1) or real(*a))
    f = ws.fails("X = [\n" + "    1,\n" * (MAX_TOKENS // 2) + "]\nY = (\n")
    # 3 tokens on line 1 (X = [: a line break is layout, not counted), 2 on each line after: the
    # one over the limit is the comma of line (MAX_TOKENS - 2) // 2 + 1
    assert [d.code for d in f.diags] == ["E0809"]
    assert (f.diag.span.line, f.diag.span.col) == ((MAX_TOKENS - 2) // 2 + 1, 6)
    assert len(parses) == 1
    parses.clear()
    fields = "{" + "+".join(["A"] * 1000) + "}"  # tokens inside f-string fields count too
    f = ws.fails('A = "a"\n' + "".join(f'X{i} = f"{fields}"\n' for i in range(MAX_TOKENS // 2000 + 1)))
    assert [d.code for d in f.diags] == ["E0809"]


def test_lexer_regexes_repeat_groups_possessively():
    """Python's re keeps a backtracking record per repetition of a group (4 MB of blank lines
    took 4 GB): every repeated group in a terminal of the grammar is possessive (or atomic)."""
    offenders = []

    def walk(tree, terminal):
        for op, arg in tree:
            if op in (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT):
                lo, hi, sub = arg
                group = any(o in (sre_parse.SUBPATTERN, sre_parse.BRANCH) for o, _ in sub) or len(sub) > 1
                if group and hi > 1:  # '?' on a group keeps no record per repetition
                    offenders.append(terminal)
                walk(sub, terminal)
            elif op == sre_parse.SUBPATTERN:
                walk(arg[-1], terminal)
            elif op == sre_parse.BRANCH:
                for alt in arg[1]:
                    walk(alt, terminal)
            elif op in (sre_parse.POSSESSIVE_REPEAT, sre_parse.ATOMIC_GROUP):
                walk(arg[-1], terminal)

    for line in GRAMMAR_PATH.read_text().splitlines():
        m = re.match(r"(\w+)(?:\.\d+)?: /(.*)/$", line)
        if m:
            walk(sre_parse.parse(m.group(2)), m.group(1))
    assert not offenders


@pytest.mark.parametrize("shape", ["\n", "\r\n", "\n  \t"])
def test_blank_lines_are_one_newline_token(shape):
    from rcpc.core.source import Source
    from rcpc.core.syntax.parser import parse

    module = parse(Source("r.rcp", "X = 1" + shape * 200_000 + "Y = 2\n"))
    assert [s.name for s in module.stmts] == ["X", "Y"]


# regexes applied to user text: linear backtracking, the same language as before ----------------
OLD_AMBIGUOUS_FLOAT = re.compile(r"[-+]?(?:[0-9][0-9_]*)?\.?[0-9_]*(?:[eE][-+]?[0-9]+)?\Z")
OLD_MAXTEXT_FLOAT = re.compile(r"^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\Z")


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from("0123456789._eE+-x"), max_size=12))
def test_rewritten_number_regexes_match_the_same_strings(text):
    """A YAML plain scalar made of 20,000 digits and an 'x' took 15 s (two ways to split the
    digits, for each of n positions). The rewritten patterns split them one way only."""
    from rcpc.core.emit import scalars
    from rcpc.domain.maxtext.flagset import _SPELLINGS

    new_float = re.compile(r"[-+]?(?:[0-9_]*|(?:[0-9][0-9_]*)?\.[0-9_]*)(?:[eE][-+]?[0-9]+)?\Z")
    assert bool(OLD_AMBIGUOUS_FLOAT.match(text)) == bool(new_float.match(text))
    assert new_float.pattern.replace(r"\Z", "") in scalars._AMBIGUOUS.pattern.replace(" ", "").replace("\n", "")
    assert bool(OLD_MAXTEXT_FLOAT.match(text)) == bool(_SPELLINGS["float"][0].match(text))


def test_a_long_digit_string_in_a_manifest_and_a_flag(ws):
    """The reported shapes of the backtracking, as values: rendered, not stuck."""
    long = "1" * 200_000 + "x"
    out = ws.render(f'manifest(name = "m", apiVersion = "v1", kind = "K", data = {{"v": "{long}"}})\n', "m.yaml")
    assert long in out


# reads -----------------------------------------------------------------------------------------
def test_read_limited_refuses_devices_fifos_and_large_files(tmp_path, monkeypatch):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in ("/dev/zero", fifo, tmp_path):
        with pytest.raises(files.NotRegular):
            files.read_limited(path, 10)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 1000)
    read = []
    real = os.read

    def counting(fd, n):
        data = real(fd, n)
        read.append(len(data))
        return data

    monkeypatch.setattr(files.os, "read", counting)
    with pytest.raises(files.TooLarge) as info:
        files.read_limited(big, 999)
    assert info.value.size == 1000 and not read  # the size alone says so
    assert files.read_limited(big, 1000) == b"x" * 1000 and sum(read) <= 1001


def run_rcpc(cwd: Path, *args, timeout=60):
    return subprocess.run([sys.executable, "-m", "rcpc", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "RCPC_NO_CACHE": "1"})


def make_bad(target: Path, what: str, limit: int) -> None:
    """Replace ``target`` with a link to /dev/zero, a FIFO, or a sparse file one byte over
    ``limit`` (nothing of it is read)."""
    target.unlink(missing_ok=True)
    if what == "/dev/zero":
        target.symlink_to("/dev/zero")
    elif what == "fifo":
        os.mkfifo(target)
    else:
        with open(target, "wb") as f:
            f.truncate(limit + 1)


FLAGS_AND_MANIFEST = ('F = maxtext_flags({"steps": 1})\nflag_file(name = "f", flags = F)\n'
                      'manifest(name = "m", apiVersion = "v1", kind = "K")\n')


@pytest.mark.parametrize("where", ["maxtext-base", "kube-schema", "rcp.toml", "load", "output"])
@pytest.mark.parametrize("what", ["/dev/zero", "fifo", "too large"])
def test_every_input_is_read_bounded(ws, where, what):
    """``--maxtext-base /dev/zero`` exhausted memory; a FIFO named as an input hung. Each input
    that is a device, a FIFO or over its limit is an error (exit 1, no traceback), or for an
    output file to compare, a rewrite."""
    ws.write("recipes/r.rcp", FLAGS_AND_MANIFEST + 'load("//recipes/lib/x.rcp", "X")\n')
    ws.write("recipes/lib/x.rcp", "X = 1\n")
    target = {"maxtext-base": ws.root / "base.yml", "kube-schema": ws.root / "crd.yaml",
              "rcp.toml": ws.root / "rcp.toml", "load": ws.root / "recipes" / "lib" / "x.rcp",
              "output": ws.root / "rcpc-out" / "r" / "default" / "f.flags"}[where]
    args = {"maxtext-base": ["--maxtext-base", "base.yml"], "kube-schema": ["--kube-schema", "crd.yaml"]}.get(where, [])
    if where == "output":
        assert run_rcpc(ws.root, "build").returncode == 0
    make_bad(target, what, MAX_FILE_BYTES if where in ("rcp.toml", "load", "output") else 16 << 20)
    r = run_rcpc(ws.root, "build", *args)
    assert "Traceback" not in r.stderr
    if where == "output" and what == "too large":  # a file of its output edited: rcpc's, rewritten
        assert r.returncode == 0 and (target.read_text() == "steps=1\n")
    elif where == "output":  # a device or FIFO put in its output: not rcpc's, refused, left alone
        assert r.returncode == 1 and "error[E0911]" in r.stderr, r.stderr
        assert target.is_symlink() if what == "/dev/zero" else stat.S_ISFIFO(target.lstat().st_mode)
    else:
        # E0906: /dev/zero through a symlink is outside the workspace; E0201: a FIFO is no file to load
        assert r.returncode == 1 and re.search(r"error\[E0(320|803|901|201|906)\]|error\[E1102\]", r.stderr), r.stderr


# Every file a command takes as an argument, or reads beside one: (argv, the file made bad).
FILE_ARGUMENTS = {
    "validate": (["validate", "k8s.yaml"], "k8s.yaml"),
    "schema jobset": (["schema", "jobset", "crd.yaml"], "crd.yaml"),
    "schema maxtext types.py": (["schema", "maxtext", "mt"], "mt/types.py"),
    "schema maxtext models": (["schema", "maxtext", "mt"], "mt/models/m.yml"),
    "schema maxtext base.yml": (["schema", "maxtext", "mt"], "mt/base.yml"),
    "build --maxtext-schema types.py": (["build", "--maxtext-schema", "mt/base.yml"], "mt/types.py"),
    "build --maxtext-schema x.json": (["build", "--maxtext-schema", "mt/x.json"], "mt/x.json"),
}


@pytest.mark.parametrize("command", sorted(FILE_ARGUMENTS))
@pytest.mark.parametrize("what", ["/dev/zero", "fifo", "too large"])
def test_every_file_argument_is_read_bounded(ws, command, what):
    """``rcpc validate /dev/zero`` and ``rcpc schema jobset /dev/zero`` exhausted memory, a
    FIFO hung them, and a ``types.py`` that was a device beside a base.yml was silently
    taken as missing (a weaker schema). Every file a command reads, named or found beside
    one, is a located error (exit 1, no traceback) when it is a device, a FIFO or over its
    limit."""
    ws.write("recipes/r.rcp", FLAGS_AND_MANIFEST)
    (ws.root / "mt" / "models").mkdir(parents=True)
    (ws.root / "mt" / "base.yml").write_text("steps: 1\n")
    (ws.root / "mt" / "types.py").write_text("from pydantic import BaseModel\nclass MaxTextConfig(BaseModel):\n"
                                             "    steps: int = 1\n")
    (ws.root / "mt" / "models" / "m.yml").write_text("steps: 2\n")
    argv, rel = FILE_ARGUMENTS[command]
    target = ws.root / rel
    make_bad(target, what, 16 << 20)
    r = run_rcpc(ws.root, *argv, timeout=120)
    assert "Traceback" not in r.stderr
    assert r.returncode == 1 and re.search(r"error\[E(0320|0321|1102|1103)\]", r.stderr), r.stderr
    assert re.search("not a regular file|over the limit", r.stderr), r.stderr


def test_renders_of_one_recipe_weigh_at_most_max_nodes(ws, monkeypatch):
    """A 150-byte recipe rendering a 100,000-item value 200 times took 130 s and 540 MB: each
    value is bounded, so the renders of a recipe are, in all."""
    from rcpc.core import record
    from rcpc.domain import renders
    from rcpc.domain.values import Manifest

    emitted = []
    real = renders.MANIFEST.emit
    monkeypatch.setitem(renders._BY_TYPE, Manifest,
                        record.evolve(renders.MANIFEST, emit=lambda v, session: emitted.append(v) or real(v, session)))
    f = ws.fails('B = [i for i in range(100000)]\n[manifest(name = f"m{i}", apiVersion = "v1", kind = "K", '
                 'data = {"x": B}) for i in range(200)]\n')
    assert f.code == "E0802" and "renders of this recipe" in f.message
    assert len(emitted) == MAX_NODES // 100_000 - 1


# YAML aliases ---------------------------------------------------------------------------------
def _alias_bomb(fan: int, depth: int) -> tuple[str, int]:
    """Mapping lines ``a0: &a0 [...]``, ``aI: &aI [*aI-1 x fan]`` and the number of values
    they expand to (keys not counted)."""
    lines = ["a0: &a0 [" + ", ".join(['"lol"'] * fan) + "]"]
    weight = total = 1 + fan
    for i in range(1, depth + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]")
        weight = 1 + fan * weight
        total += weight
    return "\n".join(lines) + "\n", total


def _read_as(reader: str, path: Path):
    from rcpc.domain.kube.crd import derive_schema
    from rcpc.domain.kube.schema import SchemaIndex
    from rcpc.domain.kube.manifests import load_manifests
    from rcpc.domain.maxtext.schemagen import read_yaml

    return {"validate": lambda: load_manifests(path, path.name), "schema jobset": lambda: derive_schema(path, "x"),
            "kube_schemas": lambda: SchemaIndex([path]), "maxtext base.yml": lambda: read_yaml(path, path.name)}[reader]()


@pytest.mark.parametrize("reader", ["validate", "schema jobset", "kube_schemas", "maxtext base.yml"])
@settings(max_examples=25, deadline=None)
@given(fan=st.integers(1, 12), depth=st.integers(0, 9))
@example(fan=9, depth=8)  # the reported billion laughs: 800 bytes, rcpc validate ran past 120 s
def test_yaml_aliases_expand_within_a_bound(tmp_path_factory, reader, fan, depth):
    """``rcpc validate`` of an 800-byte file of nine aliases of nine aliases ... ran for
    minutes; a CRD or base.yml of that shape would have been walked as well. Every YAML
    reader refuses a document that expands to more values than one a byte of the file plus
    100,000 (counted without expanding anything), and reads the others."""
    _read_within_the_bound(tmp_path_factory, reader, *_alias_bomb(fan, depth))


def _read_within_the_bound(tmp_path_factory, reader: str, bomb: str, expanded: int) -> None:
    """Read a ConfigMap of ``bomb`` (YAML lines that expand to ``expanded`` values) as
    ``reader``: refused ("expands to more than") exactly when it crosses the bound."""
    from rcpc.core.files import yaml_node_limit

    text = "apiVersion: v1\nkind: ConfigMap\n" + bomb
    expanded += 3  # the document, apiVersion, kind
    limit = yaml_node_limit(len(text))
    assume(expanded <= 20_000 or expanded > limit)  # a build of 100,000 values takes seconds
    path = tmp_path_factory.mktemp("yaml") / "x.yaml"
    path.write_text(text)
    try:
        _read_as(reader, path)
        message = ""
    except CompileError as exc:
        message = exc.diagnostics[0].message
    assert ("expands to more than" in message) == (expanded > limit), (expanded, limit, message)


def test_expanded_size_counts_shared_parts_each_time():
    shared = [1, 2]
    assert files.expanded_size([shared, shared, [shared]], 100) == 11
    assert files.expanded_size(yaml.safe_load("a: &a [1, *a]"), 100) == 101  # a cycle is endless
    deep: list = []
    cur = deep
    for _ in range(100_000):  # deeper than the stack: iterative
        cur.append([])
        cur = cur[0]
    assert files.expanded_size(deep, 10 ** 6) == 100_001


def _merge_bomb(fan: int, depth: int, keys: int = 3) -> tuple[str, int]:
    """Mapping lines ``m0: &m0 {k0: 0, ...}``, ``mI: &mI {<<: [*mI-1 x fan], zI: I}`` and the
    number of values they expand to, a merge key's value counted like any other value (keys
    not counted). PyYAML copies every merged mapping's pairs into the merging one, so building
    ``mI`` copies ``fan`` times the pairs of ``mI-1``: that many pairs for a dict of
    ``keys + I`` keys."""
    lines = ["m0: &m0 {" + ", ".join(f"k{j}: {j}" for j in range(keys)) + "}"]
    weight = total = 1 + keys
    for i in range(1, depth + 1):
        lines.append(f"m{i}: &m{i} {{<<: [" + ", ".join([f"*m{i - 1}"] * fan) + f"], z{i}: {i}}}")
        weight = 1 + (1 + fan * weight) + 1  # the mapping, the merge list and its aliases, zI
        total += weight
    return "\n".join(lines) + "\n", total


@pytest.mark.parametrize("reader", ["validate", "schema jobset", "kube_schemas", "maxtext base.yml"])
@settings(max_examples=25, deadline=None)
@given(fan=st.integers(1, 6), depth=st.integers(0, 6))
@example(fan=6, depth=6)  # the shape of the report: `<<: [*m0 x 100,000]` of a 20,000-key &m0, past 60 s
def test_yaml_merge_keys_expand_within_a_bound(tmp_path_factory, reader, fan, depth):
    """A ``--kube-schema``, ``--maxtext-schema`` base.yml or ``rcpc schema jobset`` CRD of
    ``<<: [*m, *m, ...]`` merges was weighed only once built, and PyYAML builds a merge by
    copying the merged pairs (a 660 kB file ran past 60 s, growing): the dict it ends with is
    small, so it passed the bound after minutes. Every YAML reader weighs the composed
    document, a merge key's aliases counted each time, before building it, as aliases."""
    _read_within_the_bound(tmp_path_factory, reader, *_merge_bomb(fan, depth))



# YAML's structural characters, spaces and letters: no "&", so no anchor
_UNANCHORED = "-?:[]{},#|>!*<'\" \n\tab."


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet=_UNANCHORED, max_size=24))
@example(text="-")  # a list and its null item: two nodes from one character
@example(text="?")  # a mapping and its null value
def test_a_yaml_text_without_anchors_is_read_without_weighing(text):
    """``load_yaml_bounded`` weighed every document in Python before building it, most of
    the cost of reading a 16 kB manifest with libyaml (the golden summary reads eight after a
    flag edit). A text without ``&`` shares no node, so it has at most two nodes a
    character and is read unweighed when that is within the limit, with the same result;
    the property checks the bound the skip relies on, over YAML's structural characters."""
    try:
        nodes = [n for n in yaml.compose_all(text, Loader=yaml.SafeLoader) if n is not None]
        expected = list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        assume(False)
    assert sum(files.expanded_size(n, 10 ** 6, files.yaml_node_children) for n in nodes) <= 2 * len(text) + 1
    with pytest.MonkeyPatch.context() as m:
        m.setattr(files, "expanded_size", lambda *a: pytest.fail("weighed"))
        assert files.load_yaml_bounded(text, yaml.SafeLoader, 2 * len(text) + 1) == expected


def test_a_yaml_text_with_an_anchor_is_weighed(monkeypatch):
    """The skip is only for texts without ``&``, and within half the limit: an anchor (even
    one that is never used) or a text over half the limit is weighed as before."""
    weighed = []
    real = files.expanded_size
    monkeypatch.setattr(files, "expanded_size", lambda *a: weighed.append(1) or real(*a))
    assert files.load_yaml_bounded("a: &x [1]\nb: *x\n", yaml.SafeLoader, 100) == [{"a": [1], "b": [1]}]
    assert files.load_yaml_bounded("a: 1\n", yaml.SafeLoader, 10) == [{"a": 1}]  # 2 * 5 + 1 > 10
    assert files.load_yaml_bounded("a: 1\n", yaml.SafeLoader, 11) == [{"a": 1}]
    assert len(weighed) == 2


@st.composite
def _shared_lists(draw):
    """A document of lists sharing parts (as YAML aliases share their anchor's value): node i
    holds nodes j < i, any of them any number of times; the document is the last node."""
    nodes: list = []
    for _ in range(draw(st.integers(1, 8))):
        picks = draw(st.lists(st.integers(0, len(nodes) - 1), max_size=12)) if nodes else []
        nodes.append([nodes[j] for j in picks] + ["leaf"])
    return nodes[-1]


@settings(max_examples=200, deadline=None)
@given(doc=_shared_lists())
@example(doc=[list(range(2000))] * 2000)  # `[*a x N]` of a big `&a`: listed N times, quadratic (hours)
def test_expanded_size_lists_each_distinct_node_once(doc):
    """``expanded_size`` listed a shared node's children at every use before finding it
    weighed, so ``[*a, *a, ...]`` of a big ``&a`` cost uses x size (``rcpc validate`` of
    ``<<: [*m x 50,000]`` with a 2,000-key ``&m``: 17 s; a 1 MB ``--kube-schema``: past 60 s).
    It lists each distinct node's children once, whatever the sharing."""
    listed: list = []  # the lists whose children were asked for (a scalar's are None: cheap)

    def children(node):
        if isinstance(node, list):
            listed.append(id(node))
        return files._children(node)

    files.expanded_size(doc, 10 ** 9, children)
    assert len(listed) == len(set(listed))


def _nested(depth: int, leaf: str = '"x"') -> str:
    """JSON (and so YAML flow) text of ``depth`` mappings ``{"a": ...}`` around ``leaf``."""
    return '{"a": ' * depth + leaf + "}" * depth


@settings(max_examples=40, deadline=None)
@given(depth=st.integers(1, 995))
@example(depth=600)  # a RecursionError in rcpc validate and rcpc import manifest (the checks' walk)
@example(depth=990)
@example(depth=MAX_DEPTH - 1)
@example(depth=MAX_DEPTH)
def test_a_manifest_nests_at_most_max_depth_levels(tmp_path_factory, depth):
    """libyaml reads 1,000 levels and the Kubernetes checks walk a manifest recursively: a
    ConfigMap nested 600 deep was rcpc's bare 'too deeply nested (RecursionError)', with no
    file named. A manifest nests at most as deep as a recipe's value (MAX_DEPTH levels, the
    document being level 1); deeper is E1103 at the node that crossed it."""
    from rcpc.api import Workspace

    root = tmp_path_factory.mktemp("ws")
    path = root / "m.yaml"  # the document (level 1), then spec's `depth` mappings: 1 + depth levels
    path.write_text('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "spec": '
                    + _nested(depth) + "}\n")
    try:
        _, diags = Workspace(root).validate([path])
    except CompileError as exc:
        diags = exc.diagnostics
    deep = [d for d in diags if "nests more than" in d.message]
    assert bool(deep) == (1 + depth > MAX_DEPTH), (depth, [d.message for d in diags][:3])
    assert all(d.code == "E1103" and d.span.line == 1 for d in deep)


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(1, 5000), array=st.booleans())
@example(depth=100_000, array=True)  # `[[[...` : the bare catch-all, no file named
@example(depth=1000, array=False)
def test_a_deep_json_kube_schema_is_e1102(tmp_path_factory, depth, array):
    """A ``--kube-schema`` .json nested past what ``json.loads`` recurses into is E1102 at
    the file, as any unreadable schema; a shallower one reads (and holds no schema)."""
    from rcpc.domain.kube.schema import SchemaIndex

    path = tmp_path_factory.mktemp("schema") / "s.json"
    path.write_text("[" * depth + "]" * depth if array else _nested(depth, "1"))
    with pytest.raises(CompileError) as caught:
        SchemaIndex([path])
    (diag,) = caught.value.diagnostics
    assert diag.code == "E1102" and str(path) in diag.message


@settings(max_examples=20, deadline=None)
@given(depth=st.integers(1, 490))
@example(depth=480)  # 960 YAML levels: rcpc schema jobset's walk was a RecursionError
def test_a_deep_crd_derives_or_is_e1102(tmp_path_factory, depth):
    """``rcpc schema jobset`` of a CRD whose openAPIV3Schema nests deeper than Python
    recurses is E1102 naming the file, never rcpc's bare RecursionError catch-all."""
    from rcpc.domain.kube.crd import derive_schema

    schema = '{"type": "string"}'
    for _ in range(depth):
        schema = '{"type": "object", "properties": {"a": ' + schema + "}}"
    path = tmp_path_factory.mktemp("crd") / "crd.yaml"
    path.write_text('{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "spec": '
                    '{"group": "ex.com", "names": {"kind": "Foo"}, "versions": [{"name": "v1", "served": true, '
                    '"storage": true, "schema": {"openAPIV3Schema": ' + schema + "}}]}}\n")
    try:
        with _cli_recursion_limit():
            text = derive_schema(path, "x")
    except CompileError as exc:
        (diag,) = exc.diagnostics
        assert diag.code == "E1102" and str(path) in diag.message
    else:
        assert '"Foo"' in text


@contextlib.contextmanager
def _cli_recursion_limit():
    """Python's default recursion limit, the CLI's (Hypothesis raises it while a test runs)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def _rcp_toml_fault(tmp_path_factory, text: str):
    """The E0901 diagnostic of an rcp.toml of ``text`` (None when it reads)."""
    from rcpc.domain.workspace import Workspace as Config

    root = tmp_path_factory.mktemp("ws")
    (root / "rcp.toml").write_text(text)
    try:
        with _cli_recursion_limit():
            Config.find(root)
    except CompileError as exc:
        (diag,) = exc.diagnostics
        assert diag.code == "E0901" and diag.span is not None, diag
        return diag
    return None


@settings(max_examples=30, deadline=None)
@given(parts=st.integers(1, 2500), shape=st.sampled_from(["pair", "table", "inline"]))
@example(parts=20_000, shape="pair")  # tomllib: 8 s (quadratic; 200,000 parts, a 400 kB file: past 60 s)
def test_rcp_toml_dotted_keys_are_bounded(tmp_path_factory, parts, shape):
    """Python's tomllib takes time quadratic in the parts of a dotted key; rcp.toml's keys
    are top-level names, so its dotted keys and table headers hold at most MAX_KEY_DOTS dots
    (E0901 at the key that crosses it); below that, the key is unknown (E0901 too)."""
    from rcpc.domain.workspace import MAX_KEY_DOTS

    key = ".".join(["x"] * parts)
    text = {"pair": f"{key} = 1\n", "table": f"[{key}]\n", "inline": f"t = {{{key} = 1}}\n"}[shape]
    diag = _rcp_toml_fault(tmp_path_factory, text)
    assert ("more than" in diag.message) == (parts - 1 > MAX_KEY_DOTS), diag.message


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(1, 3000), table=st.booleans())
@example(depth=100_000, table=False)  # rcpc's bare 'too deeply nested (RecursionError)', no file named
@example(depth=500, table=True)
def test_rcp_toml_nesting_is_e0901(tmp_path_factory, depth, table):
    """tomllib recurses into arrays and inline tables: an rcp.toml nesting them past the
    stack is E0901 at rcp.toml, as any TOML it cannot read; shallower, a value of the wrong
    type (E0901 too)."""
    value = "{a = " * depth + "1" + "}" * depth if table else "[" * depth + "]" * depth
    diag = _rcp_toml_fault(tmp_path_factory, f"recipe_dirs = {value}\n")
    if value == "[]":
        assert diag is None  # an empty list of recipe directories
    else:
        assert diag.message.startswith("rcp.toml"), diag.message


# limits applied before the work (issue 37, kind 7) --------------------------------------------
def _chain(root: Path, n: int) -> None:
    """A recipe loading a chain of ``n`` libraries, each loading the next."""
    (root / "recipes" / "lib").mkdir(parents=True, exist_ok=True)
    (root / "rcp.toml").write_text('recipe_dirs = ["recipes"]\nlibrary_dirs = ["recipes/lib"]\n')
    for i in range(n):
        body = f'load("//recipes/lib/l{i + 1}.rcp", "X")\n' if i + 1 < n else "X = 1\n"
        (root / "recipes" / "lib" / f"l{i}.rcp").write_text(body)
    (root / "recipes" / "r.rcp").write_text('load("//recipes/lib/l0.rcp", "X")\n'
                                            'flag_file(name = "f", flags = maxtext_flags({"steps": X}))\n')


@settings(max_examples=8, deadline=None)
@given(n=st.integers(MAX_LOAD_DEPTH + 1, 400))
@example(n=3000)  # the reported chain: 2,935 errors, 24.6 MB of stderr, 207 times a trivial check
def test_a_long_load_chain_is_one_error_found_before_evaluation(n, tmp_path_factory):
    """``rcpc check`` of a workspace whose libraries are one chain longer than the limit: one
    E0801 (every library above the crossing is a root of the same chain), each file parsed once,
    and only the files under the limit evaluated."""
    from rcpc import api
    from rcpc.core.syntax import parser

    root = tmp_path_factory.mktemp("chain")
    _chain(root, n)
    parsed, evaluated = [], []
    real_parse, real_run = parser.parse, rcpc.core.evaluate.Evaluator.run
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(parser, "parse", lambda source, *a, **k: parsed.append(source.path) or real_parse(source, *a, **k))
        mp.setattr(rcpc.core.evaluate.Evaluator, "run",
                   lambda self, module: evaluated.append(module.path) or real_run(self, module))
        mp.setenv("RCPC_NO_CACHE", "1")
        result = api.Workspace(root).check()
    errors = [d for d in result.failures if d.severity == "error"]
    assert [d.code for d in errors] == ["E0801"]
    assert str(errors[0].span) == f"recipes/lib/l{n - 2}.rcp:1:6" and f"{n} files from" in errors[0].message
    assert len(parsed) == len(set(parsed)) == n + 1
    assert len(evaluated) <= MAX_LOAD_DEPTH + 1


def test_scanning_stops_at_the_token_limit(monkeypatch):
    """A text of many times the token limit is scanned to about the limit, not to its end
    (the reported 3.98 MB list literal took 665 MB before E0809)."""
    from rcpc.core.syntax import lexer, parser, postlex
    from rcpc.core.source import Source

    scanned = []

    class Counting:
        def finditer(self, text):
            for m in lexer.SCANNER_REAL.finditer(text):
                scanned.append(1)
                yield m

    monkeypatch.setattr(lexer, "SCANNER_REAL", lexer.SCANNER, raising=False)
    monkeypatch.setattr(lexer, "SCANNER", Counting())
    for limit, times in ((5_000, 3), (5_000, 30), (MAX_TOKENS, 13)):  # the last: the reported size
        monkeypatch.setattr(postlex, "MAX_TOKENS", limit)
        scanned.clear()
        with pytest.raises(CompileError) as exc:
            parser.parse(Source("t.rcp", "X = [" + "1, " * (limit * times // 2) + "]\n"))
        assert [d.code for d in exc.value.diagnostics] == ["E0809"]
        assert len(scanned) <= limit + lexer._CHECK_EVERY + 1
