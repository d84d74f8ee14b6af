"""A fault in ``rcp.toml`` is reported at its own line (E0901), as every other diagnostic is
(DESIGN.md §6: file:line:col and a hint), whatever its kind: TOML that tomllib refuses (its
message names the place; Python 3.11's tomllib only in the text), a key rcpc does not know,
a value of the wrong type. A new user once got ``rcp.toml:1:1`` for a fault on line 4."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rcpc.core.diagnostics import CompileError
from rcpc.domain.workspace import Workspace

# Settings that are valid on their own (no directory needs to exist)
VALID = {
    "recipe_dirs": 'recipe_dirs = ["recipes"]',
    "library_dirs": "library_dirs = ['recipes/lib']",
    "output_dir": 'output_dir = "out"',
    "golden_dir": '"golden_dir" = "g"',
    "kube_schemas": 'kube_schemas = ["builtin:jobset"]',
}
FILLER = ["", "# a comment", "   # indented comment"]

# (fault line, key it sets or None, what the message says): each found on its own line
FAULTS = [
    ("oops", None, "not valid TOML"),
    ("output_dir = ", "output_dir", "not valid TOML"),
    ('golden_dir = "open', "golden_dir", "not valid TOML"),
    ("= 1", None, "not valid TOML"),
    ("recipe_dirs = 1 2", "recipe_dirs", "not valid TOML"),
    ('recipe_dir = ["recipes"]', None, "unknown key 'recipe_dir'"),
    ("'outputdir' = 'x'", None, "unknown key 'outputdir'"),
    ("output_dir = 3", "output_dir", "'output_dir' must be a string"),
    ('"golden_dir" = []', "golden_dir", "'golden_dir' must be a string"),
    ("kube_schemas = 'builtin:jobset'", "kube_schemas", "'kube_schemas' must be a list of strings"),
    ("recipe_dirs = [1]", "recipe_dirs", "'recipe_dirs' must be a list of strings"),
    ("[library_dirs]", "library_dirs", "'library_dirs' must be a list of strings"),
]


@st.composite
def configs(draw):
    """(rcp.toml text, 1-based line of the fault, expected message part)."""
    fault, key, says = draw(st.sampled_from(FAULTS))
    keys = draw(st.lists(st.sampled_from(sorted(k for k in VALID if k != key)), unique=True))
    lines = [VALID[k] for k in keys] + draw(st.lists(st.sampled_from(FILLER), max_size=4))
    lines = draw(st.permutations(lines))
    at = draw(st.integers(0, len(lines)))
    if fault.startswith("["):  # a table takes every key after it: it goes last
        at = len(lines)
    lines = lines[:at] + [fault] + lines[at:]
    return "\n".join(lines) + "\n", at + 1, says


@settings(max_examples=150, deadline=None)
@given(case=configs())
@example(case=('a = 1\nkube_schemas = [\n  "x",\n  oops\n]\n', 4, "not valid TOML"))  # the report
def test_a_fault_in_rcp_toml_is_reported_at_its_line(case, tmp_path_factory):
    text, line, says = case
    root = tmp_path_factory.mktemp("ws")
    (root / "rcp.toml").write_text(text)
    with pytest.raises(CompileError) as info:
        Workspace.find(root)
    d = info.value.diagnostics[0]
    assert d.code == "E0901" and says in d.message
    assert d.span.path == "rcp.toml" and d.span.line == line, (text, d.span)
    assert "(at line" not in d.message  # the place is in the span, not left in the text
    if "not valid TOML" in says:
        assert d.hint and "docs/cli.md" in d.hint


@pytest.mark.parametrize("text", ["x = [1,\n", "x = [1,", 'x = """open'])
def test_a_fault_at_the_end_of_rcp_toml_is_at_its_end(text, tmp_path):
    """tomllib finds these at the next line or at the end of the document (no line in its
    message): the place is where the text ends."""
    (tmp_path / "rcp.toml").write_text(text)
    with pytest.raises(tomllib.TOMLDecodeError):
        tomllib.loads(text)
    with pytest.raises(CompileError) as info:
        Workspace.find(tmp_path)
    span = info.value.diagnostics[0].span
    lines = text.split("\n")
    assert (span.line, span.col) in {(len(lines), len(lines[-1]) + 1), (len(lines), 1)}


def test_rcp_toml_that_is_not_utf8_is_located_at_the_byte(tmp_path):
    (tmp_path / "rcp.toml").write_bytes(b'output_dir = "out"\ngolden_dir = "\xff"\n')
    with pytest.raises(CompileError) as info:
        Workspace.find(tmp_path)
    d = info.value.diagnostics[0]
    assert d.code == "E0901" and "not UTF-8" in d.message and (d.span.line, d.span.col) == (2, 15)


