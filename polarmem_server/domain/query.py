"""Recall queries: the mode enum, the one default and bound of each recall parameter the library
sets, and the words of the combinations a namespace's rule refuses, which the core states
(library/core_recall.py mode_rules hands them over with the namespace's view; the core checks
every other field itself: cpp/include/polarmem/request_checks.hpp)."""

from __future__ import annotations

import enum

import numpy as np

from polarmem_server import _core
from polarmem_server.domain import confidence
from polarmem_server.errors import InvalidArgument, quoted


class RecallMode(str, enum.Enum):
    """recall.py documents each mode."""

    HARD = "hard"
    SOFT = "soft"
    ADAPTIVE = "adaptive"
    OFF = "off"
    STRICT = "strict"
    ANSWER = "answer"


MODES = tuple(mode.value for mode in RecallMode)
DEFAULT_TOP_K = 10
DEFAULT_SOFT_LAMBDA = 1.0
MAX_SOFT_LAMBDA = 1e6
MAX_QUERY_CONCEPTS = 256
DEFAULT_RECENCY_WEIGHT = 0.1
RECENCY_MODES = (RecallMode.HARD, RecallMode.OFF)
# Modes that rank without logic tiers, so no confidence ranking within them.
UNTIERED_MODES = (RecallMode.SOFT, RecallMode.OFF, RecallMode.ANSWER)
MAX_EF_SEARCH = 10_000  # the core's limit (index.AnnSpec)


def check_count(value: object, name: str, low: int, high: int) -> int:
    """`value` as a count in [low, high]: the core's words where it is out of range
    (request_checks.hpp, which a Recall's counts are refused in), InvalidArgument naming `name`."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidArgument(f"{name} must be an integer, got {quoted(value)}")
    if not -(2**63) <= value < 2**63:  # (past the core's 64 bits: out of any range)
        raise InvalidArgument(f"{name} must be >= {low} and <= {high} (an integer), got a number past 64 bits")
    problem = _core.count_problem(name, int(value), low, high)
    if problem:
        raise InvalidArgument(problem)
    return int(value)


def check_mode(mode: object) -> RecallMode:
    try:
        return RecallMode(mode)
    except ValueError:
        raise InvalidArgument(f"mode must be one of {', '.join(MODES)}, got {quoted(mode)}") from None


def ranking_refusal(ranking: confidence.ConfidenceRanking, mode: RecallMode) -> str:
    """Why a confidence ranking cannot run in `mode` ("" where it can): it orders items within
    logic tiers, and the untiered modes have none; a ranking's own values out of range too."""
    try:
        ranking.check()
    except ValueError as exc:
        return str(exc)
    if ranking.used and mode in UNTIERED_MODES:
        return (
            f"rank_by_confidence orders items within logic tiers; mode {mode.value} ranks "
            "without tiers: use hard, strict or adaptive, or leave rank_by_confidence unset"
        )
    return ""


def recency_refusal(mode: RecallMode, ranking: confidence.ConfidenceRanking) -> str:
    """Why the recency term cannot join a Recall in `mode` under `ranking` ("" where it can)."""
    if mode not in RECENCY_MODES:
        return (
            f"recency_half_life_s ranks within logic tiers in mode hard or off; mode {mode.value} "
            "is not supported: name mode hard or off, or leave recency_half_life_s unset"
        )
    if ranking.used:
        return (
            "recency_half_life_s cannot combine with confidence ranking within tiers "
            "(rank_by_confidence, or the namespace's rule): set rank_by_confidence false, "
            "or leave recency_half_life_s unset"
        )
    return ""
