"""Parsing ``rcpc``'s command line with argparse: the parser class, the command a command
line invokes, and positionals after options. The parser itself is built by the dispatch
(:func:`rcpc.cli.parser`)."""

from __future__ import annotations

import argparse
import sys

from rcpc.core.diagnostics import visible
from rcpc.interrupts import unwritable


class HelpFormatter(argparse.HelpFormatter):
    """argparse's HelpFormatter, but the terminal's width (``shutil.get_terminal_size``, as
    argparse asks it) is found when the formatter first needs it: argparse makes a formatter
    in every ``add_argument`` to check its metavar (``_format_args``, which reads no width),
    and importing shutil there (with bz2 and lzma: ~2 ms) was on every command's path, a
    build's too. Help and usage are formatted as by argparse's own."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        self._asked = (max_help_position, width)
        self._sized: tuple[int, int] | None = None
        super().__init__(prog, indent_increment, max_help_position, 70 if width is None else width)

    def _size(self) -> tuple[int, int]:
        """(width, max help position) as HelpFormatter.__init__ works them out."""
        if self._sized is None:
            max_help_position, width = self._asked
            if width is None:
                import shutil

                width = shutil.get_terminal_size().columns - 2
            self._sized = (width, min(max_help_position, max(width - 20, self._indent_increment * 2)))
        return self._sized

    # HelpFormatter.__init__ assigns both (its values are not kept); every other use reads them
    _width = property(lambda self: self._size()[0], lambda self, value: None)
    _max_help_position = property(lambda self: self._size()[1], lambda self, value: None)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose help and version, printed to stdout, raise what fails to write
    them (argparse ignores it), for :func:`parsed`; its subparsers are of this class too.
    A usage error on a stderr that cannot take it still exits 2; what it prints shows the
    characters of the words given that are not printable escaped
    (:func:`rcpc.core.diagnostics.visible`). Its help is formatted by :class:`HelpFormatter`
    unless another is given."""

    def __init__(self, *args, formatter_class=HelpFormatter, **kwargs):
        super().__init__(*args, formatter_class=formatter_class, **kwargs)

    def _print_message(self, message, file=None):
        if message and file is sys.stdout:
            file.write(message)
        else:  # a usage error quotes the words given (unrecognized arguments: ...) as they are
            super()._print_message(message and visible(message, lines=True), file)


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
