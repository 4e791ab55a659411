"""Read-only replicas of the local backend, for a server that runs several processes
(`polarmem serve --processes N`, api/processes.py).

One process (the primary) owns the RocksDB data directory and every write. The others open it
as RocksDB *secondary* instances (``access="secondary"``: they read the primary's files and WAL,
never write, and see new writes only after ``catch_up_with_primary``), and keep their own
in-memory index.

What tells a replica what changed is a :class:`ChangeBoard` in a directory both sides know: per
namespace, a **change log** (numbered records: an item written or deleted, with the item's
stored record *before* the change; the namespace's settings changed; the namespace created or
deleted) and a counter file holding the last record's number. The primary appends the records
and then sets the counter after every successful write (:class:`PublishingBackend`).

A replica that sees a counter move takes a **cut**: an exclusive file lock that the primary's
writers hold shared from their store write until their counter is set, so while the replica
holds it no write is stored but unpublished. Under the lock it reads the counters and catches up
with the primary; its secondary instance then holds exactly the writes numbered up to those
counters. It applies each namespace's new records incrementally
(:meth:`ReplicaBackend.apply_items`): per item, the state it last applied is the record before
the first new change (carried in the log: a secondary instance cannot read an old version once
it has caught up), and the state to reach is what its caught-up instance holds now, so an item
added, replaced or removed several times since costs one change. A replaced or removed item's
previous record is what the namespace's counters are decremented by. Namespace creation and
deletion, a change of spaces or approximate index, more changed items than
INCREMENTAL_MAX_SHARE of the namespace, or log records already rotated away rebuild the
namespace from the secondary instance instead (:meth:`ReplicaBackend.refresh`, start-up's code).

A write is visible on a replica at most one poll interval plus one catch-up and one apply (or
rebuild) after it was acknowledged. Writers never wait for a replica longer than its cut (a
counter read and a catch-up).
"""

from __future__ import annotations

import fcntl
import os
import struct
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from polarmem.storage.v1.records_pb2 import ItemRecord, NamespaceRecord
from polarmem_server._core import KvStore
from polarmem_server.domain.settings import ann_from_record
from polarmem_server.errors import FailedPrecondition
from polarmem_server.index import SpaceSpec
from polarmem_server.storage import consistency
from polarmem_server.storage.backend import ItemWrite
from polarmem_server.storage.local.ann_files import ANN_DIR
from polarmem_server.storage.local.backend import LocalBackend, _Namespace
from polarmem_server.storage.local.rebuild import vectors_by_space
from polarmem_server.storage.local.store import (
    _CONCEPT,
    COLUMN_FAMILIES,
    SCHEMA_VERSION,
    Store,
    StoreError,
    _ns,
    decode_vector,
    open_error,
)

OP_ITEM = 1  # an item written or deleted: item id and its previous stored record
OP_SETTINGS = 2  # the namespace record changed (UpdateNamespace, Calibrate, a refit)
OP_NAMESPACE = 3  # the namespace was created or deleted: replicas rebuild it
LOG_SEGMENT_BYTES = 4 << 20  # a namespace's log starts a new file past this size ...
LOG_KEEP_SEGMENTS = 4  # ... and keeps this many; a replica further behind rebuilds the namespace
INCREMENTAL_MAX_SHARE = 0.25  # more changed items than this share of the namespace: rebuild it
INCREMENTAL_MIN_ITEMS = 2048  # ... but never rebuild for fewer changed items than this
_RECORD = struct.Struct("<QBBII")  # sequence, op, has previous, item id bytes, previous record bytes


class ReadOnlyReplica(FailedPrecondition):
    """A write reached a read-only replica's store (the server forwards writes to the primary,
    so this means a bug or a library user writing through a replica)."""


@dataclass(frozen=True)
class Change:
    """One change-log record. ``previous``: the item's stored record before this change,
    serialized (None: it did not exist)."""

    seq: int
    op: int
    item_id: str = ""
    previous: bytes | None = None


