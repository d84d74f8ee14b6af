"""Flag tokens keep their provenance through every string operation, or the operation is refused
(issue 35, kind 3): a string built from a flag set's ``.argv`` or ``.shell`` never silently
becomes plain text that contracts and MaxText checks cannot see into.

The property: any chain of string operations on a flag-carrying string gives Python's text,
and either every piece of the result still covers exactly its token's text, or the evaluation
stops with E0707 at the operation that would cut or rewrite a token.
"""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import Ws
from rcpc.core.diagnostics import CompileError
from rcpc.core.values import Str
from rcpc.domain.maxtext.emit import shell_quote, token

FLAGS = 'F = maxtext_flags({"steps": 10, "run_name": "a b", "tokenizer_path": "<path>"})\n'
FRAGMENTS = ["steps", "=", " ", "10", "a b", "'a b'", "<path>", "'<path>'", "run", "x", "", "steps=10 "]


@st.composite
def steps(draw):
    """One operation: (recipe expression of ``{}``, the same on a Python string)."""
    kind = draw(st.sampled_from(["replace", "split", "strip", "upper", "lower", "index", "fstring", "plus",
                                 "join", "str"]))
    if kind == "replace":
        old, new = draw(st.sampled_from(FRAGMENTS)), draw(st.sampled_from(FRAGMENTS))
        return f'{{}}.replace("{old}", "{new}")', lambda s: s.replace(old, new)
    if kind == "split":
        sep = draw(st.sampled_from([" ", "=", "x"]))
        return f'{{}}.split("{sep}")[0]', lambda s: s.split(sep)[0]
    if kind == "index":
        i = draw(st.integers(0, 3))
        return f"{{}}[{i}]", lambda s: s[i]
    return {"strip": ("{}.strip()", str.strip), "upper": ("{}.upper()", str.upper),
            "lower": ("{}.lower()", str.lower), "fstring": ('f"run {{{}}} end"', lambda s: f"run {s} end"),
            "plus": ('{} + " --x"', lambda s: s + " --x"),
            "join": ('" && ".join(["set -e", {}])', lambda s: " && ".join(["set -e", s])),
            "str": ("str({})", str)}[kind]


STARTS = ["F.shell", 'F.shell_raw(["tokenizer_path"])', '" ".join(F.argv)', "F.argv[1]"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.sampled_from(STARTS), chain=st.lists(steps(), min_size=1, max_size=4))
@example(start="F.shell", chain=[('{}.replace("<path>", "/tok")', lambda s: s.replace("<path>", "/tok"))])
@example(start="F.shell", chain=[('{}.replace("steps", "max_steps")', lambda s: s.replace("steps", "max_steps"))])
def test_string_operations_keep_tokens_whole_or_refuse(start, chain, tmp_path_factory):
    ws = Ws(tmp_path_factory.mktemp("prov"))
    lines = [FLAGS, f"X0 = {start}\n"]
    lines += [f"X{i + 1} = {template.format(f'X{i}')}\n" for i, (template, _) in enumerate(chain)]
    expected = ws.py(start, before=FLAGS)
    try:
        value = ws.value(f"X{len(chain)}", before="".join(lines))
    except CompileError as exc:
        assert {d.code for d in exc.diagnostics} <= {"E0707", "E0305"}, exc.diagnostics
        return
    for _, fn in chain:
        expected = fn(expected)
    assert isinstance(value, Str) and value.value == expected
    for a, b, origin in value.pieces:  # each piece still covers its whole token
        text = token(origin.key, origin.entry.value)
        assert value.value[a:b] in (text, shell_quote(text)), (value.value[a:b], text)


def test_a_replace_that_keeps_tokens_whole_keeps_the_contract_on_flag_keys(sws):
    """The reported port: ``.replace()`` on a rendered command (to keep a ``<placeholder>``
    unquoted) lost the flag set (a false E0611, and only a path contract, which let an
    undeclared ``steps`` change pass). Now the tokens survive and ``steps`` is named."""
    sws.write("recipes/r.rcp", '''\
        T = param(bool, default = False)
        F = maxtext_flags({"steps": 10, "run_name": "r"}, {"steps": 20} if T else {})
        CMD = f"cd <dir> && python3 -m maxtext.train base.yml {F.shell}".replace("<dir>", "/app")
        command_file(name = "launch", argv = ["bash", "-c", CMD])
        variant("default")
        variant("tuned", set = {"T": True}, against = "default", changes = {"launch": ["run_name"]})
        ''')
    compiler = sws.compiler()
    recipe, builds = compiler.build((sws.root / "recipes/r.rcp").resolve())
    diags = compiler.check_contracts(recipe, builds)
    assert [d.code for d in diags] == ["E0610", "E0612"]
    assert "launch.sh: effective value of steps changed but is not declared" in diags[0].notes
    assert "flag steps: 10 → 20" in diags[1].message


def test_a_replace_that_would_rewrite_a_token_is_refused_with_a_hint(sws):
    f = sws.fails('''\
        F = maxtext_flags({"tokenizer_path": "<path>"})
        command_file(name = "launch", argv = ["bash", "-c", F.shell.replace("'<path>'", "<path>")])
        ''')
    assert f.code == "E0707" and "tokenizer_path" in f.message
    assert "shell_raw" in f.text or "raw values" in f.diag.hint


def test_shell_raw_writes_the_value_as_the_shell_reads_it(sws):
    before = 'F = maxtext_flags({"tokenizer_path": "<path>", "run_name": "$RUN_ID", "steps": 3})\n'
    assert sws.py('F.shell_raw(["tokenizer_path", "run_name"])', before) == \
        "tokenizer_path=<path> run_name=$RUN_ID steps=3"
    assert sws.py("F.shell", before) == "tokenizer_path='<path>' run_name='$RUN_ID' steps=3"
    f = sws.fails(before + 'X = F.shell_raw(["steps"])\n')
    assert f.code == "E0656" and "not a string" in f.message
