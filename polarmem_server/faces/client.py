"""A small typed Python client over the generated stubs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import grpc
import numpy as np
from grpc_health.v1 import health_pb2, health_pb2_grpc

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem.common.v1 import enums_pb2 as storage_pb2  # the shared enums (ItemKind, ConceptState)

MODES = {"hard": pb.RECALL_MODE_HARD, "soft": pb.RECALL_MODE_SOFT, "adaptive": pb.RECALL_MODE_ADAPTIVE,
         "off": pb.RECALL_MODE_OFF, "strict": pb.RECALL_MODE_STRICT}
STATES = {"has": storage_pb2.CONCEPT_STATE_HAS, "not_has": storage_pb2.CONCEPT_STATE_NOT_HAS,
          "uncertain": storage_pb2.CONCEPT_STATE_UNCERTAIN}
KINDS = {"visual": storage_pb2.ITEM_KIND_VISUAL, "text": storage_pb2.ITEM_KIND_TEXT}
POLARITIES = {"has": pb.CONCEPT_POLARITY_HAS, "not_has": pb.CONCEPT_POLARITY_NOT_HAS, "align": pb.CONCEPT_POLARITY_ALIGN}
STORAGES = {"fp32": pb.VECTOR_STORAGE_FP32, "fp16": pb.VECTOR_STORAGE_FP16, "int8": pb.VECTOR_STORAGE_INT8}


def vector_value(values: Any) -> pb.VectorValue:
    array = np.asarray(values, dtype=np.float32)
    return pb.VectorValue(values=array.ravel().tolist(), rows=array.shape[0] if array.ndim == 2 else 1)


def item_message(id: str = "", kind: str = "visual", text: str = "", uri: str = "",
                 metadata: Mapping[str, str] | None = None, vectors: Mapping[str, Any] | None = None,
                 scores: Mapping[str, Sequence[float]] | None = None, states: Mapping[str, str] | None = None,
                 source: str = "", model: str = "") -> pb.ItemInput:
    """An ItemInput from plain Python values (the shape of a line of `polarmem remember` input)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be 'visual' or 'text', got {kind!r}")
    bad_states = [s for s in (states or {}).values() if s not in STATES]
    if bad_states:
        raise ValueError(f"states must be 'has', 'not_has' or 'uncertain', got {bad_states[0]!r}")
    return pb.ItemInput(
        id=id, kind=KINDS[kind], text=text, uri=uri, metadata=dict(metadata or {}),
        vectors={k: vector_value(v) for k, v in (vectors or {}).items()},
        scores={k: pb.ConceptScores(p_yes=list(v)) for k, v in (scores or {}).items()},
        states={k: STATES[v] for k, v in (states or {}).items()}, source=source, model=model)


