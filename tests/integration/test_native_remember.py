"""A Remember of a new note stored by the core (cpp/front/note_remember.cpp): the compiled
listener and the Python servicer both ask it first, and what it stores is what the library
stores for the same note — record, concepts and `sem` vector — over real sockets and RocksDB.
Everything else (evidence to verify or score, an id already stored, a namespace to create, input
the library refuses) is handed to the library whole, which answers in its own words."""

from __future__ import annotations

import gzip
import json
import threading
import time
from importlib import resources

import grpc
import numpy as np
import pytest

from polarmem.common.v1 import enums_pb2
from polarmem.storage.v1 import records_pb2
from polarmem.v1 import memory_service_pb2 as pb
from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem_server.api.fast_front import unavailable_reason
from polarmem_server.api.server import PolarMemServer
from polarmem_server.domain.items import ItemInput
from polarmem_server.faces.client import PolarMemClient
from servertools import DIM, make_config

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))

TEXT = enums_pb2.ITEM_KIND_TEXT


def caption_notes(count: int) -> list[str]:
    """COCO captions (the package's dev data), every third with a verified-absent object negated."""
    path = resources.files("polarmem_server.data") / "coco_val2014_dev10k.jsonl.gz"
    notes = []
    with gzip.open(str(path), "rt") as rows:
        for line in rows:
            row = json.loads(line)
            note = row["captions"][0]
            if len(notes) % 3 == 0 and row["not_has"]:
                note += f" There is no {row['not_has'][-1]} here."
            notes.append(note)
            if len(notes) == count:
                return notes
    return notes


def wait_for_writer(server, namespace: str, timeout_s: float = 20.0) -> None:
    """Until the core holds the namespace's view (the view keeper makes it in the background)."""
    give_up = time.monotonic() + timeout_s
    while not server.memory.core.views.holds(namespace):
        assert time.monotonic() < give_up, f"no view of {namespace} within {timeout_s} s"
        time.sleep(0.05)


def remember_stats(server) -> dict:
    return server.fast_front.front.stats()["remember"]


def stored_record(server, namespace: str, item_id: str) -> records_pb2.ItemRecord:
    record = server.memory.backend.store.get_item(namespace, item_id)
    assert record is not None, item_id
    return record


def without_times(record: records_pb2.ItemRecord) -> records_pb2.ItemRecord:
    copy = records_pb2.ItemRecord()
    copy.CopyFrom(record)
    copy.created_ms = copy.updated_ms = 0
    return copy


@pytest.fixture
def server(tmp_path):
    server = PolarMemServer(make_config(tmp_path)).start()
    yield server
    server.stop()


@pytest.mark.parametrize("open_vocabulary,aliases", [(True, None), (False, None), (True, {"puppy": "dog"})])
def test_a_note_is_stored_by_the_core_as_the_library_stores_it(server, open_vocabulary, aliases):
    """The same notes, through the compiled listener into one namespace and through the library's
    own write path into a twin: the same records (but for the clock), concepts and vectors. An
    alias's word is no new concept of an open vocabulary, whichever door reads it."""
    concepts = ["dog"] if aliases else [] if open_vocabulary else ["dog", "cat", "person", "car", "pizza", "tree"]
    with PolarMemClient(server.address) as client:
        for name in ("native", "library"):
            client.create_namespace(
                name, encoder="minilm", open_vocabulary=open_vocabulary, concepts=concepts, aliases=aliases
            )
    wait_for_writer(server, "native")
    notes = caption_notes(40) + ["A puppy sleeps on the couch.", "There are no puppies in the garden."]
    with grpc.insecure_channel(server.address) as channel:
        stub = pb_grpc.MemoryServiceStub(channel)
        answers = [
            stub.Remember(
                pb.RememberRequest(namespace="native", item=pb.ItemInput(kind=TEXT, text=note, metadata={"n": str(i)}))
            )
            for i, note in enumerate(notes)
        ]
    assert remember_stats(server) == {"native": len(notes), "forwarded": 0, "failed": 0}
    timed_before = sum(server.memory.backend.write_times()[1])
    for i, (note, answer) in enumerate(zip(notes, answers)):
        server.memory.remember("library", ItemInput(id=answer.item.id, kind="text", text=note, metadata={"n": str(i)}))
    native_names = server.memory.namespace("native").vocabulary.names
    assert native_names == server.memory.namespace("library").vocabulary.names
    assert len(native_names) > (20 if open_vocabulary else 5)
    if aliases:
        assert "puppy" not in native_names and "dog" in answers[-2].item.has
    dims = {"sem": 384}
    store = server.memory.backend.store
    for answer in answers:
        native = stored_record(server, "native", answer.item.id)
        assert without_times(native) == without_times(stored_record(server, "library", answer.item.id))
        vectors = store.get_vectors("native", answer.item.id, dims)
        assert np.array_equal(vectors["sem"], store.get_vectors("library", answer.item.id, dims)["sem"])
        shown = stub_view(server, "native", answer.item.id)
        assert shown == answer.item  # the answer is the item as GetItem shows it
    assert server.memory.backend.counts("native").items == len(notes)
    # the store times each item write, whichever door wrote it (polarmem_store_write_seconds)
    assert timed_before >= len(notes)
    assert sum(server.memory.backend.write_times()[1]) == timed_before + len(notes)


