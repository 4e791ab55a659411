"""What confidence ranking costs the queries that do not use it (issue 18), measured against the
previous build of the core in the same run, with FAISS as a second same-run reference.

Two worker processes load the same synthetic namespace (seeded: vectors, HAS / NOT_HAS states with
bench_core.py's skew) — one importing this tree's core, one importing the build this branch
started from (``--previous``: a ``pip install --target`` of that commit) — and time the same hard
queries. They run alternately, ``--rounds`` times each, so drifting machine load hits both alike;
each worker also times FAISS IndexFlatIP (one thread) on the same vectors, so every figure has a
same-process ratio too. This tree's worker measures three things:

* ``plain``: the namespace without any confidence grades — queries without levels (what every
  query was before);
* ``graded``: the same namespace with grades for every (item, concept) a verifier scored (all
  queried concepts, ~70 % of the cells graded at some level) and, where this build keeps them,
  the confidences themselves (the byte column) — queries still without levels or weights: the
  case that must cost nothing;
* ``levels``: the graded namespace, queries with present_level 1 and absent_level 2;
* ``weights``: the graded namespace, queries with present_weight 0.6 and absent_weight 0.4 (the
  0.9 rule's), where this build has them.

Query shapes: ``scan`` — a rare required concept (~3 items: the entailed tier is smaller than k, so
the neutral tier, ~70 % of the items, is read too: the per-item path at full length) — and
``pruned`` — a common one (3 %: the entailed tier holds k, lower tiers are skipped). Per shape the
median over queries of the per-round medians; server CPU is not involved (in-process core).

    flock /tmp/polarmem-bench.lock python benchmarks/bench_confidence_cost.py --previous /tmp/prev \
        --items 200000 --out benchmarks/results/confidence_cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

RARE, COMMON, FORBIDDEN = 0, 2, 4
VOCAB = 20


def namespace(n: int, dim: int, seed: int):
    """Vectors, HAS / NOT_HAS lists and per-item grades {concept: grade} (same for both builds)."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    has_rare = rng.random(n) < 3.0 / n  # ~3 items: the entailed tier is smaller than k
    has_common = rng.random(n) < 0.03
    has_forbidden = rng.random(n) < 0.1
    not_required = rng.random(n) < 0.25
    has, not_has = [], []
    for i in range(n):
        h = [c for c, flag in ((RARE, has_rare[i]), (COMMON, has_common[i]), (FORBIDDEN, has_forbidden[i])) if flag]
        has.append(h)
        not_has.append([c for c in (RARE, COMMON) if not_required[i] and c not in h])
    confidence = rng.beta(0.4, 0.4, size=(n, 6))  # a verifier's means: mostly near 0 or 1
    return vectors, has, not_has, confidence


def worker(args) -> None:
    from polarmem_server import index as core_index
    from polarmem_server.index import Index, SpaceSpec

    vectors, has, not_has, confidence = namespace(args.items, args.dim, args.seed)
    n = args.items
    variants = {"plain": None}
    with_weights = "confidence" in getattr(core_index.GradeCSR, "_fields", ())
    if hasattr(core_index, "CONFIDENCE_LEVELS") and not args.previous_build:
        from polarmem_server.domain.confidence import grades as grade_of

        g = grade_of(confidence)
        if with_weights:  # every scored concept listed, with its confidence (as the local backend grades)
            variants["graded"] = core_index.GradeCSR(
                np.arange(0, 6 * n + 1, 6, dtype=np.int64),
                np.tile(np.arange(6, dtype=np.uint32), n),
                g.ravel(),
                confidence.ravel(),
            )
        else:
            variants["graded"] = [{c: int(g[i, c]) for c in range(6) if g[i, c]} for i in range(n)]
    indexes = {}
    for name, grades in variants.items():
        index = Index([SpaceSpec("vis", args.dim)], threads=1)
        index.ensure_concepts(VOCAB)
        kwargs = {"grades": grades} if grades is not None else {}
        index.add(n, {"vis": vectors}, has=has, not_has=not_has, **kwargs)
        indexes[name] = index
    import faiss

    faiss.omp_set_num_threads(1)
    flat = faiss.IndexFlatIP(args.dim)
    normalised = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    flat.add(normalised)
    queries = np.random.default_rng(args.seed + 1).standard_normal((args.queries, args.dim)).astype(np.float32)
    shapes = {"scan": ([RARE], [FORBIDDEN]), "pruned": ([COMMON], [FORBIDDEN])}

    def time_each(fn) -> float:
        times = []
        for q in queries:
            started = time.perf_counter()
            fn(q)
            times.append(time.perf_counter() - started)
        return statistics.median(times) * 1e6

    out = {"faiss_flat_us": time_each(lambda q: flat.search(q[None, :] / np.linalg.norm(q), args.k))}
    for name, index in indexes.items():
        for shape, (required, forbidden) in shapes.items():
            out[f"{name}/{shape}_us"] = time_each(lambda q: index.search({"vis": q}, required, forbidden, k=args.k))
            if name == "graded":
                out[f"levels/{shape}_us"] = time_each(
                    lambda q: index.search({"vis": q}, required, forbidden, k=args.k, present_level=1, absent_level=2)
                )
                if with_weights:
                    out[f"weights/{shape}_us"] = time_each(
                        lambda q: index.search(
                            {"vis": q}, required, forbidden, k=args.k, present_weight=0.6, absent_weight=0.4
                        )
                    )
    print(json.dumps(out))


