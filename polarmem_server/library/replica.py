"""A read-only Memory that follows a primary's data directory: the replicas of a multi-process
server (`polarmem serve --processes N`, api/processes.py says how the processes meet).

The primary's backend publishes every stored write on a change board: the write's records in its
namespace's change log, then the namespace's counter (storage/local/secondary.py). A replica
opens the directory as a RocksDB secondary instance and builds its own in-memory index; its
follower, polled by the server's replica-refresh daemon — and by the replica's own forwarded writes
once the primary has acknowledged them, so that a connection reads its own writes —, catches up
with the primary (under the board's cut) for each namespace whose counter moved and applies its new
change-log records: the changed items only, or a rebuild of the namespace where secondary.py says so.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from polarmem_server.library.memory import Memory
from polarmem_server.storage.local.secondary import (
    OP_ITEM,
    OP_NAMESPACE,
    OP_SETTINGS,
    Change,
    ChangeBoard,
    PublishingBackend,
    ReplicaBackend,
    SecondaryStore,
)

log = logging.getLogger("polarmem.processes")


def change_board(directory: str | Path) -> ChangeBoard:
    """The board a primary publishes its writes on and its replicas read (created if missing)."""
    return ChangeBoard(directory)


def open_primary(
    data_dir: str | Path,
    board: ChangeBoard,
    durability: str,
    threads: int,
    **memory_options: Any,
) -> Memory:
    """The primary's Memory: the local backend, publishing every stored write on ``board``."""
    return Memory(PublishingBackend(data_dir, board, durability, threads), **memory_options)


class ReplicaMemory(Memory):
    """Memory over a ReplicaBackend, with ways to bring one namespace in step with the primary."""

    backend: ReplicaBackend

    def reload_namespace(self, name: str) -> None:
        """Rebuilds namespace `name` (its index, vocabulary and settings) from the caught-up
        secondary instance, or forgets it when the primary deleted it. The backend's state is
        swapped first: a concept id is never reused, so a call that still holds the previous
        vocabulary reads the new index correctly."""
        self.reopen_namespace(name, self.backend.refresh(name))

    def apply_changes(self, name: str, changes: list[Change] | None) -> bool:
        """Applies namespace `name`'s change-log records (None: some were no longer kept) from
        the caught-up secondary instance: item changes to its index, a settings change to its
        settings; whatever cannot be applied so rebuilds it (reload_namespace). Returns whether
        it was applied incrementally."""
        if changes is None or any(change.op == OP_NAMESPACE for change in changes):
            self.reload_namespace(name)
            return False
        record = self.backend.namespace_record(name)
        settings_changed = any(change.op == OP_SETTINGS for change in changes)
        concepts_before = len(self.backend.concepts(name)) if record is not None else 0
        if record is not None and settings_changed and self.backend.same_layout(record):
            self.backend.grade_with(record)  # items re-partitioned under new settings are graded by them
        if (
            record is None
            or (settings_changed and not self.backend.same_layout(record))
            or not self.backend.apply_items(name, [c for c in changes if c.op == OP_ITEM])
        ):
            self.reload_namespace(name)
            return False
        if settings_changed or len(self.backend.concepts(name)) != concepts_before or not self.holds_namespace(name):
            self.reopen_namespace(name, record)  # new settings or vocabulary: the view is rebuilt (no item read)
        return True


class ReplicaFollower:
    """Keeps a ReplicaMemory in step with the primary: ``poll_once`` reads the board and, when a
    counter moved, catches up once (under the board's cut) and applies each changed namespace's
    new records."""

    def __init__(self, memory: ReplicaMemory, board: ChangeBoard, applied: dict[str, int], position: int) -> None:
        """`applied`: the board as read, under a cut, when `memory`'s store was opened (it holds
        exactly those writes: open_replica); later records are applied from there. `position`:
        the store's position (RocksDB sequence number) then."""
        self.memory, self.board = memory, board
        self.applied = dict(applied)
        # Every write of the primary at or below this store position is applied here: a read
        # whose consistency token names no later one needs no catch-up (storage/consistency.py).
        self.position = position
        self.on_position: Callable[[int], object] | None = None  # told each new position (the front)
        self.applied_incrementally = 0
        self.rebuilds = 0
        # The refresh daemon and the threads answering forwarded writes poll: one at a time, so
        # each change is applied once (a poll that waited finds the others' work done).
        self._polling = threading.Lock()

    def poll_once(self) -> int:
        """One poll: returns the namespaces brought in step."""
        with self._polling:
            return self._poll()

    def catch_up_to(self, position: int | None = None) -> None:
        """In step with every write the primary acknowledged so far (`position` None), or with
        those up to the store `position` a consistency token names: nothing to do where that is
        applied already. A catch-up runs even when the board shows nothing new, so the position
        passes writes the primary stores without publishing them."""
        if position is not None and position <= self.position:
            return
        with self._polling:
            self._poll(always=position is not None)

    def _poll(self, always: bool = False) -> int:
        if not always and all(self.applied.get(name) == counter for name, counter in self.board.read().items()):
            return 0
        with self.board.cut():  # no write stored but unpublished: the catch-up matches the counters
            seen = self.board.read()
            position = self.memory.backend.catch_up()
        changed = [name for name, counter in seen.items() if self.applied.get(name) != counter]
        for name in changed:
            changes = self.board.changes(name, self.applied.get(name, 0), seen[name])
            try:
                incremental = self.memory.apply_changes(name, changes)
            except Exception:  # noqa: BLE001 - a partly applied change: the rebuild is always right
                log.exception("applying namespace %r's changes failed; rebuilding it", name)
                self.memory.reload_namespace(name)
                incremental = False
            self.applied[name] = seen[name]
            if incremental:
                self.applied_incrementally += 1
            else:
                self.rebuilds += 1
        self.position = position
        if self.on_position is not None:
            self.on_position(position)
        return len(changed)


def open_replica(
    data_dir: str | Path, secondary_dir: str | Path, threads: int, board: ChangeBoard
) -> tuple[ReplicaMemory, ReplicaFollower]:
    """A replica's memory over ``data_dir`` (its secondary instance's files in
    ``secondary_dir``) and its follower, starting from the board's counters as read when the
    store was opened, under a cut (the instance opens holding exactly the writes they cover)."""
    with board.cut():
        applied = board.read()
        store = SecondaryStore(data_dir, secondary_dir)
        position = store.position()
    memory = ReplicaMemory(ReplicaBackend(data_dir, secondary_dir, threads, store))
    return memory, ReplicaFollower(memory, board, applied, position)
