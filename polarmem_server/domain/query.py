"""Recall queries: the mode enum, the one default and bound of every recall parameter, and
:func:`recall_query`, the one place a query is checked and turned into a :class:`RecallQuery`."""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from polarmem_server import _core
from polarmem_server.domain import confidence
from polarmem_server.domain.items import KINDS, check_concept, check_metadata, check_vectors
from polarmem_server.errors import InvalidArgument, quoted
from polarmem_server.index import MAX_TOP_K, SpaceSpec  # the core's bound, checked here once

if TYPE_CHECKING:
    from typing_extensions import TypeIs  # typing's own from Python 3.13


class RecallMode(str, enum.Enum):
    """recall.py documents each mode."""

    HARD = "hard"
    SOFT = "soft"
    ADAPTIVE = "adaptive"
    OFF = "off"
    STRICT = "strict"
    ANSWER = "answer"


MODES = tuple(mode.value for mode in RecallMode)
DEFAULT_MODE = RecallMode.HARD
DEFAULT_TOP_K = 10
DEFAULT_SOFT_LAMBDA = 1.0
MAX_SOFT_LAMBDA = 1e6
# The context's per-item budget: the core's (cpp/include/polarmem/fact_check_context.hpp), which
# renders the context and whose compiled front checks the same range.
MIN_CONTEXT_BUDGET_CHARS = _core.MIN_CONTEXT_BUDGET_CHARS
MAX_CONTEXT_BUDGET_CHARS = _core.MAX_CONTEXT_BUDGET_CHARS
MAX_QUERY_CONCEPTS = 256
DEFAULT_RECENCY_WEIGHT = 0.1
RECENCY_MODES = (RecallMode.HARD, RecallMode.OFF)
# Modes that rank without logic tiers, so no confidence ranking within them.
UNTIERED_MODES = (RecallMode.SOFT, RecallMode.OFF, RecallMode.ANSWER)


@dataclass(frozen=True)
class RecallQuery:
    text: str = ""
    vectors: Mapping[str, np.ndarray] = field(default_factory=dict)
    required: tuple[str, ...] | None = None
    forbidden: tuple[str, ...] | None = None
    k: int = DEFAULT_TOP_K
    mode: RecallMode = DEFAULT_MODE
    soft_lambda: float = DEFAULT_SOFT_LAMBDA
    exclude_conflicts: bool = False
    kinds: tuple[int, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)
    weights: Mapping[str, float] = field(default_factory=dict)
    suppressed_k: int = 0
    # explicit required / forbidden names the vocabulary lacks are skipped (and reported), not refused
    allow_unknown_concepts: bool = False
    # let the namespace's approximate index order each large tier (tiers stay exact); ef_search
    # 0 = the namespace's candidate list
    approximate: bool = False
    ef_search: int = 0
    # confidence flags and weights within tiers, for the hard searches of hard / strict /
    # adaptive recall: rule_choice.confidence_in_force chooses them
    confidence: confidence.ConfidenceRanking = confidence.NO_CONFIDENCE
    # the opt-in recency term within tiers (cpp/include/polarmem/recency.hpp): None = off; > 0 seconds = on, the rank
    # value within a tier then s_sem + recency_weight * 2^(-age / half-life)
    recency_half_life_s: float | None = None
    recency_weight: float = DEFAULT_RECENCY_WEIGHT


MAX_EF_SEARCH = 10_000  # the core's limit (index.AnnSpec)


