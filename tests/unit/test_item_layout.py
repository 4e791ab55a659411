"""The core's item layout (cpp/include/polarmem/item_layout.hpp) against the generated protobuf
classes: its reader of ItemRecord's layout fields gives what the record says on random records
(every field set or not, unknown fields, packed and unpacked repeated fields, a repeated map key),
and an item written through the store reads back whole. Byte-for-byte compatibility of the index
record with stores written before the layout moved into the core: cpp/tests/test_item_layout.cpp."""

from __future__ import annotations

import random

import numpy as np
import pytest

from polarmem.common.v1 import enums_pb2
from polarmem.storage.v1 import records_pb2
from polarmem_server import _core
from polarmem_server.storage.local.index_record import concept_lists, decode_index_records, index_record
from polarmem_server.storage.local.store import Store

STATES = (
    enums_pb2.CONCEPT_STATE_UNSPECIFIED,
    enums_pb2.CONCEPT_STATE_HAS,
    enums_pb2.CONCEPT_STATE_NOT_HAS,
    enums_pb2.CONCEPT_STATE_UNCERTAIN,
)


def random_record(rng: random.Random) -> records_pb2.ItemRecord:
    record = records_pb2.ItemRecord(
        id="".join(rng.choice("abcé0_-") for _ in range(rng.randint(0, 12))),
        kind=rng.choice((0, 1, 2)),
        text=" ".join(rng.choice(("a dog", "no cat", "ünï")) for _ in range(rng.randint(0, 4))),
        version=rng.randint(0, 1 << 40),
        created_ms=rng.randint(0, 1 << 45),
        mentions=[rng.randint(0, 1 << 31) for _ in range(rng.randint(0, 5))],
    )
    for _ in range(rng.randint(0, 4)):
        record.metadata["".join(rng.choice("kéy") for _ in range(rng.randint(0, 3)))] = str(rng.random())
    for _ in range(rng.randint(0, 6)):
        scores = [rng.random() for _ in range(rng.choice((0, 0, 1, 3)))]
        record.evidence.add(
            concept_id=rng.randint(0, 5000),
            state=rng.choice(STATES),
            template_scores=scores,
            mean=float(np.float32(sum(scores) / len(scores))) if scores else 0.0,
            source=rng.choice(("client", "lexical", "")),
        )
    if rng.random() < 0.7:
        record.partition.method = rng.choice(("otsu", "calibrated", "fixed", ""))
        record.partition.tau = rng.random()
    if rng.random() < 0.3:
        record.history.add(has=[1, 2], not_has=[3])
    return record


def expected(record: records_pb2.ItemRecord) -> tuple[list[int], list[int], list[int], int]:
    has = [ev.concept_id for ev in record.evidence if ev.state == enums_pb2.CONCEPT_STATE_HAS]
    not_has = [ev.concept_id for ev in record.evidence if ev.state == enums_pb2.CONCEPT_STATE_NOT_HAS]
    return has, not_has, list(record.mentions), sum(1 for ev in record.evidence if ev.template_scores)


def test_the_reader_agrees_with_protobuf_on_random_records():
    rng = random.Random(7)
    records = [random_record(rng) for _ in range(500)]
    batch = decode_index_records([index_record(r.SerializeToString()) for r in records])
    for row, record in enumerate(records):
        assert tuple(concept_lists(record.SerializeToString())) == expected(record)
        scored = [ev for ev in record.evidence if ev.template_scores]
        lo, hi = batch.scored_indptr[row], batch.scored_indptr[row + 1]
        assert batch.scored_ids[lo:hi].tolist() == [ev.concept_id for ev in scored]
        assert batch.scored_means[lo:hi].tolist() == [ev.mean for ev in scored]
        assert batch.posterior[row] == (record.partition.method == "calibrated")
        assert batch.kinds[row] == record.kind
    assert batch.metadata == [(row, sorted(r.metadata.items())) for row, r in enumerate(records) if r.metadata]


