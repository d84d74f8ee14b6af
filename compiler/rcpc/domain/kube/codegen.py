"""Writes the validators of :mod:`rcpc.domain.kube.compiled`: for each schema of
:data:`~rcpc.domain.kube.compiled.COMPILED`, fastjsonschema's code for its structural form
(:meth:`rcpc.domain.kube.schema.SchemaIndex.structural` of the builtin schema) with the
options :data:`~rcpc.domain.kube.compiled.OPTIONS`, as ``compiled_<name>.py`` beside it.

fastjsonschema inlines a subschema's code at every place it occurs; each subschema the schema
repeats is first made one ``$ref``'d definition (:func:`shared`), so its code is one function,
called at each place (``compiled_jobset.py``: 1.3 MB of source and a 595 KB ``.pyc`` inlined,
341 KB and 210 KB shared; its import ~0.8 ms less). The digest the module is checked against
is still that of the structural form itself (:func:`rcpc.domain.kube.compiled.digest`).

The code is then made smaller, its verdicts unchanged (:func:`slim`): only the verdict is
used, so each violation is raised without its message, and the locals get short names; its
byte code loads in about half the time (``compiled_jobset``'s ``.pyc``: 1.9 MB of byte code,
~4 ms to import, was most of what the compiled validator cost a first build).

``python -m rcpc.domain.kube.codegen`` writes them; ``--check`` exits 1, naming each, when one
differs from what it would write (``tests/test_kube_compiled.py`` runs the same comparison).
Generating needs fastjsonschema at the version the modules name (``rcpc[test]`` pins it).
"""

from __future__ import annotations

import ast
import collections
import copy
import json
import string
import sys
from pathlib import Path

import fastjsonschema

from rcpc.core.generated import write_or_check
from rcpc.domain.kube.compiled import COMPILED, OPTIONS, digest
from rcpc.domain.kube.schema import SchemaIndex
from rcpc.domain.workspace import builtin_schema


# The generated code raises and catches fastjsonschema's exceptions; importing them imports the
# whole library (its drafts' regexes, ~2-10 ms of a first build), so the module takes
# rcpc.domain.kube.compiled's stand-ins instead and runs without fastjsonschema.
_LIBRARY_IMPORT = "from fastjsonschema import JsonSchemaValueException, JsonSchemaValuesException\n"
_OWN_IMPORT = "from rcpc.domain.kube.compiled import JsonSchemaValueException, JsonSchemaValuesException\n"
# It asks whether a number is a decimal.Decimal (``isinstance(x, (int, float, Decimal))``) and
# nothing more: importing decimal (~1 ms of an edit's build) for a type a manifest's plain data
# never holds is spared by rcpc.domain.kube.compiled's stand-in (no value is an instance of it).
_DECIMAL_IMPORT = "from decimal import Decimal\n"
_OWN_DECIMAL = "from rcpc.domain.kube.compiled import NotDecimal as Decimal\n"
_DECIMAL_USE = "(int, float, Decimal)"
# Its patterns were compiled at import (``REGEX_PATTERNS = {...: re.compile(...)}``: ~0.5 ms of
# a first build, and the JobSet schema's two patterns other than a quantity's are those of a
# status, which no render holds): each is a rcpc.core.patterns.LazyPattern instead, compiled on
# its first match from the engine code rcpc.core.pattern_codes ships for it (the same re.Pattern).
_REGEXES = "\nREGEX_PATTERNS = {\n"
_COMPILE = "re.compile("
_LAZY = "LazyPattern("
_LAZY_IMPORT = "from rcpc.core.patterns import LazyPattern\n"


