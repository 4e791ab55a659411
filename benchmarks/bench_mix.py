"""A realistic request mix against a real `polarmem serve` with the compiled Recall front on, and
PostgreSQL + pgvector answering the vector classes' equivalent queries in the same run (issue 33,
part 4).

Data: --items text notes in one namespace created as `polarmem namespace create` makes it (open
vocabulary, the MiniLM encoder, one 384-d `sem` space with int8 rows beside the fp32 ones;
`--storage fp32` for fp32 rows alone, the default before round 9). The notes are COCO captions
(the bundled dev set, polarmem_server/data/coco_val2014_dev10k.jsonl.gz): the first --unique captions (5 per image, in file
order) repeated until --items notes exist, each copy its own id and metadata (`topic` t0..t9,
`day`). Their `sem` vectors are encoded once here with the server's own encoder
(scoring.encoder.load_encoder("minilm")) and sent with the notes, so the same vectors go to
PostgreSQL and loading does not pay the encoder once per copy; the notes' concept states come
from the server's lexical reading of their words, as for any note.

Request classes (each built by the functions the faces use, client_requests.recall_request):

* mcp_text: what the MCP `recall` tool sends by default: text, include_context, top_k 5, mode
  answer (the core's agent recall, answer_recall.hpp, which the front calls itself since round 24);
* cli_text: what `polarmem recall -n NS "query"` sends: text, top_k 10;
* vector_hard_noexplain: a vector (a caption's encoding), 1 required + 0-1 forbidden concept,
  hard, top 10, explain=false (the shape the front was built for);
* vector_hard_explain: the same with explain left at its default (on);
* vector_strict: the same, explain=false, mode strict;
* vector_filter: the same, explain=false, hard, metadata_equals {topic: tN};
* remember: a new text note (text only: the server encodes it), the writes mixed in.

Every call goes to the server's one address; `--front` says who listens there (the server's
`front` setting): the compiled front (the default: it plans and answers Recalls itself and
hands everything else to the Python listener) or the Python listener itself (the baseline).

Phases: each class alone at 1 in flight (--duration-s; the load generator's
warm-up first, so the namespace's first Recall, which hands the front its view, is not measured),
then the mix at 16 in flight: one load generator per class, closed loop, the 16 calls split by
--mix-split (Remember included, each new note sent once), no warm-up; the mix's p50/p99 come from
every call's latency (`--latencies-out`). Text queries are distinct across phases
(the encoder caches 4,096 recent short inputs). Per class: calls, the front's counters (native /
forwarded) over the run, server CPU per call (the server's processes from /proc, as the load
generator reads them), p50/p99. PostgreSQL (pg_peer.py): the same items (the concepts the
vector queries name, as the server's GetConcept lists them, and topic), the vector queries as
one exact SQL statement (hard tiers, cosine, id; with the topic filter for vector_filter),
pgbench at 1 and 16 clients; PostgreSQL starts, loads and runs after the PolarMem phases, so that its
background work after the load does not share the cores with them.

    python benchmarks/bench_mix.py --items 100000 --label mix-100k

Writes benchmarks/results/<label>.json. Not a test.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_serving import build_loadgen, front_counts, loadgen_argv, write_requests  # noqa: E402
from harness import dev_captions, machine, start_server, stop, tree_pids, uptime, write_report  # noqa: E402
from pg_peer import PostgresPeer  # noqa: E402

HERE = Path(__file__).resolve().parent
NAMESPACE = "notes"
TOPICS = 10
# Concepts the vector queries name: common COCO words, kept only if the notes' vocabulary has them.
QUERY_CONCEPTS = [
    "dog",
    "cat",
    "man",
    "woman",
    "car",
    "table",
    "pizza",
    "bus",
    "train",
    "horse",
    "street",
    "plate",
    "water",
    "bed",
    "kitchen",
    "tennis",
    "grass",
    "food",
    "snow",
    "beach",
    "giraffe",
    "elephant",
    "bird",
    "boat",
    "truck",
    "sign",
    "clock",
    "skateboard",
    "bench",
    "phone",
]
CLASSES = ("mcp_text", "cli_text", "vector_hard_noexplain", "vector_hard_explain", "vector_strict", "vector_filter")
# Caption ranges (in file order, 5 per image): stored notes come from [0, --unique), text queries
# from PLAIN_CAPTIONS, new notes written during the run from WRITE_CAPTIONS: never the same text.
PLAIN_CAPTIONS = (20_000, 44_000)
WRITE_CAPTIONS = (44_000, 50_000)
TEXTS_C1, TEXTS_MIX = 3_000, 5_000  # distinct text queries per phase (both text classes)
WRITES_C1, WRITES_MIX = 700, 1_300
VECTOR_CLASSES = ("vector_hard_noexplain", "vector_hard_explain", "vector_strict", "vector_filter")
DEFAULT_SPLIT = (
    "mcp_text=5,cli_text=2,vector_hard_noexplain=3,vector_hard_explain=2,vector_strict=1,vector_filter=2,remember=1"
)


def captions(count: int, skip: int = 0) -> list[str]:
    """`count` captions of the bundled dev set after the first `skip`, in file order."""
    out = list(itertools.islice(dev_captions(), skip, skip + count))
    if len(out) < count:
        raise ValueError(f"the dev set holds fewer than {count} captions after the first {skip}")
    return out


def encoded(work: Path, texts: list[str]) -> np.ndarray:
    """The server's encoder over `texts`, cached in the work directory for reruns."""
    cache = work / f"sem-{len(texts)}.npy"
    if cache.exists():
        return np.load(cache)
    from polarmem_server.scoring.encoder import load_encoder

    started = time.perf_counter()
    vectors = np.asarray(load_encoder("minilm").encode(texts), dtype=np.float32)
    print(f"encoded {len(texts):,} captions in {time.perf_counter() - started:.0f} s", flush=True)
    np.save(cache, vectors)
    return vectors


