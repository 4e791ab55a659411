"""What only a shared backend has to show, against a real Milvus standalone server: processes
that share nothing but Milvus agree on concept ids and see each other's acknowledged writes;
shapes Milvus cannot hold are refused clearly. (Faults: test_milvus_faults.py.)"""

import threading
import time
import uuid

import pytest

from polarmem_server.errors import InvalidArgument
from polarmem_server.index import SpaceSpec
from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings

pytestmark = pytest.mark.milvus  # the real Milvus server: `make test-milvus`

DIM = 4


def backend(uri, prefix, timeout_s=10.0):
    from polarmem_server.storage.milvus.backend import MilvusBackend
    from polarmem_server.storage.milvus.connection import MilvusSettings

    return MilvusBackend(MilvusSettings(uri, prefix=prefix, timeout_s=timeout_s))


@pytest.fixture
def prefix():
    return f"t{uuid.uuid4().hex[:10]}"


def create(memory, name="n"):
    memory.create_namespace(NamespaceSettings(name, spaces=(SpaceSpec("vis", DIM),), encoder="none", concepts=("dog",)))


def test_two_processes_adding_concepts_at_once_agree(milvus_server, prefix):
    first = Memory(backend(milvus_server.uri, prefix))
    create(first)
    backends = [backend(milvus_server.uri, prefix) for _ in range(3)]
    answers, errors = {}, []
    names = {0: ["zebra", "giraffe", "Zebras"], 1: ["giraffe", "okapi"], 2: ["okapi", "zebra", "lion"]}

    def allocate(i):
        try:
            answers[i] = dict(zip(names[i], backends[i].allocate_concepts("n", names[i])))
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=allocate, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    bound = dict((name, cid) for cid, name in backends[0].concepts("n"))
    assert sorted(bound.values()) == list(range(len(bound)))  # dense: what the vocabulary needs
    assert set(bound) == {"dog", "zebra", "giraffe", "okapi", "lion"}
    for i, got in answers.items():
        for name, cid in got.items():
            assert bound[name.rstrip("s").lower()] == cid, (i, name)
    for b in backends:
        b.close()
    first.close()


def test_an_acknowledged_write_is_seen_by_the_next_recall_of_another_process(milvus_server, prefix):
    writer = Memory(backend(milvus_server.uri, prefix))
    create(writer)
    reader = Memory(backend(milvus_server.uri, prefix))  # shares nothing with `writer` but Milvus
    for i in range(5):
        writer.remember("n", ItemInput(id=f"i{i}", vectors={"vis": [1, i, 0, 0]}, states={"dog": "has"}))
        hits = reader.recall("n", vectors={"vis": [1, 0, 0, 0]}, required=["dog"], k=10).hits
        assert [h.item_id for h in hits] == [f"i{j}" for j in range(i + 1)]
    writer.observe("n", "i0", states={"dog": "not_has"})
    assert reader.recall("n", vectors={"vis": [1, 0, 0, 0]}, required=["dog"], k=10).hits[-1].item_id == "i0"
    writer.forget("n", "i1")
    assert "i1" not in [h.item_id for h in reader.recall("n", vectors={"vis": [1, 0, 0, 0]}, k=10).hits]
    writer.close()
    reader.close()


def test_namespace_shapes_milvus_cannot_hold_are_refused_clearly(milvus_server, prefix):
    memory = Memory(backend(milvus_server.uri, prefix))
    with pytest.raises(InvalidArgument, match="one single-vector space"):
        memory.create_namespace(
            NamespaceSettings("two", spaces=(SpaceSpec("a", DIM), SpaceSpec("b", DIM)), encoder="none")
        )
    assert memory.list_namespaces() == []
    memory.close()


def test_bad_uri_is_named():
    from polarmem_server.storage.milvus.connection import MilvusSettings

    with pytest.raises(InvalidArgument, match="milvus uri"):
        MilvusSettings("127.0.0.1:19530")


