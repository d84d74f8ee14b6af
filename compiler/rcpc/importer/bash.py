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

bashlex 0.18 also reads the text of single quotes that do not start a word as if unquoted:
``bashlex.subst._expandwordinternal`` looks for the closing quote from the opening one, so
``k='`'`` (bash: the word ``k=```) fails with a ``TypeError`` (its own "no closing `"
error built wrongly), ``k='$(x'`` and ``k='<(x'`` as an unterminated quote, and ``k='${'``
never returns (above). bash takes everything inside single quotes literally, so when bashlex
fails, :func:`parse` tries once more with :func:`masked` text: those characters replaced
inside single quotes, every offset unchanged. The importer and its interpreter read each
word from the script's own text at bashlex's offsets (:func:`rcpc.importer.interpret.units`),
never from bashlex's expansion of it.
"""

from __future__ import annotations

import sys

import bashlex

from rcpc.importer import shcase

CALLS_PER_CHAR = 100
BASE_CALLS = 100_000
STUCK = "the shell parser (bashlex) does not finish on this word"
# What bashlex's word expansion and lexer read inside single quotes that do not start a word
# (expansions, quotes, escapes, process substitutions, tildes): masked by :func:`masked`.
MASKED = frozenset("$`\\\"<>(){}~")


def budget(text: str) -> int:
    """How many Python calls parsing ``text`` may take."""
    return BASE_CALLS + CALLS_PER_CHAR * len(text)


def parse(text: str) -> list:
    """``bashlex.parse(text)``: its nodes, in order, with each top-level ``case ... esac``
    (which bashlex lacks) a :class:`rcpc.importer.shcase.Case` node whose arms' commands are
    bashlex's. Raises what bashlex raises for text it cannot parse, and
    ``bashlex.errors.ParsingError`` (message :data:`STUCK`, ``position`` the offset of the
    word it was expanding, else 0) past :func:`budget` calls. Text bashlex fails on is parsed
    once more :func:`masked` (its nodes' offsets are the text's; a word node's ``word``, bashlex's
    expansion, then has ``_`` for the masked characters); when that fails too, the first error
    is raised. A trace function set before (a debugger, coverage) is suspended meanwhile and
    restored."""
    try:
        return _parse_cases(text)
    except Exception as exc:  # bashlex's errors, and its own faults (TypeError) on words it misreads
        other = masked(text)
        if other is None:
            raise
        try:
            return _parse_cases(other)
        except Exception:
            raise exc from None


def _parse_cases(text: str) -> list:
    return shcase.parse(text, _parse) if "case" in text else _parse(text)


def masked(text: str) -> str | None:
    """``text`` with each character of :data:`MASKED` inside single quotes replaced by ``_``
    (bash(1) QUOTING: single quotes preserve every character; the quotes, the words and every
    offset stay as they are), or None when nothing is masked or the text holds what this
    reading of quotes does not follow: a here-document, a backquote outside single quotes,
    ``$(`` inside double quotes, ``$'...'``, a quote not closed. A ``#`` starting a word
    comments out the rest of its line."""
    out, i, n, dq = list(text), 0, len(text), False
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if dq:
            if c == '"':
                dq = False
            elif c == "`" or text.startswith("$(", i):
                return None
        elif c == '"':
            dq = True
        elif c == "'":
            close = text.find("'", i + 1)
            if close < 0 or (i > 0 and text[i - 1] == "$"):
                return None
            for k in range(i + 1, close):
                out[k] = "_" if text[k] in MASKED else out[k]
            i = close
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n;&|()"):
            newline = text.find("\n", i)
            i = n if newline < 0 else newline
            continue
        elif c == "`" or text.startswith("<<", i):
            return None
        i += 1
    other = "".join(out)
    return None if dq or other == text else other


def _parse(text: str) -> list:
    """``bashlex.parse(text)``, bounded (:func:`parse`)."""
    limit = budget(text)
    calls = 0
    word = None  # (the outermost _expandword frame, the call count it may reach)

    def count(frame, event, arg):
        nonlocal calls, word
        calls += 1
        # stopped in a call of bashlex's own: raised in code the parse did not call (a gc
        # callback run during it) the error would be swallowed, tracing off, the parse unbounded
        if (calls > limit or word is not None and calls > word[1]) and _in_bashlex(frame):
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


def _in_bashlex(frame) -> bool:
    """Whether ``frame`` runs bashlex's code (a module of the bashlex package)."""
    name = frame.f_globals.get("__name__", "")
    return name == "bashlex" or name.startswith("bashlex.")


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
