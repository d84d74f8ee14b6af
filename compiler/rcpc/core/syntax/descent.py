"""The fast parser: recursive descent over ``grammar.lark``, one function per rule, for the
happy path; lark's LALR parser (:mod:`rcpc.core.syntax.parser`) stays the reference and
reports every error.

Tokens come from :func:`rcpc.core.syntax.lexer.scan` (the grammar's own terminals, one regex,
and the postlexer's rules, :mod:`rcpc.core.syntax.postlex`, in the same loop) as parallel lists
of terminal names, texts and offsets: a :class:`~rcpc.core.syntax.tokens.Token` is made only
for the :class:`~rcpc.core.syntax.builder.AstBuilder` methods lark calls too, with child lists
of the same shape (every token a child, as lark's ``keep_all_tokens`` gives them). The most
frequent nodes (names, plain strings, lists, dicts, assignments, calls, attributes, binary
operators) are built here directly, as those methods build them. Each choice is made on the
next token (or, for ``NAME "="``, the next two), as the LALR(1) tables make it, so the
accepted texts and their trees are lark's.

Whatever this parser does not accept it declines (:class:`Decline`, or an exception of
:data:`DECLINED`: a syntax error, a bad indentation, a builder's ``CompileError``, too many
tokens, recursion too deep): the caller then parses the whole text again with lark, whose
diagnostics are the reference. lark is not imported here.
"""

from __future__ import annotations

from rcpc.core.diagnostics import CompileError
from rcpc.core.syntax import ast
from rcpc.core.syntax.builder import AstBuilder
from bisect import bisect_right as _bisect_right

from rcpc.core import record
from rcpc.core.source import Span
from rcpc.core.source import joined as _joined
from rcpc.core.syntax.lexer import KEYWORD_NAMES, LexError, scan
from rcpc.core.syntax.postlex import BadIndent, TokenCount, TooManyTokens
from rcpc.core.syntax.tokens import make


class Decline(Exception):
    """The fast parser does not accept this text (lark decides what is wrong with it)."""


# What makes the caller fall back to lark: ours, and what a bug or a deep nesting would raise.
DECLINED = (Decline, LexError, BadIndent, TooManyTokens, CompileError, RecursionError, LookupError,
            ValueError, TypeError, AttributeError, AssertionError, ArithmeticError)

# Tokens that end an expression after an atom (none continues one: not an operator, '.', '[', '(')
_ENDS = frozenset(("COMMA", "RPAR", "RSQB", "RBRACE", "COLON", "_NL", "FOR", "$END"))
_OPEN = frozenset(("LPAR", "LSQB", "LBRACE"))
_LITERALS = {"NAME": "name", "INT": "int_lit", "FLOAT": "float_lit", "STRING": "string_lit",
             "LONG_STRING": "string_lit", "TRUE_PY": "bool_lit", "TRUE_YAML": "bool_lit",
             "FALSE_PY": "bool_lit", "FALSE_YAML": "bool_lit", "NONE_PY": "none_lit", "NULL_YAML": "none_lit"}


class FastParser:
    """Parses texts of one :class:`~rcpc.core.source.Source` (the file, whole lines of it, or
    an f-string's replacement fields), building with its own :class:`AstBuilder`.
    ``record``: the list to which each token's offset in the file is appended (``None``: not
    recorded); ``count``: the parse's :class:`~rcpc.core.syntax.postlex.TokenCount` (default:
    a new one, at :data:`~rcpc.core.limits.MAX_TOKENS`)."""

    def __init__(self, source, record: list | None = None, count: TokenCount | None = None):
        self.source = source
        self.record = record
        self.count = TokenCount() if count is None else count
        builder = self.builder = AstBuilder()
        builder.source = source
        builder.parse_inner = self._field
        self._literal = {k: getattr(builder, v) for k, v in _LITERALS.items()}

    def statements(self, text: str, base: int, comments: list | None) -> list:
        """The statements of ``text`` (at offset ``base`` in the file); its ``COMMENT`` tokens
        appended to ``comments`` unless ``None``. Raises :class:`Decline` (or another of
        :data:`DECLINED`) for anything it does not accept."""
        builder = self.builder
        saved = builder.base
        builder.base = base
        try:
            tokens = scan(text, comments, self.record, base, self.count)
            return _Descent(tokens, builder, self._literal, self.source, base).module()
        finally:
            builder.base = saved

    def close(self) -> None:
        """Break the reference cycle between this parser and its builder (the builder calls
        back :meth:`_field`), so that reference counting frees both, and the source text they
        hold, as soon as the caller drops them; else each file's parse waited for the cyclic
        collector (a 1,000-recipe build kept ~18 MB more and spent ~5% of its time there)."""
        self.builder.parse_inner = None

    def _field(self, inner: str, at: int):
        """An f-string replacement field (``parse_inner`` of the builder), as
        :func:`rcpc.core.syntax.parser._parse_fstring_expr` reads it."""
        name = inner.strip()
        if name.isidentifier() and name.isascii() and name not in KEYWORD_NAMES:  # most fields: {NAME}
            start = at + inner.index(name)
            return ast.Name(name, self.source.span(start, start + len(name)))
        stmts = self.statements(inner, at, None)
        if len(stmts) != 1 or not isinstance(stmts[0], ast.ExprStmt):
            raise Decline()
        return stmts[0].expr


