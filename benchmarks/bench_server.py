"""Serving benchmark against a real `polarmem serve` on loopback.

Measures, in one run: Remember throughput (unary and streamed, sync durability), Recall latency
p50 / p95 / p99 and throughput at several client concurrencies (hard mode, 1-3 concepts; the
load runs in separate processes, bounded in count and time), behaviour beyond the concurrency
limit (RESOURCE_EXHAUSTED, promptly, no hang), start-up time to SERVING, and resident memory per
item. With `--milvus` and pymilvus + milvus-lite installed, the same items and queries go to
Milvus Lite (the embedded form of the engine the paper used) as tiered filtered searches, and
the ratios are reported.

    python benchmarks/bench_server.py                    # 100,000 items, d = 384
    python benchmarks/bench_server.py --items 20000 --clients 1 4   # a quick run

Writes benchmarks/results/server.json. Not a test.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import rss_bytes, start_server, stop, write_report  # noqa: E402  (bench_startup imports two from here)

VOCAB = 100
SEED = 20260211


def item_arrays(start: int, count: int, dim: int):
    """Deterministic vectors and concept states for items [start, start + count)."""
    rng = np.random.default_rng(SEED + start)
    vectors = rng.standard_normal((count, dim), dtype=np.float32)
    has = [sorted(set(rng.choice(VOCAB, 3, replace=False).tolist())) for _ in range(count)]
    not_has = [sorted(set(rng.choice(VOCAB, 20, replace=False).tolist()) - set(h)) for h in has]
    return vectors, has, not_has


def items(start: int, count: int, dim: int):
    from polarmem_server.faces.client import item_message

    vectors, has, not_has = item_arrays(start, count, dim)
    for i in range(count):
        yield item_message(
            id=f"item{start + i:08d}",
            vectors={"vis": vectors[i]},
            states={**{f"c{c}": "has" for c in has[i]}, **{f"c{c}": "not_has" for c in not_has[i]}},
        )


def _client_worker(address: str, threads: int, requests: int, duration_s: float, dim: int, seed: int, queue) -> None:
    """One load process: `threads` clients, each sending up to `requests` Recalls."""
    import threading

    import grpc

    from polarmem_server.faces.client import PolarMemClient

    latencies: list[float] = []
    codes: dict[str, int] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + duration_s

    def run(tid: int) -> None:
        rng = np.random.default_rng(seed * 1000 + tid)
        with PolarMemClient(address, timeout_s=10) as client:
            for _ in range(requests):
                if time.monotonic() > deadline:
                    break
                concepts = [f"c{c}" for c in rng.choice(VOCAB, int(rng.integers(1, 4)), replace=False)]
                required, forbidden = concepts[:-1] or concepts, concepts[-1:] if len(concepts) > 1 else []
                started = time.perf_counter()
                try:
                    client.recall(
                        "bench",
                        vectors={"vis": rng.standard_normal(dim)},
                        required=required,
                        forbidden=forbidden,
                        top_k=10,
                    )
                    code = "OK"
                except grpc.RpcError as exc:
                    code = exc.code().name
                elapsed = time.perf_counter() - started
                with lock:
                    codes[code] = codes.get(code, 0) + 1
                    if code == "OK":
                        latencies.append(elapsed)

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    queue.put((latencies, codes))


def load_test(address: str, clients: int, requests_per_client: int, duration_s: float, dim: int) -> dict:
    processes = min(clients, 4)
    per_process = [clients // processes + (1 if i < clients % processes else 0) for i in range(processes)]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    started = time.perf_counter()
    procs = [
        ctx.Process(target=_client_worker, args=(address, n, requests_per_client, duration_s, dim, i, queue))
        for i, n in enumerate(per_process)
    ]
    for p in procs:
        p.start()
    latencies, codes = [], {}
    for _ in procs:
        lat, c = queue.get(timeout=duration_s + 120)
        latencies += lat
        for k, v in c.items():
            codes[k] = codes.get(k, 0) + v
    for p in procs:
        p.join(30)
    wall = time.perf_counter() - started
    lat_ms = np.asarray(latencies) * 1e3
    return {
        "clients": clients,
        "requests": int(sum(codes.values())),
        "codes": codes,
        "wall_s": wall,
        "throughput_rps": len(latencies) / wall,
        "p50_ms": float(np.percentile(lat_ms, 50)) if lat_ms.size else None,
        "p95_ms": float(np.percentile(lat_ms, 95)) if lat_ms.size else None,
        "p99_ms": float(np.percentile(lat_ms, 99)) if lat_ms.size else None,
    }


def milvus_peer(n: int, dim: int, queries: int, k: int, db_path: Path) -> dict:
    """The same items in Milvus Lite with has / not_has array fields, queried by tiered filtered
    searches (entailed, then neutral, then conflicting) — Milvus cannot rank by tier itself."""
    from pymilvus import DataType, MilvusClient

    client = MilvusClient(str(db_path))
    schema = client.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("vis", DataType.FLOAT_VECTOR, dim=dim)
    schema.add_field("has", DataType.ARRAY, element_type=DataType.INT64, max_capacity=32)
    schema.add_field("not_has", DataType.ARRAY, element_type=DataType.INT64, max_capacity=32)
    index = client.prepare_index_params()
    index.add_index("vis", index_type="FLAT", metric_type="IP")
    client.create_collection("bench", schema=schema, index_params=index)
    started = time.perf_counter()
    for start in range(0, n, 5000):
        vectors, has, not_has = item_arrays(start, min(5000, n - start), dim)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        client.insert(
            "bench",
            [
                {"id": start + i, "vis": vectors[i].tolist(), "has": has[i], "not_has": not_has[i]}
                for i in range(len(vectors))
            ],
        )
    insert_s = time.perf_counter() - started
    rng = np.random.default_rng(7)
    latencies = []
    for _ in range(queries):
        req, forb = (int(x) for x in rng.choice(VOCAB, 2, replace=False))
        q = rng.standard_normal(dim).astype(np.float32)
        q /= np.linalg.norm(q)
        conflict = f"(array_contains(not_has, {req}) or array_contains(has, {forb}))"
        tiers = [
            f"array_contains(has, {req}) and not {conflict}",
            f"not array_contains(has, {req}) and not {conflict}",
            conflict,
        ]
        t0 = time.perf_counter()
        found = 0
        for expression in tiers:
            hits = client.search("bench", data=[q.tolist()], limit=k - found, filter=expression, anns_field="vis")
            found += len(hits[0])
            if found >= k:
                break
        latencies.append(time.perf_counter() - t0)
    client.close()
    lat_ms = np.asarray(latencies) * 1e3
    return {
        "insert_items_per_s": n / insert_s,
        "p50_ms": float(np.percentile(lat_ms, 50)),
        "p95_ms": float(np.percentile(lat_ms, 95)),
        "p99_ms": float(np.percentile(lat_ms, 99)),
        "queries": queries,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--requests", type=int, default=400, help="Recalls per client (bounded)")
    parser.add_argument("--duration-s", type=float, default=20.0, help="longest a load level runs")
    parser.add_argument("--unary", type=int, default=1000, help="items written by unary Remember")
    parser.add_argument("--milvus", action="store_true")
    parser.add_argument("--milvus-queries", type=int, default=20, help="Milvus Lite tiered searches (slow: bounded)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/server.json"))
    args = parser.parse_args(argv)

    from polarmem_server.faces.client import PolarMemClient

    report: dict = {
        "benchmark": "bench_server",
        "items": args.items,
        "dim": args.dim,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
    }
    with tempfile.TemporaryDirectory(prefix="polarmem-bench-") as tmp:
        data = Path(tmp) / "data"
        server, address, _ = start_server(data, max_concurrent=64)
        baseline_rss = rss_bytes(server.pid)
        try:
            with PolarMemClient(address, timeout_s=600) as client:
                client.create_namespace("bench", spaces=[("vis", args.dim)], encoder="none")
                # Remember: unary, then streamed (sync durability: each acknowledged write is on disk).
                started = time.perf_counter()
                for message in items(0, args.unary, args.dim):
                    client._stub.Remember(
                        __import__("polarmem.v1.memory_service_pb2", fromlist=["x"]).RememberRequest(
                            namespace="bench", item=message
                        ),
                        timeout=30,
                    )
                unary_s = time.perf_counter() - started
                report["remember_unary_items_per_s"] = args.unary / unary_s
                # Streamed: the requests are built before the clock starts (as a replay load tool
                # does), so the figure is the server's ingestion rate, not this process's protobuf
                # building on the same two cores; the on-the-fly rate is measured after it.
                chunks = [
                    list(items(start, min(10_000, args.items - start), args.dim))
                    for start in range(args.unary, args.items, 10_000)
                ]
                started = time.perf_counter()
                for chunk in chunks:
                    response = client.remember_stream("bench", chunk)
                    assert response.failed == 0, response.results[0]
                stream_s = time.perf_counter() - started
                del chunks
                report["remember_stream_items_per_s"] = (args.items - args.unary) / stream_s
                report["rss_bytes_per_item"] = (rss_bytes(server.pid) - baseline_rss) / args.items
                client.create_namespace("bench-generated", spaces=[("vis", args.dim)], encoder="none")
                generated = min(20_000, args.items)
                started = time.perf_counter()
                for start in range(0, generated, 10_000):
                    response = client.remember_stream(
                        "bench-generated", items(start, min(10_000, generated - start), args.dim)
                    )
                    assert response.failed == 0, response.results[0]
                report["remember_stream_generated_items_per_s"] = generated / (time.perf_counter() - started)
                client.delete_namespace("bench-generated")
                print(
                    f"Remember: unary {report['remember_unary_items_per_s']:.0f} items/s, streamed "
                    f"{report['remember_stream_items_per_s']:.0f} items/s (sync durability; requests built "
                    f"while streaming: {report['remember_stream_generated_items_per_s']:.0f} items/s)",
                    flush=True,
                )
                print(f"resident memory: {report['rss_bytes_per_item']:.0f} bytes per item", flush=True)
            report["recall"] = []
            for clients in args.clients:
                result = load_test(address, clients, args.requests, args.duration_s, args.dim)
                report["recall"].append(result)
                print(
                    f"Recall, {clients:>2} clients: p50 {result['p50_ms']:.2f} ms, p95 {result['p95_ms']:.2f} ms, "
                    f"p99 {result['p99_ms']:.2f} ms, {result['throughput_rps']:.0f} req/s, codes {result['codes']}",
                    flush=True,
                )
        finally:
            stop(server, 60)
        # Over the limit: a server admitting 8 calls, loaded by 32 clients.
        server, address, _ = start_server(data, max_concurrent=8)
        try:
            over = load_test(address, 32, 100, 10.0, args.dim)
            report["overload"] = over
            print(
                f"overload (limit 8, 32 clients): codes {over['codes']}, p99 of admitted {over['p99_ms']:.1f} ms",
                flush=True,
            )
        finally:
            stop(server, 60)
        # Start-up: time to SERVING with the stored items.
        started = time.perf_counter()
        server, address, _ = start_server(data, max_concurrent=8)
        with PolarMemClient(address) as client:
            while client.health() != "SERVING":
                time.sleep(0.01)
        report["startup_to_serving_s"] = time.perf_counter() - started
        print(f"start-up to SERVING with {args.items:,} items: {report['startup_to_serving_s']:.2f} s", flush=True)
        stop(server, 60)
        write_report(args.out, report)  # the PolarMem figures, even if the peer fails
        if args.milvus:
            try:
                peer = milvus_peer(args.items, args.dim, args.milvus_queries, 10, Path(tmp) / "milvus.db")
                report["milvus_lite"] = peer
                single = report["recall"][0]
                print(
                    f"Milvus Lite: insert {peer['insert_items_per_s']:.0f} items/s, tiered filtered search p50 "
                    f"{peer['p50_ms']:.1f} ms, p99 {peer['p99_ms']:.1f} ms; PolarMem p50 ratio "
                    f"{peer['p50_ms'] / single['p50_ms']:.1f}x",
                    flush=True,
                )
                write_report(args.out, report)
            except ImportError:
                print("pymilvus / milvus-lite are not installed: no Milvus peer in this run", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
