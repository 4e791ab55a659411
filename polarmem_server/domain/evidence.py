"""Evidence on an item record: merging new evidence, the lexical pathway for text, the partition
of scored concepts, and state snapshots (the history).

Observation merge rule: for each concept, the new template scores are averaged with the
earlier ones position by position, weighted by how many observations each side holds (a
running mean); when the number of templates differs, the new scores replace the old (they
were produced by another template set and are not comparable). Asserted states replace the
concept's state outright. The item is then re-partitioned over all its scored concepts; when
any state changes, the previous state is appended to the item's history.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

import numpy as np

from polarmem.common.v1 import enums_pb2
from polarmem.storage.v1 import records_pb2
from polarmem_server.domain import text as textproc
from polarmem_server.domain.items import Evidence
from polarmem_server.domain.mixtures import BetaMixture
from polarmem_server.domain.partition import partition_fields
from polarmem_server.domain.partitioners import partition_scores
from polarmem_server.domain.settings import NamespaceSettings
from polarmem_server.domain.vocabulary import Vocabulary

HAS, NOT_HAS, UNCERTAIN = (
    enums_pb2.CONCEPT_STATE_HAS,
    enums_pb2.CONCEPT_STATE_NOT_HAS,
    enums_pb2.CONCEPT_STATE_UNCERTAIN,
)


def states_of(record: records_pb2.ItemRecord) -> tuple[list[int], list[int]]:
    has, not_has = [], []
    for ev in record.evidence:
        if ev.state == HAS:
            has.append(ev.concept_id)
        elif ev.state == NOT_HAS:
            not_has.append(ev.concept_id)
    return has, not_has


def apply_evidence(record: records_pb2.ItemRecord, evidence: Evidence, concept_ids: Mapping[str, int]) -> None:
    """Scores and states into a stored record's evidence (module doc: merge rule); `concept_ids`
    maps every concept name of `evidence` to its id. (A new item's record is built by the core,
    by the same rule: textproc.new_item_record.)"""
    by_concept = {ev.concept_id: ev for ev in record.evidence}
    for name, values in evidence.scores.items():
        cid = concept_ids[name]
        ev = by_concept.get(cid)
        if ev is None:
            ev = by_concept[cid] = record.evidence.add(concept_id=cid)
        if ev.observations and len(ev.template_scores) == values.size:
            n = ev.observations
            merged = (np.asarray(ev.template_scores) * n + values) / (n + 1)
            del ev.template_scores[:]
            ev.template_scores.extend(merged.tolist())
            ev.observations = n + 1
        else:
            del ev.template_scores[:]
            ev.template_scores.extend(values.tolist())
            ev.observations = 1
        ev.source = evidence.source
    for name, state in evidence.states.items():
        cid = concept_ids[name]
        ev = by_concept.get(cid)
        if ev is None:  # the common case: one protobuf call per concept
            by_concept[cid] = record.evidence.add(concept_id=cid, state=state, observations=1, source=evidence.source)
            continue
        del ev.template_scores[:]
        ev.state = state
        ev.observations += 1
        ev.source = evidence.source


def apply_text(
    record: records_pb2.ItemRecord,
    vocabulary: Vocabulary,
    lexical: bool,
    open_terms: bool = False,
    only: Collection[int] | None = None,
) -> None:
    """A stored text item's mentions (ALIGN edges) and, with `lexical`, the lexical pathway: one
    state per mentioned concept that no other evidence (an engine's or the client's) decides, by
    text.ParsedText.polarity's policy (HAS if any mention is affirmed and no later mention
    resolves it; NOT_HAS if every mention is negated); the rule is the core's
    (textproc.lexical_states), which builds a new item's record by it too. A concept the text
    never mentions gets no state. `open_terms`: the words of a name of several words count as
    mentions of their own (text.lexical_states). `only`: the lexical pathway sets these concepts'
    states alone (a concept declared after the item was stored, concept_backfill.py)."""
    decided = [ev.concept_id for ev in record.evidence if ev.source != "lexical"]
    mentions, states = textproc.lexical_states(
        record.text, vocabulary, open_terms, decided, None if only is None else list(only)
    )
    record.mentions[:] = mentions
    if not lexical:
        return
    by_concept = {ev.concept_id: ev for ev in record.evidence}
    for concept_id, negated in states:
        ev = by_concept.get(concept_id)
        if ev is None:
            ev = by_concept[concept_id] = record.evidence.add(concept_id=concept_id)
        ev.state = NOT_HAS if negated else HAS
        ev.observations = 1
        ev.source = "lexical"


def partition_record(
    record: records_pb2.ItemRecord,
    settings: NamespaceSettings,
    calibration: BetaMixture | None,
    name_of: Callable[[int], str],
) -> None:
    """States of the scored concepts from their template scores, and the item's partition."""
    scored = [ev for ev in record.evidence if len(ev.template_scores)]
    if not scored:
        record.ClearField("partition")
        return
    width = max(len(ev.template_scores) for ev in scored)
    # Concepts scored under fewer templates are padded with their own mean (no added spread).
    matrix = np.array(
        [
            list(ev.template_scores) + [float(np.mean(ev.template_scores))] * (width - len(ev.template_scores))
            for ev in scored
        ]
    )
    result = partition_scores(
        matrix, settings.partition_settings(), [name_of(ev.concept_id) for ev in scored], calibration
    )
    for ev, state, mean, std in zip(scored, result.states, result.means, result.template_stds):
        ev.state, ev.mean, ev.template_std = int(state), mean, std
    record.partition.CopyFrom(records_pb2.PartitionRecord(**partition_fields(result)))


def hold_polarity(record: records_pb2.ItemRecord, previous: records_pb2.ItemRecord, observed: Collection[int]) -> None:
    """After an observation's re-partition: a concept the observation brought no evidence for
    keeps its previous polarity where the new split would flip it (HAS <-> NOT_HAS). Observing
    one concept moves the item's threshold, and a threshold is no evidence about another concept;
    such a concept may still move between its polarity and UNCERTAIN. An operator's re-partition
    (UpdateNamespace: a new kappa, partitioner or score model) is not an observation and may flip."""
    before = {ev.concept_id: ev.state for ev in previous.evidence}
    for ev in record.evidence:
        if ev.concept_id not in observed and {ev.state, before.get(ev.concept_id)} == {HAS, NOT_HAS}:
            ev.state = before[ev.concept_id]


def snapshot(record: records_pb2.ItemRecord) -> records_pb2.StateSnapshot:
    has, not_has = states_of(record)
    uncertain = [ev.concept_id for ev in record.evidence if ev.state == UNCERTAIN]
    snap = records_pb2.StateSnapshot(
        version=record.version,
        time_ms=record.updated_ms or record.created_ms,
        has=has,
        not_has=not_has,
        uncertain=uncertain,
    )
    snap.partition.CopyFrom(record.partition)
    return snap


def last_write_changed_states(record: records_pb2.ItemRecord) -> bool:
    """Whether the write that produced `record` changed its HAS / NOT_HAS states: such a write
    appends the previous state, stamped with the previous version, to the history."""
    return bool(record.history) and record.history[-1].version == record.version - 1
