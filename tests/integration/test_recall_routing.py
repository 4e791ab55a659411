"""One address (issue 33, part 2): a client given only the main address sends the Recalls the
compiled front answers itself to the front, at the port the server advertises, and every other
Recall to the main port, so none pays the front's hand-over; if the front is down the call is
answered by the main port and a warning says so. A real server with the front, real clients
(sync and asyncio), the front's own counters."""

from __future__ import annotations

import argparse
import asyncio
import logging

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem_server.api.fast_front import unavailable_reason
from polarmem_server.api.recall_shape import FRONT_PORT_HEADER
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces import recall_routing
from polarmem_server.faces.aio_client import AsyncPolarMemClient
from polarmem_server.faces.client import PolarMemClient, item_message
from polarmem_server.faces.connection import add_arguments, load_connection
from servertools import DIM, make_config

front_built = pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))


@pytest.fixture
def front_server(tmp_path):
    server = PolarMemServer(make_config(tmp_path, fast_front_address="127.0.0.1:0")).start()
    rng = np.random.default_rng(5)
    with PolarMemClient(server.address, fast_front=False) as client:
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        client.remember_stream(
            "t",
            [
                item_message(
                    id=f"i{i:03d}",
                    text=f"note {i}",
                    vectors={"vis": rng.standard_normal(DIM)},
                    metadata={"topic": f"t{i % 3}"},
                    states={"dog": "has" if i % 2 else "not_has", "cat": "has" if i % 3 == 0 else "not_has"},
                )
                for i in range(120)
            ],
        )
    yield server
    server.stop()


def counts(server) -> dict:
    stats = server.fast_front.front.stats()
    return {"native": stats["native"], "forwarded": stats["forwarded"]}


def vector(rng) -> list[float]:
    return rng.standard_normal(DIM).tolist()


PLANNABLE = dict(required=["dog"], forbidden=["cat"], mode="hard", explain=False, top_k=5)
NOT_PLANNABLE = [
    dict(required=["dog"], mode="hard", explain=False, include_context=True),
    dict(required=["dog"], mode="hard", explain=False, suppressed_k=2),
]


@front_built
def test_the_main_port_advertises_the_fronts_port_on_recall(front_server):
    with grpc.insecure_channel(front_server.address) as channel:
        request = pb.RecallRequest(namespace="t", vectors={"vis": pb.VectorValue(values=[1.0] * DIM)}, top_k=1)
        _, call = pb_grpc.MemoryServiceStub(channel).Recall.with_call(request)
    assert (FRONT_PORT_HEADER, str(front_server.fast_front_port)) in tuple(call.trailing_metadata())


@front_built
def test_a_client_given_only_the_main_address_gets_native_answers(front_server):
    rng = np.random.default_rng(1)
    with PolarMemClient(front_server.address) as client, grpc.insecure_channel(front_server.address) as channel:
        main = pb_grpc.MemoryServiceStub(channel)
        client.recall("t", vectors={"vis": vector(rng)}, **PLANNABLE)  # the main port: learns the front's port
        assert counts(front_server) == {"native": 0, "forwarded": 0}
        assert client.front.address == f"127.0.0.1:{front_server.fast_front_port}"
        client.recall("t", vectors={"vis": vector(rng)}, **PLANNABLE)  # the front: its first call of the shape
        assert counts(front_server) == {"native": 0, "forwarded": 1}
        for _ in range(5):
            q = vector(rng)
            answer = client.recall("t", vectors={"vis": q}, **PLANNABLE)
            direct = main.Recall(
                pb.RecallRequest(
                    namespace="t",
                    vectors={"vis": pb.VectorValue(values=q)},
                    required=["dog"],
                    forbidden=["cat"],
                    mode=pb.RECALL_MODE_HARD,
                    explain=False,
                    top_k=5,
                )
            )
            assert answer.SerializeToString(deterministic=True) == direct.SerializeToString(deterministic=True)
        assert counts(front_server) == {"native": 5, "forwarded": 1}
        assert client.get_namespace("t").item_count == 120  # other RPCs: the main port


