"""The recall pipeline (DESIGN.md steps 5-6): query planning, the four modes, explanations,
suppressed items and the fact-checked context.

Query planning: explicit ``required`` / ``forbidden`` concept names are used as given;
otherwise both are parsed from the query text (vocabulary mentions with negation scope, see
``text.py``). A term that names no concept is mapped to the closest vocabulary concept by the
namespace's text encoder when their cosine similarity is at least
``CONCEPT_MAP_MIN_SIMILARITY``; the mapping is reported. Terms that stay unknown are reported
and not applied.

Modes:

* ``hard`` — the paper's rule: rank by ``(s_log, s_sem)``, logic strictly first.
* ``soft`` — rank by ``s_sem + λ·s_log``.
* ``off`` — plain dense retrieval by ``s_sem`` (the baseline).
* ``strict`` — ``hard``, and within each tier the items on which every forbidden concept is
  *verified* absent (NOT_HAS) come before those where it is merely not HAS (UNCERTAIN or never
  scored): rank by ``(s_log, absence verified, s_sem)``. An uncertain forbidden concept is the
  commonest way a contradicting item passes the paper's rule (a missed detection lands in
  UNCERTAIN, not in HAS); strict mode spends PolarMem's NOT_HAS memory on exactly that case.
  Computed as two core searches — the hard top ``k`` and the hard top ``k`` among verified
  items (``Index.slots_with``) — merged; the strict top ``k`` is always inside their union.
* ``adaptive`` — ``hard`` when (a) the constraints are certain: explicit, or parsed with no
  unknown and no encoder-mapped term, and (b) there is enough compatible evidence: the hard
  top ``k`` holds ``k`` non-conflicting items, and (with a query vector) every one of them has
  ``s_sem`` within ``ADAPTIVE_MARGIN`` of the best ``s_sem`` of any eligible item — so
  enforcing the logic costs little relevance. Otherwise ``soft`` (λ as requested). The mode
  used and the reason are returned.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from polarmem.common.v1 import enums_pb2
from polarmem.storage.v1 import records_pb2
from polarmem_server.domain import text as textproc
from polarmem_server.index import SearchHits

if TYPE_CHECKING:
    from polarmem_server.memory import Memory, Namespace

CONCEPT_MAP_MIN_SIMILARITY = 0.75
ADAPTIVE_MARGIN = 0.15
MODES = ("hard", "soft", "adaptive", "off", "strict")
STATUS = {1: "VERIFIED", 0: "NEUTRAL", -1: "CONFLICT"}
CONTEXT_LIST_LIMIT = 12


@dataclass
class QueryPlan:
    required: list[int] = field(default_factory=list)
    forbidden: list[int] = field(default_factory=list)
    explicit: bool = False
    unknown: list[str] = field(default_factory=list)
    mapped: list[tuple[str, str, float]] = field(default_factory=list)  # (phrase, concept, similarity)

    @property
    def certain(self) -> bool:
        return self.explicit or (not self.unknown and not self.mapped)


@dataclass
class Hit:
    item_id: str
    tier: int
    score: float
    record: records_pb2.ItemRecord
    entailed_by: list[str]
    conflicted_by: list[str]
    reasons: list[str]
    absence_verified: bool = False  # every forbidden concept is NOT_HAS on this item

    @property
    def status(self) -> str:
        return STATUS[self.tier]


@dataclass
class RecallResult:
    hits: list[Hit]
    tier_counts: dict[str, int]
    plan: QueryPlan
    required: list[str]
    forbidden: list[str]
    mode_used: str
    mode_reason: str = ""
    suppressed: list[Hit] = field(default_factory=list)


def _map_terms(namespace: Namespace, phrases: list[str]) -> list[tuple[str, int, float] | None]:
    """Closest concept per phrase by the namespace encoder, or None below the threshold."""
    if not phrases or len(namespace.vocabulary) == 0 or namespace.ensure_encoder() is None:
        return [None] * len(phrases)
    concept_vectors = namespace.concept_vectors()
    similarities = namespace.encoder.encode(phrases) @ concept_vectors.T
    out: list[tuple[str, int, float] | None] = []
    for phrase, row in zip(phrases, similarities):
        best = int(np.argmax(row))
        out.append((phrase, best, float(row[best])) if row[best] >= CONCEPT_MAP_MIN_SIMILARITY else None)
    return out


def plan_query(namespace: Namespace, text: str, required: Iterable[str] | None,
               forbidden: Iterable[str] | None) -> QueryPlan:
    vocabulary = namespace.vocabulary
    plan = QueryPlan()
    required, forbidden = list(required or []), list(forbidden or [])
    if required or forbidden:
        plan.explicit = True
        terms = [(name, False) for name in required] + [(name, True) for name in forbidden]
        unresolved = []
        for name, negated in terms:
            if not isinstance(name, str) or not name.strip():
                raise ValueError("required / forbidden: concept names must be non-empty strings")
            concept_id = vocabulary.lookup(name)
            if concept_id is None:
                unresolved.append((name, negated))
            else:
                (plan.forbidden if negated else plan.required).append(concept_id)
    else:
        parsed = textproc.parse(text, vocabulary) if text else textproc.ParsedText()
        plan.required = parsed.positive
        plan.forbidden = [c for c in parsed.negative if c not in parsed.positive]
        unresolved = [(term.word, term.negated) for term in parsed.unknown]
    for (name, negated), mapping in zip(unresolved, _map_terms(namespace, [n for n, _ in unresolved])):
        if mapping is None:
            plan.unknown.append(name)
            continue
        _, concept_id, similarity = mapping
        plan.mapped.append((name, vocabulary.name(concept_id), similarity))
        target = plan.forbidden if negated else plan.required
        if concept_id not in target:
            target.append(concept_id)
    plan.required = list(dict.fromkeys(plan.required))
    plan.forbidden = [c for c in dict.fromkeys(plan.forbidden) if c not in plan.required]
    return plan


def explain(namespace: Namespace, record: records_pb2.ItemRecord, tier: int, score: float,
            required: list[int], forbidden: list[int]) -> Hit:
    """Which constraints entailed or conflicted with an item, and the evidence behind them."""
    names = namespace.vocabulary.name
    by_concept = {ev.concept_id: ev for ev in record.evidence}
    partition = record.partition
    entailed, conflicted, reasons = [], [], []

    def why(state: str, ev: records_pb2.ConceptEvidence) -> str:
        if len(ev.template_scores):
            return f"{state}({names(ev.concept_id)}) p={ev.mean:.2f} τ={partition.tau:.2f} δ={partition.delta:.2f}"
        return f"{state}({names(ev.concept_id)}) source={ev.source or 'client'}"

    for c in required:
        ev = by_concept.get(c)
        if ev is None:
            continue
        if ev.state == enums_pb2.CONCEPT_STATE_NOT_HAS:
            conflicted.append(names(c))
            reasons.append(why("NOT_HAS", ev))
        elif ev.state == enums_pb2.CONCEPT_STATE_HAS:
            entailed.append(names(c))
            reasons.append(why("HAS", ev))
    verified = bool(forbidden)
    for c in forbidden:
        ev = by_concept.get(c)
        if ev is not None and ev.state == enums_pb2.CONCEPT_STATE_HAS:
            conflicted.append(names(c))
            reasons.append(why("HAS", ev) + " forbidden")
        verified = verified and ev is not None and ev.state == enums_pb2.CONCEPT_STATE_NOT_HAS
    if tier == -1:
        entailed = []
    return Hit(record.id, tier, score, record, entailed, conflicted, reasons, verified)


def run_recall(memory: Memory, namespace: Namespace, text: str = "", vectors: Mapping[str, Any] | None = None,
               required: Iterable[str] | None = None, forbidden: Iterable[str] | None = None, k: int = 10,
               mode: str = "hard", soft_lambda: float = 1.0, exclude_conflicts: bool = False,
               kinds: Iterable[str] | None = None, metadata: Mapping[str, str] | None = None,
               weights: Mapping[str, float] | None = None, suppressed_k: int = 0) -> RecallResult:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"top_k must be >= 1, got {k!r}")
    vocabulary = namespace.vocabulary
    plan = plan_query(namespace, text, required, forbidden)
    query = memory.checked_query_vectors(namespace, vectors or {})
    if "sem" not in query and text and "sem" in namespace.spaces and namespace.ensure_encoder() is not None:
        query["sem"] = namespace.encoder.encode([text])[0]
    if not query and not plan.required and not plan.forbidden:
        raise ValueError("query is empty: give text, vectors, or required / forbidden concepts")
    result = RecallResult([], {"conflict": 0, "neutral": 0, "entailed": 0}, plan,
                          [vocabulary.name(c) for c in plan.required], [vocabulary.name(c) for c in plan.forbidden],
                          mode_used=mode)
    # Slots are renumbered by compaction: searching and mapping slots to ids must happen within
    # one generation of the namespace's slot map (a seqlock: odd while compacting), else retry.
    while True:
        generation = namespace.generation
        if generation % 2:
            time.sleep(0.001)
            continue
        id_of = namespace.id_of
        allow = None
        if metadata:
            sets = [namespace.metadata_slots.get((key, value), set()) for key, value in metadata.items()]
            allow = sorted(set.intersection(*sets))
            if not allow:
                result.mode_reason = "no item matches the metadata filter"
                return result

        def search(search_mode: str, top_k: int, exclude: bool, allow=allow):
            return namespace.index.search(query, plan.required, plan.forbidden, k=top_k, mode=search_mode,
                                          soft_lambda=soft_lambda, exclude_conflicts=exclude, kinds=kinds, allow=allow,
                                          weights=weights)

        chosen, result.mode_reason = (_choose_adaptive(plan, query, search, k, exclude_conflicts) if mode == "adaptive"
                                      else (mode, ""))
        if chosen == "strict":
            hits = _strict_search(namespace, plan, search, allow, k, exclude_conflicts)
        else:
            hits = search(chosen, k, exclude_conflicts)
        baseline = search("off", k, False) if suppressed_k > 0 and chosen != "off" else None
        if namespace.generation == generation:
            break
    result.mode_used = chosen
    result.tier_counts = hits.tier_counts
    result.hits = _hits(memory, namespace, id_of, hits, plan)
    if baseline is not None:
        kept = {h.item_id for h in result.hits}
        result.suppressed = [h for h in _hits(memory, namespace, id_of, baseline, plan)
                             if h.item_id not in kept and h.tier == -1][:suppressed_k]
    return result


def _strict_search(namespace: Namespace, plan: QueryPlan, search, allow, k: int, exclude: bool) -> SearchHits:
    """Ranks by (s_log, every forbidden concept verified NOT_HAS, s_sem, slot). Any item of the
    strict top k is in the hard top k (everything ranked above it there is above it here too)
    or in the hard top k among verified items, so merging those two searches is exact. When the
    hard top k is verified throughout, it is already the strict top k (a verified item outside it
    ranks below it under both orders), and the second search is skipped."""
    hard = search("hard", k, exclude)
    if not plan.forbidden:
        return hard
    verified = namespace.index.slots_with((), plan.forbidden)
    if allow is not None:
        verified = np.intersect1d(verified, np.asarray(allow, dtype=np.int64), assume_unique=True)
    if verified.size == 0:
        return hard
    def is_verified(slots: np.ndarray) -> np.ndarray:  # `verified` is ascending
        return verified[np.minimum(np.searchsorted(verified, slots), verified.size - 1)] == slots

    if is_verified(hard.slots).all():  # nothing in the hard top k can be displaced
        return hard
    among_verified = search("hard", k, exclude, allow=verified)
    rows: dict[int, tuple[int, float]] = {}
    for hits in (hard, among_verified):
        rows.update(zip(hits.slots.tolist(), zip(hits.tiers.tolist(), hits.scores.tolist())))
    slots = np.fromiter(rows, dtype=np.int64, count=len(rows))
    flags = dict(zip(slots.tolist(), is_verified(slots).tolist()))
    ranked = sorted(rows, key=lambda slot: (-rows[slot][0], not flags[slot], -rows[slot][1], slot))[:k]
    return SearchHits(np.asarray(ranked, dtype=np.int64), np.asarray([rows[s][0] for s in ranked], dtype=hard.tiers.dtype),
                      np.asarray([rows[s][1] for s in ranked], dtype=hard.scores.dtype), hard.tier_counts,
                      hard.scored + among_verified.scored, hard.reranked + among_verified.reranked)


def _choose_adaptive(plan: QueryPlan, query: Mapping[str, Any], search, k: int, exclude: bool) -> tuple[str, str]:
    if not plan.certain:
        return "soft", f"constraints uncertain (unknown: {plan.unknown or '-'}, mapped: {[m[0] for m in plan.mapped] or '-'})"
    if not plan.required and not plan.forbidden:
        return "soft", "no constraints to enforce"
    hard = search("hard", k, exclude)
    compatible = int(np.count_nonzero(hard.tiers >= 0))
    if compatible < k:
        return "soft", f"only {compatible} compatible items for k={k}"
    if not query:
        return "hard", f"certain constraints; {compatible} compatible items"
    best = float(search("off", 1, False).scores[0])
    weakest = float(hard.scores.min())
    if weakest >= best - ADAPTIVE_MARGIN:
        return "hard", f"certain constraints; the hard top {k} stays within {ADAPTIVE_MARGIN} of the best similarity"
    return "soft", (f"compatible evidence is weak: the hard top {k} reaches similarity {weakest:.2f}, "
                    f"below {best:.2f} - {ADAPTIVE_MARGIN}")


def _hits(memory: Memory, namespace: Namespace, id_of: list[str | None], hits, plan: QueryPlan) -> list[Hit]:
    out = []
    for slot, tier, score in zip(hits.slots.tolist(), hits.tiers.tolist(), hits.scores.tolist()):
        item_id = id_of[slot] if slot < len(id_of) else None
        record = memory.store.get_item(namespace.settings.name, item_id) if item_id is not None else None
        if record is None:  # forgotten between the search and this read
            continue
        out.append(explain(namespace, record, tier, score, plan.required, plan.forbidden))
    return out


def _concept_list(names: list[str], first: Iterable[str]) -> str:
    first = [n for n in first if n in names]
    ordered = first + [n for n in names if n not in first]
    shown = ordered[:CONTEXT_LIST_LIMIT]
    more = len(ordered) - len(shown)
    return ", ".join(shown) + (f" (+{more} more)" if more else "")


def render_context(namespace: Namespace, hits: list[Hit], budget_chars: int = 400,
                   query_concepts: Iterable[str] = ()) -> str:
    """The context handed to the model: one ``[Fact Check: STATUS] content`` entry per hit in
    rank order, content cut to the per-item budget, then the item's HAS / NOT_HAS lists (the
    query's own concepts first)."""
    if budget_chars < 16:
        raise ValueError(f"context_budget_chars must be >= 16, got {budget_chars}")
    names = namespace.vocabulary.name
    query_concepts = list(query_concepts)
    lines = []
    for rank, hit in enumerate(hits, start=1):
        content = hit.record.text or hit.record.uri or hit.item_id
        if len(content) > budget_chars:
            content = content[: budget_chars - 1].rstrip() + "…"
        has = [names(ev.concept_id) for ev in hit.record.evidence if ev.state == enums_pb2.CONCEPT_STATE_HAS]
        not_has = [names(ev.concept_id) for ev in hit.record.evidence if ev.state == enums_pb2.CONCEPT_STATE_NOT_HAS]
        lines.append(f"[{rank}] [Fact Check: {hit.status}] {content}\n"
                     f"    HAS: {_concept_list(has, query_concepts) or '-'} | NOT_HAS: {_concept_list(not_has, query_concepts) or '-'}")
    return "\n".join(lines)
