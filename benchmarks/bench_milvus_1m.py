"""Issue 35's targets at 1,000,000 items (item 4): a hard Recall (1 required + 1 forbidden concept,
one d-384 vector, top 10) through one real `polarmem serve --backend milvus` process over the
`milvus` wheel's standalone Milvus 2.3.5 started with `proxy.timeTickInterval=20` (the value
docs/deployment.md recommends).

One namespace, layout ``collection`` (its own collection, FLAT: exact), of `--items` items with
random unit vectors and random states of 4 declared concepts (each HAS with p 0.35, NOT_HAS with
p 0.25, unknown otherwise), so the Recall ``required=[dog], forbidden=[cat]`` has three tiers:
entailed ~23 %, neutral ~26 %, conflict ~51 % of the items. Filled fast, as the tenants benchmark
(bench_milvus_namespaces.py ``bulk``) fills: the records are the library's own (Writer.build_new
makes one record per state combination through a Memory over the same Milvus; each item is a copy
with its own id) and the rows the backend's own row builder (MilvusBackend._row), sent by
bulk inserts of `--chunk` rows; then flushed, released and loaded again (every segment sealed and
indexed).

Measured, each with the load average:

* ``exact``: `--exact-queries` Recalls (Strong) whose answers must equal the specification
  (tests/reference_search.py, applied to each tier's `REFERENCE_DEPTH` nearest items, which
  hold the exact top 10): same ids, same order, same tiers, scores within 1e-4; and
  ``recall_at_10``, the share of the specification's top 10 found (1.0 on FLAT; with
  `--ivf-nprobe N` the namespace has `config.ann` IVF_FLAT and this is what it gives up).
* ``levels``: `--reads` rounds per level of Remember one new item, then one timed Recall of top
  10 (with explanations: the hits' records are read too), one call at a time, as
  bench_milvus_tokens.py does: ``token`` (the writer's Recall at once: it carries the write's
  token), ``token_later`` (the same `--later-s` after the write: a token that old), ``bounded``
  (another client that never wrote: no token) and ``strong`` (consistency STRONG). Per level:
  p50 / p99 ms, the share that saw the write, server CPU and Milvus CPU per Recall (user +
  system of each process tree over the Recalls alone).
* ``closed_loop``: `--loop-s` seconds of back-to-back Recalls (random vectors, each client
  carrying the token of its own one earlier write) from 1 and from 4 clients in flight against
  the one server process: Recalls/s, p50 / p99, server and Milvus CPU per Recall.
* ``milvus_calls``: what one Recall asks Milvus, raw (pymilvus, Bounded, on the same
  collection), `--raw-reps` each: a tier's ``count(*)``, the entailed tier's filtered search
  (top 11), the same search unfiltered, filtered by ``kind == 1`` (every row passes) and by one
  ``array_contains``, ``count(*)`` of every row, the hits' records by id, each with Milvus's CPU
  per call. What binds.

The machine's Milvus lock (tests/milvus_server.py) is held throughout; Milvus and the server are
stopped by PID at the end, also on SIGTERM. Run from outside the checkout (the installed package
is imported):

    cd /tmp && python /path/to/benchmarks/bench_milvus_1m.py --items 1000000 \\
        --out /path/to/benchmarks/results/milvus_1m_d384.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_milvus_timetick import TunedMilvus  # noqa: E402
from bench_milvus_tokens import percentile  # noqa: E402
from harness import cpu_flags, cpu_model, load_average, milvus_lock, tree_rss_mb, write_report  # noqa: E402
from harness import tree_cpu_seconds as proc_cpu_s  # noqa: E402  (the process and its descendants, user + system)
from milvus_serve import ServeProcess  # noqa: E402
from reference_search import ModelItem, reference_search  # noqa: E402

CONCEPTS = ("dog", "cat", "car", "bus")
REQUIRED, FORBIDDEN = "dog", "cat"
STATES = (None, "has", "not_has")
P_HAS, P_NOT_HAS = 0.35, 0.25
NAMESPACE, SPACE = "bench", "vis"
REFERENCE_DEPTH = 12  # per tier: the exact top 10 lies among each tier's 10 nearest
SCORE_TOLERANCE = 1e-4


def item_id(i: int) -> str:
    return f"i{i:07d}"  # zero-padded: id order = slot order, as the reference breaks ties by slot


def stats(latencies_ms: list[float]) -> dict:
    return {
        "p50_ms": round(statistics.median(latencies_ms), 1),
        "p99_ms": round(percentile(latencies_ms, 0.99), 1),
        "n": len(latencies_ms),
    }


# ---- the data ----------------------------------------------------------------------------------


def make_data(n: int, dim: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors (n, dim) float32 and state codes (n, 4): 0 unknown, 1 has, 2 not_has."""
    rng = np.random.default_rng(seed)
    vectors = np.empty((n, dim), dtype=np.float32)
    for at in range(0, n, 100_000):
        block = rng.standard_normal((min(100_000, n - at), dim), dtype=np.float32)
        vectors[at : at + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    draws = rng.random((n, len(CONCEPTS)))
    codes = np.where(draws < P_HAS, 1, np.where(draws < P_HAS + P_NOT_HAS, 2, 0)).astype(np.int8)
    return vectors, codes


def template_records(memory, dim: int) -> dict[tuple, object]:
    """One record per combination of the 4 concepts' states, built by the library's Writer as
    Remember builds a new item's (ids, evidence, partition)."""
    from polarmem_server.domain.items import check_item
    from polarmem_server.library.memory import ItemInput

    namespace = memory.namespace(NAMESPACE)
    out = {}
    for combo in itertools.product(range(3), repeat=len(CONCEPTS)):
        states = {c: STATES[s] for c, s in zip(CONCEPTS, combo) if s}
        checked = check_item(
            ItemInput(id="template", vectors={SPACE: np.ones(dim, dtype=np.float32)}, states=states),
            namespace.spaces,
            len(namespace.settings.templates),
        )
        out[combo] = memory.writer.build_new(namespace, checked, set(), stored=set())
    return out


def fill(memory, vectors: np.ndarray, codes: np.ndarray, chunk: int) -> dict:
    """Bulk inserts of the backend's own rows, one in flight while the next chunk is built."""
    from polarmem.storage.v1.records_pb2 import ItemRecord
    from polarmem_server.storage.backend import ItemWrite

    backend = memory.backend
    target = backend._ns(NAMESPACE)
    templates = template_records(memory, vectors.shape[1])
    target.collection.release(timeout=600)  # not loaded while filling: the query node skips the inserts
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=1) as sender:
        pending = None
        for at in range(0, len(vectors), chunk):
            rows = []
            for i in range(at, min(len(vectors), at + chunk)):
                record = ItemRecord()
                record.CopyFrom(templates[tuple(int(c) for c in codes[i])])
                record.id = item_id(i)
                rows.append(backend._row(target, ItemWrite(record, {SPACE: vectors[i]})))
            columns = [list(column) for column in zip(*rows)]
            if pending is not None:
                pending.result()
            pending = sender.submit(target.collection.insert, columns, timeout=600)
            if at // chunk % 20 == 0:
                print(
                    f"  filled {at + len(rows):,} ({time.perf_counter() - started:.0f} s, load {load_average()[0]})",
                    flush=True,
                )
        pending.result()
    inserted_s = time.perf_counter() - started
    target.collection.flush(timeout=1200)
    flushed_s = time.perf_counter() - started
    if target.ann is not None:  # loading before the IVF lists are built would search raw rows
        from pymilvus import utility

        utility.wait_for_index_building_complete(target.collection.name, using=backend.connection.alias, timeout=3600)
    indexed_s = time.perf_counter() - started
    loaded_at = time.perf_counter()
    target.collection.load(timeout=1800)
    return {
        "insert_s": round(inserted_s, 1),
        "flush_s": round(flushed_s - inserted_s, 1),
        "index_s": round(indexed_s - flushed_s, 1),
        "load_s": round(time.perf_counter() - loaded_at, 1),
        "rows": target.collection.num_entities,
        "items_per_s": round(len(vectors) / inserted_s),
        "load_avg_after": load_average()[0],
    }