@front_built
def test_recalls_the_front_cannot_answer_go_to_the_main_port_directly(front_server):
    rng = np.random.default_rng(2)
    with PolarMemClient(front_server.address) as client:
        client.recall("t", vectors={"vis": vector(rng)}, **PLANNABLE)
        assert client.front.address is not None
        for fields in NOT_PLANNABLE:
            for _ in range(2):
                client.recall("t", vectors={"vis": vector(rng)}, **fields)
        assert counts(front_server) == {"native": 0, "forwarded": 0}  # nothing handed over


@front_built
def test_a_namespace_whose_rule_is_strict_is_answered_by_the_front(front_server):
    """A mode-less Recall on a namespace whose rule is strict runs in strict, one core search
    (Index::search_strict) the front replays: after the first call of the shape, every answer is
    native and equals the main port's."""
    rng = np.random.default_rng(8)
    with PolarMemClient(front_server.address) as client:
        client.create_namespace("s", spaces=[("vis", DIM)], encoder="none", partitioner="auto", declared_accuracy=0.9)
        assert client.get_namespace("s").rule.recall_mode == pb.RECALL_MODE_STRICT
        client.remember_stream(
            "s",
            [
                item_message(id=f"s{i}", vectors={"vis": vector(rng)}, states={"dog": "has" if i % 2 else "not_has"})
                for i in range(20)
            ],
        )
        queries = [vector(rng) for _ in range(5)]
        answers = [client.recall("s", vectors={"vis": q}, required=["dog"], explain=False, top_k=3) for q in queries]
        assert {a.mode_used for a in answers} == {pb.RECALL_MODE_STRICT}
        assert client.front.address is not None
    assert counts(front_server) == {"native": 3, "forwarded": 1}  # the first learns the port, the second plans
    with PolarMemClient(front_server.address, fast_front=False) as direct:
        for q, answer in zip(queries, answers):
            assert direct.recall("s", vectors={"vis": q}, required=["dog"], explain=False, top_k=3) == answer


@front_built
def test_the_async_client_routes_the_same_way(front_server):
    rng = np.random.default_rng(3)

    async def run():
        async with AsyncPolarMemClient(front_server.address) as client:
            for _ in range(4):
                await client.recall("t", vectors={"vis": vector(rng)}, **PLANNABLE)
            for fields in NOT_PLANNABLE:
                await client.recall("t", vectors={"vis": vector(rng)}, **fields)
            return client.front.address

    assert asyncio.run(run()) == f"127.0.0.1:{front_server.fast_front_port}"
    assert counts(front_server) == {"native": 2, "forwarded": 1}


@front_built
def test_a_front_that_is_down_costs_no_call(front_server, caplog):
    rng = np.random.default_rng(4)
    with PolarMemClient(front_server.address) as client:
        for _ in range(3):
            client.recall("t", vectors={"vis": vector(rng)}, **PLANNABLE)
        assert counts(front_server) == {"native": 1, "forwarded": 1}
        front_server.fast_front.shutdown(0)  # the front stops; the main port still serves
        with caplog.at_level(logging.WARNING, logger="polarmem.client"):
            answer = client.recall("t", vectors={"vis": vector(rng)}, **PLANNABLE)
            again = client.recall("t", vectors={"vis": vector(rng)}, **PLANNABLE)  # straight to the main port
        assert len(answer.hits) == 5 and len(again.hits) == 5
        warnings = [r.getMessage() for r in caplog.records if r.name == "polarmem.client"]
        assert len(warnings) == 1 and "sending Recalls to the main address" in warnings[0], warnings


@front_built
def test_an_advertised_port_nothing_listens_on_falls_back(front_server, caplog, monkeypatch):
    """The port the server names is not reachable from the client (a firewall, another host's
    loopback): every call is still answered, by the main port."""
    rng = np.random.default_rng(6)
    monkeypatch.setattr(recall_routing, "FRONT_RETRY_S", 0.0)  # try the front again at once
    with PolarMemClient(front_server.address, recall_address="127.0.0.1:1") as client:
        with caplog.at_level(logging.WARNING, logger="polarmem.client"):
            for _ in range(2):
                assert len(client.recall("t", vectors={"vis": vector(rng)}, **PLANNABLE).hits) == 5
    warnings = [r.getMessage() for r in caplog.records if r.name == "polarmem.client"]
    assert len(warnings) == 2 and all("127.0.0.1:1" in w for w in warnings), warnings


