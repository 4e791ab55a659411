"""The local backend: RocksDB (store.py) for durability and the compiled core (namespace_index.py)
for search, in one process. storage/backend.py states the contract it implements."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from polarmem.storage.v1.records_pb2 import ItemRecord, NamespaceRecord
from polarmem_server.domain.settings import ann_from_record
from polarmem_server._core import ConceptAppends, ItemWrites
from polarmem_server.domain.vocabulary import Vocabulary
from polarmem_server.errors import AlreadyExists, FailedPrecondition, NotFound, quoted
from polarmem_server.index import SpaceSpec, grade_input
from polarmem_server.storage.backend import (
    POLARITIES,
    Backend,
    ItemWrite,
    NamespaceCounts,
    SearchHit,
    SearchRequest,
    SearchResult,
)
from polarmem_server.storage.local.ann_files import ANN_DIR, discard, find_saved, prune, save_graphs
from polarmem_server.storage.local.confidence import ConfidenceGrader
from polarmem_server.storage.local.index_record import decode_index_records
from polarmem_server.storage.local.namespace_index import NamespaceIndex
from polarmem_server.storage.local.rebuild import RebuildLoader
from polarmem_server.storage.local.store import EDGE_ALIGN, EDGE_HAS, EDGE_NOT_HAS, Store

REBUILD_BATCH = 20_000
EDGES = dict(zip(POLARITIES, (EDGE_HAS, EDGE_NOT_HAS, EDGE_ALIGN)))
TIERS = {"conflict": 0, "neutral": 0, "entailed": 0}
log = logging.getLogger("polarmem.backend")


def _spaces_of(record: NamespaceRecord) -> tuple[SpaceSpec, ...]:
    return tuple(SpaceSpec(s.name, s.dim, s.multi, s.storage or "fp32") for s in record.spaces)


class _Namespace:
    """The backend's per-namespace state: the search index and the concept bindings."""

    def __init__(self, record: NamespaceRecord, threads: int, store: Store) -> None:
        self.spaces = _spaces_of(record)
        self.ann = ann_from_record(record)  # the graph setting the index was built with
        self.index = NamespaceIndex(record.name, self.spaces, threads, ann=self.ann)
        self.vocabulary = Vocabulary()  # the stored concepts: own names -> dense ids (aliases are the library's)
        # Concepts bound by writes, their records written with the next item batch (the core's).
        self.appends = ConceptAppends(self.vocabulary, self.index.index.core)
        self.saved_writes: int | None = None  # the namespace's write count its saved graphs describe
        self.grade_with(record)
        # New items, written and indexed by the core (the same writer a native Remember calls).
        self.new_items = ItemWrites(
            record.name,
            store.writes,
            self.index.items,
            self.appends,
            [(s.name, s.dim, s.multi) for s in self.spaces],
        )

    def grades_of(self, index_records: list[bytes]) -> tuple | None:
        """The confidence grades of new items from their index records (None: none is scored)."""
        grader = self.index.grader
        if grader is None:
            return None
        return grade_input(grader.batch(decode_index_records(index_records)), len(index_records))

    def grade_with(self, record: NamespaceRecord) -> None:
        """Confidence grades for items indexed from now on follow this record's score model."""
        self.index.grader = ConfidenceGrader(record, lambda: self.vocabulary.names)

    def bind_stored(self, concept_id: int, name: str) -> bool:
        """Binds a concept as the store holds it; False (nothing bound) unless its id is the next one."""
        return concept_id == len(self.vocabulary) and self.vocabulary.bind(name) == concept_id


