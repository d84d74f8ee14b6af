"""Start-up builds only the invoked command's arguments (``rcpc.cli._parser(command)``): what
it parses, prints for ``--help`` and reports for a usage error is what the full parser does."""

from __future__ import annotations

import contextlib
import io

import pytest

from rcpc import cli

FULL = cli._parser()
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
    ["server", "start", "--idle-timeout", "60"], ["server", "stop"], ["server", "status"],
]
BAD = [["server"], ["server", "restart"], ["server", "start", "--idle-timeout", "nan"],
       ["server", "start", "--idle-timeout", "0"], ["build", "--nope"], ["fmt", "--check", "--diff"], ["check", "-j", "0"], ["bild"], ["schema"], ["render"], []]


def run(parser, argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            return ("ok", vars(parser.parse_args(argv)), "")
        except SystemExit as exc:
            return ("exit", exc.code, out.getvalue() + err.getvalue())


def test_every_command_is_covered():
    assert sorted({a[0] for a in ARGVS}) == sorted(COMMANDS)


@pytest.mark.parametrize("argv", ARGVS + BAD + [[c, "--help"] for c in COMMANDS] + [["--help"], ["-h", "build"]],
                         ids=lambda a: " ".join(a) or "none")
def test_the_invoked_commands_parser_parses_as_the_full_one(argv):
    assert run(cli._parser(cli._invoked(argv)), argv) == run(cli._parser(), argv)


def test_a_parser_used_before_parses_as_a_new_one():
    """Parsers are built once a process (and before the build server forks): parsing
    arguments leaves nothing behind in them."""
    for argv in ARGVS + BAD:
        run(cli._parser(cli._invoked(argv)), argv)
        run(cli._parser(), argv)
    for argv in ARGVS + BAD + [[c, "--help"] for c in COMMANDS]:
        fresh = cli._build_parser(cli._invoked(argv))
        assert run(cli._parser(cli._invoked(argv)), argv) == run(fresh, argv)
