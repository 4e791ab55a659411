"""The opt-in recency term within logic tiers (library layer; recall.py calls it for a Recall
that sets ``recency_half_life_s``).

Within each tier an item ranks by ``s_sem + recency_weight * 2^(-age / half_life)``, where age
is now minus the item's ``updated_ms`` (``created_ms`` when never updated), never negative; the
tier still comes first, and the result is exact, not a re-sort of the core's top k. The core
decides it (cpp/include/polarmem/recency.hpp says how): here the backend runs the searches it
asks for (its top ``c`` candidates, ``c`` growing until the top k is proven) and reads the
candidates' records, from which the core takes their stamps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from polarmem.storage.v1 import records_pb2
from polarmem_server import _core
from polarmem_server.index import MAX_TOP_K
from polarmem_server.library import writes
from polarmem_server.storage.backend import Backend, SearchHit, SearchResult


@dataclass(frozen=True)
class Ranked:
    """The recency top k in rank order, the first search's tier counts, how many candidates
    the last search asked for, whether the result is proven exact (False only when the core's
    MAX_TOP_K candidates could not prove it), and what mode_reason says of it."""

    rows: list[tuple[SearchHit, records_pb2.ItemRecord]]
    tier_counts: dict[str, int]
    candidates: int
    exact: bool
    description: str


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
    """The exact top k by (tier, s_sem + weight * recency factor). `search(c)` is the core's top
    c by (tier, s_sem) (`tiered` False: by s_sem, one tier)."""
    now = writes.now_ms() if now_ms is None else now_ms
    seen: dict[str, tuple[SearchHit, records_pb2.ItemRecord]] = {}  # the last search's, by id
    hits: dict[str, SearchHit] = {}

    def run(c: int):
        found = search(c)
        hits.clear()
        hits.update((hit.item_id, hit) for hit in found.hits)
        tiers = found.tier_counts
        return [(hit.item_id, hit.tier, hit.score) for hit in found.hits], (
            tiers["conflict"],
            tiers["neutral"],
            tiers["entailed"],
        )

    def read(ids: list[str]) -> list[int | None]:
        records = backend.get_items(ns, ids)
        seen.clear()
        seen.update((item_id, (hits[item_id], r)) for item_id, r in zip(ids, records) if r is not None)
        return [None if r is None else (r.updated_ms or r.created_ms) for r in records]

    ids, (conflict, neutral, entailed), candidates, exact, description = _core.rank_with_recency(
        k, tiered, half_life_s, weight, now, run, read, MAX_TOP_K
    )
    tier_counts = {"conflict": conflict, "neutral": neutral, "entailed": entailed}
    return Ranked([seen[item_id] for item_id in ids], tier_counts, candidates, exact, description)
