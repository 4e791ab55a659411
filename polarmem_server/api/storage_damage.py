"""Damaged store files found while serving: reported, not hidden behind INTERNAL.

RocksDB verifies a block's checksum whenever it reads it; a flipped byte in a table file makes
the read fail with "Corruption: block checksum mismatch ...". The items in that block cannot be
read again by any retry, so the caller gets DATA_LOSS naming the namespace and the way out
(restore a backup, or `polarmem repair --salvage`, which copies what is readable to a new
directory), and the operator sees it at once: ``polarmem_storage_corruption_total`` counts each
finding (an alert fires on it), the health service ``polarmem.v1.MemoryService.storage`` turns
NOT_SERVING and stays so until a restart on repaired or restored files, and one ERROR line per finding names the file.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from polarmem_server.errors import PolarMemError, quoted

log = logging.getLogger("polarmem.storage")


class DataLoss(PolarMemError):
    """Stored data cannot be read back: a store file is damaged (a checksum does not match)."""

    status = "DATA_LOSS"


MAX_DETAIL_CHARS = 160


class StorageDamage:
    """Turns a corruption found by a read into DATA_LOSS and tells the operator."""

    def __init__(self, data_dir: str, count: Callable[[str], None], mark_unhealthy: Callable[[], None]) -> None:
        self._data_dir = data_dir
        self._count = count
        self._mark_unhealthy = mark_unhealthy

    def report(self, where: str, namespace: str, text: str) -> DataLoss:
        """Counts and logs one finding (``where``: the RPC or "scrub"); returns the caller's error."""
        self._count(where)
        self._mark_unhealthy()
        log.error(
            "damaged store file found by %s (namespace %s): %s; restore a backup or run "
            "`polarmem repair --salvage %s` with the server stopped (it writes what is readable to a new "
            "directory and leaves this one as it is)",
            where,
            namespace or "-",
            text,
            self._data_dir,
        )
        scope = f"namespace {quoted(namespace)}" if namespace else "the store"
        return DataLoss(
            f"{scope}: stored data is damaged and cannot be read ({text[:MAX_DETAIL_CHARS]}); the server "
            f"cannot answer this. Operator: restore a backup, or stop the server and run `polarmem repair "
            f"--salvage DATA_DIR`, which writes what is readable to a new directory (docs/failure-behaviour.md)"
        )
