"""The compact index record: what rebuilding the in-memory index needs of one item, stored next to
the full ItemRecord and written in the same batch. Its layout, and the reader of the ItemRecord
fields it holds, are the core's (cpp/include/polarmem/item_layout.hpp: one writer for every
door); here the decoded batch takes the shape the in-memory index reads.

Start-up used to parse every ItemRecord (scores per template, history, text) and walk its
evidence in Python: ~12,000 items/s. These records decode in the core, a batch per call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from polarmem_server import _core

# (HAS ids, NOT_HAS ids, ALIGN ids, scored-concept count) of a serialised ItemRecord
concept_lists = _core.concept_lists
# the index record of a serialised ItemRecord
index_record = _core.index_record


@dataclass
class IndexRecordBatch:
    """Many decoded records: per-item kinds and counts, the concept ids as CSR arrays, and
    metadata for the items that have any."""

    kinds: np.ndarray  # storage ItemKind per item
    has_indptr: np.ndarray
    has_ids: np.ndarray
    not_indptr: np.ndarray
    not_ids: np.ndarray
    align_ids: np.ndarray
    scored: int
    # the scored concepts' mean scores as CSR (layout 1 records: none), and per item whether
    # its partitioner was a posterior one (grade by posterior rather than by mean)
    scored_indptr: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    scored_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    scored_means: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    posterior: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    metadata: list[tuple[int, list[tuple[str, str]]]] = field(default_factory=list)  # (row, pairs)


def decode_index_records(values: list[bytes]) -> IndexRecordBatch:
    """Decodes a batch in one core call (FailedPrecondition names a layout this server cannot read)."""
    return IndexRecordBatch(*_core.decode_index_records(values))
