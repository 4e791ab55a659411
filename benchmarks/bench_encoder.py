"""Benchmark of the MiniLM text encoders, measured in one run on the same inputs:

* `minilm-torch` (sentence-transformers, fp32: the reference and the peer of every ratio;
  tests/reference_minilm.py, no longer a runtime of the product since issue 51),
* `minilm-native` (the compiled core's TextEncoder, 8-bit linear layers: the default since issue 33's
  compiled encoder). The ONNX Runtime variants measured before were removed (issue 51); their figures
  stay in docs/performance.md's history and in git.

Queries come from the COCO dev set (the bundled polarmem_server/data/coco_val2014_dev10k.jsonl.gz): one caption of 3-12
words per image, plus short negated questions built from its labels ("a dog without a frisbee").
Per query: CPU ms of one `encode([text])` call on one thread (thread CPU time, the query cache off),
p50 / p99 / mean. Retrieval: the cosine of each encoder's query vector to torch's, and the top-10
agreement, each encoder searching the dev set's captions (one per image, another caption than the
query's) encoded by itself: the share of queries whose top-10 set is torch's, and the mean overlap.
Ingest: items/s encoding those captions in one call, and the same for 5-caption text items (one thread for both runtimes, each in chunks
of its own default size; --batch-size sets torch's).

    python benchmarks/bench_encoder.py                 # 2000 caption + 500 negated queries, 10k captions
    python benchmarks/bench_encoder.py --queries 300 --corpus 2000   # quick

Writes benchmarks/results/encoder.json (with the host, its SIMD flags and the load average before
and after) and prints a summary. Not a test; fixed seed.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when loaded by path (tests/unit/test_encoder_gate.py)
from harness import cpu_flags, cpu_model, dev_rows, write_report  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEV = None  # the bundled dev set (polarmem_server/data); --data PATH reads a JSONL file instead
NEGATED = (
    "a {a} without a {b}",
    "{a} but no {b}",
    "a photo of a {a} and no {b}",
    "is there a {a} without any {b}?",
    "{a}, not {b}",
)


def dev_texts(
    path: Path | None, captions: int, negated: int, corpus: int, long_items: int, seed: int
) -> tuple[list[str], list[str], list[str]]:
    """(queries, corpus, long items): short captions then negated questions; one other caption per
    image; an image's captions joined (a text item as quickstart stores it, ~65 tokens)."""
    rng = random.Random(seed)
    rows = dev_rows(path)
    queries, negations, documents = [], [], []
    for row in rows:
        short = [c.strip() for c in row["captions"] if 3 <= len(c.split()) <= 12]
        if short:
            chosen = rng.choice(short)
            queries.append(chosen)
            others = [c.strip() for c in row["captions"] if c.strip() != chosen]
            documents.append(others[0] if others else chosen)
        if row["has"] and row["not_has"]:
            negations.append(rng.choice(NEGATED).format(a=rng.choice(row["has"]), b=rng.choice(row["not_has"])))
    joined = [" ".join(c.strip() for c in row["captions"]) for row in rows[-long_items:]] if long_items else []
    return queries[:captions] + negations[:negated], documents[:corpus], joined


def host() -> dict:
    flags = cpu_flags()
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        **{f: f in flags for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16")},
        "python": platform.python_version(),
    }


