"""``rcpc fmt``: the canonical layout of a recipe file (docs/style.md), comments kept.

:func:`format_source` parses the file once, with the compiler's parser
(:func:`rcpc.core.syntax.parser.parse`: bad input raises the compiler's
:class:`~rcpc.core.diagnostics.CompileError`), and prints that AST with the comments attached to
its nodes (:mod:`rcpc.core.syntax.comments`), by a Wadler/Prettier-style pretty printer at 100
columns:

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
* literals keep their spelling (the AST keeps it: ``text``, a string's ``raw``); a
  single-quoted string whose body has no ``"`` is written with double quotes, its body
  untouched (the value cannot change); triple-quoted strings are kept as written;
  parentheses are kept as written (``parens``).

The result is checked before it is returned, unless it is the input itself: it must parse to
the same syntax tree (spans and spellings of the same value aside; loads compared as sets) and
hold the same comments. A difference would be a bug in the formatter, reported as
:class:`FormatterBug`, never a silently changed recipe.

Limits (docs/language.md, "Limits"): the result is read back with the compiler's limits, so
what ``rcpc fmt`` writes, ``rcpc check`` reads. The token limit counts no layout (line
breaks, trailing commas: what the formatter adds or removes; :mod:`rcpc.core.syntax.postlex`),
so the canonical text of a file within it is within it too; crossing it there would be a bug
like any other. The size limit
(:data:`~rcpc.core.limits.MAX_FILE_BYTES`) counts bytes, and the canonical layout may need
more of them than the input (one element a line, 4 spaces of indentation a level): then, and
only then, ``rcpc fmt`` refuses the file, ``E0951`` at the statement whose text crosses the
limit, the file left as it is.
"""

from __future__ import annotations

from rcpc.core.diagnostics import CompileError, error
from rcpc.core.limits import MAX_FILE_BYTES
from rcpc.core.source import Source, Span
from rcpc.core.syntax import ast, comments
from rcpc.core.syntax.parser import parse

WIDTH = 100
INDENT = 4

__all__ = ["format_source", "format_module", "format_file", "normalize_string", "FormatterBug", "WIDTH"]


class FormatterBug(AssertionError):
    """The formatted text would not mean what the input means (a bug in rcpc fmt)."""


def format_source(text: str, path: str, session=None) -> str:
    """The canonical form of recipe source ``text`` (``path`` is used in diagnostics only;
    ``session``: the :class:`~rcpc.core.session.Session` whose parsers a syntax error uses).

    Raises :class:`~rcpc.core.diagnostics.CompileError` for a syntax error, as the compiler does
    (and ``E0801`` for nesting too deep to format, a few hundred levels; ``E0951`` when the
    canonical text would be over the size limit of a source file).
    The result ends with one newline (or is empty for a file of nothing but whitespace)."""
    return format_module(parse(Source(path, text), session=session))


def format_file(compiler, real) -> str | None:
    """The canonical text of workspace file ``real``, or ``None`` when it is canonical
    already. The file is read as the compiler reads it (``compiler.source``: UTF-8, size
    limit; ``E0003``, ``E0803``), and kept for quoting in diagnostics only when it fails."""
    source = compiler.source(real)
    out = format_module(parse(source, session=compiler.session))
    compiler.release(real)
    return None if out == source.text else out


def format_module(module: ast.Module) -> str:
    """The canonical text of a parsed module (:func:`rcpc.core.syntax.parser.parse`), checked
    against it as :func:`format_source` says."""
    source = module.source
    try:
        printer = _Printer(module)
        out = printer.run()
        if out != source.text:  # (text already in canonical form needs no proof)
            _check_size(printer, out)
            _verify(module, out, source.path)
    except RecursionError:
        raise error("E0801", "expression nested too deeply to format", source.span(0, 0),
                    hint="split it into several named values") from None
    return out


