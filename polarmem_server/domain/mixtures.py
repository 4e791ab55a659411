"""Partitioners beyond the paper's Otsu, for skewed spectra (an image scored on 80 concepts has
3-5 present and 75 absent; Otsu assumes two classes of comparable size).

``min_error`` — Kittler–Illingworth minimum-error thresholding. Over the item's means plus the
anchor priors {0, 1}, every split of the sorted values is a candidate; each class i gets its
share ω_i, mean μ_i and standard deviation σ_i (floored at ``SIGMA_FLOOR``), and the split
minimising J = 1 + 2(ω0 ln σ0 + ω1 ln σ1) − 2(ω0 ln ω0 + ω1 ln ω1) wins. τ* is the point between
μ0 and μ1 where the fitted weighted Gaussians are equal (ω0 N(τ; μ0, σ0) = ω1 N(τ; μ1, σ1)),
the Bayes decision point, which moves towards the minority class when it is small. σ_w and
δ = κ·σ_w as for Otsu; the same state rule.

``mixture`` — a two-component Beta mixture fitted per item by EM:
P(s) = π·Beta(s; a1, b1) + (1 − π)·Beta(s; a0, b0). The E-step computes each concept's posterior
P(present | s); the M-step sets π by its MAP estimate under a Beta(``PRIOR_PRESENT``) prior
(mean 0.25, worth four observations: it leans towards "most candidates are absent" without
overruling an item whose scores say half are present; a Beta(2, 18) prior did, and lost
balanced spectra) and each component by weighted
method of moments, with ``PSEUDO_COUNT`` pseudo-observations drawn towards the default
components Beta(3, 1) and Beta(1, 3) so a component fitted on three or four scores stays sane.
States by posterior: > ρ HAS, < 1 − ρ NOT_HAS, otherwise UNCERTAIN (ρ = 0.85 by default).

``calibrated`` — the same posterior rule, with the mixture fitted once per namespace on the
pooled scores of every item already stored (thousands of scores instead of eighty), or its two
components fitted on a labelled calibration set the client supplies (each class's Beta by
method of moments). Each concept then gets its own prevalence π_c (``fit_concept_priors``):
the components describe the verifier, the prevalence the data, and a score of 0.4 for "person"
(in half of COCO's images) is not the same evidence as 0.4 for "hair drier". The namespace
refits as it grows (each time its pooled scores double) and re-partitions stored items from
their stored scores — no re-scoring. Until the first fit (``MIN_CALIBRATION_SCORES`` scores),
items are partitioned by the per-item ``mixture``.

Every method keeps template disagreement (std > template_std_max) UNCERTAIN, reports the
item's parameters, and τ / δ: for the posterior methods τ is where P(present) = 0.5 and δ is
half the width of the UNCERTAIN band in score space.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from polarmem_server.errors import InvalidArgument

from polarmem_server.domain.partition import (
    ANCHORS,
    ConceptState,
    ItemPartition,
    PartitionSettings,
    classify,
    item_partition,
    register,
)

SIGMA_FLOOR = 0.02
EPS = 1e-4
PRIOR_PRESENT = (1.5, 4.5)
PSEUDO_COUNT = 2.0
DEFAULT_PRESENT = (3.0, 1.0)
DEFAULT_ABSENT = (1.0, 3.0)
MIN_CALIBRATION_SCORES = 400
PARAM_RANGE = (0.2, 200.0)
CONCEPT_PRIOR_STRENGTH = 20.0
CONCEPT_PRIOR_ITERATIONS = 200


@dataclass(frozen=True)
class BetaMixture:
    present: tuple[float, float]
    absent: tuple[float, float]
    prior: float  # π, the share of present concepts
    fitted_on: int = 0
    supervised: bool = False
    # π_c per concept name (calibrated namespaces); concepts not listed use `prior`. Left out of
    # equality and hashing: crossings are cached per model and only ever use the shared π.
    concept_priors: Mapping[str, float] = field(default_factory=dict, compare=False, hash=False)
    priors_fitted_on: int = field(default=0, compare=False)  # pooled scores behind concept_priors

    def priors_for(self, names: Sequence[str] | None, count: int) -> np.ndarray:
        """π per score: the concept's own prevalence where one was fitted, else the shared π."""
        if not names or not self.concept_priors:
            return np.full(count, self.prior)
        return np.array([self.concept_priors.get(name, self.prior) for name in names], dtype=np.float64)

    def posterior(self, s: np.ndarray, priors: np.ndarray | float | None = None) -> np.ndarray:
        s = np.clip(np.asarray(s, dtype=np.float64), EPS, 1 - EPS)
        pi = np.clip(np.asarray(self.prior if priors is None else priors, dtype=np.float64), 1e-6, 1 - 1e-6)
        log1 = _log_beta_pdf(s, *self.present) + np.log(pi)
        log0 = _log_beta_pdf(s, *self.absent) + np.log1p(-pi)
        return 1.0 / (1.0 + np.exp(np.clip(log0 - log1, -700, 700)))

    def crossing(self, p: float) -> float:
        """The score where P(present | s) = p (bisection; the posterior rises with s here)."""
        return _crossing(self, p)


