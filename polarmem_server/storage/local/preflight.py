"""Checks a data directory before the store opens it for writing, changing nothing.

Why: a read-write RocksDB open *acts* on what it finds. With CURRENT missing it creates a new,
empty database and then deletes every table file the new MANIFEST does not name (issue 49: a
missing CURRENT emptied the store, and the systemd restart made it happen unattended); with a
MANIFEST cut short it recreates the lost column families and deletes their tables the same way.
So the damage has to be found before that open, by something that writes nothing:

1. a directory with no store file at all is new (the only case the store may create);
2. an existing store must have CURRENT (RocksDB would otherwise take it for a new one);
3. the store opens **read-only** (no LOCK, no new files; RocksDB's info LOG goes to a temporary
   directory), in strict WAL recovery, with paranoid checks: a cut or corrupt WAL, a damaged
   MANIFEST, a table whose size or footer is wrong all fail here;
4. every column family the server keeps is there, and the schema version is one it reads;
5. no complete table file lies in the directory unnamed by the MANIFEST (the trace of a MANIFEST
   that lost its last edits: a read-write open would delete those tables as obsolete). An
   incomplete one, without the table footer's magic number, is what a crash mid-flush or
   mid-compaction leaves, and RocksDB deletes it rightly.

Any failure raises :class:`StoreDamaged` (or :class:`StoreError`) having opened nothing for
writing, so the directory stays byte-identical for a person (or `polarmem repair`) to look at.
"""

from __future__ import annotations

import fcntl
import os
import re
import struct
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Protocol

from polarmem_server._core import KvStore

from polarmem_server.storage.local.store_errors import StoreDamaged, StoreError, open_error, rocksdb_message

# A file of one of these names means a RocksDB store lives (or lived) in the directory.
_STORE_FILE = re.compile(r"CURRENT|MANIFEST-\d+|\d+\.(?:sst|log|blob)")
# The last 8 bytes of every complete block-based table (table/format.h kBlockBasedTableMagicNumber).
TABLE_MAGIC = (0x88E241B785F4CFF7).to_bytes(8, "little")
# Column families a store may lack: schema 1 had no ``index`` family (Store migrates it).
_OPTIONAL_BY_SCHEMA = {b"1": {"index"}}


# struct flock (Linux): l_type, l_whence, l_start, l_len, l_pid, padded to its C size.
_FLOCK = struct.Struct("hhqqi4x")
# Directories a Store of this process has open -> that Store: POSIX locks belong to the process,
# so asking the kernel about them from here would see none, and closing the descriptor asked
# through would drop RocksDB's own lock (fcntl semantics). Weak: a Store dropped without close()
# releases RocksDB when it is collected, and so leaves this map.
_open_here: weakref.WeakValueDictionary[str, object] = weakref.WeakValueDictionary()
_open_here_lock = threading.Lock()


def opened_here(path: Path, owner: object) -> None:
    with _open_here_lock:
        _open_here[str(path.resolve())] = owner


def closed_here(path: Path) -> None:
    with _open_here_lock:
        _open_here.pop(str(path.resolve()), None)


def lock_holder(path: Path) -> int | None:
    """The pid of the process holding the RocksDB LOCK of `path` (this process's own when a
    Store here has it open), or None. Opens LOCK read-only: nothing is created or changed."""
    with _open_here_lock:
        if _open_here.get(str(path.resolve())) is not None:
            return os.getpid()
    try:
        fd = os.open(path / "LOCK", os.O_RDONLY)
    except OSError:
        return None
    try:
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
        kind, _, _, _, pid = _FLOCK.unpack(answer)
        return None if kind == fcntl.F_UNLCK else pid
    except OSError:
        return None
    finally:
        os.close(fd)


def is_new(path: Path) -> bool:
    """True when `path` holds no store file (absent, empty, or only unrelated files)."""
    return not path.is_dir() or not any(_STORE_FILE.fullmatch(p.name) for p in path.iterdir())


