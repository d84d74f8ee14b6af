"""What a position in a recipe means, for the language server (no protocol types here).

Positions are 1-based ``(line, col)`` in characters, as in :class:`~rcpc.core.source.Span`.

* :func:`node_at` — the innermost name, load name, load path, string, keyword argument's name
  or name being bound under a position (in a ``def``'s body too), with the chain of nodes
  around it;
* :func:`definition` / :func:`references` — where a name is bound (across ``load()``, into the
  loaded file: a library function's ``def``), and every use of that binding (in the
  workspace's files that load it);
* :func:`hover` — Markdown for a name (param type, default, doc; a definition's source and
  its doc comment; a function's signature; a built-in's signature), a MaxText key in a
  ``maxtext_flags`` layer, ``{"key": v}`` or ``dict(key = v)`` (schema type, default,
  effective value and ``explain`` chain), a TPU slice string (chips, hosts, devices);
* :func:`completion_context` — the call and dict keys around the cursor, read from the text
  before it (a buffer being typed rarely parses), and :func:`completions` — the names, keyword
  arguments, library exports, MaxText keys, param names or JobSet fields that fit there;
* :func:`symbols` — params, flag sets, renders, variants and functions of a module, for the
  outline.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs

from rcpc.core.builtins import Function
from rcpc.domain import builtins as B
from rcpc.domain import stdlib
from rcpc.domain import explain as explaining
from rcpc.domain.tpu import tpu_slice
from rcpc.domain.workspace import SCHEMA_DIR
from rcpc.core.diagnostics import CompileError
from rcpc.core.resolve import ARGUMENT, BUILTIN, COMPREHENSION, FUNCTION, LOADED, LOCAL, PARAM, TOP_LEVEL
from rcpc.core.source import Span, joined
from rcpc.core.syntax import ast
from rcpc.core.syntax.walk import children, walk

# The built-ins as the language declares them (rcpc.core.builtins.Function, Declaration, TypeDoc):
# signature and one-line doc (hover, completion), keyword arguments, and the calls that make
# renders. Derived, never a copy.
def _doc(name: str) -> tuple[str, str]:
    d = B.UNIVERSE.declared(name)
    return (getattr(d, "signature", "") or name, d.doc) if d is not None else (name, "")


BUILTIN_DOCS = {n: _doc(n) for n in sorted(B.NAMES)}
KEYWORDS = {n: d.keywords for n in sorted(B.NAMES) for d in [B.UNIVERSE.declared(n)] if getattr(d, "keywords", ())}
RENDERS = tuple(n for n, f in sorted(B.UNIVERSE.functions.items()) if f.makes == "render")


# positions -------------------------------------------------------------------------------
def contains(span: Span, line: int, col: int) -> bool:
    """Whether ``(line, col)`` lies in ``span`` (its end included: a cursor just after a
    word is on it)."""
    return (span.line, span.col) <= (line, col) <= (span.end_line, span.end_col)


@attrs.frozen
class Hit:
    """What is under a position: ``node`` (a Name, StrLit, LoadName or Load; an Assign, Def,
    Parameter or For at the name it binds; a Keyword at its name), ``stmt`` the top-level
    statement holding it and ``chain`` the nodes from the statement down to it."""

    node: object
    stmt: object
    chain: tuple


# (node type, the span of the name it binds or names): a hit there is the node itself
_NAMED = {ast.Assign: "name_span", ast.Def: "name_span", ast.Parameter: "span", ast.For: "var_span",
          ast.Keyword: "name_span", ast.Load: "path_span"}


def node_at(module: ast.Module, line: int, col: int) -> Hit | None:
    """The innermost name, string, load name, load path, binding name (of an assignment,
    ``def``, parameter or ``for``) or keyword argument's name at ``(line, col)``, or None;
    inside a ``def``'s body too."""
    stmt = next((s for s in module.stmts if contains(_extent(s), line, col)), None)
    chain = []
    node = stmt
    while node is not None:
        chain.append(node)
        kind = type(node)
        if kind in (ast.Name, ast.StrLit, ast.LoadName):
            return Hit(node, stmt, tuple(chain))
        named = _NAMED.get(kind)
        if named is not None and contains(getattr(node, named), line, col):
            return Hit(node, stmt, tuple(chain))
        node = next((c for c in children(node) if contains(_extent(c), line, col)), None)
    return None