def _setters(cls, names: tuple) -> tuple:
    """The ``__set__`` of each slot of the record class ``cls``, for ``names``: its fields, in
    order (checked: a changed AST class must be changed here too)."""
    if tuple(f.name for f in record.fields(cls)) != names:
        raise ImportError(f"rcpc.core.syntax.descent: {cls.__name__}'s fields are not {names}")
    return tuple(next(k.__dict__[n] for k in cls.__mro__ if n in k.__dict__).__set__ for n in names)


# The most frequent nodes, built without their record ``__init__`` (as Source.span builds a
# Span): a new object, each field set in order, ``parens`` its default ``()``.
_new = object.__new__
_StrLit, _Name = ast.StrLit, ast.Name
_str_value, _str_raw, _str_span, _str_parens = _setters(_StrLit, ("value", "raw", "span", "parens"))
_name_id, _name_span, _name_parens = _setters(_Name, ("id", "span", "parens"))
_set_path, _set_line, _set_col, _set_end_line, _set_end_col = _setters(Span, ("path", "line", "col", "end_line", "end_col"))


def _list_or_dict(cls):
    items, trailing, span, parens = _setters(cls, ("items", "trailing_comma", "span", "parens"))

    def build(items_: tuple, trailing_: bool, span_: Span):
        node = _new(cls)
        items(node, items_)
        trailing(node, trailing_)
        span(node, span_)
        parens(node, ())
        return node

    return build


_list_lit, _dict_lit = _list_or_dict(ast.ListLit), _list_or_dict(ast.DictLit)
_Assign, _ExprStmt, _BinOp, _Attr, _Call, _Keyword = ast.Assign, ast.ExprStmt, ast.BinOp, ast.Attr, ast.Call, ast.Keyword


