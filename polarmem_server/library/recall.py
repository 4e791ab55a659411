"""The recall pipeline (DESIGN.md steps 5-6): query planning, the four modes, explanations,
suppressed items and the fact-checked context.

Query planning: explicit ``required`` / ``forbidden`` concept names are used as given (an
alias or a plural names its concept). An explicit name the vocabulary lacks is an
InvalidArgument naming the field and the closest known names, unless the query allows unknown
concepts: then it is skipped and reported with those names (``QueryPlan.unknown_concepts``).
Without explicit names both sides are parsed from the query text (vocabulary mentions with
negation scope, see ``text.py``). A parsed term that names no concept is mapped to the closest
vocabulary concept by the namespace's text encoder when their cosine similarity is at least
0.75 (the core's rule, concept_mapping.hpp; not in an open vocabulary, where a word no text
mentions has no evidence); the mapping is reported. Terms that stay unknown are reported
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
  Computed from two searches — the hard top ``k`` and the hard top ``k`` among verified
  items — merged; the strict top ``k`` is always inside their union. The local backend's core
  does that in one call under one lock (``SearchRequest.mode`` "strict"), which also lets the
  compiled front replay it; a backend without ``searches_strict`` (Milvus) has its two searches
  merged by the same core merge (cpp/include/polarmem/strict_merge.hpp).
* confidence within tiers (``RecallQuery.confidence``: thresholds ``present_above`` / ``absent_below``
  and weights ``present_weight`` / ``absent_weight``, set by the namespace's rule or
  ``rank_by_confidence``): every hard search of ``hard``, ``strict`` and ``adaptive`` (except
  adaptive's gate, which reads similarity) ranks, inside each tier (after strict's verified
  absence), the items whose forbidden concepts are confidently absent first, then those whose
  required concepts are confidently present (binary flags from the index's confidence grades,
  domain/confidence.py), then by s_sem + present_weight x the required concepts' confidence -
  absent_weight x the forbidden ones' (s_sem alone without weights). The strict merge stays
  exact: everything ranked above an item by (tier, flags, that value) is above it in strict too.
* ``adaptive`` — ``hard`` when (a) the constraints are certain: explicit, or parsed with no
  unknown and no encoder-mapped term, and (b) there is enough compatible evidence: the hard
  top ``k`` holds ``k`` non-conflicting items, and (with a query vector) every one of them has
  ``s_sem`` within 0.15 of the best ``s_sem`` of any eligible item — so enforcing the logic
  costs little relevance. Otherwise ``soft`` (λ as requested). The mode used and the reason
  are returned. The core decides it (``mode_rules.hpp``, ``kAdaptiveMargin``) with this
  module's searches, as the compiled front does with the index's.

Recency (opt-in, ``hard`` and ``off``): with ``RecallQuery.recency_half_life_s`` items rank
within each tier by s_sem + recency_weight x 2^(-age / half-life); the core finds that top k
exactly (recency.hpp, through recency.py).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from polarmem.common.v1 import enums_pb2
from polarmem.storage.v1 import records_pb2
from polarmem_server import _core
from polarmem_server.library import recency
from polarmem_server.domain import confidence
from polarmem_server.domain import text as textproc
from polarmem_server.domain.namespace import Namespace
from polarmem_server.domain.query import (
    MODES,  # noqa: F401 - re-exported
    DEFAULT_CONTEXT_BUDGET_CHARS,
    RecallMode,
    RecallQuery,
    check_context_budget,
)
from polarmem_server.domain.rule_choice import describe_confidence
from polarmem_server.domain.suggest import closest_names, unknown_concepts_message
from polarmem_server.errors import InvalidArgument, quoted
from polarmem_server.scoring.encoder import Encoder, load_encoder
from polarmem_server.storage.backend import Backend, SearchHit, SearchRequest, SearchResult

STATUS = {1: "VERIFIED", 0: "NEUTRAL", -1: "CONFLICT"}
# Encoded concept names per namespace (for mapping unknown query terms): (vocabulary version,
# names, vectors), extended with only the concepts added since; dropped with the namespace.
_concept_vectors: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _encoder(namespace: Namespace) -> Encoder | None:
    return load_encoder(namespace.settings.encoder)


def _required_encoder(namespace: Namespace) -> Encoder:
    encoder = _encoder(namespace)
    if encoder is None:
        raise InvalidArgument(f"namespace {quoted(namespace.name)} has no text encoder (encoder 'none')")
    return encoder


def concept_vectors(namespace: Namespace) -> np.ndarray:
    """The namespace's concept names encoded, one row per concept id. A vocabulary grows by
    appending, so a refresh encodes only the names added since the cache was built (re-encoding
    every name after each write that adds a concept cost the next text Recall ~120 ms of CPU at
    ~100 names, benchmarks/bench_text_recall_cpu.py); a vocabulary that changed otherwise
    (truncated after a failed write) is encoded again whole."""
    vocabulary = namespace.vocabulary
    version = vocabulary.version  # read before the names: a change in between is seen next time
    cached = _concept_vectors.get(namespace)
    if cached is not None and cached[0] == version:
        return cached[2]
    names = vocabulary.names
    if cached is not None and len(names) >= len(cached[1]) and names[: len(cached[1])] == cached[1]:
        added = names[len(cached[1]) :]
        vectors = np.concatenate([cached[2], _required_encoder(namespace).encode(added)]) if added else cached[2]
    else:
        vectors = _required_encoder(namespace).encode(names)
    _concept_vectors[namespace] = (version, names, vectors)
    return vectors


@dataclass
class QueryPlan:
    required: list[int] = field(default_factory=list)
    forbidden: list[int] = field(default_factory=list)
    explicit: bool = False
    unknown: list[str] = field(default_factory=list)
    mapped: list[tuple[str, str, float]] = field(default_factory=list)  # (phrase, concept, similarity)
    parsed: textproc.ParsedText | None = None  # the query text's parse, when constraints came from it
    # explicit names skipped as unknown (allow_unknown_concepts), each with the closest known names
    unknown_concepts: list[tuple[str, list[str]]] = field(default_factory=list)

    @property
    def certain(self) -> bool:
        return self.explicit or (not self.unknown and not self.mapped)


@dataclass
class Hit:
    item_id: str
    tier: int
    score: float
    record: records_pb2.ItemRecord | None  # None when recalled without explanations
    entailed_by: list[str]
    conflicted_by: list[str]
    reasons: list[str]
    absence_verified: bool = False  # every forbidden concept is NOT_HAS on this item
    # mode answer (answer_recall.py): the core's label, what the model reads, the revising item
    label: str = ""
    answer: str = ""
    superseded_by: str = ""

    @property
    def status(self) -> str:
        return self.label or STATUS[self.tier]


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
    answer_summary: str = ""  # mode answer: "no verified evidence for: ..." when nothing answers
    recency_reason: str = ""  # the recency term's words, which end mode_reason (set with the term only)
    confidence_ranked: bool = False  # the hard searches ranked by confidence (the query's or the rule's)


def _map_terms(namespace: Namespace, phrases: list[str]) -> list[tuple[int, float] | None]:
    """(concept id, similarity) of the closest concept per phrase by the namespace encoder, or
    None below the threshold: the core's rule (cpp/include/polarmem/concept_mapping.hpp), which
    the compiled front applies too. None for every phrase in an open vocabulary (the header says
    why)."""
    open_vocabulary = namespace.settings.open_vocabulary
    encoder = _encoder(namespace) if phrases and len(namespace.vocabulary) and not open_vocabulary else None
    if encoder is None:
        return [None] * len(phrases)
    return _core.closest_concepts(encoder.encode(phrases), concept_vectors(namespace))


class UnknownConcepts(InvalidArgument):
    """Explicit required / forbidden names the namespace's vocabulary lacks (INVALID_ARGUMENT)."""


