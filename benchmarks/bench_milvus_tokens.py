"""What a consistency token buys (issue 35, item 1): Recall latency right after a write, through a
real `polarmem serve --backend milvus` over the `milvus` wheel's standalone Milvus, with the
write's token vs Strong vs Bounded without a token, at `proxy.timeTickInterval` 200 ms (the
default) and 20 ms.

One namespace of `--rows` random d-`--dim` items (FLAT). For each read level, `--reads` rounds of:
Remember one new item (a vector of its own), then one timed Recall of top 10 for exactly that
vector (with its default explanations: the hits' records are read too), one call at a time:

* ``token``   — at once, the writing client's own Recall: it carries its last write's token
  (guarantee timestamp = the write's);
* ``strong``  — at once, consistency STRONG (the peer: every read before tokens existed);
* ``bounded`` — at once, another client that never wrote: no token, Bounded staleness;
* ``token_later`` / ``strong_later`` — the same `--later-s` (1 s) after the write: an agent that
  thinks between writing and reading. The token's write is then already applied and the read does
  not wait; Strong waits for the tick again.

Reported per level: p50 / p99 ms, the share of Recalls whose hits include the item just written
(read-your-writes: 1.0 required with the token and Strong, Bounded may miss), and Milvus's CPU
per Recall (user + system of Milvus's process group over the Recalls alone, psutil). Ratios are
to Strong measured in the same run. The machine's Milvus lock is held throughout.

    python benchmarks/bench_milvus_tokens.py --out benchmarks/results/milvus_tokens.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_milvus_timetick import TunedMilvus  # noqa: E402
from harness import cpu_flags, milvus_lock, tree_cpu_seconds, write_report  # noqa: E402
from milvus_serve import ServeProcess  # noqa: E402

# (name, reader: the writing client or one that never wrote, consistency, seconds between the
# write and the read)
LEVELS = (
    ("token", "writer", None, 0.0),
    ("strong", "writer", "strong", 0.0),
    ("bounded", "other", None, 0.0),
    ("token_later", "writer", None, None),
    ("strong_later", "writer", "strong", None),
)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(server: TunedMilvus, workdir: Path, rows: int, dim: int, reads: int, later_s: float) -> dict:
    from polarmem_server.faces.client import PolarMemClient
    from polarmem_server.faces.client_requests import item_message

    serve = ServeProcess(server.uri, f"b{uuid.uuid4().hex[:8]}", workdir, timeout_s=30).start()
    rng = np.random.default_rng(0)
    out: dict = {}
    try:
        with PolarMemClient(serve.address, timeout_s=60) as writer, PolarMemClient(serve.address) as other:
            writer.create_namespace("bench", spaces=[("vis", dim)], encoder="none")
            vectors = rng.standard_normal((rows, dim)).astype(np.float32)
            started = time.perf_counter()
            response = writer.remember_stream(
                "bench", (item_message(id=f"i{n}", vectors={"vis": vectors[n]}) for n in range(rows)), timeout_s=600
            )
            assert response.failed == 0, response.results[:3]
            out["ingest_s"] = round(time.perf_counter() - started, 1)
            writer.recall("bench", vectors={"vis": vectors[0]}, consistency="strong")  # warm
            serial = 0
            for level, who, consistency, pause in LEVELS:
                reader = other if who == "other" else writer
                pause = later_s if pause is None else pause
                latencies, found, cpu = [], 0, 0.0
                for _ in range(reads):
                    vector = rng.standard_normal(dim).astype(np.float32)
                    item_id = f"new{serial}"
                    serial += 1
                    writer.remember("bench", id=item_id, vectors={"vis": vector})
                    time.sleep(pause)
                    cpu_before = tree_cpu_seconds(server.process.pid)
                    started = time.perf_counter()
                    hits = reader.recall("bench", vectors={"vis": vector}, top_k=10, consistency=consistency).hits
                    latencies.append((time.perf_counter() - started) * 1000)
                    cpu += tree_cpu_seconds(server.process.pid) - cpu_before
                    found += any(hit.id == item_id for hit in hits)
                out[level] = {
                    "p50_ms": round(statistics.median(latencies), 1),
                    "p99_ms": round(percentile(latencies, 0.99), 1),
                    "saw_own_write": round(found / reads, 3),
                    "milvus_cpu_ms_per_recall": round(cpu / reads * 1000, 2),
                }
                print(
                    f"  {level:<12} p50 {out[level]['p50_ms']:>7.1f} ms  p99 {out[level]['p99_ms']:>7.1f} ms  "
                    f"saw own write {out[level]['saw_own_write']:.2f}  "
                    f"Milvus CPU {out[level]['milvus_cpu_ms_per_recall']:.1f} ms/recall",
                    flush=True,
                )
        strong = out["strong"]
        out["ratios_to_strong"] = {
            level: {
                "p50": round(out[level]["p50_ms"] / strong["p50_ms"], 3),
                "p99": round(out[level]["p99_ms"] / strong["p99_ms"], 3),
            }
            for level in ("token", "bounded")
        }  # token_later: to strong_later
        out["ratios_to_strong"]["token_later"] = {
            "p50": round(out["token_later"]["p50_ms"] / out["strong_later"]["p50_ms"], 3),
            "p99": round(out["token_later"]["p99_ms"] / out["strong_later"]["p99_ms"], 3),
        }
    finally:
        serve.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, nargs="+", default=[200, 20], help="proxy.timeTickInterval values, ms")
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--reads", type=int, default=60)
    parser.add_argument("--later-s", type=float, default=1.0, help="the *_later levels' pause after the write")
    parser.add_argument("--lock-wait-s", type=float, default=3600)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: still stop Milvus (finally)
    report = {
        "rows": args.rows,
        "dim": args.dim,
        "reads_per_level": args.reads,
        "top_k": 10,
        "later_s": args.later_s,
        "host": {
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "avx512": "avx512f" in cpu_flags(),
        },
        "load_before": os.getloadavg(),
        "runs": {},
    }
    lock = milvus_lock(args.lock_wait_s)
    try:
        for tick in args.ticks:
            print(f"proxy.timeTickInterval = {tick} ms (load {os.getloadavg()[0]:.2f})", flush=True)
            with tempfile.TemporaryDirectory(prefix="milvus-tokens-") as tmp:
                server = TunedMilvus(Path(tmp) / "data", {"proxy.timeTickInterval": tick})
                try:
                    server.start()
                    run = measure(server, Path(tmp), args.rows, args.dim, args.reads, args.later_s)
                    run["load_after"] = os.getloadavg()
                    report["runs"][str(tick)] = run
                finally:
                    server.stop()
    finally:
        lock.close()
    report["load_after"] = os.getloadavg()
    print(json.dumps(report["runs"], indent=1))
    if args.out:
        write_report(args.out, report)


if __name__ == "__main__":
    main()
