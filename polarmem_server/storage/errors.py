"""The storage errors the layers above act on, whichever backend raised them: a data directory
that cannot be opened (StoreError: damaged, locked) and the damage text of a failed read. Part of
the seam (backend.py): the API turns them into its start-up refusals and DATA_LOSS answers
without importing a backend's modules."""

from __future__ import annotations

from polarmem_server import errors

CORRUPTION_MARK = "Corruption:"
MAX_CAUSES = 8  # how far down an exception's cause chain RocksDB's text is looked for


class StoreError(errors.Unavailable):
    """The data directory cannot be used (wrong schema, locked by another process)."""


class StoreDamaged(StoreError):
    """The write-ahead log or another store file is cut or corrupt; nothing was opened."""


class StoreLocked(StoreError):
    """Another process (or another Store in this one) holds the data directory's LOCK."""


def corruption_text(exc: BaseException | None) -> str | None:
    """RocksDB's corruption message carried by ``exc`` or one of its causes, else None."""
    for _ in range(MAX_CAUSES):
        if exc is None:
            return None
        text = " ".join(str(exc).split())
        if CORRUPTION_MARK in text:
            return text[text.index(CORRUPTION_MARK) :]
        exc = exc.__cause__ or exc.__context__
    return None
