"""The Milvus backend's two layouts through the library, on the same Milvus in one run: a
collection per namespace (``--milvus-layout collection``, the default) against one shared
collection per dimension with a partition per namespace (``shared``). For ``--namespaces`` small
namespaces of ``--items`` items each (d = ``--dim``, bench_milvus.py's items): the time to create
them, to fill them (remember_batch), and hard-recall latency p50 / p99 in a random namespace (1
required + 1 forbidden concept, k = 10) with the Milvus process tree's CPU per recall; Milvus's
resident memory after each layout.

    python benchmarks/bench_milvus_layouts.py                    # 50 namespaces x 200 items, d = 64

Writes benchmarks/results/milvus_layouts.json (or --out). Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from bench_milvus import CONCEPTS, items, recall_plan, tree_cpu_seconds, tree_rss_mb  # noqa: E402


def run_layout(uri: str, pid: int, layout: str, args) -> dict:
    from polarmem_server.index import SpaceSpec
    from polarmem_server.library.memory import Memory, NamespaceSettings
    from polarmem_server.storage.milvus.backend import MilvusBackend
    from polarmem_server.storage.milvus.connection import MilvusSettings

    memory = Memory(MilvusBackend(MilvusSettings(uri, prefix=f"l{uuid.uuid4().hex[:8]}", timeout_s=600, layout=layout)))
    names = [f"tenant{i:04d}" for i in range(args.namespaces)]
    started = time.perf_counter()
    for name in names:
        memory.create_namespace(
            NamespaceSettings(name, spaces=(SpaceSpec("vis", args.dim),), encoder="none", concepts=tuple(CONCEPTS))
        )
    created = time.perf_counter() - started
    started = time.perf_counter()
    for i, name in enumerate(names):
        failed = [
            r
            for r in memory.remember_batch(name, items(i * args.items, args.items, args.dim))
            if isinstance(r, Exception)
        ]
        assert not failed, failed[:3]
    filled = time.perf_counter() - started
    rng = np.random.default_rng(3)
    plan = recall_plan(args.dim, args.queries, seed=5)
    for required, forbidden, vector in plan[:3]:  # warm-up
        memory.recall(names[0], vectors={"vis": vector}, required=[required], forbidden=[forbidden], k=10)
    latencies = []
    cpu = tree_cpu_seconds(pid)
    for required, forbidden, vector in plan:
        name = names[int(rng.integers(len(names)))]
        t = time.perf_counter()
        hits = memory.recall(name, vectors={"vis": vector}, required=[required], forbidden=[forbidden], k=10).hits
        latencies.append(time.perf_counter() - t)
        assert hits and all(h.item_id for h in hits)
    cpu = tree_cpu_seconds(pid) - cpu
    report = {
        "layout": layout,
        "namespaces": args.namespaces,
        "items_each": args.items,
        "create_s": round(created, 2),
        "create_ms_per_namespace": round(created / args.namespaces * 1000, 1),
        "fill_s": round(filled, 2),
        "recall_p50_ms": round(float(np.percentile(latencies, 50)) * 1000, 1),
        "recall_p99_ms": round(float(np.percentile(latencies, 99)) * 1000, 1),
        "milvus_cpu_ms_per_recall": round(cpu / len(plan) * 1000, 1),
        "milvus_rss_mb": tree_rss_mb(pid),
    }
    started = time.perf_counter()
    for name in names:
        memory.delete_namespace(name)
    report["delete_ms_per_namespace"] = round((time.perf_counter() - started) / args.namespaces * 1000, 1)
    memory.close()
    print(json.dumps(report), flush=True)
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--namespaces", type=int, default=50)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "milvus_layouts.json"))
    args = parser.parse_args(argv)

    from milvus_server import running_milvus

    report: dict = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "loadavg_before": os.getloadavg()}
    }
    with tempfile.TemporaryDirectory() as tmp, running_milvus(Path(tmp) / "milvus" / "data") as server:
        # shared first: the collection layout leaves loaded collections that would slow it
        report["layouts"] = [
            run_layout(server.uri, server.process.pid, layout, args) for layout in ("shared", "collection")
        ]
    shared, own = report["layouts"]
    report["ratios_collection_over_shared"] = {
        key: round(own[key] / max(shared[key], 1e-9), 2)
        for key in (
            "create_ms_per_namespace",
            "fill_s",
            "recall_p50_ms",
            "recall_p99_ms",
            "milvus_cpu_ms_per_recall",
            "delete_ms_per_namespace",
        )
    }
    report["machine"]["loadavg_after"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["ratios_collection_over_shared"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