class _Descent:
    """One text's tokens (the four lists of :func:`~rcpc.core.syntax.lexer.scan`, ending in
    ``$END``) → its statements. A method per grammar rule; ``self.i`` is the index of the next
    token; ``base`` the text's offset in the file."""

    __slots__ = ("types", "values", "starts", "ends", "i", "b", "literal", "span", "base", "lines", "path")

    def __init__(self, tokens: tuple, builder: AstBuilder, literal: dict, source, base: int):
        self.types, self.values, self.starts, self.ends = tokens
        self.i = 0
        self.b = builder
        self.literal = literal
        self.span = source.span
        self.base = base
        self.lines = source._starts  # the offset of each line's start (Source.span's table)
        self.path = source.path

    def _tok(self, i: int):
        """The :class:`~rcpc.core.syntax.tokens.Token` of token ``i`` (for the builder)."""
        return make((self.types[i], self.values[i], self.starts[i], self.ends[i]))

    def _tspan(self, i: int) -> Span:
        """The span of token ``i`` (the builder's ``_tspan``; :meth:`Source.span` inline for a
        token on one line)."""
        base = self.base
        start = base + self.starts[i]
        end = base + self.ends[i]
        lines = self.lines
        line = _bisect_right(lines, start)
        if line != len(lines) and end >= lines[line]:
            return self.span(start, end)
        first = lines[line - 1]
        span = _new(Span)
        _set_path(span, self.path)
        _set_line(span, line)
        _set_col(span, start - first + 1)
        _set_end_line(span, line)
        _set_end_col(span, end - first + 1)
        return span

    def _take(self, kind: str):
        i = self.i
        if self.types[i] != kind:
            raise Decline()
        self.i = i + 1
        return make((kind, self.values[i], self.starts[i], self.ends[i]))

    def _next(self):
        i = self.i
        self.i = i + 1
        return make((self.types[i], self.values[i], self.starts[i], self.ends[i]))

    # statements -------------------------------------------------------------------------
    def module(self) -> list:
        """start: (_stmt _NL | def_stmt)*"""
        types = self.types
        stmts = []
        while types[self.i] != "$END":
            if types[self.i] == "DEF":
                stmts.append(self.def_stmt())
            else:
                stmts.append(self.stmt())
                if types[self.i] != "_NL":
                    raise Decline()
                self.i += 1
        return self.b.start(stmts)

    def stmt(self):
        """_stmt: assign | load_stmt | expr_stmt"""
        i = self.i
        kind = self.types[i]
        if kind == "LOAD":
            return self.load_stmt()
        if kind == "NAME" and self.types[i + 1] == "EQUAL":
            return self.assign()
        value = self.expr()
        return _ExprStmt(value, value.span)

    def assign(self):
        """assign: NAME "=" expr (the builder's ``assign``)"""
        i = self.i
        name_span = self._tspan(i)
        self.i = i + 2
        value = self.expr()
        return _Assign(self.values[i], name_span, value, _joined(name_span, value.span))

    def load_stmt(self):
        """load_stmt: "load" "(" STRING ("," load_arg)* [","] ")" """
        c = [self._next(), self._take("LPAR"), self._take("STRING")]
        types = self.types
        while types[self.i] == "COMMA":
            c.append(self._next())
            if types[self.i] == "RPAR":
                break
            if types[self.i] == "STRING":
                c.append(self.b.load_same([self._next()]))
            else:
                name = self._take("NAME")
                c.append(self.b.load_alias([name, self._take("EQUAL"), self._take("STRING")]))
        c.append(self._take("RPAR"))
        return self.b.load_stmt(c)

    def def_stmt(self):
        """def_stmt: "def" NAME "(" [fparam ("," fparam)* [","]] ")" ":" suite"""
        c = [self._next(), self._take("NAME"), self._take("LPAR")]
        types = self.types
        if types[self.i] != "RPAR":
            c.append(self.fparam())
            while types[self.i] == "COMMA":
                c.append(self._next())
                if types[self.i] == "RPAR":
                    break
                c.append(self.fparam())
        c.append(self._take("RPAR"))
        c.append(self._take("COLON"))
        c.append(self.suite())
        return self.b.def_stmt(c)

    def fparam(self):
        """fparam: NAME | NAME "=" expr | MUL_OP"""
        kind = self.types[self.i]
        if kind == "MUL_OP":
            return self.b.fparam_star([self._next()])
        name = self._take("NAME")
        if self.types[self.i] == "EQUAL":
            return self.b.fparam_default([name, self._next(), self.expr()])
        return self.b.fparam_plain([name])

    def suite(self):
        """suite: _NL _INDENT _body_stmt+ _DEDENT"""
        self._take("_NL")
        self._take("_INDENT")
        types = self.types
        body = [self.body_stmt()]
        while types[self.i] != "_DEDENT":
            body.append(self.body_stmt())
        self.i += 1
        return self.b.suite(body)

    def body_stmt(self):
        """_body_stmt: (assign | expr_stmt | return_stmt) _NL | if_stmt | for_stmt"""
        i = self.i
        kind = self.types[i]
        if kind == "IF":
            return self.if_stmt()
        if kind == "FOR":
            return self.for_stmt()
        if kind == "RETURN":
            ret = self._next()
            node = self.b.return_stmt([ret] if self.types[self.i] == "_NL" else [ret, self.expr()])
        elif kind == "NAME" and self.types[i + 1] == "EQUAL":
            node = self.assign()
        else:
            value = self.expr()
            node = _ExprStmt(value, value.span)
        self._take("_NL")
        return node

    def if_stmt(self):
        """if_stmt: "if" expr ":" suite elif_clause* [else_clause]"""
        c = [self._next(), self.expr(), self._take("COLON"), self.suite()]
        types = self.types
        while types[self.i] == "ELIF":
            c.append(self.b.elif_clause([self._next(), self.expr(), self._take("COLON"), self.suite()]))
        if types[self.i] == "ELSE":
            c.append(self.b.else_clause([self._next(), self._take("COLON"), self.suite()]))
        return self.b.if_stmt(c)

    def for_stmt(self):
        """for_stmt: "for" NAME "in" expr ":" suite"""
        return self.b.for_stmt([self._next(), self._take("NAME"), self._take("IN"), self.expr(),
                                self._take("COLON"), self.suite()])

    # expressions ------------------------------------------------------------------------
    def expr(self):
        """?expr: or_expr | or_expr "if" or_expr "else" expr (a lone string or name, the most
        frequent expression, built here: an end follows it, so no rule continues it)"""
        i = self.i
        types = self.types
        if types[i + 1] in _ENDS:
            kind = types[i]
            if kind == "STRING":
                text = self.values[i]
                if text[0] != "f" and "\\" not in text:
                    self.i = i + 1
                    span = self._tspan(i)
                    node = _new(_StrLit)
                    _str_value(node, text[1:-1])
                    _str_raw(node, text)
                    _str_span(node, span)
                    _str_parens(node, ())
                    return node
            elif kind == "NAME":
                self.i = i + 1
                span = self._tspan(i)
                node = _new(_Name)
                _name_id(node, self.values[i])
                _name_span(node, span)
                _name_parens(node, ())
                return node
        left = self.or_expr()
        if self.types[self.i] != "IF":
            return left
        if_ = self._next()
        cond = self.or_expr()
        return self.b.conditional([left, if_, cond, self._take("ELSE"), self.expr()])

    def or_expr(self):
        """?or_expr: and_expr | or_expr "or" and_expr, and the first and_expr's
        ``?and_expr: not_expr | and_expr "and" not_expr`` inline: unless it begins with "not",
        its first operand is a factor (the leftmost of every rule down to it), so that is
        read first, and the rules above it continue from it (none when an end follows)."""
        types = self.types
        if types[self.i] == "NOT":
            left = self.not_expr()
        else:
            left = self.factor()
            if types[self.i] in _ENDS:
                return left
            left = self.comparison(left)
        while types[self.i] == "AND":
            left = self.b.and_op([left, self._next(), self.not_expr()])
        while types[self.i] == "OR":
            left = self.b.or_op([left, self._next(), self.and_expr()])
        return left

    def and_expr(self):
        """?and_expr: not_expr | and_expr "and" not_expr"""
        left = self.not_expr()
        while self.types[self.i] == "AND":
            left = self.b.and_op([left, self._next(), self.not_expr()])
        return left

    def not_expr(self):
        """?not_expr: comparison | "not" not_expr"""
        if self.types[self.i] == "NOT":
            return self.b.not_op([self._next(), self.not_expr()])
        return self.comparison()

    def comparison(self, left=None):
        """?comparison: sum | sum COMP_OP sum | sum "in" sum | sum "not" "in" sum (one operator:
        ``a < b < c`` is a syntax error). ``left``: its first factor, already read."""
        left = self.sum(left)
        kind = self.types[self.i]
        if kind == "COMP_OP":
            return self.b.compare([left, self._next(), self.sum()])
        if kind == "IN":
            return self.b.in_op([left, self._next(), self.sum()])
        if kind == "NOT":
            not_ = self._next()
            return self.b.not_in_op([left, not_, self._take("IN"), self.sum()])
        return left

    def sum(self, left=None):
        """?sum: term | sum PLUS term | sum MINUS term (the builder's ``binop``). ``left``: its
        first factor, already read."""
        left = self.term(left)
        types = self.types
        while types[self.i] in ("PLUS", "MINUS"):
            op = self.values[self.i]
            self.i += 1
            right = self.term()
            left = _BinOp(op, left, right, _joined(left.span, right.span))
        return left

    def term(self, left=None):
        """?term: factor | term MUL_OP factor (the builder's ``binop``). ``left``: its first
        factor, already read."""
        if left is None:
            left = self.factor()
        types = self.types
        while types[self.i] == "MUL_OP":
            op = self.values[self.i]
            self.i += 1
            right = self.factor()
            left = _BinOp(op, left, right, _joined(left.span, right.span))
        return left

    def factor(self):
        """?factor: postfix | MINUS factor"""
        if self.types[self.i] == "MINUS":
            return self.b.neg([self._next(), self.factor()])
        return self.postfix()

    def postfix(self):
        """?postfix: atom | postfix "." NAME | postfix "[" expr "]" | postfix "(" [arg ("," arg)* [","]] ")"
        (the builder's ``attr``, ``index`` and ``call``)"""
        node = self.atom()
        types = self.types
        while True:
            i = self.i
            kind = types[i]
            if kind == "DOT":
                if types[i + 1] != "NAME":
                    raise Decline()
                self.i = i + 2
                name_span = self._tspan(i + 1)
                node = _Attr(node, self.values[i + 1], name_span, _joined(node.span, name_span))
            elif kind == "LSQB":
                node = self.b.index([node, self._next(), self.expr(), self._take("RSQB")])
            elif kind == "LPAR":
                self.i = i + 1
                positional: list = []
                keywords: list = []
                if types[self.i] != "RPAR":
                    self.arg(positional, keywords)
                    while types[self.i] == "COMMA":
                        self.i += 1
                        if types[self.i] == "RPAR":
                            break
                        self.arg(positional, keywords)
                close = self.i
                if types[close] != "RPAR":
                    raise Decline()
                self.i = close + 1
                node = _Call(node, tuple(positional), tuple(keywords), types[close - 1] == "COMMA",
                             _joined(node.span, self._tspan(close)))
            else:
                return node

    def arg(self, positional: list, keywords: list) -> None:
        """arg: expr | NAME "=" expr, appended to ``positional`` or ``keywords`` (a positional
        argument after a keyword one: the builder's error, so declined)."""
        i = self.i
        types = self.types
        if types[i] == "NAME" and types[i + 1] == "EQUAL":
            name_span = self._tspan(i)
            self.i = i + 2
            keywords.append(_Keyword(self.values[i], name_span, self.expr()))
        elif keywords:
            raise Decline()
        else:
            positional.append(self.expr())

    def atom(self):
        """?atom: NAME | INT | FLOAT | STRING | LONG_STRING | bools | none | list_lit | list_comp |
        dict_lit | dict_comp | "(" expr ")" (a name or a string without escapes as the
        builder's ``name`` and ``string_lit`` build them)"""
        i = self.i
        kind = self.types[i]
        if kind == "NAME":
            self.i = i + 1
            node = _new(_Name)
            _name_id(node, self.values[i])
            _name_span(node, self._tspan(i))
            _name_parens(node, ())
            return node
        if kind == "STRING":
            text = self.values[i]
            if text[0] != "f" and "\\" not in text:
                self.i = i + 1
                node = _new(_StrLit)
                _str_value(node, text[1:-1])
                _str_raw(node, text)
                _str_span(node, self._tspan(i))
                _str_parens(node, ())
                return node
        build = self.literal.get(kind)
        if build is not None:
            self.i = i + 1
            return build([make((kind, self.values[i], self.starts[i], self.ends[i]))])
        if kind == "LSQB":
            return self._bracketed("RSQB", self.expr, _list_lit, self.b.list_comp)
        if kind == "LBRACE":
            return self._bracketed("RBRACE", self.dict_item, _dict_lit, self.b.dict_comp)
        if kind == "LPAR":
            return self.b.atom([self._next(), self.expr(), self._take("RPAR")])
        raise Decline()

    def _bracketed(self, closer: str, item, literal, comprehension):
        """ "[" [expr ("," expr)* [","]] "]" | "[" expr comp_for "]", and the same of dict_item
        in {} (the builder's ``list_lit``/``dict_lit``; ``comprehension`` its method)"""
        types = self.types
        opener = self.i
        self.i = opener + 1
        items = []
        if types[self.i] != closer:
            items.append(item())
            if types[self.i] == "FOR":
                c = [self._tok(opener), items[0], self.comp_for(), self._take(closer)]
                return comprehension(c)
            while types[self.i] == "COMMA":
                self.i += 1
                if types[self.i] == closer:
                    break
                items.append(item())
        close = self.i
        if types[close] != closer:
            raise Decline()
        self.i = close + 1
        base = self.base
        return literal(tuple(items), types[close - 1] == "COMMA",
                       self.span(base + self.starts[opener], base + self.ends[close]))

    def dict_item(self):
        """dict_item: expr ":" expr (the builder's: a (key, value) pair)"""
        key = self.expr()
        if self.types[self.i] != "COLON":
            raise Decline()
        self.i += 1
        return (key, self.expr())

    def comp_for(self):
        """comp_for: "for" NAME "in" or_expr comp_if*   (comp_if: "if" or_expr)"""
        c = [self._next(), self._take("NAME"), self._take("IN"), self.or_expr()]
        while self.types[self.i] == "IF":
            c.append(self.b.comp_if([self._next(), self.or_expr()]))
        return self.b.comp_for(c)
