"""The one core entry for Recall (api/core_recall.py) where the Python listener has the address
(``--front python``; test_server_processes.py has it in every process of a group): a real
server over real sockets, RocksDB in a temp dir. The servicer answers each Recall the core plans
through one core call, byte-identical to the library's answer, having first done what only the
library can: made the namespace's view where the core holds none, let an open vocabulary learn
the names a request gives, applied a token, added full items; whatever the core declines
(refusals) is the library's, in its own words; a write that
changes the view (settings, delete) drops it, and the answer never comes from a namespace that
is gone. With ``core_views`` eager (the default) the server makes each namespace's view without waiting for a
Recall: at start-up, when a namespace is created, and again right after a write drops it."""

from __future__ import annotations

import time

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem_server.library import unavailable_reason
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces.client import PolarMemClient
import front_ports
from front_ports import answered, recall_by
from servertools import DIM, make_config

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))

CONCEPTS = ("dog", "cat", "car", "bus", "tree")
MODES = (pb.RECALL_MODE_HARD, pb.RECALL_MODE_SOFT, pb.RECALL_MODE_OFF, pb.RECALL_MODE_STRICT, pb.RECALL_MODE_ADAPTIVE)


def stock(client, ns: str, rng, count: int = 300) -> None:
    front_ports.stock(client, rng, CONCEPTS, DIM, namespace=ns, count=count, parts=3)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # views on_recall: each test decides when the library hands the core a view (the eager keeper,
    # the default, is tested below)
    server = PolarMemServer(
        make_config(tmp_path_factory.mktemp("core-recall"), front="python", core_views="on_recall")
    ).start()
    assert server.fast_front is None and server.core_recall is not None
    with PolarMemClient(server.address) as client:
        # closed: an open vocabulary may learn an unknown name a query asks for (the library's)
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none", concepts=CONCEPTS, open_vocabulary=False)
        stock(client, "t", np.random.default_rng(5))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def stub(server):
    with grpc.insecure_channel(server.address) as channel:
        yield pb_grpc.MemoryServiceStub(channel)


def random_request(rng, ns: str = "t") -> pb.RecallRequest:
    """front_ports.random_recall's, in every mode, with a context, suppressed hits, a metadata
    filter, concepts alone or a skipped unknown name now and then."""
    request = front_ports.random_recall(rng, CONCEPTS, DIM, MODES, namespace=ns)
    request.include_context = bool(rng.random() < 0.3)
    if rng.random() < 0.2:
        request.suppressed_k = int(rng.integers(1, 4))
    if rng.random() < 0.2:
        request.metadata_equals["part"] = str(rng.integers(0, 3))
    if (request.required or request.forbidden) and rng.random() < 0.25:
        del request.vectors["vis"]  # concepts alone: every similarity 0
    if rng.random() < 0.15:
        request.allow_unknown_concepts = True
        request.required.append(rng.choice(["dgo", "unicorn", "cats", "tre", "bus"]))
    return request


def test_after_the_first_recall_the_servicer_answers_through_the_core(server, stub):
    rng = np.random.default_rng(11)
    recall_by(server, stub, random_request(rng))  # the servicer makes the view, then the core answers
    assert server.core_recall.views.holds("t")
    for _ in range(80):
        recall_by(server, stub, random_request(rng), "core")


def vectors(rng) -> dict:
    return {"vis": pb.VectorValue(values=rng.standard_normal(DIM).tolist())}


