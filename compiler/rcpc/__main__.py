"""``python -m rcpc`` and the ``rcpc`` console script."""

import sys


def run() -> int:
    """Import the CLI and run it; Ctrl-C (or SIGTERM) at any moment exits 130 quietly."""
    try:
        from rcpc.cli import main

        return main()
    except KeyboardInterrupt:  # before main() handles it itself (imports, set-up)
        sys.stderr.write("rcpc: interrupted; nothing was written\n")
        return 130


if __name__ == "__main__":
    sys.exit(run())
