"""Tenancy layouts on Milvus, measured on the same Milvus in one run: a collection per namespace
(what storage/milvus does) against one collection whose `ns` field is a partition key (Milvus's
advice for many tenants). For ``--namespaces`` small namespaces of ``--items`` items each: the
time to create (create + index + load) and fill them, and the latency of a filtered search in one
namespace (the shape of one tier of a hard recall), p50 / p99, with Milvus's CPU per search.

    python benchmarks/bench_milvus_tenancy.py --uri http://127.0.0.1:19530 --server-pid PID

Writes benchmarks/results/milvus_tenancy.json. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_milvus import tree_cpu_seconds  # noqa: E402

INDEX = {"index_type": "FLAT", "metric_type": "IP", "params": {}}


def fields(pm, dim: int, partition_key: bool):
    out = [pm.FieldSchema("id", pm.DataType.VARCHAR, is_primary=True, max_length=64)]
    if partition_key:
        out.append(pm.FieldSchema("ns", pm.DataType.VARCHAR, max_length=64, is_partition_key=True))
    out += [
        pm.FieldSchema("has", pm.DataType.ARRAY, element_type=pm.DataType.INT64, max_capacity=64),
        pm.FieldSchema("vec", pm.DataType.FLOAT_VECTOR, dim=dim),
    ]
    return pm.CollectionSchema(out)


def rows(rng, ns: str, n: int, dim: int, with_ns: bool):
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    has = [[int(c) for c in np.flatnonzero(rng.random(20) < 0.3)] for _ in range(n)]
    columns = [[f"{ns}-{i}" for i in range(n)]]
    if with_ns:
        columns.append([ns] * n)
    return columns + [has, vectors.tolist()]


def searches(rng, pick, queries: int, dim: int, pid: int | None):
    latencies = []
    cpu = tree_cpu_seconds(pid) if pid else 0.0
    for _ in range(queries):
        collection, expr = pick()
        vector = rng.standard_normal(dim).astype(np.float32)
        t = time.perf_counter()
        collection.search(
            [vector.tolist()],
            "vec",
            {"metric_type": "IP", "params": {}},
            limit=10,
            expr=expr,
            consistency_level="Strong",
            timeout=60,
        )
        latencies.append(time.perf_counter() - t)
    cpu = (tree_cpu_seconds(pid) - cpu) if pid else 0.0
    return {
        "search_p50_ms": round(float(np.percentile(latencies, 50)) * 1000, 2),
        "search_p99_ms": round(float(np.percentile(latencies, 99)) * 1000, 2),
        "milvus_cpu_ms_per_search": round(cpu / queries * 1000, 2),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uri", required=True)
    parser.add_argument("--server-pid", type=int, default=0)
    parser.add_argument("--namespaces", type=int, default=100)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "milvus_tenancy.json"))
    args = parser.parse_args(argv)
    from polarmem_server.storage.milvus.connection import import_pymilvus

    pm = import_pymilvus()
    pm.connections.connect(uri=args.uri, timeout=30)
    tag = uuid.uuid4().hex[:6]
    rng = np.random.default_rng(1)
    names = [f"ns{i}" for i in range(args.namespaces)]
    pid = args.server_pid or None
    report = {"config": vars(args), "loadavg_before": os.getloadavg()}
    expr_of = "array_contains_any(has, [1]) and not array_contains_any(has, [2])"

    started = time.perf_counter()
    per_ns = {}
    for name in names:
        c = pm.Collection(f"ten_{tag}_{name}", fields(pm, args.dim, False), consistency_level="Strong", timeout=60)
        c.create_index("vec", INDEX, timeout=60)
        c.load(timeout=300)
        per_ns[name] = c
    created = time.perf_counter() - started
    for name, c in per_ns.items():
        c.insert(rows(rng, name, args.items, args.dim, False), timeout=60)
    filled = time.perf_counter() - started - created
    report["collection_per_namespace"] = {
        "create_s": round(created, 1),
        "fill_s": round(filled, 1),
        **searches(rng, lambda: (per_ns[names[rng.integers(len(names))]], expr_of), args.queries, args.dim, pid),
    }
    print("collection per namespace", json.dumps(report["collection_per_namespace"]), flush=True)
    for c in per_ns.values():
        c.drop(timeout=60)

    started = time.perf_counter()
    shared = pm.Collection(
        f"ten_{tag}_shared", fields(pm, args.dim, True), consistency_level="Strong", timeout=60, num_partitions=64
    )
    shared.create_index("vec", INDEX, timeout=60)
    shared.load(timeout=300)
    created = time.perf_counter() - started
    for name in names:
        shared.insert(rows(rng, name, args.items, args.dim, True), timeout=60)
    filled = time.perf_counter() - started - created

    def pick_shared():
        return shared, f'ns == "{names[rng.integers(len(names))]}" and {expr_of}'

    report["partition_key"] = {
        "create_s": round(created, 1),
        "fill_s": round(filled, 1),
        **searches(rng, pick_shared, args.queries, args.dim, pid),
    }
    print("partition key", json.dumps(report["partition_key"]), flush=True)
    shared.drop(timeout=60)
    report["loadavg_after"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
