"""Parsing ``rcpc``'s command line with argparse: the parser class, the command a command
line invokes, and positionals after options. The parser itself is built by the dispatch
(:func:`rcpc.cli.parser`)."""

from __future__ import annotations

import argparse
import sys

from rcpc.interrupts import unwritable


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose help and version, printed to stdout, raise what fails to write
    them (argparse ignores it), for :func:`parsed`; its subparsers are of this class too.
    A usage error on a stderr that cannot take it still exits 2."""

    def _print_message(self, message, file=None):
        if message and file is sys.stdout:
            file.write(message)
        else:
            super()._print_message(message, file)


def invoked(argv: list[str]) -> str | None:
    """The command ``argv`` invokes (its first word), or None when it asks for help first."""
    for word in argv:
        if word in ("-h", "--help"):
            return None
        if not word.startswith("-"):
            return word
    return None


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed by ``parser`` (:func:`rcpc.cli.parser`), with a command's positionals
    allowed after its options (``rcpc render R --variant V trainer.flags``), as ``git`` and
    ``bazel`` take them: argparse gives its positionals the first run of words only, and a
    subparser cannot be parsed intermixed from the top, so the command's own parser parses
    the words after the command again (``parse_intermixed_args``) when the first parse
    leaves words over. Exits 2 (argparse's usage error, from the command's parser) on what
    neither parse takes."""
    args, extras = parser.parse_known_args(argv)
    if not extras:
        return args
    command = parser._subparsers._group_actions[0].choices.get(args.command)
    if command is None or args.command not in argv:
        return parser.parse_args(argv)
    try:
        rest = command.parse_intermixed_args(argv[argv.index(args.command) + 1:])
    except TypeError:  # arguments parse_intermixed_args does not support
        return parser.parse_args(argv)
    return argparse.Namespace(**{**vars(args), **vars(rest)})


def parsed(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """:func:`parse`, whose help and version (``--help``, ``--version``: SystemExit 0) reach
    stdout or end in exit 1 (:func:`rcpc.interrupts.unwritable`): ``rcpc --help > /dev/full``
    exited 0, argparse ignoring the failed write (:class:`Parser`), and ``rcpc --version
    >&-`` exited 120 with an ``Exception ignored`` traceback at the interpreter's flush."""
    try:
        try:
            return parse(parser, argv)
        except SystemExit:
            sys.stdout.flush()
            raise
    except OSError as exc:
        raise SystemExit(unwritable(exc)) from None
