"""The Milvus backend against the local backend, in one run, on the same items and queries.

Both go through the library (Memory): ingest items/s (batches of 1,000 through
``remember_batch``) and hard-recall latency p50 / p99 (1 required + 1 forbidden concept, k=10,
one query vector) at ``--items`` items, with the CPU each side spends per recall: this process
for the local backend (the core runs in it); this process plus the Milvus server's process tree
(from /proc) for the Milvus backend. Milvus runs on this machine (the wheel's standalone server,
started here unless ``--uri``), so the figures are of one node, not a cluster.

Ingest is the library's write path as it runs: one existence look-up per batch
(``Backend.stored_ids``) and one upsert per batch. ``--memory-path-items`` items are then written
with the earlier path (one look-up per item), and that rate is reported apart.

Recall is also measured through a real ``polarmem serve`` process over gRPC, one over the
local data directory and one with ``--backend milvus`` over the same Milvus collections:
p50 / p99 and the serve process's CPU per call (and the Milvus process tree's, apart).

``--processes 1,2`` also measures recall through several PolarMem processes at once (one client
process each, all in flight together): two `polarmem serve --backend milvus` processes on their
own ports against the one Milvus, and for the local peer `polarmem serve --processes 2` (one data
directory, one port). ``--milvus-writers 2`` writes the second half of the items into Milvus from
two processes at once (the first half from one), so both ingest rates come from one fill.
Reported with each: the serve processes' and the Milvus tree's CPU per recall and their memory
(RSS) after the run.

    python benchmarks/bench_milvus.py                      # 100,000 items, d = 64
    python benchmarks/bench_milvus.py --items 5000 --queries 20   # a quick run
    python benchmarks/bench_milvus.py --items 1000000 --processes 1,2 --milvus-writers 2 \
        --library-recall false --memory-path-items 0 --out benchmarks/results/milvus_1m.json

Writes benchmarks/results/milvus.json (or --out). Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import serve_command as polarmem_serve  # noqa: E402
from harness import start_serve, stop, tree_cpu_seconds, tree_rss_mb, write_report  # noqa: E402  (others import these two)

CONCEPTS = [f"c{i}" for i in range(20)]
SEED = 20261130


def items(start: int, count: int, dim: int):
    from polarmem_server.library.memory import ItemInput

    rng = np.random.default_rng(SEED + start)
    vectors = rng.standard_normal((count, dim), dtype=np.float32)
    draws = rng.random((count, len(CONCEPTS)))
    out = []
    for i in range(count):
        states = {c: ("has" if d < 0.15 else "not_has") for c, d in zip(CONCEPTS, draws[i]) if d < 0.5}
        out.append(ItemInput(id=f"i{start + i:08d}", vectors={"vis": vectors[i]}, states=states))
    return out


def milvus_ingest_worker(uri: str, prefix: str, dim: int, start: int, end: int, ready, go) -> tuple[float, float]:
    """One writer process: remember_batch of 1,000 items over [start, end) into Milvus, after
    every writer has connected (so the rate is the writing, not the start-up)."""
    from polarmem_server.library.memory import Memory
    from polarmem_server.storage.milvus.backend import MilvusBackend
    from polarmem_server.storage.milvus.connection import MilvusSettings

    memory = Memory(MilvusBackend(MilvusSettings(uri, prefix=prefix, timeout_s=120)))
    memory.namespace("bench")  # the namespace's collection handle, before the clock starts
    ready.wait()
    go.wait()
    began = time.time()
    for batch_start in range(start, end, 1000):
        failed = [
            r
            for r in memory.remember_batch("bench", items(batch_start, min(1000, end - batch_start), dim))
            if isinstance(r, Exception)
        ]
        assert not failed, failed[:3]
    finished = time.time()
    memory.close()
    return began, finished


def milvus_ingest(uri: str, prefix: str, dim: int, start: int, end: int, writers: int) -> dict:
    """Items [start, end) written by `writers` processes at once (disjoint ranges): items/s."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    manager = context.Manager()
    ready, go = manager.Barrier(writers + 1), manager.Barrier(writers + 1)
    bounds = np.linspace(start, end, writers + 1).astype(int)
    with context.Pool(writers) as pool:
        pending = [
            pool.apply_async(milvus_ingest_worker, (uri, prefix, dim, int(a), int(b), ready, go))
            for a, b in zip(bounds[:-1], bounds[1:])
        ]
        ready.wait()
        go.wait()
        spans = [p.get() for p in pending]
    manager.shutdown()
    seconds = max(e for _, e in spans) - min(b for b, _ in spans)
    report = {
        "writers": writers,
        "items": end - start,
        "from_item": start,
        "ingest_items_per_s": round((end - start) / seconds, 1),
        "seconds": round(seconds, 1),
    }
    print("milvus ingest", json.dumps(report), flush=True)
    return report


