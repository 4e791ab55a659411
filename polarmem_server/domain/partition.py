"""Adaptive partition of an item's yes-probabilities into HAS / NOT_HAS / UNCERTAIN.

The paper's method (DESIGN.md, "The method" step 2), pure arithmetic:

* ``s_c`` = mean P(Yes) over the prompt templates; a template std above ``template_std_max``
  marks the concept unreliable -> UNCERTAIN whatever its mean.
* Otsu over ``{s_c} ∪ {0, 1}`` (the anchor priors): every split of the sorted values is
  evaluated (exact, no histogram); ``τ*`` maximises the between-class variance
  ``ω0·ω1·(μ0 − μ1)²`` and lies midway between the two values the split separates.
* ``σ_w = sqrt(ω0·σ0² + ω1·σ1²)`` (population variances), ``δ = κ·σ_w``.
* ``s_c > τ*+δ`` -> HAS, ``s_c < τ*−δ`` -> NOT_HAS, otherwise UNCERTAIN (boundaries included).
* Degenerate spectrum: the item's own scores admit no split with between-class variance above
  ``DEGENERATE_VARIANCE`` (all equal, or a single concept). Policy ``fixed`` classifies against
  ``fixed_threshold`` with no margin; policy ``uncertain`` leaves every concept UNCERTAIN.
* More than ``weak_ratio`` of the concepts UNCERTAIN is reported as a weak polarisation.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

import numpy as np

from polarmem_server.errors import InvalidArgument, quoted

DEGENERATE_VARIANCE = 1e-9
ANCHORS = (0.0, 1.0)


class ConceptState(enum.IntEnum):
    """Values match polarmem.v1.ConceptState."""

    HAS = 1
    NOT_HAS = 2
    UNCERTAIN = 3


PARTITIONERS = ("otsu", "min_error", "mixture", "calibrated")
# name -> fn(means, stds, settings, calibration, names) -> ItemPartition. Filled by register():
# "otsu" below, the posterior and minimum-error methods by domain/mixtures.py, which imports this
# module (never the other way round).
REGISTRY: dict = {}


def register(name: str, partitioner) -> None:
    if name not in PARTITIONERS:
        raise ValueError(f"partitioner {name!r} is not declared in PARTITIONERS")
    REGISTRY[name] = partitioner


@dataclass(frozen=True)
class PartitionSettings:
    kappa: float = 1.0
    template_std_max: float = 0.3
    degenerate_policy: str = "fixed"  # "fixed" | "uncertain"
    fixed_threshold: float = 0.5
    weak_ratio: float = 0.8
    method: str = "otsu"  # one of PARTITIONERS (mixtures.py documents the three beyond the paper's)
    rho: float = 0.85  # posterior methods: P(present) > rho -> HAS, < 1 - rho -> NOT_HAS
    rho_absent: float = 0.0  # when > 0: P(present) < 1 - rho_absent -> NOT_HAS instead

    @property
    def absent_band(self) -> float:
        return self.rho_absent or self.rho

    def __post_init__(self) -> None:
        if self.method not in PARTITIONERS:
            raise InvalidArgument(f"partitioner must be one of {', '.join(PARTITIONERS)}, got {quoted(self.method)}")
        if not 0.5 <= self.rho < 1.0:
            raise InvalidArgument(f"rho must lie in [0.5, 1), got {self.rho}")
        if self.rho_absent and not 0.5 <= self.rho_absent < 1.0:
            raise InvalidArgument(f"rho_absent must lie in [0.5, 1) (or be unset), got {self.rho_absent}")
        if not math.isfinite(self.kappa) or self.kappa < 0:
            raise InvalidArgument(f"kappa must be a finite number >= 0, got {self.kappa}")
        if self.degenerate_policy not in ("fixed", "uncertain"):
            raise InvalidArgument(
                f"degenerate_policy must be 'fixed' or 'uncertain', got {quoted(self.degenerate_policy)}"
            )
        if not 0.0 <= self.fixed_threshold <= 1.0:
            raise InvalidArgument(f"fixed_threshold must lie in [0, 1], got {self.fixed_threshold}")
        if not self.template_std_max > 0:
            raise InvalidArgument(f"template_std_max must be > 0, got {self.template_std_max}")


@dataclass(frozen=True)
class OtsuSplit:
    threshold: float
    between_variance: float
    within_std: float


@dataclass(frozen=True)
class ItemPartition:
    states: tuple[ConceptState, ...]
    means: tuple[float, ...]
    template_stds: tuple[float, ...]
    tau: float
    delta: float
    sigma_w: float
    kappa: float
    degenerate: bool
    uncertain_ratio: float
    weak: bool
    method: str = "otsu"
    parameters: dict = field(default_factory=dict)
    note: str = ""


def otsu_split(values: np.ndarray) -> OtsuSplit:
    """Exact Otsu: the split of the sorted values with the largest between-class variance.

    Ties between equal variances go to the lowest threshold; equal values are never separated.
    A set with fewer than two distinct values has no split (variance 0, threshold = the value).
    """
    v = np.sort(np.asarray(values, dtype=np.float64))
    n = v.size
    if n == 0:
        raise ValueError("otsu_split needs at least one value")
    # Candidate split after position i-1 (class 0 = v[:i]) wherever the value changes.
    cuts = np.flatnonzero(np.diff(v) > 0) + 1
    if cuts.size == 0:
        return OtsuSplit(threshold=float(v[0]), between_variance=0.0, within_std=0.0)
    prefix = np.cumsum(v)
    prefix_sq = np.cumsum(v * v)
    count0 = cuts.astype(np.float64)
    count1 = n - count0
    sum0 = prefix[cuts - 1]
    sum1 = prefix[-1] - sum0
    mu0, mu1 = sum0 / count0, sum1 / count1
    w0, w1 = count0 / n, count1 / n
    between = w0 * w1 * (mu0 - mu1) ** 2
    best = int(np.argmax(between))  # first maximum: the lowest threshold among ties
    i = int(cuts[best])
    var0 = max(prefix_sq[i - 1] / i - mu0[best] ** 2, 0.0)
    var1 = max((prefix_sq[-1] - prefix_sq[i - 1]) / (n - i) - mu1[best] ** 2, 0.0)
    within = math.sqrt(w0[best] * var0 + w1[best] * var1)
    return OtsuSplit(threshold=float((v[i - 1] + v[i]) / 2.0), between_variance=float(between[best]), within_std=within)


def check_scores(scores: np.ndarray, names: list[str] | None = None) -> np.ndarray:
    """Validate a concepts x templates matrix of P(Yes); returns it as float64."""
    matrix = np.asarray(scores, dtype=np.float64)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise InvalidArgument(f"scores must be a concepts x templates matrix, got shape {matrix.shape}")
    bad = ~np.isfinite(matrix) | (matrix < 0.0) | (matrix > 1.0)
    if bad.any():
        row, col = (int(x) for x in np.argwhere(bad)[0])
        who = quoted(names[row]) if names else f"concept {row}"
        raise InvalidArgument(
            f"scores: {who}, template {col} is {matrix[row, col]!r}; a P(Yes) must be a finite number in [0, 1]"
        )
    return matrix


def classify(mean: float, template_std: float, tau: float, delta: float, template_std_max: float) -> ConceptState:
    """The state rule: unreliable templates -> UNCERTAIN; strictly above τ+δ -> HAS; strictly
    below τ−δ -> NOT_HAS; the band itself, edges included -> UNCERTAIN."""
    if template_std > template_std_max:
        return ConceptState.UNCERTAIN
    if mean > tau + delta:
        return ConceptState.HAS
    if mean < tau - delta:
        return ConceptState.NOT_HAS
    return ConceptState.UNCERTAIN


def partition_scores(
    scores: np.ndarray,
    settings: PartitionSettings = PartitionSettings(),
    names: list[str] | None = None,
    calibration=None,
) -> ItemPartition:
    """Partition one item's concepts x templates P(Yes) matrix with the settings' method
    (`calibration`: the namespace's fitted mixtures.BetaMixture, for "calibrated"). The methods
    beyond Otsu are registered by domain/mixtures.py (``register``); import
    ``polarmem_server.domain.partitioners`` for the full registry."""
    matrix = check_scores(scores, names)
    means = matrix.mean(axis=1)
    stds = matrix.std(axis=1)
    if means.size == 0:
        return ItemPartition(
            (), (), (), settings.fixed_threshold, 0.0, 0.0, settings.kappa, True, 0.0, False, settings.method
        )
    return REGISTRY[settings.method](means, stds, settings, calibration, names)


def partition_otsu(
    means: np.ndarray, stds: np.ndarray, settings: PartitionSettings, calibration=None, names: list[str] | None = None
) -> ItemPartition:
    """The paper's partitioner (module doc)."""
    own = otsu_split(means)
    degenerate = own.between_variance <= DEGENERATE_VARIANCE
    if degenerate:
        tau, sigma_w, delta = settings.fixed_threshold, 0.0, 0.0
    else:
        split = otsu_split(np.concatenate([means, ANCHORS]))
        tau, sigma_w = split.threshold, split.within_std
        delta = settings.kappa * sigma_w
    abstain = degenerate and settings.degenerate_policy == "uncertain"
    states = [
        ConceptState.UNCERTAIN if abstain else classify(mean, std, tau, delta, settings.template_std_max)
        for mean, std in zip(means, stds)
    ]
    return item_partition(states, means, stds, tau, delta, sigma_w, settings, degenerate=degenerate)


def item_partition(
    states: list[ConceptState],
    means: np.ndarray,
    stds: np.ndarray,
    tau: float,
    delta: float,
    sigma_w: float,
    settings: PartitionSettings,
    degenerate: bool = False,
    parameters: dict | None = None,
    note: str = "",
) -> ItemPartition:
    """A partitioner's result (non-empty `states`), its uncertain share and weak flag derived
    here, the one place every method builds one."""
    uncertain_ratio = sum(s == ConceptState.UNCERTAIN for s in states) / len(states)
    return ItemPartition(
        states=tuple(states),
        means=tuple(float(m) for m in means),
        template_stds=tuple(float(s) for s in stds),
        tau=float(tau),
        delta=float(delta),
        sigma_w=float(sigma_w),
        kappa=settings.kappa,
        degenerate=degenerate,
        uncertain_ratio=uncertain_ratio,
        weak=uncertain_ratio > settings.weak_ratio,
        method=settings.method,
        parameters={k: float(v) for k, v in (parameters or {}).items()},
        note=note,
    )


register("otsu", partition_otsu)

PARTITION_FIELDS = (
    "tau",
    "delta",
    "sigma_w",
    "kappa",
    "degenerate",
    "uncertain_ratio",
    "weak",
    "method",
    "parameters",
    "note",
)
"""The fields an item's partition is stored and shown with (PartitionRecord, PartitionView)."""


def partition_fields(result: ItemPartition) -> dict:
    """The stored / shown fields of a partition result: ``PartitionRecord(**partition_fields(r))``."""
    return {name: getattr(result, name) for name in PARTITION_FIELDS}
