"""Tenant isolation in the pooled layout (every namespace of a dimension in one Milvus collection,
told apart by its ``ns`` field alone; storage/milvus/schema.py), through every RPC that names a
namespace, over a real `polarmem serve --milvus-layout pooled` and the session's real Milvus.

Two tenants hold the same item ids with different contents, concepts and metadata; whatever one
does, the other's answers stay its own. The seams a pooled layout could leak through are the ones
tested: the same primary ids (Milvus rows keyed by namespace + id), searches and counts over a
collection holding both, deletes by expression, and a namespace re-created under a deleted one's
name."""

import uuid

import grpc
import pytest

from milvus_serve import ServeProcess
from polarmem_server.faces.client import PolarMemClient

pytestmark = pytest.mark.milvus  # the real Milvus server: `make test-milvus`

TENANTS = {"alice": ("apple", "an apple on a kitchen table"), "bob": ("boat", "a boat on a calm lake")}


def fill(client, name):
    concept, text = TENANTS[name]
    client.create_namespace(name, encoder="minilm", concepts=[concept], open_vocabulary=False)  # declared only
    for i in range(3):  # the same ids in both tenants
        client.remember(
            name, id=f"item{i}", kind="text", text=f"{text} #{i}", metadata={"owner": name}, states={concept: "has"}
        )
    client.remember(name, id=f"only-{name}", kind="text", text=text, metadata={"owner": name}, states={concept: "has"})


def owners(items):
    return {item.metadata["owner"] for item in items}


def test_pooled_tenants_never_see_each_other(milvus_server, tmp_path):
    server = ServeProcess(milvus_server.uri, f"t{uuid.uuid4().hex[:10]}", tmp_path, layout="pooled").start()
    try:
        with PolarMemClient(server.address) as c:
            for name in TENANTS:
                fill(c, name)
            ids = ["item0", "item1", "item2"]
            for name, (concept, text) in TENANTS.items():
                other = "bob" if name == "alice" else "alice"
                # Recall by text and by vector (the namespace's own sem vector of its first item)
                response = c.recall(name, text=text, top_k=10, include_items=True)
                assert sorted(h.id for h in response.hits) == sorted([*ids, f"only-{name}"])
                assert owners(h.item for h in response.hits) == {name}
                vector = list(c.get_item(name, "item0", include_vectors=True).vectors["sem"].values)
                response = c.recall(name, vectors={"sem": vector}, required=[concept], top_k=10, include_items=True)
                assert response.hits[0].id == "item0" and owners(h.item for h in response.hits) == {name}
                # GetItem: the same id is this tenant's item; the other's only item is not found here
                assert c.get_item(name, "item1").item.metadata["owner"] == name
                with pytest.raises(grpc.RpcError) as missing:
                    c.get_item(name, f"only-{other}")
                assert missing.value.code() == grpc.StatusCode.NOT_FOUND
                # ListItems and ListConcepts: its own items and vocabulary only
                listed = c.list_items(name, page_size=100).items
                assert sorted(i.id for i in listed) == sorted([*ids, f"only-{name}"]) and owners(listed) == {name}
                assert [(x.concept, x.stats.has) for x in c.list_concepts(name).concepts] == [(concept, 4)]
                with pytest.raises(grpc.RpcError) as unknown:  # the other's concept is unknown here
                    c.recall(name, required=[TENANTS[other][0]], top_k=5)
                assert unknown.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                info = c.get_namespace(name)
                assert (info.item_count, info.text_count, info.concept_count) == (4, 4, 1)
            # Forget and UpdateItem in one tenant leave the other's same-id item alone
            c.forget("alice", "item0")
            c.update_item("alice", "item1", metadata={"owner": "alice", "edited": "yes"})
            assert c.get_item("bob", "item0").item.metadata["owner"] == "bob"
            assert "edited" not in c.get_item("bob", "item1").item.metadata
            with pytest.raises(grpc.RpcError) as forgotten:
                c.get_item("alice", "item0")
            assert forgotten.value.code() == grpc.StatusCode.NOT_FOUND
            with pytest.raises(grpc.RpcError) as not_its:  # forgetting the other's only item: not found here
                c.forget("alice", "only-bob")
            assert not_its.value.code() == grpc.StatusCode.NOT_FOUND
            assert (c.get_namespace("alice").item_count, c.get_namespace("bob").item_count) == (3, 4)
            # ClearNamespace and DeleteNamespace: the other tenant keeps everything
            assert c.clear_namespace("bob") == 4
            assert c.get_namespace("alice").item_count == 3
            assert sorted(i.id for i in c.list_items("alice", page_size=100).items) == ["item1", "item2", "only-alice"]
            c.remember(
                "bob", id="item0", kind="text", text="a boat again", metadata={"owner": "bob"}, states={"boat": "has"}
            )
            c.delete_namespace("alice")
            assert c.get_item("bob", "item0").item.metadata["owner"] == "bob"
            assert c.get_namespace("bob").item_count == 1
            # a namespace re-created under a deleted one's name starts empty (its rows went with it)
            c.create_namespace("alice", encoder="minilm", concepts=["apple"], open_vocabulary=False)
            assert c.get_namespace("alice").item_count == 0 and not c.list_items("alice").items
            assert not c.recall("alice", text="an apple", top_k=10).hits
            assert [h.id for h in c.recall("bob", text="a boat", top_k=10).hits] == ["item0"]
    finally:
        assert server.stop() == 0, server.log()


def test_pooled_namespace_created_again_by_another_process(milvus_server):
    """Process b has the namespace open when process a deletes it and creates it again: once b's
    settings refresher has read the records (every 2 s; called here), b reads and writes the new
    namespace, not the old one's rows."""
    import numpy as np

    from polarmem_server.index import SpaceSpec
    from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings
    from polarmem_server.storage.milvus.backend import MilvusBackend
    from polarmem_server.storage.milvus.connection import MilvusSettings

    def memory():
        return Memory(MilvusBackend(MilvusSettings(milvus_server.uri, prefix=prefix, layout="pooled")))

    def settings():
        return NamespaceSettings("n", spaces=(SpaceSpec("vis", 4),), encoder="none")

    def item(item_id):
        return ItemInput(id=item_id, vectors={"vis": np.ones(4, dtype=np.float32)})

    prefix = f"t{uuid.uuid4().hex[:10]}"
    a, b = memory(), memory()
    try:
        a.create_namespace(settings())
        b.remember("n", item("old"))  # b opens the namespace and keeps its handle
        a.delete_namespace("n")
        a.create_namespace(settings())
        b.adopt_records(b.backend.namespaces())  # what b's settings refresher does every 2 s
        b.remember("n", item("new"))
        assert a.get_item("n", "new").id == "new"
        for m in (a, b):
            assert [h.item_id for h in m.recall("n", vectors={"vis": np.ones(4)}, k=10).hits] == ["new"]
            assert m.namespace_counts("n").items == 1
    finally:
        a.close()
        b.close()
