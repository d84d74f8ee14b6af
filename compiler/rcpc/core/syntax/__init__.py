"""Syntax: the lark grammar, the parser (source text → AST) and the AST node types."""