def _extent(node) -> Span:
    """The text a node covers: a ``def`` from its header to its body's end, a keyword
    argument from its name to its value, a parameter from its name to its default."""
    kind = type(node)
    if kind is ast.Def:
        return joined(node.span, node.end)
    if kind is ast.Keyword:
        return joined(node.name_span, node.value.span)
    if kind is ast.Parameter and node.default is not None:
        return joined(node.span, node.default.span)
    return node.span


def enclosing_call(hit: Hit) -> tuple[ast.Call | None, str | None]:
    """The innermost built-in call around the hit, and the keyword its argument is bound to."""
    for i in range(len(hit.chain) - 1, -1, -1):
        node = hit.chain[i]
        if type(node) is ast.Call and type(node.func) is ast.Name:
            below = hit.chain[i + 1] if i + 1 < len(hit.chain) else None
            return node, below.name if type(below) is ast.Keyword else None
    return None, None


# definitions -------------------------------------------------------------------------------
def binding_at(session, real: Path, line: int, col: int):
    """(binding, module, hit) of the name at a position: a name use, or the name an
    assignment, load, ``def``, parameter or ``for`` binds; None elsewhere."""
    mod = session.module(real)
    if mod is None or mod.bindings is None:
        return None
    hit = node_at(mod, line, col)
    if hit is None:
        return None
    node = hit.node
    kind = type(node)
    if kind is ast.Name:
        b = mod.bindings.of(node)
    elif kind in (ast.Assign, ast.Def, ast.Parameter, ast.For, ast.LoadName):
        at = node.local_span if kind is ast.LoadName else getattr(node, _NAMED.get(kind, "span"))
        name = node.var if kind is ast.For else node.local if kind is ast.LoadName else node.name
        b = next((d for d in mod.bindings.defs if d.span == at), None)
        if b is None and type(hit.stmt) is ast.Def:   # a local assigned again: its first assignment
            b = _local(mod, hit.stmt, name)
    else:
        return None
    return None if b is None else (b, mod, hit)


def _local(mod: ast.Module, fn: ast.Def, name: str):
    """The argument or local binding ``name`` of function ``fn``."""
    where = _extent(fn)
    return next((d for d in mod.bindings.defs if d.name == name and d.kind in (ARGUMENT, LOCAL)
                 and contains(where, d.span.line, d.span.col)), None)


def load_target(session, real: Path, path: str) -> Path | None:
    """The file a ``load(path)`` of ``real`` names, or None when it does not resolve."""
    try:
        return session.workspace.resolve_load(path, real, Span(str(real), 1, 1, 1, 1))
    except CompileError:
        return None


def top_level(mod: ast.Module, name: str):
    """The statement of ``mod`` that binds ``name`` at top level (an Assign, a Def, or the
    Load)."""
    for stmt in mod.stmts:
        if type(stmt) in (ast.Assign, ast.Def) and stmt.name == name:
            return stmt
        if type(stmt) is ast.Load and any(n.local == name for n in stmt.names):
            return stmt
    return None


def definition(session, real: Path, line: int, col: int) -> Span | None:
    """Where the name (or load path, or loaded name) at a position is defined: for a loaded
    name, the assignment in the loaded file (followed through that file's own loads)."""
    mod = session.module(real)
    if mod is None:
        return None
    hit = node_at(mod, line, col)
    if hit is not None and type(hit.node) is ast.Load:
        target = load_target(session, real, hit.node.path)
        return None if target is None else Span(session.workspace.display(target), 1, 1, 1, 1)
    found = binding_at(session, real, line, col)
    if found is None:
        return None
    b = found[0]
    if b.kind == BUILTIN:
        return None
    if b.kind == LOADED:
        target = _remote_file(session, real, b.load, b.remote)
        stmt = None if target is None else assignment(session, *target)
        return b.span if stmt is None else stmt.name_span
    return b.span


