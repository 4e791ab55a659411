"""Benchmark of the approximate index within logic tiers against exact search and FAISS HNSW,
all in the same run.

For each size N: one synthetic namespace (d = 384, unit vectors of intrinsic dimension ~24, HAS / NOT_HAS bitmaps)
indexed by PolarMem with int8 rows and an HNSW graph (M = 16, ef_construction = 200), and by FAISS
IndexHNSWFlat with the same M and ef_construction. Scenarios (k = 10):

- ``hard_wide``: hard mode, required concept held by ~30% of items: the entailed tier (~0.3 N)
  holds the top k, so one filtered graph search over that tier;
- ``hard_two_tiers``: hard mode, required concept held by ~5 items: the entailed tier is
  smaller than k (scanned exactly) and the neutral tier is searched in the graph;
- ``off``: plain similarity (all tiers together).

For each, recall@10 within tier against the exact search and median latency over the queries:
PolarMem exact (int8 scan + exact re-rank), PolarMem HNSW at several ef, and FAISS HNSW with an
IDSelectorBitmap of the same allowed set (the tier being searched) at several efSearch. FAISS can
only filter, not tier: its bitmap is built outside the timed call (in its favour), and for
``hard_two_tiers`` it gets the neutral tier only (the part a graph answers). Also build time,
graph save / load time (persisted vs rebuilt start-up) and memory. Single-threaded searches
(FAISS omp 1, PolarMem threads=1) unless noted; load average recorded before and after.

    flock /tmp/polarmem-bench.lock python benchmarks/bench_ann.py --sizes 30000 100000 \\
        --out benchmarks/results/ann.json

``--backend-startup N`` measures the local backend's start-up with N stored items instead: no
graph, graph rebuilt from the store, graph loaded from the file saved on close
(storage/local/ann_files.py), each timed as LocalBackend's constructor, plus the save on close.

    flock /tmp/polarmem-bench.lock python benchmarks/bench_ann.py --backend-startup 100000 \\
        --out benchmarks/results/ann-startup.json

Growth (how cost grows with N): one JSON per size when ``--out`` holds ``{n}``, e.g.

    flock /tmp/polarmem-bench.lock python benchmarks/bench_ann.py --sizes 100000 300000 1000000 \\
        --ef-construction 100 --out 'benchmarks/results/ann-growth-{n}.json'

and ``--plot benchmarks/results/ann-growth-*.json --png docs/ann-growth.png`` draws them.
``--exact-only`` measures the exact int8 point alone, for sizes whose corpus, graph and FAISS copy
do not fit in memory together: the corpus drawn in ``--chunk``-row chunks (same distribution) and
added to an int8 Index without a graph, never held whole; no FAISS; the same three scenarios on
1 and default threads, build time, memory_bytes and peak RSS:

    flock /tmp/polarmem-bench.lock python benchmarks/bench_ann.py --exact-only --sizes 5000000 \
        --out 'benchmarks/results/ann-growth-exact-{n}.json'

``--exact-only --graph`` also builds the graph as the chunks arrive and measures ours approximate
per ef against the exact answers (still no FAISS: at 5M its copy and graph would not fit beside ours):

    flock /tmp/polarmem-bench.lock python benchmarks/bench_ann.py --exact-only --graph --ef-construction 50 \
        --sizes 5000000 --out 'benchmarks/results/ann-growth-graph-{n}.json'

``--build-rate N`` times the graph build alone (N items, PolarMem vs FAISS IndexHNSWFlat, same M and
ef_construction, 1 and 2 threads, interleaved).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import load_average, status_bytes, write_report  # noqa: E402

from polarmem_server.index import AnnSpec, Index, SpaceSpec, build_info  # noqa: E402

REQUIRED_WIDE, REQUIRED_RARE, FORBIDDEN = 0, 1, 2
# Concepts 3.. for the selectivity sweep: the share of items holding each.
SWEEP_SHARES = (0.003, 0.01, 0.03, 0.1)
EF_VALUES = (16, 24, 32, 48, 64, 80, 96, 128, 192, 256, 512)
# The scenarios' logic (module docstring); run_size adds FAISS's allowed set to each.
SCENARIOS = {
    "hard_wide": dict(required=[REQUIRED_WIDE], forbidden=[FORBIDDEN], mode="hard"),
    "hard_two_tiers": dict(required=[REQUIRED_RARE], forbidden=[FORBIDDEN], mode="hard"),
    "off": dict(required=[], forbidden=[], mode="off"),
}


def low_rank_sampler(dim: int, rng: np.random.Generator, latent: int = 24, noise: float = 0.3):
    """draw(m) -> m unit rows of low_rank_corpus's distribution (one fixed latent map), so a
    corpus too large to hold can be drawn in chunks."""
    W = rng.standard_normal((latent, dim)).astype(np.float32)

    def unit(a):
        return (a / np.linalg.norm(a, axis=1, keepdims=True)).astype(np.float32)

    def draw(m):
        z = rng.standard_normal((m, latent)).astype(np.float32)
        return unit(unit(z @ W) + noise * unit(rng.standard_normal((m, dim)).astype(np.float32)))

    return draw


def low_rank_corpus(
    n: int, queries: int, dim: int, rng: np.random.Generator, latent: int = 24, noise: float = 0.3
) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors with a low intrinsic dimension, like sentence embeddings: a random 24-d
    Gaussian latent mapped to `dim` dimensions, plus 0.3 of isotropic noise. Top-1 cosine of a
    query ~0.66 (MiniLM on COCO captions: ~0.6-0.8); isotropic 384-d noise, by contrast, has
    no neighbourhoods for any graph to find."""
    draw = low_rank_sampler(dim, rng, latent, noise)
    return draw(n), draw(queries)


