"""Moves namespaces between two storage backends (`polarmem migrate`): a local data directory to
a Milvus deployment and back, through the storage seam only (storage/backend.py).

Per namespace: its record (settings, vocabulary, score model) is created or updated on the
target; its concept bindings are bound on the target in id order and must come out with the
same ids (item records refer to concepts by id); then its items are copied in id order, in
batches: each batch's ids are read on the target first, an item already there with the same
version is skipped, one with another version is replaced, a missing one is written. So a run
that stopped part-way (or one repeated) resumes where it stopped and writes nothing twice. At
the end the target's live item count must equal the source's.

An approximate index is a structure of the backend that builds it: the local backend builds
``hnsw`` graphs, Milvus ``ivf`` lists. A namespace whose index kind the target does not build
gets the target's kind with its default settings (the report says so in ``index_change``); a
namespace already on the target keeps the target's index.

The source should not change while it is migrated (stop writers, or migrate a stopped server's
data directory); a changed source shows up as a count mismatch, and running again fixes what
was added or changed (not what was deleted on the source since).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from polarmem.storage.v1.records_pb2 import ItemRecord, NamespaceRecord
from polarmem_server.domain.settings import ann_to_record
from polarmem_server.errors import FailedPrecondition, NotFound, quoted
from polarmem_server.index import AnnSpec
from polarmem_server.storage.backend import Backend, ItemWrite

Progress = Callable[[str, int, int], None]  # (namespace, items done, items in the source)
DEFAULT_BATCH = 500


@dataclass
class NamespaceMigration:
    """What one namespace's migration did."""

    namespace: str
    source_items: int
    written: int = 0
    replaced: int = 0
    skipped: int = 0
    target_items: int = 0
    index_change: str = ""  # e.g. "approximate index hnsw -> ivf (its defaults)"; "" = as on the source

    @property
    def complete(self) -> bool:
        return self.target_items == self.source_items


def migrate(
    source: Backend,
    target: Backend,
    namespaces: Sequence[str] = (),
    batch: int = DEFAULT_BATCH,
    progress: Progress | None = None,
) -> list[NamespaceMigration]:
    """Copies the named namespaces (all when none are named) from ``source`` to ``target``;
    returns one report per namespace. ``FailedPrecondition`` when the target holds the namespace
    with other vector spaces or other concept ids, or the counts differ at the end."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    records = {record.name: record for record in source.namespaces()}
    missing = [name for name in namespaces if name not in records]
    if missing:
        raise NotFound(f"namespace(s) {quoted(missing)} do not exist in the source; known: {quoted(sorted(records))}")
    chosen = list(namespaces) or sorted(records)
    return [_migrate_namespace(source, target, records[name], batch, progress) for name in chosen]


def _migrate_namespace(
    source: Backend, target: Backend, record: NamespaceRecord, batch: int, progress: Progress | None
) -> NamespaceMigration:
    ns = record.name
    index_change = _put_namespace(target, record)
    _bind_concepts(source, target, ns)
    report = NamespaceMigration(ns, source.counts(ns).items, index_change=index_change)
    multi = {space.name: space.multi for space in record.spaces}
    pending: list[ItemRecord] = []
    done = 0
    for item in source.iter_items(ns):
        pending.append(item)
        if len(pending) >= batch:
            _copy_batch(source, target, ns, pending, multi, report)
            done += len(pending)
            pending = []
            if progress is not None:
                progress(ns, done, report.source_items)
    if pending:
        _copy_batch(source, target, ns, pending, multi, report)
        done += len(pending)
        if progress is not None:
            progress(ns, done, report.source_items)
    report.target_items = target.counts(ns).items
    if not report.complete:
        raise FailedPrecondition(
            f"namespace {quoted(ns)}: the target holds {report.target_items} items after the "
            f"migration, the source {report.source_items}; did the source change meanwhile? "
            "Run the migration again (it resumes)"
        )
    return report


def _put_namespace(target: Backend, record: NamespaceRecord) -> str:
    """Creates or updates the namespace on the target; returns how its index changed ("" = not)."""
    existing = next((r for r in target.namespaces() if r.name == record.name), None)
    placed = NamespaceRecord()
    placed.CopyFrom(record)
    if existing is None:
        change = _index_for(placed, target)
        target.create_namespace(placed)
        return change
    if [(s.name, s.dim, s.multi) for s in existing.spaces] != [(s.name, s.dim, s.multi) for s in record.spaces]:
        raise FailedPrecondition(
            f"namespace {quoted(record.name)} exists on the target with other vector spaces; "
            "delete it there or migrate to another target"
        )
    placed.ClearField("ann")
    if existing.HasField("ann"):  # the target's index stays what its structures were built as
        placed.ann.CopyFrom(existing.ann)
    target.update_namespace(placed)  # otherwise the source's settings and score model win
    return ""


def _index_for(record: NamespaceRecord, target: Backend) -> str:
    """Gives ``record`` an approximate index of a kind the target builds (see the module docstring)."""
    if not record.HasField("ann") or record.ann.kind in target.ann_kinds:
        return ""
    was = record.ann.kind
    record.ClearField("ann")
    if not target.ann_kinds:
        return f"approximate index {was} dropped (the {target.name} backend builds none)"
    kind = target.ann_kinds[0]
    record.ann.CopyFrom(ann_to_record(AnnSpec(kind=kind))["ann"])
    return f"approximate index {was} -> {kind} (its defaults)"


def _bind_concepts(source: Backend, target: Backend, ns: str) -> None:
    bound = source.concepts(ns)
    if not bound:
        return
    ids = target.allocate_concepts(ns, [name for _, name in bound])
    if ids != [cid for cid, _ in bound]:
        clash = next((name, cid, got) for (cid, name), got in zip(bound, ids) if cid != got)
        raise FailedPrecondition(
            f"namespace {quoted(ns)}: concept {quoted(clash[0])} has id {clash[1]} in the source "
            f"but {clash[2]} in the target (the target's namespace was used on its own); "
            "migrate into a namespace the target does not have"
        )


def _copy_batch(
    source: Backend,
    target: Backend,
    ns: str,
    items: list[ItemRecord],
    multi: dict[str, bool],
    report: NamespaceMigration,
) -> None:
    stored = target.get_items(ns, [item.id for item in items])
    writes = []
    for item, there in zip(items, stored):
        if there is not None and there.version == item.version:
            report.skipped += 1
            continue
        vectors = {
            space: rows if multi.get(space) else np.asarray(rows[0])
            for space, rows in source.get_vectors(ns, item.id).items()
        }
        writes.append(ItemWrite(item, vectors, previous=there))
        if there is None:
            report.written += 1
        else:
            report.replaced += 1
    # new items and new versions are separate writes (Backend.write_items takes one kind a batch)
    for group in ([w for w in writes if w.previous is None], [w for w in writes if w.previous is not None]):
        if group:
            target.write_items(ns, group)