def test_unpacked_repeated_fields_unknown_fields_and_a_repeated_map_key_read_as_protobuf_reads_them():
    # mentions 13 and template_scores 2 unpacked (what a proto2-era writer sends), unknown fields
    # (a varint, a group), metadata key "k" twice (the last value wins), two partition occurrences
    # (merged), and a state varint past 32 bits (protobuf keeps the low 32: HAS)
    evidence = b"\x08\x05" + b"\x15\x00\x00\x80\x3f" + b"\x15\x00\x00\x00\x3f" + b"\x1d\x00\x00\x40\x3f" + b"\x28\x01"
    wire = (
        b"\x0a\x01x"
        + b"\x68\x07\x68\x09"
        + b"\x32"
        + bytes([len(evidence)])
        + evidence
        + b"\x2a\x06\x0a\x01k\x12\x01a"
        + b"\x2a\x06\x0a\x01k\x12\x01b"
        + b"\x98\x06\x01"  # field 99, varint
        + b"\x93\x06\x08\x05\x94\x06"  # field 98, a group holding field 1 = 5
        + b"\x32\x08\x08\x0b\x28\x81\x80\x80\x80\x10"  # evidence 11 of state 2^32 + 1: HAS
        + b"\x3a\x0c\x42\x0acalibrated"
        + b"\x3a\x09\x09"
        + b"\x00" * 8
    )
    parsed = records_pb2.ItemRecord.FromString(wire)
    assert tuple(concept_lists(wire)) == expected(parsed) == ([5, 11], [], [7, 9], 1)
    batch = decode_index_records([index_record(wire)])
    assert batch.metadata == [(0, [("k", "b")])] and dict(parsed.metadata) == {"k": "b"}
    assert bool(batch.posterior[0]) and parsed.partition.method == "calibrated"
    assert batch.scored_means.tolist() == [0.75]


@pytest.mark.parametrize(
    "wire, reason",
    [
        (b"\x0a\x05ab", "runs past the end"),
        (b"\x0c", "end of group"),
        (b"\x0b", "group runs past the end"),
        (b"\x32\x02\x08", "runs past the end"),
        (b"\x68" + b"\xff" * 11, "varint"),
    ],
)
def test_bytes_that_are_not_an_item_record_are_refused_by_name(wire, reason):
    with pytest.raises(_core.InvalidArgumentError, match=f"not a well-formed ItemRecord.*{reason}"):
        concept_lists(wire)


def test_an_item_written_through_the_store_reads_back_whole(tmp_path):
    store = Store(tmp_path / "data")
    try:
        record = random_record(random.Random(3))
        record.id = "n1"
        record.evidence.add(concept_id=4, state=enums_pb2.CONCEPT_STATE_HAS)
        rows = np.arange(6, dtype=np.float32).reshape(2, 3)
        [written] = store.write_items("ns", [(record.SerializeToString(), {"sem": rows}, b"", (), [(4, "dog")])])
        assert written == index_record(record.SerializeToString())
        assert store.get_item("ns", "n1") == record
        assert store.get_vectors("ns", "n1", {"sem": 3})["sem"].tolist() == rows.tolist()
        assert store.items_by_concept("ns", b"H", 4) == ["n1"]
        assert [c.name for c in store.concepts("ns")] == ["dog"]
        assert store.namespace_writes("ns") == 1
        store.delete_item("ns", record.SerializeToString(), ("sem",))
        assert store.get_item("ns", "n1") is None and store.items_by_concept("ns", b"H", 4) == []
        assert store.get_vectors("ns", "n1", {"sem": 3}) == {}
    finally:
        store.close()


def test_a_garbled_write_count_refuses_that_namespace_alone(tmp_path):
    from polarmem_server import errors

    store = Store(tmp_path / "data")
    try:
        garbled = _core.KvBatch()
        garbled.put("meta", b"writes\x00bad", b"12x")
        store._db.write(garbled, False)
        record = records_pb2.ItemRecord(id="n1").SerializeToString()
        with pytest.raises(errors.FailedPrecondition, match=r"writes\\x00bad.*not an integer"):
            store.write_items("bad", [(record, {}, b"", (), [])])
        assert store.write_failure is None  # not taken for a failed disk: other namespaces write on
        store.write_items("good", [(record, {}, b"", (), [])])
        assert store.get_item("good", "n1") is not None and store.get_item("bad", "n1") is None
    finally:
        store.close()