class PolarMemClient:
    """Thin wrapper: each method is one RPC and returns its response message; errors surface as
    grpc.RpcError with the server's status code and message."""

    def __init__(self, address: str, token: str | None = None, root_certificates: bytes | None = None,
                 timeout_s: float | None = 30.0, max_message_bytes: int = 16 * 1024 * 1024) -> None:
        options = [("grpc.max_receive_message_length", max_message_bytes),
                   ("grpc.max_send_message_length", max_message_bytes)]
        if root_certificates is not None:
            self._channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates), options=options)
        else:
            self._channel = grpc.insecure_channel(address, options=options)
        self._stub = pb_grpc.MemoryServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self.timeout_s = timeout_s

    def _call(self, method, request, timeout_s: float | None = None):
        return method(request, timeout=timeout_s if timeout_s is not None else self.timeout_s, metadata=self._metadata)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> PolarMemClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def health(self, service: str = "", timeout_s: float = 5.0) -> str:
        response = self._health.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout_s)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        grpc.channel_ready_future(self._channel).result(timeout=timeout_s)

    def create_namespace(self, name: str, spaces: Iterable[tuple] = (), encoder: str = "", kappa: float | None = None,
                         aliases: Mapping[str, str] | None = None, templates: Sequence[str] = (),
                         partitioner: str = "", rho: float | None = None,
                         rho_absent: float | None = None) -> pb.NamespaceInfo:
        """`spaces`: (name, dim) or (name, dim, multi, storage) tuples; none = one 384-d `sem` space."""
        config = pb.NamespaceConfig(encoder=encoder, aliases=dict(aliases or {}), templates=list(templates),
                                    partitioner=partitioner)
        for space in spaces:
            name_, dim, *rest = space
            multi = bool(rest[0]) if rest else False
            storage = STORAGES[rest[1]] if len(rest) > 1 else pb.VECTOR_STORAGE_FP32
            config.spaces.add(name=name_, dim=dim, multi=multi, storage=storage)
        if kappa is not None:
            config.kappa = kappa
        if rho is not None:
            config.rho = rho
        if rho_absent is not None:
            config.rho_absent = rho_absent
        return self._call(self._stub.CreateNamespace, pb.CreateNamespaceRequest(name=name, config=config)).namespace

    def get_namespace(self, name: str) -> pb.NamespaceInfo:
        return self._call(self._stub.GetNamespace, pb.GetNamespaceRequest(name=name)).namespace

    def list_namespaces(self) -> list[pb.NamespaceInfo]:
        return list(self._call(self._stub.ListNamespaces, pb.ListNamespacesRequest()).namespaces)

    def delete_namespace(self, name: str) -> None:
        self._call(self._stub.DeleteNamespace, pb.DeleteNamespaceRequest(name=name))

    def remember(self, namespace: str, **item: Any) -> pb.Item:
        return self._call(self._stub.Remember, pb.RememberRequest(namespace=namespace, item=item_message(**item))).item

    def remember_stream(self, namespace: str, items: Iterable[pb.ItemInput], timeout_s: float | None = None,
                        items_per_message: int = 64) -> pb.RememberStreamResponse:
        """Streams items, `items_per_message` to a message (a message costs the server far more
        than an item's bytes); results are indexed by item."""
        if items_per_message < 1:
            raise ValueError(f"items_per_message must be >= 1, got {items_per_message}")

        def requests():
            chunk: list[pb.ItemInput] = []
            first = True
            for item in items:
                chunk.append(item)
                if len(chunk) == items_per_message:
                    yield pb.RememberStreamRequest(namespace=namespace if first else "", items=chunk)
                    chunk, first = [], False
            if chunk or first:
                yield pb.RememberStreamRequest(namespace=namespace if first else "", items=chunk)

        return self._call(self._stub.RememberStream, requests(), timeout_s)

    def calibrate(self, namespace: str, p_yes: Sequence[float], present: Sequence[bool]) -> pb.Calibration:
        """Fits the namespace's score model from labelled scores (see the Calibrate RPC)."""
        request = pb.CalibrateRequest(namespace=namespace, p_yes=list(p_yes), present=list(present))
        return self._call(self._stub.Calibrate, request).calibration

    def recall(self, namespace: str, text: str = "", vectors: Mapping[str, Any] | None = None,
               required: Sequence[str] = (), forbidden: Sequence[str] = (), top_k: int = 10, mode: str = "hard",
               soft_lambda: float | None = None, exclude_conflicts: bool = False, kinds: Sequence[str] = (),
               metadata_equals: Mapping[str, str] | None = None, suppressed_k: int = 0, include_context: bool = False,
               context_budget_chars: int = 0, include_items: bool = False, weights: Mapping[str, float] | None = None,
               timeout_s: float | None = None) -> pb.RecallResponse:
        request = pb.RecallRequest(
            namespace=namespace, text=text, vectors={k: vector_value(v) for k, v in (vectors or {}).items()},
            weights=dict(weights or {}), required=list(required), forbidden=list(forbidden), top_k=top_k,
            mode=MODES[mode], exclude_conflicts=exclude_conflicts, kinds=[KINDS[k] for k in kinds],
            metadata_equals=dict(metadata_equals or {}), suppressed_k=suppressed_k, include_context=include_context,
            context_budget_chars=context_budget_chars, include_items=include_items)
        if soft_lambda is not None:
            request.soft_lambda = soft_lambda
        return self._call(self._stub.Recall, request, timeout_s)

    def observe(self, namespace: str, id: str, scores: Mapping[str, Sequence[float]] | None = None,
                states: Mapping[str, str] | None = None, vectors: Mapping[str, Any] | None = None) -> pb.ObserveResponse:
        request = pb.ObserveRequest(namespace=namespace, id=id,
                                    scores={k: pb.ConceptScores(p_yes=list(v)) for k, v in (scores or {}).items()},
                                    states={k: STATES[v] for k, v in (states or {}).items()},
                                    vectors={k: vector_value(v) for k, v in (vectors or {}).items()})
        return self._call(self._stub.Observe, request)

    def forget(self, namespace: str, id: str) -> None:
        self._call(self._stub.Forget, pb.ForgetRequest(namespace=namespace, id=id))

    def get_item(self, namespace: str, id: str, include_history: bool = False,
                 include_vectors: bool = False) -> pb.GetItemResponse:
        return self._call(self._stub.GetItem, pb.GetItemRequest(namespace=namespace, id=id, include_history=include_history,
                                                                include_vectors=include_vectors))

    def get_concept(self, namespace: str, concept: str, polarity: str = "has", page_size: int = 0,
                    page_token: str = "") -> pb.GetConceptResponse:
        return self._call(self._stub.GetConcept, pb.GetConceptRequest(namespace=namespace, concept=concept,
                                                                      polarity=POLARITIES[polarity], page_size=page_size,
                                                                      page_token=page_token))

    def score_concepts(self, namespace: str, concepts: Sequence[str], **item: Any) -> pb.ScoreConceptsResponse:
        return self._call(self._stub.ScoreConcepts, pb.ScoreConceptsRequest(namespace=namespace, concepts=list(concepts),
                                                                            item=item_message(**item)))