class ChangeBoard:
    """Per-namespace change logs and counters shared by the processes of one server, as files in
    `directory`: per namespace (named by its name's hex) a counter file holding the number of its
    last published record, and log segments ``<hex>.<first number>.log``. Only the primary
    publishes; replicas read. A counter file is replaced atomically (write + rename), so a reader
    sees the old or the new counter, never a torn one; a record is complete before the counter
    that covers it is set."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock_path = self.directory / ".cut.lock"
        self._lock_path.touch(exist_ok=True)
        self._counters: dict[str, int] = {}
        self._segments: dict[str, Path] = {}  # the primary's current segment per namespace
        self._cursors: dict[str, tuple[Path, int, int]] = {}  # a reader's (segment, offset, last seq read)
        self._lock = threading.Lock()

    # ---- the primary ---------------------------------------------------------------------------

    def bump(self, namespace: str) -> int:
        """Publishes a namespace-wide change (created or deleted); returns its number."""
        return self.publish(namespace, [(OP_NAMESPACE, "", None)])

    def publish(self, namespace: str, changes: Sequence[tuple[int, str, bytes | None]]) -> int:
        """Appends (op, item id, previous record) records to the namespace's log, then sets its
        counter to the last one's number (returned)."""
        with self._lock:
            last = self._counters.get(namespace)
            if last is None:
                last = self._stored_counter(namespace)
            parts = []
            for op, item_id, previous in changes:
                last += 1
                encoded = item_id.encode()
                parts += [
                    _RECORD.pack(last, op, previous is not None, len(encoded), len(previous or b"")),
                    encoded,
                    previous or b"",
                ]
            segment = self._segment_for(namespace, last - len(changes) + 1)
            with open(segment, "ab") as log:
                log.write(b"".join(parts))
            self._counters[namespace] = last
            target = self.directory / namespace.encode().hex()
            temporary = target.with_suffix(".tmp")
            temporary.write_text(str(last))
            os.replace(temporary, target)
            return last

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Held (shared) by a primary's write from its store write until its counter is set."""
        with self._flock(fcntl.LOCK_SH):
            yield

    def _stored_counter(self, namespace: str) -> int:
        try:
            return int((self.directory / namespace.encode().hex()).read_text() or 0)
        except FileNotFoundError:
            return 0

    def _segment_for(self, namespace: str, first: int) -> Path:
        segment = self._segments.get(namespace)
        if segment is None or not segment.exists() or segment.stat().st_size >= LOG_SEGMENT_BYTES:
            segment = self.directory / f"{namespace.encode().hex()}.{first:016d}.log"
            self._segments[namespace] = segment
            older = self._segment_files(namespace)  # with the new one, LOG_KEEP_SEGMENTS remain
            for _, old in older[: max(0, len(older) - (LOG_KEEP_SEGMENTS - 1))]:
                old.unlink(missing_ok=True)  # a replica that still needs it rebuilds the namespace
        return segment

    # ---- replicas ------------------------------------------------------------------------------

    def read(self) -> dict[str, int]:
        """Every namespace's counter (namespaces never written since the server started are absent)."""
        counters = {}
        for entry in os.scandir(self.directory):
            if "." in entry.name:  # a counter being replaced, a log segment, the lock
                continue
            try:
                counters[bytes.fromhex(entry.name).decode()] = int(Path(entry.path).read_text() or 0)
            except (OSError, ValueError):  # replaced while read: the next poll reads it
                continue
        return counters

    @contextmanager
    def cut(self) -> Iterator[None]:
        """Exclusive: while held, every stored write is published (see the module docstring)."""
        with self._flock(fcntl.LOCK_EX):
            yield

    def changes(self, namespace: str, after: int, upto: int) -> list[Change] | None:
        """The namespace's records numbered after+1 .. upto, or None when some are no longer
        kept (the reader rebuilds the namespace instead)."""
        if upto <= after:
            return []
        cursor = self._cursors.get(namespace)
        segments = self._segment_files(namespace)
        if cursor is not None and cursor[2] == after and cursor[0].exists():
            path, offset = cursor[0], cursor[1]
            following = [p for first, p in segments if first > after and p != path]
        else:
            starts = [i for i, (first, _) in enumerate(segments) if first <= after + 1]
            if not starts:
                return None
            path, offset = segments[starts[-1]][1], 0
            following = [p for _, p in segments[starts[-1] + 1 :]]
        out: list[Change] = []
        for current in [path, *following]:
            try:
                offset, done = self._read_segment(current, offset, after, upto, out)
            except FileNotFoundError:
                return None
            self._cursors[namespace] = (current, offset, out[-1].seq if out else after)
            if done:
                break
            offset = 0
        if [c.seq for c in out] != list(range(after + 1, upto + 1)):
            self._cursors.pop(namespace, None)
            return None
        return out

    @staticmethod
    def _read_segment(path: Path, offset: int, after: int, upto: int, out: list[Change]) -> tuple[int, bool]:
        """Appends the segment's records after `after` up to `upto` from byte `offset`; returns
        the offset past the last one taken and whether `upto` was reached."""
        with open(path, "rb") as log:
            log.seek(offset)
            data = log.read()
        position = 0
        while position + _RECORD.size <= len(data):
            seq, op, has_previous, id_length, previous_length = _RECORD.unpack_from(data, position)
            end = position + _RECORD.size + id_length + previous_length
            if seq > upto or end > len(data):  # published later (or still being appended)
                return offset + position, True
            if seq > after:
                body = position + _RECORD.size
                item_id = data[body : body + id_length].decode()
                previous = data[body + id_length : end] if has_previous else None
                out.append(Change(seq, op, item_id, previous))
            position = end
            if seq == upto:
                return offset + position, True
        return offset + position, False

    def _segment_files(self, namespace: str) -> list[tuple[int, Path]]:
        prefix = namespace.encode().hex() + "."
        found = []
        for entry in os.scandir(self.directory):
            if entry.name.startswith(prefix) and entry.name.endswith(".log"):
                found.append((int(entry.name[len(prefix) : -4]), Path(entry.path)))
        return sorted(found)

    @contextmanager
    def _flock(self, mode: int) -> Iterator[None]:
        # A descriptor of its own per hold: flock locks belong to the open file, so threads
        # sharing one descriptor would release each other's shared hold.
        descriptor = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, mode)
            yield
        finally:
            os.close(descriptor)  # releases the lock


