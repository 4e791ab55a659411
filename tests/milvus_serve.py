"""`polarmem serve --backend milvus` as a user runs it: a real server process (the CLI) over a
real Milvus, for the Milvus tests. Stopped by its PID."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

START_TIMEOUT_S = 120


class ServeProcess:
    """One `polarmem serve --backend milvus` process on a free port."""

    def __init__(
        self, milvus_uri: str, prefix: str, workdir: Path, timeout_s: float = 10.0, layout: str = "collection"
    ) -> None:
        self.log_path = workdir / f"serve-{prefix}-{time.monotonic_ns()}.log"
        self.command = [
            sys.executable,
            "-m",
            "polarmem_server.faces.cli",
            "serve",
            "--backend",
            "milvus",
            "--milvus-uri",
            milvus_uri,
            "--milvus-prefix",
            prefix,
            "--milvus-timeout",
            str(timeout_s),
            "--milvus-layout",
            layout,
            "--address",
            "127.0.0.1:0",
            "--metrics-port",
            "-1",
            "--grace-s",
            "2",
            "--data-dir",
            str(workdir / "unused-data-dir"),
        ]
        self.process: subprocess.Popen | None = None
        self.address = ""

    def start(self) -> ServeProcess:
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                self.command, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True, cwd="/"
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        line = ""
        while time.monotonic() < deadline and self.process.poll() is None:
            line = self.process.stdout.readline()
            if line.startswith("polarmem serving on "):
                self.address = line.split()[3].rstrip(";")
                return self
        self.stop()
        raise RuntimeError(
            f"polarmem serve did not start ({line!r}); see {self.log_path}: {self.log_path.read_text()[-2000:]}"
        )

    def stop(self) -> int | None:
        process, self.process = self.process, None
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        process.stdout.close()
        return process.returncode

    def log(self) -> str:
        return self.log_path.read_text()
