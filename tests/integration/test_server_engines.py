"""Server-side verification over gRPC: the engine scores, the server partitions and stores;
engine failures, timeouts and a full queue store nothing and return the right status."""

import threading
import time

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.common.v1 import enums_pb2
from polarmem_server.faces.client import PolarMemClient
from polarmem_server.scoring.base import EngineError
from polarmem_server.api.server import PolarMemServer
from servertools import DIM, make_config


def vec(seed):
    return np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)


@pytest.fixture
def lexical(tmp_path):
    server = PolarMemServer(make_config(tmp_path, engine="lexical", engine_max_delay_ms=1.0)).start()
    client = PolarMemClient(server.address)
    client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
    yield server, client
    client.close()
    server.stop()


def remember_verified(client, item_id, text, concepts, content=b"", timeout_s=10):
    request = pb.RememberRequest(
        namespace="t",
        item=pb.ItemInput(
            id=item_id,
            text=text,
            content=content,
            verify_concepts=concepts,
            vectors={"vis": pb.VectorValue(values=vec(1).tolist())},
        ),
    )
    return client._stub.Remember(request, timeout=timeout_s).item


def test_remember_with_verification(lexical):
    _, client = lexical
    item = remember_verified(client, "r1", "A dog on grass. No cat was seen.", ["dog", "cat", "car", "grass"])
    assert set(item.has) == {"dog", "grass"} and "cat" in item.not_has
    assert "car" not in item.has  # unmentioned: P(Yes) 0.5, placed by the item's own partition
    assert item.model == "negation-cues-v1"
    assert {ev.source for ev in item.evidence} == {"lexical"}
    dog = next(ev for ev in item.evidence if ev.concept == "dog")
    assert len(dog.p_yes) == 4  # the namespace's four default templates


def test_observe_with_new_content_and_score_concepts(lexical):
    _, client = lexical
    remember_verified(client, "r1", "A dog on grass.", ["dog", "cat"])
    assert [e.concept for e in client.get_item("t", "r1").item.evidence] == ["dog"]  # cat: the engine abstained
    response = client._stub.Observe(
        pb.ObserveRequest(namespace="t", id="r1", text="The dog left; a cat is here.", verify_concepts=["cat"]),
        timeout=10,
    )
    assert response.changed and "cat" in response.item.has and "dog" in response.item.has
    # no concepts named: the ones the item holds are verified against the new text
    response = client._stub.Observe(
        pb.ObserveRequest(namespace="t", id="r1", text="No dog, no cat any more."), timeout=10
    )
    assert sorted(e.concept for e in response.item.evidence) == ["cat", "dog"]
    scores = client.score_concepts("t", ["dog", "bus"], text="a dog, and no bus")
    assert scores.engine == "lexical"
    assert {s.concept: s.p_yes[0] for s in scores.scores} == pytest.approx({"dog": 0.95, "bus": 0.05})


def test_stream_verifies_each_item(lexical):
    _, client = lexical
    items = [
        pb.ItemInput(
            id=f"s{i}",
            text=f"a {'dog' if i % 2 else 'cat'}",
            verify_concepts=["dog", "cat"],
            vectors={"vis": pb.VectorValue(values=vec(i).tolist())},
        )
        for i in range(20)
    ]
    items.append(
        pb.ItemInput(
            id="bad",
            text="x",
            content=b"\x89PNG",
            verify_concepts=["dog"],
            vectors={"vis": pb.VectorValue(values=vec(0).tolist())},
        )
    )
    response = client.remember_stream("t", items)
    assert (response.stored, response.failed) == (20, 1)
    assert "reads text only" in response.results[-1].error.message and response.results[-1].id == "bad"
    assert sorted(client.get_concept("t", "dog").item_ids) == sorted(f"s{i}" for i in range(1, 20, 2))