def assignment(session, real: Path, name: str) -> ast.Assign | ast.Def | None:
    """The top-level assignment or ``def`` of ``name`` in file ``real``, or None."""
    mod = session.module(real)
    stmt = None if mod is None else top_level(mod, name)
    return stmt if type(stmt) in (ast.Assign, ast.Def) else None


def references(session, real: Path, line: int, col: int, include_declaration: bool = True) -> list[Span]:
    """Every use of the binding at a position: in its own file and, for a top-level name,
    the load names and uses in the workspace's files that load it."""
    found = binding_at(session, real, line, col)
    if found is None:
        return []
    b, mod, _ = found
    if b.kind == LOADED:   # start from the definition in the loaded file
        target = _remote_file(session, real, b.load, b.remote)
        stmt = None if target is None else assignment(session, *target)
        if stmt is not None:
            return references(session, target[0], stmt.name_span.line, stmt.name_span.col, include_declaration)
    out = [n.span for n in mod.bindings.references(b)]
    if include_declaration and b.span is not None:
        out.insert(0, b.span)
    if b.kind in (TOP_LEVEL, PARAM, FUNCTION):
        out.extend(_loaders(session, real, b.name))
    return list(dict.fromkeys(out))


def _remote_file(session, real: Path, load: str, name: str, depth: int = 0) -> tuple[Path, str] | None:
    """(file, name) that a loaded name comes from, followed through the loaded files' own
    loads; None when a load path does not resolve."""
    target = load_target(session, real, load)
    if target is None or depth > 20:
        return None
    mod = session.module(target)
    stmt = None if mod is None else top_level(mod, name)
    if type(stmt) is ast.Load:
        n = next(n for n in stmt.names if n.local == name)
        return _remote_file(session, target, stmt.path, n.remote, depth + 1)
    return target, name


def workspace_files(ws) -> list[Path]:
    """The real paths of the ``.rcp`` files under the workspace's recipe and library
    directories that are files inside it; one that does not resolve inside it (``E0906``,
    ``E0907``: ``check``'s errors) is left out, not read, and the others are still listed."""
    out: dict = {}
    for d in (*ws.recipe_dirs, *ws.library_dirs):
        for p in sorted(d.rglob("*.rcp")) if d.is_dir() else ():
            try:
                found = ws.inside(p)
            except CompileError:
                continue
            if found.is_file():
                out[found] = None
    return list(out)


def _loaders(session, real: Path, name: str) -> list[Span]:
    out = []
    for other in workspace_files(session.workspace):
        if other == real:
            continue
        mod = session.module(other)
        if mod is None or mod.bindings is None:
            continue
        for stmt in mod.stmts:
            if type(stmt) is not ast.Load or load_target(session, other, stmt.path) != real:
                continue
            for n in stmt.names:
                if n.remote != name:
                    continue
                out.append(n.span)
                b = next((d for d in mod.bindings.defs if d.span == n.local_span), None)
                if b is not None:
                    out.extend(u.span for u in mod.bindings.references(b))
    return out