class PublishingBackend(LocalBackend):
    """The primary's local backend: every write, once stored, is published on the board (its
    log records, then its counter), inside the board's shared write hold."""

    def __init__(
        self,
        path: str | Path,
        board: ChangeBoard,
        durability: str = "sync",
        threads: int = 0,
    ) -> None:
        super().__init__(path, durability, threads)
        self.board = board

    def create_namespace(self, record: NamespaceRecord) -> None:
        with self.board.writing():
            super().create_namespace(record)
            self.board.bump(record.name)
            self._published()

    def update_namespace(self, record: NamespaceRecord) -> None:
        with self.board.writing():
            super().update_namespace(record)
            self.board.publish(record.name, [(OP_SETTINGS, "", None)])
            self._published()

    def delete_namespace(self, name: str) -> None:
        with self.board.writing():
            super().delete_namespace(name)
            self.board.bump(name)
            self._published()

    def note_writer(self, ns: str) -> None:
        return None  # every write is published to the replicas, which the core's writer does not do

    def _published(self) -> None:
        """Notes the store's position once a write is stored and published: the call's consistency
        token (a replica that has applied up to it has the write; storage/consistency.py)."""
        consistency.note_sequence(self.store.position())

    def write_items(self, ns: str, writes: Sequence[ItemWrite]) -> None:
        if not writes:
            return super().write_items(ns, writes)
        with self.board.writing():
            try:
                super().write_items(ns, writes)
            finally:  # a failed group stored nothing; replicas find each item as it was
                self.board.publish(
                    ns,
                    [
                        (OP_ITEM, w.record.id, None if w.previous is None else w.previous.SerializeToString())
                        for w in writes
                    ],
                )
            self._published()  # (stored: a failed group raised above)

    def delete_item(self, ns: str, record: ItemRecord) -> None:
        with self.board.writing():
            super().delete_item(ns, record)
            self.board.publish(ns, [(OP_ITEM, record.id, record.SerializeToString())])
            self._published()


