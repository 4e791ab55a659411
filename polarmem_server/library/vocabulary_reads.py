"""Reads of a namespace's vocabulary and concept edges (library layer; Memory delegates here):
the items holding a concept, a page of the vocabulary with each concept's counts, one concept's
counts."""

from __future__ import annotations

import re

from polarmem_server.domain.namespace import Namespace
from polarmem_server.domain.query import check_count
from polarmem_server.errors import InvalidArgument, quoted
from polarmem_server.storage.backend import POLARITIES, Backend

MAX_PAGE = 1000
# The vocabulary's page token is the last concept id of the previous page: ASCII digits only.
# str.isdigit() is no check ("²" and "٣" pass it, then int() fails: INTERNAL, issue 49).
_CONCEPT_PAGE_TOKEN = re.compile(r"[0-9]{1,10}")


def parse_page_token(token: str) -> int:
    """The concept id after which a vocabulary page starts (-1 for "", the first page);
    INVALID_ARGUMENT for anything this server did not give out."""
    if not token:
        return -1
    if not isinstance(token, str) or not _CONCEPT_PAGE_TOKEN.fullmatch(token):
        raise InvalidArgument(
            f"page_token {quoted(token)} is not one this server gave; send the next_page_token of "
            "the previous response, or none for the first page"
        )
    return int(token)


def items_by_concept(
    backend: Backend, ns: str, concept_id: int, polarity: str, after: str = "", limit: int = 100
) -> list[str]:
    """Item ids holding `polarity` ("has" | "not_has" | "align") for the concept, paginated by id."""
    if polarity not in POLARITIES:
        raise InvalidArgument(f"polarity must be 'has', 'not_has' or 'align', got {quoted(polarity)}")
    limit = check_count(limit, "limit", 1, MAX_PAGE + 1)
    return backend.items_by_concept(ns, concept_id, polarity, after, limit)


def vocabulary_page(
    backend: Backend, namespace: Namespace, after_id: int = -1, limit: int = 100
) -> tuple[list[tuple[int, str, dict[str, int]]], int]:
    """A page of the vocabulary by id: (id, name, items per polarity) for ids above `after_id`,
    and how many concepts there are."""
    limit = check_count(limit, "limit", 1, MAX_PAGE + 1)
    names = namespace.vocabulary.names
    counts = backend.counts(namespace.name).concepts
    page = range(max(after_id + 1, 0), min(after_id + 1 + limit, len(names)))
    return [(cid, names[cid], {p: int(counts[p].get(cid, 0)) for p in POLARITIES}) for cid in page], len(names)


def concept_counts(backend: Backend, ns: str, concept_id: int) -> dict[str, int]:
    """Items per polarity of one concept."""
    counts = backend.counts(ns).concepts
    return {polarity: int(counts[polarity].get(concept_id, 0)) for polarity in POLARITIES}
