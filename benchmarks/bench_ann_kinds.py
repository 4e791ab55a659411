"""Which approximate index kind fits filtered search within a tier (issue 19): IVF (FAISS
IndexIVFFlat) against HNSW (PolarMem's compiled graph and FAISS IndexHNSWFlat), on the dev-set
vectors and on random low-rank data, in one run per dataset.

Datasets:

- ``dev10k``: the 10,000 COCO val2014 images of polarmem_server/data/coco_val2014_dev10k.jsonl.gz,
  each embedded as its captions joined by spaces with the packaged MiniLM encoder (offline);
  queries: the first caption of 200 items (drawn with a fixed seed), embedded alone (so a query's
  own image is in the corpus, as when a caption looks for the image it describes). Tiers from the
  object labels (HAS = ``has``, NOT_HAS = ``not_has``): ``person`` (~56%; no label is held by
  ~30%), ``dining table`` (~17%), ``pizza`` (~3%), and no filter;
- ``random{N}``: bench_ann.py's low-rank corpus (d = 384, seed 0) and concepts: ``hard_wide``
  (required concept of ~30%, forbidden one of ~10%: a ~27% tier), a ~3% tier (bench_ann's sweep
  concept of share 0.03), and no filter.

Methods, each search on one thread (FAISS omp 1, PolarMem ``threads=1``), k = 10:

- exact within the tier: the ground truth (numpy fp32, the top k of the allowed rows), timed as
  PolarMem exact (int8 scan + fp32 re-rank) and FAISS IndexFlatIP + IDSelectorBitmap;
- PolarMem HNSW (int8 rows, AnnSpec m / ef_construction, the exact fallback off so every tier
  larger than ef is walked), restricted to the tier by a required concept (the compiled tier
  logic), ``exact=False`` at each ef_search;
- FAISS IndexHNSWFlat (same M / efConstruction) + IDSelectorBitmap of the tier, each efSearch;
- FAISS IndexIVFFlat (inner product, fp32 lists, ``nlist`` lists trained on the whole corpus
  with FAISS's default k-means) + IDSelectorBitmap (SearchParametersIVF(nprobe, sel)), each nprobe
  (powers of 2 below nlist, and nlist: the exhaustive probe). nlist: 100 and 400 (= 4 sqrt N) for
  the dev set (``--nlist-dev``), 1,024 (~3.2 sqrt N) for 100,000 random items (``--nlist-random``),
  each capped at N / 39 (FAISS's minimum of 39 training points per list: 400 -> 256 at N = 10,000).

A PolarMem ef at least the tier's size scans the tier exactly (the index's rule, even with the
fallback off); such settings are marked and not counted as the graph's cheapest setting.

For each: median ms per query over the queries (one warm-up) in each of ``--rounds`` interleaved
rounds (the headline: the lowest round median; the machine is shared), recall@10 against the
exact top 10 of the tier, the cheapest setting reaching recall >= 0.95, build time (2 threads)
and memory. For IVF also the codes walked and the tier members scored per query (the lists
probed do not depend on the filter), and how many answers came back short of k.

    flock /tmp/polarmem-bench.lock .venv/bin/python -P benchmarks/bench_ann_kinds.py \\
        --out 'benchmarks/results/ann-kinds-{dataset}.json'

Quick check: ``--datasets random --random-n 5000 --dev-sample 2000 --rounds 1 --out /tmp/x-{dataset}.json``.
The dev-set embeddings are cached in ``--cache`` (outside the tree) so a rerun skips the encoder.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ann import (
    FORBIDDEN,
    REQUIRED_WIDE,
    SWEEP_SHARES,
    concepts,
    faiss_hnsw,  # noqa: E402
    low_rank_corpus,
    recall_sets,
    timed_each,
)
from harness import cpu_flags, cpu_model, load_average, write_report  # noqa: E402

from polarmem_server.index import AnnSpec, Index, SpaceSpec, build_info  # noqa: E402

K = 10
EF_VALUES = (16, 32, 64, 128, 256, 512)
TARGET = 0.95
DEV_TIERS = ("person", "dining table", "pizza")
RARE_CONCEPT = 3 + SWEEP_SHARES.index(0.03)  # bench_ann's sweep concept held by ~3% of items


def cpu_info() -> dict:
    flags = cpu_flags()
    return {
        "model": cpu_model(),
        "cpus": os.cpu_count(),
        "avx512": sorted(f for f in flags if f.startswith("avx512")),
        "avx2": "avx2" in flags,
    }


def nprobe_grid(nlist: int) -> list[int]:
    grid = [p for p in (2**i for i in range(20)) if p < nlist]
    return grid + [nlist]


# ---- datasets --------------------------------------------------------------------------------


def dev_dataset(query_count: int, sample: int, cache: Path | None) -> dict:
    """The dev set's images embedded as their joined captions; queries = first captions of
    `query_count` items; tiers from the labels."""
    from polarmem_server.faces.evaluation import dev_rows

    rows = dev_rows(sample=sample)
    n = len(rows)
    pick = np.sort(np.random.default_rng(19).choice(n, size=query_count, replace=False))
    item_texts = [" ".join(r["captions"]) for r in rows]
    query_texts = [rows[i]["captions"][0] for i in pick]
    cached = None
    if cache is not None and cache.exists():
        data = np.load(cache)
        if (
            data["X"].shape[0] == n
            and data["Q"].shape[0] == query_count
            and str(data["ids"]) == rows[0]["id"] + rows[-1]["id"]
        ):
            cached = data["X"], data["Q"]
    encode_s = None
    if cached is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from reference_minilm import ReferenceMiniLM

        start = time.perf_counter()
        encoder = ReferenceMiniLM(threads=os.cpu_count() or 2, batch_size=128)
        X, Q = encoder.encode(item_texts), encoder.encode(query_texts)
        encode_s = time.perf_counter() - start
        print(f"encoded {n:,} items + {query_count} queries in {encode_s:.1f} s", flush=True)
        if cache is not None:
            np.savez(cache, X=X, Q=Q, ids=np.array(rows[0]["id"] + rows[-1]["id"]))
    else:
        X, Q = cached
        print(f"embeddings from {cache}", flush=True)
    labels = sorted({c for r in rows for c in r["has"]} | {c for r in rows for c in r["not_has"]})
    cid = {c: i for i, c in enumerate(labels)}
    has = [[cid[c] for c in r["has"]] for r in rows]
    not_has = [[cid[c] for c in r["not_has"]] for r in rows]
    scenarios = {}
    for label in DEV_TIERS:
        allowed = np.array([cid[label] in h for h in has])
        scenarios[label] = dict(required=[cid[label]], forbidden=[], mode="hard", allowed=allowed)
    scenarios["no filter"] = dict(required=[], forbidden=[], mode="off", allowed=None)
    return {
        "name": "dev10k" if not sample else f"dev{n}",
        "X": np.ascontiguousarray(X, np.float32),
        "Q": np.ascontiguousarray(Q, np.float32),
        "has": has,
        "not_has": not_has,
        "concepts": len(labels),
        "scenarios": scenarios,
        "encode_s": encode_s,
        "about": "COCO val2014 dev set, items = captions joined, queries = first caption of 200 items "
        "(seed 19), all-MiniLM-L6-v2 (packaged, normalised)",
    }


def random_dataset(n: int, query_count: int, dim: int) -> dict:
    rng = np.random.default_rng(0)
    X, Q = low_rank_corpus(n, query_count, dim, rng)
    has, not_has = concepts(n, rng)
    has_wide = np.array([REQUIRED_WIDE in h for h in has])
    has_forb = np.array([FORBIDDEN in h for h in has])
    has_rare = np.array([RARE_CONCEPT in h for h in has])
    scenarios = {
        "hard_wide (~27%)": dict(
            required=[REQUIRED_WIDE], forbidden=[FORBIDDEN], mode="hard", allowed=has_wide & ~has_forb
        ),
        "rare (~3%)": dict(required=[RARE_CONCEPT], forbidden=[], mode="hard", allowed=has_rare),
        "no filter": dict(required=[], forbidden=[], mode="off", allowed=None),
    }
    return {
        "name": f"random{n // 1000}k" if n % 1000 == 0 else f"random{n}",
        "X": X,
        "Q": Q,
        "has": has,
        "not_has": not_has,
        "concepts": 8,
        "scenarios": scenarios,
        "encode_s": None,
        "about": "bench_ann.low_rank_corpus (24-d latent + 0.3 noise, seed 0) and bench_ann.concepts",
    }


# ---- measurement -----------------------------------------------------------------------------


def exact_truth(X: np.ndarray, Q: np.ndarray, allowed: np.ndarray | None) -> list[list[int]]:
    rows = np.arange(X.shape[0]) if allowed is None else np.flatnonzero(allowed)
    S = Q @ X[rows].T
    top = np.argpartition(-S, K - 1, axis=1)[:, :K]
    return [rows[t].tolist() for t in top]


def faiss_bytes(faiss, index) -> int:
    return int(faiss.serialize_index(index).nbytes)


def build_all(ds: dict, faiss, spec: AnnSpec, nlists: list[int], storage: str) -> tuple[dict, dict]:
    X, n, dim = ds["X"], ds["X"].shape[0], ds["X"].shape[1]
    built: dict = {}
    info: dict = {"n": n, "dim": dim, "threads": 2}
    start = time.perf_counter()
    plain = Index([SpaceSpec("vis", dim, storage=storage)], threads=2)
    plain.ensure_concepts(ds["concepts"])
    plain.add(n, {"vis": X}, ds["has"], ds["not_has"])
    info["polarmem_plain_s"] = time.perf_counter() - start
    info["polarmem_plain_bytes"] = plain.memory_bytes
    del plain
    start = time.perf_counter()
    index = Index([SpaceSpec("vis", dim, storage=storage)], threads=2, ann=spec)
    index.ensure_concepts(ds["concepts"])
    for first in range(0, n, 10_000):  # start-up-sized batches, as bench_ann
        last = min(n, first + 10_000)
        index.add(last - first, {"vis": X[first:last]}, ds["has"][first:last], ds["not_has"][first:last])
    info["polarmem_hnsw_s"] = time.perf_counter() - start
    info["polarmem_hnsw_bytes"] = index.memory_bytes
    info["polarmem_graph_bytes"] = index.memory_bytes - info["polarmem_plain_bytes"]
    built["polarmem"] = index
    faiss.omp_set_num_threads(2)
    hnsw, info["faiss_hnsw_s"] = faiss_hnsw(faiss, X, spec)
    info["faiss_hnsw_bytes"] = faiss_bytes(faiss, hnsw)
    built["faiss_hnsw"] = hnsw
    built["ivf"] = {}
    for nlist in nlists:
        start = time.perf_counter()
        quantizer = faiss.IndexFlatIP(dim)
        ivf = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
        ivf.train(X)
        train_s = time.perf_counter() - start
        ivf.add(X)
        total_s = time.perf_counter() - start
        list_of = quantizer.assign(X, 1).ravel()
        sizes = np.bincount(list_of, minlength=nlist)
        info[f"faiss_ivf{nlist}"] = {
            "s": total_s,
            "train_s": train_s,
            "bytes": faiss_bytes(faiss, ivf),
            "list_sizes": {
                "min": int(sizes.min()),
                "median": float(np.median(sizes)),
                "max": int(sizes.max()),
                "empty": int((sizes == 0).sum()),
            },
        }
        built["ivf"][nlist] = (ivf, quantizer, list_of)
    flat = faiss.IndexFlatIP(dim)
    flat.add(X)
    built["faiss_flat"] = flat
    faiss.omp_set_num_threads(1)
    print(
        f"built {n:,} x {dim} (2 threads): polarmem plain {info['polarmem_plain_s']:.1f} s, polarmem hnsw "
        f"{info['polarmem_hnsw_s']:.1f} s, faiss hnsw {info['faiss_hnsw_s']:.1f} s, "
        + ", ".join(
            f"faiss ivf{nl} {info[f'faiss_ivf{nl}']['s']:.1f} s (train {info[f'faiss_ivf{nl}']['train_s']:.1f} s, "
            f"lists {info[f'faiss_ivf{nl}']['list_sizes']})"
            for nl in nlists
        ),
        flush=True,
    )
    return built, info


def ivf_walk(ivf_entry: tuple, Q: np.ndarray, allowed: np.ndarray | None, nprobe: int) -> dict:
    """Per query (median): codes in the probed lists and the tier members among them (the
    distances an IVFFlat scan with a selector computes), from the coarse assignment."""
    ivf, quantizer, list_of = ivf_entry
    sizes = np.bincount(list_of, minlength=ivf.nlist)
    members = sizes if allowed is None else np.bincount(list_of[allowed], minlength=ivf.nlist)
    _, probed = quantizer.search(Q, nprobe)
    return {
        "codes_walked": float(np.median(sizes[probed].sum(axis=1))),
        "members_scored": float(np.median(members[probed].sum(axis=1))),
    }


def run_dataset(ds: dict, faiss, spec: AnnSpec, nlists: list[int], rounds: int, storage: str) -> dict:
    X, Q = ds["X"], ds["Q"]
    n = X.shape[0]
    print(f"\n== {ds['name']}: N = {n:,} x d = {X.shape[1]}, {len(Q)} queries, k = {K}, nlist {nlists} ==", flush=True)
    out: dict = {
        "dataset": ds["name"],
        "about": ds["about"],
        "n": n,
        "dim": int(X.shape[1]),
        "queries": len(Q),
        "k": K,
        "encode_s": ds["encode_s"],
        "load_before": load_average(),
    }
    built, out["build"] = build_all(ds, faiss, spec, nlists, storage)
    index, hnsw, flat = built["polarmem"], built["faiss_hnsw"], built["faiss_flat"]
    faiss.omp_set_num_threads(1)
    queries = list(Q)
    out["scenarios"] = {}
    for name, sc in ds["scenarios"].items():
        allowed = sc["allowed"]
        tier = n if allowed is None else int(allowed.sum())
        truth = exact_truth(X, Q, allowed)
        if allowed is not None:
            bits = np.packbits(allowed.astype(np.uint8), bitorder="little")
            selector = faiss.IDSelectorBitmap(n, faiss.swig_ptr(bits))
        else:
            selector = None

        def ours(q, exact, ef=0, sc=sc):
            return index.search(
                {"vis": q}, sc["required"], sc["forbidden"], k=K, mode=sc["mode"], threads=1, exact=exact, ef_search=ef
            )

        def with_sel(params):
            if selector is not None:
                params.sel = selector
            return params

        flat_params = with_sel(faiss.SearchParameters())
        hnsw_params = {ef: with_sel(faiss.SearchParametersHNSW(efSearch=ef)) for ef in EF_VALUES}
        ivf_params = {nl: {p: with_sel(faiss.SearchParametersIVF(nprobe=p)) for p in nprobe_grid(nl)} for nl in nlists}
        row: dict = {
            "tier_items": tier,
            "tier_share": tier / n,
            # what PolarMem's default rule (AnnSpec() defaults) would do with this tier at ef 64
            "polarmem_default_rule": "exact" if tier <= max(2048, 64) or tier**2 <= 4.0 * 64 * spec.m * n else "graph",
            "rounds_ms": {},
            "methods": {},
        }
        recalls: dict = {}
        extra: dict = {}
        for r in range(rounds):
            times: dict = {}
            t, hits = timed_each(lambda q: ours(q, True), queries)
            times["polarmem_exact"] = {"-": t}
            if r == 0:
                recalls["polarmem_exact"] = {"-": recall_sets(truth, [h.slots.tolist() for h in hits])}
                if sc["mode"] == "hard":
                    assert all(h.tier_counts["entailed"] == tier for h in hits), hits[0].tier_counts
                    assert all(np.all(h.tiers == 1) for h in hits)
            t, answers = timed_each(lambda q: flat.search(q[None, :], K, params=flat_params)[1][0], queries)
            times["faiss_flat"] = {"-": t}
            if r == 0:
                recalls["faiss_flat"] = {"-": recall_sets(truth, [a.tolist() for a in answers])}
            times["polarmem_hnsw"] = {}
            for ef in EF_VALUES:
                t, hits = timed_each(lambda q, ef=ef: ours(q, False, ef), queries)
                times["polarmem_hnsw"][ef] = t
                if r == 0:
                    got = [h.slots.tolist() for h in hits]
                    assert allowed is None or all(allowed[g].all() for g in got)
                    recalls.setdefault("polarmem_hnsw", {})[ef] = recall_sets(truth, got)
                    extra.setdefault("polarmem_hnsw", {})[ef] = {
                        "scored_median": statistics.median(h.scored for h in hits),
                        "approximate": bool(hits[0].approximate),
                    }
            times["faiss_hnsw"] = {}
            for ef in EF_VALUES:
                faiss.cvar.hnsw_stats.reset()
                t, answers = timed_each(
                    lambda q, ef=ef: hnsw.search(q[None, :], K, params=hnsw_params[ef])[1][0], queries
                )
                times["faiss_hnsw"][ef] = t
                if r == 0:
                    recalls.setdefault("faiss_hnsw", {})[ef] = recall_sets(truth, [a[a >= 0].tolist() for a in answers])
                    extra.setdefault("faiss_hnsw", {})[ef] = {
                        "distances": faiss.cvar.hnsw_stats.ndis / (len(queries) + 1)
                    }
            for nl in nlists:
                ivf, key = built["ivf"][nl][0], f"faiss_ivf{nl}"
                times[key] = {}
                for p, params in ivf_params[nl].items():
                    faiss.cvar.indexIVF_stats.reset()
                    t, answers = timed_each(
                        lambda q, ivf=ivf, params=params: ivf.search(q[None, :], K, params=params)[1][0], queries
                    )
                    times[key][p] = t
                    if r == 0:
                        recalls.setdefault(key, {})[p] = recall_sets(truth, [a[a >= 0].tolist() for a in answers])
                        extra.setdefault(key, {})[p] = {
                            "faiss_ndis": faiss.cvar.indexIVF_stats.ndis / (len(queries) + 1),
                            "short_answers": sum(int((a < 0).any()) for a in answers) / len(answers),
                            **ivf_walk(built["ivf"][nl], Q, allowed, p),
                        }
            row["rounds_ms"][r] = times
            row.setdefault("load_rounds", []).append(load_average())
        for method, by_setting in recalls.items():
            settings = {}
            for s, rec in by_setting.items():
                per_round = [row["rounds_ms"][r][method][s] for r in range(rounds)]
                settings[s] = {
                    "ms": min(per_round),
                    "ms_rounds": per_round,
                    "recall": rec,
                    **extra.get(method, {}).get(s, {}),
                }
            # a PolarMem ef at least the tier's size scans the tier exactly (not the graph): not counted
            ok = {s: v for s, v in settings.items() if v["recall"] >= TARGET and v.get("approximate", True)}
            best = min(ok, key=lambda s: ok[s]["ms"]) if ok else None
            row["methods"][method] = {
                "settings": settings,
                "at_095": None
                if best is None
                else {"setting": best, "ms": ok[best]["ms"], "recall": ok[best]["recall"]},
            }
        del row["rounds_ms"]
        m = row["methods"]
        ours_at, peer_at = m["polarmem_hnsw"]["at_095"], m["faiss_hnsw"]["at_095"]
        t_exact = m["polarmem_exact"]["settings"]["-"]["ms"]
        row["ratios_at_095"] = {"polarmem_exact_over_polarmem_hnsw": t_exact / ours_at["ms"] if ours_at else None}
        for nl in nlists:
            ivf_at = m[f"faiss_ivf{nl}"]["at_095"]
            row["ratios_at_095"].update(
                {
                    f"ivf{nl}_over_polarmem_hnsw": ivf_at["ms"] / ours_at["ms"] if ivf_at and ours_at else None,
                    f"ivf{nl}_over_faiss_hnsw": ivf_at["ms"] / peer_at["ms"] if ivf_at and peer_at else None,
                    f"polarmem_exact_over_ivf{nl}": t_exact / ivf_at["ms"] if ivf_at else None,
                }
            )
        out["scenarios"][name] = row
        print(
            f"-- {name}: tier {tier:,} items ({tier / n:.1%}), PolarMem default rule: {row['polarmem_default_rule']}",
            flush=True,
        )
        for method, v in m.items():
            cells = "  ".join(
                f"{s}:{x['ms']:.3f}/{x['recall']:.3f}{'' if x.get('approximate', True) else '(exact)'}"
                for s, x in v["settings"].items()
            )
            at = v["at_095"]
            head = f"{at['setting']} {at['ms']:.3f} ms r {at['recall']:.3f}" if at else "not reached"
            print(f"  {method:<15} @0.95: {head:<28} | {cells}", flush=True)
        for nl in nlists:
            ivfx = m[f"faiss_ivf{nl}"]["settings"]
            print(
                f"  ivf{nl} walk (codes walked / tier members scored / short answers): "
                + "  ".join(
                    f"{p}:{v['codes_walked']:.0f}/{v['members_scored']:.0f}/{v['short_answers']:.2f}"
                    for p, v in ivfx.items()
                ),
                flush=True,
            )
        print(
            f"  ratios at 0.95: { ({k: None if v is None else round(v, 2) for k, v in row['ratios_at_095'].items()}) }",
            flush=True,
        )
    out["load_after"] = load_average()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=("dev", "random"), default=["dev", "random"])
    parser.add_argument("--random-n", type=int, default=100_000)
    parser.add_argument("--dev-sample", type=int, default=0, help="rows of the dev set (0: all 10,000)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dim", type=int, default=384, help="random data's dimension")
    parser.add_argument("--ef-construction", type=int, default=100)
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--nlist-dev", type=int, nargs="+", default=[100, 400])
    parser.add_argument("--nlist-random", type=int, nargs="+", default=[1024])
    parser.add_argument("--storage", default="int8", help="PolarMem's row storage (bench_ann: int8)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/polarmem-ann-kinds-dev-embeddings.npz"))
    parser.add_argument("--out", default=None, help="JSON path; {dataset} is replaced by the dataset's name")
    args = parser.parse_args()
    import faiss

    spec = AnnSpec(m=args.m, ef_construction=args.ef_construction, exact_below=0, exact_factor=0.0)
    started = time.perf_counter()
    header = {
        "build_info": build_info(),
        "faiss": faiss.__version__,
        "faiss_compile": faiss.get_compile_options(),
        "numpy": np.__version__,
        "cpu": cpu_info(),
        "ann": spec.__dict__,
        "storage": args.storage,
        "ef_values": list(EF_VALUES),
        "target_recall": TARGET,
        "rounds": args.rounds,
        "search_threads": 1,
        "build_threads": 2,
        "load_start": load_average(),
    }
    print(json.dumps({k: header[k] for k in ("faiss", "faiss_compile", "cpu", "ann", "load_start")}), flush=True)
    for which in args.datasets:
        ds = (
            dev_dataset(args.queries, args.dev_sample, args.cache)
            if which == "dev"
            else random_dataset(args.random_n, args.queries, args.dim)
        )
        nlists = sorted(
            {min(nl, ds["X"].shape[0] // 39) for nl in (args.nlist_dev if which == "dev" else args.nlist_random)}
        )
        result = run_dataset(ds, faiss, spec, nlists, args.rounds, args.storage)
        report = {**header, **result, "elapsed_s": time.perf_counter() - started}
        if args.out:
            out = (
                args.out
                if "{dataset}" in args.out or len(args.datasets) == 1
                else args.out.replace(".json", "-{dataset}.json")
            )
            write_report(Path(out.replace("{dataset}", ds["name"])), report)
        del ds
    print(f"total {time.perf_counter() - started:.0f} s, load {load_average()}", flush=True)


if __name__ == "__main__":
    main()