def test_a_long_verified_stream_stays_within_the_engine_queue(tmp_path):
    # 700 items to verify in one stream against a queue of 300: the stream hands the engine at
    # most 256 at a time, so none is refused
    config = make_config(tmp_path, engine="lexical", engine_max_delay_ms=1.0, engine_queue=300)
    with PolarMemServer(config) as server, PolarMemClient(server.address) as client:
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        items = (
            pb.ItemInput(
                id=f"s{i}",
                text="a dog" if i % 2 else "no dog",
                verify_concepts=["dog"],
                vectors={"vis": pb.VectorValue(values=vec(i).tolist())},
            )
            for i in range(700)
        )
        response = client.remember_stream("t", items, timeout_s=120)
        assert (response.stored, response.failed) == (700, 0)
        assert client.get_concept("t", "dog", "not_has").stats.not_has == 350


def test_image_bytes_need_a_vision_engine(lexical):
    _, client = lexical
    with pytest.raises(grpc.RpcError) as info:
        remember_verified(client, "img", "", ["dog"], content=b"\x89PNG")
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "content" in info.value.details()


def test_engine_failure_stores_nothing(lexical):
    server, client = lexical

    def broken(requests):
        raise EngineError("CUDA error: device lost")

    server.verifier.engine.score = broken
    with pytest.raises(grpc.RpcError) as info:
        remember_verified(client, "x", "a dog", ["dog"])
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE and "device lost" in info.value.details()
    assert client.get_namespace("t").item_count == 0 and client.get_namespace("t").concept_count == 0


def test_engine_failure_in_a_stream_names_each_failed_item(lexical):
    """An engine that fails fails the items it was verifying, each result carrying the id the
    item was sent with; items that need no engine are stored."""
    server, client = lexical

    def broken(requests):
        raise EngineError("CUDA error: device lost")

    server.verifier.engine.score = broken
    vis = {"vis": pb.VectorValue(values=vec(2).tolist())}
    items = [
        pb.ItemInput(id="v1", text="a dog", verify_concepts=["dog"], vectors=vis),
        pb.ItemInput(id="plain", states={"dog": enums_pb2.CONCEPT_STATE_HAS}, vectors=vis),
        pb.ItemInput(id="v2", text="a cat", verify_concepts=["cat"], vectors=vis),
    ]
    response = client.remember_stream("t", items)
    assert (response.stored, response.failed) == (1, 2)
    assert [(r.id, r.error.code) for r in response.results] == [
        ("v1", grpc.StatusCode.UNAVAILABLE.value[0]),
        ("plain", 0),
        ("v2", grpc.StatusCode.UNAVAILABLE.value[0]),
    ]
    assert "device lost" in response.results[0].error.message
    assert client.get_namespace("t").item_count == 1


def test_engine_timeout_is_deadline_exceeded(lexical):
    server, client = lexical
    original = server.verifier.engine.score

    def slow(requests):
        time.sleep(1.0)
        return original(requests)

    server.verifier.engine.score = slow
    server.verifier.timeout_s = 0.2
    with pytest.raises(grpc.RpcError) as info:
        remember_verified(client, "x", "a dog", ["dog"])
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    time.sleep(1.2)
    assert client.get_namespace("t").item_count == 0


def test_full_engine_queue_is_resource_exhausted(tmp_path):
    with PolarMemServer(
        make_config(tmp_path, engine="lexical", engine_queue=1, engine_max_batch=1, engine_max_delay_ms=0.0)
    ) as server:
        gate = threading.Event()
        original = server.verifier.engine.score

        def held(requests):
            gate.wait(10)
            return original(requests)

        server.verifier.engine.score = held
        with PolarMemClient(server.address) as client:
            client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
            codes = []

            def call(i):
                try:
                    remember_verified(client, f"x{i}", "a dog", ["dog"])
                    codes.append("OK")
                except grpc.RpcError as exc:
                    codes.append(exc.code().name)

            threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
            for t in threads:
                t.start()
                time.sleep(0.1)
            gate.set()
            for t in threads:
                t.join()
            assert "RESOURCE_EXHAUSTED" in codes and "OK" in codes


