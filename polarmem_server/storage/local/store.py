"""RocksDB-persisted graph: the only durable state of the server.

Layout (RocksDB through the core's handle, cpp/src/kv_store.cpp; raw bytes, one column family
per record kind; ``ns`` is the namespace name and ``\\0`` separates key parts). What an item write
puts (items, index, vectors, edges) is the core's item layout (cpp/include/polarmem/item_layout.hpp),
the one writer of those keys:

=============  ==========================================  ===================================
column family  key                                         value
=============  ==========================================  ===================================
meta           ``schema_version``                          ASCII integer
meta           ``writes \\0 ns``                            ASCII integer: the namespace's write count
namespaces     ``ns``                                      NamespaceRecord (protobuf)
concepts       ``ns \\0 id(uint32 BE)``                     ConceptRecord
items          ``ns \\0 item_id``                           ItemRecord (kind, text, URI, metadata,
                                                           scores, states, τ/δ/κ, model, times,
                                                           version, state history)
vectors        ``ns \\0 item_id \\0 space``                  uint32 rows + float32 row-major data
index          ``ns \\0 item_id``                           compact index record: kind, HAS / NOT_HAS
                                                           / ALIGN concept ids, scored means,
                                                           metadata (what start-up needs, nothing else)
edges          ``ns \\0 H|N|A concept(uint32 BE) item_id``   empty (HAS / NOT_HAS / ALIGN index)
=============  ==========================================  ===================================

"Items that NOT_HAS dog" is a prefix scan of ``edges``. One item write is one WriteBatch across
column families: all or nothing. The ``index`` record repeats what the in-memory index needs from
``items`` in a fixed binary layout (the core's, decoded by :mod:`polarmem_server.storage.local.index_record`),
so start-up reads a few dozen bytes per item instead of parsing a full ItemRecord with its scores and history.
``durability="sync"`` syncs the WAL before a write returns (an acknowledged write survives power
loss); ``"async"`` leaves that to the OS.

Faults (docs/failure-behaviour.md): before the read-write open, :mod:`preflight` checks the
directory read-only and refuses damage with every file left as it was (a read-write open acts on
what it finds: a missing CURRENT made it start an empty store and delete the tables). The store
opens in RocksDB's *absolute consistency* WAL recovery mode, so a write-ahead log that is cut or
corrupt makes the open fail with
:class:`StoreDamaged` instead of silently dropping acknowledged writes; ``recovery="point-in-time"``
(what ``polarmem repair`` uses) keeps everything up to the last intact record. A failed write
(disk full, I/O error) raises the core's ``DiskFullError`` (RESOURCE_EXHAUSTED) /
``UnavailableError`` (UNAVAILABLE); RocksDB then refuses every later write on that log, so the
store reopens itself (at most once per ``REOPEN_INTERVAL_S``) and writes resume once the cause is
gone, without a restart. That policy is the core's (``_core.StoreWrites``,
cpp/include/polarmem/store_writes.hpp), for every door that writes.

The handle is the core's (``_core.KvStore``, Debian's RocksDB 7.8, tables at format 5) rather than
a Python binding's, so compiled code can write through the same open database; a store that
rocksdict wrote before (tables at format 6, which 7.8 cannot read) is moved once at open
(:mod:`table_format`).
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from polarmem.storage.v1 import records_pb2
from polarmem_server._core import KvBatch, KvStore, StoreWrites, put_concept, put_item, remove_item
from polarmem_server.storage.local import preflight, table_format
from polarmem_server.storage.local.index_record import index_record
from polarmem_server.storage.local.store_errors import (  # noqa: F401 - re-exported: callers import them from here
    StoreDamaged,
    StoreError,
    StoreLocked,
    damaged_table_file,
    open_error,
    rocksdb_message,
    wal_files,
)

# 2 added the ``index`` column family; a version-1 directory is migrated on open (see _migrate).
SCHEMA_VERSION = 2
COLUMN_FAMILIES = ("meta", "namespaces", "concepts", "items", "vectors", "edges", "index")
EDGE_HAS, EDGE_NOT_HAS, EDGE_ALIGN = b"H", b"N", b"A"


log = logging.getLogger("polarmem.store")
RECOVERY_MODES = ("strict", "point-in-time")
REOPEN_INTERVAL_S = 1.0  # after a failed write: how often a write (or the watchdog) retries the reopen
# All column families' memtables together: RocksDB's default is 64 MiB *per* family (7 here), so
# the RSS of a server under steady writes crept up by hundreds of MiB before the first flush and
# looked like a leak (issue 13's soak). One shared budget bounds it; small writes flush often
# enough at this size without stalling.
MEMTABLE_BUDGET_BYTES = 16 * 1024 * 1024
# A prefix scan reads this many entries per call into the core (KvIterator.take): few crossings
# per key, and little read past what a caller that stops early (a page of ids) wanted.
SCAN_BATCH = 256


_WRITES = b"writes\x00"  # meta key prefix of the per-namespace write counts


def _ns(name: str) -> bytes:
    return name.encode() + b"\x00"


_CONCEPT = struct.Struct(">I")


def decode_vector(data: bytes, dim: int) -> np.ndarray:
    (count,) = struct.unpack_from("<I", data)
    return np.frombuffer(data, dtype=np.float32, offset=4, count=count * dim).reshape(count, dim)


class Store:
    def __init__(self, path: str | Path, durability: str = "sync", recovery: str = "strict") -> None:
        if durability not in ("sync", "async"):
            raise ValueError(f"durability must be 'sync' or 'async', got {durability!r}")
        if recovery not in RECOVERY_MODES:
            raise ValueError(f"recovery must be one of {RECOVERY_MODES}, got {recovery!r}")
        self.path = Path(path)
        self.recovery = recovery
        # Created only where no store is: a read-write open of a damaged one acts on the damage
        # (a missing CURRENT starts an empty store that deletes the tables), so it is found first,
        # read-only, leaving the directory as it was (preflight.py).
        self._create = self._check_directory()
        self.path.mkdir(parents=True, exist_ok=True)
        self._sync = durability == "sync"
        self._closed = False
        self._lock = threading.Lock()  # close and flush, one at a time
        self._db = self._open()
        self._writes = StoreWrites(self._db, sync=self._sync, reopen_interval_s=REOPEN_INTERVAL_S)
        preflight.opened_here(self.path, self)
        try:
            self._check_schema()
        except BaseException:
            self.close()
            raise

    def _check_directory(self) -> bool:
        """True when the directory holds no store yet; raises when it holds a damaged one. Also
        refuses a directory another process holds, before looking: a read-only look at a live
        store may find its write-ahead log mid-append and call that damage."""
        holder = preflight.lock_holder(self.path)
        if holder is not None:
            raise StoreLocked(
                f"data_dir {self.path} is in use by another process (pid {holder} holds its LOCK); stop "
                "that process or choose another --data-dir"
            )
        point_in_time = self.recovery == "point-in-time"
        try:
            return preflight.check(self.path, COLUMN_FAMILIES, SCHEMA_VERSION, point_in_time=point_in_time)
        except StoreDamaged as exc:
            if not table_format.is_newer_format_refusal(exc):
                raise
        table_format.move_to_format_5(self.path, COLUMN_FAMILIES, SCHEMA_VERSION, point_in_time)
        return preflight.check(self.path, COLUMN_FAMILIES, SCHEMA_VERSION, point_in_time=point_in_time)

    def _open(self) -> KvStore:
        try:
            return KvStore(
                str(self.path),
                list(COLUMN_FAMILIES),
                create_if_missing=self._create,
                # Safe only because preflight found every family there (a schema-1 store lacks
                # `index`, which the migration adds): none is recreated over one a damaged MANIFEST lost.
                create_missing_column_families=True,
                db_write_buffer_size=MEMTABLE_BUDGET_BYTES,
                # Strict: a cut or corrupt WAL fails the open (StoreDamaged) instead of dropping
                # acknowledged writes after the damage, which point-in-time recovery does silently.
                point_in_time=self.recovery != "strict",
            )
        except Exception as exc:
            raise open_error(self.path, exc) from exc

    def _check_schema(self) -> None:
        stored = self._db.get("meta", b"schema_version")
        if stored is None:
            batch = KvBatch()
            batch.put("meta", b"schema_version", str(SCHEMA_VERSION).encode())
            self._write(batch, None)
        elif int(stored) == 1:
            self._migrate_from_1()
        elif int(stored) != SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} holds schema version {int(stored)}; this server reads version {SCHEMA_VERSION}"
            )

    def _migrate_from_1(self) -> None:
        """Writes the compact index record of every stored item, then the new version, so an
        interrupted migration simply runs again on the next open."""
        batch, pending = KvBatch(), 0
        for key, value in self._scan("items", b""):
            batch.put("index", key, index_record(value))
            pending += 1
            if pending >= 10_000:
                self._db.write(batch, self._sync)
                batch, pending = KvBatch(), 0
        batch.put("meta", b"schema_version", str(SCHEMA_VERSION).encode())
        self._db.write(batch, self._sync)

    # ---- namespaces ------------------------------------------------------------------------

    def put_namespace(self, record: records_pb2.NamespaceRecord) -> None:
        batch = KvBatch()
        batch.put("namespaces", record.name.encode(), record.SerializeToString())
        self._write(batch, record.name)

    def namespace_writes(self, ns: str) -> int:
        """How many writes the namespace has taken (settings, items, deletions), counted in the same
        batch as each write, so it survives exactly as the writes do. Saved approximate-index
        graphs record it (ann_files.py): a write to another namespace leaves them valid. It keeps
        counting across a deletion, so a namespace made again under the same name never repeats
        a count."""
        value = self.get("meta", _WRITES + ns.encode())
        return int(value) if value is not None else 0

    def namespaces(self) -> list[records_pb2.NamespaceRecord]:
        return [records_pb2.NamespaceRecord.FromString(v) for _, v in self._scan("namespaces", b"")]

    def delete_namespace(self, name: str) -> None:
        """Removes the namespace and everything in it, in one batch."""
        batch = KvBatch()
        batch.delete("namespaces", name.encode())
        prefix = _ns(name)
        end = name.encode() + b"\x01"
        for cf in ("concepts", "items", "vectors", "edges", "index"):
            batch.delete_range(cf, prefix, end)
        self._write(batch, name)

    # ---- concepts --------------------------------------------------------------------------

    def concepts(self, ns: str) -> list[records_pb2.ConceptRecord]:
        return [records_pb2.ConceptRecord.FromString(v) for _, v in self._scan("concepts", _ns(ns))]

    # ---- items -----------------------------------------------------------------------------

    def write_items(self, ns: str, entries) -> list[bytes]:
        """Several item writes, each (serialised record, vectors, serialised previous record or
        b"", previous_spaces, new_concepts) with its vectors, edge keys and new concepts
        (``previous``, the stored record it replaces, has its edges removed in the same batch),
        in one WriteBatch and one WAL sync: a group commit. Each item is still all or nothing (the
        group is). Returns the items' compact index records, which the caller's in-memory index
        is updated from."""
        batch = KvBatch()
        index_records = []
        for record, vectors, previous, previous_spaces, new_concepts in entries:
            for concept_id, name in new_concepts:
                put_concept(batch, ns, concept_id, name)
            index_records.append(put_item(batch, ns, record, list(vectors.items()), previous, list(previous_spaces)))
        self._write(batch, ns, items=len(entries))
        return index_records

    def delete_item(self, ns: str, record: bytes, spaces: tuple[str, ...]) -> None:
        """Removes a stored item (its serialised record) with its vectors in `spaces` and its edges."""
        batch = KvBatch()
        remove_item(batch, ns, record, list(spaces))
        self._write(batch, ns)

    def get_item(self, ns: str, item_id: str) -> records_pb2.ItemRecord | None:
        data = self.get("items", _ns(ns) + item_id.encode())
        return None if data is None else records_pb2.ItemRecord.FromString(data)

    def get_vectors(self, ns: str, item_id: str, dims: dict[str, int]) -> dict[str, np.ndarray]:
        out = {}
        for space, dim in dims.items():
            data = self.get("vectors", _ns(ns) + item_id.encode() + b"\x00" + space.encode())
            if data is not None:
                out[space] = decode_vector(data, dim)
        return out

    def iter_items(self, ns: str) -> Iterator[records_pb2.ItemRecord]:
        for _, value in self._scan("items", _ns(ns)):
            yield records_pb2.ItemRecord.FromString(value)

    def iter_item_bytes(self, ns: str, after: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """(item id as UTF-8, serialised ItemRecord) in id order, from the first id after `after`."""
        prefix = _ns(ns)
        start = None if after is None else prefix + after + b"\x00"  # the least key above `after`'s
        for key, value in self._scan("items", prefix, start):
            yield key[len(prefix) :], value

    def iter_index_records(self, ns: str) -> Iterator[tuple[bytes, bytes]]:
        """(item id as UTF-8, compact index record) in id order: what start-up reads."""
        prefix = _ns(ns)
        for key, value in self._scan("index", prefix):
            yield key[len(prefix) :], value

    def iter_vectors(self, ns: str) -> Iterator[tuple[str, str, bytes]]:
        """(item_id, space, encoded rows) in key order."""
        prefix = _ns(ns)
        for key, value in self._scan("vectors", prefix):
            item_id, _, space = key[len(prefix) :].rpartition(b"\x00")
            yield item_id.decode(), space.decode(), value

    def items_by_concept(
        self, ns: str, polarity: bytes, concept_id: int, after: str = "", limit: int = 100
    ) -> list[str]:
        """Item ids holding `polarity` for a concept, in id order, starting after `after`."""
        prefix = _ns(ns) + polarity + _CONCEPT.pack(concept_id)
        start = prefix + after.encode() + b"\x00" if after else prefix
        ids = []
        for key, _ in self._scan("edges", prefix, start=start):
            ids.append(key[len(prefix) :].decode())
            if len(ids) >= limit:
                break
        return ids

    # ---- plumbing --------------------------------------------------------------------------

    def _write(self, batch: KvBatch, ns: str | None, items: int = 0) -> None:
        """One atomic, (with sync durability) synced write to namespace `ns`, which also counts it
        (namespace_writes; None: a store-wide write, counted nowhere); `items`: the items it
        writes, timed by the core for the metrics. A failure follows the core's policy (module doc)."""
        if ns is None:
            self._writes.write(batch, items=items)
        else:  # the count bumped in the same batch, one per write whichever door wrote
            self._writes.write(batch, "meta", _WRITES + ns.encode(), items)

    @property
    def write_failure(self) -> str | None:
        """None while writes work, else what the failed write met: "disk_full" or "io_error"."""
        return self._writes.failure

    def watch_writes(self, failed: Callable[[str], None], resumed: Callable[[], None]) -> None:
        """``failed(kind)`` for each write the disk refuses (logged here), ``resumed()`` after
        each reopen that made writes work again."""

        def tell_failed(kind: str, message: str) -> None:
            log.error("write to %s failed (%s): writes fail until it reopens", self.path, message)
            failed(kind)

        def tell_resumed() -> None:
            log.warning("store %s reopened: writes resume", self.path)
            resumed()

        self._writes.watch(tell_failed, tell_resumed)

    @property
    def writes(self) -> StoreWrites:
        """The store's one write-failure policy, for the core's writers (ItemWrites)."""
        return self._writes

    def try_resume(self) -> bool:
        """After a failed write: reopen the store if the retry interval has passed. True when
        writes work again (or never failed). The server's watchdog calls this; so does a write."""
        return self._writes.try_resume()

    def get(self, cf: str, key: bytes) -> bytes | None:
        """The value of `key` in column family `cf`, None where it is absent."""
        return self._db.get(cf, key)

    def multi_get(self, cf: str, keys: Sequence[bytes]) -> list[bytes | None]:
        """The values of `keys` in column family `cf` in one RocksDB multi-get, None where a key
        is absent."""
        return self._db.multi_get(cf, list(keys))

    def _scan(self, cf: str, prefix: bytes, start: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        it = self._db.scan(cf)
        it.seek(start if start is not None else prefix)
        while entries := it.take(prefix, SCAN_BATCH):
            yield from entries

    def position(self) -> int:
        """The store's position: the RocksDB sequence number of its latest write (it only grows)."""
        return self._db.latest_sequence_number()

    def flush(self) -> None:
        """Syncs the WAL. A store whose writes fail has nothing unsynced to lose (a failed write
        was never acknowledged), so this logs instead of raising: shutdown must finish."""
        with self._lock:
            if self._closed:
                return
            try:
                self._db.flush_wal(True)
            except Exception as exc:  # noqa: BLE001 - see docstring
                log.warning("syncing the write-ahead log of %s: %s", self.path, rocksdb_message(exc))

    def close(self) -> None:
        """Closes RocksDB; always finishes, whatever state the store is in."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._writes.close()  # waits for the write in flight; later writes are refused
            try:
                self._db.close()
            except Exception as exc:  # noqa: BLE001 - closing must finish; the files are closed either way
                log.warning("closing %s: %s", self.path, rocksdb_message(exc))
            preflight.closed_here(self.path)