def _explicit_concepts(
    namespace: Namespace, plan: QueryPlan, required: list[str], forbidden: list[str], allow_unknown: bool
) -> None:
    """Resolves explicit names into the plan. Names the vocabulary lacks are an InvalidArgument
    naming the field, the names and the closest known ones; with `allow_unknown` they are
    skipped and kept in plan.unknown_concepts with those suggestions."""
    vocabulary = namespace.vocabulary
    missing: dict[str, list[str]] = {"required": [], "forbidden": []}
    for field_name, names, target in (("required", required, plan.required), ("forbidden", forbidden, plan.forbidden)):
        for name in names:
            concept_id = vocabulary.lookup(name)
            if concept_id is None:
                missing[field_name].append(name)
            else:
                target.append(concept_id)
    if not any(missing.values()):
        return
    known = vocabulary.names
    if not allow_unknown:
        raise UnknownConcepts(
            "; ".join(
                unknown_concepts_message(field_name, names, known, namespace.name)
                for field_name, names in missing.items()
                if names
            )
        )
    for name in dict.fromkeys(missing["required"] + missing["forbidden"]):
        plan.unknown_concepts.append((name, closest_names(name, known)))


def plan_query(
    namespace: Namespace,
    text: str,
    required: Iterable[str] | None,
    forbidden: Iterable[str] | None,
    allow_unknown: bool = False,
) -> QueryPlan:
    plan = QueryPlan()
    required, forbidden = list(required or []), list(forbidden or [])
    if required or forbidden:
        plan.explicit = True
        _explicit_concepts(namespace, plan, required, forbidden, allow_unknown)
        plan.required = list(dict.fromkeys(plan.required))
        plan.forbidden = [c for c in dict.fromkeys(plan.forbidden) if c not in plan.required]
        return plan
    # The core reads the parse (concept_mapping.hpp query_concepts), as the compiled front does.
    parsed = plan.parsed = textproc.parse(text, namespace.vocabulary) if text else textproc.ParsedText()
    plan.required, plan.forbidden, plan.unknown, mapped = _core.query_concepts(
        list(parsed.polarity().items()),
        [(term.word, term.negated, term.uncertain) for term in parsed.unknown],
        lambda words: _map_terms(namespace, words),
    )
    plan.mapped = [(word, namespace.vocabulary.name(concept_id), similarity) for word, concept_id, similarity in mapped]
    return plan


