"""Fuzz `polarmem mcp`'s JSON-RPC over stdio: every request is answered (no hang).

A live PolarMem server, a live `polarmem mcp` spawned on pipes, initialized as an agent would.
Each example writes one line: random bytes, a JSON value that is not an object, or a JSON-RPC
object with hostile parts (an id that is a list, a float, a bool or null; params that are a
string, a number, a list; unknown and real methods with random arguments; no jsonrpc). Then
it writes a ping and reads until the ping's answer has come, plus the answer the line itself is
owed: a request (an object with a method and an id) is owed one answer with its id (null when
the id is unusable), a line that is not JSON or not an object one with id null. Each read is
bounded (READ_BOUND_S), so a dropped request fails the test instead of hanging it.

Before: a tools/call whose params was a string was never answered, and the client waited forever.
`make test` runs a bounded number of examples; the `slow` variant many more; both print the
number of lines sent and answers read.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import subprocess
import sys
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("mcp")

from polarmem_server.api.server import PolarMemServer  # noqa: E402
from polarmem_server.faces.client import PolarMemClient  # noqa: E402
from servertools import DIM, make_config  # noqa: E402

READ_BOUND_S = 60
METHODS = [
    "tools/call",
    "tools/list",
    "ping",
    "initialize",
    "resources/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "notifications/cancelled",
    "no/such/method",
]
TOOLS = ["remember", "recall", "observe", "forget", "get_item", "list_namespaces", "get_namespace", "nope"]


class Stats:
    lines = 0
    answers = 0
    kinds: collections.Counter = collections.Counter()


class StdioMcp:
    """A `polarmem mcp` process and a thread that reads its answers into a queue."""

    def __init__(self, address: str, cwd) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("POLARMEM_")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "polarmem_server.faces.cli", "mcp", "-n", "mem", "--address", address],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
        )
        self.answers: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.pings = 0

    def _read(self) -> None:
        for line in self.process.stdout:
            self.answers.put(json.loads(line))
        self.answers.put(None)  # closed

    def send(self, line: bytes) -> None:
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def wait_for(self, owed: list) -> None:
        """Reads answers until every id in `owed` (each at most once) has been answered."""
        owed = list(owed)
        while owed:
            try:
                answer = self.answers.get(timeout=READ_BOUND_S)
            except queue.Empty:
                raise AssertionError(f"no answer within {READ_BOUND_S} s for ids {owed!r}") from None
            assert answer is not None, "polarmem mcp closed its output"
            if "id" not in answer:
                continue  # a notification from the server
            Stats.answers += 1
            if answer["id"] in owed:
                owed.remove(answer["id"])

    def close(self) -> None:
        self.process.kill()
        self.process.communicate()


@pytest.fixture(scope="module")
def mcp(tmp_path_factory, request):
    tmp = tmp_path_factory.mktemp("fuzz-mcp")
    server = PolarMemServer(make_config(tmp)).start()
    with PolarMemClient(server.address) as client:
        client.create_namespace("mem", spaces=[("vis", DIM)], encoder="none")
    stdio = StdioMcp(server.address, tmp)
    stdio.send(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "fuzz", "version": "1"},
                },
            }
        ).encode()
    )
    stdio.wait_for(["init"])
    stdio.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    yield stdio
    stdio.close()
    server.stop()
    line = f"mcp fuzz: {Stats.lines} lines sent, {Stats.answers} answers read; kinds {dict(Stats.kinds)}"
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if capture is not None:
        with capture.global_and_fixture_disabled():
            print("\n" + line, flush=True)


ids = st.one_of(
    st.integers(-(2**53), 2**53),
    st.text(max_size=12).filter(lambda t: not t.startswith("ping-")),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=1),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)
tool_params = st.fixed_dictionaries(
    {"name": st.sampled_from(TOOLS)},
    optional={
        "arguments": st.one_of(
            json_values,
            st.fixed_dictionaries(
                {},
                optional={
                    "id": json_values,
                    "query": json_values,
                    "text": json_values,
                    "namespace": json_values,
                    "top_k": json_values,
                    "content_path": st.sampled_from(["/dev/zero", "/etc/passwd", ""]),
                    "states": json_values,
                },
            ),
        )
    },
)


@st.composite
def hostile_line(draw) -> tuple[str, bytes, list]:
    """(kind, the line, the ids it is owed an answer for)."""
    kind = draw(st.sampled_from(["bytes", "not an object", "message", "message", "message"]))
    if kind == "bytes":
        data = draw(
            st.binary(min_size=1, max_size=300).filter(lambda b: b"\n" not in b and b"\r" not in b and b.strip())
        )
        try:
            json.loads(data)
            return kind, data, []  # rare: happens to be JSON; judged by the ping alone
        except ValueError:
            return kind, data, [None]
    if kind == "not an object":
        value = draw(st.one_of(st.lists(json_values, max_size=3), st.integers(), st.text(max_size=10)))
        return kind, json.dumps(value).encode(), [None]
    message: dict = {}
    if draw(st.booleans()) or draw(st.booleans()):
        message["jsonrpc"] = draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2]))
    message["method"] = draw(st.one_of(st.sampled_from(METHODS), st.text(max_size=15)))
    has_id = draw(st.booleans()) or draw(st.booleans())
    if has_id:
        message["id"] = draw(ids)
    if draw(st.booleans()):
        message["params"] = draw(st.one_of(tool_params, json_values))
    if not has_id:
        return "notification", json.dumps(message).encode(), []
    usable = isinstance(message["id"], (int, str)) and not isinstance(message["id"], bool)
    return kind, json.dumps(message).encode(), [message["id"] if usable else None]


def check_line(mcp: StdioMcp, case) -> None:
    kind, line, owed = case
    Stats.lines += 1
    Stats.kinds[kind] += 1
    mcp.send(line)
    mcp.pings += 1
    ping = f"ping-{mcp.pings}"
    mcp.send(json.dumps({"jsonrpc": "2.0", "id": ping, "method": "ping"}).encode())
    mcp.wait_for([*owed, ping])


@settings(max_examples=250, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(hostile_line())
def test_every_request_is_answered(mcp, case):
    check_line(mcp, case)


@pytest.mark.slow
@settings(max_examples=3_000, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(hostile_line())
def test_every_request_is_answered_long_run(mcp, case):
    check_line(mcp, case)
