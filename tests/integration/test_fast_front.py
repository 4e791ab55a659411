"""The compiled Recall front's own transport (api/fast_front.py, cpp/front) over real sockets: a
real server with the front on its address, RocksDB in a temp dir. What a Recall answers is the
core's one entry whichever listener takes it (test_core_recall.py, test_text_recall.py,
test_fast_front_appends.py); these tests check what only the compiled listener does: tokens
checked (and reloaded) without the Python listener, its counters on the metrics port (a refusal
the core states answered by the front itself), TLS,
admission beyond max_concurrent_rpcs, a handed-over call's deadline and cancel, and stopping with the
server, calls in flight drained (calls without their request message: test_transport_anomalies.py)."""

from __future__ import annotations

import threading
import time

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem_server.api.fast_front import unavailable_reason
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces.client import PolarMemClient
import front_ports
from servertools import DIM, make_config, self_signed_certificate

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))

CONCEPTS = ("dog", "cat", "car", "bus", "tree")
MODES = (pb.RECALL_MODE_HARD, pb.RECALL_MODE_SOFT, pb.RECALL_MODE_OFF, pb.RECALL_MODE_STRICT)


def stock(client, rng, count=100, namespace="t"):
    front_ports.stock(client, rng, CONCEPTS, DIM, namespace=namespace, count=count)


@pytest.fixture
def front_server(tmp_path):
    server = PolarMemServer(make_config(tmp_path, core_views="on_recall")).start()
    with PolarMemClient(server.address) as client:
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        stock(client, np.random.default_rng(5))
    yield server
    server.stop()


@pytest.fixture
def fast(front_server):
    """A stub on the server's address: the compiled front."""
    with grpc.insecure_channel(front_server.address) as channel:
        yield pb_grpc.MemoryServiceStub(channel)


def random_request(rng, **fields) -> pb.RecallRequest:
    request = front_ports.random_recall(rng, CONCEPTS, DIM, MODES)
    request.MergeFrom(pb.RecallRequest(**fields))
    for name in ("required", "forbidden"):  # lists given replace the drawn ones (MergeFrom appends)
        if name in fields:
            getattr(request, name)[:] = fields[name]
    return request


def test_tokens_are_checked_by_the_front(tmp_path):
    """The front admits a known token's Recalls itself (natively, by api/auth.py's rules); a
    missing, wrong or non-Bearer token, or a namespace the token does not name, it cannot admit:
    handed to the library, which refuses it (api/auth.py)."""
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        '[tokens.reader]\ntoken = "r-secret"\nnamespaces = ["t"]\nrole = "read"\n'
        '[tokens.admin]\ntoken = "a-secret"\nrole = "admin"\n'
    )
    server = PolarMemServer(make_config(tmp_path, core_views="on_recall", tokens_file=str(tokens))).start()
    try:
        admin = (("authorization", "Bearer a-secret"),)
        reader = (("authorization", "Bearer r-secret"),)
        with PolarMemClient(server.address, token="a-secret") as client:
            client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
            client.create_namespace("u", spaces=[("vis", DIM)], encoder="none")
            stock(client, np.random.default_rng(3), count=20)
        request = pb.RecallRequest(
            namespace="t", vectors={"vis": pb.VectorValue(values=[1.0] * DIM)}, explain=False, mode=pb.RECALL_MODE_HARD
        )
        with grpc.insecure_channel(server.address) as channel:
            fast = pb_grpc.MemoryServiceStub(channel)
            answers = [fast.Recall(request, metadata=reader) for _ in range(3)]  # the view made by the first
            assert len(answers[0].hits) == 10 and answers[0] == answers[1] == answers[2]
            stats = server.fast_front.front.stats()
            assert stats["native"] == 2
            for metadata in ((), (("authorization", "Bearer wrong"),), (("authorization", "Basic r-secret"),)):
                with pytest.raises(grpc.RpcError) as refused:
                    fast.Recall(request, metadata=metadata)
                assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED, metadata
            other = pb.RecallRequest()
            other.CopyFrom(request)
            other.namespace = "u"
            with pytest.raises(grpc.RpcError) as refused:
                fast.Recall(other, metadata=reader)  # a token without "u"
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED and "u" in refused.value.details()
            after = server.fast_front.front.stats()
            assert (after["native"], after["forwarded"]) == (stats["native"], stats["forwarded"] + 4)
            for _ in range(2):  # the view of "u" made by the first
                fast.Recall(other, metadata=admin)
            assert server.fast_front.front.stats()["native"] == 3  # the admin token's, natively
    finally:
        server.stop()


