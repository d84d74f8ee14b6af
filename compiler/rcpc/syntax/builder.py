"""lark Transformer that builds :mod:`rcpc.syntax.ast` nodes (run inline by the LALR parser)."""

from __future__ import annotations

from lark import Token, Transformer, v_args

from rcpc.diagnostics import error
from rcpc.limits import INT_LIMIT
from rcpc.syntax import ast


def _lit_int(text: str, span) -> int:
    digits = text.replace("_", "")
    if len(digits) > 19 or int(digits) >= INT_LIMIT:
        raise error("E0806", f"integer {text[:24]}{'...' if len(text) > 24 else ''} is out of the 64-bit range",
                    span, hint=f"ints lie between -{INT_LIMIT} and {INT_LIMIT - 1}")
    return int(digits)


@v_args(meta=True, inline=True)
class AstBuilder(Transformer):
    """Builds AST nodes with spans. ``source``/``base`` are set by the parser for each parse
    (``base`` is the offset of the parsed text in the file, non-zero inside f-strings)."""

    source = None
    base = 0
    parse_inner = None

    def _span(self, meta):
        return self.source.span(self.base + meta.start_pos, self.base + meta.end_pos)

    def _tspan(self, tok: Token):
        return self.source.span(self.base + tok.start_pos, self.base + tok.end_pos)

    # statements -------------------------------------------------------------------------
    def start(self, meta, *stmts):
        return list(stmts)

    def assign(self, meta, name, value):
        return ast.Assign(str(name), self._tspan(name), value, self._span(meta))

    def load_stmt(self, meta, path, *names):
        lit = self._string(path)
        if type(lit) is not ast.StrLit:
            raise error("E0205", "a load path is a plain string, not an f-string", lit.span,
                        hint="loads are resolved before evaluation, so they cannot depend on values")
        path_value = lit.value
        return ast.Load(path_value, self._tspan(path), tuple(names), self._span(meta))

    def load_same(self, meta, tok):
        s = self._string(tok)
        return ast.LoadName(s.value, s.value, s.span)

    def load_alias(self, meta, name, tok):
        return ast.LoadName(str(name), self._string(tok).value, self._span(meta))

    def expr_stmt(self, meta, expr):
        return ast.ExprStmt(expr, self._span(meta))

    # expressions ------------------------------------------------------------------------
    def conditional(self, meta, then, cond, orelse):
        return ast.Conditional(cond, then, orelse, self._span(meta))

    def or_op(self, meta, left, right):
        return ast.BoolOp("or", left, right, self._span(meta))

    def and_op(self, meta, left, right):
        return ast.BoolOp("and", left, right, self._span(meta))

    def not_op(self, meta, operand):
        return ast.Not(operand, self._span(meta))

    def compare(self, meta, left, op, right):
        return ast.Compare(str(op), left, right, self._span(meta))

    def in_op(self, meta, left, right):
        return ast.Compare("in", left, right, self._span(meta))

    def not_in_op(self, meta, left, right):
        return ast.Compare("not in", left, right, self._span(meta))

    def binop(self, meta, left, op, right):
        return ast.BinOp(str(op), left, right, self._span(meta))

    def neg(self, meta, _minus, operand):
        return ast.Neg(operand, self._span(meta))

    def attr(self, meta, obj, name):
        return ast.Attr(obj, str(name), self._tspan(name), self._span(meta))

    def index(self, meta, obj, idx):
        return ast.Index(obj, idx, self._span(meta))

    def call(self, meta, func, *args):
        positional, keywords = [], []
        for a in args:
            if isinstance(a, ast.Keyword):
                keywords.append(a)
            elif keywords:
                raise error("E0001", "positional argument after a keyword argument",
                            _expr_span(a), hint="put positional arguments first")
            else:
                positional.append(a)
        return ast.Call(func, tuple(positional), tuple(keywords), self._span(meta))

    def arg(self, meta, expr):
        return expr

    def kwarg(self, meta, name, value):
        return ast.Keyword(str(name), self._tspan(name), value)

    # atoms ------------------------------------------------------------------------------
    def name(self, meta, tok):
        return ast.Name(str(tok), self._tspan(tok))

    def int_lit(self, meta, tok):
        return ast.IntLit(_lit_int(str(tok), self._tspan(tok)), str(tok), self._tspan(tok))

    def float_lit(self, meta, tok):
        value = float(str(tok).replace("_", ""))
        if value in (float("inf"), float("-inf")):
            raise error("E0806", f"float {str(tok)[:24]} is out of range", self._tspan(tok))
        return ast.FloatLit(value, str(tok), self._tspan(tok))

    def bool_lit(self, meta, tok):
        return ast.BoolLit(str(tok) in ("True", "true"), str(tok), self._tspan(tok))

    def none_lit(self, meta, tok):
        return ast.NoneLit(str(tok), self._tspan(tok))

    def string_lit(self, meta, tok):
        return self._string(tok)

    def list_lit(self, meta, *items):
        return ast.ListLit(tuple(items), self._span(meta))

    def dict_lit(self, meta, *items):
        return ast.DictLit(tuple(items), self._span(meta))

    def dict_item(self, meta, key, value):
        return (key, value)

    def list_comp(self, meta, elt, clause):
        return ast.Comprehension(None, elt, clause, self._span(meta))

    def dict_comp(self, meta, item, clause):
        return ast.Comprehension(item[0], item[1], clause, self._span(meta))

    def comp_for(self, meta, var, iterable, *conds):
        return ast.CompFor(str(var), self._tspan(var), iterable, tuple(conds), self._span(meta))

    def comp_if(self, meta, cond):
        return cond

    # strings ----------------------------------------------------------------------------
    def _string(self, tok: Token):
        from rcpc.syntax.parser import unescape

        text = str(tok)
        is_f = text[0] == "f"
        quote_len = 3 if text[int(is_f):int(is_f) + 3] in ('"""', "'''") else 1
        body_start = int(is_f) + quote_len
        body = text[body_start:len(text) - quote_len]
        offset = self.base + tok.start_pos + body_start
        span = self._tspan(tok)
        if not is_f:
            return ast.StrLit(unescape(body, self.source, offset), span)
        return ast.FString(tuple(self._fstring_parts(body, offset)), span)

    def _fstring_parts(self, body: str, offset: int):
        from rcpc.syntax.parser import unescape

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


def _expr_span(node):
    return getattr(node, "span", None) or node.value.span
