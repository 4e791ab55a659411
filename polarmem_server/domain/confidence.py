"""Graded confidence per (item, concept): the fixed grid of levels the compiled index keeps.

An item's confidence in a concept is how sure the memory is that the concept is present: the
posterior P(present) for items a posterior partitioner (``calibrated``) placed, the mean verifier
score for the others (Otsu) — the same quantity benchmarks/rule_sweep.py --confidence measured.
The index stores, per concept, which items are *confidently present* above each threshold of
``PRESENT_ABOVE`` and *confidently absent* below each of ``ABSENT_BELOW`` (level g = the g-th
threshold, surer as g grows), so a search can put confidently consistent items first within
each logic tier (docs/quality.md §5). Which level a search uses is the recall rule's choice
(domain/rule_choice.py), not the index's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

PRESENT_ABOVE: tuple[float, ...] = (0.9, 0.95, 0.99)  # level 1, 2, 3: confidence above this
ABSENT_BELOW: tuple[float, ...] = (0.1, 0.03, 0.01)  # level 1, 2, 3: confidence below this


def grades(confidence: np.ndarray) -> np.ndarray:
    """int8 grade per confidence: +g above PRESENT_ABOVE[g-1], -g below ABSENT_BELOW[g-1], else 0."""
    values = np.asarray(confidence, dtype=np.float64)
    zero = np.zeros(values.shape, dtype=np.int8)
    present = sum(((values > t).astype(np.int8) for t in PRESENT_ABOVE), zero)
    absent = sum(((values < t).astype(np.int8) for t in ABSENT_BELOW), zero)
    return (present - absent).astype(np.int8)


def present_level(threshold: float | None) -> int:
    """The index level meaning "confidence above `threshold`" (0: not used). Only grid values."""
    return _level(threshold, PRESENT_ABOVE, "present_above")


def absent_level(threshold: float | None) -> int:
    """The index level meaning "confidence below `threshold`" (0: not used). Only grid values."""
    return _level(threshold, ABSENT_BELOW, "absent_below")


def _level(threshold: float | None, grid: tuple[float, ...], name: str) -> int:
    if threshold is None:
        return 0
    for level, value in enumerate(grid, start=1):
        if abs(value - threshold) < 1e-9:
            return level
    raise ValueError(f"{name} {threshold} is not a level of the index's grid {grid}")


@dataclass(frozen=True)
class ConfidenceRanking:
    """How a recall ranks by confidence within each logic tier (after strict's verified absence):
    flags first — items whose forbidden concepts' confidence is below `absent_below`, then whose
    required concepts' is above `present_above` (grid thresholds; None = not used) — then by
    s_sem + present_weight x mean confidence of the required concepts - absent_weight x mean
    confidence of the forbidden ones (0 = not used), so a surer item passes a slightly more
    similar, less sure one."""

    present_above: float | None = None
    absent_below: float | None = None
    present_weight: float = 0.0
    absent_weight: float = 0.0

    @property
    def used(self) -> bool:
        return (
            self.present_above is not None
            or self.absent_below is not None
            or self.present_weight > 0
            or self.absent_weight > 0
        )

    def check(self) -> None:
        """ValueError naming the field: a threshold off the index's grid, a weight not finite and >= 0."""
        present_level(self.present_above)
        absent_level(self.absent_below)
        for name, weight in (("present_weight", self.present_weight), ("absent_weight", self.absent_weight)):
            if (
                isinstance(weight, bool)
                or not isinstance(weight, (int, float, np.floating))
                or not math.isfinite(weight)
                or weight < 0
            ):
                raise ValueError(f"{name} must be a finite number >= 0 (0 = not used), got {weight!r}")


NO_CONFIDENCE = ConfidenceRanking()
