"""The Milvus backend's approximate index (`config.ann` kind "ivf" -> IVF_FLAT) against its exact
FLAT index, in one run, on the same items and queries, through the library (Memory).

Two namespaces hold the same ``--items`` items (bench_milvus.py's concepts and queries: 20
concepts, hard recall with 1 required + 1 forbidden concept, k = 10; vectors of d = ``--dim``,
``--vectors embedding`` (default: a 24-d latent mapped to d plus 0.3 noise, as bench_ann.py, with
neighbourhoods like sentence embeddings) or ``isotropic`` Gaussian (no neighbourhoods: the worst
case for any index)): ``flat`` (FLAT, the default) and
``ivf`` (IVF_FLAT, ``--nlist`` lists). After the fill both are flushed, indexed and reloaded, so
every search reads sealed, indexed segments (a serving Milvus gets there by itself as segments
fill). Then per configuration: recall latency p50 / p99, this process's and the Milvus process
tree's CPU per recall, and recall@10 against the FLAT answer (the exact top k), with a check
that every answer keeps the exact tier sequence and tier counts (the index orders items only
within a tier). Configurations: FLAT; IVF exact (every list probed: what `approximate=false`
does); IVF approximate at each ``--nprobe``.

    python benchmarks/bench_milvus_ivf.py                       # 100,000 items, d = 64
    python benchmarks/bench_milvus_ivf.py --items 20000 --queries 30   # a quick run

Writes benchmarks/results/milvus_ivf.json (or --out). Not a test.
"""

from __future__ import annotations

import argparse
import dataclasses
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


QUERY_SEED = 2**32 - 1  # query vectors: a seed no item batch uses (items use their start index)


