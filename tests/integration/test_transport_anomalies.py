"""Calls that are well-formed HTTP/2 but not what a generated client sends, to every RPC on the
server's default address (the compiled front where it is built, which answers Recall and Remember
and hands the rest to the Python listener): no request message, a request that arrives after the
caller's deadline, two request messages to a unary method, and calls cancelled in flight. Each must
get an answer (or the caller's own DEADLINE_EXCEEDED / CANCELLED), the server must stay SERVING,
and nothing stored may change. Round 43 found the first two aborting the whole server through
Remember (the front handed it on with an empty buffer, which failed gRPC's own check); the fuzz
harness (tests/property) sends hostile bytes, never a call without them."""

from __future__ import annotations

import time

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces.client import PolarMemClient, item_message
from servertools import DIM, make_config

SERVICE = pb.DESCRIPTOR.services_by_name["MemoryService"]
UNARY = [m.name for m in SERVICE.methods if not m.client_streaming]
ALL = [m.name for m in SERVICE.methods]
# The methods the compiled front answers itself; the rest it hands to the Python listener, whose
# grpcio answers a call without its message UNIMPLEMENTED ("requires exactly one request message").
FRONT_METHODS = ("Recall", "Remember")


@pytest.fixture(scope="module")
def stocked(tmp_path_factory):
    server = PolarMemServer(make_config(tmp_path_factory.mktemp("anomalies"))).start()
    with PolarMemClient(server.address) as client:
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        rng = np.random.default_rng(3)
        for i in range(20):
            client.remember("t", id=f"k{i}", vectors={"vis": rng.standard_normal(DIM).tolist()})
    yield server
    server.stop()


def stored(server) -> list[str]:
    return sorted(r.id for r in server.memory.backend.store.iter_items("t"))


def still_serving(server) -> None:
    with PolarMemClient(server.address) as client:
        assert client.health() == "SERVING"
        assert len(client.recall("t", vectors={"vis": np.ones(DIM).tolist()}, top_k=1).hits) == 1
    assert len(stored(server)) == 20


def path(name: str) -> str:
    return f"/polarmem.v1.MemoryService/{name}"


@pytest.mark.parametrize("name", UNARY)
def test_a_unary_call_without_its_message_is_refused(stocked, name):
    before = stored(stocked)
    with grpc.insecure_channel(stocked.address) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            channel.stream_unary(path(name))(iter([]), timeout=10)
    if name in FRONT_METHODS:
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, refused.value
        assert f"no request message; {name} takes exactly one {name}Request" in refused.value.details()
    else:
        assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED, refused.value
    assert stored(stocked) == before
    still_serving(stocked)


@pytest.mark.parametrize("name", ALL)
def test_a_request_after_the_callers_deadline_leaves_the_server_up(stocked, name):
    def late():
        time.sleep(0.3)  # past the deadline
        yield b""

    before = stored(stocked)
    with grpc.insecure_channel(stocked.address) as channel:
        with pytest.raises(grpc.RpcError) as expired:
            channel.stream_unary(path(name))(late(), timeout=0.05)
    assert expired.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert stored(stocked) == before
    still_serving(stocked)


@pytest.mark.parametrize("name", ["Recall", "Remember", "GetItem"])
def test_two_messages_to_a_unary_method_get_one_answer(stocked, name):
    request = {
        "Recall": pb.RecallRequest(namespace="t", top_k=3),
        "Remember": pb.RememberRequest(namespace="t", item=item_message(id="k0", vectors={"vis": [0.0] * DIM})),
        "GetItem": pb.GetItemRequest(namespace="t", id="k1"),
    }[name]
    if name == "Recall":
        request.vectors["vis"].values.extend([0.1] * DIM)
    with grpc.insecure_channel(stocked.address) as channel:
        call = channel.stream_unary(path(name), request_serializer=type(request).SerializeToString)
        try:
            call(iter([request, request]), timeout=10)
        except grpc.RpcError as exc:  # an answer either way: gRPC takes the first message
            assert exc.code() not in {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}, exc
    still_serving(stocked)


def test_calls_cancelled_in_flight_leave_the_server_up(stocked):
    rng = np.random.default_rng(4)
    recall = pb.RecallRequest(namespace="t", top_k=5)
    recall.vectors["vis"].values.extend(rng.standard_normal(DIM).tolist())
    before = stored(stocked)
    with grpc.insecure_channel(stocked.address) as channel:
        unary = channel.unary_unary(path("Recall"), request_serializer=pb.RecallRequest.SerializeToString)
        calls = [unary.future(recall, timeout=0.001 * (i % 5 + 1)) for i in range(300)]
        for i, call in enumerate(calls):
            if i % 3 == 0:
                call.cancel()
        for call in calls:
            try:
                call.result()
            except grpc.FutureCancelledError:
                pass
            except grpc.RpcError as exc:
                assert exc.code() in {grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}, exc
    assert stored(stocked) == before
    still_serving(stocked)
