"""The adaptive default (partitioner "auto", issue 18) measured through the real server on the dev
set's held-out half, which no setting was chosen on.

Per evidence source one namespace with partitioner "auto" on an embedded server (127.0.0.1, RocksDB
in a temp dir): items loaded over gRPC (RememberStream), then every query sent over gRPC with
RECALL_MODE_UNSPECIFIED — the namespace's rule — and, for reference, with RECALL_MODE_HARD on the
same items before any labelled set exists (Otsu + hard: the paper's method on the same data).
What the namespace knows:

* "declared": CreateNamespace with declared_accuracy = the simulated accuracy;
* "labelled": then Calibrate with a labelled set — 200 items of the dev set's TUNING half (x 80
  categories) scored by the same verifier (simulated at the same accuracy with another seed, or
  the embedding engine through ScoreConcepts) with their COCO labels; the server re-chooses and
  re-partitions, and the same queries run again;
* "engine": the server runs the `embedding` engine, which verifies every item (verify_concepts, all
  80 categories); nothing declared.

Where the chosen rule also ranks by confidence within tiers (RuleChoice.confidence_*), the same
queries run a third time with ``rank_by_confidence = false``: the rule without it, on the same
namespace, so the confidence rows have their own same-run reference.

The semantic half embeds each query's affirmative part ("a photo of a dog", text.affirmative_text),
as the server does for a text query. Queries: ev.generate_queries per seed, pooled over seeds.

    python benchmarks/adaptive_default.py --items 1000 --seeds 0 1 --out docs/evaluation/dev/adaptive_default.json
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import grpc
import numpy as np

from polarmem.common.v1 import enums_pb2
from polarmem.v1 import memory_service_pb2 as pb
from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem_server.api.config import ServerConfig
from polarmem_server.api.server import PolarMemServer
from polarmem_server.domain.text import affirmative_text
from polarmem_server.faces import evaluation as ev
from polarmem_server.faces.client import PolarMemClient
from polarmem_server.library.memory import DEFAULT_TEMPLATES
from polarmem_server.scoring.encoder import load_encoder

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import dev_rows, write_report  # noqa: E402

MODE_LABELS = {
    pb.RECALL_MODE_HARD: "hard",
    pb.RECALL_MODE_STRICT: "strict",
    pb.RECALL_MODE_OFF: "off",
    pb.RECALL_MODE_SOFT: "soft",
    pb.RECALL_MODE_ADAPTIVE: "adaptive",
}
CALIBRATION_ITEMS = 200
MAX_K = max(ev.KS)


def start_server(data_dir: str, engine: str = "") -> PolarMemServer:
    return PolarMemServer(
        ServerConfig(
            address="127.0.0.1:0",
            data_dir=data_dir,
            metrics_port=-1,
            log_level="WARNING",
            durability="async",
            engine=engine,
            default_deadline_s=3600,
        )
    ).start()


def create_auto(stub, name: str, dim: int, declared: float | None) -> pb.NamespaceInfo:
    config = pb.NamespaceConfig(
        spaces=[pb.VectorSpaceConfig(name="sem", dim=dim)],
        encoder="none",
        partitioner="auto",
        declared_accuracy=declared,
    )
    return stub.CreateNamespace(pb.CreateNamespaceRequest(name=name, config=config)).namespace


def load(client, name: str, rows, vectors: np.ndarray, scores=None, verify: list[str] | None = None) -> float:
    def items():
        for i, row in enumerate(rows):
            message = pb.ItemInput(
                id=row["id"],
                kind=enums_pb2.ITEM_KIND_TEXT,
                text=" ".join(row["captions"]),
                vectors={"sem": pb.VectorValue(values=vectors[i].tolist())},
            )
            if scores is not None:
                for concept, values in scores[i].items():
                    message.scores[concept].p_yes.extend(values)
                message.source = "simulated"
            else:
                message.verify_concepts.extend(verify)
            yield message

    started = time.perf_counter()
    response = client.remember_stream(name, items(), timeout_s=7200)
    if response.failed:
        first = next(r for r in response.results if r.HasField("error"))
        raise RuntimeError(f"{response.failed} items failed to load into {name}: {first.error.message}")
    return time.perf_counter() - started


def run(
    stub, name: str, queries, query_vectors, mode: int, confidence: bool | None = None
) -> tuple[list[list[str]], set[str], set[str]]:
    """Ranked ids per query, the modes the server said it used and its reasons. `confidence`:
    RecallRequest.rank_by_confidence (None: unset, the namespace's rule decides)."""
    ranked, used, reasons = [], set(), set()
    for query, vector in zip(queries, query_vectors):
        request = pb.RecallRequest(
            namespace=name,
            vectors={"sem": pb.VectorValue(values=vector.tolist())},
            required=[query.required],
            forbidden=[query.forbidden],
            top_k=MAX_K,
            mode=mode,
        )
        if confidence is not None:
            request.rank_by_confidence = confidence
        response = stub.Recall(request)
        ranked.append([h.id for h in response.hits])
        used.add(MODE_LABELS[response.mode_used])
        reasons.add(response.mode_reason)
    return ranked, used, reasons


def pools(stub, name: str, query_vectors) -> list[list[str]]:
    return [
        [
            h.id
            for h in stub.Recall(
                pb.RecallRequest(
                    namespace=name,
                    vectors={"sem": pb.VectorValue(values=v.tolist())},
                    top_k=MAX_K * ev.POOL_FACTOR,
                    mode=pb.RECALL_MODE_OFF,
                )
            ).hits
        ]
        for v in query_vectors
    ]


class Cell:
    """One (evidence, knowledge) row: per-query metrics pooled over seeds, and what the server said."""

    def __init__(self) -> None:
        self.per_query: list[dict] = []
        self.rule: dict = {}
        self.modes_used: set[str] = set()
        self.reasons: set[str] = set()
        self.load_s = 0.0

    def add(self, ranked, pool, queries, labels, consistent) -> None:
        for ids, pool_ids, query in zip(ranked, pool, queries):
            outcome = ev.QueryOutcome({"run": ids}, pool_ids)
            self.per_query.append(ev.metrics_for(outcome, query, labels, consistent[query], ev.KS)["run"])

    def summary(self, seed: int) -> dict:
        metrics = ev.summarise([{"run": q} for q in self.per_query], seed)["run"]
        return {
            "rule": self.rule,
            "modes_used": sorted(self.modes_used),
            "mode_reasons": sorted(self.reasons),
            "queries": len(self.per_query),
            "load_seconds": round(self.load_s, 1),
            "conflict@3": metrics["conflict@3"],
            "ndcg@10": metrics["ndcg@10"],
            "filter_rate@3": metrics.get("filter_rate@3"),
        }


def rule_dict(info: pb.NamespaceInfo) -> dict:
    rule = info.rule
    return {
        "partitioner": rule.partitioner,
        "recall_mode": MODE_LABELS[rule.recall_mode],
        "reason": rule.reason,
        "accuracy_used": rule.accuracy_used if rule.HasField("accuracy_used") else None,
        "confidence_present_above": rule.confidence_present_above
        if rule.HasField("confidence_present_above")
        else None,
        "confidence_absent_below": rule.confidence_absent_below if rule.HasField("confidence_absent_below") else None,
        "confidence_present_weight": rule.confidence_present_weight
        if rule.HasField("confidence_present_weight")
        else None,
        "confidence_absent_weight": rule.confidence_absent_weight
        if rule.HasField("confidence_absent_weight")
        else None,
    }


def ranks_by_confidence(info: pb.NamespaceInfo) -> bool:
    return any(
        info.rule.HasField(f)
        for f in (
            "confidence_present_above",
            "confidence_absent_below",
            "confidence_present_weight",
            "confidence_absent_weight",
        )
    )


# The reference every table compares with: the paper's rule, asked for by name.
PAPER_RULE = {"partitioner": "otsu", "recall_mode": "hard", "reason": "explicit mode, reference"}


def rule_runs(info: pb.NamespaceInfo, key: str) -> list[tuple[str, int, bool | None]]:
    """(cell key, mode, rank_by_confidence) for the namespace's rule, plus the rule without
    confidence where it has some."""
    runs = [(key, pb.RECALL_MODE_UNSPECIFIED, None)]
    if ranks_by_confidence(info):
        runs.append((f"{key} (rule without confidence)", pb.RECALL_MODE_UNSPECIFIED, False))
    return runs


def labelled_simulated(rows, categories, accuracy: float, seed: int) -> tuple[list[float], list[bool]]:
    scores = ev.simulated_scores(rows, [categories] * len(rows), accuracy, 1, seed)
    p_yes = [s[c][0] for s in scores for c in categories]
    present = [c in set(r["has"]) for r in rows for c in categories]
    return p_yes, present


def labelled_engine(stub, name: str, rows, categories) -> tuple[list[float], list[bool]]:
    p_yes, present = [], []
    for row in rows:
        response = stub.ScoreConcepts(
            pb.ScoreConceptsRequest(
                namespace=name, item=pb.ItemInput(text=" ".join(row["captions"])), concepts=categories
            )
        )
        by_concept = {s.concept: float(np.mean(s.p_yes)) for s in response.scores}
        for c in categories:
            p_yes.append(by_concept[c])
            present.append(c in set(row["has"]))
    return p_yes, present


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1000, help="first N items of the held-out half (0: all)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--num-queries", type=int, default=100)
    parser.add_argument("--accuracy", type=float, nargs="*", default=[0.7, 0.8, 0.9, 0.95])
    parser.add_argument(
        "--labelled",
        type=float,
        nargs="*",
        default=[0.9, 0.95],
        help="simulated accuracies that also get a labelled Calibrate set",
    )
    parser.add_argument("--engine-items", type=int, default=0, help="items for the embedding engine (0: skip)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    rows = dev_rows()
    tuning, held_out = ev.split_dev(rows)
    part = held_out[: args.items] if args.items else held_out
    calibration_rows = tuning[:CALIBRATION_ITEMS]
    categories = ev.categories_of(rows)
    labels = {r["id"]: r for r in held_out}
    encoder = load_encoder("minilm")
    vectors = encoder.encode([" ".join(r["captions"]) for r in part])
    load_before = os.getloadavg()
    cells: dict[str, Cell] = {}
    started = time.perf_counter()

    def measure(
        key: str,
        stub,
        name: str,
        mode: int,
        confidence,
        queries,
        query_vectors,
        pool,
        labels,
        consistent,
        info: pb.NamespaceInfo,
    ) -> Cell:
        """Runs one rule's recalls and adds them to the cell `key`; the cell keeps the rule that ran."""
        ranked, used, reasons = run(stub, name, queries, query_vectors, mode, confidence)
        target = cells.setdefault(key, Cell())
        target.add(ranked, pool, queries, labels, consistent)
        target.modes_used |= used
        target.reasons |= reasons
        target.rule = rule_dict(info) if mode == pb.RECALL_MODE_UNSPECIFIED else PAPER_RULE
        return target

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.0f} s] {message}", file=sys.stderr, flush=True)

    seeds_queries = {}
    for seed in args.seeds:
        queries = ev.generate_queries(part, args.num_queries, seed)
        query_vectors = encoder.encode([affirmative_text(q.text) or q.text for q in queries])
        consistent = {q: sum(ev.judge(r, q)[1] for r in part) for q in queries}
        seeds_queries[seed] = (queries, query_vectors, consistent)

    with tempfile.TemporaryDirectory(prefix="polarmem-adaptive-") as data_dir:
        server = start_server(data_dir)
        try:
            with (
                PolarMemClient(server.address, timeout_s=3600) as client,
                grpc.insecure_channel(server.address) as channel,
            ):
                stub = pb_grpc.MemoryServiceStub(channel)
                for seed, (queries, query_vectors, consistent) in seeds_queries.items():
                    for accuracy in args.accuracy:
                        name = f"sim{accuracy:.2f}-s{seed}"
                        info = create_auto(stub, name, vectors.shape[1], accuracy)
                        scores = ev.simulated_scores(
                            part, [categories] * len(part), accuracy, len(DEFAULT_TEMPLATES), seed
                        )
                        load_s = load(client, name, part, vectors, scores=scores)
                        log(
                            f"{name}: loaded in {load_s:.0f} s; rule {rule_dict(info)['partitioner']} + "
                            f"{rule_dict(info)['recall_mode']}"
                        )
                        pool = pools(stub, name, query_vectors)
                        for key, mode, confidence in (
                            *rule_runs(info, f"SIMULATED {accuracy:.2f}|declared"),
                            (f"SIMULATED {accuracy:.2f}|paper (otsu + hard)", pb.RECALL_MODE_HARD, None),
                        ):
                            measure(
                                key,
                                stub,
                                name,
                                mode,
                                confidence,
                                queries,
                                query_vectors,
                                pool,
                                labels,
                                consistent,
                                info,
                            ).load_s += load_s
                        if accuracy in args.labelled:
                            p_yes, present = labelled_simulated(calibration_rows, categories, accuracy, seed + 1000)
                            stub.Calibrate(pb.CalibrateRequest(namespace=name, p_yes=p_yes, present=present))
                            info = stub.GetNamespace(pb.GetNamespaceRequest(name=name)).namespace
                            log(f"{name}: calibrated; rule {rule_dict(info)}")
                            for key, mode, confidence in rule_runs(info, f"SIMULATED {accuracy:.2f}|labelled"):
                                measure(
                                    key,
                                    stub,
                                    name,
                                    mode,
                                    confidence,
                                    queries,
                                    query_vectors,
                                    pool,
                                    labels,
                                    consistent,
                                    info,
                                )
                        stub.DeleteNamespace(pb.DeleteNamespaceRequest(name=name))
        finally:
            server.stop()

    if args.engine_items:
        engine_part = part[: args.engine_items]
        engine_vectors = vectors[: args.engine_items]
        with tempfile.TemporaryDirectory(prefix="polarmem-adaptive-engine-") as data_dir:
            server = start_server(data_dir, engine="embedding")
            try:
                with (
                    PolarMemClient(server.address, timeout_s=7200) as client,
                    grpc.insecure_channel(server.address) as channel,
                ):
                    stub = pb_grpc.MemoryServiceStub(channel)
                    info = create_auto(stub, "engine", vectors.shape[1], None)
                    load_s = load(client, "engine", engine_part, engine_vectors, verify=categories)
                    log(
                        f"engine: verified and loaded {len(engine_part)} items in {load_s:.0f} s; rule {rule_dict(info)}"
                    )
                    p_yes, present = labelled_engine(stub, "engine", calibration_rows, categories)
                    engine_labels = {r["id"]: r for r in engine_part}
                    runs = []
                    for seed in args.seeds:
                        queries = ev.generate_queries(engine_part, args.num_queries, seed)
                        query_vectors = encoder.encode([affirmative_text(q.text) or q.text for q in queries])
                        consistent = {q: sum(ev.judge(r, q)[1] for r in engine_part) for q in queries}
                        pool = pools(stub, "engine", query_vectors)
                        for key, mode, confidence in (
                            *rule_runs(info, "embedding engine|engine only"),
                            ("embedding engine|paper (otsu + hard)", pb.RECALL_MODE_HARD, None),
                        ):
                            measure(
                                key,
                                stub,
                                "engine",
                                mode,
                                confidence,
                                queries,
                                query_vectors,
                                pool,
                                engine_labels,
                                consistent,
                                info,
                            ).load_s = load_s
                        runs.append((queries, query_vectors, consistent, pool))
                    stub.Calibrate(pb.CalibrateRequest(namespace="engine", p_yes=p_yes, present=present))
                    info = stub.GetNamespace(pb.GetNamespaceRequest(name="engine")).namespace
                    log(f"engine: calibrated; rule {rule_dict(info)}")
                    for queries, query_vectors, consistent, pool in runs:
                        for key, mode, confidence in rule_runs(info, "embedding engine|labelled"):
                            measure(
                                key,
                                stub,
                                "engine",
                                mode,
                                confidence,
                                queries,
                                query_vectors,
                                pool,
                                engine_labels,
                                consistent,
                                info,
                            )
            finally:
                server.stop()

    report = {
        "what": "partitioner auto through the real server (gRPC, embedded server on 127.0.0.1), dev set held-out half",
        "data": f"polarmem_server/data/{ev.DEV_DATA}",
        "split": "heldout",
        "items": len(part),
        "engine_items": args.engine_items,
        "seeds": args.seeds,
        "queries_per_seed": args.num_queries,
        "calibration_set": f"first {CALIBRATION_ITEMS} items of the tuning half x {len(categories)} categories",
        "query_embedding": "affirmative",
        "note": "SIMULATED rows: Beta draws, not a model",
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "seconds": round(time.perf_counter() - started, 1),
        "cells": {key: c.summary(args.seeds[0]) for key, c in cells.items()},
    }
    write_report(args.out, report)
    for key, c in report["cells"].items():
        print(
            f"{key:45s} {c['rule']['partitioner']:>10s} + {c['rule']['recall_mode']:6s} "
            f"C@3 {c['conflict@3'][0]:.3f} [{c['conflict@3'][1]:.3f}, {c['conflict@3'][2]:.3f}] "
            f"nDCG@10 {c['ndcg@10'][0]:.3f}  used {c['modes_used']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
