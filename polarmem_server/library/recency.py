"""The opt-in recency term within logic tiers (library layer; recall.py calls it for a Recall
that sets ``recency_half_life_s``).

Within each tier an item ranks by ``s_sem + recency_weight * 2^(-age / half_life)``, where age
is now minus the item's ``updated_ms`` (``created_ms`` when never updated), never negative. The
tier still comes first (``hard``; ``off`` has one tier), so a recent contradicting note never
passes an older consistent one. Ties keep the core's order (tier, s_sem, then the lower slot).

Exact, not a re-sort of the core's top k: the core returns candidates ordered by (tier, s_sem);
with the top ``c`` of them (first ``c = 4k``) and their records read in one multi-get, the k-th
best final value is final when its tier is exhausted among the candidates, or when the last
candidate's s_sem + recency_weight is at most that value (an item not retrieved has s_sem at
most the last one's and a recency factor at most 1, so it cannot pass). Otherwise ``c``
doubles, up to the eligible items (``tier_counts``) and the core's MAX_TOP_K.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from polarmem.storage.v1 import records_pb2
from polarmem_server.library import writes
from polarmem_server.index import MAX_TOP_K
from polarmem_server.storage.backend import Backend, SearchHit, SearchResult

FIRST_CANDIDATES_PER_HIT = 4


@dataclass(frozen=True)
class Ranked:
    """The recency top k in rank order, the first search's tier counts, how many candidates
    the last search asked for, and whether the result is proven exact (False only when the
    core's MAX_TOP_K candidates could not prove it)."""

    rows: list[tuple[SearchHit, records_pb2.ItemRecord]]
    tier_counts: dict[str, int]
    candidates: int
    exact: bool


def recency_factor(record: records_pb2.ItemRecord, now_ms: int, half_life_s: float) -> float:
    """2^(-age / half_life), age from updated_ms (created_ms when never updated), never negative."""
    stamp = record.updated_ms or record.created_ms
    age_s = max(0, now_ms - stamp) / 1000.0
    return 2.0 ** (-age_s / half_life_s)


def rank_with_recency(
    backend: Backend,
    ns: str,
    search: Callable[[int], SearchResult],
    k: int,
    tiered: bool,
    half_life_s: float,
    weight: float,
    now_ms: int | None = None,
) -> Ranked:
    """The exact top k by (tier, s_sem + weight * recency factor) (the module docstring).
    `search(c)` is the core's top c by (tier, s_sem) (`tiered` False: by s_sem, one tier)."""
    now = writes.now_ms() if now_ms is None else now_ms
    c = min(FIRST_CANDIDATES_PER_HIT * k, MAX_TOP_K)
    tier_counts: dict[str, int] | None = None
    while True:
        found = search(c)
        if tier_counts is None:
            tier_counts = dict(found.tier_counts)
        records = backend.get_items(ns, [hit.item_id for hit in found.hits]) if found.hits else []
        rows = []
        for position, (hit, record) in enumerate(zip(found.hits, records)):
            if record is None:  # forgotten since the search
                continue
            final = float(hit.score) + weight * recency_factor(record, now, half_life_s)
            rows.append(((hit.tier if tiered else 0), final, position, hit, record))
        rows.sort(key=lambda row: (-row[0], -row[1], row[2]))
        top = rows[:k]
        eligible = sum(tier_counts.values())
        if len(found.hits) < c or c >= eligible or _proven(found.hits, top, k, tiered, weight):
            return Ranked([(row[3], row[4]) for row in top], tier_counts, c, True)
        if c >= MAX_TOP_K:
            return Ranked([(row[3], row[4]) for row in top], tier_counts, c, False)
        c = min(2 * c, MAX_TOP_K, max(eligible, k))


def _proven(hits: list[SearchHit], top: list, k: int, tiered: bool, weight: float) -> bool:
    """Whether no item beyond the last candidate can enter the top k (the module docstring)."""
    if len(top) < k:
        return False  # records went missing: ask for more
    tier, kth_final = top[-1][0], top[-1][1]
    last = hits[-1]
    if (last.tier if tiered else 0) != tier:
        return True  # the k-th item's tier ended among the candidates
    return float(last.score) + weight <= kth_final


def describe(ranked: Ranked, half_life_s: float, weight: float) -> str:
    """What mode_reason says of a recency recall."""
    said = f"within tiers: s_sem + {weight:g} x 2^(-age / {half_life_s:g} s)"
    if not ranked.exact:
        said += f"; not proven exact: the core's top {ranked.candidates} candidates did not settle the top k"
    return said