def test_a_token_reload_reaches_the_front(tmp_path):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text('[tokens.admin]\ntoken = "old-secret"\nrole = "admin"\n')
    server = PolarMemServer(make_config(tmp_path, core_views="on_recall", tokens_file=str(tokens))).start()
    try:
        with PolarMemClient(server.address, token="old-secret") as client:
            client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        request = pb.RecallRequest(
            namespace="t", vectors={"vis": pb.VectorValue(values=[1.0] * DIM)}, explain=False, mode=pb.RECALL_MODE_HARD
        )
        with grpc.insecure_channel(server.address) as channel:
            fast = pb_grpc.MemoryServiceStub(channel)
            for _ in range(2):
                fast.Recall(request, metadata=(("authorization", "Bearer old-secret"),))
            assert server.fast_front.front.stats()["native"] == 1
            tokens.write_text('[tokens.admin]\ntoken = "new-secret"\nrole = "admin"\n')
            server._reload_tokens()  # what SIGHUP runs
            with pytest.raises(grpc.RpcError) as refused:
                fast.Recall(request, metadata=(("authorization", "Bearer old-secret"),))
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            fast.Recall(request, metadata=(("authorization", "Bearer new-secret"),))
            assert server.fast_front.front.stats()["native"] == 2  # the new token is admitted natively
    finally:
        server.stop()


def test_the_front_exports_its_counters_on_the_metrics_port(front_server, fast):
    import urllib.request

    request = random_request(np.random.default_rng(7), mode=pb.RECALL_MODE_HARD)
    responses = [fast.Recall(request) for _ in range(3)]  # handed over, then twice natively
    # a refusal is the core's, answered by the front without the interpreter
    request.top_k = 0
    with pytest.raises(grpc.RpcError) as refused:
        fast.Recall(request)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "top_k must be >= 1" in refused.value.details()
    # bytes that are no RecallRequest: refused by the front too
    with grpc.insecure_channel(front_server.address) as channel:
        with pytest.raises(grpc.RpcError) as malformed:
            channel.unary_unary("/polarmem.v1.MemoryService/Recall")(b"\xff\xff\xff")
    assert malformed.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    text = urllib.request.urlopen(f"http://127.0.0.1:{front_server.metrics_port}/metrics").read().decode()
    assert 'polarmem_fast_front_recalls_total{path="native"} 2.0' in text
    assert 'polarmem_fast_front_recalls_total{path="forwarded"} 1.0' in text
    assert 'polarmem_fast_front_recalls_total{path="refused"} 1.0' in text
    assert "polarmem_fast_front_latency_seconds_count 2.0" in text
    assert "polarmem_fast_front_namespaces 1.0" in text
    # The RPC series count every call on the address: the forwarded one (the library's) and the
    # front's own answers, refusals included, so the error-ratio alert sees them all.
    assert 'polarmem_rpc_requests_total{code="OK",method="Recall"} 3.0' in text
    assert 'polarmem_rpc_requests_total{code="INVALID_ARGUMENT",method="Recall"} 2.0' in text
    assert 'polarmem_rpc_latency_seconds_count{method="Recall"} 5.0' in text
    assert 'polarmem_rpc_latency_seconds_bucket{le="0.00025",method="Recall"}' in text
    # So do the Recall series: the hits by tier and the suppressed items of all three answers.
    tiers = {-1: "conflict", 0: "neutral", 1: "entailed"}
    for s_log, tier in tiers.items():
        count = sum(hit.s_log == s_log for response in responses for hit in response.hits)
        line = f'polarmem_recall_hits_total{{tier="{tier}"}} {float(count)}'
        assert (line in text) if count else f'tier="{tier}"' not in text, (tier, count)
    assert sum(len(response.hits) for response in responses) > 0
    suppressed = sum(len(response.suppressed) for response in responses)
    assert f"polarmem_recall_suppressed_items_total {float(suppressed)}" in text


def rpc_counts(text: str, method: str) -> dict[tuple[str, str], float]:
    """polarmem_rpc_requests_total of `method` by (namespace, code), from a metrics page."""
    counts = {}
    for line in text.splitlines():
        if line.startswith("polarmem_rpc_requests_total{") and f'method="{method}"' in line:
            labels, value = line.split("} ")
            fields = dict(part.split("=") for part in labels.split("{")[1].split(","))
            counts[(fields["namespace"].strip('"'), fields["code"].strip('"'))] = float(value)
    return counts