def stub_view(server, namespace: str, item_id: str) -> pb.Item:
    with grpc.insecure_channel(server.address) as channel:
        return pb_grpc.MemoryServiceStub(channel).GetItem(pb.GetItemRequest(namespace=namespace, id=item_id)).item


def test_a_stored_note_survives_a_restart_and_is_recalled(tmp_path):
    server = PolarMemServer(make_config(tmp_path)).start()
    try:
        with PolarMemClient(server.address) as client:
            client.create_namespace("notes", encoder="minilm", open_vocabulary=True)
        wait_for_writer(server, "notes")
        with grpc.insecure_channel(server.address) as channel:
            stub = pb_grpc.MemoryServiceStub(channel)
            omar = stub.Remember(
                pb.RememberRequest(namespace="notes", item=pb.ItemInput(kind=TEXT, text="Omar does not drink coffee"))
            ).item
            stub.Remember(
                pb.RememberRequest(namespace="notes", item=pb.ItemInput(kind=TEXT, text="Priya drinks tea daily"))
            )
        assert remember_stats(server)["native"] == 2
        assert list(omar.not_has) == ["coffee"] and "omar" in omar.has
    finally:
        server.stop()
    server = PolarMemServer(make_config(tmp_path)).start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = pb_grpc.MemoryServiceStub(channel)
            assert stub.GetItem(pb.GetItemRequest(namespace="notes", id=omar.id)).item == omar
            answer = stub.Recall(pb.RecallRequest(namespace="notes", text="does Omar drink coffee?", explain=True))
            by_id = {hit.id: hit for hit in answer.hits}
            assert by_id[omar.id].s_log == -1  # the note contradicts "coffee": found, and labelled so
    finally:
        server.stop()


def test_the_python_listener_asks_the_core_first(tmp_path, monkeypatch):
    """With the Python listener on the address (front python) the servicer asks the same core
    entry: a note is stored without the library's write path, which stores the rest."""
    server = PolarMemServer(make_config(tmp_path, front="python")).start()
    try:
        with PolarMemClient(server.address) as client:
            client.create_namespace("notes", encoder="minilm", open_vocabulary=True)
            wait_for_writer(server, "notes")
            library_writes: list[str] = []
            library_remember = server.memory.remember_batch

            def counted(ns, items, *args, **kwargs):
                library_writes.extend(item.text for item in items)
                return library_remember(ns, items, *args, **kwargs)

            monkeypatch.setattr(server.memory, "remember_batch", counted)
            note = client.remember("notes", kind="text", text="Omar does not drink coffee")
            assert list(note.not_has) == ["coffee"] and library_writes == []
            stated = client.remember("notes", kind="text", text="a dog", states={"dog": "has"})
            assert "dog" in stated.has and library_writes == ["a dog"]
            assert client.remember("notes", kind="text", text="Omar does not drink coffee").id == note.id
            assert server.memory.backend.counts("notes").items == 2
    finally:
        server.stop()


