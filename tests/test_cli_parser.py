"""Start-up builds only the invoked command's arguments (``rcpc.cli.parser(command)``, which
imports that command's module alone): what it parses, prints for ``--help`` and reports for
a usage error is what the full parser does."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from rcpc import cli
from rcpc.cli.parsing import invoked

FULL = cli.parser()
COMMANDS = list(FULL._subparsers._group_actions[0].choices)
ARGVS = [
    ["build"], ["build", "rl/x", "-o", "out", "-j", "1", "--variant", "v"], ["build", "--set", "A=1", "--set", "B=2"],
    ["render", "r", "trainer.yaml", "--variant", "v"], ["params", "r", "--format", "json"],
    ["diff", "r", "--variant", "a", "--against", "b", "--stat"], ["check", "--strict-crd", "--notes", "-j", "2"],
    ["validate", "a.yaml", "b.yaml"], ["fmt", "--check", "recipes"], ["lint", "--diagnostics", "sarif"],
    ["explain", "r", "F", "steps", "--format", "json"], ["schema", "maxtext", "p", "--commit", "c"],
    ["schema", "jobset", "crd.yaml", "-o", "x.json"], ["lsp"], ["completion", "bash"],
    ["import", "manifest", "t.yaml", "--set", "A=1", "--var", "B", "-o", "r.rcp", "--force"],
    ["import", "shell", "l.sh", "-o", "r.rcp"],
]
BAD = [["server", "start"], ["build", "--nope"], ["fmt", "--check", "--diff"], ["check", "-j", "0"], ["bild"], ["schema"], ["render"], []]


def run(parser, argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            return ("ok", vars(parser.parse_args(argv)), "")
        except SystemExit as exc:
            return ("exit", exc.code, out.getvalue() + err.getvalue())


def _every_argument(words: list[str], parser) -> list[list[str]]:
    """Command lines of the (sub)parser ``parser``, reached by ``words``: each of its
    optional arguments given once, every positional filled (a value of its choices, else
    ``1``); one command line per choice of a nested command (``schema maxtext``)."""
    line, nested = list(words), None
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            nested = action
            continue
        value = [str(next(iter(action.choices)) if action.choices else "1")]
        if not action.option_strings:
            line += value
        elif action.nargs == 0:
            if not any(isinstance(g, argparse._MutuallyExclusiveGroup) and action in g._group_actions
                       and any(a.option_strings and a.option_strings[0] in line for a in g._group_actions)
                       for g in parser._mutually_exclusive_groups):
                line.append(action.option_strings[0])
        elif not any(action in g._group_actions and any(a.option_strings[0] in line for a in g._group_actions)
                     for g in parser._mutually_exclusive_groups):
            line += [action.option_strings[0], *value]
    if nested is None:
        return [line]
    return [out for name, sub in nested.choices.items() for out in _every_argument([*line, name], sub)]


GENERATED = [argv for c in COMMANDS for argv in _every_argument([c], FULL._subparsers._group_actions[0].choices[c])]


def test_every_command_and_argument_is_generated():
    """Every command (found, not listed here: a new one needs no edit of this file) and each
    of its arguments appear in a generated command line that the full parser takes."""
    assert sorted({a[0] for a in GENERATED}) == sorted(COMMANDS)
    for argv in GENERATED:
        assert run(FULL, argv)[0] == "ok", argv


@pytest.mark.parametrize("argv", ARGVS + GENERATED + BAD + [[c, "--help"] for c in COMMANDS] + [["--help"], ["-h", "build"]],
                         ids=lambda a: " ".join(a) or "none")
def test_the_invoked_commands_parser_parses_as_the_full_one(argv):
    assert run(cli.parser(invoked(argv)), argv) == run(cli.parser(), argv)


def test_a_parser_used_before_parses_as_a_new_one():
    """Parsing arguments leaves nothing behind in a parser (a tool may keep one, as the
    completion script's generator reads the full one)."""
    used = {}
    for argv in ARGVS + BAD:
        run(used.setdefault(invoked(argv), cli.parser(invoked(argv))), argv)
        run(FULL, argv)
    for argv in ARGVS + BAD + [[c, "--help"] for c in COMMANDS]:
        fresh = cli.parser(invoked(argv))
        assert run(used.get(invoked(argv), FULL), argv) == run(fresh, argv) == run(FULL, argv)


# A command's positionals after its options (`rcpc render R --variant V trainer.flags`, as
# git and bazel take them, and as shell completion offers them): argparse alone gave its
# positionals the first run of words only ("unrecognized arguments: trainer.flags").
INTERMIXED = [  # (command, positionals, option words)
    ("render", ["r", "trainer.flags"], ["--variant", "v"]),
    ("render", ["r", "trainer.flags"], ["--set", "A=1"]),
    ("build", ["a", "b", "c"], ["--variant", "v"]),
    ("build", ["a", "b"], ["-o", "out", "-j", "1"]),
    ("check", ["recipes/a.rcp", "recipes/b.rcp"], ["--notes", "-j", "2"]),
    ("diff", ["a", "b"], ["--variant", "v", "--stat"]),
    ("fmt", ["x.rcp", "y.rcp"], ["--check"]),
    ("lint", ["x.rcp", "y.rcp"], ["--diagnostics", "json"]),
    ("validate", ["a.yaml", "b.yaml"], ["--strict-crd"]),
    ("explain", ["r", "F", "steps"], ["--variant", "v"]),
]


@pytest.mark.parametrize("command, positionals, options", INTERMIXED)
def test_options_may_come_between_positionals(command, positionals, options):
    """Every place the options can go among the positionals parses to what options first do."""
    expected = vars(cli.parse([command, *options, *positionals]))
    for at in range(len(positionals) + 1):
        argv = [command, *positionals[:at], *options, *positionals[at:]]
        assert vars(cli.parse(argv)) == expected, argv


@pytest.mark.parametrize("argv", [["render", "r", "--variant", "v", "trainer.flags", "extra"],
                                  ["build", "a", "--nope", "b"], ["render", "r", "--variant"]])
def test_what_no_parse_takes_is_a_usage_error_of_the_command(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as info:
        cli.parse(argv)
    assert info.value.code == 2 and f"rcpc {argv[0]}: error:" in err.getvalue()


def _parsers(p: argparse.ArgumentParser):
    """``p`` and every subparser under it."""
    yield p
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


@pytest.mark.parametrize("columns", [None, "20", "52", "80", "143", "400"])
def test_help_and_usage_are_argparses_own(columns, monkeypatch):
    """rcpc's HelpFormatter (the terminal's width found when help is formatted, not when an
    argument is added: tests/test_startup_imports.py, shutil) formats every parser's help and
    usage as argparse's HelpFormatter does, whatever the terminal's width (COLUMNS)."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    for p in _parsers(cli.parser()):
        ours = (p.format_help(), p.format_usage())
        assert type(p._get_formatter()) is not argparse.HelpFormatter
        p.formatter_class = argparse.HelpFormatter
        assert (p.format_help(), p.format_usage()) == ours, p.prog
