"""`polarmem mcp` end to end with the official MCP SDK's own clients: the stdio client spawning
`polarmem mcp`, and the streamable HTTP client on 127.0.0.1, against a real PolarMem server
(RocksDB in tmp_path, a real scoring engine)."""

import asyncio
import http.server
import socket
import os
import subprocess
import sys
import threading
from contextlib import contextmanager

import pytest

pytest.importorskip("mcp")

import httpx2  # noqa: E402 - the HTTP client the MCP SDK uses

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from polarmem_server.api.server import PolarMemServer  # noqa: E402
from polarmem_server.faces.client import PolarMemClient  # noqa: E402
from servertools import DIM, make_config, mcp_http_process, mcp_on_new_namespace  # noqa: E402

TOKEN = "s3cret"
TOOLS = {
    "remember",
    "recall",
    "observe",
    "update_item",
    "forget",
    "get_item",
    "list_items",
    "clear_namespace",
    "list_concepts",
    "list_namespaces",
    "get_namespace",
}


def polarmem_mcp(*args: str) -> list[str]:
    return [sys.executable, "-m", "polarmem_server.faces.cli", "mcp", *args]


@pytest.fixture
def memory_server(tmp_path):
    """A PolarMem server with the lexical engine and a bearer token; namespaces `mem` and `other`."""
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[tokens]\nadmin = {{ token = "{TOKEN}", namespaces = ["*"], role = "admin" }}\n')
    server = PolarMemServer(
        make_config(tmp_path, engine="lexical", engine_max_delay_ms=1.0, tokens_file=str(tokens))
    ).start()
    with PolarMemClient(server.address, token=TOKEN) as client:
        # closed vocabularies: the tests below count the concepts a note names (an open one would
        # make every content word a concept)
        client.create_namespace("mem", spaces=[("vis", DIM)], encoder="none", open_vocabulary=False)
        client.create_namespace("other", spaces=[("vis", DIM)], encoder="none", open_vocabulary=False)
    yield server
    server.stop()


def structured(result) -> dict:
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def error_of(client, tool: str, arguments: dict) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    return result.content[0].text


def test_an_agent_stores_text_notes_with_no_declared_vocabulary(tmp_path):
    """Issue 31 as an agent developer meets it: a namespace made by `polarmem namespace create`
    (an open vocabulary by default), a server with no scoring engine, the MCP stdio client
    storing text only (no kind, no concepts) and asking negated questions."""
    server = PolarMemServer(make_config(tmp_path)).start()
    try:
        command, *args = mcp_on_new_namespace(server.address, tmp_path)
        params = StdioServerParameters(command=command, args=args, cwd=str(tmp_path))

        async def run():
            async with Client(params) as client:
                notes = {
                    "n1": "User does not drink coffee, only green tea.",
                    "n2": "User drinks coffee every morning before work.",
                    "n3": "A dog catching a frisbee in the park.",
                    "n4": "A dog without a frisbee, asleep by the door.",
                }
                for note_id, text in notes.items():
                    structured(await client.call_tool("remember", {"id": note_id, "text": text}))
                item = structured(await client.call_tool("get_item", {"id": "n1"}))
                assert item["kind"] == "text" and "tea" in item["has"] and item["not_has"] == ["coffee"]
                body = structured(
                    await client.call_tool(
                        "recall",
                        {"query": "a dog without a frisbee", "top_k": 4, "mode": "hard", "include_neutral": True},
                    )
                )
                assert body["constraints"]["required"] == ["dog"] and body["constraints"]["forbidden"] == ["frisbee"]
                assert body["hits"][0]["id"] == "n4" and body["hits"][0]["status"] == "VERIFIED"
                assert body["hits"][-1]["id"] == "n3" and body["hits"][-1]["status"] == "CONFLICT"
                body = structured(
                    await client.call_tool(
                        "recall",
                        {"query": "drinks other than coffee", "mode": "hard", "forbidden": ["coffee"], "top_k": 2},
                    )
                )
                assert [h["id"] for h in body["hits"] if h["status"] == "CONFLICT"] in ([], ["n2"])
                assert body["hits"][0]["id"] != "n2"
                vocabulary = structured(await client.call_tool("list_concepts", {}))
                counts = {c["concept"]: (c["has"], c["not_has"]) for c in vocabulary["concepts"]}
                assert counts["coffee"] == (1, 1) and counts["frisbee"] == (1, 1) and counts["dog"] == (2, 0)

        asyncio.run(run())
    finally:
        server.stop()


