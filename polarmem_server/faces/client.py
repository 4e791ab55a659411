"""The typed synchronous Python client: one method per RPC of polarmem.v1.MemoryService.

Every method returns the response's `polarmem.v1` message (documented per method; fields as in
protos/polarmem/v1/memory_service.proto) and raises:

* ValueError before any call, for an argument that cannot be encoded (a mode, kind or state
  name, a value of the wrong type, an unreadable content file), naming it and the fix;
* grpc.RpcError with the server's status code and message for everything the server refuses.

Calls carry a deadline (`timeout_s`, 30 s by default; a stream gets `stream_timeout_s`). A server
that is starting is waited for within it (`wait_for_ready`, on by default): before its first call
a client waits until the server's health says SERVING (its port may not be open yet, or it may
still be opening its store), as `polarmem wait-ready` does, and every call with a deadline is
sent with gRPC's wait-for-ready, so a port that is not open yet is waited for instead of failing
with UNAVAILABLE. A server that never answers fails the call with UNAVAILABLE (its transport
error) before the deadline; one that answers but stays NOT_SERVING, with its own refusal. The
idempotent reads (GetNamespace, ListNamespaces, GetItem, GetConcept, ListConcepts, ListItems, Recall,
ScoreConcepts) are
retried with exponential backoff on UNAVAILABLE through gRPC's own retry policy (the channel's
service config). Writes are not retried: the caller decides (a Remember with an id is safe to
repeat — ALREADY_EXISTS means it was stored).

The asyncio client (aio_client.AsyncPolarMemClient) has the same methods: both build each call
(request, and what of the response a method returns) with the same functions (client_requests)
and wait for a starting server by the same steps (ReadyWait); only sending differs."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem_server.faces import client_requests as build
from polarmem_server.faces.client_requests import (  # the clients' public names, re-exported
    KINDS,  # noqa: F401
    MODES,  # noqa: F401
    POLARITIES,  # noqa: F401
    STATES,  # noqa: F401
    STORAGES,  # noqa: F401
    Content,  # noqa: F401
    item_message,  # noqa: F401
    vector_value,  # noqa: F401
)

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_STREAM_TIMEOUT_S = 600.0
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
# The first call's wait for a starting server: health is asked this often while it says
# NOT_SERVING, and the wait ends this long (at most a quarter of the deadline) before the call's
# deadline, so the call itself still gets an answer that says why (the server's refusal, or the
# transport's error) rather than a bare DEADLINE_EXCEEDED.
READY_POLL_S = 0.05
READY_RESERVE_S = 0.5


def channel_credentials(root_certificates: bytes | None, tls: bool) -> grpc.ChannelCredentials | None:
    """TLS credentials when asked for (tls=True uses the system's roots), else None (plaintext)."""
    if root_certificates is not None or tls:
        return grpc.ssl_channel_credentials(root_certificates)
    return None


def open_channel(
    channel_module,
    address: str,
    token: str | None,
    root_certificates: bytes | None,
    max_message_bytes: int,
    tls: bool,
    tls_server_name: str | None,
    retries: int,
    initial_backoff_s: float,
    max_backoff_s: float,
    retry_codes: Sequence[str],
):
    """(channel, call metadata) as both clients use them: `channel_module` is grpc or grpc.aio;
    the retry policy travels in the channel's service config, the token as bearer metadata."""
    options = build.channel_options(
        max_message_bytes, build.service_config(retries, initial_backoff_s, max_backoff_s, retry_codes=retry_codes)
    )
    if tls_server_name:
        options.append(("grpc.ssl_target_name_override", tls_server_name))
    credentials = channel_credentials(root_certificates, tls)
    if credentials is not None:
        channel = channel_module.secure_channel(address, credentials, options=options)
    else:
        channel = channel_module.insecure_channel(address, options=options)
    return channel, build.bearer_metadata(token)


def ready_deadline(timeout_s: float | None) -> tuple[float, float]:
    """(monotonic deadline, reserve) of the first call's wait for a starting server: the call's
    deadline, or the default one for a call without any (the wait must end somewhere)."""
    budget = timeout_s if timeout_s is not None else DEFAULT_TIMEOUT_S
    return time.monotonic() + budget, min(READY_RESERVE_S, budget / 4)


def ready_answer(status: int | None, error: grpc.RpcError | None) -> str:
    """What one health answer during the first call's wait means: "ready" (SERVING, or a server
    without health checks: let the call itself speak), "wait" (NOT_SERVING: starting), or
    "unreached" (no answer within the poll's deadline: the port is not open yet)."""
    if error is not None:
        return "unreached" if error.code() == grpc.StatusCode.DEADLINE_EXCEEDED else "ready"
    return "ready" if status == health_pb2.HealthCheckResponse.SERVING else "wait"


class ReadyWait:
    """The first call's wait for a starting server (module doc), as both clients take it: while
    `time_left()` they ask health (wait-for-ready, that long), hand its answer to `heard`, and on
    "wait" pause for `pause()`; if nothing ever answered (not `reached`), one last health check
    within `last_check_timeout()` raises the transport's error. `call_options()` is then what the
    call itself gets."""

    def __init__(self, timeout_s: float | None) -> None:
        self.timeout_s = timeout_s
        self.deadline, self.reserve = ready_deadline(timeout_s)
        self.reached = False  # some health answer came (the port is open)

    def time_left(self) -> float:
        """What is left for asking health (<= 0: stop asking)."""
        return self.deadline - self.reserve - time.monotonic()

    def heard(self, status: int | None, error: grpc.RpcError | None) -> str:
        """One health answer, as ready_answer reads it."""
        answer = ready_answer(status, error)
        self.reached = self.reached or answer != "unreached"
        return answer

    def pause(self) -> float:
        return min(READY_POLL_S, max(0.0, self.time_left()))

    def last_check_timeout(self) -> float:
        return max(self.deadline - time.monotonic(), READY_POLL_S)

    def call_options(self) -> tuple[float | None, bool]:
        """The call's timeout (what is left of its deadline) and whether to send it wait-for-ready
        (only when it has a deadline)."""
        if self.timeout_s is None:
            return None, False
        return max(self.deadline - time.monotonic(), 0.0), True


class ClientBase:
    """What both clients share: the channel, the stubs, the deadlines and the last write's
    consistency token. `grpc_module`: grpc (PolarMemClient) or grpc.aio (AsyncPolarMemClient)."""

    grpc_module: Any = grpc

    def __init__(
        self,
        address: str,
        token: str | None = None,
        root_certificates: bytes | None = None,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        *,
        tls: bool = False,
        tls_server_name: str | None = None,
        retries: int = 4,
        initial_backoff_s: float = 0.1,
        max_backoff_s: float = 2.0,
        retry_codes: Sequence[str] = ("UNAVAILABLE",),
        stream_timeout_s: float | None = DEFAULT_STREAM_TIMEOUT_S,
        consistency_token: bytes = b"",
        wait_for_ready: bool = True,
    ) -> None:
        self._channel, self._metadata = open_channel(
            self.grpc_module,
            address,
            token,
            root_certificates,
            max_message_bytes,
            tls,
            tls_server_name,
            retries,
            initial_backoff_s,
            max_backoff_s,
            retry_codes,
        )
        self._stub = pb_grpc.MemoryServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self.address = address
        self.timeout_s = timeout_s
        self.stream_timeout_s = stream_timeout_s
        # This client's own last write, carried into its later reads (read-your-writes through
        # any server on the same Milvus); `consistency_token` resumes one (the CLI keeps it).
        self.last_write = build.LastWrite(consistency_token)
        self.wait_for_ready = wait_for_ready
        self._ready = not wait_for_ready  # the server said SERVING once (or the wait is off)

    @property
    def consistency_token(self) -> bytes:
        """The token of this client's latest write (empty before any, and from a single local process)."""
        return self.last_write.token

    def _call_options(self, call: build.Call, timeout_s: float | None) -> tuple[float | None, bool]:
        """Stamps the call's request with the last write; returns its timeout (its own, else the
        stream's for a stream, else the client's) and whether to send it wait-for-ready."""
        self.last_write.stamp(call.request)
        if timeout_s is None and call.streaming:
            timeout_s = self.stream_timeout_s
        timeout = timeout_s if timeout_s is not None else self.timeout_s
        # wait-for-ready only where a deadline ends the wait (no deadline: fail fast as before)
        return timeout, self.wait_for_ready and timeout is not None

    def _result(self, call: build.Call, response: Any) -> Any:
        """What the client method returns of the call's response, once its write's token is noted."""
        self.last_write.note(response)
        return call.result(response)


class PolarMemClient(ClientBase):
    """Synchronous client. `address` is host:port; `token` is sent as `authorization: Bearer`;
    `root_certificates` (PEM bytes) or `tls=True` (system roots) switch to TLS, and
    `tls_server_name` overrides the name checked against the certificate. `retries` is the most
    attempts of an idempotent call (1 = no retry). `wait_for_ready`
    (default True): calls wait, within their deadline, for a server that is starting (module
    doc); False sends each call at once, so one made before the server is up fails with
    UNAVAILABLE."""

    def _await_ready(self, timeout_s: float | None) -> tuple[float | None, bool]:
        """The first call's wait for the server (ReadyWait): the call's timeout and wait-for-ready."""
        wait = ReadyWait(timeout_s)
        while not self._ready and (left := wait.time_left()) > 0:
            try:
                response = self._health.Check(health_pb2.HealthCheckRequest(), timeout=left, wait_for_ready=True)
                answer = wait.heard(response.status, None)
            except grpc.RpcError as exc:
                answer = wait.heard(None, exc)
            if answer == "ready":
                self._ready = True
            elif answer == "wait":
                time.sleep(wait.pause())
        if not (self._ready or wait.reached):
            # Nothing answered: one call that does not wait raises the transport's own error
            # (UNAVAILABLE, saying why it could not connect). Health is not retried, unlike
            # the reads, whose backoff could outlast what is left of the deadline.
            self._health.Check(health_pb2.HealthCheckRequest(), timeout=wait.last_check_timeout())
        return wait.call_options()

    def _run(self, call: build.Call, timeout_s: float | None = None) -> Any:
        """Sends the call (the first one waits for the server) -> what its method returns."""
        timeout, wait = self._call_options(call, timeout_s)
        if not self._ready:
            timeout, wait = self._await_ready(timeout)
        response = getattr(self._stub, call.rpc)(
            call.request, timeout=timeout, metadata=self._metadata, wait_for_ready=wait
        )
        return self._result(call, response)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> PolarMemClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- health -----------------------------------------------------------------------------

    def health(self, service: str = "", timeout_s: float = 5.0) -> str:
        """ "SERVING" / "NOT_SERVING" / ... from grpc.health.v1 (no token needed)."""
        response = self._health.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout_s)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        """Blocks until the channel connects (grpc.FutureTimeoutError after timeout_s)."""
        grpc.channel_ready_future(self._channel).result(timeout=timeout_s)

    # ---- namespaces -------------------------------------------------------------------------

    def create_namespace(
        self,
        name: str,
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
        timeout_s: float | None = None,
    ) -> pb.NamespaceInfo:
        """CreateNamespace -> NamespaceInfo. `spaces`: (name, dim[, multi[, storage]]) tuples
        (storage fp32 / fp16 / int8); none = one 384-d `sem` space (int8 rows beside the fp32
        ones). `encoder`: minilm / none. `partitioner` "auto" chooses from a Calibrate set or `declared_accuracy`; `ann`: True
        or ApproximateIndex fields for an opt-in approximate index (recall(approximate=True)).
        `open_vocabulary`: None (default) = the server's default, an open vocabulary (every
        content word of a text note is a concept); False = closed (only declared and verified
        concepts)."""
        config, _ = build.namespace_config(
            spaces,
            encoder,
            kappa,
            aliases,
            templates,
            partitioner,
            rho,
            rho_absent,
            degenerate_policy,
            fixed_threshold,
            template_std_max,
            concepts,
            declared_accuracy,
            ann,
            open_vocabulary,
        )
        return self._run(build.create_namespace_call(name=name, config=config), timeout_s)

    def get_namespace(self, name: str, timeout_s: float | None = None) -> pb.NamespaceInfo:
        """GetNamespace -> NamespaceInfo (config, counts, calibration)."""
        return self._run(build.get_namespace_call(name=name), timeout_s)

    def list_namespaces(self, timeout_s: float | None = None) -> list[pb.NamespaceInfo]:
        """ListNamespaces -> the namespaces this token may use, by name."""
        return self._run(build.list_namespaces_call(), timeout_s)

    def update_namespace(
        self,
        name: str,
        *,
        kappa: float | None = None,
        rho: float | None = None,
        rho_absent: float | None = None,
        partitioner: str | None = None,
        aliases: Mapping[str, str] | None = None,
        templates: Sequence[str] | None = None,
        degenerate_policy: str | None = None,
        fixed_threshold: float | None = None,
        template_std_max: float | None = None,
        concepts: Sequence[str] | None = None,
        declared_accuracy: float | None = None,
        timeout_s: float | None = None,
    ):
        """UpdateNamespace -> UpdateNamespaceResponse (namespace, items_repartitioned,
        items_changed). Only the arguments given change (they make the update_mask)."""
        call = build.update_namespace_call(
            name,
            kappa=kappa,
            rho=rho,
            rho_absent=rho_absent,
            partitioner=partitioner,
            aliases=aliases,
            templates=templates,
            degenerate_policy=degenerate_policy,
            fixed_threshold=fixed_threshold,
            template_std_max=template_std_max,
            concepts=concepts,
            declared_accuracy=declared_accuracy,
        )
        return self._run(call, timeout_s)

    def delete_namespace(self, name: str, timeout_s: float | None = None) -> None:
        """DeleteNamespace: the namespace and everything in it."""
        self._run(build.delete_namespace_call(name=name), timeout_s)

    # ---- items ------------------------------------------------------------------------------

    def remember(
        self,
        namespace: str,
        *,
        id: str = "",
        kind: str = "visual",
        text: str = "",
        uri: str = "",
        metadata: Mapping[str, str] | None = None,
        vectors: Mapping[str, Any] | None = None,
        scores: Mapping[str, Sequence[float]] | None = None,
        states: Mapping[str, str] | None = None,
        verify_concepts: Sequence[str] | None = None,
        content: Content | None = None,
        source: str = "",
        model: str = "",
        timeout_s: float | None = None,
    ) -> pb.Item:
        """Remember -> the stored Item (states, partition, evidence). Evidence is client `scores`
        (one P(Yes) per namespace template) or `states`, and/or `verify_concepts` verified by the
        server's engine from `text` and/or `content` (image bytes or a path to an image)."""
        item = item_message(
            id=id,
            kind=kind,
            text=text,
            uri=uri,
            metadata=metadata,
            vectors=vectors,
            scores=scores,
            states=states,
            verify_concepts=verify_concepts,
            content=content,
            source=source,
            model=model,
        )
        return self._run(build.remember_call(namespace=namespace, item=item), timeout_s)

    def remember_stream(
        self, namespace: str, items: Iterable[pb.ItemInput], timeout_s: float | None = None, items_per_message: int = 64
    ) -> pb.RememberStreamResponse:
        """RememberStream -> RememberStreamResponse: one result per item (indexed by position,
        with its own error), stored and failed counts. `items` are ItemInput messages
        (item_message builds them), sent `items_per_message` to a message."""
        return self._run(build.remember_stream_call(namespace, items, items_per_message), timeout_s)

    def observe(
        self,
        namespace: str,
        id: str,
        scores: Mapping[str, Sequence[float]] | None = None,
        states: Mapping[str, str] | None = None,
        vectors: Mapping[str, Any] | None = None,
        *,
        text: str = "",
        content: Content | None = None,
        verify_concepts: Sequence[str] | None = None,
        source: str = "",
        model: str = "",
        timeout_s: float | None = None,
    ) -> pb.ObserveResponse:
        """Observe -> ObserveResponse (item, changed): new evidence merged and re-partitioned.
        `text` / `content` / `verify_concepts` have the server's engine verify new content (no
        verify_concepts: the concepts the item already holds)."""
        call = build.observe_call(namespace, id, scores, states, vectors, text, content, verify_concepts, source, model)
        return self._run(call, timeout_s)

    def forget(self, namespace: str, id: str, timeout_s: float | None = None) -> None:
        """Forget: the item is gone from the namespace (NOT_FOUND if it was not there)."""
        self._run(build.forget_call(namespace=namespace, id=id), timeout_s)

    def get_item(
        self,
        namespace: str,
        id: str,
        include_history: bool = False,
        include_vectors: bool = False,
        timeout_s: float | None = None,
        consistency: str | None = None,
        consistency_token: bytes | None = None,
    ) -> pb.GetItemResponse:
        """GetItem -> GetItemResponse (item with evidence and partition; vectors when asked).
        `consistency` "strong" / "bounded" (None: the server's default; every read carries this
        client's last write's token)."""
        call = build.get_item_call(namespace, id, include_history, include_vectors, consistency, consistency_token)
        return self._run(call, timeout_s)

    def get_concept(
        self,
        namespace: str,
        concept: str,
        polarity: str = "has",
        page_size: int = 0,
        page_token: str = "",
        timeout_s: float | None = None,
    ) -> pb.GetConceptResponse:
        """GetConcept -> GetConceptResponse: a page of item ids that HAS / NOT_HAS / ALIGN the
        concept (next_page_token continues), and its counts."""
        return self._run(build.get_concept_call(namespace, concept, polarity, page_size, page_token), timeout_s)

    def list_concepts(
        self, namespace: str, page_size: int = 0, page_token: str = "", timeout_s: float | None = None
    ) -> pb.ListConceptsResponse:
        """ListConcepts -> ListConceptsResponse: a page of the namespace's vocabulary (name, id,
        HAS / NOT_HAS / ALIGN counts), by id; next_page_token continues."""
        return self._run(build.list_concepts_call(namespace, page_size, page_token), timeout_s)

    def list_items(
        self,
        namespace: str,
        page_size: int = 0,
        page_token: str = "",
        *,
        has: Sequence[str] | None = None,
        not_has: Sequence[str] | None = None,
        metadata_equals: Mapping[str, str] | None = None,
        kinds: Sequence[str] | None = None,
        timeout_s: float | None = None,
        consistency: str | None = None,
        consistency_token: bytes | None = None,
    ) -> pb.ListItemsResponse:
        """ListItems -> ListItemsResponse: a page of items in id order (items, next_page_token),
        only those holding every `has` concept in HAS, every `not_has` in NOT_HAS, every
        metadata pair and one of `kinds` (text, visual)."""
        call = build.list_items_call(
            namespace, page_size, page_token, has, not_has, metadata_equals, kinds, consistency, consistency_token
        )
        return self._run(call, timeout_s)

    def update_item(
        self,
        namespace: str,
        id: str,
        *,
        text: str | None = None,
        metadata: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
    ) -> pb.UpdateItemResponse:
        """UpdateItem -> UpdateItemResponse (item, changed): new text (a text item's states are
        re-read from it) and / or new metadata (replaces the whole map); None leaves a field as is."""
        return self._run(build.update_item_call(namespace, id, text, metadata), timeout_s)

    def clear_namespace(self, name: str, timeout_s: float | None = None) -> int:
        """ClearNamespace: every item deleted, settings and vocabulary kept; returns how many."""
        return self._run(build.clear_namespace_call(name=name), timeout_s)

    def score_concepts(
        self,
        namespace: str,
        concepts: Sequence[str] | None,
        *,
        text: str = "",
        content: Content | None = None,
        timeout_s: float | None = None,
        **item: Any,
    ) -> pb.ScoreConceptsResponse:
        """ScoreConcepts -> ScoreConceptsResponse: the engine's raw P(Yes) per concept and
        template for `text` and/or `content`; nothing is stored."""
        return self._run(build.score_concepts_call(namespace, concepts, text, content, **item), timeout_s)

    def calibrate(
        self, namespace: str, p_yes: Sequence[float], present: Sequence[bool], timeout_s: float | None = None
    ) -> pb.Calibration:
        """Calibrate -> the fitted Calibration: labelled scores fit the namespace's score model."""
        return self._run(build.calibrate_call(namespace, p_yes, present), timeout_s)

    def backup(self, destination_dir: str, timeout_s: float | None = None) -> pb.BackupResponse:
        """Backup -> BackupResponse: a consistent snapshot of the whole store written to
        `destination_dir` on the SERVER's file system (absolute, not existing yet); needs a token
        for every namespace. Restore is offline (`polarmem restore`)."""
        return self._run(build.backup_call(destination_dir), timeout_s)

    # ---- recall -----------------------------------------------------------------------------

    def recall(
        self,
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
        timeout_s: float | None = None,
        allow_unknown_concepts: bool = False,
        approximate: bool = False,
        ef_search: int | None = None,
        rank_by_confidence: bool | None = None,
        explain: bool | None = None,
        recency_half_life_s: float | None = None,
        recency_weight: float | None = None,
        consistency: str | None = None,
        consistency_token: bytes | None = None,
    ) -> pb.RecallResponse:
        """Recall -> RecallResponse: hits (rank, id, s_log, s_sem, status, reasons, ...), tier
        counts, the query parse, suppressed items and the `[Fact Check: ...]` context when asked.
        `mode`: off, hard, soft, adaptive, strict; None = the namespace's rule (NamespaceInfo.rule;
        hard unless its partitioner is auto), named in mode_reason. Explicit `required` /
        `forbidden` replace parsing `text`; names the vocabulary lacks are INVALID_ARGUMENT (with
        the closest known names), unless `allow_unknown_concepts`: then they are skipped and
        listed in parse.unknown_concepts with their suggestions. `approximate`: the namespace's
        approximate index orders large tiers (`ef_search` candidates; tiers stay exact).
        `rank_by_confidence`: within tiers, confidently absent forbidden / present required concepts
        first (None: as the namespace's rule says). `explain=False`: hits without reasons, text or
        uri, read from the index alone (what the compiled Recall front answers itself).
        `recency_half_life_s` (> 0 seconds; modes hard / off): rank within tiers by s_sem +
        `recency_weight` (default 0.1) x 2^(-age / half-life), exactly. `consistency`: "strong" sees
        every acknowledged write; default (None / "bounded"): this client's own writes (their
        token is sent automatically) and every write older than Milvus's bound."""
        call = build.recall_call(
            namespace,
            text,
            vectors,
            required,
            forbidden,
            top_k,
            mode,
            soft_lambda,
            exclude_conflicts,
            kinds,
            metadata_equals,
            suppressed_k,
            include_context,
            context_budget_chars,
            include_items,
            weights,
            allow_unknown_concepts,
            approximate,
            ef_search,
            rank_by_confidence,
            explain,
            recency_half_life_s,
            recency_weight,
            consistency,
            consistency_token,
        )
        return self._run(call, timeout_s)
