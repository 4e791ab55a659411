"""Concepts and aliases named after items were stored, applied to the stored text items.

A text item's states come from its own words (evidence.apply_text). When the vocabulary learns a
name later — a concept or an alias declared by UpdateNamespace, or, in an open vocabulary, a
phrase first named by a query — the items stored before must say what their words say about it,
or a declared concept would match only new items. This module re-reads exactly the items that
can mention the name and sets the name's lexical state on each (nothing else changes; concepts
an engine or the client decided keep their evidence).

Which items can mention a name: in an open vocabulary every content word is a concept, so the
items holding each of the name's words (HAS or NOT_HAS: their postings) are the candidates, and
their intersection is read; a name with a word no item mentions has none. Elsewhere every text
item is read.

Online: the items are rewritten in batches of ``BATCH``, each under the namespace's write lock and
in one synced commit, so a write waits for one batch at most and reads never wait.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from polarmem.common.v1 import enums_pb2
from polarmem_server.domain import text as textproc
from polarmem_server.domain.evidence import apply_text
from polarmem_server.domain.namespace import Namespace
from polarmem_server.storage import consistency
from polarmem_server.storage.backend import Backend
from polarmem_server.library.writes import Writer

BATCH = 256
PAGE = 10_000


def _holders(backend: Backend, namespace: Namespace, concept_id: int) -> set[str]:
    """Ids of the items holding a concept as HAS or NOT_HAS."""
    out: set[str] = set()
    for polarity in ("has", "not_has"):
        after = ""
        while True:
            page = backend.items_by_concept(namespace.name, concept_id, polarity, after, PAGE)
            out.update(page)
            if len(page) < PAGE:
                break
            after = page[-1]
    return out


def candidate_ids(backend: Backend, namespace: Namespace, names: Sequence[str]) -> list[str]:
    """The stored items whose text can mention one of `names` (module doc), ascending."""
    vocabulary = namespace.vocabulary
    if not namespace.settings.open_vocabulary:
        return sorted(r.id for r in backend.iter_items(namespace.name) if r.kind == enums_pb2.ITEM_KIND_TEXT)
    out: set[str] = set()
    for name in names:
        words = textproc.content_terms(name) or [name]
        # a word's own concept holds the items that wrote it (an alias may redirect the word since)
        own = [vocabulary.own_id(word) for word in words]
        ids = [concept_id for concept_id in own if concept_id is not None]
        if len(ids) < len(own):
            continue  # a word no stored text mentions: neither does any text mention the name
        if len(words) == 1 and vocabulary.lookup(name) == ids[0]:  # (an alias resolves elsewhere)
            continue  # a word of the open vocabulary: every note that wrote it holds it already
        holders = _holders(backend, namespace, ids[0])
        for concept_id in ids[1:]:
            holders &= _holders(backend, namespace, concept_id)
        out |= holders
    return sorted(out)


def apply_names(writer: Writer, namespace: Namespace, names: Sequence[str], concept_ids: Collection[int]) -> int:
    """Sets the lexical states of `concept_ids` (the concepts `names` resolve to: declared
    concepts, alias targets) on every stored text item that mentions them; returns the items
    changed. Call without the namespace's write lock: it takes it per batch."""
    backend = writer.backend
    wanted = set(concept_ids)
    open_terms = namespace.settings.open_vocabulary
    ids = candidate_ids(backend, namespace, names)

    def change(record) -> None:
        apply_text(record, namespace.vocabulary, lexical=True, open_terms=open_terms, only=wanted)

    changed = 0
    for start in range(0, len(ids), BATCH):
        with namespace.write_lock:  # one synced commit per batch
            records = [
                record
                for record in backend.get_items(namespace.name, ids[start : start + BATCH])
                if record is not None and record.kind == enums_pb2.ITEM_KIND_TEXT and record.text
            ]
            changed += writer.rewrite_many(namespace, records, change)  # forgotten since listed: skipped
    return changed


def _mentionable(vocabulary, name: str) -> bool:
    """Every content word of `name` is a concept stored text wrote. A name with no content word
    of its own ("pe", "mi", "hiv/aids": too short, or stop words) is not: no text can mention it,
    so it stays unknown (it used to look up None: AttributeError, INTERNAL, issue 49)."""
    words = textproc.content_terms(name)
    return bool(words) and all(vocabulary.own_id(word) is not None for word in words)


def learn_names(writer: Writer, namespace: Namespace, names: Sequence[str]) -> list[str]:
    """In an open vocabulary, binds the `names` a query asked for that the vocabulary lacks but
    that stored text can mention (every word of the name is a concept: "chest pain" after notes
    said "chest" and "pain") and applies them to the stored items; returns the names learned.
    A name with a word no text mentions is left unknown: binding it would state nothing."""
    vocabulary = namespace.vocabulary
    learnable = [
        name for name in dict.fromkeys(names) if vocabulary.lookup(name) is None and _mentionable(vocabulary, name)
    ]
    if not learnable:
        return []
    # Called from reads (Recall, ListItems) that may run at a weaker level than Strong
    # (storage/consistency.py): this writes, so what it reads must be every acknowledged write.
    with consistency.reading(consistency.STRONG):
        with namespace.write_lock:
            ids = writer.concept_ids(namespace, learnable)
        apply_names(writer, namespace, learnable, set(ids.values()))
    return learnable
