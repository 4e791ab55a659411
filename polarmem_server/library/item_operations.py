"""Memory operations on stored items beyond remember / observe / forget: browse a namespace's
items (paged, filtered), change an item's text or metadata, and clear a namespace. Library layer,
beside Memory (which stays a thin facade): each function takes the Memory it works on.

* ``list_items``: id order is the stable order (the storage's key order), so a page token is the
  last id of the previous page. With a ``has`` filter the concept's HAS edges are walked (only
  those items are read); otherwise the namespace's records are scanned from the token on.
* ``update_item``: through the one rewrite primitive (writes.Writer.rewrite): the history keeps
  the states before the change and the version increments. A text item's new text is re-read
  through the lexical pathway (Writer.apply_own_words): the states its old words gave (source
  "lexical") are dropped, client and engine evidence are kept, and its ``sem`` vector is
  re-encoded from the new text.
* ``clear_namespace``: every item is deleted (each as Forget deletes it, so replicas and the
  change log see ordinary deletes); settings, vocabulary and score model stay.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from typing import TYPE_CHECKING

from polarmem.common.v1 import enums_pb2
from polarmem.storage.v1 import records_pb2
from polarmem_server.domain.evidence import states_of
from polarmem_server.domain.items import KINDS, check_item_id, check_metadata, shows_nothing
from polarmem_server.domain.query import check_count
from polarmem_server.errors import InvalidArgument, quoted

if TYPE_CHECKING:
    from polarmem_server.library.memory import Memory

MAX_PAGE = 1000
DEFAULT_PAGE = 100
CLEAR_BATCH = 1000  # ids read per pass while clearing (never the whole namespace in memory)
UPDATABLE_ITEM_FIELDS = ("text", "metadata")


def _names(field: str, values: Iterable[str] | None) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str):
        raise InvalidArgument(f"{field}: a list of concept names, not the string {quoted(values)}")
    out = list(values)
    for value in out:
        if not isinstance(value, str) or not value.strip():
            raise InvalidArgument(f"{field}: every concept name must be a non-empty string, got {quoted(value)}")
    return out


def _kind_codes(kinds: Iterable[str] | None) -> set[int]:
    codes = set()
    for kind in kinds or ():
        if kind not in KINDS:
            raise InvalidArgument(f"kinds: {quoted(kind)} is not a kind; use 'text' and/or 'visual'")
        codes.add(KINDS[kind])
    if enums_pb2.ITEM_KIND_VISUAL in codes:
        codes.add(enums_pb2.ITEM_KIND_UNSPECIFIED)  # stored before kinds were required: visual
    return codes


def list_items(
    memory: Memory,
    ns: str,
    after: str = "",
    limit: int = DEFAULT_PAGE,
    has: Iterable[str] | None = None,
    not_has: Iterable[str] | None = None,
    metadata: Mapping[str, str] | None = None,
    kinds: Iterable[str] | None = None,
) -> tuple[list[records_pb2.ItemRecord], str]:
    """A page of items with id > `after`, in id order, holding every `has` concept in HAS, every
    `not_has` concept in NOT_HAS, every metadata pair and one of `kinds` (empty: any). Returns the
    records and the next page's token ("" on the last page). A concept name the vocabulary lacks
    is NotFound (an open vocabulary learns a phrase its items' words mention first)."""
    namespace = memory.namespace(ns)
    limit = check_count(limit, "page_size", 1, MAX_PAGE)
    if not isinstance(after, str):
        raise InvalidArgument("page_token must be a string")
    has_ids = [memory.concept_id(ns, name) for name in _names("has", has)]
    not_has_ids = [memory.concept_id(ns, name) for name in _names("not_has", not_has)]
    wanted_metadata = check_metadata(metadata or {})
    codes = _kind_codes(kinds)

    def matches(record: records_pb2.ItemRecord) -> bool:
        if codes and record.kind not in codes:
            return False
        if any(record.metadata.get(key) != value for key, value in wanted_metadata.items()):
            return False
        has_now, not_has_now = states_of(record)
        return all(c in has_now for c in has_ids) and all(c in not_has_now for c in not_has_ids)

    candidates = _by_concept(memory, ns, has_ids[0], after) if has_ids else _scan(memory, ns, after)
    page = list(islice((record for record in candidates if matches(record)), limit + 1))
    memory.writer.know_concepts_of(namespace, page)
    if len(page) > limit:
        return page[:limit], page[limit - 1].id
    return page, ""


def _scan(memory: Memory, ns: str, after: str) -> Iterator[records_pb2.ItemRecord]:
    for record in memory.backend.iter_items(ns):
        if record.id > after:  # str order is UTF-8 byte order: the store's key order
            yield record


def _by_concept(memory: Memory, ns: str, concept_id: int, after: str) -> Iterator[records_pb2.ItemRecord]:
    while True:
        ids = memory.backend.items_by_concept(ns, concept_id, "has", after, DEFAULT_PAGE)
        if not ids:
            return
        for record in memory.backend.get_items(ns, ids):
            if record is not None:  # forgotten since the edge walk
                yield record
        after = ids[-1]


def update_item(
    memory: Memory, ns: str, item_id: str, text: str | None = None, metadata: Mapping[str, str] | None = None
) -> tuple[records_pb2.ItemRecord, bool]:
    """Replaces a stored item's text and / or metadata (None: unchanged; module doc). Returns the
    item's new record and whether a concept state changed."""
    namespace = memory.namespace(ns)
    check_item_id(item_id)
    if text is None and metadata is None:
        raise InvalidArgument("update_mask: name the fields to change: text and/or metadata")
    if text is not None and not isinstance(text, str):
        raise InvalidArgument("text must be a string")
    new_metadata = None if metadata is None else check_metadata(metadata)
    writer = memory.writer
    with namespace.write_lock:
        previous = writer.get(namespace, item_id)
        is_text = previous.kind == enums_pb2.ITEM_KIND_TEXT
        if text is not None and is_text and shows_nothing(text):
            raise InvalidArgument("text: a text item's new text is empty; forget the item instead")
        vectors = None
        if text is not None and is_text and writer.encodes_sem(namespace):
            encoder = writer.encoder(namespace)
            assert encoder is not None  # encodes_sem: the namespace names a real encoder
            vectors = {"sem": encoder.encode([text])[0]}

        def change(record: records_pb2.ItemRecord) -> None:
            if new_metadata is not None:
                record.metadata.clear()
                record.metadata.update(new_metadata)
            if text is None:
                return
            record.text = text
            if is_text:
                kept = [ev for ev in record.evidence if ev.source != "lexical"]  # client / engine evidence
                del record.evidence[:]
                record.evidence.extend(kept)
                del record.mentions[:]
                writer.apply_own_words(namespace, record, lexical=not kept)

        record = writer.rewrite(namespace, previous, change, vectors)
        return record, states_of(record) != states_of(previous)


def clear_namespace(memory: Memory, ns: str) -> int:
    """Deletes every item of the namespace; returns how many. Its settings, vocabulary and score
    model stay (DeleteNamespace removes those too)."""
    namespace = memory.namespace(ns)
    deleted = 0
    with namespace.write_lock:
        while True:
            batch = list(islice(memory.backend.iter_items(ns), CLEAR_BATCH))
            if not batch:
                return deleted
            for record in batch:
                memory.backend.delete_item(ns, record)
            deleted += len(batch)
