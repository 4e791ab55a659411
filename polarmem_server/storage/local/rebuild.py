"""Appending items to a namespace's in-memory index from their compact index records
(:mod:`polarmem_server.storage.local.index_record`): at start-up, and for every batch of new items.

Start-up reads the index records and the vectors column family side by side — both are keyed by
item id, so one pass over each suffices — and hands the index whole arrays: no per-item protobuf
parsing, no per-concept Python loop. New writes reuse the records the store just encoded.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from polarmem_server.storage.local.namespace_index import NamespaceIndex
from polarmem_server.storage.local.store import decode_vector


def vectors_by_space(target: NamespaceIndex, per_item: list) -> dict:
    """``{space: [value per item]}`` for NamespaceIndex.add from per-item vector dicts (a multi
    space's missing value becomes zero rows, a single space's None)."""
    out: dict[str, list] = {}
    for space, spec in target.spaces.items():
        empty = np.zeros((0, spec.dim), np.float32) if spec.multi else None
        out[space] = [v.get(space, empty) for v in per_item]
    return out


class RebuildLoader:
    def __init__(self, target: NamespaceIndex, vectors: Iterator[tuple[str, str, bytes]]) -> None:
        self.target = target
        self._vectors = vectors  # (item id, space, encoded rows) in item-id order
        self._pending = next(vectors, None)

    def load(self, ids: list[bytes], records: list[bytes]) -> int:
        """Appends one batch (item ids in key order with their index records); returns its size."""
        if not ids:
            return 0
        names = [item_id.decode() for item_id in ids]
        self.target.add(names, records, self._vectors_for(names))
        return len(names)

    def _vectors_for(self, names: list[str]) -> dict:
        """Each space's vectors for these items, as one (count, dim) array where every item has a
        single vector (the common case: one join, one copy) or per-item lists otherwise."""
        spaces = self.target.spaces
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
        out: dict[str, np.ndarray | list] = {}
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