def run(
    memory,
    label: str,
    n: int,
    dim: int,
    queries: int,
    k: int,
    memory_path_items: int,
    server_pid: int | None,
    ingest_only: bool = False,
):
    from polarmem_server.index import SpaceSpec
    from polarmem_server.storage.backend import Backend
    from polarmem_server.library.memory import NamespaceSettings

    memory.create_namespace(
        NamespaceSettings("bench", spaces=(SpaceSpec("vis", dim),), encoder="none", concepts=tuple(CONCEPTS))
    )
    started = time.perf_counter()
    for start in range(0, n, 1000):
        failed = [
            r
            for r in memory.remember_batch("bench", items(start, min(1000, n - start), dim))
            if isinstance(r, Exception)
        ]
        assert not failed, failed[:3]
    ingest = n / (time.perf_counter() - started)
    # The earlier write path, for comparison: one existence look-up (Milvus round trip) per item.
    memory.backend.stored_ids = lambda ns, ids: Backend.stored_ids(memory.backend, ns, ids)
    started = time.perf_counter()
    for start in range(n, n + memory_path_items, 100):
        memory.remember_batch("bench", items(start, 100, dim))
    memory_path = memory_path_items / (time.perf_counter() - started)
    del memory.backend.stored_ids
    if ingest_only:
        report = {
            "items": n,
            "ingest_items_per_s": round(ingest, 1),
            "per_item_check_items_per_s": round(memory_path, 1),
            "per_item_check_items": memory_path_items,
        }
        print(label, json.dumps(report), flush=True)
        return report
    rng = np.random.default_rng(SEED)
    latencies = []
    cpu_before = time.process_time() + (tree_cpu_seconds(server_pid) if server_pid else 0.0)
    for _ in range(queries):
        required, forbidden = rng.choice(len(CONCEPTS), 2, replace=False)
        vector = rng.standard_normal(dim).astype(np.float32)
        t = time.perf_counter()
        result = memory.recall(
            "bench", vectors={"vis": vector}, required=[CONCEPTS[required]], forbidden=[CONCEPTS[forbidden]], k=k
        )
        latencies.append(time.perf_counter() - t)
        assert len(result.hits) == k
    cpu = time.process_time() + (tree_cpu_seconds(server_pid) if server_pid else 0.0) - cpu_before
    report = {
        "items": n,
        "ingest_items_per_s": round(ingest, 1),
        "per_item_check_items_per_s": round(memory_path, 1),
        "per_item_check_items": memory_path_items,
        "recall_p50_ms": round(float(np.percentile(latencies, 50)) * 1000, 2),
        "recall_p99_ms": round(float(np.percentile(latencies, 99)) * 1000, 2),
        "cpu_ms_per_recall": round(cpu / queries * 1000, 2),
        "queries": queries,
    }
    print(label, json.dumps(report), flush=True)
    return report


