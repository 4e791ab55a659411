"""The partitioners beyond Otsu: mixture fitting, minimum-error thresholds, posterior states."""

import numpy as np
import pytest
from scipy.stats import beta

from polarmem_server.domain import mixtures
from polarmem_server.domain.partition import ConceptState, PartitionSettings
from polarmem_server.domain.partitioners import partition_scores

H, N, U = ConceptState.HAS, ConceptState.NOT_HAS, ConceptState.UNCERTAIN


def test_em_recovers_a_skewed_mixture():
    rng = np.random.default_rng(0)
    scores = np.concatenate([rng.beta(6, 1.5, 600), rng.beta(1.5, 6, 9400)])
    model = mixtures.fit_beta_mixture(scores)
    assert model.prior == pytest.approx(0.06, abs=0.01)
    assert model.present[0] / sum(model.present) == pytest.approx(6 / 7.5, abs=0.03)
    assert model.absent[0] / sum(model.absent) == pytest.approx(1.5 / 7.5, abs=0.02)


def test_posterior_is_bayes_rule():
    model = mixtures.BetaMixture((4.0, 1.0), (1.0, 4.0), 0.2)
    s = np.array([0.1, 0.5, 0.9])
    expected = 0.2 * beta.pdf(s, 4, 1) / (0.2 * beta.pdf(s, 4, 1) + 0.8 * beta.pdf(s, 1, 4))
    np.testing.assert_allclose(model.posterior(s), expected, rtol=1e-9)
    assert model.posterior(np.array([model.crossing(0.7)]))[0] == pytest.approx(0.7, abs=1e-6)


def test_supervised_calibration():
    rng = np.random.default_rng(1)
    scores = np.concatenate([rng.beta(5, 2, 300), rng.beta(2, 5, 700)])
    labels = np.r_[np.ones(300, bool), np.zeros(700, bool)]
    model = mixtures.fit_supervised(scores, labels)
    assert model.supervised and model.prior == pytest.approx(0.3)
    assert model.present[0] / sum(model.present) == pytest.approx(5 / 7, abs=0.02)
    with pytest.raises(ValueError, match="at least two"):
        mixtures.fit_supervised([0.9, 0.1], [True, False])


def test_min_error_threshold_moves_towards_a_small_class():
    # 3 present scores near 0.85, 40 absent spread around 0.3: Otsu splits the absent mass.
    rng = np.random.default_rng(2)
    means = np.r_[[0.82, 0.86, 0.9], np.clip(rng.normal(0.3, 0.12, 40), 0, 1)]
    tau, sigma_w, params = mixtures.kittler_illingworth(np.r_[means, 0.0, 1.0])
    assert 0.45 < tau < 0.85 and params["omega1"] < 0.2


@pytest.mark.parametrize("method", ["min_error", "mixture", "calibrated"])
def test_posterior_methods_state_rule_and_report(method):
    rng = np.random.default_rng(3)
    means = np.r_[[0.97, 0.95, 0.93], rng.beta(1.2, 5, 60)]
    calibration = mixtures.BetaMixture((6.0, 1.0), (1.2, 5.0), 0.05) if method == "calibrated" else None
    p = partition_scores(means[:, None], PartitionSettings(method=method), calibration=calibration)
    assert p.method == method and N not in p.states[:3]
    if method != "min_error":  # its κ·σ_w margin may leave the top scores UNCERTAIN
        assert p.states[:3] == (H, H, H)
    assert sum(s == N for s in p.states) > 45
    if method != "min_error":
        assert {"prior", "rho", "has_above", "not_has_below"} <= set(p.parameters)
        assert p.parameters["has_above"] > p.tau > p.parameters["not_has_below"]


