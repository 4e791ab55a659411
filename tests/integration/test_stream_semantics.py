"""What a cancelled stream keeps, and what a write that answered DEADLINE_EXCEEDED did.

Before: a cancelled RememberStream stored 0, 320, 1,024 or all 1,600 sent items depending on
timing (groups were cut by message framing and verification count, and cancelling one could
split a group); 21 of 23 unary Remembers answered DEADLINE_EXCEEDED were stored and their retry
answered ALREADY_EXISTS.

Now: groups are cut by item count alone and are all or nothing, so a cancelled stream keeps a
prefix of whole groups (the last one being what was sent, if the cancel raced with the end of the
messages); re-sending it is safe (stored items with the same content
count as stored); a Remember retried with the same id and content answers OK."""

import random
import threading
import time

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem_server.api.service import STREAM_BATCH
from polarmem_server.faces.client import item_message
from servertools import DIM

ITEMS = STREAM_BATCH + 576  # 1,600: one full group and a partial one


def vec(i):
    return (np.random.default_rng(i).standard_normal(DIM) + 0.1).tolist()


def item(i):
    return item_message(
        id=f"s{i:05d}", vectors={"vis": vec(i)}, states={"dog": "has" if i % 2 else "not_has"}, metadata={"i": str(i)}
    )


def stored_ids(server, ns):
    return sorted(r.id for r in server.memory.backend.store.iter_items(ns))


def settled(server, ns, quiet_s=1.0, limit_s=30.0):
    """Stored ids once nothing has changed for quiet_s (a group already started may still finish)."""
    last, since, started = None, time.monotonic(), time.monotonic()
    while time.monotonic() - started < limit_s:
        now = stored_ids(server, ns)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return now
        time.sleep(0.1)
    return last


def requests(ns, per_message, stop_after=None, cancel=None):
    """The stream's messages; after `stop_after` items it waits for `cancel` (never half-closes)."""
    sent = 0
    while sent < ITEMS:
        count = min(per_message, ITEMS - sent)
        if stop_after is not None and sent + count > stop_after:
            count = stop_after - sent
            if count:
                yield pb.RememberStreamRequest(namespace=ns, items=[item(sent + j) for j in range(count)])
                sent += count
            cancel.wait(30)
            return
        yield pb.RememberStreamRequest(namespace=ns, items=[item(sent + j) for j in range(count)])
        sent += count


@pytest.mark.parametrize("trial", range(6))
def test_a_cancelled_stream_keeps_a_prefix_of_whole_groups_and_a_resend_completes_it(server, client, trial):
    rng = random.Random(1300 + trial)
    ns = f"c{trial}"
    client.create_namespace(ns, spaces=[("vis", DIM)], encoder="none")
    stop_after = rng.randrange(1, ITEMS)  # cancel with this many items sent
    per_message = rng.choice([1, 7, 64, 300])
    cancel = threading.Event()
    with grpc.insecure_channel(server.address) as channel:
        stub = pb_grpc.MemoryServiceStub(channel)
        future = stub.RememberStream.future(requests(ns, per_message, stop_after, cancel), timeout=60)
        time.sleep(rng.uniform(0.05, 1.0))
        future.cancel()
        cancel.set()
        with pytest.raises(grpc.FutureCancelledError):
            future.result()
    kept = settled(server, ns)
    assert kept == [f"s{i:05d}" for i in range(len(kept))], "not a prefix of the stream"
    # Whole groups, or (when the cancel raced with the end of the messages and the server took it
    # for the end of the stream) every message the server had received: never a cut inside a
    # message. (Messages still in flight when the cancel came are lost with it: round 31 saw 954
    # of 989 sent items kept, one item a message.)
    whole_groups = len(kept) % STREAM_BATCH == 0
    whole_messages = len(kept) == stop_after or len(kept) % per_message == 0
    assert len(kept) <= stop_after and (whole_groups or whole_messages), (len(kept), stop_after, per_message)

    # Re-sending the whole stream is safe and completes it.
    response = client._stub.RememberStream(requests(ns, per_message), timeout=120)
    assert (response.stored, response.failed) == (ITEMS, 0)
    assert len(stored_ids(server, ns)) == ITEMS


