"""bash's ``case WORD in PATTERN) ... ;; esac``, which bashlex 0.18 does not parse: found in
the script text and read here, each arm's commands parsed by bashlex.

:func:`parse` finds each ``case`` that starts a line outside quotes (a top-level statement, as
launch recipes write it: ``case "$TPU_TYPE" in``) and its ``esac``, and reads it as a
:class:`Case` node: the word, and each arm's patterns (``"7x-8" | "tpu7x-2x2x1")``) and body
(bash(1) Compound Commands: ``;;`` ends an arm; ``;&`` and ``;;&``, which fall through, and a
``case`` inside an arm are refused). bashlex parses the script once, with each ``case``'s
own words blanked (newlines kept, a newline where an arm ends): every offset is the
script's, and each node inside a case's arm is that arm's command. The
nodes have bashlex's ``kind`` and ``pos`` (offsets in the script), so the interpreter
(:mod:`rcpc.importer.interpret`) and the importer (:mod:`rcpc.importer.shell`) read them with
the others. Chosen over a second parser (tree-sitter-bash) because everything else of the
importer reads bashlex's nodes and offsets: one syntax tree, one offset space.

Errors are ``bashlex.errors.ParsingError`` at the offset they are found at, as bashlex's own.
"""

from __future__ import annotations

import attrs
import bashlex


@attrs.frozen
class Arm:
    """One arm: ``patterns`` the ``(start, end)`` offsets of each pattern word, ``body`` the
    bashlex nodes of its commands, ``pos`` from its first pattern to its ``;;`` (or ``esac``)."""

    patterns: tuple
    body: tuple
    pos: tuple


@attrs.frozen
class Case:
    """``case WORD in ... esac``: ``word`` the ``(start, end)`` of WORD, ``arms`` its
    :class:`Arm` list, ``pos`` the offsets of ``case`` to the end of ``esac``."""

    word: tuple
    arms: tuple
    pos: tuple
    kind: str = "case"


def _error(message: str, text: str, pos: int):
    return bashlex.errors.ParsingError(message, text, pos)


def unquoted(text: str, start: int, end: int, comments: bool = False):
    """``(offset, character)`` of each character of ``text[start:end]`` outside quotes and
    not escaped by a backslash (bash(1) QUOTING; the quotes and backslashes themselves are
    not yielded); with ``comments``, a ``#`` starting a word and the rest of its line are
    not yielded either. A quote not closed runs to ``end`` (bashlex reports it)."""
    mode, i = None, start
    while i < end:
        c = text[i]
        if mode == "'":
            mode = None if c == "'" else mode
        elif mode == '"':
            if c == "\\":
                i += 1
            elif c == '"':
                mode = None
        elif c in "'\"":
            mode = c
        elif c == "\\":
            i += 1
        elif comments and c == "#" and (i == start or text[i - 1].isspace()):
            newline = text.find("\n", i, end)
            i = end if newline < 0 else newline
            continue
        else:
            yield i, c
        i += 1


def _word_end(text: str, i: int, stop: str = "") -> int:
    """The end of the shell word at ``i`` (quotes and backslashes followed; ends at
    whitespace, ``;&|()<>`` or a character of ``stop``)."""
    for at, c in unquoted(text, i, len(text)):
        if c.isspace() or c in ";&|()<>" or c in stop:
            return at
    return len(text)


def _skip(text: str, i: int) -> int:
    """Past spaces, newlines and comments from ``i``."""
    while i < len(text):
        if text[i].isspace():
            i += 1
        elif text[i] == "#":
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
        else:
            return i
    return i


def _line_starts(text: str):
    """Offsets of the first word of each line outside quotes (a backslash-newline continues
    the line), with the word."""
    for at in [0] + [i + 1 for i, c in unquoted(text, 0, len(text), comments=True) if c == "\n"]:
        j = at
        while j < len(text) and text[j] in " \t":
            j += 1
        yield j, text[j:_plain_end(text, j)]


def _plain_end(text: str, i: int) -> int:
    while i < len(text) and (text[i].isalnum() or text[i] == "_"):
        i += 1
    return i