# A record's concept state as the core counts it (+1 HAS, -1 NOT_HAS; no entry: no state).
STATE_SIGN = {enums_pb2.CONCEPT_STATE_HAS: 1, enums_pb2.CONCEPT_STATE_NOT_HAS: -1}
_NO_STATE = (0, False, 0.0, "")


def explain_hit(
    namespace: Namespace,
    record: records_pb2.ItemRecord,
    tier: int,
    score: float,
    required: list[int],
    forbidden: list[int],
) -> Hit:
    """Which constraints entailed or conflicted with an item, and the evidence behind them (the
    core's explanation, cpp/src/hit_explanation.cpp, as the compiled front's)."""
    names = namespace.vocabulary.name
    by_concept = {ev.concept_id: ev for ev in record.evidence}
    concepts = [*required, *forbidden]
    cited = []
    for c in concepts:
        ev = by_concept.get(c)
        cited.append(
            _NO_STATE if ev is None else (STATE_SIGN.get(ev.state, 0), len(ev.template_scores) > 0, ev.mean, ev.source)
        )
    partition = record.partition
    entailed, conflicted, reasons, verified = _core.explain_hit(
        tier, len(required), [names(c) for c in concepts], cited, partition.tau, partition.delta, True
    )
    return Hit(record.id, tier, score, record, entailed, conflicted, reasons, verified)


