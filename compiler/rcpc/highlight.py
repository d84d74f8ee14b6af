"""A Pygments lexer for ``.rcp`` recipes (registered under the ``pygments.lexers`` entry point,
so ``pygmentize -l rcp``, Sphinx and MkDocs code blocks tagged ``rcp`` highlight recipes).

The tokens follow the recipe grammar (``compiler/rcpc/syntax/grammar.lark``) and the TextMate
grammar in ``editors/vscode/syntaxes``: comments (an ``# rcpc: ignore[...]`` directive marked),
``load``, ``if``/``else``/``for``/``in``, ``and``/``or``/``not``, both spellings of the
constants (``True``/``true``, ``False``/``false``, ``None``/``null``), ints and floats with
``_`` separators and exponents (``1e-6``), strings, triple-quoted strings and f-strings with
their ``{expression}`` fields, dict keys, built-in functions and types, keyword arguments and
top-level definitions. Pygments is not a dependency of rcpc: the entry point is read only
where Pygments is installed.
"""

from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, include, words
from pygments.token import (Comment, Keyword, Name, Number, Operator, Punctuation, String, Text,
                            Whitespace)

from rcpc.highlight_words import BUILTINS, TYPES  # generated from the declarations: python -m rcpc.grammars
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


def _string(quote: str, token, multiline: bool, f: bool) -> list:
    body = [(r'\\(?:[\\\'"abfnrtv]|x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[0-7]{1,3}|N\{[^}]*\}|\n)',
             String.Escape)]
    if f:
        body += [(r"\{\{|\}\}", String.Escape), (r"\{", String.Interpol, "interpolation")]
    body += [(quote, token, "#pop")]
    if not multiline:
        body += [(r"\n", Text, "#pop")]   # an unclosed string ends at the line (the compiler reports it)
    stop = "{" if f else ""
    body += [(rf"[^\\{quote[0]}\n{stop}]+", token), (rf"[{quote[0]}\n\\{stop}]", token)]
    return body


class RcpLexer(RegexLexer):
    """Lexer of the rcpc recipe language (``*.rcp``)."""

    name = "rcp"
    aliases = ["rcp", "rcpc"]
    filenames = ["*.rcp"]
    mimetypes = ["text/x-rcp"]
    url = "https://pypi.org/project/rcpc/"

    tokens = {
        "root": [
            (r"^(load)(?=\s*\()", Keyword.Namespace),
            (rf"^({_NAME})(\s*)(=)(?!=)", bygroups(Name.Variable, Whitespace, Operator)),
            include("expression"),
        ],
        "expression": [
            (r"\n", Whitespace),
            (r"[ \t\f]+", Whitespace),
            (r"\\\n", Text),
            (r"#\s*rcpc:\s*ignore\[[^\]\n]*\].*$", Comment.Special),
            (r"#.*$", Comment.Single),
            (r'(?<![\w])("(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\')(?=\s*:)', Name.Tag),
            (r'f"""', String.Double, "fstring-triple-double"),
            (r"f'''", String.Single, "fstring-triple-single"),
            (r'f"', String.Double, "fstring-double"),
            (r"f'", String.Single, "fstring-single"),
            (r'"""', String.Double, "string-triple-double"),
            (r"'''", String.Single, "string-triple-single"),
            (r'"', String.Double, "string-double"),
            (r"'", String.Single, "string-single"),
            (r"(?:[0-9](?:_?[0-9])*\.(?:[0-9](?:_?[0-9])*)?(?:[eE][+-]?[0-9]+)?|\.[0-9](?:_?[0-9])*"
             r"(?:[eE][+-]?[0-9]+)?|[0-9](?:_?[0-9])*[eE][+-]?[0-9]+)(?![\w.])", Number.Float),
            (r"[0-9](?:_?[0-9])*(?![\w.])", Number.Integer),
            (words(("True", "False", "true", "false", "None", "null"), suffix=r"\b"), Keyword.Constant),
            (words(("if", "else", "for", "in"), suffix=r"\b"), Keyword),
            (words(("and", "or", "not"), suffix=r"\b"), Operator.Word),
            (rf"({_NAME})(\s*)(=)(?!=)", bygroups(Name.Attribute, Whitespace, Operator)),
            (rf"(\.)({_NAME})", bygroups(Punctuation, Name.Attribute)),
            (words(BUILTINS, prefix=r"\b", suffix=r"\b"), Name.Builtin),
            (words(TYPES, prefix=r"\b", suffix=r"\b"), Name.Builtin.Type),
            (_NAME, Name),
            (r"==|!=|<=|>=|<|>|//|[-+*%=]", Operator),
            (r"[()\[\]{},:.]", Punctuation),
        ],
        "interpolation": [
            (r"\}", String.Interpol, "#pop"),
            (r"\{", Punctuation, "brace"),
            include("expression"),
        ],
        "brace": [
            (r"\}", Punctuation, "#pop"),
            (r"\{", Punctuation, "brace"),
            include("expression"),
        ],
        "string-double": _string('"', String.Double, False, False),
        "string-single": _string("'", String.Single, False, False),
        "string-triple-double": _string('"""', String.Double, True, False),
        "string-triple-single": _string("'''", String.Single, True, False),
        "fstring-double": _string('"', String.Double, False, True),
        "fstring-single": _string("'", String.Single, False, True),
        "fstring-triple-double": _string('"""', String.Double, True, True),
        "fstring-triple-single": _string("'''", String.Single, True, True),
    }
