"""Parser: recipe source text → :mod:`rcpc.core.syntax.ast`.

Two parsers of one grammar (``grammar.lark``, LALR(1)). The fast one
(:mod:`rcpc.core.syntax.descent`: a master-regex lexer read off the grammar, recursive descent)
reads every text first; whatever it declines (a syntax error, a bad escape, too many tokens,
nesting too deep...) lark's LALR parser, the reference, reads again from the start, so every
diagnostic is lark's, and a valid build never imports lark. Both build the AST as they reduce
each rule with the same :class:`~rcpc.core.syntax.builder.AstBuilder` (lark's
``transformer=``), with no parse tree and no second pass, and share the postlexer
(:mod:`rcpc.core.syntax.postlex`); comments are collected by the lexer (lark's: a callback)
into the module. tests/test_descent.py holds them equal. One parser serves the compiler,
``rcpc fmt`` and ``rcpc lint``. Building lark's parse tables costs ~20 ms, so they are cached in the user cache directory
(``$XDG_CACHE_HOME/rcpc`` or ``~/.cache/rcpc``), keyed by the lark and Python versions and a
hash of the grammar and the parser's options; an unwritable cache directory only makes
start-up slower.

Errors: :class:`~rcpc.core.diagnostics.CompileError` with code ``E0001`` (syntax), ``E0002``
(bad string escape) at the offending ``path:line:col``, naming what was expected in words;
``E0809`` for a file of more than :data:`~rcpc.core.limits.MAX_TOKENS` tokens. A parse keeps
what it reads in objects of its own (:class:`~rcpc.core.syntax.postlex.TokenCount`,
:class:`ReferenceParser`): parses may nest or interleave.
"""

from __future__ import annotations

import re
import os
import stat
import sys
from pathlib import Path

from rcpc.core.diagnostics import CompileError, Diagnostic, error
from rcpc.core.digest import hexdigest
from rcpc.core.patterns import LazyPattern
from rcpc.core.source import Source
from rcpc.core.syntax.builder import AstBuilder
from rcpc.core.usercache import cache_dir, make_dirs, owned_file
from rcpc.core.syntax import ast
from rcpc.core.syntax.postlex import BadIndent as _BadIndent
from rcpc.core.syntax.postlex import TokenCount
from rcpc.core.syntax.postlex import TooManyTokens as _TooManyTokens
from rcpc.core.syntax.postlex import postlex
from rcpc.core.syntax.descent import DECLINED, FastParser
from rcpc.core.syntax.lexer import KEYWORD_NAMES

GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")

# Readable names for the terminals lark reports in UnexpectedToken.expected.
_READABLE = {
    "NAME": "a name", "INT": "a number", "FLOAT": "a number", "STRING": "a string",
    "LONG_STRING": "a string", "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'",
    "LBRACE": "'{'", "RBRACE": "'}'", "COMMA": "','", "COLON": "':'", "EQUAL": "'='",
    "DOT": "'.'", "PLUS": "'+'", "MINUS": "'-'", "MUL_OP": "an operator", "COMP_OP": "a comparison",
    "_NL": "end of line", "$END": "end of file", "IF": "'if'", "ELSE": "'else'", "FOR": "'for'",
    "IN": "'in'", "NOT": "'not'", "AND": "'and'", "OR": "'or'", "LOAD": "'load'",
    "TRUE_PY": "True", "TRUE_YAML": "true", "FALSE_PY": "False", "FALSE_YAML": "false",
    "NONE_PY": "None", "NULL_YAML": "null", "_INDENT": "an indented block", "_DEDENT": "the end of the block",
    "DEF": "'def'", "RETURN": "'return'", "ELIF": "'elif'",
}
_PY_KEYWORDS = {
    "lambda": "recipes cannot define functions; compute values with expressions and built-ins",
    "class": "recipes cannot define classes",
    "import": "use load(\"//path/to/file.rcp\", \"NAME\") to use constants from another file",
    "from": "use load(\"//path/to/file.rcp\", \"NAME\") to use constants from another file",
    "while": "there is no 'while' (every build terminates): use 'for' over a list in a function, or a comprehension",
}


