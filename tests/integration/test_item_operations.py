"""Issue 32 item 1 over a real socket: ListItems, UpdateItem, ClearNamespace, server-generated
ids with de-duplication by content, metadata in hits, timestamps, and namespaces created on first
use (success and failure paths, each failure naming the field)."""

import json

import grpc
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces.client import PolarMemClient
from servertools import make_config

NOTES = {
    "n1": ("The user likes green tea and does not drink coffee.", {"topic": "drinks"}),
    "n2": ("The user drinks coffee every morning.", {"topic": "drinks"}),
    "n3": ("The garage has no bicycle, only a car.", {"topic": "home"}),
    "n4": ("A bicycle is parked in the hall.", {"topic": "home"}),
}


def code_of(call):
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code(), info.value.details()


@pytest.fixture
def notes(client):
    """An open-vocabulary text namespace (no encoder: the logic alone) holding NOTES."""
    client.create_namespace("notes", spaces=[], encoder="none", open_vocabulary=True)
    for item_id, (text, metadata) in NOTES.items():
        client.remember("notes", id=item_id, kind="text", text=text, metadata=metadata)
    return "notes"


def ids(response):
    return [item.id for item in response.items]


def test_list_items_pages_in_id_order_and_filters(client, notes):
    first = client.list_items(notes, page_size=3)
    assert ids(first) == ["n1", "n2", "n3"] and first.next_page_token == "n3"
    second = client.list_items(notes, page_size=3, page_token=first.next_page_token)
    assert ids(second) == ["n4"] and second.next_page_token == ""
    assert ids(client.list_items(notes, has=["coffee"])) == ["n2"]
    assert ids(client.list_items(notes, not_has=["coffee"])) == ["n1"]
    assert ids(client.list_items(notes, has=["bicycles"])) == ["n4"]  # plural resolved
    assert ids(client.list_items(notes, metadata_equals={"topic": "home"})) == ["n3", "n4"]
    assert ids(client.list_items(notes, kinds=["visual"])) == []
    item = client.list_items(notes, page_size=1).items[0]
    assert item.created_ms > 0 and item.updated_ms >= item.created_ms and dict(item.metadata) == {"topic": "drinks"}


