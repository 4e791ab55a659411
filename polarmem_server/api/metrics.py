"""Prometheus collectors of one server (a registry per server, so tests can run several)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily

from polarmem.common.v1 import enums_pb2
from polarmem_server.memory import Memory

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class MemoryCollector:
    """Per-namespace sizes read from the memory at scrape time (nothing to keep in step)."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory

    def collect(self):
        items = GaugeMetricFamily("polarmem_items", "Items stored, by namespace and kind", labels=["namespace", "kind"])
        concepts = GaugeMetricFamily("polarmem_concepts", "Concepts in the vocabulary, by namespace", labels=["namespace"])
        edges = GaugeMetricFamily("polarmem_edges", "Item-concept edges, by namespace and polarity",
                                  labels=["namespace", "polarity"])
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


class ServerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("polarmem_rpc_requests", "RPCs handled, by method and status code", ["method", "code"], registry=r)
        self.latency = Histogram("polarmem_rpc_latency_seconds", "RPC latency, by method", ["method"],
                                 buckets=LATENCY_BUCKETS, registry=r)
        self.in_flight = Gauge("polarmem_rpc_in_flight", "RPCs being handled now", registry=r)
        self.internal_errors = Counter("polarmem_internal_errors", "RPCs that failed with INTERNAL", registry=r)
        self.recall_tier_items = Counter("polarmem_recall_hits", "Recall hits returned, by tier", ["tier"], registry=r)
        self.recall_suppressed = Counter("polarmem_recall_suppressed_items",
                                         "Conflicting items plain similarity would have returned but the logic kept out",
                                         registry=r)
        self.partition_uncertain = Histogram("polarmem_partition_uncertain_ratio", "Share of an item's concepts left UNCERTAIN",
                                             buckets=(0.0, 0.1, 0.2, 0.3, 0.5, 0.8, 1.0), registry=r)
        self.partition_degenerate = Counter("polarmem_partition_degenerate", "Items whose score spectrum was degenerate",
                                            registry=r)
        self.partition_weak = Counter("polarmem_partition_weak", "Items with more than 80% of concepts UNCERTAIN", registry=r)
        self.store_write = Histogram("polarmem_store_write_seconds", "RocksDB write latency per item",
                                     buckets=LATENCY_BUCKETS, registry=r)
        self.engine_batch_prompts = Histogram("polarmem_engine_batch_prompts", "Prompts per engine batch",
                                              buckets=(1, 4, 16, 64, 128, 256, 512, 1024), registry=r)
        self.engine_queue_delay = Histogram("polarmem_engine_queue_delay_seconds", "Wait of a batch's oldest request",
                                            buckets=LATENCY_BUCKETS, registry=r)
        self.engine_seconds = Histogram("polarmem_engine_batch_seconds", "Engine time per batch", buckets=LATENCY_BUCKETS,
                                        registry=r)
        self.rebuild_seconds = Gauge("polarmem_index_rebuild_seconds", "Time to rebuild the indexes at start-up", registry=r)
        self.rebuild_items = Gauge("polarmem_index_rebuild_items", "Items loaded into the indexes at start-up", registry=r)

    def attach(self, memory: Memory) -> None:
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
