"""The fenced code blocks of README.md and docs/*.md, and a runner that runs them as a reader would.

Conventions (README "Tests" and tests/integration/test_docs_blocks.py run them):

* Blocks whose info string is bash / sh / shell / python / py run, and the `$ ` lines of a console
  block; any other block (text, toml, json, none) is illustration and is not run.
* `<!-- docs-test: skip (REASON) -->` on the last non-blank line before a fence skips that block;
  the test reports it as skipped with REASON. Only for what the test machine cannot have (a GPU, a
  model checkpoint, Docker, systemd, a Milvus deployment, network beyond loopback, root) or what
  takes minutes (the reason then names the test that covers it).
* The blocks of one document run in order in one temporary working directory (HOME points into
  it too): each shell block in a fresh `bash -eo pipefail` that starts there, with the variables
  earlier shell blocks exported; the Python blocks in one interpreter, so a block can use what an
  earlier one defined. Both run with the repository's venv first on PATH.
* Ports 50051, 50052, 8765 and 9464 in a block become free ports (the same one for the same number
  throughout a document), `0.0.0.0` becomes `127.0.0.1` and `/var/lib/polarmem` a directory in the
  working directory. POLARMEM_ADDRESS is exported as the address 50051 became (and
  POLARMEM_METRICS_PORT as the port 9464 became), so `polarmem serve` and the client commands meet
  there without flags, and a server never takes a port another test or engineer is using.
* What a block starts in the background (`polarmem serve ... &`) runs until the document's last
  block is done; a block that runs `polarmem serve` first stops what earlier blocks left running (a
  reader stops a server before starting another on the same port and data directory). Shell blocks
  wait for a server with `polarmem wait-ready`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import select
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN_LANGUAGES = {
    "bash": "shell",
    "sh": "shell",
    "shell": "shell",
    "console": "shell",
    "python": "python",
    "py": "python",
}
PORTS = ("50051", "50052", "8765", "9464")
BLOCK_TIMEOUT_S = 150.0
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<body>.*?)\s*-->\s*$")
SKIP = re.compile(r"^skip\s*\((?P<reason>.+)\)$")


@dataclasses.dataclass(frozen=True)
class Block:
    path: str  # relative to the repository root
    line: int  # 1-based line of the opening fence
    language: str  # the info string's first word
    code: str
    skip_reason: str | None = None

    @property
    def kind(self) -> str | None:
        """ "shell", "python", or None for a block that is not run."""
        return RUN_LANGUAGES.get(self.language)

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}-{self.language}"


def documents(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def extract(path: Path, root: Path = ROOT) -> list[Block]:
    """Every fenced block of a markdown file, in order, with the skip directive before it if any."""
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent, language = m["fence"], len(m["indent"]), (m["info"].split() or [""])[0].lower()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not re.match(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[j]):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        if j == len(lines):
            raise ValueError(f"{path}:{i + 1}: a code fence that is never closed")
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        skip_reason = None
        directive = DIRECTIVE.match(lines[k]) if k >= 0 else None
        if directive:
            skip = SKIP.match(directive["body"])
            if not skip:
                raise ValueError(
                    f"{path}:{k + 1}: unknown docs-test directive {directive['body']!r} (known: skip (REASON))"
                )
            skip_reason = skip["reason"].strip()
        if language == "console":  # a transcript: the commands are the lines after the prompt
            body = [line[2:] for line in body if line.startswith("$ ")]
        blocks.append(Block(str(path.relative_to(root)), i + 1, language, "\n".join(body) + "\n", skip_reason))
        i = j + 1
    return blocks


def all_blocks(root: Path = ROOT) -> list[Block]:
    return [b for doc in documents(root) for b in extract(doc, root)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


STARTS_SERVER = re.compile(r"(^|[;&|]\s*|\s)polarmem\s+serve\b", re.M)

# The Python blocks' interpreter: reads one JSON request per line, runs it in one shared namespace,
# answers one JSON line on the descriptor it was started with (everything the block prints, and its
# children, goes to the log).
DRIVER = r'''
import json, os, sys, traceback
proto = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = os.fdopen(1, "w", buffering=1)
scope = {"__name__": "__main__", "__builtins__": __builtins__}
for line in sys.stdin:
    request = json.loads(line)
    try:
        exec(compile(request["code"], request["filename"], "exec"), scope)
        answer = {"ok": True}
    except BaseException:
        answer = {"ok": False, "error": traceback.format_exc()}
    sys.stdout.flush(); sys.stderr.flush()
    proto.write(json.dumps(answer) + "\n"); proto.flush()
'''


class BlockFailed(AssertionError):
    pass


class DocumentSession:
    """Runs one document's blocks in order (see the module's conventions)."""

    def __init__(self, path: str, workdir: Path) -> None:
        self.path = path
        self.workdir = workdir
        (workdir / "home").mkdir(parents=True, exist_ok=True)
        self.ports = {p: str(free_port()) for p in PORTS}
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("POLARMEM_")}
        self.env.update(
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            HOME=str(workdir / "home"),
            PYTHONUNBUFFERED="1",
            POLARMEM_ADDRESS=f"127.0.0.1:{self.ports['50051']}",
            POLARMEM_METRICS_PORT=self.ports["9464"],
        )
        self.state = workdir / ".docs-test-env"
        self.groups: list[int] = []  # process groups of shell blocks (what they left running)
        self.python: subprocess.Popen | None = None
        self.python_log = workdir / ".python-blocks.log"
        self.count = 0

    def substitute(self, code: str) -> str:
        code = code.replace("0.0.0.0", "127.0.0.1").replace("/var/lib/polarmem", str(self.workdir / "var/lib/polarmem"))
        for number, port in self.ports.items():
            code = re.sub(rf"(?<![\d.]){number}(?!\d)", port, code)
        return code

    def run(self, block: Block) -> str:
        """Runs a block; returns its output, raises BlockFailed with the output on failure."""
        self.count += 1
        code = self.substitute(block.code)
        if block.kind == "shell":
            return self._run_shell(block, code)
        return self._run_python(block, code)

    def _run_shell(self, block: Block, code: str) -> str:
        if STARTS_SERVER.search(code):
            self.stop_background()
        log = self.workdir / f".block-{self.count}.log"
        state = shlex.quote(str(self.state))
        script = f"set -eo pipefail\n[ -f {state} ] && source {state}\ntrap 'export -p > {state}' EXIT\n{code}"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                ["bash", "--noprofile", "--norc", "-c", script],
                cwd=self.workdir,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            self.groups.append(proc.pid)
            try:
                rc = proc.wait(timeout=BLOCK_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._kill_group(proc.pid)
                raise BlockFailed(f"{block.id}: still running after {BLOCK_TIMEOUT_S:g} s\n{_tail(log)}") from None
        if rc != 0:
            raise BlockFailed(f"{block.id}: exit status {rc}\n--- block as run ---\n{code}--- output ---\n{_tail(log)}")
        return log.read_text(errors="replace")

    def _run_python(self, block: Block, code: str) -> str:
        if self.python is None:
            with open(self.python_log, "ab") as log:
                self.python = subprocess.Popen(
                    [sys.executable, "-c", DRIVER],
                    cwd=self.workdir,
                    env=self.env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    text=True,
                    start_new_session=True,
                )
        start = self.python_log.stat().st_size
        try:
            self.python.stdin.write(json.dumps({"code": code, "filename": f"{block.path}:{block.line}"}) + "\n")
            self.python.stdin.flush()
        except BrokenPipeError:
            raise BlockFailed(
                f"{block.id}: the Python blocks' interpreter has died\n{_tail(self.python_log)}"
            ) from None
        ready, _, _ = select.select([self.python.stdout], [], [], BLOCK_TIMEOUT_S)
        answer_line = self.python.stdout.readline() if ready else ""
        output = self.python_log.read_bytes()[start:].decode(errors="replace")
        if not answer_line:
            self._stop_python()
            raise BlockFailed(
                f"{block.id}: no answer after {BLOCK_TIMEOUT_S:g} s (or the interpreter died)\n{output[-4000:]}"
            )
        answer = json.loads(answer_line)
        if not answer["ok"]:
            raise BlockFailed(
                f"{block.id}: raised\n--- block as run ---\n{code}--- output ---\n{output[-4000:]}"
                f"\n--- traceback ---\n{answer['error']}"
            )
        return output

    def _kill_group(self, pgid: int, grace_s: float = 10.0) -> None:
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                return
            end = time.monotonic() + wait_s
            while time.monotonic() < end:
                try:
                    os.killpg(pgid, 0)
                except ProcessLookupError:
                    return
                time.sleep(0.05)

    def stop_background(self) -> None:
        while self.groups:
            self._kill_group(self.groups.pop())

    def _stop_python(self) -> None:
        if self.python is not None:
            self.python.stdin.close()
            try:
                self.python.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._kill_group(self.python.pid)
                self.python.wait()
            self.python.stdout.close()
            self._kill_group(self.python.pid, grace_s=5.0)  # what its blocks started
            self.python = None

    def close(self) -> None:
        self._stop_python()
        self.stop_background()


def _tail(log: Path, chars: int = 4000) -> str:
    return log.read_text(errors="replace")[-chars:]