def _check_size(printer: _Printer, out: str) -> None:
    """Raise ``E0951`` when ``out``, the canonical text of ``printer``'s module, is more than
    :data:`~rcpc.core.limits.MAX_FILE_BYTES` bytes in UTF-8 (as ``rcpc fmt`` writes it, and
    as the compiler reads it: ``E0803``), at the statement whose text crosses the limit."""
    if len(out) * 4 <= MAX_FILE_BYTES:  # (4 bytes a character at most)
        return
    size = len(out.encode("utf-8", "surrogatepass"))
    if size <= MAX_FILE_BYTES:
        return
    module = printer.module
    total = 0
    at = None
    for node, text in printer.printed_stmts:
        total += len(text.encode("utf-8", "surrogatepass")) + 1
        if total > MAX_FILE_BYTES:
            at = node
            break
    if at is None:  # (the comments after the last statement cross it)
        at = module.stmts[-1] if module.stmts else None
    span = at.span if at is not None else Span(module.source.path, 1, 1, 1, 1)
    raise error("E0951", f"formatted, this file would be {size} bytes, over the limit of {MAX_FILE_BYTES} "
                "for a source file", Span(span.path, span.line, span.col, span.line, span.col + 1),
                hint="the canonical layout puts one element a line, 4 spaces deeper a level: nest this "
                "value less deeply, or split it into several files")


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
# printing the AST

class _C:
    """A comment as printed: its text, and whether a blank line comes before it."""

    __slots__ = ("text", "blank")

    def __init__(self, text: str, blank: bool):
        self.text = text
        self.blank = blank


class _Item:
    """One element of a bracket pair (or a statement) as printed: its document and comments.
    ``sort`` orders loads and load names."""

    __slots__ = ("doc", "leading", "trailing", "blank", "sort", "node")

    def __init__(self, doc, leading: list, trailing: str | None, blank: bool, sort=None):
        self.doc = doc
        self.leading = leading
        self.trailing = trailing
        self.blank = blank
        self.sort = sort
        self.node = None  # the statement, for a top-level one


_OPS = (ast.BinOp, ast.BoolOp, ast.Compare)
_HUGGED = (ast.ListLit, ast.DictLit, ast.Comprehension)


