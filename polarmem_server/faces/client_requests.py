"""Request building shared by the sync (`client.py`) and asyncio (`aio_client.py`) clients:
plain Python values in, `polarmem.v1` request messages out, and a ValueError naming the
argument and its fix for anything that cannot be encoded — before any call is made. Each RPC's
Call (end of the module) adds what a client method returns of the response, so a client only
sends it, blocking or awaited.

Checks here are the ones only the client can make (a mode, kind or state name, a value of the
wrong type, an unreadable content file). Everything that needs the namespace (dimensions,
vector spaces, concept names, score ranges) is checked by the server, which answers
INVALID_ARGUMENT naming the field."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any, ParamSpec, Union

import numpy as np
from google.protobuf import field_mask_pb2

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.common.v1 import enums_pb2  # the shared enums (ItemKind, ConceptState)

# Name tables, in the order error messages list them.
MODES = {
    "off": pb.RECALL_MODE_OFF,
    "hard": pb.RECALL_MODE_HARD,
    "soft": pb.RECALL_MODE_SOFT,
    "adaptive": pb.RECALL_MODE_ADAPTIVE,
    "strict": pb.RECALL_MODE_STRICT,
    "answer": pb.RECALL_MODE_ANSWER,
}
MODE_NAMES = {pb.RECALL_MODE_UNSPECIFIED: "unspecified", **{code: name for name, code in MODES.items()}}
STATES = {
    "has": enums_pb2.CONCEPT_STATE_HAS,
    "not_has": enums_pb2.CONCEPT_STATE_NOT_HAS,
    "uncertain": enums_pb2.CONCEPT_STATE_UNCERTAIN,
}
STATE_NAMES = {code: name for name, code in STATES.items()}
KINDS = {"visual": enums_pb2.ITEM_KIND_VISUAL, "text": enums_pb2.ITEM_KIND_TEXT}
KIND_NAMES = {enums_pb2.ITEM_KIND_UNSPECIFIED: "visual", **{code: name for name, code in KINDS.items()}}
POLARITIES = {
    "has": pb.CONCEPT_POLARITY_HAS,
    "not_has": pb.CONCEPT_POLARITY_NOT_HAS,
    "align": pb.CONCEPT_POLARITY_ALIGN,
}
STORAGES = {"fp32": pb.VECTOR_STORAGE_FP32, "fp16": pb.VECTOR_STORAGE_FP16, "int8": pb.VECTOR_STORAGE_INT8}
DEGENERATE_POLICIES = {"fixed": pb.DEGENERATE_POLICY_FIXED, "uncertain": pb.DEGENERATE_POLICY_UNCERTAIN}
PARTITIONERS = ("otsu", "min_error", "mixture", "calibrated", "auto")  # for help texts

# Fields of NamespaceConfig that UpdateNamespace may change (its update_mask paths).
UPDATABLE_FIELDS = (
    "kappa",
    "rho",
    "rho_absent",
    "partitioner",
    "aliases",
    "templates",
    "degenerate_policy",
    "fixed_threshold",
    "template_std_max",
    "concepts",
    "declared_accuracy",
)

# Methods that change nothing (or change nothing more when repeated) are retried on UNAVAILABLE:
# the server answers UNAVAILABLE only before a call is admitted (starting or draining), and gRPC
# retries only calls whose response has not started.
IDEMPOTENT_METHODS = (
    "GetNamespace",
    "ListNamespaces",
    "GetItem",
    "GetConcept",
    "ListConcepts",
    "ListItems",
    "Recall",
    "ScoreConcepts",
)

Content = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]"]


def choice(field: str, value: Any, table: Mapping[str, Any]) -> Any:
    """table[value], or ValueError listing the allowed names."""
    if isinstance(value, str) and value in table:
        return table[value]
    raise ValueError(f"{field} must be one of {', '.join(table)}, got {value!r}")


def _names(field: str, values: Iterable[str] | str | None) -> list[str]:
    """A list of non-empty strings; a lone string is refused (it would be read letter by letter)."""
    if values is None:
        return []
    if isinstance(values, str):
        raise ValueError(f"{field} must be a list of names, got the string {values!r} (write [{values!r}])")
    out = list(values)
    for value in out:
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{field}: every entry must be a non-empty string, got {value!r}")
    return out


def _str_map(field: str, values: Mapping[str, Any] | None) -> dict[str, str]:
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise ValueError(f"{field} must be a mapping of strings, got {type(values).__name__}")
    for key, value in values.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValueError(f"{field}: keys and values must be strings, got {key!r}: {value!r}")
    return dict(values)


def vector_value(values: Any, field: str = "vectors") -> pb.VectorValue:
    """One vector (1-d) or several rows (2-d, for multi spaces) as a VectorValue."""
    try:
        array = np.asarray(values, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{field}: not a vector of numbers ({exc})") from None
    if array.ndim not in (1, 2):
        raise ValueError(f"{field}: a vector is 1-d (or 2-d rows for a multi space), got shape {array.shape}")
    return pb.VectorValue(values=array.ravel().tolist(), rows=array.shape[0] if array.ndim == 2 else 1)


def _vectors(field: str, vectors: Mapping[str, Any] | None) -> dict[str, pb.VectorValue]:
    if vectors is None:
        return {}
    if not isinstance(vectors, Mapping):
        raise ValueError(f"{field} must map a vector space name to a vector, got {type(vectors).__name__}")
    return {space: vector_value(value, f"{field}[{space!r}]") for space, value in vectors.items()}


def _scores(field: str, scores: Mapping[str, Sequence[float]] | None) -> dict[str, pb.ConceptScores]:
    if scores is None:
        return {}
    if not isinstance(scores, Mapping):
        raise ValueError(f"{field} must map a concept to its P(Yes) per template, got {type(scores).__name__}")
    out = {}
    for concept, values in scores.items():
        if isinstance(values, (int, float)):
            raise ValueError(f"{field}[{concept!r}]: give one P(Yes) per template as a list, e.g. [{values}, ...]")
        try:
            out[concept] = pb.ConceptScores(p_yes=[float(v) for v in values])
        except (TypeError, ValueError):
            raise ValueError(f"{field}[{concept!r}]: P(Yes) scores must be numbers, got {values!r}") from None
    return out


def _states(field: str, states: Mapping[str, str] | None) -> dict[str, int]:
    if states is None:
        return {}
    if not isinstance(states, Mapping):
        raise ValueError(f"{field} must map a concept to has, not_has or uncertain, got {type(states).__name__}")
    return {concept: choice(f"{field}[{concept!r}]", state, STATES) for concept, state in states.items()}


def content_bytes(content: Content | None, field: str = "content") -> bytes:
    """Image bytes, or the bytes of the file a path names."""
    if content is None:
        return b""
    if isinstance(content, (bytes, bytearray, memoryview)):
        return bytes(content)
    if isinstance(content, (str, os.PathLike)):
        path = Path(content)
        try:
            return path.read_bytes()
        except OSError as exc:
            raise ValueError(
                f"{field}: cannot read image file {str(path)[:200]!r} ({exc.strerror or exc}); content is "
                "image bytes or a path to an image (text goes in `text`)"
            ) from None
    raise ValueError(f"{field} must be image bytes or a path to an image file, got {type(content).__name__}")


def item_message(
    id: str = "",
    kind: str = "visual",
    text: str = "",
    uri: str = "",
    metadata: Mapping[str, str] | None = None,
    vectors: Mapping[str, Any] | None = None,
    scores: Mapping[str, Sequence[float]] | None = None,
    states: Mapping[str, str] | None = None,
    source: str = "",
    model: str = "",
    verify_concepts: Sequence[str] | None = None,
    content: Content | None = None,
) -> pb.ItemInput:
    """An ItemInput from plain Python values (the shape of a line of `polarmem remember` input).

    `scores`: concept -> one P(Yes) per namespace template; `states`: concept -> has / not_has /
    uncertain; `verify_concepts`: concepts the server's engine verifies (with `text` and/or
    `content`, image bytes or a path to an image)."""
    for field, value in (("id", id), ("text", text), ("uri", uri), ("source", source), ("model", model)):
        if not isinstance(value, str):
            raise ValueError(f"{field} must be a string, got {type(value).__name__}")
    return pb.ItemInput(
        id=id,
        kind=choice("kind", kind, KINDS),
        text=text,
        uri=uri,
        metadata=_str_map("metadata", metadata),
        vectors=_vectors("vectors", vectors),
        scores=_scores("scores", scores),
        states=_states("states", states),
        source=source,
        model=model,
        verify_concepts=_names("verify_concepts", verify_concepts),
        content=content_bytes(content),
    )


def _space(space: Any, index: int) -> pb.VectorSpaceConfig:
    """(name, dim) / (name, dim, multi) / (name, dim, multi, storage), or a mapping with those keys."""
    if isinstance(space, Mapping):
        space = (space.get("name"), space.get("dim"), space.get("multi", False), space.get("storage", "fp32"))
    if isinstance(space, str) or not isinstance(space, Sequence) or not 2 <= len(space) <= 4:
        raise ValueError(f"spaces[{index}] must be (name, dim[, multi[, storage]]), got {space!r}")
    name, dim, *rest = space
    if not isinstance(name, str) or not name:
        raise ValueError(f"spaces[{index}]: the name must be a non-empty string, got {name!r}")
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 0:
        raise ValueError(f"spaces[{index}] ({name!r}): dim must be a positive integer, got {dim!r}")
    multi = bool(rest[0]) if rest else False
    storage = (
        choice(f"spaces[{index}] ({name!r}) storage", rest[1], STORAGES) if len(rest) > 1 else pb.VECTOR_STORAGE_FP32
    )
    return pb.VectorSpaceConfig(name=name, dim=int(dim), multi=multi, storage=storage)


def _has_field(message_type, name: str) -> bool:
    return name in message_type.DESCRIPTOR.fields_by_name


def namespace_config(
    spaces: Iterable[Any] = (),
    encoder: str = "",
    kappa: float | None = None,
    aliases: Mapping[str, str] | None = None,
    templates: Sequence[str] | None = None,
    partitioner: str = "",
    rho: float | None = None,
    rho_absent: float | None = None,
    degenerate_policy: str = "",
    fixed_threshold: float | None = None,
    template_std_max: float | None = None,
    concepts: Sequence[str] | None = None,
    declared_accuracy: float | None = None,
    ann: Mapping[str, Any] | bool | None = None,
    open_vocabulary: bool | None = None,
) -> tuple[pb.NamespaceConfig, list[str]]:
    """A NamespaceConfig and the names of the fields given (UpdateNamespace's update_mask).
    `ann` (creation only): True for an approximate index with the default settings, or a
    mapping of ApproximateIndex fields (kind, m, ef_construction, ef_search, exact_below,
    exact_factor). `open_vocabulary` (creation only): every content word of a text item is a
    concept; None leaves the field unset, so the server's default applies (open), False asks for
    a closed vocabulary."""
    # encoder and partitioner names are the server's to check: it may know more than this client
    config = pb.NamespaceConfig(
        encoder=encoder, partitioner=partitioner, spaces=[_space(s, i) for i, s in enumerate(spaces)]
    )
    given = []
    if partitioner:
        given.append("partitioner")
    if aliases is not None:
        config.aliases.update(_str_map("aliases", aliases))
        given.append("aliases")
    if templates is not None:
        names = _names("templates", templates)
        missing = [t for t in names if "{c}" not in t]
        if missing:
            raise ValueError(f"templates: each template must contain {{c}} where the concept goes, got {missing[0]!r}")
        config.templates.extend(names)
        given.append("templates")
    if degenerate_policy:
        config.degenerate_policy = choice("degenerate_policy", degenerate_policy, DEGENERATE_POLICIES)
        given.append("degenerate_policy")
    for field, value in (
        ("kappa", kappa),
        ("rho", rho),
        ("rho_absent", rho_absent),
        ("fixed_threshold", fixed_threshold),
        ("template_std_max", template_std_max),
        ("declared_accuracy", declared_accuracy),
    ):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise ValueError(f"{field} must be a number, got {value!r}")
        setattr(config, field, float(value))
        given.append(field)
    if concepts is not None:
        if not _has_field(pb.NamespaceConfig, "concepts"):
            raise ValueError(
                "concepts: this client's polarmem.v1 protos predate NamespaceConfig.concepts; upgrade polarmem-server"
            )
        config.concepts.extend(_names("concepts", concepts))
        given.append("concepts")
    if ann:
        config.ann.CopyFrom(_ann(ann))
        given.append("ann")
    if open_vocabulary is not None:
        if not isinstance(open_vocabulary, bool):
            raise ValueError(
                f"open_vocabulary must be True, False or None (the server's default, open), got {open_vocabulary!r}"
            )
        config.open_vocabulary = open_vocabulary  # set, even False: the field has presence
        given.append("open_vocabulary")
    return config, given


def _ann(ann: Mapping[str, Any] | bool) -> pb.ApproximateIndex:
    if ann is True:
        return pb.ApproximateIndex()
    if not isinstance(ann, Mapping):
        raise ValueError(f"ann must be True or a mapping of ApproximateIndex fields, got {ann!r}")
    fields = pb.ApproximateIndex.DESCRIPTOR.fields_by_name
    unknown = [key for key in ann if key not in fields]
    if unknown:
        raise ValueError(f"ann: unknown field {unknown[0]!r}; use {', '.join(fields)}")
    try:
        return pb.ApproximateIndex(**ann)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"ann: {exc}") from None


def update_namespace_request(name: str, **changes: Any):
    """UpdateNamespaceRequest for the fields given (None = leave unchanged)."""
    if not hasattr(pb, "UpdateNamespaceRequest"):
        raise NotImplementedError(
            "UpdateNamespace: this client's polarmem.v1 protos predate the RPC; upgrade polarmem-server"
        )
    unknown = set(changes) - set(UPDATABLE_FIELDS)
    if unknown:
        raise ValueError(
            f"update_namespace: {sorted(unknown)[0]!r} cannot be changed; changeable: {', '.join(UPDATABLE_FIELDS)}"
        )
    config, given = namespace_config(**{k: v for k, v in changes.items() if v is not None})
    if not given:
        raise ValueError(f"update_namespace: nothing to change; give any of {', '.join(UPDATABLE_FIELDS)}")
    return pb.UpdateNamespaceRequest(name=name, config=config, update_mask=field_mask_pb2.FieldMask(paths=given))


UINT32_MAX = 2**32 - 1  # the counts' proto type: protobuf's own refusal ("Value out of range") names no field


def _count(field: str, value: Any, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not minimum <= value <= UINT32_MAX:
        raise ValueError(f"{field} must be an integer from {minimum} to {UINT32_MAX}, got {value!r}")
    return int(value)


def recall_request(
    namespace: str,
    text: str = "",
    vectors: Mapping[str, Any] | None = None,
    required: Sequence[str] | None = None,
    forbidden: Sequence[str] | None = None,
    top_k: int = 10,
    mode: str | None = None,
    soft_lambda: float | None = None,
    exclude_conflicts: bool = False,
    kinds: Sequence[str] | None = None,
    metadata_equals: Mapping[str, str] | None = None,
    suppressed_k: int = 0,
    include_context: bool = False,
    context_budget_chars: int = 0,
    include_items: bool = False,
    weights: Mapping[str, float] | None = None,
    allow_unknown_concepts: bool = False,
    approximate: bool = False,
    ef_search: int | None = None,
    rank_by_confidence: bool | None = None,
    explain: bool | None = None,
    recency_half_life_s: float | None = None,
    recency_weight: float | None = None,
    consistency: str | None = None,
    consistency_token: bytes | None = None,
) -> pb.RecallRequest:
    """RecallRequest; see PolarMemClient.recall. top_k 0 is sent as given (the server explains it).
    `rank_by_confidence` / `explain` None leave the field unset (the namespace's rule decides;
    explanations on). `recency_half_life_s` / `recency_weight` None leave them unset (no
    recency term; the server checks the values and names the field). `consistency` /
    `consistency_token`: the read level (with_consistency)."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    request = pb.RecallRequest(
        namespace=namespace,
        text=text,
        vectors=_vectors("vectors", vectors),
        weights={k: float(v) for k, v in (weights or {}).items()},
        required=_names("required", required),
        forbidden=_names("forbidden", forbidden),
        top_k=_count("top_k", top_k),
        mode=pb.RECALL_MODE_UNSPECIFIED if mode in (None, "") else choice("mode", mode, MODES),
        exclude_conflicts=bool(exclude_conflicts),
        kinds=[choice("kinds[]", k, KINDS) for k in _names("kinds", kinds)],
        metadata_equals=_str_map("metadata_equals", metadata_equals),
        suppressed_k=_count("suppressed_k", suppressed_k),
        include_context=bool(include_context),
        context_budget_chars=_count("context_budget_chars", context_budget_chars),
        include_items=bool(include_items),
    )
    if soft_lambda is not None:
        request.soft_lambda = float(soft_lambda)
    if allow_unknown_concepts and _has_field(pb.RecallRequest, "allow_unknown_concepts"):
        request.allow_unknown_concepts = True
    if approximate:
        request.approximate = True
    if ef_search is not None:
        request.ef_search = _count("ef_search", ef_search, minimum=1)
    if rank_by_confidence is not None:
        if not isinstance(rank_by_confidence, bool):
            raise ValueError(f"rank_by_confidence must be True, False or None, got {rank_by_confidence!r}")
        request.rank_by_confidence = rank_by_confidence
    if explain is not None:
        if not isinstance(explain, bool):
            raise ValueError(f"explain must be True, False or None, got {explain!r}")
        request.explain = explain
    for name, value in (("recency_half_life_s", recency_half_life_s), ("recency_weight", recency_weight)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise ValueError(f"{name} must be a number or None, got {value!r}")
            setattr(request, name, float(value))
    return with_consistency(request, consistency, consistency_token)


def observe_request(
    namespace: str,
    id: str,
    scores: Mapping[str, Sequence[float]] | None = None,
    states: Mapping[str, str] | None = None,
    vectors: Mapping[str, Any] | None = None,
    text: str = "",
    content: Content | None = None,
    verify_concepts: Sequence[str] | None = None,
    source: str = "",
    model: str = "",
) -> pb.ObserveRequest:
    """ObserveRequest; see PolarMemClient.observe."""
    if not isinstance(id, str) or not id:
        raise ValueError(f"id must be the non-empty id of a stored item, got {id!r}")
    request = pb.ObserveRequest(
        namespace=namespace,
        id=id,
        scores=_scores("scores", scores),
        states=_states("states", states),
        vectors=_vectors("vectors", vectors),
        text=text,
        content=content_bytes(content),
        verify_concepts=_names("verify_concepts", verify_concepts),
        source=source,
        model=model,
    )
    if not (
        request.scores
        or request.states
        or request.vectors
        or request.text
        or request.content
        or request.verify_concepts
    ):
        raise ValueError(
            "observe: no evidence given; send scores, states, vectors, or text / content / "
            "verify_concepts for the server's engine"
        )
    return request


def get_concept_request(
    namespace: str, concept: str, polarity: str = "has", page_size: int = 0, page_token: str = ""
) -> pb.GetConceptRequest:
    return pb.GetConceptRequest(
        namespace=namespace,
        concept=concept,
        polarity=choice("polarity", polarity, POLARITIES),
        page_size=_count("page_size", page_size),
        page_token=page_token,
    )


def list_concepts_request(namespace: str, page_size: int = 0, page_token: str = "") -> pb.ListConceptsRequest:
    return pb.ListConceptsRequest(namespace=namespace, page_size=_count("page_size", page_size), page_token=page_token)


def get_item_request(
    namespace: str,
    id: str,
    include_history: bool = False,
    include_vectors: bool = False,
    consistency: str | None = None,
    consistency_token: bytes | None = None,
) -> pb.GetItemRequest:
    """GetItemRequest; see PolarMemClient.get_item."""
    request = pb.GetItemRequest(
        namespace=namespace, id=id, include_history=include_history, include_vectors=include_vectors
    )
    return with_consistency(request, consistency, consistency_token)


def list_items_request(
    namespace: str,
    page_size: int = 0,
    page_token: str = "",
    has: Sequence[str] | None = None,
    not_has: Sequence[str] | None = None,
    metadata_equals: Mapping[str, str] | None = None,
    kinds: Sequence[str] | None = None,
    consistency: str | None = None,
    consistency_token: bytes | None = None,
) -> pb.ListItemsRequest:
    """ListItemsRequest; see PolarMemClient.list_items."""
    request = pb.ListItemsRequest(
        namespace=namespace,
        page_size=_count("page_size", page_size),
        page_token=page_token,
        has=_names("has", has),
        not_has=_names("not_has", not_has),
        metadata_equals=_str_map("metadata_equals", metadata_equals),
        kinds=[choice("kinds[]", k, KINDS) for k in _names("kinds", kinds)],
    )
    return with_consistency(request, consistency, consistency_token)


def update_item_request(
    namespace: str, id: str, text: str | None = None, metadata: Mapping[str, str] | None = None
) -> pb.UpdateItemRequest:
    """UpdateItemRequest: the arguments given (not None) make the update_mask."""
    if not isinstance(id, str) or not id:
        raise ValueError(f"id must be the non-empty id of a stored item, got {id!r}")
    if text is None and metadata is None:
        raise ValueError("update_item: give text and/or metadata")
    if text is not None and not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    request = pb.UpdateItemRequest(namespace=namespace, id=id, text=text or "", metadata=_str_map("metadata", metadata))
    request.update_mask.paths.extend(
        [path for path, value in (("text", text), ("metadata", metadata)) if value is not None]
    )
    return request


def score_concepts_request(
    namespace: str, concepts: Sequence[str] | None, text: str = "", content: Content | None = None, **item: Any
) -> pb.ScoreConceptsRequest:
    return pb.ScoreConceptsRequest(
        namespace=namespace,
        concepts=_names("concepts", concepts),
        item=item_message(text=text, content=content, **item),
    )


def backup_request(destination_dir: str) -> pb.BackupRequest:
    """BackupRequest; the path is the server's, so only its type and form are checked here."""
    if not isinstance(destination_dir, (str, os.PathLike)) or not str(destination_dir):
        raise ValueError(f"destination_dir must be an absolute path on the server, got {destination_dir!r}")
    return pb.BackupRequest(destination_dir=str(destination_dir))


def calibrate_request(namespace: str, p_yes: Sequence[float], present: Sequence[bool]) -> pb.CalibrateRequest:
    try:
        scores = [float(p) for p in p_yes]
    except (TypeError, ValueError):
        raise ValueError("p_yes must be a list of numbers (one P(Yes) per labelled object)") from None
    if any(not isinstance(p, (bool, np.bool_)) for p in present):
        raise ValueError("present must be a list of true / false (was each object really there)")
    return pb.CalibrateRequest(namespace=namespace, p_yes=scores, present=[bool(p) for p in present])


class StreamChunker:
    """Packs items into RememberStream messages, `items_per_message` each; the namespace rides
    the first. The sync and asyncio clients feed it from their own kind of iterator."""

    def __init__(self, namespace: str, items_per_message: int) -> None:
        if isinstance(items_per_message, bool) or not isinstance(items_per_message, int) or items_per_message < 1:
            raise ValueError(f"items_per_message must be >= 1, got {items_per_message}")
        self.namespace, self.items_per_message = namespace, items_per_message
        self._chunk: list[pb.ItemInput] = []
        self._sent = False

    def _message(self) -> pb.RememberStreamRequest:
        message = pb.RememberStreamRequest(namespace="" if self._sent else self.namespace, items=self._chunk)
        self._chunk, self._sent = [], True
        return message

    def add(self, item: pb.ItemInput) -> pb.RememberStreamRequest | None:
        """The next message when this item fills one, else None."""
        self._chunk.append(item)
        return self._message() if len(self._chunk) == self.items_per_message else None

    def finish(self) -> pb.RememberStreamRequest | None:
        """The last, partial message (or the only one of an empty stream, naming the namespace)."""
        return self._message() if self._chunk or not self._sent else None


def remember_stream_requests(
    namespace: str, items: Iterable[pb.ItemInput], items_per_message: int
) -> Iterator[pb.RememberStreamRequest]:
    """The stream's messages for a plain iterable of items."""
    chunker = StreamChunker(namespace, items_per_message)
    for item in items:
        message = chunker.add(item)
        if message is not None:
            yield message
    last = chunker.finish()
    if last is not None:
        yield last


async def async_remember_stream_requests(
    namespace: str, items: AsyncIterable[pb.ItemInput], items_per_message: int
) -> AsyncIterator[pb.RememberStreamRequest]:
    """The stream's messages for an async iterable of items (the asyncio client's)."""
    chunker = StreamChunker(namespace, items_per_message)
    async for item in items:
        message = chunker.add(item)
        if message is not None:
            yield message
    last = chunker.finish()
    if last is not None:
        yield last


# ---- channel settings -----------------------------------------------------------------------


def service_config(
    max_attempts: int = 4,
    initial_backoff_s: float = 0.1,
    max_backoff_s: float = 2.0,
    backoff_multiplier: float = 2.0,
    retry_codes: Sequence[str] = ("UNAVAILABLE",),
) -> str:
    """gRPC service config (JSON) retrying the idempotent MemoryService methods with exponential,
    jittered backoff. max_attempts 1 turns retries off (gRPC caps it at 5)."""
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    config: dict[str, Any] = {"methodConfig": []}
    if max_attempts > 1:
        config["methodConfig"].append(
            {
                "name": [{"service": "polarmem.v1.MemoryService", "method": m} for m in IDEMPOTENT_METHODS],
                "retryPolicy": {
                    "maxAttempts": max_attempts,
                    "initialBackoff": f"{initial_backoff_s}s",
                    "maxBackoff": f"{max_backoff_s}s",
                    "backoffMultiplier": backoff_multiplier,
                    "retryableStatusCodes": [code.upper() for code in retry_codes],
                },
            }
        )
    return json.dumps(config)


def channel_options(max_message_bytes: int, retry: str) -> list[tuple[str, Any]]:
    return [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.enable_retries", 1),
        ("grpc.service_config", retry),
    ]


def bearer_metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    if token is not None and (not isinstance(token, str) or "\n" in token):
        raise ValueError("token must be a single-line string")
    return (("authorization", f"Bearer {token}"),) if token else ()


# ---- consistency tokens (docs/deployment.md, "Consistency") ----------------------------------

CONSISTENCIES = {"bounded": pb.READ_CONSISTENCY_BOUNDED, "strong": pb.READ_CONSISTENCY_STRONG}


def with_consistency(request, consistency: str | None, consistency_token: bytes | None = None):
    """`request` (Recall / GetItem / ListItems) at that read level: "strong" sees every
    acknowledged write, "bounded" (None: the server's default) the client's own last write and
    every write older than Milvus's bound. `consistency_token`: a write's token from elsewhere
    (another process's client, a queue message) that the read must see, instead of this
    client's own."""
    if consistency is not None:
        request.consistency = choice("consistency", consistency, CONSISTENCIES)
    if consistency_token:
        request.consistency_token = bytes(consistency_token)
    return request


class LastWrite:
    """The consistency token of a client object's own latest write, sent with its later reads
    (one per client object, shared by its threads or tasks).

    Merge rule: keep the larger token as bytes. A token is a version byte then a Milvus
    timestamp (or a --processes primary's store position), fixed-width big-endian, and both only
    grow, so the larger bytes are the later write; a read that carries it sees every write this
    client made before it (a write's token covers every earlier write of the same Milvus or
    group). A request that already carries a token (the caller's own) keeps it."""

    def __init__(self, token: bytes = b"") -> None:
        self.token = bytes(token)

    def stamp(self, request) -> None:
        if (
            self.token
            and isinstance(getattr(request, "consistency_token", None), bytes)
            and not request.consistency_token
        ):
            request.consistency_token = self.token

    def note(self, response) -> None:
        self.note_token(getattr(response, "consistency_token", b""))

    def note_token(self, token: bytes) -> None:
        if token and token > self.token:  # a comparison and an assignment: atomic enough under the GIL
            self.token = bytes(token)


# ---- calls: each RPC as both clients make it -------------------------------------------------


def _whole_response(response: Any) -> Any:
    return response


def _namespace_list(response: pb.ListNamespacesResponse) -> list[pb.NamespaceInfo]:
    return list(response.namespaces)


@dataclass(frozen=True)
class Call:
    """One RPC as both clients make it: the MemoryService method (`rpc`), its request (a stream's:
    an iterator of its messages), what of the response the client method returns (`result`) and
    whether its default deadline is the stream's (`streaming`: stream_timeout_s). A client only
    sends it, blocking or awaited."""

    rpc: str
    request: Any
    result: Callable[[Any], Any] = _whole_response
    streaming: bool = False


_Args = ParamSpec("_Args")


def _call_of(
    rpc: str, request: Callable[_Args, Any], result: Callable[[Any], Any] = _whole_response
) -> Callable[_Args, Call]:
    """The function that makes `rpc`'s Call from the arguments of `request`: a request builder
    above, or the request message's own class (keyword arguments only)."""

    def build_call(*args: _Args.args, **kwargs: _Args.kwargs) -> Call:
        return Call(rpc, request(*args, **kwargs), result)

    return build_call


create_namespace_call = _call_of("CreateNamespace", pb.CreateNamespaceRequest, attrgetter("namespace"))
get_namespace_call = _call_of("GetNamespace", pb.GetNamespaceRequest, attrgetter("namespace"))
list_namespaces_call = _call_of("ListNamespaces", pb.ListNamespacesRequest, _namespace_list)
update_namespace_call = _call_of("UpdateNamespace", update_namespace_request)
delete_namespace_call = _call_of("DeleteNamespace", pb.DeleteNamespaceRequest)
clear_namespace_call = _call_of("ClearNamespace", pb.ClearNamespaceRequest, attrgetter("items_deleted"))
remember_call = _call_of("Remember", pb.RememberRequest, attrgetter("item"))
observe_call = _call_of("Observe", observe_request)
forget_call = _call_of("Forget", pb.ForgetRequest)
get_item_call = _call_of("GetItem", get_item_request)
update_item_call = _call_of("UpdateItem", update_item_request)
list_items_call = _call_of("ListItems", list_items_request)
get_concept_call = _call_of("GetConcept", get_concept_request)
list_concepts_call = _call_of("ListConcepts", list_concepts_request)
score_concepts_call = _call_of("ScoreConcepts", score_concepts_request)
calibrate_call = _call_of("Calibrate", calibrate_request, attrgetter("calibration"))
backup_call = _call_of("Backup", backup_request)
recall_call = _call_of("Recall", recall_request)


def remember_stream_call(
    namespace: str,
    items: Iterable[pb.ItemInput] | AsyncIterable[pb.ItemInput],
    items_per_message: int,
    stream_requests: Callable[[str, Any, int], Iterator[Any] | AsyncIterator[Any]] = remember_stream_requests,
) -> Call:
    """RememberStream's Call: `items` packed `items_per_message` to a message by `stream_requests`
    (remember_stream_requests; async_remember_stream_requests for an async iterable)."""
    StreamChunker(namespace, items_per_message)  # checks items_per_message before the call
    return Call("RememberStream", stream_requests(namespace, items, items_per_message), streaming=True)
