"""Python face of the compiled retrieval core (``polarmem_server._core``).

One :class:`Index` per namespace: dense slots holding an item kind, named vector spaces and
HAS / NOT_HAS concept bitsets, searched lexicographically by ``(s_log, s_sem, slot)``. This
module converts Python inputs into the exact arrays the core expects and names the argument
at fault when an input cannot be converted; the core validates values and changes nothing
when a call fails.

Errors: bad input raises :class:`InvalidArgumentError` (a ``ValueError``),
:class:`InvalidArgumentType` (a ``TypeError``) or :class:`OutOfRangeError` (an ``IndexError``);
a removed slot raises :class:`FailedPreconditionError` (a ``LookupError``); memory the core
cannot allocate raises :class:`ResourceExhaustedError` (a ``MemoryError``). All are subclasses of
the domain classes in :mod:`polarmem_server.errors`, so the API layer maps them by class; anything
else is a bug.

Searching: :meth:`Index.search_requests` is the one entry point, taking one
:class:`SearchRequest` or a list of them (a batch, each request with its own constraints);
:meth:`Index.request` builds a request from friendly arguments, and :meth:`Index.search` /
:meth:`Index.search_batch` are thin wrappers over the two.

Approximate search (opt-in): an :class:`Index` built with ``ann=AnnSpec(...)`` keeps an HNSW graph per
single-vector space, and a request with ``exact=False`` lets the graph order the candidates
*within* each logic tier. The tier pass stays exact (tier counts, pruning, the order of tiers);
a small tier is scanned exactly; returned scores are exact. ``exact=True`` is the default.

Confidence within tiers (opt-in): items may carry graded confidence per concept (``grades``: +g
confidently present at level g, -g confidently absent, g in 1 .. :data:`CONFIDENCE_LEVELS`), and a
hard-mode request with ``present_level`` / ``absent_level`` ranks by ``(tier, every forbidden
concept confidently absent, every required concept confidently present, s_sem, slot)``. What a
level means (e.g. P(present) > 0.99) is the caller's; the core keeps one bitmap per concept,
polarity and level. A request without levels ranks exactly as before. Grades may also carry the
confidence itself (:class:`GradeCSR` ``confidence``, P(present) in [0, 1], NaN = none), which a
hard-mode request with ``present_weight`` / ``absent_weight`` adds to s_sem within a tier and its
flags: ``s_sem + present_weight * mean P(present) of the required concepts - absent_weight * mean
P(present) of the forbidden ones`` (kept as a byte, P = b / 254; a concept without one counts 1
where the item states HAS, 0 where NOT_HAS, 0.5 otherwise). Scores returned stay s_sem.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, overload

import numpy as np

from polarmem_server import _core
from polarmem_server.errors import InvalidArgument, quoted

# The core's error classes (subclasses of polarmem_server.errors, registered by the binding).
InvalidArgumentError = _core.InvalidArgumentError
OutOfRangeError = _core.OutOfRangeError
FailedPreconditionError = _core.FailedPreconditionError
ResourceExhaustedError = _core.ResourceExhaustedError

# One search request (bound from the core's C++ struct) and its ranking modes.
SearchRequest = _core.SearchRequest
SearchMode = _core.SearchMode
# The largest k (top_k) one search accepts; the library edge validates against this number.
MAX_TOP_K: int = int(_core.MAX_TOP_K)
# Confidence levels per polarity (grades -CONFIDENCE_LEVELS .. CONFIDENCE_LEVELS).
CONFIDENCE_LEVELS: int = int(_core.CONFIDENCE_LEVELS)


class InvalidArgumentType(InvalidArgument, TypeError):
    """An argument of the wrong type (e.g. strings where numbers belong): INVALID_ARGUMENT."""


VISUAL = 1
TEXT = 2
KIND_CODES = {"visual": VISUAL, "text": TEXT}
MODE_CODES = {"off": 0, "hard": 1, "soft": 2, "strict": 3}
TIERED_MODES = ("hard", "strict")  # the modes that rank logic tiers first (confidence applies within them)
TIER_NAMES = {-1: "conflict", 0: "neutral", 1: "entailed"}
STORAGES = ("fp32", "fp16", "int8")
ANN_KINDS = ("hnsw", "ivf")  # the compiled core builds hnsw; ivf is the Milvus backend's (storage/milvus)
MAX_IVF_LISTS = 65_536  # Milvus's nlist / nprobe limit


def build_info() -> dict[str, Any]:
    """What the core was compiled with and which SIMD level it runs (``POLARMEM_SIMD`` overrides)."""
    return dict(_core.build_info())


def set_simd_level(level: str) -> None:
    """Force a kernel level (``scalar``, ``avx2``, ``avx512``) for this process; for tests."""
    _core.set_simd_level(level)


def simd_level() -> str:
    return str(_core.simd_level())


@dataclass(frozen=True)
class SpaceSpec:
    """A named vector space: ``multi`` spaces hold several vectors per item (max-sim);
    ``storage`` adds a compact fp16 / int8 copy scanned first, with an exact fp32 re-rank."""

    name: str
    dim: int
    multi: bool = False
    storage: str = "fp32"

    def __post_init__(self) -> None:
        if not self.name:
            raise InvalidArgumentError("SpaceSpec.name must not be empty")
        if int(self.dim) < 1:
            raise InvalidArgumentError(f"SpaceSpec.dim must be >= 1, got {self.dim}")
        if self.storage not in STORAGES:
            raise InvalidArgumentError(f"SpaceSpec.storage must be one of {STORAGES}, got {self.storage!r}")


@dataclass(frozen=True)
class AnnSpec:
    """An approximate index (HNSW graph) for each single-vector space of an index.

    ``m`` links per node, ``ef_construction`` the insert-time candidate list, ``ef_search`` the
    default search-time list (a request may raise it). A tier is scanned exactly when it holds
    at most ``max(exact_below, ef)`` items or ``count**2 <= exact_factor * ef * m * N``: a
    filtered walk over a sparse tier visits about ``ef * m / selectivity`` nodes, more than an
    exact scan of the tier reads. A tier past ``max(exact_below, ef)`` that the second rule gives to
    the scan is walked first within a budget (a tier around the query fills the walk's list in a
    few hundred rows), and scanned when the walk gives up. Defaults: benchmarks/bench_ann.py,
    docs/performance-core.md ("A tier around the query is walked first")."""

    kind: str = "hnsw"
    m: int = 16
    ef_construction: int = 200
    ef_search: int = 64
    exact_below: int = 2048
    exact_factor: float = 4.0
    nlist: int = 1024  # ivf only: lists (clusters)
    nprobe: int = 16  # ivf only: lists an approximate search probes by default

    def __post_init__(self) -> None:
        if self.kind not in ANN_KINDS:
            raise InvalidArgumentError(f"ann.kind must be one of {ANN_KINDS}, got {quoted(self.kind)}")
        for name, low, high in (
            ("m", 2, 512),
            ("ef_construction", 1, 10_000),
            ("ef_search", 1, 10_000),
            ("exact_below", 0, 2**62),
            ("nlist", 1, MAX_IVF_LISTS),
            ("nprobe", 1, MAX_IVF_LISTS),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
                raise InvalidArgumentError(f"ann.{name} must be an integer in [{low}, {high}], got {quoted(value)}")
        factor = self.exact_factor
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 <= factor < float("inf"):
            raise InvalidArgumentError(f"ann.exact_factor must be a finite number >= 0, got {quoted(factor)}")
        if self.nprobe > self.nlist:
            raise InvalidArgumentError(f"ann.nprobe ({self.nprobe}) must not exceed ann.nlist ({self.nlist})")

    def params(self, space: str) -> tuple:
        return (
            space,
            int(self.m),
            int(self.ef_construction),
            int(self.ef_search),
            int(self.exact_below),
            float(self.exact_factor),
        )


@dataclass
class SearchHits:
    """Search output in rank order, plus how many eligible items each tier held."""

    slots: np.ndarray
    tiers: np.ndarray
    scores: np.ndarray
    tier_counts: dict[str, int] = field(default_factory=dict)
    scored: int = 0
    reranked: int = 0
    approximate: bool = False  # some tier's members were chosen by the approximate graph
    # per hit, when confidence levels were requested: bit 1 confidently absent, bit 0 confidently present
    confidence: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    # per hit, when confidence weights were requested: the value it ranked by (s_sem + the term)
    rank_scores: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))

    def __len__(self) -> int:
        return int(self.slots.shape[0])


def _float_matrix(values: Any, argument: str, dim: int | None = None) -> np.ndarray:
    try:
        array = np.asarray(values)
    except Exception as exc:  # ragged lists and the like
        raise InvalidArgumentError(f"{argument}: cannot be read as a numeric array ({exc})") from exc
    if array.dtype.kind not in "fiu":
        raise InvalidArgumentType(f"{argument}: expected real numbers, got dtype {array.dtype}")
    if array.ndim == 1 and dim is not None and array.shape[0] == dim:
        array = array[None, :]
    if array.ndim != 2:
        raise InvalidArgumentError(f"{argument}: expected a 2-D array (rows x dim), got shape {array.shape}")
    return np.ascontiguousarray(array, dtype=np.float32)


def _float_vector(values: Any, argument: str) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype.kind not in "fiu":
        raise InvalidArgumentType(f"{argument}: expected real numbers, got dtype {array.dtype}")
    if array.ndim != 1:
        raise InvalidArgumentError(f"{argument}: expected a 1-D vector, got shape {array.shape}")
    return np.ascontiguousarray(array, dtype=np.float32)


def _concept_ids(values: Iterable[int], argument: str) -> np.ndarray:
    ids = np.asarray(list(values), dtype=np.int64)
    if ids.size and ids.min() < 0:
        raise OutOfRangeError(f"{argument}: concept ids must be >= 0, got {int(ids.min())}")
    return ids.astype(np.uint32)


def _slots(values: Any, argument: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim == 0:
        array = array[None]
    if array.size and array.dtype.kind not in "iu":
        raise InvalidArgumentType(f"{argument}: slots must be integers, got dtype {array.dtype}")
    return np.ascontiguousarray(array, dtype=np.int64)


class ConceptCSR(NamedTuple):
    """Concept lists of many items as CSR arrays (item i holds ``ids[indptr[i]:indptr[i + 1]]``):
    the bulk form, for callers that already hold arrays (start-up)."""

    indptr: np.ndarray
    ids: np.ndarray


class GradeCSR(NamedTuple):
    """Confidence grades of many items as CSR arrays: item i grades ``ids[p]`` with ``grades[p]``
    for p in ``indptr[i]:indptr[i + 1]`` (int8, -CONFIDENCE_LEVELS .. CONFIDENCE_LEVELS), and
    optionally ``confidence[p]``, P(present) in [0, 1] (NaN: none) for confidence weights."""

    indptr: np.ndarray
    ids: np.ndarray
    grades: np.ndarray
    confidence: np.ndarray | None = None


def grade_input(grades: Sequence[Mapping[int, int]] | GradeCSR | None, count: int) -> tuple | None:
    """The core's (indptr, ids, grades) from per-item {concept: grade} mappings or a GradeCSR."""
    if grades is None:
        return None
    column = None
    if isinstance(grades, GradeCSR):
        indptr, ids = _csr(ConceptCSR(grades.indptr, grades.ids), count, "grades")
        values = np.asarray(grades.grades)
        if grades.confidence is not None:
            confidence = np.asarray(grades.confidence)
            if confidence.shape != ids.shape or confidence.dtype.kind != "f":
                raise InvalidArgumentError(f"grades: confidence must be floats, one per concept id ({ids.shape[0]})")
            if np.any((confidence < 0) | (confidence > 1)):
                raise InvalidArgumentError("grades: each confidence must be a probability in [0, 1] (NaN: none)")
            column = _column_bytes(confidence)
    else:
        if len(grades) != count:
            raise InvalidArgumentError(f"grades: expected one mapping per item ({count}), got {len(grades)}")
        indptr, ids = _csr([list(g) for g in grades], count, "grades")
        values = np.asarray([v for g in grades for v in g.values()], dtype=np.int64)
    if values.shape != ids.shape:
        raise InvalidArgumentError(f"grades: expected one grade per concept id ({ids.shape[0]}), got {values.shape[0]}")
    if values.size and (values.dtype.kind not in "iu" or np.abs(values.astype(np.int64)).max() > CONFIDENCE_LEVELS):
        raise InvalidArgumentError(
            f"grades: each grade must be an integer in [-{CONFIDENCE_LEVELS}, {CONFIDENCE_LEVELS}]"
        )
    return indptr, ids, np.ascontiguousarray(values, dtype=np.int8), column


