"""Hand-overs of the compiled Recall front while Remembers of new notes add concepts (an open
vocabulary's new words; docs/fast-front.md, "Consistency").

A real `polarmem serve` with the compiled front on its address (a subprocess of this interpreter, so PYTHONPATH
decides which package it runs), an open-vocabulary namespace (encoder none, one 64-d `sem`
space, random vectors), --load COCO caption notes (the bundled dev set's captions, 5 per image,
in file order: bench_mix.captions) stored first; then --writes rounds, one client call at a time, of: one
Remember of a new caption (handed to the library), then --recalls vector Recalls (1
required common concept, 0-1 forbidden, hard, top 10, explain false). Prints how many of those
Remembers appended concepts and the front's native / handed-over counters over that phase.

    python benchmarks/bench_front_appends.py --load 10000 --writes 500

Before a concept append kept the plans, each appending Remember dropped them (measured by
running the same command with the parent commit's api/fast_front.py, domain/namespace.py,
domain/vocabulary.py and memory.py first on PYTHONPATH). Not a test; writes nothing."""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_mix import QUERY_CONCEPTS, captions
from bench_serving import front_counts
from harness import serve_command, start_serve, stop
from polarmem_server.faces.client import PolarMemClient, item_message

DIM = 64


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--load", type=int, default=5000)
    parser.add_argument("--writes", type=int, default=400)
    parser.add_argument("--recalls", type=int, default=4)
    parser.add_argument("--label", default="appends")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    texts = captions(30_000 + args.writes)
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        process = start_serve(
            serve_command(
                "--address",
                "127.0.0.1:0",
                "--data-dir",
                str(data_dir),
                "--metrics-port",
                "0",
                "--log-level",
                "WARNING",
                "--front",
                "compiled",
            ),
            cwd=tmp,
        )
        address, metrics_port = process.address, process.metrics_port
        try:
            with PolarMemClient(address) as client:
                client.create_namespace("notes", spaces=[("sem", DIM)], encoder="none", open_vocabulary=True)
                batch = [
                    item_message(id=f"n{i}", kind="text", text=texts[i], vectors={"sem": rng.standard_normal(DIM)})
                    for i in range(args.load)
                ]
                for start in range(0, len(batch), 1000):
                    client.remember_stream("notes", batch[start : start + 1000])
                known = client.list_concepts("notes").total
                concepts = []
                for concept in QUERY_CONCEPTS:  # those the notes' vocabulary has
                    try:
                        client.recall("notes", required=[concept], top_k=1, explain=False)
                        concepts.append(concept)
                    except Exception:  # noqa: BLE001
                        pass
                print(
                    f"{args.label}: loaded {args.load} notes, {known} concepts, {len(concepts)} query concepts",
                    flush=True,
                )
                before = front_counts(metrics_port)
                appending = 0
                started = time.perf_counter()
                for w in range(args.writes):
                    count = client.get_namespace("notes").concept_count
                    client.remember(
                        "notes",
                        id=f"w{w}",
                        kind="text",
                        text=texts[30_000 + w],
                        vectors={"sem": rng.standard_normal(DIM).tolist()},
                    )
                    appending += client.get_namespace("notes").concept_count > count
                    for _ in range(args.recalls):
                        required = [concepts[rng.integers(len(concepts))]]
                        forbidden = [
                            c
                            for c in [concepts[rng.integers(len(concepts))]]
                            if c not in required and rng.random() < 0.5
                        ]
                        client.recall(
                            "notes",
                            vectors={"sem": rng.standard_normal(DIM).tolist()},
                            required=required,
                            forbidden=forbidden,
                            top_k=10,
                            mode="hard",
                            explain=False,
                        )
                elapsed = time.perf_counter() - started
                after = front_counts(metrics_port)
                total = client.get_namespace("notes").concept_count
            native = after.get("native", 0.0) - before.get("native", 0.0)
            forwarded = after.get("forwarded", 0.0) - before.get("forwarded", 0.0)
            print(
                f"{args.label}: {args.writes} Remembers ({appending} appended concepts; {known} -> {total}), "
                f"{args.writes * args.recalls} vector Recalls through the front in {elapsed:.1f} s: "
                f"native {native:.0f}, handed over {forwarded:.0f}; load average {os.getloadavg()}",
                flush=True,
            )
        finally:
            stop(process, 30)


if __name__ == "__main__":
    main()
