"""Builds :mod:`rcpc.core.syntax.ast` nodes inline, as a parser reduces each rule: the fast
recursive-descent parser (:mod:`rcpc.core.syntax.descent`) or lark's LALR parser (the
reference, :mod:`rcpc.core.syntax.parser`), with child lists of the same shape. lark is not
imported here: a token is told from a node by :data:`~rcpc.core.syntax.tokens.TOKEN_TYPES`."""

from __future__ import annotations


from rcpc.core import record
from rcpc.core.diagnostics import error
from rcpc.core.limits import INT_LIMIT
from rcpc.core.source import Source, Span, joined
from rcpc.core.syntax import ast
from rcpc.core.syntax.tokens import TOKEN_TYPES


def _lit_int(text: str, span) -> int:
    digits = text.replace("_", "")
    if len(digits) > 19 or int(digits) >= INT_LIMIT:
        raise error("E0806", f"integer {text[:24]}{'...' if len(text) > 24 else ''} is out of the 64-bit range",
                    span, hint=f"ints lie between -{INT_LIMIT} and {INT_LIMIT - 1}")
    return int(digits)


def _node_span(node) -> Span:
    if type(node) is tuple:  # a dict item (key, value)
        return _joined(node[0].span, node[1].span)
    if type(node) is ast.Keyword:
        return _joined(node.name_span, node.value.span)
    return node.span


_joined = joined  # first's start to last's end


_STAR = object()  # the '*' of a parameter list


def _nodes(children) -> tuple:
    return tuple(c for c in children if not isinstance(c, TOKEN_TYPES))


def _trailing_comma(children) -> bool:
    """A comma just before the closing bracket (the last child)."""
    before = children[-2]
    return isinstance(before, TOKEN_TYPES) and before.type == "COMMA"


