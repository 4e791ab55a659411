"""The adaptive partition: equations on hand-computed cases, agreement with scikit-image's
Otsu, and the edge cases."""

import math

import numpy as np
import pytest
from skimage.filters import threshold_otsu

from polarmem_server.domain.partition import ConceptState, PartitionSettings, classify, otsu_split
from polarmem_server.domain.partitioners import partition_scores

H, N, U = ConceptState.HAS, ConceptState.NOT_HAS, ConceptState.UNCERTAIN


def test_otsu_by_hand():
    # {0, 0.1, 0.9, 1}: the best split is {0, 0.1} | {0.9, 1}.
    split = otsu_split(np.array([0.9, 0.1, 0.0, 1.0]))
    assert split.threshold == pytest.approx(0.5)
    # ω0 = ω1 = 1/2, μ0 = 0.05, μ1 = 0.95: σB² = 1/4 · 0.81
    assert split.between_variance == pytest.approx(0.25 * 0.81)
    # σ0² = σ1² = 0.0025 -> σw = 0.05
    assert split.within_std == pytest.approx(0.05)


def test_partition_by_hand():
    # Means 0.9, 0.8, 0.1 with anchors 0, 1 -> {0, 0.1} | {0.8, 0.9, 1}; τ = 0.45.
    p = partition_scores(np.array([[0.9], [0.8], [0.1]]))
    assert p.tau == pytest.approx(0.45)
    sigma0_sq = 0.0025
    sigma1_sq = np.var([0.8, 0.9, 1.0])
    assert p.sigma_w == pytest.approx(math.sqrt(0.4 * sigma0_sq + 0.6 * sigma1_sq))
    assert p.delta == pytest.approx(p.sigma_w)
    assert p.states == (H, H, N)
    assert not p.degenerate and p.uncertain_ratio == 0


def test_kappa_widens_the_uncertain_band():
    scores = np.array([[0.9], [0.6], [0.35], [0.05]])
    narrow = partition_scores(scores, PartitionSettings(kappa=0.0))
    wide = partition_scores(scores, PartitionSettings(kappa=3.0))
    assert U not in narrow.states
    assert wide.states.count(U) > narrow.states.count(U)
    assert wide.delta == pytest.approx(3.0 * wide.sigma_w)


def test_template_disagreement_is_uncertain():
    p = partition_scores(np.array([[0.95, 0.95, 0.9, 0.1], [0.9, 0.92, 0.91, 0.9], [0.05, 0.1, 0.02, 0.04]]))
    assert p.template_stds[0] > 0.3
    assert p.states == (U, H, N)


@pytest.mark.parametrize("policy, expected", [("fixed", (H, H, H)), ("uncertain", (U, U, U))])
def test_degenerate_spectrum_follows_the_policy(policy, expected):
    p = partition_scores(np.array([[0.7], [0.7], [0.7]]), PartitionSettings(degenerate_policy=policy))
    assert p.degenerate
    assert p.states == expected


def test_single_concept_uses_the_fixed_threshold():
    assert partition_scores(np.array([[0.8]])).states == (H,)
    assert partition_scores(np.array([[0.2]])).states == (N,)
    assert partition_scores(np.array([[0.5]])).states == (U,)  # exactly on the threshold


def test_scores_exactly_on_the_band_edges_are_uncertain():
    tau, delta = 0.5, 0.125  # exact in binary floating point
    assert classify(0.625, 0.0, tau, delta, 0.3) == U
    assert classify(0.375, 0.0, tau, delta, 0.3) == U
    assert classify(np.nextafter(0.625, 1), 0.0, tau, delta, 0.3) == H
    assert classify(np.nextafter(0.375, 0), 0.0, tau, delta, 0.3) == N
    # And through the partition: a concept whose mean equals τ*+δ* of the spectrum is UNCERTAIN.
    p = partition_scores(np.array([[0.9], [0.8], [0.1]]))
    assert classify(p.tau + p.delta, 0.0, p.tau, p.delta, 0.3) == U


def test_weak_polarisation_is_flagged():
    p = partition_scores(np.array([[0.9, 0.1]] * 9 + [[0.9, 0.9]]))
    assert p.uncertain_ratio == pytest.approx(0.9)
    assert p.weak


@pytest.mark.parametrize("bad", [np.nan, np.inf, -0.1, 1.5])
def test_invalid_scores_are_rejected_naming_the_concept(bad):
    with pytest.raises(ValueError, match="'cat', template 1"):
        partition_scores(np.array([[0.5, 0.5], [0.2, bad]]), names=["dog", "cat"])


def test_bad_settings():
    with pytest.raises(ValueError, match="kappa"):
        PartitionSettings(kappa=-1)
    with pytest.raises(ValueError, match="degenerate_policy"):
        PartitionSettings(degenerate_policy="guess")


def test_threshold_agrees_with_scikit_image():
    rng = np.random.default_rng(0)
    for trial in range(300):
        n = int(rng.integers(3, 80))
        present = rng.random(n) < rng.uniform(0.05, 0.6)
        means = np.where(present, rng.beta(5, 2, n), rng.beta(2, 5, n))
        values = np.concatenate([means, [0.0, 1.0]])
        ours = otsu_split(values)
        theirs = threshold_otsu(values, nbins=256)
        bin_width = (values.max() - values.min()) / 256

        # Within the histogram's resolution, or an equally good split (flat between-variance).
        def between(t):
            lo, hi = values[values <= t], values[values > t]
            return len(lo) * len(hi) / len(values) ** 2 * (lo.mean() - hi.mean()) ** 2

        close = abs(ours.threshold - theirs) <= 2 * bin_width
        as_good = between(theirs) <= ours.between_variance * (1 + 1e-9)
        assert close or as_good, (trial, ours.threshold, theirs)
        assert as_good  # exact search is never worse than the histogram's answer
