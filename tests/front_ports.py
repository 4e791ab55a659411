"""Checks of the compiled front against the library on one server: its public address (the
front) and the library's private socket, the same request to both."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import grpc
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.v1 import memory_service_pb2_grpc as pb_grpc


@contextmanager
def port_stubs(server) -> Iterator[tuple[pb_grpc.MemoryServiceStub, pb_grpc.MemoryServiceStub]]:
    """(the library's stub, the front's stub)."""
    with grpc.insecure_channel(server.library_address) as main, grpc.insecure_channel(server.address) as fast:
        yield pb_grpc.MemoryServiceStub(main), pb_grpc.MemoryServiceStub(fast)


def native_calls(server) -> int:
    """Recalls the front has answered itself so far."""
    return server.fast_front.front.stats()["native"]


def same_on_both_ports(server, stubs, request, natively: bool | None = None) -> pb.RecallResponse:
    """The front's answer, checked against the library's bytes (and who answered it, if given)."""
    main, fast = stubs
    before = native_calls(server)
    answer = fast.Recall(request)
    if natively is not None:
        assert native_calls(server) == before + int(natively), request
    expected = main.Recall(request)
    assert answer.SerializeToString(deterministic=True) == expected.SerializeToString(deterministic=True), request
    return answer


def refused_alike(stubs, request, codes=(grpc.StatusCode.INVALID_ARGUMENT,)) -> None:
    """Both ports refuse the request with the same status, one of `codes`, and the same message."""
    errors = []
    for stub in stubs:
        with pytest.raises(grpc.RpcError) as refused:
            stub.Recall(request)
        errors.append((refused.value.code(), refused.value.details()))
    assert errors[0] == errors[1] and errors[0][0] in codes