def test_stdio_tools_end_to_end(memory_server, tmp_path):
    image = tmp_path / "photo.png"
    image.write_bytes(b"\x89PNG not decoded by a text engine")
    command, *args = polarmem_mcp("-n", "mem", "--address", memory_server.address)
    params = StdioServerParameters(command=command, args=args, env={"POLARMEM_TOKEN": TOKEN}, cwd=str(tmp_path))

    async def run():
        async with Client(params) as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
            item = structured(
                await client.call_tool(
                    "remember",
                    {
                        "id": "note1",
                        "kind": "text",
                        "text": "a dog asleep on the sofa, no cat in the room",
                        "verify_concepts": ["dog", "cat"],
                    },
                )
            )
            assert item["has"] == ["dog"] and item["not_has"] == ["cat"] and set(item["evidence"]) == {"dog", "cat"}
            structured(
                await client.call_tool(
                    "remember",
                    {"id": "note2", "kind": "text", "text": "a cat on the sofa", "verify_concepts": ["dog", "cat"]},
                )
            )

            cut = structured(
                await client.call_tool("recall", {"query": "a dog but no cat", "top_k": 2, "mode": "hard"})
            )
            assert [h["id"] for h in cut["hits"]] == ["note1"] and cut["cut"] == 1  # below the VERIFIED tier: cut
            result = await client.call_tool(
                "recall", {"query": "a dog but no cat", "top_k": 2, "mode": "hard", "include_neutral": True}
            )
            body = structured(result)
            assert body["constraints"] == {"required": ["dog"], "forbidden": ["cat"], "unknown": []}
            assert [h["id"] for h in body["hits"]] == ["note1", "note2"]
            assert body["hits"][0]["status"] == "VERIFIED" and body["hits"][1]["status"] == "CONFLICT"
            assert body["hits"][0]["verification"][0].startswith("HAS(dog) p=")
            assert body["context"].startswith("[1] (id: note1) [Fact Check: VERIFIED] a dog asleep")
            assert "[2] (id: note2) [Fact Check: CONFLICT]" in body["context"]
            assert "[Fact Check: CONFLICT]" in result.content[0].text  # the text an agent reads

            message = await error_of(client, "recall", {"query": "", "required": ["dgo"], "forbidden": ["cat"]})
            assert "'dgo'" in message and "allow_unknown_concepts" in message
            body = structured(
                await client.call_tool(
                    "recall", {"query": "", "required": ["dgo"], "forbidden": ["cat"], "allow_unknown_concepts": True}
                )
            )
            assert body["constraints"]["unknown"] == ["dgo"] and body["constraints"]["did_you_mean"] == {"dgo": ["dog"]}
            assert "mode" in await error_of(client, "recall", {"query": "a dog", "mode": "fuzzy"})  # the schema's enum
            assert "top_k" in await error_of(client, "recall", {"query": "a dog", "top_k": 500})
            assert "query" in await error_of(client, "recall", {})
            recent = structured(
                await client.call_tool(
                    "recall",
                    {
                        "query": "a dog but no cat",
                        "top_k": 2,
                        "mode": "hard",
                        "include_neutral": True,
                        "recency_half_life_s": 3600,
                    },
                )
            )
            assert [h["id"] for h in recent["hits"]] == ["note1", "note2"]  # the tier first, recency within it
            assert "recency_half_life_s" in await error_of(
                client, "recall", {"query": "a dog", "recency_half_life_s": 0}
            )
            message = await error_of(client, "recall", {"query": "a dog", "mode": "soft", "recency_half_life_s": 60})
            assert "recency_half_life_s" in message and "name mode hard or off" in message

            observed = structured(await client.call_tool("observe", {"id": "note2", "states": {"bus": "not_has"}}))
            assert "bus" in observed["item"]["not_has"]
            assert structured(await client.call_tool("get_item", {"id": "note1"}))["text"].startswith("a dog asleep")

            # the image bytes reached the server: the text-only engine refuses them by name
            message = await error_of(
                client, "remember", {"id": "img", "content_path": str(image), "verify_concepts": ["dog"]}
            )
            assert "INVALID_ARGUMENT" in message and "reads text only" in message
            assert "cannot read" in await error_of(client, "remember", {"id": "img", "content_path": "nope.png"})

            # a namespace per call
            structured(
                await client.call_tool(
                    "remember",
                    {"id": "o1", "kind": "text", "text": "a bus", "states": {"bus": "has"}, "namespace": "other"},
                )
            )
            listed = structured(await client.call_tool("list_namespaces", {}))
            assert {(n["name"], n["items"]) for n in listed["namespaces"]} == {("mem", 2), ("other", 1)}
            assert listed["default"] == "mem"
            assert structured(await client.call_tool("get_namespace", {"namespace": "other"}))["items"] == 1

            assert structured(await client.call_tool("forget", {"id": "note2"})) == {"forgotten": "note2"}
            assert "NOT_FOUND" in await error_of(client, "get_item", {"id": "note2"})

    asyncio.run(run())
    with PolarMemClient(memory_server.address, token=TOKEN) as check:  # the tools really wrote to the server
        assert check.get_namespace("mem").item_count == 1 and check.get_namespace("other").item_count == 1


