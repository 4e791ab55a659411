"""Recall in the library (``Memory.recall``): one request to the core's Recall entry
(core_recall.py: cpp/front/namespace_view.hpp ``NamespaceViews::recall``), the same entry the
server's listeners call, and its answer as Python objects — the hits with their stored records.

Nothing is decided here. The core plans the Recall (binds the explicit names, parses and embeds
the text, maps a closed vocabulary's unknown words, chooses the rule), runs the mode (hard, soft,
off, strict, adaptive, answer: docs/api.md and DESIGN.md say what each does), explains each hit
and writes the context; it refuses a field out of its bounds in its own words. This module
turns the arguments into a RecallRequest (InvalidArgument where a Python value does not fit its
field's type) and the core's RecallResponse into a :class:`RecallResult`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from google.protobuf.descriptor import FieldDescriptor

from polarmem.storage.v1 import records_pb2
from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.domain.namespace import Namespace
from polarmem_server.domain.items import check_kind
from polarmem_server.domain.query import DEFAULT_SOFT_LAMBDA, DEFAULT_TOP_K, RecallMode, check_mode
from polarmem_server.errors import InvalidArgument, quoted
from polarmem_server.library.core_recall import MODE_CODES, CoreRecall
from polarmem_server.library.writes import Writer

STATUS = {1: "VERIFIED", 0: "NEUTRAL", -1: "CONFLICT"}


@dataclass
class QueryParse:
    """How the core read the query's constraints (RecallResponse.parse)."""

    explicit: bool = False
    unknown: list[str] = field(default_factory=list)  # parsed terms that name no concept
    mapped: list[tuple[str, str, float]] = field(default_factory=list)  # (phrase, concept, similarity)
    # explicit names skipped as unknown (allow_unknown_concepts), each with the closest known names
    unknown_concepts: list[tuple[str, list[str]]] = field(default_factory=list)


@dataclass
class Hit:
    item_id: str
    tier: int
    score: float
    record: records_pb2.ItemRecord | None  # None when recalled without explanations
    entailed_by: list[str]
    conflicted_by: list[str]
    reasons: list[str]
    absence_verified: bool = False  # every forbidden concept is NOT_HAS on this item
    # mode answer: the core's label, what the model reads, the revising item
    label: str = ""
    answer: str = ""
    superseded_by: str = ""

    @property
    def status(self) -> str:
        return self.label or STATUS[self.tier]


@dataclass
class RecallResult:
    hits: list[Hit]
    tier_counts: dict[str, int]
    parse: QueryParse
    required: list[str]
    forbidden: list[str]
    mode_used: str
    mode_reason: str = ""
    suppressed: list[Hit] = field(default_factory=list)
    answer_summary: str = ""  # mode answer: "no verified evidence for: ..." when nothing answers
    context: str = ""  # the fact-checked context, with include_context


class MemoryView(Protocol):
    """What recall needs of the Memory it is a method of (memory.py imports this module)."""

    writer: Writer
    core: CoreRecall

    def namespace(self, name: str) -> Namespace: ...