@front_built
def test_opting_out_sends_every_recall_to_the_main_port(front_server):
    rng = np.random.default_rng(7)
    with PolarMemClient(front_server.address, fast_front=False) as client:
        for _ in range(3):
            client.recall("t", vectors={"vis": vector(rng)}, **PLANNABLE)
        assert client.front.address is None
    assert counts(front_server) == {"native": 0, "forwarded": 0}


def test_a_server_without_a_front_advertises_nothing(tmp_path):
    with PolarMemServer(make_config(tmp_path)) as server, PolarMemClient(server.address) as client:
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        client.remember("t", id="a", vectors={"vis": np.ones(DIM)}, states={"dog": "has", "cat": "not_has"})
        for _ in range(2):
            assert len(client.recall("t", vectors={"vis": np.ones(DIM)}, **PLANNABLE).hits) == 1
        assert client.front.address is None


@pytest.mark.parametrize(
    ("main", "port", "front"),
    [
        ("127.0.0.1:50051", "50052", "127.0.0.1:50052"),
        ("[::1]:50051", "7", "[::1]:7"),
        ("dns:///memory.internal:443", "8443", "dns:///memory.internal:8443"),
        ("unix:/run/polarmem.sock", "50052", None),  # no host to join a port to
        ("127.0.0.1:50051", "0", None),
        ("127.0.0.1:50051", "http", None),
    ],
)
def test_the_fronts_address_is_the_main_host_with_the_advertised_port(main, port, front):
    assert recall_routing.front_address(main, port) == front


def test_the_cli_and_mcp_opt_out(monkeypatch):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert load_connection(parser.parse_args([]), env={}).client_options()["fast_front"] is True
    assert load_connection(parser.parse_args(["--no-fast-front"]), env={}).client_options()["fast_front"] is False
    assert (
        load_connection(parser.parse_args([]), env={"POLARMEM_NO_FAST_FRONT": "1"}).client_options()["fast_front"]
        is False
    )


@front_built
def test_polarmem_mcp_clients_route_without_configuration(front_server):
    """`polarmem mcp` keeps one AsyncPolarMemClient per token, made from the connection's options:
    its Recalls route like any client's (the recall tool's own request — text, include_context —
    goes to the main port, and is never handed over)."""
    from types import SimpleNamespace

    from polarmem_server.faces.connection import Connection
    from polarmem_server.faces.mcp_server import PolarMemTools

    rng = np.random.default_rng(9)
    tools = PolarMemTools(Connection(address=front_server.address), own_token=False)
    ctx = SimpleNamespace(headers={})

    async def run():
        for _ in range(2):  # the recall tool's shape (faces/mcp_server.py recall())
            await tools.invoke(
                ctx, "recall", "t", "dog", vectors={"vis": vector(rng)}, mode="", top_k=5, include_context=True
            )
        assert counts(front_server) == {"native": 0, "forwarded": 0}
        for _ in range(3):
            await tools.invoke(ctx, "recall", "t", vectors={"vis": vector(rng)}, **PLANNABLE)
        address = tools.client(ctx).front.address
        await tools.close()
        return address

    assert asyncio.run(run()) == f"127.0.0.1:{front_server.fast_front_port}"
    assert counts(front_server) == {"native": 2, "forwarded": 1}


@front_built
def test_the_learned_front_gets_the_clients_tls_and_token(tmp_path):
    from servertools import self_signed_certificate

    cert, key = self_signed_certificate(tmp_path, "memory.test", "DNS:memory.test")
    tokens = tmp_path / "tokens.toml"
    tokens.write_text('[tokens.admin]\ntoken = "a-secret"\nrole = "admin"\n')
    config = make_config(
        tmp_path, tls_cert=str(cert), tls_key=str(key), tokens_file=str(tokens), fast_front_address="127.0.0.1:0"
    )
    rng = np.random.default_rng(10)
    with PolarMemServer(config) as server:
        options = dict(root_certificates=cert.read_bytes(), tls_server_name="memory.test", token="a-secret")
        with PolarMemClient(server.address, **options) as client:
            client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
            client.remember("t", id="a", vectors={"vis": vector(rng)}, states={"dog": "has", "cat": "not_has"})
            for _ in range(3):
                assert len(client.recall("t", vectors={"vis": vector(rng)}, **PLANNABLE).hits) == 1
            assert client.front.address == f"127.0.0.1:{server.fast_front_port}"
        assert counts(server) == {"native": 1, "forwarded": 1}