# hover -------------------------------------------------------------------------------------
def hover(session, real: Path, line: int, col: int, variant: str | None = None) -> tuple[str, Span] | None:
    """Markdown about what is at a position, and the span it covers; None for nothing.
    ``variant``: the variant whose effective MaxText values are shown (when the recipe does
    not declare it: ``default``, else its first variant)."""
    mod = session.module(real)
    if mod is None:
        return None
    hit = node_at(mod, line, col)
    if hit is None:
        return None
    if type(hit.node) is ast.StrLit:
        text = _hover_string(session, real, mod, hit, variant)
        return None if text is None else (text, hit.node.span)
    if type(hit.node) is ast.Keyword:
        if not _is_flag_keyword(hit):
            return None
        return _maxtext_key(session, real, hit, hit.node.name, variant), hit.node.name_span
    found = binding_at(session, real, line, col)
    if found is None:
        return None
    b = found[0]
    span = hit.node.span if type(hit.node) is ast.Name else b.span
    if b.kind == BUILTIN:
        sig, doc = BUILTIN_DOCS.get(b.name, (b.name, ""))
        return f"```rcp\n{sig}\n```\n{doc}\n\n(built-in)", span
    if b.kind == COMPREHENSION:
        return f"`{b.name}`: comprehension variable", span
    if b.kind in (ARGUMENT, LOCAL):
        fn = hit.stmt.name if type(hit.stmt) is ast.Def else "its function"
        return f"`{b.name}`: {'argument' if b.kind == ARGUMENT else 'local'} of {fn}()", span
    where = real
    name = b.name
    if b.kind == LOADED:
        target = _remote_file(session, real, b.load, b.remote)
        if target is None:
            return f"`{b.name}`: loaded from `{b.load}` (not found)", span
        where, name = target
    stmt = assignment(session, where, name)
    if stmt is None:
        return None
    wmod = session.module(where)
    head = f"**{b.name}**" + (f" — loaded from `{b.load}`" if b.kind == LOADED else "")
    doc = doc_comment(wmod, stmt)
    if type(stmt) is ast.Def:
        body = signature(wmod, stmt)
    elif _is_call(stmt.value, "param"):
        return head + "\n\n" + _param_text(stmt.value) + (f"\n\n{doc}" if doc else ""), span
    else:
        value = stmt.value.span
        lines = wmod.source.text_of(Span(value.path, stmt.span.line, stmt.span.col, value.end_line,
                                         value.end_col)).split("\n")
        body = "\n".join(lines[:12] + ["..."] * (len(lines) > 12))
    return (f"{head}\n\n```rcp\n{body}\n```\n" + (f"{doc}\n\n" if doc else "")
            + f"{session.workspace.display(where)}:{stmt.span.line}"), span


def signature(mod: ast.Module, fn: ast.Def) -> str:
    """``def NAME(a, b = DEFAULT, *, c = DEFAULT)`` of a function, on one line (each
    default as written, its whitespace runs made one space)."""
    parts, starred = [], False
    for p in fn.params:
        if p.keyword_only and not starred:
            parts.append("*")
            starred = True
        default = "" if p.default is None else " = " + " ".join(mod.source.text_of(p.default.span).split())
        parts.append(p.name + default)
    return f"def {fn.name}({', '.join(parts)})"


def doc_comment(mod: ast.Module, stmt) -> str:
    """A definition's documentation: the comment lines right above it (no blank line
    between), as Go's doc comments, without their ``#``; '' when there are none."""
    whole = {c.span.line: c.text for c in mod.comments
             if not mod.source.line_text(c.span.line)[:c.span.col - 1].strip()}
    lines = []
    line = stmt.span.line - 1
    while line in whole:
        lines.append(whole[line][1:].removeprefix(" "))
        line -= 1
    return "\n".join(reversed(lines)).strip()


def _is_call(node, name: str) -> bool:
    return type(node) is ast.Call and type(node.func) is ast.Name and node.func.id == name


def _param_text(call: ast.Call) -> str:
    src = lambda n: n.raw if type(n) is ast.StrLit else getattr(n, "text", None) or getattr(n, "id", "...")
    ptype = src(call.args[0]) if call.args else "?"
    kws = {k.name: k.value for k in call.kwargs}
    default = kws.get("default", call.args[1] if len(call.args) > 1 else None)
    out = [f"param `{ptype}`", f"default: `{src(default)}`" if default is not None else "required (no default)"]
    if "choices" in kws and type(kws["choices"]) is ast.ListLit:
        out.append("choices: " + ", ".join(f"`{src(c)}`" for c in kws["choices"].items))
    if type(kws.get("doc")) is ast.StrLit:
        out.append("\n" + kws["doc"].value)
    return "  \n".join(out)