class Vectors:
    """Unit vectors: `embedding` = a 24-d Gaussian latent mapped to `dim` + 0.3 isotropic noise
    (bench_ann.py's generator), `isotropic` = Gaussian; one fixed map for items and queries."""

    def __init__(self, kind: str, dim: int, seed: int = 20261201) -> None:
        self.kind, self.dim = kind, dim
        self.map = np.random.default_rng(seed).standard_normal((24, dim)).astype(np.float32)

    @staticmethod
    def _unit(a: np.ndarray) -> np.ndarray:
        return (a / np.linalg.norm(a, axis=1, keepdims=True)).astype(np.float32)

    def draw(self, count: int, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        if self.kind == "isotropic":
            return self._unit(rng.standard_normal((count, self.dim)).astype(np.float32))
        latent = rng.standard_normal((count, 24)).astype(np.float32)
        noise = self._unit(rng.standard_normal((count, self.dim)).astype(np.float32))
        return self._unit(self._unit(latent @ self.map) + 0.3 * noise)


def fill(memory, ns: str, n: int, vectors: Vectors) -> float:
    started = time.perf_counter()
    for start in range(0, n, 1000):
        batch = items(start, min(1000, n - start), vectors.dim)
        rows = vectors.draw(len(batch), seed=start)
        batch = [dataclasses.replace(item, vectors={"vis": row}) for item, row in zip(batch, rows)]
        failed = [r for r in memory.remember_batch(ns, batch) if isinstance(r, Exception)]
        assert not failed, failed[:3]
    return n / (time.perf_counter() - started)


def seal(memory, ns: str, n: int) -> float:
    """Flush, wait until every row is indexed, reload; returns the seconds it took."""
    from pymilvus import utility

    started = time.perf_counter()
    backend = memory.backend
    collection = backend._ns(ns).collection
    collection.flush(timeout=600)
    utility.wait_for_index_building_complete(collection.name, using=backend.connection.alias, timeout=3600)
    progress = utility.index_building_progress(collection.name, using=backend.connection.alias)
    assert progress["indexed_rows"] == n, progress
    collection.release(timeout=600)
    collection.load(timeout=3600)
    return time.perf_counter() - started


def measure(memory, ns: str, plan, k: int, milvus_pid: int, **options) -> tuple[dict, list]:
    for required, forbidden, vector in plan[:3]:  # warm-up
        memory.recall(ns, vectors={"vis": vector}, required=[required], forbidden=[forbidden], k=k, **options)
    latencies, answers = [], []
    cpu_here, cpu_milvus = time.process_time(), tree_cpu_seconds(milvus_pid)
    for required, forbidden, vector in plan:
        t = time.perf_counter()
        result = memory.recall(ns, vectors={"vis": vector}, required=[required], forbidden=[forbidden], k=k, **options)
        latencies.append(time.perf_counter() - t)
        answers.append(result)
    cpu_here, cpu_milvus = time.process_time() - cpu_here, tree_cpu_seconds(milvus_pid) - cpu_milvus
    return {
        "recall_p50_ms": round(float(np.percentile(latencies, 50)) * 1000, 2),
        "recall_p99_ms": round(float(np.percentile(latencies, 99)) * 1000, 2),
        "library_cpu_ms_per_recall": round(cpu_here / len(plan) * 1000, 2),
        "milvus_cpu_ms_per_recall": round(cpu_milvus / len(plan) * 1000, 2),
    }, answers


def agreement(answers, exact) -> dict:
    """recall@k against the exact answers, and whether tiers and counts stayed exact."""
    found = total = 0
    tiers_exact = True
    for got, want in zip(answers, exact):
        found += len({h.item_id for h in got.hits} & {h.item_id for h in want.hits})
        total += len(want.hits)
        tiers_exact &= [h.tier for h in got.hits] == [h.tier for h in want.hits] and got.tier_counts == want.tier_counts
    return {"recall_at_k_vs_flat": round(found / total, 4), "tiers_and_counts_exact": bool(tiers_exact)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--vectors", choices=["embedding", "isotropic"], default="embedding")
    parser.add_argument("--nlist", type=int, default=1024)
    parser.add_argument("--nprobe", default="8,32,128", help="comma-separated lists probed by approximate recalls")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "milvus_ivf.json"))
    args = parser.parse_args(argv)

    from milvus_server import running_milvus

    from polarmem_server.index import AnnSpec, SpaceSpec
    from polarmem_server.library.memory import Memory, NamespaceSettings
    from polarmem_server.storage.milvus.backend import MilvusBackend
    from polarmem_server.storage.milvus.connection import MilvusSettings

    report: dict = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "loadavg_before": os.getloadavg()},
        "items": args.items,
        "dim": args.dim,
        "vectors": args.vectors,
        "k": args.k,
        "queries": args.queries,
        "nlist": args.nlist,
    }
    vectors = Vectors(args.vectors, args.dim)
    plan = [
        (required, forbidden, row)
        for (required, forbidden, _), row in zip(
            recall_plan(args.dim, args.queries, seed=7), vectors.draw(args.queries, seed=QUERY_SEED)
        )
    ]
    with tempfile.TemporaryDirectory() as tmp, running_milvus(Path(tmp) / "milvus" / "data") as server:
        memory = Memory(MilvusBackend(MilvusSettings(server.uri, prefix=f"ivf{uuid.uuid4().hex[:8]}", timeout_s=600)))
        pid = server.process.pid
        for ns, ann in (("flat", None), ("ivf", AnnSpec(kind="ivf", nlist=args.nlist))):
            memory.create_namespace(
                NamespaceSettings(
                    ns, spaces=(SpaceSpec("vis", args.dim),), encoder="none", concepts=tuple(CONCEPTS), ann=ann
                )
            )
            report[f"{ns}_ingest_items_per_s"] = round(fill(memory, ns, args.items, vectors), 1)
            report[f"{ns}_seal_index_load_s"] = round(seal(memory, ns, args.items), 1)
            print(
                ns,
                "filled",
                report[f"{ns}_ingest_items_per_s"],
                "items/s; sealed in",
                report[f"{ns}_seal_index_load_s"],
                "s",
                flush=True,
            )
        report["milvus_rss_mb"] = tree_rss_mb(pid)
        rows = {}
        rows["flat"], exact = measure(memory, "flat", plan, args.k, pid)
        rows["ivf_exact"], answers = measure(memory, "ivf", plan, args.k, pid)
        rows["ivf_exact"].update(agreement(answers, exact))
        for nprobe in (int(x) for x in args.nprobe.split(",")):
            row, answers = measure(memory, "ivf", plan, args.k, pid, approximate=True, ef_search=nprobe)
            row.update(agreement(answers, exact))
            rows[f"ivf_nprobe_{nprobe}"] = row
        for name, row in rows.items():
            row["p50_speedup_vs_flat"] = round(rows["flat"]["recall_p50_ms"] / row["recall_p50_ms"], 2)
            row["milvus_cpu_ratio_vs_flat"] = round(
                row["milvus_cpu_ms_per_recall"] / max(rows["flat"]["milvus_cpu_ms_per_recall"], 1e-6), 2
            )
            print(name, json.dumps(row), flush=True)
        report["rows"] = rows
        memory.close()
    report["machine"]["loadavg_after"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
