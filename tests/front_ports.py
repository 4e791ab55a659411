"""Helpers for the tests of Recall over a real server: who answered a Recall (the Python
listener's servicer, the core on its first try, the compiled front natively), and random items
and requests to stock and ask a namespace with."""

from __future__ import annotations

from polarmem.v1 import memory_service_pb2 as pb


def answered(server, by: str) -> float:
    """Recalls the Python listener's servicer has answered by `by` (the metric's label: "core",
    the one entry, since round 30)."""
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


def answered_first_try(server, request: pb.RecallRequest) -> pb.RecallResponse:
    """The core's answer to `request` from the view it holds, asked once, as the front asks it:
    no Python step (making a view, learning names, reading records back) before it. Fails where
    the core declines it."""
    answer, outcome, refusal = server.core_recall.views.recall(request.SerializeToString())
    assert outcome == "answered", (outcome, refusal, request)
    return pb.RecallResponse.FromString(answer)


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
