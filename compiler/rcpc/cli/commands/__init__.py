"""The commands of ``rcpc``, one module each (:mod:`rcpc.cli` describes what a module
declares and how the dispatch finds it)."""