def _hover_string(session, real: Path, mod, hit: Hit, variant: str | None) -> str | None:
    call, kw = enclosing_call(hit)
    if call is None:
        return None
    if call.func.id == "tpu_slice":
        try:
            s = tpu_slice(hit.node.value, hit.node.span)
        except CompileError as exc:
            return exc.diagnostics[0].message
        return (f"**TPU slice** `{s.accelerator}:{s.topology}` ({s.generation})  \n"
                f"chips: {s.chips} · hosts: {s.hosts} · chips per host: {s.chips_per_host} · "
                f"devices: {s.devices}  \nmachine type: `{s.machine_type}`")
    if call.func.id == "maxtext_flags" and kw is None and _is_key(hit):
        return _maxtext_key(session, real, hit, hit.node.value, variant)
    return None


def _is_key(hit: Hit) -> bool:
    parent = hit.chain[-2] if len(hit.chain) > 1 else None
    return type(parent) is ast.DictLit and any(k is hit.node for k, _ in parent.items)


def _is_flag_keyword(hit: Hit) -> bool:
    """Whether the hit is a keyword of ``dict(...)`` given to ``maxtext_flags`` as a layer
    (``maxtext_flags(dict(key = value), ...)``): a MaxText key."""
    if len(hit.chain) < 4:
        return False
    layer, flags = hit.chain[-2], hit.chain[-3]
    return (_is_call(layer, "dict") and _is_call(flags, "maxtext_flags")
            and any(a is layer for a in flags.args))


def _maxtext_key(session, real: Path, hit: Hit, key: str, variant: str | None) -> str | None:
    schema = maxtext_schema(session)
    out = [f"**{key}** (MaxText flag)"]
    if schema is not None:
        field = schema.fields.get(key)
        if field is None:
            out.append("not in the MaxText schema")
        else:
            out.append(f"type: `{_type_text(field['type'])}`")
            if "base" in field:
                out.append(f"base.yml: `{json.dumps(field['base'])}`")
            elif "default" in field:
                out.append(f"default: `{json.dumps(field['default'])}`")
            out.append(f"source: {field.get('source', schema.path)}")
    name = hit.stmt.name if type(hit.stmt) is ast.Assign else None
    if name is not None and not session.workspace.is_library(real):
        try:
            declared = session.variants(real)
            if variant not in declared:   # the one asked for, else default, else the first declared
                variant = "default" if "default" in declared or not declared else declared[0]
            report = explaining.explain(session.compiler(), real, name, key, variant)
        except CompileError:
            report = None
        if report is not None:
            out.append(f"\neffective in variant `{report['variant']}`: `{report['effective']}`")
            for step in report["chain"]:
                out.append(f"- `{step['value']}` at {step['location']} ({step['active']})")
    return "  \n".join(out)


def _type_text(t: dict) -> str:
    """A type node of the MaxText schema (:mod:`rcpc.domain.maxtext.schemagen`) as short text."""
    kind = t.get("type")
    if kind in ("enum", "literal") and t.get("values"):
        return " | ".join(json.dumps(v) for v in t["values"])
    if kind == "enum":
        return t.get("name", "enum")
    if kind == "union":
        return " | ".join(_type_text(x) for x in t.get("of", ()))
    if kind == "list":
        return f"list[{_type_text(t.get('items', {}))}]"
    bounds = [f"{op} {t[op]}" for op in ("ge", "gt", "le", "lt") if op in t]
    return str(kind) + (f" ({', '.join(bounds)})" if bounds else "")