def test_a_process_uses_concepts_another_process_added(milvus_server, prefix):
    first = Memory(backend(milvus_server.uri, prefix))
    create(first)
    second = Memory(backend(milvus_server.uri, prefix))
    # each binds a DIFFERENT new concept: "lion" is id 2 in the backend, not the next id of second's vocabulary
    first.remember("n", ItemInput(id="z", vectors={"vis": [1, 0, 0, 0]}, states={"zebra": "has"}))
    second.remember("n", ItemInput(id="l", vectors={"vis": [0, 1, 0, 0]}, states={"lion": "has"}))
    assert [h.item_id for h in second.recall("n", required=["zebra"], k=1).hits] == ["z"]  # unknown term: reload
    assert [h.item_id for h in first.recall("n", text="a lion", vectors={"vis": [0, 1, 0, 0]}, k=1).hits] == ["l"]
    record = first.get_item("n", "l")  # names an id first never bound itself
    names = first.namespace("n").vocabulary.name
    assert [(names(ev.concept_id), ev.state) for ev in record.evidence] == [("lion", 1)]
    for memory in (first, second):
        assert dict((n, i) for i, n in enumerate(memory.namespace("n").vocabulary.names)) == {
            "dog": 0,
            "zebra": 1,
            "lion": 2,
        }
    first.close()
    second.close()


def test_a_process_serves_a_namespace_another_process_created(milvus_server, prefix):
    first = Memory(backend(milvus_server.uri, prefix))
    second = Memory(backend(milvus_server.uri, prefix))  # started before the namespace existed
    create(first, "later")
    second.remember("later", ItemInput(id="a", vectors={"vis": [1, 0, 0, 0]}, states={"dog": "has"}))
    assert [h.item_id for h in first.recall("later", required=["dog"], k=1).hits] == ["a"]
    assert [n.name for n in second.list_namespaces()] == ["later"]
    first.close()
    second.close()


def test_settings_changed_through_one_process_reach_the_others(milvus_server, prefix):
    first = Memory(backend(milvus_server.uri, prefix), settings_refresh_s=0.5)
    create(first)
    second = Memory(backend(milvus_server.uri, prefix), settings_refresh_s=0.5)
    assert second.namespace("n").rule.recall_mode == "hard"
    assert "polarmem-settings-refresh" in second.daemons.names()
    assert second.adopt_records(second.backend.namespaces()) == 0  # nothing changed: nothing adopted
    started = time.monotonic()
    first.update_namespace(
        "n", {"partitioner": "auto", "declared_accuracy": 0.95, "kappa": 0.5, "concepts": ("dog", "cat")}
    )
    while second.namespace("n").settings.kappa != 0.5:
        assert time.monotonic() - started < 30, "the other process never saw the change"
        time.sleep(0.1)
    seen_after = time.monotonic() - started
    settings = second.namespace("n").settings
    assert settings.declared_accuracy == 0.95 and settings.partitioner == "auto"
    assert second.namespace("n").rule.recall_mode == "strict"  # its rule re-chosen from the new knowledge
    assert "cat" in second.namespace("n").vocabulary.names  # declared concepts bound there too
    assert seen_after < 10, seen_after
    # its own later change is not overwritten by an older listing
    second.update_namespace("n", {"kappa": 0.25})
    assert first.namespace("n").settings.kappa in (0.5, 0.25)
    time.sleep(2)
    assert second.namespace("n").settings.kappa == 0.25 and first.namespace("n").settings.kappa == 0.25
    # namespaces created and deleted elsewhere are listed and unlisted without a use
    create(first, "fresh")
    first.delete_namespace("n")
    deadline = time.monotonic() + 30
    while [ns.name for ns in second.list_namespaces()] != ["fresh"]:
        assert time.monotonic() < deadline, [ns.name for ns in second.list_namespaces()]
        time.sleep(0.1)
    first.close()
    second.close()
