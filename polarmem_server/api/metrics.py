"""Prometheus collectors of one server (a registry per server, so tests can run several).

Besides the server's own series the registry carries prometheus_client's process_* (CPU,
resident memory, file descriptors, start time), python_gc_* and python_info collectors, a
``polarmem_build_info`` gauge, the micro-batcher's queue depth and bound, store errors, and,
for an engine that reports KV-cache reuse (TensorRT-LLM's ``cache_stats()``), the cache
counters read at scrape time.

No ``*_created`` series: each ServerMetrics calls prometheus_client's
``disable_created_metrics()`` (idempotent) before it makes its counters. It is a process-wide
switch of prometheus_client: the created timestamps add one series per counter and histogram
child, and no alert or panel uses them.

Namespace labels. Namespace names are chosen by clients, so a ``namespace`` label on the
per-RPC series has no bound a server can promise, and the metrics port is unauthenticated: the
names would be readable by anyone who can reach it. The label is therefore added only when the
server is started with ``metrics_namespace_labels`` on (api.config, default off -- the same
setting that publishes MemoryCollector's per-namespace sizes); off, the per-RPC series are
labelled by method (and code) only, as before.
"""

from __future__ import annotations

import importlib.metadata
import logging
from collections.abc import Callable, Sequence

import grpc

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.utils import floatToGoString

from polarmem.common.v1 import enums_pb2
from polarmem_server._core import RPC_LATENCY_BOUNDS, STORE_WRITE_BOUNDS
from polarmem_server.index import TIER_NAMES
from polarmem_server.library import Memory
from polarmem_server.scoring.base import EngineError

log = logging.getLogger("polarmem.metrics")
STORE_OPS = ("read", "write")
STORE_ERROR_SERIES = (("read", "io_error"), ("write", "io_error"), ("write", "disk_full"))


def package_version() -> str:
    """The installed polarmem-server version ("unknown" when run from a tree that is not installed)."""
    try:
        return importlib.metadata.version("polarmem-server")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def build_labels(engine=None) -> dict[str, str]:
    """polarmem_build_info's labels: package version, the core's compiler and active SIMD level,
    and the configured engine with its version ("" when none)."""
    from polarmem_server.index import build_info  # the compiled core; imported late so metrics load without it

    core = build_info()
    labels = {
        "version": package_version(),
        "simd_active": str(core.get("simd_active", "")),
        "compiler": str(core.get("compiler", "")),
        "engine": "",
        "engine_version": "",
    }
    if engine is not None:
        labels["engine"] = engine.info.name
        details = getattr(engine.info, "details", None) or {}
        labels["engine_version"] = str(getattr(engine, "version", "") or details.get(f"{engine.info.name}_version", ""))
    return labels


class QueueCollector:
    """The micro-batcher's waiting requests and its bound, read at scrape time."""

    def __init__(self, batcher) -> None:
        self._batcher = batcher

    def collect(self):
        waiting = GaugeMetricFamily(
            "polarmem_engine_queue_requests", "Requests waiting in the engine's micro-batcher queue"
        )
        waiting.add_metric([], self._batcher.queue_depth())
        capacity = GaugeMetricFamily(
            "polarmem_engine_queue_capacity",
            "Bound of the micro-batcher queue (engine_queue); beyond it RESOURCE_EXHAUSTED",
        )
        capacity.add_metric([], self._batcher.max_queue)
        yield waiting
        yield capacity


class KvCacheCollector:
    """KV-cache block reuse of an engine with ``cache_stats()`` (the TensorRT-LLM engine), read
    at scrape time. cache_stats() waits up to 50 ms for the runtime's statistics and raises
    EngineError when the runtime is gone: the scrape then omits these series (and logs) rather
    than failing the whole exposition."""

    def __init__(self, engine) -> None:
        self._engine = engine

    def collect(self):
        try:
            stats = self._engine.cache_stats()
        except EngineError as exc:
            log.warning("engine cache statistics unavailable: %s", exc)
            return
        reused = CounterMetricFamily("polarmem_engine_kv_reused_blocks", "KV-cache blocks reused from earlier prompts")
        reused.add_metric([], float(stats.get("reused_blocks", 0)))
        missed = CounterMetricFamily("polarmem_engine_kv_missed_blocks", "KV-cache blocks that had to be computed")
        missed.add_metric([], float(stats.get("missed_blocks", 0)))
        ratio = GaugeMetricFamily("polarmem_engine_kv_hit_ratio", "Reused / (reused + missed) KV-cache blocks so far")
        ratio.add_metric([], float(stats.get("hit_rate", 0.0)))
        warm = CounterMetricFamily(
            "polarmem_engine_prefix_warm_prompts",
            "Prompts sent ahead of their item's others so the shared prefix is cached",
        )
        warm.add_metric([], float(stats.get("warm_prompts", 0)))
        yield from (reused, missed, ratio, warm)