def load_notes(
    address: str, n_items: int, texts: list[str], vectors: np.ndarray, storage: str = "default", ann: bool = False
) -> float:
    from polarmem_server.faces.client import PolarMemClient, item_message

    started = time.perf_counter()
    with PolarMemClient(address, timeout_s=600) as client:
        # default: what `polarmem namespace create` makes (int8 rows beside the fp32 ones: an
        # int8 scan, then an exact fp32 re-rank); fp32 / int8: that storage named explicitly
        spaces = () if storage == "default" else [("sem", 384, False, storage)]
        # ann: `polarmem namespace create --ann` (an HNSW index with its defaults)
        client.create_namespace(NAMESPACE, encoder="minilm", open_vocabulary=True, spaces=spaces, ann=ann or None)
        for start in range(0, n_items, 5000):
            stop = min(n_items, start + 5000)
            response = client.remember_stream(
                NAMESPACE,
                (
                    item_message(
                        id=f"n{i:07d}",
                        kind="text",
                        text=texts[i % len(texts)],
                        metadata={"topic": f"t{i % TOPICS}", "day": str(i // 1000)},
                        vectors={"sem": vectors[i % len(texts)]},
                    )
                    for i in range(start, stop)
                ),
            )
            if response.failed:
                raise RuntimeError(f"{response.failed} notes failed to load: {response.results[0]}")
            print(f"  {stop:,} notes ({stop / (time.perf_counter() - started):.0f}/s)", flush=True)
    return time.perf_counter() - started


def concept_members(address: str, concepts: list[str]) -> tuple[list[str], dict[str, dict[str, set[int]]]]:
    """The query concepts the notes' vocabulary holds, and for each the item numbers that HAS /
    NOT_HAS it (GetConcept pages): what PostgreSQL's arrays hold."""
    import grpc

    from polarmem_server.faces.client import PolarMemClient

    known, members = [], {}
    with PolarMemClient(address, timeout_s=120) as client:
        for concept in concepts:
            sets: dict[str, set[int]] = {}
            try:
                for polarity in ("has", "not_has"):
                    ids, token = set(), ""
                    while True:
                        page = client.get_concept(NAMESPACE, concept, polarity, page_size=1000, page_token=token)
                        ids.update(int(i[1:]) for i in page.item_ids if i.startswith("n"))
                        token = page.next_page_token
                        if not token:
                            break
                    sets[polarity] = ids
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.NOT_FOUND:
                    continue
                raise
            if len(sets["has"]) >= 50:
                known.append(concept)
                members[concept] = sets
    return known, members


def vector_queries(count: int, concepts: list[str], vectors: np.ndarray, seed: int = 7):
    """(vector, required, forbidden, topic) per query: a stored caption's encoding, one required
    concept and, every other query, one forbidden."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        picked = [concepts[int(j)] for j in rng.choice(len(concepts), 2, replace=False)]
        out.append(
            (
                vectors[int(rng.integers(len(vectors)))],
                picked[:1],
                picked[1:] if i % 2 else [],
                int(rng.integers(TOPICS)),
            )
        )
    return out


def text_queries(concepts: list[str], seed: int = 11) -> list[str]:
    """Distinct queries as agents ask them: "a dog but no cat", "cat without a car", "notes about
    a dog near a bus" (one in four, while distinct pairs last) and plain descriptions (captions
    PLAIN_CAPTIONS, never stored). Distinct because the encoder caches recent short inputs
    (the core's encoding cache, cpp/include/polarmem/encoding_cache.hpp, which the front shares since round 38):
    a repeated query would measure the cache, not the encoder."""
    rng = np.random.default_rng(seed)
    plain = captions(PLAIN_CAPTIONS[1] - PLAIN_CAPTIONS[0], skip=PLAIN_CAPTIONS[0])
    forms = ("a {a} but no {b}", "{a} without a {b}", "notes about a {a} near a {b}")
    templated = [f.format(a=a, b=b) for f in forms for a in concepts for b in concepts if a != b]
    rng.shuffle(templated)
    out, seen = [], set()
    for i, caption in enumerate(plain):
        if i % 3 == 0 and templated:
            out.append(templated.pop())
        out.append(caption)
    return [q for q in out if not (q in seen or seen.add(q))]


def recall_files(work: Path, tag: str, texts: list[str], queries, ann: bool = False) -> dict:
    """One request file per Recall class (`texts`: the text classes' queries, split between
    them)."""
    from polarmem_server.faces import client_requests as build

    def vector(q, **extra):
        vector_, required, forbidden, _ = q
        return build.recall_request(
            NAMESPACE, vectors={"sem": vector_}, required=required, forbidden=forbidden, top_k=10, **extra
        )

    half = len(texts) // 2
    messages = {
        # faces/mcp_server.py recall(): text, include_context, top_k 5, mode answer (its default),
        # approximate where the namespace has an index (--ann)
        "mcp_text": [
            build.recall_request(NAMESPACE, t, top_k=5, mode="answer", include_context=True, approximate=ann)
            for t in texts[:half]
        ],
        # faces/cli/commands.py recall() with its defaults
        "cli_text": [build.recall_request(NAMESPACE, t, top_k=10) for t in texts[half:]],
        "vector_hard_noexplain": [vector(q, mode="hard", explain=False) for q in queries],
        "vector_hard_explain": [vector(q, mode="hard") for q in queries],
        "vector_strict": [vector(q, mode="strict", explain=False) for q in queries],
        "vector_filter": [
            vector(q, mode="hard", explain=False, metadata_equals={"topic": f"t{q[3]}"}) for q in queries
        ],
    }
    files: dict = {}
    for name, requests in messages.items():
        files[name] = work / f"{tag}-{name}.bin"
        write_requests(files[name], requests)
    return files


def remember_file(path: Path, texts: list[str], first: int) -> Path:
    """New text notes (ids w<first>..): text only, so the server encodes and reads them."""
    from polarmem.v1 import memory_service_pb2 as pb

    from polarmem_server.faces.client import item_message

    write_requests(
        path,
        (
            pb.RememberRequest(
                namespace=NAMESPACE,
                item=item_message(
                    id=f"w{first + i:07d}", kind="text", text=t, metadata={"topic": f"t{i % TOPICS}", "day": "new"}
                ),
            )
            for i, t in enumerate(texts)
        ),
    )
    return path


def start_loadgen(
    binary: Path, address: str, rpc: str, requests: Path, pids: list[int], latencies: Path | None = None, **settings
) -> subprocess.Popen:
    argv = loadgen_argv(binary, address, rpc, requests, pids[0], **settings)
    for pid in pids[1:]:
        argv += ["--server-pid", str(pid)]
    if latencies is not None:
        argv += ["--latencies-out", str(latencies)]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen, timeout: float) -> dict:
    out, err = process.communicate(timeout=timeout)
    if process.returncode != 0:
        raise RuntimeError(f"loadgen failed ({process.returncode}): {err[-2000:]}")
    result = json.loads(out)
    result["server_cpu_s"] = sum(s["cpu_s"] for s in result.pop("server"))
    return result


def delta(after: dict, before: dict) -> dict:
    return {path: after.get(path, 0.0) - before.get(path, 0.0) for path in after}


def native_share(front: dict) -> float:
    through = sum(front.get(p, 0) for p in ("native", "forwarded", "overloaded"))
    return round(front.get("native", 0) / through, 4) if through else 0.0


def single_class_phase(binary, files, routing, address, metrics_port, pids, duration_s, writes: Path) -> dict:
    """Each class alone, one call at a time. The front's counters include the warm-up calls (the
    namespace's first Recall hands the front its view), so the native share is of every call sent."""
    rows = {}
    for cls in (*CLASSES, "remember"):
        before = front_counts(metrics_port)
        settings = dict(concurrency=1, duration_s=duration_s, max_calls=100_000, warmup_s=1.0)
        if cls == "remember":
            settings.update(once=True, warmup_s=0.0)
        result = finish(
            start_loadgen(
                binary,
                address,
                "remember" if cls == "remember" else "recall",
                writes if cls == "remember" else files[cls],
                pids,
                **settings,
            ),
            duration_s + 200,
        )
        front_delta = delta(front_counts(metrics_port), before)
        rows[cls] = {
            "calls": result["completed"],
            "codes": result["codes"],
            "throughput_rps": round(result["throughput_rps"], 1),
            "p50_ms": result["latency_ms"]["p50"],
            "p99_ms": result["latency_ms"]["p99"],
            "server_cpu_ms_per_call": round(result["server_cpu_s"] * 1e3 / max(1, result["completed"]), 4),
            "front": front_delta,
            "native_share": native_share(front_delta),
            "load": uptime(),
        }
        print(
            f"  [{routing} c=1] {cls:<22} {rows[cls]['server_cpu_ms_per_call']:7.3f} ms CPU/call, p50 "
            f"{rows[cls]['p50_ms']:7.2f} p99 {rows[cls]['p99_ms']:7.2f} ms, native {rows[cls]['native_share']:.0%} "
            f"({rows[cls]['calls']} calls; load {uptime()})",
            flush=True,
        )
    return rows


def mix_phase(
    binary,
    files,
    routing,
    main,
    metrics_port,
    pids,
    duration_s,
    split: dict[str, int],
    writes: Path,
    work: Path,
    single: dict,
) -> dict:
    """Every class at once, closed loop, `split` calls in flight each (Remember too: each write
    sent once), no warm-up (the front holds the namespace's view from the 1-in-flight phase; every call sent
    is measured, so the front's counters and the calls cover the same window). Server CPU per call: the server's cores over the measured window (each load
    generator reads it over its own window; they overlap) / the calls per second of all."""
    before = front_counts(metrics_port)
    processes, lat = {}, {}
    for cls, concurrency in split.items():
        lat[cls] = work / f"lat-{routing}-{cls}.txt"
        if cls == "remember":
            processes[cls] = start_loadgen(
                binary,
                main,
                "remember",
                writes,
                pids,
                latencies=lat[cls],
                concurrency=concurrency,
                duration_s=duration_s,
                max_calls=WRITES_MIX,
                warmup_s=0.0,
                once=True,
            )
        else:
            processes[cls] = start_loadgen(
                binary,
                main,
                "recall",
                files[cls],
                pids,
                latencies=lat[cls],
                concurrency=concurrency,
                duration_s=duration_s,
                max_calls=1_000_000,
                warmup_s=0.0,
            )
    results = {cls: finish(p, duration_s + 200) for cls, p in processes.items()}
    front_delta = delta(front_counts(metrics_port), before)
    all_ms = np.sort(np.concatenate([np.loadtxt(path, ndmin=1) for path in lat.values() if path.stat().st_size])) / 1e3
    rate = sum(r["ok"] / r["wall_s"] for r in results.values())
    cores = float(np.mean([r["server_cpu_s"] / r["wall_s"] for r in results.values()]))
    # the load generators' own CPU: on a 2-core host, what they take the server cannot have
    client_cores = sum(r["client_cpu_s"] / r["wall_s"] for r in results.values())
    calls = sum(r["completed"] for r in results.values())
    recalls = sum(r["completed"] for cls, r in results.items() if cls != "remember")

    def rank(p: float) -> float:
        return round(float(all_ms[max(1, int(np.ceil(p / 100 * all_ms.size))) - 1]), 3)

    row = {
        "split": split,
        "calls": calls,
        "throughput_rps": round(rate, 1),
        "p50_ms": rank(50),
        "p99_ms": rank(99),
        "server_cores": round(cores, 3),
        "load_generator_cores": round(client_cores, 3),
        "server_cpu_ms_per_call": round(cores / rate * 1e3, 4),
        "front": front_delta,
        "native_share_of_recalls_sent_to_front": native_share(front_delta),
        "native_share_of_mix": round(front_delta.get("native", 0) / max(1, calls), 4),
        # the share at the split's composition (calls in the proportions of the calls in flight),
        # with each class's native share from the 1-in-flight phase: closed loop lets fast
        # classes take more calls, so the run's own share flatters whatever is native
        "native_share_at_split_composition": round(
            sum(n * single[cls]["native_share"] for cls, n in split.items()) / sum(split.values()), 4
        ),
        "recalls": recalls,
        "load": uptime(),
        "classes": {
            cls: {
                "calls": r["completed"],
                "share": round(r["completed"] / max(1, calls), 4),
                "codes": r["codes"],
                "p50_ms": r["latency_ms"]["p50"],
                "p99_ms": r["latency_ms"]["p99"],
            }
            for cls, r in results.items()
        },
    }
    print(
        f"  [{routing} mix c=16] {row['throughput_rps']} calls/s, p50 {row['p50_ms']} p99 {row['p99_ms']} ms, "
        f"{row['server_cpu_ms_per_call']:.3f} ms CPU/call ({cores:.2f} cores; load generators {client_cores:.2f}), "
        f"native {row['native_share_of_mix']:.0%} of the mix "
        f"(load {uptime()})",
        flush=True,
    )
    for cls, c in row["classes"].items():
        print(f"      {cls:<22} {c['calls']:6} calls ({c['share']:.0%}) p50 {c['p50_ms']:.2f} p99 {c['p99_ms']:.2f}")
    return row


# PostgreSQL ----------------------------------------------------------------------------------------
FILTER_SQL = (
    "SELECT i.id FROM items i, queries q WHERE q.qid = {qid} AND i.topic = q.topic "
    "ORDER BY CASE WHEN i.not_has && q.req OR i.has && q.forb THEN -1 WHEN i.has && q.req THEN 1 ELSE 0 END "
    "DESC, i.embedding <=> q.qvec, i.id LIMIT {k}"
)


def load_postgres(
    pg: PostgresPeer, n_items: int, unique_vectors: np.ndarray, concepts: list[str], members, queries
) -> float:
    started = time.perf_counter()
    index = {c: i for i, c in enumerate(concepts)}
    has: list[list[int]] = [[] for _ in range(n_items)]
    not_has: list[list[int]] = [[] for _ in range(n_items)]
    for concept, sets in members.items():
        for item in sets["has"]:
            if item < n_items:
                has[item].append(index[concept])
        for item in sets["not_has"]:
            if item < n_items:
                not_has[item].append(index[concept])
    pg.create_schema(unique_vectors.shape[1])
    for start in range(0, n_items, 10_000):
        ids = range(start, min(n_items, start + 10_000))
        pg.copy_items(
            list(ids),
            unique_vectors[[i % len(unique_vectors) for i in ids]],
            [has[i] for i in ids],
            [not_has[i] for i in ids],
        )
    pg.copy_queries(
        [[index[c] for c in q[1]] for q in queries],
        [[index[c] for c in q[2]] for q in queries],
        np.stack([q[0] for q in queries]),
    )
    pg.psql(
        f"ALTER TABLE items ADD COLUMN topic int; UPDATE items SET topic = id % {TOPICS}; "
        "ALTER TABLE queries ADD COLUMN topic int; "
        "UPDATE queries q SET topic = v.topic FROM (VALUES "
        + ", ".join(f"({qid}, {q[3]})" for qid, q in enumerate(queries, start=1))
        + ") AS v(qid, topic) WHERE q.qid = v.qid"
    )
    pg.psql("CREATE INDEX items_topic ON items (topic)")
    pg.index_and_analyze()
    return time.perf_counter() - started


def postgres_rows(pg: PostgresPeer, queries: int, duration_s: float, work: Path) -> dict:
    rows = {}
    for name, sql in (("hard", None), ("filter", FILTER_SQL)):
        for clients in (1, 16):
            result = pg.pgbench(clients, duration_s, queries, 10, work / f"pg-{name}", sql=sql)
            rows[f"{name} c={clients}"] = {
                "server_cpu_ms_per_query": round(result["server_cpu_ms_per_query"], 4),
                "p50_ms": result["latency_ms"].get("p50"),
                "p99_ms": result["latency_ms"].get("p99"),
                "throughput_rps": round(result["throughput_rps"], 1),
                "transactions": result["transactions"],
                "failed": result["failed"],
                "load": uptime(),
            }
            print(f"  [postgres {name} c={clients}] {rows[f'{name} c={clients}']}", flush=True)
    return rows


def ratios(report: dict) -> dict:
    """PolarMem / PostgreSQL for the vector classes: the hard statement for hard and strict
    (PostgreSQL has no strict order; the same search), the topic-filtered one for the filter."""
    pg = report.get("postgres")
    if not pg:
        return {}
    out = {}
    for routing, phases in report["routings"].items():
        for cls in VECTOR_CLASSES:
            peer = pg["filter c=1" if cls == "vector_filter" else "hard c=1"]
            row = phases["c=1"][cls]
            out[f"{routing} {cls} c=1"] = {
                "server_cpu": round(row["server_cpu_ms_per_call"] / peer["server_cpu_ms_per_query"], 4),
                "p50": round(row["p50_ms"] / peer["p50_ms"], 4),
            }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--unique", type=int, default=20_000, help="distinct captions (encoded once each)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--duration-s", type=float, default=5.0, help="each class alone, 1 in flight")
    parser.add_argument("--mix-duration-s", type=float, default=15.0)
    parser.add_argument("--mix-split", default=DEFAULT_SPLIT, help="class=calls in flight, summing to 16")
    parser.add_argument(
        "--front",
        choices=("compiled", "python"),
        default="compiled",
        help="who listens on the server's address (its `front` setting); the Python listener is the baseline",
    )
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument(
        "--ann",
        action="store_true",
        help="create the namespace with an approximate index (`namespace create --ann`); the MCP class then "
        "sends approximate, as the MCP recall tool does for such a namespace",
    )
    parser.add_argument("--work-dir", type=Path, default=None, help="keep (and reuse) the encodings there")
    parser.add_argument("--label", default="mix")
    parser.add_argument(
        "--storage",
        default="default",
        choices=["default", "fp32", "int8"],
        help="the sem space's storage (default: what `polarmem namespace create` makes, int8 rows "
        "beside the fp32 ones; fp32: rows in fp32 only)",
    )
    args = parser.parse_args(argv)
    out = HERE / "results" / f"{args.label}.json"
    split = {cls: int(n) for cls, n in (part.split("=") for part in args.mix_split.split(","))}
    if set(split) - {*CLASSES, "remember"}:
        parser.error(f"--mix-split: unknown classes {sorted(set(split) - set(CLASSES))}; known: {CLASSES}, remember")

    binary = build_loadgen()
    report: dict = {
        "benchmark": "bench_mix",
        "items": args.items,
        "unique_captions": args.unique,
        "machine": machine(),
        "uptime_start": uptime(),
        "settings": {k: str(v) for k, v in vars(args).items()},
        "routings": {},
    }
    with tempfile.TemporaryDirectory(prefix="polarmem-mix-") as tmp:
        work = args.work_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        texts = captions(args.unique)
        vectors = encoded(work, texts)
        run = work / f"run-{int(time.time())}"  # a fresh store and postgres each run (the encodings are kept)
        data = run / "data"
        data.mkdir(parents=True)
        server, main_address, _ = start_server(data, max_concurrent=64, front=args.front)
        routings = [args.front]  # the report keeps one row per listener kind (earlier runs: main / routed)
        pg = None
        try:
            pids = tree_pids(server.pid)  # the server and its children: all of them count
            report["server_processes"] = len(pids)
            report["load_s"] = round(load_notes(main_address, args.items, texts, vectors, args.storage, args.ann), 1)
            report["uptime_after_load"] = uptime()
            concepts, members = concept_members(main_address, QUERY_CONCEPTS)
            report["query_concepts"] = {
                c: {"has": len(m["has"]), "not_has": len(m["not_has"])} for c, m in members.items()
            }
            queries = vector_queries(args.queries, concepts, vectors)
            texts = text_queries(concepts)
            writes = captions(WRITE_CAPTIONS[1] - WRITE_CAPTIONS[0], skip=WRITE_CAPTIONS[0])
            need = len(routings) * (TEXTS_C1 + TEXTS_MIX)
            if len(texts) < need or len(writes) < len(routings) * (WRITES_C1 + WRITES_MIX):
                raise SystemExit(f"not enough distinct captions for {len(routings)} routings")
            for r, routing in enumerate(routings):
                print(f"routing {routing} (load {uptime()})", flush=True)
                t0, w0 = r * (TEXTS_C1 + TEXTS_MIX), r * (WRITES_C1 + WRITES_MIX)
                files_c1 = recall_files(work, f"{routing}-c1", texts[t0 : t0 + TEXTS_C1], queries, args.ann)
                files_mix = recall_files(
                    work, f"{routing}-mix", texts[t0 + TEXTS_C1 : t0 + TEXTS_C1 + TEXTS_MIX], queries, args.ann
                )
                phases = {"uptime_before": uptime()}
                phases["c=1"] = single_class_phase(
                    binary,
                    files_c1,
                    routing,
                    main_address,
                    server.metrics_port,
                    pids,
                    args.duration_s,
                    remember_file(work / f"remember-{routing}.bin", writes[w0 : w0 + WRITES_C1], w0),
                )
                phases["c=16 mix"] = mix_phase(
                    binary,
                    files_mix,
                    routing,
                    main_address,
                    server.metrics_port,
                    pids,
                    args.mix_duration_s,
                    split,
                    remember_file(
                        work / f"remember-mix-{routing}.bin",
                        writes[w0 + WRITES_C1 : w0 + WRITES_C1 + WRITES_MIX],
                        w0 + WRITES_C1,
                    ),
                    work,
                    phases["c=1"],
                )
                report["routings"][routing] = phases
                write_report(out, report)
            if not args.no_postgres:
                # Started only now: its load's background work (autovacuum, checkpoints) must not
                # share the cores with the PolarMem phases (load average 1.1-1.5 against 0.7-1.0
                # without it in round 14).
                pg = PostgresPeer(run / "pg")
                pg.start()
                report["postgres_version"] = pg.version()
                report["postgres_load_s"] = round(load_postgres(pg, args.items, vectors, concepts, members, queries), 1)
                report["postgres"] = postgres_rows(pg, args.queries, args.duration_s, work)
                report["ratios_to_postgres"] = ratios(report)
        finally:
            stop(server, 60)
            if pg is not None:
                pg.stop()
    report["uptime_end"] = uptime()
    write_report(out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
