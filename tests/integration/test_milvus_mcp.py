"""`polarmem mcp` in front of `polarmem serve --backend milvus`, as an agent developer runs it: the
MCP SDK's stdio client, text only, a namespace made by `polarmem namespace create` (open
vocabulary), no hand-declared concepts.

What it holds the MCP face to: reads without a token are Bounded over Milvus (a fresh write is
usually not visible yet: bench_milvus_tokens.py saw it 0 times in 40), so an agent that stores a
note and asks for it at once sees it only because `polarmem mcp` carries the token of its own
last write (docs/deployment.md, "Consistency")."""

import asyncio
import uuid

import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from milvus_serve import ServeProcess  # noqa: E402
from servertools import mcp_on_new_namespace  # noqa: E402

pytestmark = pytest.mark.milvus  # the real Milvus server: `make test-milvus`

NOTES = [
    "A brown dog chasing a red ball across the beach.",
    "No dog in the kitchen, only a cat asleep on the chair.",
    "A cyclist riding a bicycle past a parked bus.",
    "Two giraffes eating leaves from a tall tree.",
    "A pizza with mushrooms and olives on a wooden table.",
]


def structured(result) -> dict:
    assert not result.is_error, result.content[0].text
    return result.structured_content


def test_an_agent_reads_each_note_it_just_stored_through_mcp_over_milvus(milvus_server, tmp_path):
    serve = ServeProcess(milvus_server.uri, f"t{uuid.uuid4().hex[:10]}", tmp_path).start()
    try:
        command, *args = mcp_on_new_namespace(serve.address, tmp_path)
        params = StdioServerParameters(command=command, args=args, cwd=str(tmp_path))

        async def run():
            async with Client(params) as client:
                for number, text in enumerate(NOTES):
                    note_id = f"n{number}"
                    structured(await client.call_tool("remember", {"id": note_id, "text": text}))
                    # asked at once, in the words of the note: the note must be there
                    body = structured(await client.call_tool("recall", {"query": text, "top_k": 3}))
                    assert note_id in [hit["id"] for hit in body["hits"]], (note_id, body["hits"])
                    assert structured(await client.call_tool("get_item", {"id": note_id}))["id"] == note_id
                item = structured(await client.call_tool("get_item", {"id": "n1"}))
                assert "cat" in item["has"] and item["not_has"] == ["dog"]
                body = structured(
                    await client.call_tool("recall", {"query": "a dog", "top_k": 5, "include_neutral": True})
                )
                statuses = {hit["id"]: hit["status"] for hit in body["hits"]}
                assert statuses["n0"] == "VERIFIED" and statuses.get("n1") in ("CONFLICT", None)
                listed = structured(await client.call_tool("list_items", {}))
                assert sorted(i["id"] for i in listed["items"]) == [f"n{i}" for i in range(len(NOTES))]

        asyncio.run(run())
    finally:
        assert serve.stop() == 0, serve.log()
