"""Which gRPC front costs least: the production sync server against grpc.aio variants, decided by
the server's own CPU per call and the latency the compiled load generator sees.

One data directory (--items items of bench_server.py, loaded through a real `polarmem serve`) is
served in turn by each front (front_server.py; `prod` is `polarmem serve` itself). For each front,
the compiled load generator (`make loadgen`) drives, closed loop at each --concurrency:

* GetNamespace (the no-op baseline: the front and a dictionary lookup);
* Recall, hard mode, 1-3 concepts, top 10, a vector, explain left at its default (on: the ten
  hits' records are read and explained);
* Recall, the same with explain=false (nothing read from RocksDB).

Server CPU per call is the front process's CPU time (/proc/PID/stat) over the measurement divided
by the calls completed. Fronts are measured one after another, --rounds times (interleaved), so
compare fronts within a round. With --profile, py-spy samples the production server during
one-at-a-time Recalls (all samples, then GIL-holding samples), as bench_serving.py does.

    python benchmarks/bench_front.py --items 20000 --label front-20k

Writes benchmarks/results/<label>.json. Not a test.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import start_server, stop, write_report  # noqa: E402
from bench_serving import (
    TOP_K,
    build_loadgen,
    load_polarmem,
    loadgen,
    machine,
    make_queries,  # noqa: E402
    profile_recall,
    request_files,
    uptime,
)

HERE = Path(__file__).resolve().parent
FRONTS = ("prod", "sync-bare", "sync-interceptor", "aio-pool", "aio-inline", "aio-inline-interceptor")


def start_front(front: str, data_dir: Path, max_concurrent: int) -> tuple[subprocess.Popen, str]:
    if front == "prod":
        process, address, _ = start_server(data_dir, max_concurrent=max_concurrent)
        return process, address
    process = subprocess.Popen(
        [sys.executable, str(HERE / "front_server.py"), "--front", front, "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=data_dir.parent,
    )
    line = process.stdout.readline()
    if "serving on" not in line:
        process.kill()
        raise RuntimeError(f"front {front} did not start: {line!r}")
    return process, line.split("serving on ")[1].strip()


def row(result: dict) -> dict:
    return {
        "server_cpu_ms_per_call": round(result["server_cpu_ms_per_call"], 4),
        "server_cores": round(result["server_cores"], 3),
        "p50_ms": result["latency_ms"]["p50"],
        "p99_ms": result["latency_ms"]["p99"],
        "throughput_rps": round(result["throughput_rps"], 1),
        "calls": result.get("calls"),
        "codes": result["codes"],
        "client_cores": result.get("client_cores"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--fronts", nargs="+", default=list(FRONTS), choices=FRONTS)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--duration-s", type=float, default=4.0)
    parser.add_argument("--max-calls", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="py-spy the production server (explain on and off)")
    parser.add_argument("--work-dir", type=Path, default=None, help="reuse data loaded there by an earlier run")
    parser.add_argument("--label", default="front")
    args = parser.parse_args(argv)
    out = HERE / "results" / f"{args.label}.json"

    binary = build_loadgen()
    required, forbidden, vectors = make_queries(args.queries, args.dim)
    report: dict = {
        "benchmark": "bench_front",
        "items": args.items,
        "dim": args.dim,
        "top_k": TOP_K,
        "machine": machine(),
        "uptime_start": uptime(),
        "settings": {k: str(v) for k, v in vars(args).items()},
        "rounds": [],
    }
    with tempfile.TemporaryDirectory(prefix="polarmem-front-") as tmp:
        work = args.work_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        files = request_files(work, args.items, args.dim, required, forbidden, vectors, writes=1, noexplain=True)
        data = work / "data"
        server, address = start_front("prod", data, max(args.concurrency) * 2)
        try:
            report["load_s"] = load_polarmem(address, args.items, args.dim)
        finally:
            stop(server, 30)
        print(f"{args.items:,} items loaded in {report['load_s']:.1f} s", flush=True)
        for r in range(args.rounds):
            round_: dict = {"uptime_before": uptime(), "fronts": {}}
            for front in args.fronts:
                process, address = start_front(front, data, max(args.concurrency) * 2)
                try:
                    rows: dict = {}
                    for rpc, requests in (
                        ("get_namespace", files["get_namespace"]),
                        ("recall", files["recall"]),
                        ("recall_noexplain", files["recall_noexplain"]),
                    ):
                        for c in args.concurrency:
                            result = loadgen(
                                binary,
                                address,
                                "recall" if rpc.startswith("recall") else rpc,
                                requests,
                                process.pid,
                                concurrency=c,
                                duration_s=args.duration_s,
                                max_calls=args.max_calls,
                                warmup_s=1.0,
                            )
                            rows[f"{rpc} c={c}"] = row(result)
                            print(
                                f"[round {r + 1}] {front:<23} {rpc:<17} c={c:<3} server CPU "
                                f"{result['server_cpu_ms_per_call']:.3f} ms/call, p50 {result['latency_ms']['p50']:.2f}"
                                f" p99 {result['latency_ms']['p99']:.2f} ms, {result['throughput_rps']:.0f}/s "
                                f"codes {result['codes']}",
                                flush=True,
                            )
                    if args.profile and front == "prod" and r == 0:
                        rows["profile"] = {}
                        for variant in ("recall", "recall_noexplain"):
                            try:
                                rows["profile"][variant] = profile_recall(
                                    binary, address, {"recall": files[variant]}, process.pid, 8, work
                                )
                            except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
                                rows["profile"][variant] = {"error": repr(exc)}
                    round_["fronts"][front] = rows
                finally:
                    stop(process, 30)
            round_["uptime_after"] = uptime()
            report["rounds"].append(round_)
            write_report(out, report)
    report["uptime_end"] = uptime()
    write_report(out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
