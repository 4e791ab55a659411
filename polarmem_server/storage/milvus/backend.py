"""The Milvus backend (storage/backend.py's contract over a Milvus 2.3 server or cluster).

No state lives in the PolarMem process beyond a connection and collection handles: namespace
records, concept bindings and items are all in Milvus, so any number of PolarMem processes can
serve the same namespaces. A write returns only after Milvus acknowledged it, and notes the
timestamp Milvus gave it (storage/consistency.py: the response's consistency token).

Consistency of reads: namespace records and concept bindings are always read Strong (the
concept claim protocol, concepts.py, and the existence checks of namespace creation need every
acknowledged write). Item reads are Strong too — what a write reads to check what is stored —
except inside a read block of storage/consistency.py (Recall, GetItem, ListItems): there they
run at that block's level, Bounded (Milvus's common.gracefulTime), Strong, or "Customized" with
the token's timestamp as Milvus's guarantee timestamp (the query node waits until it has
consumed every write up to it, then reads). docs/deployment.md, "Consistency", has the model.

A namespace's items live in a collection of its own, or (``MilvusSettings.layout = "shared"``)
in its partition of one collection per vector dimension, or (``"pooled"``) in one collection per
vector dimension, told apart by their ``ns`` field alone (schema.py has the three and why). The
layout is where the creating process put them and is found again on open, so servers of any
setting serve every namespace.

Search runs the lexicographic ranking as tiered filtered searches on the namespace's vector
index (inner product over unit vectors = cosine): entailed (+1), then neutral (0), then
conflict (-1) unless excluded, each asked for at most the hits still missing, stopping when k
are filled (``hard``); ``soft`` and ``off`` take each tier's top k and merge them by score
(exact: the overall top k lies inside the union of the per-tier top k). Equal scores are
ordered by item id — the order the local backend gives after a restart (slots in id order).

The index is FLAT (exact) unless the namespace asked for an approximate index (``config.ann``,
kind ``ivf``): then IVF_FLAT with the namespace's ``nlist``. The tiers stay separate filtered
searches, so the index only ever orders items within a tier. An exact recall probes every list,
which reads every row of the tier like FLAT and is exact (IVF_FLAT keeps the raw vectors); an
approximate one probes ``nprobe`` lists. HNSW is not offered: Milvus 2.3 keeps one index per
vector field and cannot search an HNSW index exactly, so an exact recall could not keep its
guarantee. Recent writes sit in growing segments, which Milvus 2.3.5 searched by brute force in
every probe (16,384 growing rows: recall 1.0 at nprobe 2 of 64, while sealed: 0.28), with its
interim index setting at the default: exact recalls stay exact for them too.
"""

from __future__ import annotations

import base64
import contextvars
import math
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from polarmem.storage.v1.records_pb2 import ItemRecord, NamespaceRecord
from polarmem_server.domain.settings import ann_from_record
from polarmem_server.errors import AlreadyExists, InvalidArgument, NotFound, Unavailable, quoted
from polarmem_server.index import TIER_NAMES, AnnSpec
from polarmem_server.storage.backend import Backend, ItemWrite, NamespaceCounts, SearchHit, SearchRequest, SearchResult
from polarmem_server.storage import consistency
from polarmem_server.storage.milvus import expressions as ex
from polarmem_server.storage.milvus import schema
from polarmem_server.storage.milvus.concepts import PAGE, ConceptBindings
from polarmem_server.storage.milvus.connection import Connection, MilvusSettings, import_pymilvus

STRONG = {"consistency_level": "Strong"}
BOUNDED = {"consistency_level": "Bounded"}  # Milvus sets the bound: common.gracefulTime


def item_read() -> dict:
    """The consistency kwargs of an item read now (storage/consistency.py's level)."""
    level = consistency.read_level()
    if level.kind == "at":  # pymilvus 2.3 passes guarantee_timestamp through only for Customized
        return {"consistency_level": "Customized", "guarantee_timestamp": level.timestamp}
    return BOUNDED if level.kind == "bounded" else STRONG


def noted(result, clock=None):
    """A Milvus MutationResult, its timestamp noted for the request's consistency token (`clock`:
    what gives a later one when Milvus gave none)."""
    consistency.note_write(getattr(result, "timestamp", 0), clock)
    return result


