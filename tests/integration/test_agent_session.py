"""An agent session end to end (issue 32 item 5): the official MCP SDK client against `polarmem mcp`,
over stdio and over streamable HTTP, scripted with no LLM.

The namespace is made by `polarmem namespace create NAME` (CLI; an open vocabulary by default) —
or, second run, created by the first `remember` on a server that creates namespaces on first use —
and its vocabulary is never declared by hand. 50 notes with negations and exceptions from
tests/data/agent_notes (the ones the 30 held-out queries are about), 30 natural-language queries
sent as the model would send them (`query` text only: constraints parsed from it), each top-3
asserted: no note whose labels contradict the query (a required noun negated, a forbidden one
affirmed), and the top hit a note affirming a required noun. Then observe / update_item / forget /
list_items / clear_namespace. The session counts its tool calls; the recall calls' server CPU is
measured from the server process (benchmarks/agent_first_recall.py reports both)."""

import asyncio
import json
import os
import subprocess
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import httpx2  # noqa: E402 - the HTTP client the MCP SDK uses

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from polarmem_server.faces.client import PolarMemClient  # noqa: E402
from servertools import mcp_http_process, mcp_on_new_namespace, polarmem_command, stop_process  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "agent_notes"
NOTES_WANTED = 50
QUERIES_WANTED = 30
# Contradicting notes the memory shows without the CONFLICT label (a misread negation): none since
# issue 52 ("isn't keen on" and "not available" read as NOT_HAS). Asserted exactly, so a new miss shows.
KNOWN_MISREADS: dict[str, list[str]] = {}
MIN_ANSWERED_AT_1 = 26  # queries whose top hit affirms a required noun without contradicting: 26 of 30 with
# mode answer, the default since issue 52 (27 with mode hard): a note verifying nothing asked ranks by
# similarity, so a more similar note that lacks the noun ("Breakfast: oatmeal" for "snacks with no
# peanuts") may come first, labelled RELATED


def session_data() -> tuple[list[dict], list[dict]]:
    """The 30 held-out queries and 50 notes: for each query in turn, its next note answering it (a
    required noun affirmed, nothing contradicted), then its next note contradicting it, round
    after round until 50 (fixed by the files' order). So every query meets both an answer and a
    trap in the memory."""
    notes = [json.loads(line) for line in (DATA / "notes.jsonl").read_text().splitlines()]
    queries = [json.loads(line) for line in (DATA / "queries.jsonl").read_text().splitlines()]
    queries = [q for q in queries if q["split"] == "heldout"][:QUERIES_WANTED]
    ordered = {}
    for q in queries:
        answers = [n for n in notes if set(q["required"]) & set(n["affirmed"]) and not contradicts(n, q)]
        traps = [n for n in notes if contradicts(n, q)]
        ordered[q["id"]] = [
            n
            for pair in zip(answers + [None] * len(traps), traps + [None] * len(answers))
            for n in pair
            if n is not None
        ]
    chosen: dict[str, dict] = {}
    depth = 0
    while len(chosen) < NOTES_WANTED and any(len(o) > depth for o in ordered.values()):
        for q in queries:
            if len(ordered[q["id"]]) > depth and len(chosen) < NOTES_WANTED:
                note = ordered[q["id"]][depth]
                chosen.setdefault(note["id"], note)
        depth += 1
    return list(chosen.values()), queries


def contradicts(note: dict, query: dict) -> bool:
    return bool(set(query["required"]) & set(note["negated"]) or set(query["forbidden"]) & set(note["affirmed"]))


class Session:
    """The scripted agent: every tool call counted."""

    def __init__(self, client) -> None:
        self.client = client
        self.calls: dict[str, int] = {}

    async def call(self, tool: str, arguments: dict) -> dict:
        self.calls[tool] = self.calls.get(tool, 0) + 1
        result = await self.client.call_tool(tool, arguments)
        assert not result.is_error, f"{tool}: {result.content[0].text}"
        return result.structured_content

    async def error(self, tool: str, arguments: dict) -> str:
        result = await self.client.call_tool(tool, arguments)
        assert result.is_error
        return result.content[0].text


