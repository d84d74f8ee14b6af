"""bashlex's parser, bounded: every shell text the importer reads is parsed here.

bashlex 0.18 never returns on some words bash accepts: a single-quoted ``${`` right after an
escape (``\\"'${b'``, ``\\\\'${b'``) makes its word expansion (``bashlex.subst``) restart the
word forever, growing a string, until the machine runs out of memory. :func:`parse` counts
the Python calls the parser makes and stops it at :func:`budget` calls, proportional to the
text's length, as :class:`bashlex.errors.ParsingError` located at the word being expanded;
and each word's expansion at :func:`budget` calls of that word's length (a budget of the whole
text alone let that word after 1 MB of script run past 60 s).

On the 15 XPK recipes of ``../shared/data`` the parser makes at most 5 calls per character
(``tests/test_import_bash.py`` keeps a tenfold margin); the budget allows 100 per character
and 100,000 more, about a second of the parser's time on a stuck word. Command substitutions
nested ``$(...)`` inside each other cost more per character the deeper they go (bashlex
parses each level again): up to about 50 levels fit.
"""

from __future__ import annotations

import sys

CALLS_PER_CHAR = 100
BASE_CALLS = 100_000
STUCK = "the shell parser (bashlex) does not finish on this word"


def budget(text: str) -> int:
    """How many Python calls parsing ``text`` may take."""
    return BASE_CALLS + CALLS_PER_CHAR * len(text)


def parse(text: str) -> list:
    """``bashlex.parse(text)``: its nodes, in order, with each top-level ``case ... esac``
    (which bashlex lacks) a :class:`rcpc.importer.shcase.Case` node whose arms' commands are
    bashlex's. Raises what bashlex raises for text it cannot parse, and
    ``bashlex.errors.ParsingError`` (message :data:`STUCK`, ``position`` the offset of the
    word it was expanding, else 0) past :func:`budget` calls. A trace function set before (a
    debugger, coverage) is suspended meanwhile and restored."""
    from rcpc.importer import shcase

    return shcase.parse(text, _parse) if "case" in text else _parse(text)


def _parse(text: str) -> list:
    """``bashlex.parse(text)``, bounded (:func:`parse`)."""
    import bashlex

    limit = budget(text)
    calls = 0
    word = None  # (the outermost _expandword frame, the call count it may reach)

    def count(frame, event, arg):
        nonlocal calls, word
        calls += 1
        if calls > limit or word is not None and calls > word[1]:
            sys.settrace(None)
            raise bashlex.errors.ParsingError(STUCK, text, _word_offset(frame, text))
        if word is None and frame.f_code.co_name == "_expandword":
            word = (frame, calls + budget(getattr(frame.f_locals.get("tokenword"), "value", None) or ""))
            return leave  # its return event ends the word's budget
        return None  # no line events: calls only

    def leave(frame, event, arg):
        nonlocal word
        if event == "return" and word is not None and frame is word[0]:
            word = None
        return leave

    before = sys.gettrace()
    sys.settrace(count)
    try:
        return bashlex.parse(text)
    finally:
        sys.settrace(before)


def stopped_at(exc: Exception, text: str) -> int | None:
    """The offset in ``text`` where bashlex stopped parsing it (``exc`` what :func:`parse`
    raised), or None when ``exc`` gives no place in ``text``. An early end (bashlex's
    "unexpected EOF", "unexpected EOF while looking for matching ...") is at the text's end,
    its final newlines left out: bashlex 0.18's ``position`` for it is not of this text but
    the length of the text its lexer read last in the process (its EOF token keeps the lexer
    that set it), so a short text parsed after a long one was reported past its own end."""
    pos = getattr(exc, "position", None)
    if "EOF" in str(getattr(exc, "message", "")):
        pos = len(text.rstrip("\n"))
    return pos if isinstance(pos, int) and not isinstance(pos, bool) and 0 <= pos <= len(text) else None


def problem(exc: Exception) -> str:
    """What bashlex says of ``exc`` without its ``(position N)`` (:func:`stopped_at` gives
    the place): its message, else the exception's type."""
    message = getattr(exc, "message", None)
    return message if isinstance(message, str) and message else f"the shell parser stopped ({type(exc).__name__})"


def _word_offset(frame, text: str) -> int:
    """The offset in ``text`` of the word bashlex was expanding: the outermost ``_expandword``
    up the stack from ``frame`` (a command substitution's words are offsets in its own text),
    plus the offset at which ``bashlex.parse`` started the command being parsed (its local
    ``index``; it parses one command at a time, each from 0). 0 when no word is found."""
    pos = start = None
    while frame is not None:
        local = frame.f_locals
        if frame.f_code.co_name == "_expandword":
            pos = getattr(local.get("tokenword"), "lexpos", pos)
        elif frame.f_code.co_name == "parse" and local.get("s") is text:
            start = local.get("index", 0)
        frame = frame.f_back
    offset = (pos or 0) + (start or 0) if isinstance(pos, int) and isinstance(start, int) else 0
    return offset if 0 <= offset < len(text) else 0