@lru_cache(maxsize=4096)
def _crossing(model: BetaMixture, p: float) -> float:
    """Cached per (model, p): a calibrated namespace asks for the same crossings on every item."""
    lo, hi = EPS, 1 - EPS
    if model.posterior(np.array([lo]))[0] >= p:
        return 0.0
    if model.posterior(np.array([hi]))[0] <= p:
        return 1.0
    grid = np.linspace(lo, hi, 2049)  # vectorised: one posterior call, then refine the bracket
    above = np.flatnonzero(model.posterior(grid) >= p)
    if above.size == 0:
        return 1.0
    j = int(above[0])
    lo, hi = float(grid[max(j - 1, 0)]), float(grid[j])
    for _ in range(30):
        mid = (lo + hi) / 2
        if model.posterior(np.array([mid]))[0] < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _betaln(a: float, b: float) -> float:
    """ln B(a, b) for the scalar parameters used here (math.lgamma: no scipy in the server)."""
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _log_beta_pdf(s: np.ndarray, a: float, b: float) -> np.ndarray:
    return (a - 1) * np.log(s) + (b - 1) * np.log1p(-s) - _betaln(float(a), float(b))


def _moments_to_beta(mean: float, var: float) -> tuple[float, float]:
    mean = min(max(mean, 0.01), 0.99)
    var = min(max(var, 1e-4), mean * (1 - mean) * 0.99)
    common = mean * (1 - mean) / var - 1
    lo, hi = PARAM_RANGE
    return float(np.clip(mean * common, lo, hi)), float(np.clip((1 - mean) * common, lo, hi))


def _weighted_beta(s: np.ndarray, w: np.ndarray, default: tuple[float, float], pseudo: float) -> tuple[float, float]:
    a, b = default
    d_mean = a / (a + b)
    d_var = a * b / ((a + b) ** 2 * (a + b + 1))
    total = w.sum() + pseudo
    mean = (np.dot(w, s) + pseudo * d_mean) / total
    second = (np.dot(w, s * s) + pseudo * (d_var + d_mean**2)) / total
    return _moments_to_beta(mean, second - mean * mean)


def fit_beta_mixture(
    scores: np.ndarray,
    prior: tuple[float, float] = PRIOR_PRESENT,
    pseudo: float = PSEUDO_COUNT,
    iterations: int = 100,
    tolerance: float = 1e-7,
) -> BetaMixture:
    """EM for π·Beta(a1, b1) + (1 − π)·Beta(a0, b0) with a Beta prior on π (MAP)."""
    s = np.clip(np.asarray(scores, dtype=np.float64).ravel(), EPS, 1 - EPS)
    alpha, beta_ = prior
    # Start π from the data (the share above 0.5, kept off the edges), not the prior's mean: EM
    # moves π slowly, and a start far from the answer can stop short of it.
    start = float(np.clip((np.count_nonzero(s > 0.5) + alpha) / (s.size + alpha + beta_), 0.02, 0.98))
    model = BetaMixture(DEFAULT_PRESENT, DEFAULT_ABSENT, start, fitted_on=s.size)
    previous = -np.inf
    for _ in range(iterations):
        log1 = _log_beta_pdf(s, *model.present) + math.log(model.prior)
        log0 = _log_beta_pdf(s, *model.absent) + math.log1p(-model.prior)
        top = np.maximum(log1, log0)
        likelihood = float(np.sum(top + np.log(np.exp(log1 - top) + np.exp(log0 - top))))
        r = 1.0 / (1.0 + np.exp(np.clip(log0 - log1, -700, 700)))
        pi = (r.sum() + alpha - 1) / (s.size + alpha + beta_ - 2)
        present = _weighted_beta(s, r, DEFAULT_PRESENT, pseudo)
        absent = _weighted_beta(s, 1 - r, DEFAULT_ABSENT, pseudo)
        if present[0] / sum(present) < absent[0] / sum(absent):  # keep "present" the high component
            present, absent = absent, present
            pi = 1 - pi
        model = BetaMixture(present, absent, float(np.clip(pi, 1e-4, 1 - 1e-4)), fitted_on=s.size)
        if abs(likelihood - previous) < tolerance * max(1.0, abs(likelihood)):
            break
        previous = likelihood
    return model


