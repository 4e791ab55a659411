"""Read-only replicas of the local backend, for a server that runs several processes
(`polarmem serve --processes N`, api/processes.py).

One process (the primary) owns the RocksDB data directory and every write. The others open it
as RocksDB *secondary* instances (``AccessType.secondary``: they read the primary's files and WAL,
never write, and see new writes only after ``try_catch_up_with_primary``), and keep their own
in-memory index. What tells a replica that it is behind is a :class:`ChangeBoard`: one small
file per namespace in a directory both sides know, which the primary bumps after every
successful write to that namespace (:class:`PublishingBackend`). A replica that sees a bumped
counter catches up with the primary and rebuilds that namespace's search state from its
secondary instance (:meth:`ReplicaBackend.refresh`), then swaps it in; searches running
meanwhile finish on the old state. Because the counter is bumped only after the write returned,
a catch-up started after reading the counter includes the write: a write is visible on a
replica at most one poll interval plus one rebuild of its namespace after it was acknowledged.

Rebuilding a whole namespace per change is the simple, exact way (the same code as start-up);
it costs about what start-up costs for that namespace (docs/performance.md), so replicas suit
read-heavy deployments. Applying single items incrementally needs each replaced item's previous
state for the namespace's counters, which a secondary instance cannot read once it has caught
up; that is left for later.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rocksdict import AccessType, Options, Rdict

from polarmem.storage.v1.records_pb2 import ItemRecord, NamespaceRecord
from polarmem_server.errors import FailedPrecondition
from polarmem_server.storage.backend import ItemWrite
from polarmem_server.storage.local.backend import LocalBackend, _Namespace
from polarmem_server.storage.local.store import COLUMN_FAMILIES, SCHEMA_VERSION, Store, StoreError, open_error


class ReadOnlyReplica(FailedPrecondition):
    """A write reached a read-only replica's store (the server forwards writes to the primary,
    so this means a bug or a library user writing through a replica)."""


class ChangeBoard:
    """Per-namespace change counters shared by the processes of one server, as files in
    `directory` (one per namespace, named by the name's hex, holding a decimal counter).
    Only the primary bumps; replicas read. A file is replaced atomically (write + rename), so a
    reader sees the old or the new counter, never a torn one."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._counters: dict[str, int] = {}
        self._lock = threading.Lock()

    def bump(self, namespace: str) -> None:
        with self._lock:
            value = self._counters.get(namespace, 0) + 1
            self._counters[namespace] = value
            target = self.directory / namespace.encode().hex()
            temporary = target.with_suffix(".tmp")
            temporary.write_text(str(value))
            os.replace(temporary, target)

    def read(self) -> dict[str, int]:
        """Every namespace's counter (namespaces never written since the server started are absent)."""
        counters = {}
        for entry in os.scandir(self.directory):
            if entry.name.endswith(".tmp"):
                continue
            try:
                counters[bytes.fromhex(entry.name).decode()] = int(Path(entry.path).read_text() or 0)
            except (OSError, ValueError):  # replaced while read: the next poll reads it
                continue
        return counters


class PublishingBackend(LocalBackend):
    """The primary's local backend: every write, once stored, bumps its namespace on the board."""

    def __init__(self, path: str | Path, board: ChangeBoard, durability: str = "sync", threads: int = 0,
                 on_write: Callable[[float], None] | None = None) -> None:
        super().__init__(path, durability, threads, on_write)
        self.board = board

    def create_namespace(self, record: NamespaceRecord) -> None:
        super().create_namespace(record)
        self.board.bump(record.name)

    def update_namespace(self, record: NamespaceRecord) -> None:
        super().update_namespace(record)
        self.board.bump(record.name)

    def delete_namespace(self, name: str) -> None:
        super().delete_namespace(name)
        self.board.bump(name)

    def write_items(self, ns: str, writes: Sequence[ItemWrite]) -> None:
        try:
            super().write_items(ns, writes)
        finally:  # a failed group may still have stored nothing; a needless refresh is harmless
            if writes:
                self.board.bump(ns)

    def delete_item(self, ns: str, record: ItemRecord) -> None:
        super().delete_item(ns, record)
        self.board.bump(ns)


class SecondaryStore(Store):
    """The store opened as a RocksDB secondary instance of `path` (its own info log and
    manifest copy under `secondary_dir`): reads as Store does, writes raise ReadOnlyReplica."""

    def __init__(self, path: str | Path, secondary_dir: str | Path) -> None:
        self.secondary_dir = Path(secondary_dir)
        self.secondary_dir.mkdir(parents=True, exist_ok=True)
        super().__init__(path, durability="async")

    def _options(self) -> Options:
        options = Options(raw_mode=True)
        options.set_max_open_files(-1)  # RocksDB requires it of secondary instances
        return options

    def _open(self) -> None:
        try:
            self._db = Rdict(str(self.path), self._options(),
                             column_families={cf: Options(raw_mode=True) for cf in COLUMN_FAMILIES},
                             access_type=AccessType.secondary(str(self.secondary_dir)))
        except Exception as exc:
            raise open_error(self.path, exc) from exc
        self._cf = {cf: self._db.get_column_family(cf) for cf in COLUMN_FAMILIES}
        self._handles = {cf: self._db.get_column_family_handle(cf) for cf in COLUMN_FAMILIES}

    def _check_schema(self) -> None:
        stored = self._family("meta").get(b"schema_version")
        if stored is None or int(stored) != SCHEMA_VERSION:
            raise StoreError(f"{self.path} holds schema version {stored!r}; a replica reads version {SCHEMA_VERSION} "
                             "(start the primary first, it migrates the store)")

    def _write(self, batch) -> None:
        raise ReadOnlyReplica("this process is a read-only replica; writes go to the primary process")

    def catch_up(self) -> None:
        """Makes every write the primary has made so far visible to this instance."""
        with self._lock:
            self._db.try_catch_up_with_primary()

    def flush(self) -> None:  # nothing of its own to flush
        return None


class ReplicaBackend(LocalBackend):
    """A LocalBackend over a SecondaryStore: searches and reads as the primary's backend does;
    :meth:`refresh` brings one namespace in step with the primary."""

    def __init__(self, path: str | Path, secondary_dir: str | Path, threads: int = 0) -> None:
        self.store = SecondaryStore(path, secondary_dir)
        self.threads = threads
        self.on_write = None
        self._namespaces: dict[str, _Namespace] = {}
        self._lock = threading.RLock()
        self._loaded_items = 0
        started = time.perf_counter()
        for record in self.store.namespaces():
            self._namespaces[record.name] = self._load(record)
        self._load_seconds = time.perf_counter() - started

    def catch_up(self) -> None:
        self.store.catch_up()

    def refresh(self, name: str) -> NamespaceRecord | None:
        """Rebuilds namespace `name` from the (caught-up) secondary instance and swaps it in, or
        drops it when the primary deleted it. Returns its record (None: deleted)."""
        record = next((r for r in self.store.namespaces() if r.name == name), None)
        if record is None:
            with self._lock:
                self._namespaces.pop(name, None)
            return None
        state = self._load(record)
        with self._lock:
            self._namespaces[name] = state
        return record

    # Writes never reach a replica's backend (the server forwards them); a library user who
    # tries gets the store's ReadOnlyReplica from the first write, before the index changes.
    # Concepts a replica allocates (a namespace's declared concepts, at load) stay in memory: they
    # get the ids the primary gave them, in the same declared order.
    def create_namespace(self, record: NamespaceRecord) -> None:
        raise ReadOnlyReplica("this process is a read-only replica; create namespaces on the primary")


__all__ = ["ChangeBoard", "PublishingBackend", "ReadOnlyReplica", "ReplicaBackend", "SecondaryStore"]
