"""The importer's shell parser always ends (:mod:`rcpc.importer.bash`): bashlex loops forever
on some words bash accepts (a single-quoted ``${`` right after an escape), growing memory
until the machine kills the process; this once took a test run to 23 GB. Parsing is bounded
by a budget of calls proportional to the text, refused as E1201 at the word (``rcpc import
shell``) or kept as text with W1200 (a manifest's startup command)."""

from __future__ import annotations

import gc
import sys
from contextlib import contextmanager
from pathlib import Path

import bashlex
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rcpc.core.diagnostics import CompileError
from rcpc.domain.workspace import Workspace
from rcpc.importer import bash
from rcpc.importer.driver import import_manifest, import_shell

REPO = Path(__file__).resolve().parent.parent
XPK = sorted((REPO.parent / "shared" / "data" / "tpu-recipes" / "xpk").glob("*.sh"))
STUCK_WORDS = ["\\\"'${b'", "\\\\'${b'", "a\\\"'b=${b?'"]
# After a stuck word, a $'...' string: bash.masked does not follow it, so bashlex reads the
# text as written (the single-quoted ${ masked, the words above parse: test below)
UNMASKED = " $'q'"
# the word of the hypothesis example that grew the test process to 23 GB
REPORTED = ('export A="a1"\nexport B="b2"\n'
            "xpk ${B}\\\\${B}'$' =_ \\'${B}\\\"'b=${b?' '?'X09/aa'\\*?\\{-',%\n")


# word expansions restarted (bashlex.subst._paramexpand calls, where the stuck words loop) one
# parse may make under guard()
RESTARTS = 100_000


class Unbounded(BaseException):
    """A parse went past :func:`guard`'s step budget. Not an ``Exception``: no ``except
    Exception`` on the parse's way (bash.parse's retry, a test's own) takes it for bashlex's."""


@contextmanager
def guard(restarts: int = RESTARTS):
    """A parse that does not end fails the test instead of hanging the run: bashlex's word
    expansion restarts are counted and the one past ``restarts`` raises :class:`Unbounded`. A
    step budget, not wall time (an alarm of 120 s once fired on a loaded machine): the same
    verdict at any load. The stuck parses above end well within it (rcpc's own call budget)."""
    count = 0
    expand = bashlex.subst._paramexpand

    def counting(*args, **kwargs):
        nonlocal count
        count += 1
        if count > restarts:
            raise Unbounded(f"past {restarts} word expansion restarts: the parse was not stopped at its budget")
        return expand(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bashlex.subst, "_paramexpand", counting)
        yield


def test_the_guard_stops_a_parse_past_its_step_budget():
    """The canary of :func:`guard`: a stuck word restarts its expansion more than 10 times."""
    with pytest.raises(Unbounded):
        with guard(10):
            bash.parse(f"xpk {STUCK_WORDS[0]}{UNMASKED}\n")


def calls(text: str) -> int:
    """How many Python calls bashlex makes parsing ``text``."""
    n = 0

    def count(frame, event, arg):
        nonlocal n
        n += 1

    sys.settrace(count)
    try:
        bashlex.parse(text)
    finally:
        sys.settrace(None)
    return n


def test_the_budget_is_ten_times_what_real_recipes_take():
    assert len(XPK) == 15
    for path in XPK:
        text = path.read_text()
        assert calls(text) * 10 <= bash.budget(text), path.name
        assert bash.parse(text) == bashlex.parse(text)  # the same nodes (bashlex's node equality)


@pytest.mark.parametrize("depth", [1, 4, 20, 50])  # docs/migrate.md: about 50 levels
def test_nested_command_substitutions_within_the_documented_depth_parse(depth):
    text = "a " + "$(b " * depth + "c" + ")" * depth + "\n"
    assert len(bash.parse(text)) == 1


PIECES = ["a", "b", "$", "{", "}", "${b", "${b}", "'", '"', "\\", '\\"', "\\\\", "?", " ", "=", "-", "$("]


