"""Serving behaviour: health transitions, restart, graceful shutdown, auth, TLS, reflection,
metrics (checked by promtool), concurrency limits, concurrent writers and readers, config."""

import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import numpy as np
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from polarmem_server.library import memory as memory_module
from polarmem_server.faces.client import PolarMemClient, item_message
from polarmem_server.api.config import ServerConfig, load_config
from polarmem_server.api.server import PolarMemServer
from servertools import DIM, ONE_TEMPLATE, TWO_TEMPLATES, make_config, self_signed_certificate

REPO = Path(__file__).resolve().parents[2]


def vec(seed):
    return np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)


def test_health_is_not_serving_until_indexes_are_rebuilt(tmp_path, monkeypatch):
    release = threading.Event()
    original = memory_module.Memory.__init__

    def slow_open(self, *args, **kwargs):
        release.wait(10)
        original(self, *args, **kwargs)

    monkeypatch.setattr(memory_module.Memory, "__init__", slow_open)
    server = PolarMemServer(make_config(tmp_path, address="127.0.0.1:0"))
    starter = threading.Thread(target=server.start)
    starter.start()
    try:
        while server.port == 0 or server._grpc is None:
            time.sleep(0.01)
        time.sleep(0.2)
        # no wait for readiness (the clients' default): this test sees the NOT_SERVING answer itself
        with PolarMemClient(server.address, wait_for_ready=False) as client:
            assert client.health() == "NOT_SERVING"
            with pytest.raises(grpc.RpcError) as info:
                client.list_namespaces()
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
            release.set()
            starter.join(10)
            assert client.health() == "SERVING"
            assert client.health("polarmem.v1.MemoryService") == "SERVING"
    finally:
        release.set()
        starter.join(10)
        server.stop()


def test_draining_reports_not_serving_then_finishes_in_flight_calls(tmp_path):
    server = PolarMemServer(make_config(tmp_path, drain_notice_s=0.5, grace_s=5.0)).start()
    client = PolarMemClient(server.address)
    client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")

    def slow_items():
        for i in range(6):
            time.sleep(0.15)
            yield item_message(id=f"s{i}", vectors={"vis": vec(i)})

    with ThreadPoolExecutor(1) as pool:
        in_flight = pool.submit(client.remember_stream, "t", slow_items(), items_per_message=1)
        time.sleep(0.1)
        stopper = threading.Thread(target=server.stop)
        stopper.start()
        time.sleep(0.2)
        assert client.health() == "NOT_SERVING"
        assert in_flight.result(10).stored == 6  # the in-flight call finished
        stopper.join(10)
    client.close()
    # Everything acknowledged before the stop is there after a restart.
    with PolarMemServer(make_config(tmp_path)) as again, PolarMemClient(again.address) as c:
        assert c.get_namespace("t").item_count == 6


def test_restart_keeps_everything_and_gives_the_same_recall(tmp_path):
    query = dict(vectors={"vis": vec(100)}, required=["dog"], forbidden=["cat"], top_k=15, include_context=True)
    with PolarMemServer(make_config(tmp_path)) as server, PolarMemClient(server.address) as client:
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none", kappa=0.7, templates=TWO_TEMPLATES)
        items = [
            item_message(
                id=f"i{i:03d}",
                vectors={"vis": vec(i)},
                scores={
                    "dog": [0.9 if i % 3 else 0.1] * 2,
                    "cat": [0.8 if i % 4 == 0 else 0.2] * 2,
                    "car": [0.5, 0.55],
                },
            )
            for i in range(60)
        ]
        assert client.remember_stream("t", items).stored == 60
        client.forget("t", "i007")
        client.observe("t", "i010", scores={"cat": [0.99, 0.99]})
        before = client.recall("t", **query)
        info_before = client.get_namespace("t")
    with PolarMemServer(make_config(tmp_path)) as server, PolarMemClient(server.address) as client:
        after = client.recall("t", **query)
        assert [(h.id, h.s_log) for h in after.hits] == [(h.id, h.s_log) for h in before.hits]
        assert [h.s_sem for h in after.hits] == pytest.approx([h.s_sem for h in before.hits])
        assert after.context == before.context
        assert client.get_namespace("t") == info_before
        assert client.get_item("t", "i010").item.version == 2


def test_bearer_tokens(tmp_path):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        '[tokens]\nadmin = { token = "s3cret", namespaces = ["*"], role = "admin" }\n'
        'reader = { token = "r3ad", namespaces = ["public"], role = "admin" }\n'
    )
    with PolarMemServer(make_config(tmp_path, tokens_file=str(tokens))) as server:
        with PolarMemClient(server.address) as anonymous:
            assert anonymous.health() == "SERVING"  # health stays open
            with pytest.raises(grpc.RpcError) as info:
                anonymous.list_namespaces()
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with PolarMemClient(server.address, token="wrong") as bad:
            with pytest.raises(grpc.RpcError) as info:
                bad.list_namespaces()
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with PolarMemClient(server.address, token="s3cret") as admin:
            admin.create_namespace("public", spaces=[("vis", DIM)], encoder="none")
            admin.create_namespace("private", spaces=[("vis", DIM)], encoder="none")
        with PolarMemClient(server.address, token="r3ad") as reader:
            assert [n.name for n in reader.list_namespaces()] == ["public"]
            reader.remember("public", id="a", vectors={"vis": vec(1)})
            with pytest.raises(grpc.RpcError) as info:
                reader.remember("private", id="a", vectors={"vis": vec(1)})
            assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED


def test_tls(tmp_path):
    cert, key = self_signed_certificate(tmp_path, "localhost", "DNS:localhost,IP:127.0.0.1")
    with PolarMemServer(make_config(tmp_path, tls_cert=str(cert), tls_key=str(key))) as server:
        with PolarMemClient(f"localhost:{server.port}", root_certificates=cert.read_bytes()) as client:
            client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
            assert client.health() == "SERVING"
        with PolarMemClient(server.address) as plaintext:
            with pytest.raises(grpc.RpcError):
                plaintext.list_namespaces()


def test_reflection_lists_the_services(server):
    with grpc.insecure_channel(server.address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        responses = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
        names = {s.name for r in responses for s in r.list_services_response.service}
    assert {"polarmem.v1.MemoryService", "grpc.health.v1.Health"} <= names


def promtool() -> str | None:
    for candidate in (
        os.environ.get("POLARMEM_PROMTOOL"),
        str(REPO / "build/tools/promtool"),
        shutil.which("promtool"),
    ):
        if candidate and Path(candidate).exists():
            return candidate
    return None


@pytest.fixture
def labelled_server(tmp_path):
    """Per-namespace series are opt-in (metrics_namespace_labels): the metrics port has no auth."""
    srv = PolarMemServer(make_config(tmp_path, metrics_namespace_labels=True)).start()
    yield srv
    srv.stop()


def test_metrics_exposition(labelled_server, tmp_path):
    server = labelled_server
    client = PolarMemClient(server.address)
    ns = "t"
    client.create_namespace(ns, spaces=[("vis", DIM)], encoder="none", templates=ONE_TEMPLATE)
    client.remember(ns, id="a", vectors={"vis": vec(1)}, scores={"dog": [0.9], "cat": [0.1], "car": [0.5]})
    client.remember(ns, id="b", kind="text", text="no dog", vectors={"vis": vec(2)})
    client.recall(ns, vectors={"vis": vec(3)}, required=["dog"], top_k=1, suppressed_k=1)
    with pytest.raises(grpc.RpcError):
        client.get_item(ns, "missing")
    body = urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=5).read().decode()
    # with metrics_namespace_labels on, RPC series carry the (existing) namespace too
    for line in (
        'polarmem_rpc_requests_total{code="OK",method="Remember",namespace="t"} 2.0',
        'polarmem_rpc_requests_total{code="NOT_FOUND",method="GetItem",namespace="t"} 1.0',
        'polarmem_items{kind="visual",namespace="t"} 1.0',
        'polarmem_items{kind="text",namespace="t"} 1.0',
        'polarmem_edges{namespace="t",polarity="not_has"} 2.0',
        'polarmem_concepts{namespace="t"} 3.0',
        'polarmem_recall_hits_total{tier="entailed"} 1.0',
        "polarmem_recall_suppressed_items_total 1.0",
        "polarmem_partition_uncertain_ratio_count 1.0",
        "polarmem_rpc_in_flight 0.0",
    ):
        assert line in body, line
    assert "polarmem_rpc_latency_seconds_bucket" in body and "polarmem_store_write_seconds_count" in body
    assert "polarmem_index_rebuild_seconds" in body
    tool = promtool()
    if tool is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing on CI: `make test` extracts it to build/tools/promtool")
        pytest.skip("promtool not found (make test extracts it from Debian's prometheus package)")
    check = subprocess.run([tool, "check", "metrics"], input=body, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_concurrency_limit_rejects_promptly(tmp_path):
    with PolarMemServer(make_config(tmp_path, max_concurrent_rpcs=2, workers=8)) as server:
        client = PolarMemClient(server.address)
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")

        def slow_stream(tag):
            def items():
                for i in range(5):
                    time.sleep(0.2)
                    yield item_message(id=f"{tag}{i}", vectors={"vis": vec(i)})

            return client.remember_stream("t", items(), items_per_message=1)

        with ThreadPoolExecutor(2) as pool:
            busy = [pool.submit(slow_stream, t) for t in ("a", "b")]
            time.sleep(0.3)
            started = time.perf_counter()
            with pytest.raises(grpc.RpcError) as info:
                client.get_namespace("t")
            assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert time.perf_counter() - started < 1.0
            assert [f.result(10).stored for f in busy] == [5, 5]
        assert client.get_namespace("t").item_count == 10
        client.close()


def test_load_at_the_limit_is_never_refused(tmp_path):
    # as many back-to-back callers as the limit admits, with fewer configured workers than
    # that: every call must be admitted (the pool is raised; a slot is free before the answer)
    limit, calls = 4, 150
    with PolarMemServer(make_config(tmp_path, max_concurrent_rpcs=limit, workers=2)) as server:
        with PolarMemClient(server.address) as setup:
            setup.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
            setup.remember("t", id="a", vectors={"vis": vec(0)}, states={"dog": "has"})

        def caller(seed):
            codes = []
            with PolarMemClient(server.address) as c:
                for i in range(calls):
                    try:
                        c.recall("t", vectors={"vis": vec(seed * 1000 + i)}, required=["dog"])
                        codes.append("OK")
                    except grpc.RpcError as exc:
                        codes.append(exc.code().name)
            return codes

        with ThreadPoolExecutor(limit) as pool:
            results = [code for codes in pool.map(caller, range(limit)) for code in codes]
    assert results == ["OK"] * (limit * calls)


def test_concurrent_writers_and_readers_lose_nothing(server, client, ns):
    writers, per_writer = 6, 40
    errors: list[BaseException] = []
    client.update_namespace(ns, concepts=["dog"])  # readers may recall "dog" before any writer stored one

    def write(w):
        with PolarMemClient(server.address) as c:
            for i in range(per_writer):
                c.remember(
                    ns,
                    id=f"w{w}-{i}",
                    vectors={"vis": vec(w * 1000 + i)},
                    states={"dog": "has" if i % 2 else "not_has"},
                )

    def read(r):
        with PolarMemClient(server.address) as c:
            for i in range(60):
                response = c.recall(ns, vectors={"vis": vec(r + i)}, required=["dog"], top_k=5)
                assert all(h.status != "CONFLICT" for h in response.hits[: response.tier_counts.entailed])

    with ThreadPoolExecutor(10) as pool:
        futures = [pool.submit(write, w) for w in range(writers)] + [pool.submit(read, r) for r in range(4)]
        for f in futures:
            try:
                f.result(60)
            except BaseException as exc:  # collected, then asserted
                errors.append(exc)
    assert not errors
    info = client.get_namespace(ns)
    assert info.item_count == writers * per_writer
    assert client.get_concept(ns, "dog", page_size=1000).stats.has == writers * per_writer // 2


def test_config_precedence(tmp_path):
    toml = tmp_path / "polarmem.toml"
    toml.write_text('[server]\nworkers = 3\nmax_concurrent_rpcs = 7\ndurability = "async"\n')
    config = load_config(flags={"workers": 5}, env={"POLARMEM_MAX_CONCURRENT_RPCS": "9"}, config_file=str(toml))
    assert (config.workers, config.max_concurrent_rpcs, config.durability) == (5, 9, "async")
    assert load_config(env={}).workers == ServerConfig().workers
    with pytest.raises(ValueError, match="durability"):
        load_config(env={"POLARMEM_DURABILITY": "maybe"})
    bad = tmp_path / "bad.toml"
    bad.write_text("[server]\nspeed = 11\n")
    with pytest.raises(ValueError, match="unknown settings"):
        load_config(env={}, config_file=str(bad))


def test_serve_help_documents_every_setting(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "polarmem_server.faces.cli", "serve", "--help"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    for field in ServerConfig.__dataclass_fields__:
        assert f"--{field.replace('_', '-')}" in out and f"POLARMEM_{field.upper()}" in out


def test_serve_process_stops_cleanly_on_sigterm(tmp_path):
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "polarmem_server.faces.cli",
            "serve",
            "--address",
            "127.0.0.1:0",
            "--data-dir",
            str(tmp_path / "d"),
            "--metrics-port",
            "-1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    line = process.stdout.readline()
    address = line.split("serving on ")[1].split(";")[0]
    with PolarMemClient(address) as client:
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        client.remember("t", id="a", vectors={"vis": vec(1)})
    process.terminate()
    _, err = process.communicate(timeout=15)
    assert process.returncode == 0, err
    assert "stopped" in err


def test_the_servers_daemons_run_and_none_outlives_its_stop(tmp_path):
    """The server's background loops are daemons of one group (library/daemons.py): the store
    watchdog, the scrub and the core's view keeper here, the graph checkpoints in its Memory;
    after stop() no thread of theirs is left."""
    names = {"polarmem-store-watchdog", "polarmem-scrub", "polarmem-core-views", "polarmem-graph-checkpoints"}
    server = PolarMemServer(make_config(tmp_path, scrub_interval_s=30, graph_checkpoint_s=30)).start()
    try:
        assert set(server.daemons.names()) == {"polarmem-store-watchdog", "polarmem-scrub", "polarmem-core-views"}
        assert server.memory.daemons.names() == ["polarmem-graph-checkpoints"]
        assert names <= {t.name for t in threading.enumerate()}
    finally:
        server.stop(grace_s=0)
    deadline = time.monotonic() + 10  # the scrub is not waited for; with no pass running it ends at once
    while names & {t.name for t in threading.enumerate() if t.is_alive()} and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not names & {t.name for t in threading.enumerate() if t.is_alive()}
    assert server.daemons.names() == []
