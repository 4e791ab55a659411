"""Idempotent writes: a Remember of an id that is already stored *with the same content* answers
OK with the stored item instead of ALREADY_EXISTS.

Why: a write can be committed while its answer is lost (the client's deadline passes while the
answer travels, a connection drops, a stream is cancelled after some of its groups committed).
The client cannot tell, so it retries; the retry must not fail for an item that is exactly what it
asked for. An id stored with different content still answers ALREADY_EXISTS.

"Same content" is what the client sent and the server keeps: kind, text, URI, metadata, the
vectors it sent (float32-exact), the scores it sent (float32-exact, as stored) and the states it
asserted (evidence for exactly those concepts), and evidence for every concept it asked the
engine to verify. Image bytes
(``content``) are not stored, so they cannot be compared; an item changed since (Observe) no
longer matches.
"""

from __future__ import annotations

import numpy as np

from polarmem.common.v1 import enums_pb2
from polarmem.storage.v1 import records_pb2
from polarmem_server.domain.items import DEFAULT_SOURCE, KINDS, STATES
from polarmem_server.library import ItemInput, Memory


def _same_floats(given, stored) -> bool:
    a = np.asarray(given, dtype=np.float32).ravel()
    b = np.asarray(stored, dtype=np.float32).ravel()
    return a.shape == b.shape and bool(np.array_equal(a, b))


def same_content(memory: Memory, ns: str, item: ItemInput, record: records_pb2.ItemRecord) -> bool:
    """Whether `record` (stored under item.id) holds what `item` asks to store."""
    if record.kind != KINDS.get(item.kind, enums_pb2.ITEM_KIND_VISUAL) and not (
        item.kind == "visual" and record.kind == enums_pb2.ITEM_KIND_UNSPECIFIED
    ):
        return False
    if record.text != item.text or record.uri != item.uri or dict(record.metadata) != dict(item.metadata):
        return False
    if item.vectors:
        stored = memory.get_vectors(ns, record.id)
        for space, given in item.vectors.items():
            if space not in stored or not _same_floats(given, stored[space]):
                return False
    vocabulary = memory.namespace(ns).vocabulary
    evidence = {ev.concept_id: ev for ev in record.evidence}

    def evidence_of(concept: str):
        concept_id = vocabulary.lookup(concept)
        return None if concept_id is None else evidence.get(concept_id)

    # The concepts the client gave evidence for are exactly those the stored item has client
    # evidence for (a retry without the states of the original is not the same item).
    asked = {vocabulary.lookup(c) for c in (*item.scores, *item.states)}
    given = {ev.concept_id for ev in record.evidence if ev.source == (item.source or DEFAULT_SOURCE)}
    if asked != given:
        return False
    for concept, scores in item.scores.items():
        ev = evidence_of(concept)
        if ev is None or ev.observations > 1 or not _same_floats(scores, ev.template_scores):
            return False
    for concept, state in item.states.items():
        ev = evidence_of(concept)
        if ev is None or ev.state != STATES.get(state):
            return False
    return all(evidence_of(concept) is not None for concept in item.verify_concepts)


def stored_if_same(
    memory: Memory, ns: str, item: ItemInput, generated_id: bool = False
) -> records_pb2.ItemRecord | None:
    """The stored record when `item.id` is stored with the same content, else None. A
    `generated_id` (domain/items.content_id, the client sent none) names the content itself: the
    stored item is the same content whatever metadata or evidence either carries (de-duplication)."""
    if not item.id:
        return None
    try:
        record = memory.get_item(ns, item.id)
    except LookupError:
        return None
    return record if generated_id or same_content(memory, ns, item, record) else None