@contextmanager
def files_over_http(folder):
    """A plain HTTP file server on 127.0.0.1 (for content_url)."""
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=str(folder), **k)  # noqa: E731
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.RequestHandlerClass.log_message = lambda *a: None
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def test_http_passes_the_agents_token_through(memory_server, tmp_path):
    (tmp_path / "photo.png").write_bytes(b"\x89PNG not decoded by a text engine")
    with (
        mcp_http_process(
            "-n",
            "mem",
            "--fixed-namespace",
            "--address",
            memory_server.address,
            "--fetch-allow",
            "127.0.0.1",
            cwd=tmp_path,
        ) as url,
        files_over_http(tmp_path) as files,
    ):

        async def run():
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as http_client:
                async with Client(streamable_http_client(url, http_client=http_client)) as client:
                    assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                    item = structured(
                        await client.call_tool(
                            "remember",
                            {
                                "id": "n1",
                                "kind": "text",
                                "text": "two dogs and no cat",
                                "verify_concepts": ["dog", "cat"],
                            },
                        )
                    )
                    assert item["has"] == ["dog"] and item["not_has"] == ["cat"]
                    body = structured(await client.call_tool("recall", {"query": "dogs", "required": ["dog"]}))
                    assert [h["id"] for h in body["hits"]] == ["n1"] and body["hits"][0]["status"] == "VERIFIED"
                    listed = structured(await client.call_tool("list_namespaces", {}))
                    assert [n["name"] for n in listed["namespaces"]] == ["mem"]  # fixed: others are not shown
                    assert "fixed to 'mem'" in await error_of(client, "get_item", {"id": "n1", "namespace": "other"})
                    # over HTTP no local file is read, but a URL is fetched (and its bytes reach the engine)
                    assert "reads no local files" in await error_of(
                        client,
                        "remember",
                        {"id": "img", "content_path": str(tmp_path / "photo.png"), "verify_concepts": ["dog"]},
                    )
                    message = await error_of(
                        client,
                        "remember",
                        {"id": "img", "content_url": f"{files}/photo.png", "verify_concepts": ["dog"]},
                    )
                    assert "reads text only" in message
                    assert "cannot fetch" in await error_of(
                        client,
                        "remember",
                        {"id": "img", "content_url": f"{files}/missing.png", "verify_concepts": ["dog"]},
                    )

            async with Client(url) as anonymous:  # no token: the PolarMem server refuses, the tool says so
                assert "UNAUTHENTICATED" in await error_of(anonymous, "list_namespaces", {})

        asyncio.run(run())


