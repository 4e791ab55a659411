"""gRPC servicer of polarmem.v1.MemoryService: converts messages to library calls and back.
Errors are raised as exceptions and mapped to status codes by the server's interceptor
(api/status.py holds the table); only RememberStream reports per-item errors in its body."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import grpc
import numpy as np

from polarmem.common.v1 import enums_pb2
from polarmem.storage.v1 import records_pb2
from polarmem.v1 import memory_service_pb2 as pb
from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem_server import _core
from polarmem_server.api.metrics import ServerMetrics
from polarmem_server.api.auth import Authorizer
from polarmem_server.api.consistency_tokens import answers_with_token, reads_at_requested_level
from polarmem_server.api.fast_front import FastFrontHost
from polarmem_server.api.status import DeadlineExceeded, public_message, status_for
from polarmem_server.domain.evidence import last_write_changed_states
from polarmem_server.domain.items import KIND_NAMES, STATE_NAMES, check_template_count, content_id
from polarmem_server.domain.mixtures import calibration_fields
from polarmem_server.domain.query import RecallMode
from polarmem_server.domain.settings import DEFAULT_SPACES, DEFAULT_TEMPLATES, UPDATABLE_FIELDS, NamespaceSettings
from polarmem_server.api.idempotency import stored_if_same
from polarmem_server.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    PermissionDenied,
    Unavailable,
    quoted,
)
from polarmem_server.index import AnnSpec, SpaceSpec
from polarmem_server.library import (
    DEFAULT_ITEMS_PAGE,
    MAX_ITEMS_PAGE,
    MODE_CODES,
    UPDATABLE_ITEM_FIELDS,
    AutoCreate,
    ItemInput,
    Memory,
    Namespace,
    clear_namespace,
    list_items,
    parse_page_token,
    update_item,
    wait_for_encoder,
)
from polarmem_server.scoring.verification import Verifier

# One table per enum: API code <-> library value.
STORAGE_NAMES = {
    pb.VECTOR_STORAGE_UNSPECIFIED: "fp32",
    pb.VECTOR_STORAGE_FP32: "fp32",
    pb.VECTOR_STORAGE_FP16: "fp16",
    pb.VECTOR_STORAGE_INT8: "int8",
}
STORAGE_CODES = {"fp32": pb.VECTOR_STORAGE_FP32, "fp16": pb.VECTOR_STORAGE_FP16, "int8": pb.VECTOR_STORAGE_INT8}
API_KIND_NAMES = {enums_pb2.ITEM_KIND_UNSPECIFIED: "visual", **KIND_NAMES}
POLICY_NAMES = {
    pb.DEGENERATE_POLICY_UNSPECIFIED: "fixed",
    pb.DEGENERATE_POLICY_FIXED: "fixed",
    pb.DEGENERATE_POLICY_UNCERTAIN: "uncertain",
}
POLICY_CODES = {"fixed": pb.DEGENERATE_POLICY_FIXED, "uncertain": pb.DEGENERATE_POLICY_UNCERTAIN}
POLARITY_NAMES = {
    pb.CONCEPT_POLARITY_UNSPECIFIED: "has",
    pb.CONCEPT_POLARITY_HAS: "has",
    pb.CONCEPT_POLARITY_NOT_HAS: "not_has",
    pb.CONCEPT_POLARITY_ALIGN: "align",
}
STREAM_BATCH = 1024  # items per group commit (one WAL sync) of a RememberStream
# Items a stream hands the scoring engine at once: a quarter of its default queue, so other
# callers' verification still finds room.
STREAM_VERIFY_BATCH = 256
MAX_PAGE_SIZE = 1000
DEFAULT_PAGE_SIZE = 100


def check_backup_destination(destination: str, root: str) -> None:
    """A Backup may only write inside the configured backup_dir: the RPC writes on the server's
    filesystem, so without a fence an admin token could make the server write anywhere it can.
    No backup_dir means no Backup (the rest is checked by the snapshot)."""
    if "\x00" in destination:
        raise InvalidArgument("destination_dir: a path cannot contain NUL bytes")
    if not root:
        raise FailedPrecondition(
            "Backup is off on this server: it has no backup_dir. Set backup_dir "
            "(--backup-dir, POLARMEM_BACKUP_DIR) to the directory snapshots may be written under"
        )
    if not destination or not Path(destination).is_absolute():
        return  # the snapshot's own check names what is wrong with it
    try:
        resolved, fence = Path(destination).resolve(), Path(root).resolve()
    except OSError as exc:  # a path the OS cannot look up (ENAMETOOLONG, ELOOP)
        raise InvalidArgument(
            f"destination_dir {quoted(destination)} cannot be used "
            f"({os.strerror(exc.errno or 0)}); name a new directory under the backup_dir"
        ) from None
    if fence not in resolved.parents:
        raise InvalidArgument(
            f"destination_dir: {quoted(destination)} is not inside the server's backup_dir "
            f"{quoted(str(fence))}; pick a new directory under it"
        )


MAX_CALL_S = 1e6  # a client deadline further off than this is no deadline (call_deadline)


def client_remaining_s(context: grpc.ServicerContext) -> float | None:
    """Seconds left of the client's deadline; None for a call without one. gRPC reports such a
    call as an enormous remaining time, not None: passed on as a timeout (a forwarded call) it
    overflows gRPC's deadline arithmetic into the past, and waits on it (thread joins) overflow."""
    remaining = context.time_remaining()
    return None if remaining is None or remaining > MAX_CALL_S else remaining


