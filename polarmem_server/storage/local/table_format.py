"""Stores written before the core owned the RocksDB handle, moved once to the table format the
core's RocksDB reads.

Until round 36 the store was opened through rocksdict, which bundles RocksDB 9.8 and writes
block-based tables at format 6. The core links Debian's RocksDB 7.8 (cpp/src/kv_store.cpp), which
reads format 5 at most and refuses such a store ("Corrupt or unsupported format_version: 6").
RocksDB 9.8 reads and writes format 5, so the move is: rocksdict opens the store with format 5 on
every column family and compacts each one to its last level, which rewrites every table; the
MANIFEST and write-ahead log formats the two versions share. rocksdict stays a dependency for this
alone.

Nothing is written to a store the checks made before any open refuse (preflight.py): rocksdict
first opens it read-only and the same checks run on that view; only then is it opened for the
rewrite. An interrupted move leaves some tables at format 6, so the next open moves it again.
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path

from polarmem_server.storage.local import preflight
from polarmem_server.storage.local.store_errors import StoreError, open_error

log = logging.getLogger("polarmem.storage")

NEWER_FORMAT_MARK = "unsupported format_version: 6"  # what 7.8 says of a 9.8 table
TABLE_FORMAT = 5


def is_newer_format_refusal(exc: BaseException | None) -> bool:
    """Whether the core refused to open a store (``exc`` or one of its causes) only because its
    tables are at a format newer than it reads."""
    while exc is not None:
        if NEWER_FORMAT_MARK in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class _ReadOnlyView:
    """What preflight's content checks read, from rocksdict's read-only open."""

    def __init__(self, db) -> None:
        self._db = db

    def get(self, family: str, key: bytes) -> bytes | None:
        return self._db.get_column_family(family).get(key)

    def live_table_files(self) -> list[str]:
        return [Path(f["name"]).name for f in self._db.live_files()]


def move_to_format_5(path: str | Path, families: tuple[str, ...], schema_version: int) -> None:
    """Rewrites every table of the store at `path` at block-based format 5, in place."""
    from rocksdict import (  # only here: the one use left of rocksdict
        AccessType,
        BlockBasedOptions,
        BottommostLevelCompaction,
        CompactOptions,
        DBRecoveryMode,
        Options,
        Rdict,
    )

    def options() -> Options:
        made = Options(raw_mode=True)
        table = BlockBasedOptions()
        table.set_format_version(TABLE_FORMAT)
        made.set_block_based_table_factory(table)
        made.set_paranoid_checks(True)
        made.set_wal_recovery_mode(DBRecoveryMode.absolute_consistency())
        return made

    path = Path(path)
    started = time.monotonic()
    log.warning("store %s: tables at a format this server's RocksDB cannot read; rewriting them at format 5", path)
    try:
        present = set(Rdict.list_cf(str(path), Options(raw_mode=True)))
        named = {cf: options() for cf in present if cf != "default"}
        with tempfile.TemporaryDirectory(prefix="polarmem-format-") as log_dir:
            read_only = options()
            read_only.set_db_log_dir(log_dir)
            db = Rdict(str(path), read_only, column_families=named, access_type=AccessType.read_only())
            try:
                preflight.check_contents(path, _ReadOnlyView(db), present, families, schema_version)
            finally:
                db.close()
                del db
        db = Rdict(str(path), options(), column_families=named)
        try:
            compact = CompactOptions()
            compact.set_bottommost_level_compaction(BottommostLevelCompaction.force())
            db.compact_range(None, None, compact)
            for cf in named:
                db.get_column_family(cf).compact_range(None, None, compact)
        finally:
            db.close()
            del db
    except StoreError:
        raise
    except Exception as exc:
        raise open_error(path, exc) from exc
    log.warning("store %s: tables rewritten at format 5 in %.1f s", path, time.monotonic() - started)