def run_recall(backend: Backend, namespace: Namespace, query: RecallQuery, explain: bool = True) -> RecallResult:
    """Plans a checked query, runs the mode's searches through the backend and explains the hits.

    With ``explain`` false nothing is read back from storage: each hit's tier, score, the query
    concepts' states and absence_verified come from the search itself, and ``Hit.record`` is
    None, ``reasons`` empty (no p, τ, δ). With it true the hits' records are read in one
    multi-get per search and explained."""
    vocabulary = namespace.vocabulary
    plan = plan_query(namespace, query.text, query.required, query.forbidden, query.allow_unknown_concepts)
    vectors = dict(query.vectors)
    encoder = _encoder(namespace) if "sem" not in vectors and query.text and "sem" in namespace.spaces else None
    if encoder is not None:
        # The semantic half of the logic's modes embeds the query's affirmative part: "anything
        # except a bus" must not rank buses first by similarity (docs/quality.md measures it).
        # Mode off is plain similarity: the whole text. A client vector is used as sent.
        parsed = plan.parsed if plan.parsed is not None else textproc.parse(query.text, vocabulary)
        affirmative = "" if query.mode == RecallMode.OFF else textproc.affirmative_part(query.text, parsed)
        vectors["sem"] = encoder.encode([affirmative or query.text])[0]
    if not vectors and not plan.required and not plan.forbidden:
        skipped = (
            f" (unknown concepts skipped: {', '.join(n for n, _ in plan.unknown_concepts)})"
            if plan.unknown_concepts
            else ""
        )
        raise InvalidArgument(f"query is empty{skipped}: give text, vectors, or required / forbidden concepts")
    result = RecallResult(
        [],
        {"conflict": 0, "neutral": 0, "entailed": 0},
        plan,
        [vocabulary.name(c) for c in plan.required],
        [vocabulary.name(c) for c in plan.forbidden],
        mode_used=query.mode.value,
    )
    k, exclude = query.k, query.exclude_conflicts
    # Without explanations the states of the query's concepts come from the index, not records.
    states = not explain and bool(plan.required or plan.forbidden)
    # Confidence ranks within tiers: the hard searches only (soft and off have no tiers).
    ranking = query.confidence
    honoured = ranking.used and backend.ranks_by_confidence
    present_level = confidence.present_level(ranking.present_above) if honoured else 0
    absent_level = confidence.absent_level(ranking.absent_below) if honoured else 0

    def search(
        mode: str, top_k: int, exclude_conflicts: bool, absent_verified: bool = False, by_confidence: bool = True
    ) -> SearchResult:
        ranked = mode in ("hard", "strict") and honoured and by_confidence
        return backend.search(
            namespace.name,
            query_search(
                query,
                vectors,
                required=plan.required,
                forbidden=plan.forbidden,
                k=top_k,
                mode=mode,
                soft_lambda=query.soft_lambda,
                exclude_conflicts=exclude_conflicts,
                absent_verified=absent_verified,
                concept_states=states,
                with_records=explain,
                present_level=present_level if ranked else 0,
                absent_level=absent_level if ranked else 0,
                present_weight=ranking.present_weight if ranked else 0.0,
                absent_weight=ranking.absent_weight if ranked else 0.0,
            ),
        )

    def rule_search(mode: _core.SearchMode, top_k: int, exclude_conflicts: bool) -> SearchResult:
        # a search the core's mode rules ask for (mode_rules.hpp): ranked by (tier, s_sem) alone
        return search(mode.name, top_k, exclude_conflicts, by_confidence=False)

    def choose_adaptive() -> tuple[str, str]:
        certain = plan.explicit
        return _core.choose_adaptive(
            [] if certain else plan.unknown,
            [] if certain else [phrase for phrase, _, _ in plan.mapped],
            bool(plan.required or plan.forbidden),
            bool(vectors),
            k,
            exclude,
            lambda *wanted: [(h.tier, h.score) for h in rule_search(*wanted).hits],
        )

    hits = (
        (lambda found: _hits(backend, namespace, found, plan))
        if explain
        else (lambda found: [_hit_from_states(namespace, hit, plan) for hit in found.hits])
    )
    chosen, result.mode_reason = choose_adaptive() if query.mode == RecallMode.ADAPTIVE else (query.mode.value, "")
    result.confidence_ranked = ranking.used
    if chosen == RecallMode.STRICT.value and backend.searches_strict:
        found = search(chosen, k, exclude)
        result.hits, result.tier_counts = hits(found), dict(found.tier_counts)
    elif chosen == RecallMode.STRICT.value:
        result.hits, result.tier_counts = _strict(backend, namespace, plan, search, k, exclude, explain)
    elif query.recency_half_life_s is not None:
        ranked = recency.rank_with_recency(
            backend,
            namespace.name,
            lambda c: search(chosen, c, exclude),
            k,
            chosen == RecallMode.HARD.value,
            query.recency_half_life_s,
            query.recency_weight,
        )
        result.hits = [
            explain_hit(namespace, record, hit.tier, hit.score, plan.required, plan.forbidden)
            if explain
            else _hit_from_states(namespace, hit, plan)
            for hit, record in ranked.rows
        ]
        result.tier_counts = ranked.tier_counts
        result.mode_reason = result.recency_reason = ranked.description
    else:
        found = search(chosen, k, exclude)
        result.hits, result.tier_counts = hits(found), dict(found.tier_counts)
    if query.metadata and sum(result.tier_counts.values()) == 0 and not result.mode_reason:
        result.mode_reason = "no item matches the metadata filter"
    if chosen in (RecallMode.HARD.value, RecallMode.STRICT.value) and ranking.used:
        described = (
            describe_confidence(ranking)
            if honoured
            else "confidence ranking not applied: this backend keeps no confidence grades"
        )
        result.mode_reason = f"{result.mode_reason}; {described}" if result.mode_reason else described
    result.mode_used = chosen
    if query.suppressed_k > 0 and chosen != RecallMode.OFF.value:
        baseline = hits(rule_search(*_core.suppressed_search(k)))
        picked = _core.suppressed(
            [h.item_id for h in result.hits],
            [h.item_id for h in baseline],
            [h.tier for h in baseline],
            query.suppressed_k,
        )
        result.suppressed = [baseline[i] for i in picked]
    return result