def call_deadline(context: grpc.ServicerContext, default_s: float) -> float:
    """Monotonic time by which the call must finish: the client's deadline or the default."""
    remaining = client_remaining_s(context)
    return time.monotonic() + (default_s if remaining is None else remaining)


def check_deadline(deadline: float) -> None:
    if time.monotonic() > deadline:
        raise DeadlineExceeded("the call ran past its deadline")


# ---- conversions --------------------------------------------------------------------------


def vectors_from(message_map: Mapping[str, pb.VectorValue], field: str) -> dict[str, np.ndarray]:
    """Messages to arrays (rows reshaped); the library checks them."""
    out = {}
    for space, value in message_map.items():
        values = np.asarray(value.values, dtype=np.float32)
        rows = max(1, value.rows)
        if values.size == 0 or values.size % rows:
            raise InvalidArgument(f"{field}[{quoted(space)}]: {values.size} values do not make {rows} row(s)")
        out[space] = values.reshape(rows, -1) if value.rows > 1 else values
    return out


def vector_message(rows: np.ndarray) -> pb.VectorValue:
    rows = np.asarray(rows, dtype=np.float32)
    return pb.VectorValue(values=rows.ravel().tolist(), rows=rows.shape[0] if rows.ndim == 2 else 1)


def scores_from(message_map: Mapping[str, pb.ConceptScores]) -> dict[str, list[float]]:
    return {concept: list(s.p_yes) for concept, s in message_map.items()}


def states_from(message_map: Mapping[str, int], field: str) -> dict[str, str]:
    out = {}
    for concept, state in message_map.items():
        if state not in STATE_NAMES:
            raise InvalidArgument(f"{field}[{quoted(concept)}]: state must be HAS, NOT_HAS or UNCERTAIN")
        out[concept] = STATE_NAMES[state]
    return out


def item_input(message: pb.ItemInput, templates: int | None = None, where: str = "item") -> ItemInput:
    """The library's ItemInput; `where` names the message in errors ("item", "items[3]"), and
    client scores must number `templates` per concept (the namespace's template count)."""
    if message.kind not in API_KIND_NAMES:
        raise InvalidArgument(f"{where}.kind: {message.kind} is not a kind; use ITEM_KIND_VISUAL or ITEM_KIND_TEXT")
    scores = scores_from(message.scores)
    if templates is not None:
        check_template_count(scores, templates, f"{where}.scores")
    item = ItemInput(
        id=message.id or None,
        kind=API_KIND_NAMES[message.kind],
        text=message.text,
        uri=message.uri,
        metadata=dict(message.metadata),
        vectors=vectors_from(message.vectors, f"{where}.vectors"),
        scores=scores,
        states=states_from(message.states, f"{where}.states"),
        source=message.source or "client",
        model=message.model,
        verify_concepts=list(message.verify_concepts),
        content=message.content,
    )
    # No id: one derived from the content, so the same content sent again is found stored.
    return item if item.id else replace(item, id=content_id(item))