def test_image_content_from_a_path_and_a_url_is_verified(tmp_path):
    from tiny_models import build_tiny_qwen2_vl, png_bytes, require_model_stack

    require_model_stack()
    model = build_tiny_qwen2_vl(tmp_path / "tiny-vlm")
    (tmp_path / "a.png").write_bytes(png_bytes(1))
    (tmp_path / "b.png").write_bytes(png_bytes(2))
    with (
        PolarMemServer(make_config(tmp_path, engine="transformers", model=str(model))) as server,
        files_over_http(tmp_path) as files,
    ):
        with PolarMemClient(server.address) as client:
            client.create_namespace("img", spaces=[("vis", DIM)], encoder="none")
        command, *args = polarmem_mcp("-n", "img", "--address", server.address, "--fetch-allow", "127.0.0.1")
        params = StdioServerParameters(command=command, args=args, cwd=str(tmp_path))

        async def run():
            async with Client(params) as client:
                by_path = structured(
                    await client.call_tool(
                        "remember", {"id": "a", "content_path": "a.png", "verify_concepts": ["dog", "cat", "bus"]}
                    )
                )
                by_url = structured(
                    await client.call_tool(
                        "remember",
                        {"id": "b", "content_url": f"{files}/b.png", "verify_concepts": ["dog", "cat", "bus"]},
                    )
                )
                return by_path, by_url

        by_path, by_url = asyncio.run(run())
        for item in (by_path, by_url):
            assert set(item["evidence"]) == {"dog", "cat", "bus"}
            assert sorted(item["has"] + item["not_has"] + item["uncertain"]) == ["bus", "cat", "dog"]
        assert by_url["uri"] == f"{files}/b.png"
        with PolarMemClient(server.address) as client:
            stored = client.get_item("img", "a").item
            assert stored.model == "tiny-vlm" and all(len(e.p_yes) == 4 for e in stored.evidence)


# --- hostile input and safe defaults (issue 34) ---------------------------------------------

READ_BOUND_S = 60  # a bound on waiting for an answer, so a regression fails instead of hanging


def _answer(process, request: bytes) -> dict | None:
    """Writes one JSON-RPC line to a stdio `polarmem mcp` and reads its answer (None: none came
    within READ_BOUND_S)."""
    import json
    import select

    process.stdin.write(request + b"\n")
    process.stdin.flush()
    ready, _, _ = select.select([process.stdout], [], [], READ_BOUND_S)
    return json.loads(process.stdout.readline()) if ready else None


