"""``rcpc fmt``: the canonical layout of a recipe file (docs/style.md), comments kept.

:func:`format_source` parses the file twice: with :func:`rcpc.syntax.parser.parse` (so bad
input raises the compiler's :class:`~rcpc.diagnostics.CompileError`), and with
:func:`rcpc.syntax.parser.parse_concrete`, which keeps every token and the comments. The
concrete tree becomes a small layout tree (boxes of elements: call arguments, list items,
dict entries, comprehension clauses, statements), each comment is attached to one element or
box, and the tree is printed by a Wadler/Prettier-style pretty printer at 100 columns:

* a bracketed construct stays on one line when it fits and holds no comment and was not
  written with a trailing comma after its last element ("magic trailing comma"); otherwise
  it is exploded, one element per line, 4 spaces deeper, with a trailing comma; a call or
  list whose only element is a bare list, dict or comprehension hugs it (``json({`` ...
  ``})``, ``[{`` ... ``}]``);
* comments keep their place: own-line comments before the element that follows them (or
  before the closing bracket), trailing comments after the element (or opening bracket)
  they follow; a comment in the middle of an element moves onto its own line above it;
* ``load()`` statements come first, sorted by path; a load's names are sorted within runs
  that comments or blank lines delimit (as buildifier sorts lists);
* runs of blank lines between statements (and between the elements of an exploded box)
  become one blank line; blank lines just inside brackets go;
* literals keep their spelling; a single-quoted string whose body has no ``"`` is written
  with double quotes, its body untouched (the value cannot change); triple-quoted strings
  are kept as written.

The result is checked before it is returned: it must parse to the same syntax tree
(spans aside; loads compared as sets) and hold the same comments. A difference would be a
bug in the formatter, reported as :class:`FormatterBug`, never a silently changed recipe.
"""

from __future__ import annotations

import bisect

from lark import Token, Tree

from rcpc.diagnostics import error
from rcpc.source import Source
from rcpc.syntax import ast
from rcpc.syntax.parser import parse, parse_concrete

WIDTH = 100
INDENT = 4

__all__ = ["format_source", "normalize_string", "FormatterBug", "WIDTH"]


class FormatterBug(AssertionError):
    """The formatted text would not mean what the input means (a bug in rcpc fmt)."""


def format_source(text: str, path: str) -> str:
    """The canonical form of recipe source ``text`` (``path`` is used in diagnostics only).

    Raises :class:`~rcpc.diagnostics.CompileError` for a syntax error, as the compiler does
    (and ``E0801`` for nesting too deep to format, a few hundred levels).
    The result ends with one newline (or is empty for a file of nothing but whitespace)."""
    source = Source(path, text)
    module = parse(source)
    try:
        formatter = _Formatter(text, module)
        out = formatter.run()
        if out != text:  # (text already in canonical form needs no proof)
            _verify(module, formatter.comments, out, path)
    except RecursionError:
        raise error("E0801", "expression nested too deeply to format", source.span(0, 0),
                    hint="split it into several named values") from None
    return out


# ---------------------------------------------------------------------------------------
# layout tree

class Comment:
    __slots__ = ("text", "line", "blank")

    def __init__(self, text: str, line: int, blank: bool):
        self.text = text
        self.line = line
        self.blank = blank  # a blank line before it in the source


class Elem:
    """One element of a box (or a statement): ``node`` with its comments.
    ``first``/``last`` are token indices (``last`` includes a following separator comma,
    ``end`` does not)."""

    __slots__ = ("node", "first", "last", "end", "depth", "before", "after", "blank", "key")

    def __init__(self, node, first: int, last: int, depth: int):
        self.node = node
        self.first = first
        self.last = last
        self.end = last  # the element's own last token (before its comma)
        self.depth = depth
        self.before: list[Comment] = []
        self.after: Comment | None = None
        self.blank = False
        self.key = None  # sort key (loads and load names)