def test_no_engine_means_unimplemented(tmp_path):
    with PolarMemServer(make_config(tmp_path)) as server, PolarMemClient(server.address) as client:
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        with pytest.raises(grpc.RpcError) as info:
            client.score_concepts("t", ["dog"], text="a dog")
        assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED and "--engine" in info.value.details()
        with pytest.raises(grpc.RpcError) as info:
            client._stub.Remember(
                pb.RememberRequest(namespace="t", item=pb.ItemInput(id="a", verify_concepts=["dog"])), timeout=5
            )
        assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_transformers_engine_behind_the_server(tmp_path):
    from tiny_models import build_tiny_llama

    model = build_tiny_llama(tmp_path / "tiny")
    with (
        PolarMemServer(make_config(tmp_path, engine="transformers", model=str(model))) as server,
        PolarMemClient(server.address) as client,
    ):
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        item = remember_verified(client, "a", "A red dog on the grass", ["dog", "cat", "car"])
        assert len(item.evidence) == 3 and item.partition.method == "otsu"
        assert all(len(ev.p_yes) == 4 and all(0 < p < 1 for p in ev.p_yes) for ev in item.evidence)
        assert item.model == "tiny" and {ev.source for ev in item.evidence} == {"transformers"}
        kinds = client.get_item("t", "a").item
        assert kinds.kind == enums_pb2.ITEM_KIND_VISUAL


def test_vision_language_engine_verifies_image_bytes(tmp_path):
    from tiny_models import build_tiny_qwen2_vl, png_bytes

    model = build_tiny_qwen2_vl(tmp_path / "tiny-vlm")
    with (
        PolarMemServer(make_config(tmp_path, engine="transformers", model=str(model))) as server,
        PolarMemClient(server.address) as client,
    ):
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        item = remember_verified(client, "img", "", ["dog", "cat", "bus"], content=png_bytes(3))
        assert len(item.evidence) == 3 and all(len(ev.p_yes) == 4 for ev in item.evidence)
        assert item.model == "tiny-vlm"
        with pytest.raises(grpc.RpcError) as info:
            remember_verified(client, "bad", "", ["dog"], content=b"not an image")
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "decodable image" in info.value.details()
        assert client.get_namespace("t").item_count == 1


def test_concurrent_remember_calls_fill_packed_batches(tmp_path, monkeypatch):
    """Issue 50's serving path: concurrent Remember calls with verify_concepts are gathered by the
    batcher into engine calls of several items (the packed scorer's groups), and every item's
    evidence equals what the engine gives that item scored alone."""
    from tiny_models import build_tiny_llama

    from polarmem_server.domain.settings import DEFAULT_TEMPLATES
    from polarmem_server.scoring import ScoreItem, ScoreRequest, create_engine
    from polarmem_server.scoring.transformers_engine import TransformersEngine

    model = build_tiny_llama(tmp_path / "tiny")
    sizes = []
    original = TransformersEngine.score

    def recording(self, requests):
        sizes.append(len(requests))
        return original(self, requests)

    monkeypatch.setattr(TransformersEngine, "score", recording)
    concepts = ["dog", "cat", "car"]
    texts = [
        f"{colour} dog on the grass with {n} cat"
        for colour in ("A red", "A big", "A small", "The blue")
        for n in ("two", "no")
    ]
    config = make_config(
        tmp_path, engine="transformers", model=str(model), engine_max_batch=4 * 12, engine_max_delay_ms=500.0
    )
    with PolarMemServer(config) as server, PolarMemClient(server.address) as client:
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        results = [None] * len(texts)

        def call(i):
            results[i] = remember_verified(client, f"i{i}", texts[i], concepts, timeout_s=60)

        threads = [threading.Thread(target=call, args=(i,)) for i in range(len(texts))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert max(sizes) > 1 and sum(sizes) == len(texts)  # several items per engine call
    engine = create_engine("transformers", model=str(model))
    for text, item in zip(texts, results):
        evidence = {ev.concept: list(ev.p_yes) for ev in item.evidence}
        request = ScoreRequest(ScoreItem(text), tuple(concepts), tuple(DEFAULT_TEMPLATES))
        alone = original(engine, [request])[0]
        for row, concept in zip(alone, concepts):
            np.testing.assert_allclose(evidence[concept], row, atol=1e-5)