@settings(max_examples=60, deadline=None)
@given(words=st.lists(st.lists(st.sampled_from(PIECES), min_size=1, max_size=8).map("".join), min_size=1, max_size=3))
@example(words=[STUCK_WORDS[0]])
# bashlex's own "unexpected EOF" for this one gives the length of a text parsed before in the
# process (its EOF token keeps the last lexer that set it): not a place; rcpc.importer.shell
# reports an early end at the text's end
@example(words=["\\"])
def test_any_word_parses_or_fails_located_and_the_parse_ends(words):
    text = "xpk " + " ".join(words) + "\n"
    with guard():
        try:
            bash.parse(text)
        except bashlex.errors.ParsingError as exc:
            if exc.message == bash.STUCK:  # the bound's own position: a word of the text
                assert 0 <= exc.position < len(text) and text[exc.position] not in " \n"
        except Exception:  # bashlex's other errors (NotImplementedError, its tokenizer's): refused, as before
            pass


@pytest.mark.parametrize("word", STUCK_WORDS)
def test_a_word_bashlex_loops_on_is_e1201_at_the_word(word, tmp_path):
    src = tmp_path / "launch.sh"
    src.write_text(f"export A=1\nxpk {word} --x{UNMASKED}\n")
    with guard(), pytest.raises(CompileError) as info:
        import_shell(Workspace.find(REPO), src, "launch.sh")
    d = info.value.diagnostics[0]
    assert d.code == "E1201" and d.message.endswith(bash.STUCK)
    assert (d.span.line, d.span.col) == (2, 5) and "bashlex loops" in d.hint


def test_the_reported_script_is_refused_in_bounded_time(tmp_path):
    src = tmp_path / "w.sh"
    src.write_text(REPORTED.rstrip("\n") + UNMASKED + "\n")
    with guard(), pytest.raises(CompileError) as info:
        import_shell(Workspace.find(REPO), src, "w.sh")
    assert info.value.diagnostics[0].message.endswith(bash.STUCK)
    assert info.value.diagnostics[0].span.line == 3


@pytest.mark.parametrize("word", STUCK_WORDS + ["0='`'", "a'x`'", "b='$(x'", "c'<(a'", "d'~$(`'"])
def test_words_bashlex_misreads_inside_single_quotes_parse_at_their_offsets(word):
    """bashlex reads single quotes that do not start a word as unquoted (it loops, or raises a
    TypeError or an unterminated quote); bash reads their text literally. bash.parse reads
    them masked (bash.masked): the same words at the same offsets."""
    text = f"export A=1 # it's\nxpk {word} --x\n"
    with guard():
        nodes = bash.parse(text)
    assert [text[w.pos[0]:w.pos[1]] for w in nodes[-1].parts] == ["xpk", word, "--x"]
    assert len(bash.masked(text)) == len(text)


def test_a_manifest_startup_command_bashlex_loops_on_is_kept_as_text(tmp_path):
    """``rcpc import manifest``: the container's ``bash -c`` text is split with the same
    parser; one it does not finish is kept whole, with W1200, and the import goes on."""
    cmd = f"python3 -m MaxText.train MaxText/configs/base.yml steps=1 && echo {STUCK_WORDS[1]}{UNMASKED}"
    src = tmp_path / "job.yaml"
    src.write_text(
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: j\nspec:\n  replicatedJobs:\n"
        "  - name: w\n    template:\n      spec:\n        template:\n          spec:\n            containers:\n"
        "            - name: c\n              image: i\n              command: [bash, -c, " + repr(cmd) + "]\n"
        "            restartPolicy: Never\n")
    with guard():
        imported = import_manifest(Workspace.find(REPO), src, "job.yaml", {}, None)
    assert any(n.code == "W1200" and "kept as text" in n.message for n in imported.notes)


@settings(max_examples=6, deadline=None)
@given(word=st.sampled_from(STUCK_WORDS), pad=st.integers(0, 40_000),
       kind=st.sampled_from(["comment", "commands", "word"]))
