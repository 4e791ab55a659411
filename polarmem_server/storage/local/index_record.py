"""The compact index record: what rebuilding the in-memory index needs of one item, in a fixed
binary layout, stored next to the full ItemRecord and written in the same batch.

Start-up used to parse every ItemRecord (scores per template, history, text) and walk its
evidence in Python: ~12,000 items/s. This record is decoded a batch at a time with numpy.

Layout (little-endian)::

    u8  layout version (2)    u8 item kind (storage ItemKind)    u16 flags (bit 0: posterior partition)
    u32 n_has   u32 n_not_has   u32 n_align   u32 n_scored (evidence entries with scores)
    u32 × (n_has + n_not_has + n_align)   concept ids: HAS, then NOT_HAS, then ALIGN
    u32 × n_scored   the scored concepts' ids;   f32 × n_scored   their mean scores   (layout 2)
    then, for each metadata entry: u32 key length, key, u32 value length, value (UTF-8)

The scored means let the index grade each (item, concept) by confidence (storage/local/confidence.py:
the mean for Otsu items, the posterior under the namespace's score model for items its
``calibrated`` partitioner placed — flag bit 0). Layout 1 records (written before grades existed)
are still read: their items carry no grades until they are written again.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from polarmem.common.v1 import enums_pb2
from polarmem.storage.v1 import records_pb2
from polarmem_server.errors import FailedPrecondition

LAYOUT_VERSION = 2
READABLE_LAYOUTS = (1, 2)
FLAG_POSTERIOR = 1  # the item was partitioned by posterior ("calibrated"): grade by its posterior
POSTERIOR_METHODS = ("calibrated",)
_HEAD = struct.Struct("<BBHIIII")
_LENGTH = struct.Struct("<I")
_HAS, _NOT_HAS = enums_pb2.CONCEPT_STATE_HAS, enums_pb2.CONCEPT_STATE_NOT_HAS


def concept_lists(record: records_pb2.ItemRecord) -> tuple[list[int], list[int], list[int], int]:
    """(HAS ids, NOT_HAS ids, ALIGN ids, scored-concept count): the one walk over an item's
    evidence that a write needs (for its index record and its edge keys)."""
    has, not_has, scored = [], [], 0
    for ev in record.evidence:
        state = ev.state
        if state == _HAS:
            has.append(ev.concept_id)
        elif state == _NOT_HAS:
            not_has.append(ev.concept_id)
        if ev.template_scores:
            scored += 1
    return has, not_has, list(record.mentions), scored


def scored_means(record: records_pb2.ItemRecord) -> tuple[list[int], list[float]]:
    """(concept ids, mean scores) of the item's scored evidence, in evidence order."""
    ids, means = [], []
    for ev in record.evidence:
        if ev.template_scores:
            ids.append(ev.concept_id)
            means.append(ev.mean)
    return ids, means


def encode_index_record(
    record: records_pb2.ItemRecord, lists: tuple[list[int], list[int], list[int], int] | None = None
) -> bytes:
    has, not_has, align, scored = lists or concept_lists(record)
    scored_ids, means = scored_means(record)
    flags = FLAG_POSTERIOR if record.partition.method in POSTERIOR_METHODS else 0
    parts = [
        _HEAD.pack(LAYOUT_VERSION, record.kind, flags, len(has), len(not_has), len(align), len(scored_ids)),
        struct.pack(f"<{len(has) + len(not_has) + len(align)}I", *has, *not_has, *align),
        struct.pack(f"<{len(scored_ids)}I", *scored_ids),
        struct.pack(f"<{len(means)}f", *means),
    ]
    for key, value in sorted(record.metadata.items()):
        for text in (key, value):
            encoded = text.encode()
            parts += [_LENGTH.pack(len(encoded)), encoded]
    return b"".join(parts)


def _decode_metadata(data: bytes, offset: int) -> list[tuple[str, str]]:
    pairs, texts = [], []
    while offset < len(data):
        (length,) = _LENGTH.unpack_from(data, offset)
        texts.append(data[offset + 4 : offset + 4 + length].decode())
        offset += 4 + length
        if len(texts) == 2:
            pairs.append((texts[0], texts[1]))
            texts = []
    return pairs


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

    def concept_counts(self) -> dict[str, Counter]:
        out = {}
        for name, ids in (("has", self.has_ids), ("not_has", self.not_ids), ("align", self.align_ids)):
            concepts, counts = np.unique(ids, return_counts=True)
            out[name] = Counter(dict(zip(concepts.tolist(), counts.tolist())))
        return out


def decode_index_records(values: list[bytes]) -> IndexRecordBatch:
    """Decodes a batch: one struct read per record in Python, everything else in numpy."""
    heads = np.empty((len(values), 7), dtype=np.int64)
    id_bytes, score_ids, score_means, metadata = [], [], [], []
    for row, value in enumerate(values):
        version, kind, flags, n_has, n_not, n_align, scored = _HEAD.unpack_from(value)
        if version not in READABLE_LAYOUTS:
            raise FailedPrecondition(
                f"index record layout {version} is not readable by this server "
                f"(reads {', '.join(map(str, READABLE_LAYOUTS))})"
            )
        end = _HEAD.size + 4 * (n_has + n_not + n_align)
        id_bytes.append(value[_HEAD.size : end])
        graded = scored if version >= 2 else 0
        if graded:
            score_ids.append(value[end : end + 4 * graded])
            score_means.append(value[end + 4 * graded : end + 8 * graded])
            end += 8 * graded
        heads[row] = (kind, n_has, n_not, n_align, scored, graded, flags & FLAG_POSTERIOR)
        if len(value) > end:
            metadata.append((row, _decode_metadata(value, end)))
    flat = np.frombuffer(b"".join(id_bytes), dtype="<u4")
    n_has, n_not, n_align = heads[:, 1], heads[:, 2], heads[:, 3]
    totals = n_has + n_not + n_align
    # position of every id inside its own record, to split the flat array into the three lists
    starts = np.repeat(np.cumsum(totals) - totals, totals)
    position = np.arange(flat.size) - starts
    owner_has, owner_not = np.repeat(n_has, totals), np.repeat(n_not, totals)
    is_has = position < owner_has
    is_not = ~is_has & (position < owner_has + owner_not)
    return IndexRecordBatch(
        kinds=heads[:, 0].astype(np.uint8),
        has_indptr=np.concatenate([[0], np.cumsum(n_has)]).astype(np.int64),
        has_ids=flat[is_has].astype(np.uint32),
        not_indptr=np.concatenate([[0], np.cumsum(n_not)]).astype(np.int64),
        not_ids=flat[is_not].astype(np.uint32),
        align_ids=flat[~is_has & ~is_not].astype(np.uint32),
        scored=int(heads[:, 4].sum()),
        scored_indptr=np.concatenate([[0], np.cumsum(heads[:, 5])]).astype(np.int64),
        scored_ids=np.frombuffer(b"".join(score_ids), dtype="<u4").astype(np.uint32),
        scored_means=np.frombuffer(b"".join(score_means), dtype="<f4").astype(np.float32),
        posterior=heads[:, 6].astype(bool),
        metadata=metadata,
    )
