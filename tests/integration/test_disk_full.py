"""A full disk: writes say so, reads keep working, writes resume by themselves once space is back,
and SIGTERM still ends the process.

Before: writes answered INTERNAL, kept failing after space was freed (RocksDB keeps a failed log
writer's error) until a restart, and SIGTERM never finished (the stop thread died in
store.flush()). Runs on a small tmpfs; the tests need root to mount it and skip otherwise."""

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import grpc
import numpy as np
import pytest

from polarmem_server.api.server import STOP_BUDGET_S, WRITES_HEALTH_NAME, PolarMemServer
from polarmem_server.faces.client import PolarMemClient
from servertools import DIM, make_config

TMPFS_MB = 24
PAD = "x" * 20_000  # metadata per item: fills the disk in a few hundred writes


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_MB}m", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({result.stderr.strip() or 'not root'}): the disk-full tests need one")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(mount: Path, leave_bytes: int) -> Path:
    """A ballast file that leaves about `leave_bytes` free on the tmpfs."""
    stats = os.statvfs(mount)
    ballast = mount / "ballast"
    with open(ballast, "wb") as f:
        f.write(b"\0" * max(0, stats.f_bavail * stats.f_frsize - leave_bytes))
    return ballast


def vec(i: int) -> list[float]:
    return (np.random.default_rng(i).standard_normal(DIM) + 0.1).tolist()


def write_until_full(client: PolarMemClient, ns: str, limit: int = 5000) -> tuple[list[str], grpc.RpcError]:
    stored = []
    for i in range(limit):
        try:
            client.remember(ns, id=f"i{i}", vectors={"vis": vec(i)}, metadata={"pad": PAD})
            stored.append(f"i{i}")
        except grpc.RpcError as exc:
            return stored, exc
    pytest.fail(f"{limit} writes of {len(PAD)} bytes did not fill a {TMPFS_MB} MB disk")


def test_disk_full_answers_resource_exhausted_keeps_reads_and_resumes_without_restart(small_disk, tmp_path):
    config = make_config(tmp_path, data_dir=str(small_disk / "data"))
    server = PolarMemServer(config).start()
    try:
        client = PolarMemClient(server.address)
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        ballast = fill(small_disk, 3 * 1024 * 1024)
        stored, error = write_until_full(client, "t")
        assert stored, "nothing was written before the disk filled"
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, error
        assert "disk is full" in error.details()
        failed_id = f"i{len(stored)}"

        # While full: every write says so, health says writes are down, reads work.
        with pytest.raises(grpc.RpcError) as again:
            client.remember("t", id="another", vectors={"vis": vec(1)})
        assert again.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert client.health(WRITES_HEALTH_NAME) == "NOT_SERVING"
        assert client.health("") == "SERVING"
        assert client.get_item("t", stored[0]).item.id == stored[0]
        assert client.recall("t", vectors={"vis": vec(0)}, top_k=1).hits[0].id == stored[0]
        for missing in (failed_id, "another"):  # a rejected write stored nothing
            with pytest.raises(grpc.RpcError) as gone:
                client.get_item("t", missing)
            assert gone.value.code() == grpc.StatusCode.NOT_FOUND

        # Space back: writes resume by themselves (the watchdog reopens the store), no restart.
        ballast.unlink()
        deadline = time.monotonic() + 15
        while client.health(WRITES_HEALTH_NAME) != "SERVING":
            assert time.monotonic() < deadline, "writes health never came back"
            time.sleep(0.2)
        assert client.remember("t", id=failed_id, vectors={"vis": vec(7)}).id == failed_id
        assert client.get_namespace("t").item_count == len(stored) + 1
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=5).read().decode()
        assert 'polarmem_store_errors_total{kind="disk_full",op="write"}' in metrics
        assert 'polarmem_store_recoveries_total{kind="resume"} 1.0' in metrics
        assert "polarmem_store_writable 1.0" in metrics
        if server.fast_front is not None:  # the core stored most notes itself and answered the full disk too
            remembers = server.fast_front.front.stats()["remember"]
            assert remembers["native"] > 0 and remembers["failed"] >= 2, remembers
            # and the RPC series count the front's refusals once each (beside any the library
            # answered), which the error-ratio alert reads
            full = server.metrics.registry.get_sample_value(
                "polarmem_rpc_requests_total", {"method": "Remember", "code": "RESOURCE_EXHAUSTED"}
            )
            by_library = server.metrics.requests.labels("Remember", "RESOURCE_EXHAUSTED")._value.get()
            assert full == remembers["failed"] + by_library, (full, remembers, by_library)
        client.close()
    finally:
        server.stop()
    # Every acknowledged write is there after a restart.
    server = PolarMemServer(config).start()
    try:
        with PolarMemClient(server.address) as client:
            assert client.get_namespace("t").item_count == len(stored) + 1
    finally:
        server.stop()


def test_sigterm_ends_a_server_whose_disk_is_full(small_disk, tmp_path):
    grace_s = 2.0
    command = [
        sys.executable,
        "-m",
        "polarmem_server.faces.cli",
        "serve",
        "--address",
        "127.0.0.1:0",
        "--data-dir",
        str(small_disk / "data"),
        "--metrics-port",
        "-1",
        "--grace-s",
        str(grace_s),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        line = process.stdout.readline()
        assert "serving on" in line, line + process.stderr.read()
        address = line.split("serving on ")[1].split(";")[0]
        with PolarMemClient(address) as client:
            client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
            fill(small_disk, 2 * 1024 * 1024)
            _, error = write_until_full(client, "t")
            assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=grace_s + STOP_BUDGET_S + 10)
        assert time.monotonic() - started < grace_s + STOP_BUDGET_S + 2
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        stderr = process.stderr.read()
        process.stdout.close()
        process.stderr.close()
    assert process.returncode in (0, 1), stderr
