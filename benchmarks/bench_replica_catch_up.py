"""What a `--processes` replica pays to catch up with one write of the primary: the primary (the
local backend publishing on its change board) stores --items items, a replica opens the same data
directory as a RocksDB secondary instance, then --writes times the primary stores one item and the
replica's follower polls once (catch-up, then apply). Thread CPU per poll and per step, medians.
A replica polls like this after every write it forwards (api/processes.py) and every
REPLICA_POLL_S while the primary writes.

    python benchmarks/bench_replica_catch_up.py --items 5000 --label replica-catch-up

Writes benchmarks/results/<label>.json. Not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import host, write_report  # noqa: E402
from polarmem_server.index import SpaceSpec  # noqa: E402
from polarmem_server.library.memory import ItemInput, NamespaceSettings  # noqa: E402
from polarmem_server.library.replica import change_board, open_primary, open_replica  # noqa: E402


def timed(samples: list[float], step):
    def run(*args):
        started = time.thread_time()
        try:
            return step(*args)
        finally:
            samples.append(time.thread_time() - started)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--label", default="replica-catch-up")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="polarmem-catch-up-"))
    board = change_board(work / "board")
    primary = open_primary(work / "data", board, "sync", 1)
    primary.create_namespace(NamespaceSettings("t", spaces=(SpaceSpec("vis", args.dim),), encoder="none"))
    rng = np.random.default_rng(0)

    def item(name: str) -> ItemInput:
        return ItemInput(id=name, vectors={"vis": rng.standard_normal(args.dim)}, states={"dog": "has"})

    for i in range(args.items):
        primary.remember("t", item(f"base{i}"))
    replica, follower = open_replica(work / "data", work / "secondary", 1, board)
    follower.poll_once()
    polls: list[float] = []
    catch_ups: list[float] = []
    applies: list[float] = []
    replica.backend.catch_up = timed(catch_ups, replica.backend.catch_up)
    replica.apply_changes = timed(applies, replica.apply_changes)
    poll = timed(polls, follower.poll_once)
    for i in range(args.writes):
        primary.remember("t", item(f"write{i}"))
        poll()

    def median_ms(samples: list[float]) -> float:
        return round(statistics.median(samples) * 1e3, 3)

    result = {
        "benchmark": "bench_replica_catch_up",
        "host": host(),
        "settings": vars(args),
        "cpu_ms_median": {"poll": median_ms(polls), "catch_up": median_ms(catch_ups), "apply": median_ms(applies)},
    }
    print(json.dumps(result["cpu_ms_median"]))
    write_report(Path(__file__).parent / "results" / f"{args.label}.json", result)


if __name__ == "__main__":
    main()