def item_view(namespace: Namespace, record: records_pb2.ItemRecord, history: bool = False) -> pb.Item:
    """The item as answers show it, written by the core (cpp/include/polarmem/item_view.hpp)."""
    return pb.Item.FromString(_core.item_view(record.SerializeToString(), namespace.vocabulary, history))


def config_fields(config: pb.NamespaceConfig, paths: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The library's settings fields a NamespaceConfig sets: every set field (create), or
    exactly the mask's `paths` (update; an unset optional field then means its default)."""
    out: dict[str, Any] = {}
    wanted = set(paths) if paths is not None else None

    def take(name: str) -> bool:
        return name in wanted if wanted is not None else True

    if wanted is None:
        spaces = []
        for i, s in enumerate(config.spaces):
            if s.storage not in STORAGE_NAMES:
                raise InvalidArgument(f"config.spaces[{i}].storage: unknown storage {s.storage}")
            if s.dim == 0:
                raise InvalidArgument(f"config.spaces[{i}].dim must be >= 1")
            if not s.name:
                raise InvalidArgument(f"config.spaces[{i}].name is required")
            spaces.append(SpaceSpec(s.name, s.dim, s.multi, STORAGE_NAMES[s.storage]))
        out["spaces"] = tuple(spaces) or DEFAULT_SPACES
        if config.encoder:
            out["encoder"] = config.encoder
        if config.HasField("ann"):
            out["ann"] = ann_spec_from(config.ann)
        if config.HasField("open_vocabulary"):  # unset: NamespaceSettings' default (open)
            out["open_vocabulary"] = config.open_vocabulary
    defaults = NamespaceSettings("-")
    if take("degenerate_policy"):
        if config.degenerate_policy not in POLICY_NAMES:
            raise InvalidArgument("config.degenerate_policy: unknown policy")
        out["degenerate_policy"] = POLICY_NAMES[config.degenerate_policy]
    if take("templates"):
        out["templates"] = tuple(config.templates) or DEFAULT_TEMPLATES
    if take("aliases"):
        out["aliases"] = dict(config.aliases)
    if take("partitioner"):
        out["partitioner"] = config.partitioner or defaults.partitioner
    if take("concepts"):
        out["concepts"] = tuple(config.concepts)
    for name in ("kappa", "fixed_threshold", "template_std_max", "rho", "rho_absent", "declared_accuracy"):
        if take(name):
            if config.HasField(name):
                out[name] = getattr(config, name)
            elif wanted is not None:
                out[name] = getattr(defaults, name)
    return out


def ann_spec_from(ann: pb.ApproximateIndex) -> AnnSpec:
    """config.ann as the index's AnnSpec; zero / unset fields take its defaults."""
    given = {
        name: getattr(ann, name)
        for name in ("kind", "m", "ef_construction", "ef_search", "nlist", "nprobe")
        if getattr(ann, name)
    }
    given.update({name: getattr(ann, name) for name in ("exact_below", "exact_factor") if ann.HasField(name)})
    try:
        return AnnSpec(**given)
    except ValueError as exc:  # the core's InvalidArgumentError names the field as ann.<field>
        raise InvalidArgument(f"config.{exc}") from None


def ann_view(spec: AnnSpec | None) -> pb.ApproximateIndex | None:
    if spec is None:
        return None
    return pb.ApproximateIndex(
        kind=spec.kind,
        m=spec.m,
        ef_construction=spec.ef_construction,
        ef_search=spec.ef_search,
        exact_below=spec.exact_below,
        exact_factor=spec.exact_factor,
        nlist=spec.nlist,
        nprobe=spec.nprobe,
    )


def settings_from(name: str, config: pb.NamespaceConfig) -> NamespaceSettings:
    return NamespaceSettings(name=name, **config_fields(config))


def namespace_info(namespace: Namespace, counts) -> pb.NamespaceInfo:
    s = namespace.settings
    config = pb.NamespaceConfig(
        spaces=[
            pb.VectorSpaceConfig(name=x.name, dim=x.dim, multi=x.multi, storage=STORAGE_CODES[x.storage])
            for x in s.spaces
        ],
        encoder=s.encoder,
        kappa=s.kappa,
        fixed_threshold=s.fixed_threshold,
        template_std_max=s.template_std_max,
        degenerate_policy=POLICY_CODES[s.degenerate_policy],
        templates=list(s.templates),
        aliases=dict(s.aliases),
        partitioner=s.partitioner,
        rho=s.rho,
        rho_absent=s.rho_absent or s.rho,
        concepts=list(s.concepts),
        declared_accuracy=s.declared_accuracy,
        ann=ann_view(s.ann),
        open_vocabulary=s.open_vocabulary,
    )
    visual = counts.kinds.get(enums_pb2.ITEM_KIND_VISUAL, 0)
    text = counts.kinds.get(enums_pb2.ITEM_KIND_TEXT, 0)
    info = pb.NamespaceInfo(
        name=s.name,
        config=config,
        created_ms=namespace.created_ms,
        item_count=visual + text,
        visual_count=visual,
        text_count=text,
        concept_count=len(namespace.vocabulary),
    )
    if namespace.calibration is not None:
        info.calibration.CopyFrom(calibration_view(namespace.calibration))
    choice = namespace.rule
    info.rule.CopyFrom(
        pb.RuleChoice(
            partitioner=choice.partitioner,
            recall_mode=MODE_CODES[RecallMode(choice.recall_mode)],
            reason=choice.reason,
            accuracy_used=choice.accuracy_used,
            confidence_present_above=choice.confidence.present_above,
            confidence_absent_below=choice.confidence.absent_below,
            confidence_present_weight=choice.confidence.present_weight or None,
            confidence_absent_weight=choice.confidence.absent_weight or None,
        )
    )
    return info


def calibration_view(model) -> pb.Calibration:
    return pb.Calibration(**calibration_fields(model))


# ---- the servicer -------------------------------------------------------------------------


class MemoryService(pb_grpc.MemoryServiceServicer):
    """Converts messages to library calls and back; verification runs inside the library
    (Memory's verifier port)."""

    def __init__(
        self,
        memory: Memory | None,
        metrics: ServerMetrics,
        authorizer: Authorizer,
        default_deadline_s: float,
        verifier: Verifier | None = None,
    ) -> None:
        """`memory` None: the server sets it once opened (it admits no call before that)."""
        self._memory = memory
        self.metrics = metrics
        self.auth = authorizer
        self.backup_dir = ""  # set by the server from its configuration
        self.default_deadline_s = default_deadline_s
        self.verifier = verifier  # the server hands it to Memory (its verification port)
        # the compiled Recall front's host (api/fast_front.py), when the server runs one
        self.fast_front: FastFrontHost | None = None
        self.auto_create = AutoCreate()  # set by the server from its configuration (namespaces created on first use)
        # A replica of --processes: brings it in step with the primary (up to a token's store
        # position; None: every acknowledged write) before a Strong or token read
        # (api/consistency_tokens.py); None where every acknowledged write is already here.
        self.catch_up: Callable[[int | None], object] | None = None

    @property
    def memory(self) -> Memory:
        if self._memory is None:
            raise Unavailable("the server is starting; retry shortly")
        return self._memory

    @memory.setter
    def memory(self, memory: Memory) -> None:
        self._memory = memory

    def _info(self, namespace: Namespace) -> pb.NamespaceInfo:
        return namespace_info(namespace, self.memory.namespace_counts(namespace.name))

    def CreateNamespace(self, request, context):
        self.auth.check(context, request.name)
        namespace = self.memory.create_namespace(settings_from(request.name, request.config))
        return pb.CreateNamespaceResponse(namespace=self._info(namespace))

    def GetNamespace(self, request, context):
        self.auth.check(context, request.name)
        return pb.GetNamespaceResponse(namespace=self._info(self.memory.namespace(request.name)))

    def ListNamespaces(self, request, context):
        allowed = self.auth.namespaces_of(context)
        return pb.ListNamespacesResponse(
            namespaces=[self._info(n) for n in self.memory.list_namespaces() if allowed is None or n.name in allowed]
        )

    def DeleteNamespace(self, request, context):
        self.auth.check(context, request.name)
        self.memory.delete_namespace(request.name)
        return pb.DeleteNamespaceResponse()

    @answers_with_token
    def UpdateNamespace(self, request, context):
        self.auth.check(context, request.name)
        paths = tuple(request.update_mask.paths)
        if not paths:
            raise InvalidArgument(f"update_mask: name at least one field to update ({', '.join(UPDATABLE_FIELDS)})")
        unknown = [p for p in paths if p not in UPDATABLE_FIELDS]
        if unknown:
            raise InvalidArgument(
                f"update_mask: {quoted(unknown)} cannot be updated; use {', '.join(UPDATABLE_FIELDS)}"
            )
        self.memory.namespace(request.name)  # NOT_FOUND before the config is read
        namespace, repartitioned, changed = self.memory.update_namespace(
            request.name, config_fields(request.config, paths)
        )
        return pb.UpdateNamespaceResponse(
            namespace=self._info(namespace), items_repartitioned=repartitioned, items_changed=changed
        )

    @answers_with_token
    def Remember(self, request, context):
        """Idempotent (api/idempotency.py): an id already stored with the same content answers OK
        with the stored item, so a retry after DEADLINE_EXCEEDED or a lost answer is safe."""
        self.auth.check(context, request.namespace)
        deadline = call_deadline(context, self.default_deadline_s)
        if not request.HasField("item"):
            raise InvalidArgument("item is required")
        # A new note the core stores itself; the rest is the library's. Where the compiled front
        # listens it asked the core already (every call here is one it handed over), and an item
        # with image bytes is the library's: neither is copied into the core to be told so again.
        asked = self.fast_front is not None or bool(request.item.content)
        stored = None if asked else self.memory.core.remember(request)
        if stored is not None:
            return stored
        namespace = self.auto_create.namespace_for_write(self.memory, request.namespace)
        item = item_input(request.item, len(namespace.settings.templates))
        wait_for_encoder(namespace.settings.encoder, deadline)
        # Scored (when asked) before anything is written: an engine failure stores nothing.
        try:
            record = self.memory.remember(
                request.namespace, item, deadline, lambda future: context.add_callback(future.cancel)
            )
        except AlreadyExists:
            record = stored_if_same(self.memory, request.namespace, item, generated_id=not request.item.id)
            if record is None:
                raise
            already_stored = True
        else:
            self.metrics.observe_partition(record)
            already_stored = False
        return pb.RememberResponse(
            item=item_view(self.memory.namespace(request.namespace), record), already_stored=already_stored
        )

    @answers_with_token
    def RememberStream(self, request_iterator: Iterator[pb.RememberStreamRequest], context):
        """Group commits with a defined outcome (docs/failure-behaviour.md, "Streams"): items are
        committed in groups cut by item count alone (STREAM_BATCH items, or STREAM_VERIFY_BATCH
        items to verify), never by message framing or timing; a group is all or nothing; a group
        starts only while the client is still there and, once started, finishes (its
        verification is not cancelled, so client timing cannot split it). A cancelled or failed
        stream therefore keeps a prefix of whole groups (gRPC may show a cancel as the end of the
        messages first: then the last, partial group is committed too). The client is not told which
        (a cancelled call has no answer); re-sending the stream is safe: items already stored
        with the same content count as stored (idempotent)."""
        deadline = call_deadline(context, self.default_deadline_s)
        response = pb.RememberStreamResponse()
        namespace = ""
        templates = 0
        # (stream index, the id the message gave, the item or the error that fails it): a failed
        # item's result names its given id whatever failed it
        pending: list[tuple[int, str, ItemInput | Exception]] = []

        def flush() -> None:
            if not context.is_active():  # cancelled or past its deadline: nothing more is committed
                raise DeadlineExceeded(
                    "the stream was cancelled or ran past its deadline; the groups committed "
                    "before stay stored; re-send the stream (stored items answer OK)"
                )
            inputs = [(i, x) for i, _, x in pending if not isinstance(x, Exception)]
            outcomes = self.memory.remember_batch(namespace, [x for _, x in inputs])
            results = dict(zip([i for i, _ in inputs], outcomes))
            for index, given_id, value in pending:
                outcome = results.get(index, value)
                already_stored = False
                if isinstance(outcome, AlreadyExists) and isinstance(value, ItemInput):
                    stored_before = stored_if_same(self.memory, namespace, value, generated_id=not given_id)
                    outcome, already_stored = (stored_before, True) if stored_before is not None else (outcome, False)
                if isinstance(outcome, Exception):
                    code = status_for(outcome)
                    response.results.add(
                        index=index,
                        id=given_id,
                        error=pb.ItemError(code=code.value[0], message=public_message(outcome, code)),
                    )
                    response.failed += 1
                else:
                    if not already_stored:
                        self.metrics.observe_partition(outcome)
                    response.results.add(index=index, id=outcome.id, already_stored=already_stored)
                    response.stored += 1
            pending.clear()

        index = to_verify = 0
        for number, request in enumerate(request_iterator):
            check_deadline(deadline)
            batch = ([request.item] if request.HasField("item") else []) + list(request.items)
            if number == 0:
                if not request.namespace:
                    raise InvalidArgument("namespace is required on the first message of the stream")
                namespace = request.namespace
                self.auth.check(context, namespace)
                # NOT_FOUND before any item is read
                templates = len(self.auto_create.namespace_for_write(self.memory, namespace).settings.templates)
            elif request.namespace and request.namespace != namespace:
                for message in batch:
                    pending.append(
                        (
                            index,
                            message.id,
                            InvalidArgument(f"namespace: one stream writes one namespace ({quoted(namespace)})"),
                        )
                    )
                    index += 1
                continue
            for message in batch:
                try:
                    item = item_input(message, templates, f"items[{index}]")
                    pending.append((index, message.id, item))
                    to_verify += item.needs_verification
                except InvalidArgument as exc:
                    pending.append((index, message.id, exc))
                index += 1
                if len(pending) >= STREAM_BATCH or to_verify >= STREAM_VERIFY_BATCH:
                    flush()  # by item count, mid-message if need be: the same items make the same groups
                    to_verify = 0
        if pending:
            flush()
        return response

    @reads_at_requested_level
    def Recall(self, request, context):
        self.auth.check(context, request.namespace)
        deadline = call_deadline(context, self.default_deadline_s)
        # (the core refuses a field out of its bounds, naming it; the entry raises that refusal)
        answered = self.memory.core.answer(request, deadline)
        if request.include_items:
            answered = self._with_items(request, answered, deadline)
        check_deadline(deadline)
        self.metrics.count_recall(answered, "core")
        return answered

    def _with_items(self, request, response: pb.RecallResponse, deadline: float) -> pb.RecallResponse:
        """The core's answer with each hit's full item, read from its record in one read; an item
        forgotten since the core's answer is asked for again (twice), then left out."""
        ns = request.namespace
        for attempt in range(3):
            ids = [hit.id for hit in (*response.hits, *response.suppressed)]
            records = dict(zip(ids, self.memory.get_items(ns, ids)))
            if None not in records.values() or attempt == 2:
                break
            response = self.memory.core.answer(request, deadline)
        namespace = self.memory.namespace(ns)
        for field in (response.hits, response.suppressed):
            kept = [hit for hit in field if records[hit.id] is not None]
            for rank, hit in enumerate(kept, start=1):
                hit.rank = rank
                hit.item.CopyFrom(item_view(namespace, records[hit.id]))
            if len(kept) < len(field):
                copies = [pb.Hit() for _ in kept]
                for copy, hit in zip(copies, kept):
                    copy.CopyFrom(hit)
                del field[:]
                field.extend(copies)
        return response

    @answers_with_token
    def Observe(self, request, context):
        self.auth.check(context, request.namespace)
        deadline = call_deadline(context, self.default_deadline_s)
        record = self.memory.observe(
            request.namespace,
            request.id,
            scores=scores_from(request.scores),
            states=states_from(request.states, "states"),
            vectors=vectors_from(request.vectors, "vectors"),
            source=request.source or "client",
            model=request.model,
            text=request.text,
            content=request.content,
            verify_concepts=list(request.verify_concepts),
            deadline=deadline,
            on_submit=lambda future: context.add_callback(future.cancel),
        )
        self.metrics.observe_partition(record)
        return pb.ObserveResponse(
            item=item_view(self.memory.namespace(request.namespace), record), changed=last_write_changed_states(record)
        )

    @answers_with_token
    def Forget(self, request, context):
        self.auth.check(context, request.namespace)
        self.memory.forget(request.namespace, request.id)
        return pb.ForgetResponse()

    @reads_at_requested_level
    def ListItems(self, request, context):
        self.auth.check(context, request.namespace)
        if request.page_size > MAX_ITEMS_PAGE:
            raise InvalidArgument(f"page_size must be <= {MAX_ITEMS_PAGE}")
        for kind in request.kinds:
            if kind not in KIND_NAMES:
                raise InvalidArgument("kinds: use ITEM_KIND_VISUAL and/or ITEM_KIND_TEXT")
        records, next_token = list_items(
            self.memory,
            request.namespace,
            request.page_token,
            request.page_size or DEFAULT_ITEMS_PAGE,
            list(request.has),
            list(request.not_has),
            dict(request.metadata_equals),
            [KIND_NAMES[kind] for kind in request.kinds],
        )
        namespace = self.memory.namespace(request.namespace)
        return pb.ListItemsResponse(
            items=[item_view(namespace, record) for record in records], next_page_token=next_token
        )

    @answers_with_token
    def UpdateItem(self, request, context):
        self.auth.check(context, request.namespace)
        paths = list(request.update_mask.paths)
        unknown = [path for path in paths if path not in UPDATABLE_ITEM_FIELDS]
        if not paths or unknown:
            raise InvalidArgument(
                f"update_mask: paths are {', '.join(UPDATABLE_ITEM_FIELDS)}"
                + (f"; {quoted(unknown[0])} is not one" if unknown else "; none given")
            )
        self.memory.namespace(request.namespace)  # NOT_FOUND before the item is read
        record, changed = update_item(
            self.memory,
            request.namespace,
            request.id,
            request.text if "text" in paths else None,
            dict(request.metadata) if "metadata" in paths else None,
        )
        return pb.UpdateItemResponse(item=item_view(self.memory.namespace(request.namespace), record), changed=changed)

    @answers_with_token
    def ClearNamespace(self, request, context):
        self.auth.check(context, request.name)
        return pb.ClearNamespaceResponse(items_deleted=clear_namespace(self.memory, request.name))

    @reads_at_requested_level
    def GetItem(self, request, context):
        self.auth.check(context, request.namespace)
        record = self.memory.get_item(request.namespace, request.id)
        response = pb.GetItemResponse(
            item=item_view(self.memory.namespace(request.namespace), record, request.include_history)
        )
        if request.include_vectors:
            for space, rows in self.memory.get_vectors(request.namespace, request.id).items():
                response.vectors[space].CopyFrom(vector_message(rows))
        return response

    def GetConcept(self, request, context):
        self.auth.check(context, request.namespace)
        if request.polarity not in POLARITY_NAMES:
            raise InvalidArgument("polarity: use CONCEPT_POLARITY_HAS, _NOT_HAS or _ALIGN")
        if request.page_size > MAX_PAGE_SIZE:
            raise InvalidArgument(f"page_size must be <= {MAX_PAGE_SIZE}")
        if not request.concept:
            raise InvalidArgument("concept is required")
        page_size = request.page_size or DEFAULT_PAGE_SIZE
        ids = self.memory.items_by_concept(
            request.namespace,
            request.concept,
            POLARITY_NAMES[request.polarity],
            after=request.page_token,
            limit=page_size + 1,
        )
        stats = self.memory.concept_stats(request.namespace, request.concept)
        concept_id = self.memory.concept_id(request.namespace, request.concept)
        return pb.GetConceptResponse(
            concept=self.memory.namespace(request.namespace).vocabulary.name(concept_id),
            concept_id=concept_id,
            item_ids=ids[:page_size],
            next_page_token=ids[page_size - 1] if len(ids) > page_size else "",
            stats=pb.ConceptStats(**stats),
        )

    def ListConcepts(self, request, context):
        self.auth.check(context, request.namespace)
        if request.page_size > MAX_PAGE_SIZE:
            raise InvalidArgument(f"page_size must be <= {MAX_PAGE_SIZE}")
        after = parse_page_token(request.page_token)
        page_size = request.page_size or DEFAULT_PAGE_SIZE
        entries, total = self.memory.list_concepts(request.namespace, after, page_size)
        last = entries[-1][0] if entries else after
        response = pb.ListConceptsResponse(
            concepts=[
                pb.ConceptEntry(concept=name, concept_id=cid, stats=pb.ConceptStats(**stats))
                for cid, name, stats in entries
            ],
            next_page_token=str(last) if last + 1 < total else "",
            total=total,
        )
        if not request.page_token:
            response.aliases.update(self.memory.namespace(request.namespace).vocabulary.aliases)
        return response

    def Calibrate(self, request, context):
        self.auth.check(context, request.namespace)
        model = self.memory.calibrate(request.namespace, list(request.p_yes), list(request.present))
        return pb.CalibrateResponse(calibration=calibration_view(model))

    def ScoreConcepts(self, request, context):
        self.auth.check(context, request.namespace)
        deadline = call_deadline(context, self.default_deadline_s)
        scores = self.memory.score_concepts(
            request.namespace,
            request.item.text,
            request.item.content,
            list(request.concepts) or list(request.item.verify_concepts),
            deadline,
            lambda future: context.add_callback(future.cancel),
        )
        verifier = self.memory.verifier
        return pb.ScoreConceptsResponse(
            scores=[pb.ConceptScoreView(concept=c, p_yes=v) for c, v in scores.items()],
            engine=verifier.engine_name,
            model=verifier.model,
        )

    def Backup(self, request, context):
        # Whole-store: only a token for every namespace may take it (the admin role where roles exist).
        if self.auth.namespaces_of(context) is not None:
            raise PermissionDenied("Backup copies every namespace; use a token with namespaces = ['*'] (admin)")
        check_backup_destination(request.destination_dir, self.backup_dir)
        manifest = self.memory.backup(request.destination_dir)
        return pb.BackupResponse(
            destination_dir=request.destination_dir,
            format_version=manifest.format_version,
            created_at=manifest.created_at,
            schema_version=manifest.schema_version,
            namespaces=[
                pb.BackupNamespaceCount(namespace=n, items=c) for n, c in sorted(manifest.namespace_items.items())
            ],
            files=len(manifest.files),
            total_bytes=manifest.total_bytes,
            seconds=manifest.seconds,
            checkpoint_seconds=manifest.checkpoint_seconds,
        )
