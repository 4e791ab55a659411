"""Records the core searches one library call makes, for the compiled Recall front
(api/fast_front.py): a Recall's searches share its vectors, concepts, filters and exactness, and
the front's plan takes the first as the search the core's Recall run sets per search (mode, k,
conflicts, ranking). Off (and free) unless a caller opens
``capturing()`` around the call, in its own thread's context. Part of the seam: a backend whose
searches run in the compiled core (the local one) records them here, and the API reads them
without importing that backend. Issue 51's single pipeline deletes it with the plans."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

_searches: ContextVar[list | None] = ContextVar("polarmem_core_searches", default=None)


@dataclass(frozen=True)
class CoreSearch:
    index: Any  # the namespace's compiled index (_core.Index)
    ids: Any  # its item ids by slot (_core.ItemIds)
    metadata: Any  # its metadata postings (_core.MetadataPostings): a filter's allow-list, made per call
    records: Any  # its stored records by slot (_core.ItemRecords): explanations, made per call
    request: Any  # the _core.SearchRequest the search ran
    required: tuple[int, ...]  # the query's concept ids whose states the hits report
    forbidden: tuple[int, ...]
    plain: bool  # no allow-list but a metadata filter's: the same shape gives the same search
    states: bool  # the hits carry the query concepts' states


@contextmanager
def capturing() -> Iterator[list[CoreSearch]]:
    searches: list[CoreSearch] = []
    token = _searches.set(searches)
    try:
        yield searches
    finally:
        _searches.reset(token)


def active() -> bool:
    return _searches.get() is not None


def record(search: CoreSearch) -> None:
    searches = _searches.get()
    if searches is not None:
        searches.append(search)
