"""The rules chosen by rule_sweep.py, measured through the real server on the dev set (issue 18).

`polarmem evaluate`'s machinery (an embedded server on 127.0.0.1, items loaded over gRPC, every
recall mode queried over gRPC) on one half of the bundled dev set — the held-out half by default,
which no setting was chosen on — with the caption vectors encoded once and cached. Each condition
is one namespace; `--query-embedding full affirmative` runs every condition twice, embedding the
whole query or only its affirmative part (text.affirmative_text) for the semantic half.

    python benchmarks/dev_server_check.py --evidence simulated --accuracy 0.9 0.95 --partitioner otsu \
        --seeds 0 1 2 --out docs/evaluation/dev/heldout_simulated
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from polarmem_server.faces import evaluation as ev


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=["tuning", "heldout"], default="heldout")
    parser.add_argument("--items", type=int, default=0, help="first N items of the half (0: all)")
    parser.add_argument("--evidence", choices=["simulated", "engine"], default="simulated")
    parser.add_argument("--engine", default="embedding")
    parser.add_argument("--accuracy", type=float, nargs="+", default=[0.9])
    parser.add_argument("--partitioner", nargs="+", default=["otsu"])
    parser.add_argument("--rho", type=float)
    parser.add_argument("--rho-absent", type=float)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--num-queries", type=int, default=100)
    parser.add_argument("--query-embedding", nargs="+", default=["full"], choices=["full", "affirmative"])
    parser.add_argument("--modes", nargs="+", default=list(ev.MODES))
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "polarmem" / "dev10k_minilm.npy")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from rule_sweep import cached_vectors  # noqa: E402  (the same cache as the sweep)

    from polarmem_server.scoring.encoder import load_encoder

    rows = ev.dev_rows()
    vectors = cached_vectors([" ".join(r["captions"]) for r in rows], args.cache)
    by_id = {r["id"]: i for i, r in enumerate(rows)}
    tuning, held_out = ev.split_dev(rows)
    part = held_out if args.split == "heldout" else tuning
    if args.items:
        part = part[: args.items]
    item_vectors = vectors[[by_id[r["id"]] for r in part]]
    conditions = []
    for partitioner in args.partitioner:
        if args.evidence == "simulated":
            conditions += [ev.Condition("simulated", a, partitioner) for a in args.accuracy]
        else:
            conditions.append(ev.Condition("engine", None, partitioner))
    options = {k: v for k, v in (("rho", args.rho), ("rho_absent", args.rho_absent)) if v is not None}
    encoder = load_encoder("minilm")
    report = {
        "data": f"polarmem_server/data/{ev.DEV_DATA}",
        "split": args.split,
        "items": len(part),
        "seeds": args.seeds,
        "queries_per_seed": args.num_queries,
        "namespace_options": options,
        "engine": args.engine if args.evidence == "engine" else "",
        "note": "simulated evidence is drawn from Beta distributions, not produced by a model"
        if args.evidence == "simulated"
        else "",
        "runs": {},
    }
    for query_embedding in args.query_embedding:
        started = time.perf_counter()
        results = ev.evaluate_seeds(
            conditions,
            part,
            args.seeds,
            encoder,
            num_queries=args.num_queries,
            engine=args.engine if args.evidence == "engine" else "",
            modes=args.modes,
            namespace_options=options,
            item_vectors=item_vectors,
            query_embedding=query_embedding,
            progress=lambda m: print(m, file=sys.stderr, flush=True),
        )
        print(f"query embedding: {query_embedding} ({time.perf_counter() - started:.0f} s)")
        print(ev.format_table(results))
        out = args.out / query_embedding
        ev.write_json(
            results,
            out / "evaluation.json",
            {k: v for k, v in report.items() if k != "runs"} | {"query_embedding": query_embedding},
        )
        report["runs"][query_embedding] = [
            {
                "condition": r.condition.label,
                "hard": r.metrics["hard"]["conflict@3"],
                "strict": r.metrics["strict"]["conflict@3"],
                "ndcg@10": {m: r.metrics[m]["ndcg@10"][0] for m in r.metrics},
            }
            for r in results
        ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
