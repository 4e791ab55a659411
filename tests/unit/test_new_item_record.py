"""A new item's record, built by the core (cpp/include/polarmem/new_item_record.hpp), against
protobuf's own serialiser running the rule the library built it by before (round 38's
Writer.build_new: the fields, apply_evidence over an empty record, then apply_text's lexical
pathway, written out here as the reference): 600 random items — every field set or not, scores,
states, both for one concept, a client source of "lexical", negated and several-word names, open
and closed vocabularies — give the same bytes as ``SerializeToString(deterministic=True)``."""

from __future__ import annotations

import random

import numpy as np

from polarmem.common.v1 import enums_pb2
from polarmem.storage.v1 import records_pb2
from polarmem_server.domain import text as textproc
from polarmem_server.domain.items import CheckedItem, Evidence
from polarmem_server.domain.vocabulary import Vocabulary

NAMES = ("dog", "cat", "green tea", "tea", "frisbee", "coffee", "user")
WORDS = ("a dog", "no cat", "green tea", "without coffee", "the user", "not a frisbee", "ünï", "and", "tea")
STATES = (enums_pb2.CONCEPT_STATE_HAS, enums_pb2.CONCEPT_STATE_NOT_HAS, enums_pb2.CONCEPT_STATE_UNCERTAIN)


def reference(item: CheckedItem, item_id, ids, template_version, created, vocabulary, lexical, word_mentions):
    """Round 38's build: protobuf fields, the evidence merge over an empty record, the lexical pathway."""
    record = records_pb2.ItemRecord(
        id=item_id,
        kind=item.kind,
        text=item.text,
        uri=item.uri,
        metadata=dict(item.metadata),
        model=item.evidence.model,
        template_version=template_version,
        created_ms=created,
        updated_ms=created,
        version=1,
    )
    by_concept = {}
    for name, values in item.evidence.scores.items():
        ev = by_concept.setdefault(ids[name], record.evidence.add(concept_id=ids[name]))
        ev.template_scores.extend(values.tolist())
        ev.observations = 1
        ev.source = item.evidence.source
    for name, state in item.evidence.states.items():
        ev = by_concept.get(ids[name])
        if ev is None:
            by_concept[ids[name]] = record.evidence.add(
                concept_id=ids[name], state=state, observations=1, source=item.evidence.source
            )
            continue
        del ev.template_scores[:]
        ev.state, ev.observations, ev.source = state, ev.observations + 1, item.evidence.source
    if vocabulary is not None:
        mentions, polarity = textproc.lexical_states(item.text, vocabulary, word_mentions, decided=[])
        record.mentions[:] = mentions
        for concept_id, negated in polarity if lexical else ():
            ev = by_concept.get(concept_id)
            if ev is not None and ev.source != "lexical":
                continue
            if ev is None:
                ev = by_concept[concept_id] = record.evidence.add(concept_id=concept_id)
            ev.state = enums_pb2.CONCEPT_STATE_NOT_HAS if negated else enums_pb2.CONCEPT_STATE_HAS
            ev.observations, ev.source = 1, "lexical"
    return record


def random_item(rng: random.Random) -> CheckedItem:
    named = rng.sample(NAMES, rng.randint(0, 4))
    scored = named[: rng.randint(0, len(named))]
    stated = rng.sample(named, rng.randint(0, len(named)))  # may overlap the scored
    return CheckedItem(
        id=None,
        kind=rng.choice((enums_pb2.ITEM_KIND_VISUAL, enums_pb2.ITEM_KIND_TEXT)),
        text=" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 6))),
        uri=rng.choice(("", "s3://b/k.jpg")),
        metadata={
            "".join(rng.choice("kéy") for _ in range(rng.randint(1, 3))): rng.choice(("", "v", "ü"))
            for _ in range(rng.randint(0, 3))
        },
        vectors={},
        evidence=Evidence(
            {name: np.array([rng.random() for _ in range(rng.choice((1, 3)))]) for name in scored},
            {name: rng.choice(STATES) for name in stated},
            rng.choice(("client", "lexical", "engine")),
            rng.choice(("", "m")),
        ),
    )


def test_the_cores_new_record_is_protobufs_of_the_previous_rule():
    rng = random.Random(39)
    vocabulary = Vocabulary()
    ids = {name: vocabulary.bind(name) for name in NAMES}
    for _ in range(600):
        item = random_item(rng)
        reads = item.kind == enums_pb2.ITEM_KIND_TEXT and bool(item.text) and rng.random() < 0.9
        lexical, word_mentions = rng.random() < 0.7, rng.random() < 0.5
        created = rng.randint(0, 1 << 45)
        args = ("id-" + str(rng.randint(0, 99)), ids, rng.choice(("", "3")), created)
        built = textproc.new_item_record(
            item, *args, vocabulary if reads else None, lexical=lexical, word_mentions=word_mentions
        )
        want = reference(item, *args, vocabulary if reads else None, lexical, word_mentions)
        assert records_pb2.ItemRecord.FromString(built) == want, (item, reads, lexical, word_mentions)
        if len(item.metadata) <= 1:  # (upb orders a map's keys its own way; the core by their bytes)
            assert built == want.SerializeToString(deterministic=True)


def test_a_new_record_reads_its_text_only_when_asked():
    vocabulary = Vocabulary()
    vocabulary.bind("dog")
    item = CheckedItem(None, enums_pb2.ITEM_KIND_TEXT, "no dog", "", {}, {}, Evidence())
    unread = records_pb2.ItemRecord.FromString(textproc.new_item_record(item, "a", {}, "", 1, None, True, False))
    assert not unread.mentions and not unread.evidence
    mentions_only = records_pb2.ItemRecord.FromString(
        textproc.new_item_record(item, "a", {}, "", 1, vocabulary, False, False)
    )
    assert list(mentions_only.mentions) == [0] and not mentions_only.evidence
    read = records_pb2.ItemRecord.FromString(textproc.new_item_record(item, "a", {}, "", 1, vocabulary, True, False))
    assert [(ev.concept_id, ev.state, ev.source) for ev in read.evidence] == [
        (0, enums_pb2.CONCEPT_STATE_NOT_HAS, "lexical")
    ]
    assert (read.version, read.created_ms, read.updated_ms) == (1, 1, 1) and not read.HasField("partition")