def run_worker(pythonpath: str | None, args, previous: bool) -> dict:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    cmd = [
        sys.executable,
        "-P",
        __file__,
        "--worker",
        "--items",
        str(args.items),
        "--dim",
        str(args.dim),
        "--queries",
        str(args.queries),
        "--k",
        str(args.k),
        "--seed",
        str(args.seed),
    ]
    if previous:
        cmd.append("--previous-build")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd="/")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--previous", type=Path, required=False, help="pip --target dir of the previous build")
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/confidence_cost.json"))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--previous-build", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    load_before = os.getloadavg()
    rounds: dict[str, list[dict]] = {"previous": [], "current": []}
    for r in range(args.rounds):
        for build in ("previous", "current") if r % 2 == 0 else ("current", "previous"):
            if build == "previous" and args.previous is None:
                continue
            result = run_worker(str(args.previous) if build == "previous" else None, args, build == "previous")
            rounds[build].append(result)
            print(f"round {r} {build}: " + ", ".join(f"{k} {v:.0f}" for k, v in result.items()), flush=True)
    load_after = os.getloadavg()

    def median_of(build: str, key: str) -> float | None:
        values = [r[key] for r in rounds[build] if key in r]
        return statistics.median(values) if values else None

    summary = {}
    for key in sorted({k for build in rounds.values() for r in build for k in r}):
        summary[key] = {"previous_us": median_of("previous", key), "current_us": median_of("current", key)}

    def paired(key_current: str) -> float | None:
        """Median over rounds of (this round's current / this round's previous plain): the two
        workers of a round ran back to back, so slow drifts of the load cancel."""
        pairs = [
            c[key_current] / p[key]
            for c, p in zip(rounds["current"], rounds["previous"])
            for key in [key_current.replace("graded/", "plain/")]
            if key_current in c and key in p
        ]
        return statistics.median(pairs) if pairs else None

    ratios = {}
    for shape in ("scan", "pruned"):
        prev, cur = median_of("previous", f"plain/{shape}_us"), median_of("current", f"plain/{shape}_us")
        graded, levels = median_of("current", f"graded/{shape}_us"), median_of("current", f"levels/{shape}_us")
        weights = median_of("current", f"weights/{shape}_us")
        fp, fc = median_of("previous", "faiss_flat_us"), median_of("current", "faiss_flat_us")
        ratios[shape] = {
            "current_plain_vs_previous": cur / prev if prev else None,
            "current_plain_vs_previous_paired": paired(f"plain/{shape}_us"),
            "current_graded_no_levels_vs_previous_paired": paired(f"graded/{shape}_us"),
            "current_graded_no_levels_vs_previous": graded / prev if prev and graded else None,
            "current_graded_no_levels_vs_plain": graded / cur if graded else None,
            "levels_vs_no_levels": levels / graded if levels and graded else None,
            "weights_vs_no_weights": weights / graded if weights and graded else None,
            # each build against FAISS measured in the same process: cancels load drift between workers
            "previous_over_faiss": prev / fp if prev and fp else None,
            "current_plain_over_faiss": cur / fc if fc else None,
            "current_graded_over_faiss": graded / fc if fc and graded else None,
        }
    report = {
        "items": args.items,
        "dim": args.dim,
        "queries": args.queries,
        "k": args.k,
        "rounds": args.rounds,
        "threads": 1,
        "previous": str(args.previous),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "medians": summary,
        "ratios": ratios,
        "per_round": rounds,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps(ratios, indent=1))
    print(f"load average before {load_before}, after {load_after}; wrote {args.out}")


if __name__ == "__main__":
    main()
