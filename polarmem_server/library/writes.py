"""The library's write path over the storage seam.

A new item: checked input -> concept ids (bound by the backend) -> its record, built by the core
(fields, evidence and the text's reading: textproc.new_item_record) -> partition (an item with
scores) -> `sem` vector (the namespace encoder over the serialised state, or a text item's own text,
unless the client sent one) -> ``Backend.write_items``.

Every change to a stored item goes through ONE primitive, :meth:`Writer.rewrite`: copy the
record -> apply the change -> re-partition -> snapshot the previous state into the history when
a HAS / NOT_HAS state changed -> next version -> re-encode `sem` when the state it serialises
changed -> persist and index. Observe, re-partitioning under new settings and score-model
refits all use it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace

import numpy as np

from polarmem.common.v1 import enums_pb2
from polarmem.storage.v1 import records_pb2
from polarmem_server.domain.evidence import (
    apply_text,
    hold_polarity,
    partition_record,
    snapshot,
    states_of,
)
from polarmem_server.domain import text as textproc
from polarmem_server.domain.items import CheckedItem, Evidence
from polarmem_server.domain.mixtures import MIN_CALIBRATION_SCORES, fit_beta_mixture, fit_concept_priors
from polarmem_server.domain.namespace import Namespace
from polarmem_server.domain.vocabulary import normalise
from polarmem_server.errors import AlreadyExists, NotFound, quoted
from polarmem_server.scoring.encoder import Encoder, load_encoder, require_encoder, serialise_state
from polarmem_server.storage.backend import Backend, ItemWrite

Change = Callable[[records_pb2.ItemRecord], None]


def now_ms() -> int:
    return int(time.time() * 1000)


def highest_concept_id(record: records_pb2.ItemRecord) -> int:
    """The largest concept id a record refers to (-1 if none)."""
    ids = [ev.concept_id for ev in record.evidence]
    ids += list(record.mentions)
    for past in record.history:
        ids += [*past.has, *past.not_has, *past.uncertain]
    return max(ids, default=-1)


class Writer:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    # ---- encoders and concepts ---------------------------------------------------------------

    @staticmethod
    def encoder(namespace: Namespace) -> Encoder | None:
        return load_encoder(namespace.settings.encoder)

    def encodes_sem(self, namespace: Namespace) -> bool:
        return namespace.settings.encoder != "none" and "sem" in namespace.spaces

    def concept_ids(self, namespace: Namespace, names: Sequence[str]) -> dict[str, int]:
        """Id of every name, binding new ones through the backend (so every process agrees)."""
        ids: dict[str, int] = {}
        new: dict[str, str] = {}  # normalised -> as given
        for name in names:
            known = namespace.vocabulary.lookup(name)
            if known is None:
                new.setdefault(normalise(name), name)
            else:
                ids[name] = known
        if new:
            first = len(namespace.vocabulary)  # (before: the backend may bind into this very table)
            bound = self.backend.allocate_concepts(namespace.name, list(new.values()))
            if list(bound) != list(range(first, first + len(bound))):  # another process bound concepts since
                self.catch_up(namespace)
            namespace.bind_concepts(list(new.values()), bound)
            for name in names:
                if name not in ids:
                    bound_id = namespace.vocabulary.lookup(name)
                    assert bound_id is not None  # bound just above
                    ids[name] = bound_id
        return ids

    def catch_up(self, namespace: Namespace) -> bool:
        """Binds, in id order, the concepts that other processes sharing the backend bound since
        this process read the namespace's vocabulary; True if there were any. (A backend only this
        process uses never has any: its vocabulary is bound here.)"""
        added = self.backend.concepts_from(namespace.name, len(namespace.vocabulary))
        for concept_id, name in added:
            namespace.bind_concepts([name], [concept_id])
        return bool(added)

    def know_concepts_of(self, namespace: Namespace, records: Sequence[records_pb2.ItemRecord | None]) -> None:
        """Catches up when a record read back names a concept id this process has not bound yet
        (another process wrote it), so that every id can be named."""
        known = len(namespace.vocabulary)
        if any(record is not None and highest_concept_id(record) >= known for record in records):
            self.catch_up(namespace)

    def evidence_ids(self, namespace: Namespace, evidence: Evidence) -> dict[str, int]:
        return self.concept_ids(namespace, list(dict.fromkeys([*evidence.scores, *evidence.states])))

    # ---- new items ---------------------------------------------------------------------------

    def build_new(
        self, namespace: Namespace, item: CheckedItem, batch_ids: set[str], stored: set[str] | None = None
    ) -> records_pb2.ItemRecord:
        """A new item's record. ``stored``: the batch's ids already stored (Backend.stored_ids,
        one look-up per batch); None looks this id up alone."""
        item_id = item.id or uuid.uuid4().hex
        taken = item_id in stored if stored is not None else self.backend.contains(namespace.name, item_id)
        if item_id in batch_ids or taken:
            raise AlreadyExists(
                f"item {quoted(item_id)} already exists in namespace {quoted(namespace.name)}; "
                "use observe to add evidence"
            )
        ids = self.evidence_ids(namespace, item.evidence)
        reads_text = item.kind == enums_pb2.ITEM_KIND_TEXT and bool(item.text)
        open_vocabulary = namespace.settings.open_vocabulary
        if reads_text and open_vocabulary:  # every content word a concept, bound before the text is read
            self.concept_ids(namespace, textproc.content_terms(item.text))
        record = records_pb2.ItemRecord.FromString(
            textproc.new_item_record(
                item,
                item_id,
                ids,
                str(len(namespace.settings.templates)),
                now_ms(),
                namespace.vocabulary if reads_text else None,
                lexical=open_vocabulary or (not item.evidence.scores and not item.evidence.states),
                word_mentions=open_vocabulary,
            )
        )
        if item.evidence.scores:
            partition_record(record, namespace.partition_settings, namespace.calibration, namespace.vocabulary.name)
        return record

    def apply_own_words(self, namespace: Namespace, record: records_pb2.ItemRecord, lexical: bool) -> None:
        """A text item's mentions and lexical states (evidence.apply_text). In an open vocabulary
        every content word of the text is bound as a concept first, and the lexical pathway fills
        every concept no other evidence decides."""
        open_vocabulary = namespace.settings.open_vocabulary
        if open_vocabulary:
            self.concept_ids(namespace, textproc.content_terms(record.text))
        apply_text(record, namespace.vocabulary, lexical=lexical or open_vocabulary, open_terms=open_vocabulary)

    def sem_text(self, namespace: Namespace, record: records_pb2.ItemRecord) -> str:
        """Text items carry `sem` from their own text; other items from their serialised state."""
        if record.kind == enums_pb2.ITEM_KIND_TEXT and record.text:
            return record.text
        has, not_has = states_of(record)
        name = namespace.vocabulary.name
        return serialise_state([name(c) for c in has], [name(c) for c in not_has])

    def fill_sem(self, namespace: Namespace, pairs: Sequence[tuple[records_pb2.ItemRecord, dict]]) -> None:
        """Encodes `sem` in one batch for every (record, vectors) that lacks it."""
        if not self.encodes_sem(namespace):
            return
        missing = [(record, vectors) for record, vectors in pairs if "sem" not in vectors]
        if missing:
            encoded = require_encoder(namespace.settings.encoder).encode(
                [self.sem_text(namespace, r) for r, _ in missing]
            )
            for (_, vectors), vector in zip(missing, encoded):
                vectors["sem"] = vector

    # ---- the rewrite primitive ---------------------------------------------------------------

    def rewrite(
        self,
        namespace: Namespace,
        previous: records_pb2.ItemRecord,
        change: Change | None = None,
        vectors: Mapping[str, np.ndarray] | None = None,
        always: bool = True,
        observed: Collection[int] | None = None,
    ) -> records_pb2.ItemRecord | None:
        """Writes the next version of a stored item (module doc). `change` edits the copied
        record before it is re-partitioned; `vectors` replace stored ones space by space.
        `observed`: the concepts an observation brought evidence for; every other concept keeps
        its polarity (evidence.hold_polarity).
        With ``always=False`` an item whose partition and states come out unchanged is not
        written (returns None). Call under the namespace's write lock."""
        write = self.next_version(namespace, previous, change, vectors, always, observed)
        if write is None:
            return None
        self.backend.write_items(namespace.name, [write])
        return write.record

    def rewrite_many(self, namespace: Namespace, previous: Sequence[records_pb2.ItemRecord], change: Change) -> int:
        """`rewrite` (always=False) of many items in one backend write (one synced commit);
        returns how many changed. Call under the namespace's write lock."""
        writes = [
            write
            for write in (self.next_version(namespace, record, change, always=False) for record in previous)
            if write is not None
        ]
        self.backend.write_items(namespace.name, writes)
        return len(writes)

    def next_version(
        self,
        namespace: Namespace,
        previous: records_pb2.ItemRecord,
        change: Change | None = None,
        vectors: Mapping[str, np.ndarray] | None = None,
        always: bool = True,
        observed: Collection[int] | None = None,
    ) -> ItemWrite | None:
        """The write `rewrite` makes (its doc), not yet written."""
        record = records_pb2.ItemRecord()
        record.CopyFrom(previous)
        if change is not None:
            change(record)
        partition_record(record, namespace.partition_settings, namespace.calibration, namespace.vocabulary.name)
        if observed is not None:
            hold_polarity(record, previous, observed)
        changed = states_of(record) != states_of(previous)
        if not always and not changed and record.partition == previous.partition:
            return None
        if changed:
            record.history.append(snapshot(previous))
        record.version = previous.version + 1
        record.updated_ms = now_ms()
        stored = self.backend.get_vectors(namespace.name, record.id)
        kept = {
            space: rows if namespace.spaces[space].multi else rows[0]
            for space, rows in stored.items()
            if space in namespace.spaces
        }
        if changed and record.kind == enums_pb2.ITEM_KIND_VISUAL and self.encodes_sem(namespace):
            kept.pop("sem", None)  # it serialised the old state
        kept.update(vectors or {})
        self.fill_sem(namespace, [(record, kept)])
        return ItemWrite(record, kept, previous)

    def rewrite_all(self, namespace: Namespace) -> tuple[int, int]:
        """Re-partitions every stored item from its kept scores (no re-scoring) under the
        namespace's current settings; returns (items re-partitioned, items whose states changed)."""
        repartitioned = changed = 0
        for previous in list(self.backend.iter_items(namespace.name)):
            if not any(len(ev.template_scores) for ev in previous.evidence):
                continue
            repartitioned += 1
            record = self.rewrite(namespace, previous, always=False)
            if record is not None and states_of(record) != states_of(previous):
                changed += 1
        return repartitioned, changed

    def get(self, namespace: Namespace, item_id: str) -> records_pb2.ItemRecord:
        record = self.backend.get_items(namespace.name, [item_id])[0]
        if record is None:
            raise NotFound(f"item {quoted(item_id)} does not exist in namespace {quoted(namespace.name)}")
        self.know_concepts_of(namespace, [record])
        return record

    # ---- the score model ---------------------------------------------------------------------

    def fit_calibration(self, namespace: Namespace) -> bool:
        """Fits the score model from every stored concept mean: the two class components (unless
        a labelled calibration set fixed them) and each concept's prevalence. False if too few
        scores."""
        limit = namespace.settings.template_std_max
        pairs = [
            (ev.concept_id, ev.mean)
            for r in self.backend.iter_items(namespace.name)
            for ev in r.evidence
            if len(ev.template_scores) and ev.template_std <= limit
        ]
        if len(pairs) < MIN_CALIBRATION_SCORES:
            return False
        means = np.array([m for _, m in pairs])
        current = namespace.calibration
        model = current if current is not None and current.supervised else fit_beta_mixture(means)
        model = fit_concept_priors(model, [namespace.vocabulary.name(c) for c, _ in pairs], means)
        namespace.set_calibration(replace(model, priors_fitted_on=len(pairs)))
        return True

    def maybe_recalibrate(self, namespace: Namespace) -> None:
        """A "calibrated" namespace refits its model each time its pooled scores double (only the
        concept prevalences when a labelled calibration set fixed the components)."""
        if namespace.partitioner != "calibrated":
            return
        # Doubling since the last fit — or since the last try: a fit that found too few reliable
        # scores (template disagreement excludes them) must not rescan the store on every write.
        model = namespace.calibration
        basis = max(model.priors_fitted_on if model else 0, namespace.calibration_tried_at, MIN_CALIBRATION_SCORES // 2)
        scored = self.backend.counts(namespace.name).scored_concepts
        if scored < 2 * basis:
            return
        namespace.set_calibration(namespace.calibration, tried_at=scored)
        if self.fit_calibration(namespace):
            self.backend.update_namespace(namespace.to_record())
            self.rewrite_all(namespace)