@example(word=STUCK_WORDS[0], pad=200_000, kind="comment")  # 1 MB of it: past 150 s, 400 MB and growing
def test_a_stuck_word_is_stopped_at_its_own_budget_whatever_precedes_it(word, pad, kind):
    """The budget of the whole text let a stuck word after a long script restart its
    expansion ~100 times per character before it: `rcpc import shell` of a 1 MB comment then
    the word ran past 150 s, growing. Each word's expansion has the budget of its own length:
    the restarts are as many wherever the word stands (counted, so the test fails instead of
    running on: :func:`guard`, a step budget)."""
    before = {"comment": "#" + "x" * pad + "\n", "commands": "echo a\n" * (pad // 7),
              "word": "echo " + "x" * pad + "\n"}[kind]
    text = before + f"xpk {word}{UNMASKED}\n"
    with guard(), pytest.raises(bashlex.errors.ParsingError) as info:
        bash.parse(text)
    assert str(info.value).startswith(bash.STUCK) and info.value.position == len(before) + 4


LONGER = "echo " + "a" * 200 + " \""  # an early end at offset 207: what bashlex keeps


@settings(max_examples=80, deadline=None)
@given(words=st.lists(st.lists(st.sampled_from(PIECES), min_size=1, max_size=8).map("".join), min_size=1, max_size=3),
       first=st.sampled_from([LONGER, "x" * 50 + " (", "\\"]))
@example(words=["\\"], first=LONGER)      # 'xpk \\' after a 207-character text: bashlex said position 207
@example(words=["&& (b"], first=LONGER)
@example(words=['"unclosed'], first=LONGER)
def test_w1200_quotes_no_stale_position(words, first):
    """W1200 (a startup command kept as text) quotes the offset in the command where bashlex
    stopped, never the one its "unexpected EOF" carries over from a text parsed earlier in
    the process (rcpc.importer.bash.stopped_at): an early end is at the command's end, any
    offset within the command, and the message holds no "(position N)" of bashlex's."""
    import re

    from rcpc.core.source import Span
    from rcpc.importer.manifest import split_startup

    text = "xpk " + " ".join(words)
    with guard():
        try:
            bash.parse(first)  # sets bashlex's shared EOF token
        except Exception:
            pass
        _, notes = split_startup(text, set(), lambda words: Span("t.yaml", 1, 1, 1, 1))
    kept = [n for n in notes if "bash cannot parse it" in n.message]
    if not kept:
        return
    (note,) = kept
    assert "(position" not in note.message  # bashlex's own, stale after a longer text
    assert note.code == "W1200" and note.hint
    at = re.search(r" at offset (\d+) of (\d+) characters\)$", note.message)
    if at:
        offset = int(at.group(1))
        assert int(at.group(2)) == len(text) and 0 <= offset <= len(text)
        if "EOF" in note.message:
            assert offset == len(text.rstrip("\n"))


@settings(max_examples=3, deadline=None)
@given(word=st.sampled_from(STUCK_WORDS), calls=st.integers(50, 400))
@example(word=STUCK_WORDS[0], calls=400)
def test_a_stuck_word_is_stopped_when_gc_callbacks_run_during_the_parse(word, calls):
    """The budget stopped the parse by raising in whatever Python call crossed it: when that
    was a gc callback run during the parse (Hypothesis registers one), Python swallowed the
    error ("Exception ignored in gc_callback"), tracing went off with it and the parse ran on
    unbounded (a CI run failed so). It stops in a call of bashlex's own: a collection at every
    few allocations whose callback makes ``calls`` Python calls puts most calls of the parse in
    callbacks, and the parse still stops at the word, at its budget."""
    def callback(phase, info):
        for _ in range(calls):
            len_of("x")

    def len_of(s):
        return len(s)

    text = f"xpk {word}{UNMASKED}\n"
    threshold = gc.get_threshold()
    gc.callbacks.append(callback)
    gc.set_threshold(5)
    try:
        with guard(), pytest.raises(bashlex.errors.ParsingError) as info:
            bash.parse(text)
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(callback)
    assert str(info.value).startswith(bash.STUCK) and info.value.position == 4
