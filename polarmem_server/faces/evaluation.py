"""`polarmem evaluate`: retrieval quality of every recall mode on labelled data, through the real
server, with bootstrap confidence intervals — and, per partitioner, how well the HAS / NOT_HAS
states agree with the labels.

Definitions (per query: required concept c+, forbidden concept c−; ground truth = the labels):

* an item **contradicts** the query when the labels say c+ is absent or c− is present; it is
  **consistent** (relevant) when c+ is present and c− absent;
* **Conflict@K**: share of the top K that contradicts the query;
* **Filter Rate@K**: the contradicting items among the top 4K of plain dense retrieval (the
  candidate pool), minus those the mode lets into its top K, over those in the pool — the
  share of contradicting candidates kept out of the top K (plain retrieval is not 0 here: its
  top K is a slice of the pool);
* **Recall@K**: consistent items in the top K over min(K, consistent items in the namespace);
* **nDCG@K**: binary relevance = consistent.

Evidence sources: `labels` (ground-truth states), `simulated:ACC` (a simulated VLM whose
0.5-threshold accuracy is ACC: a present object's P(Yes) ~ Beta(a, b), an absent one's
~ Beta(b, a), a + b = 4, a solved so that P(Beta(a, b) > 0.5) = ACC; one draw per concept,
repeated for every template — declared as simulated in every output), or `engine` (the server's
scoring engine verifies every category). Every image is scored on all categories of the data.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

MODES = ("off", "soft", "adaptive", "hard", "strict")
# A namespace with partitioner "auto" is also asked with no mode: its own rule (what a Recall
# without a mode runs, confidence ranking included), reported under this name.
RULE_MODE = "rule"
KS = (1, 3, 5, 10)
POOL_FACTOR = 4
BETA_SUM = 4.0


# ---- simulated evidence ------------------------------------------------------------------


def beta_parameters(accuracy: float) -> tuple[float, float]:
    """(a, b) with a + b = 4 and P(Beta(a, b) > 0.5) = accuracy (present objects)."""
    from scipy.optimize import brentq
    from scipy.stats import beta

    if not 0.5 < accuracy < 1.0:
        raise ValueError(f"simulated accuracy must lie in (0.5, 1), got {accuracy}")
    a = brentq(lambda x: beta.sf(0.5, x, BETA_SUM - x) - accuracy, BETA_SUM / 2 + 1e-9, BETA_SUM - 1e-6)
    return a, BETA_SUM - a


def candidate_concepts(rows: Sequence[dict], categories: Sequence[str], spectrum: str, seed: int) -> list[list[str]]:
    """Per image, the concepts scored: every category ("all": a skewed spectrum, ~4 of 80
    present), or its present labels (at most 4) plus as many absent ones ("balanced")."""
    if spectrum == "all":
        return [list(categories) for _ in rows]
    if spectrum != "balanced":
        raise ValueError(f"spectrum must be 'all' or 'balanced', got {spectrum!r}")
    rng = np.random.default_rng(seed + 1)
    out = []
    for row in rows:
        present = sorted(row["has"])[:4]
        absent = [c for c in categories if c not in row["has"]]
        out.append(present + list(rng.choice(absent, size=len(present), replace=False)))
    return out


def simulated_scores(
    rows: Sequence[dict], candidates: Sequence[Sequence[str]], accuracy: float, templates: int, seed: int
) -> list[dict[str, list[float]]]:
    a, b = beta_parameters(accuracy)
    rng = np.random.default_rng(seed)
    out = []
    for row, concepts in zip(rows, candidates):
        present = set(row["has"])
        draws = {c: float(rng.beta(a, b) if c in present else rng.beta(b, a)) for c in concepts}
        out.append({c: [p] * templates for c, p in draws.items()})
    return out


# ---- data ---------------------------------------------------------------------------------

DEV_DATA = "coco_val2014_dev10k.jsonl.gz"


def dev_rows(sample: int = 0, seed: int = 0) -> list[dict]:
    """The bundled dev set (10,000 COCO val2014 images; polarmem_server/data/README.md), the
    data every setting is chosen on; `sample` > 0 keeps that many rows, drawn with `seed` so a
    run on a two-core machine stays short."""
    import gzip
    from importlib import resources

    with resources.as_file(resources.files("polarmem_server.data").joinpath(DEV_DATA)) as path:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
    if sample:
        rows = dev_rows_sample(rows, sample, seed)
    return rows


def dev_rows_sample(rows: Sequence[dict], size: int, seed: int = 0) -> list[dict]:
    """`size` rows of `rows` drawn with `seed`, in their original order (all of them if fewer)."""
    if size >= len(rows):
        return list(rows)
    keep = np.sort(np.random.default_rng(seed).choice(len(rows), size=size, replace=False))
    return [rows[i] for i in keep]


def split_dev(rows: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """(tuning, held-out) halves by a hash of the item id — stable across runs and samples:
    settings are chosen on the tuning half and reported, frozen, on the held-out half."""
    import hashlib

    tuning: list[dict] = []
    held_out: list[dict] = []
    for row in rows:
        digest = hashlib.sha256(row["id"].encode()).digest()
        (tuning if digest[0] % 2 == 0 else held_out).append(row)
    return tuning, held_out


def categories_of(rows: Sequence[dict]) -> list[str]:
    return sorted({c for r in rows for c in r["has"] + r["not_has"]})


# ---- queries -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    required: str
    forbidden: str

    @property
    def text(self) -> str:
        return f"a photo of a {self.required} without a {self.forbidden}"


def generate_queries(rows: Sequence[dict], count: int, seed: int, min_support: int = 10) -> list[Query]:
    """(c+, c−) pairs: c+ present in at least `min_support` images; c− a hard negative, 70 % of
    the time — the category POPE most often lists as absent-but-co-occurring in the images that
    hold c+ (its adversarial split) where the data has POPE's fields, else (the dev set) the
    categories that most often co-occur with c+ in the data's labels, POPE's own recipe for
    building that split — and otherwise a random other category."""
    rng = np.random.default_rng(seed)
    support = Counter(c for r in rows for c in r["has"])
    frequent = sorted(c for c, n in support.items() if n >= min_support)
    categories = sorted({c for r in rows for c in r["has"] + r["not_has"]})
    has_pope = any("pope_hard_absent" in r for r in rows)
    holders: dict[str, list[dict]] = {}
    for r in rows:
        for c in r["has"]:
            holders.setdefault(c, []).append(r)
    queries: list[Query] = []
    seen: set[tuple[str, str]] = set()
    attempts = 0
    while len(queries) < count and attempts < count * 50:
        attempts += 1
        required = str(rng.choice(frequent))
        if has_pope:
            hard = Counter(
                c for r in rows if required in r["has"] for c in r.get("pope_hard_absent", []) if c != required
            )
        else:
            hard = Counter(c for r in holders[required] for c in r["has"] if c != required)
        if hard and rng.random() < 0.7:
            names, weights = zip(*hard.most_common(5))
            forbidden = str(rng.choice(names, p=np.asarray(weights) / sum(weights)))
        else:
            forbidden = str(rng.choice([c for c in categories if c != required]))
        if (required, forbidden) not in seen:
            seen.add((required, forbidden))
            queries.append(Query(required, forbidden))
    return queries


def read_queries(path: str | Path) -> list[Query]:
    queries = []
    for line in Path(path).read_text().splitlines():
        if line.strip():
            data = json.loads(line)
            queries.append(Query(data["required"], data["forbidden"]))
    return queries


# ---- metrics -----------------------------------------------------------------------------


def judge(row: dict, query: Query) -> tuple[bool, bool]:
    """(contradicts, consistent) per the labels."""
    has = set(row["has"])
    contradicts = query.required not in has or query.forbidden in has
    return contradicts, not contradicts


@dataclass
class QueryOutcome:
    ranked: dict[str, list[str]]  # mode -> ranked ids (top max K)
    pool: list[str]  # plain retrieval's top POOL_FACTOR * max K


def metrics_for(
    outcome: QueryOutcome, query: Query, labels: dict[str, dict], consistent_total: int, ks: Sequence[int]
) -> dict[str, dict[str, float]]:
    pool_contradicting = {i for i in outcome.pool if judge(labels[i], query)[0]}
    out: dict[str, dict[str, float]] = {}
    for mode, ranked in outcome.ranked.items():
        values: dict[str, float] = {}
        for k in ks:
            top = ranked[:k]
            flags = [judge(labels[i], query) for i in top]
            contradicting = sum(c for c, _ in flags)
            relevant = [r for _, r in flags]
            values[f"conflict@{k}"] = contradicting / k
            if pool_contradicting:
                let_in = len(pool_contradicting & set(top))
                values[f"filter_rate@{k}"] = 1.0 - let_in / len(pool_contradicting)
            values[f"recall@{k}"] = sum(relevant) / max(1, min(k, consistent_total))
            dcg = sum(rel / math.log2(rank + 2) for rank, rel in enumerate(relevant))
            ideal = sum(1 / math.log2(rank + 2) for rank in range(min(k, consistent_total)))
            values[f"ndcg@{k}"] = dcg / ideal if ideal else 0.0
        out[mode] = values
    return out


def bootstrap(values: Sequence[float], seed: int, resamples: int = 1000) -> tuple[float, float, float]:
    """Mean and a 95 % percentile bootstrap interval over queries."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, (resamples, data.size))].mean(axis=1)
    return float(data.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def summarise(per_query: list[dict[str, dict[str, float]]], seed: int) -> dict[str, dict[str, list[float]]]:
    summary: dict[str, dict[str, list[float]]] = {}
    for mode in per_query[0]:
        names = sorted({name for q in per_query for name in q[mode]})
        summary[mode] = {
            name: list(bootstrap([q[mode][name] for q in per_query if name in q[mode]], seed)) for name in names
        }
    return summary


def state_report(items: dict[str, Any], labels: dict[str, dict]) -> dict[str, float]:
    """HAS / NOT_HAS precision and recall of stored states against the labels (all categories)."""
    tp_has = fp_has = fn_has = tp_not = fp_not = fn_not = uncertain = total = 0
    for item_id, item in items.items():
        present = set(labels[item_id]["has"])
        states = {ev.concept: ev.state for ev in item.evidence}
        for concept, state in states.items():
            total += 1
            truth = concept in present
            if state == 1:
                tp_has += truth
                fp_has += not truth
            elif state == 2:
                tp_not += not truth
                fp_not += truth
            else:
                uncertain += 1
            fn_has += truth and state != 1
            fn_not += (not truth) and state != 2
    return {
        "has_precision": tp_has / max(1, tp_has + fp_has),
        "has_recall": tp_has / max(1, tp_has + fn_has),
        "not_has_precision": tp_not / max(1, tp_not + fp_not),
        "not_has_recall": tp_not / max(1, tp_not + fn_not),
        "uncertain_share": uncertain / max(1, total),
    }


# ---- the run -----------------------------------------------------------------------------


@dataclass
class Condition:
    """One evidence source x partitioner: one namespace."""

    evidence: str  # "labels" | "simulated" | "engine"
    accuracy: float | None = None
    partitioner: str = "otsu"
    spectrum: str = "all"  # "all" categories per image, or "balanced" (half present)

    @property
    def simulated_accuracy(self) -> float:
        """The simulated verifier's accuracy (a simulated condition always has one)."""
        if self.accuracy is None:
            raise ValueError(f"condition {self.evidence}-{self.partitioner} has no simulated accuracy")
        return self.accuracy

    @property
    def name(self) -> str:
        base = f"simulated-{self.accuracy:.2f}" if self.evidence == "simulated" else self.evidence
        return f"{base}-{self.partitioner}-{self.spectrum}"

    @property
    def label(self) -> str:
        spectrum = "" if self.spectrum == "all" else f", {self.spectrum}"
        if self.evidence == "simulated":
            return f"SIMULATED VLM (acc {self.accuracy:.2f}), {self.partitioner}{spectrum}"
        return f"{self.evidence}, {self.partitioner}{spectrum}"


@dataclass
class EvaluationResult:
    condition: Condition
    metrics: dict[str, dict[str, list[float]]]
    states: dict[str, float] | None = None
    load_seconds: float = 0.0
    query_seconds: float = 0.0
    extra: dict = field(default_factory=dict)
    per_query: list = field(default_factory=list, repr=False)  # metrics_for per query, kept for pooling seeds


def load_condition(
    client,
    condition: Condition,
    rows: Sequence[dict],
    categories: Sequence[str],
    item_vectors: np.ndarray,
    templates: int,
    seed: int,
    namespace_options: Mapping[str, float] | None = None,
) -> float:
    """`namespace_options`: partition settings for the namespace (kappa, rho, rho_absent)."""
    from polarmem.v1 import memory_service_pb2 as pb
    from polarmem.common.v1 import enums_pb2 as storage_pb2  # the shared enums (ItemKind, ConceptState)

    options = dict(namespace_options or {})
    if condition.partitioner == "auto" and condition.evidence == "simulated":
        # what an operator would state about this verifier: the accuracy it was simulated at
        options["declared_accuracy"] = condition.simulated_accuracy
    # closed: the captions are stored as text items, and the quality figures cited for these
    # conditions were measured with only the candidate concepts (an open vocabulary, the default,
    # would make every caption word a concept)
    client.create_namespace(
        condition.name,
        spaces=[("sem", int(item_vectors.shape[1]))],
        encoder="none",
        partitioner=condition.partitioner,
        open_vocabulary=False,
        **options,
    )
    candidates = candidate_concepts(rows, categories, condition.spectrum, seed)
    if condition.evidence == "simulated":
        scores = simulated_scores(rows, candidates, condition.simulated_accuracy, templates, seed)
    started = time.perf_counter()

    def items():
        for i, row in enumerate(rows):
            message = pb.ItemInput(
                id=row["id"],
                kind=storage_pb2.ITEM_KIND_TEXT,
                text=" ".join(row["captions"]),
                vectors={"sem": pb.VectorValue(values=item_vectors[i].tolist())},
            )
            if condition.evidence == "labels":
                for c in candidates[i]:
                    message.states[c] = (
                        storage_pb2.CONCEPT_STATE_HAS if c in row["has"] else storage_pb2.CONCEPT_STATE_NOT_HAS
                    )
            elif condition.evidence == "simulated":
                for c, values in scores[i].items():
                    message.scores[c].p_yes.extend(values)
                message.source = "simulated"
            else:
                message.verify_concepts.extend(candidates[i])
            yield message

    response = client.remember_stream(condition.name, items(), timeout_s=3600)
    if response.failed:
        first = next(r for r in response.results if r.HasField("error"))
        raise RuntimeError(f"{response.failed} items failed to load into {condition.name}: {first.error.message}")
    return time.perf_counter() - started


def run_queries(
    client, namespace: str, queries: Sequence[Query], query_vectors: np.ndarray, max_k: int, modes: Sequence[str]
) -> list[QueryOutcome]:
    outcomes = []
    for query, vector in zip(queries, query_vectors):
        ranked = {}
        for mode in modes:
            # a query may name a concept no stored item holds (the vocabulary lacks it): it still
            # runs, unconstrained on that side, as it would for a user who allows unknown names
            response = client.recall(
                namespace,
                vectors={"sem": vector},
                required=[query.required],
                forbidden=[query.forbidden],
                top_k=max_k,
                mode=None if mode == RULE_MODE else mode,
                allow_unknown_concepts=True,
            )
            ranked[mode] = [h.id for h in response.hits]
        pool = client.recall(namespace, vectors={"sem": vector}, top_k=max_k * POOL_FACTOR, mode="off")
        outcomes.append(QueryOutcome(ranked, [h.id for h in pool.hits]))
    return outcomes


def query_texts(queries: Sequence[Query], query_embedding: str) -> list[str]:
    """What the semantic half embeds: the whole query ("full", as before issue 18) or its
    affirmative part ("affirmative": text.affirmative_text, the whole query if nothing is left)."""
    if query_embedding == "full":
        return [q.text for q in queries]
    if query_embedding != "affirmative":
        raise ValueError(f"query_embedding must be 'full' or 'affirmative', got {query_embedding!r}")
    from polarmem_server.domain.text import affirmative_text

    return [affirmative_text(q.text) or q.text for q in queries]


def evaluate(
    conditions: Sequence[Condition],
    rows: Sequence[dict],
    queries: Sequence[Query],
    encoder,
    address: str | None = None,
    engine: str = "",
    ks: Sequence[int] = KS,
    modes: Sequence[str] = MODES,
    seed: int = 0,
    namespace_options: Mapping[str, float] | None = None,
    with_states: bool = True,
    progress=print,
    item_vectors: np.ndarray | None = None,
    query_embedding: str = "full",
) -> list[EvaluationResult]:
    from google.protobuf.json_format import MessageToDict

    from polarmem_server.faces.client import PolarMemClient
    from polarmem_server.api.config import ServerConfig
    from polarmem_server.library import DEFAULT_TEMPLATES
    from polarmem_server.api.server import PolarMemServer

    labels = {r["id"]: r for r in rows}
    categories = sorted({c for r in rows for c in r["has"] + r["not_has"]})
    progress(f"encoding {len(rows) if item_vectors is None else 0} items and {len(queries)} queries ...")
    if item_vectors is None:
        item_vectors = encoder.encode([" ".join(r["captions"]) for r in rows])
    query_vectors = encoder.encode(query_texts(queries, query_embedding))
    consistent = {q: sum(judge(r, q)[1] for r in rows) for q in queries}
    max_k = max(ks)
    results = []
    with tempfile.TemporaryDirectory(prefix="polarmem-eval-") as data_dir:
        server = None
        if address is None:
            server = PolarMemServer(
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
            address = server.address
        try:
            with PolarMemClient(address, timeout_s=3600) as client:
                for condition in conditions:
                    progress(f"[{condition.label}] loading through gRPC ...")
                    load_s = load_condition(
                        client,
                        condition,
                        rows,
                        categories,
                        item_vectors,
                        len(DEFAULT_TEMPLATES),
                        seed,
                        namespace_options,
                    )
                    started = time.perf_counter()
                    condition_modes = tuple(modes) + ((RULE_MODE,) if condition.partitioner == "auto" else ())
                    outcomes = run_queries(client, condition.name, queries, query_vectors, max_k, condition_modes)
                    per_query = [metrics_for(o, q, labels, consistent[q], ks) for o, q in zip(outcomes, queries)]
                    result = EvaluationResult(
                        condition,
                        summarise(per_query, seed),
                        load_seconds=load_s,
                        query_seconds=time.perf_counter() - started,
                        per_query=per_query,
                    )
                    if condition.partitioner == "auto":  # which rule the server chose, and why
                        result.extra["rule"] = MessageToDict(client.get_namespace(condition.name).rule)
                    if with_states and condition.evidence != "labels":
                        items = {r["id"]: client.get_item(condition.name, r["id"]).item for r in rows}
                        result.states = state_report(items, labels)
                    results.append(result)
                    client.delete_namespace(condition.name)
        finally:
            if server is not None:
                server.stop()
    return results


def evaluate_seeds(
    conditions: Sequence[Condition],
    rows: Sequence[dict],
    seeds: Sequence[int],
    encoder,
    num_queries: int = 100,
    queries: Sequence[Query] | None = None,
    progress=print,
    **options,
) -> list[EvaluationResult]:
    """`evaluate` once per seed — each seed draws its own queries (unless `queries` are given)
    and its own simulated scores — pooled: every metric's mean and bootstrap interval over all
    seeds' queries together, state figures averaged, and each seed's means kept in
    `extra["per_seed"]` (one seed's 100 queries decide a Conflict@3 of 0.1 to about ±0.03)."""
    runs = []
    if options.get("item_vectors") is None:  # encoded once for every seed
        options["item_vectors"] = encoder.encode([" ".join(r["captions"]) for r in rows])
    for seed in seeds:
        progress(f"seed {seed}")
        seed_queries = list(queries) if queries is not None else generate_queries(rows, num_queries, seed)
        runs.append(evaluate(conditions, rows, seed_queries, encoder, seed=seed, progress=progress, **options))
    if len(runs) == 1:
        return runs[0]
    pooled = []
    for parts in zip(*runs):
        per_query = [q for part in parts for q in part.per_query]
        states = None
        if all(part.states for part in parts):
            states = {name: float(np.mean([part.states[name] for part in parts])) for name in parts[0].states}
        per_seed = {
            str(seed): {
                mode: {
                    name: part.metrics[mode][name][0]
                    for name in ("conflict@3", "ndcg@10")
                    if name in part.metrics[mode]
                }
                for mode in part.metrics
            }
            for seed, part in zip(seeds, parts)
        }
        pooled.append(
            EvaluationResult(
                parts[0].condition,
                summarise(per_query, seeds[0]),
                states,
                sum(p.load_seconds for p in parts),
                sum(p.query_seconds for p in parts),
                {"per_seed": per_seed, **({"rule": parts[0].extra["rule"]} if "rule" in parts[0].extra else {})},
                per_query,
            )
        )
    return pooled


# ---- output ------------------------------------------------------------------------------


def format_table(results: Sequence[EvaluationResult], k: int = 3, ndcg_k: int = 10) -> str:
    lines = [
        f"{'condition':<44} {'mode':<9} {f'Conflict@{k}':>20} {f'FilterRate@{k}':>20} {f'Recall@{k}':>8} "
        f"{f'nDCG@{ndcg_k}':>8}"
    ]
    for r in results:
        for mode, m in r.metrics.items():

            def cell(name, width=20):
                mean, lo, hi = m.get(name, [float("nan")] * 3)
                return f"{mean:.3f} [{lo:.3f},{hi:.3f}]".rjust(width)

            lines.append(
                f"{r.condition.label:<44} {mode:<9} {cell(f'conflict@{k}')} {cell(f'filter_rate@{k}')} "
                f"{m[f'recall@{k}'][0]:8.3f} {m[f'ndcg@{ndcg_k}'][0]:8.3f}"
            )
        if "per_seed" in r.extra:
            for mode in r.metrics:
                seeds = ", ".join(
                    f"{seed}: {m[mode].get('conflict@3', float('nan')):.3f}" for seed, m in r.extra["per_seed"].items()
                )
                lines.append(f"{'':<44} {mode:<9} Conflict@3 per seed  {seeds}")
        if r.states:
            s = r.states
            lines.append(
                f"{'':<44} states: HAS P/R {s['has_precision']:.2f}/{s['has_recall']:.2f}, NOT_HAS P/R "
                f"{s['not_has_precision']:.3f}/{s['not_has_recall']:.2f}, UNCERTAIN {s['uncertain_share']:.0%}"
            )
    return "\n".join(lines)


def write_json(results: Sequence[EvaluationResult], path: Path, meta: dict) -> None:
    payload = {
        **meta,
        "results": [
            {
                "condition": r.condition.label,
                "evidence": r.condition.evidence,
                "simulated": r.condition.evidence == "simulated",
                "accuracy": r.condition.accuracy,
                "partitioner": r.condition.partitioner,
                "metrics": r.metrics,
                "states": r.states,
                "load_seconds": r.load_seconds,
                "query_seconds": r.query_seconds,
                **r.extra,
            }
            for r in results
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2))


def plot(results: Sequence[EvaluationResult], out_dir: Path, ks: Sequence[int] = KS) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for metric in ("conflict", "filter_rate", "ndcg"):
        fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.4), squeeze=False)
        for ax, r in zip(axes[0], results):
            for mode, m in r.metrics.items():
                values = [m.get(f"{metric}@{k}", [np.nan] * 3) for k in ks]
                ax.errorbar(
                    ks,
                    [v[0] for v in values],
                    yerr=[[v[0] - v[1] for v in values], [v[2] - v[0] for v in values]],
                    marker="o",
                    capsize=3,
                    label=mode,
                )
            ax.set_title(r.condition.label, fontsize=8)
            ax.set_xlabel("K")
            ax.set_ylabel(metric.replace("_", " "))
            ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=8)
        fig.tight_layout()
        path = out_dir / f"{metric}_vs_k.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    simulated = [r for r in results if r.condition.evidence == "simulated"]
    if len({r.condition.accuracy for r in simulated}) > 1:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
        for number, partitioner in enumerate(sorted({r.condition.partitioner for r in simulated})):
            series = sorted(
                (r for r in simulated if r.condition.partitioner == partitioner),
                key=lambda r: r.condition.simulated_accuracy,
            )
            # "off" ranks by similarity alone, the same for every partitioner: drawn once
            for mode, style in (("off", ":"), ("hard", "-"), ("strict", "--")):
                if (mode == "off" and number) or mode not in series[0].metrics:
                    continue
                xs = [r.condition.accuracy for r in series]
                label = "off (plain similarity)" if mode == "off" else f"{partitioner} {mode}"
                axes[0].plot(xs, [r.metrics[mode]["conflict@3"][0] for r in series], style, marker="o", label=label)
                axes[1].plot(xs, [r.metrics[mode]["ndcg@10"][0] for r in series], style, marker="o", label=label)
        axes[0].set_ylabel("Conflict@3")
        axes[1].set_ylabel("nDCG@10")
        for ax in axes:
            ax.set_xlabel("simulated VLM accuracy (SIMULATED)")
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=7)
        fig.tight_layout()
        path = out_dir / "metrics_vs_accuracy.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