def concepts(n: int, rng: np.random.Generator, total: int | None = None):
    """HAS / NOT_HAS lists of n items, out of `total` (n unless drawn in chunks: the rare
    concept's share is of the whole corpus)."""
    has_wide = rng.random(n) < 0.30
    has_rare = rng.random(n) < (5.0 / (total or n))  # ~5 items: an entailed tier smaller than k
    not_wide = ~has_wide & (rng.random(n) < 0.2)
    has_forbidden = rng.random(n) < 0.1
    sweep = rng.random((n, len(SWEEP_SHARES))) < np.asarray(SWEEP_SHARES)
    has = [
        [c for c, f in ((REQUIRED_WIDE, has_wide[i]), (REQUIRED_RARE, has_rare[i]), (FORBIDDEN, has_forbidden[i])) if f]
        + [3 + j for j in np.flatnonzero(sweep[i])]
        for i in range(n)
    ]
    not_has = [[REQUIRED_WIDE] if not_wide[i] else [] for i in range(n)]
    return has, not_has


def timed_each(fn, queries) -> tuple[float, list]:
    """Median wall ms of fn(q) over the queries (one warm-up), and the answers."""
    fn(queries[0])
    times, answers = [], []
    for q in queries:
        start = time.perf_counter()
        answers.append(fn(q))
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), answers


def recall_within_tier(exact_hits, approx_hits) -> float:
    found = wanted = 0
    for e, a in zip(exact_hits, approx_hits):
        for tier in (-1, 0, 1):
            want = set(e.slots[e.tiers == tier].tolist())
            found += len(want & set(a.slots[a.tiers == tier].tolist()))
            wanted += len(want)
    return found / max(wanted, 1)


def recall_sets(want_lists, got_lists) -> float:
    found = sum(len(set(w) & set(g)) for w, g in zip(want_lists, got_lists))
    return found / max(sum(len(w) for w in want_lists), 1)


def plain_fp32_vs_flat(X, queries, k, faiss, has, not_has, rounds: int = 5) -> dict:
    """Exact plain fp32 single query vs FAISS IndexFlatIP, one thread each, in interleaved
    rounds (the machine's load moves between rounds, so each round's ratio is kept)."""
    n, dim = X.shape
    plain = Index([SpaceSpec("vis", dim)])
    plain.ensure_concepts(8)
    plain.add(n, {"vis": X}, has, not_has)
    faiss.omp_set_num_threads(1)
    flat = faiss.IndexFlatIP(dim)
    flat.add(X)
    subset = queries[:40]
    want = flat.search(subset[:5], k)[1]
    for q, w in zip(subset[:5], want):
        assert set(plain.search({"vis": q}, k=k, mode="off").slots.tolist()) == set(w.tolist())
    out: dict = {"rounds": []}
    for _ in range(rounds):
        ours, _ = timed_each(lambda q: plain.search({"vis": q}, k=k, mode="off", threads=1), subset)
        ours_default, _ = timed_each(lambda q: plain.search({"vis": q}, k=k, mode="off"), subset)
        peer, _ = timed_each(lambda q: flat.search(q[None, :], k), subset)
        out["rounds"].append(
            {
                "ours_1_thread_ms": ours,
                "ours_default_threads_ms": ours_default,
                "faiss_flat_ms": peer,
                "speedup_1_thread": peer / ours,
                "speedup_default_threads": peer / ours_default,
            }
        )
    for key in ("speedup_1_thread", "speedup_default_threads"):
        out[key] = [round(r[key], 3) for r in out["rounds"]]
    print(
        f"plain fp32 vs FAISS IndexFlatIP (1 thread): {out['speedup_1_thread']}, "
        f"ours on default threads: {out['speedup_default_threads']}",
        flush=True,
    )
    return out


def at_recall(ours: dict, faiss_rows: dict, t_exact: float) -> dict | None:
    """Ours at its cheapest ef reaching recall 0.95 against FAISS's cheapest ef reaching as much."""
    best = [ef for ef, v in ours.items() if v["recall"] >= 0.95]
    if not best:
        return None
    ef0 = min(best)
    target = ours[ef0]["recall"]
    peers = [v for v in faiss_rows.values() if v["recall"] >= min(target, 0.95)]
    if not peers:
        return None
    peer = min(peers, key=lambda v: v["ms"])
    out = {
        "ours_ef": ef0,
        "ours_ms": ours[ef0]["ms"],
        "ours_recall": target,
        "faiss_ms": peer["ms"],
        "faiss_recall": peer["recall"],
        "speedup_vs_faiss": peer["ms"] / ours[ef0]["ms"],
        "speedup_vs_exact_int8": t_exact / ours[ef0]["ms"],
    }
    print(
        f"    at recall >= 0.95: ours ef {ef0} {out['ours_ms']:.3f} ms vs faiss {peer['ms']:.3f} ms "
        f"({out['speedup_vs_faiss']:.2f}x)",
        flush=True,
    )
    return out