class _Printer:
    """Documents for the statements and expressions of one module, with its comments
    (:meth:`ast.Module.attached`)."""

    def __init__(self, module: ast.Module):
        self.module = module
        self.attached = comments.attached(module)

    def printed(self, found) -> list:
        """Comments as printed (:class:`_C`), their blank lines before them included."""
        blank = self.attached.blank_before
        return [_C(c.text, blank(c)) for c in found]

    def item(self, k, doc, sort=None) -> _Item:
        n = self.attached.of(k)
        return _Item(doc, self.printed(n.leading), n.trailing.text if n.trailing else None, n.blank, sort)

    def expr_item(self, node) -> _Item:
        return self.item(comments.key(node), self.expr(node))

    # statements --------------------------------------------------------------------------
    def run(self) -> str:
        """The module's canonical text; each statement's text (its comments not included)
        kept in :attr:`printed_stmts`, with the statement, in print order."""
        stmts = []
        for s in self.module.stmts:
            it = self.item(id(s), self.stmt(s), s.path if type(s) is ast.Load else None)
            it.node = s
            stmts.append(it)
        self.printed_stmts: list = []
        header, order = _order(stmts)
        out: list[str] = []

        def put(text: str, blank: bool) -> None:
            if blank and out:
                out.append("")
            out.append(text)

        for c in header:
            put(c.text, c.blank)
        for st in order:
            for c in st.leading:
                put(c.text, c.blank)
            text = render(st.doc)
            if st.trailing is not None:
                text += "  " + st.trailing
            put(text, st.blank)
            self.printed_stmts.append((st.node, text))
        for c in self.printed(self.attached.end):
            put(c.text, c.blank)
        return "\n".join(out) + "\n" if out else ""

    def stmt(self, node):
        t = type(node)
        if t is ast.Assign:
            return [node.name, " = ", self.expr(node.value)]
        if t is ast.Load:
            items = [self.item(comments.part("path", node), normalize_string(node.path_raw))]
            for ln in node.names:
                raw = normalize_string(ln.raw)
                items.append(self.item(id(ln), [ln.local, " = ", raw] if ln.aliased else raw, ln.local))
            _sort_runs(items, 1)
            return ["load", self.box("(", ")", items, True, node.trailing_comma, id(node))]
        if t is ast.Def:
            items = []
            for i, p in enumerate(node.params):
                if p.keyword_only and (i == 0 or not node.params[i - 1].keyword_only):
                    items.append(_Item("*", [], None, False))
                doc = p.name if p.default is None else [p.name, " = ", self.expr(p.default)]
                items.append(self.item(id(p), doc))
            params = self.box("(", ")", items, True, node.trailing_comma, comments.part("params", node))
            return ["def ", node.name, params, ":", self.block(node.body)]
        if t is ast.Return:
            return "return" if node.value is None else ["return ", self.expr(node.value)]
        if t is ast.For:
            return ["for ", node.var, " in ", self.expr(node.iter), ":", self.block(node.body)]
        if t is ast.If:
            out: list = []
            for i, (cond, body) in enumerate(node.branches):
                if i:
                    out.append(self.clause(comments.part("elif", cond), ["elif ", self.expr(cond), ":"]))
                else:
                    out.extend(("if ", self.expr(cond), ":"))
                out.append(self.block(body))
            if node.orelse:
                out.extend((self.clause(comments.part("else", node), "else:"), self.block(node.orelse)))
            return out
        return self.expr(node.expr)

    def block(self, stmts) -> Indent:
        """The statements of a def's, if's or for's block, one a line, 4 spaces deeper, with
        their comments; blank lines between them kept (one at most)."""
        parts: list = []
        for i, st in enumerate(stmts):
            it = self.item(id(st), self.stmt(st))
            for j, c in enumerate(it.leading):
                parts.append(HARD)
                if c.blank and (i or j):
                    parts.append(HARD)
                parts.append(c.text)
            parts.append(HARD)
            if it.blank and (i or it.leading):
                parts.append(HARD)
            parts.append(it.doc)
            if it.trailing is not None:
                parts.append(Suffix("  " + it.trailing))
        return Indent(parts)

    def clause(self, k, doc) -> list:
        """An ``elif``/``else`` line (at its if's indentation), its leading comments above it."""
        n = self.attached.of(k)
        parts: list = []
        for c in self.printed(n.leading):
            parts.extend((HARD, HARD, c.text) if c.blank else (HARD, c.text))
        return [*parts, HARD, doc]

    # expressions -------------------------------------------------------------------------
    def expr(self, node, layers: int | None = None):
        """The document of ``node`` with its first ``layers`` pairs of parentheses (all by
        default): parentheses are kept as written."""
        parens = node.parens
        if layers is None:
            layers = len(parens)
        if layers:
            inner = id(parens[layers - 2]) if layers > 1 else id(node)
            item = self.item(inner, self.expr(node, layers - 1))
            return self.box("(", ")", [item], False, False, id(parens[layers - 1]))
        t = type(node)
        if t is ast.Name:
            return node.id
        if t is ast.StrLit or t is ast.FString:
            return normalize_string(node.raw)
        if t in _OPS:
            return [self.expr(node.left), f" {node.op} ", self.expr(node.right)]
        if t is ast.Attr:
            obj = node.obj
            # '32 .hosts', not '32.hosts' (which reads as the float '32.' and a name)
            dot = " ." if type(obj) is ast.IntLit and not obj.parens else "."
            return [self.expr(obj), dot, node.name]
        if t is ast.Call:
            items = [self.expr_item(a) for a in node.args]
            items += [self.item(id(kw), [kw.name, " = ", self.expr(kw.value)]) for kw in node.kwargs]
            return [self.expr(node.func), self.box("(", ")", items, True, node.trailing_comma, id(node),
                                                   _hugs(node.args, node.kwargs))]
        if t is ast.ListLit:
            items = [self.expr_item(x) for x in node.items]
            return self.box("[", "]", items, True, node.trailing_comma, id(node), _hugs(node.items))
        if t is ast.DictLit:
            items = [self.item(id(kv), [self.expr(kv[0]), ": ", self.expr(kv[1])]) for kv in node.items]
            return self.box("{", "}", items, True, node.trailing_comma, id(node))
        if t is ast.Index:
            return [self.expr(node.obj), self.box("[", "]", [self.expr_item(node.index)], False, False, id(node))]
        if t is ast.Neg:
            operand = node.operand
            if type(operand) is ast.Neg and not operand.parens:
                return ["- ", self.expr(operand)]  # '- -5', not '--5'
            return ["-", self.expr(operand)]
        if t is ast.Not:
            return ["not ", self.expr(node.operand)]
        if t is ast.Conditional:
            return [self.expr(node.then), " if ", self.expr(node.cond), " else ", self.expr(node.orelse)]
        if t is ast.Comprehension:
            return self.comprehension(node)
        return node.text  # IntLit, FloatLit, BoolLit, NoneLit: the spelling as written

    def comprehension(self, node: ast.Comprehension):
        clause = node.clause
        if node.key is None:
            items = [self.expr_item(node.elt)]
            brackets = "[", "]"
        else:
            items = [self.item(comments.part("pair", node), [self.expr(node.key), ": ", self.expr(node.elt)])]
            brackets = "{", "}"
        items.append(self.item(id(clause), [f"for {clause.var} in ", self.expr(clause.iter)]))
        items += [self.item(comments.part("if", c), ["if ", self.expr(c)]) for c in clause.conds]
        return self.box(*brackets, items, False, False, id(node))

    def box(self, open_: str, close: str, items: list, commas: bool, magic: bool, k, hug: bool = False):
        """A bracket pair around ``items`` (comma-separated when ``commas``), flat when it fits
        and nothing forces it to explode (a comment, a blank line between items, the magic
        trailing comma), else one item a line; ``hug``: its one item is a bare list, dict or
        comprehension that may share its brackets' lines."""
        n = self.attached.of(k)
        after_open = n.after_open.text if n.after_open is not None else None
        before_close = self.printed(n.before_close)
        if not items and not before_close and after_open is None:
            return open_ + close
        exploded = (magic or after_open is not None or bool(before_close)
                    or any(it.leading or it.trailing is not None or (i and it.blank) for i, it in enumerate(items)))
        if hug and not exploded:
            return [open_, items[0].doc, close]
        if not exploded:
            parts: list = []
            for i, it in enumerate(items):
                if i:
                    parts.extend((",", LINE) if commas else (LINE,))
                parts.append(it.doc)
            if commas:
                parts.append(IfBreak(","))
            return Group([open_, Indent([SOFT, *parts]), SOFT, close])
        inner: list = []
        first = True

        def line(blank: bool) -> None:
            nonlocal first
            inner.append(HARD)
            if blank and not first:
                inner.append(HARD)
            first = False

        for it in items:
            for c in it.leading:
                line(c.blank)
                inner.append(c.text)
            line(it.blank)
            inner.append(it.doc)
            if commas:
                inner.append(",")
            if it.trailing is not None:
                inner.append(Suffix("  " + it.trailing))
        for c in before_close:
            line(c.blank)
            inner.append(c.text)
        head = [open_] if after_open is None else [open_, Suffix("  " + after_open)]
        return Group([*head, Indent(inner), HARD, close], hard=True)


