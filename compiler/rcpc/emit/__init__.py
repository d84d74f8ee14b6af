"""Canonical emitters: flag tokens / shell form, and YAML manifests."""
