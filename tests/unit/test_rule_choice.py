"""The per-namespace rule choice (issue 18): labelled set > declared accuracy > engine > safest."""

import numpy as np
import pytest

from polarmem_server.domain import rule_choice
from polarmem_server.domain.confidence import ConfidenceRanking
from polarmem_server.domain.rule_choice import VerifierKnowledge, choose_rule


def test_knowing_nothing_gets_the_safest_rule():
    choice = choose_rule(VerifierKnowledge())
    assert choice.rule == rule_choice.SAFEST and "nothing known" in choice.reason
    assert choice.accuracy_used is None


@pytest.mark.parametrize("accuracy", [0.7, 0.8, 0.9, 0.95])
def test_a_declared_accuracy_gets_the_rule_measured_there(accuracy):
    choice = choose_rule(VerifierKnowledge(declared_accuracy=accuracy))
    assert choice.rule == dict(rule_choice.DECLARED)[accuracy]
    assert f"{accuracy:.3f}" in choice.reason


def test_between_two_measured_accuracies_the_lower_ones_rule():
    low, high = rule_choice.DECLARED[0][0], rule_choice.DECLARED[1][0]
    middle = (low + high) / 2
    assert choose_rule(VerifierKnowledge(declared_accuracy=middle)).rule == rule_choice.DECLARED[0][1]


def test_an_accuracy_gets_the_nearest_measured_points_rule():
    assert rule_choice.rule_for_accuracy(0.76) == rule_choice.DECLARED[1][1]  # nearer 0.8 than 0.7
    assert rule_choice.rule_for_accuracy(0.93, labelled=True) == rule_choice.LABELLED[3][1]  # nearer 0.95
    assert rule_choice.rule_for_accuracy(0.92, labelled=True) == rule_choice.LABELLED[2][1]
    assert rule_choice.rule_for_accuracy(0.925, labelled=True) == rule_choice.LABELLED[2][1]  # midpoint: lower


def test_a_large_labelled_set_of_a_095_verifier_gets_the_095_rule():
    """Its lower bound lies below 0.95 however large the set; the nearest point is still 0.95."""
    rng = np.random.default_rng(1)
    present = rng.random(16_000) < 0.04  # COCO: about 3 of 80 objects per image
    right = rng.random(16_000) < 0.95
    scores = np.where(present == right, 0.8, 0.2)
    accuracy, n_present, n_absent = rule_choice.balanced_accuracy(scores, present)
    choice = choose_rule(
        VerifierKnowledge(labelled_accuracy=accuracy, labelled_present=n_present, labelled_absent=n_absent)
    )
    assert choice.accuracy_used < 0.95 and choice.rule == rule_choice.Rule(
        "calibrated", "strict", 0.5, 0.99, ConfidenceRanking(present_above=0.99, absent_below=0.03)
    )


def test_below_the_table_is_the_safest_rule():
    choice = choose_rule(VerifierKnowledge(declared_accuracy=0.55))
    assert choice.rule == rule_choice.SAFEST and "below the weakest" in choice.reason


def test_a_labelled_set_wins_over_a_declaration_and_is_read_at_its_lower_bound():
    rng = np.random.default_rng(0)
    present = rng.random(400) < 0.5
    # a verifier right 95 % of the time at 0.5
    right = rng.random(400) < 0.95
    scores = np.where(present == right, 0.9, 0.1)
    accuracy, n_present, n_absent = rule_choice.balanced_accuracy(scores, present)
    assert 0.9 < accuracy < 1.0
    knowledge = VerifierKnowledge(
        labelled_accuracy=accuracy, labelled_present=n_present, labelled_absent=n_absent, declared_accuracy=0.7
    )
    choice = choose_rule(knowledge)
    assert "labelled calibration set" in choice.reason
    assert choice.accuracy_used < accuracy  # the lower bound, not the point estimate
    assert choice.rule == rule_choice.rule_for_accuracy(choice.accuracy_used, labelled=True)


def test_a_tiny_labelled_set_is_not_trusted():
    knowledge = VerifierKnowledge(labelled_accuracy=0.99, labelled_present=5, labelled_absent=5, engine="embedding")
    choice = choose_rule(knowledge)
    assert choice.rule == rule_choice.BY_ENGINE["embedding"] and "embedding" in choice.reason


def test_the_embedding_engine_has_its_own_rule():
    assert choose_rule(VerifierKnowledge(engine="embedding")).rule == rule_choice.BY_ENGINE["embedding"]