def recall(
    memory: MemoryView,
    ns: str,
    text: str = "",
    *,
    vectors: Mapping[str, Any] | None = None,
    required: Iterable[str] | None = None,
    forbidden: Iterable[str] | None = None,
    k: int = DEFAULT_TOP_K,
    mode: str | None = None,
    soft_lambda: float = DEFAULT_SOFT_LAMBDA,
    exclude_conflicts: bool = False,
    kinds: Iterable[str] | None = None,
    metadata: Mapping[str, str] | None = None,
    weights: Mapping[str, float] | None = None,
    suppressed_k: int = 0,
    explain: bool = True,
    allow_unknown_concepts: bool = False,
    approximate: bool = False,
    ef_search: int = 0,
    rank_by_confidence: bool | None = None,
    recency_half_life_s: float | None = None,
    recency_weight: float | None = None,
    include_context: bool = False,
    context_budget_chars: int = 0,
) -> RecallResult:
    """Lexicographic recall of namespace `ns` by the core. `mode` None or "": the namespace's
    rule (Namespace.rule: `hard` unless partitioner "auto" chose otherwise), said in the result's
    mode_reason. `explain` False: hits carry what the index knows (id, tier, score, the query
    concepts' states) and no stored record is read. Explicit names the vocabulary lacks are
    InvalidArgument unless `allow_unknown_concepts` (then skipped, in result.parse.unknown_concepts).
    `approximate`: the namespace's approximate index orders each large tier, with `ef_search`
    candidates (0 = its own); FailedPrecondition where it has none. `rank_by_confidence`: None
    follows the namespace's rule when it runs (no mode named); True / False turn confidence
    ranking within tiers on / off. `recency_half_life_s` (> 0 seconds) / `recency_weight`
    (default 0.1, in [0, 1]): the opt-in recency term within tiers, modes hard and off only.
    `include_context`: result.context is the fact-checked context a model reads
    (`context_budget_chars` per item, 0 = the default)."""
    namespace = memory.namespace(ns)
    named = check_mode(mode) if mode else None
    explain = True if explain is None else explain  # (None: the default, as for every flag)
    request = pb.RecallRequest(namespace=ns)
    for name, value in (
        ("text", text),
        ("required", list(required or ())),
        ("forbidden", list(forbidden or ())),
        ("top_k", k),
        ("exclude_conflicts", exclude_conflicts),
        ("kinds", [check_kind(kind, "kinds") for kind in kinds or ()]),
        ("metadata_equals", metadata or {}),
        ("weights", weights or {}),
        ("suppressed_k", suppressed_k),
        ("allow_unknown_concepts", allow_unknown_concepts),
        ("approximate", approximate),
        ("ef_search", ef_search),
        ("explain", explain),
        ("include_context", include_context),
        ("context_budget_chars", context_budget_chars if include_context else 0),
        ("mode", MODE_CODES[named] if named else pb.RECALL_MODE_UNSPECIFIED),
    ):
        _set(request, name, value)
    if soft_lambda != DEFAULT_SOFT_LAMBDA:
        _set(request, "soft_lambda", soft_lambda)
    for name, optional in (
        ("rank_by_confidence", rank_by_confidence),
        ("recency_half_life_s", recency_half_life_s),
        ("recency_weight", recency_weight),
    ):
        if optional is not None:
            _set(request, name, optional)
    for space, values in (vectors or {}).items():
        if not isinstance(space, str):
            raise InvalidArgument(f"vectors: a space is named by a string, got {quoted(space)}")
        try:
            row = np.asarray(values, dtype=np.float32).ravel()
        except (TypeError, ValueError):
            raise InvalidArgument(f"vectors[{quoted(space)}]: not an array of numbers") from None
        request.vectors[space].values.extend(row.tolist())
    response = memory.core.answer(request)
    explained = explain or include_context or named == RecallMode.ANSWER
    return result_of(memory, namespace, response, explained)


# Field names a message names as the library's arguments do.
ARGUMENT_NAMES = {"top_k": "k", "metadata_equals": "metadata"}
# What a field's type takes, as a message says it.
WANTED = {
    FieldDescriptor.CPPTYPE_STRING: "a string",
    FieldDescriptor.CPPTYPE_UINT32: "a whole number",
    FieldDescriptor.CPPTYPE_FLOAT: "a number",
    FieldDescriptor.CPPTYPE_DOUBLE: "a number",
    FieldDescriptor.CPPTYPE_BOOL: "True or False",
}