def _hit_from_states(namespace: Namespace, hit: SearchHit, plan: QueryPlan) -> Hit:
    """A hit explained by the index's states of the query's concepts alone (no record read):
    the same entailed_by / conflicted_by / absence_verified that explain_hit() derives from the
    record, without the evidence behind them."""
    names = namespace.vocabulary.name
    concepts = [*plan.required, *plan.forbidden]
    states = hit.states or (0,) * len(concepts)
    entailed, conflicted, _, verified = _core.explain_hit(
        hit.tier,
        len(plan.required),
        [names(c) for c in concepts],
        [(s, False, 0.0, "") for s in states],
        0.0,
        0.0,
        False,
    )
    return Hit(hit.item_id, hit.tier, hit.score, None, entailed, conflicted, [], verified)


def _strict(
    backend: Backend, namespace: Namespace, plan: QueryPlan, search, k: int, exclude: bool, explain: bool = True
) -> tuple[list[Hit], dict[str, int]]:
    """Strict for a backend that cannot search it in one call (Milvus): its two hard searches,
    merged by the core's strict merge (cpp/include/polarmem/strict_merge.hpp), the one the local
    index runs under its lock. Absence is verified from the records (explain) or from the
    index's states (no explain)."""
    forbidden = plan.forbidden
    if explain:

        def rows_of(found: SearchResult) -> list:
            return [
                (hit, record, _absence_verified(record, forbidden))
                for hit, record in with_records(backend, namespace, found.hits)
            ]
    else:

        def rows_of(found: SearchResult) -> list:
            return [(hit, None, _hit_from_states(namespace, hit, plan).absence_verified) for hit in found.hits]

    keys: dict[str, int] = {}  # the core's key for each item

    def core_rows(rows: list) -> list:
        return [
            (keys.setdefault(hit.item_id, len(keys)), hit.tier, verified, hit.confidence, hit.rank_value)
            for hit, _, verified in rows
        ]

    hard = search("hard", k, exclude)
    rows = rows_of(hard)
    hard_rows = core_rows(rows)
    merged = rows  # verified throughout (or nothing forbidden): the hard top k is strict's
    if _core.strict_needs_verified_search(bool(forbidden), hard_rows):
        more = rows_of(search("hard", k, exclude, absent_verified=True))
        verified_rows = core_rows(more)
        by_key = dict(zip([row[0] for row in hard_rows], rows))
        for key, row in zip([r[0] for r in verified_rows], more):
            by_key.setdefault(key, row)
        merged = [by_key[key] for key in _core.strict_merge(hard_rows, verified_rows, k)]
    if explain:
        out = [
            explain_hit(namespace, record, hit.tier, hit.score, plan.required, forbidden) for hit, record, _ in merged
        ]
    else:
        out = [_hit_from_states(namespace, hit, plan) for hit, _, _ in merged]
    return out, dict(hard.tier_counts)