class SecondaryStore(Store):
    """The store opened as a RocksDB secondary instance of `path` (its own info log and
    manifest copy under `secondary_dir`): reads as Store does, writes raise ReadOnlyReplica."""

    def __init__(self, path: str | Path, secondary_dir: str | Path) -> None:
        self.secondary_dir = Path(secondary_dir)
        self.secondary_dir.mkdir(parents=True, exist_ok=True)
        super().__init__(path, durability="async")

    def _check_directory(self) -> bool:
        """The primary holds the LOCK and writes as this opens; it checked the directory itself."""
        return False

    def _open(self) -> KvStore:
        try:
            return KvStore(
                str(self.path),
                list(COLUMN_FAMILIES),
                access="secondary",
                secondary_path=str(self.secondary_dir),
                # The primary appends to the log this one reads: its last record may be half there.
                point_in_time=True,
            )
        except Exception as exc:
            raise open_error(self.path, exc) from exc

    def _check_schema(self) -> None:
        stored = self.get("meta", b"schema_version")
        if stored is None or int(stored) != SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} holds schema version {stored!r}; a replica reads version {SCHEMA_VERSION} "
                "(start the primary first, it migrates the store)"
            )

    def _write(self, batch, ns=None, items=0) -> None:
        raise ReadOnlyReplica("this process is a read-only replica; writes go to the primary process")

    def catch_up(self) -> int:
        """Makes every write the primary has made so far visible to this instance; returns the
        position (RocksDB sequence number) it has caught up to."""
        with self._lock:
            self._db.catch_up_with_primary()
            return self._db.latest_sequence_number()

    def flush(self) -> None:  # nothing of its own to flush
        return None

    def namespace_record(self, name: str) -> NamespaceRecord | None:
        data = self.get("namespaces", name.encode())
        return None if data is None else NamespaceRecord.FromString(data)

    def concepts_from(self, ns: str, first_id: int) -> list[tuple[int, str]]:
        """The namespace's concepts with ids from `first_id` on, in id order."""
        from polarmem.storage.v1.records_pb2 import ConceptRecord

        prefix = _ns(ns)
        return [
            (c.id, c.name)
            for c in (
                ConceptRecord.FromString(v) for _, v in self._scan("concepts", prefix, prefix + _CONCEPT.pack(first_id))
            )
        ]

    def read_items(
        self, ns: str, item_ids: Sequence[str], spaces: Sequence[SpaceSpec]
    ) -> list[tuple[bytes, bytes, dict[str, np.ndarray]] | None]:
        """Per id: (serialised record, compact index record, vectors by space: one row for a single-vector
        space, rows for a multi-vector one), or None where the item is not stored; one multi-get
        per column family."""
        if not item_ids:
            return []
        keys = [_ns(ns) + item_id.encode() for item_id in item_ids]
        records = self.multi_get("items", keys)
        index_records = self.multi_get("index", keys)
        vectors = {
            spec: self.multi_get("vectors", [key + b"\x00" + spec.name.encode() for key in keys]) for spec in spaces
        }
        out: list[tuple[bytes, bytes, dict[str, np.ndarray]] | None] = []
        for row, (record, index_record) in enumerate(zip(records, index_records)):
            if record is None or index_record is None:
                out.append(None)
                continue
            found = {}
            for spec, values in vectors.items():
                value = values[row]
                if value is not None:
                    rows = decode_vector(value, spec.dim)
                    found[spec.name] = rows if spec.multi else rows[0]
            out.append((record, index_record, found))
        return out


def _layout(record: NamespaceRecord) -> tuple:
    """What a namespace's in-memory index is built for: its spaces and approximate index."""
    return tuple((s.name, s.dim, s.multi, s.storage) for s in record.spaces), ann_from_record(record)