def check_count(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise InvalidArgument(f"{name} must be >= {low} and <= {high} (an integer), got {quoted(value)}")
    return int(value)


def check_mode(mode: object) -> RecallMode:
    try:
        return RecallMode(mode)
    except ValueError:
        raise InvalidArgument(f"mode must be one of {', '.join(MODES)}, got {quoted(mode)}") from None


def check_context_budget(budget: object) -> int:
    return check_count(budget, "context_budget_chars", MIN_CONTEXT_BUDGET_CHARS, MAX_CONTEXT_BUDGET_CHARS)


def _concepts(values: Iterable[str] | None, name: str) -> tuple[str, ...] | None:
    if values is None:
        return None
    names = tuple(values)
    if len(names) > MAX_QUERY_CONCEPTS:
        raise InvalidArgument(f"{name}: at most {MAX_QUERY_CONCEPTS} concepts, got {len(names)}")
    for concept in names:
        if not isinstance(concept, str) or not concept.strip():
            raise InvalidArgument("required / forbidden: concept names must be non-empty strings")
        check_concept(concept, name)
    return names or None


def recall_query(
    spaces: Mapping[str, SpaceSpec],
    text: str = "",
    vectors: Mapping[str, Any] | None = None,
    required: Iterable[str] | None = None,
    forbidden: Iterable[str] | None = None,
    k: int = DEFAULT_TOP_K,
    mode: str = DEFAULT_MODE.value,
    soft_lambda: float = DEFAULT_SOFT_LAMBDA,
    exclude_conflicts: bool = False,
    kinds: Iterable[str] | None = None,
    metadata: Mapping[str, str] | None = None,
    weights: Mapping[str, float] | None = None,
    suppressed_k: int = 0,
    allow_unknown_concepts: bool = False,
    approximate: bool = False,
    ef_search: int = 0,
    ranking: confidence.ConfidenceRanking = confidence.NO_CONFIDENCE,
    recency_half_life_s: float | None = None,
    recency_weight: float | None = None,
) -> RecallQuery:
    """Checks every recall parameter once (InvalidArgument names the field)."""
    checked_mode = check_mode(mode)
    half_life, weight = check_recency(recency_half_life_s, recency_weight, checked_mode, ranking, approximate)
    try:
        ranking.check()
    except ValueError as exc:
        raise InvalidArgument(str(exc)) from None
    check_ranking_mode(ranking, checked_mode)
    if not isinstance(text, str):
        raise InvalidArgument("text must be a string")
    if (
        isinstance(soft_lambda, bool)
        or not isinstance(soft_lambda, (int, float, np.floating))
        or not math.isfinite(soft_lambda)
        or abs(soft_lambda) > MAX_SOFT_LAMBDA
    ):
        raise InvalidArgument(
            f"soft_lambda must be a finite number within ±{MAX_SOFT_LAMBDA:g}, got {quoted(soft_lambda)}"
        )
    kind_codes = []
    for kind in kinds or ():
        if kind not in KINDS:
            raise InvalidArgument(f"kinds: {quoted(kind)} is not a kind; use 'visual' and/or 'text'")
        kind_codes.append(KINDS[kind])
    checked_weights = {}
    for space, weight in (weights or {}).items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float, np.floating)) or not math.isfinite(weight):
            raise InvalidArgument(f"weights[{quoted(space)}] must be a finite number, got {quoted(weight)}")
        checked_weights[space] = float(weight)
    return RecallQuery(
        text=text,
        vectors=check_vectors(spaces, vectors or {}, "vectors", query=True),
        required=_concepts(required, "required"),
        forbidden=_concepts(forbidden, "forbidden"),
        k=check_count(k, "top_k", 1, MAX_TOP_K),
        mode=checked_mode,
        soft_lambda=float(soft_lambda),
        exclude_conflicts=bool(exclude_conflicts),
        kinds=tuple(dict.fromkeys(kind_codes)),
        metadata=check_metadata(metadata or {}),
        weights=checked_weights,
        suppressed_k=check_count(suppressed_k, "suppressed_k", 0, MAX_TOP_K),
        allow_unknown_concepts=bool(allow_unknown_concepts),
        approximate=bool(approximate),
        ef_search=check_count(ef_search, "ef_search", 0, MAX_EF_SEARCH),
        confidence=ranking,
        recency_half_life_s=half_life,
        recency_weight=weight,
    )


def check_ranking_mode(ranking: confidence.ConfidenceRanking, mode: RecallMode) -> None:
    """A confidence ranking orders items within logic tiers: InvalidArgument in a mode without them."""
    if ranking.used and mode in UNTIERED_MODES:
        raise InvalidArgument(
            f"rank_by_confidence orders items within logic tiers; mode {mode.value} ranks "
            "without tiers: use hard, strict or adaptive, or leave rank_by_confidence unset"
        )


def _finite(value: object) -> TypeIs[int | float | np.integer | np.floating]:
    return (
        not isinstance(value, bool)
        and isinstance(value, (int, float, np.integer, np.floating))
        and math.isfinite(value)
    )


def check_recency(
    half_life_s: object, weight: object, mode: RecallMode, ranking: confidence.ConfidenceRanking, approximate: bool
) -> tuple[float | None, float]:
    """The recency term's (half-life, weight): (None, default) when off. InvalidArgument names
    the field and says what to do."""
    if half_life_s is None:
        if weight is not None:
            raise InvalidArgument(
                f"recency_weight {quoted(weight)} needs recency_half_life_s (> 0 seconds) to turn "
                "the recency term on; set it, or drop recency_weight"
            )
        return None, DEFAULT_RECENCY_WEIGHT
    if not _finite(half_life_s) or half_life_s <= 0:
        raise InvalidArgument(
            f"recency_half_life_s must be a finite number of seconds > 0, got {quoted(half_life_s)}; "
            "leave it unset for no recency term"
        )
    if weight is None:
        weight = DEFAULT_RECENCY_WEIGHT
    if not _finite(weight) or not 0 <= weight <= 1:
        raise InvalidArgument(f"recency_weight must be a number in [0, 1], got {quoted(weight)}")
    if mode not in RECENCY_MODES:
        raise InvalidArgument(
            f"recency_half_life_s ranks within logic tiers in mode hard or off; mode {mode.value} "
            "is not supported: name mode hard or off, or leave recency_half_life_s unset"
        )
    if ranking.used:
        raise InvalidArgument(
            "recency_half_life_s cannot combine with confidence ranking within tiers "
            "(rank_by_confidence, or the namespace's rule): set rank_by_confidence false, "
            "or leave recency_half_life_s unset"
        )
    if approximate:
        raise InvalidArgument(
            "recency_half_life_s needs an exact search: drop approximate, or leave recency_half_life_s unset"
        )
    return float(half_life_s), float(weight)
