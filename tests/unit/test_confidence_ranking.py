"""Confidence flags within tiers in the compiled index (issue 18), against a numpy reference.

Random items with states, graded confidence and vectors (Hypothesis draws sizes, grades, levels,
constraints and filters): a hard-mode request with present_level / absent_level must return
exactly the top k of (tier, every forbidden concept confidently absent, every required concept
confidently present, s_sem, slot); soft and off refuse levels and, like hard without them, rank
exactly as an index that holds no grades. Also the grid (domain/confidence.py), the index record
that carries the means, and the backend's grader (mean for Otsu, posterior for calibrated)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polarmem.storage.v1 import records_pb2
from polarmem_server.domain import confidence as grid
from polarmem_server.domain.mixtures import BetaMixture, calibration_fields
from polarmem_server.domain.query import RecallMode, ranking_refusal
from polarmem_server.domain.confidence import NO_CONFIDENCE, ConfidenceRanking
from polarmem_server.domain.rule_choice import DEFAULT_CONFIDENCE, Rule, confidence_in_force
from polarmem_server.index import CONFIDENCE_LEVELS, GradeCSR, Index, InvalidArgumentError, SpaceSpec
from polarmem_server.storage.local.confidence import ConfidenceGrader
from polarmem_server.storage.local.index_record import decode_index_records, index_record

DIM = 6
VOCAB = 5


def build(n: int, seed: int, with_grades: bool = True):
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    states = rng.choice([1, -1, 0, 0], size=(n, VOCAB))
    grades = rng.integers(-CONFIDENCE_LEVELS, CONFIDENCE_LEVELS + 1, size=(n, VOCAB))
    kinds = np.where(np.arange(n) % 3 == 0, 2, 1).astype(np.uint8)
    index = Index([SpaceSpec("vis", DIM)], threads=2)
    index.ensure_concepts(VOCAB)
    index.add(
        n,
        {"vis": vectors},
        has=[np.flatnonzero(s == 1) for s in states],
        not_has=[np.flatnonzero(s == -1) for s in states],
        kinds=kinds,
        grades=[{c: int(g[c]) for c in range(VOCAB) if g[c]} for g in grades] if with_grades else None,
    )
    return index, vectors, states, grades, kinds


def reference(
    vectors,
    states,
    grades,
    kinds,
    query,
    required,
    forbidden,
    k,
    present_level,
    absent_level,
    mode="hard",
    allow=None,
    kind_mask=0,
    exclude=False,
):
    """Slots in the order the request defines, computed row by row in numpy."""
    # s_sem as the core computes it (float32 dot of normalised rows), read back from an off search
    rows = []
    for slot in range(len(vectors)):
        if kind_mask and kinds[slot] != kind_mask:
            continue
        if allow is not None and slot not in allow:
            continue
        s = states[slot]
        conflict = any(s[c] == -1 for c in required) or any(s[c] == 1 for c in forbidden)
        tier = -1 if conflict else (1 if any(s[c] == 1 for c in required) else 0)
        if conflict and exclude:
            continue
        absent = absent_level > 0 and bool(forbidden) and all(grades[slot][c] <= -absent_level for c in forbidden)
        present = present_level > 0 and bool(required) and all(grades[slot][c] >= present_level for c in required)
        score = query[slot]
        if mode == "hard":
            key = (-tier, -(2 * absent + present), -score, slot)
        elif mode == "soft":
            key = (-(score + np.float32(tier)), slot)
        else:
            key = (-score, slot)
        rows.append((key, slot))
    rows.sort()
    return [slot for _, slot in rows[:k]]


def exact_scores(index, n, q):
    hits = index.search({"vis": q}, k=n, mode="off")
    scores = np.empty(n, np.float32)
    scores[hits.slots] = hits.scores
    return scores


concept_sets = st.lists(st.integers(0, VOCAB - 1), max_size=3, unique=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 300),
    seed=st.integers(0, 10_000),
    required=concept_sets,
    forbidden=concept_sets,
    k=st.integers(1, 60),
    present_level=st.integers(0, CONFIDENCE_LEVELS),
    absent_level=st.integers(0, CONFIDENCE_LEVELS),
    kind_mask=st.sampled_from([0, 1, 2]),
    exclude=st.booleans(),
    use_allow=st.booleans(),
)
def test_hard_with_levels_matches_reference(
    n, seed, required, forbidden, k, present_level, absent_level, kind_mask, exclude, use_allow
):
    forbidden = [c for c in forbidden if c not in required]
    index, vectors, states, grades, kinds = build(n, seed)
    q = np.random.default_rng(seed + 1).standard_normal(DIM).astype(np.float32)
    allow = np.arange(0, n, 2) if use_allow else None
    kinds_arg = {0: None, 1: ["visual"], 2: ["text"]}[kind_mask]
    hits = index.search(
        {"vis": q},
        required,
        forbidden,
        k=k,
        present_level=present_level,
        absent_level=absent_level,
        kinds=kinds_arg,
        allow=allow,
        exclude_conflicts=exclude,
    )
    expected = reference(
        vectors,
        states,
        grades,
        kinds,
        exact_scores(index, n, q),
        required,
        forbidden,
        k,
        present_level,
        absent_level,
        allow=None if allow is None else set(allow.tolist()),
        kind_mask=kind_mask,
        exclude=exclude,
    )
    assert hits.slots.tolist() == expected
    if present_level or absent_level:
        for slot, flags in zip(hits.slots.tolist(), hits.confidence.tolist()):
            absent = absent_level > 0 and bool(forbidden) and all(grades[slot][c] <= -absent_level for c in forbidden)
            present = present_level > 0 and bool(required) and all(grades[slot][c] >= present_level for c in required)
            assert flags == 2 * absent + present
    else:
        assert len(hits.confidence) == 0


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 200),
    seed=st.integers(0, 10_000),
    mode=st.sampled_from(["hard", "soft", "off"]),
    required=concept_sets,
    forbidden=concept_sets,
    k=st.integers(1, 40),
)
def test_without_levels_every_mode_ranks_as_an_index_without_grades(n, seed, mode, required, forbidden, k):
    forbidden = [c for c in forbidden if c not in required]
    graded = build(n, seed)
    bare = build(n, seed, with_grades=False)
    q = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    a = graded[0].search({"vis": q}, required, forbidden, k=k, mode=mode)
    b = bare[0].search({"vis": q}, required, forbidden, k=k, mode=mode)
    assert a.slots.tolist() == b.slots.tolist() and a.scores.tolist() == b.scores.tolist()
    assert a.tier_counts == b.tier_counts and a.scored == b.scored
    index, vectors, states, grades, kinds = graded
    assert a.slots.tolist() == reference(
        vectors, states, grades, kinds, exact_scores(index, n, q), required, forbidden, k, 0, 0, mode=mode
    )


@pytest.mark.parametrize("mode", ["soft", "off"])
def test_levels_need_hard_mode(mode):
    index = build(20, 1)[0]
    with pytest.raises(InvalidArgumentError, match="present_level.*use mode 'hard'"):
        index.search({"vis": np.ones(DIM)}, [0], [1], mode=mode, present_level=1)
    with pytest.raises(InvalidArgumentError, match="absent_level must be an integer in \\[0, 3\\]"):
        index.search({"vis": np.ones(DIM)}, [0], [1], absent_level=4)


def test_bad_grades_name_the_field_and_change_nothing():
    index, *_ = build(30, 2)
    q = np.ones(DIM, np.float32)
    before = index.search({"vis": q}, [0], [1], k=30, present_level=1, absent_level=1)
    with pytest.raises(InvalidArgumentError, match="grades: each grade must be an integer in \\[-3, 3\\]"):
        index.set_concepts([3], [[0]], [[]], [{0: 5}])
    with pytest.raises(InvalidArgumentError, match="graded twice"):
        index.set_concepts(
            [3], [[0]], [[]], GradeCSR(np.array([0, 2]), np.array([1, 1], np.uint32), np.array([1, -1], np.int8))
        )
    with pytest.raises(InvalidArgumentError, match="grades: expected one mapping per item"):
        index.add(2, {"vis": np.ones((2, DIM), np.float32)}, grades=[{0: 1}])
    after = index.search({"vis": q}, [0], [1], k=30, present_level=1, absent_level=1)
    assert after.slots.tolist() == before.slots.tolist() and after.confidence.tolist() == before.confidence.tolist()
    assert index.size == 30


def test_grid_grades_and_levels():
    assert grid.grades(np.array([0.995, 0.96, 0.91, 0.5, 0.09, 0.02, 0.005])).tolist() == [3, 2, 1, 0, -1, -2, -3]
    assert (grid.present_level(None), grid.present_level(0.9), grid.present_level(0.99)) == (0, 1, 3)
    assert (grid.absent_level(0.1), grid.absent_level(0.01)) == (1, 3)
    with pytest.raises(ValueError, match="not a level of the index's grid"):
        grid.present_level(0.8)


def _record(means, method="otsu", item_id="a"):
    evidence = [records_pb2.ConceptEvidence(concept_id=c, template_scores=[m, m], mean=m) for c, m in means.items()]
    return records_pb2.ItemRecord(id=item_id, evidence=evidence, partition=records_pb2.PartitionRecord(method=method))


def test_index_record_carries_means_and_old_layout_still_reads():
    records = [_record({0: 0.97, 3: 0.02}), records_pb2.ItemRecord(id="b"), _record({1: 0.5}, "calibrated")]
    batch = decode_index_records([index_record(r.SerializeToString()) for r in records])
    assert batch.scored_indptr.tolist() == [0, 2, 2, 3] and batch.scored_ids.tolist() == [0, 3, 1]
    assert batch.scored_means.tolist() == pytest.approx([0.97, 0.02, 0.5])
    assert batch.posterior.tolist() == [False, False, True]
    # a layout 1 record (no means) is read, with no grades
    old = bytearray(index_record(records_pb2.ItemRecord(id="c").SerializeToString()))
    old[0] = 1
    assert decode_index_records([bytes(old)]).scored_ids.tolist() == []


def test_grader_uses_means_for_otsu_and_the_posterior_for_calibrated():
    model = BetaMixture((6.0, 1.5), (1.5, 6.0), 0.1, fitted_on=1000)
    calibrated = records_pb2.NamespaceRecord(
        name="n", calibration=records_pb2.CalibrationRecord(**calibration_fields(model))
    )
    names = lambda: ["dog", "cat", "car", "bus"]  # noqa: E731
    otsu_item, posterior_item = _record({0: 0.96, 1: 0.02}), _record({0: 0.96, 1: 0.02}, "calibrated")
    plain = ConfidenceGrader(records_pb2.NamespaceRecord(name="n"), names)
    assert plain.record(otsu_item.SerializeToString()).grades.tolist() == [2, -2]
    assert plain.record(posterior_item.SerializeToString()).grades.tolist() == [2, -2]  # no model yet: the mean
    graded = ConfidenceGrader(calibrated, names).record(posterior_item.SerializeToString())
    posterior = model.posterior(np.array([0.96, 0.02]), np.array([0.1, 0.1]))
    assert graded.grades.tolist() == grid.grades(posterior).tolist()
    assert graded.confidence.tolist() == pytest.approx(posterior.tolist())  # the weights read the posterior too
    assert ConfidenceGrader(calibrated, names).record(otsu_item.SerializeToString()).grades.tolist() == [2, -2]


def test_rule_confidence_in_force_and_query_checks():
    plain, flagged = Rule("otsu", "strict"), Rule("otsu", "strict", confidence=ConfidenceRanking(present_above=0.9))
    weighted = Rule("otsu", "strict", confidence=ConfidenceRanking(present_weight=0.6, absent_weight=0.4))
    assert confidence_in_force(flagged, True, None) == ConfidenceRanking(present_above=0.9)
    assert confidence_in_force(flagged, False, None, "strict") == NO_CONFIDENCE  # a named mode: not the rule's
    assert confidence_in_force(plain, False, True, "hard") == DEFAULT_CONFIDENCE
    assert confidence_in_force(flagged, True, False) == NO_CONFIDENCE
    assert confidence_in_force(weighted, True, None) == ConfidenceRanking(present_weight=0.6, absent_weight=0.4)
    assert confidence_in_force(weighted, False, True, "hard").used
    # the words the core refuses such a combination in (handed over with the namespace's view)
    hard, soft, off = RecallMode.HARD, RecallMode.SOFT, RecallMode.OFF
    assert "present_weight must be a finite number >= 0" in ranking_refusal(
        ConfidenceRanking(present_weight=-1.0), hard
    )
    assert "absent_weight must be a finite number >= 0" in ranking_refusal(
        ConfidenceRanking(absent_weight=float("nan")), hard
    )
    assert "orders items within logic tiers" in ranking_refusal(ConfidenceRanking(present_weight=0.5), soft)
    with pytest.raises(ValueError, match="mode soft ranks without tiers"):
        confidence_in_force(plain, False, True, "soft")
    assert "present_above 0.8 is not a level" in ranking_refusal(ConfidenceRanking(present_above=0.8), hard)
    assert "orders items within logic tiers" in ranking_refusal(ConfidenceRanking(absent_below=0.03), off)
    assert ranking_refusal(ConfidenceRanking(present_above=0.9), hard) == ""


def test_grader_keeps_each_item_its_own_grades_with_empty_items_anywhere():
    records = [
        records_pb2.ItemRecord(id="e0"),
        _record({0: 0.5, 1: 0.995}),
        records_pb2.ItemRecord(id="e1"),
        _record({2: 0.005}),
        records_pb2.ItemRecord(id="e2"),
        records_pb2.ItemRecord(id="e3"),
    ]
    grades = ConfidenceGrader(records_pb2.NamespaceRecord(name="n"), lambda: []).batch(
        decode_index_records([index_record(r.SerializeToString()) for r in records])
    )
    # every scored concept is listed (grade 0 too: its confidence feeds the weights)
    assert grades.indptr.tolist() == [0, 0, 2, 2, 3, 3, 3]
    assert grades.ids.tolist() == [0, 1, 2] and grades.grades.tolist() == [0, 3, -3]
    assert grades.confidence.tolist() == pytest.approx([0.5, 0.995, 0.005])