def _damaged(path: Path, what: str) -> StoreDamaged:
    return StoreDamaged(
        f"data_dir {path} is damaged: {what}; nothing was opened or changed. Restore a backup "
        f"(`polarmem restore SNAPSHOT NEW_DIR`), or run `polarmem repair --salvage {path}`: it writes what it can read "
        "to a new directory and leaves this one as it is"
    )


def _complete_table(file: Path) -> bool:
    try:
        with open(file, "rb") as handle:
            size = handle.seek(0, 2)
            if size < len(TABLE_MAGIC):
                return False
            handle.seek(size - len(TABLE_MAGIC))
            return handle.read() == TABLE_MAGIC
    except OSError:
        return False


def check(path: str | Path, families: tuple[str, ...], schema_version: int, point_in_time: bool = False) -> bool:
    """Checks `path` without changing it. Returns True when it holds no store yet (the caller
    may create one), False when it holds a store that opens intact with the column `families`
    at `schema_version` (or 1, which the store migrates); raises StoreDamaged / StoreError otherwise.
    `point_in_time`: a WAL damaged after its last intact record passes (what repair recovers)."""
    path = Path(path)
    if is_new(path):
        return True
    if not (path / "CURRENT").is_file():
        raise _damaged(
            path,
            "its CURRENT file is missing (it names the MANIFEST, the list of the store's table "
            "files), but store files are there; opening it would start an empty store and delete them",
        )
    with tempfile.TemporaryDirectory(prefix="polarmem-check-") as log_dir:
        try:
            present = set(KvStore.list_families(str(path)))
            db = KvStore(
                str(path),
                [cf for cf in families if cf in present],
                access="read_only",
                info_log_dir=log_dir,  # RocksDB's info LOG: not in the directory being checked
                point_in_time=point_in_time,
            )
        except Exception as exc:
            raise _open_refusal(path, exc) from exc
        try:
            check_contents(path, db, present, families, schema_version)
        finally:
            db.close()
            del db
    return False


class StoreView(Protocol):
    """What the content checks read of an open store: the core's KvStore, or rocksdict's
    read-only view of a store still at table format 6 (table_format.py)."""

    def get(self, family: str, key: bytes) -> bytes | None: ...

    def live_table_files(self) -> list[str]: ...


def _open_refusal(path: Path, exc: BaseException) -> StoreError:
    error = open_error(path, exc)
    message = str(error).lower()
    if type(error) is StoreError and "disk is full" not in message and "permission denied" not in message:
        # A store file RocksDB cannot find or read (CURRENT naming a missing MANIFEST, say) is
        # damage, not a setting: it must wait for a person like any other.
        return _damaged(path, f"RocksDB cannot read it ({rocksdb_message(exc)})")
    return error


def check_contents(
    path: Path, db: StoreView, present: set[str], families: tuple[str, ...], schema_version: int
) -> None:
    schema = db.get("meta", b"schema_version") if "meta" in present else None
    missing = set(families) - present - _OPTIONAL_BY_SCHEMA.get(schema or b"", set())
    if missing:
        raise _damaged(
            path,
            f"its MANIFEST lacks the column families {', '.join(sorted(missing))} (it is cut short "
            "or damaged); opening it would recreate them empty and delete their table files",
        )
    if schema is not None and schema not in (b"1", str(schema_version).encode()):
        raise StoreError(
            f"{path} holds schema version {schema.decode(errors='replace')}; this server reads version {schema_version}"
        )
    live = set(db.live_table_files())
    orphans = sorted(p.name for p in path.glob("*.sst") if p.name not in live and _complete_table(p))
    if orphans:
        raise _damaged(
            path,
            f"complete table files the MANIFEST does not name ({', '.join(orphans[:5])}"
            f"{' ...' if len(orphans) > 5 else ''}): the MANIFEST lost edits; opening it would "
            "delete them",
        )
