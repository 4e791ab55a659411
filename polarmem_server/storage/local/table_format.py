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
first opens it read-only, the same checks run on that view and every block is read once; only
then is it opened for the rewrite. An interrupted move (a full disk) leaves a consistent store
with some tables still at format 6, so the next open carries on.
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path

from polarmem_server._core import KvStore
from polarmem_server.storage.local import preflight
from polarmem_server.storage.local.store_errors import StoreError, open_error, rocksdb_message

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


def newest_table_format(path: str | Path) -> int:
    """The highest block-based format among the store's complete table files (their footers end
    with the format as 4 bytes, then the 8-byte magic), 0 where it has none."""
    newest = 0
    for table in Path(path).glob("*.sst"):
        try:
            with open(table, "rb") as handle:
                size = handle.seek(0, 2)
                if size < 12:
                    continue
                handle.seek(size - 12)
                tail = handle.read(12)
        except OSError:
            continue
        if tail[4:] == preflight.TABLE_MAGIC:
            newest = max(newest, int.from_bytes(tail[:4], "little"))
    return newest


def _rocksdict_options(point_in_time: bool):
    from rocksdict import BlockBasedOptions, DBRecoveryMode, Options

    made = Options(raw_mode=True)
    table = BlockBasedOptions()
    table.set_format_version(TABLE_FORMAT)
    made.set_block_based_table_factory(table)
    made.set_paranoid_checks(True)
    made.set_wal_recovery_mode(
        DBRecoveryMode.point_in_time() if point_in_time else DBRecoveryMode.absolute_consistency()
    )
    return made


def check_read_only(path: str | Path, families: tuple[str, ...], schema_version: int, point_in_time: bool) -> None:
    """What preflight checks of any store, on rocksdict's read-only view of one at format 6, and
    every block of every column family read once (RocksDB verifies each block's checksum): a
    store that passes can be compacted without meeting damage half-way. Changes nothing; raises
    StoreDamaged / StoreError as preflight does."""
    from rocksdict import AccessType, Options, Rdict

    path = Path(path)
    try:
        present = set(Rdict.list_cf(str(path), Options(raw_mode=True)))
        named = {cf: _rocksdict_options(point_in_time) for cf in present if cf != "default"}
        with tempfile.TemporaryDirectory(prefix="polarmem-format-") as log_dir:
            read_only = _rocksdict_options(point_in_time)
            read_only.set_db_log_dir(log_dir)
            db = Rdict(str(path), read_only, column_families=named, access_type=AccessType.read_only())
            try:
                preflight.check_contents(path, _ReadOnlyView(db), present, families, schema_version)
                for family in [db, *(db.get_column_family(cf) for cf in named)]:
                    for _ in family.keys():
                        pass
            finally:
                db.close()
                del db
    except StoreError:
        raise
    except Exception as exc:
        raise open_error(path, exc) from exc


def move_to_format_5(
    path: str | Path, families: tuple[str, ...], schema_version: int, point_in_time: bool = False
) -> None:
    """Rewrites every table of the store at `path` at block-based format 5, in place, after
    check_read_only passed (`point_in_time`: the open's write-ahead-log recovery, as the caller's)."""
    from rocksdict import Rdict

    path = Path(path)
    started = time.monotonic()
    log.warning("store %s: tables at a format this server's RocksDB cannot read; rewriting them at format 5", path)
    check_read_only(path, families, schema_version, point_in_time)
    try:
        present = set(Rdict.list_cf(str(path), _rocksdict_options(point_in_time)))
        named = {cf: _rocksdict_options(point_in_time) for cf in present if cf != "default"}
        _rewrite(Rdict(str(path), _rocksdict_options(point_in_time), column_families=named), tuple(named))
    except Exception as exc:
        # Past the checks, RocksDB has started writing: what it left is a consistent store, part
        # of it rewritten, and the next open carries on.
        raise StoreError(
            f"data_dir {path}: rewriting its tables at format 5 stopped ({rocksdb_message(exc)}); the "
            "directory is consistent and part of it rewritten: fix the cause (free space, the disk) "
            "and start again, which carries on"
        ) from exc
    log.warning("store %s: tables rewritten at format 5 in %.1f s", path, time.monotonic() - started)


def repair_db(path: str | Path, families: tuple[str, ...]) -> None:
    """RocksDB's RepairDB through a RocksDB that reads the store's tables: where any is at format
    6, rocksdict's (the core's 7.8 would set every such table aside as unreadable), which then
    adds the missing column families and rewrites the tables at format 5."""
    if newest_table_format(path) <= TABLE_FORMAT:
        KvStore.repair(str(path))
        return
    from rocksdict import Rdict

    Rdict.repair(str(path), _rocksdict_options(point_in_time=True))
    options = _rocksdict_options(point_in_time=True)
    options.create_missing_column_families(True)
    named = {cf: _rocksdict_options(point_in_time=True) for cf in families}
    _rewrite(Rdict(str(path), options, column_families=named), families)


def _rewrite(db, families: tuple[str, ...]) -> None:
    """Compacts the default family and `families` of an open rocksdict store to their last level,
    which rewrites every table with the open's table options (format 5), then closes it."""
    from rocksdict import BottommostLevelCompaction, CompactOptions

    try:
        compact = CompactOptions()
        compact.set_bottommost_level_compaction(BottommostLevelCompaction.force())
        db.compact_range(None, None, compact)
        for cf in families:
            db.get_column_family(cf).compact_range(None, None, compact)
    finally:
        db.close()
        del db