def _cache_path(grammar: str, options: dict) -> str | None:
    """The parse-table cache file for ``grammar`` built with lark ``options``: its name hashes
    the lark and Python versions, the grammar and every option (objects by their class), so
    two parsers built differently never share a file."""

    import lark

    described = sorted((k, v if isinstance(v, (str, int, bool, type(None))) else type(v).__qualname__)
                       for k, v in options.items())
    key = f"{lark.__version__}\0{sys.version_info[:2]}\0{grammar}\0{described!r}"
    digest = hexdigest(key.encode())[:16]
    directory = cache_dir()
    if directory is None:
        return None
    try:
        make_dirs(directory)
    except OSError:
        return None
    path = os.path.join(directory, f"grammar-{digest}.lark.cache")
    if os.path.lexists(path) and not owned_file(path):  # lark would block on a FIFO, or unpickle another's
        return None
    return path


class ReferenceParser:
    """lark's LALR parser of ``grammar.lark`` with what one parse at a time keeps: every token
    kept, the AST built as it reduces (:class:`~rcpc.core.syntax.builder.AstBuilder`, lark's
    ``transformer=``), comments collected by the ``COMMENT`` callback (:meth:`_comment_token`),
    the postlexer (:func:`rcpc.core.syntax.postlex.postlex`) fed the text being parsed. The
    parse tables are loaded from (or saved to) the user cache. The lexer is lark's basic one:
    the grammar's terminals do not collide (lark checks), so no parser state needs a lexer of
    its own, and one scanner is compiled instead of one per state (a cold parse of the RL
    recipe runs 17% fewer instructions, valgrind's count).

    One parse at a time: :func:`parse` takes an idle one from its
    :class:`~rcpc.core.session.Session` (``session.parsers``) or makes one (~12 ms from the
    cached tables), and gives it back when done, so a parse started while another runs (a
    callback's, another thread's) gets its own."""

    always_accept = ("_NL",)  # (lark's postlexer interface)

    def __init__(self):
        from lark import Lark

        self.builder = AstBuilder()
        self.text = ""        # the text being parsed (the postlexer measures indentation in it)
        self.token_at: list | None = None  # when a list: each token's offset in the file is appended to it
        self.count = TokenCount()
        self.found: dict | None = None  # the comments of the file, by offset; None inside an f-string field
        grammar = GRAMMAR_PATH.read_text(encoding="utf-8")
        options = dict(parser="lalr", lexer="basic", postlex=self, maybe_placeholders=False, keep_all_tokens=True,
                       transformer=self.builder, lexer_callbacks={"COMMENT": self._comment_token})
        cache = _cache_path(grammar, options)
        try:
            self.lark = Lark(grammar, cache=cache or False, **options)
        except OSError:
            self.lark = Lark(grammar, **options)
        if cache:  # lark wrote it with the umask's mode (0664 under 002: never trusted again): 0600, as every file
            try:    # of the cache; a regular file of ours, in a directory only we can write
                st = os.lstat(cache)
                if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) != 0o600:
                    os.chmod(cache, 0o600)
            except OSError:
                pass

    def process(self, stream):
        """(lark's postlexer) :func:`rcpc.core.syntax.postlex.postlex` with lark's tokens."""
        from lark import Token

        yield from postlex(stream, self.text, self.token_at, self.builder.base, Token.new_borrow_pos, self.count)

    def _comment_token(self, tok) -> None:
        """The lexer callback for ``COMMENT`` (an ignored terminal): collects the comments of
        the parse in progress, by offset (a token seen twice, as when an error is retried,
        counts once). Counts each comment read as a token, as the postlexer counts the others
        (raises its ``TooManyTokens`` past the limit)."""
        count = self.count
        count.n += 1
        if self.token_at is not None:
            self.token_at.append(self.builder.base + tok.start_pos)
        if count.n > count.limit:
            raise _TooManyTokens(tok.start_pos)
        if self.found is not None:
            self.found.setdefault(tok.start_pos, tok)


