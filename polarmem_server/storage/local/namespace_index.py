"""One namespace's in-process search state in the local backend: the compiled index, the slot
map between item ids and index slots (with its seqlock), the metadata postings and the stored
records by slot (in the core, like the ids, so the compiled Recall front filters and explains
without the interpreter) and the live counters. Like Qdrant's IdTracker, it owns all of it
behind methods (add, replace, remove, compact, resolve); nothing outside writes its attributes. Writers are serialised by the library's
namespace lock; readers (search, resolve, counts) run concurrently with them."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from polarmem.common.v1 import enums_pb2
from polarmem.storage.v1 import records_pb2
from polarmem_server.errors import FailedPrecondition
from polarmem_server._core import ItemIds, ItemRecords, MetadataPostings
from polarmem_server.index import TEXT, VISUAL, AnnSpec, ConceptCSR, Index, SpaceSpec
from polarmem_server.storage.backend import POLARITIES, NamespaceCounts
from polarmem_server.storage.local.index_record import IndexRecordBatch, concept_lists

if TYPE_CHECKING:
    from polarmem_server.storage.local.confidence import ConfidenceGrader

COMPACT_AT_TOMBSTONE_SHARE = 0.25
COMPACT_MIN_TOMBSTONES = 1024
T = TypeVar("T")


class NamespaceIndex:
    def __init__(self, name: str, spaces: Sequence[SpaceSpec], threads: int = 0, ann: AnnSpec | None = None) -> None:
        """``ann``: the namespace's approximate index setting; the core then keeps an HNSW graph per
        single-vector space, built as items are added (writes and the start-up rebuild alike)."""
        self.name = name
        self.spaces = {s.name: s for s in spaces}
        self.index = Index(spaces, threads=threads, ann=ann)
        self._slot_of: dict[str, int] = {}
        # Ids by slot live in the core ("" = no live item) so the compiled Recall front can name
        # hits without the interpreter; its generation is the seqlock (odd while compacting).
        self.ids = ItemIds()
        self._kinds: Counter = Counter()
        self._concepts: dict[str, Counter] = {p: Counter() for p in POLARITIES}
        self._scored = 0
        self.metadata = MetadataPostings()  # slots by (key, value): metadata_equals allow-lists
        # Serialised ItemRecords by slot for the compiled front's explanations (None: no front
        # runs, keep_records() was not called): set by writes, filled by reads (a start-up loads
        # index records only), cleared with the item.
        self.records: ItemRecords | None = None
        # Confidence grades per item (storage/local/confidence.py; set by the backend): None = none.
        self.grader: ConfidenceGrader | None = None

    # ---- reads -------------------------------------------------------------------------------

    def contains(self, item_id: str) -> bool:
        return item_id in self._slot_of

    def counts(self) -> NamespaceCounts:
        return NamespaceCounts(dict(self._kinds), {p: dict(c) for p, c in self._concepts.items()}, self._scored)

    @property
    def scored_concepts(self) -> int:
        return self._scored

    @property
    def generation(self) -> int:
        """Bumped twice per compaction (odd while one runs)."""
        return self.ids.generation

    def slot_map(self) -> dict[str, int]:
        """A copy of id -> slot (for checks; searches resolve slots through consistent())."""
        return dict(self._slot_of)

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
        if self.records is None:
            self.records = ItemRecords()

    def fill_records(self, item_ids: Sequence[str], records: Sequence[bytes | None]) -> None:
        """Records the library read back, for the slots that hold none yet. A compaction that ran
        meanwhile may have moved the slots under the fill: those fills are undone (the front then
        sends such hits to the library once more, which fills them again)."""
        generation = self.ids.generation
        if self.records is None or generation % 2:
            return
        filled = []
        for item_id, record in zip(item_ids, records):
            slot = self._slot_of.get(item_id)
            if slot is not None and record is not None:
                self.records.fill(slot, record)
                filled.append(slot)
        if self.ids.generation != generation:
            for slot in filled:
                self.records.clear(slot)

    def _allow_for(self, metadata: Mapping[str, str]) -> np.ndarray | None:
        return self.metadata.matching(list(metadata.items())) if metadata else None

    # ---- writes ------------------------------------------------------------------------------

    def add(self, names: list[str], batch: IndexRecordBatch, vectors: dict, records: Sequence[bytes] = ()) -> None:
        """Appends items in one core call from their decoded index records (and, when given,
        their serialised records for the front). The slots are mapped to ids first, so a
        concurrent search can resolve every slot it sees; a failed add unmaps them again."""
        kinds = np.where(batch.kinds == enums_pb2.ITEM_KIND_VISUAL, VISUAL, TEXT).astype(np.uint8)
        first = self.index.size
        if first != self.ids.size:
            raise FailedPrecondition(f"namespace {self.name!r}: index slots out of step with item ids")
        self.ids.append(names)
        self._slot_of.update(zip(names, range(first, first + len(names))))
        try:
            self.index.add(
                len(names),
                vectors,
                ConceptCSR(batch.has_indptr, batch.has_ids),
                ConceptCSR(batch.not_indptr, batch.not_ids),
                kinds,
                grades=self.grader.batch(batch) if self.grader is not None else None,
            )
        except Exception:
            self.ids.truncate(first)
            for name in names:
                del self._slot_of[name]
            raise
        for kind, count in zip(*np.unique(batch.kinds, return_counts=True)):
            self._kinds[int(kind)] += int(count)
        for polarity, counts in batch.concept_counts().items():
            self._concepts[polarity].update(counts)
        self._scored += batch.scored
        for row, pairs in batch.metadata:
            self.metadata.add(first + row, list(pairs))
        if self.records is not None:
            for row, record in enumerate(records):
                self.records.set(first + row, record)

    def replace(
        self,
        previous: records_pb2.ItemRecord,
        record: records_pb2.ItemRecord,
        vectors: Mapping[str, np.ndarray],
        serialised: bytes,
    ) -> None:
        """Brings a stored item's slot in step with its new version (`serialised`: its bytes)."""
        slot = self._slot_of[record.id]
        has, not_has, _, _ = concept_lists(serialised)
        self._count(previous, slot, -1)
        self.index.set_concepts(
            [slot], [has], [not_has], self.grader.record(serialised) if self.grader is not None else None
        )
        for space, spec in self.spaces.items():
            value = vectors.get(space)
            if spec.multi and value is None:
                value = np.zeros((0, spec.dim), np.float32)
            self.index.set_vectors([slot], space, [value])
        self._count(record, slot, +1, serialised)
        if self.records is not None:
            self.records.set(slot, serialised)

    def remove(self, record: records_pb2.ItemRecord) -> None:
        slot = self._slot_of.pop(record.id)
        self.index.remove([slot])
        self.ids.clear(slot)
        if self.records is not None:
            self.records.clear(slot)
        self._count(record, slot, -1)
        self._compact_if_worth_it()

    def compact(self) -> None:
        """Drops the index's tombstones and renumbers the slot map (readers retry meanwhile)."""
        self.ids.begin_renumbering()
        try:
            new_of_old = self.index.compact()
            old_ids = self.ids.all()
            id_of: list[str] = [""] * self.index.size
            for old, new in enumerate(new_of_old.tolist()):
                if new >= 0:
                    id_of[new] = old_ids[old]
            self.ids.replace_all(id_of)
            self._slot_of = {item_id: slot for slot, item_id in enumerate(id_of) if item_id}
            self.metadata.renumber(np.asarray(new_of_old, dtype=np.int64))
            if self.records is not None:
                self.records.renumber(np.asarray(new_of_old, dtype=np.int64))
        finally:
            self.ids.end_renumbering()

    def _compact_if_worth_it(self) -> None:
        tombstones = self.index.size - self.index.live_count
        if tombstones >= max(COMPACT_MIN_TOMBSTONES, COMPACT_AT_TOMBSTONE_SHARE * self.index.size):
            self.compact()

    def _count(self, record: records_pb2.ItemRecord, slot: int, sign: int, serialised: bytes | None = None) -> None:
        has, not_has, align, scored = concept_lists(serialised or record.SerializeToString())
        self._kinds[record.kind] += sign
        for polarity, concepts in (("has", has), ("not_has", not_has), ("align", align)):
            for c in concepts:
                self._concepts[polarity][c] += sign
        self._scored += sign * scored
        if record.metadata:
            pairs = list(record.metadata.items())
            if sign > 0:
                self.metadata.add(slot, pairs)
            else:
                self.metadata.remove(slot, pairs)