def _arms(text: str, i: int) -> tuple:
    """``([(patterns, (body start, body end), (first, after))], offset after esac)`` of the
    arms from ``i`` (after ``in``); a body ends at its ``;;`` (or ``esac``)."""
    arms = []
    while True:
        i = _skip(text, i)
        if text.startswith("esac", i) and _plain_end(text, i) == i + 4:
            return arms, i + 4
        if i >= len(text):
            raise _error("unexpected EOF while looking for matching 'esac'", text, len(text))
        first = i
        if text[i] == "(":
            i += 1
        patterns = []
        while True:
            i = _skip(text, i)
            end = _word_end(text, i, ")|")
            if end == i:
                raise _error("a case pattern is missing", text, i)
            patterns.append((i, end))
            i = _skip(text, end)
            if i < len(text) and text[i] == "|":
                i += 1
                continue
            if i < len(text) and text[i] == ")":
                i += 1
                break
            raise _error("a case pattern list ends without ')'", text, i)
        body_start, body_end, after = i, None, None
        while i < len(text):
            i = _skip(text, i)
            if text.startswith(";;&", i) or text.startswith(";&", i):
                raise _error("a case arm that falls through (;& or ;;&)", text, i)
            if text.startswith(";;", i):
                body_end, after = i, i + 2
                break
            if text.startswith("esac", i) and _plain_end(text, i) == i + 4:
                body_end, after = i, i
                break
            if text.startswith("case", i) and _plain_end(text, i) == i + 4:
                raise _error("a case inside a case arm", text, i)
            end = _word_end(text, i)
            i = end + 1 if end == i else end
        if body_end is None:
            raise _error("unexpected EOF while looking for matching 'esac'", text, len(text))
        arms.append((tuple(patterns), (body_start, body_end), (first, after)))
        i = after


def parse(text: str, parse_text) -> list:
    """The statements of ``text``, in order: bashlex's nodes, each top-level ``case ... esac``
    a :class:`Case`. ``parse_text(text)`` is bashlex's parse (bounded:
    :func:`rcpc.importer.bash.parse`), called once, on ``text`` with every part of each case
    but its arms' commands blanked (newlines kept, a newline where each arm ends), so that
    every offset is the script's. Raises ``bashlex.errors.ParsingError`` for a ``case`` it
    cannot read, and what ``parse_text`` raises."""
    found, last = [], 0
    for at, word in _line_starts(text):
        if word != "case" or at < last:
            continue
        i = _skip(text, at + 4)
        word_end = _word_end(text, i)
        if word_end == i:
            raise _error("a case without a word", text, i)
        j = _skip(text, word_end)
        if not (text.startswith("in", j) and _plain_end(text, j) == j + 2):
            raise _error("a case word not followed by 'in'", text, j)
        arms, last = _arms(text, j + 2)
        found.append(((at, last), (i, word_end), arms))
    chars = list(text)
    for (at, end), _, arms in found:
        bodies = iter([b for _, b, _ in arms] + [(end, end)])
        body = next(bodies)
        for k in range(at, end):
            if k == body[1]:
                chars[k] = "\n"  # the arm's commands end here
                body = next(bodies)
            elif not (body[0] <= k < body[1]) and chars[k] != "\n":
                chars[k] = " "
        after = _skip(text, end) if end < len(text) and text[end] in " \t" else end
        if text.startswith(";", after) and not text.startswith(";;", after):
            chars[after] = " "  # esac; next: the next statement on the same line
    masked = "".join(chars)
    nodes = parse_text(masked) if masked.strip() else []
    out, bodies = [], {id(a): [] for _, _, arms in found for a in arms}
    for n in nodes:
        case = next((f for f in found if f[0][0] <= n.pos[0] < f[0][1]), None)
        if case is None:
            out.append(n)
            continue
        arm = next((a for a in case[2] if a[1][0] <= n.pos[0] and n.pos[1] <= a[1][1]), None)
        if arm is None:
            raise _error("a command runs past the end of its case arm", text, n.pos[0])
        bodies[id(arm)].append(n)
    for span, word, arms in found:
        out.append(Case(word, tuple(Arm(p, tuple(bodies[id(a)]), pos) for a in arms for p, _, pos in [a]), span))
    return sorted(out, key=lambda n: n.pos[0])
