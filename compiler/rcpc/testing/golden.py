"""A syrupy extension for golden files: one file per render at
``<golden_dir>/<recipe>/<variant>/<render>``, byte-exact.

syrupy's stock single-file TEXT mode reads with universal newlines (a ``\\r`` in a render
would never match) and binary mode diffs as one bytes repr; this extension reads and writes
UTF-8 with no newline translation in either direction, through the functions ``rcpc test``
uses (:func:`rcpc.review.golden.read_golden`, :func:`~rcpc.review.golden.write_golden`), so the
golden's bytes are exactly the render's bytes, whichever of the two wrote it.

Which goldens exist is decided by the recipes, not by syrupy's test-file layout, so syrupy's
own unused-snapshot discovery is switched off here; the plugin reports orphans itself.
"""

from __future__ import annotations

from pathlib import Path

from syrupy.data import SnapshotCollections
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode


class GoldenExtension(SingleFileSnapshotExtension):
    """Stores the data of a test item with a ``golden_path`` attribute at that path."""

    _write_mode = WriteMode.TEXT
    file_extension = ""
    _known: tuple | None = None  # (golden path, its text or None): read already by the item

    def known(self, path: Path, text: str | None) -> None:
        """Give this extension (one assertion's) the text of golden ``path`` the item has read
        already (:func:`rcpc.review.golden.read_golden`, None when missing): syrupy's read of
        it returns that text, so that each golden is read once a run."""
        self._known = (Path(path), text)

    @classmethod
    def _golden(cls, test_location) -> Path | None:
        # syrupy's report asks every extension it has seen about every collected test;
        # only our golden items have a golden path.
        path = getattr(test_location.item, "golden_path", None)
        return Path(path) if path is not None else None

    @classmethod
    def get_location(cls, *, test_location, index) -> str:
        golden = cls._golden(test_location)
        if golden is None:
            return super().get_location(test_location=test_location, index=index)
        return str(golden)

    @classmethod
    def get_snapshot_name(cls, *, test_location, index=0) -> str:
        return test_location.snapshot_name

    @classmethod
    def matches_test_location(cls, *, test_location, snapshot_location: str) -> bool:
        return Path(snapshot_location) == cls._golden(test_location)

    @classmethod
    def dirname(cls, *, test_location) -> str:
        golden = cls._golden(test_location)
        if golden is None:
            return super().dirname(test_location=test_location)
        return str(golden.parent)

    @classmethod
    def discovery_dirname(cls, *, test_location) -> str:
        return cls.dirname(test_location=test_location)

    def discover_snapshots(self, *, test_location, ignore_extensions=None) -> SnapshotCollections:
        return SnapshotCollections()

    def read_snapshot_data_from_location(self, *, snapshot_location: str, snapshot_name: str,
                                         session_id: str):
        from rcpc.review.golden import read_golden

        if self._known is not None and self._known[0] == Path(snapshot_location):
            return self._known[1]  # the item read it (with its golden directory's checks)
        return read_golden(Path(snapshot_location))  # bounded, no symlink: as rcpc test reads it

    @classmethod
    def write_snapshot_collection(cls, *, snapshot_collection, name_order=None) -> None:
        path = Path(snapshot_collection.location)
        data = next(iter(snapshot_collection)).data
        if not isinstance(data, str):
            raise TypeError(f"golden data must be str, got {type(data).__name__}")
        from rcpc.review.golden import write_golden

        write_golden(path, data)  # the bytes rcpc test --snapshot-update writes