def _column_bytes(confidence: np.ndarray) -> np.ndarray:
    """The core's confidence byte per P(present): rint(P * 254); NaN (none) -> NOT_SCORED."""
    out = np.full(confidence.shape, _core.NOT_SCORED, dtype=np.uint8)
    known = ~np.isnan(confidence)
    out[known] = np.rint(confidence[known].astype(np.float64) * _core.CONFIDENCE_SCALE).astype(np.uint8)
    return out


@overload
def _csr(lists: None, count: int, argument: str) -> tuple[None, None]: ...
@overload
def _csr(lists: Sequence[Iterable[int]] | ConceptCSR, count: int, argument: str) -> tuple[np.ndarray, np.ndarray]: ...
def _csr(
    lists: Sequence[Iterable[int]] | ConceptCSR | None, count: int, argument: str
) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
    if lists is None:
        return None, None
    if isinstance(lists, ConceptCSR):
        indptr = np.ascontiguousarray(lists.indptr, dtype=np.int64)
        if (
            indptr.shape != (count + 1,)
            or indptr[0] != 0
            or indptr[-1] != len(lists.ids)
            or np.any(np.diff(indptr) < 0)
        ):
            raise InvalidArgumentError(f"{argument}: indptr must rise from 0 to len(ids) with {count + 1} entries")
        return indptr, np.ascontiguousarray(lists.ids, dtype=np.uint32)
    if len(lists) != count:
        raise InvalidArgumentError(f"{argument}: expected one concept list per item ({count}), got {len(lists)}")
    indptr = np.zeros(count + 1, dtype=np.int64)
    flat: list[int] = []
    for i, concepts in enumerate(lists):
        flat.extend(int(c) for c in concepts)
        indptr[i + 1] = len(flat)
    return indptr, _concept_ids(flat, argument)


