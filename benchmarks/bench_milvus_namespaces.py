"""Namespaces by the thousand over one Milvus (issue 35, item 3), measured on the real standalone
server of the `milvus` wheel, through the library (Memory over MilvusBackend) unless said:

1. What milvus-io/milvus#30607 does in Milvus 2.3.5 (raw pymilvus): in a collection whose ``ns``
   is the partition key, which of an inserted and an upserted row ``ns == "t"`` finds; and
   whether a delete by a non-key expression (what ``pooled`` deletes a namespace with) works.
2. ``pooled`` (storage/milvus/schema.py): ``--namespaces`` namespaces created one after
   another, each creation timed (p50 / p99 / max); Milvus's RSS (process tree) and this
   process's RSS before and after, per namespace.
3. ``shared`` (a partition per namespace): ``--shared-namespaces`` created the same way, for the
   same figures; then, raw, partitions are added to its collection until Milvus refuses one
   (``rootCoord.maxPartitionNum``), unless ``--skip-partition-limit``.
4. A hard Recall (required + forbidden concept, vector, top 10) in a random namespace, p50 / p99,
   with ``--items`` items in every namespace: the ``--query-namespaces`` queried namespaces are
   filled through the library (Remember), the rest with the backend's own row builder in bulk
   upserts (the same rows, thousands per call: filling 100,000 items one Remember at a time takes
   hours at the default time tick). ``shared`` is queried with the same total rows in its
   collection (the other namespaces' rows in one more partition); and, raw, the same filtered
   search on the pooled collection against a partition-key collection (``--partition-key-parts``
   partitions) holding the same rows: what partition pruning would buy.

Reads are Strong (what the backend does today). ``--tick`` sets proxy.timeTickInterval (ms; 0 =
the wheel's 200 ms). Writes benchmarks/results/milvus_namespaces[_tickN].json. Not a test.

    python benchmarks/bench_milvus_namespaces.py --namespaces 10000 --items 10 --tick 20
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from bench_milvus_timetick import TunedMilvus  # noqa: E402
from harness import milvus_lock, rss_mb, tree_cpu_seconds, tree_rss_mb, write_report  # noqa: E402
from milvus_server import MilvusServer  # noqa: E402

CONCEPTS = ("dog", "cat", "car", "bus")  # declared: ids 0..3 in every queried namespace
HAS, NOT_HAS = 1, 2


def percentiles(seconds: list[float]) -> dict:
    ms = np.asarray(seconds) * 1000
    return {
        "n": len(ms),
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p99_ms": round(float(np.percentile(ms, 99)), 2),
        "max_ms": round(float(ms.max()), 2),
        "mean_ms": round(float(ms.mean()), 2),
    }


def probe_partition_key(pm, alias: str) -> dict:
    """Milvus 2.3.5 and its partition key: which rows a key filter finds (raw pymilvus)."""
    out = {}
    name = f"probe_pk_{uuid.uuid4().hex[:8]}"
    fields = [
        pm.FieldSchema("pk", pm.DataType.VARCHAR, is_primary=True, max_length=64),
        pm.FieldSchema("ns", pm.DataType.VARCHAR, max_length=64, is_partition_key=True),
        pm.FieldSchema("vec", pm.DataType.FLOAT_VECTOR, dim=2),
    ]
    col = pm.Collection(name, pm.CollectionSchema(fields), using=alias, num_partitions=16, consistency_level="Strong")
    col.create_index("vec", {"index_type": "FLAT", "metric_type": "IP", "params": {}})
    col.load()
    col.insert([["inserted", "replaced"], ["t", "t"], [[1.0, 0.0]] * 2])
    col.upsert([["upserted"], ["t"], [[1.0, 0.0]]])
    col.upsert([["replaced"], ["t"], [[0.0, 1.0]]])  # an upsert replacing an inserted row
    strong = {"consistency_level": "Strong"}
    out["query_ns_eq_t"] = sorted(r["pk"] for r in col.query('ns == "t"', output_fields=["pk"], **strong))
    out["query_pk_in"] = sorted(
        r["pk"] for r in col.query('pk in ["inserted", "upserted", "replaced"]', output_fields=["pk"], **strong)
    )
    out["query_ns_like_t"] = sorted(r["pk"] for r in col.query('ns like "t%"', output_fields=["pk"], **strong))
    hits = col.search([[1.0, 0.0]], "vec", {"metric_type": "IP", "params": {}}, limit=10, expr='ns == "t"', **strong)
    out["search_ns_eq_t"] = sorted(h.id for h in hits[0])
    col.release()
    pm.utility.drop_collection(name, using=alias)
    # a delete by a non-primary-key expression, in a collection without partitions
    name = f"probe_del_{uuid.uuid4().hex[:8]}"
    fields[1] = pm.FieldSchema("ns", pm.DataType.VARCHAR, max_length=64)
    col = pm.Collection(name, pm.CollectionSchema(fields), using=alias, consistency_level="Strong")
    col.create_index("vec", {"index_type": "FLAT", "metric_type": "IP", "params": {}})
    col.load()
    col.insert([["a", "b", "c"], ["t", "t", "u"], [[1.0, 0.0]] * 3])
    try:
        col.delete('ns == "t"')
        out["delete_by_ns_left"] = sorted(r["pk"] for r in col.query('pk != ""', output_fields=["pk"], **strong))
    except Exception as error:  # noqa: BLE001 - what Milvus says is the finding
        out["delete_by_ns_error"] = str(error)
    col.release()
    pm.utility.drop_collection(name, using=alias)
    return out


def create_timed(memory, names: list[str], dim: int, settings_cls, space_cls) -> list[float]:
    times = []
    for name in names:
        start = time.perf_counter()
        memory.create_namespace(settings_cls(name, spaces=(space_cls("vis", dim),), encoder="none"))
        times.append(time.perf_counter() - start)
    return times


def filler_rows(
    backend,
    target_cls,
    collection,
    names: list[str],
    items: int,
    dim: int,
    partitioned: bool,
    rng,
    tag_of=lambda name: name,
) -> list[list]:
    """The rows the backend would write for `items` items in each of `names` (random concepts
    among ids 0..3 and random vectors), built by its own row builder."""
    from polarmem.storage.v1.records_pb2 import ConceptEvidence, ItemRecord
    from polarmem_server.storage.backend import ItemWrite

    rows = []
    for name in names:
        target = target_cls(name, collection, "vis", dim, None, True, partitioned, tag_of(name))
        for i in range(items):
            record = ItemRecord(id=f"i{i:03d}", kind=1)
            for concept in range(len(CONCEPTS)):
                draw = rng.random()
                if draw < 0.6:
                    record.evidence.append(ConceptEvidence(concept_id=concept, state=HAS if draw < 0.35 else NOT_HAS))
            rows.append(backend._row(target, ItemWrite(record, {"vis": rng.standard_normal(dim).astype(np.float32)})))
    return rows


def bulk(
    backend,
    target_cls,
    collection,
    names: list[str],
    items: int,
    dim: int,
    rng,
    write: str = "upsert",
    tag_of=lambda name: name,
    **into,
) -> float:
    """Fills `names` with filler rows, 4,000 rows per call (built a chunk at a time)."""
    start = time.perf_counter()
    chunk = max(1, 4000 // items)
    for at in range(0, len(names), chunk):
        rows = filler_rows(backend, target_cls, collection, names[at : at + chunk], items, dim, False, rng, tag_of)
        getattr(collection, write)([list(c) for c in zip(*rows)], timeout=120, **into)
    collection.flush(timeout=300)
    return time.perf_counter() - start


def fill_queried(memory, names: list[str], items: int, dim: int, rng) -> None:
    from polarmem_server.library.memory import ItemInput, NamespaceSettings
    from polarmem_server.index import SpaceSpec

    for name in names:
        memory.create_namespace(
            NamespaceSettings(name, spaces=(SpaceSpec("vis", dim),), encoder="none", concepts=CONCEPTS)
        )
        batch = []
        for i in range(items):
            states = {}
            for concept in CONCEPTS:
                draw = rng.random()
                if draw < 0.6:
                    states[concept] = "has" if draw < 0.35 else "not_has"
            batch.append(
                ItemInput(
                    id=f"i{i:03d}",
                    vectors={"vis": rng.standard_normal(dim).astype(np.float32)},
                    states=states,
                    metadata={"ns": name},
                )
            )
        failed = [r for r in memory.remember_batch(name, batch) if isinstance(r, Exception)]
        assert not failed, failed[:1]


def recalls(memory, names: list[str], queries: int, dim: int, rng) -> dict:
    times, foreign = [], 0
    for _ in range(queries):
        name = names[int(rng.integers(len(names)))]
        vector = rng.standard_normal(dim).astype(np.float32)
        start = time.perf_counter()
        result = memory.recall(name, vectors={"vis": vector}, required=["dog"], forbidden=["cat"], k=10)
        times.append(time.perf_counter() - start)
        foreign += sum(1 for h in result.hits if h.record.metadata.get("ns") != name)
    return {**percentiles(times), "hits_from_other_namespaces": foreign}


def raw_searches(collection, pick, queries: int, dim: int, rng, partitions=None) -> dict:
    times = []
    for _ in range(queries):
        name, part = pick()
        vector = rng.standard_normal(dim).astype(np.float32)
        vector /= np.linalg.norm(vector)
        start = time.perf_counter()
        collection.search(
            [vector.tolist()],
            "vec",
            {"metric_type": "IP", "params": {}},
            limit=11,
            expr=f'ns == "{name}" and array_contains(has, 0) and not array_contains(has, 1)',
            partition_names=[part] if part else None,
            consistency_level="Strong",
            timeout=60,
        )
        times.append(time.perf_counter() - start)
    return percentiles(times)


def run(server: MilvusServer, args, report: dict, save) -> dict:
    from polarmem_server.index import SpaceSpec
    from polarmem_server.library.memory import Memory, NamespaceSettings
    from polarmem_server.storage.milvus import schema
    from polarmem_server.storage.milvus.backend import MilvusBackend, _Namespace
    from polarmem_server.storage.milvus.connection import MilvusSettings, import_pymilvus

    pm = import_pymilvus()
    rng = np.random.default_rng(7)
    pid = server.process.pid
    report["milvus_rss_mb_at_start"] = tree_rss_mb(pid)
    alias = f"bench-{uuid.uuid4().hex[:6]}"
    pm.connections.connect(alias=alias, uri=server.uri, timeout=30)
    report["partition_key_probe"] = probe_partition_key(pm, alias)
    print("probe", report["partition_key_probe"], flush=True)

    names = [f"tenant-{i:05d}" for i in range(args.namespaces)]
    queried = sorted(random.Random(3).sample(names, args.query_namespaces))
    unqueried = [n for n in names if n not in set(queried)]

    # ---- pooled ----
    pooled = Memory(MilvusBackend(MilvusSettings(server.uri, prefix="bp", layout="pooled", timeout_s=60)))
    fill_queried(pooled, queried[:1], 1, args.dim, rng)  # the collections exist before the clock starts
    pooled.delete_namespace(queried[0])
    before = (tree_rss_mb(pid), rss_mb())
    start = time.perf_counter()
    created = create_timed(pooled, unqueried, args.dim, NamespaceSettings, SpaceSpec)
    wall = time.perf_counter() - start
    time.sleep(5)
    after = (tree_rss_mb(pid), rss_mb())
    n = len(unqueried)
    report["pooled"] = {
        "create": {**percentiles(created), "wall_s": round(wall, 1), "namespaces": n},
        "milvus_rss_mb": [before[0], after[0]],
        "milvus_rss_kb_per_namespace": round((after[0] - before[0]) * 1024 / n, 2),
        "polarmem_rss_mb": [before[1], after[1]],
        "polarmem_rss_kb_per_namespace": round((after[1] - before[1]) * 1024 / n, 2),
    }
    print("pooled create", report["pooled"], flush=True)
    save()  # what is measured so far survives a later failure
    # idle: every process re-reads every namespace record every 2 s (the settings-refresh daemon, library/daemons.py)
    cpu, milvus_cpu = time.process_time(), tree_cpu_seconds(pid)
    time.sleep(args.idle_s)
    report["pooled"]["idle_cpu_share_of_a_core"] = {
        "polarmem": round((time.process_time() - cpu) / args.idle_s, 3),
        "milvus": round((tree_cpu_seconds(pid) - milvus_cpu) / args.idle_s, 3),
        "seconds": args.idle_s,
    }
    collection = pooled.backend._pooled("vis", args.dim)

    def tag_of(name: str) -> str:  # the rows' ns value, as the backend writes it
        return schema.pooled_tag(name, pooled.namespace(name).to_record().created_ms)

    report["pooled"]["filler_upsert_s"] = round(
        bulk(pooled.backend, _Namespace, collection, unqueried, args.items, args.dim, rng, tag_of=tag_of), 1
    )
    fill_queried(pooled, queried, args.items, args.dim, rng)
    report["pooled"]["rows"] = collection.num_entities
    report["pooled"]["milvus_rss_mb_filled"] = tree_rss_mb(pid)
    report["pooled"]["recall_hard"] = recalls(pooled, queried, args.queries, args.dim, rng)
    report["pooled"]["raw_search"] = raw_searches(
        collection, lambda: (tag_of(schema_ns(queried, rng)), None), args.queries, args.dim, rng
    )
    print("pooled", report["pooled"], flush=True)
    save()  # what is measured so far survives a later failure
    # a second process opening every namespace (a server restart)
    start = time.perf_counter()
    second = Memory(MilvusBackend(MilvusSettings(server.uri, prefix="bp", layout="pooled", timeout_s=60)))
    report["pooled"]["open_all_s"] = round(time.perf_counter() - start, 1)
    second.close()
    print("open", report["pooled"]["open_all_s"], flush=True)

    # ---- partition key, raw: the same rows ----
    fields = [
        pm.FieldSchema("ns", pm.DataType.VARCHAR, max_length=1024, is_partition_key=True) if f.name == "ns" else f
        for f in schema.items_schema("vis", args.dim, shared=True).fields
    ]
    keyed = pm.Collection(
        "bench_partition_key",
        pm.CollectionSchema(fields),
        using=alias,
        num_partitions=args.partition_key_parts,
        consistency_level="Strong",
    )
    keyed.create_index("vec", {"index_type": "FLAT", "metric_type": "IP", "params": {}})
    keyed.load()
    # the same namespaces and row shapes (fresh random draws), by insert (upsert misroutes: the probe)
    insert_s = bulk(pooled.backend, _Namespace, keyed, names, args.items, args.dim, rng, write="insert")
    report["partition_key_raw"] = {
        "partitions": args.partition_key_parts,
        "rows": keyed.num_entities,
        "insert_s": round(insert_s, 1),
        "raw_search": raw_searches(keyed, lambda: (schema_ns(queried, rng), None), args.queries, args.dim, rng),
    }
    print("partition key", report["partition_key_raw"], flush=True)
    save()  # what is measured so far survives a later failure
    keyed.release()
    pm.utility.drop_collection("bench_partition_key", using=alias)
    pooled.close()

    # ---- shared ----
    shared = Memory(MilvusBackend(MilvusSettings(server.uri, prefix="bs", layout="shared", timeout_s=60)))
    fill_queried(shared, queried, args.items, args.dim, rng)
    before = (tree_rss_mb(pid), rss_mb())
    extra = [f"shared-{i:05d}" for i in range(args.shared_namespaces)]
    start = time.perf_counter()
    created = create_timed(shared, extra, args.dim, NamespaceSettings, SpaceSpec)
    wall = time.perf_counter() - start
    time.sleep(5)
    after = (tree_rss_mb(pid), rss_mb())
    m = len(extra)
    report["shared"] = {
        "create": {**percentiles(created), "wall_s": round(wall, 1), "namespaces": m},
        "milvus_rss_mb": [before[0], after[0]],
        "milvus_rss_kb_per_namespace": round((after[0] - before[0]) * 1024 / m, 2),
        "polarmem_rss_mb": [before[1], after[1]],
        "polarmem_rss_kb_per_namespace": round((after[1] - before[1]) * 1024 / m, 2),
    }
    print("shared create", report["shared"], flush=True)
    shared_col = shared.backend._shared("vis", args.dim)
    shared_col.create_partition("pfiller")
    shared_col.load(partition_names=["pfiller"])
    report["shared"]["filler_upsert_s"] = round(
        bulk(shared.backend, _Namespace, shared_col, unqueried, args.items, args.dim, rng, partition_name="pfiller"), 1
    )
    report["shared"]["rows"] = shared_col.num_entities
    report["shared"]["recall_hard"] = recalls(shared, queried, args.queries, args.dim, rng)
    report["shared"]["raw_search"] = raw_searches(
        shared_col,
        lambda: (lambda ns: (ns, schema.namespace_partition(ns)))(schema_ns(queried, rng)),
        args.queries,
        args.dim,
        rng,
    )
    print("shared", report["shared"], flush=True)
    save()  # what is measured so far survives a later failure
    if not args.skip_partition_limit:
        start = time.perf_counter()
        have, rss_before = len(shared_col.partitions), tree_rss_mb(pid)
        made, refusal = 0, ""
        while time.perf_counter() - start < args.partition_limit_s:
            try:
                shared_col.create_partition(f"x{made}", timeout=60)
                made += 1
            except Exception as error:  # noqa: BLE001 - Milvus's refusal is the finding
                refusal = str(error)
                break
        report["shared"]["partition_limit"] = {
            "partitions_before": have,
            "created_raw": made,
            "partitions_after": len(shared_col.partitions),
            "seconds": round(time.perf_counter() - start, 1),
            "milvus_rss_mb": [rss_before, tree_rss_mb(pid)],
            "note": "partitions created raw, not loaded",
            "refusal": refusal,
        }
        if refusal:
            try:
                shared.create_namespace(
                    NamespaceSettings("one-too-many", spaces=(SpaceSpec("vis", args.dim),), encoder="none")
                )
                report["shared"]["partition_limit"]["library_create"] = "created"
            except Exception as error:  # noqa: BLE001
                report["shared"]["partition_limit"]["library_create"] = f"{type(error).__name__}: {error}"
        print("limit", report["shared"].get("partition_limit"), flush=True)
    shared.close()
    report["milvus_rss_mb_at_end"] = tree_rss_mb(pid)
    pm.connections.disconnect(alias)
    return report


def schema_ns(names: list[str], rng) -> str:
    return names[int(rng.integers(len(names)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--namespaces", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=10, help="items per namespace")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--query-namespaces", type=int, default=20)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--shared-namespaces", type=int, default=30)
    parser.add_argument("--partition-key-parts", type=int, default=64)
    parser.add_argument("--skip-partition-limit", action="store_true")
    parser.add_argument("--partition-limit-s", type=float, default=600)
    parser.add_argument("--idle-s", type=float, default=20)
    parser.add_argument("--tick", type=int, default=0, help="proxy.timeTickInterval, ms (0: the wheel's 200)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    out = args.out or Path(__file__).parent / "results" / (
        f"milvus_namespaces{'_tick' + str(args.tick) if args.tick else ''}.json"
    )
    report = {
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "load_before": os.getloadavg(),
    }
    # a SIGTERM (e.g. `timeout`) unwinds like an exception, so the finally below stops Milvus by PID
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    lock = milvus_lock()
    try:
        with tempfile.TemporaryDirectory(prefix="milvus-namespaces-") as tmp:
            data = Path(tmp) / "data"
            server = TunedMilvus(data, {"proxy.timeTickInterval": args.tick}) if args.tick else MilvusServer(data)
            try:
                server.start()
                run(server, args, report, lambda: write_report(out, report, quiet=True))
            finally:
                server.stop()
    finally:
        lock.close()
    report["load_after"] = os.getloadavg()
    write_report(out, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
