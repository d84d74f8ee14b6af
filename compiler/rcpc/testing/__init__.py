"""Test support shipped with rcpc: the golden-file syrupy extension and the pytest plugin."""
