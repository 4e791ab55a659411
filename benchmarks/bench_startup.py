"""Start-up to SERVING with a large namespace (the 1,000,000-item target).

Builds the data directory once through the library (the same deterministic items as
bench_server.py, d = 384, 3 HAS + ~20 NOT_HAS concepts each; async durability, since how the
items got there is not what is measured), then starts a real `polarmem serve` on it several
times and times process start to the health check answering SERVING (the target: under 30 s for
1,000,000 items; before the compact index records it took 81-83 s on this machine).

    python benchmarks/bench_startup.py --items 1000000 --data-dir /tmp/pm1m   # ~6 min to build once

Writes benchmarks/results/startup.json. Not a test.
"""

from __future__ import annotations

import argparse
import platform
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_server import item_arrays, start_server, write_report  # noqa: E402


def build(data_dir: Path, items: int, dim: int) -> float:
    from polarmem_server.index import SpaceSpec
    from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings

    memory = Memory(data_dir, durability="async")
    memory.create_namespace(NamespaceSettings("bench", spaces=(SpaceSpec("vis", dim),), encoder="none"))
    started = time.perf_counter()
    for start in range(0, items, 5000):
        vectors, has, not_has = item_arrays(start, min(5000, items - start), dim)
        memory.remember_batch(
            "bench",
            [
                ItemInput(
                    id=f"item{start + i:08d}",
                    vectors={"vis": vectors[i]},
                    states={**{f"c{c}": "has" for c in has[i]}, **{f"c{c}": "not_has" for c in not_has[i]}},
                )
                for i in range(len(vectors))
            ],
        )
        if start % 100_000 == 0:
            print(f"built {start:,} items in {time.perf_counter() - started:.0f} s", flush=True)
    memory.flush()
    memory.close()
    return time.perf_counter() - started


def time_to_serving(data_dir: Path) -> tuple[float, int]:
    from polarmem_server.faces.client import PolarMemClient

    started = time.perf_counter()
    process, address, _ = start_server(data_dir, max_concurrent=8)
    try:
        with PolarMemClient(address) as client:
            while client.health() != "SERVING":
                time.sleep(0.01)
            elapsed = time.perf_counter() - started
            count = client.get_namespace("bench").item_count
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(120)
    return elapsed, count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--data-dir", type=Path, required=True, help="kept between runs: the build is slow")
    parser.add_argument("--starts", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/startup.json"))
    args = parser.parse_args(argv)

    report = {"benchmark": "bench_startup", "items": args.items, "dim": args.dim, "platform": platform.platform()}
    marker = args.data_dir / "BENCH_ITEMS"
    if not marker.exists() or int(marker.read_text()) != args.items:
        report["build_s"] = build(args.data_dir, args.items, args.dim)
        marker.write_text(str(args.items))
    times = []
    for _ in range(args.starts):
        elapsed, count = time_to_serving(args.data_dir)
        if count != args.items:
            raise SystemExit(f"the server holds {count} items, expected {args.items}")
        times.append(elapsed)
        print(f"start-up to SERVING with {count:,} items: {elapsed:.1f} s", flush=True)
    report["startup_to_serving_s"] = times
    write_report(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
