"""Backup RPC and restore against a real server on 127.0.0.1 with RocksDB on disk: a snapshot taken
under concurrent writes holds every write acknowledged before it began, restores into a fresh data
directory that a new server serves, and its manifest catches a flipped byte."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem_server.api.server import PolarMemServer
from polarmem_server.errors import FailedPrecondition, InvalidArgument
from polarmem_server.faces import backup_cli
from polarmem_server.faces.client import PolarMemClient
from polarmem_server.storage.local import backup
from servertools import DIM, make_config


def vec(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)


def backup_call(address: str, destination: str, token: str = ""):
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    with grpc.insecure_channel(address) as channel:
        return pb_grpc.MemoryServiceStub(channel).Backup(
            pb.BackupRequest(destination_dir=destination), metadata=metadata, timeout=120
        )


def code_of(call) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code(), info.value.details()


def test_snapshot_under_writes_restores_every_acknowledged_item(tmp_path):
    acknowledged: dict[str, tuple] = {}  # "ns/id" -> (item view Remember returned, its vector)
    lock, stop = threading.Lock(), threading.Event()
    with PolarMemServer(make_config(tmp_path, backup_dir=str(tmp_path))) as server:
        with PolarMemClient(server.address) as client:
            client.create_namespace("a", spaces=[("vis", DIM)], encoder="none")
            client.create_namespace("b", spaces=[("vis", DIM)], encoder="none")

            def writer(ns: str, base: int) -> None:
                with PolarMemClient(server.address) as c:
                    i = 0
                    while not stop.is_set():
                        item_id = f"{ns}-{base + i}"
                        view = c.remember(
                            ns,
                            id=item_id,
                            vectors={"vis": vec(base + i)},
                            states={"dog": "has", "cat": "not_has"} if i % 2 else {"cat": "has"},
                        )
                        with lock:
                            acknowledged[f"{ns}/{item_id}"] = (view, vec(base + i))
                        i += 1

            threads = [
                threading.Thread(target=writer, args=(ns, base))
                for ns, base in (("a", 0), ("b", 10_000), ("a", 20_000))
            ]
            for t in threads:
                t.start()
            while len(acknowledged) < 60:
                time.sleep(0.05)
            with lock:
                before = dict(acknowledged)  # acknowledged before the Backup call started
            response = backup_call(server.address, str(tmp_path / "snap"))
            time.sleep(0.3)  # writes continue after the snapshot too
            stop.set()
            for t in threads:
                t.join()
            assert len(acknowledged) > len(before)  # the writers really ran during/after the call

    snapshot_dir = tmp_path / "snap"
    manifest = backup.verify(snapshot_dir)
    assert response.total_bytes == manifest.total_bytes > 0
    assert response.files == len(manifest.files)
    assert {n.namespace: n.items for n in response.namespaces} == manifest.namespace_items
    per_ns_before = {ns: sum(1 for k in before if k.startswith(ns + "/")) for ns in ("a", "b")}
    for ns in ("a", "b"):
        assert manifest.namespace_items[ns] >= per_ns_before[ns]

    restored = tmp_path / "restored"
    backup.restore(snapshot_dir, restored)
    with PolarMemServer(make_config(tmp_path, data_dir=str(restored))) as server:
        with PolarMemClient(server.address) as client:
            for ns in ("a", "b"):  # the manifest's counts are what a server on the restored directory sees
                assert client.get_namespace(ns).item_count == manifest.namespace_items[ns]
            for key, (view, vector) in before.items():
                ns, item_id = key.split("/", 1)
                got = client.get_item(ns, item_id, include_vectors=True)
                assert got.item == view, key
                assert np.array_equal(np.asarray(got.vectors["vis"].values, dtype=np.float32), vector)


def test_verify_detects_a_flipped_byte_and_restore_refuses_it(tmp_path):
    with PolarMemServer(make_config(tmp_path, backup_dir=str(tmp_path))) as server:
        with PolarMemClient(server.address) as client:
            client.create_namespace("a", spaces=[("vis", DIM)], encoder="none")
            for i in range(20):
                client.remember("a", id=f"x{i}", vectors={"vis": vec(i)})
            backup_call(server.address, str(tmp_path / "snap"))
    manifest = backup.verify(tmp_path / "snap")
    assert manifest.namespace_items == {"a": 20}
    name = max(manifest.files, key=lambda n: manifest.files[n]["bytes"])
    path = tmp_path / "snap" / "data" / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(FailedPrecondition, match=name):
        backup.verify(tmp_path / "snap")
    with pytest.raises(FailedPrecondition, match="damaged"):
        backup.restore(tmp_path / "snap", tmp_path / "restored")
    assert not (tmp_path / "restored").exists() or not any((tmp_path / "restored").iterdir())


def test_backup_refuses_bad_destinations(server, tmp_path):
    (tmp_path / "exists").mkdir()
    for destination, fragment in (
        ("", "required"),
        ("relative/dir", "absolute"),
        (str(tmp_path / "exists"), "already exists"),
        (str(tmp_path / "no" / "parent"), "parent"),
    ):
        code, details = code_of(lambda: backup_call(server.address, destination))
        assert code == grpc.StatusCode.INVALID_ARGUMENT, destination
        assert fragment in details
    assert not (tmp_path / "no").exists()


def test_backup_needs_a_token_for_every_namespace(tmp_path):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        '[tokens]\nadmin = { token = "s3cret", namespaces = ["*"], role = "admin" }\n'
        'robot = { token = "r0bot", namespaces = ["a"], role = "admin" }\n'
    )
    with PolarMemServer(make_config(tmp_path, tokens_file=str(tokens), backup_dir=str(tmp_path))) as server:
        code, _ = code_of(lambda: backup_call(server.address, str(tmp_path / "s1"), token="r0bot"))
        assert code == grpc.StatusCode.PERMISSION_DENIED
        code, _ = code_of(lambda: backup_call(server.address, str(tmp_path / "s1")))
        assert code == grpc.StatusCode.UNAUTHENTICATED
        assert not (tmp_path / "s1").exists()
        assert backup_call(server.address, str(tmp_path / "s1"), token="s3cret").files > 0


def test_backup_command_connects_like_every_client_command(tmp_path, capsys, monkeypatch):
    """`polarmem backup` takes its address and token from the config file's [client] table (or
    POLARMEM_* / flags), as the other client commands do."""
    for name in ("ADDRESS", "TOKEN", "TOKEN_FILE", "CONFIG"):
        monkeypatch.delenv(f"POLARMEM_{name}", raising=False)
    tokens = tmp_path / "tokens.toml"
    tokens.write_text('[tokens]\nadmin = { token = "s3cret", namespaces = ["*"], role = "admin" }\n')
    with PolarMemServer(make_config(tmp_path, tokens_file=str(tokens), backup_dir=str(tmp_path))) as server:
        assert backup_cli.main(["backup", str(tmp_path / "s0"), "--address", server.address]) == 1
        assert "backup failed: UNAUTHENTICATED" in capsys.readouterr().err
        (tmp_path / "token").write_text("s3cret\n")
        config = tmp_path / "polarmem.toml"
        config.write_text(f'[client]\naddress = "{server.address}"\ntoken_file = "{tmp_path / "token"}"\n')
        assert backup_cli.main(["backup", str(tmp_path / "s1"), "--config", str(config)]) == 0
        assert (
            "snapshot written to" in capsys.readouterr().out and (tmp_path / "s1" / "MANIFEST.polarmem.json").is_file()
        )


def test_restore_refuses_a_non_empty_directory_and_cli_round_trip(tmp_path, capsys):
    with PolarMemServer(make_config(tmp_path, backup_dir=str(tmp_path))) as server:
        with PolarMemClient(server.address) as client:
            client.create_namespace("a", spaces=[("vis", DIM)], encoder="none")
            client.remember("a", id="one", vectors={"vis": vec(1)})
        assert backup_cli.main(["backup", str(tmp_path / "snap"), "--address", server.address]) == 0
    assert "1 item(s)" in capsys.readouterr().out
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "keep.txt").write_text("mine")
    with pytest.raises(FailedPrecondition, match="occupied"):
        backup.restore(tmp_path / "snap", occupied)
    assert (occupied / "keep.txt").read_text() == "mine"
    assert backup_cli.main(["restore", str(tmp_path / "snap"), str(occupied)]) == 1
    assert "not an empty directory" in capsys.readouterr().err
    assert backup_cli.main(["verify", str(tmp_path / "snap")]) == 0
    assert backup_cli.main(["restore", str(tmp_path / "snap"), str(tmp_path / "fresh")]) == 0
    with pytest.raises(InvalidArgument, match="MANIFEST"):
        backup.verify(tmp_path)


def test_backends_without_snapshot_say_unimplemented():
    from polarmem_server.errors import Unimplemented
    from polarmem_server.storage.backend import Backend

    class Remote:  # any backend that does not override snapshot
        snapshot = Backend.snapshot

    with pytest.raises(Unimplemented, match="Remote storage backend has no snapshot"):
        Remote().snapshot("/tmp/x")


def test_a_100_kb_destination_answers_invalid_argument(server, tmp_path):
    """Path.exists() raises ENAMETOOLONG for it; before, that surfaced as INTERNAL."""
    for destination in (str(tmp_path / ("d" * 100_000)), "/" + "/".join(["x" * 200] * 500)):
        code, details = code_of(lambda: backup_call(server.address, destination))
        assert code == grpc.StatusCode.INVALID_ARGUMENT, (code, details[:200])
        assert "destination_dir" in details and len(details) <= 1024


def test_backup_is_off_without_a_backup_dir(tmp_path):
    """The RPC writes on the server's filesystem: without a configured fence it is refused."""
    with PolarMemServer(make_config(tmp_path)) as server:
        code, details = code_of(lambda: backup_call(server.address, str(tmp_path / "anywhere")))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "backup_dir" in details
    assert not (tmp_path / "anywhere").exists()


