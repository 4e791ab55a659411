"""An item as answers show it (cpp/include/polarmem/item_view.hpp) against the view the servicer
built with protobuf before it moved into the core (round 38's api/service.item_view, verbatim
below): 800 random stored records — every field set or not, states of every value, scores,
partitions with parameters, histories — give the same polarmem.v1.Item, with and without the
history; a concept the vocabulary does not name, and bytes that are no record, are refused."""

from __future__ import annotations

import random

import pytest

from polarmem.common.v1 import enums_pb2
from polarmem.storage.v1 import records_pb2
from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server import _core
from polarmem_server.domain.partition import PARTITION_FIELDS
from polarmem_server.domain.vocabulary import Vocabulary
from polarmem_server.errors import InvalidArgument

NAMES = ("dog", "cat", "green tea", "tea", "frisbee", "ünï")


def previous_item_view(vocabulary: Vocabulary, record: records_pb2.ItemRecord, history: bool) -> pb.Item:
    name = vocabulary.name
    item = pb.Item(
        id=record.id,
        kind=record.kind,
        text=record.text,
        uri=record.uri,
        metadata=dict(record.metadata),
        model=record.model,
        created_ms=record.created_ms,
        updated_ms=record.updated_ms,
        version=record.version,
        mentions=[name(c) for c in record.mentions],
    )
    for ev in record.evidence:
        item.evidence.add(
            concept=name(ev.concept_id),
            p_yes=list(ev.template_scores),
            mean=ev.mean,
            template_std=ev.template_std,
            state=ev.state,
            observations=ev.observations,
            source=ev.source,
        )
        {enums_pb2.CONCEPT_STATE_HAS: item.has, enums_pb2.CONCEPT_STATE_NOT_HAS: item.not_has}.get(
            ev.state, item.uncertain
        ).append(name(ev.concept_id))
    if record.HasField("partition"):
        item.partition.CopyFrom(pb.PartitionView(**{f: getattr(record.partition, f) for f in PARTITION_FIELDS}))
    if history:
        for snap in record.history:
            item.history.add(
                version=snap.version,
                time_ms=snap.time_ms,
                has=[name(c) for c in snap.has],
                not_has=[name(c) for c in snap.not_has],
                uncertain=[name(c) for c in snap.uncertain],
            )
    return item


def random_partition(rng: random.Random) -> records_pb2.PartitionRecord:
    return records_pb2.PartitionRecord(
        tau=rng.random(),
        delta=rng.choice((0.0, rng.random())),
        kappa=rng.choice((0.0, 2.0)),
        degenerate=rng.random() < 0.3,
        weak=rng.random() < 0.3,
        method=rng.choice(("otsu", "calibrated", "")),
        parameters={k: rng.random() for k in rng.sample(("prior", "a1", "b1"), rng.randint(0, 3))},
        note=rng.choice(("", "few scores")),
    )


def random_record(rng: random.Random, concepts: int) -> records_pb2.ItemRecord:
    pick = lambda: rng.randrange(concepts)  # noqa: E731
    record = records_pb2.ItemRecord(
        id="".join(rng.choice("abé0_") for _ in range(rng.randint(0, 8))),
        kind=rng.choice((0, 1, 2)),
        text=rng.choice(("", "a dog but no cat", "ünï")),
        uri=rng.choice(("", "s3://b/k.jpg")),
        model=rng.choice(("", "m")),
        template_version=rng.choice(("", "3")),
        created_ms=rng.randint(0, 1 << 45),
        updated_ms=rng.randint(0, 1 << 45),
        version=rng.randint(0, 9),
        mentions=sorted({pick() for _ in range(rng.randint(0, 4))}),
    )
    for key in rng.sample(("source", "kéy", "k"), rng.randint(0, 3)):
        record.metadata[key] = rng.choice(("", "v", "ü"))
    for concept_id in rng.sample(range(concepts), rng.randint(0, concepts)):
        scores = [rng.random() for _ in range(rng.choice((0, 0, 1, 3)))]
        record.evidence.add(
            concept_id=concept_id,
            state=rng.choice((0, 1, 2, 3)),
            template_scores=scores,
            mean=rng.choice((0.0, -0.0, rng.random())),
            template_std=rng.choice((0.0, rng.random())),
            observations=rng.randint(0, 3),
            source=rng.choice(("client", "lexical", "")),
        )
    if rng.random() < 0.6:
        record.partition.CopyFrom(random_partition(rng))
    for version in range(rng.randint(0, 3)):
        snap = record.history.add(
            version=version, time_ms=rng.randint(0, 1 << 45), has=[pick()], not_has=[pick(), pick()]
        )
        if rng.random() < 0.5:
            snap.uncertain.append(pick())
            snap.partition.CopyFrom(random_partition(rng))
    return record


def test_the_cores_item_is_the_one_the_servicer_built():
    rng = random.Random(39)
    vocabulary = Vocabulary()
    for name in NAMES:
        vocabulary.bind(name)
    for _ in range(800):
        record = random_record(rng, len(NAMES))
        for history in (False, True):
            shown = pb.Item.FromString(_core.item_view(record.SerializeToString(), vocabulary, history))
            assert shown == previous_item_view(vocabulary, record, history), (record, history)


def test_a_concept_the_vocabulary_lacks_and_bytes_that_are_no_record_are_refused():
    vocabulary = Vocabulary()
    vocabulary.bind("dog")
    record = records_pb2.ItemRecord(id="a", mentions=[1]).SerializeToString()
    with pytest.raises(IndexError, match="no concept 1"):
        _core.item_view(record, vocabulary, False)
    with pytest.raises(InvalidArgument, match="not a well-formed ItemRecord"):
        _core.item_view(b"\x0a\x05ab", vocabulary, False)