def faiss_hnsw(faiss, X: np.ndarray, spec: AnnSpec):
    """FAISS IndexHNSWFlat over X with spec's M and efConstruction (inner product), and its build
    seconds on FAISS's current thread count."""
    start = time.perf_counter()
    hnsw = faiss.IndexHNSWFlat(X.shape[1], spec.m, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = spec.ef_construction
    hnsw.add(X)
    return hnsw, time.perf_counter() - start


def run_size(
    n: int, dim: int, k: int, query_count: int, faiss, rng, spec: AnnSpec, walks: tuple[str, ...] = ("prefetch",)
) -> dict:
    print(f"\n== N = {n:,} x d = {dim}, k = {k}, {query_count} queries ==", flush=True)
    X, queries = low_rank_corpus(n, query_count, dim, rng)
    has, not_has = concepts(n, rng)
    out: dict = {"n": n, "dim": dim, "k": k, "queries": query_count, "load_before": load_average()}

    # Build: plain (what start-up costs without a graph), with the graph, FAISS HNSW.
    start = time.perf_counter()
    plain = Index([SpaceSpec("vis", dim, storage="int8")])
    plain.ensure_concepts(8)
    plain.add(n, {"vis": X}, has, not_has)
    out["build_plain_s"] = time.perf_counter() - start
    del plain
    out["plain_fp32"] = plain_fp32_vs_flat(X, queries, k, faiss, has, not_has)
    start = time.perf_counter()
    index = Index([SpaceSpec("vis", dim, storage="int8")], ann=spec)
    index.ensure_concepts(8)
    for first in range(0, n, 10_000):  # in start-up-sized batches, as the rebuild loader adds
        last = min(n, first + 10_000)
        index.add(last - first, {"vis": X[first:last]}, has[first:last], not_has[first:last])
    out["build_graph_s"] = time.perf_counter() - start
    print(f"built: plain {out['build_plain_s']:.1f} s, with graph {out['build_graph_s']:.1f} s", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "vis.hnsw")
        start = time.perf_counter()
        index.save_ann("vis", path)
        out["graph_save_s"] = time.perf_counter() - start
        out["graph_file_bytes"] = os.path.getsize(path)
        start = time.perf_counter()
        index.load_ann("vis", path)
        out["graph_load_s"] = time.perf_counter() - start
    out["startup_rebuilt_s"] = out["build_graph_s"]
    out["startup_persisted_s"] = out["build_plain_s"] + out["graph_load_s"]
    out["memory_bytes_with_graph"] = index.memory_bytes

    faiss.omp_set_num_threads(2)
    hnsw, out["faiss_build_s"] = faiss_hnsw(faiss, X, spec)
    print(
        f"faiss hnsw built in {out['faiss_build_s']:.1f} s; graph save {out['graph_save_s']:.2f} s, "
        f"load {out['graph_load_s']:.2f} s",
        flush=True,
    )
    faiss.omp_set_num_threads(1)

    # Tiers as the core computes them (tier_counts are checked against this below).
    has_wide = np.array([REQUIRED_WIDE in h for h in has])
    has_rare = np.array([REQUIRED_RARE in h for h in has])
    has_forb = np.array([FORBIDDEN in h for h in has])
    not_wide = np.array([REQUIRED_WIDE in x for x in not_has])
    allowed_sets = {"hard_wide": has_wide & ~has_forb, "hard_two_tiers": ~has_rare & ~has_forb, "off": None}
    scenarios = {name: {**sc, "faiss_allowed": allowed_sets[name]} for name, sc in SCENARIOS.items()}
    del not_wide
    for name, sc in scenarios.items():

        def search(q, exact=True, ef=0, sc=sc):
            return index.search(
                {"vis": q}, sc["required"], sc["forbidden"], k=k, mode=sc["mode"], threads=1, exact=exact, ef_search=ef
            )

        t_exact, exact_hits = timed_each(search, queries)
        row: dict = {"tier_counts": exact_hits[0].tier_counts, "exact_int8_ms": t_exact, "ours": {}, "faiss": {}}
        by_walk = {walk: row["ours"] if walk == walks[0] else {} for walk in walks}
        for ef in EF_VALUES:
            for walk in walks:  # the filtered walk's stop rule (ann_graph.cpp), read per search; interleaved
                os.environ["POLARMEM_ANN_WALK"] = walk
                t, hits = timed_each(lambda q, ef=ef: search(q, exact=False, ef=ef), queries)
                assert all(h.tier_counts == e.tier_counts for h, e in zip(hits, exact_hits))
                if sc["mode"] == "hard":
                    assert all(np.all(np.diff(h.tiers) <= 0) for h in hits)
                by_walk[walk][ef] = {
                    "ms": t,
                    "recall": recall_within_tier(exact_hits, hits),
                    "approximate": bool(hits[0].approximate),
                    "speedup_vs_exact": t_exact / t,
                }
        os.environ["POLARMEM_ANN_WALK"] = walks[0]
        if len(walks) > 1:
            row["ours_walks"] = {walk: by_walk[walk] for walk in walks[1:]}
        # FAISS: the same allowed set as the graph-searched tier, bitmap built outside the timing.
        allowed = sc["faiss_allowed"]
        if allowed is not None:
            bits = np.packbits(allowed.astype(np.uint8), bitorder="little")
            selector = faiss.IDSelectorBitmap(n, faiss.swig_ptr(bits))
        # The exact answer FAISS should find: the hits of the graph-searched tier.
        graph_tier = 1 if name == "hard_wide" else 0
        want = [
            e.slots[e.tiers == graph_tier].tolist() if sc["mode"] == "hard" else e.slots.tolist() for e in exact_hits
        ]
        faiss_k = [len(w) for w in want]
        for ef in EF_VALUES:
            params = faiss.SearchParametersHNSW(efSearch=ef)
            if allowed is not None:
                params.sel = selector
            answers: list = []

            def faiss_search(q, params=params):
                return hnsw.search(q[None, :], k, params=params)[1][0]

            faiss.cvar.hnsw_stats.reset()
            t, answers = timed_each(faiss_search, queries)
            got = [a[:kk].tolist() for a, kk in zip(answers, faiss_k)]
            # distances computed per query (the warm-up call counted too)
            row["faiss"][ef] = {
                "ms": t,
                "recall": recall_sets(want, got),
                "distances": faiss.cvar.hnsw_stats.ndis / (len(queries) + 1),
            }
        out[name] = row
        for walk, by_ef in row.get("ours_walks", {}).items():
            for ef in EF_VALUES:
                o, f = by_ef[ef], row["faiss"][ef]
                print(
                    f"  [{walk} walk] ef {ef:>3}: ours {o['ms']:.3f} ms recall {o['recall']:.4f} | faiss {f['ms']:.3f} ms "
                    f"recall {f['recall']:.4f}",
                    flush=True,
                )
            row.setdefault("at_recall_095_walks", {})[walk] = at_recall(by_ef, row["faiss"], t_exact)
        best = {ef: v for ef, v in row["ours"].items() if v["recall"] >= 0.95}
        print(f"{name}: tiers {row['tier_counts']}, exact int8 {t_exact:.2f} ms", flush=True)
        for ef in EF_VALUES:
            o, f = row["ours"][ef], row["faiss"][ef]
            print(
                f"  ef {ef:>3}: ours {o['ms']:.3f} ms recall {o['recall']:.4f} ({o['speedup_vs_exact']:.1f}x exact)"
                f" | faiss {f['ms']:.3f} ms recall {f['recall']:.4f}",
                flush=True,
            )
        if best:
            ef0 = min(best)
            # FAISS at the same (or higher) recall: its cheapest ef reaching ours.
            target = row["ours"][ef0]["recall"]
            peers = [v for v in row["faiss"].values() if v["recall"] >= min(target, 0.95)]
            if peers:
                peer = min(peers, key=lambda v: v["ms"])
                row["at_recall_095"] = {
                    "ours_ef": ef0,
                    "ours_ms": row["ours"][ef0]["ms"],
                    "ours_recall": target,
                    "faiss_ms": peer["ms"],
                    "faiss_recall": peer["recall"],
                    "speedup_vs_faiss": peer["ms"] / row["ours"][ef0]["ms"],
                    "speedup_vs_exact_int8": t_exact / row["ours"][ef0]["ms"],
                }
                print(
                    f"  at recall >= 0.95: ours ef {ef0} {row['ours'][ef0]['ms']:.3f} ms vs faiss "
                    f"{peer['ms']:.3f} ms ({peer['ms'] / row['ours'][ef0]['ms']:.2f}x), "
                    f"{t_exact / row['ours'][ef0]['ms']:.1f}x faster than exact int8",
                    flush=True,
                )
    # Selectivity sweep: where the graph walk over one tier stops paying against the exact scan
    # of that tier (the index forces the graph on every tier larger than ef). Calibrates the
    # exact fallback rule count^2 <= exact_factor * ef * m * N.
    out["selectivity"] = []
    for j, share in enumerate(SWEEP_SHARES):

        def sweep_search(q, exact, concept=3 + j):
            return index.search({"vis": q}, [concept], [], k=k, mode="hard", threads=1, exact=exact)

        t_exact, exact_hits = timed_each(lambda q: sweep_search(q, True), queries[:40])
        t_graph, graph_hits = timed_each(lambda q: sweep_search(q, False), queries[:40])
        tier = exact_hits[0].tier_counts["entailed"]
        entry = {
            "share": share,
            "tier_items": tier,
            "exact_ms": t_exact,
            "graph_ms": t_graph,
            "recall": recall_within_tier(exact_hits, graph_hits),
            "exact_factor_at_crossover": tier**2 / (max(spec.ef_search, 2 * k) * spec.m * n),
        }
        out["selectivity"].append(entry)
        print(
            f"selectivity {share:.3f} ({tier} items): exact {t_exact:.3f} ms, graph {t_graph:.3f} ms, "
            f"recall {entry['recall']:.4f}, count^2/(ef m N) = {entry['exact_factor_at_crossover']:.2f}",
            flush=True,
        )
    out["load_after"] = load_average()
    return out


def run_exact_only(n: int, dim: int, k: int, query_count: int, rng, chunk: int, graph: AnnSpec | None = None) -> dict:
    """run_size's exact int8 point alone, for an N whose corpus (4 n dim bytes), graph and FAISS
    copy do not fit in memory together: the corpus drawn `chunk` rows at a time and added to an
    int8 Index without a graph (the loader's path without AnnSpec), so only the index holds it.
    With `graph` the index also builds that graph as the chunks arrive, and each scenario adds
    ours approximate per ef with recall@10 within tier against the exact answers (no FAISS)."""
    print(
        f"\n== exact{' + graph' if graph else ''} only: N = {n:,} x d = {dim}, k = {k}, {query_count} queries, "
        f"chunks of {chunk:,} ==",
        flush=True,
    )
    draw = low_rank_sampler(dim, rng)
    queries = draw(query_count)
    out: dict = {
        "n": n,
        "dim": dim,
        "k": k,
        "queries": query_count,
        "exact_only": True,
        "chunk": chunk,
        "load_before": load_average(),
        "rss_before_bytes": status_bytes("self", "VmRSS"),
        "ef_construction": graph.ef_construction if graph else None,
    }
    index = Index([SpaceSpec("vis", dim, storage="int8")], ann=graph)
    index.ensure_concepts(8)
    added = 0.0  # the add calls only, as run_size's build_plain_s (its corpus is drawn beforehand)
    started = time.perf_counter()
    for first in range(0, n, chunk):
        count = min(chunk, n - first)
        X = draw(count)
        has, not_has = concepts(count, rng, total=n)
        start = time.perf_counter()
        index.add(count, {"vis": X}, has, not_has)
        added += time.perf_counter() - start
        if (first + count) % 1_000_000 == 0 or first + count == n:
            print(
                f"  {first + count:,} added, {added:.1f} s in add, RSS {status_bytes('self', 'VmRSS') / 2**30:.2f} GiB",
                flush=True,
            )
    del X, has, not_has
    out["build_graph_s" if graph else "build_plain_s"] = added
    out["build_with_draw_s"] = time.perf_counter() - started
    out["memory_bytes"] = index.memory_bytes
    out["rss_after_build_bytes"] = status_bytes("self", "VmRSS")
    for name, sc in SCENARIOS.items():

        def search(q, threads, sc=sc):
            return index.search(
                {"vis": q}, sc["required"], sc["forbidden"], k=k, mode=sc["mode"], threads=threads, exact=True
            )

        t_one, hits = timed_each(lambda q: search(q, 1), queries)
        t_default, hits_default = timed_each(lambda q: search(q, 0), queries)
        out[name] = {
            "tier_counts": hits[0].tier_counts,
            "exact_int8_ms": t_one,
            "exact_int8_default_threads_ms": t_default,
            # the answers should not depend on the threads (ties aside)
            "default_threads_agreement": recall_within_tier(hits, hits_default),
            "reranked_median": statistics.median(h.reranked for h in hits),
        }
        print(
            f"{name}: tiers {out[name]['tier_counts']}, exact int8 {t_one:.2f} ms (1 thread), "
            f"{t_default:.2f} ms (default threads)",
            flush=True,
        )
        if graph:
            ours = {}
            for ef in EF_VALUES:
                t, approx = timed_each(
                    lambda q, ef=ef, sc=sc: index.search(
                        {"vis": q},
                        sc["required"],
                        sc["forbidden"],
                        k=k,
                        mode=sc["mode"],
                        threads=1,
                        exact=False,
                        ef_search=ef,
                    ),
                    queries,
                )
                ours[ef] = {
                    "ms": t,
                    "recall": recall_within_tier(hits, approx),
                    "approximate": approx[0].approximate,
                    "speedup_vs_exact": t_one / t,
                }
                print(
                    f"  ef {ef:>3}: ours {t:.3f} ms recall {ours[ef]['recall']:.4f} ({t_one / t:.1f}x exact)",
                    flush=True,
                )
            out[name]["ours"] = ours
            best = [ef for ef, v in ours.items() if v["recall"] >= 0.95]
            if best:
                ef0 = min(best)
                out[name]["at_recall_095"] = {
                    "ours_ef": ef0,
                    "ours_ms": ours[ef0]["ms"],
                    "ours_recall": ours[ef0]["recall"],
                    "faiss_ms": None,
                    "speedup_vs_exact_int8": t_one / ours[ef0]["ms"],
                }
    out["peak_rss_bytes"] = status_bytes("self", "VmHWM")
    out["load_after"] = load_average()
    print(
        f"built in {added:.1f} s of add ({out['build_with_draw_s']:.1f} s with the draw), memory_bytes "
        f"{out['memory_bytes']:,}, peak RSS {out['peak_rss_bytes'] / 2**30:.2f} GiB",
        flush=True,
    )
    return out


def call_floor(faiss, dim: int, k: int, rounds: int = 2000) -> dict:
    """Per-call cost with (almost) no search work: our Index over one item vs FAISS IndexFlatIP over
    one vector, one thread each. What is left over a graph walk once both pay it."""
    one = np.ones((1, dim), np.float32) / np.sqrt(dim)
    ours = Index([SpaceSpec("vis", dim, storage="int8")])
    ours.ensure_concepts(3)
    ours.add(1, {"vis": one}, [[0]], [[]])
    flat = faiss.IndexFlatIP(dim)
    flat.add(one)
    faiss.omp_set_num_threads(1)
    queries = [one[0]] * rounds
    out = {}
    for _ in range(2):  # interleaved, the second pair kept
        out["ours_off_ms"], _ = timed_each(lambda q: ours.search({"vis": q}, k=k, mode="off", threads=1), queries)
        out["ours_hard_ms"], _ = timed_each(
            lambda q: ours.search({"vis": q}, [0], [1], k=k, mode="hard", threads=1), queries
        )
        out["faiss_flat_ms"], _ = timed_each(lambda q: flat.search(q[None, :], k), queries)
    print(
        f"per-call floor (1 item): ours off {out['ours_off_ms'] * 1e3:.0f} us, hard {out['ours_hard_ms'] * 1e3:.0f} us,"
        f" faiss flat {out['faiss_flat_ms'] * 1e3:.0f} us",
        flush=True,
    )
    return out


def build_rate(n: int, dim: int, spec: AnnSpec, faiss, rng, threads=(1, 2), rounds: int = 2) -> dict:
    """Items per second of the graph build alone: PolarMem's Index (int8 rows + graph, added in
    10,000-item batches as the start-up loader adds) vs FAISS IndexHNSWFlat with the same M and
    ef_construction, on 1 and 2 threads, interleaved in `rounds` rounds (the load moves)."""
    X, _ = low_rank_corpus(n, 1, dim, rng)
    empty: list[list[int]] = [[] for _ in range(n)]
    out: dict = {
        "n": n,
        "dim": dim,
        "m": spec.m,
        "ef_construction": spec.ef_construction,
        "load_before": load_average(),
        "rounds": [],
    }
    for _ in range(rounds):
        for t in threads:
            start = time.perf_counter()
            index = Index([SpaceSpec("vis", dim, storage="int8")], threads=t, ann=spec)
            index.ensure_concepts(1)
            for first in range(0, n, 10_000):
                last = min(n, first + 10_000)
                index.add(last - first, {"vis": X[first:last]}, empty[first:last], empty[first:last])
            ours = n / (time.perf_counter() - start)
            del index
            faiss.omp_set_num_threads(t)
            hnsw, seconds = faiss_hnsw(faiss, X, spec)
            peer = n / seconds
            del hnsw
            out["rounds"].append(
                {
                    "threads": t,
                    "ours_items_per_s": ours,
                    "faiss_items_per_s": peer,
                    "ratio": ours / peer,
                    "load": load_average(),
                }
            )
            print(
                f"build {n:,} items, {t} thread(s): ours {ours:.0f} items/s, faiss {peer:.0f} items/s "
                f"({ours / peer:.2f}x), load {load_average()}",
                flush=True,
            )
    out["load_after"] = load_average()
    return out


def backend_startup(n: int, dim: int, spec: AnnSpec, rng, starts: int = 2) -> dict:
    """The local backend's start-up with n stored items (d = dim, int8 rows): no graph, the graph
    rebuilt from the store, the graph loaded from its saved file; and the save on close."""
    from polarmem.storage.v1 import records_pb2
    from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings
    from polarmem_server.storage.local.backend import LocalBackend
    from polarmem_server.storage.local.store import Store

    out: dict = {"n": n, "dim": dim, "load_before": load_average()}
    X, _ = low_rank_corpus(n, 1, dim, rng)
    has, not_has = concepts(n, rng)
    with tempfile.TemporaryDirectory(prefix="polarmem-ann-startup-") as tmp:
        data = Path(tmp) / "data"
        memory = Memory(data, durability="async")
        memory.create_namespace(
            NamespaceSettings("bench", spaces=(SpaceSpec("vis", dim, storage="int8"),), encoder="none")
        )
        start = time.perf_counter()
        for first in range(0, n, 5000):
            memory.remember_batch(
                "bench",
                [
                    ItemInput(
                        id=f"item{i:08d}",
                        vectors={"vis": X[i]},
                        states={**{f"c{c}": "has" for c in has[i]}, **{f"c{c}": "not_has" for c in not_has[i]}},
                    )
                    for i in range(first, min(n, first + 5000))
                ],
            )
        out["write_s"] = time.perf_counter() - start
        memory.close()

        def open_backend() -> tuple[float, LocalBackend]:
            started = time.perf_counter()
            backend = LocalBackend(data)
            return time.perf_counter() - started, backend

        out["startup_no_graph_s"], backend = open_backend()
        backend.close()
        # The graph setting is fixed at creation; here it is given to the stored namespace record
        # afterwards, so the write phase above does not pay for a graph the rebuild then builds.
        store = Store(data)
        record = store.namespaces()[0]
        record.ann.CopyFrom(
            records_pb2.AnnRecord(
                kind=spec.kind,
                m=spec.m,
                ef_construction=spec.ef_construction,
                ef_search=spec.ef_search,
                exact_below=spec.exact_below,
                exact_factor=spec.exact_factor,
            )
        )
        store.put_namespace(record)
        store.close()
        out["startup_rebuilt_s"], out["startup_persisted_s"], out["save_on_close_s"] = [], [], []
        for attempt in range(starts):
            if attempt:  # a rebuild again: the saved manifest removed
                (data / "ann" / "bench".encode().hex() / "manifest.json").unlink()
            elapsed, backend = open_backend()
            assert backend.ann_startup["bench"].startswith("rebuilt"), backend.ann_startup
            out["startup_rebuilt_s"].append(elapsed)
            started = time.perf_counter()
            backend.close()
            out["save_on_close_s"].append(time.perf_counter() - started)
            elapsed, backend = open_backend()
            assert backend.ann_startup["bench"] == "loaded", backend.ann_startup
            assert backend.index_of("bench").index.ann_size("vis") == n
            out["startup_persisted_s"].append(elapsed)
            backend.close()
        out["graph_file_bytes"] = sum(p.stat().st_size for p in (data / "ann").rglob("*") if p.is_file())
    out["load_after"] = load_average()
    print(
        f"backend start-up with {n:,} items: no graph {out['startup_no_graph_s']:.1f} s, graph rebuilt "
        f"{out['startup_rebuilt_s']} s, graph loaded {out['startup_persisted_s']} s, save on close "
        f"{out['save_on_close_s']} s",
        flush=True,
    )
    return out


def growth_rows(paths: list[Path]) -> list[dict]:
    """One row per size from growth reports (bench_ann.py --out '...-{n}.json'), by N."""
    rows = []
    for path in paths:
        report = json.loads(path.read_text())
        for size in report["sizes"]:
            # exact-only reports (--exact-only) have no graph settings
            rows.append({"ef_construction": (report.get("ann") or {}).get("ef_construction"), **size})
    return sorted(rows, key=lambda r: r["n"])


def plot_growth(paths: list[Path], png: Path) -> None:
    """Query time against N for each scenario (exact fp32, FAISS IndexFlatIP, exact int8 +
    re-rank, PolarMem's graph and FAISS HNSW + IDSelectorBitmap at recall@10 >= 0.95), and the
    graph build time, on log-log axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = growth_rows(paths)
    ns = [r["n"] for r in rows]
    fig, axes = plt.subplots(1, 4, figsize=(20, 5.4))

    def median_round(r, key):  # None for exact-only rows (no fp32 index, no FAISS)
        return statistics.median(x[key] for x in r["plain_fp32"]["rounds"]) if "plain_fp32" in r else None

    def line(ax, values, label, style, exact_only=None):
        """`exact_only` True / False: only the rows of exact-only runs / of full runs (they come
        from different runs, possibly builds and hosts, so each gets its own line)."""
        points = [
            (n, v)
            for n, v, r in zip(ns, values, rows)
            if v is not None and (exact_only is None or bool(r.get("exact_only")) == exact_only)
        ]
        if points:
            ax.plot(*zip(*points), style, label=label)

    titles = {
        "hard_wide": "hard, wide entailed tier (~30% of N)",
        "hard_two_tiers": "hard, tiny entailed tier + neutral",
        "off": "off (plain similarity)",
    }
    for ax, (name, title) in zip(axes, titles.items()):
        at = [r[name].get("at_recall_095") for r in rows]
        if name == "off":
            line(ax, [median_round(r, "ours_1_thread_ms") for r in rows], "exact fp32 (ours)", "k--")
            line(ax, [median_round(r, "faiss_flat_ms") for r in rows], "FAISS IndexFlatIP", "k:")
        line(
            ax,
            [r[name]["exact_int8_ms"] for r in rows],
            "exact int8 + re-rank (ours, with the graph runs)",
            "b-s",
            exact_only=False,
        )
        # (a chunked run with the graph measured exact int8 too: the exact-only run keeps that line)
        line(
            ax,
            [None if r.get("ef_construction") else r[name]["exact_int8_ms"] for r in rows],
            "exact int8 + re-rank (ours, exact-only runs)",
            "c-D",
            exact_only=True,
        )
        line(ax, [a["ours_ms"] if a else None for a in at], "graph, recall@10 >= 0.95 (ours)", "r-o", exact_only=False)
        line(
            ax,
            [a["ours_ms"] if a else None for a in at],
            "graph, recall@10 >= 0.95 (ours, chunked runs, no FAISS)",
            "m-o",
            exact_only=True,
        )
        line(ax, [a["faiss_ms"] if a else None for a in at], "FAISS HNSW + IDSelectorBitmap, same recall", "g-^")
        ax.set(
            xscale="log", yscale="log", xlabel="N items (d = 384)", ylabel="median ms per query, 1 thread", title=title
        )
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper left")
    axes[2].legend(fontsize=7, loc="upper left")
    ax = axes[3]
    line(ax, [r.get("build_graph_s") for r in rows], "graph build (ours, 2 threads)", "r-o", exact_only=False)
    line(ax, [r.get("build_graph_s") for r in rows], "graph build (ours, chunked runs)", "m-o", exact_only=True)
    line(ax, [r.get("faiss_build_s") for r in rows], "FAISS IndexHNSWFlat build (2 threads)", "g-^")
    line(ax, [r.get("build_plain_s") for r in rows], "no graph (int8 rows only)", "b-s", exact_only=False)
    line(ax, [r.get("build_plain_s") for r in rows], "no graph (exact-only runs)", "c-D", exact_only=True)
    efc = sorted({r["ef_construction"] for r in rows} - {None})
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="N items",
        ylabel="seconds",
        title=f"build (M = 16, ef_construction = {'/'.join(map(str, efc))})",
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    loads = [
        f"{r['n'] // 1000}k{' (exact only)' if r.get('exact_only') else ''}: {r['load_before'][0]}->{r['load_after'][0]}"
        for r in rows
    ]
    fig.suptitle(
        "PolarMem approximate vs exact search as N grows (2-core machine)\n1-min load before->after: "
        + ", ".join(loads),
        fontsize=9,
    )
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    print(f"wrote {png}", flush=True)


def write_sizes(args, report: dict, measure) -> None:
    """measure(n) for each of --sizes into report["sizes"]; one report per size when --out names
    {n} (growth runs), else one for all sizes."""
    per_size = args.out is not None and "{n}" in str(args.out)
    for n in args.sizes:
        if per_size:
            report["sizes"] = []
        report["sizes"].append(measure(n))
        if args.out:  # after each size, so a run cut short keeps what it measured
            print(flush=True)
            write_report(Path(str(args.out).replace("{n}", str(n))), report)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[30_000, 100_000])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--walks",
        nargs="+",
        choices=("prefetch", "hnswlib", "bounded"),
        default=["prefetch"],
        help="filtered-walk stop rules to measure, the first reported as 'ours' (ann_graph.cpp)",
    )
    parser.add_argument(
        "--ef-construction", type=int, default=200, help="the graph's ef_construction, for PolarMem and FAISS alike"
    )
    parser.add_argument(
        "--build-rate",
        type=int,
        default=0,
        metavar="N",
        help="time the graph build alone with N items instead (PolarMem vs FAISS, 1 and 2 threads)",
    )
    parser.add_argument(
        "--plot",
        type=Path,
        nargs="+",
        default=None,
        metavar="JSON",
        help="plot growth reports (one per size) into --png instead of measuring",
    )
    parser.add_argument("--png", type=Path, default=Path("docs/ann-growth.png"))
    parser.add_argument(
        "--exact-only",
        action="store_true",
        help="only the exact int8 search, the corpus drawn and added in --chunk-row chunks (sizes too "
        "large for the full run): no graph, no FAISS",
    )
    parser.add_argument("--chunk", type=int, default=100_000, help="rows drawn and added at a time with --exact-only")
    parser.add_argument(
        "--graph",
        action="store_true",
        help="with --exact-only: build the graph too (--ef-construction) and measure ours approximate "
        "per ef against the exact answers; still no FAISS",
    )
    parser.add_argument(
        "--backend-startup",
        type=int,
        default=0,
        metavar="N",
        help="measure the local backend's start-up with N items instead (persisted vs rebuilt graph)",
    )
    args = parser.parse_args()
    if args.plot:
        plot_growth(args.plot, args.png)
        return
    if args.backend_startup:
        spec = AnnSpec()
        report = {
            "build_info": build_info(),
            "machine": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "ann": spec.__dict__,
            "startup": backend_startup(args.backend_startup, args.dim, spec, np.random.default_rng(0)),
        }
        if args.out:
            write_report(args.out, report)
        return
    rng = np.random.default_rng(0)
    if args.exact_only:
        report = {
            "build_info": build_info(),
            "machine": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "ann": None,
            "exact_only": True,
            "sizes": [],
        }
        graph = AnnSpec(ef_construction=args.ef_construction, exact_below=0, exact_factor=0.0) if args.graph else None
        report["ann"] = graph.__dict__ if graph else None
        write_sizes(args, report, lambda n: run_exact_only(n, args.dim, args.k, args.queries, rng, args.chunk, graph))
        return
    import faiss

    # The default graph settings with the exact fallback off (beyond tiers of <= ef items), so
    # the sweep sees the graph's cost on every tier; the scenarios' tiers are all large enough
    # that the default rule would also choose the graph.
    spec = AnnSpec(ef_construction=args.ef_construction, exact_below=0, exact_factor=0.0)
    header = {
        "build_info": build_info(),
        "faiss": faiss.__version__,
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "ann": spec.__dict__,
    }
    if args.build_rate:
        report = {**header, "build_rate": build_rate(args.build_rate, args.dim, spec, faiss, rng)}
        if args.out:
            write_report(args.out, report)
        return
    report = {**header, "sizes": [], "call_floor": call_floor(faiss, args.dim, args.k)}
    write_sizes(
        args, report, lambda n: run_size(n, args.dim, args.k, args.queries, faiss, rng, spec, tuple(args.walks))
    )


if __name__ == "__main__":
    main()
