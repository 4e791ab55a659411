"""One Recall in a namespace (library layer; Memory.recall is this function): checks the query,
lets an open vocabulary learn the phrases it names, runs it (recall.py) and catches up once with
concepts other processes bound meanwhile."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from polarmem_server.library import answer_recall, concept_backfill
from polarmem_server.domain.namespace import Namespace
from polarmem_server.domain.query import RecallMode, recall_query
from polarmem_server.domain.rule_choice import confidence_in_force
from polarmem_server.errors import FailedPrecondition, InvalidArgument, quoted
from polarmem_server.library.recall import RecallResult, UnknownConcepts, run_recall
from polarmem_server.library.writes import Writer


class MemoryView(Protocol):
    """What recall needs of the Memory it is a method of (memory.py imports this module)."""

    writer: Writer

    def namespace(self, name: str) -> Namespace: ...


def recall(
    memory: MemoryView,
    ns: str,
    text: str = "",
    *,
    vectors: Mapping[str, Any] | None = None,
    required: Iterable[str] | None = None,
    forbidden: Iterable[str] | None = None,
    k: int = 10,
    mode: str | None = None,
    soft_lambda: float = 1.0,
    exclude_conflicts: bool = False,
    kinds: Iterable[str] | None = None,
    metadata: Mapping[str, str] | None = None,
    weights: Mapping[str, float] | None = None,
    suppressed_k: int = 0,
    explain: bool = True,
    allow_unknown_concepts: bool = False,
    approximate: bool = False,
    ef_search: int = 0,
    rank_by_confidence: bool | None = None,
    recency_half_life_s: float | None = None,
    recency_weight: float | None = None,
) -> RecallResult:
    """Lexicographic recall (recall.py documents query planning and the modes). `mode` None
    or "": the namespace's rule (Namespace.rule: `hard` unless partitioner "auto" chose
    otherwise), said in the result's mode_reason. `explain`
    False: hits carry what the index knows (id, tier, score, the query concepts' states)
    and no stored record is read. Explicit names the vocabulary lacks are InvalidArgument
    unless `allow_unknown_concepts` (then skipped, in result.plan.unknown_concepts).
    `approximate`: the namespace's approximate index (settings.ann) orders each large tier,
    with `ef_search` candidates (0 = its own); FailedPrecondition where it has none.
    `rank_by_confidence`: None follows the namespace's rule when it runs (no mode named);
    True / False turn confidence ranking within tiers on / off (rule_choice.confidence_in_force).
    `recency_half_life_s` (> 0 seconds) / `recency_weight` (default 0.1, in [0, 1]): the opt-in
    recency term within tiers, modes hard and off only (recall.py)."""
    writer, namespace = memory.writer, memory.namespace(ns)
    if approximate and namespace.settings.ann is None:
        raise FailedPrecondition(
            f"approximate: namespace {quoted(ns)} has no approximate index (config.ann is "
            "set at creation); drop approximate or create a namespace with one"
        )
    rule = namespace.rule if not mode else None  # no mode named: the namespace's rule
    recall_mode = rule.recall_mode if rule is not None else mode
    assert recall_mode is not None  # rule is None only where a mode is named
    try:
        ranking = confidence_in_force(namespace.rule.rule, rule is not None, rank_by_confidence, mode)
    except ValueError as exc:
        raise InvalidArgument(str(exc)) from None
    required = None if required is None else list(required)  # read twice below
    forbidden = None if forbidden is None else list(forbidden)
    query = recall_query(
        namespace.spaces,
        text,
        vectors,
        required,
        forbidden,
        k,
        recall_mode,
        soft_lambda,
        exclude_conflicts,
        kinds,
        metadata,
        weights,
        suppressed_k,
        allow_unknown_concepts,
        approximate,
        ef_search,
        ranking,
        recency_half_life_s,
        recency_weight,
    )
    # A replica (--processes) learns nothing: the phrase stays unknown there until the primary
    # learns it (docs/agents.md, open vocabulary).
    if namespace.settings.open_vocabulary and (required or forbidden) and not writer.backend.read_only:
        names = [name for name in [*(required or ()), *(forbidden or ())] if isinstance(name, str)]
        concept_backfill.learn_names(writer, namespace, names)

    def run() -> RecallResult:
        if query.mode == RecallMode.ANSWER:  # labelled for a question (answer_recall.py): always explained
            return answer_recall.run_answer(writer.backend, namespace, query)
        rule_words = rule.words if rule is not None else ""
        return run_recall(writer.backend, namespace, query, explain=explain, rule_words=rule_words)

    try:
        result = run()
    except UnknownConcepts:
        # An explicit name unknown here may have been bound by another process since: catch up
        # once and ask again; still unknown, the same error.
        if not writer.catch_up(namespace):
            raise
        result = run()
    if (result.plan.unknown or result.plan.unknown_concepts) and writer.catch_up(namespace):
        result = run()
    writer.know_concepts_of(namespace, [hit.record for hit in [*result.hits, *result.suppressed]])
    return result
