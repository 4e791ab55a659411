"""Appending items to a namespace's in-memory index from their compact index records
(:mod:`polarmem_server.storage.local.index_record`): at start-up, and for every batch of new items.

Start-up reads the index records and the vectors column family side by side — both are keyed by
item id, so one pass over each suffices — and hands the index whole arrays: no per-item protobuf
parsing, no per-concept Python loop. New writes reuse the records the store just encoded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from polarmem.common.v1 import enums_pb2
from polarmem_server.index import TEXT, VISUAL, ConceptCSR
from polarmem_server.storage.local.index_record import decode_index_records
from polarmem_server.storage.local.store import decode_vector

if TYPE_CHECKING:
    from polarmem_server.memory import Namespace


def append_items(namespace: Namespace, names: list[str], records: list[bytes], vectors: dict) -> None:
    """Adds items to the index in one core call and updates the namespace's counters. The slots
    are mapped to ids first, so a concurrent search can resolve every slot it sees; a failed add
    unmaps them again."""
    batch = decode_index_records(records)
    kinds = np.where(batch.kinds == enums_pb2.ITEM_KIND_VISUAL, VISUAL, TEXT).astype(np.uint8)
    first = namespace.index.size
    if first != len(namespace.id_of):
        raise RuntimeError(f"namespace {namespace.settings.name!r}: slots out of step with ids")
    namespace.id_of.extend(names)
    namespace.slot_of.update(zip(names, range(first, first + len(names))))
    try:
        namespace.index.add(len(names), vectors, ConceptCSR(batch.has_indptr, batch.has_ids),
                            ConceptCSR(batch.not_indptr, batch.not_ids), kinds)
    except Exception:
        del namespace.id_of[first:]
        for name in names:
            del namespace.slot_of[name]
        raise
    for kind, count in zip(*np.unique(batch.kinds, return_counts=True)):
        namespace.kinds[enums_pb2.ItemKind.Name(int(kind))] += int(count)
    for polarity, counts in batch.concept_counts().items():
        namespace.concept_counts[polarity].update(counts)
    namespace.scored_concepts += batch.scored
    for row, pairs in batch.metadata:
        for pair in pairs:
            namespace.metadata_slots[pair].add(first + row)


class RebuildLoader:
    def __init__(self, namespace: Namespace, vectors: Iterator[tuple[str, str, bytes]]) -> None:
        self.namespace = namespace
        self._vectors = vectors  # (item id, space, encoded rows) in item-id order
        self._pending = next(vectors, None)

    def load(self, ids: list[bytes], records: list[bytes]) -> int:
        """Appends one batch (item ids in key order with their index records); returns its size."""
        if not ids:
            return 0
        names = [item_id.decode() for item_id in ids]
        append_items(self.namespace, names, records, self._vectors_for(names))
        return len(names)

    def _vectors_for(self, names: list[str]) -> dict:
        """Each space's vectors for these items, as one (count, dim) array where every item has a
        single vector (the common case: one join, one copy) or per-item lists otherwise."""
        spaces = self.namespace.spaces
        found: dict[str, list[tuple[int, bytes]]] = {space: [] for space in spaces}
        pending = self._pending
        for row, name in enumerate(names):
            # str order is UTF-8 byte order, the order of both column families' keys
            while pending is not None and pending[0] <= name:
                item_id, space, data = pending
                if item_id == name and space in found:
                    found[space].append((row, data))
                pending = next(self._vectors, None)
        self._pending = pending
        out = {}
        for space, spec in spaces.items():
            rows = found[space]
            single_size = 4 + 4 * spec.dim
            if not spec.multi and len(rows) == len(names) and all(len(data) == single_size for _, data in rows):
                joined = b"".join(data[4:] for _, data in rows)
                out[space] = np.frombuffer(joined, dtype=np.float32).reshape(len(names), spec.dim)
                continue
            per_item: list = [None] * len(names)
            for row, data in rows:
                per_item[row] = decode_vector(data, spec.dim)
            if spec.multi:
                out[space] = [np.zeros((0, spec.dim), np.float32) if v is None else v for v in per_item]
            else:
                out[space] = [None if v is None else v[0] for v in per_item]
        return out