def _absence_verified(record: records_pb2.ItemRecord, forbidden: list[int]) -> bool:
    states = {ev.concept_id: ev.state for ev in record.evidence}
    return all(states.get(c) == enums_pb2.CONCEPT_STATE_NOT_HAS for c in forbidden)


def query_search(query: RecallQuery, vectors: Mapping[str, Any], **fields: Any) -> SearchRequest:
    """A core search for `query` with its filters (kinds, metadata, space weights) and its
    exactness (approximate, ef_search), and the search's own `fields` (constraints, k, mode...):
    every search a Recall makes, in every mode, filters alike."""
    return SearchRequest(
        vectors=vectors,
        kinds=query.kinds,
        metadata_equals=query.metadata,
        weights=query.weights,
        exact=not query.approximate,
        ef_search=query.ef_search,
        **fields,
    )


def with_records(backend: Backend, namespace: Namespace, hits: Sequence[SearchHit]) -> list:
    """(hit, record) in the hits' order, the records read in one multi-get; a hit forgotten since
    the search is dropped."""
    if not hits:
        return []
    if all(hit.record is not None for hit in hits):  # the backend read them with the search
        return [(hit, hit.record) for hit in hits]
    records = backend.get_items(namespace.name, [h.item_id for h in hits])
    return [(hit, record) for hit, record in zip(hits, records) if record is not None]


def _hits(backend: Backend, namespace: Namespace, found: SearchResult, plan: QueryPlan) -> list[Hit]:
    return [
        explain_hit(namespace, record, hit.tier, hit.score, plan.required, plan.forbidden)
        for hit, record in with_records(backend, namespace, found.hits)
    ]


def render_context(
    namespace: Namespace,
    hits: list[Hit],
    budget_chars: int = DEFAULT_CONTEXT_BUDGET_CHARS,
    query_concepts: Iterable[str] = (),
    summary: str = "",
) -> str:
    """The context handed to the model: one ``[Fact Check: STATUS] content`` entry per hit in
    rank order, content cut to the per-item budget, then the item's HAS / NOT_HAS lists (the
    query's own concepts first), headed by answer mode's `summary` when there is one (a model
    reading the context alone must see it too). Rendered by the core
    (cpp/src/fact_check_context.cpp, answer_recall.cpp), as the compiled front renders it."""
    check_context_budget(budget_chars)
    names = namespace.vocabulary.name
    entries = []
    for hit in hits:
        record = hit.record
        if record is None:
            raise ValueError("render_context needs hits recalled with explanations (they carry their records)")
        evidence = record.evidence
        entries.append(
            (
                hit.answer or hit.status,
                record.text or record.uri or hit.item_id,
                [names(ev.concept_id) for ev in evidence if ev.state == enums_pb2.CONCEPT_STATE_HAS],
                [names(ev.concept_id) for ev in evidence if ev.state == enums_pb2.CONCEPT_STATE_NOT_HAS],
            )
        )
    return _core.headed_context(summary, _core.fact_check_context(entries, budget_chars, list(query_concepts)))
