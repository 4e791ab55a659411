"""`polarmem serve --processes N`: Recall throughput and server CPU at 1 and N processes, and how
long a write takes to become visible on every process (the staleness bound of api/processes.py).

One data directory (--items items of bench_server.py, loaded through a real `polarmem serve`) is
served by `polarmem serve --processes P` for each P in --processes. The compiled load generator
drives Recall (hard, 1-3 concepts, top 10, explain=false and the default) closed loop at each
--concurrency over as many channels as calls in flight (each channel is one connection, which
the kernel gives to one process); server CPU is summed over the primary and its replicas
(/proc/PID/stat). Then --lag-writes times: one Remember on a fresh connection, and the seconds
until GetItem finds it on --lag-channels fresh connections in a row; and --cpu-writes single
Remembers, --cpu-gap-s apart with no reads, for the replicas' CPU per write (their CPU over the
writes minus their CPU over an idle interval as long: the board poll). Both write straight to the
primary over its Unix socket, so no replica CPU goes to forwarding them. --lag-only skips the
Recall load (the staleness / replica-CPU measurement of issue 14, before and after a change: run
it once with PYTHONPATH pointing at the older installed package).

    python benchmarks/bench_processes.py --items 20000 --label processes-20k
    python benchmarks/bench_processes.py --items 100000 --lag-only --work-dir /tmp/w100k --label lag-100k

Writes benchmarks/results/<label>.json. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import cpu_seconds, start_server, stop, tree_pids, write_report  # noqa: E402
from bench_serving import (
    NAMESPACE,
    TOP_K,
    build_loadgen,
    load_polarmem,
    machine,  # noqa: E402
    make_queries,
    request_files,
    uptime,
)

HERE = Path(__file__).resolve().parent


def start_processes(data_dir: Path, processes: int, max_concurrent: int) -> tuple[subprocess.Popen, str, list[int]]:
    """`polarmem serve --processes N`, once every replica has logged that it serves: (process,
    address, [primary PID, replica PIDs])."""
    process, address, _ = start_server(
        data_dir, max_concurrent, "auto", "--processes", str(processes), log_level="INFO", replicas=processes - 1
    )
    return process, address, tree_pids(process.pid)


def run_loadgen(
    binary: Path, address: str, requests: Path, pids: list[int], concurrency: int, duration_s: float, max_calls: int
) -> dict:
    argv = [
        str(binary),
        "--target",
        address,
        "--rpc",
        "recall",
        "--requests",
        str(requests),
        "--duration-s",
        str(duration_s),
        "--max-calls",
        str(max_calls),
        "--warmup-s",
        "1",
        "--channels",
        str(concurrency),
        "--concurrency",
        str(concurrency),
    ]
    for pid in pids:
        argv += ["--server-pid", str(pid)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=duration_s + 120)
    if done.returncode != 0:
        raise RuntimeError(f"loadgen failed ({done.returncode}): {done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    servers = result.pop("server")
    cpu = sum(s["cpu_s"] for s in servers)
    calls = result.get("calls") or sum(result["codes"].values())
    return {
        "server_cpu_ms_per_call": round(cpu / max(calls, 1) * 1e3, 4),
        "server_cores": round(sum(s["cores"] for s in servers), 3),
        "per_process_cores": [round(s["cores"], 3) for s in servers],
        "p50_ms": result["latency_ms"]["p50"],
        "p99_ms": result["latency_ms"]["p99"],
        "throughput_rps": round(result["throughput_rps"], 1),
        "codes": result["codes"],
        "client_cores": result.get("client_cores"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16])
    parser.add_argument("--duration-s", type=float, default=5.0)
    parser.add_argument("--max-calls", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--lag-writes", type=int, default=10)
    parser.add_argument("--lag-channels", type=int, default=8)
    parser.add_argument("--cpu-writes", type=int, default=20)
    parser.add_argument(
        "--cpu-gap-s",
        type=float,
        default=2.0,
        help="seconds between the CPU measurement's writes (and after each lag write's forget)",
    )
    parser.add_argument("--lag-only", action="store_true", help="no Recall load: staleness and replica CPU per write")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument(
        "--storage",
        choices=("fp32", "fp16", "int8"),
        default="fp32",
        help="the searched namespace's vector storage (answers are exact in every one)",
    )
    parser.add_argument("--label", default="processes")
    args = parser.parse_args(argv)
    out = HERE / "results" / f"{args.label}.json"

    binary = None if args.lag_only else build_loadgen()
    required, forbidden, vectors = make_queries(args.queries, args.dim)
    report: dict = {
        "benchmark": "bench_processes",
        "items": args.items,
        "dim": args.dim,
        "top_k": TOP_K,
        "machine": machine(),
        "uptime_start": uptime(),
        "settings": {k: str(v) for k, v in vars(args).items()},
        "rounds": [],
    }
    with tempfile.TemporaryDirectory(prefix="polarmem-processes-") as tmp:
        work = args.work_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        files = request_files(work, args.items, args.dim, required, forbidden, vectors, writes=1, noexplain=True)
        data = work / "data"
        server, address, _ = start_server(data, max_concurrent=max(args.concurrency) * 2)
        try:
            report["load_s"] = load_polarmem(address, args.items, args.dim, args.storage)
        finally:
            stop(server)
        print(f"{args.items:,} items loaded in {report['load_s']:.1f} s", flush=True)
        if args.lag_only:
            report["staleness"] = []
            for r in range(args.rounds):
                server, address, pids = start_processes(data, max(args.processes), 8)
                try:
                    row = {"uptime_before": uptime(), "processes": len(pids)}
                    primary = primary_socket(pids[0])
                    row["visibility_lag_s"] = measure_lag(
                        address, args.lag_writes, args.lag_channels, args.dim, primary, args.cpu_gap_s
                    )
                    row.update(
                        replica_cpu_per_write(address, primary, pids[1:], args.cpu_writes, args.cpu_gap_s, args.dim)
                    )
                    row["uptime_after"] = uptime()
                finally:
                    stop(server)
                print(
                    f"[round {r + 1}] write visible everywhere after {row['visibility_lag_s']}; replica CPU "
                    f"{row['replica_cpu_ms_per_write']} ms per write (idle {row['replica_idle_cpu_ms_per_s']} ms/s); "
                    f"load {row['uptime_before']} -> {row['uptime_after']}",
                    flush=True,
                )
                report["staleness"].append(row)
                write_report(out, report)
            report["uptime_end"] = uptime()
            write_report(out, report)
            return 0
        for r in range(args.rounds):
            round_: dict = {"uptime_before": uptime(), "processes": {}}
            for processes in args.processes:
                server, address, pids = start_processes(data, processes, max(args.concurrency) * 2)
                try:
                    rows: dict = {}
                    for rpc in ("recall_noexplain", "recall"):
                        for c in args.concurrency:
                            row = run_loadgen(binary, address, files[rpc], pids, c, args.duration_s, args.max_calls)
                            rows[f"{rpc} c={c}"] = row
                            print(
                                f"[round {r + 1}] processes={processes} {rpc:<17} c={c:<3} {row['throughput_rps']:.0f}/s"
                                f" p50 {row['p50_ms']:.2f} p99 {row['p99_ms']:.2f} ms, server CPU "
                                f"{row['server_cpu_ms_per_call']:.3f} ms/call ({row['per_process_cores']} cores), "
                                f"codes {row['codes']}",
                                flush=True,
                            )
                    if r == 0 and processes > 1:
                        rows["visibility_lag_s"] = measure_lag(address, args.lag_writes, args.lag_channels, args.dim)
                        print(
                            f"[round {r + 1}] processes={processes} write visible everywhere after "
                            f"{rows['visibility_lag_s']}",
                            flush=True,
                        )
                    round_["processes"][str(processes)] = rows
                finally:
                    stop(server)
            round_["uptime_after"] = uptime()
            report["rounds"].append(round_)
            write_report(out, report)
    report["uptime_end"] = uptime()
    write_report(out, report)
    return 0


def primary_socket(pid: int) -> str:
    """The primary's Unix socket for forwarded writes (api/processes.py): the listening socket
    among `pid`'s descriptors whose path ends in primary.sock (/proc/net/unix)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[6] in inodes and fields[7].endswith("/primary.sock"):
            return f"unix:{fields[7]}"
    raise RuntimeError(f"process {pid} has no primary.sock")


