"""Typed stub of the compiled retrieval core (cpp/bindings/module.cpp). Private: use
polarmem_server.index. Checked against the built module by tests/unit/test_index_core.py
(test_stub_names_match_the_compiled_module)."""

import enum
from collections.abc import Sequence
from typing import Any, ClassVar, overload

import numpy as np
import numpy.typing as npt

from polarmem_server import errors

MAX_TOP_K: int
MAX_DIM: int
CONFIDENCE_LEVELS: int
CONFIDENCE_SCALE: int
NOT_SCORED: int

class InvalidArgumentError(errors.InvalidArgument):
    """The core rejected a malformed input (shape, NaN, unknown space, k out of range)."""

class OutOfRangeError(errors.InvalidArgument, IndexError):
    """A concept id or slot outside what the index holds."""

class FailedPreconditionError(errors.FailedPrecondition, LookupError):
    """Valid input the index's current state cannot accept (a removed slot)."""

class ResourceExhaustedError(errors.ResourceExhausted, MemoryError):
    """The core could not allocate the memory a call needed."""

def build_info() -> dict[str, Any]: ...
def simd_level() -> str: ...
def set_simd_level(arg0: str) -> None: ...
def measure_read_bandwidth(bytes: int, threads: int, repeats: int) -> float: ...

class SearchMode(enum.Enum):
    off = 0
    hard = 1
    soft = 2
    strict = 3

# (space, float32 vector, weight)
QueryVectors = list[tuple[str, npt.NDArray[np.float32], float]]
# (slots int64, tiers int8, scores float32, (conflict, neutral, entailed), scored, reranked, approximate,
#  confidence int8: per hit bit 1 confidently absent, bit 0 confidently present; empty without levels,
#  rank_scores float32: per hit s_sem + the confidence term; empty without confidence weights)
RawHits = tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.int8],
    npt.NDArray[np.float32],
    tuple[int, int, int],
    int,
    int,
    bool,
    npt.NDArray[np.int8],
    npt.NDArray[np.float32],
]

# (space, m, ef_construction, ef_search, exact_below, exact_factor)
AnnParams = tuple[str, int, int, int, int, float]

class SearchRequest:
    vectors: QueryVectors
    required: list[int]
    forbidden: list[int]
    k: int
    mode: SearchMode
    soft_lambda: float
    exclude_conflicts: bool
    kind_mask: int
    allow: npt.NDArray[np.int64] | None
    threads: int
    exact: bool
    ef_search: int
    present_level: int
    absent_level: int
    present_weight: float
    absent_weight: float
    def __init__(
        self,
        vectors: QueryVectors = ...,
        required: Sequence[int] = ...,
        forbidden: Sequence[int] = ...,
        k: int = 10,
        mode: SearchMode = ...,
        soft_lambda: float = 1.0,
        exclude_conflicts: bool = False,
        kind_mask: int = 0,
        allow: npt.NDArray[np.int64] | None = None,
        threads: int = 0,
        exact: bool = True,
        ef_search: int = 0,
        present_level: int = 0,
        absent_level: int = 0,
        present_weight: float = 0.0,
        absent_weight: float = 0.0,
    ) -> None: ...
    def __copy__(self) -> SearchRequest: ...
    def __deepcopy__(self, memo: dict[Any, Any]) -> SearchRequest: ...

GradeLists = tuple[npt.NDArray[np.int64], npt.NDArray[np.uint32], npt.NDArray[np.int8], npt.NDArray[np.uint8] | None]

# (space, values[rows, dim] float32, present[rows] uint8 | None, counts[items] int64 | None)
VectorBlock = tuple[str, npt.NDArray[np.float32], npt.NDArray[np.uint8] | None, npt.NDArray[np.int64] | None]

class ItemIds:
    """Item ids by index slot ("" = no live item); generation is odd while slots are renumbered."""
    def __init__(self) -> None: ...
    def append(self, ids: list[str]) -> None: ...
    def truncate(self, size: int) -> None: ...
    def clear(self, slot: int) -> None: ...
    def begin_renumbering(self) -> None: ...
    def replace_all(self, ids: list[str]) -> None: ...
    def end_renumbering(self) -> None: ...
    def get(self, slot: int) -> str: ...
    def resolve(self, slots: npt.NDArray[np.int64]) -> list[str]: ...
    def all(self) -> list[str]: ...
    @property
    def size(self) -> int: ...
    @property
    def generation(self) -> int: ...

