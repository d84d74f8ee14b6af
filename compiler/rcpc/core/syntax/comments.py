"""Comments attached to the AST: which node each comment of a file belongs to, and where
the blank lines are (what ``rcpc fmt`` needs to print a module back; docs/style.md).

The parser collects a file's comments (:attr:`ast.Module.comments`); :func:`attach` places
each one, as buildifier's ``Comments`` (``Before``/``Suffix``/``After``) and go-jsonnet's
fodder do, on an *element* — a statement; an argument, list item, dict entry, load path or
load name; a comprehension's element, ``for`` clause or ``if`` clause; the expression inside
parentheses or an index's brackets — or on a *bracket pair*:

* **leading**: own-line comments above the element they precede;
* **trailing**: one comment after an element (and its comma) on the element's last line;
* **after_open**: a comment after an opening bracket, on its line;
* **before_close** (dangling): own-line comments before a closing bracket;
* **end**: comments after the last statement of the file.

A comment in the middle of an element (after an operator, before ``else``) becomes a leading
comment of the innermost element holding it. ``blank`` records a blank line just above an
element (below its leading comments), :meth:`Attached.blank_before` one above a comment.

Keys: notes are looked up by :func:`key` of an element or bracket pair: an expression's key is
its outermost :class:`~ast.Paren` when it has parentheses, else the node itself (the pair of
parentheses ``parens[i]`` holds the expression with ``parens[:i]``); a dict entry's key is its
``(key, value)`` tuple; statements, keyword arguments, load names and ``for`` clauses are
their own key; :func:`part` names the rest (a load's path, a dict comprehension's
``key: value``, an ``if`` clause). Keys are identities within one module.
"""

from __future__ import annotations

from rcpc.core import record
from rcpc.core.syntax import ast
from rcpc.core.syntax.walk import children

__all__ = ["attach", "Attached", "Notes", "key", "part"]


@record.define
class Notes:
    """The comments of one element or bracket pair (see the module docstring)."""

    leading: list = record.Factory(list)
    trailing: ast.Comment | None = None
    after_open: ast.Comment | None = None
    before_close: list = record.Factory(list)
    blank: bool = False


_EMPTY = Notes()


class Attached:
    """Every comment of a module placed on its element or bracket pair."""

    __slots__ = ("_notes", "end", "_blank")

    def __init__(self, notes: dict, end: list, blank: set):
        self._notes = notes
        self.end: list = end  # comments after the last statement
        self._blank = blank

    def of(self, k) -> Notes:
        """The :class:`Notes` of key ``k`` (:func:`key`, :func:`part`); do not modify them."""
        return self._notes.get(k, _EMPTY)

    def placed(self) -> list:
        """Every comment placed, once each (for checks: all of the module's comments)."""
        out = list(self.end)
        for n in self._notes.values():
            out.extend(n.leading)
            out.extend(n.before_close)
            out.extend(c for c in (n.trailing, n.after_open) if c is not None)
        return out

    def blank_before(self, comment: ast.Comment) -> bool:
        """A blank line between ``comment`` and the token or comment before it."""
        return id(comment) in self._blank


def key(node):
    """The notes key of a node as an element: its outermost parentheses, else itself."""
    parens = getattr(node, "parens", None)
    return id(parens[-1]) if parens else id(node)


def part(kind: str, node):
    """The notes key of an element that is not a node: ``("path", load)``,
    ``("pair", dict_comprehension)`` or ``("if", condition)``."""
    return (kind, id(node))


class _Elem:
    __slots__ = ("key", "start", "end", "last", "depth")

    def __init__(self, k, start: int, end: int, last: int, depth: int):
        self.key = k
        self.start = start  # offset of the first token
        self.end = end      # offset after the last token
        self.last = last    # offset after the comma following it (end when none)
        self.depth = depth


_SPACE = frozenset(" \t\f\r\n")

# Nodes whose span starts (ends) at a child's, whose parentheses the span leaves out.
_LEFT = {ast.BinOp: lambda n: n.left, ast.BoolOp: lambda n: n.left, ast.Compare: lambda n: n.left,
         ast.Conditional: lambda n: n.then, ast.Index: lambda n: n.obj, ast.Attr: lambda n: n.obj,
         ast.Call: lambda n: n.func}
_RIGHT = {ast.BinOp: lambda n: n.right, ast.BoolOp: lambda n: n.right, ast.Compare: lambda n: n.right,
          ast.Conditional: lambda n: n.orelse, ast.Neg: lambda n: n.operand, ast.Not: lambda n: n.operand}


_BLOCKS = (ast.Def, ast.If, ast.For)