def test_list_items_failures(client, notes, stub):
    code, details = code_of(lambda: client.list_items(notes, has=["unicorn"]))
    assert code == grpc.StatusCode.NOT_FOUND and "unicorn" in details
    code, details = code_of(lambda: stub.ListItems(pb.ListItemsRequest(namespace=notes, page_size=5000)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "page_size" in details
    code, details = code_of(lambda: stub.ListItems(pb.ListItemsRequest(namespace=notes, kinds=[17])))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "kinds" in details
    code, details = code_of(lambda: client.list_items("nope"))
    assert code == grpc.StatusCode.NOT_FOUND and "'nope'" in details


def test_update_item_rereads_text_and_keeps_history(client, notes):
    before = client.get_item(notes, "n2").item
    assert "coffee" in before.has
    response = client.update_item(notes, "n2", text="The user no longer drinks coffee; tea only.")
    assert response.changed and "coffee" in response.item.not_has and "coffee" not in response.item.has
    assert response.item.version == before.version + 1 and response.item.updated_ms >= before.created_ms
    assert response.item.created_ms == before.created_ms
    history = client.get_item(notes, "n2", include_history=True).item.history
    assert history and "coffee" in history[-1].has
    assert ids(client.list_items(notes, not_has=["coffee"])) == ["n1", "n2"]
    response = client.update_item(notes, "n2", metadata={"topic": "habits"})
    assert not response.changed and dict(response.item.metadata) == {"topic": "habits"}
    assert "coffee" in response.item.not_has  # metadata alone re-reads nothing


def test_update_item_keeps_client_evidence(client, notes):
    client.observe(notes, "n4", states={"helmet": "has"})
    item = client.update_item(notes, "n4", text="The hall is empty now.").item
    assert "helmet" in item.has and "bicycle" not in item.has


def test_update_item_failures(client, notes, stub):
    code, details = code_of(lambda: stub.UpdateItem(pb.UpdateItemRequest(namespace=notes, id="n1", text="x")))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "update_mask" in details
    request = pb.UpdateItemRequest(namespace=notes, id="n1", text="x")
    request.update_mask.paths.append("kind")
    code, details = code_of(lambda: stub.UpdateItem(request))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "'kind'" in details
    for blank in ("  ", "\u200b\ufeff"):  # zero-width characters show nothing either (Remember's rule)
        code, details = code_of(lambda: client.update_item(notes, "n1", text=blank))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "new text is empty" in details
    code, details = code_of(lambda: client.update_item(notes, "missing", text="x"))
    assert code == grpc.StatusCode.NOT_FOUND and "'missing'" in details
    code, details = code_of(lambda: client.update_item("nope", "n1", text="x"))
    assert code == grpc.StatusCode.NOT_FOUND and "'nope'" in details


def test_clear_namespace_keeps_settings_and_vocabulary(client, notes):
    concepts = client.list_concepts(notes).total
    assert client.clear_namespace(notes) == 4
    info = client.get_namespace(notes)
    assert info.item_count == 0 and info.config.open_vocabulary and info.concept_count == concepts
    assert ids(client.list_items(notes)) == []
    assert client.clear_namespace(notes) == 0
    client.remember(notes, id="again", kind="text", text="coffee again")
    assert ids(client.list_items(notes, has=["coffee"])) == ["again"]
    code, details = code_of(lambda: client.clear_namespace("nope"))
    assert code == grpc.StatusCode.NOT_FOUND and "'nope'" in details


def test_generated_ids_deduplicate_by_content(client, notes, stub):
    first = stub.Remember(
        pb.RememberRequest(
            namespace=notes, item=pb.ItemInput(kind=2, text="The cat sleeps on the sofa.", metadata={"a": "1"})
        )
    )
    again = stub.Remember(
        pb.RememberRequest(
            namespace=notes, item=pb.ItemInput(kind=2, text="The cat sleeps on the sofa.", metadata={"a": "2"})
        )
    )
    other = stub.Remember(pb.RememberRequest(namespace=notes, item=pb.ItemInput(kind=2, text="The cat is out.")))
    assert first.item.id and not first.already_stored
    assert again.already_stored and again.item.id == first.item.id and dict(again.item.metadata) == {"a": "1"}
    assert other.item.id != first.item.id
    assert client.get_namespace(notes).item_count == len(NOTES) + 2


def test_hits_carry_metadata(client, notes):
    hits = client.recall(notes, required=["coffee"], top_k=4).hits
    assert hits[0].id == "n2" and dict(hits[0].metadata) == {"topic": "drinks"}
    assert [h.id for h in client.recall(notes, required=["bicycle"], metadata_equals={"topic": "home"}).hits][0] == "n4"


def test_namespaces_created_on_first_use(tmp_path):
    server = PolarMemServer(make_config(tmp_path, auto_create_namespaces=True, max_namespaces=2)).start()
    try:
        with PolarMemClient(server.address) as client:
            code, _ = code_of(lambda: client.recall("agent-1", "coffee"))
            assert code == grpc.StatusCode.NOT_FOUND  # reads never create
            client.remember("agent-1", id="a", kind="text", text="no coffee after noon")
            info = client.get_namespace("agent-1")
            assert info.config.open_vocabulary and info.item_count == 1
            assert "coffee" in client.get_item("agent-1", "a").item.not_has  # nothing declared
            client.remember("agent-2", id="a", kind="text", text="coffee")
            code, details = code_of(lambda: client.remember("agent-3", id="a", kind="text", text="x"))
            assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "2 namespaces" in details
    finally:
        server.stop()


def test_namespaces_are_not_created_unless_allowed(client):
    code, details = code_of(lambda: client.remember("agent-1", id="a", kind="text", text="x"))
    assert code == grpc.StatusCode.NOT_FOUND and "'agent-1'" in details


def test_cli_items_update_and_clear(server, notes, capsys):
    from polarmem_server.faces.cli import main

    def run(*argv):
        code = main([str(a) for a in argv])
        return code, capsys.readouterr().out

    conn = ["--address", server.address, "-n", notes]
    code, out = run("items", *conn, "--has", "bicycle", "--json")
    assert code == 0 and [i["id"] for i in json.loads(out)["items"]] == ["n4"]
    code, out = run("items", *conn, "--where", "topic=drinks", "--page-size", 1)
    assert code == 0 and "n1" in out and "--page-token n1" in out
    code, out = run("update", "n1", *conn, "--text", "The user drinks coffee now.", "--json")
    assert code == 0 and "coffee" in json.loads(out)["item"]["has"]
    code, out = run("update", "n1", *conn, "--clear-metadata", "--json")
    assert code == 0 and not json.loads(out)["item"].get("metadata")
    assert run("namespace", "clear", notes, "--address", server.address)[0] != 0  # needs --yes
    code, out = run("namespace", "clear", notes, "--address", server.address, "--yes")
    assert code == 0 and "4 items deleted" in out


def test_async_client_item_operations(server, notes):
    import asyncio

    from polarmem_server.faces.aio_client import AsyncPolarMemClient

    async def run():
        async with AsyncPolarMemClient(server.address) as client:
            page = await client.list_items(notes, page_size=2, not_has=["coffee"])
            updated = await client.update_item(notes, "n3", metadata={"topic": "garage"})
            deleted = await client.clear_namespace(notes)
            return [i.id for i in page.items], dict(updated.item.metadata), deleted

    assert asyncio.run(run()) == (["n1"], {"topic": "garage"}, 4)