def _hugs(items, kwargs=()) -> bool:
    """``f({...})``, ``f([...])``, ``[{...}]``: one positional element, a bare list, dict or
    comprehension (no parentheses), may share its brackets' lines."""
    return not kwargs and len(items) == 1 and type(items[0]) in _HUGGED and not items[0].parens


def _order(stmts: list) -> tuple[list, list]:
    """The file header (the comments above the first statement up to the last blank line
    among them) and the statements in print order: loads first, sorted by path, then the
    rest; a blank line after the header and after the loads."""
    header: list = []
    if stmts and stmts[0].leading:
        items = stmts[0].leading
        cut = max((i for i, c in enumerate(items) if c.blank), default=None)
        if cut is None and stmts[0].blank:
            cut = len(items)
        if cut is not None and cut > 0:
            header = items[:cut]
            stmts[0].leading = items[cut:]
            if stmts[0].leading:
                stmts[0].leading[0].blank = True
            else:
                stmts[0].blank = True
    loads = sorted((s for s in stmts if s.sort is not None), key=lambda s: s.sort)
    others = [s for s in stmts if s.sort is None]
    order = loads + others
    for first in ([order[0]] if order and header else []) + ([others[0]] if loads and others else []):
        if first.leading:
            first.leading[0].blank = True
        else:
            first.blank = True
    return header, order