def _set(request: pb.RecallRequest, name: str, value: Any) -> None:
    """Sets the request's field `name` from a Python value (None: left at its default; a list or
    mapping extends a repeated or map field): InvalidArgument naming the argument and the type
    it takes where the value does not fit. Bounds are the core's to check (it refuses them
    naming the field); a whole number past the wire's 32 bits is refused here."""
    if value is None:
        return
    argument = ARGUMENT_NAMES.get(name, name)
    values = value.values() if isinstance(value, Mapping) else value if isinstance(value, list) else [value]
    try:
        boolean = pb.RecallRequest.DESCRIPTOR.fields_by_name[name].cpp_type == FieldDescriptor.CPPTYPE_BOOL
        if not boolean and any(isinstance(each, bool) for each in values):
            raise TypeError(value)  # (True is an int to Python, not a count or a weight)
        field = getattr(request, name)
        if isinstance(value, Mapping):
            field.update(value)
        elif isinstance(value, list):
            field.extend(value)
        else:
            setattr(request, name, value)
    except UnicodeEncodeError:
        raise InvalidArgument(f"{argument}: holds text that is not valid Unicode (a lone surrogate)") from None
    except (TypeError, ValueError):
        if _wanted(name).startswith("a whole number") and isinstance(value, int) and not isinstance(value, bool):
            raise InvalidArgument(f"{argument} must be a whole number from 0 to {2**32 - 1}, got {value}") from None
        raise InvalidArgument(f"{argument} must be {_wanted(name)}, got {quoted(value)}") from None


def _wanted(name: str) -> str:
    field = pb.RecallRequest.DESCRIPTOR.fields_by_name[name]
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        return f"a mapping of strings to {_plural(field.message_type.fields_by_name['value'].cpp_type)}"
    if field.default_value == []:  # (a repeated field's)
        return f"a list of {_plural(field.cpp_type)}"
    return WANTED.get(field.cpp_type, "a value of its type") + (
        " >= 0" if field.cpp_type == field.CPPTYPE_UINT32 else ""
    )


def _plural(cpp_type: int) -> str:
    return WANTED.get(cpp_type, "values").removeprefix("a ") + "s"


def result_of(memory: MemoryView, namespace: Namespace, response: pb.RecallResponse, explained: bool) -> RecallResult:
    """The core's response as the library returns it: each explained hit with its stored record
    (one read for all of them; a hit forgotten since the core's answer keeps None)."""
    shown = [*response.hits, *response.suppressed]
    records: dict[str, records_pb2.ItemRecord] = {}
    if explained and shown:
        ids = [hit.id for hit in shown]
        found = memory.writer.backend.get_items(namespace.name, ids)
        records = {item_id: record for item_id, record in zip(ids, found) if record is not None}
        memory.writer.know_concepts_of(namespace, list(records.values()))

    labelled = response.mode_used == pb.RECALL_MODE_ANSWER  # answer mode's hits carry its labels

    def hit_of(message: pb.Hit) -> Hit:
        return Hit(
            message.id,
            message.s_log,
            message.s_sem,
            records.get(message.id),
            list(message.entailed_by),
            list(message.conflicted_by),
            list(message.reasons),
            message.absence_verified,
            label=message.status if labelled else "",
            answer=message.answer,
            superseded_by=message.superseded_by,
        )

    parse = response.parse
    tiers = response.tier_counts
    return RecallResult(
        [hit_of(message) for message in response.hits],
        {"conflict": tiers.conflict, "neutral": tiers.neutral, "entailed": tiers.entailed},
        QueryParse(
            parse.explicit,
            list(parse.unknown),
            [(m.phrase, m.concept, m.similarity) for m in parse.mapped],
            [(u.name, list(u.did_you_mean)) for u in parse.unknown_concepts],
        ),
        list(parse.required),
        list(parse.forbidden),
        mode_used=pb.RecallMode.Name(response.mode_used).removeprefix("RECALL_MODE_").lower(),
        mode_reason=response.mode_reason,
        suppressed=[hit_of(message) for message in response.suppressed],
        answer_summary=response.answer_summary,
        context=response.context,
    )
