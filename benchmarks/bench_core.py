"""Benchmark of the compiled retrieval core against its peers, measured in the same run.

Peers: FAISS IndexFlatIP (one OpenMP thread for single queries, its best setting here; all
threads for batches, on its BLAS path), FAISS with an IDSelectorBitmap hard filter (the closest
FAISS gets to a constraint check: it cannot tier), and the numpy brute-force reference. Also
measures the machine's read bandwidth and reports each scan's effective bytes/s as a share of it.

Batches (64 queries) are measured for fp32 / fp16 / int8 rows against FAISS's BLAS path in the
same run, plus a batch whose queries carry different constraints (FAISS has no per-query filter
in one batch call; the peer there is our own one-request-at-a-time loop). Every batch answer is
checked to equal the single-request answer. The load average is recorded with each size: the
machine may be shared, so only same-run ratios mean anything.

Writes JSON (with build_info()) and prints a table. Not a test: never collected by pytest.

    python benchmarks/bench_core.py --sizes 100000 1000000 --out benchmarks/results/core.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from polarmem_server import _core
from polarmem_server.index import Index, SpaceSpec, build_info

# Concept layout of the synthetic namespace (ids into a 100-concept vocabulary).
RARE_A, RARE_B = 0, 1  # required, rare: entailed tier < k, no pruning possible
COMMON_A, COMMON_B = 2, 3  # required, common: entailed tier >= k, pruning applies
FORBIDDEN = 4
VOCAB = 100


def make_concepts(n: int, rng: np.random.Generator) -> tuple[list[list[int]], list[list[int]]]:
    """HAS / NOT_HAS lists with realistic skew: ~half the items conflict with the query."""
    has_rare = rng.random((n, 2)) < (3.0 / n)
    has_common = rng.random((n, 2)) < 0.03
    not_required = rng.random((n, 2)) < 0.25
    has_forbidden = rng.random(n) < 0.1
    background = rng.random((n, 6)) < 0.05  # a few other concepts, never queried
    has, not_has = [], []
    for i in range(n):
        h = [
            c
            for c, flag in (
                (RARE_A, has_rare[i, 0]),
                (RARE_B, has_rare[i, 1]),
                (COMMON_A, has_common[i, 0]),
                (COMMON_B, has_common[i, 1]),
                (FORBIDDEN, has_forbidden[i]),
            )
            if flag
        ]
        h += [10 + j for j in np.flatnonzero(background[i])]
        nh = []
        for which, (rare, common) in enumerate(((RARE_A, COMMON_A), (RARE_B, COMMON_B))):
            if not_required[i, which]:
                nh += [c for c in (rare, common) if c not in h]
        has.append(h)
        not_has.append(nh)
    return has, not_has


def tiers_numpy(has_sets, not_sets, required, forbidden, n):
    req, forb = set(required), set(forbidden)
    tiers = np.zeros(n, dtype=np.int8)
    for i in range(n):
        if req & not_sets[i] or forb & has_sets[i]:
            tiers[i] = -1
        elif req & has_sets[i]:
            tiers[i] = 1
    return tiers


def numpy_hard_topk(X, q, tiers, k):
    """The reference: every dot product, then the lexicographic key (tier first)."""
    scores = X @ q
    key = tiers.astype(np.float32) * 4.0 + scores
    top = np.argpartition(-key, k)[:k]
    return top[np.lexsort((top, -key[top]))]


def timed(fn, repeats: int) -> float:
    """Median wall time in milliseconds."""
    return timed_with_cpu(fn, repeats)[0]


def timed_with_cpu(fn, repeats: int) -> tuple[float, float]:
    """Median wall time and median process CPU time (all threads), in milliseconds."""
    fn()  # warm-up
    walls, cpus = [], []
    for _ in range(repeats):
        start, cpu_start = time.perf_counter(), time.process_time()
        fn()
        walls.append((time.perf_counter() - start) * 1e3)
        cpus.append((time.process_time() - cpu_start) * 1e3)
    return statistics.median(walls), statistics.median(cpus)


def load_average() -> list[float]:
    """1, 5 and 15 minute load averages (what `uptime` prints)."""
    return [round(x, 2) for x in os.getloadavg()]


def run_size(
    n: int,
    dim: int,
    k: int,
    repeats: int,
    faiss,
    bandwidth: float,
    rng,
    storages: tuple[str, ...] = ("fp32", "fp16", "int8"),
) -> dict:
    print(f"\n== N = {n:,} x d = {dim}, k = {k} ==", flush=True)
    X = rng.standard_normal((n, dim), dtype=np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    queries = rng.standard_normal((max(repeats, 64) + 1, dim), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    has, not_has = make_concepts(n, rng)
    has_sets = [set(h) for h in has]
    not_sets = [set(x) for x in not_has]

    indexes = {}
    for storage in storages:
        start = time.perf_counter()
        index = Index([SpaceSpec("vis", dim, storage=storage)])
        index.ensure_concepts(VOCAB)
        index.add(n, {"vis": X}, has, not_has)
        indexes[storage] = index
        print(f"built {storage} index in {time.perf_counter() - start:.1f} s", flush=True)
    ours = indexes["fp32"]

    flat = faiss.IndexFlatIP(dim)
    flat.add(X)
    results: dict = {"n": n, "dim": dim, "k": k}
    qi = iter(range(10**9))

    def next_query():
        return queries[next(qi) % len(queries)]

    # 1. Plain cosine top-k, single query.
    faiss.omp_set_num_threads(1)
    t_faiss = timed(lambda: flat.search(next_query()[None, :], k), repeats)
    t_ours = timed(lambda: ours.search({"vis": next_query()}, k=k, mode="off"), repeats)
    t_numpy = timed(lambda: np.argpartition(-(X @ next_query()), k)[:k], repeats)
    results["plain"] = {
        "ours_ms": t_ours,
        "faiss_flat_ms": t_faiss,
        "numpy_ms": t_numpy,
        "speedup_vs_faiss": t_faiss / t_ours,
        "speedup_vs_numpy": t_numpy / t_ours,
        "bandwidth_share": (X.nbytes / (t_ours / 1e3)) / bandwidth,
    }
    # The same on one thread each, in process CPU time (what the load moves least).
    _, cpu_faiss_1 = timed_with_cpu(lambda: flat.search(next_query()[None, :], k), repeats)
    _, cpu_ours_1 = timed_with_cpu(lambda: ours.search({"vis": next_query()}, k=k, mode="off", threads=1), repeats)
    results["plain_one_thread_cpu"] = {
        "ours_cpu_ms": cpu_ours_1,
        "faiss_flat_cpu_ms": cpu_faiss_1,
        "speedup_vs_faiss": cpu_faiss_1 / cpu_ours_1,
    }

    # 2. Hard mode, 2 required + 1 forbidden, without and with tier pruning.
    for name, required in (("hard_no_pruning", [RARE_A, RARE_B]), ("hard_pruning", [COMMON_A, COMMON_B])):
        tiers = tiers_numpy(has_sets, not_sets, required, [FORBIDDEN], n)
        probe = ours.search({"vis": queries[0]}, required, [FORBIDDEN], k=k)
        selector_bits = np.packbits((tiers >= 0).astype(np.uint8), bitorder="little")
        params = faiss.SearchParameters(sel=faiss.IDSelectorBitmap(n, faiss.swig_ptr(selector_bits)))
        t_faiss_sel = timed(lambda: flat.search(next_query()[None, :], k, params=params), repeats)
        t_ours = timed(lambda: ours.search({"vis": next_query()}, required, [FORBIDDEN], k=k), repeats)
        t_numpy = timed(lambda: numpy_hard_topk(X, next_query(), tiers, k), repeats)
        results[name] = {
            "ours_ms": t_ours,
            "faiss_idselector_ms": t_faiss_sel,
            "numpy_ms": t_numpy,
            "speedup_vs_faiss_idselector": t_faiss_sel / t_ours,
            "speedup_vs_numpy": t_numpy / t_ours,
            "tier_counts": probe.tier_counts,
            "items_scored": probe.scored,
            "non_conflicting_share": float((tiers >= 0).mean()),
        }
        # Same answer as the reference: the benchmark checks what it times.
        want = numpy_hard_topk(X, queries[0], tiers, k)
        assert list(probe.slots) == list(want), (name, list(probe.slots), list(want))

    # 3. Compact storage with exact fp32 re-rank, plain single query.
    for storage in [s for s in storages if s != "fp32"]:
        index = indexes[storage]
        hits = index.search({"vis": queries[1]}, k=k, mode="off")
        exact = ours.search({"vis": queries[1]}, k=k, mode="off")
        assert list(hits.slots) == list(exact.slots) and np.array_equal(hits.scores, exact.scores)
        t = timed(lambda: index.search({"vis": next_query()}, k=k, mode="off"), repeats)
        compact_bytes = n * dim * (2 if storage == "fp16" else 1)
        results[f"compact_{storage}"] = {
            "ours_ms": t,
            "faiss_flat_ms": t_faiss,
            "speedup_vs_faiss": t_faiss / t,
            "speedup_vs_fp32": results["plain"]["ours_ms"] / t,
            "reranked": hits.reranked,
            "bandwidth_share": (compact_bytes / (t / 1e3)) / bandwidth,
        }

    # 4. A batch of 64 queries (FAISS on its BLAS path, all threads), per storage.
    batch = queries[:64]
    threads = os.cpu_count() or 1
    faiss.omp_set_num_threads(threads)
    faiss.cvar.distance_compute_blas_threshold = 1
    batch_repeats = max(2, repeats // 5)
    results["load_before_batches"] = load_average()
    t_faiss_batch, cpu_faiss_batch = timed_with_cpu(lambda: flat.search(batch, k), batch_repeats)
    _, want = flat.search(batch[:8], k)
    for storage in storages:
        index = indexes[storage]
        t_batch, cpu_batch = timed_with_cpu(lambda: index.search_batch("vis", batch, k=k, mode="off"), batch_repeats)
        got = index.search_batch("vis", batch, k=k, mode="off")
        for q in range(0, 64, 9):  # the batch answer is the single-request answer, exactly
            alone = index.search({"vis": batch[q]}, k=k, mode="off")
            assert list(got[q].slots) == list(alone.slots) and np.array_equal(got[q].scores, alone.scores)
        agree = np.mean([len(set(g.slots.tolist()) & set(w.tolist())) / k for g, w in zip(got, want)])
        name = "batch64" if storage == "fp32" else f"batch64_{storage}"
        results[name] = {
            "ours_ms": t_batch,
            "faiss_blas_ms": t_faiss_batch,
            "ours_cpu_ms": cpu_batch,
            "faiss_cpu_ms": cpu_faiss_batch,
            "ours_qps": 64 / (t_batch / 1e3),
            "faiss_qps": 64 / (t_faiss_batch / 1e3),
            "speedup_vs_faiss": t_faiss_batch / t_batch,
            "top_k_agreement_with_faiss": agree,
            "threads": threads,
        }

    # 5. A batch whose queries carry their own constraints (three constraint sets, hard mode).
    constraint_sets = [([COMMON_A], [FORBIDDEN]), ([COMMON_B], [FORBIDDEN]), ([RARE_A, RARE_B], [FORBIDDEN])]
    requests = [ours.request({"vis": q}, *constraint_sets[i % 3], k=k) for i, q in enumerate(batch)]
    t_batch = timed(lambda: ours.search_requests(requests), batch_repeats)
    t_loop = timed(lambda: [ours.search_requests(r) for r in requests], batch_repeats)
    got = ours.search_requests(requests)
    for r, hits in zip(requests, got):
        alone = ours.search_requests(r)
        assert list(hits.slots) == list(alone.slots) and np.array_equal(hits.scores, alone.scores)
    results["batch64_per_query_hard"] = {
        "ours_ms": t_batch,
        "ours_one_by_one_ms": t_loop,
        "speedup_vs_one_by_one": t_loop / t_batch,
        "constraint_sets": 3,
    }
    # 6. The same fp32 batch on ONE thread, in process CPU time: a figure the machine's load moves
    #    far less than wall time (no waiting for a descheduled peer thread). Peers: FAISS's BLAS
    #    path and numpy's own sgemm (X @ Q.T, no top-k at all), both limited to one thread.
    faiss.omp_set_num_threads(1)
    if n > 200_000:  # FAISS alone would take minutes of CPU on a loaded machine
        results["load_after_batches"] = load_average()
        return results
    _, cpu_ours_1 = timed_with_cpu(lambda: ours.search_batch("vis", batch, k=k, mode="off", threads=1), batch_repeats)
    _, cpu_faiss_1 = timed_with_cpu(lambda: flat.search(batch, k), batch_repeats)
    one_thread = {
        "ours_cpu_ms": cpu_ours_1,
        "faiss_blas_cpu_ms": cpu_faiss_1,
        "speedup_vs_faiss": cpu_faiss_1 / cpu_ours_1,
        "ours_gflops": n * 64 * dim * 2 / (cpu_ours_1 / 1e3) / 1e9,
    }
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = None
    if threadpool_limits is not None:
        with threadpool_limits(limits=1):
            _, cpu_sgemm = timed_with_cpu(lambda: X @ batch.T, batch_repeats)
        one_thread.update(numpy_sgemm_cpu_ms=cpu_sgemm, speedup_vs_numpy_sgemm=cpu_sgemm / cpu_ours_1)
    results["batch64_one_thread_cpu"] = one_thread
    results["load_after_batches"] = load_average()
    return results


def print_table(size_results: list[dict], bandwidth: float) -> None:
    print(f"\nread bandwidth: {bandwidth / 1e9:.1f} GB/s")
    for r in size_results:
        print(
            f"N = {r['n']:,}: load average {r['load_before']} before, {r['load_before_batches']} before batches, "
            f"{r['load_after_batches']} after"
        )
    header = f"{'N':>9} {'case':<18} {'ours ms':>9} {'peer':<18} {'peer ms':>9} {'ratio':>7} {'bw share':>9}"
    print(header)
    print("-" * len(header))
    for r in size_results:
        rows = [
            (
                "plain fp32",
                r["plain"]["ours_ms"],
                "faiss flat",
                r["plain"]["faiss_flat_ms"],
                r["plain"]["bandwidth_share"],
            ),
            ("plain fp32", r["plain"]["ours_ms"], "numpy", r["plain"]["numpy_ms"], None),
            (
                "plain, 1 thr CPU",
                r.get("plain_one_thread_cpu", {}).get("ours_cpu_ms"),
                "faiss flat CPU",
                r.get("plain_one_thread_cpu", {}).get("faiss_flat_cpu_ms", 1.0),
                None,
            ),
            (
                "hard, no pruning",
                r["hard_no_pruning"]["ours_ms"],
                "faiss+idselector",
                r["hard_no_pruning"]["faiss_idselector_ms"],
                None,
            ),
            (
                "hard, pruning",
                r["hard_pruning"]["ours_ms"],
                "faiss+idselector",
                r["hard_pruning"]["faiss_idselector_ms"],
                None,
            ),
            ("hard, pruning", r["hard_pruning"]["ours_ms"], "numpy", r["hard_pruning"]["numpy_ms"], None),
            (
                "fp16 + rerank",
                r.get("compact_fp16", {}).get("ours_ms"),
                "faiss flat",
                r["plain"]["faiss_flat_ms"],
                r.get("compact_fp16", {}).get("bandwidth_share"),
            ),
            (
                "int8 + rerank",
                r.get("compact_int8", {}).get("ours_ms"),
                "faiss flat",
                r["plain"]["faiss_flat_ms"],
                r.get("compact_int8", {}).get("bandwidth_share"),
            ),
            ("batch of 64", r["batch64"]["ours_ms"], "faiss blas", r["batch64"]["faiss_blas_ms"], None),
            (
                "batch 64, fp16",
                r.get("batch64_fp16", {}).get("ours_ms"),
                "faiss blas",
                r["batch64"]["faiss_blas_ms"],
                None,
            ),
            (
                "batch 64, int8",
                r.get("batch64_int8", {}).get("ours_ms"),
                "faiss blas",
                r["batch64"]["faiss_blas_ms"],
                None,
            ),
            (
                "batch 64, own cons.",
                r["batch64_per_query_hard"]["ours_ms"],
                "ours 1-by-1",
                r["batch64_per_query_hard"]["ours_one_by_one_ms"],
                None,
            ),
        ]
        one = r.get("batch64_one_thread_cpu", {})
        if one:
            rows.append(("batch 64, 1 thr CPU", one["ours_cpu_ms"], "faiss blas CPU", one["faiss_blas_cpu_ms"], None))
        if "numpy_sgemm_cpu_ms" in one:
            rows.append(
                (
                    "batch 64, 1 thr CPU",
                    r["batch64_one_thread_cpu"]["ours_cpu_ms"],
                    "numpy sgemm CPU",
                    r["batch64_one_thread_cpu"]["numpy_sgemm_cpu_ms"],
                    None,
                )
            )
        for case, ours_ms, peer, peer_ms, share in rows:
            if ours_ms is None:
                continue
            share_text = f"{share:8.0%}" if share is not None else ""
            print(
                f"{r['n']:>9,} {case:<18} {ours_ms:9.2f} {peer:<18} {peer_ms:9.2f} {peer_ms / ours_ms:6.2f}x {share_text:>9}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--seed", type=int, default=20260211)
    parser.add_argument(
        "--storages",
        nargs="+",
        default=["fp32", "fp16", "int8"],
        choices=["fp32", "fp16", "int8"],
        help="row storages to build (fp32 is always needed)",
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/core.json"))
    args = parser.parse_args(argv)
    try:
        import faiss
    except ImportError:
        print("faiss-cpu is needed for the peer measurements: pip install faiss-cpu", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    bandwidth = _core.measure_read_bandwidth(1 << 30, os.cpu_count() or 1, 5)
    load_at_start = load_average()
    size_results = []
    for n in args.sizes:
        load_before = load_average()
        storages = tuple(dict.fromkeys(["fp32", *args.storages]))
        size_results.append(run_size(n, args.dim, args.k, args.repeats, faiss, bandwidth, rng, storages))
        size_results[-1]["load_before"] = load_before
    print_table(size_results, bandwidth)
    report = {
        "benchmark": "bench_core",
        "build_info": build_info(),
        "machine": {
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "processor": platform.processor(),
            "read_bandwidth_bytes_per_s": bandwidth,
            "load_average_start": load_at_start,
            "load_average_end": load_average(),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "(default)"),
        },
        "faiss_version": faiss.__version__,
        "numpy_version": np.__version__,
        "results": size_results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=float))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