def fit_supervised(scores: np.ndarray, present: np.ndarray) -> BetaMixture:
    """Class-conditional Betas by method of moments from labelled scores; π from the labels."""
    s = np.clip(np.asarray(scores, dtype=np.float64).ravel(), EPS, 1 - EPS)
    y = np.asarray(present, dtype=bool).ravel()
    if s.size != y.size:
        raise InvalidArgument("calibration: scores and labels must have the same length")
    if y.sum() < 2 or (~y).sum() < 2:
        raise InvalidArgument("calibration: give at least two present and two absent labelled scores")
    return BetaMixture(
        _moments_to_beta(s[y].mean(), s[y].var()),
        _moments_to_beta(s[~y].mean(), s[~y].var()),
        float(np.clip(y.mean(), 1e-4, 1 - 1e-4)),
        fitted_on=s.size,
        supervised=True,
    )


def fit_concept_priors(
    model: BetaMixture, concepts: Sequence[str], scores: np.ndarray, strength: float = CONCEPT_PRIOR_STRENGTH
) -> BetaMixture:
    """Each concept's prevalence π_c by EM with the class-conditional components held fixed
    (they describe the verifier, shared by every concept; prevalence is the data's, and in COCO
    ranges from "person" in half the images to objects in one of a thousand). First the shared
    π over all scores (π ← mean r_i), then each concept's, shrunk towards it with `strength`
    pseudo-observations:

        π_c ← (Σ_i r_i + strength·π) / (n_c + strength),  r_i = P(present | s_i, π_c).

    A concept scored a handful of times keeps roughly the shared π; one scored on hundreds of
    items gets its own. The returned model's `prior` is the shared π of these scores — for a
    model from a labelled set, the namespace's prevalence replaces the labelled set's class
    share, which says nothing about the namespace."""
    s = np.clip(np.asarray(scores, dtype=np.float64).ravel(), EPS, 1 - EPS)
    names = np.asarray(concepts, dtype=object).ravel()
    if s.size != names.size:
        raise InvalidArgument("concept priors: one concept name per score")
    if s.size == 0:
        return replace(model, concept_priors={})
    keys, index = np.unique(names, return_inverse=True)
    counts = np.bincount(index, minlength=keys.size).astype(np.float64)
    # The likelihood ratio per score is fixed; only the priors move.
    log_ratio = np.clip(_log_beta_pdf(s, *model.present) - _log_beta_pdf(s, *model.absent), -700, 700)
    ratio = np.exp(log_ratio)

    def em(pi: np.ndarray, group: np.ndarray, sizes: np.ndarray, anchor: float, weight: float) -> np.ndarray:
        for _ in range(CONCEPT_PRIOR_ITERATIONS):
            odds = ratio * (pi / (1 - pi))[group]
            r = odds / (1 + odds)
            updated = np.clip(
                (np.bincount(group, weights=r, minlength=sizes.size) + weight * anchor) / (sizes + weight),
                1e-4,
                1 - 1e-4,
            )
            done = np.max(np.abs(updated - pi)) < 1e-7
            pi = updated
            if done:
                break
        return pi

    shared = float(
        em(np.array([model.prior]), np.zeros(s.size, dtype=np.int64), np.array([float(s.size)]), 0.0, 0.0)[0]
    )
    pi = em(np.full(keys.size, shared), index, counts, shared, strength)
    return replace(model, prior=shared, concept_priors={str(k): float(p) for k, p in zip(keys, pi)})