class LocalBackend(Backend):
    # Where the approximate-index graphs are saved on close and loaded at start-up (ann_files.py);
    # None: this backend neither loads nor saves them.
    ann_root: Path | None = None
    saves_graphs = True  # False: loads saved graphs but never writes them (a read-only replica: the primary does)
    _closed = False
    ranks_by_confidence = True  # the core keeps confidence grades (storage/local/confidence.py)
    searches_in_core = True  # the namespaces' indexes are this process's core objects (front_view)
    _keep_records = False  # keep_records(): the compiled front explains hits from them (a class default: replicas too)
    name = "local"
    ann_kinds = ("hnsw",)  # the compiled core's graphs

    def __init__(
        self,
        path: str | Path,
        durability: str = "sync",
        threads: int = 0,
    ) -> None:
        """The store times its item writes itself (Store.writes.write_times: the metrics)."""
        self.store = Store(path, durability)
        self.threads = threads
        self._namespaces: dict[str, _Namespace] = {}
        self._lock = threading.RLock()
        self._loaded_items = 0
        self.ann_root = self.store.path / ANN_DIR
        started = time.perf_counter()
        for record in self.store.namespaces():
            self._namespaces[record.name] = self._load(record, self.store.namespace_writes(record.name))
        self._load_seconds = time.perf_counter() - started

    @property
    def loaded_items(self) -> int:
        return self._loaded_items

    @property
    def load_seconds(self) -> float:
        return self._load_seconds

    @property
    def ann_startup(self) -> dict[str, str]:
        """How start-up got each namespace's graphs: "loaded" or "rebuilt: <why>"."""
        return self.__dict__.setdefault("_ann_startup", {})

    def flush(self) -> None:
        self.store.flush()

    def close(self) -> None:
        """Saves the approximate-index graphs (ann_files.py), then closes the store. Call once the
        last write has returned: the graphs must describe the store as it is closed."""
        with self._lock:
            if not self._closed and self.ann_root is not None and self.saves_graphs:
                self._save_graphs()
            self._closed = True
            self.store.close()

    def _save_graphs(self) -> None:
        """Writes every namespace's graphs that a checkpoint has not already saved as they are; a
        failure (disk full) only costs the next start-up a rebuild, so it is logged and closing
        goes on."""
        if self.ann_root is None:
            return
        graphs = {name: state for name, state in self._namespaces.items() if state.ann is not None}
        try:
            prune(self.ann_root, set(graphs))
        except OSError as exc:
            log.warning("pruning the saved approximate-index graphs in %s failed (%s)", self.ann_root, exc)
        for name, state in graphs.items():
            self._save_namespace_graphs(name, state)

    def checkpoint_graphs(self, ns: str) -> bool:
        """Saves the namespace's approximate-index graphs when it has taken writes since they were
        last saved (or loaded), so a crash costs no rebuild of what was saved; True when it saved.
        Call only while none of the namespace's writes runs (Memory holds its write lock);
        searches go on meanwhile."""
        if self.ann_root is None or not self.saves_graphs or self._closed:
            return False
        state = self._namespaces.get(ns)
        if state is None or state.ann is None:
            return False
        return self._save_namespace_graphs(ns, state)

    def _save_namespace_graphs(self, name: str, state: _Namespace) -> bool:
        root, ann = self.ann_root, state.ann
        if root is None or ann is None:
            return False  # nowhere to save, or no graphs to save (the callers check)
        writes = self.store.namespace_writes(name)
        if writes == state.saved_writes:
            return False  # saved (or loaded) as it is
        try:
            save_graphs(root, name, state.index, ann, writes)
            if self.store.namespace_writes(name) != writes:  # a write ran meanwhile: the files may not match
                discard(root, name)
                log.warning(
                    "namespace %r: a write ran while its approximate-index graphs were saved: they will be "
                    "rebuilt at the next start-up unless saved again",
                    name,
                )
                return False
        except Exception as exc:  # noqa: BLE001 - serving (or closing) goes on; the next start rebuilds
            log.warning(
                "namespace %r: saving the approximate-index graphs to %s failed (%s): the next start-up "
                "rebuilds them unless a later save succeeds",
                name,
                root,
                exc,
            )
            try:
                discard(root, name)
            except OSError:
                pass
            return False
        state.saved_writes = writes
        return True

    def watch_writes(self, failed, resumed) -> bool:
        self.store.watch_writes(failed, resumed)
        return True

    def resume_writes(self) -> None:
        self.store.try_resume()

    def scrub(self, stopping):
        """Every block of the store read once (storage/local/scrub.py), through the store open now
        (a write failure reopens it)."""
        from polarmem_server.storage.local.scrub import scrub_once

        return scrub_once(self.store._db, stopping)

    def snapshot(self, dest_dir: str):
        """A RocksDB checkpoint of the live store plus its manifest (storage/local/backup.py)."""
        from polarmem_server.storage.local.backup import snapshot

        return snapshot(self.store, dest_dir)

    def index_of(self, ns: str) -> NamespaceIndex:
        """The namespace's in-process search state (tests and benchmarks inspect it)."""
        return self._ns(ns).index

    # ---- namespaces ---------------------------------------------------------------------------

    def namespaces(self) -> list[NamespaceRecord]:
        return self.store.namespaces()

    def create_namespace(self, record: NamespaceRecord) -> None:
        with self._lock:
            if record.name in self._namespaces:
                raise AlreadyExists(f"namespace {quoted(record.name)} already exists")
            state = _Namespace(record, self.threads, self.store)
            if self._keep_records:
                state.index.keep_records()
            self.store.put_namespace(record)
            self._namespaces[record.name] = state

    def update_namespace(self, record: NamespaceRecord) -> None:
        with self._lock:
            state = self._ns(record.name)
            self.store.put_namespace(record)
            state.grade_with(record)  # a new score model grades the items re-partitioned next

    def grade_with(self, record: NamespaceRecord) -> None:
        """Items of the namespace indexed from now on are graded by this record's score model
        (a replica that applies a settings change without writing it)."""
        with self._lock:
            self._ns(record.name).grade_with(record)

    def delete_namespace(self, name: str) -> None:
        with self._lock:
            self._ns(name)
            self.store.delete_namespace(name)
            del self._namespaces[name]

    # ---- concepts -----------------------------------------------------------------------------

    def vocabulary(self, ns: str) -> Vocabulary:
        return self._ns(ns).vocabulary

    def concepts(self, ns: str) -> list[tuple[int, str]]:
        return list(enumerate(self._ns(ns).vocabulary.names))

    def concepts_from(self, ns: str, first_id: int) -> list[tuple[int, str]]:
        return list(enumerate(self._ns(ns).vocabulary.names_from(first_id), first_id))

    def allocate_concepts(self, ns: str, names: Sequence[str]) -> list[int]:
        return self._ns(ns).appends.allocate(list(names))

    # ---- items --------------------------------------------------------------------------------

    def write_items(self, ns: str, writes: Sequence[ItemWrite]) -> None:
        if not writes:
            return
        state = self._ns(ns)
        new = [w.previous is None for w in writes]
        if all(new):
            self._write_new(state, writes)
        elif not any(new):
            self._write_versions(ns, state, writes)
        else:
            raise ValueError("a write batch is all new items or all new versions, not both")

    def _write_new(self, state: _Namespace, writes: Sequence[ItemWrite]) -> None:
        """New items: written and indexed by the core (cpp/include/polarmem/item_writes.hpp)."""
        state.new_items.add(
            [w.record.SerializeToString() for w in writes],
            [list(w.vectors.items()) for w in writes],
            state.grades_of,
        )

    def _write_versions(self, ns: str, state: _Namespace, writes: Sequence[ItemWrite]) -> None:
        """Stored items' next versions: one batch, then each slot brought in step."""
        spaces = tuple(s.name for s in state.spaces)
        pending = state.appends.take()
        serialised = [w.record.SerializeToString() for w in writes]
        previous = [w.previous.SerializeToString() for w in writes if w.previous is not None]
        entries = [
            (record, w.vectors, before, spaces, pending if i == 0 else ())
            for i, (w, record, before) in enumerate(zip(writes, serialised, previous))
        ]
        try:
            self.store.write_items(ns, entries)
        except Exception:
            state.appends.put_back(pending)  # not written: the next batch writes them
            raise
        for write, record, before in zip(writes, serialised, previous):
            state.index.replace(before, record, write.vectors)

    def delete_item(self, ns: str, record: ItemRecord) -> None:
        state = self._ns(ns)
        if not state.index.contains(record.id):
            raise NotFound(f"item {quoted(record.id)} does not exist in namespace {quoted(ns)}")
        serialised = record.SerializeToString()
        self.store.delete_item(ns, serialised, tuple(s.name for s in state.spaces))
        state.index.remove(serialised)

    def write_times(self) -> tuple[list[float], list[int], float]:
        return self.store.writes.write_times()

    def note_writer(self, ns: str) -> tuple[ItemWrites, ConceptAppends] | None:
        state = self._ns(ns)
        return state.new_items, state.appends

    def front_view(self, ns: str) -> tuple[Any, Any, Any, Any] | None:
        target = self._ns(ns).index
        return target.index.core, target.ids, target.metadata, target.records

    def keep_records(self) -> None:
        """Hold every namespace's item records by slot in the core from now on, for the core's
        explained Recalls (library/core_recall.py; ~the records' size in memory)."""
        with self._lock:
            self._keep_records = True
            for state in self._namespaces.values():
                state.index.keep_records()

    def records_to_read(self, ns: str) -> int:
        target = self._ns(ns).index
        return 0 if target.records is None else max(0, target.index.live_count - target.records.count)

    def read_back_records(self, ns: str, after: str | None, limit: int) -> str | None:
        target = self._ns(ns).index
        ids: list[str] = []
        values: list[bytes | None] = []
        for key, value in self.store.iter_item_bytes(ns, None if after is None else after.encode()):
            ids.append(key.decode())
            values.append(value)
            if len(ids) == limit:
                break
        target.fill_records(ids, values)  # only slots that hold none: a write since keeps its own
        if len(ids) == limit:
            return ids[-1]
        if self.records_to_read(ns):
            # The scan ended short of items the core still lacks: a damaged block ends it without a
            # word. Read those by id, which states the damage (DataLoss) or fills them.
            records = target.records
            assert records is not None  # (records_to_read is 0 where none are kept)
            missing = [item_id for item_id, slot in target.slot_map().items() if records.get(slot) is None]
            for first in range(0, len(missing), limit):
                self.get_items(ns, missing[first : first + limit])
        return None

    def contains(self, ns: str, item_id: str) -> bool:
        return self._ns(ns).index.contains(item_id)

    def get_items(self, ns: str, item_ids: Sequence[str]) -> list[ItemRecord | None]:
        self._ns(ns)
        if not item_ids:
            return []
        # One RocksDB multi-get for the whole list rather than a point read per id, on the store's
        # key layout (Store.get_item's key: namespace, NUL, item id).
        prefix = ns.encode() + b"\x00"
        values = self.store.multi_get("items", [prefix + item_id.encode() for item_id in item_ids])
        self._ns(ns).index.fill_records(item_ids, values)  # for the compiled front's explanations
        return [None if data is None else ItemRecord.FromString(data) for data in values]

    def get_vectors(self, ns: str, item_id: str) -> dict[str, np.ndarray]:
        state = self._ns(ns)
        return self.store.get_vectors(ns, item_id, {s.name: s.dim for s in state.spaces})

    def iter_items(self, ns: str) -> Iterator[ItemRecord]:
        self._ns(ns)
        return self.store.iter_items(ns)

    def items_by_concept(self, ns: str, concept_id: int, polarity: str, after: str = "", limit: int = 100) -> list[str]:
        self._ns(ns)
        return self.store.items_by_concept(ns, EDGES[polarity], concept_id, after, limit)

    def counts(self, ns: str) -> NamespaceCounts:
        return self._ns(ns).index.counts()

    # ---- search -------------------------------------------------------------------------------

    def search(self, ns: str, request: SearchRequest) -> SearchResult:
        target = self._ns(ns).index
        kinds = [{1: "visual", 2: "text"}[k] for k in request.kinds] or None

        def read(resolve, allow_for) -> SearchResult:
            allow = allow_for(request.metadata_equals)
            if request.absent_verified:
                verified = target.index.slots_with((), request.forbidden)
                allow = (
                    verified
                    if allow is None
                    else np.intersect1d(verified, np.asarray(allow, dtype=np.int64), assume_unique=True)
                )
            if allow is not None and len(allow) == 0:
                return SearchResult([], dict(TIERS))
            core_request = target.index.request(
                request.vectors,
                request.required,
                request.forbidden,
                k=request.k,
                mode=request.mode,
                soft_lambda=request.soft_lambda,
                exclude_conflicts=request.exclude_conflicts,
                kinds=kinds,
                allow=allow,
                weights=request.weights or None,
                exact=request.exact,
                ef_search=request.ef_search,
                present_level=request.present_level,
                absent_level=request.absent_level,
                present_weight=request.present_weight,
                absent_weight=request.absent_weight,
            )
            hits = target.index.search_requests(core_request)
            found = [
                SearchHit(item_id, tier, score)
                for item_id, tier, score in zip(resolve(hits.slots), hits.tiers.tolist(), hits.scores.tolist())
                if item_id is not None
            ]
            return SearchResult(found, hits.tier_counts)

        return target.consistent(read)

    # ---- internals ----------------------------------------------------------------------------

    def _ns(self, name: str) -> _Namespace:
        state = self._namespaces.get(name)
        if state is None:
            raise NotFound(f"namespace {quoted(name)} does not exist; create it first")
        return state

    def _load(self, record: NamespaceRecord, writes: int | None = None) -> _Namespace:
        """A namespace's search state from RocksDB (start-up), with its approximate-index graphs
        loaded from their saved files when those match the store after the namespace's ``writes``
        writes (Store.namespace_writes), rebuilt otherwise (always without a count or an ann_root)."""
        ann = ann_from_record(record)
        saved, why = None, "no saved graph"
        if ann is not None and self.ann_root is not None and writes is not None:
            saved, why = find_saved(self.ann_root, record.name, _spaces_of(record), ann, writes)
        state, items = self._rebuild(record, defer_graphs=saved is not None)
        if saved is not None:
            try:
                saved.install(state.index)
                state.saved_writes = writes
                self.ann_startup[record.name] = "loaded"
                self._loaded_items += items
                return state
            except Exception as exc:  # noqa: BLE001 - any refusal of the file means: rebuild
                why = f"saved graph refused ({exc})"
                state, items = self._rebuild(record, defer_graphs=False)
        if ann is not None:
            self.ann_startup[record.name] = f"rebuilt: {why}"
            log.info("namespace %r: approximate index rebuilt (%s)", record.name, why)
        self._loaded_items += items
        return state

    def _rebuild(self, record: NamespaceRecord, defer_graphs: bool) -> tuple[_Namespace, int]:
        """Adds every stored item of a namespace to a new search state; with ``defer_graphs`` its
        graphs take none of them (a saved graph is loaded next). Returns the state and item count."""
        state = _Namespace(record, self.threads, self.store)
        if self._keep_records:
            state.index.keep_records()
        if defer_graphs:
            state.index.index.defer_ann()
        for concept in self.store.concepts(record.name):
            if not state.bind_stored(concept.id, concept.name):
                raise FailedPrecondition(f"namespace {record.name!r}: concept ids out of order at {concept.name!r}")
        state.index.index.ensure_concepts(len(state.vocabulary))
        loader = RebuildLoader(state.index, self.store.iter_vectors(record.name))
        ids: list[bytes] = []
        records: list[bytes] = []
        items = 0
        for item_id, index_record in self.store.iter_index_records(record.name):
            ids.append(item_id)
            records.append(index_record)
            if len(ids) >= REBUILD_BATCH:
                items += loader.load(ids, records)
                ids, records = [], []
        items += loader.load(ids, records)
        return state, items