# The core's RPC latency bounds (cpp/include/polarmem/rpc_latency.hpp), which the compiled
# front's histograms use too: its calls are added into polarmem_rpc_latency_seconds.
LATENCY_BUCKETS = tuple(RPC_LATENCY_BOUNDS)
STATUS_NAMES = {code.value[0]: code.name for code in grpc.StatusCode}


def bucket_histogram(
    name: str, documentation: str, bounds: Sequence[float], counts: Sequence[int], total: float
) -> HistogramMetricFamily:
    """A histogram the core counted: per-bucket counts over upper `bounds` (+Inf last, one more
    count than bounds) and the observations' `total`, as Prometheus' cumulative buckets."""
    buckets, cumulative = [], 0
    for bound, count in zip([*map(str, bounds), "+Inf"], counts):
        cumulative += count
        buckets.append((bound, cumulative))
    family = HistogramMetricFamily(name, documentation)
    family.add_metric([], buckets, sum_value=total)
    return family


class MemoryCollector:
    """Per-namespace sizes read from the memory at scrape time (nothing to keep in step)."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory

    def collect(self):
        items = GaugeMetricFamily("polarmem_items", "Items stored, by namespace and kind", labels=["namespace", "kind"])
        concepts = GaugeMetricFamily(
            "polarmem_concepts", "Concepts in the vocabulary, by namespace", labels=["namespace"]
        )
        edges = GaugeMetricFamily(
            "polarmem_edges", "Item-concept edges, by namespace and polarity", labels=["namespace", "polarity"]
        )
        for namespace in self._memory.list_namespaces():
            name = namespace.name
            try:
                counts = self._memory.namespace_counts(name)
            except LookupError:  # deleted since the listing
                continue
            items.add_metric([name, "visual"], counts.kinds.get(enums_pb2.ITEM_KIND_VISUAL, 0))
            items.add_metric([name, "text"], counts.kinds.get(enums_pb2.ITEM_KIND_TEXT, 0))
            concepts.add_metric([name], len(namespace.vocabulary))
            for polarity, by_concept in counts.concepts.items():
                edges.add_metric([name, polarity], sum(by_concept.values()))
        yield items
        yield concepts
        yield edges


class StoreWritesCollector:
    """The item writes' latency as the store timed them (read at scrape time), whichever door
    wrote: the library's writes and the core's native Remember alike; empty where the backend
    times none."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory

    def collect(self):
        bounds, counts, total = self._memory.backend.write_times() or (
            STORE_WRITE_BOUNDS,
            [0] * (len(STORE_WRITE_BOUNDS) + 1),
            0.0,
        )
        yield bucket_histogram("polarmem_store_write_seconds", "RocksDB write latency per item", bounds, counts, total)