def module_text(structural: dict, source: str = "") -> str:
    """The source of the generated module for ``structural``: fastjsonschema's code
    (:data:`OPTIONS`) for it with its repeated subschemas shared (:func:`shared`), importing its
    exceptions (and a stand-in for ``decimal.Decimal``) from :mod:`rcpc.domain.kube.compiled`
    rather than from fastjsonschema (and decimal), its patterns compiled on first use
    (:class:`rcpc.core.patterns.LazyPattern`), made smaller (:func:`slim`), the digest of
    ``structural`` itself (:func:`digest`) and ``source``, the identity of the schema file it
    is made from (:attr:`rcpc.domain.kube.schema.SchemaIndex.content`). ``ValueError`` when
    fastjsonschema's code does not import them, use Decimal or compile its patterns as this
    expects (another version)."""
    code = fastjsonschema.compile_to_code(shared(structural), **OPTIONS)
    if code.count(_LIBRARY_IMPORT) != 1:
        raise ValueError(f"fastjsonschema {fastjsonschema.VERSION}: its code no longer imports {_LIBRARY_IMPORT!r}")
    code = code.replace(_LIBRARY_IMPORT, _OWN_IMPORT + _LAZY_IMPORT)
    start = code.find(_REGEXES)
    end = code.find("\n}\n", start)
    if start < 0 or end < 0 or code.count(_COMPILE) != code.count(_COMPILE, start, end) or _LAZY in code:
        raise ValueError(f"fastjsonschema {fastjsonschema.VERSION}: its code compiles patterns other than in "
                         f"{_REGEXES.strip()!r}")
    code = code[:start] + code[start:end].replace(_COMPILE, _LAZY) + code[end:]
    if code.count(_DECIMAL_IMPORT) > 1 or code.count("Decimal") != code.count(_DECIMAL_IMPORT) + code.count(_DECIMAL_USE):
        raise ValueError(f"fastjsonschema {fastjsonschema.VERSION}: its code uses Decimal other than in {_DECIMAL_USE!r}")
    code = slim(code.replace(_DECIMAL_IMPORT, _OWN_DECIMAL))
    return (f'"""Generated by python -m rcpc.domain.kube.codegen (fastjsonschema {fastjsonschema.VERSION}); '
            f'do not edit."""\n# fmt: off\nSCHEMA_DIGEST = "{digest(structural)}"\n'
            f'SOURCE_DIGEST = "{source}"\n{code}')


# Where a Draft 7 schema holds subschemas (Validation, section 6): keyword -> how: one subschema,
# a list of them, a map of names to them ("dependencies": to a subschema or a list of names).
# "items" is one subschema or a list of them.
_APPLICATORS = {**dict.fromkeys(("additionalItems", "additionalProperties", "contains", "else", "if", "not",
                                 "propertyNames", "then"), "one"),
                **dict.fromkeys(("allOf", "anyOf", "oneOf"), "list"), "items": "one or list",
                **dict.fromkeys(("definitions", "dependencies", "patternProperties", "properties"), "map")}
# Smaller subschemas (a type and its format) are checked where they are as cheaply as called.
SHARED_MIN = 40


def shared(schema: dict, min_size: int = SHARED_MIN) -> dict:
    """A copy of the Draft 7 ``schema`` in which each subschema that occurs at two or more of its
    places, written in ``min_size`` or more characters of canonical JSON (sorted keys, no
    spaces), is one entry of ``definitions`` (named ``s<n>``), each occurrence replaced by a
    ``$ref`` to it: fastjsonschema then generates one function for it, called at each place,
    where it inlined its code at every place (a probe's schema 9 times in the JobSet's).

    The verdicts are the same: a schema ``{"$ref": R}`` is the subschema R resolves to (JSON
    Schema Draft 7, Validation's "Schema References With $ref": all other properties of a
    schema holding ``$ref`` are ignored), and only whole subschemas are replaced, never a
    keyword beside others. The largest is taken first, and the occurrences are counted again
    after each (those inside a shared one count once). Places are those of Draft 7's
    applicator keywords (``_APPLICATORS``); a boolean subschema is left. ``ValueError`` when
    ``schema`` holds ``$ref``, ``$id`` or ``definitions`` already (their resolution could change)."""
    schema = copy.deepcopy(schema)
    if any(key in sub for sub in [schema, *(sub for _, sub in _subschemas(schema))]
           for key in ("$ref", "$id", "definitions")):
        raise ValueError("the schema holds $ref, $id or definitions already")
    definitions: dict = {}
    while True:
        places = [(place, _canonical(sub)) for place, sub in _subschemas(schema) if "$ref" not in sub]
        counts = collections.Counter(text for _, text in places)
        repeated = [(len(text), text) for text, n in counts.items() if n > 1 and len(text) >= min_size]
        if not repeated:
            return schema
        text = max(repeated)[1]
        ref = {"$ref": f"#/definitions/s{len(definitions)}"}
        for (holder, key), written in places:
            if written == text:
                holder[key] = dict(ref)
        definitions[ref["$ref"].rsplit("/", 1)[1]] = json.loads(text)
        schema["definitions"] = definitions


def _canonical(sub: dict) -> str:
    return json.dumps(sub, sort_keys=True, separators=(",", ":"))


def _subschemas(schema: dict):
    """((holder, key), subschema) for each object subschema under ``schema``, depth first."""
    for keyword, value in schema.items():
        how = _APPLICATORS.get(keyword)
        if how in ("one", "one or list") and isinstance(value, dict):
            places = [(schema, keyword)]
        elif how in ("list", "one or list") and isinstance(value, list):
            places = [(value, i) for i in range(len(value))]
        elif how == "map" and isinstance(value, dict):
            places = [(value, name) for name in value]
        else:
            continue
        for holder, key in places:
            if isinstance(holder[key], dict):
                yield (holder, key), holder[key]
                yield from _subschemas(holder[key])


