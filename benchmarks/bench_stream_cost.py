"""Server CPU per note: a RememberStream through the library against native unary Remembers.

A real `polarmem serve` (the compiled front on its address) and one namespace as `polarmem
namespace create` makes it (open vocabulary, the MiniLM encoder, `sem` int8 rows beside fp32;
`--ann` for an approximate index). The notes are COCO dev captions with their `sem` vectors given
(random unit vectors: what is measured is the write path, not the encoder), so each call stores
what a bulk import stores. Per round: --stream notes in one RememberStream (the client's 64 items
a message; the front hands the stream to the library, which commits groups of 1,024 with one
synced write each), then --unary notes as unary Remembers, one at a time (each stored by the core
with a synced write of its own). Server CPU from /proc (the server's processes), notes/s from the
client's wall clock.

    python benchmarks/bench_stream_cost.py [--rounds 2] [--stream 10000] [--unary 2000] [--ann]

Writes benchmarks/results/<label>.json. Not a test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_mix import captions  # noqa: E402
from harness import machine, start_server, tree_pids, uptime, write_report  # noqa: E402


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks
    return total / 100.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--stream", type=int, default=10_000, help="notes per RememberStream")
    parser.add_argument("--unary", type=int, default=2_000, help="unary Remembers per round")
    parser.add_argument("--ann", action="store_true", help="the namespace with an approximate index")
    parser.add_argument("--label", default="stream-cost")
    args = parser.parse_args(argv)

    from polarmem_server.faces.client import PolarMemClient, item_message

    texts = captions(5000)
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(texts), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    report: dict = {"benchmark": "bench_stream_cost", "machine": machine(), "settings": vars(args), "rounds": []}
    with tempfile.TemporaryDirectory(prefix="polarmem-stream-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        server, address, _ = start_server(data, max_concurrent=64, front="compiled")
        try:
            pids = tree_pids(server.pid)
            with PolarMemClient(address, timeout_s=600) as client:
                client.create_namespace("notes", encoder="minilm", open_vocabulary=True, ann=True if args.ann else None)

                def fields(i: int, tag: str) -> dict:
                    return {
                        "id": f"{tag}{i:07d}",
                        "kind": "text",
                        "text": texts[i % len(texts)],
                        "metadata": {"topic": f"t{i % 10}"},
                        "vectors": {"sem": vectors[i % len(texts)]},
                    }

                for r in range(args.rounds):
                    row: dict = {"uptime": uptime()}
                    cpu0, wall0 = cpu_seconds(pids), time.perf_counter()
                    response = client.remember_stream(
                        "notes", (item_message(**fields(i, f"s{r}-")) for i in range(args.stream))
                    )
                    cpu1, wall1 = cpu_seconds(pids), time.perf_counter()
                    if response.failed:
                        raise RuntimeError(f"{response.failed} streamed notes failed: {response.results[0]}")
                    row["stream"] = {
                        "notes_per_s": round(args.stream / (wall1 - wall0)),
                        "server_cpu_ms_per_note": round(1000 * (cpu1 - cpu0) / args.stream, 3),
                    }
                    cpu0, wall0 = cpu_seconds(pids), time.perf_counter()
                    for i in range(args.unary):
                        client.remember("notes", **fields(i, f"u{r}-"))
                    cpu1, wall1 = cpu_seconds(pids), time.perf_counter()
                    row["unary"] = {
                        "notes_per_s": round(args.unary / (wall1 - wall0)),
                        "server_cpu_ms_per_note": round(1000 * (cpu1 - cpu0) / args.unary, 3),
                    }
                    print(f"round {r + 1}: stream {row['stream']}, unary {row['unary']}", flush=True)
                    report["rounds"].append(row)
        finally:
            server.terminate()
            server.wait()
    write_report(HERE / "results" / f"{args.label}.json", report, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
