"""MCP input limits and a strict `confirm` over the real transports (issue 49, item 3).

Before: a message nested 100,000 deep killed `polarmem mcp` over stdio (RecursionError, exit 1)
and got HTTP 500 over HTTP; `clear_namespace` took confirm "yes" or 1 as true."""

import asyncio
import json
import select
import subprocess
import sys
import urllib.error
import urllib.request
from contextlib import contextmanager

import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from polarmem_server.api.server import PolarMemServer  # noqa: E402
from polarmem_server.faces.client import PolarMemClient  # noqa: E402
from servertools import DIM, make_config, mcp_http_process  # noqa: E402

TOKEN = "s3cret"
READ_BOUND_S = 60  # a bound on waiting for an answer, so a regression fails instead of hanging


def polarmem_mcp(*args: str) -> list[str]:
    return [sys.executable, "-m", "polarmem_server.faces.cli", "mcp", *args]


@pytest.fixture
def memory_server(tmp_path):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[tokens.admin]\ntoken = "{TOKEN}"\nrole = "admin"\n')
    server = PolarMemServer(
        make_config(tmp_path, engine="lexical", engine_max_delay_ms=1.0, tokens_file=str(tokens))
    ).start()
    with PolarMemClient(server.address, token=TOKEN) as client:
        client.create_namespace("mem", spaces=[("vis", DIM)], encoder="none")
    yield server
    server.stop()


def _answer(process, request: bytes) -> dict | None:
    process.stdin.write(request + b"\n")
    process.stdin.flush()
    ready, _, _ = select.select([process.stdout], [], [], READ_BOUND_S)
    return json.loads(process.stdout.readline()) if ready else None


@contextmanager
def stdio_mcp(*args: str, cwd):
    process = subprocess.Popen(
        polarmem_mcp(*args), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd
    )
    try:
        init = _answer(
            process,
            b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":'
            b'"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}',
        )
        assert init is not None and "result" in init, init
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        yield process
    finally:
        process.kill()
        process.communicate()


async def error_of(client, tool: str, arguments: dict) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, (tool, arguments)
    return result.content[0].text


DEEP = (
    b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"recall","arguments":{"text":'
    + b"[" * 100_000
    + b"]" * 100_000
    + b"}}}"
)


def test_stdio_answers_deep_nesting_and_keeps_serving(memory_server, tmp_path):
    with stdio_mcp("-n", "mem", "--address", memory_server.address, cwd=tmp_path) as process:
        for raw in (DEEP, b"[" * 100_000):
            answer = _answer(process, raw)
            assert answer is not None and answer["error"]["code"] == -32600, answer
        assert process.poll() is None, "polarmem mcp died"
        assert _answer(process, b'{"jsonrpc":"2.0","id":10,"method":"ping"}')["result"] == {}


def test_http_answers_deep_nesting_with_a_json_rpc_error(memory_server, tmp_path):
    with mcp_http_process("-n", "mem", "--address", memory_server.address, cwd=tmp_path) as url:
        request = urllib.request.Request(
            url,
            data=DEEP,
            method="POST",
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
        )
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=READ_BOUND_S)
        assert info.value.code == 400 and json.loads(info.value.read())["error"]["code"] == -32600


def test_clear_namespace_confirm_is_a_strict_boolean(memory_server, tmp_path):
    with PolarMemClient(memory_server.address, token=TOKEN) as grpc_client:
        grpc_client.remember("mem", id="keep", kind="text", text="must survive")
    env_args = ["-n", "mem", "--address", memory_server.address]
    params = StdioServerParameters(
        command=polarmem_mcp()[0], args=polarmem_mcp(*env_args)[1:], env={"POLARMEM_TOKEN": TOKEN}, cwd=str(tmp_path)
    )

    async def run():
        async with Client(params) as client:
            for confirm in ("yes", "true", 1, 1.0, [True], {"v": True}, None):
                await error_of(client, "clear_namespace", {"confirm": confirm})

    asyncio.run(run())
    with PolarMemClient(memory_server.address, token=TOKEN) as grpc_client:
        assert grpc_client.get_item("mem", "keep").item.id == "keep"