_RAISED = "JsonSchemaValueException"


def slim(code: str) -> str:
    """fastjsonschema's ``code`` with the same verdicts and less byte code: a
    ``raise JsonSchemaValueException(message)`` whose message cannot fail to be made (string
    constants, ``name_prefix or "data"``, ``str()`` of a name, and ``.format(**locals())`` of
    a constant whose every field is a plain name assigned in the function) raises the class
    without it; a call of one of the module's functions (a shared subschema's, :func:`shared`)
    passes no ``name_prefix`` when that name cannot fail to be made either (the function uses it
    in messages only); and, once no ``locals()`` is left, each local a function assigns is renamed
    ``_<n>``. Edits are made at the parsed nodes' places, so the rest of the text is
    fastjsonschema's. ``ValueError`` when a name ``_<n>`` is taken already."""
    tree = ast.parse(code)
    edits: list = []  # (start, end, text), as (line, column in UTF-8 bytes) pairs
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        assigned = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        dropped: set = set()  # ids of the nodes of the messages dropped
        for node in ast.walk(fn):
            if (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and isinstance(node.exc.func, ast.Name)
                    and node.exc.func.id == _RAISED and len(node.exc.args) == 1 and not node.exc.keywords
                    and _safe_message(node.exc.args[0], assigned)):
                edits.append((_start(node.exc), _end(node.exc), _RAISED))
                dropped.update(map(id, ast.walk(node.exc)))
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions
                    and len(node.args) == 3 and not node.keywords and _safe_message(node.args[2], assigned)):
                edits.append((_end(node.args[1]), _end(node.args[2]), ""))
                dropped.update(map(id, ast.walk(node.args[2])))
        kept = [n for n in ast.walk(fn) if id(n) not in dropped]
        if any(isinstance(n, ast.Name) and n.id == "locals" for n in kept):
            continue
        params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
        taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | params
        short = {name: f"_{i}" for i, name in enumerate(sorted(assigned - params))}
        if taken & set(short.values()):
            raise ValueError(f"names of the generated code are taken already: {sorted(taken & set(short.values()))}")
        edits.extend((_start(n), _end(n), short[n.id]) for n in kept if isinstance(n, ast.Name) and n.id in short)
    lines = code.encode("utf-8").splitlines(keepends=True)
    for (line, col), (end_line, end_col), text in sorted(edits, reverse=True):
        assert line == end_line, "an edited node spans lines"
        raw = lines[line - 1]
        lines[line - 1] = raw[:col] + text.encode() + raw[end_col:]
    return b"".join(lines).decode("utf-8")


def _start(node) -> tuple:
    return node.lineno, node.col_offset


def _end(node) -> tuple:
    return node.end_lineno, node.end_col_offset


def _safe_message(node, assigned: set) -> bool:
    """Whether making the message expression ``node`` cannot raise (see :func:`slim`)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _safe_message(node.left, assigned) and _safe_message(node.right, assigned)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):  # (name_prefix or "data")
        return all(isinstance(v, ast.Name) and v.id == "name_prefix" or isinstance(v, ast.Constant)
                   and isinstance(v.value, str) for v in node.values)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str":
        return len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Name)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and not node.args and len(node.keywords) == 1 and node.keywords[0].arg is None
            and isinstance(node.keywords[0].value, ast.Call) and isinstance(node.keywords[0].value.func, ast.Name)
            and node.keywords[0].value.func.id == "locals" and isinstance(node.func.value, ast.Constant)
            and isinstance(node.func.value.value, str)):
        try:
            fields = list(string.Formatter().parse(node.func.value.value))
        except ValueError:
            return False
        return all(f is None or f.isidentifier() and f in assigned and not spec and not conv
                   for _, f, spec, conv in fields)
    return False


def _made(name: str, api_version: str, kind: str) -> tuple[dict, str]:
    """The structural form of builtin schema ``name``'s ``apiVersion``/``kind`` and the
    identity of the file it is made from (:attr:`rcpc.domain.kube.schema.SchemaIndex.content`)."""
    index = SchemaIndex([builtin_schema(name)])
    return index.structural(api_version, kind), index.content


def expected() -> dict[Path, str]:
    """{path of each generated module under the package: its text}."""
    here = Path(__file__).resolve().parent  # the package's directory: the checkout's, in an editable install
    return {here / f"{module.rsplit('.', 1)[1]}.py": module_text(*_made(name, api, kind))
            for (api, kind), (module, name) in COMPILED.items()}


def main(argv: list[str]) -> int:
    """Write the generated modules (``--check``: exit 1, naming them, when one differs)."""
    return write_or_check(expected(), argv, "python -m rcpc.domain.kube.codegen")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
