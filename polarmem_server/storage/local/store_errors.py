"""The local store's errors and how a RocksDB failure to open is put to the operator.

Apart from store.py so that the check made before an open (preflight.py) raises the same
classes without importing the store."""

from __future__ import annotations

import re
from pathlib import Path

from polarmem_server._core import is_no_space
from polarmem_server.errors import EXIT_DAMAGED  # noqa: F401  (repair.py and the tests read it here)
from polarmem_server.storage.errors import StoreDamaged, StoreError, StoreLocked  # noqa: F401 - the seam's


def rocksdb_message(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def wal_files(path: str | Path) -> list[Path]:
    """The data directory's write-ahead log files, oldest first."""
    return sorted(Path(path).glob("*.log"))


_STORE_FILE = re.compile(r"[^\s:;,()]*?(?:\d+\.sst|MANIFEST-\d+|\bCURRENT\b|OPTIONS-\d+)")


def damaged_table_file(message: str) -> str | None:
    """The first table / MANIFEST / CURRENT / OPTIONS file a RocksDB corruption message names,
    or None when it names none (then it is the write-ahead log's)."""
    if ".log" in message and not _STORE_FILE.search(message):
        return None
    found = _STORE_FILE.search(message)
    return found.group(0) if found else None


def open_error(path: Path, exc: BaseException) -> StoreError:
    """One actionable line for a failed open, by what RocksDB said."""
    message = rocksdb_message(exc)
    if "Permission denied" in message or "Operation not permitted" in message:
        # (before the LOCK test: RocksDB names the LOCK file it could not create in such a directory too)
        return StoreError(
            f"data_dir {path} cannot be written by this process ({message}); give it write access or "
            "choose another --data-dir"
        )
    # RocksDB names its LOCK file (another process: "While lock file: DIR/LOCK: ..."; this one:
    # "lock hold by current process ... DIR/LOCK: ..."); a corruption's "block", or a path with
    # LOCK in a directory's name, must not match.
    if "/LOCK:" in message or "lock file" in message.lower() or "lock hold" in message.lower():
        return StoreLocked(
            f"data_dir {path} is in use by another process (RocksDB LOCK held: {message}); stop that "
            "process or choose another --data-dir"
        )
    if message.startswith("Corruption") or "corrupt" in message.lower():
        table = damaged_table_file(message)
        if table is not None:
            # A table, MANIFEST or CURRENT file: the WAL is not at fault and a plain repair (which
            # replays the WAL) cannot fix it; only RepairDB or a backup can.
            return StoreDamaged(
                f"data_dir {path} is damaged ({message}); the damaged file is {table}, a store file "
                "(not the write-ahead log); nothing was opened or changed. Restore a backup "
                f"(`polarmem restore SNAPSHOT NEW_DIR`), or run `polarmem repair --salvage {path}`: it "
                "writes what is still readable to a new directory (what the damaged file held is lost)"
            )
        logs = ", ".join(str(f) for f in wal_files(path)) or "no .log file"
        return StoreDamaged(
            f"data_dir {path} is damaged ({message}; write-ahead log: {logs}); nothing was opened or "
            f"changed. Run `polarmem repair {path}`: it writes everything up to the last intact record "
            "to a new directory and reports what is dropped, leaving this one as it is; or restore a "
            "backup"
        )
    if is_no_space(message):
        return StoreError(f"data_dir {path}: the disk is full ({message}); free space and start again")
    return StoreError(f"cannot open data_dir {path}: {message}")
