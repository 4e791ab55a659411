"""Recall for agents asking questions (RecallMode.ANSWER): each note labelled by what it answers.

The paper's entailment (any one required concept HAS) suits filtering images by a few
categories; on agent notes it made every note naming the person VERIFIED, filled the context
with them and hid the note that answers. This mode gathers candidates from plain similarity to
the WHOLE question (its negated words included: they say what it is about) and from the logic
(notes holding the asked topics; notes holding a topic or a forbidden concept as NOT_HAS, which
answer "no" or state a constraint), reads each candidate's states of the question's concepts,
and lets the core label and order them (cpp/src/answer_labels.cpp: VERIFIED only when the
question's constraints are verified on that note, ANSWERS_NO, CONSTRAINT, RELATED, SUPERSEDED,
CONFLICT; the note plain similarity puts first always shown). The question's terms get
their roles here: its subject (its first proper name, or "user"), its topics (the other required concepts
and the content words no note mentions) and what it forbids; the core sets its frame words apart
("what INSTRUMENT", "called", "how long") and matches a term to a note's concept of the same stem.
"""

from __future__ import annotations

from polarmem_server import _core
from polarmem_server.domain import text as textproc
from polarmem_server.domain.namespace import Namespace
from polarmem_server.domain.query import RecallQuery
from polarmem_server.errors import InvalidArgument
from polarmem_server.library.recall import (
    STATE_SIGN,
    Hit,
    QueryPlan,
    RecallResult,
    _encoder,
    plan_query,
    query_search,
    with_records,
)
from polarmem_server.storage.backend import Backend

SUBJECT, TOPIC, FORBIDDEN, EVENT = 0, 1, 2, 3
# The share of a question's topics a note must hold as HAS to be VERIFIED, and how far a label
# moves a note from its similarity order (cpp/include/polarmem/answer_labels.hpp, AnswerRule): up
# for a verified answer, down for a contradiction. Swept on the dev splits of tests/data/agent_memory
# and tests/data/conversations (benchmarks/agent_memory_sweep.py, results/agent-memory-sweep-dev.json):
# coverage 0.5 verified more conversation evidence (51 % against 38 %) but labelled 2x more
# contradicting notes VERIFIED (7.4 % against 3.7 %), 3x more unanswerable questions and 5x more
# adversarial ones; 0.75 (one topic of four may be unstated) verified 1 more evidence note of 189
# than 1.0 at no cost on dev; a penalty of 0.1 put 1 more right note in the top 5 of 108 but let
# a contradicting note above a consistent one, which the product promises never to do.
TOPIC_COVERAGE = 0.75
VERIFIED_BONUS = 0.1
CONTRADICTION_PENALTY = 1.0
# Candidates drawn from plain similarity (at least k): enough that the logic's labels, not the
# cut-off, decide what is shown; the logic's own searches add theirs. 10 and 20 gave the same
# figures on the dev sets (benchmarks/agent_memory_sweep.py); 10 reads half the records.
SIMILAR_CANDIDATES = 10
LABEL_TIER = {"VERIFIED": 1, "ANSWERS_NO": 1, "CONSTRAINT": 1, "RELATED": 0, "SUPERSEDED": -1, "CONFLICT": -1}


def question_terms(plan: QueryPlan) -> tuple[list[tuple[int, int]], list[tuple[str, int]]]:
    """[(concept id, role)] in the question's order, and [(word, role)] for its words no concept
    names (light verbs left out: "does Jo drink coffee?" asks about coffee). The subject is the
    first proper name the parse marks among the required concepts ("does Atlas use Kafka?": Atlas;
    Kafka is a topic)."""
    subject = next((c for c in plan.parsed.subjects if c in plan.required), None) if plan.parsed else None
    concepts = [(c, SUBJECT if c == subject else TOPIC) for c in plan.required]
    concepts += [(c, FORBIDDEN) for c in plan.forbidden]
    words = [(word, TOPIC) for word in dict.fromkeys(plan.unknown) if word not in textproc.NON_CONCEPT_WORDS]
    if not words and all(role == SUBJECT for _, role in concepts):
        # "does Jo drink?": the verb is all the question asks beyond the name; no note verifies
        # it, and "no verified evidence" names it
        words = [(word, TOPIC) for word in dict.fromkeys(plan.unknown)]
    if plan.parsed:
        # What the parse gives no state in a question (its own negated event, a hedge: "when did
        # Tomasz quit smoking?", "might Carla move?") asks nothing of a filter but is still what
        # the question is about: an event (answer_labels.hpp).
        concepts += [
            (m.concept_id, EVENT) for m in plan.parsed.mentions if m.uncertain and m.concept_id not in plan.required
        ]
        words += [
            (t.word, EVENT) for t in plan.parsed.unknown if t.uncertain and t.word not in textproc.NON_CONCEPT_WORDS
        ]
    return list(dict.fromkeys(concepts)), list(dict.fromkeys(words))


