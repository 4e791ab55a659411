"""Namespaces of polarised memory over the store, the compiled index, the partition and text:
the library API the gRPC service wraps.

Write path of one item: evidence -> per-concept states (partition of P(Yes) scores, states the
client asserts, or the lexical pathway for text) -> `sem` vector (the namespace encoder over
the serialised state, or a text item's own text, unless the client sent one) -> one RocksDB
WriteBatch -> the in-memory index updated in place. A namespace's writes are serialised by its
lock, so the store and the index never disagree; searches run concurrently with them.

Observation merge rule: for each concept, the new template scores are averaged with the
earlier ones position by position, weighted by how many observations each side holds (a
running mean); when the number of templates differs, the new scores replace the old (they
were produced by another template set and are not comparable). Asserted states replace the
concept's state outright. The item is then re-partitioned over all its scored concepts; when
any state changes, the previous state is appended to the item's history.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from polarmem.common.v1 import enums_pb2
from polarmem.storage.v1 import records_pb2
from polarmem_server.domain import text as textproc
from polarmem_server.scoring.encoder import Encoder, load_encoder, serialise_state
from polarmem_server.index import Index, SpaceSpec
from polarmem_server.storage.local.index_record import concept_lists
from polarmem_server.domain.mixtures import (MIN_CALIBRATION_SCORES, BetaMixture, fit_beta_mixture, fit_concept_priors,
                                      fit_supervised)
from polarmem_server.domain.partition import ConceptState, PartitionSettings, partition_scores
from polarmem_server.storage.local.rebuild import RebuildLoader, append_items
from polarmem_server.recall import RecallResult, run_recall
from polarmem_server.storage.local.store import Store, check_item_id, check_namespace_name
from polarmem_server.domain.vocabulary import Vocabulary

DEFAULT_TEMPLATES = (
    "Is there a {c} in this image? Answer Yes or No.",
    "Does this image contain a {c}? Answer Yes or No.",
    "Can you see a {c} in the picture? Answer Yes or No.",
    "Is a {c} visible in this image? Answer Yes or No.",
)
STATE_NAMES = {"has": ConceptState.HAS, "not_has": ConceptState.NOT_HAS, "uncertain": ConceptState.UNCERTAIN}
COMPACT_AT_TOMBSTONE_SHARE = 0.25
COMPACT_MIN_TOMBSTONES = 1024
REBUILD_BATCH = 20_000


class NotFoundError(KeyError):
    """A namespace, item or concept that does not exist."""

    def __str__(self) -> str:  # KeyError quotes its message; this one reads as a sentence
        return str(self.args[0]) if self.args else ""


class AlreadyExistsError(ValueError):
    """Creating something that exists."""


@dataclass(frozen=True)
class NamespaceSettings:
    name: str
    spaces: tuple[SpaceSpec, ...] = (SpaceSpec("sem", 384),)
    encoder: str = "minilm"  # "minilm" | "none" (clients send every vector)
    kappa: float = 1.0
    degenerate_policy: str = "fixed"
    fixed_threshold: float = 0.5
    template_std_max: float = 0.3
    templates: tuple[str, ...] = DEFAULT_TEMPLATES
    aliases: Mapping[str, str] = field(default_factory=dict)
    partitioner: str = "otsu"
    rho: float = 0.85
    rho_absent: float = 0.0  # 0: the NOT_HAS side of the band is rho too

    def partition_settings(self) -> PartitionSettings:
        return PartitionSettings(kappa=self.kappa, template_std_max=self.template_std_max,
                                 degenerate_policy=self.degenerate_policy, fixed_threshold=self.fixed_threshold,
                                 method=self.partitioner, rho=self.rho, rho_absent=self.rho_absent)

    def validate(self) -> None:
        check_namespace_name(self.name)
        self.partition_settings()  # raises on bad kappa / policy / threshold
        names = [s.name for s in self.spaces]
        if len(set(names)) != len(names):
            raise ValueError(f"spaces: a space name appears twice in {names}")
        if self.encoder not in ("minilm", "none"):
            raise ValueError(f"encoder must be 'minilm' or 'none', got {self.encoder!r}")
        if self.encoder == "minilm":
            sem = next((s for s in self.spaces if s.name == "sem"), None)
            if sem is None or sem.dim != 384 or sem.multi:
                raise ValueError("encoder 'minilm' writes a 384-d single-vector space named 'sem'; declare it or use encoder 'none'")
        if not self.templates or any("{c}" not in t for t in self.templates):
            raise ValueError("templates: give at least one template, each containing '{c}'")

    def to_record(self, created_ms: int) -> records_pb2.NamespaceRecord:
        return records_pb2.NamespaceRecord(
            name=self.name,
            spaces=[records_pb2.SpaceRecord(name=s.name, dim=s.dim, multi=s.multi, storage=s.storage) for s in self.spaces],
            encoder=self.encoder, kappa=self.kappa, degenerate_policy=self.degenerate_policy,
            fixed_threshold=self.fixed_threshold, template_std_max=self.template_std_max, templates=list(self.templates),
            aliases=dict(self.aliases), created_ms=created_ms, partitioner=self.partitioner, rho=self.rho,
            rho_absent=self.rho_absent)

    @classmethod
    def from_record(cls, record: records_pb2.NamespaceRecord) -> NamespaceSettings:
        return cls(
            name=record.name,
            spaces=tuple(SpaceSpec(s.name, s.dim, s.multi, s.storage or "fp32") for s in record.spaces),
            encoder=record.encoder or "none", kappa=record.kappa, degenerate_policy=record.degenerate_policy or "fixed",
            fixed_threshold=record.fixed_threshold, template_std_max=record.template_std_max or 0.3,
            templates=tuple(record.templates) or DEFAULT_TEMPLATES, aliases=dict(record.aliases),
            partitioner=record.partitioner or "otsu", rho=record.rho or 0.85, rho_absent=record.rho_absent)


@dataclass
class ItemInput:
    """One item to remember. Evidence is any of: `scores` (concept -> P(Yes) per template),
    `states` (concept -> "has" | "not_has" | "uncertain"), or, for text items with neither,
    the lexical pathway over `text` (vocabulary mentions and negation cues)."""

    id: str | None = None
    kind: str = "visual"
    text: str = ""
    uri: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)
    vectors: Mapping[str, Any] = field(default_factory=dict)
    scores: Mapping[str, Sequence[float]] = field(default_factory=dict)
    states: Mapping[str, str] = field(default_factory=dict)
    source: str = "client"
    model: str = ""


class Namespace:
    """In-memory state of one namespace: settings, vocabulary, compiled index and id <-> slot maps."""

    def __init__(self, settings: NamespaceSettings, created_ms: int, threads: int) -> None:
        self.settings = settings
        self.created_ms = created_ms
        self.vocabulary = Vocabulary(aliases=settings.aliases)
        self.index = Index(settings.spaces, threads=threads)
        self.slot_of: dict[str, int] = {}
        self.id_of: list[str | None] = []
        self.kinds = Counter()
        self.concept_counts: dict[str, Counter] = {"has": Counter(), "not_has": Counter(), "align": Counter()}
        self.metadata_slots: dict[tuple[str, str], set[int]] = defaultdict(set)
        self.write_lock = threading.RLock()
        self.generation = 0  # even: slot map stable; odd: compaction renumbering slots (recall.py)
        self.calibration: BetaMixture | None = None  # the "calibrated" partitioner's namespace model
        self.scored_concepts = 0  # pooled concept scores stored (drives calibration refits)
        self.calibration_tried_at = 0  # scored_concepts at the last calibration attempt
        self.encoder: Encoder | None = None
        self.spaces = {s.name: s for s in settings.spaces}

    def concept_vectors(self) -> np.ndarray:
        """Encoded concept names (for mapping unknown query terms), refreshed as the vocabulary grows."""
        names = self.vocabulary.names
        cached = getattr(self, "_concept_vectors", None)
        if cached is None or cached[0] != len(names):
            cached = (len(names), self.ensure_encoder().encode(names))
            self._concept_vectors = cached
        return cached[1]

    def ensure_encoder(self) -> Encoder | None:
        if self.encoder is None and self.settings.encoder != "none":
            self.encoder = load_encoder(self.settings.encoder)
        return self.encoder

    def count_record(self, record: records_pb2.ItemRecord, slot: int, sign: int) -> None:
        """One item in (+1) or out (-1) of the counters; new items are counted in bulk by
        rebuild.append_items from their index records instead."""
        has, not_has, align, scored = concept_lists(record)
        self.kinds[enums_pb2.ItemKind.Name(record.kind)] += sign
        for polarity, concepts in (("has", has), ("not_has", not_has), ("align", align)):
            for c in concepts:
                self.concept_counts[polarity][c] += sign
        self.scored_concepts += sign * scored
        for key, value in record.metadata.items():
            if sign > 0:
                self.metadata_slots[(key, value)].add(slot)
            else:
                self.metadata_slots[(key, value)].discard(slot)


def last_write_changed_states(record: records_pb2.ItemRecord) -> bool:
    """Whether the write that produced `record` changed its HAS / NOT_HAS states: such a write
    appends the previous state, stamped with the previous version, to the history."""
    return bool(record.history) and record.history[-1].version == record.version - 1


def _now_ms() -> int:
    return int(time.time() * 1000)


def _states_of(record: records_pb2.ItemRecord) -> tuple[list[int], list[int]]:
    has, not_has, _, _ = concept_lists(record)
    return has, not_has


class Memory:
    """Many namespaces over one RocksDB data directory."""

    def __init__(self, path: str | Path, durability: str = "sync", threads: int = 0,
                 on_store_write: Any = None) -> None:
        self.store = Store(path, durability)
        self.on_store_write = on_store_write  # called with seconds per item write (metrics)
        self.threads = threads
        self._namespaces: dict[str, Namespace] = {}
        self._lock = threading.RLock()
        self.rebuild_seconds = 0.0
        self.rebuild_items = 0
        start = time.perf_counter()
        for record in self.store.namespaces():
            self._namespaces[record.name] = self._rebuild(record)
        self.rebuild_seconds = time.perf_counter() - start

    # ---- namespaces ------------------------------------------------------------------------

    def create_namespace(self, settings: NamespaceSettings) -> Namespace:
        settings.validate()
        with self._lock:
            if settings.name in self._namespaces:
                raise AlreadyExistsError(f"namespace {settings.name!r} already exists")
            created = _now_ms()
            namespace = Namespace(settings, created, self.threads)
            self.store.put_namespace(settings.to_record(created))
            self._namespaces[settings.name] = namespace
            return namespace

    def namespace(self, name: str) -> Namespace:
        namespace = self._namespaces.get(name)
        if namespace is None:
            raise NotFoundError(f"namespace {name!r} does not exist; create it first")
        return namespace

    def list_namespaces(self) -> list[Namespace]:
        return [self._namespaces[n] for n in sorted(self._namespaces)]

    def delete_namespace(self, name: str) -> None:
        with self._lock:
            namespace = self.namespace(name)
            with namespace.write_lock:
                self.store.delete_namespace(name)
                del self._namespaces[name]

    # ---- writes ----------------------------------------------------------------------------

    def remember(self, ns: str, item: ItemInput) -> records_pb2.ItemRecord:
        """Store one new item (AlreadyExistsError if its id is taken); returns its record."""
        result = self.remember_batch(ns, [item])[0]
        if isinstance(result, Exception):
            raise result
        return result

    def remember_batch(self, ns: str, items: Sequence[ItemInput]) -> list[records_pb2.ItemRecord | Exception]:
        """Store many new items, each in its own atomic write; one item's bad input fails that
        item alone (its exception is returned in its place). `sem` vectors the namespace
        encoder must compute are encoded in one batch."""
        namespace = self.namespace(ns)
        with namespace.write_lock:
            built: list[tuple[records_pb2.ItemRecord, list, dict] | Exception] = []
            seen: set[str] = set()
            for item in items:
                mark = len(namespace.vocabulary)
                try:
                    record, new_concepts, given = self._build_new(namespace, item, seen)
                    built.append((record, new_concepts, given))
                    seen.add(record.id)
                except (ValueError, TypeError, KeyError) as exc:
                    namespace.vocabulary.truncate(mark)
                    built.append(exc)
            pending = [b for b in built if not isinstance(b, Exception) and self._needs_sem(namespace, b[2])]
            if pending:
                encoded = namespace.ensure_encoder().encode([self._sem_text(namespace, b[0]) for b in pending])
                for b, vector in zip(pending, encoded):
                    b[2]["sem"] = vector
            ready = [b for b in built if not isinstance(b, Exception)]
            # One group commit for the batch (one WAL sync), then the index in place.
            index_records = self._persist(namespace, [(record, vectors, None, new_concepts)
                                                      for record, new_concepts, vectors in ready])
            self._index_new(namespace, [(record, vectors) for record, _, vectors in ready], index_records)
            results: list[records_pb2.ItemRecord | Exception] = [b if isinstance(b, Exception) else b[0] for b in built]
            self._maybe_recalibrate(namespace)
            return results

    def _build_new(self, namespace: Namespace, item: ItemInput, batch_ids: set[str]):
        item_id = item.id or uuid.uuid4().hex
        check_item_id(item_id)
        if item.kind not in ("visual", "text"):
            raise ValueError(f"kind must be 'visual' or 'text', got {item.kind!r}")
        for key, value in item.metadata.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise ValueError("metadata: keys and values must be strings")
        if item_id in namespace.slot_of or item_id in batch_ids:
            raise AlreadyExistsError(f"item {item_id!r} already exists in namespace {namespace.settings.name!r}; "
                                     "use observe to add evidence")
        new_concepts: list[tuple[int, str]] = []
        record = records_pb2.ItemRecord(
            id=item_id, kind=enums_pb2.ITEM_KIND_VISUAL if item.kind == "visual" else enums_pb2.ITEM_KIND_TEXT,
            text=item.text, uri=item.uri, metadata=dict(item.metadata), model=item.model,
            template_version=str(len(namespace.settings.templates)), created_ms=_now_ms(), version=1)
        self._apply_evidence(namespace, record, item, new_concepts)
        return record, new_concepts, self._checked_vectors(namespace, item.vectors)

    def observe(self, ns: str, item_id: str, scores: Mapping[str, Sequence[float]] | None = None,
                states: Mapping[str, str] | None = None, vectors: Mapping[str, Any] | None = None,
                source: str = "client", model: str = "") -> records_pb2.ItemRecord:
        """Merge new evidence into an existing item and re-partition it (module doc: merge rule)."""
        namespace = self.namespace(ns)
        with namespace.write_lock:
            previous = self._get_record(namespace, item_id)
            record = records_pb2.ItemRecord()
            record.CopyFrom(previous)
            new_concepts: list[tuple[int, str]] = []
            mark = len(namespace.vocabulary)
            try:
                self._apply_evidence(namespace, record, ItemInput(scores=scores or {}, states=states or {}, source=source),
                                     new_concepts, merge=True)
                explicit = self._checked_vectors(namespace, vectors or {})
            except Exception:
                namespace.vocabulary.truncate(mark)
                raise
            if model:
                record.model = model
            changed = _states_of(record) != _states_of(previous)
            if changed:
                record.history.append(self._snapshot(previous))
            record.version = previous.version + 1
            record.updated_ms = _now_ms()
            stored_vectors = self.store.get_vectors(ns, item_id, {s: d.dim for s, d in namespace.spaces.items()})
            keep = {s: (v if namespace.spaces[s].multi else v[0]) for s, v in stored_vectors.items()
                    if s != "sem" or not (changed and self._encodes_sem(namespace) and record.kind == enums_pb2.ITEM_KIND_VISUAL)}
            keep.update(explicit)
            new_vectors = self._vectors_for(namespace, record, keep)
            self._persist_and_index(namespace, record, new_vectors, previous, new_concepts)
            self._maybe_recalibrate(namespace)
            return record

    def repartition(self, ns: str, kappa: float | None = None, partitioner: str | None = None,
                    rho: float | None = None, rho_absent: float | None = None) -> int:
        """Re-partition every item of a namespace from its stored scores (no re-scoring) under a
        new κ, partitioner or ρ, which become the namespace's settings. Returns the number of
        items whose states changed."""
        namespace = self.namespace(ns)
        with namespace.write_lock:
            changes = {k: v for k, v in (("kappa", kappa), ("partitioner", partitioner), ("rho", rho),
                                         ("rho_absent", rho_absent)) if v is not None}
            settings = NamespaceSettings(**{**namespace.settings.__dict__, **changes})
            settings.validate()
            namespace.settings = settings
            if settings.partitioner == "calibrated" and namespace.calibration is None:
                self._fit_calibration(namespace)
            self._save_namespace(namespace)
            return self._repartition_all(namespace)

    def calibrate(self, ns: str, scores: Sequence[float], present: Sequence[bool]) -> BetaMixture:
        """Fit the two class components of the namespace's score model from a labelled
        calibration set (P(Yes) scores and whether each object was present): they replace any
        pooled fit and stay; the prevalences keep being fitted on the stored scores. Stored items
        of a "calibrated" namespace are re-partitioned."""
        namespace = self.namespace(ns)
        values = np.asarray(scores, dtype=np.float64).ravel()
        if values.size and (not np.all(np.isfinite(values)) or values.min() < 0 or values.max() > 1):
            raise ValueError("p_yes: every calibration score must be a finite P(Yes) in [0, 1]")
        with namespace.write_lock:
            namespace.calibration = fit_supervised(values, np.asarray(present, dtype=bool))
            self._fit_calibration(namespace)  # the concepts' prevalences, from the stored scores
            self._save_namespace(namespace)
            if namespace.settings.partitioner == "calibrated":
                self._repartition_all(namespace)
            return namespace.calibration

    def _save_namespace(self, namespace: Namespace) -> None:
        record = namespace.settings.to_record(namespace.created_ms)
        if namespace.calibration is not None:
            c = namespace.calibration
            record.calibration.CopyFrom(records_pb2.CalibrationRecord(
                present_a=c.present[0], present_b=c.present[1], absent_a=c.absent[0], absent_b=c.absent[1],
                prior=c.prior, fitted_on=c.fitted_on, supervised=c.supervised, concept_priors=dict(c.concept_priors),
                priors_fitted_on=c.priors_fitted_on))
        self.store.put_namespace(record)

    def _fit_calibration(self, namespace: Namespace) -> bool:
        """Fit the score model from every stored concept mean: the two class components (unless
        a labelled calibration set fixed them) and each concept's prevalence. False if too few
        scores."""
        limit = namespace.settings.template_std_max
        pairs = [(ev.concept_id, ev.mean) for r in self.store.iter_items(namespace.settings.name) for ev in r.evidence
                 if len(ev.template_scores) and ev.template_std <= limit]
        if len(pairs) < MIN_CALIBRATION_SCORES:
            return False
        means = np.array([m for _, m in pairs])
        current = namespace.calibration
        model = current if current is not None and current.supervised else fit_beta_mixture(means)
        model = fit_concept_priors(model, [namespace.vocabulary.name(c) for c, _ in pairs], means)
        namespace.calibration = replace(model, priors_fitted_on=len(pairs))
        return True

    def _maybe_recalibrate(self, namespace: Namespace) -> None:
        """A "calibrated" namespace refits its model each time its pooled scores double (only the
        concept prevalences when a labelled calibration set fixed the components)."""
        if namespace.settings.partitioner != "calibrated":
            return
        # Doubling since the last fit — or since the last try: a fit that found too few reliable
        # scores (template disagreement excludes them) must not rescan the store on every write.
        basis = max(namespace.calibration.priors_fitted_on if namespace.calibration else 0,
                    namespace.calibration_tried_at, MIN_CALIBRATION_SCORES // 2)
        if namespace.scored_concepts < 2 * basis:
            return
        namespace.calibration_tried_at = namespace.scored_concepts
        if self._fit_calibration(namespace):
            self._save_namespace(namespace)
            self._repartition_all(namespace)

    def _repartition_all(self, namespace: Namespace) -> int:
        ns = namespace.settings.name
        changed = 0
        for previous in list(self.store.iter_items(ns)):
            record = records_pb2.ItemRecord()
            record.CopyFrom(previous)
            self._partition(namespace, record)
            if record.partition == previous.partition and _states_of(record) == _states_of(previous):
                continue
            state_changed = _states_of(record) != _states_of(previous)
            if state_changed:
                record.history.append(self._snapshot(previous))
                changed += 1
            record.version += 1
            record.updated_ms = _now_ms()
            stored = {s: (v if namespace.spaces[s].multi else v[0]) for s, v in
                      self.store.get_vectors(ns, record.id, {s: d.dim for s, d in namespace.spaces.items()}).items()}
            if state_changed and self._encodes_sem(namespace) and record.kind == enums_pb2.ITEM_KIND_VISUAL:
                stored.pop("sem", None)
            self._persist_and_index(namespace, record, self._vectors_for(namespace, record, stored), previous, [])
        return changed

    def forget(self, ns: str, item_id: str) -> None:
        namespace = self.namespace(ns)
        with namespace.write_lock:
            record = self._get_record(namespace, item_id)
            self.store.delete_item(ns, record, tuple(namespace.spaces))
            slot = namespace.slot_of.pop(item_id)
            namespace.index.remove([slot])
            namespace.id_of[slot] = None
            namespace.count_record(record, slot, -1)
            self._maybe_compact(namespace)

    # ---- reads -----------------------------------------------------------------------------

    def get_item(self, ns: str, item_id: str) -> records_pb2.ItemRecord:
        return self._get_record(self.namespace(ns), item_id)

    def get_vectors(self, ns: str, item_id: str) -> dict[str, np.ndarray]:
        namespace = self.namespace(ns)
        self._get_record(namespace, item_id)
        return self.store.get_vectors(ns, item_id, {s: d.dim for s, d in namespace.spaces.items()})

    def concept_id(self, ns: str, concept: str) -> int:
        namespace = self.namespace(ns)
        concept_id = namespace.vocabulary.lookup(concept)
        if concept_id is None:
            raise NotFoundError(f"concept {concept!r} is not in the vocabulary of namespace {ns!r}")
        return concept_id

    def items_by_concept(self, ns: str, concept: str, polarity: str, after: str = "", limit: int = 100) -> list[str]:
        """Item ids holding `polarity` ("has" | "not_has" | "align") for `concept`, paginated by id."""
        from polarmem_server.storage.local.store import EDGE_ALIGN, EDGE_HAS, EDGE_NOT_HAS

        edge = {"has": EDGE_HAS, "not_has": EDGE_NOT_HAS, "align": EDGE_ALIGN}.get(polarity)
        if edge is None:
            raise ValueError(f"polarity must be 'has', 'not_has' or 'align', got {polarity!r}")
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        return self.store.items_by_concept(ns, edge, self.concept_id(ns, concept), after, limit)

    def concept_stats(self, ns: str, concept: str) -> dict[str, int]:
        namespace = self.namespace(ns)
        concept_id = self.concept_id(ns, concept)
        return {polarity: int(counts[concept_id]) for polarity, counts in namespace.concept_counts.items()}

    def recall(self, ns: str, text: str = "", vectors: Mapping[str, Any] | None = None,
               required: Iterable[str] | None = None, forbidden: Iterable[str] | None = None, k: int = 10,
               mode: str = "hard", soft_lambda: float = 1.0, exclude_conflicts: bool = False,
               kinds: Iterable[str] | None = None, metadata: Mapping[str, str] | None = None,
               weights: Mapping[str, float] | None = None, suppressed_k: int = 0) -> RecallResult:
        """Lexicographic recall (recall.py documents query planning and the modes)."""
        return run_recall(self, self.namespace(ns), text, vectors, required, forbidden, k, mode, soft_lambda,
                          exclude_conflicts, kinds, metadata, weights, suppressed_k)

    def checked_query_vectors(self, namespace: Namespace, vectors: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Query vectors: one per space (multi spaces too), finite and non-zero."""
        out = {}
        for space, values in vectors.items():
            spec = namespace.spaces.get(space)
            if spec is None:
                raise ValueError(f"vectors: unknown vector space {space!r} (namespace has: {', '.join(namespace.spaces)})")
            array = np.asarray(values, dtype=np.float32).reshape(-1)
            if array.size != spec.dim:
                raise ValueError(f"vectors[{space!r}]: expected dimension {spec.dim}, got {array.size}")
            if not np.all(np.isfinite(array)):
                raise ValueError(f"vectors[{space!r}]: has a NaN or infinite value; send finite floats")
            if not np.any(array):
                raise ValueError(f"vectors[{space!r}]: is all zeros and has no direction; send a non-zero vector")
            out[space] = array
        return out

    def close(self) -> None:
        self.store.close()

    # ---- internals -------------------------------------------------------------------------

    def _get_record(self, namespace: Namespace, item_id: str) -> records_pb2.ItemRecord:
        check_item_id(item_id)
        record = self.store.get_item(namespace.settings.name, item_id) if item_id in namespace.slot_of else None
        if record is None:
            raise NotFoundError(f"item {item_id!r} does not exist in namespace {namespace.settings.name!r}")
        return record

    def _apply_evidence(self, namespace: Namespace, record: records_pb2.ItemRecord, item: ItemInput,
                        new_concepts: list[tuple[int, str]], merge: bool = False) -> None:
        by_concept = {ev.concept_id: ev for ev in record.evidence}

        def concept(name: str) -> int:
            if not isinstance(name, str):
                raise ValueError(f"concept names must be strings, got {name!r}")
            concept_id, added = namespace.vocabulary.ensure(name)
            if added:
                new_concepts.append((concept_id, namespace.vocabulary.name(concept_id)))
            return concept_id

        for name, scores in item.scores.items():
            values = np.asarray(scores, dtype=np.float64).ravel()
            if values.size == 0:
                raise ValueError(f"scores[{name!r}]: give at least one P(Yes) value")
            if not np.all(np.isfinite(values)) or values.min() < 0 or values.max() > 1:
                raise ValueError(f"scores[{name!r}]: every P(Yes) must be a finite number in [0, 1], got {values.tolist()}")
            cid = concept(name)
            ev = by_concept.get(cid)
            if ev is None:
                ev = record.evidence.add(concept_id=cid)
                by_concept[cid] = ev
            if merge and ev.observations and len(ev.template_scores) == values.size:
                n = ev.observations
                merged = (np.asarray(ev.template_scores) * n + values) / (n + 1)
                del ev.template_scores[:]
                ev.template_scores.extend(merged.tolist())
                ev.observations = n + 1
            else:
                del ev.template_scores[:]
                ev.template_scores.extend(values.tolist())
                ev.observations = 1
            ev.source = item.source
        for name, state in item.states.items():
            if state not in STATE_NAMES:
                raise ValueError(f"states[{name!r}]: {state!r} is not a state; use 'has', 'not_has' or 'uncertain'")
            cid = concept(name)
            ev = by_concept.get(cid)
            if ev is None:  # the common case: one protobuf call per concept
                by_concept[cid] = record.evidence.add(concept_id=cid, state=int(STATE_NAMES[state]), observations=1,
                                                      source=item.source)
                continue
            del ev.template_scores[:]
            ev.state = int(STATE_NAMES[state])
            ev.observations += 1
            ev.source = item.source
        if record.kind == enums_pb2.ITEM_KIND_TEXT and record.text and not merge:
            parsed = textproc.parse(record.text, namespace.vocabulary)
            record.mentions[:] = sorted({m.concept_id for m in parsed.mentions})
            if not item.scores and not item.states:
                # Lexical pathway: a mention is HAS evidence unless a cue negates it.
                for m in parsed.mentions:
                    ev = by_concept.get(m.concept_id) or record.evidence.add(concept_id=m.concept_id)
                    by_concept[m.concept_id] = ev
                    ev.state = enums_pb2.CONCEPT_STATE_NOT_HAS if m.negated else enums_pb2.CONCEPT_STATE_HAS
                    ev.observations = 1
                    ev.source = "lexical"
        self._partition(namespace, record)

    def _partition(self, namespace: Namespace, record: records_pb2.ItemRecord) -> None:
        scored = [ev for ev in record.evidence if len(ev.template_scores)]
        if not scored:
            record.ClearField("partition")
            return
        width = max(len(ev.template_scores) for ev in scored)
        # Concepts scored under fewer templates are padded with their own mean (no added spread).
        matrix = np.array([list(ev.template_scores) + [float(np.mean(ev.template_scores))] * (width - len(ev.template_scores))
                           for ev in scored])
        result = partition_scores(matrix, namespace.settings.partition_settings(),
                                  [namespace.vocabulary.name(ev.concept_id) for ev in scored], namespace.calibration)
        for ev, state, mean, std in zip(scored, result.states, result.means, result.template_stds):
            ev.state, ev.mean, ev.template_std = int(state), mean, std
        record.partition.CopyFrom(records_pb2.PartitionRecord(
            tau=result.tau, delta=result.delta, sigma_w=result.sigma_w, kappa=result.kappa, degenerate=result.degenerate,
            uncertain_ratio=result.uncertain_ratio, weak=result.weak, method=result.method, parameters=result.parameters,
            note=result.note))

    @staticmethod
    def _encodes_sem(namespace: Namespace) -> bool:
        return namespace.settings.encoder != "none" and "sem" in namespace.spaces

    @staticmethod
    def _checked_vectors(namespace: Namespace, given: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Client vectors validated by the index's rules, so nothing the core would reject
        reaches the store."""
        vectors: dict[str, np.ndarray] = {}
        for space, values in given.items():
            spec = namespace.spaces.get(space)
            if spec is None:
                raise ValueError(f"vectors: unknown vector space {space!r} (namespace has: {', '.join(namespace.spaces)})")
            try:
                array = np.asarray(values, dtype=np.float32)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"vectors[{space!r}]: not an array of numbers ({exc})") from exc
            if array.shape[-1:] != (spec.dim,) or array.ndim > 2 or (not spec.multi and array.size != spec.dim):
                raise ValueError(f"vectors[{space!r}]: expected dimension {spec.dim}, got shape {array.shape}")
            array = array.reshape(-1, spec.dim) if spec.multi else array.reshape(-1)
            if not np.all(np.isfinite(array)):
                raise ValueError(f"vectors[{space!r}]: has a NaN or infinite value; send finite floats")
            if (array.ndim == 1 and not np.any(array)) or (array.ndim == 2 and not np.all(np.any(array, axis=1))):
                raise ValueError(f"vectors[{space!r}]: a vector is all zeros and has no direction; send non-zero vectors")
            vectors[space] = array
        return vectors

    def _needs_sem(self, namespace: Namespace, vectors: Mapping[str, Any]) -> bool:
        return "sem" not in vectors and self._encodes_sem(namespace)

    @staticmethod
    def _sem_text(namespace: Namespace, record: records_pb2.ItemRecord) -> str:
        """Text items carry `sem` from their own text; other items from their serialised state."""
        if record.kind == enums_pb2.ITEM_KIND_TEXT and record.text:
            return record.text
        has, not_has = _states_of(record)
        names = namespace.vocabulary.name
        return serialise_state([names(c) for c in has], [names(c) for c in not_has])

    def _vectors_for(self, namespace: Namespace, record: records_pb2.ItemRecord,
                     given: Mapping[str, Any]) -> dict[str, np.ndarray]:
        vectors = self._checked_vectors(namespace, given)
        if self._needs_sem(namespace, vectors):
            vectors["sem"] = namespace.ensure_encoder().encode([self._sem_text(namespace, record)])[0]
        return vectors

    def _persist_and_index(self, namespace: Namespace, record: records_pb2.ItemRecord, vectors: dict[str, np.ndarray],
                           previous: records_pb2.ItemRecord | None, new_concepts: list[tuple[int, str]]) -> None:
        index_records = self._persist(namespace, [(record, vectors, previous, new_concepts)])
        self._index(namespace, record, vectors, previous, index_records[0])

    def _persist(self, namespace: Namespace, entries: list) -> list[bytes]:
        """Writes (record, vectors, previous, new_concepts) entries in one WriteBatch; returns
        their compact index records."""
        if not entries:
            return []
        if any(new_concepts for *_, new_concepts in entries):
            namespace.index.ensure_concepts(len(namespace.vocabulary))
        spaces = tuple(namespace.spaces)
        started = time.perf_counter()
        index_records = self.store.write_items(namespace.settings.name,
                                               [(record, vectors, previous, spaces if previous else (), new)
                                                for record, vectors, previous, new in entries])
        if self.on_store_write is not None:
            per_item = (time.perf_counter() - started) / len(entries)
            for _ in entries:
                self.on_store_write(per_item)
        return index_records

    def _index_new(self, namespace: Namespace, entries: list[tuple[records_pb2.ItemRecord, dict]],
                   index_records: list[bytes]) -> None:
        """Adds new items to the index in one core call, from the index records just stored."""
        if not entries:
            return
        vectors: dict[str, list] = {}
        for space, spec in namespace.spaces.items():
            empty = np.zeros((0, spec.dim), np.float32) if spec.multi else None
            vectors[space] = [v.get(space, empty) for _, v in entries]
        append_items(namespace, [record.id for record, _ in entries], index_records, vectors)

    def _index(self, namespace: Namespace, record: records_pb2.ItemRecord, vectors: dict[str, np.ndarray],
               previous: records_pb2.ItemRecord | None, index_record: bytes) -> None:
        """Brings the index in step with one written item (new, or replacing `previous`)."""
        if previous is None:
            self._index_new(namespace, [(record, vectors)], [index_record])
            return
        has, not_has = _states_of(record)
        slot = namespace.slot_of[record.id]
        namespace.count_record(previous, slot, -1)
        namespace.index.set_concepts([slot], [has], [not_has])
        for space, spec in namespace.spaces.items():
            value = vectors.get(space)
            if spec.multi:
                namespace.index.set_vectors([slot], space, [value if value is not None else np.zeros((0, spec.dim), np.float32)])
            else:
                namespace.index.set_vectors([slot], space, [value])
        namespace.count_record(record, slot, +1)

    @staticmethod
    def _snapshot(record: records_pb2.ItemRecord) -> records_pb2.StateSnapshot:
        has, not_has = _states_of(record)
        uncertain = [ev.concept_id for ev in record.evidence if ev.state == enums_pb2.CONCEPT_STATE_UNCERTAIN]
        snapshot = records_pb2.StateSnapshot(version=record.version, time_ms=record.updated_ms or record.created_ms,
                                             has=has, not_has=not_has, uncertain=uncertain)
        snapshot.partition.CopyFrom(record.partition)
        return snapshot

    def _maybe_compact(self, namespace: Namespace) -> None:
        tombstones = namespace.index.size - namespace.index.live_count
        if tombstones < max(COMPACT_MIN_TOMBSTONES, COMPACT_AT_TOMBSTONE_SHARE * namespace.index.size):
            return
        namespace.generation += 1  # odd: readers retry until the slot map is renumbered
        try:
            self._compact(namespace)
        finally:
            namespace.generation += 1

    @staticmethod
    def _compact(namespace: Namespace) -> None:
        new_of_old = namespace.index.compact()
        id_of: list[str | None] = [None] * namespace.index.size
        for old, new in enumerate(new_of_old.tolist()):
            if new >= 0:
                id_of[new] = namespace.id_of[old]
        namespace.id_of = id_of
        namespace.slot_of = {item_id: slot for slot, item_id in enumerate(id_of) if item_id is not None}
        remapped: dict[tuple[str, str], set[int]] = defaultdict(set)
        for key, slots in namespace.metadata_slots.items():
            remapped[key] = {int(new_of_old[s]) for s in slots if new_of_old[s] >= 0}
        namespace.metadata_slots = remapped

    def _rebuild(self, record: records_pb2.NamespaceRecord) -> Namespace:
        """Rebuild a namespace's index from RocksDB (start-up)."""
        settings = NamespaceSettings.from_record(record)
        namespace = Namespace(settings, record.created_ms, self.threads)
        if record.HasField("calibration"):
            c = record.calibration
            namespace.calibration = BetaMixture((c.present_a, c.present_b), (c.absent_a, c.absent_b), c.prior,
                                                c.fitted_on, c.supervised, dict(c.concept_priors), c.priors_fitted_on)
        for concept in self.store.concepts(settings.name):
            concept_id, _ = namespace.vocabulary.ensure(concept.name)
            if concept_id != concept.id:
                raise RuntimeError(f"namespace {settings.name!r}: concept ids out of order at {concept.name!r}")
        namespace.index.ensure_concepts(len(namespace.vocabulary))
        loader = RebuildLoader(namespace, self.store.iter_vectors(settings.name))
        ids: list[bytes] = []
        records: list[bytes] = []
        for item_id, record in self.store.iter_index_records(settings.name):
            ids.append(item_id)
            records.append(record)
            if len(ids) >= REBUILD_BATCH:
                self.rebuild_items += loader.load(ids, records)
                ids, records = [], []
        self.rebuild_items += loader.load(ids, records)
        return namespace