def test_what_the_core_declines_is_the_librarys_in_its_own_words(server, stub):
    rng = np.random.default_rng(12)
    stub.Recall(random_request(rng))
    # full items; names the vocabulary lacks are skipped by the core too, with the same suggestions
    query = vectors(rng)
    # full items: the core's answer, each hit's item added by the servicer from its record
    with_items = recall_by(
        server, stub, pb.RecallRequest(namespace="t", vectors=query, include_items=True, explain=False, top_k=3), "core"
    )
    assert with_items.hits and all(hit.item.id == hit.id and hit.text for hit in with_items.hits)  # (explained)
    # a text in a namespace without an encoder gives its concepts, and answer mode takes a query
    # vector alone: both natively
    recall_by(server, stub, pb.RecallRequest(namespace="t", text="a dog", vectors=query, top_k=3), "core")
    answer_mode = pb.RecallRequest(namespace="t", vectors=query, mode=pb.RECALL_MODE_ANSWER, top_k=3)
    recall_by(server, stub, answer_mode, "core")
    skipped = recall_by(
        server,
        stub,
        pb.RecallRequest(namespace="t", vectors=query, required=["dgo"], allow_unknown_concepts=True, top_k=3),
        "core",
    )
    assert skipped.parse.unknown_concepts[0].name == "dgo"
    assert list(skipped.parse.unknown_concepts[0].did_you_mean) == ["dog"]
    only_unknown = pb.RecallRequest(namespace="t", required=["dgo"], allow_unknown_concepts=True)  # nothing left
    with pytest.raises(grpc.RpcError) as empty:
        stub.Recall(only_unknown)
    assert empty.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "query is empty" in empty.value.details()
    # refusals: the library's status and message naming the field, and no answer counted
    refused = [
        (pb.RecallRequest(namespace="t", vectors=query, required=["dgo"]), "'dgo' (did you mean 'dog'?)"),
        (pb.RecallRequest(namespace="t", vectors=query, required=["dog"], top_k=100_000), "top_k must be"),
        (
            pb.RecallRequest(namespace="t", vectors=query, mode=pb.RECALL_MODE_OFF, rank_by_confidence=True),
            "rank_by_confidence",
        ),
        (pb.RecallRequest(namespace="t", vectors={"vis": pb.VectorValue(values=[1.0] * (DIM + 1))}), "dimension"),
        (pb.RecallRequest(namespace="t", vectors={"vis": pb.VectorValue(values=[0.0] * DIM)}), "all zeros"),
        (pb.RecallRequest(namespace="t", vectors={"vis": pb.VectorValue(values=[float("nan")] * DIM)}), "NaN"),
        (pb.RecallRequest(namespace="t", vectors=query, mode=99), "mode: unknown recall mode 99"),
        (
            pb.RecallRequest(namespace="t", vectors=query, kinds=[7]),
            "kinds: use ITEM_KIND_VISUAL and/or ITEM_KIND_TEXT",
        ),
        (
            pb.RecallRequest(namespace="t", vectors=query, recency_half_life_s=60.0, mode=pb.RECALL_MODE_STRICT),
            "mode strict is not supported",
        ),
        (
            pb.RecallRequest(namespace="t", vectors=query, include_context=True, context_budget_chars=3),
            "context_budget",
        ),
        (pb.RecallRequest(namespace="t", top_k=3), "query is empty"),  # nothing to rank by
    ]
    for request, words in refused:
        before = answered(server, "core")
        with pytest.raises(grpc.RpcError) as refusal:
            stub.Recall(request)
        assert refusal.value.code() == grpc.StatusCode.INVALID_ARGUMENT, request
        assert words in refusal.value.details(), (words, refusal.value.details())
        assert answered(server, "core") == before
    with pytest.raises(grpc.RpcError) as no_index:
        stub.Recall(pb.RecallRequest(namespace="t", vectors=query, approximate=True))
    assert no_index.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "approximate: namespace 't' has no approximate index" in no_index.value.details()


