"""Atomic output: ``DIR/<recipe>/<variant>/<render>``.

Everything is evaluated and emitted in memory before anything is written. Each
``DIR/<recipe>/<variant>`` directory is then written into a temporary sibling and swapped
into place with renames, so a failed or interrupted build leaves the previous output whole.
Files are written as UTF-8 bytes with LF line ends exactly as emitted.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path

_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def write_variant(out_dir: Path, recipe: str, variant: str, renders) -> Path:
    """Replace ``out_dir/recipe/variant`` with exactly ``renders`` (name → text)."""
    target = out_dir / recipe / variant
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{variant}.tmp-", dir=target.parent))
    try:
        for name, text in renders:
            with open(tmp / name, "wb") as f:
                f.write(text.encode("utf-8"))
        old = None
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:  # no SIGINT/SIGTERM between the two renames
            if target.exists():
                old = Path(tempfile.mkdtemp(prefix=f".{variant}.old-", dir=target.parent))
                os.rmdir(old)
                os.rename(target, old)
            os.rename(tmp, target)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target
