"""The recall pipeline (DESIGN.md steps 5-6): query planning, the four modes, explanations,
suppressed items and the fact-checked context. Planning (binding names, parsing, encoding) is
here; the modes, explanations and mode_reason are the core's Recall run
(cpp/include/polarmem/recall_run.hpp), which the compiled front runs too: this module hands it
the backend's searches and the hits' records.

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
  does that in one call under one lock (``SearchRequest.mode`` "strict"); a backend without
  ``searches_strict`` (Milvus) has its two searches merged by the same core merge
  (cpp/include/polarmem/strict_merge.hpp), which the Recall run calls.
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
  are returned. The core decides it (``mode_rules.hpp``, ``kAdaptiveMargin``).

Recency (opt-in, ``hard`` and ``off``): with ``RecallQuery.recency_half_life_s`` items rank
within each tier by s_sem + recency_weight x 2^(-age / half-life); the core finds that top k
exactly (recency.hpp).
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
from polarmem_server.index import MAX_TOP_K
from polarmem_server.library import writes
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
from polarmem_server.storage.backend import Backend, SearchHit, SearchRequest

STATUS = {1: "VERIFIED", 0: "NEUTRAL", -1: "CONFLICT"}
# mode_reason's words where the namespace's ranking asks for confidence and the backend keeps none
CONFIDENCE_NOT_APPLIED = "confidence ranking not applied: this backend keeps no confidence grades"
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
# The most candidates the recency term reads before it says its top k is not proven exact.
RECENCY_MAX_CANDIDATES = MAX_TOP_K


def cited_evidence(record: records_pb2.ItemRecord, concepts: Sequence[int]) -> list[tuple[int, bool, float, str]]:
    """Per query concept, the record's state and the evidence behind it, as the core cites it
    (state, scored, mean P(Yes), source); no entry: no state."""
    by_concept = {ev.concept_id: ev for ev in record.evidence}
    cited = []
    for c in concepts:
        ev = by_concept.get(c)
        cited.append(
            _NO_STATE if ev is None else (STATE_SIGN.get(ev.state, 0), len(ev.template_scores) > 0, ev.mean, ev.source)
        )
    return cited


def _states_of(hit: SearchHit, concepts: int) -> list[tuple[int, bool, float, str]]:
    """The query concepts' states the search reported for a hit, as the core cites them."""
    return [(state, False, 0.0, "") for state in (hit.states or (0,) * concepts)]


