"""What Milvus's time tick costs a read (issue 35, item 2), measured on the real standalone server
of the `milvus` wheel: search latency per consistency level, and Milvus's CPU, under the default
`proxy.timeTickInterval` (200 ms) and shorter ones.

A Strong read waits until the server's time tick passes the request's arrival; Bounded reads at
`common.gracefulTime` (5,000 ms) in the past and does not wait; Session waits only for this
client's own last write; Eventually never waits. One collection of `--rows` random d-`--dim`
vectors (FLAT, IP, loaded), one write before each timed read (so Session has something to wait
for), `--reads` timed searches of top 10 per level, one call at a time. Milvus's CPU is the
process tree's user + system time over each level's reads, and over 10 s with nothing to do
(/proc, benchmarks/harness.py).

    python benchmarks/bench_milvus_timetick.py --ticks 200 50 --out benchmarks/results/milvus_timetick.json
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import cpu_flags, tree_cpu_seconds, write_report  # noqa: E402
from milvus_server import MilvusServer, milvus_server_command  # noqa: E402

LEVELS = ("Strong", "Session", "Bounded", "Eventually")
IDLE_S = 10.0


class TunedMilvus(MilvusServer):
    """The tests' MilvusServer, started with extra milvus.yaml settings (key=value)."""

    def __init__(self, data_dir: Path, settings: dict[str, int]) -> None:
        super().__init__(data_dir)
        self.settings = settings

    def start(self) -> "TunedMilvus":
        extra = [arg for key, value in self.settings.items() for arg in ("--extra-config", f"{key}={value}")]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [*milvus_server_command(), "--data", str(self.data_dir), "--proxy-port", str(self.port), *extra],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self._wait_ready()
        return self


def measure(server: TunedMilvus, rows: int, dim: int, reads: int) -> dict:
    from polarmem_server.storage.milvus.connection import import_pymilvus

    pymilvus = import_pymilvus()
    alias = "bench"
    pymilvus.connections.connect(alias=alias, uri=server.uri, timeout=30)
    fields = [
        pymilvus.FieldSchema("id", pymilvus.DataType.INT64, is_primary=True),
        pymilvus.FieldSchema("v", pymilvus.DataType.FLOAT_VECTOR, dim=dim),
    ]
    collection = pymilvus.Collection("timetick", pymilvus.CollectionSchema(fields), using=alias)
    rng = np.random.default_rng(0)
    for start in range(0, rows, 5000):
        count = min(5000, rows - start)
        collection.insert([list(range(start, start + count)), rng.standard_normal((count, dim)).astype(np.float32)])
    collection.create_index("v", {"index_type": "FLAT", "metric_type": "IP", "params": {}})
    collection.load()
    idle_before = tree_cpu_seconds(server.process.pid)
    time.sleep(IDLE_S)  # what the tick costs with nothing to do
    out = {"idle_milvus_cpu_s_per_s": round((tree_cpu_seconds(server.process.pid) - idle_before) / IDLE_S, 3)}
    next_id = rows
    for level in LEVELS:
        latencies, cpu_before = [], tree_cpu_seconds(server.process.pid)
        for _ in range(reads):
            collection.insert([[next_id], rng.standard_normal((1, dim)).astype(np.float32)])
            next_id += 1
            query = rng.standard_normal((1, dim)).astype(np.float32)
            started = time.perf_counter()
            collection.search(query, "v", {"metric_type": "IP", "params": {}}, limit=10, consistency_level=level)
            latencies.append((time.perf_counter() - started) * 1000)
        cpu = tree_cpu_seconds(server.process.pid) - cpu_before
        latencies.sort()
        out[level] = {
            "p50_ms": round(statistics.median(latencies), 1),
            "p99_ms": round(latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], 1),
            "milvus_cpu_s_per_read": round(cpu / reads, 4),
        }
        print(
            f"  {level:<10} p50 {out[level]['p50_ms']:>7.1f} ms  p99 {out[level]['p99_ms']:>7.1f} ms  "
            f"Milvus CPU {out[level]['milvus_cpu_s_per_read'] * 1000:.1f} ms/read",
            flush=True,
        )
    pymilvus.connections.disconnect(alias)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, nargs="+", default=[200, 50], help="proxy.timeTickInterval values, ms")
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--reads", type=int, default=60)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report = {
        "rows": args.rows,
        "dim": args.dim,
        "reads_per_level": args.reads,
        "host": platform.machine(),
        "avx512": "avx512f" in cpu_flags(),
        "load_before": os.getloadavg(),
        "runs": {},
    }
    for tick in args.ticks:
        print(f"proxy.timeTickInterval = {tick} ms", flush=True)
        with tempfile.TemporaryDirectory(prefix="milvus-timetick-") as tmp:
            server = TunedMilvus(Path(tmp) / "data", {"proxy.timeTickInterval": tick})
            try:
                server.start()
                report["runs"][str(tick)] = measure(server, args.rows, args.dim, args.reads)
            finally:
                server.stop()
    report["load_after"] = os.getloadavg()
    if args.out:
        write_report(args.out, report)


if __name__ == "__main__":
    main()
