"""Attacks on the fast parser (rcpc.core.syntax.descent) against lark's, the reference
(tests/test_descent.py's ``check_agrees``: same statements, spans, comments, token count and
offsets; the fast parser declines what lark rejects), and on the wired
``parser.parse``: bad input gives located diagnostics, never a traceback."""

from __future__ import annotations

import pytest

from test_descent import check_agrees, wired_parse

# Corners of the lexer and the grammar: Unicode and odd whitespace, CR/CRLF, tabs and form
# feeds in indentation, comments at odd places, backslash continuations, strings and
# f-strings, numbers, keywords as parts of names, operators the language lacks, nesting.
CORNERS = [
 "x = 1\r\n", "x = 1\ry = 2\n", "\ufeffx = 1\n", "x = 1\u2028y = 2\n", "x = 1\x85\n", "x = \uff11\n", "x =\u00a01\n",
 "x = '\u2028'\n", "x = 'a\\\r\nb'\n", "x = 1 + \\\r\n 2\n", "x = 1\\\n", "x = 1\\", "x = 1 \\\r\n",
 "def f(a):\n\tif a:\n\t\treturn 1\n        return 2\n", "def f(a):\n  \fx = 1\n  return x\n",
 "def f(a):\n\f  x = 1\n  return x\n", "def f(a): # c\n  return a\n", "@x\ndef f():\n  return 1\n",
 "x = 1 # c", "# only\n\n# c\n", "", "\n\n", "   ", "\t\n", "x = [1, # c\n 2]\n",
 "x = f'{{'\n", "x = f'{a!r}'\n", "x = f'{a:>3}'\n", "x = f'{a=}'\n", "x = f'{a # c\n}'\n", "x = f'{\"a\"}'\n",
 "x = f'''{a\n}'''\n", "x = f'{[1,2][0]}'\n", "x = f'{ {1:2}[1] }'\n", "x = f'{}'\n", "x = f'{ }'\n", "x = f'{x if y else z}'\n",
 "x = F'a'\n", "x = rb'a'\n", "x = u'a'\n", "x = 'abc\n", "x = '''abc\n", "x = 'a\\qb'\n", "x = '\\N{DASH}'\n",
 "x = 1_000\n", "x = 1__0\n", "x = 0x10\n", "x = 00\n", "x = 1e5\n", "x = 1E+5\n", "x = .5\n", "x = 5.\n", "x = 5._\n",
 "x = 1_.5\n", "x = 1e\n", "x = " + "9"*5000 + "\n", "x = 1.real\n", "x = 1 .real\n", "x = 1..real\n",
 "x = notx\n", "x = x_if\n", "x = None_\n", "x = True1\n", "x = null_\n", "x = iff\n", "x = a not in b\n", "x = a not  in b\n",
 "x = (a not # c\n in b)\n", "x = (a not\n in b)\n", "x //= 2\n", "x = a ** b\n", "x = a <> b\n", "x = a => b\n", "x = !a\n",
 "x = - - -1\n", "x = -(-1)\n", "x = lambda: 1\n", "return 1\n", "if x:\n  y = 1\n", "for a in b:\n  c = 1\n",
 "def f():\n  def g():\n    return 1\n", "x = [1,]\n", "x = f(a,)\n", "x = {1:2,}\n", "x = (1,)\n", "x = ()\n",
 "x = " + "("*400 + "1" + ")"*400 + "\n", "x = " + "-"*2000 + "1\n", "x = " + "+".join(["a"]*3000) + "\n",
 "x = " + "[" * 3000 + "]" * 3000 + "\n", "x = a if b else c if d else e\n", "x = a < b < c\n", "x = not not a\n",
 "x = a in b in c\n", "x = [x for x in y if a if b]\n", "x = [x for x in y for z in w]\n", "x = {a: b for a in c}\n",
 "x = {a for a in c}\n", "load('a', 'b')\n", "load('a')\n", "load('a',)\n", "load('a', x='b',)\n", "load(\"a\", b)\n",
 "def f(*, a=1,):\n  return a\n", "def f(a, *):\n  return\n", "def f():\n  return\n", "def f():\n  return\n\nx = 1\n",
 "def f():\n  if a:\n    return 1\n  elif b:\n    return 2\n  else:\n    return 3\n", "def f():\n  for a in b:\n    pass\n",
 "def f():\n  x = 1\n   y = 2\n", "def f():\n    x = 1\n  y = 2\n", "x = 1\n  y = 2\n", "  x = 1\n", "x = (\n1\n)\n",
 "x = f(a=1, b)\n", "x = f(a, *b)\n", "x = a.b.c[1](2)\n", "x = 'a' 'b'\n", "x = a\ny = b\n\n\n", "x=1;y=2\n",
 "x = \"a\\\"b\"\n", "x = '''a'''b'''\n", "x = f\"{'a'}\"\n", "x = f'{f\"{a}\"}'\n", "x = f'{a}}'\n", "x = f'{a'\n",
 "x = f'{1 +}'\n", "x = f'{x = 1}'\n", "x = f'{load}'\n", "x = f'{True}'\n", "x = f'{ a }'\n", "x = f'{\ta\t}'\n",
 "x = f'{a\\\n}'\n", "x = f'''{a # c\n}'''\n", "x = f'{a}\\{b}'\n", "x = f'\\{{a}}'\n", "x = f'{{{a}}}'\n",
 "x = f'{a\r}'\n", "x = f'''{\r\na}'''\n", "x = f'''{a\n\n}'''\n", "x = f'''{\n  a\n}'''\n", "x = f'''{\n  a\n    + b}'''\n",
 "x = f'''{(\na)}'''\n", "x = f'{a:{b}}'\n", "x = f'{a!s:>{w}}'\n", "x = '\\x41'\n", "x = '\\u00e9'\n", "x = '\\777'\n",
 "x = b'a'\n", "x = 1if 1else 2\n", "x = 1or 2\n", "x = 0b1\n", "x = 1j\n", "x = 1e5_0\n", "x = 1_0e1_0\n", "x = 1.5e-3\n",
 "x = 01.5\n", "x = 1.5.5\n", "x = a.1\n", "x = a . b\n", "x = a.\nb\n", "x = [\n#c\n]\n", "x = {\n}\n", "x = a[\n1\n]\n",
 "def f(a=[\n1]):\n  return a\n", "def f(a):\n  return (\n1)\n", "def f(a):\n  x = [\n    1,\n]\n  return x\n",
 "def f(a):\n  return 1\n# c\n  # d\nx = 1\n", "def f(a):\n  return 1\n  # c\n", "def f(a):\n  return 1\n\t\n",
 "def f(a):\n  return 1\n\\\nx=1\n", "def f(a):\n \\\n return 1\n", "x = 1\n\\\n", "\\\nx = 1\n", "\\\n",
 "x = 1\n\x0c\n", "def f():\n  x = 1\n\x0c  y = 2\n", "def f():\n  x = 1\n  \x0cy = 2\n", "def f():\n\x0c  x = 1\n  y = 2\n",
 "def f():\n        x = 1\n\ty = 2\n", "def f():\n\tx = 1\n        y = 2\n", "def f():\n  x = 1\r\n  y = 2\r\n", "def f():\r\n  x = 1\r\n",
 "def f():\r\n  x = 1\r\n\r\n  \r\ny=1\r\n", "x = 1 # c\r\n", "# c\r\n", "x = 1\r\n# c\r", "x = '''a\r\nb'''\r\n", "x = 'a\\\r\nb'\r\n",
 "x = 1\n\n\n# end", "x = 1 #", "x = [1 # c]\n]\n", "x = f(# c\n)\n", "x = f(\n)\n", "x = a if b else\\\n c\n",
 "if = 1\n", "x.y = 1\n", "x[0] = 1\n", "x = y = 1\n", "x == 1\n", "1\n", "'doc'\n", "f()\n", "def f(): return 1\n",
 "def f():\n  if a: return 1\n", "def f():\n  if a:\n    return 1\n  else:\n  return 2\n", "def f():\n  return 1 if a else 2\n",
 "def f():\n  return [x for x in y]\n", "def f():\n  return\n  return\n", "x = def\n", "x = elif\n", "def f(a, a):\n  return a\n",
 "x = {1: 2, 3}\n", "x = {1}\n", "x = {**a}\n", "x = [*a]\n", "x = f(**a)\n", "x = a % b // c * d\n", "x = a ** -b\n",
 "x = a -- b\n", "x = a+-+b\n", "x = +a\n", "x = a@b\n", "x = a & b\n", "x = a | b\n", "x = ~a\n", "x = a ^ b\n", "x = a >> b\n",
 "x = a ? b\n", "x = `a`\n", "x = a $ b\n", "x = a\x00\n", "x = 'a\x00'\n", "x = é\n", "é = 1\n", "x = 'é'\n", "# é\n",
 "x = 1\n\x1a", "x = 1\v\n", "x = 1\n\v", "x\t=\t1\n", "x = 1\u3000\n",
]


@pytest.mark.parametrize("text", CORNERS)
def test_fast_parser_agrees_with_lark_on_corners(text):
    check_agrees(text)


# An f-string where a load() names a symbol: the grammar's load_arg takes a STRING, which
# lexes f"..." too. The builder read ``.value`` of the FString and raised AttributeError out of
# both parsers (a traceback from `rcpc check`); it is E0205 at the f-string, as for the path.
@pytest.mark.parametrize("text", ['load("//a.rcp", f"x")\n', 'load("//a.rcp", y = f"x")\n',
                                  "load('a', f'{x}' # c\n,\n\t"])
def test_an_f_string_load_name_is_a_located_error(text):
    got = wired_parse(text)
    assert got[0] == "error" and got[1][0].span is not None
    if text.endswith(")\n"):  # the whole statement: the f-string is what is wrong
        assert got[1][0].code == "E0205" and "load name is a plain string" in got[1][0].message