async def agent_session(client) -> dict:
    """The session; returns the tool calls it made (by tool) and the recall figures."""
    session = Session(client)
    notes, queries = session_data()
    by_id = {note["id"]: note for note in notes}
    assert len(notes) == NOTES_WANTED and len(queries) == QUERIES_WANTED

    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert {"remember", "recall", "observe", "update_item", "forget", "list_items", "clear_namespace"} <= set(tools)
    recall_schema = tools["recall"].input_schema["properties"]
    assert recall_schema["top_k"]["maximum"] == 50 and "query" not in tools["recall"].input_schema.get("required", [])
    assert all(tool.output_schema for tool in tools.values())

    for note in notes:  # the note's id rides in metadata; the memory makes its own id
        stored = await session.call("remember", {"text": note["text"], "metadata": {"note": note["id"]}})
        by_id[note["id"]]["memory_id"] = stored["id"]
    again = await session.call("remember", {"text": notes[0]["text"]})  # de-duplicated by content
    assert again["id"] == notes[0]["memory_id"]
    note_of = {note["memory_id"]: note for note in notes}

    recall_calls_before = session.calls.get("recall", 0)
    contradicting, answered = {}, 0
    for query in queries:  # the text a model would send; the constraints are parsed from it
        body = await session.call("recall", {"query": query["query"], "top_k": 3})
        top = [note_of[hit["id"]] for hit in body["hits"][:3]]
        assert all(hit["metadata"]["note"] == note_of[hit["id"]]["id"] for hit in body["hits"])  # metadata in hits
        assert all(f"(id: {hit['id']})" in body["context"] for hit in body["hits"])  # ids in the model's text
        # a contradicting note may be shown (mode answer cuts nothing), but only labelled CONFLICT
        bad = [
            note["id"]
            for note, hit in zip(top, body["hits"])
            if contradicts(note, query) and hit["status"] != "CONFLICT"
        ]
        if bad:
            contradicting[query["id"]] = bad
        answered += (
            bool(top) and bool(set(query["required"]) & set(top[0]["affirmed"])) and not contradicts(top[0], query)
        )
    assert contradicting == KNOWN_MISREADS, contradicting
    assert answered >= MIN_ANSWERED_AT_1, answered
    recall_calls = session.calls["recall"] - recall_calls_before

    # observe: the agent learns something a note did not say
    first = notes[0]
    observed = await session.call("observe", {"id": first["memory_id"], "states": {"umbrella": "not_has"}})
    assert "umbrella" in observed["item"]["not_has"]
    # update_item: a correction re-reads the note's words
    coffee = next(note for note in notes if "coffee" in note["affirmed"])
    updated = await session.call(
        "update_item", {"id": coffee["memory_id"], "text": "The user does not drink coffee any more."}
    )
    assert "coffee" in updated["item"]["not_has"] and "coffee" not in updated["item"]["has"]
    assert updated["item"]["updated_ms"] >= updated["item"]["created_ms"]
    body = await session.call(
        "recall", {"query": "coffee", "required": ["coffee"], "top_k": 5, "include_neutral": True}
    )
    assert all(hit["id"] != coffee["memory_id"] or hit["status"] == "CONFLICT" for hit in body["hits"])
    # list_items: by concept state and by metadata, paged
    listed = await session.call("list_items", {"not_has": ["coffee"]})
    assert coffee["memory_id"] in [item["id"] for item in listed["items"]]
    listed = await session.call("list_items", {"metadata_equals": {"note": first["id"]}})
    assert [item["id"] for item in listed["items"]] == [first["memory_id"]]
    page = await session.call("list_items", {"page_size": 20})
    seen = [item["id"] for item in page["items"]]
    while page["next_page_token"]:
        page = await session.call("list_items", {"page_size": 20, "page_token": page["next_page_token"]})
        seen += [item["id"] for item in page["items"]]
    assert seen == sorted(note["memory_id"] for note in notes)
    # forget
    await session.call("forget", {"id": first["memory_id"]})
    assert "NOT_FOUND" in await session.error("get_item", {"id": first["memory_id"]})
    # clear: every item goes, the namespace stays
    assert "confirm" in await session.error("clear_namespace", {"confirm": False})
    cleared = await session.call("clear_namespace", {"confirm": True})
    assert cleared["items_deleted"] == NOTES_WANTED - 1
    assert (await session.call("list_items", {}))["items"] == []
    assert (await session.call("get_namespace", {}))["open_vocabulary"] is True
    return {"tool_calls": session.calls, "recall_calls_for_30_queries": recall_calls, "answered_at_1": answered}


polarmem = polarmem_command


@contextmanager
def polarmem_server(tmp_path, *flags: str):
    """`polarmem serve` as its own process (its CPU time is what the benchmark reads)."""
    process = subprocess.Popen(
        polarmem(
            "serve",
            "--address",
            "127.0.0.1:0",
            "--data-dir",
            str(tmp_path / "data"),
            "--metrics-port",
            "-1",
            "--log-level",
            "INFO",
            *flags,
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=str(tmp_path),
        env={k: v for k, v in os.environ.items() if not k.startswith("POLARMEM_")},
    )
    drain = threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True)
    try:
        address = None
        for line in process.stdout:
            if "listening on " in line or "serving on " in line:
                address = line.split(" on ")[1].split()[0].strip().rstrip(",")
                break
        assert address, "the server did not start"
        drain.start()  # keep the pipe drained
        with PolarMemClient(address) as client:
            client.wait_ready(60)
        yield process, address
    finally:
        stop_process(process)  # the drain thread reads its pipe
        if drain.is_alive() or drain.ident is not None:
            drain.join(10)
        process.stdout.close()


def test_agent_session_over_stdio(tmp_path):
    with polarmem_server(tmp_path) as (_, address):
        command, *args = mcp_on_new_namespace(address, tmp_path, "agent")
        params = StdioServerParameters(command=command, args=args, cwd=str(tmp_path))

        async def run():
            async with Client(params) as client:
                return await agent_session(client)

        figures = asyncio.run(run())
        assert figures["recall_calls_for_30_queries"] == QUERIES_WANTED  # one call per query, no retries


def test_agent_session_over_http_with_a_namespace_created_on_first_use(tmp_path):
    with polarmem_server(tmp_path, "--auto-create-namespaces", "true") as (_, address):
        with mcp_http_process("-n", "agent-7", "--address", address, cwd=str(tmp_path)) as url:

            async def run():
                async with httpx2.AsyncClient(timeout=120) as http_client:
                    async with Client(streamable_http_client(url, http_client=http_client)) as client:
                        return await agent_session(client)

            figures = asyncio.run(run())
            assert figures["recall_calls_for_30_queries"] == QUERIES_WANTED