class Box:
    """Brackets around elements: ``kind`` is call, list, dict, load (comma-separated, a
    trailing comma allowed), comp (comprehension clauses), paren or index (one element)."""

    __slots__ = ("kind", "open", "close", "elems", "magic", "open_comment", "end_comments")

    def __init__(self, kind: str, open_: str, close: str, elems: list, magic: bool):
        self.kind = kind
        self.open = open_
        self.close = close
        self.elems = elems
        self.magic = magic
        self.open_comment: Comment | None = None
        self.end_comments: list[Comment] = []

    @property
    def commas(self) -> bool:
        return self.kind in ("call", "list", "dict", "load")


class Leaf:
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text


class Unary:
    __slots__ = ("op", "operand")

    def __init__(self, op, operand):
        self.op, self.operand = op, operand


class Binary:
    __slots__ = ("op", "left", "right")

    def __init__(self, op, left, right):
        self.op, self.left, self.right = op, left, right


class Cond:
    __slots__ = ("then", "cond", "orelse")

    def __init__(self, then, cond, orelse):
        self.then, self.cond, self.orelse = then, cond, orelse


class Attr:
    __slots__ = ("obj", "name")

    def __init__(self, obj, name):
        self.obj, self.name = obj, name


class Postfix:
    """A call ``f(...)``, an index ``x[...]`` or a parenthesized expression (``obj`` None)."""

    __slots__ = ("obj", "box")

    def __init__(self, obj, box):
        self.obj, self.box = obj, box


class Pair:
    """``key: value`` (dict entry), ``name = value`` (keyword argument, load alias)."""

    __slots__ = ("left", "sep", "right")

    def __init__(self, left, sep, right):
        self.left, self.sep, self.right = left, sep, right


class Clause:
    """``for VAR in ITER`` or ``if COND`` of a comprehension."""

    __slots__ = ("head", "expr")

    def __init__(self, head, expr):
        self.head, self.expr = head, expr


class Assign:
    __slots__ = ("name", "value")

    def __init__(self, name, value):
        self.name, self.value = name, value


class LoadStmt:
    __slots__ = ("box",)

    def __init__(self, box):
        self.box = box


_BINARY = {"or_op", "and_op", "compare", "in_op", "not_in_op", "binop"}
_LEAVES = {"name", "int_lit", "float_lit", "string_lit", "bool_lit", "none_lit"}


def normalize_string(text: str) -> str:
    """A string literal's canonical spelling: ``'...'`` becomes ``"..."`` when the body holds
    no ``"`` (escapes stay as written, so the value is the same); anything else is kept."""
    prefix = "f" if text[0] == "f" else ""
    body = text[len(prefix):]
    if body.startswith(("'''", '"""')) or not body.startswith("'"):
        return text
    inner = body[1:-1]
    if '"' in inner:
        return text
    return f'{prefix}"{inner}"'


# ---------------------------------------------------------------------------------------
# building the layout tree from the concrete parse tree