def replica_cpu_per_write(address: str, primary: str, replicas: list[int], writes: int, gap_s: float, dim: int) -> dict:
    """The replicas' CPU per Remember (new item), written `gap_s` apart to the primary with no
    reads until the last one is visible on 8 fresh connections (so no apply spills past the
    measurement; 8 Recalls, a few ms), minus their CPU over an idle interval of the same length
    (the board poll, gRPC's idle threads)."""
    import numpy as np

    from polarmem_server.faces.client import PolarMemClient

    ms = 1000.0  # cpu_seconds: utime + stime in seconds
    rng = np.random.default_rng(7)
    with PolarMemClient(primary) as client:
        before = sum(cpu_seconds(p) for p in replicas)
        started = time.perf_counter()
        ids = []
        for i in range(writes):
            vector = rng.standard_normal(dim).astype(np.float32)
            vector /= np.linalg.norm(vector)
            ids.append(f"cpu-{time.time_ns()}-{i}")
            client.remember(NAMESPACE, id=ids[-1], vectors={"vis": vector})
            time.sleep(gap_s)
        wait_visible(address, ids[-1], vector, 8)
        busy = sum(cpu_seconds(p) for p in replicas) - before
        elapsed = time.perf_counter() - started
        before = sum(cpu_seconds(p) for p in replicas)
        time.sleep(elapsed)
        idle = sum(cpu_seconds(p) for p in replicas) - before
        for item_id in ids:  # the data directory keeps --items items for the next run
            client.forget(NAMESPACE, item_id)
        time.sleep(gap_s)  # the forgets are applied before the next measurement
    return {
        "cpu_writes": writes,
        "replica_cpu_ms_per_write": round((busy - idle) * ms / writes, 2),
        "replica_busy_cpu_ms": round(busy * ms, 1),
        "replica_idle_cpu_ms_per_s": round(idle * ms / elapsed, 2),
    }


