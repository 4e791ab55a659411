"""Helpers for tests that run a real server."""

from __future__ import annotations

import dataclasses

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