# ---- the reference -----------------------------------------------------------------------------


def concept_sets(codes: np.ndarray, ids: dict[str, int], i: int) -> tuple[set[int], set[int]]:
    has = {ids[c] for c, code in zip(CONCEPTS, codes[i]) if code == 1}
    not_has = {ids[c] for c, code in zip(CONCEPTS, codes[i]) if code == 2}
    return has, not_has


def expected(vectors: np.ndarray, codes: np.ndarray, ids: dict[str, int], query: np.ndarray) -> list[tuple]:
    """(id, tier, score) of the exact top 10 by tests/reference_search.py, run on each tier's
    REFERENCE_DEPTH nearest items (the overall top 10 ranks by tier first, so it lies among them)."""
    scores = vectors @ (query / np.linalg.norm(query))
    dog, cat = CONCEPTS.index(REQUIRED), CONCEPTS.index(FORBIDDEN)
    conflict = (codes[:, dog] == 2) | (codes[:, cat] == 1)
    entailed = ~conflict & (codes[:, dog] == 1)
    neutral = ~conflict & ~entailed
    slots = []
    for mask in (entailed, neutral, conflict):
        members = np.flatnonzero(mask)
        depth = min(REFERENCE_DEPTH, len(members))
        slots += list(members[np.argpartition(-scores[members], depth - 1)[:depth]])
    slots = sorted(set(int(s) for s in slots))  # slot order = id order
    items = []
    for slot in slots:
        has, not_has = concept_sets(codes, ids, slot)
        items.append(ModelItem(kind=1, vectors={SPACE: vectors[slot].astype(np.float64)}, has=has, not_has=not_has))
    top, _ = reference_search(items, {SPACE: query}, required={ids[REQUIRED]}, forbidden={ids[FORBIDDEN]}, k=10)
    return [(item_id(slots[row[0]]), row[1], row[2]) for row in top]


