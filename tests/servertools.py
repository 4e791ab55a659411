"""Helpers for tests that run a real server."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from polarmem_server.api.config import ServerConfig

DIM = 8


def make_config(tmp_path, **overrides) -> ServerConfig:
    """A server on 127.0.0.1:0 with RocksDB under tmp_path and metrics on a free port."""
    base = ServerConfig(
        address="127.0.0.1:0",
        data_dir=str(tmp_path / "data"),
        metrics_port=0,
        log_level="WARNING",
        grace_s=2.0,
        workers=16,
        max_concurrent_rpcs=32,
    )
    return dataclasses.replace(base, **overrides)


# Client scores carry exactly one P(Yes) per namespace template: a test that sends one (or two)
# scores per concept creates its namespace with this many templates.
ONE_TEMPLATE = ("Is there a {c} in this image?",)
TWO_TEMPLATES = ("Is there a {c} in this image?", "Does this image contain a {c}?")


def self_signed_certificate(
    directory: Path, common_name: str = "localhost", alt_names: str | None = None, stem: str = "server"
) -> tuple[Path, Path]:
    """(certificate, key) PEM files of a one-day self-signed certificate in `directory`, with
    subjectAltName `alt_names` (e.g. "DNS:localhost,IP:127.0.0.1") when given; skips the test
    where openssl is not installed."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: it makes the test certificates")
    cert, key = directory / f"{stem}.crt", directory / f"{stem}.key"
    extension = ["-addext", f"subjectAltName={alt_names}"] if alt_names else []
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            f"/CN={common_name}",
            *extension,
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def stop_process(process: subprocess.Popen, timeout_s: float = 20.0, communicate: bool = False) -> None:
    """SIGTERM, then SIGKILL when it has not ended within `timeout_s`. `communicate`: read its pipes
    to the end meanwhile (when nothing else drains them, a full pipe would block its exit)."""
    process.terminate()
    wait = process.communicate if communicate else process.wait
    try:
        wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        wait()


def polarmem_command(*args: str) -> list[str]:
    """`polarmem ARGS` run by this interpreter."""
    return [sys.executable, "-m", "polarmem_server.faces.cli", *args]


def mcp_on_new_namespace(address: str, cwd, name: str = "notes") -> list[str]:
    """A namespace `name` made as a user makes it (`polarmem namespace create NAME`: an open
    vocabulary, the default encoder, as its output says) on the server at `address`, and the argv
    of `polarmem mcp` on it (run from `cwd`, outside the source tree)."""
    created = subprocess.run(
        polarmem_command("namespace", "create", name, "--address", address),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(cwd),
    )
    assert created.returncode == 0 and "open vocabulary" in created.stdout, (created.stdout, created.stderr)
    return polarmem_command("mcp", "-n", name, "--address", address)


@contextmanager
def mcp_http_process(*args: str, cwd) -> Iterator[str]:
    """`polarmem mcp --transport http` on a free port (no POLARMEM_* of the caller's); yields its URL
    and checks, once stopped, that it exited cleanly."""
    process = subprocess.Popen(
        polarmem_command("mcp", "--transport", "http", "--port", "0", *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={k: v for k, v in os.environ.items() if not k.startswith("POLARMEM_")},
    )
    try:
        line = process.stdout.readline()
        assert "serving on http://" in line, process.stderr.read() if process.poll() is not None else line
        yield line.split("serving on ")[1].split()[0]
    finally:
        stop_process(process, 15, communicate=True)
    assert process.returncode in (0, -15), process.returncode


def serve_in_background(command: list[str], env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """Starts `polarmem serve ...` (`command`) with its output piped, returns it and the address
    its "serving on" line names; its later output is drained by a thread so it never blocks
    (for the benchmarks that measure a server process of their own)."""
    import threading

    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    for line in process.stdout:
        if "serving on " in line:
            threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
            return process, line.split("serving on ")[1].split()[0]
    raise RuntimeError(f"{' '.join(command[:2])} did not start (exit {process.wait()})")
