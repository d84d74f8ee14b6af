"""Syntax: the grammar (lark's syntax), the parser (source text → AST: a fast recursive descent,
lark's LALR parser for errors) and the AST node types."""
