"""A damaged table file (one flipped byte in an .sst, as bit rot on a live disk or a restored
backup would leave it) is reported, not served as INTERNAL.

Before: GetItem answered INTERNAL "internal error" for the items in the damaged block, Recall
INTERNAL, health SERVING; the start-up refusal for a damaged .sst footer named a healthy WAL
file and suggested a plain `polarmem repair`, which cannot fix it; `polarmem repair --salvage
DIR` (the form the docs print) was "unrecognized arguments"."""

from __future__ import annotations

import subprocess
from pathlib import Path

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem_server.api.config import ConfigError
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces import cli
from polarmem_server.index import SpaceSpec
from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings
from polarmem_server.storage.local.store import Store, StoreDamaged
from servertools import make_config

ITEMS = 400
MARK = b"note-body "


@pytest.fixture(scope="module")
def intact_store(tmp_path_factory) -> Path:
    """A stopped data directory whose items live in flushed table files (no WAL to replay)."""
    path = tmp_path_factory.mktemp("tables") / "data"
    memory = Memory(path, durability="sync")
    memory.create_namespace(NamespaceSettings("w", spaces=(SpaceSpec("vis", 8),), encoder="none"))
    for n in range(ITEMS):
        vector = np.random.default_rng(n).standard_normal(8) + 0.1
        memory.remember(
            "w",
            ItemInput(
                id=f"item{n:05d}",
                text=f"{MARK.decode()}{n} " + "lorem ipsum " * 20,
                vectors={"vis": vector},
                states={"dog": "has"},
            ),
        )
    memory.backend.store.flush()
    memory.close()
    return path


def copy_of(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(source), str(target)], check=True)
    return target


def items_table(path: Path) -> Path:
    """The table file holding the item records (the only one with their text)."""
    tables = [f for f in path.glob("*.sst") if MARK in f.read_bytes()]
    assert len(tables) == 1, tables
    return tables[0]


def flip(file: Path, offset: int) -> None:
    data = bytearray(file.read_bytes())
    data[offset] ^= 0x40
    file.write_bytes(bytes(data))


def test_a_damaged_block_answers_data_loss_counts_it_and_turns_storage_health(intact_store, tmp_path):
    path = copy_of(intact_store, tmp_path)
    table = items_table(path)
    flip(table, table.read_bytes().index(MARK) + 3)  # inside the first data block of item records
    with (
        PolarMemServer(make_config(tmp_path, data_dir=str(path))) as server,
        grpc.insecure_channel(server.address) as channel,
    ):
        stub, health = pb_grpc.MemoryServiceStub(channel), health_pb2_grpc.HealthStub(channel)
        codes, lost = {}, []
        for n in range(ITEMS):
            try:
                stub.GetItem(pb.GetItemRequest(namespace="w", id=f"item{n:05d}"), timeout=30)
                codes["OK"] = codes.get("OK", 0) + 1
            except grpc.RpcError as exc:
                codes[exc.code().name] = codes.get(exc.code().name, 0) + 1
                lost.append(exc.details())
        assert set(codes) == {"OK", "DATA_LOSS"}, codes  # never INTERNAL
        assert "namespace 'w'" in lost[0] and "repair --salvage" in lost[0] and "Corruption" in lost[0]
        with pytest.raises(grpc.RpcError) as recall:
            stub.Recall(
                pb.RecallRequest(
                    namespace="w", vectors={"vis": pb.VectorValue(values=[0.1] * 8)}, top_k=ITEMS, include_items=True
                ),
                timeout=30,
            )
        assert recall.value.code() == grpc.StatusCode.DATA_LOSS
        found = server.metrics.registry.get_sample_value("polarmem_storage_corruption_total", {"found_by": "rpc"})
        assert found == codes["DATA_LOSS"] + 1
        assert server.metrics.registry.get_sample_value("polarmem_internal_errors_total") == 0

        def status(service: str) -> int:
            return health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10).status

        assert status("polarmem.v1.MemoryService.storage") == health_pb2.HealthCheckResponse.NOT_SERVING
        assert status("") == health_pb2.HealthCheckResponse.SERVING  # the rest is readable; a restart fixes nothing


def test_a_damaged_table_footer_is_refused_naming_the_table_and_salvage(intact_store, tmp_path):
    path = copy_of(intact_store, tmp_path)
    table = items_table(path)
    # The footer (53 bytes at table format 5: checksum type, the metaindex and index handles, padding,
    # version, magic), which RocksDB reads when it opens the table: the metaindex block's offset.
    flip(table, table.stat().st_size - 52)
    with pytest.raises(StoreDamaged) as refused:
        Store(path).close()
    message = str(refused.value)
    assert table.name in message and f"polarmem repair --salvage {path}" in message and "write-ahead log" in message
    assert ".log" not in message and "\n" not in message
    with pytest.raises(ConfigError, match="--salvage"):
        PolarMemServer(make_config(tmp_path, data_dir=str(path))).start()
    # the form the message prints works: the repaired copy (a new directory) opens in strict mode
    assert cli.main(["repair", "--salvage", str(path)]) == 0
    Store(next(path.parent.glob(f"{path.name}.repaired-*"))).close()


def test_repair_takes_salvage_before_or_after_the_directory(intact_store, tmp_path, capsys):
    path = copy_of(intact_store, tmp_path)
    assert cli.main(["repair", "--salvage", str(path)]) == 0
    assert cli.main(["repair", str(path), "--salvage"]) == 0
    assert cli.main(["repair", str(path)]) == 0
    assert capsys.readouterr().out.count("intact; nothing to repair") == 3


def test_the_scrub_finds_a_damaged_block_before_any_client_reads_it(intact_store, tmp_path):
    from polarmem_server.storage.local.scrub import scrub_once

    memory = Memory(intact_store)
    try:
        keys, found = scrub_once(memory.backend.store._db)
    finally:
        memory.close()
    assert keys > ITEMS and found == []
    path = copy_of(intact_store, tmp_path)
    table = items_table(path)
    flip(table, table.read_bytes().index(MARK) + 3)
    with (
        PolarMemServer(make_config(tmp_path, data_dir=str(path), scrub_interval_s=0.05)) as server,
        grpc.insecure_channel(server.address) as channel,
    ):
        health = health_pb2_grpc.HealthStub(channel)
        request = health_pb2.HealthCheckRequest(service="polarmem.v1.MemoryService.storage")
        for _ in health.Watch(request, timeout=120):  # ends at NOT_SERVING; the timeout only bounds a regression
            if server.metrics.registry.get_sample_value("polarmem_storage_corruption_total", {"found_by": "scrub"}):
                break
        assert health.Check(request, timeout=10).status == health_pb2.HealthCheckResponse.NOT_SERVING
        assert server.metrics.registry.get_sample_value("polarmem_storage_corruption_total", {"found_by": "rpc"}) == 0
