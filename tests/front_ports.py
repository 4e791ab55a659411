"""Checks of the compiled front on one server: its public address (the front, which answers a
Recall itself through the core's entry) and the Python listener's private socket (whose servicer
calls the same entry), the same request to both: the two doors' transport must agree."""

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


def answered(server, by: str) -> float:
    """Recalls the Python listener's servicer has answered by `by` ("core" or "library")."""
    return server.metrics.recall_answered.labels(by)._value.get()


def recall_by(server, stub, request, by: str = "core") -> pb.RecallResponse:
    """The answer to `request` through the Python listener, counted as answered by the core."""
    before = answered(server, by)
    answer = stub.Recall(request)
    assert answered(server, by) == before + 1, (by, request)
    return answer


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


def states_drawn(rng, concepts, uncertain: float = 0.0) -> dict[str, str]:
    """Each concept HAS (30 %), NOT_HAS (35 %), UNCERTAIN (`uncertain`) or neither, drawn from `rng`."""
    states = {}
    for concept in concepts:
        draw = rng.random()
        if draw < 0.3:
            states[concept] = "has"
        elif draw < 0.65:
            states[concept] = "not_has"
        elif draw < 0.65 + uncertain:
            states[concept] = "uncertain"
    return states


def stock(client, rng, concepts, dim: int, namespace: str = "t", count: int = 300, first: int = 0, parts: int = 0):
    """`count` random items (ids i0000.., text, a `vis` vector, drawn states; with `parts` > 0
    metadata part = i % parts) stored in `namespace` through `client`."""
    from polarmem_server.faces.client import item_message

    items = []
    for i in range(first, first + count):
        states = states_drawn(rng, concepts)  # (drawn before the vector: the suites' data stay as they were)
        items.append(
            item_message(
                id=f"i{i:04d}",
                text=f"item {i}",
                vectors={"vis": rng.standard_normal(dim)},
                states=states,
                metadata={"part": str(i % parts)} if parts else None,
            )
        )
    assert client.remember_stream(namespace, items).stored == count


def random_recall(rng, concepts, dim: int, modes, namespace: str = "t") -> pb.RecallRequest:
    """A random vector Recall: 0-2 required and 0-2 forbidden of `concepts`, a `vis` vector, k
    1-29, one of `modes`, exclude_conflicts 20 %, explain off, on or unset."""
    required = list(rng.choice(concepts, size=rng.integers(0, 3), replace=False))
    forbidden = [c for c in rng.choice(concepts, size=rng.integers(0, 3), replace=False) if c not in required]
    request = pb.RecallRequest(
        namespace=namespace,
        vectors={"vis": pb.VectorValue(values=rng.standard_normal(dim).tolist())},
        required=required,
        forbidden=forbidden,
        top_k=int(rng.integers(1, 30)),
        mode=modes[rng.integers(0, len(modes))],
        exclude_conflicts=bool(rng.random() < 0.2),
    )
    explain = rng.integers(0, 3)  # off, on, unset (on: the default)
    if explain < 2:
        request.explain = bool(explain)
    return request
