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

    python benchmarks/bench_milvus.py                      # 100,000 items, d = 64
    python benchmarks/bench_milvus.py --items 5000 --queries 20   # a quick run

Writes benchmarks/results/milvus.json. Not a test.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

CONCEPTS = [f"c{i}" for i in range(20)]
SEED = 20261130


def items(start: int, count: int, dim: int):
    from polarmem_server.memory import ItemInput

    rng = np.random.default_rng(SEED + start)
    vectors = rng.standard_normal((count, dim), dtype=np.float32)
    draws = rng.random((count, len(CONCEPTS)))
    out = []
    for i in range(count):
        states = {c: ("has" if d < 0.15 else "not_has") for c, d in zip(CONCEPTS, draws[i]) if d < 0.5}
        out.append(ItemInput(id=f"i{start + i:08d}", vectors={"vis": vectors[i]}, states=states))
    return out


def tree_cpu_seconds(pid: int) -> float:
    """utime + stime of a process and its descendants (/proc), in seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        stats[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += stats.get(p, 0.0)
        todo.extend(children.get(p, []))
    return total


def run(memory, label: str, n: int, dim: int, queries: int, k: int, memory_path_items: int, server_pid: int | None,
        ingest_only: bool = False):
    from polarmem_server.index import SpaceSpec
    from polarmem_server.storage.backend import Backend
    from polarmem_server.memory import NamespaceSettings

    memory.create_namespace(NamespaceSettings("bench", spaces=(SpaceSpec("vis", dim),), encoder="none",
                                              concepts=tuple(CONCEPTS)))
    started = time.perf_counter()
    for start in range(0, n, 1000):
        failed = [r for r in memory.remember_batch("bench", items(start, min(1000, n - start), dim))
                  if isinstance(r, Exception)]
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
        report = {"items": n, "ingest_items_per_s": round(ingest, 1),
                  "per_item_check_items_per_s": round(memory_path, 1), "per_item_check_items": memory_path_items}
        print(label, json.dumps(report), flush=True)
        return report
    rng = np.random.default_rng(SEED)
    latencies = []
    cpu_before = time.process_time() + (tree_cpu_seconds(server_pid) if server_pid else 0.0)
    for q in range(queries):
        required, forbidden = rng.choice(len(CONCEPTS), 2, replace=False)
        vector = rng.standard_normal(dim).astype(np.float32)
        t = time.perf_counter()
        result = memory.recall("bench", vectors={"vis": vector}, required=[CONCEPTS[required]],
                               forbidden=[CONCEPTS[forbidden]], k=k)
        latencies.append(time.perf_counter() - t)
        assert len(result.hits) == k
    cpu = time.process_time() + (tree_cpu_seconds(server_pid) if server_pid else 0.0) - cpu_before
    report = {"items": n, "ingest_items_per_s": round(ingest, 1),
              "per_item_check_items_per_s": round(memory_path, 1), "per_item_check_items": memory_path_items,
              "recall_p50_ms": round(float(np.percentile(latencies, 50)) * 1000, 2),
              "recall_p99_ms": round(float(np.percentile(latencies, 99)) * 1000, 2),
              "cpu_ms_per_recall": round(cpu / queries * 1000, 2), "queries": queries}
    print(label, json.dumps(report), flush=True)
    return report


def serve_recalls(command: list[str], label: str, dim: int, queries: int, k: int, milvus_pid: int | None) -> dict:
    """Recall p50 / p99 over gRPC through a real `polarmem serve` process, and the CPU per call of
    that process (and of the Milvus process tree, reported apart)."""
    import subprocess

    from polarmem_server.faces.client import PolarMemClient

    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd="/")
    try:
        line = ""
        while process.poll() is None and not line.startswith("polarmem serving on "):
            line = process.stdout.readline()
        address = line.split()[3].rstrip(";")
        rng = np.random.default_rng(SEED)
        plan = []
        for _ in range(queries):
            required, forbidden = rng.choice(len(CONCEPTS), 2, replace=False)
            plan.append((CONCEPTS[required], CONCEPTS[forbidden], rng.standard_normal(dim).astype(np.float32)))
        with PolarMemClient(address) as client:
            for required, forbidden, vector in plan[:5]:  # warm-up: channel, collection handles
                client.recall("bench", vectors={"vis": vector}, required=[required], forbidden=[forbidden], top_k=k)
            latencies = []
            serve_before = tree_cpu_seconds(process.pid)
            milvus_before = tree_cpu_seconds(milvus_pid) if milvus_pid else 0.0
            for required, forbidden, vector in plan:
                t = time.perf_counter()
                hits = client.recall("bench", vectors={"vis": vector}, required=[required], forbidden=[forbidden],
                                     top_k=k).hits
                latencies.append(time.perf_counter() - t)
                assert len(hits) == k
            serve_cpu = tree_cpu_seconds(process.pid) - serve_before
            milvus_cpu = (tree_cpu_seconds(milvus_pid) - milvus_before) if milvus_pid else 0.0
    finally:
        process.terminate()
        process.wait(timeout=60)
    report = {"recall_p50_ms": round(float(np.percentile(latencies, 50)) * 1000, 2),
              "recall_p99_ms": round(float(np.percentile(latencies, 99)) * 1000, 2),
              "serve_cpu_ms_per_recall": round(serve_cpu / queries * 1000, 2),
              "milvus_cpu_ms_per_recall": round(milvus_cpu / queries * 1000, 2), "queries": queries}
    print(label, "through polarmem serve", json.dumps(report), flush=True)
    return report


def serve_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "polarmem_server.faces.cli", "serve", "--address", "127.0.0.1:0",
            "--metrics-port", "-1", "--log-level", "WARNING", *args]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--memory-path-items", type=int, default=500,
                        help="items written afterwards with the earlier per-item existence check")
    parser.add_argument("--ingest-only", action="store_true", help="ingest figures only (no recalls)")
    parser.add_argument("--uri", default="", help="use this Milvus instead of starting the wheel's server")
    parser.add_argument("--server-pid", type=int, default=0, help="with --uri: the Milvus process to charge CPU to")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "milvus.json"))
    args = parser.parse_args(argv)

    from polarmem_server.memory import Memory
    from polarmem_server.storage.milvus.backend import MilvusBackend
    from polarmem_server.storage.milvus.connection import MilvusSettings

    load_before = os.getloadavg()
    report = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "loadavg_before": load_before},
              "config": vars(args)}
    run_args = (args.items, args.dim, args.queries, args.k, args.memory_path_items)
    with tempfile.TemporaryDirectory() as tmp:
        local = Memory(Path(tmp) / "local")
        report["local"] = run(local, "local", *run_args, None, args.ingest_only)
        local.close()
        if not args.ingest_only:
            report["local_serve"] = serve_recalls(serve_command("--data-dir", str(Path(tmp) / "local")), "local",
                                                  args.dim, args.queries, args.k, None)
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
            memory = Memory(MilvusBackend(MilvusSettings(uri, prefix=prefix, timeout_s=60)))
            pid = server.process.pid if server else (args.server_pid or None)
            report["milvus"] = run(memory, "milvus", *run_args, pid, args.ingest_only)
            memory.close()
            if not args.ingest_only:
                report["milvus_serve"] = serve_recalls(
                    serve_command("--backend", "milvus", "--milvus-uri", uri, "--milvus-prefix", prefix,
                                  "--milvus-timeout", "60"), "milvus", args.dim, args.queries, args.k, pid)
        finally:
            if server is not None:
                server.stop()
                lock.close()
    m, l = report["milvus"], report["local"]
    ratios = report["ratios_milvus_over_local"] = {
        "ingest_items_per_s": round(m["ingest_items_per_s"] / l["ingest_items_per_s"], 3)}
    if not args.ingest_only:
        ms, ls = report["milvus_serve"], report["local_serve"]
        ratios.update({
            "library_recall_p50": round(m["recall_p50_ms"] / l["recall_p50_ms"], 1),
            "library_recall_p99": round(m["recall_p99_ms"] / l["recall_p99_ms"], 1),
            "serve_recall_p50": round(ms["recall_p50_ms"] / ls["recall_p50_ms"], 1),
            "serve_recall_p99": round(ms["recall_p99_ms"] / ls["recall_p99_ms"], 1),
            "serve_cpu_per_recall": round(ms["serve_cpu_ms_per_recall"] / max(ls["serve_cpu_ms_per_recall"], 1e-6), 1)})
    report["machine"]["loadavg_after"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(ratios))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