class RpcSeriesCollector:
    """polarmem_rpc_requests_total, polarmem_rpc_latency_seconds and polarmem_internal_errors_total
    as exported: the Python listener's own counts plus the calls the compiled front answered
    itself (`front_stats`: the front's stats, whose ``finished`` holds them by method), so each
    series counts every call on the address whichever listener answered it. With namespace labels
    on, the front counts the calls it answered from a namespace's view under that namespace
    (``finished_by_namespace``: only namespaces that existed, as the listener's own rule) and the
    rest (refused before parsing, overloaded) under namespace ""."""

    def __init__(
        self,
        requests: Counter,
        latency: Histogram,
        internal_errors: Counter,
        front_stats: Callable[[], dict],
        namespace_labels: bool,
    ) -> None:
        self._requests, self._latency, self._internal_errors = requests, latency, internal_errors
        self._front_stats = front_stats
        self._namespace_labels = namespace_labels

    def collect(self):
        stats = self._front_stats()
        # (key without the code, the front's counts for it): by method, and by namespace with labels on
        front: list[tuple[tuple[str, ...], dict]] = []
        for namespace, by_method in [("", stats.get("finished", {})), *stats.get("finished_by_namespace", {}).items()]:
            for method, calls in by_method.items():
                front.append(((method, namespace) if self._namespace_labels else (method,), calls))
        labels = ["method", "namespace"] if self._namespace_labels else ["method"]

        counts: dict[tuple[str, ...], float] = {}
        for sample in self._requests.collect()[0].samples:
            if sample.name.endswith("_total"):
                counts[tuple(sample.labels[name] for name in [*labels, "code"])] = sample.value
        for key, calls in front:
            for code, count in enumerate(calls["codes"]):
                if count:
                    coded = (*key, STATUS_NAMES[code])
                    counts[coded] = counts.get(coded, 0.0) + count
        requests = CounterMetricFamily(
            "polarmem_rpc_requests", "RPCs handled, by method and status code", labels=[*labels, "code"]
        )
        for key, value in sorted(counts.items()):
            requests.add_metric(list(key), value)
        yield requests

        buckets: dict[tuple[str, ...], list[float]] = {}
        sums: dict[tuple[str, ...], float] = {}
        for sample in self._latency.collect()[0].samples:
            key = tuple(sample.labels[name] for name in labels)
            if sample.name.endswith("_bucket"):
                buckets.setdefault(key, []).append(sample.value)  # cumulative, in bound order
            elif sample.name.endswith("_sum"):
                sums[key] = sample.value
        for key, calls in front:
            if not any(calls["latency_counts"]):
                continue
            cumulative = buckets.setdefault(key, [0.0] * (len(LATENCY_BUCKETS) + 1))
            running = 0
            for i, count in enumerate(calls["latency_counts"]):
                running += count
                cumulative[i] += running
            sums[key] = sums.get(key, 0.0) + calls["latency_sum"]
        latency = HistogramMetricFamily("polarmem_rpc_latency_seconds", "RPC latency, by method", labels=labels)
        bounds = [*(floatToGoString(b) for b in LATENCY_BUCKETS), "+Inf"]
        for key, cumulative in sorted(buckets.items()):
            latency.add_metric(list(key), list(zip(bounds, cumulative)), sums.get(key, 0.0))
        yield latency

        internal = self._internal_errors.collect()[0].samples[0].value
        internal += sum(calls["codes"][grpc.StatusCode.INTERNAL.value[0]] for _, calls in front)
        yield CounterMetricFamily("polarmem_internal_errors", "RPCs that failed with INTERNAL", value=internal)


class RecallSeriesCollector:
    """polarmem_recall_hits_total{tier} and polarmem_recall_suppressed_items_total as exported:
    the Python listener's counts plus the hits and suppressed items of the Recalls the compiled
    front answered itself (`front_stats`: its ``hits`` by tier and ``suppressed``), so the
    dashboard's tier and suppression panels see every Recall on the address."""

    def __init__(self, hits: Counter, suppressed: Counter, front_stats: Callable[[], dict]) -> None:
        self._hits, self._suppressed, self._front_stats = hits, suppressed, front_stats

    def collect(self):
        front = self._front_stats()
        by_tier = dict.fromkeys(TIER_NAMES.values(), 0.0)
        for sample in self._hits.collect()[0].samples:
            if sample.name.endswith("_total"):
                by_tier[sample.labels["tier"]] += sample.value
        for tier, count in front.get("hits", {}).items():
            by_tier[tier] += count
        hits = CounterMetricFamily("polarmem_recall_hits", "Recall hits returned, by tier", labels=["tier"])
        for tier, count in by_tier.items():
            if count:  # as a labelled counter: no hit of a tier yet, no series
                hits.add_metric([tier], count)
        yield hits
        suppressed = self._suppressed.collect()[0].samples[0].value + front.get("suppressed", 0)
        yield CounterMetricFamily(
            "polarmem_recall_suppressed_items",
            "Conflicting items plain similarity would have returned but the logic kept out",
            value=suppressed,
        )


