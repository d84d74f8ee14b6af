"""``python -m rcpc``: the same as the ``rcpc`` console script."""

import sys

from rcpc.cli import main

sys.exit(main())
