"""The library facade: namespaces of polarised memory over one storage backend (storage/backend.py),
with optional server-side verification through a verifier port. The gRPC servicer only converts
messages to these calls; everything is usable without gRPC.

Inputs are checked once, here at the edge (domain/items.py, domain/query.py, domain/settings.py),
into typed values; writes of one namespace are serialised by its lock; every change to a stored
item goes through the one rewrite primitive (writes.py)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from polarmem.storage.v1 import records_pb2
from polarmem_server.domain.evidence import apply_evidence, last_write_changed_states  # noqa: F401 - re-exported
from polarmem_server.domain.items import (
    ItemInput,
    check_evidence,
    check_item,
    check_item_id,
    check_vectors,
    with_verified,
)
from polarmem_server.domain.mixtures import BetaMixture
from polarmem_server.domain.namespace import Namespace
from polarmem_server.domain.settings import DEFAULT_TEMPLATES, NamespaceSettings  # noqa: F401 - re-exported
from polarmem_server.errors import AlreadyExists, InvalidArgument, LearnedByPrimary, NotFound, quoted
from polarmem_server.library import (
    concept_backfill,
    encoder_warmup,
    namespace_updates,
    verify_items,
    vocabulary_reads,
)
from polarmem_server.library import recall as core_answers
from polarmem_server.library.core_recall import CoreRecall
from polarmem_server.library.daemons import Daemons
from polarmem_server.scoring.verification import Verifier
from polarmem_server.storage.backend import POLARITIES, Backend, ItemWrite, NamespaceCounts
from polarmem_server.storage.opening import open_local
from polarmem_server.library.writes import Writer, now_ms

log = logging.getLogger(__name__)
NotFoundError = NotFound  # the names earlier releases raised
AlreadyExistsError = AlreadyExists
DEFAULT_REFRESH_S = 2.0  # settings refresh with a shared backend: a change elsewhere is seen within ~this
Submitted = verify_items.Submitted


class Memory:
    """Many namespaces over one backend: a data directory (the local backend) or a Backend."""

    def __init__(
        self,
        store: str | Path | Backend,
        durability: str = "sync",
        threads: int = 0,
        verifier: Verifier | None = None,
        settings_refresh_s: float = DEFAULT_REFRESH_S,
        graph_checkpoint_s: float = 0.0,
    ) -> None:
        """`settings_refresh_s`: with a backend other processes share (Milvus), how often
        namespace settings changed by them are read back (daemons.py).
        `graph_checkpoint_s` > 0: with the local backend, how often the approximate-index graphs
        of namespaces written to since are saved while running (daemons.py); 0 saves
        them on close only."""
        if isinstance(store, Backend):
            self.backend = store
        else:
            if durability not in ("sync", "async"):
                raise InvalidArgument(f"durability must be 'sync' or 'async', got {quoted(durability)}")
            self.backend = open_local(store, durability, threads)
        self.verifier = verifier
        self.writer = Writer(self.backend)
        self._lock = threading.RLock()
        self._namespaces: dict[str, Namespace] = {}
        # Called with a namespace's name as each write to it that changed what the compiled
        # front's view of it was made from ends (domain/namespace.py ChangeLock).
        self.change_listeners: list[Callable[[str], None]] = []
        # the one Recall entry, the core's (core_recall.py); a server hands it its own (attach)
        self.core = CoreRecall()
        self.core.attach(self)
        records = self.backend.namespaces()
        # The concepts of namespaces whose table is not the backend's own object, read at once
        # (thousands of namespaces in a shared backend); the local backend's need no reading.
        unshared = [record.name for record in records if self.backend.vocabulary(record.name) is None]
        bound = self.backend.concepts_of(unshared) if unshared else {}
        for record in records:
            self._namespaces[record.name] = self._open_namespace(record, bound.get(record.name))
        self.daemons = Daemons()  # daemons.py: the settings refresh and the graph checkpoints
        if self.backend.shared:
            # DEBUG: a shared backend that is down says so through health and every call already
            self.daemons.start(
                "polarmem-settings-refresh", settings_refresh_s, self._refresh_settings, failure_level=logging.DEBUG
            )
        if graph_checkpoint_s > 0 and getattr(self.backend, "saves_graphs", False):
            # stop_timeout_s None: a save in progress finishes before the store closes
            self.daemons.start(
                "polarmem-graph-checkpoints", graph_checkpoint_s, self._checkpoint_pass, stop_timeout_s=None
            )

    def _open_namespace(
        self, record: records_pb2.NamespaceRecord, concepts: list[tuple[int, str]] | None = None
    ) -> Namespace:
        shared = self.backend.vocabulary(record.name)  # the backend's own table, where it is in process
        namespace = Namespace.from_record(record, self.engine_name, shared)
        encoder_warmup.warm(namespace.settings.encoder)  # no first call pays the encoder's load
        namespace.write_lock.listeners = self.change_listeners
        if shared is None:
            if concepts is None:
                concepts = self.backend.concepts(record.name)
            namespace.bind_concepts([name for _, name in concepts], [cid for cid, _ in concepts])
        self.writer.concept_ids(namespace, namespace.settings.concepts)
        return namespace

    def reopen_namespace(self, name: str, record: records_pb2.NamespaceRecord | None) -> None:
        """Opens namespace `name` afresh from `record` (its index, vocabulary and settings as the
        backend now holds them), or forgets it when `record` is None: how a read replica catches
        up with its primary (api/processes.py). The core's view of the old one goes with it
        (library/core_recall.py): it held the old index."""
        with self._lock:
            opened = self._open_namespace(record) if record is not None else None  # (a failure keeps the old one)
            old = self._namespaces.pop(name, None)
            if opened is not None:
                self._namespaces[name] = opened
        if old is not None:
            with old.write_lock:
                old.write_lock.invalidate()

    def holds_namespace(self, name: str) -> bool:
        """Whether namespace `name` is open here (a replica may not have opened it yet)."""
        return name in self._namespaces

    @property
    def engine_name(self) -> str:
        """The server-side scoring engine's name ("" without one): an "auto" namespace's rule reads it."""
        return self.verifier.engine_name if self.verifier is not None else ""

    @property
    def rebuild_items(self) -> int:
        return self.backend.loaded_items

    @property
    def rebuild_seconds(self) -> float:
        return self.backend.load_seconds

    def flush(self) -> None:
        self.backend.flush()

    def close(self) -> None:
        self.daemons.stop_all()  # before the backend closes (it saves the graphs left to save)
        self.backend.close()

    def checkpoint_graphs(self) -> int:
        """Saves the approximate-index graphs of every namespace written to since they were last
        saved, each under the namespace's write lock (its writes wait, ~0.1 s per 100,000 items;
        searches do not), so the files describe one state of the store; returns how many it
        saved. A crash then rebuilds at start-up only the namespaces written to after their last
        save. A no-op for backends without saved graphs."""
        checkpoint = getattr(self.backend, "checkpoint_graphs", None)
        if checkpoint is None:
            return 0
        saved = 0
        for name, namespace in list(self._namespaces.items()):  # list(): atomic copy
            with namespace.write_lock:
                if self._namespaces.get(name) is namespace and checkpoint(name):
                    saved += 1
        return saved

    def _checkpoint_pass(self) -> None:
        saved = self.checkpoint_graphs()
        if saved:
            log.info("approximate-index graphs of %d namespace(s) saved", saved)

    def _refresh_settings(self) -> None:
        """Reads every namespace record of a shared backend (one query) and adopts what other
        processes changed (adopt_records)."""
        adopted = self.adopt_records(self.backend.namespaces())
        if adopted:
            log.info("%d namespace(s) created, deleted or changed by another process adopted", adopted)

    def adopt_records(self, records: Sequence[records_pb2.NamespaceRecord]) -> int:
        """Takes the backend's namespace records as other processes left them: namespaces they
        created are opened, ones they deleted are dropped, and changed settings, score models
        and labelled sets are applied. Each change is confirmed by a fresh read under the
        namespace's write lock, so a newer change made here meanwhile is kept. Returns the
        namespaces changed."""
        changed = 0
        listed = {record.name: record for record in records}
        for name in [name for name in list(self._namespaces) if name not in listed]:  # list(): atomic copy
            with self._lock:  # deleted elsewhere, unless created here after the listing
                if name in self._namespaces and self.backend.namespace_record(name) is None:
                    del self._namespaces[name]
                    changed += 1
        for name, record in listed.items():
            namespace = self._namespaces.get(name)
            if namespace is None:
                self.namespace(name)  # opens it (a concurrent delete: NotFound next pass)
                changed += 1
            elif namespace.to_record() != record:
                with namespace.write_lock:
                    current = self.backend.namespace_record(name)
                    if current is not None and namespace.to_record() != current:
                        # the concepts first (the other process bound its declared ones before it
                        # stored the record): whoever sees the new settings finds them bound
                        self.writer.catch_up(namespace)
                        namespace.adopt_record(current)
                        changed += 1
        return changed

    def backup(self, dest_dir: str):
        """A consistent snapshot of every namespace, taken while serving (Backend.snapshot)."""
        return self.backend.snapshot(dest_dir)

    # ---- namespaces ------------------------------------------------------------------------

    def create_namespace(self, settings: NamespaceSettings) -> Namespace:
        settings.validate()
        if settings.ann is not None and not self.backend.ann_kinds:
            raise InvalidArgument(
                f"config.ann: the {self.backend.name} backend builds no approximate index "
                f"({self.backend.ann_note}); drop config.ann"
            )
        if settings.ann is not None and settings.ann.kind not in self.backend.ann_kinds:
            built = " or ".join(repr(kind) for kind in self.backend.ann_kinds)
            raise InvalidArgument(
                f"config.ann.kind {quoted(settings.ann.kind)}: the {self.backend.name} backend "
                f"builds {built}; use that kind or drop config.ann"
            )
        with self._lock:
            if settings.name in self._namespaces:
                raise AlreadyExists(f"namespace {quoted(settings.name)} already exists")
            created_ms = now_ms()
            self.backend.create_namespace(settings.to_record(created_ms))  # (a new namespace's whole record)
            namespace = Namespace(
                settings, created_ms, engine=self.engine_name, vocabulary=self.backend.vocabulary(settings.name)
            )
            encoder_warmup.warm(settings.encoder)
            namespace.write_lock.listeners = self.change_listeners
            self._namespaces[settings.name] = namespace
            with namespace.write_lock:  # a Recall meanwhile must not hand over a view these concepts outdate
                self.writer.concept_ids(namespace, settings.concepts)
            return namespace

    def namespace(self, name: str) -> Namespace:
        namespace = self._namespaces.get(name)
        if namespace is None:  # another process sharing the backend may have created it since
            with self._lock:
                namespace = self._namespaces.get(name)
                record = self.backend.namespace_record(name) if namespace is None and name else None
                if record is not None:
                    namespace = self._namespaces[name] = self._open_namespace(record)
        if namespace is None:
            raise NotFound(f"namespace {quoted(name)} does not exist; create it first")
        return namespace

    def live_namespace(self, name: str) -> Namespace | None:
        """The namespace this process holds under `name` now (None: none), without asking the backend."""
        return self._namespaces.get(name)

    def list_namespaces(self) -> list[Namespace]:
        return [self._namespaces[n] for n in sorted(self._namespaces)]

    def delete_namespace(self, name: str) -> None:
        with self._lock:
            namespace = self.namespace(name)
            with namespace.write_lock:
                namespace.write_lock.invalidate()  # the front's view of it goes with it
                self.backend.delete_namespace(name)
                del self._namespaces[name]

    def namespace_counts(self, name: str) -> NamespaceCounts:
        return self.backend.counts(self.namespace(name).name)

    def update_namespace(self, ns: str, changes: Mapping[str, Any]) -> tuple[Namespace, int, int]:
        """UpdateNamespace (namespace_updates.update_namespace): (namespace, items re-partitioned,
        items whose states changed)."""
        namespace = self.namespace(ns)
        return (namespace, *namespace_updates.update_namespace(self.writer, namespace, changes))

    def repartition(
        self,
        ns: str,
        kappa: float | None = None,
        partitioner: str | None = None,
        rho: float | None = None,
        rho_absent: float | None = None,
    ) -> int:
        """update_namespace for κ / partitioner / ρ; returns the items whose states changed."""
        changes = {
            k: v
            for k, v in (("kappa", kappa), ("partitioner", partitioner), ("rho", rho), ("rho_absent", rho_absent))
            if v is not None
        }
        return self.update_namespace(ns, changes)[2]

    def calibrate(self, ns: str, scores: Sequence[float], present: Sequence[bool]) -> BetaMixture:
        """Calibrate (namespace_updates.calibrate): the namespace's score model from a labelled set."""
        return namespace_updates.calibrate(self.writer, self.namespace(ns), scores, present)

    # ---- writes ----------------------------------------------------------------------------

    def remember(
        self, ns: str, item: ItemInput, deadline: float | None = None, on_submit: Submitted | None = None
    ) -> records_pb2.ItemRecord:
        """Store one new item (AlreadyExists if its id is taken); returns its record."""
        result = self.remember_batch(ns, [item], deadline, on_submit)[0]
        if isinstance(result, Exception):
            raise result
        return result

    def remember_batch(
        self, ns: str, items: Sequence[ItemInput], deadline: float | None = None, on_submit: Submitted | None = None
    ) -> list[records_pb2.ItemRecord | Exception]:
        """Store many new items in one backend write; one item's bad input (or failed
        verification) fails that item alone: its exception is returned in its place. Items with
        `verify_concepts` / `content` are scored by the verifier first (client scores win where
        both exist); `sem` vectors the encoder computes are encoded in one batch."""
        namespace = self.namespace(ns)
        results: list[Any] = [None] * len(items)
        checked = []
        for i, item in enumerate(items):
            try:
                checked.append((i, check_item(item, namespace.spaces, len(namespace.settings.templates)), item))
            except InvalidArgument as exc:
                results[i] = exc
        verified = verify_items.verify_batch(
            self.verifier,
            namespace,
            [(i, item) for i, _, item in checked if item.needs_verification],
            deadline,
            on_submit,
        )
        with namespace.write_lock:
            seen: set[str] = set()
            stored = self.backend.stored_ids(ns, [value.id for _, value, _ in checked if value.id])
            ready = []
            for i, value, _ in checked:
                outcome = verified.get(i)
                if isinstance(outcome, Exception):  # the engine failed or rejected this item
                    results[i] = outcome
                    continue
                try:
                    if outcome is not None:
                        value = replace(value, evidence=with_verified(value.evidence, outcome))
                    record = self.writer.build_new(namespace, value, seen, stored)
                    seen.add(record.id)
                    ready.append((i, record, dict(value.vectors)))
                except (InvalidArgument, AlreadyExists) as exc:
                    results[i] = exc
            self.writer.fill_sem(namespace, [(record, vectors) for _, record, vectors in ready])
            self.backend.write_items(ns, [ItemWrite(record, vectors) for _, record, vectors in ready])
            for i, record, _ in ready:
                results[i] = record
            self.writer.maybe_recalibrate(namespace)
        return results

    def score_concepts(
        self,
        ns: str,
        text: str,
        content: bytes,
        concepts: Sequence[str],
        deadline: float | None = None,
        on_submit: Submitted | None = None,
    ) -> dict[str, list[float]]:
        """Raw verifier scores (concept -> P(Yes) per template); nothing is stored."""
        return verify_items.score_concepts(
            self.verifier, self.namespace(ns), text, content, concepts, deadline, on_submit
        )

    def observe(
        self,
        ns: str,
        item_id: str,
        scores: Mapping[str, Sequence[float]] | None = None,
        states: Mapping[str, str] | None = None,
        vectors: Mapping[str, Any] | None = None,
        source: str = "client",
        model: str = "",
        text: str = "",
        content: bytes = b"",
        verify_concepts: Sequence[str] = (),
        deadline: float | None = None,
        on_submit: Submitted | None = None,
    ) -> records_pb2.ItemRecord:
        """Merge new evidence into an existing item and re-partition it (domain/evidence.py: the
        merge rule). New `text` / `content` / `verify_concepts` are scored by the verifier (the
        item's known concepts when none are named)."""
        namespace = self.namespace(ns)
        check_item_id(item_id)
        evidence = check_evidence(scores, states, source, model, len(namespace.settings.templates))
        explicit = check_vectors(namespace.spaces, vectors or {})
        if text or content or verify_concepts:
            before = self.get_item(ns, item_id)
            concepts = list(verify_concepts) or [namespace.vocabulary.name(ev.concept_id) for ev in before.evidence]
            probe = ItemInput(text=text or before.text, content=content, verify_concepts=concepts)
            outcome = verify_items.verify_batch(self.verifier, namespace, [(0, probe)], deadline, on_submit)[0]
            if isinstance(outcome, Exception):
                raise outcome
            evidence = with_verified(evidence, outcome)
        with namespace.write_lock:
            previous = self.writer.get(namespace, item_id)
            ids = self.writer.evidence_ids(namespace, evidence)

            def change(record: records_pb2.ItemRecord) -> None:
                apply_evidence(record, evidence, ids)
                if evidence.model:
                    record.model = evidence.model

            record = self.writer.rewrite(namespace, previous, change, explicit, observed=set(ids.values()))
            self.writer.maybe_recalibrate(namespace)
            return record

    def forget(self, ns: str, item_id: str) -> None:
        namespace = self.namespace(ns)
        check_item_id(item_id)
        with namespace.write_lock:
            self.backend.delete_item(ns, self.writer.get(namespace, item_id))

    # ---- reads -----------------------------------------------------------------------------

    def get_item(self, ns: str, item_id: str) -> records_pb2.ItemRecord:
        return self.writer.get(self.namespace(ns), check_item_id(item_id))

    def get_items(self, ns: str, item_ids: Sequence[str]) -> list[records_pb2.ItemRecord | None]:
        """The records of `item_ids` in one read of the backend, None for one not stored."""
        return self.backend.get_items(self.namespace(ns).name, list(item_ids))

    def get_vectors(self, ns: str, item_id: str) -> dict[str, np.ndarray]:
        self.get_item(ns, item_id)
        return self.backend.get_vectors(ns, item_id)

    def concept_id(self, ns: str, concept: str) -> int:
        """The id of a concept name (alias, plural and case resolved); in an open vocabulary a phrase
        the stored text can mention is learned first (concept_backfill.learn_names)."""
        namespace = self.namespace(ns)
        learns = namespace.settings.open_vocabulary and isinstance(concept, str)
        if learns and not self.backend.read_only:
            concept_backfill.learn_names(self.writer, namespace, [concept])
        concept_id = namespace.vocabulary.lookup(concept) if isinstance(concept, str) else None
        if concept_id is None and learns and self.backend.read_only:  # a replica: its primary learns
            raise LearnedByPrimary(f"namespace {quoted(ns)} must learn the name {quoted(concept)}")
        if concept_id is None:
            raise NotFound(f"concept {quoted(concept)} is not in the vocabulary of namespace {quoted(ns)}")
        return concept_id

    def items_by_concept(self, ns: str, concept: str, polarity: str, after: str = "", limit: int = 100) -> list[str]:
        """Item ids holding `polarity` ("has" | "not_has" | "align") for `concept`, paginated by id."""
        if polarity not in POLARITIES:  # before the concept is looked up (and, open, learned)
            raise InvalidArgument(f"polarity must be 'has', 'not_has' or 'align', got {quoted(polarity)}")
        return vocabulary_reads.items_by_concept(self.backend, ns, self.concept_id(ns, concept), polarity, after, limit)

    def list_concepts(
        self, ns: str, after_id: int = -1, limit: int = 100
    ) -> tuple[list[tuple[int, str, dict[str, int]]], int]:
        """vocabulary_reads.vocabulary_page: (id, name, items per polarity) above `after_id`, and the total."""
        return vocabulary_reads.vocabulary_page(self.backend, self.namespace(ns), after_id, limit)

    def concept_stats(self, ns: str, concept: str) -> dict[str, int]:
        return vocabulary_reads.concept_counts(self.backend, ns, self.concept_id(ns, concept))

    # Lexicographic recall of namespace `ns` by the core, typed and documented once (recall.recall):
    # mode None follows the namespace's rule, "answer" labels notes for an agent's question.
    recall = core_answers.recall