def maxtext_schema(session):
    """The workspace's configured MaxText schema (``maxtext_schema`` in rcp.toml), or None."""
    c = session.compiler()
    try:
        return c.context.schema(None, Span(str(session.workspace.root), 0, 0, 0, 0))
    except CompileError:
        return None


# completion --------------------------------------------------------------------------------
@attrs.frozen
class Context:
    """The completion context of a cursor: ``calls``, the names of the calls whose argument
    list is open around it (innermost last; ``""`` for a bracket that is not a call); ``path``,
    for each open bracket from the innermost call outward, ``(bracket, keyword or dict key
    it is the value of)``; ``in_string``: the cursor is inside a string literal, with
    ``string_arg`` its argument index in the innermost call; ``key``: at a dict key;
    ``argument_start``: the word being typed starts an argument (after ``(`` or ``,``)."""

    calls: tuple
    path: tuple
    in_string: bool
    string_arg: int
    key: bool
    prefix: str
    argument_start: bool = False


_TOKEN = re.compile(r'#[^\n]*|"(?:[^"\\\n]|\\.)*"?|\'(?:[^\'\\\n]|\\.)*\'?|[A-Za-z_][A-Za-z0-9_]*|\S')


def completion_context(text: str, offset: int) -> Context:
    """Read the text before ``offset`` (0-based characters) as tokens, tracking open brackets;
    works on text that does not parse."""
    stack: list[list] = []   # [bracket, callee or "", the keyword/key it follows, arg index, saw ':']
    last_word, last_string, pending_key = None, None, None
    in_string, prefix = False, ""
    before = text[:offset]
    for m in _TOKEN.finditer(before):
        tok = m.group()
        if tok[0] in "\"'" and m.end() == offset and (len(tok) == 1 or tok[-1] != tok[0] or tok[-2:-1] == "\\"):
            in_string, prefix = True, tok[1:]
            break
        if tok[0] == "#":
            continue
        if tok in "([{":
            callee = last_word if tok == "(" else ""
            stack.append([tok, callee or "", pending_key, 0, False])
            pending_key = None
        elif tok in ")]}":
            if stack:
                stack.pop()
            pending_key = None
        elif tok == ",":
            if stack:
                stack[-1][3] += 1
                stack[-1][4] = False
            pending_key = None
        elif tok == ":":
            if stack:
                stack[-1][4] = True
            pending_key = last_string
        elif tok == "=":
            pending_key = last_word
        last_word = tok if (tok[0].isalpha() or tok[0] == "_") else None
        last_string = tok[1:-1] if tok[0] in "\"'" else None
    argument_start = False
    if not in_string:
        m = re.search(r"[A-Za-z_][A-Za-z0-9_]*\Z", before)
        prefix = m.group() if m else ""
        argument_start = before[:len(before) - len(prefix)].rstrip()[-1:] in ("(", ",")
    calls = tuple(f[1] for f in stack if f[0] == "(")
    path = []
    for f in reversed(stack):
        path.append((f[0], f[2]))
        if f[0] == "(" and f[1]:
            break
    top = stack[-1] if stack else None
    key = top is not None and top[0] == "{" and not top[4]
    return Context(calls, tuple(reversed(path)), in_string, top[3] if top else 0, key, prefix, argument_start)


@attrs.frozen
class Item:
    """One completion: ``label``, ``kind`` (keyword, function, variable, param, field, file,
    module), ``detail``, ``doc`` (Markdown) and the text to insert."""

    label: str
    kind: str
    detail: str = ""
    doc: str = ""
    insert: str | None = None