class ItemRecords:
    """Serialised item records by slot, for the compiled front's explained answers."""
    def __init__(self) -> None: ...
    def set(self, slot: int, record: bytes) -> None: ...
    def fill(self, slot: int, record: bytes) -> None: ...
    def clear(self, slot: int) -> None: ...
    def renumber(self, new_of_old: npt.NDArray[np.int64]) -> None: ...
    def get(self, slot: int) -> bytes | None: ...
    @property
    def count(self) -> int: ...
    @property
    def bytes(self) -> int: ...

class MetadataPostings:
    """Slots by metadata (key, value) pair: the allow-lists of metadata_equals filters."""
    def __init__(self) -> None: ...
    def add(self, slot: int, pairs: Sequence[tuple[str, str]]) -> None: ...
    def remove(self, slot: int, pairs: Sequence[tuple[str, str]]) -> None: ...
    def renumber(self, new_of_old: npt.NDArray[np.int64]) -> None: ...
    def matching(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.int64]: ...

class NamespaceItems:
    """One namespace's items in memory: index, ids, metadata, records, slots and counts in step."""

    compact_min_tombstones: int
    def __init__(self, name: str, index: Index, ids: ItemIds, metadata: MetadataPostings) -> None: ...
    def keep_records(self) -> None: ...
    @property
    def records(self) -> ItemRecords | None: ...
    def slot(self, id: str) -> int | None: ...
    def slots(self) -> dict[str, int]: ...
    def counts(
        self,
    ) -> tuple[dict[int, int], dict[int, int], dict[int, int], dict[int, int], int]: ...
    @property
    def scored(self) -> int: ...
    def add(
        self,
        ids: list[str],
        index_records: Sequence[bytes],
        vectors: Sequence[VectorBlock],
        grades: GradeLists | None,
        records: Sequence[bytes],
    ) -> None: ...
    def replace(
        self, previous: bytes, record: bytes, vectors: Sequence[VectorBlock], grades: GradeLists | None
    ) -> None: ...
    def remove(self, record: bytes) -> bool: ...
    def compact(self) -> npt.NDArray[np.int64]: ...
    def fill_records(self, ids: list[str], records: Sequence[bytes | None]) -> None: ...

class Index:
    def __init__(
        self, spaces: Sequence[tuple[str, int, bool, str]], threads: int = 0, ann: Sequence[AnnParams] = ...
    ) -> None: ...
    def add(
        self,
        kinds: npt.NDArray[np.uint8],
        vectors: Sequence[VectorBlock],
        has_indptr: npt.NDArray[np.int64] | None,
        has_ids: npt.NDArray[np.uint32] | None,
        not_indptr: npt.NDArray[np.int64] | None,
        not_ids: npt.NDArray[np.uint32] | None,
        # confidence grades as CSR: (indptr int64, concept ids uint32, grades int8 in -3 .. 3,
        # confidence bytes uint8 (P = b / 254, 255 = none) | None)
        grades: GradeLists | None = None,
    ) -> int: ...
    def set_concepts(
        self,
        slots: npt.NDArray[np.int64],
        has_indptr: npt.NDArray[np.int64] | None,
        has_ids: npt.NDArray[np.uint32] | None,
        not_indptr: npt.NDArray[np.int64] | None,
        not_ids: npt.NDArray[np.uint32] | None,
        # confidence grades as CSR: (indptr int64, concept ids uint32, grades int8 in -3 .. 3,
        # confidence bytes uint8 (P = b / 254, 255 = none) | None)
        grades: GradeLists | None = None,
    ) -> None: ...
    def set_vectors(self, arg0: npt.NDArray[np.int64], arg1: VectorBlock) -> None: ...
    def remove(self, arg0: npt.NDArray[np.int64]) -> None: ...
    def compact(self) -> npt.NDArray[np.int64]: ...
    def ensure_concepts(self, arg0: int) -> None: ...
    @overload
    def search(self, request: SearchRequest) -> RawHits: ...
    @overload
    def search(self, requests: Sequence[SearchRequest]) -> list[RawHits]: ...
    def save_ann(self, space: str, path: str) -> None: ...
    def load_ann(self, space: str, path: str, new_of_old: Sequence[int] = ...) -> None: ...
    def defer_ann(self) -> None: ...
    def ann_size(self, space: str) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def live_count(self) -> int: ...
    @property
    def num_concepts(self) -> int: ...
    @property
    def memory_bytes(self) -> int: ...
    def is_live(self, arg0: int) -> bool: ...
    def slots_with(self, arg0: npt.NDArray[np.uint32], arg1: npt.NDArray[np.uint32]) -> npt.NDArray[np.int64]: ...
    def concept_states(self, arg0: npt.NDArray[np.int64], arg1: npt.NDArray[np.uint32]) -> npt.NDArray[np.int8]: ...

