"""The storage seam: the one interface the library (:class:`polarmem_server.library.memory.Memory`) uses
to persist, index, search and read back the items of its namespaces.

``storage/local`` (RocksDB + the compiled core, one process) is the first backend; a backend over
a shared service (e.g. Milvus) implements the same class without touching the domain or the API.
What the library keeps in process is only what it can rebuild from a backend at any time
(settings, vocabulary, score model); everything durable and everything searched is behind here.

Vocabulary of this module
-------------------------
* A *record* is a ``polarmem.storage.v1`` message: :class:`NamespaceRecord` (settings, declared
  vocabulary, score model) or :class:`ItemRecord` (evidence, states, partition, history). The
  library builds records; a backend stores them byte-for-byte (``SerializeToString``) and must
  hand back an equal message. It may *read* them (states, kind, metadata) to index them.
* *Concept ids* are small non-negative integers bound for ever to a normalised concept name
  (:func:`polarmem_server.domain.vocabulary.normalise`) within one namespace. The backend owns
  the binding (:meth:`Backend.allocate_concepts`), so that every process sharing a backend
  agrees on it.
* *Vectors* of an item: ``{space: array}``, a ``(dim,)`` float32 array for a single-vector space,
  ``(rows, dim)`` for a multi space, already validated (finite, non-zero, right dimension) by
  the library. A space absent from the mapping has no vector for that item.

Concurrency
-----------
The library serialises the writes of one namespace (one writer at a time per namespace, across
all the methods that change it) but calls :meth:`Backend.search`, :meth:`Backend.get_items` and
the other reads concurrently with writes and with each other. A read sees every write either
wholly or not at all. A backend shared by several processes must keep that per-item atomicity
for writers in other processes too (the library's lock only covers its own process).

Errors
------
Only :mod:`polarmem_server.errors` classes escape a backend on purpose: ``NotFound`` (unknown
namespace), ``AlreadyExists``, ``InvalidArgument`` (a value the backend cannot hold, named),
``Unavailable`` (the store or service is down, closed, or a write was not acknowledged —
retrying may work), ``ResourceExhausted`` (disk or quota), ``FailedPrecondition`` (the data
directory or collection is in a state this server cannot use). A write that raises has changed
nothing durable for the item(s) it names, and the in-memory state of a local backend stays in
step with what is durable. Anything else is a bug and reaches clients as INTERNAL.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from polarmem.storage.v1.records_pb2 import ItemRecord, NamespaceRecord
from polarmem_server.errors import Unimplemented

if TYPE_CHECKING:
    from polarmem_server.domain.vocabulary import Vocabulary

POLARITIES = ("has", "not_has", "align")
"""Edge polarities of :meth:`Backend.items_by_concept` and :class:`NamespaceCounts`: an item
HAS / NOT_HAS a concept (its state), or ALIGNs with it (its text mentions it, ``ItemRecord.mentions``)."""


@dataclass(frozen=True)
class ItemWrite:
    """One item to store: a new item (``previous`` is None) or a new version of a stored one
    (``previous`` is the stored record it replaces, as the library last read it).

    ``vectors`` is the item's complete vector set after the write: a space absent from it has no
    vector afterwards (a replaced item's old vector in that space is dropped)."""

    record: ItemRecord
    vectors: Mapping[str, np.ndarray]
    previous: ItemRecord | None = None


@dataclass(frozen=True)
class SearchRequest:
    """One ranked search over a namespace's live items.

    Tier of an item (``s_log``): -1 (conflict) when it states NOT_HAS for a ``required`` concept
    or HAS for a ``forbidden`` one; otherwise +1 (entailed) when it states HAS for at least one
    ``required`` concept (the paper's ``Q+ ∩ HAS ≠ ∅``, as the compiled core ranks); otherwise 0
    (neutral).
    ``s_sem`` is the sum over ``vectors``' spaces of ``weights[space]`` (default 1.0) times the
    cosine between the query vector and the item's vector (the best row for a multi space); an
    item without a vector in a queried space contributes 0 for it.

    Order: ``hard`` by (tier desc, s_sem desc); ``soft`` by ``s_sem + soft_lambda·tier`` desc
    (the hit's ``score`` stays s_sem); ``off`` by s_sem desc (tier still reported). Ties: any order that is deterministic for an
    unchanged namespace.

    Filters (an item must pass all): ``kinds`` (ItemKind values; empty = all),
    ``metadata_equals`` (every key maps to exactly that value), ``absent_verified`` (the item
    states NOT_HAS for every ``forbidden`` concept — strict recall's second search), and
    ``exclude_conflicts`` (tier -1 items are dropped). ``tier_counts`` counts the items that pass
    every filter except ``exclude_conflicts``, by tier.

    ``with_records``: the caller will read the hits' records; a backend whose every read is a
    round trip (Milvus) may return them with the hits (``SearchHit.record``) instead.

    ``present_level`` / ``absent_level`` (``hard`` only; 0 = not used): confidence flags within
    tiers (domain/confidence.py's grid). An item is *confidently absent* when every ``forbidden``
    concept's confidence is below ``ABSENT_BELOW[absent_level - 1]``, *confidently present* when
    every ``required`` one's is above ``PRESENT_ABOVE[present_level - 1]``; hard then orders by
    (tier, confidently absent, confidently present, s_sem), ``present_weight`` / ``absent_weight`` (``hard`` only; 0 = not used): within a tier
    and its flags, rank by s_sem + present_weight x mean confidence of the required concepts -
    absent_weight x mean confidence of the forbidden ones (index.py's module docstring). A backend
    that keeps no confidence (Milvus) may ignore both: the order is then the plain hard order."""

    vectors: Mapping[str, np.ndarray] = field(default_factory=dict)
    required: Sequence[int] = ()
    forbidden: Sequence[int] = ()
    k: int = 10
    mode: str = "hard"
    soft_lambda: float = 1.0
    exclude_conflicts: bool = False
    kinds: Sequence[int] = ()
    metadata_equals: Mapping[str, str] = field(default_factory=dict)
    weights: Mapping[str, float] = field(default_factory=dict)
    absent_verified: bool = False
    with_records: bool = False
    # False: the namespace's approximate index may choose each large tier's top k (tiers and
    # their order stay exact); a backend without one searches exactly. ef_search 0 = its default.
    exact: bool = True
    ef_search: int = 0
    present_level: int = 0
    absent_level: int = 0
    present_weight: float = 0.0
    absent_weight: float = 0.0


@dataclass(frozen=True)
class SearchHit:
    """One ranked item: what the core reads back from a backend that searches itself (the core
    explains, labels and writes the context from the records)."""

    item_id: str
    tier: int  # +1 entailed, 0 neutral, -1 conflict
    score: float  # s_sem in every mode (soft ranks by s_sem + λ·tier but reports s_sem)
    record: object | None = None  # the item's ItemRecord, read with the search (with_records), or None


@dataclass(frozen=True)
class SearchResult:
    """Hits in rank order (at most ``k``) and the eligible items per tier
    (keys ``entailed``, ``neutral``, ``conflict``)."""

    hits: list[SearchHit]
    tier_counts: Mapping[str, int]


@dataclass(frozen=True)
class NamespaceCounts:
    """What metrics and GetNamespace / GetConcept report, kept exact by the backend.

    ``kinds``: live items per ItemKind value; ``concepts[polarity][concept_id]``: live items
    with that edge; ``scored_concepts``: evidence entries with template scores over all live
    items (what drives the score model's refits)."""

    kinds: Mapping[int, int]
    concepts: Mapping[str, Mapping[int, int]]
    scored_concepts: int

    @property
    def items(self) -> int:
        return sum(self.kinds.values())


class Backend(ABC):
    """Persists and indexes the items of namespaces, searches them and reads records back.

    Durability: every method that changes state has made its change durable, to the degree the
    backend was configured for (the local backend's ``durability="sync"`` syncs its write-ahead
    log), when it returns; a crash loses none of it. Ordering: within one namespace, changes
    become visible to reads in the order the library made them."""

    name: str = "storage"  # what messages call this backend ("local", "milvus")
    # True where other processes change the same namespaces (Milvus): the library then reads
    # namespace records back periodically (the settings refresh, library/daemons.py).
    shared: bool = False
    # Whether search() honours SearchRequest.present_level / absent_level (confidence within
    # tiers); a backend that keeps no confidence leaves it False and recall says so.
    ranks_by_confidence: bool = False
    # Whether this process's compiled core holds the namespaces' indexes (front_view gives them, the
    # compiled front searches them itself); otherwise the core entry plans each Recall and calls
    # search() and get_items() for its searches and records (library/core_recall.py BackendSearches).
    searches_in_core: bool = False
    # The approximate-index kinds (NamespaceConfig.ann.kind) this backend builds; the library
    # refuses a namespace asking for another before the backend sees it. Empty: none.
    ann_kinds: tuple[str, ...] = ()
    ann_note: str = "it has none"  # why, when ann_kinds is empty
    # A read-only replica (api/processes.py): reads only; the library writes nothing through it.
    read_only: bool = False

    # ---- lifecycle ----------------------------------------------------------------------------

    @property
    def loaded_items(self) -> int:
        """Items loaded into process memory when the backend opened (0 for a remote one)."""
        return 0

    @property
    def load_seconds(self) -> float:
        """Seconds spent loading at open."""
        return 0.0

    def flush(self) -> None:
        """Makes every acknowledged write durable now (for a backend configured to acknowledge
        before syncing); called before a clean shutdown. Default: nothing to do."""

    @abstractmethod
    def close(self) -> None:
        """Releases the store; idempotent. Calls after it raise ``Unavailable``."""

    def reachable(self) -> bool:
        """Whether the store answers now (a cheap probe, bounded in time): the server's health
        follows it. A local store is always reachable (its write failures have their own watchdog)."""
        return True

    def watch_writes(self, failed: Callable[[str], None], resumed: Callable[[], None]) -> bool:
        """Has ``failed(kind)`` called when a write fails on the store ("disk_full", "io_error")
        and ``resumed()`` when writes work again; returns whether this backend reports such
        failures (the local one does; the server's writes health and store watchdog follow them)."""
        return False

    def resume_writes(self) -> None:
        """After a write failure, one try at making writes work again (the local store reopens);
        nothing while writes work. The server's store watchdog calls it every second."""

    def scrub(self, stopping: threading.Event) -> tuple[int, list[str]] | None:
        """Reads every stored block, so that a damaged file is found before a client's read meets
        it: (keys read, the damage found, in the storage's words). ``stopping`` set ends it early.
        None: the backend checks its own files (Milvus). The server's scrub daemon calls it."""
        return None

    def snapshot(self, dest_dir: str) -> Any:
        """Writes a consistent copy of every namespace to ``dest_dir`` (absolute, not existing)
        while serving; returns its manifest. Optional: a backend that cannot raises Unimplemented."""
        raise Unimplemented(f"the {type(self).__name__} storage backend has no snapshot; use its own backup tools")

    # ---- namespaces ---------------------------------------------------------------------------

    @abstractmethod
    def namespaces(self) -> list[NamespaceRecord]:
        """Every namespace's record, by name."""

    def namespace_record(self, name: str) -> NamespaceRecord | None:
        """One namespace's record, None if there is none: how a process finds a namespace that
        another process sharing the backend created after it started."""
        return next((record for record in self.namespaces() if record.name == name), None)

    @abstractmethod
    def create_namespace(self, record: NamespaceRecord) -> None:
        """Creates an empty namespace with these settings (``record.spaces`` fixes its vector
        spaces for life). ``AlreadyExists`` if the name is taken (also when another process
        created it first)."""

    @abstractmethod
    def update_namespace(self, record: NamespaceRecord) -> None:
        """Replaces a namespace's record (settings, declared concepts, score model); its spaces
        never change. ``NotFound`` if it does not exist. Items are not touched: the library
        rewrites them itself (:meth:`write_items`) when new settings change their states."""

    @abstractmethod
    def delete_namespace(self, name: str) -> None:
        """Removes a namespace with its concepts, items and vectors, atomically.
        ``NotFound`` if it does not exist."""

    # ---- concepts -----------------------------------------------------------------------------

    @abstractmethod
    def concepts(self, ns: str) -> list[tuple[int, str]]:
        """Every (id, name) bound in the namespace, by id. Ids are dense from 0 in the local
        backend; callers must not assume density."""

    def vocabulary(self, ns: str) -> Vocabulary | None:
        """The backend's own concept table of namespace ``ns`` where it lives in this process (the
        local backend's), which the library's namespace takes as its vocabulary: one table, so a
        concept the backend binds is the namespace's at once. None (a backend shared between
        processes): the library keeps its own, bound from :meth:`concepts`."""
        return None

    def concepts_of(self, names: Sequence[str]) -> dict[str, list[tuple[int, str]]]:
        """``concepts`` of each of these namespaces: what a process opening every namespace at
        start reads (a shared backend reads them all at once, not one round trip each)."""
        return {name: self.concepts(name) for name in names}

    def concepts_from(self, ns: str, first_id: int) -> list[tuple[int, str]]:
        """The (id, name) bindings with id >= ``first_id``, by id: how a process whose vocabulary
        holds ids below ``first_id`` catches up with bindings other processes sharing the
        backend made since it read them (the library calls it on an unknown concept or id)."""
        return [(cid, name) for cid, name in self.concepts(ns) if cid >= first_id]

    @abstractmethod
    def allocate_concepts(self, ns: str, names: Sequence[str]) -> list[int]:
        """The id of each (normalised) name, binding names never seen to fresh ids; idempotent,
        and the same answer in every process sharing the backend (allocate atomically, or
        derive the id from the name). A binding returned is permanent once any item written
        with :meth:`write_items` refers to it; the local backend persists new bindings in the
        batch of the next item write, so an allocation no item ever used may be forgotten
        by a restart (nothing refers to it). ``NotFound`` if the namespace does not exist."""

    # ---- items --------------------------------------------------------------------------------

    @abstractmethod
    def write_items(self, ns: str, writes: Sequence[ItemWrite]) -> None:
        """Stores new items, or new versions of stored ones, and indexes them for search. A
        batch is all new items or all new versions (the local backend refuses a mix: ``ValueError``).

        Each item is all or nothing; the local backend commits the whole batch at once (one
        write-ahead-log sync). Ids within one call are distinct. A new item's id must not be
        stored yet and a replaced item's must be (the library checks both under its lock; a
        backend shared between processes re-checks and raises ``AlreadyExists`` / ``NotFound``).
        Afterwards :meth:`get_items` returns exactly ``record`` and :meth:`search` ranks the
        item by ``record``'s HAS / NOT_HAS states, kind, metadata and ``vectors``."""

    @abstractmethod
    def delete_item(self, ns: str, record: ItemRecord) -> None:
        """Removes a stored item (``record`` as last read) from storage and search, atomically.
        ``NotFound`` if it is not stored."""

    @abstractmethod
    def contains(self, ns: str, item_id: str) -> bool:
        """Whether an item with this id is stored (cheap: no record is read)."""

    def stored_ids(self, ns: str, item_ids: Sequence[str]) -> set[str]:
        """Which of these ids are stored: one look-up for a whole batch (a remote backend answers
        it in one round trip instead of one :meth:`contains` per id)."""
        return {item_id for item_id in item_ids if self.contains(ns, item_id)}

    @abstractmethod
    def get_items(self, ns: str, item_ids: Sequence[str]) -> list[ItemRecord | None]:
        """The stored record of each id, None where there is none, in the order asked."""

    @abstractmethod
    def get_vectors(self, ns: str, item_id: str) -> dict[str, np.ndarray]:
        """The item's stored vectors, each as a ``(rows, dim)`` float32 array (one row for a
        single-vector space); empty if the item has none or is not stored."""

    @abstractmethod
    def iter_items(self, ns: str) -> Iterator[ItemRecord]:
        """Every stored record of the namespace, in id order. Used by re-partitioning and
        score-model fits under the namespace's write lock; must not hold all records in memory."""

    @abstractmethod
    def items_by_concept(self, ns: str, concept_id: int, polarity: str, after: str = "", limit: int = 100) -> list[str]:
        """Ids of items with that edge (``polarity`` in :data:`POLARITIES`), in id order,
        strictly after ``after``, at most ``limit``."""

    @abstractmethod
    def counts(self, ns: str) -> NamespaceCounts:
        """Exact live counts of the namespace (see :class:`NamespaceCounts`)."""

    # ---- search -------------------------------------------------------------------------------

    @abstractmethod
    def search(self, ns: str, request: SearchRequest) -> SearchResult:
        """Ranks the namespace's live items (see :class:`SearchRequest`). Concept ids the
        namespace never bound match nothing; query vectors are validated by the library.
        Every hit's item was stored when the search ran; it may be gone by the time the caller
        reads it (:meth:`get_items` then returns None for it)."""

    def records_to_read(self, ns: str) -> int:
        """Live items of the namespace whose record the core does not hold yet (front_view's
        records; items stored before a start-up or a replica's rebuild): 0 where none are kept."""
        return 0

    def read_back_records(self, ns: str, after: str | None, limit: int) -> str | None:
        """Gives the core the stored records of up to `limit` items after id `after` (None: from
        the first) that it lacks; returns the last id read (where to go on), or None when the
        namespace has no more."""
        return None

    def write_times(self) -> tuple[list[float], list[int], float] | None:
        """The item writes' latency so far, as the store timed them (cpp/include/polarmem/
        store_writes.hpp): (bucket upper bounds in seconds, items per bucket with +Inf last, total
        seconds); None where this backend does not time its writes (the default)."""
        return None

    def note_writer(self, ns: str) -> tuple[Any, Any] | None:
        """The core's writer of the namespace's new items (cpp/include/polarmem/item_writes.hpp)
        and its queue of appended concepts (concept_appends.hpp), through which the core stores a
        new note itself (library/core_recall.py hands them to the namespace's view); None where
        every write must be this backend's own (the default)."""
        return None

    def front_view(self, ns: str) -> tuple[Any, Any, Any, Any] | None:
        """The namespace's compiled search objects, for the compiled Recall front to plan and answer
        its Recalls from (library/core_recall.py): (index, item ids, metadata postings, records by slot or
        None). None where the searches do not run in this process's core (the default)."""
        return None