def query_cpu(encoder, queries: list[str], warmup: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """(vectors, CPU ms per query) for one-by-one calls on this thread."""
    for text in queries[:warmup]:
        encoder.encode([text])
    vectors = np.empty((len(queries), encoder.dim), dtype=np.float32)
    cpu_ms = np.empty(len(queries))
    for i, text in enumerate(queries):
        start = time.thread_time()
        vectors[i] = encoder.encode([text])[0]
        cpu_ms[i] = (time.thread_time() - start) * 1e3
    return vectors, cpu_ms


def ingest(encoder, documents: list[str]) -> tuple[np.ndarray, float, float]:
    """(vectors, items/s by wall clock, items/s by process CPU)."""
    wall, cpu = time.perf_counter(), time.process_time()
    vectors = encoder.encode(documents)
    return vectors, len(documents) / (time.perf_counter() - wall), len(documents) / (time.process_time() - cpu)


def top10(queries: np.ndarray, documents: np.ndarray) -> np.ndarray:
    scores = queries @ documents.T
    part = np.argpartition(-scores, 10, axis=1)[:, :10]
    return np.sort(part, axis=1)


def measure(name: str, encoder, queries: list[str], documents: list[str], long_items: list[str]) -> dict:
    vectors, cpu_ms = query_cpu(encoder, queries)
    corpus, items_wall, items_cpu = ingest(encoder, documents)
    _, long_wall, long_cpu = ingest(encoder, long_items) if long_items else (None, 0.0, 0.0)
    print(
        f"{name:13s} CPU ms/query p50 {np.percentile(cpu_ms, 50):.2f} p99 {np.percentile(cpu_ms, 99):.2f}"
        f"  ingest {items_wall:.0f} captions/s, {long_wall:.0f} 5-caption items/s",
        flush=True,
    )
    return {
        "vectors": vectors,
        "corpus": corpus,
        "batch_size": getattr(encoder, "_batch_size", None),
        "cpu_ms_per_query": {
            "p50": float(np.percentile(cpu_ms, 50)),
            "p99": float(np.percentile(cpu_ms, 99)),
            "mean": float(cpu_ms.mean()),
        },
        "ingest_items_per_s": round(items_wall, 1),
        "ingest_items_per_cpu_s": round(items_cpu, 1),
        "ingest_long_items_per_s": round(long_wall, 1),
        "ingest_long_items_per_cpu_s": round(long_cpu, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEV)
    parser.add_argument("--queries", type=int, default=2000, help="caption queries (3-12 words)")
    parser.add_argument("--negated", type=int, default=500, help="negated questions")
    parser.add_argument("--corpus", type=int, default=10000, help="captions searched for the top-10")
    parser.add_argument("--long-items", type=int, default=500, help="5-caption text items for the second ingest figure")
    parser.add_argument("--batch-size", type=int, default=None, help="ingest chunk size (default: each encoder's own)")
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "encoder.json")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch

    from polarmem_server import build_info

    sys.path.insert(0, str(ROOT / "tests"))
    from reference_minilm import ReferenceMiniLM
    from polarmem_server.scoring.minilm_native import MiniLMNativeEncoder

    queries, documents, long_items = dev_texts(
        args.data, args.queries, args.negated, args.corpus, args.long_items, args.seed
    )
    report: dict = {
        "host": host(),
        "load_before": os.getloadavg(),
        "build_info": build_info(),
        "versions": {"torch": torch.__version__},
        "queries": {
            "captions": min(args.queries, len(queries)),
            "negated": len(queries) - min(args.queries, len(queries)),
            "examples": queries[:2] + queries[-2:],
        },
        "corpus": len(documents),
        "long_items": len(long_items),
        "threads": 1,
        "encoders": {},
    }
    batch = {"batch_size": args.batch_size} if args.batch_size else {}
    encoders = {
        "minilm-torch": ReferenceMiniLM(threads=1, **batch),
        "minilm-native": MiniLMNativeEncoder(cache_size=0),
    }
    results = {name: measure(name, encoder, queries, documents, long_items) for name, encoder in encoders.items()}

    reference = results["minilm-torch"]
    reference_top = top10(reference["vectors"], reference["corpus"])
    torch_p50 = reference["cpu_ms_per_query"]["p50"]
    for name, result in results.items():
        cosine = (result["vectors"] * reference["vectors"]).sum(axis=1)
        top = top10(result["vectors"], result["corpus"])
        overlap = np.array([len(np.intersect1d(a, b)) for a, b in zip(top, reference_top)]) / 10
        entry = {key: value for key, value in result.items() if key not in ("vectors", "corpus")}
        entry.update(
            {
                "cosine_to_torch": {
                    "min": float(cosine.min()),
                    "mean": float(cosine.mean()),
                    "share_at_least_0.999": float((cosine >= 0.999).mean()),
                },
                "top10_same_set": float((overlap == 1).mean()),
                "top10_mean_overlap": float(overlap.mean()),
                "cpu_vs_torch_p50": round(result["cpu_ms_per_query"]["p50"] / torch_p50, 3),
            }
        )
        report["encoders"][name] = entry
        print(
            f"{name:13s} cosine min {entry['cosine_to_torch']['min']:.5f} mean {entry['cosine_to_torch']['mean']:.6f}"
            f"  top-10 same {entry['top10_same_set']:.4f} overlap {entry['top10_mean_overlap']:.4f}",
            flush=True,
        )

    # The query cache's hit: what a repeated query costs.
    cached = MiniLMNativeEncoder()
    cached.encode([queries[0]])
    start = time.thread_time()
    for _ in range(1000):
        cached.encode([queries[0]])
    report["cache_hit_us"] = round((time.thread_time() - start) * 1e3, 2)
    report["load_after"] = os.getloadavg()
    write_report(args.out, report, indent=1)
    print(f"load {report['load_before']} -> {report['load_after']}")


if __name__ == "__main__":
    main()