class _Formatter:
    def __init__(self, text: str, module: ast.Module):
        self.text = text
        self.module = module
        self.lines = text.split("\n")
        tree, comments = parse_concrete(text)
        self.tokens: list[Token] = [t for t in tree.scan_values(lambda v: isinstance(v, Token))
                                    if t.type != "_NL"]
        self.tokens.sort(key=lambda t: t.start_pos)
        self.by_start = {t.start_pos: i for i, t in enumerate(self.tokens)}
        self.by_end = {t.end_pos: i for i, t in enumerate(self.tokens)}
        self.starts = [t.start_pos for t in self.tokens]
        self.elems: list[Elem] = []
        self.opens: dict[int, Box] = {}
        self.closes: dict[int, Box] = {}
        self.stmts = [self._stmt(child) for child in tree.children if isinstance(child, Tree)]
        self.header: list[Comment] = []
        self.end_comments: list[Comment] = []
        self.comments = comments
        self._attach(comments)

    # token positions -----------------------------------------------------------------
    def _idx(self, tok: Token) -> int:
        return self.by_start[tok.start_pos]

    def _first(self, node) -> int:
        if isinstance(node, Token):
            return self._idx(node)
        return self.by_start[node.meta.start_pos]

    def _last(self, node) -> int:
        if isinstance(node, Token):
            return self._idx(node)
        return self.by_end[node.meta.end_pos]

    def _elem(self, node, tree_first, tree_last, depth: int) -> Elem:
        e = Elem(node, self._first(tree_first), self._last(tree_last), depth)
        self.elems.append(e)
        return e

    # statements ----------------------------------------------------------------------
    def _stmt(self, t: Tree) -> Elem:
        kind = t.data
        if kind == "assign":
            name, _eq, value = t.children
            node = Assign(str(name), self._expr(value, 0))
        elif kind == "load_stmt":
            node = LoadStmt(self._box("load", "(", ")", t.children[1:], 0, self._load_arg))
        else:
            node = self._expr(t.children[0], 0)
        return self._elem(node, t, t, 0)

    def _load_arg(self, t, depth):
        if isinstance(t, Token):  # the path
            return Leaf(normalize_string(str(t)))
        if t.data == "load_same":
            return Leaf(normalize_string(str(t.children[0])))
        name, _eq, value = t.children
        return Pair(Leaf(str(name)), " = ", Leaf(normalize_string(str(value))))

    # boxes ---------------------------------------------------------------------------
    def _box(self, kind, open_, close, children, depth, conv) -> Box:
        """``children``: the open bracket token, elements and commas, the close token."""
        opener, *inner, closer = children
        elems = []
        magic = bool(inner) and isinstance(inner[-1], Token) and inner[-1].type == "COMMA"
        for child in inner:
            if isinstance(child, Token) and child.type == "COMMA":
                elems[-1].last = self._idx(child)
                continue
            elems.append(self._elem(conv(child, depth + 1), child, child, depth + 1))
        box = Box(kind, open_, close, elems, magic)
        self.opens[self._idx(opener)] = box
        self.closes[self._idx(closer)] = box
        return box

    def _arg(self, t, depth):
        if t.data == "kwarg":
            name, _eq, value = t.children
            return Pair(Leaf(str(name)), " = ", self._expr(value, depth))
        return self._expr(t.children[0], depth)

    def _dict_item(self, t, depth):
        key, _colon, value = t.children
        return Pair(self._expr(key, depth), ": ", self._expr(value, depth))

    def _comp(self, t: Tree, depth: int) -> Box:
        opener, head, clause, closer = t.children
        d = depth + 1
        if t.data == "dict_comp":
            elems = [self._elem(self._dict_item(head, d), head, head, d)]
        else:
            elems = [self._elem(self._expr(head, d), head, head, d)]
        for_tok, var, _in, iterable, *conds = clause.children
        elems.append(self._elem(Clause(f"for {var} in ", self._expr(iterable, d)), for_tok, iterable, d))
        for c in conds:
            elems.append(self._elem(Clause("if ", self._expr(c.children[1], d)), c, c, d))
        box = Box("comp", str(opener), str(closer), elems, False)
        self.opens[self._idx(opener)] = box
        self.closes[self._idx(closer)] = box
        return box

    # expressions ---------------------------------------------------------------------
    def _expr(self, t, depth):
        if isinstance(t, Token):  # pragma: no cover - every token sits in a rule
            return Leaf(str(t))
        kind = t.data
        ch = t.children
        if kind in _LEAVES:
            text = str(ch[0])
            return Leaf(normalize_string(text) if kind == "string_lit" else text)
        if kind in _BINARY:
            op = " ".join(str(c) for c in ch[1:-1])
            return Binary(op, self._expr(ch[0], depth), self._expr(ch[-1], depth))
        if kind == "neg":
            return Unary("-", self._expr(ch[1], depth))
        if kind == "not_op":
            return Unary("not ", self._expr(ch[1], depth))
        if kind == "conditional":
            then, _if, cond, _else, orelse = ch
            return Cond(self._expr(then, depth), self._expr(cond, depth), self._expr(orelse, depth))
        if kind == "attr":
            return Attr(self._expr(ch[0], depth), str(ch[2]))
        if kind == "index":
            return Postfix(self._expr(ch[0], depth),
                           self._box("index", "[", "]", ch[1:], depth, self._expr))
        if kind == "call":
            return Postfix(self._expr(ch[0], depth),
                           self._box("call", "(", ")", ch[1:], depth, self._arg))
        if kind == "atom":  # ( expr )
            return Postfix(None, self._box("paren", "(", ")", ch, depth, self._expr))
        if kind == "list_lit":
            return self._box("list", "[", "]", ch, depth, self._expr)
        if kind == "dict_lit":
            return self._box("dict", "{", "}", ch, depth, self._dict_item)
        if kind in ("list_comp", "dict_comp"):
            return self._comp(t, depth)
        raise AssertionError(f"unexpected syntax {kind}")  # pragma: no cover

    # comments ------------------------------------------------------------------------
    def _blank_between(self, a: int, b: int) -> bool:
        """A whitespace-only line strictly between 1-based lines ``a`` and ``b``."""
        return any(not self.lines[i - 1].strip() for i in range(a + 1, b))

    def _attach(self, comments: list[Token]) -> None:
        toks = self.tokens
        by_first: dict[int, Elem] = {}
        by_last: dict[int, Elem] = {}
        by_end: dict[int, Elem] = {}  # elements followed by a comma, by their own last token
        for e in self.elems:  # outermost wins
            if e.first not in by_first or by_first[e.first].depth > e.depth:
                by_first[e.first] = e
            if e.last not in by_last or by_last[e.last].depth > e.depth:
                by_last[e.last] = e
            if e.end != e.last and (e.end not in by_end or by_end[e.end].depth > e.depth):
                by_end[e.end] = e

        def innermost(lo: int, hi: int) -> Elem | None:
            best = None
            for e in self.elems:
                if e.first <= lo and hi <= e.last and (best is None or e.depth > best.depth):
                    best = e
            return best

        # blank lines before each element's first token and before each comment
        prev_line = {}  # token index -> end line of the lexical item before it
        ci = 0
        last_end = 0
        cm = sorted(comments, key=lambda c: c.start_pos)
        for i, tok in enumerate(toks):
            while ci < len(cm) and cm[ci].start_pos < tok.start_pos:
                last_end = max(last_end, cm[ci].line)
                ci += 1
            prev_line[i] = last_end
            last_end = max(last_end, tok.end_line)
        for e in self.elems:
            p = prev_line[e.first]
            e.blank = p > 0 and self._blank_between(p, toks[e.first].line)

        prev_comment_line = 0
        for c in cm:
            p = bisect.bisect_left(self.starts, c.start_pos) - 1  # previous token
            n = p + 1 if p + 1 < len(toks) else None
            before_line = max(toks[p].end_line if p >= 0 else 0, prev_comment_line)
            prev_comment_line = c.line
            com = Comment(str(c).rstrip(), c.line, before_line > 0 and self._blank_between(before_line, c.line))
            own_line = p < 0 or toks[p].end_line < c.line
            if own_line:
                if n is None:
                    self.end_comments.append(com)
                elif n in self.closes:
                    self.closes[n].end_comments.append(com)
                elif n in by_first:
                    by_first[n].before.append(com)
                else:
                    target = innermost(p, n) if p >= 0 else None
                    (target or by_first.get(n) or self.stmts[0]).before.append(com)
            else:
                if p in self.opens and self.opens[p].open_comment is None:
                    self.opens[p].open_comment = com
                elif p in by_last and by_last[p].after is None:
                    by_last[p].after = com
                elif p in by_end and by_end[p].after is None:  # 'x  # c' then ',' below
                    by_end[p].after = com
                else:
                    target = innermost(p, p)
                    if target is None:  # pragma: no cover - every token is in a statement
                        self.end_comments.append(com)
                    else:
                        target.before.append(com)

    # ordering ------------------------------------------------------------------------
    def _order(self) -> list[Elem]:
        stmts = self.stmts
        for st, node in zip(stmts, self.module.stmts):
            if isinstance(st.node, LoadStmt):
                st.key = node.path
                for e, name in zip(st.node.box.elems[1:], node.names):
                    e.key = name.local
                _sort_runs(st.node.box.elems, 1)
        # the file header: comments above the first statement up to the last blank line
        if stmts and stmts[0].before:
            items = stmts[0].before
            cut = max((i for i, c in enumerate(items) if c.blank), default=None)
            if cut is None and stmts[0].blank:
                cut = len(items)
            if cut is not None and cut > 0:
                self.header = items[:cut]
                stmts[0].before = items[cut:]
                if stmts[0].before:
                    stmts[0].before[0].blank = True
                else:
                    stmts[0].blank = True
        loads = sorted((s for s in stmts if isinstance(s.node, LoadStmt)), key=lambda s: s.key)
        others = [s for s in stmts if not isinstance(s.node, LoadStmt)]
        order = loads + others
        # a blank line after the header, and between the loads and the rest
        for first in ([order[0]] if order and self.header else []) + ([others[0]] if loads and others else []):
            if first.before:
                first.before[0].blank = True
            else:
                first.blank = True
        return order

    # output --------------------------------------------------------------------------
    def run(self) -> str:
        order = self._order()
        out: list[str] = []

        def put(text: str, blank: bool) -> None:
            if blank and out:
                out.append("")
            out.append(text)

        for c in self.header:
            put(c.text, c.blank)
        for st in order:
            for c in st.before:
                put(c.text, c.blank)
            text = render(stmt_doc(st.node))
            if st.after is not None:
                text += "  " + st.after.text
            put(text, st.blank)
        for c in self.end_comments:
            put(c.text, c.blank)
        return "\n".join(out) + "\n" if out else ""


