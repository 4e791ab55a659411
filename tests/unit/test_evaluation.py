"""Evaluation arithmetic: the simulated VLM's accuracy, the metrics, queries, bootstrap."""

from collections import Counter

import numpy as np
import pytest
from scipy.stats import beta

from polarmem_server.faces import evaluation
from polarmem_server.faces.datasets import coco_pope500


@pytest.mark.parametrize("accuracy", [0.7, 0.8, 0.9, 0.95])
def test_simulated_vlm_has_the_stated_accuracy(accuracy):
    a, b = evaluation.beta_parameters(accuracy)
    assert a + b == pytest.approx(4.0)
    assert beta.sf(0.5, a, b) == pytest.approx(accuracy, abs=1e-9)
    assert beta.cdf(0.5, b, a) == pytest.approx(accuracy, abs=1e-9)  # absent objects, symmetric
    with pytest.raises(ValueError):
        evaluation.beta_parameters(0.4)


def test_metrics_on_a_hand_made_ranking():
    labels = {"a": {"has": ["dog"]}, "b": {"has": ["dog", "cat"]}, "c": {"has": []}, "d": {"has": ["dog"]}}
    query = evaluation.Query("dog", "cat")
    outcome = evaluation.QueryOutcome({"off": ["b", "a", "c"], "hard": ["a", "d", "b"]}, pool=["b", "a", "c", "d"])
    m = evaluation.metrics_for(outcome, query, labels, consistent_total=2, ks=(1, 3))
    assert m["off"]["conflict@1"] == 1.0 and m["off"]["conflict@3"] == pytest.approx(2 / 3)
    assert m["hard"]["conflict@1"] == 0.0 and m["hard"]["conflict@3"] == pytest.approx(1 / 3)
    # Pool contradicting: b, c. hard@1 lets in neither; off@1 lets in b.
    assert m["hard"]["filter_rate@1"] == 1.0 and m["off"]["filter_rate@1"] == 0.5
    assert m["hard"]["recall@3"] == 1.0 and m["off"]["recall@1"] == 0.0
    assert m["hard"]["ndcg@3"] == pytest.approx(1.0)


def test_queries_are_deterministic_and_valid():
    rows = coco_pope500()
    q1 = evaluation.generate_queries(rows, 30, seed=7)
    assert q1 == evaluation.generate_queries(rows, 30, seed=7)
    assert len(set(q1)) == 30 and all(q.required != q.forbidden for q in q1)


def test_balanced_candidates_are_half_present():
    rows = coco_pope500()[:50]
    cats = sorted({c for r in rows for c in r["has"] + r["not_has"]})
    for row, cands in zip(rows, evaluation.candidate_concepts(rows, cats, "balanced", 0)):
        present = [c for c in cands if c in row["has"]]
        assert len(present) * 2 == len(cands)


def test_bootstrap_interval_contains_the_mean():
    mean, lo, hi = evaluation.bootstrap(np.linspace(0, 1, 101), seed=0)
    assert lo < mean < hi and mean == pytest.approx(0.5)


def test_the_dev_set_ships_and_splits_stably():
    rows = evaluation.dev_rows()
    assert len(rows) == 10_000 and len({r["id"] for r in rows}) == 10_000
    assert not {r["id"] for r in rows} & {r["id"] for r in coco_pope500()}  # none of the 500
    tuning, held_out = evaluation.split_dev(rows)
    assert 4_700 < len(tuning) < 5_300 and len(tuning) + len(held_out) == 10_000
    # the split is a property of the id: a sample splits the same way
    sample = evaluation.dev_rows(sample=500, seed=3)
    assert len(sample) == 500 and sample == evaluation.dev_rows(sample=500, seed=3)
    sample_tuning, _ = evaluation.split_dev(sample)
    assert {r["id"] for r in sample_tuning} <= {r["id"] for r in tuning}
    assert len(evaluation.categories_of(rows)) == 80


def test_dev_queries_take_hard_negatives_from_co_occurrence():
    rows = evaluation.dev_rows(sample=2_000, seed=0)
    queries = evaluation.generate_queries(rows, 60, seed=1)
    assert len(queries) == 60
    together = Counter(frozenset((a, b)) for r in rows for a in r["has"] for b in r["has"] if a < b)
    co_occurring = sum(together[frozenset((q.required, q.forbidden))] > 0 for q in queries)
    assert co_occurring >= 0.6 * len(queries)  # 70 % hard negatives, drawn from co-occurring categories


def test_query_texts_embed_the_affirmative_part():
    queries = [evaluation.Query("dog", "frisbee")]
    assert evaluation.query_texts(queries, "full") == ["a photo of a dog without a frisbee"]
    assert evaluation.query_texts(queries, "affirmative") == ["a photo of a dog"]
    with pytest.raises(ValueError, match="query_embedding"):
        evaluation.query_texts(queries, "both")
