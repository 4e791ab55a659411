"""A brute-force numpy model of the retrieval core: the specification the compiled search is
checked against (same ids, same order, ties broken by slot)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

NEAR_TIE = 5e-5


@dataclass
class ModelItem:
    kind: int  # 1 visual, 2 text
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # normalised float64; multi: (m, d)
    has: set[int] = field(default_factory=set)
    not_has: set[int] = field(default_factory=set)
    live: bool = True


def normalise(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32).astype(np.float64)
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def tier(item: ModelItem, required: set[int], forbidden: set[int]) -> int:
    if required & item.not_has or forbidden & item.has:
        return -1
    if required & item.has:
        return 1
    return 0


def similarity(item: ModelItem, query: dict[str, np.ndarray], weights: dict[str, float]) -> float:
    total = 0.0
    for space, q in query.items():
        v = item.vectors.get(space)
        if v is None or v.size == 0:
            continue
        q = normalise(q)
        cos = float(np.max(v @ q)) if v.ndim == 2 else float(v @ q)
        total += weights.get(space, 1.0) * cos
    return total


def reference_search(
    items,
    query,
    required=(),
    forbidden=(),
    k=10,
    mode="hard",
    soft_lambda=1.0,
    exclude_conflicts=False,
    kind_mask=0,
    allow=None,
    weights=None,
):
    """Returns [(slot, tier, score, rank_tier, rank_value)] in rank order."""
    required, forbidden, weights = set(required), set(forbidden), weights or {}
    allowed = None if allow is None else set(int(a) for a in allow)
    rows = []
    for slot, item in enumerate(items):
        if not item.live or (kind_mask and not (kind_mask & item.kind)):
            continue
        if allowed is not None and slot not in allowed:
            continue
        t = tier(item, required, forbidden)
        if exclude_conflicts and t == -1:
            continue
        s = similarity(item, query, weights)
        if mode == "hard":
            rank_tier, value = t, s
        elif mode == "soft":
            rank_tier, value = 0, s + soft_lambda * t
        else:
            rank_tier, value = 0, s
        rows.append((slot, t, s, rank_tier, value))
    rows.sort(key=lambda r: (-r[3], -r[4], r[0]))
    return rows[:k], rows


def tier_counts(items, required=(), forbidden=(), kind_mask=0, allow=None):
    required, forbidden = set(required), set(forbidden)
    allowed = None if allow is None else set(int(a) for a in allow)
    counts = {"conflict": 0, "neutral": 0, "entailed": 0}
    names = {-1: "conflict", 0: "neutral", 1: "entailed"}
    for slot, item in enumerate(items):
        if not item.live or (kind_mask and not (kind_mask & item.kind)):
            continue
        if allowed is not None and slot not in allowed:
            continue
        counts[names[tier(item, required, forbidden)]] += 1
    return counts


def assert_rank_order(hits, mode="hard", soft_lambda=1.0):
    """The hits are sorted by (tier, value, slot) computed from their own float32 scores, so
    exact ties are broken by slot."""
    tiers = np.asarray(hits.tiers, dtype=np.int64)
    scores = np.asarray(hits.scores, dtype=np.float32)
    if mode == "soft":
        values = scores + np.float32(soft_lambda) * tiers.astype(np.float32)
        rank_tiers = np.zeros_like(tiers)
    else:
        values, rank_tiers = scores, (tiers if mode == "hard" else np.zeros_like(tiers))
    keys = [(-int(t), -float(v), int(s)) for t, v, s in zip(rank_tiers, values, hits.slots)]
    assert keys == sorted(keys), keys


def assert_same_ranking(hits, expected, everything, mode="hard", soft_lambda=1.0):
    """Identical ids in identical order, except that items whose reference rank values lie
    within float32 rounding of each other may swap (their order is not defined by float32)."""
    assert_rank_order(hits, mode, soft_lambda)
    got = list(map(int, hits.slots))
    want = [r[0] for r in expected]
    assert len(got) == len(want), (got, want)
    assert [int(t) for t in hits.tiers] == [r[1] for r in expected]
    np.testing.assert_allclose(np.asarray(hits.scores, dtype=np.float64), [r[2] for r in expected], atol=NEAR_TIE)
    if got == want:
        return
    by_slot = {r[0]: r for r in everything}
    for position, slot in enumerate(got):
        mine, theirs = by_slot[slot], expected[position]
        assert mine[3] == theirs[3], (position, mine, theirs)
        assert abs(mine[4] - theirs[4]) <= NEAR_TIE, f"rank {position}: got {mine}, expected {theirs}"
    assert len(set(got)) == len(got)