def check_exact(client, vectors, codes, ids, queries: int, rng, approximate: bool) -> dict:
    mismatches, latencies, tiers, found = [], [], {}, 0.0
    for q in range(queries):
        query = rng.standard_normal(vectors.shape[1]).astype(np.float32)
        started = time.perf_counter()
        hits = client.recall(
            NAMESPACE,
            vectors={SPACE: query},
            required=[REQUIRED],
            forbidden=[FORBIDDEN],
            top_k=10,
            mode="hard",
            consistency="strong",
            approximate=approximate,
        ).hits
        latencies.append((time.perf_counter() - started) * 1000)
        got = [(h.id, h.s_log, h.s_sem) for h in hits]
        for h in hits:
            tiers[h.s_log] = tiers.get(h.s_log, 0) + 1
        want = expected(vectors, codes, ids, query)
        found += len({g[0] for g in got} & {w[0] for w in want}) / len(want)
        same = [g[:2] for g in got] == [w[:2] for w in want] and all(
            abs(g[2] - w[2]) <= SCORE_TOLERANCE for g, w in zip(got, want)
        )
        if not same:
            mismatches.append({"query": q, "got": got, "expected": want})
    return {
        "queries": queries,
        "equal": queries - len(mismatches),
        "mismatches": mismatches[:3],
        "recall_at_10": round(found / queries, 4),
        "hits_by_tier": {str(k): v for k, v in sorted(tiers.items())},
        "strong_recall": stats(latencies),
    }


# ---- latency per read level ------------------------------------------------------------------------

LEVELS = (
    ("token", "writer", None, False),
    ("token_later", "writer", None, True),
    ("bounded", "other", None, False),
    ("strong", "writer", "strong", False),
)