def test_bad_input_names_the_field():
    with pytest.raises(ValueError, match="declared_accuracy"):
        choose_rule(VerifierKnowledge(declared_accuracy=1.5))
    with pytest.raises(ValueError, match="labelled_accuracy"):
        choose_rule(VerifierKnowledge(labelled_accuracy=float("nan"), labelled_present=50, labelled_absent=50))
    with pytest.raises(ValueError, match="same length"):
        rule_choice.balanced_accuracy([0.1, 0.2], [True])


def test_one_class_only_has_no_accuracy():
    accuracy, n_present, n_absent = rule_choice.balanced_accuracy([0.9, 0.8], [True, True])
    assert np.isnan(accuracy) and (n_present, n_absent) == (2, 0)


def test_the_dev_set_choices():
    """What the dev set chose (docs/partitioners.md): a weak verifier keeps the paper's rule,
    a strong one gets strict, a labelled very strong one calibrated + strict."""
    assert rule_choice.rule_for_accuracy(0.7) == rule_choice.Rule(
        "otsu", "hard", confidence=ConfidenceRanking(present_weight=0.2, absent_weight=0.4)
    )
    assert rule_choice.rule_for_accuracy(0.85).recall_mode == "strict"
    assert rule_choice.rule_for_accuracy(0.97, labelled=True) == rule_choice.Rule(
        "calibrated", "strict", 0.5, 0.99, ConfidenceRanking(present_above=0.99, absent_below=0.03)
    )
    assert rule_choice.rule_for_accuracy(0.97) == rule_choice.Rule(
        "otsu", "strict", confidence=ConfidenceRanking(present_above=0.9, present_weight=0.4, absent_weight=0.8)
    )
    # confidence within tiers where the tuning half chose it (docs/quality.md §5, §7)
    assert rule_choice.rule_for_accuracy(0.9).confidence.present_above is None
    assert rule_choice.rule_for_accuracy(0.7).confidence.present_above is None
    # knowing nothing, and a configured partitioner, keep the paper's rule exactly: no confidence
    assert not rule_choice.SAFEST.ranks_by_confidence


def test_the_embedding_engine_with_a_labelled_set():
    knowledge = VerifierKnowledge(labelled_accuracy=0.75, labelled_present=100, labelled_absent=100, engine="embedding")
    choice = choose_rule(knowledge)
    assert choice.rule == rule_choice.BY_ENGINE_LABELLED["embedding"] and "labelled" in choice.reason


def test_a_configured_partitioner_keeps_the_papers_recall():
    otsu = rule_choice.configured_rule("otsu", 0.85, 0.0)
    assert otsu.rule == rule_choice.Rule("otsu", "hard") and otsu.reason.startswith("configured")
    calibrated = rule_choice.configured_rule("calibrated", 0.6, 0.93)
    assert calibrated.rule == rule_choice.Rule("calibrated", "hard", 0.6, 0.93)
    assert rule_choice.configured_rule("mixture", 0.7, 0.0).rule.rho_absent == 0.7  # unset: rho


def test_a_labelled_set_summary_feeds_the_choice():
    labelled = rule_choice.LabelledSet.of([0.9] * 30 + [0.1] * 30, [True] * 30 + [False] * 30)
    assert labelled == rule_choice.LabelledSet(1.0, 30, 30)
    knowledge = rule_choice.knowledge_of(labelled, 0.7, "embedding")
    assert (knowledge.labelled_accuracy, knowledge.labelled_present, knowledge.declared_accuracy, knowledge.engine) == (
        1.0,
        30,
        0.7,
        "embedding",
    )
    assert rule_choice.knowledge_of(None, 0.9, "").labelled_accuracy is None


def test_the_09_rule_is_the_one_that_held_out():
    """0.9: otsu + strict ranked by confidence weights 0.6 / 0.4 (no flag), the weight
    experiment's tuning pick, which held on the held-out half (docs/quality.md §7: 0.041 / 0.944
    against present > 0.99's 0.051 / 0.927); a change here needs a new frozen read."""
    expected = rule_choice.Rule("otsu", "strict", confidence=ConfidenceRanking(present_weight=0.6, absent_weight=0.4))
    assert dict(rule_choice.DECLARED)[0.9] == expected
    assert dict(rule_choice.LABELLED)[0.9] == expected
    assert choose_rule(VerifierKnowledge(declared_accuracy=0.9)).rule == expected
