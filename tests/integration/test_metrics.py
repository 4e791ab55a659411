"""The /metrics exposition of a real server: process_* and python_* collectors, build info, no
*_created series, the micro-batcher's queue gauges (lexical engine), store errors, the optional
namespace label, the KV-cache collector, and promtool's check of the whole text."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import grpc
import numpy as np
import pytest
from prometheus_client import generate_latest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.api.metrics import LATENCY_BUCKETS, ServerMetrics, package_version
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces.client import PolarMemClient
from polarmem_server.index import build_info
from polarmem_server.scoring import create_engine
from polarmem_server.scoring.base import EngineError
from polarmem_server.scoring.verification import Verifier
from servertools import DIM, make_config

REPO = Path(__file__).resolve().parents[2]


def promtool_check(body: str) -> None:
    tool = next(
        (
            c
            for c in (os.environ.get("POLARMEM_PROMTOOL"), str(REPO / "build/tools/promtool"), shutil.which("promtool"))
            if c and Path(c).exists()
        ),
        None,
    )
    if tool is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing on CI: `make test` extracts it to build/tools/promtool")
        pytest.skip("promtool not found (make test extracts it from Debian's prometheus package)")
    check = subprocess.run([tool, "check", "metrics"], input=body, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def scrape(server) -> str:
    return urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=5).read().decode()


def sample(body: str, name: str) -> float | None:
    """The value of an unlabelled sample, or None when the series is absent."""
    match = re.search(rf"^{re.escape(name)} (\S+)$", body, re.M)
    return None if match is None else float(match.group(1))


def start(config) -> PolarMemServer:
    server = PolarMemServer(config).start()
    # server.py is to call attach_engine itself (see the metrics branch's report); until it does,
    # the engine series are attached here. Idempotent, so this is a no-op once it is wired.
    if server.verifier is not None:
        server.metrics.attach_engine(server.verifier)
    return server


def test_exposition_has_process_build_info_and_no_created_series(tmp_path):
    with PolarMemServer(make_config(tmp_path)) as server:
        client = PolarMemClient(server.address)
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        client.close()
        body = scrape(server)
    for name in (
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
        "process_open_fds",
        "process_max_fds",
        "process_start_time_seconds",
    ):
        assert sample(body, name) is not None, name
    assert sample(body, "process_start_time_seconds") <= time.time()
    assert "python_gc_collections_total" in body and "python_info{" in body
    core = build_info()
    line = next(line for line in body.splitlines() if line.startswith("polarmem_build_info{"))
    assert line.endswith(" 1.0")
    for label, value in (
        ("version", package_version()),
        ("simd_active", core["simd_active"]),
        ("compiler", core["compiler"]),
        ("engine", ""),
        ("engine_version", ""),
    ):
        assert f'{label}="{value}"' in line, (label, line)
    assert "_created" not in body
    assert 'polarmem_rpc_requests_total{code="OK",method="CreateNamespace"} 1.0' in body
    promtool_check(body)


def test_engine_queue_gauges_move_with_waiting_requests(tmp_path):
    # A long batching delay and a large batch keep a lone request in the queue for the delay.
    config = make_config(tmp_path, engine="lexical", engine_max_delay_ms=1500.0, engine_max_batch=1024, engine_queue=7)
    server = start(config)
    client = PolarMemClient(server.address)
    try:
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        body = scrape(server)
        assert sample(body, "polarmem_engine_queue_capacity") == 7.0
        assert sample(body, "polarmem_engine_queue_requests") == 0.0
        assert 'engine="lexical"' in next(line for line in body.splitlines() if line.startswith("polarmem_build_info{"))
        results = []

        def remember():
            request = pb.RememberRequest(
                namespace="t",
                item=pb.ItemInput(
                    id="q1",
                    text="a dog, no cat",
                    verify_concepts=["dog", "cat"],
                    vectors={"vis": pb.VectorValue(values=np.ones(DIM, dtype=np.float32).tolist())},
                ),
            )
            results.append(client._stub.Remember(request, timeout=20).item)

        thread = threading.Thread(target=remember)
        thread.start()
        seen = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and thread.is_alive():
            seen.append(sample(scrape(server), "polarmem_engine_queue_requests"))
            if seen[-1] == 1.0:
                break
            time.sleep(0.05)
        thread.join(timeout=20)
        assert 1.0 in seen, seen
        assert results and "dog" in results[0].has
        body = scrape(server)
        assert sample(body, "polarmem_engine_queue_requests") == 0.0
        assert sample(body, "polarmem_engine_batch_prompts_count") == 1.0
        promtool_check(body)
    finally:
        client.close()
        server.stop()


def test_store_errors_counter_by_operation(tmp_path):
    with PolarMemServer(make_config(tmp_path)) as server:
        server.metrics.count_store_error("write", "disk_full")
        server.metrics.count_store_error("read")
        with pytest.raises(ValueError, match="op must be one of read, write"):
            server.metrics.count_store_error("delete")
        body = scrape(server)
    assert 'polarmem_store_errors_total{kind="disk_full",op="write"} 1.0' in body
    assert 'polarmem_store_errors_total{kind="io_error",op="read"} 1.0' in body


def test_namespace_label_only_when_asked(tmp_path):
    """Off by default; on, only namespaces that exist are named (a made-up name is labelled "")."""
    with PolarMemServer(make_config(tmp_path)) as server:
        client = PolarMemClient(server.address)
        client.create_namespace("secret-project", spaces=[("vis", DIM)], encoder="none")
        client.close()
        plain, labelled = ServerMetrics(), ServerMetrics(namespace_labels=True)
        for metrics in (plain, labelled):
            metrics.attach(server.memory)
            metrics.observe_rpc("Recall", "OK", 0.01, namespace="secret-project")
            metrics.observe_rpc("Recall", "NOT_FOUND", 0.01, namespace="made-up-by-a-client")
        plain_body = generate_latest(plain.registry).decode()
        labelled_body = generate_latest(labelled.registry).decode()
    rpc_lines = [line for line in plain_body.splitlines() if line.startswith("polarmem_rpc_")]
    assert not [line for line in rpc_lines if "namespace" in line]  # (MemoryCollector's sizes follow attach())
    assert 'polarmem_rpc_requests_total{code="OK",method="Recall"} 1.0' in plain_body
    assert 'polarmem_rpc_requests_total{code="OK",method="Recall",namespace="secret-project"} 1.0' in labelled_body
    assert 'polarmem_rpc_requests_total{code="NOT_FOUND",method="Recall",namespace=""} 1.0' in labelled_body
    assert "made-up" not in labelled_body
    assert 'polarmem_rpc_latency_seconds_count{method="Recall",namespace="secret-project"} 1.0' in labelled_body
    promtool_check(labelled_body)


class CacheStatsEngine:
    """Stands for the TensorRT-LLM runtime's statistics interface only: cache_stats() returns
    fixed counters in the engine's format (tensorrt_llm_engine.TensorRTLLMEngine.cache_stats).
    It scores nothing; the scoring path is the lexical engine's. TensorRT-LLM itself runs only on
    the GPU machine (benchmarks/gpu_check_trtllm.sh)."""

    def __init__(self, fail: bool = False) -> None:
        self._lexical = create_engine("lexical")
        self.info = self._lexical.info
        self.fail = fail

    def score(self, requests):
        return self._lexical.score(requests)

    def cache_stats(self) -> dict:
        if self.fail:
            raise EngineError("tensorrt_llm get_stats failed: the executor has shut down")
        return {
            "reused_blocks": 30,
            "missed_blocks": 10,
            "hit_rate": 0.75,
            "tokens_per_block": 32,
            "iterations_seen": 4,
            "warm_prompts": 5,
        }

    def close(self) -> None:
        pass


@pytest.mark.parametrize("labelled", [False, True])
def test_the_front_calls_join_the_rpc_series(labelled):
    """The compiled front's own answers (its stats' ``finished``, by method) are added into the
    RPC series: counts by code, the latency histogram bucket by bucket (the same bounds),
    INTERNAL into polarmem_internal_errors_total; the front does not split by namespace, so with
    namespace labels its calls carry namespace ""."""
    metrics = ServerMetrics(namespace_labels=labelled)
    metrics.observe_rpc("Recall", "OK", 0.004)  # the Python listener's (a handed-over call)
    metrics.internal_errors.inc()
    codes, latency = [0] * 17, [0] * (len(LATENCY_BUCKETS) + 1)
    codes[grpc.StatusCode.OK.value[0]] = 3
    codes[grpc.StatusCode.INVALID_ARGUMENT.value[0]] = 1
    codes[grpc.StatusCode.INTERNAL.value[0]] = 2
    latency[0], latency[5] = 4, 2  # four under 0.25 ms, two in (5 ms, 10 ms]
    idle = {"codes": [0] * 17, "latency_counts": [0] * (len(LATENCY_BUCKETS) + 1), "latency_sum": 0.0}
    metrics.attach_front(
        lambda: {
            "finished": {"Recall": {"codes": codes, "latency_counts": latency, "latency_sum": 0.5}, "Remember": idle}
        }
    )
    body = generate_latest(metrics.registry).decode()
    ns = ',namespace=""' if labelled else ""
    assert f'polarmem_rpc_requests_total{{code="OK",method="Recall"{ns}}} 4.0' in body
    assert f'polarmem_rpc_requests_total{{code="INVALID_ARGUMENT",method="Recall"{ns}}} 1.0' in body
    assert f'polarmem_rpc_requests_total{{code="INTERNAL",method="Recall"{ns}}} 2.0' in body
    assert "polarmem_internal_errors_total 3.0" in body
    assert 'method="Remember"' not in body  # no call, no series
    assert f'polarmem_rpc_latency_seconds_bucket{{le="0.00025",method="Recall"{ns}}} 4.0' in body
    assert f'polarmem_rpc_latency_seconds_bucket{{le="0.005",method="Recall"{ns}}} 5.0' in body  # + the 4 ms call
    assert f'polarmem_rpc_latency_seconds_bucket{{le="0.01",method="Recall"{ns}}} 7.0' in body
    assert f'polarmem_rpc_latency_seconds_count{{method="Recall"{ns}}} 7.0' in body
    assert f'polarmem_rpc_latency_seconds_sum{{method="Recall"{ns}}} 0.504' in body
    promtool_check(body)


def test_the_front_recalls_join_the_recall_series():
    """The front's native answers' hits by tier and suppressed items are added to the Python
    listener's in polarmem_recall_hits_total and polarmem_recall_suppressed_items_total; a tier
    neither counted has no series."""
    metrics = ServerMetrics()
    response = pb.RecallResponse(hits=[pb.Hit(id="a", s_log=1), pb.Hit(id="b", s_log=0)], suppressed=[pb.Hit(id="c")])
    metrics.count_recall(response, "core")  # the Python listener's
    metrics.attach_front(lambda: {"hits": {"conflict": 0, "neutral": 2, "entailed": 5}, "suppressed": 3})
    body = generate_latest(metrics.registry).decode()
    assert 'polarmem_recall_hits_total{tier="entailed"} 6.0' in body
    assert 'polarmem_recall_hits_total{tier="neutral"} 3.0' in body
    assert 'tier="conflict"' not in body
    assert "polarmem_recall_suppressed_items_total 4.0" in body
    promtool_check(body)


@pytest.mark.parametrize("fail", [False, True])
def test_kv_cache_collector(fail):
    metrics = ServerMetrics()
    verifier = Verifier(CacheStatsEngine(fail=fail))
    try:
        metrics.attach_engine(verifier)
        metrics.attach_engine(verifier)  # idempotent: no duplicate registration
        body = generate_latest(metrics.registry).decode()
    finally:
        verifier.close()
    expected = {
        "polarmem_engine_kv_reused_blocks_total": 30.0,
        "polarmem_engine_kv_missed_blocks_total": 10.0,
        "polarmem_engine_kv_hit_ratio": 0.75,
        "polarmem_engine_prefix_warm_prompts_total": 5.0,
    }
    for name, value in expected.items():
        assert sample(body, name) == (None if fail else value), name
    # a failing statistics call leaves the rest of the exposition intact
    assert sample(body, "polarmem_engine_queue_capacity") == 1024.0
    promtool_check(body)


def test_image_refused_per_request_not_per_batch():
    """An engine that reads text only (here named tensorrt_llm, as the TensorRT-LLM engine is)
    refuses an image in the submitting call; a text request in the same window is scored."""
    engine = create_engine("lexical")
    engine.info = type(engine.info)("tensorrt_llm", model="m")
    verifier = Verifier(engine, max_delay_ms=200.0)
    try:
        text_future = verifier.submit("a dog", b"", ["dog"], ["t"])
        with pytest.raises(Exception, match="reads text only") as refused:
            verifier.submit("a cat", b"\x89PNG....", ["cat"], ["t"])
        assert type(refused.value).__name__ == "InvalidArgument"
        assert verifier.result(text_future, ["dog"]) == {"dog": [0.95]}
    finally:
        verifier.close()
