"""RocksDB-persisted graph: the only durable state of the server.

Layout (rocksdict, raw bytes, one column family per record kind; ``ns`` is the namespace name
and ``\\0`` separates key parts):

=============  ==========================================  ===================================
column family  key                                         value
=============  ==========================================  ===================================
meta           ``schema_version``                          ASCII integer
namespaces     ``ns``                                      NamespaceRecord (protobuf)
concepts       ``ns \\0 id(uint32 BE)``                     ConceptRecord
items          ``ns \\0 item_id``                           ItemRecord (kind, text, URI, metadata,
                                                           scores, states, τ/δ/κ, model, times,
                                                           version, state history)
vectors        ``ns \\0 item_id \\0 space``                  uint32 rows + float32 row-major data
index          ``ns \\0 item_id``                           compact index record: kind, HAS / NOT_HAS
                                                           / ALIGN concept ids, scored-concept count,
                                                           metadata (what start-up needs, nothing else)
edges          ``ns \\0 H|N|A concept(uint32 BE) item_id``   empty (HAS / NOT_HAS / ALIGN index)
=============  ==========================================  ===================================

"Items that NOT_HAS dog" is a prefix scan of ``edges``. One item write is one WriteBatch across
column families: all or nothing. The ``index`` record repeats what the in-memory index needs from
``items`` in a fixed binary layout (:mod:`polarmem_server.storage.local.index_record`), so start-up reads a few
dozen bytes per item instead of parsing a full ItemRecord with its scores and history.
``durability="sync"`` syncs the WAL before a write returns (an acknowledged write survives power
loss); ``"async"`` leaves that to the OS.

rocksdict was chosen over rocksdb-py: it has column families, atomic WriteBatch across them,
per-write sync and snapshots, and does not abort when closed with an iterator alive.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from rocksdict import Options, Rdict, WriteBatch, WriteOptions

from polarmem.storage.v1 import records_pb2
from polarmem_server.errors import Unavailable
from polarmem_server.storage.local.index_record import concept_lists, encode_index_record

# 2 added the ``index`` column family; a version-1 directory is migrated on open (see _migrate).
SCHEMA_VERSION = 2
COLUMN_FAMILIES = ("meta", "namespaces", "concepts", "items", "vectors", "edges", "index")
EDGE_HAS, EDGE_NOT_HAS, EDGE_ALIGN = b"H", b"N", b"A"


class StoreError(Unavailable):
    """The data directory cannot be used (wrong schema, locked by another process)."""


def _ns(name: str) -> bytes:
    return name.encode() + b"\x00"


_CONCEPT = struct.Struct(">I")


def _edge_key(ns: str, polarity: bytes, concept_id: int, item_id: str) -> bytes:
    return _ns(ns) + polarity + _CONCEPT.pack(concept_id) + item_id.encode()


def encode_vector(rows: np.ndarray) -> bytes:
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    if rows.ndim == 1:
        rows = rows[None, :]
    return struct.pack("<I", rows.shape[0]) + rows.tobytes()


def decode_vector(data: bytes, dim: int) -> np.ndarray:
    (count,) = struct.unpack_from("<I", data)
    return np.frombuffer(data, dtype=np.float32, offset=4, count=count * dim).reshape(count, dim)


def edges_of(record: records_pb2.ItemRecord,
             lists: tuple[list[int], list[int], list[int], int] | None = None) -> list[tuple[bytes, int]]:
    """The (polarity, concept) edges an item record implies."""
    has, not_has, align, _ = lists or concept_lists(record)
    return ([(EDGE_HAS, c) for c in has] + [(EDGE_NOT_HAS, c) for c in not_has] + [(EDGE_ALIGN, c) for c in align])


class Store:
    def __init__(self, path: str | Path, durability: str = "sync") -> None:
        if durability not in ("sync", "async"):
            raise ValueError(f"durability must be 'sync' or 'async', got {durability!r}")
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        options = Options(raw_mode=True)
        options.create_if_missing(True)
        options.create_missing_column_families(True)
        try:
            self._db = Rdict(str(self.path), options, column_families={cf: Options(raw_mode=True) for cf in COLUMN_FAMILIES})
        except Exception as exc:
            raise StoreError(f"cannot open the data directory {self.path}: {exc}") from exc
        self._cf = {cf: self._db.get_column_family(cf) for cf in COLUMN_FAMILIES}
        self._handles = {cf: self._db.get_column_family_handle(cf) for cf in COLUMN_FAMILIES}
        self._write_options = WriteOptions()
        self._write_options.sync = durability == "sync"
        self._closed = False
        self._lock = threading.Lock()
        self._check_schema()

    def _check_schema(self) -> None:
        meta = self._cf["meta"]
        stored = meta.get(b"schema_version")
        if stored is None:
            meta.put(b"schema_version", str(SCHEMA_VERSION).encode(), self._write_options)
        elif int(stored) == 1:
            self._migrate_from_1()
        elif int(stored) != SCHEMA_VERSION:
            raise StoreError(f"{self.path} holds schema version {int(stored)}; this server reads version {SCHEMA_VERSION}")

    def _migrate_from_1(self) -> None:
        """Writes the compact index record of every stored item, then the new version, so an
        interrupted migration simply runs again on the next open."""
        batch, pending = WriteBatch(raw_mode=True), 0
        for key, value in self._scan("items", b""):
            batch.put(key, encode_index_record(records_pb2.ItemRecord.FromString(value)), self._handles["index"])
            pending += 1
            if pending >= 10_000:
                self._db.write(batch, self._write_options)
                batch, pending = WriteBatch(raw_mode=True), 0
        batch.put(b"schema_version", str(SCHEMA_VERSION).encode(), self._handles["meta"])
        self._db.write(batch, self._write_options)

    # ---- namespaces ------------------------------------------------------------------------

    def put_namespace(self, record: records_pb2.NamespaceRecord) -> None:
        self._cf["namespaces"].put(record.name.encode(), record.SerializeToString(), self._write_options)

    def namespaces(self) -> list[records_pb2.NamespaceRecord]:
        return [records_pb2.NamespaceRecord.FromString(v) for _, v in self._scan("namespaces", b"")]

    def delete_namespace(self, name: str) -> None:
        """Removes the namespace and everything in it, in one batch."""
        batch = WriteBatch(raw_mode=True)
        batch.delete(name.encode(), self._handles["namespaces"])
        prefix = _ns(name)
        end = name.encode() + b"\x01"
        for cf in ("concepts", "items", "vectors", "edges", "index"):
            batch.delete_range(prefix, end, self._handles[cf])
        self._write(batch)

    # ---- concepts --------------------------------------------------------------------------

    def concepts(self, ns: str) -> list[records_pb2.ConceptRecord]:
        return [records_pb2.ConceptRecord.FromString(v) for _, v in self._scan("concepts", _ns(ns))]

    # ---- items -----------------------------------------------------------------------------

    def write_item(self, ns: str, record: records_pb2.ItemRecord, vectors: dict[str, np.ndarray],
                   previous: records_pb2.ItemRecord | None = None, previous_spaces: tuple[str, ...] = (),
                   new_concepts: list[tuple[int, str]] = ()) -> None:
        """Writes an item, its vectors, its edge keys and any new concepts atomically.
        `previous` (the stored record it replaces) has its edges removed in the same batch."""
        self.write_items(ns, [(record, vectors, previous, previous_spaces, new_concepts)])

    def write_items(self, ns: str, entries) -> list[bytes]:
        """Several item writes (each as in write_item) in one WriteBatch and one WAL sync: a group
        commit. Each item is still all or nothing (the group is). Returns the items' compact
        index records, which the caller's in-memory index is updated from."""
        batch = WriteBatch(raw_mode=True)
        index_records = [self._add_item(batch, ns, record, vectors, previous, previous_spaces, new_concepts)
                         for record, vectors, previous, previous_spaces, new_concepts in entries]
        self._write(batch)
        return index_records

    def _add_item(self, batch: WriteBatch, ns: str, record, vectors, previous, previous_spaces, new_concepts) -> bytes:
        for concept_id, name in new_concepts:
            batch.put(_ns(ns) + _CONCEPT.pack(concept_id),
                      records_pb2.ConceptRecord(id=concept_id, name=name).SerializeToString(), self._handles["concepts"])
        item_key = _ns(ns) + record.id.encode()
        if previous is not None:
            for polarity, concept_id in edges_of(previous):
                batch.delete(_edge_key(ns, polarity, concept_id, previous.id), self._handles["edges"])
        for space in previous_spaces:
            if space not in vectors:
                batch.delete(item_key + b"\x00" + space.encode(), self._handles["vectors"])
        lists = concept_lists(record)
        index_record = encode_index_record(record, lists)
        batch.put(item_key, record.SerializeToString(), self._handles["items"])
        batch.put(item_key, index_record, self._handles["index"])
        for space, rows in vectors.items():
            batch.put(item_key + b"\x00" + space.encode(), encode_vector(rows), self._handles["vectors"])
        edges = self._handles["edges"]
        prefix, suffix = _ns(ns), record.id.encode()
        for polarity, concept_id in edges_of(record, lists):
            batch.put(prefix + polarity + _CONCEPT.pack(concept_id) + suffix, b"", edges)
        return index_record

    def delete_item(self, ns: str, record: records_pb2.ItemRecord, spaces: tuple[str, ...]) -> None:
        batch = WriteBatch(raw_mode=True)
        item_key = _ns(ns) + record.id.encode()
        batch.delete(item_key, self._handles["items"])
        batch.delete(item_key, self._handles["index"])
        for space in spaces:
            batch.delete(item_key + b"\x00" + space.encode(), self._handles["vectors"])
        for polarity, concept_id in edges_of(record):
            batch.delete(_edge_key(ns, polarity, concept_id, record.id), self._handles["edges"])
        self._write(batch)

    def get_item(self, ns: str, item_id: str) -> records_pb2.ItemRecord | None:
        data = self._cf["items"].get(_ns(ns) + item_id.encode())
        return None if data is None else records_pb2.ItemRecord.FromString(data)

    def get_vectors(self, ns: str, item_id: str, dims: dict[str, int]) -> dict[str, np.ndarray]:
        out = {}
        for space, dim in dims.items():
            data = self._cf["vectors"].get(_ns(ns) + item_id.encode() + b"\x00" + space.encode())
            if data is not None:
                out[space] = decode_vector(data, dim)
        return out

    def iter_items(self, ns: str) -> Iterator[records_pb2.ItemRecord]:
        for _, value in self._scan("items", _ns(ns)):
            yield records_pb2.ItemRecord.FromString(value)

    def iter_index_records(self, ns: str) -> Iterator[tuple[bytes, bytes]]:
        """(item id as UTF-8, compact index record) in id order: what start-up reads."""
        prefix = _ns(ns)
        for key, value in self._scan("index", prefix):
            yield key[len(prefix):], value

    def iter_vectors(self, ns: str) -> Iterator[tuple[str, str, bytes]]:
        """(item_id, space, encoded rows) in key order."""
        prefix = _ns(ns)
        for key, value in self._scan("vectors", prefix):
            item_id, _, space = key[len(prefix):].rpartition(b"\x00")
            yield item_id.decode(), space.decode(), value

    def items_by_concept(self, ns: str, polarity: bytes, concept_id: int, after: str = "", limit: int = 100) -> list[str]:
        """Item ids holding `polarity` for a concept, in id order, starting after `after`."""
        prefix = _ns(ns) + polarity + _CONCEPT.pack(concept_id)
        start = prefix + after.encode() + b"\x00" if after else prefix
        ids = []
        for key, _ in self._scan("edges", prefix, start=start):
            ids.append(key[len(prefix):].decode())
            if len(ids) >= limit:
                break
        return ids

    # ---- plumbing --------------------------------------------------------------------------

    def _write(self, batch: WriteBatch) -> None:
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed")
            self._db.write(batch, self._write_options)

    def _scan(self, cf: str, prefix: bytes, start: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        it = self._cf[cf].iter()
        try:
            it.seek(start if start is not None else prefix)
            while it.valid():
                key = it.key()
                if not key.startswith(prefix):
                    break
                yield key, it.value()
                it.next()
        finally:
            del it  # iterators are released before any close

    def flush(self) -> None:
        self._db.flush_wal(True)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._cf.clear()
            self._handles.clear()
            self._db.close()