def test_with_namespace_labels_the_fronts_answers_carry_their_namespace(tmp_path):
    """metrics_namespace_labels: a Recall or Remember the front answers from a namespace's view
    is counted under that namespace, as the Python listener counts its own (before round 43 the
    front's answers — every call of the agent mix — all carried namespace ""). A call refused
    before its namespace is read, or naming one that does not exist, stays under ""."""
    import urllib.request

    server = PolarMemServer(make_config(tmp_path, core_views="on_recall", metrics_namespace_labels=True)).start()
    try:
        with PolarMemClient(server.address) as client:
            client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
            stock(client, np.random.default_rng(5), count=20)
        with grpc.insecure_channel(server.address) as channel:
            stub = pb_grpc.MemoryServiceStub(channel)
            rng = np.random.default_rng(8)
            for _ in range(4):  # the first handed over (the front has no view yet), then native
                stub.Recall(random_request(rng), timeout=10)
            refused = random_request(rng)
            refused.top_k = 0  # the core's refusal, from the view
            with pytest.raises(grpc.RpcError):
                stub.Recall(refused, timeout=10)
            unknown = random_request(rng, namespace="nope")
            with pytest.raises(grpc.RpcError):
                stub.Recall(unknown, timeout=10)
            with pytest.raises(grpc.RpcError):
                channel.unary_unary("/polarmem.v1.MemoryService/Recall")(b"\xff\xff\xff", timeout=10)
        stats = server.fast_front.front.stats()
        assert stats["native"] == 3 and set(stats["finished_by_namespace"]) == {"t"}
        text = urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics").read().decode()
    finally:
        server.stop()
    recalls = rpc_counts(text, "Recall")
    assert recalls[("t", "OK")] == 4.0  # one from each listener's count: 1 handed over + 3 native
    assert recalls[("t", "INVALID_ARGUMENT")] == 1.0
    assert recalls[("", "NOT_FOUND")] == 1.0  # a name a client merely sends is not a label
    assert recalls[("", "INVALID_ARGUMENT")] == 1.0  # bytes that are no request: no namespace read
    assert "nope" not in text


def test_a_long_refusal_is_cut_to_fit_the_trailers(front_server, fast):
    """256 unknown names of 100 characters in a closed vocabulary: the core's refusal names them
    all, the front cuts it to 400 characters (as the Python listener cuts a status), and the
    client gets its INVALID_ARGUMENT, not a transport error for trailers past their limit."""
    with PolarMemClient(front_server.address) as client:
        client.create_namespace("c", spaces=[("vis", DIM)], encoder="none", concepts=CONCEPTS, open_vocabulary=False)
    request = random_request(np.random.default_rng(8), namespace="c", mode=pb.RECALL_MODE_HARD)
    fast.Recall(request)  # (the view)
    before = front_server.fast_front.front.stats()
    request.required[:] = [f"{i:03d}" + "q" * 97 for i in range(256)]
    with pytest.raises(grpc.RpcError) as refused:
        fast.Recall(request)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details().startswith("required: '000qqq") and len(refused.value.details()) == 401
    after = front_server.fast_front.front.stats()
    assert (after["refused"], after["forwarded"]) == (before["refused"] + 1, before["forwarded"])


def test_stopping_the_server_stops_the_front(tmp_path):
    server = PolarMemServer(make_config(tmp_path, core_views="on_recall")).start()
    address = server.address
    server.stop()
    with grpc.insecure_channel(address) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            pb_grpc.MemoryServiceStub(channel).Recall(pb.RecallRequest(namespace="t"), timeout=2)
    assert refused.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def test_the_front_serves_tls_with_the_servers_certificate(tmp_path):
    cert, key = self_signed_certificate(tmp_path, "memory.test", "DNS:memory.test")
    config = make_config(tmp_path, core_views="on_recall", tls_cert=str(cert), tls_key=str(key))
    with PolarMemServer(config) as server:
        options = dict(root_certificates=cert.read_bytes(), tls_server_name="memory.test")
        with PolarMemClient(server.address, **options) as client:
            client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
            stock(client, np.random.default_rng(8), count=50)
            answers = [
                client.recall("t", vectors={"vis": np.ones(DIM).tolist()}, required=["dog"], mode="hard", explain=False)
                for _ in range(2)
            ]
            assert answers[0] == answers[1] and server.fast_front.front.stats()["native"] == 1
        with grpc.insecure_channel(server.address) as plaintext:  # no TLS: no answer
            with pytest.raises(grpc.RpcError):
                pb_grpc.MemoryServiceStub(plaintext).Recall(pb.RecallRequest(namespace="t"), timeout=2)


