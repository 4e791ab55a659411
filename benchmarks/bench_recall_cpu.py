"""CPU cost of one hard Recall, in process: library level (Memory.recall) and servicer level
(MemoryService.Recall with a prebuilt RecallRequest, no sockets), at two namespace sizes.

Items: d=384 unit vectors, 100 concepts, each item 3 concepts HAS and 20 NOT_HAS (random).
Queries: hard mode, 1-3 explicit concepts (required, sometimes one forbidden), top 10, a query
vector. Reported per recall: process CPU time over ``--calls`` calls (time.process_time, so
a loaded machine inflates it less than wall time, but it still does: compare rows of the same
run only), Python function calls (cProfile), and RocksDB item reads (the store's get_item and
multi-get wrapped to count, observation only). With ``--explain both`` (when the installed
package has the `explain` flag) each level is measured with explanations on and off.

With ``--stages`` each servicer Recall is also cut into stages by timing wrappers (wall time,
one call at a time): request parse, the handler, inside it the library recall (query planning,
the backend search, and within that the compiled core's search, which runs with the GIL released),
response building, and response serialisation. The GIL is held for everything but the core's
search, so ``gil_held_share`` = 1 - core / (parse + handler + serialise).

Run it with the package under test installed, e.g.
``.venv/bin/python -P benchmarks/bench_recall_cpu.py --label after``; ``--merge`` adds the
label's rows to an existing JSON (to put a 'before' from another checkout next to it).
"""

from __future__ import annotations

import argparse
import cProfile
import inspect
import json
import os
import pstats
import tempfile
import time
from pathlib import Path

import numpy as np

DIM = 384
CONCEPTS = 100
HAS_PER_ITEM = 3
NOT_HAS_PER_ITEM = 20
TOP_K = 10
QUERY_POOL = 64


