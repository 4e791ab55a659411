"""One namespace's in-process search state in the local backend: the compiled index, and the
core's NamespaceItems (cpp/include/polarmem/namespace_items.hpp), which keeps the index, the ids
by slot, the metadata postings, the stored records by slot, the slot of each item id and the live
counts in step, one core call per write. Like Qdrant's IdTracker, nothing outside writes its
state. Writers are serialised by the library's namespace lock; readers (search, resolve, counts)
run concurrently with them; the ids' generation is the seqlock a compaction holds odd."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from polarmem_server._core import ItemIds, ItemRecords, MetadataPostings, NamespaceItems
from polarmem_server.index import AnnSpec, Index, SpaceSpec, grade_input
from polarmem_server.storage.backend import NamespaceCounts
from polarmem_server.storage.local.index_record import decode_index_records

if TYPE_CHECKING:
    from polarmem_server.storage.local.confidence import ConfidenceGrader

T = TypeVar("T")


class NamespaceIndex:
    def __init__(self, name: str, spaces: Sequence[SpaceSpec], threads: int = 0, ann: AnnSpec | None = None) -> None:
        """``ann``: the namespace's approximate index setting; the core then keeps an HNSW graph per
        single-vector space, built as items are added (writes and the start-up rebuild alike)."""
        self.name = name
        self.spaces = {s.name: s for s in spaces}
        self.index = Index(spaces, threads=threads, ann=ann)
        # Ids by slot live in the core ("" = no live item) so the compiled Recall front can name
        # hits without the interpreter; its generation is the seqlock (odd while compacting).
        self.ids = ItemIds()
        self.metadata = MetadataPostings()  # slots by (key, value): metadata_equals allow-lists
        self.items = NamespaceItems(name, self.index.core, self.ids, self.metadata)
        # Confidence grades per item (storage/local/confidence.py; set by the backend): None = none.
        self.grader: ConfidenceGrader | None = None

    # ---- reads -------------------------------------------------------------------------------

    @property
    def records(self) -> ItemRecords | None:
        """Serialised ItemRecords by slot for the compiled front's explanations (None: no front
        runs, keep_records() was not called): set by writes, filled by reads (a start-up loads
        index records only), cleared with the item."""
        return self.items.records

    def contains(self, item_id: str) -> bool:
        return self.items.slot(item_id) is not None

    def counts(self) -> NamespaceCounts:
        kinds, has, not_has, align, scored = self.items.counts()
        return NamespaceCounts(kinds, {"has": has, "not_has": not_has, "align": align}, scored)

    @property
    def generation(self) -> int:
        """Bumped twice per compaction (odd while one runs)."""
        return self.ids.generation

    def slot_map(self) -> dict[str, int]:
        """A copy of id -> slot (for checks; searches resolve slots through consistent())."""
        return self.items.slots()

    def ids_by_slot(self) -> list[str | None]:
        return [item_id or None for item_id in self.ids.all()]

    def metadata_items(self, key: str, value: str) -> list[str]:
        """Ids of the live items whose metadata maps `key` to `value`."""
        return sorted(self.ids.get(int(s)) for s in self.metadata.matching([(key, value)]))

    def consistent(self, read: Callable[[Callable[[np.ndarray], list], Callable], T]) -> T:
        """Runs `read(resolve, allow_for)` within one generation of the slot map (a seqlock: odd
        while compacting), retrying when a compaction renumbered the slots meanwhile. `resolve`
        maps slots to ids; `allow_for(metadata)` is the sorted slots matching every pair."""
        while True:
            generation = self.ids.generation
            if generation % 2:
                time.sleep(0.001)
                continue

            def resolve(slots: np.ndarray) -> list:
                return [item_id or None for item_id in self.ids.resolve(np.ascontiguousarray(slots, dtype=np.int64))]

            result = read(resolve, self._allow_for)
            if self.ids.generation == generation:
                return result

    def keep_records(self) -> None:
        """From now on hold the items' records by slot (what the compiled front explains from):
        those written from now on, and those read back (fill_records)."""
        self.items.keep_records()

    def fill_records(self, item_ids: Sequence[str], records: Sequence[bytes | None]) -> None:
        """Records the library read back, for the slots that hold none yet (NamespaceItems:
        fills a compaction overtook are undone)."""
        self.items.fill_records(list(item_ids), list(records))

    def _allow_for(self, metadata: Mapping[str, str]) -> np.ndarray | None:
        return self.metadata.matching(list(metadata.items())) if metadata else None

    # ---- writes ------------------------------------------------------------------------------

    def add(
        self, names: list[str], index_records: list[bytes], vectors: Mapping[str, list], records: Sequence[bytes] = ()
    ) -> None:
        """Appends items in one core call from their index records (and, when given, their
        serialised records for the front); `vectors`: {space: one value per item}."""
        count = len(names)
        inputs = [self.index.vector_input(space, values, count) for space, values in vectors.items()]
        grades = None
        if self.grader is not None:
            grades = grade_input(self.grader.batch(decode_index_records(index_records)), count)
        self.items.add(names, index_records, inputs, grades, list(records))

    def replace(self, previous: bytes, record: bytes, vectors: Mapping[str, np.ndarray]) -> None:
        """Brings a stored item's slot in step with its new version (both serialised ItemRecords)."""
        inputs = []
        for space, spec in self.spaces.items():
            value = vectors.get(space)
            if spec.multi and value is None:
                value = np.zeros((0, spec.dim), np.float32)
            inputs.append(self.index.vector_input(space, [value], 1))
        grades = grade_input(self.grader.record(record), 1) if self.grader is not None else None
        self.items.replace(previous, record, inputs, grades)

    def remove(self, record: bytes) -> None:
        """Removes a stored item, its serialised ItemRecord given (compacting once tombstones are a
        quarter of the slots)."""
        self.items.remove(record)

    def compact(self) -> None:
        """Drops the index's tombstones and renumbers the slot map (readers retry meanwhile)."""
        self.items.compact()