class HeldRecalls:
    """Holds every Recall the front hands over, in the servicer, until released (wraps the
    servicer's core entry, which it only delays), so a handed-over call stays in flight for as
    long as a test needs."""

    def __init__(self, server) -> None:
        self.core = server.core_recall
        self.inner = self.core.answer
        self.entered, self.release = threading.Event(), threading.Event()
        self.core.answer = self

    def __call__(self, *args, **kwargs):
        self.entered.set()
        self.release.wait(10)
        return self.inner(*args, **kwargs)

    def restore(self) -> None:
        self.release.set()
        self.core.answer = self.inner


def test_the_front_refuses_calls_beyond_max_concurrent_rpcs(tmp_path):
    server = PolarMemServer(make_config(tmp_path, core_views="on_recall", max_concurrent_rpcs=1)).start()
    try:
        with PolarMemClient(server.address) as client:
            client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        held = HeldRecalls(server)
        with grpc.insecure_channel(server.address) as channel:
            fast = pb_grpc.MemoryServiceStub(channel)
            # an empty namespace knows no concepts
            # (full items: the front hands them over)
            request = random_request(np.random.default_rng(9), required=[], forbidden=[], include_items=True)
            first = fast.Recall.future(request)  # handed over, held in the library: the front's one slot
            assert held.entered.wait(5)
            with pytest.raises(grpc.RpcError) as refused:
                fast.Recall(request, timeout=5)
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "max_concurrent_rpcs" in refused.value.details()
            held.restore()
            assert len(first.result(timeout=10).hits) == 0  # the namespace is empty; the call completed
            assert server.fast_front.front.stats()["overloaded"] == 1
            code = {"method": "Recall", "code": "RESOURCE_EXHAUSTED"}
            assert server.metrics.registry.get_sample_value("polarmem_rpc_requests_total", code) == 1
    finally:
        server.stop()


def test_a_handed_over_call_keeps_its_deadline(front_server, fast):
    held = HeldRecalls(front_server)
    try:
        with pytest.raises(grpc.RpcError) as late:
            fast.Recall(random_request(np.random.default_rng(10), include_items=True), timeout=0.5)
        assert late.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    finally:
        held.restore()
    assert fast.Recall(random_request(np.random.default_rng(10)), timeout=10).tier_counts is not None


def test_a_caller_cancelling_a_handed_over_call_cancels_the_librarys_side(front_server, fast):
    """The library's side of a handed-over Recall is a child of the caller's call: the caller's
    cancel ends it at once, while the library still holds its handler (before round 33 the front
    held the call's slot until the library answered)."""
    held = HeldRecalls(front_server)
    front = front_server.fast_front.front
    try:
        call = fast.Recall.future(random_request(np.random.default_rng(11), include_items=True))
        assert held.entered.wait(5)
        assert front.stats()["in_flight"] == 1
        call.cancel()
        deadline = time.monotonic() + 5
        while front.stats()["in_flight"] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert front.stats()["in_flight"] == 0
        assert not held.release.is_set()  # the library had not answered: its side was cancelled
    finally:
        held.restore()


def test_stopping_lets_calls_in_flight_through_the_front_finish(tmp_path):
    server = PolarMemServer(make_config(tmp_path, core_views="on_recall", grace_s=5.0)).start()
    with PolarMemClient(server.address) as client:
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        stock(client, np.random.default_rng(12), count=20)
    held = HeldRecalls(server)
    with grpc.insecure_channel(server.address) as channel:
        in_flight = pb_grpc.MemoryServiceStub(channel).Recall.future(
            random_request(np.random.default_rng(13), include_items=True)  # (handed over)
        )
        assert held.entered.wait(5)
        stopping = threading.Thread(target=server.stop)
        stopping.start()
        threading.Timer(0.5, held.release.set).start()
        assert in_flight.result(timeout=10).tier_counts is not None  # answered during the drain
        stopping.join(15)
        assert not stopping.is_alive()
