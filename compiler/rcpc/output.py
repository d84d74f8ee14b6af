"""Atomic output: ``DIR/<recipe>/<variant>/<render>``.

Everything is evaluated, checked and emitted in memory before anything is written. Then:

1. every variant directory is written into a temporary sibling (``.<variant>.tmp-*``);
2. with SIGINT and SIGTERM held back until the end, each existing variant directory is
   renamed aside and its temporary sibling renamed into place (if a rename fails, the ones
   done are undone), then the old directories are deleted.

Leftovers of a build killed outright (SIGKILL) are swept by the next build.

So a failed or interrupted build leaves the previous output whole, and a finished one leaves
exactly the new renders. A signal that arrives during step 2 takes effect after it, as
:class:`InterruptedAfterWrite`: the CLI then says the new output was written. An exclusive lock on ``.DIR.rcpc-lock`` beside ``DIR`` (``fcntl.flock``) keeps two
concurrent builds into one directory from interleaving: the second waits for the first.
Files are written as UTF-8 bytes with LF line ends exactly as emitted.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import tempfile
from pathlib import Path

from rcpc.files import read_limited

_SIGNALS = {signal.SIGINT, signal.SIGTERM}
LOCK_SUFFIX = ".rcpc-lock"
_UMASK = os.umask(0)
os.umask(_UMASK)


class InterruptedAfterWrite(KeyboardInterrupt):
    """Ctrl-C or SIGTERM arrived while the new output was being swapped in: it is in place,
    whole (the signal was held back until then)."""


@contextlib.contextmanager
def locked(out_dir: Path):
    """Hold the output directory's build lock (blocking until it is free). The lock file sits
    beside the directory, so the directory holds renders only."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir.parent / f".{out_dir.name}{LOCK_SUFFIX}", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def unchanged(out_dir: Path, recipe: str, variant: str, renders) -> bool:
    """True when ``out_dir/recipe/variant`` already holds exactly these renders, byte for
    byte (and nothing else), so a warm build need not write it."""
    target = out_dir / recipe / variant
    try:
        if sorted(p.name for p in target.iterdir()) != sorted(name for name, _ in renders):
            return False
        for name, text in renders:  # bounded: an output replaced by a FIFO or /dev/zero is no hang
            data = text.encode("utf-8")
            if read_limited(target / name, len(data)) != data:
                return False
        return True
    except OSError:
        return False


def write_all(out_dir: Path, variants: list) -> None:
    """Replace each ``out_dir/<recipe>/<variant>`` with exactly its renders, atomically as a
    whole. ``variants`` is a list of (recipe name, variant name, [(render name, text)])."""
    staged: list[tuple[Path, Path]] = []
    try:
        with locked(out_dir):
            for parent in {out_dir / recipe for recipe, _, _ in variants}:
                _sweep(parent)
            for recipe, variant, renders in variants:
                target = out_dir / recipe / variant
                target.parent.mkdir(parents=True, exist_ok=True)
                # a signal between mkdtemp's mkdir and noting the directory would leave it behind
                blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
                try:
                    tmp = Path(tempfile.mkdtemp(prefix=f".{variant}.tmp-", dir=target.parent))
                    staged.append((tmp, target))
                finally:
                    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
                os.chmod(tmp, 0o777 & ~_UMASK)  # mkdtemp makes 0700; outputs get the usual mode
                for name, text in renders:
                    with open(tmp / name, "wb") as f:
                        f.write(text.encode("utf-8"))
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
            try:  # the swap and the clean-up of replaced directories run to the end
                old_dirs = _swap(staged)
                staged = []
                for old in old_dirs:
                    shutil.rmtree(old, ignore_errors=True)
            finally:
                try:  # a signal held back meanwhile is raised here
                    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
                except KeyboardInterrupt:
                    if staged:  # the swap failed and was undone
                        raise
                    raise InterruptedAfterWrite from None
    finally:
        for tmp, _ in staged:
            shutil.rmtree(tmp, ignore_errors=True)


def _sweep(parent: Path) -> None:
    """Remove what an earlier build killed outright (SIGKILL, power loss) left behind."""
    if not parent.is_dir():
        return
    for p in parent.glob(".*.tmp-*"):
        shutil.rmtree(p, ignore_errors=True)
    for p in parent.glob(".*.old-*"):
        shutil.rmtree(p, ignore_errors=True)


def _swap(staged: list) -> list[Path]:
    """Rename every staged directory into place; returns the replaced ones (to delete)."""
    done: list[tuple[Path, Path, Path | None]] = []
    try:
        for tmp, target in staged:
            old = None
            if target.exists():
                old = target.parent / f".{target.name}.old-{tmp.name.rsplit('-', 1)[-1]}"
                os.rename(target, old)
            try:
                os.rename(tmp, target)
            except OSError:
                if old is not None:
                    os.rename(old, target)
                raise
            done.append((tmp, target, old))
    except OSError:
        for tmp, target, old in reversed(done):  # undo: previous output back in place
            os.rename(target, tmp)
            if old is not None:
                os.rename(old, target)
        raise
    return [old for _, _, old in done if old is not None]
