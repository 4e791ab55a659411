"""A real I/O error on write that is not a full disk: `polarmem serve` with its file-size limit
(RLIMIT_FSIZE, set from outside with prlimit) lowered to one byte, so every append to the
write-ahead log fails with EFBIG ("File too large") — the kernel's error, no fault injection and
no root. docs/failure-behaviour.md, "Disk full and I/O errors", states what must happen: writes
answer UNAVAILABLE naming the error and store nothing, through the core's own door (a new note
the compiled front stores) and the library's (Observe, CreateNamespace); reads keep working;
the writes health is NOT_SERVING; once the limit is lifted writes resume by themselves, and a
restart finds every acknowledged write. (CPython ignores SIGXFSZ, so the process is not killed.)"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
import urllib.request

import grpc
import numpy as np
import pytest

from polarmem_server.api.server import WRITES_HEALTH_NAME
from polarmem_server.faces.client import PolarMemClient
from docblocks import free_port

DIM = 8


def vec(i: int) -> list[float]:
    return (np.random.default_rng(i).standard_normal(DIM) + 0.1).tolist()


def serve(data_dir, metrics_port: int) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, "-m", "polarmem_server.faces.cli", "serve", "--address", "127.0.0.1:0"]
    command += ["--data-dir", str(data_dir), "--metrics-port", str(metrics_port), "--grace-s", "1"]
    # (cwd: not the checkout, whose source tree would shadow the installed package)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=data_dir.parent)
    line = process.stdout.readline()
    assert "serving on" in line, process.stderr.read() if process.poll() is not None else line
    return process, line.split("serving on ")[1].split(";")[0].strip()


def stop(process: subprocess.Popen) -> str:
    process.terminate()
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    return stderr


def refused_as_io_error(call) -> None:
    with pytest.raises(grpc.RpcError) as info:
        call()
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE, info.value
    assert "the store could not write (" in info.value.details() and "File too large" in info.value.details()
    assert "nothing was stored; retry later" in info.value.details()


def test_an_io_error_on_write_answers_unavailable_keeps_reads_and_resumes(tmp_path):
    metrics_port = free_port()
    process, address = serve(tmp_path / "data", metrics_port)
    try:
        client = PolarMemClient(address, retries=1)
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        for i in range(5):
            client.remember("t", id=f"i{i}", vectors={"vis": vec(i)}, states={"dog": "has"})
        _, hard = resource.prlimit(process.pid, resource.RLIMIT_FSIZE)
        resource.prlimit(process.pid, resource.RLIMIT_FSIZE, (1, hard))

        refused_as_io_error(lambda: client.remember("t", id="lost", vectors={"vis": vec(5)}))  # the core's door
        refused_as_io_error(lambda: client.observe("t", "i0", states={"dog": "not_has"}))  # the library's
        refused_as_io_error(lambda: client.create_namespace("u", spaces=[("vis", DIM)], encoder="none"))
        assert client.health(WRITES_HEALTH_NAME) == "NOT_SERVING"
        assert client.health("") == "SERVING"
        assert client.recall("t", vectors={"vis": vec(1)}, required=["dog"], top_k=1).hits[0].id == "i1"
        assert list(client.get_item("t", "i0").item.has) == ["dog"]  # the refused Observe changed nothing
        with pytest.raises(grpc.RpcError) as gone:
            client.get_item("t", "lost")
        assert gone.value.code() == grpc.StatusCode.NOT_FOUND
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read().decode()
        assert 'polarmem_store_errors_total{kind="io_error",op="write"}' in metrics
        assert "polarmem_store_writable 0.0" in metrics

        resource.prlimit(process.pid, resource.RLIMIT_FSIZE, (hard, hard))
        deadline = time.monotonic() + 15
        while client.health(WRITES_HEALTH_NAME) != "SERVING":
            assert time.monotonic() < deadline, "writes health never came back"
            time.sleep(0.2)
        assert client.remember("t", id="lost", vectors={"vis": vec(5)}).id == "lost"
        client.observe("t", "i0", states={"dog": "not_has"})
        assert client.get_namespace("t").item_count == 6
        client.close()
    finally:
        stderr = stop(process)
    assert "File too large" in stderr and "writes resume" in stderr  # the ERROR line, then the WARNING
    process, address = serve(tmp_path / "data", -1)
    try:
        with PolarMemClient(address) as client:
            assert client.get_namespace("t").item_count == 6
            assert list(client.get_item("t", "i0").item.not_has) == ["dog"]
    finally:
        stop(process)