_KEYWORDS = KEYWORD_NAMES  # words the lexer reads as keywords or literals (if, True, null, ...)


def parse(source: Source, token_at: list | None = None, session=None,
          tokens: TokenCount | None = None) -> ast.Module:
    """Parse one file into an :class:`ast.Module`, with its comments
    (:attr:`ast.Module.comments`; :func:`rcpc.core.syntax.comments.attached` places them).
    ``token_at``: a list to which the offset of each token read is appended (f-string
    fields' included), sorted at the end. ``session``: the
    :class:`~rcpc.core.session.Session` whose idle :class:`ReferenceParser` a parse lark must
    read may use (default: one made for the parse). ``tokens``: the parse's
    :class:`~rcpc.core.syntax.postlex.TokenCount` (its limit; the count read, after the parse;
    default: a new one at :data:`~rcpc.core.limits.MAX_TOKENS`). Re-entrant: what a parse
    keeps is its own.

    The fast parser (:mod:`rcpc.core.syntax.descent`) reads it first; whatever it declines,
    lark's reads again from the start, so errors are lark's.

    Raises :class:`CompileError` (``E0001``) for a syntax error, (``E0002``) for a bad escape.
    """
    found: list = []
    tokens = TokenCount() if tokens is None else tokens
    fast = FastParser(source, token_at, tokens)
    try:
        stmts = fast.statements(source.text, 0, found)
    except DECLINED:
        if token_at is not None:
            del token_at[:]
        tokens.n = 0
        return _parse_lark(source, token_at, session, tokens)
    finally:
        fast.close()
    if token_at is not None:
        token_at.sort()
    comments = tuple(_comment(source, tok) for tok in found)
    return ast.Module(source.path, tuple(stmts), comments, source)


def _parse_lark(source: Source, token_at: list | None = None, session=None,
                tokens: TokenCount | None = None) -> ast.Module:
    """:func:`parse` by lark alone (the reference): with recovery into later statements."""
    idle = session.parsers if session is not None else None
    parser = idle.pop() if idle else ReferenceParser()
    parser.count = TokenCount() if tokens is None else tokens
    parser.found = found = {}
    parser.token_at = token_at
    try:
        stmts = _parse_text(parser, source, source.text, 0)
    except _TooLarge:
        raise
    except CompileError as exc:
        parser.found = parser.token_at = None
        raise CompileError(exc.diagnostics + _later_syntax_errors(parser, source, exc)) from None
    finally:
        parser.found = parser.token_at = None
        parser.text = ""
        parser.builder.source = None
        if idle is not None:
            idle.append(parser)
    if token_at is not None:
        token_at.sort()
    comments = tuple(_comment(source, found[k]) for k in sorted(found))
    return ast.Module(source.path, tuple(stmts), comments, source)


def _comment(source: Source, tok, base: int = 0) -> ast.Comment:
    text = tok.value.rstrip()
    return ast.Comment(text, source.span(base + tok.start_pos, base + tok.start_pos + len(text)))


class _TooLarge(CompileError):
    """E0809: no recovery from it (each restart would parse the rest of the file again)."""


_STATEMENT_START = LazyPattern(r"^[A-Za-z_\[]", re.M)
MAX_SYNTAX_ERRORS = 20


def _later_syntax_errors(parser: ReferenceParser, source: Source, exc: CompileError) -> list:
    """Syntax errors of the statements after a failed one: the first error of each.

    Recovery restarts at the next line that begins at column 1 with a name or '[' (how every
    top-level statement begins), so one mistake yields one error, not a cascade."""
    found: list = []
    span = exc.diagnostics[0].span
    while span is not None and len(found) < MAX_SYNTAX_ERRORS:
        line_start = source._starts[span.line] if span.line < len(source._starts) else len(source.text)
        m = _STATEMENT_START.search(source.text, line_start)
        if m is None:
            break
        start = m.start()
        try:
            _parse_text(parser, source, source.text[start:], start)
            break
        except _TooLarge:  # the restarts share the file's token budget: recovery stops there
            break
        except CompileError as later:
            found.extend(later.diagnostics)
            span = later.diagnostics[0].span
            if span is None or span.line <= source.line_col(start)[0] - 1:
                break
    return found


