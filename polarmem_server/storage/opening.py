"""Opening a backend by the name the server's settings give it: the one module above the
concrete backends (storage/local, storage/milvus) that names them, so the API layer configures
storage without importing a backend's modules (tests/unit/test_layers.py fails on a new such
import). Each backend's modules load only when it is opened: pymilvus is never imported for
the local backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from polarmem_server.storage.backend import Backend


def open_local(
    data_dir: str | Path,
    durability: str = "sync",
    threads: int = 0,
) -> Backend:
    """The local backend (RocksDB under ``data_dir`` plus the compiled index rebuilt from it)."""
    from polarmem_server.storage.local.backend import LocalBackend

    return LocalBackend(data_dir, durability, threads)


def milvus_settings(**fields: Any) -> Any:
    """The Milvus backend's connection settings (storage/milvus/connection.py MilvusSettings:
    uri, token, secure, server_pem_path, timeout_s, prefix, layout), checked: InvalidArgument
    names the field."""
    from polarmem_server.storage.milvus.connection import MilvusSettings

    return MilvusSettings(**fields)


def open_milvus(settings: Any) -> Backend:
    """The Milvus backend over the server ``settings`` name (milvus_settings); ImportError where
    pymilvus is not installed, Unavailable or DeadlineExceeded where Milvus does not answer."""
    from polarmem_server.storage.milvus.backend import MilvusBackend

    return MilvusBackend(settings)


def recover_local_wal(data_dir: str | Path) -> Any:
    """The server's opt-in ``recover = "point-in-time"`` on the local store, before it opens:
    a damaged write-ahead-log tail dropped in place after a copy (storage/local/repair.py
    recover_wal_in_place); returns its report (``damaged``, ``lines()``)."""
    from polarmem_server.storage.local.repair import recover_wal_in_place

    return recover_wal_in_place(data_dir)