def run_recall(
    backend: Backend, namespace: Namespace, query: RecallQuery, explain: bool = True, rule_words: str = ""
) -> RecallResult:
    """Plans a checked query and runs it: the core decides the rest (recall_run.hpp: adaptive's
    choice, the chosen mode's searches, strict's merge, the recency term, suppressed hits, every
    hit's explanation and mode_reason), calling back for the backend's searches and the hits'
    records. `rule_words` ("<mode> (<why>)"): the namespace's rule chose the mode.

    With ``explain`` false nothing is read back from storage: each hit's tier, score, the query
    concepts' states and absence_verified come from the search itself, and ``Hit.record`` is
    None, ``reasons`` empty (no p, τ, δ). With it true the hits' records are read (one
    multi-get per search, each record once per Recall) and explained."""
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
    required = [vocabulary.name(c) for c in plan.required]
    forbidden = [vocabulary.name(c) for c in plan.forbidden]
    concepts = [*plan.required, *plan.forbidden]
    # Without explanations the states of the query's concepts come from the index, not records.
    states = not explain and bool(concepts)
    # Confidence ranks within tiers: the hard searches only (soft and off have no tiers).
    ranking = query.confidence
    honoured = ranking.used and backend.ranks_by_confidence
    present_level = confidence.present_level(ranking.present_above) if honoured else 0
    absent_level = confidence.absent_level(ranking.absent_below) if honoured else 0
    confidence_words = ""
    if ranking.used:
        confidence_words = describe_confidence(ranking) if honoured else CONFIDENCE_NOT_APPLIED
    hits_by_id: dict[str, SearchHit] = {}  # every hit searched, the last search's first
    records: dict[str, records_pb2.ItemRecord] = {}  # every record read

    def search(mode: _core.SearchMode, k: int, exclude_conflicts: bool, absent_verified: bool, ranked: bool):
        ranked = ranked and honoured
        found = backend.search(
            namespace.name,
            query_search(
                query,
                vectors,
                required=plan.required,
                forbidden=plan.forbidden,
                k=k,
                mode=mode.name,
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
        hits_by_id.update((hit.item_id, hit) for hit in found.hits)
        tiers = found.tier_counts
        return [(h.item_id, h.tier, h.score, h.confidence, h.rank_value) for h in found.hits], (
            tiers["conflict"],
            tiers["neutral"],
            tiers["entailed"],
        )

    Evidence = tuple[list[tuple[int, bool, float, str]], float, float, "int | None"]

    def read(ids: list[str], stamps: bool) -> list[Evidence | None]:
        """Per id what the core's run reads of the hit: None when it was forgotten since the
        search; the evidence from its record when explained, else the search's states; with
        `stamps` (the recency term's candidates) its stamp, from its record."""
        reads_records = explain or stamps
        if reads_records:
            wanted = [i for i in ids if i not in records]
            carried = [hits_by_id[i].record for i in wanted]
            if wanted and any(record is None for record in carried):
                carried = backend.get_items(namespace.name, wanted)
            records.update((i, r) for i, r in zip(wanted, carried) if r is not None)
        out: list[Evidence | None] = []
        for item_id in ids:
            record = records.get(item_id) if reads_records else None
            if reads_records and record is None:
                out.append(None)  # forgotten since the search
                continue
            stamp = (record.updated_ms or record.created_ms) if stamps and record is not None else None
            if explain and record is not None:
                partition = record.partition
                out.append((cited_evidence(record, concepts), partition.tau, partition.delta, stamp))
            else:
                out.append((_states_of(hits_by_id[item_id], len(concepts)), 0.0, 0.0, stamp))
        return out

    recency = query.recency_half_life_s
    certain = plan.explicit
    hits, suppressed, (conflict, neutral, entailed), mode_used, mode_reason = _core.run_recall(
        mode=_core.SearchMode.hard
        if query.mode == RecallMode.ADAPTIVE
        else _core.SearchMode.__members__[query.mode.value],
        adaptive=query.mode == RecallMode.ADAPTIVE,
        unknown=[] if certain else plan.unknown,
        mapped=[] if certain else [phrase for phrase, _, _ in plan.mapped],
        similarity=bool(vectors),
        k=query.k,
        exclude_conflicts=query.exclude_conflicts,
        suppressed_k=query.suppressed_k,
        recency=None if recency is None else (recency, query.recency_weight),
        now_ms=writes.now_ms(),
        explain=explain,
        concept_names=[*required, *forbidden],
        required_count=len(required),
        metadata_filtered=bool(query.metadata),
        confidence_words=confidence_words,
        rule_words=rule_words,
        searches_strict=backend.searches_strict,
        search=search,
        read=read,
        max_candidates=RECENCY_MAX_CANDIDATES,
    )

    def hit_of(row) -> Hit:
        item_id, tier, score, entailed_by, conflicted_by, reasons, verified = row
        return Hit(
            item_id,
            tier,
            score,
            records.get(item_id) if explain else None,
            entailed_by,
            conflicted_by,
            reasons,
            verified,
        )

    return RecallResult(
        [hit_of(row) for row in hits],
        {"conflict": conflict, "neutral": neutral, "entailed": entailed},
        plan,
        required,
        forbidden,
        mode_used=mode_used.name,
        mode_reason=mode_reason,
        suppressed=[hit_of(row) for row in suppressed],
    )


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
