"""Server CPU per text Recall through a real `polarmem serve` (issue 33 item 1), for one or two
installed servers in the same run (`--peer`: another venv's `polarmem`, e.g. the main branch's, so
a before / after ratio survives a loaded host: calls alternate between the servers).

Per server: two namespaces of the same COCO captions (`--items` text notes from the dev set bundled as
polarmem_server/data/coco_val2014_dev10k.jsonl.gz), one with an open vocabulary (what `polarmem namespace
create`, the MCP face and auto-created namespaces make: query words are not mapped) and one with
a closed vocabulary of the 80 COCO labels (query words outside it are mapped by the encoder).
Queries: distinct short captions and negated questions of other images (bench_encoder.dev_texts),
each sent once per shape, so the encoder's query cache never hits (a worst case; the hit rate of
a real agent session is not measured here).

Shapes: `mcp` (text, include_context, top_k 5: the MCP recall tool) and `cli` (text, top_k 10);
then `closed/mcp-after-a-new-concept`: each Recall follows a write that adds a concept to the
closed vocabulary (the encoded concept names are refreshed before the query words are mapped).
Server CPU per call: the sum of /proc/PID/task/*/schedstat run times (nanoseconds) of the server
process before and after each call (every thread of the server, the gRPC pollers included).

    python benchmarks/bench_text_recall_cpu.py --peer /work/main/.venv/bin/polarmem

POLARMEM_MINILM_RUNTIME is passed to this server only (an older install's peer may run another
runtime through it; this version has only the native one); `--peer-env KEY=VALUE` sets the peer's environment
(with no --peer, the peer is this server: `--peer-env POLARMEM_ENCODER_SHARED_RUNS=0`).
Then concurrency (`--in-flight 1,4,16`): that many callers at once, MCP shape, distinct texts,
two rounds per server alternating: server CPU per call (the process's utime + stime over the
round, which counts threads that ended too) and latency p50 / p99. Writes benchmarks/results/text_recall_cpu.json. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_encoder import DEV, ROOT, dev_texts, host  # noqa: E402
from harness import cpu_seconds, dev_labels, serve_command, start_serve, stop, write_report  # noqa: E402
from harness import thread_cpu_ns as server_cpu_ns  # noqa: E402  (every live thread of the server, the gRPC pollers included)


def process_cpu_ms(pid: int) -> float:
    """utime + stime of the whole process (threads that ended included; 10 ms ticks): for windows of many calls."""
    return cpu_seconds(pid) * 1000


def start_server(polarmem: str, data: Path, peer_env: dict[str, str] | None) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLARMEM_") or k == "POLARMEM_MINILM_RUNTIME"}
    if peer_env is not None:  # the peer runs its own default runtime, plus --peer-env
        env.pop("POLARMEM_MINILM_RUNTIME", None)
        env.update(peer_env)
    process = start_serve(
        serve_command("--address", "127.0.0.1:0", "--data-dir", str(data), "--metrics-port", "-1", polarmem=polarmem),
        env=env,
    )
    return process, process.address


def in_flight_round(process: subprocess.Popen, client, texts: list[str], threads: int) -> tuple[float, list[float]]:
    """`threads` callers each sending its share of `texts` (MCP shape, the open namespace) one
    after another: (server CPU ms per call, each call's latency in ms)."""
    latencies: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(threads)

    def caller(mine: list[str]) -> None:
        barrier.wait()
        for text in mine:
            start = time.perf_counter()
            client.recall("open", text, top_k=5, include_context=True)
            with lock:
                latencies.append((time.perf_counter() - start) * 1e3)

    workers = [threading.Thread(target=caller, args=(texts[i::threads],)) for i in range(threads)]
    before = process_cpu_ms(process.pid)  # the gRPC server's threads may come and go: the process's total
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if len(latencies) != len(texts):
        raise RuntimeError(f"{len(texts) - len(latencies)} of {len(texts)} Recalls failed")
    return (process_cpu_ms(process.pid) - before) / len(texts), latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--polarmem", default=str(Path(sys.executable).parent / "polarmem"))
    parser.add_argument("--peer", default="", help="a second `polarmem` (another venv) measured alternately")
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--negated", type=int, default=50)
    parser.add_argument("--growing", type=int, default=40, help="Recalls each after a write adding a concept")
    parser.add_argument(
        "--in-flight",
        type=lambda v: [int(x) for x in v.split(",") if x],
        default=[1, 4, 16],
        help="concurrency levels measured after the shapes ('' skips them)",
    )
    parser.add_argument("--per-level", type=int, default=96, help="Recalls per concurrency level and round")
    parser.add_argument("--peer-env", action="append", default=[], help="KEY=VALUE set for the peer server only")
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "text_recall_cpu.json")
    args = parser.parse_args()

    from polarmem_server.faces.client import PolarMemClient

    peer_env = dict(item.split("=", 1) for item in args.peer_env)
    if peer_env and not args.peer:
        args.peer = args.polarmem  # the same server with other settings
    spare_needed = sum(args.in_flight) and 2 * len(args.in_flight) * args.per_level * (2 if args.peer else 1)
    pool, _, _ = dev_texts(DEV, args.queries + args.items + spare_needed, args.negated, 0, 0, args.seed)
    negated = pool[len(pool) - args.negated :] if args.negated else []
    captions = pool[: args.items]  # notes and queries from different images
    queries = pool[args.items : args.items + args.queries] + negated
    extra = pool[args.items + args.queries : len(pool) - len(negated)]
    concepts = dev_labels(DEV)
    servers = {"this": args.polarmem, **({"peer": args.peer} if args.peer else {})}
    report: dict = {
        "host": host(),
        "load_before": os.getloadavg(),
        "items": len(captions),
        "queries": len(queries),
        "this_runtime": os.environ.get("POLARMEM_MINILM_RUNTIME", "default"),
        "peer_env": peer_env,
        "servers": servers,
        "results": {},
    }
    with tempfile.TemporaryDirectory(prefix="polarmem-text-recall-") as tmp:
        running: dict[str, tuple[subprocess.Popen, PolarMemClient]] = {}
        try:
            for name, polarmem in servers.items():
                process, address = start_server(polarmem, Path(tmp) / name, peer_env if name == "peer" else None)
                client = PolarMemClient(address, timeout_s=120)
                client.wait_ready()
                client.create_namespace("open", open_vocabulary=True)
                client.create_namespace("closed", concepts=concepts, open_vocabulary=False)  # open is the default
                for namespace in ("open", "closed"):
                    for start in range(0, len(captions), 500):
                        client.remember_stream(
                            namespace,
                            [_item(f"n{i}", text) for i, text in enumerate(captions[start : start + 500], start)],
                        )
                    client.recall(namespace, "warm up the encoder", top_k=5, include_context=True)
                running[name] = (process, client)
            cpu: dict[tuple[str, str, str], list[float]] = {}
            flights: dict[str, dict] = {}
            for namespace in ("open", "closed"):
                for shape in ("mcp", "cli"):
                    for text in queries:
                        for name, (process, client) in running.items():
                            before = server_cpu_ns(process.pid)
                            if shape == "mcp":
                                client.recall(namespace, text, top_k=5, include_context=True)
                            else:
                                client.recall(namespace, text, top_k=10)
                            cpu.setdefault((name, namespace, shape), []).append(
                                (server_cpu_ns(process.pid) - before) / 1e6
                            )
                    # the second shape repeats the texts: a distinct suffix keeps the query cache cold
                    queries = [f"{text} please" for text in queries]
            # A closed vocabulary that grows between Recalls (a write names a new concept): the
            # next Recall's term mapping refreshes the encoded concept names.
            for i, text in enumerate(queries[: args.growing]):
                for name, (process, client) in running.items():
                    client.remember("closed", id=f"grow{i}", kind="text", text=text, states={f"newconcept{i}": "has"})
                    before = server_cpu_ns(process.pid)
                    client.recall("closed", f"{text} again", top_k=5, include_context=True)
                    cpu.setdefault((name, "closed", "mcp-after-a-new-concept"), []).append(
                        (server_cpu_ns(process.pid) - before) / 1e6
                    )
            # Concurrency: 1, 4, 16 callers at once (each text once, so the query cache stays cold).
            spare = iter(extra)
            for level in args.in_flight:
                for _round in range(2):
                    for name, (process, client) in running.items():
                        texts = [next(spare) for _ in range(args.per_level)]
                        cpu_ms, latencies = in_flight_round(process, client, texts, level)
                        entry = flights.setdefault(name, {}).setdefault(str(level), {"cpu": [], "latency": []})
                        entry["cpu"].append(cpu_ms)
                        entry["latency"].extend(latencies)
            for (name, namespace, shape), values in cpu.items():
                ms = np.array(values)
                report["results"].setdefault(name, {})[f"{namespace}/{shape}"] = {
                    "server_cpu_ms_p50": round(float(np.percentile(ms, 50)), 3),
                    "server_cpu_ms_p99": round(float(np.percentile(ms, 99)), 3),
                    "server_cpu_ms_mean": round(float(ms.mean()), 3),
                }
            for name, levels in flights.items():
                report.setdefault("in_flight", {})[name] = {
                    level: {
                        "server_cpu_ms_per_call": round(float(np.mean(v["cpu"])), 3),
                        "rounds_cpu_ms": [round(c, 3) for c in v["cpu"]],
                        "latency_ms_p50": round(float(np.percentile(v["latency"], 50)), 2),
                        "latency_ms_p99": round(float(np.percentile(v["latency"], 99)), 2),
                    }
                    for level, v in levels.items()
                }
        finally:
            for process, client in running.values():
                client.close()
                stop(process, 20)
    if args.peer:
        report["ratio_this_to_peer_p50"] = {
            key: round(value["server_cpu_ms_p50"] / report["results"]["peer"][key]["server_cpu_ms_p50"], 3)
            for key, value in report["results"]["this"].items()
        }
    report["load_after"] = os.getloadavg()
    write_report(args.out, report, indent=1)
    print(json.dumps(report["results"], indent=1))
    print(
        json.dumps(report.get("ratio_this_to_peer_p50", {})), "load", report["load_before"], "->", report["load_after"]
    )


def _item(item_id: str, text: str):
    from polarmem_server.faces.client_requests import item_message

    return item_message(id=item_id, kind="text", text=text)


if __name__ == "__main__":
    main()