class AstBuilder:
    """Builds AST nodes with spans, run inline by the parser (lark's ``transformer=``, or
    :mod:`rcpc.core.syntax.descent`): a method per grammar rule (or alias) gets the rule's
    children, every token kept (lark's ``keep_all_tokens``), so a node's span runs from its
    first token to its last, brackets included. ``source``/``base`` are set by the parser for
    each parse (``base`` is the offset of the parsed text in the file, non-zero inside
    f-strings); ``parse_inner(text, offset)`` parses an f-string replacement field."""

    source = None
    base = 0
    parse_inner = None

    def _tspan(self, tok) -> Span:
        return self.source.span(self.base + tok.start_pos, self.base + tok.end_pos)

    def _span(self, children) -> Span:
        first, last = children[0], children[-1]
        a = self._tspan(first) if isinstance(first, TOKEN_TYPES) else _node_span(first)
        if last is first:
            return a
        return _joined(a, self._tspan(last) if isinstance(last, TOKEN_TYPES) else _node_span(last))

    # statements -------------------------------------------------------------------------
    def start(self, c):
        return list(_nodes(c))

    def assign(self, c):
        name, _, value = c
        return ast.Assign(name.value, self._tspan(name), value, self._span(c))

    def _plain(self, tok, what: str):
        """The string literal ``tok`` of a load() (its path, or a name it loads): E0205 for an
        f-string, which the grammar's STRING also reads."""
        lit = self._string(tok)
        if type(lit) is not ast.StrLit:
            raise error("E0205", f"a load {what} is a plain string, not an f-string", lit.span,
                        hint="loads are resolved before evaluation, so they cannot depend on values")
        return lit

    def load_stmt(self, c):
        path = c[2]
        lit = self._plain(path, "path")
        return ast.Load(lit.value, lit.raw, self._tspan(path), _nodes(c[3:]), _trailing_comma(c), self._span(c))

    def load_same(self, c):
        s = self._plain(c[0], "name")
        return ast.LoadName(s.value, s.value, s.raw, s.span, s.span)

    def load_alias(self, c):
        name, _, tok = c
        s = self._plain(tok, "name")
        return ast.LoadName(name.value, s.value, s.raw, self._tspan(name), self._span(c))

    def def_stmt(self, c):
        name = c[1]
        close = next(i for i, t in enumerate(c) if isinstance(t, TOKEN_TYPES) and t.type == "RPAR")
        params = _nodes(c[3:close])
        seen_star = False
        out = []
        for p in params:
            if p is _STAR:
                seen_star = True
                continue
            if p.default is None and not seen_star and any(q.default is not None for q in out):
                raise error("E0001", f"parameter '{p.name}' without a default follows one with a default",
                            p.span, hint="give it a default, or put it after '*' (keyword-only)")
            out.append(record.evolve(p, keyword_only=seen_star))
        header = _joined(self._tspan(c[0]), self._tspan(c[close + 1]))
        body = c[-1]
        return ast.Def(name.value, self._tspan(name), tuple(out), _trailing_comma(c[:close + 1]), body,
                       header, _joined(header, _node_span(body[-1])))

    def fparam_plain(self, c):
        return ast.Parameter(c[0].value, self._tspan(c[0]), None, False)

    def fparam_default(self, c):
        return ast.Parameter(c[0].value, self._tspan(c[0]), c[2], False)

    def fparam_star(self, c):
        if c[0].value != "*":
            raise error("E0001", f"unexpected {c[0].value!r} in a parameter list", self._tspan(c[0]),
                        hint="parameters are NAME, NAME = default, or '*' before keyword-only ones")
        return _STAR

    def suite(self, c):
        return _nodes(c)

    def return_stmt(self, c):
        return ast.Return(c[1] if len(c) > 1 else None, self._span(c))

    def if_stmt(self, c):
        branches = [(c[1], c[3])]
        orelse = ()
        for part in c[4:]:
            if part[0] == "elif":
                branches.append(part[1:])
            else:
                orelse = part[1]
        last = orelse or branches[-1][1]
        return ast.If(tuple(branches), orelse, _joined(self._tspan(c[0]), _node_span(last[-1])))

    def elif_clause(self, c):
        return ("elif", c[1], c[3])

    def else_clause(self, c):
        return ("else", c[2])

    def for_stmt(self, c):
        var = c[1]
        return ast.For(var.value, self._tspan(var), c[3], c[5], _joined(self._tspan(c[0]), _node_span(c[5][-1])))

    def expr_stmt(self, c):
        return ast.ExprStmt(c[0], _node_span(c[0]))

    # expressions ------------------------------------------------------------------------
    def conditional(self, c):
        then, _, cond, _, orelse = c
        return ast.Conditional(cond, then, orelse, self._span(c))

    def or_op(self, c):
        return ast.BoolOp("or", c[0], c[2], self._span(c))

    def and_op(self, c):
        return ast.BoolOp("and", c[0], c[2], self._span(c))

    def not_op(self, c):
        return ast.Not(c[1], self._span(c))

    def compare(self, c):
        return ast.Compare(c[1].value, c[0], c[2], self._span(c))

    def in_op(self, c):
        return ast.Compare("in", c[0], c[2], self._span(c))

    def not_in_op(self, c):
        return ast.Compare("not in", c[0], c[3], self._span(c))

    def binop(self, c):
        return ast.BinOp(c[1].value, c[0], c[2], self._span(c))

    def neg(self, c):
        return ast.Neg(c[1], self._span(c))

    def attr(self, c):
        return ast.Attr(c[0], c[2].value, self._tspan(c[2]), self._span(c))

    def index(self, c):
        return ast.Index(c[0], c[2], self._span(c))

    def call(self, c):
        positional, keywords = [], []
        for a in _nodes(c[2:-1]):
            if type(a) is ast.Keyword:
                keywords.append(a)
            elif keywords:
                raise error("E0001", "positional argument after a keyword argument",
                            _node_span(a), hint="put positional arguments first")
            else:
                positional.append(a)
        return ast.Call(c[0], tuple(positional), tuple(keywords), _trailing_comma(c), self._span(c))

    def arg(self, c):
        return c[0]

    def kwarg(self, c):
        name, _, value = c
        return ast.Keyword(name.value, self._tspan(name), value)

    def atom(self, c):  # "(" expr ")"
        inner = c[1]
        return record.evolve(inner, parens=inner.parens + (ast.Paren(self._span(c)),))

    # atoms ------------------------------------------------------------------------------
    def name(self, c):
        return ast.Name(c[0].value, self._tspan(c[0]))

    def int_lit(self, c):
        tok = c[0]
        span = self._tspan(tok)
        return ast.IntLit(_lit_int(tok.value, span), tok.value, span)

    def float_lit(self, c):
        tok = c[0]
        value = float(tok.value.replace("_", ""))
        if value in (float("inf"), float("-inf")):
            raise error("E0806", f"float {tok.value[:24]} is out of range", self._tspan(tok),
                        hint="floats are 64-bit: at most about 1.8e308")
        return ast.FloatLit(value, tok.value, self._tspan(tok))

    def bool_lit(self, c):
        return ast.BoolLit(c[0].value in ("True", "true"), c[0].value, self._tspan(c[0]))

    def none_lit(self, c):
        return ast.NoneLit(c[0].value, self._tspan(c[0]))

    def string_lit(self, c):
        return self._string(c[0])

    def list_lit(self, c):
        return ast.ListLit(_nodes(c), _trailing_comma(c), self._span(c))

    def dict_lit(self, c):
        return ast.DictLit(_nodes(c), _trailing_comma(c), self._span(c))

    def dict_item(self, c):
        return (c[0], c[2])

    def list_comp(self, c):
        return ast.Comprehension(None, c[1], c[2], self._span(c))

    def dict_comp(self, c):
        key, value = c[1]
        return ast.Comprehension(key, value, c[2], self._span(c))

    def comp_for(self, c):
        var = c[1]
        return ast.CompFor(var.value, self._tspan(var), c[3], tuple(c[4:]), self._span(c))

    def comp_if(self, c):
        return c[1]

    # strings ----------------------------------------------------------------------------
    def _string(self, tok):
        text = tok.value
        is_f = text[0] == "f"
        quote_len = 3 if text[int(is_f):int(is_f) + 3] in ('"""', "'''") else 1
        body_start = int(is_f) + quote_len
        body = text[body_start:len(text) - quote_len]
        offset = self.base + tok.start_pos + body_start
        span = self._tspan(tok)
        if not is_f:
            return ast.StrLit(unescape(body, self.source, offset), text, span)
        return ast.FString(tuple(self._fstring_parts(body, offset)), text, span)

    def _fstring_parts(self, body: str, offset: int):
        parts: list = []
        literal: list[str] = []
        lit_start = 0
        i, n = 0, len(body)

        def flush(end):
            if literal:
                parts.append(unescape("".join(literal), self.source, offset + lit_start))
                literal.clear()

        while i < n:
            c = body[i]
            if c == "\\" and i + 1 < n:
                if not literal:
                    lit_start = i
                literal.append(body[i:i + 2])
                i += 2
            elif c == "{" and body.startswith("{{", i) or c == "}" and body.startswith("}}", i):
                if not literal:
                    lit_start = i
                literal.append(c)
                i += 2
            elif c == "{":
                close = body.find("}", i + 1)
                if close == -1:
                    raise error("E0001", "unclosed '{' in f-string", self.source.span(offset + i, offset + i + 1),
                                hint="write '{{' for a literal brace")
                flush(i)
                inner = body[i + 1:close]
                if not inner.strip():
                    raise error("E0001", "empty replacement field in f-string",
                                self.source.span(offset + i, offset + close + 1),
                                hint="write '{{}}' for literal braces")
                parts.append(self.parse_inner(inner, offset + i + 1))
                i = close + 1
            elif c == "}":
                raise error("E0001", "single '}' in f-string", self.source.span(offset + i, offset + i + 1),
                            hint="write '}}' for a literal brace")
            else:
                if not literal:
                    lit_start = i
                literal.append(c)
                i += 1
        flush(n)
        return parts


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"',
            "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_HEX_LEN = {"x": 2, "u": 4, "U": 8}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")  # int(s, 16) also takes '+', '-', '_', spaces