def levels(serve, milvus_pid: int, dim: int, reads: int, later_s: float, rng, approximate: bool) -> dict:
    from polarmem_server.faces.client import PolarMemClient

    out = {}
    serial = 0
    with PolarMemClient(serve.address, timeout_s=120) as writer, PolarMemClient(serve.address, timeout_s=120) as other:
        for level, who, consistency, later in LEVELS:
            reader = other if who == "other" else writer
            latencies, found, server_cpu, milvus_cpu = [], 0, 0.0, 0.0
            for _ in range(reads):
                vector = rng.standard_normal(dim).astype(np.float32)
                new_id = f"new{serial:05d}"
                serial += 1
                writer.remember(NAMESPACE, id=new_id, vectors={SPACE: vector}, states={REQUIRED: "has"})
                if later:
                    time.sleep(later_s)
                cpu = (proc_cpu_s(serve.process.pid), proc_cpu_s(milvus_pid))
                started = time.perf_counter()
                hits = reader.recall(
                    NAMESPACE,
                    vectors={SPACE: vector},
                    required=[REQUIRED],
                    forbidden=[FORBIDDEN],
                    top_k=10,
                    mode="hard",
                    consistency=consistency,
                    approximate=approximate,
                ).hits
                latencies.append((time.perf_counter() - started) * 1000)
                server_cpu += proc_cpu_s(serve.process.pid) - cpu[0]
                milvus_cpu += proc_cpu_s(milvus_pid) - cpu[1]
                found += any(h.id == new_id for h in hits)
            out[level] = {
                **stats(latencies),
                "saw_own_write": round(found / reads, 3),
                "server_cpu_ms_per_recall": round(server_cpu / reads * 1000, 1),
                "milvus_cpu_ms_per_recall": round(milvus_cpu / reads * 1000, 1),
                "load_avg": load_average()[0],
            }
            print(f"  {level:<12} {out[level]}", flush=True)
    return out


