"""Sizing: resident memory and disk per item of a real `polarmem serve`, for docs/operations.md.

For each item count (default 10,000 and 100,000; d = 384 fp32, 3 HAS + ~20 NOT_HAS concepts per
item, the same deterministic items as bench_server.py) a fresh data directory is filled through
RememberStream (sync durability, the default), then measured:
- RSS of the server (VmRSS) right after the writes and again after a restart (indexes rebuilt
  from RocksDB: the steady state of a long-running server), minus the RSS of the same server
  with an empty namespace;
- the data directory's disk use (allocated blocks, like `du`) while running and after a clean stop.
The peer is the raw payload: n x d float32 vectors, and FAISS's IndexFlatIP holding the same
vectors (its serialized size) when faiss is installed, so every figure is also a ratio.

    python benchmarks/bench_sizing.py                          # 10,000 and 100,000 items
    python benchmarks/bench_sizing.py --items 2000 --out /tmp/sizing.json   # a quick run

Writes benchmarks/results/sizing.json. Not a test.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_server import item_arrays, items  # noqa: E402
from harness import build_info, rss_bytes, start_server, stop, write_report  # noqa: E402

STREAM_ITEMS = 5_000  # items per RememberStream call (each well inside its deadline)


def disk_bytes(path: Path) -> tuple[int, int]:
    """(allocated bytes as `du` counts them, apparent bytes) of every file under `path`."""
    allocated = apparent = 0
    for root, _, files in os.walk(path):
        for name in files:
            st = os.stat(Path(root) / name)
            allocated += st.st_blocks * 512
            apparent += st.st_size
    return allocated, apparent


def peer_bytes(count: int, dim: int) -> dict:
    """The same vectors as raw float32 and, when faiss is installed, in a FAISS IndexFlatIP."""
    report = {"raw_fp32_vector_bytes": count * dim * 4}
    try:
        import faiss
    except ImportError:
        report["faiss"] = "not installed"
        return report
    index = faiss.IndexFlatIP(dim)
    for start in range(0, count, STREAM_ITEMS):
        vectors, _, _ = item_arrays(start, min(STREAM_ITEMS, count - start), dim)
        index.add(vectors)
    report["faiss_flat_ip_serialized_bytes"] = int(faiss.serialize_index(index).size)
    report["faiss_version"] = faiss.__version__
    return report


def measure(count: int, dim: int, work_dir: Path) -> dict:
    from polarmem_server.faces.client import PolarMemClient

    data_dir = work_dir / f"data-{count}"
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)
    process, address, _ = start_server(data_dir, max_concurrent=8)
    try:
        with PolarMemClient(address) as client:
            client.create_namespace("bench", spaces=[("vis", dim)], encoder="none")
            rss_empty = rss_bytes(process.pid)
            started = time.perf_counter()
            failed = 0
            for start in range(0, count, STREAM_ITEMS):
                response = client.remember_stream(
                    "bench", items(start, min(STREAM_ITEMS, count - start), dim), timeout_s=600
                )
                failed += response.failed
            write_s = time.perf_counter() - started
            stored = client.get_namespace("bench").item_count
            rss_written = rss_bytes(process.pid)
            disk_running = disk_bytes(data_dir)
    finally:
        stop(process, 120)
    disk_stopped = disk_bytes(data_dir)

    started = time.perf_counter()
    process, address, _ = start_server(data_dir, max_concurrent=8)
    try:
        with PolarMemClient(address) as client:
            while client.health() != "SERVING":
                time.sleep(0.05)
            restart_s = time.perf_counter() - started
            rss_restarted = rss_bytes(process.pid)
    finally:
        stop(process, 120)
    shutil.rmtree(data_dir, ignore_errors=True)

    peer = peer_bytes(count, dim)
    per_item = {
        "rss_after_writes": (rss_written - rss_empty) / count,
        "rss_after_restart": (rss_restarted - rss_empty) / count,
        "disk_running": disk_running[0] / count,
        "disk_after_stop": disk_stopped[0] / count,
    }
    raw = peer["raw_fp32_vector_bytes"] / count
    return {
        "items": count,
        "stored": stored,
        "failed": failed,
        "write_s": write_s,
        "items_per_s": count / write_s,
        "rss_empty_namespace_bytes": rss_empty,
        "rss_after_writes_bytes": rss_written,
        "rss_after_restart_bytes": rss_restarted,
        "restart_to_serving_s": restart_s,
        "disk_running_bytes": disk_running[0],
        "disk_running_apparent_bytes": disk_running[1],
        "disk_after_stop_bytes": disk_stopped[0],
        "disk_after_stop_apparent_bytes": disk_stopped[1],
        "bytes_per_item": per_item,
        "ratio_to_raw_fp32_vector": {k: v / raw for k, v in per_item.items()},
        "peer": peer,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--work-dir", type=Path, help="where the data directories go (default: a temp dir)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/sizing.json"))
    args = parser.parse_args(argv)
    report = {
        "benchmark": "bench_sizing",
        "dim": args.dim,
        "concepts_per_item": "3 HAS + ~20 NOT_HAS of 100",
        "durability": "sync",
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "build_info": build_info(),
        "load_before": os.getloadavg(),
        "runs": [],
    }
    with tempfile.TemporaryDirectory(prefix="pm-sizing-", dir=args.work_dir) as tmp:
        for count in args.items:
            run = measure(count, args.dim, Path(tmp))
            per = run["bytes_per_item"]
            print(
                f"{count:>9,} items: {run['items_per_s']:.0f} items/s; per item RSS {per['rss_after_writes']:.0f} B "
                f"(after restart {per['rss_after_restart']:.0f} B), disk {per['disk_after_stop']:.0f} B; "
                f"raw vector {args.dim * 4} B",
                flush=True,
            )
            report["runs"].append(run)
    report["load_after"] = os.getloadavg()
    write_report(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
