"""Canonical emitters of the core's data values: YAML documents and JSON."""