def test_a_stricter_absence_band_moves_only_the_not_has_side():
    model = mixtures.BetaMixture((6.0, 1.0), (1.2, 5.0), 0.2)
    means = np.linspace(0.02, 0.98, 49)
    posterior = model.posterior(means)
    symmetric = partition_scores(means[:, None], PartitionSettings(method="calibrated", rho=0.85), calibration=model)
    strict = partition_scores(
        means[:, None], PartitionSettings(method="calibrated", rho=0.85, rho_absent=0.97), calibration=model
    )
    assert [s == H for s in strict.states] == [s == H for s in symmetric.states] == list(posterior > 0.85)
    assert [s == N for s in symmetric.states] == list(posterior < 0.15)
    assert [s == N for s in strict.states] == list(posterior < 0.03)
    assert 0 < sum(s == N for s in strict.states) < sum(s == N for s in symmetric.states)
    assert strict.parameters["rho_absent"] == 0.97 and symmetric.parameters["rho_absent"] == 0.85
    assert strict.parameters["not_has_below"] < symmetric.parameters["not_has_below"]
    with pytest.raises(ValueError, match="rho_absent must lie in"):
        PartitionSettings(method="calibrated", rho_absent=1.2)


def test_template_disagreement_stays_uncertain_for_every_method():
    scores = np.array([[0.95, 0.05, 0.95, 0.05]] + [[0.9] * 4] + [[0.05] * 4] * 10)
    for method in ("min_error", "mixture"):
        assert partition_scores(scores, PartitionSettings(method=method)).states[0] == U


def test_calibrated_without_a_model_falls_back_and_says_so():
    p = partition_scores(np.array([[0.9], [0.1], [0.05]]), PartitionSettings(method="calibrated"))
    assert "pending" in p.note


def test_unknown_partitioner():
    with pytest.raises(ValueError, match="partitioner must be one of"):
        PartitionSettings(method="kmeans")


def test_concept_priors_recover_each_concepts_prevalence():
    # One verifier (shared components), three concepts: present in half the items, in 2 %, and
    # one scored only four times, which should keep roughly the shared prior.
    rng = np.random.default_rng(6)
    present, absent = (6.0, 1.5), (1.5, 6.0)
    names, scores = [], []
    for name, n, share in (("person", 2000, 0.5), ("hair drier", 2000, 0.02), ("rare", 4, 1.0)):
        truth = rng.random(n) < share
        scores += [rng.beta(*present) if t else rng.beta(*absent) for t in truth]
        names += [name] * n
    shared = mixtures.BetaMixture(present, absent, 0.26)
    model = mixtures.fit_concept_priors(shared, names, np.array(scores))
    assert model.concept_priors["person"] == pytest.approx(0.5, abs=0.04)
    assert model.concept_priors["hair drier"] == pytest.approx(0.02, abs=0.01)
    # the shared π is re-estimated from these scores: (1000 + 40 + 4) / 4004
    assert model.present == shared.present and model.prior == pytest.approx(0.26, abs=0.02)
    # four present-looking scores against 20 pseudo-observations at the shared π: pulled part way
    assert model.prior < model.concept_priors["rare"] < 0.5
    np.testing.assert_allclose(model.priors_for(["person", "unseen"], 2), [model.concept_priors["person"], model.prior])
    with pytest.raises(ValueError, match="one concept name per score"):
        mixtures.fit_concept_priors(shared, ["a"], np.array([0.1, 0.2]))


def test_a_concepts_prevalence_moves_its_states():
    # The same score, 0.6, on a concept present in half the items and on one present in 1 %.
    assert (
        mixtures.fit_concept_priors(mixtures.BetaMixture((6.0, 1.5), (1.5, 6.0), 0.1), [], np.array([])).concept_priors
        == {}
    )
    model = mixtures.BetaMixture((6.0, 1.5), (1.5, 6.0), 0.1, concept_priors={"common": 0.5, "rare": 0.01})
    p = partition_scores(
        np.array([[0.6], [0.6], [0.6]]),
        PartitionSettings(method="calibrated", rho=0.6),
        names=["common", "rare", "unlisted"],
        calibration=model,
    )
    posterior = model.posterior(np.full(3, 0.6), np.array([0.5, 0.01, 0.1]))
    assert posterior[0] > 0.6 > posterior[2] > posterior[1]
    assert p.states[0] == H and p.states[1] != H and p.states[2] != H
    assert p.parameters["concept_prior_min"] == 0.01 and p.parameters["concept_prior_max"] == 0.5
    # equality (and the crossing cache) ignore the per-concept priors: crossings use the shared π
    assert model == mixtures.BetaMixture((6.0, 1.5), (1.5, 6.0), 0.1)