def completions(session, real: Path, text: str, offset: int) -> list[Item]:
    """The completions that fit at ``offset`` of ``text`` (the buffer of ``real``)."""
    ctx = completion_context(text, offset)
    callee = ctx.calls[-1] if ctx.calls else None
    if callee == "load" and len(ctx.path) == 1:
        return _load_items(session, real, text, offset, ctx)
    if ctx.key:
        quote = (lambda k: k) if ctx.in_string else (lambda k: json.dumps(k))
        if callee == "maxtext_flags" and len(ctx.path) == 2 and ctx.path[1][1] is None:
            return _maxtext_items(session, quote)
        if len(ctx.path) == 2 and (callee, ctx.path[1][1]) in (("variant", "set"), ("variants", "set"),
                                                               ("variants", "over")):
            return _param_items(session, real, quote)
        if callee == "jobset" and len(ctx.path) >= 2 and ctx.path[1][1] == "spec":
            return _jobset_items(ctx.path[2:], quote, session.caches)
        return []
    if ctx.in_string:
        return []
    if callee == "dict" and ctx.calls[-2:-1] == ("maxtext_flags",) and ctx.argument_start and len(ctx.path) == 1:
        return _maxtext_items(session, lambda k: f"{k} = ")
    items = []
    if callee in KEYWORDS and len(ctx.path) == 1:
        items.extend(Item(k, "keyword", f"{callee}() argument", insert=f"{k} = ") for k in KEYWORDS[callee])
    items.extend(Item(n, "function" if type(B.UNIVERSE.declared(n)) is Function else "keyword",
                      *BUILTIN_DOCS[n]) for n in sorted(B.NAMES))
    mod = session.module(real)
    if mod is not None and mod.bindings is not None:
        for d in mod.bindings.defs:
            if d.kind in (TOP_LEVEL, PARAM, LOADED, FUNCTION):
                detail = {TOP_LEVEL: "value", PARAM: "param", LOADED: f"loaded from {d.load}",
                          FUNCTION: "function"}[d.kind]
                items.append(Item(d.name, {PARAM: "param", FUNCTION: "function"}.get(d.kind, "variable"), detail))
    return list({i.label: i for i in items}.values())


def _load_items(session, real: Path, text: str, offset: int, ctx: Context) -> list[Item]:
    ws = session.workspace
    if not ctx.in_string:
        return []
    if ctx.string_arg == 0:
        return [*(Item("//" + ws.display(lib), "file", "library") for lib in workspace_files(ws)
                  if lib != real and ws.is_library(lib) and not stdlib.contains(lib)),
                *(Item(label, "file", "rcpc's standard library") for label in stdlib.files())]
    m = list(re.finditer(r"load\s*\(\s*(\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*')", text[:offset]))
    if not m:
        return []
    target = load_target(session, real, m[-1].group(1)[1:-1])
    if target is None:
        return []
    tmod = session.module(target)
    if tmod is None or tmod.bindings is None:
        return []
    return [Item(d.name, "function" if d.kind == FUNCTION else "variable", f"exported by {ws.display(target)}")
            for d in tmod.bindings.defs if d.kind in (TOP_LEVEL, PARAM, LOADED, FUNCTION)
            and not d.name.startswith("_")]


def _maxtext_items(session, quote) -> list[Item]:
    schema = maxtext_schema(session)
    if schema is None:
        return []
    out = []
    for key, field in schema.fields.items():
        start = field.get("base", field.get("default"))
        doc = f"default: `{json.dumps(start)}`  \nsource: {field.get('source', '')}" if start is not None else ""
        out.append(Item(key, "field", _type_text(field["type"]), doc, quote(key)))
    return out


def _param_items(session, real: Path, quote) -> list[Item]:
    mod = session.module(real)
    if mod is None:
        return []
    return [Item(s.name, "param", "param", _param_text(s.value), quote(s.name))
            for s in mod.stmts if type(s) is ast.Assign and _is_call(s.value, "param")]


JOBSET = "rcpc.lsp.query:jobset"  # the server's table (rcpc.core.session.Session.table): {"schema": the JobSet schema}


