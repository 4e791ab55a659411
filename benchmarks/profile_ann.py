"""Profile one saved graph: bench_ann.py's corpus at N items, the graph built once and saved
(then loaded in seconds), each scenario timed at the given ef values, optionally a search loop to
run under `perf record -D <ms>`. Used to find where an approximate query spends its time.

    N=1000000 EFC=200 EFS=16,64 .venv/bin/python -P benchmarks/profile_ann.py
    N=1000000 EFC=200 LOOP=hard_two_tiers LOOP_S=15 perf record -g -D 40000 .venv/bin/python -P benchmarks/profile_ann.py

Environment: N (items), EFC (efConstruction), EFS (ef values), REPS (timed rounds), GRAPH_DIR (where
graphs are kept, default /tmp/polarmem-profile), LOOP (a scenario searched at ef 64 for LOOP_S s).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ann import SCENARIOS, concepts, low_rank_corpus, timed_each  # noqa: E402

from polarmem_server.index import AnnSpec, Index, SpaceSpec  # noqa: E402


def main() -> None:
    n, dim, k = int(os.environ.get("N", "1000000")), 384, 10
    efc = int(os.environ.get("EFC", "200"))
    rng = np.random.default_rng(7)
    X, queries = low_rank_corpus(n, 200, dim, rng)
    has, not_has = concepts(n, rng)
    index = Index(
        [SpaceSpec("vis", dim, storage="int8")],
        ann=AnnSpec(m=16, ef_construction=efc, ef_search=64, exact_below=0, exact_factor=0.0),
    )
    index.ensure_concepts(8)
    graph_dir = Path(os.environ.get("GRAPH_DIR", "/tmp/polarmem-profile"))
    graph_dir.mkdir(parents=True, exist_ok=True)
    graph = graph_dir / f"g{n}-{efc}.hnsw"
    start = time.perf_counter()
    if graph.exists():
        index.defer_ann()
        index.add(n, {"vis": X}, has, not_has)
        index.load_ann("vis", str(graph))
    else:
        for first in range(0, n, 10_000):
            last = min(n, first + 10_000)
            index.add(last - first, {"vis": X[first:last]}, has[first:last], not_has[first:last])
        index.save_ann("vis", str(graph))
    print(f"ready in {time.perf_counter() - start:.1f} s", flush=True)

    def search(sc, q, ef):
        return index.search(
            {"vis": q}, sc["required"], sc["forbidden"], k=k, mode=sc["mode"], threads=1, exact=False, ef_search=ef
        )

    for name, sc in SCENARIOS.items():
        for ef in (int(e) for e in os.environ.get("EFS", "16,64").split(",")):
            times = [
                timed_each(lambda q: search(sc, q, ef), queries)[0] for _ in range(int(os.environ.get("REPS", "3")))
            ]
            print(
                f"{name:15s} ef {ef:3d}: {min(times):.3f} ms (rounds {' '.join(f'{t:.3f}' for t in times)})", flush=True
            )
    if os.environ.get("LOOP"):
        sc = SCENARIOS[os.environ["LOOP"]]
        end = time.time() + float(os.environ.get("LOOP_S", "20"))
        while time.time() < end:
            for q in queries:
                search(sc, q, 64)


if __name__ == "__main__":
    main()