class ServerMetrics:
    """The collectors of one server. `namespace_labels` (config ``metrics_namespace_labels``,
    default off) adds a ``namespace`` label to the per-RPC series; see the module docstring."""

    def __init__(self, namespace_labels: bool = False) -> None:
        disable_created_metrics()  # idempotent; must run before the first counter below is made
        self.registry = CollectorRegistry()
        r = self.registry
        self.namespace_labels = namespace_labels
        self.engine_attached = False
        self._memory: Memory | None = None
        # the process-wide default collectors are bound to the default registry; these are new
        # instances of the same classes, on this server's registry
        ProcessCollector(registry=r)
        GCCollector(registry=r)
        PlatformCollector(registry=r)
        rpc_labels = ["method", "namespace"] if namespace_labels else ["method"]
        # The Python listener's counts, unregistered: RpcSeriesCollector exports them with the
        # compiled front's (attach_front).
        self.requests = Counter(
            "polarmem_rpc_requests", "RPCs handled, by method and status code", [*rpc_labels, "code"], registry=None
        )
        self.latency = Histogram(
            "polarmem_rpc_latency_seconds", "RPC latency, by method", rpc_labels, buckets=LATENCY_BUCKETS, registry=None
        )
        self.internal_errors = Counter("polarmem_internal_errors", "RPCs that failed with INTERNAL", registry=None)
        self._front_stats: Callable[[], dict] = dict
        r.register(
            RpcSeriesCollector(
                self.requests, self.latency, self.internal_errors, lambda: self._front_stats(), namespace_labels
            )
        )
        self.build_info = Gauge(
            "polarmem_build_info",
            "Build of this server (value 1): package version, core compiler "
            "and active SIMD level, engine and its version",
            ["version", "simd_active", "compiler", "engine", "engine_version"],
            registry=r,
        )
        self.build_info.labels(**build_labels()).set(1)
        self.store_errors = Counter(
            "polarmem_store_errors", "Failed store reads and writes, by operation and kind", ["op", "kind"], registry=r
        )
        for op, kind in STORE_ERROR_SERIES:  # exported at 0 from the start, so increase() sees the first error
            self.store_errors.labels(op, kind)
        self.in_flight = Gauge("polarmem_rpc_in_flight", "RPCs being handled now", registry=r)
        self.storage_corruption = Counter(
            "polarmem_storage_corruption",
            "Reads that found a damaged store file (a RocksDB checksum mismatch), by what read it: an RPC or the scrub",
            ["found_by"],
            registry=r,
        )
        for found_by in ("rpc", "scrub"):  # exported at 0 from the start, so increase() sees the first one
            self.storage_corruption.labels(found_by)
        self.replica_restarts = Counter(
            "polarmem_replica_restarts",
            "--processes replicas started again after they exited (api/replica_supervisor.py)",
            registry=r,
        )
        self.replicas_up = Gauge(
            "polarmem_replicas_up", "--processes replicas running now (0 for one process)", registry=r
        )
        # The Python listener's Recall counts, unregistered: RecallSeriesCollector exports them with
        # the compiled front's (attach_front).
        self.recall_tier_items = Counter(
            "polarmem_recall_hits", "Recall hits returned, by tier", ["tier"], registry=None
        )
        self.recall_answered = Counter(
            "polarmem_recall_answered",
            "Recalls the Python listener answered, by what answered them: the core's entry "
            "(library/core_recall.py) answers every one",
            ["by"],
            registry=r,
        )
        self.recall_suppressed = Counter(
            "polarmem_recall_suppressed_items",
            "Conflicting items plain similarity would have returned but the logic kept out",
            registry=None,
        )
        r.register(RecallSeriesCollector(self.recall_tier_items, self.recall_suppressed, lambda: self._front_stats()))
        self.partition_uncertain = Histogram(
            "polarmem_partition_uncertain_ratio",
            "Share of an item's concepts left UNCERTAIN",
            buckets=(0.0, 0.1, 0.2, 0.3, 0.5, 0.8, 1.0),
            registry=r,
        )
        self.partition_degenerate = Counter(
            "polarmem_partition_degenerate", "Items whose score spectrum was degenerate", registry=r
        )
        self.partition_weak = Counter(
            "polarmem_partition_weak", "Items with more than 80% of concepts UNCERTAIN", registry=r
        )
        self.engine_batch_prompts = Histogram(
            "polarmem_engine_batch_prompts",
            "Prompts per engine batch",
            buckets=(1, 4, 16, 64, 128, 256, 512, 1024),
            registry=r,
        )
        self.engine_queue_delay = Histogram(
            "polarmem_engine_queue_delay_seconds",
            "Wait of a batch's oldest request",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.engine_seconds = Histogram(
            "polarmem_engine_batch_seconds", "Engine time per batch", buckets=LATENCY_BUCKETS, registry=r
        )
        self.rebuild_seconds = Gauge(
            "polarmem_index_rebuild_seconds", "Time to rebuild the indexes at start-up", registry=r
        )
        self.rebuild_items = Gauge(
            "polarmem_index_rebuild_items", "Items loaded into the indexes at start-up", registry=r
        )
        # Labelled children of the per-call series, looked up once per label set: prometheus'
        # labels() takes a lock and builds a key on every call, which every RPC paid twice.
        # A plain dict read is safe without a lock; two threads creating the same child at once
        # get the same child back from labels(), so either may be cached.
        self._rpc_children: dict[tuple, tuple] = {}
        self._tier_children: dict[str, Counter] = {}

    def observe_rpc(self, method: str, code: str, seconds: float, namespace: str = "") -> None:
        """Count and time one RPC. `namespace` (the request's) becomes a label only when
        namespace labels are on, and only for a namespace that exists in the attached memory:
        a name a client merely sends (a typo, a probe) is labelled "", so the label values stay
        bounded by the namespaces created while the process runs."""
        if self.namespace_labels:
            labels: tuple[str, ...] = (method, namespace if self._known_namespace(namespace) else "")
        else:
            labels = (method,)
        children = self._rpc_children.get((labels, code))
        if children is None:
            children = self._rpc_children[(labels, code)] = (
                self.requests.labels(*labels, code),
                self.latency.labels(*labels),
            )
        children[0].inc()
        children[1].observe(seconds)

    def count_recall(self, response, by: str) -> None:
        """Counts one Recall's response: its hits by tier, its suppressed items, and who answered it."""
        counts = {1: 0, 0: 0, -1: 0}
        for hit in response.hits:
            counts[hit.s_log] += 1
        for tier, count in counts.items():
            if count:
                self.count_recall_hits(TIER_NAMES[tier], count)
        if response.suppressed:
            self.recall_suppressed.inc(len(response.suppressed))
        self.recall_answered.labels(by).inc()

    def count_recall_hits(self, tier: str, count: int) -> None:
        """Adds `count` hits of tier `tier` (entailed, neutral, conflict) to polarmem_recall_hits."""
        child = self._tier_children.get(tier)
        if child is None:
            child = self._tier_children[tier] = self.recall_tier_items.labels(tier)
        child.inc(count)

    def _known_namespace(self, name: str) -> bool:
        if not name or self._memory is None:
            return False
        try:
            self._memory.namespace(name)
        except LookupError:
            return False
        return True

    def count_store_error(self, op: str, kind: str = "io_error") -> None:
        """One failed store operation: `op` is "read" or "write", `kind` what failed (disk_full,
        io_error, ...). Called where a store error surfaces (storage or the server's handlers)."""
        if op not in STORE_OPS:
            raise ValueError(f"op must be one of {', '.join(STORE_OPS)}, got {op!r}")
        self.store_errors.labels(op, kind).inc()

    def attach_engine(self, verifier) -> None:
        """Engine series for a server with verification: build info's engine labels, the
        micro-batcher's queue, and KV-cache reuse where the engine reports it."""
        if self.engine_attached:
            return
        self.engine_attached = True
        self.build_info.clear()
        self.build_info.labels(**build_labels(verifier.engine)).set(1)
        self.registry.register(QueueCollector(verifier.batcher))
        if callable(getattr(verifier.engine, "cache_stats", None)):
            self.registry.register(KvCacheCollector(verifier.engine))

    def attach_front(self, front_stats: Callable[[], dict]) -> None:
        """The compiled front's stats (``front.stats()``), read at scrape time: its finished calls
        by method into the RPC series, its Recalls' hits and suppressed items into the Recall series."""
        self._front_stats = front_stats

    def attach(self, memory: Memory) -> None:
        self._memory = memory
        self.registry.register(MemoryCollector(memory))
        self.rebuild_seconds.set(memory.rebuild_seconds)
        self.rebuild_items.set(memory.rebuild_items)

    def observe_batch(self, stats) -> None:
        self.engine_batch_prompts.observe(stats.prompts)
        self.engine_queue_delay.observe(stats.queue_delay_s)
        self.engine_seconds.observe(stats.engine_s)

    def observe_partition(self, record) -> None:
        if not record.HasField("partition"):
            return
        self.partition_uncertain.observe(record.partition.uncertain_ratio)
        if record.partition.degenerate:
            self.partition_degenerate.inc()
        if record.partition.weak:
            self.partition_weak.inc()