class Index:
    """The compiled retrieval core of one namespace. Thread-safe: searches run concurrently
    (the GIL is released) and see each write either wholly before or wholly after it."""

    def __init__(
        self, spaces: Sequence[SpaceSpec], threads: int = 0, ann: AnnSpec | Mapping[str, AnnSpec] | None = None
    ) -> None:
        """``ann``: one :class:`AnnSpec` for every single-vector space, or one per space name."""
        self._spaces = {s.name: s for s in spaces}
        self._space_order = {name: i for i, name in enumerate(self._spaces)}  # the core's order too
        self._ann = self._ann_by_space(ann)
        self._core = _core.Index(
            [(s.name, int(s.dim), bool(s.multi), s.storage) for s in spaces],
            int(threads),
            [spec.params(space) for space, spec in self._ann.items()],
        )

    def _ann_by_space(self, ann: AnnSpec | Mapping[str, AnnSpec] | None) -> dict[str, AnnSpec]:
        if ann is None:
            return {}
        for spec in [ann] if isinstance(ann, AnnSpec) else ann.values():
            if isinstance(spec, AnnSpec) and spec.kind != "hnsw":
                raise InvalidArgumentError(
                    f"ann.kind {quoted(spec.kind)}: the compiled index builds 'hnsw' graphs "
                    "('ivf' is the Milvus backend's kind); use kind 'hnsw'"
                )
        if isinstance(ann, AnnSpec):
            return {name: ann for name, spec in self._spaces.items() if not spec.multi}
        out = {}
        for space, spec in ann.items():
            if space not in self._spaces:
                raise InvalidArgumentError(
                    f"ann: unknown vector space {space!r} (this index has: {', '.join(self._spaces)})"
                )
            if self._spaces[space].multi:
                raise InvalidArgumentError(f"ann[{space!r}]: an approximate index needs a single-vector space")
            if not isinstance(spec, AnnSpec):
                raise InvalidArgumentType(f"ann[{space!r}]: expected an AnnSpec, got {type(spec).__name__}")
            out[space] = spec
        return out

    @property
    def ann(self) -> dict[str, AnnSpec]:
        """The spaces that have an approximate index, with its settings."""
        return dict(self._ann)

    # ---- writes --------------------------------------------------------------------------

    def add(
        self,
        count: int,
        vectors: Mapping[str, Any] | None = None,
        has: Sequence[Iterable[int]] | None = None,
        not_has: Sequence[Iterable[int]] | None = None,
        kinds: Sequence[str | int] | str | np.ndarray = "visual",
        grades: Sequence[Mapping[int, int]] | GradeCSR | None = None,
    ) -> np.ndarray:
        """Append ``count`` items; returns their slots.

        ``vectors[space]`` is a ``(count, dim)`` array, or a list with one vector or ``None``
        (no vector) per item; for a multi space, a list of ``(m_i, dim)`` arrays. ``grades``:
        per item ``{concept: grade}`` (see the module docstring) or a :class:`GradeCSR`.
        """
        kind_codes = self._kind_codes(kinds, count)
        batch = [self.vector_input(space, values, count) for space, values in (vectors or {}).items()]
        has_indptr, has_ids = _csr(has, count, "has")
        not_indptr, not_ids = _csr(not_has, count, "not_has")
        first = self._core.add(kind_codes, batch, has_indptr, has_ids, not_indptr, not_ids, grade_input(grades, count))
        return np.arange(first, first + count, dtype=np.int64)

    def set_concepts(
        self,
        slots: Any,
        has: Sequence[Iterable[int]],
        not_has: Sequence[Iterable[int]],
        grades: Sequence[Mapping[int, int]] | GradeCSR | None = None,
    ) -> None:
        """Replace the HAS / NOT_HAS states (and the confidence grades: none given = none kept) of
        live slots."""
        slot_array = _slots(slots, "slots")
        has_indptr, has_ids = _csr(has, len(slot_array), "has")
        not_indptr, not_ids = _csr(not_has, len(slot_array), "not_has")
        self._core.set_concepts(
            slot_array, has_indptr, has_ids, not_indptr, not_ids, grade_input(grades, len(slot_array))
        )

    def set_vectors(self, slots: Any, space: str, vectors: Any) -> None:
        """Replace one space's vectors of live slots (``None`` entries clear a vector)."""
        slot_array = _slots(slots, "slots")
        self._core.set_vectors(slot_array, self.vector_input(space, vectors, len(slot_array)))

    def remove(self, slots: Any) -> None:
        """Tombstone live slots: they stop matching at once; :meth:`compact` reclaims them."""
        self._core.remove(_slots(slots, "slots"))

    def compact(self) -> np.ndarray:
        """Drop tombstones; returns ``new_of_old`` (``-1`` for removed slots)."""
        return self._core.compact()

    def ensure_concepts(self, count: int) -> None:
        """Grow the concept vocabulary to at least ``count`` dense ids."""
        if int(count) < 0:
            raise InvalidArgumentError(f"count must be >= 0, got {count}")
        self._core.ensure_concepts(int(count))

    # ---- reads ---------------------------------------------------------------------------

    def request(
        self,
        query: Mapping[str, Any] | None = None,
        required: Iterable[int] = (),
        forbidden: Iterable[int] = (),
        k: int = 10,
        mode: str = "hard",
        soft_lambda: float = 1.0,
        exclude_conflicts: bool = False,
        kinds: Iterable[str] | None = None,
        allow: Any = None,
        weights: Mapping[str, float] | None = None,
        threads: int = 0,
        exact: bool = True,
        ef_search: int = 0,
        present_level: int = 0,
        absent_level: int = 0,
        present_weight: float = 0.0,
        absent_weight: float = 0.0,
    ) -> SearchRequest:
        """Build one :class:`SearchRequest` (the arguments of :meth:`search`), checking and
        converting each argument here so errors name it. ``exact=False`` lets a space's
        approximate index choose each large tier's top k (tiers and their order stay exact);
        ``ef_search`` (0 = the space's) widens the graph search for this request.
        ``present_level`` / ``absent_level`` (hard mode; 0 = not used): confidence flags within
        tiers, see the module docstring; ``present_weight`` / ``absent_weight`` (hard mode; 0 = not
        used): confidence weights within tiers, likewise. Such a request is searched exactly."""
        if not isinstance(exact, (bool, np.bool_)):
            raise InvalidArgumentType(f"exact must be a bool, got {quoted(exact)}")
        if isinstance(ef_search, bool) or not isinstance(ef_search, (int, np.integer)) or not 0 <= ef_search <= 10_000:
            raise InvalidArgumentError(
                f"ef_search must be an integer in [0, 10000] (0 = the index's), got {quoted(ef_search)}"
            )
        for name, level in (("present_level", present_level), ("absent_level", absent_level)):
            if (
                isinstance(level, bool)
                or not isinstance(level, (int, np.integer))
                or not 0 <= level <= CONFIDENCE_LEVELS
            ):
                raise InvalidArgumentError(
                    f"{name} must be an integer in [0, {CONFIDENCE_LEVELS}] (0 = not used), got {quoted(level)}"
                )
            if level and mode not in TIERED_MODES:
                raise InvalidArgumentError(
                    f"{name}: confidence flags order items within logic tiers; use mode 'hard' "
                    f"or 'strict' (got {quoted(mode)}) or level 0"
                )
        for name, weight in (("present_weight", present_weight), ("absent_weight", absent_weight)):
            if (
                isinstance(weight, bool)
                or not isinstance(weight, (int, float, np.number))
                or not np.isfinite(weight)
                or weight < 0
            ):
                raise InvalidArgumentError(f"{name} must be a finite number >= 0 (0 = not used), got {quoted(weight)}")
            if weight and mode not in TIERED_MODES:
                raise InvalidArgumentError(
                    f"{name}: confidence weights order items within logic tiers; use mode "
                    f"'hard' or 'strict' (got {quoted(mode)}) or weight 0"
                )
        terms = []
        # In the index's space order, whatever order the caller's mapping has, so that a weighted
        # sum over several spaces adds up alike on every path (the compiled front's too);
        # a space the index lacks goes last, for the core to name.
        order = self._space_order
        for space, values in sorted((query or {}).items(), key=lambda term: order.get(term[0], len(order))):
            weight = 1.0 if weights is None else float(weights.get(space, 1.0))
            terms.append((space, _float_vector(values, f"query[{space!r}]"), weight))
        return SearchRequest(
            vectors=terms,
            required=_concept_ids(required, "required").tolist(),
            forbidden=_concept_ids(forbidden, "forbidden").tolist(),
            k=self._check_k(k),
            mode=self._mode(mode),
            soft_lambda=float(soft_lambda),
            exclude_conflicts=bool(exclude_conflicts),
            kind_mask=self._kind_mask(kinds),
            allow=None if allow is None else _slots(allow, "allow"),
            threads=self._check_threads(threads),
            exact=bool(exact),
            ef_search=int(ef_search),
            present_level=int(present_level),
            absent_level=int(absent_level),
            present_weight=float(present_weight),
            absent_weight=float(absent_weight),
        )

    @overload
    def search_requests(self, requests: SearchRequest) -> SearchHits: ...

    @overload
    def search_requests(self, requests: Sequence[SearchRequest]) -> list[SearchHits]: ...

    def search_requests(self, requests: SearchRequest | Sequence[SearchRequest]) -> SearchHits | list[SearchHits]:
        """The one search entry point: one request gives its :class:`SearchHits`; a sequence
        gives one per request, in order. Each request carries its own constraints, filters and
        k; requests that each hold one vector of the same single-vector space are scored
        together as a blocked matrix product (every row read once for the batch) and give
        exactly what each would give alone. Ranking: ``(s_log, s_sem, slot)`` (hard),
        ``s_sem + λ·s_log`` (soft) or ``s_sem`` (off)."""
        if isinstance(requests, SearchRequest):
            return self._hits(self._core.search(requests))
        batch = list(requests)
        for i, r in enumerate(batch):
            if not isinstance(r, SearchRequest):
                raise InvalidArgumentType(
                    f"requests[{i}]: expected a SearchRequest (build one with Index.request), got {type(r).__name__}"
                )
        return [self._hits(raw) for raw in self._core.search(batch)]

    def search(
        self,
        query: Mapping[str, Any] | None = None,
        required: Iterable[int] = (),
        forbidden: Iterable[int] = (),
        k: int = 10,
        mode: str = "hard",
        soft_lambda: float = 1.0,
        exclude_conflicts: bool = False,
        kinds: Iterable[str] | None = None,
        allow: Any = None,
        weights: Mapping[str, float] | None = None,
        threads: int = 0,
        exact: bool = True,
        ef_search: int = 0,
        present_level: int = 0,
        absent_level: int = 0,
        present_weight: float = 0.0,
        absent_weight: float = 0.0,
    ) -> SearchHits:
        """Rank live items by ``(s_log, s_sem, slot)`` (hard), ``s_sem + λ·s_log`` (soft),
        ``s_sem`` alone (off) or ``(s_log, every forbidden concept NOT_HAS, s_sem)`` (strict). ``s_sem`` is the weighted sum of cosines over ``query``'s spaces.
        ``exact=False``, ``present_level`` / ``absent_level``, ``present_weight`` / ``absent_weight``:
        see :meth:`request`."""
        return self.search_requests(
            self.request(
                query,
                required,
                forbidden,
                k,
                mode,
                soft_lambda,
                exclude_conflicts,
                kinds,
                allow,
                weights,
                threads,
                exact,
                ef_search,
                present_level,
                absent_level,
                present_weight,
                absent_weight,
            )
        )

    def search_batch(
        self,
        space: str,
        queries: Any,
        required: Iterable[int] = (),
        forbidden: Iterable[int] = (),
        k: int = 10,
        mode: str = "hard",
        soft_lambda: float = 1.0,
        exclude_conflicts: bool = False,
        kinds: Iterable[str] | None = None,
        allow: Any = None,
        threads: int = 0,
        exact: bool = True,
        ef_search: int = 0,
    ) -> list[SearchHits]:
        """Many query vectors (rows of ``queries``) of one single-vector space under shared
        constraints and filters; for per-query constraints pass a list of requests to
        :meth:`search_requests`."""
        spec = self._spaces.get(space)
        if spec is not None and spec.multi:
            raise InvalidArgumentError(f"queries: batch search needs a single-vector space; {space!r} is multi-vector")
        matrix = _float_matrix(queries, "queries")
        shared = self.request(
            None,
            required,
            forbidden,
            k,
            mode,
            soft_lambda,
            exclude_conflicts,
            kinds,
            allow,
            threads=threads,
            exact=exact,
            ef_search=ef_search,
        )
        batch = []
        for row in matrix:
            r = copy.copy(shared)  # the allow-list is shared, not copied
            r.vectors = [(space, row, 1.0)]
            batch.append(r)
        return self.search_requests(batch)

    @property
    def core(self) -> _core.Index:
        """The compiled index itself (the compiled Recall front searches it directly)."""
        return self._core

    @property
    def size(self) -> int:
        """Slots in use, tombstones included."""
        return int(self._core.size)

    @property
    def live_count(self) -> int:
        return int(self._core.live_count)

    @property
    def num_concepts(self) -> int:
        return int(self._core.num_concepts)

    @property
    def memory_bytes(self) -> int:
        return int(self._core.memory_bytes)

    @property
    def spaces(self) -> list[SpaceSpec]:
        return list(self._spaces.values())

    def slots_with(self, has: Iterable[int] = (), not_has: Iterable[int] = ()) -> np.ndarray:
        """Live slots stating HAS for every concept in ``has`` and NOT_HAS for every one in
        ``not_has`` (all live slots when both are empty), ascending."""
        return self._core.slots_with(_concept_ids(has, "has"), _concept_ids(not_has, "not_has"))

    def concept_states(self, slots: Any, concepts: Iterable[int]) -> np.ndarray:
        """The stated polarity of each concept for each slot: an int8 array of shape
        ``(len(slots), len(concepts))``, +1 HAS, -1 NOT_HAS, 0 neither (or the slot is not live)."""
        return self._core.concept_states(_slots(slots, "slots"), _concept_ids(concepts, "concepts"))

    def is_live(self, slot: int) -> bool:
        return bool(self._core.is_live(int(slot)))

    # ---- the approximate index ---------------------------------------------------------------

    def ann_size(self, space: str) -> int:
        """Items in ``space``'s approximate index (0 when it has none)."""
        return int(self._core.ann_size(space))

    def save_ann(self, space: str, path: str) -> None:
        """Write ``space``'s graph to ``path`` (hnswlib's format; slots as labels)."""
        self._core.save_ann(space, str(path))

    def load_ann(self, space: str, path: str, new_of_old: Sequence[int] | np.ndarray | None = None) -> None:
        """Replace ``space``'s graph by one saved from an index holding the same slots (checked:
        a graph of other slots raises FailedPreconditionError and the current graph stays).
        ``new_of_old`` renumbers the file's slots first (old slot -> new slot, -1 = gone)."""
        relabel = [] if new_of_old is None else np.asarray(new_of_old, dtype=np.int64).tolist()
        self._core.load_ann(space, str(path), relabel)

    def defer_ann(self) -> None:
        """Every graph stops taking writes until :meth:`load_ann` replaces it: a start-up that
        will load saved graphs adds the stored items without building them."""
        self._core.defer_ann()

    # ---- conversions ---------------------------------------------------------------------

    def vector_input(self, space: str, values: Any, count: int) -> tuple:
        """`values` of `count` items as the core takes a space's vectors (checked against the space)."""
        spec = self._spaces.get(space)
        if spec is None:
            raise InvalidArgumentError(
                f"vectors: unknown vector space {space!r} (this index has: {', '.join(self._spaces) or 'none'})"
            )
        if spec.multi:
            if isinstance(values, np.ndarray) or len(values) != count:
                raise InvalidArgumentError(
                    f"vectors[{space!r}]: a multi-vector space takes a list of {count} (m_i, dim) arrays"
                )
            blocks = [
                np.zeros((0, spec.dim), np.float32) if v is None else _float_matrix(v, f"vectors[{space!r}]", spec.dim)
                for v in values
            ]
            counts = np.asarray([b.shape[0] for b in blocks], dtype=np.int64)
            stacked = np.ascontiguousarray(
                np.concatenate(blocks) if blocks else np.zeros((0, spec.dim), np.float32), dtype=np.float32
            )
            return (space, stacked, None, counts)
        if isinstance(values, np.ndarray) or (len(values) and not any(v is None for v in values)):
            return (space, _float_matrix(values, f"vectors[{space!r}]", spec.dim), None, None)
        if len(values) != count:
            raise InvalidArgumentError(f"vectors[{space!r}]: expected {count} entries, got {len(values)}")
        present = np.asarray([v is not None for v in values], dtype=np.uint8)
        rows = np.zeros((count, spec.dim), dtype=np.float32)
        for i, v in enumerate(values):
            if v is not None:
                rows[i] = _float_vector(v, f"vectors[{space!r}][{i}]")
        return (space, rows, present, None)

    @staticmethod
    def _kind_codes(kinds: Sequence[str | int] | str | np.ndarray, count: int) -> np.ndarray:
        if isinstance(kinds, str):
            kinds = [kinds] * count
        if isinstance(kinds, np.ndarray) and kinds.dtype.kind in "iu":
            if kinds.shape != (count,) or not np.isin(kinds, (VISUAL, TEXT)).all():
                raise InvalidArgumentError(f"kinds: expected {count} codes, each {VISUAL} (visual) or {TEXT} (text)")
            return np.ascontiguousarray(kinds, dtype=np.uint8)
        if len(kinds) != count:
            raise InvalidArgumentError(f"kinds: expected {count} entries, got {len(kinds)}")
        codes = []
        for kind in kinds:
            code = KIND_CODES.get(kind) if isinstance(kind, str) else int(kind)
            if code not in (VISUAL, TEXT):
                raise InvalidArgumentError(f"kinds: {quoted(kind)} is not a kind; use 'visual' or 'text'")
            codes.append(code)
        return np.asarray(codes, dtype=np.uint8)

    @staticmethod
    def _kind_mask(kinds: Iterable[str] | None) -> int:
        if kinds is None:
            return 0
        mask = 0
        for kind in kinds:
            if kind not in KIND_CODES:
                raise InvalidArgumentError(f"kinds: {quoted(kind)} is not a kind; use 'visual' or 'text'")
            mask |= KIND_CODES[kind]
        return mask

    @staticmethod
    def _mode(mode: str) -> Any:
        return SearchMode(Index._mode_code(mode))

    @staticmethod
    def _check_threads(threads: int) -> int:
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 0:
            raise InvalidArgumentError(
                f"threads must be an integer >= 0 (0 = the index default), got {quoted(threads)}"
            )
        return int(threads)

    @staticmethod
    def _mode_code(mode: str) -> int:
        if not isinstance(mode, str) or mode not in MODE_CODES:
            raise InvalidArgumentError(f"mode must be one of {sorted(MODE_CODES)}, got {quoted(mode)}")
        return MODE_CODES[mode]

    @staticmethod
    def _check_k(k: int) -> int:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise InvalidArgumentError(f"k must be an integer between 1 and {MAX_TOP_K}, got {quoted(k)}")
        if k > MAX_TOP_K:
            raise InvalidArgumentError(
                f"k must be an integer between 1 and {MAX_TOP_K}, got {int(k)}; "
                f"page through results instead of asking for more than {MAX_TOP_K}"
            )
        return int(k)

    @staticmethod
    def _hits(raw: tuple) -> SearchHits:
        slots, tiers, scores, counts, scored, reranked, approximate, confidence, rank_scores = raw
        return SearchHits(
            slots=slots,
            tiers=tiers,
            scores=scores,
            tier_counts={"conflict": counts[0], "neutral": counts[1], "entailed": counts[2]},
            scored=int(scored),
            reranked=int(reranked),
            approximate=bool(approximate),
            confidence=confidence,
            rank_scores=rank_scores,
        )
