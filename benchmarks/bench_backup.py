"""Backup: time and size of an online snapshot (the Backup RPC) of a real `polarmem serve`, and a
restore check, for docs/operations.md.

A fresh data directory is filled through RememberStream with the sizing items (default 100,000;
d = 384 fp32, 3 HAS + ~20 NOT_HAS concepts each, the deterministic items of bench_server.py). Then:
- Backup runs while one client keeps remembering new items (a snapshot under write load); its
  wall time, the server's CPU seconds during it, the snapshot's bytes and the manifest's own
  seconds are recorded;
- peer, same run, same directory: an offline cold copy (`shutil.copytree`) of the stopped data
  directory, the way an operator copies it without a snapshot, alone and plus a SHA-256 of every
  copied file (what the snapshot's manifest also computes); the ratios are reported;
- restore: verify + copy into an empty directory (timed), a server started on it, item count
  compared with the manifest and 1,000 sampled items' vectors and states compared with what was
  written.

    python benchmarks/bench_backup.py                       # 100,000 items
    python benchmarks/bench_backup.py --items 2000 --out /tmp/backup.json   # a quick run

Writes benchmarks/results/backup.json. Not a test.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_server import item_arrays, items  # noqa: E402
from harness import cpu_seconds, start_server, stop, write_report  # noqa: E402

STREAM_ITEMS = 5_000
SAMPLE = 1_000


def tree_bytes(path: Path) -> int:
    return sum((Path(root) / f).stat().st_size for root, _, files in os.walk(path) for f in files)


def run(count: int, dim: int, work: Path) -> dict:
    from polarmem.v1 import memory_service_pb2 as pb
    from polarmem_server.faces.client import PolarMemClient
    from polarmem_server.storage.local.backup import _sha256, restore

    data_dir, snap, restored = work / "data", work / "snap", work / "restored"
    data_dir.mkdir()
    process, address, _ = start_server(data_dir, max_concurrent=8)
    try:
        with PolarMemClient(address) as client:
            client.create_namespace("bench", spaces=[("vis", dim)], encoder="none")
            started = time.perf_counter()
            for start in range(0, count, STREAM_ITEMS):
                client.remember_stream("bench", items(start, min(STREAM_ITEMS, count - start), dim), timeout_s=600)
            load_s = time.perf_counter() - started

            stop_writes, written_during = threading.Event(), [0]

            def writer() -> None:  # load during the snapshot: one more item at a time
                with PolarMemClient(address) as c:
                    i = count
                    while not stop_writes.is_set():
                        c.remember_stream("bench", items(i, 10, dim), timeout_s=60)
                        i += 10
                        written_during[0] += 10

            thread = threading.Thread(target=writer)
            thread.start()
            time.sleep(1.0)
            cpu_before, started = cpu_seconds(process.pid), time.perf_counter()
            response = client._stub.Backup(pb.BackupRequest(destination_dir=str(snap)), timeout=1800)
            backup_s = time.perf_counter() - started
            backup_cpu_s = cpu_seconds(process.pid) - cpu_before
            stop_writes.set()
            thread.join()
            live_items = client.get_namespace("bench").item_count
    finally:
        stop(process, 120)

    started = time.perf_counter()
    shutil.copytree(data_dir, work / "cold-copy")
    cold_copy_s = time.perf_counter() - started
    cold_copy_bytes = tree_bytes(work / "cold-copy")
    started = time.perf_counter()  # what the snapshot also does: a SHA-256 of every file
    for root, _, files in os.walk(work / "cold-copy"):
        for name in files:
            _sha256(Path(root) / name)
    cold_copy_sha256_s = time.perf_counter() - started
    shutil.rmtree(work / "cold-copy")

    started = time.perf_counter()
    manifest = restore(snap, restored)
    restore_s = time.perf_counter() - started
    snapshot_items = manifest.namespace_items["bench"]

    started = time.perf_counter()
    process, address, _ = start_server(restored, max_concurrent=8)
    mismatches = 0
    try:
        with PolarMemClient(address) as client:
            while client.health() != "SERVING":
                time.sleep(0.05)
            restart_s = time.perf_counter() - started
            restored_items = client.get_namespace("bench").item_count
            rng = np.random.default_rng(7)
            batches: dict[int, tuple] = {}  # items were generated per RememberStream batch
            for index in sorted(rng.choice(count, min(SAMPLE, count), replace=False).tolist()):
                start = index - index % STREAM_ITEMS
                if start not in batches:
                    batches[start] = item_arrays(start, min(STREAM_ITEMS, count - start), dim)
                vectors, has, not_has = (a[index - start] for a in batches[start])
                got = client.get_item("bench", f"item{index:08d}", include_vectors=True)
                ok = np.array_equal(np.asarray(got.vectors["vis"].values, dtype=np.float32), vectors)
                ok = ok and sorted(got.item.has) == sorted(f"c{c}" for c in has)
                ok = ok and sorted(got.item.not_has) == sorted(f"c{c}" for c in not_has)
                mismatches += not ok
    finally:
        stop(process, 120)
    return {
        "items_loaded": count,
        "load_s": load_s,
        "items_written_during_backup": written_during[0],
        "items_live_after_backup": live_items,
        "backup": {
            "wall_s": backup_s,
            "manifest_seconds": response.seconds,
            "checkpoint_seconds_writers_waited": response.checkpoint_seconds,
            "server_cpu_s": backup_cpu_s,
            "snapshot_bytes": response.total_bytes,
            "files": response.files,
            "snapshot_items": snapshot_items,
            "bytes_per_item": response.total_bytes / snapshot_items,
        },
        "peer_offline_cold_copy": {
            "wall_s": cold_copy_s,
            "bytes": cold_copy_bytes,
            "sha256_of_copy_s": cold_copy_sha256_s,
            "backup_wall_over_cold_copy": backup_s / cold_copy_s,
            "backup_wall_over_cold_copy_plus_sha256": backup_s / (cold_copy_s + cold_copy_sha256_s),
            "snapshot_bytes_over_data_dir": response.total_bytes / cold_copy_bytes,
        },
        "restore": {
            "verify_and_copy_s": restore_s,
            "restart_to_serving_s": restart_s,
            "items_after_restore": restored_items,
            "matches_manifest": restored_items == snapshot_items,
            "all_preloaded_items_present": restored_items >= count,
            "sampled_items": SAMPLE,
            "sampled_mismatches": mismatches,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--work-dir", default=None, help="where the data directories go (default: a temp dir)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "backup.json"))
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(dir=args.work_dir) as tmp:
        result = run(args.items, args.dim, Path(tmp))
    report = {
        "benchmark": "bench_backup",
        "dim": args.dim,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        **result,
    }
    write_report(Path(args.out), report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
