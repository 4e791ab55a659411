"""Answers the JSON-RPC messages the MCP SDK would drop without a word.

The SDK validates each incoming message against its JSON-RPC models; one that fails (bad JSON,
`params` that is a string, an `id` that is a list, ...) is logged and dropped, so the client
waits for an answer forever. This gate sees every message before the SDK: a malformed request
gets the JSON-RPC error the specification asks for (-32700 parse error, -32600 invalid request,
-32602 invalid params), with the request's id when it has a usable one. Notifications (no id)
get no answer, as JSON-RPC requires; a client does not wait for one.

It also bounds what one message may be: nested at most ``MAX_NESTING`` deep (a line of 100,000
"[" took ``json.loads`` to a RecursionError that ended ``polarmem mcp`` over stdio and answered
HTTP 500, issue 49) and at most ``MAX_MESSAGE_BYTES`` long; both answer a JSON-RPC error.

Used by both transports: stdio (``gated_stdio``, line by line) and streamable HTTP
(``JsonRpcGate``, an ASGI middleware, body by body).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
MAX_ERROR_DETAIL_CHARS = 200
# What JSON counts as whitespace. str.strip() also strips what Unicode calls space, the ASCII
# separators \x1c-\x1f among them, so a line of "\x1e" passed for blank and went unanswered.
JSON_WHITESPACE = " \t\r\n"
# No tool argument needs more than a few levels (metadata is flat); 64 leaves room and stays far
# below the recursion limits of json and pydantic.
MAX_NESTING = 64
MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # stdio; HTTP has its own (max_body_bytes)
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')


def nesting_depth(raw: str | bytes, stop_at: int = MAX_NESTING) -> int:
    """How deep arrays and objects nest in `raw` (strings skipped), counted without parsing;
    stops counting past `stop_at` (and returns an upper bound when that cannot be reached)."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    opened = text.count("[") + text.count("{")
    if opened <= stop_at:
        return opened  # an upper bound, and within the limit: no need to scan
    depth = deepest = 0
    for token in _JSON_TOKEN.finditer(text):
        char = token.group()[0]
        if char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop_at:
                    return deepest
        elif char in "]}":
            depth -= 1
    return deepest


def _usable_id(data: dict) -> int | str | None:
    value = data.get("id")
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _error(message_id: int | str | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message_id, "error": {"code": code, "message": message[:MAX_ERROR_DETAIL_CHARS]}}


def malformed_reply(raw: str | bytes) -> dict[str, Any] | None:
    """The JSON-RPC error answering ``raw`` when the SDK would drop it unanswered; None when the
    SDK takes it (valid) or when no answer is due (a malformed notification)."""
    if len(raw) > MAX_MESSAGE_BYTES:
        return _error(None, INVALID_REQUEST, f"Invalid Request: the message is over {MAX_MESSAGE_BYTES} bytes")
    if nesting_depth(raw) > MAX_NESTING:
        return _error(
            None, INVALID_REQUEST, f"Invalid Request: the message nests arrays / objects more than {MAX_NESTING} deep"
        )
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return _error(None, PARSE_ERROR, f"Parse error: the message is not JSON ({exc})")
    except RecursionError:  # a backstop: nesting_depth should have answered first
        return _error(None, INVALID_REQUEST, "Invalid Request: the message nests too deep")
    if isinstance(data, dict) and "method" in data and "id" in data and _usable_id(data) is None:
        # the SDK would take it for a notification (no answer) while the client waits for one
        return _error(None, INVALID_REQUEST, "Invalid Request: 'id' must be a string or an integer")
    try:
        types.jsonrpc_message_adapter.validate_json(raw, by_name=False)  # exactly as the SDK judges it
        return None
    except Exception:  # noqa: BLE001 - pydantic's ValidationError: judged below
        pass
    if not isinstance(data, dict):
        return _error(
            None, INVALID_REQUEST, "Invalid Request: send one JSON-RPC object per message (batches are not supported)"
        )
    if "method" in data and "id" not in data:
        return None  # a notification: JSON-RPC forbids answering it
    message_id = _usable_id(data)
    if data.get("jsonrpc") != "2.0":
        return _error(message_id, INVALID_REQUEST, "Invalid Request: 'jsonrpc' must be \"2.0\"")
    if not isinstance(data.get("method"), str):
        if "result" in data or "error" in data:
            return None  # a malformed response to us: nobody waits on it
        return _error(message_id, INVALID_REQUEST, "Invalid Request: 'method' must be a string")
    if "params" in data and not isinstance(data["params"], dict):
        return _error(
            message_id,
            INVALID_PARAMS,
            f"Invalid params: 'params' of {data['method'][:60]!r} must be an object, "
            f"got {type(data['params']).__name__}",
        )
    if message_id is None:
        return _error(None, INVALID_REQUEST, "Invalid Request: 'id' must be a string or an integer")
    return _error(
        message_id, INVALID_PARAMS, f"Invalid params for {data['method'][:60]!r}: they do not match the method's schema"
    )


class _GatedStdin:
    """The lines of stdin the SDK can take; the others are answered on stdout at once."""

    def __init__(self, stdin: Any, stdout: _LockedStdout) -> None:
        self._stdin, self._stdout = stdin, stdout

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._stdin:
            if not line.strip(JSON_WHITESPACE):
                continue  # a blank line is no message
            reply = malformed_reply(line)
            if reply is None:
                yield line
            elif "error" in reply:
                await self._stdout.write(json.dumps(reply) + "\n")
                await self._stdout.flush()


class _LockedStdout:
    """stdout shared by the SDK's writer and the gate: one lock, so lines never interleave."""

    def __init__(self, stdout: Any) -> None:
        self._stdout, self._lock = stdout, anyio.Lock()

    async def write(self, text: str) -> None:
        async with self._lock:
            await self._stdout.write(text)

    async def flush(self) -> None:
        async with self._lock:
            await self._stdout.flush()


@asynccontextmanager
async def gated_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """``mcp.server.stdio.stdio_server`` with every malformed request answered."""
    import sys
    from io import TextIOWrapper

    from mcp.server.stdio import stdio_server

    # As the SDK does for its default streams: UTF-8 over the binary buffers.
    stdin = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    stdout = _LockedStdout(anyio.wrap_file(TextIOWrapper(sys.stdout.buffer, encoding="utf-8")))
    async with stdio_server(stdin=_GatedStdin(stdin, stdout), stdout=stdout) as streams:  # type: ignore[arg-type]
        yield streams


# The ASGI callable's types, as the spec (and Starlette) write them.
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class JsonRpcGate:
    """ASGI middleware in front of the SDK's streamable HTTP app: a POST whose body is a request
    the SDK would drop gets HTTP 400 with the JSON-RPC error; a body over ``max_body_bytes`` gets
    413 before it is read whole."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app, self.max_body_bytes = app, max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_body_bytes:
                await _respond(
                    send, 413, _error(None, INVALID_REQUEST, f"the request is over {self.max_body_bytes} bytes")
                )
                return
        reply = malformed_reply(body) if body.strip() else _error(None, PARSE_ERROR, "Parse error: empty body")
        if reply is not None:
            await _respond(send, 400, reply)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _respond(send: Send, status: int, payload: dict) -> None:
    data = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": data})