def test_what_the_core_does_not_store_goes_to_the_library(server):
    """Evidence to verify or score, asserted states, an id already stored and input the library
    refuses are the library's: stored (or refused) in its words; nothing else is lost."""
    with PolarMemClient(server.address) as client:
        client.create_namespace("notes", encoder="none", open_vocabulary=True, spaces=[("vis", DIM)])
    wait_for_writer(server, "notes")
    with grpc.insecure_channel(server.address) as channel:
        stub = pb_grpc.MemoryServiceStub(channel)

        def remember(**item) -> pb.RememberResponse:
            return stub.Remember(pb.RememberRequest(namespace="notes", item=pb.ItemInput(**item)))

        first = remember(kind=TEXT, text="a red bus on the street", vectors={"vis": pb.VectorValue(values=[1.0] * DIM)})
        assert remember_stats(server) == {"native": 1, "forwarded": 0, "failed": 0}
        again = remember(kind=TEXT, text="a red bus on the street", vectors={"vis": pb.VectorValue(values=[1.0] * DIM)})
        assert again.already_stored and again.item == first.item  # the library's already-stored answer
        scored = remember(kind=TEXT, text="a cat", scores={"cat": pb.ConceptScores(p_yes=[0.9] * 4)})
        assert [e.concept for e in scored.item.evidence if e.source == "client"] == ["cat"]
        stated = remember(kind=TEXT, text="a dog", states={"dog": enums_pb2.CONCEPT_STATE_HAS})
        assert "dog" in stated.item.has
        assert remember_stats(server) == {"native": 1, "forwarded": 3, "failed": 0}

        refusals = {
            "id": dict(id="x" * 300, kind=TEXT, text="too long an id"),
            "metadata": dict(kind=TEXT, text="a key too long", metadata={"k" * 300: "v"}),
            "vectors": dict(kind=TEXT, text="a vector too short", vectors={"vis": pb.VectorValue(values=[1.0])}),
            "unknown space": dict(kind=TEXT, text="a space it lacks", vectors={"other": pb.VectorValue(values=[1.0])}),
            "zero vector": dict(kind=TEXT, text="a zero vector", vectors={"vis": pb.VectorValue(values=[0.0] * DIM)}),
            "kind": dict(kind=7, text="no such kind"),
        }
        for field, item in refusals.items():
            with pytest.raises(grpc.RpcError) as refused:
                remember(**item)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, field
        with pytest.raises(grpc.RpcError) as missing:
            stub.Remember(pb.RememberRequest(namespace="absent", item=pb.ItemInput(kind=TEXT, text="x")))
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
        with pytest.raises(grpc.RpcError) as no_item:
            stub.Remember(pb.RememberRequest(namespace="notes"))
        assert no_item.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "item" in no_item.value.details()
    assert remember_stats(server)["native"] == 1
    assert server.memory.backend.counts("notes").items == 3  # nothing refused was stored
    # The RPC series count each Remember once, whichever listener answered it: the native one
    # (the front's count) and the handed-over ones (the library's).
    counted = {
        code: server.metrics.registry.get_sample_value(
            "polarmem_rpc_requests_total", {"method": "Remember", "code": code}
        )
        for code in ("OK", "INVALID_ARGUMENT", "NOT_FOUND")
    }
    assert counted == {"OK": 4, "INVALID_ARGUMENT": len(refusals) + 1, "NOT_FOUND": 1}


def test_a_write_token_is_needed_for_a_native_remember(tmp_path):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        '[tokens.reader]\ntoken = "r-secret"\nrole = "read"\n'
        '[tokens.writer]\ntoken = "w-secret"\nnamespaces = ["notes"]\nrole = "write"\n'
        '[tokens.admin]\ntoken = "a-secret"\nrole = "admin"\n'
    )
    server = PolarMemServer(make_config(tmp_path, tokens_file=str(tokens))).start()
    try:
        with PolarMemClient(server.address, token="a-secret") as client:
            client.create_namespace("notes", encoder="none", open_vocabulary=True)
            client.create_namespace("other", encoder="none", open_vocabulary=True)
        wait_for_writer(server, "notes")
        wait_for_writer(server, "other")
        with grpc.insecure_channel(server.address) as channel:
            stub = pb_grpc.MemoryServiceStub(channel)

            def remember(namespace, text, token):
                return stub.Remember(
                    pb.RememberRequest(namespace=namespace, item=pb.ItemInput(kind=TEXT, text=text)),
                    metadata=(("authorization", f"Bearer {token}"),),
                )

            for namespace, token, code in (
                ("notes", "r-secret", grpc.StatusCode.PERMISSION_DENIED),  # a reader may not write
                ("other", "w-secret", grpc.StatusCode.PERMISSION_DENIED),  # not its namespace
                ("notes", "wrong", grpc.StatusCode.UNAUTHENTICATED),
            ):
                with pytest.raises(grpc.RpcError) as refused:
                    remember(namespace, "a refused note", token)
                assert refused.value.code() == code, (namespace, token)
            assert remember_stats(server) == {"native": 0, "forwarded": 3, "failed": 0}
            remember("notes", "a writer's note", "w-secret")
            remember("other", "an admin's note", "a-secret")
            assert remember_stats(server)["native"] == 2
    finally:
        server.stop()


