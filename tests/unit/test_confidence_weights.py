"""Confidence weights within tiers in the compiled index (issue 18), against a numpy reference.

Random items with states, confidences (some missing) and vectors (Hypothesis draws sizes, weights,
flags, constraints and filters): a hard-mode request with present_weight / absent_weight must
return exactly the top k of (tier, flags, s_sem + w_present x mean P(present) of the required
concepts - w_absent x mean P(present) of the forbidden ones, slot), with P kept as a byte (b / 254)
and a concept without a confidence counting 1 / 0 / 0.5 for a stated HAS / NOT_HAS / neither.
Scores stay s_sem; rank_scores carry the ranked value; soft and off refuse weights; the strict
merge of recall.py ranks by the same value."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polarmem_server.index import CONFIDENCE_LEVELS, GradeCSR, Index, InvalidArgumentError, SpaceSpec

DIM = 6
VOCAB = 5


def build(n: int, seed: int):
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    states = rng.choice([1, -1, 0, 0], size=(n, VOCAB))
    grades = rng.integers(-CONFIDENCE_LEVELS, CONFIDENCE_LEVELS + 1, size=(n, VOCAB)).astype(np.int8)
    confidence = rng.random((n, VOCAB))
    confidence[rng.random((n, VOCAB)) < 0.3] = np.nan  # not scored: the stated polarity stands in
    index = Index([SpaceSpec("vis", DIM)], threads=2)
    index.ensure_concepts(VOCAB)
    indptr = np.arange(0, n * VOCAB + 1, VOCAB, dtype=np.int64)
    ids = np.tile(np.arange(VOCAB, dtype=np.uint32), n)
    index.add(
        n,
        {"vis": vectors},
        has=[np.flatnonzero(s == 1) for s in states],
        not_has=[np.flatnonzero(s == -1) for s in states],
        grades=GradeCSR(indptr, ids, grades.ravel(), confidence.ravel()),
    )
    return index, states, grades, confidence


def exact_scores(index, n, q):
    hits = index.search({"vis": q}, k=n, mode="off")
    scores = np.empty(n, np.float32)
    scores[hits.slots] = hits.scores
    return scores


def term(states, confidence, slot, concepts, weight):
    """weight x mean confidence over `concepts`, in float32 as the core sums (integer bytes, one scale)."""
    if not concepts or not weight:
        return np.float32(0)
    total = 0
    for c in concepts:
        p = confidence[slot][c]
        total += (
            int(np.rint(p * 254))
            if not np.isnan(p)
            else (254 if states[slot][c] == 1 else 0 if states[slot][c] == -1 else 127)
        )
    return np.float32(np.float32(weight) / np.float32(len(concepts))) * np.float32(np.float32(total) / np.float32(254))


def reference(
    states, grades, confidence, scores, required, forbidden, k, w_present, w_absent, present_level=0, absent_level=0
):
    rows = []
    for slot in range(len(scores)):
        s = states[slot]
        conflict = any(s[c] == -1 for c in required) or any(s[c] == 1 for c in forbidden)
        tier = -1 if conflict else (1 if any(s[c] == 1 for c in required) else 0)
        absent = absent_level > 0 and bool(forbidden) and all(grades[slot][c] <= -absent_level for c in forbidden)
        present = present_level > 0 and bool(required) and all(grades[slot][c] >= present_level for c in required)
        value = np.float32(0) + term(states, confidence, slot, required, w_present)
        value = value - term(states, confidence, slot, forbidden, w_absent)
        rank = (
            np.float32(scores[slot] + value) if (w_present and required) or (w_absent and forbidden) else scores[slot]
        )
        rows.append(((-tier, -(2 * absent + present), -rank, slot), slot, rank))
    rows.sort()
    return [slot for _, slot, _ in rows[:k]], [rank for _, _, rank in rows[:k]]


concept_sets = st.lists(st.integers(0, VOCAB - 1), max_size=3, unique=True)
weights = st.sampled_from([0.0, 0.05, 0.4, 0.6, 1.0, 2.5])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 300),
    seed=st.integers(0, 10_000),
    required=concept_sets,
    forbidden=concept_sets,
    k=st.integers(1, 60),
    w_present=weights,
    w_absent=weights,
    level=st.integers(0, CONFIDENCE_LEVELS),
)
def test_hard_with_weights_matches_reference(n, seed, required, forbidden, k, w_present, w_absent, level):
    forbidden = [c for c in forbidden if c not in required]
    index, states, grades, confidence = build(n, seed)
    q = np.random.default_rng(seed + 1).standard_normal(DIM).astype(np.float32)
    scores = exact_scores(index, n, q)
    hits = index.search(
        {"vis": q},
        required,
        forbidden,
        k=k,
        present_weight=w_present,
        absent_weight=w_absent,
        present_level=level,
        absent_level=level,
    )
    slots, ranks = reference(
        states, grades, confidence, scores, required, forbidden, k, w_present, w_absent, level, level
    )
    assert hits.slots.tolist() == slots
    assert hits.scores.tolist() == scores[hits.slots].tolist()  # reported scores stay s_sem
    if (w_present and required) or (w_absent and forbidden):  # a weight with no concept on its side adds nothing
        assert hits.rank_scores.tolist() == pytest.approx([float(r) for r in ranks], abs=1e-6)
    else:
        assert len(hits.rank_scores) == 0


def test_weights_reorder_within_tiers_and_need_hard_mode():
    index, states, grades, confidence = build(400, 5)
    q = np.ones(DIM, np.float32)
    plain = index.search({"vis": q}, [0], [1], k=100)
    weighted = index.search({"vis": q}, [0], [1], k=100, present_weight=3.0, absent_weight=3.0)
    assert plain.slots.tolist() != weighted.slots.tolist()
    assert plain.tiers.tolist() == weighted.tiers.tolist() and plain.tier_counts == weighted.tier_counts
    for mode in ("soft", "off"):
        with pytest.raises(
            InvalidArgumentError, match="present_weight: confidence weights order items within logic tiers"
        ):
            index.search({"vis": q}, [0], [1], mode=mode, present_weight=0.5)
    for bad in (-0.5, float("nan"), float("inf"), True):
        with pytest.raises(InvalidArgumentError, match="absent_weight must be a finite number >= 0"):
            index.search({"vis": q}, [0], [1], absent_weight=bad)


def test_bad_confidences_name_the_field_and_change_nothing():
    index, *_ = build(30, 2)
    q = np.ones(DIM, np.float32)
    before = index.search({"vis": q}, [0], [1], k=30, present_weight=0.6, absent_weight=0.4)
    one = (np.array([0, 1]), np.array([0], np.uint32), np.array([1], np.int8))
    with pytest.raises(InvalidArgumentError, match="confidence must be a probability in \\[0, 1\\]"):
        index.set_concepts([3], [[0]], [[]], GradeCSR(*one, np.array([1.5])))
    with pytest.raises(InvalidArgumentError, match="confidence must be floats, one per concept id"):
        index.set_concepts([3], [[0]], [[]], GradeCSR(*one, np.array([0.2, 0.3])))
    after = index.search({"vis": q}, [0], [1], k=30, present_weight=0.6, absent_weight=0.4)
    assert after.slots.tolist() == before.slots.tolist() and after.rank_scores.tolist() == before.rank_scores.tolist()


def test_replacing_states_without_confidences_forgets_the_old_ones():
    index, states, grades, confidence = build(50, 9)
    q = np.ones(DIM, np.float32)
    index.set_concepts(
        np.arange(50), [np.flatnonzero(s == 1) for s in states], [np.flatnonzero(s == -1) for s in states]
    )
    cleared = confidence.copy()
    cleared[:] = np.nan
    hits = index.search({"vis": q}, [0], [1], k=50, present_weight=1.0, absent_weight=1.0)
    slots, _ = reference(states, np.zeros_like(grades), cleared, exact_scores(index, 50, q), [0], [1], 50, 1.0, 1.0)
    assert hits.slots.tolist() == slots