class ReplicaBackend(LocalBackend):
    """A LocalBackend over a SecondaryStore: searches and reads as the primary's backend does;
    :meth:`apply_items` and :meth:`refresh` bring one namespace in step with the primary. At
    start-up it loads the approximate-index graphs the primary saved when they match the store
    it sees (ann_files.py checks the namespace's write count and every file), and never writes them."""

    store: SecondaryStore

    saves_graphs = False
    read_only = True

    def note_writer(self, ns: str) -> None:
        return None  # a replica stores nothing

    def write_items(self, ns: str, writes: Sequence[ItemWrite]) -> None:
        if writes:  # (before the core's writer would meet the secondary instance's refusal)
            raise ReadOnlyReplica("this process is a read-only replica; writes go to the primary process")

    def __init__(
        self, path: str | Path, secondary_dir: str | Path, threads: int = 0, store: SecondaryStore | None = None
    ) -> None:
        """`store`: an already opened secondary instance of `path` (opened under a cut)."""
        self.store = store if store is not None else SecondaryStore(path, secondary_dir)
        self.threads = threads
        self._namespaces: dict[str, _Namespace] = {}
        self._layouts: dict[str, tuple] = {}
        self._lock = threading.RLock()
        self._loaded_items = 0
        self.ann_root = Path(path) / ANN_DIR
        started = time.perf_counter()
        for record in self.store.namespaces():
            self._namespaces[record.name] = self._load(record, self.store.namespace_writes(record.name))
        self._load_seconds = time.perf_counter() - started

    def catch_up(self) -> int:
        return self.store.catch_up()

    def namespace_record(self, name: str) -> NamespaceRecord | None:
        return self.store.namespace_record(name)

    def refresh(self, name: str) -> NamespaceRecord | None:
        """Rebuilds namespace `name` from the (caught-up) secondary instance and swaps it in, or
        drops it when the primary deleted it. Returns its record (None: deleted)."""
        record = self.store.namespace_record(name)
        if record is None:
            with self._lock:
                self._namespaces.pop(name, None)
                self._layouts.pop(name, None)
            return None
        state = self._load(record)
        with self._lock:
            self._namespaces[name] = state
        return record

    def same_layout(self, record: NamespaceRecord) -> bool:
        """Whether the loaded index of `record`'s namespace serves `record`'s spaces and
        approximate index (else only a rebuild applies the record)."""
        return self._layouts.get(record.name) == _layout(record)

    def apply_items(self, name: str, changes: Sequence[Change]) -> bool:
        """Applies item changes (OP_ITEM records, in order) from the caught-up secondary
        instance: per item, from the state before its first change to the stored one (add,
        replace or remove), with the concepts the primary added meanwhile. Returns False, before
        touching the index, when the namespace should be rebuilt instead (the caller does): it
        is not loaded, too many items changed, an item's first change does not start from the
        state applied here, or the stored concept ids have a gap."""
        state = self._namespaces.get(name)
        if state is None:
            return False
        first_previous: dict[str, bytes | None] = {}
        for change in changes:
            if change.op != OP_ITEM:
                return False
            first_previous.setdefault(change.item_id, change.previous)
        if len(first_previous) > max(INCREMENTAL_MIN_ITEMS, INCREMENTAL_MAX_SHARE * state.index.index.live_count):
            return False
        if any(state.index.contains(item_id) != (previous is not None) for item_id, previous in first_previous.items()):
            return False  # out of step: the rebuild is always right
        with self._lock:
            new_concepts = self.store.concepts_from(name, len(state.vocabulary))
            state.index.index.ensure_concepts(
                len(state.vocabulary) + len(new_concepts)
            )  # room first (allocate_concepts)
            for concept_id, concept in new_concepts:
                if not state.bind_stored(concept_id, concept):
                    return False
        ids = list(first_previous)
        stored = self.store.read_items(name, ids, state.spaces)
        added: list[tuple[str, bytes, bytes, dict]] = []
        for item_id, now in zip(ids, stored):
            previous = first_previous[item_id]
            if now is None:
                if previous is not None:
                    state.index.remove(previous)
            elif previous is not None:
                state.index.replace(previous, now[0], now[2])
            else:
                added.append((item_id, now[0], now[1], now[2]))
        if added:
            state.index.add(
                [item_id for item_id, _, _, _ in added],
                [r for _, _, r, _ in added],
                vectors_by_space(state.index, [v for _, _, _, v in added]),
                # the core explains the new items from their records (library/core_recall.py)
                [record for _, record, _, _ in added] if self._keep_records else (),
            )
        return True

    def _load(self, record: NamespaceRecord, writes: int | None = None) -> _Namespace:
        """`writes` (start-up only): the namespace's write count in the store, so saved graphs
        that match it are loaded; a refresh after the primary's writes rebuilds (the saved graphs
        describe an older store)."""
        self._layouts[record.name] = _layout(record)
        return super()._load(record, writes)

    # Writes never reach a replica's backend (the server forwards them); a library user who
    # tries gets the store's ReadOnlyReplica from the first write, before the index changes.
    # Concepts a replica allocates (a namespace's declared concepts, at load) stay in memory: they
    # get the ids the primary gave them, in the same declared order.
    def create_namespace(self, record: NamespaceRecord) -> None:
        raise ReadOnlyReplica("this process is a read-only replica; create namespaces on the primary")


__all__ = [
    "OP_ITEM",
    "OP_NAMESPACE",
    "OP_SETTINGS",
    "Change",
    "ChangeBoard",
    "PublishingBackend",
    "ReadOnlyReplica",
    "ReplicaBackend",
    "SecondaryStore",
]