def _sort_runs(items: list, start: int) -> None:
    """Sort ``items[start:]`` by ``sort`` within runs; an item with comments above it or a
    blank line before it starts a new run, and keeps them at the head of its run."""
    i = start
    n = len(items)
    while i < n:
        j = i + 1
        while j < n and not items[j].leading and not items[j].blank:
            j += 1
        run = items[i:j]
        head_leading, head_blank = run[0].leading, run[0].blank
        run[0].leading, run[0].blank = [], False
        run.sort(key=lambda e: e.sort)
        run[0].leading, run[0].blank = head_leading, head_blank
        items[i:j] = run
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

# Fields that only say how a value was written, or where: the formatter may change them.
_LAYOUT = frozenset(("span", "name_span", "var_span", "path_span", "local_span", "raw", "path_raw",
                     "trailing_comma", "end"))


_SEQ, _PARENS = object(), object()  # markers of shape(): a tuple's length, a node's parentheses


def shape(node) -> list:
    """A syntax tree without positions and layout (for comparing two parses; parentheses
    count), flat: the tree's nodes in pre-order, each record as its class (then its fields),
    each tuple or list as ``(_SEQ, its length)`` (then its items), each other value as itself.
    Iterative, so as deep a tree as the parser builds has one (``rcpc check`` accepts nesting
    up to :data:`~rcpc.core.limits.MAX_DEPTH`; ``rcpc fmt`` must format it)."""
    out: list = []
    add = out.append
    stack = [node]
    pop, push = stack.pop, stack.extend
    while stack:
        x = pop()
        fields = _shape_fields(type(x))
        if fields is None:
            if isinstance(x, (tuple, list)):
                add((_SEQ, len(x)))
                push(reversed(x))
            else:
                add(x)
            continue
        cls, names = fields
        add(cls)
        push([(_PARENS, len(x.parens)) if n == "parens" else getattr(x, n) for n in reversed(names)])
    return out


def _fields_of(cls) -> tuple | None:
    """(the class, the fields :func:`shape` keeps) of a record class; ``None`` for any other
    class."""
    fields = getattr(cls, "__record_fields__", None)
    return None if fields is None else (cls, tuple(f.name for f in fields if f.name not in _LAYOUT))


# :func:`_fields_of` each class of the AST and Span, found at import (a constant table)
_FIELDS: dict = {c: _fields_of(c) for c in (Span, *(v for v in vars(ast).values() if isinstance(v, type)))}


def _shape_fields(cls) -> tuple | None:
    """:func:`_fields_of` ``cls``, from :data:`_FIELDS` for the AST's classes."""
    try:
        return _FIELDS[cls]
    except KeyError:
        return _fields_of(cls)


def module_shape(module: ast.Module):
    """:func:`shape` of a module with its loads first, sorted, and each load's names sorted:
    the formatter's reordering does not change what a file means."""
    loads = sorted((s for s in module.stmts if isinstance(s, ast.Load)), key=lambda s: s.path)
    loads = [(s.path, tuple(sorted((n.local, n.remote) for n in s.names))) for s in loads]
    return tuple(loads), shape(tuple(s for s in module.stmts if not isinstance(s, ast.Load)))


def _verify(module: ast.Module, out: str, path: str) -> None:
    """Raise :class:`FormatterBug` unless ``out`` parses to the same meaning as ``module``
    (:func:`module_shape`) with the same comments."""

    try:
        again = parse(Source(path, out))
    except CompileError as exc:  # pragma: no cover - a formatter bug
        raise FormatterBug(f"rcpc fmt produced text that does not parse: {exc}") from None
    if module_shape(again) != module_shape(module):  # pragma: no cover - a formatter bug
        raise FormatterBug(f"rcpc fmt would change the meaning of {path}")
    if sorted(c.text for c in module.comments) != sorted(c.text for c in again.comments):
        raise FormatterBug(f"rcpc fmt would lose or change a comment of {path}")  # pragma: no cover