def test_backup_outside_the_backup_dir_is_refused(tmp_path):
    (tmp_path / "fence").mkdir()
    with PolarMemServer(make_config(tmp_path, backup_dir=str(tmp_path / "fence"))) as server:
        code, details = code_of(lambda: backup_call(server.address, str(tmp_path / "outside")))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "backup_dir" in details
        assert backup_call(server.address, str(tmp_path / "fence" / "inside")).files > 0


def _snapshot_with_items(tmp_path, items: int = 3) -> Path:
    with PolarMemServer(make_config(tmp_path, backup_dir=str(tmp_path))) as server:
        with PolarMemClient(server.address) as client:
            client.create_namespace("a", spaces=[("vis", DIM)], encoder="none")
            for i in range(items):
                client.remember("a", id=f"x{i}", vectors={"vis": vec(i)})
        backup_call(server.address, str(tmp_path / "snap"))
    return tmp_path / "snap"


def test_a_manifest_entry_without_sha256_is_refused_in_one_line(tmp_path, capsys):
    """Before: KeyError traceback from verify and restore."""
    snap = _snapshot_with_items(tmp_path)
    manifest = json.loads((snap / backup.MANIFEST_NAME).read_text())
    del manifest["files"][next(iter(manifest["files"]))]["sha256"]
    (snap / backup.MANIFEST_NAME).write_text(json.dumps(manifest))
    for command in (["verify", str(snap)], ["restore", str(snap), str(tmp_path / "r")]):
        assert backup_cli.main(command) == 1
        err = capsys.readouterr().err
        assert "sha256" in err and "Traceback" not in err and err.count("\n") == 1, err
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


