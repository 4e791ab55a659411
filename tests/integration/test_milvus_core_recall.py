"""The one core entry over the Milvus backend (library/core_recall.py BackendSearches): a real server
(the Python listener, as `polarmem serve --backend milvus` runs) in this process, over the
session's real Milvus. The core plans and runs every Recall of a Milvus namespace — vectors and
text, every mode, explained or not, filtered, strict (two searches merged by the core), the
recency term, suppressed hits, answer mode, the context — and calls the backend for each of its
searches and for the hits' records, consistency tokens and full items included
(test_milvus_conformance.py holds its answers to the local backend's). A refusal is the core's,
as over the local backend."""

from __future__ import annotations

import uuid

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem_server.library import unavailable_reason
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces.client import PolarMemClient, item_message
import front_ports
from front_ports import answered, recall_by
from servertools import DIM, make_config

pytestmark = [
    pytest.mark.milvus,  # the real Milvus server: `make test-milvus`
    pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason())),
]

CONCEPTS = ("dog", "cat", "car", "bus", "tree")
MODES = (pb.RECALL_MODE_HARD, pb.RECALL_MODE_SOFT, pb.RECALL_MODE_OFF, pb.RECALL_MODE_STRICT, pb.RECALL_MODE_ADAPTIVE)
NOTES = [
    "Maya drinks coffee every morning.",
    "Maya quit coffee; she drinks tea now.",
    "Leo has a dog called Pepper.",
    "Leo has no cat.",
    "The bus to the office leaves at eight.",
    "Ana rides her bike, never the bus.",
    "Sam keeps a red car in the garage.",
    "The garden has an old oak tree.",
]


@pytest.fixture(scope="module")
def server(milvus_server, tmp_path_factory):
    config = make_config(
        tmp_path_factory.mktemp("milvus-core"),
        backend="milvus",
        milvus_uri=milvus_server.uri,
        milvus_prefix=f"t{uuid.uuid4().hex[:10]}",
        core_views="on_recall",
    )
    server = PolarMemServer(config).start()
    assert server.fast_front is None and server.core_recall is not None
    with PolarMemClient(server.address) as client:
        client.create_namespace("v", spaces=[("vis", DIM)], encoder="none", concepts=CONCEPTS, open_vocabulary=False)
        front_ports.stock(client, np.random.default_rng(5), CONCEPTS, DIM, namespace="v", count=120, parts=3)
        client.create_namespace("notes", encoder="minilm")  # open vocabulary: text notes, nothing declared
        items = [item_message(id=f"n{i}", kind="text", text=text) for i, text in enumerate(NOTES)]
        assert client.remember_stream("notes", items).stored == len(items)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def stub(server):
    with grpc.insecure_channel(server.address) as channel:
        yield pb_grpc.MemoryServiceStub(channel)


def test_vector_recalls_in_every_mode_are_the_cores_with_the_backends_searches(server, stub):
    rng = np.random.default_rng(11)
    for _ in range(40):
        request = front_ports.random_recall(rng, CONCEPTS, DIM, MODES, namespace="v")
        request.include_context = bool(rng.random() < 0.3)
        if rng.random() < 0.25:
            request.suppressed_k = int(rng.integers(1, 4))
        if rng.random() < 0.25:
            request.metadata_equals["part"] = str(rng.integers(0, 3))
        if request.mode == pb.RECALL_MODE_HARD and rng.random() < 0.3:
            request.recency_half_life_s = 3600.0
        recall_by(server, stub, request, "core")


def test_text_and_answer_mode_are_the_cores(server, stub):
    shapes = [
        dict(mode=pb.RECALL_MODE_ANSWER, include_context=True, top_k=5),  # the MCP recall tool's
        dict(),  # the CLI's
        dict(explain=False, top_k=3),
        dict(mode=pb.RECALL_MODE_STRICT, include_context=True),
        dict(mode=pb.RECALL_MODE_ADAPTIVE, suppressed_k=2),
    ]
    for question in ("does Maya drink coffee?", "a dog but no cat", "who takes the bus?", "Leo's pets"):
        for shape in shapes:
            answer = recall_by(server, stub, pb.RecallRequest(namespace="notes", text=question, **shape), "core")
            assert answer.hits
    # a name the vocabulary learns first (a write), then the core's answer
    learned = pb.RecallRequest(namespace="notes", text="Leo", required=["dog"], forbidden=["cat"], top_k=3)
    assert recall_by(server, stub, learned, "core").hits[0].id == "n2"


def test_full_items_and_consistency_tokens_are_the_cores_at_the_listener(server, stub):
    """A token is applied by the servicer (its read level holds for the backend's searches, which
    run on its thread) and full items are added there from the hits' records: the core plans both."""
    rng = np.random.default_rng(13)
    with PolarMemClient(server.address) as client:
        client.remember("v", id="fresh", vectors={"vis": rng.standard_normal(DIM)}, states={"dog": "has"})
        token = client.consistency_token
    assert token
    fresh = pb.RecallRequest(
        namespace="v", vectors=front_ports.random_recall(rng, CONCEPTS, DIM, MODES).vectors, required=["dog"]
    )
    fresh.consistency_token = token
    fresh.include_items = True
    answer = recall_by(server, stub, fresh, "core")
    assert all(hit.item.id == hit.id for hit in answer.hits)


def test_what_the_core_declines_over_milvus_is_the_librarys(server, stub):
    rng = np.random.default_rng(12)
    query = {"vis": pb.VectorValue(values=rng.standard_normal(DIM).tolist())}
    recall_by(server, stub, pb.RecallRequest(namespace="v", vectors=query, text="a dog", top_k=3), "core")
    answer_mode = pb.RecallRequest(namespace="v", vectors=query, mode=pb.RECALL_MODE_ANSWER, top_k=3)
    recall_by(server, stub, answer_mode, "core")  # (answer mode over a query vector alone)
    before = answered(server, "core")
    with pytest.raises(grpc.RpcError) as refused:
        stub.Recall(pb.RecallRequest(namespace="v", vectors=query, required=["dgo"]))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "dgo" in refused.value.details()
    assert answered(server, "core") == before


def test_a_backend_error_in_a_search_the_core_asks_for_is_the_librarys_status(server, stub):
    """A search the backend fails (Milvus unreachable: StoreError) inside the core's run reaches the
    caller as the library's own answer would: UNAVAILABLE with its message; nothing is answered,
    and the next call is the core's again."""
    from polarmem_server.storage.errors import StoreError

    backend = server.memory.backend
    search = backend.search
    request = pb.RecallRequest(namespace="notes", text="does Maya drink tea?", mode=pb.RECALL_MODE_ANSWER, top_k=3)

    def unreachable(*args, **kwargs):
        raise StoreError("Milvus search failed: connection refused (test)")

    backend.search = unreachable  # the fault, injected into the real backend for one call
    try:
        with pytest.raises(grpc.RpcError) as failed:
            stub.Recall(request)
    finally:
        backend.search = search
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE and "connection refused" in failed.value.details()
    recall_by(server, stub, request, "core")