def _block_end(lay, body) -> int:
    """Offset after the last token of a block's last statement."""
    last = body[-1]
    t = type(last)
    if t in _BLOCKS:
        return _block_end(lay, last.orelse or last.branches[-1][1] if t is ast.If else last.body)
    if t is ast.Return:
        return lay.span_end(last.span) if last.value is None else lay.after(last.value)
    return lay.after(last.value if t is ast.Assign else last.expr)


class _Layout:
    """Elements and bracket pairs of a module, by source offsets."""

    def __init__(self, module: ast.Module):
        self.source = source = module.source
        self.text = text = source.text
        self.starts = source._starts
        self.n = len(text)
        self.comment_ends: dict[int, int] = {}  # offset after a comment's raw text -> its start
        for c in module.comments:
            start = self.span_start(c.span)
            end = text.find("\n", start)
            self.comment_ends[self.n if end < 0 else end] = start
        self.elems: list[_Elem] = []
        self.opens: dict[int, object] = {}   # offset after an opening bracket -> key
        self.closes: dict[int, object] = {}  # offset of a closing bracket -> key
        self.stmts = []
        for stmt in module.stmts:
            self.stmts.append(self._stmt(stmt))

    # offsets -------------------------------------------------------------------------------
    def line(self, offset: int) -> int:
        """1-based line of the character at ``offset``."""
        return self.source.line_col(offset)[0]

    def span_start(self, span) -> int:
        return self.starts[span.line - 1] + span.col - 1

    def span_end(self, span) -> int:
        return self.starts[span.end_line - 1] + span.end_col - 1

    def forward(self, pos: int) -> int:
        """The offset of the next token at or after ``pos`` (``n`` at the end)."""
        text, n = self.text, self.n
        while pos < n:
            c = text[pos]
            if c in _SPACE:
                pos += 1
            elif c == "#":
                end = text.find("\n", pos)
                pos = n if end < 0 else end
            elif c == "\\":  # a line continuation (the only other thing between tokens)
                pos += 2 if text.startswith("\n", pos + 1) else 3
            else:
                break
        return pos

    def back(self, pos: int, over_comments: bool) -> int:
        """The offset after the token (or, unless ``over_comments``, the comment) before
        ``pos``; 0 when there is none."""
        text = self.text
        ends = self.comment_ends
        while pos > 0:
            start = ends.get(pos)
            if start is not None and start < pos:
                if not over_comments:
                    return pos
                pos = start
                continue
            c = text[pos - 1]
            if c in _SPACE:
                pos -= 1
            elif c == "\\" and text[pos:pos + 1] in ("\r", "\n"):  # a line continuation
                pos -= 1
            else:
                return pos
        return 0

    # extents (parentheses included) ----------------------------------------------------------
    def first(self, node) -> int:
        """Offset of ``node``'s first token, its parentheses included."""
        if type(node) is tuple:  # a dict entry
            return self.first(node[0])
        if type(node) is ast.Keyword:
            return self.span_start(node.name_span)
        if node.parens:
            return self.span_start(node.parens[-1].span)
        start = self.span_start(node.span)
        if type(node) in _LEFT:  # its first token is its first operand's (parentheses excluded)
            return min(start, self.first(_LEFT[type(node)](node)))
        return start

    def after(self, node) -> int:
        """Offset after ``node``'s last token, its parentheses included."""
        if type(node) is tuple:
            return self.after(node[1])
        if type(node) is ast.Keyword:
            return self.after(node.value)
        if node.parens:
            return self.span_end(node.parens[-1].span)
        end = self.span_end(node.span)
        if type(node) in _RIGHT:
            return max(end, self.after(_RIGHT[type(node)](node)))
        return end

    # elements and brackets -------------------------------------------------------------------
    def elem(self, k, start: int, end: int, depth: int, comma: bool) -> _Elem:
        last = end
        if comma:
            nxt = self.forward(end)
            if nxt < self.n and self.text[nxt] == ",":
                last = nxt + 1
        e = _Elem(k, start, end, last, depth)
        self.elems.append(e)
        return e

    def brackets(self, k, open_at: int, close_at: int) -> None:
        self.opens[open_at + 1] = k
        self.closes[close_at] = k

    def _stmt(self, stmt) -> _Elem:
        t = type(stmt)
        if t is ast.Assign:
            self.expr(stmt.value, 0)
            return self.elem(id(stmt), self.span_start(stmt.span), self.after(stmt.value), 0, False)
        if t is ast.Load:
            start, end = self.span_start(stmt.span), self.span_end(stmt.span)
            self.brackets(id(stmt), self.forward(start + 4), end - 1)
            self.elem(part("path", stmt), self.span_start(stmt.path_span), self.span_end(stmt.path_span), 1, True)
            for ln in stmt.names:
                self.elem(id(ln), self.span_start(ln.span), self.span_end(ln.span), 1, True)
            return self.elem(id(stmt), start, end, 0, False)
        if t in _BLOCKS:
            return self._compound(stmt)
        if t is ast.Return:
            end = self.span_end(stmt.span) if stmt.value is None else self.after(stmt.value)
            if stmt.value is not None:
                self.expr(stmt.value, 0)
            return self.elem(id(stmt), self.span_start(stmt.span), end, 0, False)
        self.expr(stmt.expr, 0)
        return self.elem(id(stmt), self.first(stmt.expr), self.after(stmt.expr), 0, False)

    def _compound(self, stmt) -> _Elem:
        """A def, if or for: its parts, then the statements of its blocks (at depth 0, as
        every statement: a comment before one leads it), then itself."""
        t = type(stmt)
        if t is ast.Def:
            header_end = self.span_end(stmt.span)
            close = self.back(header_end - 1, True) - 1
            self.brackets(part("params", stmt), self.forward(self.span_end(stmt.name_span)), close)
            for p in stmt.params:
                end = self.span_end(p.span) if p.default is None else self.after(p.default)
                if p.default is not None:
                    self.expr(p.default, 1)
                self.elem(id(p), self.span_start(p.span), end, 1, True)
            blocks = [stmt.body]
        elif t is ast.For:
            self.expr(stmt.iter, 0)
            blocks = [stmt.body]
        else:
            blocks = []
            for i, (cond, body) in enumerate(stmt.branches):
                self.expr(cond, 0)
                if i:  # the 'elif' line: a comment above it leads it
                    start = self.back(self.first(cond), True) - 4
                    self.elem(part("elif", cond), start, self.after(cond), 0, False)
                blocks.append(body)
            if stmt.orelse:
                at = self.forward(_block_end(self, stmt.branches[-1][1]))
                self.elem(part("else", stmt), at, at + 4, 0, False)
                blocks.append(stmt.orelse)
        for body in blocks:
            for st in body:
                self._stmt(st)
        return self.elem(id(stmt), self.span_start(stmt.span), _block_end(self, blocks[-1]), 0, False)

    def expr(self, node, depth: int, layers: int | None = None) -> None:
        """Register the elements and brackets inside ``node`` (with its first ``layers``
        pairs of parentheses; all by default) at nesting ``depth``."""
        parens = node.parens
        if layers is None:
            layers = len(parens)
        if layers:
            paren = parens[layers - 1].span
            self.expr(node, depth + 1, layers - 1)
            inner = id(parens[layers - 2]) if layers > 1 else id(node)
            if layers > 1:
                start, end = self.span_start(parens[layers - 2].span), self.span_end(parens[layers - 2].span)
            else:
                start, end = self._bare(node)
            self.elem(inner, start, end, depth + 1, False)
            self.brackets(id(parens[layers - 1]), self.span_start(paren), self.span_end(paren) - 1)
            return
        t = type(node)
        d = depth + 1
        if t is ast.ListLit:
            for item in node.items:
                self.item(item, d, True)
            self.brackets(id(node), self.span_start(node.span), self.span_end(node.span) - 1)
        elif t is ast.DictLit:
            for item in node.items:
                self.expr(item[0], d)
                self.expr(item[1], d)
                self.elem(id(item), self.first(item[0]), self.after(item[1]), d, True)
            self.brackets(id(node), self.span_start(node.span), self.span_end(node.span) - 1)
        elif t is ast.Call:
            self.expr(node.func, depth)
            for a in node.args:
                self.item(a, d, True)
            for kw in node.kwargs:
                self.expr(kw.value, d)
                self.elem(id(kw), self.span_start(kw.name_span), self.after(kw.value), d, True)
            self.brackets(id(node), self.forward(self.after(node.func)), self.span_end(node.span) - 1)
        elif t is ast.Index:
            self.expr(node.obj, depth)
            self.item(node.index, d, False)
            self.brackets(id(node), self.forward(self.after(node.obj)), self.span_end(node.span) - 1)
        elif t is ast.Comprehension:
            if node.key is None:
                self.item(node.elt, d, False)
            else:
                self.expr(node.key, d)
                self.expr(node.elt, d)
                self.elem(part("pair", node), self.first(node.key), self.after(node.elt), d, False)
            clause = node.clause
            self.expr(clause.iter, d)
            self.elem(id(clause), self.span_start(clause.span), self.after(clause.iter), d, False)
            for cond in clause.conds:
                self.expr(cond, d)
                start = self.back(self.first(cond), True) - 2  # the 'if'
                self.elem(part("if", cond), start, self.after(cond), d, False)
            self.brackets(id(node), self.span_start(node.span), self.span_end(node.span) - 1)
        elif t is not ast.FString:  # operators, attributes, leaves (an f-string is one token)
            for child in children(node):
                self.expr(child, depth)

    def item(self, node, depth: int, comma: bool) -> None:
        self.expr(node, depth)
        self.elem(key(node), self.first(node), self.after(node), depth, comma)

    def _bare(self, node) -> tuple[int, int]:
        """The extent of ``node`` without its own parentheses."""
        start, end = self.span_start(node.span), self.span_end(node.span)
        if type(node) in _LEFT:
            start = min(start, self.first(_LEFT[type(node)](node)))
        if type(node) in _RIGHT:
            end = max(end, self.after(_RIGHT[type(node)](node)))
        return start, end

    def blank_between(self, a: int, b: int) -> bool:
        """A whitespace-only line strictly between 1-based lines ``a`` and ``b``."""
        text, starts = self.text, self.starts
        for line in range(a + 1, b):
            end = starts[line] - 1 if line < len(starts) else self.n
            if text[starts[line - 1]:end].strip():
                continue
            return True
        return False


