"""Helpers for tests that run a real server."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest

from polarmem_server.api.config import ServerConfig

DIM = 8


def make_config(tmp_path, **overrides) -> ServerConfig:
    """A server on 127.0.0.1:0 with RocksDB under tmp_path and metrics on a free port."""
    base = ServerConfig(address="127.0.0.1:0", data_dir=str(tmp_path / "data"), metrics_port=0, log_level="WARNING",
                        grace_s=2.0, workers=16, max_concurrent_rpcs=32)
    return dataclasses.replace(base, **overrides)

# Client scores carry exactly one P(Yes) per namespace template: a test that sends one (or two)
# scores per concept creates its namespace with this many templates.
ONE_TEMPLATE = ("Is there a {c} in this image?",)
TWO_TEMPLATES = ("Is there a {c} in this image?", "Does this image contain a {c}?")


def self_signed_certificate(directory: Path, common_name: str = "localhost", alt_names: str | None = None,
                            stem: str = "server") -> tuple[Path, Path]:
    """(certificate, key) PEM files of a one-day self-signed certificate in `directory`, with
    subjectAltName `alt_names` (e.g. "DNS:localhost,IP:127.0.0.1") when given; skips the test
    where openssl is not installed."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: it makes the test certificates")
    cert, key = directory / f"{stem}.crt", directory / f"{stem}.key"
    extension = ["-addext", f"subjectAltName={alt_names}"] if alt_names else []
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={common_name}",
                    *extension, "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key

