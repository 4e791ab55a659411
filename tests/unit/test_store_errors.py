"""How a failed open is put to the operator (storage/local/store_errors.py): by what RocksDB said.

Before: any message with "lock" in it, a damaged table's "block" included, was called a data
directory held by another process."""

from pathlib import Path

import pytest

from polarmem_server.storage.local.store_errors import StoreDamaged, StoreLocked, open_error

DATA = Path("/srv/polarmem/data")


@pytest.mark.parametrize(
    "message",
    [
        f"Corruption: block checksum mismatch: stored = 1, computed = 2, type = 1 in {DATA}/000026.sst offset 0 size 39",
        f"Corruption: truncated block read from {DATA}/000026.sst offset 20092, expected 39 bytes, got 28",
        "Corruption: block checksum mismatch in /srv/BLOCKSTORE/000026.sst offset 0 size 39",  # LOCK in a path
    ],
)
def test_a_damaged_block_is_damage_naming_the_table_not_a_lock(message):
    error = open_error(DATA, Exception(message))
    assert type(error) is StoreDamaged
    assert "000026.sst" in str(error) and "--salvage" in str(error) and "in use" not in str(error)


@pytest.mark.parametrize(
    "message",
    [
        f"IO error: While lock file: {DATA}/LOCK: Resource temporarily unavailable",
        f"IO error: lock hold by current process, acquire time 1765000000 acquiring thread 1: {DATA}/LOCK: No locks available",
    ],
)
def test_rocksdb_lock_messages_say_the_directory_is_in_use(message):
    error = open_error(DATA, Exception(message))
    assert type(error) is StoreLocked and "in use by another process" in str(error)


@pytest.mark.parametrize(
    "message",
    [
        f"IO error: While open a file for lock: {DATA}/LOCK: Operation not permitted",
        f"IO error: While open a file for lock: {DATA}/LOCK: Permission denied",
    ],
)
def test_a_directory_this_process_cannot_write_is_not_called_locked(message):
    """Before: an unwritable data directory (here `chattr +i`) was "in use by another process"."""
    error = open_error(DATA, Exception(message))
    assert type(error) is not StoreLocked and "cannot be written by this process" in str(error)