def test_a_stream_that_half_closes_stores_everything(server, client, ns):
    response = client._stub.RememberStream(requests(ns, 100), timeout=120)
    assert (response.stored, response.failed) == (ITEMS, 0)
    assert len(stored_ids(server, ns)) == ITEMS


def test_remember_retried_with_the_same_content_answers_ok(client, ns):
    first = client._stub.Remember(pb.RememberRequest(namespace=ns, item=item(1)), timeout=10).item
    again = client._stub.Remember(pb.RememberRequest(namespace=ns, item=item(1)), timeout=10).item
    assert again.id == first.id and again.version == first.version and again.created_ms == first.created_ms
    changed = item(1)
    changed.metadata["i"] = "other"
    with pytest.raises(grpc.RpcError) as taken:
        client._stub.Remember(pb.RememberRequest(namespace=ns, item=changed), timeout=10)
    assert taken.value.code() == grpc.StatusCode.ALREADY_EXISTS
    other_vector = item(1)
    other_vector.vectors["vis"].values[0] += 1.0
    with pytest.raises(grpc.RpcError) as taken:
        client._stub.Remember(pb.RememberRequest(namespace=ns, item=other_vector), timeout=10)
    assert taken.value.code() == grpc.StatusCode.ALREADY_EXISTS


def test_a_remember_that_answered_deadline_exceeded_can_be_retried(server, client, ns):
    """Tiny deadlines make some calls answer DEADLINE_EXCEEDED after (or before) the write; a
    retry of each with the same content must answer OK, never ALREADY_EXISTS."""
    timed_out = []
    for i in range(200):
        try:
            client._stub.Remember(pb.RememberRequest(namespace=ns, item=item(i)), timeout=0.002)
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED, exc
            timed_out.append(i)
    for i in timed_out:
        retried = client._stub.Remember(pb.RememberRequest(namespace=ns, item=item(i)), timeout=30).item
        assert retried.id == f"s{i:05d}"
    assert len(stored_ids(server, ns)) == 200
    print(f"{len(timed_out)} of 200 Remembers answered DEADLINE_EXCEEDED; every retry answered OK")


@pytest.mark.parametrize("ends", ["cancel", "deadline"])
def test_a_stream_the_caller_ends_is_not_an_internal_error(server, ns, caplog, ends):
    """A caller that cancels a RememberStream, or whose deadline passes, before its last message
    made the request iterator raise a bare grpc.RpcError, which the server answered as a fault:
    polarmem_internal_errors_total + 1 (the PolarMemInternalErrors alert), the RPC counted
    INTERNAL and an ERROR line with a traceback. It is the caller's doing: counted as CANCELLED
    (or DEADLINE_EXCEEDED; OK where gRPC showed the cancel as the end of the messages first, the
    race the stream contract allows), nothing logged as a fault."""
    registry = server.metrics.registry
    internal_before = registry.get_sample_value("polarmem_internal_errors_total") or 0.0

    def counted(codes=("CANCELLED", "DEADLINE_EXCEEDED", "OK", "INTERNAL")) -> float:
        return sum(
            registry.get_sample_value("polarmem_rpc_requests_total", {"method": "RememberStream", "code": c}) or 0.0
            for c in codes
        )

    counted_before = counted()
    cancel = threading.Event()
    with grpc.insecure_channel(server.address) as channel:
        stub = pb_grpc.MemoryServiceStub(channel)
        future = stub.RememberStream.future(
            requests(ns, 7, stop_after=3, cancel=cancel), timeout=60 if ends == "cancel" else 0.5
        )
        time.sleep(0.2)
        if ends == "cancel":
            future.cancel()
        with pytest.raises((grpc.FutureCancelledError, grpc.RpcError)):
            future.result()
        cancel.set()
    deadline = time.monotonic() + 20  # the server's handler ends after the caller has its answer
    while counted() == counted_before:
        assert time.monotonic() < deadline, "the ended stream was never counted"
        time.sleep(0.05)
    assert (registry.get_sample_value("polarmem_internal_errors_total") or 0.0) == internal_before
    assert not registry.get_sample_value(
        "polarmem_rpc_requests_total", {"method": "RememberStream", "code": "INTERNAL"}
    )
    assert not [r for r in caplog.records if "internal error" in r.getMessage()]
