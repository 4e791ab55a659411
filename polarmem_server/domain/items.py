"""Item input and its validation: the one place a remembered or observed item's fields are
checked (every message names the field and the fix) and turned into typed values. Below this,
code converts and never re-checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from polarmem.common.v1 import enums_pb2
from polarmem_server import _core
from polarmem_server.errors import InvalidArgument, quoted
from polarmem_server.index import SpaceSpec

KINDS = {"visual": enums_pb2.ITEM_KIND_VISUAL, "text": enums_pb2.ITEM_KIND_TEXT}
KIND_NAMES = {code: name for name, code in KINDS.items()}
STATES = {
    "has": enums_pb2.CONCEPT_STATE_HAS,
    "not_has": enums_pb2.CONCEPT_STATE_NOT_HAS,
    "uncertain": enums_pb2.CONCEPT_STATE_UNCERTAIN,
}
STATE_NAMES = {code: name for name, code in STATES.items()}
MAX_ITEM_ID_BYTES = _core.MAX_ITEM_ID_BYTES  # the core's bound, which a note it stores itself is held to
MAX_CONCEPTS_PER_ITEM = 4096
MAX_TEMPLATE_SCORES = 64
# What one item's metadata may hold (docs/failure-behaviour.md). Before, only the 16 MiB message
# limit bounded it: one item with 100,000 keys slowed every browse / recall that returned it
# from 0.4 s to 52 s (issue 49). Far above what labels, sources and dates need.
# The core's (cpp/include/polarmem/request_checks.hpp), which states them for Recall's filter too.
MAX_METADATA_KEYS = _core.MAX_METADATA_KEYS
MAX_METADATA_KEY_BYTES = _core.MAX_METADATA_KEY_BYTES
MAX_METADATA_VALUE_BYTES = _core.MAX_METADATA_VALUE_BYTES
MAX_METADATA_TOTAL_BYTES = _core.MAX_METADATA_TOTAL_BYTES  # every key and value, UTF-8
DEFAULT_SOURCE = _core.DEFAULT_SOURCE  # "client": the core's, which a note it stores itself states too


@dataclass
class ItemInput:
    """One item to remember. Evidence is any of: `scores` (concept -> P(Yes) per template),
    `states` (concept -> "has" | "not_has" | "uncertain"), `verify_concepts` (concepts the
    library's verifier scores from `text` / `content`), or, for text items with none of them,
    the lexical pathway over `text` (vocabulary mentions and negation cues)."""

    id: str | None = None
    kind: str = "visual"
    text: str = ""
    uri: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)
    vectors: Mapping[str, Any] = field(default_factory=dict)
    scores: Mapping[str, Sequence[float]] = field(default_factory=dict)
    states: Mapping[str, str] = field(default_factory=dict)
    source: str = DEFAULT_SOURCE
    model: str = ""
    verify_concepts: Sequence[str] = ()
    content: bytes = b""

    @property
    def needs_verification(self) -> bool:
        return bool(self.verify_concepts) or bool(self.content)


def content_id(item: ItemInput) -> str:
    """The id the server gives an item sent without one: a hash of its kind, text, uri and
    content, so the same content remembered twice gets the same id (de-duplication). An item with
    none of the four (vectors and evidence only) hashes its vectors and evidence too. The hash is
    the core's (cpp/include/polarmem/content_id.hpp), which a native Remember calls as well."""
    kind, text, uri = (_bytes_of(part) for part in (str(item.kind), item.text, item.uri))
    content = bytes(item.content or b"")
    extra = b""
    if not (item.text or item.uri or content):
        extra = b"".join(
            space.encode() + np.ascontiguousarray(item.vectors[space], dtype=np.float32).tobytes()
            for space in sorted(item.vectors)
        )
        extra += repr(sorted((k, list(map(float, v))) for k, v in item.scores.items())).encode()
        extra += repr(sorted(item.states.items())).encode()
    return _core.content_id(kind, text, uri, content, extra)


def _bytes_of(part: object) -> bytes:
    return part.encode("utf-8", "surrogatepass") if isinstance(part, str) else repr(part).encode()


@dataclass(frozen=True)
class Evidence:
    """Checked evidence: scores as float64 arrays, states as ConceptState values."""

    scores: Mapping[str, np.ndarray] = field(default_factory=dict)
    states: Mapping[str, int] = field(default_factory=dict)
    source: str = DEFAULT_SOURCE
    model: str = ""


def with_verified(client: Evidence, verified: Evidence) -> Evidence:
    """Verifier scores added to client evidence: client scores win where both exist, and the
    source and model become the engine's."""
    return Evidence({**verified.scores, **client.scores}, client.states, verified.source, verified.model)


def check_item_id(item_id: object, name: str = "item id") -> str:
    if not isinstance(item_id, str) or not item_id or "\x00" in item_id or len(item_id.encode()) > MAX_ITEM_ID_BYTES:
        raise InvalidArgument(
            f"{name} {quoted(item_id)} is invalid: use 1-{MAX_ITEM_ID_BYTES} bytes of UTF-8 without NUL"
        )
    return item_id


def check_concept(name: object, where: str) -> str:
    if not isinstance(name, str):
        raise InvalidArgument(f"{where}: concept name {quoted(name)} is not a string")
    problem = _core.concept_name_problem(where, _utf8(name))
    if problem:
        raise InvalidArgument(problem)
    return name


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def check_kind(kind: object, where: str = "kind") -> int:
    if kind not in KINDS:
        raise InvalidArgument(f"{where} must be 'visual' or 'text', got {quoted(kind)}")
    return KINDS[kind]


def check_scores(scores: Mapping[str, Sequence[float]], where: str = "scores") -> dict[str, np.ndarray]:
    if len(scores) > MAX_CONCEPTS_PER_ITEM:
        raise InvalidArgument(f"{where}: at most {MAX_CONCEPTS_PER_ITEM} concepts per item, got {len(scores)}")
    out = {}
    for name, values in scores.items():
        check_concept(name, where)
        try:
            array = np.asarray(values, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            raise InvalidArgument(f"{where}[{quoted(name)}]: give a list of P(Yes) numbers") from None
        if array.size == 0 or array.size > MAX_TEMPLATE_SCORES:
            raise InvalidArgument(
                f"{where}[{quoted(name)}]: give at least one P(Yes) value (one per template, at most "
                f"{MAX_TEMPLATE_SCORES}), got {array.size}"
            )
        if not np.all(np.isfinite(array)) or array.min() < 0 or array.max() > 1:
            raise InvalidArgument(
                f"{where}[{quoted(name)}]: every P(Yes) must be a finite number in [0, 1], got {quoted(array.tolist())}"
            )
        out[name] = array
    return out


def check_template_count(
    scores: Mapping[str, Sequence[float] | np.ndarray], templates: int, where: str = "scores"
) -> None:
    """Client scores are one P(Yes) per template of the namespace, in template order: a concept
    scored under fewer (or more) templates would be partitioned against evidence it does not
    match, so it is refused, naming the field."""
    for name, values in scores.items():
        count = int(np.size(values))
        if count != templates:
            raise InvalidArgument(
                f"{where}[{quoted(name)}]: expected {templates} P(Yes) value{'s' if templates != 1 else ''}, "
                f"one per template of the namespace, got {count}; score the concept with each "
                "template GetNamespace lists (config.templates), or send states instead"
            )


def check_states(states: Mapping[str, str], where: str = "states") -> dict[str, int]:
    if len(states) > MAX_CONCEPTS_PER_ITEM:
        raise InvalidArgument(f"{where}: at most {MAX_CONCEPTS_PER_ITEM} concepts per item, got {len(states)}")
    out = {}
    for name, state in states.items():
        check_concept(name, where)
        if state not in STATES:
            raise InvalidArgument(
                f"{where}[{quoted(name)}]: {quoted(state)} is not a state; use 'has', 'not_has' or 'uncertain'"
            )
        out[name] = STATES[state]
    return out


def check_evidence(
    scores: Mapping[str, Sequence[float]] | None,
    states: Mapping[str, str] | None,
    source: str = DEFAULT_SOURCE,
    model: str = "",
    templates: int | None = None,
) -> Evidence:
    """Checked evidence; with `templates` (the namespace's template count) every concept's
    scores must number exactly that many."""
    checked = check_scores(scores or {})
    if templates is not None:
        check_template_count(checked, templates)
    return Evidence(checked, check_states(states or {}), source or DEFAULT_SOURCE, model or "")


def check_metadata(metadata: Mapping[str, str], where: str = "metadata") -> dict[str, str]:
    """String keys and values within the MAX_METADATA_* limits (the core's words, which a Recall's
    metadata filter is refused in too); INVALID_ARGUMENT names the limit."""
    if not all(isinstance(key, str) and isinstance(value, str) for key, value in metadata.items()):
        raise InvalidArgument(f"{where}: keys and values must be strings")
    problem = _core.metadata_problem(where, [(_utf8(key), _utf8(value)) for key, value in metadata.items()])
    if problem:
        raise InvalidArgument(problem)
    return dict(metadata)


def check_vectors(
    spaces: Mapping[str, SpaceSpec], given: Mapping[str, Any], where: str = "vectors"
) -> dict[str, np.ndarray]:
    """An item's vectors checked by the index's rules, so nothing the core would reject reaches
    the store: a known space, the space's dimension, finite, non-zero (the core's words, which a
    Recall's query vectors are refused in too): ``(dim,)`` for a single space, ``(rows, dim)`` for
    a multi space."""
    out: dict[str, np.ndarray] = {}
    for space, values in given.items():
        spec = spaces.get(space)
        if spec is None:
            raise InvalidArgument(f"{where}: unknown vector space {quoted(space)} (namespace has: {', '.join(spaces)})")
        try:
            array = np.asarray(values, dtype=np.float32)
        except (TypeError, ValueError):
            raise InvalidArgument(f"{where}[{quoted(space)}]: not an array of numbers") from None
        problem = _core.vector_problem(where, space, spec.dim, spec.multi, array)
        if problem:
            raise InvalidArgument(problem)
        out[space] = array.reshape(-1, spec.dim) if spec.multi else array.reshape(-1)
    return out


@dataclass(frozen=True)
class CheckedItem:
    """An ItemInput that passed check_item."""

    id: str | None
    kind: int
    text: str
    uri: str
    metadata: Mapping[str, str]
    vectors: Mapping[str, np.ndarray]
    evidence: Evidence


def shows_nothing(text: str) -> bool:
    """Whether `text` is empty or only whitespace and zero-width characters: the core's rule
    (cpp/include/polarmem/utf8.hpp), which the compiled front applies to the same text."""
    return _core.shows_nothing(text.encode("utf-8", "surrogatepass"))


def check_item(item: ItemInput, spaces: Mapping[str, SpaceSpec], templates: int | None = None) -> CheckedItem:
    """Every field of a new item, checked (InvalidArgument names the first bad one); `templates`:
    the namespace's template count, which client scores must match."""
    item_id = None if item.id is None or item.id == "" else check_item_id(item.id)
    if not isinstance(item.text, str) or not isinstance(item.uri, str):
        raise InvalidArgument("text and uri must be strings")
    if item.text and shows_nothing(item.text):
        # stored, it was a note with no words (the compiled front declines it by the same rule)
        raise InvalidArgument(
            "text: only whitespace or zero-width characters; give the note's words (or no text at all)"
        )
    return CheckedItem(
        item_id,
        check_kind(item.kind),
        item.text,
        item.uri,
        check_metadata(item.metadata),
        check_vectors(spaces, item.vectors),
        check_evidence(item.scores, item.states, item.source, item.model, templates),
    )
