"""The stdio gate in front of the MCP SDK (faces/mcp_gate.py): what is blank and what is answered."""

from __future__ import annotations

import json

import anyio
import pytest

pytest.importorskip("mcp")

from polarmem_server.faces.mcp_gate import PARSE_ERROR, _GatedStdin  # noqa: E402


class _Lines:
    def __init__(self, lines):
        self._lines = lines

    def __aiter__(self):
        return self._gen()

    async def _gen(self):
        for line in self._lines:
            yield line


class _Out:
    def __init__(self):
        self.text = ""

    async def write(self, text):
        self.text += text

    async def flush(self):
        pass


def gate(lines):
    out = _Out()

    async def main():
        return [line async for line in _GatedStdin(_Lines(lines), out)]

    passed = anyio.run(main)
    return passed, [json.loads(line) for line in out.text.splitlines()]


@pytest.mark.parametrize("line", ["\x1e\n", "\x1c\n", "\x1f\x1d\n", "\x85\n", "\u2028\n", "\x0b\n"])
def test_a_line_python_calls_whitespace_but_json_does_not_gets_a_parse_error(line):
    """Found by tests/property/test_fuzz_mcp.py's long run: "\\x1e" passed str.strip() for blank,
    so the client waited for an answer that never came."""
    passed, answers = gate([line])
    assert passed == [] and len(answers) == 1
    assert answers[0]["id"] is None and answers[0]["error"]["code"] == PARSE_ERROR


def test_blank_lines_are_skipped_and_valid_messages_pass():
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}) + "\n"
    passed, answers = gate(["\n", " \t\r\n", ping])
    assert passed == [ping] and answers == []