def build(memory, n: int, seed: int = 0) -> None:
    from polarmem_server.index import SpaceSpec
    from polarmem_server.library.memory import ItemInput, NamespaceSettings

    memory.create_namespace(
        NamespaceSettings(
            "bench", spaces=(SpaceSpec("sem", DIM),), encoder="none", concepts=tuple(f"c{c}" for c in range(CONCEPTS))
        )
    )
    rng = np.random.default_rng(seed)
    for start in range(0, n, 5000):
        count = min(5000, n - start)
        vectors = rng.standard_normal((count, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        items = []
        for i in range(count):
            chosen = rng.choice(CONCEPTS, HAS_PER_ITEM + NOT_HAS_PER_ITEM, replace=False)
            states = {
                **{f"c{c}": "has" for c in chosen[:HAS_PER_ITEM]},
                **{f"c{c}": "not_has" for c in chosen[HAS_PER_ITEM:]},
            }
            items.append(
                ItemInput(
                    id=f"item{start + i:08d}", text=f"item {start + i}", vectors={"sem": vectors[i]}, states=states
                )
            )
        memory.remember_batch("bench", items)


def queries(seed: int = 1) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(QUERY_POOL):
        vector = rng.standard_normal(DIM).astype(np.float32)
        vector /= np.linalg.norm(vector)
        concepts = [f"c{c}" for c in rng.choice(CONCEPTS, int(rng.integers(1, 4)), replace=False)]
        forbidden = concepts[2:] if len(concepts) == 3 else []
        out.append({"vector": vector, "required": concepts[:2] if forbidden else concepts, "forbidden": forbidden})
    return out


class CountingColumnFamily:
    """Forwards to the store's items column family and counts the keys read (multi-gets too)."""

    def __init__(self, inner, counter: dict) -> None:
        self.inner, self.counter = inner, counter

    def get(self, key, *args, **kwargs):
        self.counter["reads"] += len(key) if isinstance(key, list) else 1
        return self.inner.get(key, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def count_reads(store) -> dict:
    """Counts the item records read from RocksDB (the store's behaviour is unchanged)."""
    counter = {"reads": 0}
    store._cf["items"] = CountingColumnFamily(store._cf["items"], counter)
    return counter


class InProcessContext:
    """What the servicer reads from a gRPC context when no server is in between: no client
    deadline (the servicer's default applies) and no metadata (no auth configured)."""

    def time_remaining(self) -> None:
        return None

    def invocation_metadata(self) -> tuple:
        return ()


def library_call(memory):
    """The library's recall of one pooled query. Where recall.run_recall takes `explain` (the
    servicer's path; Memory.recall has no such argument yet) it is called as Memory.recall does."""
    from polarmem_server.library import recall as recall_module

    takes_explain = "explain" in inspect.signature(recall_module.run_recall).parameters

    def call(q: dict, explain: bool | None):
        kwargs = dict(
            vectors={"sem": q["vector"]}, required=q["required"], forbidden=q["forbidden"] or None, k=TOP_K, mode="hard"
        )
        if explain is None or not takes_explain:
            return memory.recall("bench", **kwargs)
        from polarmem_server.domain.query import recall_query

        namespace = memory.namespace("bench")
        return recall_module.run_recall(memory.backend, namespace, recall_query(namespace.spaces, **kwargs), explain)

    call.takes_explain = takes_explain
    return call


def measure(call, calls: int, pool: list, counter: dict) -> dict:
    for q in pool[:16]:  # warm caches (encoders, concept maps)
        call(q)
    counter["reads"] = 0
    started = time.process_time()
    for i in range(calls):
        call(pool[i % len(pool)])
    cpu = time.process_time() - started
    reads = counter["reads"] / calls
    profile = cProfile.Profile()
    profile.enable()
    for i in range(200):
        call(pool[i % len(pool)])
    profile.disable()
    function_calls = pstats.Stats(profile).total_calls / 200
    return {
        "cpu_ms_per_call": round(cpu / calls * 1e3, 4),
        "function_calls_per_call": round(function_calls, 1),
        "store_reads_per_call": round(reads, 2),
        "calls": calls,
    }


class StageTimer:
    """Time spent inside wrapped callables, by stage name: wall time and the calling thread's
    CPU time (time.thread_time, which a loaded machine inflates less; the core's own worker
    threads are not in it). One thread, no nesting of a stage in itself."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def clear(self) -> None:
        self.wall.clear()
        self.cpu.clear()

    def wrap(self, name: str, function):
        def timed(*args, **kwargs):
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.cpu[name] = self.cpu.get(name, 0.0) + time.thread_time() - cpu
                self.wall[name] = self.wall.get(name, 0.0) + time.perf_counter() - wall

        return timed


class CoreProxy:
    """Stands in front of the compiled index (``Index._core``): times its ``search``, forwards
    everything else unchanged."""

    def __init__(self, core, timer: StageTimer) -> None:
        self._inner = core
        self.search = timer.wrap("core search (GIL released)", core.search)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def stage_breakdown(memory, service, payloads: list[bytes], calls: int) -> dict:
    """Per-stage wall ms of a servicer Recall, from serialized requests to serialized responses."""
    from polarmem.v1 import memory_service_pb2 as pb
    from polarmem_server.library import recall as recall_module

    context = InProcessContext()
    timer = StageTimer()
    index = memory.backend._ns("bench").index.index
    saved = (recall_module.plan_query, memory.recall, memory.backend.search, service._recall_response, index._core)
    recall_module.plan_query = timer.wrap("query planning", recall_module.plan_query)
    memory.recall = timer.wrap("library recall", memory.recall)
    memory.backend.search = timer.wrap("backend search", memory.backend.search)
    service._recall_response = timer.wrap("response building", service._recall_response)
    index._core = CoreProxy(index._core, timer)
    parse = timer.wrap("request parse", pb.RecallRequest.FromString)
    handler = timer.wrap("handler", service.Recall)
    serialise = timer.wrap("response serialise", lambda response: response.SerializeToString())
    try:
        for i in range(32):
            serialise(handler(parse(payloads[i % len(payloads)]), context))
        timer.clear()
        for i in range(calls):
            serialise(handler(parse(payloads[i % len(payloads)]), context))
    finally:
        (recall_module.plan_query, memory.recall, memory.backend.search, service._recall_response, index._core) = saved
        for name in ("recall", "_recall_response"):
            for owner in (memory, memory.backend, service):
                owner.__dict__.pop(name, None)
        memory.backend.__dict__.pop("search", None)
    out = {"calls": calls}
    for kind, seconds in (("wall", timer.wall), ("thread_cpu", timer.cpu)):
        ms = {name: round(value / calls * 1e3, 4) for name, value in seconds.items()}
        total = ms["request parse"] + ms["handler"] + ms["response serialise"]
        core = ms.get("core search (GIL released)", 0.0)
        ms["handler outside the library recall"] = round(
            ms["handler"] - ms["library recall"] - ms["response building"], 4
        )
        ms["library outside the backend search"] = round(ms["library recall"] - ms["backend search"], 4)
        ms["backend search outside the core"] = round(ms["backend search"] - core, 4)
        out[kind] = {
            "ms_per_call": ms,
            "total_ms": round(total, 4),
            "gil_held_ms": round(total - core, 4),
            "gil_held_share": round((total - core) / total, 3),
        }
    return out


def run(n: int, calls: int, explain_modes: list[bool | None], stages: bool = False) -> dict:
    from polarmem.v1 import memory_service_pb2 as pb
    from polarmem_server.api.metrics import ServerMetrics
    from polarmem_server.api.service import MemoryService

    try:
        from polarmem_server.api.auth import Authorizer
    except ImportError:  # before the authorizer moved to its own module
        from polarmem_server.api.service import Authorizer
    from polarmem_server.library.memory import Memory

    rows = {}
    with tempfile.TemporaryDirectory(prefix="bench-recall-cpu-") as directory:
        memory = Memory(directory, durability="async")
        started = time.perf_counter()
        build(memory, n)
        rows["build_s"] = round(time.perf_counter() - started, 1)
        counter = count_reads(memory.backend.store)
        context = InProcessContext()
        service = MemoryService(memory, ServerMetrics(), Authorizer(None), 30.0)
        has_explain_field = "explain" in pb.RecallRequest.DESCRIPTOR.fields_by_name
        library_recall = library_call(memory)
        pool = queries()
        requests = {}
        for explain in explain_modes:
            if explain is False and not has_explain_field:
                continue
            extra = {} if explain is None or not has_explain_field else {"explain": explain}
            requests[explain] = [
                pb.RecallRequest(
                    namespace="bench",
                    vectors={"sem": pb.VectorValue(values=q["vector"].tolist())},
                    required=q["required"],
                    forbidden=q["forbidden"],
                    top_k=TOP_K,
                    mode=pb.RECALL_MODE_HARD,
                    **extra,
                )
                for q in pool
            ]
        for explain, request_pool in requests.items():
            label = "default" if explain is None else f"explain={str(explain).lower()}"
            if explain is not False or library_recall.takes_explain:
                rows[f"library {label}"] = measure(lambda q, e=explain: library_recall(q, e), calls, pool, counter)
            indexed = list(range(len(request_pool)))
            rows[f"servicer {label}"] = measure(
                lambda i, rp=request_pool: service.Recall(rp[i], context), calls, indexed, counter
            )
            if stages:
                rows[f"stages {label}"] = stage_breakdown(
                    memory, service, [r.SerializeToString() for r in request_pool], calls
                )
        memory.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--label", default="after")
    parser.add_argument("--explain", choices=("default", "both"), default="both")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "recall_cpu.json"))
    parser.add_argument("--stages", action="store_true", help="also cut each servicer Recall into timed stages")
    parser.add_argument("--merge", action="store_true", help="add to an existing JSON instead of replacing it")
    args = parser.parse_args()
    explain_modes = [None] if args.explain == "default" else [True, False]
    report = {}
    out = Path(args.out)
    if args.merge and out.exists():
        report = json.loads(out.read_text())
    runs = report.setdefault("runs", {})
    entry = {"load_before": os.getloadavg(), "package": __import__("polarmem_server").__file__, "sizes": {}}
    for n in args.items:
        entry["sizes"][str(n)] = run(n, args.calls, explain_modes, args.stages)
        print(n, json.dumps(entry["sizes"][str(n)], indent=1), flush=True)
    entry["load_after"] = os.getloadavg()
    runs[args.label] = entry
    report["setup"] = {
        "dim": DIM,
        "concepts": CONCEPTS,
        "has_per_item": HAS_PER_ITEM,
        "not_has_per_item": NOT_HAS_PER_ITEM,
        "top_k": TOP_K,
        "mode": "hard",
        "query_concepts": "1-3 explicit (3 = 2 required + 1 forbidden)",
        "calls": args.calls,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