def _sort_runs(elems: list[Elem], start: int) -> None:
    """Sort ``elems[start:]`` by key within runs; an element with comments above it or a
    blank line before it starts a new run, and keeps them at the head of its run."""
    i = start
    n = len(elems)
    while i < n:
        j = i + 1
        while j < n and not elems[j].before and not elems[j].blank:
            j += 1
        run = elems[i:j]
        head_before, head_blank = run[0].before, run[0].blank
        run[0].before, run[0].blank = [], False
        run.sort(key=lambda e: e.key)
        run[0].before, run[0].blank = head_before, head_blank
        elems[i:j] = run
        i = j


# ---------------------------------------------------------------------------------------
# documents

class _Line:
    __slots__ = ("flat", "hard")

    def __init__(self, flat: str, hard: bool = False):
        self.flat = flat
        self.hard = hard


LINE = _Line(" ")       # a space, or a line break when its group is broken
SOFT = _Line("")        # nothing, or a line break
HARD = _Line("", True)  # always a line break (breaks every enclosing group)


class Indent:
    __slots__ = ("doc",)

    def __init__(self, doc):
        self.doc = doc


class IfBreak:
    __slots__ = ("broken", "flat")

    def __init__(self, broken, flat=""):
        self.broken, self.flat = broken, flat