class TextEncoder:
    """A BERT-style sentence encoder on 8-bit linear layers (cpp/include/polarmem/text_encoder.hpp)."""

    def __init__(
        self,
        layers: int,
        hidden: int,
        heads: int,
        intermediate: int,
        max_positions: int,
        layer_norm_eps: float,
        weights: dict[str, np.ndarray],
    ) -> None: ...
    def encode(self, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray: ...
    @property
    def dim(self) -> int: ...
    @property
    def kernel(self) -> str: ...

class WordPieceTokenizer:
    """BERT's uncased WordPiece tokenization of every Unicode scalar value, id for id what the
    HF tokenizer gives (cpp/include/polarmem/wordpiece.hpp)."""

    def __init__(
        self,
        vocabulary: list[str],
        cls_id: int,
        sep_id: int,
        unk_id: int,
        max_tokens: int,
        declined_literals: list[str],
        latin: bool = ...,
    ) -> None: ...
    # [CLS] ... [SEP] ids, or None: a character the table declines or an added token (ask the HF tokenizer)
    def encode(self, text: str) -> list[int] | None: ...

class SharedTextRuns:
    """Concurrent single-text calls sharing the encoder's passes (cpp/include/polarmem/shared_text_runs.hpp)."""

    def __init__(self, encoder: TextEncoder, max_runs: int, max_tokens: int = 1024) -> None: ...
    # whether a pass's thread gets the scheduler weight of the calls waiting on it
    # (cpp/include/polarmem/call_weight.hpp: needs CAP_SYS_NICE or RLIMIT_NICE)
    weighted: ClassVar[bool]

# ---- the text parse (cpp/include/polarmem/text_parse.hpp; domain/text.py wraps it) ----------------

def text_tokens(utf8: bytes) -> list[tuple[str, int, int]]: ...
def singular(word: str) -> str: ...
def closest_keys(asked: str | bytes, keys: Sequence[str | bytes], limit: int, cutoff: float) -> list[int]: ...
def name_ratio(a: str | bytes, b: str | bytes) -> float: ...
def normalise_name(utf8: str | bytes) -> str: ...
def is_poor_concept(word: str) -> bool: ...
def affirmative_part(utf8: bytes, negated_spans: list[tuple[int, int]]) -> bytes: ...

MIN_CONTEXT_BUDGET_CHARS: int
MAX_CONTEXT_BUDGET_CHARS: int

# ---- the request checks' words (cpp/include/polarmem/request_checks.hpp; domain/items.py) -----------

MAX_STATUS_MESSAGE_CHARS: int
MAX_QUOTED_CHARS: int
MAX_METADATA_KEYS: int
MAX_METADATA_KEY_BYTES: int
MAX_METADATA_VALUE_BYTES: int
MAX_METADATA_TOTAL_BYTES: int

def count_problem(field: str, value: int, low: int, high: int) -> str: ...
def vector_problem(where: str, space: str, dim: int, rows: bool, values: npt.ArrayLike) -> str: ...
def metadata_problem(where: str, pairs: Sequence[tuple[bytes, bytes]]) -> str: ...
def concept_name_problem(where: str, name: bytes) -> str: ...
def quoted(utf8: bytes) -> str: ...
def float_repr(value: float) -> str: ...
def mention_polarity(mentions: list[tuple[int, bool, bool]]) -> list[tuple[int, bool]]: ...
def fact_check_context(
    entries: list[tuple[str, str, list[str], list[str]]], budget_chars: int, query_concepts: list[str]
) -> str: ...

class TriggerTable:
    """Negation cue phrases by kind (words joined by one space)."""

    def __init__(
        self,
        pre: list[str],
        post: list[str],
        pseudo: list[str],
        terminators: list[str],
        resolution: list[str],
        window: int | None,
        hedge: list[str] = ...,
    ) -> None: ...

class ConceptKeys:
    """A vocabulary's lookup keys -> concept ids."""

    def __init__(self) -> None: ...
    def set(self, keys: list[tuple[str, int]]) -> None: ...
    def erase(self, keys: list[str]) -> None: ...
    @property
    def size(self) -> int: ...

# (concept, start, end, negated, cue, resolution, uncertain, subject)
_ParsedMention = tuple[int, int, int, bool, str, bool, bool, bool]
# (word, start, end, negated, uncertain, subject)
_ParsedUnknown = tuple[str, int, int, bool, bool, bool]

def parse_text(
    utf8: bytes, keys: ConceptKeys, triggers: TriggerTable
) -> tuple[list[_ParsedMention], list[_ParsedUnknown], list[tuple[int, int]]]: ...

class KvError(Exception):
    """A RocksDB status that is not OK, with RocksDB's own text."""

class KvBatch:
    def __init__(self) -> None: ...
    def put(self, family: str, key: bytes, value: bytes) -> None: ...
    def delete(self, family: str, key: bytes) -> None: ...
    def delete_range(self, family: str, begin: bytes, end: bytes) -> None: ...

class KvIterator:
    def seek(self, key: bytes) -> None: ...
    def seek_to_first(self) -> None: ...
    def valid(self) -> bool: ...
    def next(self) -> None: ...
    def take(self, prefix: bytes, limit: int) -> list[tuple[bytes, bytes]]: ...
    def check_status(self) -> None: ...

class KvStore:
    def __init__(
        self,
        path: str,
        families: Sequence[str],
        *,
        access: str = "read_write",
        secondary_path: str = "",
        info_log_dir: str = "",
        create_if_missing: bool = False,
        create_missing_column_families: bool = False,
        paranoid_checks: bool = True,
        db_write_buffer_size: int = 0,
        point_in_time: bool = False,
    ) -> None: ...
    @staticmethod
    def list_families(path: str) -> list[str]: ...
    @staticmethod
    def repair(path: str) -> None: ...
    def close(self) -> None: ...
    def get(self, family: str, key: bytes) -> bytes | None: ...
    def multi_get(self, family: str, keys: Sequence[bytes]) -> list[bytes | None]: ...
    def write(self, batch: KvBatch, sync: bool) -> None: ...
    def write_counted(self, batch: KvBatch, family: str, counter_key: bytes, sync: bool) -> None: ...
    def scan(self, family: str, fill_cache: bool = True) -> KvIterator: ...
    def flush_wal(self, sync: bool) -> None: ...
    def latest_sequence_number(self) -> int: ...
    def catch_up_with_primary(self) -> None: ...
    def checkpoint(self, dir: str) -> None: ...
    def live_table_files(self) -> list[str]: ...

# The item layout (cpp/include/polarmem/item_layout.hpp).
def put_item(
    batch: KvBatch,
    ns: str,
    record: bytes,
    vectors: Sequence[tuple[str, np.ndarray]],
    previous: bytes = b"",
    previous_spaces: Sequence[str] = ...,
) -> bytes: ...
def put_concept(batch: KvBatch, ns: str, concept_id: int, name: str) -> None: ...
def remove_item(batch: KvBatch, ns: str, record: bytes, spaces: Sequence[str]) -> None: ...
def index_record(record: bytes) -> bytes: ...
def concept_lists(record: bytes) -> tuple[list[int], list[int], list[int], int]: ...
def decode_index_records(
    values: Sequence[bytes],
) -> tuple[
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    int,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    list[tuple[int, list[tuple[str, str]]]],
]: ...
