"""The MCP `recall` tool reads a namespace's approximate index where the namespace was created with
one (`polarmem namespace create --ann`): the agent never chooses exactness, the namespace's owner
did. Checked with a real server: the tools' decision per namespace, the same answers as an exact
namespace of the same notes, and a namespace made anew without an index between two recalls (the
tool reads it exactly again instead of failing)."""

import asyncio
import subprocess
import sys

import pytest

pytest.importorskip("mcp")
pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from polarmem_server.api.server import PolarMemServer  # noqa: E402
from polarmem_server.faces.connection import Connection  # noqa: E402
from polarmem_server.faces.mcp_server import PolarMemTools  # noqa: E402
from servertools import make_config  # noqa: E402

NOTES = [
    ("n-coffee", "Maya drinks coffee every morning."),
    ("n-quit", "Maya gave up coffee in May."),
    ("n-allergy", "Leo is allergic to peanuts."),
    ("n-snack", "Leo's favourite snack is rice crackers, with no peanuts."),
    ("n-dog", "Tom has a dog named Rex."),
]
QUESTIONS = ["does Maya drink coffee?", "a snack for Leo with no peanuts", "does Ana have a dog?"]


def polarmem(*args: str) -> list[str]:
    return [sys.executable, "-m", "polarmem_server.faces.cli", *args]


def run_cli(*args: str, cwd) -> None:
    done = subprocess.run(polarmem(*args), capture_output=True, text=True, timeout=120, cwd=str(cwd))
    assert done.returncode == 0, done.stderr


@pytest.fixture
def server(tmp_path):
    server = PolarMemServer(make_config(tmp_path)).start()
    try:
        run_cli("namespace", "create", "plain", "--address", server.address, cwd=tmp_path)
        run_cli("namespace", "create", "indexed", "--ann", "--address", server.address, cwd=tmp_path)
        yield server
    finally:
        server.stop()


def test_the_tools_read_the_index_where_the_namespace_has_one(server):
    async def decide():
        tools = PolarMemTools(Connection(address=server.address))
        try:
            found = {ns: await tools.approximate_for(None, ns) for ns in ("plain", "indexed", "missing")}
            tools.forget_index_of("indexed")
            again = await tools.approximate_for(None, "indexed")
            return found, again
        finally:
            await tools.close()

    found, again = asyncio.run(decide())
    assert found == {"plain": False, "indexed": True, "missing": False} and again is True


def test_answers_match_an_exact_namespace_and_survive_the_index_going(server, tmp_path):
    def structured(result) -> dict:
        assert not result.is_error, result.content[0].text
        return result.structured_content

    async def session(namespace: str, between=None):
        command, *args = polarmem("mcp", "-n", namespace, "--address", server.address)
        async with Client(StdioServerParameters(command=command, args=args, cwd=str(tmp_path))) as client:
            for note_id, text in NOTES:
                structured(await client.call_tool("remember", {"id": note_id, "text": text}))
            first = {q: structured(await client.call_tool("recall", {"query": q})) for q in QUESTIONS}
            if between is None:
                return first, None
            between()  # the namespace deleted and made anew without an index, this session still open
            for note_id, text in NOTES:
                structured(await client.call_tool("remember", {"id": note_id, "text": text}))
            return first, {q: structured(await client.call_tool("recall", {"query": q})) for q in QUESTIONS}

    def remake():
        run_cli("namespace", "delete", "indexed", "--yes", "--address", server.address, cwd=tmp_path)
        run_cli("namespace", "create", "indexed", "--address", server.address, cwd=tmp_path)

    exact, _ = asyncio.run(session("plain"))
    indexed, remade = asyncio.run(session("indexed", remake))

    def answers(bodies):
        return {q: [(hit["id"], hit["answer"]) for hit in body["hits"]] for q, body in bodies.items()}

    assert answers(indexed) == answers(exact) == answers(remade)
    assert indexed["does Maya drink coffee?"]["hits"][0]["answer"].startswith("ANSWERS NO")