def unescape(body: str, source: Source, start: int) -> str:
    """Decode the escapes of a string body (``\\n``, ``\\t``, ``\\xhh``, ``\\uhhhh``, ...).

    ``start`` is the body's offset in ``source``, for the span of a bad escape (``E0002``).
    """
    if "\\" not in body:
        return body
    out = []
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < n else ""
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt == "\n":
            i += 2
        elif body.startswith("\r\n", i + 1):  # backslash-CRLF joins lines too
            i += 3
        elif nxt in _HEX_LEN:
            digits = body[i + 2:i + 2 + _HEX_LEN[nxt]]
            span = source.span(start + i, start + i + 2 + len(digits))
            if len(digits) != _HEX_LEN[nxt] or not _HEX_DIGITS.issuperset(digits):
                raise error("E0002", f"bad escape \\{nxt}{digits}", span,
                            hint=f"\\{nxt} takes exactly {_HEX_LEN[nxt]} hex digits (0-9, a-f, A-F)")
            code = int(digits, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise error("E0002", f"escape \\{nxt}{digits} is not a Unicode character", span,
                            hint="a character is at most \\U0010ffff and not a surrogate (d800-dfff)")
            out.append(chr(code))
            i += 2 + _HEX_LEN[nxt]
        else:
            raise error("E0002", f"unknown escape \\{nxt}", source.span(start + i, start + i + 2),
                        hint="write \\\\ for a backslash")
    return "".join(out)