LISTS = ("recipe_dirs", "library_dirs", "kube_schemas", "jobset_feature_gates")
STRINGS = ("output_dir", "golden_dir", "maxtext_schema", "maxtext_oracle", "maxtext_python")


def toml_text(value) -> str:
    """``value`` written as TOML with every string character but a few escaped as ``\\u``/``\\U``
    (independent of rcpc's writer)."""
    if isinstance(value, str):
        return '"' + "".join(c if c.isascii() and (c.isalnum() or c in " /:._-") else
                             f"\\u{ord(c):04X}" if ord(c) < 0x10000 else f"\\U{ord(c):08X}" for c in value) + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(map(toml_text, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"k{i} = {toml_text(v)}" for i, v in enumerate(value.values())) + "}"
    return repr(value)


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
SCALAR = st.one_of(TEXT, st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False),
                   st.booleans())
VALUE = st.one_of(SCALAR, st.lists(SCALAR, max_size=4), st.dictionaries(st.just("k"), SCALAR, max_size=1))


@settings(max_examples=150, deadline=None)
@given(key=st.sampled_from(LISTS + STRINGS), value=VALUE)
@example(key="kube_schemas", value="builtin:jobset")  # the report: the hint said ["recipes"]
@example(key="library_dirs", value="lib")
def test_a_value_of_the_wrong_type_gets_a_hint_of_its_own_value(key, value, tmp_path_factory):
    """The hint of a value of the wrong type is the line to write: TOML that gives the key the
    type asked for (a list of strings, or a string), holding the strings the user wrote (a
    new user got ``write kube_schemas = ["recipes"]`` for ``kube_schemas = "builtin:jobset"``)."""
    listed = key in LISTS
    if (listed and isinstance(value, list) and all(isinstance(v, str) for v in value)) or \
            (not listed and isinstance(value, str)):
        return  # the right type
    root = tmp_path_factory.mktemp("ws")
    (root / "rcp.toml").write_text(f"{key} = {toml_text(value)}\n")
    with pytest.raises(CompileError) as info:
        Workspace.find(root)
    d = info.value.diagnostics[0]
    assert d.code == "E0901" and d.hint.startswith(f"write {key} = "), d
    fixed = tomllib.loads(d.hint.removeprefix("write "))[key]
    given_strings = [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]
    if listed:
        assert isinstance(fixed, list) and all(isinstance(v, str) for v in fixed) and fixed
        assert all(s in fixed for s in given_strings)
    else:
        assert isinstance(fixed, str) and (not given_strings or fixed == given_strings[0])


@pytest.mark.parametrize("fault, key, says", FAULTS + [("kube_schemas = ['builtin:nope']", "kube_schemas",
                                                         "no built-in schema")])
def test_a_fault_in_rcp_toml_is_quoted_with_a_caret(fault, key, says, tmp_path, monkeypatch, capsys):
    """Every rcp.toml fault is shown as every other diagnostic is: its line quoted, a caret
    under it (a new user got only ``rcp.toml:3:1: error...`` and a help line: no compiler
    had read rcp.toml, the workspace failing to open)."""
    import re

    from rcpc.__main__ import run

    lines = ["# settings", "", fault]
    (tmp_path / "rcp.toml").write_text("\n".join(lines) + "\n")
    (tmp_path / "recipes").mkdir()
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert run(["check"]) == 1
    err = capsys.readouterr().err
    head = re.search(r"^rcp\.toml:(\d+):(\d+): error\[E\d{4}\]: .*" + re.escape(says), err, re.M)
    assert head, err
    line, col = int(head.group(1)), int(head.group(2))
    quoted = (lines + [""])[line - 1]
    assert re.search(rf"^ +{line} \| {re.escape(quoted)}\n +\| {' ' * (col - 1)}\^", err, re.M), err


def test_the_fault_is_quoted_from_the_bytes_parsed(tmp_path, monkeypatch, capsys):
    """rcp.toml is quoted from the bytes rcpc parsed, not read again (a file changed in between
    was quoted as another text: the line of a fault shown empty, or another line's text)."""
    import rcpc.core.files
    from rcpc.__main__ import run
    from rcpc.domain import workspace

    (tmp_path / "rcp.toml").write_text("# settings\n\nkube_schemas = 'builtin:jobset'\n")
    (tmp_path / "recipes").mkdir()
    monkeypatch.chdir(tmp_path)
    real, reads = workspace.read_limited, []

    def changing(path, limit):  # every read after the first gets other bytes
        reads.append(path)
        return real(path, limit) if len(reads) == 1 else b"a = 1\n"

    monkeypatch.setattr(workspace, "read_limited", changing)
    monkeypatch.setattr(rcpc.core.files, "read_limited", changing)
    capsys.readouterr()
    assert run(["check"]) == 1
    err = capsys.readouterr().err
    assert " 3 | kube_schemas = 'builtin:jobset'" in err, err