def wait_visible(address: str, item_id: str, vector, channels: int) -> None:
    """Returns once `channels` fresh connections in a row find `item_id` as the top hit of a
    Recall by its own vector (Recall, not GetItem: GetItem reads the caught-up store, a search
    the index)."""
    from polarmem_server.faces.client import PolarMemClient

    started = time.perf_counter()
    found = 0
    while found < channels:
        with PolarMemClient(address, retries=1) as client:
            hits = client.recall(NAMESPACE, vectors={"vis": vector}, top_k=1).hits
            found = found + 1 if hits and hits[0].id == item_id else 0
        if time.perf_counter() - started > 60:
            raise RuntimeError(f"{item_id} not visible everywhere after 60 s")


def measure_lag(
    address: str, writes: int, channels: int, dim: int, write_target: str | None = None, settle_s: float = 0.5
) -> dict:
    """Seconds from a Remember's acknowledgement (to `write_target`, else `address`) until
    `channels` fresh connections in a row find the item as the top hit of a Recall by its own
    vector: min / median / max over `writes` writes, and the median time of the same check
    made again once the item is everywhere (the method's own floor: `channels` connections
    and Recalls in a row). The item is forgotten afterwards."""
    import numpy as np

    from polarmem_server.faces.client import PolarMemClient

    lags, floors = [], []
    rng = np.random.default_rng(5)
    for i in range(writes):
        vector = rng.standard_normal(dim).astype(np.float32)
        vector /= np.linalg.norm(vector)
        item_id = f"lag-{time.time_ns()}-{i}"
        with PolarMemClient(write_target or address) as client:
            client.remember(NAMESPACE, id=item_id, vectors={"vis": vector})
        written = time.perf_counter()
        wait_visible(address, item_id, vector, channels)
        lags.append(time.perf_counter() - written)
        checked = time.perf_counter()  # the same check once the item is everywhere: the method's floor
        wait_visible(address, item_id, vector, channels)
        floors.append(time.perf_counter() - checked)
        with PolarMemClient(write_target or address) as client:
            client.forget(NAMESPACE, item_id)
        time.sleep(settle_s)  # the replicas apply the forget before the next write is timed
    lags.sort()
    floors.sort()
    return {
        "writes": writes,
        "min": round(lags[0], 3),
        "median": round(lags[len(lags) // 2], 3),
        "max": round(lags[-1], 3),
        "check_floor_median": round(floors[len(floors) // 2], 3),
    }


if __name__ == "__main__":
    sys.exit(main())