def closed_loop(serve, milvus_pid: int, dim: int, in_flight: int, seconds: float, seed: int, approximate: bool) -> dict:
    """`in_flight` clients Recalling back to back for `seconds`, each carrying its own write's token."""
    from polarmem_server.faces.client import PolarMemClient

    clients = [PolarMemClient(serve.address, timeout_s=120) for _ in range(in_flight)]
    for n, client in enumerate(clients):  # each carries a token (of a write older than the loop)
        client.remember(
            NAMESPACE, id=f"loop{in_flight}-{n}-{uuid.uuid4().hex[:6]}", vectors={SPACE: np.ones(dim, dtype=np.float32)}
        )
    time.sleep(0.5)
    latencies: list[float] = []
    lock = threading.Lock()
    stop_at = time.perf_counter() + seconds

    def loop(client, n: int) -> None:
        rng = np.random.default_rng(seed + n)
        while time.perf_counter() < stop_at:
            vector = rng.standard_normal(dim).astype(np.float32)
            started = time.perf_counter()
            client.recall(
                NAMESPACE,
                vectors={SPACE: vector},
                required=[REQUIRED],
                forbidden=[FORBIDDEN],
                top_k=10,
                mode="hard",
                approximate=approximate,
            )
            with lock:
                latencies.append((time.perf_counter() - started) * 1000)

    cpu = (proc_cpu_s(serve.process.pid), proc_cpu_s(milvus_pid))
    started = time.perf_counter()
    threads = [threading.Thread(target=loop, args=(c, n)) for n, c in enumerate(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    server_cpu, milvus_cpu = proc_cpu_s(serve.process.pid) - cpu[0], proc_cpu_s(milvus_pid) - cpu[1]
    for client in clients:
        client.close()
    count = len(latencies)
    return {
        "in_flight": in_flight,
        "recalls": count,
        "seconds": round(wall, 1),
        "recalls_per_s": round(count / wall, 2),
        **stats(latencies),
        "server_cpu_ms_per_recall": round(server_cpu / count * 1000, 1),
        "milvus_cpu_ms_per_recall": round(milvus_cpu / count * 1000, 1),
        "server_rss_mb": tree_rss_mb(serve.process.pid),
        "load_avg": load_average()[0],
    }


# ---- what one Recall asks Milvus -----------------------------------------------------------------


def milvus_calls(memory, ids: dict[str, int], dim: int, reps: int, rng, milvus_pid: int) -> dict:
    from polarmem_server.storage.milvus import expressions as ex

    target = memory.backend._ns(NAMESPACE)
    collection = target.collection
    bounded = {"consistency_level": "Bounded", "timeout": 120}
    params = target.search_params(exact=False, effort=0)  # FLAT: none; IVF: the namespace's nprobe
    entailed = ex.tier(1, [ids[REQUIRED]], [ids[FORBIDDEN]])
    conflict = ex.tier(-1, [ids[REQUIRED]], [ids[FORBIDDEN]])

    def query() -> list:
        vector = rng.standard_normal(dim).astype(np.float32)
        return [(vector / np.linalg.norm(vector)).tolist()]

    calls = {
        "count_entailed": lambda: collection.query(entailed, output_fields=["count(*)"], **bounded),
        "count_conflict": lambda: collection.query(conflict, output_fields=["count(*)"], **bounded),
        "search_entailed_top11": lambda: collection.search(query(), "vec", params, limit=11, expr=entailed, **bounded),
        "search_unfiltered_top11": lambda: collection.search(query(), "vec", params, limit=11, **bounded),
        # the same search, filtered by a scalar every row passes / by one array test: what the filter costs
        "search_kind_eq_1_top11": lambda: collection.search(
            query(), "vec", params, limit=11, expr="kind == 1", **bounded
        ),
        "search_array_contains_top11": lambda: collection.search(
            query(), "vec", params, limit=11, expr=f"array_contains(has, {ids[REQUIRED]})", **bounded
        ),
        "count_all": lambda: collection.query('id != ""', output_fields=["count(*)"], **bounded),
        "records_of_10_ids": lambda: collection.query(
            f"id in {ex.strings([item_id(int(i)) for i in rng.integers(0, 1000, 10)])}",
            output_fields=["id", "record"],
            **bounded,
        ),
    }
    out = {}
    for name, call in calls.items():
        call()  # warm
        latencies = []
        cpu = proc_cpu_s(milvus_pid)
        for _ in range(reps):
            started = time.perf_counter()
            call()
            latencies.append((time.perf_counter() - started) * 1000)
        out[name] = {**stats(latencies), "milvus_cpu_ms": round((proc_cpu_s(milvus_pid) - cpu) / reps * 1000, 1)}
        print(f"  {name:<24} {out[name]}", flush=True)
    out["load_avg"] = load_average()[0]
    return out


# ---- the run -------------------------------------------------------------------------------------


def run(server: TunedMilvus, workdir: Path, args, report: dict, save) -> None:
    from polarmem_server.index import AnnSpec, SpaceSpec
    from polarmem_server.library.memory import Memory, NamespaceSettings
    from polarmem_server.storage.milvus.backend import MilvusBackend
    from polarmem_server.storage.milvus.connection import MilvusSettings

    prefix = f"m{uuid.uuid4().hex[:6]}"
    memory = Memory(MilvusBackend(MilvusSettings(server.uri, prefix=prefix, layout="collection", timeout_s=600)))
    ann = AnnSpec(kind="ivf", nlist=args.ivf_nlist, nprobe=args.ivf_nprobe) if args.ivf_nprobe else None
    memory.create_namespace(
        NamespaceSettings(NAMESPACE, spaces=(SpaceSpec(SPACE, args.dim),), encoder="none", concepts=CONCEPTS, ann=ann)
    )
    ids = {name: memory.namespace(NAMESPACE).vocabulary.lookup(name) for name in CONCEPTS}
    started = time.perf_counter()
    vectors, codes = make_data(args.items, args.dim, args.seed)
    report["data_s"] = round(time.perf_counter() - started, 1)
    dog, cat = CONCEPTS.index(REQUIRED), CONCEPTS.index(FORBIDDEN)
    conflict = (codes[:, dog] == 2) | (codes[:, cat] == 1)
    report["tiers"] = {"entailed": int((~conflict & (codes[:, dog] == 1)).sum()), "conflict": int(conflict.sum())}
    report["tiers"]["neutral"] = args.items - report["tiers"]["entailed"] - report["tiers"]["conflict"]
    print(f"filling {args.items:,} items (load {load_average()[0]})", flush=True)
    report["fill"] = fill(memory, vectors, codes, args.chunk)
    report["milvus_rss_mb_loaded"] = tree_rss_mb(server.process.pid)
    print("fill", report["fill"], flush=True)
    save()

    rng = np.random.default_rng(args.seed + 1)
    approximate = ann is not None  # the Recalls ask for the IVF search (a Recall is exact unless it asks)

    serve = ServeProcess(server.uri, prefix, workdir, timeout_s=600).start()
    try:
        from polarmem_server.faces.client import PolarMemClient

        with PolarMemClient(serve.address, timeout_s=600) as client:
            client.recall(
                NAMESPACE,
                vectors={SPACE: vectors[0]},
                required=[REQUIRED],
                forbidden=[FORBIDDEN],
                top_k=10,
                mode="hard",
                consistency="strong",
            )  # opens the namespace
            print("exact answers", flush=True)
            report["exact"] = check_exact(client, vectors, codes, ids, args.exact_queries, rng, approximate)
            report["exact"]["load_avg"] = load_average()[0]
            print("  ", {k: v for k, v in report["exact"].items() if k != "mismatches"}, flush=True)
        save()
        print("latency per read level", flush=True)
        report["levels"] = levels(serve, server.process.pid, args.dim, args.reads, args.later_s, rng, approximate)
        save()
        report["closed_loop"] = {}
        for in_flight in args.in_flight:
            report["closed_loop"][str(in_flight)] = closed_loop(
                serve, server.process.pid, args.dim, in_flight, args.loop_s, args.seed + 100 * in_flight, approximate
            )
            print("closed loop", report["closed_loop"][str(in_flight)], flush=True)
            save()
        report["server_rss_mb"] = tree_rss_mb(serve.process.pid)
        # last, when the collection has settled (right after loading, Milvus's own background
        # work doubled some calls' CPU); Milvus's idle CPU is reported beside them
        print("what one Recall asks Milvus (raw, Bounded)", flush=True)
        idle = proc_cpu_s(server.process.pid)
        time.sleep(5)
        report["milvus_idle_cpu_ms_per_s"] = round((proc_cpu_s(server.process.pid) - idle) / 5 * 1000, 1)
        report["milvus_calls"] = milvus_calls(memory, ids, args.dim, args.raw_reps, rng, server.process.pid)
        save()
    finally:
        serve.stop()
        memory.close()
    report["milvus_rss_mb_end"] = tree_rss_mb(server.process.pid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--tick", type=int, default=20, help="proxy.timeTickInterval, ms")
    parser.add_argument("--chunk", type=int, default=10_000, help="rows per bulk insert")
    parser.add_argument("--exact-queries", type=int, default=20)
    parser.add_argument("--reads", type=int, default=30, help="rounds per read level")
    parser.add_argument("--later-s", type=float, default=0.6)
    parser.add_argument("--in-flight", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--loop-s", type=float, default=20.0)
    parser.add_argument("--raw-reps", type=int, default=10)
    parser.add_argument(
        "--ivf-nprobe",
        type=int,
        default=0,
        help="0: FLAT (exact, the issue's setting); N: config.ann IVF_FLAT probing N lists, "
        "Recalls with approximate=true (gives up exact answers: recall_at_10 says how much)",
    )
    parser.add_argument("--ivf-nlist", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--lock-wait-s", type=float, default=3600)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "milvus_1m_d384.json")
    args = parser.parse_args()
    report = {
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "layout": (
            f"collection (IVF_FLAT nlist {args.ivf_nlist}, nprobe {args.ivf_nprobe})"
            if args.ivf_nprobe
            else "collection (FLAT, exact)"
        ),
        "milvus": "milvus wheel 2.3.5 standalone",
        "milvus_settings": {"proxy.timeTickInterval": args.tick},
        "host": {
            "cpus": os.cpu_count(),
            "model": cpu_model(),
            "avx512": "avx512f" in cpu_flags(),
            "platform": platform.platform(),
        },
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_before": os.getloadavg(),
    }

    def save() -> None:
        write_report(args.out, report, quiet=True)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: still stop Milvus (finally)
    lock = milvus_lock(args.lock_wait_s)
    try:
        with tempfile.TemporaryDirectory(prefix="milvus-1m-") as tmp:
            server = TunedMilvus(Path(tmp) / "data", {"proxy.timeTickInterval": args.tick})
            try:
                server.start()
                report["milvus_rss_mb_start"] = tree_rss_mb(server.process.pid)
                run(server, Path(tmp), args, report, save)
            finally:
                server.stop()
    finally:
        lock.close()
        report["load_after"] = os.getloadavg()
        report["ended_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        save()
    print(json.dumps({k: report[k] for k in ("fill", "exact", "levels", "closed_loop") if k in report}, indent=1))


if __name__ == "__main__":
    main()