HAS, NOT_HAS = 1, 2  # polarmem.common.v1.ConceptState values (enums.proto)
FETCH_BATCH = 1000
MAX_TOP_K = 16_384  # Milvus's topk limit per search
FLAT_INDEX = {"index_type": "FLAT", "metric_type": "IP", "params": {}}
LOAD_TIMEOUT_S = 300.0
SEARCH_THREADS = 16  # concurrent Milvus calls of all searches together (counts + first tier: 4 per search)
PROBE_TIMEOUT_S = 3  # an int: pymilvus retries for about an hour when given a float
# The namespaces collection's row whose writes give deletes a timestamp (MilvusBackend._clock);
# never a namespace name (domain/settings.py: names start with a letter or digit).
CLOCK_ROW = "~clock"


def encode_record(message) -> str:
    text = base64.b64encode(message.SerializeToString()).decode()
    if len(text) > schema.MAX_RECORD_CHARS:
        raise InvalidArgument(
            f"record of {quoted(getattr(message, 'id', '') or message.name)} is "
            f"{len(text)} characters encoded, over the Milvus backend's {schema.MAX_RECORD_CHARS}; "
            "keep fewer concepts, history or text per item"
        )
    return text


def unit(vector: np.ndarray) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def ivf_setting(record: NamespaceRecord) -> AnnSpec | None:
    """The namespace's ivf index, if it has one. (An "hnsw" setting stored by a server before
    Milvus refused it was never built: such a namespace stays FLAT and exact.)"""
    return ann_from_record(record) if record.HasField("ann") and record.ann.kind == "ivf" else None


def vector_index(record: NamespaceRecord) -> dict:
    """The Milvus index a namespace's collection carries: FLAT, or IVF_FLAT for `config.ann`."""
    ivf = ivf_setting(record)
    if ivf is None:
        return FLAT_INDEX
    return {"index_type": "IVF_FLAT", "metric_type": "IP", "params": {"nlist": ivf.nlist}}


class _Namespace:
    """Handles of one namespace's collection (cached; the truth is in Milvus). In the shared
    layout the collection holds other namespaces too: every call names this one's partition,
    every expression also tests ``ns == …``, and rows are keyed by ``pk`` (schema.py). The pooled
    layout is the shared one without the partition: the ``ns`` test alone scopes every call, on
    ``tag`` (schema.pooled_tag: the name and the creation time) rather than the name."""

    def __init__(
        self,
        name: str,
        collection,
        space: str,
        dim: int,
        ann: AnnSpec | None,
        shared: bool,
        partitioned: bool = True,
        tag: str = "",
    ) -> None:
        self.name = name
        self.collection = collection
        self.space = space
        self.dim = dim
        self.ann = ann  # None: FLAT
        self.shared = shared
        self.tag = tag or name  # the rows' ns value
        self.scope = f"ns == {ex.literal(self.tag)}" if shared else ""
        partition = schema.namespace_partition(name)
        self.partitions = [partition] if shared and partitioned else None  # query / search: partition_names
        self.into = {"partition_name": partition} if shared and partitioned else {}  # upsert / delete

    def where(self, expr: str = "") -> str:
        """`expr` within this namespace; every row of it when `expr` is empty."""
        return ex.both(self.scope, expr) or "id != \"\""

    def keys(self, item_ids: Sequence[str]) -> str:
        """The primary-key expression for these items (what Milvus deletes by)."""
        if self.shared:
            return f"pk in {ex.strings([schema.shared_key(self.name, i) for i in item_ids])}"
        return f"id in {ex.strings(item_ids)}"

    def key_columns(self, item_id: str) -> list:
        """The leading columns of a row: (pk, ns) in the shared layout, none otherwise."""
        return [schema.shared_key(self.name, item_id), self.tag] if self.shared else []

    def search_params(self, exact: bool, effort: int) -> dict:
        """Milvus search params: exact probes every IVF list (as FLAT, every row of the tier)."""
        if self.ann is None:
            return {"metric_type": "IP", "params": {}}
        nprobe = self.ann.nlist if exact else min(self.ann.nlist, effort or self.ann.nprobe)
        return {"metric_type": "IP", "params": {"nprobe": nprobe}}