def test_native_and_library_writes_to_one_namespace_run_together(server):
    """Notes stored by the core from several callers while the library observes stored items:
    the namespace's one write lock serialises them; every write lands and the counts agree."""
    with PolarMemClient(server.address) as client:
        client.create_namespace("notes", encoder="none", open_vocabulary=True)
        seeded = client.remember("notes", kind="text", text="the seed note about a garden")
    wait_for_writer(server, "notes")
    notes = caption_notes(120)
    before = remember_stats(server)
    errors: list[Exception] = []

    def write(part: list[str]) -> None:
        try:
            with grpc.insecure_channel(server.address) as channel:
                stub = pb_grpc.MemoryServiceStub(channel)
                for note in part:
                    stub.Remember(pb.RememberRequest(namespace="notes", item=pb.ItemInput(kind=TEXT, text=note)))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def observe() -> None:
        try:
            for i in range(30):
                server.memory.observe("notes", seeded.id, states={f"word{i}": "has"})
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(notes[i::4],)) for i in range(4)]
    threads.append(threading.Thread(target=observe))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    distinct = len(set(notes))
    after = remember_stats(server)
    assert after["native"] - before["native"] == distinct  # a caption sent twice: the library's already-stored answer
    assert after["forwarded"] - before["forwarded"] == len(notes) - distinct
    assert server.memory.backend.counts("notes").items == distinct + 1
    assert len(server.memory.get_item("notes", seeded.id).evidence) >= 30


def test_the_core_hands_back_where_the_library_must_write(server):
    """No writer where the library's own bookkeeping must see each write: the "calibrated"
    partitioner (its score model refits as scores arrive) and a multi-vector space."""
    with PolarMemClient(server.address) as client:
        client.create_namespace("calibrated", encoder="none", partitioner="calibrated", open_vocabulary=True)
        client.create_namespace("multi", encoder="none", spaces=[("patches", DIM, True)], open_vocabulary=True)
    for name in ("calibrated", "multi"):
        wait_for_writer(server, name)
        answer = server.memory.core.remember(
            pb.RememberRequest(namespace=name, item=pb.ItemInput(kind=TEXT, text="a note the library stores"))
        )
        assert answer is None


def test_with_namespace_labels_a_note_stored_by_the_core_is_counted_under_its_namespace(tmp_path):
    """metrics_namespace_labels: a Remember the front stores itself is counted under its
    namespace (before round 43, under namespace=""); one handed to the library (an id already
    stored) is counted there by the library under the same label."""
    import urllib.request

    server = PolarMemServer(make_config(tmp_path, metrics_namespace_labels=True)).start()
    try:
        with PolarMemClient(server.address) as client:
            client.create_namespace("notes", encoder="minilm")
        wait_for_writer(server, "notes")
        with grpc.insecure_channel(server.address) as channel:
            stub = pb_grpc.MemoryServiceStub(channel)
            notes = caption_notes(3)
            for note in notes + notes[:1]:  # the last: already stored, so the library's answer
                stub.Remember(pb.RememberRequest(namespace="notes", item=pb.ItemInput(kind=TEXT, text=note)))
        assert remember_stats(server) == {"native": 3, "forwarded": 1, "failed": 0}
        assert set(server.fast_front.front.stats()["finished_by_namespace"]) == {"notes"}
        text = urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics").read().decode()
    finally:
        server.stop()
    assert 'polarmem_rpc_requests_total{code="OK",method="Remember",namespace="notes"} 4.0' in text
    assert 'method="Remember",namespace=""' not in text