def test_a_multi_vector_space_is_the_cores(server, stub):
    """A query vector for a multi-vector space (max-sim over each item's rows, in the index for
    both doors), alone or weighted beside a single space's, in every mode: the core's answer,
    the library's bytes. Several query rows stay the library's (it refuses or reads them)."""
    from polarmem_server.faces.client import item_message

    rng = np.random.default_rng(17)
    with PolarMemClient(server.address) as client:
        client.create_namespace(
            "multi",
            spaces=[("vis", DIM), ("rows", DIM, True)],
            encoder="none",
            concepts=CONCEPTS,
            open_vocabulary=False,
        )
        items = [
            item_message(
                id=f"m{i:03d}",
                text=f"item {i}",
                vectors={"vis": rng.standard_normal(DIM), "rows": rng.standard_normal((1 + i % 3, DIM))},
                states=front_ports.states_drawn(rng, CONCEPTS),
            )
            for i in range(120)
        ]
        assert client.remember_stream("multi", items).stored == len(items)
    stub.Recall(pb.RecallRequest(namespace="multi", vectors=vectors(rng), top_k=3))  # (the view)
    for _ in range(40):
        request = random_request(rng, "multi")
        rows = {"rows": pb.VectorValue(values=rng.standard_normal(DIM).tolist())}
        if request.vectors and rng.random() < 0.5:
            request.vectors["rows"].CopyFrom(rows["rows"])
            request.weights["rows"] = float(rng.uniform(0.2, 2.0))
        else:  # the multi space alone
            if "vis" in request.vectors:
                del request.vectors["vis"]
            request.vectors["rows"].CopyFrom(rows["rows"])
        recall_by(server, stub, request, "core")
    two_rows = pb.VectorValue(values=rng.standard_normal(2 * DIM).tolist(), rows=2)
    with pytest.raises(grpc.RpcError) as refused:
        stub.Recall(pb.RecallRequest(namespace="multi", vectors={"rows": two_rows}))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def concept_names(client, namespace: str) -> list[str]:
    return [c.concept for c in client.list_concepts(namespace, page_size=1000).concepts]


def test_an_open_vocabulary_learns_a_requests_names_before_the_core_answers(server, stub):
    """A name an open vocabulary lacks: once the core has checked the rest of the request, the
    library lets the vocabulary learn it (a write, as its own recall does) and the core answers.
    A name no text mentions stays unknown: skipped with suggestions by the core under
    allow_unknown_concepts, else refused by the library, in its words, and nothing learned."""
    from polarmem_server.faces.client import item_message

    rng = np.random.default_rng(19)
    words = ["kite", "boat", "horse", "train"]
    with PolarMemClient(server.address) as client:
        client.create_namespace("o", spaces=[("vis", DIM)], encoder="none", open_vocabulary=True)
        items = [
            item_message(
                id=f"o{i:03d}",
                kind="text",
                text=f"a red {words[i % 4]} by the sea",
                vectors={"vis": rng.standard_normal(DIM)},
            )
            for i in range(40)
        ]
        assert client.remember_stream("o", items).stored == len(items)
        stub.Recall(pb.RecallRequest(namespace="o", vectors=vectors(rng), top_k=3))  # (the view)
        learned = recall_by(
            server, stub, pb.RecallRequest(namespace="o", vectors=vectors(rng), required=["red kite"], top_k=5), "core"
        )
        assert list(learned.parse.required) == ["red kite"] and learned.hits[0].status == "VERIFIED"
        assert "red kite" in concept_names(client, "o")
        skipped = recall_by(
            server,
            stub,
            pb.RecallRequest(
                namespace="o",
                vectors=vectors(rng),
                required=["zeppelin"],
                forbidden=["boat"],
                allow_unknown_concepts=True,
            ),
            "core",
        )
        assert [c.name for c in skipped.parse.unknown_concepts] == ["zeppelin"]
        before = answered(server, "core")
        with pytest.raises(grpc.RpcError) as refused:
            stub.Recall(pb.RecallRequest(namespace="o", vectors=vectors(rng), required=["zeppelin"]))
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "zeppelin" in refused.value.details()
        assert answered(server, "core") == before and "zeppelin" not in concept_names(client, "o")


def test_a_settings_change_drops_the_view_and_a_deleted_namespace_is_never_answered(server, stub):
    rng = np.random.default_rng(13)
    with PolarMemClient(server.address) as client:
        client.create_namespace("gone", spaces=[("vis", DIM)], encoder="none")
        stock(client, "gone", rng, count=50)
        request = random_request(rng, "gone")
        stub.Recall(request)
        recall_by(server, stub, request, "core")
        client.update_namespace("gone", aliases={"puppy": "dog"})  # the view's names change
        assert not server.core_recall.views.holds("gone")
        puppy = pb.RecallRequest(namespace="gone", vectors=vectors(rng), required=["puppy"], top_k=5)
        assert recall_by(server, stub, puppy, "core").hits  # the servicer made the new view first
        client.delete_namespace("gone")
        assert not server.core_recall.views.holds("gone")
        with pytest.raises(grpc.RpcError) as missing:
            stub.Recall(puppy)
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
        # the same name again, with other items: never the old namespace's answer
        client.create_namespace("gone", spaces=[("vis", DIM)], encoder="none")
        client.remember("gone", id="new", vectors={"vis": rng.standard_normal(DIM)}, states={"dog": "has"})
        fresh = pb.RecallRequest(namespace="gone", vectors=vectors(rng), required=["dog"], top_k=5)
        stub.Recall(fresh)
        assert [hit.id for hit in recall_by(server, stub, fresh, "core").hits] == ["new"]


