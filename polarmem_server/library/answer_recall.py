"""Recall for agents asking questions (RecallMode.ANSWER): each note labelled by what it answers.

The core decides it (cpp/include/polarmem/answer_recall.hpp, which the compiled front calls
too): the question's terms and their roles, the searches that gather the candidates (plain
similarity to the whole question, notes holding the asked topics, notes holding a topic or a
forbidden concept as NOT_HAS), the labels and order (VERIFIED only when the question's
constraints are verified on that note, ANSWERS_NO, CONSTRAINT, RELATED, SUPERSEDED, CONFLICT;
the note plain similarity puts first always shown) and each note's explanation. Here: the
question's parse and binding (recall.py plan_query), its embedding, and the searches and record
reads the core asks for, through whichever backend holds the namespace.
"""

from __future__ import annotations

from polarmem_server import _core
from polarmem_server.domain.namespace import Namespace
from polarmem_server.domain.query import RecallQuery
from polarmem_server.errors import InvalidArgument
from polarmem_server.library.recall import (
    STATE_SIGN,
    Hit,
    RecallResult,
    _encoder,
    plan_query,
    query_search,
)
from polarmem_server.storage.backend import Backend

# The rule the core runs (cpp/include/polarmem/answer_recall.hpp kAgentRule says how it was
# chosen). benchmarks/agent_memory_sweep.py sweeps other values through these names in process;
# the compiled front always runs kAgentRule, so a server never changes them.
TOPIC_COVERAGE, VERIFIED_BONUS, CONTRADICTION_PENALTY = _core.AGENT_RULE


def run_answer(backend: Backend, namespace: Namespace, query: RecallQuery) -> RecallResult:
    """The notes the core shows for the question, labelled and ordered (hits carry ``label``,
    ``answer`` and ``superseded_by``), read through `backend`."""
    vocabulary = namespace.vocabulary
    plan = plan_query(namespace, query.text, query.required, query.forbidden, query.allow_unknown_concepts)
    vectors = dict(query.vectors)
    encoder = _encoder(namespace) if "sem" not in vectors and query.text and "sem" in namespace.spaces else None
    if encoder is not None:
        vectors["sem"] = encoder.encode([query.text])[0]  # the whole question (its negated words say what it is about)
    if not vectors and not plan.required and not plan.forbidden:
        raise InvalidArgument("query is empty: give text, vectors, or required / forbidden concepts")
    parsed = plan.parsed
    records: list = []  # those of the ids the core asked for, in order
    with_search: dict = {}  # records a backend read with its search (by id)

    def search(mode: str, k: int, required: list[int], forbidden: list[int], absent_verified: bool):
        found = backend.search(
            namespace.name,
            query_search(
                query,
                vectors,
                required=required,
                forbidden=forbidden,
                k=k,
                mode=mode,
                absent_verified=absent_verified,
                with_records=True,
            ),
        )
        with_search.update((hit.item_id, hit.record) for hit in found.hits if hit.record is not None)
        tiers = found.tier_counts
        return [(hit.item_id, hit.score) for hit in found.hits], (
            tiers["conflict"],
            tiers["neutral"],
            tiers["entailed"],
        )

    def read(ids: list[str]) -> list:
        if all(item_id in with_search for item_id in ids):
            records[:] = [with_search[item_id] for item_id in ids]
        else:  # one multi-get for all of them
            records[:] = backend.get_items(namespace.name, ids) if ids else []
        return [None if record is None else (record.created_ms, _stated(vocabulary, record)) for record in records]

    def named(concepts) -> list[tuple[int, str]]:
        return [(c, vocabulary.name(c)) for c in concepts]

    shown, summary, (conflict, neutral, entailed) = _core.answer_recall(
        query.text.encode("utf-8", "surrogatepass"),
        named(plan.required),
        named(plan.forbidden),
        parsed.subjects if parsed else [],
        plan.unknown,
        named(m.concept_id for m in parsed.mentions if m.uncertain) if parsed else [],
        [t.word for t in parsed.unknown if t.uncertain] if parsed else [],
        query.k,
        search,
        read,
        TOPIC_COVERAGE,
        VERIFIED_BONUS,
        CONTRADICTION_PENALTY,
    )
    hits = [
        Hit(
            records[index].id,
            tier,
            similarity,
            records[index],
            entailed_by,
            conflicted_by,
            [],
            absence_verified,
            label=label,
            answer=answer,
            superseded_by=superseded_by,
        )
        for index, similarity, tier, label, answer, superseded_by, entailed_by, conflicted_by, absence_verified in shown
    ]
    return RecallResult(
        hits,
        {"conflict": conflict, "neutral": neutral, "entailed": entailed},
        plan,
        [vocabulary.name(c) for c in plan.required],
        [vocabulary.name(c) for c in plan.forbidden],
        mode_used=query.mode.value,
        answer_summary=summary,
    )


def _stated(vocabulary, record) -> list[tuple[str, int]]:
    """The note's concepts with a state, by name: what the core matches the question's terms to."""
    return [(vocabulary.name(ev.concept_id), STATE_SIGN[ev.state]) for ev in record.evidence if ev.state in STATE_SIGN]