def test_an_emptied_manifest_and_data_dir_is_not_restored(tmp_path, capsys):
    """Before: restored into an empty store with exit status 0."""
    snap = _snapshot_with_items(tmp_path)
    manifest = json.loads((snap / backup.MANIFEST_NAME).read_text())
    manifest["files"], manifest["namespace_items"], manifest["total_bytes"] = {}, {}, 0
    (snap / backup.MANIFEST_NAME).write_text(json.dumps(manifest))
    shutil.rmtree(snap / "data")
    (snap / "data").mkdir()
    assert backup_cli.main(["restore", str(snap), str(tmp_path / "r")]) == 1
    assert "CURRENT" in capsys.readouterr().err
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


def test_a_manifest_whose_counts_disagree_with_the_data_is_refused_at_restore(tmp_path, capsys):
    snap = _snapshot_with_items(tmp_path, items=3)
    manifest = json.loads((snap / backup.MANIFEST_NAME).read_text())
    manifest["namespace_items"] = {"a": 300}
    (snap / backup.MANIFEST_NAME).write_text(json.dumps(manifest))
    assert backup_cli.main(["restore", str(snap), str(tmp_path / "r")]) == 1
    assert "a: 3" in capsys.readouterr().err
    assert not any((tmp_path / "r").iterdir())  # nothing left that a server could open