class Suffix:
    """A trailing comment: printed as text, but not counted when measuring whether a group
    fits (a long comment never explodes the code before it)."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text


class Group:
    __slots__ = ("doc", "hard")

    def __init__(self, doc, hard: bool = False):
        self.doc = doc
        self.hard = hard or _has_hard(doc)


def _has_hard(doc) -> bool:
    t = type(doc)
    if t is list:
        return any(_has_hard(d) for d in doc)
    if t is _Line:
        return doc.hard
    if t is Group:
        return doc.hard
    if t is Indent:
        return _has_hard(doc.doc)
    if t is IfBreak:
        return _has_hard(doc.broken) or _has_hard(doc.flat)
    return False


def stmt_doc(node):
    if type(node) is Assign:
        return [node.name, " = ", expr_doc(node.value)]
    if type(node) is LoadStmt:
        return ["load", box_doc(node.box)]
    return expr_doc(node)


def expr_doc(node):
    t = type(node)
    if t is Leaf:
        return node.text
    if t is Binary:
        return [expr_doc(node.left), f" {node.op} ", expr_doc(node.right)]
    if t is Unary:
        if node.op == "-" and type(node.operand) is Unary and node.operand.op == "-":
            return ["- ", expr_doc(node.operand)]  # '- -5', not '--5'
        return [node.op, expr_doc(node.operand)]
    if t is Cond:
        return [expr_doc(node.then), " if ", expr_doc(node.cond), " else ", expr_doc(node.orelse)]
    if t is Attr:  # '32 .hosts', as '32.hosts' reads as the float '32.' and a name
        text = node.obj.text if type(node.obj) is Leaf else ""
        int_lit = text[:1].isdigit() and text.replace("_", "").isdigit()
        return [expr_doc(node.obj), " ." if int_lit else ".", node.name]
    if t is Postfix:
        box = box_doc(node.box)
        return box if node.obj is None else [expr_doc(node.obj), box]
    if t is Box:
        return box_doc(node)
    if t is Pair:
        return [expr_doc(node.left), node.sep, expr_doc(node.right)]
    if t is Clause:
        return [node.head, expr_doc(node.expr)]
    raise AssertionError(f"unexpected node {t.__name__}")  # pragma: no cover


def _exploded(box: Box) -> bool:
    return (box.magic or box.open_comment is not None or bool(box.end_comments)
            or any(e.before or e.after is not None or (i and e.blank) for i, e in enumerate(box.elems)))


def _hugs(box: Box) -> bool:
    """``f({...})``, ``f([...])``, ``[{...}]``: a call or list whose one element is a bare
    list, dict or comprehension shares its brackets' lines (no comment between them, no
    trailing comma after the element)."""
    if box.kind not in ("call", "list") or len(box.elems) != 1 or _exploded(box):
        return False
    inner = box.elems[0].node
    return type(inner) is Box and inner.kind in ("list", "dict", "comp")


def box_doc(box: Box):
    if not box.elems and not box.end_comments and box.open_comment is None:
        return box.open + box.close
    if _hugs(box):
        return [box.open, box_doc(box.elems[0].node), box.close]
    if not _exploded(box):
        parts: list = []
        for i, e in enumerate(box.elems):
            if i:
                parts.extend((",", LINE) if box.commas else (LINE,))
            parts.append(expr_doc(e.node))
        if box.commas:
            parts.append(IfBreak(","))
        return Group([box.open, Indent([SOFT, *parts]), SOFT, box.close])
    inner: list = []
    first = True

    def line(blank: bool) -> None:
        nonlocal first
        inner.append(HARD)
        if blank and not first:
            inner.append(HARD)
        first = False

    for e in box.elems:
        for c in e.before:
            line(c.blank)
            inner.append(c.text)
        line(e.blank)
        inner.append(expr_doc(e.node))
        if box.commas:
            inner.append(",")
        if e.after is not None:
            inner.append(Suffix("  " + e.after.text))
    for c in box.end_comments:
        line(c.blank)
        inner.append(c.text)
    head = [box.open] if box.open_comment is None else [box.open, Suffix("  " + box.open_comment.text)]
    return Group([*head, Indent(inner), HARD, box.close], hard=True)


_FLAT, _BREAK = 0, 1


def render(doc, width: int = WIDTH) -> str:
    """Print a document: groups flat when they fit in ``width`` columns (with what follows
    them up to the next possible line break), else broken."""
    out: list[str] = []
    pos = 0
    pending: int | None = None  # indentation owed before the next text (no trailing spaces)
    stack = [(0, _BREAK, doc)]
    while stack:
        ind, mode, d = stack.pop()
        t = type(d)
        if t is str or t is Suffix:
            s = d if t is str else d.text
            if not s:
                continue
            if pending is not None:
                out.append(" " * pending)
                pos = pending
                pending = None
            out.append(s)
            nl = s.rfind("\n")
            pos = len(s) - nl - 1 if nl >= 0 else pos + len(s)
        elif t is list:
            stack.extend((ind, mode, x) for x in reversed(d))
        elif t is _Line:
            if mode == _FLAT and not d.hard:
                stack.append((ind, mode, d.flat))
            else:
                out.append("\n")
                pending = ind
                pos = ind
        elif t is Indent:
            stack.append((ind + INDENT, mode, d.doc))
        elif t is Group:
            if d.hard:
                stack.append((ind, _BREAK, d.doc))
            elif mode == _FLAT:
                stack.append((ind, _FLAT, d.doc))
            else:
                stack.append((ind, _FLAT if _fits(d.doc, stack, width - pos) else _BREAK, d.doc))
        elif t is IfBreak:
            stack.append((ind, mode, d.broken if mode == _BREAK else d.flat))
        else:  # pragma: no cover
            raise AssertionError(f"bad doc {d!r}")
    return "".join(out)


def _fits(doc, rest: list, room: int) -> bool:
    todo = [(_FLAT, doc)]
    ri = len(rest)
    while room >= 0:
        if not todo:
            if ri == 0:
                return True
            ri -= 1
            _, m, d = rest[ri]
            todo.append((m, d))
            continue
        m, d = todo.pop()
        t = type(d)
        if t is str:
            nl = d.find("\n")
            if nl >= 0:
                return room - nl >= 0
            room -= len(d)
        elif t is Suffix:
            continue
        elif t is list:
            todo.extend((m, x) for x in reversed(d))
        elif t is _Line:
            if d.hard or m == _BREAK:
                return True
            room -= len(d.flat)
        elif t is Indent:
            todo.append((m, d.doc))
        elif t is Group:
            todo.append((_BREAK if d.hard else m, d.doc))
        elif t is IfBreak:
            todo.append((m, d.broken if m == _BREAK else d.flat))
    return False


# ---------------------------------------------------------------------------------------
# the check: same syntax tree, same comments

_SPANS = frozenset(("span", "name_span", "var_span", "path_span"))


def shape(node):
    """A syntax tree without positions (for comparing two parses)."""
    if isinstance(node, tuple):
        return tuple(shape(x) for x in node)
    if isinstance(node, list):
        return tuple(shape(x) for x in node)
    fields = getattr(type(node), "__attrs_attrs__", None)
    if fields is None:
        return node
    return (type(node).__name__, *(shape(getattr(node, f.name)) for f in fields if f.name not in _SPANS))


def module_shape(module: ast.Module):
    """:func:`shape` of a module with its loads first, sorted, and each load's names sorted:
    the formatter's reordering does not change what a file means."""
    loads = sorted((s for s in module.stmts if isinstance(s, ast.Load)), key=lambda s: s.path)
    loads = [(s.path, tuple(sorted((n.local, n.remote) for n in s.names))) for s in loads]
    return tuple(loads), shape(tuple(s for s in module.stmts if not isinstance(s, ast.Load)))


def _verify(module: ast.Module, comments: list, out: str, path: str) -> None:
    """Raise :class:`FormatterBug` unless ``out`` parses to the same meaning as ``module``
    (:func:`module_shape`) with the same ``comments`` (lark tokens) as the input."""
    from rcpc.diagnostics import CompileError

    try:
        again = parse(Source(path, out))
    except CompileError as exc:  # pragma: no cover - a formatter bug
        raise FormatterBug(f"rcpc fmt produced text that does not parse: {exc}") from None
    if module_shape(again) != module_shape(module):  # pragma: no cover - a formatter bug
        raise FormatterBug(f"rcpc fmt would change the meaning of {path}")
    _, after = parse_concrete(out)
    if sorted(str(c).rstrip() for c in comments) != sorted(str(c).rstrip() for c in after):
        raise FormatterBug(f"rcpc fmt would lose or change a comment of {path}")  # pragma: no cover