def _parse_text(parser: ReferenceParser, source: Source, text: str, base: int):
    """The statements of ``text`` (at offset ``base`` of ``source``), built as they parse."""
    from lark.exceptions import UnexpectedInput

    builder = parser.builder
    saved = builder.source, builder.base, builder.parse_inner, parser.found, parser.text
    builder.source, builder.base = source, base
    parser.text = text
    if base:  # not the file itself: its comments are part of a string
        parser.found = None
    builder.parse_inner = lambda inner, at: _parse_fstring_expr(parser, source, inner, at)
    try:
        return parser.lark.parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, source, text, base) from None
    except _TooManyTokens as exc:
        at = base + exc.pos
        raise _TooLarge(Diagnostic("E0809", f"more than {parser.count.limit} tokens in this file",
                                   source.span(at, at + 1), hint="split it into several files")) from None
    except _BadIndent as exc:
        at = base + exc.pos
        raise error("E0001", exc.message, source.span(at, at + 1),
                    hint="a block (a function's, if's or for's body) is indented one level more than its "
                    "header; its lines all alike") from None
    finally:
        builder.source, builder.base, builder.parse_inner, parser.found, parser.text = saved


def _parse_fstring_expr(parser: ReferenceParser, source: Source, inner: str, at: int):
    name = inner.strip()
    if name.isidentifier() and name.isascii() and name not in _KEYWORDS:  # most fields: {NAME}
        start = at + inner.index(name)
        return ast.Name(name, source.span(start, start + len(name)))
    stmts = _parse_text(parser, source, inner, at)
    if len(stmts) != 1 or not isinstance(stmts[0], ast.ExprStmt):
        raise error("E0001", "an f-string replacement field must hold one expression",
                    source.span(at, at + len(inner)), hint="compute the value first (X = ...) and write {X}")
    return stmts[0].expr


# characters of Python's and Starlark's operators that rcpc's language lacks: what to write instead (docs/language.md)
_UNKNOWN_OPERATORS = {
    "|": "rcpc has no '|': + merges dicts shallowly (the right one wins), merge() deeply; 'or' is for bools",
    "&": "rcpc has no '&': 'and' is for bools",
    "^": "rcpc has no '^'",
    "~": "rcpc has no '~'",
    "@": "rcpc has no decorators and no '@'",
    ";": "one statement a line: rcpc has no ';'",
    "/": "rcpc has no float arithmetic ('/'): // divides ints; write the float value you mean",
}