def kittler_illingworth(values: np.ndarray) -> tuple[float, float, dict]:
    """(τ*, σ_w, parameters) of the minimum-error split of `values`."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    n = v.size
    best = None
    for i in np.flatnonzero(np.diff(v) > 0) + 1:
        lo, hi = v[:i], v[i:]
        w0, w1 = i / n, (n - i) / n
        s0, s1 = max(lo.std(), SIGMA_FLOOR), max(hi.std(), SIGMA_FLOOR)
        j = 1 + 2 * (w0 * math.log(s0) + w1 * math.log(s1)) - 2 * (w0 * math.log(w0) + w1 * math.log(w1))
        if best is None or j < best[0]:
            best = (j, w0, w1, lo.mean(), hi.mean(), s0, s1, lo.var(), hi.var())
    if best is None:
        return float(v[0]), 0.0, {"criterion": float("nan")}
    j, w0, w1, m0, m1, s0, s1, v0, v1 = best
    tau = _gaussian_crossing(w0, m0, s0, w1, m1, s1)
    return (
        tau,
        math.sqrt(w0 * v0 + w1 * v1),
        {"criterion": j, "mu0": m0, "mu1": m1, "sigma0": s0, "sigma1": s1, "omega1": w1},
    )


def _gaussian_crossing(w0, m0, s0, w1, m1, s1) -> float:
    """The point in [m0, m1] where w0·N(x; m0, s0) = w1·N(x; m1, s1); the midpoint if none."""
    a = 1 / (2 * s1**2) - 1 / (2 * s0**2)
    b = m0 / s0**2 - m1 / s1**2
    c = m1**2 / (2 * s1**2) - m0**2 / (2 * s0**2) + math.log((w0 * s1) / (w1 * s0))
    roots = [-c / b] if abs(a) < 1e-12 and abs(b) > 1e-12 else []
    if abs(a) >= 1e-12:
        disc = b * b - 4 * a * c
        if disc >= 0:
            roots = [(-b + math.sqrt(disc)) / (2 * a), (-b - math.sqrt(disc)) / (2 * a)]
    inside = [r for r in roots if m0 <= r <= m1]
    return float(inside[0]) if inside else float((m0 + m1) / 2)


def partition(
    means: np.ndarray,
    stds: np.ndarray,
    settings: PartitionSettings,
    calibration: BetaMixture | None = None,
    names: Sequence[str] | None = None,
) -> ItemPartition:
    method = settings.method
    parameters: dict = {}
    note = ""
    if method == "min_error":
        tau, sigma_w, parameters = kittler_illingworth(np.concatenate([means, ANCHORS]))
        delta = settings.kappa * sigma_w
        states = [classify(m, s, tau, delta, settings.template_std_max) for m, s in zip(means, stds)]
    else:
        model = calibration if method == "calibrated" and calibration is not None else fit_beta_mixture(means)
        note = "calibration pending: per-item mixture" if method == "calibrated" and calibration is None else ""
        priors = model.priors_for(names, len(means))
        posterior = model.posterior(means, priors)
        states = [
            ConceptState.UNCERTAIN
            if s > settings.template_std_max
            else ConceptState.HAS
            if p > settings.rho
            else ConceptState.NOT_HAS
            if p < 1 - settings.absent_band
            else ConceptState.UNCERTAIN
            for p, s in zip(posterior, stds)
        ]
        low, high = model.crossing(1 - settings.absent_band), model.crossing(settings.rho)
        tau, delta, sigma_w = model.crossing(0.5), (high - low) / 2, 0.0
        parameters.update(
            {
                "rho": settings.rho,
                "rho_absent": settings.absent_band,
                "prior": model.prior,
                "present_a": model.present[0],
                "present_b": model.present[1],
                "absent_a": model.absent[0],
                "absent_b": model.absent[1],
                "has_above": high,
                "not_has_below": low,
            }
        )
        if model.concept_priors and names:
            # has_above / not_has_below are for the shared π; a concept's own π moves them.
            parameters.update({"concept_prior_min": float(priors.min()), "concept_prior_max": float(priors.max())})
    return item_partition(states, means, stds, tau, delta, sigma_w, settings, parameters=parameters, note=note)


for _name in ("min_error", "mixture", "calibrated"):
    register(_name, partition)


def calibration_fields(model: BetaMixture) -> dict:
    """``CalibrationRecord(**calibration_fields(m))`` and the API's ``Calibration(**...)``."""
    return dict(
        present_a=model.present[0],
        present_b=model.present[1],
        absent_a=model.absent[0],
        absent_b=model.absent[1],
        prior=model.prior,
        fitted_on=model.fitted_on,
        supervised=model.supervised,
        concept_priors=dict(model.concept_priors),
        priors_fitted_on=model.priors_fitted_on,
    )


def calibration_from_fields(record) -> BetaMixture:
    """The model a CalibrationRecord holds."""
    return BetaMixture(
        (record.present_a, record.present_b),
        (record.absent_a, record.absent_b),
        record.prior,
        record.fitted_on,
        record.supervised,
        dict(record.concept_priors),
        record.priors_fitted_on,
    )