def jobset_schema(caches) -> dict:
    """The JobSet schema rcpc ships (``builtin:jobset``, :mod:`rcpc.domain.kube.crd`), read once
    for ``caches`` (the server's :class:`~rcpc.core.session.Session`)."""
    table = caches.table(JOBSET)
    if "schema" not in table:
        table["schema"] = json.loads((SCHEMA_DIR / "jobset.json").read_text(encoding="utf-8"))
    return table["schema"]


def _jobset_items(path: tuple, quote, caches) -> list[Item]:
    """JobSet fields at the end of ``path`` (the brackets opened inside ``spec = {``, each
    with the key it is the value of): a key steps into its property, a bracket with no key
    into the items of the list it is in."""
    node = jobset_schema(caches)["properties"]["spec"]
    for _, key in path:
        if key is not None:
            node = node.get("properties", {}).get(key)
        elif node.get("type") == "array":
            node = node.get("items")
        else:
            return []
        if node is None:
            return []
    if node.get("type") == "array":
        node = node.get("items", {})
    props = node.get("properties", {})
    required = set(node.get("required", ()))
    return [Item(k, "field", v.get("type", "object") + (" (required)" if k in required else ""),
                 insert=quote(k)) for k, v in sorted(props.items())]


# symbols -----------------------------------------------------------------------------------
@attrs.frozen
class Symbol:
    """An outline entry: ``name``, ``kind`` (param, flag set, render, variant, sweep, value,
    load, function), the statement's ``span``, the ``name_span`` to select, and ``children``."""

    name: str
    kind: str
    span: Span
    name_span: Span
    children: tuple = ()


def symbols(mod: ast.Module, points: dict | None = None) -> list[Symbol]:
    """The params, flag sets, renders, variants, sweeps, functions and other top-level values
    of a module. ``points``: {span of a ``variants(over = ...)`` call: [names of its points]}
    (:meth:`rcpc.lsp.session.Session.sweep_points`); each point is a child of its sweep, with
    the call's range (a point has no text of its own)."""
    points = points or {}
    out = []
    for stmt in mod.stmts:
        if type(stmt) is ast.Load:
            out.append(Symbol(stmt.path, "load", stmt.span, stmt.path_span))
        if type(stmt) is ast.ExprStmt:   # variant(...), jobset(...) written as statements
            out.extend(_inner_symbols(stmt.expr, points))
        if type(stmt) is ast.Def:
            out.append(Symbol(stmt.name, "function", _extent(stmt), stmt.name_span))
        if type(stmt) is not ast.Assign:
            continue
        inner = tuple(_inner_symbols(stmt.value, points))
        kind = "value"
        if _is_call(stmt.value, "param"):
            kind = "param"
        elif _is_call(stmt.value, "maxtext_flags"):
            kind = "flag set"
        elif any(_is_call(stmt.value, r) for r in RENDERS):
            kind = "render"
        elif _is_call(stmt.value, "variant"):
            kind = "variant"
        if kind in ("render", "variant"):
            inner = ()
        out.append(Symbol(stmt.name, kind, stmt.span, stmt.name_span, inner))
    return out


def _inner_symbols(node, points: dict):
    for n in walk(node):
        if type(n) is not ast.Call or type(n.func) is not ast.Name:
            continue
        if n.func.id == "variant" and n.args and type(n.args[0]) is ast.StrLit:
            yield Symbol(n.args[0].value, "variant", n.span, n.args[0].span)
        elif n.func.id == "variants":  # a sweep: its name template (or "variants"), its points inside
            template = next((k.value for k in n.kwargs if k.name == "name"), None)
            shown = template.span if type(template) is ast.StrLit else n.func.span
            yield Symbol(template.value if type(template) is ast.StrLit else "variants", "sweep", n.span, shown,
                         tuple(Symbol(p, "variant", n.span, shown) for p in points.get(n.span, ())))
        elif n.func.id in RENDERS:
            name = next((k.value for k in n.kwargs if k.name == "name"), None)
            if type(name) is ast.StrLit:
                yield Symbol(name.value, "render", n.span, name.span)