@contextmanager
def stdio_mcp(*args: str, cwd, env=None):
    process = subprocess.Popen(
        polarmem_mcp(*args), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd, env=env
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
        process.communicate()  # waits and closes the pipes


def test_stdio_answers_malformed_json_rpc_instead_of_dropping_it(memory_server, tmp_path):
    """Before: a tools/call whose params is a string was never answered (the SDK dropped it)."""
    with stdio_mcp("-n", "mem", "--address", memory_server.address, cwd=tmp_path) as process:
        for request, message_id, code in (
            (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"remember"}', 7, -32602),
            (b'{"jsonrpc":"2.0","id":"x","method":"tools/list","params":[1,2]}', "x", -32602),
            (b'{"jsonrpc":"2.0","id":[1],"method":"ping"}', None, -32600),
            (b'{"id":8,"method":"ping"}', 8, -32600),
            (b'not json at all', None, -32700),
            (b'\xff\xfe{', None, -32700),
            (b'[{"jsonrpc":"2.0","id":9,"method":"ping"}]', None, -32600),
        ):
            answer = _answer(process, request)
            assert answer is not None, f"no answer to {request!r}"
            assert answer["id"] == message_id and answer["error"]["code"] == code, (request, answer)
        assert _answer(process, b'{"jsonrpc":"2.0","id":10,"method":"ping"}') == {
            "jsonrpc": "2.0",
            "id": 10,
            "result": {},
        }


def test_content_path_reads_regular_files_only_and_bounded(memory_server, tmp_path):
    """Before: a FIFO froze every tool call (a blocking read on the event loop) and /dev/zero
    was read without limit (1.47 GiB RSS)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    command, *args = polarmem_mcp("-n", "mem", "--address", memory_server.address)
    params = StdioServerParameters(command=command, args=args, env={"POLARMEM_TOKEN": TOKEN}, cwd=str(tmp_path))

    async def run():
        async with Client(params) as client:
            for path in (str(fifo), "/dev/zero"):
                message = await error_of(
                    client, "remember", {"id": "x", "content_path": path, "verify_concepts": ["dog"]}
                )
                assert "not a regular file" in message, message
            listed = structured(await client.call_tool("list_namespaces", {}))  # the loop is not stuck
            assert {n["name"] for n in listed["namespaces"]} == {"mem", "other"}

    asyncio.run(run())


def test_content_over_the_size_limit_is_refused_after_reading_only_the_limit(tmp_path):
    from polarmem_server.faces.content_source import ContentRefused, read_local_file

    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * 1025)
    assert read_local_file(tmp_path / "big.bin", 1025) == b"x" * 1025
    with pytest.raises(ContentRefused, match="over the 1024 byte limit"):
        read_local_file(big, 1024)


def test_content_url_refuses_loopback_and_private_hosts_unless_allowed(tmp_path):
    from polarmem_server.faces.content_source import ContentRefused, FetchPolicy, fetch_url

    (tmp_path / "a.png").write_bytes(b"png")
    with files_over_http(tmp_path) as files:
        for url in (
            f"{files}/a.png",
            "http://169.254.169.254/latest/meta-data/",
            "http://10.0.0.1/x",
            "http://[::1]:1/x",
            "http://0.0.0.0:1/x",
        ):
            with pytest.raises(ContentRefused, match="--fetch-allow"):
                fetch_url(url, FetchPolicy(), 1024, 5.0)
        for bad in ("file:///etc/passwd", "ftp://example.org/x", "http:///x"):
            with pytest.raises(ContentRefused, match="only http"):
                fetch_url(bad, FetchPolicy(), 1024, 5.0)
        allowed = FetchPolicy.parse(["127.0.0.0/8"])
        assert fetch_url(f"{files}/a.png", allowed, 1024, 5.0) == b"png"
        assert fetch_url(f"{files}/a.png", FetchPolicy.parse(["localhost", "127.0.0.1"]), 1024, 5.0) == b"png"
        with pytest.raises(ContentRefused, match="over the 2 byte limit"):
            fetch_url(f"{files}/a.png", allowed, 2, 5.0)


def test_content_url_does_not_follow_redirects(tmp_path):
    """A redirect's target was never checked (it could point at a loopback or metadata address)."""
    from polarmem_server.faces.content_source import ContentRefused, FetchPolicy, fetch_url

    class Redirect(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            self.send_response(302)
            self.send_header("Location", "http://169.254.169.254/")
            self.end_headers()

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        with pytest.raises(ContentRefused, match="redirects are not followed"):
            fetch_url(f"http://127.0.0.1:{httpd.server_address[1]}/x", FetchPolicy.parse(["127.0.0.1"]), 1024, 5.0)
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_http_never_sends_the_processs_own_token(memory_server, tmp_path):
    """Before: a call without Authorization used `polarmem mcp`'s own token: an open proxy."""
    (tmp_path / "token").write_text(TOKEN)
    with mcp_http_process(
        "-n", "mem", "--address", memory_server.address, "--token-file", str(tmp_path / "token"), cwd=tmp_path
    ) as url:

        async def run():
            async with Client(url) as anonymous:
                assert "UNAUTHENTICATED" in await error_of(anonymous, "list_namespaces", {})

        asyncio.run(run())


def test_http_answers_malformed_json_rpc_with_400(memory_server, tmp_path):
    import json
    import urllib.error
    import urllib.request

    with mcp_http_process("-n", "mem", "--address", memory_server.address, cwd=tmp_path) as url:
        for body, code in ((b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"x"}', -32602), (b"{", -32700)):
            request = urllib.request.Request(
                url,
                data=body,
                method="POST",
                headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
            )
            with pytest.raises(urllib.error.HTTPError) as info:
                urllib.request.urlopen(request, timeout=READ_BOUND_S)
            assert info.value.code == 400
            assert json.loads(info.value.read())["error"]["code"] == code


def test_http_beyond_loopback_refuses_to_start_in_front_of_a_server_without_tokens(tmp_path):
    """It refuses before binding anything."""
    with PolarMemServer(make_config(tmp_path)) as open_server:
        child = subprocess.run(
            polarmem_mcp("--transport", "http", "--host", "0.0.0.0", "--port", "0", "--address", open_server.address),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env={k: v for k, v in os.environ.items() if not k.startswith("POLARMEM_")},
        )
    assert child.returncode != 0
    assert "beyond loopback" in child.stderr and "tokens_file" in child.stderr, child.stderr


def test_exposure_check_passes_in_front_of_a_server_that_demands_tokens(memory_server):
    from polarmem_server.faces.connection import Connection
    from polarmem_server.faces.mcp_server import check_exposure, is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")
    check_exposure("0.0.0.0", Connection(address=memory_server.address))  # UNAUTHENTICATED without a token: fine


def test_per_token_clients_are_bounded(tmp_path):
    """Before: one gRPC client per distinct bearer token, never closed."""
    from types import SimpleNamespace

    from polarmem_server.faces.connection import Connection
    from polarmem_server.faces.mcp_server import PolarMemTools

    with PolarMemServer(make_config(tmp_path)) as server:
        tools = PolarMemTools(Connection(address=server.address), own_token=False, max_clients=2)

        async def run():
            for i in range(6):
                ctx = SimpleNamespace(headers={"authorization": f"Bearer agent-{i}"})
                assert await tools.invoke(ctx, "list_namespaces") == []
                assert tools.open_clients <= 2
            await tools.close()
            assert tools.open_clients == 0

        asyncio.run(run())


def test_an_agents_slips_are_tool_errors_that_store_nothing(memory_server, tmp_path):
    """What an agent developer met (session 44's QA through the MCP SDK): a note with no words
    (empty, blank, zero-width spaces) was stored, its id standing in for its text and winning
    recalls on similarity; a misspelt argument (`txt`, `topk`) was ignored, storing an empty note
    or answering five hits; the same words with other metadata answered OK and dropped the
    metadata; a memory server that was not running cost 30 s a call and then said only "Deadline
    Exceeded". Each is now a tool error naming the argument, the stored note or the address."""
    command, *args = polarmem_mcp("-n", "mem", "--address", memory_server.address)
    params = StdioServerParameters(command=command, args=args, env={"POLARMEM_TOKEN": TOKEN}, cwd=str(tmp_path))

    async def run():
        async with Client(params) as client:
            for note in ({}, {"text": ""}):
                assert "text: empty; a note needs its words" in await error_of(client, "remember", note), note
            for note in ({"text": "  \n "}, {"text": "\u200b \u200b \ufeff"}):  # the server's one rule
                assert "text: only whitespace or zero-width" in await error_of(client, "remember", note), note
            assert "txt" in await error_of(client, "remember", {"txt": "a dog on the sofa"})
            assert "topk" in await error_of(client, "recall", {"query": "dog", "topk": 1})
            schemas = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            assert all(schema.get("additionalProperties") is False for schema in schemas.values()), schemas
            assert structured(await client.call_tool("list_items", {}))["items"] == []  # nothing stored
            stored = structured(await client.call_tool("remember", {"text": "a dog on the sofa"}))
            assert stored["id"]
            # the same words again keep one copy; with other metadata they are refused, not dropped
            tagged = {"text": "a cat on the mat", "metadata": {"user": "ana"}}
            first = structured(await client.call_tool("remember", tagged))
            assert structured(await client.call_tool("remember", tagged))["id"] == first["id"]
            assert structured(await client.call_tool("remember", {"text": "a cat on the mat"}))["id"] == first["id"]
            retagged = await error_of(client, "remember", {**tagged, "metadata": {"user": "ben"}})
            assert f"ALREADY_EXISTS: this note is stored already as {first['id']}" in retagged
            assert "update_item" in retagged

    asyncio.run(run())

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        nowhere = f"127.0.0.1:{free.getsockname()[1]}"
    command, *args = polarmem_mcp("-n", "mem", "--address", nowhere, "--timeout", "1")
    params = StdioServerParameters(command=command, args=args, env={"POLARMEM_TOKEN": TOKEN}, cwd=str(tmp_path))

    async def unreachable():
        async with Client(params) as client:
            return await error_of(client, "recall", {"query": "dog"})

    words = asyncio.run(unreachable())
    assert f"UNAVAILABLE: no memory server answers at {nowhere} (is `polarmem serve` running there?)" in words


def test_sigint_ends_a_stdio_session_at_once(memory_server, tmp_path):
    """Before: SIGINT left `polarmem mcp` alive and answering nothing until stdin closed, then a
    KeyboardInterrupt traceback (the SDK reads stdin on a worker thread). Now it ends as SIGTERM
    does."""
    import signal

    with stdio_mcp("-n", "mem", "--address", memory_server.address, cwd=tmp_path) as process:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == -signal.SIGINT


def test_labels_promise_only_what_the_note_holds(tmp_path):
    """Round 45's QA passes through the MCP SDK, as an agent meets them (text only, tool
    defaults, a namespace `polarmem namespace create` makes): each note here was labelled for
    what it does not hold ("Sara lost her phone" VERIFIED for "does Sara have her phone?", "Nadia no
    longer works at Google" ANSWERS NO for "does Nadia work at Meta?"), and round 46's ("Omar has a cat;
    Kai has a dog." VERIFIED for "does Omar have a dog?", "Vega migrated off Redshift" for "does Vega use
    Redshift?"), and round 47's ("Tomas used to play bass" ANSWERS NO for "does Tomas play tennis?"), and
    round 48's ("Hugo's wife Clara teaches piano" VERIFIED for "does Hugo teach piano?")."""
    server = PolarMemServer(make_config(tmp_path)).start()
    try:
        command, *args = mcp_on_new_namespace(server.address, tmp_path)
        params = StdioServerParameters(command=command, args=args, cwd=str(tmp_path))
        notes = [
            "Ana sold her car last year.",
            "The user's neighbour has a dog called Rex.",
            "Sara lost her phone on the train.",
            "Maya replaced her old laptop with a MacBook.",
            "Nadia no longer works at Google; she joined Meta in May.",
            "Tom is looking for a new apartment in Madrid.",
            "Priya's dog died last month.",
            "Leo is allergic to peanuts.",
            "Peanut butter sandwiches are Leo's brother's favourite.",
            "Omar has a cat; Kai has a dog.",
            "Priya and Dev's mother needs a hip replacement.",
            "Vega migrated off Redshift to Snowflake.",
            "Kit is evaluating Dagster but has not decided.",
            "The Vega warehouse is not exposed to the public internet.",
            "Ivan lost his wallet in Berlin, but the police found it.",
            "Tomas used to play bass in a punk band.",
            "Atlas does not support IPv6 yet.",
            "Atlas used to run on AWS before the move to GCP.",
            "Zoe has a mild peanut allergy.",
            "Kestrel migrated its queue from RabbitMQ to SQS.",
            "Jade sold the Tesla and now drives a Corolla.",
            "Jade has a standing desk at work, not at home.",
            "Hugo gave his old laptop to his niece.",
            "I no longer use Slack; we moved to Teams.",
            "Carmen is waiting for a hip replacement.",
            "Carmen tested negative for COVID-19 last week.",
            "Vega owns the billing dashboards.",
            "Kit and his cousin Sami own a food truck.",
            "Rafa's wife Elena teaches piano at the conservatory.",
            "Bo visited Lin, who keeps bees.",
            "Osprey has no staging environment.",
            "Osprey doesn't support GraphQL, only REST.",
        ]
        # (question, the label the first note may carry, or None: "no verified evidence" heads the context)
        asked = [
            ("did Ana travel last year?", None),
            ("does the user have a dog?", None),
            ("does Sara have her phone?", "ANSWERS NO"),
            ("does Maya have an old laptop?", "ANSWERS NO"),
            ("does Maya have a MacBook?", "VERIFIED"),
            ("does Nadia work at Google?", "ANSWERS NO"),
            ("does Nadia work at Meta?", None),
            ("does Tom have an apartment in Madrid?", None),
            ("does Priya have a dog?", "ANSWERS NO"),
            # the brother's favourite was Leo's: VERIFIED, and it superseded the allergy
            ("does Leo like peanut butter?", "ANSWERS NO"),
            # Kai's dog is not Omar's (round 46)
            ("does Omar have a dog?", None),
            ("when did Priya have her hip replacement?", None),
            ("does Vega use Redshift?", "ANSWERS NO"),
            ("does Kit use Dagster?", None),
            ("is the Vega warehouse public?", "ANSWERS NO"),
            ("does Ivan have his wallet?", None),
            # round 47: a verb denied of another thing answers nothing of this one
            ("does Tomas play tennis?", None),
            ("does Tomas play bass?", "ANSWERS NO"),
            ("does Atlas support OAuth?", None),
            ("does Atlas support IPv6?", "ANSWERS NO"),
            ("does Atlas run on GCP?", None),
            ("does Atlas run on AWS?", "ANSWERS NO"),
            ("is Zoe allergic to peanuts?", "VERIFIED"),
            ("does Kestrel use RabbitMQ?", "ANSWERS NO"),
            ("does Kestrel use SQS?", "VERIFIED"),
            ("does Jade drive a Corolla?", "VERIFIED"),
            ("does Jade use Windows at home?", None),
            ("does Jade have a standing desk at home?", "ANSWERS NO"),
            ("does Hugo have his old laptop?", "ANSWERS NO"),
            # a question a pronoun asks names no subject: Slack is what it asks about
            ("do I use Slack?", "ANSWERS NO"),
            ("has Carmen had a hip replacement?", None),
            ("does Carmen have COVID-19?", "ANSWERS NO"),
            # round 48: what a note says of someone else (a relative, a "who" clause) is theirs
            ("does Rafa teach piano?", None),
            # "own" is a verb of having, as "have" is: no concept, however a note writes it
            ("does Sami own a food truck?", "VERIFIED"),
            ("does Elena teach piano?", "VERIFIED"),
            ("does Bo keep bees?", None),
            ("does Lin keep bees?", "VERIFIED"),
            # a thing denied with another modifier answers nothing of this one
            ("does Osprey have a production environment?", None),
            ("does Osprey support GraphQL?", "ANSWERS NO"),
        ]

        async def run():
            async with Client(params) as client:
                for text in notes:
                    structured(await client.call_tool("remember", {"text": text}))
                for question, label in asked:
                    context = structured(await client.call_tool("recall", {"query": question}))["context"]
                    if label is None:
                        assert context.startswith("(no verified evidence for:"), (question, context)
                    else:
                        assert f"[Fact Check: {label}" in context.splitlines()[0], (question, context)
                    assert "SUPERSEDED" not in context, (question, context)

        asyncio.run(run())
    finally:
        server.stop()