def run_answer(backend: Backend, namespace: Namespace, query: RecallQuery) -> RecallResult:
    """Gathers the candidates, reads their states and records, and returns them labelled and
    ordered by the core (hits carry ``label``, ``answer`` and ``superseded_by``)."""
    vocabulary = namespace.vocabulary
    plan = plan_query(namespace, query.text, query.required, query.forbidden, query.allow_unknown_concepts)
    vectors = dict(query.vectors)
    encoder = _encoder(namespace) if "sem" not in vectors and query.text and "sem" in namespace.spaces else None
    if encoder is not None:
        vectors["sem"] = encoder.encode([query.text])[0]  # the whole question (module doc)
    if not vectors and not plan.required and not plan.forbidden:
        raise InvalidArgument("query is empty: give text, vectors, or required / forbidden concepts")
    concepts, words = question_terms(plan)
    terms: list[tuple[int | str, int]] = [*concepts, *words]
    subjects = [c for c, role in concepts if role == SUBJECT]
    topics = [c for c, role in concepts if role in (TOPIC, EVENT)]

    def search(mode: str, k: int, required: list[int], forbidden: list[int], absent_verified: bool = False):
        return backend.search(
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

    k = query.k
    similar = search("off", max(SIMILAR_CANDIDATES, k), plan.required, plan.forbidden)
    found = list(similar.hits)
    if topics:  # notes holding an asked topic, most similar first
        found += search("hard", k, topics, []).hits
    for concept in [*topics, *plan.forbidden]:  # notes holding it as NOT_HAS: a "no", a constraint
        found += search("hard", k, subjects, [concept], absent_verified=True).hits
    # once per item (every search scores the same vector, so any sighting's s_sem is the item's)
    candidates = with_records(backend, namespace, list({hit.item_id: hit for hit in found}.values()))
    named = [(vocabulary.name(c) if isinstance(c, int) else c, role) for c, role in terms]
    labelled, summary = _core.answer_question(
        query.text.encode("utf-8", "surrogatepass"),
        named,
        [(hit.item_id, _stated(vocabulary, record), hit.score, record.created_ms) for hit, record in candidates],
        k,
        TOPIC_COVERAGE,
        VERIFIED_BONUS,
        CONTRADICTION_PENALTY,
    )
    hits = []
    for index, label, answer, superseded_by, states in labelled:
        hit, record = candidates[index]
        hits.append(_hit(hit.item_id, hit.score, record, named, states, label, answer, superseded_by))
    result = RecallResult(
        hits,
        dict(similar.tier_counts),
        plan,
        [vocabulary.name(c) for c in plan.required],
        [vocabulary.name(c) for c in plan.forbidden],
        mode_used=query.mode.value,
        answer_summary=summary,
    )
    return result


def _stated(vocabulary, record) -> list[tuple[str, int]]:
    """The note's concepts with a state, by name: what the core matches the question's terms to."""
    return [(vocabulary.name(ev.concept_id), STATE_SIGN[ev.state]) for ev in record.evidence if ev.state in STATE_SIGN]


def _hit(
    item_id: str,
    score: float,
    record,
    terms: list[tuple[str, int]],
    states: list[int],
    label: str,
    answer: str,
    superseded_by: str,
) -> Hit:
    # the core's explanation of the hit (as in every other mode): the terms it asks for first,
    # then those it forbids
    order = sorted(range(len(terms)), key=lambda i: terms[i][1] == FORBIDDEN)
    asked = sum(role != FORBIDDEN for _, role in terms)
    entailed, conflicted, _, verified = _core.explain_hit(
        LABEL_TIER[label],
        asked,
        [terms[i][0] for i in order],
        [(states[i], False, 0.0, "") for i in order],
        0.0,
        0.0,
        False,
    )
    return Hit(
        item_id,
        LABEL_TIER[label],
        score,
        record,
        entailed,
        conflicted,
        [],
        verified,
        label=label,
        answer=answer,
        superseded_by=superseded_by,
    )