def test_items_written_after_the_view_are_answered_by_the_core(server, stub):
    rng = np.random.default_rng(14)
    with PolarMemClient(server.address) as client:
        client.create_namespace("live", spaces=[("vis", DIM)], encoder="none")
        stock(client, "live", rng, count=20)
        request = pb.RecallRequest(namespace="live", vectors=vectors(rng), top_k=50, include_context=True)
        stub.Recall(request)
        vector = rng.standard_normal(DIM)
        client.remember("live", id="late", vectors={"vis": vector}, states={"dog": "has", "zebra": "has"})
        near = pb.RecallRequest(
            namespace="live", vectors={"vis": pb.VectorValue(values=vector.tolist())}, required=["zebra"], top_k=3
        )
        answer = recall_by(server, stub, near, "core")  # a concept appended since: bound natively
        assert answer.hits[0].id == "late" and answer.hits[0].status == "VERIFIED"
        client.forget("live", "late")
        assert "late" not in [hit.id for hit in recall_by(server, stub, near, "core").hits]


def wait_for_view(server, namespace: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not server.core_recall.views.holds(namespace):
        assert time.monotonic() < deadline, f"no view of {namespace} within {timeout_s} s"
        time.sleep(0.01)


def test_eager_views_are_made_without_a_recall(tmp_path):
    """The default: a view at start-up, for a namespace created since, and again right after a
    settings change dropped it, so even the first Recall after each is the core's."""
    rng = np.random.default_rng(15)
    data = tmp_path / "data"
    server = PolarMemServer(make_config(tmp_path, front="python")).start()
    try:
        with grpc.insecure_channel(server.address) as channel, PolarMemClient(server.address) as client:
            stub = pb_grpc.MemoryServiceStub(channel)
            client.create_namespace("e", spaces=[("vis", DIM)], encoder="none")  # no concepts: no write listener runs
            stock(client, "e", rng, count=40)
            wait_for_view(server, "e")
            first = pb.RecallRequest(namespace="e", vectors=vectors(rng), required=["dog"], top_k=5)
            recall_by(server, stub, first, "core")
            client.update_namespace("e", aliases={"puppy": "dog"})
            wait_for_view(server, "e")
            puppy = pb.RecallRequest(namespace="e", vectors=vectors(rng), required=["puppy"], top_k=5)
            assert recall_by(server, stub, puppy, "core").hits
    finally:
        server.stop()
    server = PolarMemServer(make_config(tmp_path, front="python", data_dir=str(data))).start()
    try:
        wait_for_view(server, "e")  # a restart: made from the namespaces opened ...
        deadline = time.monotonic() + 10
        while server.memory.backend.records_to_read("e"):  # ... and the items' records read back
            assert time.monotonic() < deadline, "the records were not read back within 10 s"
            time.sleep(0.01)
        with grpc.insecure_channel(server.address) as channel:
            recall_by(server, pb_grpc.MemoryServiceStub(channel), first, "core")  # explained: the core's at once
    finally:
        server.stop()


def test_on_recall_views_are_made_by_the_first_recall(tmp_path):
    """core_views on_recall: no view until the namespace's first Recall, which makes it before the
    core answers it; after a restart the first explained Recall reads the namespace's stored
    records back into the core before it answers."""
    server = PolarMemServer(make_config(tmp_path, front="python", core_views="on_recall")).start()
    try:
        with grpc.insecure_channel(server.address) as channel, PolarMemClient(server.address) as client:
            stub = pb_grpc.MemoryServiceStub(channel)
            client.create_namespace("l", spaces=[("vis", DIM)], encoder="none")
            stock(client, "l", np.random.default_rng(16), count=20)
            time.sleep(0.3)  # several of the eager keeper's passes
            assert not server.core_recall.views.holds("l")
            request = pb.RecallRequest(namespace="l", vectors=vectors(np.random.default_rng(17)), top_k=5)
            recall_by(server, stub, request, "core")
            assert server.core_recall.views.holds("l")
    finally:
        server.stop()
    server = PolarMemServer(make_config(tmp_path, front="python", core_views="on_recall")).start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = pb_grpc.MemoryServiceStub(channel)
            request.explain = False  # (explain off reads no record)
            recall_by(server, stub, request, "core")
            request.explain = True  # records are read back on demand, then the core answers
            explained = recall_by(server, stub, request, "core")
            assert explained.hits and all(hit.text for hit in explained.hits)  # (from the records)
            assert server.memory.backend.records_to_read("l") == 0
    finally:
        server.stop()


def test_a_recall_waits_for_a_write_holding_a_namespace_the_core_has_no_view_of(tmp_path):
    """The core cannot make a view while a write holds the namespace: the Recall waits for it and
    is answered, never refused."""
    import threading

    from polarmem_server.index import SpaceSpec
    from polarmem_server.library import ItemInput, Memory, NamespaceSettings

    memory = Memory(tmp_path / "data")
    memory.create_namespace(NamespaceSettings("w", spaces=(SpaceSpec("vis", DIM),), encoder="none"))
    rng = np.random.default_rng(18)
    memory.remember("w", ItemInput(id="a", vectors={"vis": rng.standard_normal(DIM)}, states={"dog": "has"}))
    memory.core.views.forget("w")
    lock = memory.namespace("w").write_lock
    held = threading.Event()

    def writer():
        with lock:
            held.set()
            time.sleep(0.3)

    thread = threading.Thread(target=writer)
    thread.start()
    held.wait()
    started = time.monotonic()
    hits = memory.recall("w", vectors={"vis": rng.standard_normal(DIM)}, required=["dog"]).hits
    waited = time.monotonic() - started
    thread.join()
    assert [hit.item_id for hit in hits] == ["a"] and waited >= 0.2
    memory.close()


BUILDS_ANSWERS = (
    "hits.add(",
    "suppressed.add(",
    "run_recall(",
    "answer_recall(",
    "fact_check_context(",
    "headed_context(",
)


def test_no_python_module_but_the_cores_wrapper_builds_hits_explanations_or_a_context():
    """Recall semantics live once, in the core: a product module that adds hits to a response,
    runs a Recall itself or writes a context fails this (the wrapper, library/recall.py, only
    reads the core's response; the servicer only adds full items to the core's hits)."""
    import pathlib

    import polarmem_server

    package = pathlib.Path(polarmem_server.__file__).parent
    builders = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text()
        builders += [f"{path.relative_to(package)}: {call}" for call in BUILDS_ANSWERS if call in text]
    assert builders == []


def test_full_items_leave_out_a_hit_whose_item_went_after_the_cores_answer(server, stub, monkeypatch):
    """include_items reads the hits' records after the core answered: a hit whose item is gone by
    then (forgotten meanwhile) is asked for again, then left out, the ranks closing up."""
    query = vectors(np.random.default_rng(21))
    request = pb.RecallRequest(namespace="t", vectors=query, include_items=True, top_k=5)
    first = stub.Recall(request)
    gone = first.hits[1].id
    get_items = server.memory.get_items

    def without_gone(ns, ids):
        return [None if item_id == gone else record for item_id, record in zip(ids, get_items(ns, ids))]

    monkeypatch.setattr(server.memory, "get_items", without_gone)
    answer = stub.Recall(request)
    assert [hit.id for hit in answer.hits] == [hit.id for hit in first.hits if hit.id != gone]
    assert [hit.rank for hit in answer.hits] == [1, 2, 3, 4]
    assert all(hit.item.id == hit.id for hit in answer.hits)