def attached(module: ast.Module) -> Attached:
    """The comments of ``module`` attached to the nodes they belong to, and where blank lines
    are: worked out on first use (the compiler never asks, so it pays only for collecting the
    comments) and kept on the module (``module.attached``)."""
    if module.attached is None:
        module.attached = attach(module)
    return module.attached


def attach(module: ast.Module) -> Attached:
    """Place every comment of ``module`` (parsed by :func:`rcpc.core.syntax.parser.parse`, which
    sets ``module.source``) on its element or bracket pair; see the module docstring."""
    lay = _Layout(module)
    notes: dict = {}

    def of(k) -> Notes:
        got = notes.get(k)
        if got is None:
            got = notes[k] = Notes()
        return got

    by_first: dict[int, _Elem] = {}
    by_last: dict[int, _Elem] = {}
    by_end: dict[int, _Elem] = {}  # elements followed by a comma, by their own end
    for e in lay.elems:  # the outermost wins
        if e.start not in by_first or by_first[e.start].depth > e.depth:
            by_first[e.start] = e
        if e.last not in by_last or by_last[e.last].depth > e.depth:
            by_last[e.last] = e
        if e.end != e.last and (e.end not in by_end or by_end[e.end].depth > e.depth):
            by_end[e.end] = e
        prev = lay.back(e.start, False)
        if prev and lay.blank_between(lay.line(prev - 1), lay.line(e.start)):
            of(e.key).blank = True

    def innermost(lo: int, hi: int) -> _Elem | None:
        best = None
        for e in lay.elems:
            if e.start < lo and hi <= e.last and (best is None or e.depth > best.depth):
                best = e
        return best

    end: list = []
    blank: set = set()
    prev_comment_line = 0
    for c in module.comments:
        start = lay.span_start(c.span)
        p = lay.back(start, True)  # after the token before the comment (0: none)
        p_line = lay.line(p - 1) if p else 0
        before_line = max(p_line, prev_comment_line)
        prev_comment_line = c.span.line
        if before_line and lay.blank_between(before_line, c.span.line):
            blank.add(id(c))
        if not p or p_line < c.span.line:  # on its own line
            raw_end = lay.text.find("\n", start)
            n = lay.forward(lay.n if raw_end < 0 else raw_end)
            if n >= lay.n:
                end.append(c)
            elif n in lay.closes:
                of(lay.closes[n]).before_close.append(c)
            elif n in by_first:
                of(by_first[n].key).leading.append(c)
            else:
                target = (innermost(p, n + 1) if p else None) or lay.stmts[0]
                of(target.key).leading.append(c)
        elif p in lay.opens and of(lay.opens[p]).after_open is None:
            of(lay.opens[p]).after_open = c
        elif p in by_last and of(by_last[p].key).trailing is None:
            of(by_last[p].key).trailing = c
        elif p in by_end and of(by_end[p].key).trailing is None:
            of(by_end[p].key).trailing = c
        else:
            target = innermost(p, p)
            if target is None:  # pragma: no cover - every token is in a statement
                end.append(c)
            else:
                of(target.key).leading.append(c)
    return Attached(notes, end, blank)
