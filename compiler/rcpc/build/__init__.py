"""Building for the tool: the build cache, ``-j`` parallelism and its worker pool, output
generations and replay (docs/architecture.md)."""