class MilvusBackend(Backend):
    shared = True  # any number of PolarMem processes serve the same namespaces

    @property
    def name(self) -> str:  # type: ignore[override]  # the base's class attribute is only a default
        return "milvus" if self.settings.layout == "collection" else f"milvus ({self.settings.layout} layout)"

    @property
    def ann_kinds(self) -> tuple[str, ...]:  # type: ignore[override]  # as `name`
        """ivf (see the module docstring: exact recall on an HNSW index is impossible here); none
        in the shared and pooled layouts, whose one FLAT index serves every namespace of a dimension."""
        return ("ivf",) if self.settings.layout == "collection" else ()

    ann_note = (
        "its one FLAT index serves every namespace of a dimension; a server with --milvus-layout "
        "collection creates namespaces that can have one"
    )

    def __init__(self, settings: MilvusSettings | None = None) -> None:
        pymilvus = import_pymilvus()
        self.settings = settings or MilvusSettings()
        self._Collection = pymilvus.Collection
        self._utility = pymilvus.utility
        self.connection = Connection(self.settings)
        # Per call. pymilvus bounds its retries by `timeout` only when it is an int; otherwise it
        # retries an unreachable server up to 75 times with back-off up to 60 s (about an hour).
        self._t = {"timeout": max(1, math.ceil(self.settings.timeout_s))}
        self._closed = False
        self._lock = threading.Lock()
        self._handles: dict[str, _Namespace] = {}
        self._pools: dict[int, object] = {}  # the pooled layout's collections by dimension (never dropped)
        self._pool = ThreadPoolExecutor(max_workers=SEARCH_THREADS, thread_name_prefix="polarmem-milvus")
        self._meta = self._ensure(
            schema.namespaces_collection(self.settings.prefix), schema.namespaces_schema(), "placeholder"
        )
        concepts = self._ensure(
            schema.concepts_collection(self.settings.prefix), schema.concepts_schema(), "placeholder"
        )
        self.bindings = ConceptBindings(concepts, self._call, self._t["timeout"])

    def close(self) -> None:
        self._closed = True
        self._pool.shutdown(wait=False)
        self.connection.close()

    def reachable(self) -> bool:
        """One small Strong read of the namespaces collection, bounded by PROBE_TIMEOUT_S: it
        fails while Milvus is down and while a restarted Milvus is still loading collections."""
        if self._closed:
            return False
        try:
            self._meta.query("name != \"\"", output_fields=["name"], limit=1, timeout=PROBE_TIMEOUT_S, **STRONG)
            return True
        except Exception:  # noqa: BLE001 - any failure means "not now"
            return False

    # ---- namespaces ---------------------------------------------------------------------------

    def namespaces(self) -> list[NamespaceRecord]:
        rows = self._query(
            self._meta, f"name != \"\" and name != {ex.literal(CLOCK_ROW)}", ["record"], "list namespaces"
        )
        records = sorted(
            (NamespaceRecord.FromString(base64.b64decode(r["record"])) for r in rows), key=lambda r: r.name
        )
        self._forget_stale_handles(records)
        return records

    def namespace_record(self, name: str) -> NamespaceRecord | None:
        return self._record(name)

    def create_namespace(self, record: NamespaceRecord) -> None:
        spaces = list(record.spaces)
        if len(spaces) != 1 or spaces[0].multi:
            raise InvalidArgument(
                f"namespace {quoted(record.name)}: the Milvus backend (Milvus 2.3: one vector field "
                "per collection) holds exactly one single-vector space; declare one space, e.g. "
                "'sem', or use the local backend"
            )
        if record.HasField("ann") and record.ann.kind not in self.ann_kinds:  # Memory says why first
            raise InvalidArgument(
                f"namespace {quoted(record.name)}: config.ann.kind {quoted(record.ann.kind)} is not "
                f"built by the {self.name} backend"
            )
        with self._lock:
            if self._record(record.name) is not None:
                raise AlreadyExists(f"namespace {quoted(record.name)} already exists")
            if self.settings.layout == "pooled":  # no Milvus DDL: the record is the namespace
                self._pooled(spaces[0].name, spaces[0].dim)
            elif self.settings.layout == "shared":
                self._shared(spaces[0].name, spaces[0].dim, schema.namespace_partition(record.name))
            else:
                name = schema.items_collection(self.settings.prefix, record.name)
                self._ensure(name, schema.items_schema(spaces[0].name, spaces[0].dim), "vec", vector_index(record))
            self._put_record(record)

    def update_namespace(self, record: NamespaceRecord) -> None:
        self._require(record.name)
        self._put_record(record)

    def delete_namespace(self, name: str) -> None:
        with self._lock:
            self._require(name)
            target = self._ns(name)
            if target.shared and target.partitions is None:  # pooled: its rows, before the record goes
                self._call(lambda: target.collection.delete(target.where(), **self._t), "delete namespace items")
            elif target.shared and target.partitions:  # its partition (a loaded one is released before the drop)
                partition = target.partitions[0]

                def drop():
                    if target.collection.has_partition(partition, **self._t):
                        target.collection.partition(partition).release(**self._t)  # this one, not the collection
                        target.collection.drop_partition(partition, **self._t)

                self._call(drop, "drop namespace partition")
            else:
                collection = schema.items_collection(self.settings.prefix, name)
                self._call(
                    lambda: self._utility.drop_collection(collection, using=self.connection.alias, **self._t),
                    "drop namespace collection",
                )
            self.bindings.delete_namespace(name)
            self._call(lambda: self._meta.delete(f"name in [{ex.literal(name)}]", **self._t), "delete namespace")
            self._handles.pop(name, None)

    # ---- concepts -----------------------------------------------------------------------------

    def concepts(self, ns: str) -> list[tuple[int, str]]:
        self._require(ns)
        return self.bindings.bound(ns)

    def concepts_of(self, names: Sequence[str]) -> dict[str, list[tuple[int, str]]]:
        everywhere = self.bindings.bound_everywhere()
        return {name: everywhere.get(name, []) for name in names}

    def concepts_from(self, ns: str, first_id: int) -> list[tuple[int, str]]:
        self._require(ns)
        return self.bindings.bound_from(ns, first_id)

    def allocate_concepts(self, ns: str, names: Sequence[str]) -> list[int]:
        self._require(ns)
        return self.bindings.allocate(ns, names)

    # ---- items --------------------------------------------------------------------------------

    def write_items(self, ns: str, writes: Sequence[ItemWrite]) -> None:
        if not writes:
            return
        target = self._ns(ns)
        ids = [w.record.id for w in writes]
        for item_id in ids:
            schema.check_item_id(item_id)
        stored = set(self._existing(target, ids, STRONG))  # a write checks against every acknowledged one
        for write in writes:  # re-checked here: another process may have written since the library looked
            if write.previous is None and write.record.id in stored:
                raise AlreadyExists(f"item {quoted(write.record.id)} already exists in namespace {quoted(ns)}")
            if write.previous is not None and write.record.id not in stored:
                raise NotFound(f"item {quoted(write.record.id)} does not exist in namespace {quoted(ns)}")
        rows = [self._row(target, w) for w in writes]
        columns = [list(column) for column in zip(*rows)]
        # upsert = delete + insert under one timestamp: each item is replaced wholly or not at all
        noted(self._call(lambda: target.collection.upsert(columns, **target.into, **self._t), "write items"))

    def delete_item(self, ns: str, record: ItemRecord) -> None:
        target = self._ns(ns)
        if not self._existing(target, [record.id], STRONG):
            raise NotFound(f"item {quoted(record.id)} does not exist in namespace {quoted(ns)}")
        noted(
            self._call(
                lambda: target.collection.delete(target.keys([record.id]), **target.into, **self._t), "delete item"
            ),
            self._clock,
        )

    def contains(self, ns: str, item_id: str) -> bool:
        return bool(self._existing(self._ns(ns), [item_id]))

    def stored_ids(self, ns: str, item_ids: Sequence[str]) -> set[str]:
        target = self._ns(ns)
        return set(self._existing(target, list(dict.fromkeys(item_ids))))

    def get_items(self, ns: str, item_ids: Sequence[str]) -> list[ItemRecord | None]:
        target = self._ns(ns)
        found: dict[str, ItemRecord] = {}
        for start in range(0, len(item_ids), FETCH_BATCH):
            chunk = list(dict.fromkeys(item_ids[start : start + FETCH_BATCH]))
            for row in self._query(
                target.collection,
                target.where(f"id in {ex.strings(chunk)}"),
                ["id", "record"],
                "read items",
                target.partitions,
                item_read(),
            ):
                found[row["id"]] = ItemRecord.FromString(base64.b64decode(row["record"]))
        return [found.get(item_id) for item_id in item_ids]

    def get_vectors(self, ns: str, item_id: str) -> dict[str, np.ndarray]:
        target = self._ns(ns)
        rows = self._query(
            target.collection,
            target.where(f"id in [{ex.literal(item_id)}]"),
            ["vec", "has_vector"],
            "read vectors",
            target.partitions,
            item_read(),
        )
        if not rows or not rows[0]["has_vector"]:
            return {}
        return {target.space: np.asarray(rows[0]["vec"], dtype=np.float32).reshape(1, -1)}

    def iter_items(self, ns: str) -> Iterator[ItemRecord]:
        target = self._ns(ns)
        ids = sorted(
            r["id"]
            for r in self._query(
                target.collection, target.where(), ["id"], "list items", target.partitions, item_read()
            )
        )
        for start in range(0, len(ids), FETCH_BATCH):
            for record in self.get_items(ns, ids[start : start + FETCH_BATCH]):
                if record is not None:  # forgotten since the listing
                    yield record

    def items_by_concept(self, ns: str, concept_id: int, polarity: str, after: str = "", limit: int = 100) -> list[str]:
        target = self._ns(ns)
        expr = f"array_contains({polarity}, {int(concept_id)})"
        if after:
            expr += f" and id > {ex.literal(after)}"
        ids = sorted(
            r["id"]
            for r in self._query(
                target.collection, target.where(expr), ["id"], "list items by concept", target.partitions, item_read()
            )
        )
        return ids[:limit]

    def counts(self, ns: str) -> NamespaceCounts:
        target = self._ns(ns)
        kinds: dict[int, int] = {}
        concepts: dict[str, dict[int, int]] = {"has": {}, "not_has": {}, "align": {}}
        scored = 0
        for row in self._query(
            target.collection,
            target.where(),
            ["kind", "has", "not_has", "align", "scored"],
            "count items",
            target.partitions,
            item_read(),
        ):
            kinds[int(row["kind"])] = kinds.get(int(row["kind"]), 0) + 1
            scored += int(row["scored"])
            for polarity, bucket in concepts.items():
                for concept_id in row[polarity]:
                    bucket[int(concept_id)] = bucket.get(int(concept_id), 0) + 1
        return NamespaceCounts(kinds, concepts, scored)

    # ---- search -------------------------------------------------------------------------------

    def search(self, ns: str, request: SearchRequest) -> SearchResult:
        target = self._ns(ns)
        if request.k > MAX_TOP_K:
            raise InvalidArgument(f"k={request.k} is over the Milvus backend's {MAX_TOP_K}; ask for fewer")
        base = ex.filters(request.kinds, request.metadata_equals, request.forbidden, request.absent_verified)
        required, forbidden = list(request.required), list(request.forbidden)
        vector = request.vectors.get(target.space)
        weight = float(request.weights.get(target.space, 1.0)) if vector is not None else 0.0
        # The tier counts and the first tier's ranking go to Milvus at once (one round trip of
        # latency instead of several); later tiers are searched only when earlier ones leave room.
        # The tiers partition the filtered items, so the neutral count is the filtered count less
        # the other two: a scalar pass (or none) instead of a third pass over the concept arrays,
        # which is what a count costs (at 1,000,000 rows a tier's count 27-126 ms, all rows 6 ms).
        pending = {}
        tiers = []
        for level in (1, 0, -1):
            expr = ex.tier(level, required, forbidden)
            if expr is not None and level != 0:
                pending[TIER_NAMES[level]] = self._submit(self._count, target, ex.both(base, expr))
            if expr is not None and not (level == -1 and request.exclude_conflicts):
                tiers.append((level, ex.both(base, expr)))
        filtered = self._submit(self._count, target, base)
        params = target.search_params(request.exact, request.ef_search)
        records = request.with_records
        first = (
            self._submit(self._rank, target, tiers[0][1], vector, weight, request.k, params, records) if tiers else None
        )
        counts = {name: 0 for name in TIER_NAMES.values()}
        for name, future in pending.items():
            counts[name] = future.result()
        # Each count reads at the call's level but not at one snapshot (Milvus 2.3 has no pinned
        # read timestamp), so under concurrent writes the difference could dip below zero.
        counts["neutral"] = max(0, filtered.result() - counts["entailed"] - counts["conflict"])
        # Every later tier the counts say the answer reaches is ranked at once, in one more round
        # trip (a namespace of a few items needs all three: one after another they were three
        # round trips). Each is ranked for k: its top `want` is its top k's first `want` (ties by
        # id), so a tier that brings fewer hits than counted (an approximate IVF search, a delete
        # between the calls) leaves room that the tiers after it fill, in order, as before.
        hard = request.mode == "hard"
        ranked = {}
        room = request.k
        for position, (level, expr) in enumerate(tiers[1:], start=1):
            room -= min(counts[TIER_NAMES[tiers[position - 1][0]]], room) if hard else 0
            if room <= 0:
                break
            if counts[TIER_NAMES[level]]:
                ranked[position] = self._submit(self._rank, target, expr, vector, weight, request.k, params, records)
        hits: list[SearchHit] = []
        for position, (level, expr) in enumerate(tiers):
            if counts[TIER_NAMES[level]] == 0:
                continue
            want = request.k - len(hits) if hard else request.k
            if want <= 0:
                break
            if position == 0:
                assert first is not None  # submitted whenever there is a tier 0
                tier_hits = first.result()
            elif position in ranked:
                tier_hits = ranked.pop(position).result()
            else:  # room the counts did not foresee
                tier_hits = self._rank(target, expr, vector, weight, want, params, records)
            for item_id, similarity, record in tier_hits[:want]:
                hits.append(SearchHit(item_id, level, similarity, record=record))
        for unused in ranked.values():
            unused.cancel()
        if request.mode != "hard":  # soft ranks by s_sem + λ·tier but reports s_sem, as the core does
            bonus = request.soft_lambda if request.mode == "soft" else 0.0
            hits.sort(key=lambda h: (-(h.score + bonus * h.tier), h.item_id))
        return SearchResult(hits[: request.k], counts)

    def _rank(
        self, target: _Namespace, expr: str, vector, weight: float, k: int, params: dict, records: bool = False
    ) -> list[tuple[str, float, ItemRecord | None]]:
        """The tier's top k by weighted cosine, ties by id, as (id, score, record): with `records`
        each hit's record comes with it (one round trip less for an explained Recall), else None.
        Milvus cuts a tie group at k in an order of its own, so one more hit than needed is asked
        for, and when the cut falls inside a group of equal scores the tier is read to Milvus's
        limit before sorting (without records: the caller reads the few it keeps)."""

        def decoded(entity) -> ItemRecord | None:
            return ItemRecord.FromString(base64.b64decode(entity.get("record"))) if records else None

        fields = ["id"] + (["record"] if records else [])
        if vector is None:  # no similarity: every item scores 0, order by id
            rows = self._query(
                target.collection, target.where(expr), fields, "rank items", target.partitions, item_read()
            )
            return [(row["id"], 0.0, decoded(row)) for row in sorted(rows, key=lambda row: row["id"])[:k]]
        query = unit(vector).tolist()

        def nearest(limit: int, with_records: bool) -> list[tuple[str, float, ItemRecord | None]]:
            wanted = fields if with_records else ["id"]
            result = self._call(
                lambda: target.collection.search(
                    [query],
                    "vec",
                    params,
                    limit=limit,
                    expr=ex.both(target.scope, expr) or None,
                    output_fields=wanted if (target.shared or with_records) else None,
                    partition_names=target.partitions,
                    **item_read(),
                    **self._t,
                ),
                "search",
            )[0]
            return [
                (
                    hit.entity.get("id") if target.shared else hit.id,
                    float(hit.distance),
                    decoded(hit.entity) if with_records else None,
                )
                for hit in result
            ]

        found = nearest(min(k + 1, MAX_TOP_K), records)
        if len(found) > k and abs(found[k][1] - found[k - 1][1]) <= 1e-6:
            found = nearest(MAX_TOP_K, False)  # a tie straddles the cut: read the whole group, keep the lowest ids
        found.sort(key=lambda hit: (-round(hit[1], 6), hit[0]))
        return [(item_id, weight * similarity, record) for item_id, similarity, record in found[:k]]

    # ---- internals ----------------------------------------------------------------------------

    def _submit(self, fn, *args):
        """`fn` on the search pool, in a copy of the caller's context (its read level)."""
        return self._pool.submit(contextvars.copy_context().run, fn, *args)

    def _call(self, fn, what: str):
        if self._closed:
            raise Unavailable("the Milvus backend is closed")
        return self.connection.call(fn, what)

    def _ensure(self, name: str, collection_schema, vector_field: str, index: dict = FLAT_INDEX, **create):
        """Opens a collection, creating, indexing (with `index`) and loading it if needed
        (idempotent, so processes starting at once agree)."""

        def open_():
            if self._utility.has_collection(name, using=self.connection.alias, **self._t):
                collection = self._Collection(name, using=self.connection.alias)
            else:
                collection = self._Collection(
                    name,
                    collection_schema,
                    using=self.connection.alias,
                    consistency_level="Strong",
                    **create,
                    **self._t,
                )
            if not collection.has_index():
                collection.create_index(vector_field, index, **self._t)
            collection.load(timeout=int(max(self.settings.timeout_s, LOAD_TIMEOUT_S)))  # loading a big one takes long
            return collection

        return self._call(open_, f"open collection {name}")

    def _shared(self, space: str, dim: int, partition: str | None = None):
        """The shared layout's collection for vectors of `dim` (created on first use), with
        `partition` created in it if given (a new partition of a loaded collection is loaded)."""
        collection = self._ensure(
            schema.shared_collection(self.settings.prefix, dim), schema.items_schema(space, dim, shared=True), "vec"
        )
        if partition is not None:

            def create():
                if not collection.has_partition(partition, **self._t):
                    collection.create_partition(partition, **self._t)
                collection.load(partition_names=[partition], timeout=int(max(self.settings.timeout_s, LOAD_TIMEOUT_S)))

            self._call(create, "create namespace partition")
        return collection

    def _forget_stale_handles(self, records: Sequence[NamespaceRecord]) -> None:
        """A pooled namespace that another process deleted and created again has a new tag: the
        handle cached here for the old one goes when the records are next read (every 2 s by the
        settings refresher, which then adopts the new settings and vocabulary), so this process
        stops reading and writing the old one's rows (which no one sees)."""
        created = {record.name: record.created_ms for record in records}
        for name, handle in list(self._handles.items()):
            if handle.tag != name and (name not in created or handle.tag != schema.pooled_tag(name, created[name])):
                self._handles.pop(name, None)

    def _pooled(self, space: str, dim: int):
        """The pooled layout's collection for vectors of `dim` (created on first use; cached, as
        no namespace's deletion drops it)."""
        collection = self._pools.get(dim)
        if collection is None:
            collection = self._pools[dim] = self._ensure(
                schema.pooled_collection(self.settings.prefix, dim), schema.items_schema(space, dim, shared=True), "vec"
            )
        return collection

    def _layout_of(self, name: str, dim: int) -> str:
        """Where the namespace's items are: its own collection, its partition of the shared
        collection, or else the pooled collection (three metadata calls, once per process)."""

        def has(collection: str) -> bool:
            return self._utility.has_collection(collection, using=self.connection.alias, **self._t)

        def find() -> str:
            if has(schema.items_collection(self.settings.prefix, name)):
                return "collection"
            shared = schema.shared_collection(self.settings.prefix, dim)
            if has(shared) and self._utility.has_partition(
                shared, schema.namespace_partition(name), using=self.connection.alias, **self._t
            ):
                return "shared"
            return "pooled"

        return self._call(find, "look up collection")

    def _record(self, name: str) -> NamespaceRecord | None:
        rows = self._query(self._meta, f"name in [{ex.literal(name)}]", ["record"], "read namespace")
        return NamespaceRecord.FromString(base64.b64decode(rows[0]["record"])) if rows else None

    def _put_record(self, record: NamespaceRecord) -> None:
        text = encode_record(record)
        noted(
            self._call(
                lambda: self._meta.upsert([[record.name], [text], [[0.0] * schema.PLACEHOLDER_DIM]], **self._t),
                "write namespace",
            )
        )

    def _clock(self) -> int:
        """A Milvus timestamp later than every write this process has had acknowledged: the
        timestamp of a write of CLOCK_ROW. Milvus 2.3.5 answers a delete with timestamp 0, and
        Milvus's timestamps come from one oracle, so this later write's timestamp is what a
        read must wait for to have the delete (storage/consistency.py)."""
        result = self._call(
            lambda: self._meta.upsert([[CLOCK_ROW], [""], [[0.0] * schema.PLACEHOLDER_DIM]], **self._t),
            "write consistency clock",
        )
        if not result.timestamp:
            raise Unavailable("Milvus acknowledged a write without a timestamp; read with consistency STRONG")
        return int(result.timestamp)

    def _require(self, name: str) -> NamespaceRecord:
        record = self._record(name)
        if record is None:
            self._handles.pop(name, None)
            raise NotFound(f"namespace {quoted(name)} does not exist; create it first")
        return record

    def _ns(self, name: str) -> _Namespace:
        """The namespace's collection. The handle is cached; a namespace another process deleted
        since is NotFound when its dropped collection is used (connection.translate)."""
        handle = self._handles.get(name)
        if handle is None:
            record = self._require(name)
            space = record.spaces[0]
            own = schema.items_collection(self.settings.prefix, name)
            # the layout is where the creating process put the items: a namespace of the shared
            # layout has a partition and no collection of its own, a pooled one neither
            # (create_namespace makes them before the record)
            layout = self._layout_of(name, space.dim)
            collection = (
                self._pooled(space.name, space.dim)
                if layout == "pooled"
                else self._shared(space.name, space.dim)
                if layout == "shared"
                else self._ensure(own, schema.items_schema(space.name, space.dim), "vec", vector_index(record))
            )
            tag = schema.pooled_tag(name, record.created_ms) if layout == "pooled" else ""
            handle = self._handles[name] = _Namespace(
                name,
                collection,
                space.name,
                space.dim,
                ivf_setting(record),
                layout != "collection",
                layout == "shared",
                tag,
            )
        return handle

    def _existing(self, target: _Namespace, ids: Sequence[str], level: dict | None = None) -> list[str]:
        level = item_read() if level is None else level
        found = []
        for start in range(0, len(ids), FETCH_BATCH):
            chunk = ids[start : start + FETCH_BATCH]
            found += [
                r["id"]
                for r in self._query(
                    target.collection,
                    target.where(f"id in {ex.strings(chunk)}"),
                    ["id"],
                    "look up items",
                    target.partitions,
                    level,
                )
            ]
        return found

    def _count(self, target: _Namespace, expr: str) -> int:
        rows = self._call(
            lambda: target.collection.query(
                target.where(expr),
                output_fields=["count(*)"],
                partition_names=target.partitions,
                **item_read(),
                **self._t,
            ),
            "count items",
        )
        return int(rows[0]["count(*)"])

    def _query(
        self,
        collection,
        expr: str,
        fields: list[str],
        what: str,
        partitions: list[str] | None = None,
        level: dict = STRONG,
    ) -> list[dict]:
        """Every row matching, at consistency `level` (metadata: always Strong); Milvus caps one
        query at PAGE rows, beyond that an iterator pages."""
        page = self._call(
            lambda: collection.query(
                expr, output_fields=fields, limit=PAGE, partition_names=partitions, **level, **self._t
            ),
            what,
        )
        if len(page) < PAGE:
            return page

        def everything():
            rows: list[dict] = []
            iterator = collection.query_iterator(
                batch_size=PAGE // 4, expr=expr, output_fields=fields, partition_names=partitions, **level, **self._t
            )
            while batch := iterator.next():
                rows.extend(batch)
            iterator.close()
            return rows

        return self._call(everything, what)

    def _row(self, target: _Namespace, write: ItemWrite) -> list:
        record = write.record
        has = sorted({ev.concept_id for ev in record.evidence if ev.state == HAS})
        not_has = sorted({ev.concept_id for ev in record.evidence if ev.state == NOT_HAS})
        vector = write.vectors.get(target.space)
        stored = unit(vector) if vector is not None else np.zeros(target.dim, dtype=np.float32)
        scored = sum(1 for ev in record.evidence if len(ev.template_scores))
        return [
            *target.key_columns(record.id),
            record.id,
            int(record.kind),
            has,
            not_has,
            sorted(set(record.mentions)),
            dict(record.metadata),
            scored,
            vector is not None,
            encode_record(record),
            stored.tolist(),
        ]