def _syntax_error(exc, source: Source, text: str, base: int) -> CompileError:
    from lark.exceptions import UnexpectedCharacters, UnexpectedToken

    pos = getattr(exc, "pos_in_stream", None)
    if pos is None:
        pos = len(text)
    start = base + pos
    if isinstance(exc, UnexpectedCharacters):
        char = text[pos] if pos < len(text) else ""
        hint = None
        if char in "\"'" and text[max(0, pos - 2):pos + 1] == char * 3:
            # the lexer read the first two quotes of an unclosed '"""' as an empty string
            start -= 2
            hint = "this triple-quoted string is never closed"
        elif char in "\"'":
            hint = "this string is not closed on its line; use a triple-quoted string for several lines"
        else:
            hint = _UNKNOWN_OPERATORS.get(char)
        return CompileError(Diagnostic("E0001", f"unexpected character {char!r}",
                                       source.span(start, start + 1), hint=hint))
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        kind = tok.type
        opener = _unclosed_bracket(text, pos)
        allowed = set(exc.expected)
        if opener is not None:  # inside brackets: only the matching closer, and no newline
            closer = {"(": "RPAR", "[": "RSQB", "{": "RBRACE"}[text[opener]]
            allowed -= {"RPAR", "RSQB", "RBRACE", "_NL"} - {closer}
            if text[opener] != "{":
                allowed.discard("COLON")
        expected = [w for _, w in sorted({(_rank(t), _READABLE.get(t, t.lower())) for t in allowed})]
        found = "end of file" if kind == "$END" else ("end of line" if kind == "_NL" else repr(str(tok)))
        end = start + (len(str(tok)) if kind not in ("_NL", "$END") else 1)
        hint = None
        keyword = _statement_keyword(text, pos)
        if keyword:
            return CompileError(Diagnostic("E0001", f"'{keyword}' is not part of the recipe language",
                                           source.span(start, end), hint=_PY_KEYWORDS[keyword]))
        related = ()
        closing = {"RPAR": "(", "RSQB": "[", "RBRACE": "{"}.get(kind)
        if opener is not None and closing is not None and text[opener] != closing:
            obase = base + opener
            related = (("opened here", source.span(obase, obase + 1)),)
            hint = f"'{tok}' does not close the '{text[opener]}' opened at {related[0][1]}"
        elif opener is not None and (kind in ("_NL", "$END") or "\n" in text[opener:pos]):
            obase = base + opener
            related = (("opened here", source.span(obase, obase + 1)),)
            if kind in ("_NL", "$END"):
                hint = f"the '{text[opener]}' opened at {related[0][1]} is not closed"
            else:
                hint = f"is a ',' missing before this, or the '{text[opener]}' opened at {related[0][1]} not closed?"
        elif kind == "_NL":
            hint = "the line ends in the middle of an expression"
        elif kind == "$END":
            hint = "the file ends inside an unfinished expression; check for an unclosed bracket"
        elif kind == "COLON" and "EQUAL" in exc.expected:
            hint = "keyword arguments use '=', dict entries use ':' inside {...}"
        elif kind == "EQUAL" and "COLON" in exc.expected:
            hint = "dict entries are written \"key\": value"
        elif "COMMA" in exc.expected:
            hint = "is a ',' missing before this?"
        msg = f"unexpected {found}; expected " + _words(expected)
        return CompileError(Diagnostic("E0001", msg, source.span(start, end), hint=hint, related=related))
    return CompileError(Diagnostic("E0001", "unexpected end of file", source.span(start, start),
                                   hint="close every (, [, { and string the file opens"))


# Terminals listed first in "expected ...": what usually fixes the error.
_RANK = {"RPAR": 0, "RSQB": 0, "RBRACE": 0, "COMMA": 1, "COLON": 1, "EQUAL": 1, "_NL": 2}


def _rank(terminal: str) -> int:
    """Where a terminal goes in "expected ...": :data:`_RANK`, then punctuation and kinds of
    token ("a name"), then keywords ('not', 'if', True, ...), which a name could start too."""
    if terminal in _RANK:
        return _RANK[terminal]
    return 10 if _READABLE.get(terminal, "").strip("'").isidentifier() else 9


_PAIRS = {")": "(", "]": "[", "}": "{"}


def _unclosed_bracket(text: str, pos: int) -> int | None:
    """Offset of the innermost bracket still open at ``pos`` (strings and comments skipped)."""
    stack: list[int] = []
    i = 0
    while i < pos:
        c = text[i]
        if c == "#":
            nl = text.find("\n", i)
            i = pos if nl == -1 else nl
            continue
        if c in "\"'":
            q = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else c
            j = i + len(q)
            while j < pos and not text.startswith(q, j):
                j += 2 if text[j] == "\\" else 1
            i = j + len(q)
            continue
        if c in "([{":
            stack.append(i)
        elif c in ")]}" and stack and text[stack[-1]] == _PAIRS[c]:
            stack.pop()
        i += 1
    return stack[-1] if stack else None


def _statement_keyword(text: str, pos: int) -> str | None:
    line_start = text.rfind("\n", 0, pos) + 1
    first = text[line_start:].lstrip().split(None, 1)
    word = first[0].split("(")[0] if first else ""
    return word if word in _PY_KEYWORDS else None


def _words(items: list[str]) -> str:
    if len(items) > 6:
        items = items[:6] + ["..."]
    return ", ".join(items) if len(items) < 2 else ", ".join(items[:-1]) + " or " + items[-1]