def recall_plan(dim: int, queries: int, seed: int) -> list[tuple[str, str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    plan = []
    for _ in range(queries):
        required, forbidden = rng.choice(len(CONCEPTS), 2, replace=False)
        plan.append((CONCEPTS[required], CONCEPTS[forbidden], rng.standard_normal(dim).astype(np.float32)))
    return plan


def recall_client(address: str, dim: int, queries: int, k: int, seed: int, ready, go) -> list[float]:
    """One client process (its own gRPC connection): 5 warm-up recalls, then `queries` recalls
    back to back once every client is ready; returns their latencies in seconds."""
    from polarmem_server.faces.client import PolarMemClient

    plan = recall_plan(dim, queries, seed)
    with PolarMemClient(address, timeout_s=600) as client:
        for required, forbidden, vector in plan[:5]:  # warm-up: channel, collection handles
            client.recall("bench", vectors={"vis": vector}, required=[required], forbidden=[forbidden], top_k=k)
        ready.wait()
        go.wait()
        latencies = []
        for required, forbidden, vector in plan:
            t = time.perf_counter()
            hits = client.recall(
                "bench", vectors={"vis": vector}, required=[required], forbidden=[forbidden], top_k=k
            ).hits
            latencies.append(time.perf_counter() - t)
            assert len(hits) == k
    return latencies


def serve_recalls(
    commands: list[list[str]],
    label: str,
    dim: int,
    queries: int,
    k: int,
    milvus_pid: int | None,
    clients: int = 1,
    processes: int = 1,
) -> dict:
    """Recall p50 / p99 over gRPC through real `polarmem serve` processes (one per command), with
    `clients` client processes in flight together (client i talks to command i mod len), each
    making `queries` recalls; the serve processes' CPU per call (their trees: `--processes N`
    forks replicas) and the Milvus tree's, reported apart, and their memory after the run."""
    import multiprocessing

    started = [(process, process.address) for process in (start_serve(command, cwd="/") for command in commands)]
    context = multiprocessing.get_context("spawn")
    manager = context.Manager()
    ready, go = manager.Barrier(clients + 1), manager.Barrier(clients + 1)
    try:
        with context.Pool(clients) as pool:
            pending = [
                pool.apply_async(recall_client, (started[i % len(started)][1], dim, queries, k, SEED + i, ready, go))
                for i in range(clients)
            ]
            ready.wait()
            serve_before = sum(tree_cpu_seconds(process.pid) for process, _ in started)
            milvus_before = tree_cpu_seconds(milvus_pid) if milvus_pid else 0.0
            t0 = time.perf_counter()
            go.wait()
            latencies = [latency for p in pending for latency in p.get()]
            wall = time.perf_counter() - t0
            serve_cpu = sum(tree_cpu_seconds(process.pid) for process, _ in started) - serve_before
            milvus_cpu = (tree_cpu_seconds(milvus_pid) - milvus_before) if milvus_pid else 0.0
        serve_rss = sum(tree_rss_mb(process.pid) for process, _ in started)
    finally:
        manager.shutdown()
        for process, _ in started:
            stop(process, 60)
    calls = len(latencies)
    report = {
        "serve_processes": processes,
        "clients_in_flight": clients,
        "recall_p50_ms": round(float(np.percentile(latencies, 50)) * 1000, 2),
        "recall_p99_ms": round(float(np.percentile(latencies, 99)) * 1000, 2),
        "recalls_per_s": round(calls / wall, 2),
        "serve_cpu_ms_per_recall": round(serve_cpu / calls * 1000, 2),
        "milvus_cpu_ms_per_recall": round(milvus_cpu / calls * 1000, 2),
        "serve_rss_mb": serve_rss,
        "queries": calls,
    }
    print(label, "through polarmem serve", json.dumps(report), flush=True)
    return report


def serve_command(*args: str) -> list[str]:
    return polarmem_serve("--address", "127.0.0.1:0", "--metrics-port", "-1", "--log-level", "WARNING", *args)


def flag(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"use true or false, got {text!r}")
    return text.lower() == "true"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--queries", type=int, default=100, help="recalls per client")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument(
        "--memory-path-items",
        type=int,
        default=500,
        help="items written afterwards with the earlier per-item existence check",
    )
    parser.add_argument("--ingest-only", action="store_true", help="ingest figures only (no recalls)")
    parser.add_argument(
        "--library-recall",
        type=flag,
        default=True,
        help="also time recalls through the library in this process (true/false)",
    )
    parser.add_argument(
        "--processes", default="1", help="comma list of PolarMem serve process counts to measure recall with, e.g. 1,2"
    )
    parser.add_argument(
        "--milvus-writers",
        type=int,
        default=1,
        help="> 1: the second half of the items is written into Milvus by this many processes",
    )
    parser.add_argument("--uri", default="", help="use this Milvus instead of starting the wheel's server")
    parser.add_argument("--server-pid", type=int, default=0, help="with --uri: the Milvus process to charge CPU to")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "milvus.json"))
    args = parser.parse_args(argv)
    process_counts = [int(p) for p in args.processes.split(",")]
    if args.milvus_writers > 1 and (args.library_recall or args.memory_path_items) and not args.ingest_only:
        parser.error(
            "--milvus-writers > 1 measures recall through polarmem serve only: "
            "add --library-recall false --memory-path-items 0"
        )

    from polarmem_server.index import SpaceSpec
    from polarmem_server.library.memory import Memory, NamespaceSettings
    from polarmem_server.storage.milvus.backend import MilvusBackend
    from polarmem_server.storage.milvus.connection import MilvusSettings

    load_before = os.getloadavg()
    report = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg_before": load_before,
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        "config": vars(args),
    }
    run_args = (args.items, args.dim, args.queries, args.k, args.memory_path_items)
    library_only_ingest = args.ingest_only or not args.library_recall
    with tempfile.TemporaryDirectory() as tmp:
        local = Memory(Path(tmp) / "local")
        report["local"] = run(local, "local", *run_args, None, library_only_ingest)
        local.close()
        if not args.ingest_only:
            for count in process_counts:
                extra = ["--processes", str(count)] if count > 1 else []
                report[f"local_serve_{count}"] = serve_recalls(
                    [serve_command("--data-dir", str(Path(tmp) / "local"), *extra)],
                    f"local x{count}",
                    args.dim,
                    args.queries,
                    args.k,
                    None,
                    clients=count,
                    processes=count,
                )
        shutil.rmtree(Path(tmp) / "local")  # its disk, before Milvus fills its own
        server = None
        uri = args.uri
        if not uri:
            from milvus_server import MilvusServer, _take_lock

            lock = _take_lock()
            server = MilvusServer(Path(tmp) / "milvus" / "data")
            server.data_dir.parent.mkdir(parents=True, exist_ok=True)
            server.start()
            uri = server.uri
        try:
            prefix = f"bench{uuid.uuid4().hex[:8]}"
            memory = Memory(MilvusBackend(MilvusSettings(uri, prefix=prefix, timeout_s=120)))
            pid = server.process.pid if server else (args.server_pid or None)
            if args.milvus_writers == 1:
                report["milvus"] = run(memory, "milvus", *run_args, pid, library_only_ingest)
                memory.close()
            else:
                memory.create_namespace(
                    NamespaceSettings(
                        "bench", spaces=(SpaceSpec("vis", args.dim),), encoder="none", concepts=tuple(CONCEPTS)
                    )
                )
                memory.close()
                half = args.items // 2
                phases = [
                    milvus_ingest(uri, prefix, args.dim, 0, half, 1),
                    milvus_ingest(uri, prefix, args.dim, half, args.items, args.milvus_writers),
                ]
                report["milvus"] = {
                    "items": args.items,
                    "ingest_phases": phases,
                    "ingest_items_per_s": phases[0]["ingest_items_per_s"],
                }
            if pid:
                report["milvus"]["milvus_rss_mb_after_ingest"] = tree_rss_mb(pid)
            if not args.ingest_only:
                for count in process_counts:
                    command = serve_command(
                        "--backend", "milvus", "--milvus-uri", uri, "--milvus-prefix", prefix, "--milvus-timeout", "600"
                    )
                    report[f"milvus_serve_{count}"] = serve_recalls(
                        [command] * count,
                        f"milvus x{count}",
                        args.dim,
                        args.queries,
                        args.k,
                        pid,
                        clients=count,
                        processes=count,
                    )
                if pid:
                    report["milvus"]["milvus_rss_mb_after_recalls"] = tree_rss_mb(pid)
        finally:
            if server is not None:
                server.stop()
                lock.close()
    m, loc = report["milvus"], report["local"]
    ratios = report["ratios_milvus_over_local"] = {
        "ingest_items_per_s_one_writer": round(m["ingest_items_per_s"] / loc["ingest_items_per_s"], 3)
    }
    if not library_only_ingest:
        ratios.update(
            {
                "library_recall_p50": round(m["recall_p50_ms"] / loc["recall_p50_ms"], 1),
                "library_recall_p99": round(m["recall_p99_ms"] / loc["recall_p99_ms"], 1),
            }
        )
    if not args.ingest_only:
        for count in process_counts:
            ms, ls = report[f"milvus_serve_{count}"], report[f"local_serve_{count}"]
            ratios.update(
                {
                    f"serve_{count}_recall_p50": round(ms["recall_p50_ms"] / ls["recall_p50_ms"], 1),
                    f"serve_{count}_recall_p99": round(ms["recall_p99_ms"] / ls["recall_p99_ms"], 1),
                    f"serve_{count}_recalls_per_s": round(ms["recalls_per_s"] / ls["recalls_per_s"], 3),
                    f"serve_{count}_cpu_per_recall_serve_plus_milvus": round(
                        (ms["serve_cpu_ms_per_recall"] + ms["milvus_cpu_ms_per_recall"])
                        / max(ls["serve_cpu_ms_per_recall"], 1e-6),
                        1,
                    ),
                }
            )
    report["machine"]["loadavg_after"] = os.getloadavg()
    write_report(args.out, report)
    print(json.dumps(ratios))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
