"""From `pip install` to the first successful MCP recall on a fresh venv, and what an agent session
costs (issue 32 item 5).

1. Builds the wheel (`pip wheel --no-build-isolation --no-deps .`) unless --wheel names one.
2. Times, from an empty directory: a fresh venv, `pip install WHEEL[mcp,embed]` (and torch, as the
   README says), `polarmem serve`, `polarmem namespace create agent` (an open vocabulary), then the
   official MCP SDK's stdio client spawning the fresh venv's `polarmem mcp`: one `remember` and one
   `recall` that answers — the clock stops at that first successful recall.
3. Runs the scripted agent session of tests/integration/test_agent_session.py (50 notes, 30
   natural-language queries, observe / update / forget / list / clear) against a server of this
   venv and reports the tool calls it needed, and the server's CPU time (utime + stime of the
   server process, /proc) per MCP recall over the 30 queries.

Prints one JSON object (and writes it to benchmarks/results/agent_first_recall.json). Fixed inputs,
no clocks as seeds; the package index is whatever pip is configured with (a local mirror here)."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import cpu_seconds, host, serve_command, start_serve, stop, write_report  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "agent_first_recall.json"
TORCH = "torch==2.13.0"


def start_server(polarmem: Path, data: Path, *flags: str) -> tuple[subprocess.Popen, str]:
    """The fresh venv's `polarmem serve` (none of the caller's POLARMEM_* settings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLARMEM_")}
    process = start_serve(
        serve_command(
            "--address", "127.0.0.1:0", "--data-dir", str(data), "--metrics-port", "-1", *flags, polarmem=polarmem
        ),
        env=env,
    )
    return process, process.address


async def first_recall(polarmem: Path, address: str) -> dict:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=str(polarmem), args=["mcp", "-n", "agent", "--address", address])
    async with Client(params) as client:
        await client.call_tool("remember", {"text": "The user does not drink coffee, only green tea."})
        result = await client.call_tool("recall", {"query": "drinks other than coffee", "top_k": 3})
        assert not result.is_error, result.content[0].text
        return result.structured_content


def session_module():
    path = ROOT / "tests" / "integration" / "test_agent_session.py"
    spec = importlib.util.spec_from_file_location("agent_session", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def measured_session(polarmem: Path, address: str, server_pid: int) -> dict:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    module = session_module()
    params = StdioServerParameters(command=str(polarmem), args=["mcp", "-n", "session", "--address", address])
    async with Client(params) as client:
        session = module.Session(client)
        notes, queries = module.session_data()
        for note in notes:
            stored = await session.call("remember", {"text": note["text"], "metadata": {"note": note["id"]}})
            note["memory_id"] = stored["id"]
        note_of = {note["memory_id"]: note for note in notes}
        await session.call("recall", {"query": queries[0]["query"], "top_k": 3})  # warm (encoder, plans)
        before = cpu_seconds(server_pid)
        started = time.perf_counter()
        contradicting = 0
        for query in queries:
            body = await session.call("recall", {"query": query["query"], "top_k": 3})
            contradicting += any(module.contradicts(note_of[h["id"]], query) for h in body["hits"][:3])
        wall = time.perf_counter() - started
        cpu = cpu_seconds(server_pid) - before
    return {
        "queries": len(queries),
        "recall_tool_calls_for_the_queries": len(queries),
        "server_cpu_ms_per_mcp_recall": round(1000 * cpu / len(queries), 2),
        "client_wall_ms_per_mcp_recall": round(1000 * wall / len(queries), 2),
        "queries_with_a_contradicting_note_in_top3": contradicting,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheel", help="a built wheel (default: build one from this checkout)")
    parser.add_argument("--extras", default="mcp,embed")
    parser.add_argument("--no-torch", action="store_true", help="leave torch to the extras' resolution")
    args = parser.parse_args()
    out: dict = {"host": host()}
    with tempfile.TemporaryDirectory(prefix="polarmem-first-recall-") as tmp:
        tmp_path = Path(tmp)
        wheel = Path(args.wheel) if args.wheel else None
        if wheel is None:
            started = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "wheel",
                    "-q",
                    "--no-build-isolation",
                    "--no-deps",
                    str(ROOT),
                    "-w",
                    str(tmp_path / "wheel"),
                ],
                check=True,
            )
            out["wheel_build_s"] = round(time.perf_counter() - started, 1)
            wheel = next((tmp_path / "wheel").glob("polarmem_server-*.whl"))
        steps = {}
        t0 = time.perf_counter()
        venv = tmp_path / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        steps["venv_s"] = time.perf_counter() - t0
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run(pip + ([] if args.no_torch else [TORCH]) + [f"{wheel}[{args.extras}]"], check=True)
        steps["pip_install_s"] = time.perf_counter() - t0 - sum(steps.values())
        polarmem = venv / "bin" / "polarmem"
        server, address = start_server(polarmem, tmp_path / "data")
        try:
            steps["server_up_s"] = time.perf_counter() - t0 - sum(steps.values())
            subprocess.run(
                [str(polarmem), "namespace", "create", "agent", "--address", address], check=True, capture_output=True
            )
            steps["namespace_s"] = time.perf_counter() - t0 - sum(steps.values())
            body = asyncio.run(first_recall(polarmem, address))
            steps["first_mcp_recall_s"] = time.perf_counter() - t0 - sum(steps.values())
            out["pip_install_to_first_mcp_recall_s"] = round(time.perf_counter() - t0, 1)
            out["steps_s"] = {k: round(v, 1) for k, v in steps.items()}
            out["first_recall_hits"] = len(body["hits"])
            subprocess.run(
                [str(polarmem), "namespace", "create", "session", "--address", address], check=True, capture_output=True
            )
            out["session"] = asyncio.run(measured_session(polarmem, address, server.pid))
        finally:
            stop(server, 20)
    out["host"]["load_average_after"] = os.getloadavg()
    write_report(RESULTS, out)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
