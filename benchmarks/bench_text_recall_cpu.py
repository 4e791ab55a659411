"""Server CPU per text Recall through a real `polarmem serve` (issue 33 item 1), for one or two
installed servers in the same run (`--peer`: another venv's `polarmem`, e.g. the main branch's, so
a before / after ratio survives a loaded host: calls alternate between the servers).

Per server: two namespaces of the same COCO captions (`--items` text notes from
shared/data/coco_val2014_dev10k.jsonl), one with an open vocabulary (what `polarmem namespace
create`, the MCP face and auto-created namespaces make: query words are not mapped) and one with
a closed vocabulary of the 80 COCO labels (query words outside it are mapped by the encoder).
Queries: distinct short captions and negated questions of other images (bench_encoder.dev_texts),
each sent once per shape, so the encoder's query cache never hits (a worst case; the hit rate of
a real agent session is reported separately by bench_encoder_options.py --agent-session).

Shapes: `mcp` (text, include_context, top_k 5: the MCP recall tool) and `cli` (text, top_k 10);
then `closed/mcp-after-a-new-concept`: each Recall follows a write that adds a concept to the
closed vocabulary (the encoded concept names are refreshed before the query words are mapped).
Server CPU per call: the sum of /proc/PID/task/*/schedstat run times (nanoseconds) of the server
process before and after each call (every thread of the server, the gRPC pollers included).

    python benchmarks/bench_text_recall_cpu.py --peer /work/main/.venv/bin/polarmem

POLARMEM_MINILM_RUNTIME (e.g. onnx-fp32) is passed to this server only, so the recall pipeline's own
change and the encoder's can be told apart. Writes benchmarks/results/text_recall_cpu.json. Not a test.
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
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from bench_encoder import DEV, ROOT, dev_texts, host  # noqa: E402
from servertools import stop_process  # noqa: E402


def server_cpu_ns(pid: int) -> int:
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended: its time is gone from the sum (rare; pollers are long-lived)
    return total


def start_server(polarmem: str, data: Path, this: str) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("POLARMEM_") or k in ("POLARMEM_ENCODER_CACHE", "POLARMEM_MINILM_RUNTIME")}
    if polarmem != this:  # the peer runs its own default runtime
        env.pop("POLARMEM_MINILM_RUNTIME", None)
    process = subprocess.Popen([polarmem, "serve", "--address", "127.0.0.1:0", "--data-dir", str(data),
                                "--metrics-port", "-1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, env=env)
    for line in process.stdout:
        if "serving on " in line:
            address = line.split("serving on ")[1].split()[0]
            threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
            return process, address
    raise RuntimeError(f"{polarmem} serve did not start")


def labels(path: Path) -> list[str]:
    names: dict[str, None] = {}
    for line in path.open():
        row = json.loads(line)
        names.update(dict.fromkeys(row["has"] + row["not_has"]))
    return sorted(names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--polarmem", default=str(Path(sys.executable).parent / "polarmem"))
    parser.add_argument("--peer", default="", help="a second `polarmem` (another venv) measured alternately")
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--negated", type=int, default=50)
    parser.add_argument("--growing", type=int, default=40, help="Recalls each after a write adding a concept")
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "text_recall_cpu.json")
    args = parser.parse_args()

    from polarmem_server.faces.client import PolarMemClient

    queries, _, _ = dev_texts(DEV, args.queries + args.items, args.negated, 0, 0, args.seed)
    captions, queries = queries[:args.items], queries[args.items:]  # notes and queries from different images
    concepts = labels(DEV)
    servers = {"this": args.polarmem, **({"peer": args.peer} if args.peer else {})}
    report: dict = {"host": host(), "load_before": os.getloadavg(), "items": len(captions), "queries": len(queries),
                    "this_runtime": os.environ.get("POLARMEM_MINILM_RUNTIME", "default"),
                    "servers": servers, "results": {}}
    with tempfile.TemporaryDirectory(prefix="polarmem-text-recall-") as tmp:
        running: dict[str, tuple[subprocess.Popen, PolarMemClient]] = {}
        try:
            for name, polarmem in servers.items():
                process, address = start_server(polarmem, Path(tmp) / name, args.polarmem)
                client = PolarMemClient(address, timeout_s=120)
                client.wait_ready()
                client.create_namespace("open", open_vocabulary=True)
                client.create_namespace("closed", concepts=concepts)
                for namespace in ("open", "closed"):
                    for start in range(0, len(captions), 500):
                        client.remember_stream(namespace, [_item(f"n{i}", text) for i, text in
                                                           enumerate(captions[start:start + 500], start)])
                    client.recall(namespace, "warm up the encoder", top_k=5, include_context=True)
                running[name] = (process, client)
            cpu: dict[tuple[str, str, str], list[float]] = {}
            for namespace in ("open", "closed"):
                for shape in ("mcp", "cli"):
                    for text in queries:
                        for name, (process, client) in running.items():
                            before = server_cpu_ns(process.pid)
                            if shape == "mcp":
                                client.recall(namespace, text, top_k=5, include_context=True)
                            else:
                                client.recall(namespace, text, top_k=10)
                            cpu.setdefault((name, namespace, shape), []).append((server_cpu_ns(process.pid) - before) / 1e6)
                    # the second shape repeats the texts: a distinct suffix keeps the query cache cold
                    queries = [f"{text} please" for text in queries]
            # A closed vocabulary that grows between Recalls (a write names a new concept): the
            # next Recall's term mapping refreshes the encoded concept names.
            for i, text in enumerate(queries[:args.growing]):
                for name, (process, client) in running.items():
                    client.remember("closed", id=f"grow{i}", kind="text", text=text, states={f"newconcept{i}": "has"})
                    before = server_cpu_ns(process.pid)
                    client.recall("closed", f"{text} again", top_k=5, include_context=True)
                    cpu.setdefault((name, "closed", "mcp-after-a-new-concept"), []).append(
                        (server_cpu_ns(process.pid) - before) / 1e6)
            for (name, namespace, shape), values in cpu.items():
                ms = np.array(values)
                report["results"].setdefault(name, {})[f"{namespace}/{shape}"] = {
                    "server_cpu_ms_p50": round(float(np.percentile(ms, 50)), 3),
                    "server_cpu_ms_p99": round(float(np.percentile(ms, 99)), 3),
                    "server_cpu_ms_mean": round(float(ms.mean()), 3)}
        finally:
            for process, client in running.values():
                client.close()
                stop_process(process)
    if args.peer:
        report["ratio_this_to_peer_p50"] = {
            key: round(value["server_cpu_ms_p50"] / report["results"]["peer"][key]["server_cpu_ms_p50"], 3)
            for key, value in report["results"]["this"].items()}
    report["load_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["results"], indent=1))
    print(json.dumps(report.get("ratio_this_to_peer_p50", {})), "load", report["load_before"], "->", report["load_after"])


def _item(item_id: str, text: str):
    from polarmem_server.faces.client_requests import item_message

    return item_message(id=item_id, kind="text", text=text)


if __name__ == "__main__":
    main()
